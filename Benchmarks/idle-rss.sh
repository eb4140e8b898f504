#!/usr/bin/env bash
# Idle resident memory of the release `portvakt serve` (issue 17's target: under 20 MB), measured
# as Docs/performance-memory.md says: Config/development.json with a fresh dataDirectory and both
# listen ports 0 (so the BankID simulator runs in-process, as in development); after both
# "listening" lines, wait 2 s and read VmRSS. RUNS runs (default 3); the last run's breakdown by
# mapping (the binary's own pages, anonymous memory, each shared library) goes to
# .build/bench/idle-rss-breakdown.txt. Prints the figures and records them (Benchmarks/record.py).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/portvakt}
RUNS=${RUNS:-3}
mkdir -p .build/bench
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

. Benchmarks/idle-server.sh
write_idle_config

# Sums /proc/PID/smaps by mapping: the binary, anonymous (heap, stacks), each library.
breakdown() {
  awk -v bin="$(readlink -f "$BIN")" '
    /^[0-9a-f]+-[0-9a-f]+ / { name = (NF >= 6 ? $6 : "[anon]"); if (name == bin) name = "portvakt (binary)"; next }
    /^Rss:/ { rss[name] += $2; total += $2 }
    /^Anonymous:/ { anon += $2 }
    END {
      printf "%8d kB  total Rss\n", total
      printf "%8d kB  of which Anonymous\n", anon
      for (n in rss) if (rss[n] > 0) printf "%8d kB  %s\n", rss[n], n | "sort -nr"
    }' "/proc/$1/smaps"
}

values=()
for run in $(seq 1 "$RUNS"); do
  rm -rf "$work/data"
  : >"$work/log"
  "$BIN" serve --config "$work/config.json" >"$work/out" 2>"$work/log" &
  pid=$!
  wait_for_listeners "$work/log" 20
  sleep 2
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
  threads=$(ls "/proc/$pid/task" | wc -l)
  values+=("$rss")
  echo "run $run: VmRSS $rss kB, $threads threads"
  if [ "$run" = "$RUNS" ]; then
    breakdown "$pid" >.build/bench/idle-rss-breakdown.txt
    for t in /proc/$pid/task/*; do cat "$t/comm"; done | sort | uniq -c >>.build/bench/idle-rss-breakdown.txt
    # Then the same server after requests: 150 login starts (the development configuration's
    # auth burst is 200) and 1,000 readiness checks on one keep-alive connection, every answer
    # checked (the code a request needs comes back).
    port=$(sed -n 's/.*"address":"127.0.0.1:\([0-9]*\)","listener":"public".*/\1/p' "$work/log")
    python3 - "$port" <<'PY'
import http.client, sys
connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
for index in range(1000):
    if index < 150:
        connection.request(
            "POST", "/v1/passkeys/login/initialize", body=b"{}", headers={"Content-Type": "application/json"})
        response = connection.getresponse(); response.read()
        assert response.status == 200, response.status
    connection.request("GET", "/health/ready")
    response = connection.getresponse(); response.read()
    assert response.status == 200, response.status
PY
    loaded=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
    echo "after 1,150 requests: VmRSS $loaded kB"
  fi
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
done

median=$(printf '%s\n' "${values[@]}" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
mb=$(awk "BEGIN {printf \"%.1f\", $median / 1024}")
echo "idle RSS (median of $RUNS): $mb MB (target < 20 MB); breakdown: .build/bench/idle-rss-breakdown.txt"
python3 Benchmarks/record.py "idle resident memory of portvakt serve (development config, BankID simulator in-process, median of $RUNS runs; then after 1,150 requests)" \
  "serve.idle_rss_development=$mb:MB" \
  "serve.rss_after_requests_development=$(awk "BEGIN {printf \"%.1f\", $loaded / 1024}"):MB"
