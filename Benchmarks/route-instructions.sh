#!/usr/bin/env bash
# Instructions (valgrind callgrind's Ir) the release `portvakt serve` executes per request on the
# three routes an installation calls most often besides sign-in: GET /health/alive (the front
# alone: routing, request id, rate limit, headers, access log), GET /v1/auth/check with a live
# session (forward auth) and POST /admin/v1/sessions/introspect with an introspect-scoped admin
# token (session introspection). One server under callgrind, collection switched on after a warm-up
# of each route; `wrk -t1 -c4` drives each route for SECONDS and the profile is dumped after each,
# so every figure covers only its own route's requests (total Ir / completed requests). Each is
# printed with and without libmicrohttpd's memset (MHD 0.9.75 zeroes its connection pool on every
# request, about 49,000 Ir that stand for very little time). Every answer is checked
# (Benchmarks/wrk/checked.lua): one wrong one fails the run. Not timed: the counts do not depend
# on what else the machine runs. Profiles stay in .build/bench/route-instructions.callgrind.*.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build/bench

SECONDS_PER_ROUTE=${BENCH_ROUTE_SECONDS:-6}
BIN=.build/release
work=$(mktemp -d)
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
profile="$PWD/.build/bench/route-instructions.callgrind"
rm -f "$profile".*

. Benchmarks/review-server.sh
write_review_config
admin_token=$(mint_introspect_token)
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$profile" \
  "$BIN/portvakt" serve --config "$work/config.json" >"$work/portvakt.out" 2>"$work/portvakt.log" &
server=$!
# valgrind starts the server slowly.
public_port=$(wait_for_listener "$work/portvakt.log" public 60 "$server")
admin_port=$(wait_for_listener "$work/portvakt.log" admin 60 "$server")
session=$(review_session "$public_port")

# route: seconds name url status body-pattern method body bearer; prints the completed requests.
drive() {
  BENCH_EXPECT_STATUS=$4 BENCH_EXPECT_BODY=$5 BENCH_METHOD=$6 BENCH_BODY=$7 BENCH_BEARER=$8 \
    wrk -t1 -c4 -d"$1s" -s Benchmarks/wrk/checked.lua "$3" >"$work/wrk-$2.txt"
  checked_answers "$work/wrk-$2.txt" "$2"
}
alive() { drive "$1" alive "http://127.0.0.1:$public_port/health/alive" 200 '"alive"' GET "" ""; }
check() { drive "$1" check "http://127.0.0.1:$public_port/v1/auth/check" 204 "" GET "" "$session"; }
introspect() {
  drive "$1" introspect "http://127.0.0.1:$admin_port/admin/v1/sessions/introspect" 200 '"active" *: *true' \
    POST "{\"token\": \"$session\"}" "$admin_token"
}

figures=()
dump=0
for route in alive check introspect; do
  "$route" 2 >/dev/null # warm-up, not collected
  callgrind_control -i on "$server" >/dev/null 2>&1
  requests=$("$route" "$SECONDS_PER_ROUTE")
  callgrind_control -i off "$server" >/dev/null 2>&1
  callgrind_control -d "$server" >/dev/null 2>&1
  dump=$((dump + 1))
  file="$profile.$dump"
  for _ in $(seq 1 100); do [ -s "$file" ] && break; sleep 0.1; done
  total=$(awk '$1 == "totals:" {print $2}' "$file")
  [ -n "$total" ] || total=$(awk '$1 == "summary:" {print $2}' "$file")
  [ -n "$total" ] || { echo "no totals in $file" >&2; exit 1; }
  memset=$(callgrind_annotate --threshold=100 "$file" 2>/dev/null |
    awk '/memset/ {gsub(",", "", $1); sum += $1} END {print sum + 0}')
  figures+=("route.${route}_instructions_per_request=$((total / requests)):Ir"
    "route.${route}_instructions_without_mhd_memset=$(((total - memset) / requests)):Ir")
done

python3 Benchmarks/record.py "server instructions per request (callgrind Ir; wrk -t1 -c4, ${SECONDS_PER_ROUTE} s per route after a warm-up; SQLite; every answer checked)" \
  "${figures[@]}"
