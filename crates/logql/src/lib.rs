//! LogQL, the query language of Loki: lexer, parser, abstract syntax tree and
//! canonical printer. No I/O.
//!
//! [`parse_expr`] parses and validates a query with Loki's error messages;
//! every AST node prints back (`Display`) to a query that parses to the same
//! AST.
#![deny(missing_docs)]

pub mod ast;
mod condition;
pub mod duration;
pub mod errors;
mod helpers;
pub mod humanize;
pub mod ip;
pub mod lexer;
pub mod logfmt_expr;
mod parser;
pub mod printer;
pub mod template;
pub mod validate;

pub use ast::*;
pub use duration::{
    format_bytes, format_duration, parse_bytes, parse_duration, parse_go_duration,
    parse_prom_duration, DurationError,
};
pub use errors::ParseError;
pub use parser::{
    parse_expr, parse_expr_unvalidated, parse_expr_with, parse_log_selector,
    parse_log_selector_with, parse_matchers, parse_matchers_unvalidated_with, parse_matchers_with,
    ParseLimits, DEFAULT_MAX_DEPTH, MAX_INPUT_SIZE,
};
pub use printer::quote;
