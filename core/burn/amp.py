"""Mixed precision: ``burn.autocast`` and the dynamic loss scaler ``burn.amp.GradScaler``.

Inside ``with burn.autocast(burn.bfloat16):`` (or ``float16``) the ops of the **lower
list** run in the low dtype: their floating inputs (float32, and the other half dtype) are
cast down, so ``x @ w`` of float32 tensors gives a bfloat16 result. The ops of the
**float32 list** cast half inputs up and compute and return float32. Everything else runs
in the dtype of its inputs, with the usual promotion when two differ (a bfloat16 matmul
result plus a float32 tensor is float32). float64 and integer tensors are never cast.

- lower list: ``matmul`` / ``@`` (so ``tensordot``, ``inner``, ``dot``, and the matmuls of
  ``scaled_dot_product_attention`` and ``MultiHeadAttention``), ``nn.functional.linear``
  (``nn.Linear``, its bias included), ``linear_relu``, ``conv1d`` / ``conv2d`` (``nn.Conv1d``,
  ``nn.Conv2d``), extension ops declared with ``backend_extension(..., autocast="lower")``.
- float32 list: ``sum``, ``prod``, ``mean``, ``var``, ``std``, ``logsumexp``, ``cumsum``,
  ``cumprod``; ``softmax``, ``log_softmax``; ``layer_norm``, ``rms_norm``, ``batch_norm``; the
  losses ``cross_entropy``, ``nll_loss``, ``mse_loss``, ``bce_with_logits``; extension ops
  declared with ``autocast="float32"``.

Parameters stay float32: the casts are recorded ops whose backward returns the gradient in
the input's dtype, so every parameter's gradient is float32, and ``loss.backward()`` runs
with autocast off (a backward op runs in the dtype its forward op ran in, as in torch).
The state is per thread; regions nest, and ``enabled=False`` inside one turns it off.
A device that lacks the low dtype (wgpu has no bfloat16) raises ``burn.DTypeError`` at the
first cast. On flex a half-precision kernel computes in float32 and rounds its result once
(a matmul accumulates in float32).

Float16's range is narrow (gradients below 6e-8 flush to zero), so float16 training scales
the loss: ``GradScaler`` multiplies it by a large factor before ``backward()``, divides the
gradients by it before the optimizer step, skips the step when a gradient is inf/NaN and
adapts the factor, with torch.amp.GradScaler's semantics.

Example:
    >>> import burn
    >>> dev = burn.Device.flex().autodiff()
    >>> model = burn.nn.Linear(4, 3, device=dev)
    >>> opt = burn.optim.SGD(model, lr=0.1)
    >>> scaler = burn.amp.GradScaler()
    >>> x, y = burn.ones((2, 4), device=dev), burn.tensor([0, 2], device=dev)
    >>> with burn.autocast(burn.float16):
    ...     logits = model(x)                               # float16
    ...     loss = burn.nn.functional.cross_entropy(logits, y)   # float32
    >>> assert logits.dtype is burn.float16 and loss.dtype is burn.float32
    >>> grads = scaler.scale(loss).backward()
    >>> assert model.weight.grad(grads).dtype is burn.float32
    >>> scaler.step(opt, grads); scaler.update()
    >>> assert scaler.get_scale() == 65536.0 and opt.steps == 1
"""
from __future__ import annotations

import functools
import math

from . import dtypes as dt
from .autodiff import Gradients
from .errors import BurnError, DTypeError
from .ops import elementwise as E, movement as M, reduction as R
from .tape import _autocast_on, _state, no_grad
from .tensor import Tensor

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype"]


class autocast:
    """Run the lower list's ops (matmul, linear, conv) in ``dtype`` and reductions, softmax,
    norms and losses in float32 inside the block (see :mod:`burn.amp` for the lists).

    A context manager and a decorator; per thread; nestable (the innermost region wins, and
    ``enabled=False`` turns autocast off inside). Outside it nothing changes.

    Args:
        dtype: ``burn.bfloat16`` (default, as torch's CPU autocast) or ``burn.float16``.
        enabled: False makes the region a no-op for the ops inside (autocast off).

    Example:
        >>> import burn
        >>> a = burn.ones((2, 3)); b = burn.ones((3, 2))
        >>> with burn.autocast(burn.bfloat16):
        ...     c = a @ b
        ...     s = c.sum()
        ...     with burn.autocast(enabled=False):
        ...         d = a @ b
        >>> assert (c.dtype, s.dtype, d.dtype) == (burn.bfloat16, burn.float32, burn.float32)
        >>> @burn.autocast(burn.float16)
        ... def f(x): return x @ x.T
        >>> assert f(a).dtype is burn.float16 and (a @ b).dtype is burn.float32
    """

    def __init__(self, dtype=dt.bfloat16, enabled: bool = True):
        d = dt.as_dtype(dtype)
        if d is not dt.bfloat16 and d is not dt.float16:
            raise DTypeError(f"autocast: dtype must be burn.bfloat16 or burn.float16, got {d}; autocast lowers "
                             f"matmuls and convolutions to a half-precision dtype")
        self.dtype = d
        self.enabled = bool(enabled)

    def __enter__(self):
        st = _state.__dict__
        st.setdefault("autocast_prev", []).append(st.get("autocast"))
        st["autocast"] = self.dtype if self.enabled else None
        _autocast_on[0] += 1
        return self

    def __exit__(self, *exc):
        st = _state.__dict__
        st["autocast"] = st["autocast_prev"].pop()
        _autocast_on[0] -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.dtype, self.enabled):
                return fn(*args, **kwargs)
        return wrapper

    def __repr__(self):
        return f"autocast(dtype={self.dtype}, enabled={self.enabled})"


def is_autocast_enabled() -> bool:
    """True inside an enabled ``burn.autocast`` region of this thread.

    Example:
        >>> import burn
        >>> with burn.autocast():
        ...     assert burn.amp.is_autocast_enabled()
        >>> assert not burn.amp.is_autocast_enabled()
    """
    return _state.__dict__.get("autocast") is not None


def get_autocast_dtype():
    """The dtype of this thread's innermost enabled autocast region, or None.

    Example:
        >>> import burn
        >>> with burn.autocast(burn.float16):
        ...     assert burn.amp.get_autocast_dtype() is burn.float16
    """
    return _state.__dict__.get("autocast")


_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """Dynamic loss scaling for float16 training, as ``torch.amp.GradScaler``.

    ``scale(loss)`` multiplies the loss by the current scale; ``step(opt, grads)`` divides
    the optimizer's gradients by it (unless ``unscale_`` did already) and runs ``opt.step``
    unless a gradient is inf/NaN; ``update()`` then halves the scale after a skipped step
    (``backoff_factor``) or doubles it after ``growth_interval`` steps in a row without one
    (``growth_factor``). The inf/NaN check is one host read per step: the per-gradient checks
    are reductions on the device, combined there. ``enabled=False`` makes every method a
    pass-through (``get_scale()`` is then 1.0), so one script runs with and without it.

    Example:
        >>> import burn
        >>> dev = burn.Device.flex().autodiff()
        >>> w = burn.nn.Parameter(burn.tensor([1.0, 2.0], device=dev))
        >>> opt = burn.optim.SGD([w], lr=0.5)
        >>> scaler = burn.amp.GradScaler(init_scale=8.0, growth_interval=1)
        >>> grads = scaler.scale((w * w).sum()).backward()       # gradients 8 * [2, 4]
        >>> scaler.step(opt, grads)                              # unscaled to [2, 4] first
        >>> scaler.update()
        >>> assert w.tolist() == [0.0, 0.0] and scaler.get_scale() == 16.0
    """

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        if not growth_factor > 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got {backoff_factor}")
        if not isinstance(growth_interval, int) or growth_interval < 1:
            raise ValueError(f"GradScaler: growth_interval must be a positive int, got {growth_interval!r}")
        if not (init_scale > 0 and math.isfinite(init_scale)):
            raise ValueError(f"GradScaler: init_scale must be a positive finite number, got {init_scale}")
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._per_opt: dict = {}       # id(optimizer) -> {"stage", "found_inf" (0-d bool tensor), "inf" (bool)}

    # -- scaling ----------------------------------------------------------------------
    def scale(self, outputs):
        """``outputs`` (a tensor, or a list/tuple of them) times the current scale. A half
        tensor is cast to float32 first, so the scaled loss cannot overflow float16.

        Example:
            >>> import burn
            >>> assert burn.amp.GradScaler(init_scale=4.0).scale(burn.tensor(1.5)).item() == 6.0
        """
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if not outputs.dtype.is_floating:
                raise DTypeError(f"GradScaler.scale: expected a floating loss tensor, got {outputs.dtype}")
            if outputs.dtype.itemsize == 2:
                outputs = E.astype(outputs, dt.float32)
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise BurnError(f"GradScaler.scale: expected a tensor or a list/tuple of tensors, got {type(outputs).__name__}")

    def _state_of(self, optimizer):
        st = self._per_opt.get(id(optimizer))
        if st is None or st["opt"] is not optimizer:
            st = self._per_opt[id(optimizer)] = {"opt": optimizer, "stage": _READY, "found_inf": None, "inf": None}
        return st

    def unscale_(self, optimizer, grads: Gradients) -> None:
        """Divide the gradients in ``grads`` of ``optimizer``'s parameters by the scale, in
        ``grads`` (call it before clipping them), and record whether one is inf/NaN.

        At most once per optimizer between ``update()`` calls, and before ``step``.

        Example:
            >>> import burn
            >>> dev = burn.Device.flex().autodiff()
            >>> w = burn.nn.Parameter(burn.tensor([3.0], device=dev))
            >>> opt, scaler = burn.optim.SGD([w], lr=0.1), burn.amp.GradScaler(init_scale=4.0)
            >>> grads = scaler.scale(w * 2).sum().backward()
            >>> scaler.unscale_(opt, grads)
            >>> assert w.grad(grads).item() == 2.0
        """
        if not self._enabled:
            return
        if not isinstance(grads, Gradients):
            raise BurnError(f"GradScaler.unscale_: expected burn.Gradients from backward(), got {type(grads).__name__}")
        st = self._state_of(optimizer)
        if st["stage"] == _UNSCALED:
            raise BurnError("GradScaler.unscale_: already called on this optimizer since the last update()")
        if st["stage"] == _STEPPED:
            raise BurnError("GradScaler.unscale_: called after step(); call update() first")
        inv = 1.0 / self._scale            # as torch: the reciprocal in double, applied in the grads' dtype
        checks = []
        with no_grad():
            for p in _params_of(optimizer, "unscale_"):
                g = grads.get(p)
                if g is None:
                    continue
                g = g * inv
                grads._set(p, g)
                checks.append(R.all(E.isfinite(g)))
            # one 0-d bool on the device: True if some gradient holds an inf or a NaN
            st["found_inf"] = (E.logical_not(R.all(M.stack(checks))) if len(checks) > 1
                               else E.logical_not(checks[0]) if checks else None)
        st["stage"] = _UNSCALED

    def step(self, optimizer, grads: Gradients):
        """Unscale ``grads`` (unless ``unscale_`` did) and run ``optimizer.step(grads)`` if every
        gradient is finite; otherwise skip the step. Returns what ``optimizer.step`` returned,
        or None when skipped.

        Example:
            >>> import burn
            >>> dev = burn.Device.flex().autodiff()
            >>> w = burn.nn.Parameter(burn.tensor([1.0], device=dev))
            >>> opt, scaler = burn.optim.SGD([w], lr=0.1), burn.amp.GradScaler()
            >>> grads = scaler.scale(w * float("inf")).sum().backward()
            >>> scaler.step(opt, grads); scaler.update()
            >>> assert w.item() == 1.0 and scaler.get_scale() == 32768.0     # skipped, scale halved
        """
        if not self._enabled:
            return optimizer.step(grads)
        st = self._state_of(optimizer)
        if st["stage"] == _STEPPED:
            raise BurnError("GradScaler.step: already called for this optimizer since the last update()")
        if st["stage"] == _READY:
            self.unscale_(optimizer, grads)
        found = st["found_inf"]
        st["inf"] = bool(found.item()) if found is not None else False     # the step's one host read
        st["stage"] = _STEPPED
        if st["inf"]:
            return None
        return optimizer.step(grads)

    def update(self, new_scale=None) -> None:
        """Adapt the scale after this iteration's ``step`` calls (or set it to ``new_scale``, a
        number or a one-element tensor) and get ready for the next iteration.

        Example:
            >>> import burn
            >>> s = burn.amp.GradScaler(init_scale=2.0)
            >>> s.update(new_scale=128.0)
            >>> assert s.get_scale() == 128.0
        """
        if not self._enabled:
            return
        if new_scale is not None:
            v = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
            if not (v > 0 and math.isfinite(v)):
                raise ValueError(f"GradScaler.update: new_scale must be a positive finite number, got {v}")
            self._scale = v
        else:
            results = [st["inf"] for st in self._per_opt.values() if st["inf"] is not None]
            if not results:
                raise BurnError("GradScaler.update: no inf checks were recorded; call step(optimizer, grads) "
                                "before update()")
            if any(results):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = self._scale * self._growth_factor
                    if math.isfinite(grown):      # torch keeps the scale when growing would overflow
                        self._scale = grown
                    self._growth_tracker = 0
        self._per_opt = {}

    # -- state ------------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled).

        Example:
            >>> import burn
            >>> assert burn.amp.GradScaler().get_scale() == 65536.0
        """
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after ``growth_interval`` clean steps.

        Example:
            >>> import burn
            >>> assert burn.amp.GradScaler().get_growth_factor() == 2.0
        """
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after a skipped step.

        Example:
            >>> import burn
            >>> assert burn.amp.GradScaler().get_backoff_factor() == 0.5
        """
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        """How many clean steps in a row grow the scale.

        Example:
            >>> import burn
            >>> assert burn.amp.GradScaler().get_growth_interval() == 2000
        """
        return self._growth_interval

    def is_enabled(self) -> bool:
        """False for a scaler built with ``enabled=False``.

        Example:
            >>> import burn
            >>> assert not burn.amp.GradScaler(enabled=False).is_enabled()
        """
        return self._enabled

    def state_dict(self) -> dict:
        """torch's keys: ``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``,
        ``_growth_tracker`` (an empty dict when disabled); plain numbers, JSON-able.

        Example:
            >>> import burn
            >>> sd = burn.amp.GradScaler(init_scale=8.0).state_dict()
            >>> assert sd["scale"] == 8.0 and sd["_growth_tracker"] == 0
        """
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned (torch's GradScaler state dicts load too).

        Example:
            >>> import burn
            >>> a = burn.amp.GradScaler(init_scale=8.0); b = burn.amp.GradScaler()
            >>> b.load_state_dict(a.state_dict())
            >>> assert b.get_scale() == 8.0
        """
        if not self._enabled:
            raise BurnError("GradScaler.load_state_dict: this scaler is disabled (enabled=False)")
        if not state:
            raise BurnError("GradScaler.load_state_dict: the state is empty (saved from a disabled scaler)")
        missing = {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} - set(state)
        if missing:
            raise BurnError(f"GradScaler.load_state_dict: missing keys {sorted(missing)}")
        self._scale = float(state["scale"])
        self._growth_factor = float(state["growth_factor"])
        self._backoff_factor = float(state["backoff_factor"])
        self._growth_interval = int(state["growth_interval"])
        self._growth_tracker = int(state["_growth_tracker"])


def _params_of(optimizer, op):
    groups = getattr(optimizer, "param_groups", None)
    if groups is None:
        raise BurnError(f"GradScaler.{op}: expected a burn.optim optimizer (with param_groups), "
                        f"got {type(optimizer).__name__}")
    seen = set()
    for g in groups:
        for p in g["params"]:
            if id(p) not in seen and not getattr(p, "frozen", False):
                seen.add(id(p))
                yield p
