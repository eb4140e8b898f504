#!/usr/bin/env bash
# Where the release server's threads stop running during passkey logins, per login: a timed
# `bench-login --main-only` run at CLIENTS clients (default 16) and, on its server,
#   - voluntary and involuntary context switches, summed over the server's threads from
#     /proc/PID/task/*/status across 4 s of the run, divided by the logins in those seconds;
#   - one second of `perf record -e sched:sched_switch` with DWARF call graphs (libc has no frame
#     pointers), each switch put under the first cause its stack names: waiting for the next
#     request (libmicrohttpd's poll), a group commit's follower waiting for its leader, waiting for
#     a pooled reader connection, a lock, preempted (still runnable), or other (the log writer,
#     dispatch's own threads).
# A thread per connection pays one switch each time its connection has nothing to read, so the
# floor is one per request; the rest is what the figures here separate.
# Usage: Benchmarks/switches.sh [CLIENTS]; BIN overrides the server binary, KEEP=FILE keeps the
# `perf script` output of the recorded switches.
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-16}
BIN=${BIN:-.build/release/portvakt}
work="$(mktemp -d)"
trap '[ -n "${KEEP:-}" ] && cp "$work/script.txt" "$KEEP"; rm -rf "$work"' EXIT
.build/release/bench-login --binary "$BIN" --seconds 10 --main-only --no-postgresql \
  --clients "$clients" >"$work/run.txt" 2>&1 &
bench=$!
server=""
for _ in $(seq 100); do
  server="$(pgrep -f -- "$(basename "$BIN") serve --config" | head -n 1 || true)"
  [ -n "$server" ] && break
  sleep 0.1
done
[ -n "$server" ] || { echo "no server appeared" >&2; exit 1; }
sleep 5 # seeding and the warm-up second
switches() { cat /proc/"$server"/task/*/status 2>/dev/null |
  awk '/^voluntary_ctxt_switches/ {v += $2} /^nonvoluntary_ctxt_switches/ {n += $2} END {print v, n}'; }
read -r voluntary1 involuntary1 < <(switches)
sleep 4
read -r voluntary2 involuntary2 < <(switches)
perf record -e sched:sched_switch --call-graph dwarf,16384 -p "$server" -o "$work/perf.data" \
  -- sleep 1 >/dev/null 2>&1
wait "$bench"
perf script -i "$work/perf.data" -F comm,event,trace,ip,sym 2>/dev/null >"$work/script.txt"
python3 - "$work/run.txt" "$work/script.txt" "$clients" \
  "$voluntary1" "$voluntary2" "$involuntary1" "$involuntary2" <<'PY'
import re, sys
run, script, clients = sys.argv[1], sys.argv[2], sys.argv[3]
v1, v2, n1, n2 = map(int, sys.argv[4:8])
text = open(run).read()
match = re.search(rf"c{clients}_logins_per_second=(\d+)", text)
if not match:
    sys.exit("bench-login printed no logins/s:\n" + text[-2000:])
logins = int(match.group(1)) * 4
print(f"switches.c{clients}_voluntary_per_login      {(v2 - v1) / logins:6.2f}")
print(f"switches.c{clients}_involuntary_per_login    {(n2 - n1) / logins:6.2f}")
# Each event: a header line (comm, event, prev_state=...), then its stack, then a blank line.
causes = {}
for event in open(script).read().split("\n\n"):
    lines = event.strip().splitlines()
    if not lines:
        continue
    header, stack = lines[0], " ".join(lines[1:])
    if re.search(r"prev_state=R\+?\b", header):
        cause = "preempted (still runnable)"
    elif "GroupCommit" in stack:
        cause = "group commit: a follower waiting for its leader"
    elif "ConnectionPool" in stack or ("Semaphore" in stack and "7Storage" in stack):
        # The pool's wait is inlined into the store's read (a DispatchSemaphore under SQLStore).
        cause = "waiting for a pooled reader connection"
    elif "do_sys_poll" in stack or "__poll" in stack:
        cause = "waiting for the next request (poll)"
    elif re.search(r"Locked|pthread_mutex|malloc|calloc|swift_slowAlloc", stack):
        cause = "a lock (malloc's arena locks included)"
    else:
        cause = "other"
    causes[cause] = causes.get(cause, 0) + 1
total = sum(causes.values()) or 1
print(f"of {total} switches recorded in 1 s, by cause:")
for cause, count in sorted(causes.items(), key=lambda item: -item[1]):
    print(f"  {100 * count / total:5.1f}%  {cause}")
PY
