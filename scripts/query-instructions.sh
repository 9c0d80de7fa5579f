#!/usr/bin/env bash
# query-instructions.sh RUNAKEFLI DATA_DIR 'LOGQL' [RUNS]
#
# Counts the instructions a server spends answering one range query, with
# valgrind's callgrind: the count is the same from run to run whatever else the
# machine does, so two builds can be compared on a noisy 2-core host where
# wall-clock and CPU times vary by ±15 %.
#
# DATA_DIR is a directory `runakefli bench query --data-dir DIR` pushed into
# (its runakefli-bench-push.json gives the span). The query runs over that
# hour with step=60s, limit 100, backward (as `bench query` asks), once to
# warm, then RUNS times (default 3) counted. Prints millions of instructions
# per query, all server threads together.
#
# Needs valgrind (Debian package `valgrind`) and curl.
set -euo pipefail
BIN=${1:?usage: query-instructions.sh RUNAKEFLI DATA_DIR LOGQL [RUNS]}
DATA=${2:?data directory}
QUERY=${3:?LogQL query}
RUNS=${4:-3}
PORT=${PORT:-3197}
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 2; }
MARK="$DATA/runakefli-bench-push.json"
[ -f "$MARK" ] || { echo "$MARK is missing: push with runakefli bench query --data-dir $DATA first" >&2; exit 2; }
END=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["end_ns"])' "$MARK")
START=$((END - 3600000000000))
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.%p" \
    "$BIN" serve --data-dir "$DATA" --listen "127.0.0.1:$PORT" >"$OUT/server.log" 2>&1 &
VG=$!
for _ in $(seq 1 1200); do
    curl -sf "127.0.0.1:$PORT/ready" >/dev/null && break
    kill -0 "$VG" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
    sleep 0.5
done
ask() {
    curl -sf -G "127.0.0.1:$PORT/loki/api/v1/query_range" \
        --data-urlencode "query=$QUERY" --data-urlencode "start=$START" \
        --data-urlencode "end=$END" --data-urlencode step=60s \
        --data-urlencode limit=100 --data-urlencode direction=backward >/dev/null
}
ask
callgrind_control -z "$VG" >/dev/null 2>&1
for _ in $(seq 1 "$RUNS"); do ask; done
callgrind_control -d "$VG" >/dev/null 2>&1
kill "$VG"
wait "$VG" 2>/dev/null || true
# The dump after zeroing holds only the counted queries (one file per dump).
total=0
for f in "$OUT"/cg.*.*; do
    n=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
    total=$((total + ${n:-0}))
done
awk -v t="$total" -v r="$RUNS" 'BEGIN { printf "%.1f\n", t / r / 1e6 }'
