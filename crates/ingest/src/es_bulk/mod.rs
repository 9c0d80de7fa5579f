//! Elasticsearch `_bulk` (`POST /_bulk`, `/{index}/_bulk`): NDJSON pairs of an
//! action line and a document line, mapped by [`crate::jsondoc`].
//!
//! `index` and `create` store their document. `update` and `delete` are
//! answered per item with a 400 `illegal_argument_exception` (logs are
//! append-only); an `update`'s document line is consumed. A document that is
//! not a JSON object, has a bad time or breaks a limit fails its item only
//! (`mapper_parsing_exception` / `document_parsing_exception`, status 400),
//! as Elasticsearch does; the other items are stored. A malformed action line
//! or an empty body fails the whole request (400), as in Elasticsearch. The
//! `_index` is echoed in the answer but does not label the stream.

use crate::body::{decompress, Encoding};
use crate::jsondoc::{doc_to_entry, now_ns, DocError, DocOptions, Grouper};
use crate::{PushError, PushLimits};
use runakefli_model::PushRequest;
use serde_json::Value;

/// A bulk action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BulkAction {
    /// `index`.
    Index,
    /// `create`.
    Create,
    /// `update` (refused per item).
    Update,
    /// `delete` (refused per item).
    Delete,
}

impl BulkAction {
    /// The action's name in the bulk format.
    pub fn name(self) -> &'static str {
        match self {
            BulkAction::Index => "index",
            BulkAction::Create => "create",
            BulkAction::Update => "update",
            BulkAction::Delete => "delete",
        }
    }
}

/// Why one item failed, in Elasticsearch's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BulkItemError {
    /// Elasticsearch's error type, e.g. `mapper_parsing_exception`.
    pub kind: String,
    /// Human-readable reason.
    pub reason: String,
}

/// The outcome of one bulk item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BulkItem {
    /// The action.
    pub action: BulkAction,
    /// `_index` from the action line, or the index of the URL.
    pub index: Option<String>,
    /// `_id` from the action line.
    pub id: Option<String>,
    /// HTTP status of the item: 201 stored, 400 refused.
    pub status: u16,
    /// The error, for a refused item.
    pub error: Option<BulkItemError>,
}

/// A decoded bulk request: the entries to store and one result per item.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BulkOutcome {
    /// Entries of the items that succeeded.
    pub request: PushRequest,
    /// Per-item results, in request order.
    pub items: Vec<BulkItem>,
}

impl BulkOutcome {
    /// True when any item failed (Elasticsearch's `errors`).
    pub fn errors(&self) -> bool {
        self.items.iter().any(|i| i.error.is_some())
    }

    /// The Elasticsearch bulk response body:
    /// `{"took":..,"errors":..,"items":[{"create":{"_index":..,"status":201,..}}]}`.
    pub fn response_json(&self, took_ms: u64) -> String {
        let items: Vec<Value> = self
            .items
            .iter()
            .map(|it| {
                let mut o = serde_json::Map::new();
                if let Some(ix) = &it.index {
                    o.insert("_index".into(), ix.clone().into());
                }
                if let Some(id) = &it.id {
                    o.insert("_id".into(), id.clone().into());
                }
                o.insert("status".into(), it.status.into());
                match &it.error {
                    None => {
                        o.insert("result".into(), "created".into());
                    }
                    Some(e) => {
                        o.insert(
                            "error".into(),
                            serde_json::json!({"type": e.kind, "reason": e.reason}),
                        );
                    }
                }
                serde_json::json!({ it.action.name(): o })
            })
            .collect();
        serde_json::json!({"took": took_ms, "errors": self.errors(), "items": items}).to_string()
    }
}

/// Decodes a bulk body (optionally gzip/deflate-encoded). `default_index` is
/// the index named in the URL, if any.
pub fn decode_bulk(
    body: &[u8],
    content_encoding: Option<&str>,
    default_index: Option<&str>,
    opts: &DocOptions,
    limits: &PushLimits,
) -> Result<BulkOutcome, PushError> {
    let raw = decompress(
        body,
        Encoding::parse(content_encoding)?,
        limits.max_body_bytes,
    )?;
    let now = now_ns();
    let mut lines = raw
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace));
    let mut out = Grouper::default();
    let mut items = Vec::new();
    while let Some((n, line)) = lines.next() {
        let (action, index, id) = parse_action(line, n + 1, default_index)?;
        let item = |status: u16, error: Option<BulkItemError>| BulkItem {
            action,
            index: index.clone(),
            id: id.clone(),
            status,
            error,
        };
        let refuse = |kind: &str, reason: String| {
            Some(BulkItemError {
                kind: kind.into(),
                reason,
            })
        };
        match action {
            BulkAction::Delete | BulkAction::Update => {
                if action == BulkAction::Update && lines.next().is_none() {
                    return Err(missing_source(n + 1));
                }
                let reason = format!(
                    "bulk action [{}] is not supported: logs are append-only",
                    action.name()
                );
                items.push(item(400, refuse("illegal_argument_exception", reason)));
            }
            BulkAction::Index | BulkAction::Create => {
                let (_, doc) = lines.next().ok_or_else(|| missing_source(n + 1))?;
                let result = match std::str::from_utf8(doc) {
                    Err(e) => Err(DocError::Parse(format!("invalid UTF-8: {e}"))),
                    Ok(text) => doc_to_entry(text, opts, limits, now),
                };
                match result {
                    Ok((labels, entry)) => {
                        out.push(labels, entry);
                        items.push(item(201, None));
                    }
                    Err(DocError::Parse(e)) => items.push(item(
                        400,
                        refuse("mapper_parsing_exception", format!("failed to parse: {e}")),
                    )),
                    Err(DocError::Time(e)) => items.push(item(
                        400,
                        refuse(
                            "document_parsing_exception",
                            format!("failed to parse time: {e}"),
                        ),
                    )),
                    Err(DocError::Invalid(e)) => items.push(item(
                        400,
                        refuse("document_parsing_exception", e.to_string()),
                    )),
                }
            }
        }
    }
    if items.is_empty() {
        return Err(PushError::Json(
            "Validation Failed: 1: no requests added;".into(),
        ));
    }
    Ok(BulkOutcome {
        request: out.finish(),
        items,
    })
}

fn missing_source(line: usize) -> PushError {
    PushError::Json(format!(
        "Malformed bulk request: the action on line [{line}] is not followed by a document"
    ))
}

/// Parses an action line: `{"create":{"_index":"x","_id":"1"}}`.
fn parse_action(
    line: &[u8],
    n: usize,
    default_index: Option<&str>,
) -> Result<(BulkAction, Option<String>, Option<String>), PushError> {
    let malformed =
        |what: String| PushError::Json(format!("Malformed action/metadata line [{n}], {what}"));
    let v: Value = serde_json::from_slice(line)
        .map_err(|e| malformed(format!("expected a JSON object: {e}")))?;
    let obj = v
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(|| malformed("expected an object with one action".into()))?;
    let (name, meta) = obj
        .iter()
        .next()
        .ok_or_else(|| malformed("expected an action".into()))?;
    let action = match name.as_str() {
        "index" => BulkAction::Index,
        "create" => BulkAction::Create,
        "update" => BulkAction::Update,
        "delete" => BulkAction::Delete,
        other => {
            return Err(malformed(format!(
                "expected one of [create, delete, index, update] but found [{other}]"
            )))
        }
    };
    let meta = meta
        .as_object()
        .ok_or_else(|| malformed(format!("expected an object after [{name}]")))?;
    let text = |k: &str| match meta.get(k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let index = text("_index").or_else(|| default_index.map(str::to_string));
    Ok((action, index, text("_id")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> DocOptions {
        DocOptions {
            stream_fields: vec!["app".into()],
            ..DocOptions::default()
        }
    }

    #[test]
    fn index_and_create_store_others_are_refused() {
        let body = concat!(
            "{\"create\":{\"_index\":\"logs\",\"_id\":\"1\"}}\n",
            "{\"app\":\"a\",\"@timestamp\":\"2023-06-20T15:32:10Z\",\"message\":\"one\"}\n",
            "{\"index\":{}}\n",
            "{\"app\":\"a\",\"@timestamp\":1686026893}\n",
            "{\"delete\":{\"_id\":\"1\"}}\n",
            "{\"update\":{\"_id\":\"1\"}}\n",
            "{\"doc\":{}}\n",
            "{\"create\":{}}\n",
            "not json\n",
            "{\"create\":{}}\n",
            "{\"app\":\"b\",\"@timestamp\":\"soon\"}\n",
        );
        let got = decode_bulk(
            body.as_bytes(),
            None,
            Some("url-index"),
            &opts(),
            &PushLimits::default(),
        )
        .unwrap();
        assert_eq!(got.request.entry_count(), 2);
        assert_eq!(got.request.streams[0].labels.to_string(), r#"{app="a"}"#);
        assert_eq!(
            got.request.streams[0].entries[0].ts,
            1_687_275_130_000_000_000
        );
        let statuses: Vec<u16> = got.items.iter().map(|i| i.status).collect();
        assert_eq!(statuses, vec![201, 201, 400, 400, 400, 400]);
        assert_eq!(got.items[0].index.as_deref(), Some("logs"));
        assert_eq!(got.items[1].index.as_deref(), Some("url-index"));
        assert_eq!(
            got.items[4].error.as_ref().unwrap().kind,
            "mapper_parsing_exception"
        );
        assert!(got.errors());
        let resp: Value = serde_json::from_str(&got.response_json(3)).unwrap();
        assert_eq!(resp["took"], 3);
        assert_eq!(resp["errors"], true);
        assert_eq!(resp["items"][0]["create"]["status"], 201);
        assert_eq!(resp["items"][0]["create"]["_id"], "1");
        assert_eq!(
            resp["items"][2]["delete"]["error"]["type"],
            "illegal_argument_exception"
        );
    }

    #[test]
    fn whole_request_errors() {
        let e = decode_bulk(b"", None, None, &opts(), &PushLimits::default()).unwrap_err();
        assert_eq!(e.to_string(), "Validation Failed: 1: no requests added;");
        let e = decode_bulk(
            b"{\"upsert\":{}}\n{}\n",
            None,
            None,
            &opts(),
            &PushLimits::default(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Malformed action/metadata line [1], expected one of [create, delete, index, update] but found [upsert]"
        );
        assert_eq!(e.status(), 400);
        assert!(decode_bulk(
            b"{\"index\":{}}\n",
            None,
            None,
            &opts(),
            &PushLimits::default()
        )
        .is_err());
        assert!(decode_bulk(b"[]\n{}\n", None, None, &opts(), &PushLimits::default()).is_err());
    }

    proptest::proptest! {
        #[test]
        fn hostile_bytes_never_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = decode_bulk(&body, None, None, &opts(), &PushLimits::default());
            let _ = crate::jsonline::decode_jsonline(&body, None, &opts(), &PushLimits::default());
        }
    }
}
