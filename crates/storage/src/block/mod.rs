//! Per-stream blocks: the unit of encoding and reading inside a part.
//!
//! A block holds the rows of ONE stream, sorted by time: delta-coded
//! timestamps, structured metadata, and the lines decomposed into columns.
//! JSON-object lines are split into a *template* (keys, punctuation and
//! whitespace, dictionary-coded per block) and one column per field holding
//! the raw value text; other lines are kept whole in a line column. Each
//! column picks its own exact encoding (constant, dictionary, decimal,
//! timestamp, packed hex, IPv4, plain). A token bloom filter in the header
//! lets [`block_may_contain`] skip blocks for `|=` filters. The byte layout
//! is in `FORMAT.md` beside this file.
//!
//! Modules: [`builder`] writes, [`reader`] reads, [`layout`] is the header,
//! [`encoding`] the column encodings, `shape` the JSON template splitter,
//! `text` the exact text forms of typed values, `tokens` tokens and bloom.

pub mod builder;
pub mod encoding;
mod hash;
mod ints;
pub mod layout;
mod prefilter;
pub mod reader;
mod shape;
mod text;
mod tokens;
mod varint;

#[cfg(test)]
mod testgen;
#[cfg(test)]
mod tests;

pub use builder::BlockBuilder;
pub use encoding::{Encoding, Stats};
pub use reader::{BlockReader, Column};

use crate::StorageError;
use layout::BlockHeader;
use tokens::{complete_tokens, Bloom};

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
pub fn decode_block(src: &[u8]) -> Result<DecodedBlock, StorageError> {
    let r = BlockReader::open(src)?;
    let lines = r.lines()?;
    Ok(DecodedBlock {
        ts: r.timestamps().to_vec(),
        lines,
        metadata: r.metadata().to_vec(),
    })
}

/// Whether the block may hold a line containing every one of `substrings`.
/// `false` only when the block's indexes prove no line can match.
///
/// Only the header is read. For each needle, the tokens lying whole inside it
/// (bounded by non-token bytes within the needle) must each appear in some
/// column, template or metadata of the block; a needle without such a token
/// proves nothing. A damaged header answers `true` (reading will report it).
pub fn block_may_contain(src: &[u8], substrings: &[String]) -> bool {
    let Ok((header, _)) = BlockHeader::decode(src) else {
        return true;
    };
    let bloom = Bloom::new(&header.bloom);
    let token_may_exist = |t: &[u8]| {
        bloom.may_contain(t)
            || header
                .columns
                .iter()
                .any(|c| !c.encoding.has_bloom() && c.encoding.token_fits(t, &c.prefix))
    };
    substrings.iter().all(|s| {
        complete_tokens(s.as_bytes())
            .into_iter()
            .all(token_may_exist)
    })
}
