"""The fusion planner: turns a flushed run of graph nodes into kernel launches.

Groups, in graph order:

* **element-wise**: consecutive element-wise nodes with the same output shape
  (inputs may broadcast into it);
* **reduce**: an element-wise group closed by a reduction of its result
  (the group is the reduction's prologue);
* **matmul**: a matmul followed by element-wise nodes that consume its result
  (the epilogue: bias, activation, residual).

Everything else is a boundary and runs as one kernel: movement ops, ops of
another output shape, and extension ops unless they opt in to fusion. The
backend is offered each group (``Backend.compile_group``); if it declines,
the group's nodes run one kernel each. Plans are cached by the structure of
the flushed graph (ops, static attributes, input dtypes, which outputs are still held)
with its sizes relative (:mod:`burn.shapekey`: sizes symbolic, ranks and equal/size-1 dims
kept), computed in one pass per flush with the concrete sizes beside it: a repeated
training step is planned once, and the same graph at new sizes (a new batch size or
sequence length) reuses the plan, its compiled groups as they are (``any_size``) or bound
to the new sizes (``bind``, see :func:`_compile`); only a structure never seen is planned.

``burn.fusion.explain(*tensors)`` shows the groups the pending work of those
tensors' devices would be planned into, and why each boundary was placed;
``BURN_FUSION_EXPLAIN=1`` prints every new plan.

Layering: this module sits on the registry (:mod:`burn.dispatch`) and the
primitives, below the lazy graph (:mod:`burn.graph`) that calls it. The
registry tells it when kernels change (``registry.on_invalidate``); the
graphs it explains are those of :data:`GRAPHS`, which ``burn.graph`` fills.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from operator import itemgetter

from .dispatch import registry
from . import dlpack as _dlpack
from .errors import BackendUnavailable, FailedValue, deferred_index_error, stale_input
from .primitives import ELEMENTWISE, MATMUL, REDUCE
from .shapekey import attrs_key as _attrs_key, relative_structure_key as _relative_structure_key
from .wholegraph import plan_whole_graph

__all__ = ["FusedGroup", "Plan", "explain", "Explanation", "plan_cache_info", "clear_plan_cache", "build_plan"]

_PLAN_CACHE: dict = {}
_GROUP_CACHE: dict = {}
_FAMILIES: dict = {}       # (backend, relative key) -> _Family: its plans at the sizes seen (burn.shapekey)
_MAX_CACHED_PLANS = 4096
# misses: flushes not found at their sizes; of those, "rebinds" reused the plan of the same
# graph at other sizes (no planner), "planned" ran the planner; "direct": small flushes run
# op by op without a plan (burn.graph.run_small_flush)
_STATS = {"hits": 0, "misses": 0, "uncacheable": 0, "rebinds": 0, "planned": 0, "direct": 0}

# (kind, index) -> LazyGraph of that device: burn.graph.graph_for creates and keeps them
# here, so explain() finds a device's pending work without importing the layer above
GRAPHS: dict = {}


@dataclass
class FusedGroup:
    """A group offered to ``Backend.compile_group``.

    ``ops`` lists ``(op_name, attrs, args)`` in order, where each arg is
    ``("in", k)`` (the k-th group input) or ``("op", j)`` (the result of op j).
    ``outputs`` lists the op indices whose results leave the group.

    Example (what ``exp(a * b)`` looks like to a backend's compiler):
        >>> import burn
        >>> from burn.fusion import FusedGroup
        >>> m = burn.TensorMeta((4,), burn.float32)
        >>> ops = [("mul", {}, [("in", 0), ("in", 1)]), ("exp", {}, [("op", 0)])]
        >>> g = FusedGroup("elementwise", ops, [m, m], [1], [m])
        >>> assert g.outputs == [1] and g.output_metas[0].shape == (4,)
    """
    kind: str
    ops: list
    input_metas: list
    outputs: list
    output_metas: list

    def key(self):
        """A hashable key: equal for groups with the same ops, attrs, input shapes and dtypes.

        Backends cache compiled groups under it.

        Example:
            >>> import burn
            >>> from burn.fusion import FusedGroup
            >>> def group(n):
            ...     m = burn.TensorMeta((n,), burn.float32)
            ...     return FusedGroup("elementwise", [("exp", {}, [("in", 0)])], [m], [0], [m])
            >>> assert group(4).key() == group(4).key() != group(5).key()
        """
        return (self.kind, tuple((n, _attrs_key(a), tuple(args)) for n, a, args in self.ops),
                tuple((tuple(m.shape), m.dtype.name) for m in self.input_metas), tuple(self.outputs))


@dataclass
class PlannedGroup:
    kind: str
    positions: list                # node positions in the flushed list
    reason: str = ""               # why the group ended
    compiled: bool = False


def _structure_key(nodes):
    """``(key, externals)`` of a flushed node list: ``key`` is one flat tuple that
    fixes the plan, ``externals`` the materialized input handles, listed per
    argument occurrence (the order ``Plan.run`` reads them in).

    Runs on every flush, so it is one pass that appends to one list (a flat
    tuple hashes and compares faster than a tuple of per-node tuples). Per
    node: its op name, its attributes (:func:`_attrs_key`), its number of
    arguments, per argument ``p * 16 + k`` for output ``k`` of node ``p``
    (``(p, k, None)`` for k >= 16), ``(shape, dtype)`` for an external handle
    seen for the first time or ``-1 - e`` for a repeat of the ``e``-th one,
    and which of its outputs are still held (a bool, or a tuple of them).
    Each node's output metas follow from its inputs' and its attributes.

    Example:
        >>> import burn
        >>> from burn.fusion import _structure_key
        >>> from burn.graph import graph_for
        >>> x = burn.ones((3,)); _ = x.numpy()
        >>> g = graph_for(x.device); g.flush()
        >>> y = (x * x).exp()
        >>> key, ext = _structure_key(g.pending)
        >>> assert key[:3] == ("mul", (), 2) and ext == [x._h, x._h]
        >>> assert key[3] == ((3,), burn.float32) and key[4] == -1      # x read twice: one slot
    """
    key = []
    add = key.append
    ext_ids = {}
    externals = []
    n_nodes = len(nodes)
    for n in nodes:
        attrs = n.attrs
        args = n.args
        add(n.prim.name)
        add(_attrs_key(attrs) if attrs else ())
        add(len(args))
        for a in args:
            if type(a) is tuple:
                src, k = a
                p = src.pos
                if p >= n_nodes or nodes[p] is not src:
                    raise stale_input(n)
                add(p * 16 + k if k < 16 else (p, k, None))
            else:
                # the same handle read twice must map to one slot in a cached plan
                e = ext_ids.get(id(a))
                if e is None:
                    ext_ids[id(a)] = len(ext_ids)
                    add((a.shape, a.dtype))
                else:
                    add(-1 - e)
                externals.append(a)
        outs = n.outs
        if len(outs) == 1:
            add(outs[0]() is not None)
        else:
            add(tuple([w() is not None for w in outs]))
    return tuple(key), externals


def _positions(nodes):
    return {id(n): i for i, n in enumerate(nodes)}


def _is_elementwise(prim):
    return prim.kind == ELEMENTWISE and prim.n_out == 1


MAX_REDUCE_PASSES = 3     # a reduce group walks its input at most this many times (var: 2)


def _arg_dtype(a):
    return a[0].metas[a[1]].dtype if type(a) is tuple else a.dtype


def _arg_shape(a):
    return a[0].metas[a[1]].shape if type(a) is tuple else a.shape


def _continues(cur, n):
    """A reduction continuing a reduce group (its next pass): same input shape, same axes."""
    return len(n.args) == 1 and _arg_shape(n.args[0]) == cur.full_shape and n.attrs.get("axis") == cur.axes


def plan_groups(nodes, pos=None, positions=None):
    """Split nodes (those at ``positions``, default all) into PlannedGroups;
    single nodes are groups of kind 'single'."""
    if pos is None:
        pos = {id(n): i for i, n in enumerate(nodes)}
    if positions is None:
        positions = range(len(nodes))
    groups: list[PlannedGroup] = []
    cur: PlannedGroup | None = None
    cur_shape = None
    members: set = set()

    def depends_on_group(n):
        return any(type(a) is tuple and pos[id(a[0])] in members for a in n.args)

    def close(reason):
        nonlocal cur, members
        if cur is not None:
            note = getattr(cur, "note", "")
            cur.reason = f"{note}; then {reason}" if note else reason
            if len(cur.positions) == 1 and cur.kind != "single":
                cur.kind = "single" if cur.kind != MATMUL else MATMUL
            groups.append(cur)
        cur = None
        members = set()

    for i in positions:
        n = nodes[i]
        prim = n.prim
        name = prim.name
        if _is_elementwise(prim):
            shape = n.metas[0].shape
            if cur is not None and cur.kind == REDUCE and depends_on_group(n) and (
                    shape == cur_shape or (shape == cur.full_shape and cur.passes < MAX_REDUCE_PASSES)):
                # the reduction's epilogue (mean's scale), or its next pass over the same input
                # (var's x - mean): a backend may run the whole group as one kernel
                if shape != cur_shape:
                    cur.passes += 1
                cur.positions.append(i)
                members.add(i)
                continue
            if cur is not None and cur.kind in (ELEMENTWISE, MATMUL) and cur_shape == shape:
                if cur.kind == ELEMENTWISE or depends_on_group(n):
                    cur.positions.append(i)
                    members.add(i)
                    continue
                close(f"'{name}' does not consume the matmul result, so it is not part of its epilogue")
            elif cur is not None:
                close(f"'{name}' has output shape {shape}, the group has {cur_shape}"
                      if cur.kind in (ELEMENTWISE, MATMUL) else f"'{name}' starts a new group")
            cur = PlannedGroup(ELEMENTWISE, [i])
            cur_shape = shape
            members = {i}
        elif prim.kind == REDUCE and cur is not None and depends_on_group(n) and (
                cur.kind == ELEMENTWISE or cur.kind == REDUCE and _continues(cur, n)):
            if cur.kind == ELEMENTWISE:     # the group so far is the reduction's prologue
                cur.kind, cur.full_shape, cur.axes, cur.passes = REDUCE, cur_shape, n.attrs.get("axis"), 1
                cur.note = f"reduction '{name}' closes its element-wise prologue"
            cur.positions.append(i)
            members.add(i)
            cur_shape = n.metas[0].shape
        elif prim.kind == REDUCE and prim.n_out == 1 and len(n.args) == 1:
            close(f"reduction '{name}' starts a new group")
            cur = PlannedGroup(REDUCE, [i])
            cur.full_shape, cur.axes, cur.passes = _arg_shape(n.args[0]), n.attrs.get("axis"), 1
            cur_shape = n.metas[0].shape
            members = {i}
        elif prim.kind == MATMUL:
            close(f"'{name}' starts a matmul group")
            cur = PlannedGroup(MATMUL, [i])
            cur_shape = n.metas[0].shape
            members = {i}
        else:
            if prim.kind == REDUCE:
                why = f"reduction '{name}' has no element-wise prologue in the open group"
            elif getattr(prim, "is_extension", False):
                why = f"extension op '{name}' is an opaque boundary (it did not opt in to fusion)"
            else:
                why = f"'{name}' is a {prim.kind} op, a boundary for fusion"
            close(why)
            groups.append(PlannedGroup("single", [i], why))
    close("end of the flushed graph")
    return groups


def _make_fused_group(kind, positions, nodes, pos, needed_outside):
    local = {p: j for j, p in enumerate(positions)}
    inputs, input_metas, input_ids = [], [], {}
    ops = []
    for p in positions:
        n = nodes[p]
        args = []
        for a in n.args:
            if type(a) is tuple and pos[id(a[0])] in local:
                args.append(("op", local[pos[id(a[0])]]))
            else:
                ident = (pos[id(a[0])], a[1]) if type(a) is tuple else ("h", id(a))
                if ident not in input_ids:
                    input_ids[ident] = len(inputs)
                    inputs.append(ident)
                    src = nodes[ident[0]].metas[ident[1]] if type(a) is tuple else a
                    input_metas.append(src)
                args.append(("in", input_ids[ident]))
        ops.append((n.prim.name, n.attrs, args))
    outputs = [local[p] for p in positions if p in needed_outside]
    group = FusedGroup(kind, ops, input_metas, outputs, [nodes[positions[j]].metas[0] for j in outputs])
    return group, inputs


class Plan:
    """An executable plan: a list of steps over a slot environment.

    The planner builds one per distinct graph structure and caches it (see
    :func:`plan_cache_info`); users never build one.

    Example:
        >>> from burn.fusion import Plan
        >>> p = Plan()
        >>> assert p.steps == [] and p.run([], [], 0) is None     # an empty plan does nothing
    """

    __slots__ = ("steps", "n_slots", "ext_slots", "results", "groups", "step_ins", "sites")

    def __init__(self):
        self.steps = []        # see _step: (fn, node_pos or None, n_in, a, b, out, free_slots)
        self.step_ins = []     # per step, its input slots (to propagate a failed value)
        self.ext_slots = []    # slot per external arg, in structure-key order
        self.results = []      # (node_pos, out_index, slot) for outputs someone holds
        self.n_slots = 0
        self.groups = []
        self.sites = []        # groups offered to compile_group: (step or None, kind, positions, needed, compiled)

    def run(self, nodes, externals, index):
        """Execute the steps: ``nodes`` is the flushed node list, ``externals`` the
        handles of already computed inputs, ``index`` the device index. Results
        are stored into the output handles that are still referenced.

        Example:
            >>> from burn.fusion import Plan
            >>> assert Plan().run(nodes=[], externals=[], index=0) is None
        """
        env = [None] * self.n_slots
        failed = False
        guarded = bool(_dlpack.GUARDS)
        for slot, h in zip(self.ext_slots, externals):
            d = env[slot] = h.data
            if d.__class__ is FailedValue:
                failed = True
            elif guarded:
                # memory shared by from_dlpack(copy=False) and written by its owner since: its
                # dependents fail, every other value of the flush is still computed
                err = _dlpack.written(d)
                if err is not None:
                    env[slot] = FailedValue(err)
                    failed = True
        if failed:
            self._run_failing(nodes, env, 0, None)
        else:
            try:
                _run_steps(self.steps, nodes, env)
            except _StepFailed as f:
                self._run_failing(nodes, env, next(i for i, st in enumerate(self.steps) if st is f.step), f.cause)
        for npos, k, slot in self.results:
            h = nodes[npos].outs[k]()
            if h is not None:
                h.data = env[slot]
                h.node = None

    def _run_failing(self, nodes, env, first, cause):
        """The steps from ``first`` on, after step ``first`` raised ``cause`` (an IndexError) or an
        external input is a FailedValue: a step that raises an IndexError, or reads a failed
        value, gets failed outputs; every other step still runs, so unrelated values are computed."""
        steps = self.steps
        for si in range(first, len(steps)):
            st = steps[si]
            if cause is not None:
                npos = st[1]
                bad = FailedValue(deferred_index_error(cause, nodes[npos] if npos is not None else None))
                cause = None
            else:
                bad = next((env[s] for s in self.step_ins[si] if env[s].__class__ is FailedValue), None)
                if bad is None:
                    try:
                        _run_steps((st,), nodes, env)
                        continue
                    except _StepFailed as f:
                        npos = st[1]
                        bad = FailedValue(deferred_index_error(f.cause, nodes[npos] if npos is not None else None))
            out = st[5]
            for s in ((out,) if type(out) is int else out):
                env[s] = bad
            for s in st[6]:
                env[s] = None


class _StepFailed(Exception):
    """A plan step's kernel raised an IndexError (a data-dependent error): carries the step."""

    def __init__(self, step, cause):
        self.step, self.cause = step, cause


def _run_steps(steps, nodes, env):
    """Run plan steps over the slot environment ``env`` (see :class:`Plan`)."""
    # steps are specialised by arity at build time (_step): no argument list, no **attrs without attributes
    try:
        for st in steps:
            fn, npos, n, a, b, out, frees = st
            if npos is None or not (attrs := nodes[npos].attrs):
                if n == 1:
                    res = fn(env[a])
                elif n == 2:
                    res = fn(env[a], env[b])
                else:
                    res = fn(*b(env)) if n else fn()
            elif n == 1:
                res = fn(env[a], **attrs)
            elif n == 2:
                res = fn(env[a], env[b], **attrs)
            else:
                res = fn(*b(env), **attrs) if n else fn(**attrs)
            if type(out) is int:
                env[out] = res if not isinstance(res, (tuple, list)) else res[0]
            else:
                for s, r in zip(out, res):
                    env[s] = r
            for s in frees:
                env[s] = None
    except IndexError as e:
        # values the op cannot accept (an index out of range): fail this step's outputs and
        # what depends on them, not the whole flush (Plan._run_failing)
        raise _StepFailed(st, e) from None


def _step(fn, npos, ins, outs, frees):
    """One Plan step: ``(fn, node_pos, n_inputs, a, b, out, frees)`` where a/b are
    the input slots of a one- or two-input step, else ``b`` gathers all inputs
    (an itemgetter returning a tuple); ``out`` is the output slot, or a tuple of
    slots for several outputs."""
    n = len(ins)
    a = ins[0] if n else None
    if n == 2:
        b = ins[1]
    elif n > 2:
        b = itemgetter(*ins)
    else:
        b = None
    out = outs[0] if len(outs) == 1 else tuple(outs)
    return (fn, npos, n, a, b, out, tuple(frees))


def _live_nodes(nodes, pos):
    """Positions of nodes whose results are held or feed a live node (dead-code elimination)."""
    live = [False] * len(nodes)
    for i in range(len(nodes) - 1, -1, -1):
        n = nodes[i]
        if not live[i]:
            for w in n.outs:
                if w() is not None:
                    live[i] = True
                    break
        if live[i]:
            for a in n.args:
                if type(a) is tuple:
                    live[pos[id(a[0])]] = True
    return live


def _build_plan(nodes, pos, backend):
    if getattr(backend, "compiles_graphs", False):     # the backend takes the whole flush (burn.wholegraph)
        return plan_whole_graph(nodes, pos, backend)
    plan = Plan()
    slots = {}               # (node_pos, out_idx) or ("h", id) -> slot
    ext_order = []

    def slot_for(key):
        s = slots.get(key)
        if s is None:
            s = slots[key] = plan.n_slots
            plan.n_slots += 1
        return s

    for i, n in enumerate(nodes):
        for a in n.args:
            if type(a) is not tuple:
                k = ("h", id(a))
                ext_order.append(k)
    # externals are listed per argument occurrence, matching _collect_externals
    plan.ext_slots = [slot_for(k) for k in ext_order]

    consumers_outside = {}   # (node_pos, k) -> set of group ids consuming it
    live = _live_nodes(nodes, pos)
    groups = plan_groups(nodes, pos, [i for i in range(len(nodes)) if live[i]])
    plan.groups = groups
    group_of = {}
    for gi, g in enumerate(groups):
        for p in g.positions:
            group_of[p] = gi
    held = set()
    for i, n in enumerate(nodes):
        if not live[i]:
            continue
        for k, w in enumerate(n.outs):
            if w() is not None:
                held.add((i, k))
        for a in n.args:
            if type(a) is tuple:
                consumers_outside.setdefault((pos[id(a[0])], a[1]), set()).add(group_of[i])

    last_use = {}
    raw_steps = []
    adapt = getattr(backend, "adapt_kernel", None)      # Backend's; duck-typed backends may lack it
    for gi, g in enumerate(groups):
        compiled = None
        if g.kind != "single" and len(g.positions) > 1:
            needed_outside = set()
            for p in g.positions:
                if (p, 0) in held or any(c != gi for c in consumers_outside.get((p, 0), ())):
                    needed_outside.add(p)
            fg, inputs = _make_fused_group(g.kind, g.positions, nodes, pos, needed_outside)
            compiled = _compile(backend, fg)
            plan.sites.append((len(raw_steps) if compiled is not None else None, g.kind, g.positions,
                               needed_outside, compiled))
            if compiled is not None:
                g.compiled = True
                ins = [slot_for(ident) for ident in inputs]
                outs = [slot_for((g.positions[j], 0)) for j in fg.outputs]
                raw_steps.append((compiled, None, ins, outs))
                continue
        for p in g.positions:
            n = nodes[p]
            fn = registry.kernel(n.prim.name, backend.name)
            if fn is None:
                raise BackendUnavailable(f"backend '{backend.name}' has no kernel for op '{n.prim.name}'")
            if getattr(n.prim, "is_extension", False):
                fn = n.prim.adapt(fn)
            if adapt is not None:
                fn = adapt(fn, n.prim.name, tuple(_arg_dtype(a) for a in n.args), tuple(m.dtype for m in n.metas))
            ins = [slot_for((pos[id(a[0])], a[1]) if type(a) is tuple else ("h", id(a))) for a in n.args]
            outs = [slot_for((p, k)) for k in range(len(n.metas))]
            raw_steps.append((fn, p, ins, outs))
    merged = getattr(backend, "merge_steps", lambda s, n: None)(raw_steps, nodes)    # Backend's hook
    if merged is not None:
        raw_steps, index_of = merged
        plan.sites = [(None if si is None else index_of[si],) + tuple(rest) for si, *rest in plan.sites]
    for si, (_, _, ins, _) in enumerate(raw_steps):
        for s in ins:
            last_use[s] = si
    held_slots = {slots[(p, k)] for (p, k) in held if (p, k) in slots}
    frees_at = {}
    for s, si in last_use.items():
        if s not in held_slots:
            frees_at.setdefault(si, []).append(s)
    plan.steps = [_step(fn, npos, ins, outs, frees_at.get(si, ())) for si, (fn, npos, ins, outs) in enumerate(raw_steps)]
    plan.step_ins = [tuple(ins) for _, _, ins, _ in raw_steps]
    plan.results = [(p, k, slots[(p, k)]) for (p, k) in sorted(held) if (p, k) in slots]
    if os.environ.get("BURN_FUSION_EXPLAIN"):
        print(_format_groups(groups, nodes), flush=True)
    return plan


def _collect_externals(nodes):
    return [a for n in nodes for a in n.args if type(a) is not tuple]


def build_plan(nodes, backend):
    """``(plan, externals)`` for ``nodes``, built now and not cached: ``burn.capture`` prepares
    a graph's replay with it once per backend (see :mod:`burn.capture.replay`).

    Example:
        >>> import burn
        >>> from burn.fusion import build_plan
        >>> from burn.graph import graph_for
        >>> x = burn.ones((3,)); _ = x.numpy()
        >>> g = graph_for(x.device); g.flush()
        >>> y = (x * x).exp()
        >>> plan, ext = build_plan(g.pending, x.device.backend)
        >>> assert ext == [x._h, x._h] and plan.steps
    """
    return _build_plan(nodes, _positions(nodes), backend), _collect_externals(nodes)


def _compile(backend, fg, like=None):
    """The backend's callable for group ``fg`` (None: declined), cached by the group's exact key.
    ``like``, compiled for the same group at other sizes, binds the new sizes cheaply where it
    has a ``bind(group)`` method; one whose ``any_size`` is true runs every size of its relative
    key as it is (the compiled-group contract in docs/plugins.md)."""
    try:
        gkey = (backend.name, fg.key())
        compiled = _GROUP_CACHE.get(gkey)
    except TypeError:      # unhashable attrs: compile without caching
        return backend.compile_group(fg)
    if compiled is None:
        bind = getattr(like, "bind", None)
        compiled = bind(fg) if bind is not None else None
        if compiled is None:
            compiled = backend.compile_group(fg)
        if compiled is not None:
            if len(_GROUP_CACHE) >= _MAX_CACHED_PLANS:
                _GROUP_CACHE.clear()
            _GROUP_CACHE[gkey] = compiled
    return compiled


def _rebind(template, nodes, backend):
    """``template``'s plan for ``nodes``, the same graph at other sizes (one relative key): the
    slots and steps are the template's, each compiled group is bound to the new sizes (not one a
    backend's merge_steps folded into another step: index None). None when a group compiles
    differently at these sizes (declined here, accepted there): the caller plans from scratch."""
    sites = [st for st in template.sites if not getattr(st[4], "any_size", False) and (st[0] is not None or st[4] is None)]
    if not sites:
        return template         # every compiled group runs at any sizes (see _compile)
    pos = _positions(nodes)
    steps = list(template.steps)
    for si, kind, positions, needed, old in sites:
        fg, _ = _make_fused_group(kind, positions, nodes, pos, needed)
        new = _compile(backend, fg, old)
        if (new is None) != (old is None):
            return None
        if new is not None:
            steps[si] = (new,) + steps[si][1:]
    plan = Plan()
    plan.steps, plan.n_slots, plan.ext_slots, plan.results = steps, template.n_slots, template.ext_slots, template.results
    plan.groups, plan.step_ins, plan.sites = template.groups, template.step_ins, template.sites
    return plan


def _plan_new(key, nodes, backend):
    """The plan for a flush of a whole-graph backend (``compiles_graphs``) its exact key did not
    find: such a backend compiles the flush at its sizes (its graph carries the shapes), so there
    is no plan to rebind and each new size is a new plan."""
    _STATS["planned"] += 1
    return _build_plan(nodes, _positions(nodes), backend)


class _Family:
    """The plans of one relative key (one graph structure at any sizes, :mod:`burn.shapekey`):
    ``template``, the first one planned; ``size_free`` when every compiled group of it runs at
    any sizes (``any_size``), so it is the plan at every size; ``plans``, per tuple of sizes
    (the concrete size of each symbol), the plan at those sizes (the template, the template
    rebound, or planned anew where a group compiles differently there)."""

    __slots__ = ("template", "size_free", "plans")

    def __init__(self, template, sizes):
        self.template = template
        self.size_free = not any(not getattr(st[4], "any_size", False) for st in template.sites)
        self.plans = {sizes: template}


_MAX_SIZES_PER_FAMILY = 256


def get_plan(nodes, backend):
    """The (cached) plan for these nodes and the external handles it reads.

    One pass over the nodes gives the relative key and the sizes (:func:`burn.shapekey.relative_structure_key`):
    a structure seen before at these sizes is a hit; at new sizes its plan is reused (a size-free
    one as it is, else rebound, see :func:`_rebind`); only a structure never seen is planned.
    Whole-graph backends are keyed by the exact structure (:func:`_structure_key`)."""
    if getattr(backend, "compiles_graphs", False):
        key, externals = _structure_key(nodes)
        full_key = (backend.name, key)
        try:
            plan = _PLAN_CACHE.get(full_key)
        except TypeError:
            _STATS["uncacheable"] += 1
            return _build_plan(nodes, _positions(nodes), backend), externals
        if plan is None:
            _STATS["misses"] += 1
            plan = _plan_new(key, nodes, backend)
            if len(_PLAN_CACHE) >= _MAX_CACHED_PLANS:
                _PLAN_CACHE.clear()
            _PLAN_CACHE[full_key] = plan
        else:
            _STATS["hits"] += 1
        return plan, externals
    rkey, sizes, externals = _relative_structure_key(nodes)
    fkey = (backend.name, rkey)
    try:
        family = _FAMILIES.get(fkey)
    except TypeError:      # unhashable attributes of a fusing op
        _STATS["uncacheable"] += 1
        return _build_plan(nodes, _positions(nodes), backend), externals
    if family is not None:
        plan = family.plans.get(sizes)
        if plan is not None:
            _STATS["hits"] += 1
            return plan, externals
        _STATS["misses"] += 1
        plan = family.template if family.size_free else _rebind(family.template, nodes, backend)
        if plan is None:
            _STATS["planned"] += 1
            plan = _build_plan(nodes, _positions(nodes), backend)
        else:
            _STATS["rebinds"] += 1
        if len(family.plans) >= _MAX_SIZES_PER_FAMILY:
            family.plans.clear()
        family.plans[sizes] = plan
        return plan, externals
    _STATS["misses"] += 1
    _STATS["planned"] += 1
    plan = _build_plan(nodes, _positions(nodes), backend)
    if len(_FAMILIES) >= _MAX_CACHED_PLANS:
        _FAMILIES.clear()
    _FAMILIES[fkey] = _Family(plan, sizes)
    return plan, externals


def plan_cache_info() -> dict:
    """Plan-cache counters, e.g. to check a training loop is planned once: ``hits`` (found by
    the exact key), ``misses`` (not found), and of the misses ``rebinds`` (the plan of the same
    graph at other sizes, bound to these) and ``planned`` (the planner ran); ``size``: plans held.

    Example:
        >>> import burn
        >>> info = burn.fusion.plan_cache_info()
        >>> assert {"hits", "misses", "rebinds", "planned", "size"} <= set(info)
    """
    return dict(_STATS, size=len(_PLAN_CACHE) + sum(len(f.plans) for f in _FAMILIES.values()))


def clear_plan_cache() -> None:
    """Forget cached plans and compiled groups.

    The registry calls it when kernels change (``registry.on_invalidate``); call it
    to measure planning cost.

    Example:
        >>> import burn
        >>> burn.fusion.clear_plan_cache()
        >>> assert burn.fusion.plan_cache_info()["size"] == 0
    """
    _PLAN_CACHE.clear()
    _GROUP_CACHE.clear()
    _FAMILIES.clear()


def _format_groups(groups, nodes):
    lines = []
    for gi, g in enumerate(groups):
        ops = " -> ".join(nodes[p].prim.name for p in g.positions)
        tag = g.kind if g.kind != "single" else "kernel"
        lines.append(f"[{gi}] {tag}: {ops}")
        lines.append(f"     boundary: {g.reason}")
    return "\n".join(lines)


@dataclass
class Explanation:
    """What fusion would do with the pending work: ``groups`` is a list of
    ``(kind, [op names], boundary reason)``; ``str()`` renders it.

    Example:
        >>> import burn
        >>> y = (burn.ones((4,)) * 2).exp()
        >>> e = burn.fusion.explain(y)
        >>> assert e.groups[0][0] == "elementwise" and "exp" in e.groups[0][1]
        >>> assert "elementwise" in str(e)
    """
    groups: list = field(default_factory=list)
    text: str = ""

    def __str__(self):
        return self.text or "(nothing pending)"

    __repr__ = __str__


def explain(*tensors, device=None) -> Explanation:
    """Explain how the pending (not yet executed) work would be fused: that of the
    devices of ``tensors`` and of ``device``; with neither, of every device with
    pending work.

    Example:
        >>> import burn
        >>> x = burn.ones((4, 4))
        >>> y = (x * 2 + 1).exp()
        >>> ex = burn.fusion.explain(y)
        >>> assert ex.groups[0][0] == "elementwise" and ex.groups[0][1][-3:] == ["mul", "add", "exp"]
    """
    graphs = []
    for t in tensors:
        g = t._h.graph
        if g not in graphs:
            graphs.append(g)
    if device is not None:
        g = GRAPHS.get((device.kind, device.index))     # none yet: nothing pending there
        if g is not None and g not in graphs:
            graphs.append(g)
    if not tensors and device is None:
        graphs = list(GRAPHS.values())
    out = Explanation()
    texts = []
    for g in graphs:
        nodes = list(g.pending)
        if not nodes:
            continue
        pos = {id(n): i for i, n in enumerate(nodes)}
        live = _live_nodes(nodes, pos)
        groups = plan_groups(nodes, pos, [i for i in range(len(nodes)) if live[i]])
        out.groups.extend((gr.kind if gr.kind != "single" else "kernel",
                           [nodes[p].prim.name for p in gr.positions], gr.reason) for gr in groups)
        texts.append(f"device {g.kind}:{g.index}, {len(nodes)} pending ops\n" + _format_groups(groups, nodes))
    out.text = "\n".join(texts)
    return out


registry.on_invalidate(clear_plan_cache)
