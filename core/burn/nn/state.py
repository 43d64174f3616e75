"""State files: a module's tensors in the safetensors format, never pickle.

The ``safetensors`` package reads and writes the format (header, offsets,
alignment, validation of every byte range), so burn's files are the ones
PyTorch, JAX and Burn (Rust) read, and files they write load here. Burn adds
what the format leaves to the caller:

- atomic writes: the bytes go to a temporary file next to the target, which
  is flushed and fsynced, then renamed over the target (``os.replace``), and
  the directory is fsynced. A crash mid-save leaves the old file intact; the
  only trace is a hidden ``.<name>.*.burn-tmp`` file, which nothing reads;
- dtypes the format has no tag for: ``complex128`` is stored as float64 pairs
  (a trailing axis of 2), and the ``burn.dtypes`` metadata key records burn's
  dtype of every tensor so it loads back as complex128; I16/U16/U32 tensors of
  other writers are widened losslessly on load;
- validation of names, shapes and dtypes against the model, and one
  :class:`burn.BurnError` naming the file for every problem: a missing,
  truncated or corrupted file gets the library's account of the defect.

Interop with PyTorch: ``torch.nn.Linear.weight`` is ``[out, in]`` while
burn's ``Linear.weight`` is ``[in, out]`` (Burn's layout). See
:func:`load_state_dict` (``mapping="torch"``) and :func:`load_torch_state`.
"""
from __future__ import annotations

import json
import os

import numpy as np

from .._version import __version__
from .. import dtypes as dt
from ..errors import BurnError
from ..tensor import Tensor
from ..ops.creation import _device, _from_host

__all__ = ["save_state_dict", "load_state_dict", "load_metadata", "load_into", "load_torch_state",
           "torch_names"]

# safetensors dtype tag -> burn dtype name; complex128 has no tag and is stored as F64
# pairs, told apart by the metadata's dtype names
_FROM_TAG = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I32": "int32", "I64": "int64", "F16": "float16",
             "BF16": "bfloat16", "F32": "float32", "F64": "float64", "C64": "complex64"}
# tags burn has no dtype for, widened losslessly on load
_WIDEN = {"I16": ("<i2", "int32"), "U16": ("<u2", "int32"), "U32": ("<u4", "int64")}

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
    keys: ``burn.version`` and ``burn.dtypes`` (a JSON map of dtype names, in
    the order of ``state``, which loading gives back).

    Example:
        >>> import burn, os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> p = os.path.join(d, "w.safetensors")
        >>> burn.nn.save_state_dict({"w": burn.arange(3)}, p, metadata={"step": "7"})
        >>> assert burn.nn.load_state_dict(p)["w"].tolist() == [0, 1, 2]
        >>> assert burn.nn.load_metadata(p)["step"] == "7"
    """
    import safetensors
    import safetensors.numpy

    path = os.fspath(path)
    meta = {}
    for k, v in (metadata or {}).items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise BurnError(f"save_state_dict: metadata must map str to str, got {k!r}: {v!r} "
                            f"({type(v).__name__}); convert values with str() or json.dumps()")
        meta[k] = v
    arrays, names = {}, {}
    for name, value in state.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise BurnError(f"save_state_dict: tensor names must be strings other than '__metadata__', "
                            f"got {name!r}")
        arr, names[name] = _host(value, name)
        if names[name] == "complex128":
            arr = arr.reshape(-1).view("<f8").reshape(arr.shape + (2,))
        arrays[name] = arr
    meta[_VERSION_KEY] = __version__
    # not sort_keys: the library lays tensors out by alignment, this keeps the caller's order
    meta[_DTYPES_KEY] = json.dumps(names)
    try:
        # safetensors.numpy.save, not safetensors.serialize: the raw-pointer TensorSpec
        # argument of the latter changed across releases, this front end follows it
        raw = safetensors.numpy.save(arrays, metadata=meta)
    except safetensors.SafetensorError as e:
        raise BurnError(f"save_state_dict: the safetensors package cannot write {path!r}: {e}") from None
    _atomic_write(path, lambda f: f.write(raw))


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
        except OSError as e:    # name the user's path, not the hidden temporary file
            why = "its directory does not exist (create it first, e.g. os.makedirs)" \
                if isinstance(e, FileNotFoundError) else e.strerror or str(e)
            raise BurnError(f"cannot save {path!r}: {why}") from e
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
    fsync_dir(directory)     # make the rename itself durable


def fsync_dir(path: str) -> None:
    """Flush a directory's entries (a rename in it) to disk; a no-op where
    directories cannot be opened (Windows)."""
    if hasattr(os, "O_DIRECTORY"):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# -- reading -------------------------------------------------------------------------------

def _open(path: str):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise BurnError(f"state file {path!r} does not exist") from None
    except OSError as e:
        raise BurnError(f"cannot read state file {path!r}: {e.strerror or e}") from None


def _invalid(path: str, size: int, err: Exception) -> BurnError:
    return BurnError(f"state file {path!r} ({size} bytes) is not a valid safetensors file "
                     f"(truncated or corrupted?): {err}")


def _header(path: str, size: int):
    """(metadata, [(name, tag, shape)] in data order) through the library, which checks the
    header against the file's size; every failure is a BurnError naming the file."""
    import safetensors
    try:
        with safetensors.safe_open(path, framework="numpy") as f:
            meta = f.metadata() or {}
            keys = f.offset_keys() if hasattr(f, "offset_keys") else f.keys()
            infos = []
            for k in keys:
                s = f.get_slice(k)
                infos.append((k, s.get_dtype(), tuple(s.get_shape())))
    except FileNotFoundError:
        raise BurnError(f"state file {path!r} does not exist") from None
    except OSError as e:
        raise BurnError(f"cannot read state file {path!r}: {e.strerror or e}") from None
    except Exception as e:   # SafetensorError, and whatever else the Rust reader raises
        raise _invalid(path, size, e) from None
    return meta, infos


def _read_once(path: str):
    import safetensors
    with _open(path) as f:
        size = os.fstat(f.fileno()).st_size
        meta, infos = _header(path, size)
        try:
            raw = f.read()
        except OSError as e:
            raise BurnError(f"cannot read state file {path!r}: {e.strerror or e}") from None
    try:
        tensors = dict(safetensors.deserialize(raw))
    except Exception as e:
        raise _invalid(path, len(raw), e) from None
    return meta, infos, tensors


def _read_arrays(path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Every tensor of a file as a host array, and the metadata."""
    path = os.fspath(path)
    # the header comes from safe_open, the bytes from a second read: a save renaming a new
    # file over this one in between would pair one file's metadata with the other's tensors
    for _ in range(3):
        meta, infos, tensors = _read_once(path)
        if sorted(tensors) == sorted(k for k, _, _ in infos) and all(
                tensors[k]["dtype"] == tag and tuple(tensors[k]["shape"]) == shape for k, tag, shape in infos):
            break
    else:
        raise BurnError(f"state file {path!r} kept changing while it was read; retry once the writer is done")
    for name, tag, _ in infos:
        if tag not in _FROM_TAG and tag not in _WIDEN:
            raise BurnError(f"state file {path!r}: tensor '{name}' has dtype {tag!r}, which burn cannot load "
                            f"(supported: {', '.join(sorted(_FROM_TAG))}, and I16/U16/U32 widened)")
    try:
        names = json.loads(meta.get(_DTYPES_KEY, "{}"))
    except json.JSONDecodeError:
        names = {}
    names = names if isinstance(names, dict) else {}
    out = {}
    for name, tag, shape in infos:
        data = tensors.pop(name)["data"]
        if tag in _WIDEN:
            arr = np.frombuffer(data, _WIDEN[tag][0]).astype(_WIDEN[tag][1])
        elif names.get(name) == "complex128" and tag == "F64" and shape[-1:] == (2,):
            arr, shape = np.frombuffer(data, "<c16"), shape[:-1]
        else:
            arr = np.frombuffer(data, _np_dtype(_FROM_TAG[tag]))
        # older releases hand out read-only bytes, newer ones writable bytearrays
        out[name] = (arr if arr.flags.writeable else arr.copy()).reshape(shape)
    # burn's files: the saved order; others: the data order, which is the header's for
    # files the reference writer made
    order = [k for k in names if k in out] + [k for k in out if k not in names]
    return {k: out[k] for k in order}, meta


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
    arrays, _ = _read_arrays(path)
    arrays = _apply_mapping(arrays, mapping)
    device = _device(device)
    return {k: _from_host(a, dt.as_dtype(a.dtype), device, "load_state_dict") for k, a in arrays.items()}


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
    with _open(path) as f:   # burn's own messages for a missing file or a directory
        return _header(path, os.fstat(f.fileno()).st_size)[0]


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
    modules = dict(module.named_modules())
    out = {}
    for path in module.state_dict():
        parts = path.split(".")
        # a module with ``_torch_flat = "layers"`` (Sequential) has that segment dropped
        keep = [p for i, p in enumerate(parts) if getattr(modules.get(".".join(parts[:i])), "_torch_flat", None) != p]
        out[path] = ".".join(keep)
    return out


def _unpack_packed(module, names, arrays) -> set:
    """Add burn-named entries to ``arrays`` from torch tensors that pack several of burn's
    (each layer that has some says so with a ``_torch_unpack`` method, e.g.
    MultiHeadAttention); returns the packed names consumed."""
    used = set()
    for path, m in module.named_modules():
        unpack = getattr(m, "_torch_unpack", None)
        if unpack is not None:
            used |= unpack(path, names, arrays)
    return used


def load_torch_state(module, path, *, strict: bool = True):
    """Load a safetensors state dict written by PyTorch for the same architecture.

    The mapping: names come from :func:`torch_names` (``Sequential`` indices
    without the ``layers`` segment), and the ``weight`` of every burn
    ``Linear`` is transposed, since torch stores ``[out, in]`` and burn
    ``[in, out]``. A :class:`~burn.nn.MultiHeadAttention` reads torch's packed
    ``in_proj_weight`` / ``in_proj_bias`` (or ``q/k/v_proj_weight`` when key and
    value sizes differ) into its ``q_proj``, ``k_proj`` and ``v_proj``. Other
    tensors (biases, norms, embeddings) are taken as stored. Names, shapes and
    dtypes are then checked as in :func:`load_into`. This is
    ``module.load_torch_state(path)``.

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "t.safetensors")
        >>> burn.nn.save_state_dict({"0.weight": burn.ones((3, 2)), "0.bias": burn.zeros((3,))}, p)
        >>> m = burn.nn.Sequential(burn.nn.Linear(2, 3)).load_torch_state(p)
        >>> assert m.layers[0].weight.shape == (2, 3) and m.layers[0].weight.numpy().sum() == 6
    """
    names = torch_names(module)
    # what torch stores transposed: the names a layer lists in ``_torch_transposed`` (Linear's weight)
    linear_weights = {f"{p}.{n}" if p else n for p, m in module.named_modules()
                      for n in getattr(m, "_torch_transposed", ())}
    arrays, _ = _read_arrays(path)
    arrays = dict(arrays)
    used = _unpack_packed(module, names, arrays)
    state = {}
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
