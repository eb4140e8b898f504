#!/usr/bin/env bash
# Passkey assertion benchmark: full path (JSON in, VerifiedAuthentication out) against raw OpenSSL
# verification of the same signature, for ES256, EdDSA and RS256, one thread, in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC2046
python3 Benchmarks/record.py "passkey assertions (one thread, median of rounds)" $(.build/release/bench-passkey)
