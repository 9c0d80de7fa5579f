//! Dates for alerts: RFC 3339 (Alertmanager, the Prometheus API) and the
//! civil date and time of a Unix instant, UTC.

use runakefli_model::civil::civil_from_days;

/// `(YYYY-MM-DD, HH:MM:SS, nanoseconds)` of `ns` since the epoch, UTC.
pub fn civil(ns: i64) -> (String, String, i64) {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    (
        format!("{y:04}-{m:02}-{d:02}"),
        format!("{:02}:{:02}:{:02}", tod / 3600, tod / 60 % 60, tod % 60),
        frac,
    )
}

/// RFC 3339 with milliseconds, UTC (`2026-12-07T01:02:03.456Z`).
pub fn rfc3339(ns: i64) -> String {
    let (date, time, frac) = civil(ns);
    format!("{date}T{time}.{:03}Z", frac / 1_000_000)
}

/// Nanoseconds since the epoch, now.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(1_700_000_000_123_000_000),
            "2023-11-14T22:13:20.123Z"
        );
        assert_eq!(civil(951_782_400 * 1_000_000_000).0, "2000-02-29");
    }
}
