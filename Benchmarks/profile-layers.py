#!/usr/bin/env python3
"""Sums a profile's self cost by layer, for Docs/performance.md.

Usage: callgrind_annotate --auto=no --threshold=100 FILE | profile-layers.py callgrind
       perf report --no-children --stdio --sort dso,sym -g none | profile-layers.py perf

Layers: kernel, SQLite, OpenSSL, malloc (malloc/free), mem* (memset/memmove/memcpy/memcmp…),
libc other (locks, syscall wrappers), libmicrohttpd, Swift runtime (retain/release, allocation,
dynamic casts, metadata), Swift stdlib (hashing, strings, arrays), Foundation, libdispatch, and
our code by module (the module named in the Swift symbol, or the source path under Modules/).
"""
import re
import sys
from collections import defaultdict

MALLOC = re.compile(r"(^|[^a-z])(_int_malloc|_int_free|malloc|free|cfree|calloc|realloc|malloc_consolidate|"
                    r"tcache|unlink_chunk|arena_get|_int_realloc|__libc_malloc|__libc_free|__libc_calloc|"
                    r"posix_memalign|_mid_memalign|_int_memalign|aligned_alloc)")
MEM = re.compile(r"__(memset|memmove|memcpy|memcmp|mempcpy|strlen|strcmp|strchr|strncmp|stpcpy|rawmemchr|memchr)")
SWIFT_MODULE = re.compile(r"\$s(\d+)([A-Za-z_][A-Za-z0-9_]*)")


def layer(obj: str, symbol: str, path: str = "") -> str:
    if "kernel" in obj:
        return "kernel"
    if "libsqlite3" in obj:
        return "SQLite"
    if "libcrypto" in obj or "libssl" in obj:
        return "OpenSSL"
    if "libmicrohttpd" in obj:
        return "libmicrohttpd"
    if "libgnutls" in obj or "libnettle" in obj or "libhogweed" in obj or "libgmp" in obj:
        return "GnuTLS"
    if "libc.so" in obj or "ld-linux" in obj:
        if MEM.search(symbol) or "memset" in path or "memmove" in path or "memcmp" in path:
            return "mem* (memset/memmove/memcmp)"
        if MALLOC.search(symbol) or "/malloc/" in path:
            return "malloc/free"
        return "libc other (locks, syscalls)"
    match = re.search(r"Modules/([A-Za-z]+)/", path) or re.search(r"Apps/([A-Za-z]+)/", path)
    if match:
        return f"ours: {match.group(1)}"
    if symbol.startswith("swift_") or "swift::" in symbol or symbol.startswith("_swift") \
            or "RefCount" in symbol or "Metadata" in symbol:
        return "Swift runtime (retain/release, alloc, casts)"
    if "dispatch" in symbol:
        return "libdispatch"
    found = SWIFT_MODULE.search(symbol)
    if symbol.startswith("$ss") or (found and found.group(2)[: int(found.group(1))] == "s"):
        return "Swift stdlib (hashing, strings, arrays)"
    if found:
        module = found.group(2)[: int(found.group(1))]
        if module.startswith("Foundation") or module in ("FoundationEssentials", "FoundationInternationalization"):
            return "Foundation"
        if module in ("Dispatch",):
            return "libdispatch"
        return f"ours: {module}"
    if "portvakt" in obj:
        return "portvakt (other, unsymbolised)"
    return obj or "other"


def main() -> None:
    kind = sys.argv[1]
    totals = defaultdict(float)
    grand = 0.0
    for line in sys.stdin:
        if kind == "callgrind":
            m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*?)(?: \[(.*)\])?$", line)
            if not m or "PROGRAM TOTALS" in line:
                continue
            cost = float(m.group(1).replace(",", ""))
            where, obj = m.group(2), m.group(3) or ""
            # file:function; the function part may itself hold colons (C++), so split on the first.
            path, _, symbol = where.partition(":")
            totals[layer(obj, symbol, path)] += cost
            grand += cost
        else:
            m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[([k.])\]\s+(.*)$", line)
            if not m:
                continue
            cost = float(m.group(1))
            obj = "kernel" if m.group(3) == "k" else m.group(2)
            totals[layer(obj, m.group(4).strip())] += cost
            grand += cost
    for name, cost in sorted(totals.items(), key=lambda item: -item[1]):
        print(f"{100 * cost / grand:6.1f}%  {name}")


if __name__ == "__main__":
    main()
