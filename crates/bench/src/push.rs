//! Encodes generated lines as a Loki push request: protobuf `logproto.PushRequest`,
//! compressed with snappy's block format, as Loki clients send it.

use prost::Message;
use runakefli_ingest::loki::proto;

use crate::generator::{GeneratedLine, Generator};

/// Builds the push message for `batch`: one stream entry per distinct stream, in order
/// of first appearance, each holding its lines in batch order.
pub fn push_request(gen: &Generator, batch: &[GeneratedLine]) -> proto::PushRequest {
    let mut slot_of_stream: std::collections::HashMap<usize, usize> =
        std::collections::HashMap::new();
    let mut streams: Vec<proto::StreamAdapter> = Vec::new();
    for g in batch {
        let slot = *slot_of_stream.entry(g.stream).or_insert_with(|| {
            streams.push(proto::StreamAdapter {
                labels: gen.stream_labels_text(g.stream).to_string(),
                entries: Vec::new(),
                hash: 0,
            });
            streams.len() - 1
        });
        streams[slot].entries.push(proto::EntryAdapter {
            timestamp: Some(proto::Timestamp {
                seconds: g.ts.div_euclid(1_000_000_000),
                nanos: g.ts.rem_euclid(1_000_000_000) as i32,
            }),
            line: g.line.clone(),
            structured_metadata: Vec::new(),
        });
    }
    proto::PushRequest { streams }
}

/// The request body for `batch`: protobuf, then snappy (block format).
pub fn encode_push(gen: &Generator, batch: &[GeneratedLine]) -> Vec<u8> {
    let raw = push_request(gen, batch).encode_to_vec();
    // Compressing an in-memory buffer only fails if it exceeds snappy's maximum
    // input size (about 4 GiB), which a push batch never approaches.
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::GeneratorConfig;

    #[test]
    fn round_trips_through_prost_decode() {
        let mut gen = Generator::new(GeneratorConfig {
            streams: 30,
            ..GeneratorConfig::default()
        })
        .unwrap();
        let batch = gen.fill_batch(200);
        let body = encode_push(&gen, &batch);
        let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
        let decoded = proto::PushRequest::decode(raw.as_slice()).unwrap();
        assert_eq!(decoded, push_request(&gen, &batch));
        let total: usize = decoded.streams.iter().map(|s| s.entries.len()).sum();
        assert_eq!(total, 200);
        // Every line is found under its stream's labels with its exact timestamp.
        for g in &batch {
            let s = decoded
                .streams
                .iter()
                .find(|s| s.labels == gen.stream_labels_text(g.stream))
                .unwrap();
            let e = s.entries.iter().find(|e| e.line == g.line).unwrap();
            let ts = e.timestamp.unwrap();
            assert_eq!(ts.seconds * 1_000_000_000 + ts.nanos as i64, g.ts);
        }
        // Labels parse back to the generator's label sets.
        for s in &decoded.streams {
            let parsed = runakefli_model::Labels::parse(&s.labels).unwrap();
            assert!((0..gen.stream_count()).any(|i| gen.stream_labels(i) == &parsed));
        }
    }
}
