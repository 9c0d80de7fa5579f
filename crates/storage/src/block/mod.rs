//! Per-stream blocks: the unit of encoding and reading inside a part.
//!
//! A block holds the rows of ONE stream, sorted by time: delta-coded
//! timestamps, structured metadata, and the lines decomposed into columns.
//! JSON-object lines are split into a *template* (keys, punctuation and
//! whitespace, dictionary-coded per block) and one column per field holding
//! the raw value text; other lines are kept whole in a line column. Each
//! column picks its own exact encoding (constant, dictionary, decimal,
//! timestamp, packed hex, IPv4, plain, or — against the part's shared
//! dictionaries — shared values and skeletons with their digits packed
//! apart), in frames a reader decompresses one at a time. A token bloom filter after the header, keyed by token and
//! column, lets [`block_may_contain`] skip blocks (and readers skip columns)
//! for line filters. The byte layout is in `FORMAT.md` beside this file.
//!
//! Modules: [`builder`] writes, [`reader`] reads (a folder, one file per
//! thing read: frames, directory, timestamps, templates, metadata, columns,
//! shared columns, whole lines), [`layout`] is the header,
//! [`encoding`] the column encodings, [`shape`] the JSON template splitter,
//! `text` the exact text forms of typed values, [`tokens`] tokens,
//! [`bloom`] the filters, [`prune`] what a header proves about a needle,
//! [`shared`] the part-level dictionaries and [`digits`] skeletons.

pub mod bloom;
pub mod bloom_group;
pub mod builder;
pub mod digits;
pub mod encoding;
pub mod hash;
pub mod hex_search;
mod ints;
pub mod layout;
pub mod packed_head;
mod prefilter;
pub mod prune;
pub mod reader;
pub mod shape;
pub mod shared;
mod template_shapes;
mod text;
pub mod text_shape;
pub mod tokens;
mod varint;

#[cfg(test)]
mod golden_tests;
#[cfg(test)]
pub(crate) mod testgen;
#[cfg(test)]
mod tests;

pub use builder::BlockBuilder;
pub use encoding::{Encoding, Stats};
pub use prune::block_may_contain;
pub use reader::{BlockReader, Column, HeaderRef, RowMetadata, Template};
pub use shared::{SharedDictWriter, SharedDicts};

use crate::StorageError;

/// Summary of an encoded block, kept in the part index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockMeta {
    /// Number of rows.
    pub rows: u32,
    /// Smallest timestamp in the block.
    pub min_ts: i64,
    /// Largest timestamp in the block.
    pub max_ts: i64,
    /// Sum of line lengths (uncompressed), for stats and volume.
    pub line_bytes: u64,
}

/// Rows of a decoded block, in the order they were pushed into the builder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecodedBlock {
    /// Timestamps, nanoseconds.
    pub ts: Vec<i64>,
    /// Lines, byte-identical to what was pushed.
    pub lines: Vec<String>,
    /// Structured metadata per row.
    pub metadata: Vec<Vec<(String, String)>>,
}

/// Decodes a whole block (`src` must be exactly one block).
/// Every checksum is verified, the bloom's included.
pub fn decode_block(src: &[u8]) -> Result<DecodedBlock, StorageError> {
    decode_block_in(src, None)
}

/// Like [`decode_block`], for a block of a part with shared dictionaries.
pub fn decode_block_in(
    src: &[u8],
    dicts: Option<&shared::SharedDicts>,
) -> Result<DecodedBlock, StorageError> {
    let r = BlockReader::with_header_in(
        src,
        HeaderRef::Owned(layout::BlockHeader::decode(src)?),
        dicts,
    )?;
    r.header().check_bloom(src)?;
    // Queries may build templates from the texts kept by id without
    // reading the frame; a whole decode checks it.
    r.check_templates_frame()?;
    let lines = r.lines()?;
    Ok(DecodedBlock {
        ts: r.timestamps().to_vec(),
        lines,
        metadata: r.metadata()?.to_vec(),
    })
}
