"""Devices are runtime values; unusable backends fail on use with a clear message."""
import pickle
import subprocess
import sys

import numpy as np
import pytest

import burn


def test_device_values_compare_and_hash_by_kind_index_and_autodiff():
    assert burn.Device("flex") == burn.Device.flex() == burn.Device("flex:0")
    assert burn.Device("cuda:1") == burn.Device.cuda(1)
    assert burn.Device("cuda:1") != burn.Device.cuda(0)
    ad = burn.Device.flex().autodiff()
    assert ad.is_autodiff and not burn.Device.flex().is_autodiff
    assert ad.inner() == burn.Device.flex() and ad != burn.Device.flex()
    assert len({burn.Device("flex"), burn.Device.flex(), ad, ad.inner().autodiff()}) == 2
    assert pickle.loads(pickle.dumps(ad)) == ad


@pytest.mark.parametrize("spec", ["", "flex:x", "cuda:-1"])
def test_bad_device_strings_raise_burn_error(spec):
    with pytest.raises(burn.BurnError):
        burn.Device(spec)


@pytest.mark.parametrize("kind,package", [("wgpu", "burn-wgpu"), ("cuda", "burn-cuda")])
def test_uninstalled_backend_is_a_value_until_used_then_names_the_package(kind, package):
    d = burn.Device(kind)          # a value: no error, nothing imported
    assert str(d) == f"{kind}:0"
    if kind in burn.dispatch.registry.backend_names():
        pytest.skip(f"{package} is installed here; tests/test_plugins.py hides it to check this message")
    with pytest.raises(burn.BackendUnavailable, match=f"pip install {package}"):
        burn.zeros((2,), device=d)
    with pytest.raises(burn.BackendUnavailable, match=package):
        d.sync()


def test_unknown_third_party_backend_points_at_burn_info():
    with pytest.raises(burn.BackendUnavailable, match="burn info"):
        burn.ones((1,), device=burn.Device("someaccel:0"))


def test_flex_index_out_of_range_is_unavailable():
    with pytest.raises(burn.BackendUnavailable, match="flex:3"):
        burn.ones((1,), device=burn.Device("flex:3"))


def test_default_and_enumerate():
    assert burn.Device.flex() in burn.Device.enumerate()
    d = burn.Device.default()
    assert isinstance(d, burn.Device)


def test_burn_device_env_overrides_default():
    code = "import burn; print(burn.Device.default())"
    out = subprocess.run([sys.executable, "-c", code], env={"BURN_DEVICE": "cuda:3", "PATH": ""},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "cuda:3"


def test_seed_makes_random_streams_reproducible_regardless_of_flushes():
    dev = burn.Device.flex()
    dev.seed(123)
    a = burn.rand((5,), device=dev)
    b = burn.randn((5,), device=dev)
    a_np, b_np = a.numpy(), b.numpy()
    dev.seed(123)
    a2 = burn.rand((5,), device=dev).numpy()      # flushed before the next op is recorded
    b2 = burn.randn((5,), device=dev).numpy()
    np.testing.assert_array_equal(a_np, a2)
    np.testing.assert_array_equal(b_np, b2)
    assert not np.array_equal(a_np, burn.rand((5,), device=dev).numpy())


def test_sync_memory_stats_and_cleanup_work_on_flex():
    dev = burn.Device.flex()
    x = burn.ones((3,), device=dev) * 2
    dev.sync()
    stats = dev.memory_stats()
    assert {"reserved_bytes", "in_use_bytes", "peak_reserved_bytes", "peak_in_use_bytes"} <= set(stats)
    dev.memory_cleanup()
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_default_is_an_opencl_cpu_device_only_when_flex_is_not_installed():
    code = "import burn; print(burn.Device.default())"
    env = {k: v for k, v in __import__("os").environ.items() if k != "BURN_DEVICE"}
    with_flex = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                               check=True).stdout.strip()
    assert with_flex == "flex:0" or not with_flex.startswith("wgpu")   # PoCL never beats flex
    from devices import flex_and_wgpu, wgpu_status
    if len(flex_and_wgpu()) < 2:
        pytest.skip(f"no usable OpenCL device here: {wgpu_status()}")
    without = subprocess.run([sys.executable, "-c", code], env=dict(env, BURN_PLUGINS_DISABLE="flex"),
                             capture_output=True, text=True, check=True).stdout.strip()
    assert without == "wgpu:0"


def test_creation_kernels_learn_the_index_of_the_device_they_run_on():
    # a third-party backend with two devices: its creation kernels receive no tensor, so they
    # read burn.backend.current_device_index() (set while a device's lazy graph runs)
    from burn.backend import current_device_index
    from burn.dispatch import registry
    from burn_flex.backend import FlexBackend
    from burn_flex.kernels import all_kernels
    seen = []

    def recording(fn):
        def k(*xs, **attrs):
            seen.append(current_device_index())
            return fn(*xs, **attrs)
        return k

    name = "twodevices"
    registry.register_backend(name, type("TwoDevices", (FlexBackend,), {"name": name,
                                                                         "device_indices": lambda self: [0, 1]}),
                              plugin="tests-twodevices")
    try:
        for op, fn in all_kernels().items():
            registry.register_kernel(op, name, recording(fn) if op in ("full", "arange", "rand_uniform") else fn,
                                     plugin="tests-twodevices")
        for index in (1, 0, 1):
            seen.clear()
            dev = burn.Device(name, index)
            x = burn.zeros((3,), device=dev) + burn.arange(3, device=dev) + burn.rand((3,), device=dev)
            assert x.numpy().shape == (3,) and x.device == dev
            assert seen == [index] * 3, (index, seen)
        assert current_device_index() == 0          # restored after each flush
    finally:
        registry.forget_plugin("tests-twodevices")


def test_flush_runs_pending_ops_that_sync_alone_would_drop():
    # lazy results replaced before a flush are never computed; Device.flush runs each one
    # (what a timing loop needs: gpu_check times burn's calls back to back this way)
    from devices import wgpu_or_skip
    dev = wgpu_or_skip()
    x = burn.tensor(np.random.default_rng(0).random(1 << 20).astype(np.float32), device=dev)  # fused at once
    dev.sync()
    launches = lambda: dev.backend.stats(dev.index)["launches"]      # noqa: E731
    keep = [None]
    n0 = launches()
    for _ in range(5):
        keep[0] = burn.tanh(x * 1.5 + 0.5)
    dev.sync()
    dropped = launches() - n0
    n0 = launches()
    for _ in range(5):
        keep[0] = burn.tanh(x * 1.5 + 0.5)
        dev.flush()
    dev.sync()
    assert dropped == 1 and launches() - n0 == 5
    np.testing.assert_allclose(keep[0].numpy(), np.tanh(x.numpy() * 1.5 + 0.5), rtol=1e-6)
