"""PyTorch on the cpu device, where torch is installed (Debian's
python3-torch here by hand; not a dependency: skipped without it). Zero copy
both ways with torch CPU tensors, and the GNN of gpu/torch_h200.py run on
cpu: reruns are bit-identical and the values match the same model in plain
torch within tolerances, which checks the autograd Functions' forward and
backward that the H200 test compares across devices."""

import os
import sys

import numpy as np
import pytest

import xhal

from conftest import dlpack_required

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "gpu"))


@pytest.fixture(autouse=True)
def _need_dlpack():
    dlpack_required()


def native_ptr(t):
    return t.buffer.native().pointer + t.offset


def test_torch_from_xhal_is_zero_copy(dev):
    t = xhal.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), device=dev)
    g = torch.from_dlpack(t)
    assert g.data_ptr() == native_ptr(t)
    g[1, 1] = 40.0                          # torch writes, xhal reads
    assert t.numpy()[1, 1] == 40.0


def test_xhal_from_torch_is_zero_copy(dev):
    g = torch.zeros(3, 4)
    t = xhal.from_dlpack(g, device=dev)
    assert native_ptr(t) == g.data_ptr()
    plan = xhal.IndexPlan(dev, [0, 0, 1], 2)
    xhal.index_add(dev, plan, 1.0, xhal.asarray(np.ones((3, 4), np.float32), device=dev),
                   xhal.from_dlpack(g[:2], device=dev))
    assert g[0].tolist() == [2.0] * 4 and g[1].tolist() == [1.0] * 4   # torch sees xhal's writes


def test_gnn_on_cpu():
    import torch_h200
    losses, weights = torch_h200.gnn_run("cpu", steps=4, nodes=300, edges=2000, width=8)
    again, weights2 = torch_h200.gnn_run("cpu", steps=4, nodes=300, edges=2000, width=8)
    assert losses == again and weights == weights2          # bit-identical reruns
    ref, ref_w = torch_h200.gnn_run("cpu", steps=4, nodes=300, edges=2000, width=8, reference=True)
    f = lambda b: np.frombuffer(b"".join(b), dtype="<f4")    # noqa: E731
    np.testing.assert_allclose(f(losses), f(ref), rtol=1e-4)
    np.testing.assert_allclose(np.frombuffer(weights, np.float32),
                               np.frombuffer(ref_w, np.float32), rtol=1e-4)
    assert len(set(losses)) > 1


def test_index_plan_from_a_torch_index_tensor(dev):
    if not xhal.has_symbol("xhal_index_plan_create_from_tensor"):
        pytest.skip(f"{xhal.library_path} has no xhal_index_plan_create_from_tensor yet")
    idx = torch.tensor([2, 0, 1, 2])
    plan = xhal.IndexPlan(dev, xhal.from_dlpack(idx, device=dev), num_rows=3)
    src = torch.arange(6, dtype=torch.float32).reshape(3, 2)
    out = xhal.index_select(dev, plan, xhal.from_dlpack(src, device=dev))
    assert torch.equal(torch.from_dlpack(out), src[idx])
