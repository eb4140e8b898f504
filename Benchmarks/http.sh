#!/usr/bin/env bash
# HTTP front benchmark: GET /health/alive through Portvakt's full front (routing, request id,
# client IP, rate-limit lookup, security headers, access log) against a bare libmicrohttpd handler
# with the same daemon flags and threads, both under wrk with 64 connections, in one run.
# Rounds alternate between the two so drifting machine load hits both alike.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=.build/release
DURATION=${BENCH_DURATION:-8}
ROUNDS=${BENCH_ROUNDS:-5}
THREADS=${BENCH_SERVER_THREADS:-4}
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

wait_for_port() { # file listener: the port from a {"msg":"listening"} log line, or "bare"
  for _ in $(seq 1 200); do
    port=$(python3 - "$1" "$2" <<'PY' 2>/dev/null || true
import json, sys
for line in open(sys.argv[1]):
    line = line.strip()
    if sys.argv[2] == "bare" and line.startswith("bench-bare-http listening on "):
        print(line.split()[3].rsplit(":", 1)[1]); break
    try:
        entry = json.loads(line)
    except ValueError:
        continue
    if entry.get("msg") == "listening" and entry.get("listener") == sys.argv[2]:
        print(entry["address"].rsplit(":", 1)[1]); break
PY
)
    [ -n "$port" ] && { echo "$port"; return 0; }
    sleep 0.05
  done
  echo "no port in $1" >&2; cat "$1" >&2; return 1
}

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

# Portvakt on the embedded default (SQLite, access log on), on free ports; wrk's 64 connections all
# come from 127.0.0.1, so the per-address cap (64 by default) is lifted to the total one.
cat >"$work/config.json" <<JSON
{"listen": {"public": {"port": 0}, "admin": {"port": 0}}, "http": {"threads": $THREADS, "perAddressConnectionLimit": 1024}}
JSON
PORTVAKT_DATA="$work/data" "$BIN/portvakt" serve --config "$work/config.json" >"$work/portvakt.out" 2>"$work/portvakt.log" &
pids+=($!); portvakt_pid=$!
front_port=$(wait_for_port "$work/portvakt.log" public)
sleep 1
idle_rss=$(rss_kb "$portvakt_pid")

"$BIN/bench-bare-http" --port 0 --threads "$THREADS" >"$work/bare.out" 2>&1 &
pids+=($!)
bare_port=$(wait_for_port "$work/bare.out" bare)

run_wrk() { # url -> "requests_per_second p99_ms"
  wrk -t2 -c64 -d"${DURATION}s" --latency "$1" >"$work/wrk.txt"
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
  p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' "$work/wrk.txt")
  errors=$(awk '/Non-2xx|Socket errors/ {print}' "$work/wrk.txt")
  if [ -n "$errors" ]; then echo "wrk reported: $errors" >&2; fi
  echo "$rps $p99"
}

# Warm both up, then alternate rounds: each round measures bare then front back to back, so the
# pair shares the machine's state; the figure is the median over rounds of each pair's ratio
# (a best-of or a mean would follow the occasional round another process disturbed).
wrk -t2 -c64 -d2s "http://127.0.0.1:$bare_port/health/alive" >/dev/null
wrk -t2 -c64 -d2s "http://127.0.0.1:$front_port/health/alive" >/dev/null
: >"$work/rounds.txt"
for round in $(seq 1 "$ROUNDS"); do
  read -r bare_rps bare_p99 < <(run_wrk "http://127.0.0.1:$bare_port/health/alive")
  read -r front_rps front_p99 < <(run_wrk "http://127.0.0.1:$front_port/health/alive")
  echo "round $round: bare $bare_rps req/s (p99 $bare_p99 ms), front $front_rps req/s (p99 $front_p99 ms)"
  echo "$bare_rps $bare_p99 $front_rps $front_p99" >>"$work/rounds.txt"
done
median() { sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
best_bare=$(awk '{print $1}' "$work/rounds.txt" | median)
best_bare_p99=$(awk '{print $2}' "$work/rounds.txt" | median)
best_front=$(awk '{print $3}' "$work/rounds.txt" | median)
best_front_p99=$(awk '{print $4}' "$work/rounds.txt" | median)
loaded_rss=$(rss_kb "$portvakt_pid")
sleep 2
after_rss=$(rss_kb "$portvakt_pid")
ratio=$(awk '{printf "%.4f\n", $3 / $1}' "$work/rounds.txt" | median | awk '{printf "%.1f", 100 * $1}')

python3 Benchmarks/record.py "HTTP front: GET /health/alive, wrk 64 connections, ${THREADS} server threads, median of $ROUNDS paired rounds x ${DURATION}s" \
  "http.bare.requests_per_second=$best_bare:req/s" \
  "http.bare.p99=$best_bare_p99:ms" \
  "http.front.requests_per_second=$best_front:req/s" \
  "http.front.p99=$best_front_p99:ms" \
  "http.front.share_of_bare=$ratio:%" \
  "serve.idle_rss=$(awk "BEGIN {printf \"%.1f\", $idle_rss / 1024}"):MB" \
  "serve.rss_after_load=$(awk "BEGIN {printf \"%.1f\", $after_rss / 1024}"):MB"
echo "targets: front >= 80% of bare (got $ratio%); idle RSS < 30 MB (got $(awk "BEGIN {printf \"%.1f\", $idle_rss / 1024}") MB)"
