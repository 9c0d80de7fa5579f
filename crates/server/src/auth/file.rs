//! The credentials file (`--auth-file`), YAML:
//!
//! ```yaml
//! users:                 # HTTP basic auth
//!   - name: grafana
//!     password_hash: "$argon2id$v=19$m=19456,t=2,p=1$…"   # runakefli auth hash-password
//!     tenants: [team-a, team-b]
//! tokens:                # Authorization: Bearer <token>
//!   - name: collector-a  # named in the server's trace log, never the secret
//!     sha256: "9f86d081…" # runakefli auth new-token
//!     tenants: [team-a]
//!   - name: operator
//!     sha256: "…"
//!     all_tenants: true
//! ```
//!
//! Every entry names its tenants (or `all_tenants: true`, kept apart from
//! the list because `*` is a valid tenant name). Unknown keys, duplicate
//! names or token digests, malformed hashes and invalid tenant names are
//! refused when the server starts, so a typo never opens or closes access
//! silently.

use super::secret::{check_password_hash, parse_digest_hex};
use runakefli_model::TenantId;
use serde::Deserialize;
use std::collections::HashSet;

/// Why the credentials file was refused.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not the expected YAML.
    #[error("parsing the credentials file: {0}")]
    Yaml(#[from] serde_yaml::Error),
    /// An entry is invalid.
    #[error("credentials file: {0}")]
    Invalid(String),
}

/// The tenants a credential may act for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tenants {
    /// Any tenant (`all_tenants: true`); the request names it.
    All,
    /// These tenants, at least one, without duplicates.
    Only(Vec<TenantId>),
}

impl Tenants {
    /// Whether `tenant` is one of them.
    pub fn allows(&self, tenant: &str) -> bool {
        match self {
            Tenants::All => true,
            Tenants::Only(list) => list.iter().any(|t| t.as_str() == tenant),
        }
    }

    /// The tenant used when the request names none: the only one, if so.
    pub fn single(&self) -> Option<&TenantId> {
        match self {
            Tenants::Only(list) if list.len() == 1 => list.first(),
            _ => None,
        }
    }
}

/// A basic-auth user.
#[derive(Debug, Clone)]
pub struct User {
    /// The user name (no `:`).
    pub name: String,
    /// Argon2 PHC string of the password.
    pub password_hash: String,
    /// What it may use.
    pub tenants: Tenants,
}

/// A bearer token.
#[derive(Debug, Clone)]
pub struct Token {
    /// A name for the log.
    pub name: String,
    /// SHA-256 of the token.
    pub digest: [u8; 32],
    /// What it may use.
    pub tenants: Tenants,
}

/// The parsed, validated file.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// Basic-auth users.
    pub users: Vec<User>,
    /// Bearer tokens.
    pub tokens: Vec<Token>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    users: Vec<RawUser>,
    #[serde(default)]
    tokens: Vec<RawToken>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUser {
    name: String,
    password_hash: String,
    #[serde(default)]
    tenants: Vec<String>,
    #[serde(default)]
    all_tenants: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    name: String,
    sha256: String,
    #[serde(default)]
    tenants: Vec<String>,
    #[serde(default)]
    all_tenants: bool,
}

fn invalid(msg: String) -> FileError {
    FileError::Invalid(msg)
}

fn tenants(what: &str, list: Vec<String>, all: bool) -> Result<Tenants, FileError> {
    match (all, list.is_empty()) {
        (true, true) => return Ok(Tenants::All),
        (true, false) => {
            return Err(invalid(format!(
                "{what}: give either tenants or all_tenants, not both"
            )))
        }
        (false, true) => {
            return Err(invalid(format!(
                "{what}: no tenants (list them, or set all_tenants: true)"
            )))
        }
        (false, false) => {}
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(list.len());
    for t in list {
        TenantId::validate(&t).map_err(|e| invalid(format!("{what}: tenant {t:?}: {e}")))?;
        if seen.insert(t.clone()) {
            out.push(TenantId::new(t));
        }
    }
    Ok(Tenants::Only(out))
}

fn check_name(kind: &str, name: &str, seen: &mut HashSet<String>) -> Result<(), FileError> {
    if name.trim().is_empty() {
        return Err(invalid(format!("a {kind} has an empty name")));
    }
    if !seen.insert(name.to_string()) {
        return Err(invalid(format!("{kind} {name:?} is listed twice")));
    }
    Ok(())
}

impl Credentials {
    /// Parses and validates the file's text.
    pub fn parse(text: &str) -> Result<Credentials, FileError> {
        let raw: RawFile = serde_yaml::from_str(text)?;
        let mut names = HashSet::new();
        let mut users = Vec::with_capacity(raw.users.len());
        for u in raw.users {
            check_name("user", &u.name, &mut names)?;
            if u.name.contains(':') {
                return Err(invalid(format!(
                    "user {:?}: a basic-auth user name cannot contain ':'",
                    u.name
                )));
            }
            check_password_hash(&u.password_hash)
                .map_err(|e| invalid(format!("user {:?}: password_hash: {e}", u.name)))?;
            let what = format!("user {:?}", u.name);
            users.push(User {
                tenants: tenants(&what, u.tenants, u.all_tenants)?,
                name: u.name,
                password_hash: u.password_hash,
            });
        }
        let mut names = HashSet::new();
        let mut digests = HashSet::new();
        let mut tokens = Vec::with_capacity(raw.tokens.len());
        for t in raw.tokens {
            check_name("token", &t.name, &mut names)?;
            let digest = parse_digest_hex(&t.sha256)
                .map_err(|e| invalid(format!("token {:?}: sha256: {e}", t.name)))?;
            if !digests.insert(digest) {
                return Err(invalid(format!(
                    "token {:?}: the same token is listed twice",
                    t.name
                )));
            }
            let what = format!("token {:?}", t.name);
            tokens.push(Token {
                tenants: tenants(&what, t.tenants, t.all_tenants)?,
                name: t.name,
                digest,
            });
        }
        if users.is_empty() && tokens.is_empty() {
            return Err(invalid(
                "no users and no tokens: nobody could use the server".to_string(),
            ));
        }
        Ok(Credentials { users, tokens })
    }

    /// Reads and parses the file at `path`.
    pub fn load(path: &std::path::Path) -> Result<Credentials, FileError> {
        let text = std::fs::read_to_string(path).map_err(|source| FileError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Credentials::parse(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::secret::{hash_password, token_digest_hex};

    fn err(text: &str) -> String {
        Credentials::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn a_valid_file_parses() {
        let phc = hash_password("pw").unwrap();
        let text = format!(
            "users:\n  - name: grafana\n    password_hash: '{phc}'\n    tenants: [a, b, a]\n\
             tokens:\n  - name: c\n    sha256: {}\n    tenants: [a]\n\
             \x20 - name: op\n    sha256: {}\n    all_tenants: true\n",
            token_digest_hex("t1"),
            token_digest_hex("t2"),
        );
        let c = Credentials::parse(&text).unwrap();
        assert_eq!(c.users.len(), 1);
        assert_eq!(
            c.users[0].tenants,
            Tenants::Only(vec![TenantId::new("a"), TenantId::new("b")])
        );
        assert_eq!(c.users[0].tenants.single(), None);
        assert_eq!(c.tokens[0].tenants.single().unwrap().as_str(), "a");
        assert!(c.tokens[1].tenants.allows("anything"));
        assert!(!c.tokens[0].tenants.allows("b"));
    }

    #[test]
    fn mistakes_are_refused_with_a_reason() {
        let d = token_digest_hex("t");
        assert!(err("").contains("no users and no tokens"));
        assert!(err("tokenz: []").contains("unknown field"));
        assert!(err(&format!("tokens: [{{name: a, sha256: {d}}}]")).contains("no tenants"));
        assert!(err(&format!(
            "tokens: [{{name: a, sha256: {d}, tenants: [x], all_tenants: true}}]"
        ))
        .contains("not both"));
        assert!(err("tokens: [{name: a, sha256: abc, tenants: [x]}]").contains("64 hex"));
        assert!(err(&format!(
            "tokens: [{{name: a, sha256: {d}, tenants: [x]}}, {{name: b, sha256: {d}, tenants: [x]}}]"
        ))
        .contains("listed twice"));
        assert!(err(&format!(
            "tokens: [{{name: a, sha256: {d}, tenants: ['x/y']}}]"
        ))
        .contains("unsupported character"));
        assert!(
            err("users: [{name: u, password_hash: plain, tenants: [x]}]").contains("password_hash")
        );
        let phc = hash_password("pw").unwrap();
        assert!(err(&format!(
            "users: [{{name: 'a:b', password_hash: '{phc}', tenants: [x]}}]"
        ))
        .contains("cannot contain ':'"));
    }
}
