//! Encodes generated lines for the JSON-document protocols: JSON lines (one
//! whole object per line) and Elasticsearch `_bulk` (a `create` action line
//! before each whole object). The objects carry the stream labels as fields
//! ([`Generator::full_object`]); the stream, time and message fields are
//! named by [`crate::protocol::JSON_DOC_QUERY`].

use crate::generator::{GeneratedLine, Generator};

/// The action line before every `_bulk` document.
pub const BULK_ACTION: &str = r#"{"create":{"_index":"logs"}}"#;

/// NDJSON of the whole objects of `batch`, one per line.
pub fn encode_jsonline(gen: &Generator, batch: &[GeneratedLine]) -> Vec<u8> {
    let mut out = String::with_capacity(batch.iter().map(|g| g.line.len() + 160).sum());
    for g in batch {
        out.push_str(&gen.full_object(g));
        out.push('\n');
    }
    out.into_bytes()
}

/// An Elasticsearch `_bulk` body: for each line of `batch`, a `create` action
/// line into the index `logs`, then its whole object.
pub fn encode_es_bulk(gen: &Generator, batch: &[GeneratedLine]) -> Vec<u8> {
    let mut out = String::with_capacity(
        batch
            .iter()
            .map(|g| g.line.len() + 160 + BULK_ACTION.len())
            .sum(),
    );
    for g in batch {
        out.push_str(BULK_ACTION);
        out.push('\n');
        out.push_str(&gen.full_object(g));
        out.push('\n');
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::GeneratorConfig;
    use crate::protocol::JSON_DOC_QUERY;
    use runakefli_ingest::es_bulk::decode_bulk;
    use runakefli_ingest::jsondoc::DocOptions;
    use runakefli_ingest::jsonline::decode_jsonline;
    use runakefli_ingest::PushLimits;
    use runakefli_model::PushRequest;

    fn workload() -> (Generator, Vec<GeneratedLine>) {
        let mut gen = Generator::new(GeneratorConfig {
            streams: 30,
            ..GeneratorConfig::default()
        })
        .unwrap();
        let batch = gen.fill_batch(200);
        (gen, batch)
    }

    /// The options the server derives from the benchmark's query string.
    fn opts() -> DocOptions {
        let pairs: Vec<(&str, &str)> = JSON_DOC_QUERY
            .split('&')
            .map(|kv| kv.split_once('=').unwrap())
            .collect();
        DocOptions::from_lookup(|name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v))
            .unwrap()
    }

    /// Every generated line is stored under its own stream's labels, at its
    /// time to the millisecond (the JSON timestamp's precision), as its whole object.
    fn check(gen: &Generator, batch: &[GeneratedLine], req: &PushRequest) {
        assert_eq!(req.entry_count(), batch.len());
        for g in batch {
            let stream = req
                .streams
                .iter()
                .find(|s| &s.labels == gen.stream_labels(g.stream))
                .expect("stream labels from the stream fields");
            let object = gen.full_object(g);
            let e = stream
                .entries
                .iter()
                .find(|e| e.line == object)
                .expect("the whole object is the line");
            assert_eq!(e.ts / 1_000_000, g.ts / 1_000_000);
        }
    }

    #[test]
    fn jsonline_body_decodes_to_the_same_lines() {
        let (gen, batch) = workload();
        let body = encode_jsonline(&gen, &batch);
        let req = decode_jsonline(&body, None, &opts(), &PushLimits::default()).unwrap();
        check(&gen, &batch, &req);
    }

    #[test]
    fn varied_lines_decode_at_their_own_times() {
        let mut gen = Generator::new(GeneratorConfig {
            streams: 30,
            ..GeneratorConfig::default().with_shape(crate::generator::Shape::Varied)
        })
        .unwrap();
        let batch = gen.fill_batch(300);
        assert!(batch.iter().any(|g| !g.line.starts_with('{')));
        let body = encode_jsonline(&gen, &batch);
        let req = decode_jsonline(&body, None, &opts(), &PushLimits::default()).unwrap();
        check(&gen, &batch, &req);
    }

    #[test]
    fn es_bulk_body_decodes_to_the_same_lines() {
        let (gen, batch) = workload();
        let body = encode_es_bulk(&gen, &batch);
        let out = decode_bulk(&body, None, None, &opts(), &PushLimits::default()).unwrap();
        assert!(!out.errors());
        assert_eq!(out.items.len(), batch.len());
        assert!(out
            .items
            .iter()
            .all(|i| i.status == 201 && i.index.as_deref() == Some("logs")));
        check(&gen, &batch, &out.request);
    }
}
