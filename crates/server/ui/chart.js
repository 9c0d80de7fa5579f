// SVG charts: the log-volume histogram (stacked bars by level, a click on a
// bar zooms to it) and metric time series (a line each, legend, hover values).

const NS = "http://www.w3.org/2000/svg";
const PALETTE = ["#5aa2ff", "#f2b84b", "#6cc785", "#e5707a", "#b48ef0", "#4fc4c4", "#f08f4f", "#9aa5b1"];
const LEVEL_COLORS = { error: "#e5484d", err: "#e5484d", critical: "#b3261e", fatal: "#b3261e",
  warn: "#f2b84b", warning: "#f2b84b", info: "#4caf6a", debug: "#5aa2ff", trace: "#8b95a3", unknown: "#9aa5b1" };

/** The color of a log level (the histogram's bars, the chart of levels). */
export function levelColor(level) {
  return LEVEL_COLORS[(level || "unknown").toLowerCase()] || "#9aa5b1";
}

// One class per level for the stripe of each line: a class is cheaper to
// give a thousand rows than an inline style each.
const levelSheet = document.createElement("style");
levelSheet.textContent = Object.entries(LEVEL_COLORS).map(([k, c]) => `.lv-${k}{background:${c}}`).join("");
document.head.appendChild(levelSheet);

/** The class giving a line's level stripe its color. */
export function levelClass(level) {
  const k = (level || "unknown").toLowerCase();
  return k in LEVEL_COLORS ? `lv-${k}` : "lv-unknown";
}

/** Escapes text for HTML or SVG markup. */
function esc(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function fmtTime(ms, spanMs) {
  const d = new Date(ms).toISOString();
  return spanMs > 2 * 86400e3 ? d.slice(5, 16).replace("T", " ") : d.slice(11, spanMs > 3600e3 ? 16 : 19);
}

function fmtNum(v) {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toFixed(1)}G`;
  if (a >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(1)}k`;
  return Number.isInteger(v) ? String(v) : v.toPrecision(3);
}

/** The axes and grid lines, as SVG markup. */
function axes(W, H, pad, x0, x1, yMax) {
  let grid = "", text = "";
  for (let i = 0; i <= 4; i++) {
    const y = pad.t + (H - pad.t - pad.b) * (1 - i / 4);
    grid += `<line x1="${pad.l}" x2="${W - pad.r}" y1="${y}" y2="${y}"/>`;
    text += `<text x="${pad.l - 4}" y="${y + 3}" text-anchor="end">${fmtNum((yMax * i) / 4)}</text>`;
  }
  const ticks = Math.max(2, Math.floor((W - pad.l - pad.r) / 110));
  for (let i = 0; i <= ticks; i++) {
    const t = x0 + ((x1 - x0) * i) / ticks;
    const x = pad.l + ((W - pad.l - pad.r) * i) / ticks;
    const anchor = i === 0 ? "start" : i === ticks ? "end" : "middle";
    text += `<text x="${x}" y="${H - 4}" text-anchor="${anchor}">${fmtTime(t, x1 - x0)}</text>`;
  }
  return `<g class="axis">${text}</g><g class="grid">${grid}</g>`;
}

/** The legend of `series`, as HTML markup. */
function legend(series) {
  return `<div class="legend">${series.map((s) => `<span><i style="background:${s.color}"></i>${esc(s.name)}</span>`).join("")}</div>`;
}

/**
 * Stacked bars: `series` [{name, color, points: Map(bucketStartMs → value)}]
 * over buckets of `stepMs` from `startMs` to `endMs`; `onZoom(fromMs, toMs)`
 * is called with a clicked bucket's bounds.
 */
export function histogram(container, series, startMs, endMs, stepMs, onZoom, unit) {
  const W = Math.max(container.clientWidth || 800, 300), H = 110;
  const pad = { l: 44, r: 8, t: 6, b: 16 };
  // The buckets are those of the data (a point's bucket start), drawn where they fall.
  const buckets = [...new Set(series.flatMap((x) => [...x.points.keys()]))].sort((a, b) => a - b);
  const totals = buckets.map((b) => series.reduce((s, x) => s + (x.points.get(b) || 0), 0));
  const yMax = Math.max(1, ...totals);
  const span = endMs - startMs;
  const xOf = (t) => pad.l + ((Math.min(Math.max(t, startMs), endMs) - startMs) / span) * (W - pad.l - pad.r);
  const ih = H - pad.t - pad.b;
  // One markup string (and one click listener below) rather than an
  // element and a listener per bar: the histogram is drawn in the same
  // frame as the first lines.
  let bars = "";
  for (const b of buckets) {
    const x0 = xOf(b), x1 = xOf(b + stepMs);
    let y = H - pad.b;
    for (const s of series) {
      const v = s.points.get(b) || 0;
      if (!v) continue;
      const h = (v / yMax) * ih;
      y -= h;
      const tip = `${fmtTime(b, span)} ${s.name}: ${fmtNum(v)}${unit ? " " + unit : ""}`;
      bars += `<rect class="bar" x="${x0 + 0.5}" y="${y}" width="${Math.max(1, x1 - x0 - 1)}" height="${h}" ` +
        `fill="${s.color}" data-start="${b}" data-level="${esc(s.name)}"><title>${esc(tip)}</title></rect>`;
    }
  }
  container.innerHTML = `<svg xmlns="${NS}" viewBox="0 0 ${W} ${H}" height="${H}" role="img" aria-label="log volume">` +
    `${axes(W, H, pad, startMs, endMs, yMax)}${bars}</svg>${legend(series)}`;
  container.onclick = (e) => {
    const r = e.target.closest && e.target.closest("rect.bar");
    if (!r) return;
    const b = Number(r.dataset.start);
    onZoom(Math.max(b, startMs), Math.min(b + stepMs, endMs));
  };
}

/**
 * Time series, one line each: `series` [{name, points: [[ms, value], ...]}].
 * Hovering shows every series' value at the nearest time.
 */
export function lineChart(container, series, startMs, endMs) {
  container.innerHTML = "";
  const W = Math.max(container.clientWidth || 800, 300), H = 300;
  const pad = { l: 50, r: 10, t: 10, b: 18 };
  const yMax = Math.max(1e-9, ...series.flatMap((s) => s.points.map((p) => p[1]).filter(Number.isFinite)));
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, height: H, role: "img", "aria-label": "metric chart" });
  svg.innerHTML = axes(W, H, pad, startMs, endMs, yMax);
  const xOf = (t) => pad.l + ((t - startMs) / (endMs - startMs)) * (W - pad.l - pad.r);
  const yOf = (v) => H - pad.b - (v / yMax) * (H - pad.t - pad.b);
  series.forEach((s, i) => {
    s.color = PALETTE[i % PALETTE.length];
    const d = s.points.filter((p) => Number.isFinite(p[1]))
      .map((p, j) => `${j ? "L" : "M"}${xOf(p[0]).toFixed(1)},${yOf(p[1]).toFixed(1)}`).join("");
    el("path", { d, fill: "none", stroke: s.color, "stroke-width": 1.5, class: "series", "data-name": s.name }, svg);
    if (s.points.length === 1) el("circle", { cx: xOf(s.points[0][0]), cy: yOf(s.points[0][1]), r: 2.5, fill: s.color }, svg);
  });
  const rule = el("line", { y1: pad.t, y2: H - pad.b, stroke: "currentColor", opacity: 0, class: "rule" }, svg);
  const tip = document.createElement("div");
  tip.className = "tooltip"; tip.hidden = true;
  svg.addEventListener("mousemove", (e) => {
    const box = svg.getBoundingClientRect();
    const x = ((e.clientX - box.left) / box.width) * W;
    const t = startMs + ((x - pad.l) / (W - pad.l - pad.r)) * (endMs - startMs);
    let best = null;
    for (const s of series) for (const p of s.points) if (!best || Math.abs(p[0] - t) < Math.abs(best - t)) best = p[0];
    if (best === null) return;
    rule.setAttribute("x1", xOf(best)); rule.setAttribute("x2", xOf(best)); rule.setAttribute("opacity", 0.4);
    const rows = series.map((s) => [s, s.points.find((p) => p[0] === best)]).filter((r) => r[1]);
    tip.innerHTML = `<b>${new Date(best).toISOString()}</b>` + rows.map(([s, p]) =>
      `<div><i style="display:inline-block;width:8px;height:8px;background:${s.color}"></i> ${s.name.replace(/</g, "&lt;")}: ${fmtNum(p[1])}</div>`).join("");
    tip.hidden = false;
    tip.style.left = `${e.clientX + 12}px`; tip.style.top = `${e.clientY + 12}px`;
  });
  svg.addEventListener("mouseleave", () => { tip.hidden = true; rule.setAttribute("opacity", 0); });
  container.append(svg, tip);
  container.insertAdjacentHTML("beforeend", legend(series));
}
