# Sourced by Benchmarks/http.sh and Benchmarks/route-instructions.sh: a `portvakt serve` on the
# embedded default (SQLite) as an app backend meets it, with the review account for a real session
# over HTTP without a browser (as in Tests/Contract/run.sh), an introspect-scoped admin token, and
# wrk runs whose every answer is checked. Needs `work` (a temporary directory) and `BIN` set.

review_user=bench.reviewer
review_code="bench-$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
# For every `portvakt` the sourcing script starts, whatever wraps it (valgrind, a pid kept for RSS).
export PORTVAKT_DATA="$work/data" PORTVAKT_REVIEW_CODE="$review_code"

# write_review_config [THREADS]: $work/config.json on free ports (with THREADS, a pool of that
# many HTTP threads; without, the default thread per connection). wrk's connections all come from
# 127.0.0.1, so the per-address cap (64 by default) is lifted to the total one; rateLimits.backend
# (forward auth and introspection) is raised so wrk measures the routes, not 429s; /health/alive's
# class keeps its default.
write_review_config() {
  local threads=""
  [ -n "${1:-}" ] && threads="\"threading\": \"pool\", \"threads\": $1, "
  cat >"$work/config.json" <<JSON
{"listen": {"public": {"port": 0}, "admin": {"port": 0}}, "http": {$threads"perAddressConnectionLimit": 1024},
 "rateLimits": {"backend": {"burst": 100000, "perSecond": 100000}},
 "reviewAccount": {"enabled": true, "username": "$review_user"}}
JSON
}

# mint_introspect_token: an introspect-scoped admin token in the database, minted before the start
# (printed once on a line of its own), the way an app server gets one.
mint_introspect_token() {
  local token
  token=$("$BIN/portvakt" admin token create --name bench-introspect --scope introspect --config "$work/config.json" \
    | sed -n 's/^ *\(pva_[^ ]*\)$/\1/p')
  [ -n "$token" ] || { echo "portvakt admin token create printed no token" >&2; return 1; }
  echo "$token"
}

# wait_for_listener LOG LISTENER SECONDS [PID]: the port from LISTENER's {"msg":"listening"} line
# in LOG, once it is there; fails (printing the log) after SECONDS or when PID has exited.
wait_for_listener() {
  local port
  for _ in $(seq 1 $(($3 * 20))); do
    port=$(python3 - "$1" "$2" <<'PY' 2>/dev/null || true
import json, sys
for line in open(sys.argv[1]):
    try:
        entry = json.loads(line)
    except ValueError:
        continue
    if entry.get("msg") == "listening" and entry.get("listener") == sys.argv[2]:
        print(entry["address"].rsplit(":", 1)[1]); break
PY
)
    [ -n "$port" ] && { echo "$port"; return 0; }
    if [ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null; then break; fi
    sleep 0.05
  done
  echo "no $2 listener in $1" >&2; cat "$1" >&2; return 1
}

# review_session PORT: a native session token for the review account (the token comes in the body).
review_session() {
  local token
  token=$(curl -fsS --max-time 30 -X POST -H 'Content-Type: application/json' \
    -d "{\"username\": \"$review_user\", \"code\": \"$review_code\", \"client\": \"native\"}" \
    "http://127.0.0.1:$1/v1/review/login" | python3 -c 'import json, sys; print(json.load(sys.stdin)["session"]["token"])')
  [ -n "$token" ] || { echo "POST /v1/review/login gave no session token" >&2; return 1; }
  echo "$token"
}

# checked_answers FILE LABEL: how many answers Benchmarks/wrk/checked.lua saw in wrk's output FILE;
# exits the script (the run measures nothing) when one was wrong, none came, or wrk had socket errors.
checked_answers() {
  local answers wrong
  read -r answers wrong < <(sed -n 's/^checked: \([0-9]*\) answers, \([0-9]*\) wrong$/\1 \2/p' "$1")
  if [ -z "$answers" ] || [ "$answers" -eq 0 ] || [ "$wrong" -ne 0 ] || grep -q 'Socket errors' "$1"; then
    echo "$2: wrong answers, the run measures nothing:" >&2; cat "$1" >&2; exit 1
  fi
  echo "$answers"
}
