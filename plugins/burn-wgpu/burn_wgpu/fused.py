"""Fused groups on wgpu: every run of element-wise ops becomes ONE generated kernel.

``compile_group`` splits a ``burn.fusion.FusedGroup`` into segments: maximal
runs of element-wise ops the code generator can render (one kernel launch
each) and the other ops (a matmul, a reduction), which run their ordinary
kernels. An element-wise group is one segment: one launch. A reduction or
matmul group is one kernel too: a reduce group (prologue, reduction, epilogue, second
passes such as var's) goes to the reduction path, :func:`burn_wgpu.kernels.reduce.fused_reduction`;
a matmul group's epilogue is evaluated at the matmul kernel's store (:class:`_FusedMatmul`);
groups these cannot take (a
float16 chain, batch dims that do not collapse, ...) keep the segmented path
(prologue kernel + reduction, matmul + epilogue kernel).

Compiling costs far more than a launch on most drivers (~0.4 s on PoCL), so a
group whose output is small is run op by op (with the already compiled
per-op kernels) for its first ``BURN_WGPU_FUSE_AFTER`` calls (default 1: it
is fused from its second call on, as in every repeated training step);
large groups are fused on the first call.
"""
from __future__ import annotations

import re

import numpy as np

from burn.codegen.dialect import DTYPE_INFO
from burn.codegen import (ELEMENTWISE_OPS, OPENCL, op_params, out_dtype, program_source, render_group,
                          supports)
from burn.codegen.segments import LARGE, SegmentedGroup, plan_group
from burn.codegen.segments import fuse_after as _shared_fuse_after
from burn.codegen.segments import struct_key as _struct_key

from .kernels.elementwise import _bshape, _name
from .kernels.linear import _linear_relu_2, matmul
from .kernels.reduce import fused_reduction
from .kernels.source import library_source, part_of
from .native import broadcast_strides as _broadcast_strides
from .native import scalar_args as _scalar_args
from .native import empty, numel


def _fuse_after() -> int:
    return _shared_fuse_after("BURN_WGPU_FUSE_AFTER")


_RENDERED: dict = {}


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
    is the chain's kernel for a layout pattern (``burn_wgpu.native.layout_pattern``),
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
    plan = plan_group(group)
    if plan is None:
        return None
    if any(d not in DTYPE_INFO for d in plan[3] + [m.dtype.name for m in group.output_metas]):
        return None     # no generated code for these dtypes: op by op, with a clear error
    if not _complex_renderable(group, plan[3]):
        return None     # e.g. floor of a complex value: op by op, where its kernel raises a DTypeError
    fg = _FusedGroup(group, *plan)
    if group.kind == "reduce":
        return fused_reduction(group, fg) or fg
    if _matmul_group(group):
        return _FusedMatmul(group, fg)
    return fg


_BODY = re.compile(r"^  \S+ v\d+ = .*;$")
_RED_DTYPE = {"argmax": "int64", "argmin": "int64", "any": "bool", "all": "bool"}


def _complex_renderable(group, in_dtypes) -> bool:
    """False when a complex value meets an element-wise op numpy does not define on complex
    numbers (the core's meta rules let floor/relu/clip... of complex tensors through)."""
    types, n = list(in_dtypes), len(in_dtypes)
    for op, attrs, args in group.ops:
        ins = [types[k if src == "in" else n + k] for src, k in args]
        if op in ELEMENTWISE_OPS:
            out = _name(out_dtype(op, ins, attrs))
            if any(d.startswith("complex") for d in ins + [out]) and not supports(op, ins, OPENCL, attrs):
                return False
        else:       # a matmul or reduction: its result dtype (complex sums stay complex)
            out = _RED_DTYPE.get(op, ins[0] if ins else "float32")
        types.append(out)
    return True


class _FusedGroup(SegmentedGroup):
    backend = "wgpu"
    fuse_after_var = "BURN_WGPU_FUSE_AFTER"
    # sizes are kernel arguments (the index struct) and kernels are cached by structure, dtypes
    # and layout pattern, so one runs every size of its relative key (burn.fusion rebinding):
    # a new batch size or sequence length launches the already compiled kernel
    any_size = True

    def dtype_of(self, x):
        return x.dtype

    def context_of(self, xs):
        return xs[0].dc if xs else _default_dc()

    def render(self, dc, ops, in_dtypes, outputs):
        return render_cached(dc, ops, in_dtypes, outputs)

    def launch(self, dc, kern, shape, xs, out_dtypes, params):
        return dc.run_generated(kern, shape, xs, out_dtypes, params)


def _default_dc():
    from burn.backend import current_device_index
    from . import runtime
    return runtime.context(current_device_index())


# -- matmul with its element-wise epilogue: ONE kernel ----------------------------------------
# The matmul kernels' stores become ``EPI(batch, row, col, value)``: a macro evaluating the
# epilogue chain on the accumulator (bias / residual inputs read through their broadcast
# strides) and writing the group's outputs. The register-blocked CPU kernels and the tiled GPU
# kernel all get it; packing B stays its own launch.

_VSTORE = re.compile(r"vstore(\d+)\(acc(\d+), 0, Cb \+ \(long\)\(m0 \+ (\d+)\) \* N \+ n0\);")
_PSTORE = re.compile(r"Cb\[\(long\)\(m0 \+ (\d+)\) \* N \+ n0 \+ j\] = t\[j\];")
_LEFT_STORE = re.compile(r"vstore\d+\(acc\d+, 0, Cb|C\[\(\(long\)b|Cb\[[^\]]*\] = (acc|t)\[")
_EPI_SRC: dict = {}


def _epilogue_source(lib_src, T, sub_ops, in_dtypes, outputs, keep_c):
    rk = render_group("epi_chain", sub_ops, list(in_dtypes), outputs, OPENCL)
    body = [ln.strip() for ln in rk.source.splitlines() if _BODY.match(ln)]
    c = OPENCL.ctype
    n_ext = len(in_dtypes) - 1
    W = max(4 * n_ext, 1)
    mac = ["long eo_ = ((long)(eb) * M + (em)) * N + (en);", f"{c(in_dtypes[0])} x0 = ev;"]
    for k in range(1, len(in_dtypes)):
        w = 4 * (k - 1)
        mac.append(f"{c(in_dtypes[k])} x{k} = ein{k}[epi_p.v[{w}] + (eb) * epi_p.v[{w + 1}] + (em) * epi_p.v[{w + 2}]"
                   f" + (en) * epi_p.v[{w + 3}]];")
    mac += body
    mac += [f"eout{q}[eo_] = v{j};" for q, j in enumerate(outputs)]
    if keep_c:
        mac.append("C[eo_] = x0;")
    macro = "#define EPI(eb, em, en, ev) { " + " \\\n  ".join(mac) + " }"
    extra = [f"burn_epi{W} epi_p"]
    extra += [f"__global {c(d)}* eout{q}" for q, d in enumerate(rk.out_dtypes)]
    extra += [f"__global const {c(t)}* ein{k}" for k, t in enumerate(in_dtypes) if k]
    extra += [f"const {c(d)} p{i}" for i, d in enumerate(rk.param_dtypes)]
    head = program_source([rk], OPENCL).replace(rk.source, "")
    head = "\n".join(ln for ln in head.splitlines() if not ln.startswith(("#pragma", "typedef struct")))
    # the library's kernels spell C's type out, or as the macro T of their .cl source
    src = lib_src
    for t in (T, "T"):
        src = src.replace(f"__global {t}* C) {{", f"__global {t}* C, {', '.join(extra)}) {{")
    src = _VSTORE.sub(lambda m: f"{{ {T} et_[{m[1]}]; vstore{m[1]}(acc{m[2]}, 0, et_); for (int ej_ = 0; ej_ < "
                                f"{m[1]}; ++ej_) EPI(b, m0 + {m[3]}, n0 + ej_, et_[ej_]); }}", src)
    src = _PSTORE.sub(lambda m: f"EPI(b, m0 + {m[1]}, n0 + j, t[j])", src)
    src = src.replace("Cb[(long)(m0 + i) * N + j] = acc[i];", "EPI(b, m0 + i, j, acc[i])")
    src = src.replace("C[((long)b * M + gm) * N + gn] = acc[i][j];", "EPI(b, gm, gn, acc[i][j])")
    if _LEFT_STORE.search(src):       # a library change the rewrite does not know: keep two launches
        raise KeyError("matmul epilogue: a store of C was not rewritten")
    lines = src.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("typedef struct"))
    pre = [f"typedef struct {{ int v[{W}]; }} burn_epi{W};", head, macro]
    return "\n".join(lines[:at + 1] + pre + lines[at + 1:]), rk


class _Epilogue:
    """One launch's epilogue for ``burn_wgpu.kernels.linear.matmul``: kernels, outputs, arguments."""

    def __init__(self, fm, ext):
        self.fm = fm
        self.ext = ext
        self.outs = None

    def kernel(self, dc, dtype, name):
        fm = self.fm
        part = part_of(name)
        key = (dc.index, part, fm.key)
        hit = _EPI_SRC.get(key)
        if hit is None:
            src, _ = _epilogue_source(library_source(dtype, dc.fp64, part), OPENCL.ctype(dtype), fm.sub_ops,
                                      fm.in_dtypes, fm.epi_outputs, 0 in fm.group.outputs)
            hit = _EPI_SRC[key] = src
        return dc.kernel(hit, name)

    def prepare(self, out):
        fm, g = self.fm, self.fm.group
        shape = out.shape
        outs = [empty(out.dc, shape, d) for d in fm.out_dtypes]
        res, q = [], 0
        for j in g.outputs:
            if j == 0:
                res.append(out)
            else:
                res.append(outs[q])
                q += 1
        self.outs = tuple(res)
        v = np.zeros(max(4 * len(self.ext), 1), np.int32)
        for k, (x, bst) in enumerate(self.ext):
            st = _broadcast_strides(x, shape)
            v[4 * k:4 * k + 4] = (x.offset, bst, st[-2], st[-1])
        params = []
        for j, o in fm.param_ops:
            params += op_params(g.ops[j][0], g.ops[j][1], o)
        return ([v.view(np.dtype((np.void, v.nbytes)))[0]] + [o.buf for o in outs] + [x.buf for x, _ in self.ext]
                + _scalar_args(params))


def _collapsed_batch_stride(x, shape):
    """One stride walking x's batch dims broadcast to ``shape``'s, or None."""
    st = _broadcast_strides(x, shape)[:len(shape) - 2]
    dims = [(b, s) for b, s in zip(shape[:-2], st) if b != 1]
    for (b0, s0), (b1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * b1:
            return None
    return dims[-1][1] if dims else 0


class _FusedMatmul:
    """A matmul group (matmul, then element-wise ops consuming it) as one matmul launch."""

    def __init__(self, group, fallback):
        self.group = group
        self.fallback = fallback
        self.calls = 0
        self.key = None
        self.__name__ = "wgpu_fused_matmul"

    def _build(self, inputs):
        g = self.group
        a = inputs[g.ops[0][2][0][1]]
        local, ext_slots, sub_ops, types, self.param_ops = {}, [], [], [a.dtype], []
        for j, (op, attrs, args) in enumerate(g.ops[1:], start=1):
            new = []
            for src, k in args:
                if src == "op":
                    new.append(("in", 0) if k == 0 else ("op", k - 1))
                else:
                    if k not in local:
                        local[k] = len(ext_slots) + 1
                        ext_slots.append(k)
                    new.append(("in", local[k]))
            ins = [types[0] if a_ == ("in", 0) else inputs[ext_slots[a_[1] - 1]].dtype if a_[0] == "in"
                   else types[a_[1] + 1] for a_ in new]
            out = _name(out_dtype(op, ins, attrs))
            types.append(out)
            self.param_ops.append((j, out))
            sub_ops.append((op, attrs, new))
        self.ext_slots = ext_slots
        self.sub_ops = sub_ops
        self.in_dtypes = [a.dtype] + [inputs[k].dtype for k in ext_slots]
        self.epi_outputs = [j - 1 for j in g.outputs if j > 0]
        if not self.epi_outputs or any(t in ("float16", "complex64", "complex128") for t in self.in_dtypes):
            return False        # complex: burn_wgpu.kernels.linear's complex matmul + an epilogue kernel
        try:
            rk = render_group("epi_chain", sub_ops, list(self.in_dtypes), self.epi_outputs, OPENCL)
        except KeyError:
            return False
        self.out_dtypes = rk.out_dtypes
        self.key = (_struct_key(sub_ops, self.in_dtypes, self.epi_outputs), 0 in g.outputs)
        for part in ("matmul", "matmul_cpu"):       # string work only: nothing compiles here
            try:
                _epilogue_source(library_source(a.dtype, a.dc.fp64, part), OPENCL.ctype(a.dtype), sub_ops,
                                 self.in_dtypes, self.epi_outputs, 0 in g.outputs)
            except KeyError:
                return False
        return True

    def __call__(self, *inputs):
        g = self.group
        self.calls += 1
        if self.calls <= _fuse_after() and numel(g.output_metas[0].shape) < LARGE:
            return self.fallback(*inputs)
        if self.key is None and self._build(inputs) is False:
            self.key = False
        if self.key is False:
            return self.fallback(*inputs)
        (_, ka), (_, kb) = g.ops[0][2]
        a, b = inputs[ka], inputs[kb]
        shape = _bshape([a.shape[:-2], b.shape[:-2]]) + (a.shape[-2], b.shape[-1])
        ext = []
        for k in self.ext_slots:
            x = inputs[k]
            bst = _collapsed_batch_stride(x, shape) if len(shape) >= 2 else None
            if bst is None or _bshape([x.shape, shape]) != shape:
                return self.fallback(*inputs)
            ext.append((x, bst))
        if a.shape[-1] == 0 or numel(shape) == 0:
            return self.fallback(*inputs)
        epi = _Epilogue(self, ext)
        matmul(a, b, epi)
        return epi.outs


def _matmul_group(group):
    ops = group.ops
    if group.kind != "matmul" or len(ops) < 2 or ops[0][0] != "matmul":
        return False
    if any(src != "in" for src, _ in ops[0][2]) or len(ops[0][2]) != 2:
        return False
    return all(op in ELEMENTWISE_OPS and op != "full" for op, _, _ in ops[1:])


class _LinearReluGroup:
    kind = "matmul"
    ops = [("matmul", {}, [("in", 0), ("in", 1)]), ("add", {}, [("op", 0), ("in", 2)]), ("relu", {}, [("op", 1)])]
    outputs = [2]
    output_metas = None


_LINEAR_RELU: list = []


def linear_relu_fused(x, w, b):
    """burn::linear_relu as one matmul launch (bias + relu at the store)."""
    if not _LINEAR_RELU:
        fm = _FusedMatmul(_LinearReluGroup(), _linear_relu_2)
        fm.calls = 1 << 30          # no op-by-op warm-up: the program is shared by every shape
        _LINEAR_RELU.append(fm)
    fm = _LINEAR_RELU[0]
    if fm.key not in (None, False) and fm.in_dtypes != [x.dtype, b.dtype]:
        return _linear_relu_2(x, w, b)
    return fm(x, w, b)[0]
