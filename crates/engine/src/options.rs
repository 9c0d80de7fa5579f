//! How an engine is built: the options its owner chooses once, when it
//! constructs the [`Engine`](crate::Engine).

/// Whether queries may take the engine's fast paths: query plans a backend
/// executes ([`crate::pushdown`]) and the columnar path ([`crate::columnar`]).
///
/// Both give the answers of the plain path (scan every row, run every
/// stage); `Off` keeps every query on the plain path, the reference the
/// equivalence tests compare the fast paths with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FastPaths {
    /// Fast paths answer the queries they can (the default).
    #[default]
    On,
    /// Every query takes the plain path.
    Off,
}

impl FastPaths {
    /// Whether fast paths may run.
    pub fn enabled(self) -> bool {
        self == FastPaths::On
    }
}

/// The options of an [`Engine`](crate::Engine), fixed at construction
/// ([`Engine::with_options`](crate::Engine::with_options)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// Whether queries may take the fast paths.
    pub fast_paths: FastPaths,
}
