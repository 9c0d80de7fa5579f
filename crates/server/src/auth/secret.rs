//! Secrets as the credentials file stores them: passwords as Argon2id PHC
//! strings (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`), bearer tokens as the
//! hex SHA-256 of the token. Tokens are long random strings, so a fast
//! digest is enough for them; passwords may be guessable, so they get a slow,
//! salted hash.

use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Bytes of randomness in a token made by [`new_token`].
pub const TOKEN_BYTES: usize = 32;

/// A password hashing or parsing failure.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SecretError(String);

/// Hashes `password` with Argon2id (the crate's default parameters) and a
/// random salt, as a PHC string for the credentials file.
pub fn hash_password(password: &str) -> Result<String, SecretError> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| SecretError(format!("hashing the password: {e}")))
}

/// Checks that `phc` is a PHC string this server can verify.
pub fn check_password_hash(phc: &str) -> Result<(), SecretError> {
    let h = PasswordHash::new(phc).map_err(|e| SecretError(format!("not a PHC string: {e}")))?;
    if !h.algorithm.as_str().starts_with("argon2") {
        return Err(SecretError(format!(
            "unsupported algorithm {:?}: use argon2id (`runakefli auth hash-password`)",
            h.algorithm.as_str()
        )));
    }
    Ok(())
}

/// Whether `password` matches the PHC string `phc` (constant time in the
/// password; slow by design: run it off the async threads).
pub fn verify_password(password: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(h) => Argon2::default()
            .verify_password(password.as_bytes(), &h)
            .is_ok(),
        Err(_) => false,
    }
}

/// The SHA-256 of `token`.
pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The SHA-256 of `token` as lowercase hex, the form the file stores.
pub fn token_digest_hex(token: &str) -> String {
    to_hex(&token_digest(token))
}

/// Parses 64 hex digits into a digest.
pub fn parse_digest_hex(hex: &str) -> Result<[u8; 32], SecretError> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(SecretError(format!(
            "expected 64 hex digits (a SHA-256), got {} characters",
            hex.len()
        )));
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
            .map_err(|_| SecretError("expected hex digits".to_string()))?;
    }
    Ok(out)
}

/// A new random bearer token: [`TOKEN_BYTES`] bytes from the OS, as hex.
pub fn new_token() -> String {
    let mut bytes = [0u8; TOKEN_BYTES];
    OsRng.fill_bytes(&mut bytes);
    to_hex(&bytes)
}

/// Random bytes from the OS.
pub fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    OsRng.fill_bytes(&mut key);
    key
}

/// Constant-time equality of two digests.
pub fn digests_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.ct_eq(b).into()
}

/// The SHA-256 of `key`, `user`, a separator and `password`: what the
/// verification cache remembers instead of the password.
pub fn keyed_digest(key: &[u8; 32], user: &str, password: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(key);
    h.update((user.len() as u64).to_le_bytes());
    h.update(user.as_bytes());
    h.update(password.as_bytes());
    h.finalize().into()
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_hash_and_verify() {
        let phc = hash_password("s3cret").unwrap();
        assert!(phc.starts_with("$argon2id$"));
        check_password_hash(&phc).unwrap();
        assert!(verify_password("s3cret", &phc));
        assert!(!verify_password("s3cres", &phc));
        assert!(!verify_password("s3cret", "not a hash"));
        assert_ne!(phc, hash_password("s3cret").unwrap(), "salted");
        assert!(check_password_hash("$2b$12$abcdefghijklmnopqrstuv").is_err());
    }

    #[test]
    fn token_digests_round_trip() {
        let t = new_token();
        assert_eq!(t.len(), 2 * TOKEN_BYTES);
        let hex = token_digest_hex(&t);
        assert!(digests_equal(
            &parse_digest_hex(&hex).unwrap(),
            &token_digest(&t)
        ));
        // echo -n abc | sha256sum
        assert_eq!(
            token_digest_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(parse_digest_hex("abc").is_err());
        assert!(parse_digest_hex(&"zz".repeat(32)).is_err());
        assert!(!digests_equal(&token_digest("a"), &token_digest("b")));
    }
}
