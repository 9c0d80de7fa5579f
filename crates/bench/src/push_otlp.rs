//! Encodes generated lines as an OTLP/HTTP logs export (protobuf): one
//! `ResourceLogs` per stream, whose resource attributes name the pod
//! (`service.name` = app, `k8s.namespace.name`, `k8s.pod.name`,
//! `k8s.container.name`, `k8s.node.name`), each record's body the line and
//! its `time_unix_nano` the entry time.

use prost::Message;
use runakefli_ingest::otlp::proto;

use crate::generator::{GeneratedLine, Generator};

/// Resource attribute keys and the generator label each takes its value from.
pub const RESOURCE_ATTRIBUTES: &[(&str, &str)] = &[
    ("service.name", "app"),
    ("k8s.namespace.name", "namespace"),
    ("k8s.pod.name", "pod"),
    ("k8s.container.name", "container"),
    ("k8s.node.name", "node"),
];

fn string_value(s: String) -> Option<proto::AnyValue> {
    Some(proto::AnyValue {
        value: Some(proto::any_value::Value::StringValue(s)),
    })
}

fn resource(gen: &Generator, stream: usize) -> proto::Resource {
    let labels = gen.stream_labels(stream);
    proto::Resource {
        attributes: RESOURCE_ATTRIBUTES
            .iter()
            .map(|(key, label)| proto::KeyValue {
                key: (*key).to_string(),
                value: string_value(labels.get(label).unwrap_or_default().to_string()),
            })
            .collect(),
        dropped_attributes_count: 0,
    }
}

/// Builds the export message for `batch`: one resource per distinct stream, in
/// order of first appearance, each holding its lines in batch order.
pub fn export_request(
    gen: &Generator,
    batch: Vec<GeneratedLine>,
) -> proto::ExportLogsServiceRequest {
    let mut slot_of_stream = vec![usize::MAX; gen.stream_count()];
    let mut resource_logs: Vec<proto::ResourceLogs> = Vec::new();
    for g in batch {
        if slot_of_stream[g.stream] == usize::MAX {
            slot_of_stream[g.stream] = resource_logs.len();
            resource_logs.push(proto::ResourceLogs {
                resource: Some(resource(gen, g.stream)),
                scope_logs: vec![proto::ScopeLogs {
                    scope: None,
                    log_records: Vec::new(),
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            });
        }
        resource_logs[slot_of_stream[g.stream]].scope_logs[0]
            .log_records
            .push(proto::LogRecord {
                time_unix_nano: g.ts.max(0) as u64,
                observed_time_unix_nano: 0,
                severity_number: 0,
                severity_text: String::new(),
                body: string_value(g.line),
                attributes: Vec::new(),
                dropped_attributes_count: 0,
                flags: 0,
                trace_id: Vec::new(),
                span_id: Vec::new(),
                event_name: String::new(),
            });
    }
    proto::ExportLogsServiceRequest { resource_logs }
}

/// The request body for `batch`: the export message as protobuf, uncompressed.
pub fn encode_otlp(gen: &Generator, batch: Vec<GeneratedLine>) -> Vec<u8> {
    export_request(gen, batch).encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::GeneratorConfig;
    use runakefli_ingest::otlp::decode_logs;
    use runakefli_ingest::PushLimits;

    #[test]
    fn body_decodes_to_the_same_lines() {
        let mut gen = Generator::new(GeneratorConfig {
            streams: 30,
            ..GeneratorConfig::default()
        })
        .unwrap();
        let batch = gen.fill_batch(200);
        let body = encode_otlp(&gen, batch.clone());
        let req = decode_logs(
            &body,
            Some("application/x-protobuf"),
            None,
            &PushLimits::default(),
        )
        .unwrap();
        assert_eq!(req.entry_count(), batch.len());
        for g in &batch {
            let labels = gen.stream_labels(g.stream);
            let stream = req
                .streams
                .iter()
                .find(|s| {
                    s.labels.get("service_name") == labels.get("app")
                        && s.labels.get("k8s_pod_name") == labels.get("pod")
                        && s.labels.get("k8s_namespace_name") == labels.get("namespace")
                        && s.labels.get("k8s_container_name") == labels.get("container")
                })
                .expect("stream labelled by the resource attributes");
            let e = stream
                .entries
                .iter()
                .find(|e| e.line == g.line && e.ts == g.ts)
                .expect("the line at its exact time");
            // The node is not an index attribute: it arrives as structured metadata.
            assert!(e
                .metadata
                .iter()
                .any(|(k, v)| k == "k8s_node_name" && Some(v.as_str()) == labels.get("node")));
        }
    }
}
