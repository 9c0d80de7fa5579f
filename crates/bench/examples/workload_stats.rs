//! Prints the generator's totals for N lines (default 1,000,000) and how fast it
//! generates and encodes them: `cargo run --release -p runakefli-bench --example workload_stats [N]`.
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a developer's measuring tool: its report is its output, a failure ends it"
)]

use std::time::Instant;

use runakefli_bench::push::encode_push_owned;
use runakefli_bench::{Generator, GeneratorConfig};

fn main() -> anyhow::Result<()> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let mut gen = Generator::new(GeneratorConfig {
        lines: n,
        ..GeneratorConfig::default()
    })?;
    let t0 = Instant::now();
    let mut body_bytes = 0usize;
    let mut left = n;
    while left > 0 {
        let k = left.min(1_000);
        let batch = gen.fill_batch(k as usize);
        body_bytes += encode_push_owned(&gen, batch).len();
        left -= k;
    }
    let secs = t0.elapsed().as_secs_f64();
    println!("{}", gen.stats());
    println!(
        "generated and encoded {n} lines in {secs:.2} s ({:.0} lines/s)",
        n as f64 / secs
    );
    println!(
        "protobuf+snappy bodies: {body_bytes} bytes ({:.1} B/line)",
        body_bytes as f64 / n as f64
    );
    Ok(())
}
