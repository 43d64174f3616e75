"""Tensor: the user-facing array type.

A Tensor is a :class:`~burn.bridge.Handle` (shape, dtype, lazy value) plus
its :class:`~burn.Device` and, on autodiff devices, its gradient record.
Every op goes through :func:`apply`: device check, the primitive's meta rule
(raising shape/dtype errors at the user's call), a node on the device's lazy
graph, and a GradNode when a gradient is needed.
"""
from __future__ import annotations

import sys
from weakref import ref as _weakref

import numpy as np

from . import dlpack as _dlpack, tape
from .bridge import TRACE as _TRACE, Handle, Node, record
from .errors import AutodiffError, DeviceMismatch, DTypeError, ShapeError, describe
from .graph import graph_for

__all__ = ["Tensor", "apply"]

_new = object.__new__
_GradNode = tape.GradNode
_ad_state = tape._state
_clock = tape._clock        # a list: ticks in place, so this binding stays current


def _check_devices(prim_name, tensors):
    dev = tensors[0].device
    for t in tensors[1:]:
        if t.device != dev:
            d2 = t.device
            if d2.kind == dev.kind and d2.index == dev.index:
                why = ("one is on an autodiff device and one is not; create both on "
                       "device.autodiff(), or use .detach() / burn.no_grad() deliberately")
            else:
                why = "move one with .to_device(...)"
            ops = ", ".join(describe(x) for x in tensors)
            raise DeviceMismatch(f"{prim_name}: operands are on different devices ({ops}); {why}")
    return dev


def apply(prim, tensors, attrs=None, metas=None):
    """Apply primitive ``prim`` to Tensors; return the output Tensor (or tuple).

    ``metas`` may be given when the caller already ran the meta rule.

    Every op in ``burn.ops`` is a thin wrapper over it: checks devices, runs
    the meta rule eagerly, records the node lazily and its autodiff record.

    Example:
        >>> import burn
        >>> from burn.tensor import apply
        >>> burn.plugins.ensure_loaded()
        >>> mul = burn.dispatch.registry.ops["mul"]
        >>> assert apply(mul, (burn.tensor([2.0]), burn.tensor([3.0]))).tolist() == [6.0]
    """
    if attrs is None:
        attrs = {}
    t0 = tensors[0]
    dev = t0.device
    for t in tensors:
        if t.device is not dev:      # the common case shares one Device object: skip __eq__
            dev = _check_devices(prim.name, tensors)
            break
    if metas is None:
        m = prim.meta(*tensors, **attrs)
        metas = m if type(m) is tuple and prim.n_out > 1 else (m,)
    graph = t0._h.graph
    if len(metas) == 1:
        m = metas[0]
        if m.dtype is not t0._h.dtype and m.dtype not in graph.dtypes:
            # a dtype new to this op's device (casts, comparisons): can the device hold it?
            graph.check_dtype(m.dtype, prim.name)
        # the hot path (every op a training step records), with record() and
        # Tensor._wrap inlined: ~1 us less per op than going through them
        args = []
        for t in tensors:
            h = t._h
            args.append(h if h.node is None else (h.node, h.index))
        # Node(...) and Handle(...) inlined: their __init__ calls cost ~0.1 us each
        node = _new(Node)
        node.prim = prim
        node.args = tuple(args)
        node.attrs = attrs
        node.metas = metas
        node.error = None
        h = _new(Handle)
        h.shape = m.shape
        h.dtype = m.dtype
        h.graph = graph
        h.data = None
        h.node = node
        h.index = 0
        node.outs = (_weakref(h),)
        pending = graph.pending
        node.pos = len(pending)
        pending.append(node)
        if len(pending) >= graph.max_pending:
            graph.flush()
        out = _new(Tensor)
        out._h = h
        out.device = dev
        out._grad = None
        out._leaf = False
        if not dev.is_autodiff:
            return out
        handles = (h,)
        outs = (out,)
    else:
        handles = record(graph, prim, [t._h for t in tensors], attrs, metas)
        outs = []
        for h in handles:
            t = _new(Tensor)
            t._h = h
            t.device = dev
            t._grad = None
            t._leaf = False
            outs.append(t)
    if dev.is_autodiff and _ad_state.__dict__.get("enabled", True):
        needs = False
        for t in tensors:
            if t._grad is not None or t._leaf:
                needs = True
                break
        if needs and prim.differentiable:
            rule = prim.backward_fn
            if rule is None:
                raise AutodiffError(f"{prim.name}: no backward rule is defined; it cannot be differentiated")
            # computed inputs are recorded by value: a later in-place update
            # (``y += 1``, ``y[0] = v``) rebinds the Tensor object, not this record.
            # The copy and GradNode(...) are inlined (every recorded op of a training step).
            ins = []
            for t in tensors:
                tg = t._grad
                if tg is None:
                    ins.append(t)
                else:
                    c = _new(Tensor)
                    c._h = t._h
                    c.device = t.device
                    c._grad = tg
                    c._leaf = False
                    ins.append(c)
            node = _new(_GradNode)
            node.prim = prim
            node.inputs = tuple(ins)
            node.attrs = attrs
            node.out_handles = handles
            node.saved = None
            node.backward_fn = rule
            node.time = _clock[0]
            if len(outs) == 1:
                if handles[0].dtype.is_inexact:
                    outs[0]._grad = (node, 0)
            else:
                for i, o in enumerate(outs):
                    if o._h.dtype.is_inexact:
                        o._grad = (node, i)
    return outs[0] if prim.n_out == 1 else tuple(outs)


def apply_creation(prim, device, attrs):
    """Apply a primitive with no tensor inputs on ``device``."""
    m = prim.meta(**attrs)
    graph = graph_for(device)
    (h,) = record(graph, prim, [], attrs, (m,))
    return Tensor._wrap(h, device)


class Tensor:
    """An n-dimensional array on a device, lazily computed.

    Example:
        >>> import burn
        >>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> y = (x * 2).sum(axis=1)
        >>> assert y.tolist() == [6.0, 14.0] and y.shape == (2,)
    """

    # ``_mutated`` is set only by in-place updates (read with a default; see tape._clock);
    # ``_vbase`` only on views and ``_views`` only on bases that have them (burn.views)
    __slots__ = ("_h", "device", "_grad", "_leaf", "_mutated", "_vbase", "_views", "__weakref__")
    __array_priority__ = 1000   # numpy defers to our reflected operators

    @classmethod
    def _wrap(cls, handle: Handle, device):
        t = object.__new__(cls)
        t._h = handle
        t.device = device
        t._grad = None
        t._leaf = False
        return t

    # -- metadata ---------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        """The size of each axis, as a tuple of ints (known without running anything).

        Example:
            >>> import burn
            >>> assert burn.zeros((2, 3)).shape == (2, 3)
        """
        return self._h.shape

    @property
    def dtype(self):
        """The element type, a :class:`burn.DType` such as ``burn.float32``.

        Example:
            >>> import burn
            >>> assert burn.arange(3).dtype is burn.int64
        """
        return self._h.dtype

    @property
    def ndim(self) -> int:
        """The number of axes (0 for a scalar tensor).

        Example:
            >>> import burn
            >>> assert burn.zeros((2, 3, 4)).ndim == 3
        """
        return len(self._h.shape)

    @property
    def size(self) -> int:
        """The number of elements (the product of ``shape``).

        Example:
            >>> import burn
            >>> assert burn.zeros((2, 3)).size == 6
        """
        n = 1
        for s in self._h.shape:
            n *= s
        return n

    def __len__(self):
        if not self._h.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._h.shape[0]

    # -- values -------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The values as a read-only numpy array (runs pending work).

        On every backend the array's ``writeable`` flag is off: on flex it shares the
        tensor's storage, elsewhere it is a downloaded copy, and in neither case can a
        write reach burn (values recorded earlier keep their meaning). For an array
        of your own use ``np.array(t)`` or ``t.numpy().copy()``.

        Example:
            >>> import burn, numpy as np
            >>> a = burn.arange(3).numpy()
            >>> assert a.tolist() == [0, 1, 2] and not a.flags.writeable
            >>> b = np.array(burn.arange(3))     # a writable copy
            >>> b[0] = 7
        """
        h = self._h
        a = h.graph.backend.to_numpy(h.value(), h.graph.index).view()
        a.flags.writeable = False
        return a

    def __array__(self, dtype=None, copy=None):
        """numpy's conversion protocol: ``np.asarray(t)`` is read-only (as ``numpy()``),
        ``np.array(t)`` / ``copy=True`` a writable copy; ``copy=False`` with a ``dtype``
        that needs a conversion raises ValueError, as numpy does.

        Example:
            >>> import burn, numpy as np
            >>> t = burn.tensor([1.0, 2.0])
            >>> assert not np.asarray(t).flags.writeable and np.array(t).flags.writeable
        """
        a = self.numpy()
        if copy:
            return np.array(a, dtype=dtype, copy=True)
        if dtype is None or a.dtype == np.dtype(dtype):
            return a
        if copy is False:
            raise ValueError(f"__array__: converting {describe(self)} to {np.dtype(dtype)} needs a copy, "
                             f"but copy=False was given")
        return a.astype(dtype)

    def item(self):
        """The single value of a one-element tensor as a Python scalar.

        Use it to log a loss or a metric; it runs pending work. Raises
        :class:`ShapeError` if the tensor has more than one element.

        Example:
            >>> import burn
            >>> assert burn.tensor([1.0, 2.0]).sum().item() == 3.0
        """
        h = self._h
        for s in h.shape:
            if s != 1:
                raise ShapeError(f"item: tensor of shape {self.shape} has {self.size} elements, not 1")
        # a one-element array's item() whatever its shape: no read-only view to make (numpy())
        return h.graph.backend.to_numpy(h.value(), h.graph.index).item()

    def tolist(self):
        """Nested Python lists of the values (runs pending work).

        Example:
            >>> import burn
            >>> assert burn.ones((2, 1)).tolist() == [[1.0], [1.0]]
        """
        return self.numpy().tolist()

    def _scalar_value(self, op):
        """The value of a 0-d tensor, for the Python conversions (the standard allows them
        on 0-d arrays only: ``float(x)`` of a shape-(1,) tensor is an error, not a guess)."""
        if self.ndim != 0:
            raise TypeError(f"{op}: only a 0-d tensor converts to a Python scalar, this one has shape "
                            f"{self.shape}; use x.item() or index it first")
        return self.numpy().item()

    def __float__(self):
        if self.dtype.is_complex:
            raise TypeError(f"float: cannot convert a {self.dtype} tensor to float; use complex(x) or x.real")
        return float(self._scalar_value("float"))

    def __complex__(self):
        return complex(self._scalar_value("complex"))

    def __int__(self):
        if self.dtype.is_complex:
            raise TypeError(f"int: cannot convert a {self.dtype} tensor to int")
        return int(self._scalar_value("int"))

    def __index__(self):
        if not self.dtype.is_integer:
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        return int(self._scalar_value("index"))

    def __bool__(self):
        if self.ndim != 0:
            if self.size != 1:
                raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous; "
                                 f"use .any() or .all()")
            raise TypeError(f"bool: only a 0-d tensor has a truth value, this one has shape {self.shape}; "
                            f"use x.item() or index it first")
        return bool(self.numpy().item())

    def __repr__(self):
        try:
            body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        except Exception as e:  # keep repr usable while debugging a broken backend
            body = f"<unavailable: {type(e).__name__}: {e}>"
        grad = ", requires_grad" if self.requires_grad else ""
        return f"tensor({body}, dtype={self.dtype}, device={self.device}{grad})"

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        # the Array API's copy rules, one meaning on every backend (burn.dlpack)
        return _dlpack.export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        h = self._h
        backend = h.graph.backend
        if not backend.dlpack_shares:
            return (1, 0)       # kDLCPU: the export is a host copy (burn.dlpack)
        return backend.to_dlpack_source(h.value(), h.graph.index).__dlpack_device__()

    def __array_namespace__(self, *, api_version=None):
        # the namespace is the package this module belongs to: always imported before it
        return sys.modules[__package__]

    # -- autodiff -----------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """True for a leaf marked with ``require_grad()`` or a result computed from one.

        Example:
            >>> import burn
            >>> w = burn.ones((2,), device=burn.Device.flex().autodiff()).require_grad()
            >>> assert w.requires_grad and (w * 2).requires_grad
            >>> assert not burn.ones((2,)).requires_grad
        """
        return self._leaf or self._grad is not None

    @property
    def is_leaf(self) -> bool:
        """True unless this tensor is the recorded result of an op on tensors that need grad.

        Example:
            >>> import burn
            >>> w = burn.ones((2,), device=burn.Device.flex().autodiff()).require_grad()
            >>> assert w.is_leaf and not (w * 2).is_leaf
        """
        return self._grad is None

    def require_grad(self, flag: bool = True) -> "Tensor":
        """Mark this leaf tensor as needing a gradient (autodiff devices only).

        Example:
            >>> import burn
            >>> w = burn.zeros((3,), device=burn.Device.flex().autodiff()).require_grad()
            >>> assert w.requires_grad
        """
        if not self.device.is_autodiff:
            raise AutodiffError(
                f"require_grad: tensor ({describe(self)}) is on a device without autodiff; "
                f"create it on device.autodiff()")
        if self._grad is not None:
            raise AutodiffError(
                f"require_grad: tensor ({describe(self)}) is the result of op '{self._grad[0].prim.name}', "
                f"not a leaf; call .detach().require_grad() to make a new leaf")
        if flag and not self.dtype.is_inexact:
            raise DTypeError(f"require_grad: only floating or complex tensors have gradients, got {self.dtype}")
        self._leaf = bool(flag)
        return self

    def detach(self) -> "Tensor":
        """The same values with no gradient history (shares the lazy value).

        Use it to stop gradients flowing through a value (targets, running stats).

        Example:
            >>> import burn
            >>> w = burn.ones((2,), device=burn.Device.flex().autodiff()).require_grad()
            >>> d = (w * 2).detach()
            >>> assert not d.requires_grad and d.tolist() == [2.0, 2.0]
        """
        return Tensor._wrap(self._h, self.device)

    def grad(self, grads) -> "Tensor | None":
        """This tensor's gradient in ``grads`` (from ``backward()``), or None.

        Args:
            grads: the :class:`burn.Gradients` returned by ``backward()``.

        Example:
            >>> import burn
            >>> w = burn.tensor([1.0, 2.0], device=burn.Device.flex().autodiff()).require_grad()
            >>> grads = (w * w).sum().backward()
            >>> assert w.grad(grads).tolist() == [2.0, 4.0]
        """
        return grads.get(self)

    # -- in-place style updates ---------------------------------------------------
    def _stamp(self):
        # graphs that saved this tensor by reference see it changed (tape._clock)
        clock = _clock
        clock[0] += 1
        self._mutated = clock[0]
        if _TRACE[0] is not None:       # a trace learns which state the function updates
            _TRACE[0].on_mutate(self)
