// Log lines: one row each (level stripe, time, line); a row opens to its
// parsed fields (JSON or logfmt), stream labels and structured metadata,
// with "copy line" and "show context".

import { formatNs } from "./time.js";
import { levelClass } from "./chart.js";

/** Fields of a JSON object line (nested keys joined with `_`), or null. */
export function parseJson(line) {
  const s = line.trim();
  if (!s.startsWith("{")) return null;
  let v;
  try { v = JSON.parse(s); } catch { return null; }
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const out = [];
  const walk = (o, prefix) => {
    for (const [k, x] of Object.entries(o)) {
      const name = prefix ? `${prefix}_${k}` : k;
      if (x && typeof x === "object" && !Array.isArray(x)) walk(x, name);
      else out.push([name, typeof x === "string" ? x : JSON.stringify(x)]);
    }
  };
  walk(v, "");
  return out;
}

/** Fields of a logfmt line (`k=v k2="quoted v"`), or null when it has none. */
export function parseLogfmt(line) {
  const out = [];
  const re = /([^\s=]+)=(?:"((?:[^"\\]|\\.)*)"|(\S*))/g;
  let m;
  while ((m = re.exec(line))) {
    out.push([m[1], m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : m[3]]);
  }
  return out.length ? out : null;
}

/**
 * The level of an entry: its `detected_level`, else its `level` (a stream
 * label or structured metadata, not a parsed label), else a `severity`
 * stream label. Read from the answer's labels as they are, without
 * splitting them by kind (`labels` would), as this runs for every row.
 */
export function levelOf(entry) {
  const all = entry.all, p = entry.parsed, m = entry.meta;
  for (const k of ["detected_level", "level"]) {
    if (all[k] && !(p && k in p)) return all[k];
  }
  return all.severity && !(p && "severity" in p) && !(m && "severity" in m) ? all.severity : "";
}

function td(text) { const c = document.createElement("td"); c.textContent = text; return c; }

function fieldTable(title, pairs) {
  if (!pairs || !pairs.length) return null;
  const t = document.createElement("table");
  const cap = document.createElement("tr");
  const h = td(title); h.colSpan = 2; h.className = "kind"; cap.appendChild(h);
  t.appendChild(cap);
  for (const [k, v] of pairs) {
    const tr = document.createElement("tr");
    tr.className = "field";
    tr.append(td(k), td(v));
    t.appendChild(tr);
  }
  return t;
}

function esc(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

/** Escapes element text: only `&` and `<` matter there, and most lines have neither. */
function escText(s) {
  return s.indexOf("&") < 0 && s.indexOf("<") < 0 ? s : s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
}

let nextId = 0;

/** Rows inserted per task once the first screenful is shown. */
export const CHUNK = 200;

/** The entries shown in `container`, by row id. */
function shown(container) {
  if (!container.rkEntries) container.rkEntries = new Map();
  return container.rkEntries;
}

/** Rows of `container` not inserted yet, and who waits for them. */
function pending(container) {
  if (!container.rkPending) container.rkPending = { entries: [], timer: 0, waiters: [] };
  return container.rkPending;
}

/**
 * Inserts rows for `entries` (see `Entry`) at the
 * end of `container`, or (`prepend`) its start: one HTML string for all of
 * them, the fastest way to insert many rows. The first row of an empty
 * container carries `elementtiming`, so the browser reports when its text
 * was painted (the budget measurement reads it).
 */
function insert(container, entries, prepend) {
  if (!entries.length) return;
  const map = shown(container);
  const mark = container.firstElementChild ? "" : ' elementtiming="lines"';
  let html = "";
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    const id = nextId++;
    map.set(id, e);
    html += `<div class="row" data-id="${id}" data-ts="${esc(e.ts)}"><div class="head">` +
      `<span class="lvl ${levelClass(levelOf(e))}"></span><span class="ts">${formatNs(e.ts)}</span>` +
      `<span class="msg"${i === 0 ? mark : ""}>${escText(e.line)}</span></div></div>`;
  }
  container.insertAdjacentHTML(prepend ? "afterbegin" : "beforeend", html);
}

/**
 * Adds rows for `entries` to `container`: at its start (`prepend`, at
 * once), or at its end after any rows still pending. Of the appended ones
 * the first `now` are inserted at once and the rest CHUNK at a time in
 * later tasks, so a page of a thousand lines shows its first screenful in
 * the next frame instead of after laying out all of them. Resolves once
 * every row is in (or the rows were cleared).
 */
export function addRows(container, entries, { prepend = false, now = Infinity } = {}) {
  const q = pending(container);
  if (prepend) {
    flushRows(container);
    insert(container, entries, true);
    return Promise.resolve();
  }
  if (q.entries.length) q.entries.push(...entries);
  else {
    insert(container, entries.length > now ? entries.slice(0, now) : entries, false);
    if (entries.length > now) q.entries = entries.slice(now);
  }
  if (!q.entries.length) return Promise.resolve();
  if (!q.timer) afterFrame(container);
  return new Promise((r) => q.waiters.push(r));
}

/**
 * Inserts the next chunk after the next frame has been drawn (in a task
 * queued from its animation frame), so the rows already inserted are
 * painted first and each chunk gets a frame of its own. A hidden tab draws
 * no frames: there it goes on at once.
 */
function afterFrame(container) {
  const q = pending(container);
  const go = () => { q.timer = setTimeout(() => step(container), 0); };
  if (document.hidden) go();
  else q.timer = -requestAnimationFrame(go);
}

function step(container) {
  const q = pending(container);
  q.timer = 0;
  insert(container, q.entries.splice(0, CHUNK), false);
  if (q.entries.length) afterFrame(container);
  else settle(q);
}

function settle(q) {
  // A negative timer is an animation frame's id, a positive one a timeout's.
  if (q.timer < 0) cancelAnimationFrame(-q.timer);
  else clearTimeout(q.timer);
  q.timer = 0;
  q.entries = [];
  const w = q.waiters;
  q.waiters = [];
  for (const r of w) r();
}

/** Inserts every pending row of `container` now (before paging on, or moving the focus past them). */
export function flushRows(container) {
  const q = pending(container);
  if (!q.entries.length) return;
  insert(container, q.entries, false);
  settle(q);
}

/** How many rows of `container` are still to be inserted. */
export function pendingRows(container) {
  return pending(container).entries.length;
}

/** Removes every row of `container` (and drops those pending). */
export function clearRows(container) {
  settle(pending(container));
  container.innerHTML = "";
  shown(container).clear();
}

/** Removes `row` from its container. */
export function removeRow(container, row) {
  shown(container).delete(Number(row.dataset.id));
  row.remove();
}

/** The entry a row of `container` shows. */
export function entryOf(container, row) {
  return shown(container).get(Number(row.dataset.id));
}

/** Opens and closes rows on a click on their head (one listener for all rows). */
export function openOnClick(container, actions) {
  container.addEventListener("click", (ev) => {
    const head = ev.target.closest(".head");
    if (!head || head.parentElement.parentElement !== container) return;
    const row = head.parentElement;
    const entry = entryOf(container, row);
    if (entry) toggle(row, entry, actions);
  });
}

/** Opens or closes the details of `row`. */
export function toggle(row, entry, actions) {
  const open = row.querySelector(".details");
  if (open) { open.remove(); row.classList.remove("open"); return; }
  const d = document.createElement("div");
  d.className = "details";
  const parsed = parseJson(entry.line);
  const fields = parsed ? ["Fields (JSON)", parsed] : ["Fields (logfmt)", parseLogfmt(entry.line)];
  for (const t of [fieldTable(fields[0], fields[1]),
    fieldTable("Stream labels", Object.entries(entry.labels)),
    fieldTable("Structured metadata", Object.entries(entry.meta || {})),
    fieldTable("Parsed labels", Object.entries(entry.parsed || {}))]) {
    if (t) d.appendChild(t);
  }
  const buttons = document.createElement("div");
  buttons.className = "buttons";
  const copy = document.createElement("button");
  copy.type = "button"; copy.textContent = "Copy line (c)"; copy.className = "copy";
  copy.addEventListener("click", () => actions.copy(entry, copy));
  const ctx = document.createElement("button");
  ctx.type = "button"; ctx.textContent = "Show context (x)"; ctx.className = "context";
  ctx.addEventListener("click", () => actions.context(entry));
  buttons.append(copy, ctx);
  d.appendChild(buttons);
  row.appendChild(d);
  row.classList.add("open");
}

/**
 * Entries of a Loki `streams` answer, with each entry's stream key. With the
 * `categorize-labels` encoding an answer's `stream` holds the entry's
 * structured metadata and parsed labels too, which its third element names:
 * `labels` keeps only the stream's own labels (what selects the stream).
 */
export function entriesOf(result) {
  const out = [];
  for (const s of result) {
    const all = s.stream || {};
    for (const v of s.values || []) out.push(new Entry(all, v[0], v[1], v[2]));
  }
  return out;
}

/**
 * One entry: `ts` (ns string), `line`, `all` (the answer's labels of it),
 * `meta` and `parsed` (its structured metadata and parsed labels, or null)
 * and, worked out on first use (a row shows none of them until opened),
 * `labels` (the stream's own labels) and `key` (its stream and content).
 */
class Entry {
  constructor(all, ts, line, cat) {
    this.all = all; this.ts = ts; this.line = line;
    this.meta = (cat && cat.structuredMetadata) || null;
    this.parsed = (cat && cat.parsed) || null;
    this._labels = null;
  }

  get labels() {
    if (!this._labels) {
      const { meta, parsed } = this;
      const labels = {};
      for (const [k, x] of Object.entries(this.all)) {
        if (!(meta && k in meta) && !(parsed && k in parsed)) labels[k] = x;
      }
      this._labels = labels;
    }
    return this._labels;
  }

  get key() { return `${JSON.stringify(this.all)}\u0000${this.ts}\u0000${this.line}`; }
}

/** Whether nanosecond string `a` is a later time than `b` (no BigInt: digit strings compare by length, then text). */
export function laterNs(a, b) {
  return a.length !== b.length ? a.length > b.length : a > b;
}

/** Sorts entries newest first. */
export function newestFirst(entries) {
  return entries.sort((x, y) => (x.ts === y.ts ? 0 : laterNs(x.ts, y.ts) ? -1 : 1));
}
