"""The aligned-vector element-wise kernels (``name_v<pattern>`` of ``burn.codegen.render_group``).

Thread t computes elements 4t .. 4t+3 of contiguous inputs with ONE aligned vector load per
non-scalar input (float4/int4 for 4-byte types, 8 bytes as uint2 for float16/bfloat16, two
double2/longlong2 for 8-byte types, uchar4/char4 for 1-byte types), every load before any
computation and every computation before the vector stores; the thread t == n / 4 computes
the n % 4 last elements with scalar code. burn-cuda launches them under ``BURN_CUDA_EW=vector``
(``burn_cuda.kernels.elementwise.EW_FORM``) where every array is aligned. This file checks:

* (a) they compile with ``nvcc --ptx -arch=sm_90`` for the chains and dtypes of
  tests/test_codegen_unrolled.py, every recorded fused segment of the conformance suite and
  burn-cuda's per-op family modules; the PTX of the 8-op chain holds one ``ld.global.v4.f32``
  per non-scalar input and a ``st.global.v4`` store;
* (b) their CUDA C, built with g++ through tests/cuda_on_cpu.py's shim and run thread by
  thread on the CPU, computes numpy's results (and exactly what the one-element ``name_c``
  kernel computes) for n in {1, 3, 4, 5, 1023, 1024, 1025, 4099}, with broadcast scalars,
  several outputs, mixed widths, and nothing written past n;
* (c) burn-cuda's launch selection under each ``BURN_CUDA_EW`` value, the alignment fallback
  (a view offset by one element never takes the vector form) and lone ops on the numpy
  stand-in for CuPy (tests/fakecupy.py, which checks the vector grid and the alignment).

Skips say why: no nvcc, no g++. A GPU run is not part of this file.
"""
from __future__ import annotations

import ctypes
import math
import re

import numpy as np
import pytest

from burn.codegen import CUDA, VECTOR, op_params, out_dtype, program_source, render_group, vector_bytes
from cuda_on_cpu import GXX, SHIM, VECTOR_SHIM, build_library
from test_codegen_unrolled import (BOOL2, CLIPCAST, EXPMUL, INT_REM, NVCC, WHERE3, _batch, _cuda_chains, _nvcc,
                                   chain8_group, chain8_numpy)


@pytest.fixture(scope="module", autouse=True)
def _through_the_planner():
    # these tests read the groups the fusion planner makes of small flushes, which the eager
    # path otherwise runs op by op (burn.graph.run_small_flush)
    import burn.graph
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(burn.graph, "SMALL_FLUSH_NODES", 0)
        yield


needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed here")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ is not installed here")
SIZES = (1, 3, 4, 5, 1023, 1024, 1025, 4099)


# -- (a) nvcc ---------------------------------------------------------------------------------

@needs_nvcc
def test_vector_cuda_variants_compile_for_real_chains_segments_and_families(tmp_path):
    from burn_cuda.fused import segment_source, segments
    from burn_cuda.kernels.elementwise import family_source, signatures
    from test_cuda_nvcc import _recorded_groups, compile_batched
    srcs = {}
    for ops, dts, outs, pats in _cuda_chains():
        for pat in pats:
            src, name = segment_source(ops, dts, outs, pat, "vector")
            assert name == f"fused_v{pat}" and f"void {name}(" in src
            srcs[src] = name
    n_seg = 0
    for g in _recorded_groups():
        for ops, dts, outs in segments(g):
            for pat in {0, ((1 << len(dts)) - 2) if dts else 0}:
                srcs.setdefault(segment_source(ops, dts, outs, pat, "vector")[0], "segment")
            n_seg += 1
    fam = [family_source(i, o, vector=True) for i, o in signatures()]
    assert all(fam) and all("_v0(" in s and "_u0(" not in s and "_c0(" not in s for s in fam)
    srcs.update({s: "family" for s in fam})
    texts = sorted(srcs)
    # every storage width's vector type appears: the test covers each load/store spelling
    for vec in ("float4", "int4", "double2", "longlong2", "uint2", "uchar4", "char4", "__ushort_as_bfloat16",
                "__half_as_ushort"):
        assert any(vec in s for s in texts), vec
    assert n_seg > 200 and len(texts) > 300
    ptx = compile_batched(texts, tmp_path, "v", 2, arch="sm_90")
    n_kernels = sum(len(re.findall(r"^\.visible \.entry (\w+)\(", t, re.M)) for t in ptx)
    want = sum(len(re.findall(r'extern "C" __global__ void (\w+)\(', s)) for s in texts)
    assert n_kernels == want and n_kernels > 1000, (n_kernels, want)
    print(f"\nnvcc --ptx sm_90: {n_kernels} vector kernels ({n_seg} segments)")


@needs_nvcc
def test_8op_chain_vector_ptx_has_one_v4_load_per_input_and_a_v4_store(tmp_path):
    """The point of the variant: 16 bytes per load instruction (PyTorch's float4). Pattern
    14 reads x as a vector and the three broadcast scalars once; pattern 0 reads four vectors."""
    from burn_cuda.fused import segment_source
    ops, dts, outs = chain8_group()
    (tmp_path / "v.cu").write_text(_batch([segment_source(ops, dts, outs, 14, "vector")[0],
                                           segment_source(ops, dts, outs, 0, "vector")[0],
                                           segment_source(ops, dts, outs, 14)[0]]))
    text = _nvcc(tmp_path / "v.cu")
    v4_load = r"ld\.global(?:\.nc)?\.v4\.(?:f32|b32)"
    v4_store = r"st\.global\.v4\.(?:f32|b32)"
    for name, n_vec in (("m0_fused_v14", 1), ("m1_fused_v0", 4), ("m2_fused_c14", 0)):
        m = re.search(rf"\.entry {name}\((.*?)\n}}\n", text, re.S)
        assert m, name
        body = m.group(1)
        loads = re.findall(v4_load, body)
        stores = [mm.start() for mm in re.finditer(v4_store, body)]
        assert len(loads) == n_vec, (name, loads)
        if n_vec:
            # (nvcc may duplicate the store into both paths of tanh's branch)
            assert stores, name
            last_load = max(mm.start() for mm in re.finditer(v4_load, body))
            assert last_load < min(stores), name
        else:
            assert not stores, name


def test_vector_kernel_text_is_cuda_only_and_loads_before_computing():
    ops, dts, outs = chain8_group()
    src = render_group("f", ops, dts, outs, CUDA, general=False, vector=(14,)).source
    lines = src.splitlines()
    loads = [i for i, ln in enumerate(lines) if "reinterpret_cast<const float4*>" in ln]
    first_op = min(i for i, ln in enumerate(lines) if "v0_0 =" in ln)
    stores = [i for i, ln in enumerate(lines) if "reinterpret_cast<float4*>(out0" in ln]
    assert len(loads) == 1 and len(stores) == 1 and loads[0] < first_op < stores[0]
    assert src.count("exp(") == VECTOR + 1     # four vector lanes and the scalar tail
    from burn.codegen import OPENCL
    with pytest.raises(ValueError, match="CUDA C only"):
        render_group("f", ops, dts, outs, OPENCL, general=False, vector=(0,))
    assert [vector_bytes(d) for d in ("bool", "int8", "float16", "bfloat16", "float32", "int32", "float64",
                                      "int64")] == [4, 4, 8, 8, 16, 16, 16, 16]


# -- (b) the CUDA C on the CPU ----------------------------------------------------------------

def _np_dtype(d):
    if d == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(np.bool_ if d == "bool" else d)


def _aligned(n, dtype, fill=0):
    """An array of n elements starting on a 64-byte boundary (what cudaMalloc guarantees)."""
    dt = _np_dtype(dtype)
    buf = np.zeros(n * dt.itemsize + 64, np.uint8)
    off = (-buf.ctypes.data) % 64
    a = buf[off:off + n * dt.itemsize].view(dt)
    a.view(np.uint8)[:] = fill
    return a


def _f32(h):
    return h.astype(np.float32)


# (label, ops, in_dtypes, outputs, patterns, kind, numpy reference, rtol per output)
def _cases():
    c8, d8, o8 = chain8_group()
    f64 = np.float64

    def c8_half(dt):
        def ref(x, a, b, c):
            with np.errstate(all="ignore"):
                y = chain8_numpy(*(_f32(v) for v in (x, a, b, c)))
            return [y.astype(np.float32).astype(_np_dtype(dt))]
        return ref

    def where3(a, b, c):
        return [a > b, np.where(a > b, a * c, b - c)]

    def rem(a, b):
        return [np.remainder(a, b), np.remainder(a, b) * a ^ b]

    def expmul(a, b):
        e = np.exp(_f32(a))
        return [e.astype(np.float16), (e * b).astype(np.float16)]
    return [
        ("chain8 float32", c8, d8, o8, (14, 0), "float",
         lambda x, a, b, c: [chain8_numpy(*(v.astype(f64) for v in (x, a, b, c)))], [2e-6]),
        ("chain8 float16", c8, ["float16"] * 4, o8, (14, 0), "float", c8_half("float16"), [1e-3]),
        ("chain8 bfloat16", c8, ["bfloat16"] * 4, o8, (14,), "float", c8_half("bfloat16"), [8e-3]),
        ("where3 float32", WHERE3, ["float32"] * 3, [0, 3], (0, 4, 2), "float", where3, [0, 2e-7]),
        ("where3 float64", WHERE3, ["float64"] * 3, [0, 3], (0, 2), "float", where3, [0, 1e-15]),
        ("where3 bfloat16", WHERE3, ["bfloat16"] * 3, [0, 3], (0, 4), "int", where3, [0, 0]),
        ("int32 rem", INT_REM, ["int32"] * 2, [0, 2], (0, 2), "int", rem, [0, 0]),
        ("int64 rem", INT_REM, ["int64"] * 2, [0, 2], (0, 1), "int", rem, [0, 0]),
        ("int8 rem", INT_REM, ["int8"] * 2, [0, 2], (0, 2), "int", rem, [0, 0]),
        ("uint8 rem", INT_REM, ["uint8"] * 2, [0, 2], (0,), "int", rem, [0, 0]),
        ("bool", BOOL2, ["bool"] * 2, [0, 2], (0, 1), "int", lambda a, b: [a & b, ~(a & b) ^ b], [0, 0]),
        ("clip cast", CLIPCAST, ["float32", "float32", "int32"], [1, 4], (0, 2, 6), "int",
         lambda a, b, c: [np.clip(a * b, -1, 2), np.floor(np.clip(a * b, -1, 2)).astype(np.int32) + c], [0, 0]),
        ("exp mul float16 float32", EXPMUL, ["float16", "float32"], [0, 1], (0, 2), "float", expmul, [1e-3, 1e-3]),
    ]


def _params(ops, dts):
    types, ps = list(dts), []
    for op, attrs, args in ops:
        ins = [types[k if s == "in" else len(dts) + k] for s, k in args]
        o = out_dtype(op, ins, attrs)
        ps += op_params(op, attrs, o)
        types.append(o)
    return ps


def _driver(name, rk, in_dtypes):
    """``run_<name>(threads, words, outs, ins, params)``: every thread of the launch in turn."""
    c, S = CUDA.vtype, CUDA.ctype
    args = [f"({S(d)}*)o[{q}]" for q, d in enumerate(rk.out_dtypes)]
    args += [f"(const {S(d)}*)in[{k}]" for k, d in enumerate(in_dtypes)]
    args += [f"({c(d)})ps[{i}]" for i, d in enumerate(rk.param_dtypes)]
    return f"""extern "C" void run_{name}(long long threads, const int* w, void** o, void** in, const double* ps) {{
    burn_idx{rk.words} p; std::memcpy(p.v, w, sizeof(p.v));
    blockDim.x = 256;
    for (long long t = 0; t < threads; ++t) {{
        blockIdx.x = (unsigned)(t / 256); threadIdx.x = (unsigned)(t % 256);
        {name}(p, {", ".join(args)});
    }}
}}"""


def _library(tmp_path, cases):
    """One g++ library holding k<i>_c<pat> and k<i>_v<pat> of every case, and a driver of each."""
    kernels, drivers = [], []
    for i, (label, ops, dts, outs, pats, *_r) in enumerate(cases):
        rk = render_group(f"k{i}", ops, dts, outs, CUDA, general=False, patterns=pats, vector=pats)
        kernels.append(rk)
        for pat in pats:
            drivers += [_driver(f"k{i}_c{pat}", rk, dts), _driver(f"k{i}_v{pat}", rk, dts)]
    src = program_source(kernels, CUDA)
    # the shim stands in for the toolkit's headers
    src = "\n".join(ln for ln in src.splitlines() if not ln.startswith("#include <cuda_"))
    return build_library(tmp_path, "vec", SHIM + VECTOR_SHIM + src + "\n" + "\n".join(drivers)), kernels


def _inputs(rng, dts, n, pat, kind):
    xs = []
    for k, t in enumerate(dts):
        m = 1 if pat >> k & 1 else n
        if t == "bool":
            v = rng.random(m) < 0.5
        elif kind == "int":         # integer values (in float dtypes too: exact results)
            v = rng.integers(0 if t == "uint8" else -40, 41, m)
        else:
            v = rng.standard_normal(m) * 2
        a = _aligned(m, t)
        a[:] = v.astype(_np_dtype(t))
        xs.append(a)
    return xs


def _launch(lib, name, per, n, xs, out_dtypes, params):
    from burn_cuda.kernels.elementwise import index_words
    outs = [_aligned(n + 64, d, fill=7) for d in out_dtypes]
    w = np.ascontiguousarray(index_words((n,), xs), np.int32)
    threads = -(-(-(-n // per)) // 256) * 256       # whole blocks, as a GPU launches them
    vp = ctypes.c_void_p
    o = (vp * len(outs))(*[a.ctypes.data for a in outs])
    i = (vp * max(1, len(xs)))(*[a.ctypes.data for a in xs])
    ps = np.array([float(v) for _, v in params] or [0.0], np.float64)
    getattr(lib, f"run_{name}")(ctypes.c_longlong(threads), w.ctypes.data_as(vp), o, i, ps.ctypes.data_as(vp))
    return outs


@needs_gxx
def test_vector_kernels_cuda_c_on_the_cpu_match_numpy_and_the_plain_kernel(tmp_path):
    cases = _cases()
    lib, _ = _library(tmp_path, cases)
    rng = np.random.default_rng(11)
    runs = 0
    for i, (label, ops, dts, outs, pats, kind, ref, tols) in enumerate(cases):
        params = _params(ops, dts)
        out_dtypes = render_group("t", ops, dts, outs, CUDA, general=False, patterns=(0,)).out_dtypes
        for pat in pats:
            for n in SIZES:
                xs = _inputs(rng, dts, n, pat, kind)
                got = _launch(lib, f"k{i}_v{pat}", VECTOR, n, xs, out_dtypes, params)
                plain = _launch(lib, f"k{i}_c{pat}", 1, n, xs, out_dtypes, params)
                with np.errstate(all="ignore"):
                    want = ref(*[np.asarray(x) for x in xs])
                for q, (g, p, wv, tol) in enumerate(zip(got, plain, want, tols)):
                    lbl = f"{label} v{pat} n {n} out {q}"
                    # nothing written past n (the sentinel bytes stay)
                    assert (g[n:].view(np.uint8) == 7).all(), f"{lbl}: written past n"
                    # the same expressions per element: the plain kernel's bits exactly
                    assert g[:n].tobytes() == p[:n].tobytes(), lbl
                    wv = np.broadcast_to(np.asarray(wv), (n,))
                    if g.dtype.kind == "f" or g.dtype == _np_dtype("bfloat16"):
                        np.testing.assert_allclose(g[:n].astype(np.float64), wv.astype(np.float64), rtol=tol,
                                                   atol=tol, err_msg=lbl)
                    else:
                        np.testing.assert_array_equal(g[:n], wv.astype(g.dtype), err_msg=lbl)
                runs += 1
    assert runs >= 150, runs


@needs_gxx
def test_cpu_harness_catches_a_wrong_vector_lane(tmp_path):
    """The comparison above can fail: a kernel whose stores swap two lanes is caught."""
    ops, dts, outs = chain8_group()
    rk = render_group("bad", ops, dts, outs, CUDA, general=False, vector=(14,))
    swapped = rk.source.replace("make_float4(v7_0, v7_1, v7_2, v7_3)", "make_float4(v7_1, v7_0, v7_2, v7_3)")
    assert swapped != rk.source
    rk.source = swapped
    src = program_source([rk], CUDA)
    lib = build_library(tmp_path, "bad", SHIM + VECTOR_SHIM + src + "\n" + _driver("bad_v14", rk, dts))
    rng = np.random.default_rng(1)
    xs = _inputs(rng, dts, 8, 14, "float")
    got = _launch(lib, "bad_v14", VECTOR, 8, xs, ["float32"], [])[0][:8]
    want = chain8_numpy(*(x.astype(np.float64) for x in xs))
    assert not np.allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(got[[1, 0, 2, 3, 5, 4, 6, 7]], want, rtol=2e-6)     # in both vectors


# -- (c) burn-cuda's launch selection ----------------------------------------------------------

class _RecordingDC:
    """A burn_cuda DeviceContext stand-in: numpy arrays, launches recorded, not run."""
    index = "recording-vector"

    def __init__(self):
        self.cp = np
        self.launches = []

    def function(self, src, name):
        assert f"void {name}(" in src, name
        return name

    def launch(self, fn, n, args, block=256):
        self.launches.append((fn, n, block))


@pytest.fixture
def ew_form():
    from burn_cuda.kernels import elementwise as kernels
    old = kernels.EW_FORM
    yield kernels
    kernels.EW_FORM = old


@pytest.mark.parametrize("n", [5, 1000, 1 << 16, 3_000_001])
def test_fused_launch_takes_the_form_burn_cuda_ew_names(ew_form, n):
    from burn_cuda.fused import render_cached
    from burn_cuda.kernels.elementwise import UNROLL, UNROLL_MIN
    ops, dts, outs = chain8_group()
    dc = _RecordingDC()
    kernel_for, rk = render_cached(dc, ops, dts, outs)
    x = _aligned(n, "float32")
    s = _aligned(1, "float32")
    shifted = _aligned(n + 1, "float32")[1:]     # one element past a 64-byte boundary: 4-byte aligned
    strided = np.zeros(2 * n, np.float32)[::2]
    seen = {}
    for form in ("auto", "plain", "unrolled", "vector"):
        ew_form.EW_FORM = form
        for label, ins in (("aligned", [x, s, s, s]), ("shifted", [shifted, s, s, s]),
                           ("strided", [strided, s, s, s]), ("all", [x, x, x, x])):
            dc.launches.clear()
            from burn_cuda.kernels.elementwise import LAST_FORM, run_elementwise
            run_elementwise(dc, kernel_for, (n,), ins, list(rk.out_dtypes), [])
            (k, threads, block), = dc.launches
            seen[form, label] = (k, threads, LAST_FORM[0])
    auto_u = n >= UNROLL_MIN
    pat = {"aligned": 14, "shifted": 14, "all": 0}
    for label in ("aligned", "shifted", "all"):
        p = pat[label]
        u = (f"fused_u{p}", -(-n // UNROLL), "unrolled")
        c = (f"fused_c{p}", n, "plain")
        assert seen["auto", label] == (u if auto_u else c)
        assert seen["plain", label] == c and seen["unrolled", label] == u
    # the vector form where every array is aligned; the view offset by one element falls back
    assert seen["vector", "aligned"] == ("fused_v14", -(-n // VECTOR), "vector")
    assert seen["vector", "all"] == ("fused_v0", -(-n // VECTOR), "vector")
    assert seen["vector", "shifted"] == seen["auto", "shifted"]
    for form in ("auto", "plain", "unrolled", "vector"):
        assert seen[form, "strided"] == ("fused", n, "general")
    # an output that is not aligned (a caller's buffer) falls back as well
    from burn_cuda.kernels.elementwise import elementwise_form, vector_aligned
    ew_form.EW_FORM = "vector"
    assert elementwise_form(n, 14, [x, s], [shifted]) == ("unrolled" if auto_u else "plain")
    assert vector_aligned([x, s, x[:0]]) and (n < 2 or not vector_aligned([shifted]))
    ew_form.EW_FORM = "fastest"
    with pytest.raises(Exception, match="BURN_CUDA_EW"):
        run_elementwise(dc, kernel_for, (n,), [x, s, s, s], list(rk.out_dtypes), [])
    # the fused kernel_for caches each form with its elements per thread
    assert kernel_for(14, "vector") == ("fused_v14", VECTOR) and kernel_for(14, "plain") == "fused_c14"
    assert kernel_for(14, "unrolled") == ("fused_u14", UNROLL) and kernel_for(None, "vector") == "fused"


def test_family_kernel_for_gives_each_form(ew_form):
    from burn_cuda.kernels.elementwise import UNROLL, family_kernel_for
    dc = _RecordingDC()
    kf = family_kernel_for(dc, "add", ("float16", "float16"), "float16")
    assert kf(1, "vector") == ("k_add_v1", VECTOR) and kf(1, "unrolled") == ("k_add_u1", UNROLL)
    assert kf(0) == "k_add_c0" and kf(3, "vector") == "k_add"       # all-scalar: the general kernel
    with pytest.raises(Exception, match="kernel form"):
        kf(0, "wide")


LONE_OPS = r'''
import json, os, numpy as np, burn, cupy
from burn_cuda import runtime
from burn_cuda.kernels import elementwise as kernels
dev = burn.Device.cuda(0)
seen = []
orig = runtime.DeviceContext.launch
def launch(self, fn, n, args, block=256):
    seen.append([fn.name, int(n), int(block)])
    return orig(self, fn, n, args, block)
runtime.DeviceContext.launch = launch
rng = np.random.default_rng(0)
res = {"env": kernels.EW_FORM}
for n in (5, 1000, (1 << 16) + 5):
    a = rng.standard_normal(n + 1).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    h = rng.standard_normal(n).astype(np.float16)
    A, B, H = burn.tensor(a[:n], device=dev), burn.tensor(b, device=dev), burn.tensor(h, device=dev)
    seen.clear()
    r = burn.relu(A).numpy()
    s = (A + B).numpy()
    t = (A * 2.5).numpy()
    e = burn.exp(H).numpy()
    i = (burn.tensor(a[:n] > 0, device=dev) & burn.tensor(b > 0, device=dev)).numpy()
    ok = (np.array_equal(r, np.maximum(a[:n], 0)) and np.array_equal(s, a[:n] + b)
          and np.array_equal(t, a[:n] * np.float32(2.5)) and np.array_equal(i, (a[:n] > 0) & (b > 0))
          and np.allclose(e.astype(np.float32), np.exp(h.astype(np.float32)), rtol=1e-3))
    launches = list(seen)
    # a view one element into a device array: not 16-byte aligned, so never the vector form
    full = cupy.asarray(a)
    view = full[1:]
    aligned_view = view.data.ptr % 16 == 0
    rv = kernels.elementwise("relu")(view)
    form = kernels.LAST_FORM[0]
    ok = ok and np.array_equal(np.asarray(rv), np.maximum(a[1:], 0))
    res[str(n)] = {"launches": launches, "ok": bool(ok), "view_form": form, "view_aligned": bool(aligned_view)}
res["vectored"] = [list(u) for u in cupy.VECTORED]
print(json.dumps(res))
'''


@pytest.mark.parametrize("form", ["vector", "plain"])
def test_lone_ops_launch_vector_family_kernels_on_the_stand_in(tmp_path, monkeypatch, form):
    pytest.importorskip("burn_cuda")
    from fakecupy import run_probe
    from burn_cuda.kernels.elementwise import UNROLL_MIN
    monkeypatch.setenv("BURN_CUDA_EW", form)
    res = run_probe(tmp_path, LONE_OPS, without_flex=True)
    assert res["env"] == form
    for n in (5, 1000, (1 << 16) + 5):
        r = res[str(n)]
        assert r["ok"], r
        names = [name for name, _, _ in r["launches"]]
        assert names and all(name.startswith("k_") for name in names), names
        # (the fallback is what auto takes)
        assert not r["view_aligned"] and r["view_form"] == ("unrolled" if n >= UNROLL_MIN and form == "vector"
                                                            else "plain"), r
        if form == "vector":
            assert all(re.fullmatch(r"k_\w+_v\d+", name) for name in names), names
            assert {"k_relu_v0", "k_add_v0", "k_mul_v2", "k_exp_v0", "k_logical_and_v0"} <= set(names), names
            assert all(t == -(-n // VECTOR) and b == 256 for _, t, b in r["launches"]), r["launches"]
        else:
            assert all(re.fullmatch(r"k_\w+_c\d+", name) for name in names), names
    if form == "vector":
        # the stand-in checked each vector grid (ceil(n / (VECTOR * block))) and every array's alignment
        assert {u[0] for u in res["vectored"]} >= {"relu", "add", "exp", "logical_and"}
        assert all(g == math.ceil(n / (VECTOR * b)) for _, n, g, b in res["vectored"])
    else:
        assert res["vectored"] == []
