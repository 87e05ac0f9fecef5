import os
import subprocess
import sys

import pytest

import xhal

HERE = os.path.dirname(os.path.abspath(__file__))


def test_version_and_library():
    major, minor, patch = xhal.version()
    assert (major, minor) == (0, 1)
    assert os.path.exists(xhal.library_path) or "libxhal" in xhal.library_path


def test_devices_lists_cpu():
    infos = xhal.devices()
    assert infos, "no device"
    cpu = [d for d in infos if d.backend == "cpu"]
    assert cpu and cpu[0].kind == "cpu" and cpu[0].selector == "cpu:0"
    assert "index_select" in cpu[0].supported_ops
    assert xhal.float32 in cpu[0].op_dtypes["softmax_forward"]
    assert [d.index for d in infos] == list(range(len(infos)))


def test_plugins_listed():
    ps = xhal.plugins()
    assert any(p.backend == "cpu" and p.state == "loaded" for p in ps)


def test_device_open_close_context_manager():
    with xhal.Device("cpu") as d:
        assert d.backend == "cpu" and not d.closed
        d.synchronize()
        c = d.counters()
        assert set(c) >= {"host_to_device_transfers", "kernel_launches"}
        assert isinstance(d.options(), str)
    assert d.closed
    with pytest.raises(ValueError):
        d.synchronize()


def test_device_by_index():
    d = xhal.Device(len(xhal.devices()) - 1)   # CPU is last
    assert d.backend == "cpu"
    d.close()


def test_close_is_deferred_while_buffers_live():
    d = xhal.Device("cpu")
    t = xhal.zeros((4,), device=d)
    d.close()                    # deferred: t's buffer still lives
    assert d.closed and d._handle is not None
    assert (t.numpy() == 0).all()
    del t
    import gc
    gc.collect()
    assert d._handle is None     # released with the last buffer


def _run(code, **env):
    e = dict(os.environ)
    e.update(env)
    e["PYTHONPATH"] = os.path.join(HERE, "..") + os.pathsep + e.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], env=e,
                          capture_output=True, text=True, timeout=120)


def test_xhal_device_is_honoured():
    r = _run("import xhal; print(xhal.Device().selector)", XHAL_DEVICE="cpu")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "cpu:0"
    r = _run("import xhal\n"
             "try:\n    xhal.Device()\n"
             "except xhal.NotFoundError as e:\n    print('notfound', e.status_name, e.message)\n",
             XHAL_DEVICE="nosuch")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("notfound XHAL_NOT_FOUND") and "nosuch" in r.stdout


def test_malformed_selector_is_invalid_argument():
    r = _run("import xhal\n"
             "try:\n    xhal.Device('cuda,,')\n"
             "except xhal.InvalidArgumentError as e:\n    print('invalid', e.message)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("invalid") and "cuda,," in r.stdout


def test_library_from_xhal_library_env():
    r = _run("import xhal; print(xhal.library_path)", XHAL_LIBRARY=xhal.library_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == xhal.library_path
    r = _run("import xhal", XHAL_LIBRARY="/nonexistent/libxhal.so")
    assert r.returncode != 0 and "XHAL_LIBRARY" in r.stderr


def test_init_and_shutdown():
    r = _run("import xhal\n"
             "xhal.init(device_selector='cpu')\n"
             "print([d.selector for d in xhal.devices()])\n"
             "try:\n    xhal.init()\nexcept xhal.BusyError:\n    print('busy init')\n"
             "d = xhal.Device()\n"
             "try:\n    xhal.shutdown()\nexcept xhal.BusyError as e:\n    print('busy shutdown', 'cpu' in e.message)\n"
             "d.close()\n"
             "xhal.shutdown()\n"
             "print('down')\n"
             "xhal.init(device_selector='nosuch')\n"
             "try:\n    xhal.Device()\nexcept xhal.NotFoundError:\n    print('none after restart')\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:5] == ["['cpu:0']", "busy init", "busy shutdown True", "down",
                                         "none after restart"]


def test_device_on_the_null_queue_is_the_cpu_device():
    # The cpu device has no queue: native_queue=0 opens it as a plain open
    # (the same device); any other queue is refused naming the argument.
    with xhal.Device("cpu") as d:
        with xhal.Device("cpu", native_queue=0) as same:
            assert same.handle == d.handle
    with pytest.raises(xhal.XhalError) as e:
        xhal.Device("cpu", native_queue=0x1234)
    assert "native_queue" in str(e.value)
