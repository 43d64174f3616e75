"""Checkpoint directories: everything a fit needs to continue bit-exactly.

``checkpoint_dir/epoch-0003/`` (after 3 epochs) or, with the Learner's
``checkpoint_every``, ``checkpoint_dir/epoch-0003-step-000050/`` (after 3
epochs and 50 batches of the 4th) holds

- ``model.safetensors``: the model's state (loadable alone with ``Module.load``);
- ``optimizer.safetensors``: optimizer state and the scheduler's position
  (``burn.optim.save``);
- ``learner.json``: epoch and step counts, the history, early-stopping state,
  the random streams (each device's seed and counter, the data loaders'
  seeds and epochs, numpy's and Python's global generators and any numpy
  Generators handed to the Learner) and the SHA-256 of both files.

A checkpoint appears whole or not at all: it is written into a hidden
temporary directory next to its final place, every file is fsynced, and the
directory is renamed into place. Loading checks the checksums first, so a
truncated or altered file is a :class:`burn.BurnError` naming it, not a
silently different run.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil

import numpy as np

from ..errors import BurnError
from ..nn.state import fsync_dir
from ..graph import graph_for

__all__ = ["list_checkpoints", "latest_checkpoint", "write_checkpoint_dir", "read_checkpoint_meta",
           "capture_rng", "restore_rng"]

FORMAT = "burn.train/1"
META = "learner.json"
MODEL = "model.safetensors"
OPTIM = "optimizer.safetensors"
_NAME = re.compile(r"^epoch-(\d+)(?:-step-(\d+))?$")


def checkpoint_name(epoch: int, step: int = 0) -> str:
    """``epoch-XXXX`` after ``epoch`` whole epochs, ``epoch-XXXX-step-YYYYYY`` ``step`` batches later."""
    return f"epoch-{epoch:04d}" + (f"-step-{step:06d}" if step else "")


def list_checkpoints(directory) -> list[str]:
    """Complete checkpoint directories under ``directory``, oldest epoch first.

    Example:
        >>> import burn, tempfile, os
        >>> d = tempfile.mkdtemp()
        >>> for n in ("epoch-0002", "epoch-0010", ".epoch-0011.tmp-1", "other"):
        ...     os.mkdir(os.path.join(d, n))
        >>> assert [os.path.basename(p) for p in burn.train.list_checkpoints(d)] == ["epoch-0002", "epoch-0010"]
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        return []
    found = []
    for name in os.listdir(directory):
        m = _NAME.match(name)
        if m and os.path.isdir(os.path.join(directory, name)):
            found.append((int(m.group(1)), int(m.group(2) or 0), os.path.join(directory, name)))
    return [p for _, _, p in sorted(found)]


def latest_checkpoint(directory) -> str | None:
    """The newest checkpoint under ``directory`` (or ``directory`` itself if it is one), or None.

    Example:
        >>> import burn, tempfile
        >>> assert burn.train.latest_checkpoint(tempfile.mkdtemp()) is None
    """
    directory = os.fspath(directory)
    if os.path.isfile(os.path.join(directory, META)):
        return directory
    found = list_checkpoints(directory)
    return found[-1] if found else None


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_checkpoint_dir(directory, epoch: int, write_files, meta: dict, keep_last: int | None,
                         step: int = 0) -> str:
    """Write checkpoint ``epoch`` (``step`` batches into the next epoch) atomically and prune to
    the newest ``keep_last``; returns its path.

    ``write_files(tmp_dir)`` writes the state files into the temporary
    directory; ``meta`` (JSON-able) becomes ``learner.json`` together with
    the files' checksums.

    Example:
        >>> import os, tempfile
        >>> from burn.train.checkpoint import write_checkpoint_dir, read_checkpoint_meta
        >>> def files(tmp):
        ...     for name in ("model.safetensors", "optimizer.safetensors"):
        ...         with open(os.path.join(tmp, name), "wb") as f:
        ...             f.write(b"...")
        >>> root = tempfile.mkdtemp()
        >>> _ = write_checkpoint_dir(root, 1, files, {"epoch": 1}, keep_last=1)
        >>> path = write_checkpoint_dir(root, 2, files, {"epoch": 2}, keep_last=1)
        >>> assert os.listdir(root) == [os.path.basename(path)] and read_checkpoint_meta(path)["epoch"] == 2
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    final = os.path.join(directory, checkpoint_name(epoch, step))
    tmp = os.path.join(directory, f".{checkpoint_name(epoch, step)}.tmp-{os.getpid()}-{os.urandom(4).hex()}")
    os.mkdir(tmp)
    try:
        write_files(tmp)
        files = sorted(n for n in os.listdir(tmp) if not n.startswith("."))
        meta = dict(meta, format=FORMAT, files={n: _sha256(os.path.join(tmp, n)) for n in files})
        with open(os.path.join(tmp, META), "w") as f:
            json.dump(meta, f)
            f.flush()
            os.fsync(f.fileno())
        fsync_dir(tmp)
        if os.path.exists(final):   # a re-run over an old checkpoint of the same epoch: swap it out
            old = os.path.join(directory, f".{checkpoint_name(epoch, step)}.old-{os.urandom(4).hex()}")
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, final)
        fsync_dir(directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if keep_last:
        for old in list_checkpoints(directory)[:-keep_last]:
            shutil.rmtree(old, ignore_errors=True)
    return final


def read_checkpoint_meta(path: str) -> dict:
    """``learner.json`` of checkpoint ``path``, after checking every file against its checksum.

    A missing or corrupted file raises a BurnError that names it.

    Example:
        >>> import os, tempfile, burn
        >>> from burn.train.checkpoint import write_checkpoint_dir, read_checkpoint_meta
        >>> def files(tmp):
        ...     for name in ("model.safetensors", "optimizer.safetensors"):
        ...         with open(os.path.join(tmp, name), "wb") as f:
        ...             f.write(b"...")
        >>> path = write_checkpoint_dir(tempfile.mkdtemp(), 3, files, {"epoch": 3}, keep_last=None)
        >>> assert read_checkpoint_meta(path)["epoch"] == 3
        >>> with open(os.path.join(path, "model.safetensors"), "ab") as f:
        ...     _ = f.write(b"tampered")
        >>> try:
        ...     read_checkpoint_meta(path)
        ... except burn.BurnError as e:
        ...     assert "corrupted" in str(e)
    """
    meta_path = os.path.join(path, META)
    if not os.path.isfile(meta_path):
        raise BurnError(f"checkpoint {path!r} is incomplete or not a checkpoint: it has no {META}")
    try:
        with open(meta_path) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise BurnError(f"checkpoint {path!r}: {META} is unreadable or corrupted ({e}); resume from an "
                        f"earlier checkpoint (Learner.resume(<checkpoint_dir>/epoch-XXXX))") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise BurnError(f"checkpoint {path!r}: {META} has format {got!r}, expected {FORMAT!r}")
    for name in (MODEL, OPTIM):
        if name not in meta.get("files", {}):
            raise BurnError(f"checkpoint {path!r}: {META} lists no {name}")
    for name, digest in meta["files"].items():
        fp = os.path.join(path, name)
        if not os.path.isfile(fp):
            raise BurnError(f"checkpoint {path!r}: {name} is missing")
        if _sha256(fp) != digest:
            raise BurnError(f"checkpoint {path!r}: {name} is corrupted (its SHA-256 differs from the one "
                            f"recorded when it was saved); resume from an earlier checkpoint "
                            f"(Learner.resume(<checkpoint_dir>/epoch-XXXX))")
    return meta


# -- random streams ------------------------------------------------------------------------

def _json_int_tree(x):
    if isinstance(x, dict):
        return {k: _json_int_tree(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_int_tree(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


def capture_rng(devices, loaders: dict, generators: dict) -> dict:
    """Every random stream a fit can draw from, as JSON-able data.

    Example:
        >>> import burn
        >>> dev = burn.Device.flex()
        >>> dev.seed(3); _ = burn.rand((2,), device=dev)
        >>> state = burn.train.capture_rng([dev], {}, {})
        >>> a = burn.rand((2,), device=dev).tolist()
        >>> burn.train.restore_rng(state, [dev], {}, {})
        >>> assert burn.rand((2,), device=dev).tolist() == a
    """
    devs = {}
    for d in devices:
        g = graph_for(d)
        devs[f"{d.kind}:{d.index}"] = {"seed": int(g.rng_seed), "counter": int(g.rng_counter)}
    return {
        "devices": devs,
        "loaders": {name: {"seed": int(dl.seed), "epoch": int(dl.epoch)} for name, dl in loaders.items()
                    if hasattr(dl, "seed") and hasattr(dl, "epoch")},
        **capture_host_rng(np.random.get_state(legacy=False), random.getstate()),
        "generators": {name: _json_int_tree(g.bit_generator.state) for name, g in generators.items()},
    }


def capture_host_rng(numpy_state, python_state) -> dict:
    """numpy's and Python's global generator states (as ``np.random.get_state(legacy=False)`` and
    ``random.getstate()`` give them) in the JSON-able form :func:`capture_rng` records.

    Example:
        >>> import random, numpy as np
        >>> from burn.train.checkpoint import capture_host_rng
        >>> s = capture_host_rng(np.random.get_state(legacy=False), random.getstate())
        >>> assert sorted(s) == ["numpy_global", "python_random"]
    """
    return {"numpy_global": _json_int_tree(numpy_state), "python_random": _json_int_tree(python_state)}


def restore_rng(state: dict, devices, loaders: dict, generators: dict) -> None:
    """Put back what :func:`capture_rng` recorded (devices by kind and index, loaders and generators by name).

    A resumed fit uses it so its random draws continue as in an uninterrupted run.

    Example:
        >>> import burn, numpy as np
        >>> gen = np.random.default_rng(0)
        >>> state = burn.train.capture_rng([], {}, {"gen": gen})
        >>> a = gen.random()
        >>> burn.train.restore_rng(state, [], {}, {"gen": gen})
        >>> assert gen.random() == a
    """
    for d in devices:
        s = state["devices"].get(f"{d.kind}:{d.index}")
        if s is not None:
            g = graph_for(d)
            g.seed(s["seed"])   # flushes pending work drawn from the old stream first
            g.rng_counter = s["counter"]
    for name, dl in loaders.items():
        s = state["loaders"].get(name)
        if s is not None and hasattr(dl, "seed"):
            dl.seed = s["seed"]
            dl.set_epoch(s["epoch"])
    ns = state["numpy_global"]
    ns = dict(ns, state={"key": np.asarray(ns["state"]["key"], dtype=np.uint32), "pos": ns["state"]["pos"]})
    np.random.set_state(ns)
    v, internal, gauss = state["python_random"]
    random.setstate((v, tuple(internal), gauss))
    for name, g in generators.items():
        if name not in state["generators"]:
            raise BurnError(f"checkpoint has no state for the numpy Generator {name!r} "
                            f"(saved: {sorted(state['generators'])})")
        g.bit_generator.state = state["generators"][name]
