//! Go's `time.ParseInLocation` for the template functions `toDate` and
//! `toDateInZone`: a layout written with Go's reference time
//! (`2006-01-02T15:04:05.999999999Z07:00`) reads a value; the wall clock is
//! placed in a [`Zone`] unless the value carries its own offset (`Z`,
//! `-07:00`) or a zone abbreviation.
//!
//! Elements the layout leaves out are zero, or one when zero is impossible
//! (year 0, January, day 1), as in Go; the answer is nanoseconds since the
//! epoch, wide enough for any year Go reads (four digits).

use super::zone::Zone;
use runakefli_model::civil::{self, days_from_civil};

/// Nanoseconds per second.
const NS: i128 = 1_000_000_000;

/// Go's month names (`January`, layout element `January`/`Jan`).
pub(super) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Go's weekday names (`Sunday` first, layout element `Monday`/`Mon`).
pub(super) const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// One element of a layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Elem {
    LongYear,
    Year,
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    PmUpper,
    PmLower,
    ZoneName,
    /// A numeric offset: with `Z` for UTC allowed, with a colon, with seconds,
    /// hours only.
    Offset {
        z: bool,
        colon: bool,
        seconds: bool,
        hours_only: bool,
    },
    /// `.000` (exactly `n` digits) or `.999` (optional, any digits).
    Frac {
        digits: usize,
        optional: bool,
    },
}

/// The layout element at the start of `s` and its length in bytes.
fn elem_at(s: &str) -> Option<(Elem, usize)> {
    let starts = |p: &str| s.starts_with(p);
    let offset = |z: bool, colon: bool, seconds: bool, hours_only: bool| Elem::Offset {
        z,
        colon,
        seconds,
        hours_only,
    };
    let table: &[(&str, Elem)] = &[
        ("January", Elem::LongMonth),
        ("Jan", Elem::Month),
        ("Monday", Elem::LongWeekDay),
        ("Mon", Elem::WeekDay),
        ("MST", Elem::ZoneName),
        ("2006", Elem::LongYear),
        ("002", Elem::ZeroYearDay),
        ("01", Elem::ZeroMonth),
        ("02", Elem::ZeroDay),
        ("03", Elem::ZeroHour12),
        ("04", Elem::ZeroMinute),
        ("05", Elem::ZeroSecond),
        ("06", Elem::Year),
        ("15", Elem::Hour),
        ("1", Elem::NumMonth),
        ("2", Elem::Day),
        ("__2", Elem::UnderYearDay),
        ("_2", Elem::UnderDay),
        ("3", Elem::Hour12),
        ("4", Elem::Minute),
        ("5", Elem::Second),
        ("PM", Elem::PmUpper),
        ("pm", Elem::PmLower),
        ("-070000", offset(false, false, true, false)),
        ("-07:00:00", offset(false, true, true, false)),
        ("-0700", offset(false, false, false, false)),
        ("-07:00", offset(false, true, false, false)),
        ("-07", offset(false, false, false, true)),
        ("Z070000", offset(true, false, true, false)),
        ("Z07:00:00", offset(true, true, true, false)),
        ("Z0700", offset(true, false, false, false)),
        ("Z07:00", offset(true, true, false, false)),
        ("Z07", offset(true, false, false, true)),
    ];
    // "_2006" is a literal "_" then the year.
    if starts("_2006") {
        return None;
    }
    for (text, e) in table {
        if starts(text) {
            return Some((*e, text.len()));
        }
    }
    let b = s.as_bytes();
    if matches!(b.first(), Some(b'.' | b',')) && matches!(b.get(1), Some(b'0' | b'9')) {
        let c = b[1];
        let n = b[1..].iter().take_while(|&&x| x == c).count();
        if !b.get(1 + n).is_some_and(u8::is_ascii_digit) {
            return Some((
                Elem::Frac {
                    digits: n,
                    optional: c == b'9',
                },
                1 + n,
            ));
        }
    }
    None
}

/// What a value has said so far.
#[derive(Default)]
struct Fields {
    year: i64,
    month: Option<i64>,
    day: Option<i64>,
    yday: Option<i64>,
    hour: i64,
    minute: i64,
    second: i64,
    nanos: i64,
    pm: Option<bool>,
    /// Seconds east of UTC the value states.
    offset: Option<i64>,
    zone_name: Option<String>,
}

/// Reads a number of 1–2 digits (`fixed`: exactly 2).
fn num2(v: &str, fixed: bool) -> Option<(i64, usize)> {
    let b = v.as_bytes();
    if !b.first()?.is_ascii_digit() {
        return None;
    }
    let two = b.get(1).is_some_and(u8::is_ascii_digit);
    if fixed && !two {
        return None;
    }
    let n = if two { 2 } else { 1 };
    Some((v[..n].parse().ok()?, n))
}

/// Reads exactly `n` digits.
fn digits(v: &str, n: usize) -> Option<i64> {
    let d = v.get(..n)?;
    d.bytes()
        .all(|c| c.is_ascii_digit())
        .then(|| d.parse().ok())?
}

/// Reads a name from `names` (case-insensitively), full or its first three letters.
fn lookup_name(v: &str, names: &[&str], long: bool) -> Option<(usize, usize)> {
    names.iter().enumerate().find_map(|(i, name)| {
        let n = if long { name.len() } else { 3 };
        let got = v.get(..n)?;
        got.eq_ignore_ascii_case(&name[..n]).then_some((i, n))
    })
}

/// Go's `skip`: the layout's literal `lit` must start `v`; a run of spaces
/// matches a run of spaces.
fn skip<'a>(mut v: &'a str, mut lit: &str) -> Option<&'a str> {
    while let Some(c) = lit.chars().next() {
        if c == ' ' {
            if v.chars().next().is_some_and(|x| x != ' ') {
                return None;
            }
            lit = lit.trim_start_matches(' ');
            v = v.trim_start_matches(' ');
            continue;
        }
        if !v.starts_with(c) {
            return None;
        }
        lit = &lit[c.len_utf8()..];
        v = &v[c.len_utf8()..];
    }
    Some(v)
}

/// Reads a fraction `.ddd` (`n` digits) at the start of `v` as nanoseconds.
fn fraction(v: &str, n: usize) -> Option<i64> {
    let d = v.get(1..1 + n)?;
    if !d.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut s: String = d.chars().take(9).collect();
    while s.len() < 9 {
        s.push('0');
    }
    s.parse().ok()
}

/// Reads one element from the start of `v`; the rest of `v`.
fn read_elem<'a>(e: Elem, v: &'a str, next: &str, f: &mut Fields) -> Option<&'a str> {
    let range = |x: i64, lo: i64, hi: i64| (lo..=hi).contains(&x).then_some(x);
    let mut rest = v;
    match e {
        Elem::LongYear => {
            f.year = digits(v, 4)?;
            rest = &v[4..];
        }
        Elem::Year => {
            let y = digits(v, 2)?;
            f.year = if y >= 69 { y + 1900 } else { y + 2000 };
            rest = &v[2..];
        }
        Elem::LongMonth | Elem::Month => {
            let (i, n) = lookup_name(v, &MONTHS, e == Elem::LongMonth)?;
            f.month = Some(i as i64 + 1);
            rest = &v[n..];
        }
        Elem::NumMonth | Elem::ZeroMonth => {
            let (m, n) = num2(v, e == Elem::ZeroMonth)?;
            f.month = Some(range(m, 1, 12)?);
            rest = &v[n..];
        }
        Elem::LongWeekDay | Elem::WeekDay => {
            let (_, n) = lookup_name(v, &DAYS, e == Elem::LongWeekDay)?;
            rest = &v[n..];
        }
        Elem::Day | Elem::UnderDay | Elem::ZeroDay => {
            let v = if e == Elem::UnderDay {
                v.strip_prefix(' ').unwrap_or(v)
            } else {
                v
            };
            let (d, n) = num2(v, e == Elem::ZeroDay)?;
            f.day = Some(range(d, 1, 31)?);
            rest = &v[n..];
        }
        Elem::UnderYearDay | Elem::ZeroYearDay => {
            let v = if e == Elem::UnderYearDay {
                v.trim_start_matches(' ')
            } else {
                v
            };
            let n = v.bytes().take(3).take_while(u8::is_ascii_digit).count();
            if e == Elem::ZeroYearDay && n != 3 || n == 0 {
                return None;
            }
            f.yday = Some(range(v[..n].parse().ok()?, 1, 366)?);
            rest = &v[n..];
        }
        Elem::Hour => {
            let (h, n) = num2(v, false)?;
            f.hour = range(h, 0, 23)?;
            rest = &v[n..];
        }
        Elem::Hour12 | Elem::ZeroHour12 => {
            let (h, n) = num2(v, e == Elem::ZeroHour12)?;
            f.hour = range(h, 0, 12)?;
            rest = &v[n..];
        }
        Elem::Minute | Elem::ZeroMinute => {
            let (m, n) = num2(v, e == Elem::ZeroMinute)?;
            f.minute = range(m, 0, 59)?;
            rest = &v[n..];
        }
        Elem::Second | Elem::ZeroSecond => {
            let (s, n) = num2(v, e == Elem::ZeroSecond)?;
            f.second = range(s, 0, 59)?;
            rest = &v[n..];
            // A fraction the layout does not write is read all the same.
            let b = rest.as_bytes();
            let frac_next = matches!(elem_at(next), Some((Elem::Frac { .. }, _)));
            if !frac_next
                && matches!(b.first(), Some(b'.' | b','))
                && b.get(1).is_some_and(u8::is_ascii_digit)
            {
                let n = b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                f.nanos = fraction(rest, n)?;
                rest = &rest[1 + n..];
            }
        }
        Elem::PmUpper | Elem::PmLower => {
            let p = v.get(..2)?;
            let (am, pm) = if e == Elem::PmUpper {
                ("AM", "PM")
            } else {
                ("am", "pm")
            };
            f.pm = Some(match p {
                x if x == pm => true,
                x if x == am => false,
                _ => return None,
            });
            rest = &v[2..];
        }
        Elem::ZoneName => {
            if let Some(r) = v.strip_prefix("UTC") {
                f.offset = Some(0);
                return Some(r);
            }
            let n = v.bytes().take_while(u8::is_ascii_uppercase).count();
            if !(3..=5).contains(&n) {
                return None;
            }
            f.zone_name = Some(v[..n].to_string());
            rest = &v[n..];
        }
        Elem::Offset {
            z,
            colon,
            seconds,
            hours_only,
        } => {
            if z && v.starts_with('Z') {
                f.offset = Some(0);
                return Some(&v[1..]);
            }
            let sign = match v.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let mut r = &v[1..];
            let hh = digits(r, 2)?;
            r = &r[2..];
            let (mut mm, mut ss) = (0, 0);
            if !hours_only {
                if colon {
                    r = r.strip_prefix(':')?;
                }
                mm = digits(r, 2)?;
                r = &r[2..];
                if seconds {
                    if colon {
                        r = r.strip_prefix(':')?;
                    }
                    ss = digits(r, 2)?;
                    r = &r[2..];
                }
            }
            if hh > 24 || mm > 60 || ss > 60 {
                return None;
            }
            f.offset = Some(sign * (hh * 3600 + mm * 60 + ss));
            rest = r;
        }
        Elem::Frac {
            digits: n,
            optional,
        } => {
            let b = v.as_bytes();
            let has =
                matches!(b.first(), Some(b'.' | b',')) && b.get(1).is_some_and(u8::is_ascii_digit);
            if optional {
                if has {
                    let n = b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                    f.nanos = fraction(v, n)?;
                    rest = &v[1 + n..];
                }
            } else {
                if !matches!(b.first(), Some(b'.' | b',')) {
                    return None;
                }
                f.nanos = fraction(v, n)?;
                rest = &v[1 + n..];
            }
        }
    }
    Some(rest)
}

/// [`civil::days_in_month`] for a month read as a number of any size.
fn days_in_month(y: i64, m: i64) -> i64 {
    i64::from(civil::days_in_month(y, u32::try_from(m).unwrap_or(0)))
}

/// Parses `value` with the Go `layout`, a wall clock without an offset
/// taken in `zone`; nanoseconds since the epoch, `None` when the value does
/// not fit the layout (Go's parse error).
pub fn parse_in_zone(layout: &str, value: &str, zone: &Zone) -> Option<i128> {
    let mut f = Fields::default();
    let mut lay = layout;
    let mut v = value;
    loop {
        // The literal text up to the next element.
        let mut i = 0;
        let found = loop {
            if i >= lay.len() {
                break None;
            }
            if lay.is_char_boundary(i) {
                if let Some(found) = elem_at(&lay[i..]) {
                    break Some(found);
                }
            }
            i += 1;
        };
        v = skip(v, &lay[..i])?;
        let Some((e, n)) = found else {
            break;
        };
        let next = &lay[i + n..];
        v = read_elem(e, v, next, &mut f)?;
        lay = next;
    }
    if !v.is_empty() {
        return None;
    }
    match f.pm {
        Some(true) if f.hour < 12 => f.hour += 12,
        Some(false) if f.hour == 12 => f.hour = 0,
        _ => {}
    }
    if let Some(yd) = f.yday {
        let mut m = 1;
        let mut d = yd;
        while m <= 12 && d > days_in_month(f.year, m) {
            d -= days_in_month(f.year, m);
            m += 1;
        }
        if m > 12 || f.month.is_some_and(|x| x != m) || f.day.is_some_and(|x| x != d) {
            return None;
        }
        f.month = Some(m);
        f.day = Some(d);
    }
    let month = f.month.unwrap_or(1);
    let day = f.day.unwrap_or(1);
    if day > days_in_month(f.year, month) {
        return None;
    }
    // Month 1..=12 and day 1..=31: read in range or derived from the year day.
    let wall = days_from_civil(f.year, month as u32, day as u32) * 86_400
        + f.hour * 3600
        + f.minute * 60
        + f.second;
    let offset = match (f.offset, &f.zone_name) {
        (Some(o), _) => o,
        (None, Some(name)) => zone.offset_of_abbrev(name, wall).unwrap_or(0),
        (None, None) => zone.offset_of_wall(wall),
    };
    Some(i128::from(wall - offset) * NS + i128::from(f.nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(layout: &str, value: &str) -> Option<i128> {
        parse_in_zone(layout, value, &Zone::utc())
    }

    #[test]
    fn layouts_read_like_go() {
        // Loki's own examples.
        assert_eq!(utc("2006-01-02", "2021-11-02"), Some(1_635_811_200 * NS));
        assert_eq!(
            utc(
                "2006-01-02T15:04:05.999999999Z",
                "2023-03-10T01:32:40.340485723Z"
            ),
            Some(1_678_411_960_340_485_723)
        );
        assert_eq!(
            utc("2006-01-02T15:04:05Z07:00", "2023-03-10T02:32:40+01:00"),
            Some(1_678_411_960 * NS)
        );
        assert_eq!(
            utc("Jan 2 2006 3:04pm", "mar 10 2023 1:32pm"),
            utc("2006-01-02 15:04", "2023-03-10 13:32")
        );
        // A fraction the layout does not write.
        assert_eq!(
            utc("15:04:05", "01:02:03.5"),
            utc("15:04:05.000", "01:02:03.500")
        );
        // Omitted elements: year 0, January 1.
        assert_eq!(utc("15:04", "00:00"), Some(-62_167_219_200 * NS));
        // Not the layout: Go's error (the caller's zero time).
        assert_eq!(utc("2006-01-02", "2021-13-02"), None);
        assert_eq!(utc("2006-01-02", "2021-02-30"), None);
        assert_eq!(utc("2006-01-02", "2021-01-02 extra"), None);
        assert_eq!(utc("2006-01-02", "21-01-02"), None);
    }

    #[test]
    fn wall_clocks_in_a_zone() {
        let Some(berlin) = Zone::load("Europe/Berlin") else {
            return;
        };
        let at = |v: &str| parse_in_zone("2006-01-02 15:04", v, &berlin);
        assert_eq!(at("2024-01-15 12:00"), Some(1_705_316_400 * NS));
        assert_eq!(at("2024-07-15 12:00"), Some(1_721_037_600 * NS));
    }
}
