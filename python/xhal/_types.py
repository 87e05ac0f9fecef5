"""Element types and enums of the C API, and their NumPy / DLPack mapping."""

import enum

import numpy as np


class DType(enum.IntEnum):
    """xhal_dtype_t."""
    invalid = 0
    float32 = 1
    float16 = 2
    bfloat16 = 3   # storage only; no NumPy dtype: to_numpy gives uint16 bits
    int32 = 4
    int64 = 5
    uint8 = 6
    float64 = 7

    @property
    def itemsize(self):
        return _ITEMSIZE[self]

    def __str__(self):
        return self.name


_ITEMSIZE = {DType.invalid: 0, DType.float32: 4, DType.float16: 2,
             DType.bfloat16: 2, DType.int32: 4, DType.int64: 8,
             DType.uint8: 1, DType.float64: 8}

float32 = DType.float32
float16 = DType.float16
bfloat16 = DType.bfloat16
int32 = DType.int32
int64 = DType.int64
uint8 = DType.uint8
float64 = DType.float64

_FROM_NUMPY = {np.dtype(np.float32): DType.float32,
               np.dtype(np.float16): DType.float16,
               np.dtype(np.int32): DType.int32,
               np.dtype(np.int64): DType.int64,
               np.dtype(np.uint8): DType.uint8,
               np.dtype(np.float64): DType.float64}
_TO_NUMPY = {v: k for k, v in _FROM_NUMPY.items()}
_TO_NUMPY[DType.bfloat16] = np.dtype(np.uint16)


def as_dtype(d):
    """A DType from a DType, an int, a name ("float32", "f32") or anything
    np.dtype() accepts."""
    if isinstance(d, DType):
        return d
    if isinstance(d, int) and not isinstance(d, bool):
        return DType(d)
    if isinstance(d, str):
        short = {"f32": "float32", "f16": "float16", "bf16": "bfloat16",
                 "i32": "int32", "i64": "int64", "u8": "uint8",
                 "f64": "float64"}
        name = short.get(d, d)
        if name in DType.__members__:
            return DType[name]
    try:
        nd = np.dtype(d)
    except TypeError:
        raise TypeError(f"xhal: no xhal dtype for {d!r}") from None
    if nd.byteorder == ">":
        raise TypeError(f"xhal: big-endian dtype {nd} is not supported")
    try:
        return _FROM_NUMPY[nd.newbyteorder("=")]
    except KeyError:
        raise TypeError(f"xhal: no xhal dtype for NumPy dtype {nd}") from None


def to_numpy_dtype(d):
    return _TO_NUMPY[as_dtype(d)]


class Transpose(enum.IntEnum):
    """xhal_transpose_t."""
    NONE = 0
    TRANSPOSE = 1


class Triangle(enum.IntEnum):
    """xhal_triangle_t."""
    LOWER = 0
    UPPER = 1


class Diagonal(enum.IntEnum):
    """xhal_diagonal_t."""
    STORED = 0
    UNIT = 1


def enum_arg(cls, value, names):
    """An enum argument as the int the C call takes. Strings are looked up
    in `names`; ints (also out-of-range ones) go to C unchanged, so that C
    names them when they are wrong."""
    if isinstance(value, str):
        try:
            return int(names[value.lower()])
        except KeyError:
            raise ValueError(f"xhal: {cls.__name__} {value!r} is not one of "
                             f"{sorted(names)}") from None
    return int(value)


TRANS_NAMES = {"n": Transpose.NONE, "none": Transpose.NONE,
               "t": Transpose.TRANSPOSE, "transpose": Transpose.TRANSPOSE}
TRIANGLE_NAMES = {"lower": Triangle.LOWER, "l": Triangle.LOWER,
                  "upper": Triangle.UPPER, "u": Triangle.UPPER}
DIAGONAL_NAMES = {"stored": Diagonal.STORED, "unit": Diagonal.UNIT}

OP_NAMES = ("index_select", "index_add", "permute", "softmax_forward",
            "softmax_backward", "rms_norm_forward", "rms_norm_backward",
            "layer_norm_forward", "layer_norm_backward", "spmv", "spmm",
            "csr_solve", "csr_solve_backward", "spgemm")

# DLPack (dlpack.h)
DL_CPU, DL_CUDA, DL_VULKAN, DL_ROCM = 1, 2, 7, 10
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT = 0, 1, 2, 4
