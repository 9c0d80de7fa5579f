#!/usr/bin/env python3
"""Measures the web UI's budgets of issue 47 with the browser's own timings.

Usage (the Playwright of .venv-ui, Debian's chromium; see docs/benchmarks.md):
  .venv-ui/bin/python scripts/ui-budget.py --url http://127.0.0.1:3100 \
      --query '{namespace="pricing"}' --from 2026-12-07T01:00:00Z --to 2026-12-07T02:00:00Z [--runs 5]

Each run opens a fresh page at /#query=…&from=…&to=… (the page runs the query
on load, limit 1000) and reads:
  fcp_ms       first contentful paint (performance 'paint' entries)
  ready_ms     navigation start to the page being ready to query (tenant known)
  query_ms     the log query and the volume histogram answered (both fetches)
  render_ms    from the answers to the histogram and the lines shown
               painted (to a task queued from the next animation frame, so
               after that frame's style, layout and paint); since the page
               draws the first screenful of rows (first_rows) in that frame
               and appends the rest in later tasks, "shown" is the
               histogram and the first screenful
  build_ms     the part of render_ms spent in the page's own script
               (histogram and rows built and inserted), the rest being the
               browser's style, layout and paint
  all_rows_ms  from the answers to the last of the 1,000 rows appended and
               painted (as render_ms)
  presented_ms from the answers to the first line's text being presented,
               as the browser's Element Timing reports it (renderTime of the
               row marked `elementtiming`): a check of render_ms by the
               browser itself
  shown_ms     query_ms + render_ms
  first_lines_ms  navigation start to the lines painted: the first render
               with data
  filled       whether the first frame's rows reached the window's bottom
  (all_rows_ms, presented_ms, first_rows and filled are null for a page
  older than the chunked rows.)
  assets_kb    bytes of the page's own files as transferred (gzip), from
               resource timing
Prints one JSON line per run, then the medians, then the minima and maxima.
"""

import argparse
import json
import statistics
import urllib.parse

from playwright.sync_api import sync_playwright

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--query", required=True)
    ap.add_argument("--from", dest="frm", required=True)
    ap.add_argument("--to", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    a = ap.parse_args()
    h = urllib.parse.urlencode({"query": a.query, "from": a.frm, "to": a.to}, quote_via=urllib.parse.quote)
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=a.chromium, args=ARGS, headless=True)
        for _ in range(a.runs):
            ctx = browser.new_context(viewport={"width": 1280, "height": 800})
            page = ctx.new_page()
            page.goto(f"{a.url}/#{h}", wait_until="load")
            page.wait_for_function("window.__rk && window.__rk.runs > 0 && window.__rk.timing", timeout=120000)
            r = page.evaluate("""() => {
                const nav = performance.getEntriesByType('navigation')[0];
                const paint = Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]));
                const res = performance.getEntriesByType('resource').filter(e => e.name.includes('/ui/'));
                return {
                    fcp_ms: paint['first-contentful-paint'],
                    dom_ms: nav.domContentLoadedEventEnd,
                    load_ms: nav.loadEventEnd,
                    assets_kb: (res.reduce((s, e) => s + e.transferSize, 0) + nav.transferSize) / 1024,
                    timing: window.__rk.timing,
                    bars: document.querySelectorAll('#histogram rect.bar').length,
                };
            }""")
            r["presented_at"] = page.evaluate("""() => new Promise((done) => {
                const seen = [];
                const obs = new PerformanceObserver((l) => seen.push(...l.getEntries()));
                try { obs.observe({ type: 'element', buffered: true }); } catch { done(null); return; }
                setTimeout(() => {
                    obs.disconnect();
                    const e = seen.find((x) => x.identifier === 'lines');
                    done(e ? (e.renderTime || e.loadTime) : null);
                }, 100);
            })""")
            t = r.pop("timing")
            r.update(query_ms=t["queryMs"], render_ms=t["renderMs"], build_ms=t["buildMs"], shown_ms=t["shownMs"],
                     first_lines_ms=t["shownAt"], lines=t["lines"], first_rows=t.get("firstRows"),
                     all_rows_ms=t.get("allRowsMs"), filled=t.get("filled"))
            at = r.pop("presented_at")
            r["presented_ms"] = at - t["answeredAt"] if at and "answeredAt" in t else None
            rows.append(r)
            print(json.dumps(r))
            ctx.close()
        browser.close()
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]
           if all(isinstance(r[k], (int, float)) for r in rows)}
    print(json.dumps({"median": med}))
    print(json.dumps({"min": {k: min(r[k] for r in rows) for k in med},
                      "max": {k: max(r[k] for r in rows) for k in med}}))


if __name__ == "__main__":
    main()
