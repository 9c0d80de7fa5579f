//! The cap on live tails open at once per tenant (Loki's
//! `max_concurrent_tail_requests`).
//!
//! A tail takes a [`TailSlot`] before its WebSocket is upgraded and gives it
//! back when the connection ends (the slot's `Drop`). Past the cap the tail
//! is refused as Loki refuses it: the upgrade succeeds and the server closes
//! at once with code 1011 and [`TailLimitExceeded`]'s text, which is the
//! gRPC status text Loki's querier writes into its close frame.

use runakefli_model::TenantId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Default cap per tenant: Loki's default.
pub const DEFAULT_MAX_CONCURRENT_TAIL_REQUESTS: usize = 10;

/// A tail refused because its tenant has `limit` tails open already.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rpc error: code = Code(400) desc = max concurrent tail requests limit exceeded, count > limit ({} > {limit})", limit + 1)]
pub struct TailLimitExceeded {
    /// The configured cap.
    pub limit: usize,
}

/// Open tails per tenant, and the cap.
#[derive(Debug)]
pub struct TailSlots {
    limit: usize,
    open: Arc<Mutex<HashMap<TenantId, usize>>>,
}

/// One open tail; dropping it frees the slot.
#[derive(Debug)]
pub struct TailSlot {
    tenant: TenantId,
    open: Arc<Mutex<HashMap<TenantId, usize>>>,
}

impl TailSlots {
    /// At most `limit` tails per tenant; 0 for no cap.
    pub fn new(limit: usize) -> TailSlots {
        TailSlots {
            limit,
            open: Arc::default(),
        }
    }

    /// Takes a slot for `tenant`, or refuses when its tails are at the cap.
    pub fn acquire(&self, tenant: &TenantId) -> Result<TailSlot, TailLimitExceeded> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let n = open.entry(tenant.clone()).or_insert(0);
        if self.limit > 0 && *n >= self.limit {
            return Err(TailLimitExceeded { limit: self.limit });
        }
        *n += 1;
        Ok(TailSlot {
            tenant: tenant.clone(),
            open: self.open.clone(),
        })
    }

    /// Tails open now for `tenant`.
    pub fn open(&self, tenant: &TenantId) -> usize {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.get(tenant).copied().unwrap_or(0)
    }
}

impl Drop for TailSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.tenant) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(s: &str) -> TenantId {
        TenantId::new(s)
    }

    #[test]
    fn cap_is_per_tenant_and_slots_come_back_on_drop() {
        let slots = TailSlots::new(2);
        let a1 = slots.acquire(&tenant("a")).unwrap();
        let _a2 = slots.acquire(&tenant("a")).unwrap();
        let err = slots.acquire(&tenant("a")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "rpc error: code = Code(400) desc = max concurrent tail requests limit exceeded, count > limit (3 > 2)"
        );
        let _b = slots.acquire(&tenant("b")).unwrap();
        drop(a1);
        assert_eq!(slots.open(&tenant("a")), 1);
        let _a3 = slots.acquire(&tenant("a")).unwrap();
        assert_eq!(slots.open(&tenant("a")), 2);
    }

    #[test]
    fn zero_means_no_cap() {
        let slots = TailSlots::new(0);
        let held: Vec<_> = (0..50)
            .map(|_| slots.acquire(&tenant("a")).unwrap())
            .collect();
        assert_eq!(slots.open(&tenant("a")), 50);
        drop(held);
        assert_eq!(slots.open(&tenant("a")), 0);
    }
}
