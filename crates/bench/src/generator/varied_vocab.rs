//! The fixed vocabulary of the [`Shape::Varied`](super::Shape::Varied) lines:
//! messages, loggers, routes, names and codes, all different from the reference
//! shape's ([`crate::vocab`]). Fixed text costs no information; only the draws
//! that pick from it do.

/// Severities, in the order the messages refer to them.
pub const SEVERITIES: &[&str] = &["INFO", "WARN", "ERROR", "DEBUG"];
/// Index of `INFO` in [`SEVERITIES`].
pub const INFO: usize = 0;
/// Index of `WARN` in [`SEVERITIES`].
pub const WARN: usize = 1;
/// Index of `ERROR` in [`SEVERITIES`].
pub const ERROR: usize = 2;
/// Index of `DEBUG` in [`SEVERITIES`].
pub const DEBUG: usize = 3;

/// Messages: (severity, weight in percent of the lines, text). The severity follows
/// from the message. Every `ERROR` message holds the word `error` (lowercase) and
/// no other does; [`PHRASE2`](super::varied::PHRASE2) is in 1 % of the lines,
/// [`PHRASE3`](super::varied::PHRASE3) in 0.5 %, `completed` in about 71.5 %.
pub const MESSAGES: &[(usize, f64, &str)] = &[
    (INFO, 12.0, "request completed"),
    (INFO, 8.0, "checkout completed for cart"),
    (INFO, 7.0, "order placement completed"),
    (INFO, 6.0, "inventory reservation completed"),
    (INFO, 6.0, "payment capture completed"),
    (INFO, 5.0, "shipping quote completed"),
    (INFO, 4.0, "profile update completed"),
    (INFO, 6.0, "search query completed"),
    (INFO, 3.0, "recommendation batch completed"),
    (INFO, 2.0, "refund completed and ledger updated"),
    (INFO, 2.0, "invoice rendering completed"),
    (INFO, 3.0, "coupon check completed"),
    (INFO, 2.0, "address validation completed"),
    (INFO, 4.0, "login flow completed"),
    (INFO, 4.0, "session token refreshed"),
    (INFO, 3.0, "price list loaded from cache"),
    (INFO, 2.0, "feature flags refreshed from control plane"),
    (INFO, 2.0, "webhook delivered to partner endpoint"),
    (INFO, 2.0, "background sync started"),
    (INFO, 2.0, "health probe answered"),
    (WARN, 0.6, "payment declined by issuing bank"),
    (WARN, 0.5, "retry budget exhausted for downstream call"),
    (WARN, 2.0, "slow response from upstream dependency"),
    (WARN, 1.2, "connection pool nearly saturated"),
    (WARN, 1.0, "stale inventory snapshot served"),
    (WARN, 1.2, "tenant approaching its rate limit"),
    (WARN, 0.8, "falling back to default shipping rates"),
    (ERROR, 0.4, "error capturing charge: payment declined twice"),
    (
        ERROR,
        0.8,
        "unexpected error while writing order to database",
    ),
    (ERROR, 0.6, "upstream error from fraud scoring service"),
    (ERROR, 0.5, "error decoding partner callback payload"),
    (ERROR, 0.7, "timeout error reaching inventory service"),
    (DEBUG, 1.5, "cache lookup completed"),
    (DEBUG, 1.2, "query plan chosen for catalog lookup"),
    (DEBUG, 1.0, "serialized response body"),
    (DEBUG, 1.0, "acquired distributed lock"),
];

/// Loggers (uniform). Plain-text lines abbreviate the package: `c.s.p.PaymentService`.
pub const LOGGERS: &[&str] = &[
    "com.shop.payments.PaymentService",
    "com.shop.orders.OrderController",
    "com.shop.cart.CartManager",
    "com.shop.inventory.StockReserver",
    "com.shop.search.QueryExecutor",
    "com.shop.identity.LoginHandler",
    "com.shop.shipping.RateCalculator",
    "com.shop.pricing.PriceResolver",
    "com.shop.web.RequestLogger",
    "com.shop.partners.WebhookClient",
    "com.shop.fraud.ScoringClient",
    "com.shop.db.ConnectionPool",
];

/// HTTP methods and weights.
pub const METHODS: &[(&str, f64)] = &[
    ("GET", 62.0),
    ("POST", 25.0),
    ("PUT", 6.0),
    ("DELETE", 3.0),
    ("PATCH", 4.0),
];

/// Routes, most popular first (drawn Zipf); `{n}` is a uniform draw in 1..=99,999.
pub const ROUTES: &[&str] = &[
    "/api/v3/search",
    "/api/v3/products/{n}",
    "/api/v3/cart/items",
    "/api/v3/checkout",
    "/api/v3/orders/{n}",
    "/api/v3/users/me",
    "/api/v3/recommendations",
    "/api/v3/orders",
    "/api/v3/payments/{n}/capture",
    "/api/v3/shipping/quotes",
    "/api/v3/inventory/{n}",
    "/api/v3/coupons/validate",
    "/api/v3/sessions",
    "/api/v3/invoices/{n}",
    "/api/v3/reviews/{n}",
    "/api/v3/wishlist",
    "/api/v3/refunds",
    "/api/v3/addresses/verify",
    "/api/v3/webhooks/partner",
    "/healthz",
];

/// Status codes and weights per severity index (same order as [`SEVERITIES`]).
pub const STATUS_BY_SEVERITY: &[&[(u16, f64)]] = &[
    &[(200, 85.0), (201, 7.0), (204, 4.0), (304, 4.0)],
    &[
        (400, 20.0),
        (402, 15.0),
        (404, 25.0),
        (409, 10.0),
        (429, 30.0),
    ],
    &[(500, 50.0), (502, 20.0), (503, 20.0), (504, 10.0)],
    &[(200, 90.0), (204, 10.0)],
];

/// First names of the account emails (uniform).
pub const FIRST_NAMES: &[&str] = &[
    "anna", "ben", "carla", "david", "elena", "felix", "grace", "hugo", "ines", "jonas", "karin",
    "liam", "maya", "nils", "olga", "paul", "rosa", "sven", "tara", "ugo", "vera", "wim", "yara",
    "zoe", "jane", "omar", "lea", "ivan", "nora", "emil",
];

/// Last names of the account emails (uniform).
pub const LAST_NAMES: &[&str] = &[
    "novak",
    "berg",
    "costa",
    "dahl",
    "eriksen",
    "fischer",
    "garcia",
    "hansen",
    "ivanova",
    "jensen",
    "klein",
    "larsen",
    "meyer",
    "nielsen",
    "olsen",
    "petrov",
    "quinn",
    "rossi",
    "schmidt",
    "tanaka",
    "urban",
    "vogel",
    "weber",
    "young",
    "doe",
    "moreau",
    "silva",
    "kowalski",
    "lindqvist",
    "haas",
];

/// Email domains (uniform).
pub const DOMAINS: &[&str] = &[
    "example.org",
    "mail.com",
    "shopmail.net",
    "inbox.eu",
    "corp.io",
    "post.de",
];

/// First octets of peer addresses (uniform).
pub const IP_FIRST_OCTETS: &[u8] = &[10, 10, 10, 172, 192, 31, 46, 85, 91, 145, 185, 213];

/// Client versions and weights.
pub const CLIENT_VERSIONS: &[(&str, f64)] = &[
    ("web/5.2.0", 30.0),
    ("web/5.1.3", 12.0),
    ("ios/7.14.2", 20.0),
    ("ios/7.14.1", 6.0),
    ("android/7.14.1", 18.0),
    ("android/7.13.0", 7.0),
    ("partner-sdk/2.3.1", 7.0),
];

/// Currencies of the amount fields, with weights.
pub const CURRENCIES: &[(&str, f64)] = &[
    ("EUR", 45.0),
    ("USD", 25.0),
    ("GBP", 10.0),
    ("SEK", 6.0),
    ("NOK", 4.0),
    ("DKK", 3.0),
    ("CHF", 4.0),
    ("PLN", 3.0),
];

/// The `error_kind` of `ERROR` lines (uniform).
pub const ERROR_KINDS: &[&str] = &[
    "DbTimeout",
    "UpstreamUnavailable",
    "DecodeFailure",
    "ChargeRejected",
    "PoolExhausted",
];

/// Attempt numbers and weights.
pub const ATTEMPTS: &[(u8, f64)] = &[(1, 95.0), (2, 4.0), (3, 1.0)];
