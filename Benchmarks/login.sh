#!/usr/bin/env bash
# Passkey login benchmark over HTTP (see Benchmarks/Login/main.swift for what it measures).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC2046
python3 Benchmarks/record.py "passkey logins over HTTP (SQLite on disk; 64 clients, 10,000 users; 1k vs 1M passkeys and idle vs slow BankID at 8 clients)" \
  $(.build/release/bench-login --binary .build/release/portvakt --seconds "${BENCH_LOGIN_SECONDS:-10}")
echo "targets: logins/s >= 50% of the one-core raw P-256 verify rate; p99 < 25 ms; p50 growth 1k->1M < 1.5x;"
echo "         p99 with a slow BankID (10 s, 200 pending orders polled) within 1.5x of idle"
