//! Substring pre-filtering on columns: which rows of a block may hold a line
//! containing a needle, decided from the templates and the columns' values
//! without rebuilding any line.
//!
//! A line is its template's pieces with the row's values in the slots. Call
//! *boundary bytes* the bytes of a template that touch a slot: the last byte
//! of the piece before it and the first byte of the piece after it (quotes,
//! `:`, `,`, `}`, whitespace — whatever the template has there). A match of a
//! needle that reaches from a value into a piece (or across a slot into the
//! next piece) contains the boundary byte next to that value. So a fragment
//! of the needle that holds no boundary byte of the row's template (and no
//! slot byte) can only occur wholly inside one piece or wholly inside one
//! value. Splitting a needle at boundary bytes gives fragments that must each
//! occur in the line; each is tested once per template and once per distinct
//! value (dictionary entries, constants), never per rebuilt line.
//!
//! The test is a necessary condition: a row it keeps may still lack the
//! needle (the engine runs the real filter on the rebuilt line); a row it
//! drops cannot contain it. Templates whose pieces between two slots are
//! empty (no valid JSON template has them) keep every row.

use super::encoding::{Encoding, Values};
use super::reader::BlockReader;
use super::shape::SLOT;
use crate::StorageError;
use memchr::memmem::Finder;

/// Whether a value printed by a typed encoding could contain `frag`, judging
/// by the bytes such a value can hold. String-like encodings: always.
fn text_may_hold(enc: Encoding, frag: &[u8], prefix: &[u8]) -> bool {
    enc.may_print(frag, prefix)
}

/// Whether values of a Hex column with the given case and longest digit run
/// (see `hex_digit_runs`) could contain `frag` (already known to hold only
/// hex digits and dashes). Unknown layouts may hold anything.
fn hex_may_hold(runs: Option<(bool, usize)>, frag: &[u8]) -> bool {
    let Some((upper, longest)) = runs else {
        return true;
    };
    let wrong_case = |b: &u8| {
        if upper {
            b.is_ascii_lowercase()
        } else {
            b.is_ascii_uppercase()
        }
    };
    if frag.iter().any(wrong_case) {
        return false;
    }
    frag.split(|&b| b == b'-').all(|run| run.len() <= longest)
}

/// Per value of `values`, whether it contains `finder`'s needle (dictionary
/// entries and constants are tested once). `None` when no value does.
fn value_hits(values: &Values, finder: &Finder<'_>) -> Option<Vec<bool>> {
    let hit = |v: &[u8]| finder.find(v).is_some();
    let out: Vec<bool> = match values {
        Values::Const { value, n } => {
            if !hit(value) {
                return None;
            }
            vec![true; *n]
        }
        Values::Dict { idx, ends, .. } => {
            let entries: Vec<bool> = (0..ends.len()).map(|e| hit(values.entry(e))).collect();
            if !entries.iter().any(|&b| b) {
                return None;
            }
            idx.iter().map(|&i| entries[i as usize]).collect()
        }
        Values::Flat { ends, .. } => (0..ends.len()).map(|i| hit(values.get(i))).collect(),
    };
    out.iter().any(|&b| b).then_some(out)
}

impl BlockReader<'_> {
    /// Clears `keep[r]` for every row whose line provably does not contain
    /// each of `needles` (see the module documentation). Rows already cleared
    /// are not examined. `keep` must have one entry per row.
    pub fn retain_rows_containing(
        &self,
        needles: &[&[u8]],
        keep: &mut [bool],
    ) -> Result<(), StorageError> {
        if keep.len() != self.rows() || needles.is_empty() {
            return Ok(());
        }
        let templates = self.templates()?;
        let nt = templates.len();
        let ncols = self.column_count();
        // Boundary bytes over all templates; templates the test cannot judge.
        let mut boundary = [false; 256];
        boundary[SLOT as usize] = true;
        let mut unjudged = vec![false; nt];
        for (t, u) in unjudged.iter_mut().enumerate() {
            let slots = templates[t].slots().len();
            for k in 0..=slots {
                let piece = templates[t].piece(k);
                if let Some(&b) = piece.first() {
                    if k > 0 {
                        boundary[b as usize] = true;
                    }
                }
                if let Some(&b) = piece.last() {
                    if k < slots {
                        boundary[b as usize] = true;
                    }
                }
                if piece.is_empty() && k > 0 && k < slots {
                    *u = true;
                }
            }
        }
        // Per template, which columns it holds.
        let mut holds = vec![false; nt * ncols];
        for t in 0..nt {
            for &c in templates[t].slots() {
                holds[t * ncols + c as usize] = true;
            }
        }
        let row_tpl = self.row_templates();
        let mut decoded: Vec<Option<Values>> = (0..ncols).map(|_| None).collect();
        let mut hit = vec![false; keep.len()];
        for needle in needles {
            for frag in needle.split(|&b| boundary[b as usize]) {
                if frag.is_empty() {
                    continue;
                }
                let finder = Finder::new(frag);
                hit.iter_mut().for_each(|h| *h = false);
                let tpl_hit: Vec<bool> = (0..nt)
                    .map(|t| unjudged[t] || finder.find(templates[t].text()).is_some())
                    .collect();
                for (r, h) in hit.iter_mut().enumerate() {
                    *h = tpl_hit[row_tpl[r] as usize];
                }
                for c in 0..ncols {
                    let (enc, prefix) = self.column_head(c);
                    if !text_may_hold(enc, frag, prefix) {
                        continue;
                    }
                    if enc == Encoding::Hex && !hex_may_hold(self.hex_digit_runs(c), frag) {
                        continue;
                    }
                    if decoded[c].is_none() {
                        decoded[c] = Some(self.column_values(c)?);
                    }
                    let Some(values) = decoded[c].as_ref() else {
                        continue;
                    };
                    let Some(vh) = value_hits(values, &finder) else {
                        continue;
                    };
                    let mut next = 0usize;
                    for (r, h) in hit.iter_mut().enumerate() {
                        if holds[row_tpl[r] as usize * ncols + c] {
                            *h |= vh.get(next).copied().unwrap_or(true);
                            next += 1;
                        }
                    }
                }
                let mut any = false;
                for (k, h) in keep.iter_mut().zip(&hit) {
                    *k &= *h;
                    any |= *k;
                }
                if !any {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::BlockBuilder;

    fn block(lines: &[&str]) -> Vec<u8> {
        let mut b = BlockBuilder::new();
        for (i, l) in lines.iter().enumerate() {
            b.push(i as i64 + 1, l, &[]);
        }
        let mut out = Vec::new();
        b.finish(3, &mut out);
        out
    }

    /// The prefilter never drops a row whose line contains every needle.
    fn check(lines: &[&str], needles: &[&str]) -> Vec<bool> {
        let src = block(lines);
        let r = BlockReader::open(&src).unwrap();
        let mut keep = vec![true; lines.len()];
        let ns: Vec<&[u8]> = needles.iter().map(|n| n.as_bytes()).collect();
        r.retain_rows_containing(&ns, &mut keep).unwrap();
        for (l, k) in lines.iter().zip(&keep) {
            if needles.iter().all(|n| l.contains(n)) {
                assert!(*k, "dropped {l:?} for {needles:?}");
            }
        }
        keep
    }

    #[test]
    fn values_templates_and_boundaries() {
        let lines = [
            r#"{"level":"error","msg":"connection timeout","status":504,"trace":"0af7651916cd43dd8448eb211c80319c"}"#,
            r#"{"level":"info","msg":"ok","status":200,"trace":"1af7651916cd43dd8448eb211c80319c"}"#,
            r#"{"level":"info","msg":"request done","status":200}"#,
            "plain text line with timeout",
            r#"{"a": "x y", "b": 1}"#,
        ];
        assert_eq!(
            check(&lines, &["connection timeout"]),
            [true, false, false, false, false]
        );
        assert_eq!(
            check(&lines, &["timeout"]),
            [true, false, false, true, false]
        );
        assert_eq!(
            check(&lines, &["0af7651916cd43dd8448eb211c80319c"]),
            [true, false, false, false, false]
        );
        // Needles with structure: fragments are tested, the rest verified later.
        let k = check(&lines, &[r#""level":"error""#]);
        assert!(k[0] && !k[1] && !k[2]);
        assert!(check(&lines, &[r#""status":5"#])[0]);
        assert!(check(&lines, &["\"x y\", \"b"])[4]);
        assert!(check(&lines, &["msg"])[..3].iter().all(|&b| b));
        assert_eq!(check(&lines, &["nowhere"]), [false; 5]);
        // Across a value and the next key.
        assert!(check(&lines, &["error\",\"msg"])[0]);
        assert!(check(&lines, &["504,\"tr"])[0]);
    }

    #[test]
    fn random_needles_never_drop_a_match() {
        let lines = [
            r#"{"a":"b","c":{"d":12.5,"e":[1,2]},"f":true,"g":null}"#,
            r#"{"a":"bb","c":{"d":-3,"e":[]},"f":false,"g":"x\"y"}"#,
            r#"  {"a" : "b c" , "h":"2026-01-01T00:00:00Z"}  "#,
            "not json at all",
            r#"{"ip":"10.0.0.1","id":"user_123","hex":"deadbeefdeadbeef"}"#,
        ];
        for l in lines {
            let bytes = l.as_bytes();
            for i in 0..bytes.len() {
                for j in i + 1..=bytes.len().min(i + 12) {
                    if let Ok(n) = std::str::from_utf8(&bytes[i..j]) {
                        check(&lines, &[n]);
                    }
                }
            }
        }
    }
}
