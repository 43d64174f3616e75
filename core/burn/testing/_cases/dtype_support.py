"""Conformance cases: every way a tensor of a dtype comes to exist on a device agrees
with the backend's ``supports_dtype``: it works and reads back, or it raises a
DTypeError at the call naming the device, the dtype and what to use instead (never
a tensor that fails later, when printed or read).
"""
from __future__ import annotations

import numpy as np

import burn
from ...dtypes import ALL
from .._table import _add


def _host(d):
    # the host values of every path: zeros of d (numpy holds every burn dtype, bfloat16 via ml_dtypes)
    return np.zeros((2, 3), dtype=d.dtype)


def _from_flex(device, d):
    if "flex" not in burn.dispatch.registry.backend_names() or device.kind == "flex":
        return None     # no other device to move from (cuda's stand-in runs without flex)
    return burn.from_numpy(_host(d), device=burn.Device.flex()).to_device(device)


class _Producer:
    """A DLPack producer that tells its dtype only through DLPack (like a torch tensor)."""

    def __init__(self, arr):
        self._arr = arr

    def __dlpack__(self, **kw):
        return self._arr.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._arr.__dlpack_device__()


# path name -> fn(device, dtype) making a (2, 3) zeros tensor of dtype on device (None: not here)
PATHS = {
    "zeros": lambda dev, d: burn.zeros((2, 3), dtype=d, device=dev),
    "full": lambda dev, d: burn.full((2, 3), 0, dtype=d, device=dev),
    "tensor": lambda dev, d: burn.tensor(_host(d), device=dev),
    "from_numpy": lambda dev, d: burn.from_numpy(_host(d), device=dev),
    # numpy exports no bfloat16 over DLPack (the standard's dtype codes have it, numpy does not)
    "from_dlpack[copy]": lambda dev, d: None if d is burn.bfloat16 else burn.from_dlpack(_host(d), device=dev,
                                                                                           copy=True),
    "from_dlpack[producer]": lambda dev, d: None if d is burn.bfloat16 else burn.from_dlpack(_Producer(_host(d)),
                                                                                               device=dev),
    "astype": lambda dev, d: burn.zeros((2, 3), device=dev).astype(d),
    "zeros_like": lambda dev, d: burn.zeros_like(burn.zeros((2, 3), device=dev), dtype=d),
    "to_device": _from_flex,
}


def _agrees(path, d, device):
    """True when ``path`` on ``device`` does what the backend says of ``d``; else AssertionError."""
    supported = device.backend.supports_dtype(d, device.index)
    try:
        t = PATHS[path](device, d)
    except burn.DTypeError as e:
        msg = str(e)
        if supported:
            raise AssertionError(f"{path}: {device} says it holds {d} but refused it: {msg}") from e
        for part in (str(device), d.name, "use "):
            if part not in msg:
                raise AssertionError(f"{path}: the DTypeError for {d} on {device} does not name {part!r}: {msg}")
        return True
    if t is None:
        return True
    if not supported:
        raise AssertionError(f"{path}: {device} says it cannot hold {d} but the call made {t._h.dtype} "
                             f"without a DTypeError")
    if t.dtype is not d or t.shape != (2, 3) or np.abs(np.asarray(t.numpy())).astype(np.float64).any():
        raise AssertionError(f"{path}: {d} on {device} read back wrong: {t.dtype} {t.shape}")
    return True


def _is_true(v):
    assert v.all(), "the dtype support check returned False"


def _dtype_support():
    # out="bool": the cases run on every backend, whatever dtypes it skips elsewhere
    for path in PATHS:
        for d in ALL:
            _add(f"dtype-support:{path}[{d.name}]", "dtype_support", "forward",
                 lambda device, path=path, d=d: burn.tensor(_agrees(path, d, device.inner()), device=device),
                 (), out="bool", needs_device=True, prop=_is_true)
