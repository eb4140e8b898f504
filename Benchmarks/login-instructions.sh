#!/usr/bin/env bash
# Regression guard for the cost of a passkey login: the instructions (valgrind callgrind's Ir) the
# release `portvakt serve` executes per complete login (initialize + finalize over HTTP, SQLite on
# disk, the main run's 10,000 users), on a fixed workload: after WARMUP logins, callgrind collects
# only around exactly LOGINS logins from one client (bench-login --logins, see
# Benchmarks/Login/main.swift). Instruction counts do not depend on what else the machine runs,
# so a change that makes logins costlier shows up here as a number, beside the recorded figure in
# Benchmarks/baselines/login-instructions.json (a warning above 1.05x; not a failure: update the
# baseline in the commit that explains why a login got costlier).
# Also leaves callgrind's profile and its top entries (inclusive and self) in .build/bench.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build/bench

LOGINS=${BENCH_INSTRUCTIONS_LOGINS:-200}
WARMUP=${BENCH_INSTRUCTIONS_WARMUP:-50}
baseline_file=Benchmarks/baselines/login-instructions.json
profile="$PWD/.build/bench/login-instructions.callgrind"
rm -f "$profile"

# Run first, so a failure (any login not answered as it should be) stops the script here.
.build/release/bench-login --binary .build/release/portvakt --logins "$LOGINS" --warmup "$WARMUP" \
  --clients 1 --callgrind "$profile" >/dev/null

# The file's totals cover only what was collected: the measured logins.
total="$(awk '$1 == "totals:" {print $2}' "$profile")"
[ -n "$total" ] || total="$(awk '$1 == "summary:" {print $2}' "$profile")"
[ -n "$total" ] || { echo "no totals in $profile" >&2; exit 1; }
per_login=$((total / LOGINS))
baseline="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["instructions_per_login"])' "$baseline_file")"
# The first recorded figure, from before issue 17's changes, for the long view.
first="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["history"][0]["instructions_per_login"])' "$baseline_file")"
ratio="$(python3 -c "print(f'{$per_login / $baseline:.3f}')")"

# Where they go, for Docs/performance.md: the top entries, inclusive and self.
callgrind_annotate --inclusive=yes --threshold=100 "$profile" 2>/dev/null | head -n 60 \
  >.build/bench/login-instructions-inclusive.txt || true
callgrind_annotate --threshold=100 "$profile" 2>/dev/null | head -n 60 \
  >.build/bench/login-instructions-self.txt || true

python3 Benchmarks/record.py "server instructions per complete passkey login (callgrind Ir; $LOGINS logins after $WARMUP warm-up, 1 client, 10,000 users, SQLite; baseline: $baseline_file)" \
  "login.instructions_per_login=$per_login:Ir" \
  "login.instructions_per_login_baseline=$baseline:Ir" \
  "login.instructions_ratio_to_baseline=$ratio:x" \
  "login.instructions_per_login_before_issue17=$first:Ir"
if python3 -c "import sys; sys.exit(0 if $ratio > 1.05 else 1)"; then
  echo "WARNING: a login costs ${ratio}x the baseline's instructions (more than 1.05x): see .build/bench/login-instructions-*.txt" >&2
fi
