"""DLPack with one meaning on every backend: the Array API's copy rules, and no memory that
burn believes immutable is ever written by someone else.

Export (``Tensor.__dlpack__``): burn's values are immutable, so a consumer may share a
tensor's memory only read-only. ``copy=True`` always copies; ``copy=None`` shares when the
backend's memory is the consumer's kind and the consumer asked for DLPack >= 1.0 (whose
read-only flag numpy and torch honour), and copies otherwise (an older consumer, or memory
that cannot be marked read-only, as CuPy's); ``copy=False`` shares on those same terms or
raises ``BufferError`` (a wgpu tensor lives in OpenCL memory: its export is always a copy).

Import (``burn.from_dlpack``): an import that shares memory must not let the owner's later
writes reach values burn has recorded. ``copy=None`` therefore copies foreign memory (a burn
tensor of the same device is shared: it is immutable); ``copy=False`` shares it and is the
caller's promise not to write it while a tensor uses it, and burn checks the promise: the
shared buffer's checksum is taken at the import and compared at each read of it (every flush
that reads it, which includes a backward that needs its value, and every host read). After an
owner's write every read raises :class:`SharedMemoryWritten`, never a value mixing the old and
the new contents.
"""
from __future__ import annotations

import weakref
import zlib

import numpy as np

from .errors import BurnError, user_frame

__all__ = ["SharedMemoryWritten", "export", "guard", "written", "GUARDS"]

#: id(native array) -> _Guard, for every live native array that shares a producer's memory
GUARDS: dict = {}


class SharedMemoryWritten(BurnError, BufferError):
    """The memory a ``from_dlpack(..., copy=False)`` tensor shares was written by its owner.

    Example:
        >>> import burn, numpy as np
        >>> a = np.zeros(3)
        >>> t = burn.from_dlpack(a, copy=False)
        >>> y = t + 1                       # recorded before the owner's write
        >>> a[0] = 5.0
        >>> try:
        ...     y.tolist()
        ... except burn.SharedMemoryWritten as e:
        ...     err = e
        >>> assert "written outside burn" in str(err)
    """


class _Guard:
    __slots__ = ("writer", "backend", "index", "crc", "broken")

    def __init__(self, writer, backend, index, crc):
        self.writer, self.backend, self.index, self.crc = writer, backend, index, crc
        self.broken = False


def _checksum(backend, native, index) -> int:
    host = np.ascontiguousarray(backend.to_numpy(native, index))   # flex: the array itself
    return zlib.crc32(host.reshape(-1).view(np.uint8)) if host.size else 0


def guard(native, source, backend, index: int):
    """Register ``native`` (made by ``backend.from_dlpack`` sharing ``source``'s memory) for the
    owner-write check. Returns ``native``.

    Example:
        >>> import burn, numpy as np
        >>> from burn.dlpack import guard, GUARDS
        >>> a = np.ones(2)
        >>> be = burn.Device.flex().backend
        >>> n = guard(be.from_dlpack(a, 0), a, be, 0)
        >>> assert id(n) in GUARDS
    """
    _watch(_owner(native), f"the owner of the {type(source).__name__} imported with from_dlpack(copy=False) at {_site()}",
           backend, index)
    return native


def _watch(owner, writer, backend, index):
    if id(owner) not in GUARDS:
        GUARDS[id(owner)] = _Guard(writer, backend, index, _checksum(backend, owner, index))
        weakref.finalize(owner, GUARDS.pop, id(owner), None)


def written(data):
    """The SharedMemoryWritten error if ``data`` (a native array, or a view of one) shares memory
    whose owner wrote it since the import, else None. Asked only while some import shares memory.

    Example:
        >>> import numpy as np
        >>> from burn.dlpack import written
        >>> assert written(np.zeros(2)) is None             # not shared: nothing to check
    """
    g = GUARDS.get(id(data))
    if g is None:
        base = getattr(data, "base", None)      # a view a kernel made (numpy and CuPy keep the owner)
        g = GUARDS.get(id(base)) if base is not None else None
        if g is None:
            return None
        data = base
    if not g.broken and _checksum(g.backend, data, g.index) == g.crc:
        return None
    g.broken = True
    return SharedMemoryWritten(
        f"the memory this tensor shares over DLPack was written outside burn, by {g.writer}; burn's values are "
        f"immutable, and work recorded before the write would read the new contents. Share with copy=None "
        f"or copy=True (a copy) to write the array, or call burn.from_dlpack again after writing")


def _site() -> str:
    f = user_frame()
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "an unknown line"


def _versioned(max_version) -> bool:
    return max_version is not None and tuple(max_version)[:1] >= (1,)


def _owner(native):
    """The array owning ``native``'s memory, whose views every kernel's view of it points at."""
    base = getattr(native, "base", None)
    return base if base is not None and type(base) is type(native) else native


def export(tensor, stream=None, max_version=None, dl_device=None, copy=None):
    """``tensor.__dlpack__(...)`` by the rules in this module's docstring.

    Example:
        >>> import burn, numpy as np
        >>> x = burn.tensor([1.0, 2.0])
        >>> a = np.from_dlpack(x)                        # numpy asks for DLPack 1: shared, read-only
        >>> assert not a.flags.writeable and a.tolist() == [1.0, 2.0]
        >>> assert np.from_dlpack(x, copy=True).flags.writeable
    """
    h = tensor._h
    backend, index = h.graph.backend, h.graph.index
    native = h.value()
    src = backend.to_dlpack_source(native, index)
    kw = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device))
          if v is not None}
    what = f"{tensor.device} tensor (shape {tuple(tensor.shape)}, {tensor.dtype})"
    if not backend.dlpack_shares:           # the source is a fresh copy already (wgpu's download)
        if copy is False:
            raise BufferError(f"__dlpack__(copy=False): a {what} lives in {backend.name} device memory, which "
                              f"no DLPack consumer can share; its export is a copy: pass copy=None or True")
        return src.__dlpack__(**kw)
    if copy:
        return src.copy().__dlpack__(**kw)
    if isinstance(src, np.ndarray):
        if not _versioned(max_version):
            if copy is False:
                raise BufferError(f"__dlpack__(copy=False): a {what} is shared only read-only, and this consumer "
                                  f"asked for a DLPack version before 1.0, which cannot mark memory read-only; "
                                  f"pass copy=None (a copy) or copy=True")
            return src.copy().__dlpack__(**kw)
        out = src.view()
        out.flags.writeable = False     # DLPack 1's read-only flag (numpy honours it; torch does not)
    elif copy is None:
        return src.copy().__dlpack__(**kw)      # memory that cannot be marked read-only (CuPy's)
    else:
        out = src
    # shared: a consumer that writes it anyway (torch ignores the flag) is found at burn's next read
    _watch(_owner(native), f"a consumer of its DLPack export at {_site()}", backend, index)
    return out.__dlpack__(**kw)
