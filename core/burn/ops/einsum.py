"""``einsum``: Einstein summation lowered to permute / reshape / sum / matmul.

A call is planned once per ``(subscripts, operand shapes)`` (``_plan``, an LRU cache)
and the plan is a list of steps on existing primitives, so einsum runs on every
backend and autodiff needs no rule of its own:

1. each operand on its own: repeated labels become a diagonal (the repeated axes
   moved last, flattened, and sliced with step ``1 + n + n**2 ...``), axes of length 1
   that broadcast against a longer one are dropped, and labels no other operand or the
   output needs are summed;
2. the operands are contracted two at a time in the order ``numpy.einsum_path`` plans
   from the shapes (no optimizer of our own); a pair that shares a summed label is one
   batched matmul ``[batch..., M, K] @ [batch..., K, N]`` (batch labels stay separate
   axes: matmul broadcasts them), other pairs are a broadcast multiply;
3. the last result is permuted into the output's order.

For each pair the roles (which operand is the matmul's left) and the order of the
summed labels are chosen so that the reshapes are views where the operands' layouts
allow it (attention's ``bhqd,bhkd->bhqk`` is one matmul of a transposed view).
"""
from __future__ import annotations

import functools
import math
import string

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError, describe
from ..tensor import Tensor
from . import creation as C, elementwise as E, movement as M
from .linear import matmul
from .reduction import sum as _sum

__all__ = ["einsum"]

_LETTERS = frozenset(string.ascii_letters)


# -- parsing ------------------------------------------------------------------------

def _parse_term(spec, term, what):
    """'ab...c' -> ['a', 'b', '...', 'c'] (one ellipsis at most)."""
    out, i = [], 0
    while i < len(term):
        ch = term[i]
        if ch == ".":
            if term[i:i + 3] != "...":
                raise ValueError(f"einsum: '.' must be part of an ellipsis '...' in {what} {term!r} "
                                 f"of {spec!r}")
            if "..." in out:
                raise ValueError(f"einsum: {what} {term!r} of {spec!r} has more than one ellipsis")
            out.append("...")
            i += 3
            continue
        if ch not in _LETTERS:
            raise ValueError(f"einsum: invalid subscript {ch!r} in {what} {term!r} of {spec!r}; "
                             f"subscripts are letters a-z, A-Z and '...'")
        out.append(ch)
        i += 1
    return out


def _parse(spec, n_operands):
    s = spec.replace(" ", "")
    if s.count("->") > 1 or s.replace("->", "").count("-") or s.replace("->", "").count(">"):
        raise ValueError(f"einsum: subscripts {spec!r} must have at most one '->'")
    lhs, arrow, rhs = s.partition("->")
    terms = lhs.split(",")
    if len(terms) != n_operands:
        raise ValueError(f"einsum: subscripts {spec!r} name {len(terms)} operand(s) but "
                         f"{n_operands} were given")
    ins = [_parse_term(spec, t, f"operand {k}'s term") for k, t in enumerate(terms)]
    out = _parse_term(spec, rhs, "the output term") if arrow else None
    if out is not None:
        seen = set()
        for lab in out:
            if lab in seen:
                raise ValueError(f"einsum: output subscript {lab!r} appears more than once in {spec!r}")
            seen.add(lab)
            if lab != "..." and not any(lab in t for t in ins):
                raise ValueError(f"einsum: output subscript {lab!r} of {spec!r} is in no operand's term")
    return ins, out


# -- planning ---------------------------------------------------------------------------

def _shape_error(spec, shapes, why):
    shown = ", ".join(str(tuple(s)) for s in shapes)
    return ShapeError(f"einsum: {why} (subscripts {spec!r}, operand shapes {shown})")


def _expand(spec, shapes, ins, out):
    """Labels of every axis (ellipsis axes get labels '0', '1', ... aligned right), the
    size of each label (size-1 axes broadcast), and the output labels."""
    ell = 0
    for k, (t, shp) in enumerate(zip(ins, shapes)):
        named = len(t) - ("..." in t)
        if "..." in t:
            if len(shp) < named:
                raise _shape_error(spec, shapes, f"operand {k} has {len(shp)} dimensions but its term "
                                                 f"{''.join(t)!r} names {named} besides '...'")
            ell = max(ell, len(shp) - named)
        elif len(shp) != named:
            raise _shape_error(spec, shapes, f"operand {k} has {len(shp)} dimensions but its term "
                                             f"{''.join(t)!r} names {named}")
    ell_labels = [str(i) for i in range(ell)]
    labels = []
    for t, shp in zip(ins, shapes):
        if "..." in t:
            i = t.index("...")
            e = len(shp) - (len(t) - 1)
            t = t[:i] + ell_labels[ell - e:] + t[i + 1:]
        labels.append(t)
    sizes = {}
    for k, (t, shp) in enumerate(zip(labels, shapes)):
        for lab, n in zip(t, shp):
            m = sizes.get(lab, 1)
            if n != m and n != 1 and m != 1:
                what = f"subscript {lab!r}" if not lab.isdigit() else f"ellipsis dimension {lab}"
                raise _shape_error(spec, shapes, f"{what} has size {n} in operand {k} but {m} where it "
                                                 f"appears before")
            sizes[lab] = max(m, n)
    if out is None:                      # implicit: ellipsis, then labels seen once, sorted
        counts = {}
        for t in labels:
            for lab in t:
                counts[lab] = counts.get(lab, 0) + 1
        outl = ell_labels + sorted(lab for lab, c in counts.items() if c == 1 and not lab.isdigit())
    else:                                # explicit; ellipsis axes missing from it are summed (torch)
        outl = []
        for lab in out:
            outl += ell_labels if lab == "..." else [lab]
    return labels, sizes, outl


def _diagonal_steps(labels, shape, spec, shapes, k):
    """Steps taking the diagonal of each repeated label; returns (steps, labels, shape)."""
    steps = []
    labels, shape = list(labels), list(shape)
    for lab in dict.fromkeys(labels):
        pos = [i for i, x in enumerate(labels) if x == lab]
        if len(pos) < 2:
            continue
        n = shape[pos[0]]
        if any(shape[p] != n for p in pos):
            raise _shape_error(spec, shapes, f"subscript {lab!r} repeats in operand {k} with sizes "
                                             f"{[shape[p] for p in pos]}; a diagonal needs equal sizes")
        rest = [i for i in range(len(labels)) if labels[i] != lab]
        steps.append(("permute", tuple(rest + pos)))
        steps.append(("reshape", tuple(shape[i] for i in rest) + (n ** len(pos),)))
        steps.append(("diag", sum(n ** j for j in range(len(pos)))))
        labels = [labels[i] for i in rest] + [lab]
        shape = [shape[i] for i in rest] + [n]
    return steps, labels, shape


def _drop_broadcast(labels, shape, sizes):
    """Drop the size-1 axes that broadcast against a longer axis of another operand."""
    keep = [i for i, lab in enumerate(labels) if not (shape[i] == 1 and sizes[lab] != 1)]
    if len(keep) == len(labels):
        return [], labels, shape
    labels, shape = [labels[i] for i in keep], [shape[i] for i in keep]
    return [("reshape", tuple(shape))], labels, shape


def _sum_unneeded(labels, shape, needed):
    """Sum the labels that neither another operand nor the output has."""
    gone = tuple(i for i, lab in enumerate(labels) if lab not in needed)
    if not gone:
        return [], labels
    return [("sum", gone)], [lab for i, lab in enumerate(labels) if i not in gone]


def _is_run(order, group):
    """Whether ``group`` (>= 2 labels) sits in ``order`` as one run in the same order, so
    merging it into one axis after a permutation is a view, not a copy."""
    if len(group) < 2:
        return True
    i = order.index(group[0])
    return order[i:i + len(group)] == list(group)


def _operand_steps(labels, target, sizes, new_shape):
    """permute ``labels`` into ``target`` order, then reshape to ``new_shape``."""
    steps = []
    if list(labels) != list(target):
        steps.append(("permute", tuple(labels.index(lab) for lab in target)))
    if tuple(new_shape) != tuple(sizes[lab] for lab in target):
        steps.append(("reshape", tuple(new_shape)))
    return steps


def _pair_steps(la, lb, keep, sizes):
    """How to contract operands labelled ``la`` and ``lb``: (steps_a, steps_b, kind, swap,
    out_shape, out_labels); ``kind`` is "mul" or "matmul", ``swap`` puts b on the left."""
    batch = [lab for lab in la if lab in lb and lab in keep]
    con = [lab for lab in la if lab in lb and lab not in keep]
    fa = [lab for lab in la if lab not in lb]
    fb = [lab for lab in lb if lab not in la]
    bs = [sizes[x] for x in batch]
    if not con:                           # no summed label: a broadcast multiply
        steps_a = _operand_steps(la, batch + fa, sizes, bs + [sizes[x] for x in fa] + [1] * len(fb))
        steps_b = _operand_steps(lb, batch + fb, sizes, bs + [1] * len(fa) + [sizes[x] for x in fb])
        out = batch + fa + fb
        return steps_a, steps_b, "mul", False, tuple(sizes[x] for x in out), out
    best = None
    for swap in (False, True):
        left, right, fl, fr = (lb, la, fb, fa) if swap else (la, lb, fa, fb)
        for order in (con, [lab for lab in lb if lab in con]):
            tl, tr = batch + fl + order, batch + order + fr
            # a group of labels merged into one matmul axis is a view only if it is a run of
            # the operand's own layout; otherwise the reshape copies the operand
            cost = 0 if _is_run(left, fl) and _is_run(left, order) else math.prod(sizes[x] for x in left)
            cost += 0 if _is_run(right, order) and _is_run(right, fr) else math.prod(sizes[x] for x in right)
            cost += (tl != left) + (tr != right)          # on ties, prefer fewer permutations
            if best is None or cost < best[0]:
                best = (cost, swap, fl, fr, order, tl, tr, left, right)
    _, swap, fl, fr, order, tl, tr, left, right = best
    m, k, n = (math.prod(sizes[x] for x in g) for g in (fl, order, fr))
    steps_l = _operand_steps(left, tl, sizes, bs + [m, k])
    steps_r = _operand_steps(right, tr, sizes, bs + [k, n])
    out = batch + fl + fr
    steps_a, steps_b = (steps_r, steps_l) if swap else (steps_l, steps_r)
    return steps_a, steps_b, "matmul", swap, tuple(sizes[x] for x in out), out


def _path(labels, sizes, outl):
    """Pairwise contraction order from ``numpy.einsum_path`` (positions in a list from which
    each step removes its two operands and to which it appends the result)."""
    n = len(labels)
    if n <= 2:
        return [(0, 1)] if n == 2 else []
    letters = {}
    for t in labels + [outl]:
        for lab in t:
            letters.setdefault(lab, string.ascii_letters[len(letters)])
    spec = ",".join("".join(letters[x] for x in t) for t in labels) + "->" + "".join(letters[x] for x in outl)
    # only shapes matter to the path: zero-stride stand-ins allocate nothing
    fakes = [np.lib.stride_tricks.as_strided(np.zeros(1), tuple(sizes[x] for x in t), (0,) * len(t))
             for t in labels]
    path, _ = np.einsum_path(spec, *fakes, optimize=("optimal" if n <= 4 else "greedy", 2 ** 62))
    pairs = []
    count = n
    for step in path[1:]:
        step = list(step)
        while len(step) > 2:              # a k-way step, contracted left to right
            pairs.append((step[0], step[1]))
            count -= 1
            step = [count - 1] + [i - sum(i > j for j in step[:2]) for i in step[2:]]
        if len(step) == 2:
            pairs.append(tuple(step))
            count -= 1
        elif len(step) == 1:              # numpy moves a lone operand to the end
            pairs.append((step[0],))
    return pairs


@functools.lru_cache(maxsize=512)
def _plan(spec, shapes):
    """The steps of ``einsum(spec, *operands)`` for operands of ``shapes`` (cached)."""
    ins, out = _parse(spec, len(shapes))
    labels, sizes, outl = _expand(spec, shapes, ins, out)
    pre, cur, dims = [], [], []
    for k, (t, shp) in enumerate(zip(labels, shapes)):
        steps, t2, s2 = _diagonal_steps(t, shp, spec, shapes, k)
        more, t2, s2 = _drop_broadcast(t2, s2, sizes)
        pre.append(steps + more)
        cur.append(t2)
        dims.append(s2)
    for k, t in enumerate(cur):      # after the drops: a broadcast axis needs nothing of its own
        needed = set(outl).union(*(set(o) for j, o in enumerate(cur) if j != k))
        more, cur[k] = _sum_unneeded(t, dims[k], needed)
        pre[k] = tuple(pre[k] + more)
    pairs = []
    for step in _path(cur, sizes, outl):
        if len(step) == 1:
            cur = [t for q, t in enumerate(cur) if q != step[0]] + [cur[step[0]]]
            pairs.append((step[0], None, (), (), "move", False, None))
            continue
        i, j = step
        la, lb = cur[i], cur[j]
        rest = [t for q, t in enumerate(cur) if q not in (i, j)]
        keep = set(outl).union(*(set(t) for t in rest))
        sa, sb, kind, swap, out_shape, out_labels = _pair_steps(la, lb, keep, sizes)
        pairs.append((i, j, tuple(sa), tuple(sb), kind, swap, out_shape))
        cur = rest + [out_labels]
    final = cur[0]
    gone = tuple(q for q, lab in enumerate(final) if lab not in outl)   # only with one operand
    post = [("sum", gone)] if gone else []
    final = [lab for lab in final if lab in outl]
    if final != outl:
        post.append(("permute", tuple(final.index(lab) for lab in outl)))
    return tuple(pre), tuple(pairs), tuple(post)


# -- running a plan ----------------------------------------------------------------------

def _sum_keep_dtype(x, axes):
    return _sum(x, axis=axes, dtype=x.dtype if x.dtype.is_integer else None)


_STEP = {
    "permute": M.permute_dims,
    "reshape": M.reshape,
    "diag": lambda x, step: x[..., ::step],
    "sum": _sum_keep_dtype,
}


def _run(x, steps):
    for kind, arg in steps:
        x = _STEP[kind](x, arg)
    return x


def _operands(ops):
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = tuple(ops[0])               # torch's einsum(spec, [a, b])
    if not ops:
        raise ValueError("einsum: needs at least one operand")
    if not all(isinstance(o, Tensor) for o in ops):
        dev = next((o.device for o in ops if isinstance(o, Tensor)), None)
        ops = [o if isinstance(o, Tensor) else C.tensor(o, device=dev) for o in ops]
    dts = {t.dtype for t in ops}
    if any(d.is_bool for d in dts):
        raise DTypeError(f"einsum: not defined for bool operands ({', '.join(describe(u) for u in ops)}); "
                         f"cast them with .astype(burn.int64) or a float dtype")
    if len(dts) == 1:
        return ops
    d = dt.result_type(*dts)
    return [t if t.dtype is d else E.astype(t, d) for t in ops]


def einsum(subscripts, /, *operands) -> Tensor:
    """Einstein summation over ``operands``, as ``numpy.einsum`` / ``torch.einsum``.

    ``subscripts`` names each operand's axes with letters (``"ij,jk->ik"``); a label
    repeated in one operand takes a diagonal (``"ii->i"``, ``"ii"`` is the trace), labels
    missing from the output are summed, ``...`` stands for broadcast leading axes, and
    without ``->`` the output is the ellipsis axes then the labels used once, sorted.
    Ellipsis axes left out of an explicit output are summed (as torch). Three or more
    operands are contracted in the order ``numpy.einsum_path`` plans; each step is a
    batched matmul or a broadcast multiply, so gradients flow as through those ops.
    The plan is cached per subscripts and shapes.

    Example:
        >>> import burn
        >>> a, b = burn.ones((2, 3, 4)), burn.ones((2, 4, 5))
        >>> assert burn.einsum("bij,bjk->bik", a, b).shape == (2, 3, 5)
        >>> assert burn.einsum("ii", burn.eye(3)).item() == 3.0
        >>> assert burn.einsum("...i,i", a, burn.ones((4,))).tolist() == [[4.0] * 3] * 2
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a string such as 'ij,jk->ik', got {subscripts!r} "
                        f"(the sublist form is not supported)")
    ts = _operands(operands)
    pre, pairs, post = _plan(subscripts, tuple(t.shape for t in ts))
    cur = [_run(t, steps) for t, steps in zip(ts, pre)]
    for i, j, sa, sb, kind, swap, out_shape in pairs:
        if kind == "move":
            cur = [t for q, t in enumerate(cur) if q != i] + [cur[i]]
            continue
        a, b = _run(cur[i], sa), _run(cur[j], sb)
        if kind == "mul":
            r = a * b
        else:
            r = matmul(b, a) if swap else matmul(a, b)
            if r.shape != out_shape:
                r = M.reshape(r, out_shape)
        cur = [t for q, t in enumerate(cur) if q not in (i, j)] + [r]
    return _run(cur[0], post)
