//! Writes recording rules' samples (and the `ALERTS` series) to a
//! Prometheus remote-write receiver: protobuf `WriteRequest`, snappy block
//! compression, remote-write 1.0 headers, the tenant in `X-Scope-OrgID`,
//! basic or bearer auth. Samples wait in a bounded in-memory queue (the
//! oldest dropped and counted past its capacity) that one thread empties
//! in batches, each retried three times on network errors and 5xx.

use crate::config::RemoteWriteConfig;
use crate::metrics::RulerMetrics;
use crate::queue::Queue;
use base64::Engine as _;
use prost::Message;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Samples per request.
const BATCH: usize = 2_000;
/// Attempts per batch.
const ATTEMPTS: u32 = 3;

/// One sample to write.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedSample {
    /// The tenant whose rule produced it.
    pub tenant: String,
    /// Labels, `__name__` among them, sorted by name.
    pub labels: Vec<(String, String)>,
    /// Milliseconds since the epoch.
    pub t_ms: i64,
    /// The value.
    pub value: f64,
}

/// `prometheus.WriteRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct WriteRequest {
    /// The series.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, Message)]
pub struct TimeSeries {
    /// Sorted labels.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Samples in time order.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, Message)]
pub struct Label {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    /// Value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// The snappy-compressed protobuf body of `samples` (one tenant's).
pub fn encode(samples: &[RecordedSample]) -> Vec<u8> {
    let mut series: BTreeMap<&[(String, String)], Vec<Sample>> = BTreeMap::new();
    for s in samples {
        series.entry(&s.labels).or_default().push(Sample {
            value: s.value,
            timestamp: s.t_ms,
        });
    }
    let req = WriteRequest {
        timeseries: series
            .into_iter()
            .map(|(labels, mut samples)| {
                samples.sort_by_key(|s| s.timestamp);
                TimeSeries {
                    labels: labels
                        .iter()
                        .map(|(n, v)| Label {
                            name: n.clone(),
                            value: v.clone(),
                        })
                        .collect(),
                    samples,
                }
            })
            .collect(),
    };
    snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .unwrap_or_default()
}

/// The remote-write client: a queue and the thread that empties it.
pub struct RemoteWriter {
    queue: Arc<Queue<RecordedSample>>,
    metrics: Arc<RulerMetrics>,
    thread: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl RemoteWriter {
    /// Starts the sender.
    pub fn start(config: RemoteWriteConfig, metrics: Arc<RulerMetrics>) -> std::io::Result<Self> {
        let queue = Arc::new(Queue::new(config.queue_capacity));
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(30))
            .build();
        let (q, m) = (queue.clone(), metrics.clone());
        let thread = std::thread::Builder::new()
            .name("ruler-remote-write".into())
            .spawn(move || send_loop(&agent, &config, &q, &m))?;
        Ok(RemoteWriter {
            queue,
            metrics,
            thread: parking_lot::Mutex::new(Some(thread)),
        })
    }

    /// Queues samples; the oldest are dropped (and counted) past the capacity.
    pub fn write(&self, samples: Vec<RecordedSample>) {
        if samples.is_empty() {
            return;
        }
        let dropped = self.queue.push_all(samples);
        self.metrics
            .samples_dropped
            .fetch_add(dropped as u64, Ordering::Relaxed);
    }

    /// Sends what is queued, then stops the thread.
    pub fn stop(&self) {
        self.queue.close();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

fn send_loop(
    agent: &ureq::Agent,
    config: &RemoteWriteConfig,
    queue: &Queue<RecordedSample>,
    m: &RulerMetrics,
) {
    loop {
        let batch = queue.take(BATCH, Duration::from_secs(1));
        if batch.is_empty() {
            if queue.is_closed() {
                return;
            }
            continue;
        }
        let mut by_tenant: BTreeMap<&str, Vec<RecordedSample>> = BTreeMap::new();
        for s in &batch {
            by_tenant.entry(&s.tenant).or_default().push(s.clone());
        }
        for (tenant, samples) in by_tenant {
            let n = samples.len() as u64;
            match post_with_retries(agent, config, tenant, &encode(&samples), queue) {
                Ok(()) => m.samples_sent.fetch_add(n, Ordering::Relaxed),
                Err(e) => {
                    tracing::warn!(error = %e, samples = n, url = %config.url, "remote write failed");
                    m.samples_failed.fetch_add(n, Ordering::Relaxed)
                }
            };
        }
    }
}

fn post_with_retries(
    agent: &ureq::Agent,
    config: &RemoteWriteConfig,
    tenant: &str,
    body: &[u8],
    queue: &Queue<RecordedSample>,
) -> Result<(), String> {
    let mut last = String::new();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            if queue.is_closed() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200 << attempt));
        }
        let mut req = agent
            .post(&config.url)
            .set("Content-Type", "application/x-protobuf")
            .set("Content-Encoding", "snappy")
            .set("X-Prometheus-Remote-Write-Version", "0.1.0")
            .set("User-Agent", "runakefli-ruler")
            .set("X-Scope-OrgID", tenant);
        if let Some((user, password)) = &config.basic_auth {
            let token =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            req = req.set("Authorization", &format!("Basic {token}"));
        } else if let Some(token) = &config.bearer_token {
            req = req.set("Authorization", &format!("Bearer {token}"));
        }
        match req.send_bytes(body) {
            Ok(_) => return Ok(()),
            Err(ureq::Error::Status(code, r)) if (400..500).contains(&code) && code != 429 => {
                return Err(format!("{code}: {}", r.into_string().unwrap_or_default()));
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_encode_as_one_series_per_label_set() {
        let s = |v: f64, t: i64| RecordedSample {
            tenant: "fake".into(),
            labels: vec![("__name__".into(), "x".into()), ("a".into(), "b".into())],
            t_ms: t,
            value: v,
        };
        let body = encode(&[s(2.0, 20), s(1.0, 10)]);
        let raw = snap::raw::Decoder::new()
            .decompress_vec(&body)
            .expect("snappy");
        let req = WriteRequest::decode(raw.as_slice()).expect("protobuf");
        assert_eq!(req.timeseries.len(), 1);
        let ts = &req.timeseries[0];
        assert_eq!(ts.labels[0].name, "__name__");
        assert_eq!(
            ts.samples,
            [
                Sample {
                    value: 1.0,
                    timestamp: 10
                },
                Sample {
                    value: 2.0,
                    timestamp: 20
                }
            ]
        );
    }
}
