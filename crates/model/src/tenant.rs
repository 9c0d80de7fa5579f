//! Tenants: every stream belongs to exactly one, and no query crosses them.

use std::fmt;

/// The tenant a request acts for (Loki's `X-Scope-OrgID`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantId(String);

impl TenantId {
    /// The tenant used when multi-tenancy is off (Loki calls it `fake`).
    pub const DEFAULT: &'static str = "fake";

    /// Wraps a tenant name. Callers validate it first with [`TenantId::validate`].
    pub fn new(name: impl Into<String>) -> Self {
        TenantId(name.into())
    }

    /// The default single tenant.
    pub fn default_tenant() -> Self {
        TenantId(Self::DEFAULT.to_string())
    }

    /// The tenant's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Checks a tenant name as Loki does: 1..=150 bytes of `[A-Za-z0-9!._*'()-]`,
    /// and not `.` or `..`. Returns a message naming the problem.
    pub fn validate(name: &str) -> Result<(), String> {
        if name.is_empty() {
            return Err("no org id".to_string());
        }
        if name.len() > 150 {
            return Err("tenant ID is too long: max 150 characters".to_string());
        }
        if name == "." || name == ".." {
            return Err("tenant ID is '.' or '..'".to_string());
        }
        for c in name.chars() {
            let ok = c.is_ascii_alphanumeric() || "!-_.*'()".contains(c);
            if !ok {
                return Err(format!(
                    "tenant ID '{name}' contains unsupported character '{c}'"
                ));
            }
        }
        Ok(())
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
