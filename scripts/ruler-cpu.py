#!/usr/bin/env python3
# Usage: scripts/ruler-cpu.py target/release/runakefli [INTERVAL=10s] [SECONDS=60]
# (docs/alerting.md, "Cost").
# CPU of the ruler: 200 rules in 20 groups over a small store, vs the same server idle.
import json, os, random, signal, subprocess, sys, tempfile, time, urllib.request

BIN = sys.argv[1]
INTERVAL = sys.argv[2] if len(sys.argv) > 2 else "10s"
MEASURE = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
APPS = ["checkout", "cart", "search", "auth", "payments"]

def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

def post(base, path, body, ctype="application/json"):
    req = urllib.request.Request(base + path, data=body, headers={"Content-Type": ctype}, method="POST")
    return urllib.request.urlopen(req).status

def run(with_rules):
    tmp = tempfile.mkdtemp()
    rules = os.path.join(tmp, "rules", "fake")
    os.makedirs(rules)
    if with_rules:
        for g in range(20):
            lines = ["groups:", f"  - name: g{g}", f"    interval: {INTERVAL}", "    rules:"]
            for r in range(10):
                app = APPS[(g + r) % len(APPS)]
                if r % 2 == 0:
                    lines += [f"      - alert: A{g}_{r}",
                              f"        expr: sum by (app, env) (count_over_time({{app=\"{app}\"}} | json | status >= 500 [5m])) / sum by (app, env) (count_over_time({{app=\"{app}\"}}[5m])) > 0.{r+1}",
                              "        for: 1m",
                              "        annotations: {summary: \"{{ $labels.app }} {{ $value | humanizePercentage }}\"}"]
                else:
                    lines += [f"      - record: app:lines:rate5m_{g}_{r}",
                              f"        expr: sum by (app, env, level) (rate({{app=\"{app}\"}} | json [5m]))"]
            open(os.path.join(rules, f"ns{g}.yaml"), "w").write("\n".join(lines) + "\n")
    port = 39000 + random.randint(0, 999)
    base = f"http://127.0.0.1:{port}"
    p = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", os.path.join(tmp, "data"),
                          "--rules-dir", os.path.join(tmp, "rules")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=dict(os.environ, RUNAKEFLI_LOG="warn"))
    for _ in range(200):
        try:
            urllib.request.urlopen(base + "/ready"); break
        except Exception:
            time.sleep(0.05)
    # 100,000 lines over the last 4 minutes, 5 apps × 2 envs.
    now = time.time_ns()
    rnd = random.Random(1)
    for batch in range(20):
        streams = {}
        for i in range(5000):
            app = APPS[rnd.randrange(5)]; env = ["prod", "dev"][rnd.randrange(2)]
            t = now - rnd.randrange(240_000_000_000)
            st = rnd.choice([200, 200, 200, 200, 404, 500, 503])
            line = json.dumps({"status": st, "level": "error" if st >= 500 else "info", "path": f"/p{rnd.randrange(50)}", "took_ms": rnd.randrange(900)})
            streams.setdefault((app, env), []).append([str(t), line])
        body = {"streams": [{"stream": {"app": a, "env": e}, "values": sorted(v)} for (a, e), v in streams.items()]}
        post(base, "/loki/api/v1/push", json.dumps(body).encode())
    time.sleep(12)  # first evaluations, caches warm
    def iters_now():
        m = urllib.request.urlopen(base + "/metrics").read().decode()
        return sum(float(l.rsplit(" ", 1)[1]) for l in m.splitlines() if l.startswith("prometheus_rule_group_iterations_total{"))
    i0 = iters_now()
    c0, t0 = cpu(p.pid), time.time()
    time.sleep(MEASURE)
    c1, t1 = cpu(p.pid), time.time()
    m = urllib.request.urlopen(base + "/metrics").read().decode()
    iters = iters_now() - i0
    durs = [float(l.rsplit(" ", 1)[1]) for l in m.splitlines() if l.startswith("prometheus_rule_group_last_duration_seconds{")]
    fails = sum(float(l.rsplit(" ", 1)[1]) for l in m.splitlines() if l.startswith("prometheus_rule_evaluation_failures_total{"))
    p.send_signal(signal.SIGTERM); p.wait()
    return (c1 - c0) / (t1 - t0), iters, durs, fails, c1 - c0

idle = run(False)
busy = run(True)
print(f"idle: {idle[0]*100:.2f}% of a core")
print(f"200 rules / 20 groups every {INTERVAL}: {busy[0]*100:.2f}% of a core over {MEASURE:.0f} s; {busy[1]:.0f} group evaluations in it ({busy[4]:.1f} CPU s, {busy[4]/max(busy[1],1)/10*1000:.1f} ms CPU per rule), failures {busy[3]:.0f}")
if busy[2]:
    print(f"last group durations: min {min(busy[2])*1000:.1f} ms, max {max(busy[2])*1000:.1f} ms, mean {sum(busy[2])/len(busy[2])*1000:.1f} ms")
