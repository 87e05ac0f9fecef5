#!/usr/bin/env python3
"""Writes the seed corpus of the libFuzzer harnesses (tests/fuzz/corpus/).

Each harness reads its input through LLVM's FuzzedDataProvider
(fuzz_support.h): integers come off the END of the input, most significant
byte first, using only as many bytes as the range needs; strings and byte
arrays come off the FRONT. `Seed` below mirrors that, so a seed written here
drives the harness down the path described next to it. The layouts mirror
the harnesses' read order; keep both in step (run a harness with
XHAL_FUZZ_VERBOSE=1 on a seed to see the calls it made).

Usage: make_corpus.py [OUT_DIR]   (default: the corpus/ folder beside it)
"""
import os
import struct
import sys

U64 = (1 << 64) - 1


class Seed:
    def __init__(self):
        self.front = bytearray()
        self.back = bytearray()  # in the order the harness consumes it

    # ---- FuzzedDataProvider mirrors ---------------------------------------
    def _int(self, value, lo, hi, width):
        span = (hi - lo) & U64
        nbytes = 0
        while nbytes < width and (span >> (8 * nbytes)) > 0:
            nbytes += 1
        v = (value - lo) & U64
        assert 0 <= v <= span, (value, lo, hi)
        self.back += v.to_bytes(nbytes, "big") if nbytes else b""
        return self

    def pick(self, v, n):  # ConsumeIntegralInRange<uint32_t>(0, n - 1)
        return self._int(v, 0, n - 1, 4)

    def flag(self, b):  # ConsumeBool: 1 & uint8
        return self._int(1 if b else 0, 0, 255, 1)

    def u8(self, v):
        return self._int(v, 0, 255, 1)

    def u32(self, v):
        return self._int(v & 0xFFFFFFFF, 0, 0xFFFFFFFF, 4)

    def u64(self, v):
        return self._int(v & U64, 0, U64, 8)

    def i64(self, v):
        return self._int(v, -(1 << 63), (1 << 63) - 1, 8)

    def range(self, v, lo, hi):  # ConsumeIntegralInRange<int64_t>
        return self._int(v, lo, hi, 8)

    def f32_bits(self, x):
        return self.u32(struct.unpack("<I", struct.pack("<f", x))[0])

    def scalar(self, x):  # Input::scalar
        table = {0.0: 0, 1.0: 1, 0.5: 2, -2.0: 3}
        if x in table and not (x == 0.0 and str(x).startswith("-")):
            return self.pick(table[x], 5)
        self.pick(4, 5)
        return self.f32_bits(x)

    def text(self, s):  # ConsumeRandomLengthString: '\\' + other char ends it
        for ch in s.encode():
            self.front += b"\\\\" if ch == 0x5C else bytes([ch])
        self.front += b"\\ "
        return self

    def data(self):
        return bytes(self.front) + bytes(reversed(self.back))


F32, I32, I64 = 1, 4, 5
MAX_BUFFER = 1 << 16


# ---- tensors (fuzz_support.h, tensor()) -----------------------------------
class PoolModel:
    """How many buffers the harness's Pool holds (tensor reads depend on it)."""

    def __init__(self):
        self.sizes = []

    def add(self, nbytes):
        if len(self.sizes) >= 40:
            return -1
        self.sizes.append(min(nbytes, MAX_BUFFER))
        return len(self.sizes) - 1


def tensor_exact(s, pool, want):
    """Mode 0: exact, contiguous f32 in a new buffer; not NULL."""
    s.pick(0, 4)
    n = 1
    for d in want:
        n *= d
    pool.add(4 * n)
    s.pick(1, 8)  # pick(8) != 0: keep the buffer
    return s


def tensor_alias(s, pool, want, buffer_index, offset, dtype_choice=0):
    """Mode 1: the shape in an existing buffer at a 4-aligned offset."""
    s.pick(1, 4)
    s.pick(dtype_choice, 4)  # dtype_bits: 0 -> f32
    if not pool.sizes:
        n = 1
        for d in want:
            n *= d
        pool.add(4 * n)
    else:
        s.pick(buffer_index, len(pool.sizes))
        s.pick(0, 3)
        s.range(offset // 4, 0, pool.sizes[buffer_index] // 4)
    s.pick(1, 8)
    return s


def tensor_wild(s, pool, want, rank, shape, offset=0, strides=None, dtype=None, nbytes=4096):
    """Mode 2/3: every field from the input (a new buffer of nbytes)."""
    s.pick(3 if strides else 2, 4)
    s.range(nbytes, 0, MAX_BUFFER)
    s.flag(False)  # a new buffer
    s.u32(7)
    s.flag(False)
    pool.add(nbytes)
    if offset == 0:
        s.flag(True)
    else:
        s.flag(False)
        s.u64(offset)
    if dtype is None:
        s.pick(0, 4)
    else:
        s.pick(2, 4)
        s.u32(dtype)
    if rank == len(want):
        s.flag(True)
    else:
        s.flag(False)
        if 0 <= rank <= 9:
            s.flag(True)
            s.pick(rank, 10)
        else:
            s.flag(False)
            s.u32(rank)
    for k in range(8):
        v = shape[k] if k < len(shape) else 1
        w = want[k] if k < len(want) else 1
        if v == w:
            s.pick(0, 4)
        elif 0 <= v <= 64:
            s.pick(1, 4)
            s.range(v, 0, 64)
        else:
            s.pick(3, 4)
            s.i64(v)
        if strides:
            st = strides[k] if k < len(strides) else 0
            if 0 <= st <= 128:
                s.flag(True)
                s.range(st, 0, 128)
            else:
                s.flag(False)
                s.i64(st)
    s.pick(1, 8)
    return s


# ---- dense harness (fuzz_dense.cpp) ---------------------------------------
def dense_seeds():
    seeds = {}

    def begin(calls):
        s = Seed()
        s.pick(calls - 1, 8)
        return s, PoolModel()

    def op(s, code, device_ok=True):
        s.pick(code, 13)
        if code > 2 or True:  # every op reads the device choice first
            s.pick(1 if device_ok else 0, 16)

    def rows(s, r, n):
        s.range(r, 0, 16)
        s.range(n, 0, 48)

    # softmax forward and backward on valid tensors.
    for r, n in [(1, 1), (3, 5), (16, 48), (0, 7), (4, 0)]:
        s, pool = begin(2)
        op(s, 6)
        rows(s, r, n)
        tensor_exact(s, pool, [r, n])
        tensor_exact(s, pool, [r, n])
        op(s, 7)
        rows(s, r, n)
        for _ in range(3):
            tensor_exact(s, pool, [r, n])
        seeds[f"softmax_{r}x{n}"] = s
    # softmax in place (y aliases x) and at an offset.
    s, pool = begin(1)
    op(s, 6)
    rows(s, 4, 8)
    tensor_exact(s, pool, [4, 8])
    tensor_alias(s, pool, [4, 8], 0, 0)
    seeds["softmax_inplace"] = s
    s, pool = begin(1)
    op(s, 7)
    rows(s, 2, 3)
    tensor_exact(s, pool, [2, 3])  # y
    tensor_exact(s, pool, [2, 3])  # dy
    tensor_alias(s, pool, [2, 3], 1, 0)  # dx in dy's buffer
    seeds["softmax_backward_dx_is_dy"] = s
    # rms norm and layer norm, forward then backward.
    for r, n in [(1, 1), (5, 17), (16, 48), (0, 3)]:
        s, pool = begin(4)
        op(s, 8)
        rows(s, r, n)
        s.scalar(0.5)
        for shape in ([r, n], [n], [r, n], [r]):
            tensor_exact(s, pool, shape)
        op(s, 9)
        rows(s, r, n)
        for shape in ([r, n], [n], [r], [r, n], [r, n], [n]):
            tensor_exact(s, pool, shape)
        op(s, 10)
        rows(s, r, n)
        s.scalar(0.5)
        for shape in ([r, n], [n], [n], [r, n], [r], [r]):
            tensor_exact(s, pool, shape)
        op(s, 11)
        rows(s, r, n)
        for shape in ([r, n], [n], [r], [r], [r, n], [r, n], [n], [n]):
            tensor_exact(s, pool, shape)
        seeds[f"norms_{r}x{n}"] = s

    # index plan, then select and add through it.
    def plan(s, count, num_rows, idx, i32=False):
        s.pick(count, 65)
        s.range(num_rows, 0, 300)
        s.pick(1, 4)  # num_rows not raw
        s.flag(i32)
        s.pick(1, 8)  # dtype from the flag
        for v in idx:
            s.pick(2, 4)
            s.range(v, 0, num_rows - 1)
        s.pick(1, 16)  # indices not NULL

    for count, num_rows, w, i32 in [(4, 6, 3, False), (10, 3, 5, True), (1, 1, 1, False), (0, 5, 2, False),
                                    (64, 200, 16, True)]:
        s, pool = begin(3)
        op(s, 2)
        idx = [(i * 7 + 1) % max(num_rows, 1) for i in range(count)]
        plan(s, count, num_rows, idx, i32)
        op(s, 3)
        s.pick(0, 2)  # plan 0 of 1
        s.range(w, 0, 16)
        tensor_exact(s, pool, [num_rows, w])
        tensor_exact(s, pool, [count, w])
        op(s, 4)
        s.pick(0, 2)
        s.range(w, 0, 16)
        s.scalar(0.5)
        tensor_exact(s, pool, [count, w])
        tensor_exact(s, pool, [num_rows, w])
        seeds[f"index_{count}_{num_rows}_{w}{'_i32' if i32 else ''}"] = s
    # index_add into a destination that aliases its source.
    s, pool = begin(2)
    op(s, 2)
    plan(s, 3, 3, [0, 1, 2])
    op(s, 4)
    s.pick(0, 2)
    s.range(2, 0, 16)
    s.scalar(1.0)
    tensor_exact(s, pool, [3, 2])
    tensor_alias(s, pool, [3, 2], 0, 0)
    seeds["index_add_aliased"] = s

    # permute of 3-d tensors, each rotation and a swap.
    def permute(s, pool, a, b, c, kind, arg):
        op(s, 5)
        s.range(a, 0, 9)
        s.range(b, 0, 9)
        s.range(c, 0, 9)
        tensor_exact(s, pool, [a, b, c])
        s.pick(kind, 4)
        perm = [0, 1, 2]
        if kind == 0:
            s.pick(arg[0], 3)
            perm = [(k + arg[0]) % 3 for k in range(3)]
        else:
            s.pick(arg[0], 3)
            s.pick(arg[1], 3)
            perm[arg[0]], perm[arg[1]] = arg[1], arg[0]
        dims = [a, b, c]
        tensor_exact(s, pool, [dims[perm[0]], dims[perm[1]], dims[perm[2]]])
        s.pick(1, 16)  # perm not NULL

    for a, b, c, kind, arg in [(2, 3, 4, 0, (1,)), (5, 1, 7, 0, (2,)), (3, 3, 3, 1, (0, 2)), (9, 9, 9, 0, (1,)),
                               (1, 0, 2, 1, (0, 1))]:
        s, pool = begin(1)
        permute(s, pool, a, b, c, kind, arg)
        seeds[f"permute_{a}{b}{c}_{kind}"] = s

    # tensor_init and permute_view.
    def tensor_init(s, pool, nbytes, offset, rank, shape):
        op(s, 0)
        s.range(nbytes, 0, 4096)
        s.u32(1)
        pool.add(nbytes)
        s.pick(1, 6)  # a buffer
        if offset <= 64:
            s.flag(True)
            s.range(offset, 0, 64)
        else:
            s.flag(False)
            s.u64(offset)
        s.pick(0, 4)  # f32
        s.flag(True)
        s.pick(rank, 9)
        for k in range(16):
            v = shape[k] if k < len(shape) else 1
            if 0 <= v <= 64:
                s.flag(True)
                s.range(v, 0, 64)
            else:
                s.flag(False)
                s.i64(v)
        s.pick(1, 8)  # shape not NULL

    s, pool = begin(2)
    tensor_init(s, pool, 64, 0, 2, [4, 4])
    tensor_init(s, pool, 0, 0, 0, [])
    seeds["tensor_init"] = s
    s, pool = begin(1)
    tensor_init(s, pool, 64, 0, 8, [1, 2, 1, 2, 1, 2, 1, 2])
    seeds["tensor_init_rank8"] = s

    def permute_view(s, pool, dims, kind, arg):
        op(s, 1)
        s.pick(len(dims) - 1, 8)
        for d in dims:
            s.range(d, 0, 8)
        tensor_exact(s, pool, dims[:4])
        s.pick(kind, 4)
        if kind == 0:
            s.pick(arg, len(dims[:4]))
        return s

    s, pool = begin(2)
    permute_view(s, pool, [2, 3, 4], 0, 1)
    permute_view(s, pool, [5, 6], 0, 1)
    seeds["permute_view"] = s

    # Wild descriptors: a huge dim next to a zero (signed overflow of the
    # contiguous strides, issue 9 defect 7), rank 9, a raw dtype, a
    # misaligned offset, explicit strides.
    s, pool = begin(1)
    op(s, 6)
    rows(s, 0, 4)
    tensor_wild(s, pool, [0, 4], 3, [0, 3260886666541213964, 4])
    tensor_exact(s, pool, [0, 4])
    seeds["softmax_zero_times_huge"] = s
    s, pool = begin(1)
    op(s, 6)
    rows(s, 2, 4)
    tensor_wild(s, pool, [2, 4], 9, [2, 4])
    tensor_exact(s, pool, [2, 4])
    seeds["softmax_rank9"] = s
    s, pool = begin(1)
    op(s, 6)
    rows(s, 2, 4)
    tensor_wild(s, pool, [2, 4], 2, [2, 4], dtype=157)
    tensor_exact(s, pool, [2, 4])
    seeds["softmax_raw_dtype"] = s
    s, pool = begin(1)
    op(s, 6)
    rows(s, 2, 4)
    tensor_wild(s, pool, [2, 4], 2, [2, 4], offset=2)
    tensor_exact(s, pool, [2, 4])
    seeds["softmax_misaligned"] = s
    s, pool = begin(1)
    op(s, 5)
    s.range(2, 0, 9)
    s.range(3, 0, 9)
    s.range(4, 0, 9)
    tensor_wild(s, pool, [2, 3, 4], 3, [2, 3, 4], strides=[1, 2, 6])
    s.pick(0, 4)
    s.pick(0, 3)
    tensor_exact(s, pool, [2, 3, 4])
    s.pick(1, 16)
    seeds["permute_strided_src"] = s
    return seeds


# ---- sparse harness (fuzz_sparse.cpp) -------------------------------------
def pattern_bits(rows, cols, fn):
    """Per row, the u32 mask of its columns (first 32)."""
    return [sum(1 << j for j in range(min(cols, 32)) if fn(i, j)) for i in range(rows)]


def desc(s, mode, rows, cols, masks=None, triangle=0, dtype="i64", values="ints", nnz_values=None,
         trims=(0, 0, 0), raw=None, value_dtype="f32", both_values=False):
    """read_desc(): mode 0 valid, 1 triangular, 2 raw, 3 device buffers;
    value_dtype "f32" (the field left 0), "f64", "f16", "bf16" or an int
    (raw)."""
    s.pick(mode, 4)
    if mode == 2:
        s.range(rows, -2, 24)
        s.range(cols, -2, 24)
    elif mode == 1:
        s.range(rows, 0, 24)
    else:
        s.range(rows, 0, 24)
        s.range(cols, 0, 24)
    s.pick(triangle, 2)
    if mode == 2:
        nnz, row_ptr, col_idx = raw
        s.range(nnz, -2, 96)
        for v in row_ptr:
            s.range(v, -2, nnz + 2)
        for v in col_idx:
            s.range(v, -2, cols + 2)
        count = max(nnz, 0)
    else:
        count = 0
        for i, m in enumerate(masks):
            s.u32(m)
            for j in range(min(cols, 32)):
                on = (m >> j) & 1
                if mode == 1:
                    on = j == i or (on and (j < i if triangle == 0 else j > i))
                count += 1 if on else 0
    s.pick({"i64": 0, "i32": 1, "raw": 2}[dtype], 4)
    if dtype == "raw":
        s.u32(157)
    s.pick({"none": 0, "ints": 1, "bits": 2}[values], 3)
    for k in range(count if values != "none" else 0):
        if values == "ints":
            s.range(((k * 5 + 2) % 9) - 4 or 1, -4, 4)
        else:
            s.f32_bits(1.0 + k / 8.0)
    if value_dtype == "f32":
        s.pick(0, 8)
    elif value_dtype in ("f64", "f16", "bf16"):
        s.pick({"f64": 1, "f16": 3, "bf16": 4}[value_dtype], 8)
        s.pick(0 if both_values else 1, 4)
    else:
        s.pick(2, 8)
        s.u32(value_dtype)
    if mode == 3:
        s.range(trims[0], 0, 2)
        s.range(trims[1], 0, 2)
        if values != "none":
            s.range(trims[2], 0, 2)
    s.pick(1, 8)  # full struct_size
    return count


def sparse_seeds():
    seeds = {}

    def op(s, code, matrix, nmats, trans=0, device_ok=True, rows_if_null=0):
        s.pick(code, 10)
        s.pick(matrix, nmats + 1)
        if matrix >= nmats:  # no matrix: the harness reads a row count
            s.range(rows_if_null, 0, 4)
        s.pick(1 if device_ok else 0, 16)
        s.pick(trans, 3)

    def begin(mats, calls):
        s = Seed()
        s.pick(mats - 1, 2)
        return s

    def spmv(s, pool, matrix, nmats, trans, op_rows, op_cols):
        op(s, 0, matrix, nmats, trans, rows_if_null=min(op_rows, 4))
        s.scalar(1.0)
        s.scalar(0.5)
        tensor_exact(s, pool, [op_cols])
        tensor_exact(s, pool, [op_rows])

    def spmm(s, pool, matrix, nmats, trans, op_rows, op_cols, k):
        op(s, 1, matrix, nmats, trans)
        s.range(k, 0, 5)
        s.scalar(1.0)
        s.scalar(0.0)
        tensor_exact(s, pool, [op_cols, k])
        tensor_exact(s, pool, [op_rows, k])

    def solve(s, pool, matrix, nmats, trans, tri, diag, n, k, inplace):
        op(s, 2, matrix, nmats, trans)
        s.pick(tri, 3)
        s.pick(diag, 3)
        s.flag(k is not None)
        s.range(k or 0, 0, 4)
        shape = [n, k] if k is not None else [n]
        tensor_exact(s, pool, shape)
        s.flag(inplace)
        if not inplace:
            tensor_exact(s, pool, shape)

    def solve_backward(s, pool, matrix, nmats, trans, tri, diag, n, k, nnz, with_ga):
        op(s, 3, matrix, nmats, trans)
        s.pick(tri, 3)
        s.pick(diag, 3)
        s.flag(k is not None)
        s.range(k or 0, 0, 4)
        shape = [n, k] if k is not None else [n]
        for _ in range(3):
            tensor_exact(s, pool, shape)
        s.flag(with_ga)
        tensor_exact(s, pool, [nnz])

    def read(s, matrix, nmats, which=7):
        op(s, 5, matrix, nmats)
        s.pick(which, 8)

    # Triangular matrices: every solve and its backward, both transposes.
    for n, tri, dtype in [(1, 0, "i64"), (5, 0, "i32"), (6, 1, "i64"), (12, 1, "i32"), (24, 0, "i64")]:
        s = begin(1, 0)
        masks = pattern_bits(n, n, lambda i, j: (i * 3 + j) % 4 == 0)
        nnz = desc(s, 1, n, n, masks, triangle=tri, dtype=dtype)
        calls = []
        s.pick(9, 10)  # 10 calls
        pool = PoolModel()
        for trans in (0, 1):
            for diag in (0, 1):
                solve(s, pool, 0, 1, trans, tri if trans == 0 else tri, diag, n, None, False)
        solve(s, pool, 0, 1, 0, tri, 0, n, 3, False)
        solve(s, pool, 0, 1, 1, tri, 1, n, 2, True)
        solve_backward(s, pool, 0, 1, 0, tri, 0, n, None, nnz, True)
        solve_backward(s, pool, 0, 1, 1, tri, 1, n, 2, nnz, False)
        spmv(s, pool, 0, 1, 0, n, n)
        read(s, 0, 1)
        seeds[f"triangular_{n}_{'upper' if tri else 'lower'}_{dtype}"] = s
    # Rectangular matrices: spmv/spmm both ways, spgemm with itself's
    # transpose-compatible partner, read, set_values.
    for rows, cols, dtype in [(3, 5, "i64"), (7, 2, "i32"), (1, 1, "i64"), (0, 4, "i64"), (16, 16, "i32")]:
        s = begin(2, 0)
        pool = PoolModel()
        a = pattern_bits(rows, cols, lambda i, j: (i + 2 * j) % 3 == 0)
        nnz_a = desc(s, 0, rows, cols, a, dtype=dtype)
        b = pattern_bits(cols, rows, lambda i, j: (i * j) % 2 == 1 or i == j)
        desc(s, 0, cols, rows, b, dtype="i64")
        s.pick(7, 10)  # 8 calls
        spmv(s, pool, 0, 2, 0, rows, cols)
        spmv(s, pool, 0, 2, 1, cols, rows)
        spmm(s, pool, 0, 2, 0, rows, cols, 3)
        spmm(s, pool, 1, 2, 1, rows, cols, 2)
        # spgemm A * B (a third matrix appears)
        op(s, 4, 0, 2)
        s.pick(1, 3)
        read(s, 0, 3)
        # set_values from the host, small integers
        op(s, 6, 0, 3)
        for k in range(nnz_a):
            s.flag(True)
            s.range(k % 9 - 4, -4, 4)
        s.pick(1, 16)
        # set_values_tensor
        op(s, 7, 0, 3)
        tensor_exact(s, pool, [nnz_a])
        seeds[f"rect_{rows}x{cols}_{dtype}"] = s
    # f64 matrices (docs/semantics.md 7.3): a triangular one with f32
    # operands (refused), csr_read (f32 values refused) and set_values (the
    # f32 call refused, the typed one taken); two rectangular ones and their
    # spgemm; a description with both value pointers, and one with a raw
    # value dtype (both refused).
    s = begin(1, 0)
    pool = PoolModel()
    masks = pattern_bits(6, 6, lambda i, j: (i + j) % 3 == 0)
    nnz = desc(s, 1, 6, 6, masks, triangle=0, value_dtype="f64")
    s.pick(3, 10)  # 4 calls
    solve(s, pool, 0, 1, 0, 0, 0, 6, None, False)
    spmv(s, pool, 0, 1, 0, 6, 6)
    read(s, 0, 1)
    op(s, 6, 0, 1)
    for k in range(nnz):
        s.flag(True)
        s.range(k % 9 - 4, -4, 4)
    s.pick(1, 16)
    seeds["f64_triangular_6"] = s
    s = begin(2, 0)
    pool = PoolModel()
    desc(s, 0, 5, 4, pattern_bits(5, 4, lambda i, j: (i + j) % 2 == 0), value_dtype="f64")
    desc(s, 3, 4, 3, pattern_bits(4, 3, lambda i, j: i >= j), value_dtype="f64")
    s.pick(1, 10)  # 2 calls
    op(s, 4, 0, 2)
    s.pick(1, 3)
    read(s, 2, 3)
    seeds["f64_rect_spgemm"] = s
    for name, vd, both in [("f64_both_value_pointers", "f64", True), ("raw_value_dtype_5", 5, False)]:
        s = begin(1, 0)
        pool = PoolModel()
        desc(s, 0, 3, 3, pattern_bits(3, 3, lambda i, j: i == j), value_dtype=vd, both_values=both)
        s.pick(0, 10)
        spmv(s, pool, 0, 0, 0, 1, 1)
        seeds[name] = s
    # f16 and bf16 matrices (docs/semantics.md 7.4): spmv with f32 operands
    # (refused, naming the tensor), csr_read (f32 values refused, then read
    # in the matrix's dtype) and set_values (the typed call taken).
    for vd, mode in [("f16", 0), ("bf16", 3)]:
        s = begin(1, 0)
        pool = PoolModel()
        nnz = desc(s, mode, 4, 4, pattern_bits(4, 4, lambda i, j: i >= j), value_dtype=vd)
        s.pick(2, 10)  # 3 calls
        spmv(s, pool, 0, 1, 0, 4, 4)
        read(s, 0, 1)
        op(s, 6, 0, 1)
        for k in range(nnz):
            s.flag(True)
            s.range(k % 9 - 4, -4, 4)
        s.pick(1, 16)
        seeds[f"{vd}_spmv_read_set"] = s
    # The pattern from device buffers (one trimmed short), values none.
    for trims, values in [((0, 0, 0), "ints"), ((1, 0, 0), "ints"), ((0, 2, 0), "none"), ((0, 0, 1), "bits")]:
        s = begin(1, 0)
        pool = PoolModel()
        masks = pattern_bits(4, 4, lambda i, j: i >= j)
        desc(s, 3, 4, 4, masks, values=values, trims=trims)
        created = trims == (0, 0, 0)  # a trimmed buffer must be refused
        s.pick(0, 10)
        if created:
            spmv(s, pool, 0, 1, 0, 4, 4)
        else:
            spmv(s, pool, 0, 0, 0, 4, 4)
        seeds[f"buffers_{trims[0]}{trims[1]}{trims[2]}_{values}"] = s
    # Raw arrays: broken structures the core must name.
    for name, rows, cols, raw in [
        ("unsorted_cols", 2, 3, (3, [0, 2, 3], [2, 1, 0])),
        ("rowptr_decreasing", 3, 3, (2, [0, 2, 1, 2], [0, 1])),
        ("col_out_of_range", 1, 2, (1, [0, 1], [4])),
        ("nnz_mismatch", 2, 2, (3, [0, 1, 2], [0, 1, 0])),
        ("negative_rows", -1, 2, (0, [], [])),
        ("first_not_zero", 1, 1, (1, [1, 1], [0])),
    ]:
        s = begin(1, 0)
        pool = PoolModel()
        desc(s, 2, rows, cols, raw=raw)
        s.pick(0, 10)
        spmv(s, pool, 0, 0, 0, 1, 1)  # no matrix: a NULL handle, 1 row
        seeds[f"raw_{name}"] = s
    # Raw enum values for transpose/triangle/diagonal, an index dtype out
    # of range (issue 9 defect 7).
    s = begin(1, 0)
    pool = PoolModel()
    masks = pattern_bits(3, 3, lambda i, j: i == j)
    desc(s, 1, 3, 3, masks)
    s.pick(1, 10)
    s.pick(2, 10)  # csr_solve
    s.pick(0, 2)
    s.pick(1, 16)
    s.pick(2, 3)
    s.u32(157)  # raw transpose
    s.pick(2, 3)
    s.u32(99)  # raw triangle
    s.pick(0, 3)
    s.flag(False)
    s.range(0, 0, 4)
    tensor_exact(s, pool, [3])
    s.flag(True)
    spmv(s, pool, 0, 1, 0, 3, 3)
    seeds["raw_enums"] = s
    s = begin(1, 0)
    desc(s, 0, 2, 2, pattern_bits(2, 2, lambda i, j: True), dtype="raw")
    s.pick(0, 10)
    op(s, 8, 0, 0, rows_if_null=2)
    s.pick(0, 4)  # another matrix mid-way: mode 0
    s.range(0, 0, 24)
    s.range(0, 0, 24)
    s.pick(0, 2)
    s.pick(0, 4)
    s.pick(0, 3)
    s.pick(1, 8)
    seeds["raw_index_dtype"] = s
    return seeds


# ---- selector harness (fuzz_selector.cpp) ----------------------------------
def selector_seeds():
    pairs = [
        ("", ""), ("cpu", "cpu"), ("cpu", ""), ("*", "cpu:0"), ("*", "beta:1"), ("alpha,beta", "beta"),
        ("beta:1,beta", ""), ("*,!beta:1", "beta"), ("!gamma", "gamma"), ("*:0", "alpha"),
        ("beta:GPU-shared-0", ""), ("*:GPU-shared-0", "gamma"), ("*:GPU-shared-1,cpu", "cpu"),
        ("!cpu:*", ""), ("!*", ""), ("!beta:0,!alpha", "*"), ("  cpu , beta ", " beta:0 "),
        ("cuda,,cpu", "cpu"), ("cpu,", ""), ("!", ""), (":0", ""), ("cuda:", ""), ("cu da", ""),
        ("cuda;cpu", ""), ("cu*", ""), ("cpu:4294967295", ""), ("cpu:4294967296", ""), ("nosuch", ""),
        ("cpu", "nosuch"), ("cpu", "beta"), ("alpha:pci:0000:17:00.0", ""), ("*:*", "*:1"),
        ("beta:99999999999999999999", ""), ("\t cpu\n", "\rcpu"), ("cpu", "cpu,,"),
        ("marker,alpha:1", "alpha:1"), ("*,!*", ""), ("!alpha:1", "alpha"), ("cpu\\x", ""),
    ]
    seeds = {}
    for i, (rs, os_) in enumerate(pairs):
        s = Seed()
        s.text(rs).text(os_)
        s.pick(1, 4)
        seeds[f"sel_{i:02d}"] = s
    s = Seed()
    s.text("beta").text("ignored")
    s.pick(0, 4)  # open with NULL
    seeds["sel_open_null"] = s
    return seeds


# ---- plugin-table harness (fuzz_plugin_table.cpp) ---------------------------
SLOTS = 34                 # function pointers in xhal_plugin_api_t (ABI 1.2)
API_SIZE = 32 + SLOTS * 8
HEADER = 32
PLUGIN_INFO_SIZE = 64   # sizeof(xhal_plugin_info_t)
DEVICE_INFO_SIZE = 120  # sizeof(xhal_device_info_t)


def plugin_script(s, entry=0, struct_size=("full",), abi_major=1, abi_minor=None, name=("fuzz",),
                  version=("default",), null_slots=("none",), odd_slots=("none",), odd_status=("plugin_error",),
                  odd_throw=False, note_kind=1, reenter=False, device_count=("one",), kind=0, unterminated=False,
                  memory=1 << 30, op_dtypes=0x2):
    s.pick({0: 2, 1: 0, 2: 1}[entry], 16)
    k = struct_size[0]
    if k == "full":
        s.pick(0, 6)
    elif k == "any":
        s.pick(1, 6)
        s.range(struct_size[1], 0, API_SIZE + 64)
    elif k == "header":
        s.pick(2, 6)
    elif k == "required":
        s.pick(3, 6)
    elif k == "longer":
        s.pick(4, 6)
        s.range(struct_size[1], 1, 64)
    if abi_major == 1:
        s.pick(3, 8)
    elif abi_major == 0:
        s.pick(1, 8)
    elif abi_major == 2:
        s.pick(2, 8)
    else:
        s.pick(0, 8)
        s.u32(abi_major)
    if abi_minor is None:
        s.pick(1, 4)
    else:
        s.pick(0, 4)
        s.u32(abi_minor)
    if name[0] == "fuzz":
        s.pick(2, 8)
    elif name[0] is None:
        s.pick(0, 8)
    else:
        s.pick(1, 8)
        s.text(name[0])
    if version[0] == "default":
        s.pick(2, 8)
    elif version[0] is None:
        s.pick(0, 8)
    else:
        s.pick(1, 8)
        s.text(version[0])
    if null_slots[0] == "none":
        s.pick(0, 4)
    elif null_slots[0] == "one":
        s.pick(1, 4)
        s.pick(null_slots[1], SLOTS)
    else:
        s.pick(2, 4)
        s.u64(null_slots[1])
    if odd_slots[0] == "none":
        s.pick(0, 4)
    elif odd_slots[0] == "one":
        s.pick(1, 4)
        s.pick(odd_slots[1], 14)
    else:
        s.pick(2, 4)
        s.u32(odd_slots[1])
    if odd_status[0] == "enum":
        s.pick(0, 3)
        s.pick(odd_status[1], 14)
    elif odd_status[0] == "raw":
        s.pick(1, 3)
        s.u32(odd_status[1])
    else:
        s.pick(2, 3)
    s.pick(0 if odd_throw else 1, 8)
    s.pick(note_kind, 3)
    s.pick(0 if reenter else 1, 16)
    dc = device_count[0]
    if dc == "zero":
        s.pick(0, 6)
    elif dc == "one":
        s.pick(1, 6)
    elif dc == "two":
        s.pick(2, 6)
    elif dc == "max":
        s.pick(3, 6)
    else:
        s.pick(4, 6)
        s.u32(device_count[1])
    if kind <= 2:
        s.pick(1, 4)
        s.pick(kind, 3)
    else:
        s.pick(0, 4)
        s.u32(kind)
    s.pick(0 if unterminated else 1, 8)
    s.u64(memory)
    s.u32(op_dtypes)
    s.pick(1, 16)  # open_gives_null: no
    return s


def plugin_actions(s, devices=1, open_ok=True, alloc_ok=True, info_size=None, device_size=None,
                   nbytes=64, fill_shift=2):
    """What the harness reads after the script: the plugin info's size, each
    listed device's info size (up to 3), then, once device 0 opened, the
    buffer size and (once allocated) the fill pattern size."""
    if info_size is None:
        s.pick(1, 4)
    else:
        s.pick(0, 4)
        s.range(info_size, 0, PLUGIN_INFO_SIZE)
    for d in range(min(devices, 3)):
        if device_size is None or d > 0:
            s.pick(1, 4)
        else:
            s.pick(0, 4)
            s.range(device_size, 0, DEVICE_INFO_SIZE)
    if devices and open_ok:
        s.range(nbytes, 0, 256)
        if alloc_ok:
            s.pick(fill_shift, 3)
    return s


def plugin_seeds():
    cases = {
        "good": {},
        "good_two_devices": {"device_count": ("two",)},
        "good_no_device": {"device_count": ("zero",)},
        "good_longer_table": {"struct_size": ("longer", 16), "abi_minor": 7},
        "good_required_only": {"struct_size": ("required",)},
        "good_ops_dropped": {"null_slots": ("mask", 0xFFFFFFFFFFFFC000)},
        "entry_null": {"entry": 1},
        "entry_throws": {"entry": 2},
        "tiny_table": {"struct_size": ("any", 8)},
        "header_only": {"struct_size": ("header",)},
        "table_ends_mid_slot": {"struct_size": ("any", HEADER + 5 * 8 + 4)},
        "major_2": {"abi_major": 2},
        "major_0": {"abi_major": 0},
        "major_raw": {"abi_major": 0xDEADBEEF},
        "name_null": {"name": (None,)},
        "name_other": {"name": ("other",)},
        "name_empty": {"name": ("",)},
        "version_null": {"version": (None,)},
        "version_custom": {"version": ("1.2.3-rc",)},
        "no_buffer_fill": {"null_slots": ("one", 13)},
        "no_init": {"null_slots": ("one", 0)},
        "half_plan_pair": {"null_slots": ("one", 15)},
        "half_csr_pair": {"null_slots": ("one", 25)},
        "init_fails": {"odd_slots": ("one", 0)},
        "init_raw_status": {"odd_slots": ("one", 0), "odd_status": ("raw", 1234)},
        "init_ok_via_odd": {"odd_slots": ("one", 0), "odd_status": ("enum", 0)},
        "init_throws": {"odd_slots": ("one", 0), "odd_throw": True},
        "init_reenters": {"reenter": True},
        "note_unterminated": {"note_kind": 2},
        "count_fails": {"odd_slots": ("one", 2)},
        "count_throws": {"odd_slots": ("one", 2), "odd_throw": True},
        "count_max": {"device_count": ("max",)},
        "count_raw": {"device_count": ("raw", 70000)},
        "info_fails": {"odd_slots": ("one", 3)},
        "kind_garbage": {"kind": 57},
        "name_unterminated": {"unterminated": True},
        "open_fails": {"odd_slots": ("one", 4)},
        "open_throws": {"odd_slots": ("one", 4), "odd_throw": True},
        "allocate_fails": {"odd_slots": ("one", 8), "odd_status": ("enum", 5)},
        "allocate_throws": {"odd_slots": ("one", 8), "odd_throw": True},
        "write_fails": {"odd_slots": ("one", 10)},
        "read_raw_status": {"odd_slots": ("one", 11), "odd_status": ("raw", 0x7FFFFFFF)},
        "copy_fill_fail": {"odd_slots": ("mask", (1 << 12) | (1 << 13))},
        "sync_fails": {"odd_slots": ("one", 6)},
        "counters_fail": {"odd_slots": ("one", 7)},
    }
    # What the harness then sees: how many devices are listed, whether
    # device 0 opens and a buffer allocates (defaults: 1, yes, yes).
    rejected = {"entry_null", "entry_throws", "tiny_table", "header_only", "table_ends_mid_slot", "major_2",
                "major_0", "major_raw", "name_null", "name_other", "name_empty", "version_null", "no_buffer_fill",
                "no_init", "half_plan_pair", "half_csr_pair", "init_fails", "init_raw_status", "init_throws",
                "count_fails", "count_throws", "count_max", "count_raw", "info_fails", "kind_garbage",
                "init_reenters"}
    outcome = {"good_two_devices": {"devices": 2}, "good_no_device": {"devices": 0},
               "open_fails": {"open_ok": False}, "open_throws": {"open_ok": False},
               "allocate_fails": {"alloc_ok": False}, "allocate_throws": {"alloc_ok": False}}
    seeds = {}
    for name, kw in cases.items():
        s = Seed()
        plugin_script(s, **kw)
        plugin_actions(s, **({"devices": 0} if name in rejected else outcome.get(name, {})))
        seeds[f"table_{name}"] = s
    # struct_size of the info structs straddling a field (defect 3).
    for sz in (0, 4, 8, 12, 20, 52, 60):
        s = Seed()
        plugin_script(s)
        plugin_actions(s, info_size=sz, device_size=sz + 40)
        seeds[f"info_size_{sz}"] = s
    return seeds


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    total = 0
    for harness, seeds in (("dense", dense_seeds()), ("sparse", sparse_seeds()), ("selector", selector_seeds()),
                           ("plugin_table", plugin_seeds())):
        folder = os.path.join(out, harness)
        os.makedirs(folder, exist_ok=True)
        # Generated seeds are rewritten; inputs a fuzzer found (named with
        # hyphens, as in findings/) stay in the corpus that replays them.
        for old in os.listdir(folder):
            if "-" not in old:
                os.remove(os.path.join(folder, old))
        for name, seed in seeds.items():
            data = seed.data()
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
            total += len(data)
        print(f"{harness}: {len(seeds)} seeds")
    print(f"{total} bytes in all")


if __name__ == "__main__":
    main()
