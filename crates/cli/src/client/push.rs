//! `runakefli push`: lines from standard input or files into a stream, for
//! imports. Lines are batched (`--batch-lines`, `--batch-bytes`) into Loki
//! JSON pushes; each line gets the time it was read, strictly increasing, so
//! a query returns the lines in file order. Refused batches (429, 5xx) are
//! retried with backoff; a 4xx other than 429 stops the import.

use super::{finish, now_ns, Progress, Target};
use anyhow::{bail, Context};
use clap::Args;
use std::io::BufRead;
use std::path::PathBuf;
use std::time::Duration;

/// `runakefli push`.
#[derive(Args, Debug)]
pub struct PushArgs {
    /// Files to read (`-` or none: standard input).
    pub files: Vec<PathBuf>,
    /// The stream's labels, e.g. '{app="api", env="prod"}'.
    #[arg(long, short)]
    pub labels: String,
    /// Also label each line with the file it came from, under this name (e.g. filename).
    #[arg(long)]
    pub file_label: Option<String>,
    #[command(flatten)]
    pub target: Target,
    /// Most lines per push.
    #[arg(long, default_value_t = 1000)]
    pub batch_lines: usize,
    /// Most bytes of lines per push, e.g. 1MiB.
    #[arg(long, default_value = "1MiB", value_parser = crate::serve::args::bytes)]
    pub batch_bytes: u64,
    /// Show progress on stderr even when it is not a terminal.
    #[arg(long)]
    pub progress: bool,
    /// No progress and no summary on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// A batch being filled.
struct Batch {
    labels: serde_json::Map<String, serde_json::Value>,
    values: Vec<serde_json::Value>,
    bytes: u64,
}

/// Totals of an import.
#[derive(Default)]
struct Totals {
    lines: u64,
    bytes: u64,
    pushes: u64,
}

/// Parses `{a="b", c="d"}` into a JSON object (the server validates names).
fn parse_labels(text: &str) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let labels = runakefli_model::Labels::parse(text)
        .map_err(|e| anyhow::anyhow!("--labels {text:?}: {e}"))?;
    if labels.is_empty() {
        bail!("--labels: at least one label is needed, e.g. '{{app=\"import\"}}'");
    }
    Ok(labels
        .pairs()
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect())
}

impl PushArgs {
    fn send(&self, b: &mut Batch, totals: &mut Totals) -> anyhow::Result<()> {
        if b.values.is_empty() {
            return Ok(());
        }
        let body = serde_json::json!({"streams": [{"stream": b.labels, "values": b.values}]});
        let body = body.to_string();
        let agent = self.target.agent();
        let mut delay = Duration::from_millis(200);
        for attempt in 0.. {
            let req = self.target.identify(
                agent
                    .post(&self.target.url("/loki/api/v1/push"))
                    .set("Content-Type", "application/json"),
            );
            match req.send_string(&body) {
                Err(ureq::Error::Status(code, _))
                    if (code == 429 || code >= 500) && attempt < 5 =>
                {
                    std::thread::sleep(delay);
                    delay *= 2;
                }
                r => {
                    finish(r, "push")?;
                    break;
                }
            }
        }
        totals.lines += b.values.len() as u64;
        totals.bytes += b.bytes;
        totals.pushes += 1;
        b.values.clear();
        b.bytes = 0;
        Ok(())
    }
}

/// Runs `runakefli push`.
pub fn run(a: PushArgs) -> anyhow::Result<()> {
    let base = parse_labels(&a.labels)?;
    let mut totals = Totals::default();
    let mut progress = Progress::new(a.progress, a.quiet);
    let inputs: Vec<Option<PathBuf>> = if a.files.is_empty() {
        vec![None]
    } else {
        a.files
            .iter()
            .map(|f| (f.as_os_str() != "-").then(|| f.clone()))
            .collect()
    };
    let mut last_ts = 0i64;
    let started = std::time::Instant::now();
    for input in inputs {
        let mut labels = base.clone();
        if let (Some(name), Some(path)) = (&a.file_label, &input) {
            labels.insert(name.clone(), path.display().to_string().into());
        }
        let reader: Box<dyn BufRead> = match &input {
            Some(p) => Box::new(std::io::BufReader::new(
                std::fs::File::open(p).with_context(|| format!("opening {}", p.display()))?,
            )),
            None => Box::new(std::io::stdin().lock()),
        };
        let mut batch = Batch {
            labels,
            values: Vec::new(),
            bytes: 0,
        };
        for line in reader.lines() {
            let line = line.with_context(|| match &input {
                Some(p) => format!("reading {}", p.display()),
                None => "reading standard input".to_string(),
            })?;
            let line = line.strip_suffix('\r').unwrap_or(&line).to_string();
            // Strictly increasing times keep the file's order.
            last_ts = now_ns().max(last_ts + 1);
            batch.bytes += line.len() as u64;
            batch
                .values
                .push(serde_json::json!([last_ts.to_string(), line]));
            if batch.values.len() >= a.batch_lines.max(1) || batch.bytes >= a.batch_bytes {
                a.send(&mut batch, &mut totals)?;
                progress.tick(|| format!("{} lines, {} bytes pushed", totals.lines, totals.bytes));
            }
        }
        a.send(&mut batch, &mut totals)?;
    }
    progress.done();
    if !a.quiet {
        eprintln!(
            "pushed {} lines ({} bytes) in {} requests, {:.1}s",
            totals.lines,
            totals.bytes,
            totals.pushes,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
