//! The reference-workload generator (the workload of `docs/benchmarks.md`): structured
//! Kubernetes application logs, deterministic from a seed, with the information
//! content of every draw accounted (the floor).
//!
//! Each line is charged `-log2 P(outcome)` for every random choice made for it (which
//! stream, the timestamp jitter, level, template, field values, ...). Per-user
//! attributes (address, user agent, region, organisation) are drawn the first time a
//! user is seen and charged then; per-app and per-pod attributes are drawn once at
//! setup and charged to the setup account. Text derived from earlier draws (the
//! message rendering the line's own fields, the JSON timestamp derived from the entry
//! time, the output stream derived from the level) costs nothing. Draws map to
//! distinguishable text, so the total is the information content of the output.

use std::fmt::Write as _;
use std::io::Write;

use runakefli_model::Labels;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::dist::{bernoulli, uniform, Bits, LogBuckets, Table};
use crate::rng::Rng;
use crate::text::{push_json_str, push_rfc3339_ms};
use crate::vocab::{self, Template};

/// Pods per node, as in the reference cluster (125 nodes x 40 pods).
pub const PODS_PER_NODE: usize = 40;
/// Size of the user population (drawn Zipf).
pub const USERS: usize = 100_000;
/// Size of the organisation population (drawn Zipf, once per user).
pub const ORGS: usize = 2_000;
/// Alphabet of Kubernetes generated name suffixes.
const POD_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Which kind of lines the generator writes. Streams, pods, apps and the time model
/// are the same for every shape; only the line content differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// The reference workload of `docs/benchmarks.md`: Kubernetes-style JSON lines.
    #[default]
    Reference,
    /// A differently shaped workload ([`varied`]): other JSON field names and id
    /// formats, and a fifth of the streams writing plain-text lines.
    Varied,
}

impl Shape {
    /// Short name, as the `--shape` flag spells it.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Reference => "reference",
            Shape::Varied => "varied",
        }
    }
}

/// What to generate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GeneratorConfig {
    /// Seed of every draw.
    pub seed: u64,
    /// Number of streams (pods); 40 pods per node.
    pub streams: usize,
    /// Number of lines the time span is divided among (more may be generated;
    /// they continue at the same rate past the end).
    pub lines: u64,
    /// Start of the covered span, nanoseconds since the epoch.
    pub start_ns: i64,
    /// Length of the covered span in nanoseconds.
    pub span_ns: i64,
    /// The kind of lines to write.
    pub shape: Shape,
}

impl GeneratorConfig {
    /// One hour.
    pub const HOUR_NS: i64 = 3_600 * 1_000_000_000;

    /// A config covering `span_ns` that ends at `end_ns`.
    pub fn ending_at(seed: u64, streams: usize, lines: u64, end_ns: i64, span_ns: i64) -> Self {
        GeneratorConfig {
            seed,
            streams,
            lines,
            start_ns: end_ns - span_ns,
            span_ns,
            shape: Shape::Reference,
        }
    }

    /// The same config with lines of `shape`.
    pub fn with_shape(self, shape: Shape) -> Self {
        GeneratorConfig { shape, ..self }
    }
}

impl Default for GeneratorConfig {
    /// Seed 1, 5,000 streams, 1,000,000 lines over the hour ending 2026-10-01T00:00:00Z.
    fn default() -> Self {
        GeneratorConfig::ending_at(
            1,
            5_000,
            1_000_000,
            1_790_812_800_000_000_000,
            Self::HOUR_NS,
        )
    }
}

/// Why a generator could not be built or could not write.
#[derive(Debug, Error)]
pub enum GeneratorError {
    /// A config value is out of range.
    #[error("invalid generator config: {0}")]
    Config(String),
    /// Writing the output failed.
    #[error("writing generated lines: {0}")]
    Io(#[from] std::io::Error),
}

/// One generated line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedLine {
    /// Index of the stream (see [`Generator::stream_labels`]).
    pub stream: usize,
    /// Entry time, nanoseconds since the epoch.
    pub ts: i64,
    /// The line: compact JSON of the fields that are not stream labels.
    pub line: String,
}

/// Totals over what a generator produced so far.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GeneratorStats {
    /// Lines generated.
    pub lines: u64,
    /// Sum of line sizes (labels excluded), bytes.
    pub line_bytes: u64,
    /// Sum of whole-object sizes (labels included as fields), bytes.
    pub object_bytes: u64,
    /// Sum of field counts of the whole objects.
    pub fields: u64,
    /// Information charged to the lines, bits.
    pub line_floor_bits: f64,
    /// Information charged once at setup (apps, pods, nodes), bits.
    pub setup_floor_bits: f64,
}

impl GeneratorStats {
    fn per_line(&self, v: f64) -> f64 {
        if self.lines == 0 {
            0.0
        } else {
            v / self.lines as f64
        }
    }

    /// Average line size in bytes (labels excluded).
    pub fn avg_line_bytes(&self) -> f64 {
        self.per_line(self.line_bytes as f64)
    }

    /// Average whole-object size in bytes (labels included).
    pub fn avg_object_bytes(&self) -> f64 {
        self.per_line(self.object_bytes as f64)
    }

    /// Average number of fields of the whole object.
    pub fn avg_fields(&self) -> f64 {
        self.per_line(self.fields as f64)
    }

    /// Total information content (lines and setup), bits.
    pub fn floor_bits(&self) -> f64 {
        self.line_floor_bits + self.setup_floor_bits
    }

    /// The floor: total information content per line, in bytes.
    pub fn floor_bytes_per_line(&self) -> f64 {
        self.per_line(self.floor_bits() / 8.0)
    }
}

impl std::fmt::Display for GeneratorStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "| metric | value |")?;
        writeln!(f, "|---|---|")?;
        writeln!(f, "| lines | {} |", self.lines)?;
        writeln!(
            f,
            "| avg line bytes (labels excluded) | {:.1} |",
            self.avg_line_bytes()
        )?;
        writeln!(
            f,
            "| avg object bytes (labels included) | {:.1} |",
            self.avg_object_bytes()
        )?;
        writeln!(f, "| avg fields per object | {:.2} |", self.avg_fields())?;
        writeln!(
            f,
            "| floor bytes/line | {:.2} |",
            self.floor_bytes_per_line()
        )?;
        writeln!(f, "| setup floor bits | {:.0} |", self.setup_floor_bits)
    }
}

/// A pod: one stream.
#[derive(Clone, Debug)]
struct Pod {
    app: usize,
    node: usize,
    labels: Labels,
    labels_text: String,
    /// `"namespace":"..","pod":"..",...` for whole objects.
    label_fields: String,
    pod_ip: String,
}

/// Per-app attributes drawn at setup.
#[derive(Clone, Debug)]
struct App {
    version: String,
    upstreams: Vec<usize>,
}

/// Per-user attributes drawn when the user is first seen.
#[derive(Clone, Debug)]
struct User {
    ip: String,
    user_agent: usize,
    region: usize,
    org: usize,
}

/// Distributions used per line, built once.
#[derive(Clone, Debug)]
struct Dists {
    level: Table,
    templates_by_level: Vec<(Vec<usize>, Table)>,
    method: Table,
    path: Table,
    status_by_level: Vec<Table>,
    duration_us: LogBuckets,
    bytes_sent: LogBuckets,
    bytes_received: LogBuckets,
    user: Table,
    org: Table,
    user_agent: Table,
    region: Table,
    retries: Table,
    protocol: Table,
    first_octet: Table,
}

/// The workload generator. Deterministic: the same config gives the same lines.
#[derive(Clone, Debug)]
pub struct Generator {
    config: GeneratorConfig,
    rng: Rng,
    pods: Vec<Pod>,
    apps: Vec<App>,
    node_names: Vec<String>,
    paths: Vec<String>,
    users: Vec<Option<User>>,
    dists: Dists,
    stats: GeneratorStats,
    line_bits: Bits,
    /// State of the [`Shape::Varied`] lines; `None` for the reference shape.
    varied: Option<Box<varied::Varied>>,
}

fn weights<T>(items: &[(T, f64)]) -> Vec<f64> {
    items.iter().map(|(_, w)| *w).collect()
}

fn log2_choose(n: usize, k: usize) -> f64 {
    (0..k)
        .map(|j| ((n - j) as f64).log2() - ((j + 1) as f64).log2())
        .sum()
}

fn random_name(rng: &mut Rng, len: usize, bits: &mut Bits) -> String {
    (0..len)
        .map(|_| POD_ALPHABET[uniform(rng, POD_ALPHABET.len() as u64, bits) as usize] as char)
        .collect()
}

/// The few hundred distinct request paths, in a fixed popularity order.
fn build_paths() -> Vec<String> {
    let mut all = Vec::new();
    for r in vocab::RESOURCES {
        for shape in vocab::PATH_SHAPES {
            if shape.contains("{v}") {
                for v in vocab::API_VERSIONS {
                    all.push(shape.replace("{v}", v).replace("{r}", r));
                }
            } else {
                all.push(shape.replace("{r}", r));
            }
        }
    }
    // A fixed permutation spreads popularity over resources and shapes.
    let n = all.len();
    let mut step = 167 % n;
    while gcd(step, n) != 1 {
        step += 1;
    }
    (0..n).map(|r| all[(r * step) % n].clone()).collect()
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Generator {
    /// Builds the cluster (nodes, apps, pods) from the seed.
    pub fn new(config: GeneratorConfig) -> Result<Self, GeneratorError> {
        if config.streams == 0 {
            return Err(GeneratorError::Config("streams must be at least 1".into()));
        }
        if config.lines == 0 {
            return Err(GeneratorError::Config("lines must be at least 1".into()));
        }
        if config.span_ns <= 0 {
            return Err(GeneratorError::Config("span must be positive".into()));
        }
        let mut rng = Rng::new(config.seed);
        let mut setup = Bits::default();

        let nodes = config.streams.div_ceil(PODS_PER_NODE);
        let node_names: Vec<String> = (0..nodes)
            .map(|_| {
                let a = uniform(&mut rng, 4, &mut setup);
                let b = uniform(&mut rng, 256, &mut setup);
                let c = uniform(&mut rng, 256, &mut setup);
                format!("ip-10-{a}-{b}-{c}.ec2.internal")
            })
            .collect();

        let app_count = vocab::APPS.len();
        let mut apps = Vec::with_capacity(app_count);
        let mut replica_hashes = Vec::with_capacity(app_count);
        for i in 0..app_count {
            let minor = uniform(&mut rng, 40, &mut setup);
            let patch = uniform(&mut rng, 20, &mut setup);
            let version = format!("v1.{minor}.{patch}");
            let k = 1 + uniform(&mut rng, 4, &mut setup) as usize;
            // k distinct upstreams among the other apps, as a set.
            let mut ups: Vec<usize> = Vec::with_capacity(k);
            while ups.len() < k {
                let u = rng.below(app_count as u64 - 1) as usize;
                let u = if u >= i { u + 1 } else { u };
                if !ups.contains(&u) {
                    ups.push(u);
                }
            }
            ups.sort_unstable();
            setup.0 += log2_choose(app_count - 1, k);
            apps.push(App {
                version,
                upstreams: ups,
            });
            replica_hashes.push(random_name(&mut rng, 10, &mut setup));
        }

        let app_of_pod = Table::zipf(app_count, 0.8);
        let pods = (0..config.streams)
            .map(|s| {
                let node = s / PODS_PER_NODE;
                let app = app_of_pod.sample(&mut rng, &mut setup);
                let (name, ns, _) = vocab::APPS[app];
                let pod = format!(
                    "{name}-{}-{}",
                    replica_hashes[app],
                    random_name(&mut rng, 5, &mut setup)
                );
                let host = uniform(&mut rng, 253, &mut setup) + 2;
                let pod_ip = format!("10.{}.{}.{host}", (244 + node / 256) % 256, node % 256);
                let labels = Labels::new(vec![
                    ("namespace".into(), ns.into()),
                    ("pod".into(), pod.clone()),
                    ("container".into(), name.into()),
                    ("node".into(), node_names[node].clone()),
                    ("app".into(), name.into()),
                ]);
                let mut label_fields = String::new();
                for (k, v) in [
                    ("namespace", ns),
                    ("pod", &pod),
                    ("container", name),
                    ("node", &node_names[node]),
                    ("app", name),
                ] {
                    if !label_fields.is_empty() {
                        label_fields.push(',');
                    }
                    push_json_str(&mut label_fields, k);
                    label_fields.push(':');
                    push_json_str(&mut label_fields, v);
                }
                Pod {
                    app,
                    node,
                    labels_text: labels.to_string(),
                    labels,
                    label_fields,
                    pod_ip,
                }
            })
            .collect();

        let mut templates_by_level = Vec::new();
        for level in 0..vocab::LEVELS.len() {
            let idx: Vec<usize> = (0..vocab::TEMPLATES.len())
                .filter(|&i| vocab::TEMPLATES[i].level == level)
                .collect();
            let w: Vec<f64> = idx.iter().map(|&i| vocab::TEMPLATES[i].weight).collect();
            templates_by_level.push((idx, Table::from_weights(&w)));
        }
        let paths = build_paths();
        let dists = Dists {
            level: Table::from_weights(&vocab::LEVELS.iter().map(|l| l.1).collect::<Vec<_>>()),
            templates_by_level,
            method: Table::from_weights(&weights(vocab::METHODS)),
            path: Table::zipf(paths.len(), 1.1),
            status_by_level: vocab::STATUS_BY_LEVEL
                .iter()
                .map(|s| Table::from_weights(&weights(s)))
                .collect(),
            // Microseconds: octaves 2^7 (0.128 ms) .. 2^24 (16.8 s), peak near 16 ms.
            duration_us: LogBuckets::bell(7, 24, 14.0, 2.0, 0.01),
            bytes_sent: LogBuckets::bell(6, 22, 11.0, 1.8, 0.005),
            bytes_received: LogBuckets::bell(5, 18, 9.0, 1.5, 0.005),
            user: Table::zipf(USERS, 1.05),
            org: Table::zipf(ORGS, 1.1),
            user_agent: Table::zipf(vocab::USER_AGENTS.len(), 1.2),
            region: Table::zipf(vocab::REGIONS.len(), 1.3),
            retries: Table::from_weights(&weights(vocab::RETRIES)),
            protocol: Table::from_weights(&weights(vocab::PROTOCOLS)),
            first_octet: Table::from_weights(&vec![1.0; vocab::PUBLIC_FIRST_OCTETS.len()]),
        };
        // Drawn after everything the reference shape draws, so that its lines stay
        // the same whatever the shape code does.
        let varied = match config.shape {
            Shape::Reference => None,
            Shape::Varied => Some(Box::new(varied::Varied::new(
                &mut rng,
                &mut setup,
                config.streams,
            ))),
        };
        let stats = GeneratorStats {
            setup_floor_bits: setup.0,
            ..Default::default()
        };
        Ok(Generator {
            config,
            rng,
            pods,
            apps,
            node_names,
            paths,
            users: vec![None; USERS],
            dists,
            stats,
            line_bits: Bits::default(),
            varied,
        })
    }

    /// The config this generator was built from.
    pub fn config(&self) -> &GeneratorConfig {
        &self.config
    }

    /// Number of streams.
    pub fn stream_count(&self) -> usize {
        self.pods.len()
    }

    /// The label set of stream `i` ({namespace, pod, container, node, app}).
    /// Panics if `i >= stream_count()`.
    pub fn stream_labels(&self, i: usize) -> &Labels {
        &self.pods[i].labels
    }

    /// The label set of stream `i` in Loki's text form.
    pub fn stream_labels_text(&self, i: usize) -> &str {
        &self.pods[i].labels_text
    }

    /// The app of stream `i`.
    pub fn stream_app(&self, i: usize) -> &'static str {
        vocab::APPS[self.pods[i].app].0
    }

    /// The app with the most streams (ties: the first in the vocabulary): a natural
    /// APP for the reference queries.
    pub fn busiest_app(&self) -> &'static str {
        let mut counts = vec![0usize; vocab::APPS.len()];
        for p in &self.pods {
            counts[p.app] += 1;
        }
        let best = (0..counts.len())
            .max_by_key(|&i| (counts[i], std::cmp::Reverse(i)))
            .unwrap_or(0);
        vocab::APPS[best].0
    }

    /// Totals so far (lines, bytes, floor).
    pub fn stats(&self) -> &GeneratorStats {
        &self.stats
    }

    /// Total information content so far (setup and lines), in bits.
    pub fn floor_bits(&self) -> f64 {
        self.stats.floor_bits()
    }

    /// Generates the next `n` lines.
    pub fn fill_batch(&mut self, n: usize) -> Vec<GeneratedLine> {
        (0..n).map(|_| self.next_line()).collect()
    }

    /// The whole object of a generated line: its stream labels as fields, then the line's
    /// fields. A plain-text line ([`Shape::Varied`]) becomes the labels, `ts` (the entry
    /// time) and `message` (the whole line).
    pub fn full_object(&self, g: &GeneratedLine) -> String {
        let pod = &self.pods[g.stream];
        if !g.line.starts_with('{') {
            return varied::plain_object(&pod.label_fields, g);
        }
        let mut s = String::with_capacity(g.line.len() + pod.label_fields.len() + 2);
        s.push('{');
        s.push_str(&pod.label_fields);
        if g.line.len() > 2 {
            s.push(',');
        }
        s.push_str(&g.line[1..]);
        s
    }

    fn base_ts(&self, i: u64) -> i64 {
        let off = (i as i128 * self.config.span_ns as i128) / self.config.lines as i128;
        self.config
            .start_ns
            .saturating_add(off.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
    }

    fn user(&mut self, rank: usize) -> &User {
        if self.users[rank].is_none() {
            let d = &self.dists;
            let bits = &mut self.line_bits;
            let rng = &mut self.rng;
            let o = vocab::PUBLIC_FIRST_OCTETS[d.first_octet.sample(rng, bits)];
            let rest = uniform(rng, 1 << 24, bits);
            let ip = format!("{o}.{}.{}.{}", rest >> 16, (rest >> 8) & 255, rest & 255);
            let user_agent = d.user_agent.sample(rng, bits);
            let region = d.region.sample(rng, bits);
            let org = d.org.sample(rng, bits);
            self.users[rank] = Some(User {
                ip,
                user_agent,
                region,
                org,
            });
        }
        self.users[rank].as_ref().expect("user assigned above")
    }

    /// Generates one line.
    pub fn next_line(&mut self) -> GeneratedLine {
        if self.varied.is_some() {
            return self.next_varied_line();
        }
        let i = self.stats.lines;
        let before = self.line_bits.0;
        let base = self.base_ts(i);
        let width = (self.base_ts(i + 1) - base).max(0) as u64;
        let d = &self.dists;
        let rng = &mut self.rng;
        let bits = &mut self.line_bits;

        let stream = uniform(rng, self.pods.len() as u64, bits) as usize;
        let ts = base + uniform(rng, width, bits) as i64;

        let level = d.level.sample(rng, bits);
        let (tidx, ttable) = &d.templates_by_level[level];
        let template: &Template = &vocab::TEMPLATES[tidx[ttable.sample(rng, bits)]];
        let method = vocab::METHODS[d.method.sample(rng, bits)].0;
        let path_i = d.path.sample(rng, bits);
        let status = vocab::STATUS_BY_LEVEL[level][d.status_by_level[level].sample(rng, bits)].0;
        let dur_us = d.duration_us.sample(rng, bits);
        let bytes_sent = if status == 204 || status == 304 {
            0
        } else {
            d.bytes_sent.sample(rng, bits)
        };
        let bytes_received = if matches!(method, "POST" | "PUT" | "PATCH") {
            d.bytes_received.sample(rng, bits)
        } else {
            0
        };
        let protocol = vocab::PROTOCOLS[d.protocol.sample(rng, bits)].0;
        let user_rank = d.user.sample(rng, bits);
        let retries = vocab::RETRIES[d.retries.sample(rng, bits)].0;
        let cache_hit = bernoulli(rng, 0.3, bits);
        let app = &self.apps[self.pods[stream].app];
        let upstream =
            vocab::APPS[app.upstreams[uniform(rng, app.upstreams.len() as u64, bits) as usize]].0;
        let n =
            template.n_range.0 + uniform(rng, template.n_range.1 - template.n_range.0 + 1, bits);
        let req_hi = rng.next_u64();
        let req_lo = rng.next_u64();
        bits.0 += 122.0;
        let trace = if bernoulli(rng, 0.5, bits) {
            let t = (rng.next_u64(), rng.next_u64(), rng.next_u64());
            bits.0 += 192.0;
            Some(t)
        } else {
            None
        };
        let sql = if bernoulli(rng, 0.03, bits) {
            let s = uniform(rng, vocab::SQL.len() as u64, bits) as usize;
            let p = 1 + uniform(rng, 500, bits);
            Some(vocab::SQL[s].replace("{n}", &p.to_string()))
        } else {
            None
        };
        let error = if level == 3 {
            Some(vocab::ERRORS[uniform(rng, vocab::ERRORS.len() as u64, bits) as usize])
        } else {
            None
        };

        let user_id = format!(
            "usr_{:08}",
            ((user_rank as u64 + 1) * 2_654_435_761) % (1 << 24)
        );
        let (client_ip, ua, region, org) = {
            let u = self.user(user_rank);
            (
                u.ip.clone(),
                vocab::USER_AGENTS[u.user_agent],
                vocab::REGIONS[u.region],
                u.org,
            )
        };
        let org_id = format!("org_{:05}", (org * 7919) % ORGS);
        let dur = format!("{}.{:03}", dur_us / 1000, dur_us % 1000);
        let path = &self.paths[path_i];

        let mut msg = String::with_capacity(96);
        let mut rest = template.text;
        while let Some(open) = rest.find('{') {
            msg.push_str(&rest[..open]);
            let close = rest[open..]
                .find('}')
                .map(|c| open + c)
                .unwrap_or(rest.len() - 1);
            match &rest[open + 1..close] {
                "method" => msg.push_str(method),
                "path" => msg.push_str(path),
                "status" => {
                    let _ = write!(msg, "{status}");
                }
                "dur" => msg.push_str(&dur),
                "up" => msg.push_str(upstream),
                "user" => msg.push_str(&user_id),
                "org" => msg.push_str(&org_id),
                "retries" => {
                    let _ = write!(msg, "{retries}");
                }
                "n" => {
                    let _ = write!(msg, "{n}");
                }
                other => msg.push_str(other),
            }
            rest = &rest[close + 1..];
        }
        msg.push_str(rest);

        let pod = &self.pods[stream];
        let app = &self.apps[pod.app];
        let mut line = String::with_capacity(1024);
        let mut fields = 5u64;
        let mut field = |line: &mut String, key: &str| {
            line.push(if line.is_empty() { '{' } else { ',' });
            push_json_str(line, key);
            line.push(':');
            fields += 1;
        };
        field(&mut line, "timestamp");
        line.push('"');
        push_rfc3339_ms(&mut line, ts);
        line.push('"');
        field(&mut line, "level");
        push_json_str(&mut line, vocab::LEVELS[level].0);
        field(&mut line, "msg");
        push_json_str(&mut line, &msg);
        field(&mut line, "caller");
        push_json_str(&mut line, template.caller);
        field(&mut line, "method");
        push_json_str(&mut line, method);
        field(&mut line, "path");
        push_json_str(&mut line, path);
        field(&mut line, "protocol");
        push_json_str(&mut line, protocol);
        field(&mut line, "status");
        let _ = write!(line, "{status}");
        field(&mut line, "duration_ms");
        line.push_str(&dur);
        field(&mut line, "bytes_sent");
        let _ = write!(line, "{bytes_sent}");
        field(&mut line, "bytes_received");
        let _ = write!(line, "{bytes_received}");
        field(&mut line, "user_agent");
        push_json_str(&mut line, ua);
        field(&mut line, "client_ip");
        push_json_str(&mut line, &client_ip);
        field(&mut line, "user_id");
        push_json_str(&mut line, &user_id);
        field(&mut line, "org_id");
        push_json_str(&mut line, &org_id);
        field(&mut line, "region");
        push_json_str(&mut line, region);
        field(&mut line, "request_id");
        line.push('"');
        varied_ids::push_uuid(&mut line, (req_hi, req_lo));
        line.push('"');
        if let Some((a, b, c)) = trace {
            field(&mut line, "trace_id");
            let _ = write!(line, "\"{a:016x}{b:016x}\"");
            field(&mut line, "span_id");
            let _ = write!(line, "\"{c:016x}\"");
        }
        field(&mut line, "upstream");
        push_json_str(&mut line, upstream);
        field(&mut line, "retries");
        let _ = write!(line, "{retries}");
        field(&mut line, "cache_hit");
        line.push_str(if cache_hit { "true" } else { "false" });
        if let Some(sql) = &sql {
            field(&mut line, "sql");
            push_json_str(&mut line, sql);
        }
        if let Some((text, code)) = error {
            field(&mut line, "error");
            push_json_str(&mut line, text);
            field(&mut line, "error_code");
            push_json_str(&mut line, code);
        }
        field(&mut line, "version");
        push_json_str(&mut line, &app.version);
        field(&mut line, "team");
        push_json_str(&mut line, vocab::APPS[pod.app].2);
        field(&mut line, "cluster");
        push_json_str(&mut line, vocab::CLUSTER);
        field(&mut line, "host");
        push_json_str(&mut line, &self.node_names[pod.node]);
        field(&mut line, "pod_ip");
        push_json_str(&mut line, &pod.pod_ip);
        field(&mut line, "stream");
        push_json_str(&mut line, vocab::LEVELS[level].2);
        line.push('}');

        self.stats.lines += 1;
        self.stats.line_bytes += line.len() as u64;
        self.stats.object_bytes += (line.len() + pod.label_fields.len() + 1) as u64;
        self.stats.fields += fields;
        self.stats.line_floor_bits += self.line_bits.0 - before;
        GeneratedLine { stream, ts, line }
    }
}

impl Iterator for Generator {
    type Item = GeneratedLine;

    /// Never ends; take as many lines as needed.
    fn next(&mut self) -> Option<GeneratedLine> {
        Some(self.next_line())
    }
}

/// How [`generate`] writes each line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum OutputFormat {
    /// `{"labels":"{...}","ts":"<ns>","line":"<json>"}` per line.
    Record,
    /// The whole JSON object (labels as fields) per line, as JSON-lines ingestion sees it.
    Object,
}

/// Writes `n` generated lines as NDJSON in `format` and returns the totals.
pub fn generate<W: Write>(
    config: GeneratorConfig,
    n: u64,
    format: OutputFormat,
    out: W,
) -> Result<GeneratorStats, GeneratorError> {
    let mut gen = Generator::new(config)?;
    let mut out = std::io::BufWriter::new(out);
    let mut buf = String::new();
    for _ in 0..n {
        let g = gen.next_line();
        buf.clear();
        match format {
            OutputFormat::Record => {
                buf.push_str("{\"labels\":");
                push_json_str(&mut buf, gen.stream_labels_text(g.stream));
                let _ = write!(buf, ",\"ts\":\"{}\",\"line\":", g.ts);
                push_json_str(&mut buf, &g.line);
                buf.push('}');
            }
            OutputFormat::Object => buf.push_str(&gen.full_object(&g)),
        }
        buf.push('\n');
        out.write_all(buf.as_bytes())?;
    }
    out.flush()?;
    Ok(gen.stats().clone())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_varied;
pub mod varied;
mod varied_ids;
mod varied_vocab;
