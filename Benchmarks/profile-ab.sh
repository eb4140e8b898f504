#!/usr/bin/env bash
# Compares the server CPU per login of two or more release binaries on a machine whose speed
# drifts: for each binary in turn, ROUNDS times, a timed `bench-login --main-only` run at CLIENTS
# clients with `perf record` on its server for 4 s, and the server's samples by layer
# (Benchmarks/profile-layers.py) divided by OpenSSL's. OpenSSL's share is almost all the one P-256
# verify each login needs, a fixed amount of work, so "total/OpenSSL" is the server's CPU per
# login in units of that verify, measured in the same seconds: a slower machine moves both sides
# of the ratio alike, which the timed CPU-per-login figure alone does not (it moved by a third
# within minutes here). Also prints the layers that moved most often (kernel, SQLite, malloc and
# the Swift runtime) in the same unit, and the run's own server_cpu_per_login.
#
# Usage: Benchmarks/profile-ab.sh ROUNDS CLIENTS BINARY[=BENCH]... (each a `portvakt` release
# binary, driven by the bench-login of .build/release or, after `=`, by BENCH: a bench-login built
# from the same tree, needed when the trees' schemas differ, since bench-login seeds the database
# through the Storage module). Extra bench-login arguments in BENCH_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: $0 ROUNDS CLIENTS BINARY[=BENCH]..." >&2; exit 2; }
rounds=$1 clients=$2
shift 2
work="$(mktemp -d)"
bench=""
trap '[ -n "$bench" ] && kill "$bench" 2>/dev/null; rm -rf "$work"' EXIT
# shellcheck source=Benchmarks/bench-login-server.sh
. Benchmarks/bench-login-server.sh
for _ in $(seq "$rounds"); do
  for pair in "$@"; do
    binary="${pair%%=*}" driver=.build/release/bench-login
    [ "$pair" = "$binary" ] || driver="${pair#*=}"
    # shellcheck disable=SC2086
    start_bench_login "$driver" "$work/run.txt" --binary "$binary" --seconds 9 --main-only \
      --no-postgresql --clients "$clients" ${BENCH_ARGS:-}
    sleep 4 # the server's start and the warm-up second
    perf record -F 1000 -g -p "$server" -o "$work/perf.data" -- sleep 4 >/dev/null 2>&1
    wait "$bench"
    perf report -i "$work/perf.data" --no-children --stdio --sort dso,sym -g none 2>/dev/null |
      python3 Benchmarks/profile-layers.py perf >"$work/layers.txt"
    python3 - "$binary" "$work/layers.txt" "$work/run.txt" <<'PY'
import re, sys
binary, layers, run = sys.argv[1:4]
share = {}
for line in open(layers):
    match = re.match(r"\s*([\d.]+)%\s+(.*)", line)
    if match:
        share[match.group(2).strip()] = float(match.group(1))
openssl = share.get("OpenSSL")
if not openssl:
    sys.exit(f"no OpenSSL samples for {binary}")
runtime = share.get("malloc/free", 0) + share.get("Swift runtime (retain/release, alloc, casts)", 0)
cpu = " ".join(f for f in open(run).read().split() if "server_cpu_per_login" in f)
print(f"{binary}  total/OpenSSL {100 / openssl:5.2f}  kernel {share.get('kernel', 0) / openssl:5.2f}"
      f"  SQLite {share.get('SQLite', 0) / openssl:5.2f}  malloc+runtime {runtime / openssl:5.2f}  {cpu}")
PY
  done
done
