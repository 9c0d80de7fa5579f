//! Alert labels and annotations as Prometheus expands them: Go
//! `text/template` (the engine's `line_format` evaluator, widened by a
//! [`Dialect`]) with `$labels`, `$value`, `$externalLabels`, `$externalURL`,
//! `.Labels`, `.Value`, and the `humanize*` functions.

use runakefli_engine::pipeline::template::{Context, Dialect, Template, Val};
use std::collections::BTreeMap;

/// The language of alert templates.
pub const ALERT_DIALECT: Dialect = Dialect {
    variables: &["labels", "value", "externalLabels", "externalURL"],
    functions: &[
        "humanize",
        "humanize1024",
        "humanizePercentage",
        "humanizeDuration",
        "humanizeTimestamp",
        "toUpper",
        "toLower",
    ],
    field_paths: true,
};

/// A parsed alert template.
#[derive(Clone, Debug)]
pub struct AlertTemplate(Template);

/// What one expansion reads: the result's labels and value.
pub struct Data<'a> {
    /// The series' labels (without `__name__`).
    pub labels: &'a BTreeMap<String, String>,
    /// The series' value.
    pub value: f64,
    /// The ruler's external URL.
    pub external_url: &'a str,
}

impl AlertTemplate {
    /// Parses `src`; `name` names it in errors (Prometheus uses
    /// `__alert_NAME`).
    pub fn parse(name: &str, src: &str) -> Result<AlertTemplate, String> {
        Template::parse_with(name, src, &ALERT_DIALECT).map(AlertTemplate)
    }

    /// Expands the template.
    pub fn expand(&self, data: &Data<'_>) -> Result<String, String> {
        self.0.execute(data)
    }
}

fn labels_val(labels: &BTreeMap<String, String>) -> Val {
    Val::Map(
        labels
            .iter()
            .map(|(k, v)| (k.clone(), Val::Str(v.clone())))
            .collect(),
    )
}

impl Context for Data<'_> {
    fn field(&self, _name: &str) -> Option<&str> {
        None
    }

    fn line(&self) -> &str {
        ""
    }

    fn timestamp(&self) -> i64 {
        0
    }

    fn value_at(&self, path: &[String]) -> Val {
        match path {
            [v] if v == "Value" => Val::Float(self.value),
            [l] if l == "Labels" => labels_val(self.labels),
            [l, k] if l == "Labels" => self.labels.get(k).map_or(Val::Nil, |v| Val::Str(v.clone())),
            [l] if l == "ExternalLabels" => Val::Map(BTreeMap::new()),
            [u] if u == "ExternalURL" => Val::Str(self.external_url.to_string()),
            _ => Val::Nil,
        }
    }

    fn variable(&self, name: &str) -> Val {
        match name {
            "labels" => labels_val(self.labels),
            "value" => Val::Float(self.value),
            "externalLabels" => Val::Map(BTreeMap::new()),
            "externalURL" => Val::Str(self.external_url.to_string()),
            _ => Val::Nil,
        }
    }

    fn call_extra(&self, name: &str, args: Vec<Val>) -> Result<Val, String> {
        let [arg] = <[Val; 1]>::try_from(args)
            .map_err(|a| format!("wrong number of args for {name}: want 1 got {}", a.len()))?;
        let text = match name {
            "toUpper" => arg.to_text().to_uppercase(),
            "toLower" => arg.to_text().to_lowercase(),
            _ => {
                let v = number(&arg)?;
                match name {
                    "humanize" => humanize(v),
                    "humanize1024" => humanize1024(v),
                    "humanizePercentage" => format!("{}%", go_g4(v * 100.0)),
                    "humanizeDuration" => humanize_duration(v),
                    "humanizeTimestamp" => humanize_timestamp(v),
                    _ => return Err(format!("function {name:?} not defined")),
                }
            }
        };
        Ok(Val::Str(text))
    }
}

/// A number from a template value (Prometheus converts strings too).
fn number(v: &Val) -> Result<f64, String> {
    match v {
        Val::Float(f) => Ok(*f),
        Val::Int(i) => Ok(*i as f64),
        Val::Str(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("strconv.ParseFloat: parsing {s:?}: invalid syntax")),
        other => Err(format!("can't convert {} to float", other.type_name())),
    }
}

/// Go's `%.4g`: four significant digits, exponent form below 1e-4 or from
/// 1e4, trailing zeros removed.
pub fn go_g4(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let e = format!("{v:.3e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..4).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant), exp.abs())
    } else {
        let decimals = usize::try_from(3 - exp).unwrap_or(0);
        trim(&format!("{v:.decimals$}"))
    }
}

/// Prometheus' `humanize`: SI prefixes (k, M, G… and m, u, n…).
fn humanize(v: f64) -> String {
    if v == 0.0 || v.is_nan() || v.is_infinite() {
        return go_g4(v);
    }
    if v.abs() >= 1.0 {
        let mut x = v;
        let mut prefix = "";
        for p in ["k", "M", "G", "T", "P", "E", "Z", "Y"] {
            if x.abs() < 1000.0 {
                break;
            }
            prefix = p;
            x /= 1000.0;
        }
        return format!("{}{prefix}", go_g4(x));
    }
    let (x, prefix) = scaled_below_one(v);
    format!("{}{prefix}", go_g4(x))
}

/// `v` (|v| < 1, not 0) times 1000 until it reaches 1, with the SI prefix
/// of the last step (m, u, n, … as Prometheus' humanizers print them).
fn scaled_below_one(v: f64) -> (f64, &'static str) {
    let mut x = v;
    let mut prefix = "";
    for p in ["m", "u", "n", "p", "f", "a", "z", "y"] {
        if x.abs() >= 1.0 {
            break;
        }
        prefix = p;
        x *= 1000.0;
    }
    (x, prefix)
}

/// Prometheus' `humanize1024`: binary prefixes (ki, Mi, Gi…).
fn humanize1024(v: f64) -> String {
    if v.abs() <= 1.0 || v.is_nan() || v.is_infinite() {
        return go_g4(v);
    }
    let mut x = v;
    let mut prefix = "";
    for p in ["ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"] {
        if x.abs() < 1024.0 {
            break;
        }
        prefix = p;
        x /= 1024.0;
    }
    format!("{}{prefix}", go_g4(x))
}

/// Prometheus' `humanizeDuration`: `1d 2h 3m 4s`, or `123ms` below a second.
fn humanize_duration(v: f64) -> String {
    if v.is_nan() || v.is_infinite() {
        return go_g4(v);
    }
    if v.abs() >= 1.0 {
        let sign = if v < 0.0 { "-" } else { "" };
        let secs = v.abs() as u64;
        let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
        return if d > 0 {
            format!("{sign}{d}d {h}h {m}m {s}s")
        } else if h > 0 {
            format!("{sign}{h}h {m}m {s}s")
        } else if m > 0 {
            format!("{sign}{m}m {s}s")
        } else {
            format!("{sign}{s}s")
        };
    }
    if v == 0.0 {
        return "0s".into();
    }
    let (x, prefix) = scaled_below_one(v);
    format!("{}{prefix}s", go_g4(x))
}

/// Prometheus' `humanizeTimestamp`: Unix seconds as
/// `2006-01-02 15:04:05.999999999 +0000 UTC`.
fn humanize_timestamp(v: f64) -> String {
    if v.is_nan() || v.is_infinite() {
        return go_g4(v);
    }
    let ns = (v * 1e9).round() as i64;
    let (date, time, frac) = crate::time::civil(ns);
    let frac = if frac == 0 {
        String::new()
    } else {
        format!(".{frac:09}").trim_end_matches('0').to_string()
    };
    format!("{date} {time}{frac} +0000 UTC")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(src: &str, value: f64) -> Result<String, String> {
        let labels: BTreeMap<String, String> = [("job", "checkout"), ("status", "503")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AlertTemplate::parse("__alert_X", src)?.expand(&Data {
            labels: &labels,
            value,
            external_url: "http://rk:3100",
        })
    }

    #[test]
    fn labels_and_value_expand() {
        assert_eq!(
            expand("{{ $labels.job }} at {{ $value }}", 0.25).expect("expands"),
            "checkout at 0.25"
        );
        assert_eq!(
            expand("{{ .Labels.status }}/{{ .Value }}", 2.0).expect("expands"),
            "503/2"
        );
        assert_eq!(
            expand("{{ $labels.missing }}", 1.0).expect("expands"),
            "<no value>"
        );
        assert_eq!(
            expand(r#"{{ printf "%.2f" $value }}"#, 1.0 / 3.0).expect("expands"),
            "0.33"
        );
        assert_eq!(
            expand("{{ $labels.job | toUpper }}", 1.0).expect("expands"),
            "CHECKOUT"
        );
    }

    #[test]
    fn humanize_functions_format_as_prometheus() {
        assert_eq!(
            expand("{{ humanize $value }}", 1234567.0).unwrap(),
            "1.235M"
        );
        assert_eq!(expand("{{ humanize $value }}", 0.0012).unwrap(), "1.2m");
        assert_eq!(expand("{{ humanize1024 $value }}", 2048.0).unwrap(), "2ki");
        assert_eq!(
            expand("{{ $value | humanizePercentage }}", 0.1234).unwrap(),
            "12.34%"
        );
        assert_eq!(
            expand("{{ humanizeDuration $value }}", 90061.0).unwrap(),
            "1d 1h 1m 1s"
        );
        assert_eq!(
            expand("{{ humanizeDuration $value }}", 0.25).unwrap(),
            "250ms"
        );
        assert_eq!(
            expand("{{ humanizeTimestamp $value }}", 1_700_000_000.5).unwrap(),
            "2023-11-14 22:13:20.5 +0000 UTC"
        );
        assert_eq!(go_g4(12345.0), "1.234e+04");
        assert_eq!(go_g4(0.00012), "0.00012");
    }

    #[test]
    fn bad_templates_are_refused_with_gos_messages() {
        let e = AlertTemplate::parse("__alert_X", "{{ $nope }}").expect_err("undefined");
        assert!(e.contains("undefined variable \"$nope\""), "{e}");
        let e = AlertTemplate::parse("__alert_X", "{{ $labels.job ").expect_err("unclosed");
        assert!(e.contains("unclosed action"), "{e}");
        let e = AlertTemplate::parse("__alert_X", "{{ nosuch 1 }}").expect_err("function");
        assert!(e.contains("function \"nosuch\" not defined"), "{e}");
    }
}
