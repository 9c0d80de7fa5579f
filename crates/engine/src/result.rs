//! Query answers: streams, matrices, vectors and scalars, plus statistics.

use crate::labelset::LabelSet;

/// One result stream of a log query.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamResult {
    /// The final label set after the pipeline.
    pub labels: LabelSet,
    /// `(timestamp ns, line)` in the query's direction.
    pub entries: Vec<(i64, String)>,
    /// Per entry (parallel to `entries`), which labels of `labels` are
    /// structured metadata and which were added by the pipeline: what
    /// Loki's `categorize-labels` encoding writes as each entry's third element.
    pub categories: Vec<EntryLabels>,
}

/// The labels of one answer entry that are not stream labels, by category.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryLabels {
    /// Labels that are the entry's structured metadata.
    pub structured_metadata: Vec<(String, String)>,
    /// Labels the pipeline added or changed (parsers, `label_format`, …).
    pub parsed: Vec<(String, String)>,
}

impl EntryLabels {
    /// Splits `labels` (an entry's final labels) into categories: a label
    /// equal to a stream label is a stream label, one equal to a metadata
    /// pair is structured metadata, anything else was parsed.
    pub fn of(labels: &LabelSet, stream: &LabelSet, metadata: &[(String, String)]) -> EntryLabels {
        let mut out = EntryLabels::default();
        for (k, v) in labels.pairs() {
            if stream.get(k) == Some(v.as_str()) {
                continue;
            }
            if metadata.iter().any(|(mk, mv)| mk == k && mv == v) {
                out.structured_metadata.push((k.clone(), v.clone()));
            } else {
                out.parsed.push((k.clone(), v.clone()));
            }
        }
        out
    }
}

/// One series of a matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The metric's labels.
    pub labels: LabelSet,
    /// `(timestamp ms, value)` in time order.
    pub points: Vec<(i64, f64)>,
}

/// One element of an instant vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The metric's labels.
    pub labels: LabelSet,
    /// Timestamp in milliseconds.
    pub t_ms: i64,
    /// The value.
    pub value: f64,
}

/// The data of an answer.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryResult {
    /// Log query answer.
    Streams(Vec<StreamResult>),
    /// Range metric answer.
    Matrix(Vec<Series>),
    /// Instant metric answer.
    Vector(Vec<Sample>),
    /// A scalar: `(timestamp ms, value)`.
    Scalar(i64, f64),
}

impl QueryResult {
    /// Loki's `resultType`.
    pub fn result_type(&self) -> &'static str {
        match self {
            QueryResult::Streams(_) => "streams",
            QueryResult::Matrix(_) => "matrix",
            QueryResult::Vector(_) => "vector",
            QueryResult::Scalar(..) => "scalar",
        }
    }
}

/// Execution statistics, the figures Loki's `stats.summary` carries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryStats {
    /// Bytes of lines read from storage.
    pub bytes_processed: u64,
    /// Lines read from storage.
    pub lines_processed: u64,
    /// Lines that passed the pipeline.
    pub post_filter_lines: u64,
    /// Entries in the answer.
    pub entries_returned: u64,
    /// Streams that matched the selector.
    pub streams_matched: u64,
    /// Rows answered from columns rather than from their lines, by the
    /// columnar path or a query plan (never by the plain path): tells that
    /// a fast path really ran. Not part of Loki's statistics.
    pub rows_from_columns: u64,
    /// Wall-clock seconds.
    pub exec_time_secs: f64,
}

impl QueryStats {
    /// Adds the counters of `o` (a part of the same query) to these.
    pub fn add(&mut self, o: &QueryStats) {
        self.bytes_processed += o.bytes_processed;
        self.lines_processed += o.lines_processed;
        self.post_filter_lines += o.post_filter_lines;
        self.entries_returned += o.entries_returned;
        self.streams_matched += o.streams_matched;
        self.rows_from_columns += o.rows_from_columns;
    }
}

/// An answer with its statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryResponse {
    /// The data.
    pub result: QueryResult,
    /// The statistics.
    pub stats: QueryStats,
}
