#!/usr/bin/env bash
# HTTP front benchmark: GET /health/alive through Portvakt's full front (routing, request id,
# client IP, rate-limit lookup, security headers, access log) against a bare libmicrohttpd handler
# with the same daemon flags and threads, both under wrk with 64 connections, in one run.
# In the same rounds, against the same `portvakt serve`, wrk also drives the two routes an
# installation calls on every request it protects: forward auth (GET /v1/auth/check with a real
# session's bearer token, 204) and session introspection (POST /admin/v1/sessions/introspect with
# that token and an introspect-scoped admin token, 200 {"active":true}). Their answers are checked
# one by one (Benchmarks/wrk/checked.lua): one wrong status or body fails the benchmark.
# Rounds alternate between the runs so drifting machine load hits all alike.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=.build/release
DURATION=${BENCH_DURATION:-8}
ROUNDS=${BENCH_ROUNDS:-5}
BACKEND_DURATION=${BENCH_BACKEND_DURATION:-4} # seconds of each forward-auth and introspection run
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
# come from 127.0.0.1, so the per-address cap (64 by default) is lifted to the total one. The
# review account gives a real session over HTTP without a browser (as in Tests/Contract/run.sh);
# rateLimits.backend (forward auth and introspection) is raised so wrk measures the routes, not
# 429s. /health/alive's class keeps its default.
review_user=bench.reviewer
review_code="bench-$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
cat >"$work/config.json" <<JSON
{"listen": {"public": {"port": 0}, "admin": {"port": 0}}, "http": {"threads": $THREADS, "perAddressConnectionLimit": 1024},
 "rateLimits": {"backend": {"burst": 100000, "perSecond": 100000}},
 "reviewAccount": {"enabled": true, "username": "$review_user"}}
JSON
portvakt() { PORTVAKT_DATA="$work/data" PORTVAKT_REVIEW_CODE="$review_code" "$BIN/portvakt" "$@"; }
# An introspect-scoped admin token in the database, minted before the start (printed once on a
# line of its own), the way an app server gets one.
admin_token=$(portvakt admin token create --name bench-introspect --scope introspect --config "$work/config.json" \
  | sed -n 's/^ *\(pva_[^ ]*\)$/\1/p')
[ -n "$admin_token" ] || { echo "portvakt admin token create printed no token" >&2; exit 1; }
# Not through the function: $! must be the server itself (its RSS is read, the trap stops it).
PORTVAKT_DATA="$work/data" PORTVAKT_REVIEW_CODE="$review_code" "$BIN/portvakt" serve --config "$work/config.json" \
  >"$work/portvakt.out" 2>"$work/portvakt.log" &
pids+=($!); portvakt_pid=$!
front_port=$(wait_for_port "$work/portvakt.log" public)
admin_port=$(wait_for_port "$work/portvakt.log" admin)
sleep 1
idle_rss=$(rss_kb "$portvakt_pid") # before the session exists, as without it

# A native session for the review account: the token comes in the body. Both routes must accept
# it before anything is measured.
session=$(curl -fsS --max-time 10 -X POST -H 'Content-Type: application/json' \
  -d "{\"username\": \"$review_user\", \"code\": \"$review_code\", \"client\": \"native\"}" \
  "http://127.0.0.1:$front_port/v1/review/login" | python3 -c 'import json, sys; print(json.load(sys.stdin)["session"]["token"])')
[ -n "$session" ] || { echo "POST /v1/review/login gave no session token" >&2; exit 1; }
check_url="http://127.0.0.1:$front_port/v1/auth/check"
introspect_url="http://127.0.0.1:$admin_port/admin/v1/sessions/introspect"
introspect_body="{\"token\": \"$session\"}"
status=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $session" "$check_url")
[ "$status" = 204 ] || { echo "GET /v1/auth/check with the session answered $status, not 204" >&2; exit 1; }
curl -fsS --max-time 10 -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer $admin_token" \
  -d "$introspect_body" "$introspect_url" | grep -q '"active" *: *true' \
  || { echo "POST /admin/v1/sessions/introspect did not answer active for the session" >&2; exit 1; }

"$BIN/bench-bare-http" --port 0 --threads "$THREADS" >"$work/bare.out" 2>&1 &
pids+=($!)
bare_port=$(wait_for_port "$work/bare.out" bare)

wrk_figures() { # sets rps and p99 (ms) from $work/wrk.txt
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
  p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' "$work/wrk.txt")
}
run_wrk() { # url -> "requests_per_second p99_ms"
  wrk -t2 -c64 -d"${DURATION}s" --latency "$1" >"$work/wrk.txt"
  wrk_figures
  errors=$(awk '/Non-2xx|Socket errors/ {print}' "$work/wrk.txt")
  if [ -n "$errors" ]; then echo "wrk reported: $errors" >&2; fi
  echo "$rps $p99"
}
# Forward auth and introspection through Benchmarks/wrk/checked.lua, which checks every answer.
# Sets rps and p99 (not in a subshell, so that a failed check stops the benchmark).
run_checked() { # seconds url status body-pattern method body bearer
  BENCH_EXPECT_STATUS=$3 BENCH_EXPECT_BODY=$4 BENCH_METHOD=$5 BENCH_BODY=$6 BENCH_BEARER=$7 \
    wrk -t2 -c64 -d"$1s" --latency -s Benchmarks/wrk/checked.lua "$2" >"$work/wrk.txt"
  wrk_figures
  local answers wrong
  read -r answers wrong < <(sed -n 's/^checked: \([0-9]*\) answers, \([0-9]*\) wrong$/\1 \2/p' "$work/wrk.txt")
  if [ -z "$answers" ] || [ "$answers" -eq 0 ] || [ "$wrong" -ne 0 ] || grep -q 'Socket errors' "$work/wrk.txt"; then
    echo "$5 $2: wrong answers, the run measures nothing:" >&2; cat "$work/wrk.txt" >&2; exit 1
  fi
}
check_run() { run_checked "$1" "$check_url" 204 "" GET "" "$session"; }
introspect_run() { run_checked "$1" "$introspect_url" 200 '"active" *: *true' POST "$introspect_body" "$admin_token"; }

# Warm all up, then alternate rounds: each round measures bare, front, forward auth and
# introspection back to back, so they share the machine's state; each ratio is the median over
# rounds of that round's ratio (a best-of or a mean would follow the occasional round another
# process disturbed).
wrk -t2 -c64 -d2s "http://127.0.0.1:$bare_port/health/alive" >/dev/null
wrk -t2 -c64 -d2s "http://127.0.0.1:$front_port/health/alive" >/dev/null
check_run 2
introspect_run 2
: >"$work/rounds.txt"
for round in $(seq 1 "$ROUNDS"); do
  read -r bare_rps bare_p99 < <(run_wrk "http://127.0.0.1:$bare_port/health/alive")
  read -r front_rps front_p99 < <(run_wrk "http://127.0.0.1:$front_port/health/alive")
  check_run "$BACKEND_DURATION"; check_rps=$rps; check_p99=$p99
  introspect_run "$BACKEND_DURATION"; introspect_rps=$rps; introspect_p99=$p99
  echo "round $round: bare $bare_rps req/s (p99 $bare_p99 ms), front $front_rps req/s (p99 $front_p99 ms)," \
    "auth check $check_rps/s (p99 $check_p99 ms), introspect $introspect_rps/s (p99 $introspect_p99 ms)"
  echo "$bare_rps $bare_p99 $front_rps $front_p99 $check_rps $check_p99 $introspect_rps $introspect_p99" >>"$work/rounds.txt"
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
check_rps=$(awk '{print $5}' "$work/rounds.txt" | median)
check_p99=$(awk '{print $6}' "$work/rounds.txt" | median)
introspect_rps=$(awk '{print $7}' "$work/rounds.txt" | median)
introspect_p99=$(awk '{print $8}' "$work/rounds.txt" | median)
# Each against /health/alive through the same front in the same round.
check_ratio=$(awk '{printf "%.4f\n", $5 / $3}' "$work/rounds.txt" | median | awk '{printf "%.1f", 100 * $1}')
introspect_ratio=$(awk '{printf "%.4f\n", $7 / $3}' "$work/rounds.txt" | median | awk '{printf "%.1f", 100 * $1}')

python3 Benchmarks/record.py "HTTP front: GET /health/alive (x ${DURATION}s), forward auth and introspection (x ${BACKEND_DURATION}s, every answer checked), wrk 64 connections, ${THREADS} server threads, median of $ROUNDS rounds" \
  "http.bare.requests_per_second=$best_bare:req/s" \
  "http.bare.p99=$best_bare_p99:ms" \
  "http.front.requests_per_second=$best_front:req/s" \
  "http.front.p99=$best_front_p99:ms" \
  "http.front.share_of_bare=$ratio:%" \
  "http.auth_check.checks_per_second=$check_rps:checks/s" \
  "http.auth_check.p99=$check_p99:ms" \
  "http.auth_check.share_of_alive=$check_ratio:%" \
  "http.introspect.introspections_per_second=$introspect_rps:introspections/s" \
  "http.introspect.p99=$introspect_p99:ms" \
  "http.introspect.share_of_alive=$introspect_ratio:%" \
  "serve.idle_rss=$(awk "BEGIN {printf \"%.1f\", $idle_rss / 1024}"):MB" \
  "serve.rss_after_load=$(awk "BEGIN {printf \"%.1f\", $after_rss / 1024}"):MB"
echo "targets: front >= 80% of bare (got $ratio%); idle RSS < 20 MB (got $(awk "BEGIN {printf \"%.1f\", $idle_rss / 1024}") MB)"
