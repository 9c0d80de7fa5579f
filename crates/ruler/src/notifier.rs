//! Sends alerts to every configured Alertmanager (API v2,
//! `POST /api/v2/alerts`), each from its own bounded queue on its own
//! thread: batches of up to 64 alerts, each tried three times with a
//! growing pause, then given up (the evaluations send firing and resolved
//! alerts again every resend delay, as Prometheus, so an Alertmanager that
//! was down gets them once it is back); alerts dropped from a full queue
//! and batches that never got through are counted.

use crate::alert::{Alert, AlertState};
use crate::metrics::{AlertmanagerFigures, RulerMetrics};
use crate::queue::Queue;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Alerts per request.
const BATCH: usize = 64;
/// Attempts per batch.
const ATTEMPTS: u32 = 3;

/// One alert as Alertmanager takes it, ready to send.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    /// The alert's JSON object (`labels`, `annotations`, `startsAt`,
    /// `endsAt`, `generatorURL`).
    pub json: serde_json::Value,
}

impl Notification {
    /// The notification of `alert` of the rule whose query is `expr`.
    pub fn of(alert: &Alert, expr: &str, external_url: &str) -> Notification {
        let starts = alert.fired_at_ns.unwrap_or(alert.active_at_ns);
        let ends = match alert.state {
            AlertState::Inactive => alert.resolved_at_ns.unwrap_or(alert.valid_until_ns),
            _ => alert.valid_until_ns,
        };
        let json = serde_json::json!({
            "labels": alert.labels,
            "annotations": alert.annotations,
            "startsAt": crate::time::rfc3339(starts),
            "endsAt": crate::time::rfc3339(ends),
            "generatorURL": generator_url(external_url, expr),
        });
        Notification { json }
    }
}

/// The link back to the rule's query: this server's instant-query API.
pub fn generator_url(external_url: &str, expr: &str) -> String {
    format!(
        "{}/loki/api/v1/query?query={}",
        external_url.trim_end_matches('/'),
        percent_encode(expr)
    )
}

/// Percent-encodes all but URL-unreserved bytes.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One Alertmanager: its queue and the thread that empties it.
struct Target {
    queue: Arc<Queue<Notification>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The Alertmanager client: every alert goes to every Alertmanager, each
/// with its own bounded queue and sending thread, so one that is down or
/// slow delays none of the others.
pub struct Notifier {
    targets: parking_lot::Mutex<Vec<Target>>,
    queues: Vec<Arc<Queue<Notification>>>,
    external_labels: Vec<(String, String)>,
    metrics: Arc<RulerMetrics>,
}

/// Adds `external` to a notification's labels where the alert has no
/// such label (or an empty one), as Prometheus' notifier adds its external
/// labels (Loki's ruler `external_labels`).
pub fn add_external_labels(n: &mut Notification, external: &[(String, String)]) {
    let Some(labels) = n.json.get_mut("labels").and_then(|l| l.as_object_mut()) else {
        return;
    };
    for (k, v) in external {
        let missing = labels
            .get(k)
            .and_then(|x| x.as_str())
            .is_none_or(str::is_empty);
        if missing {
            labels.insert(k.clone(), serde_json::Value::String(v.clone()));
        }
    }
}

/// `base_url`'s alerts endpoint (API v2).
pub fn alerts_url(base_url: &str) -> String {
    format!("{}/api/v2/alerts", base_url.trim_end_matches('/'))
}

impl Notifier {
    /// Starts a sender for each Alertmanager of `base_urls`, each queueing
    /// up to `capacity` alerts, which get `external_labels` they lack.
    pub fn start(
        base_urls: &[String],
        capacity: usize,
        external_labels: Vec<(String, String)>,
        metrics: Arc<RulerMetrics>,
    ) -> std::io::Result<Notifier> {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(10))
            .build();
        let mut targets = Vec::new();
        for base in base_urls {
            let queue = Arc::new(Queue::new(capacity));
            let url = alerts_url(base);
            let figures = metrics.alertmanager(&url);
            let (q, agent) = (queue.clone(), agent.clone());
            let thread = std::thread::Builder::new()
                .name("ruler-notifier".into())
                .spawn(move || send_loop(&agent, &url, &q, &figures))?;
            targets.push(Target {
                queue,
                thread: Some(thread),
            });
        }
        Ok(Notifier {
            queues: targets.iter().map(|t| t.queue.clone()).collect(),
            targets: parking_lot::Mutex::new(targets),
            external_labels,
            metrics,
        })
    }

    /// Queues alerts for every Alertmanager, with the external labels they
    /// lack; past a queue's capacity its oldest are dropped (and counted).
    pub fn send(&self, mut alerts: Vec<Notification>) {
        if alerts.is_empty() {
            return;
        }
        if !self.external_labels.is_empty() {
            for n in &mut alerts {
                add_external_labels(n, &self.external_labels);
            }
        }
        for q in &self.queues {
            let dropped = q.push_all(alerts.iter().cloned());
            self.metrics
                .notifications_dropped
                .fetch_add(dropped as u64, Ordering::Relaxed);
        }
    }

    /// Sends what is queued (one try each), then stops the threads.
    pub fn stop(&self) {
        for q in &self.queues {
            q.close();
        }
        for t in self.targets.lock().iter_mut() {
            if let Some(t) = t.thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn send_loop(
    agent: &ureq::Agent,
    url: &str,
    queue: &Queue<Notification>,
    figures: &AlertmanagerFigures,
) {
    loop {
        let batch = queue.take(BATCH, Duration::from_secs(1));
        if batch.is_empty() {
            if queue.is_closed() {
                return;
            }
            continue;
        }
        let body = serde_json::Value::Array(batch.iter().map(|n| n.json.clone()).collect());
        let n = batch.len() as u64;
        match post_with_retries(agent, url, &body, queue) {
            Ok(()) => figures.sent.fetch_add(n, Ordering::Relaxed),
            Err(e) => {
                tracing::warn!(error = %e, alerts = n, url, "sending alerts to Alertmanager failed");
                figures.errors.fetch_add(n, Ordering::Relaxed)
            }
        };
    }
}

fn post_with_retries(
    agent: &ureq::Agent,
    url: &str,
    body: &serde_json::Value,
    queue: &Queue<Notification>,
) -> Result<(), String> {
    let mut last = String::new();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            if queue.is_closed() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200 << attempt));
        }
        let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        match agent
            .post(url)
            .set("Content-Type", "application/json")
            .send_bytes(&bytes)
        {
            Ok(_) => return Ok(()),
            // A 4xx will not get better by retrying.
            Err(ureq::Error::Status(code, r)) if (400..500).contains(&code) => {
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
    use std::collections::BTreeMap;

    #[test]
    fn a_notification_carries_alertmanagers_fields() {
        let alert = Alert {
            labels: BTreeMap::from([("alertname".into(), "A".into())]),
            annotations: BTreeMap::from([("summary".into(), "s".into())]),
            value: 1.0,
            state: AlertState::Firing,
            active_at_ns: 1_000_000_000,
            fired_at_ns: Some(2_000_000_000),
            resolved_at_ns: None,
            last_sent_ns: None,
            valid_until_ns: 62_000_000_000,
            keep_firing_since_ns: None,
        };
        let n = Notification::of(&alert, "sum(rate({a=\"b\"}[1m])) > 0", "http://rk:3100/");
        assert_eq!(n.json["startsAt"], "1970-01-01T00:00:02.000Z");
        assert_eq!(n.json["endsAt"], "1970-01-01T00:01:02.000Z");
        assert_eq!(n.json["labels"]["alertname"], "A");
        assert_eq!(
            n.json["generatorURL"],
            "http://rk:3100/loki/api/v1/query?query=sum%28rate%28%7Ba%3D%22b%22%7D%5B1m%5D%29%29%20%3E%200"
        );
    }

    #[test]
    fn external_labels_are_added_where_the_alert_has_none() {
        let mut n = Notification {
            json: serde_json::json!({
                "labels": {"alertname": "A", "severity": "page", "team": ""},
                "annotations": {},
            }),
        };
        let external = [
            ("cluster".to_string(), "eu-1".to_string()),
            ("severity".to_string(), "info".to_string()),
            ("team".to_string(), "sre".to_string()),
        ];
        add_external_labels(&mut n, &external);
        assert_eq!(
            n.json["labels"],
            serde_json::json!({"alertname": "A", "severity": "page", "team": "sre", "cluster": "eu-1"})
        );
    }
}
