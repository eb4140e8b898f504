#!/usr/bin/env bash
# The kernel's side of a passkey login, which callgrind does not see: the system calls the
# release `portvakt serve` makes per complete login, on the same fixed workload as
# Benchmarks/login-instructions.sh (the main run's 10,000 users, SQLite on disk, one client, after
# WARMUP logins). `strace -f -c` is attached to every server thread after the warm-up and detached
# after exactly LOGINS logins (bench-login --strace), so the counts are those logins' alone.
# Counts, not times: strace slows every call, but what a login asks of the kernel is the same
# whatever else the machine runs (the WAL's pwrites, the page reads a reader's dropped cache costs,
# the file locks, the socket calls).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build/bench

LOGINS=${BENCH_SYSCALLS_LOGINS:-2000}
WARMUP=${BENCH_SYSCALLS_WARMUP:-50}
table="$PWD/.build/bench/login-syscalls.txt"
rm -f "$table"

.build/release/bench-login --binary .build/release/portvakt --logins "$LOGINS" --warmup "$WARMUP" \
  --clients 1 --strace "$table" >/dev/null

# strace -c's table: "% time  seconds  usecs/call  calls  [errors]  syscall", then a total line.
# shellcheck disable=SC2046
python3 Benchmarks/record.py "server system calls per complete passkey login (strace -c; $LOGINS logins after $WARMUP warm-up, 1 client, 10,000 users, SQLite; $table)" \
  $(python3 - "$table" "$LOGINS" <<'PY'
import sys
path, logins = sys.argv[1], int(sys.argv[2])
calls = {}
for line in open(path):
    fields = line.split()
    if len(fields) < 5 or not fields[0][0].isdigit() or fields[-1] == "total":
        continue
    calls[fields[-1]] = int(fields[3])
if not calls:
    sys.exit(f"no system calls counted in {path}")
shown = ["pwrite64", "pread64", "fcntl", "sendmsg", "recvfrom", "poll", "futex", "getrandom", "fdatasync"]
for name in shown:
    print(f"login.syscalls_{name}={calls.get(name, 0) / logins:.2f}:calls")
print(f"login.syscalls_total={sum(calls.values()) / logins:.2f}:calls")
PY
)
