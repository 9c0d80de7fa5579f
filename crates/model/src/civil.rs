//! Civil-date arithmetic: days since 1970-01-01 to and from a
//! (year, month, day) of the proleptic Gregorian calendar, UTC.
//!
//! These are Howard Hinnant's `days_from_civil` and `civil_from_days`
//! (<https://howardhinnant.github.io/date_algorithms.html>): years are
//! counted in 400-year eras of 146 097 days, and each year is taken to start
//! on March 1 so that the leap day falls at its end. They are exact for days
//! before 1970 and years before 1 too (year 0 is 1 BC, as in ISO 8601), as
//! far as the arithmetic does not overflow `i64`: far beyond any timestamp in
//! nanoseconds (the tests cover ±10^12 days).
//!
//! Both are on the hot path of timestamp parsing and formatting, hence
//! `#[inline]`.

/// Days from 1970-01-01 to `year`-`month`-`day` (negative before 1970).
///
/// `month` is 1..=12 and `day` 1..=31. Nothing is checked: callers that read
/// untrusted text validate the fields first. A day past the end of its month
/// runs on into the next (`2023-02-29` is `2023-03-01`), and so does day 0
/// back into the previous month.
#[inline]
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    // The year counted from March: January and February belong to the previous one.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400; // [0, 399]
    let m = i64::from(month);
    let mp = if m > 2 { m - 3 } else { m + 9 }; // March is 0
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// `(year, month, day)` of the day `days` after 1970-01-01 (before it when
/// negative); `month` is 1..=12 and `day` 1..=31. The inverse of
/// [`days_from_civil`].
#[inline]
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Counted from 0000-03-01, the start of an era.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March is 0
    let d = doy - (153 * mp + 2) / 5 + 1; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 }; // [1, 12]
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m as u32, d as u32)
}

/// Days in `month` (1..=12) of `year`, proleptic Gregorian (any other month
/// number answers 31).
#[inline]
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn month_lengths_match_the_rule_and_the_day_count() {
        for year in -800..=2400 {
            for month in 1..=12u32 {
                assert_eq!(days_in_month(year, month), month_len(year, month));
                let next = if month == 12 {
                    days_from_civil(year + 1, 1, 1)
                } else {
                    days_from_civil(year, month + 1, 1)
                };
                let len = next - days_from_civil(year, month, 1);
                assert_eq!(len, i64::from(days_in_month(year, month)), "{year}-{month}");
            }
        }
    }
    use proptest::prelude::*;

    /// Leap years by the Gregorian rule, written independently of the algorithm.
    fn is_leap(y: i64) -> bool {
        y.rem_euclid(4) == 0 && (y.rem_euclid(100) != 0 || y.rem_euclid(400) == 0)
    }

    fn month_len(y: i64, m: u32) -> u32 {
        match m {
            2 if is_leap(y) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }

    /// The date after `(y, m, d)`, by counting.
    fn next_day((y, m, d): (i64, u32, u32)) -> (i64, u32, u32) {
        if d < month_len(y, m) {
            (y, m, d + 1)
        } else if m < 12 {
            (y, m + 1, 1)
        } else {
            (y + 1, 1, 1)
        }
    }

    #[test]
    fn known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2000, 2, 29), 11_016);
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2026, 11, 30), 20_787);
        // 1900 is not a leap year: February 28 is followed by March 1.
        let feb28 = days_from_civil(1900, 2, 28);
        assert_eq!(civil_from_days(feb28 + 1), (1900, 3, 1));
        assert_eq!(days_from_civil(1900, 3, 1), feb28 + 1);
        assert_eq!(days_from_civil(1900, 1, 1), -25_567);
        // The era start and year 0 (1 BC, a leap year).
        assert_eq!(days_from_civil(0, 3, 1), -719_468);
        assert_eq!(civil_from_days(-719_468), (0, 3, 1));
        assert_eq!(civil_from_days(-719_469), (0, 2, 29));
        assert_eq!(civil_from_days(-719_528), (0, 1, 1));
        assert_eq!(civil_from_days(-719_529), (-1, 12, 31));
        assert_eq!(days_from_civil(1, 1, 1), -719_162);
        assert_eq!(days_from_civil(9999, 12, 31), 2_932_896);
        assert_eq!(civil_from_days(2_932_897), (10_000, 1, 1));
    }

    #[test]
    fn overflowing_days_run_into_the_next_month() {
        assert_eq!(
            days_from_civil(2023, 2, 29),
            days_from_civil(2023, 3, 1),
            "2023 is not a leap year"
        );
        assert_eq!(days_from_civil(2024, 4, 31), days_from_civil(2024, 5, 1));
        assert_eq!(days_from_civil(2024, 3, 0), days_from_civil(2024, 2, 29));
    }

    /// Every day from 2001 BC to AD 5000 against a calendar counted day by
    /// day: consecutive, in range, and both directions agree.
    #[test]
    fn day_by_day_over_seven_thousand_years() {
        let first = days_from_civil(-2000, 1, 1);
        let last = days_from_civil(5000, 12, 31);
        let mut want = (-2000, 1, 1);
        for days in first..=last {
            let got = civil_from_days(days);
            assert_eq!(got, want, "day {days}");
            assert!((1..=12).contains(&got.1) && (1..=month_len(got.0, got.1)).contains(&got.2));
            assert_eq!(days_from_civil(got.0, got.1, got.2), days);
            want = next_day(want);
        }
        assert_eq!(want, (5001, 1, 1));
    }

    #[test]
    fn years_have_their_leap_days() {
        for y in -1200..=3200 {
            let len = days_from_civil(y + 1, 1, 1) - days_from_civil(y, 1, 1);
            assert_eq!(len, if is_leap(y) { 366 } else { 365 }, "year {y}");
            assert_eq!(days_from_civil(y, 3, 1) - days_from_civil(y, 2, 28), {
                if is_leap(y) {
                    2
                } else {
                    1
                }
            });
        }
    }

    proptest! {
        #[test]
        fn days_round_trip(days in -1_000_000_000_000i64..=1_000_000_000_000) {
            let (y, m, d) = civil_from_days(days);
            prop_assert!((1..=12).contains(&m));
            prop_assert!((1..=month_len(y, m)).contains(&d));
            prop_assert_eq!(days_from_civil(y, m, d), days);
            prop_assert_eq!(civil_from_days(days + 1), next_day((y, m, d)));
        }

        #[test]
        fn dates_round_trip(y in -2_000_000_000i64..=2_000_000_000, m in 1u32..=12, d in 1u32..=31) {
            let d = d.min(month_len(y, m));
            prop_assert_eq!(civil_from_days(days_from_civil(y, m, d)), (y, m, d));
        }
    }
}
