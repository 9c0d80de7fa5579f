//! Metadata answers: series, label names and label values.

use crate::error::EngineError;
use crate::labelset::LabelSet;
use runakefli_model::{Backend, Direction, Matcher, ScanControl, ScanRequest, TenantId, Timestamp};
use std::collections::BTreeSet;

/// Label sets of the streams matching any of `selectors` that have entries in
/// `[start, end)`.
pub fn series(
    backend: &dyn Backend,
    tenant: &TenantId,
    selectors: &[Vec<Matcher>],
    start: Timestamp,
    end: Timestamp,
) -> Result<Vec<LabelSet>, EngineError> {
    let mut out: BTreeSet<LabelSet> = BTreeSet::new();
    for sel in selectors {
        let req = ScanRequest {
            tenant: tenant.clone(),
            matchers: sel.clone(),
            start,
            end,
            direction: Direction::Forward,
            required_substrings: Vec::new(),
        };
        backend.scan(&req, &mut |info, batch| {
            if batch.entries.iter().any(|e| e.ts >= start && e.ts < end) {
                out.insert(LabelSet::from(info.labels.as_ref()));
                return ScanControl::NextStream;
            }
            ScanControl::Continue
        })?;
    }
    Ok(out.into_iter().collect())
}

/// Label names, of all streams or of those matching `matchers`.
pub fn label_names(
    backend: &dyn Backend,
    tenant: &TenantId,
    matchers: Option<&[Matcher]>,
    start: Timestamp,
    end: Timestamp,
) -> Result<Vec<String>, EngineError> {
    match matchers {
        None => Ok(backend.label_names(tenant, start, end)?),
        Some(m) => {
            let mut names: BTreeSet<String> = BTreeSet::new();
            for s in backend.streams(tenant, m, start, end)? {
                names.extend(s.labels.pairs().iter().map(|(k, _)| k.clone()));
            }
            Ok(names.into_iter().collect())
        }
    }
}

/// Values of label `name`, over all streams or those matching `matchers`.
pub fn label_values(
    backend: &dyn Backend,
    tenant: &TenantId,
    name: &str,
    matchers: Option<&[Matcher]>,
    start: Timestamp,
    end: Timestamp,
) -> Result<Vec<String>, EngineError> {
    Ok(backend.label_values(tenant, name, matchers.unwrap_or(&[]), start, end)?)
}
