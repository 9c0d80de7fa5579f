//! Times the fixed per-block steps of a query over every block of a part:
//! `cargo run --release -p runakefli-storage --example block_costs -- PART`.
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a developer's measuring tool: its report is its output, a failure ends it"
)]
use runakefli_storage::part::Part;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("part file");
    let part = Part::open_file(std::path::Path::new(&path)).expect("open part");
    let blocks: Vec<_> = part.all_blocks().cloned().collect();
    if std::env::var("READER_LOOP").is_ok() {
        let mut rows = 0;
        for _ in 0..200 {
            for b in &blocks {
                let r = part.reader(b).unwrap();
                rows += r.rows();
            }
        }
        println!("{rows}");
        return;
    }
    for round in 0..3 {
        let t = Instant::now();
        for b in &blocks {
            let h = part.header(b).unwrap();
            std::hint::black_box(&h);
        }
        let header = t.elapsed();
        let t = Instant::now();
        let mut rows = 0;
        for b in &blocks {
            let r = part.reader(b).unwrap();
            rows += r.rows();
        }
        let reader = t.elapsed();
        let t = Instant::now();
        let mut n = 0usize;
        for b in &blocks {
            let r = part.reader(b).unwrap();
            let names = r.column_names();
            if let Some(c) = names.iter().position(|x| x == "msg") {
                let v = r.shared_index_view(c).map(|v| v.global_count).unwrap_or(0);
                n += v;
            }
        }
        let msg_index = t.elapsed();
        let t = Instant::now();
        for b in &blocks {
            let r = part.reader(b).unwrap();
            let names = r.column_names();
            if let Some(c) = names.iter().position(|x| x == "msg") {
                if let Ok(v) = r.shared_index_view(c) {
                    let _ = std::hint::black_box(r.shared_strings(c, v.locals));
                }
            }
        }
        let msg_strings = t.elapsed();
        let t = Instant::now();
        for b in &blocks {
            let r = part.reader(b).unwrap();
            let names = r.column_names();
            if let Some(c) = names.iter().position(|x| x == "msg") {
                let _ = std::hint::black_box(r.column_values(c));
            }
        }
        let msg_values = t.elapsed();
        let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / blocks.len() as f64;
        println!(
            "round {round}: {} blocks, {rows} rows ({n}); per block: header {:.2} µs, reader {:.2} µs, +msg index {:.2} µs, +msg own strings {:.2} µs, +msg values {:.2} µs",
            blocks.len(),
            per(header),
            per(reader),
            per(msg_index),
            per(msg_strings),
            per(msg_values)
        );
    }
}
