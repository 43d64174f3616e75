"""ParamGroup: which parameters of a model an optimizer setting applies to, chosen by dotted path.

A ParamGroup is a selector over ``(dotted_path, Parameter)`` pairs, the names
``Module.named_parameters()`` gives (``"encoder.layers.0.weight"``). Four kinds
of criteria:

- ``paths``: exact names, or module prefixes selecting a subtree. ``"encoder"``
  and ``"encoder."`` both select ``"encoder"`` itself and every
  ``"encoder.<anything>"``, never ``"encoder2.weight"``.
- ``glob``: shell patterns (``fnmatch``, case-sensitive) over the whole dotted
  path; ``*`` also crosses dots, so ``"*.bias"`` is every bias at any depth.
- ``regex``: ``re.search`` over the dotted path (anchor with ``^``/``$`` yourself).
- ``predicate``: ``predicate(path, param) -> bool``.

Criteria given together in one constructor are alternatives (a parameter is
selected when any of them matches); ``exclude=`` then removes parameters.
Groups combine with ``a | b`` (union), ``a & b`` (intersection) and ``a - b``
(difference).

How an optimizer uses groups: ``groups=[(ParamGroup, {overrides}), ...]``;
each parameter joins the first group that selects it, parameters no group
selects join the default group (the optimizer's own keyword arguments), and a
group that ends up with no parameter -- it selects none, or only ones earlier
groups took -- is a :class:`burn.BurnError`, since that is almost always a
mistyped pattern.
"""
from __future__ import annotations

import fnmatch
import re

from ..errors import BurnError
from ..nn.module import Module
from ..tensor import Tensor

__all__ = ["ParamGroup", "named_params"]


def _strs(value, what):
    if value is None:
        return ()
    if isinstance(value, str):
        value = (value,)
    out = tuple(value)
    for v in out:
        if not isinstance(v, str):
            raise BurnError(f"ParamGroup: {what} must be strings, got {v!r} ({type(v).__name__})")
    return out


def named_params(source) -> list[tuple[str, object]]:
    """``(path, param)`` pairs of a Module, a ``{path: param}`` dict, ``(path, param)`` pairs,
    or a plain list of parameters (named by position: ``"0"``, ``"1"``, ...).

    Example:
        >>> import burn
        >>> from burn.optim.param_group import named_params
        >>> assert [n for n, _ in named_params(burn.nn.Linear(2, 3))] == ["weight", "bias"]
        >>> assert [n for n, _ in named_params([burn.zeros((2,)), burn.ones((1,))])] == ["0", "1"]
    """
    if isinstance(source, Module):
        return list(source.named_parameters())
    if isinstance(source, dict):
        items = list(source.items())
    else:
        items = []
        for i, item in enumerate(source):
            if isinstance(item, Tensor):
                items.append((str(i), item))
            elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
                items.append(item)
            else:
                raise BurnError(f"expected parameters (Tensors) or (path, Tensor) pairs, got item {i} of type "
                                f"{type(item).__name__}; pass a Module, model.named_parameters() or a list of "
                                f"Parameters")
    for path, p in items:
        if not isinstance(path, str) or not isinstance(p, Tensor):
            raise BurnError(f"expected (path: str, Tensor) pairs, got ({path!r}, {type(p).__name__})")
    return items


class ParamGroup:
    """A selector of parameters by dotted path (exact or module prefix), glob, regex or predicate.

    Criteria in one constructor are alternatives (any may match); ``exclude``
    (a ParamGroup, or paths) removes parameters afterwards. ``|``, ``&`` and
    ``-`` combine groups. ``name`` labels the group in ``opt.param_groups``.

    Example:
        >>> import burn
        >>> m = burn.nn.Sequential(burn.nn.Linear(2, 3), burn.nn.ReLU(), burn.nn.Linear(3, 1))
        >>> g = burn.optim.ParamGroup(glob="*.bias") | burn.optim.ParamGroup(paths="layers.2")
        >>> assert [n for n, _ in g.select(m)] == ["layers.0.bias", "layers.2.weight", "layers.2.bias"]
        >>> g = burn.optim.ParamGroup(regex=r"weight$", exclude="layers.0")
        >>> assert [n for n, _ in g.select(m)] == ["layers.2.weight"]
    """

    __slots__ = ("_match", "_repr", "name")

    def __init__(self, paths=None, *, glob=None, regex=None, predicate=None, exclude=None, name=None):
        paths, globs = _strs(paths, "paths"), _strs(glob, "glob patterns")
        regexes = []
        for r in _strs(regex, "regular expressions"):
            try:
                regexes.append(re.compile(r))
            except re.error as e:
                raise BurnError(f"ParamGroup: invalid regex {r!r}: {e}") from None
        if predicate is not None and not callable(predicate):
            raise BurnError(f"ParamGroup: predicate must be callable (path, param) -> bool, "
                            f"got {type(predicate).__name__}")
        if "" in paths:
            raise BurnError("ParamGroup: an empty path selects nothing; to select every parameter use "
                            "ParamGroup(glob='*')")
        if not (paths or globs or regexes or predicate is not None):
            raise BurnError("ParamGroup: give at least one of paths=, glob=, regex= or predicate=")
        prefixes = tuple(p.rstrip(".") + "." for p in paths)
        exact = frozenset(p.rstrip(".") for p in paths)

        def match(path, param):
            if path in exact or path.startswith(prefixes):
                return True
            if any(fnmatch.fnmatchcase(path, g) for g in globs):
                return True
            if any(r.search(path) for r in regexes):
                return True
            return predicate is not None and bool(predicate(path, param))

        parts = []
        if paths:
            parts.append(f"paths={list(paths)!r}")
        if globs:
            parts.append(f"glob={list(globs)!r}" if len(globs) > 1 else f"glob={globs[0]!r}")
        if regexes:
            rs = [r.pattern for r in regexes]
            parts.append(f"regex={rs!r}" if len(rs) > 1 else f"regex={rs[0]!r}")
        if predicate is not None:
            parts.append(f"predicate={getattr(predicate, '__name__', type(predicate).__name__)}")
        self._match, self._repr, self.name = match, f"ParamGroup({', '.join(parts)})", name
        if exclude is not None:
            ex = exclude if isinstance(exclude, ParamGroup) else ParamGroup(paths=exclude)
            self._match = lambda path, param, inner=match: inner(path, param) and not ex._match(path, param)
            self._repr = f"ParamGroup({', '.join(parts + [f'exclude={ex!r}'])})"

    # -- constructors ------------------------------------------------------------------
    @classmethod
    def from_paths(cls, *paths, exclude=None, name=None) -> "ParamGroup":
        """Exact dotted paths or module prefixes (``"encoder"`` selects the whole subtree).

        Example:
            >>> from burn.optim import ParamGroup
            >>> g = ParamGroup.from_paths("encoder", "head.bias")
            >>> assert g.matches("encoder.0.weight") and g.matches("head.bias")
            >>> assert not g.matches("encoder2.weight") and not g.matches("head.weight")
        """
        return cls(paths=_flat(paths), exclude=exclude, name=name)

    @classmethod
    def from_glob(cls, *patterns, exclude=None, name=None) -> "ParamGroup":
        """Shell patterns over the dotted path (``*`` crosses dots).

        Example:
            >>> from burn.optim import ParamGroup
            >>> assert ParamGroup.from_glob("*.bias").matches("a.b.c.bias")
        """
        return cls(glob=_flat(patterns), exclude=exclude, name=name)

    @classmethod
    def from_regex(cls, *patterns, exclude=None, name=None) -> "ParamGroup":
        """Regular expressions searched (``re.search``) in the dotted path.

        Example:
            >>> from burn.optim import ParamGroup
            >>> g = ParamGroup.from_regex(r"\\.lora_")
            >>> assert g.matches("attn.q.lora_a") and not g.matches("attn.q.weight")
        """
        return cls(regex=_flat(patterns), exclude=exclude, name=name)

    @classmethod
    def from_predicate(cls, predicate, exclude=None, name=None) -> "ParamGroup":
        """``predicate(path, param) -> bool``, e.g. on the parameter's rank.

        Example:
            >>> import burn
            >>> g = burn.optim.ParamGroup.from_predicate(lambda path, p: p.ndim == 1)
            >>> assert [n for n, _ in g.select(burn.nn.Linear(2, 3))] == ["bias"]
        """
        return cls(predicate=predicate, exclude=exclude, name=name)

    # -- use ---------------------------------------------------------------------------
    def matches(self, path: str, param=None) -> bool:
        """Whether the parameter at ``path`` is selected (``param`` is passed to predicates).

        Example:
            >>> from burn.optim import ParamGroup
            >>> assert (ParamGroup(glob="*") - ParamGroup(paths="head")).matches("body.w")
        """
        return bool(self._match(path, param))

    def select(self, model) -> list:
        """The selected ``(path, param)`` pairs of a Module (or of what :func:`named_params` takes),
        in the model's order.

        Example:
            >>> import burn
            >>> sel = burn.optim.ParamGroup(paths="bias").select(burn.nn.Linear(2, 3))
            >>> assert [(n, p.shape) for n, p in sel] == [("bias", (3,))]
        """
        return [(path, p) for path, p in named_params(model) if self._match(path, p)]

    # -- algebra -----------------------------------------------------------------------
    def _combine(self, other, op, fn):
        if not isinstance(other, ParamGroup):
            return NotImplemented
        g = object.__new__(ParamGroup)
        a, b = self._match, other._match
        g._match = lambda path, param: fn(a(path, param), b(path, param))
        g._repr, g.name = f"({self!r} {op} {other!r})", None
        return g

    def __or__(self, other):
        return self._combine(other, "|", lambda x, y: x or y)

    def __and__(self, other):
        return self._combine(other, "&", lambda x, y: x and y)

    def __sub__(self, other):
        return self._combine(other, "-", lambda x, y: x and not y)

    def __repr__(self):
        return self._repr if self.name is None else f"{self._repr}[name={self.name!r}]"


def _flat(items):
    out = []
    for it in items:
        out.extend([it] if isinstance(it, str) else list(it))
    return out
