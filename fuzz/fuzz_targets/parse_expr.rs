//! Fuzz target: arbitrary UTF-8 must never panic the LogQL parser, and every
//! query that parses must print to a query that parses to the same AST.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let _ = runakefli_logql::parse_matchers(input);
    if let Ok(expr) = runakefli_logql::parse_expr(input) {
        let printed = expr.to_string();
        let again = runakefli_logql::parse_expr(&printed)
            .unwrap_or_else(|e| panic!("printed form {printed:?} of {input:?} does not parse: {e}"));
        assert_eq!(again, expr, "round trip changed the AST: {input:?} printed as {printed:?}");
    }
});
