//! The year of a syslog timestamp (RFC 3164 has neither year nor zone;
//! RFC 5424 timestamps go through [`crate::jsondoc::time`]). The calendar
//! arithmetic itself is [`runakefli_model::civil`].

use runakefli_model::civil::civil_from_days;

/// The year of a time in nanoseconds since the epoch (UTC).
pub fn year_of(ns: i64) -> i64 {
    civil_from_days(ns.div_euclid(86_400_000_000_000)).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::civil::days_from_civil;

    #[test]
    fn civil_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2026, 11, 30), 20_787);
        for y in [1969, 1970, 1999, 2000, 2024, 2026, 2100] {
            for (m, d) in [(1, 1), (2, 28), (3, 1), (12, 31)] {
                let ns = days_from_civil(y, m, d) * 86_400_000_000_000 + 1;
                assert_eq!(year_of(ns), y, "{y}-{m}-{d}");
            }
        }
    }
}
