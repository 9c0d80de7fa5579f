//! Encodes generated lines as a Loki push request: protobuf `logproto.PushRequest`,
//! compressed with snappy's block format, as Loki clients send it.

use prost::Message;
use runakefli_ingest::loki::proto;

use crate::generator::{GeneratedLine, Generator};

/// Builds the push message for `batch`: one stream entry per distinct stream, in order
/// of first appearance, each holding its lines in batch order.
pub fn push_request(gen: &Generator, batch: &[GeneratedLine]) -> proto::PushRequest {
    build(gen, batch.iter().map(|g| (g.stream, g.ts, g.line.clone())))
}

/// Like [`push_request`], moving the lines instead of copying them.
pub fn push_request_owned(gen: &Generator, batch: Vec<GeneratedLine>) -> proto::PushRequest {
    build(gen, batch.into_iter().map(|g| (g.stream, g.ts, g.line)))
}

fn build(gen: &Generator, lines: impl Iterator<Item = (usize, i64, String)>) -> proto::PushRequest {
    let mut slot_of_stream = vec![usize::MAX; gen.stream_count()];
    let mut streams: Vec<proto::StreamAdapter> = Vec::new();
    for (stream, ts, line) in lines {
        if slot_of_stream[stream] == usize::MAX {
            slot_of_stream[stream] = streams.len();
            streams.push(proto::StreamAdapter {
                labels: gen.stream_labels_text(stream).to_string(),
                entries: Vec::new(),
                hash: 0,
            });
        }
        streams[slot_of_stream[stream]]
            .entries
            .push(proto::EntryAdapter {
                timestamp: Some(proto::Timestamp {
                    seconds: ts.div_euclid(1_000_000_000),
                    nanos: ts.rem_euclid(1_000_000_000) as i32,
                }),
                line,
                structured_metadata: Vec::new(),
            });
    }
    proto::PushRequest { streams }
}

fn compress(req: &proto::PushRequest) -> Vec<u8> {
    let raw = req.encode_to_vec();
    // Compressing an in-memory buffer only fails if it exceeds snappy's maximum
    // input size (about 4 GiB), which a push batch never approaches.
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .unwrap_or_default()
}

/// The request body for `batch`: protobuf, then snappy (block format).
pub fn encode_push(gen: &Generator, batch: &[GeneratedLine]) -> Vec<u8> {
    compress(&push_request(gen, batch))
}

/// Like [`encode_push`], consuming the batch.
pub fn encode_push_owned(gen: &Generator, batch: Vec<GeneratedLine>) -> Vec<u8> {
    compress(&push_request_owned(gen, batch))
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
        assert_eq!(encode_push_owned(&gen, batch.clone()), body);
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
