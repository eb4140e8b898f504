#!/usr/bin/env bash
# How much of the server's CPU per passkey login is storage and how much is the signature check:
# the release `portvakt` of the committed tree (HEAD) is built again, in a temporary worktree, with
# Benchmarks/experiments/skip-storage-and-verify.patch applied (environment switches that skip
# the login's passkey read after a user's first, its commit, or its signature check; never part of
# the product), and `bench-login --main-only` at CLIENTS clients runs each variant in turn, ROUNDS
# times, on a fresh database each (the same users, clients and checked answers as `make bench`).
# Prints each run and the medians: server CPU per login, logins/s, p99, and the ratio to the raw
# P-256 verify measured in the same run. Findings: Docs/performance.md, "What storage costs".
#
# Usage: Benchmarks/storage-share.sh [ROUNDS] [CLIENTS]   (defaults 3 and 16; needs `make bench`'s
# build of bench-login). Not part of `make bench`: about 2.5 minutes to build and 80 s a round.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} clients=${2:-16}
[ -x .build/release/bench-login ] || { echo "build bench-login first (make bench)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'git worktree remove --force "$work/tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/tree" HEAD >/dev/null
git -C "$work/tree" apply "$PWD/Benchmarks/experiments/skip-storage-and-verify.patch" ||
  { echo "the patch no longer applies to this tree: refresh it" >&2; exit 1; }
# This tree's Makefile, run in the worktree (its CURDIR), builds with the release flags of the day.
make -s -f "$PWD/Makefile" -C "$work/tree" release >/dev/null
binary="$work/portvakt-experiment"
cp "$work/tree/.build/release/portvakt" "$binary"

variants=("full|" "no commit|BENCH_SKIP_COMMIT=1" "no storage|BENCH_SKIP_READ=1 BENCH_SKIP_COMMIT=1"
  "no verify|BENCH_SKIP_VERIFY=1" "no storage, no verify|BENCH_SKIP_READ=1 BENCH_SKIP_COMMIT=1 BENCH_SKIP_VERIFY=1")
results="$work/results.txt"
for round in $(seq "$rounds"); do
  for variant in "${variants[@]}"; do
    label="${variant%%|*}" switches="${variant#*|}"
    # shellcheck disable=SC2086
    figures="$(env $switches .build/release/bench-login --binary "$binary" --seconds 10 --main-only \
      --no-postgresql --clients "$clients")"
    line="$(python3 - "$label" "$clients" $figures <<'PY'
import sys
sys.path.insert(0, "Benchmarks")
from record import parse
label, clients = sys.argv[1], sys.argv[2]
f = {name: value for name, (value, _) in parse(sys.argv[3:]).items()}
c = f"login.c{clients}_"
print(f"{label}|{f[c + 'server_cpu_per_login']:.0f}|{f[c + 'logins_per_second']:.0f}|{f[c + 'p99']:.2f}"
      f"|{f['login.raw_p256_verify_cost']:.1f}")
PY
)"
    echo "$line" >>"$results"
    IFS='|' read -r _ cpu rate p99 raw <<<"$line"
    printf 'round %s  %-22s server CPU/login %4s µs  %5s logins/s  p99 %6s ms  (raw verify %s µs)\n' \
      "$round" "$label" "$cpu" "$rate" "$p99" "$raw"
  done
done
echo
python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, cpu, rate, p99, raw = line.strip().split("|")
    rows.setdefault(label, []).append((float(cpu), float(rate), float(p99), float(raw)))
print(f"{'medians':24s}{'CPU/login µs':>14s}{'x raw verify':>14s}{'logins/s':>10s}{'p99 ms':>9s}")
for label, runs in rows.items():
    median = lambda i: statistics.median(r[i] for r in runs)
    ratio = statistics.median(r[0] / r[3] for r in runs)
    print(f"{label:24s}{median(0):14.0f}{ratio:14.2f}{median(1):10.0f}{median(2):9.2f}")
PY
