// Time ranges: relative ("now", "now-15m") and absolute (RFC 3339, or a
// date-time without zone read as UTC) expressions, in nanoseconds as BigInt.

const UNITS = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 604800e3 };

/** Milliseconds since the epoch of `expr`, or NaN when it is not a time. */
export function parseTime(expr, nowMs = Date.now()) {
  const s = expr.trim();
  if (s === "now") return nowMs;
  const rel = /^now\s*-\s*(\d+(?:\.\d+)?)([smhdw])$/.exec(s);
  if (rel) return nowMs - Number(rel[1]) * UNITS[rel[2]];
  if (/^\d{10,}$/.test(s)) return s.length > 13 ? Number(BigInt(s) / 1000000n) : Number(s) * (s.length > 10 ? 1 : 1000);
  const abs = /[zZ]|[+-]\d\d:?\d\d$/.test(s) ? s : `${s}Z`;
  return Date.parse(abs);
}

/** A range as [startNs, endNs] BigInts; throws a message when it is not valid. */
export function rangeOf(fromExpr, toExpr, nowMs = Date.now()) {
  const from = parseTime(fromExpr, nowMs);
  const to = parseTime(toExpr, nowMs);
  if (Number.isNaN(from)) throw new Error(`From: not a time: ${fromExpr}`);
  if (Number.isNaN(to)) throw new Error(`To: not a time: ${toExpr}`);
  if (to <= from) throw new Error("From must be before To");
  return [BigInt(Math.floor(from)) * 1000000n, BigInt(Math.floor(to)) * 1000000n];
}

/** RFC 3339 in UTC with milliseconds, for a nanosecond BigInt or a string of one. */
export function formatNs(ns) {
  const n = BigInt(ns);
  const d = new Date(Number(n / 1000000n));
  return d.toISOString().replace("T", " ").replace("Z", "");
}

/** The absolute expression of a millisecond time (for the range inputs). */
export function absolute(ms) {
  return new Date(ms).toISOString().replace(/\.000Z$/, "Z");
}

/** A step (seconds) giving about `points` buckets over [startNs, endNs]. */
export function stepFor(startNs, endNs, points) {
  const secs = Number(endNs - startNs) / 1e9;
  const nice = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  const raw = secs / points;
  return nice.find((n) => n >= raw) || Math.ceil(raw / 86400) * 86400;
}
