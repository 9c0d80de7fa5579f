//! Fuzz target: arbitrary UTF-8 must never panic the LogQL parser, and every
//! query that parses must print to a query that parses to the same AST.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| runakefli_fuzz::targets::parse_expr(data));
