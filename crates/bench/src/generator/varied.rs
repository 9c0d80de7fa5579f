//! The [`Shape::Varied`](super::Shape::Varied) lines: the same streams, pods, apps
//! and time model as the reference shape, different line content, so that rare-token
//! search is measured on data the store was not tuned to.
//!
//! A fifth of the streams (decided per stream at setup) write plain-text lines in a
//! log4j-like layout; the others write flat JSON objects of 29 to 33 fields (about
//! 800 bytes) with field names and order of their own. Both carry the same id
//! populations, so every needle kind occurs in both:
//! - `uid`: 7 lowercase characters alternating letter and digit (`k3x9q2m`), from
//!   [`UIDS`] users drawn uniformly;
//! - `session`: 10 hex digits, from [`SESSIONS`] sessions;
//! - `account`: `first.last42@domain.tld` from small name lists (rare emails, common pieces);
//! - `peer_ip`: an IPv4 address from [`PEER_IPS`] addresses;
//! - `order_no`: a JSON number of 13 to 16 digits, from [`ORDERS`] orders;
//! - `req_id`: a UUID v4 per line;
//! - `sku`: `AB-48213-XQ`, from [`SKUS`] codes;
//! - `trace`: 32 hex digits on half of the lines; half of those reuse one of the last
//!   [`TRACE_RING`] fresh traces, so a trace spans a few lines.
//!
//! Every draw comes from the generator's seeded rng through the charged samplers of
//! [`crate::dist`], but the floor of this shape is approximate: ids are derived from
//! population indices by a hash that may, rarely, map two indices to one text, and a
//! reused trace is charged as a pick among the ring even when it could be told apart
//! otherwise.

use std::fmt::Write as _;

use super::varied_ids::push_uuid;
pub use super::varied_ids::{ip_text, order_no, session_text, sku_text, uid_text};
use super::varied_vocab as vv;
use super::{GeneratedLine, Generator};
use crate::dist::{bernoulli, uniform, Bits, LogBuckets, Table};
use crate::rng::Rng;
use crate::text::{push_json_str, push_rfc3339_ms};
use crate::vocab;

/// The two-word phrase of about 1 % of the lines.
pub const PHRASE2: &str = "payment declined";
/// The three-word phrase of about 0.5 % of the lines.
pub const PHRASE3: &str = "retry budget exhausted";
/// The word in most lines (about 71.5 %), as in the reference shape.
pub const COMMON_WORD: &str = vocab::COMMON_WORD;
/// The word of error lines: in every `ERROR` message, in no other line.
pub const ERROR_WORD: &str = "error";
/// Size of the user population (drawn uniformly).
pub const UIDS: u64 = 2_000_000;
/// Size of the session population.
pub const SESSIONS: u64 = 1_000_000;
/// Size of the peer address population.
pub const PEER_IPS: u64 = 50_000;
/// Size of the order population.
pub const ORDERS: u64 = 3_000_000;
/// Size of the SKU population.
pub const SKUS: u64 = 100_000;
/// Share of the streams writing plain-text lines.
pub const PLAIN_SHARE: f64 = 0.2;
/// Recent fresh traces a traced line may reuse.
pub const TRACE_RING: usize = 64;

/// `com.shop.payments.PaymentService` -> `c.s.p.PaymentService`.
fn short_logger(name: &str) -> String {
    let (pkg, class) = name.rsplit_once('.').unwrap_or(("", name));
    let mut s: String = pkg
        .split('.')
        .filter_map(|p| p.chars().next())
        .flat_map(|c| [c, '.'])
        .collect();
    s.push_str(class);
    s
}

/// The whole object of a plain-text line: the labels, `ts` and the line as `message`.
pub(super) fn plain_object(label_fields: &str, g: &GeneratedLine) -> String {
    let mut s = String::with_capacity(g.line.len() + label_fields.len() + 48);
    s.push('{');
    s.push_str(label_fields);
    s.push_str(",\"ts\":\"");
    push_rfc3339_ms(&mut s, g.ts);
    s.push_str("\",\"message\":");
    push_json_str(&mut s, &g.line);
    s.push('}');
    s
}

/// Distributions of the varied lines, built once.
#[derive(Clone, Debug)]
struct Dists {
    message: Table,
    method: Table,
    route: Table,
    status_by_severity: Vec<Table>,
    latency_us: LogBuckets,
    bytes_out: LogBuckets,
    amount_cents: LogBuckets,
    client_version: Table,
    currency: Table,
    attempt: Table,
}

/// Per-generator state of the varied shape.
#[derive(Clone, Debug)]
pub(crate) struct Varied {
    /// Per stream: writes plain-text lines.
    plain: Vec<bool>,
    dists: Dists,
    /// The last fresh traces.
    traces: Vec<(u64, u64)>,
    ring_next: usize,
}

fn weights<T>(items: &[(T, f64)]) -> Vec<f64> {
    items.iter().map(|(_, w)| *w).collect()
}

impl Varied {
    /// Decides which streams write plain text (charged to `setup`) and builds the tables.
    pub(super) fn new(rng: &mut Rng, setup: &mut Bits, streams: usize) -> Varied {
        let plain = (0..streams)
            .map(|_| bernoulli(rng, PLAIN_SHARE, setup))
            .collect();
        let dists = Dists {
            message: Table::from_weights(&vv::MESSAGES.iter().map(|m| m.1).collect::<Vec<_>>()),
            method: Table::from_weights(&weights(vv::METHODS)),
            route: Table::zipf(vv::ROUTES.len(), 1.1),
            status_by_severity: vv::STATUS_BY_SEVERITY
                .iter()
                .map(|s| Table::from_weights(&weights(s)))
                .collect(),
            latency_us: LogBuckets::bell(7, 24, 13.5, 2.0, 0.01),
            bytes_out: LogBuckets::bell(6, 22, 11.0, 1.8, 0.005),
            amount_cents: LogBuckets::bell(8, 20, 13.0, 1.5, 0.0),
            client_version: Table::from_weights(&weights(vv::CLIENT_VERSIONS)),
            currency: Table::from_weights(&weights(vv::CURRENCIES)),
            attempt: Table::from_weights(&weights(vv::ATTEMPTS)),
        };
        Varied {
            plain,
            dists,
            traces: Vec::with_capacity(TRACE_RING),
            ring_next: 0,
        }
    }

    /// True when stream `i` writes plain-text lines.
    pub(crate) fn is_plain(&self, i: usize) -> bool {
        self.plain[i]
    }

    /// A trace for a traced line: a recent one reused, or a fresh one.
    fn trace(&mut self, rng: &mut Rng, bits: &mut Bits) -> (u64, u64) {
        if !self.traces.is_empty() && bernoulli(rng, 0.5, bits) {
            return self.traces[uniform(rng, self.traces.len() as u64, bits) as usize];
        }
        let t = (rng.next_u64(), rng.next_u64());
        bits.0 += 128.0;
        if self.traces.len() < TRACE_RING {
            self.traces.push(t);
        } else {
            self.traces[self.ring_next] = t;
            self.ring_next = (self.ring_next + 1) % TRACE_RING;
        }
        t
    }

    /// Draws everything a line says besides its stream and time.
    fn draw(&mut self, rng: &mut Rng, bits: &mut Bits) -> Draws {
        let d = &self.dists;
        let message = d.message.sample(rng, bits);
        let severity = vv::MESSAGES[message].0;
        let logger = uniform(rng, vv::LOGGERS.len() as u64, bits) as usize;
        let pool = 1 + uniform(rng, 8, bits);
        let thread = 1 + uniform(rng, 48, bits);
        let method = vv::METHODS[d.method.sample(rng, bits)].0;
        let route = d.route.sample(rng, bits);
        let route_n = if vv::ROUTES[route].contains("{n}") {
            1 + uniform(rng, 99_999, bits)
        } else {
            0
        };
        let st = &vv::STATUS_BY_SEVERITY[severity];
        let status = st[d.status_by_severity[severity].sample(rng, bits)].0;
        let latency_us = d.latency_us.sample(rng, bits);
        let uid = uniform(rng, UIDS, bits);
        let session = uniform(rng, SESSIONS, bits);
        let email = (
            uniform(rng, vv::FIRST_NAMES.len() as u64, bits) as usize,
            uniform(rng, vv::LAST_NAMES.len() as u64, bits) as usize,
            uniform(rng, 100, bits),
            uniform(rng, vv::DOMAINS.len() as u64, bits) as usize,
        );
        let ip = uniform(rng, PEER_IPS, bits);
        let order = uniform(rng, ORDERS, bits);
        let req = (rng.next_u64(), rng.next_u64());
        bits.0 += 122.0;
        let sku = uniform(rng, SKUS, bits);
        let region = uniform(rng, vocab::REGIONS.len() as u64, bits) as usize;
        let tenant = uniform(rng, 300, bits);
        let flags = (bernoulli(rng, 0.3, bits), bernoulli(rng, 0.6, bits));
        let cache_hit = bernoulli(rng, 0.7, bits);
        let items = 1 + uniform(rng, 12, bits);
        let amount = if bernoulli(rng, 0.4, bits) {
            let cents = d.amount_cents.sample(rng, bits);
            Some((cents, vv::CURRENCIES[d.currency.sample(rng, bits)].0))
        } else {
            None
        };
        let attempt = vv::ATTEMPTS[d.attempt.sample(rng, bits)].0;
        let client_version = vv::CLIENT_VERSIONS[d.client_version.sample(rng, bits)].0;
        let bytes_out = d.bytes_out.sample(rng, bits);
        let db_calls = uniform(rng, 8, bits);
        let error_kind = (severity == vv::ERROR)
            .then(|| vv::ERROR_KINDS[uniform(rng, vv::ERROR_KINDS.len() as u64, bits) as usize]);
        let trace = bernoulli(rng, 0.5, bits).then(|| self.trace(rng, bits));
        Draws {
            message,
            severity,
            logger,
            pool,
            thread,
            method,
            route,
            route_n,
            status,
            latency_us,
            uid,
            session,
            email,
            ip,
            order,
            req,
            sku,
            trace,
            region,
            tenant,
            flags,
            cache_hit,
            items,
            amount,
            attempt,
            client_version,
            bytes_out,
            db_calls,
            error_kind,
        }
    }
}

/// The draws of one line.
struct Draws {
    message: usize,
    severity: usize,
    logger: usize,
    pool: u64,
    thread: u64,
    method: &'static str,
    route: usize,
    route_n: u64,
    status: u16,
    latency_us: u64,
    uid: u64,
    session: u64,
    email: (usize, usize, u64, usize),
    ip: u64,
    order: u64,
    req: (u64, u64),
    sku: u64,
    trace: Option<(u64, u64)>,
    region: usize,
    tenant: u64,
    flags: (bool, bool),
    cache_hit: bool,
    items: u64,
    amount: Option<(u64, &'static str)>,
    attempt: u8,
    client_version: &'static str,
    bytes_out: u64,
    db_calls: u64,
    error_kind: Option<&'static str>,
}

impl Draws {
    fn path(&self) -> String {
        vv::ROUTES[self.route].replace("{n}", &self.route_n.to_string())
    }

    fn latency(&self) -> String {
        format!("{}.{:03}", self.latency_us / 1000, self.latency_us % 1000)
    }

    fn email(&self) -> String {
        let (f, l, n, d) = self.email;
        format!(
            "{}.{}{n}@{}",
            vv::FIRST_NAMES[f],
            vv::LAST_NAMES[l],
            vv::DOMAINS[d]
        )
    }
}

/// Appends `,"key":` (or `{"key":` first) and counts the field.
fn key(line: &mut String, fields: &mut u64, k: &str) {
    line.push(if line.is_empty() { '{' } else { ',' });
    push_json_str(line, k);
    line.push(':');
    *fields += 1;
}

/// Appends a string field.
fn str_field(line: &mut String, fields: &mut u64, k: &str, v: &str) {
    key(line, fields, k);
    push_json_str(line, v);
}

/// Appends a field whose value is written as is (a number or a bool).
fn raw_field(line: &mut String, fields: &mut u64, k: &str, v: impl std::fmt::Display) {
    key(line, fields, k);
    let _ = write!(line, "{v}");
}

/// A JSON line and its number of fields.
fn render_json(d: &Draws, ts: i64, node: usize, version: &str) -> (String, u64) {
    let mut l = String::with_capacity(1024);
    let f = &mut 0u64;
    key(&mut l, f, "ts");
    l.push('"');
    push_rfc3339_ms(&mut l, ts);
    l.push('"');
    str_field(&mut l, f, "severity", vv::SEVERITIES[d.severity]);
    str_field(&mut l, f, "logger", vv::LOGGERS[d.logger]);
    let thread = format!("pool-{}-thread-{}", d.pool, d.thread);
    str_field(&mut l, f, "thread", &thread);
    str_field(&mut l, f, "message", vv::MESSAGES[d.message].2);
    str_field(&mut l, f, "http_method", d.method);
    str_field(&mut l, f, "url_path", &d.path());
    raw_field(&mut l, f, "status_code", d.status);
    raw_field(&mut l, f, "latency_ms", d.latency());
    str_field(&mut l, f, "uid", &uid_text(d.uid));
    str_field(&mut l, f, "session", &session_text(d.session));
    str_field(&mut l, f, "account", &d.email());
    str_field(&mut l, f, "peer_ip", &ip_text(d.ip));
    raw_field(&mut l, f, "order_no", order_no(d.order));
    key(&mut l, f, "req_id");
    l.push('"');
    push_uuid(&mut l, d.req);
    l.push('"');
    str_field(&mut l, f, "sku", &sku_text(d.sku));
    if let Some((a, b)) = d.trace {
        key(&mut l, f, "trace");
        let _ = write!(l, "\"{a:016x}{b:016x}\"");
    }
    str_field(&mut l, f, "region", vocab::REGIONS[d.region]);
    str_field(&mut l, f, "tenant", &format!("tenant-{:03}", d.tenant));
    str_field(&mut l, f, "k8s_node", &format!("node-{node}"));
    raw_field(&mut l, f, "ff_new_checkout", d.flags.0);
    raw_field(&mut l, f, "ff_dark_mode", d.flags.1);
    str_field(
        &mut l,
        f,
        "cache_status",
        if d.cache_hit { "HIT" } else { "MISS" },
    );
    raw_field(&mut l, f, "items", d.items);
    if let Some((cents, currency)) = d.amount {
        raw_field(&mut l, f, "amount_cents", cents);
        str_field(&mut l, f, "currency", currency);
    }
    raw_field(&mut l, f, "attempt", d.attempt);
    str_field(&mut l, f, "client_version", d.client_version);
    str_field(&mut l, f, "env", "production");
    str_field(&mut l, f, "service_version", version);
    raw_field(&mut l, f, "bytes_out", d.bytes_out);
    raw_field(&mut l, f, "db_calls", d.db_calls);
    if let Some(kind) = d.error_kind {
        str_field(&mut l, f, "error_kind", kind);
    }
    l.push('}');
    (l, *f)
}

/// A plain-text line.
fn render_plain(d: &Draws, ts: i64) -> String {
    let mut l = String::with_capacity(512);
    push_rfc3339_ms(&mut l, ts);
    let _ = write!(
        l,
        " {:<5} [pool-{}-thread-{}] {} - {} method={} path={} status={} uid={} session={} account={} ip={} order={} sku={} req=",
        vv::SEVERITIES[d.severity],
        d.pool,
        d.thread,
        short_logger(vv::LOGGERS[d.logger]),
        vv::MESSAGES[d.message].2,
        d.method,
        d.path(),
        d.status,
        uid_text(d.uid),
        session_text(d.session),
        d.email(),
        ip_text(d.ip),
        order_no(d.order),
        sku_text(d.sku),
    );
    push_uuid(&mut l, d.req);
    if let Some((a, b)) = d.trace {
        let _ = write!(l, " trace={a:016x}{b:016x}");
    }
    if let Some(kind) = d.error_kind {
        let _ = write!(l, " kind={kind}");
    }
    let _ = write!(l, " took={}ms", d.latency());
    l
}

impl Generator {
    /// Generates one line of the varied shape.
    pub(super) fn next_varied_line(&mut self) -> GeneratedLine {
        let i = self.stats.lines;
        let before = self.line_bits.0;
        let base = self.base_ts(i);
        let width = (self.base_ts(i + 1) - base).max(0) as u64;
        let rng = &mut self.rng;
        let bits = &mut self.line_bits;
        let stream = uniform(rng, self.pods.len() as u64, bits) as usize;
        let ts = base + uniform(rng, width, bits) as i64;
        let varied = self.varied.as_mut().expect("a varied generator");
        let draws = varied.draw(rng, bits);
        let pod = &self.pods[stream];
        let g = if varied.is_plain(stream) {
            let g = GeneratedLine {
                stream,
                ts,
                line: render_plain(&draws, ts),
            };
            self.stats.object_bytes += plain_object(&pod.label_fields, &g).len() as u64;
            self.stats.fields += 5 + 2;
            g
        } else {
            let (line, fields) = render_json(&draws, ts, pod.node, &self.apps[pod.app].version);
            self.stats.object_bytes += (line.len() + pod.label_fields.len() + 1) as u64;
            self.stats.fields += 5 + fields;
            GeneratedLine { stream, ts, line }
        };
        self.stats.lines += 1;
        self.stats.line_bytes += g.line.len() as u64;
        self.stats.line_floor_bits += self.line_bits.0 - before;
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loggers_are_abbreviated_in_plain_text() {
        assert_eq!(
            short_logger("com.shop.db.ConnectionPool"),
            "c.s.d.ConnectionPool"
        );
    }

    #[test]
    fn vocabulary_keeps_error_and_phrases_where_they_belong() {
        let total: f64 = vv::MESSAGES.iter().map(|m| m.1).sum();
        assert!((total - 100.0).abs() < 1e-9, "{total}");
        let share = |p: &dyn Fn(&str) -> bool| -> f64 {
            vv::MESSAGES.iter().filter(|m| p(m.2)).map(|m| m.1).sum()
        };
        assert!((share(&|m| m.contains(PHRASE2)) - 1.0).abs() < 1e-9);
        assert!((share(&|m| m.contains(PHRASE3)) - 0.5).abs() < 1e-9);
        for (sev, _, text) in vv::MESSAGES {
            assert_eq!(text.contains(ERROR_WORD), *sev == vv::ERROR, "{text}");
        }
        for fixed in vv::LOGGERS.iter().chain(vv::ROUTES).chain(vv::ERROR_KINDS) {
            assert!(!fixed.contains(ERROR_WORD) && !fixed.contains(COMMON_WORD));
        }
    }
}
