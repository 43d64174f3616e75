"""Fused groups on cuda: every run of element-wise ops becomes ONE generated CUDA C kernel.

``compile_group`` splits a ``burn.fusion.FusedGroup`` into segments: maximal
runs of element-wise ops the code generator can render (one kernel launch
each) and the other ops (a matmul, a reduction), which run their ordinary
kernels. An element-wise group is one segment: one launch. A matmul group is
the matmul kernel plus one epilogue kernel; a reduction group runs as the generated
reduce kernels of :mod:`burn_cuda.kernels.reduce` (one launch, prologue and
epilogues inside), else one prologue kernel plus the reduction.

The segmentation and the segment-by-segment run are shared with burn-wgpu
(``burn.codegen.segments``); this module adds CUDA's part: NVRTC compilation,
launches on the device's stream, the CuPy fallback for complex values. NVRTC compiles a module in ~10-50 ms (then CuPy's disk cache
serves it), so a group whose output is small is run op by op (with the
already compiled per-op kernels) for its first ``BURN_CUDA_FUSE_AFTER`` calls
(default 1: fused from its second call on, as in every repeated training
step); large groups are fused on the first call. The whole group runs in the
device's scope (its stream and burn's pool).
"""
from __future__ import annotations

from burn.codegen import CUDA, ELEMENTWISE_OPS, UNROLL, VECTOR, out_dtype, program_source, render_group
from burn.codegen.segments import SegmentedGroup, localize, plan_group
from burn.codegen.segments import struct_key as _struct_key
from burn.errors import DTypeError

from .kernels.elementwise import RENDERABLE, _dc_of, _name, kernel_form, run_elementwise
from .native import dtype_name


_RENDERED: dict = {}


def segment_source(ops, in_dtypes, outputs, pat=None, form="plain"):
    """``(source, kernel name)`` of one element-wise chain: the general kernel (``pat`` None,
    any layout), else for layout pattern ``pat`` the variant in ``form``
    (``burn_cuda.kernels.kernel_form``): "plain" without index arithmetic (``fused_c<pat>``),
    "unrolled" with ``UNROLL`` elements per thread (``fused_u<pat>``), "vector" with aligned
    vector loads (``fused_v<pat>``).
    What the GPU compiles, and what tests/test_cuda_nvcc.py, tests/test_codegen_unrolled.py and
    tests/test_codegen_vector.py compile with nvcc.

    >>> src, name = segment_source([("exp", {}, [("in", 0)])], ["float32"], [0], 0, "unrolled")
    >>> assert name == "fused_u0" and f"void {name}(" in src
    >>> assert segment_source([("exp", {}, [("in", 0)])], ["float32"], [0], 0, "vector")[1] == "fused_v0"
    """
    ops = [(op, attrs, [tuple(a) for a in args]) for op, attrs, args in ops]
    if pat is None:
        rk = render_group("fused", ops, list(in_dtypes), list(outputs), CUDA)
        return program_source([rk], CUDA), "fused"
    form = kernel_form(form)
    if form == "vector":
        v = render_group("fused", ops, list(in_dtypes), list(outputs), CUDA, general=False, vector=(pat,))
        return program_source([v], CUDA), f"fused_v{pat}"
    if form == "unrolled":
        v = render_group("fused", ops, list(in_dtypes), list(outputs), CUDA, general=False, unrolled=(pat,),
                         unroll=UNROLL)
        return program_source([v], CUDA), f"fused_u{pat}"
    v = render_group("fused", ops, list(in_dtypes), list(outputs), CUDA, patterns=(pat,), general=False)
    return program_source([v], CUDA), f"fused_c{pat}"


def render_cached(dc, ops, in_dtypes, outputs):
    """``(kernel_for, RenderedKernel)`` of an element-wise chain: ``kernel_for(pattern,
    form="plain")`` is the chain's kernel for a layout pattern
    (``burn_cuda.kernels.layout_pattern``), in form "unrolled" ``(kernel, UNROLL)``,
    in form "vector" ``(kernel, VECTOR)`` (see ``burn_cuda.kernels.run_elementwise``), each
    variant its own small program compiled on first use. Attribute values are run-time
    arguments, so the key is the chain's structure and dtypes only."""
    key = (dc.index, _struct_key(ops, in_dtypes, outputs))
    hit = _RENDERED.get(key)
    if hit is None:
        rk = render_group("fused", [(op, attrs, [tuple(a) for a in args]) for op, attrs, args in ops],
                          list(in_dtypes), list(outputs), CUDA)
        kernels = {}

        def kernel_for(pat, form="plain"):
            form = kernel_form(form) if pat is not None else "plain"
            k = kernels.get((pat, form))
            if k is None:
                k = dc.function(*segment_source(ops, in_dtypes, outputs, pat, form))
                per = {"unrolled": UNROLL, "vector": VECTOR}.get(form)
                k = kernels[(pat, form)] = (k, per) if per else k
            return k
        hit = _RENDERED[key] = (kernel_for, rk)
    return hit


# result dtype of the non-element-wise ops a group may hold (for rendering without values)
_INT_ACC = ("sum", "prod", "cumsum", "cumprod")


def _value_dtype(op, ins, attrs):
    if op in ELEMENTWISE_OPS:
        return _name(out_dtype(op, ins, attrs))
    if op in ("argmax", "argmin") or (op in _INT_ACC and ins[0] in ("bool", "int8", "int16", "int32")):
        return "int64"
    if op in _INT_ACC and ins[0] in ("uint8", "uint16", "uint32"):
        return "uint64"
    if op in ("any", "all"):
        return "bool"
    return ins[0] if ins else "float32"


def segments(group):
    """The element-wise segments of ``group`` as ``(ops, in_dtypes, outputs)``, the way
    :class:`_FusedGroup` renders them, with dtypes from the group's metas (no device needed)."""
    plan = compile_group(group)
    if plan is None:
        return []
    if not isinstance(plan, _FusedGroup):       # a reduce group: its segmented fallback's segments
        plan = _FusedGroup(group, *plan_group(group))
    n_in = plan.n_in
    types = list(plan.in_dtypes)
    for op, attrs, args in group.ops:
        types.append(_value_dtype(op, [types[k if src == "in" else n_in + k] for src, k in args], attrs))
    out = []
    for ew, js in plan.segs:
        if not ew:
            continue
        sub_ops, _, in_dtypes, _ = localize(group.ops, js, n_in, types.__getitem__)
        out.append((sub_ops, in_dtypes, [js.index(j) for j in js if j in plan.needed]))
    return out


def _value_dtypes(group, in_dtypes):
    """The dtype of every value the group computes (None where the generator cannot tell)."""
    vals = []
    for op, attrs, args in group.ops:
        ds = [in_dtypes[k] if kind == "in" else vals[k] for kind, k in args]
        try:
            vals.append(None if None in ds else out_dtype(op, ds, attrs))
        except (KeyError, TypeError, ValueError):
            vals.append(None)
    return vals


def compile_group(group):
    """A callable running ``group`` with one launch per element-wise run, or None."""
    plan = plan_group(group)
    if plan is None or any(t not in RENDERABLE for t in plan[3]):     # complex: op by op (CuPy ufuncs)
        return None
    # a complex value inside a real group (x.astype(complex64) * w) as well: the generated
    # complex kernels compile (tests/test_cuda_nvcc.py) but run CuPy's ufuncs until checked on a GPU
    if any(d is not None and d not in RENDERABLE for d in _value_dtypes(group, plan[3])):
        return None
    fg = _FusedGroup(group, *plan)
    if group.kind == "reduce":
        # the generated reduce kernels (burn_cuda.kernels.reduce: one launch for prologue, passes
        # and epilogue). What they decline runs as before: a prologue kernel and CuPy's reduction
        # when the reduction is the last op, else op by op, because the segmented run of
        # epilogues and further passes gave wrong shapes on an H200 (fixed in
        # burn.codegen.segments and tested on wgpu; unconfirmed on a GPU for cuda)
        from .kernels.reduce import FusedReduce
        red = [i for i, (op, _, _) in enumerate(group.ops) if op not in ELEMENTWISE_OPS]
        if len(red) == 1 and red[0] == len(group.ops) - 1:
            return FusedReduce(group, fg)
        return FusedReduce(group, lambda *xs: fg.op_by_op(xs))
    return fg


class _FusedGroup(SegmentedGroup):
    backend = "cuda"
    fuse_after_var = "BURN_CUDA_FUSE_AFTER"

    def __call__(self, *inputs):
        with _dc_of(inputs).scope():
            if self.plan == "op_by_op":
                return self.op_by_op(inputs)
            try:
                return self.run(inputs)
            except (KeyError, DTypeError):     # a value the generator cannot hold (complex)
                self.plan = "op_by_op"
                return self.op_by_op(inputs)

    def dtype_of(self, x):
        return dtype_name(x)

    def context_of(self, xs):
        return _dc_of(xs)

    def render(self, dc, ops, in_dtypes, outputs):
        return render_cached(dc, ops, in_dtypes, outputs)

    def launch(self, dc, kern, shape, xs, out_dtypes, params):
        return run_elementwise(dc, kern, shape, xs, out_dtypes, params)
