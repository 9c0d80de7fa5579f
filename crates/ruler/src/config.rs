//! The ruler's settings (`serve --rules-dir …`).

use std::path::PathBuf;
use std::time::Duration;

/// Where rules live and where their results go.
#[derive(Debug, Clone)]
pub struct Config {
    /// Rule files: `<dir>/<tenant>/<namespace>.yaml`.
    pub rules_dir: PathBuf,
    /// Interval of a group that sets none (Loki's `evaluation_interval`).
    pub default_interval: Duration,
    /// How often the directory is checked for changed files (SIGHUP reloads
    /// at once).
    pub poll_interval: Duration,
    /// Alertmanagers' base URLs, each sent every alert; none: alerts are
    /// kept, not sent.
    pub alertmanager_urls: Vec<String>,
    /// Labels added to every alert sent that lacks them (Loki's ruler
    /// `external_labels`).
    pub external_labels: Vec<(String, String)>,
    /// A firing alert is sent again this often.
    pub resend_delay: Duration,
    /// Alerts waiting to be sent; past it the oldest are dropped.
    pub notification_queue_capacity: usize,
    /// Base URL in alerts' `generatorURL` (this server as users reach it).
    pub external_url: String,
    /// Where recording rules' samples are written; `None`: not written.
    pub remote_write: Option<RemoteWriteConfig>,
    /// Where pending and firing alerts are kept across restarts
    /// ([`crate::alert_store`]); `None`: alerts start over after a restart.
    pub state_dir: Option<PathBuf>,
}

/// A Prometheus remote-write receiver.
#[derive(Debug, Clone)]
pub struct RemoteWriteConfig {
    /// The receiver's URL (`…/api/v1/write`).
    pub url: String,
    /// Basic-auth user and password.
    pub basic_auth: Option<(String, String)>,
    /// Bearer token.
    pub bearer_token: Option<String>,
    /// Samples waiting to be sent; past it the oldest are dropped.
    pub queue_capacity: usize,
    /// Where the queue's log lives ([`crate::sample_log`]); `None`: the
    /// queue is in memory only (a restart loses what it holds).
    pub log_dir: Option<PathBuf>,
}

impl Config {
    /// Defaults for rules under `rules_dir` (Loki's: 1m evaluation interval).
    pub fn new(rules_dir: PathBuf) -> Config {
        Config {
            rules_dir,
            default_interval: Duration::from_secs(60),
            poll_interval: Duration::from_secs(10),
            alertmanager_urls: Vec::new(),
            external_labels: Vec::new(),
            resend_delay: Duration::from_secs(60),
            notification_queue_capacity: 10_000,
            external_url: "http://127.0.0.1:3100".into(),
            remote_write: None,
            state_dir: None,
        }
    }
}
