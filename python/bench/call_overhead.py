#!/usr/bin/env python3
"""Per-call cost of a small op through the Python module against the C call.

    PYTHONPATH=python XHAL_LIBRARY=build/lib/libxhal.so \
        python3 python/bench/call_overhead.py [--device cpu] [--n 32] [--calls 200000]

Times two calls: xhal_softmax_forward on a [1, n] f32 tensor (the smallest
op; the output is passed, as in C) and xhal_device_synchronize (no work on
the cpu device: the core's handle check and the slot call), each three
ways, in ns per call, best of 5 rounds:

  python   the module: xhal.softmax_forward(dev, x, y), dev.synchronize()
  ctypes   the bare ctypes function with cached arguments (no Python wrapper)
  C        the same calls in a C loop (compiled here with cc when one is
           found and hal/include is beside this script; skipped otherwise)

and the ctypes floor: a ctypes call of xhal_dtype_size, which does nothing
much, the cost of crossing into C from Python. Where libxhal has the DLPack
calls, also the cost of a zero-copy hand-over through the module in both
directions with NumPy (import + release, export + the consumer's drop).

Not a test: numbers depend on the machine and its load. docs/python.md has
the figures and their date.
"""

import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import xhal  # noqa: E402
from xhal import _lib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.normpath(os.path.join(HERE, "..", "..", "hal", "include"))

C_LOOP = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <xhal/xhal.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(int argc, char** argv) {
  const char* sel = argv[1]; int64_t n = atoll(argv[2]); long calls = atol(argv[3]);
  xhal_device_t dev; xhal_buffer_t b;
  if (xhal_device_open(sel, &dev) != XHAL_OK) { fprintf(stderr, "%s\n", xhal_last_error()); return 1; }
  xhal_buffer_allocate(dev, 2 * n * 4, &b);
  float* h = malloc(n * 4); for (int64_t i = 0; i < n; ++i) h[i] = (float)i / n;
  xhal_buffer_write(b, 0, h, n * 4);
  int64_t shape[2] = {1, n}; xhal_tensor_t x, y;
  xhal_tensor_init(b, 0, XHAL_DTYPE_F32, 2, shape, &x);
  xhal_tensor_init(b, n * 4, XHAL_DTYPE_F32, 2, shape, &y);
  double best = 1e30, best_sync = 1e30;
  for (int r = 0; r < 5; ++r) {
    double t0 = now();
    for (long i = 0; i < calls; ++i) xhal_softmax_forward(dev, &x, &y);
    xhal_device_synchronize(dev);
    double per = (now() - t0) / calls; if (per < best) best = per;
    t0 = now();
    for (long i = 0; i < calls; ++i) xhal_device_synchronize(dev);
    per = (now() - t0) / calls; if (per < best_sync) best_sync = per;
  }
  printf("%.1f %.1f\n", best, best_sync);
  xhal_buffer_release(b); xhal_device_release(dev); free(h); return 0;
}
"""


def best_of(f, calls, rounds=5):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            f()
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    return best


def c_loop(selector, n, calls):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc or not os.path.isdir(INCLUDE):
        return None, "no C compiler or no hal/include beside this script"
    libdir = os.path.dirname(_lib.path)
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "loop.c"), os.path.join(d, "loop")
        with open(src, "w") as f:
            f.write(C_LOOP)
        r = subprocess.run([cc, "-O2", "-I", INCLUDE, src, _lib.path, "-o", exe,
                            f"-Wl,-rpath,{libdir}"], capture_output=True, text=True)
        if r.returncode:
            return None, "cc failed: " + r.stderr.strip()[:200]
        r = subprocess.run([exe, selector, str(n), str(calls)], capture_output=True, text=True)
        if r.returncode:
            return None, r.stderr.strip()
        op, sync = (float(v) for v in r.stdout.split())
        return {"softmax": op, "synchronize": sync}, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--calls", type=int, default=200000)
    a = ap.parse_args()

    dev = xhal.Device(a.device)
    x = xhal.asarray(np.linspace(0, 1, a.n, dtype=np.float32).reshape(1, a.n), device=dev)
    y = xhal.empty((1, a.n), device=dev)
    raw = _lib.fn["xhal_softmax_forward"]
    h, xp, yp = dev.handle, x._p, y._p
    floor_fn = _lib.fn["xhal_dtype_size"]

    sync_raw = _lib.fn["xhal_device_synchronize"]
    py = {"softmax": best_of(lambda: xhal.softmax_forward(dev, x, y), a.calls),
          "synchronize": best_of(dev.synchronize, a.calls)}
    bare = {"softmax": best_of(lambda: raw(h, xp, yp), a.calls),
            "synchronize": best_of(lambda: sync_raw(h), a.calls)}
    floor = best_of(lambda: floor_fn(1), a.calls)
    dev.synchronize()
    c, why = c_loop(a.device, a.n, a.calls)
    print(f"# {dev.selector} ({dev.name}); {a.calls} calls x 5 rounds, best round, ns per call;"
          f" Python {sys.version.split()[0]}, NumPy {np.__version__}, {_lib.path}")
    print(f"# ctypes floor (xhal_dtype_size through ctypes): {floor:.0f} ns")
    print(f"{'call':32s} {'python':>9s} {'ctypes':>9s} {'C':>9s} {'python-C':>9s}")
    for k, label in (("softmax", f"xhal_softmax_forward [1, {a.n}]"),
                     ("synchronize", "xhal_device_synchronize")):
        cv = c[k] if c else float("nan")
        print(f"{label:32s} {py[k]:9.0f} {bare[k]:9.0f} {cv:9.0f} {py[k] - cv:9.0f}")
    if c is None:
        print(f"# C skipped: {why}")
    if xhal.dlpack_available():
        calls = max(a.calls // 10, 1)
        arr = np.zeros(a.n, dtype=np.float32)
        imp = best_of(lambda: xhal.from_dlpack(arr, device=dev).buffer.release(), calls)
        exp = best_of(lambda: np.from_dlpack(x), calls)
        cap = best_of(lambda: x.__dlpack__(max_version=(1, 0)), calls)
        print(f"# DLPack through the module, {calls} calls x 5 rounds, best round, ns per call:")
        print(f"{'xhal.from_dlpack(ndarray) + release':36s} {imp:9.0f}")
        print(f"{'np.from_dlpack(xhal tensor) + drop':36s} {exp:9.0f}")
        print(f"{'tensor.__dlpack__(max_version) + drop':36s} {cap:9.0f}")


if __name__ == "__main__":
    main()
