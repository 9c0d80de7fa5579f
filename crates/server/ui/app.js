// The page: wires the editor, time range, tabs, log lines with infinite
// scroll, histogram, metric chart and table, live tail, patterns and the
// tenant picker to the Loki API; with --auth-file, the login form.

import { get, ApiError, setTenant, getTenant, selectorOf, isMetric, tailUrl, getAuth, whenUnauthorized } from "./api.js";
import { initLogin, showLogin } from "./login.js";
import { rangeOf, absolute, stepFor, parseTime } from "./time.js";
import { Editor } from "./editor.js";
import { histogram, lineChart, levelColor } from "./chart.js";
import { addRows, clearRows, flushRows, pendingRows, removeRow, entryOf, openOnClick, toggle, entriesOf, newestFirst } from "./lines.js";

const $ = (id) => document.getElementById(id);
const CATEGORIZE = { "X-Loki-Response-Encoding-Flags": "categorize-labels" };

const state = {
  controller: null, range: null, query: "", entries: [], seen: new Set(), oldest: null,
  done: true, loading: false, limit: 1000, focus: -1, ws: null, paused: false, buffer: [],
  tailCount: 0, tailDropped: 0, auth: false,
};
/** Timings of the last query, read by the browser test and the budget measurement. */
window.__rk = { runs: 0, timing: null, ready: false };

// ---- errors and status -------------------------------------------------

function showError(e) {
  const box = $("error");
  if (!e) { box.hidden = true; box.textContent = ""; delete box.dataset.line; delete box.dataset.col; return; }
  const api = e instanceof ApiError;
  let text = api ? e.message : String(e.message || e);
  if (api && e.status) text = `${e.status}: ${text}`;
  box.textContent = text;
  box.hidden = false;
  if (api && e.line > 0) {
    box.dataset.line = e.line; box.dataset.col = e.col;
    editor.showError(e.line, e.col);
  }
}

function status(text) { $("status").textContent = text; }

// ---- completion --------------------------------------------------------

const cache = new Map();
async function cached(path, params) {
  const key = `${getTenant()}|${path}|${JSON.stringify(params)}`;
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < 30000) return hit.value;
  const value = await get(path, params);
  cache.set(key, { at: Date.now(), value });
  return value;
}

function rangeParams() {
  try {
    const [s, e] = rangeOf($("from").value, $("to").value);
    return { start: String(s), end: String(e) };
  } catch { return {}; }
}

async function complete(ctx, { STAGES, FUNCTIONS }) {
  const r = rangeParams();
  const sel = selectorOf(editor.value);
  switch (ctx.kind) {
    case "label": {
      const v = await cached("/loki/api/v1/labels", r);
      return (v.data || []).map((t) => ({ text: t, hint: "label" }));
    }
    case "value": {
      const v = await cached(`/loki/api/v1/label/${encodeURIComponent(ctx.label)}/values`, r);
      return (v.data || []).map((t) => ({ text: t, hint: ctx.label }));
    }
    case "stage": {
      let fields = [];
      if (sel) {
        try {
          const v = await cached("/loki/api/v1/detected_fields", { ...r, query: sel });
          fields = (v.fields || []).map((f) => ({ text: f.label, hint: `field ${f.type || ""}`.trim() }));
        } catch { fields = []; }
      }
      return [...fields, ...STAGES.map((t) => ({ text: t, hint: "stage" }))];
    }
    case "fieldvalue": {
      if (!sel) return [];
      const v = await cached(`/loki/api/v1/detected_field/${encodeURIComponent(ctx.label)}/values`, { ...r, query: sel });
      return (v.values || []).map((t) => ({ text: String(t), hint: ctx.label }));
    }
    case "function":
      return FUNCTIONS.map((t) => ({ text: t, hint: "function" }));
    default:
      return [];
  }
}

const editor = new Editor($("editor"), $("editor-shadow"), $("completion"), complete, () => run());

// ---- tabs --------------------------------------------------------------

function showTab(name) {
  for (const b of document.querySelectorAll("[role=tab]")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
  for (const s of document.querySelectorAll(".tab")) s.hidden = s.id !== `tab-${name}`;
  if (name === "patterns" && state.query) loadPatterns();
}
function currentTab() { return document.querySelector("[role=tab][aria-selected=true]").dataset.tab; }
for (const b of document.querySelectorAll("[role=tab]")) b.addEventListener("click", () => showTab(b.dataset.tab));

// ---- running a query ---------------------------------------------------

function saveHash() {
  const h = new URLSearchParams({ query: editor.value, from: $("from").value, to: $("to").value });
  if (getTenant()) h.set("tenant", getTenant());
  history.replaceState(null, "", `#${h}`);
}

function busy(on) {
  $("cancel").hidden = !on;
  $("run").disabled = on;
}

/** Runs the editor's query over the picked range. */
async function run() {
  const query = editor.value.trim();
  showError(null);
  if (!query) { showError(new Error("Type a LogQL query, e.g. {service_name=\"app\"}")); return; }
  let range;
  try { range = rangeOf($("from").value, $("to").value); } catch (e) { showError(e); return; }
  state.controller?.abort();
  const controller = new AbortController();
  state.controller = controller;
  state.query = query; state.range = range;
  state.limit = Math.max(1, Math.min(5000, Number($("limit").value) || 1000));
  saveHash();
  busy(true);
  status("running…");
  const t0 = performance.now();
  try {
    if (isMetric(query)) await runMetric(query, range, controller.signal, t0);
    else await runLogs(query, range, controller.signal, t0);
  } catch (e) {
    if (e.name === "AbortError") status("cancelled");
    else { showError(e); status("error"); }
  } finally {
    if (state.controller === controller) { busy(false); state.controller = null; }
    window.__rk.runs++;
  }
}

function cancel() {
  if (!state.controller) return;
  state.controller.abort();
  // Once the answer is in there is nothing left to stop: its rows still
  // being appended are shown at once rather than left half-way.
  if (pendingRows($("lines"))) flushRows($("lines"));
  else status("cancelled");
}

/**
 * Resolves once the DOM changes made so far have been painted: in a task
 * queued from the next animation frame, which runs after that frame's
 * style, layout and paint. At once in a hidden tab (it paints no frames).
 */
function painted() {
  if (document.hidden) return Promise.resolve();
  return new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
}

/**
 * How many of `entries` (newest first) to draw in the first frame: enough
 * to fill the whole window's height, at most 50. A row is 19 px per text
 * line, its line wrapped as if characters were 6.5 px wide (they are about
 * 7.2) in a column wider than the real one, so the estimate errs towards
 * more rows. The rest are appended after that frame (`addRows`).
 */
function firstRows(entries) {
  const perLine = Math.max(40, Math.floor((window.innerWidth - 220) / 6.5));
  let px = 0;
  for (let i = 0; i < entries.length && i < 50; i++) {
    px += 19 * Math.max(1, Math.ceil(entries[i].line.length / perLine));
    if (px >= window.innerHeight) return i + 1;
  }
  return 50;
}

async function runLogs(query, [start, end], signal, t0) {
  if (currentTab() === "metric" || currentTab() === "table") showTab("logs");
  const sel = selectorOf(query);
  const step = stepFor(start, end, 60);
  const lines = get("/loki/api/v1/query_range", {
    query, start: String(start), end: String(end), limit: state.limit, direction: "backward",
  }, signal, CATEGORIZE);
  // Lines per level and bucket of the whole query (filters included), as
  // Grafana's logs volume asks it: /index/volume_range answers bytes per
  // stream, and detected_level is not a stream label, so it cannot split by level.
  const volume = sel ? get("/loki/api/v1/query_range", {
    query: `sum by (detected_level) (count_over_time(${query} [${step}s]))`,
    start: String(start), end: String(end), step: `${step}s`,
  }, signal).catch((e) => { if (e.name === "AbortError") throw e; return { error: e }; }) : Promise.resolve(null);
  const [answer, vol] = await Promise.all([lines, volume]);
  const tAnswer = performance.now();
  // Asked for before the rows ask for theirs, so it resolves right after
  // the first frame, before the next batch of rows is inserted.
  const firstFrame = painted();
  drawVolume(vol, start, end, step);
  state.entries = []; state.seen = new Set(); state.oldest = null; state.focus = -1;
  clearRows($("lines"));
  const [got, rest, first] = addEntries(answer.data.result, true);
  state.done = got < state.limit;
  const stats = answer.data.stats?.summary;
  status(`${state.entries.length} lines${state.done ? "" : " (scroll for more)"}`);
  updateMore();
  const tBuilt = performance.now();
  // The histogram and the first screenful of lines, painted.
  await firstFrame;
  const tShown = performance.now();
  const rowsAtShown = $("lines").children.length;
  // Whether those rows reached the window's bottom (layout is clean here: cheap to read).
  const filled = !rowsAtShown || $("lines").lastElementChild.getBoundingClientRect().bottom >= window.innerHeight;
  status(`${state.entries.length} lines${state.done ? "" : " (scroll for more)"} · ${Math.round(tShown - t0)} ms`);
  // The other rows, appended a chunk per task; then painted too.
  await rest;
  if (signal.aborted) return;
  await painted();
  const tAll = performance.now();
  window.__rk.timing = { kind: "logs", lines: state.entries.length, firstRows: Math.min(first, state.entries.length),
    queryMs: tAnswer - t0, shownMs: tShown - t0, renderMs: tShown - tAnswer, buildMs: tBuilt - tAnswer,
    allRowsMs: tAll - tAnswer, answeredAt: tAnswer, shownAt: tShown, rowsAtShown, filled,
    serverMs: stats ? stats.execTime * 1000 : null };
}

function drawVolume(vol, start, end, step) {
  const box = $("histogram");
  if (!vol) { box.innerHTML = ""; return; }
  if (vol.error) { box.textContent = `volume: ${vol.error.message}`; return; }
  const startMs = Number(start / 1000000n), endMs = Number(end / 1000000n), stepMs = step * 1000;
  const byLevel = new Map();
  const result = vol.data?.result || [];
  for (const s of result) {
    const name = s.metric?.detected_level || s.metric?.level || "unknown";
    const pts = byLevel.get(name) || new Map();
    const values = s.values || (s.value ? [s.value] : []);
    for (const [sec, v] of values) {
      // A point at t counts the lines of (t - step, t]: its bucket starts at t - step.
      const b = Math.round(Number(sec) * 1000) - stepMs;
      if (b + stepMs <= startMs) continue;
      pts.set(b, (pts.get(b) || 0) + Number(v));
    }
    byLevel.set(name, pts);
  }
  // Plain comparison: the first localeCompare of a page builds a collator (10-20 ms).
  const series = [...byLevel.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([name, points]) => ({ name, points, color: levelColor(name) }));
  histogram(box, series, startMs, endMs, stepMs, zoom, "lines");
}

function zoom(fromMs, toMs) {
  $("from").value = absolute(fromMs);
  $("to").value = absolute(toMs);
  run();
}

/**
 * Adds new entries (skipping those already shown), all at once or
 * (`chunked`) a screenful at once and the rest after it; returns how many
 * the answer held, a promise of all rows being in, and how many went in at once.
 */
function addEntries(result, chunked = false) {
  const all = newestFirst(entriesOf(result));
  // A page ends at the oldest time seen, inclusive: only entries at that
  // time can have been shown already (state.seen holds their keys).
  const edge = state.oldest === null ? null : String(state.oldest);
  const fresh = edge === null ? all : all.filter((e) => e.ts !== edge || !state.seen.has(e.key));
  for (const e of fresh) state.entries.push(e);
  // Sorted newest first: the last is the oldest.
  if (fresh.length) {
    const oldest = fresh[fresh.length - 1].ts;
    if (oldest !== edge) state.seen = new Set();
    for (let i = fresh.length - 1; i >= 0 && fresh[i].ts === oldest; i--) state.seen.add(fresh[i].key);
    state.oldest = BigInt(oldest);
  }
  const now = chunked ? firstRows(fresh) : fresh.length;
  return [all.length, addRows($("lines"), fresh, { now }), now];
}

/** Loki pagination: the next page ends at the oldest time seen (inclusive), duplicates dropped. */
async function loadMore() {
  if (state.done || state.loading || !state.range || state.oldest === null) return;
  state.loading = true;
  // Rows of the last page still waiting come first.
  flushRows($("lines"));
  updateMore();
  const before = state.entries.length;
  try {
    const answer = await get("/loki/api/v1/query_range", {
      query: state.query, start: String(state.range[0]), end: String(state.oldest + 1n),
      limit: state.limit, direction: "backward",
    }, undefined, CATEGORIZE);
    const [got] = addEntries(answer.data.result, true);
    state.done = got < state.limit || state.entries.length === before;
    status(`${state.entries.length} lines${state.done ? "" : " (scroll for more)"}`);
  } catch (e) {
    showError(e);
    state.done = true;
  } finally {
    state.loading = false;
    updateMore();
  }
}

function updateMore() {
  $("more").textContent = state.loading ? "loading…" : state.done ? (state.entries.length ? "end of results" : "no lines") : "scroll for more";
}
new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting)) loadMore(); }).observe($("more"));

async function runMetric(query, [start, end], signal, t0) {
  const step = stepFor(start, end, 200);
  const answer = await get("/loki/api/v1/query_range", { query, start: String(start), end: String(end), step: `${step}s` }, signal);
  const tAnswer = performance.now();
  const data = answer.data;
  if (data.resultType === "streams") {
    // A log query that does not start with a selector.
    if (currentTab() !== "logs") showTab("logs");
    $("histogram").innerHTML = ""; clearRows($("lines"));
    state.entries = []; state.seen = new Set(); state.oldest = null; state.done = true;
    addEntries(data.result, true); updateMore();
    return;
  }
  const rows = data.resultType === "vector" ? data.result.map((s) => ({ metric: s.metric, values: [s.value] })) : data.result;
  const series = rows.map((s) => ({
    name: labelText(s.metric),
    points: s.values.map(([t, v]) => [Number(t) * 1000, parseFloat(v)]),
  }));
  if (currentTab() !== "table") showTab("metric");
  lineChart($("chart"), series, Number(start / 1000000n), Number(end / 1000000n));
  drawTable(series);
  const tShown = performance.now();
  window.__rk.timing = { kind: "metric", series: series.length, queryMs: tAnswer - t0, shownMs: tShown - t0 };
  status(`${series.length} series · ${Math.round(tShown - t0)} ms`);
}

function labelText(m) {
  const e = Object.entries(m || {});
  return e.length ? `{${e.map(([k, v]) => `${k}="${v}"`).join(", ")}}` : "{}";
}

function drawTable(series) {
  const t = document.createElement("table");
  t.className = "data";
  t.innerHTML = "<tr><th>series</th><th>time</th><th>value</th></tr>";
  for (const s of series) {
    const last = s.points[s.points.length - 1];
    const tr = document.createElement("tr");
    for (const v of [s.name, last ? new Date(last[0]).toISOString() : "", last ? String(last[1]) : ""]) {
      const c = document.createElement("td"); c.textContent = v; tr.appendChild(c);
    }
    t.appendChild(tr);
  }
  $("table").replaceChildren(t);
}

// ---- line actions: copy, context -----------------------------------------

const actions = {
  async copy(entry, button) {
    try {
      await navigator.clipboard.writeText(entry.line);
      button.textContent = "Copied";
    } catch {
      // No clipboard permission (plain http on another host): select the text instead.
      const r = document.createRange();
      r.selectNodeContents(button.closest(".row").querySelector(".msg"));
      getSelection().removeAllRanges(); getSelection().addRange(r);
      button.textContent = "Selected (Ctrl+C)";
    }
  },
  async context(entry) {
    const sel = `{${Object.entries(entry.labels).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`).join(", ")}}`;
    const ts = BigInt(entry.ts);
    const hour = 3600n * 1000000000n;
    const box = $("context-lines");
    box.textContent = "loading…";
    $("context").showModal();
    try {
      const [older, newer] = await Promise.all([
        get("/loki/api/v1/query_range", { query: sel, start: String(ts - hour), end: String(ts + 1n), limit: 11, direction: "backward" }, undefined, CATEGORIZE),
        get("/loki/api/v1/query_range", { query: sel, start: String(ts + 1n), end: String(ts + hour), limit: 10, direction: "forward" }, undefined, CATEGORIZE),
      ]);
      const all = newestFirst([...entriesOf(newer.data.result), ...entriesOf(older.data.result)]);
      clearRows(box);
      addRows(box, all);
      for (const r of box.children) {
        const e = entryOf(box, r);
        if (e.ts === entry.ts && e.line === entry.line) r.classList.add("anchor");
      }
    } catch (e) {
      box.textContent = e.message;
    }
  },
};
$("context-close").addEventListener("click", () => $("context").close());
for (const id of ["lines", "context-lines", "tail-lines"]) openOnClick($(id), actions);

// ---- live tail -----------------------------------------------------------

async function tailStart() {
  tailStop();
  const query = editor.value.trim();
  if (!query) return;
  showError(null);
  state.tailCount = 0; state.tailDropped = 0; state.buffer = []; state.paused = false;
  clearRows($("tail-lines"));
  const startNs = BigInt(Date.now()) * 1000000n;
  $("tail-state").textContent = "connecting…";
  const opening = state.tailOpening = {};
  let url;
  try {
    // With authentication on, a ticket stands in for the credentials a
    // WebSocket cannot carry.
    url = await tailUrl(query, startNs, 100, state.auth);
  } catch (e) {
    if (state.tailOpening === opening) { showError(e); $("tail-state").textContent = "stopped"; }
    return;
  }
  if (state.tailOpening !== opening) return;
  const ws = new WebSocket(url);
  state.ws = ws;
  ws.onopen = () => { $("tail-state").textContent = "live"; };
  ws.onmessage = (m) => {
    let msg;
    try { msg = JSON.parse(m.data); } catch { return; }
    state.tailDropped += (msg.dropped_entries || []).length;
    const entries = newestFirst(entriesOf(msg.streams || []));
    state.tailCount += entries.length;
    if (state.paused) state.buffer.push(...entries);
    else showTailed(entries);
    $("tail-count").textContent = state.tailCount;
    $("tail-dropped").textContent = state.tailDropped;
  };
  ws.onclose = (e) => {
    if (state.ws === ws) {
      $("tail-state").textContent = e.reason ? `closed: ${e.reason}` : "stopped";
      if (e.code !== 1000 && e.reason) showError(new ApiError(e.code, e.reason));
      tailButtons(false);
      state.ws = null;
    }
  };
  tailButtons(true);
}

function showTailed(entries) {
  const box = $("tail-lines");
  addRows(box, entries, { prepend: true });
  while (box.children.length > 2000) removeRow(box, box.lastChild);
}

function tailPause() {
  state.paused = !state.paused;
  $("tail-pause").textContent = state.paused ? "Resume" : "Pause";
  $("tail-state").textContent = state.paused ? "paused (buffering)" : "live";
  if (!state.paused) { showTailed(newestFirst(state.buffer)); state.buffer = []; }
}

function tailStop() {
  state.tailOpening = null;
  if (state.ws) { const ws = state.ws; state.ws = null; ws.close(1000); $("tail-state").textContent = "stopped"; }
  tailButtons(false);
}

function tailButtons(on) {
  $("tail-pause").disabled = !on; $("tail-stop").disabled = !on;
  $("tail-pause").textContent = "Pause";
}
$("tail-start").addEventListener("click", tailStart);
$("tail-pause").addEventListener("click", tailPause);
$("tail-stop").addEventListener("click", tailStop);

// ---- patterns ------------------------------------------------------------

async function loadPatterns() {
  const box = $("patterns");
  const sel = selectorOf(state.query || editor.value);
  if (!sel) { box.textContent = "Patterns need a log query with a stream selector."; return; }
  let range;
  try { range = rangeOf($("from").value, $("to").value); } catch (e) { showError(e); return; }
  box.textContent = "loading…";
  try {
    const v = await get("/loki/api/v1/patterns", { query: sel, start: String(range[0]), end: String(range[1]) });
    const rows = (v.data || []).map((p) => ({ ...p, total: (p.samples || []).reduce((s, x) => s + Number(x[1]), 0) }))
      .sort((a, b) => b.total - a.total);
    if (!rows.length) { box.textContent = "No patterns in this range."; return; }
    box.replaceChildren(...rows.map((p) => {
      const d = document.createElement("div");
      d.className = "pattern";
      const n = document.createElement("b"); n.textContent = p.total;
      const l = document.createElement("span"); l.textContent = p.level || ""; l.style.color = levelColor(p.level);
      const t = document.createElement("span"); t.textContent = p.pattern;
      d.append(n, l, t);
      return d;
    }));
  } catch (e) {
    box.textContent = e.message;
  }
}

// ---- tenant, theme, keyboard ---------------------------------------------

async function initTenant(hashTenant) {
  let session;
  // A 401 (only with --auth-file) has opened the login form.
  try { session = await get("/ui/api/session", {}); } catch (e) { session = { multi_tenant: false, auth: e.status === 401 }; }
  state.auth = Boolean(session.auth);
  if (!session.multi_tenant) return;
  $("tenant-box").hidden = false;
  const list = session.tenants || [];
  $("tenant-list").replaceChildren(...list.map((t) => { const o = document.createElement("option"); o.value = t; return o; }));
  const saved = hashTenant || localStorage.getItem("rk.tenant") || "";
  const pick = list.length ? (list.includes(saved) ? saved : list[0]) : saved;
  $("tenant").value = pick;
  setTenant(pick);
}
$("tenant").addEventListener("change", () => {
  setTenant($("tenant").value);
  localStorage.setItem("rk.tenant", getTenant());
  cache.clear();
  state.entries = []; clearRows($("lines")); $("histogram").innerHTML = "";
  tailStop();
  if (editor.value.trim()) run();
});

$("theme").addEventListener("click", toggleTheme);
function toggleTheme() {
  const t = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = t;
  localStorage.setItem("rk.theme", t);
}

$("run").addEventListener("click", () => run());
$("cancel").addEventListener("click", cancel);
$("quick").addEventListener("change", () => {
  if ($("quick").value) { $("from").value = $("quick").value; $("to").value = "now"; $("quick").value = ""; run(); }
});
for (const id of ["from", "to"]) $(id).addEventListener("keydown", (e) => { if (e.key === "Enter") run(); });

function focusRow(i) {
  const box = $("lines");
  if (i >= box.children.length) flushRows(box);
  const rows = box.children;
  if (!rows.length) return;
  box.children[state.focus]?.classList.remove("focus");
  state.focus = Math.max(0, Math.min(rows.length - 1, i));
  const row = rows[state.focus];
  row.classList.add("focus");
  row.tabIndex = -1;
  row.focus();
  row.scrollIntoView({ block: "nearest" });
}

document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && state.controller) { cancel(); return; }
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName);
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  const tabs = { 1: "logs", 2: "metric", 3: "table", 4: "live", 5: "patterns" };
  if (tabs[e.key]) { showTab(tabs[e.key]); return; }
  const row = $("lines").children[state.focus];
  const entry = row && entryOf($("lines"), row);
  switch (e.key) {
    case "/": e.preventDefault(); $("editor").focus(); break;
    case "t": toggleTheme(); break;
    case "j": focusRow(state.focus + 1); break;
    case "k": focusRow(state.focus - 1); break;
    case "Enter": case "o": if (entry) toggle(row, entry, actions); break;
    case "c": if (entry) actions.copy(entry, row.querySelector(".copy") || $("run")); break;
    case "x": if (entry) actions.context(entry); break;
    default: return;
  }
});

// ---- start -----------------------------------------------------------------

/** Applies the address's `#query=…&from=…&to=…&tenant=…` and runs the query it names. */
async function fromHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.get("from")) $("from").value = h.get("from");
  if (h.get("to")) $("to").value = h.get("to");
  const t = h.get("tenant");
  if (t !== null && !$("tenant-box").hidden && t !== getTenant()) {
    const allowed = [...$("tenant-list").options].map((o) => o.value);
    if (!allowed.length || allowed.includes(t)) { $("tenant").value = t; setTenant(t); cache.clear(); }
  }
  if (h.get("query")) { editor.value = h.get("query"); await run(); }
}

// A link followed within the page (only the hash changes) applies it too.
window.addEventListener("hashchange", () => fromHash());

// With --auth-file: a call answering 401 opens the login form (saying why
// when credentials were sent); after a login the tenants are asked for
// again and the query runs again.
whenUnauthorized((e) => showLogin(getAuth() ? e.message : ""));
initLogin(async () => {
  cache.clear();
  const h = new URLSearchParams(location.hash.slice(1));
  await initTenant(h.get("tenant"));
  if (h.get("query")) await fromHash();
  else if (editor.value.trim()) await run();
});

(async () => {
  const h = new URLSearchParams(location.hash.slice(1));
  await initTenant(h.get("tenant"));
  window.__rk.ready = true;
  if (h.get("query")) await fromHash();
  else $("editor").focus();
})();

export { run, parseTime };
