//! The ingest protocols the benchmark can push with: which endpoint, which
//! content type, and which encoder turns a batch of generated lines into a
//! request body. Every protocol carries the same generated lines.

use std::fmt;

use serde::Serialize;

use crate::generator::{GeneratedLine, Generator};
use crate::{push, push_json, push_otlp};

/// An ingest protocol of the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// Loki push API: protobuf + snappy to `/loki/api/v1/push`.
    #[default]
    Loki,
    /// JSON lines (NDJSON of whole objects) to `/insert/jsonline`.
    Jsonline,
    /// Elasticsearch `_bulk`: `create` action lines and whole objects to `/_bulk`.
    EsBulk,
    /// OTLP/HTTP logs, protobuf, to `/v1/logs`.
    Otlp,
}

/// The JSON-document ingestion parameters both JSON protocols send: the
/// generator's stream labels as stream fields, its time and message fields
/// (`timestamp` and `msg` of the reference shape, `ts` and `message` of the varied one).
pub const JSON_DOC_QUERY: &str =
    "_stream_fields=namespace,pod,container,node,app&_time_field=timestamp,ts&_msg_field=msg,message";

impl Protocol {
    /// Every protocol, in a fixed order.
    pub const ALL: [Protocol; 4] = [
        Protocol::Loki,
        Protocol::Jsonline,
        Protocol::EsBulk,
        Protocol::Otlp,
    ];

    /// The request path (with query string) below the server's base URL.
    pub fn path(self) -> String {
        match self {
            Protocol::Loki => "/loki/api/v1/push".into(),
            Protocol::Jsonline => format!("/insert/jsonline?{JSON_DOC_QUERY}"),
            Protocol::EsBulk => format!("/_bulk?{JSON_DOC_QUERY}"),
            Protocol::Otlp => "/v1/logs".into(),
        }
    }

    /// The `Content-Type` of the request body.
    pub fn content_type(self) -> &'static str {
        match self {
            Protocol::Loki | Protocol::Otlp => "application/x-protobuf",
            Protocol::Jsonline => "application/stream+json",
            Protocol::EsBulk => "application/x-ndjson",
        }
    }

    /// A short description of the body encoding, for the report.
    pub fn body_format(self) -> &'static str {
        match self {
            Protocol::Loki => "protobuf+snappy",
            Protocol::Jsonline => "NDJSON",
            Protocol::EsBulk => "bulk NDJSON",
            Protocol::Otlp => "OTLP protobuf",
        }
    }

    /// Encodes `batch` as one request body of this protocol.
    pub fn encode(self, gen: &Generator, batch: Vec<GeneratedLine>) -> Vec<u8> {
        match self {
            Protocol::Loki => push::encode_push_owned(gen, batch),
            Protocol::Jsonline => push_json::encode_jsonline(gen, &batch),
            Protocol::EsBulk => push_json::encode_es_bulk(gen, &batch),
            Protocol::Otlp => push_otlp::encode_otlp(gen, batch),
        }
    }

    /// Whether a 2xx answer still reports failed items (Elasticsearch's
    /// `"errors":true`), which makes the request count as failed.
    pub fn reply_has_item_errors(self, body: &str) -> bool {
        self == Protocol::EsBulk
            && serde_json::from_str::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v.get("errors").and_then(|e| e.as_bool()))
                .unwrap_or(false)
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Loki => "loki",
            Protocol::Jsonline => "jsonline",
            Protocol::EsBulk => "es-bulk",
            Protocol::Otlp => "otlp",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_serde_names() {
        for p in Protocol::ALL {
            let json = serde_json::to_value(p).unwrap();
            assert_eq!(json.as_str().unwrap(), p.to_string());
        }
        assert_eq!(Protocol::default(), Protocol::Loki);
    }

    #[test]
    fn bulk_item_errors_are_detected() {
        assert!(Protocol::EsBulk.reply_has_item_errors(r#"{"took":1,"errors":true,"items":[]}"#));
        assert!(!Protocol::EsBulk.reply_has_item_errors(r#"{"took":1,"errors":false}"#));
        assert!(!Protocol::Jsonline.reply_has_item_errors(r#"{"errors":true}"#));
    }
}
