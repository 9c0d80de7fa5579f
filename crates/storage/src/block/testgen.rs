//! Deterministic generator of the reference workload (Kubernetes-style JSON
//! access logs, ~750 bytes per line) for tests and measurements. It also
//! reports the information content of what it drew (sum of -log2 p), the
//! floor no lossless store can beat.
//!
//! Its output is part of the golden test (`testdata/block_v1.bin`): changing
//! what it generates for a seed means regenerating that file.

/// xorshift64* PRNG.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const MSGS: &[&str] = &[
    "request completed",
    "request started",
    "cache lookup finished",
    "user session refreshed",
    "upstream responded",
    "payment authorized",
    "order created",
    "inventory reserved",
    "token validated",
    "rate limit checked",
    "connection timeout while calling upstream",
    "retrying request",
    "slow query detected",
    "feature flag evaluated",
    "message published",
    "message consumed",
    "health check ok",
    "config reloaded",
    "background job finished",
    "email queued",
    "search executed",
    "thumbnail generated",
    "webhook delivered",
    "audit record written",
];
const METHODS: &[(&str, f64)] = &[
    ("GET", 0.70),
    ("POST", 0.18),
    ("PUT", 0.06),
    ("DELETE", 0.04),
    ("PATCH", 0.02),
];
const LEVELS: &[(&str, f64)] = &[
    ("info", 0.93),
    ("warn", 0.04),
    ("error", 0.02),
    ("debug", 0.01),
];
const STATUSES: &[(&str, f64)] = &[
    ("200", 0.82),
    ("201", 0.05),
    ("204", 0.03),
    ("304", 0.03),
    ("400", 0.02),
    ("401", 0.01),
    ("404", 0.02),
    ("500", 0.01),
    ("503", 0.01),
];
const REGIONS: &[&str] = &[
    "eu-west-1",
    "eu-central-1",
    "us-east-1",
    "us-west-2",
    "ap-south-1",
    "ap-northeast-1",
];
const AGENTS: usize = 40;
const PATHS: usize = 300;
const USERS: u64 = 100_000;

/// One stream's generator (collector fields are fixed per stream).
pub struct Workload {
    rng: Rng,
    ts_ms: i64,
    pod: u64,
    /// Information content drawn so far, bits.
    pub bits: f64,
}

impl Workload {
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let pod = rng.below(5000);
        Workload {
            rng,
            ts_ms: 1_795_913_989_854,
            pod,
            bits: 0.0,
        }
    }

    fn uniform(&mut self, n: u64) -> u64 {
        self.bits += (n as f64).log2();
        self.rng.below(n)
    }

    fn weighted(&mut self, table: &[(&'static str, f64)]) -> &'static str {
        let u = self.rng.unit();
        let mut acc = 0.0;
        for &(v, p) in table {
            acc += p;
            if u < acc {
                self.bits -= p.log2();
                return v;
            }
        }
        let (v, p) = table[table.len() - 1];
        self.bits -= p.log2();
        v
    }

    /// Zipf(1) rank in 0..n.
    fn zipf(&mut self, n: usize) -> usize {
        let h: f64 = (1..=n).map(|k| 1.0 / k as f64).sum();
        let u = self.rng.unit() * h;
        let mut acc = 0.0;
        for k in 1..=n {
            acc += 1.0 / k as f64;
            if u < acc {
                self.bits -= (1.0 / k as f64 / h).log2();
                return k - 1;
            }
        }
        n - 1
    }

    fn hex(&mut self, digits: usize) -> String {
        self.bits += 4.0 * digits as f64;
        (0..digits)
            .map(|_| char::from(b"0123456789abcdef"[self.rng.below(16) as usize]))
            .collect()
    }

    /// The next (timestamp ns, line).
    pub fn line(&mut self) -> (i64, String) {
        self.ts_ms += self.uniform(300) as i64;
        let ts = format_ms(self.ts_ms);
        let level = self.weighted(LEVELS);
        let msg = MSGS[self.zipf(MSGS.len())];
        let method = self.weighted(METHODS);
        let p = self.zipf(PATHS);
        let path = format!(
            "/api/v{}/{}/{}",
            1 + p % 3,
            ["users", "orders", "items", "carts", "search", "auth"][p % 6],
            p
        );
        let status = self.weighted(STATUSES);
        let dur = {
            let u = self.rng.unit().max(1e-12);
            self.bits += 14.0; // about 14 bits of a 3-decimal long-tailed value
            let base = -u.ln() * 25.0;
            if self.rng.below(100) == 0 {
                base * 40.0
            } else {
                base
            }
        };
        let bytes = 200 + self.uniform(50_000);
        let agent = self.zipf(AGENTS);
        let ip = format!(
            "10.{}.{}.{}",
            self.uniform(4),
            self.uniform(256),
            self.uniform(256)
        );
        let req = format!(
            "{}-{}-4{}-{}{}-{}",
            self.hex(8),
            self.hex(4),
            self.hex(3),
            ["8", "9", "a", "b"][self.uniform(4) as usize],
            self.hex(3),
            self.hex(12)
        );
        let user = self.uniform(USERS);
        let region = REGIONS[self.uniform(REGIONS.len() as u64) as usize];
        let retries = if self.rng.below(10) == 0 {
            self.bits += 3.3;
            1 + self.rng.below(3)
        } else {
            self.bits += 0.15;
            0
        };
        let cache = self.uniform(2) == 0;
        let mut line = format!(
            concat!(
                r#"{{"timestamp":"{}","level":"{}","msg":"{}","method":"{}","path":"{}","status":{},"#,
                r#""duration_ms":{:.3},"bytes":{},"user_agent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{}.0.{}.{} Safari/537.36","#,
                r#""client_ip":"{}","request_id":"{}","user_id":"user_{}","region":"{}","retries":{},"cache_hit":{},"#,
                r#""protocol":"HTTP/1.1","content_type":"application/json","tls":true,"#
            ),
            ts,
            level,
            msg,
            method,
            path,
            status,
            dur,
            bytes,
            100 + agent,
            4000 + agent * 7,
            100 + agent * 3,
            ip,
            req,
            user,
            region,
            retries,
            cache
        );
        if self.uniform(2) == 0 {
            let (t, s) = (self.hex(32), self.hex(16));
            line.push_str(&format!(r#""trace_id":"{t}","span_id":"{s}","#));
        }
        if self.rng.below(50) == 0 {
            self.bits += 6.0;
            line.push_str(&format!(
                r#""sql":"SELECT id, name, email FROM users WHERE id = {} AND tenant_id = {}","#,
                user,
                self.uniform(1000)
            ));
        }
        if level == "error" {
            line.push_str(r#""error":"upstream connect error or disconnect/reset before headers. reset reason: connection timeout","#);
        }
        line.push_str(&format!(
            concat!(
                r#""kubernetes":{{"cluster":"prod-eu-1","host":"node-{}","stream":"stdout","version":"2.{}.1","team":"team-{}"}},"#,
                r#""service":"svc-{}","env":"production","instance":"pod-{}-7f9c6d","build":"b{}"}}"#
            ),
            self.pod / 40,
            self.pod % 7,
            self.pod % 12,
            self.pod % 50,
            self.pod,
            9000 + self.pod % 50
        ));
        (self.ts_ms * 1_000_000, line)
    }
}

fn format_ms(ms: i64) -> String {
    let mut out = Vec::new();
    super::text::format_rfc3339(&mut out, ms, 3);
    String::from_utf8(out).unwrap_or_default()
}
