#!/usr/bin/env python3
"""Before/after table of two xhal-bench runs (Google Benchmark JSON), as
scripts/gpu-check.sh --baseline writes it: one row per benchmark present in
both, real time in ms and xhal-bench's copy_ratio, and the after/before
time ratio; rows slower by more than the threshold (default 5%) are marked.

Usage: python3 bench/gpu/compare_bench.py AFTER.json BEFORE.json [threshold]
Prints the markdown table, then one summary line. Exit status 0 (a slower
row is reported, not judged: the machine's noise is the reader's call).
"""
import json
import sys

SCALE = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def load(path):
    rows = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        name = b["name"].replace("/real_time", "")
        rows[name] = (b["real_time"] * SCALE[b.get("time_unit", "ns")], b.get("copy_ratio"))
    return rows


def main():
    after, before = load(sys.argv[1]), load(sys.argv[2])
    limit = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05
    print("| benchmark | before ms | after ms | after / before | copy ratio before -> after |")
    print("| --- | ---: | ---: | ---: | --- |")
    slower = []
    common = [n for n in after if n in before]
    for name in common:
        (ta, ca), (tb, cb) = after[name], before[name]
        ratio = ta / tb if tb > 0 else float("nan")
        mark = " **slower**" if ratio > 1 + limit else ""
        if mark:
            slower.append(f"{name} {ratio:.2f}x")
        copy = f"{cb:.2f} -> {ca:.2f}" if ca is not None and cb is not None else ""
        print(f"| {name} | {tb:.4f} | {ta:.4f} | {ratio:.3f}{mark} | {copy} |")
    print()
    print(f"{len(common)} benchmarks in both runs; {len(slower)} slower by more than "
          f"{limit:.0%}" + (": " + ", ".join(slower) if slower else ""))


if __name__ == "__main__":
    main()
