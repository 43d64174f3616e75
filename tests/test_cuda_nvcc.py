"""Every CUDA kernel burn-cuda can emit compiles with ``nvcc --ptx`` (no GPU needed).

The sources come from the backend's own rendering functions, the ones it
hands to ``cupy.RawModule`` on a GPU:

* ``burn_cuda.kernels.elementwise.family_source`` for every element-wise dtype signature
  (one module per signature with a kernel per op: every op the generator
  renders, in every dtype, with its contiguous/broadcast-scalar variants);
* ``burn_cuda.fused.segment_source`` for the fused groups of real burn programs:
  the conformance suite's programs and a small training loop (linear layers,
  layer_norm, cross-entropy, Adam) are run on flex with the fusion planner on,
  every group the planner offers to ``Backend.compile_group`` is recorded, and
  its element-wise segments are rendered the way burn_cuda.fused does (the
  general kernel and the all-contiguous variant).

* ``burn_cuda.kernels.indexing.scatter_source``: the atomicAdd scatter kernels of
  index_add/scatter_add (float, double, int, long long through unsigned long long).

bfloat16 (``__nv_bfloat16``) is among the family signatures. Matmul, reductions,
scans and movement are CuPy's/cuBLAS's own, so there is nothing else to compile.

The modules are batched into a few .cu files (each module in its own
namespace, kernel names prefixed, preprocessor lines hoisted) and compiled by
parallel nvcc processes. Skipped with the reason when nvcc is absent.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import burn

NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed here")

_KERNEL = re.compile(r'(extern "C" __global__ void )(\w+)\(')


def _recorded_groups():
    """FusedGroups the planner offers flex while running real burn programs."""
    from burn import fusion
    from burn.testing.conformance import cases, run_case
    dev = burn.Device.flex()
    be = dev.backend
    groups = []
    cls = type(be)
    orig = cls.compile_group

    def record(self, g):
        groups.append(g)
        return orig(self, g)

    cls.compile_group = record
    try:
        fusion.clear_plan_cache()
        for c in cases():
            try:
                run_case(c, dev)
            except Exception:      # a failing case is test_conformance_flex's business, not ours
                pass
        _training_program(dev)
    finally:
        cls.compile_group = orig
        fusion.clear_plan_cache()
    return groups


def _training_program(dev):
    """A small CNN + MLP training loop (conv, pooling, layer norm, GELU, cross-entropy, Adam)."""
    import numpy as np
    import burn.nn.functional as F
    nn = burn.nn
    rng = np.random.default_rng(0)
    ad = dev.autodiff()
    model = nn.Sequential(nn.Conv2d(1, 4, 3, device=ad), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(36, 16, device=ad), nn.LayerNorm(16, device=ad), nn.GELU(),
                          nn.Linear(16, 3, device=ad))
    opt = burn.optim.Adam(model, lr=1e-3)
    for _ in range(3):
        x = burn.tensor(rng.standard_normal((5, 1, 8, 8)).astype(np.float32), device=ad)
        y = burn.tensor(rng.integers(0, 3, 5), device=ad)
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
    float(loss.item())


def _reduce_module(g):
    """The CUDA rendering of a reduce group's row / work-group / split kernels
    (``burn.codegen.reduce``, the kernels burn-wgpu runs in OpenCL), or None."""
    from burn.codegen import CUDA
    from burn.codegen.reduce import analyze, render_reduce
    if g.kind != "reduce":
        return None
    shapes = [tuple(m.shape) for m in g.input_metas]
    dtypes = [m.dtype.name for m in g.input_metas]
    try:
        sp = analyze(g, shapes, dtypes)
        return render_reduce(g.ops, g.outputs, sp, dtypes, CUDA, L=256)[0] if sp else None
    except (KeyError, ValueError, TypeError):
        return None


def _all_modules():
    from burn_cuda.fused import segment_source, segments
    from burn_cuda.kernels.indexing import scatter_source
    from burn_cuda.kernels.elementwise import family_source, signatures
    mods = {scatter_source(): "scatter_add"}
    for ins, out in signatures():
        src = family_source(ins, out)
        if src:
            mods[src] = f"family {ins}->{out}"
    n_groups = 0
    for g in _recorded_groups():
        src = _reduce_module(g)
        if src:
            mods.setdefault(src, f"reduce {[o[0] for o in g.ops]}")
        for ops, in_dtypes, outs in segments(g):
            n_groups += 1
            for pat in (None, 0):
                src, _ = segment_source(ops, in_dtypes, outs, pat)
                mods.setdefault(src, f"fused {[o[0] for o in ops]} {in_dtypes}")
    return mods, n_groups


def _batch(sources):
    """One .cu text holding many modules: preprocessor lines hoisted and deduplicated,
    each module in its own namespace with its extern "C" kernels renamed apart."""
    head, body = [], []
    for i, src in enumerate(sources):
        lines = src.split("\n")
        pre = [ln for ln in lines if ln.startswith("#")]
        rest = "\n".join(ln for ln in lines if not ln.startswith("#"))
        for ln in pre:
            if ln not in head:
                head.append(ln)
        body.append(f"namespace m{i} {{\n" + _KERNEL.sub(lambda m: f"{m.group(1)}m{i}_{m.group(2)}(", rest)
                    + "\n}")
    # the NAN guard is one #ifndef block: keep its lines in order
    return "\n".join(head) + "\n" + "\n".join(body) + "\n"


def nvcc_ptx(path, arch="compute_80", timeout=600):
    """``nvcc --ptx`` of one .cu file: ``(returncode, stderr, PTX text)`` (the PTX written beside
    it as ``<path>.ptx``; "" when nvcc failed). Shared by every test that compile-checks CUDA."""
    path = str(path)
    r = subprocess.run([NVCC, "--ptx", "-std=c++17", f"-arch={arch}", path, "-o", path + ".ptx"],
                       capture_output=True, text=True, timeout=timeout)
    ptx = open(path + ".ptx").read() if r.returncode == 0 else ""
    return r.returncode, r.stderr, ptx


def compile_batched(sources, tmp_path, stem, n_files, arch="compute_80"):
    """``sources`` (CUDA modules) as ``n_files`` batched .cu files (:func:`_batch`) compiled by
    parallel nvcc processes; asserts every file compiled (showing nvcc's error lines, not its
    warnings about the generated code's unused values) and returns the PTX texts."""
    paths = []
    for f in range(n_files):
        p = tmp_path / f"{stem}{f}.cu"
        p.write_text(_batch(sources[f::n_files]))
        paths.append(p)
    with ThreadPoolExecutor(max_workers=min(n_files, os.cpu_count() or 1)) as ex:
        results = list(ex.map(lambda p: nvcc_ptx(p, arch, timeout=900), paths))
    errors = [f"{p}:\n" + ("\n".join(re.findall(r".*error.*\n.*\n.*", err)[:10]) or err[:3000])
              for p, (rc, err, _) in zip(paths, results) if rc != 0]
    assert not errors, "nvcc failed:\n" + "\n".join(errors)
    return [ptx for _, _, ptx in results]


def test_every_generated_cuda_kernel_compiles_with_nvcc(tmp_path):
    t0 = time.perf_counter()
    mods, n_groups = _all_modules()
    srcs = sorted(mods)
    n_kernels = sum(len(_KERNEL.findall(s)) for s in srcs)
    assert n_groups > 200 and any("fused" in v for v in mods.values())
    assert any("__half" in s for s in srcs) and any("double" in s for s in srcs)
    assert any("__nv_bfloat16" in s for s in srcs) and any("atomicAdd" in s for s in srcs)
    n_files = 4
    t1 = time.perf_counter()
    ptx = compile_batched(srcs, tmp_path, "batch", n_files)
    t2 = time.perf_counter()
    assert all(ptx)
    print(f"\nnvcc --ptx: {len(srcs)} modules ({n_kernels} kernels, {n_groups} fused segments) in "
          f"{n_files} files: render {t1 - t0:.1f} s, compile {t2 - t1:.1f} s")


def test_batching_keeps_module_kernels_apart():
    """The batch rewriting itself: two modules with the same kernel name stay distinct."""
    from burn.codegen import CUDA, program_source, render_group
    a = program_source([render_group("k", [("exp", {}, [("in", 0)])], ["float32"], [0], CUDA)], CUDA)
    b = program_source([render_group("k", [("exp", {}, [("in", 0)])], ["float16"], [0], CUDA)], CUDA)
    text = _batch([a, b])
    assert 'void m0_k(' in text and 'void m1_k(' in text and text.count("#include <cuda_fp16.h>") == 1


def _reduce_group(ops, shapes, dtypes, outputs):
    from burn.fusion import FusedGroup
    metas = [burn.TensorMeta(tuple(sh), getattr(burn, d)) for sh, d in zip(shapes, dtypes)]
    return FusedGroup("reduce", ops, metas, outputs, [])


def test_parallel_reduce_kernels_compile_for_every_op_and_dtype(tmp_path):
    """Every reduction op in every dtype, a prologue with a written value, mean and var: the
    row, work-group and split kernels of burn.codegen.reduce in the CUDA dialect."""
    ops_ = ["sum", "prod", "max", "min", "argmax", "argmin", "any", "all"]
    groups = []
    for d in ["float32", "float64", "int32", "int8", "uint8", "bool", "int64"]:
        for op in ops_:
            groups.append(_reduce_group([(op, {"axis": (1,), "keepdims": False}, [("in", 0)])], [(3, 50)], [d], [0]))
    ax = {"axis": (1,), "keepdims": True}
    groups.append(_reduce_group([("exp", {}, [("in", 0)]), ("sum", {"axis": None}, [("op", 0)])],
                                [(4, 9)], ["float32"], [0, 1]))
    groups.append(_reduce_group([("sum", ax, [("in", 0)]), ("mul", {}, [("op", 0), ("in", 1)]),
                                 ("sub", {}, [("in", 0), ("op", 1)]), ("mul", {}, [("op", 2), ("op", 2)]),
                                 ("sum", {"axis": (1,), "keepdims": False}, [("op", 3)]),
                                 ("mul", {}, [("op", 4), ("in", 2)])],
                                [(4, 100), (), ()], ["float64"] * 3, [5]))
    srcs = [_reduce_module(g) for g in groups]
    assert all(srcs)
    assert all("__syncthreads();" in s and "fmred_grp(" in s for s in srcs)
    assert all("fmred_comb0(" in s for s in srcs) and "fmred_comb1(" in srcs[-1]     # var: two passes
    path = tmp_path / "reduce.cu"
    path.write_text(_batch(srcs))
    rc, err, _ = nvcc_ptx(path)
    assert rc == 0, err[:3000]
