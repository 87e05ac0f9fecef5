"""Runtime, plugins and devices."""

import ctypes
import threading
from dataclasses import dataclass, field

from . import _lib
from ._types import DType, OP_NAMES, DL_CPU, DL_CUDA, DL_ROCM, DL_VULKAN
from .errors import XhalError, BusyError, call, check, error_for

_KINDS = {0: "cpu", 1: "gpu", 2: "other"}


def version():
    """The version of the loaded libxhal, (major, minor, patch)."""
    v = [ctypes.c_uint32() for _ in range(3)]
    call("xhal_version", *[ctypes.byref(x) for x in v])
    return tuple(x.value for x in v)


def init(device_selector=None, plugin_path=None, plugin_path_only=False):
    """Starts the runtime explicitly (xhal_runtime_init). Without it the
    runtime starts on first use, configured from XHAL_DEVICE and
    XHAL_PLUGIN_PATH. BusyError when it is already running."""
    o = _lib.RuntimeOptions()
    o.struct_size = ctypes.sizeof(o)
    o.device_selector = device_selector.encode() if device_selector is not None else None
    o.plugin_path = plugin_path.encode() if plugin_path is not None else None
    o.plugin_path_only = 1 if plugin_path_only else 0
    call("xhal_runtime_init", ctypes.byref(o))


def shutdown():
    """Unloads every plugin (xhal_runtime_shutdown); BusyError while a
    device is open."""
    call("xhal_runtime_shutdown")


def _s(b):
    return b.decode(errors="replace") if b is not None else None


@dataclass(frozen=True)
class PluginInfo:
    path: str
    backend: str
    state: str        # "loaded", "rejected", "skipped"
    reason: str
    abi: tuple
    plugin_version: str
    device_count: int


def plugins():
    """Every plugin file the runtime considered, in search order."""
    n = ctypes.c_uint32()
    call("xhal_plugin_count", ctypes.byref(n))
    out = []
    for i in range(n.value):
        p = _lib.PluginInfo()
        p.struct_size = ctypes.sizeof(p)
        call("xhal_plugin_get_info", i, ctypes.byref(p))
        out.append(PluginInfo(_s(p.path), _s(p.backend),
                              {0: "loaded", 1: "rejected", 2: "skipped"}.get(p.state, str(p.state)),
                              _s(p.reason), (p.abi_major, p.abi_minor),
                              _s(p.plugin_version), p.device_count))
    return out


@dataclass(frozen=True, repr=False)
class DeviceInfo:
    """xhal_device_info_t, with op and dtype masks decoded to names."""
    index: int               # position in xhal.devices() (None for a query)
    backend: str
    backend_index: int
    name: str
    stable_id: str
    kind: str                # "cpu", "gpu", "other"
    memory_bytes: int
    supported_ops: frozenset = field(default_factory=frozenset)
    op_dtypes: dict = field(default_factory=dict)   # op name -> frozenset of DType

    @property
    def selector(self):
        """"backend:index", e.g. "cuda:0"; opens this device."""
        return f"{self.backend}:{self.backend_index}"

    def __repr__(self):
        at = f"#{self.index} " if self.index is not None else ""
        return (f"<xhal.DeviceInfo {at}{self.selector} {self.name!r} ({self.kind}, "
                f"{len(self.supported_ops)} ops, {self.memory_bytes >> 20} MiB)>")


def _info(c, index):
    ops = frozenset(n for i, n in enumerate(OP_NAMES) if c.supported_ops >> i & 1)
    dts = {n: frozenset(d for d in DType if d and c.op_dtypes[i] >> int(d) & 1)
           for i, n in enumerate(OP_NAMES)}
    return DeviceInfo(index, _s(c.backend), c.backend_index, _s(c.name),
                      _s(c.stable_id), _KINDS.get(c.kind, str(c.kind)),
                      c.memory_bytes, ops, dts)


def devices():
    """The devices of the loaded plugins, in selector order (XHAL_DEVICE),
    best first and CPU last without one."""
    n = ctypes.c_uint32()
    call("xhal_device_count", ctypes.byref(n))
    out = []
    for i in range(n.value):
        c = _lib.DeviceInfo()
        c.struct_size = ctypes.sizeof(c)
        call("xhal_device_get_info", i, ctypes.byref(c))
        out.append(_info(c, i))
    return out


class Device:
    """An open xhal device: Device() opens the default one (honouring
    XHAL_DEVICE), Device("cuda:0") by selector, Device(2) by index in
    xhal.devices(). Device("cuda:0", native_queue=s) opens it with the
    caller's stream as its queue (xhal_device_open_on_native_queue): s is a
    cudaStream_t as an int, or an object with a `cuda_stream` attribute
    (torch.cuda.Stream); 0 is the legacy default stream (and the only value
    the cpu device takes).

    Every open is matched by one release: close() (or leaving a `with`
    block, or garbage collection) gives it back. Buffers, plans and matrices
    keep their device alive: a device closed while they live is released by
    libxhal when the last of them goes (xhal_device_release would otherwise
    be XHAL_BUSY)."""

    def __init__(self, selector=None, native_queue=None):
        h = ctypes.c_void_p()
        if native_queue is not None:
            if isinstance(selector, int) and not isinstance(selector, bool):
                raise TypeError("xhal: native_queue needs a selector string, not an index")
            q = int(getattr(native_queue, "cuda_stream", native_queue))
            sel = selector.encode() if selector is not None else None
            call("xhal_device_open_on_native_queue", sel, ctypes.c_void_p(q or None),
                 ctypes.byref(h))
        elif isinstance(selector, int) and not isinstance(selector, bool):
            call("xhal_device_open_index", selector, ctypes.byref(h))
        else:
            sel = selector.encode() if selector is not None else None
            call("xhal_device_open", sel, ctypes.byref(h))
        self._handle = h.value
        self._lock = threading.Lock()
        self._children = 0
        self._close_requested = False
        c = _lib.DeviceInfo()
        c.struct_size = ctypes.sizeof(c)
        call("xhal_device_query", self._handle, ctypes.byref(c))
        self.info = _info(c, None)

    # -- lifetime --------------------------------------------------------
    @property
    def handle(self):
        """The raw xhal_device_t (an int); raises once the device is closed."""
        if self._handle is None or self._close_requested:
            raise ValueError("xhal: the device is closed")
        return self._handle

    @property
    def closed(self):
        return self._close_requested

    def _retain(self):
        with self._lock:
            if self._close_requested:
                raise ValueError("xhal: the device is closed")
            self._children += 1

    def _drop(self):
        with self._lock:
            self._children -= 1
            release = self._close_requested and self._children == 0
        if release:
            self._release(raise_errors=False)

    def _release(self, raise_errors):
        h = self._handle
        if h is None:
            return
        status = _lib.fn["xhal_device_release"](h)
        if status == 0:
            self._handle = None
        elif raise_errors:
            raise error_for(status, "xhal_device_release")
        # XHAL_BUSY here means a DLPack export of one of its buffers is still
        # held by a consumer: the device stays open (libxhal keeps it).

    def close(self):
        """Gives this open back. Deferred while buffers, plans or matrices of
        the device live; BusyError if the device cannot close because DLPack
        exports of it are still alive."""
        with self._lock:
            if self._close_requested:
                return
            self._close_requested = True
            now = self._children == 0
        if now:
            self._release(raise_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.close()
        except BusyError:
            if exc[0] is None:
                raise

    def __del__(self):
        try:
            if self._handle is not None and self._children == 0:
                self._close_requested = True
                self._release(raise_errors=False)
        except Exception:
            pass

    # -- queries ---------------------------------------------------------
    @property
    def backend(self):
        return self.info.backend

    @property
    def name(self):
        return self.info.name

    @property
    def selector(self):
        return self.info.selector

    def __repr__(self):
        state = " closed" if self.closed else ""
        return f"<xhal.Device {self.selector} {self.name!r}{state}>"

    def synchronize(self):
        """Waits for every queued call (xhal_device_synchronize)."""
        call("xhal_device_synchronize", self.handle)

    def counters(self):
        """The device's transfer and launch counters as a dict."""
        c = _lib.Counters()
        call("xhal_device_get_counters", self.handle, ctypes.byref(c))
        return {n: getattr(c, n) for n, _ in c._fields_}

    def options(self):
        """The options in force, "name=value,..." (xhal_device_get_options)."""
        n = ctypes.c_size_t()
        call("xhal_device_get_options", self.handle, None, 0, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value + 1)
        call("xhal_device_get_options", self.handle, buf, n.value + 1, None)
        return buf.value.decode()

    # -- interop ---------------------------------------------------------
    @property
    def native_queue(self):
        """The cudaStream_t / hipStream_t xhal queues on, as an int (0 for
        the legacy default stream); None on the cpu device."""
        q = ctypes.c_void_p()
        call("xhal_device_get_native_queue", self.handle, ctypes.byref(q))
        if self.dlpack_device_type == DL_CPU:
            return None
        return q.value or 0

    def signal_external_queue(self, queue):
        """Makes `queue` (a stream pointer as an int; None or 0: the legacy
        default stream) wait for the work queued on this device so far."""
        call("xhal_device_signal_external_queue", self.handle, queue or None)

    def wait_external_queue(self, queue):
        """Makes this device's queue wait for the work queued on `queue`."""
        call("xhal_device_wait_external_queue", self.handle, queue or None)

    @property
    def dlpack_device_type(self):
        """The DLPack device type of the device's memory (1 cpu, 2 cuda,
        10 rocm, 7 vulkan; -1 for another backend)."""
        try:
            return self._dl_type
        except AttributeError:
            self._dl_type = {"cpu": DL_CPU, "cuda": DL_CUDA, "rocm": DL_ROCM,
                             "vulkan": DL_VULKAN}.get(
                self.backend, DL_CPU if self.info.kind == "cpu" else -1)
            return self._dl_type


_default = {}
_default_lock = threading.Lock()


def default_device(selector=None):
    """A process-wide Device for `selector` (None: the default device,
    honouring XHAL_DEVICE), opened on first use and kept open."""
    with _default_lock:
        d = _default.get(selector)
        if d is None or d.closed:
            d = _default[selector] = Device(selector)
        return d


def _dlpack_selector(device_type, device_id):
    """The xhal selector for a DLPack device."""
    if device_type == DL_CPU:
        return "cpu"
    if device_type == DL_CUDA:
        return f"cuda:{device_id}"
    if device_type == DL_ROCM:
        return f"rocm:{device_id}"
    raise BufferError(f"xhal: no xhal backend for DLPack device type {device_type}")
