"""xhal statuses as Python exceptions.

Every call into libxhal that returns a status other than XHAL_OK raises the
subclass of :class:`XhalError` for that status, carrying the status, its
stable name and the text of ``xhal_last_error()`` (which names the argument
and the value that were wrong).
"""

from . import _lib

OK = 0


class XhalError(Exception):
    """A non-OK xhal status. Attributes: status (int), status_name
    ("XHAL_OUT_OF_RANGE"), message (xhal_last_error() of the failed call),
    function (the C function that failed)."""

    status = None

    def __init__(self, status, message, function=None):
        self.status = int(status)
        self.status_name = status_name(status)
        self.message = message
        self.function = function
        where = f"{function}: " if function else ""
        super().__init__(f"{where}{self.status_name}: {message}")


class InvalidArgumentError(XhalError):
    status = 1


class OutOfRangeError(XhalError):
    status = 2


class ShapeMismatchError(XhalError):
    status = 3


class UnsupportedError(XhalError):
    status = 4


class OutOfMemoryError(XhalError, MemoryError):
    status = 5


class NotFoundError(XhalError):
    status = 6


class DeviceLostError(XhalError):
    status = 7


class PluginError(XhalError):
    status = 8


class AliasingError(XhalError):
    status = 9


class InvalidStructureError(XhalError):
    status = 10


class WrongDeviceError(XhalError):
    status = 11


class BusyError(XhalError):
    status = 12


class InternalError(XhalError):
    status = 13


_BY_STATUS = {cls.status: cls for cls in (
    InvalidArgumentError, OutOfRangeError, ShapeMismatchError,
    UnsupportedError, OutOfMemoryError, NotFoundError, DeviceLostError,
    PluginError, AliasingError, InvalidStructureError, WrongDeviceError,
    BusyError, InternalError)}


def status_name(status):
    """The stable name of a status value ("XHAL_OUT_OF_RANGE")."""
    return _lib.fn["xhal_status_name"](int(status)).decode()


def last_error():
    """xhal_last_error() of this thread: "" after a call that succeeded."""
    return _lib.fn["xhal_last_error"]().decode(errors="replace")


def error_for(status, function=None):
    """The exception for a non-OK status, with this thread's last error."""
    cls = _BY_STATUS.get(int(status), XhalError)
    return cls(status, last_error(), function)


def check(status, function=None):
    """Raises the XhalError subclass of `status` unless it is XHAL_OK."""
    if status != OK:
        raise error_for(status, function)


def call(name, *args):
    """Calls the C function `name` and raises on a non-OK status."""
    f = _lib.fn[name]
    if f is None:
        raise NotImplementedError(
            f"{name} is not exported by {_lib.path} (an older libxhal)")
    status = f(*args)
    if status != OK:
        raise error_for(status, name)
