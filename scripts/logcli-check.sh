#!/usr/bin/env bash
# Runs a real logcli against a fresh `runakefli serve` and prints what it shows.
#
#   scripts/logcli-check.sh /path/to/logcli [/path/to/runakefli]
#
# logcli is not built here: build it yourself from Loki's source (docs/grafana.md says
# how). The server listens on a free loopback port with a temporary data directory,
# gets the sample data below, and every logcli command of docs/grafana.md runs against
# it, including `query --tail` for a few seconds while lines are pushed and paginated
# queries (`--limit` above `--batch`) whose lines are compared with one unpaginated query.
set -euo pipefail

logcli=${1:?usage: $0 LOGCLI [RUNAKEFLI]}
runakefli=${2:-target/debug/runakefli}
[ -x "$logcli" ] || { echo "not executable: $logcli" >&2; exit 2; }
[ -x "$runakefli" ] || { echo "not executable: $runakefli (cargo build -p runakefli)" >&2; exit 2; }

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# One live tail at a time, so that a second `--tail` shows the refusal.
"$runakefli" serve --listen "127.0.0.1:$port" --data-dir "$dir/data" --max-concurrent-tail-requests 1 \
    >"$dir/server.log" 2>&1 &
server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
export LOKI_ADDR="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -fs "$LOKI_ADDR/ready" >/dev/null 2>&1 && break; sleep 0.1; done

# Sample data: three checkout streams and one nginx stream over the last ten minutes.
# Entries come in pairs that share a nanosecond (within a stream and across streams),
# so pagination has to get equal timestamps at batch boundaries right.
base=$(( ($(date +%s) - 600) * 1000000000 ))
python3 - "$base" >"$dir/push.json" <<'EOF'
import json, sys
base = int(sys.argv[1])
streams = []
for pod in ("a", "b", "c"):
    values = []
    for i in range(40):
        ts = base + (i // 2) * 10_000_000_000
        level = "error" if i % 7 == 0 else "info"
        values.append([str(ts), json.dumps({"level": level, "msg": f"order {i} placed", "pod": pod,
                                             "duration_ms": 10 + i, "status": 500 if level == "error" else 200})])
    streams.append({"stream": {"service_name": "checkout", "env": "prod", "pod": pod}, "values": values})
values = []
for i in range(20):
    ts = base + i * 15_000_000_000
    values.append([str(ts), f'10.0.0.{i % 4} - - "GET /api/item/{i} HTTP/1.1" {200 if i % 5 else 404} {100 + i}'])
streams.append({"stream": {"service_name": "nginx", "env": "prod"}, "values": values})
print(json.dumps({"streams": streams}))
EOF
curl -fsS -X POST "$LOKI_ADDR/loki/api/v1/push" -H 'Content-Type: application/json' --data-binary "@$dir/push.json"

run() {
    echo "\$ logcli $*"
    "$logcli" "$@" 2>&1
    echo
}

run labels
run labels service_name
run series '{service_name=~".+"}'
run query --since 1h --limit 5 '{service_name="checkout"} | json | level="error"'
run stats --since 1h '{service_name="checkout"}'
run volume --since 1h '{service_name=~".+"}'
run detected-fields --since 1h '{service_name="checkout"}'

# Pagination: the same lines as one unpaginated query, in both directions.
for dirflag in "" "--forward"; do
    q='{service_name="checkout"}'
    "$logcli" query -q -o raw --since 1h --limit 50 $dirflag "$q" >"$dir/one" 2>&1
    "$logcli" query -q -o raw --since 1h --limit 50 --batch 7 $dirflag "$q" >"$dir/paged" 2>&1
    echo "\$ logcli query -q -o raw --since 1h --limit 50 --batch 7 $dirflag '$q'"
    echo "$(wc -l <"$dir/paged") lines, $(sort "$dir/paged" | uniq -d | wc -l) duplicated;" \
        "same lines as --limit 50 in one query: $(cmp -s <(sort "$dir/one") <(sort "$dir/paged") && echo yes || echo NO)"
    head -4 "$dir/paged"
    echo
done

# Live tail: start it, try a second one (refused: the cap is 1), push three lines, stop the
# first after a few seconds.
"$logcli" query --tail --since 1s '{service_name="tailed"}' >"$dir/tail" 2>&1 &
tailer=$!
sleep 1.5
echo "\$ logcli query --tail '{service_name=\"tailed\"}'   # a second tail, past --max-concurrent-tail-requests 1"
timeout 5 "$logcli" query --tail '{service_name="tailed"}' 2>&1 || true
echo
for i in 1 2 3; do
    now=$(date +%s%N)
    curl -fsS -X POST "$LOKI_ADDR/loki/api/v1/push" -H 'Content-Type: application/json' \
        -d '{"streams":[{"stream":{"service_name":"tailed","env":"prod"},"values":[["'"$now"'","tail line '"$i"'"]]}]}'
    sleep 0.5
done
sleep 2
kill "$tailer" 2>/dev/null || true
wait "$tailer" 2>/dev/null || true
echo "\$ logcli query --tail --since 1s '{service_name=\"tailed\"}'   # stopped after 5 s"
cat "$dir/tail"
