#!/usr/bin/env python3
"""Per-call cost of a small op through the Python module against the C call.

    PYTHONPATH=python XHAL_LIBRARY=build/lib/libxhal.so \
        python3 python/bench/call_overhead.py [--device cpu] [--n 32] [--calls 200000]

Times xhal_softmax_forward on a [1, n] f32 tensor (the smallest op; the
output is passed, as in C) four ways, in ns per call, best of 5 rounds:

  python   xhal.softmax_forward(dev, x, y)       the module's function
  ctypes   the bare ctypes function with cached arguments (no Python wrapper)
  floor    a ctypes call of a C function that does nothing much
           (xhal_dtype_size): the cost of crossing into C from Python
  C        the same op called in a C loop (compiled here with cc when one
           is found and hal/include is beside this script; skipped otherwise)

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
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    double t0 = now();
    for (long i = 0; i < calls; ++i) xhal_softmax_forward(dev, &x, &y);
    xhal_device_synchronize(dev);
    double per = (now() - t0) / calls; if (per < best) best = per;
  }
  printf("%.1f\n", best);
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
        return float(r.stdout), None


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

    results = {
        "python": best_of(lambda: xhal.softmax_forward(dev, x, y), a.calls),
        "ctypes": best_of(lambda: raw(h, xp, yp), a.calls),
        "floor": best_of(lambda: floor_fn(1), a.calls),
    }
    dev.synchronize()
    c, why = c_loop(a.device, a.n, a.calls)
    print(f"# xhal_softmax_forward [1, {a.n}] f32 on {dev.selector} ({dev.name}), "
          f"{a.calls} calls x 5 rounds, best round, ns per call; "
          f"Python {sys.version.split()[0]}, NumPy {np.__version__}, {_lib.path}")
    for k, v in results.items():
        print(f"{k:8s} {v:9.1f}")
    if c is None:
        print(f"C        skipped: {why}")
    else:
        print(f"C        {c:9.1f}")
        print(f"# Python module above C: {results['python'] - c:.0f} ns per call "
              f"(bare ctypes above C: {results['ctypes'] - c:.0f} ns)")


if __name__ == "__main__":
    main()
