#!/usr/bin/env python3
"""Device options through the public C API (docs/device-options.md) on the
device XHAL_DEVICE selects (cuda): the options in force with none set, one
set through XHAL_DEVICE_OPTIONS and read back by xhal_device_get_options,
and a malformed one that must fail the open with XHAL_INVALID_ARGUMENT and
a message naming it. Prints what it saw; exit status 1 on any mismatch.

Usage: XHAL_DEVICE=cuda python3 bench/gpu/options_check.py BUILD_DIR
"""
import ctypes
import os
import sys

DEFAULTS = ("solve.schedule=syncfree,solve.block_threads=128,solve.blocks_per_sm=auto,"
            "solve.poll=auto,solve.poll_terms=auto,solve.sleep_ns=0,"
            "norm_backward.fused_from_rows=4096,rows.resident=1,sparse_index=auto,"
            "spmv.combine=fused,spmv.short_rows=auto,trace=0")


def main():
    lib = ctypes.CDLL(os.path.join(sys.argv[1], "lib", "libxhal.so"))
    lib.xhal_device_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.xhal_device_release.argtypes = [ctypes.c_void_p]
    lib.xhal_device_get_options.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                            ctypes.POINTER(ctypes.c_size_t)]
    lib.xhal_last_error.restype = ctypes.c_char_p
    lib.xhal_status_name.restype = ctypes.c_char_p
    bad = []

    def open_with(options):
        if options is None:
            os.environ.pop("XHAL_DEVICE_OPTIONS", None)
        else:
            os.environ["XHAL_DEVICE_OPTIONS"] = options
        dev = ctypes.c_void_p()
        st = lib.xhal_device_open(None, ctypes.byref(dev))
        return st, dev

    def options_of(dev):
        buf = ctypes.create_string_buffer(4096)
        n = ctypes.c_size_t()
        st = lib.xhal_device_get_options(dev, buf, len(buf), ctypes.byref(n))
        return st, buf.value.decode()

    def expect(what, ok, seen):
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {seen}")
        if not ok:
            bad.append(what)

    st, dev = open_with(None)
    expect("open without options", st == 0, lib.xhal_status_name(st).decode())
    if st == 0:
        st, text = options_of(dev)
        expect("defaults in force", st == 0 and text == DEFAULTS, text)
        lib.xhal_device_release(dev)

    st, dev = open_with("cuda:solve.poll=lanes,cuda:trace=1,cpu:unrelated=1")
    expect("open with cuda:solve.poll=lanes,cuda:trace=1", st == 0,
           lib.xhal_status_name(st).decode() + (" " + lib.xhal_last_error().decode() if st else ""))
    if st == 0:
        st, text = options_of(dev)
        expect("options read back", "solve.poll=lanes" in text and "trace=1" in text and
               "solve.poll_terms=auto" in text, text)
        lib.xhal_device_release(dev)

    st, dev = open_with("cuda:solve.poll=sideways")
    msg = lib.xhal_last_error().decode() if st else ""
    expect("malformed value refused", st == 1 and "solve.poll=sideways" in msg and
           "known options" in msg, f"{lib.xhal_status_name(st).decode()}: {msg}")
    if st == 0:
        lib.xhal_device_release(dev)

    st, dev = open_with("cuda:solve.pol=lanes")
    msg = lib.xhal_last_error().decode() if st else ""
    expect("unknown name refused", st == 1 and "unknown name 'solve.pol'" in msg,
           f"{lib.xhal_status_name(st).decode()}: {msg}")
    if st == 0:
        lib.xhal_device_release(dev)

    print("options_check:", "PASS" if not bad else "FAIL: " + ", ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
