//! Prints what a part's blocks hold: rows, templates, and per column its
//! encoding and sizes. `cargo run --release -p runakefli-storage --example
//! part_inspect -- PART_FILE [BLOCKS]`
use runakefli_storage::block::layout::BlockHeader;
use runakefli_storage::block::BlockReader;
use runakefli_storage::part::{Part, PartInfo};
use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::Path::new(&args[1]);
    let max: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(usize::MAX);
    let info = PartInfo { id: 0, order: 0, level: 1, rows: 0, bytes: 0 };
    let part = Part::open(path, info).expect("open part");
    let mut blocks = 0usize;
    let mut rows = 0usize;
    let mut templates = 0usize;
    let mut header_bytes = 0usize;
    let mut bloom_bytes = 0usize;
    let mut total_bytes = 0usize;
    // name -> (encoding histogram, stored bytes, raw bytes, values)
    let mut cols: BTreeMap<String, (BTreeMap<String, usize>, usize, usize, usize)> = BTreeMap::new();
    let mut distinct: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    'outer: for &sid in part.stream_ids() {
        for b in part.stream_blocks(sid) {
            if blocks >= max {
                break 'outer;
            }
            let bytes = part.block_bytes(b).unwrap();
            let h = BlockHeader::decode(bytes).unwrap();
            header_bytes += h.body_start;
            bloom_bytes += h.bloom.len();
            total_bytes += bytes.len();
            let r = BlockReader::open(bytes).unwrap();
            blocks += 1;
            rows += r.rows();
            templates += r.template_count();
            for (ci, c) in h.columns.iter().enumerate() {
                let name = String::from_utf8_lossy(c.name).into_owned();
                let e = cols.entry(name).or_default();
                *e.0.entry(format!("{:?}{}", c.encoding, if c.has_grams { "+g" } else { "" })).or_default() += 1;
                e.3 += 1;
                if let Some(p) = c.place {
                    e.2 += p.len;
                    if p.frame >= 4 {
                        e.1 += h.frames[p.frame].stored_len;
                    }
                }
                let _ = ci;
            }
            for name in ["msg", "user_id", "path", "level", "status", "user_agent", "caller"] {
                if let Some(c) = r.column(name).unwrap() {
                    let d: std::collections::HashSet<&str> = c.iter().flatten().collect();
                    let e = distinct.entry(name).or_insert((0, 0));
                    e.0 += d.len();
                    e.1 += c.iter().flatten().count();
                }
            }
        }
    }
    println!("blocks {blocks} rows {rows} rows/block {:.1} templates/block {:.2}", rows as f64 / blocks as f64, templates as f64 / blocks as f64);
    println!("bytes/block {:.0} header/block {:.0} bloom/block {:.0}", total_bytes as f64 / blocks as f64, header_bytes as f64 / blocks as f64, bloom_bytes as f64 / blocks as f64);
    for (n, (d, v)) in &distinct {
        println!("{n}: distinct/block {:.1} values/block {:.1}", *d as f64 / blocks as f64, *v as f64 / blocks as f64);
    }
    for (name, (encs, stored, raw, n)) in cols {
        println!("{name:20} in {n:6} blocks: raw {:.0} B/block, own-frame stored {:.0} B/block {encs:?}", raw as f64 / blocks as f64, stored as f64 / blocks as f64);
    }
}
