#!/usr/bin/env bash
# Runs every benchmark against the release build. Each prints a table and merges its figures
# into .build/bench/results.json ({"name": {"value": ..., "unit": ...}}).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build/bench
for bench in Benchmarks/idle-rss.sh Benchmarks/http.sh Benchmarks/passkey.sh Benchmarks/login.sh Benchmarks/login-instructions.sh Benchmarks/route-instructions.sh Benchmarks/login-syscalls.sh Benchmarks/bankid.sh; do
  "$bench"
done
echo
echo "figures: .build/bench/results.json"
