//! The workload's fixed vocabulary: applications, paths, user agents, message
//! templates, SQL statements and error texts. Fixed text costs no information;
//! only the draws that pick from it do.

/// The word that appears in most lines (in the message of most templates) and in no
/// field name or fixed field value; the WORD of the reference queries.
pub const COMMON_WORD: &str = "completed";

/// The two-word phrase that appears in about 1 % of the lines.
pub const PHRASE: &str = "connection timeout";

/// The cluster name every collector adds.
pub const CLUSTER: &str = "prod-eu-west-1";

/// Applications: (app, namespace, team). About fifty, in a dozen namespaces.
pub const APPS: &[(&str, &str, &str)] = &[
    ("checkout-api", "shop", "payments"),
    ("payment-gateway", "shop", "payments"),
    ("cart-service", "shop", "storefront"),
    ("catalog-api", "shop", "storefront"),
    ("search-api", "search", "discovery"),
    ("search-indexer", "search", "discovery"),
    ("recommendations", "search", "discovery"),
    ("user-service", "identity", "identity"),
    ("auth-service", "identity", "identity"),
    ("session-store", "identity", "identity"),
    ("order-service", "orders", "fulfilment"),
    ("inventory-service", "orders", "fulfilment"),
    ("shipping-api", "orders", "fulfilment"),
    ("warehouse-sync", "orders", "fulfilment"),
    ("notification-service", "messaging", "engagement"),
    ("email-sender", "messaging", "engagement"),
    ("sms-gateway", "messaging", "engagement"),
    ("push-dispatcher", "messaging", "engagement"),
    ("pricing-engine", "pricing", "revenue"),
    ("promotions-api", "pricing", "revenue"),
    ("tax-calculator", "pricing", "revenue"),
    ("invoice-service", "billing", "revenue"),
    ("billing-worker", "billing", "revenue"),
    ("ledger-api", "billing", "finance"),
    ("fraud-detector", "risk", "risk"),
    ("risk-scorer", "risk", "risk"),
    ("kyc-verifier", "risk", "risk"),
    ("api-gateway", "edge", "platform"),
    ("edge-router", "edge", "platform"),
    ("rate-limiter", "edge", "platform"),
    ("image-resizer", "media", "content"),
    ("media-uploader", "media", "content"),
    ("cdn-purger", "media", "content"),
    ("cms-api", "content", "content"),
    ("reviews-service", "content", "storefront"),
    ("wishlist-service", "shop", "storefront"),
    ("loyalty-service", "shop", "engagement"),
    ("analytics-collector", "data", "data"),
    ("event-ingester", "data", "data"),
    ("report-generator", "data", "data"),
    ("feature-flags", "platform", "platform"),
    ("config-service", "platform", "platform"),
    ("scheduler", "platform", "platform"),
    ("audit-log", "platform", "security"),
    ("secrets-broker", "platform", "security"),
    ("geo-service", "search", "discovery"),
    ("currency-converter", "pricing", "revenue"),
    ("support-desk", "content", "engagement"),
    ("partner-api", "edge", "partners"),
    ("webhook-relay", "edge", "partners"),
];

/// First octets used for public client addresses.
pub const PUBLIC_FIRST_OCTETS: &[u8] = &[
    2, 5, 31, 37, 46, 62, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94,
    95, 109, 141, 145, 151, 176, 178, 185, 188, 193, 194, 195, 212, 213, 217, 223,
];

/// Regions a client is served from.
pub const REGIONS: &[&str] = &[
    "eu-west-1",
    "eu-central-1",
    "us-east-1",
    "us-west-2",
    "eu-north-1",
    "ap-southeast-1",
    "sa-east-1",
    "ap-northeast-1",
];

/// User agents, most popular first (drawn Zipf, once per user).
pub const USER_AGENTS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.6668.81 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:131.0) Gecko/20100101 Firefox/131.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36 Edg/129.0.2792.65",
    "okhttp/4.12.0",
    "Mozilla/5.0 (iPad; CPU OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36",
    "Go-http-client/2.0",
    "python-requests/2.32.3",
    "Mozilla/5.0 (Linux; Android 13; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0.6613.146 Mobile Safari/537.36",
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:130.0) Gecko/20100101 Firefox/130.0",
    "ShopApp/7.14.2 (iPhone; iOS 18.0; Scale/3.00)",
    "ShopApp/7.14.1 (Android 14; Pixel 8 Pro)",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/128.0.0.0 Safari/537.36 OPR/113.0.0.0",
    "curl/8.10.1",
    "Mozilla/5.0 (Linux; Android 12; SM-A525F) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36",
    "Apache-HttpClient/5.3.1 (Java/21.0.4)",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_6_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/129.0.6668.69 Mobile/15E148 Safari/604.1",
    "axios/1.7.7",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
];

/// Path resources (route segments).
pub const RESOURCES: &[&str] = &[
    "orders",
    "carts",
    "products",
    "users",
    "sessions",
    "payments",
    "invoices",
    "shipments",
    "reviews",
    "wishlists",
    "coupons",
    "prices",
    "stock",
    "categories",
    "search",
    "accounts",
    "addresses",
    "notifications",
    "webhooks",
    "reports",
    "media",
    "tokens",
    "subscriptions",
    "refunds",
    "returns",
    "partners",
    "events",
    "flags",
    "audits",
    "tickets",
];

/// Path shapes per resource; `{r}` is the resource. Together with the API versions
/// this gives a few hundred distinct paths.
pub const PATH_SHAPES: &[&str] = &[
    "/api/{v}/{r}",
    "/api/{v}/{r}/:id",
    "/api/{v}/{r}/:id/items",
    "/api/{v}/{r}/:id/status",
    "/api/{v}/{r}/search",
    "/api/{v}/{r}/export",
    "/internal/{r}/sync",
    "/{r}/view",
];

/// API versions used in paths.
pub const API_VERSIONS: &[&str] = &["v1", "v2"];

/// HTTP methods with their weights.
pub const METHODS: &[(&str, f64)] = &[
    ("GET", 70.0),
    ("POST", 18.0),
    ("PUT", 6.0),
    ("DELETE", 3.0),
    ("PATCH", 3.0),
];

/// Log levels with their weights, and the output stream their lines go to.
pub const LEVELS: &[(&str, f64, &str)] = &[
    ("info", 92.5, "stdout"),
    ("debug", 1.5, "stdout"),
    ("warn", 4.0, "stderr"),
    ("error", 2.0, "stderr"),
];

/// Status codes and weights per level index (same order as [`LEVELS`]).
pub const STATUS_BY_LEVEL: &[&[(u16, f64)]] = &[
    &[
        (200, 82.0),
        (201, 6.0),
        (204, 4.0),
        (301, 1.0),
        (302, 2.0),
        (304, 5.0),
    ],
    &[(200, 90.0), (204, 5.0), (304, 5.0)],
    &[
        (400, 25.0),
        (401, 15.0),
        (403, 10.0),
        (404, 30.0),
        (409, 5.0),
        (429, 15.0),
    ],
    &[(500, 50.0), (502, 20.0), (503, 15.0), (504, 15.0)],
];

/// Retry counts and weights.
pub const RETRIES: &[(u8, f64)] = &[(0, 95.0), (1, 3.5), (2, 1.0), (3, 0.5)];

/// HTTP protocol versions and weights.
pub const PROTOCOLS: &[(&str, f64)] = &[("HTTP/1.1", 65.0), ("HTTP/2.0", 35.0)];

/// A message template. Placeholders: `{method}`, `{path}`, `{status}`, `{dur}`,
/// `{up}`, `{user}`, `{org}`, `{retries}` render fields of the same line (no new
/// information); `{n}` renders a fresh uniform draw from `n_range`.
#[derive(Clone, Copy, Debug)]
pub struct Template {
    /// Level index into [`LEVELS`].
    pub level: usize,
    /// Relative weight among templates of the same level.
    pub weight: f64,
    /// The text with placeholders.
    pub text: &'static str,
    /// The `caller` field of lines using this template.
    pub caller: &'static str,
    /// Inclusive range of `{n}`.
    pub n_range: (u64, u64),
}

const fn t(
    level: usize,
    weight: f64,
    text: &'static str,
    caller: &'static str,
    n_range: (u64, u64),
) -> Template {
    Template {
        level,
        weight,
        text,
        caller,
        n_range,
    }
}

/// All message templates. Each text is distinguishable from every other, so the
/// template can be recovered from a line (the floor counts it once).
pub const TEMPLATES: &[Template] = &[
    // info
    t(
        0,
        30.0,
        "request completed",
        "middleware/logging.go:88",
        (0, 0),
    ),
    t(
        0,
        20.0,
        "completed {method} {path} with status {status} in {dur}ms",
        "middleware/logging.go:112",
        (0, 0),
    ),
    t(
        0,
        8.0,
        "completed request for org {org}",
        "server/handler.go:241",
        (0, 0),
    ),
    t(
        0,
        8.0,
        "completed upstream call to {up}",
        "client/upstream.go:77",
        (0, 0),
    ),
    t(0, 8.0, "request started", "server/handler.go:96", (0, 0)),
    t(
        0,
        3.0,
        "session refreshed for user {user}",
        "auth/session.go:154",
        (0, 0),
    ),
    t(
        0,
        3.0,
        "completed background job {n}",
        "worker/pool.go:203",
        (1, 999_999),
    ),
    t(
        0,
        5.0,
        "health check completed",
        "health/probe.go:41",
        (0, 0),
    ),
    t(
        0,
        3.0,
        "cache lookup completed, {n} keys scanned",
        "cache/lru.go:129",
        (1, 64),
    ),
    t(
        0,
        4.0,
        "payload validated, forwarding to {up}",
        "server/validate.go:58",
        (0, 0),
    ),
    t(
        0,
        3.0,
        "completed batch of {n} events",
        "worker/batch.go:90",
        (1, 500),
    ),
    t(
        0,
        2.0,
        "rate limiter window completed for org {org}",
        "ratelimit/window.go:33",
        (0, 0),
    ),
    t(0, 3.0, "token verified", "auth/jwt.go:71", (0, 0)),
    t(
        0,
        2.0,
        "response streamed to client",
        "server/stream.go:119",
        (0, 0),
    ),
    // debug
    t(
        1,
        40.0,
        "acquired db connection from pool, {n} idle",
        "db/pool.go:64",
        (0, 32),
    ),
    t(
        1,
        30.0,
        "cache miss for key orders:{n}",
        "cache/lru.go:102",
        (1, 99_999),
    ),
    t(
        1,
        30.0,
        "completed span export",
        "telemetry/export.go:47",
        (0, 0),
    ),
    // warn
    t(
        2,
        35.0,
        "slow request completed in {dur}ms",
        "middleware/logging.go:131",
        (0, 0),
    ),
    t(
        2,
        15.0,
        "connection timeout to {up}, retrying ({retries} of 3)",
        "client/retry.go:52",
        (0, 0),
    ),
    t(
        2,
        20.0,
        "retrying call to {up} after status {status}",
        "client/retry.go:88",
        (0, 0),
    ),
    t(
        2,
        10.0,
        "client closed connection before response was sent",
        "server/handler.go:310",
        (0, 0),
    ),
    t(
        2,
        10.0,
        "payload larger than {n} KiB",
        "server/validate.go:24",
        (64, 4096),
    ),
    t(
        2,
        10.0,
        "deprecated API version used by user {user}",
        "server/version.go:19",
        (0, 0),
    ),
    // error
    t(
        3,
        20.0,
        "upstream {up} connection timeout after {dur}ms",
        "client/upstream.go:140",
        (0, 0),
    ),
    t(
        3,
        30.0,
        "failed to process {method} {path}: internal error",
        "server/handler.go:402",
        (0, 0),
    ),
    t(3, 25.0, "database query failed", "db/query.go:211", (0, 0)),
    t(
        3,
        10.0,
        "panic recovered in handler",
        "server/recover.go:27",
        (0, 0),
    ),
    t(
        3,
        15.0,
        "could not publish event to queue {n}",
        "queue/producer.go:83",
        (1, 64),
    ),
];

/// Error texts on error lines (uniform), with their error codes.
pub const ERRORS: &[(&str, &str)] = &[
    ("context deadline exceeded", "E_DEADLINE"),
    ("dial tcp 10.96.0.12:5432: i/o timeout", "E_DB_DIAL"),
    (
        "pq: duplicate key value violates unique constraint \"orders_pkey\"",
        "E_DB_CONSTRAINT",
    ),
    (
        "rpc error: code = Unavailable desc = upstream unavailable",
        "E_UNAVAILABLE",
    ),
    ("EOF", "E_EOF"),
    ("read: connection reset by peer", "E_RESET"),
    (
        "json: cannot unmarshal string into Go value of type int64",
        "E_DECODE",
    ),
    ("kafka: client has run out of available brokers", "E_QUEUE"),
    ("redis: connection pool exhausted", "E_CACHE_POOL"),
    (
        "runtime error: index out of range [3] with length 3",
        "E_PANIC",
    ),
];

/// SQL statements of the rare `sql` field; `{n}` is a uniform draw in 1..=500.
pub const SQL: &[&str] = &[
    "SELECT id, status, total_cents FROM orders WHERE customer_id = $1 ORDER BY created_at DESC LIMIT {n}",
    "SELECT p.id, p.name, p.price_cents FROM products p JOIN categories c ON c.id = p.category_id WHERE c.slug = $1 LIMIT {n}",
    "UPDATE carts SET updated_at = now(), item_count = item_count + 1 WHERE id = $1 AND version = {n}",
    "INSERT INTO events (id, kind, payload, created_at) VALUES ($1, $2, $3, now()) /* batch {n} */",
    "DELETE FROM sessions WHERE expires_at < now() - interval '{n} minutes'",
    "SELECT count(*) FROM stock_movements WHERE warehouse_id = $1 AND moved_at > now() - interval '{n} hours'",
    "SELECT u.id, u.email FROM users u WHERE u.org_id = $1 AND u.deleted_at IS NULL LIMIT {n}",
    "UPDATE invoices SET state = 'paid', paid_at = now() WHERE id = $1 AND attempt = {n}",
];
