# Sourced by Benchmarks/idle-rss.sh and Tools/symbol-order.sh: the server both look at, as
# Docs/performance-memory.md defines it. Needs `work` (a temporary directory) set.

# Writes $work/config.json: Config/development.json with both listen ports 0 (so the BankID
# simulator runs in-process, as in development) and the data in $work/data.
write_idle_config() {
  python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
config = json.load(open("Config/development.json"))
config["listen"]["public"]["port"] = 0
config["listen"]["admin"]["port"] = 0
config["dataDirectory"] = work + "/data"
json.dump(config, open(work + "/config.json", "w"))
PY
}

# Waits until the log $1 has both "listening" lines, at most $2 seconds; prints the log and
# fails otherwise.
wait_for_listeners() {
  local tries=$(($2 * 20))
  for _ in $(seq 1 "$tries"); do
    [ "$(grep -c '"msg":"listening"' "$1" 2>/dev/null || true)" -ge 2 ] && return 0
    sleep 0.05
  done
  cat "$1" >&2
  return 1
}
