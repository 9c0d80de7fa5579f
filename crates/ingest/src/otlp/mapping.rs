//! OTLP logs -> streams, labels and structured metadata, as Loki maps them
//! (see the module header of [`super`] for the rules).

use super::proto::{ExportLogsServiceRequest, KeyValue, LogRecord};
use super::value::{as_string, flatten_attribute, hex};
use crate::discover::{discover_service_name, SERVICE_NAME};
use crate::level::apply_detected_level;
use crate::validate::{check_entry, check_label_pairs};
use crate::{PushError, PushLimits};
use runakefli_model::{Entry, Labels, PushRequest, PushStream};
use std::collections::HashMap;

/// Resource attributes that become stream labels (Loki's default list).
pub const INDEX_ATTRIBUTES: &[&str] = &[
    "service.name",
    "service.namespace",
    "service.instance.id",
    "deployment.environment",
    "deployment.environment.name",
    "cloud.region",
    "cloud.availability_zone",
    "k8s.cluster.name",
    "k8s.namespace.name",
    "k8s.pod.name",
    "k8s.container.name",
    "container.name",
    "k8s.replicaset.name",
    "k8s.deployment.name",
    "k8s.statefulset.name",
    "k8s.daemonset.name",
    "k8s.cronjob.name",
    "k8s.job.name",
];

pub use crate::discover::{SERVICE_NAME_SOURCES, UNKNOWN_SERVICE};

/// Converts a decoded export request into checked streams.
pub(crate) fn to_push(
    req: ExportLogsServiceRequest,
    limits: &PushLimits,
) -> Result<PushRequest, PushError> {
    let mut out = PushRequest::default();
    let mut by_labels: HashMap<Labels, usize> = HashMap::new();
    let mut budget = Expansion::new(limits);
    for rl in req.resource_logs {
        let attrs: &[KeyValue] = rl
            .resource
            .as_ref()
            .map(|r| r.attributes.as_slice())
            .unwrap_or(&[]);
        let (labels, resource_md) = resource_labels(attrs, limits)?;
        let idx = *by_labels.entry(labels.clone()).or_insert_with(|| {
            out.streams.push(PushStream {
                labels: labels.clone(),
                entries: Vec::new(),
            });
            out.streams.len() - 1
        });
        for sl in rl.scope_logs {
            let mut scope_md = Vec::new();
            if let Some(scope) = &sl.scope {
                for kv in &scope.attributes {
                    flatten_attribute(&mut scope_md, &kv.key, kv.value.as_ref(), None);
                }
                if !scope.name.is_empty() {
                    scope_md.push(("scope_name".to_string(), scope.name.clone()));
                }
                if !scope.version.is_empty() {
                    scope_md.push(("scope_version".to_string(), scope.version.clone()));
                }
                if scope.dropped_attributes_count != 0 {
                    scope_md.push((
                        "scope_dropped_attributes_count".to_string(),
                        scope.dropped_attributes_count.to_string(),
                    ));
                }
            }
            let entries = &mut out.streams[idx].entries;
            entries.reserve(sl.log_records.len());
            for rec in sl.log_records {
                budget.admit_entry()?;
                let entry = to_entry(rec, &labels, &resource_md, &scope_md)?;
                check_entry(&labels, entry.line.len(), &entry.metadata, limits)?;
                budget.add_bytes(&entry)?;
                entries.push(entry);
            }
        }
    }
    out.streams.retain(|s| !s.entries.is_empty());
    Ok(out)
}

/// What one request has expanded to so far, against
/// [`PushLimits::max_entries_per_request`] and
/// [`PushLimits::max_expanded_bytes_per_request`].
struct Expansion {
    entries: usize,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

impl Expansion {
    fn new(limits: &PushLimits) -> Self {
        Expansion {
            entries: 0,
            bytes: 0,
            max_entries: limits.max_entries_per_request,
            max_bytes: limits.max_expanded_bytes_per_request,
        }
    }

    /// Room for one more entry, checked before it is built.
    fn admit_entry(&mut self) -> Result<(), PushError> {
        self.entries += 1;
        if self.max_entries != 0 && self.entries > self.max_entries {
            return Err(PushError::TooManyEntries {
                limit: self.max_entries,
            });
        }
        Ok(())
    }

    /// Counts a built entry's line and metadata.
    fn add_bytes(&mut self, e: &Entry) -> Result<(), PushError> {
        self.bytes += e.line.len()
            + e.metadata
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>();
        if self.max_bytes != 0 && self.bytes > self.max_bytes {
            return Err(PushError::ExpandedTooLarge {
                limit: self.max_bytes,
            });
        }
        Ok(())
    }
}

/// Stream labels and resource-level metadata of one resource.
fn resource_labels(
    attrs: &[KeyValue],
    limits: &PushLimits,
) -> Result<(Labels, Vec<(String, String)>), PushError> {
    let has_service_name = attrs
        .iter()
        .find(|kv| kv.key == "service.name")
        .is_some_and(|kv| !as_string(kv.value.as_ref()).is_empty());
    let mut flat = Vec::new();
    let mut md = Vec::new();
    for kv in attrs {
        let dst = if INDEX_ATTRIBUTES.contains(&kv.key.as_str()) {
            &mut flat
        } else {
            &mut md
        };
        flatten_attribute(dst, &kv.key, kv.value.as_ref(), None);
    }
    // A later attribute of the same name wins, as in a map.
    let mut pairs: Vec<(String, String)> = Vec::with_capacity(flat.len() + 1);
    for (k, v) in flat {
        set(&mut pairs, k, v);
    }
    if !has_service_name {
        // A `service.name` that is empty still set the label; discovery replaces it.
        pairs.retain(|(k, _)| k != SERVICE_NAME);
        discover_service_name(&mut pairs);
    }
    Ok((check_label_pairs(pairs, limits)?, md))
}

fn set(pairs: &mut Vec<(String, String)>, k: String, v: String) {
    match pairs.iter_mut().find(|(n, _)| *n == k) {
        Some(p) => p.1 = v,
        None => pairs.push((k, v)),
    }
}

fn to_entry(
    rec: LogRecord,
    labels: &Labels,
    resource_md: &[(String, String)],
    scope_md: &[(String, String)],
) -> Result<Entry, PushError> {
    let ts_of = |ns: u64| {
        i64::try_from(ns)
            .map_err(|_| PushError::InvalidTimestamp(format!("timestamp out of range: {ns}")))
    };
    let ts = if rec.time_unix_nano != 0 {
        ts_of(rec.time_unix_nano)?
    } else if rec.observed_time_unix_nano != 0 {
        ts_of(rec.observed_time_unix_nano)?
    } else {
        // As Loki: a record without any time is stamped on receipt.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0)
    };
    let mut md: Vec<(String, String)> =
        Vec::with_capacity(rec.attributes.len() + 8 + resource_md.len() + scope_md.len());
    for kv in &rec.attributes {
        if !rec.event_name.is_empty() && kv.key == "event_name" {
            continue;
        }
        flatten_attribute(&mut md, &kv.key, kv.value.as_ref(), None);
    }
    if rec.time_unix_nano != 0 && rec.observed_time_unix_nano != 0 {
        md.push((
            "observed_timestamp".into(),
            rec.observed_time_unix_nano.to_string(),
        ));
    }
    if rec.severity_number != 0 {
        md.push(("severity_number".into(), rec.severity_number.to_string()));
    }
    if !rec.severity_text.is_empty() {
        md.push(("severity_text".into(), rec.severity_text));
    }
    if rec.dropped_attributes_count != 0 {
        md.push((
            "dropped_attributes_count".into(),
            rec.dropped_attributes_count.to_string(),
        ));
    }
    if rec.flags != 0 {
        md.push(("flags".into(), rec.flags.to_string()));
    }
    if let Some(id) = checked_id(&rec.trace_id, 16, "trace")? {
        md.push(("trace_id".into(), id));
    }
    if let Some(id) = checked_id(&rec.span_id, 8, "span")? {
        md.push(("span_id".into(), id));
    }
    if !rec.event_name.is_empty() {
        md.push(("event_name".into(), rec.event_name));
    }
    md.extend_from_slice(resource_md);
    md.extend_from_slice(scope_md);
    // A metadata name equal to a stream label would shadow it; Loki answers it as `<name>_extracted`.
    for (k, _) in md.iter_mut() {
        if labels.get(k).is_some() {
            k.push_str("_extracted");
        }
    }
    let line = as_string(rec.body.as_ref());
    apply_detected_level(labels, &mut md, &line);
    Ok(Entry {
        ts,
        line,
        metadata: md,
    })
}

/// Hex of a trace or span id; `None` when absent or all zero, an error for a wrong length.
fn checked_id(id: &[u8], len: usize, what: &str) -> Result<Option<String>, PushError> {
    if id.is_empty() {
        return Ok(None);
    }
    if id.len() != len {
        return Err(PushError::Protobuf(format!(
            "invalid {what} id length: {} bytes, expected {len}",
            id.len()
        )));
    }
    Ok(if id.iter().all(|b| *b == 0) {
        None
    } else {
        Some(hex(id))
    })
}
