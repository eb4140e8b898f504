# Sourced by Benchmarks/profile-ab.sh and Benchmarks/switches.sh, which watch the server of a timed
# bench-login run.
#
# start_bench_login DRIVER OUTPUT ARGS...: runs `DRIVER ARGS...` in the background with its output
# in OUTPUT, sets `bench` to its pid and `server` to the pid of the `serve --config` process it
# started (its own child, so never a server something else on the machine runs), and exits with
# the run's output when none appears within 10 s.
start_bench_login() {
  local driver=$1 output=$2
  shift 2
  "$driver" "$@" >"$output" 2>&1 &
  bench=$!
  server=""
  for _ in $(seq 100); do
    server="$(pgrep -P "$bench" -f -- 'serve --config' | head -n 1 || true)"
    [ -n "$server" ] && break
    sleep 0.1
  done
  if [ -z "$server" ]; then
    echo "bench-login started no server:" >&2
    cat "$output" >&2
    exit 1
  fi
}
