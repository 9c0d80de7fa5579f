//! `runakefli query`, `labels` and `series`: logcli's read commands.
//!
//! Log queries are paginated as logcli does: batches of `--batch` entries,
//! each next request ending (backward) or starting (forward) at the last
//! timestamp seen (asking for as many more entries as were printed at it,
//! which are skipped), until `--limit` entries are printed or the range is
//! exhausted. There is
//! no `--tail`: the server has no live-tail endpoint yet.

use super::{now_ns, Progress, Target};
use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use runakefli_server::loki_api::params::parse_timestamp;
use runakefli_server::time_window::rfc3339_nanos;
use serde_json::Value;
use std::collections::HashSet;
use std::io::Write;

/// How entries and samples are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// `<time> <labels> <line>` (samples: `<time> <labels> <value>`).
    Table,
    /// The line only (samples: the value).
    Raw,
    /// One JSON object per entry or sample.
    Jsonl,
}

/// The time range shared by the read commands.
#[derive(Args, Debug, Clone)]
pub struct Range {
    /// Look back this far from --to (e.g. 15m, 6h, 7d) when --from is not given.
    #[arg(long, default_value = "1h", value_parser = crate::serve::args::duration)]
    pub since: std::time::Duration,
    /// Start: RFC 3339, Unix seconds or nanoseconds.
    #[arg(long)]
    pub from: Option<String>,
    /// End (exclusive): RFC 3339, Unix seconds or nanoseconds; default now.
    #[arg(long)]
    pub to: Option<String>,
}

impl Range {
    fn bounds(&self) -> anyhow::Result<(i64, i64)> {
        let to = parse_timestamp("to", self.to.as_deref(), now_ns())
            .map_err(|e| anyhow::anyhow!(e.message))?;
        let since = self.since.as_nanos().min(i64::MAX as u128) as i64;
        let from = parse_timestamp("from", self.from.as_deref(), to.saturating_sub(since))
            .map_err(|e| anyhow::anyhow!(e.message))?;
        if from >= to {
            bail!("--from must be before --to");
        }
        Ok((from, to))
    }
}

/// `runakefli query`.
#[derive(Args, Debug)]
pub struct QueryArgs {
    /// The LogQL query.
    pub query: String,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub range: Range,
    /// Most entries to print (log queries), over as many requests as needed.
    #[arg(long, default_value_t = 30)]
    pub limit: usize,
    /// Entries per request.
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,
    /// Oldest entries first (default: newest first).
    #[arg(long)]
    pub forward: bool,
    /// An instant query at --to (metric queries; log queries use the range).
    #[arg(long)]
    pub instant: bool,
    /// Step of a metric range query, e.g. 1m (default: the server's).
    #[arg(long)]
    pub step: Option<String>,
    /// Output format.
    #[arg(long, short, value_enum, default_value = "table")]
    pub output: Output,
    /// Show progress on stderr even when it is not a terminal.
    #[arg(long)]
    pub progress: bool,
    /// No progress and no summary on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// One log entry of an answer.
struct Row {
    ts: i64,
    labels: Value,
    line: String,
}

fn labels_text(labels: &Value) -> String {
    let Some(m) = labels.as_object() else {
        return "{}".into();
    };
    let inner: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{k}={}", Value::String(v.as_str().unwrap_or("").into())))
        .collect();
    format!("{{{}}}", inner.join(", "))
}

fn print_row(out: &mut impl Write, fmt: Output, r: &Row) -> std::io::Result<()> {
    match fmt {
        Output::Raw => writeln!(out, "{}", r.line),
        Output::Table => writeln!(
            out,
            "{} {} {}",
            rfc3339_nanos(r.ts),
            labels_text(&r.labels),
            r.line
        ),
        Output::Jsonl => writeln!(
            out,
            "{}",
            serde_json::json!({"timestamp": rfc3339_nanos(r.ts), "labels": r.labels, "line": r.line})
        ),
    }
}

fn print_sample(
    out: &mut impl Write,
    fmt: Output,
    labels: &Value,
    ts: f64,
    value: &str,
) -> std::io::Result<()> {
    let t = rfc3339_nanos((ts * 1e9).round() as i64);
    match fmt {
        Output::Raw => writeln!(out, "{value}"),
        Output::Table => writeln!(out, "{t} {} {value}", labels_text(labels)),
        Output::Jsonl => writeln!(
            out,
            "{}",
            serde_json::json!({"timestamp": t, "labels": labels, "value": value})
        ),
    }
}

/// Entries of a `streams` answer, ordered by time in `forward` order (ties
/// by labels, as the engine orders them).
fn rows_of(data: &Value, forward: bool) -> Vec<Row> {
    let mut rows = Vec::new();
    for s in data["result"].as_array().into_iter().flatten() {
        for v in s["values"].as_array().into_iter().flatten() {
            let ts = v[0].as_str().and_then(|t| t.parse().ok()).unwrap_or(0);
            rows.push(Row {
                ts,
                labels: s["stream"].clone(),
                line: v[1].as_str().unwrap_or("").to_string(),
            });
        }
    }
    rows.sort_by_key(|r| r.ts);
    if !forward {
        rows.reverse();
    }
    rows
}

/// Runs `runakefli query`.
pub fn run(a: QueryArgs) -> anyhow::Result<()> {
    let (from, to) = a.range.bounds()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut progress = Progress::new(a.progress, a.quiet);
    if a.instant {
        let v = a.target.get_json(
            "/loki/api/v1/query",
            &[
                ("query", a.query.clone()),
                ("time", to.to_string()),
                ("limit", a.limit.to_string()),
                ("direction", dir(a.forward).into()),
            ],
        )?;
        return print_answer(&mut out, &a, &v["data"]).map_err(Into::into);
    }
    let batch = a.batch.max(1);
    let (mut lo, mut hi) = (from, to);
    let mut printed = 0usize;
    // Entries printed at the boundary timestamp (the next request sees them again).
    let mut boundary: Option<(i64, HashSet<(String, String)>)> = None;
    let mut requests = 0;
    loop {
        let want = (a.limit - printed).min(batch);
        if want == 0 {
            break;
        }
        // The entries already printed at the boundary come back first: ask
        // for that many more, so every page can hold new ones.
        let ask = want + boundary.as_ref().map_or(0, |(_, seen)| seen.len());
        let mut params = vec![
            ("query", a.query.clone()),
            ("start", lo.to_string()),
            ("end", hi.to_string()),
            ("limit", ask.to_string()),
            ("direction", dir(a.forward).into()),
        ];
        if let Some(s) = &a.step {
            params.push(("step", s.clone()));
        }
        let v = a.target.get_json("/loki/api/v1/query_range", &params)?;
        requests += 1;
        if v["data"]["resultType"] != "streams" {
            // A metric query: one answer, no pages.
            return print_answer(&mut out, &a, &v["data"]).map_err(Into::into);
        }
        let rows = rows_of(&v["data"], a.forward);
        let got = rows.len();
        let mut fresh = 0;
        let mut last_ts = None;
        for r in rows {
            let key = (r.labels.to_string(), r.line.clone());
            if let Some((t, seen)) = &boundary {
                if *t == r.ts && seen.contains(&key) {
                    continue;
                }
            }
            if printed == a.limit {
                break;
            }
            print_row(&mut out, a.output, &r)?;
            printed += 1;
            fresh += 1;
            match &mut boundary {
                Some((t, seen)) if *t == r.ts => {
                    seen.insert(key);
                }
                _ => boundary = Some((r.ts, HashSet::from([key]))),
            }
            last_ts = Some(r.ts);
        }
        progress.tick(|| format!("{printed} entries, {requests} requests"));
        let Some(t) = last_ts else { break };
        if got < ask || fresh == 0 {
            break;
        }
        // The next page includes the boundary timestamp again.
        if a.forward {
            lo = t;
        } else {
            hi = t + 1;
        }
    }
    out.flush()?;
    progress.done();
    if !a.quiet && printed == a.limit && printed > 0 {
        eprintln!("{printed} entries (the --limit); more may match");
    }
    Ok(())
}

fn dir(forward: bool) -> &'static str {
    if forward {
        "forward"
    } else {
        "backward"
    }
}

fn print_answer(out: &mut impl Write, a: &QueryArgs, data: &Value) -> std::io::Result<()> {
    match data["resultType"].as_str() {
        Some("streams") => {
            for r in rows_of(data, a.forward).iter().take(a.limit) {
                print_row(out, a.output, r)?;
            }
        }
        Some("vector") => {
            for s in data["result"].as_array().into_iter().flatten() {
                let t = s["value"][0].as_f64().unwrap_or(0.0);
                print_sample(
                    out,
                    a.output,
                    &s["metric"],
                    t,
                    s["value"][1].as_str().unwrap_or(""),
                )?;
            }
        }
        Some("matrix") => {
            for s in data["result"].as_array().into_iter().flatten() {
                for p in s["values"].as_array().into_iter().flatten() {
                    let t = p[0].as_f64().unwrap_or(0.0);
                    print_sample(out, a.output, &s["metric"], t, p[1].as_str().unwrap_or(""))?;
                }
            }
        }
        Some("scalar") => {
            let t = data["result"][0].as_f64().unwrap_or(0.0);
            print_sample(
                out,
                a.output,
                &Value::Null,
                t,
                data["result"][1].as_str().unwrap_or(""),
            )?;
        }
        other => writeln!(out, "unexpected result type {other:?}")?,
    }
    out.flush()
}

/// `runakefli labels`.
#[derive(Args, Debug)]
pub struct LabelsArgs {
    /// A label name: print its values instead of the names.
    pub name: Option<String>,
    /// Only streams matching this selector.
    #[arg(long)]
    pub query: Option<String>,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub range: Range,
}

/// Runs `runakefli labels`.
pub fn labels(a: LabelsArgs) -> anyhow::Result<()> {
    let (from, to) = a.range.bounds()?;
    let mut params = vec![("start", from.to_string()), ("end", to.to_string())];
    if let Some(q) = &a.query {
        params.push(("query", q.clone()));
    }
    let path = match &a.name {
        Some(n) => format!("/loki/api/v1/label/{}/values", urlencode(n)),
        None => "/loki/api/v1/labels".to_string(),
    };
    let v = a.target.get_json(&path, &params)?;
    let mut out = std::io::stdout().lock();
    for s in v["data"].as_array().context("no data in the answer")? {
        writeln!(out, "{}", s.as_str().unwrap_or(""))?;
    }
    Ok(())
}

/// `runakefli series`.
#[derive(Args, Debug)]
pub struct SeriesArgs {
    /// Stream selectors (`{app="api"}`); streams matching any are listed.
    #[arg(required = true)]
    pub selectors: Vec<String>,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub range: Range,
}

/// Runs `runakefli series`.
pub fn series(a: SeriesArgs) -> anyhow::Result<()> {
    let (from, to) = a.range.bounds()?;
    let mut params = vec![("start", from.to_string()), ("end", to.to_string())];
    for s in &a.selectors {
        params.push(("match[]", s.clone()));
    }
    let v = a.target.get_json("/loki/api/v1/series", &params)?;
    let mut out = std::io::stdout().lock();
    for s in v["data"].as_array().context("no data in the answer")? {
        writeln!(out, "{}", labels_text(s))?;
    }
    Ok(())
}

pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
