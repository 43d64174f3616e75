"""Fixtures shared by the cross-package tests: the flex device, its autodiff
twin, a seeded random generator, and a torch-comparison helper."""
import zlib

import numpy as np
import pytest

import burn

# scripts that tests launch under mpirun (2 ranks), not modules to import or doctest here
collect_ignore = ["dist_workers"]


@pytest.fixture
def dev():
    return burn.Device.flex()


@pytest.fixture
def ad():
    return burn.Device.flex().autodiff()


@pytest.fixture
def rng(request):
    # stable per test, so a failure reproduces with the same numbers
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def grads_vs_torch():
    """``run(burn_fn, torch_fn, *arrays)``: compare value and gradients (float64) of a
    scalar-valued function of the arrays, computed by burn and by torch."""
    torch = pytest.importorskip("torch")

    def run(burn_fn, torch_fn, *arrays, atol=1e-10, rtol=1e-8, const=()):
        adev = burn.Device.flex().autodiff()
        bs, ts = [], []
        for i, a in enumerate(arrays):
            a = np.asarray(a)
            if i in const or a.dtype.kind != "f":
                bs.append(burn.tensor(a, device=adev, dtype=None if a.dtype.kind != "f" else burn.float64))
                ts.append(torch.tensor(a))
            else:
                bs.append(burn.tensor(a, dtype=burn.float64, device=adev).require_grad())
                ts.append(torch.tensor(a, dtype=torch.float64, requires_grad=True))
        out_b = burn_fn(*bs)
        out_t = torch_fn(*ts)
        np.testing.assert_allclose(out_b.numpy(), out_t.detach().numpy(), atol=atol, rtol=rtol)
        grads = out_b.sum().backward()
        out_t.sum().backward()
        for i, (b, t) in enumerate(zip(bs, ts)):
            if t.requires_grad:
                gb = b.grad(grads)
                gt = t.grad
                assert (gb is None) == (gt is None), f"input {i}: burn grad {gb}, torch grad {gt}"
                if gb is not None:
                    np.testing.assert_allclose(gb.numpy(), gt.numpy(), atol=atol, rtol=rtol,
                                               err_msg=f"gradient of input {i}")
        return out_b
    return run


@pytest.fixture(scope="module")
def wg():
    """``(Device.wgpu(), its OpenCL context)``, or skip when no OpenCL device is usable."""
    try:
        dev = burn.Device.wgpu()
        dev.backend
        from burn_wgpu import runtime
        return dev, runtime.context(0)
    except Exception as e:  # no pyopencl / no OpenCL device
        pytest.skip(f"no usable wgpu (OpenCL) device: {e}")


def pytest_report_header(config):
    # cross-backend tests leave wgpu out where its OpenCL compiler does not work: say so up front
    from devices import wgpu_status
    reason = wgpu_status()
    return "wgpu: " + ("runs the cross-backend tests" if reason is None else f"absent ({reason[:300]})")


@pytest.fixture(autouse=True)
def _flex_chunks_at_kernel_size(monkeypatch):
    # flex's pool splits only large inputs by default (burn_flex.threads.CHUNK_SCALE); the suite
    # runs at the kernels' own chunk sizes, so its small inputs take the parallel paths too
    try:
        from burn_flex import threads
    except ImportError:
        return
    monkeypatch.setattr(threads, "CHUNK_SCALE", 1)
