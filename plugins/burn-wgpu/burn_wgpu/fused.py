"""Fused groups on wgpu: every run of element-wise ops becomes ONE generated kernel.

``compile_group`` splits a ``burn.fusion.FusedGroup`` into segments: maximal
runs of element-wise ops the code generator can render (one kernel launch
each) and the other ops (a matmul, a reduction), which run their ordinary
kernels. An element-wise group is one segment: one launch. A matmul group is
the matmul kernel plus one epilogue kernel; a reduction group one prologue
kernel plus the reduction.

Compiling costs far more than a launch on most drivers (~0.4 s on PoCL), so a
group whose output is small is run op by op (with the already compiled
per-op kernels) for its first ``BURN_WGPU_FUSE_AFTER`` calls (default 1: it
is fused from its second call on, as in every repeated training step);
large groups are fused on the first call.
"""
from __future__ import annotations

import os
import re

from burn.codegen import ELEMENTWISE_OPS, OPENCL, op_params, out_dtype, program_source, render_group
from burn.dispatch import registry

from .kernels import _name, _bshape, run_elementwise
from .tensor import numel

LARGE = 1 << 16     # elements: fuse on the first call from this size on


def _fuse_after() -> int:
    try:
        return int(os.environ.get("BURN_WGPU_FUSE_AFTER", "1"))
    except ValueError:
        return 1


_RENDERED: dict = {}


def _struct_key(ops, in_dtypes, outputs):
    return (tuple((op, _name(attrs.get("dtype")) if op in ("cast", "full") else None, tuple(map(tuple, args)))
                  for op, attrs, args in ops), tuple(in_dtypes), tuple(outputs))


# -- explicit vectors for CPU devices ---------------------------------------------------------
# PoCL runs a long chain of math one work-item at a time (its work-group vectorizer gives up
# on it): ~10x slower than the same chain on float8 vectors (4M floats, 8 ops: 98 ms vs 9 ms).
# Contiguous float32 chains of ops whose rendered expressions are also valid on vectors get a
# variant where each work-item computes VEC elements (scalar loop for the tail).

VEC = 8
VECTOR_OPS = frozenset({
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "erf", "exp", "expm1",
    "floor", "gelu", "log", "log10", "log1p", "log2", "neg", "positive", "reciprocal", "round", "rsqrt",
    "sigmoid", "silu", "sin", "sinh", "softplus", "sqrt", "square", "tan", "tanh", "trunc", "relu",
    "add", "sub", "mul", "div", "atan2", "copysign", "hypot", "maximum", "minimum"})
_LOAD = re.compile(r"^\s*float (x\d+) = (in\d+)\[(.*) \+ i\];$")
_BCAST = re.compile(r"^\s*float (x\d+) = (in\d+)\[(.*)\];$")
_EXPR = re.compile(r"^\s*float (v\d+) = (.*);$")
_STORE = re.compile(r"^\s*(out\d+)\[i\] = (v\d+|x\d+);$")


def vector_variant(src: str, name: str, ops, in_dtypes, out_dtypes) -> str | None:
    """``src`` plus a kernel ``fused_v<pattern>`` computing VEC elements per work-item, or None
    when the chain is not float32 throughout or a line is not one of the known shapes."""
    if any(op not in VECTOR_OPS for op, _, _ in ops):
        return None
    if any(_name(d) != "float32" for d in list(in_dtypes) + list(out_dtypes)):
        return None
    head = f"__kernel void {name}("
    start = src.find(head)
    if start < 0:
        return None
    sig_end = src.index(") {", start)
    params = src[start + len(head):sig_end]
    body = src[sig_end + 3:src.index("\n}", sig_end)].strip("\n").splitlines()
    if len(body) < 2 or body[0].strip() != "int i = get_global_id(0);" or body[1].strip() != "if (i >= p.v[0]) return;":
        return None
    scalar, vector = body[2:], []
    for line in scalar:
        m = _LOAD.match(line)
        if m:
            vector.append(f"  float{VEC} {m[1]} = vload{VEC}(0, {m[2]} + {m[3]} + i);")
            continue
        m = _BCAST.match(line)
        if m:
            vector.append(f"  float{VEC} {m[1]} = (float{VEC})({m[2]}[{m[3]}]);")
            continue
        m = _EXPR.match(line)
        if m:
            vector.append(f"  float{VEC} {m[1]} = (float{VEC})({m[2].replace('(float)', f'(float{VEC})')});")
            continue
        m = _STORE.match(line)
        if m:
            vector.append(f"  vstore{VEC}({m[2]}, 0, {m[1]} + i);")
            continue
        return None
    tail = "\n".join("    " + ln for ln in scalar)
    return src + f"""
__kernel void {name.replace("fused_c", "fused_v")}({params}) {{
  int i0 = get_global_id(0) * {VEC};
  int n = p.v[0];
  if (i0 >= n) return;
  if (i0 + {VEC} > n) {{
    for (int i = i0; i < n; ++i) {{
{tail}
    }}
    return;
  }}
  int i = i0;
{chr(10).join(vector)}
}}"""


def render_cached(dc, ops, in_dtypes, outputs):
    """``(kernel_for, RenderedKernel)`` of an element-wise chain: ``kernel_for(pattern)``
    is the chain's kernel for a layout pattern (``burn_wgpu.kernels.layout_pattern``),
    each variant its own small program compiled on first use. Attribute values are
    run-time arguments, so the key is the chain's structure and dtypes only."""
    key = (dc.index, _struct_key(ops, in_dtypes, outputs))
    hit = _RENDERED.get(key)
    if hit is None:
        ops = [(op, attrs, [tuple(a) for a in args]) for op, attrs, args in ops]
        rk = render_group("fused", ops, list(in_dtypes), list(outputs), OPENCL)
        kernels = {}

        def kernel_for(pat):
            k = kernels.get(pat)
            if k is None:
                if pat is None:
                    src = program_source([rk], OPENCL)
                    k = dc.kernel(src, "fused")
                else:
                    v = render_group("fused", ops, list(in_dtypes), list(outputs), OPENCL, patterns=(pat,),
                                     general=False)
                    src = program_source([v], OPENCL)
                    vec = vector_variant(src, f"fused_c{pat}", ops, in_dtypes, rk.out_dtypes) if dc.is_cpu else None
                    k = (dc.kernel(vec, f"fused_v{pat}"), VEC) if vec else dc.kernel(src, f"fused_c{pat}")
                kernels[pat] = k
            return k
        hit = _RENDERED[key] = (kernel_for, rk)
    return hit


def compile_group(group):
    """A callable running ``group`` with one launch per element-wise run, or None."""
    ops = group.ops
    if not ops or not any(op in ELEMENTWISE_OPS for op, _, _ in ops):
        return None
    n_in = len(group.input_metas)
    in_dtypes = [m.dtype.name for m in group.input_metas]
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
        self.__name__ = "wgpu_fused"

    def __call__(self, *inputs):
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
                dc = xs[0].dc if xs else _default_dc()
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
            fn = registry.kernel(op, "wgpu")
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
                    ins.append(env[slot].dtype)
            sub_ops.append((op, attrs, new_args))
            out = _name(out_dtype(op, ins, attrs))
            types[j] = out
            param_ops.append((j, out))
            if op == "full":
                fulls.append(j)
        outs = [js.index(j) for j in js if j in self.needed]
        xs = [env[s] for s in in_slots]
        dc = xs[0].dc if xs else _default_dc()
        kern, rk = render_cached(dc, sub_ops, [x.dtype for x in xs], outs)
        return ("ew", kern, rk, in_slots, [n_in + js[q] for q in outs], param_ops, fulls)

    def _op_by_op(self, inputs):
        g = self.group
        env = list(inputs)
        for op, attrs, args in g.ops:
            fn = registry.kernel(op, "wgpu")
            prim = registry.ops.get(op)
            if getattr(prim, "is_extension", False):
                fn = prim.adapt(fn)
            env.append(fn(*[env[k if src == "in" else self.n_in + k] for src, k in args], **attrs))
        return tuple(env[self.n_in + j] for j in g.outputs)


def _default_dc():
    from . import runtime
    return runtime.context(0)
