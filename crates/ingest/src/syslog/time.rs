//! Civil-date arithmetic for syslog timestamps (RFC 3164 has neither year
//! nor zone; RFC 5424 timestamps go through [`crate::jsondoc::time`]).

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The year of a time in nanoseconds since the epoch (UTC).
pub fn year_of(ns: i64) -> i64 {
    let days = ns.div_euclid(86_400_000_000_000);
    // Inverse of days_from_civil, year only.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(month <= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

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
