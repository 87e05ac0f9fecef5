"""The ctypes structs of python/xhal/_lib.py against the C headers: sizes
and field offsets printed by a C program compiled here (skipped without a
C compiler or without hal/include beside the package)."""

import ctypes
import os
import shutil
import subprocess

import pytest

from xhal import _lib

INCLUDE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "hal", "include"))

STRUCTS = {
    "xhal_device_info_t": _lib.DeviceInfo,
    "xhal_plugin_info_t": _lib.PluginInfo,
    "xhal_runtime_options_t": _lib.RuntimeOptions,
    "xhal_counters_t": _lib.Counters,
    "xhal_tensor_t": _lib.CTensor,
    "xhal_csr_desc_t": _lib.CsrDesc,
    "xhal_external_memory_t": _lib.ExternalMemory,
    "xhal_native_memory_t": _lib.NativeMemory,
    "xhal_dlpack_tensor_t": _lib.DLTensor,
    "xhal_dlpack_managed_tensor_t": _lib.DLManagedTensor,
    "xhal_dlpack_managed_tensor_versioned_t": _lib.DLManagedTensorVersioned,
}


def test_structs_match_the_headers(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc or not os.path.isdir(INCLUDE):
        pytest.skip("no C compiler or no hal/include")
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <xhal/xhal.h>",
             "int main(void) {"]
    for cname, cls in STRUCTS.items():
        lines.append(f'  printf("{cname} (sizeof) %zu\\n", sizeof({cname}));')
        for fname, _ in cls._fields_:
            lines.append(f'  printf("{cname} {fname} %zu\\n", offsetof({cname}, {fname}));')
    lines += ["  return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    r = subprocess.run([cc, "-std=c11", "-I", INCLUDE, str(src), "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr   # a field the header lacks fails here
    got = {}
    for line in subprocess.run([str(exe)], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        cname, field, value = line.split()
        got[(cname, field)] = int(value)
    for cname, cls in STRUCTS.items():
        assert got[(cname, "(sizeof)")] == ctypes.sizeof(cls), cname
        for fname, _ in cls._fields_:
            assert got[(cname, fname)] == getattr(cls, fname).offset, f"{cname}.{fname}"
