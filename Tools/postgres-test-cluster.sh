#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: initdb into a fresh temporary folder, listening on
# 127.0.0.1 on a free port with TLS (its own test CA), a password-protected test role owning a test
# database. Nothing of Debian's own clusters is touched.
#
# Usage: Tools/postgres-test-cluster.sh start     start one (stops this checkout's previous one)
#        Tools/postgres-test-cluster.sh url       print its connection URL (holds the password)
#        Tools/postgres-test-cluster.sh pid       print its server's process id (the postmaster)
#        Tools/postgres-test-cluster.sh stop      stop it and remove its folder
#        Tools/postgres-test-cluster.sh pause     stop the server, keeping its folder (a fault test's outage)
#        Tools/postgres-test-cluster.sh resume    start it again on the same port
#        Tools/postgres-test-cluster.sh run CMD…  start, run CMD with PORTVAKT_TEST_POSTGRES_URL and
#                                                 PORTVAKT_REQUIRE_POSTGRES=1 set, stop (also when
#                                                 CMD fails), exit with CMD's status
# PORTVAKT_TEST_POSTGRES_DURABLE=1 at `start` keeps PostgreSQL's shipped durability (fsync,
# synchronous_commit, full_page_writes on), as the benchmarks need; tests leave it off.
# The server runs as the `postgres` system user when this runs as root (initdb refuses root), as
# the calling user otherwise. Needs Debian's `postgresql` and `openssl` (Tools/install-deps.sh test).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
# Where this checkout records its running cluster's folder, so `url` and `stop` find it.
state="${PORTVAKT_TEST_POSTGRES_STATE:-$repo/.build/postgres-test-cluster}"

bindir() {
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [ -x "$dir/initdb" ] || { echo "no PostgreSQL server in /usr/lib/postgresql (Tools/install-deps.sh test)" >&2; exit 1; }
  echo "$dir"
}

# Runs a command as the cluster's owner.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

make_certificates() {
  local dir="$1"
  # A CA of its own, and a server certificate for 127.0.0.1 and localhost, so the tests connect
  # with sslmode=verify-full as production should.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=Portvakt test PostgreSQL CA" -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=127.0.0.1" -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 2 -out "$dir/server.crt" \
    -extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n') 2>/dev/null
  rm -f "$dir/ca.key" "$dir/server.csr" "$dir/ca.srl"
  chmod 0600 "$dir/server.key"
  chmod 0644 "$dir/ca.crt"
}

start() {
  [ -f "$state" ] && stop
  local bin dir password port
  bin="$(bindir)"
  dir="$(mktemp -d "${TMPDIR:-/tmp}/portvakt-postgres.XXXXXX")"
  mkdir -p "$(dirname "$state")"
  echo "$dir" >"$state"
  make_certificates "$dir"
  password="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  if [ "$(id -u)" -eq 0 ]; then chown -R postgres: "$dir"; fi
  chmod 0700 "$dir"

  # Trust only on the Unix socket inside the 0700 folder (for the set-up below); TCP needs the
  # password, so the tests can check that a wrong one is refused.
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --encoding=UTF8 --locale=C \
    --auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
ssl = on
ssl_cert_file = '$dir/server.crt'
ssl_key_file = '$dir/server.key'
# English messages, whatever the machine's locale: the tests read none, operators' logs do.
lc_messages = 'C'
EOF
  if [ "${PORTVAKT_TEST_POSTGRES_DURABLE:-0}" = 1 ]; then
    # Measured as production runs: every commit waits for its WAL on disk.
    cat >>"$dir/data/postgresql.conf" <<EOF
fsync = on
synchronous_commit = on
full_page_writes = on
EOF
  else
    # A throwaway cluster for tests: durability buys nothing here.
    cat >>"$dir/data/postgresql.conf" <<EOF
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  fi
  cat >>"$dir/data/postgresql.conf" <<EOF
# The deadlock test waits this long before the server detects the cycle.
deadlock_timeout = '100ms'
max_connections = 400
EOF

  # Another process may take the port between choosing it and binding it: try a few.
  local attempt
  for attempt in 1 2 3 4 5; do
    port="$(free_port)"
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $port" -w -t 30 start >/dev/null; then
      break
    fi
    [ "$attempt" -eq 5 ] && { tail -n 20 "$dir/server.log" >&2; exit 1; }
  done

  as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d postgres \
    -v password="$password" <<'EOF'
-- CREATEDB: store and app tests give each test a fresh database of its own (CREATE DATABASE).
CREATE ROLE portvakt_test LOGIN CREATEDB PASSWORD :'password';
CREATE DATABASE portvakt_test OWNER portvakt_test;
EOF
  echo "$port" >"$dir/port"
  echo "postgresql://portvakt_test:$password@127.0.0.1:$port/portvakt_test?sslmode=verify-full&sslrootcert=$dir/ca.crt" \
    >"$dir/url"
  echo "PostgreSQL test cluster on 127.0.0.1:$port ($dir)"
}

url() {
  [ -f "$state" ] || { echo "no test cluster is running (start one first)" >&2; exit 1; }
  cat "$(cat "$state")/url"
}

pid() {
  [ -f "$state" ] || { echo "no test cluster is running (start one first)" >&2; exit 1; }
  head -n 1 "$(cat "$state")/data/postmaster.pid"
}

stop() {
  [ -f "$state" ] || return 0
  local dir
  dir="$(cat "$state")"
  if [ -f "$dir/data/postmaster.pid" ]; then
    # immediate: nothing in a throwaway cluster needs a clean shutdown.
    as_owner "$(bindir)/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  case "$dir" in
    */portvakt-postgres.*) rm -rf "$dir" ;;
  esac
  rm -f "$state"
}

# An outage for a fault test: the server stops at once (as a crash would), the folder stays.
pause() {
  [ -f "$state" ] || { echo "no test cluster is running (start one first)" >&2; exit 1; }
  as_owner "$(bindir)/pg_ctl" -D "$(cat "$state")/data" -m immediate -w stop >/dev/null
}

# The end of the outage: the same cluster on the same port, so clients reconnect to the same URL.
resume() {
  [ -f "$state" ] || { echo "no test cluster is running (start one first)" >&2; exit 1; }
  local dir
  dir="$(cat "$state")"
  as_owner "$(bindir)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $(cat "$dir/port")" -w -t 30 start \
    >/dev/null
}

run() {
  start
  trap stop EXIT
  PORTVAKT_TEST_POSTGRES_URL="$(url)"
  export PORTVAKT_TEST_POSTGRES_URL
  # A test suite that cannot reach PostgreSQL must fail here, not skip.
  export PORTVAKT_REQUIRE_POSTGRES=1
  local status=0
  "$@" || status=$?
  exit "$status"
}

case "${1:-}" in
  start) start ;;
  url) url ;;
  pid) pid ;;
  stop) stop ;;
  pause) pause ;;
  resume) resume ;;
  run)
    shift
    [ $# -gt 0 ] || { echo "usage: $0 run COMMAND [ARGUMENT…]" >&2; exit 2; }
    run "$@"
    ;;
  *)
    echo "usage: $0 start|url|pid|stop|pause|resume|run COMMAND…" >&2
    exit 2
    ;;
esac
