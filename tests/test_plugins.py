"""Plugin discovery, isolation, env switches and kernel priorities.

Discovery is tested for real, through ``importlib.metadata``: the two example
distributions (examples/plugins/burn-example-ext and burn-broken-plugin) are
installed once per module with ``pip install --no-deps --no-build-isolation
--no-index --target <tmp>`` (about 1 s: pip builds them from their
pyproject.toml and writes the real ``*.dist-info`` with entry_points.txt),
and each test runs a fresh Python with ``PYTHONPATH=<tmp>``. That is exactly
how an installed plugin looks to burn, without the 5-20 s of creating a venv;
the installed burn-flex plugin is discovered the same way, from the venv.
"""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import burn
from burn.dispatch import Registry, registry
from burn.errors import BackendUnavailable, PluginError

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "plugins"

# (source dir, import package, distribution, entry point name)
EXAMPLE = (EXAMPLES / "burn-example-ext", "burn_example_ext", "burn-example-ext", "example-ext")
BROKEN = (EXAMPLES / "burn-broken-plugin", "burn_broken_plugin", "burn-broken-plugin", "broken")


def _entry_point_of(pyproject: Path) -> tuple[str, str]:
    """The (name, value) of the single burn.plugins entry point a pyproject declares."""
    import tomllib
    eps = tomllib.loads(pyproject.read_text())["project"]["entry-points"]["burn.plugins"]
    assert len(eps) == 1
    return next(iter(eps.items()))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A directory like site-packages with both example plugins pip-installed in it."""
    import shutil
    root = tmp_path_factory.mktemp("site")
    srcs = tmp_path_factory.mktemp("src")
    for src, pkg, dist, ep_name in (EXAMPLE, BROKEN):
        # the entry point the package declares is the one the docs and tests use
        assert _entry_point_of(src / "pyproject.toml") == (ep_name, pkg)
        # build from a copy: setuptools writes build/ and *.egg-info next to the sources
        shutil.copytree(src, srcs / src.name, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--no-index", "--target", str(root), str(srcs / EXAMPLE[0].name), str(srcs / BROKEN[0].name)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for src, pkg, dist, ep_name in (EXAMPLE, BROKEN):
        assert (root / f"{pkg}-0.1.0.dist-info" / "entry_points.txt").exists()
    return root


def run_py(site, code, *, env=None, args=None, python=True):
    """Run ``code`` (or ``python args``; ``args`` alone if not ``python``) in a
    fresh process that sees both example plugins as installed."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("BURN_")}
    e.update(PYTHONPATH=str(site), BURN_DEVICE="flex", **(env or {}))
    cmd = args if args is not None else ["-c", textwrap.dedent(code)]
    if python:
        cmd = [sys.executable] + cmd
    r = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=60, cwd=str(site))
    assert r.returncode == 0, f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return r.stdout


def last_json(out: str):
    return json.loads(out.strip().splitlines()[-1])


# -- discovery ------------------------------------------------------------------

def test_import_burn_imports_no_plugin_and_first_device_use_does(site):
    out = run_py(site, """
        import sys, json
        import burn
        before = sorted(m for m in ("burn_flex", "burn_example_ext", "burn_broken_plugin") if m in sys.modules)
        d = burn.Device.flex()              # a value: still nothing imported
        value = sorted(m for m in ("burn_flex", "burn_example_ext") if m in sys.modules)
        x = burn.ones((2,), device=d)       # first use resolves the device
        after = sorted(m for m in ("burn_flex", "burn_example_ext") if m in sys.modules)
        print(json.dumps([before, value, after, x.tolist()]))
    """)
    before, value, after, x = last_json(out)
    assert before == [] and value == []
    assert after == ["burn_example_ext", "burn_flex"]
    assert x == [1.0, 1.0]


def test_example_op_runs_its_flex_kernel_matches_reference_and_differentiates(site):
    out = run_py(site, """
        import json
        import numpy as np
        import burn
        from burn_example_ext import scaled_swish, stats
        rng = np.random.default_rng(0)
        a = rng.standard_normal((3, 5)).astype(np.float32) * 4
        y = scaled_swish(burn.tensor(a), beta=1.7)
        got = y.numpy()
        kernel_runs = stats["scaled_swish_flex"]
        # the reference definition, run as burn ops (what other backends get)
        ref = scaled_swish.reference(burn.tensor(a), beta=1.7).numpy()
        ok = burn.testing.gradcheck(lambda t: scaled_swish(t, 0.6), rng.standard_normal((2, 3)))
        # gradient of the custom .backward against the reference's autodiff
        dev = burn.Device.flex().autodiff()
        w = burn.tensor(a, device=dev).require_grad()
        g1 = w.grad(scaled_swish(w, beta=1.7).sum().backward()).numpy()
        w2 = burn.tensor(a, device=dev).require_grad()
        g2 = w2.grad(scaled_swish.reference(w2, beta=1.7).sum().backward()).numpy()
        print(json.dumps({"got": got.tolist(), "ref": ref.tolist(), "a": a.tolist(), "dtype": str(got.dtype),
                          "runs": kernel_runs, "gradcheck": ok, "g1": g1.tolist(), "g2": g2.tolist()}))
    """)
    r = last_json(out)
    a = np.array(r["a"], dtype=np.float64)
    expected = a / (1 + np.exp(-1.7 * a))          # independent numpy reference
    assert r["runs"] == 1                           # the flex kernel ran, not the reference
    assert r["dtype"] == "float32"
    np.testing.assert_allclose(r["got"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r["got"], r["ref"], rtol=1e-5, atol=1e-6)
    assert r["gradcheck"] is True
    s = 1 / (1 + np.exp(-1.7 * a))
    np.testing.assert_allclose(r["g1"], s + 1.7 * a * s * (1 - s), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r["g1"], r["g2"], rtol=1e-4, atol=1e-5)


def test_burn_info_and_python_m_burn_info_list_plugins_ops_and_winning_kernels(site):
    via_module = run_py(site, None, args=["-m", "burn", "info"])
    script = Path(sys.executable).with_name("burn")      # burn-core's console script
    assert script.exists(), f"{script} missing: burn-core is not installed in this environment"
    via_script = run_py(site, None, args=[str(script), "info"], python=False)
    # device memory sizes (e.g. PoCL's, derived from free RAM) may differ between two runs
    assert re.sub(r"\d+ MiB", "N MiB", via_script) == re.sub(r"\d+ MiB", "N MiB", via_module)
    lines = via_module.splitlines()

    def line(start):
        hits = [ln for ln in lines if ln.strip().startswith(start)]
        assert hits, f"no line starting with {start!r} in:\n{via_module}"
        return hits[0]

    assert "burn-example-ext 0.1.0" in line("example-ext") and "[loaded]" in line("example-ext")
    assert "[loaded]" in line("flex ")
    assert "[failed]" in line("broken") and "burn-broken-plugin" in line("broken")
    err = lines[lines.index(line("broken")) + 1]
    assert "error:" in err and "ModuleNotFoundError" in err and "burn_broken_plugin._native" in err
    # the extension op, who defined it, and the backends that have kernels for it
    ext = line("example::scaled_swish")
    assert "defined by example-ext" in ext and "flex: example-ext" in ext and "wgpu: example-ext" in ext
    assert "burn.example" in line("burn.example") and "example-ext" in line("burn.example")
    # the third-party kernel for an op it did not define, and that it wins
    lr = line("burn::linear_relu")
    assert "flex: example-ext p=10 (wins), flex" in lr
    # the plugin's burn_plugin_info facts
    assert any("overrides:" in ln and "linear_relu" in ln for ln in lines)


# -- isolation and env switches ----------------------------------------------------------

def test_broken_plugin_is_isolated(site):
    out = run_py(site, """
        import json
        import burn
        x = burn.tensor([1.0, 2.0, 3.0])
        val = ((x * 2).exp().sum()).item()
        recs = {r.name: r for r in burn.plugins.report()}
        b = recs["broken"]
        print(json.dumps({"val": val, "status": b.status, "error": b.error, "dist": b.distribution,
                          "tb": bool(b.traceback and "burn_broken_plugin" in b.traceback),
                          "others": {n: r.status for n, r in recs.items() if n != "broken"}}))
    """)
    r = last_json(out)
    assert r["val"] == pytest.approx(float(np.exp([2.0, 4.0, 6.0]).sum()), rel=1e-6)
    assert r["status"] == "failed" and r["dist"] == "burn-broken-plugin"
    assert r["error"].startswith("import failed: ModuleNotFoundError") and "_native" in r["error"]
    assert r["tb"]
    # other installed plugins (linalg, wgpu, ...) may be present too: all of them loaded
    assert r["others"]["example-ext"] == "loaded" and r["others"]["flex"] == "loaded"
    assert set(r["others"].values()) == {"loaded"}


def test_plugins_disable_skips_by_entry_point_name(site):
    out = run_py(site, """
        import json, sys
        import numpy as np
        import burn
        y = burn.nn.functional.linear_relu(burn.ones((2, 3)), burn.ones((3, 4)), -burn.ones((4,)))
        val = y.tolist()
        imported = "burn_example_ext" in sys.modules
        st = {r.name: r.status for r in burn.plugins.report()}
        winner = burn.dispatch.registry.kernel_entries("burn::linear_relu", "flex")[0].plugin
        print(json.dumps([st, imported, winner, val]))
    """, env={"BURN_PLUGINS_DISABLE": "example-ext, broken"})
    st, imported, winner, val = last_json(out)
    assert st["broken"] == "disabled" and st["example-ext"] == "disabled" and st["flex"] == "loaded"
    assert "disabled" not in {v for k, v in st.items() if k not in ("broken", "example-ext")}
    assert imported is False                 # a disabled plugin is not even imported
    assert winner == "flex"                  # its kernel override is gone with it
    assert val == [[2.0] * 4] * 2


def test_plugin_autoload_0_skips_discovery_and_manual_registration_works(site):
    out = run_py(site, """
        import json, sys
        import burn
        recs = [r.name for r in burn.plugins.report() if r.name != "burn"]   # core's built-in plugin only
        try:
            burn.ones((2,))
            err = None
        except burn.BackendUnavailable as e:
            err = str(e)
        imported = sorted(m for m in ("burn_flex", "burn_example_ext", "burn_broken_plugin") if m in sys.modules)
        import burn_flex
        rec = burn.plugins.register_plugin("flex", burn_flex)
        val = (burn.ones((2,)) * 3).tolist()
        print(json.dumps([len(recs), err, imported, rec.status, rec.backends, val]))
    """, env={"BURN_PLUGIN_AUTOLOAD": "0"})
    n, err, imported, status, backends, val = last_json(out)
    assert n == 0 and imported == []
    assert err is not None and "flex" in err and "pip install burn-flex" in err
    assert status == "loaded" and backends == ["flex"] and val == [3.0, 3.0]


def test_third_party_kernel_for_core_op_wins_by_priority(site):
    out = run_py(site, """
        import json
        import numpy as np
        import burn
        import burn_example_ext
        rng = np.random.default_rng(1)
        x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (3, 5), (5,)))
        y = burn.nn.functional.linear_relu(burn.tensor(x), burn.tensor(w), burn.tensor(b)).numpy()
        print(json.dumps([burn_example_ext.stats["linear_relu_flex"], y.tolist(), x.tolist(), w.tolist(), b.tolist()]))
    """)
    calls, y, x, w, b = last_json(out)
    assert calls == 1
    ref = np.maximum(np.array(x) @ np.array(w) + np.array(b), 0)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_plugin_imported_by_user_before_discovery_is_still_named_by_its_entry_point(site):
    out = run_py(site, """
        import json
        from burn_example_ext import scaled_swish      # decorators run before discovery
        import burn
        burn.ones((1,))                                  # discovery
        e = burn.dispatch.registry.kernel_entries("example::scaled_swish", "flex")
        print(json.dumps([scaled_swish.plugin, [x.plugin for x in e]]))
    """)
    assert last_json(out) == ["example-ext", ["example-ext"]]


def test_uninstalled_backends_name_the_package_to_install(site):
    # hide any burn-wgpu / burn-cuda that may be installed here: only flex is discovered
    out = run_py(site, """
        import json
        import burn, burn.plugins as p
        found = p._entry_points
        p._entry_points = lambda: [e for e in found() if e.name == "flex"]
        msgs = []
        for dev in (burn.Device("wgpu"), burn.Device.cuda(0), burn.Device("npu9:1")):
            try:
                burn.ones((2,), device=dev)
                msgs.append(None)
            except burn.BackendUnavailable as e:
                msgs.append(str(e))
        print(json.dumps(msgs))
    """)
    wgpu, cuda, other = last_json(out)
    assert "pip install burn-wgpu" in wgpu
    assert "pip install burn-cuda" in cuda
    assert "npu9" in other and "burn info" in other and "burn.plugins" in other


# -- priorities and registration failures (in-process) ---------------------------

def test_registry_priority_higher_wins_in_either_order():
    for order in ((0, 5), (5, 0)):
        r = Registry()
        for p in order:
            r.register_kernel("t::op", "flex", lambda x, p=p: (p, x), priority=p, plugin=f"plug{p}")
        assert r.kernel("t::op", "flex")(1) == (5, 1)
        assert [e.plugin for e in r.kernel_entries("t::op", "flex")] == ["plug5", "plug0"]


def test_registry_equal_priority_from_two_plugins_raises_naming_both():
    r = Registry()
    r.register_kernel("t::op", "flex", lambda x: x, priority=3, plugin="alpha")
    with pytest.raises(PluginError) as ei:
        r.register_kernel("t::op", "flex", lambda x: -x, priority=3, plugin="beta")
    msg = str(ei.value)
    assert "'alpha'" in msg and "'beta'" in msg and "t::op" in msg and "BURN_PLUGINS_DISABLE" in msg
    # the same plugin re-registering replaces its kernel; the other backend is independent
    r.register_kernel("t::op", "flex", lambda x: x * 10, priority=3, plugin="alpha")
    r.register_kernel("t::op", "wgpu", lambda x: -x, priority=3, plugin="beta")
    assert r.kernel("t::op", "flex")(2) == 20 and len(r.kernel_entries("t::op", "flex")) == 1


@pytest.fixture
def cleanup_plugins():
    names = []
    yield names
    for n in names:
        registry.forget_plugin(n)
        burn.plugins._records.pop(n, None)
        if burn.plugins.plugin_manager.get_plugin(n) is not None:
            burn.plugins.plugin_manager.unregister(name=n)


def test_hand_registered_plugin_overrides_linear_relu_and_burn_info_shows_it(cleanup_plugins):
    import types
    from burn.cli import info_text
    calls = []

    def fast_linear_relu(x, w, b):
        calls.append((x.shape, w.shape, b.shape))
        return np.maximum(x @ w + b, 0)

    mod = types.ModuleType("fastlr_plugin")
    mod.burn_register_kernels = lambda registry: registry.register_kernel(
        "burn::linear_relu", "flex", fast_linear_relu, priority=7)
    cleanup_plugins.append("fastlr")
    rec = burn.plugins.register_plugin("fastlr", mod)
    assert rec.status == "loaded", rec.error
    rng = np.random.default_rng(2)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 4), (4, 3), (3,)))
    y = burn.nn.functional.linear_relu(burn.tensor(x), burn.tensor(w), burn.tensor(b)).numpy()
    assert calls == [((2, 4), (4, 3), (3,))]
    np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)
    assert "flex: fastlr p=7 (wins), flex" in info_text()
    # gone again after the plugin is forgotten: flex's kernel runs, ours does not
    registry.forget_plugin("fastlr")
    burn.nn.functional.linear_relu(burn.tensor(x), burn.tensor(w), burn.tensor(b)).numpy()
    assert len(calls) == 1


def test_kernel_tie_during_registration_fails_only_that_plugin_and_leaves_nothing(cleanup_plugins):
    import types

    def register(registry):
        registry.register_kernel("tie::ok_op", "flex", lambda x: x)       # registered first...
        registry.register_kernel("exp", "flex", np.exp)                  # ...then ties with flex at 0

    mod = types.ModuleType("tie_plugin")
    mod.burn_register_kernels = register
    cleanup_plugins.append("tieplug")
    rec = burn.plugins.register_plugin("tieplug", mod)
    assert rec.status == "failed"
    assert "PluginError" in rec.error and "'flex'" in rec.error and "'tieplug'" in rec.error
    assert registry.kernel_entries("tie::ok_op", "flex") == []            # rolled back
    assert [e.plugin for e in registry.kernel_entries("exp", "flex")] == ["flex"]
    assert burn.tensor([0.0]).exp().tolist() == [1.0]
    assert any(r.name == "tieplug" and r.status == "failed" for r in burn.plugins.report())


def test_failing_backend_factory_is_raised_only_when_its_device_is_used(cleanup_plugins):
    import types
    from burn.cli import info_text

    def factory():
        raise RuntimeError("driver libfoo.so.3 not found")

    mod = types.ModuleType("foo_backend_plugin")
    mod.burn_register_backends = lambda registry: registry.register_backend("foodev", factory)
    cleanup_plugins.append("foodev")
    rec = burn.plugins.register_plugin("foodev", mod)
    assert rec.status == "loaded" and rec.backends == ["foodev"]
    assert burn.ones((1,)).tolist() == [1.0]                               # the rest works
    with pytest.raises(BackendUnavailable, match="libfoo.so.3"):
        burn.ones((1,), device=burn.Device("foodev"))
    assert "libfoo.so.3" in next(ln for ln in info_text().splitlines() if "(plugin foodev)" in ln)


# -- the hooks, called through pluggy's plugin manager ---------------------------------------------

def test_core_is_a_plugin_of_itself_and_hooks_go_through_the_plugin_manager(cleanup_plugins):
    import types
    from burn import builtin
    burn.plugins.ensure_loaded()
    pm = burn.plugins.plugin_manager
    assert pm.get_plugin("burn") is builtin and pm.get_plugin("flex") is not None
    core = next(r for r in burn.plugins.report() if r.name == "burn")
    assert core.status == "loaded" and "primitives" in core.info
    assert registry.ops["add"] is burn.primitives.PRIMITIVES["add"]
    # a plugin written with pluggy markers, and one with plain functions, are both called
    seen = []
    marked = types.ModuleType("marked_plugin")

    @burn.hookimpl
    def burn_register_kernels(registry):
        seen.append("marked")
        registry.register_kernel("hook::marked", "flex", lambda x: x + 1)
    marked.burn_register_kernels = burn_register_kernels
    plain = types.ModuleType("plain_plugin")
    plain.burn_register_kernels = lambda registry: seen.append("plain")
    cleanup_plugins += ["marked", "plain"]
    assert burn.plugins.register_plugin("marked", marked).status == "loaded"
    assert burn.plugins.register_plugin("plain", plain).status == "loaded"
    assert seen == ["marked", "plain"]                 # each plugin's hooks ran once, for it alone
    assert registry.kernel_entries("hook::marked", "flex")[0].plugin == "marked"
    assert {n for n, _ in pm.list_name_plugin()} >= {"burn", "marked", "plain"}


def test_a_hook_with_unknown_arguments_fails_only_its_plugin(cleanup_plugins):
    import types
    bad = types.ModuleType("bad_hook_plugin")

    @burn.hookimpl
    def burn_register_kernels(registry, surprise):     # the spec has no 'surprise'
        raise AssertionError("never called")
    bad.burn_register_kernels = burn_register_kernels
    cleanup_plugins.append("badhook")
    rec = burn.plugins.register_plugin("badhook", bad)
    assert rec.status == "failed" and "surprise" in rec.error, rec.error
    assert burn.plugins.plugin_manager.get_plugin("badhook") is None
    assert burn.ones((1,)).tolist() == [1.0]


def test_namespaces_are_registrations_and_a_clash_names_both_plugins(cleanup_plugins):
    import types
    from burn.cli import info_text
    ns = burn.plugins.namespaces()
    assert ns["linalg"] == "linalg" and ns["signal"] == ns["fft"] == "signal"
    mine = types.ModuleType("doc_ns_pkg")
    mine.answer = 42
    a = types.ModuleType("ns_plugin_a")
    a.burn_register_namespaces = lambda registry: registry.add_namespace("docmine", mine)
    b = types.ModuleType("ns_plugin_b")
    b.burn_register_namespaces = lambda registry: registry.add_namespace("docmine", "json")
    cleanup_plugins += ["ns-a", "ns-b"]
    assert burn.plugins.register_plugin("ns-a", a).status == "loaded"
    assert burn.docmine.answer == 42 and burn.plugins.namespaces()["docmine"] == "ns-a"
    assert "burn.docmine" in info_text() and "ns-a" in info_text()
    rec = burn.plugins.register_plugin("ns-b", b)
    assert rec.status == "failed"
    assert "burn.docmine" in rec.error and "'ns-a'" in rec.error and "'ns-b'" in rec.error
    assert burn.plugins.namespaces()["docmine"] == "ns-a"
    vars(burn).pop("docmine", None)
    if "onnx" not in registry.namespaces:            # a first-party namespace not installed: what to install
        with pytest.raises(AttributeError, match="pip install burn-onnx"):
            burn.plugins.namespace("onnx")
    with pytest.raises(AttributeError, match="no_such_thing"):
        burn.no_such_thing


def test_default_device_asks_backends_by_declared_priority_and_skips_a_probe_that_says_no(cleanup_plugins,
                                                                                           monkeypatch):
    import types
    monkeypatch.delenv("BURN_DEVICE", raising=False)
    started = []

    class Accel(burn.Backend):
        name = "accel"

        def is_accelerator(self, index):
            return True

    def backend(name, cls=Accel):
        def factory():
            started.append(name)
            be = cls()
            be.name = name
            return be
        return factory

    mod = types.ModuleType("accel_plugin")

    def register(registry):
        registry.register_backend("slowaccel", backend("slowaccel"), default_priority=5)
        registry.register_backend("fastaccel", backend("fastaccel"), default_priority=50)
        registry.register_backend("absentaccel", backend("absentaccel"), default_priority=99,
                                  accelerator_probe=lambda: False)
    mod.burn_register_backends = register
    cleanup_plugins.append("accel")
    assert burn.plugins.register_plugin("accel", mod).status == "loaded"
    pref = registry.accelerator_preference()
    assert pref.index("absentaccel") < pref.index("fastaccel") < pref.index("slowaccel")
    assert burn.Device.default() == burn.Device("fastaccel")
    assert "absentaccel" not in started                  # its probe said no: never started
    assert "slowaccel" not in started                    # a higher priority answered first


# -- the outside package does what in-tree plugins do, through public APIs only --------------------

def test_outside_package_adds_a_namespace_and_kernels_for_flex_and_wgpu_that_conform(site):
    """burn-example-ext, pip-installed from a copy outside the repository: ``burn.example``, its
    op on flex and on wgpu (OpenCL C from its package data, through burn_wgpu.api), its
    conformance cases on both devices, and its linear_relu override checked by core's cases."""
    out = run_py(site, """
        import json, sys
        import numpy as np
        import burn
        from burn.testing import conformance
        res = {}
        ex = burn.example                                        # the namespace, from the hook
        import burn_example_ext
        res["namespace"] = [ex is burn_example_ext, burn.plugins.namespaces().get("example")]
        res["lazy"] = "burn_example_ext._wgpu" in sys.modules    # not imported by discovery
        x = np.linspace(-5, 5, 11)
        want = x / (1 + np.exp(-1.5 * x))
        try:
            dev = burn.Device.wgpu()
            burn.zeros((1,), device=dev).numpy()
        except burn.BackendUnavailable as e:
            dev, res["wgpu"] = None, str(e)
        if dev is not None:
            for dt, tol in ((burn.float32, 1e-6), (burn.float64, 1e-12)):   # PoCL has no float16
                y = ex.scaled_swish(burn.tensor(x, dtype=dt, device=dev), beta=1.5).numpy()
                assert np.allclose(y.astype(np.float64), want, rtol=tol, atol=tol), (dt, y, want)
            res["wgpu"] = ex.stats["scaled_swish_wgpu"]
            res["lazy_after"] = "burn_example_ext._wgpu" in sys.modules
        from burn_example_ext import conformance as example_cases
        added = [c.name for c in example_cases.register()]
        ran = []

        def has(d, dtypes):                                      # e.g. PoCL has no float16
            try:
                return all(burn.zeros((1,), dtype=burn.as_dtype(t), device=d).numpy() is not None for t in dtypes)
            except burn.DTypeError:
                return False
        for d in [burn.Device.flex()] + ([dev] if dev is not None else []):
            for c in conformance.cases():
                if c.op == "example::scaled_swish" and (d.kind == "flex" or c.check != "grad") and has(d, c.dtypes):
                    conformance.run_case(c, d)
                    ran.append(f"{c.name}@{d.kind}")
        res["cases"] = [added, ran, ex.stats["scaled_swish_flex"] > 0]
        before = ex.stats["linear_relu_flex"]
        for c in conformance.cases():
            if c.op == "linear_relu" and c.check == "forward":
                conformance.run_case(c, burn.Device.flex())
        res["override"] = ex.stats["linear_relu_flex"] - before
        from burn.cli import info_text
        res["info"] = [ln.strip() for ln in info_text().splitlines()
                       if "burn.example" in ln or ln.strip().startswith("example::scaled_swish")
                       or ln.strip().startswith("burn::linear_relu")]
        print(json.dumps(res))
    """)
    res = last_json(out)
    assert res["namespace"] == [True, "example-ext"] and res["lazy"] is False
    if isinstance(res["wgpu"], str):
        pytest.skip(f"no OpenCL device here: {res['wgpu']}")
    assert res["wgpu"] == 2 and res["lazy_after"] is True
    added, ran, flex_ran = res["cases"]
    assert len(added) == 5 and flex_ran
    assert "example::scaled_swish[grad]@flex" in ran and "example::scaled_swish[float32]@wgpu" in ran
    assert res["override"] >= 1                                  # core's cases ran through our kernel
    info = " | ".join(res["info"])
    assert "burn.example" in info and "example-ext" in info
    assert "example::scaled_swish" in info and "wgpu: example-ext" in info and "cuda: example-ext" in info
    assert "flex: example-ext p=10 (wins), flex" in info


def test_outside_package_cuda_kernel_compiles_with_nvcc_from_its_installed_package_data(site, tmp_path):
    from test_cuda_nvcc import NVCC, nvcc_ptx
    if NVCC is None:
        pytest.skip("nvcc (CUDA toolkit) is not installed here")
    src = site / "burn_example_ext" / "kernels" / "scaled_swish.cu"
    assert src.exists(), "the .cu file is not shipped as package data"
    for ctype in ("float", "double"):
        f = tmp_path / f"scaled_swish_{ctype}.cu"
        f.write_text(f"#define T {ctype}\n" + src.read_text())
        rc, err, ptx = nvcc_ptx(f)
        assert rc == 0, err
        assert ".entry scaled_swish" in ptx


CUDA_EXAMPLE_PROBE = r'''
import json, re, numpy as np, burn, cupy
_orig = cupy.RawModule.get_function


class _Swish:
    """scaled_swish's CUDA C run in numpy after CuPy's launch checks (the stand-in runs burn's
    generated kernels only): checks the arguments burn_cuda.api passes."""
    def __init__(self, code, name):
        self.code, self.name = code, name
    def __call__(self, grid, block, args, shared_mem=0):
        cupy._check_launch(self.name, grid, block, args, shared_mem)
        T = re.search(r"#define T (\w+)", self.code).group(1)
        x, y, beta, n = args
        assert type(n) is np.int32 and grid[0] * block[0] >= n and beta.dtype == np.dtype(
            {"float": np.float32, "double": np.float64}[T]), (T, beta, n)
        v = np.asarray(x)[:n]
        np.asarray(y)[:n] = v / (1 + np.exp(-beta * v))


cupy.RawModule.get_function = lambda self, name: (_Swish(self.code, name) if name == "scaled_swish"
                                                  else _orig(self, name))
dev = burn.Device.cuda()
x = np.linspace(-4, 4, 9)
res = {}
for dt in (burn.float32, burn.float64):
    y = burn.example.scaled_swish(burn.tensor(x, dtype=dt, device=dev), beta=0.5).numpy()
    res[dt.name] = bool(np.allclose(y, x / (1 + np.exp(-0.5 * x)), rtol=1e-6))
import burn_example_ext
res["ran"] = burn_example_ext.stats["scaled_swish_cuda"]
print(json.dumps(res))
'''


def test_outside_package_cuda_kernel_runs_through_burn_cuda_api_on_the_stand_in(site, tmp_path):
    from fakecupy import write_fake_cupy
    env = write_fake_cupy(tmp_path / "fake")
    env["PYTHONPATH"] = env["PYTHONPATH"] + os.pathsep + str(site)
    r = subprocess.run([sys.executable, "-c", CUDA_EXAMPLE_PROBE], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    assert last_json(r.stdout) == {"float32": True, "float64": True, "ran": 2}


def test_outside_package_docstring_examples_pass_where_it_is_installed(site):
    out = run_py(site, """
        import doctest, json, importlib
        fails = {}
        for name in ("burn_example_ext", "burn_example_ext.ops", "burn_example_ext.conformance"):
            r = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
            fails[name] = [r.failed, r.attempted]
        print(json.dumps(fails))
    """)
    res = last_json(out)
    assert all(f == 0 and n > 0 for f, n in res.values()), res
