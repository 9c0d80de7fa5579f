//! A batch of syslog messages waiting to be appended.

use crate::metrics::Protocol;
use crate::state::AppState;
use runakefli_ingest::jsondoc::{now_ns, Grouper};
use runakefli_ingest::syslog;
use runakefli_model::TenantId;
use std::sync::Arc;

/// Parsed messages grouped by stream, and how many.
#[derive(Default)]
pub(super) struct Batch {
    grouper: Grouper,
    len: usize,
}

impl Batch {
    /// Parses and maps one message; drops it with a warning when invalid.
    pub(super) fn add(&mut self, frame: &[u8], state: &AppState, peer: &str) {
        let now = now_ns();
        let mapped = syslog::parse(frame, now)
            .map_err(|e| e.to_string())
            .and_then(|m| syslog::to_entry(m, now, &state.push_limits).map_err(|e| e.to_string()));
        match mapped {
            Ok((labels, entry)) => {
                self.grouper.push(labels, entry);
                self.len += 1;
            }
            Err(e) => tracing::warn!(peer, error = %e, "syslog message dropped"),
        }
    }

    /// Messages held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Appends the held messages (if any) durably and empties the batch.
    pub(super) async fn flush(&mut self, state: &Arc<AppState>) {
        if self.len == 0 {
            return;
        }
        let request = std::mem::take(&mut self.grouper).finish();
        let count = self.len;
        self.len = 0;
        let st = state.clone();
        let res = tokio::task::spawn_blocking(move || {
            st.append(Protocol::Syslog, &TenantId::default_tenant(), &request)
        })
        .await;
        match res {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                state.metrics.rejected(Protocol::Syslog, e.reason());
                tracing::error!(error = %e.message, count, "syslog batch lost: append failed")
            }
            Err(e) => tracing::error!(error = %e, count, "syslog batch lost: append task failed"),
        }
    }
}
