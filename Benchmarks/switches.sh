#!/usr/bin/env bash
# Where the release server's threads stop running during passkey logins, per login: a timed
# `bench-login --main-only` run at CLIENTS clients (default 16) and, on its server,
#   - voluntary and involuntary context switches, summed over the server's threads from
#     /proc/PID/task/*/status across 4 s of the run, divided by the logins in those seconds;
#   - one second of `perf record -e sched:sched_switch` with DWARF call graphs (libc has no frame
#     pointers), each switch put under the first cause its stack names: waiting for the next
#     request (libmicrohttpd's poll), a group commit's follower waiting for its leader's COMMIT or
#     its leader waiting for the writer, waiting for a pooled connection, a lock, preempted (still
#     runnable), or other (the log writer, dispatch's own threads).
# A thread per connection pays one switch each time its connection has nothing to read, so the
# floor is one per request; the rest is what the figures here separate.
# Usage: Benchmarks/switches.sh [CLIENTS]; BIN overrides the server binary, KEEP=FILE keeps the
# `perf script` output of the recorded switches.
set -euo pipefail
clients=${1:-16}
BIN=${BIN:-.build/release/portvakt}
# Resolved before the cd below, so a relative path means what it meant to the caller.
keep=""
[ -n "${KEEP:-}" ] && keep="$(realpath -m -- "$KEEP")"
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
bench=""
trap '[ -n "$bench" ] && kill "$bench" 2>/dev/null; rm -rf "$work"' EXIT
# shellcheck source=Benchmarks/bench-login-server.sh
. Benchmarks/bench-login-server.sh
start_bench_login .build/release/bench-login "$work/run.txt" --binary "$BIN" --seconds 10 \
  --main-only --no-postgresql --clients "$clients"
sleep 5 # the server's start, the warm-up second and the first seconds of the timed run
switches() { cat /proc/"$server"/task/*/status 2>/dev/null |
  awk '/^voluntary_ctxt_switches/ {v += $2} /^nonvoluntary_ctxt_switches/ {n += $2} END {print v, n}'; }
read -r voluntary1 involuntary1 < <(switches)
sleep 4
read -r voluntary2 involuntary2 < <(switches)
if ! perf record -e sched:sched_switch --call-graph dwarf,16384 -p "$server" -o "$work/perf.data" \
  -- sleep 1 >"$work/perf.txt" 2>&1; then
  echo "perf record failed:" >&2
  cat "$work/perf.txt" >&2
  exit 1
fi
wait "$bench"
bench=""
perf script -i "$work/perf.data" -F comm,event,trace,ip,sym 2>/dev/null >"$work/script.txt"
[ -z "$keep" ] || cp "$work/script.txt" "$keep"
python3 - "$work/run.txt" "$work/script.txt" "$clients" \
  "$voluntary1" "$voluntary2" "$involuntary1" "$involuntary2" <<'PY'
import re, sys
run, script, clients = sys.argv[1], sys.argv[2], sys.argv[3]
v1, v2, n1, n2 = map(int, sys.argv[4:8])
text = open(run).read()
match = re.search(rf"c{clients}_logins_per_second=(\d+)", text)
if not match:
    sys.exit("bench-login printed no logins/s:\n" + text[-2000:])
# The run's rate over all its seconds, the recorded one (slowed by perf's stack copies) included,
# stands for the 4 s the switches were counted in.
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
    elif re.search(r"GroupCommitC(4lead|6commit)", stack):
        # A leader waiting for the writer: lent to a point read, or held by the checkpointer.
        cause = "group commit: a leader waiting for the writer"
    elif "GroupCommit" in stack:
        cause = "group commit: a follower waiting for its leader's COMMIT"
    elif "ConnectionPool" in stack or ("Semaphore" in stack and "7Storage" in stack):
        # The pool's wait is inlined into the store's read (a DispatchSemaphore under SQLStore).
        cause = "waiting for a pooled connection"
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
