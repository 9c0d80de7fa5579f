//! Prints what a part's blocks hold: rows, templates, and per column its
//! encoding and sizes. `cargo run --release -p runakefli-storage --example
//! part_inspect -- PART_FILE [BLOCKS]`
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a developer's measuring tool: its report is its output, a failure ends it"
)]
use runakefli_storage::block::layout::BlockHeader;
use runakefli_storage::part::Part;
use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::Path::new(&args[1]);
    let max: usize = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(usize::MAX);
    let part = Part::open_file(path).expect("open part");
    let mut blocks = 0usize;
    let mut rows = 0usize;
    let mut templates = 0usize;
    let mut header_bytes = 0usize;
    let mut bloom_bytes = 0usize;
    let mut total_bytes = 0usize;
    // name -> (encoding histogram, stored bytes, raw bytes, values)
    let mut cols: BTreeMap<String, (BTreeMap<String, usize>, usize, usize, usize)> =
        BTreeMap::new();
    let mut distinct: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut fr = (0usize, 0usize, 0usize, 0usize, 0usize);
    'outer: for &sid in part.stream_ids() {
        for b in part.stream_blocks(sid) {
            if blocks >= max {
                break 'outer;
            }
            let bytes = part.block_bytes(b).unwrap();
            let h = BlockHeader::decode(bytes).unwrap();
            header_bytes += h.body_start;
            fr.0 += h.frames[3].raw_len;
            fr.1 += h.frames[3].stored_len;
            fr.2 += h.frames[0].raw_len;
            fr.3 += h.frames[0].stored_len;
            fr.4 += h.frames.len();
            bloom_bytes += h.bloom.len();
            total_bytes += bytes.len();
            let r = part.reader(b).unwrap();
            blocks += 1;
            rows += r.rows();
            templates += r.template_count();
            for (ci, c) in h.columns.iter().enumerate() {
                let name = String::from_utf8_lossy(&c.name).into_owned();
                let e = cols.entry(name).or_default();
                *e.0.entry(format!(
                    "{:?}{}",
                    c.encoding,
                    if c.has_grams { "+g" } else { "" }
                ))
                .or_default() += 1;
                e.3 += 1;
                if let Some(p) = c.place {
                    e.2 += p.len;
                    if p.frame >= 4 {
                        e.1 += h.frames[p.frame].stored_len;
                    }
                }
                let _ = ci;
            }
            for name in [
                "msg",
                "user_id",
                "path",
                "level",
                "status",
                "user_agent",
                "caller",
            ] {
                if let Some(c) = r.column(name).unwrap() {
                    let d: std::collections::HashSet<&str> = c.iter().flatten().collect();
                    let e = distinct.entry(name).or_insert((0, 0));
                    e.0 += d.len();
                    e.1 += c.iter().flatten().count();
                }
            }
        }
    }
    if let Ok(c) = std::env::var("GLOBAL") {
        global_distinct(&part, &c);
        return;
    }
    if std::env::var("DIRMODES").is_ok() {
        directory_modes(&part, 5000);
        return;
    }
    if std::env::var("TOKENS").is_ok() {
        token_counts(&part, 200);
    }
    if std::env::var("PACK").is_ok() {
        pack_estimate(&part, 300);
        return;
    }
    if let Ok(c) = std::env::var("TIME_COLUMN") {
        time_column(&part, &c);
        return;
    }
    for (i, d) in part.dicts().iter().enumerate() {
        println!(
            "shared dict {i} {}: {} entries",
            String::from_utf8_lossy(d.name()),
            d.len()
        );
    }
    println!("frames: small frame raw {:.0} stored {:.0}; directory raw {:.0} stored {:.0}; frames/block {:.1}", fr.0 as f64 / blocks as f64, fr.1 as f64 / blocks as f64, fr.2 as f64 / blocks as f64, fr.3 as f64 / blocks as f64, fr.4 as f64 / blocks as f64);
    println!(
        "blocks {blocks} rows {rows} rows/block {:.1} templates/block {:.2}",
        rows as f64 / blocks as f64,
        templates as f64 / blocks as f64
    );
    println!(
        "bytes/block {:.0} header/block {:.0} bloom/block {:.0}",
        total_bytes as f64 / blocks as f64,
        header_bytes as f64 / blocks as f64,
        bloom_bytes as f64 / blocks as f64
    );
    let packed = part.packed_columns();
    println!(
        "packed heads: {} distinct column records, {} bytes",
        packed.distinct(),
        packed.heap_bytes()
    );
    let groups = part.bloom_groups();
    println!(
        "filter groups: {} groups of {} blocks, {} bytes",
        groups.len(),
        groups.grouped_blocks(),
        groups.heap_bytes()
    );
    for (n, (d, v)) in &distinct {
        println!(
            "{n}: distinct/block {:.1} values/block {:.1}",
            *d as f64 / blocks as f64,
            *v as f64 / blocks as f64
        );
    }
    for (name, (encs, stored, raw, n)) in cols {
        println!(
            "{name:20} in {n:6} blocks: raw {:.0} B/block, own-frame stored {:.0} B/block {encs:?}",
            raw as f64 / blocks as f64,
            stored as f64 / blocks as f64
        );
    }
}

/// Distinct tokens and grams per column of the first blocks (bloom sizing).
#[allow(dead_code)]
pub fn token_counts(part: &Part, max: usize) {
    use runakefli_storage::block::tokens::for_each_token;
    let mut per: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut blocks = 0;
    'o: for &sid in part.stream_ids() {
        for b in part.stream_blocks(sid) {
            if blocks >= max {
                break 'o;
            }
            blocks += 1;
            let r = part.reader(b).unwrap();
            for name in r.column_names() {
                let c = r.column(&name).unwrap().unwrap();
                let mut toks = std::collections::HashSet::new();
                let mut grams = std::collections::HashSet::new();
                for v in c.iter().flatten() {
                    for_each_token(v.as_bytes(), |t| {
                        toks.insert(t.to_vec());
                        if t.len() >= 8 {
                            for g in t.windows(8) {
                                grams.insert(g.to_vec());
                            }
                        }
                    });
                }
                let e = per.entry(name).or_default();
                e.0 += toks.len();
                e.1 += grams.len();
            }
        }
    }
    for (n, (t, g)) in per {
        println!(
            "{n:20} tokens/block {:7.1} grams/block {:7.1}",
            t as f64 / blocks as f64,
            g as f64 / blocks as f64
        );
    }
}

/// Times reading one column of every block: header, directory, the column's frame.
#[allow(dead_code)]
pub fn time_column(part: &Part, name: &str) {
    // Touch every page once so later passes measure decoding, not faults.
    let mut sum = 0u64;
    for &sid in part.stream_ids() {
        for b in part.stream_blocks(sid) {
            let src = part.block_self_checked(b).unwrap();
            for i in (0..src.len()).step_by(4096) {
                sum += u64::from(src[i]);
            }
        }
    }
    println!("touched ({sum})");
    let t0 = std::time::Instant::now();
    let mut n = 0usize;
    let mut bytes = 0usize;
    for &sid in part.stream_ids() {
        for b in part.stream_blocks(sid) {
            let src = part.block_self_checked(b).unwrap();
            let h = BlockHeader::decode(src).unwrap();
            n += h.rows;
        }
    }
    let t_header = t0.elapsed();
    let t0 = std::time::Instant::now();
    for &sid in part.stream_ids() {
        for b in part.stream_blocks(sid) {
            let r = part.reader(b).unwrap();
            n += r.rows();
        }
    }
    let t_open = t0.elapsed();
    let t0 = std::time::Instant::now();
    for &sid in part.stream_ids() {
        for b in part.stream_blocks(sid) {
            let r = part.reader(b).unwrap();
            if let Some(c) = r.column_names().iter().position(|x| x == name) {
                let _ = c;
            }
            let id = r.column_names().iter().position(|x| x == name);
            if let Some(id) = id {
                r.with_column_payload(id, |p| {
                    bytes += p.len();
                    Ok(())
                })
                .unwrap();
            }
        }
    }
    let t_col = t0.elapsed();
    println!("{name}: header-only {:?}, open (header+directory) {:?}, open+column frame {:?}, column raw bytes {bytes} rows {n}", t_header, t_open, t_col);
}

/// Compares, per column, zstd-compressed payloads with bit-packed dictionary
/// indices (entries compressed apart).
#[allow(dead_code)]
pub fn pack_estimate(part: &Part, max: usize) {
    use runakefli_storage::block::encoding::Values;
    let mut per: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut dir = (0usize, 0usize);
    let mut blocks = 0;
    'o: for &sid in part.stream_ids() {
        for b in part.stream_blocks(sid) {
            if blocks >= max {
                break 'o;
            }
            blocks += 1;
            let src = part.block_self_checked(b).unwrap();
            let h = BlockHeader::decode(src).unwrap();
            dir.0 += h.frames[0].stored_len;
            let rows = h.rows;
            let ts_bits = 64 - {
                let r = part.reader(b).unwrap();
                let ts = r.timestamps();
                let mut m = 0u64;
                for w in ts.windows(2) {
                    m = m.max((w[1] - w[0]) as u64);
                }
                m.leading_zeros() as usize
            };
            let tpl_bits =
                (usize::BITS - h.templates.len().saturating_sub(1).leading_zeros()) as usize;
            dir.1 += (rows * (ts_bits + tpl_bits)).div_ceil(8);
            let r = part.reader(b).unwrap();
            for (ci, c) in h.columns.iter().enumerate() {
                let name = String::from_utf8_lossy(&c.name).into_owned();
                let p = c.place.unwrap();
                let stored = if p.frame >= 4 {
                    h.frames[p.frame].stored_len
                } else {
                    p.len / 2
                };
                let e = per.entry(name).or_default();
                e.0 += stored;
                if let Values::Dict { data, ends, idx } = r.column_values(ci).unwrap() {
                    let d = ends.len();
                    let w = (usize::BITS - d.saturating_sub(1).leading_zeros()) as usize;
                    let idx_bytes = (idx.len() * w).div_ceil(8);
                    let ent = zstd::bulk::compress(&data, 3)
                        .unwrap()
                        .len()
                        .min(data.len())
                        + d;
                    e.1 += idx_bytes + ent;
                } else {
                    e.1 += stored;
                }
                e.2 += p.len;
            }
        }
    }
    println!(
        "directory: zstd {:.0} B/block, bitpacked {:.0} B/block",
        dir.0 as f64 / blocks as f64,
        dir.1 as f64 / blocks as f64
    );
    let (mut a, mut b) = (0, 0);
    for (n, (z, p, raw)) in per {
        a += z;
        b += p;
        println!(
            "{n:20} zstd {:6.0} packed {:6.0} raw {:6.0}",
            z as f64 / blocks as f64,
            p as f64 / blocks as f64,
            raw as f64 / blocks as f64
        );
    }
    println!(
        "total zstd {:.0} packed {:.0} B/block",
        a as f64 / blocks as f64,
        b as f64 / blocks as f64
    );
}

/// How a column's values repeat across the part's blocks: distinct values
/// overall, and how many rows hold a value found in two or more blocks.
pub fn global_distinct(part: &Part, name: &str) {
    use std::collections::HashMap;
    let mut seen: HashMap<String, (usize, usize, usize)> = HashMap::new(); // blocks, rows, last block
    let mut blocks = 0usize;
    for &sid in part.stream_ids() {
        for b in part.stream_blocks(sid) {
            blocks += 1;
            let r = part.reader(b).unwrap();
            if let Some(c) = r.column(name).unwrap() {
                for v in c.iter().flatten() {
                    let v = if std::env::var("SKELETON").is_ok() {
                        let mut out = String::new();
                        let mut prev_digit = false;
                        for ch in v.chars() {
                            if ch.is_ascii_digit() {
                                if !prev_digit {
                                    out.push('#');
                                }
                                prev_digit = true;
                            } else {
                                out.push(ch);
                                prev_digit = false;
                            }
                        }
                        out
                    } else {
                        v.to_string()
                    };
                    let e = seen.entry(v).or_insert((0, 0, usize::MAX));
                    e.1 += 1;
                    if e.2 != blocks {
                        e.2 = blocks;
                        e.0 += 1;
                    }
                }
            }
        }
    }
    let rows: usize = seen.values().map(|e| e.1).sum();
    let bytes: usize = seen.keys().map(|k| k.len()).sum();
    for min_blocks in [2usize, 4, 16, 64] {
        let shared: Vec<_> = seen.iter().filter(|(_, e)| e.0 >= min_blocks).collect();
        let srows: usize = shared.iter().map(|(_, e)| e.1).sum();
        let sbytes: usize = shared.iter().map(|(k, _)| k.len()).sum();
        println!("{name}: values in >= {min_blocks} blocks: {} distinct ({sbytes} B) cover {srows} of {rows} rows", shared.len());
    }
    println!(
        "{name}: {} distinct overall, {bytes} B, {blocks} blocks",
        seen.len()
    );
}

/// Modes of the directory's integer streams (row templates, timestamps).
#[allow(dead_code)]
pub fn directory_modes(part: &Part, max: usize) {
    let mut modes: BTreeMap<(u8, u8, u8, u8), usize> = BTreeMap::new();
    let mut n = 0;
    'o: for &sid in part.stream_ids() {
        for b in part.stream_blocks(sid) {
            if n >= max {
                break 'o;
            }
            n += 1;
            let src = part.block_self_checked(b).unwrap();
            let h = BlockHeader::decode(src).unwrap();
            let f = &src[h.body_start..h.body_start + h.frames[0].stored_len];
            let (m1, w1, rest) = if h.templates.len() > 1 {
                (f[0], f[1], &f[2 + (h.rows * f[1] as usize).div_ceil(8)..])
            } else {
                (255, 0, f)
            };
            // rest: uvarint gcd then mode
            let mut i = 0;
            while rest[i] & 0x80 != 0 {
                i += 1;
            }
            let m2 = rest[i + 1];
            let w2 = rest[i + 2];
            *modes.entry((m1, w1, m2, w2)).or_default() += 1;
        }
    }
    for (k, v) in modes {
        println!(
            "row tpl mode {} width {}, ts mode {} width {}: {v} blocks",
            k.0, k.1, k.2, k.3
        );
    }
}
