"""Buffers (untyped device memory) and tensors (typed, shaped views)."""

import ctypes
from collections import namedtuple

import numpy as np

from . import _lib
from ._types import DType, as_dtype, to_numpy_dtype, DL_CPU, DL_CUDA, DL_ROCM
from .device import Device, default_device
from .errors import call, error_for

NativeMemory = namedtuple("NativeMemory", "kind device_ordinal pointer size")


def _device(device):
    if device is None:
        return default_device()
    if isinstance(device, Device):
        return device
    return default_device(device)


class Buffer:
    """xhal_buffer_t: `size` bytes of a device's memory.

    Buffer(device, size) allocates; release() (or garbage collection) gives
    it back. Writes and reads are blocking; copies and fills are queued."""

    def __init__(self, device, size):
        device = _device(device)
        h = ctypes.c_void_p()
        device._retain()
        try:
            call("xhal_buffer_allocate", device.handle, int(size), ctypes.byref(h))
        except BaseException:
            device._drop()
            raise
        self._adopt(device, h.value)

    @classmethod
    def _wrap(cls, device, handle):
        """Takes ownership of a buffer handle returned by libxhal."""
        self = cls.__new__(cls)
        device._retain()
        self._adopt(device, handle)
        return self

    def _adopt(self, device, handle):
        self.device = device
        self._handle = handle
        self._keep = None   # Python objects the buffer's memory depends on

    @classmethod
    def import_memory(cls, device, pointer, size, kind=None, device_ordinal=0,
                      release=None, read_only=False):
        """Wraps memory the caller owns (xhal_buffer_import): no copy.
        `release` (a callable or None) runs exactly once, when xhal is done
        with the memory (or before this returns if the import fails).
        `kind` defaults to the device's memory kind (1 host, 2 CUDA, 10 ROCm).
        read_only: xhal never writes the memory (ops writing it fail)."""
        device = _device(device)
        m = _lib.ExternalMemory()
        m.struct_size = ctypes.sizeof(m)
        m.kind = device.dlpack_device_type if kind is None else int(kind)
        m.device_ordinal = int(device_ordinal)
        m.pointer = pointer
        m.size = int(size)
        m.flags = 1 if read_only else 0
        cb = None
        if release is not None:
            def _release(_user, _release=release):
                try:
                    _release()
                finally:
                    _callbacks.pop(key, None)
            cb = _lib.RELEASE_FN(_release)
            key = id(cb)
            _callbacks[key] = cb   # alive until C calls it
            m.release = cb
        h = ctypes.c_void_p()
        device._retain()
        try:
            call("xhal_buffer_import", device.handle, ctypes.byref(m), ctypes.byref(h))
        except BaseException:
            device._drop()
            raise
        self = cls.__new__(cls)
        self._adopt(device, h.value)
        return self

    @property
    def handle(self):
        if self._handle is None:
            raise ValueError("xhal: the buffer was released")
        return self._handle

    @property
    def size(self):
        n = ctypes.c_uint64()
        call("xhal_buffer_size", self.handle, ctypes.byref(n))
        return n.value

    def release(self):
        """Gives the buffer back (xhal_buffer_release). Tensors over it
        become unusable. Idempotent."""
        h, self._handle = self._handle, None
        if h is not None:
            try:
                call("xhal_buffer_release", h)
            finally:
                self._keep = None
                self.device._drop()

    close = release

    def __del__(self):
        try:
            if self._handle is not None:
                self.release()
        except Exception:
            pass

    def __repr__(self):
        if self._handle is None:
            return "<xhal.Buffer released>"
        return f"<xhal.Buffer {self.size} bytes on {self.device.selector}>"

    def write(self, data, offset=0):
        """Copies host bytes (a bytes-like object or a NumPy array) into the
        buffer at `offset`; blocking."""
        a = np.asarray(data, order="C") if not isinstance(data, (bytes, bytearray, memoryview)) \
            else np.frombuffer(data, dtype=np.uint8)
        call("xhal_buffer_write", self.handle, int(offset),
             a.ctypes.data_as(ctypes.c_void_p), a.nbytes)

    def read(self, size=None, offset=0, out=None):
        """Copies `size` bytes from `offset` to the host: into `out` (a
        writable contiguous NumPy array) or a new uint8 array; blocking."""
        if out is None:
            if size is None:
                size = self.size - offset
            out = np.empty(int(size), dtype=np.uint8)
        elif not (out.flags.c_contiguous and out.flags.writeable):
            raise ValueError("xhal: out must be a writable C-contiguous array")
        n = out.nbytes if size is None else int(size)
        call("xhal_buffer_read", self.handle, int(offset),
             out.ctypes.data_as(ctypes.c_void_p), n)
        return out

    def copy_to(self, dst, size=None, src_offset=0, dst_offset=0):
        """Queued device-to-device copy into `dst` (xhal_buffer_copy)."""
        if size is None:
            size = self.size - src_offset
        call("xhal_buffer_copy", self.handle, int(src_offset), dst.handle,
             int(dst_offset), int(size))

    def fill(self, pattern, offset=0, size=None):
        """Queued fill with a 1, 2, 4 or 8-byte pattern (bytes or a NumPy
        scalar)."""
        p = bytes(pattern) if isinstance(pattern, (bytes, bytearray)) \
            else np.asarray(pattern).tobytes()
        if size is None:
            size = self.size - offset
        call("xhal_buffer_fill", self.handle, int(offset), int(size), p, len(p))

    def native(self):
        """Where the bytes live (xhal_buffer_get_native): (kind,
        device_ordinal, pointer, size); kind is 1 host, 2 CUDA, 10 ROCm."""
        m = _lib.NativeMemory()
        m.struct_size = ctypes.sizeof(m)
        call("xhal_buffer_get_native", self.handle, ctypes.byref(m))
        return NativeMemory(m.kind, m.device_ordinal, m.pointer or 0, m.size)


_callbacks = {}


def _shape_tuple(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


class Tensor:
    """A typed, shaped view of a Buffer (xhal_tensor_t).

    Tensor(buffer, shape, dtype, offset=0, strides=None): strides in
    elements, None for contiguous row-major. Usually made by xhal.empty,
    xhal.zeros, xhal.asarray (a copy of a NumPy array) or xhal.from_dlpack
    (zero copy)."""

    def __init__(self, buffer, shape, dtype=DType.float32, offset=0, strides=None):
        shape = _shape_tuple(shape)
        if len(shape) > _lib.MAX_RANK:
            raise ValueError(f"xhal: rank {len(shape)} > {_lib.MAX_RANK}")
        self.buffer = buffer
        c = self._c = _lib.CTensor()
        c.buffer = buffer.handle
        c.offset = int(offset)
        c.dtype = int(as_dtype(dtype))
        c.rank = len(shape)
        for i, s in enumerate(shape):
            c.shape[i] = s
        if strides is not None:
            strides = _shape_tuple(strides)
            if len(strides) != len(shape):
                raise ValueError("xhal: strides and shape differ in length")
            for i, s in enumerate(strides):
                c.strides[i] = s
        self._p = ctypes.byref(c)

    @classmethod
    def _from_c(cls, buffer, c):
        self = cls.__new__(cls)
        self.buffer = buffer
        self._c = c
        self._p = ctypes.byref(c)
        return self

    # -- properties -------------------------------------------------------
    @property
    def device(self):
        return self.buffer.device

    @property
    def shape(self):
        return tuple(self._c.shape[i] for i in range(self._c.rank))

    @property
    def ndim(self):
        return self._c.rank

    @property
    def dtype(self):
        try:
            return DType(self._c.dtype)
        except ValueError:
            return self._c.dtype

    @property
    def offset(self):
        return self._c.offset

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self):
        return self.size * as_dtype(self.dtype).itemsize

    @property
    def strides(self):
        """Strides in elements (row-major ones computed when the tensor is
        contiguous)."""
        r = self._c.rank
        if any(self._c.strides[i] for i in range(r)):
            return tuple(self._c.strides[i] for i in range(r))
        out, acc = [], 1
        for s in reversed(self.shape):
            out.append(acc)
            acc *= s
        return tuple(reversed(out))

    @property
    def is_contiguous(self):
        r = self._c.rank
        if not any(self._c.strides[i] for i in range(r)):
            return True
        acc = 1
        for i in reversed(range(r)):
            if self._c.shape[i] != 1 and self._c.strides[i] != acc:
                return False
            acc *= self._c.shape[i]
        return True

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self):
        return (f"<xhal.Tensor shape={self.shape} dtype={self.dtype} "
                f"device={self.device.selector} offset={self.offset}>")

    # -- host copies --------------------------------------------------------
    @classmethod
    def from_numpy(cls, array, device=None, dtype=None):
        """A new tensor holding a copy of a host array (xhal.asarray)."""
        return asarray(array, dtype=dtype, device=device)

    def to_numpy(self):
        """A NumPy copy of the tensor (the same as numpy())."""
        return self.numpy()

    def copy(self):
        """A contiguous copy on the same device (xhal_permute with the
        identity permutation: queued, no host round trip; takes strided
        views too)."""
        from .ops import permute
        return permute(self.device, self, list(range(self.ndim)))

    def numpy(self):
        """A NumPy copy of the tensor (blocking read). bfloat16 comes back as
        its uint16 bit patterns."""
        nd = to_numpy_dtype(self.dtype)
        shape, item = self.shape, nd.itemsize
        if self.size == 0:
            return np.empty(shape, dtype=nd)
        if self.is_contiguous:
            out = np.empty(shape, dtype=nd)
            self.buffer.read(self.nbytes, self.offset, out=out)
            return out
        strides = self.strides
        extent = (sum((s - 1) * st for s, st in zip(shape, strides)) + 1) * item
        raw = self.buffer.read(extent, self.offset)
        view = np.lib.stride_tricks.as_strided(
            raw.view(nd), shape=shape, strides=[st * item for st in strides])
        return np.ascontiguousarray(view)

    def write(self, array):
        """Copies a host array of the tensor's shape into a contiguous
        tensor (blocking write)."""
        if not self.is_contiguous:
            raise ValueError("xhal: write needs a contiguous tensor")
        a = np.asarray(array, dtype=to_numpy_dtype(self.dtype), order="C")
        if a.shape != self.shape:
            a = np.broadcast_to(a, self.shape).copy()
        self.buffer.write(a, self.offset)
        return self

    # -- views ---------------------------------------------------------------
    def reshape(self, *shape):
        """A view with another shape over the same bytes (contiguous only)."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        shape = list(_shape_tuple(shape))
        if shape.count(-1) == 1:
            known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
            shape[shape.index(-1)] = self.size // known if known else 0
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise ValueError(f"xhal: cannot reshape {self.shape} to {tuple(shape)}")
        if not self.is_contiguous:
            raise ValueError("xhal: reshape needs a contiguous tensor")
        return Tensor(self.buffer, shape, self.dtype, self.offset)

    def permute_view(self, perm):
        """Metadata-only view with dims reordered (xhal_tensor_permute_view);
        only ops that accept strides (permute) take it."""
        p = (ctypes.c_uint32 * max(len(perm), 1))(*perm)
        out = _lib.CTensor()
        call("xhal_tensor_permute_view", self._p, p, ctypes.byref(out))
        return Tensor._from_c(self.buffer, out)

    # -- DLPack ------------------------------------------------------------
    def __dlpack_device__(self):
        return _dlpack.dlpack_device(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return _dlpack.export(self, stream=stream, max_version=max_version,
                              dl_device=dl_device, copy=copy)


def empty(shape, dtype=DType.float32, device=None):
    """A new contiguous tensor (uninitialised memory)."""
    device = _device(device)
    shape = _shape_tuple(shape)
    dt = as_dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    return Tensor(Buffer(device, n), shape, dt)


def zeros(shape, dtype=DType.float32, device=None):
    """A new contiguous tensor filled with zero bytes."""
    t = empty(shape, dtype, device)
    if t.nbytes:
        t.buffer.fill(b"\0")
    return t


def asarray(array, dtype=None, device=None):
    """A new tensor holding a copy of a host array (blocking write).
    dtype: converts first; None keeps the array's (it must have an xhal
    dtype: float32/16/64, int32/64, uint8)."""
    a = np.asarray(array)
    dt = as_dtype(a.dtype if dtype is None else dtype)
    if dt == DType.bfloat16 and a.dtype != np.uint16:
        raise TypeError("xhal: bfloat16 tensors take uint16 bit patterns")
    a = np.asarray(a, dtype=to_numpy_dtype(dt), order="C")
    t = empty(a.shape, dt, device)
    if a.nbytes:
        t.buffer.write(a)
    return t


def to_numpy(tensor):
    """tensor.numpy(): a host copy."""
    return tensor.numpy()


from . import _dlpack  # noqa: E402  (it imports this module: last)
