"""Fusion on wgpu: a fused element-wise group is ONE kernel launch (counted by the
backend), whatever its inputs' layouts; results match numpy; the generator is
backend-neutral (the CUDA dialect renders the same chain)."""
import numpy as np
import pytest

import burn


def _wgpu_or_skip():
    try:
        import pyopencl  # noqa: F401
        burn.Device.wgpu().backend
    except Exception as e:
        pytest.skip(f"no usable wgpu device: {e}")
    return burn.Device.wgpu()


def _launches(dev):
    return dev.backend.stats(dev.index)["launches"]


def _chain(x):
    # 8 element-wise ops, transcendental ones included
    return ((x * 0.5).exp().log1p().tanh() * 3.0 - 0.25).abs().sqrt()


def _chain_np(x):
    return np.sqrt(np.abs(np.tanh(np.log1p(np.exp(x * np.float32(0.5)))) * np.float32(3.0)
                          - np.float32(0.25)))


def test_large_eight_op_chain_is_one_launch():
    dev = _wgpu_or_skip()
    a = np.random.default_rng(0).standard_normal(1 << 17).astype(np.float32)
    x = burn.tensor(a, device=dev)
    dev.sync()
    before = _launches(dev)
    y = _chain(x)
    dev.sync()
    assert _launches(dev) - before == 1
    np.testing.assert_allclose(y.numpy(), _chain_np(a), rtol=2e-5, atol=2e-6)


def test_small_group_runs_op_by_op_once_then_fused():
    dev = _wgpu_or_skip()
    a = np.random.default_rng(1).standard_normal((7, 9)).astype(np.float32)
    counts = []
    for _ in range(3):
        x = burn.tensor(a, device=dev)
        dev.sync()
        before = _launches(dev)
        y = _chain(x)
        dev.sync()
        counts.append(_launches(dev) - before)
        np.testing.assert_allclose(y.numpy(), _chain_np(a), rtol=2e-5, atol=2e-6)
    assert counts == [8, 1, 1]


def test_fused_group_reads_transposed_and_broadcast_inputs():
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 400)).astype(np.float32)      # 120k elements: fused on the first call
    b = rng.standard_normal((400,)).astype(np.float32)
    x, bias = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
    xt = x.T                                                    # a strided view, no copy
    dev.sync()
    before = _launches(dev)
    y = ((xt.T + bias) * 2.0).relu() - bias
    dev.sync()
    assert _launches(dev) - before == 1
    np.testing.assert_allclose(y.numpy(), np.maximum((a + b) * 2, 0) - b, rtol=1e-6, atol=1e-6)


def test_matmul_epilogue_is_matmul_plus_one_kernel():
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 64)).astype(np.float32)
    w = rng.standard_normal((64, 300)).astype(np.float32)
    b = rng.standard_normal((300,)).astype(np.float32)
    x, wt, bt = (burn.tensor(v, device=dev) for v in (a, w, b))
    dev.sync()
    before = _launches(dev)
    (x @ wt).numpy()
    mm = _launches(dev) - before            # the matmul alone (a CPU device may pack B first)
    assert 1 <= mm <= 2
    dev.sync()
    before = _launches(dev)
    y = ((x @ wt) + bt).relu() * 0.5
    dev.sync()
    assert _launches(dev) - before == mm + 1
    np.testing.assert_allclose(y.numpy(), np.maximum(a @ w + b, 0) * 0.5, rtol=1e-4, atol=1e-4)


def test_codegen_renders_the_same_chain_for_opencl_and_cuda():
    from burn.codegen import CUDA, OPENCL, program_source, render_group
    ops = [("mul", {}, [("in", 0), ("in", 1)]), ("exp", {}, [("op", 0)]), ("clip", {"min": 0.0, "max": None},
                                                                             [("op", 1)])]
    for dialect, marker in ((OPENCL, "__kernel void"), (CUDA, '__global__ void')):
        k = render_group("chain", ops, ["float32", "float32"], [2], dialect)
        src = program_source([k], dialect)
        assert marker in src and "exp(" in src and k.param_dtypes == ("float32", "float32")


@pytest.mark.parametrize("n", [1, 7, 8, 9, 1000, 70_001])
def test_vector_variant_of_contiguous_float32_chains_matches_numpy(n):
    """CPU devices run contiguous float32 chains as float8 vectors (scalar loop for the tail):
    same values as numpy, NaN propagation of relu / maximum included."""
    dev = _wgpu_or_skip()
    from burn_wgpu import runtime
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    a[::5] = np.nan
    ta, tb = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
    dev.sync()
    dc = runtime.context(0)
    names = []
    orig = dc.launch

    def spy(kernel, n_items, args, local=None):
        names.append(kernel.function_name)
        return orig(kernel, n_items, args, local)
    dc.launch = spy
    try:
        for _ in range(2):                      # small groups are fused from their second call
            names.clear()
            y = (burn.maximum((ta * 0.5 + tb).relu(), tb.tanh()) + ta.exp().log1p()).sqrt()
            got = y.numpy()
    finally:
        del dc.launch
    h = a * 0.5 + b
    with np.errstate(invalid="ignore"):
        want = np.sqrt(np.maximum(np.where(np.isnan(h) | (h > 0), h, 0), np.tanh(b)) + np.log1p(np.exp(a)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if dc.is_cpu:
        assert names and all(nm.startswith("fused_v") for nm in names), names


def test_chains_outside_the_vector_subset_keep_the_scalar_kernel():
    from burn_wgpu.fused import vector_variant
    from burn.codegen import OPENCL, program_source, render_group
    ops = [("gt", {}, [("in", 0), ("in", 1)])]
    k = render_group("fused", ops, ["float32", "float32"], [0], OPENCL, patterns=(0,), general=False)
    assert vector_variant(program_source([k], OPENCL), "fused_c0", ops, ["float32"] * 2, ["bool"]) is None
    ops = [("exp", {}, [("in", 0)])]
    k = render_group("fused", ops, ["float64"], [0], OPENCL, patterns=(0,), general=False)
    assert vector_variant(program_source([k], OPENCL), "fused_c0", ops, ["float64"], ["float64"]) is None
    k = render_group("fused", ops, ["float32"], [0], OPENCL, patterns=(0,), general=False)
    src = vector_variant(program_source([k], OPENCL), "fused_c0", ops, ["float32"], ["float32"])
    assert "vload8" in src and "vstore8" in src and "__kernel void fused_v0(" in src
