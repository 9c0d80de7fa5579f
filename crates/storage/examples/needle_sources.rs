//! Prints, for each needle, how many of a part's blocks the header and bloom
//! cannot rule out, and which sources (templates, columns by name and
//! encoding) keep them in: the first question when a needle search reads
//! more blocks than it should. `cargo run --release -p runakefli-storage
//! --example needle_sources -- PART_FILE NEEDLE…`
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a developer's measuring tool: its report is its output, a failure ends it"
)]
use runakefli_storage::block::layout::BlockHeader;
use runakefli_storage::block::prune::needle_sources;
use runakefli_storage::part::Part;
use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::Path::new(&args[1]);
    let part = Part::open_file(path).expect("open part");
    for needle in &args[2..] {
        let (mut blocks, mut kept, mut kept_rows, mut rows) = (0usize, 0usize, 0usize, 0usize);
        // (fragment, source) -> blocks where that source keeps the fragment in.
        let mut sources: BTreeMap<(String, String), usize> = BTreeMap::new();
        for &sid in part.stream_ids() {
            for b in part.stream_blocks(sid) {
                let bytes = part.block_bytes(b).unwrap();
                let h = BlockHeader::decode(bytes).unwrap();
                let n = part.reader(b).unwrap().rows();
                blocks += 1;
                rows += n;
                let Some(frags) = needle_sources(&h, bytes, needle.as_bytes()) else {
                    continue;
                };
                kept += 1;
                kept_rows += n;
                for f in &frags {
                    let text = String::from_utf8_lossy(&f.text).into_owned();
                    if f.template {
                        *sources
                            .entry((text.clone(), "<templates>".into()))
                            .or_default() += 1;
                    }
                    for (c, &may) in f.columns.iter().enumerate() {
                        if may {
                            let col = &h.columns[c];
                            let name = format!(
                                "{} ({:?}{})",
                                String::from_utf8_lossy(&col.name),
                                col.encoding,
                                if col.has_grams { "+grams" } else { "" }
                            );
                            *sources.entry((text.clone(), name)).or_default() += 1;
                        }
                    }
                }
            }
        }
        println!("needle {needle:?}: {kept} of {blocks} blocks kept ({kept_rows} of {rows} rows)");
        let mut by_count: Vec<_> = sources.into_iter().collect();
        by_count.sort_by_key(|e| std::cmp::Reverse(e.1));
        for ((frag, source), n) in by_count.iter().take(25) {
            println!("  {frag:?} may lie in {source}: {n} blocks");
        }
    }
}
