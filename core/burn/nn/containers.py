"""Module containers: ModuleList, ModuleDict, ParameterList, ParameterDict (torch's semantics).

Each container is a :class:`~burn.nn.Module` whose items are its attributes,
named by position (``"0"``, ``"1"``...) or by key, so discovery, state dicts,
``save``/``load``, ``to_device`` and optimizers see them with paths such as
``"blocks.0.weight"`` or ``"heads.cls.bias"``, exactly as torch names them.
A plain list, tuple or dict holding modules or parameters is rejected when
assigned to a module attribute (see :meth:`Module.__setattr__`), because
torch would silently drop it and a port would train without those weights.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from ..errors import BurnError
from ..tensor import Tensor
from .module import Module, Parameter

__all__ = ["ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


class _IndexedContainer(Module):
    """Items stored as attributes "0".."n-1" (the dotted paths torch gives them)."""

    _item_kind = "module"

    def __init__(self, items: Iterable = ()):
        object.__setattr__(self, "_n", 0)
        self.extend(items)

    def _check(self, value):
        raise NotImplementedError

    def _index(self, i: int) -> int:
        n = self._n
        if not isinstance(i, int):
            raise TypeError(f"{type(self).__name__} indices must be integers or slices, got {type(i).__name__}")
        if not -n <= i < n:
            raise IndexError(f"{type(self).__name__} index {i} is out of range for length {n}")
        return i + n if i < 0 else i

    def _items(self) -> list:
        d = vars(self)
        return [d[str(i)] for i in range(self._n)]

    def _reset(self, items: list) -> None:
        d = vars(self)
        for i in range(self._n):
            del d[str(i)]
        for i, v in enumerate(items):
            d[str(i)] = v
        object.__setattr__(self, "_n", len(items))

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator:
        return iter(self._items())

    def __getitem__(self, i):
        if isinstance(i, slice):
            return type(self)(self._items()[i])
        return vars(self)[str(self._index(i))]

    def __setitem__(self, i, value) -> None:
        vars(self)[str(self._index(i))] = self._check(value)

    def __delitem__(self, i) -> None:
        items = self._items()
        del items[i if isinstance(i, slice) else self._index(i)]
        self._reset(items)

    def append(self, value) -> "_IndexedContainer":
        """Add ``value`` at the end; returns the container.

        Example:
            >>> import burn
            >>> blocks = burn.nn.ModuleList().append(burn.nn.Linear(2, 2))
            >>> assert len(blocks) == 1
        """
        vars(self)[str(self._n)] = self._check(value)
        object.__setattr__(self, "_n", self._n + 1)
        return self

    def extend(self, values: Iterable) -> "_IndexedContainer":
        """Append every item of ``values``; returns the container.

        Example:
            >>> import burn
            >>> ps = burn.nn.ParameterList().extend([burn.zeros((2,)), burn.ones((3,))])
            >>> assert [p.shape for p in ps] == [(2,), (3,)]
        """
        if isinstance(values, (Module, Tensor)) or not isinstance(values, Iterable):
            raise TypeError(f"{type(self).__name__}.extend expects an iterable of {self._item_kind}s, "
                            f"got {type(values).__name__}")
        for v in values:
            self.append(v)
        return self

    def insert(self, index: int, value) -> None:
        """Insert ``value`` before position ``index`` (as ``list.insert``).

        Example:
            >>> import burn
            >>> m = burn.nn.ModuleList([burn.nn.ReLU()])
            >>> m.insert(0, burn.nn.Identity())
            >>> assert [type(x).__name__ for x in m] == ["Identity", "ReLU"]
        """
        items = self._items()
        items.insert(index, self._check(value))
        self._reset(items)

    def extra_repr(self) -> str:
        """The length, unless the items are modules (which print as children).

        Example:
            >>> import burn
            >>> assert repr(burn.nn.ModuleList()) == "ModuleList(len=0)"
        """
        return "" if self._n and self._item_kind == "module" else f"len={self._n}"   # modules print as children


class _HoldsModules:
    """Item check and forward of ModuleList/ModuleDict (which name their parameter twin)."""

    _twin = _how = ""
    _flat_repr = True       # a parent prints the items as "(name.0): ...", see Module._repr_children

    def _check(self, value):
        if not isinstance(value, Module):
            raise TypeError(f"{type(self).__name__} holds modules, got {type(value).__name__} "
                            f"(use {self._twin} for parameters)")
        return value

    def forward(self, *args, **kwargs):
        """A module container is not callable: use its items in the parent's forward.

        Example:
            >>> import burn
            >>> try:
            ...     burn.nn.ModuleList()(1)
            ... except NotImplementedError as e:
            ...     assert "iterate" in str(e)
        """
        raise NotImplementedError(f"{type(self).__name__} has no forward(): {self._how}")


class ModuleList(_HoldsModules, _IndexedContainer):
    """A list of modules that the parent module sees (paths ``"name.0..."``).

    Indexing (int and slice), ``len``, iteration, ``append``/``extend``/``insert``
    and item assignment behave as torch's ``nn.ModuleList``.

    Example:
        >>> import burn
        >>> class MLP(burn.nn.Module):
        ...     def __init__(self):
        ...         self.layers = burn.nn.ModuleList([burn.nn.Linear(2, 4), burn.nn.Linear(4, 1)])
        ...     def forward(self, x):
        ...         for layer in self.layers:
        ...             x = layer(x)
        ...         return x
        >>> m = MLP()
        >>> assert [n for n, _ in m.named_parameters()][:2] == ["layers.0.weight", "layers.0.bias"]
        >>> assert len(m.layers) == 2 and m(burn.ones((3, 2))).shape == (3, 1)
    """

    _twin, _how = "ParameterList", "iterate over it in the parent module's forward"


def _as_parameter(value, kind: str) -> Parameter:
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)        # as torch's ParameterList wraps plain tensors
    raise TypeError(f"{kind} holds parameters (or tensors, made Parameters), got {type(value).__name__}")


class ParameterList(_IndexedContainer):
    """A list of parameters that the parent module sees (paths ``"name.0"``); plain tensors
    are wrapped in :class:`Parameter` as torch does.

    Example:
        >>> import burn
        >>> class Scales(burn.nn.Module):
        ...     def __init__(self):
        ...         self.ws = burn.nn.ParameterList([burn.ones((2,)), burn.zeros((2,))])
        >>> m = Scales()
        >>> assert list(m.state_dict()) == ["ws.0", "ws.1"]
        >>> assert isinstance(m.ws[0], burn.nn.Parameter) and len(m.ws) == 2
    """

    _item_kind = "parameter"

    def _check(self, value):
        return _as_parameter(value, "ParameterList")


class _KeyedContainer(Module):
    """Items stored as attributes named by their string keys, in insertion order."""

    _item_kind = "module"

    def __init__(self, items=None):
        object.__setattr__(self, "_keys", [])
        if items is not None:
            self.update(items)

    def _check(self, value):
        raise NotImplementedError

    def _key(self, key) -> str:
        if not isinstance(key, str):
            raise TypeError(f"{type(self).__name__} keys must be strings, got {type(key).__name__}")
        if not key or "." in key or key in ("_keys", "training") or key.startswith("_"):
            raise BurnError(f"{type(self).__name__}: key {key!r} cannot name a state-dict entry "
                            f"(no dots, not empty, not starting with '_', not 'training')")
        return key

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def __contains__(self, key) -> bool:
        return key in self._keys

    def __getitem__(self, key):
        if key not in self._keys:
            raise KeyError(key)
        return vars(self)[key]

    def __setitem__(self, key, value) -> None:
        key = self._key(key)
        vars(self)[key] = self._check(value)
        if key not in self._keys:
            self._keys.append(key)

    def __delitem__(self, key) -> None:
        if key not in self._keys:
            raise KeyError(key)
        self._keys.remove(key)
        del vars(self)[key]

    def keys(self) -> list[str]:
        """The keys in insertion order.

        Example:
            >>> import burn
            >>> assert burn.nn.ModuleDict({"a": burn.nn.ReLU()}).keys() == ["a"]
        """
        return list(self._keys)

    def values(self) -> list:
        """The items in insertion order.

        Example:
            >>> import burn
            >>> assert len(burn.nn.ParameterDict({"w": burn.ones((2,))}).values()) == 1
        """
        d = vars(self)
        return [d[k] for k in self._keys]

    def items(self) -> list[tuple[str, object]]:
        """``(key, item)`` pairs in insertion order.

        Example:
            >>> import burn
            >>> (k, v), = burn.nn.ModuleDict({"act": burn.nn.ReLU()}).items()
            >>> assert k == "act" and isinstance(v, burn.nn.ReLU)
        """
        d = vars(self)
        return [(k, d[k]) for k in self._keys]

    def pop(self, key):
        """Remove ``key`` and return its item.

        Example:
            >>> import burn
            >>> d = burn.nn.ModuleDict({"a": burn.nn.ReLU()})
            >>> assert isinstance(d.pop("a"), burn.nn.ReLU) and len(d) == 0
        """
        v = self[key]
        del self[key]
        return v

    def update(self, items) -> None:
        """Add or replace items from a mapping or an iterable of ``(key, item)`` pairs.

        Example:
            >>> import burn
            >>> d = burn.nn.ModuleDict()
            >>> d.update([("a", burn.nn.ReLU()), ("b", burn.nn.Identity())])
            >>> assert d.keys() == ["a", "b"]
        """
        pairs = items.items() if isinstance(items, (Mapping, _KeyedContainer)) else items
        for k, v in pairs:
            self[k] = v

    def extra_repr(self) -> str:
        """The length, unless the items are modules (which print as children).

        Example:
            >>> import burn
            >>> assert repr(burn.nn.ParameterDict()) == "ParameterDict(len=0)"
        """
        return "" if self._keys and self._item_kind == "module" else f"len={len(self._keys)}"


class ModuleDict(_HoldsModules, _KeyedContainer):
    """A dict of modules that the parent module sees (paths ``"name.key..."``), in insertion order.

    Example:
        >>> import burn
        >>> class Heads(burn.nn.Module):
        ...     def __init__(self):
        ...         self.heads = burn.nn.ModuleDict({"cls": burn.nn.Linear(4, 3), "reg": burn.nn.Linear(4, 1)})
        >>> m = Heads()
        >>> assert "heads.reg.bias" in m.state_dict() and m.heads["cls"].d_out == 3
    """

    _twin, _how = "ParameterDict", "pick a module by key in the parent module's forward"


class ParameterDict(_KeyedContainer):
    """A dict of parameters that the parent module sees (paths ``"name.key"``); plain tensors
    are wrapped in :class:`Parameter`.

    Example:
        >>> import burn
        >>> class Gains(burn.nn.Module):
        ...     def __init__(self):
        ...         self.g = burn.nn.ParameterDict({"a": burn.ones((2,))})
        >>> assert [n for n, _ in Gains().named_parameters()] == ["g.a"]
    """

    _item_kind = "parameter"

    def _check(self, value):
        return _as_parameter(value, "ParameterDict")
