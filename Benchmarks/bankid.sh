#!/usr/bin/env bash
# BankID benchmark (see Benchmarks/BankID/main.swift): QR codes per second (as data and as SVG),
# and upstream collects per order under 50 concurrent pollers against the in-process simulator
# over mutual TLS.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC2046
python3 Benchmarks/record.py "BankID: QR codes and collect single-flight (50 pollers, ${BENCH_SECONDS:-10} s)" \
  $(.build/release/bench-bankid)
echo "targets: at most one upstream collect per order per 2 s poll interval (plus the first)"
