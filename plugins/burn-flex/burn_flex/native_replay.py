"""A replayed graph's steps as native call tables: one ctypes call per segment, no Python per step.

A ``burn.capture`` replay on flex (``burn_flex.replay.FlatReplay``) still runs each step
through Python: ~5-10 us a step of argument handling, a third of the digits CNN's inference
(docs/benchmarks.md, round 18). Where every step of a replay is one of the kernels below, the
first replay records the arrays of every slot and this module lowers the steps to rows of
``wp_strided_chunk`` (``kernels/ll/workers.ll``): a kernel address and its arguments, each an
address that may advance by a number of bytes per item (per image). Later replays patch the
addresses that change (the inputs, the results) and run the rows in native code.

What lowers (anything else, or ``BURN_FLEX_NATIVE_REPLAY=0``, leaves the replay to Python):

- a merged convolution + bias + relu (+ 2 x 2 max pooling) that takes the direct kernel
  (``burn_flex.conv_epilogue``): its padding pass and its kernel, with the weights packed in
  Python before the rows run (kept while their bytes are unchanged, as the Python step keeps them);
- a ``reshape`` that is a view (the same buffer);
- a compiled element-wise group (``burn_flex.jit_groups``; also one the replay runs in numpy
  because it is small, when its ops compile: the compiled loop gives numpy's bits), with a leading
  2-D ``matmul`` called through numpy's own BLAS as numpy's matmul calls it (``wp_sgemm`` /
  ``wp_sgemv``: its ``cblas_sgemm`` with its transposition flags, or ``cblas_sgemv`` for one row
  or one column, so numpy's bits; a dot, an inner dimension of one and ``x @ x.T`` of one array,
  which numpy computes otherwise, do not run natively).

Every row calls the kernel the Python step calls, with the same arguments: the results are the
Python replay's bits (checked once when the program is built: a program that differs is
dropped with a warning).

Segments: the convolutions and their padding, whose items are images, may split their images
over the native pool (``burn_flex.native_pool``): a chunk runs *all* the segment's rows for its
images, so what a row writes is read by the next row on the same core (splitting each
convolution alone moved its operands between the cores and gained little: round 17). GEMMs and
element-wise groups run whole on the calling thread, as in the Python replay (numpy's BLAS
chooses its own threads; a GEMM split by rows gives other bits).

Memory: the intermediate values live in one arena per program, allocated and zeroed once (a
pooled convolution writing into a padded buffer relies on its border staying zero), each in its
own place: a graph whose values total more than ``MAX_ARENA_BYTES`` (64 MiB) is not lowered.
Results are fresh arrays per replay. A program runs one replay at a time: a second thread replaying the same
graph meanwhile runs the Python steps.

Example::

    >>> import numpy as np, burn
    >>> from burn_flex import native_replay
    >>> x = burn.tensor(np.ones((64, 4, 8, 8), np.float32))
    >>> w, b = burn.tensor(np.ones((8, 4, 3, 3), np.float32)), burn.tensor(np.zeros(8, np.float32))
    >>> g = burn.capture.trace(lambda x: burn.nn.functional.conv2d(x, w, b, padding=1).relu(), x)
    >>> y = g(x); y = g(x)
    >>> float(y.numpy()[0, 0, 4, 4])
    36.0
"""
from __future__ import annotations

import ctypes
import glob
import os
import threading
import warnings

import numpy as np

from . import conv_epilogue, fused, jit, jit_groups, native_pool
from .kernels import conv_direct as _conv_direct
from .kernels import linear as _linear
from .kernels import movement as _movement

__all__ = ["build", "enabled", "why_not"]

# a segment of convolutions splits its images over the native pool from this many multiply-adds
# (the digits CNN's two convolutions at batch 64: 5.3 M), in chunks of at least
# conv_direct._CHUNK_MACS, as a convolution alone splits
SPLIT_MACS = 1 << 21
# a program keeps every intermediate value of its replay in its arena (the Python steps free
# each one after its last use): graphs whose values total more run their steps in Python
MAX_ARENA_BYTES = 64 << 20
_ROW = native_pool.STRIDED_ROW      # i64s per wp_strided_chunk table
_ARGS = native_pool._MAX_ARGS       # arguments a row passes
_ALIGN = 64


def enabled() -> bool:
    """Whether replays may run as native programs (``BURN_FLEX_NATIVE_REPLAY`` is not ``0``).

    Example::

        >>> from burn_flex import native_replay
        >>> isinstance(native_replay.enabled(), bool)
        True
    """
    return os.environ.get("BURN_FLEX_NATIVE_REPLAY", "1").strip() != "0"


class _Decline(Exception):
    """This replay does not lower (the message says why: ``FlatReplay.describe`` shows it)."""


def _fn_addr(fn) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value


class _Buffer:
    """Memory a program reads or writes: a graph source (its array per replay), a fresh result,
    or a part of the arena. ``shape``/``dtype``: the array the slot held when recorded."""

    __slots__ = ("kind", "index", "shape", "dtype", "zeroed", "offset", "strides")

    def __init__(self, kind, shape, dtype, zeroed=False, strides=None):
        self.kind, self.shape, self.dtype, self.zeroed = kind, tuple(shape), np.dtype(dtype), zeroed
        self.strides, self.index, self.offset = strides, None, None

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


class _Row:
    """One kernel call: ``args`` are ``(buffer, bytes per item)``, ``("const", value)`` or
    ``("prologue", key)`` (an address the replay's Python prologue provides: packed weights);
    ``geometry``: ``(argument, length, entry, multiplier)`` of the count patched per chunk."""

    __slots__ = ("fn", "args", "geometry", "items", "macs", "keep")

    def __init__(self, fn, args, geometry=None, items=None, macs=0, keep=()):
        if len(args) > _ARGS:
            raise _Decline(f"a kernel call with {len(args)} arguments (rows take {_ARGS})")
        self.fn, self.args, self.geometry, self.items, self.macs, self.keep = fn, args, geometry, items, macs, keep


class _Lowering:
    """The state of lowering one replay: the buffer of every slot, the rows, the prologue."""

    def __init__(self, flat, env):
        self.env, self.rows, self.prologue = env, [], []
        self.distinct = []          # pairs of sources a matmul reads: numpy takes syrk where they are one array
        self.slot_buf = {}
        self.sources = []           # (slot, buffer) of the graph's sources, in FlatReplay.sources order
        for slot, _ in flat.sources:
            a = env[slot]
            if not isinstance(a, np.ndarray):
                raise _Decline(f"source slot {slot} holds {type(a).__name__}")
            b = _Buffer("source", a.shape, a.dtype, strides=a.strides)
            b.index = len(self.sources)
            self.sources.append((slot, b))
            self.slot_buf[slot] = b

    def value(self, slot):
        a = self.env[slot]
        if not isinstance(a, np.ndarray):
            raise _Decline(f"slot {slot} holds {type(a).__name__}")
        return a

    def buffer(self, slot):
        b = self.slot_buf.get(slot)
        if b is None:
            raise _Decline(f"slot {slot} is read before a lowered step writes it")
        return b

    def output(self, slot, zeroed=False):
        a = self.value(slot)
        if not a.flags.c_contiguous:
            raise _Decline(f"slot {slot}'s array is not C-contiguous")
        b = self.slot_buf[slot] = _Buffer("arena", a.shape, a.dtype, zeroed)
        return b

    def scratch(self, shape, dtype):
        return _Buffer("arena", shape, dtype)


def _slots_of(step, n_slots):
    fn, npos, n, a, b, out, frees = step
    if n == 1:
        ins = (a,)
    elif n == 2:
        ins = (a, b)
    elif n:
        ins = tuple(b(list(range(n_slots))))
    else:
        ins = ()
    return ins, ((out,) if type(out) is int else tuple(out))


def _lower_conv(low, fn, ins, outs):
    """A merged direct convolution (``conv_epilogue._ReplayConv``)."""
    call = fn.call
    if call is None or not conv_epilogue._direct_inline():
        raise _Decline("a convolution the direct kernel does not take")
    if len(ins) != 3 or len(outs) != 1:
        raise _Decline("a convolution step of another arity")
    x_slot, w_slot, b_slot = ins
    x, w, bias = low.value(x_slot), low.value(w_slot), low.value(b_slot)
    if tuple(x.shape) != call.x_shape or tuple(w.shape) != call.w_shape or x.dtype != np.float32 \
            or not x.flags.c_contiguous:
        raise _Decline("a convolution whose input is not the prepared C-contiguous float32 array")
    wb, bb = low.buffer(w_slot), low.buffer(b_slot)
    if wb.kind != "source" or bb.kind != "source" or bias.size != call.c_out or bias.dtype != np.float32:
        raise _Decline("a convolution whose weights or bias are computed in the graph")
    if not w.flags.c_contiguous:            # PackedWeights would copy them per replay to compare them
        raise _Decline("a convolution whose weights are a strided view")
    xb = low.buffer(x_slot)
    n = call.x_shape[0]
    if call.pad_geo is not None:
        xp = low.scratch(call.xp_shape, np.float32)
        low.rows.append(_Row(_fn_addr(call.pad_fn), [(xb, x[0].nbytes), (xp, xp.nbytes // n),
                                                     ("const", jit._addr(call.pad_geo))],
                             geometry=(2, call.pad_geo.size, 0, call.x_shape[1]), items=n, keep=(call,)))
    else:
        xp = xb
    y = low.value(outs[0])
    if tuple(y.shape) != call.y_shape:
        raise _Decline("a convolution whose result is not the prepared shape")
    yb = low.output(outs[0], zeroed=call.zeroed)
    d_bias = call.keep[1]
    extra = [("const", a) for a in call.tail[3]]
    key = len(low.prologue)
    # a bias that fills the kernel's lanes is read where it is (as _epilogue_args passes it);
    # else the prologue pads a copy per replay
    direct_bias = bias.size == call.lanes and bias.flags.c_contiguous
    low.prologue.append(_ConvPrologue(call, wb.index, None if direct_bias else bb.index))
    args = [(xp, xp.nbytes // n), ("prologue", (key, 0)), (yb, yb.nbytes // n), ("const", jit._addr(d_bias)),
            ("const", call.fixed[0]), ("const", call.fixed[1]),
            (bb, 0) if direct_bias else ("prologue", (key, 1))] + extra
    low.rows.append(_Row(_fn_addr(call.fn), args, geometry=(3, d_bias.size, 0, 1), items=n, macs=call.macs,
                         keep=(call,)))


class _ConvPrologue:
    """Before a replay's rows run: a convolution's packed weights (``conv_epilogue.PackedWeights``:
    packed again where their bytes changed) and, where the bias does not fill the kernel's lanes,
    its padded copy."""

    __slots__ = ("call", "w_source", "b_source", "weights", "packed", "lanes", "entries")

    def __init__(self, call, w_source, b_source):
        self.call, self.w_source, self.b_source = call, w_source, b_source
        self.weights = conv_epilogue.PackedWeights(call)
        self.packed = self.lanes = None         # what the table holds (kept alive here)
        self.entries = (-1, -1)         # the table entries of the packed weights and the bias lanes

    def patch(self, data, tab):
        """Write this replay's packed weights (and bias lanes) into ``tab`` where they changed;
        ``data``: the replay's sources, by index."""
        packed = self.weights.of(data[self.w_source])
        if packed is not self.packed:
            self.packed = packed
            tab[self.entries[0]] = jit._addr(packed)
        if self.b_source is not None:
            self.lanes = _conv_direct._epilogue_args(data[self.b_source].reshape(-1), False, self.call.lanes)[1]
            tab[self.entries[1]] = jit._addr(self.lanes)


def _lower_reshape(low, fn, ins, outs):
    if len(ins) != 1 or len(outs) != 1:
        raise _Decline("a reshape of another arity")
    a, r = low.value(ins[0]), low.value(outs[0])
    if not (r.flags.c_contiguous and a.flags.c_contiguous and jit._addr(a) == jit._addr(r)
            and a.nbytes == r.nbytes):
        raise _Decline("a reshape that copies")
    low.slot_buf[outs[0]] = _Alias(_base(low.buffer(ins[0])), r.shape, r.dtype)


class _Alias:
    """Another shape of a buffer's memory (a reshape): rows use its base buffer."""

    __slots__ = ("base", "shape", "dtype")

    def __init__(self, base, shape, dtype):
        self.base, self.shape, self.dtype = base, tuple(shape), np.dtype(dtype)

    @property
    def kind(self):
        return self.base.kind


def _base(b):
    return b.base if isinstance(b, _Alias) else b


def _lower_group(low, fn, ins, outs):
    """A compiled element-wise group (``jit_groups._ReplayRunner``), its leading matmul first."""
    if fn.launch is None or fn.launch.parallel:
        raise _Decline("an element-wise group that is not one compiled call on this thread")
    _lower_runner(low, fn.runner, fn.launch, ins, outs)


def _lower_whole_group(low, fn, ins, outs):
    """A group the replay runs op by op in numpy (``fused._WholeGroup``: below
    ``jit_groups.MIN_SIZE`` elements) whose ops compile: the compiled loop (numpy's bits)."""
    prep = getattr(fn, "prep", None)
    if prep is None or prep.compiled is None or prep.halves is not None:
        raise _Decline("a group whose ops do not compile")
    _lower_runner(low, prep.compiled.runner(prep.steps, prep.n_in, prep.outputs), None, ins, outs)


def _lower_runner(low, r, launch, ins, outs):
    """A ``jit_groups._PlanRunner``'s head matmul and compiled loop (``launch``: the loop bound to
    the sources' shapes, or None to bind it here)."""
    if r.tail or not jit_groups.ENABLED:
        raise _Decline("a group with ops after its compiled loop")
    if len(ins) != r.n_in:
        raise _Decline("an element-wise group of another arity")
    env_buf = [low.buffer(s) for s in ins]
    env_val = [low.value(s) for s in ins]
    for head_fn, attrs, idx in r.head:
        if head_fn is not _linear.matmul or attrs or len(idx) != 2:
            raise _Decline(f"a group whose head is {getattr(head_fn, '__name__', head_fn)!r}")
        a, b = env_val[idx[0]], env_val[idx[1]]
        ab, bb = env_buf[idx[0]], env_buf[idx[1]]
        c = _lower_matmul(low, a, b, ab, bb)
        env_buf.append(c)
        env_val.append(np.empty(c.shape, np.float32))
    if launch is None:
        launch = r._launch_for(tuple([env_val[k].shape for k in r.src_idx]))
        if launch is None:
            raise _Decline("a group whose inputs need more axes than the compiled loops take")
    srcs = []
    for k in r.src_idx:
        v, b = env_val[k], env_buf[k]
        if not (v.flags.c_contiguous and v.dtype in (np.float32, np.bool_)):
            raise _Decline("a group source that is not C-contiguous")
        srcs.append((b, 0))
    out_bufs = []
    for k, j in enumerate(r.plan.keep):
        out_bufs.append(_Buffer("arena", launch.out_shape, launch.out_dtypes[k]))
    if len(srcs) + len(out_bufs) + 3 > _ARGS:
        raise _Decline("an element-wise group with more arguments than a row takes")
    keep = list(r.plan.keep)
    n_head = len(r.head)
    results = []
    for j in r.outputs:
        if j < r.n_in + n_head:
            raise _Decline("a group whose output is one of its inputs")
        op = j - r.n_in
        if op not in keep:
            raise _Decline("a group output the compiled run does not write")
        results.append(out_bufs[keep.index(op)])
    if len(results) < len(outs):
        raise _Decline("a group with fewer outputs than its step")
    for slot, b in zip(outs, results):
        a = low.value(slot)
        if tuple(a.shape) != b.shape or a.dtype != b.dtype:
            raise _Decline("a group whose recorded result differs from its launch")
        low.slot_buf[slot] = b
    args = srcs + [(b, 0) for b in out_bufs] + [("const", launch.geo_addr), ("const", 0), ("const", launch.rows)]
    low.rows.append(_Row(_fn_addr(launch.fn), args, keep=(launch,)))


def _lower_matmul(low, a, b, ab, bb):
    """``a @ b`` (2-D float32) as numpy's matmul computes it (numpy/_core/src/umath/matmul.c.src):
    ``cblas_sgemm`` with its transposition flags, or ``cblas_sgemv`` for one row or one column;
    the forms numpy computes without BLAS (a dot, a length-1 inner dimension) do not lower, nor
    ``a @ a.T`` (numpy's syrk): operands that are one buffer."""
    blas = _blas()
    if blas is None:
        raise _Decline("numpy's BLAS (scipy-openblas' cblas_sgemm) is not found")
    if a.ndim != 2 or b.ndim != 2 or a.dtype != np.float32 or b.dtype != np.float32:
        raise _Decline("a matmul that is not 2-D float32")
    (m, k), p = a.shape, b.shape[1]
    if k < 2 or min(m, p) < 1 or (m == 1 and p == 1) or max(m, k, p) > _BLAS_MAX:
        raise _Decline("a matmul numpy computes without BLAS (a dot, or an inner dimension of one)")
    if _base(ab) is _base(bb):
        raise _Decline("a matmul of a buffer with itself (numpy's syrk)")
    (is1_m, is1_n), (is2_n, is2_p) = a.strides, b.strides
    c = _Buffer("arena", (m, p), np.float32)
    workers = jit.kernels().workers
    if m > 1 and p > 1:
        ta, lda = _gemm_operand(is1_m, is1_n, m, k, "left")
        tb, ldb = _gemm_operand(is2_n, is2_p, k, p, "right")
        geo = np.array([blas[0], m, p, k, lda, ldb, p, tb, ta], np.int64)
        args = [(ab, 0), (bb, 0), (c, 0)]
        fn = workers.sgemm
    else:
        if m == 1:          # vector @ matrix: the matrix is b, read with its p and n strides
            mat, vec, mat_m, mat_n, vec_stride, mb, vb, rows = b, a, is2_p, is2_n, is1_n, bb, ab, p
            ok = _blasable(is2_n, is2_p, k, p) or _blasable(is2_p, is2_n, p, k)
        else:               # matrix @ vector
            mat, vec, mat_m, mat_n, vec_stride, mb, vb, rows = a, b, is1_m, is1_n, is2_n, ab, bb, m
            ok = _blasable(is1_m, is1_n, m, k) or _blasable(is1_n, is1_m, k, m)
        if not ok or not _blasable(vec_stride, 4, k, 1):
            raise _Decline("a matrix-vector product of strided operands")
        if _blasable(mat_m, mat_n, rows, k):
            order, lda = 102, mat_m // 4
        else:
            order, lda = 101, mat_n // 4
        geo = np.array([blas[1], order, k, rows, lda, vec_stride // 4, 1], np.int64)
        args = [(mb, 0), (vb, 0), (c, 0)]
        fn = workers.sgemv
    low.rows.append(_Row(fn, args + [("const", jit._addr(geo))], keep=(geo,)))
    if ab.kind == "source" and bb.kind == "source":
        low.distinct.append((_base(ab).index, _base(bb).index))
    return c


_BLAS_MAX = (1 << 31) - 2


def _gemm_operand(s_rows, s_cols, rows, cols, side):
    """``(transposition, leading dimension)`` numpy's matmul passes for an operand of these byte
    strides: as stored (111) or transposed (112)."""
    if _blasable(s_rows, s_cols, rows, cols):
        return 111, s_rows // 4
    if _blasable(s_cols, s_rows, cols, rows):
        return 112, s_cols // 4
    raise _Decline(f"a matmul whose {side} operand is strided")


def _blasable(byte_stride1, byte_stride2, d1, d2, itemsize=4) -> bool:
    """numpy's ``is_blasable2d``: the second axis contiguous, the first a whole number of items
    at least as long as a row."""
    if byte_stride2 != itemsize or byte_stride1 % itemsize:
        return False
    return d2 <= byte_stride1 // itemsize <= _BLAS_MAX


def _lowerer(fn):
    if isinstance(fn, conv_epilogue._ReplayConv):
        return _lower_conv
    if isinstance(fn, jit_groups._ReplayRunner):
        return _lower_group
    if isinstance(fn, fused._WholeGroup):
        return _lower_whole_group
    if getattr(fn, "func", None) is _movement.reshape:
        return _lower_reshape
    return None


_blas_addrs = []


def _blas():
    """The addresses of the ``cblas_sgemm`` and ``cblas_sgemv`` numpy's matmul calls (in the
    scipy-openblas numpy ships), or None."""
    if not _blas_addrs:
        addrs = None
        try:
            blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
            if blas.get("name") == "scipy-openblas":
                libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs",
                                              "libscipy_openblas*.so"))
                if len(libs) == 1:
                    lib = ctypes.CDLL(libs[0])
                    addrs = (_fn_addr(lib.scipy_cblas_sgemm64_), _fn_addr(lib.scipy_cblas_sgemv64_))
        except (AttributeError, KeyError, OSError, TypeError):
            addrs = None
        _blas_addrs.append(addrs)
    return _blas_addrs[0]


def why_not(flat):
    """Why the steps of ``flat`` (a ``FlatReplay``) cannot lower, read off the steps alone (no
    replay needed), or None where they may (:func:`build` then decides from the arrays).

    Example::

        >>> import burn
        >>> from burn_flex import native_replay
        >>> g = burn.capture.trace(lambda x: x + burn.rand((3,)), burn.ones((3,)))
        >>> _ = g(burn.ones((3,)))
        >>> native_replay.why_not(g._prepared["flex"].runners[0])
        'a step with attributes read per replay (a random op)'
    """
    if not enabled():
        return "BURN_FLEX_NATIVE_REPLAY=0"
    total = sum(int(np.prod(m.shape, dtype=np.int64)) * m.dtype.itemsize for n in flat.nodes for m in n.metas)
    if total > MAX_ARENA_BYTES:
        # a program keeps every intermediate value (and the first replay records them all)
        return (f"its values total {total / (1 << 20):.0f} MiB, more than a program keeps "
                f"({MAX_ARENA_BYTES >> 20} MiB)")
    for step in flat.steps:
        if step[1] is not None:
            return "a step with attributes read per replay (a random op)"
        if _lowerer(step[0]) is None:
            name = getattr(step[0], "__name__", None) or getattr(getattr(step[0], "func", None), "__name__", "?")
            return f"step {name!r} has no native form"
    return None


def build(flat, env):
    """The :class:`Program` of ``flat`` (a ``FlatReplay``) from ``env``, the slot arrays of one
    replay just run (nothing freed), or a string saying why it does not lower.

    Example::

        >>> from burn_flex import native_replay
        >>> isinstance(native_replay.build.__doc__, str)
        True
    """
    k = jit.kernels()
    if k is None:
        return "flex's JIT is not available"
    why = why_not(flat)
    if why is not None:
        return why
    try:
        low = _Lowering(flat, env)
        for step in flat.steps:
            ins, outs = _slots_of(step, flat.n_slots)
            _lowerer(step[0])(low, step[0], ins, outs)
        if not low.rows:
            raise _Decline("nothing to run")
        results = []
        for h, slot in flat.results:
            b = low.slot_buf.get(slot)
            if b is None or b.kind == "source":
                raise _Decline("a result that is a graph source")
            results.append(b)
        prog = Program(k, low, results)
    except _Decline as e:
        return str(e)
    return prog


class Program:
    """A lowered replay (see the module docstring): ``run(env)`` -> the result arrays, or None
    where this replay must run in Python (a source of another layout, the program busy)."""

    def __init__(self, k, low, results):
        self.k = k
        self.lock = threading.Lock()
        self.prologue = low.prologue
        self.flags = _flags()
        # results: fresh per replay; a result's aliases read it; everything else lives in the arena
        fresh = []
        for b in results:
            base = _base(b)
            base.kind = "fresh"
            if base not in fresh:
                fresh.append(base)
        self.results = [(fresh.index(_base(b)), b.shape if isinstance(b, _Alias) else None) for b in results]
        arena_bufs = []
        for row in low.rows:
            for a in row.args:
                if isinstance(a[0], (_Buffer, _Alias)):
                    b = _base(a[0])
                    if b.kind == "arena" and b not in arena_bufs:
                        arena_bufs.append(b)
        size = 0
        for b in arena_bufs:
            b.offset = size
            size += -(-max(b.nbytes, 1) // _ALIGN) * _ALIGN
        self.arena = np.zeros(size + _ALIGN, np.uint8)
        base_addr = -(-jit._addr(self.arena) // _ALIGN) * _ALIGN
        sources = low.sources
        self.last = [None] * len(sources)
        # segments: runs of rows over the same images that may split, and whole rows
        segs = []
        for row in low.rows:
            split = row.items if row.items and row.items > 1 else None
            if segs and segs[-1][0] == split:
                segs[-1][1].append(row)
            else:
                segs.append([split, [row]])
        n_int = sum(8 + _ROW * len(rows) for _, rows in segs)
        self.table = np.zeros(n_int, np.int64)
        tab_addr = jit._addr(self.table)
        self.segments = []
        patch_source = [[] for _ in sources]     # per source: table indices
        patch_fresh = [[] for _ in fresh]
        patch_prologue = {}
        self.keep = []
        at = 0
        for items, rows in segs:
            self.table[at] = len(rows)
            chunk_idx = []
            for r, row in enumerate(rows):
                o = at + 8 + _ROW * r
                self.table[o] = row.fn
                self.table[o + 1] = items or 1
                self.table[o + 2] = 1
                chunk_idx.append(o + 2)
                darg, dlen, dslot, dmul = row.geometry if (row.geometry and items) else (-1, 0, 0, 1)
                self.table[o + 3:o + 7] = (darg, dlen, dslot, dmul)
                self.keep.extend(row.keep)
                for i, a in enumerate(row.args):
                    e = o + 8 + 2 * i
                    if a[0] == "const":
                        self.table[e] = a[1]
                    elif a[0] == "prologue":
                        patch_prologue[a[1]] = e
                    else:
                        b = _base(a[0])
                        self.table[e + 1] = a[1] if items else 0
                        if b.kind == "arena":
                            self.table[e] = base_addr + b.offset
                        elif b.kind == "source":
                            patch_source[b.index].append(e)
                        else:
                            patch_fresh[fresh.index(b)].append(e)
            macs = sum(row.macs for row in rows)
            self.segments.append((tab_addr + 8 * at, items, macs, np.array(chunk_idx, np.int64)))
            at += 8 + _ROW * len(rows)
        for key, pro in enumerate(self.prologue):
            pro.entries = tuple(patch_prologue.get((key, j), -1) for j in range(2))
            if pro.entries[0] < 0 or (pro.b_source is not None and pro.entries[1] < 0):
                raise _Decline("a convolution prologue without its table entries")     # never: rows name both
        # what a replay reads per source and fresh result, in one tuple each
        self.distinct = tuple(low.distinct)
        self.source_patches = tuple((i, slot, b.dtype, b.shape, b.strides, tuple(patch_source[i]))
                                    for i, (slot, b) in enumerate(sources))
        self.fresh_patches = tuple((np.zeros if b.zeroed else np.empty, b.shape, b.dtype, tuple(patch_fresh[i]))
                                   for i, b in enumerate(fresh))
        self.describe = (f"native program ({len(low.rows)} kernel calls in {len(self.segments)} segments, "
                         f"{size} bytes of arena)")

    def run(self, env):
        """Run the program on the sources in ``env`` (slot -> array); the results, or None."""
        if self.flags != _flags() or not self.lock.acquire(blocking=False):
            return None
        try:
            tab, last = self.table, self.last
            for i, slot, dtype, shape, strides, patches in self.source_patches:
                d = env[slot]
                if d is not last[i]:
                    if d.__class__ is not np.ndarray or d.dtype != dtype or d.shape != shape or d.strides != strides:
                        return None
                    addr = jit._addr(d)
                    for e in patches:
                        tab[e] = addr
                    last[i] = d
            for i, j in self.distinct:
                if jit._addr(last[i]) == jit._addr(last[j]):
                    return None                     # x @ x.T: numpy's syrk, in Python
            for pro in self.prologue:               # last: this replay's sources now
                pro.patch(last, tab)
            outs = []
            for alloc, shape, dtype, patches in self.fresh_patches:
                a = alloc(shape, dtype)
                addr = jit._addr(a)
                for e in patches:
                    tab[e] = addr
                outs.append(a)
            self._segments()
            return [outs[i] if shape is None else outs[i].reshape(shape) for i, shape in self.results]
        finally:
            self.lock.release()

    def _segments(self):
        program = self.k.workers.program
        for addr, items, macs, chunk_idx in self.segments:
            if macs >= SPLIT_MACS and items:
                p = native_pool.pool()
                if p is not None:
                    chunks = p.chunks(items, -(-_conv_direct._CHUNK_MACS * items // macs))
                    if chunks >= 2:
                        self.table[chunk_idx] = chunks
                        ran = p.run(self.k.workers.program_chunk, addr, chunks)
                        self.table[chunk_idx] = 1
                        if ran:
                            continue
            program(addr, 0)


def _flags():
    """The switches a program's lowering depended on (tests turn kernels off)."""
    return (conv_epilogue._direct_inline(), jit_groups.ENABLED)
