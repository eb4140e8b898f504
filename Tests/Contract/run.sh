#!/usr/bin/env bash
# The contract test: both listeners' OpenAPI documents, read live from a running server, must be
# valid OpenAPI 3.1, and a schema-driven fuzzer (schemathesis) run over each with a valid native
# session (public) and a write admin token (admin) must find no 5xx, no status, content type or
# body that breaks the document, and no hang.
#
# Expects the debug build (`make test` builds it first), python3 with venv, and curl
# (Tools/install-deps.sh test). Schemathesis and openapi-spec-validator live in a venv under
# .build/, created or updated only when Tests/Contract/requirements.txt changes.
#
# The server runs on free loopback ports with a throwaway data directory, the embedded BankID
# simulator, the review account on (its code in PORTVAKT_REVIEW_CODE, which gives the native
# session token), access tokens on (PORTVAKT_ACCESS_TOKEN_KEY, so the token and JWKS routes are
# fuzzed too), a webhook endpoint on a loopback port nothing listens on (PORTVAKT_WEBHOOK_CONTRACT:
# the fuzzer's changes fill the outbox, so the deliveries routes answer with real rows) and a
# stored write admin token minted with `portvakt admin token create` before
# the start (so no bootstrap token is made). Rate limits are raised so the fuzzer reaches the
# handlers instead of collecting 429s.
#
# The documents grow request and response schemas over time; nothing here names a body shape, so
# the test gets stricter by itself as they land.
#
# Knobs (environment):
#   CONTRACT_CHECKS           schemathesis checks (default: the strict set below; do not weaken it
#                             to get green, fix the server or the document instead)
#   CONTRACT_MAX_EXAMPLES     test cases per operation in the fuzzing phase (default 50)
#   CONTRACT_REQUEST_TIMEOUT  seconds one request may take (default 10)
#   CONTRACT_LISTENER_TIMEOUT seconds all schemathesis runs over one listener may take together
#                             before the one under way is killed (default 300)
#   CONTRACT_WORKERS          schemathesis workers (default 2)
#   CONTRACT_SEED             reproduce a run (schemathesis prints its seed)
#   CONTRACT_ST_ARGS          more `st run` options, split on spaces (e.g. --continue-on-failure)
# The last line is `contract: passed ...` or `contract: FAILED ...` (CI reads it).
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/python-venv.sh
root=$PWD
started=$SECONDS

# The strict set: every response must be a non-5xx with a declared status, content type and body.
STRICT_CHECKS=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance
checks=${CONTRACT_CHECKS:-$STRICT_CHECKS}
max_examples=${CONTRACT_MAX_EXAMPLES:-50}
request_timeout=${CONTRACT_REQUEST_TIMEOUT:-10}
listener_timeout=${CONTRACT_LISTENER_TIMEOUT:-300}
workers=${CONTRACT_WORKERS:-2}

# Operations that end the credentials the fuzzer runs with, or the account behind them. They are
# left out of each listener's main run; afterwards each is fuzzed in a run of its own, in the order
# listed, with fresh credentials (a newly minted session on the public listener) and with the list
# routes that hand out the ids they take. Schemathesis reuses ids it saw in responses, so
# DELETE /v1/me/sessions/{id} does end the current session and DELETE /admin/v1/users/{id} does
# delete the review account. The public listener runs first, so the admin runs cannot take the
# review account away from it; no admin route revokes admin tokens.
# shellcheck disable=SC2034 # read through namerefs in run_listener
{
  public_ending=("DELETE /v1/me/sessions/{id}" "POST /v1/logout")
  public_ending_sources=("GET /v1/me/sessions")
  admin_ending=("DELETE /admin/v1/users/{id}/sessions/{sid}" "DELETE /admin/v1/users/{id}/sessions"
    "PATCH /admin/v1/users/{id}" "DELETE /admin/v1/users/{id}")
  admin_ending_sources=("GET /admin/v1/users" "GET /admin/v1/users/{id}/sessions")
}

venv=.build/contract-venv
requirements=Tests/Contract/requirements.txt
python_venv "$venv" "$requirements"
py="$root/$venv/bin/python"
st="$root/$venv/bin/st"

binary=$(debug_binary)

# Reports, the fetched documents and schemathesis' example database (.hypothesis, which replays
# earlier failures first) stay under .build/contract; the server's state is thrown away.
work="$root/.build/contract"
mkdir -p "$work"
rm -f "$work"/*.json "$work"/*.log "$work"/*.junit.xml
dir=$(mktemp -d "${TMPDIR:-/tmp}/portvakt-contract-XXXXXX")
server_pid=

failures=()
fail() { failures+=("$1"); echo "contract: FAIL: $1" >&2; }

summary() {
  local elapsed=$((SECONDS - started))
  if [ ${#failures[@]} -eq 0 ]; then
    echo "contract: passed (OpenAPI 3.1 documents valid; schemathesis ${passes_run:-0} runs, checks $checks) in ${elapsed}s"
  else
    local joined
    joined=$(printf '%s; ' "${failures[@]}")
    echo "contract: FAILED: ${joined%; } (in ${elapsed}s)"
  fi
}

cleanup() {
  local status=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  [ -f "$dir/server.log" ] && cp "$dir/server.log" "$work/server.log"
  rm -rf "$dir"
  if [ "$status" -ne 0 ] && [ ${#failures[@]} -eq 0 ]; then
    failures+=("the harness stopped early (exit $status)")
  fi
  summary
  [ ${#failures[@]} -eq 0 ] || exit 1
}
trap cleanup EXIT
trap 'failures+=("interrupted"); exit 130' INT TERM

slug() { echo "$1" | tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9\n' '-' | tr -s '-' | sed 's/-$//'; }
free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
secret() { "$py" -c 'import secrets; print(secrets.token_hex(24))'; }
json_field() { "$py" -c 'import json, sys; value = json.load(sys.stdin)
for key in sys.argv[1:]: value = value[key]
print(value)' "$@"; }
# "METHOD /path" of every operation of a document that is in the given list.
present() {
  local document=$1; shift
  "$py" -c 'import json, sys
document = json.load(open(sys.argv[1]))
have = {f"{m.upper()} {p}" for p, item in document.get("paths", {}).items() for m in item}
for name in sys.argv[2:]:
    if name in have: print(name)' "$document" "$@"
}

# ---- The server. ----

port=$(free_port)
admin_port=$(free_port)
while [ "$admin_port" = "$port" ]; do admin_port=$(free_port); done
public_url="http://127.0.0.1:$port"
admin_url="http://127.0.0.1:$admin_port"
review_user=contract.reviewer
review_code="contract-$(secret)"
unlimited='{"burst": 100000, "perSecond": 100000}'
dead_port=$(free_port)
cat >"$dir/config.json" <<EOF
{
  "publicURL": "$public_url",
  "dataDirectory": "$dir/data",
  "listen": {"public": {"host": "127.0.0.1", "port": $port},
             "admin": {"host": "127.0.0.1", "port": $admin_port}},
  "logging": {"level": "info", "accessLog": true},
  "rateLimits": {"default": $unlimited, "auth": $unlimited, "admin": $unlimited, "bankid": $unlimited, "backend": $unlimited, "export": $unlimited},
  "reviewAccount": {"enabled": true, "username": "$review_user"},
  "accessTokens": {"enabled": true, "audience": "https://api.contract.example.se"},
  "webhooks": {"endpoints": [{"name": "contract", "url": "http://127.0.0.1:$dead_port/events", "events": ["*"],
                              "secretVariable": "PORTVAKT_WEBHOOK_CONTRACT"}],
               "timeoutSeconds": 1},
  "wellKnown": {
    "appleAppIDs": ["ABCDE12345.se.portvakt.contract"],
    "androidApps": [{"package": "se.portvakt.contract",
                     "sha256Fingerprints": ["$("$py" -c 'print(":".join(["AB"] * 32))')"]}],
    "relatedOrigins": ["https://contract.example.se"]
  }
}
EOF
# The access tokens' key-encryption key: base64 of 32 random bytes.
access_token_key=$("$py" -c 'import base64, secrets; print(base64.b64encode(secrets.token_bytes(32)).decode())')
# The webhook endpoint's signing secret, as Standard Webhooks writes one.
webhook_secret=$("$py" -c 'import base64, secrets; print("whsec_" + base64.b64encode(secrets.token_bytes(32)).decode())')
# The server refuses unknown PORTVAKT_ variables; give it only the ones it needs.
clean_env=()
for name in $(compgen -e); do [[ $name == PORTVAKT_* ]] && clean_env+=(-u "$name"); done
portvakt() {
  env "${clean_env[@]}" PORTVAKT_REVIEW_CODE="$review_code" PORTVAKT_ACCESS_TOKEN_KEY="$access_token_key" \
    PORTVAKT_WEBHOOK_CONTRACT="$webhook_secret" \
    "$binary" "$@"
}

# A write token in the database (the admin API's usual path), printed once on its own line.
admin_token=$(portvakt admin token create --name contract --scope write --config "$dir/config.json" \
  | sed -n 's/^ *\(pva_[^ ]*\)$/\1/p')
[ -n "$admin_token" ] || { fail "portvakt admin token create printed no token"; exit 1; }

# Not through the function: $! must be the server itself, for the trap to stop it.
env "${clean_env[@]}" PORTVAKT_REVIEW_CODE="$review_code" PORTVAKT_ACCESS_TOKEN_KEY="$access_token_key" \
  PORTVAKT_WEBHOOK_CONTRACT="$webhook_secret" \
  "$binary" serve --config "$dir/config.json" >"$dir/server.log" 2>&1 &
server_pid=$!

up=
for _ in $(seq 200); do
  kill -0 "$server_pid" 2>/dev/null || break
  if curl -fsS --max-time 1 -o /dev/null "$public_url/health/alive" 2>/dev/null; then up=1; break; fi
  sleep 0.1
done
if [ -z "$up" ]; then
  grep '^{' "$dir/server.log" | tail -30 >&2 || true
  fail "portvakt serve did not answer /health/alive within 20 s"
  exit 1
fi
echo "contract: portvakt serve on $public_url (admin $admin_url), data in $dir"

# A native session for the review account: the token comes in the body.
mint_session() {
  curl -fsS --max-time 10 -X POST -H 'Content-Type: application/json' \
    -d "{\"username\": \"$review_user\", \"code\": \"$review_code\", \"client\": \"native\"}" \
    "$public_url/v1/review/login" | json_field session token
}
session_works() { # $1: the token
  [ "$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" "$public_url/v1/me")" = 200 ]
}
admin_works() {
  [ "$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $admin_token" "$admin_url/admin/v1/config")" = 200 ]
}

session=$(mint_session) || { fail "POST /v1/review/login gave no native session token"; exit 1; }
session_works "$session" || { fail "the review session token does not open GET /v1/me"; exit 1; }
admin_works || { fail "the admin token does not open GET /admin/v1/config"; exit 1; }

# ---- The documents. ----

curl -fsS --max-time 10 -o "$work/public-openapi.json" "$public_url/openapi.json" \
  || { fail "GET /openapi.json on the public listener"; exit 1; }
status=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "$admin_url/openapi.json")
[ "$status" = 401 ] || fail "GET /openapi.json on the admin listener without a token is $status, not 401"
curl -fsS --max-time 10 -H "Authorization: Bearer $admin_token" -o "$work/admin-openapi.json" "$admin_url/openapi.json" \
  || { fail "GET /openapi.json on the admin listener"; exit 1; }
"$py" Tests/Contract/validate_openapi.py --public "$work/public-openapi.json" --admin "$work/admin-openapi.json" \
  || fail "the OpenAPI documents are not valid OpenAPI 3.1 (above)"

# ---- The fuzzer. ----

passes_run=0
deadline=0 # the current listener's, in $SECONDS
# run_pass NAME DOCUMENT BASE-URL TOKEN [schemathesis filter options...]
run_pass() {
  local name=$1 document=$2 url=$3 token=$4; shift 4
  local seed=() rc=0 budget=$((deadline - SECONDS))
  if [ "$budget" -lt 1 ]; then
    fail "[$name] not run: the listener's ${listener_timeout}s were spent"
    return
  fi
  [ -n "${CONTRACT_SEED:-}" ] && seed=(--seed "$CONTRACT_SEED")
  # shellcheck disable=SC2206 # split on spaces on purpose
  local extra=(${CONTRACT_ST_ARGS:-})
  # shellcheck disable=SC2054 # the commas are in values (the checks)
  local command=("$st" run "$document" --url "$url"
    -H "Authorization: Bearer $token"
    --checks "$checks"
    --phases examples,coverage,fuzzing
    --max-examples "$max_examples"
    --request-timeout "$request_timeout"
    --workers "$workers"
    --no-color
    --report junit --report-junit-path "$work/$name.junit.xml"
    "${seed[@]}" "${extra[@]}" "$@")
  echo "contract: [$name] st run $(basename "$document") --url $url -H 'Authorization: Bearer …' --checks $checks --phases examples,coverage,fuzzing --max-examples $max_examples --request-timeout $request_timeout --workers $workers ${seed[*]} ${extra[*]} $*"
  # Schemathesis writes .hypothesis/ and .schemathesis/ into its working directory.
  (cd "$work" && timeout --kill-after=10 "$budget" "${command[@]}") 2>&1 | tee "$work/$name.log" || rc=${PIPESTATUS[0]}
  # CPython 3.11's compiler sometimes fails inside schemathesis' own code generation ("AST
  # constructor recursion depth mismatch", a SystemError in the tool, not an answer of the
  # server's). That crash, and only it, gets up to two more runs, each with a new seed (it came
  # twice in a row once), within the listener's time; each is said here.
  local retries=0
  while [ "$rc" -ne 0 ] && [ "$retries" -lt 2 ] && grep -q "AST constructor recursion depth mismatch" "$work/$name.log"; do
    retries=$((retries + 1))
    budget=$((deadline - SECONDS))
    [ "$budget" -ge 1 ] || break
    echo "contract: [$name] schemathesis itself crashed (CPython AST recursion error); running it again ($retries of 2)"
    rc=0
    (cd "$work" && timeout --kill-after=10 "$budget" "${command[@]}") 2>&1 | tee "$work/$name.log" || rc=${PIPESTATUS[0]}
  done
  passes_run=$((passes_run + 1))
  case $rc in
    0) ;;
    124|137) fail "[$name] schemathesis was stopped: the listener's ${listener_timeout}s were spent (a hang?)" ;;
    *) fail "[$name] schemathesis found failures (exit $rc; $work/$name.log)" ;;
  esac
}

# run_listener NAME DOCUMENT BASE-URL TOKEN-COMMAND ENDING-ARRAY SOURCES-ARRAY
run_listener() {
  local name=$1 document=$2 url=$3 token_command=$4
  local -n ending=$5 sources=$6
  local excluded=() included=() present_ops=() source_ops=() op source token
  deadline=$((SECONDS + listener_timeout))
  for op in "${ending[@]}"; do excluded+=(--exclude-name "$op"); done
  token=$($token_command)
  run_pass "$name" "$document" "$url" "$token" "${excluded[@]}"
  if [ "$name" = public ] && ! session_works "$token"; then
    fail "[public] the session ended during the run: an operation that ends it is not in public_ending"
  fi
  mapfile -t present_ops < <(present "$document" "${ending[@]}")
  if [ ${#present_ops[@]} -ne ${#ending[@]} ]; then
    echo "contract: [$name] not in the document (not fuzzed): $(comm -23 <(printf '%s\n' "${ending[@]}" | sort) <(printf '%s\n' "${present_ops[@]}" | sort) | paste -sd, -)"
  fi
  mapfile -t source_ops < <(present "$document" "${sources[@]}")
  for op in "${present_ops[@]}"; do
    included=(--include-name "$op")
    for source in "${source_ops[@]}"; do included+=(--include-name "$source"); done
    token=$($token_command)
    run_pass "$name-ending-$(slug "$op")" "$document" "$url" "$token" "${included[@]}"
  done
}

admin_token_command() { echo "$admin_token"; }
run_listener public "$work/public-openapi.json" "$public_url" mint_session public_ending public_ending_sources
run_listener admin "$work/admin-openapi.json" "$admin_url" admin_token_command admin_ending admin_ending_sources

# ---- What the server saw. ----

kill -0 "$server_pid" 2>/dev/null || fail "portvakt serve exited during the run"
requests=$(grep -c '"msg":"request"' "$dir/server.log" || true)
server_errors=$(grep '"msg":"request"' "$dir/server.log" | grep -E '"status":5[0-9][0-9]' || true)
if [ -n "$server_errors" ]; then
  echo "$server_errors" | head -20 >&2
  fail "the server answered $(echo "$server_errors" | wc -l) requests with 5xx (its access log, above)"
fi
# Which statuses each operation gave, and which of them only `default` declares (what the
# documents must list once `default` goes): .build/contract/statuses.txt.
"$py" Tests/Contract/statuses.py --log "$dir/server.log" \
  --document "$work/public-openapi.json" --document "$work/admin-openapi.json" >"$work/statuses.txt" || true
echo "contract: the server answered $requests requests; statuses per operation in .build/contract/statuses.txt"
