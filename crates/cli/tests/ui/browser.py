"""Drives the built-in web UI in Debian's headless Chromium with Playwright.

Reads a job as JSON on stdin:
  {"url": "http://127.0.0.1:PORT", "screenshots": "/dir", "service": "shop",
   "scenario": "main" | "tenants" | "token",
   "users": [{"user": .., "password": .., "visits": [tenant, ..]}],  (tenants only)
   "token": .., "tenant": ..}  (token only)
and prints one JSON object of what it saw; the Rust test
(crates/cli/tests/ui_browser.rs) asserts on it. Any step that does not
happen in time raises, so the script exits non-zero with the step named.
"""

import json
import os
import sys
import time
import urllib.parse
import urllib.request

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("RUNAKEFLI_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
TIMEOUT_MS = 15000


def push(url, tenant, labels, lines, auth=None):
    """Pushes (ns, line) pairs as one Loki JSON stream."""
    body = json.dumps({"streams": [{"stream": labels, "values": [[str(t), l] for t, l in lines]}]}).encode()
    headers = {"Content-Type": "application/json"}
    if tenant:
        headers["X-Scope-OrgID"] = tenant
    if auth:
        headers["Authorization"] = auth
    req = urllib.request.Request(f"{url}/loki/api/v1/push", data=body, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 204, r.status


def shot(page, job, name, out):
    if job.get("screenshots"):
        path = os.path.join(job["screenshots"], name)
        page.screenshot(path=path, full_page=False)
        out.setdefault("screenshots", []).append(name)


def run_query(page, query):
    runs = page.evaluate("window.__rk.runs")
    page.fill("#editor", query)
    page.click("#run")
    page.wait_for_function(f"window.__rk.runs > {runs}", timeout=TIMEOUT_MS)


def step(out, name):
    out["steps"].append(name)


def main_scenario(page, job, out):
    url = job["url"]
    svc = job["service"]
    # Load the page; the editor has focus.
    t0 = time.time()
    page.goto(f"{url}/", wait_until="load")
    page.wait_for_function("window.__rk && window.__rk.ready", timeout=TIMEOUT_MS)
    out["load_ms"] = (time.time() - t0) * 1000
    out["paint"] = page.evaluate(
        "Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]))")
    out["title"] = page.title()
    step(out, "load")
    shot(page, job, "01-page.png", out)

    # Completion: label names after "{", then values after `label="`.
    page.fill("#limit", "100")
    page.click("#editor")
    page.keyboard.type("{")
    page.wait_for_selector("#completion:not([hidden]) li", timeout=TIMEOUT_MS)
    out["label_completions"] = page.eval_on_selector_all("#completion li span", "els => els.map(e => e.textContent)")
    page.keyboard.type("service")
    page.wait_for_function(
        "[...document.querySelectorAll('#completion li span')].every(e => e.textContent.startsWith('service'))",
        timeout=TIMEOUT_MS)
    page.keyboard.press("Tab")
    page.wait_for_selector("#completion:not([hidden]) li", timeout=TIMEOUT_MS)
    out["value_completions"] = page.eval_on_selector_all("#completion li span", "els => els.map(e => e.textContent)")
    shot(page, job, "02-completion.png", out)
    page.keyboard.press("Enter")
    page.keyboard.type("} | ")
    page.wait_for_selector("#completion:not([hidden]) li", timeout=TIMEOUT_MS)
    out["stage_completions"] = page.eval_on_selector_all("#completion li span", "els => els.map(e => e.textContent)")
    page.keyboard.press("Escape")
    out["editor_after_completion"] = page.input_value("#editor")
    step(out, "completion")

    # A log query: lines newest first, the volume histogram above them.
    runs = page.evaluate("window.__rk.runs")
    page.fill("#editor", f'{{service_name="{svc}"}}')
    page.click("#editor")
    page.keyboard.press("Control+Enter")
    page.wait_for_function(f"window.__rk.runs > {runs}", timeout=TIMEOUT_MS)
    page.wait_for_selector("#lines .row", timeout=TIMEOUT_MS)
    out["log_timing"] = page.evaluate("window.__rk.timing")
    out["first_page"] = page.eval_on_selector_all("#lines .row", "els => els.map(e => e.dataset.ts)")
    out["bars"] = page.eval_on_selector_all("#histogram rect.bar", "els => els.map(e => e.dataset.level)")
    out["error_hidden_after_logs"] = page.eval_on_selector("#error", "e => e.hidden")
    step(out, "logs")
    shot(page, job, "03-logs.png", out)

    # Open the first line: its parsed fields and stream labels.
    page.click("#lines .row:first-child .head")
    page.wait_for_selector("#lines .row:first-child .details", timeout=TIMEOUT_MS)
    out["fields"] = page.eval_on_selector_all(
        "#lines .row:first-child .details tr.field",
        "els => els.map(e => [e.children[0].textContent, e.children[1].textContent])")
    out["first_line"] = page.eval_on_selector("#lines .row:first-child .msg", "e => e.textContent")
    step(out, "fields")
    shot(page, job, "04-fields.png", out)

    # Show context: lines around the opened one in its stream.
    page.click("#lines .row:first-child .details button.context")
    page.wait_for_selector("#context-lines .row.anchor", timeout=TIMEOUT_MS)
    out["context_rows"] = page.eval_on_selector_all("#context-lines .row", "els => els.length")
    shot(page, job, "05-context.png", out)
    page.click("#context-close")
    step(out, "context")

    # Infinite scroll: the next page ends at the oldest line seen, no duplicates.
    for _ in range(20):
        before = page.eval_on_selector_all("#lines .row", "els => els.length")
        page.eval_on_selector("#more", "e => e.scrollIntoView()")
        try:
            page.wait_for_function(
                f"document.querySelectorAll('#lines .row').length > {before} || "
                "document.getElementById('more').textContent === 'end of results'",
                timeout=TIMEOUT_MS)
        except Exception:
            break
        if page.text_content("#more") == "end of results":
            break
    out["all_rows"] = page.eval_on_selector_all(
        "#lines .row", "els => els.map(e => [e.dataset.ts, e.querySelector('.msg').textContent])")
    out["more_text"] = page.text_content("#more")
    step(out, "scroll")

    # Zoom: click the tallest histogram bar; the range becomes that bucket.
    page.evaluate("window.scrollTo(0, 0)")
    runs = page.evaluate("window.__rk.runs")
    bar = page.evaluate("""() => {
        const bars = [...document.querySelectorAll('#histogram rect.bar')];
        bars.sort((a, b) => b.height.baseVal.value - a.height.baseVal.value);
        return bars[0].dataset.start;
    }""")
    page.click(f'#histogram rect.bar[data-start="{bar}"]')
    page.wait_for_function(f"window.__rk.runs > {runs}", timeout=TIMEOUT_MS)
    out["zoom"] = {"bar_start_ms": int(bar), "from": page.input_value("#from"), "to": page.input_value("#to"),
                   "rows": page.eval_on_selector_all("#lines .row", "els => els.map(e => e.dataset.ts)")}
    step(out, "zoom")
    shot(page, job, "06-zoom.png", out)

    # A page longer than a screenful: the first frame holds the first rows,
    # the rest are appended after it, in order; j moves the focus past them.
    page.fill("#from", "now-1h")
    page.fill("#to", "now")
    page.fill("#limit", "1000")
    run_query(page, f'{{service_name="{svc}"}}')
    big = {
        "timing": page.evaluate("window.__rk.timing"),
        "rows": page.eval_on_selector_all("#lines .row", "els => els.map(e => e.dataset.ts)"),
    }
    page.evaluate("window.scrollTo(0, 0)")
    page.evaluate("document.activeElement.blur()")
    for _ in range(60):
        page.keyboard.press("j")
    big["focused"] = page.evaluate("(document.querySelector('#lines .row.focus') || {dataset: {}}).dataset.ts || null")
    big["focused_is_active"] = page.evaluate("document.activeElement.classList.contains('focus')")
    out["big_page"] = big
    step(out, "big_page")

    # A metric query: a chart with one line per series, then the table.
    page.fill("#from", "now-1h")
    page.fill("#to", "now")
    run_query(page, f'sum by (level) (count_over_time({{service_name="{svc}"}} | json [5m]))')
    page.wait_for_selector("#chart path.series", timeout=TIMEOUT_MS)
    out["series"] = page.eval_on_selector_all("#chart path.series", "els => els.map(e => e.dataset.name)")
    out["metric_timing"] = page.evaluate("window.__rk.timing")
    box = page.query_selector("#chart svg").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.7, box["y"] + box["height"] / 2)
    page.wait_for_selector(".tooltip:not([hidden])", timeout=TIMEOUT_MS)
    out["tooltip"] = page.text_content(".tooltip")
    step(out, "metric")
    shot(page, job, "07-chart.png", out)
    page.click("[data-tab=table]")
    out["table_rows"] = page.eval_on_selector_all("#table tr", "els => els.length")
    step(out, "table")

    # A syntax error: shown at the editor, at the position the API gave.
    page.click("[data-tab=logs]")
    run_query(page, f'{{service_name="{svc}"}} |= "x" | json | level=~')
    page.wait_for_selector("#error:not([hidden])", timeout=TIMEOUT_MS)
    out["syntax_error"] = {
        "text": page.text_content("#error"),
        "line": page.get_attribute("#error", "data-line"),
        "col": page.get_attribute("#error", "data-col"),
        "mark_offset": page.evaluate("""() => {
            const m = document.getElementById('error-mark');
            if (!m) return null;
            let n = 0; for (let x = m.previousSibling; x; x = x.previousSibling) n += x.textContent.length;
            return n;
        }"""),
    }
    step(out, "syntax_error")
    shot(page, job, "08-syntax-error.png", out)

    # Cancel: a query cancelled before its answer leaves no error and no
    # half-drawn result (the request is aborted with AbortController).
    page.fill("#editor", f'{{service_name="{svc}"}}')
    runs = page.evaluate("window.__rk.runs")
    page.evaluate("() => { document.getElementById('run').click(); document.getElementById('cancel').click(); }")
    page.wait_for_function(f"window.__rk.runs > {runs}", timeout=TIMEOUT_MS)
    out["cancelled"] = {
        "status": page.text_content("#status"),
        "cancel_hidden": page.eval_on_selector("#cancel", "e => e.hidden"),
        "error_hidden": page.eval_on_selector("#error", "e => e.hidden"),
    }
    step(out, "cancel")

    # Live tail: a line pushed while tailing appears.
    page.fill("#editor", f'{{service_name="{svc}"}}')
    page.click("[data-tab=live]")
    page.click("#tail-start")
    page.wait_for_function("document.getElementById('tail-state').textContent === 'live'", timeout=TIMEOUT_MS)
    marker = f"tailed line {time.time_ns()}"
    time.sleep(0.3)
    push(url, "", {"service_name": svc, "host": "a"}, [(time.time_ns(), json.dumps({"level": "info", "msg": marker}))])
    page.wait_for_function(
        f"[...document.querySelectorAll('#tail-lines .msg')].some(e => e.textContent.includes({json.dumps(marker)}))",
        timeout=TIMEOUT_MS)
    out["tailed"] = marker
    # Pause: a line pushed now is counted but not shown until resumed.
    page.click("#tail-pause")
    marker2 = f"paused line {time.time_ns()}"
    push(url, "", {"service_name": svc, "host": "a"}, [(time.time_ns(), json.dumps({"level": "info", "msg": marker2}))])
    page.wait_for_function("Number(document.getElementById('tail-count').textContent) >= 2", timeout=TIMEOUT_MS)
    out["paused_hidden"] = page.evaluate(
        f"![...document.querySelectorAll('#tail-lines .msg')].some(e => e.textContent.includes({json.dumps(marker2)}))")
    page.click("#tail-pause")
    page.wait_for_function(
        f"[...document.querySelectorAll('#tail-lines .msg')].some(e => e.textContent.includes({json.dumps(marker2)}))",
        timeout=TIMEOUT_MS)
    out["tail_dropped"] = page.text_content("#tail-dropped")
    step(out, "tail")
    shot(page, job, "09-tail.png", out)
    page.click("#tail-stop")

    # Patterns of the query's streams.
    page.click("[data-tab=patterns]")
    page.wait_for_selector("#patterns .pattern", timeout=TIMEOUT_MS)
    out["patterns"] = page.eval_on_selector_all("#patterns .pattern span:last-child", "els => els.map(e => e.textContent)")
    step(out, "patterns")
    shot(page, job, "10-patterns.png", out)

    # Light theme, keyboard: "t" toggles it.
    page.click("[data-tab=logs]")
    page.focus("body")
    page.evaluate("document.activeElement.blur()")
    theme = page.evaluate("document.documentElement.dataset.theme")
    page.keyboard.press("t")
    out["theme"] = [theme, page.evaluate("document.documentElement.dataset.theme")]
    step(out, "theme")
    shot(page, job, "11-theme-toggled.png", out)


LOGIN_SHOWN = "window.__rk && window.__rk.ready && document.getElementById('login').open"


def tenants_scenario(browser, job, out):
    """Each user opens the page asking for each tenant of `visits`, logging
    in with user and password in the page's form on the first; records the
    picker and the lines shown."""
    url = job["url"]
    out["seen"] = {}
    for user in job["users"]:
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        watch(page, out)
        seen = out["seen"].setdefault(user["user"], {})
        for i, tenant in enumerate(user["visits"]):
            q = urllib.parse.quote('{service_name="shop"}')
            # The first visit loads the page, whose calls answer 401 until
            # the form is filled in; the next ones change only the address's
            # hash, which the page applies in place.
            before = page.evaluate("window.__rk ? window.__rk.runs : -1")
            page.goto(f"{url}/#tenant={tenant}&from=now-1h&to=now&query={q}")
            if i == 0:
                page.wait_for_function(f"{LOGIN_SHOWN} && window.__rk.runs > 0", timeout=TIMEOUT_MS)
                before = page.evaluate("window.__rk.runs")
                page.fill("#login-user", user["user"])
                page.fill("#login-password", user["password"])
                page.click("#login-submit")
            page.wait_for_function(f"window.__rk && window.__rk.ready && window.__rk.runs > {before}",
                                   timeout=TIMEOUT_MS)
            seen[tenant] = {
                "picker_visible": page.eval_on_selector("#tenant-box", "e => !e.hidden"),
                "picker_value": page.input_value("#tenant"),
                "choices": page.eval_on_selector_all("#tenant-list option", "els => els.map(e => e.value)"),
                "lines": page.eval_on_selector_all("#lines .msg", "els => els.map(e => e.textContent)"),
                "error": page.eval_on_selector("#error", "e => e.hidden ? null : e.textContent"),
                "status": page.text_content("#status"),
                "hash": page.evaluate("location.hash"),
            }
            shot(page, job, f"13-tenant-{user['user']}-{tenant}.png", out)
        ctx.close()
    step(out, "tenants")


def token_scenario(page, job, out):
    """A credentials file with bearer tokens only: the page opens, shows its
    login form, takes the token; a query returns lines; the live tail
    (opened with a ticket) receives a pushed line; "Log out" forgets it."""
    url, auth = job["url"], f"Bearer {job['token']}"
    page.goto(f"{url}/", wait_until="load")
    page.wait_for_function(LOGIN_SHOWN, timeout=TIMEOUT_MS)
    out["login_shown"] = True
    step(out, "login_form")
    shot(page, job, "14-login.png", out)
    page.fill("#login-token", job["token"])
    page.click("#login-submit")
    page.wait_for_function("!document.getElementById('login').open && !document.getElementById('logout').hidden",
                           timeout=TIMEOUT_MS)
    out["stored"] = page.evaluate("sessionStorage.getItem('rk.auth')")
    out["local_storage_keys"] = page.evaluate("Object.keys(localStorage)")
    run_query(page, '{service_name="shop"}')
    page.wait_for_selector("#lines .row", timeout=TIMEOUT_MS)
    out["lines"] = page.eval_on_selector_all("#lines .msg", "els => els.map(e => e.textContent)")
    out["error_hidden"] = page.eval_on_selector("#error", "e => e.hidden")
    step(out, "token_query")
    page.click("[data-tab=live]")
    page.click("#tail-start")
    page.wait_for_function("document.getElementById('tail-state').textContent === 'live'", timeout=TIMEOUT_MS)
    marker = f"tailed with a ticket {time.time_ns()}"
    time.sleep(0.3)
    push(url, job["tenant"], {"service_name": "shop", "host": "a"}, [(time.time_ns(), marker)], auth)
    page.wait_for_function(
        f"[...document.querySelectorAll('#tail-lines .msg')].some(e => e.textContent.includes({json.dumps(marker)}))",
        timeout=TIMEOUT_MS)
    out["tailed"] = marker
    step(out, "token_tail")
    page.click("#tail-stop")
    page.click("#logout")
    page.wait_for_function(LOGIN_SHOWN, timeout=TIMEOUT_MS)
    out["stored_after_logout"] = page.evaluate("sessionStorage.getItem('rk.auth')")
    step(out, "logout")


def watch(page, out):
    page.on("console", lambda m: out["console_errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: out["console_errors"].append(f"pageerror: {e}"))


def main():
    job = json.load(sys.stdin)
    out = {"steps": [], "console_errors": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        watch(page, out)
        try:
            if job.get("scenario") == "tenants":
                tenants_scenario(browser, job, out)
            elif job.get("scenario") == "token":
                token_scenario(page, job, out)
            else:
                main_scenario(page, job, out)
        except Exception as e:
            out["failed"] = f"after steps {out['steps']}: {type(e).__name__}: {e}"
            try:
                out["failed_state"] = page.evaluate("""() => ({
                    editor: document.getElementById('editor').value,
                    focus: document.activeElement && document.activeElement.id,
                    completion: document.getElementById('completion').outerHTML,
                    error: document.getElementById('error').textContent,
                    status: document.getElementById('status').textContent,
                })""")
                shot(page, job, "failure.png", out)
            except Exception:
                pass
        finally:
            browser.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
