#!/usr/bin/env python3
"""The statuses the contract test's server answered, per operation, from its access log.

For each operation of the two documents: the statuses seen (with counts), and those the document
does not declare by their own code or class (`404`, `4XX`) and leaves to `default`. Those are what
status_code_conformance will hold the server to once `default` goes. Requests no route matched
(route `null`: unknown methods and paths) are counted apart. Information, not a check: exits 0.

Usage: statuses.py --log server.log --document public.json --document admin.json
"""

import argparse
import collections
import json

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def declared(responses, status):
    code = str(status)
    return code in responses or f"{code[0]}XX" in responses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--document", action="append", required=True)
    arguments = parser.parse_args()

    operations = {}
    for path in arguments.document:
        with open(path, "rb") as file:
            document = json.loads(file.read())
        for route, item in (document.get("paths") or {}).items():
            for method, operation in item.items():
                if method in METHODS and isinstance(operation, dict):
                    responses = operation.get("responses") or {}
                    operations.setdefault((method.upper(), route), {}).update(responses)

    seen = collections.defaultdict(collections.Counter)
    unmatched = collections.Counter()
    with open(arguments.log, errors="replace") as log:
        for line in log:
            if not line.startswith("{"):
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") != "request":
                continue
            key = (entry.get("method"), entry.get("route"))
            if entry.get("route") is None:
                unmatched[(entry.get("method"), entry.get("status"))] += 1
            else:
                seen[key][entry.get("status")] += 1

    for key in sorted(operations):
        counts = seen.get(key)
        if not counts:
            print(f"{key[0]} {key[1]}: never answered")
            continue
        statuses = ", ".join(f"{status}×{count}" for status, count in sorted(counts.items()))
        left = sorted(status for status in counts if not declared(operations[key], status))
        note = f"; left to default: {', '.join(map(str, left))}" if left and "default" in operations[key] else ""
        note += f"; undeclared: {', '.join(map(str, left))}" if left and "default" not in operations[key] else ""
        print(f"{key[0]} {key[1]}: {statuses}{note}")
    for key in sorted(set(seen) - set(operations), key=str):
        print(f"{key[0]} {key[1]}: not in either document: "
              + ", ".join(f"{status}×{count}" for status, count in sorted(seen[key].items())))
    if unmatched:
        print("no route matched: " + ", ".join(
            f"{method} {status}×{count}" for (method, status), count in sorted(unmatched.items(), key=str)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
