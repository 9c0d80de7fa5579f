//! Text line shapes: splitting a plain-text line (not a JSON object) into a
//! *text template* and raw value slices, losslessly.
//!
//! Most plain-text log lines are a fixed sentence with a few variable words:
//! a timestamp, a thread, `key=value` pairs, ids and numbers. Kept whole, such
//! a line is one opaque string: a rare id in it can only be found by
//! decompressing and scanning every line of the block, and a phrase of the
//! fixed sentence is tested row by row. Split, the sentence becomes template
//! text (tested once per template, its words in the bloom's template scope)
//! and each variable word a column value with its own encoding, token facts
//! and bloom keys, exactly as the fields of a JSON line.
//!
//! The rule, word by word (a word is a maximal run of bytes other than space
//! and tab; the separators are template text):
//!
//! - `key=value` with a key of `[A-Za-z_][A-Za-z0-9_.-]*` (at most 64 bytes)
//!   and a non-empty value: `key=` is template text, the value a slot named
//!   `key` (the first time the key appears in the line; a repeated key's
//!   value is named by position, as below);
//! - a word holding an ASCII digit: its leading bytes of `[("'` and
//!   trailing bytes of `])}"',:` are template text, the rest (when not
//!   empty) a slot named `#n`, `n` counting such slots from 0 in the line;
//! - the other words come in runs (the words between two slots, with the
//!   spaces between them): each run is one slot named `~n`, `n` counting
//!   runs from 0 in the line.
//!
//! So the template is the line's *structure* (keys, brackets, where the
//! numbers and the free text are), which few lines of a stream differ in,
//! and the free text (level, logger, message) is a column of its own, where
//! a dictionary holds each sentence once: templates made of the sentences
//! themselves would number levels × loggers × messages per block.
//!
//! A line is not split (it is stored whole) when it is blank, starts with
//! `{` after optional whitespace (a JSON object this store could not decompose stays whole, and no
//! text template can be mistaken for an object template), holds the slot
//! byte, or would have more than [`MAX_TEXT_SLOTS`] slots.

use super::shape::SLOT;

/// Most slots a text template may have; a line with more is stored whole.
pub const MAX_TEXT_SLOTS: usize = 48;

/// Longest `key` of a `key=value` word that names its slot.
const MAX_KEY_LEN: usize = 64;

/// Bytes before a digit-holding word's value that stay template text. With
/// `=`, space and tab, the bytes a text template puts next to a slot: all
/// have their own bit in the header's `boundaries`
/// ([`BOUNDARY_BYTES`](super::layout::BOUNDARY_BYTES)), so needles are cut
/// at them exactly as at a JSON template's.
const LEAD: &[u8] = b"[(\"'";

/// Bytes after a digit-holding word's value that stay template text.
const TRAIL: &[u8] = b"])}\"',:";

/// Splits the plain-text `line` into its template (appended to `tpl`, which
/// is cleared first), value ranges (into `spans`) and slot names (into
/// `names`, one per span: the key of a `key=value` word, or `#n`). Returns
/// false when the line is not split (see the module doc); the outputs are
/// then meaningless.
pub fn split_text_line(
    line: &[u8],
    tpl: &mut Vec<u8>,
    spans: &mut Vec<(u32, u32)>,
    names: &mut Vec<Vec<u8>>,
) -> bool {
    tpl.clear();
    spans.clear();
    names.clear();
    let first = line.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_none_or(|&b| b == b'{') || memchr::memchr(SLOT, line).is_some() {
        return false;
    }
    let (mut positional, mut runs) = (0usize, 0usize);
    // The line up to `lit` is in the template or a slot already.
    let mut lit = 0usize;
    // The words of the open text run: first start, last end.
    let mut run: Option<(usize, usize)> = None;
    // Template text up to `a`, then a slot for `a..b` named `name`.
    let slot = |tpl: &mut Vec<u8>,
                spans: &mut Vec<(u32, u32)>,
                names: &mut Vec<Vec<u8>>,
                lit: &mut usize,
                (a, b): (usize, usize),
                name: Vec<u8>| {
        tpl.extend_from_slice(&line[*lit..a]);
        tpl.push(SLOT);
        spans.push((a as u32, b as u32));
        names.push(name);
        *lit = b;
    };
    // The open text run, if any, as slot `~n`.
    let close_run = |tpl: &mut Vec<u8>,
                     spans: &mut Vec<(u32, u32)>,
                     names: &mut Vec<Vec<u8>>,
                     lit: &mut usize,
                     run: &mut Option<(usize, usize)>,
                     runs: &mut usize| {
        if let Some(r) = run.take() {
            slot(tpl, spans, names, lit, r, format!("~{runs}").into_bytes());
            *runs += 1;
        }
    };
    let mut i = 0usize;
    while i < line.len() {
        if line[i] == b' ' || line[i] == b'\t' {
            i += 1;
            continue;
        }
        let start = i;
        while i < line.len() && line[i] != b' ' && line[i] != b'\t' {
            i += 1;
        }
        let word = &line[start..i];
        // (value start, value end, name) of the word's slot, if it has one.
        let mut value = None;
        if let Some(eq) = key_value_split(word) {
            let key = &word[..eq];
            if !names.iter().any(|n| n.as_slice() == key) {
                value = Some((start + eq + 1, i, key.to_vec()));
            }
        }
        if value.is_none() && word.iter().any(u8::is_ascii_digit) {
            let lead = word.iter().take_while(|b| LEAD.contains(b)).count();
            let trail = word[lead..]
                .iter()
                .rev()
                .take_while(|b| TRAIL.contains(b))
                .count();
            if lead < word.len() - trail {
                let name = format!("#{positional}").into_bytes();
                positional += 1;
                value = Some((start + lead, i - trail, name));
            }
        }
        let Some((a, b, name)) = value else {
            run = Some((run.map_or(start, |r| r.0), i));
            continue;
        };
        close_run(tpl, spans, names, &mut lit, &mut run, &mut runs);
        slot(tpl, spans, names, &mut lit, (a, b), name);
        if spans.len() > MAX_TEXT_SLOTS {
            return false;
        }
    }
    close_run(tpl, spans, names, &mut lit, &mut run, &mut runs);
    tpl.extend_from_slice(&line[lit..]);
    spans.len() <= MAX_TEXT_SLOTS
}

/// Where the `=` of a `key=value` word is, when the word is one.
fn key_value_split(word: &[u8]) -> Option<usize> {
    let eq = memchr::memchr(b'=', word)?;
    if eq == 0 || eq > MAX_KEY_LEN || eq + 1 >= word.len() {
        return None;
    }
    let key = &word[..eq];
    let first_ok = key[0].is_ascii_alphabetic() || key[0] == b'_';
    let rest_ok = key
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    (first_ok && rest_ok).then_some(eq)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Option<(String, Vec<String>, Vec<String>)> {
        let (mut tpl, mut spans, mut names) = (Vec::new(), Vec::new(), Vec::new());
        if !split_text_line(line.as_bytes(), &mut tpl, &mut spans, &mut names) {
            return None;
        }
        let values = spans
            .iter()
            .map(|&(a, b)| line[a as usize..b as usize].to_string())
            .collect();
        let names = names
            .into_iter()
            .map(|n| String::from_utf8(n).unwrap())
            .collect();
        Some((
            String::from_utf8(tpl).unwrap().replace('\0', "<>"),
            values,
            names,
        ))
    }

    /// Rebuilds the line from the template and the values.
    fn rebuild(tpl: &str, values: &[String]) -> String {
        let mut out = String::new();
        let mut vals = values.iter();
        let mut pieces = tpl.split("<>");
        out.push_str(pieces.next().unwrap());
        for p in pieces {
            out.push_str(vals.next().unwrap());
            out.push_str(p);
        }
        out
    }

    #[test]
    fn a_log4j_line_keeps_its_structure_and_slots_numbers_keys_and_text_runs() {
        let line = "2026-12-04T16:40:51.943Z WARN  [pool-6-thread-11] c.s.i.LoginHandler - payment declined by issuing bank method=GET status=404 session=3a68c197be ip=213.146.158.218 took=61.610ms";
        let (tpl, values, names) = split(line).unwrap();
        assert_eq!(
            tpl,
            "<> <>  [<>] <> method=<> status=<> session=<> ip=<> took=<>"
        );
        assert_eq!(
            values,
            [
                "2026-12-04T16:40:51.943Z",
                "WARN",
                "pool-6-thread-11",
                "c.s.i.LoginHandler - payment declined by issuing bank",
                "GET",
                "404",
                "3a68c197be",
                "213.146.158.218",
                "61.610ms"
            ]
        );
        assert_eq!(
            names,
            ["#0", "~0", "#1", "~1", "method", "status", "session", "ip", "took"]
        );
        assert_eq!(rebuild(&tpl, &values), line);
    }

    #[test]
    fn repeated_keys_punctuation_and_tabs_round_trip() {
        for line in [
            "a=1 a=2\tb=(x) \"quoted 7\" end.",
            "  leading and trailing spaces 42  ",
            "x=",
            "=5 ==6 k==7",
            "[123] (456), <789>; '10'.",
            "no digits here at all",
            "ünïcödé 42 wörds=ü1",
        ] {
            let (tpl, values, names) = split(line).unwrap();
            assert_eq!(rebuild(&tpl, &values), line, "{line:?}");
            assert_eq!(values.len(), names.len());
            let mut seen = std::collections::HashSet::new();
            assert!(names.iter().all(|n| seen.insert(n.clone())), "{names:?}");
        }
    }

    #[test]
    fn lines_it_does_not_split() {
        assert!(split("").is_none());
        assert!(split("   ").is_none());
        assert!(split("{not json 1}").is_none());
        assert!(split(" \t{not json 1}").is_none());
        assert!(split("nul\0byte 1").is_none());
        let many: Vec<String> = (0..=MAX_TEXT_SLOTS).map(|i| i.to_string()).collect();
        assert!(split(&many.join(" ")).is_none());
        let fits: Vec<String> = (0..MAX_TEXT_SLOTS).map(|i| i.to_string()).collect();
        assert!(split(&fits.join(" ")).is_some());
    }
}
