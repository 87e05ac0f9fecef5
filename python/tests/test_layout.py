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


HANDLES = {"xhal_device_t", "xhal_buffer_t", "xhal_index_plan_t", "xhal_csr_t"}
INT_SIZES = {"uint32_t": 4, "int32_t": 4, "uint64_t": 8, "int64_t": 8, "size_t": 8, "float": 4}


def _prototypes():
    import re
    protos = {}
    for name in sorted(os.listdir(os.path.join(INCLUDE, "xhal"))):
        if not name.endswith(".h") or name == "xhal_plugin.h":
            continue
        text = open(os.path.join(INCLUDE, "xhal", name)).read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        for m in re.finditer(r"XHAL_API\s+([\w\s\*]+?)\s*\b(xhal_\w+)\s*\(([^;]*?)\)\s*;", text):
            params = " ".join(m.group(3).split())
            protos[m.group(2)] = [] if params in ("", "void") else [p.strip() for p in params.split(",")]
    return protos


def _kind(param):
    """("ptr", 8) for pointers and handles, ("float", 4), ("int", size)."""
    words = param.replace("*", " * ").split()
    if "*" in words:
        return ("ptr", 8)
    t = [w for w in words if w != "const"][0]
    if t in HANDLES:
        return ("ptr", 8)
    if t == "float":
        return ("float", 4)
    return ("int", INT_SIZES.get(t, 4))      # enums are int


def _ctypes_kind(ct):
    if ct in (ctypes.c_void_p, ctypes.c_char_p) or hasattr(ct, "_type_") and isinstance(ct._type_, type):
        return ("ptr", 8)
    if ct is ctypes.c_float:
        return ("float", 4)
    return ("int", ctypes.sizeof(ct))


def test_function_signatures_match_the_headers():
    if not os.path.isdir(INCLUDE):
        pytest.skip("no hal/include beside the package")
    protos = _prototypes()
    assert len(protos) > 50
    missing = sorted(set(protos) - set(_lib._SIGNATURES))
    assert not missing, f"not declared in _lib.py: {missing}"
    for name, params in protos.items():
        _, argtypes, _ = _lib._SIGNATURES[name]
        assert len(argtypes) == len(params), f"{name}: {len(argtypes)} argtypes, header {params}"
        for i, (p, ct) in enumerate(zip(params, argtypes)):
            assert _kind(p) == _ctypes_kind(ct), f"{name} argument {i} ({p}): {ct}"
