#!/usr/bin/env bash
# The backend tests: what an app's own servers do to trust Portvakt, checked with independent
# libraries from PyPI (PyJWT for access tokens). pytest runs every *_test.py in this folder; each
# test starts its own `portvakt serve` (the debug build) on free loopback ports with a throwaway
# data directory and a clean PORTVAKT_* environment (conftest.py).
#
# Expects the debug build (`make test` builds it first) and python3 with venv (Tools/install-deps.sh
# test). The libraries live in a venv under .build/, created or updated only when
# Tests/Backends/requirements.txt changes. `make test` runs this inside
# `Tools/postgres-test-cluster.sh run`, so a test that needs PostgreSQL finds
# PORTVAKT_TEST_POSTGRES_URL. Extra arguments go to pytest (e.g. -k rotation).
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/python-venv.sh

venv=.build/backends-venv
requirements=Tests/Backends/requirements.txt
python_venv "$venv" "$requirements"

binary=$(debug_binary)

# Every *_test.py in the folder, so a new suite needs no change here. No cache in the work tree.
shopt -s nullglob
suites=(Tests/Backends/*_test.py)
[ ${#suites[@]} -gt 0 ] || { echo "no Tests/Backends/*_test.py" >&2; exit 1; }
PORTVAKT_BINARY="$binary" exec "$venv/bin/python" -m pytest -p no:cacheprovider -q -rA "${suites[@]}" "$@"
