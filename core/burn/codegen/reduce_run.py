"""Planning and running a reduce group's generated kernels (shared by burn-wgpu and burn-cuda).

:func:`burn.codegen.reduce.render_reduce` writes a reduce group's kernels (one work-item per
row, one work-group per row, or a split into partials and a combine). Everything a backend
does around them is here, so that an OpenCL run and a CUDA run of a group follow one plan:

* :func:`build`: the group's analysis for given input shapes/dtypes and its (cached) source;
* :func:`choose`: the variant for M rows of length R, with per-target thresholds (:class:`Tuning`);
* :func:`make_plan`: a :class:`Plan`, i.e. the result tensors to allocate, the index struct,
  the scalar parameters, the split's scratch buffers and the launches, each a kernel name, a
  grid (work-groups), a block (work-items per group) and its arguments as symbols
  (:meth:`Plan.args`) that the backend resolves to its own objects;
* :class:`ReduceRunner`: the callable a backend's ``compile_group`` returns, with the
  device part (contexts, allocation, argument objects, the launch) as hooks, like
  :class:`burn.codegen.segments.SegmentedGroup`.

Example:
    >>> g = type("G", (), {"ops": [("sum", {"axis": 1, "keepdims": False}, [("in", 0)])], "outputs": [0]})()
    >>> from burn.codegen import CUDA
    >>> b = build(g, [(4, 1000)], ["float32"], CUDA, L=256)
    >>> p = make_plan(b, lambda k, shape: (0, [1000, 1]), units=132, tuning=CUDA_TUNING, L=256, row_block=256)
    >>> assert (p.variant, [(s.kernel, s.grid, s.block) for s in p.steps]) == ("group", [("fmred_grp", 4, 256)])
    >>> assert p.args(p.steps[0])[:4] == [("struct", 0), ("int", 4), ("int", 1000), ("int", 1)]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dialect import Dialect
from .elementwise import MAX_DIMS, op_params
from .reduce import REDUCTIONS, analyze, index_words, render_reduce
from .segments import LARGE, fuse_after, numel, struct_key

__all__ = ["Tuning", "OPENCL_TUNING", "CUDA_TUNING", "choose", "build", "make_plan", "Plan", "Step",
           "ReduceRunner"]

INT32_MAX = (1 << 31) - 1
VARIANTS = ("row", "group", "split")


@dataclass(frozen=True)
class Tuning:
    """Thresholds of :func:`choose` for one kind of target.

    ``fill``: rows per compute unit from which one work-item per row keeps the device busy;
    ``groups``: work-groups per unit from which one work-group per row does; ``split_min``:
    elements per work-group below which a split costs more (a second launch) than it saves;
    ``short``: rows shorter than this are one work-item's (a tree would idle most items);
    ``inner_group``: with a value, rows at least this long whose reduced axis is the
    contiguous one get a work-group each even when there are many (GPUs: one item walking
    its own row makes a warp touch 32 cache lines per load; a work-group's loads coalesce).

    Example:
        >>> assert choose(100_000, 64, 132, tuning=Tuning(fill=256)) == ("row", 1)
    """
    fill: int = 256
    groups: int = 4
    split_min: int = 1 << 16
    short: int = 64
    inner_group: int | None = None


# burn-wgpu: PoCL on CPUs (a work-group is one core's loop) and OpenCL GPUs
OPENCL_TUNING = Tuning()
# burn-cuda (sized for an H200: 132 SMs of 2048 resident threads, i.e. 8 blocks of 256): one
# thread per row from 256 rows per SM (each thread walks its row; a warp's loads coalesce when
# the rows, not the reduced axis, are adjacent in memory), one block per row from 8 blocks per
# SM (every SM full), and a split only while each block keeps >= 8192 elements (32 per thread):
# below that the combine launch (a few microseconds) costs more than the extra blocks gain.
# inner_group: see Tuning. Unmeasured guesses until a GPU run (benchmarks) tunes them.
CUDA_TUNING = Tuning(fill=256, groups=8, split_min=1 << 13, short=32, inner_group=256)


def choose(M: int, R: int, units: int, can_split: bool = True, force=None, tuning: Tuning = OPENCL_TUNING,
           inner: bool = False):
    """``(variant, S)``: "row" (one work-item per row), "group" (one work-group per row) or
    "split" (S work-groups per row, then a combine launch) for M rows of length R on a device
    with ``units`` compute units; ``inner``: the reduced axis is the contiguous one.
    ``force`` pins a variant (tests, benchmarks); a split it asks for takes up to 64 groups.

    >>> assert choose(16384, 512, 2) == ("row", 1)                  # many short rows
    >>> assert choose(8, 1 << 20, 2) == ("group", 1)                # few long rows
    >>> assert choose(1, 1 << 24, 2)[0] == "split"                  # a full reduction
    >>> assert choose(1, 1 << 24, 2, can_split=False) == ("group", 1)
    >>> assert choose(100_000, 4096, 132, tuning=CUDA_TUNING, inner=True) == ("group", 1)
    >>> assert choose(100_000, 4096, 132, tuning=CUDA_TUNING, inner=False) == ("row", 1)
    """
    if force is not None and force not in VARIANTS:
        raise ValueError(f"reduce kernels: unknown variant {force!r}; use one of {', '.join(VARIANTS)}")
    if force == "row":
        return "row", 1
    if force in ("group", "split"):
        if force == "split" and can_split:
            return "split", max(2, min(64, -(-R // 64)))
        return "group", 1
    t = tuning
    coalesce = inner and t.inner_group is not None and R >= t.inner_group
    # rows enough for a full work-group of rows per unit: a GPU unit needs a few hundred items
    # in flight, and PoCL runs each work-group (256 rows) on one core, so 32 rows of 1M would
    # all land on one core
    if R < t.short or (M >= units * t.fill and not coalesce):
        return "row", 1
    groups = units * t.groups
    if M >= groups or not can_split or R < 2 * t.split_min:
        return "group", 1
    S = min(-(-groups // M), R // t.split_min)
    return ("split", S) if S > 1 else ("group", 1)


class Built:
    """A reduce group analysed for given input shapes/dtypes, with its rendered program:
    ``sp`` (:func:`burn.codegen.reduce.analyze`), ``src`` and render_reduce's layout
    (``params``, ``scal``, ``views``, ``rviews``, ``pouts``, ``routs``, ``can_split``)."""

    def __init__(self, group, sp, rendered, L):
        self.group, self.sp, self.L = group, sp, L
        (self.src, self.params, self.scal, self.views, self.rviews, self.pouts, self.routs,
         self.can_split) = rendered


_SRC: dict = {}


def build(group, shapes, dtypes, d: Dialect, L: int, blocked: bool = False, analyze_fn=None):
    """The :class:`Built` of ``group`` for these input shapes and dtypes, or None when the
    generated kernels cannot take it (:func:`burn.codegen.reduce.analyze` declines, an op
    does not render). Sources are cached by structure, dtypes and where values live.

    >>> g = type("G", (), {"ops": [("matmul", {}, [("in", 0), ("in", 1)]),
    ...                            ("sum", {"axis": None}, [("op", 0)])], "outputs": [1]})()
    >>> from burn.codegen import OPENCL
    >>> assert build(g, [(2, 3), (3, 2)], ["float32"] * 2, OPENCL, L=64) is None
    """
    try:
        sp = (analyze_fn or analyze)(group, shapes, dtypes, d)
    except (KeyError, ValueError, TypeError):       # shapes that do not broadcast, an unknown op
        return None
    if sp is None:
        return None
    skey = (d.name, struct_key(group.ops, dtypes, group.outputs), tuple(sorted(sp.level.items())),
            tuple(sorted((k, u == "loop") for k, u in sp.use.items())), L, bool(blocked))
    hit = _SRC.get(skey)
    if hit is None:
        try:
            hit = _SRC[skey] = render_reduce(group.ops, group.outputs, sp, dtypes, d, L=L, blocked=blocked)
        except KeyError:
            return None
    return Built(group, sp, hit, L)


@dataclass(frozen=True)
class Step:
    """One launch: ``grid`` work-groups (CUDA blocks) of ``block`` work-items; ``partials``:
    the split's scratch buffers are among its arguments."""
    kernel: str
    grid: int
    block: int
    partials: bool = False


@dataclass
class Plan:
    """Everything one run of a :class:`Built` needs (see :func:`make_plan`).

    ``outputs``: op index -> (shape, dtype) of the result tensors, in launch-argument order
    (row results, then loop-level ones); ``words``: the index struct (int32);
    ``params``: the scalar parameters ``(dtype, value)``; ``scratch``: the split's buffers
    ``(numel, dtype)`` (8-byte partials of every accumulator type, then each pass's row
    results); ``steps``: the launches in order.
    """
    variant: str
    S: int
    M: int
    R: int
    words: np.ndarray
    outputs: dict
    params: list
    scratch: list
    steps: list
    built: Built

    def args(self, step: Step) -> list:
        """The arguments of ``step`` as symbols, in the kernels' parameter order:
        ``("struct", 0)``, ``("int", v)``, ``("scratch", i)``, ``("out", j)`` (op j's result),
        ``("in", k)``, ``("soff", k)`` (input k's element offset, an int), ``("param", i)``."""
        b = self.built
        out = [("struct", 0), ("int", self.M), ("int", self.R), ("int", self.S)]
        if step.partials:
            out += [("scratch", i) for i in range(len(self.scratch))]
        out += [("out", j) for j in self.outputs]
        out += [("in", k) for k in range(b.sp.n_in)]
        out += [("soff", k) for k in b.scal]
        out += [("param", i) for i in range(len(self.params))]
        return out


def _c_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= int(s)
    return st[::-1]


def _reach(offset, shape, strides):
    """The largest element index a view reaches (for the kernels' 32-bit index arithmetic)."""
    return offset + sum((int(s) - 1) * abs(int(t)) for s, t in zip(shape, strides) if int(s) > 1)


def make_plan(b: Built, layout, units: int, tuning: Tuning, L: int, row_block: int, force=None):
    """The :class:`Plan` of one run of ``b``, or None when its shape is beyond the kernels
    (example at the end)
    (more than MAX_DIMS kept or reduced dimensions, an empty row, 32-bit index overflow).

    ``layout(k, shape)`` gives input k's ``(element offset, strides)`` aligned to ``shape``
    (stride 0 where it broadcasts): the reduced input's shape for inputs read in the loops,
    their row shape for inputs read once per row. Results are allocated C-contiguous.
    ``row_block``: the work-group size of the one-item-per-row launch; ``L``: the one the
    parallel variants were rendered for.

    Example (a full sum of 1M floats, as burn-cuda would plan it on 132 SMs):
        >>> import burn
        >>> from burn.codegen import CUDA
        >>> from burn.fusion import FusedGroup
        >>> g = FusedGroup("reduce", [("sum", {"axis": None, "keepdims": False}, [("in", 0)])],
        ...                [burn.TensorMeta((1 << 20,), burn.float32)], [0], [burn.TensorMeta((), burn.float32)])
        >>> b = build(g, [(1 << 20,)], ["float32"], CUDA, L=256)
        >>> p = make_plan(b, lambda k, shape: (0, [1]), 132, CUDA_TUNING, 256, 256)
        >>> assert p.variant == "split" and len(p.steps) == 2 and p.M == 1
    """
    sp, g = b.sp, b.group
    F, axes = sp.F, sp.axes
    keep = [d for d in range(len(F)) if d not in axes]
    kshape = [F[d] for d in keep if F[d] != 1]
    ashape = [F[d] for d in axes if F[d] != 1]
    R = numel([F[d] for d in axes])
    if len(kshape) > MAX_DIMS or len(ashape) > MAX_DIMS or R == 0 or numel(F) > INT32_MAX:
        return None
    outputs = {j: (sp.shape[j], sp.types[j]) for j in b.routs}
    outputs.update({j: (F, sp.types[j]) for j in b.pouts})
    n_full = len(b.views) + len(b.pouts)
    lays = [layout(k, F) for k in b.views] + [(0, _c_strides(F)) for _ in b.pouts]
    lays += [layout(k, sp.use[k]) for k in b.rviews]
    v = np.zeros(index_words(len(lays)), np.int32)
    v[0], v[1] = len(kshape), len(ashape)
    v[2:2 + len(kshape)] = kshape
    v[2 + MAX_DIMS:2 + MAX_DIMS + len(ashape)] = ashape
    base = 2 + 2 * MAX_DIMS
    inner = False
    for q, (off, st) in enumerate(lays):
        o = base + q * (1 + 2 * MAX_DIMS)
        if q < n_full:
            ks = [st[d] for d in keep if F[d] != 1]
            as_ = [st[d] for d in axes if F[d] != 1]
            reach = _reach(off, F, st)
            inner = inner or (q < len(b.views) and bool(as_) and abs(as_[-1]) == 1)
        else:           # read per row: its strides along the kept dims of its row shape
            rs = sp.use[b.rviews[q - n_full]]
            kst = [st[d] for d in keep] if len(rs) == len(F) else list(st)
            ks = [t for t, d in zip(kst, keep) if F[d] != 1]
            as_ = []
            reach = _reach(off, rs, st)
        if reach > INT32_MAX:
            return None
        v[o] = off
        v[o + 1:o + 1 + len(ks)] = ks
        v[o + 1 + MAX_DIMS:o + 1 + MAX_DIMS + len(as_)] = as_
    params = []
    for j, (op, attrs, _) in enumerate(g.ops):
        if op not in REDUCTIONS:
            params += op_params(op, attrs, sp.types[j])
    M = sp.M
    variant, S = choose(M, R, units, b.can_split, force, tuning, inner)
    scratch, steps = [], []
    if variant == "row":
        steps = [Step("fmred", -(-M // row_block), row_block)]
    elif variant == "group":
        steps = [Step("fmred_grp", M, L)]
    else:
        if M * S > INT32_MAX // L:
            return None
        scratch = [((M * S,), "int64")]
        if any(g.ops[j][0] in ("max", "min", "argmax", "argmin") for j in sp.reds):
            scratch.append(((M * S,), "int64"))
        scratch += [((M,), sp.types[j]) for j in sp.reds]
        for pp in range(len(sp.reds)):
            steps += [Step(f"fmred_part{pp}", M * S, L, True), Step(f"fmred_comb{pp}", M, L, True)]
    return Plan(variant, S, M, R, v, outputs, params, scratch, steps, b)


class ReduceRunner:
    """Runs a reduce group on a backend with its generated kernels (see the module doc).

    A backend subclasses it and sets ``dialect``, ``tuning``, ``fuse_after_var`` and
    ``name``, and implements ``context_of(inputs)``, ``dtype_of(x)``, ``local_size(dc)``,
    ``row_block(dc)``, ``blocked(dc)``, ``units(dc)``, ``layout(x, shape)`` (-> element
    offset, strides aligned to shape), ``empty(dc, shape, dtype)``, the kernel arguments
    ``struct_arg(words)`` (the index struct), ``buf(x)`` (a tensor) and ``scalar_args(params)``,
    and ``launch(dc, src, step, args)``; ``force()`` pins a variant, ``analyze`` may be
    replaced. Groups the kernels cannot take, and small groups in their first
    ``fuse_after_var`` calls (compiling costs more than a run), go to ``fallback``.

    Example (the two backends' runners):
        >>> from burn_cuda.kernels.reduce import FusedReduce          # doctest: +SKIP
        >>> assert issubclass(FusedReduce, ReduceRunner)             # doctest: +SKIP
    """

    dialect: Dialect = None
    tuning: Tuning = OPENCL_TUNING
    fuse_after_var = ""
    name = "fused_reduce"       # the callable's __name__ (profiles, errors)

    def __init__(self, group, fallback):
        self.__name__ = self.name
        self.group = group
        self.fallback = fallback
        self.calls = 0
        self.built = {}
        self.plans = {}
        self.last_variant = None

    # -- the backend's part ---------------------------------------------------------------------
    def force(self):
        return None

    def analyze(self, group, shapes, dtypes, d):
        return analyze(group, shapes, dtypes, d)

    def note(self, plan):
        """Called with each plan before its launches (benchmarks record the variant)."""

    def resolve(self, plan, sym, inputs, outs, scratch):
        """Symbol ``sym`` of :meth:`Plan.args` as the backend's kernel argument."""
        kind, v = sym
        if kind == "struct":
            return self.struct_arg(plan.words)
        if kind in ("int", "soff"):
            return np.int32(v if kind == "int" else self.layout(inputs[v], tuple(inputs[v].shape))[0])
        if kind == "param":
            return self.scalar_args([plan.params[v]])[0]
        return self.buf({"scratch": scratch, "out": outs, "in": inputs}[kind][v])

    # -- shared -----------------------------------------------------------------------------------
    def __call__(self, *inputs):
        self.calls += 1
        shapes = [tuple(x.shape) for x in inputs]
        dtypes = [self.dtype_of(x) for x in inputs]
        dc = self.context_of(inputs)
        key = (tuple(shapes), tuple(dtypes), dc.index)
        b = self.built.get(key)
        if b is None:
            L = self.local_size(dc)
            b = self.built[key] = build(self.group, shapes, dtypes, self.dialect, L, self.blocked(dc),
                                        self.analyze) or False
        if b is False:
            return self.fallback(*inputs)
        if self.calls <= fuse_after(self.fuse_after_var) and numel(b.sp.F) < LARGE:
            return self.fallback(*inputs)
        plan = self.plan(dc, b, inputs)
        if plan is None:
            return self.fallback(*inputs)
        return self.run(dc, plan, inputs)

    def plan(self, dc, b, inputs):
        """The :class:`Plan` of ``b`` for these inputs on ``dc`` (None: beyond the kernels),
        kept per input layout: a training step calls a group with the same layouts every time,
        and a plan costs ~50 us of Python to make."""
        force = self.force()
        lay = []
        for x in inputs:
            shape = tuple(x.shape)
            off, st = self.layout(x, shape)
            lay.append((shape, off, tuple(st)))
        key = (id(b), dc.index, force, tuple(lay))
        hit = self.plans.get(key, self)
        if hit is self:
            if len(self.plans) > 64:        # a group called with ever new layouts: no memory growth
                self.plans.clear()
            hit = self.plans[key] = make_plan(b, lambda k, shape: self.layout(inputs[k], shape), self.units(dc),
                                              self.tuning, b.L, self.row_block(dc), force)
        return hit

    def run(self, dc, plan, inputs):
        outs = {j: self.empty(dc, shape, t) for j, (shape, t) in plan.outputs.items()}
        result = tuple(outs[j] for j in self.group.outputs)
        self.last_variant = (plan.variant, plan.S)
        self.note(plan)
        if plan.M == 0:
            return result
        # the scratch stays referenced until every launch is queued (a dropped buffer goes back
        # to the pool and the next allocation would share it)
        scratch = [self.empty(dc, shape, t) for shape, t in plan.scratch]
        for step in plan.steps:
            args = [self.resolve(plan, s, inputs, outs, scratch) for s in plan.args(step)]
            self.launch(dc, plan.built.src, step, args)
        del scratch
        return result
