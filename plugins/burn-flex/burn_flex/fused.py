"""Fused execution of element-wise groups on numpy: cache-blocked evaluation.

numpy runs one op over the whole array at a time, so an 8-op chain on 4M
floats streams 8 x 16 MB of temporaries through memory. A fused group here
runs the whole chain on one block of ~32K elements at a time (the block's
temporaries stay in L2), writing only the group's outputs to memory. Kernels
are the ordinary flex kernels applied to blocks, so every element-wise op
(including opted-in extensions) fuses without a second implementation.
"""
from __future__ import annotations

import numpy as np

from burn.dispatch import registry

from .dtypes import native

BLOCK = 32768          # elements per block: 128 KiB of float32 per temporary
MIN_FUSED_SIZE = 4 * BLOCK   # below this, blocking costs more Python overhead than it saves


def compile_elementwise(group, backend_name="flex", blocked=True):
    """A callable running ``group`` (a burn.fusion.FusedGroup) block by block, or None.

    ``blocked=False`` runs the ops whole-array in order (matmul epilogues and
    reduction prologues, whose shapes change inside the group)."""
    out_shape = tuple(group.output_metas[0].shape) if group.output_metas else None
    if out_shape is None:
        return None
    size = 1
    for s in out_shape:
        size *= s
    kernels = []
    for name, attrs, args in group.ops:
        fn = registry.kernel(name, backend_name)
        if fn is None:
            return None
        op = registry.ops.get(name)
        if getattr(op, "is_extension", False):
            fn = op.adapt(fn)
        kernels.append((fn, attrs, tuple(args)))
    out_dtypes = [native(m.dtype) for m in group.output_metas]
    outputs = list(group.outputs)
    input_shapes = [tuple(m.shape) for m in group.input_metas]
    flat_ok = all(s == out_shape or _numel(s) == 1 for s in input_shapes)

    def run_whole(*inputs):
        vals = []
        for fn, attrs, args in kernels:
            a = [inputs[k] if src == "in" else vals[k] for src, k in args]
            vals.append(fn(*a, **attrs))
        return tuple(np.asarray(vals[j]) for j in outputs)

    if not blocked or size < MIN_FUSED_SIZE or not flat_ok:
        return run_whole

    def run_blocked(*inputs):
        flat = [x.reshape(-1) if x.size != 1 else x.reshape(()) for x in inputs]
        whole = [x.size == 1 for x in inputs]
        outs = [np.empty(size, dtype=d) for d in out_dtypes]
        for start in range(0, size, BLOCK):
            stop = start + BLOCK
            blk = [x if w else x[start:stop] for x, w in zip(flat, whole)]
            vals = []
            for fn, attrs, args in kernels:
                a = [blk[k] if src == "in" else vals[k] for src, k in args]
                vals.append(fn(*a, **attrs))
            for o, j in zip(outs, outputs):
                o[start:stop] = vals[j]
        return tuple(o.reshape(out_shape) for o in outs)

    return run_blocked


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n
