#!/usr/bin/env python3
"""Validates xhal-conformance reports against conformance/report.schema.json
with the jsonschema library (Debian: python3-jsonschema, installed by
scripts/install-deps.sh; JSON Schema draft 2020-12).

  scripts/check-report-schema.py REPORT...           exit 1 if one is invalid
  scripts/check-report-schema.py --schema S ...      another schema file (the
      installed <prefix>/share/doc/xhal/report.schema.json)
  scripts/check-report-schema.py --plants REPORT...  exit 1 unless the schema
      rejects every error planted in a copy of each report (a wrong field
      type, a missing field, an unknown status, a pass without its level)

ctest sdk.report_schema runs the first form on the CI's cpu report and the
committed docs/reports/*.json, sdk.report_schema.planted the second.
"""
import copy
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "conformance", "report.schema.json")

try:
    import jsonschema
except ImportError:
    sys.exit("check-report-schema: the Python module jsonschema is missing "
             "(apt-get install python3-jsonschema; scripts/install-deps.sh installs it)")


def validator():
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def plants(report):
    """(what, planted copy) pairs, each one error the schema must catch."""
    def plant(what, change):
        r = copy.deepcopy(report)
        change(r)
        return what, r
    out = [
        plant("devices[0].summary.pass as a string", lambda r: r["devices"][0]["summary"].update(
            {"pass": str(r["devices"][0]["summary"]["pass"])})),
        plant("plugins section missing", lambda r: r.pop("plugins")),
        plant("results[0].status 'passed'", lambda r: r["results"][0].update({"status": "passed"})),
        plant("plugins[0].verdict as a boolean", lambda r: r["plugins"][0].update({"verdict": True})),
        plant("results[0] with an unknown field", lambda r: r["results"][0].update({"seconds": 1.5})),
    ]
    dev = report["devices"][0]["op_verdicts"]
    passed = [op for op, v in dev.items() if v["verdict"] == "pass"]
    if passed:
        out.append(plant(f"op_verdicts.{passed[0]} pass without its level",
                         lambda r: r["devices"][0]["op_verdicts"][passed[0]].pop("level")))
    return out


def main(argv):
    global SCHEMA
    if argv[:1] == ["--schema"] and len(argv) > 1:
        SCHEMA = os.path.abspath(argv[1])
        argv = argv[2:]
    check_plants = argv[:1] == ["--plants"]
    reports = argv[1:] if check_plants else argv
    if not reports:
        sys.exit(__doc__)
    v = validator()
    bad = 0
    for path in reports:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        errors = sorted(v.iter_errors(report), key=lambda e: list(e.absolute_path))
        if errors:
            bad += 1
            print(f"{path}: INVALID against {os.path.relpath(SCHEMA, ROOT)}:")
            for e in errors[:20]:
                where = "/".join(str(p) for p in e.absolute_path) or "(top)"
                print(f"  {where}: {e.message[:200]}")
            continue
        if not check_plants:
            print(f"{path}: valid")
            continue
        for what, planted in plants(report):
            if v.is_valid(planted):
                bad += 1
                print(f"{path}: planted {what}: the schema ACCEPTED it")
            else:
                print(f"{path}: planted {what}: rejected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
