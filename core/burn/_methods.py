"""Tensor methods and operators, bound to the functions of burn.ops.

Kept apart from tensor.py so that the Tensor class stays small and every
method is visibly the same function users can call as ``burn.<name>``; the
methods built on ops or on the reverse pass (``to_device``, ``assign_``,
``backward``) are defined here too, because :mod:`burn.tensor` sits below
those layers.
"""
from __future__ import annotations

import functools
import inspect
import os

from . import autodiff, views
from .device import Device
from .dtypes import DType, as_dtype
from .ops import creation as C, elementwise as E, reduction as R, movement as M, linear as L, arrayapi as X, utility as U
from .tensor import Tensor

_UNARY = ["abs", "sign", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "square",
          "sin", "cos", "tan", "tanh", "sigmoid", "relu", "gelu", "silu", "erf", "floor", "ceil", "round",
          "trunc", "reciprocal", "isnan", "isinf", "isfinite", "logical_not", "conj", "asin", "acos",
          "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "softplus"]
_BINARY = ["maximum", "minimum", "logical_and", "logical_or", "logical_xor", "pow", "remainder",
           "atan2", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
_REDUCE = ["sum", "prod", "max", "min", "argmax", "argmin", "any", "all", "mean", "var", "std",
           "logsumexp", "cumsum", "cumprod", "count_nonzero"]


def to_device(self, device, /, *, stream=None):
    """A copy of this tensor on ``device`` (autodiff flag taken from ``device``).

    ``stream`` (Array API) must be None: burn orders work per device itself.

    Example:
        >>> import burn
        >>> x = burn.ones((2,))
        >>> assert x.to_device(burn.Device.flex().autodiff()).device.is_autodiff
        >>> assert x.to_device("flex", stream=None).device == burn.Device.flex()
    """
    if stream is not None:
        raise ValueError(f"to_device: burn has no user streams (it orders each device's work itself); "
                         f"pass stream=None, got {stream!r}")
    device = Device(device) if not isinstance(device, Device) else device
    if device == self.device:
        return self
    return C._transfer(self, device)


def backward(self, grad=None, *, create_graph=False):
    """Gradients of this (scalar) tensor w.r.t. every leaf that requires grad.

    Args:
        grad: the seed gradient; defaults to ones (required for non-scalars).
        create_graph: record the backward pass too, so the gradients can be
            differentiated again (second derivatives, gradient penalties).

    Returns a :class:`burn.Gradients`; read it with ``leaf.grad(grads)``.

    Example:
        >>> import burn
        >>> x = burn.tensor([3.0], device=burn.Device.flex().autodiff()).require_grad()
        >>> grads = (x * x).sum().backward()
        >>> assert x.grad(grads).tolist() == [6.0]
        >>> dx = x.grad((x * x * x).sum().backward(create_graph=True))     # 3 x^2 = 27
        >>> assert x.grad(dx.sum().backward()).tolist() == [18.0]          # 6 x
    """
    return autodiff.backward(self, grad, create_graph=create_graph)


def assign_(self, value) -> "Tensor":
    """Replace this tensor's value (same shape and dtype), e.g. in an optimizer.

    Pending work that read the old value keeps seeing it: handles are
    immutable, this only rebinds the tensor to a new one. On a view (a slice,
    reshape or transpose of another tensor) the new value is written into
    its base, and every view of the base sees it (numpy's meaning).

    Args:
        value: a tensor or Python scalar, broadcast and cast to this tensor's
            shape and dtype.

    Example:
        >>> import burn
        >>> x = burn.zeros((2,))
        >>> y = x + 1                 # recorded before the update
        >>> _ = x.assign_(5.0)
        >>> assert x.tolist() == [5.0, 5.0] and y.tolist() == [1.0, 1.0]
    """
    h = self._h
    if isinstance(value, Tensor):
        vh = value._h
        if vh.shape == h.shape and vh.dtype is h.dtype:     # an optimizer's update: nothing to convert
            if getattr(self, "_views", None) or getattr(self, "_vbase", None):
                views.rebind(self, value)
                return self
            self._stamp()
            self._h = vh
            if not self._leaf:
                self._grad = value._grad
            return self
    v = C.as_tensor_like(value, self)
    if tuple(v.shape) != tuple(self.shape):
        v = M._broadcast(v, self.shape)
    if v.dtype is not self.dtype:
        v = v.astype(self.dtype)
    # an in-place op on a computed tensor (``y += b``) keeps the new value's gradient
    # record; leaves (parameters) stay leaves; views write through to their base
    views.rebind(self, v)
    return self


def _bind():
    Tensor.to_device = to_device
    Tensor.backward = backward
    Tensor.assign_ = assign_
    for n in _UNARY:
        setattr(Tensor, n, getattr(E, n))
    for n in _BINARY:
        setattr(Tensor, n, getattr(E, n))
    for n in _REDUCE:
        setattr(Tensor, n, getattr(R, n))
    Tensor.neg = E.neg
    Tensor.clip = E.clip
    Tensor.clamp = E.clip
    Tensor.astype = lambda self, dtype, copy=True, device=None: E.astype(self, dtype, copy=copy, device=device)
    Tensor.astype.__doc__ = """This tensor converted to ``dtype`` (``burn.astype`` as a method).

        Example:
            >>> import burn
            >>> assert burn.tensor([1.7, -2.2]).astype(burn.int32).tolist() == [1, -2]
        """
    def _part(fn):
        def part(self):
            out = fn(self)
            # numpy's x.real / x.imag of a complex x are views: writes through them reach x
            return views.mark(out, self, fn.prim, {}) if self.dtype.is_complex else out
        part.__name__ = fn.__name__
        part.__doc__ = (f"The {fn.__name__} part; of a complex tensor a view (as numpy's): an in-place update "
                        f"of it writes that part of the tensor.\n\n    Example:\n        >>> import burn\n"
                        f"        >>> z = burn.tensor([1 + 2j])\n        >>> p = z.{fn.__name__}\n"
                        f"        >>> p += 10\n        >>> assert z.{fn.__name__}.tolist() == [p.tolist()[0]]\n")
        return property(part)
    Tensor.real = _part(E.real)
    Tensor.imag = _part(E.imag)
    Tensor.angle = E.angle

    def reshape(self, *shape, copy=None):
        """The same values in a new shape, given as ints or one tuple (one entry may be -1).

        Example:
            >>> import burn
            >>> x = burn.arange(6)
            >>> assert x.reshape(2, 3).shape == x.reshape((-1, 3)).shape == (2, 3)
        """
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return M.reshape(self, shape, copy=copy)
    Tensor.reshape = reshape
    Tensor.view = reshape

    def permute(self, *axes):
        """Reorder the axes (``burn.permute_dims``), given as ints or one tuple.

        Example:
            >>> import burn
            >>> assert burn.zeros((2, 3, 4)).permute(2, 0, 1).shape == (4, 2, 3)
        """
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return M.permute_dims(self, axes)
    Tensor.permute = permute
    Tensor.permute_dims = permute

    def transpose(self, *axes):
        """Reverse the axes, or reorder them as given (ints or one tuple).

        Example:
            >>> import burn
            >>> x = burn.zeros((2, 3, 4))
            >>> assert x.transpose().shape == (4, 3, 2) and x.transpose(1, 0, 2).shape == (3, 2, 4)
        """
        if not axes:
            return M.transpose(self)
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return M.transpose(self, axes)
    Tensor.transpose = transpose
    Tensor.T = property(lambda self: M.transpose(self), doc="""All axes reversed (a matrix's transpose).

        Example:
            >>> import burn
            >>> assert burn.tensor([[1, 2, 3]]).T.tolist() == [[1], [2], [3]]
        """)
    Tensor.mT = property(M.matrix_transpose)
    Tensor.broadcast_to = M.broadcast_to
    Tensor.expand = lambda self, *shape: M.broadcast_to(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
    Tensor.expand.__doc__ = """``broadcast_to`` with the shape given as ints or one tuple.

        Example:
            >>> import burn
            >>> assert burn.tensor([1, 2]).expand(3, 2).tolist() == [[1, 2]] * 3
        """
    Tensor.squeeze = M.squeeze
    Tensor.expand_dims = M.expand_dims
    Tensor.unsqueeze = M.expand_dims
    Tensor.flatten = M.flatten
    Tensor.flip = M.flip
    Tensor.pad = M.pad
    Tensor.take = M.take
    Tensor.take_along_axis = M.take_along_axis
    Tensor.gather = M.gather
    Tensor.scatter_add = M.scatter_add
    Tensor.split = M.split
    Tensor.swapaxes = M.swapaxes
    Tensor.moveaxis = M.moveaxis
    Tensor.roll = M.roll
    Tensor.tile = M.tile
    Tensor.repeat = M.repeat
    Tensor.matmul = L.matmul
    Tensor.__getitem__ = M.getitem

    def setitem(self, key, value):
        """Functional update: the tensor is rebound (through its base when it is a view),
        pending readers keep the old value."""
        self.assign_(M.index_put(self, key, value))
    Tensor.__setitem__ = setitem

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]
    Tensor.__iter__ = __iter__


def _bind_operators():
    # the functions themselves where the operand order matches: no extra frame
    Tensor.__add__ = E.add
    Tensor.__radd__ = lambda a, b: E.add(b, a)
    Tensor.__sub__ = E.subtract
    Tensor.__rsub__ = lambda a, b: E.subtract(b, a)
    Tensor.__mul__ = E.multiply
    Tensor.__rmul__ = lambda a, b: E.multiply(b, a)
    Tensor.__truediv__ = E.divide
    Tensor.__rtruediv__ = lambda a, b: E.divide(b, a)
    Tensor.__floordiv__ = lambda a, b: E.floor_divide(a, b)
    Tensor.__rfloordiv__ = lambda a, b: E.floor_divide(b, a)
    Tensor.__mod__ = lambda a, b: E.remainder(a, b)
    Tensor.__rmod__ = lambda a, b: E.remainder(b, a)
    Tensor.__pow__ = lambda a, b: E.pow(a, b)
    Tensor.__rpow__ = lambda a, b: E.pow(b, a)
    Tensor.__matmul__ = L.matmul
    Tensor.__rmatmul__ = lambda a, b: L.matmul(b, a)
    Tensor.__neg__ = E.neg
    Tensor.__pos__ = lambda a: a
    Tensor.__abs__ = E.abs
    Tensor.__invert__ = lambda a: E.logical_not(a) if a.dtype.is_bool else E.bitwise_invert(a)
    Tensor.__and__ = lambda a, b: E.logical_and(a, b) if a.dtype.is_bool else E.bitwise_and(a, b)
    Tensor.__or__ = lambda a, b: E.logical_or(a, b) if a.dtype.is_bool else E.bitwise_or(a, b)
    Tensor.__xor__ = lambda a, b: E.logical_xor(a, b) if a.dtype.is_bool else E.bitwise_xor(a, b)
    Tensor.__lshift__ = X.bitwise_left_shift
    Tensor.__rshift__ = X.bitwise_right_shift
    Tensor.__rlshift__ = lambda a, b: X.bitwise_left_shift(b, a)
    Tensor.__rrshift__ = lambda a, b: X.bitwise_right_shift(b, a)
    Tensor.__rand__ = lambda a, b: Tensor.__and__(a, b)
    Tensor.__ror__ = lambda a, b: Tensor.__or__(a, b)
    Tensor.__rxor__ = lambda a, b: Tensor.__xor__(a, b)
    Tensor.__eq__ = E.equal
    Tensor.__ne__ = E.not_equal
    Tensor.__lt__ = E.less
    Tensor.__le__ = E.less_equal
    Tensor.__gt__ = E.greater
    Tensor.__ge__ = E.greater_equal
    Tensor.__hash__ = object.__hash__


def _bind_inplace():
    def _iadd(a, b):
        return a.assign_(E.add(a, b))
    Tensor.__iadd__ = _iadd
    Tensor.__isub__ = lambda a, b: a.assign_(E.subtract(a, b))
    Tensor.__imul__ = lambda a, b: a.assign_(E.multiply(a, b))
    Tensor.__itruediv__ = lambda a, b: a.assign_(E.divide(a, b))
    # every in-place operator writes in place: without one Python would rebind the
    # name to a new tensor, and a view's base would silently keep its old value
    for name in ("floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift", "rshift"):
        binary = getattr(Tensor, f"__{name}__")
        setattr(Tensor, f"__i{name}__", lambda a, b, op=binary: a.assign_(op(a, b)))


# -- PyTorch habits: aliases that do not conflict with the numpy / Array API meaning ----------------
# (listed once in docs/architecture.md; the numpy names stay the API)

def to(self, *args, dtype=None, device=None, copy=False):
    """``torch.Tensor.to``: ``x.to(device)``, ``x.to(dtype)``, ``x.to(device, dtype)`` or keywords.

    A string that names a dtype (``"float64"``) is a dtype, any other a device (``"wgpu:0"``).
    Returns this tensor itself when nothing changes (unless ``copy=True``), as torch does.

    Example:
        >>> import burn
        >>> x = burn.ones((2,))
        >>> assert x.to(burn.float64).dtype == burn.float64 and x.to("flex") is x
        >>> assert x.to(burn.Device.flex(), burn.int32).tolist() == [1, 1]
    """
    for a in args:
        is_dtype = isinstance(a, DType) or (isinstance(a, str) and _is_dtype_name(a))
        if is_dtype:
            if dtype is not None:
                raise TypeError(f"Tensor.to: two dtypes given ({dtype!r} and {a!r})")
            dtype = a
        elif device is None:
            device = a
        else:
            raise TypeError(f"Tensor.to: expected a device and/or a dtype, got {args!r}")
    out = self if device is None else to_device(self, device)
    if dtype is not None and as_dtype(dtype) is not out.dtype:
        out = E.astype(out, as_dtype(dtype))
    elif copy and out is self:
        out = E.astype(self, self.dtype, copy=True)
    return out


def _is_dtype_name(name: str) -> bool:
    try:
        as_dtype(name)
        return True
    except Exception:  # not a dtype: a device string
        return False


def _cast_method(dtype_name: str):
    def cast(self):
        return E.astype(self, as_dtype(dtype_name))
    cast.__name__ = {"float32": "float", "float64": "double", "float16": "half", "int64": "long",
                     "int32": "int", "bool": "bool", "bfloat16": "bfloat16"}[dtype_name]
    cast.__doc__ = f"""``x.astype(burn.{dtype_name})`` (PyTorch's ``.{cast.__name__}()``).

        Example:
            >>> import burn
            >>> assert burn.tensor([1, 0]).{cast.__name__}().dtype == burn.{"bool_" if dtype_name == "bool" else dtype_name}
        """
    return cast


def cpu(self):
    """This tensor on the CPU device, flex (PyTorch's ``.cpu()``; the autodiff flag is kept).

    Example:
        >>> import burn
        >>> x = burn.ones((2,), device=burn.Device.flex().autodiff())
        >>> assert x.cpu().device == burn.Device.flex().autodiff()
    """
    return to_device(self, Device("flex", autodiff=self.device.is_autodiff))


def numel(self) -> int:
    """The number of elements (PyTorch's ``numel()``; numpy's ``size``).

    Example:
        >>> import burn
        >>> assert burn.zeros((2, 3)).numel() == 6
    """
    return self.size


def dim(self) -> int:
    """The number of axes (PyTorch's ``dim()``; numpy's ``ndim``).

    Example:
        >>> import burn
        >>> assert burn.zeros((2, 3)).dim() == 2
    """
    return self.ndim


def format_tensor(self, spec: str) -> str:
    """``format(t, spec)`` / ``f"{t:.2f}"``: a 0-d tensor formats as its Python scalar; other
    tensors take only the empty spec (their ``str``), as PyTorch does.

    Example:
        >>> import burn
        >>> assert f"{burn.tensor(3.14159):.2f}" == "3.14"
    """
    if self.ndim == 0:
        return format(self.item(), spec)
    if spec:
        raise TypeError(f"unsupported format string {spec!r} for a tensor of shape {tuple(self.shape)}: "
                        f"only 0-d tensors take a format spec (format t.item(), or t.tolist())")
    return str(self)


def _bind_torch_habits():
    Tensor.to = to
    Tensor.cpu = cpu
    Tensor.numel = numel
    Tensor.dim = dim
    Tensor.clone = U.clone
    Tensor.__format__ = format_tensor
    for name in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "bool"):
        fn = _cast_method(name)
        setattr(Tensor, fn.__name__, fn)


# -- dim= (PyTorch's name for axis=) and numpy's positional method arguments -------------------------

def _merge_dim(name: str, kw: dict, axis: str = "axis", dim: str = "dim") -> None:
    value = kw.pop(dim)
    if axis in kw:
        raise TypeError(f"{name}: got both {axis}={kw[axis]!r} and {dim}={value!r}; {dim} is PyTorch's name "
                        f"for {axis}: give one")
    kw[axis] = value


def _named(wrapper, name: str):
    """``wrapper`` whose frames carry ``name``: errors that name the burn function the user called
    read it from the outermost burn frame (``burn.errors.record_site``)."""
    wrapper.__code__ = wrapper.__code__.replace(co_name=name)
    return wrapper


def _params(fn) -> tuple:
    code = fn.__code__
    return code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


# parameters named axis-like in burn, and the PyTorch keyword accepted for each
_DIM_NAMES = (("axis", "dim"), ("start_axis", "start_dim"), ("end_axis", "end_dim"))


_NO = object()      # "not given" for dim=, whose None means "every axis" as axis=None does


def _pick(name: str, axis_name: str, axis, default, dim_name: str, dim):
    if axis is not default and axis is not None:
        raise TypeError(f"{name}: got both {axis_name}={axis!r} and {dim_name}={dim!r}; {dim_name} is "
                        f"PyTorch's name for {axis_name}: give one")
    return dim


def accepts_dim(fn):
    """``fn`` that also takes PyTorch's ``dim=`` for its ``axis=`` (``start_dim`` / ``end_dim`` for
    ``start_axis`` / ``end_axis``); giving both names is a TypeError. ``fn`` itself when it has no axis.

    The wrapper has ``fn``'s own signature plus the keyword-only aliases (generated once, at
    import), so a call costs one plain Python call more, not an ``*args, **kw`` repacking.

    Example:
        >>> import burn
        >>> from burn._methods import accepts_dim
        >>> mean = accepts_dim(burn.ops.reduction.mean)
        >>> assert mean(burn.tensor([[1.0, 3.0]]), dim=1).tolist() == [2.0]
    """
    names = [(a, d) for a, d in _DIM_NAMES if a in _params(fn)]
    if not names:
        return fn
    sig = inspect.signature(fn)
    env = {"_fn": fn, "_pick": _pick, "_NO": _NO}
    params, call, slash, star = [], [], False, False
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL or p.kind is p.VAR_KEYWORD:
            return _repacking(fn, names)
        if p.kind is p.KEYWORD_ONLY and not star:
            if slash:
                params.append("/")
                slash = False
            params.append("*")
            star = True
        if p.kind is not p.POSITIONAL_ONLY and slash:
            params.append("/")
            slash = False
        default = ""
        if p.default is not p.empty:
            env[f"_d_{p.name}"] = p.default
            default = f"=_d_{p.name}"
        params.append(p.name + default)
        slash = slash or p.kind is p.POSITIONAL_ONLY
        call.append(p.name if p.kind is not p.KEYWORD_ONLY else f"{p.name}={p.name}")
    if slash:
        params.append("/")
    if not star:
        params.append("*")
    params += [f"{d}=_NO" for _, d in names]
    picks = "".join(f"    if {d} is not _NO: {a} = _pick({fn.__name__!r}, {a!r}, {a}, _d_{a}, {d!r}, {d})\n"
                    for a, d in names if f"_d_{a}" in env)
    src = f"def {fn.__name__}({', '.join(params)}):\n{picks}    return _fn({', '.join(call)})\n"
    _define(src, env)
    return functools.wraps(fn)(env[fn.__name__])


def _define(src: str, env: dict) -> None:
    # the file name sits in burn's directory: burn.errors.record_site skips the frame as burn's own
    exec(compile(src, os.path.join(os.path.dirname(__file__), "<generated wrapper>"), "exec"), env)  # noqa: S102


def _repacking(fn, names):
    label = fn.__name__

    @functools.wraps(fn)
    def f(*args, **kw):
        for a, d in names:
            if d in kw:
                _merge_dim(label, kw, a, d)
        return fn(*args, **kw)
    return _named(f, label)


def alias_dims(namespace: dict) -> None:
    """Give every burn function in ``namespace`` that takes an axis the ``dim=`` alias (in place).

    Example:
        >>> import burn
        >>> assert burn.sum(burn.ones((2, 3)), dim=0).tolist() == [2.0, 2.0, 2.0]
    """
    for name, fn in list(namespace.items()):
        if (type(fn) is type(alias_dims) and not name.startswith("_")
                and getattr(fn, "__module__", "").startswith("burn.")):
            namespace[name] = accepts_dim(fn)


# numpy's positional parameters of its ndarray methods (``x.sum(0)``, ``x.var(1, None, None, 1)``):
# numpy's functions call these methods with keywords (``np.sum(t)`` is ``t.sum(axis=None, out=None)``)
_NUMPY_METHOD_ARGS = {
    **dict.fromkeys(("sum", "prod"), ("axis", "dtype", "out", "keepdims")),
    **dict.fromkeys(("max", "min", "any", "all"), ("axis", "out", "keepdims")),
    **dict.fromkeys(("argmax", "argmin"), ("axis", "out")),
    "mean": ("axis", "dtype", "out", "keepdims"),
    **dict.fromkeys(("var", "std"), ("axis", "dtype", "out", "ddof", "keepdims")),
    **dict.fromkeys(("cumsum", "cumprod"), ("axis", "dtype", "out")),
    **dict.fromkeys(("logsumexp", "count_nonzero"), ("axis",)),     # not numpy methods: the axis only
    "take": ("indices", "axis", "out"),
    "repeat": ("repeats", "axis"),
}


def _no_out(name):
    raise TypeError(f"Tensor.{name}: out= is not supported (burn tensors are immutable values); "
                    f"use the result, y = x.{name}(...)")


def _numpy_method(fn, positional: tuple):
    """Tensor method ``fn`` taking numpy's positional arguments, ``dim=``, and the keywords numpy's
    functions pass (``out=None``; ``ddof=`` as ``correction=``; ``dtype=`` as a cast first where
    burn's function has none), so ``np.sum(t)`` and ``x.mean(1)`` mean what they mean in numpy.
    Generated with explicit parameters (no ``*args, **kw`` repacking on the hot path)."""
    name = fn.__name__
    sig = inspect.signature(fn)
    ps = list(sig.parameters.values())
    lead = [p.name for p in ps[1:] if p.kind is p.POSITIONAL_ONLY and p.default is p.empty]
    own = {p.name: p for p in ps[1:] if p.name not in lead}
    env = {"_fn": fn, "_pick": _pick, "_NO": _NO, "_no_out": _no_out, "_cast": E.astype, "_as_dtype": as_dtype}
    head, body, call = [], [], [f"{q}" for q in lead]

    def default(n, fallback="None"):
        if n in own and own[n].default is not own[n].empty:
            env[f"_d_{n}"] = own[n].default
            return f"_d_{n}"
        return fallback
    for n in positional:
        if n in lead:
            continue
        head.append(f"{n}={default(n)}" if n != "keepdims" else f"keepdims={default(n, 'False')}")
    rest = [n for n in own if n not in positional]
    tail = [f"{n}={default(n)}" for n in rest] + ["dim=_NO"]
    if "axis" in own:
        body.append(f"    if dim is not _NO: axis = _pick('Tensor.{name}', 'axis', axis, {default('axis')}, 'dim', dim)")
    if "out" in positional:
        body.append(f"    if out is not None: _no_out({name!r})")
    if "dtype" in positional and "dtype" not in own:
        body.append("    if dtype is not None: self = _cast(self, _as_dtype(dtype))")
    if "ddof" in positional:
        body.append(f"    if ddof is not None: correction = _pick('Tensor.{name}', 'correction', correction, "
                    f"{default('correction')}, 'ddof', ddof)")
    call += [f"{n}={n}" for n in own]
    src = (f"def {name}(self, {', '.join(lead + head)}, *, {', '.join(tail)}):\n" + "\n".join(body)
           + f"\n    return _fn(self, {', '.join(call)})\n").replace("(self, , ", "(self, ")
    _define(src, env)
    return functools.update_wrapper(env[name], fn)     # the docstring and ``prim`` (ops reach primitives so)


def _bind_dims():
    for name, positional in _NUMPY_METHOD_ARGS.items():
        setattr(Tensor, name, _numpy_method(getattr(Tensor, name), positional))
    for name, fn in list(vars(Tensor).items()):
        if type(fn) is type(_bind_dims) and name not in _NUMPY_METHOD_ARGS and not name.startswith("__"):
            setattr(Tensor, name, accepts_dim(fn))


_bind()
_bind_operators()
_bind_inplace()
_bind_torch_habits()
_bind_dims()

# doctest does not look inside _bind(); name the methods defined there so their examples run
__test__ = {n: getattr(Tensor, n) for n in ("astype", "reshape", "permute", "transpose", "expand")}
