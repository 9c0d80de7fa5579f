//! The error every push decoder returns, with the HTTP status Loki answers.

use thiserror::Error;

/// Why a push request was refused. [`PushError::status`] gives the HTTP status;
/// `Display` gives the response text (Loki's wording where Loki has one).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PushError {
    /// `Content-Encoding` is not one the decoder understands.
    #[error("Content-Encoding {0:?} not supported")]
    UnsupportedEncoding(String),
    /// `Content-Type` is missing or malformed, or names a format the endpoint does not take.
    #[error("{0}")]
    ContentType(String),
    /// The body, once decompressed, is larger than allowed.
    #[error("request body too large: {size} bytes, limit: {limit} bytes")]
    BodyTooLarge {
        /// Bytes seen (at least; decompression stops past the limit).
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The body could not be decompressed.
    #[error("{0}")]
    Decompress(String),
    /// The body is not a valid protobuf message of the expected type.
    #[error("{0}")]
    Protobuf(String),
    /// The body is not valid JSON of the expected shape.
    #[error("{0}")]
    Json(String),
    /// A stream's label string could not be parsed.
    #[error("couldn't parse labels: {0}")]
    InvalidLabels(String),
    /// A stream has no labels (after dropping empty values).
    #[error("error at least one label pair is required per stream")]
    MissingLabels,
    /// A stream has more label names than allowed.
    #[error("entry for stream '{stream}' has {count} label names; limit {limit}")]
    TooManyLabels {
        /// The stream's labels.
        stream: String,
        /// Label names in the stream.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A label name is longer than allowed.
    #[error("stream '{stream}' has label name too long: '{name}'")]
    LabelNameTooLong {
        /// The stream's labels.
        stream: String,
        /// The offending name.
        name: String,
    },
    /// A label value is longer than allowed.
    #[error("stream '{stream}' has label value too long: '{value}'")]
    LabelValueTooLong {
        /// The stream's labels.
        stream: String,
        /// The offending value.
        value: String,
    },
    /// A label name appears twice in one stream.
    #[error("stream '{stream}' has duplicate label name: '{name}'")]
    DuplicateLabelName {
        /// The stream's labels.
        stream: String,
        /// The repeated name.
        name: String,
    },
    /// A line is longer than allowed.
    #[error("Max entry size '{limit}' bytes exceeded for stream '{stream}' while adding an entry with length '{len}' bytes")]
    LineTooLong {
        /// The limit in bytes.
        limit: usize,
        /// The stream's labels.
        stream: String,
        /// The line length in bytes.
        len: usize,
    },
    /// An entry's structured metadata is larger than allowed.
    #[error("stream '{stream}' has structured metadata too large: '{size}' bytes, limit: '{limit}' bytes. Please see `limits_config.max_structured_metadata_size` or contact your Loki administrator to increase it.")]
    MetadataTooLarge {
        /// The stream's labels.
        stream: String,
        /// Sum of name and value bytes.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// An entry has more structured metadata pairs than allowed.
    #[error("stream '{stream}' has too many structured metadata labels: '{count}', limit: '{limit}'. Please see `limits_config.max_structured_metadata_entries_count` or contact your Loki administrator to increase it.")]
    MetadataTooMany {
        /// The stream's labels.
        stream: String,
        /// Pairs on the entry.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// An entry timestamp is missing, malformed or out of range.
    #[error("{0}")]
    InvalidTimestamp(String),
    /// The request expands to more entries than allowed.
    #[error(
        "request has too many entries: more than {limit} after expansion; send smaller batches"
    )]
    TooManyEntries {
        /// The limit.
        limit: usize,
    },
    /// The request's lines and structured metadata, once expanded, pass the limit.
    #[error("request too large after expansion: more than {limit} bytes of lines and structured metadata; send smaller batches")]
    ExpandedTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

impl PushError {
    /// The HTTP status to answer with: 413 for a request too large (body, or
    /// entries and bytes after expansion), 400 otherwise (Loki answers every
    /// push parse and validation error with 400).
    pub fn status(&self) -> u16 {
        match self {
            PushError::BodyTooLarge { .. }
            | PushError::TooManyEntries { .. }
            | PushError::ExpandedTooLarge { .. } => 413,
            _ => 400,
        }
    }

    /// A stable machine-readable code (Loki's discard reason where it has one),
    /// for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            PushError::UnsupportedEncoding(_) => "unsupported_encoding",
            PushError::ContentType(_) => "invalid_content_type",
            PushError::BodyTooLarge { .. } => "request_body_too_large",
            PushError::Decompress(_) => "invalid_compression",
            PushError::Protobuf(_) => "invalid_protobuf",
            PushError::Json(_) => "invalid_json",
            PushError::InvalidLabels(_) => "invalid_labels",
            PushError::MissingLabels => "missing_labels",
            PushError::TooManyLabels { .. } => "max_label_names_per_series",
            PushError::LabelNameTooLong { .. } => "label_name_too_long",
            PushError::LabelValueTooLong { .. } => "label_value_too_long",
            PushError::DuplicateLabelName { .. } => "duplicate_label_names",
            PushError::LineTooLong { .. } => "line_too_long",
            PushError::MetadataTooLarge { .. } => "structured_metadata_too_large",
            PushError::MetadataTooMany { .. } => "structured_metadata_too_many",
            PushError::InvalidTimestamp(_) => "invalid_timestamp",
            PushError::TooManyEntries { .. } => "request_too_many_entries",
            PushError::ExpandedTooLarge { .. } => "request_expanded_too_large",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_wording() {
        let e = PushError::BodyTooLarge { size: 10, limit: 5 };
        assert_eq!(e.status(), 413);
        assert_eq!(
            e.to_string(),
            "request body too large: 10 bytes, limit: 5 bytes"
        );
        let e = PushError::UnsupportedEncoding("br".into());
        assert_eq!(e.status(), 400);
        assert_eq!(e.to_string(), r#"Content-Encoding "br" not supported"#);
        let e = PushError::LineTooLong {
            limit: 4,
            stream: r#"{a="b"}"#.into(),
            len: 9,
        };
        assert_eq!(
            e.to_string(),
            r#"Max entry size '4' bytes exceeded for stream '{a="b"}' while adding an entry with length '9' bytes"#
        );
        assert_eq!(e.reason(), "line_too_long");
    }
}
