#!/usr/bin/env bash
# SQLite's own cost for the writes of one passkey login, without the server around it
# (Benchmarks/StorageProbe/login_writes.c says what it does): today's schema with random and with
# time-ordered session keys, two other sessions tables, and an append-only journal of logins folded
# into today's tables off the commit (with its fold, and the commit alone); one login per
# transaction and group commits of 4 and 16; ROUNDS runs of each (alternating), medians printed.
# Each run starts from a fresh database that this tree's `portvakt migrate` made.
#
# Usage: Benchmarks/storage-probe.sh [ROUNDS] [LOGINS]   (defaults 3 and 30000; needs the release
# portvakt, `make release`). Not part of `make bench`: about three minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} logins=${2:-30000}
[ -x .build/release/portvakt ] || { echo "build the release portvakt first (make release)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
gcc -O2 -Wall -o "$work/login_writes" Benchmarks/StorageProbe/login_writes.c -lsqlite3
mkdir "$work/data"
PORTVAKT_DATA="$work/data" .build/release/portvakt migrate >/dev/null
fresh="$work/data/portvakt.sqlite"
for round in $(seq "$rounds"); do
  for variant in random-keys today split-token clustered journal journal-commit-only; do
    for batch in 1 4 16; do
      cp "$fresh" "$work/run.sqlite"
      rm -f "$work/run.sqlite-wal" "$work/run.sqlite-shm"
      echo "$variant $batch $("$work/login_writes" "$work/run.sqlite" "$variant" "$batch" "$logins")"
    done
  done
done >"$work/results.txt"
python3 - "$work/results.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    variant, batch, cpu = line.split()
    runs.setdefault(variant, {}).setdefault(int(batch), []).append(float(cpu))
print("SQLite CPU per login, µs (median of the rounds): the login's writes alone, one thread")
print(f"{'variant':20s}" + "".join(f"{'batch ' + str(b):>11s}" for b in (1, 4, 16)))
for variant, batches in runs.items():
    print(f"{variant:20s}" + "".join(f"{statistics.median(batches[b]):11.1f}" for b in (1, 4, 16)))
PY
