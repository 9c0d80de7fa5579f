//! The `| json` stage as SQL columns over a row `r` (its `line`, `metadata`)
//! joined to its stream `s` (`stream_labels`), with the members read once by
//! `JSONExtractKeysAndValues(r.line, 'Dynamic') AS jkv` and the line's kind
//! as `jkind` (see [`Fields::line_kind`]).
//!
//! Each label the plan reads has three SQL expressions ([`Label`]): its
//! text, whether the SQL cannot give Loki's text (the row is then residual
//! wherever the text matters), and its text where the SQL knows it as a
//! number's (`super::number`), which numeric filters and the unwrap read.

use super::number::float_member_text;
use super::{quote, ERROR_LABELS};
use crate::sql::group::base_label;
use crate::Error;
use runakefli_model::plan::{FieldStage, JsonKey, JsonParser};

/// Whether the line may hold the JSON number `-0` as a member's value
/// (ClickHouse reads it as the number `0`; Loki keeps the text `-0`): a
/// `-0` token after a `:`. Also true for such text inside strings, which
/// only makes more rows residual.
const NEG_ZERO: &str = r"match(r.line, ':\\s*-0\\s*[,}\\]]')";

/// A member ClickHouse reads as Loki writes it: absent or `null` (`None`),
/// a string, `true`/`false`, a 64-bit integer. Other types are residual
/// where their text matters.
const EXACT_TYPES: &str = "('None', 'String', 'Bool', 'Int64', 'UInt64')";

/// The members `| json` without parameters turns into labels: scalars.
const SCALAR_TYPES: &str = "('String', 'Int64', 'UInt64', 'Float64', 'Bool')";

/// The line's top-level members, read once.
const JSON_MEMBERS: &str = "JSONExtractKeysAndValues(r.line, 'Dynamic') AS jkv";

/// A label of a row as SQL expressions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Label {
    /// `Nullable(String)`: the text, `NULL` when absent.
    pub value: String,
    /// `UInt8`: the SQL cannot give Loki's text (or cannot tell whether
    /// the label is set).
    pub undecided: String,
    /// `Nullable(String)`: the text as far as it matters as a number — the
    /// text where it is exact, the member's text as written in the line
    /// for a `Float64` member shown unambiguously, else `NULL`.
    pub number: String,
}

/// How labels are extracted.
enum Mode<'a> {
    /// `| json label="key", …`.
    Keys(&'a [JsonKey]),
    /// `| json`: only the labels read by the plan matter.
    All(Vec<String>),
    /// `| logfmt`.
    Logfmt(super::logfmt::Logfmt<'a>),
    /// No parser: base labels only.
    Base,
}

/// The `| json` stage as SQL columns and label look-ups.
pub(super) struct Fields<'a> {
    mode: Mode<'a>,
}

/// `x` with every byte outside `[A-Za-z0-9]` removed (what sanitizing,
/// trimming, prefixes and `_` joins never change).
fn alnum(x: &str) -> String {
    x.bytes()
        .filter(u8::is_ascii_alphanumeric)
        .map(char::from)
        .collect()
}

impl<'a> Fields<'a> {
    /// The stage's parser, for a plan reading the labels `read`.
    ///
    /// `| json` without parameters names a scalar member by its key
    /// trimmed, with each character outside `[A-Za-z0-9_]` replaced by `_`
    /// (and `_` before a leading digit), nested keys joined to their
    /// object's name by `_` (members of an object under a key that
    /// sanitizes to nothing stay top level); `null`s and arrays are skipped,
    /// the first member of each final name wins, and a name the base labels
    /// hold gets `_extracted`. None of these steps changes the key's ASCII
    /// letters and digits: a label `n` can come from a top-level scalar
    /// member whose key has exactly `n`'s letters and digits, or from the
    /// members of an object whose key's letters and digits start `n`'s. The
    /// SQL reads the first scalar member of key `n` itself and leaves a row
    /// to the engine when another member is such a possible source of `n`.
    /// Labels ending in `_extracted` decline (they may come from a member
    /// of another name).
    pub(super) fn new(stage: &'a FieldStage, read: &[String]) -> Result<Self, Error> {
        let keys = match &stage.parser {
            JsonParser::Keys(keys) => keys,
            JsonParser::Logfmt {
                keep_empty, keys, ..
            } => {
                return Ok(Fields {
                    mode: Mode::Logfmt(super::logfmt::Logfmt::new(*keep_empty, keys, read)?),
                });
            }
            JsonParser::Base => return Ok(Fields { mode: Mode::Base }),
            JsonParser::All => {
                for n in read {
                    let plain =
                        !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                    if !ERROR_LABELS.contains(&n.as_str()) && (!plain || n.ends_with("_extracted"))
                    {
                        return Err(Error::Unsupported(format!(
                            "| json without parameters: label {n}"
                        )));
                    }
                }
                return Ok(Fields {
                    mode: Mode::All(read.to_vec()),
                });
            }
        };
        for k in keys {
            let simple = !k.key.is_empty()
                && k.key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !simple || k.label.starts_with("__") {
                return Err(Error::Unsupported(format!(
                    "| json parameter {}={:?}",
                    k.label, k.key
                )));
            }
        }
        Ok(Fields {
            mode: Mode::Keys(keys),
        })
    }

    /// The kind of a line: 0 empty (no label set), 1 a JSON object
    /// ClickHouse parses, 2 `"` or `[` (every parameter's label `""`), 3
    /// residual (Loki's `__error__`, or a `{` line that is not valid JSON).
    /// Without parameters every line but a valid object is residual (Loki's
    /// walk wants an object).
    pub(super) fn line_kind(&self, line: &str) -> String {
        match &self.mode {
            Mode::Keys(_) => format!(
                "multiIf({line} = '', 0, startsWith({line}, '{{'), if(isValidJSON({line}), 1, 3), \
                 startsWith({line}, '\"') OR startsWith({line}, '['), 2, 3)"
            ),
            Mode::All(_) => format!("if(startsWith({line}, '{{') AND isValidJSON({line}), 1, 3)"),
            Mode::Logfmt(l) => l.line_kind(line),
            Mode::Base => "1".to_string(),
        }
    }

    /// Per parameter `i`: its member (`jp{i}`), the member's type (`jt{i}`),
    /// its text for rows of kind 1 or 2 (`jv{i}`), whether that text is
    /// not provably Loki's (`jb{i}`), its number text (`jn{i}`, see
    /// [`Label::number`]) and whether the base labels hold the parameter's
    /// label (`jh{i}`: then it is named `…_extracted`).
    pub(super) fn columns(&self) -> Vec<String> {
        let keys = match &self.mode {
            Mode::Keys(keys) => *keys,
            Mode::All(read) => return all_columns(read),
            Mode::Logfmt(l) => return l.columns(),
            Mode::Base => return Vec::new(),
        };
        let mut out = vec![JSON_MEMBERS.to_string()];
        for (i, k) in keys.iter().enumerate() {
            let l = quote(&k.label);
            out.push(format!(
                "arrayFirst(p -> p.1 = {}, jkv).2 AS jp{i}",
                quote(&k.key)
            ));
            out.push(format!("dynamicType(jp{i}) AS jt{i}"));
            out.push(format!(
                "multiIf(jkind = 2, '', jt{i} = 'String' AND position(toString(jp{i}), '\u{FFFD}') > 0, '', \
                 toString(jp{i})) AS jv{i}"
            ));
            out.push(format!(
                "(jkind = 1 AND (jt{i} NOT IN {EXACT_TYPES} \
                 OR (jt{i} = 'Int64' AND jv{i} = '0' AND {NEG_ZERO}))) AS jb{i}"
            ));
            out.push(format!(
                "if(jkind = 1 AND jt{i} = 'Float64', {}, if(jb{i}, NULL, jv{i})) AS jn{i}",
                float_member_text("r.line", &k.key, &format!("jp{i}"))
            ));
            out.push(format!(
                "(mapContains(s.stream_labels, {l}) OR has(mapKeys(r.metadata), {l})) AS jh{i}"
            ));
        }
        out
    }

    /// Label `name` of a row: the last parameter whose final name is
    /// `name`, else the row's metadata or stream label.
    pub(super) fn label(&self, name: &str) -> Label {
        let mut l = if ERROR_LABELS.contains(&name) {
            Label {
                value: "CAST(NULL, 'Nullable(String)')".to_string(),
                undecided: "0".to_string(),
                number: "CAST(NULL, 'Nullable(String)')".to_string(),
            }
        } else {
            Label {
                value: base_label(name),
                undecided: "0".to_string(),
                number: base_label(name),
            }
        };
        let keys = match &self.mode {
            Mode::Keys(keys) => *keys,
            Mode::Base => return l,
            Mode::Logfmt(f) => {
                return match f.label(name, &l.value) {
                    Some(value) => Label {
                        number: value.clone(),
                        value,
                        undecided: "0".into(),
                    },
                    None => l,
                };
            }
            Mode::All(read) => {
                return match read.iter().position(|n| n == name) {
                    Some(i) if !ERROR_LABELS.contains(&name) => Label {
                        value: format!("if(NOT ah{i} AND at{i} != 'None', av{i}, {})", l.value),
                        undecided: format!("(NOT ah{i} AND ab{i})"),
                        number: format!(
                            "multiIf(ah{i}, {base}, at{i} != 'None', an{i}, aa{i}, NULL, {base})",
                            base = l.number
                        ),
                    },
                    _ => l,
                };
            }
        };
        for (i, k) in keys.iter().enumerate() {
            let cond = if k.label == name {
                format!("jkind IN (1, 2) AND NOT jh{i}")
            } else if format!("{}_extracted", k.label) == name {
                format!("jkind IN (1, 2) AND jh{i}")
            } else {
                continue;
            };
            l = Label {
                value: format!("if({cond}, jv{i}, {})", l.value),
                undecided: format!("if({cond}, jb{i}, {})", l.undecided),
                number: format!("if({cond}, jn{i}, {})", l.number),
            };
        }
        l
    }
}

/// Columns of `| json` without parameters, per read label `i` (named `n`):
/// its first scalar top-level member of key `n` (`ap{i}`), its type
/// (`at{i}`, `None` when there is none), its text (`av{i}`), whether
/// another member may give `n` (`aa{i}`, see [`Fields::new`]), whether the
/// SQL cannot tell Loki's value (`ab{i}`: that, a type printed back
/// otherwise, `-0`), its number text (`an{i}`) and whether the base labels
/// hold `n` (`ah{i}`: then the member is named `n_extracted` and `n` keeps
/// the base value).
fn all_columns(read: &[String]) -> Vec<String> {
    let mut out = vec![JSON_MEMBERS.to_string()];
    for (i, n) in read.iter().enumerate() {
        if ERROR_LABELS.contains(&n.as_str()) {
            continue;
        }
        let q = quote(n);
        out.push(format!(
            "arrayFirst(p -> p.1 = {q} AND dynamicType(p.2) IN {SCALAR_TYPES}, jkv).2 AS ap{i}"
        ));
        out.push(format!("dynamicType(ap{i}) AS at{i}"));
        out.push(format!(
            "if(at{i} = 'String' AND position(toString(ap{i}), '\u{FFFD}') > 0, '', toString(ap{i})) AS av{i}"
        ));
        out.push(format!(
            "arrayExists(p -> p.1 != {q} AND if(dynamicType(p.2) IN {SCALAR_TYPES}, \
             replaceRegexpAll(p.1, '[^A-Za-z0-9]', '') = {a}, \
             dynamicType(p.2) != 'None' AND NOT startsWith(dynamicType(p.2), 'Array') \
             AND startsWith({a}, replaceRegexpAll(p.1, '[^A-Za-z0-9]', ''))), jkv) AS aa{i}",
            a = quote(&alnum(n))
        ));
        out.push(format!(
            "(aa{i} OR at{i} NOT IN {EXACT_TYPES} \
             OR (at{i} = 'Int64' AND av{i} = '0' AND {NEG_ZERO})) AS ab{i}"
        ));
        out.push(format!(
            "if(at{i} = 'Float64', {}, if(ab{i}, NULL, av{i})) AS an{i}",
            float_member_text("r.line", n, &format!("ap{i}"))
        ));
        out.push(format!(
            "(mapContains(s.stream_labels, {q}) OR has(mapKeys(r.metadata), {q})) AS ah{i}"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_take_the_last_parameter_of_their_final_name_else_the_base() {
        let keys = vec![
            JsonKey {
                label: "level".into(),
                key: "lvl".into(),
            },
            JsonKey {
                label: "level_extracted".into(),
                key: "other".into(),
            },
        ];
        let f = Fields {
            mode: Mode::Keys(&keys),
        };
        let l = f.label("level_extracted");
        assert!(l.value.starts_with("if(jkind IN (1, 2) AND NOT jh1, jv1, if(jkind IN (1, 2) AND jh0, jv0, if(has(mapKeys(r.metadata), 'level_extracted')"), "{}", l.value);
        assert_eq!(
            l.undecided,
            "if(jkind IN (1, 2) AND NOT jh1, jb1, if(jkind IN (1, 2) AND jh0, jb0, 0))"
        );
        assert!(l
            .number
            .starts_with("if(jkind IN (1, 2) AND NOT jh1, jn1, if(jkind IN (1, 2) AND jh0, jn0, "));
        assert_eq!(f.label("__error__").value, "CAST(NULL, 'Nullable(String)')");
        assert_eq!(f.label("other").undecided, "0");
        assert_eq!(f.label("other").number, base_label("other"));
        assert!(f
            .line_kind("l")
            .starts_with("multiIf(l = '', 0, startsWith(l, '{'), if(isValidJSON(l), 1, 3)"));
        let cols = f.columns().join("\n");
        assert!(cols.contains(
            "if(jkind = 1 AND jt0 = 'Float64', if(countMatches(r.line, '\"lvl\"\\\\s*:') = 1"
        ));
    }

    #[test]
    fn without_parameters_other_keys_that_may_give_the_label_are_residual() {
        assert_eq!(alnum(" dur-é.ms_1"), "durms1");
        let stage = FieldStage {
            parser: JsonParser::All,
            filters: Vec::new(),
            unwrap: None,
            drop_errors: false,
        };
        let read = vec!["duration_ms".to_string(), "__error__".to_string()];
        let f = Fields::new(&stage, &read).unwrap();
        let cols = f.columns().join("\n");
        assert!(
            cols.contains("replaceRegexpAll(p.1, '[^A-Za-z0-9]', '') = 'durationms'"),
            "{cols}"
        );
        assert!(
            cols.contains(
                "AND startsWith('durationms', replaceRegexpAll(p.1, '[^A-Za-z0-9]', ''))"
            ),
            "{cols}"
        );
        assert_eq!(f.label("duration_ms").undecided, "(NOT ah0 AND ab0)",);
        assert!(f.label("duration_ms").number.starts_with("multiIf(ah0, "));
        for declined in ["level_extracted", "a-b", ""] {
            assert!(
                Fields::new(&stage, &[declined.to_string()]).is_err(),
                "{declined}"
            );
        }
    }
}
