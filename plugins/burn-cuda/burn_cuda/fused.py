"""Fused groups on cuda: every run of element-wise ops becomes ONE generated CUDA C kernel.

``compile_group`` splits a ``burn.fusion.FusedGroup`` into segments: maximal
runs of element-wise ops the code generator can render (one kernel launch
each) and the other ops (a matmul, a reduction), which run their ordinary
kernels. An element-wise group is one segment: one launch. A matmul group is
the matmul kernel plus one epilogue kernel; a reduction group one prologue
kernel plus the reduction.

This is burn-wgpu's fused.py with the CUDA dialect: a reader who knows one
knows the other. NVRTC compiles a module in ~10-50 ms (then CuPy's disk cache
serves it), so a group whose output is small is run op by op (with the
already compiled per-op kernels) for its first ``BURN_CUDA_FUSE_AFTER`` calls
(default 1: fused from its second call on, as in every repeated training
step); large groups are fused on the first call. The whole group runs in the
device's scope (its stream and burn's pool).
"""
from __future__ import annotations

import os

from burn.codegen import CUDA, ELEMENTWISE_OPS, op_params, out_dtype, program_source, render_group
from burn.dispatch import registry
from burn.errors import DTypeError

from .kernels import RENDERABLE, _bshape, _dc_of, _name, run_elementwise
from .tensor import dtype_name, numel

LARGE = 1 << 16     # elements: fuse on the first call from this size on


def _fuse_after() -> int:
    try:
        return int(os.environ.get("BURN_CUDA_FUSE_AFTER", "1"))
    except ValueError:
        return 1


_RENDERED: dict = {}


def _struct_key(ops, in_dtypes, outputs):
    return (tuple((op, _name(attrs.get("dtype")) if op in ("cast", "full") else None, tuple(map(tuple, args)))
                  for op, attrs, args in ops), tuple(in_dtypes), tuple(outputs))


def segment_source(ops, in_dtypes, outputs, pat=None):
    """``(source, kernel name)`` of one element-wise chain: the general kernel (``pat`` None,
    any layout) or the variant without index arithmetic for layout pattern ``pat``. What
    the GPU compiles, and what tests/test_cuda_nvcc.py compiles with nvcc."""
    ops = [(op, attrs, [tuple(a) for a in args]) for op, attrs, args in ops]
    if pat is None:
        rk = render_group("fused", ops, list(in_dtypes), list(outputs), CUDA)
        return program_source([rk], CUDA), "fused"
    v = render_group("fused", ops, list(in_dtypes), list(outputs), CUDA, patterns=(pat,), general=False)
    return program_source([v], CUDA), f"fused_c{pat}"


def render_cached(dc, ops, in_dtypes, outputs):
    """``(kernel_for, RenderedKernel)`` of an element-wise chain: ``kernel_for(pattern)``
    is the chain's kernel for a layout pattern (``burn_cuda.kernels.layout_pattern``),
    each variant its own small program compiled on first use. Attribute values are
    run-time arguments, so the key is the chain's structure and dtypes only."""
    key = (dc.index, _struct_key(ops, in_dtypes, outputs))
    hit = _RENDERED.get(key)
    if hit is None:
        rk = render_group("fused", [(op, attrs, [tuple(a) for a in args]) for op, attrs, args in ops],
                          list(in_dtypes), list(outputs), CUDA)
        kernels = {}

        def kernel_for(pat):
            k = kernels.get(pat)
            if k is None:
                k = kernels[pat] = dc.function(*segment_source(ops, in_dtypes, outputs, pat))
            return k
        hit = _RENDERED[key] = (kernel_for, rk)
    return hit


# result dtype of the non-element-wise ops a group may hold (for rendering without values)
_INT_ACC = ("sum", "prod", "cumsum", "cumprod")


def _value_dtype(op, ins, attrs):
    if op in ELEMENTWISE_OPS:
        return _name(out_dtype(op, ins, attrs))
    if op in ("argmax", "argmin") or (op in _INT_ACC and ins[0] in ("bool", "uint8", "int8", "int32")):
        return "int64"
    if op in ("any", "all"):
        return "bool"
    return ins[0] if ins else "float32"


def segments(group):
    """The element-wise segments of ``group`` as ``(ops, in_dtypes, outputs)``, the way
    :class:`_FusedGroup` renders them, with dtypes from the group's metas (no device needed)."""
    plan = compile_group(group)
    if plan is None:
        return []
    n_in = plan.n_in
    types = list(plan.in_dtypes)
    for op, attrs, args in group.ops:
        types.append(_value_dtype(op, [types[k if src == "in" else n_in + k] for src, k in args], attrs))
    out = []
    for ew, js in plan.segs:
        if not ew:
            continue
        local_in, sub_ops, in_dtypes = {}, [], []
        for j in js:
            op, attrs, args = group.ops[j]
            new_args = []
            for src, k in args:
                if src == "op" and k in js:
                    new_args.append(("op", js.index(k)))
                    continue
                slot = k if src == "in" else n_in + k
                if slot not in local_in:
                    local_in[slot] = len(in_dtypes)
                    in_dtypes.append(types[slot])
                new_args.append(("in", local_in[slot]))
            sub_ops.append((op, attrs, new_args))
        out.append((sub_ops, in_dtypes, [js.index(j) for j in js if j in plan.needed]))
    return out


def compile_group(group):
    """A callable running ``group`` with one launch per element-wise run, or None."""
    ops = group.ops
    if not ops or not any(op in ELEMENTWISE_OPS for op, _, _ in ops):
        return None
    n_in = len(group.input_metas)
    in_dtypes = [m.dtype.name for m in group.input_metas]
    if any(t not in RENDERABLE for t in in_dtypes):     # complex: op by op (CuPy ufuncs)
        return None
    # which op results are read outside their own segment, or leave the group
    seg_of = []
    segs = []
    for j, (op, attrs, args) in enumerate(ops):
        ew = op in ELEMENTWISE_OPS
        if ew and segs and segs[-1][0]:
            segs[-1][1].append(j)
        else:
            segs.append((ew, [j]))
        seg_of.append(len(segs) - 1)
    needed = set(group.outputs)
    for j, (op, attrs, args) in enumerate(ops):
        for src, k in args:
            if src == "op" and seg_of[k] != seg_of[j]:
                needed.add(k)
    return _FusedGroup(group, segs, needed, n_in, in_dtypes)


class _FusedGroup:
    def __init__(self, group, segs, needed, n_in, in_dtypes):
        self.group = group
        self.segs = segs
        self.needed = needed
        self.n_in = n_in
        self.in_dtypes = in_dtypes
        self.calls = 0
        self.plan = None
        self.__name__ = "cuda_fused"

    def __call__(self, *inputs):
        with _dc_of(inputs).scope():
            if self.plan == "op_by_op":
                return self._op_by_op(inputs)
            try:
                return self._run(inputs)
            except (KeyError, DTypeError):     # a value the generator cannot hold (complex)
                self.plan = "op_by_op"
                return self._op_by_op(inputs)

    def _run(self, inputs):
        g = self.group
        self.calls += 1
        size = numel(g.output_metas[0].shape) if g.output_metas else 0
        if self.calls <= _fuse_after() and size < LARGE:
            return self._op_by_op(inputs)
        if self.plan is None:
            self.plan = [None] * len(self.segs)
        env = list(inputs) + [None] * len(g.ops)
        n_in = self.n_in
        for i, step in enumerate(self.plan):
            if step is None:       # built on the first fused run: dtypes are those of the values
                step = self.plan[i] = self._build(i, env)
            if step[0] == "ew":
                _, kern, rk, in_slots, out_slots, param_ops, fulls = step
                xs = [env[s] for s in in_slots]
                shape = _bshape([x.shape for x in xs] + [tuple(g.ops[j][1]["shape"]) for j in fulls])
                params = []
                for j, out in param_ops:
                    params += op_params(g.ops[j][0], g.ops[j][1], out)
                dc = _dc_of(xs)
                outs = run_elementwise(dc, kern, shape, xs, list(rk.out_dtypes), params)
                for s, o in zip(out_slots, outs):
                    env[s] = o
            else:
                _, fn, j, in_slots = step
                env[n_in + j] = fn(*[env[s] for s in in_slots], **g.ops[j][1])
        return tuple(env[n_in + j] for j in g.outputs)

    def _build(self, i, env):
        g = self.group
        n_in = self.n_in
        ew, js = self.segs[i]
        if not ew:
            j = js[0]
            op, attrs, args = g.ops[j]
            fn = registry.kernel(op, "cuda")
            prim = registry.ops.get(op)
            if getattr(prim, "is_extension", False):
                fn = prim.adapt(fn)
            return ("op", fn, j, [k if src == "in" else n_in + k for src, k in args])
        types = {}
        local_in, sub_ops, param_ops, fulls, in_slots = {}, [], [], [], []
        for j in js:
            op, attrs, args = g.ops[j]
            new_args, ins = [], []
            for src, k in args:
                slot = k if src == "in" else n_in + k
                if src == "op" and k in js:
                    new_args.append(("op", js.index(k)))
                    ins.append(types[k])
                else:
                    if slot not in local_in:
                        local_in[slot] = len(in_slots)
                        in_slots.append(slot)
                    new_args.append(("in", local_in[slot]))
                    ins.append(dtype_name(env[slot]))
            sub_ops.append((op, attrs, new_args))
            out = _name(out_dtype(op, ins, attrs))
            types[j] = out
            param_ops.append((j, out))
            if op == "full":
                fulls.append(j)
        outs = [js.index(j) for j in js if j in self.needed]
        xs = [env[s] for s in in_slots]
        dc = _dc_of(xs)
        kern, rk = render_cached(dc, sub_ops, [dtype_name(x) for x in xs], outs)
        return ("ew", kern, rk, in_slots, [n_in + js[q] for q in outs], param_ops, fulls)

    def _op_by_op(self, inputs):
        g = self.group
        env = list(inputs)
        for op, attrs, args in g.ops:
            fn = registry.kernel(op, "cuda")
            prim = registry.ops.get(op)
            if getattr(prim, "is_extension", False):
                fn = prim.adapt(fn)
            env.append(fn(*[env[k if src == "in" else self.n_in + k] for src, k in args], **attrs))
        return tuple(env[self.n_in + j] for j in g.outputs)

