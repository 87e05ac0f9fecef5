#!/usr/bin/env python3
"""Joins the H200 run's xhal-bench.json, torch.json and cusparse.json into the
markdown table of docs/performance.md ("CUDA plugin on the H200").
Usage: python3 bench/gpu/make_table.py RUN_DIR [--no-notes]
(--no-notes: the sparse table without its note column, for a short summary)"""
import json
import sys


def ms(entry):
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[entry.get("time_unit", "ns")]
    return entry["real_time"] * scale


def main():
    d = sys.argv[1]
    notes = "--no-notes" not in sys.argv[2:]
    bench = {b["name"].replace("/real_time", ""): b
             for b in json.load(open(f"{d}/xhal-bench.json"))["benchmarks"]}
    torch = {t["name"]: t["ms"] for t in json.load(open(f"{d}/torch.json"))}
    rows = [
        ("gather 10^6 x 256, random", "BM_IndexSelect/1000000/256/0", ["index_select 1e6x256 random"]),
        ("gather 10^6 x 256, half on one row", "BM_IndexSelect/1000000/256/1", ["index_select 1e6x256 hub"]),
        ("scatter-add 10^6 x 256, random", "BM_IndexAdd/1000000/256/0",
         ["index_add_ 1e6x256 random default(atomic)", "index_add_ 1e6x256 random deterministic"]),
        ("scatter-add 10^6 x 256, half on one row", "BM_IndexAdd/1000000/256/1",
         ["index_add_ 1e6x256 hub default(atomic)", "index_add_ 1e6x256 hub deterministic"]),
        ("transpose 8192 x 8192", "BM_Transpose2D/8192/8192", ["permute(1,0).contiguous 8192x8192"]),
    ]
    for shape in ("16384/4096", "64/262144"):
        tag = shape.replace("/", "x")
        for op, tname in (("Softmax", "softmax"), ("RmsNorm", "rms_norm"), ("LayerNorm", "layer_norm")):
            for dirn, tdir in (("Forward", "fwd"), ("Backward", "bwd")):
                tn = [k for k in torch if k.startswith(f"{tname} {tdir} {tag}")]
                rows.append((f"{tname} {tdir} {tag.replace('x', ' x ')}", f"BM_{op}{dirn}/{shape}", tn))
    print("| op | xhal ms | fraction of copy | PyTorch ms | xhal speed-up |")
    print("| --- | --- | --- | --- | --- |")
    for label, bname, tnames in rows:
        b = bench.get(bname)
        if not b:
            print(f"| {label} | not run | | | |")
            continue
        x = ms(b)
        ratio = b.get("copy_ratio", float("nan"))
        tms = [torch[t] for t in tnames if t in torch]
        tcol = " / ".join(f"{t:.3f}" for t in tms) or "-"
        scol = " / ".join(f"{t / x:.2f}x" for t in tms) or "-"
        print(f"| {label} | {x:.3f} | {ratio:.2f} | {tcol} | {scol} |")
    try:
        sp = json.load(open(f"{d}/cusparse.json"))
        print()
        print("| sparse | xhal ms | cuSPARSE ms | xhal speed-up |" + (" note |" if notes else ""))
        print("| --- | --- | --- | --- |" + (" --- |" if notes else ""))
        for r in sp:
            if r["name"].startswith("C-ABI"):
                continue
            print(f"| {r['name']} | {r['xhal_ms']:.4f} | {r['cusparse_ms']:.4f} | "
                  f"{r['cusparse_ms'] / r['xhal_ms']:.2f}x |" + (f" {r['note']} |" if notes else ""))
        for r in sp:
            if r["name"].startswith("C-ABI"):
                print(f"\nPer call (host time to enqueue, 20,000 calls): bare kernel launch "
                      f"{r['cusparse_ms']:.2f} us, xhal_softmax_forward of [1, 32] through the C ABI "
                      f"{r['cusparse_ms'] + r['xhal_ms']:.2f} us: overhead {r['xhal_ms']:.2f} us")
    except FileNotFoundError:
        pass
    if "sparse CSR @ vector 1e6x1e6 1e7 nnz" in torch:
        print(f"\nPyTorch sparse CSR @ vector, 10^6 x 10^6 with 10^7 non-zeros: "
              f"{torch['sparse CSR @ vector 1e6x1e6 1e7 nnz']:.4f} ms")
    if "copy 2 GiB d2d" in torch:
        print(f"PyTorch copy 2 GiB: {torch['copy 2 GiB d2d']:.4f} ms")


if __name__ == "__main__":
    main()
