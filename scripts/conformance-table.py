#!/usr/bin/env python3
"""The conformance table of docs/vendors.md, generated from the committed
reports (docs/reports/conformance-*.json; python3 standard library only).

  scripts/conformance-table.py                  print the table
  scripts/conformance-table.py --write FILE     replace the table in FILE
  scripts/conformance-table.py --check FILE     exit 1 if FILE's table differs
  scripts/conformance-table.py --cpu-report R   exit 1 unless the cpu report R
                                                (the CI's own run) says what
                                                the table's cpu column says

The table sits in FILE between the two marker lines below. One column per
backend: the newest committed report (by its `date`) whose `plugins` section
names that backend. The cpu column comes from no committed report: every CI
run makes one (ctest conformance.cpu, build/conformance-cpu.json), and
--cpu-report (ctest docs.vendors_table.cpu) checks that run against the
column: plugin verdict pass, every op passed bit-exact, nothing failed.
"""
import argparse
import difflib
import glob
import json
import os
import sys

BEGIN = "<!-- conformance-table:begin (scripts/conformance-table.py --write docs/vendors.md) -->"
END = "<!-- conformance-table:end -->"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDER = ["cpu", "cuda", "rocm", "vulkan"]


def load_reports(folder):
    """{backend: (file name, report, plugin section, device section)}: newest per backend."""
    latest = {}
    for path in sorted(glob.glob(os.path.join(folder, "conformance-*.json"))):
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        for plugin in report.get("plugins", []):
            backend = plugin["backend"]
            device = next(d for d in report["devices"] if d["name"] == plugin["devices"][0])
            entry = (os.path.basename(path), report, plugin, device)
            if backend not in latest or report["date"] > latest[backend][1]["date"]:
                latest[backend] = entry
    return latest


def op_cell(plugin, op):
    ops = plugin["ops"]
    if op in ops["pass"]:
        return ops["pass"][op]
    for verdict in ("fail", "expected-failure", "unsupported", "untested"):
        if op in ops[verdict]:
            return "**FAIL**" if verdict == "fail" else verdict
    return "absent"


def table(folder):
    latest = load_reports(folder)
    backends = sorted(set(latest) | {"cpu"}, key=lambda b: (ORDER.index(b) if b in ORDER else 99, b))
    all_ops = sorted({op for (_, _, p, _) in latest.values()
                      for verdict in p["ops"].values() for op in verdict})
    lines = [BEGIN, ""]
    head = "| | " + " | ".join(backends) + " |"
    lines += [head, "| --- " * (len(backends) + 1) + "|"]

    def row(label, cell):
        lines.append("| " + label + " | " + " | ".join(cell(b) for b in backends) + " |")

    cpu_note = {
        "device": "the CI machine's CPU",
        "report": "made by every CI run: `build/conformance-cpu.json` (ctest `conformance.cpu`)",
        "date": "every commit",
        "verdict": "pass (required)",
        "tests": "all pass (required)",
        "ops": "bit-exact (required)",
    }

    def cell(key, fn):
        def get(b):
            if b not in latest:
                return cpu_note[key] if b == "cpu" else "no report"
            return fn(*latest[b][1:]) if key != "report" else fn(latest[b][0])
        return get

    row("device", cell("device", lambda r, p, d: f"{d['device_name']} (`{d['name']}`)"))
    row("report (docs/reports/)", cell("report", lambda name: f"`{name}`"))
    row("date, xhal", cell("date", lambda r, p, d: f"{r['date'][:16].replace('T', ' ')} UTC, {r['xhal_version']}"))
    row("plugin verdict", cell("verdict", lambda r, p, d: f"**{p['verdict']}**"))
    row("device tests: pass / fail / skipped / unsupported",
        cell("tests", lambda r, p, d: "{pass} / {fail} / {skipped} / {unsupported}".format(**d["summary"])))

    def levels(r, p, d):
        exact = sum(1 for lv in p["ops"]["pass"].values() if lv == "bit-exact")
        return f"{exact} of {len(all_ops)} bit-exact"
    row("ops", cell("ops", levels))
    for op in all_ops:
        row(f"`{op}`", cell("ops", lambda r, p, d, op=op: op_cell(p, op)))
    lines += ["", END]
    return "\n".join(lines) + "\n", all_ops


def split(text, path):
    try:
        start = text.index(BEGIN)
        end = text.index(END, start) + len(END) + 1
    except ValueError:
        sys.exit(f"{path}: no table markers ({BEGIN} ... {END})")
    return text[:start], text[start:end], text[end:]


def check_cpu(path, all_ops):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    problems = []
    plugins = [p for p in report.get("plugins", []) if p["backend"] == "cpu"]
    if not plugins:
        problems.append("no cpu plugin section")
    for p in plugins:
        if p["verdict"] != "pass":
            problems.append(f"plugin verdict {p['verdict']}")
        for op in all_ops:
            if p["ops"]["pass"].get(op) != "bit-exact":
                problems.append(f"{op}: {op_cell(p, op)}, the table says bit-exact")
    for d in report.get("devices", []):
        if d["backend"] == "cpu" and (d["summary"]["fail"] or d["summary"]["unexpected-pass"]):
            problems.append(f"{d['name']}: failed tests {d['summary']}")
    if problems:
        print(f"{path}: the CI's cpu run does not say what docs/vendors.md's cpu column says:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"{path}: cpu plugin pass, {len(all_ops)} of {len(all_ops)} ops bit-exact, as the table says")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reports", default=os.path.join(ROOT, "docs", "reports"))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write", metavar="FILE")
    mode.add_argument("--check", metavar="FILE")
    mode.add_argument("--cpu-report", metavar="REPORT")
    args = ap.parse_args()
    text, all_ops = table(args.reports)
    if args.cpu_report:
        return check_cpu(args.cpu_report, all_ops)
    if not args.write and not args.check:
        sys.stdout.write(text)
        return 0
    path = args.write or args.check
    with open(path, encoding="utf-8") as f:
        before, old, after = split(f.read(), path)
    if args.write:
        with open(path, "w", encoding="utf-8") as f:
            f.write(before + text + after)
        return 0
    if old != text:
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                   path + " (committed)", "generated from " + args.reports))
        print(f"{path}: the conformance table differs from the reports; run "
              f"scripts/conformance-table.py --write {os.path.relpath(path, ROOT)}")
        return 1
    print(f"{path}: the conformance table matches {args.reports}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
