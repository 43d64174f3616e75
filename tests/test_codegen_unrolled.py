"""The unrolled element-wise kernels (``name_u<pattern>`` of ``burn.codegen.render_group``).

One element per thread with one scalar load per input keeps ~8 KB per SM in flight
on a GPU, a third of what an H200 needs to stream at full bandwidth; the unrolled
variants give each thread ``UNROLL`` elements, ``i_k = (block * UNROLL + k) * L + t``,
with every load issued before any computation or store. This file checks:

* (a) the CUDA renderings compile with ``nvcc --ptx -arch=sm_90`` (the 8-op chain of
  gpu_check.py, chains with 2-3 inputs and broadcast scalars, several outputs,
  float16/bfloat16 computed in float, ints, bools, every recorded fused segment of the
  conformance suite, burn-cuda's per-op family modules), and in the PTX of the 8-op
  chain every global load comes before the first global store;
* (b) the OpenCL rendering of the same variants computes numpy's results on burn-wgpu's
  OpenCL device for sizes around every block and tail boundary (the index arithmetic,
  the load and store guards: nothing is written past n), with input offsets, run-time
  scalar params, unroll 2, 3 and 4 and two work-group sizes;
* (c) burn-cuda's launch selection: which variant and grid ``run_elementwise`` launches
  (a recording stand-in device), the fused ``kernel_for``, and lone ops on the numpy
  stand-in for CuPy (tests/fakecupy.py), which checks the unrolled grid and computes.

Skips say why: no nvcc, no OpenCL device. A GPU run is not part of this file.
"""
from __future__ import annotations

import math
import os
import re
import shutil

import numpy as np
import pytest

import burn
from burn.codegen import CUDA, OPENCL, UNROLL, program_source, render_group
from burn.codegen.layout import index_words


@pytest.fixture(scope="module", autouse=True)
def _through_the_planner():
    # these tests read the groups the fusion planner makes of small flushes, which the eager
    # path otherwise runs op by op (burn.graph.run_small_flush)
    import burn.graph
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(burn.graph, "SMALL_FLUSH_NODES", 0)
        yield


NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed here")
SIZES = (1, 3, 255, 256, 1023, 1024, 1025, 4096 + 7, 1_000_003)


def _a(k):
    return ("in", k)


def _o(j):
    return ("op", j)


def chain8_group():
    """The element-wise segment the flex fusion planner makes of gpu_check.py's ``_chain``
    (x * 1.5 + 0.5, sigmoid, * x, - 0.25, relu, + x, tanh): ``(ops, in_dtypes, outputs)``."""
    from burn import fusion
    from burn_cuda.fused import segments
    dev = burn.Device.flex()
    cls = type(dev.backend)
    orig, groups = cls.compile_group, []

    def record(self, g):
        groups.append(g)
        return orig(self, g)
    cls.compile_group = record
    try:
        fusion.clear_plan_cache()
        x = burn.tensor(np.linspace(-2, 2, 10, dtype=np.float32), device=dev)
        _chain(x).numpy()       # (in a function: no intermediate outlives it, one output)
    finally:
        cls.compile_group = orig
        fusion.clear_plan_cache()
    segs = [s for g in groups for s in segments(g)]
    assert len(segs) == 1, segs
    ops, in_dtypes, outputs = segs[0]
    assert [o[0] for o in ops] == ["mul", "add", "sigmoid", "mul", "sub", "relu", "add", "tanh"], ops
    assert list(outputs) == [7] and list(in_dtypes) == ["float32"] * 4, (outputs, in_dtypes)
    return ops, list(in_dtypes), list(outputs)


def _chain(x):
    # gpu_check.py's _chain with burn's functions
    y = x * 1.5
    y = y + 0.5
    y = burn.sigmoid(y)
    y = y * x
    y = y - 0.25
    y = burn.relu(y)
    y = y + x
    return burn.tanh(y)


def chain8_numpy(x, a, b, c):
    y = 1 / (1 + np.exp(-(x * a + b)))
    return np.tanh(np.maximum(y * x - c, 0) + x)


# (ops, in_dtypes, outputs, patterns) rendered for CUDA; half types are computed in float
WHERE3 = [("gt", {}, [_a(0), _a(1)]), ("mul", {}, [_a(0), _a(2)]), ("sub", {}, [_a(1), _a(2)]),
          ("where", {}, [_o(0), _o(1), _o(2)])]
INT_REM = [("remainder", {}, [_a(0), _a(1)]), ("mul", {}, [_o(0), _a(0)]), ("bitwise_xor", {}, [_o(1), _a(1)])]
BOOL2 = [("logical_and", {}, [_a(0), _a(1)]), ("logical_not", {}, [_o(0)]), ("logical_xor", {}, [_o(1), _a(1)])]
CLIPCAST = [("mul", {}, [_a(0), _a(1)]), ("clip", {"min": -1.0, "max": 2.0}, [_o(0)]), ("floor", {}, [_o(1)]),
            ("cast", {"dtype": "int32"}, [_o(2)]), ("add", {}, [_o(3), _a(2)])]
EXPMUL = [("exp", {}, [_a(0)]), ("mul", {}, [_o(0), _a(1)])]


def _cuda_chains():
    c8, d8, o8 = chain8_group()
    out = [(c8, d8, o8, (0, 14)), (c8, ["float16"] * 4, o8, (0, 14)), (c8, ["bfloat16"] * 4, o8, (14,))]
    for t in ("float32", "float16", "bfloat16", "float64"):
        out.append((WHERE3, [t] * 3, [0, 3], (0, 4, 2)))
    for t in ("int32", "int64", "int8", "uint8"):
        out.append((INT_REM, [t] * 2, [0, 2], (0, 2)))
    out += [(BOOL2, ["bool"] * 2, [0, 2], (0, 1)), (CLIPCAST, ["float32", "float32", "int32"], [1, 4], (0, 2, 6)),
            (EXPMUL, ["float16", "float32"], [0, 1], (0, 2))]
    return out


def _batch(sources):
    from test_cuda_nvcc import _batch as batch     # (tests/ is on sys.path under pytest)
    return batch(sources)


def _nvcc(path):
    """The PTX of one .cu file for sm_90 (asserting nvcc succeeded)."""
    from test_cuda_nvcc import nvcc_ptx
    rc, err, ptx = nvcc_ptx(path, "sm_90", timeout=900)
    assert rc == 0, err[:4000]
    return ptx


@needs_nvcc
def test_unrolled_cuda_variants_compile_for_real_chains_and_families(tmp_path):
    from burn_cuda.fused import segment_source, segments
    from burn_cuda.kernels.elementwise import family_source, signatures
    from test_cuda_nvcc import _recorded_groups, compile_batched
    srcs = {}
    for ops, dts, outs, pats in _cuda_chains():
        for pat in pats:
            src, name = segment_source(ops, dts, outs, pat, "unrolled")
            assert f"void {name}(" in src and name == f"fused_u{pat}"
            srcs[src] = name
    n_chains = len(srcs)
    # every fused segment the planner offered while running the conformance suite: all
    # inputs contiguous, and all but the first broadcast scalars
    n_seg = 0
    for g in _recorded_groups():
        for ops, dts, outs in segments(g):
            for pat in {0, ((1 << len(dts)) - 2) if dts else 0}:
                src, _ = segment_source(ops, dts, outs, pat, "unrolled")
                srcs.setdefault(src, "segment")
            n_seg += 1
    fam = [family_source(i, o, True) for i, o in signatures()]
    assert all(fam) and all("_u0(" in s and "_c0(" not in s for s in fam)
    srcs.update({s: "family" for s in fam})
    assert n_seg > 200 and len(srcs) > 300
    texts = sorted(srcs)
    assert any("__nv_bfloat16" in s for s in texts) and any("__half" in s for s in texts)
    ptx = compile_batched(texts, tmp_path, "u", 2, arch="sm_90")
    n_kernels = sum(len(re.findall(r"^\.visible \.entry (\w+)\(", t, re.M)) for t in ptx)
    want = sum(len(re.findall(r'extern "C" __global__ void (\w+)\(', s)) for s in texts)
    assert n_kernels == want and n_kernels > 1000, (n_kernels, want)
    print(f"\nnvcc --ptx sm_90: {n_kernels} unrolled kernels ({n_chains} chain variants, {n_seg} segments)")


def _entry(ptx, name):
    m = re.search(rf"\.entry {name}\((.*?)\n}}\n", ptx, re.S)
    assert m, name
    return m.group(1)


@needs_nvcc
def test_8op_chain_unrolled_ptx_issues_every_load_before_any_store(tmp_path):
    """The point of the variant: UNROLL loads of x (plus the three broadcast scalars) are
    in flight together. The one-element variant has one load of x per store."""
    from burn_cuda.fused import segment_source
    ops, dts, outs = chain8_group()
    (tmp_path / "u.cu").write_text(_batch([segment_source(ops, dts, outs, 14, "unrolled")[0],
                                           segment_source(ops, dts, outs, 14)[0],
                                           segment_source(ops, dts, outs, 0, "unrolled")[0]]))
    ptx = _nvcc(tmp_path / "u.cu")
    for name, n_loads, n_stores in (("m0_fused_u14", UNROLL + 3, UNROLL), ("m1_fused_c14", 1 + 3, 1),
                                    ("m2_fused_u0", UNROLL * 4, UNROLL)):
        body = _entry(ptx, name)
        ops_ = re.findall(r"\b(ld|st)\.global(?:\.nc)?\.\w+", body)
        first_store = ops_.index("st")
        # (nvcc may duplicate a store into both paths of tanh's branch: static stores >= dynamic)
        assert ops_.count("ld") == n_loads and ops_.count("st") >= n_stores, (name, ops_)
        assert ops_[:first_store] == ["ld"] * n_loads and "ld" not in ops_[first_store:], (name, ops_)


# -- (b) the OpenCL rendering on burn-wgpu's device -----------------------------------------

_NP = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int32": np.int32, "int64": np.int64,
       "float16": np.float16, "float32": np.float32, "float64": np.float64}


@pytest.fixture(scope="module")
def cl_dc():
    from devices import wgpu_or_skip
    wgpu_or_skip()
    from burn_wgpu.runtime import context
    return context(0)


def _run_unrolled(dc, kernel, n, pat, arrays, out_dtypes, params, L, unroll, offsets):
    """Launch ``kernel`` (a ``_u<pat>`` variant) over n elements: ceil(n / (unroll * L))
    work-groups of L; inputs sit at ``offsets`` in their buffers (bit k of pat: one element).
    Outputs get 64 sentinel elements past n, returned with them."""
    import pyopencl as cl
    mf = cl.mem_flags
    bufs = []
    for x, off in zip(arrays, offsets):
        host = np.concatenate([np.zeros(off, x.dtype), x, np.zeros(3, x.dtype)])
        bufs.append(cl.Buffer(dc.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host))
    outs = [np.full(n + 64, 7, _NP[d]) for d in out_dtypes]
    obufs = [cl.Buffer(dc.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=o) for o in outs]
    modes = [1 if pat >> k & 1 else 0 for k in range(len(arrays))]
    v = index_words("test", (n,), n, modes, [None] * len(arrays), offsets)
    st = v.view(np.dtype((np.void, v.nbytes)))[0]
    kernel.set_args(st, *obufs, *bufs, *[_NP[d](p) for d, p in params])
    groups = -(-n // (unroll * L))
    cl.enqueue_nd_range_kernel(dc.queue, kernel, (groups * L,), (L,))
    for o, b in zip(outs, obufs):
        cl.enqueue_copy(dc.queue, o, b)
    dc.queue.finish()
    return outs


def _inputs(rng, dts, n, pat, kind):
    xs = []
    for k, t in enumerate(dts):
        m = 1 if pat >> k & 1 else n
        if t == "bool":
            xs.append(rng.random(m) < 0.5)
        elif kind == "int":         # integer values (in float dtypes too: exact results)
            lo, hi = (0 if t == "uint8" else -40), 40
            xs.append(rng.integers(lo, hi + 1, m).astype(_NP[t]))
        else:
            xs.append((rng.standard_normal(m) * 2).astype(_NP[t]))
    return xs


def _cl_cases(dc):
    c8, d8, o8 = chain8_group()
    f = np.float64
    cases = [
        ("chain8", c8, d8, o8, (14, 0), "float",
         lambda x, a, b, c: [chain8_numpy(*(v.astype(f) for v in (x, a, b, c)))], [2e-6]),
        ("where3", WHERE3, ["float32"] * 3, [0, 3], (0, 4, 2), "float",
         lambda a, b, c: [a > b, np.where(a > b, a * c, b - c)], [0, 0]),
        ("int32 rem", INT_REM, ["int32"] * 2, [0, 2], (0, 2), "int",
         lambda a, b: [np.remainder(a, b), np.remainder(a, b) * a ^ b], [0, 0]),
        ("int64 rem", INT_REM, ["int64"] * 2, [0, 2], (0,), "int",
         lambda a, b: [np.remainder(a, b), np.remainder(a, b) * a ^ b], [0, 0]),
        ("uint8 rem", INT_REM, ["uint8"] * 2, [0, 2], (0, 2), "int",
         lambda a, b: [np.remainder(a, b), np.remainder(a, b) * a ^ b], [0, 0]),
        ("int8 rem", INT_REM, ["int8"] * 2, [0, 2], (1,), "int",
         lambda a, b: [np.remainder(a, b), np.remainder(a, b) * a ^ b], [0, 0]),
        ("bool", BOOL2, ["bool"] * 2, [0, 2], (0, 1), "int",
         lambda a, b: [a & b, ~(a & b) ^ b], [0, 0]),
        ("clip cast", CLIPCAST, ["float32", "float32", "int32"], [1, 4], (0, 2, 6), "int",
         lambda a, b, c: [np.clip(a * b, -1, 2), np.floor(np.clip(a * b, -1, 2)).astype(np.int32) + c], [0, 0]),
    ]
    if dc.fp64:
        cases.append(("float64", EXPMUL, ["float64"] * 2, [0, 1], (0, 2), "float",
                      lambda a, b: [np.exp(a), np.exp(a) * b], [1e-14, 1e-14]))
    if dc.fp16:
        h = np.float16
        cases.append(("float16", EXPMUL, ["float16"] * 2, [0, 1], (0, 1), "float",
                      lambda a, b: [np.exp(a.astype(h)), (np.exp(a.astype(h)) * b).astype(h)], [2e-3, 4e-3]))
    return cases


def _params(ops, dts):
    from burn.codegen import op_params, out_dtype
    types, ps = list(dts), []
    n_in = len(dts)
    for op, attrs, args in ops:
        ins = [types[k if s == "in" else n_in + k] for s, k in args]
        o = out_dtype(op, ins, attrs)
        ps += op_params(op, attrs, o)
        types.append(o)
    return ps


def _check(got, want, rtol, n, label):
    want = np.asarray(want)
    assert got.shape[0] == n + 64
    tail = got[n:]
    assert (tail == tail.dtype.type(7)).all(), f"{label}: written past n"
    if want.dtype.kind == "f" and rtol:
        np.testing.assert_allclose(got[:n].astype(np.float64), np.broadcast_to(want, (n,)), rtol=rtol,
                                   atol=rtol, err_msg=label)
    else:
        np.testing.assert_array_equal(got[:n], np.broadcast_to(want.astype(got.dtype), (n,)), err_msg=label)


def test_unrolled_opencl_variants_match_numpy_at_every_boundary(cl_dc):
    dc = cl_dc
    rng = np.random.default_rng(7)
    Ls = sorted({64, min(256, dc.local_size)})
    runs = 0
    for label, ops, dts, outs, pats, kind, ref, tols in _cl_cases(dc):
        params = _params(ops, dts)
        for unroll in ((4, 2, 3) if label == "chain8" else (UNROLL,)):
            rk = render_group("t", ops, dts, outs, OPENCL, general=False, unrolled=pats, unroll=unroll)
            src = program_source([rk], OPENCL)
            assert all(f"void t_u{p}(" in src for p in pats)
            for pat in pats:
                kern = dc.kernel(src, f"t_u{pat}")
                for n in SIZES:
                    xs = _inputs(rng, dts, n, pat, kind)
                    offsets = [(5 * k + n) % 7 for k in range(len(dts))]
                    got = _run_unrolled(dc, kern, n, pat, xs, rk.out_dtypes, params, Ls[(n + pat) % len(Ls)],
                                        unroll, offsets)
                    with np.errstate(all="ignore"):
                        want = ref(*xs)
                    for q, (g, w, tol) in enumerate(zip(got, want, tols)):
                        _check(g, w, tol, n, f"{label} u{unroll} pat {pat} n {n} out {q}")
                    runs += 1
    assert runs >= 100


def test_unrolled_kernel_text_loads_first_and_guards_each_element():
    ops, dts, outs = chain8_group()
    src = render_group("f", ops, dts, outs, CUDA, general=False, unrolled=(14,)).source
    lines = src.splitlines()
    loads = [i for i, ln in enumerate(lines) if "in0[" in ln or "in1[" in ln]
    stores = [i for i, ln in enumerate(lines) if "out0[" in ln]
    assert len(loads) == UNROLL + 1 and len(stores) == UNROLL and max(loads) < min(stores)
    assert src.count("in0[") == UNROLL and all(f"i{u} < n ?" in src for u in range(UNROLL))
    assert all(f"if (i{u} < n) {{ out0[i{u}]" in src for u in range(UNROLL))
    # a dialect without work-group ids cannot render the variant, and says so
    import dataclasses
    bare = dataclasses.replace(CUDA, group_id="")
    with pytest.raises(ValueError, match="work-group ids"):
        render_group("f", ops, dts, outs, bare, general=False, unrolled=(0,))
    # no unrolled variants asked for: the sources are what they were (wgpu renders these)
    assert "_u" not in render_group("f", ops, dts, outs, OPENCL, patterns=(0,)).source


# -- (c) burn-cuda's launch selection --------------------------------------------------------

class _RecordingDC:
    """A burn_cuda DeviceContext stand-in: numpy arrays, launches recorded, not run."""
    index = "recording"      # apart from real devices in burn_cuda.fused's cache

    def __init__(self):
        self.cp = np
        self.launches = []

    def function(self, src, name):
        assert f"void {name}(" in src, name
        return name

    def launch(self, fn, n, args, block=256):
        self.launches.append((fn, n, block, -(-n // block)))


@pytest.mark.parametrize("n", [2, 1000, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, 3_000_001])
def test_cuda_run_elementwise_picks_the_unrolled_variant_for_large_contiguous_launches(n):
    pytest.importorskip("burn_cuda")
    from burn_cuda.fused import render_cached
    from burn_cuda.kernels.elementwise import UNROLL_MIN, run_elementwise, use_unrolled
    ops, dts, outs = chain8_group()
    dc = _RecordingDC()
    kernel_for, rk = render_cached(dc, ops, dts, outs)
    x = np.zeros(n, np.float32)
    s = np.zeros((), np.float32)
    params = []
    run_elementwise(dc, kernel_for, (n,), [x, s, s, s], list(rk.out_dtypes), params)
    strided = np.zeros(2 * n, np.float32)[::2]
    run_elementwise(dc, kernel_for, (n,), [strided, s, s, s], list(rk.out_dtypes), params)
    run_elementwise(dc, kernel_for, (n,), [x, x, x, x], list(rk.out_dtypes), params)
    (k1, t1, b1, g1), (k2, t2, b2, g2), (k3, t3, _, g3) = dc.launches
    big = n >= UNROLL_MIN
    assert use_unrolled(n, 14) == big and not use_unrolled(n, None)
    if big:
        # ceil(n / (UNROLL * 256)) blocks of 256: together they cover exactly the n elements
        assert (k1, k3) == ("fused_u14", "fused_u0") and b1 == 256
        assert g1 == g3 == math.ceil(n / (UNROLL * 256)) and (g1 - 1) * UNROLL * 256 < n <= g1 * UNROLL * 256
    else:
        assert (k1, k3) == ("fused_c14", "fused_c0") and g1 == math.ceil(n / 256) and t1 == n
    assert k2 == "fused" and t2 == n and g2 == math.ceil(n / b2)      # strided: the general kernel
    # the fused kernel_for caches each variant, the unrolled one with its elements per thread
    assert kernel_for(14, "unrolled") == ("fused_u14", UNROLL) and kernel_for(14) == "fused_c14"
    assert kernel_for(None, "unrolled") == "fused"


LONE_OPS = r'''
import json, numpy as np, burn, cupy
from burn_cuda import runtime
dev = burn.Device.cuda(0)
seen = []
orig = runtime.DeviceContext.launch
def launch(self, fn, n, args, block=256):
    seen.append([fn.name, int(n), int(block)])
    return orig(self, fn, n, args, block)
runtime.DeviceContext.launch = launch
rng = np.random.default_rng(0)
res = {}
for n in (1000, (1 << 16) + 5, 1_000_003):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    A, B = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
    seen.clear()
    r = burn.relu(A).numpy()
    s = (A + B).numpy()
    t = (A * 2.5).numpy()
    i = (burn.tensor(a > 0, device=dev) & burn.tensor(b > 0, device=dev)).numpy()
    ok = (np.array_equal(r, np.maximum(a, 0)) and np.array_equal(s, a + b)
          and np.array_equal(t, a * np.float32(2.5)) and np.array_equal(i, (a > 0) & (b > 0)))
    res[str(n)] = {"launches": list(seen), "ok": bool(ok)}
res["unrolled"] = [list(u) for u in cupy.UNROLLED]
print(json.dumps(res))
'''


def test_cuda_lone_ops_launch_unrolled_family_kernels_on_the_stand_in(tmp_path):
    pytest.importorskip("burn_cuda")
    from fakecupy import run_probe
    from burn_cuda.kernels.elementwise import UNROLL_MIN
    res = run_probe(tmp_path, LONE_OPS, without_flex=True)
    for n in (1000, (1 << 16) + 5, 1_000_003):
        r = res[str(n)]
        assert r["ok"], r
        names = [name for name, _, _ in r["launches"]]
        assert names and all(name.startswith("k_") for name in names), names
        if n >= UNROLL_MIN:
            assert all(re.fullmatch(r"k_\w+_u\d+", name) for name in names), names
            assert {"k_relu_u0", "k_add_u0", "k_logical_and_u0"} <= set(names), names
            # the threads asked for: ceil(n / UNROLL) in blocks of 256
            assert all(t == -(-n // UNROLL) and b == 256 for _, t, b in r["launches"]), r["launches"]
        else:
            assert all(re.fullmatch(r"k_\w+_c\d+", name) for name in names), names
    # the stand-in checked each unrolled grid against n (exactly ceil(n / (UNROLL * block)))
    assert {u[0] for u in res["unrolled"]} >= {"relu", "add", "logical_and"}
    assert all(g == -(-n // (UNROLL * b)) for _, n, g, b in res["unrolled"])
