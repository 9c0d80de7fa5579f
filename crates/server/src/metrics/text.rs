//! The Prometheus text exposition format: `# HELP`, `# TYPE`, then samples
//! `name{label="value",…} value`, label values escaped (`\\`, `\"`, `\n`).

use super::HistogramSnapshot;
use std::fmt::Write;

/// A page of metric families being written.
#[derive(Default)]
pub struct Exposition {
    out: String,
    /// Name of the family being written.
    family: String,
}

/// Escapes a label value.
fn escape(v: &str, out: &mut String) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A sample value as Prometheus writes it.
fn number(v: f64, out: &mut String) {
    if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else if v.is_nan() {
        out.push_str("NaN");
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        let _ = write!(out, "{}", v as i64);
    } else {
        let _ = write!(out, "{v}");
    }
}

impl Exposition {
    /// Starts a family: its help text and type (`counter`, `gauge`, `histogram`).
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        self.family = name.to_string();
    }

    /// A sample of the current family; `suffix` is appended to its name
    /// (`_bucket`, `_sum`, `_count` for histograms, else empty).
    pub fn sample(&mut self, suffix: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(&self.family);
        self.out.push_str(suffix);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(k);
                self.out.push_str("=\"");
                escape(v, &mut self.out);
                self.out.push('"');
            }
            self.out.push('}');
        }
        self.out.push(' ');
        number(value, &mut self.out);
        self.out.push('\n');
    }

    /// A gauge family with one unlabelled sample.
    pub fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, "gauge", help);
        self.sample("", &[], value);
    }

    /// A counter family with one unlabelled sample.
    pub fn counter(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, "counter", help);
        self.sample("", &[], value);
    }

    /// The buckets, sum and count of one histogram of the current family.
    pub fn histogram(&mut self, labels: &[(&str, &str)], h: &HistogramSnapshot) {
        for (bound, n) in &h.buckets {
            let le = bound.to_string();
            let mut with_le: Vec<(&str, &str)> = labels.to_vec();
            with_le.push(("le", &le));
            self.sample("_bucket", &with_le, *n as f64);
        }
        let mut with_le: Vec<(&str, &str)> = labels.to_vec();
        with_le.push(("le", "+Inf"));
        self.sample("_bucket", &with_le, h.count as f64);
        self.sample("_sum", labels, h.sum_seconds);
        self.sample("_count", labels, h.count as f64);
    }

    /// The page.
    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_escape_labels_and_print_integers_plainly() {
        let mut x = Exposition::default();
        x.family("a_total", "counter", "help");
        x.sample("", &[("t", "q\"u\\o\nte")], 3.0);
        x.gauge("b", "g", 0.25);
        assert_eq!(
            x.finish(),
            "# HELP a_total help\n# TYPE a_total counter\na_total{t=\"q\\\"u\\\\o\\nte\"} 3\n\
             # HELP b g\n# TYPE b gauge\nb 0.25\n"
        );
    }
}
