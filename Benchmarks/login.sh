#!/usr/bin/env bash
# Passkey login benchmark over HTTP (see Benchmarks/Login/main.swift for what it measures), on
# SQLite and, in the same run, on a PostgreSQL cluster of its own with one and two instances.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build/bench

# The bench's own cluster (its own state file, so the tests' cluster is left alone), with
# PostgreSQL's shipped durability: every commit waits for its WAL on disk, as in production.
# Stopped and removed at exit, also when the benchmark fails.
cluster=Tools/postgres-test-cluster.sh
export PORTVAKT_TEST_POSTGRES_STATE="$PWD/.build/bench/postgres-cluster"
trap '"$cluster" stop' EXIT
trap 'exit 130' INT TERM
PORTVAKT_TEST_POSTGRES_DURABLE=1 "$cluster" start >/dev/null
# The URL holds the password: it goes through the environment, never the command line or output.
PORTVAKT_TEST_POSTGRES_URL="$("$cluster" url)"
export PORTVAKT_TEST_POSTGRES_URL
postmaster="$("$cluster" pid)"
# The release the cluster script starts: the newest installed.
version="$("$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/postgres" --version | awk '{print $3}')"

# Run first, so a failure stops the script here (set -e does not see one inside $(…) arguments).
figures="$(.build/release/bench-login --binary .build/release/portvakt --seconds "${BENCH_LOGIN_SECONDS:-10}" \
  --postgres-pid "$postmaster")"
# Logins/s against the figure from before issue 17 (Benchmarks/baselines/login-throughput.json),
# both as a share of the raw P-256 verify rate of their own run, so that a slower or faster machine
# moves both alike (logins/s is wall-clock: compare on an otherwise idle machine).
# shellcheck disable=SC2086
figures="$figures $(python3 - Benchmarks/baselines/login-throughput.json $figures <<'PY'
import json, sys
sys.path.insert(0, "Benchmarks")
from record import parse
before = json.load(open(sys.argv[1]))["before"]
now = {name: value for name, (value, _) in parse(sys.argv[2:]).items()}
out = []
for clients, figure in sorted(before["runs"].items(), key=lambda item: int(item[0])):
    for run in ("", "_per_connection"):
        share = now.get(f"login.c{clients}{run}_share_of_raw")
        if share is not None:
            out.append(f"login.c{clients}{run}_logins_vs_before_issue17={share / figure['share_of_raw']:.2f}:x")
print(" ".join(out))
PY
)"
# shellcheck disable=SC2086
python3 Benchmarks/record.py "passkey logins over HTTP (16 and 64 clients, 10,000 users; SQLite on disk, synchronous=normal; cN: the default, http.threading pool with one worker per core; cN_per_connection: a thread per connection; c64_mixed: beside the 64 signing in, 8 clients that sign in, rename themselves and log out; pgN: PostgreSQL $version on loopback over TLS, durable: fsync, synchronous_commit, full_page_writes on, N instances, 64 clients; 1k vs 1M passkeys, idle vs slow BankID and a healthy vs a hanging webhook receiver at 8 clients on SQLite)" \
  $figures
echo "targets: server CPU per login <= 200 µs and <= 3.2x the raw verify cost (cN_server_cpu_to_raw_verify);"
echo "         logins/s >= 2x before issue 17 at 16 and 64 clients (cN_logins_vs_before_issue17);"
echo "         p99 < 10 ms at 16 clients, < 25 ms at 64 (p99.9 beside); p50 growth 1k->1M < 1.2x;"
echo "         (c64_mixed: the 64 clients' p99 with other writes beside them, no target: the threadings compared)"
echo "         p99 with a slow BankID (10 s, 200 pending orders polled) within 1.2x of idle;"
echo "         p99 with a hanging webhook receiver within 1.2x of a healthy one (about 20 events/s)"
echo "pgN CPU: server = the N portvakt processes summed; postgres = the cluster's postmaster and its children"
