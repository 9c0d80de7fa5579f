//! The crate's error type.

use thiserror::Error;

/// Failure talking to ClickHouse or translating a plan.
#[derive(Debug, Error)]
pub enum Error {
    /// The request did not get an HTTP answer (connection refused, timeout, …).
    #[error("clickhouse unreachable: {0}")]
    Transport(String),
    /// ClickHouse answered with an exception (`Code: N. DB::Exception: …`).
    #[error("clickhouse exception (http {status}, code {code:?}): {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// ClickHouse's error code, when the text carried one.
        code: Option<u32>,
        /// The exception text as ClickHouse sent it, trimmed.
        message: String,
    },
    /// An answer that does not have the expected shape.
    #[error("unexpected clickhouse answer: {0}")]
    Decode(String),
    /// The database holds a schema newer than this binary knows.
    #[error("clickhouse schema version {found} is newer than this binary's {known}")]
    SchemaTooNew {
        /// The version recorded in the database.
        found: u32,
        /// The newest version this binary has migrations for.
        known: u32,
    },
    /// A plan piece that cannot be translated exactly; the plan is left to the engine.
    #[error("not pushed down: {0}")]
    Unsupported(String),
}

impl Error {
    /// The error for an exception answer: `Code: N. DB::Exception: …` (the
    /// code is taken from the text, or from the `X-ClickHouse-Exception-Code`
    /// header when given).
    pub fn from_exception(status: u16, header_code: Option<u32>, body: &str) -> Error {
        Error::Server {
            status,
            code: header_code.or_else(|| exception_code(body)),
            message: body.trim().to_string(),
        }
    }

    /// ClickHouse's error code, for [`Error::Server`].
    pub fn code(&self) -> Option<u32> {
        match self {
            Error::Server { code, .. } => *code,
            _ => None,
        }
    }
}

/// The `N` of the first `Code: N.` in an exception text.
fn exception_code(body: &str) -> Option<u32> {
    let at = body.find("Code: ")? + "Code: ".len();
    let digits: String = body[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exception_text_gives_the_code() {
        let e = Error::from_exception(
            404,
            None,
            "Code: 60. DB::Exception: Unknown table expression identifier 'x'. (UNKNOWN_TABLE)\n",
        );
        assert_eq!(e.code(), Some(60));
        let Error::Server {
            status, message, ..
        } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!(*status, 404);
        assert!(message.ends_with("(UNKNOWN_TABLE)"), "{message}");
        assert_eq!(Error::from_exception(500, None, "boom").code(), None);
        assert_eq!(
            Error::from_exception(500, Some(62), "boom").code(),
            Some(62)
        );
    }
}
