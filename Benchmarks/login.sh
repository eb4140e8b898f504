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
# shellcheck disable=SC2086
python3 Benchmarks/record.py "passkey logins over HTTP (64 clients, 10,000 users; SQLite on disk, synchronous=normal; pgN: PostgreSQL $version on loopback over TLS, durable: fsync, synchronous_commit, full_page_writes on, N instances; 1k vs 1M passkeys and idle vs slow BankID at 8 clients on SQLite)" \
  $figures
echo "targets: logins/s >= 50% of the one-core raw P-256 verify rate; p99 < 25 ms; p50 growth 1k->1M < 1.5x;"
echo "         p99 with a slow BankID (10 s, 200 pending orders polled) within 1.5x of idle"
echo "pgN CPU: server = the N portvakt processes summed; postgres = the cluster's postmaster and its children"
