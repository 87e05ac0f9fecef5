"""xhal for Python: devices, tensors, index plans, CSR matrices and every op
of the xhal C ABI, through ctypes (no compiled extension: one package for
every Python 3 that has NumPy). docs/python.md has the guide.

    import numpy as np, xhal
    dev = xhal.Device()                      # honours XHAL_DEVICE
    x = xhal.asarray(np.random.rand(4, 8).astype(np.float32), device=dev)
    y = xhal.softmax_forward(dev, x)         # outputs may be passed or allocated
    print(y.numpy())
"""

from ._lib import path as library_path, has as has_symbol
from ._types import (DType, float32, float16, bfloat16, int32, int64, uint8,
                     float64, Transpose, Triangle, Diagonal)
from .errors import (XhalError, InvalidArgumentError, OutOfRangeError,
                     ShapeMismatchError, UnsupportedError, OutOfMemoryError,
                     NotFoundError, DeviceLostError, PluginError, AliasingError,
                     InvalidStructureError, WrongDeviceError, BusyError,
                     InternalError, status_name, last_error)
from .device import (Device, DeviceInfo, PluginInfo, devices, default_device,
                     plugins, version, init, shutdown)
from .tensor import Buffer, Tensor, empty, zeros, asarray, to_numpy
from .sparse import IndexPlan, CsrMatrix
from .ops import (index_select, index_add, permute, softmax_forward,
                  softmax_backward, rms_norm_forward, rms_norm_backward,
                  layer_norm_forward, layer_norm_backward, spmv, spmm,
                  csr_solve, csr_solve_backward, spgemm)
from ._dlpack import from_dlpack, available as dlpack_available

__version__ = "0.1.0"

NO_TRANSPOSE = Transpose.NONE
TRANSPOSE = Transpose.TRANSPOSE
LOWER = Triangle.LOWER
UPPER = Triangle.UPPER
STORED_DIAGONAL = Diagonal.STORED
UNIT_DIAGONAL = Diagonal.UNIT

__all__ = [n for n in dir() if not n.startswith("_")]
