//! A plan compiled for the store: the distinct substring needles of its
//! line filters, how each filter is decided, the labels the query reads, and
//! what the query derives from a template (needle alignments, `| json`
//! labels of its slots), cached per template id while the query runs.

use super::needle::{drop_impossible, plan_needle, regex_sites, NeedlePlan, RegexSites};
use crate::column_scan::loki_json_label;
use runakefli_model::plan::{FieldStage, GroupBy, JsonParser, LineMatch, PlanOutput, QueryPlan};
use runakefli_storage::block::shape::template_slots;
use runakefli_storage::block::Template;
use std::sync::Arc;

/// How one line filter is decided on a block.
#[derive(Clone, Debug)]
pub enum FilterPlan {
    /// Exactly: the line contains one of these needles (indices into
    /// [`CompiledQuery::needles`]), or (negated) none of them.
    AnyOf {
        /// The needles.
        needles: Vec<usize>,
        /// `!=` / `!~`.
        negated: bool,
    },
    /// A line lacking one of `required` fails the test; the others are
    /// tested on their rebuilt line with the plan's filter `index`.
    Test {
        /// Needles every matching line contains.
        required: Vec<usize>,
        /// `!~`.
        negated: bool,
        /// Position in [`QueryPlan::line_filters`].
        index: usize,
    },
}

/// The labels a bucket plan reads and where each use finds them.
#[derive(Clone, Debug, Default)]
pub struct LabelUse {
    /// Every label read (grouping, filters, unwrap), each once.
    pub labels: Vec<String>,
    /// Per field filter: its labels as indices into `labels`.
    pub filters: Vec<Vec<usize>>,
    /// The unwrapped label.
    pub unwrap: Option<usize>,
    /// Per post-unwrap filter: its labels.
    pub post_filters: Vec<Vec<usize>>,
    /// Grouping labels ([`GroupBy::Labels`]).
    pub group: Vec<usize>,
}

impl LabelUse {
    fn index(&mut self, name: &str) -> usize {
        match self.labels.iter().position(|l| l == name) {
            Some(i) => i,
            None => {
                self.labels.push(name.to_string());
                self.labels.len() - 1
            }
        }
    }
}

/// A plan prepared for execution.
pub struct CompiledQuery<'p> {
    /// The plan.
    pub plan: &'p QueryPlan,
    /// Inclusive time bounds.
    pub lo: i64,
    /// Inclusive time bounds.
    pub hi: i64,
    /// Distinct substrings the filters test.
    pub needles: Vec<Vec<u8>>,
    /// The same, prepared for bloom checks.
    pub probes: Vec<runakefli_storage::block::prune::NeedleProbe>,
    /// One per line filter, in plan order.
    pub filters: Vec<FilterPlan>,
    /// The labels read (bucket plans).
    pub labels: LabelUse,
    /// Substrings every line the filters keep contains (hints for reading
    /// old blocks).
    pub hints: Vec<String>,
}

impl<'p> CompiledQuery<'p> {
    /// Compiles `plan`; `None` when `[start, end)` is empty.
    pub fn new(plan: &'p QueryPlan) -> Option<Self> {
        if plan.start >= plan.end {
            return None;
        }
        let mut needles: Vec<Vec<u8>> = Vec::new();
        let mut intern = |s: &str| -> usize {
            match needles.iter().position(|n| n == s.as_bytes()) {
                Some(i) => i,
                None => {
                    needles.push(s.as_bytes().to_vec());
                    needles.len() - 1
                }
            }
        };
        let mut filters = Vec::new();
        for (index, f) in plan.line_filters.iter().enumerate() {
            let exact = match (&f.any_of, f.kind) {
                (_, LineMatch::Substring) => Some(f.values.clone()),
                (Some(any), LineMatch::Regex) => Some(any.clone()),
                (None, LineMatch::Regex) => None,
            };
            filters.push(match exact {
                Some(values) => FilterPlan::AnyOf {
                    needles: values.iter().map(|v| intern(v)).collect(),
                    negated: f.negated,
                },
                None => FilterPlan::Test {
                    required: f
                        .all_of
                        .iter()
                        .filter(|s| !s.is_empty())
                        .map(|v| intern(v))
                        .collect(),
                    negated: f.negated,
                    index,
                },
            });
        }
        let mut hints = Vec::new();
        for f in &plan.line_filters {
            if f.negated {
                continue;
            }
            match (&f.any_of, f.kind) {
                (Some(any), _) if any.len() == 1 => hints.push(any[0].clone()),
                (None, LineMatch::Regex) => hints.extend(f.all_of.iter().cloned()),
                (None, LineMatch::Substring) if f.values.len() == 1 => {
                    hints.push(f.values[0].clone())
                }
                _ => {}
            }
        }
        hints.retain(|h| !h.is_empty());
        hints.sort();
        hints.dedup();
        let mut labels = LabelUse::default();
        if let Some(fs) = &plan.fields {
            for f in &fs.filters {
                let idx = f.labels.iter().map(|l| labels.index(l)).collect();
                labels.filters.push(idx);
            }
            if let Some(u) = &fs.unwrap {
                labels.unwrap = Some(labels.index(&u.label));
                for f in &u.post_filters {
                    let idx = f.labels.iter().map(|l| labels.index(l)).collect();
                    labels.post_filters.push(idx);
                }
            }
        }
        if let PlanOutput::Buckets(b) = &plan.output {
            if let GroupBy::Labels(g) = &b.group_by {
                labels.group = g.iter().map(|l| labels.index(l)).collect();
            }
        }
        let probes = needles
            .iter()
            .map(|n| runakefli_storage::block::prune::NeedleProbe::new(n))
            .collect();
        Some(CompiledQuery {
            plan,
            lo: plan.start,
            hi: plan.end - 1,
            probes,
            needles,
            filters,
            labels,
            hints,
        })
    }

    /// The fields stage, if any.
    pub fn fields(&self) -> Option<&FieldStage> {
        self.plan.fields.as_ref()
    }

    /// Derives what this query needs from a template.
    pub fn template_info(&self, t: &Template) -> TemplateInfo {
        let pieces: Vec<Vec<u8>> = (0..=t.slots().len()).map(|k| t.piece(k).to_vec()).collect();
        let refs: Vec<&[u8]> = pieces.iter().map(|p| p.as_slice()).collect();
        // A slot is a JSON string when quotes enclose it (raw-line slots are not).
        let quoted: Vec<bool> = (0..t.slots().len())
            .map(|k| refs[k].last() == Some(&b'"') && refs[k + 1].first() == Some(&b'"'))
            .collect();
        let needles = self
            .needles
            .iter()
            .map(|n| {
                let mut p = plan_needle(&refs, n)?;
                drop_impossible(&mut p, n, &quoted);
                Some(p)
            })
            .collect();
        let regex_sites = self
            .plan
            .line_filters
            .iter()
            .map(|f| {
                let split = f.split.as_ref()?;
                let rest = |t: &[u8]| std::str::from_utf8(t).is_ok_and(|s| (split.rest)(s));
                Some(regex_sites(&refs, &quoted, split.prefix.as_bytes(), &rest))
            })
            .collect();
        let const_len = pieces.iter().map(|p| p.len()).sum();
        let fields = match self.fields() {
            Some(fs) => TemplateFields::of(t.text(), &fs.parser),
            None => None,
        };
        let names = &self.labels.labels;
        let (label_slots, unquoted_slots) = match &fields {
            Some(tf) => {
                let label = (0..tf.slot_quoted.len())
                    .filter(|&k| {
                        tf.keys.contains(&Some(k)) || {
                            let l = &tf.slot_labels[k];
                            !l.is_empty()
                                && names.iter().any(|n| {
                                    n == l || n.strip_suffix("_extracted") == Some(l.as_str())
                                })
                        }
                    })
                    .collect();
                let unquoted = (0..tf.slot_quoted.len())
                    .filter(|&k| !tf.slot_quoted[k])
                    .collect();
                (label, unquoted)
            }
            None => (Vec::new(), Vec::new()),
        };
        TemplateInfo {
            const_len,
            regex_sites,
            needles,
            fields,
            label_slots,
            unquoted_slots,
        }
    }
}

/// What a query derives from one template (same for every block holding it).
#[derive(Debug)]
pub struct TemplateInfo {
    /// Sum of the pieces' lengths (a line's length without its values).
    pub const_len: usize,
    /// Per query needle: its alignments (`None`: test rebuilt lines).
    pub needles: Vec<Option<NeedlePlan>>,
    /// Per line filter: where a split regexp can match (`None`: not split).
    pub regex_sites: Vec<Option<RegexSites>>,
    /// The `| json` view of the slots; `None` when rows of this template
    /// must be left to the engine (not an object template, keys `| json`
    /// names differently, a parameter the template cannot answer).
    pub fields: Option<TemplateFields>,
    /// Slots that may hold a label the query reads.
    pub label_slots: Vec<usize>,
    /// Slots whose values are not JSON strings (`| json` may reject them).
    pub unquoted_slots: Vec<usize>,
}

/// A shared [`TemplateInfo`].
pub type SharedTemplate = Arc<TemplateInfo>;

/// How `| json` reads a template's slots.
#[derive(Clone, Debug)]
pub struct TemplateFields {
    /// Per slot: the label `| json` gives it (before `_extracted`).
    pub slot_labels: Vec<String>,
    /// A bloom filter of the slot labels ([`LabelBits`]): a name it does
    /// not hold is no slot's label (asked per block of every metadata
    /// name; ~35 labels a template).
    pub label_bits: LabelBits,
    /// Per slot: a JSON string (else a number, boolean, null or array).
    pub slot_quoted: Vec<bool>,
    /// `| json` parameters: per key, the slot of the top-level member of
    /// that name (`None`: no such member).
    pub keys: Vec<Option<usize>>,
}

impl TemplateFields {
    /// The view of template `text` for `parser`; `None` when the template
    /// cannot be read this way.
    pub fn of(text: &[u8], parser: &JsonParser) -> Option<TemplateFields> {
        if text.first() != Some(&b'{') {
            return None;
        }
        let slots = template_slots(text)?;
        let mut slot_labels = Vec::with_capacity(slots.len());
        let mut slot_quoted = Vec::with_capacity(slots.len());
        for (path, quoted) in &slots {
            if path.contains(&b'\\') {
                return None;
            }
            slot_quoted.push(*quoted);
            match parser {
                JsonParser::All => slot_labels.push(loki_json_label(path)?),
                JsonParser::Keys(_) => slot_labels.push(String::new()),
                // Declined before (`execute_plan`): not a JSON template.
                JsonParser::Logfmt { .. } | JsonParser::Base => return None,
            }
        }
        let mut keys = Vec::new();
        if let JsonParser::Keys(params) = parser {
            for p in params {
                let key = p.key.as_bytes();
                let mut found = None;
                for (k, (path, _)) in slots.iter().enumerate() {
                    if path.as_slice() == key {
                        found.get_or_insert(k);
                    } else if path.starts_with(key) && path.get(key.len()) == Some(&b'.') {
                        // The member is an object: its raw text is the value.
                        return None;
                    }
                }
                keys.push(found);
            }
        }
        let mut label_bits = LabelBits::default();
        for l in &slot_labels {
            label_bits.insert(&LabelBits::of(l));
        }
        Some(TemplateFields {
            slot_labels,
            label_bits,
            slot_quoted,
            keys,
        })
    }

    /// Whether some slot's label is `name` (`bits`: [`LabelBits::of`] it).
    pub fn has_slot_label(&self, name: &str, bits: &LabelBits) -> bool {
        self.label_bits.may_hold(bits) && self.slot_labels.iter().any(|l| l == name)
    }
}

/// A 256-bit bloom filter of label names, two bits a name (35 names leave
/// ~6 % of other names passing).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct LabelBits([u64; 4]);

impl LabelBits {
    /// The filter holding `label` alone.
    pub fn of(label: &str) -> LabelBits {
        let h = xxhash_rust::xxh3::xxh3_64(label.as_bytes());
        let mut b = LabelBits::default();
        for bit in [h & 255, (h >> 8) & 255] {
            b.0[(bit / 64) as usize] |= 1 << (bit % 64);
        }
        b
    }

    /// Adds the names of `other`.
    pub fn insert(&mut self, other: &LabelBits) {
        for (w, o) in self.0.iter_mut().zip(other.0) {
            *w |= o;
        }
    }

    /// Whether every name of `other` may be held (false: certainly not).
    pub fn may_hold(&self, other: &LabelBits) -> bool {
        self.0.iter().zip(other.0).all(|(w, o)| w & o == o)
    }
}

/// Where a row finds one label, for one template and set of base labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelSource {
    /// The first of these slots (line order) whose value is a member
    /// (a string, number or boolean); when none is, the base label.
    Json(Vec<usize>),
    /// A `| json` parameter: this slot's value, `""` when absent or null.
    Key(Option<usize>),
    /// The row's metadata or stream labels (or absent).
    Base,
}

/// For each label of `labels`, where rows of a template find it, given which
/// names the base (stream labels and the row's metadata) holds.
pub fn resolve_labels(
    labels: &[String],
    fields: Option<&TemplateFields>,
    stage: Option<&FieldStage>,
    base_has: &dyn Fn(&str) -> bool,
) -> Vec<LabelSource> {
    let final_name = |x: &str| -> String {
        if base_has(x) {
            format!("{x}_extracted")
        } else {
            x.to_string()
        }
    };
    match (stage.map(|s| &s.parser), fields) {
        (Some(JsonParser::All), Some(tf)) => {
            let finals: Vec<String> = tf.slot_labels.iter().map(|l| final_name(l)).collect();
            labels
                .iter()
                .map(|l| {
                    let slots: Vec<usize> = finals
                        .iter()
                        .enumerate()
                        .filter(|(_, f)| *f == l)
                        .map(|(k, _)| k)
                        .collect();
                    if slots.is_empty() {
                        LabelSource::Base
                    } else {
                        LabelSource::Json(slots)
                    }
                })
                .collect()
        }
        (Some(JsonParser::Keys(params)), Some(tf)) => labels
            .iter()
            .map(|l| {
                // Later parameters overwrite earlier ones of the same name.
                let mut src = LabelSource::Base;
                for (p, slot) in params.iter().zip(&tf.keys) {
                    if final_name(&p.label) == *l {
                        src = LabelSource::Key(*slot);
                    }
                }
                src
            })
            .collect(),
        _ => vec![LabelSource::Base; labels.len()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::plan::JsonKey;

    #[test]
    fn slot_labels_are_found_by_their_bits_and_most_others_are_not() {
        let labels: Vec<String> = (0..35).map(|i| format!("field_{i}")).collect();
        let text: String = format!(
            "{{{}}}",
            labels
                .iter()
                .map(|l| format!("\"{l}\":\"\0\""))
                .collect::<Vec<_>>()
                .join(",")
        );
        let tf = TemplateFields::of(text.as_bytes(), &JsonParser::All).unwrap();
        assert_eq!(tf.slot_labels, labels);
        for l in &labels {
            assert!(tf.has_slot_label(l, &LabelBits::of(l)), "{l}");
        }
        let others: Vec<String> = (0..1000).map(|i| format!("other_{i}")).collect();
        assert!(others
            .iter()
            .all(|o| !tf.has_slot_label(o, &LabelBits::of(o))));
        let passing = others
            .iter()
            .filter(|o| tf.label_bits.may_hold(&LabelBits::of(o)))
            .count();
        assert!(passing < 150, "{passing} of 1000 other names pass the bits");
    }

    #[test]
    fn json_labels_follow_loki_naming() {
        let text = b"{\"level\":\"\0\",\"a\":{\"b-c\":\0},\"level\":\"\0\"}";
        // Duplicate paths make a template unusable for the codec, but the
        // view itself is well defined.
        let tf = TemplateFields::of(text, &JsonParser::All).unwrap();
        assert_eq!(tf.slot_labels, vec!["level", "a_b_c", "level"]);
        assert_eq!(tf.slot_quoted, vec![true, false, true]);
        let labels = vec![
            "level".to_string(),
            "level_extracted".to_string(),
            "a_b_c".to_string(),
        ];
        let none = |_: &str| false;
        let stage = FieldStage {
            parser: JsonParser::All,
            filters: vec![],
            unwrap: None,
            drop_errors: false,
        };
        let r = resolve_labels(&labels, Some(&tf), Some(&stage), &none);
        assert_eq!(
            r,
            vec![
                LabelSource::Json(vec![0, 2]),
                LabelSource::Base,
                LabelSource::Json(vec![1])
            ]
        );
        let has_level = |n: &str| n == "level";
        let r = resolve_labels(&labels, Some(&tf), Some(&stage), &has_level);
        assert_eq!(r[0], LabelSource::Base);
        assert_eq!(r[1], LabelSource::Json(vec![0, 2]));
        let keys = JsonParser::Keys(vec![
            JsonKey {
                label: "lvl".into(),
                key: "level".into(),
            },
            JsonKey {
                label: "x".into(),
                key: "missing".into(),
            },
        ]);
        let tf = TemplateFields::of(text, &keys).unwrap();
        assert_eq!(tf.keys, vec![Some(0), None]);
        assert!(TemplateFields::of(
            text,
            &JsonParser::Keys(vec![JsonKey {
                label: "a".into(),
                key: "a".into()
            }])
        )
        .is_none());
        assert!(TemplateFields::of(b"\0", &JsonParser::All).is_none());
    }
}
