#!/usr/bin/env python3
"""Merges benchmark figures into .build/bench/results.json and prints them as a table.

Usage: record.py TITLE name=value:unit [name=value:unit ...]
"""
import json
import os
import sys

RESULTS = os.path.join(".build", "bench", "results.json")


def parse(pairs: list[str]) -> dict[str, tuple[float, str]]:
    """The benchmarks' name=value:unit pairs as {name: (value, unit)}; other scripts import it."""
    figures = {}
    for pair in pairs:
        name, rest = pair.split("=", 1)
        value, unit = rest.rsplit(":", 1)
        figures[name] = (float(value), unit)
    return figures


def main() -> None:
    title, pairs = sys.argv[1], sys.argv[2:]
    figures = {
        name: {"value": int(number) if number.is_integer() else round(number, 3), "unit": unit}
        for name, (number, unit) in parse(pairs).items()
    }
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    merged = {}
    if os.path.exists(RESULTS):
        with open(RESULTS) as handle:
            try:
                merged = json.load(handle)
            except json.JSONDecodeError:
                merged = {}
    merged.update(figures)
    with open(RESULTS, "w") as handle:
        json.dump(merged, handle, indent=2, sort_keys=True)
        handle.write("\n")
    width = max(len(name) for name in figures)
    print(f"\n{title}")
    print(f"{'figure'.ljust(width)}  {'value':>12}  unit")
    print(f"{'-' * width}  {'-' * 12}  ----")
    for name, figure in figures.items():
        print(f"{name.ljust(width)}  {figure['value']:>12}  {figure['unit']}")


if __name__ == "__main__":
    main()
