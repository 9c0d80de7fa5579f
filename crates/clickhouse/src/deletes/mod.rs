//! Delete requests on ClickHouse, with the embedded store's semantics
//! (`docs/operations.md`, "Deletes"):
//!
//! - **Persistence**: the `delete_requests` table ([`record`]), one row per
//!   change; the backend keeps every tenant's requests in memory ([`Book`]),
//!   loaded at open and re-read by the housekeeping thread (so requests another
//!   Rúnakefli server on the same database accepted are seen within
//!   [`RELOAD_EVERY`]).
//! - **Hiding**: every query that reads `logs` leaves out the rows of the
//!   tenant's requests (received or processed) overlapping its time range,
//!   with `AND NOT (…)` ([`crate::sql::RowMask`]) — a late push into a
//!   processed request's range stays hidden, as on the embedded store.
//! - **Purging**: once a request is due (`delete_request_cancel_period` after
//!   it was accepted), a lightweight `DELETE FROM logs WHERE …` with the same
//!   condition removes its rows (ClickHouse masks them at once and drops them
//!   from disk when it merges the parts); the request is then `processed`.
//!   On a cluster the `DELETE` goes to `logs_local ON CLUSTER …`
//!   ([`crate::cluster::mutation_target`]).
//! - **Regexps**: a line filter regexp outside the RE2 subset ClickHouse and
//!   the engine read alike cannot be evaluated in SQL exactly; such a request
//!   is refused (400) rather than deleting other rows than the embedded store
//!   would. Selector regexps outside the subset are fine: the request's
//!   streams are then resolved on their labels in Rust and listed by id.

pub mod record;

use crate::client::{Client, Request};
use crate::clock::now_ns;
use crate::cluster::mutation_target;
use crate::selector::Split;
use crate::sql::{self, quote, RowMask, StreamSelect};
use crate::stream_catalog::StreamCatalog;
use crate::Error;
use record::Record;
use runakefli_model::deletes::{CancelRefusal, DeleteRequest, DeleteStatus};
use runakefli_model::{TenantId, Timestamp};
use std::collections::HashMap;
use std::sync::{Mutex, RwLock};
use std::time::Duration;

/// How often the housekeeping thread re-reads `delete_requests`.
pub const RELOAD_EVERY: Duration = Duration::from_secs(10);

/// Stream ids per `DELETE` statement (keeps the SQL text well under
/// ClickHouse's `max_query_size`).
pub(crate) const IDS_PER_STATEMENT: usize = 5000;

/// Every tenant's requests (tombstones of cancelled ones included).
#[derive(Default)]
pub(crate) struct Book {
    /// Held across a change (the table written, then the memory), so a
    /// reload never undoes a change it did not see.
    change: Mutex<()>,
    tenants: RwLock<HashMap<String, Vec<Record>>>,
}

impl Book {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Vec<Record>>> {
        self.tenants.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Vec<Record>>> {
        self.tenants.write().unwrap_or_else(|e| e.into_inner())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.change.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tenant's requests not cancelled, oldest first.
    pub(crate) fn live(&self, tenant: &str) -> Vec<DeleteRequest> {
        self.read()
            .get(tenant)
            .map(|v| {
                v.iter()
                    .filter(|r| !r.cancelled)
                    .map(|r| r.request.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Stores `record` in memory (replacing the request's earlier state).
    fn put(&self, record: Record) {
        let mut t = self.write();
        let list = t.entry(record.tenant.clone()).or_default();
        match list.iter_mut().find(|r| r.request.id == record.request.id) {
            Some(r) => *r = record,
            None => list.push(record),
        }
    }
}

/// Orders a tenant's records oldest first (ties by id).
fn sort(list: &mut [Record]) {
    list.sort_by(|a, b| {
        (a.request.created, &a.request.id).cmp(&(b.request.created, &b.request.id))
    });
}

impl Book {
    /// Re-reads every request from `delete_requests`.
    pub(crate) fn reload(&self, client: &Client) -> Result<(), Error> {
        let _change = self.lock();
        let rows = client.rows(record::SELECT_LATEST, &Request::default())?;
        let mut tenants: HashMap<String, Vec<Record>> = HashMap::new();
        for row in &rows {
            let r = record::decode(row)?;
            tenants.entry(r.tenant.clone()).or_default().push(r);
        }
        for list in tenants.values_mut() {
            sort(list);
        }
        *self.write() = tenants;
        Ok(())
    }

    fn store(&self, client: &Client, record: Record) -> Result<(), Error> {
        client.insert(
            record::INSERT,
            record::encode(&record).as_bytes(),
            &Request::default(),
        )?;
        self.put(record);
        Ok(())
    }

    /// The next version of a stored request: now, or one more than its last.
    fn next_version(&self, tenant: &str, id: &str) -> u64 {
        let now = u64::try_from(now_ns()).unwrap_or(0);
        let last = self
            .read()
            .get(tenant)
            .and_then(|v| v.iter().find(|r| r.request.id == id).map(|r| r.version))
            .unwrap_or(0);
        now.max(last + 1)
    }

    /// Accepts a delete request for `tenant` (see [`runakefli_model::Deletes::add_delete`]):
    /// a line filter regexp SQL cannot evaluate exactly is [`Error::Invalid`].
    pub(crate) fn add(
        &self,
        client: &Client,
        tenant: &TenantId,
        mut req: DeleteRequest,
    ) -> Result<DeleteRequest, Error> {
        TenantId::validate(tenant.as_str()).map_err(Error::Invalid)?;
        for f in &req.filters {
            sql::delete_line_filter(f).map_err(|e| {
                Error::Invalid(format!(
                    "unsupported delete query on the clickhouse backend: {e}; line filter \
                     regexps must stay within the RE2 subset ClickHouse evaluates exactly as \
                     Loki does (no \\d, \\w, \\s, \\b, Unicode classes, (?i) only over ASCII literals; see \
                     docs/clickhouse.md)"
                ))
            })?;
        }
        let _change = self.lock();
        req.created = now_ns();
        req.status = DeleteStatus::Received;
        if req.id.is_empty() {
            let book = self.read();
            let taken = book.get(tenant.as_str());
            req.id = req.fresh_id(tenant, |id| {
                taken.is_some_and(|v| v.iter().any(|r| r.request.id == id))
            });
        }
        let version = self.next_version(tenant.as_str(), &req.id);
        self.store(
            client,
            Record {
                tenant: tenant.as_str().to_string(),
                request: req.clone(),
                cancelled: false,
                version,
            },
        )?;
        Ok(req)
    }

    /// Cancels request `id` of `tenant` while it is not due (or, with
    /// `force`, while it is not processed): a tombstone row, rows visible again.
    pub(crate) fn cancel(
        &self,
        client: &Client,
        tenant: &TenantId,
        id: &str,
        force: bool,
        period: Duration,
    ) -> Result<Result<(), CancelRefusal>, Error> {
        let _change = self.lock();
        let Some(req) = self.live(tenant.as_str()).into_iter().find(|r| r.id == id) else {
            return Ok(Err(CancelRefusal::NotFound));
        };
        if req.status == DeleteStatus::Processed || (!force && req.is_due(now_ns(), period)) {
            return Ok(Err(CancelRefusal::TooLate));
        }
        let version = self.next_version(tenant.as_str(), id);
        self.store(
            client,
            Record {
                tenant: tenant.as_str().to_string(),
                request: req,
                cancelled: true,
                version,
            },
        )?;
        Ok(Ok(()))
    }

    /// Purges every request due at `now` and not processed yet: its rows
    /// deleted by lightweight `DELETE`s, then the request marked processed.
    /// Returns how many requests were processed.
    pub(crate) fn process_due(
        &self,
        client: &Client,
        now: Timestamp,
        period: Duration,
    ) -> Result<usize, Error> {
        let due: Vec<(String, DeleteRequest)> = self
            .read()
            .iter()
            .flat_map(|(t, v)| {
                v.iter()
                    .filter(|r| {
                        !r.cancelled
                            && r.request.status == DeleteStatus::Received
                            && r.request.is_due(now, period)
                    })
                    .map(|r| (t.clone(), r.request.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut done = 0;
        for (tenant, req) in due {
            let tenant = TenantId::new(tenant);
            let _change = self.lock();
            // Cancelled meanwhile (e.g. with force)?
            if !self
                .live(tenant.as_str())
                .iter()
                .any(|r| r.id == req.id && r.status == DeleteStatus::Received)
            {
                continue;
            }
            purge(client, &tenant, &req)?;
            let mut processed = req.clone();
            processed.status = DeleteStatus::Processed;
            let version = self.next_version(tenant.as_str(), &req.id);
            self.store(
                client,
                Record {
                    tenant: tenant.as_str().to_string(),
                    request: processed,
                    cancelled: false,
                    version,
                },
            )?;
            done += 1;
        }
        Ok(done)
    }

    /// The rows of `tenant` in `[start, end)` its delete requests hide.
    pub(crate) fn mask(
        &self,
        client: &Client,
        tenant: &TenantId,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<RowMask, Error> {
        let last = end.saturating_sub(1);
        let requests: Vec<DeleteRequest> = self
            .live(tenant.as_str())
            .into_iter()
            .filter(|r| r.start <= last && r.end >= start)
            .collect();
        let mut hidden = Vec::with_capacity(requests.len());
        for r in &requests {
            let sel = StreamSelect {
                tenant,
                selector: &r.matchers,
                start: r.start.max(start),
                end: r.end.min(last).saturating_add(1),
            };
            let streams = if Split::of(&r.matchers).residual.is_empty() {
                sql::streams_subquery(&sel)?
            } else {
                let mut ids: Vec<u64> = StreamCatalog::read(client, sel)?
                    .into_kept()
                    .into_keys()
                    .collect();
                if ids.is_empty() {
                    continue;
                }
                ids.sort_unstable();
                sql::id_set(&ids)
            };
            hidden.push(sql::delete_condition(r, &streams)?);
        }
        Ok(RowMask::hiding(hidden))
    }
}

/// Deletes the rows of `req`: its streams resolved here (on their
/// labels, so every selector is exact) and listed by id, so the mutation
/// does not read another table.
fn purge(client: &Client, tenant: &TenantId, req: &DeleteRequest) -> Result<(), Error> {
    let sel = StreamSelect {
        tenant,
        selector: &req.matchers,
        start: req.start,
        end: req.end.saturating_add(1),
    };
    let mut ids: Vec<u64> = StreamCatalog::read(client, sel)?
        .into_kept()
        .into_keys()
        .collect();
    ids.sort_unstable();
    let logs = mutation_target(client.config().cluster.as_ref(), "logs");
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        let cond = sql::delete_condition(req, &sql::id_set(chunk))?;
        client.execute(&format!(
            "DELETE FROM {logs} WHERE tenant = {} AND {cond}",
            quote(tenant.as_str())
        ))?;
    }
    Ok(())
}
