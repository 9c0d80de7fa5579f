//! Log entries and push requests, as every ingest protocol decodes them.

use crate::{Labels, Timestamp};

/// One log line with its timestamp and structured metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Nanoseconds since the epoch.
    pub ts: Timestamp,
    /// The line exactly as pushed.
    pub line: String,
    /// Structured metadata pairs (Loki's non-indexed labels), in push order.
    pub metadata: Vec<(String, String)>,
}

impl Entry {
    /// The bytes the entry's heap data takes, roughly: its line, and each
    /// metadata pair's name and value with 48 bytes for the pair's two
    /// `String`s. Holders add their own overhead per entry.
    pub fn heap_bytes(&self) -> usize {
        self.line.len()
            + self
                .metadata
                .iter()
                .map(|(k, v)| k.len() + v.len() + 48)
                .sum::<usize>()
    }
}

/// Entries of one stream in a push request, in push order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushStream {
    /// The stream's label set.
    pub labels: Labels,
    /// Entries in push order (not necessarily in time order).
    pub entries: Vec<Entry>,
}

/// A decoded push: what a collector sent in one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushRequest {
    /// The streams of the request. The same label set may appear more than once.
    pub streams: Vec<PushStream>,
}

impl PushRequest {
    /// Number of entries over all streams.
    pub fn entry_count(&self) -> usize {
        self.streams.iter().map(|s| s.entries.len()).sum()
    }

    /// Sum of line lengths in bytes.
    pub fn line_bytes(&self) -> usize {
        self.streams
            .iter()
            .flat_map(|s| s.entries.iter())
            .map(|e| e.line.len())
            .sum()
    }
}
