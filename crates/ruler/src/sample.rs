//! A sample the ruler writes: a recording rule's result or an `ALERTS`
//! series, with the tenant whose rule produced it.

/// One sample to write.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RecordedSample {
    /// The tenant whose rule produced it.
    pub tenant: String,
    /// Labels, `__name__` among them, sorted by name.
    pub labels: Vec<(String, String)>,
    /// Milliseconds since the epoch.
    pub t_ms: i64,
    /// The value.
    pub value: f64,
}
