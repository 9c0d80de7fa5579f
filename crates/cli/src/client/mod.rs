//! The command-line client: `runakefli query`, `labels`, `series` (logcli's
//! commands) and `push`, all over the Loki HTTP API of a running server.

pub mod push;
pub mod query;

use anyhow::{bail, Context};
use clap::Args;
use std::io::IsTerminal;
use std::time::Duration;

/// Where the server is and who is asking.
#[derive(Args, Debug, Clone)]
pub struct Target {
    /// Server address (logcli's LOKI_ADDR).
    #[arg(long, env = "LOKI_ADDR", default_value = "http://127.0.0.1:3100")]
    pub addr: String,
    /// Tenant, sent as X-Scope-OrgID (servers started with --multi-tenant need it).
    #[arg(long, env = "LOKI_ORG_ID")]
    pub org_id: Option<String>,
    /// Basic-auth user (servers started with --auth-file; logcli's LOKI_USERNAME).
    #[arg(long, env = "LOKI_USERNAME")]
    pub username: Option<String>,
    /// Basic-auth password (logcli's LOKI_PASSWORD).
    #[arg(long, env = "LOKI_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Bearer token, sent as `Authorization: Bearer` (logcli's LOKI_BEARER_TOKEN).
    #[arg(
        long,
        env = "LOKI_BEARER_TOKEN",
        hide_env_values = true,
        conflicts_with = "username"
    )]
    pub bearer_token: Option<String>,
    /// Seconds to wait for one HTTP request.
    #[arg(long, default_value_t = 120)]
    pub timeout_secs: u64,
}

impl Target {
    fn agent(&self) -> ureq::Agent {
        ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(self.timeout_secs))
            .build()
    }

    /// Adds the tenant and credentials headers.
    fn identify(&self, mut req: ureq::Request) -> ureq::Request {
        use base64::Engine as _;
        if let Some(t) = &self.org_id {
            req = req.set("X-Scope-OrgID", t);
        }
        if let Some(t) = &self.bearer_token {
            req = req.set("Authorization", &format!("Bearer {t}"));
        } else if let Some(u) = &self.username {
            let pair = format!("{u}:{}", self.password.as_deref().unwrap_or(""));
            let b = base64::engine::general_purpose::STANDARD.encode(pair);
            req = req.set("Authorization", &format!("Basic {b}"));
        }
        req
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.addr.trim_end_matches('/'), path)
    }

    /// GETs `path`, returning the body of a 2xx answer as text.
    pub fn get_text(&self, path: &str) -> anyhow::Result<String> {
        let req = self.identify(self.agent().get(&self.url(path)));
        finish(req.call(), path)
    }

    /// GETs `path` with `params`, returning the JSON body of a 200.
    fn get_json(&self, path: &str, params: &[(&str, String)]) -> anyhow::Result<serde_json::Value> {
        let mut req = self.identify(self.agent().get(&self.url(path)));
        for (k, v) in params {
            req = req.query(k, v);
        }
        let body = finish(req.call(), path)?;
        serde_json::from_str(&body).with_context(|| format!("{path}: the answer is not JSON"))
    }
}

/// The body of a 2xx answer, or an error with the server's message.
fn finish(r: Result<ureq::Response, ureq::Error>, what: &str) -> anyhow::Result<String> {
    match r {
        Ok(resp) => Ok(resp.into_string()?),
        Err(ureq::Error::Status(code, resp)) => {
            let text = resp.into_string().unwrap_or_default();
            bail!("{what}: the server answered {code}: {}", text.trim())
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!("{what}: request failed"))),
    }
}

/// Progress lines on stderr, at most a few per second, only when stderr is
/// a terminal (or forced) and not silenced.
pub struct Progress {
    on: bool,
    tty: bool,
    last: std::time::Instant,
}

impl Progress {
    /// `force`: also when stderr is not a terminal; `quiet`: never.
    pub fn new(force: bool, quiet: bool) -> Self {
        let tty = std::io::stderr().is_terminal();
        Progress {
            on: !quiet && (force || tty),
            tty,
            last: std::time::Instant::now(),
        }
    }

    /// Shows `msg` unless one was shown recently (200 ms on a terminal,
    /// where the line is rewritten in place; 1 s otherwise, a line each).
    pub fn tick(&mut self, msg: impl FnOnce() -> String) {
        let every = Duration::from_millis(if self.tty { 200 } else { 1000 });
        if self.on && self.last.elapsed() >= every {
            if self.tty {
                eprint!("\r{}\x1b[K", msg());
            } else {
                eprintln!("{}", msg());
            }
            self.last = std::time::Instant::now();
        }
    }

    /// Ends the progress line.
    pub fn done(&mut self) {
        if self.on && self.tty {
            eprint!("\r\x1b[K");
        }
    }
}

/// Nanoseconds since the epoch.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}
