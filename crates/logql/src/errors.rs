//! Parse errors, printed exactly as Loki prints them (the HTTP API returns
//! them verbatim with status 400).

use thiserror::Error;

/// A query that could not be parsed or failed parse-time validation.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ParseError {
    /// Loki's `ParseError`: `parse error at line L, col C: msg`, or
    /// `parse error : msg` when there is no position (line and col 0).
    #[error("{}", render(*line, *col, msg))]
    Parse {
        /// 1-based line; 0 when the error has no position.
        line: usize,
        /// 1-based column in characters; 0 when the error has no position.
        col: usize,
        /// The message after the position.
        msg: String,
    },
    /// A valid query of the wrong kind for the caller, e.g.
    /// `only label matchers are supported`.
    #[error("{0}")]
    Unsupported(String),
}

fn render(line: usize, col: usize, msg: &str) -> String {
    if line == 0 && col == 0 {
        format!("parse error : {msg}")
    } else {
        format!("parse error at line {line}, col {col}: {msg}")
    }
}

impl ParseError {
    /// An error at a position.
    pub fn at(line: usize, col: usize, msg: impl Into<String>) -> Self {
        ParseError::Parse {
            line,
            col,
            msg: msg.into(),
        }
    }

    /// An error without position (`parse error : msg`).
    pub fn plain(msg: impl Into<String>) -> Self {
        ParseError::Parse {
            line: 0,
            col: 0,
            msg: msg.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_loki() {
        assert_eq!(
            ParseError::at(1, 4, "syntax error: unexpected $end").to_string(),
            "parse error at line 1, col 4: syntax error: unexpected $end"
        );
        assert_eq!(ParseError::plain("boom").to_string(), "parse error : boom");
        assert_eq!(ParseError::Unsupported("x".into()).to_string(), "x");
    }
}
