"""``burn.backend_extension``: new ops with a kernel per backend, usable anywhere.

An extension op is declared by its reference definition (burn ops; used
where no kernel is registered for the device's backend, and for autodiff
unless a ``.backward`` rule is given), a ``.meta`` rule (output shapes and
dtypes, run eagerly at the call), and any number of ``.kernel(backend)``
implementations, which receive native arrays exactly as given and
non-tensor arguments unchanged.

In the lazy graph an extension is an opaque fusion boundary unless it is
declared ``elementwise=True``, in which case a backend may fuse it with its
neighbours (flex calls its kernel on chunks of the fused loop).
"""
from __future__ import annotations

import importlib
import importlib.util
from math import copysign as _copysign
from typing import Callable

from . import plugins as _plugins
from .autodiff import _backward, enable_grad, is_grad_enabled
from .dispatch import LazyKernel, registry
from .errors import BackendUnavailable, BurnError, ShapeError
from .ops import autocast as _autocast
from .ops.elementwise import conj, real
from .tape import _autocast_on
from .primitives import ELEMENTWISE, OPAQUE, TensorMeta
from .tensor import Tensor, apply

__all__ = ["backend_extension", "kernels_only", "Extension", "ExtensionContext", "register_kernel_modules",
           "lazy_exports"]


def _fill(template, natives):
    """Rebuild positional arguments: ``None`` slots of template take natives in order."""
    it = iter(natives)
    return [next(it) if slot is _TENSOR else slot for slot in template]


class _TensorSlot:
    __slots__ = ()

    def __repr__(self):
        return "<tensor>"


_TENSOR = _TensorSlot()
_ARG = _TensorSlot()     # marks a non-tensor argument in a call signature (never a user value)
_CALL_CACHE_SIZE = 512   # signatures kept per extension; a workload with ever-new shapes just refills


class ExtensionContext:
    """What an extension's ``.backward`` rule receives: ``inputs`` (the tensor
    arguments), ``outputs``, ``saved``, and the call as made, ``args`` (tensors
    in place) and ``kwargs``, so non-tensor arguments need no unpacking.

    Example:
        >>> import burn
        >>> @burn.backend_extension("doc::ctx_scale")
        ... def scale(x, factor=2.0):
        ...     return x * factor
        >>> @scale.meta
        ... def _(x, factor=2.0):
        ...     return burn.TensorMeta(x.shape, x.dtype)
        >>> @scale.kernel("flex")
        ... def _(x, factor=2.0):
        ...     return x * factor
        >>> @scale.backward
        ... def _(ctx, g):
        ...     assert ctx.args[0] is ctx.inputs[0] and ctx.kwargs == {"factor": 3.0}
        ...     return (g * ctx.kwargs["factor"],)
        >>> w = burn.tensor([1.0], device=burn.Device.flex().autodiff()).require_grad()
        >>> assert w.grad(scale(w, factor=3.0).sum().backward()).tolist() == [3.0]
    """

    __slots__ = ("inputs", "saved", "attrs", "args", "kwargs", "_ctx")

    def __init__(self, ctx):
        self._ctx = ctx
        self.inputs = ctx.inputs
        self.saved = ctx.saved
        self.attrs = ctx.attrs
        self.args = tuple(_fill(ctx.attrs["template"], ctx.inputs))
        self.kwargs = dict(ctx.attrs["kwargs"])

    @property
    def outputs(self):
        """The op's results, as a tuple of tensors (for rules that reuse them).

        Example:
            >>> import burn, numpy as np
            >>> @burn.backend_extension("doc::ctx_exp")
            ... def exp2(x):
            ...     return x.exp()
            >>> @exp2.meta
            ... def _(x):
            ...     return burn.TensorMeta(x.shape, x.dtype)
            >>> @exp2.kernel("flex")
            ... def _(x):
            ...     return np.exp(x)
            >>> @exp2.backward
            ... def _(ctx, g):
            ...     (y,) = ctx.outputs            # d/dx exp(x) = exp(x)
            ...     return (g * y,)
            >>> w = burn.tensor([0.0], device=burn.Device.flex().autodiff()).require_grad()
            >>> assert w.grad(exp2(w).sum().backward()).tolist() == [1.0]
        """
        return self._ctx.outputs

    @property
    def out(self):
        """The first (usually only) result: ``outputs[0]``.

        Example:
            >>> import burn, numpy as np
            >>> @burn.backend_extension("doc::ctx_sigmoid")
            ... def sig(x):
            ...     return x.sigmoid()
            >>> @sig.meta
            ... def _(x):
            ...     return burn.TensorMeta(x.shape, x.dtype)
            >>> @sig.kernel("flex")
            ... def _(x):
            ...     return 1 / (1 + np.exp(-x))
            >>> @sig.backward
            ... def _(ctx, g):
            ...     return (g * ctx.out * (1 - ctx.out),)
            >>> w = burn.tensor([0.0], device=burn.Device.flex().autodiff()).require_grad()
            >>> assert w.grad(sig(w).sum().backward()).tolist() == [0.25]
        """
        return self._ctx.outputs[0]


class Extension:
    """An op declared with :func:`backend_extension` (see there).

    Call it like its reference function; declare its rules with the
    decorators ``.meta``, ``.kernel(backend)``, ``.backward`` and ``.template``.

    Example:
        >>> import burn
        >>> @burn.backend_extension("doc::ext_neg")
        ... def neg(x):
        ...     return -x
        >>> assert isinstance(neg, burn.library.Extension) and neg.name == "doc::ext_neg"
        >>> assert neg(burn.ones((2,))).tolist() == [-1.0, -1.0]   # no kernel yet: the reference runs
    """

    is_extension = True

    def __init__(self, name: str, reference: Callable, *, elementwise: bool = False, n_out: int = 1,
                 autocast: str | None = None, plan_attrs: bool = False):
        if "::" not in name:
            raise BurnError(f"backend_extension: op name {name!r} must be 'namespace::name'")
        if autocast not in (None, "lower", "float32"):
            raise BurnError(f"backend_extension: autocast must be None, 'lower' or 'float32', got {autocast!r}")
        self.name = name
        # burn.autocast's list this op is on: its floating tensor arguments are cast down ("lower")
        # or half ones up ("float32") inside an autocast region, as burn's own ops of that list
        self.autocast = {"lower": _autocast.lower, "float32": _autocast.to_float32}.get(autocast)
        self.reference = reference
        self.kind = ELEMENTWISE if elementwise else OPAQUE
        # its non-tensor arguments are part of the fusion plan's key (backend_extension's plan_attrs)
        self.plan_attrs = bool(plan_attrs)
        self.n_out = n_out
        self.differentiable = True
        self._meta = None
        self._backward = None
        self._calls: dict = {}      # call signature -> (device, winner key, kernel, attrs, metas)
        self.templates: dict = {}
        self.plugin = registry.owner(reference)
        self.__doc__ = reference.__doc__
        self.__name__ = getattr(reference, "__name__", name)
        self.__wrapped__ = reference
        registry.register_op(self)

    # -- declaration decorators ----------------------------------------------
    def meta(self, fn: Callable) -> Callable:
        """Declare the output TensorMeta rule (receives TensorMeta per tensor argument).

        The rule runs eagerly at the call, so shape errors surface there. It
        must be a pure function of the shapes, dtypes and other arguments: its
        result is cached per call signature (tensor shapes and dtypes, the
        other arguments' types and values, the device), so a call seen before
        skips it. Non-tensor arguments are passed as given.

        Example:
            >>> import burn
            >>> @burn.backend_extension("doc::meta_rowsum")
            ... def rowsum(x):
            ...     return x.sum(axis=1)
            >>> @rowsum.meta
            ... def _(x):
            ...     return burn.TensorMeta(x.shape[:1], x.dtype)
            >>> @rowsum.kernel("flex")
            ... def _(x):
            ...     return x.sum(axis=1)
            >>> assert rowsum(burn.ones((3, 4))).shape == (3,)
        """
        self._meta = fn
        self._calls.clear()
        return fn

    def kernel(self, backend: str, *, priority: int = 0, host_fallback: bool = False):
        """Register a kernel of this op for ``backend`` (decorator).

        Args:
            backend: the backend name, e.g. ``"flex"``.
            priority: a higher priority wins over other kernels for the same backend.
            host_fallback: the kernel runs on host memory (``burn info`` says so).

        The kernel gets native arrays and the non-tensor arguments.

        Example:
            >>> import burn
            >>> @burn.backend_extension("doc::kernel_twice")
            ... def twice(x):
            ...     return x * 2
            >>> @twice.meta
            ... def _(x):
            ...     return burn.TensorMeta(x.shape, x.dtype)
            >>> @twice.kernel("flex")
            ... def _(x):
            ...     return x + x
            >>> assert twice(burn.ones((2,))).tolist() == [2.0, 2.0] and twice.backend_names() == ["flex"]
        """
        def deco(fn):
            registry.register_kernel(self.name, backend, fn, priority=priority, host_fallback=host_fallback)
            return fn
        return deco

    def backward(self, fn: Callable) -> Callable:
        """Declare ``fn(ctx, *grad_outputs) -> one gradient per tensor input``.

        ``ctx`` is an :class:`ExtensionContext`. Without a backward rule,
        gradients come from differentiating the reference definition.

        Example:
            >>> import burn
            >>> @burn.backend_extension("doc::bw_cube")
            ... def cube(x):
            ...     return x * x * x
            >>> @cube.meta
            ... def _(x):
            ...     return burn.TensorMeta(x.shape, x.dtype)
            >>> @cube.kernel("flex")
            ... def _(x):
            ...     return x ** 3
            >>> @cube.backward
            ... def _(ctx, g):
            ...     (x,) = ctx.inputs
            ...     return (g * 3 * x * x,)
            >>> w = burn.tensor([2.0], device=burn.Device.flex().autodiff()).require_grad()
            >>> assert w.grad(cube(w).sum().backward()).tolist() == [12.0]
        """
        self._backward = fn
        return fn

    def template(self, backend: str):
        """Register a code template used when ``backend`` fuses this element-wise op.

        What a template is depends on the backend's code generator; the op is
        stored under ``templates[backend]`` for it to read.

        Example:
            >>> import burn
            >>> @burn.backend_extension("doc::tpl_sq", elementwise=True)
            ... def sq(x):
            ...     return x * x
            >>> tpl = sq.template("wgpu")("{x} * {x}")
            >>> assert sq.templates["wgpu"] == tpl == "{x} * {x}"
        """
        def deco(obj):
            self.templates[backend] = obj
            return obj
        return deco

    # -- used by the planner and autodiff ----------------------------------------
    def adapt(self, fn: Callable) -> Callable:
        """Wrap a kernel ``fn`` so the executor can call it with native arrays only.

        Used by the planner: the wrapper puts the arrays back among the call's
        non-tensor arguments (``template``) and passes ``kwargs``.

        Example:
            >>> import burn
            >>> from burn.library import _TENSOR
            >>> @burn.backend_extension("doc::adapt_mul")
            ... def mul(x, k=1):
            ...     return x * k
            >>> run = mul.adapt(lambda a, k=1: a * k)
            >>> assert run(3, template=(_TENSOR,), kwargs=(("k", 2),)) == 6
        """
        def run(*natives, template, kwargs):
            return fn(*_fill(template, natives), **dict(kwargs))
        return run

    def backend_names(self) -> list[str]:
        """The backends that have a kernel for this op (others run the reference).

        Example:
            >>> import burn
            >>> @burn.backend_extension("doc::names_id")
            ... def ident(x):
            ...     return x
            >>> assert ident.backend_names() == []
            >>> _ = ident.kernel("flex")(lambda x: x)
            >>> assert ident.backend_names() == ["flex"]
        """
        return sorted(b for (op, b) in registry.kernels if op == self.name)

    def _vjp_reference(self, ctx, *grads):
        """Differentiate through the reference definition (no .backward given).

        In a plain backward pass the reference runs on detached copies of the
        inputs. Under ``backward(create_graph=True)`` (grad recording on) the
        vector-Jacobian product must itself be differentiable: the reference runs
        on a fresh recorded copy of each input (``x + 0``, so an input passed
        twice still gets one partial derivative per argument) and the reverse pass
        stops at those copies, keeping its result connected to the inputs."""
        template, kwargs = ctx.attrs["template"], dict(ctx.attrs["kwargs"])
        connected = is_grad_enabled()
        with enable_grad():
            if connected:
                leaves = [t + 0 if t.requires_grad else t.detach() for t in ctx.inputs]
            else:
                leaves = [t.detach().require_grad() if t.dtype.is_inexact else t.detach() for t in ctx.inputs]
            out = self.reference(*_fill(template, leaves), **kwargs)
            outs = out if isinstance(out, tuple) else (out,)
            total = None
            for o, g in zip(outs, grads):
                if g is None or not o.requires_grad:
                    continue
                if o.dtype.is_complex:
                    # <o, g> = sum(Re(o conj(g))): its gradient for o is g in torch's complex convention
                    term = real(o * conj(g)).sum()
                else:
                    term = (o * g).sum()
                total = term if total is None else total + term
            if total is None:
                return (None,) * len(leaves)
            if connected:
                stops = [t._grad if t.requires_grad else None for t in leaves]
                _, at = _backward(total, None, True, {r for r in stops if r is not None})
                return tuple(None if r is None else at[r] for r in stops)
            gr = total.backward()
        return tuple(gr.get(t) if t.requires_grad else None for t in leaves)

    def _backward_rule(self, ctx, *grads):
        if self._backward is not None:
            return self._backward(ExtensionContext(ctx), *grads)
        return self._vjp_reference(ctx, *grads)

    # -- call ------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not _plugins._loaded:
            _plugins.ensure_loaded()
        if _autocast_on[0] and self.autocast is not None:
            args = self.autocast(*args, op=self.name)
        # The call's signature: per tensor its shape and dtype, per other argument its
        # type and value, and the device. A signature seen before reuses the resolved
        # kernel, the validated metas and the attrs (meta rules are pure functions of
        # it): recording a call costs ~2-4 us instead of ~7-18 us (benchmarks/bench_core.py ext_call).
        tensors = []
        key = []
        for a in args:
            if isinstance(a, Tensor):
                tensors.append(a)
                h = a._h
                key.append(h.shape)
                key.append(h.dtype)
            else:
                key.append(_ARG)
                key.append(type(a))
                key.append(a)
                if type(a) is float and not a:
                    key.append(_copysign(1.0, a))     # -0.0 == 0.0, but a kernel may tell them apart
        if not tensors:
            raise BurnError(f"{self.name}: needs at least one tensor argument")
        if kwargs:
            for k, v in kwargs.items():
                if isinstance(v, Tensor):
                    raise BurnError(f"{self.name}: tensor passed as keyword argument {k!r}; pass tensor "
                                    f"arguments positionally (keywords are for non-tensor arguments)")
            key.append(tuple([(k, type(v), v, _copysign(1.0, v) if type(v) is float else 0)
                              for k, v in sorted(kwargs.items())]))
        dev = tensors[0].device
        key.append(id(dev))      # safe as a key: the entry holds the device, so its id is not reused
        key = tuple(key)
        try:
            e = self._calls.get(key)
        except TypeError:        # an unhashable argument (a list, an array): no caching
            e = key = None
        # the registry drops its winner on every (un)registration: a new kernel is seen
        if e is not None and registry._winner.get(e[1]) is e[2]:
            metas = e[4]
            if len(metas) != self.n_out:      # one op, several output counts (qr's modes)
                self.n_out = len(metas)
            return apply(self, tuple(tensors), e[3], metas)
        return self._call_slow(args, kwargs, tensors, dev, key)

    def _call_slow(self, args, kwargs, tensors, dev, key):
        wkey = (self.name, dev.backend.name)
        fn = registry.kernel(*wkey)
        if self._meta is None:
            # without a meta rule the op cannot be recorded: the reference runs as burn ops
            return self.reference(*args, **kwargs)
        template = tuple(_TENSOR if isinstance(a, Tensor) else a for a in args)
        metas_in = [TensorMeta(t.shape, t.dtype, t.device) for t in tensors]
        # the meta rule runs even where the reference will, so its errors are the same on every backend
        m = self._meta(*_fill(template, metas_in), **kwargs)
        if fn is None:
            # no kernel for this backend: the reference definition runs as burn ops
            return self.reference(*args, **kwargs)
        metas = (m,) if isinstance(m, TensorMeta) else tuple(m) if isinstance(m, (tuple, list)) else (m,)
        for x in metas:
            if not isinstance(x, TensorMeta):
                raise ShapeError(f"{self.name}: .meta must return TensorMeta, got {type(x).__name__}")
        if len(metas) != self.n_out:
            self.n_out = len(metas)
        metas = tuple(TensorMeta(tuple(x.shape), x.dtype) for x in metas)
        attrs = {"template": template, "kwargs": tuple(sorted(kwargs.items()))}
        if key is not None:
            if len(self._calls) >= _CALL_CACHE_SIZE:
                self._calls.clear()
            self._calls[key] = (dev, wkey, fn, attrs, metas)
        return apply(self, tuple(tensors), attrs, metas)

    @property
    def backward_fn(self):
        """The rule autodiff calls: ``.backward``'s, else one through the reference.

        Example:
            >>> import burn
            >>> @burn.backend_extension("doc::bwfn_id")
            ... def ident(x):
            ...     return x
            >>> assert callable(ident.backward_fn)
        """
        return self._backward_rule

    def __repr__(self):
        return f"<backend_extension {self.name}>"


def kernels_only(name: str) -> Callable:
    """The reference definition of an extension op that exists only as kernels (a LAPACK
    routine, a cuFFT call): on a backend without a kernel it raises
    :class:`burn.BackendUnavailable` naming the op, the backend and the backends that have one.

    Example:
        >>> import burn
        >>> from burn.library import kernels_only
        >>> op = burn.backend_extension("doc::kernels_only")(kernels_only("doc::kernels_only"))
        >>> try:
        ...     op(burn.ones((2,)))
        ... except burn.BackendUnavailable as e:
        ...     assert "doc::kernels_only has no kernel for backend 'flex'" in str(e)
    """
    def reference(x, *args, **kwargs):
        have = sorted(b for (op, b) in registry.kernels if op == name)
        raise BackendUnavailable(
            f"{name} has no kernel for backend '{x.device.kind}' and no reference definition in "
            f"burn ops; kernels exist for: {', '.join(have) or 'none'}. "
            f"Move the operands with .to_device(burn.Device.flex())")
    reference.__name__ = name.rpartition("::")[2]
    return reference


def backend_extension(name: str, *, elementwise: bool = False, autocast: str | None = None,
                      plan_attrs: bool = False) -> Callable[[Callable], Extension]:
    """Declare a new op with per-backend kernels; decorate its reference definition.

    ``autocast="lower"`` puts the op on ``burn.autocast``'s lower list (its floating tensor
    arguments are cast to the low dtype inside an autocast region, like matmul's),
    ``autocast="float32"`` on its float32 list (half arguments cast up, like softmax's).
    ``plan_attrs=True`` makes the op's non-tensor arguments part of the fusion plan's cache key,
    so a backend's ``Backend.merge_steps`` may build a step that depends on them (burn's optimizer
    updates: their mode); leave it off for arguments that change from call to call, where each
    new value would plan the flush again.

    Example:
        >>> import burn
        >>> @burn.backend_extension("doc::scaled_add")
        ... def scaled_add(a, b, alpha):
        ...     return a + b * alpha
        >>> @scaled_add.meta
        ... def _(a, b, alpha):
        ...     return burn.TensorMeta(a.shape, a.dtype)
        >>> @scaled_add.kernel("flex")
        ... def _(a, b, alpha):
        ...     return a + b * alpha
        >>> x = burn.ones((2,))
        >>> assert scaled_add(x, x, 2.0).tolist() == [3.0, 3.0]
    """
    def deco(reference):
        return Extension(name, reference, elementwise=elementwise, autocast=autocast, plan_attrs=plan_attrs)
    return deco


def register_kernel_modules(registry, namespace: str, modules: dict, *, ops=None, priority: int = 0) -> list[str]:
    """Register a kernel library's per-backend kernels, for installed backends only.

    ``modules`` maps a backend name to the import path of a module holding a
    ``KERNELS`` dict (op name without namespace -> kernel) and optionally a
    ``HOST_FALLBACK`` set naming the kernels that run on host memory (``burn info``
    lists them). With ``ops`` (the op names, without namespace, that every listed
    module provides) nothing is imported now: each kernel is a
    :class:`burn.dispatch.LazyKernel`, and its module (with scipy, pyopencl... behind it)
    is imported the first time one of its kernels runs; priorities and ties are still
    checked here. Without ``ops`` the modules are imported to read ``KERNELS``. A module
    is never imported for a backend that is not installed. Returns the backends served.
    Call it from the ``burn_register_kernels`` hook.

    Example:
        >>> import sys, types, burn
        >>> mod = types.ModuleType("doc_kernels_flex"); mod.KERNELS = {"twice": lambda x: x * 2}
        >>> sys.modules["doc_kernels_flex"] = mod
        >>> reg = burn.dispatch.Registry(); reg.register_backend("flex", object)
        >>> assert register_kernel_modules(reg, "doc", {"flex": "doc_kernels_flex", "cuda": "absent"}) == ["flex"]
        >>> assert reg.kernel("doc::twice", "flex")(3) == 6
        >>> mod.HOST_FALLBACK = {"twice"}; _ = register_kernel_modules(reg, "doc", {"flex": "doc_kernels_flex"})
        >>> assert reg.kernel_entries("doc::twice", "flex")[0].host_fallback
        >>> _ = register_kernel_modules(reg, "lazydoc", {"flex": "doc_kernels_flex"}, ops=["twice"])
        >>> assert reg.kernel("lazydoc::twice", "flex")(4) == 8
    """
    served = []
    for backend, modname in modules.items():
        if backend not in registry.backends:
            continue
        if ops is not None:
            for name in ops:
                registry.register_kernel(f"{namespace}::{name}", backend, LazyKernel(modname, name),
                                         priority=priority)
        else:
            mod = importlib.import_module(modname)
            host = set(getattr(mod, "HOST_FALLBACK", ()))
            for name, fn in mod.KERNELS.items():
                registry.register_kernel(f"{namespace}::{name}", backend, fn, priority=priority,
                                         host_fallback=name in host)
        served.append(backend)
    return served


def lazy_exports(package: str, exports: dict):
    """A module ``__getattr__`` for a plugin package whose public names live in submodules:
    ``exports`` maps each name to the submodule (relative to ``package``) that defines it, imported
    on the first use of the name. Why: discovery imports a plugin's ``plugin`` module, and with it
    the package's ``__init__``; a package that imports its heavy parts there (onnx, iroh, mpi4py,
    burn.nn) makes every burn user pay for them at the first op.

    Example:
        >>> import json.encoder
        >>> from burn.library import lazy_exports
        >>> getattr_ = lazy_exports("json", {"JSONEncoder": "encoder"})   # as a package's __getattr__
        >>> assert getattr_("JSONEncoder") is json.encoder.JSONEncoder
        >>> assert getattr_("decoder").__name__ == "json.decoder"          # a submodule by its name
        >>> try:
        ...     getattr_("missing")
        ... except AttributeError as e:
        ...     assert "missing" in str(e)
    """
    def __getattr__(name):
        sub = exports.get(name)
        if sub is None:       # a submodule read as an attribute (``burn_dist.collectives``)
            if name.startswith("__") or importlib.util.find_spec(f"{package}.{name}") is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            sub = name
        module = importlib.import_module(f"{package}.{sub}")
        value = module if sub == name else getattr(module, name)   # a submodule of that name: the module
        setattr(importlib.import_module(package), name, value)
        return value

    return __getattr__
