"""Buffers and tensors: copies in and out are exact."""

import numpy as np
import pytest

import xhal

DTYPES = [np.float32, np.float16, np.float64, np.int32, np.int64, np.uint8]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5), (2, 3, 4)])
def test_roundtrip(dev, rng, dtype, shape):
    a = (rng.standard_normal(shape) * 50).astype(dtype)
    t = xhal.asarray(a, device=dev)
    assert t.shape == shape and t.dtype == xhal.DType[np.dtype(dtype).name]
    assert t.device is dev
    b = t.numpy()
    assert b.dtype == a.dtype and b.shape == a.shape
    np.testing.assert_array_equal(b, a)


def test_write_and_zeros(dev):
    t = xhal.zeros((2, 3), device=dev)
    np.testing.assert_array_equal(t.numpy(), np.zeros((2, 3), np.float32))
    t.write(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(t.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_reshape_shares_bytes(dev):
    t = xhal.asarray(np.arange(12, dtype=np.float32), device=dev)
    v = t.reshape(3, 4)
    assert v.buffer is t.buffer
    np.testing.assert_array_equal(v.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    assert t.reshape(-1, 6).shape == (2, 6)


def test_permute_view_reads_strided(dev):
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    t = xhal.asarray(a, device=dev)
    v = t.permute_view([2, 0, 1])
    assert v.shape == (4, 2, 3) and not v.is_contiguous
    np.testing.assert_array_equal(v.numpy(), a.transpose(2, 0, 1))


def test_buffer_copy_fill_read(dev):
    a = xhal.Buffer(dev, 32)
    b = xhal.Buffer(dev, 32)
    a.write(bytes(range(32)))
    a.copy_to(b, 16, src_offset=8, dst_offset=0)
    b.fill(np.uint32(0xAABBCCDD), offset=16, size=16)
    got = b.read()
    assert bytes(got[:16]) == bytes(range(8, 24))
    assert got[16:].view(np.uint32).tolist() == [0xAABBCCDD] * 4
    assert a.size == 32
    a.release()
    b.release()


def test_tensor_offset_view(dev):
    buf = xhal.Buffer(dev, 64)
    buf.write(np.arange(16, dtype=np.float32))
    t = xhal.Tensor(buf, (4,), xhal.float32, offset=16)
    np.testing.assert_array_equal(t.numpy(), np.arange(4, 8, dtype=np.float32))


def test_dtype_names():
    from xhal._types import as_dtype
    assert as_dtype("f32") is xhal.float32
    assert as_dtype(np.int64) is xhal.int64
    assert as_dtype("bfloat16") is xhal.bfloat16
    assert xhal.float16.itemsize == 2


def test_from_numpy_to_numpy_and_copy(dev):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = xhal.Tensor.from_numpy(a, device=dev)
    np.testing.assert_array_equal(t.to_numpy(), a)
    c = t.permute_view([1, 0]).copy()
    assert c.is_contiguous and c.buffer is not t.buffer
    np.testing.assert_array_equal(c.numpy(), a.T)
