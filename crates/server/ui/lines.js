// Log lines: one row each (level stripe, time, line); a row opens to its
// parsed fields (JSON or logfmt), stream labels and structured metadata,
// with "copy line" and "show context".

import { formatNs } from "./time.js";
import { levelColor } from "./chart.js";

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

/** The level of an entry: a `level`/`detected_level` label, else one found in its fields. */
export function levelOf(entry) {
  const l = entry.labels;
  const m = entry.meta || {};
  return l.detected_level || m.detected_level || l.level || m.level || l.severity || "";
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

/** The entries shown in `container`, by row id. */
function shown(container) {
  if (!container.rkEntries) container.rkEntries = new Map();
  return container.rkEntries;
}

/**
 * Adds rows for `entries` ({labels, meta, ts (ns string), line}) to
 * `container`, at its end or (`prepend`) its start: one HTML string for all
 * of them, the fastest way to show a thousand lines.
 */
export function addRows(container, entries, prepend = false) {
  const map = shown(container);
  const html = entries.map((e) => {
    const id = nextId++;
    map.set(id, e);
    return `<div class="row" tabindex="-1" data-id="${id}" data-ts="${esc(e.ts)}"><div class="head">` +
      `<span class="lvl" style="background:${levelColor(levelOf(e))}"></span>` +
      `<span class="ts">${formatNs(e.ts)}</span><span class="msg">${escText(e.line)}</span></div></div>`;
  }).join("");
  container.insertAdjacentHTML(prepend ? "afterbegin" : "beforeend", html);
}

/** Removes every row of `container`. */
export function clearRows(container) {
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
    const key = JSON.stringify(all);
    for (const v of s.values || []) {
      const cat = v[2] || {};
      const meta = cat.structuredMetadata || null;
      const parsed = cat.parsed || null;
      const labels = {};
      for (const [k, x] of Object.entries(all)) {
        if (!(meta && k in meta) && !(parsed && k in parsed)) labels[k] = x;
      }
      out.push({ key, labels, ts: v[0], line: v[1], meta, parsed });
    }
  }
  return out;
}

/** Whether nanosecond string `a` is a later time than `b` (no BigInt: digit strings compare by length, then text). */
export function laterNs(a, b) {
  return a.length !== b.length ? a.length > b.length : a > b;
}

/** Sorts entries newest first. */
export function newestFirst(entries) {
  return entries.sort((x, y) => (x.ts === y.ts ? 0 : laterNs(x.ts, y.ts) ? -1 : 1));
}
