//! A batch of syslog messages waiting to be appended.

use crate::metrics::Protocol;
use crate::push_gate::{PushCharge, PushGate};
use crate::state::AppState;
use runakefli_ingest::jsondoc::{now_ns, Grouper};
use runakefli_ingest::syslog;
use runakefli_model::TenantId;
use std::sync::Arc;

/// Parsed messages grouped by stream, how many, and their charge to the
/// in-flight push budget ([`crate::push_gate`]).
pub(super) struct Batch {
    grouper: Grouper,
    len: usize,
    charge: PushCharge,
    /// Bytes charged to `charge`.
    charged: usize,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            grouper: Grouper::default(),
            len: 0,
            charge: PushGate::empty_charge(),
            charged: 0,
        }
    }
}

impl Batch {
    /// Charges a frame of `bytes` to the push budget. A batch that would
    /// pass the whole budget by itself is appended first. When the budget is
    /// spent by others and `wait` (TCP), appends what the batch holds
    /// (giving its charge back) and waits for room, then answers true;
    /// otherwise (UDP) counts the frame as refused and answers false: the
    /// caller drops it.
    pub(super) async fn admit(&mut self, bytes: usize, wait: bool, state: &Arc<AppState>) -> bool {
        let cap = state.push_gate.max_bytes();
        if cap == 0 {
            return true;
        }
        if self.charged > 0 && self.charged + bytes > cap {
            self.flush(state).await;
        }
        if state.push_gate.charge(&mut self.charge, bytes).is_ok() {
            self.charged += bytes;
            return true;
        }
        if !wait {
            state
                .metrics
                .rejected(Protocol::Syslog, crate::push_gate::REASON);
            tracing::debug!(bytes, "syslog datagram dropped: push budget spent");
            return false;
        }
        self.flush(state).await;
        state
            .push_gate
            .charge_waiting(&mut self.charge, bytes)
            .await;
        self.charged += bytes;
        true
    }

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
            // Frames that did not parse: give their charge back.
            self.charge = PushGate::empty_charge();
            self.charged = 0;
            return;
        }
        let request = std::mem::take(&mut self.grouper).finish();
        let count = self.len;
        self.len = 0;
        // Held until the append ends, then given back.
        let charge = std::mem::replace(&mut self.charge, PushGate::empty_charge());
        self.charged = 0;
        let st = state.clone();
        let res = tokio::task::spawn_blocking(move || {
            let _charge = charge;
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
