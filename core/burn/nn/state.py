"""State files: a module's tensors in the safetensors format, never pickle.

A safetensors file is an 8-byte little-endian header length, a JSON header
(``name -> {"dtype", "shape", "data_offsets"}`` plus ``"__metadata__"``, a
``str -> str`` map) and the raw little-endian bytes of every tensor. The
format is simple enough to read and write here with numpy alone, so burn-core
needs no extra dependency, every malformed file gets a :class:`burn.BurnError`
that names the file and the defect, and files stay readable by the
``safetensors`` package, PyTorch, JAX and Burn (Rust).

Writes are atomic: the bytes go to a temporary file next to the target,
which is flushed and fsynced, then renamed over the target (``os.replace``),
and the directory is fsynced. A crash mid-save leaves the old file intact;
the only trace is a hidden ``.<name>.*.burn-tmp`` file, which nothing reads.

Interop with PyTorch: ``torch.nn.Linear.weight`` is ``[out, in]`` while
burn's ``Linear.weight`` is ``[in, out]`` (Burn's layout). See
:func:`load_state_dict` (``mapping="torch"``) and :func:`load_torch_state`.
"""
from __future__ import annotations

import json
import os

import numpy as np

from .. import dtypes as dt
from ..errors import BurnError
from ..tensor import Tensor

__all__ = ["save_state_dict", "load_state_dict", "load_metadata", "load_into", "load_torch_state",
           "torch_names"]

# burn dtype name -> safetensors dtype tag; complex128 has no tag and is stored
# as float64 pairs (trailing axis of 2), recorded in the metadata's dtype names.
_TAG = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int32": "I32", "int64": "I64",
        "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64", "complex64": "C64"}
_FROM_TAG = {v: k for k, v in _TAG.items()}
# tags burn has no dtype for, widened losslessly on load
_WIDEN = {"I16": ("<i2", "int32"), "U16": ("<u2", "int32"), "U32": ("<u4", "int64")}
_MAX_HEADER = 100_000_000   # the safetensors reference refuses larger headers too

_DTYPES_KEY = "burn.dtypes"
_VERSION_KEY = "burn.version"


def _np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise BurnError("bfloat16 tensors need the ml_dtypes package: pip install ml_dtypes") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name).newbyteorder("<")


def _host(value, name: str) -> tuple[np.ndarray, str]:
    """(little-endian contiguous host array, burn dtype name) for a tensor or array."""
    if isinstance(value, Tensor):
        arr, dname = value.numpy(), value.dtype.name
    else:
        arr = np.asarray(value)
        try:
            dname = dt.as_dtype(arr.dtype).name
        except BurnError:
            raise BurnError(f"save_state_dict: '{name}' has dtype {arr.dtype}, which burn cannot store; "
                            f"use one of {', '.join(d.name for d in dt.ALL)}") from None
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    # not ascontiguousarray: it turns 0-d arrays into 1-d ones
    return (arr if arr.flags.c_contiguous else arr.copy(order="C")), dname


def save_state_dict(state: dict, path, metadata: dict | None = None) -> None:
    """Write ``{name: Tensor or numpy array}`` to ``path`` as safetensors, atomically.

    ``metadata`` (``str -> str``) is stored in the header next to burn's own
    keys: ``burn.version`` and ``burn.dtypes`` (a JSON map of dtype names).

    Example:
        >>> import burn, os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> p = os.path.join(d, "w.safetensors")
        >>> burn.nn.save_state_dict({"w": burn.arange(3)}, p, metadata={"step": "7"})
        >>> assert burn.nn.load_state_dict(p)["w"].tolist() == [0, 1, 2]
        >>> assert burn.nn.load_metadata(p)["step"] == "7"
    """
    path = os.fspath(path)
    meta = {}
    for k, v in (metadata or {}).items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise BurnError(f"save_state_dict: metadata must map str to str, got {k!r}: {v!r} "
                            f"({type(v).__name__}); convert values with str() or json.dumps()")
        meta[k] = v
    arrays = {}
    for name, value in state.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise BurnError(f"save_state_dict: tensor names must be strings other than '__metadata__', "
                            f"got {name!r}")
        arrays[name] = _host(value, name)
    from .. import __version__
    meta[_VERSION_KEY] = __version__
    meta[_DTYPES_KEY] = json.dumps({k: d for k, (_, d) in arrays.items()}, sort_keys=True)

    entries, blobs, offset = {}, [], 0
    # data: widest items first keeps every tensor aligned to its itemsize (as the reference
    # writer does); header: the caller's order, which loading gives back
    for name in sorted(arrays, key=lambda k: (-arrays[k][0].dtype.itemsize, k)):
        arr, dname = arrays[name]
        shape = list(arr.shape)
        if dname == "complex128":
            arr, tag, shape = arr.reshape(-1).view("<f8"), "F64", shape + [2]
        else:
            tag = _TAG[dname]
        n = arr.nbytes
        entries[name] = {"dtype": tag, "shape": shape, "data_offsets": [offset, offset + n]}
        blobs.append(arr.reshape(-1).view(np.uint8))
        offset += n
    header = {"__metadata__": meta, **{k: entries[k] for k in arrays}}
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)

    def write(f):
        f.write(len(head).to_bytes(8, "little"))
        f.write(head)
        for b in blobs:
            f.write(b.data)

    _atomic_write(path, write)


def _atomic_write(path: str, write) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    # not tempfile.mkstemp: its files are mode 0600, which os.replace would give the state
    # file; with os.open(..., 0o666) the umask applies, as for any file the user creates
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}.burn-tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    # make the rename itself durable; directories cannot be opened on Windows
    if hasattr(os, "O_DIRECTORY"):
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


# -- reading -------------------------------------------------------------------------------

class _Entry:
    __slots__ = ("name", "tag", "shape", "begin", "end")


def _read_header(f, path: str, size: int):
    """(entries, metadata, data start) of an open file, validated against its size."""
    def bad(msg):
        return BurnError(f"state file {path!r} is not a valid safetensors file: {msg}")

    raw = f.read(8)
    if len(raw) < 8:
        raise bad(f"it has {size} bytes, fewer than the 8-byte header length (truncated or empty file)")
    n = int.from_bytes(raw, "little")
    if n > _MAX_HEADER or 8 + n > size:
        raise bad(f"header length {n} runs past the end of the file ({size} bytes): truncated or corrupted")
    try:
        header = json.loads(f.read(n).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise bad(f"the {n}-byte header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise bad(f"the header is a JSON {type(header).__name__}, not an object")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise bad("'__metadata__' must map strings to strings")
    data_size = size - 8 - n
    entries = []
    for name, info in header.items():
        e = _Entry()
        e.name = name
        try:
            e.tag = info["dtype"]
            e.shape = tuple(int(s) for s in info["shape"])
            e.begin, e.end = (int(o) for o in info["data_offsets"])
        except (TypeError, KeyError, ValueError):
            raise bad(f"entry '{name}' needs 'dtype', 'shape' and 'data_offsets' [begin, end], got {info!r}") \
                from None
        if e.tag not in _FROM_TAG and e.tag not in _WIDEN:
            raise bad(f"tensor '{name}' has dtype {e.tag!r}, which burn cannot load "
                      f"(supported: {', '.join(sorted(_FROM_TAG))}, and I16/U16/U32 widened)")
        if any(s < 0 for s in e.shape) or not 0 <= e.begin <= e.end:
            raise bad(f"tensor '{name}' has shape {e.shape} and data_offsets [{e.begin}, {e.end}]")
        if e.end > data_size:
            raise bad(f"data_offsets [{e.begin}, {e.end}] of tensor '{name}' run past the end of the data "
                      f"({data_size} bytes): truncated file")
        itemsize = int(_WIDEN[e.tag][0][-1]) if e.tag in _WIDEN else _np_size(e.tag)
        need = int(np.prod(e.shape, dtype=np.int64)) * itemsize
        if e.end - e.begin != need:
            raise bad(f"tensor '{name}' of shape {e.shape} and dtype {e.tag} needs {need} bytes, "
                      f"its data_offsets [{e.begin}, {e.end}] hold {e.end - e.begin}")
        entries.append(e)
    return entries, meta, 8 + n


def _np_size(tag: str) -> int:
    return {"BOOL": 1, "U8": 1, "I8": 1, "I32": 4, "I64": 8, "F16": 2, "BF16": 2, "F32": 4,
            "F64": 8, "C64": 8}[tag]


def _open(path: str):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise BurnError(f"state file {path!r} does not exist") from None
    except OSError as e:
        raise BurnError(f"cannot read state file {path!r}: {e.strerror or e}") from None


def _read_arrays(path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Every tensor of a file as a fresh host array, and the metadata."""
    path = os.fspath(path)
    with _open(path) as f:
        size = os.fstat(f.fileno()).st_size
        entries, meta, start = _read_header(f, path, size)
        try:
            names = json.loads(meta.get(_DTYPES_KEY, "{}"))
        except json.JSONDecodeError:
            names = {}
        out = {}
        for e in sorted(entries, key=lambda e: e.begin):
            if e.tag in _WIDEN:
                arr = np.empty(e.shape, _WIDEN[e.tag][0])
            else:
                arr = np.empty(e.shape, _np_dtype(_FROM_TAG[e.tag]))
            f.seek(start + e.begin)
            if arr.nbytes and f.readinto(arr.reshape(-1).view(np.uint8)) != arr.nbytes:
                raise BurnError(f"state file {path!r}: tensor '{e.name}' was cut short while reading "
                                f"(file truncated under us?)")
            if e.tag in _WIDEN:
                arr = arr.astype(_WIDEN[e.tag][1])
            elif names.get(e.name) == "complex128" and e.tag == "F64" and e.shape[-1:] == (2,):
                arr = arr.view(np.complex128).reshape(e.shape[:-1])
            out[e.name] = arr
    # keep the file's order of names (the header's), not the data order
    return {e.name: out[e.name] for e in entries}, meta


def _torch_layout(arrays: dict) -> dict:
    # torch.nn.Linear stores weight [out, in]; burn's Linear is [in, out]
    return {k: (np.ascontiguousarray(a.T) if a.ndim == 2 and (k == "weight" or k.endswith(".weight")) else a)
            for k, a in arrays.items()}


def load_state_dict(path, device=None, *, mapping=None) -> dict[str, Tensor]:
    """Read a safetensors file into ``{name: Tensor}`` on ``device`` (default device if None).

    ``mapping`` adapts files written by other frameworks:

    - ``None``: names and layouts as stored.
    - ``"torch"``: layout only — every 2-D tensor named ``weight`` or ``*.weight``
      is transposed, because ``torch.nn.Linear.weight`` is ``[out, in]`` and
      burn's ``Linear.weight`` is ``[in, out]``. Names are kept. This is right
      when every 2-D weight is a Linear weight; for models with other 2-D
      weights (embeddings) or ``Sequential`` names, use
      ``module.load_torch_state(path)``, which knows the layers.
    - a callable ``(name, numpy array) -> (name, array)`` or ``None`` to drop it.

    A truncated or corrupted file is a :class:`burn.BurnError` naming the file
    and what is wrong with it.

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "lin.safetensors")
        >>> burn.nn.save_state_dict({"fc.weight": burn.zeros((3, 2)), "fc.bias": burn.ones((3,))}, p)
        >>> s = burn.nn.load_state_dict(p, mapping="torch")
        >>> assert s["fc.weight"].shape == (2, 3) and s["fc.bias"].tolist() == [1.0, 1.0, 1.0]
    """
    from ..ops.creation import _device, _from_host
    arrays, _ = _read_arrays(path)
    arrays = _apply_mapping(arrays, mapping)
    device = _device(device)
    return {k: _from_host(a, dt.as_dtype(a.dtype), device) for k, a in arrays.items()}


def _apply_mapping(arrays: dict, mapping) -> dict:
    if mapping is None:
        return arrays
    if mapping == "torch":
        return _torch_layout(arrays)
    if callable(mapping):
        out = {}
        for k, a in arrays.items():
            r = mapping(k, a)
            if r is not None:
                out[r[0]] = np.asarray(r[1])
        return out
    raise BurnError(f"load_state_dict: mapping must be None, 'torch' or a callable (name, array) -> "
                    f"(name, array) | None, got {mapping!r}")


def load_metadata(path) -> dict[str, str]:
    """The ``__metadata__`` map of a safetensors file (reads only the header).

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "m.safetensors")
        >>> burn.nn.save_state_dict({"x": burn.ones((2,), dtype=burn.bfloat16)}, p)
        >>> meta = burn.nn.load_metadata(p)
        >>> assert meta["burn.version"] == burn.__version__ and "bfloat16" in meta["burn.dtypes"]
    """
    path = os.fspath(path)
    with _open(path) as f:
        return _read_header(f, path, os.fstat(f.fileno()).st_size)[1]


# -- into a module ---------------------------------------------------------------------------

def load_into(module, path, *, strict: bool = True, mapping=None):
    """Load a state file into ``module`` in place, on the devices of its tensors; returns it.

    Names, shapes and dtypes are checked against the model and every mismatch
    is listed in one :class:`burn.BurnError` naming the file. Parameters stay
    Parameters: on an autodiff device they remain trainable leaves.
    This is what ``module.load(path)`` / ``module.load_state(path)`` call.

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "lin.safetensors")
        >>> a, b = burn.nn.Linear(3, 2), burn.nn.Linear(3, 2)
        >>> a.save(p)
        >>> assert (burn.nn.state.load_into(b, p).weight.numpy() == a.weight.numpy()).all()
    """
    arrays, _ = _read_arrays(path)
    arrays = _apply_mapping(arrays, mapping)
    try:
        return module.load_state_dict(arrays, strict=strict)
    except BurnError as e:
        raise BurnError(f"loading {os.fspath(path)!r} into {type(module).__name__}: {e}") from None


def torch_names(module) -> dict[str, str]:
    """``{burn dotted path: PyTorch state-dict name}`` for every tensor of ``module``.

    The one structural difference: burn's ``Sequential`` keeps its layers in a
    ``layers`` list (``"layers.0.weight"``) where torch's names them by index
    (``"0.weight"``); the ``layers`` segment under a Sequential is dropped.

    Example:
        >>> import burn
        >>> m = burn.nn.Sequential(burn.nn.Linear(2, 3), burn.nn.ReLU(), burn.nn.Linear(3, 1))
        >>> assert burn.nn.state.torch_names(m)["layers.2.bias"] == "2.bias"
    """
    from .layers import Sequential
    modules = dict(module.named_modules())
    out = {}
    for path in module.state_dict():
        parts = path.split(".")
        keep = [p for i, p in enumerate(parts)
                if not (p == "layers" and isinstance(modules.get(".".join(parts[:i])), Sequential))]
        out[path] = ".".join(keep)
    return out


def load_torch_state(module, path, *, strict: bool = True):
    """Load a safetensors state dict written by PyTorch for the same architecture.

    The mapping: names come from :func:`torch_names` (``Sequential`` indices
    without the ``layers`` segment), and the ``weight`` of every burn
    ``Linear`` is transposed, since torch stores ``[out, in]`` and burn
    ``[in, out]``. Other tensors (biases, norms, embeddings) are taken as
    stored. Names, shapes and dtypes are then checked as in :func:`load_into`.
    This is ``module.load_torch_state(path)``.

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "t.safetensors")
        >>> burn.nn.save_state_dict({"0.weight": burn.ones((3, 2)), "0.bias": burn.zeros((3,))}, p)
        >>> m = burn.nn.Sequential(burn.nn.Linear(2, 3)).load_torch_state(p)
        >>> assert m.layers[0].weight.shape == (2, 3) and m.layers[0].weight.numpy().sum() == 6
    """
    from .layers import Linear
    names = torch_names(module)
    linear_weights = {f"{p}.weight" if p else "weight" for p, m in module.named_modules() if isinstance(m, Linear)}
    arrays, _ = _read_arrays(path)
    state, used = {}, set()
    for burn_name, torch_name in names.items():
        if torch_name in arrays:
            a = arrays[torch_name]
            state[burn_name] = np.ascontiguousarray(a.T) if burn_name in linear_weights and a.ndim == 2 else a
            used.add(torch_name)
    for torch_name in arrays:
        if torch_name not in used:
            state[torch_name] = arrays[torch_name]   # reported as unexpected (strict) or ignored
    try:
        return module.load_state_dict(state, strict=strict)
    except BurnError as e:
        raise BurnError(f"loading PyTorch state {os.fspath(path)!r} into {type(module).__name__} "
                        f"(names mapped by burn.nn.state.torch_names, Linear weights transposed): {e}") from None
