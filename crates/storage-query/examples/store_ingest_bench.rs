//! Ingest benchmark of the storage engine alone: appends synthetic Kubernetes
//! JSON logs (~750 bytes a line) over many streams from several threads in
//! batches, flushes, waits for merges to settle, and reports wall time, CPU
//! time (getrusage, minus the CPU the generator itself used), bytes on disk per
//! line, WAL bytes written per line and peak RSS.
//!
//! `cargo run --release -p runakefli-storage-query --example store_ingest_bench -- [lines] [streams] [threads]`
//! (defaults 1000000 5000 2). The data directory is a temp dir under $TMPDIR.
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a developer's measuring tool: its report is its output, a failure ends it"
)]

use runakefli_model::{Entry, Labels, PushRequest, PushStream, TenantId};
use runakefli_storage::StorageConfig;
use runakefli_storage_query::EmbeddedBackend;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn hex(&mut self, n: usize) -> String {
        let mut s = String::with_capacity(n);
        while s.len() < n {
            s.push_str(&format!("{:016x}", self.next()));
        }
        s.truncate(n);
        s
    }
}

const NAMESPACES: &[&str] = &[
    "payments", "checkout", "search", "auth", "catalog", "billing", "shipping", "ads",
];
const METHODS: &[&str] = &["GET", "GET", "GET", "POST", "PUT", "DELETE"];
const PATHS: &[&str] = &[
    "/api/v1/orders",
    "/api/v1/users",
    "/api/v2/cart/items",
    "/healthz",
    "/api/v1/search",
    "/metrics",
];
const LEVELS: &[&str] = &["info", "info", "info", "info", "debug", "warn", "error"];
const MSGS: &[&str] = &[
    "request completed",
    "request completed",
    "upstream call finished",
    "cache miss, fetching from database",
    "retrying request after transient failure",
    "user session refreshed",
];

fn stream_labels(s: u64) -> Labels {
    let ns = NAMESPACES[(s % NAMESPACES.len() as u64) as usize];
    Labels::new(vec![
        ("namespace".into(), ns.into()),
        ("app".into(), format!("{ns}-svc{}", s % 50)),
        (
            "pod".into(),
            format!(
                "{ns}-svc{}-{:08x}",
                s % 50,
                s.wrapping_mul(0x9e37_79b9) as u32
            ),
        ),
        ("container".into(), "main".into()),
        ("cluster".into(), "prod-eu-1".into()),
    ])
}

fn line(r: &mut Rng, s: u64, ts: i64) -> String {
    let ns = NAMESPACES[(s % NAMESPACES.len() as u64) as usize];
    let secs = ts / 1_000_000_000;
    let micros = (ts / 1000) % 1_000_000;
    format!(
        concat!(
            r#"{{"ts":"2026-11-30T{:02}:{:02}:{:02}.{:06}Z","level":"{}","logger":"http.server","caller":"server/handler.go:{}","#,
            r#""msg":"{}","method":"{}","path":"{}/{}","status":{},"duration_ms":{}.{:02},"bytes_out":{},"#,
            r#""user_agent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36","#,
            r#""trace_id":"{}","span_id":"{}","request_id":"{}-{}-4{}-{}-{}","#,
            r#""k8s":{{"namespace":"{}","pod":"{}-svc{}-{:08x}","container":"main","node":"ip-10-0-{}-{}.eu-west-1.compute.internal"}},"#,
            r#""client_ip":"10.{}.{}.{}","tenant":"customer-{}","region":"eu-west-1","feature_flags":["new-checkout","fast-search"],"attempt":{}}}"#
        ),
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60,
        micros,
        r.pick(LEVELS),
        100 + r.below(400),
        r.pick(MSGS),
        r.pick(METHODS),
        r.pick(PATHS),
        r.below(100_000),
        if r.below(20) == 0 { 500 } else { 200 },
        r.below(300),
        r.below(100),
        r.below(50_000),
        r.hex(32),
        r.hex(16),
        r.hex(8),
        r.hex(4),
        r.hex(3),
        r.hex(4),
        r.hex(12),
        ns,
        ns,
        s % 50,
        s.wrapping_mul(0x9e37_79b9) as u32,
        s % 256,
        (s / 7) % 256,
        r.below(256),
        r.below(256),
        r.below(256),
        r.below(2000),
        r.below(3),
    )
}

fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer for clock_gettime.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn process_usage() -> (Duration, u64) {
    // SAFETY: getrusage fills the zeroed struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec * 1000) as u32);
    (tv(u.ru_utime) + tv(u.ru_stime), u.ru_maxrss as u64 * 1024)
}

fn du(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(path) {
        for e in rd.flatten() {
            let Ok(m) = e.metadata() else { continue };
            total += if m.is_dir() {
                du(&e.path())
            } else {
                m.blocks() * 512
            };
        }
    }
    total
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numeric argument"))
        .collect();
    let lines = args.first().copied().unwrap_or(1_000_000);
    let streams = args.get(1).copied().unwrap_or(5_000);
    let threads = args.get(2).copied().unwrap_or(2);
    let batch = 1000u64;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = StorageConfig::new(dir.path());
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<i64>().ok());
    if let Some(v) = env("STORE_MERGE_LEVEL") {
        cfg.merge_zstd_level = v as i32;
    }
    if let Some(v) = env("STORE_FLUSH_LEVEL") {
        cfg.flush_zstd_level = v as i32;
    }
    if let Some(v) = env("STORE_WAL_LEVEL") {
        cfg.wal_zstd_level = v as i32;
    }
    if let Some(v) = env("STORE_MEMTABLE_MB") {
        cfg.memtable_flush_bytes = (v as usize) << 20;
    }
    let s = EmbeddedBackend::open(cfg).expect("open");
    let tenant = TenantId::new("bench");
    let t0 = Instant::now();
    let (cpu0, _) = process_usage();
    if std::env::var("STORE_RSS_TRACE").is_ok() {
        let s2 = s.clone();
        std::thread::spawn(move || loop {
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            let rss = status
                .lines()
                .find(|l| l.starts_with("VmRSS"))
                .unwrap_or("")
                .to_string();
            let st = s2.storage().stats();
            eprintln!(
                "{:>6.1}s {rss} mem {} MiB merges {}",
                t0.elapsed().as_secs_f64(),
                st.memtable_bytes >> 20,
                st.merges_running
            );
            std::thread::sleep(Duration::from_millis(500));
        });
    }
    let gen_cpu: Vec<Duration> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads)
            .map(|th| {
                let s: Arc<EmbeddedBackend> = s.clone();
                let tenant = tenant.clone();
                sc.spawn(move || {
                    let mut r = Rng(0x1234_5678 + th * 7919);
                    let mut gen = Duration::ZERO;
                    let batches = lines / batch / threads;
                    for b in 0..batches {
                        let g0 = thread_cpu();
                        // One batch: 1000 lines over 100 streams, 10 each, as an agent would send.
                        let mut req = PushRequest::default();
                        for k in 0..100 {
                            let sid = (r.below(streams) + k) % streams;
                            let base = 1_796_000_000_000_000_000i64
                                + ((b * threads + th) as i64) * 10_000_000;
                            let entries = (0..batch / 100)
                                .map(|j| {
                                    let ts = base + j as i64 * 1000 + k as i64;
                                    Entry {
                                        ts,
                                        line: line(&mut r, sid, ts),
                                        metadata: vec![],
                                    }
                                })
                                .collect();
                            req.streams.push(PushStream {
                                labels: stream_labels(sid),
                                entries,
                            });
                        }
                        gen += thread_cpu() - g0;
                        s.storage().append(&tenant, &req).expect("append");
                    }
                    gen
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("worker")).collect()
    });
    let ingest_wall = t0.elapsed();
    s.storage().flush().expect("flush");
    loop {
        let st = s.storage().stats();
        if st.merges_running == 0 && st.merge_backlog == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let wall = t0.elapsed();
    let (cpu1, maxrss) = process_usage();
    let gen: Duration = gen_cpu.iter().sum();
    let st = s.storage().stats();
    let n = st.appended_rows as f64;
    let storage_cpu = (cpu1 - cpu0).saturating_sub(gen);
    println!(
        "lines {} streams {} threads {}",
        st.appended_rows, streams, threads
    );
    println!(
        "ingest wall {:.2}s, total wall incl. flush+merges {:.2}s",
        ingest_wall.as_secs_f64(),
        wall.as_secs_f64()
    );
    println!(
        "cpu total {:.2}s, generator {:.2}s, storage {:.2}s = {:.2} cpu-s per million lines",
        (cpu1 - cpu0).as_secs_f64(),
        gen.as_secs_f64(),
        storage_cpu.as_secs_f64(),
        storage_cpu.as_secs_f64() / n * 1e6
    );
    println!(
        "disk (du) {:.1} MiB = {:.1} B/line; parts {} ({:.1} B/line); wal written {:.1} B/line",
        du(dir.path()) as f64 / (1 << 20) as f64,
        du(dir.path()) as f64 / n,
        st.parts,
        st.part_bytes as f64 / n,
        st.wal_bytes_written as f64 / n
    );
    println!(
        "cpu split per million lines: flush {:.2}s, merge {:.2}s, append path (rest) {:.2}s",
        st.flush_cpu_ms as f64 / 1e3 / n * 1e6,
        st.merge_cpu_ms as f64 / 1e3 / n * 1e6,
        (storage_cpu.as_secs_f64() - (st.flush_cpu_ms + st.merge_cpu_ms) as f64 / 1e3) / n * 1e6
    );
    println!(
        "flushes {} merges {} merged rows {} peak rss {:.0} MiB",
        st.flushes,
        st.merges_done,
        st.merged_rows,
        maxrss as f64 / (1 << 20) as f64
    );
    println!("{st:?}");
    // Read everything back once (all streams, backward) and time it.
    let c0 = thread_cpu();
    let w0 = Instant::now();
    let req = runakefli_model::ScanRequest {
        tenant: tenant.clone(),
        matchers: vec![runakefli_model::Matcher::new(
            "cluster",
            runakefli_model::MatchOp::Eq,
            "prod-eu-1",
        )
        .expect("matcher")],
        start: i64::MIN,
        end: i64::MAX,
        direction: runakefli_model::Direction::Backward,
        required_substrings: vec![],
        shard: None,
        cutoff: None,
    };
    let mut read = 0u64;
    runakefli_model::Backend::scan(&*s, &req, &mut |_, b| {
        read += b.entries.len() as u64;
        runakefli_model::ScanControl::Continue
    })
    .expect("scan");
    println!(
        "full scan: {read} entries in {:.2}s wall, {:.2}s cpu",
        w0.elapsed().as_secs_f64(),
        (thread_cpu() - c0).as_secs_f64()
    );
    if std::env::var("STORE_LIST").is_ok() {
        let _ = std::process::Command::new("find")
            .arg(dir.path())
            .arg("-ls")
            .status();
    }
}
