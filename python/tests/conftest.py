"""pytest set-up for the xhal Python tests (cpu device, NumPy references).

Run from the repository root after a build:

    XHAL_LIBRARY=build/lib/libxhal.so PYTHONPATH=python python3 -m pytest python/tests

(CTest's `python` test sets these.) gpu/ holds the H200 scripts, which are
not collected here.
"""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import xhal  # noqa: E402

collect_ignore = ["gpu"]


@pytest.fixture(scope="session")
def dev():
    d = xhal.Device("cpu")
    yield d


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def dlpack_required():
    """Skips a test when the loaded libxhal lacks the DLPack calls."""
    if not xhal.dlpack_available():
        pytest.skip(f"{xhal.library_path} does not export the DLPack calls of "
                    "xhal/interop.h (xhal_tensor_export_dlpack, ...) yet")


def symbol_required(name):
    if not xhal.has_symbol(name):
        pytest.skip(f"{xhal.library_path} does not export {name} yet")
