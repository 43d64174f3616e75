"""Host-value recipes: how a saved graph recomputes its host values in another process.

A host value (:func:`burn.capture.host_value`) is computed by a Python callback before each
replay, and callbacks are not data. Where the computation is well-defined without the
objects that made it (an optimizer's scalars: its hyperparameters and a step count), the
code that makes the host value also gives a *recipe*: a registered kind and JSON-able
parameters describing the callback's state at save time. :meth:`burn.Graph.save` writes the
recipe next to the host slot; :meth:`burn.Graph.load` rebuilds a callback from it with the
kind's factory, so the loaded graph replays on its own and continues where the saved one
stopped (an Adam step count goes on counting). A host value without a recipe must be bound
with ``g.bind_host(name, fn)``; the replay says which.

A factory takes the parameters and returns a :class:`Recipe`-like object: called with no
arguments once per replay it returns the host value's array, and its ``recipe()`` gives
the current ``(kind, params)`` (so a loaded graph saves again).
"""
from __future__ import annotations

import importlib

from ..errors import CaptureError

__all__ = ["register_host_recipe", "make_host_fn", "Recipe", "HOST_RECIPES"]

HOST_RECIPES: dict = {}


def register_host_recipe(kind: str, factory) -> None:
    """Register ``factory(params) -> callable`` for host-value recipes of ``kind`` ("namespace.name").

    Registering a kind twice with another factory raises.

    Example:
        >>> import burn, numpy as np
        >>> from burn.capture import Recipe, register_host_recipe
        >>> class Doubling(Recipe):
        ...     kind = "example.doubling"
        ...     def __call__(self):
        ...         self.params["v"] *= 2
        ...         return np.float32(self.params["v"])
        >>> register_host_recipe("example.doubling", Doubling)
        >>> f = burn.capture.recipes.make_host_fn("example.doubling", {"v": 1.0}, "scale")
        >>> assert f() == 2.0 and f() == 4.0 and f.recipe() == ("example.doubling", {"v": 4.0})
    """
    if not isinstance(kind, str) or "." not in kind:
        raise CaptureError(f"burn.capture.register_host_recipe: kind must be a 'namespace.name' string, got {kind!r}")
    old = HOST_RECIPES.get(kind)
    if old is not None and old is not factory:
        raise CaptureError(f"burn.capture.register_host_recipe: kind {kind!r} is registered already")
    HOST_RECIPES[kind] = factory


class Recipe:
    """Base of recipe callables: keeps ``kind`` and ``params``; subclasses define ``__call__``.

    Example:
        >>> from burn.capture import Recipe
        >>> r = Recipe({"value": [1.0]})
        >>> assert r() == [1.0] and r.recipe() == ("burn.constant", {"value": [1.0]})
    """

    kind = "burn.constant"

    def __init__(self, params):
        self.params = dict(params)

    def __call__(self):
        return self.params["value"]

    def recipe(self):
        """``(kind, params)`` now: what a saved graph writes for this host value."""
        return (self.kind, dict(self.params))


def make_host_fn(kind: str, params: dict, name: str):
    """The callable a loaded graph computes host value ``name`` with, from its saved recipe.

    Example:
        >>> from burn.capture.recipes import make_host_fn
        >>> assert make_host_fn("burn.constant", {"value": [0.5]}, "lr")() == [0.5]
    """
    factory = HOST_RECIPES.get(kind)
    module = kind.rpartition(".")[0]
    if factory is None and (module == "burn" or module.startswith("burn.")):
        try:        # burn's own recipes register when their module is imported (burn.optim is lazy)
            importlib.import_module(module)
        except ImportError:
            pass
        factory = HOST_RECIPES.get(kind)
    if factory is None:
        ns = kind.partition(".")[0]
        raise CaptureError(f"burn.Graph.load: host value {name!r} was saved with recipe {kind!r}, which no module "
                           f"of this process registered (import the package of namespace '{ns}' first, or bind "
                           f"the value after loading with g.bind_host({name!r}, fn))")
    fn = factory(dict(params))
    if not hasattr(fn, "recipe"):
        raise CaptureError(f"burn.capture: the factory of host recipe {kind!r} returned {type(fn).__name__}, "
                           f"which has no recipe() method")
    return fn


register_host_recipe("burn.constant", Recipe)     # the same numbers at every replay
