"""Devices: runtime values that select a backend, never a type parameter.

``Device("cuda:1")`` is a plain hashable value; nothing is imported or
checked until the device is *used* (a tensor is made on it, ``sync()``...),
and then a missing or unusable backend raises :class:`BackendUnavailable`
naming the package to install or the reason it cannot run.
"""
from __future__ import annotations

import os

from . import dispatch, plugins
from .errors import BurnError, KNOWN_BACKEND_PACKAGES, backend_unavailable as unavailable  # noqa: F401
from .graph import graph_for

__all__ = ["Device"]

class Device:
    """A compute device: backend kind, index, and whether autodiff is on.

    Example:
        >>> import burn
        >>> d = burn.Device("flex")
        >>> assert d == burn.Device.flex() and d.index == 0
        >>> ad = d.autodiff()
        >>> assert ad.is_autodiff and ad.inner() == d and ad != d
    """

    __slots__ = ("kind", "index", "is_autodiff", "_hash")

    def __init__(self, spec: str = "flex", index: int | None = None, *, autodiff: bool = False):
        if isinstance(spec, Device):
            kind, idx, autodiff = spec.kind, spec.index, spec.is_autodiff or autodiff
        else:
            if not isinstance(spec, str) or not spec:
                raise BurnError(f"Device: expected a string like 'flex', 'wgpu:0' or 'cuda:1', got {spec!r}")
            kind, _, rest = spec.partition(":")
            kind = kind.strip().lower()
            idx = 0
            if rest:
                try:
                    idx = int(rest)
                except ValueError:
                    raise BurnError(f"Device: bad index in {spec!r}; write 'kind:index', e.g. 'cuda:1'") from None
        if index is not None:
            idx = int(index)
        if idx < 0:
            raise BurnError(f"Device: index must be >= 0, got {idx} in {spec!r}")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "index", idx)
        object.__setattr__(self, "is_autodiff", bool(autodiff))
        object.__setattr__(self, "_hash", hash((kind, idx, bool(autodiff))))

    def __setattr__(self, name, value):
        raise AttributeError("Device is immutable")

    # -- constructors -------------------------------------------------------
    @staticmethod
    def flex() -> "Device":
        """The numpy CPU device (package burn-flex).

        Always available, so use it for tests and small CPU work.

        Example:
            >>> import burn
            >>> assert str(burn.Device.flex()) == "flex:0"
        """
        return Device("flex", 0)

    @staticmethod
    def wgpu(index: int = 0) -> "Device":
        """An OpenCL device served by burn-wgpu.

        Args:
            index: which OpenCL device (``Device.enumerate()`` lists them).

        Nothing is checked until a tensor is made on it.

        Example:
            >>> import burn
            >>> assert burn.Device.wgpu(1) == burn.Device("wgpu:1")
        """
        return Device("wgpu", index)

    @staticmethod
    def cuda(index: int = 0) -> "Device":
        """An NVIDIA GPU served by burn-cuda.

        Args:
            index: the CUDA device ordinal.

        Nothing is checked until a tensor is made on it.

        Example:
            >>> import burn
            >>> assert burn.Device.cuda(0).kind == "cuda"
        """
        return Device("cuda", index)

    @staticmethod
    def default() -> "Device":
        """The device to use when none is named.

        ``BURN_DEVICE`` (e.g. ``wgpu:0``) wins; else a real accelerator that is
        installed and present, asking backends in the order of the ``default_priority``
        they declare (burn-cuda 20, then burn-wgpu 10: a CUDA GPU, then another GPU); a
        backend whose cheap ``accelerator_probe`` says no accelerator can be here (no
        driver) is not started at all. Else flex. An OpenCL CPU device is the default
        only when burn-flex is not installed: flex is faster on a CPU. With no usable
        backend at all this is flex, whose use then says to ``pip install burn-flex``.

        Example:
            >>> import burn
            >>> assert isinstance(burn.Device.default(), burn.Device)
        """
        env = os.environ.get("BURN_DEVICE")
        if env:
            return Device(env)
        reg = dispatch.registry
        for kind in reg.accelerator_preference():
            if not reg.may_have_accelerator(kind):
                continue
            be = reg.try_backend(kind)
            if be is None:
                continue
            try:
                for idx in be.device_indices():
                    if be.is_accelerator(idx):
                        return Device(kind, idx)
            except Exception:  # a broken backend must not break default()
                continue
        if "flex" in reg.backend_names() and reg.try_backend("flex") is not None:
            return Device.flex()
        for kind in reg.accelerator_preference():   # e.g. only burn-wgpu on a CPU
            be = reg.try_backend(kind)
            try:
                indices = be.device_indices() if be is not None else []
            except Exception:
                continue
            if indices:
                return Device(kind, indices[0])
        return Device.flex()

    @staticmethod
    def enumerate() -> list["Device"]:
        """Every device of every installed backend that can run here.

        Example:
            >>> import burn
            >>> assert burn.Device.flex() in burn.Device.enumerate()
        """
        out = []
        for kind in dispatch.registry.backend_names():
            be = dispatch.registry.try_backend(kind)
            if be is None:
                continue
            try:
                # a listed device that cannot run here (its driver fails to build kernels) is left out
                out.extend(Device(kind, i) for i in be.device_indices() if be.unavailable_reason(i) is None)
            except Exception:
                continue
        return out

    # -- autodiff -----------------------------------------------------------
    def autodiff(self) -> "Device":
        """The same device with autodiff enabled for tensors made on it.

        Use it for tensors whose gradients you want (``require_grad``).

        Example:
            >>> import burn
            >>> dev = burn.Device.flex().autodiff()
            >>> assert dev.is_autodiff and dev.kind == "flex"
        """
        return self if self.is_autodiff else _twin(self, True)

    def inner(self) -> "Device":
        """The same device without autodiff.

        Example:
            >>> import burn
            >>> dev = burn.Device.flex().autodiff()
            >>> assert dev.inner() == burn.Device.flex() and not dev.inner().is_autodiff
        """
        return _twin(self, False) if self.is_autodiff else self

    # -- runtime ------------------------------------------------------------
    @property
    def backend(self):
        """The backend object serving this device (resolving plugins on first use).

        Raises :class:`BackendUnavailable` if no installed plugin can serve it.

        Example:
            >>> import burn
            >>> assert burn.Device.flex().backend.name == "flex"
        """
        return dispatch.registry.backend_for(self)

    def flush(self) -> None:
        """Run every pending op of this device now, without waiting for the backend: an
        asynchronous backend (wgpu, cuda) has the kernels queued when this returns.

        Ops are lazy: a result dropped before the next flush is never computed, so a loop
        that times ``y = f(x)`` back to back must flush each iteration to time every call
        (as an eager framework runs them), and :meth:`sync` once at the end.

        Example:
            >>> import burn
            >>> dev = burn.Device.flex()
            >>> y = burn.ones((2,), device=dev) * 3
            >>> dev.flush()                 # computed (flex runs synchronously)
            >>> assert y.tolist() == [3.0, 3.0]
        """
        graph_for(self).flush()

    def sync(self) -> None:
        """Run every pending op of this device and wait for the backend.

        Use it before timing code: ops are lazy and backends may be asynchronous.

        Example:
            >>> import burn
            >>> y = burn.ones((2,)) * 3
            >>> burn.Device.flex().sync()
            >>> assert y.tolist() == [3.0, 3.0]
        """
        graph_for(self).flush()
        self.backend.sync(self.index)

    def seed(self, seed: int) -> None:
        """Seed this device's random stream (rand, randn, dropout).

        Args:
            seed: an integer; the same seed gives the same random values.

        Example:
            >>> import burn
            >>> dev = burn.Device.flex()
            >>> dev.seed(7); a = burn.rand((3,), device=dev).tolist()
            >>> dev.seed(7); b = burn.rand((3,), device=dev).tolist()
            >>> assert a == b
        """
        graph_for(self).seed(int(seed))

    def memory_stats(self) -> dict:
        """Bytes reserved and in use (and their peaks) and allocation counts.

        Runs pending work first, so the numbers include it.

        Example:
            >>> import burn
            >>> assert isinstance(burn.Device.flex().memory_stats(), dict)
        """
        graph_for(self).flush()
        return dict(self.backend.memory_stats(self.index))

    def memory_cleanup(self) -> None:
        """Return cached but unused device memory to the system.

        Every plugin's ``burn_memory_cleanup(device)`` hook runs first (kernel libraries
        drop their FFT tables and plans there), so their memory is returned too; the
        backend's own cleanup runs even if a hook raises.

        Example:
            >>> import burn
            >>> burn.Device.flex().memory_cleanup()
            >>> assert burn.ones((2,)).sum().item() == 2.0
        """
        graph_for(self).flush()
        try:
            plugins.memory_cleanup(self)
        finally:
            self.backend.memory_cleanup(self.index)

    # -- value semantics ----------------------------------------------------
    def __eq__(self, other):
        if isinstance(other, str):
            other = Device(other)
        return (isinstance(other, Device) and self.kind == other.kind
                and self.index == other.index and self.is_autodiff == other.is_autodiff)

    def __hash__(self):
        return self._hash

    def __str__(self):
        return f"{self.kind}:{self.index}" + ("+autodiff" if self.is_autodiff else "")

    def __repr__(self):
        return f"Device('{self.kind}:{self.index}')" + (".autodiff()" if self.is_autodiff else "")

    def __reduce__(self):
        return (Device, (self.kind, self.index), None) if not self.is_autodiff else (_ad_device, (self.kind, self.index))


def _ad_device(kind, index):
    return Device(kind, index, autodiff=True)


# (kind, index, autodiff) -> the Device autodiff() / inner() return: devices are immutable values,
# and a replay or an op asks for a twin per call (building one costs a few microseconds)
_TWINS: dict = {}


def _twin(device: Device, autodiff: bool) -> Device:
    key = (device.kind, device.index, autodiff)
    d = _TWINS.get(key)
    if d is None:
        d = _TWINS[key] = Device(device.kind, device.index, autodiff=autodiff)
    return d
