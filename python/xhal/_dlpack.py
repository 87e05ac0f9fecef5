"""DLPack in both directions, following the Python array API standard.

Export (Tensor.__dlpack__): xhal_tensor_export_dlpack (versioned, capsule
"dltensor_versioned") when the consumer passes max_version >= (1, 0), else
xhal_tensor_export_dlpack_unversioned (capsule "dltensor"). The capsule's
destructor calls the deleter only when no consumer took the tensor (the
capsule still has its original name); a consumer renames it "used_..." and
calls the deleter itself when done.

Import (from_dlpack): the producer's capsule goes to
xhal_tensor_import_dlpack(_unversioned), which owns the managed tensor from
that call on, success or failure (it runs the deleter itself when it
refuses it). So the capsule is renamed "used_..." as soon as the call was
made, whatever its status, and only then is the status checked: the
producer's capsule destructor then leaves it alone and the deleter runs
exactly once.

Streams (cuda and rocm devices): an export makes the consumer's stream wait
for the work queued on the xhal device so far
(xhal_device_signal_external_queue; never a device-wide synchronisation);
an import passes xhal's own queue as the stream, so that the producer makes
xhal's queue wait for its work.
"""

import ctypes

from . import _lib
from ._types import DL_CPU, DL_CUDA, DL_ROCM, DL_VULKAN
from .device import Device, default_device, _dlpack_selector
from .errors import call, check, XhalError
from .tensor import Buffer, Tensor, _device

FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1

NAME = b"dltensor"
NAME_VERSIONED = b"dltensor_versioned"
USED = b"used_dltensor"
USED_VERSIONED = b"used_dltensor_versioned"


_AVAILABLE = all(_lib.has(n) for n in (
    "xhal_tensor_export_dlpack", "xhal_tensor_export_dlpack_unversioned",
    "xhal_tensor_import_dlpack", "xhal_tensor_import_dlpack_unversioned",
    "xhal_device_signal_external_queue", "xhal_buffer_get_native"))


def available():
    """True when the loaded libxhal has the DLPack calls (interop.h)."""
    return _AVAILABLE


def _require():
    if not _AVAILABLE:
        raise NotImplementedError(
            f"xhal: {_lib.path} has no DLPack support (xhal_tensor_export_dlpack "
            "and the other calls of xhal/interop.h are not exported)")


# ---- the capsule destructor ---------------------------------------------------
# Offsets of PyCapsule's `pointer` and `name` fields, found on a probe capsule
# (the struct is PyObject_HEAD, pointer, name, context, destructor), so that
# the destructor can read them without calling the C API.
def _find_offsets():
    probe_ptr = 0x5A17C0DE5A17C0DE & (2 ** (8 * ctypes.sizeof(ctypes.c_void_p)) - 1)
    name = ctypes.create_string_buffer(b"xhal_probe")
    cap = _lib.PyCapsule_New(probe_ptr, name, None)
    base = id(cap)
    word = ctypes.sizeof(ctypes.c_void_p)
    for off in range(0, 16 * word, word):
        if ctypes.c_void_p.from_address(base + off).value == probe_ptr:
            name_at = ctypes.c_void_p.from_address(base + off + word).value
            if name_at == ctypes.addressof(name):
                return off, off + word
    raise ImportError("xhal: unexpected PyCapsule layout")


_PTR_OFF, _NAME_OFF = _find_offsets()


_DELETER = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)   # called with the GIL held
_DELETER_AT = {True: _lib.DLManagedTensorVersioned.deleter.offset,
               False: _lib.DLManagedTensor.deleter.offset}
_deleters = {}   # deleter address -> callable (xhal's own deleter, mostly)


def _call_deleter(ptr, versioned, _from=ctypes.c_void_p.from_address,
                  _at=_DELETER_AT, _cache=_deleters, _proto=_DELETER):
    # Names bound as defaults: this may run late in interpreter shutdown.
    d = _from(ptr + _at[versioned]).value
    if d:
        f = _cache.get(d)
        if f is None:
            f = _proto(d)
            if len(_cache) < 64:
                _cache[d] = f
        f(ptr)


def _noop():
    return None


def _capsule_destructor(raw, _int=int, _from=ctypes.c_void_p.from_address,
                        _string_at=ctypes.string_at, _call=_call_deleter,
                        _ptr_off=_PTR_OFF, _name_off=_NAME_OFF):
    # Runs while the capsule is being destroyed. A consumer that failed may
    # drop the capsule with its exception still set; the first call below
    # then raises SystemError (which clears it), and the rest runs. The
    # deleter is called at most once and only for an unconsumed capsule.
    try:
        _int()
    except SystemError:
        pass
    try:
        name_at = _from(raw + _name_off).value
        if not name_at:
            return
        name = _string_at(name_at)
        if name == NAME_VERSIONED or name == NAME:
            ptr = _from(raw + _ptr_off).value
            if ptr:
                _call(ptr, name == NAME_VERSIONED)
    except Exception:
        pass


_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_capsule_destructor)
_DESTRUCTOR_ADDR = ctypes.cast(_DESTRUCTOR, ctypes.c_void_p).value


def make_capsule(ptr, versioned):
    """A DLPack capsule around a managed tensor (address `ptr`) whose
    destructor runs its deleter if no consumer takes it."""
    name = NAME_VERSIONED if versioned else NAME
    try:
        return _lib.PyCapsule_New(ptr, name, _DESTRUCTOR_ADDR)
    except BaseException:
        _call_deleter(ptr, versioned)
        raise


def capsule_name(capsule):
    n = _lib.PyCapsule_GetName(capsule)
    return n


# ---- export -------------------------------------------------------------------

def dlpack_device(t):
    """(device_type, device_id) of a tensor, from where its bytes live."""
    dev = t.buffer.device
    dt = dev.dlpack_device_type
    if dt == DL_CPU:
        return (DL_CPU, 0)
    if dt in (DL_CUDA, DL_ROCM) and _lib.has("xhal_buffer_get_native"):
        try:
            nat = t.buffer.native()
            return (int(nat.kind), int(nat.device_ordinal))
        except XhalError:
            pass
    if dt == DL_CPU:
        return (DL_CPU, 0)
    return (dt, dev.info.backend_index)


def _stream_pointer(dev_type, stream):
    """The stream argument of __dlpack__ as a pointer (None: the legacy or
    default stream), or False for -1 (no synchronisation)."""
    if stream is None:
        return None
    stream = int(stream)
    if stream == -1:
        return False
    if dev_type == DL_CUDA:
        if stream == 0:
            raise ValueError("xhal: stream 0 is ambiguous for CUDA (use 1 for "
                             "the legacy default stream, 2 for per-thread)")
        if stream == 1:
            return None
        return stream      # 2 is cudaStreamPerThread's handle value
    if dev_type == DL_ROCM:
        if stream in (1, 2):
            raise ValueError(f"xhal: stream {stream} is not valid for ROCm")
        return stream or None
    return None


def export(t, stream=None, max_version=None, dl_device=None, copy=None):
    _require()
    own = dlpack_device(t)
    if dl_device is not None and tuple(int(x) for x in dl_device) != own:
        raise BufferError(f"xhal: cannot export a tensor of DLPack device {own} "
                          f"to {tuple(dl_device)}")
    copied = False
    if copy:
        t = t.copy()
        copied = True
    if own[0] in (DL_CUDA, DL_ROCM):
        q = _stream_pointer(own[0], stream)
        if q is not False:
            call("xhal_device_signal_external_queue", t.device.handle, q)
    versioned = max_version is not None and tuple(max_version)[:2] >= (1, 0)
    out = ctypes.c_void_p()
    if versioned:
        call("xhal_tensor_export_dlpack", t._p, 0, ctypes.byref(out))
        if copied:
            _lib.DLManagedTensorVersioned.from_address(out.value).flags |= FLAG_IS_COPIED
    else:
        call("xhal_tensor_export_dlpack_unversioned", t._p, ctypes.byref(out))
    return make_capsule(out.value, versioned)


# ---- import -----------------------------------------------------------------------

_IMPORT_VERSIONED = _lib.fn["xhal_tensor_import_dlpack"]
_IMPORT = _lib.fn["xhal_tensor_import_dlpack_unversioned"]


def _is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


def _managed_device(capsule, versioned):
    name = NAME_VERSIONED if versioned else NAME
    ptr = _lib.PyCapsule_GetPointer(capsule, name)
    cls = _lib.DLManagedTensorVersioned if versioned else _lib.DLManagedTensor
    d = cls.from_address(ptr).dl_tensor.device
    return (d.device_type, d.device_id)


def from_dlpack(obj, device=None, *, copy=None):
    """A Tensor over the memory of `obj` without a copy: `obj` implements
    __dlpack__/__dlpack_device__ (a NumPy array, a torch or CuPy tensor, an
    xhal Tensor) or is a DLPack capsule.

    device: the xhal Device (or a selector) to import into; None picks the
    one matching obj's DLPack device ("cpu", "cuda:N", "rocm:N"). On a cuda
    or rocm device xhal's queue is passed as the stream, so the producer's
    pending work is ordered before xhal's."""
    _require()
    if _is_capsule(obj):
        capsule = obj
    else:
        dl_dev = tuple(int(x) for x in obj.__dlpack_device__())
        dev = _device(device) if device is not None else default_device(_dlpack_selector(*dl_dev))
        dtype = dev.dlpack_device_type
        stream = None
        if dtype in (DL_CUDA, DL_ROCM):
            q = dev.native_queue
            stream = q if q else (1 if dtype == DL_CUDA else 0)
        kwargs = {"stream": stream}
        extra = {}
        if copy is not None:
            extra["copy"] = copy
        if device is not None and (dtype, dev.info.backend_index if dtype != DL_CPU else 0) != dl_dev:
            extra["dl_device"] = (dtype, 0 if dtype == DL_CPU else dev.info.backend_index)
        try:
            capsule = obj.__dlpack__(max_version=(1, 0), **kwargs, **extra)
        except TypeError:
            if extra:
                raise BufferError("xhal: the producer does not take copy/dl_device "
                                  "(a DLPack 0.x producer)") from None
            capsule = obj.__dlpack__(**kwargs)
        device = dev
    name = capsule_name(capsule)
    if name not in (NAME, NAME_VERSIONED):
        raise BufferError(f"xhal: not an unused DLPack capsule (its name is {name!r})")
    versioned = name == NAME_VERSIONED
    if device is None:
        device = default_device(_dlpack_selector(*_managed_device(capsule, versioned)))
    else:
        device = _device(device)
    ptr = _lib.PyCapsule_GetPointer(capsule, name)
    out = _lib.CTensor()
    device._retain()
    try:
        f = _IMPORT_VERSIONED if versioned else _IMPORT
        status = f(device.handle, ptr, ctypes.byref(out))
        # xhal owns the managed tensor now, whatever the status: it has run
        # the deleter if it refused it. The capsule must not run it again.
        _lib.PyCapsule_SetName(capsule, USED_VERSIONED if versioned else USED)
        check(status, f.__name__)
    except BaseException:
        device._drop()
        raise
    buf = Buffer.__new__(Buffer)
    buf._adopt(device, out.buffer)      # _retain above is this buffer's
    return Tensor._from_c(buf, out)
