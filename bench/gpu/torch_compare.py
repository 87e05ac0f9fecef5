#!/usr/bin/env python3
"""PyTorch side of the issue-5 comparison: times the torch equivalents of the
xhal ops on the same GPU, with CUDA events (median of 20 after 3 warm-ups),
at the sizes xhal-bench uses, plus the device-to-device copy bandwidth of
the same run. Writes a JSON list of {name, ms, note}.

Usage: python3 bench/gpu/torch_compare.py out.json [bf16]
With "bf16", only the copy and the bf16 section run (row ops on bf16
activations with float32 weights, index_add_ on bf16 rows), the torch side
of xhal-bench's *Bf16 benchmarks.
"""
import json
import sys

import torch


def median_ms(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


results = []


def record(name, ms, note=""):
    results.append({"name": name, "ms": ms, "note": note})
    print(f"{name:52s} {ms:9.4f} ms  {note}", flush=True)


def bf16_section(dev):
    """bf16 activations, float32 weights (where torch takes the mix; else
    bf16 weights, said in the note)."""
    F = torch.nn.functional
    bf = torch.bfloat16
    for (r, c) in ((16384, 4096), (64, 262144)):
        x = torch.randn(r, c, device=dev).to(bf)
        dy = torch.randn(r, c, device=dev).to(bf)
        g32 = torch.rand(c, device=dev) + 0.5
        b32 = torch.rand(c, device=dev)
        tag = f"{r}x{c} bf16"

        def weights(fn):
            try:
                fn(g32, b32)
                return g32, b32, "fp32 weights"
            except RuntimeError as e:
                return g32.to(bf), b32.to(bf), f"bf16 weights ({str(e).splitlines()[0][:60]})"

        gr, _, rms_note = weights(lambda g, b: F.rms_norm(x, (c,), g, 1e-6))
        gl, bl, ln_note = weights(lambda g, b: F.layer_norm(x, (c,), g, b, 1e-5))
        with torch.no_grad():
            record(f"softmax fwd {tag}", median_ms(lambda: torch.softmax(x, -1)))
            record(f"rms_norm fwd {tag}", median_ms(lambda: F.rms_norm(x, (c,), gr, 1e-6)), rms_note)
            record(f"layer_norm fwd {tag}",
                   median_ms(lambda: F.layer_norm(x, (c,), gl, bl, 1e-5)), ln_note)
        xr = x.clone().requires_grad_(True)
        grr = gr.clone().requires_grad_(True)
        glr, blr = gl.clone().requires_grad_(True), bl.clone().requires_grad_(True)
        y = torch.softmax(xr, -1)
        record(f"softmax bwd {tag}",
               median_ms(lambda: torch.autograd.grad(y, xr, dy, retain_graph=True)))
        y = F.rms_norm(xr, (c,), grr, 1e-6)
        record(f"rms_norm bwd {tag} (dx, dgamma)",
               median_ms(lambda: torch.autograd.grad(y, (xr, grr), dy, retain_graph=True)), rms_note)
        y = F.layer_norm(xr, (c,), glr, blr, 1e-5)
        record(f"layer_norm bwd {tag} (dx, dgamma, dbeta)",
               median_ms(lambda: torch.autograd.grad(y, (xr, glr, blr), dy, retain_graph=True)),
               ln_note)
        del x, dy, xr, y
    rows, w = 1_000_000, 256
    src = (torch.rand(rows, w, device=dev) + 0.5).to(bf)
    for pattern in ("random", "hub"):
        idx = torch.randint(0, rows, (rows,), device=dev)
        if pattern == "hub":
            idx[: rows // 2] = 12345
            idx = idx[torch.randperm(rows, device=dev)]
        dst = torch.zeros(rows, w, device=dev, dtype=bf)
        torch.use_deterministic_algorithms(False)
        record(f"index_add_ 1e6x256 bf16 {pattern} default(atomic)",
               median_ms(lambda: dst.index_add_(0, idx, src)))
        torch.use_deterministic_algorithms(True)
        record(f"index_add_ 1e6x256 bf16 {pattern} deterministic",
               median_ms(lambda: dst.index_add_(0, idx, src), reps=5, warm=1))
        torch.use_deterministic_algorithms(False)
        del dst


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "torch_compare.json"
    dev = torch.device("cuda")
    torch.manual_seed(0)
    print(torch.__version__, torch.cuda.get_device_name(0), flush=True)

    # Copy bandwidth (bytes read + written).
    n = 1 << 29  # 2 GiB of float32
    a = torch.rand(n, device=dev)
    b = torch.empty_like(a)
    ms = median_ms(lambda: b.copy_(a))
    record("copy 2 GiB d2d", ms, f"{2 * 4 * n / ms / 1e9:.3f} TB/s")
    del a, b

    if len(sys.argv) > 2 and sys.argv[2] == "bf16":
        bf16_section(dev)
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
        return

    # Gather / scatter-add: 10^6 x 256 rows, random indices and half on one row.
    rows, w = 1_000_000, 256
    src = torch.rand(rows, w, device=dev) + 0.5
    for pattern in ("random", "hub"):
        idx = torch.randint(0, rows, (rows,), device=dev)
        if pattern == "hub":
            idx[: rows // 2] = 12345
            idx = idx[torch.randperm(rows, device=dev)]
        record(f"index_select 1e6x256 {pattern}", median_ms(lambda: torch.index_select(src, 0, idx)))
        dst = torch.zeros(rows, w, device=dev)
        torch.use_deterministic_algorithms(False)
        record(f"index_add_ 1e6x256 {pattern} default(atomic)",
               median_ms(lambda: dst.index_add_(0, idx, src)))
        torch.use_deterministic_algorithms(True)
        record(f"index_add_ 1e6x256 {pattern} deterministic",
               median_ms(lambda: dst.index_add_(0, idx, src), reps=5, warm=1))
        torch.use_deterministic_algorithms(False)
        del dst
    del src

    # Transpose 8192 x 8192.
    x = torch.rand(8192, 8192, device=dev)
    record("permute(1,0).contiguous 8192x8192", median_ms(lambda: x.t().contiguous()))
    del x

    # Row ops, forward alone and backward through autograd.
    for (r, c) in ((16384, 4096), (64, 262144)):
        x = torch.randn(r, c, device=dev)
        g = torch.rand(c, device=dev) + 0.5
        beta = torch.rand(c, device=dev)
        dy = torch.randn(r, c, device=dev)
        tag = f"{r}x{c}"
        with torch.no_grad():
            record(f"softmax fwd {tag}", median_ms(lambda: torch.softmax(x, -1)))
            record(f"rms_norm fwd {tag}",
                   median_ms(lambda: torch.nn.functional.rms_norm(x, (c,), g, 1e-6)))
            record(f"layer_norm fwd {tag}",
                   median_ms(lambda: torch.nn.functional.layer_norm(x, (c,), g, beta, 1e-5)))
        xr = x.clone().requires_grad_(True)
        gr = g.clone().requires_grad_(True)
        br = beta.clone().requires_grad_(True)
        y = torch.softmax(xr, -1)
        record(f"softmax bwd {tag}",
               median_ms(lambda: torch.autograd.grad(y, xr, dy, retain_graph=True)))
        y = torch.nn.functional.rms_norm(xr, (c,), gr, 1e-6)
        record(f"rms_norm bwd {tag} (dx, dgamma)",
               median_ms(lambda: torch.autograd.grad(y, (xr, gr), dy, retain_graph=True)))
        y = torch.nn.functional.layer_norm(xr, (c,), gr, br, 1e-5)
        record(f"layer_norm bwd {tag} (dx, dgamma, dbeta)",
               median_ms(lambda: torch.autograd.grad(y, (xr, gr, br), dy, retain_graph=True)))
        del x, dy, xr, y

    # Sparse CSR matmul: 10^6 x 10^6 with 10 random columns per row.
    n, per = 1_000_000, 10
    crow = torch.arange(0, n * per + 1, per, device=dev, dtype=torch.int64)
    col = torch.randint(0, n, (n, per), device=dev).sort(dim=1).values.reshape(-1)
    val = torch.rand(n * per, device=dev)
    A = torch.sparse_csr_tensor(crow, col, val, (n, n))
    v = torch.rand(n, 1, device=dev)
    record("sparse CSR @ vector 1e6x1e6 1e7 nnz", median_ms(lambda: A @ v),
           "duplicate columns possible; nnz as stored")

    with open(out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
