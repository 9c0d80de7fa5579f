//! A plan's cancel flag, checked between the reads of its answer.

use crate::error::TIMEOUT_EXCEEDED;
use crate::Error;
use runakefli_model::plan::QueryPlan;
use std::sync::atomic::Ordering;

/// Fails as a timeout (the engine's `Cancelled`) once `plan`'s cancel flag
/// is raised: its client went away.
pub(crate) fn check_cancel(plan: &QueryPlan) -> Result<(), Error> {
    if plan
        .cancel
        .as_ref()
        .is_some_and(|f| f.load(Ordering::Relaxed))
    {
        return Err(Error::Server {
            status: 0,
            code: Some(TIMEOUT_EXCEEDED),
            message: "query cancelled".into(),
        });
    }
    Ok(())
}
