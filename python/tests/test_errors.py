"""Every non-OK status raises the XhalError subclass, with xhal's message
naming the argument."""

import numpy as np
import pytest

import xhal


def test_hierarchy_and_attributes(dev):
    b = xhal.Buffer(dev, 64)
    with pytest.raises(xhal.OutOfRangeError) as ei:
        b.write(np.zeros(8, dtype=np.uint8), offset=60)
    e = ei.value
    assert isinstance(e, xhal.XhalError)
    assert e.status == 2 and e.status_name == "XHAL_OUT_OF_RANGE"
    assert e.function == "xhal_buffer_write"
    assert "dst" in e.message and "60" in e.message
    assert "XHAL_OUT_OF_RANGE" in str(e)
    # a call that succeeds clears the message
    b.write(np.zeros(8, dtype=np.uint8))
    assert xhal.last_error() == ""
    b.release()


def test_status_names():
    assert xhal.status_name(0) == "XHAL_OK"
    assert xhal.status_name(10) == "XHAL_INVALID_STRUCTURE"
    assert xhal.status_name(999) == "XHAL_UNKNOWN_STATUS"


def test_fill_pattern_size_named(dev):
    b = xhal.Buffer(dev, 64)
    with pytest.raises(xhal.InvalidArgumentError, match="pattern_size"):
        b.fill(b"abc")
    b.release()


def test_released_buffer_named(dev):
    b = xhal.Buffer(dev, 16)
    h = b.handle
    b.release()
    b.release()                     # idempotent in Python
    with pytest.raises(xhal.InvalidArgumentError, match="buffer"):
        xhal.errors.call("xhal_buffer_release", h)   # released twice in C


def test_index_plan_out_of_range_names_position_and_value(dev):
    with pytest.raises(xhal.OutOfRangeError) as ei:
        xhal.IndexPlan(dev, [0, 1, 7, 2], num_rows=5)
    assert "7" in ei.value.message and "2" in ei.value.message


def test_index_plan_bad_dtype_named(dev):
    with pytest.raises(xhal.InvalidArgumentError, match="index_dtype"):
        xhal.IndexPlan(dev, np.array([0.0, 1.0], dtype=np.float32), num_rows=5)


def test_shape_mismatch_named(dev):
    x = xhal.zeros((3, 4), device=dev)
    y = xhal.zeros((3, 5), device=dev)
    with pytest.raises(xhal.ShapeMismatchError, match="y"):
        xhal.softmax_forward(dev, x, y)


def test_dtype_not_allowed_named(dev):
    x = xhal.zeros((3, 4), dtype=xhal.int32, device=dev)
    with pytest.raises(xhal.InvalidArgumentError, match="x"):
        xhal.softmax_forward(dev, x)


def test_aliasing(dev):
    src = xhal.zeros((4, 2), device=dev)
    plan = xhal.IndexPlan(dev, [0, 1, 2, 3], 4)
    with pytest.raises(xhal.AliasingError):
        xhal.index_select(dev, plan, src, src)


def test_bad_permutation_named(dev):
    x = xhal.zeros((2, 3), device=dev)
    with pytest.raises(xhal.InvalidArgumentError, match="perm"):
        xhal.permute(dev, x, [0, 0], xhal.zeros((2, 2), device=dev))


def test_bad_enum_named(dev):
    a = xhal.CsrMatrix.from_dense(dev, np.eye(3))
    x = xhal.zeros((3,), device=dev)
    with pytest.raises(xhal.InvalidArgumentError, match="trans"):
        xhal.spmv(dev, a, 7, 1.0, x, 0.0, xhal.zeros((3,), device=dev))


def test_malformed_csr_names_row(dev):
    with pytest.raises(xhal.InvalidStructureError, match="row"):
        xhal.CsrMatrix(dev, [0, 2, 1], [0, 1], [1.0, 2.0], shape=(2, 2))


def test_solve_missing_diagonal(dev):
    a = xhal.CsrMatrix(dev, [0, 1, 2], [0, 0], [1.0, 2.0], shape=(2, 2))
    b = xhal.asarray(np.ones(2, dtype=np.float32), device=dev)
    with pytest.raises(xhal.InvalidStructureError, match="row 1"):
        xhal.csr_solve(dev, a, "N", "lower", "stored", b)


def test_handle_of_another_kind_named(dev):
    x = xhal.zeros((2, 2), device=dev)
    a = xhal.CsrMatrix.from_dense(dev, np.eye(2))
    with pytest.raises(xhal.InvalidArgumentError, match="plan"):
        xhal.index_select(dev, a, x, xhal.zeros((1, 2), device=dev))


def test_python_type_errors(dev):
    with pytest.raises(TypeError, match="src"):
        xhal.index_select(dev, xhal.IndexPlan(dev, [0], 1), np.zeros((1, 2), np.float32),
                          xhal.zeros((1, 2), device=dev))
    with pytest.raises(TypeError):
        xhal.asarray(np.zeros(3, dtype=np.complex64), device=dev)
