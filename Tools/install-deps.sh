#!/usr/bin/env bash
# Installs the Debian packages Portvakt needs, and only those that are missing.
# Libraries are detected with pkg-config (what SwiftPM itself uses), tools with `command -v`.
# Usage: Tools/install-deps.sh [build|test|bench]   (each level includes the ones before it)
set -euo pipefail

level="${1:-build}"
missing=()

need() { [[ " ${missing[*]} " == *" $1 "* ]] || missing+=("$1"); }
need_tool() { command -v "$1" >/dev/null 2>&1 || need "$2"; }
need_lib() { pkg-config --exists "$1" 2>/dev/null || need "$2"; }

need_tool pkg-config pkg-config
need_lib openssl libssl-dev
need_lib libcurl libcurl4-openssl-dev
need_lib sqlite3 libsqlite3-dev
need_lib libmicrohttpd libmicrohttpd-dev
need_lib gnutls libgnutls28-dev
need_lib libqrencode libqrencode-dev
# libpq: Storage's PostgreSQL engine links it, so every build needs it.
need_lib libpq libpq-dev
if [ "$level" = test ] || [ "$level" = bench ]; then
  # The browser test (Tests/Browser/run.sh): headless Chromium, its WebDriver, and a Python venv
  # for Selenium (installed from PyPI into .build/browser-venv by the test itself).
  need_tool chromium chromium
  need_tool chromedriver chromium-driver
  need_tool python3 python3
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need python3-venv
  # The contract test (Tests/Contract/run.sh): schemathesis and openapi-spec-validator in a venv
  # under .build/contract-venv (python3-venv above), curl to sign in and fetch the documents.
  need_tool curl curl
  # The backend tests (Tests/Backends/run.sh): PyJWT and cryptography (a prebuilt wheel) in a venv
  # under .build/backends-venv (python3-venv above); nothing more from Debian.
  # The PostgreSQL tests (and the login benchmark) run against a throwaway cluster
  # (Tools/postgres-test-cluster.sh): Debian's server binaries, and openssl for its certificates.
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need postgresql
  need_tool openssl openssl
  # The forward-auth test (ForwardAuthNginxTests) runs Debian's nginx, built with auth_request,
  # in front of Portvakt. It lives in /usr/sbin, which is not on every user's PATH.
  [ -x /usr/sbin/nginx ] || need nginx
fi
if [ "$level" = bench ]; then
  # The login benchmark's PostgreSQL runs use the test level's cluster (postgresql, openssl above).
  # wrk drives the HTTP benchmark; python3 prints the tables and merges results.json.
  need_tool wrk wrk
  need_tool python3 python3
  # Benchmarks/engines.sh compares libmicrohttpd with h2o: its probe is C on libh2o-evloop.
  need_lib libh2o-evloop libh2o-evloop-dev
  need_tool cc gcc
  # Benchmarks/login-instructions.sh counts a login's instructions under callgrind (its
  # callgrind_control and callgrind_annotate come in the same package).
  need_tool valgrind valgrind
  # Benchmarks/login-syscalls.sh counts a login's system calls with strace -c.
  need_tool strace strace
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "installing missing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
