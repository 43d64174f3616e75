"""Arguments and results as trees: tensors are the leaves, everything else is static.

A captured function's arguments are flattened into their tensors (the graph's inputs, in
order) and a hashable *spec* of everything else (containers, Python values), which is part
of the cache key: a new static value traces again. Results are the same kind of tree, with
tensors only (plus ``None``): a Python number computed inside a trace would be the value of
the one traced call, so returning one is an error.
"""
from __future__ import annotations

from ..errors import CaptureError
from ..tensor import Tensor

__all__ = ["flatten", "signature", "output_tree", "unflatten_outputs", "output_refs", "describe_spec"]

_CONTAINERS = (tuple, list, dict)


def _static(obj, keep):
    """The cache-key form of a non-tensor argument: its value when hashable, else its identity
    (kept alive in ``keep`` so the id stays unique while the cache entry exists)."""
    try:
        hash(obj)
    except TypeError:
        keep.append(obj)
        return ("id", type(obj).__name__, id(obj))
    return ("v", type(obj).__name__, obj)


def flatten(obj, leaves=None, keep=None):
    """``(leaves, spec)``: the Tensors of ``obj`` (nested in tuples, lists and dicts) in
    order, and a hashable spec of the rest.

    Example:
        >>> import burn
        >>> from burn.capture.tree import flatten
        >>> x = burn.ones((2,))
        >>> leaves, spec = flatten(((x, 3), {"k": x}))
        >>> assert leaves == [x, x] and flatten(((x, 3), {"k": x}))[1] == spec != flatten(((x, 4), {"k": x}))[1]
    """
    if leaves is None:
        leaves, keep = [], []
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return leaves, ("T",)
    t = type(obj)
    if t is tuple or t is list:
        return leaves, (t.__name__, tuple(flatten(o, leaves, keep)[1] for o in obj))
    if t is dict:
        return leaves, ("dict", tuple((k, flatten(v, leaves, keep)[1]) for k, v in obj.items()))
    return leaves, ("S", _static(obj, keep))


def signature(spec, leaves):
    """The cache key of one call: the static spec, and per tensor its shape, dtype, device
    and which earlier argument (if any) is the same tensor value.

    Example:
        >>> import burn
        >>> from burn.capture.tree import flatten, signature
        >>> a, b = burn.ones((2,)), burn.ones((3,))
        >>> assert signature(*flatten(a)[::-1]) != signature(*flatten(b)[::-1])
    """
    seen = {}
    per = []
    for i, t in enumerate(leaves):
        h = t._h
        per.append((h.shape, h.dtype.name, t.device.kind, t.device.index, t.device.is_autodiff,
                    seen.setdefault(id(h), i)))
    return (spec, tuple(per))


def describe_spec(key) -> str:
    """A short text of a signature, for the message when the cache bound is exceeded."""
    _spec, per = key
    parts = [f"{d}{list(s)}@{k}:{i}{'+ad' if ad else ''}" for s, d, k, i, ad, _ in per]
    return "(" + ", ".join(parts) + ")"


def output_tree(obj, add, where="result"):
    """The result spec of a traced function; ``add(tensor)`` turns each tensor into a ref.
    A Python scalar or any other object raises CaptureError with advice."""
    if isinstance(obj, Tensor):
        ref, autodiff = add(obj)
        return ["T", ref, autodiff]
    if obj is None:
        return ["N"]
    t = type(obj)
    if t is tuple or t is list:
        return [t.__name__, [output_tree(o, add, f"{where}[{i}]") for i, o in enumerate(obj)]]
    if t is dict:
        for k in obj:
            if not isinstance(k, str):
                raise CaptureError(f"burn.capture: the {where} dict has a key {k!r} of type "
                                   f"{type(k).__name__}; a captured result's dict keys must be strings")
        return ["dict", [[k, output_tree(v, add, f"{where}[{k!r}]")] for k, v in obj.items()]]
    if isinstance(obj, (bool, int, float, complex)):
        raise CaptureError(
            f"burn.capture: the traced function returned a Python {type(obj).__name__} ({obj!r}) as its "
            f"{where}; a number computed in a trace would be the value of the traced call only. Return "
            f"the tensor instead (e.g. `return loss`, not `return loss.item()`) and read it after the call")
    raise CaptureError(f"burn.capture: the traced function returned a {type(obj).__name__} as its {where}; "
                       f"a captured function returns tensors, None, and tuples/lists/dicts of them")


def unflatten_outputs(tree, make):
    """Build a result from its spec; ``make(ref, autodiff)`` gives each tensor."""
    tag = tree[0]
    if tag == "T":
        return make(tree[1], tree[2])
    if tag == "N":
        return None
    if tag == "dict":
        return {k: unflatten_outputs(v, make) for k, v in tree[1]}
    items = [unflatten_outputs(o, make) for o in tree[1]]
    return tuple(items) if tag == "tuple" else items


def output_refs(tree, out=None):
    """Every tensor ref of a result spec, in order."""
    if out is None:
        out = []
    tag = tree[0]
    if tag == "T":
        out.append(tree[1])
    elif tag == "dict":
        for _, v in tree[1]:
            output_refs(v, out)
    elif tag != "N":
        for o in tree[1]:
            output_refs(o, out)
    return out
