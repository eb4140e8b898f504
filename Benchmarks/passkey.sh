#!/usr/bin/env bash
# Passkey assertion benchmark: full path (JSON in, VerifiedAuthentication out) against raw OpenSSL
# verification of the same signature, for ES256, EdDSA and RS256, one thread, in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
# Pinned to one core (the last), so the raw and full-path figures share it and the ratio is fair.
pin=()
if command -v taskset >/dev/null 2>&1; then pin=(taskset -c "$(($(nproc) - 1))"); fi
# shellcheck disable=SC2046
python3 Benchmarks/record.py "passkey verification (one core, median of rounds)" $("${pin[@]}" .build/release/bench-passkey)
