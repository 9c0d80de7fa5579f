//! `runakefli bench …`: the workload generator and the ingest and query benchmarks.
//!
//! Without `--url`, a benchmark starts its own server (this binary, `serve`) on a
//! free loopback port with a fresh data directory, so one command measures
//! everything: server CPU, peak RSS, bytes written and disk use come from /proc
//! and the data directory of that child process. The query benchmark restarts that
//! server before each query's cold run, and with `--data-dir` reuses a directory
//! that already holds the same push. `bench clickhouse` starts two servers, one on
//! the embedded store and one on ClickHouse (chdb behind its Python front unless
//! given a ClickHouse URL), and times the same queries on both.
#![allow(
    clippy::print_stdout,
    reason = "the report on standard output is the command's answer"
)]

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use runakefli_bench::chdb_front::{self, ChdbFront};
use runakefli_bench::data_marker::{self, DataDirState};
use runakefli_bench::side_by_side::Servers;
use runakefli_bench::{
    generate, run_ingest_bench, run_query_bench, run_ruler_bench, run_side_by_side,
    GeneratorConfig, IngestBenchConfig, OutputFormat, OwnServer, Protocol, QueryBenchConfig,
    QuerySet, RulerBenchConfig, ServerProcess, Shape, SideBySideConfig,
};
use std::path::PathBuf;

/// Benchmark subcommands.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Print generated workload lines as NDJSON (and the information floor on stderr).
    Generate(GenerateArgs),
    /// Push the workload over HTTP (Loki protobuf, or --protocol) and report throughput, CPU, memory, disk.
    Ingest(IngestArgs),
    /// Push the workload, then time the reference LogQL queries.
    Query(QueryArgs),
    /// Push the workload into an embedded-store server and a ClickHouse-backed one
    /// (on chdb, started here, unless --clickhouse-url), then time nine queries on both
    /// side by side: medians, ratio, identical answers, how much ran in SQL.
    Clickhouse(ClickhouseArgs),
    /// Start a server, push the workload, keep pushing at its rate, and measure the
    /// CPU of evaluating rule groups (issue 46) against the same window without rules.
    Ruler(RulerArgs),
}

/// `bench ruler`.
#[derive(Args, Debug)]
pub struct RulerArgs {
    /// Lines pushed before measuring, over --span-secs ending now.
    #[arg(long, default_value_t = 2_000_000)]
    lines: u64,
    /// Streams (pods).
    #[arg(long, default_value_t = 5_000)]
    streams: usize,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Span of the first push in seconds; the live push keeps its rate (lines / span).
    #[arg(long, default_value_t = 3_600)]
    span_secs: u64,
    /// Rule groups (the last one cluster-wide, the others two apps each).
    #[arg(long, default_value_t = 20)]
    groups: usize,
    /// Rules per group.
    #[arg(long, default_value_t = 10)]
    rules_per_group: usize,
    /// Evaluation interval of every group, seconds.
    #[arg(long, default_value_t = 60)]
    interval_secs: u64,
    /// Length of each measured window (without rules, then with), seconds.
    #[arg(long, default_value_t = 180)]
    measure_secs: u64,
    /// Where the server keeps its data (default: a temporary directory, removed afterwards).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Extra flags for the server, e.g. --server-arg=--memtable-bytes=33554432.
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Concurrent connections of the first push.
    #[arg(long, default_value_t = 2)]
    concurrency: usize,
    /// Write the report as JSON to this file too.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Runs `bench ruler`.
fn run_ruler(a: RulerArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating the runakefli binary")?;
    let rules = std::env::temp_dir().join(format!("runakefli-bench-rules-{}", std::process::id()));
    std::fs::create_dir_all(&rules).with_context(|| format!("creating {}", rules.display()))?;
    let mut args = a.server_args.clone();
    args.extend(["--rules-dir".to_string(), rules.display().to_string()]);
    let server = OwnServer::start(exe, a.data_dir.clone(), args)?;
    let config = RulerBenchConfig {
        url: server.url().to_string(),
        pid: server.pid(),
        rules_dir: rules.clone(),
        tenant: "fake".into(),
        lines: a.lines,
        streams: a.streams,
        seed: a.seed,
        span_secs: a.span_secs,
        groups: a.groups,
        rules_per_group: a.rules_per_group,
        interval_secs: a.interval_secs,
        measure_secs: a.measure_secs,
        concurrency: a.concurrency,
    };
    let report = run_ruler_bench(&config);
    drop(server);
    let _ = std::fs::remove_dir_all(&rules);
    let report = report?;
    println!("{report}");
    write_json(&a.json, &report)
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Format {
    /// `{"labels", "ts", "line"}` records, as pushed to Loki.
    Record,
    /// Whole JSON objects with the stream fields inside, as JSON-lines ingestion sees them.
    Object,
}

/// The line shapes of the generated workload.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum ShapeArg {
    /// Kubernetes-style JSON lines (the reference workload of docs/benchmarks.md).
    Reference,
    /// Other JSON field names and id formats, and a fifth of the streams in plain text.
    Varied,
}

impl From<ShapeArg> for Shape {
    fn from(s: ShapeArg) -> Shape {
        match s {
            ShapeArg::Reference => Shape::Reference,
            ShapeArg::Varied => Shape::Varied,
        }
    }
}

/// Workload shape shared by every benchmark.
#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Lines to generate.
    #[arg(long)]
    lines: Option<u64>,
    /// Streams (pods).
    #[arg(long, default_value_t = 5_000)]
    streams: usize,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Covered time span in seconds, ending now (or at --end-ns).
    #[arg(long, default_value_t = 3_600)]
    span_secs: u64,
    /// End of the covered span, nanoseconds since the epoch (default: now).
    #[arg(long)]
    end_ns: Option<i64>,
    /// Line shape of the generated workload.
    #[arg(long, value_enum, default_value_t = ShapeArg::Reference)]
    shape: ShapeArg,
}

/// `bench generate`.
#[derive(Args, Debug)]
pub struct GenerateArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Output form.
    #[arg(long, value_enum, default_value_t = Format::Record)]
    format: Format,
}

/// Where the server under test is.
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    /// Base URL of a running server; without it the benchmark starts its own.
    #[arg(long)]
    url: Option<String>,
    /// PID of the running server at --url (for CPU, RSS and I/O counters).
    #[arg(long)]
    pid: Option<u32>,
    /// Data directory of the server (for disk use); for a self-started server, where to keep it
    /// (default: a fresh temporary directory, removed afterwards). `bench query` marks a
    /// directory it pushed into completely and, given it again with the same --lines,
    /// --streams, --seed, --shape and --span-secs, queries the data there without pushing.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Extra flags for a self-started server, e.g. --server-arg=--memtable-bytes=33554432.
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Concurrent push connections.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Lines per push request.
    #[arg(long, default_value_t = 1_000)]
    batch_lines: usize,
    /// Write the report as JSON to this file too.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The ingest protocol `bench ingest` pushes with.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum ProtocolArg {
    /// Loki push API, protobuf + snappy (`/loki/api/v1/push`).
    Loki,
    /// JSON lines of whole objects (`/insert/jsonline`).
    Jsonline,
    /// Elasticsearch bulk of whole objects (`/_bulk`).
    EsBulk,
    /// OTLP/HTTP logs, protobuf (`/v1/logs`).
    Otlp,
}

impl From<ProtocolArg> for Protocol {
    fn from(p: ProtocolArg) -> Protocol {
        match p {
            ProtocolArg::Loki => Protocol::Loki,
            ProtocolArg::Jsonline => Protocol::Jsonline,
            ProtocolArg::EsBulk => Protocol::EsBulk,
            ProtocolArg::Otlp => Protocol::Otlp,
        }
    }
}

/// `bench ingest`.
#[derive(Args, Debug)]
pub struct IngestArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    #[command(flatten)]
    target: TargetArgs,
    /// Ingest protocol to push the same generated lines with.
    #[arg(long, value_enum, default_value_t = ProtocolArg::Loki)]
    protocol: ProtocolArg,
}

/// The query sets of `bench query`.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum SetArg {
    /// The seven queries of shared/workload.md, range and instant.
    Workload,
    /// The fourteen range queries of issue 7, with VictoriaLogs' times and our targets.
    Issue7,
    /// Rare-token searches (one per id kind of the --shape) with the lines each must
    /// return, and phrase and error counts.
    Needles,
}

impl From<SetArg> for QuerySet {
    fn from(s: SetArg) -> QuerySet {
        match s {
            SetArg::Workload => QuerySet::Workload,
            SetArg::Issue7 => QuerySet::Issue7,
            SetArg::Needles => QuerySet::Needles,
        }
    }
}

/// `bench query`.
#[derive(Args, Debug)]
pub struct QueryArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    #[command(flatten)]
    target: TargetArgs,
    /// Which queries to time.
    #[arg(long, value_enum, default_value_t = SetArg::Workload)]
    set: SetArg,
    /// Do not restart the self-started server (nor drop the page cache) before each
    /// query's cold run.
    #[arg(long)]
    no_cold_restart: bool,
    /// Do not try to drop the page cache (`echo 3 > /proc/sys/vm/drop_caches`, needs root)
    /// before each cold run; dropping it affects everything else running on the machine.
    #[arg(long)]
    no_drop_page_cache: bool,
    /// A `victoria-logs` binary to time beside this server in the same run
    /// (`--set needles`): the benchmark starts it on a free loopback port,
    /// pushes the same lines into it and times each needle query's LogsQL
    /// twin right after ours. How to build one: docs/benchmarks.md.
    #[arg(long, requires = "victorialogs_data")]
    victorialogs_bin: Option<PathBuf>,
    /// VictoriaLogs' data directory (kept, and reused by a later run of the
    /// same workload).
    #[arg(long, requires = "victorialogs_bin")]
    victorialogs_data: Option<PathBuf>,
    /// Range-query step in seconds.
    #[arg(long, default_value_t = 60)]
    step_secs: u64,
    /// Warm runs per query (the median is reported).
    #[arg(long, default_value_t = 5)]
    warm_runs: usize,
    /// Cold runs per query, each after its own server restart (the median is
    /// reported): one cold run on this noisy a machine is one sample.
    #[arg(long, default_value_t = 1)]
    cold_runs: usize,
}

/// `bench clickhouse`.
#[derive(Args, Debug)]
pub struct ClickhouseArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// ClickHouse HTTP interface to put the ClickHouse-backed server on; without it the
    /// bench starts chdb behind its Python front (from .venv-chdb or RUNAKEFLI_CHDB_PYTHON).
    #[arg(long)]
    clickhouse_url: Option<String>,
    /// Database of the ClickHouse-backed server.
    #[arg(long, default_value = "runakefli_bench")]
    clickhouse_database: String,
    /// Extra flags for both self-started servers, e.g. --server-arg=--query-timeout=10m.
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Concurrent push connections.
    #[arg(long, default_value_t = 2)]
    concurrency: usize,
    /// Lines per push request.
    #[arg(long, default_value_t = 1_000)]
    batch_lines: usize,
    /// Range-query step in seconds.
    #[arg(long, default_value_t = 60)]
    step_secs: u64,
    /// Timed runs per query and server after the first (the median is reported).
    #[arg(long, default_value_t = 5)]
    warm_runs: usize,
    /// Write the report as JSON to this file too.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Runs `bench clickhouse`.
fn run_clickhouse(a: ClickhouseArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating the runakefli binary")?;
    // Declared first, dropped last: the servers stop before their ClickHouse.
    let mut front = None;
    let (url, engine) = match &a.clickhouse_url {
        Some(url) => (url.clone(), format!("the ClickHouse server at {url}")),
        None => {
            let python = chdb_front::python();
            let f = ChdbFront::start(&python, &std::env::temp_dir())?;
            let version = chdb_front::chdb_version(&python).unwrap_or_else(|| "?".into());
            let engine = format!(
                "chdb {version} (ClickHouse in-process, {}) behind the Python HTTP front of \
                 crates/clickhouse/tests/chdb_http.py, one query at a time: not a clickhouse-server",
                python.display()
            );
            let url = f.url().to_string();
            front = Some(f);
            (url, engine)
        }
    };
    let embedded = OwnServer::start(exe.clone(), None, a.server_args.clone())?;
    let mut ch_args = a.server_args.clone();
    ch_args.extend(
        [
            "--backend",
            "clickhouse",
            "--clickhouse-url",
            &url,
            "--clickhouse-database",
            &a.clickhouse_database,
        ]
        .map(str::to_string),
    );
    let clickhouse = OwnServer::start(exe, None, ch_args)?;
    let config = SideBySideConfig {
        lines: a.workload.lines.unwrap_or(200_000),
        streams: a.workload.streams,
        seed: a.workload.seed,
        shape: a.workload.shape.into(),
        span_secs: a.workload.span_secs,
        end_ns: a.workload.end_ns,
        concurrency: a.concurrency,
        batch_lines: a.batch_lines,
        step_secs: a.step_secs,
        warm_runs: a.warm_runs,
        ..SideBySideConfig::default()
    };
    let servers = Servers {
        embedded: embedded.url().to_string(),
        clickhouse: clickhouse.url().to_string(),
    };
    let report = run_side_by_side(&config, &servers, &engine)?;
    println!("{report}");
    write_json(&a.json, &report)?;
    drop((clickhouse, embedded, front));
    Ok(())
}

fn start_own_server(target: &TargetArgs) -> anyhow::Result<OwnServer> {
    let exe = std::env::current_exe().context("locating the runakefli binary")?;
    OwnServer::start(exe, target.data_dir.clone(), target.server_args.clone())
}

/// For a self-started query benchmark with `--data-dir`: reuse the data directory
/// when it holds the same push, push into it when it is empty, refuse otherwise.
fn plan_data_dir(a: &QueryArgs, config: &mut QueryBenchConfig) -> anyhow::Result<()> {
    let Some(dir) = &a.target.data_dir else {
        return Ok(());
    };
    let given_end = a.workload.end_ns;
    let wanted = config.marker(given_end.unwrap_or(0));
    config.marker_dir = Some(dir.clone());
    if let DataDirState::Reusable(m) = data_marker::inspect(dir, &wanted, given_end.is_some())? {
        eprintln!(
            "{} already holds this push (span ending at {} ns): skipping the push",
            dir.display(),
            m.end_ns
        );
        config.push = false;
        config.end_ns = Some(m.end_ns);
    }
    Ok(())
}

fn write_json<T: serde::Serialize>(path: &Option<PathBuf>, report: &T) -> anyhow::Result<()> {
    if let Some(p) = path {
        std::fs::write(p, serde_json::to_vec_pretty(report)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

/// Runs a bench subcommand.
pub fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Generate(a) => {
            let w = &a.workload;
            let lines = w.lines.unwrap_or(10_000);
            let end = w
                .end_ns
                .unwrap_or_else(runakefli_bench::ingest_bench::now_ns);
            let config = GeneratorConfig::ending_at(
                w.seed,
                w.streams,
                lines,
                end,
                w.span_secs as i64 * 1_000_000_000,
            )
            .with_shape(w.shape.into());
            let format = match a.format {
                Format::Record => OutputFormat::Record,
                Format::Object => OutputFormat::Object,
            };
            let stats = generate(config, lines, format, std::io::stdout().lock())?;
            eprintln!(
                "{lines} lines, {:.1} bytes/line on average, floor {:.1} bytes/line",
                stats.avg_line_bytes(),
                stats.floor_bytes_per_line()
            );
            Ok(())
        }
        BenchCommand::Ingest(a) => {
            let own = if a.target.url.is_none() {
                Some(start_own_server(&a.target)?)
            } else {
                None
            };
            let config = IngestBenchConfig {
                url: own
                    .as_ref()
                    .map(|s| s.url().to_string())
                    .or(a.target.url.clone())
                    .unwrap_or_default(),
                concurrency: a.target.concurrency,
                batch_lines: a.target.batch_lines,
                lines: a.workload.lines.unwrap_or(2_000_000),
                streams: a.workload.streams,
                seed: a.workload.seed,
                shape: a.workload.shape.into(),
                span_secs: a.workload.span_secs,
                end_ns: a.workload.end_ns,
                pid: own.as_ref().map(|s| s.pid()).or(a.target.pid),
                data_dir: own
                    .as_ref()
                    .map(|s| s.data_dir().to_path_buf())
                    .or(a.target.data_dir.clone()),
                protocol: a.protocol.into(),
                ..IngestBenchConfig::default()
            };
            let report = run_ingest_bench(&config)?;
            println!("{report}");
            write_json(&a.target.json, &report)
        }
        BenchCommand::Clickhouse(a) => run_clickhouse(a),
        BenchCommand::Ruler(a) => run_ruler(a),
        BenchCommand::Query(a) => {
            let mut config =
                QueryBenchConfig {
                    url: a.target.url.clone().unwrap_or_default(),
                    set: a.set.into(),
                    lines: a.workload.lines.unwrap_or(1_000_000),
                    streams: a.workload.streams,
                    seed: a.workload.seed,
                    shape: a.workload.shape.into(),
                    span_secs: a.workload.span_secs,
                    end_ns: a.workload.end_ns,
                    concurrency: a.target.concurrency,
                    batch_lines: a.target.batch_lines,
                    step_secs: a.step_secs,
                    warm_runs: a.warm_runs,
                    cold_runs: a.cold_runs,
                    cold_restart: !a.no_cold_restart,
                    drop_page_cache: !a.no_drop_page_cache,
                    pid: a.target.pid,
                    victorialogs: a
                        .victorialogs_bin
                        .clone()
                        .zip(a.victorialogs_data.clone())
                        .map(|(binary, data_dir)| {
                            runakefli_bench::query_bench::VictoriaLogsTarget { binary, data_dir }
                        }),
                    ..QueryBenchConfig::default()
                };
            let mut own = if a.target.url.is_none() {
                plan_data_dir(&a, &mut config)?;
                Some(start_own_server(&a.target)?)
            } else {
                None
            };
            let server = own.as_mut().map(|s| s as &mut dyn ServerProcess);
            let report = run_query_bench(&config, server)?;
            println!("{report}");
            write_json(&a.target.json, &report)
        }
    }
}
