//! Times a first probe of every block of a part for each needle (the work a
//! search for a needle new to the process does before it reads any row):
//! `cargo run --release -p runakefli-storage --example needle_probe_bench --
//! PART_FILE ROUNDS NEEDLE…`. Each round probes with a needle changed in its
//! last byte so no CPU cache holds what the round before touched (`SAME=1`:
//! the same needle every round, its bloom slots cached after the first;
//! `BY_GROUP=1`: judged group by group, see `part/bloom_groups.rs`).
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a developer's measuring tool: its report is its output, a failure ends it"
)]
use runakefli_storage::block::prune::NeedleProbe;
use runakefli_storage::part::Part;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::Path::new(&args[1]);
    let rounds: usize = args[2].parse().unwrap();
    let part = Part::open_file(path).expect("open part");
    let blocks: Vec<_> = part.all_blocks().cloned().collect();
    // BY_TIME=1: newest block first, as a backward log query takes them.
    let mut blocks = blocks;
    if std::env::var_os("BY_TIME").is_some() {
        blocks.sort_by_key(|b| std::cmp::Reverse(b.meta.max_ts));
    }
    for needle in &args[3..] {
        let mut times = Vec::new();
        let mut kept = 0;
        for round in 0..rounds {
            let mut n = needle.as_bytes().to_vec();
            if round > 0 && std::env::var_os("SAME").is_none() {
                let last = n.len() - 1;
                n[last] = b"0123456789abcdefghijklmnopqrstuvwxyz"[round % 36];
            }
            let probe = NeedleProbe::new(&n);
            let t = Instant::now();
            // THREADS=k: k threads probe the blocks taken alternately.
            let threads: usize = std::env::var("THREADS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(1);
            // BY_GROUP=1: each grouped block judged with its filter group
            // (one walk per group, as a query's first probe does), the
            // others one by one; one thread.
            if std::env::var_os("BY_GROUP").is_some() {
                let groups = part.bloom_groups();
                let prefixes = part.packed_columns().prefixes();
                kept = groups
                    .answers(&probe, prefixes)
                    .iter()
                    .filter(|a| a.1)
                    .count();
                for b in blocks.iter().filter(|b| !groups.is_grouped(b.index)) {
                    let h = part.header(b).unwrap();
                    let src = part.block_self_checked(b).unwrap();
                    kept += usize::from(probe.may_match(&h, h.bloom_bytes(src)));
                }
                times.push(t.elapsed().as_secs_f64() * 1e3);
                continue;
            }
            kept = std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|k| {
                        let (part, blocks, probe) = (&part, &blocks, &probe);
                        s.spawn(move || {
                            let mut kept = 0;
                            for b in blocks.iter().skip(k).step_by(threads) {
                                let h = part.header(b).unwrap();
                                let src = part.block_self_checked(b).unwrap();
                                let ok = match part.packed_head(b.index) {
                                    Some(p) => probe.may_match_packed(p, p.block.bloom_bytes(src)),
                                    None => probe.may_match(&h, h.bloom_bytes(src)),
                                };
                                kept += usize::from(ok);
                            }
                            kept
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).sum()
            });
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        if std::env::var_os("ROUNDS_SHOWN").is_some() {
            println!("{needle}: rounds ms {times:.2?}");
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{needle}: {} blocks, {kept} kept (last round); probe ms median {:.2} min {:.2} max {:.2}",
            blocks.len(),
            times[times.len() / 2],
            times[0],
            times[times.len() - 1]
        );
    }
}
