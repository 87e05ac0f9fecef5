"""CSR matrices and sparse ops against NumPy references. With at most 32
entries per row the canonical sums are plain left-to-right float32 sums from
+0 (docs/semantics.md 3.7), so spmv, spmm, the triangular solves and spgemm
are compared exactly with a float32 reference that adds in the same order."""

import numpy as np
import pytest

import xhal

F32 = np.float32


def random_csr(rng, rows, cols, density, index_dtype=np.int32, lower=False, unit=False):
    a = np.where(rng.random((rows, cols)) < density, rng.standard_normal((rows, cols)), 0).astype(F32)
    if lower:
        a = np.tril(a)
        np.fill_diagonal(a, 0)
        a += np.diag(rng.uniform(1.0, 2.0, rows).astype(F32))
    return a


def csr_arrays(a, index_dtype=np.int32):
    rows, cols = np.nonzero(a)
    rp = np.zeros(a.shape[0] + 1, dtype=index_dtype)
    np.cumsum(np.bincount(rows, minlength=a.shape[0]), out=rp[1:])
    return rp, cols.astype(index_dtype), a[rows, cols].astype(F32)


def seq_dot(vals, xs):
    s = F32(0)
    for v, x in zip(vals, xs):
        s = F32(s + F32(F32(v) * F32(x)))
    return s


def ref_spmv(a, x, alpha, beta, y, trans=False):
    m = a.T if trans else a
    out = np.empty(m.shape[0], F32)
    for i in range(m.shape[0]):
        nz = np.nonzero(m[i])[0]
        t = seq_dot(m[i, nz], x[nz])
        out[i] = F32(alpha) * t if beta == 0 else F32(F32(F32(alpha) * t) + F32(F32(beta) * y[i]))
    return out


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_create_read_set_values(dev, rng, index_dtype):
    a = random_csr(rng, 6, 5, 0.4)
    rp, ci, v = csr_arrays(a, index_dtype)
    m = xhal.CsrMatrix(dev, rp, ci, v, shape=a.shape)
    assert m.shape == (6, 5) and m.nnz == len(v)
    assert m.index_dtype == (xhal.int32 if index_dtype == np.int32 else xhal.int64)
    rp2, ci2, v2 = m.read()
    np.testing.assert_array_equal(rp2, rp)
    np.testing.assert_array_equal(ci2, ci)
    np.testing.assert_array_equal(v2, v)
    m.set_values(v * 2)
    np.testing.assert_array_equal(m.read()[2], v * 2)
    m.set_values(xhal.asarray(v * 3, device=dev))
    np.testing.assert_array_equal(m.to_dense(), a * 3)
    m.release()


def test_from_scipy_like(dev):
    class S:
        indptr = np.array([0, 1, 3])
        indices = np.array([1, 0, 1])
        data = np.array([1.0, 2.0, 3.0])
        shape = (2, 2)
    m = xhal.CsrMatrix.from_scipy(dev, S)
    np.testing.assert_array_equal(m.to_dense(), [[0, 1], [2, 3]])


def test_create_from_device_tensors(dev):
    rp = xhal.asarray(np.array([0, 1, 3], np.int32), device=dev)
    ci = xhal.asarray(np.array([1, 0, 1], np.int32), device=dev)
    v = xhal.asarray(np.array([1, 2, 3], F32), device=dev)
    m = xhal.CsrMatrix(dev, rp, ci, v, shape=(2, 2))
    np.testing.assert_array_equal(m.to_dense(), [[0, 1], [2, 3]])


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_spmv_exact(dev, rng, trans, beta):
    a = random_csr(rng, 7, 9, 0.5)
    m = xhal.CsrMatrix.from_dense(dev, a)
    x = rng.standard_normal(7 if trans else 9).astype(F32)
    y0 = rng.standard_normal(9 if trans else 7).astype(F32)
    y = xhal.asarray(y0, device=dev)
    xhal.spmv(dev, m, "T" if trans else "N", 1.5, xhal.asarray(x, device=dev), beta, y)
    np.testing.assert_array_equal(y.numpy(), ref_spmv(a, x, 1.5, beta, y0, trans))


def test_spmm_exact(dev, rng):
    a = random_csr(rng, 5, 6, 0.5)
    m = xhal.CsrMatrix.from_dense(dev, a)
    X = rng.standard_normal((6, 3)).astype(F32)
    Y = xhal.spmm(dev, m, xhal.NO_TRANSPOSE, 2.0, xhal.asarray(X, device=dev), 0.0)
    ref = np.stack([ref_spmv(a, X[:, c], 2.0, 0.0, None) for c in range(3)], axis=1)
    np.testing.assert_array_equal(Y.numpy(), ref)


def ref_lower_solve(a, b, unit=False):
    n = a.shape[0]
    x = np.zeros(n, F32)
    for k in range(n):
        nz = [j for j in np.nonzero(a[k])[0] if j != k]
        s = seq_dot(a[k, nz], x[nz])
        x[k] = F32(b[k] - s) if unit else F32(F32(b[k] - s) / a[k, k])
    return x


def ref_upper_solve(a, b):
    n = a.shape[0]
    x = np.zeros(n, F32)
    for k in reversed(range(n)):
        nz = [j for j in np.nonzero(a[k])[0] if j != k]
        s = seq_dot(a[k, nz], x[nz])
        x[k] = F32(F32(b[k] - s) / a[k, k])
    return x


@pytest.mark.parametrize("unit", [False, True])
def test_csr_solve_exact(dev, rng, unit):
    a = random_csr(rng, 8, 8, 0.4, lower=True)
    m = xhal.CsrMatrix.from_dense(dev, a)
    b = rng.standard_normal(8).astype(F32)
    x = xhal.csr_solve(dev, m, "N", "lower", "unit" if unit else "stored",
                       xhal.asarray(b, device=dev))
    np.testing.assert_array_equal(x.numpy(), ref_lower_solve(a, b, unit))
    # and against the float64 solution
    if not unit:
        np.testing.assert_allclose(x.numpy(), np.linalg.solve(a.astype(np.float64), b), rtol=1e-4, atol=1e-5)


def test_csr_solve_transposed_and_in_place(dev, rng):
    a = random_csr(rng, 6, 6, 0.5, lower=True)
    m = xhal.CsrMatrix.from_dense(dev, a)
    b = rng.standard_normal(6).astype(F32)
    t = xhal.asarray(b, device=dev)
    xhal.csr_solve(dev, m, xhal.TRANSPOSE, xhal.LOWER, xhal.STORED_DIAGONAL, t, t)   # in place
    np.testing.assert_array_equal(t.numpy(), ref_upper_solve(a.T.copy(), b))


def test_csr_solve_backward(dev, rng):
    a = random_csr(rng, 7, 7, 0.5, lower=True)
    m = xhal.CsrMatrix.from_dense(dev, a)
    b = rng.standard_normal(7).astype(F32)
    x = xhal.csr_solve(dev, m, "N", "lower", "stored", xhal.asarray(b, device=dev))
    dx = rng.standard_normal(7).astype(F32)
    ga = xhal.zeros((m.nnz,), device=dev)
    gb, ga2 = xhal.csr_solve_backward(dev, m, "N", "lower", "stored", x,
                                      xhal.asarray(dx, device=dev), None, ga)
    assert ga2 is ga
    gb_ref = ref_upper_solve(a.T.copy(), dx)
    np.testing.assert_array_equal(gb.numpy(), gb_ref)
    rp, ci, _ = m.read()
    xv = x.numpy()
    ga_ref = np.array([-(F32(0) + F32(gb_ref[i] * xv[j]))
                       for i in range(7) for j in ci[rp[i]:rp[i + 1]]], dtype=F32)
    np.testing.assert_array_equal(ga.numpy(), ga_ref)
    # ga may be NULL
    gb3, none = xhal.csr_solve_backward(dev, m, "N", "lower", "stored", x, xhal.asarray(dx, device=dev))
    assert none is None
    np.testing.assert_array_equal(gb3.numpy(), gb_ref)


def test_spgemm_exact(dev, rng):
    A = random_csr(rng, 5, 6, 0.4)
    B = random_csr(rng, 6, 4, 0.4)
    c = xhal.spgemm(dev, xhal.CsrMatrix.from_dense(dev, A), xhal.CsrMatrix.from_dense(dev, B))
    assert c.shape == (5, 4)
    assert c.index_dtype == xhal.int32
    ref = np.zeros((5, 4), F32)
    for i in range(5):
        for j in range(4):
            s = F32(0)
            for k in range(6):
                if A[i, k] != 0 and B[k, j] != 0:
                    s = F32(s + F32(A[i, k] * B[k, j]))
            ref[i, j] = s
    np.testing.assert_array_equal(c.to_dense(), ref)
    # pattern: every structural product
    struct = ((A != 0).astype(int) @ (B != 0).astype(int)) != 0
    rp, ci, _ = c.read()
    assert rp[-1] == struct.sum()


def seq_dot64(vals, xs):
    s = 0.0
    for v, x in zip(vals, xs):
        s = s + float(v) * float(x)
    return s


def test_f64_matrix_spmv_solve_and_refusals(dev, rng):
    """An f64 matrix (docs/semantics.md 7.3): values kept in float64 (read
    back bit for bit), spmv and the lower solve equal to a float64
    left-to-right reference (rows of at most 32 entries), and an f32 operand
    refused with InvalidArgument naming it."""
    n = 40
    a = random_csr(rng, n, n, 0.2, lower=True).astype(np.float64)
    a += np.tril(rng.standard_normal((n, n)) * 1e-9, -1) * (a != 0)  # bits past float32
    rp, ci, _ = csr_arrays(a)
    rows, cols = np.nonzero(a)
    vals = a[rows, cols]
    m = xhal.CsrMatrix(dev, rp, ci, vals, (n, n), dtype="float64")
    assert m.dtype == xhal.float64
    _, _, back = m.read()
    assert back.dtype == np.float64 and np.array_equal(back.view(np.uint64), vals.view(np.uint64))

    x = rng.standard_normal(n)
    y = xhal.spmv(dev, m, "none", 1.0, xhal.asarray(x, device=dev), 0.0).numpy()
    want = np.array([seq_dot64(a[i, np.nonzero(a[i])[0]], x[np.nonzero(a[i])[0]]) for i in range(n)])
    assert y.dtype == np.float64 and np.array_equal(y, want)

    sol = xhal.csr_solve(dev, m, "none", "lower", "stored", xhal.asarray(x, device=dev)).numpy()
    ref = np.zeros(n)
    for i in range(n):
        nz = [j for j in np.nonzero(a[i])[0] if j != i]
        ref[i] = (x[i] - seq_dot64(a[i, nz], ref[nz])) / a[i, i]
    assert np.array_equal(sol, ref)

    with pytest.raises(xhal.InvalidArgumentError, match="'x'"):
        xhal.spmv(dev, m, "none", 1.0, xhal.asarray(x.astype(F32), device=dev), 0.0)
    m.set_values(vals * 2)
    _, _, back = m.read()
    assert np.array_equal(back, vals * 2)


def test_f16_matrix_spmv_and_refusals(dev, rng):
    """An f16 matrix (docs/semantics.md 7.2): spmv in float32 on the widened
    values (rows of at most 32 entries: a left-to-right float32 sum), y
    rounded once to float16; a bf16 matrix takes uint16 bit patterns; the
    solve refuses a narrow matrix naming 'a'."""
    n = 40
    a = random_csr(rng, n, n, 0.2, lower=True).astype(np.float16)
    rp, ci, _ = csr_arrays(a.astype(F32))
    rows, cols = np.nonzero(a)
    vals = a[rows, cols]
    m = xhal.CsrMatrix(dev, rp, ci, vals, (n, n), dtype="float16")
    assert m.dtype == xhal.float16
    _, _, back = m.read()
    assert back.dtype == np.float16 and np.array_equal(back.view(np.uint16), vals.view(np.uint16))

    x = rng.standard_normal(n).astype(np.float16)
    y = xhal.spmv(dev, m, "none", 1.0, xhal.asarray(x, device=dev), 0.0).numpy()
    want = np.array([seq_dot(a[i, np.nonzero(a[i])[0]], x[np.nonzero(a[i])[0]]) for i in range(n)],
                    dtype=F32).astype(np.float16)
    assert y.dtype == np.float16 and np.array_equal(y.view(np.uint16), want.view(np.uint16))

    with pytest.raises(xhal.InvalidArgumentError, match="'a'"):
        xhal.csr_solve(dev, m, "none", "lower", "stored", xhal.asarray(x, device=dev))
    with pytest.raises(xhal.InvalidArgumentError, match="'x'"):
        xhal.spmv(dev, m, "none", 1.0, xhal.asarray(x.astype(F32), device=dev), 0.0)

    bits = (vals.astype(F32).view(np.uint32) >> 16).astype(np.uint16)  # exact: few f16 bits
    mb = xhal.CsrMatrix(dev, rp, ci, bits, (n, n), dtype="bfloat16")
    assert mb.dtype == xhal.bfloat16
    _, _, back = mb.read()
    assert np.array_equal(back, bits)
    with pytest.raises(TypeError):
        xhal.CsrMatrix(dev, rp, ci, vals.astype(F32), (n, n), dtype="bfloat16")
