"""Fused element-wise groups compiled to one loop by LLVM (float32 and bool values).

numpy runs a fused group op by op: every op is a pass over memory and a ufunc call, and
several of the ops a training step fuses take slow numpy loops here (a maximum with a scalar
operand, a ``where`` on a random mask). This module writes the group's element-wise ops as
one LLVM IR loop nest (``plan`` picks the ops, ``_Kernel`` renders and compiles them through
``burn_flex.jit.compile_ir``, which caches object code on disk like the kernel module), so a
bias + relu, a relu gradient or a residual add reads each input once and writes each kept
value once.

What is compiled: a run of ops with float32 or bool values from this set, in the group's
order: ``add sub mul div maximum minimum neg positive abs square sqrt relu`` on float32, and
``erf`` and ``gelu`` (the functions of flex's kernel module, ``kernels/ll/erf.ll``, bit-identical
to its numpy erf),
the comparisons ``gt ge lt le eq ne`` (float32 to bool), ``logical_and / or / xor / not``
on bool and ``where``; the run starts at the group's first op, or after a leading ``matmul``
(an epilogue). An element-wise group or an epilogue is compiled only whole (else the numpy
path's blocks serve its other ops better); a reduction group's run is its prologue, and the
ops after it (the reduction and what follows) run as flex's kernels on the run's results. Every op computes numpy's IEEE float32 result, without fast-math flags (no
contraction, no reassociation): ``maximum(a, b)`` is ``a if a > b or a is NaN else b`` as
numpy's, ``ne`` is true for NaN, ``where`` selects bits. So a compiled group gives the bits
the numpy path gives, -0.0 and subnormals included (tested over random groups with NaN, inf and
-0.0), on any thread count; only a NaN's sign and payload may differ (they follow the operand
order of a commutative op, which neither numpy's SIMD loops nor LLVM fix).

Layout: the inputs are read in place (C-contiguous, or copied), broadcast by strides of 0.
The output shape's axes are merged where every input allows, leaving at most three: rows of
one or two outer axes, each row a contiguous inner loop in which an input is either
contiguous or one repeated value (compiled in, so the loop vectorizes). Rows are split over
flex's pool. A group whose inputs need more axes, or that is smaller than ``MIN_SIZE``
elements, runs the numpy path.

Example::

    >>> import numpy as np, burn
    >>> from burn_flex import jit_groups
    >>> x = np.linspace(-2, 2, 131072, dtype=np.float32).reshape(256, 512)
    >>> b = np.arange(512, dtype=np.float32)
    >>> before = jit_groups.status()["calls"]
    >>> y = burn.relu(burn.tensor(x) + burn.tensor(b)).numpy()     # add and relu: one compiled loop
    >>> assert np.array_equal(y, np.maximum(x + b, 0))
    >>> assert jit_groups.status()["calls"] == before + 1 or not jit_groups.ENABLED
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from burn.codegen.layout import broadcast_strides, merge_dims

from . import jit, threads

__all__ = ["MIN_SIZE", "plan", "status"]

# elements below which a group runs the numpy path (a compiled call costs a few microseconds
# of argument handling; numpy is as fast on a few thousand elements)
MIN_SIZE = 4096
# elements per thread at least when rows are split over the pool
PAR_ELEMS = 1 << 16
# ops a compiled run may hold (a longer group compiles for longer)
MAX_OPS = 48
# tests switch this off to compare with the numpy path
ENABLED = True

_F, _B = "f", "b"
_ARITH = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
_CMP = {"gt": "ogt", "ge": "oge", "lt": "olt", "le": "ole", "eq": "oeq", "ne": "une"}
_LOGIC = {"logical_and": "and", "logical_or": "or", "logical_xor": "xor"}
_FLOAT_UNARY = {"neg", "positive", "abs", "square", "sqrt", "relu", "erf", "gelu"}
# ops whose code is flex's kernel module's own (kernels/ll/erf.ll, bit-identical to the numpy erf)
_ERF_OPS = {"erf", "gelu"}

_lock = threading.Lock()
_compiled: dict = {}          # IR text -> _Kernel (runners keep the ones they use alive)
_MAX_KERNELS = 512
_stats = {"kernels": 0, "calls": 0}


def status() -> dict:
    """``{"kernels", "calls"}``: groups compiled and compiled runs in this process.

    Example::

        >>> from burn_flex import jit_groups
        >>> sorted(jit_groups.status())
        ['calls', 'kernels']
    """
    return dict(_stats)


def _kind(dtype):
    name = getattr(dtype, "name", str(dtype))
    return _F if name == "float32" else _B if name == "bool" else None


def _result_kind(name, kinds):
    """The kind of op ``name``'s result on argument kinds, or None where it is not compiled."""
    if name in _ARITH or name in ("maximum", "minimum"):
        return _F if kinds == [_F, _F] else None
    if name in _FLOAT_UNARY:
        return _F if kinds == [_F] else None
    if name in _CMP:
        return _B if kinds == [_F, _F] else None
    if name in _LOGIC:
        return _B if kinds == [_B, _B] else None
    if name == "logical_not":
        return _B if kinds == [_B] else None
    if name == "where":
        return _F if kinds == [_B, _F, _F] else None
    return None


def plan(group):
    """The compiled run of ``group`` (a ``burn.fusion.FusedGroup``): a :class:`Plan`, or None
    where no op run qualifies or flex's JIT is off. Planning loads nothing: LLVM is loaded when a
    group first runs at ``MIN_SIZE`` elements or more (:meth:`Plan.available`).

    Example::

        >>> import burn
        >>> from burn.fusion import FusedGroup
        >>> from burn_flex import jit_groups
        >>> m = burn.TensorMeta((64, 128), burn.float32)
        >>> g = FusedGroup("elementwise", [("add", {}, [("in", 0), ("in", 1)]), ("relu", {}, [("op", 0)])],
        ...                [m, m], [1], [m])
        >>> p = jit_groups.plan(g)
        >>> p is None or (p.start, p.end) == (0, 2)
        True
    """
    if not ENABLED or not jit.enabled():     # whether LLVM loads is asked when a run is large enough
        return None
    ops = group.ops
    start = 1 if ops and ops[0][0] == "matmul" and group.kind == "matmul" else 0
    kinds = {("in", k): _kind(m.dtype) for k, m in enumerate(group.input_metas)}
    if start:                 # the matmul's result: float32 from float32 operands
        kinds[("op", 0)] = _F if all(kinds.get(tuple(a)) == _F for a in ops[0][2]) else None
    end = start
    while end < len(ops) and end - start < MAX_OPS:
        name, attrs, args = ops[end]
        if attrs or not args:
            break
        k = _result_kind(name, [kinds.get(tuple(a)) for a in args])
        if k is None:
            break
        kinds[("op", end)] = k
        end += 1
    if end == start or (end - start == 1 and ops[start][0] == "relu"):   # relu alone has its own kernel
        return None
    if end < len(ops) and group.kind != "reduce":
        # an element-wise or epilogue run that stops early would leave its remainder to whole-array
        # kernels, which the blocked numpy path runs in cache-sized blocks: compile whole runs only
        # (a reduction's prologue is whole-array on either path)
        return None
    later = {j for _, _, args in ops[end:] for src, j in args if src == "op"}
    keep = tuple(j for j in range(start, end) if j in later or j in group.outputs)
    if not keep:
        return None
    return Plan(ops[start:end], start, end, kinds, keep)


class Plan:
    """The compiled run of a group's ops ``[start, end)``; ``keep`` are the op results the
    rest of the group or its outputs read (written to memory), ``kinds`` each value's kind."""

    __slots__ = ("ops", "start", "end", "kinds", "keep", "sources", "dense_keep")

    def __init__(self, ops, start, end, kinds, keep):
        self.ops, self.start, self.end, self.kinds, self.keep = ops, start, end, kinds, keep
        self.dense_keep = tuple(keep) == tuple(range(start, end))
        # the values the run reads from outside it (group inputs, the matmul's result), in order
        seen = []
        for _, _, args in ops:
            for a in args:
                a = tuple(a)
                if (a[0] == "in" or a[1] < start) and a not in seen:
                    seen.append(a)
        self.sources = tuple(seen)

    @staticmethod
    def available() -> bool:
        """Whether flex's JIT loads here (it loads, the first time it is asked)."""
        return jit.kernels() is not None

    def runner(self, steps, n_in, outputs):
        """The group's runner: the run compiled, the ops before it (a matmul) and after it (a
        reduction ...) through their flex kernels ``steps``."""
        return _PlanRunner(self, steps, n_in, outputs)


def _layout(shapes):
    """``(out_shape, dims, strides, inner)`` of reading inputs of ``shapes`` (C-contiguous) for
    their broadcast output: ``dims`` the merged output axes (at most 3, else None), ``strides``
    per input its element strides along them (0 where it repeats), ``inner`` per input 1 or 0
    (contiguous along the last merged axis, or one value there). The merging is the generated
    GPU kernels' (``burn.codegen.layout``)."""
    out = np.broadcast_shapes(*shapes)
    strides = [broadcast_strides(s, _c_strides(s), out) for s in shapes]
    dims, strides = merge_dims(list(out), strides)
    if not dims:
        dims, strides = [1], [[0] for _ in shapes]
    if len(dims) > 3 or any(s[-1] not in (0, 1) for s in strides):
        return None
    return out, dims, strides, tuple(s[-1] for s in strides)


def _c_strides(shape):
    acc, out = 1, []
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


class _PlanRunner:
    """Runs a group with its planned op run compiled (see :class:`Plan`)."""

    __slots__ = ("plan", "steps", "n_in", "outputs", "layouts", "prep", "any_size", "__name__", "head",
                 "body", "tail", "src_idx", "spread")

    def __init__(self, plan, steps, n_in, outputs):
        self.plan, self.steps, self.n_in, self.outputs = plan, steps, n_in, outputs
        self.layouts = {}
        self.prep = None
        self.any_size = True
        self.__name__ = "fused_compiled"
        # a leading matmul, the compiled run's ops (run by their kernels where no loop fits), the rest
        self.head, self.body, self.tail = steps[:plan.start], steps[plan.start:plan.end], steps[plan.end:]
        self.src_idx = tuple(k if a == "in" else n_in + k for a, k in plan.sources)
        keep = list(plan.keep)
        self.spread = tuple(keep.index(j) if j in keep else -1 for j in range(plan.start, plan.end))

    def bind(self, group):
        return self.prep.bind(group) if self.prep is not None else None

    def replay_form(self, attrs):
        """This runner for a replay (``burn_flex.replay``): the launch of the shapes it is called
        with kept (a replay's are fixed), without the lookup per call."""
        return _ReplayRunner(self)

    def __call__(self, *inputs):
        env, src = self._sources(inputs)
        return self._finish(env, src, self._launch_for(tuple([x.shape for x in src])))

    def _sources(self, inputs):
        """``(env, src)``: the inputs with the head's results after them (a leading matmul), and
        the compiled run's sources, C-contiguous."""
        env = list(inputs)
        for fn, attrs, idx in self.head:
            env.append(fn(*[env[i] for i in idx], **attrs))
        return env, [np.ascontiguousarray(env[k]) for k in self.src_idx]

    def _launch_for(self, key):
        """The compiled run's launch for sources of shapes ``key`` (None: more axes than the loops take)."""
        try:
            return self.layouts[key]
        except KeyError:
            pass
        lay = _layout(key)
        launch = None if lay is None else _kernel(self.plan, lay[3]).launch(*lay[:3])
        if len(self.layouts) >= 64:
            self.layouts.clear()
        self.layouts[key] = launch
        return launch

    def _finish(self, env, src, launch):
        p = self.plan
        if launch is None:                                   # more axes than the loops take
            for fn, attrs, idx in self.body:
                env.append(fn(*[env[i] for i in idx], **attrs))
        else:
            outs = launch(src)
            if p.dense_keep:                                 # every op of the run kept, in order
                env.extend(outs)
            else:                                            # None for an op whose result is not kept
                env.extend([outs[i] if i >= 0 else None for i in self.spread])
        for fn, attrs, idx in self.tail:                     # a reduction and what follows it
            env.append(fn(*[env[i] for i in idx], **attrs))
        return tuple([np.asarray(env[j]) for j in self.outputs])


class _ReplayRunner:
    """A :class:`_PlanRunner` in a replayed plan: the launch for its sources' shapes found once.

    Example:
        >>> import burn
        >>> x = burn.ones((4, 3))
        >>> g = burn.capture.trace(lambda x: (x @ x.T + 1.0).relu(), x)
        >>> assert g(x).tolist() == [[4.0] * 4] * 4
    """

    __slots__ = ("runner", "shapes", "launch", "__name__")

    def __init__(self, runner):
        self.runner, self.shapes, self.launch = runner, None, None
        self.__name__ = runner.__name__

    def __call__(self, *inputs):
        r = self.runner
        env, src = r._sources(inputs)
        shapes = tuple([x.shape for x in src])
        if shapes != self.shapes:
            self.launch, self.shapes = r._launch_for(shapes), shapes
        return r._finish(env, src, self.launch)


def _kernel(p, inner):
    src = _render(p, inner)
    k = _compiled.get(src)
    if k is None:
        with _lock:
            k = _compiled.get(src)
            if k is None:
                if len(_compiled) >= _MAX_KERNELS:
                    _compiled.clear()
                k = _compiled[src] = _Kernel(src, len(p.sources), [p.kinds[("op", j)] for j in p.keep])
                _stats["kernels"] += 1
    return k


def _render(p, inner):
    """The IR of plan ``p`` for inputs whose inner stride is ``inner`` (1 or 0 each)."""
    n_src, keep = len(p.sources), p.keep
    params = [f"ptr noalias nocapture readonly %in{k}" for k in range(n_src)]
    params += [f"ptr noalias nocapture writeonly %out{k}" for k in range(len(keep))]
    lines = [f"define void @group({', '.join(params)}, ptr noalias nocapture readonly %geo, i64 %r0, i64 %r1) "
             "nounwind {", "entry:",
             "  %B = load i64, ptr %geo",
             "  %gc = getelementptr inbounds i64, ptr %geo, i64 1",
             "  %C = load i64, ptr %gc"]
    for k in range(n_src):
        lines += [f"  %ga{k} = getelementptr inbounds i64, ptr %geo, i64 {2 + 2 * k}",
                  f"  %sa{k} = load i64, ptr %ga{k}",
                  f"  %gb{k} = getelementptr inbounds i64, ptr %geo, i64 {3 + 2 * k}",
                  f"  %sb{k} = load i64, ptr %gb{k}"]
    lines += ["  %none = icmp sge i64 %r0, %r1", "  %noc = icmp sle i64 %C, 0", "  %skip = or i1 %none, %noc",
              "  br i1 %skip, label %exit, label %row", "row:",
              "  %r = phi i64 [ %r0, %entry ], [ %r.next, %row.end ]",
              "  %a = udiv i64 %r, %B", "  %ab = mul i64 %a, %B", "  %b = sub i64 %r, %ab",
              "  %obase = mul i64 %r, %C"]
    for k in range(n_src):
        lines += [f"  %oa{k} = mul i64 %a, %sa{k}", f"  %ob{k} = mul i64 %b, %sb{k}",
                  f"  %base{k} = add i64 %oa{k}, %ob{k}",
                  f"  %row{k} = getelementptr inbounds {'float' if p.kinds[p.sources[k]] == _F else 'i8'}, "
                  f"ptr %in{k}, i64 %base{k}"]
    for k, j in enumerate(keep):
        t = "float" if p.kinds[("op", j)] == _F else "i8"
        lines.append(f"  %orow{k} = getelementptr inbounds {t}, ptr %out{k}, i64 %obase")
    lines += ["  br label %loop", "loop:", "  %c = phi i64 [ 0, %row ], [ %c.next, %loop ]"]
    names = {}
    for k, s in enumerate(p.sources):
        f = p.kinds[s] == _F
        idx = "%c" if inner[k] else "0"
        lines.append(f"  %p{k} = getelementptr inbounds {'float' if f else 'i8'}, ptr %row{k}, i64 {idx}")
        if f:
            lines.append(f"  %s{k} = load float, ptr %p{k}, align 4")
        else:
            lines += [f"  %s{k}b = load i8, ptr %p{k}, align 1", f"  %s{k} = icmp ne i8 %s{k}b, 0"]
        names[s] = f"%s{k}"
    for j, (name, _, args) in enumerate(p.ops, start=p.start):
        v = f"%v{j}"
        a = [names[tuple(x)] for x in args]
        lines += _emit(name, v, a)
        names[("op", j)] = v
    for k, j in enumerate(keep):
        v = names[("op", j)]
        if p.kinds[("op", j)] == _F:
            lines += [f"  %q{k} = getelementptr inbounds float, ptr %orow{k}, i64 %c",
                      f"  store float {v}, ptr %q{k}, align 4"]
        else:
            lines += [f"  %q{k} = getelementptr inbounds i8, ptr %orow{k}, i64 %c", f"  %z{k} = zext i1 {v} to i8",
                      f"  store i8 %z{k}, ptr %q{k}, align 1"]
    lines += ["  %c.next = add nuw nsw i64 %c, 1", "  %c.done = icmp eq i64 %c.next, %C",
              "  br i1 %c.done, label %row.end, label %loop, !llvm.loop !0",
              "row.end:", "  %r.next = add nuw nsw i64 %r, 1", "  %r.done = icmp eq i64 %r.next, %r1",
              "  br i1 %r.done, label %exit, label %row", "exit:", "  ret void", "}", "",
              "declare float @llvm.fabs.f32(float)", "declare float @llvm.sqrt.f32(float)",
              "!0 = distinct !{!0, !1}", '!1 = !{!"llvm.loop.vectorize.enable", i1 true}', ""]
    if any(name in _ERF_OPS for name, _, _ in p.ops):
        lines.append(_erf_source())          # @erf_f and @gelu_f, inlined into the loop
    return "\n".join(lines)


def _erf_source():
    from importlib import resources
    return resources.files("burn_flex.kernels").joinpath("ll", "erf.ll").read_text()


def _emit(name, v, a):
    """IR lines computing op ``name`` on SSA values ``a`` into ``v`` (numpy's float32 semantics)."""
    if name in _ARITH:
        return [f"  {v} = {_ARITH[name]} float {a[0]}, {a[1]}"]
    if name in ("maximum", "minimum", "relu"):
        x, y = (a[0], "0.0") if name == "relu" else a
        cmp = "olt" if name == "minimum" else "ogt"     # numpy: x if x > y (x < y) or x is NaN, else y
        return [f"  {v}.c = fcmp {cmp} float {x}, {y}", f"  {v}.n = fcmp uno float {x}, {x}",
                f"  {v}.k = or i1 {v}.c, {v}.n", f"  {v} = select i1 {v}.k, float {x}, float {y}"]
    if name == "neg":
        return [f"  {v} = fneg float {a[0]}"]
    if name == "positive":
        return [f"  {v} = bitcast float {a[0]} to float"]     # the same bits
    if name == "abs":
        return [f"  {v} = call float @llvm.fabs.f32(float {a[0]})"]
    if name == "sqrt":
        return [f"  {v} = call float @llvm.sqrt.f32(float {a[0]})"]
    if name == "square":
        return [f"  {v} = fmul float {a[0]}, {a[0]}"]
    if name in _ERF_OPS:                                    # flex's erf / gelu (kernels/ll/erf.ll)
        return [f"  {v} = call float @{name}_f(float {a[0]})"]
    if name in _CMP:
        return [f"  {v} = fcmp {_CMP[name]} float {a[0]}, {a[1]}"]
    if name in _LOGIC:
        return [f"  {v} = {_LOGIC[name]} i1 {a[0]}, {a[1]}"]
    if name == "logical_not":
        return [f"  {v} = xor i1 {a[0]}, true"]
    if name == "where":
        return [f"  {v} = select i1 {a[0]}, float {a[1]}, float {a[2]}"]
    raise AssertionError(name)


class _Kernel:
    """One compiled group loop: ``run(sources, out_shape, dims, strides)`` -> the kept values."""

    __slots__ = ("engine", "fn", "n_src", "out_dtypes")

    def __init__(self, src, n_src, out_kinds):
        self.engine, _, _ = jit.compile_ir(src)
        n_out = len(out_kinds)
        self.fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (n_src + n_out + 1)), ctypes.c_int64,
                                   ctypes.c_int64)(self.engine.get_function_address("group"))
        self.n_src = n_src
        self.out_dtypes = [np.float32 if k == _F else np.bool_ for k in out_kinds]

    def launch(self, out_shape, dims, strides):
        """A :class:`_Launch` of this loop for one layout (its geometry computed once)."""
        return _Launch(self, out_shape, dims, strides)


class _Launch:
    """A compiled group loop bound to one layout: the geometry array, the row count and the
    pool's chunking computed once; ``launch(src)`` allocates the outputs and runs the rows."""

    __slots__ = ("kernel", "fn", "out_shape", "out_dtypes", "geo", "geo_addr", "rows", "min_chunk", "parallel")

    def __init__(self, kernel, out_shape, dims, strides):
        # the kernel holds the LLVM engine that owns fn's code: _compiled may drop it (a full cache
        # is cleared) while a runner, a plan or a native program still calls this launch
        self.kernel = kernel
        dims = list(dims)
        strides = [list(s) for s in strides]
        if len(dims) == 1 and dims[0] >= 2 * PAR_ELEMS:
            # one long row: cut it into equal rows the pool can share (a divisor of its length)
            n = dims[0]
            for parts in (16, 12, 8, 6, 4, 3, 2):
                if n % parts == 0:
                    dims = [parts, n // parts]
                    strides = [[s[0] * (n // parts), s[0]] for s in strides]
                    break
        while len(dims) < 3:
            dims.insert(0, 1)
            for s in strides:
                s.insert(0, 0)
        a_len, b_len, c_len = dims
        geo = np.empty(2 + 2 * kernel.n_src, np.int64)
        geo[0], geo[1] = b_len, c_len
        for k, s in enumerate(strides):
            geo[2 + 2 * k], geo[3 + 2 * k] = s[0], s[1]
        self.fn, self.out_shape, self.out_dtypes = kernel.fn, tuple(out_shape), kernel.out_dtypes
        self.geo, self.geo_addr = geo, jit._addr(geo)       # kept alive with the launch
        self.rows = a_len * b_len
        self.min_chunk = max(1, PAR_ELEMS // max(1, c_len))
        # fewer elements than two threads' shares: the pool would run it on this thread anyway
        self.parallel = self.rows * c_len >= 2 * PAR_ELEMS

    def __call__(self, src):
        shape = self.out_shape
        outs = [np.empty(shape, d) for d in self.out_dtypes]
        ptrs = jit._addrs_of(src + outs)                 # every one an ndarray made by the caller or here
        ptrs.append(self.geo_addr)
        fn = self.fn
        if self.parallel:
            threads.parallel_for(self.rows, lambda r0, r1: fn(*ptrs, r0, r1), min_chunk=self.min_chunk)
        else:
            fn(*ptrs, 0, self.rows)
        _stats["calls"] += 1
        return outs
