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
# Both servers run a pool of THREADS poll() workers (Portvakt with http.threading "pool"), the
# bare handler's model, so they differ only in what runs per request; the shipped default, a
# thread per connection, is what Benchmarks/login.sh measures.
THREADS=${BENCH_SERVER_THREADS:-4}
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

wait_for_bare() { # file: the port from bench-bare-http's "listening on" line
  for _ in $(seq 1 200); do
    port=$(awk 'index($0, "bench-bare-http listening on ") == 1 {split($4, a, ":"); print a[2]; exit}' "$1")
    [ -n "$port" ] && { echo "$port"; return 0; }
    sleep 0.05
  done
  echo "no port in $1" >&2; cat "$1" >&2; return 1
}

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

# Portvakt on the embedded default (SQLite, access log on), the review account's session and an
# introspect-scoped admin token (Benchmarks/review-server.sh).
. Benchmarks/review-server.sh
write_review_config "$THREADS"
admin_token=$(mint_introspect_token)
# $! must be the server itself (its RSS is read, the trap stops it).
"$BIN/portvakt" serve --config "$work/config.json" >"$work/portvakt.out" 2>"$work/portvakt.log" &
pids+=($!); portvakt_pid=$!
front_port=$(wait_for_listener "$work/portvakt.log" public 10)
admin_port=$(wait_for_listener "$work/portvakt.log" admin 10)
sleep 1
idle_rss=$(rss_kb "$portvakt_pid") # before the session exists, as without it

# Both routes must accept the session before anything is measured.
session=$(review_session "$front_port")
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
bare_port=$(wait_for_bare "$work/bare.out")

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
  checked_answers "$work/wrk.txt" "$5 $2" >/dev/null
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
