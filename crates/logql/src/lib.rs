//! LogQL, the query language of Loki: lexer, parser, abstract syntax tree and
//! canonical printer. No I/O.
#![deny(missing_docs)]

pub mod ast;

pub use ast::*;
