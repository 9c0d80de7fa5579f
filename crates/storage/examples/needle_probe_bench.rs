//! Times a first probe of every block of a part for each needle (the work a
//! search for a needle new to the process does before it reads any row):
//! `cargo run --release -p runakefli-storage --example needle_probe_bench --
//! PART_FILE ROUNDS NEEDLE…`. Each round probes with a needle changed in its
//! last byte so no CPU cache holds what the round before touched.
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a developer's measuring tool: its report is its output, a failure ends it"
)]
use runakefli_storage::block::prune::NeedleProbe;
use runakefli_storage::part::{Part, PartInfo};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::Path::new(&args[1]);
    let rounds: usize = args[2].parse().unwrap();
    let info = PartInfo {
        id: 0,
        order: 0,
        level: 1,
        rows: 0,
        bytes: 0,
    };
    let part = Part::open(path, info).expect("open part");
    let blocks: Vec<_> = part
        .stream_ids()
        .iter()
        .flat_map(|&sid| part.stream_blocks(sid).iter().cloned())
        .collect();
    for needle in &args[3..] {
        let mut times = Vec::new();
        let mut kept = 0;
        for round in 0..rounds {
            let mut n = needle.as_bytes().to_vec();
            if round > 0 {
                let last = n.len() - 1;
                n[last] = b"0123456789abcdefghijklmnopqrstuvwxyz"[round % 36];
            }
            let probe = NeedleProbe::new(&n);
            let t = Instant::now();
            kept = 0;
            for b in &blocks {
                let h = part.header(b).unwrap();
                let src = part.block_self_checked(b).unwrap();
                let ok = match part.packed_head(b.index) {
                    Some(p) => probe.may_match_packed(p, p.block.bloom_bytes(src)),
                    None => probe.may_match(&h, h.bloom_bytes(src)),
                };
                kept += usize::from(ok);
            }
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
