//! `runakefli auth`: makes the secrets of the credentials file that
//! `serve --auth-file` reads (format in `runakefli_server::auth::file`).
#![allow(
    clippy::print_stdout,
    reason = "the printed hash or token is the command's answer"
)]

use anyhow::Context;
use clap::Subcommand;
use runakefli_server::auth::secret;
use std::io::BufRead;

/// Subcommands of `runakefli auth`.
#[derive(Subcommand, Debug)]
pub enum AuthCommand {
    /// Read a password from the first line of standard input and print its Argon2id hash (a `password_hash:` value).
    HashPassword,
    /// Print a new random bearer token, and the `tokens:` entry that admits it (only its SHA-256 goes into the file).
    NewToken {
        /// The entry's name (shown in the server's log).
        #[arg(long, default_value = "collector")]
        name: String,
        /// A tenant the token may use; repeat for several.
        #[arg(long = "tenant", required = true)]
        tenants: Vec<String>,
    },
}

/// Runs an `auth` subcommand.
pub fn run(cmd: AuthCommand) -> anyhow::Result<()> {
    match cmd {
        AuthCommand::HashPassword => {
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .context("reading the password from standard input")?;
            let password = line.strip_suffix('\n').unwrap_or(&line);
            let password = password.strip_suffix('\r').unwrap_or(password);
            anyhow::ensure!(!password.is_empty(), "empty password on standard input");
            println!("{}", secret::hash_password(password)?);
        }
        AuthCommand::NewToken { name, tenants } => {
            for t in &tenants {
                runakefli_model::TenantId::validate(t)
                    .map_err(|e| anyhow::anyhow!("tenant {t:?}: {e}"))?;
            }
            let token = secret::new_token();
            println!("token: {token}");
            println!("# credentials file entry (keeps only the SHA-256):");
            println!("tokens:");
            println!("  - name: {}", serde_json::to_string(&name)?);
            println!("    sha256: {}", secret::token_digest_hex(&token));
            println!("    tenants: {}", serde_json::to_string(&tenants)?);
        }
    }
    Ok(())
}
