#!/usr/bin/env bash
# Writes Tools/symbol-order.txt, the order the release link (Makefile RELEASE, lld's
# --symbol-ordering-file) puts the binary's functions in: first every function `portvakt serve`
# runs from its start to idle (Config/development.json with the BankID simulator in-process, as
# Benchmarks/idle-rss.sh measures it), then the ones a passkey login runs (bench-login's fixed
# logins, as Benchmarks/login-instructions.sh counts them), each recorded with callgrind. Packed
# together they fill few of the kernel's 64 KiB fault-around windows, so idle RSS counts fewer of
# the binary's pages (Docs/performance-memory.md).
#
# Regenerate after a change that moves much startup or login code (a new module, a new startup
# step): `swift build $(RELEASE) && Tools/symbol-order.sh`, then build again. A stale file is
# harmless: lld ignores names that no longer exist (--no-warn-symbol-ordering) and places
# functions the file does not name after the listed ones, so the binary stays correct and only
# its idle RSS creeps up (Benchmarks/idle-rss.sh shows it).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.build/release/portvakt
[ -x "$BIN" ] || { echo "build the release binary first (make bench, or swift build with the Makefile's RELEASE)" >&2; exit 1; }
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

. Benchmarks/idle-server.sh
write_idle_config

# 1. Start to idle: dump callgrind's counts 2 s after both listeners are up.
valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/startup.callgrind" \
  "$BIN" serve --config "$work/config.json" >"$work/out" 2>"$work/log" &
pid=$!
wait_for_listeners "$work/log" 120
sleep 2
callgrind_control --dump=idle "$pid" >/dev/null 2>&1
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
idle_profile=$(ls "$work"/startup.callgrind.* | head -n 1)

# 2. The login path: bench-login's measured logins only (collection is off before and after).
profiles=("$idle_profile")
if [ -x .build/release/bench-login ]; then
  .build/release/bench-login --binary "$BIN" --logins 50 --warmup 20 --clients 1 \
    --callgrind "$work/login.callgrind" >/dev/null
  profiles+=("$work/login.callgrind")
else
  echo "no .build/release/bench-login: the order covers startup only" >&2
fi

# Keep the names the binary defines as code, profile by profile, in two groups:
# first the functions that have a section of their own (-function-sections), so they end up
# packed together; then those that share one `.text` section with others (the static Swift
# runtime's and FoundationEssentials' objects were built without -function-sections): lld moves
# such a section as a whole, and naming them last keeps those blocks out of the packed run.
nm --defined-only "$BIN" | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u >"$work/defined"
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")
objects=("$toolchain"/lib/swift_static/linux/*.a .build/release/*.build/*.o)
objdump -t "${objects[@]}" 2>/dev/null | awk 'NF >= 5 && ($(NF-2) == ".text" || $(NF-3) == ".text") {print $NF}' | sort -u >"$work/shared"
python3 - "$work/defined" "$work/shared" Tools/symbol-order.txt "${profiles[@]}" <<'PY'
import re, sys
defined = set(open(sys.argv[1]).read().split())
shared = set(open(sys.argv[2]).read().split())
out, profiles = sys.argv[3], sys.argv[4:]
pattern = re.compile(r"^c?fn=\((\d+)\)(?: (.+))?$")
# Each profile's new names sorted: the order inside a group does not change which windows it
# fills, and sorted the file only changes where the code did (callgrind's own numbering
# follows the threads' interleaving).
own, blocks, seen = [], [], set()
for profile in profiles:
    names, new_own, new_blocks = {}, [], []
    for line in open(profile, errors="replace"):
        match = pattern.match(line.rstrip("\n"))
        if not match:
            continue
        if match.group(2):
            names[match.group(1)] = match.group(2)
        # callgrind may suffix a name with "'2" for recursion levels.
        name = names.get(match.group(1), "").split("'")[0]
        if name in defined and name not in seen:
            seen.add(name)
            (new_blocks if name in shared else new_own).append(name)
    own += sorted(new_own)
    blocks += sorted(new_blocks)
    print(f"{profile.rsplit('/', 1)[-1]}: {len(own)} + {len(blocks)} functions so far", file=sys.stderr)
with open(out, "w") as handle:
    handle.write("\n".join(own + blocks) + "\n")
PY
echo "wrote Tools/symbol-order.txt ($(wc -l <Tools/symbol-order.txt) functions)"
