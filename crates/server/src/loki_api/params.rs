//! Query-string parameters of the Loki HTTP API, parsed as Loki parses them:
//! timestamps (`start`, `end`, `time`), `since`, `step`, `limit`, `direction`.

use crate::error::ApiError;
use runakefli_logql::parse_prom_duration;
use runakefli_model::civil::days_from_civil;
use runakefli_model::Direction;
use std::collections::HashMap;

/// Default `limit` of log queries (Loki's).
pub const DEFAULT_LIMIT: u32 = 100;
/// Default look-back when neither `start` nor `since` is given.
pub const DEFAULT_SINCE_NS: i64 = 3_600_000_000_000;
/// Loki refuses ranges with more points than this per series.
pub const MAX_POINTS_PER_SERIES: i64 = 11_000;
/// Loki's answer to a range of more than [`MAX_POINTS_PER_SERIES`] steps
/// (`pkg/loghttp`; not Prometheus' "Try decreasing the query resolution").
pub const ERR_STEP_TOO_SMALL: &str = "exceeded maximum resolution of 11,000 points per time series. Try increasing the value of the step parameter";

/// Raw parameters: the query string and form body merged, keeping repeats.
#[derive(Debug, Default, Clone)]
pub struct RawParams {
    pairs: Vec<(String, String)>,
}

impl RawParams {
    /// Parses `a=b&c=d` (URL-encoded) and appends the pairs.
    pub fn extend_from_urlencoded(&mut self, s: &str) {
        for part in s.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            self.pairs.push((url_decode(k), url_decode(v)));
        }
    }

    /// The first value of `name`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name`, in order (for `match[]`).
    pub fn get_all(&self, name: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The pairs as a map of first values (for debugging).
    pub fn to_map(&self) -> HashMap<String, String> {
        let mut m = HashMap::new();
        for (k, v) in &self.pairs {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        m
    }
}

fn url_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Nanoseconds since the epoch, now.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// Parses a Loki timestamp parameter: float seconds (with a '.'), integer seconds
/// (10 digits or fewer), integer nanoseconds, or RFC 3339.
pub fn parse_timestamp(name: &str, value: Option<&str>, default: i64) -> Result<i64, ApiError> {
    let value = match value {
        None | Some("") => return Ok(default),
        Some(v) => v,
    };
    if value.contains('.') {
        if let Ok(f) = value.parse::<f64>() {
            let secs = f.trunc();
            let frac = ((f - secs) * 1000.0).round() / 1000.0;
            return Ok(secs as i64 * 1_000_000_000 + (frac * 1e9) as i64);
        }
    }
    match parse_go_int(value) {
        Ok(n) => {
            if value.len() <= 10 {
                Ok(n.saturating_mul(1_000_000_000))
            } else {
                Ok(n)
            }
        }
        Err(int_err) => parse_rfc3339_ns(value).ok_or_else(|| {
            ApiError::bad_request(format!("could not parse '{name}' parameter: {int_err}"))
        }),
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)` with its error wording.
fn parse_go_int(s: &str) -> Result<i64, String> {
    parse_go_int_as(s, "strconv.ParseInt")
}

/// Go's `strconv.ParseInt`/`strconv.Atoi` (`func` names the one in the
/// error, as Go does: Loki reads `limit` with `Atoi`, timestamps with
/// `ParseInt`).
fn parse_go_int_as(s: &str, func: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!("{func}: parsing {}: invalid syntax", go_quote(s)));
    }
    s.parse::<i64>()
        .map_err(|_| format!("{func}: parsing {}: value out of range", go_quote(s)))
}

fn go_quote(s: &str) -> String {
    runakefli_model::labels::quote_go(s)
}

/// Parses RFC 3339 with optional fraction (`2026-11-29T00:00:00.123Z`, `+01:00`).
pub fn parse_rfc3339_ns(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = &s[r];
        if t.bytes().all(|c| c.is_ascii_digit()) {
            t.parse().ok()
        } else {
            None
        }
    };
    let (y, mo, d, h, mi, se) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac_ns = 0i64;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        let digits = &s[start..i.min(start + 9)];
        frac_ns = digits.parse::<i64>().ok()? * 10i64.pow(9 - digits.len() as u32);
    }
    let offset_s = match &s[i..] {
        "Z" | "z" => 0,
        tz if tz.len() == 6 && (tz.starts_with('+') || tz.starts_with('-')) && &tz[3..4] == ":" => {
            let oh: i64 = tz[1..3].parse().ok()?;
            let om: i64 = tz[4..6].parse().ok()?;
            let v = oh * 3600 + om * 60;
            if tz.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    // Month and day are in range (checked above).
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset_s;
    Some(secs * 1_000_000_000 + frac_ns)
}

/// Parses `step`/`interval`: float seconds or a Prometheus duration (`30s`, `1m`, `1h30m`).
/// Seconds are truncated to whole nanoseconds, as Go's `time.Duration(f)`
/// does; NaN becomes Go's amd64 conversion result, the minimum, which the
/// callers then refuse as not positive.
pub fn parse_seconds_or_duration(name: &str, value: &str) -> Result<i64, ApiError> {
    if let Ok(f) = value.parse::<f64>() {
        if f.is_nan() {
            return Ok(i64::MIN);
        }
        let ns = f * 1e9;
        if ns > i64::MAX as f64 || ns < i64::MIN as f64 {
            return Err(ApiError::bad_request(format!(
                "cannot parse {} to a valid duration. It overflows int64",
                go_quote(value)
            )));
        }
        return Ok(ns as i64);
    }
    parse_prom_duration(value).map_err(|_| {
        ApiError::bad_request(format!(
            "cannot parse {} to a valid duration",
            go_quote(value)
        ))
        .with_param(name)
    })
}

/// Parameters of a range query (`/query_range`) after defaults.
#[derive(Debug, Clone)]
pub struct RangeParams {
    /// The LogQL text.
    pub query: String,
    /// Inclusive start, ns.
    pub start: i64,
    /// End, ns.
    pub end: i64,
    /// Step, ns.
    pub step: i64,
    /// Entries limit for log queries.
    pub limit: u32,
    /// Direction for log queries.
    pub direction: Direction,
}

/// Parameters of an instant query (`/query`).
#[derive(Debug, Clone)]
pub struct InstantParams {
    /// The LogQL text.
    pub query: String,
    /// Evaluation time, ns.
    pub time: i64,
    /// Entries limit for log queries.
    pub limit: u32,
    /// Direction for log queries.
    pub direction: Direction,
}

/// Parses `limit` as Loki does (`strconv.Atoi`, then positive and within
/// 32 bits).
pub fn parse_limit(p: &RawParams) -> Result<u32, ApiError> {
    parse_positive_limit(p, "limit", "limit")
}

/// A positive 32-bit count read with `strconv.Atoi`; `label` names it in the
/// out-of-range message (`line_limit value …`).
pub fn parse_positive_limit(p: &RawParams, name: &str, label: &str) -> Result<u32, ApiError> {
    match p.get(name) {
        None | Some("") => Ok(DEFAULT_LIMIT),
        Some(v) => {
            let n = parse_go_int_as(v, "strconv.Atoi").map_err(ApiError::bad_request)?;
            if n <= 0 {
                return Err(ApiError::bad_request("limit must be a positive value"));
            }
            if n > u32::MAX as i64 {
                return Err(ApiError::bad_request(format!(
                    "{label} value {n} is out of range [0, {}]",
                    u32::MAX
                )));
            }
            Ok(n as u32)
        }
    }
}

/// Parses `direction` (case-insensitive `forward`/`backward`, default
/// backward); the error quotes the value as given.
pub fn parse_direction(p: &RawParams) -> Result<Direction, ApiError> {
    match p.get("direction") {
        None | Some("") => Ok(Direction::Backward),
        Some(s) if s.eq_ignore_ascii_case("backward") => Ok(Direction::Backward),
        Some(s) if s.eq_ignore_ascii_case("forward") => Ok(Direction::Forward),
        Some(s) => Err(ApiError::bad_request(format!("invalid direction '{s}'"))),
    }
}

/// Start and end with Loki's defaults: end = now, start = min(end, now) -
/// since (1h). Read in Loki's order: `since`, `end`, `start`.
pub fn parse_bounds(p: &RawParams) -> Result<(i64, i64), ApiError> {
    let now = now_ns();
    let since = match p.get("since") {
        None | Some("") => DEFAULT_SINCE_NS,
        Some(v) => parse_prom_duration(v).map_err(|e| {
            ApiError::bad_request(format!("could not parse 'since' parameter: {e}"))
        })?,
    };
    let end = parse_timestamp("end", p.get("end"), now)?;
    let start = parse_timestamp("start", p.get("start"), end.min(now).saturating_sub(since))?;
    Ok((start, end))
}

/// Parses a range query's parameters as Loki does, checking them in its
/// order: bounds, end before start, limit, direction, step, step positive,
/// resolution, interval.
pub fn parse_range(p: &RawParams) -> Result<RangeParams, ApiError> {
    let (start, end) = parse_bounds(p)?;
    if end < start {
        return Err(ApiError::bad_request(
            "end timestamp must not be before or equal to start time",
        ));
    }
    let limit = parse_limit(p)?;
    let direction = parse_direction(p)?;
    let query = p.get("query").unwrap_or("").to_string();
    let step = match p.get("step") {
        None | Some("") => default_step(start, end),
        Some(v) => parse_seconds_or_duration("step", v)?,
    };
    if step <= 0 {
        return Err(ApiError::bad_request(
            "zero or negative query resolution step widths are not accepted. Try a positive integer",
        ));
    }
    if (end - start) / step > MAX_POINTS_PER_SERIES {
        return Err(ApiError::bad_request(ERR_STEP_TOO_SMALL));
    }
    let interval = match p.get("interval") {
        None | Some("") => 0,
        Some(v) => parse_seconds_or_duration("interval", v)?,
    };
    if interval < 0 {
        return Err(ApiError::bad_request("interval must be >= 0"));
    }
    Ok(RangeParams {
        query,
        start,
        end,
        step,
        limit,
        direction,
    })
}

/// Loki's default step: max(1 s, floor(range / 250) seconds).
pub fn default_step(start: i64, end: i64) -> i64 {
    let secs = ((end - start) / 1_000_000_000) / 250;
    secs.max(1) * 1_000_000_000
}

/// Parses an instant query's parameters as Loki does, in its order: limit,
/// time, direction.
pub fn parse_instant(p: &RawParams) -> Result<InstantParams, ApiError> {
    let limit = parse_limit(p)?;
    let time = parse_timestamp("time", p.get("time"), now_ns())?;
    Ok(InstantParams {
        query: p.get("query").unwrap_or("").to_string(),
        time,
        limit,
        direction: parse_direction(p)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> RawParams {
        let mut p = RawParams::default();
        p.extend_from_urlencoded(s);
        p
    }

    #[test]
    fn timestamps_in_every_form() {
        let t = 1_795_910_400_000_000_000i64; // 2026-11-29T00:00:00Z
        assert_eq!(
            parse_timestamp("start", Some("2026-11-29T00:00:00Z"), 0).unwrap(),
            t
        );
        assert_eq!(parse_timestamp("start", Some("1795910400"), 0).unwrap(), t);
        assert_eq!(
            parse_timestamp("start", Some("1795910400000000000"), 0).unwrap(),
            t
        );
        assert_eq!(
            parse_timestamp("start", Some("1795910400.5"), 0).unwrap(),
            t + 500_000_000
        );
        assert_eq!(
            parse_timestamp("start", Some("2026-11-29T01:00:00+01:00"), 0).unwrap(),
            t
        );
        assert_eq!(
            parse_timestamp("start", Some("2026-11-29T00:00:00.000000001Z"), 0).unwrap(),
            t + 1
        );
        let e = parse_timestamp("start", Some("yesterday"), 0).unwrap_err();
        assert_eq!(e.message, "could not parse 'start' parameter: strconv.ParseInt: parsing \"yesterday\": invalid syntax");
    }

    #[test]
    fn range_defaults_and_errors() {
        let p = parse_range(&raw(
            "query=%7Ba%3D%22b%22%7D&start=2026-11-29T00:00:00Z&end=2026-11-29T01:00:00Z",
        ))
        .unwrap();
        assert_eq!(p.query, "{a=\"b\"}");
        assert_eq!(p.step, 14_000_000_000);
        assert_eq!(p.limit, 100);
        assert_eq!(p.direction, Direction::Backward);
        let e = parse_range(&raw(
            "start=2026-11-29T00:00:00Z&end=2026-11-29T01:00:00Z&step=0",
        ))
        .unwrap_err();
        assert!(e.message.starts_with("zero or negative"));
        let e = parse_range(&raw(
            "start=2026-11-29T01:00:00Z&end=2026-11-29T00:00:00Z&step=60s",
        ))
        .unwrap_err();
        assert_eq!(
            e.message,
            "end timestamp must not be before or equal to start time"
        );
        assert_eq!(
            parse_range(&raw("step=1m30s&start=0&end=1000"))
                .unwrap()
                .step,
            90_000_000_000
        );
        assert_eq!(
            parse_range(&raw("step=2.5&start=0&end=1000")).unwrap().step,
            2_500_000_000
        );
    }

    /// Loki's texts and order for bad parameters (`pkg/loghttp/params.go`,
    /// `query.go`).
    #[test]
    fn parameter_errors_as_loki_words_them() {
        let range = |q: &str| parse_range(&raw(q)).unwrap_err().message;
        let b = "start=2026-11-29T00:00:00Z&end=2026-11-29T01:00:00Z";
        assert_eq!(
            range(&format!("{b}&limit=abc")),
            "strconv.Atoi: parsing \"abc\": invalid syntax"
        );
        assert_eq!(
            range(&format!("{b}&limit=99999999999999999999")),
            "strconv.Atoi: parsing \"99999999999999999999\": value out of range"
        );
        assert_eq!(
            range(&format!("{b}&limit=4294967296")),
            "limit value 4294967296 is out of range [0, 4294967295]"
        );
        assert_eq!(
            range(&format!("{b}&limit=0")),
            "limit must be a positive value"
        );
        assert_eq!(
            range(&format!("{b}&direction=SIDEWAYS")),
            "invalid direction 'SIDEWAYS'"
        );
        assert_eq!(
            parse_range(&raw(&format!("{b}&direction=FORWARD")))
                .unwrap()
                .direction,
            Direction::Forward
        );
        assert_eq!(
            range("start=2026-11-29T00:00:00Z&end=2026-12-29T00:00:00Z&step=60"),
            "exceeded maximum resolution of 11,000 points per time series. Try increasing the value of the step parameter"
        );
        // exactly 11,000 steps are allowed
        assert!(parse_range(&raw("start=0&end=11000&step=1")).is_ok());
        assert_eq!(
            range(&format!("{b}&step=abc")),
            "cannot parse \"abc\" to a valid duration"
        );
        assert_eq!(
            range(&format!("{b}&step=1e300")),
            "cannot parse \"1e300\" to a valid duration. It overflows int64"
        );
        assert!(range(&format!("{b}&step=NaN")).starts_with("zero or negative"));
        assert_eq!(range(&format!("{b}&interval=-1")), "interval must be >= 0");
        assert_eq!(
            range(&format!("{b}&interval=x")),
            "cannot parse \"x\" to a valid duration"
        );
        assert_eq!(
            range("since=5x"),
            "could not parse 'since' parameter: unknown unit \"x\" in duration \"5x\""
        );
        assert_eq!(
            range("since=1h30"),
            "could not parse 'since' parameter: not a valid duration string: \"1h30\""
        );
        // since is read before end, end before start; end < start before limit
        assert!(range("since=x&end=y").starts_with("could not parse 'since'"));
        assert!(range("end=y&start=z").starts_with("could not parse 'end'"));
        assert!(range("start=2&end=1&limit=x").starts_with("end timestamp"));
        // instant: limit before time
        let e = parse_instant(&raw("time=abc&limit=x")).unwrap_err().message;
        assert_eq!(e, "strconv.Atoi: parsing \"x\": invalid syntax");
    }

    /// Without `start`, Loki counts `since` back from the end or from now,
    /// whichever is earlier.
    #[test]
    fn default_start_counts_back_from_now_for_a_future_end() {
        let (start, end) = parse_bounds(&raw("end=4000000000")).unwrap();
        assert_eq!(end, 4_000_000_000_000_000_000);
        assert!(start < now_ns() - DEFAULT_SINCE_NS + 60_000_000_000);
    }

    #[test]
    fn url_decoding() {
        let p = raw("match%5B%5D=%7Ba%3D%22b%22%7D&match[]=x+y&q=%zz");
        assert_eq!(p.get_all("match[]"), vec!["{a=\"b\"}", "x y"]);
        assert_eq!(p.get("q"), Some("%zz"));
    }
}
