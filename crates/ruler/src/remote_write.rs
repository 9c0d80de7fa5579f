//! Writes recording rules' samples (and the `ALERTS` series) to a
//! Prometheus remote-write receiver: protobuf `WriteRequest`, snappy block
//! compression, remote-write 1.0 headers, the tenant in `X-Scope-OrgID`,
//! basic or bearer auth. Samples wait in a bounded queue (the oldest
//! dropped and counted past its capacity) that one thread empties
//! in batches. With a log directory the queue is backed by a log on disk
//! ([`crate::sample_log`]): a restart loses no evaluated sample. Network
//! errors, 5xx and 429 are retried (backing off up to 5 s) until the
//! receiver takes the batch; a 400 is sent again in halves down to the
//! samples refused; those and other 4xx are dropped (counted as failed).

use crate::config::RemoteWriteConfig;
use crate::metrics::RulerMetrics;
use crate::queue::Queue;
use crate::sample::RecordedSample;
use crate::sample_log::{Logged, SampleLog};
use base64::Engine as _;
use parking_lot::Mutex;
use prost::Message;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Samples per request.
const BATCH: usize = 2_000;

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

/// The remote-write client: the log on disk (when configured), the queue
/// and the thread that empties them.
pub struct RemoteWriter {
    queue: Arc<Queue<Logged>>,
    log: Option<Arc<Mutex<SampleLog>>>,
    /// Numbers samples when there is no log.
    next_seq: std::sync::atomic::AtomicU64,
    metrics: Arc<RulerMetrics>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// What the sender thread works with.
struct Sender {
    agent: ureq::Agent,
    config: RemoteWriteConfig,
    queue: Arc<Queue<Logged>>,
    log: Option<Arc<Mutex<SampleLog>>>,
    metrics: Arc<RulerMetrics>,
    /// The log is rewritten from the queue past this size.
    max_log_bytes: u64,
}

impl RemoteWriter {
    /// Opens the log (queueing the samples a previous run left unsent) and
    /// starts the sender.
    pub fn start(config: RemoteWriteConfig, metrics: Arc<RulerMetrics>) -> std::io::Result<Self> {
        let queue = Arc::new(Queue::new(config.queue_capacity));
        let log = match &config.log_dir {
            Some(dir) => {
                let (log, unsent) = SampleLog::open(dir)?;
                if !unsent.is_empty() {
                    tracing::info!(
                        samples = unsent.len(),
                        "remote write: resending samples of the previous run"
                    );
                }
                let dropped = queue.push_all(unsent);
                metrics
                    .samples_dropped
                    .fetch_add(dropped as u64, Ordering::Relaxed);
                Some(Arc::new(Mutex::new(log)))
            }
            None => None,
        };
        let sender = Sender {
            agent: ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(30))
                .build(),
            max_log_bytes: (config.queue_capacity as u64 * 512).max(1 << 20),
            config,
            queue: queue.clone(),
            log: log.clone(),
            metrics: metrics.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("ruler-remote-write".into())
            .spawn(move || sender.run())?;
        Ok(RemoteWriter {
            queue,
            log,
            next_seq: Default::default(),
            metrics,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Logs (fsynced) and queues samples; the oldest queued are dropped (and
    /// counted) past the capacity.
    pub fn write(&self, samples: Vec<RecordedSample>) {
        if samples.is_empty() {
            return;
        }
        let (n, t_ms) = (samples.len(), samples[0].t_ms);
        // Appending and queueing under the log's lock: the queue holds the
        // samples in the order of their numbers, and the sender finds the
        // log holding nothing unqueued.
        let (logged, _guard) = match &self.log {
            Some(log) => {
                let mut g = log.lock();
                let (logged, result) = g.append(samples);
                match result {
                    // What the fault tests (crates/cli/tests/ruler.rs) take
                    // as evaluated: logged durably.
                    Ok(()) => tracing::debug!(samples = n, t_ms, "remote write: samples logged"),
                    Err(e) => {
                        tracing::error!(error = %e, "remote write: samples not logged (kept in memory only)")
                    }
                }
                (logged, Some(g))
            }
            None => {
                let first = self.next_seq.fetch_add(n as u64, Ordering::Relaxed);
                let logged = samples
                    .into_iter()
                    .zip(first..)
                    .map(|(sample, seq)| Logged { seq, sample })
                    .collect();
                (logged, None)
            }
        };
        let dropped = self.queue.push_all(logged);
        self.metrics
            .samples_dropped
            .fetch_add(dropped as u64, Ordering::Relaxed);
    }

    /// Sends what is queued if the receiver takes it, then stops the thread;
    /// what could not be sent stays in the log for the next start.
    pub fn stop(&self) {
        self.queue.close();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

/// How one attempt ended.
enum Attempt {
    Sent,
    /// Worth retrying (network, 5xx, 429).
    Retry(String),
    /// Refused for good (4xx): the status and the receiver's answer.
    Refused(u16, String),
}

impl Sender {
    fn run(&self) {
        loop {
            let batch = self.queue.take(BATCH, Duration::from_secs(1));
            let Some(last) = batch.last().map(|l| l.seq) else {
                if self.queue.is_closed() {
                    return;
                }
                continue;
            };
            let mut by_tenant: BTreeMap<&str, Vec<RecordedSample>> = BTreeMap::new();
            for l in &batch {
                by_tenant
                    .entry(&l.sample.tenant)
                    .or_default()
                    .push(l.sample.clone());
            }
            for (tenant, samples) in by_tenant {
                if !self.deliver(tenant, &samples, &batch) {
                    // Closed with the receiver unreachable: the log keeps them.
                    return;
                }
            }
            self.done(last);
        }
    }

    /// Sends one tenant's samples, retrying while the receiver may take
    /// them later (backing off up to 5 s); false when stopped meanwhile.
    ///
    /// A request the receiver refuses with 400 is sent again in halves,
    /// down to single samples, so that only the samples it refuses are
    /// lost: Prometheus refuses a whole request for one sample older than
    /// its series' newest (out of order), which is what a batch sent again
    /// after a crash holds when it had been taken before.
    fn deliver(&self, tenant: &str, samples: &[RecordedSample], in_flight: &[Logged]) -> bool {
        let body = encode(samples);
        let n = samples.len() as u64;
        let mut pause = Duration::from_millis(200);
        loop {
            match self.attempt(tenant, &body) {
                Attempt::Sent => {
                    self.metrics.samples_sent.fetch_add(n, Ordering::Relaxed);
                    return true;
                }
                Attempt::Refused(400, _) if samples.len() > 1 => {
                    let (a, b) = samples.split_at(samples.len() / 2);
                    return self.deliver(tenant, a, in_flight)
                        && self.deliver(tenant, b, in_flight);
                }
                Attempt::Refused(code, e) => {
                    tracing::warn!(status = code, error = %e, samples = n, url = %self.config.url, "remote write refused");
                    self.metrics.samples_failed.fetch_add(n, Ordering::Relaxed);
                    return true;
                }
                Attempt::Retry(e) => {
                    if self.queue.is_closed() {
                        // Not failed: the log keeps them for the next start.
                        return false;
                    }
                    tracing::warn!(error = %e, samples = n, url = %self.config.url, "remote write failed; retrying");
                    self.trim(in_flight);
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    /// After a batch whose last sample is numbered `last` was delivered
    /// (or refused): empties the log when nothing else waits, rewrites it
    /// from the queue past its size bound, or else acknowledges the batch
    /// in it so that a restart does not send it again.
    fn done(&self, last: u64) {
        let Some(log) = &self.log else { return };
        let mut log = log.lock();
        let result = if self.queue.is_empty() {
            log.clear()
        } else if log.len() > self.max_log_bytes {
            log.rewrite(&self.queue.snapshot())
        } else {
            log.ack(last)
        };
        if let Err(e) = result {
            tracing::error!(error = %e, "remote write: the log could not be trimmed");
        }
    }

    /// While a batch waits for the receiver: rewrites the log from the
    /// batch and the queue past its size bound.
    fn trim(&self, in_flight: &[Logged]) {
        let Some(log) = &self.log else { return };
        let mut log = log.lock();
        if log.len() <= self.max_log_bytes {
            return;
        }
        let mut keep = in_flight.to_vec();
        keep.extend(self.queue.snapshot());
        if let Err(e) = log.rewrite(&keep) {
            tracing::error!(error = %e, "remote write: the log could not be trimmed");
        }
    }

    fn attempt(&self, tenant: &str, body: &[u8]) -> Attempt {
        let config = &self.config;
        let mut req = self
            .agent
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
            Ok(_) => Attempt::Sent,
            Err(ureq::Error::Status(code, r)) if (400..500).contains(&code) && code != 429 => {
                Attempt::Refused(code, r.into_string().unwrap_or_default())
            }
            Err(e) => Attempt::Retry(e.to_string()),
        }
    }
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
