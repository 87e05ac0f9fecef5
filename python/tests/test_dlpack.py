"""DLPack and external memory on the cpu device: zero copy in both
directions with NumPy, the versioned and legacy capsules, and the deleter
running exactly once (counted through a producer written here with ctypes,
and through NumPy's reference counts and weak references).

Skipped, with the reason, while the loaded libxhal lacks the interop calls
of xhal/interop.h."""

import ctypes
import gc
import sys
import weakref

import numpy as np
import pytest

import xhal
from xhal import _dlpack, _lib

from conftest import dlpack_required, symbol_required


@pytest.fixture(autouse=True)
def _need_dlpack(request):
    if "import_memory" in request.node.name:
        symbol_required("xhal_buffer_import")
    else:
        dlpack_required()


def name_of(capsule):
    return _lib.PyCapsule_GetName(capsule)


def native_ptr(t):
    return t.buffer.native().pointer + t.offset


class Producer:
    """A DLPack producer with a counted deleter (what torch or CuPy would
    hand over), for the exactly-once checks."""

    def __init__(self, array, versioned=True, major=1, device=(1, 0),
                 strides=None, byte_offset=0, dtype=(2, 32, 1), flags=0, ndim=None):
        self.array = array
        self.deleted = 0
        self.versioned = versioned
        self.device = device
        shape = array.shape
        self._shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self._strides = None
        if strides is not None:
            self._strides = (ctypes.c_int64 * max(len(strides), 1))(*strides)
        cls = _lib.DLManagedTensorVersioned if versioned else _lib.DLManagedTensor
        m = self.managed = cls()
        if versioned:
            m.version.major, m.version.minor = major, 0
            m.flags = flags
        dl = m.dl_tensor
        dl.data = array.ctypes.data
        dl.device.device_type, dl.device.device_id = device
        dl.ndim = len(shape) if ndim is None else ndim
        dl.dtype.code, dl.dtype.bits, dl.dtype.lanes = dtype
        dl.shape = self._shape
        if self._strides is not None:
            dl.strides = self._strides
        dl.byte_offset = byte_offset
        proto = _lib.DL_DELETER_VERSIONED_CB if versioned else _lib.DL_DELETER_CB

        def deleter(_m):
            self.deleted += 1
        self._deleter = proto(deleter)
        m.deleter = ctypes.cast(self._deleter, ctypes.c_void_p).value
        self.capsule = None

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.capsule = _dlpack.make_capsule(ctypes.addressof(self.managed), self.versioned)
        return self.capsule


# ---- export ---------------------------------------------------------------------

def test_capsule_names_and_device(dev):
    t = xhal.asarray(np.arange(6, dtype=np.float32), device=dev)
    assert t.__dlpack_device__() == (1, 0)
    assert name_of(t.__dlpack__()) == b"dltensor"
    assert name_of(t.__dlpack__(max_version=(0, 8))) == b"dltensor"
    assert name_of(t.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"
    assert name_of(t.__dlpack__(max_version=(1, 3), stream=None)) == b"dltensor_versioned"


def run_alone(code):
    """Runs `code` in a fresh interpreter, where the device it opens is the
    only open (the session's `dev` fixture would keep it open here)."""
    import os
    import subprocess
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(os.path.dirname(__file__), "..") + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_unconsumed_capsules_run_the_deleter():
    out = run_alone("""
import gc, numpy as np, xhal
d = xhal.Device("cpu")
t = xhal.asarray(np.arange(6, dtype=np.float32), device=d)
caps = [t.__dlpack__(), t.__dlpack__(max_version=(1, 0))]
del t; gc.collect()
try:
    d.close()
except xhal.BusyError as e:
    print("busy while exported")
del caps; gc.collect()
d._release(raise_errors=True)          # every export's deleter ran: it closes
print("closed", d._handle is None)
""")
    assert out.split("\n")[:2] == ["busy while exported", "closed True"]


def test_numpy_from_dlpack_is_zero_copy(dev):
    t = xhal.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device=dev)
    a = np.from_dlpack(t)
    assert a.ctypes.data == native_ptr(t)
    if a.flags.writeable:                         # NumPy >= 2 (1.x views are read-only)
        a[1, 2] = 42.0                            # write through NumPy ...
        assert t.numpy()[1, 2] == 42.0            # ... read through xhal
    plan = xhal.IndexPlan(dev, [2, 0, 1], 3)
    src = xhal.asarray(np.full((3, 4), 7, dtype=np.float32), device=dev)
    xhal.index_select(dev, plan, src, t)          # write through xhal ...
    assert (a == 7).all()                         # ... read through NumPy


def test_export_outlives_the_buffer_handle(dev):
    t = xhal.asarray(np.arange(5, dtype=np.int64), device=dev)
    a = np.from_dlpack(t)
    t.buffer.release()
    del t
    gc.collect()
    assert a.tolist() == [0, 1, 2, 3, 4]


def test_export_with_offset_and_strides(dev):
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = xhal.asarray(base, device=dev)
    v = t.permute_view([2, 0, 1])
    a = np.from_dlpack(v)
    np.testing.assert_array_equal(a, base.transpose(2, 0, 1))
    buf = xhal.Buffer(dev, 64)
    buf.write(np.arange(16, dtype=np.float32))
    w = xhal.Tensor(buf, (4,), xhal.float32, offset=32)
    np.testing.assert_array_equal(np.from_dlpack(w), [8, 9, 10, 11])


def test_export_copy_and_dl_device(dev):
    t = xhal.asarray(np.arange(4, dtype=np.float32), device=dev)
    cap = t.__dlpack__(max_version=(1, 0), copy=True)
    m = ctypes.cast(_lib.PyCapsule_GetPointer(cap, b"dltensor_versioned"),
                    ctypes.POINTER(_lib.DLManagedTensorVersioned)).contents
    assert m.flags & _dlpack.FLAG_IS_COPIED
    assert m.dl_tensor.data + m.dl_tensor.byte_offset != native_ptr(t)
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    t.__dlpack__(dl_device=(1, 0))


def test_consumer_failure_still_releases_the_export():
    # NumPy refuses bfloat16 (DLPack code 4) after taking the capsule, and
    # drops it with its exception set.
    out = run_alone("""
import gc, numpy as np, xhal
d = xhal.Device("cpu")
t = xhal.asarray(np.zeros(4, dtype=np.uint16), dtype=xhal.bfloat16, device=d)
try:
    np.from_dlpack(t)
except Exception as e:
    print("refused", type(e).__name__)
del t; gc.collect()
d.close()                               # no export left: not busy
print("closed", d._handle is None)
""")
    lines = out.split("\n")
    assert lines[0].startswith("refused") and lines[1] == "closed True"


# ---- import ---------------------------------------------------------------------

def test_xhal_from_numpy_is_zero_copy(dev):
    a = np.zeros((4, 3), dtype=np.float32)
    t = xhal.from_dlpack(a, device=dev)
    assert t.shape == (4, 3) and t.dtype == xhal.float32
    assert native_ptr(t) == a.ctypes.data
    plan = xhal.IndexPlan(dev, [1, 1, 0, 1], 2)
    src = xhal.asarray(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32), device=dev)
    xhal.index_select(dev, plan, src, t)          # xhal writes ...
    np.testing.assert_array_equal(a, [[4, 5, 6], [4, 5, 6], [1, 2, 3], [4, 5, 6]])  # numpy sees
    a[0, 0] = -1
    assert t.numpy()[0, 0] == -1


def test_xhal_from_numpy_default_device():
    a = np.arange(3, dtype=np.int32)
    t = xhal.from_dlpack(a)
    assert t.device.backend == "cpu"
    np.testing.assert_array_equal(t.numpy(), a)


def test_import_holds_the_producer_exactly_once(dev):
    a = np.arange(8, dtype=np.float32)
    before = sys.getrefcount(a)
    t = xhal.from_dlpack(a, device=dev)
    assert sys.getrefcount(a) == before + 1      # NumPy's export holds one reference
    del t
    gc.collect()
    assert sys.getrefcount(a) == before          # dropped once, not twice


def test_import_keeps_the_array_alive(dev):
    a = np.arange(8, dtype=np.float32)
    w = weakref.ref(a)
    t = xhal.from_dlpack(a, device=dev)
    del a
    gc.collect()
    assert w() is not None
    np.testing.assert_array_equal(t.numpy(), np.arange(8, dtype=np.float32))
    del t
    gc.collect()
    assert w() is None


def test_strided_numpy_import(dev):
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    t = xhal.from_dlpack(a[::2, 1:4], device=dev)   # strides (10, 1), offset 1 element
    assert t.shape == (2, 3) and not t.is_contiguous
    out = xhal.permute(dev, t, [0, 1])              # permute copies a strided view
    np.testing.assert_array_equal(out.numpy(), a[::2, 1:4])


def test_strided_numpy_import_every_other_column(dev):
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    t = xhal.from_dlpack(a[:, ::2], device=dev)     # strides (5, 2): distinct elements
    out = xhal.permute(dev, t, [0, 1])
    np.testing.assert_array_equal(out.numpy(), a[:, ::2])


def test_xhal_to_xhal_round_trip(dev):
    t = xhal.asarray(np.arange(6, dtype=np.float32), device=dev)
    u = xhal.from_dlpack(t)
    assert native_ptr(u) == native_ptr(t)
    cap = t.__dlpack__()
    v = xhal.from_dlpack(cap, device=dev)       # a bare capsule
    assert name_of(cap) == b"used_dltensor"
    assert native_ptr(v) == native_ptr(t)


@pytest.mark.parametrize("versioned", [True, False])
def test_deleter_once_on_success(dev, versioned):
    p = Producer(np.arange(6, dtype=np.float32), versioned=versioned)
    t = xhal.from_dlpack(p, device=dev)
    assert name_of(p.capsule) == (b"used_dltensor_versioned" if versioned else b"used_dltensor")
    assert p.deleted == 0
    np.testing.assert_array_equal(t.numpy(), np.arange(6, dtype=np.float32))
    t.buffer.release()
    assert p.deleted == 1
    p.capsule = None
    gc.collect()
    assert p.deleted == 1


def test_deleter_once_when_unconsumed():
    p = Producer(np.arange(6, dtype=np.float32))
    p.__dlpack__()
    p.capsule = None
    gc.collect()
    assert p.deleted == 1


BAD = {
    "major_version_2": (dict(major=2), xhal.UnsupportedError, "version"),
    "cuda_device_type": (dict(device=(2, 0)), xhal.InvalidArgumentError, "device"),
    "negative_stride": (dict(strides=(-1,)), xhal.UnsupportedError, "stride"),
    "overlapping_strides": (dict(strides=(0,)), xhal.UnsupportedError, "stride"),
    "misaligned": (dict(byte_offset=2), xhal.UnsupportedError, "align"),
    "complex_dtype": (dict(dtype=(5, 64, 1)), xhal.UnsupportedError, "dtype"),
    "lanes": (dict(dtype=(2, 32, 4)), xhal.UnsupportedError, "lanes"),
    "rank_9": (dict(ndim=9), xhal.UnsupportedError, "ndim"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("versioned", [True, False])
def test_refused_import_runs_the_deleter_once(dev, case, versioned):
    kwargs, exc, word = BAD[case]
    if not versioned and "major" in kwargs:
        pytest.skip("a DLPack 0.x tensor has no version")
    a = np.arange(9 if case == "rank_9" else 6, dtype=np.float32)
    if case == "rank_9":
        a = a.reshape((1,) * 8 + (9,))
    p = Producer(a, versioned=versioned, **kwargs)
    with pytest.raises(exc) as ei:
        xhal.from_dlpack(p.__dlpack__(), device=dev)
    assert word in ei.value.message.lower()
    assert p.deleted == 1                       # xhal ran it before returning
    assert name_of(p.capsule).startswith(b"used_")
    p.capsule = None
    gc.collect()
    assert p.deleted == 1                       # the capsule did not run it again


def test_read_only_import(dev):
    a = np.arange(4, dtype=np.float32)
    p = Producer(a, flags=_dlpack.FLAG_READ_ONLY)
    t = xhal.from_dlpack(p, device=dev)
    np.testing.assert_array_equal(t.numpy(), a)
    with pytest.raises(xhal.InvalidArgumentError):
        xhal.softmax_forward(dev, xhal.asarray(a.reshape(1, 4), device=dev), t.reshape(1, 4))
    with pytest.raises(xhal.InvalidArgumentError):
        t.write(np.zeros(4, np.float32))
    np.testing.assert_array_equal(a, np.arange(4, dtype=np.float32))
    # a read-only tensor exports read-only; DLPack 0.x cannot say so
    cap = t.__dlpack__(max_version=(1, 0))
    m = ctypes.cast(_lib.PyCapsule_GetPointer(cap, b"dltensor_versioned"),
                    ctypes.POINTER(_lib.DLManagedTensorVersioned)).contents
    assert m.flags & _dlpack.FLAG_READ_ONLY
    with pytest.raises(xhal.InvalidArgumentError):
        t.__dlpack__()


# ---- external memory ----------------------------------------------------------------

def test_import_memory_release_once(dev):
    a = np.arange(8, dtype=np.float32)
    calls = []
    b = xhal.Buffer.import_memory(dev, a.ctypes.data, a.nbytes, release=lambda: calls.append(1))
    t = xhal.Tensor(b, (8,), xhal.float32)
    assert b.native().pointer == a.ctypes.data
    xhal.softmax_forward(dev, t.reshape(2, 4), t.reshape(2, 4))     # in place, into a
    assert abs(a[:4].sum() - 1) < 1e-6
    assert calls == []
    b.release()
    assert calls == [1]


def test_import_memory_refused_runs_release(dev):
    a = np.arange(8, dtype=np.float32)
    calls = []
    with pytest.raises(xhal.InvalidArgumentError, match="kind"):
        xhal.Buffer.import_memory(dev, a.ctypes.data, a.nbytes, kind=2,
                                  release=lambda: calls.append(1))
    assert calls == [1]


def test_cpu_queue_calls_are_no_ops(dev):
    symbol_required("xhal_device_get_native_queue")
    assert dev.native_queue is None
    dev.signal_external_queue(None)
    dev.wait_external_queue(None)


def test_copy_request_to_an_old_producer(dev):
    a = np.arange(3, dtype=np.float32)
    if int(np.__version__.split(".")[0]) >= 2:
        t = xhal.from_dlpack(a, device=dev, copy=True)     # NumPy 2 copies for us
        assert native_ptr(t) != a.ctypes.data
    else:
        with pytest.raises(BufferError, match="copy"):
            xhal.from_dlpack(a, device=dev, copy=True)


def test_export_copy_of_a_strided_view(dev):
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    v = xhal.asarray(base, device=dev).permute_view([1, 0])
    np.testing.assert_array_equal(np.from_dlpack(v), base.T)    # strided, no copy
    cap = v.__dlpack__(max_version=(1, 0), copy=True)
    u = xhal.from_dlpack(cap, device=dev)
    assert u.is_contiguous
    np.testing.assert_array_equal(u.numpy(), base.T)


def test_threads_share_a_device(dev):
    import threading
    errors = []

    def work(seed):
        try:
            r = np.random.default_rng(seed)
            x = r.standard_normal((8, 16)).astype(np.float32)
            for _ in range(50):
                y = xhal.softmax_forward(dev, xhal.asarray(x, device=dev))
                np.testing.assert_allclose(y.numpy().sum(1), 1, rtol=1e-5)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
