#!/usr/bin/env bash
# HTTP engine comparison: the bare libmicrohttpd server (bench-bare-http, the same daemon flags as
# HTTPEngine's MHDDaemon) against a bare h2o server (Benchmarks/EngineProbe/h2o_probe.c on
# Debian's libh2o-evloop), both answering every request with a fixed 200 JSON body.
#   a) framing: each case over a raw socket, followed by a pipelined GET /smuggled; per server the
#      status code, how many status lines / heads came back, Content-Type, whether the connection
#      was closed, and whether the smuggled request was answered.
#      With ENGINES_PORTVAKT=path/to/portvakt, a last column shows that binary's own answers
#      (libmicrohttpd plus RequestFraming; 404/405 there means framing passed and routing ran).
#   b) throughput: wrk -t2 -c64 against GET / of each, rounds alternating, then each one's RSS.
# Not part of Benchmarks/run.sh: it measures a candidate library, not Portvakt.
# Needs: Tools/install-deps.sh bench (libh2o-evloop-dev, wrk), a C compiler.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=.build/release
OUT=.build/engines
DURATION=${BENCH_DURATION:-8}
ROUNDS=${BENCH_ROUNDS:-3}
THREADS=${BENCH_SERVER_THREADS:-2}
mkdir -p "$OUT"
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

pkg-config --exists libh2o-evloop || { echo "libh2o-evloop-dev missing: Tools/install-deps.sh bench" >&2; exit 1; }
# The headers pick the libuv binding unless told this is the evloop build.
cc -O2 -Wall -Wextra -DH2O_USE_LIBUV=0 -o "$OUT/h2o_probe" Benchmarks/EngineProbe/h2o_probe.c \
  $(pkg-config --cflags --libs libh2o-evloop) -lpthread
[ -x "$BIN/bench-bare-http" ] || swift build -c release --product bench-bare-http

wait_for_port() { # file prefix -> the port of its "PREFIX listening on 127.0.0.1:PORT" line
  for _ in $(seq 1 200); do
    port=$(awk -v p="$2" 'index($0, p " listening on ") == 1 {split($4, a, ":"); print a[2]; exit}' "$1")
    [ -n "$port" ] && { echo "$port"; return 0; }
    sleep 0.05
  done
  echo "no port in $1" >&2; cat "$1" >&2; return 1
}
# Another process's load skews the figures: say how loaded the machine was.
load() { cut -d' ' -f1-3 /proc/loadavg; }
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

"$BIN/bench-bare-http" --port 0 --threads "$THREADS" >"$work/mhd.out" 2>&1 &
pids+=($!); mhd_pid=$!
"$OUT/h2o_probe" --port 0 --threads "$THREADS" >"$work/h2o.out" 2>&1 &
pids+=($!); h2o_pid=$!
# The same probe with its hooks on: a filter on the fallback path (problem+json for the errors
# h2o answers itself) and the handler echoing which request fields it was given.
"$OUT/h2o_probe" --port 0 --threads "$THREADS" --problem-filter --echo-headers >"$work/h2o-hooks.out" 2>&1 &
pids+=($!)
mhd_port=$(wait_for_port "$work/mhd.out" bench-bare-http)
h2o_port=$(wait_for_port "$work/h2o.out" h2o-probe)
hooks_port=$(wait_for_port "$work/h2o-hooks.out" h2o-probe)
portvakt_port=0
if [ -n "${ENGINES_PORTVAKT:-}" ]; then
  # On the embedded default, free ports; its {"msg":"listening"} line names the public port.
  cat >"$work/config.json" <<JSON
{"listen": {"public": {"port": 0}, "admin": {"port": 0}}, "http": {"threading": "pool", "threads": $THREADS}}
JSON
  PORTVAKT_DATA="$work/data" "$ENGINES_PORTVAKT" serve --config "$work/config.json" >"$work/portvakt.out" 2>"$work/portvakt.log" &
  pids+=($!)
  for _ in $(seq 1 400); do
    portvakt_port=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try:
        entry = json.loads(line)
    except ValueError:
        continue
    if entry.get("msg") == "listening" and entry.get("listener") == "public":
        print(entry["address"].rsplit(":", 1)[1]); break
' "$work/portvakt.log" 2>/dev/null || true)
    [ -n "$portvakt_port" ] && break
    sleep 0.05
  done
  [ -n "$portvakt_port" ] || { echo "portvakt did not start" >&2; cat "$work/portvakt.log" >&2; exit 1; }
fi
sleep 0.5
mhd_idle=$(rss_kb "$mhd_pid")
h2o_idle=$(rss_kb "$h2o_pid")

echo "framing: libmicrohttpd $(pkg-config --modversion libmicrohttpd) (bench-bare-http) vs h2o $(dpkg-query -W -f '${Version}' libh2o-evloop0.13 2>/dev/null || echo '?') (h2o_probe), $THREADS threads each"
python3 - "$mhd_port" "$h2o_port" "$hooks_port" "$portvakt_port" <<'PY'
import re, socket, sys, time

mhd, h2o, hooks, portvakt = (int(p) for p in sys.argv[1:5])
SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

def post(fields, body=b""):
    return b"POST / HTTP/1.1\r\nHost: x\r\n" + b"".join(f + b"\r\n" for f in fields) + b"\r\n" + body

CHUNKED_EMPTY = b"0\r\n\r\n"
# (case, what RFC 9112 / the issue asks of Portvakt, request bytes)
CASES = [
    ("control: POST, Content-Length: 2", "200, connection kept", post([b"Content-Length: 2"], b"ab")),
    ("Content-Length + Transfer-Encoding", "400, close", post([b"Content-Length: 4", b"Transfer-Encoding: chunked"], CHUNKED_EMPTY)),
    ("two Content-Lengths (2, 3)", "400, close", post([b"Content-Length: 2", b"Content-Length: 3"], b"abc")),
    ("TE: xchunked", "501, close", post([b"Transfer-Encoding: xchunked"], CHUNKED_EMPTY)),
    ("TE: identity", "400 or 501, close", post([b"Transfer-Encoding: identity"], CHUNKED_EMPTY)),
    ("TE: chunked, identity", "400, close", post([b"Transfer-Encoding: chunked, identity"], CHUNKED_EMPTY)),
    ("TE: CHUNKED", "200 (codings are case-insensitive)", post([b"Transfer-Encoding: CHUNKED"], CHUNKED_EMPTY)),
    ("Content-Length: -1", "400, close", post([b"Content-Length: -1"], b"ab")),
    ("Content-Length: +2", "400, close", post([b"Content-Length: +2"], b"ab")),
    ("Content-Length: 2, 2", "400, close (§8.6 allows)", post([b"Content-Length: 2, 2"], b"ab")),
    ("Content-Length: '2 '", "400, close (as issue)", post([b"Content-Length: 2 "], b"ab")),
    ("Content-Length: 2^64", "400 or 413, close", post([b"Content-Length: 18446744073709551616"])),
    ("100 KiB header field", "431, close", b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 102400 + b"\r\n\r\n"),
    ("500 KiB header field", "431, close", b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 512000 + b"\r\n\r\n"),
    ("10 KiB URI", "414 (Portvakt's limit)", b"GET /" + b"a" * 10240 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("HTTP/1.1 without Host", "400", b"GET / HTTP/1.1\r\n\r\n"),
    ("two Host fields", "400", b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
    ("'Foo : bar' (space before colon)", "400", b"GET / HTTP/1.1\r\nHost: x\r\nFoo : bar\r\n\r\n"),
    ("obs-fold continuation line", "400 (or unfold)", b"GET / HTTP/1.1\r\nHost: x\r\nX-Foo: a\r\n b\r\n\r\n"),
]

def exchange(port, request):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(1.0)
    data, closed = b"", False
    try:
        sock.sendall(request + SMUGGLED)
    except (BrokenPipeError, ConnectionResetError):
        pass
    deadline = time.time() + 3
    while time.time() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
    sock.close()
    return data, closed

def responses(data):
    """[(status, content type, heads, fields)]: a head repeated right after itself counts once, heads=2."""
    found, i = [], 0
    while i < len(data):
        match = re.match(rb"HTTP/1\.[01] (\d{3})", data[i:])
        end = data.find(b"\r\n\r\n", i)
        if not match or end < 0:
            found.append(("junk", "", 1, {}))
            break
        head = data[i:end + 4]
        i = end + 4
        heads = 1
        while data.startswith(head, i):
            heads += 1
            i += len(head)
        fields = {}
        for line in head.split(b"\r\n")[1:]:
            if b":" in line:
                name, value = line.split(b":", 1)
                fields[name.strip().lower().decode()] = value.strip().decode("latin1")
        i += int(fields.get("content-length", "0"))
        found.append((match.group(1).decode(), fields.get("content-type", "-"), heads, fields))
    return found

def short_type(content_type):
    if content_type == "-":
        return "(no Content-Type)"
    return content_type.split(";")[0].replace("application/", "").replace("text/", "")

def cell(port, request, show_fields=False):
    data, closed = exchange(port, request)
    found = responses(data)
    if not found:
        return "no answer, " + ("closed" if closed else "open")
    status, content_type, heads, fields = found[0]
    text = f"{status} {short_type(content_type)}"
    if heads > 1:
        text += f" head x{heads}"
    if show_fields and status == "200":
        text += " [fields given to handler: " + (fields.get("x-probe-fields") or "none") + "]"
    text += ", closed" if closed else ", open"
    if len(found) > 1:
        text += ", smuggled answered " + found[1][0]
    return text

rows = [("case", "asked", "libmicrohttpd 0.9.75", "h2o 2.2.5", "h2o 2.2.5 + fallback filter")]
if portvakt:
    rows[0] += ("Portvakt (MHD + RequestFraming)",)
for name, asked, request in CASES:
    row = (name, asked, cell(mhd, request), cell(h2o, request), cell(hooks, request, show_fields=True))
    if portvakt:
        row += (cell(portvakt, request),)
    rows.append(row)
widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
for n, row in enumerate(rows):
    print("| " + " | ".join(v.ljust(w) for v, w in zip(row, widths)) + " |")
    if n == 0:
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
PY

[ "$ROUNDS" -gt 0 ] || exit 0 # BENCH_ROUNDS=0: the framing table only

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # the process's user + system time
run_wrk() { # url pid -> "requests_per_second p50_ms p99_ms server_cpu_us_per_request"
  before=$(cpu_ticks "$2")
  wrk -t2 -c64 -d"${DURATION}s" --latency "$1" >"$work/wrk.txt"
  after=$(cpu_ticks "$2")
  ms() { awk -v k="$1" '$1 == k {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' "$work/wrk.txt"; }
  rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
  requests=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
  cpu=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$requests" 'BEGIN {printf "%.2f", t / hz * 1e6 / n}')
  errors=$(awk '/Non-2xx|Socket errors/ {print}' "$work/wrk.txt")
  if [ -n "$errors" ]; then echo "wrk reported: $errors" >&2; fi
  echo "$rps $(ms 50%) $(ms 99%) $cpu"
}

echo
echo "throughput: GET /, wrk -t2 -c64 -d${DURATION}s, $THREADS server threads each, $ROUNDS alternating rounds (load average $(load))"
# Requests/s and latency follow whatever else the machine runs; the server's own CPU time per
# request (from /proc/PID/stat around each round) much less so.
wrk -t2 -c64 -d2s "http://127.0.0.1:$mhd_port/" >/dev/null
wrk -t2 -c64 -d2s "http://127.0.0.1:$h2o_port/" >/dev/null
: >"$work/rounds.txt"
for round in $(seq 1 "$ROUNDS"); do
  read -r m_rps m_p50 m_p99 m_cpu < <(run_wrk "http://127.0.0.1:$mhd_port/" "$mhd_pid")
  read -r h_rps h_p50 h_p99 h_cpu < <(run_wrk "http://127.0.0.1:$h2o_port/" "$h2o_pid")
  echo "round $round: libmicrohttpd $m_rps req/s (p50 $m_p50 ms, p99 $m_p99 ms, $m_cpu us CPU/request)," \
    "h2o $h_rps req/s (p50 $h_p50 ms, p99 $h_p99 ms, $h_cpu us CPU/request)"
  echo "$m_rps $m_p50 $m_p99 $h_rps $h_p50 $h_p99 $m_cpu $h_cpu" >>"$work/rounds.txt"
done
median() { sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
col() { awk -v c="$1" '{print $c}' "$work/rounds.txt" | median; }
echo "load average after the rounds: $(load)"
mhd_rss=$(rss_kb "$mhd_pid")
h2o_rss=$(rss_kb "$h2o_pid")
ratio=$(awk '{printf "%.4f\n", $4 / $1}' "$work/rounds.txt" | median | awk '{printf "%.2f", $1}')
cpu_ratio=$(awk '{printf "%.4f\n", $8 / $7}' "$work/rounds.txt" | median | awk '{printf "%.2f", $1}')
mb() { awk "BEGIN {printf \"%.1f\", $1 / 1024}"; }

python3 Benchmarks/record.py "HTTP engines: GET /, wrk 64 connections, ${THREADS} server threads, median of $ROUNDS alternating rounds x ${DURATION}s" \
  "engine.mhd.requests_per_second=$(col 1):req/s" \
  "engine.mhd.p50=$(col 2):ms" \
  "engine.mhd.p99=$(col 3):ms" \
  "engine.mhd.cpu_per_request=$(col 7):us" \
  "engine.mhd.idle_rss=$(mb "$mhd_idle"):MB" \
  "engine.mhd.rss_after_load=$(mb "$mhd_rss"):MB" \
  "engine.h2o.requests_per_second=$(col 4):req/s" \
  "engine.h2o.p50=$(col 5):ms" \
  "engine.h2o.p99=$(col 6):ms" \
  "engine.h2o.cpu_per_request=$(col 8):us" \
  "engine.h2o.idle_rss=$(mb "$h2o_idle"):MB" \
  "engine.h2o.rss_after_load=$(mb "$h2o_rss"):MB" \
  "engine.h2o_over_mhd.requests_per_second=$ratio:x" \
  "engine.h2o_over_mhd.cpu_per_request=$cpu_ratio:x"
