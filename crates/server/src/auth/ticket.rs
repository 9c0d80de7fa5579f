//! Tail tickets: how the web UI opens the live tail when it authenticates
//! with a header a browser cannot put on a WebSocket (`Authorization`).
//!
//! An authenticated call (`POST /ui/api/tail-ticket`) mints a ticket: 32
//! random bytes from the operating system's CSPRNG, as hex, bound to the
//! credential's principal, the tenant the call was checked for and the
//! LogQL query. The auth layer accepts it as the `ticket` query parameter on
//! `/loki/api/v1/tail` only ([`TAIL_PATH`]), once (presenting it removes
//! it, whether or not it then matches), within [`TICKET_TTL`] of minting,
//! and only for the same tenant and query.
//!
//! Tickets are looked up by the full random value as a hash-map key, so no
//! constant-time comparison is needed; their values are never logged. At
//! most [`MAX_LIVE_TICKETS`] are held: minting sweeps expired ones first
//! and is refused when the store is still full.

use super::{secret, Principal};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The only path a ticket is accepted on.
pub const TAIL_PATH: &str = "/loki/api/v1/tail";

/// The query parameter that carries a ticket.
pub const TICKET_PARAM: &str = "ticket";

/// How long a ticket may wait to be used.
pub const TICKET_TTL: Duration = Duration::from_secs(30);

/// Most tickets held at once (minted and not yet used or expired).
pub const MAX_LIVE_TICKETS: usize = 1024;

/// Why no ticket was minted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TicketError {
    /// [`MAX_LIVE_TICKETS`] unexpired tickets are already waiting.
    #[error("too many tail tickets waiting to be used; try again in {} s", TICKET_TTL.as_secs())]
    Full,
}

/// What a ticket stands for.
#[derive(Debug, Clone)]
pub struct Ticket {
    /// The credential that minted it.
    pub principal: Principal,
    /// The tenant it was minted for (`None`: no `X-Scope-OrgID`).
    pub tenant: Option<String>,
    /// The LogQL query it may tail.
    pub query: String,
    expires: Instant,
}

/// The live tickets.
#[derive(Default)]
pub struct TailTickets {
    live: Mutex<HashMap<String, Ticket>>,
}

impl std::fmt::Debug for TailTickets {
    /// The count only: ticket values are never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TailTickets")
            .field("live", &self.len())
            .finish()
    }
}

impl TailTickets {
    /// A new ticket for `principal`, `tenant` and `query`, valid until
    /// `now + TICKET_TTL`.
    pub fn mint(
        &self,
        principal: Principal,
        tenant: Option<String>,
        query: String,
        now: Instant,
    ) -> Result<String, TicketError> {
        let mut live = self.live.lock();
        if live.len() >= MAX_LIVE_TICKETS {
            live.retain(|_, t| t.expires > now);
        }
        if live.len() >= MAX_LIVE_TICKETS {
            return Err(TicketError::Full);
        }
        let value = secret::new_token();
        live.insert(
            value.clone(),
            Ticket {
                principal,
                tenant,
                query,
                expires: now + TICKET_TTL,
            },
        );
        Ok(value)
    }

    /// Removes the ticket `value` and returns what it stands for, when it
    /// exists and has not expired at `now`. A second call with the same
    /// value finds nothing.
    pub fn take(&self, value: &str, now: Instant) -> Option<Ticket> {
        self.live.lock().remove(value).filter(|t| now < t.expires)
    }

    /// How many tickets are held (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        self.live.lock().len()
    }

    /// Whether no ticket is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Tenants;

    fn principal() -> Principal {
        Principal {
            name: "t".into(),
            tenants: Tenants::All,
        }
    }

    #[test]
    fn tickets_are_random_single_use_and_expire() {
        let store = TailTickets::default();
        let t0 = Instant::now();
        let a = store
            .mint(principal(), None, "{a=\"1\"}".into(), t0)
            .unwrap();
        let b = store
            .mint(principal(), None, "{a=\"1\"}".into(), t0)
            .unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 64, "256 random bits as hex");
        let got = store.take(&a, t0 + Duration::from_secs(29)).unwrap();
        assert_eq!(got.query, "{a=\"1\"}");
        assert!(store.take(&a, t0).is_none(), "used once");
        assert!(store.take(&b, t0 + TICKET_TTL).is_none(), "expired");
        assert!(store.is_empty());
    }

    #[test]
    fn the_store_is_bounded_and_sweeps_expired_tickets() {
        let store = TailTickets::default();
        let t0 = Instant::now();
        for _ in 0..MAX_LIVE_TICKETS {
            store.mint(principal(), None, "q".into(), t0).unwrap();
        }
        assert_eq!(
            store.mint(principal(), None, "q".into(), t0 + Duration::from_secs(1)),
            Err(TicketError::Full)
        );
        // Once they have expired, minting sweeps them.
        let later = t0 + TICKET_TTL + Duration::from_secs(1);
        store.mint(principal(), None, "q".into(), later).unwrap();
        assert_eq!(store.len(), 1);
    }
}
