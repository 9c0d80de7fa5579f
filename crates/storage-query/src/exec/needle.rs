//! Exact substring tests on templated lines, without rebuilding them.
//!
//! A line of template `P0 S0 P1 S1 … Pk` is the pieces `Pi` with the row's
//! values in the slots `Si`. An occurrence of a needle `N` either lies inside
//! one piece (then every row of the template contains it), inside one value,
//! or crosses slot boundaries: then it starts inside a piece or a value,
//! covers the pieces in between exactly, covers the values in between whole,
//! and ends inside a piece or a value. [`plan_needle`] enumerates every such
//! alignment for a template and writes each as a conjunction of tests on the
//! values of the slots it touches (`value == …`, `value ends with …`,
//! `value starts with …`, `value contains …`). A row contains `N` exactly
//! when one of these conjunctions holds for its values, so the test is
//! evaluated once per distinct value (dictionary entries) and per row only
//! as lookups.

/// How a value relates to a stretch of the needle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TestKind {
    /// The value contains it.
    Contains,
    /// The value starts with it.
    StartsWith,
    /// The value ends with it.
    EndsWith,
    /// The value is exactly it.
    Equals,
}

/// A test of one value against the needle's bytes `start..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueTest {
    /// The relation.
    pub kind: TestKind,
    /// Start of the stretch in the needle.
    pub start: usize,
    /// End of the stretch in the needle (exclusive).
    pub end: usize,
}

impl ValueTest {
    fn new(kind: TestKind, start: usize, end: usize) -> Self {
        ValueTest { kind, start, end }
    }

    /// Whether `v` passes, for `needle`.
    pub fn holds(&self, needle: &[u8], v: &[u8]) -> bool {
        let s = &needle[self.start..self.end];
        match self.kind {
            TestKind::Contains => memchr::memmem::find(v, s).is_some(),
            TestKind::StartsWith => v.starts_with(s),
            TestKind::EndsWith => v.ends_with(s),
            TestKind::Equals => v == s,
        }
    }
}

/// Which rows of one template contain a needle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NeedlePlan {
    /// Every row does (a piece holds the needle).
    pub always: bool,
    /// Otherwise: a row does when all tests of one alternative hold for its
    /// values; each test names a slot (position in the template).
    pub alternatives: Vec<Vec<(usize, ValueTest)>>,
}

/// Needles longer than this are not aligned (the number of alignments
/// grows with the square of the length); callers test rebuilt lines.
pub const MAX_ALIGNED_NEEDLE: usize = 256;

/// The alignments of `needle` over a template with `pieces` (one more than
/// slots). `None` when the needle is too long to align.
pub fn plan_needle(pieces: &[&[u8]], needle: &[u8]) -> Option<NeedlePlan> {
    if needle.len() > MAX_ALIGNED_NEEDLE {
        return None;
    }
    let mut plan = NeedlePlan::default();
    if needle.is_empty()
        || pieces
            .iter()
            .any(|p| memchr::memmem::find(p, needle).is_some())
    {
        plan.always = true;
        return Some(plan);
    }
    let slots = pieces.len().saturating_sub(1);
    let mut w = Walker {
        pieces,
        needle,
        slots,
        out: &mut plan.alternatives,
    };
    for s in 0..slots {
        w.out.push(vec![(
            s,
            ValueTest::new(TestKind::Contains, 0, needle.len()),
        )]);
    }
    // Starting inside piece j (which a slot follows): a proper suffix of the
    // piece is a proper prefix of the needle.
    for (j, p) in pieces.iter().take(slots).enumerate() {
        for o in 0..p.len() {
            let suf = &p[o..];
            if suf.len() < needle.len() && needle.starts_with(suf) {
                w.value(j, suf.len(), &mut Vec::new());
            }
        }
    }
    // Starting inside the value of slot s: it ends with a proper prefix of
    // the needle, and the rest starts at the next piece.
    for s in 0..slots {
        for d in 1..needle.len() {
            if compatible(pieces[s + 1], &needle[d..]) {
                let mut cons = vec![(s, ValueTest::new(TestKind::EndsWith, 0, d))];
                w.piece(s + 1, d, &mut cons);
            }
        }
    }
    plan.alternatives.sort();
    plan.alternatives.dedup();
    Some(plan)
}

/// Where a regexp `P R` (see [`runakefli_model::plan::RegexSplit`]) can
/// match on rows of one template.
#[derive(Clone, Debug, Default)]
pub struct RegexSites {
    /// Some occurrence of `P` lies inside a piece where the template alone
    /// cannot tell whether `R` follows: rows must be tested on their lines.
    pub unsure: bool,
    /// An occurrence of `P` in a piece is followed by text `R` matches:
    /// every row matches.
    pub always: bool,
    /// Slots right after an occurrence of `P` that ends a piece: a row
    /// matches when `R` matches at the start of one of their values.
    pub slots: Vec<usize>,
    /// Alignments of `P` over values (it may also occur inside or across
    /// them); a block where one is possible must test rows on their lines.
    pub alternatives: Vec<Vec<(usize, ValueTest)>>,
}

/// The [`RegexSites`] of `prefix` followed by a rest (`rest` tells whether
/// it matches at the start of a text) over a template; `quoted` per slot.
pub fn regex_sites(
    pieces: &[&[u8]],
    quoted: &[bool],
    prefix: &[u8],
    rest: &dyn Fn(&[u8]) -> bool,
) -> RegexSites {
    let mut out = RegexSites::default();
    if prefix.is_empty() || prefix.len() > MAX_ALIGNED_NEEDLE {
        out.unsure = true;
        return out;
    }
    let slots = pieces.len().saturating_sub(1);
    for (j, p) in pieces.iter().enumerate() {
        for o in memchr::memmem::find_iter(p, prefix) {
            let end = o + prefix.len();
            let remainder = &p[end..];
            if !remainder.is_empty() {
                if rest(remainder) {
                    out.always = true;
                } else if !remainder.contains(&b'"') {
                    // `R` may go on past the piece.
                    out.unsure = true;
                }
            } else if j == slots {
                // The line ends here.
                if rest(b"") {
                    out.always = true;
                }
            } else if quoted.get(j).copied().unwrap_or(false) {
                out.slots.push(j);
            } else {
                out.unsure = true;
            }
        }
    }
    // Occurrences inside or across values.
    let mut alts = Vec::new();
    let mut w = Walker {
        pieces,
        needle: prefix,
        slots,
        out: &mut alts,
    };
    for s in 0..slots {
        w.out.push(vec![(
            s,
            ValueTest::new(TestKind::Contains, 0, prefix.len()),
        )]);
    }
    for (j, p) in pieces.iter().take(slots).enumerate() {
        for o in 0..p.len() {
            let suf = &p[o..];
            if suf.len() < prefix.len() && prefix.starts_with(suf) {
                w.value(j, suf.len(), &mut Vec::new());
            }
        }
    }
    for s in 0..slots {
        for d in 1..prefix.len() {
            if compatible(pieces[s + 1], &prefix[d..]) {
                let mut cons = vec![(s, ValueTest::new(TestKind::EndsWith, 0, d))];
                w.piece(s + 1, d, &mut cons);
            }
        }
    }
    let mut plan = NeedlePlan {
        always: false,
        alternatives: alts,
    };
    drop_impossible(&mut plan, prefix, quoted);
    plan.alternatives.sort();
    plan.alternatives.dedup();
    out.alternatives = plan.alternatives;
    out.slots.sort_unstable();
    out.slots.dedup();
    out
}

/// Drops the alternatives that test a JSON string value for bytes no such
/// value holds: a string value (the raw text between its quotes) has a `"`
/// only right after a backslash, so a `"` inside the tested stretch must
/// follow a `\\` in it, and one at the stretch's start is possible only when
/// the value may go on before it (contains / ends with). `quoted` tells, per
/// slot, whether its value is a JSON string.
pub fn drop_impossible(plan: &mut NeedlePlan, needle: &[u8], quoted: &[bool]) {
    let possible = |slot: usize, t: &ValueTest| {
        if !quoted.get(slot).copied().unwrap_or(false) {
            return true;
        }
        let b = &needle[t.start..t.end];
        b.iter().enumerate().all(|(k, &c)| {
            c != b'"'
                || if k == 0 {
                    matches!(t.kind, TestKind::Contains | TestKind::EndsWith)
                } else {
                    b[k - 1] == b'\\'
                }
        })
    };
    plan.alternatives
        .retain(|alt| alt.iter().all(|(slot, t)| possible(*slot, t)));
}

/// Whether a piece and the rest of a needle can line up at their starts.
fn compatible(piece: &[u8], rest: &[u8]) -> bool {
    piece.starts_with(rest) || rest.starts_with(piece)
}

struct Walker<'a, 'o> {
    pieces: &'a [&'a [u8]],
    needle: &'a [u8],
    slots: usize,
    out: &'o mut Vec<Vec<(usize, ValueTest)>>,
}

impl Walker<'_, '_> {
    /// The needle from byte `d` on starts at the beginning of piece `j`.
    fn piece(&mut self, j: usize, d: usize, cons: &mut Vec<(usize, ValueTest)>) {
        let p = self.pieces[j];
        let rest = &self.needle[d..];
        if rest.len() <= p.len() {
            if p.starts_with(rest) {
                self.out.push(cons.clone());
            }
        } else if rest.starts_with(p) && j < self.slots {
            self.value(j, d + p.len(), cons);
        }
    }

    /// The needle from byte `d` on (not empty) starts at the beginning of
    /// slot `s`'s value.
    fn value(&mut self, s: usize, d: usize, cons: &mut Vec<(usize, ValueTest)>) {
        let rest = &self.needle[d..];
        // The occurrence ends inside the value.
        cons.push((
            s,
            ValueTest::new(TestKind::StartsWith, d, self.needle.len()),
        ));
        self.out.push(cons.clone());
        cons.pop();
        // The value is a proper prefix of the rest; the next piece follows.
        let next = self.pieces[s + 1];
        for l in 0..rest.len() {
            if compatible(next, &rest[l..]) {
                cons.push((s, ValueTest::new(TestKind::Equals, d, d + l)));
                self.piece(s + 1, d + l, cons);
                cons.pop();
            }
        }
    }
}

/// Whether a row with these slot values contains the needle, by the plan
/// (for tests and for rows checked one at a time).
#[cfg(test)]
pub fn row_matches(plan: &NeedlePlan, needle: &[u8], values: &[&[u8]]) -> bool {
    plan.always
        || plan
            .alternatives
            .iter()
            .any(|alt| alt.iter().all(|(s, t)| t.holds(needle, values[*s])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn line(pieces: &[&[u8]], values: &[&[u8]]) -> Vec<u8> {
        let mut out = pieces[0].to_vec();
        for (v, p) in values.iter().zip(&pieces[1..]) {
            out.extend_from_slice(v);
            out.extend_from_slice(p);
        }
        out
    }

    fn check(pieces: &[&[u8]], values: &[&[u8]], needle: &[u8]) {
        let plan = plan_needle(pieces, needle).unwrap();
        let l = line(pieces, values);
        let want = memchr::memmem::find(&l, needle).is_some();
        assert_eq!(
            row_matches(&plan, needle, values),
            want,
            "needle {:?} line {:?} plan {plan:?}",
            String::from_utf8_lossy(needle),
            String::from_utf8_lossy(&l)
        );
    }

    #[test]
    fn json_shapes() {
        let pieces: [&[u8]; 4] = [b"{\"level\":\"", b"\",\"msg\":\"", b"\",\"n\":", b"}"];
        let rows: [[&[u8]; 3]; 4] = [
            [b"error", b"connection timeout", b"5"],
            [b"info", b"ok", b"12"],
            [b"error", b"level\":\"error", b""],
            [b"", b"", b"-1"],
        ];
        let needles: [&[u8]; 12] = [
            b"\"level\":\"error\"",
            b"connection timeout",
            b"timeout\",\"n\":5}",
            b"error\",\"msg\":\"con",
            b"\"n\":1",
            b"\"n\":12}",
            b"ok",
            b"",
            b"{",
            b"\",\"",
            b"info\",\"msg\":\"ok\",\"n\":12}",
            b"zzz",
        ];
        for r in &rows {
            for n in needles {
                check(&pieces, r, n);
            }
        }
        let mut p = plan_needle(&pieces, b"\"level\":\"error\"").unwrap();
        let before = p.alternatives.len();
        drop_impossible(&mut p, b"\"level\":\"error\"", &[true, true, false]);
        assert!(p.alternatives.len() < before);
        assert!(p
            .alternatives
            .contains(&vec![(0, ValueTest::new(TestKind::Equals, 9, 14))]));
        assert!(plan_needle(&pieces, b"\",\"").unwrap().always);
    }

    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(b"ab\":,{} ".to_vec()), 0..5)
    }

    fn value() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(b"ab\":".to_vec()), 0..5)
    }

    /// Values a JSON string slot can hold: no `"` except after a backslash.
    fn string_value() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop::sample::select(vec![&b"a"[..], b"b", b":", b"\\\"", b"\\", b","]),
            0..4,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        #[test]
        fn regex_sites_agree_with_the_regexp(
            keys in prop::collection::vec("[ab]{0,2}", 1..4),
            values in prop::collection::vec(string_value(), 4),
            key in "[ab]{0,2}",
            tail in "[ab:]{0,2}",
        ) {
            // Lines {"k0":"v0",...}; regexp `"KEY":"[^"]*TAIL` split as
            // prefix `"KEY":"` and rest `[^"]*TAIL`.
            let n = keys.len();
            let mut ps: Vec<Vec<u8>> = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                let mut p = if i == 0 { b"{\"".to_vec() } else { b"\",\"".to_vec() };
                p.extend_from_slice(k.as_bytes());
                p.extend_from_slice(b"\":\"");
                ps.push(p);
            }
            ps.push(b"\"}".to_vec());
            let pieces: Vec<&[u8]> = ps.iter().map(|p| p.as_slice()).collect();
            let values: Vec<&[u8]> = values[..n].iter().map(|v| v.as_slice()).collect();
            let prefix = format!("\"{key}\":\"");
            let re = regex::bytes::Regex::new(&format!("{}[^\"]*{}", regex::escape(&prefix), regex::escape(&tail))).unwrap();
            let rest = regex::bytes::Regex::new(&format!("^[^\"]*{}", regex::escape(&tail))).unwrap();
            let sites = regex_sites(&pieces, &vec![true; n], prefix.as_bytes(), &|t| rest.is_match(t));
            let l = line(&pieces, &values);
            let want = re.is_match(&l);
            // Sites never miss a match; when sure, they decide exactly.
            if !sites.unsure && sites.alternatives.is_empty() {
                let got = sites.always || sites.slots.iter().any(|&s| rest.is_match(values[s]));
                prop_assert_eq!(got, want, "line {:?}", String::from_utf8_lossy(&l));
            }
        }

        #[test]
        fn dropping_impossible_tests_keeps_every_match(
            keys in prop::collection::vec("[ab]{0,2}", 1..4),
            values in prop::collection::vec(string_value(), 4),
            needle in prop::collection::vec(prop::sample::select(b"ab\":,{}\\".to_vec()), 0..9),
        ) {
            // {"k0":"v0","k1":"v1",...}: every slot a JSON string.
            let n = keys.len();
            let mut pieces: Vec<Vec<u8>> = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                let mut p = if i == 0 { b"{\"".to_vec() } else { b"\",\"".to_vec() };
                p.extend_from_slice(k.as_bytes());
                p.extend_from_slice(b"\":\"");
                pieces.push(p);
            }
            pieces.push(b"\"}".to_vec());
            let pieces: Vec<&[u8]> = pieces.iter().map(|p| p.as_slice()).collect();
            let values: Vec<&[u8]> = values[..n].iter().map(|v| v.as_slice()).collect();
            let mut plan = plan_needle(&pieces, &needle).unwrap();
            drop_impossible(&mut plan, &needle, &vec![true; n]);
            let l = line(&pieces, &values);
            let want = memchr::memmem::find(&l, &needle).is_some();
            prop_assert_eq!(row_matches(&plan, &needle, &values), want);
        }

        #[test]
        fn agrees_with_searching_the_line(
            pieces in prop::collection::vec(piece(), 1..5),
            values in prop::collection::vec(value(), 4),
            needle in prop::collection::vec(prop::sample::select(b"ab\":,{} ".to_vec()), 0..9),
        ) {
            let pieces: Vec<&[u8]> = pieces.iter().map(|p| p.as_slice()).collect();
            let slots = pieces.len() - 1;
            let values: Vec<&[u8]> = values[..slots].iter().map(|v| v.as_slice()).collect();
            let plan = plan_needle(&pieces, &needle).unwrap();
            let l = line(&pieces, &values);
            let want = memchr::memmem::find(&l, &needle).is_some();
            prop_assert_eq!(row_matches(&plan, &needle, &values), want);
        }
    }
}
