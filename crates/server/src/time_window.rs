//! The accepted age of pushed entries: older than `reject_old_samples_max_age`
//! or further in the future than `creation_grace_period` is refused with
//! Loki's messages
//! (`entry for stream '{…}' has timestamp too old: <t>, oldest acceptable timestamp is: <t>`,
//! `entry for stream '{…}' has timestamp too new: <t>`, times in RFC 3339).
//!
//! As in Loki, the check is per entry: entries inside the window are stored,
//! and the request is still answered 400 naming the refused ones (one line
//! per stream, its first refused entry), so a collector logs the problem.

use runakefli_model::civil::civil_from_days;
use runakefli_model::PushRequest;
use std::time::Duration;

/// The window; both bounds off by default.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimeWindow {
    /// Refuse entries older than now minus this.
    pub max_age: Option<Duration>,
    /// Refuse entries newer than now plus this.
    pub grace: Option<Duration>,
}

/// Entries refused by the window.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    /// Loki's messages, one line per stream with refused entries.
    pub message: String,
    /// Loki's discard reason of the first refusal
    /// (`greater_than_max_sample_age` or `too_far_in_future`).
    pub reason: &'static str,
    /// How many entries were refused.
    pub count: usize,
}

fn nanos(d: Duration) -> i64 {
    d.as_nanos().min(i64::MAX as u128) as i64
}

impl TimeWindow {
    /// Whether every entry of `req` is inside the window at `now` (ns).
    pub fn admits_all(&self, req: &PushRequest, now: i64) -> bool {
        if self.max_age.is_none() && self.grace.is_none() {
            return true;
        }
        let oldest = self
            .max_age
            .map_or(i64::MIN, |d| now.saturating_sub(nanos(d)));
        let newest = self
            .grace
            .map_or(i64::MAX, |d| now.saturating_add(nanos(d)));
        req.streams
            .iter()
            .flat_map(|s| &s.entries)
            .all(|e| e.ts >= oldest && e.ts <= newest)
    }

    /// Removes the entries outside the window at `now` (ns) from `req`;
    /// `None` when every entry is inside.
    pub fn apply(&self, req: &mut PushRequest, now: i64) -> Option<Refused> {
        if self.max_age.is_none() && self.grace.is_none() {
            return None;
        }
        let oldest = self.max_age.map(|d| now.saturating_sub(nanos(d)));
        let newest = self.grace.map(|d| now.saturating_add(nanos(d)));
        let mut lines: Vec<String> = Vec::new();
        let mut reason = None;
        let mut count = 0;
        for s in &mut req.streams {
            let mut first: Option<String> = None;
            s.entries.retain(|e| {
                let msg = match (oldest, newest) {
                    (Some(o), _) if e.ts < o => {
                        reason.get_or_insert("greater_than_max_sample_age");
                        format!(
                            "entry for stream '{}' has timestamp too old: {}, oldest acceptable timestamp is: {}",
                            s.labels,
                            rfc3339(e.ts),
                            rfc3339(o)
                        )
                    }
                    (_, Some(n)) if e.ts > n => {
                        reason.get_or_insert("too_far_in_future");
                        format!(
                            "entry for stream '{}' has timestamp too new: {}",
                            s.labels,
                            rfc3339(e.ts)
                        )
                    }
                    _ => return true,
                };
                count += 1;
                first.get_or_insert(msg);
                false
            });
            lines.extend(first);
        }
        req.streams.retain(|s| !s.entries.is_empty());
        Some(Refused {
            message: lines.join("\n"),
            reason: reason?,
            count,
        })
    }
}

/// A timestamp (ns) in RFC 3339 at second precision, UTC (`2026-08-12T12:12:50Z`),
/// as Go's `time.RFC3339` prints it.
pub fn rfc3339(ts: i64) -> String {
    let secs = ts.div_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A timestamp (ns) in RFC 3339 with nanoseconds, UTC
/// (`2026-08-12T12:12:50.000000123Z`), as Go's `time.RFC3339Nano` prints it
/// but always with nine digits.
pub fn rfc3339_nanos(ts: i64) -> String {
    let s = rfc3339(ts);
    format!(
        "{}.{:09}Z",
        s.trim_end_matches('Z'),
        ts.rem_euclid(1_000_000_000)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::{Entry, Labels, PushStream};

    fn entry(ts: i64) -> Entry {
        Entry {
            ts,
            line: "x".into(),
            metadata: Vec::new(),
        }
    }

    #[test]
    fn formats_like_go() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_910_400_000_000_000), "2026-11-29T00:00:00Z");
        assert_eq!(rfc3339(951_782_400_999_999_999), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
        assert_eq!(
            rfc3339_nanos(1_500_000_123),
            "1970-01-01T00:00:01.500000123Z"
        );
    }

    #[test]
    fn refuses_outside_the_window_and_keeps_the_rest() {
        let now = 1_795_910_400_000_000_000;
        let h = 3_600_000_000_000;
        let w = TimeWindow {
            max_age: Some(Duration::from_secs(3600)),
            grace: Some(Duration::from_secs(600)),
        };
        let labels = Labels::parse(r#"{app="api"}"#).unwrap();
        let mut req = PushRequest {
            streams: vec![PushStream {
                labels,
                entries: vec![entry(now - 2 * h), entry(now), entry(now + h)],
            }],
        };
        let r = w.apply(&mut req, now).unwrap();
        assert_eq!(r.count, 2);
        assert_eq!(r.reason, "greater_than_max_sample_age");
        assert_eq!(
            r.message,
            "entry for stream '{app=\"api\"}' has timestamp too old: 2026-11-28T22:00:00Z, \
             oldest acceptable timestamp is: 2026-11-28T23:00:00Z"
        );
        assert_eq!(req.entry_count(), 1);
        let mut future = PushRequest {
            streams: vec![PushStream {
                labels: Labels::parse(r#"{app="web"}"#).unwrap(),
                entries: vec![entry(now + h)],
            }],
        };
        let r = w.apply(&mut future, now).unwrap();
        assert_eq!(
            r.message,
            "entry for stream '{app=\"web\"}' has timestamp too new: 2026-11-29T01:00:00Z"
        );
        assert_eq!(r.reason, "too_far_in_future");
        assert!(future.streams.is_empty());
        assert_eq!(TimeWindow::default().apply(&mut future, now), None);
    }
}
