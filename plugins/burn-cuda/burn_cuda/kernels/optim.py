"""Optimizer updates on cuda: ``burn::adam_update`` and ``burn::sgd_update`` as ONE kernel each.

Without a cuda kernel these extension ops run their reference definitions
(``burn.optim.optimizer``): per parameter and step a cast of the
hyperparameter tensor, ten 0-d slices of it and a dozen element-wise ops,
all recorded, planned and fused by burn on the host. In a small training step
(gpu_check.py's CNN) that recording was the largest host cost of the step.
Here each update is one generated CUDA C kernel per dtype that reads the
hyperparameters from the device tensor and writes the new parameter and
state: one launch, three outputs from burn's pool.

The kernel computes the reference's ops in the reference's order, each one
rounded as the op-by-op program rounds it: float32/float64 with the
``__f*_rn``/``__d*_rn`` intrinsics (never contracted into FMAs, so the result
is what separate kernels give, bit for bit flex's numpy), float16/bfloat16 in
float with a round trip through the storage type after every op (what a
per-op kernel stores). Each hyperparameter is rounded from float64 to the
parameter's dtype once (the reference's ``h.astype(p.dtype)``).
Other dtypes (complex) run the same ops with CuPy's ufuncs.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from burn.codegen.sources import load_source

from ..native import dtype_name
from .elementwise import _dc_of

# dtype -> (C storage type, header, load to compute type, store from compute type,
#           round-trip of a compute value, float64 hyperparameter -> compute value, op suffix)
_T = {
    "float32": ("float", "", "{}", "{}", "{}", "((float){})", "f"),
    "float64": ("double", "", "{}", "{}", "{}", "({})", "d"),
    "float16": ("__half", "#include <cuda_fp16.h>", "__half2float({})", "__float2half_rn({})",
                "__half2float(__float2half_rn({}))", "__half2float(__double2half({}))", "f"),
    "bfloat16": ("__nv_bfloat16", "#include <cuda_bf16.h>", "__bfloat162float({})", "__float2bfloat16_rn({})",
                 "__bfloat162float(__float2bfloat16_rn({}))", "__bfloat162float(__double2bfloat16({}))", "f"),
}
KERNEL_DTYPES = tuple(_T)

ADAM_MODES = {"none": 0, "l2": 1, "decoupled": 2}


def _helpers(dtype: str) -> str:
    """Device functions of the op-by-op arithmetic in ``dtype``: ``MUL ADD SUB DIV SQRT``, each
    result rounded to the storage type (a no-op for float32/float64)."""
    ctype, _, _, _, rt, _, s = _T[dtype]
    c = "double" if s == "d" else "float"
    sq = "__dsqrt_rn" if s == "d" else "__fsqrt_rn"
    ops = {"MUL": f"__{s}mul_rn(a, b)", "ADD": f"__{s}add_rn(a, b)", "SUB": f"__{s}sub_rn(a, b)",
           "DIV": f"__{s}div_rn(a, b)"}
    lines = [f"typedef {c} C;"]
    for name, e in ops.items():
        lines.append(f"__device__ __forceinline__ C {name}(C a, C b) {{ return {rt.format(e)}; }}")
    lines.append(f"__device__ __forceinline__ C SQRT(C a) {{ return {rt.format(sq + '(a)')}; }}")
    return "\n".join(lines)


@lru_cache(maxsize=None)
def _cu(name: str) -> str:
    # CUDA C shipped as package data (cu/*.cu)
    return load_source(__package__, f"cu/{name}")


def _update_source(kind: str, dtype: str) -> tuple:
    """``(CUDA source, kernel name)`` of ``cu/<kind>.cu`` for ``dtype``: the prelude of
    :func:`_helpers`, then #defines for the storage type and its loads and stores."""
    ctype, head, ld, st, _, hp, _ = _T[dtype]
    name = f"burn_optim_{kind}_{dtype}"
    defs = {"T": ctype, "LD(x)": ld.format("(x)"), "ST(x)": st.format("(x)"), "HP(x)": hp.format("(x)")}
    src = "\n".join([head, _helpers(dtype)] + [f"#define {k} {v}" for k, v in defs.items()])
    # the kernel's name carries the dtype literally (CuPy looks kernels up by name in the source)
    return src + "\n" + _cu(f"{kind}.cu").replace("_DTYPE(", f"_{dtype}("), name


@lru_cache(maxsize=None)
def adam_source(dtype: str) -> tuple:
    """``(CUDA source, kernel name)`` of the Adam/AdamW update for ``dtype`` (``cu/adam.cu``): one
    thread per element of contiguous ``p g m v``; ``h`` the ten float64 hyperparameters; ``mode``
    0 none, 1 L2 (``g + p * wd``), 2 decoupled (``p * (1 - lr * wd)``).

    >>> src, name = adam_source("float32")
    >>> assert name == "burn_optim_adam_float32" and "__fmul_rn" in src
    """
    return _update_source("adam", dtype)


@lru_cache(maxsize=None)
def sgd_source(dtype: str) -> tuple:
    """``(CUDA source, kernel name)`` of the SGD-with-momentum update for ``dtype``
    (``cu/sgd.cu``); ``h`` holds ``[lr, weight_decay, momentum, 1 - dampening]``,
    ``first``/``decay``/``nesterov`` are 0/1.

    >>> assert sgd_source("float64")[1] == "burn_optim_sgd_float64"
    """
    return _update_source("sgd", dtype)


def _dc(xs):
    return _dc_of(xs)


def _prepare(dc, arrays, h):
    """Contiguous operands (views of contiguous arrays pass as they are) and a contiguous
    float64 ``h`` (the optimizer's is one already)."""
    cp = dc.cp
    arrays = [a if a.flags.c_contiguous else cp.ascontiguousarray(a) for a in arrays]
    if h.dtype != np.float64 or not h.flags.c_contiguous:
        h = cp.ascontiguousarray(h, dtype=np.float64)
    return arrays, h


def adam_update(p, g, m, v, h, mode="none"):
    """burn::adam_update on cuda: one generated kernel (see the module docstring); returns
    ``(new_p, new_m, new_v)`` as new arrays. Registered for ``burn.optim.Adam`` on cuda.

    Example (on a GPU; what ``burn.optim.Adam(model).step(grads)`` runs per parameter)::

        opt = burn.optim.Adam(model, lr=1e-3)      # model on Device.cuda(0)
        opt.step(loss.backward())
    """
    dc = _dc((p,))
    dt = dtype_name(p)
    with dc.scope():
        cp = dc.cp
        if dt not in _T:
            return _adam_ufuncs(cp, p, g, m, v, h, mode)
        (p, g, m, v), h = _prepare(dc, (p, g, m, v), h)
        outs = [cp.empty(p.shape, p.dtype) for _ in range(3)]
        n = p.size
        if n:
            fn = dc.function(*adam_source(dt))
            dc.launch(fn, n, (np.int64(n), p, g, m, v, h, np.int32(ADAM_MODES[mode]), *outs))
        return tuple(outs)


def sgd_update(p, g, buf, h, mode=("next", False, False)):
    """burn::sgd_update on cuda: one generated kernel; returns ``(new_p, new_buf)``.

    Example (on a GPU; what ``burn.optim.SGD(model, momentum=0.9).step(grads)`` runs)::

        burn.optim.SGD(model, lr=0.01, momentum=0.9).step(loss.backward())
    """
    first, decay, nesterov = mode
    dc = _dc((p,))
    dt = dtype_name(p)
    with dc.scope():
        cp = dc.cp
        if dt not in _T:
            return _sgd_ufuncs(p, g, buf, h, mode)
        (p, g, buf), h = _prepare(dc, (p, g, buf), h)
        outs = [cp.empty(p.shape, p.dtype) for _ in range(2)]
        n = p.size
        if n:
            fn = dc.function(*sgd_source(dt))
            dc.launch(fn, n, (np.int64(n), p, g, buf, h, np.int32(first == "first"), np.int32(bool(decay)),
                              np.int32(bool(nesterov)), *outs))
        return tuple(outs)


def _scalars(h, dtype, k):
    # each hyperparameter rounded to the parameter's dtype, a 0-d device array (the reference's)
    hc = h.astype(dtype)
    return [hc[i] for i in range(k)]


def _adam_ufuncs(cp, p, g, m, v, h, mode):
    """The reference's ops with CuPy's ufuncs (complex parameters: no generated kernel)."""
    lr, b1, omb1, b2, omb2, c1, c2, eps, wd, decay = _scalars(h, p.dtype, 10)
    if mode == "l2":
        g = g + p * wd
    m = m * b1 + g * omb1
    v = v * b2 + g * g * omb2
    step = (m * c1) / (cp.sqrt(v * c2) + eps)
    if mode == "decoupled":
        p = p * decay
    return p - step * lr, m, v


def _sgd_ufuncs(p, g, buf, h, mode):
    first, decay, nesterov = mode
    lr, wd, mom, omd = _scalars(h, p.dtype, 4)
    if decay:
        g = g + p * wd
    b = g.copy() if first == "first" else buf * mom + g * omd
    d = g + b * mom if nesterov else b
    return p - d * lr, b


def optim_kernels() -> dict:
    """``burn::`` optimizer extension op -> cuda kernel, for registration.

    >>> assert set(optim_kernels()) >= {"burn::adam_update", "burn::sgd_update", "burn::adam_update_group"}
    """
    from burn.fused import group_kernel
    return {"burn::adam_update": adam_update, "burn::sgd_update": sgd_update,
            # a group's updates: one recorded op, the single kernel launched per parameter
            "burn::adam_update_group": group_kernel(adam_update, 4),
            "burn::sgd_update_group": group_kernel(sgd_update, 3)}
