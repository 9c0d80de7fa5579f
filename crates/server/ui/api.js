// Calls to the Loki API: every request carries the chosen tenant in
// X-Scope-OrgID and an AbortSignal; errors come back as ApiError with the
// server's own message (and, for LogQL syntax errors, its position).

let tenant = "";

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
  const h = { Accept: "application/json", ...(extra || {}) };
  if (tenant) h["X-Scope-OrgID"] = tenant;
  return h;
}

/** GET `path` with `params` (and `extra` headers); resolves to the parsed JSON, rejects with ApiError. */
export async function get(path, params, signal, extra) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") qs.set(k, String(v));
  }
  let resp;
  try {
    resp = await fetch(`${path}?${qs}`, { headers: headers(extra), signal });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, `network error: ${e.message}`);
  }
  const text = await resp.text();
  if (!resp.ok) throw new ApiError(resp.status, text.trim() || resp.statusText);
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

/** The WebSocket URL of the live tail for `query` from `startNs`. */
export function tailUrl(query, startNs, limit) {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const qs = new URLSearchParams({ query, start: String(startNs), limit: String(limit) });
  // Browsers cannot set headers on a WebSocket: the server takes the
  // tenant from this parameter on the tail route only, and checks it as
  // it checks the header.
  if (tenant) qs.set("orgId", tenant);
  return `${proto}//${location.host}/loki/api/v1/tail?${qs}`;
}
