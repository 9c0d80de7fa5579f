//! Optional authentication for deployments without a gateway
//! (`--auth-file`): HTTP basic auth and bearer tokens, each mapped to the
//! tenants it may use. Off by default; then the tenant comes from
//! `X-Scope-OrgID` (or is `fake`), as before.
//!
//! When on, every request except [`layer::OPEN_PATHS`] needs a valid
//! credential ([`layer::require`]); the credential decides the tenant, so
//! handlers keep reading it from `X-Scope-OrgID`, which the layer has
//! checked or set. The credentials file's format is in [`file`]; secrets
//! are compared in constant time and stored hashed ([`secret`]). The web
//! UI's live tail, a WebSocket that cannot carry `Authorization`, is let in
//! by a short-lived single-use ticket instead ([`ticket`]).

pub mod file;
pub mod layer;
pub mod secret;
pub mod ticket;

pub use file::{Credentials, FileError, Tenants};

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Most password verifications running at once (each Argon2 run holds
/// about 19 MiB and a core for some milliseconds); more wait their turn.
pub const MAX_CONCURRENT_HASHES: usize = 4;

/// Who a verified credential is and what it may use.
#[derive(Debug, Clone)]
pub struct Principal {
    /// The user or token name from the file (for logs; never the secret).
    pub name: String,
    /// The tenants it may use.
    pub tenants: Tenants,
}

/// Verifies credentials against a loaded [`Credentials`] file.
///
/// Passwords are checked with Argon2 on the blocking pool, at most
/// [`MAX_CONCURRENT_HASHES`] at a time; the last password verified for each
/// user is remembered as a keyed SHA-256 (the key is random per process),
/// so a client sending the same basic credentials on every push pays the
/// slow hash once. An unknown user name costs the same Argon2 run as a
/// wrong password.
pub struct Authenticator {
    users: HashMap<String, file::User>,
    tokens: Vec<file::Token>,
    dummy_hash: String,
    cache_key: [u8; 32],
    verified: Mutex<HashMap<String, [u8; 32]>>,
    hashing: tokio::sync::Semaphore,
    tickets: ticket::TailTickets,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("users", &self.users.len())
            .field("tokens", &self.tokens.len())
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// An authenticator over `credentials`.
    pub fn new(credentials: Credentials) -> Result<Authenticator, FileError> {
        let dummy_hash = secret::hash_password(&secret::new_token())
            .map_err(|e| FileError::Invalid(e.to_string()))?;
        Ok(Authenticator {
            users: credentials
                .users
                .into_iter()
                .map(|u| (u.name.clone(), u))
                .collect(),
            tokens: credentials.tokens,
            dummy_hash,
            cache_key: secret::random_key(),
            verified: Mutex::new(HashMap::new()),
            hashing: tokio::sync::Semaphore::new(MAX_CONCURRENT_HASHES),
            tickets: ticket::TailTickets::default(),
        })
    }

    /// Loads the credentials file at `path`.
    pub fn load(path: &std::path::Path) -> Result<Authenticator, FileError> {
        Authenticator::new(Credentials::load(path)?)
    }

    /// The live tail tickets minted for the web UI.
    pub fn tickets(&self) -> &ticket::TailTickets {
        &self.tickets
    }

    /// Whether any basic-auth user is configured.
    pub fn has_users(&self) -> bool {
        !self.users.is_empty()
    }

    /// Whether any bearer token is configured.
    pub fn has_tokens(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// How many basic-auth users are configured.
    pub fn user_count(&self) -> usize {
        self.users.len()
    }

    /// How many bearer tokens are configured.
    pub fn token_count(&self) -> usize {
        self.tokens.len()
    }

    /// The token's principal: its digest is compared with every configured
    /// one in constant time, without stopping at a match.
    pub fn verify_token(&self, token: &str) -> Option<Principal> {
        let digest = secret::token_digest(token);
        let mut found = None;
        for t in &self.tokens {
            if secret::digests_equal(&digest, &t.digest) && found.is_none() {
                found = Some(t);
            }
        }
        found.map(|t| Principal {
            name: t.name.clone(),
            tenants: t.tenants.clone(),
        })
    }

    /// The user's principal when `password` is theirs.
    pub async fn verify_basic(self: &Arc<Self>, user: &str, password: &str) -> Option<Principal> {
        let keyed = secret::keyed_digest(&self.cache_key, user, password);
        let known = self.users.get(user);
        if let (Some(u), Some(seen)) = (known, self.verified.lock().get(user)) {
            if secret::digests_equal(seen, &keyed) {
                return Some(principal(u));
            }
        }
        let phc = known.map_or(self.dummy_hash.clone(), |u| u.password_hash.clone());
        let password = password.to_string();
        let ok = {
            let _permit = self.hashing.acquire().await.ok()?;
            tokio::task::spawn_blocking(move || secret::verify_password(&password, &phc))
                .await
                .unwrap_or(false)
        };
        let u = known.filter(|_| ok)?;
        self.verified.lock().insert(user.to_string(), keyed);
        Some(principal(u))
    }
}

fn principal(u: &file::User) -> Principal {
    Principal {
        name: u.name.clone(),
        tenants: u.tenants.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authenticator() -> Arc<Authenticator> {
        let text = format!(
            "users: [{{name: u, password_hash: '{}', tenants: [a]}}]\n\
             tokens: [{{name: t, sha256: {}, tenants: [b, c]}}]\n",
            secret::hash_password("pw").unwrap(),
            secret::token_digest_hex("tok"),
        );
        Arc::new(Authenticator::new(Credentials::parse(&text).unwrap()).unwrap())
    }

    #[tokio::test]
    async fn basic_and_bearer_credentials_verify() {
        let a = authenticator();
        let p = a.verify_basic("u", "pw").await.unwrap();
        assert_eq!(p.name, "u");
        assert_eq!(p.tenants.single().unwrap().as_str(), "a");
        // Second time from the cache, same answer; a wrong password is not
        // taken from it.
        assert!(a.verify_basic("u", "pw").await.is_some());
        assert!(a.verify_basic("u", "pW").await.is_none());
        assert!(a.verify_basic("nobody", "pw").await.is_none());
        assert!(a.verify_basic("u", "").await.is_none());
        let t = a.verify_token("tok").unwrap();
        assert!(t.tenants.allows("c") && !t.tenants.allows("a"));
        assert!(a.verify_token("tok ").is_none());
        assert!(a.verify_token("pw").is_none());
    }
}
