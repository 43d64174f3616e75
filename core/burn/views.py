"""Views: numpy's sharing semantics on an immutable lazy graph (PyTorch's functionalization).

Basic indexing (slices, ints, ``...``, ``None``), ``reshape`` / ``permute_dims`` (with
everything built on them: ``squeeze``, ``expand_dims``, ``.T``, ``.mT``, ``swapaxes``,
``moveaxis``), ``broadcast_to`` and a complex tensor's ``.real`` / ``.imag`` return a *view*: a tensor that remembers its base (the tensor that is not a
view itself) and the chain of view steps from the base to it. Handles stay immutable; what
views change is what an in-place update (``assign_``, ``+=``, ``t[k] = v``) means:

- on a view, the new value is written into the region of the base it covers (a slice
  becomes an ``index_put`` into its input, a reshape or permutation is undone), the base
  is rebound to the result, and every other live view of the base is marked stale;
- a view made through ``broadcast_to`` is read-only, as numpy's: an in-place update of it
  (or of a view of it) raises :class:`burn.ReadOnlyError` and changes nothing; updates of
  its base still reach it;
- on a base, every live view of it is marked stale: its next read derives it again from
  the base's value (so a write costs no ops per view, and a view never read again none).

A stale view is stamped like any in-place update (``Tensor._stamp``), so a backward
rule that needs its old value raises (PyTorch's version-counter rule), and the ops that
recorded its old handle keep their old value (laziness never changes meaning).
Everything stays lazy: writing and deriving again only record ops.
"""
from __future__ import annotations

from weakref import ref as _ref

from .dispatch import registry
from .errors import ReadOnlyError, describe
from .tape import _state as _ad_state
from .tensor import Tensor, apply

__all__ = ["mark", "rebind", "base_of", "reshape_shares"]

_PRUNE_AT = 32      # a base's list of weak references is pruned when it doubles past this


def mark(out, x, prim, attrs):
    """Record that ``out``, just made from ``x`` by view primitive ``prim``, is a view of
    ``x``'s base (views of views share the base; their chains compose). Returns ``out``.

    Example:
        >>> import burn
        >>> from burn.views import base_of
        >>> a = burn.zeros((4,))
        >>> assert base_of(a[1:3].reshape((2, 1))) is a and base_of(a) is None
    """
    if out is x:
        return out
    info = getattr(x, "_vbase", None)
    if info is None:
        base, chain = x, ()
    else:
        base, chain = info
    out._vbase = (base, chain + ((prim, attrs, x.shape),))
    lst = getattr(base, "_views", None)
    if lst is None:
        base._views = [_ref(out)]
    else:
        lst.append(_ref(out))
        n = len(lst)
        if n >= _PRUNE_AT and n & (n - 1) == 0:       # amortised: dead views (temporaries) leave
            lst[:] = [r for r in lst if r() is not None]
    return out


def base_of(t):
    """The tensor ``t`` is a view of, or None when it is not a view.

    Example:
        >>> import burn
        >>> from burn.views import base_of
        >>> x = burn.arange(6)
        >>> assert base_of(x.reshape((2, 3)).T) is x and base_of(x[burn.tensor([0, 1])]) is None
    """
    info = getattr(t, "_vbase", None)
    return None if info is None else info[0]


def _nocopy_strides(shape, strides, new_shape):
    """The strides of ``new_shape`` over the elements of a (``shape``, ``strides``) layout,
    or None when they do not exist (numpy's ``_attempt_nocopy_reshape``, C order)."""
    old = [(d, st) for d, st in zip(shape, strides) if d != 1]
    if 0 in shape:
        return [0] * len(new_shape)
    new = [d for d in new_shape if d != 1]
    out = [0] * len(new)
    oi = ni = 0
    while ni < len(new) and oi < len(old):
        nj, oj = ni + 1, oi + 1
        np_, op = new[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= new[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):         # the merged old axes must be contiguous
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, oi = nj, oj
    it = iter(out)
    return [1 if d == 1 else next(it) for d in new_shape]   # a size-1 axis' stride never matters


def reshape_shares(x, shape) -> bool:
    """Whether ``reshape(x, shape)`` is a view, by numpy's rule: it is unless ``x`` is a
    view whose elements cannot be laid out in ``shape`` by strides alone (then numpy,
    and burn, copy). A base is contiguous, so reshaping it is always a view.

    Example:
        >>> import burn
        >>> from burn.views import reshape_shares
        >>> x = burn.zeros((3, 4))
        >>> assert reshape_shares(x.T, (4, 1, 3)) and not reshape_shares(x.T, (12,))
        >>> assert reshape_shares(x[:, 1:3].reshape((3, 1, 2)), (3, 2))
    """
    info = getattr(x, "_vbase", None)
    if info is None or [s for s in shape if s != 1] == [s for s in x.shape if s != 1]:
        return True
    base, chain = info
    n, strides = 1, []
    for s in reversed(base.shape):
        strides.append(n)
        n *= s
    strides.reverse()
    cur = base.shape
    for prim, attrs, _ in chain:        # replay the chain on the layout alone
        name = prim.name
        if name in ("real", "imag"):        # a part has the layout of its complex tensor
            continue
        if name == "broadcast_to":          # new and stretched axes step by 0
            new = attrs["shape"]
            pad = len(new) - len(cur)
            strides = [0] * pad + [0 if c != n else st for c, n, st in zip(cur, new[pad:], strides)]
            cur = tuple(new)
            continue
        if name == "slice":
            strides = [st * c for st, c in zip(strides, attrs["steps"])]
            cur = tuple(len(range(a, b, c)) for a, b, c in zip(attrs["starts"], attrs["stops"], attrs["steps"]))
        elif name == "permute":
            strides = [strides[a] for a in attrs["axes"]]
            cur = tuple(cur[a] for a in attrs["axes"])
        else:
            strides = _nocopy_strides(cur, strides, attrs["shape"])
            cur = attrs["shape"]
    return _nocopy_strides(cur, strides, shape) is not None


def _derive(base, chain):
    t = base
    for prim, attrs, _ in chain:
        t = apply(prim, (t,), attrs)
    return t


def _undo(prim, attrs, shape, x, inner):
    """``x`` with the result of view step (``prim``, ``attrs``) replaced by ``inner``."""
    name = prim.name
    if name == "slice":
        # a normalised negative-step stop of -1 means "through index 0", which a slice spells None
        spec = tuple(("s", a, b if b >= 0 else None, c)
                     for a, b, c in zip(attrs["starts"], attrs["stops"], attrs["steps"]))
        return apply(registry.ops["index_put"], (x, inner), {"spec": spec})
    if name == "reshape":
        return apply(prim, (inner,), {"shape": shape})
    if name in ("real", "imag"):
        # the other part stays bit for bit: x's parts and the new one, joined exactly
        make = registry.ops["make_complex"]
        other = apply(registry.ops["imag" if name == "real" else "real"], (x,), {})
        return apply(make, (inner, other) if name == "real" else (other, inner), {})
    if name == "permute":
        axes = attrs["axes"]
        inv = [0] * len(axes)
        for i, a in enumerate(axes):
            inv[a] = i
        return apply(prim, (inner,), {"axes": tuple(inv)})
    raise AssertionError(f"views: '{name}' is not a view primitive")


def _write(base, chain, value):
    """The base's new value when the view at ``chain`` takes ``value``."""
    if len(chain) == 1:
        prim, attrs, shape = chain[0]
        return _undo(prim, attrs, shape, base, value)
    inputs = [base]         # the value each step reads, derived from the base's current value
    for prim, attrs, _ in chain[:-1]:
        inputs.append(apply(prim, (inputs[-1],), attrs))
    for (prim, attrs, shape), x in zip(reversed(chain), reversed(inputs)):
        value = _undo(prim, attrs, shape, x, value)
    return value


def _set(t, v):
    t._stamp()
    t._h = v._h
    if not t._leaf:
        t._grad = v._grad


_H, _GRAD = Tensor._h, Tensor._grad        # the slots themselves, under _Stale's properties


def _fresh(t):
    """Derive stale view ``t`` again from its base, and make it a plain Tensor."""
    base, chain = t._vbase
    prev = _ad_state.__dict__.get("enabled", True)
    _ad_state.enabled = True    # a view follows its base's gradient, whatever the mode at read time
    try:
        v = _derive(base, chain)
    finally:
        _ad_state.enabled = prev
    t.__class__ = Tensor
    _H.__set__(t, v._h)
    if not t._leaf:
        _GRAD.__set__(t, v._grad)


def _get_h(t):
    _fresh(t)
    return _H.__get__(t)


def _get_grad(t):
    _fresh(t)
    return _GRAD.__get__(t)


def _set_slot(slot):
    def setter(t, value):
        slot.__set__(t, value)
        if slot is _H:          # given a value of its own: no longer stale
            t.__class__ = Tensor
    return setter


class _Stale(Tensor):
    """A view whose base changed in place since it was last derived: the first read of
    its value or gradient record derives it again (then it is a plain Tensor again).
    Plain tensors never pay for this: only the class of a stale view has the properties."""

    __slots__ = ()
    _h = property(_get_h, _set_slot(_H))
    _grad = property(_get_grad, _set_slot(_GRAD))


def _mark_stale(base, skip):
    lst = getattr(base, "_views", None)
    if not lst:
        return
    live = []
    for r in lst:
        w = r()
        if w is None:
            continue
        live.append(r)
        if w is not skip:
            w._stamp()
            w.__class__ = _Stale        # derived again when next read, not once per write
    lst[:] = live


def rebind(t, v):
    """Give tensor ``t`` the value of tensor ``v`` (same shape and dtype) in place, as
    ``assign_`` does: through its base when ``t`` is a view, and into every live view of
    the base.

    Example:
        >>> import burn
        >>> from burn.views import rebind
        >>> a = burn.zeros((4,))
        >>> v = a[1:3]
        >>> rebind(v, burn.ones((2,)))
        >>> assert a.tolist() == [0.0, 1.0, 1.0, 0.0]
    """
    info = getattr(t, "_vbase", None)
    if info is None:
        _set(t, v)
        _mark_stale(t, None)
        return
    base, chain = info
    for prim, _, shape in chain:
        if prim.name == "broadcast_to":
            raise ReadOnlyError(f"in-place update of {describe(t)}: it is a read-only view made by broadcast_to "
                                f"from a tensor of shape {shape} (as in numpy); write to the tensor it was "
                                f"made from, or copy it first (burn.asarray(t, copy=True))")
    _set(base, _write(base, chain, v))
    _set(t, v)
    _mark_stale(base, t)
