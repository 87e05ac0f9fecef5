"""Dense ops against NumPy references.

Data movement (index_select, permute) is compared exactly. index_add with at
most 32 sources per row is a plain left-to-right float32 sum from +0
(docs/semantics.md 3.7), which NumPy reproduces step by step, so it is exact
too. Softmax and the norms follow the canonical chunked/lane order of
docs/semantics.md 3.2-3.6, which NumPy does not reproduce: they are
compared with float64 references within tolerances.
"""

import numpy as np
import pytest

import xhal

F32 = np.float32


def T(dev, a, dtype=None):
    return xhal.asarray(np.asarray(a), dtype=dtype, device=dev)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.float16])
def test_index_select(dev, rng, dtype):
    src = (rng.standard_normal((10, 3)) * 20).astype(dtype)
    idx = np.array([3, 0, 9, 3, 5], dtype=np.int64)
    plan = xhal.IndexPlan(dev, idx, num_rows=10)
    assert plan.count == 5 and plan.num_rows == 10
    out = xhal.index_select(dev, plan, T(dev, src))
    np.testing.assert_array_equal(out.numpy(), src[idx])
    out2 = xhal.zeros((5, 3), dtype=src.dtype, device=dev)
    assert xhal.index_select(dev, plan, T(dev, src), out2) is out2
    np.testing.assert_array_equal(out2.numpy(), src[idx])


def test_index_select_empty_plan(dev):
    plan = xhal.IndexPlan(dev, np.zeros(0, dtype=np.int32), num_rows=4)
    out = xhal.index_select(dev, plan, xhal.zeros((4, 2), device=dev))
    assert out.shape == (0, 2)


def _index_add_ref(dst, idx, alpha, src):
    dst = dst.copy()
    for r in np.unique(idx):
        t = np.zeros(src.shape[1], dtype=F32)       # segsum: +0, then in source order
        for i in np.nonzero(idx == r)[0]:
            t = (t + src[i]).astype(F32)
        dst[r] = (dst[r] + (F32(alpha) * t).astype(F32)).astype(F32)
    return dst


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_index_add_exact(dev, rng, index_dtype):
    idx = rng.integers(0, 6, size=20).astype(index_dtype)
    src = rng.standard_normal((20, 5)).astype(F32)
    dst0 = rng.standard_normal((8, 5)).astype(F32)
    plan = xhal.IndexPlan(dev, idx, 8)
    dst = T(dev, dst0)
    assert xhal.index_add(dev, plan, 0.75, T(dev, src), dst) is dst
    np.testing.assert_array_equal(dst.numpy(), _index_add_ref(dst0, idx, 0.75, src))


@pytest.mark.parametrize("perm", [(1, 0), (2, 0, 1), (0, 2, 1), (1, 2, 0)])
def test_permute(dev, rng, perm):
    shape = (2, 3, 4)[:len(perm)]
    a = rng.standard_normal(shape).astype(F32)
    out = xhal.permute(dev, T(dev, a), perm)
    np.testing.assert_array_equal(out.numpy(), a.transpose(perm))


def test_permute_strided_source(dev, rng):
    a = rng.integers(0, 100, size=(3, 4, 5)).astype(np.int32)
    v = T(dev, a).permute_view([2, 0, 1])
    out = xhal.permute(dev, v, [1, 2, 0])      # a strided src: back to a
    np.testing.assert_array_equal(out.numpy(), a)


def _softmax64(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("shape", [(3, 7), (2, 3, 33), (1, 1500)])
def test_softmax_forward_backward(dev, rng, shape):
    x = (rng.standard_normal(shape) * 3).astype(F32)
    y = xhal.softmax_forward(dev, T(dev, x))
    yr = _softmax64(x)
    np.testing.assert_allclose(y.numpy(), yr, rtol=2e-6, atol=1e-7)
    dy = rng.standard_normal(shape).astype(F32)
    dx = xhal.softmax_backward(dev, y, T(dev, dy))
    yv = y.numpy().astype(np.float64)
    dxr = yv * (dy - (yv * dy).sum(axis=-1, keepdims=True))
    np.testing.assert_allclose(dx.numpy(), dxr, rtol=1e-5, atol=1e-6)


def test_softmax_in_place(dev, rng):
    x = rng.standard_normal((4, 9)).astype(F32)
    t = T(dev, x)
    xhal.softmax_forward(dev, t, t)
    np.testing.assert_allclose(t.numpy(), _softmax64(x), rtol=2e-6, atol=1e-7)


def test_rms_norm(dev, rng):
    x = rng.standard_normal((5, 6, 17)).astype(F32)
    g = rng.standard_normal(17).astype(F32)
    eps = 1e-5
    y, rstd = xhal.rms_norm_forward(dev, T(dev, x), T(dev, g), eps)
    x64 = x.astype(np.float64).reshape(-1, 17)
    r = 1 / np.sqrt((x64 ** 2).mean(-1) + eps)
    np.testing.assert_allclose(rstd.numpy(), r, rtol=1e-5)
    np.testing.assert_allclose(y.numpy().reshape(-1, 17), x64 * r[:, None] * g, rtol=1e-5, atol=1e-6)
    dy = rng.standard_normal(x.shape).astype(F32)
    dx, dg = xhal.rms_norm_backward(dev, T(dev, x), T(dev, g), rstd, T(dev, dy))
    dy64 = dy.astype(np.float64).reshape(-1, 17)
    xh = x64 * r[:, None]
    gg = dy64 * g
    c = (gg * xh).mean(-1, keepdims=True)
    np.testing.assert_allclose(dx.numpy().reshape(-1, 17), (gg - xh * c) * r[:, None], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dg.numpy(), (dy64 * xh).sum(0), rtol=1e-4, atol=1e-5)


def test_layer_norm(dev, rng):
    x = (rng.standard_normal((7, 40)) + 2).astype(F32)
    g = rng.standard_normal(40).astype(F32)
    b = rng.standard_normal(40).astype(F32)
    eps = 1e-5
    y, mean, rstd = xhal.layer_norm_forward(dev, T(dev, x), T(dev, g), T(dev, b), eps)
    x64 = x.astype(np.float64)
    mu = x64.mean(-1)
    r = 1 / np.sqrt(((x64 - mu[:, None]) ** 2).mean(-1) + eps)
    np.testing.assert_allclose(mean.numpy(), mu, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rstd.numpy(), r, rtol=1e-5)
    xh = (x64 - mu[:, None]) * r[:, None]
    np.testing.assert_allclose(y.numpy(), xh * g + b, rtol=1e-5, atol=1e-5)
    dy = rng.standard_normal(x.shape).astype(F32)
    dx, dg, db = xhal.layer_norm_backward(dev, T(dev, x), T(dev, g), mean, rstd, T(dev, dy))
    gg = dy * g.astype(np.float64)
    a_ = gg.mean(-1, keepdims=True)
    b_ = (gg * xh).mean(-1, keepdims=True)
    np.testing.assert_allclose(dx.numpy(), ((gg - a_) - xh * b_) * r[:, None], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dg.numpy(), (dy * xh).sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(db.numpy(), dy.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_norm_saved_statistics_dtype(dev, rng, dtype):
    """mean/rstd are float32 for float16 x (and for f32 gamma with it),
    float64 for float64 x (docs/semantics.md 7.2, 7.3)."""
    x = rng.standard_normal((4, 24)).astype(dtype)
    g = rng.standard_normal(24).astype(dtype)
    b = rng.standard_normal(24).astype(dtype)
    stat = np.float64 if dtype == np.float64 else np.float32
    try:
        y, rstd = xhal.rms_norm_forward(dev, T(dev, x), T(dev, g), 1e-5)
        y2, mean, rstd2 = xhal.layer_norm_forward(dev, T(dev, x), T(dev, g), T(dev, b), 1e-5)
    except xhal.UnsupportedError:
        pytest.skip(f"{dtype.__name__} norms not implemented on {dev}")
    assert y.numpy().dtype == dtype and rstd.numpy().dtype == stat
    assert mean.numpy().dtype == stat and rstd2.numpy().dtype == stat
    x64 = x.astype(np.float64)
    r = 1 / np.sqrt((x64 ** 2).mean(-1) + 1e-5)
    np.testing.assert_allclose(rstd.numpy(), r, rtol=1e-5)
    np.testing.assert_allclose(mean.numpy(), x64.mean(-1), rtol=1e-5, atol=1e-6)


def test_norm_outputs_passed_explicitly(dev, rng):
    x = rng.standard_normal((3, 8)).astype(F32)
    g = np.ones(8, F32)
    y = xhal.zeros((3, 8), device=dev)
    rstd = xhal.zeros((3,), device=dev)
    out = xhal.rms_norm_forward(dev, T(dev, x), T(dev, g), 1e-6, y, rstd)
    assert out[0] is y and out[1] is rstd


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_index_plan_from_device_tensor(dev, rng, index_dtype):
    if not xhal.has_symbol("xhal_index_plan_create_from_tensor"):
        pytest.skip(f"{xhal.library_path} has no xhal_index_plan_create_from_tensor yet")
    idx = np.array([4, 0, 2, 2, 1], dtype=index_dtype)
    src = rng.standard_normal((5, 3)).astype(F32)
    before = dev.counters()["device_to_host_transfers"]
    plan = xhal.IndexPlan(dev, T(dev, idx), num_rows=5)
    assert dev.counters()["device_to_host_transfers"] == before + 1   # the one documented read
    assert plan.count == 5
    np.testing.assert_array_equal(xhal.index_select(dev, plan, T(dev, src)).numpy(), src[idx])
    with pytest.raises(xhal.OutOfRangeError) as ei:
        xhal.IndexPlan(dev, T(dev, np.array([0, 7], dtype=index_dtype)), num_rows=5)
    assert "7" in ei.value.message and "1" in ei.value.message
