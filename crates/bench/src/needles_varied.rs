//! Needles of the `needles` query set ([`crate::QuerySet::Needles`]), for either
//! workload shape: one rare value of each id kind the shape writes, picked from the
//! generated data itself, with the exact number of lines of the queried window that
//! hold it as a substring (what a Loki `|= "value"` filter returns).
//!
//! The generator is run twice over the lines of the window (it is seeded and cheap):
//! 1. every id is read from its field (or `key=` token of a plain-text line) and
//!    counted in a bottom-k sketch per kind: the [`SKETCH`] values with the smallest
//!    hashes, each counted exactly from its first line on (a value that is in the
//!    sketch at the end was in it from its first occurrence), a uniform sample of the
//!    distinct values that needs no memory per line. The phrases, the common word and
//!    the error word are counted with `str::contains`.
//! 2. for a short list of candidates per kind (the best by field count), the lines
//!    holding each as a substring anywhere in the line are counted with
//!    `str::contains`, and the pick is made on those exact counts.
//!
//! The pick per kind: a count in 1..=8, as close to 3 as possible, ties broken by the
//! hash of the value (deterministic, and not biased to small values). A uid is picked
//! twice: one found in a JSON line (preferring uids never in a plain-text line) and a
//! different one found in a plain-text line (preferring uids never in a JSON line).
//! IPv4 addresses may be common and may hide inside longer ones (`10.3.44.2` in
//! `110.3.44.25`): the pick is the address of the fewest lines, whatever the count.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::generator::varied::{COMMON_WORD, ERROR_WORD, PHRASE2, PHRASE3};
use crate::generator::{Generator, GeneratorConfig, GeneratorError, Shape};
use crate::vocab;

/// Distinct values sampled per id kind.
pub const SKETCH: usize = 8_192;
/// Line count a needle should have ("a handful").
pub const TARGET_LINES: u64 = 3;
/// Largest line count a needle may have (except IPv4 addresses).
pub const MAX_LINES: u64 = 8;
/// Candidates per kind whose exact substring count is taken (each costs a
/// `str::contains` per line of the second pass).
const SHORTLIST: usize = 2;
/// Candidates for the IPv4 pick.
const IP_SHORTLIST: usize = 8;

/// What a needle is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NeedleKind {
    /// A user id found in a JSON line (`uid`, or `user_id` of the reference shape).
    UidJson,
    /// Another user id, found in a plain-text line (`uid=`).
    UidPlain,
    /// A session id (10 hex digits).
    Session,
    /// An account email.
    Email,
    /// An IPv4 address (`peer_ip`, or `client_ip` of the reference shape).
    Ipv4,
    /// An order number (13 to 16 digits, a JSON number).
    OrderNo,
    /// A request UUID (`req_id`, or `request_id` of the reference shape).
    Uuid,
    /// A SKU code (`AB-48213-XQ`).
    Sku,
    /// A trace id (32 hex digits; `trace`, or `trace_id` of the reference shape).
    Trace,
}

impl NeedleKind {
    /// Every kind, in query order.
    pub const ALL: [NeedleKind; 9] = [
        NeedleKind::UidJson,
        NeedleKind::UidPlain,
        NeedleKind::Session,
        NeedleKind::Email,
        NeedleKind::Ipv4,
        NeedleKind::OrderNo,
        NeedleKind::Uuid,
        NeedleKind::Sku,
        NeedleKind::Trace,
    ];

    /// Short description, for query names.
    pub fn describe(self) -> &'static str {
        match self {
            NeedleKind::UidJson => "user id (JSON line)",
            NeedleKind::UidPlain => "user id (plain-text line)",
            NeedleKind::Session => "session id",
            NeedleKind::Email => "email",
            NeedleKind::Ipv4 => "IPv4 address",
            NeedleKind::OrderNo => "order number",
            NeedleKind::Uuid => "request UUID",
            NeedleKind::Sku => "SKU",
            NeedleKind::Trace => "trace id",
        }
    }

    /// Index of the sketch holding this kind's values.
    fn field(self) -> usize {
        match self {
            NeedleKind::UidJson | NeedleKind::UidPlain => 0,
            NeedleKind::Session => 1,
            NeedleKind::Email => 2,
            NeedleKind::Ipv4 => 3,
            NeedleKind::OrderNo => 4,
            NeedleKind::Uuid => 5,
            NeedleKind::Sku => 6,
            NeedleKind::Trace => 7,
        }
    }
}

/// Number of sketches (id fields).
const FIELDS: usize = 8;

/// A picked needle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Needle {
    /// What it is.
    pub kind: NeedleKind,
    /// The text searched for.
    pub value: String,
    /// Lines of the window holding `value` as a substring.
    pub lines: u64,
}

/// A text and the number of lines of the window holding it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counted {
    /// The text.
    pub text: String,
    /// Lines of the window holding it as a substring.
    pub lines: u64,
}

/// The needles of one workload shape, and the counts of its phrases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NeedleSet {
    /// The shape the needles were picked from.
    pub shape: Shape,
    /// One needle per kind the shape writes, in [`NeedleKind::ALL`] order.
    pub needles: Vec<Needle>,
    /// The two-word phrase.
    pub phrase2: Counted,
    /// The three-word phrase (the reference shape has none).
    pub phrase3: Option<Counted>,
    /// The word in most lines.
    pub common_word: Counted,
    /// The word of error lines.
    pub error_word: Counted,
    /// Generated lines inside the window (the ones counted).
    pub lines_scanned: u64,
}

impl NeedleSet {
    /// The needle of `kind`, if the shape has that kind.
    pub fn get(&self, kind: NeedleKind) -> Option<&Needle> {
        self.needles.iter().find(|n| n.kind == kind)
    }
}

/// How an id ends.
#[derive(Clone, Copy)]
enum End {
    /// A JSON string: at the closing quote.
    Quote,
    /// A JSON number: at `,` or `}`.
    Number,
    /// A `key=value` token: at a space or the end of the line.
    Space,
}

/// Where each sketch's id is in a line: (sketch, text before the value, its end).
type Extractors = &'static [(usize, &'static str, End)];

const REFERENCE: Extractors = &[
    (0, "\"user_id\":\"", End::Quote),
    (3, "\"client_ip\":\"", End::Quote),
    (5, "\"request_id\":\"", End::Quote),
    (7, "\"trace_id\":\"", End::Quote),
];

const VARIED_JSON: Extractors = &[
    (0, "\"uid\":\"", End::Quote),
    (1, "\"session\":\"", End::Quote),
    (2, "\"account\":\"", End::Quote),
    (3, "\"peer_ip\":\"", End::Quote),
    (4, "\"order_no\":", End::Number),
    (5, "\"req_id\":\"", End::Quote),
    (6, "\"sku\":\"", End::Quote),
    (7, "\"trace\":\"", End::Quote),
];

const VARIED_PLAIN: Extractors = &[
    (0, " uid=", End::Space),
    (1, " session=", End::Space),
    (2, " account=", End::Space),
    (3, " ip=", End::Space),
    (4, " order=", End::Space),
    (5, " req=", End::Space),
    (6, " sku=", End::Space),
    (7, " trace=", End::Space),
];

fn extract<'a>(line: &'a str, before: &str, end: End) -> Option<&'a str> {
    let start = line.find(before)? + before.len();
    let rest = &line[start..];
    let len = match end {
        End::Quote => rest.find('"')?,
        End::Number => rest.find([',', '}'])?,
        End::Space => rest.find(' ').unwrap_or(rest.len()),
    };
    Some(&rest[..len])
}

/// FNV-1a then the splitmix64 finalizer: a well-spread 64-bit hash of a value.
fn hash(s: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in s.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A sampled value: lines whose field holds it, in JSON and in plain-text lines.
#[derive(Clone, Debug)]
struct Sampled {
    value: String,
    json: u64,
    plain: u64,
}

impl Sampled {
    fn total(&self) -> u64 {
        self.json + self.plain
    }
}

/// Bottom-k sketch: the values with the smallest hashes, counted exactly.
#[derive(Default)]
struct Sketch(BTreeMap<u64, Sampled>);

impl Sketch {
    fn add(&mut self, value: &str, plain: bool) {
        let h = hash(value);
        if self.0.len() >= SKETCH && self.0.last_key_value().is_some_and(|(&k, _)| h > k) {
            return;
        }
        let e = self.0.entry(h).or_insert_with(|| Sampled {
            value: value.to_string(),
            json: 0,
            plain: 0,
        });
        if e.value != value {
            return; // a 64-bit hash collision: keep the first value
        }
        if plain {
            e.plain += 1;
        } else {
            e.json += 1;
        }
        if self.0.len() > SKETCH {
            self.0.pop_last();
        }
    }
}

/// The sort key of a candidate with `lines` lines: in range first, then the count
/// closest to the target, then `other` (seen in the other line kind) last.
fn score(kind: NeedleKind, lines: u64, other: bool, h: u64) -> (bool, bool, u64, u64) {
    if kind == NeedleKind::Ipv4 {
        return (false, false, lines, h);
    }
    let in_range = (1..=MAX_LINES).contains(&lines);
    (!in_range, other, lines.abs_diff(TARGET_LINES), h)
}

/// A candidate needle: its hash, whether it was seen in the other kind of line, its counts.
type Candidate<'a> = (u64, bool, &'a Sampled);

/// Whether a sampled value is a candidate of `kind`, and whether it was also seen in
/// the other kind of line (for the two uid kinds).
fn candidate(kind: NeedleKind, s: &Sampled) -> Option<bool> {
    match kind {
        NeedleKind::UidJson => (s.json > 0).then_some(s.plain > 0),
        NeedleKind::UidPlain => (s.plain > 0).then_some(s.json > 0),
        _ => Some(false),
    }
}

/// Regenerates the first `lines` lines of `config` and calls `f` on those with a
/// timestamp in `[start_ns, end_ns]`.
fn each_window_line(
    config: &GeneratorConfig,
    lines: u64,
    start_ns: i64,
    end_ns: i64,
    mut f: impl FnMut(&str),
) -> Result<(), GeneratorError> {
    let mut gen = Generator::new(config.clone())?;
    for _ in 0..lines {
        let g = gen.next_line();
        if (start_ns..=end_ns).contains(&g.ts) {
            f(&g.line);
        }
    }
    Ok(())
}

/// Picks the needles of `config.shape` from the first `lines` lines of `config`,
/// counting only the lines with a timestamp in `[start_ns, end_ns]` (the queried window).
pub fn find_needle_set(
    config: &GeneratorConfig,
    lines: u64,
    start_ns: i64,
    end_ns: i64,
) -> Result<NeedleSet, GeneratorError> {
    let (phrase2, phrase3) = match config.shape {
        Shape::Reference => (vocab::PHRASE, None),
        Shape::Varied => (PHRASE2, Some(PHRASE3)),
    };
    let words: Vec<&str> = [Some(phrase2), phrase3, Some(COMMON_WORD), Some(ERROR_WORD)]
        .into_iter()
        .flatten()
        .collect();
    let mut word_lines = vec![0u64; words.len()];
    let mut sketches: Vec<Sketch> = (0..FIELDS).map(|_| Sketch::default()).collect();
    let mut scanned = 0u64;
    each_window_line(config, lines, start_ns, end_ns, |line| {
        scanned += 1;
        for (w, n) in words.iter().zip(&mut word_lines) {
            *n += line.contains(w) as u64;
        }
        let plain = !line.starts_with('{');
        let extractors = match (config.shape, plain) {
            (Shape::Reference, _) => REFERENCE,
            (Shape::Varied, false) => VARIED_JSON,
            (Shape::Varied, true) => VARIED_PLAIN,
        };
        for &(field, before, end) in extractors {
            if let Some(v) = extract(line, before, end).filter(|v| !v.is_empty()) {
                sketches[field].add(v, plain);
            }
        }
    })?;
    if scanned == 0 {
        return Err(GeneratorError::Config(
            "no line falls in the queried window".into(),
        ));
    }

    // Short lists by field count, then exact substring counts of every candidate.
    let mut shortlists: Vec<(NeedleKind, Vec<Candidate>)> = Vec::new();
    for kind in NeedleKind::ALL {
        let mut c: Vec<Candidate> = sketches[kind.field()]
            .0
            .iter()
            .filter_map(|(&h, s)| candidate(kind, s).map(|other| (h, other, s)))
            .collect();
        if c.is_empty() {
            continue;
        }
        c.sort_by_key(|&(h, other, s)| score(kind, s.total(), other, h));
        let keep = match kind {
            NeedleKind::Ipv4 => IP_SHORTLIST,
            // One spare: the plain-text uid must differ from the JSON one.
            NeedleKind::UidJson | NeedleKind::UidPlain => SHORTLIST + 1,
            _ => SHORTLIST,
        };
        c.truncate(keep);
        shortlists.push((kind, c));
    }
    let mut values: Vec<&str> = shortlists
        .iter()
        .flat_map(|(_, c)| c.iter().map(|(_, _, s)| s.value.as_str()))
        .collect();
    values.sort_unstable();
    values.dedup();
    let mut exact = vec![0u64; values.len()];
    each_window_line(config, lines, start_ns, end_ns, |line| {
        for (v, n) in values.iter().zip(&mut exact) {
            *n += line.contains(v) as u64;
        }
    })?;
    let exact_of = |v: &str| exact[values.binary_search(&v).expect("a listed value")];

    let mut needles: Vec<Needle> = Vec::new();
    for (kind, c) in &shortlists {
        let taken = |v: &str| needles.iter().any(|n| n.value == v);
        let best = c
            .iter()
            .filter(|(_, _, s)| !taken(&s.value))
            .min_by_key(|&&(h, other, s)| score(*kind, exact_of(&s.value), other, h));
        if let Some((_, _, s)) = best {
            needles.push(Needle {
                kind: *kind,
                value: s.value.clone(),
                lines: exact_of(&s.value),
            });
        }
    }
    let counted = |i: usize| Counted {
        text: words[i].to_string(),
        lines: word_lines[i],
    };
    let k = words.len();
    Ok(NeedleSet {
        shape: config.shape,
        needles,
        phrase2: counted(0),
        phrase3: phrase3.map(|_| counted(1)),
        common_word: counted(k - 2),
        error_word: counted(k - 1),
        lines_scanned: scanned,
    })
}

#[cfg(test)]
mod tests;
