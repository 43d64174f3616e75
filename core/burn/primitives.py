"""Primitive ops: declared once, with their meta rule and backward rule.

A :class:`Primitive` is the unit the lazy graph records and a backend
implements (one kernel per primitive and backend). Its ``meta`` rule runs
eagerly at the user's call (so shape and dtype errors are raised there),
and its ``backward`` rule, written with burn ops, sits beside it in the
module that defines the op (see ``burn.ops``).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from .dtypes import DType
from .errors import PluginError

__all__ = ["Primitive", "TensorMeta", "ELEMENTWISE", "REDUCE", "MATMUL", "MOVEMENT", "CREATION", "OPAQUE"]

ELEMENTWISE = "elementwise"
REDUCE = "reduce"
MATMUL = "matmul"
MOVEMENT = "movement"
CREATION = "creation"
OPAQUE = "opaque"


class TensorMeta(NamedTuple):
    """Shape and dtype (and device) of a tensor, without its values.

    Example:
        >>> import burn
        >>> m = burn.TensorMeta((2, 3), burn.float32)
        >>> assert m.shape == (2, 3) and m.dtype is burn.float32 and m.ndim == 2
    """
    shape: tuple
    dtype: DType
    device: object = None

    @property
    def ndim(self) -> int:
        """The number of axes.

        Example:
            >>> import burn
            >>> assert burn.TensorMeta((4, 5, 6), burn.float32).ndim == 3
        """
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements (the product of ``shape``).

        Example:
            >>> import burn
            >>> assert burn.TensorMeta((4, 5), burn.float32).size == 20
        """
        n = 1
        for s in self.shape:
            n *= s
        return n


class Primitive:
    """An op known to every backend.

    ``meta(*inputs, **attrs)`` gets objects with ``.shape``/``.dtype`` and returns
    a TensorMeta (or a tuple of them for several outputs); it raises the
    user-facing errors. ``backward(ctx, *grads)`` returns one gradient per
    tensor input (None where there is none).

    Example:
        >>> import burn
        >>> burn.plugins.ensure_loaded()
        >>> add = burn.dispatch.registry.ops["add"]
        >>> assert add.kind == "elementwise" and add.n_out == 1
        >>> assert add.meta(burn.TensorMeta((2, 1), burn.float32), burn.TensorMeta((3,), burn.float32)).shape == (2, 3)
    """

    __slots__ = ("name", "kind", "meta", "backward", "n_out", "differentiable", "doc", "plan_attrs")

    def __init__(self, name: str, kind: str, meta: Callable, backward: Callable | None = None,
                 n_out: int = 1, differentiable: bool = True, doc: str = "", plan_attrs: bool = False):
        self.name = name
        # a boundary op's attributes enter the fusion plan's key only with plan_attrs (else its
        # output shapes stand for them): set where a backend's plan may bake them in
        self.plan_attrs = plan_attrs
        self.kind = kind
        self.meta = meta
        self.backward = backward
        self.n_out = n_out
        self.differentiable = differentiable
        self.doc = doc

    @property
    def backward_fn(self):
        """The rule autodiff calls (extensions compute theirs).

        Example:
            >>> import burn
            >>> burn.plugins.ensure_loaded()
            >>> assert callable(burn.dispatch.registry.ops["mul"].backward_fn)
        """
        return self.backward

    def __repr__(self):
        return f"<primitive {self.name} ({self.kind})>"


#: every primitive core declares, by name; the built-in plugin (burn.builtin) registers them
PRIMITIVES: dict = {}


def primitive(name: str, kind: str, meta: Callable, *, n_out: int = 1,
              differentiable: bool = True, plan_attrs: bool = False) -> Primitive:
    """Declare a primitive (attach ``.backward`` later: ``prim.backward = fn``).

    ``plan_attrs``: the op's attributes are part of the fusion plan's cache key (a boundary op's
    are not by default: its output shapes stand for them), for ops whose attributes a backend's
    ``merge_steps`` may bake into a plan step (flex folds a 2 x 2 max pooling into the
    convolution before it).

    Declaring only fills :data:`PRIMITIVES`; the registry learns of it through core's
    built-in plugin, like every plugin's ops. A second primitive of one name raises.

    Example:
        >>> from burn.primitives import PRIMITIVES
        >>> assert PRIMITIVES["add"].kind == "elementwise"
    """
    if name in PRIMITIVES:
        raise PluginError(f"primitive '{name}' is declared twice")
    p = PRIMITIVES[name] = Primitive(name, kind, meta, None, n_out, differentiable, plan_attrs=plan_attrs)
    return p
