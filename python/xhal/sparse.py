"""Index plans and CSR matrices."""

import ctypes

import numpy as np

from . import _lib
from ._types import DType, as_dtype
from .errors import call
from .tensor import Tensor, _device


def _host_index_array(a):
    """A C-contiguous host array and its xhal dtype. Integer arrays other
    than int32/int64 become int64; any other dtype goes to C as it is (so C
    names it when it is not allowed)."""
    a = np.asarray(a)
    if a.dtype.kind in "iub" and a.dtype not in (np.int32, np.int64):
        a = a.astype(np.int64)
    a = np.ascontiguousarray(a)
    try:
        dt = as_dtype(a.dtype)
    except TypeError:
        dt = DType.invalid
    return a, dt


class _Owned:
    """A handle that keeps its device open and is released once."""
    _release_fn = None

    def _own(self, device, handle):
        self.device = device
        self._handle = handle

    @property
    def handle(self):
        if self._handle is None:
            raise ValueError(f"xhal: the {type(self).__name__} was released")
        return self._handle

    def release(self):
        h, self._handle = getattr(self, "_handle", None), None
        if h is not None:
            try:
                call(self._release_fn, h)
            finally:
                self.device._drop()

    close = release

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


class IndexPlan(_Owned):
    """xhal_index_plan_t: a validated list of row indices into a table of
    `num_rows` rows, uploaded once, for index_select and index_add.
    `indices`: host integers (int32 or int64 go as they are), or an xhal
    Tensor already on the device (rank 1, int32 or int64, e.g. a torch or
    CuPy index tensor through xhal.from_dlpack), from which
    xhal_index_plan_create_from_tensor builds the plan (on cuda/rocm on the
    device, with no copy of the list to the host; docs/interop.md)."""
    _release_fn = "xhal_index_plan_release"

    def __init__(self, device, indices, num_rows):
        device = _device(device)
        h = ctypes.c_void_p()
        device._retain()
        try:
            if isinstance(indices, Tensor):
                count = indices.shape[0] if indices.ndim else 1
                call("xhal_index_plan_create_from_tensor", device.handle, indices._p,
                     int(num_rows), ctypes.byref(h))
            else:
                a, dt = _host_index_array(indices)
                count = a.size
                call("xhal_index_plan_create", device.handle,
                     a.ctypes.data_as(ctypes.c_void_p), int(dt), a.size,
                     int(num_rows), ctypes.byref(h))
        except BaseException:
            self._handle = None
            device._drop()
            raise
        self._own(device, h.value)
        self.count = count
        self.num_rows = int(num_rows)

    def __repr__(self):
        return f"<xhal.IndexPlan count={self.count} num_rows={self.num_rows}>"


# bfloat16 has no NumPy dtype: its host values are uint16 bit patterns.
_NUMPY = {DType.float32: np.float32, DType.float64: np.float64, DType.float16: np.float16,
          DType.bfloat16: np.uint16}


def _value_dtype(dtype):
    """DType.float32, float64, float16 or bfloat16 from a DType, NumPy dtype
    or name."""
    dtype = as_dtype(dtype)
    if dtype not in _NUMPY:
        raise TypeError(f"xhal: CSR values are float32, float64, float16 or bfloat16, not {dtype}")
    return dtype


def _host_values(values, dtype):
    """Host values as a contiguous array of the matrix's dtype (bfloat16:
    uint16 bit patterns, never converted from floats)."""
    if dtype == DType.bfloat16 and np.asarray(values).dtype != np.uint16:
        raise TypeError("xhal: bfloat16 CSR values take uint16 bit patterns")
    return np.ascontiguousarray(values, dtype=_NUMPY[dtype])


class CsrMatrix(_Owned):
    """xhal_csr_t, a sparse matrix with f32, f64, f16 or bf16 values (the
    last two for spmv/spmm only, docs/semantics.md 7.2), created from host
    arrays (SciPy's indptr/indices/data) or from device tensors:

        CsrMatrix(device, row_ptr, col_idx, values=None, shape=(rows, cols),
                  dtype=None)
        CsrMatrix.from_scipy(device, scipy_csr_matrix, dtype=None)

    row_ptr and col_idx: int32 or int64 (both the same); values: host
    values, or None (all zero). dtype: the matrix's value dtype, float32
    (the default for host values, which are converted), float64, float16
    or bfloat16 (host values as uint16 bit patterns); a values Tensor gives
    its own dtype. Every op on a matrix takes tensors of its dtype. Tensors (offset 0) go as device buffers: the pattern is read
    to the host once for validation."""
    _release_fn = "xhal_csr_release"

    def __init__(self, device, row_ptr, col_idx, values=None, shape=None, dtype=None):
        device = _device(device)
        d = _lib.CsrDesc()
        d.struct_size = ctypes.sizeof(d)
        keep = []
        if isinstance(row_ptr, Tensor) or isinstance(col_idx, Tensor):
            if not (isinstance(row_ptr, Tensor) and isinstance(col_idx, Tensor)):
                raise TypeError("xhal: row_ptr and col_idx are both tensors or both host arrays")
            for t, n in ((row_ptr, "row_ptr"), (col_idx, "col_idx")):
                if t.offset != 0:
                    raise ValueError(f"xhal: {n} must start at offset 0 of its buffer")
            d.row_ptr_buffer = row_ptr.buffer.handle
            d.col_idx_buffer = col_idx.buffer.handle
            d.index_dtype = int(row_ptr.dtype)
            rows = row_ptr.size - 1
            nnz = col_idx.size
        else:
            rp, dt = _host_index_array(row_ptr)
            ci, _ = _host_index_array(col_idx)
            if ci.dtype != rp.dtype and dt != DType.invalid:
                ci = ci.astype(rp.dtype)
            keep += [rp, ci]
            d.row_ptr = rp.ctypes.data
            d.col_idx = ci.ctypes.data
            d.index_dtype = int(dt)
            rows = rp.size - 1
            nnz = ci.size
        if dtype is None:
            dtype = values.dtype if isinstance(values, Tensor) else DType.float32
        dtype = _value_dtype(dtype)
        d.values_dtype = int(dtype)
        if values is not None:
            if isinstance(values, Tensor):
                if values.offset != 0:
                    raise ValueError("xhal: values must start at offset 0 of its buffer")
                d.values_buffer = values.buffer.handle
            else:
                v = _host_values(values, dtype)
                keep.append(v)
                d.values_data = v.ctypes.data
        if shape is None:
            cols = 0
            if not isinstance(col_idx, Tensor) and nnz:
                cols = int(np.max(keep[1])) + 1
            shape = (rows, cols)
        d.rows, d.cols = int(shape[0]), int(shape[1])
        d.nnz = nnz
        h = ctypes.c_void_p()
        device._retain()
        try:
            call("xhal_csr_create", device.handle, ctypes.byref(d), ctypes.byref(h))
        except BaseException:
            self._handle = None
            device._drop()
            raise
        self._own(device, h.value)

    @classmethod
    def from_scipy(cls, device, m, dtype=None):
        """From a scipy.sparse csr_matrix/csr_array (or anything with
        indptr, indices, data and shape); dtype as for the constructor
        (float32 unless given: SciPy's float64 data is converted)."""
        return cls(device, m.indptr, m.indices, m.data, m.shape, dtype=dtype)

    @classmethod
    def from_dense(cls, device, a, index_dtype=np.int32):
        """From a dense host matrix: every non-zero entry is stored."""
        a = np.asarray(a, dtype=np.float32)
        rows, cols = np.nonzero(a)
        row_ptr = np.zeros(a.shape[0] + 1, dtype=index_dtype)
        np.cumsum(np.bincount(rows, minlength=a.shape[0]), out=row_ptr[1:])
        return cls(device, row_ptr, cols.astype(index_dtype), a[rows, cols], a.shape)

    @classmethod
    def _wrap(cls, device, handle):
        self = cls.__new__(cls)
        device._retain()
        self._own(device, handle)
        return self

    @property
    def shape(self):
        r, c, n = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        call("xhal_csr_get_shape", self.handle, ctypes.byref(r), ctypes.byref(c), ctypes.byref(n))
        return (r.value, c.value)

    @property
    def nnz(self):
        r, c, n = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        call("xhal_csr_get_shape", self.handle, ctypes.byref(r), ctypes.byref(c), ctypes.byref(n))
        return n.value

    @property
    def index_dtype(self):
        d = ctypes.c_int()
        call("xhal_csr_get_index_dtype", self.handle, ctypes.byref(d))
        return DType(d.value)

    @property
    def dtype(self):
        """The value dtype: float32, float64, float16 or bfloat16."""
        d = ctypes.c_int()
        call("xhal_csr_get_values_dtype", self.handle, ctypes.byref(d))
        return DType(d.value)

    def set_values(self, values):
        """Replaces the nnz values: from a host array (converted to the
        matrix's dtype), or from a device Tensor of the same device and
        dtype (no host round trip)."""
        if isinstance(values, Tensor):
            call("xhal_csr_set_values_tensor", self.handle, values._p)
        else:
            dtype = self.dtype
            v = _host_values(values, dtype)
            if v.size != self.nnz:
                raise ValueError(f"xhal: values has {v.size} elements, the matrix {self.nnz}")
            call("xhal_csr_set_values_typed", self.handle, int(dtype), v.ctypes.data)

    def read(self):
        """(row_ptr, col_idx, values) as host arrays, values in the matrix's
        dtype (xhal_csr_read, xhal_csr_read_values)."""
        rows, _ = self.shape
        nnz = self.nnz
        idt = np.int32 if self.index_dtype == DType.int32 else np.int64
        rp = np.empty(rows + 1, dtype=idt)
        ci = np.empty(nnz, dtype=idt)
        dtype = self.dtype
        v = np.empty(nnz, dtype=_NUMPY[dtype])
        call("xhal_csr_read", self.handle, rp.ctypes.data, ci.ctypes.data, None)
        call("xhal_csr_read_values", self.handle, int(dtype), v.ctypes.data)
        return rp, ci, v

    def to_dense(self):
        rp, ci, v = self.read()
        out = np.zeros(self.shape, dtype=v.dtype)
        for i in range(len(rp) - 1):
            out[i, ci[rp[i]:rp[i + 1]]] = v[rp[i]:rp[i + 1]]
        return out

    def __repr__(self):
        if self._handle is None:
            return "<xhal.CsrMatrix released>"
        return f"<xhal.CsrMatrix shape={self.shape} nnz={self.nnz} index_dtype={self.index_dtype}>"
