//! Per-request limits every push decoder enforces, with Loki's defaults.

/// Limits applied while decoding a push. `0` disables a limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushLimits {
    /// Largest body after decompression, in bytes. Loki's default
    /// `distributor.max_recv_msg_size` is 100 MiB; decompression stops as soon
    /// as it is passed, so a small compressed bomb cannot exhaust memory.
    pub max_body_bytes: usize,
    /// Longest line in bytes (Loki `max_line_size`, default 256 KiB).
    pub max_line_bytes: usize,
    /// Most label names per stream (Loki `max_label_names_per_series`, default 15).
    pub max_label_names_per_series: usize,
    /// Longest label name in bytes (Loki `max_label_name_length`, default 1024).
    pub max_label_name_length: usize,
    /// Longest label value in bytes (Loki `max_label_value_length`, default 2048).
    pub max_label_value_length: usize,
    /// Most structured-metadata pairs per entry (Loki
    /// `max_structured_metadata_entries_count`, default 128).
    pub max_structured_metadata_entries: usize,
    /// Largest structured metadata per entry, as the sum of name and value bytes
    /// (Loki `max_structured_metadata_size`, default 64 KiB).
    pub max_structured_metadata_bytes: usize,
    /// Most entries one request may expand to (OTLP: log records). `0` = no
    /// limit. Checked while mapping, before each entry is built.
    pub max_entries_per_request: usize,
    /// Most bytes of lines and structured metadata one request may expand to
    /// (OTLP copies resource and scope attributes into every record, so a
    /// small body can expand far beyond its size). `0` = no limit. Checked
    /// after each entry is built, so memory stays within it.
    pub max_expanded_bytes_per_request: usize,
    /// Loki pushes and JSON documents: add `service_name` to streams without
    /// one ([`crate::discover`]; Loki's `discover_service_name`). Off in the
    /// library's default so decoding keeps exactly the pushed labels; the
    /// server turns it on by default, as Loki. OTLP always discovers.
    pub discover_service_name: bool,
    /// Loki pushes and JSON documents: add `detected_level` structured
    /// metadata ([`crate::level`]; Loki's `discover_log_levels`). Off in the
    /// library's default, on by default in the server; OTLP always detects.
    pub discover_log_levels: bool,
}

impl Default for PushLimits {
    fn default() -> Self {
        PushLimits {
            max_body_bytes: 100 << 20,
            max_line_bytes: 256 << 10,
            max_label_names_per_series: 15,
            max_label_name_length: 1024,
            max_label_value_length: 2048,
            max_structured_metadata_entries: 128,
            max_structured_metadata_bytes: 64 << 10,
            max_entries_per_request: 1_000_000,
            max_expanded_bytes_per_request: 256 << 20,
            discover_service_name: false,
            discover_log_levels: false,
        }
    }
}

impl PushLimits {
    /// No limits at all except the body size, which stays at its default (tests, trusted input).
    pub fn unlimited() -> Self {
        PushLimits {
            max_body_bytes: PushLimits::default().max_body_bytes,
            max_line_bytes: 0,
            max_label_names_per_series: 0,
            max_label_name_length: 0,
            max_label_value_length: 0,
            max_structured_metadata_entries: 0,
            max_structured_metadata_bytes: 0,
            max_entries_per_request: 0,
            max_expanded_bytes_per_request: 0,
            discover_service_name: false,
            discover_log_levels: false,
        }
    }
}

/// True when `value` passes `limit` (`0` = no limit).
pub(crate) fn exceeds(value: usize, limit: usize) -> bool {
    limit != 0 && value > limit
}
