// Calls to the Loki API: every request carries the chosen tenant in
// X-Scope-OrgID, the credentials typed into the login form (if any) in
// Authorization, X-Runakefli-UI: 1 (so a 401 comes without the basic-auth
// challenge that would open the browser's own prompt) and an AbortSignal;
// errors come back as ApiError with the server's own message (and, for
// LogQL syntax errors, its position).

let tenant = "";
let onUnauthorized = () => {};
const AUTH_KEY = "rk.auth";

/** The Authorization header sent on every call ("" none), kept in sessionStorage: this tab only, gone when it closes. */
export function getAuth() { return sessionStorage.getItem(AUTH_KEY) || ""; }

/** Sets (or with "" forgets) the Authorization header sent on every call. */
export function setAuth(value) {
  if (value) sessionStorage.setItem(AUTH_KEY, value);
  else sessionStorage.removeItem(AUTH_KEY);
}

/** Calls `f(error)` whenever a request answers 401. */
export function whenUnauthorized(f) { onUnauthorized = f; }

/** Sets the tenant every later request is made for ("" sends no header). */
export function setTenant(t) { tenant = t.trim(); }

/** The tenant requests are made for. */
export function getTenant() { return tenant; }

/** An error answered by the server (or the network), with its position when the message has one. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
    const m = /parse error at line (\d+), col (\d+)/.exec(message);
    this.line = m ? Number(m[1]) : 0;
    this.col = m ? Number(m[2]) : 0;
  }
}

function headers(extra) {
  const h = { Accept: "application/json", "X-Runakefli-UI": "1", ...(extra || {}) };
  if (tenant) h["X-Scope-OrgID"] = tenant;
  const auth = getAuth();
  if (auth) h.Authorization = auth;
  return h;
}

/** GET `path` with `params` (and `extra` headers); resolves to the parsed JSON, rejects with ApiError. */
export async function get(path, params, signal, extra) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") qs.set(k, String(v));
  }
  return call(`${path}?${qs}`, { headers: headers(extra), signal });
}

/** POST `body` as JSON to `path`; resolves to the parsed JSON, rejects with ApiError. */
export async function post(path, body, signal) {
  const h = headers({ "Content-Type": "application/json" });
  return call(path, { method: "POST", headers: h, body: JSON.stringify(body), signal });
}

async function call(url, init) {
  let resp;
  try {
    resp = await fetch(url, init);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, `network error: ${e.message}`);
  }
  const text = await resp.text();
  if (!resp.ok) {
    const err = new ApiError(resp.status, text.trim() || resp.statusText);
    if (resp.status === 401) onUnauthorized(err);
    throw err;
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(resp.status, `unreadable answer: ${text.slice(0, 200)}`);
  }
}

/** The stream selector at the start of a LogQL query (`{...}`), or null. */
export function selectorOf(query) {
  const start = query.indexOf("{");
  if (start < 0) return null;
  let inString = null;
  for (let i = start + 1; i < query.length; i++) {
    const c = query[i];
    if (inString) {
      if (c === "\\" && inString !== "`") i++;
      else if (c === inString) inString = null;
    } else if (c === '"' || c === "`") inString = c;
    else if (c === "}") return query.slice(start, i + 1);
  }
  return null;
}

/** Whether `query` is a metric query (its answer is a matrix). */
export function isMetric(query) {
  return !query.trim().startsWith("{");
}

/**
 * The WebSocket URL of the live tail for `query` from `startNs`. Browsers
 * cannot set headers on a WebSocket: the server takes the tenant from
 * `orgId` on the tail route only, and checks it as it checks the header;
 * with authentication on (`withTicket`), the credentials are replaced by a
 * single-use ticket for this query and tenant, minted just before.
 */
export async function tailUrl(query, startNs, limit, withTicket) {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const qs = new URLSearchParams({ query, start: String(startNs), limit: String(limit) });
  if (tenant) qs.set("orgId", tenant);
  if (withTicket) qs.set("ticket", (await post("/ui/api/tail-ticket", { query })).ticket);
  return `${proto}//${location.host}/loki/api/v1/tail?${qs}`;
}
