"""burn-cuda's reduce groups on the generated reduce kernels (burn_cuda.kernels.reduce).

Without a GPU three things are checked, each able to fail on its own:

* every CUDA program the path can emit, for the conformance suite's reduce groups (in their
  recorded dtypes and again in every float dtype) and a grid of ops x dtypes x layouts,
  compiles with ``nvcc --ptx -arch=sm_90`` (skipped without nvcc);
* the launches burn_cuda makes (with a recording DeviceContext and numpy arrays for CuPy's)
  match the CUDA kernels' signatures argument by argument, with the grid and block the
  kernels assume, for each variant;
* the plan the cuda path makes (CUDA's thresholds for an H200's 132 SMs, 256-thread blocks,
  strided shares) drives the OpenCL rendering of the same kernels on burn-wgpu's PoCL device
  with the same grids, blocks and argument lists, and the results match numpy: the plan's
  geometry and arguments are what the kernels expect, in every variant.

With CuPy and a GPU, ``test_reduce_groups_on_a_real_gpu_match_numpy`` runs sum / mean / var /
max / argmax / logsumexp groups through the cuda backend in every variant; it skips otherwise.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import types

import numpy as np
import pytest

import burn

pytest.importorskip("burn_cuda")

from fakecupy import real_gpu as _real_gpu  # noqa: E402  (tests/ is on sys.path under pytest)


@pytest.fixture(scope="module", autouse=True)
def _through_the_planner():
    # these tests read the groups the fusion planner makes of small flushes, which the eager
    # path otherwise runs op by op (burn.graph.run_small_flush)
    import burn.graph
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(burn.graph, "SMALL_FLUSH_NODES", 0)
        yield


NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)
H200_SMS = 132
FLOATS = ["float32", "float64", "float16", "bfloat16"]
OPS = ["sum", "prod", "max", "min", "argmax", "argmin", "any", "all"]


def _group(ops, shapes, dtypes, outputs):
    from burn.fusion import FusedGroup
    metas = [burn.TensorMeta(tuple(sh), getattr(burn, d)) for sh, d in zip(shapes, dtypes)]
    return FusedGroup("reduce", ops, metas, outputs, [])


def _planned(fn, *arrays):
    """``[(group, input arrays)]``: the reduce groups burn's fusion planner hands a backend for
    ``fn(*tensors)`` (run on flex, whose compiled group is wrapped to record its inputs)."""
    from burn import fusion
    dev = burn.Device.flex()
    cls = type(dev.backend)
    orig = cls.compile_group
    seen = []

    def record(self, g):
        f = orig(self, g)

        def run(*xs):
            if g.kind == "reduce":
                seen.append((g, [np.array(x) for x in xs]))
            return f(*xs)
        return run

    cls.compile_group = record
    try:
        fusion.clear_plan_cache()
        fn(*[burn.tensor(a, device=dev) for a in arrays]).numpy()
    finally:
        cls.compile_group = orig
        fusion.clear_plan_cache()
    return seen


# the groups of burn's reductions (name, fn, numpy reference); a prologue keeps a plain
# reduction a group (alone it is CuPy's)
def _lse(a, axis):
    m = np.max(a, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(a - m), axis=axis)) + np.squeeze(m, axis=axis)


def _one(ax):
    return ax[0] if isinstance(ax, tuple) else ax


CASES = {
    "sum": (lambda x, ax: (x * 1.5).sum(axis=ax), lambda a, ax: (a * 1.5).sum(axis=ax)),
    "mean": (lambda x, ax: burn.mean(x, axis=ax), lambda a, ax: a.mean(axis=ax)),
    "var": (lambda x, ax: burn.var(x, axis=ax, keepdims=True), lambda a, ax: a.var(axis=ax, keepdims=True)),
    "std": (lambda x, ax: burn.std(x, axis=ax, correction=1), lambda a, ax: a.std(axis=ax, ddof=1)),
    "max": (lambda x, ax: (x + 1).max(axis=ax), lambda a, ax: (a + 1).max(axis=ax)),
    # argmax takes one axis (None: the flat index); a tuple reads as its first axis here
    "argmax": (lambda x, ax: (x * 2).argmax(axis=_one(ax)), lambda a, ax: (a * 2).argmax(axis=_one(ax))),
    "logsumexp": (lambda x, ax: burn.logsumexp(x, axis=ax), _lse),
}


# -- (a) every program compiles with nvcc ---------------------------------------------------------

def _grid_groups():
    """One-op reductions, a written prologue value with a scalar parameter, an epilogue reading
    a per-row input, a full reduction over 3 dims: every op in every dtype."""
    out = []
    for d in FLOATS + ["int32", "int8", "uint8", "bool", "int64"]:
        for op in OPS:
            ax = {"axis": (1,), "keepdims": False}
            out.append(_group([(op, ax, [("in", 0)])], [(3, 50)], [d], [0]))
            out.append(_group([(op, {"axis": None}, [("in", 0)])], [(2, 3, 40)], [d], [0]))
            out.append(_group([("mul", {}, [("in", 0), ("in", 1)]), (op, ax, [("op", 0)])],
                              [(3, 50), ()], [d, d], [0, 1]))
            # the epilogue's other operand has the reduced value's dtype (burn casts before a binary op)
            rd = {"argmax": "int64", "argmin": "int64", "any": "bool", "all": "bool"}.get(op, d)
            if op in ("sum", "prod") and d in ("int32", "int8", "uint8", "bool", "int64"):
                rd = "int64"
            out.append(_group([(op, {"axis": (1,), "keepdims": True}, [("in", 0)]),
                               ("maximum", {}, [("op", 0), ("in", 1)])], [(3, 50), (3, 1)], [d, rd], [1]))
    return out


def _sources():
    """``{source: [what it was built for]}`` of every program burn_cuda.kernels.reduce builds for the
    conformance suite's reduce groups (recorded dtypes, then float32 ones in every float
    dtype), burn's reductions in every float dtype, and the grid."""
    from test_cuda_nvcc import _recorded_groups
    from burn_cuda.kernels.reduce import source
    todo = []
    for g in _recorded_groups():
        if g.kind != "reduce":
            continue
        shapes = [tuple(m.shape) for m in g.input_metas]
        dts = [m.dtype.name for m in g.input_metas]
        todo.append((g, shapes, dts, "conformance"))
        if dts and all(t == "float32" for t in dts):
            todo += [(g, shapes, [t] * len(dts), f"conformance as {t}") for t in FLOATS[1:]]
    rng = np.random.default_rng(0)
    for name, (fn, _) in CASES.items():
        for g, xs in _planned(lambda x: fn(x, 1), rng.standard_normal((4, 6)).astype(np.float32)):
            todo += [(g, [x.shape for x in xs], [t] * len(xs), f"{name} {t}") for t in FLOATS]
    todo += [(g, [tuple(m.shape) for m in g.input_metas], [m.dtype.name for m in g.input_metas], "grid")
             for g in _grid_groups()]
    out = {}
    for g, shapes, dts, what in todo:
        b = source(g, shapes, dts)
        if b is not None:
            out.setdefault(b.src, []).append(f"{what}: {[o[0] for o in g.ops]} {dts}")
    return out


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed here")
def test_every_reduce_program_the_cuda_path_emits_compiles_with_nvcc(tmp_path):
    from test_cuda_nvcc import _KERNEL, compile_batched
    mods = _sources()
    srcs = sorted(mods)
    descr = [d for ds in mods.values() for d in ds]
    assert sum("conformance:" in d for d in descr) > 20 and sum("grid" in d for d in descr) > 200
    for t in FLOATS:
        assert any(f"var {t}" in d for d in descr) and any(f"logsumexp {t}" in d for d in descr), t
    assert any("__nv_bfloat16" in s for s in srcs) and any("__half" in s for s in srcs)
    for s in srcs:
        assert "fmred(" in s and "fmred_grp(" in s and "__syncthreads();" in s
    # half types accumulate in float: no __half/__nv_bfloat16 register or shared value
    for s in srcs:
        assert not re.search(r"(__shared__ |  )(__half|__nv_bfloat16) \w", s), s[:2000]
    compile_batched(srcs, tmp_path, "reduce", 3, arch="sm_90")
    n_kernels = sum(len(_KERNEL.findall(s)) for s in srcs)
    assert n_kernels >= 4 * len(srcs)
    print(f"\nnvcc --ptx -arch=sm_90: {len(srcs)} reduce programs, {n_kernels} kernels")


# -- (b) the launches: variant choice, geometry, arguments ----------------------------------------

def test_cuda_variant_choice_for_an_h200():
    from burn.codegen.reduce_run import CUDA_TUNING, choose

    def ch(M, R, inner=True, can_split=True):
        return choose(M, R, H200_SMS, can_split, None, CUDA_TUNING, inner)
    assert ch(100_000, 16) == ("row", 1)                # many short rows: a thread each
    assert ch(4, 20) == ("row", 1)                      # too short for a tree
    assert ch(100_000, 4096, inner=False) == ("row", 1)  # rows adjacent in memory: coalesced threads
    assert ch(100_000, 4096, inner=True) == ("group", 1)  # long contiguous rows: a block each
    assert ch(2000, 4096, inner=False) == ("group", 1)  # too few rows to fill the SMs with threads
    assert ch(64, 10_000) == ("group", 1)               # few rows, too short to split
    v, s = ch(1, 1 << 26)                               # a full sum of 64M: 8 blocks per SM
    assert v == "split" and s == 8 * H200_SMS
    v, s = ch(2, 40_000)
    assert v == "split" and s == 40_000 // (1 << 13)
    assert ch(1, 1 << 26, can_split=False) == ("group", 1)   # a loop-level pass after the last reduction
    with pytest.raises(ValueError, match="unknown variant"):
        choose(4, 4, 1, force="rows")


_CSIZE = {"float": 4, "double": 8, "__half": 2, "__nv_bfloat16": 2, "long long": 8, "int": 4, "signed char": 1,
          "unsigned char": 1}
_CSCALAR = {"int": np.int32, "float": np.float32, "double": np.float64, "long long": np.int64,
            "signed char": np.int8, "unsigned char": np.uint8}
_PARAM = re.compile(r"^(const )?(.+?)(\*)? (\w+)$")


def _signature(src, name):
    m = re.search(r'extern "C" __global__ void ' + name + r"\((.*?)\) \{", src)
    assert m, name
    return [_PARAM.match(p).groups() for p in m.group(1).split(", ")]


class _RecordingDC:
    """A DeviceContext that records each launch (numpy arrays stand for CuPy's)."""
    index = 0

    def __init__(self, sms=H200_SMS):
        rt = types.SimpleNamespace(getDeviceProperties=lambda i: {"multiProcessorCount": sms})
        self.cp = types.SimpleNamespace(empty=np.empty, cuda=types.SimpleNamespace(runtime=rt))
        self.launches = []

    @contextlib.contextmanager
    def scope(self):
        yield self

    def function(self, src, name):
        return src, name

    def launch(self, fn, n, args, block=256):
        self.launches.append((fn[1], fn[0], -(-n // block), block, tuple(args)))


def _check_launch(name, src, grid, block, args, inputs, results, M, R, S):
    """One recorded launch against kernel ``name``'s CUDA signature and geometry."""
    sig = _signature(src, name)
    assert len(sig) == len(args), (name, len(sig), len(args))
    for (const, ctype, ptr, pname), a in zip(sig, args):
        if ctype.startswith("burn_mred"):       # the index struct: a size-one int32[W] record
            W = int(re.search(r"typedef struct \{ int v\[(\d+)\]; \} " + ctype + ";", src).group(1))
            assert isinstance(a, np.ndarray) and a.size == 1 and a.dtype.names == ("v",) and a.itemsize == 4 * W
        elif ptr:
            assert isinstance(a, np.ndarray), (name, pname, type(a))
            if pname in ("pacc", "pidx"):       # 8-byte scratch holds every accumulator type
                assert a.itemsize == 8 >= _CSIZE[ctype] and a.size == M * S, (pname, a.dtype, a.size)
            else:
                assert a.itemsize == _CSIZE[ctype], (name, pname, ctype, a.dtype)
            if pname.startswith("in"):
                assert a is inputs[int(pname[2:])], pname
            if pname.startswith(("rout", "pout")):
                assert any(a is r for r in results), pname
        else:
            assert type(a) is _CSCALAR[ctype], (name, pname, ctype, type(a))
    assert [int(a) for a in args[1:4]] == [M, R, S]
    shared = re.findall(r"__shared__ [\w ]+ t[ai]\d+\[(\d+)\];", src)
    assert shared and all(int(n) == block == 256 for n in shared)
    if name == "fmred":
        assert grid * block >= M > (grid - 1) * block
    elif name.startswith("fmred_part"):
        assert grid == M * S
    else:
        assert grid == M


@pytest.mark.parametrize("force", [None, "row", "group", "split"])
def test_cuda_launches_match_the_kernel_signatures(force, monkeypatch):
    from burn_cuda.kernels import reduce as rf
    from burn_cuda.fused import compile_group
    dc = _RecordingDC()
    monkeypatch.setattr(rf, "_dc_of", lambda xs: dc)
    monkeypatch.setattr(rf, "_UNITS", {})
    monkeypatch.setattr(rf, "FORCE", force)
    monkeypatch.setenv("BURN_CUDA_FUSE_AFTER", "0")
    rng = np.random.default_rng(3)
    runs = []
    for name, (fn, _) in CASES.items():
        for dt in ("float32", "float64", "float16"):
            for shape, ax in (((6, 40), 1), ((3, 5, 2000), (0, 2)), ((70_000, 3), 0), ((4000, 20), 1)):
                a = rng.standard_normal(shape).astype(dt)
                runs += [(g, [x.astype(dt) if x.dtype.kind == "f" else x for x in xs])
                         for g, xs in _planned(lambda x: fn(x, ax), a)]
    ops = [("mul", {}, [("in", 0), ("in", 1)]), ("sum", {"axis": (1,), "keepdims": True}, [("op", 0)]),
           ("add", {}, [("op", 1), ("in", 2)])]    # a written prologue value, a per-row input
    runs.append((_group(ops, [(5, 300), (), (5, 1)], ["float32"] * 3, [0, 2]),
                 [rng.standard_normal((5, 300)).astype(np.float32), np.array(2, np.float32), np.ones((5, 1), np.float32)]))
    runs.append((_group([("gt", {}, [("in", 0), ("in", 1)]), ("any", {"axis": None}, [("op", 0)])],
                        [(9, 9), ()], ["int32"] * 2, [1]), [np.arange(81, dtype=np.int32).reshape(9, 9),
                                                             np.array(80, np.int32)]))
    variants = set()
    for g, xs in runs:
        fused = compile_group(g)
        assert type(fused).__name__ == "FusedReduce", [o[0] for o in g.ops]
        del dc.launches[:]
        res = fused(*xs)
        b = fused.built[(tuple(tuple(x.shape) for x in xs), tuple(rf.dtype_name(x) for x in xs), 0)]
        assert b, [o[0] for o in g.ops]
        variant, S = fused.last_variant
        variants.add(variant)
        if force is not None:
            assert variant == force or (force == "split" and not b.can_split and variant == "group")
        names = [ln[0] for ln in dc.launches]
        n_pass = len(b.sp.reds)
        assert names == {"row": ["fmred"], "group": ["fmred_grp"],
                         "split": [f"fmred_{k}{p}" for p in range(n_pass) for k in ("part", "comb")]}[variant]
        M, R = b.sp.M, int(np.prod([b.sp.F[d] for d in b.sp.axes]))
        for name, src, grid, block, args in dc.launches:
            assert src == b.src
            _check_launch(name, src, grid, block, args, xs, res, M, R, S)
        for r, j in zip(res, g.outputs):
            assert r.shape == tuple(b.sp.shape[j]) and rf.dtype_name(r) == b.sp.types[j]
    assert force is not None or variants == {"row", "group", "split"}, variants


def test_groups_the_kernels_decline_keep_their_previous_path(monkeypatch):
    """A complex value keeps the group op by op (None); a shape beyond the kernels (more than
    MAX_DIMS kept dims) runs the fallback the group was compiled with."""
    from burn_cuda.kernels import reduce as rf
    from burn_cuda.fused import compile_group
    g = _group([("mul", {}, [("in", 0), ("in", 0)]), ("sum", {"axis": None}, [("op", 0)])], [(4,)],
               ["complex64"], [1])
    assert compile_group(g) is None
    shape = (2,) * 8
    g = _group([("exp", {}, [("in", 0)]), ("sum", {"axis": (7,), "keepdims": False}, [("op", 0)])], [shape],
               ["float32"], [1])
    dc = _RecordingDC()
    monkeypatch.setattr(rf, "_dc_of", lambda xs: dc)
    monkeypatch.setenv("BURN_CUDA_FUSE_AFTER", "0")
    fused = compile_group(g)
    called = []
    fused.fallback = lambda *xs: called.append(xs) or ("fallback",)
    x = np.ones(shape, np.float32)
    assert fused(x) == ("fallback",) and not dc.launches and called


class _Twin:
    """burn_cuda's FusedReduce with its device part swapped for burn-wgpu's: the same plan
    (CUDA's tuning for 132 SMs, 256-item work-groups, strided shares, the same argument
    symbols) launched as the OpenCL rendering of the same kernels on PoCL."""

    @staticmethod
    def cls():
        from burn.codegen import OPENCL
        from burn.codegen.reduce_run import ReduceRunner
        from burn_cuda.kernels.reduce import FusedReduce
        from burn_wgpu.kernels.reduce.generated import FusedMultiReduce as W

        class Twin(FusedReduce):
            dialect = OPENCL
            __call__ = ReduceRunner.__call__
            context_of, dtype_of, layout, empty = W.context_of, W.dtype_of, W.layout, W.empty
            struct_arg, buf, scalar_args, launch = W.struct_arg, W.buf, W.scalar_args, W.launch

            def units(self, dc):
                return H200_SMS
        return Twin


def _wgpu():
    from devices import wgpu_or_skip
    dev = wgpu_or_skip()
    return dev, dev.backend


# (case, shape, axis, the variant CUDA's choice makes for an H200)
TWIN = [
    ("sum", (1 << 20,), None, "split"),
    ("mean", (64, 5000), 1, "group"),
    ("var", (2, 40_000), 1, "split"),
    ("logsumexp", (34_000, 40), 1, "row"),
    ("argmax", (300, 3000), 0, "group"),
    ("std", (7, 3, 5000), (0, 2), "split"),
    ("max", (5, 70_000), 1, "split"),
]


@pytest.mark.parametrize("case,shape,axis,variant", TWIN)
def test_the_cuda_plan_runs_the_kernels_right_in_their_opencl_twin(case, shape, axis, variant, monkeypatch):
    dev, be = _wgpu()
    from burn_cuda.kernels import reduce as rf
    monkeypatch.setenv("BURN_CUDA_FUSE_AFTER", "0")
    fn, ref = CASES[case]
    rng = np.random.default_rng(4)
    a = (3 + rng.standard_normal(shape)).astype(np.float32)
    (g, xs), = _planned(lambda x: fn(x, axis), a)
    want = ref(a.astype(np.float64), axis)
    Twin = _Twin.cls()
    for force in (None, "row", "group", "split"):
        if force is not None and np.prod(shape) > 1 << 19:
            continue        # the forced variants run on the smaller shapes (PoCL's time)
        monkeypatch.setattr(rf, "FORCE", force)
        twin = Twin(g, lambda *xs: pytest.fail("the twin fell back"))
        got = twin(*[be.from_numpy(x, None, dev.index) for x in xs])
        assert twin.last_variant[0] == (force or variant), (force, twin.last_variant)
        out = be.to_numpy(got[0], dev.index)
        # the group's result as the planner declared it (a reshape may follow the group)
        assert out.shape == tuple(g.output_metas[0].shape), (out.shape, g.output_metas[0].shape)
        out = out.reshape(np.shape(want))
        if case == "argmax":
            np.testing.assert_array_equal(out, want)
        else:
            np.testing.assert_allclose(out, want, rtol=2e-5, atol=1e-5, err_msg=f"{case} {force}")


@pytest.mark.parametrize("dtype,op", [("int32", "sum"), ("float64", "argmin"), ("bool", "any"),
                                      ("int8", "max"), ("float32", "prod")])
def test_the_cuda_plan_in_every_variant_for_other_dtypes_in_the_opencl_twin(dtype, op, monkeypatch):
    """Strided (transposed) and broadcast inputs, a written prologue value, odd sizes."""
    dev, be = _wgpu()
    from burn_cuda.kernels import reduce as rf
    monkeypatch.setenv("BURN_CUDA_FUSE_AFTER", "0")
    rng = np.random.default_rng(5)
    base = rng.standard_normal((1031, 7))
    a = {"bool": base > 2.5, "int32": (base * 40).astype(np.int32), "int8": np.clip(base * 4, -10, 10).astype(np.int8),
         "float64": base, "float32": (1 + 0.001 * base).astype(np.float32)}[dtype]
    b = a[:1].copy()
    g = _group([("mul" if dtype != "bool" else "logical_and", {}, [("in", 0), ("in", 1)]),
                (op, {"axis": (0,), "keepdims": False}, [("op", 0)])], [(1031, 7), (1, 7)], [dtype] * 2, [0, 1])
    pro = a * b if dtype != "bool" else a & b
    want = getattr(np, op)(pro.astype(np.float64) if op == "prod" else pro, axis=0)
    Twin = _Twin.cls()
    for force in ("row", "group", "split"):
        monkeypatch.setattr(rf, "FORCE", force)
        twin = Twin(g, lambda *xs: pytest.fail("the twin fell back"))
        xt = be.from_numpy(np.ascontiguousarray(a.T), None, dev.index)
        from burn_wgpu.native import WTensor
        xv = WTensor(xt.dc, xt.block, (1031, 7), xt.dtype, (1, 1031), 0)     # a transposed view
        written, red = twin(xv, be.from_numpy(b, None, dev.index))
        assert twin.last_variant[0] == force
        np.testing.assert_array_equal(be.to_numpy(written, dev.index), pro)
        got = be.to_numpy(red, dev.index)
        if op == "prod":
            np.testing.assert_allclose(got, want, rtol=1e-4)
        else:
            np.testing.assert_array_equal(got, want)


# -- (c) on a real GPU ----------------------------------------------------------------------------

GPU_SHAPES = [((1 << 22,), None), ((3, 1 << 18), 1), ((4096, 1024), 1), ((1024, 4096), 0), ((5, 7, 3001), (0, 2)),
              ((40_000, 40), -1), ((9,), 0)]


def test_reduce_groups_on_a_real_gpu_match_numpy(monkeypatch):
    why = _real_gpu()
    if why != "ok":
        pytest.skip(why or "no CUDA GPU / CuPy not installed: the nvcc, launch and OpenCL-twin tests ran instead")
    from burn_cuda.kernels import reduce as rf
    monkeypatch.setenv("BURN_CUDA_FUSE_AFTER", "0")
    dev = burn.Device.cuda(0)
    dtypes = ["float32", "float64", "float16"]
    try:        # bfloat16 needs CuPy >= 14 with ml_dtypes (burn_cuda.native.bfloat16_dtype says so)
        from burn_cuda.native import bfloat16_dtype
        bf16 = bfloat16_dtype()
        dtypes.append("bfloat16")
    except burn.BurnError as e:
        print(f"bfloat16 not checked: {e}")
    rng = np.random.default_rng(6)
    bad, seen = [], set()
    for force in (None, "row", "group", "split"):
        monkeypatch.setattr(rf, "FORCE", force)
        for shape, axis in GPU_SHAPES:
            axes = range(len(shape)) if axis is None else [d % len(shape) for d in np.atleast_1d(axis)]
            R = int(np.prod([shape[d] for d in axes]))
            for dt in dtypes:
                if dt == "float16" and R > 20_000:
                    continue        # a float16 sum of more would overflow (it is rounded to float16)
                # a large mean for the wide types (var's two passes must stay sound)
                half = dt in ("float16", "bfloat16")
                a = ((0 if half else 2) + rng.standard_normal(shape)).astype(np.float32)
                a = a.astype(bf16 if dt == "bfloat16" else dt)
                ref_in = a.astype(np.float64)
                x = burn.tensor(a, device=dev)
                for name, (fn, ref) in CASES.items():
                    rf.LAST_VARIANT[0] = None
                    got = fn(x, axis).numpy().astype(np.float64 if name != "argmax" else np.int64)
                    want = ref(ref_in, axis)
                    seen.add(rf.LAST_VARIANT[0] and rf.LAST_VARIANT[0][0])
                    if rf.LAST_VARIANT[0] is None:
                        bad.append(f"{name} {shape} {axis} {dt}: not run by burn_cuda.kernels.reduce")
                    tol = {"float32": 2e-5, "float64": 1e-10, "float16": 2e-3, "bfloat16": 1.6e-2}[dt]
                    try:
                        if name == "argmax":
                            np.testing.assert_array_equal(got, want)
                        else:       # half-type results are rounded to their dtype: relative to the largest
                            np.testing.assert_allclose(got, want, rtol=tol,
                                                       atol=tol * (1 + np.abs(want).max()))
                    except AssertionError as e:
                        bad.append(f"{name} {shape} {axis} {dt} force={force}: {str(e)[:300]}")
    assert not bad, "\n".join(bad[:40])
    assert {"row", "group", "split"} <= seen, seen
