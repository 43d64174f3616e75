"""Time to the first step (issue 19) as behaviour, not seconds: which modules a first op,
a first training step and ``Device.default()`` import. Seconds are measured by
benchmarks/bench_startup.py; a test that timed them would fail on a busy machine."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

# what a flex user must not pay for at start-up (scipy.signal alone was 1.1 s)
HEAVY = ("scipy.signal", "scipy.stats", "scipy.fft", "scipy.linalg", "scipy.interpolate", "pyopencl", "cupy",
         "burn_signal._flex", "burn_signal._wgpu", "burn_signal._cuda", "burn_linalg._flex", "burn_linalg._wgpu",
         "burn_linalg._cuda", "burn_wgpu.kernels", "burn_cuda.kernels", "torch")


def imported_after(code: str, env=None) -> list:
    """The HEAVY modules in sys.modules after running ``code`` in a fresh interpreter."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("BURN_")}
    e.update(env or {})
    probe = textwrap.dedent(code) + textwrap.dedent(f"""
        import json, sys
        print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
    """)
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=e)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_first_flex_op_imports_no_kernel_library_scipy_opencl_or_cupy():
    assert imported_after("import burn; burn.ones((2,), device=burn.Device.flex()).numpy()") == []


def test_a_first_training_step_on_flex_imports_none_of_them_either():
    code = """
        import numpy as np, burn
        from burn import nn, optim
        import burn.nn.functional as F
        dev = burn.Device.flex().autodiff()
        x = burn.tensor(np.ones((8, 4), np.float32), device=dev)
        y = burn.tensor(np.arange(8) % 3, device=dev)
        model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
        model.to_device(dev)
        opt = optim.Adam(model.parameters(), lr=1e-3)
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        assert np.isfinite(loss.item())
    """
    assert imported_after(code) == []


def test_touching_a_namespace_imports_its_package_and_a_kernel_its_module():
    got = imported_after("""
        import burn
        assert burn.linalg.det(burn.tensor([[2.0, 0.0], [0.0, 3.0]])).item() == 6.0
    """)
    assert "burn_linalg._flex" in got and "burn_signal._flex" not in got and "pyopencl" not in got, got


def test_default_device_does_not_start_opencl_without_a_gpu_driver():
    import burn_wgpu
    if burn_wgpu.may_have_gpu():
        pytest.skip("an OpenCL GPU driver's ICD is installed here: default() rightly asks OpenCL")
    got = imported_after("import burn; d = burn.Device.default(); assert d.kind == 'flex', d")
    assert "pyopencl" not in got and "cupy" not in got, got


def test_wgpu_probe_reads_the_icd_files_the_opencl_loader_reads(tmp_path, monkeypatch):
    import burn_wgpu
    if not sys.platform.startswith("linux"):
        pytest.skip("the ICD registry is read only on Linux")
    (tmp_path / "pocl.icd").write_text("libpocl.so.2\n")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
    no_system_gpu = not burn_wgpu.may_have_gpu()
    (tmp_path / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    assert burn_wgpu.may_have_gpu() is True
    if no_system_gpu:        # PoCL (CPU only) alone is no accelerator
        (tmp_path / "nvidia.icd").unlink()
        assert burn_wgpu.may_have_gpu() is False


def test_lazy_kernel_tables_name_exactly_what_each_backend_module_provides():
    """The op lists read at discovery (no import) must match the kernel modules: a missing
    name would be a kernel that never runs, an extra one an error at first use."""
    import burn
    from burn.dispatch import LazyKernel, registry
    burn.plugins.ensure_loaded()
    for backend, modules in (("wgpu", ("burn_wgpu.kernels",)), ("cuda", ("burn_cuda.kernels",))):
        if backend not in registry.backends:
            continue
        entries = [e for (op, b), es in registry.kernels.items() if b == backend for e in es
                   if e.plugin == backend]
        declared = {e.op for e in entries}
        tables = set()
        import importlib
        for m in modules:
            mod = importlib.import_module(m)
            tables |= set(mod.all_kernels())
            if hasattr(mod, "extension_kernels"):
                tables |= set(mod.extension_kernels())
        assert declared == tables, (backend, sorted(declared ^ tables))
        for e in entries:
            e.resolve()
            assert callable(e.fn) and not isinstance(e.fn, LazyKernel)
    import burn_linalg, burn_signal
    from burn_linalg import plugin as lp
    from burn_signal import plugin as sp
    assert set(lp.OPS) == set(burn_linalg.ops) and set(sp.OPS) == set(burn_signal.ops)


def test_a_kernel_module_that_fails_to_import_is_an_error_at_first_use_naming_the_plugin():
    import burn
    from burn.dispatch import LazyKernel, Registry
    from burn.errors import PluginError
    r = Registry()
    r.register_kernel("doc::gone", "flex", LazyKernel("no_such_kernel_module_xyz", "gone"), plugin="ghost")
    with pytest.raises(PluginError, match=r"op 'doc::gone' on backend 'flex' \(plugin 'ghost'.*failed to load"):
        r.kernel("doc::gone", "flex")
