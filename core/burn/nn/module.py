"""Module and Parameter: models as plain Python objects whose tensors are found by attribute.

A :class:`Parameter` is a Tensor that a Module trains: on an autodiff device
it is a leaf that requires grad, unless frozen. Sub-modules, parameters and
buffers (other tensors) are discovered by walking the module's attributes
and the containers of :mod:`burn.nn.containers` (``ModuleList``, ``ModuleDict``,
``ParameterList``, ``ParameterDict``), so there is nothing to register;
``named_parameters()`` gives dotted paths such as ``"layers.0.weight"``. A plain
list, tuple or dict holding modules or parameters is rejected at assignment
(torch would silently drop it) with the container to use instead.
"""
from __future__ import annotations

from collections.abc import Iterator

from ..device import Device
from ..errors import BurnError
from ..tensor import Tensor
from ..dtypes import as_dtype
from ..ops.creation import tensor
from .state import load_into, load_torch_state, save_state_dict

__all__ = ["Module", "Parameter"]


class Parameter(Tensor):
    """A trainable tensor of a Module.

    Example:
        >>> import burn
        >>> p = burn.nn.Parameter(burn.zeros((2,), device=burn.Device.flex().autodiff()))
        >>> assert p.requires_grad and not p.frozen
        >>> assert not p.freeze().requires_grad
    """

    __slots__ = ("frozen",)

    def __new__(cls, value: Tensor, *, frozen: bool = False):
        if not isinstance(value, Tensor):
            raise BurnError(f"Parameter: expected a Tensor, got {type(value).__name__}")
        p = object.__new__(cls)
        p._h = value._h
        p.device = value.device
        p._grad = None
        p.frozen = bool(frozen)
        p._leaf = p.device.is_autodiff and not p.frozen and p.dtype.is_inexact
        return p

    def __init__(self, value: Tensor, *, frozen: bool = False):
        pass

    def freeze(self) -> "Parameter":
        """Stop tracking this parameter: it keeps its value, gets no gradient.

        Use it to fine-tune part of a model. Returns the parameter.

        Example:
            >>> import burn
            >>> p = burn.nn.Parameter(burn.ones((2,), device=burn.Device.flex().autodiff()))
            >>> assert p.freeze().frozen and not p.requires_grad
        """
        self.frozen = True
        self._leaf = False
        return self

    def unfreeze(self) -> "Parameter":
        """Track this parameter again (on an autodiff device). Returns the parameter.

        Example:
            >>> import burn
            >>> p = burn.nn.Parameter(burn.ones((2,), device=burn.Device.flex().autodiff()), frozen=True)
            >>> assert not p.requires_grad and p.unfreeze().requires_grad
        """
        self.frozen = False
        self._leaf = self.device.is_autodiff and self.dtype.is_inexact
        return self

    def _moved(self, device: Device) -> "Parameter":
        return Parameter(self.detach().to_device(device), frozen=self.frozen)


def _children(owner, name, value, prefix):
    """(path, Module) pairs for a module attribute that holds a module. A plain container that
    holds modules or parameters (filled after assignment, past ``__setattr__``'s check) raises."""
    if isinstance(value, Module):
        yield prefix, value
    elif type(value) in (list, tuple, dict) and value:
        err = _plain_container_error(owner, name, value)
        if err is not None:
            raise err


def _plain_container_error(owner, name, value):
    """The error for a plain list/tuple/dict attribute holding modules or parameters, or None.

    >>> assert _plain_container_error(object(), "sizes", [1, 2]) is None
    """
    items = value.values() if isinstance(value, dict) else value
    kinds = set()
    for v in items:
        if isinstance(v, Parameter):
            kinds.add("Parameter")
        elif isinstance(v, Module):
            kinds.add("Module")
        elif isinstance(v, (list, tuple, dict)) and _plain_container_error(owner, name, v) is not None:
            kinds.add("nested")
    if not kinds:
        return None
    keyed = isinstance(value, dict)
    if "Module" in kinds or ("nested" in kinds and "Parameter" not in kinds):
        fix = "burn.nn.ModuleDict" if keyed else "burn.nn.ModuleList"
    else:
        fix = "burn.nn.ParameterDict" if keyed else "burn.nn.ParameterList"
    return BurnError(
        f"{type(owner).__name__}.{name}: a plain {type(value).__name__} holding "
        f"{' and '.join(k + 's' for k in sorted(kinds - {'nested'})) or 'nested containers of modules'} "
        f"would not be trained, saved or moved; wrap it in {fix}(...) so the module sees its items")


class _instance_or_class:
    """A method that receives the instance, or the class when called on the class."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj, cls):
        import functools
        return functools.partial(self.fn, cls if obj is None else obj)


class Module:
    """Base class of models: ``model(x)`` calls ``forward``.

    Example:
        >>> import burn
        >>> class Affine(burn.nn.Module):
        ...     def __init__(self):
        ...         self.scale = burn.nn.Parameter(burn.ones((3,)))
        ...         self.shift = burn.nn.Parameter(burn.zeros((3,)))
        ...     def forward(self, x):
        ...         return x * self.scale + self.shift
        >>> m = Affine()
        >>> assert [n for n, _ in m.named_parameters()] == ["scale", "shift"]
        >>> assert m(burn.ones((3,))).tolist() == [1.0, 1.0, 1.0]
    """

    training: bool = True

    def forward(self, *args, **kwargs):
        """The computation of the module; subclasses define it, users call ``module(x)``.

        Example:
            >>> import burn
            >>> class Double(burn.nn.Module):
            ...     def forward(self, x):
            ...         return x * 2
            >>> assert Double()(burn.ones((2,))).tolist() == [2.0, 2.0]
        """
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def __setattr__(self, name, value):
        # a plain container of parameters would be invisible to named_parameters(), state_dict(),
        # to_device() and optimizers: refuse it here, where the user wrote it
        if type(value) in (list, tuple, dict) and value:
            err = _plain_container_error(self, name, value)
            if err is not None:
                raise err
        object.__setattr__(self, name, value)

    # -- discovery ------------------------------------------------------------------
    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, "Module"]]:
        """This module and every sub-module with dotted paths ("" for self).

        Example:
            >>> import burn
            >>> m = burn.nn.Sequential(burn.nn.Linear(2, 3), burn.nn.ReLU())
            >>> assert [n for n, _ in m.named_modules()] == ["", "layers", "layers.0", "layers.1"]
        """
        yield prefix, self
        for name, value in vars(self).items():
            for path, child in _children(self, name, value, f"{prefix}.{name}" if prefix else name):
                yield from child.named_modules(path)

    def named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """``(dotted_path, Parameter)`` for every parameter, frozen ones included.

        A parameter shared by two sub-modules is listed once.

        Example:
            >>> import burn
            >>> m = burn.nn.Sequential(burn.nn.Linear(2, 3), burn.nn.ReLU())
            >>> assert [n for n, _ in m.named_parameters()] == ["layers.0.weight", "layers.0.bias"]
        """
        seen = set()
        for path, m in self.named_modules():
            for name, value in vars(m).items():
                if isinstance(value, Parameter) and id(value) not in seen:
                    seen.add(id(value))
                    yield (f"{path}.{name}" if path else name), value

    def parameters(self) -> list[Parameter]:
        """Every parameter (frozen ones included), e.g. to give to an optimizer.

        Example:
            >>> import burn
            >>> assert [p.shape for p in burn.nn.Linear(2, 3).parameters()] == [(2, 3), (3,)]
        """
        return [p for _, p in self.named_parameters()]

    def named_buffers(self) -> Iterator[tuple[str, Tensor]]:
        """Tensors that are state but not trained (e.g. running statistics).

        Example:
            >>> import burn
            >>> names = [n for n, _ in burn.nn.BatchNorm1d(3).named_buffers()]
            >>> assert "running_mean" in names and "running_var" in names
        """
        for path, m in self.named_modules():
            for name, value in vars(m).items():
                if isinstance(value, Tensor) and not isinstance(value, Parameter):
                    yield (f"{path}.{name}" if path else name), value

    def num_params(self) -> int:
        """Number of scalar parameters.

        Example:
            >>> import burn
            >>> assert burn.nn.Linear(3, 2).num_params() == 8
        """
        return sum(p.size for p in self.parameters())

    # -- modes ------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode (dropout active, batch statistics) on every sub-module.

        Args:
            mode: False is the same as :meth:`eval`. Returns the module.

        Example:
            >>> import burn
            >>> m = burn.nn.Sequential(burn.nn.Dropout(0.5))
            >>> assert not m.train(False).layers[0].training and m.train().layers[0].training
        """
        for _, m in self.named_modules():
            m.training = mode
        return self

    def eval(self) -> "Module":
        """Set evaluation mode (dropout off, running statistics) on every sub-module.

        Example:
            >>> import burn
            >>> m = burn.nn.Dropout(0.5).eval()
            >>> assert not m.training and m(burn.ones((4,))).tolist() == [1.0] * 4
        """
        return self.train(False)

    def freeze(self) -> "Module":
        """Freeze every parameter (they stay in parameters() and state_dict()).

        Example:
            >>> import burn
            >>> m = burn.nn.Linear(2, 2).to_device(burn.Device.flex().autodiff()).freeze()
            >>> assert all(p.frozen and not p.requires_grad for p in m.parameters())
        """
        for p in self.parameters():
            p.freeze()
        return self

    # -- devices -----------------------------------------------------------------------
    def to_device(self, device) -> "Module":
        """Move every parameter and buffer to ``device`` (in place; returns self).

        On an autodiff device, unfrozen parameters require grad.

        Example:
            >>> import burn
            >>> m = burn.nn.Linear(2, 2).to_device(burn.Device.flex().autodiff())
            >>> assert m.weight.device.is_autodiff and m.weight.requires_grad
        """
        device = device if isinstance(device, Device) else Device(device)
        for _, m in self.named_modules():
            for name, value in list(vars(m).items()):
                if isinstance(value, Parameter):
                    object.__setattr__(m, name, value._moved(device))
                elif isinstance(value, Tensor):
                    object.__setattr__(m, name, value.detach().to_device(device))
        return self

    # -- state -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Tensor]:
        """Parameters and buffers by dotted path (the tensors themselves, not copies).

        Example:
            >>> import burn
            >>> sd = burn.nn.Linear(2, 3).state_dict()
            >>> assert sorted(sd) == ["bias", "weight"] and sd["weight"].shape == (2, 3)
        """
        out = {n: p for n, p in self.named_parameters()}
        out.update(self.named_buffers())
        return out

    def load_state_dict(self, state: dict, *, strict: bool = True) -> "Module":
        """Copy values from ``state`` (tensors or arrays) into this module.

        Every mismatch (missing or unexpected names, shapes, dtypes) is listed
        in one BurnError.

        Args:
            state: name -> tensor or array, e.g. from :meth:`state_dict`.
            strict: also reject missing and unexpected names.

        Example:
            >>> import burn
            >>> a, b = burn.nn.Linear(2, 3), burn.nn.Linear(2, 3)
            >>> _ = b.load_state_dict(a.state_dict())
            >>> assert b.weight.tolist() == a.weight.tolist()
        """
        import numpy as np
        own = self.state_dict()
        problems = []
        if strict:
            problems += [f"missing: {k}" for k in own if k not in state]
            problems += [f"unexpected: {k}" for k in state if k not in own]
        for k, t in own.items():
            if k not in state:
                continue
            v = state[k]
            shape = tuple(np.shape(v)) if not isinstance(v, Tensor) else tuple(v.shape)
            if shape != tuple(t.shape):
                problems.append(f"shape of {k}: file {shape}, model {tuple(t.shape)}")
            # lists and scalars take the model's dtype; typed values must already have it,
            # since a silent cast (float64 -> float32, float -> int) would hide a wrong checkpoint
            vd = v.dtype if isinstance(v, Tensor) else getattr(v, "dtype", None)
            if vd is not None and as_dtype(vd) is not t.dtype:
                problems.append(f"dtype of {k}: file {as_dtype(vd).name}, model {t.dtype.name} "
                                f"(convert it first, e.g. state[{k!r}].astype({t.dtype.name!r}))")
        if problems:
            raise BurnError("load_state_dict: state does not match the model:\n  " + "\n  ".join(problems))
        for k, t in own.items():
            if k in state:
                v = state[k]
                v = v if isinstance(v, Tensor) else tensor(v, device=t.device, dtype=t.dtype)
                if v.device != t.device:
                    v = v.detach().to_device(t.device)
                t.assign_(v.detach())
        return self

    def save(self, path, metadata: dict | None = None) -> None:
        """Write ``state_dict()`` to ``path`` as safetensors, atomically (see burn.nn.state).

        Example:
            >>> import burn, os, tempfile
            >>> p = os.path.join(tempfile.mkdtemp(), "lin.safetensors")
            >>> a = burn.nn.Linear(3, 2)
            >>> a.save(p, metadata={"epoch": "3"})
            >>> b = burn.nn.Linear(3, 2).load(p)
            >>> assert (a.bias.numpy() == b.bias.numpy()).all()
        """
        save_state_dict(self.state_dict(), path, metadata)

    def load_state(self, path, *, strict: bool = True) -> "Module":
        """Load a safetensors file written by :meth:`save` into this module (in place; returns self).

        Names, shapes and dtypes are checked; every mismatch is listed in one
        BurnError naming the file. Values land on each tensor's current device.

        Example:
            >>> import burn, os, tempfile
            >>> p = os.path.join(tempfile.mkdtemp(), "lin.safetensors")
            >>> burn.nn.Linear(3, 2).save(p)
            >>> try:
            ...     burn.nn.Linear(4, 2).load_state(p)
            ... except burn.BurnError as e:
            ...     assert "shape of weight: file (3, 2), model (4, 2)" in str(e)
        """
        return load_into(self, path, strict=strict)

    def load_torch_state(self, path, *, strict: bool = True) -> "Module":
        """Load a safetensors state dict saved by PyTorch for the same architecture.

        Linear weights are transposed (torch ``[out, in]``, burn ``[in, out]``)
        and Sequential names mapped (``0.weight`` -> ``layers.0.weight``); see
        :func:`burn.nn.state.load_torch_state` for the rule.

        Example:
            >>> import burn, os, tempfile
            >>> p = os.path.join(tempfile.mkdtemp(), "t.safetensors")
            >>> burn.nn.save_state_dict({"weight": burn.ones((3, 2)), "bias": burn.zeros((3,))}, p)
            >>> assert burn.nn.Linear(2, 3).load_torch_state(p).weight.shape == (2, 3)
        """
        return load_torch_state(self, path, strict=strict)

    @_instance_or_class
    def load(self_or_cls, path, *, strict: bool = True) -> "Module":
        """``model.load(path)`` loads into ``model`` (like :meth:`load_state`) and returns it;
        ``MyModel.load(path)`` builds ``MyModel()`` (a constructor without arguments) first.

        Example:
            >>> import burn, os, tempfile
            >>> p = os.path.join(tempfile.mkdtemp(), "lin.safetensors")
            >>> burn.nn.Linear(3, 2).save(p)
            >>> assert burn.nn.Linear(3, 2).load(p).weight.shape == (3, 2)
        """
        if isinstance(self_or_cls, type):
            try:
                self_or_cls = self_or_cls()
            except TypeError as e:
                raise BurnError(f"{self_or_cls.__name__}.load(path) on the class needs a constructor "
                                f"without arguments ({e}); build the model, then call model.load(path)") from None
        return load_into(self_or_cls, path, strict=strict)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}("]
        for path, child in self._repr_children():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({path}): {body}")
        extra = self.extra_repr()
        if len(lines) == 1:
            return f"{type(self).__name__}({extra})"
        if extra:
            lines.insert(1, f"  {extra}")
        return "\n".join(lines + [")"])

    def _repr_children(self):
        """``(path, child)`` pairs that ``repr`` prints, one level down; the items of a
        ModuleList/ModuleDict print flat, as ``(layers.0): Linear(...)``."""
        for name, value in vars(self).items():
            for path, child in _children(self, name, value, name):
                if getattr(child, "_flat_repr", False):
                    for sub, item in child._repr_children():
                        yield f"{path}.{sub}", item
                else:
                    yield path, child

    def extra_repr(self) -> str:
        """The settings shown inside ``repr(module)``; override it in a layer.

        Example:
            >>> import burn
            >>> assert burn.nn.Linear(2, 3).extra_repr() == "d_in=2, d_out=3, bias=True"
        """
        return ""
