//! Stream selectors split into the matchers SQL evaluates exactly and the
//! rest (regexps outside the RE2 subset both engines read alike, see
//! `sql/regex.rs`), which the backend checks on each selected stream's
//! labels with the engine's own [`Matcher`]. Streams are few next to rows,
//! so a residual matcher costs a wider `streams` read, never a wrong answer.

use runakefli_model::{Labels, Matcher};

/// A selector as SQL matchers and residual matchers.
pub(crate) struct Split {
    /// Matchers `sql::matcher` translates.
    pub sql: Vec<Matcher>,
    /// Matchers checked on the labels after the SQL selection.
    pub residual: Vec<Matcher>,
}

impl Split {
    /// Splits `selector`, keeping each matcher's order within its half.
    pub fn of(selector: &[Matcher]) -> Split {
        let (sql, residual) = selector
            .iter()
            .cloned()
            .partition(|m| crate::sql::matcher(m).is_ok());
        Split { sql, residual }
    }

    /// Whether a stream the SQL half selected satisfies the residual half.
    pub fn keeps(&self, labels: &Labels) -> bool {
        self.residual.iter().all(|m| m.matches_labels(labels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::MatchOp;

    #[test]
    fn untranslatable_regexps_are_checked_on_labels() {
        let sel = [
            Matcher::new("env", MatchOp::Eq, "prod").unwrap(),
            Matcher::new("app", MatchOp::Re, "(?i)[N]GINX").unwrap(),
        ];
        let s = Split::of(&sel);
        assert_eq!(s.sql.len(), 1);
        assert_eq!(s.sql[0].name, "env");
        assert_eq!(s.residual.len(), 1);
        assert!(s.keeps(&Labels::parse(r#"{app="nginx", env="prod"}"#).unwrap()));
        assert!(!s.keeps(&Labels::parse(r#"{app="api", env="prod"}"#).unwrap()));
        assert!(Split::of(&sel[..1]).residual.is_empty());
    }
}
