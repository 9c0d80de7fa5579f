//! The ruler: loads every tenant's rule files, runs each group on its own
//! thread, reloads when files change (polled) or when asked (SIGHUP, the
//! API), and changes rule files for the API.

use crate::alert_store::AlertStore;
use crate::config::Config;
use crate::group::{Env, GroupState};
use crate::metrics::RulerMetrics;
use crate::notifier::Notifier;
use crate::query::Querier;
use crate::remote_write::RemoteWriter;
use crate::rules::RuleGroup;
use crate::store::{RuleStore, StoreError};
use crate::validate::{compile_group, compile_groups, CompiledGroup, ValidationError};
use parking_lot::Mutex;
use runakefli_logql::ParseLimits;
use runakefli_model::TenantId;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;

/// Why a ruler API call failed.
#[derive(Debug, thiserror::Error)]
pub enum RulerError {
    /// The rule group is invalid (400).
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<ValidationError>),
    /// The body is not a rule group (400).
    #[error("{0}")]
    BadRequest(String),
    /// No such namespace or group (404).
    #[error("{0}")]
    NotFound(String),
    /// The rules directory could not be read or written (500).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// (tenant, namespace, group).
type Key = (String, String, String);

struct Running {
    state: Arc<GroupState>,
    /// Dropping it stops the group's thread.
    _stop: Sender<()>,
}

/// The ruler.
pub struct Ruler {
    env: Arc<Env>,
    store: RuleStore,
    limits: ParseLimits,
    running: Mutex<BTreeMap<Key, Running>>,
    /// Serializes writes to rule files and reloads.
    writes: Mutex<()>,
    watcher: Mutex<Option<Sender<()>>>,
}

impl Ruler {
    /// Starts the senders, loads the rules and starts their groups and the
    /// directory watcher.
    pub fn start(
        config: Config,
        querier: Arc<dyn Querier>,
        limits: ParseLimits,
    ) -> std::io::Result<Arc<Ruler>> {
        let metrics = Arc::new(RulerMetrics::default());
        let notifier = if config.alertmanager_urls.is_empty() {
            None
        } else {
            Some(Notifier::start(
                &config.alertmanager_urls,
                config.notification_queue_capacity,
                config.external_labels.clone(),
                metrics.clone(),
            )?)
        };
        let writer = match &config.remote_write {
            Some(rw) => Some(RemoteWriter::start(rw.clone(), metrics.clone())?),
            None => None,
        };
        let store = RuleStore::new(config.rules_dir.clone());
        let alerts = config.state_dir.clone().map(AlertStore::open);
        let poll = config.poll_interval;
        let ruler = Arc::new(Ruler {
            env: Arc::new(Env {
                querier,
                notifier,
                writer,
                alerts,
                metrics,
                config,
            }),
            store,
            limits,
            running: Mutex::new(BTreeMap::new()),
            writes: Mutex::new(()),
            watcher: Mutex::new(None),
        });
        ruler.reload();
        let (tx, rx) = channel::<()>();
        let weak = Arc::downgrade(&ruler);
        std::thread::Builder::new()
            .name("ruler-watch".into())
            .spawn(move || {
                let mut seen = weak.upgrade().map(|r| r.store.fingerprint());
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(poll) {
                    let Some(r) = weak.upgrade() else { return };
                    let now = Some(r.store.fingerprint());
                    if now != seen {
                        r.reload();
                        seen = now;
                    }
                }
            })?;
        *ruler.watcher.lock() = Some(tx);
        Ok(ruler)
    }

    /// The ruler's counters.
    pub fn metrics(&self) -> &RulerMetrics {
        &self.env.metrics
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.env.config
    }

    /// Reads every rule file again and brings the running groups in line:
    /// unchanged groups run on, changed ones restart (keeping their
    /// alerts), removed ones stop. A file that fails to load is reported
    /// and its namespace keeps the groups it had. Returns the problems.
    pub fn reload(&self) -> Vec<String> {
        let _w = self.writes.lock();
        self.reload_locked()
    }

    fn reload_locked(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut wanted: BTreeMap<Key, CompiledGroup> = BTreeMap::new();
        let mut keep_old: Vec<(String, String)> = Vec::new();
        for (tenant, ns, path) in self.store.files() {
            let loaded = match TenantId::validate(&tenant) {
                Err(e) => Err(format!("{}: tenant {tenant:?}: {e}", path.display())),
                Ok(()) => crate::store::read_file(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|f| {
                        compile_groups(&f.groups, &self.limits).map_err(|errs| {
                            let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
                            format!("{}: {}", path.display(), text.join("; "))
                        })
                    }),
            };
            match loaded {
                Ok(groups) => {
                    for g in groups {
                        wanted.insert((tenant.clone(), ns.clone(), g.group.name.clone()), g);
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "rule file not loaded");
                    self.env
                        .metrics
                        .load_failures
                        .fetch_add(1, Ordering::Relaxed);
                    keep_old.push((tenant, ns));
                    problems.push(e);
                }
            }
        }
        let mut running = self.running.lock();
        let old = std::mem::take(&mut *running);
        for (key, run) in old {
            let kept = keep_old.contains(&(key.0.clone(), key.1.clone()));
            let unchanged = wanted
                .get(&key)
                .is_some_and(|g| g.group == run.state.compiled.group);
            if kept || unchanged {
                wanted.remove(&key);
                running.insert(key, run);
                continue;
            }
            match wanted.remove(&key) {
                Some(g) => {
                    if let Some(r) = self.spawn(&key, g, Some(&run.state)) {
                        running.insert(key, r);
                    }
                }
                None => self.env.metrics.forget(&key.0, &run.state.metric_name()),
            }
            // `run` drops here: its thread stops after its evaluation.
        }
        for (key, g) in wanted {
            if let Some(r) = self.spawn(&key, g, None) {
                running.insert(key, r);
            }
        }
        if let Some(store) = &self.env.alerts {
            let keys = running
                .values()
                .flat_map(|r| {
                    let s = &r.state;
                    s.compiled
                        .rules
                        .iter()
                        .filter(|c| c.rule.is_alert())
                        .map(|c| s.rule_key(c))
                        .collect::<Vec<_>>()
                })
                .collect();
            store.retain(&keys);
        }
        problems
    }

    fn spawn(&self, key: &Key, g: CompiledGroup, previous: Option<&GroupState>) -> Option<Running> {
        let state = Arc::new(GroupState::new(
            TenantId::new(key.0.clone()),
            key.1.clone(),
            g,
            self.env.config.default_interval,
            previous,
            self.env.alerts.as_ref(),
        ));
        let (tx, rx) = channel();
        let (s, env) = (state.clone(), self.env.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("ruler-{}", key.2))
            .spawn(move || crate::group::run(s, env, rx));
        match spawned {
            Ok(_) => Some(Running { state, _stop: tx }),
            Err(e) => {
                tracing::error!(error = %e, group = %key.2, "could not start a rule group");
                None
            }
        }
    }

    /// The running groups of `tenant`, by namespace then name.
    pub fn groups(&self, tenant: &str) -> Vec<Arc<GroupState>> {
        self.running
            .lock()
            .iter()
            .filter(|(k, _)| k.0 == tenant)
            .map(|(_, r)| r.state.clone())
            .collect()
    }

    /// Every running group.
    pub fn all_groups(&self) -> Vec<Arc<GroupState>> {
        self.running
            .lock()
            .values()
            .map(|r| r.state.clone())
            .collect()
    }

    /// A tenant's rule groups as stored, by namespace (`namespace`, `group`
    /// narrow it); `NotFound` when nothing matches.
    pub fn list(
        &self,
        tenant: &str,
        namespace: Option<&str>,
        group: Option<&str>,
    ) -> Result<BTreeMap<String, Vec<RuleGroup>>, RulerError> {
        let mut out = BTreeMap::new();
        for (t, ns, _) in self.store.files() {
            if t != tenant || namespace.is_some_and(|n| n != ns) {
                continue;
            }
            let groups = match self.store.namespace(&t, &ns) {
                Ok(g) => g,
                Err(e) if namespace.is_none() => {
                    tracing::warn!(error = %e, "rule file not listed");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let groups: Vec<RuleGroup> = groups
                .into_iter()
                .filter(|g| group.is_none_or(|n| n == g.name))
                .collect();
            if !groups.is_empty() {
                out.insert(ns, groups);
            }
        }
        if out.is_empty() && (namespace.is_some() || group.is_some()) {
            return Err(RulerError::NotFound(match group {
                Some(_) => "group does not exist".into(),
                None => "no rule groups found".into(),
            }));
        }
        Ok(out)
    }

    /// Creates or replaces a group of a namespace (checked first), writes
    /// the namespace's file durably and reloads.
    pub fn set_group(
        &self,
        tenant: &str,
        namespace: &str,
        group: RuleGroup,
    ) -> Result<(), RulerError> {
        compile_group(&group, &self.limits).map_err(RulerError::Invalid)?;
        let _w = self.writes.lock();
        let mut groups = self.store.namespace(tenant, namespace)?;
        match groups.iter_mut().find(|g| g.name == group.name) {
            Some(g) => *g = group,
            None => groups.push(group),
        }
        compile_groups(&groups, &self.limits).map_err(RulerError::Invalid)?;
        self.store.write_namespace(tenant, namespace, &groups)?;
        self.reload_locked();
        Ok(())
    }

    /// Deletes one group, or (`group` `None`) a whole namespace.
    pub fn delete(
        &self,
        tenant: &str,
        namespace: &str,
        group: Option<&str>,
    ) -> Result<(), RulerError> {
        let _w = self.writes.lock();
        let mut groups = self.store.namespace(tenant, namespace)?;
        if groups.is_empty() {
            return Err(RulerError::NotFound("no rule groups found".into()));
        }
        if let Some(name) = group {
            let before = groups.len();
            groups.retain(|g| g.name != name);
            if groups.len() == before {
                return Err(RulerError::NotFound("group does not exist".into()));
            }
        } else {
            groups.clear();
        }
        self.store.write_namespace(tenant, namespace, &groups)?;
        self.reload_locked();
        Ok(())
    }

    /// Stops every group, the watcher and the senders (sending what they hold).
    pub fn stop(&self) {
        self.watcher.lock().take();
        self.running.lock().clear();
        if let Some(n) = &self.env.notifier {
            n.stop();
        }
        if let Some(w) = &self.env.writer {
            w.stop();
        }
    }
}
