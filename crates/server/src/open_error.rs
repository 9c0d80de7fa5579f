//! Why the server could not start: [`OpenError`], which opening the backend
//! ([`crate::backends::open`]) and the shared state
//! ([`crate::state::AppState::open`]) return.

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The backend failed to open: the embedded store's files, or a
    /// ClickHouse database that could not be reached or its schema prepared
    /// (the backend's own error, see [`crate::backends`]).
    #[error(transparent)]
    Backend(Box<dyn std::error::Error + Send + Sync>),
    /// A setting is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The credentials file is unreadable or invalid.
    #[error(transparent)]
    Auth(#[from] crate::auth::FileError),
    /// A background thread of the backend could not be started.
    #[error("starting {what}: {source}")]
    Thread {
        /// Which thread.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
}
