"""Optimizer updates on flex: ``burn::adam_update`` and ``burn::sgd_update`` as the reference's
ops in its order (bit-identical), with ``out=`` buffers instead of temporaries.

Large parameters are updated by chunks of their flattened elements on the flex pool
(:mod:`burn_flex.threads`): every element goes through the same ufuncs in the same order,
so results are bit-identical for any thread count.

float32 parameters with flex's JIT (``burn_flex.jit``, ``kernels/ll/optim.ll``) take one
compiled pass per chunk instead of 14 ufunc passes: the same float32 operations in the same
order, so the same bits (tested); ~4x faster on the digits MLP's 256x256 weight (192 -> ~50 us
here), little on a bias, where argument handling is most of a call. ``BURN_FLEX_JIT=0`` runs
the ufuncs."""
from __future__ import annotations

import numpy as np

from .. import jit, threads

# elements per thread at least: a region costs ~15-20 us of hand-off (docs/benchmarks.md, round 7)
PAR_OPTIM = 1 << 15
mul, add = np.multiply, np.add


def _hyper_scalars(h, dtype):
    # 0-d arrays of the parameter's dtype: the operands op-by-op execution would use
    return [np.asarray(x, dtype=dtype) for x in h.tolist()]


def _adam_into(p, g, m, v, hs, mode, op, om, ov):
    """One chunk of the Adam update, written into ``op, om, ov``."""
    lr, b1, omb1, b2, omb2, c1, c2, eps, wd, decay = hs
    t = np.empty_like(p)
    if mode == "l2":
        mul(p, wd, out=t)
        g = add(g, t)
    mul(m, b1, out=om)
    mul(g, omb1, out=t)
    add(om, t, out=om)
    mul(g, g, out=ov)
    mul(ov, omb2, out=ov)
    mul(v, b2, out=t)
    add(t, ov, out=ov)                      # v*b2 + g*g*(1-b2) (addition commutes exactly)
    mul(ov, c2, out=t)
    np.sqrt(t, out=t)
    add(t, eps, out=t)
    mul(om, c1, out=op)
    np.divide(op, t, out=op)
    mul(op, lr, out=op)
    if mode == "decoupled":
        mul(p, decay, out=t)
        np.subtract(t, op, out=op)
    else:
        np.subtract(p, op, out=op)


# tests switch this off to compare the JIT updates with the ufunc path
_JIT_UPDATES = True


def _jit_update(arrays):
    """flex's JIT kernels when these operands may take the compiled update (all float32), else None."""
    if not _JIT_UPDATES or any(a.dtype != np.float32 for a in arrays):
        return None
    return jit.kernels()


def _chunked(body, arrays, n_out):
    """Run ``body(input chunks, output chunks)`` over the flattened elements on the pool;
    returns the fresh outputs in the first array's shape."""
    p = arrays[0]
    outs = [np.empty(p.shape, p.dtype) for _ in range(n_out)]
    flat = [a.reshape(-1) for a in arrays]
    flat_out = [o.reshape(-1) for o in outs]
    threads.parallel_for(p.size, lambda a, b: body([x[a:b] for x in flat], [o[a:b] for o in flat_out]),
                         min_chunk=PAR_OPTIM)
    return tuple(outs)


def _jit_chunked(update, arrays, h, n_out):
    """Run a compiled update (``jit._Update``) over the flattened elements, by chunks on the pool:
    the arrays' addresses are read once and each chunk offsets them (no sliced views, no
    per-chunk checks: every operand is made C-contiguous float32 here, the outputs are fresh).
    Returns the fresh outputs in the first array's shape."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    h32 = np.ascontiguousarray(h, dtype=np.float32)
    if h32.size < update.n_hyper:       # the kernel reads that many: its own check raises
        return _chunked(lambda ins, outs: update(*ins, *outs, h32), arrays, n_out)
    outs, ptrs = _fresh_outputs(arrays, n_out)
    fn, ha, n = update.fn, jit._addr(h32), arrays[0].size
    threads.parallel_for(n, lambda a, b: fn(*[q + 4 * a for q in ptrs], ha, b - a), min_chunk=PAR_OPTIM)
    return outs


def _fresh_outputs(arrays, n_out):
    """``n_out`` fresh float32 arrays shaped like ``arrays[0]``, appended to the list ``arrays``
    (C-contiguous ndarrays), and the addresses of them all: a compiled update's pointer arguments."""
    shape, empty = arrays[0].shape, np.empty
    outs = tuple([empty(shape, np.float32) for _ in range(n_out)])
    arrays.extend(outs)
    return outs, jit._addrs_of(arrays)


def _run_many(update, items, n_out):
    """Several compiled updates of one kind sharing their hyper-parameters: the arguments of
    each prepared here, small ones called back to back, large ones chunked on the pool (as
    :func:`_jit_chunked`). Returns each item's fresh outputs."""
    h32 = np.ascontiguousarray(items[0][-1], dtype=np.float32)
    if h32.size < update.n_hyper:
        return [_jit_chunked(update, it[:-1], it[-1], n_out) for it in items]
    fn, asc = update.fn, np.ascontiguousarray
    ha = jit._addr(h32)
    results, calls = [], []
    serial = 2 * PAR_OPTIM * threads.CHUNK_SCALE          # below this, parallel_for runs one chunk
    for it in items:
        arrays = [asc(a) for a in it[:-1]]
        n = arrays[0].size
        if n >= serial:
            results.append(_jit_chunked(update, arrays, h32, n_out))
            continue
        outs, ptrs = _fresh_outputs(arrays, n_out)
        results.append(outs)
        ptrs.append(ha)
        ptrs.append(n)
        calls.append(ptrs)
    for c in calls:
        fn(*c)
    return results


def _batchable(items):
    """Whether every item may join one compiled batch: float32 arrays of one shape per item, one h."""
    h, k = items[0][-1], len(items[0])
    f32 = np.dtype(np.float32)
    for it in items:
        if len(it) != k or it[-1] is not h:
            return False
        p = it[0]
        shape = p.shape
        if not shape:
            return False
        for a in it[:-1]:
            if a.dtype != f32 or a.shape != shape:
                return False
    return True


def _many(single, jit_update, items, mode):
    """The updates of ``items`` (argument tuples of ``single``): one batch through
    :func:`_run_many` where every item may take the same compiled kernel with the same h, else
    one ``single`` call each."""
    k = jit.kernels() if _JIT_UPDATES and len(items) > 1 and _batchable(items) else None
    if k is None:
        return [single(*it, mode) for it in items]
    return _run_many(jit_update(k), items, 3 if single is adam_update else 2)


def adam_update_many(items, mode="none"):
    """``adam_update`` for each ``(p, g, m, v, h)`` of ``items`` (one mode); the same results, with
    the per-call work done once where every item takes flex's compiled update with one ``h``
    (a captured step's updates, batched by ``burn_flex.replay``).

    Example::

        >>> import numpy as np
        >>> from burn_flex.kernels import optim
        >>> h = np.array([1e-3, .9, .1, .999, .001, 10., 1000., 1e-8, 0., 1.])
        >>> p, g = np.ones(3, np.float32), np.ones(3, np.float32)
        >>> z = np.zeros(3, np.float32)
        >>> [r[0].shape for r in optim.adam_update_many([(p, g, z, z, h), (p, g, z, z, h)])]
        [(3,), (3,)]
    """
    return _many(adam_update, lambda k: k.adam[mode], items, mode)


def sgd_update_many(items, mode=("next", False, False)):
    """``sgd_update`` for each ``(p, g, buf, h)`` of ``items`` (one mode), batched as
    :func:`adam_update_many`.

    Example::

        >>> import numpy as np
        >>> from burn_flex.kernels import optim
        >>> h = np.array([0.1, 0.0, 0.9, 0.1])
        >>> p = np.ones(2, np.float32)
        >>> [bool((r[0] == np.float32(0.9)).all()) for r in optim.sgd_update_many([(p, p, p, h)] * 2)]
        [True, True]
    """
    flags = (mode[0] == "first") | (2 if mode[1] else 0) | (4 if mode[2] else 0)
    if mode[0] == "first":      # buf is not read on the first step (sgd_update passes p for it)
        items = [(p, g, p, h) for p, g, _, h in items]
    return _many(sgd_update, lambda k: k.sgd[flags], items, mode)


def _same(arrays):
    p = arrays[0]
    return all(a.shape == p.shape and a.dtype == p.dtype for a in arrays)


def adam_update(p, g, m, v, h, mode="none"):
    """burn::adam_update: the reference's ops in its order (bit-identical), with out= buffers."""
    if p.ndim == 0:       # ufuncs return numpy scalars for 0-d operands, which out= cannot take
        return tuple(r.reshape(()) for r in adam_update(p.reshape(1), g.reshape(1), m.reshape(1), v.reshape(1),
                                                        h, mode))
    same = _same((p, g, m, v))
    k = _jit_update((p, g, m, v)) if same else None
    if k is not None:          # one compiled pass per chunk; hyper-parameters rounded to float32 as below
        return _jit_chunked(k.adam[mode], (p, g, m, v), h, 3)
    hs = _hyper_scalars(h, p.dtype)
    if not same:               # mixed operands: numpy's promotion, one call
        return _adam_promoting(p, g, m, v, hs, mode)
    return _chunked(lambda ins, outs: _adam_into(*ins, hs, mode, *outs), (p, g, m, v), 3)


def _adam_promoting(p, g, m, v, hs, mode):
    # the original whole-array sequence (numpy's casting rules for mixed operands)
    lr, b1, omb1, b2, omb2, c1, c2, eps, wd, decay = hs
    if mode == "l2":
        t = mul(p, wd)
        g = add(g, t, out=t)
    m2 = mul(m, b1)
    t = mul(g, omb1)
    add(m2, t, out=m2)
    v2 = mul(g, g)
    mul(v2, omb2, out=v2)
    mul(v, b2, out=t)
    add(t, v2, out=v2)                      # v*b2 + g*g*(1-b2) (addition commutes exactly)
    mul(v2, c2, out=t)
    np.sqrt(t, out=t)
    add(t, eps, out=t)
    s = mul(m2, c1)
    np.divide(s, t, out=s)
    mul(s, lr, out=s)
    if mode == "decoupled":
        mul(p, decay, out=t)
        return np.subtract(t, s, out=s), m2, v2
    return np.subtract(p, s, out=s), m2, v2


def _sgd_into(p, g, buf, hs, mode, op, ob):
    """One chunk of the SGD update, written into ``op, ob``."""
    first, decay, nesterov = mode
    lr, wd, mom, omd = hs
    if decay:
        g = np.add(g, np.multiply(p, wd))
    if first == "first":
        ob[...] = g
    else:
        mul(buf, mom, out=ob)
        ob += np.multiply(g, omd)
    if nesterov:
        mul(ob, mom, out=op)
        add(g, op, out=op)
    else:
        op[...] = ob
    op *= lr
    np.subtract(p, op, out=op)


def sgd_update(p, g, buf, h, mode=("next", False, False)):
    """burn::sgd_update: the reference's ops in its order (bit-identical)."""
    if p.ndim == 0:
        return tuple(r.reshape(()) for r in sgd_update(p.reshape(1), g.reshape(1), buf.reshape(1), h, mode))
    arrays = (p, g, buf) if mode[0] != "first" else (p, g, p)   # buf is not read on the first step
    same = _same(arrays)
    k = _jit_update(arrays) if same else None
    if k is not None:          # flags as in kernels/ll/optim.ll: 1 first step, 2 weight decay, 4 nesterov
        return _jit_chunked(k.sgd[(mode[0] == "first") | (2 if mode[1] else 0) | (4 if mode[2] else 0)],
                            arrays, h, 2)
    hs = _hyper_scalars(h, p.dtype)
    if not same:
        return _sgd_promoting(p, g, buf, hs, mode)
    return _chunked(lambda ins, outs: _sgd_into(*ins, hs, mode, *outs), arrays, 2)


def _sgd_promoting(p, g, buf, hs, mode):
    # the original whole-array sequence (numpy's casting rules for mixed operands)
    first, decay, nesterov = mode
    lr, wd, mom, omd = hs
    if decay:
        g = np.add(g, np.multiply(p, wd))
    if first == "first":
        b = g.copy()
    else:
        b = np.multiply(buf, mom)
        b += np.multiply(g, omd)
    if nesterov:
        d = np.multiply(b, mom)
        np.add(g, d, out=d)
    else:
        d = b.copy()
    d *= lr
    return np.subtract(p, d, out=d), b
