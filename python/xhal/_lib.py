"""Loading libxhal and declaring its C ABI for ctypes.

Search order for the library (the first that loads wins):

1. ``XHAL_LIBRARY``: a path to ``libxhal.so*`` or a folder holding it;
2. the build tree beside this package (``<repo>/build/lib`` when the package
   is ``<repo>/python/xhal``), then installed layouts relative to the package
   (``<prefix>/lib`` for ``<prefix>/lib/python3*/site-packages/xhal``);
3. the system loader (``libxhal.so.0.1``, then ``libxhal.so``).

Every function of the app ABI is declared here with its exact C signature.
A function that the loaded library does not export (an older libxhal without
the interop calls) is ``None`` in ``fn`` and :func:`has` says so; the rest of
the module keeps working.

Two handles to the same library are used. ``cdll`` releases the GIL during a
call (ops, copies and synchronisation can take long and other Python threads
should run meanwhile). ``pydll`` keeps the GIL for the calls that may run a
foreign DLPack deleter or release callback synchronously (buffer release,
DLPack import): those deleters (NumPy's among them) touch Python reference
counts and expect the GIL to be held.
"""

import ctypes
import os

from ctypes import (POINTER, Structure, c_char_p, c_float, c_int, c_int32,
                    c_int64, c_size_t, c_uint8, c_uint16, c_uint32, c_uint64,
                    c_void_p)

SONAME = "libxhal.so.0.1"
MAX_RANK = 8
OP_COUNT = 14

# ---- structs (layouts as in hal/include/xhal/*.h) --------------------------


class DeviceInfo(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("backend", c_char_p),
        ("backend_index", c_uint32),
        ("name", c_char_p),
        ("stable_id", c_char_p),
        ("kind", c_int),
        ("memory_bytes", c_uint64),
        ("supported_ops", c_uint64),
        ("op_dtypes", c_uint32 * OP_COUNT),
    ]


class PluginInfo(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("path", c_char_p),
        ("backend", c_char_p),
        ("state", c_int),
        ("reason", c_char_p),
        ("abi_major", c_uint32),
        ("abi_minor", c_uint32),
        ("plugin_version", c_char_p),
        ("device_count", c_uint32),
    ]


class RuntimeOptions(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("device_selector", c_char_p),
        ("plugin_path", c_char_p),
        ("plugin_path_only", c_int32),
    ]


class Counters(Structure):
    _fields_ = [
        ("host_to_device_transfers", c_uint64),
        ("host_to_device_bytes", c_uint64),
        ("device_to_host_transfers", c_uint64),
        ("device_to_host_bytes", c_uint64),
        ("kernel_launches", c_uint64),
    ]


class CTensor(Structure):
    """xhal_tensor_t (frozen layout, 152 bytes)."""
    _fields_ = [
        ("buffer", c_void_p),
        ("offset", c_uint64),
        ("dtype", c_int),
        ("rank", c_uint32),
        ("shape", c_int64 * MAX_RANK),
        ("strides", c_int64 * MAX_RANK),
    ]


class CsrDesc(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("rows", c_int64),
        ("cols", c_int64),
        ("nnz", c_int64),
        ("index_dtype", c_int),
        ("row_ptr", c_void_p),
        ("col_idx", c_void_p),
        ("values", c_void_p),
        ("row_ptr_buffer", c_void_p),
        ("col_idx_buffer", c_void_p),
        ("values_buffer", c_void_p),
        # since ABI 1.6 (f64 matrices)
        ("values_dtype", c_int),
        ("values_data", c_void_p),
    ]

RELEASE_FN = ctypes.CFUNCTYPE(None, c_void_p)


class ExternalMemory(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("kind", c_int),
        ("device_ordinal", c_int32),
        ("pointer", c_void_p),
        ("size", c_uint64),
        ("release", RELEASE_FN),
        ("release_user_data", c_void_p),
        ("flags", c_uint64),     # XHAL_EXTERNAL_MEMORY_READ_ONLY (1) or 0
    ]


class NativeMemory(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("kind", c_int),
        ("device_ordinal", c_int32),
        ("pointer", c_void_p),
        ("size", c_uint64),
    ]


# DLPack (hal/include/xhal/dlpack.h, layout-identical to DLPack 1.x).
class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensor(Structure):
    pass


class DLManagedTensorVersioned(Structure):
    pass


# The deleters are called with the GIL held (PYFUNCTYPE): a foreign deleter
# that xhal's deleter may chain to (NumPy's) needs it.
DL_DELETER = ctypes.PYFUNCTYPE(None, POINTER(DLManagedTensor))
DL_DELETER_VERSIONED = ctypes.PYFUNCTYPE(None, POINTER(DLManagedTensorVersioned))
# The same signatures for deleters written in Python (tests, fake producers):
# a C caller may not hold the GIL, so these acquire it.
DL_DELETER_CB = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensor))
DL_DELETER_VERSIONED_CB = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensorVersioned))

DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", c_void_p),
    ("deleter", c_void_p),
]
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", c_void_p),
    ("deleter", c_void_p),
    ("flags", c_uint64),
    ("dl_tensor", DLTensor),
]

assert ctypes.sizeof(CTensor) == 152
assert ctypes.sizeof(DLTensor) == 48
assert ctypes.sizeof(DLManagedTensor) == 64
assert ctypes.sizeof(DLManagedTensorVersioned) == 80

# ---- function table ----------------------------------------------------------

S = c_int          # xhal_status_t
H = c_void_p       # any handle
T = POINTER(CTensor)
E = c_int          # any enum passed by value

# name: (restype, argtypes, keeps_gil)
_SIGNATURES = {
    "xhal_status_name": (c_char_p, [E], False),
    "xhal_last_error": (c_char_p, [], False),
    "xhal_version": (S, [POINTER(c_uint32)] * 3, False),
    "xhal_runtime_init": (S, [POINTER(RuntimeOptions)], False),
    "xhal_runtime_shutdown": (S, [], False),
    "xhal_plugin_count": (S, [POINTER(c_uint32)], False),
    "xhal_plugin_get_info": (S, [c_uint32, POINTER(PluginInfo)], False),
    "xhal_op_name": (c_char_p, [E], False),
    "xhal_device_count": (S, [POINTER(c_uint32)], False),
    "xhal_device_get_info": (S, [c_uint32, POINTER(DeviceInfo)], False),
    "xhal_device_open": (S, [c_char_p, POINTER(H)], False),
    "xhal_device_open_index": (S, [c_uint32, POINTER(H)], False),
    "xhal_device_release": (S, [H], False),
    "xhal_device_query": (S, [H, POINTER(DeviceInfo)], False),
    "xhal_device_synchronize": (S, [H], False),
    "xhal_device_get_counters": (S, [H, POINTER(Counters)], False),
    "xhal_device_get_options": (S, [H, c_char_p, c_size_t, POINTER(c_size_t)], False),
    # buffers
    "xhal_buffer_allocate": (S, [H, c_uint64, POINTER(H)], False),
    "xhal_buffer_release": (S, [H], True),
    "xhal_buffer_size": (S, [H, POINTER(c_uint64)], False),
    "xhal_buffer_device": (S, [H, POINTER(H)], False),
    "xhal_buffer_write": (S, [H, c_uint64, c_void_p, c_uint64], False),
    "xhal_buffer_read": (S, [H, c_uint64, c_void_p, c_uint64], False),
    "xhal_buffer_copy": (S, [H, c_uint64, H, c_uint64, c_uint64], False),
    "xhal_buffer_fill": (S, [H, c_uint64, c_uint64, c_void_p, c_uint32], False),
    # tensors
    "xhal_dtype_size": (c_uint32, [E], False),
    "xhal_dtype_name": (c_char_p, [E], False),
    "xhal_tensor_init": (S, [H, c_uint64, E, c_uint32, POINTER(c_int64), T], False),
    "xhal_tensor_permute_view": (S, [T, POINTER(c_uint32), T], False),
    # dense ops
    "xhal_index_plan_create": (S, [H, c_void_p, E, c_uint64, c_uint64, POINTER(H)], False),
    "xhal_index_plan_create_from_tensor": (S, [H, T, c_uint64, POINTER(H)], False),
    "xhal_index_plan_release": (S, [H], False),
    "xhal_index_select": (S, [H, H, T, T], False),
    "xhal_index_add": (S, [H, H, c_float, T, T], False),
    "xhal_permute": (S, [H, T, POINTER(c_uint32), T], False),
    "xhal_softmax_forward": (S, [H, T, T], False),
    "xhal_softmax_backward": (S, [H, T, T, T], False),
    "xhal_rms_norm_forward": (S, [H, T, T, c_float, T, T], False),
    "xhal_rms_norm_backward": (S, [H, T, T, T, T, T, T], False),
    "xhal_layer_norm_forward": (S, [H, T, T, T, c_float, T, T, T], False),
    "xhal_layer_norm_backward": (S, [H, T, T, T, T, T, T, T, T], False),
    # sparse
    "xhal_csr_create": (S, [H, POINTER(CsrDesc), POINTER(H)], False),
    "xhal_csr_release": (S, [H], False),
    "xhal_csr_get_shape": (S, [H, POINTER(c_int64), POINTER(c_int64), POINTER(c_int64)], False),
    "xhal_csr_get_index_dtype": (S, [H, POINTER(c_int)], False),
    "xhal_csr_get_values_dtype": (S, [H, POINTER(c_int)], False),
    "xhal_csr_set_values": (S, [H, c_void_p], False),
    "xhal_csr_set_values_typed": (S, [H, c_int, c_void_p], False),
    "xhal_csr_read_values": (S, [H, c_int, c_void_p], False),
    "xhal_csr_set_values_tensor": (S, [H, T], False),
    "xhal_csr_read": (S, [H, c_void_p, c_void_p, c_void_p], False),
    "xhal_spmv": (S, [H, H, E, c_float, T, c_float, T], False),
    "xhal_spmm": (S, [H, H, E, c_float, T, c_float, T], False),
    "xhal_csr_solve": (S, [H, H, E, E, E, T, T], False),
    "xhal_csr_solve_backward": (S, [H, H, E, E, E, T, T, T, T], False),
    "xhal_spgemm": (S, [H, H, H, POINTER(H)], False),
    # interop (hal/include/xhal/interop.h); may be absent in older libraries
    "xhal_buffer_import": (S, [H, POINTER(ExternalMemory), POINTER(H)], True),
    "xhal_buffer_get_native": (S, [H, POINTER(NativeMemory)], False),
    "xhal_device_get_native_queue": (S, [H, POINTER(c_void_p)], False),
    "xhal_device_signal_external_queue": (S, [H, c_void_p], False),
    "xhal_device_wait_external_queue": (S, [H, c_void_p], False),
    "xhal_device_open_on_native_queue": (S, [c_char_p, c_void_p, POINTER(H)], False),
    # The managed tensors travel as plain addresses (c_void_p): they go to
    # and come from capsules, which hold addresses.
    "xhal_tensor_export_dlpack": (S, [T, c_uint64, POINTER(c_void_p)], False),
    "xhal_tensor_export_dlpack_unversioned": (S, [T, POINTER(c_void_p)], False),
    "xhal_tensor_import_dlpack": (S, [H, c_void_p, T], True),
    "xhal_tensor_import_dlpack_unversioned": (S, [H, c_void_p, T], True),
}


def _candidates():
    env = os.environ.get("XHAL_LIBRARY")
    if env:
        if os.path.isdir(env):
            for name in ("libxhal.so", SONAME):
                yield os.path.join(env, name)
        else:
            yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    up = lambda n: os.path.normpath(os.path.join(here, *([".."] * n)))  # noqa: E731
    for folder in (
        os.path.join(up(2), "build", "lib"),   # <repo>/python/xhal -> <repo>/build/lib
        up(3),                                  # <prefix>/lib/python3.x/site-packages/xhal
        os.path.join(up(4), "lib"),             # <prefix>/lib/python3/dist-packages/xhal (lib64)
        os.path.join(up(2), "lib"),             # <prefix>/python/xhal
    ):
        for name in ("libxhal.so", SONAME):
            yield os.path.join(folder, name)
    yield SONAME      # the system loader: LD_LIBRARY_PATH, ld.so.cache
    yield "libxhal.so"


def _load():
    tried = []
    env = os.environ.get("XHAL_LIBRARY")
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            return path, ctypes.CDLL(path), ctypes.PyDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            if env:
                break
    raise ImportError("xhal: cannot load libxhal; set XHAL_LIBRARY to the library "
                      "(e.g. build/lib/libxhal.so). Tried: " + "; ".join(tried))


path, cdll, pydll = _load()

fn = {}
for _name, (_res, _args, _gil) in _SIGNATURES.items():
    try:
        _f = getattr(pydll if _gil else cdll, _name)
    except AttributeError:
        fn[_name] = None
        continue
    _f.restype = _res
    _f.argtypes = _args
    fn[_name] = _f


def has(name):
    """True when the loaded libxhal exports `name` (e.g. "xhal_tensor_export_dlpack")."""
    return fn.get(name) is not None


# ---- the Python C API, for DLPack capsules -----------------------------------
# A private PyDLL handle so that argtypes set here do not clash with other
# users of ctypes.pythonapi.
_py = ctypes.PyDLL(None)

PyCapsule_New = _py.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]

PyCapsule_IsValid = _py.PyCapsule_IsValid
PyCapsule_IsValid.restype = c_int
PyCapsule_IsValid.argtypes = [ctypes.py_object, c_char_p]

PyCapsule_GetPointer = _py.PyCapsule_GetPointer
PyCapsule_GetPointer.restype = c_void_p
PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]

PyCapsule_GetName = _py.PyCapsule_GetName
PyCapsule_GetName.restype = c_char_p
PyCapsule_GetName.argtypes = [ctypes.py_object]

PyCapsule_SetName = _py.PyCapsule_SetName
PyCapsule_SetName.restype = c_int
PyCapsule_SetName.argtypes = [ctypes.py_object, c_char_p]

# For the capsule destructor, which gets a borrowed pointer to a capsule that
# is being destroyed: it must not be turned into a Python reference again.
# These prototypes take the raw pointer; a separate handle so the argtypes
# do not collide with the py_object prototypes above.
_py_raw = ctypes.PyDLL(None)
RawCapsule_GetName = _py_raw.PyCapsule_GetName
RawCapsule_GetName.restype = c_void_p
RawCapsule_GetName.argtypes = [c_void_p]
RawCapsule_GetPointer = _py_raw.PyCapsule_GetPointer
RawCapsule_GetPointer.restype = c_void_p
RawCapsule_GetPointer.argtypes = [c_void_p, c_void_p]
