"""Backend-neutral running of a fused group as segments (shared by burn-wgpu and burn-cuda).

A ``burn.fusion.FusedGroup`` is split into segments: maximal runs of
element-wise ops the code generator renders as one kernel, and the other ops
(a matmul, a reduction), which run their ordinary kernels. What a backend adds
is the device part: which context a launch uses, how a chain is compiled
(:meth:`SegmentedGroup.render`) and launched (:meth:`SegmentedGroup.launch`).
Nothing here imports a GPU library.

Example:
    >>> ops = [("exp", {}, [("in", 0)]), ("sum", {}, [("op", 0)]), ("neg", {}, [("op", 1)])]
    >>> segs, needed = plan_segments(ops, [2])
    >>> assert segs == [(True, [0]), (False, [1]), (True, [2])] and needed == {0, 1, 2}
"""
from __future__ import annotations

import os

import numpy as np

from ..dispatch import registry
from .elementwise import ELEMENTWISE_OPS, op_params, out_dtype

LARGE = 1 << 16     # elements: fuse on the first call from this size on


def dtype_name(dtype):
    """A dtype's burn name (``DType`` or already a string).

    >>> assert dtype_name("int32") == "int32"
    """
    return getattr(dtype, "name", dtype)


def broadcast_shape(shapes):
    """The broadcast of ``shapes`` (``()`` for none).

    >>> assert broadcast_shape([(2, 1), (3,)]) == (2, 3) and broadcast_shape([]) == ()
    """
    return tuple(np.broadcast_shapes(*shapes)) if shapes else ()


def numel(shape) -> int:
    """Element count of ``shape``.

    >>> assert numel((2, 3)) == 6 and numel(()) == 1
    """
    n = 1
    for s in shape:
        n *= int(s)
    return n


def fuse_after(env_var: str) -> int:
    """How many first calls of a small group run op by op (``env_var``, default 1).

    >>> assert fuse_after("BURN_NO_SUCH_VARIABLE_FOR_DOCTEST") == 1
    """
    try:
        return int(os.environ.get(env_var, "1"))
    except ValueError:
        return 1


def struct_key(ops, in_dtypes, outputs):
    """Cache key of an element-wise chain: its structure and dtypes, not attribute values
    (those are run-time kernel arguments), except the dtype a cast or full produces.

    >>> k = struct_key([("mul", {"x": 1}, [("in", 0), ("in", 0)])], ["float32"], [0])
    >>> assert k == struct_key([("mul", {"x": 2}, [["in", 0], ["in", 0]])], ["float32"], [0])
    """
    return (tuple((op, dtype_name(attrs.get("dtype")) if op in ("cast", "full") else None, tuple(map(tuple, args)))
                  for op, attrs, args in ops), tuple(in_dtypes), tuple(outputs))


def plan_segments(ops, outputs, shapes=None):
    """``(segs, needed)``: ``segs`` the ``(is_elementwise, [op indices])`` runs of ``ops``,
    ``needed`` the op results read outside their own segment or leaving the group.

    A run is one kernel writing every result at one shape, so with ``shapes`` (each op's
    result shape, None where unknown) a change of shape starts a new run: a reduce group's
    ops after its reduction (on the reduced shape) and its next pass (on the full one).

    >>> segs, needed = plan_segments([("exp", {}, [("in", 0)]), ("neg", {}, [("op", 0)])], [1])
    >>> assert segs == [(True, [0, 1])] and needed == {1}
    >>> segs, _ = plan_segments([("neg", {}, [("in", 0)]), ("sub", {}, [("in", 1), ("op", 0)])], [1],
    ...                         shapes=[(2, 1), (2, 3)])
    >>> assert segs == [(True, [0]), (True, [1])]
    """
    seg_of = []
    segs = []
    for j, (op, attrs, args) in enumerate(ops):
        ew = op in ELEMENTWISE_OPS
        same_shape = (shapes is None or not segs or shapes[j] is None or shapes[segs[-1][1][0]] is None
                      or shapes[j] == shapes[segs[-1][1][0]])
        if ew and segs and segs[-1][0] and same_shape:
            segs[-1][1].append(j)
        else:
            segs.append((ew, [j]))
        seg_of.append(len(segs) - 1)
    needed = set(outputs)
    for j, (op, attrs, args) in enumerate(ops):
        for src, k in args:
            if src == "op" and seg_of[k] != seg_of[j]:
                needed.add(k)
    return segs, needed


def localize(ops, js, n_in, slot_dtype):
    """One segment ``js`` of a group's ``ops`` as a standalone chain.

    Returns ``(sub_ops, in_slots, in_dtypes, out_types)``: the chain with its own input
    numbering, the group slots (inputs, then ``n_in + op``) its inputs are read from, their
    dtypes (``slot_dtype(slot)``) and each op's result dtype (``[(j, dtype)]``).

    >>> ops = [("exp", {}, [("in", 1)]), ("add", {}, [("op", 0), ("in", 0)])]
    >>> sub, slots, dts, outs = localize(ops, [0, 1], 2, lambda s: "float32")
    >>> assert sub[1][2] == [("op", 0), ("in", 1)] and slots == [1, 0]
    >>> assert outs == [(0, "float32"), (1, "float32")]
    """
    types = {}
    local_in, sub_ops, in_slots, in_dtypes, out_types = {}, [], [], [], []
    for j in js:
        op, attrs, args = ops[j]
        new_args, ins = [], []
        for src, k in args:
            if src == "op" and k in js:
                new_args.append(("op", js.index(k)))
                ins.append(types[k])
                continue
            slot = k if src == "in" else n_in + k
            if slot not in local_in:
                local_in[slot] = len(in_slots)
                in_slots.append(slot)
                in_dtypes.append(slot_dtype(slot))
            new_args.append(("in", local_in[slot]))
            ins.append(in_dtypes[local_in[slot]])
        sub_ops.append((op, attrs, new_args))
        types[j] = dtype_name(out_dtype(op, ins, attrs))
        out_types.append((j, types[j]))
    return sub_ops, in_slots, in_dtypes, out_types


def op_shapes(group) -> list:
    """The result shape of each op of a fused group, inferred from its input shapes (element-wise
    ops broadcast, reductions drop or keep their axes; None where not inferred, e.g. a matmul).

    >>> from burn.fusion import FusedGroup
    >>> import burn
    >>> m = burn.TensorMeta((2, 3), burn.float32)
    >>> g = FusedGroup("reduce", [("exp", {}, [("in", 0)]), ("sum", {"axis": (1,), "keepdims": True}, [("op", 0)])],
    ...                [m], [1], [burn.TensorMeta((2, 1), burn.float32)])
    >>> assert op_shapes(g) == [(2, 3), (2, 1)]
    """
    ins = [tuple(m.shape) for m in group.input_metas]
    out = []
    for op, attrs, args in group.ops:
        shs = [ins[k] if src == "in" else out[k] for src, k in args]
        if op == "full":
            s = tuple(attrs["shape"])
        elif None in shs:
            s = None
        elif op in ELEMENTWISE_OPS:
            s = broadcast_shape(shs)
        elif "axis" in attrs and len(shs) == 1:      # a reduction
            nd = len(shs[0])
            ax = attrs["axis"]
            axes = set(range(nd)) if ax is None else {a % nd for a in ((ax,) if isinstance(ax, int) else ax)}
            s = tuple(1 if i in axes else n for i, n in enumerate(shs[0]) if attrs.get("keepdims") or i not in axes)
        else:
            s = None
        out.append(s)
    return out


def plan_group(group):
    """``(segs, needed, n_in, in_dtypes)`` of a fused group worth generating code for, or None
    (no element-wise op).

    >>> assert plan_group(type("G", (), {"ops": [], "input_metas": []})()) is None
    """
    ops = group.ops
    if not ops or not any(op in ELEMENTWISE_OPS for op, _, _ in ops):
        return None
    segs, needed = plan_segments(ops, group.outputs, op_shapes(group))
    return segs, needed, len(group.input_metas), [m.dtype.name for m in group.input_metas]


class SegmentedGroup:
    """Runs a fused group segment by segment: one generated kernel per element-wise run.

    A backend subclasses it and sets ``backend`` and ``fuse_after_var``, and implements
    ``dtype_of(value)``, ``context_of(values)``, ``render(dc, ops, in_dtypes, outputs)``
    (-> ``(kernel_for, RenderedKernel)``) and ``launch(dc, kernel_for, shape, xs, out_dtypes,
    params)``. Small groups run op by op for their first calls (compiling costs far more than
    a launch); the plan is built on the first fused run, from the dtypes of the values.
    """

    backend = ""
    fuse_after_var = ""

    def __init__(self, group, segs, needed, n_in, in_dtypes):
        self.group = group
        self.segs = segs
        self.needed = needed
        self.n_in = n_in
        self.in_dtypes = in_dtypes
        self.calls = 0
        self.plan = None
        self._shapes: dict = {}     # (step, input shapes) -> the launch's broadcast shape
        self.__name__ = f"{self.backend}_fused"

    # -- the backend's part -----------------------------------------------------------------
    def dtype_of(self, x):
        raise NotImplementedError

    def context_of(self, xs):
        raise NotImplementedError

    def render(self, dc, ops, in_dtypes, outputs):
        raise NotImplementedError

    def launch(self, dc, kern, shape, xs, out_dtypes, params):
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------------------
    def __call__(self, *inputs):
        return self.run(inputs)

    def run(self, inputs):
        g = self.group
        self.calls += 1
        size = numel(g.output_metas[0].shape) if g.output_metas else 0
        if self.plan is None:
            # the first calls of a small group run op by op (compiling costs more than they do);
            # once it has run fused it stays fused, so later calls skip reading the environment
            if size < LARGE and self.calls <= fuse_after(self.fuse_after_var):
                return self.op_by_op(inputs)
            self.plan = [None] * len(self.segs)
        env = list(inputs) + [None] * len(g.ops)
        n_in = self.n_in
        for i, step in enumerate(self.plan):
            if step is None:       # built on the first fused run: dtypes are those of the values
                step = self.plan[i] = self.build(i, env)
            if step[0] == "ew":
                _, kern, rk, in_slots, out_slots, param_ops, fulls = step
                xs = [env[s] for s in in_slots]
                key = (i, tuple(tuple(x.shape) for x in xs))
                shape = self._shapes.get(key)
                if shape is None:      # computed once per step and input shapes
                    if len(self._shapes) >= 4096:       # sizes that never repeat: do not grow forever
                        self._shapes.clear()
                    shape = self._shapes[key] = broadcast_shape([x.shape for x in xs] +
                                                                [tuple(g.ops[j][1]["shape"]) for j in fulls])
                params = []
                for j, out in param_ops:
                    params += op_params(g.ops[j][0], g.ops[j][1], out)
                outs = self.launch(self.context_of(xs), kern, shape, xs, list(rk.out_dtypes), params)
                for s, o in zip(out_slots, outs):
                    env[s] = o
            else:
                _, fn, j, in_slots = step
                env[n_in + j] = fn(*[env[s] for s in in_slots], **g.ops[j][1])
        return tuple(env[n_in + j] for j in g.outputs)

    def kernel(self, op):
        """The backend's registered kernel of ``op`` (extension kernels adapted)."""
        fn = registry.kernel(op, self.backend)
        prim = registry.ops.get(op)
        if getattr(prim, "is_extension", False):
            fn = prim.adapt(fn)
        return fn

    def build(self, i, env):
        g = self.group
        n_in = self.n_in
        ew, js = self.segs[i]
        if not ew:
            j = js[0]
            op, attrs, args = g.ops[j]
            return ("op", self.kernel(op), j, [k if src == "in" else n_in + k for src, k in args])
        sub_ops, in_slots, in_dtypes, param_ops = localize(g.ops, js, n_in, lambda s: self.dtype_of(env[s]))
        # only full and clip pass run-time scalars: the others need no op_params call per run
        param_ops = [(j, o) for j, o in param_ops if op_params(g.ops[j][0], g.ops[j][1], o)]
        fulls = [j for j in js if g.ops[j][0] == "full"]
        outs = [js.index(j) for j in js if j in self.needed]
        xs = [env[s] for s in in_slots]
        kern, rk = self.render(self.context_of(xs), sub_ops, in_dtypes, outs)
        return ("ew", kern, rk, in_slots, [n_in + js[q] for q in outs], param_ops, fulls)

    def op_by_op(self, inputs):
        g = self.group
        env = list(inputs)
        for op, attrs, args in g.ops:
            env.append(self.kernel(op)(*[env[k if src == "in" else self.n_in + k] for src, k in args], **attrs))
        return tuple(env[self.n_in + j] for j in g.outputs)
