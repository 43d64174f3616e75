"""Every CUDA kernel burn-cuda can emit compiles with ``nvcc --ptx`` (no GPU needed).

The sources come from the backend's own rendering functions, the ones it
hands to ``cupy.RawModule`` on a GPU:

* ``burn_cuda.kernels.family_source`` for every element-wise dtype signature
  (one module per signature with a kernel per op: every op the generator
  renders, in every dtype, with its contiguous/broadcast-scalar variants);
* ``burn_cuda.fused.segment_source`` for the fused groups of real burn programs:
  the conformance suite's programs and a small training loop (linear layers,
  layer_norm, cross-entropy, Adam) are run on flex with the fusion planner on,
  every group the planner offers to ``Backend.compile_group`` is recorded, and
  its element-wise segments are rendered the way burn_cuda.fused does (the
  general kernel and the all-contiguous variant).

* ``burn_cuda.indexing.scatter_source``: the atomicAdd scatter kernels of
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


def _all_modules():
    from burn_cuda.fused import segment_source, segments
    from burn_cuda.indexing import scatter_source
    from burn_cuda.kernels import family_source, signatures
    mods = {scatter_source(): "scatter_add"}
    for ins, out in signatures():
        src = family_source(ins, out)
        if src:
            mods[src] = f"family {ins}->{out}"
    n_groups = 0
    for g in _recorded_groups():
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


def _nvcc(path):
    r = subprocess.run([NVCC, "--ptx", "-std=c++17", "-arch=compute_80", path, "-o", path + ".ptx"],
                       capture_output=True, text=True, timeout=600)
    return path, r.returncode, r.stderr


def test_every_generated_cuda_kernel_compiles_with_nvcc(tmp_path):
    t0 = time.perf_counter()
    mods, n_groups = _all_modules()
    srcs = sorted(mods)
    n_kernels = sum(len(_KERNEL.findall(s)) for s in srcs)
    assert n_groups > 200 and any("fused" in v for v in mods.values())
    assert any("__half" in s for s in srcs) and any("double" in s for s in srcs)
    assert any("__nv_bfloat16" in s for s in srcs) and any("atomicAdd" in s for s in srcs)
    n_files = 4
    paths = []
    for f in range(n_files):
        p = tmp_path / f"batch{f}.cu"
        p.write_text(_batch(srcs[f::n_files]))
        paths.append(str(p))
    t1 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=min(n_files, os.cpu_count() or 1)) as ex:
        results = list(ex.map(_nvcc, paths))
    t2 = time.perf_counter()
    errors = [f"{p}:\n{err[:3000]}" for p, rc, err in results if rc != 0]
    assert not errors, "nvcc failed:\n" + "\n".join(errors)
    for p in paths:
        assert os.path.getsize(p + ".ptx") > 0
    print(f"\nnvcc --ptx: {len(srcs)} modules ({n_kernels} kernels, {n_groups} fused segments) in "
          f"{n_files} files: render {t1 - t0:.1f} s, compile {t2 - t1:.1f} s")


def test_batching_keeps_module_kernels_apart():
    """The batch rewriting itself: two modules with the same kernel name stay distinct."""
    from burn.codegen import CUDA, program_source, render_group
    a = program_source([render_group("k", [("exp", {}, [("in", 0)])], ["float32"], [0], CUDA)], CUDA)
    b = program_source([render_group("k", [("exp", {}, [("in", 0)])], ["float16"], [0], CUDA)], CUDA)
    text = _batch([a, b])
    assert 'void m0_k(' in text and 'void m1_k(' in text and text.count("#include <cuda_fp16.h>") == 1
