"""The Python examples of docs/python.md and README.md run as written (on
the cpu device: XHAL_DEVICE=cpu here). Blocks that need PyTorch, CuPy or
JAX are left out."""

import os
import re

import pytest

import xhal

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _blocks(path, pattern):
    with open(os.path.join(ROOT, path)) as f:
        return re.findall(pattern, f.read(), flags=re.S)


def _run(code):
    code = code.replace("xhal.Device()", "xhal.Device('cpu')")
    exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_example__"})


def test_python_md_examples():
    blocks = [b for b in _blocks("docs/python.md", r"```python\n(.*?)```")
              if not re.search(r"\b(torch|cupy|jax)\b", b)]
    assert len(blocks) >= 2
    # the error example uses `dev` from the first one: run them as one script
    _run("\n".join(blocks))


def test_readme_example():
    blocks = _blocks("README.md", r"\n\n((?:    [^\n]*\n)+)")
    py = [b for b in blocks if "import numpy as np, xhal" in b]
    if not xhal.dlpack_available():
        pytest.skip(f"{xhal.library_path} has no DLPack calls (np.from_dlpack in the example)")
    assert len(py) == 1
    _run("\n".join(line[4:] for line in py[0].splitlines()))
