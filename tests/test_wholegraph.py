"""Core's whole-graph hook (Backend.compiles_graphs / compile_graph, burn.wholegraph) with a toy
third-party backend that evaluates each flushed graph with flex's kernels, and the CLI hook
burn_register_cli."""
from __future__ import annotations

import argparse

import numpy as np
import pytest

import burn
from burn.dispatch import registry


class WholeToy(burn.Backend):
    """Numpy arrays; each flush arrives whole and is evaluated node by node with flex's kernels."""

    name = "wholetoy"
    compiles_graphs = True

    def __init__(self):
        self.compiled = []

    def native_dtype(self, dtype):
        return np.dtype(dtype)

    def from_numpy(self, array, dtype, index):
        return np.array(array, dtype=np.dtype(dtype if dtype is not None else array.dtype))

    def to_numpy(self, native, index):
        return native

    def compile_graph(self, flushed):
        self.compiled.append(flushed)

        def run(inputs, keys, index):
            env, keys = [], list(keys)
            for n in flushed.nodes:
                args = [inputs[r[1]] if r[0] == "in" else env[r[1]][r[2]] for r in n.inputs]
                attrs = dict(n.attrs)
                if "_key" in attrs:
                    attrs["_key"] = keys.pop(0)
                out = registry.kernel(n.op, "flex")(*args, **attrs)
                env.append(out if isinstance(out, tuple) else (out,))
            return [env[r[1]][r[2]] for r in flushed.outputs]
        return run


_TOY = WholeToy()     # one instance: the device's lazy graph keeps the backend it was made with


@pytest.fixture
def toy():
    burn.plugins.ensure_loaded()
    registry.register_backend("wholetoy", lambda: _TOY, plugin="test-wholegraph")
    burn.fusion.clear_plan_cache()     # so every test sees its structures compiled
    _TOY.compiled.clear()
    yield burn.Device("wholetoy"), _TOY
    registry.backends.pop("wholetoy", None)


def test_a_repeated_flush_is_compiled_once_and_computes_what_numpy_does(toy):
    dev, be = toy
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = burn.tensor(a, device=dev)
    outs = [((x * x).exp().sum(axis=1) + float(i)).numpy() for i in range(5)]
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o, np.exp(a * a).sum(axis=1) + i, rtol=1e-6)
    shapes = [tuple(n.op for n in f.nodes) for f in be.compiled]
    assert shapes.count(("mul", "exp", "sum", "add")) == 1, shapes


def test_the_flushed_graph_has_live_nodes_only_and_each_input_once(toy):
    dev, be = toy
    x = burn.tensor([1.0, 2.0], device=dev)
    keep = x * x
    _dead = (x + 1.0).exp()
    del _dead
    np.testing.assert_array_equal(keep.numpy(), [1.0, 4.0])
    f = be.compiled[-1]
    assert [n.op for n in f.nodes] == ["mul"] and f.nodes[0].inputs == (("in", 0), ("in", 0))
    assert len(f.inputs) == 1 and f.outputs == [("node", 0, 0)]


def test_random_nodes_get_the_keys_the_device_drew(toy):
    dev, be = toy
    dev.seed(5)
    r = burn.randn((4,), device=dev).numpy()
    f = burn.Device.flex()
    f.seed(5)
    np.testing.assert_array_equal(r, burn.randn((4,), device=f).numpy())
    assert be.compiled[-1].random == [0]


def test_capture_replay_on_a_whole_graph_backend_goes_through_compile_graph(toy):
    dev, be = toy
    w = burn.tensor([2.0, 3.0], device=dev)
    g = burn.capture.trace(lambda x: (x * w).sum(), burn.tensor([1.0, 1.0], device=dev))
    n = len(be.compiled)
    assert g(burn.tensor([1.0, 2.0], device=dev)).item() == 8.0
    assert g(burn.tensor([2.0, 2.0], device=dev)).item() == 10.0
    assert len(be.compiled) == n + 1          # prepared once, replayed twice


def test_plugins_add_subcommands_and_a_clash_names_both_owners():
    sub = argparse.ArgumentParser(prog="burn").add_subparsers(dest="cmd")
    sub.add_parser("info")
    owners = burn.plugins.register_cli(sub)
    assert owners["remote"] == "remote" and owners["info"] == "burn"

    class Clash:
        @staticmethod
        @burn.hookimpl
        def burn_register_cli(subparsers):
            subparsers.add_parser("remote")
    burn.plugins.plugin_manager.register(Clash, name="clash")
    try:
        sub2 = argparse.ArgumentParser(prog="burn").add_subparsers(dest="cmd")
        with pytest.raises(burn.PluginError, match="'remote'.*clash"):
            burn.plugins.register_cli(sub2)
    finally:
        burn.plugins.plugin_manager.unregister(name="clash")


def test_the_burn_command_runs_a_plugin_subcommand(tmp_path, capsys):
    from burn.cli import main
    assert main(["remote", "id", "--key-file", str(tmp_path / "k")]) == 0
    out = capsys.readouterr().out.strip()
    assert len(out) == 64 and out == burn.remote.client_endpoint_id(str(tmp_path / "k"))
