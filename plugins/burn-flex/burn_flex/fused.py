"""Fused execution of element-wise groups on numpy: cache-blocked evaluation.

numpy runs one op over the whole array at a time, so an 8-op chain on 4M
floats streams 8 x 16 MB of temporaries through memory (and page-faults
fresh 16 MB buffers in). A fused group here runs the whole chain on one
block of ~32K elements at a time: every intermediate lives in a scratch
buffer that is allocated once per call, stays in L2, and is reused by later
ops of the chain once its last reader has run; only the group's outputs are
written to memory. Kernels are the ordinary flex kernels applied to blocks,
so every element-wise op (including opted-in extensions) fuses without a
second implementation, and fused results are op-by-op results (the same
loops on other block boundaries).

Blocks are taken along the flattened array when every input has the
output's shape (or one element), else along the leading axis (so inputs
that broadcast over it, such as a bias row, are read whole by every block).
"""
from __future__ import annotations

from threading import get_ident

import numpy as np

from burn import float32
from burn.dispatch import registry
from burn.primitives import ELEMENTWISE

from . import jit_groups, threads

from .native import HALF_NATIVE, narrow, native, widen

# Elements per block: 128 KiB per float32 temporary, so the few scratch buffers
# of a chain stay in L2; measured best among 8K..128K on the 8-op chain benchmark
# (docs/benchmarks.md), though 32K and 64K are within the machine's noise.
BLOCK = 32768
MIN_FUSED_SIZE = 4 * BLOCK   # below this whole-array temporaries fit in L2 anyway
PAR_BLOCKS = 2               # blocks per thread at least (docs/benchmarks.md, round 7)
PAR_WHOLE = 65536            # elements per thread at least when a whole-array op is split
PIECES = 8                   # element-wise work is handed out in ~8 pieces per thread, dynamically
                             # (threads.parallel_for): a late or preempted thread costs one piece


def compile_elementwise(group, backend_name="flex", blocked=True, matmul=False):
    """A callable running ``group`` (a burn.fusion.FusedGroup) block by block, or None.

    ``blocked=False`` runs the ops whole-array in order (matmul epilogues and
    reduction prologues, whose shapes change inside the group); ``matmul=True``: a
    matmul group, one BLAS call and a blocked epilogue where it is large enough
    (:func:`compile_matmul_epilogue`). The callable's ``bind(group)`` runs the same
    group at other sizes (same ops, dtypes and pattern of equal and size-1 dims):
    the kernels are looked up once, only the per-size choices are made again.

    Example:
        >>> import burn, numpy as np
        >>> x = burn.from_numpy(np.linspace(-3, 3, 300_000, dtype=np.float32))
        >>> y = ((x * 2).exp() + 1).sqrt()
        >>> ref = np.sqrt(np.exp(np.linspace(-3, 3, 300_000, dtype=np.float32) * 2) + 1)
        >>> assert np.array_equal(y.numpy(), ref)
    """
    if not group.output_metas:
        return None
    kernels = []
    for name, attrs, args in group.ops:
        fn = registry.kernel(name, backend_name)
        if fn is None:
            return None
        op = registry.ops.get(name)
        if getattr(op, "is_extension", False):
            fn = op.adapt(fn)
        kernels.append((fn, attrs, tuple(args)))
    halves = _half_plan(group, kernels)
    if halves is not None:
        kernels = halves[0]
    n_in = len(group.input_metas)
    # one environment per call: group inputs first, then each op's result
    steps = [(fn, attrs, tuple(k if src == "in" else n_in + k for src, k in args))
             for fn, attrs, args in kernels]
    fresh = [_ufunc_like(fn) or name == "matmul" for (fn, _, _), (name, _, _) in zip(kernels, group.ops)]
    elementwise = [getattr(registry.ops.get(name), "kind", None) == ELEMENTWISE for name, _, _ in group.ops]
    compiled = jit_groups.plan(group) if halves is None else None      # float32 / bool runs (jit_groups)
    return _Prepared(backend_name, blocked, matmul, steps, n_in, [n_in + j for j in group.outputs], fresh,
                     elementwise, halves, compiled).bind(group)


class _Prepared:
    """What a compiled group keeps at every size: its kernels and steps. ``bind(group)`` makes the
    runner for one set of sizes (whole-array, blocked, or matmul + blocked epilogue)."""

    __slots__ = ("backend_name", "blocked", "matmul", "steps", "n_in", "outputs", "fresh", "elementwise", "halves",
                 "compiled")

    def __init__(self, backend_name, blocked, matmul, steps, n_in, outputs, fresh, elementwise, halves, compiled):
        self.backend_name, self.blocked, self.matmul, self.steps, self.n_in = backend_name, blocked, matmul, steps, n_in
        self.outputs, self.fresh, self.elementwise, self.halves = outputs, fresh, elementwise, halves
        self.compiled = compiled

    def bind(self, group):
        # a matmul group whose epilogue compiles (jit_groups) runs as one: no blocked epilogue to build
        if self.matmul and self.compiled is None:
            run = compile_matmul_epilogue(group, self.backend_name)
            if run is not None:
                run.prep = self
                return run
        if self.blocked:
            return _BySize(self, group)
        return self.runner(tuple(group.output_metas[0].shape), [tuple(m.shape) for m in group.input_metas])

    def runner(self, out_shape, in_shapes):
        """The runner at these sizes: block by block for a large element-wise group, else
        whole-array (at any sizes, but for a matmul group, which is bound per size)."""
        size = _numel(out_shape)
        if (self.compiled is not None and max([size] + [_numel(s) for s in in_shapes]) >= jit_groups.MIN_SIZE
                and self.compiled.available()):
            run = self.compiled.runner(self.steps, self.n_in, self.outputs)     # any size from here on
            run.any_size = not self.matmul
            return self._wrap(run)
        if self.blocked and size >= MIN_FUSED_SIZE:
            layout = _block_layout(out_shape, in_shapes)
            # an op without tensor inputs (``full``) is evaluated once, as a 0-d value that broadcasts
            if layout is not None and not any(not idx and "shape" not in attrs for _, attrs, idx in self.steps):
                return self._wrap(_BlockedGroup(self.steps, self.n_in, self.outputs, out_shape, size, layout))
        run = _WholeGroup(self.steps, self.n_in, self.outputs, self.fresh, self.elementwise)
        run.any_size = not self.matmul
        return self._wrap(run)

    def _wrap(self, run):
        if self.halves is not None:
            run = _HalfGroup(run, self.halves[1], self.halves[2])
        run.prep = self
        return run


class _BySize:
    """An element-wise group at any sizes of its relative key (``burn.shapekey``): whole-array
    below ``MIN_FUSED_SIZE`` elements (one runner for every size), above it block by block with
    a layout per input shapes. The output's size is read off the inputs: each output dim is an
    input's dim of equal size in the compiled group, or a constant (a ``full``'s shape), and
    one relative key keeps those equal."""

    __slots__ = ("prep", "whole", "recipe", "by_shapes", "__name__")
    any_size = True

    def __init__(self, prep, group):
        self.prep = prep
        self.whole = prep.runner((), [])        # () is never blocked: the whole-array runner
        out = tuple(group.output_metas[0].shape)
        ins = [tuple(m.shape) for m in group.input_metas]
        recipe = []
        for i, v in enumerate(out):
            r = len(out) - i                     # axes align from the right (broadcasting)
            src = next((k for k, sh in enumerate(ins) if v > 1 and len(sh) >= r and sh[-r] == v), None)
            recipe.append((-1, 0, v) if src is None else (src, len(ins[src]) - r, 0))
        self.recipe = recipe
        self.by_shapes = {}
        self.__name__ = "fused_elementwise"

    def __call__(self, *inputs):
        size = 1
        for k, a, c in self.recipe:
            size *= c if k < 0 else inputs[k].shape[a]
        if size < (MIN_FUSED_SIZE if self.prep.compiled is None else min(MIN_FUSED_SIZE, jit_groups.MIN_SIZE)):
            return self.whole(*inputs)
        key = tuple([x.shape for x in inputs])
        run = self.by_shapes.get(key)
        if run is None:
            if len(self.by_shapes) >= 64:
                self.by_shapes.clear()
            out = tuple(c if k < 0 else inputs[k].shape[a] for k, a, c in self.recipe)
            run = self.by_shapes[key] = self.prep.runner(out, [x.shape for x in inputs])
        return run(*inputs)

    def bind(self, group):
        return self


class _Bindable:
    """A compiled group's ``bind(group)``: the same group at other sizes (see :func:`compile_elementwise`)."""

    __slots__ = ()

    def bind(self, group):
        return self.prep.bind(group) if self.prep is not None else None


def _is_half(d):
    return d is not None and getattr(d, "is_floating", False) and d.itemsize == 2


def _half_plan(group, kernels):
    """A group reading or making float16/bfloat16 values runs in float32 (see
    ``burn_flex.native.HalfKernel``): half inputs are widened on entry, half outputs rounded
    once on exit, and inside the group values stay float32, so a chain rounds once, not per
    op. A ``cast`` to a half dtype inside still rounds (its value is the rounded one) and a
    ``full`` of a half dtype is made in float32. Returns ``(kernels, inputs to widen, output
    dtypes to round to)``, or None for a group without halves."""
    if any(name in HALF_NATIVE for name, _, _ in group.ops):
        return None         # a bit-level op (nextafter) must see the half values themselves
    wide = tuple(i for i, m in enumerate(group.input_metas) if _is_half(m.dtype))
    outs = tuple(native(m.dtype) if _is_half(m.dtype) else None for m in group.output_metas)
    if not wide and not any(d is not None for d in outs) and not any(_is_half(a.get("dtype")) for _, a, _ in kernels):
        return None
    new = []
    for (fn, attrs, args), (name, _, _) in zip(kernels, group.ops):
        d = attrs.get("dtype")
        if _is_half(d):
            if name == "cast":
                fn, attrs = _Rounder(native(d)), {}
            else:
                attrs = dict(attrs, dtype=float32)
        new.append((fn, attrs, args))
    return new, wide, outs


class _Rounder:
    """``cast`` to a half dtype inside a float32-computed group: the rounded value, kept in float32."""

    __slots__ = ("nd", "__name__")

    def __init__(self, nd):
        self.nd = nd
        self.__name__ = "round_to_" + str(nd)

    def __call__(self, x):
        return widen(narrow(x, self.nd))


class _HalfGroup(_Bindable):
    """A compiled group run in float32 for half-precision inputs and outputs (see :func:`_half_plan`)."""

    __slots__ = ("run", "wide", "outs", "prep", "__name__")

    def __init__(self, run, wide, outs):
        self.run, self.wide, self.outs, self.prep = run, wide, outs, None
        self.__name__ = run.__name__ + "_in_float32"

    @property
    def any_size(self):
        return getattr(self.run, "any_size", False)

    def __call__(self, *inputs):
        if self.wide:
            inputs = list(inputs)
            for i in self.wide:
                inputs[i] = widen(inputs[i])
        res = self.run(*inputs)
        return tuple(r if nd is None else narrow(r, nd) for r, nd in zip(res, self.outs))


def compile_matmul_epilogue(group, backend_name="flex"):
    """A matmul group (``matmul`` then element-wise ops on its result) as one BLAS call followed
    by its epilogue compiled as a blocked element-wise group (cache-sized blocks on the pool),
    or None where the epilogue is too small to block (the whole-array path is then better: it
    writes the epilogue over the matmul's result in place).

    Example:
        >>> import burn, numpy as np
        >>> a = np.random.default_rng(0).standard_normal((2, 512, 256)).astype(np.float32)
        >>> w = np.eye(256, dtype=np.float32)
        >>> y = burn.relu(burn.tensor(a) @ burn.tensor(w) + 1.0).numpy()
        >>> assert np.array_equal(y, np.maximum(a + 1.0, 0))
    """
    name0, attrs0, args0 = group.ops[0]
    if name0 != "matmul" or len(group.ops) < 2 or any(src != "in" for src, _ in args0):
        return None
    n_in = len(group.input_metas)
    mm_shape = tuple(group.output_metas[0].shape)
    if _numel(mm_shape) < MIN_FUSED_SIZE:
        return None

    # the epilogue's own inputs: the group inputs it reads, then the matmul's result
    used = sorted({k for _, _, args in group.ops[1:] for src, k in args if src == "in"})
    pos = {k: i for i, k in enumerate(used)}

    def remap(a):
        if a[0] == "in":
            return ("in", pos[a[1]])
        return ("in", len(used)) if a[1] == 0 else ("op", a[1] - 1)
    ops = [(n, at, [remap(a) for a in args]) for n, at, args in group.ops[1:]]
    keep = [j - 1 for j in group.outputs if j != 0]
    if not keep:
        return None
    metas = [group.input_metas[k] for k in used] + [_Meta(mm_shape, group.output_metas[0].dtype)]
    epi = compile_elementwise(type(group)(group.kind, ops, metas, keep,
                                          [m for j, m in zip(group.outputs, group.output_metas) if j != 0]),
                              backend_name)
    if isinstance(epi, _BySize):        # the epilogue at the matmul's size
        epi = epi.prep.runner(mm_shape, [tuple(m.shape) for m in metas])
    mm = registry.kernel("matmul", backend_name)
    if not isinstance(epi, _BlockedGroup) or mm is None:
        return None
    where = [None if j == 0 else keep.index(j - 1) for j in group.outputs]
    return _MatmulEpilogue(mm, attrs0, tuple(k for _, k in args0), tuple(used), epi, where)


class _Meta:
    """The matmul result's meta as the epilogue group's last input (shape and dtype)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


class _MatmulEpilogue(_Bindable):
    """``matmul`` on the calling thread (BLAS's own threads), then the blocked epilogue."""

    __slots__ = ("mm", "attrs", "idx", "used", "epi", "where", "prep", "__name__")

    def __init__(self, mm, attrs, idx, used, epi, where):
        self.mm, self.attrs, self.idx, self.used, self.epi, self.where = mm, attrs, idx, used, epi, where
        self.prep = None
        self.__name__ = "fused_matmul_epilogue"

    def __call__(self, *inputs):
        m = self.mm(*[inputs[i] for i in self.idx], **self.attrs)
        outs = self.epi(*[inputs[i] for i in self.used], m)
        return tuple(m if k is None else outs[k] for k in self.where)


# ufuncs whose positional ``out`` numpy deprecates (it reads as a third input): keep ``out=``
_NO_POSITIONAL_OUT = frozenset((np.maximum, np.minimum))


def _ufunc_like(fn):
    """A numpy ufunc, or a kernel declaring ``accepts_out`` (takes ``out=``, returns fresh arrays)."""
    return type(fn) is np.ufunc or getattr(fn, "accepts_out", False) is True


def _liveness(steps, n_in):
    """Per op j: the env slots (op results) whose last reader is op j."""
    last = {}
    for j, (_, _, idx) in enumerate(steps):
        for i in idx:
            last[i] = j
    return [[i for i, j2 in last.items() if j2 == j and i >= n_in] for j in range(len(steps))]


class _WholeGroup(_Bindable):
    """Runs a group whole-array, op by op, writing in place where that is safe.

    The first call runs the plain kernels and learns each result's shape and
    dtype (their equalities and dtypes are fixed for a compiled group: its relative
    key, see :meth:`_plan`). Later calls let a ufunc write over an input that (a) this
    group allocated (a ufunc or matmul result), (b) is read for the last time,
    (c) does not leave the group, (d) was never read by a kernel that might
    return a view of it, and (e) has the result's shape and dtype. That saves
    the allocation and keeps matmul epilogues and optimizer updates in cache.
    Element-wise ops with large results run split over leading rows on the
    flex pool (:func:`_split_elementwise`); matmuls and reductions run whole
    (BLAS's threads; reduction kernels split themselves)."""

    __slots__ = ("steps", "n_in", "outputs", "fresh", "elementwise", "progs", "prep", "any_size", "__name__")

    def __init__(self, steps, n_in, outputs, fresh, elementwise):
        self.prep = None
        self.steps = steps
        self.n_in = n_in
        self.outputs = outputs
        self.fresh = fresh
        self.elementwise = elementwise
        # learned plans by (several threads, large inputs): at several threads large ops split
        self.progs = {}
        self.any_size = True
        self.__name__ = "fused_whole"

    def __call__(self, *inputs):
        # which learned program: (several threads, large inputs); at one thread or small inputs
        # (the eager path's common case) this costs a few attribute reads, no generator
        several = threads.num_threads() > 1
        big = False
        if several:
            for x in inputs:
                if getattr(x, "size", 0) >= 2 * PAR_WHOLE:
                    big = True
                    break
        prog = self.progs.get((several, big))
        env = list(inputs)
        if prog is None:
            for fn, attrs, idx in self.steps:
                env.append(fn(*[env[i] for i in idx], **attrs))
            self.progs[(several, big)] = self._plan(env, several)
        else:
            # per step (see _plan): mode 0 a one-input call, 1 a two-input call, 2 any other
            # call without ``out``, 3 a two-input ufunc into ``out``, 4 another ufunc into
            # ``out``, 5 a split element-wise op, 6 / 7 a one- / two-input ufunc with its ``out``
            # passed by position (numpy parses it faster than a keyword: the whole cost of a long
            # chain of small ops is these calls)
            append = env.append
            for fn, attrs, idx, t, split, mode in prog:
                if mode == 7:
                    append(fn(env[idx[0]], env[idx[1]], env[t]))
                elif mode == 6:
                    append(fn(env[idx[0]], env[t]))
                elif mode == 0:
                    append(fn(env[idx[0]], **attrs) if attrs else fn(env[idx[0]]))
                elif mode == 1:
                    append(fn(env[idx[0]], env[idx[1]], **attrs) if attrs else fn(env[idx[0]], env[idx[1]]))
                elif mode == 3:
                    append(fn(env[idx[0]], env[idx[1]], out=env[t]))
                elif mode == 2:
                    append(fn(*[env[i] for i in idx], **attrs))
                elif mode == 4:
                    append(fn(*[env[i] for i in idx], out=env[t]))
                else:
                    args = [env[i] for i in idx]
                    out = env[t] if t is not None else np.empty(np.broadcast_shapes(*[a.shape for a in args]), split[0])
                    _split_elementwise(fn, attrs, args, out, split[1])
                    append(out)
        outputs = self.outputs
        if len(outputs) == 1:
            r = env[outputs[0]]
            return (r if r.__class__ is np.ndarray else np.asarray(r),)
        return tuple([np.asarray(env[j]) for j in outputs])

    def _plan(self, env, split_ok):
        """The program of later calls, from this call's values. Its choices hold at other sizes
        of the group (one relative key: the same ranks, dtypes and equal shapes), so the group
        runs at any sizes: a split op allocates its result at the size of the call."""
        n_in = self.n_in
        last_use = _liveness(self.steps, n_in)
        leaving = set(self.outputs)
        owned = set()              # slots holding arrays this group allocated and may overwrite
        prog = []
        for j, (fn, attrs, idx) in enumerate(self.steps):
            v = env[n_in + j]
            t = None
            ufunc = _ufunc_like(fn) and not attrs
            # a large element-wise result is computed by chunks into an array allocated
            # here (a plain kernel's chunk results are copied in, never a view of an input)
            split = ((v.dtype, ufunc) if split_ok and self.elementwise[j] and idx and type(v) is np.ndarray
                     and v.ndim and v.size >= 2 * PAR_WHOLE and v.dtype.kind in "biufc"
                     and all(isinstance(env[i], np.ndarray) for i in idx) else None)
            if ufunc and type(v) is np.ndarray:
                for i in idx:
                    if (i in owned and i in last_use[j] and i not in leaving
                            and env[i].shape == v.shape and env[i].dtype == v.dtype):
                        t = i
                        owned.discard(i)
                        break
            elif not _ufunc_like(fn) and split is None:
                owned.difference_update(idx)      # its result may be a view of these
            if (self.fresh[j] or split is not None) and type(v) is np.ndarray and (v.base is None or split):
                owned.add(n_in + j)
            if split is not None:
                mode = 5
            elif (t is not None and type(fn) is np.ufunc and fn.nout == 1 and len(idx) in (1, 2)
                    and fn not in _NO_POSITIONAL_OUT):
                mode = 5 + len(idx)
            elif t is not None:
                mode = 3 if len(idx) == 2 else 4
            else:
                mode = 0 if len(idx) == 1 else 1 if len(idx) == 2 else 2
            prog.append((fn, attrs, idx, t, split, mode))
        return prog


def _split_elementwise(fn, attrs, args, out, ufunc):
    """``out[...] = fn(*args, **attrs)`` for an element-wise ``fn``, by chunks of leading rows
    on the flex pool. Leading axes along which every operand is either full or 1 are
    collapsed first (a bias broadcast over [B, T, D] splits over B*T rows). Each output
    element is computed by the same loop as in one call: results do not depend on the
    thread count."""
    shape = out.shape
    nd = len(shape)
    aligned = [(1,) * (nd - a.ndim) + a.shape for a in args]
    k = 0                  # leading axes to collapse: each operand full or all ones along them
    while k < nd and all(s[:k + 1] == shape[:k + 1] or all(d == 1 for d in s[:k + 1]) for s in aligned):
        k += 1
    if k > 1 and out.flags.c_contiguous:
        rows = _numel(shape[:k])
        out = out.reshape((rows,) + shape[k:])
        args = [a.reshape((rows,) + s[k:]) if s[:k] == shape[:k] else a.reshape(s[k:])
                for a, s in zip(args, aligned)]
        sliced = [s[:k] == shape[:k] for s in aligned]
    else:
        rows = shape[0]
        sliced = [a.ndim == nd and a.shape[0] == rows for a in args]
    per_row = max(1, out.size // max(1, rows))

    def work(a, b):
        part = [x[a:b] if sl else x for x, sl in zip(args, sliced)]
        if ufunc:
            fn(*part, out=out[a:b])
        else:
            out[a:b] = fn(*part, **attrs)

    threads.parallel_for(rows, work, min_chunk=max(1, PAR_WHOLE // per_row), pieces=PIECES)


def _block_layout(out_shape, input_shapes):
    """How to cut the output into blocks: ``(axis_len, row_shape, rows, sliced, lead)``.

    ``sliced[k]`` says whether input k is cut along the blocked axis (else
    every block reads it whole and broadcasting does the rest). The blocked
    axis is the flattened array, or the first ``lead`` axes collapsed into one:
    just the leading axis, or, when its rows are larger than a block, every
    leading axis along which each input is full or of length 1 (a bias over
    [B, T, D] blocks rows of B*T)."""
    size = _numel(out_shape)
    if all(s == out_shape or _numel(s) == 1 for s in input_shapes):
        return size, (), BLOCK, [s == out_shape and size != 1 for s in input_shapes], 0
    if not out_shape:
        return None
    nd = len(out_shape)
    aligned = [(1,) * (nd - len(s)) + tuple(s) for s in input_shapes]
    lead = 1
    if _numel(out_shape[1:]) > BLOCK:
        while lead < nd - 1 and all(a[:lead + 1] == out_shape[:lead + 1] or _numel(a[:lead + 1]) == 1
                                    for a in aligned):
            lead += 1
    n0, row_shape = _numel(out_shape[:lead]), out_shape[lead:]
    rows = max(1, BLOCK // max(1, _numel(row_shape)))
    if n0 < 2 * rows:
        return None
    return n0, row_shape, rows, [a[:lead] == out_shape[:lead] for a in aligned], lead


def _block_inputs(inputs, layout):
    """The group's inputs as the blocks see them: flattened, or with the leading axes
    collapsed, and broadcast scalars (every stride 0: a gradient of ``sum``) as 0-d arrays
    instead of copies; returns ``(inputs, sliced)``."""
    axis_len, row_shape, _, sliced, lead = layout
    out, sl = [], []
    for x, s in zip(inputs, sliced):
        if s and x.ndim and not any(x.strides):
            out.append(np.asarray(x[(0,) * x.ndim]).reshape(()))
            sl.append(False)
        elif not row_shape:
            out.append(x.reshape(-1) if s else x.reshape(()))
            sl.append(s)
        elif lead == 1:
            out.append(x)
            sl.append(s)
        else:
            al = (1,) * (lead + len(row_shape) - x.ndim) + x.shape
            out.append(x.reshape((axis_len,) + al[lead:]) if s else x.reshape(al[lead:]))
            sl.append(s)
    return out, sl


class _BlockedGroup(_Bindable):
    """Runs a fused element-wise group block by block with reused scratch buffers."""

    __slots__ = ("steps", "n_in", "outputs", "out_shape", "size", "layout", "last_use", "prep", "__name__")

    def __init__(self, steps, n_in, outputs, out_shape, size, layout):
        self.prep = None
        self.steps = steps
        self.n_in = n_in
        self.outputs = outputs
        self.out_shape = out_shape
        self.size = size
        self.layout = layout
        self.__name__ = "fused_elementwise"
        self.last_use = _liveness(steps, n_in)

    def __call__(self, *inputs):
        n_in, steps, outputs = self.n_in, self.steps, self.outputs
        axis_len, row_shape, rows = self.layout[:3]
        inputs, sliced = _block_inputs(inputs, self.layout)
        out_pos = {j: k for k, j in enumerate(outputs)}
        results = [None] * len(outputs)

        # first block: the plain kernels, which tell each op's result dtype and shape
        stop = min(rows, axis_len)
        env = [x[:stop] if s else x for x, s in zip(inputs, sliced)]
        blk_shape = (stop,) + row_shape
        mode = []                  # per op: a dtype (ufunc into a scratch buffer), False (plain call),
        for j, (fn, attrs, idx) in enumerate(steps):   # or a 0-d constant (``full``)
            if not idx:
                v = np.asarray(fn(**dict(attrs, shape=())))
                mode.append(v)
            else:
                v = np.asarray(fn(*[env[i] for i in idx], **attrs))
                ok = _ufunc_like(fn) and not attrs and v.shape == blk_shape
                mode.append(v.dtype if ok else False)
            env.append(v)
            k = out_pos.get(n_in + j)
            if k is not None:
                results[k] = np.empty((axis_len,) + row_shape, dtype=v.dtype)
                results[k][:stop] = v

        prog, buf_dtypes = self._assign_buffers(mode, out_pos)
        n_blocks = -(-(axis_len - stop) // rows)

        scratch = {}               # thread id -> its scratch buffers, reused by every piece it runs

        def run_blocks(b0, b1):    # blocks [b0, b1) after the first, with this thread's scratch buffers
            bufs = scratch.get(get_ident())
            if bufs is None:
                bufs = scratch[get_ident()] = [np.empty((rows,) + row_shape, dtype=d) for d in buf_dtypes]
            for start in range(stop + b0 * rows, min(stop + b1 * rows, axis_len), rows):
                self._run_block(prog, bufs, inputs, sliced, results, start, min(start + rows, axis_len), rows)

        # blocks are independent (element-wise, disjoint output slices): results do not
        # depend on the thread count
        threads.parallel_for(n_blocks, run_blocks, min_chunk=PAR_BLOCKS, pieces=PIECES)
        return tuple(r.reshape(self.out_shape) for r in results)

    @staticmethod
    def _run_block(prog, bufs, inputs, sliced, results, start, stop, rows):
        n = stop - start
        env = [x[start:stop] if s else x for x, s in zip(inputs, sliced)]
        targets = [b[:n] for b in bufs] if n != rows else bufs
        for fn, attrs, idx, res, t in prog:
            if t is None:          # a plain kernel call (or a constant, ``fn`` is then None)
                v = fn(*[env[i] for i in idx], **attrs) if fn is not None else attrs
                if res is not None:
                    results[res][start:stop] = v
            else:
                o = targets[t] if res is None else results[res][start:stop]
                if len(idx) == 1:
                    v = fn(env[idx[0]], out=o)
                elif len(idx) == 2:
                    v = fn(env[idx[0]], env[idx[1]], out=o)
                else:
                    v = fn(*[env[i] for i in idx], out=o)
            env.append(v)

    def _assign_buffers(self, mode, out_pos):
        """A static scratch-buffer assignment for the steady-state blocks.

        Returns ``(prog, buffer dtypes)``: prog lists ``(fn, attrs, idx, result
        index or None, buffer index or None)`` per op. An op writes over an
        input's buffer when that input is read for the last time (ufuncs handle
        exact overlap), else takes a free buffer of its dtype, else a new one;
        buffers come free after their value's last reader."""
        n_in = self.n_in
        prog, dtypes = [], []
        holder = {}                # env slot -> buffer index holding its value
        free: dict = {}            # dtype -> free buffer indices
        pinned = set()
        for j, (fn, attrs, idx) in enumerate(self.steps):
            d = mode[j]
            res = out_pos.get(n_in + j)
            if type(d) is np.ndarray:
                prog.append((None, d, (), res, None))
                continue
            if d is False:
                # a plain kernel may return a view of its input (cast, reshape): the
                # buffers it reads are pinned, never reused while this call runs
                pinned.update(holder[i] for i in idx if i in holder)
                prog.append((fn, attrs, idx, res, None))
            elif res is not None:
                prog.append((fn, attrs, idx, res, -1))
            else:
                t = None
                for i in self.last_use[j]:   # ufuncs handle exact overlap: write over it
                    if i in holder and dtypes[holder[i]] == d and holder[i] not in pinned:
                        t = holder.pop(i)
                        break
                if t is None:
                    t = free[d].pop() if free.get(d) else len(dtypes)
                    if t == len(dtypes):
                        dtypes.append(d)
                holder[n_in + j] = t
                prog.append((fn, attrs, idx, None, t))
            for i in self.last_use[j]:
                b = holder.pop(i, None)
                if b is not None and b not in pinned:
                    free.setdefault(dtypes[b], []).append(b)
        return prog, dtypes


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n
