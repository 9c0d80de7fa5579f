//! The ruler of Rúnakefli (issue 46): Loki's alerting and recording rules.
//!
//! Rule groups in Prometheus' format with LogQL expressions ([`rules`]),
//! checked on load and on the API's writes ([`validate`]), kept as files
//! `<rules-dir>/<tenant>/<namespace>.yaml` ([`store`]). The [`Ruler`]
//! ([`manager`]) runs every group on its own thread ([`group`]) as instant
//! queries through the engine ([`query`]); alerting rules keep Prometheus'
//! pending/firing/resolved states ([`alert`]) with templated labels and
//! annotations ([`template`], the engine's Go-template evaluator), sent to
//! Alertmanager ([`notifier`]); recording rules' samples and the `ALERTS`
//! series ([`record`], as [`sample`]s) go to a Prometheus remote-write
//! receiver ([`remote_write`], its queue logged on disk by
//! [`sample_log`]). Both senders sit behind bounded queues ([`queue`]);
//! every figure is in [`metrics`]; dates in [`time`]; settings in
//! [`config`]. The HTTP API is the server's (`runakefli_server::ruler_api`).
#![deny(missing_docs)]

pub mod alert;
pub mod alert_store;
pub mod config;
pub mod group;
pub mod manager;
pub mod metrics;
pub mod notifier;
pub mod query;
pub mod queue;
pub mod record;
pub mod remote_write;
pub mod rules;
pub mod sample;
pub mod sample_log;
pub mod store;
pub mod template;
pub mod time;
pub mod validate;

pub use config::{Config, RemoteWriteConfig};
pub use manager::{Ruler, RulerError};
pub use query::Querier;
pub use rules::{Rule, RuleFile, RuleGroup};
