// The LogQL editor: a textarea over a "shadow" copy of its text, which
// marks the position of a syntax error and measures where the caret is, and
// a completion list of labels, label values, pipeline stages and parsed
// fields, asked from the API for the current tenant and time range.

const STAGES = ["json", "logfmt", "pattern", "regexp", "unpack", "line_format", "label_format",
  "keep", "drop", "decolorize", "unwrap"];
const FUNCTIONS = ["count_over_time", "rate", "bytes_over_time", "bytes_rate", "sum_over_time",
  "avg_over_time", "max_over_time", "min_over_time", "quantile_over_time", "absent_over_time",
  "sum", "avg", "max", "min", "count", "topk", "bottomk", "sort", "sort_desc"];

/** What to complete at the end of `before` (the text left of the caret). */
export function completionContext(before) {
  const open = before.lastIndexOf("{");
  const close = before.lastIndexOf("}");
  if (open > close) {
    const inner = before.slice(open + 1);
    let m = /([A-Za-z_][\w.]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)$/.exec(inner);
    if (m) return { kind: "value", label: m[1], prefix: m[3] };
    m = /(?:^|,)\s*([A-Za-z_]\w*)?$/.exec(inner);
    if (m) return { kind: "label", prefix: m[1] || "" };
    return null;
  }
  if (close >= 0) {
    let m = /([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)$/.exec(before);
    if (m && before.lastIndexOf("|") > close) return { kind: "fieldvalue", label: m[1], prefix: m[3] };
    m = /(?:\|\s*|\b(?:and|or)\s+|,\s*)([A-Za-z_]\w*)?$/.exec(before.slice(close + 1));
    if (m) return { kind: "stage", prefix: m[1] || "" };
    return null;
  }
  const m = /(?:^|[\s(,])([a-z_]+)$/.exec(before);
  if (m) return { kind: "function", prefix: m[1] };
  return null;
}

/** The character offset of 1-based (line, col) in `text` (col counts characters). */
export function offsetOf(text, line, col) {
  const chars = Array.from(text);
  let l = 1, i = 0;
  while (i < chars.length && l < line) { if (chars[i] === "\n") l++; i++; }
  const idx = Math.min(i + Math.max(col - 1, 0), chars.length);
  return chars.slice(0, idx).join("").length;
}

function escapeHtml(s) {
  return s.replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);
}

/** The editor over `textarea`; `source(ctx)` resolves to completion items. */
export class Editor {
  constructor(textarea, shadow, list, source, onRun) {
    this.ta = textarea; this.shadow = shadow; this.list = list;
    this.source = source; this.onRun = onRun;
    this.items = []; this.selected = 0; this.ctx = null; this.error = null; this.seq = 0;
    this.ta.addEventListener("input", () => { this.clearError(); this.maybeComplete(false); });
    this.ta.addEventListener("keydown", (e) => this.key(e));
    // Close on leaving the editor, a moment later so a click on the list
    // still lands; not if the editor has the focus again by then.
    this.ta.addEventListener("blur", () => setTimeout(() => {
      if (document.activeElement !== this.ta) this.close();
    }, 150));
    this.ta.addEventListener("scroll", () => { this.shadow.scrollTop = this.ta.scrollTop; });
    this.list.addEventListener("mousedown", (e) => {
      const li = e.target.closest("li");
      if (li) { e.preventDefault(); this.accept(Number(li.dataset.i)); }
    });
    this.render();
  }

  get value() { return this.ta.value; }
  set value(v) { this.ta.value = v; this.clearError(); }

  /** Marks the syntax error at (line, col), 1-based, as the API reported it. */
  showError(line, col) {
    this.error = line > 0 ? offsetOf(this.ta.value, line, col) : null;
    this.render();
  }

  clearError() { if (this.error !== null) { this.error = null; } this.render(); }

  render(caretMarker) {
    const t = this.ta.value;
    let html;
    if (caretMarker !== undefined) {
      html = escapeHtml(t.slice(0, caretMarker)) + '<span id="caret-probe">\u200b</span>' + escapeHtml(t.slice(caretMarker));
    } else if (this.error !== null) {
      const at = this.error;
      const ch = t.slice(at, at + 1);
      const mark = ch && ch !== "\n" ? escapeHtml(ch) : " ";
      html = escapeHtml(t.slice(0, at)) + `<mark id="error-mark">${mark}</mark>` + escapeHtml(ch === "\n" ? t.slice(at) : t.slice(at + 1));
    } else {
      html = escapeHtml(t);
    }
    this.shadow.innerHTML = html + "\n";
  }

  key(e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") { e.preventDefault(); this.close(); this.onRun(); return; }
    if (e.ctrlKey && e.key === " ") { e.preventDefault(); this.maybeComplete(true); return; }
    if (this.list.hidden) {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); this.onRun(); }
      return;
    }
    if (e.key === "ArrowDown") { e.preventDefault(); this.select(this.selected + 1); }
    else if (e.key === "ArrowUp") { e.preventDefault(); this.select(this.selected - 1); }
    else if (e.key === "Enter" || e.key === "Tab") { e.preventDefault(); this.accept(this.selected); }
    else if (e.key === "Escape") { e.preventDefault(); this.close(); }
  }

  async maybeComplete(explicit) {
    const pos = this.ta.selectionStart;
    const before = this.ta.value.slice(0, pos);
    const ctx = completionContext(before);
    const last = before.slice(-1);
    // An open list follows the caret while the context lasts (a space after
    // `|` keeps the stages); typing a word or a trigger character opens it.
    const trigger = explicit || /[{,"|]/.test(last) || !this.list.hidden
      || (ctx && ctx.prefix && ctx.prefix.length >= 1 && /\w/.test(last) && ctx.kind !== "function");
    if (!ctx || !trigger) { this.close(); return; }
    const seq = ++this.seq;
    let items;
    try { items = await this.source(ctx, { STAGES, FUNCTIONS }); } catch { items = []; }
    if (seq !== this.seq) return;
    const p = ctx.prefix.toLowerCase();
    this.items = items.filter((it) => it.text.toLowerCase().startsWith(p) && it.text !== ctx.prefix).slice(0, 100);
    this.ctx = ctx;
    if (!this.items.length) { this.close(); return; }
    this.list.innerHTML = this.items.map((it, i) =>
      `<li role="option" data-i="${i}"><span>${escapeHtml(it.text)}</span><small>${escapeHtml(it.hint || "")}</small></li>`).join("");
    this.place(pos);
    this.list.hidden = false;
    this.select(0);
  }

  place(pos) {
    this.render(pos);
    const probe = this.shadow.querySelector("#caret-probe");
    const wrap = this.ta.parentElement.getBoundingClientRect();
    const r = probe.getBoundingClientRect();
    this.list.style.left = `${Math.max(0, r.left - wrap.left)}px`;
    this.list.style.top = `${r.bottom - wrap.top + 2}px`;
    this.render();
  }

  select(i) {
    const n = this.items.length;
    this.selected = ((i % n) + n) % n;
    this.list.querySelectorAll("li").forEach((li, j) => li.setAttribute("aria-selected", String(j === this.selected)));
    this.list.children[this.selected]?.scrollIntoView({ block: "nearest" });
  }

  accept(i) {
    const it = this.items[i];
    if (!it || !this.ctx) return;
    const pos = this.ta.selectionStart;
    const v = this.ta.value;
    // The list may be one keystroke behind the text (its answer was still
    // on its way): replace the word as it is now, not as it was then.
    const now = completionContext(v.slice(0, pos));
    const ctx = now && now.kind === this.ctx.kind ? now : this.ctx;
    this.ctx = ctx;
    const start = pos - ctx.prefix.length;
    let insert = it.text;
    if (ctx.kind === "value" || ctx.kind === "fieldvalue") {
      insert = it.text.replace(/\\/g, "\\\\").replace(/"/g, '\\"');
      if (v[pos] !== '"') insert += '"';
    } else if (ctx.kind === "label" && !/^\s*(=|!=|=~|!~)/.test(v.slice(pos))) {
      insert += '="';
    }
    this.ta.value = v.slice(0, start) + insert + v.slice(pos);
    const caret = start + insert.length;
    this.ta.setSelectionRange(caret, caret);
    this.close();
    this.render();
    this.ta.focus();
    if (this.ctx?.kind === "label" || insert.endsWith('="')) this.maybeComplete(true);
  }

  close() { this.list.hidden = true; this.items = []; }
}
