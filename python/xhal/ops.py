"""Every op of xhal/ops.h and xhal/sparse.h, named as in C without the
"xhal_" prefix and taking the same arguments in the same order:

    index_select(device, plan, src, out)       index_add(device, plan, alpha, src, dst)
    permute(device, src, perm, dst)
    softmax_forward(device, x, y)              softmax_backward(device, y, dy, dx)
    rms_norm_forward(device, x, gamma, eps, y, rstd)
    rms_norm_backward(device, x, gamma, rstd, dy, dx, dgamma)
    layer_norm_forward(device, x, gamma, beta, eps, y, mean, rstd)
    layer_norm_backward(device, x, gamma, mean, rstd, dy, dx, dgamma, dbeta)
    spmv(device, a, trans, alpha, x, beta, y)  spmm(device, a, trans, alpha, x, beta, y)
    csr_solve(device, a, trans, triangle, diagonal, b, x)
    csr_solve_backward(device, a, trans, triangle, diagonal, x, dx, gb, ga)
    spgemm(device, a, b) -> CsrMatrix

Outputs are tensors the caller passes (written in place, as in C). An
output left as None is allocated (contiguous, the shape and dtype the op
writes) -- except `ga` of csr_solve_backward, where None is C's NULL (no
matrix gradient). Each function returns its output(s). `device` may be
None: the device of the first tensor or handle argument. Every non-OK
status raises the XhalError subclass with xhal's message.
"""

import ctypes

from . import _lib
from ._types import (DType, Transpose, Triangle, Diagonal, enum_arg, TRANS_NAMES,
                     TRIANGLE_NAMES, DIAGONAL_NAMES)
from .errors import OK, error_for
from .sparse import CsrMatrix
from .tensor import Tensor, empty

_f = _lib.fn


def _dev(device, first):
    if device is not None:
        return device.handle
    return first.device.handle


def _t(x, name):
    """The tensor pointer argument (None: NULL)."""
    if x is None:
        return None
    try:
        return x._p
    except AttributeError:
        raise TypeError(f"xhal: argument '{name}' must be an xhal.Tensor, not "
                        f"{type(x).__name__} (xhal.asarray copies a host array)") from None


def _h(x):
    return None if x is None else x.handle


def _run(fname, status):
    if status != OK:
        raise error_for(status, fname)


def _rows(x):
    s = x.shape
    n = 1
    for d in s[:-1]:
        n *= d
    return n


def _new(shape, like, device):
    return empty(shape, like.dtype, device if device is not None else like.device)


def _new_stat(x, device):
    """Saved mean/rstd of a norm: float64 for float64 x, else float32
    (docs/semantics.md 7.2, 7.3)."""
    dt = DType.float64 if x.dtype == DType.float64 else DType.float32
    return empty((_rows(x),), dt, device if device is not None else x.device)


def index_select(device, plan, src, out=None):
    """out[i, :] = src[idx[i], :]; any dtype. Exact."""
    if out is None:
        out = _new((plan.count,) + tuple(src.shape[1:]), src, device)
    _run("xhal_index_select", _f["xhal_index_select"](_dev(device, src), _h(plan), _t(src, "src"), _t(out, "out")))
    return out


def index_add(device, plan, alpha, src, dst):
    """dst[idx[i], :] += alpha * src[i, :] in the canonical order; f32."""
    _run("xhal_index_add", _f["xhal_index_add"](_dev(device, src), _h(plan), float(alpha), _t(src, "src"), _t(dst, "dst")))
    return dst


def permute(device, src, perm, dst=None):
    """dst = src with dims reordered, dst.shape[i] = src.shape[perm[i]];
    src may be a strided view. Exact."""
    perm = [int(p) for p in perm]
    if dst is None:
        shape = []
        for p in perm:
            shape.append(src.shape[p] if 0 <= p < src.ndim else 0)
        dst = _new(shape, src, device)
    p = (ctypes.c_uint32 * max(len(perm), 1))(*[p & 0xFFFFFFFF for p in perm])
    _run("xhal_permute", _f["xhal_permute"](_dev(device, src), _t(src, "src"), p, _t(dst, "dst")))
    return dst


def softmax_forward(device, x, y=None):
    if y is None:
        y = _new(x.shape, x, device)
    _run("xhal_softmax_forward", _f["xhal_softmax_forward"](_dev(device, x), _t(x, "x"), _t(y, "y")))
    return y


def softmax_backward(device, y, dy, dx=None):
    if dx is None:
        dx = _new(y.shape, y, device)
    _run("xhal_softmax_backward", _f["xhal_softmax_backward"](_dev(device, y), _t(y, "y"), _t(dy, "dy"), _t(dx, "dx")))
    return dx


def rms_norm_forward(device, x, gamma, eps, y=None, rstd=None):
    """Returns (y, rstd)."""
    if y is None:
        y = _new(x.shape, x, device)
    if rstd is None:
        rstd = _new_stat(x, device)
    _run("xhal_rms_norm_forward", _f["xhal_rms_norm_forward"](
        _dev(device, x), _t(x, "x"), _t(gamma, "gamma"), float(eps), _t(y, "y"), _t(rstd, "rstd")))
    return y, rstd


def rms_norm_backward(device, x, gamma, rstd, dy, dx=None, dgamma=None):
    """Returns (dx, dgamma)."""
    if dx is None:
        dx = _new(x.shape, x, device)
    if dgamma is None:
        dgamma = _new(gamma.shape, gamma, device)
    _run("xhal_rms_norm_backward", _f["xhal_rms_norm_backward"](
        _dev(device, x), _t(x, "x"), _t(gamma, "gamma"), _t(rstd, "rstd"), _t(dy, "dy"),
        _t(dx, "dx"), _t(dgamma, "dgamma")))
    return dx, dgamma


def layer_norm_forward(device, x, gamma, beta, eps, y=None, mean=None, rstd=None):
    """Returns (y, mean, rstd)."""
    if y is None:
        y = _new(x.shape, x, device)
    if mean is None:
        mean = _new_stat(x, device)
    if rstd is None:
        rstd = _new_stat(x, device)
    _run("xhal_layer_norm_forward", _f["xhal_layer_norm_forward"](
        _dev(device, x), _t(x, "x"), _t(gamma, "gamma"), _t(beta, "beta"), float(eps),
        _t(y, "y"), _t(mean, "mean"), _t(rstd, "rstd")))
    return y, mean, rstd


def layer_norm_backward(device, x, gamma, mean, rstd, dy, dx=None, dgamma=None, dbeta=None):
    """Returns (dx, dgamma, dbeta)."""
    if dx is None:
        dx = _new(x.shape, x, device)
    if dgamma is None:
        dgamma = _new(gamma.shape, gamma, device)
    if dbeta is None:
        dbeta = _new(gamma.shape, gamma, device)
    _run("xhal_layer_norm_backward", _f["xhal_layer_norm_backward"](
        _dev(device, x), _t(x, "x"), _t(gamma, "gamma"), _t(mean, "mean"), _t(rstd, "rstd"),
        _t(dy, "dy"), _t(dx, "dx"), _t(dgamma, "dgamma"), _t(dbeta, "dbeta")))
    return dx, dgamma, dbeta


def _trans(t):
    return enum_arg(Transpose, t, TRANS_NAMES)


def _op_rows(a, trans):
    r, c = a.shape
    return c if _trans(trans) == Transpose.TRANSPOSE else r


def spmv(device, a, trans, alpha, x, beta, y=None):
    """y = alpha * op(A) x + beta * y (beta == 0: y is not read)."""
    if y is None:
        y = _new((_op_rows(a, trans),), x, device if device is not None else a.device)
    _run("xhal_spmv", _f["xhal_spmv"](_dev(device, a), _h(a), _trans(trans), float(alpha),
                                     _t(x, "x"), float(beta), _t(y, "y")))
    return y


def spmm(device, a, trans, alpha, x, beta, y=None):
    """Y = alpha * op(A) X + beta * Y; X [op(A).cols, k], Y [op(A).rows, k]."""
    if y is None:
        y = _new((_op_rows(a, trans),) + tuple(x.shape[1:]), x,
                 device if device is not None else a.device)
    _run("xhal_spmm", _f["xhal_spmm"](_dev(device, a), _h(a), _trans(trans), float(alpha),
                                     _t(x, "x"), float(beta), _t(y, "y")))
    return y


def csr_solve(device, a, trans, triangle, diagonal, b, x=None):
    """Solves op(A) x = b for triangular A; x may be b (in place)."""
    if x is None:
        x = _new(b.shape, b, device if device is not None else a.device)
    _run("xhal_csr_solve", _f["xhal_csr_solve"](
        _dev(device, a), _h(a), _trans(trans), enum_arg(Triangle, triangle, TRIANGLE_NAMES),
        enum_arg(Diagonal, diagonal, DIAGONAL_NAMES), _t(b, "b"), _t(x, "x")))
    return x


def csr_solve_backward(device, a, trans, triangle, diagonal, x, dx, gb=None, ga=None):
    """Backward of x = solve(op(A), b): returns (gb, ga). gb None:
    allocated; ga None: not computed (C's NULL)."""
    if gb is None:
        gb = _new(dx.shape, dx, device if device is not None else a.device)
    _run("xhal_csr_solve_backward", _f["xhal_csr_solve_backward"](
        _dev(device, a), _h(a), _trans(trans), enum_arg(Triangle, triangle, TRIANGLE_NAMES),
        enum_arg(Diagonal, diagonal, DIAGONAL_NAMES), _t(x, "x"), _t(dx, "dx"),
        _t(gb, "gb"), _t(ga, "ga")))
    return gb, ga


def spgemm(device, a, b):
    """C = A B as a new CsrMatrix."""
    h = ctypes.c_void_p()
    _run("xhal_spgemm", _f["xhal_spgemm"](_dev(device, a), _h(a), _h(b), ctypes.byref(h)))
    dev = device if device is not None else a.device
    return CsrMatrix._wrap(dev, h.value)
