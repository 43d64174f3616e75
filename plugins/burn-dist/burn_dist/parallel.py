"""``DataParallel(model)``: the same model on every rank, gradients averaged over the ranks.

At creation every rank checks that the models agree (parameter and buffer paths, shapes,
dtypes, which parameters are frozen): a difference is a :class:`burn.BurnError` on every rank
naming the first tensor that differs, the ranks and both shapes. Then rank 0's parameters and
buffers are broadcast, so every rank starts from the same values whatever its seed.

After ``backward()``, :meth:`DataParallel.average_gradients` (or :meth:`DataParallel.backward`)
averages the gradients of the trainable parameters: packed into buckets of about
``bucket_mb`` megabytes (one dtype and device each, the last layers first), one collective
per bucket (``dist::all_reduce`` with ``op="mean"``, an op of the lazy graph: it runs when the
step's graph runs, and a ``burn.capture``'d step records it and runs it at every replay).
Frozen parameters (a LoRA base) are not exchanged. Optimizer groups, gradient clipping (which
the optimizer applies to the gradients it is given: after averaging) and schedulers work
unchanged, because the optimizer simply gets the averaged gradients.

Buffers (BatchNorm's running statistics), which every rank updates from its own batch, follow
PyTorch DDP's ``broadcast_buffers=True`` (the default): each forward that records gradients
(``burn.is_grad_enabled()``, a training step) first broadcasts rank 0's buffers to every rank
(one collective per buffer dtype, packed), so every rank normalizes with rank 0's statistics
and a checkpoint from rank 0 holds them. Forwards under ``burn.no_grad()`` (evaluation) exchange
nothing, so a rank may evaluate alone. ``broadcast_buffers=False``: each rank keeps its own.

A parameter must get a gradient on every rank or on none: a bucket always carries every
parameter it plans for (zeros where a rank has no gradient) plus one presence flag each, so
the ranks always exchange the same sizes (never a hang) and a parameter with a gradient on
some ranks only is an error on every rank, naming it. Each step costs one collective per
bucket and nothing else.

Example:
    >>> import burn, burn_dist
    >>> dev = burn.Device.flex().autodiff()
    >>> model = burn_dist.DataParallel(burn.nn.Linear(3, 2, device=dev))
    >>> opt = burn.optim.Adam(model, lr=1e-2)
    >>> x = burn.ones((4, 3), device=dev)
    >>> opt.step(model.backward(model(x).sum()))
    >>> assert [n for n, _ in model.named_parameters()] == ["weight", "bias"]
"""
from __future__ import annotations

import json

import numpy as np

import burn
from burn import BurnError, Gradients
from burn.nn import Module

from . import collectives, runtime

__all__ = ["DataParallel", "check_same_model", "gather_bytes"]

_MB = 1024 * 1024


def gather_bytes(comm, data: bytes) -> list[bytes]:
    """Every rank's ``data`` (any length), through two all-gathers on host buffers.

    Example:
        >>> import burn_dist
        >>> from burn_dist.parallel import gather_bytes
        >>> assert gather_bytes(burn_dist.communicator(), b"abc")[burn_dist.rank()] == b"abc"
    """
    sizes = comm.all_gather(np.array([len(data)], np.int64))[:, 0]
    buf = np.zeros(int(sizes.max()) if len(sizes) else 0, np.uint8)
    buf[:len(data)] = np.frombuffer(data, np.uint8)
    every = comm.all_gather(buf)
    return [every[r, :int(n)].tobytes() for r, n in enumerate(sizes)]


def _describe(module) -> list:
    rows = [["parameter", path, list(p.shape), p.dtype.name, bool(getattr(p, "frozen", False))]
            for path, p in module.named_parameters()]
    rows += [["buffer", path, list(b.shape), b.dtype.name, False] for path, b in module.named_buffers()]
    return rows


def check_same_model(module, comm=None) -> None:
    """Raise a BurnError on every rank if the ranks' models differ in any parameter or buffer
    (path, shape, dtype, frozen), naming the first difference.

    Example:
        >>> import burn, burn_dist
        >>> burn_dist.parallel.check_same_model(burn.nn.Linear(2, 2))
    """
    comm = comm if comm is not None else runtime.communicator()
    if comm.world_size == 1:
        return
    mine = _describe(module)
    every = [json.loads(b) for b in gather_bytes(comm, json.dumps(mine).encode())]
    ref = every[0]
    for r, rows in enumerate(every[1:], 1):
        if rows == ref:
            continue
        for i in range(max(len(rows), len(ref))):
            a = ref[i] if i < len(ref) else None
            b = rows[i] if i < len(rows) else None
            if a != b:
                what = (f"rank 0 has {_row(a)} where rank {r} has {_row(b)}")
                break
        raise BurnError(f"burn.dist.DataParallel: the ranks' models differ: {what} (entry {i}: rank 0 has "
                        f"{len(ref)} parameters and buffers, rank {r} {len(rows)}); build the same model on "
                        f"every rank (rank {comm.rank} raises this)")


def _row(row) -> str:
    if row is None:
        return "nothing"
    kind, path, shape, dtype, frozen = row
    return f"{kind} {path!r} {tuple(shape)} {dtype}{' (frozen)' if frozen else ''}"


class DataParallel(Module):
    """Wrap ``module`` for data-parallel training (see the module docstring).

    Args:
        module: the model (a ``burn.nn.Module``), built the same way on every rank.
        comm: the communicator (default: ``burn.dist.init()``'s).
        bucket_mb: the size of a gradient bucket in megabytes (one collective each).
        broadcast: copy rank 0's parameters and buffers to every rank now (default True).
        broadcast_buffers: before every forward that records gradients, copy rank 0's buffers
            to every rank (PyTorch DDP's default; see the module docstring).
        check_gradients: send, with each bucket, which of its parameters got a gradient on this rank
            (one number each), so that a parameter used on some ranks only is an error naming it;
            False: a missing gradient counts as zeros and every rank steps every trainable parameter.

    The wrapper is transparent: its parameters, buffers, ``state_dict`` and checkpoints have
    the wrapped model's paths (no ``module.`` prefix), ``model(x)`` calls the model, and other
    attributes are the model's.

    Example:
        >>> import burn, burn_dist
        >>> dev = burn.Device.flex().autodiff()
        >>> inner = burn.nn.Linear(2, 1, device=dev)
        >>> dp = burn_dist.DataParallel(inner, bucket_mb=1)
        >>> assert dp.weight is inner.weight and sorted(dp.state_dict()) == ["bias", "weight"]
    """

    def __init__(self, module, *, comm=None, bucket_mb: float = 25.0, broadcast: bool = True,
                 check_gradients: bool = True, broadcast_buffers: bool = True):
        if not isinstance(module, Module):
            raise BurnError(f"burn.dist.DataParallel: expected a burn.nn.Module, got {type(module).__name__}")
        if isinstance(bucket_mb, bool) or not isinstance(bucket_mb, (int, float)) or not bucket_mb > 0:
            raise BurnError(f"burn.dist.DataParallel: bucket_mb must be a number > 0 (megabytes), got {bucket_mb!r}")
        object.__setattr__(self, "module", module)
        object.__setattr__(self, "comm", comm if comm is not None else runtime.communicator())
        object.__setattr__(self, "bucket_bytes", int(bucket_mb * _MB))
        object.__setattr__(self, "check_gradients", bool(check_gradients))
        object.__setattr__(self, "broadcast_buffers", bool(broadcast_buffers))
        object.__setattr__(self, "_group", collectives.register_group(self.comm))
        check_same_model(module, self.comm)
        if broadcast:
            self.broadcast_state()
        object.__setattr__(self, "buckets", self._plan())
        # where the buffers live, found once (walking the modules costs ~0.1 ms a forward); read
        # at every sync, so a buffer rebound by attribute (``bn.running_mean = t``) is still seen
        object.__setattr__(self, "_buffer_slots", [
            (m, name) for _, m in module.named_modules() for name, v in vars(m).items()
            if isinstance(v, burn.Tensor) and not isinstance(v, burn.nn.Parameter)])

    # -- transparency ---------------------------------------------------------------------
    def named_modules(self, prefix: str = ""):
        """The wrapped model's modules, with its own paths.

        Example:
            >>> import burn, burn_dist
            >>> dp = burn_dist.DataParallel(burn.nn.Sequential(burn.nn.Linear(2, 2)))
            >>> assert [n for n, _ in dp.named_modules()] == ["", "layers", "layers.0"]
        """
        return self.module.named_modules(prefix)

    def forward(self, *args, **kwargs):
        """Call the wrapped model (after :meth:`sync_buffers` when ``broadcast_buffers`` and
        gradients are recorded).

        Example:
            >>> import burn, burn_dist
            >>> dp = burn_dist.DataParallel(burn.nn.Linear(2, 3))
            >>> assert dp(burn.ones((1, 2))).shape == (1, 3)
        """
        if self.broadcast_buffers and burn.is_grad_enabled():
            self.sync_buffers()
        return self.module(*args, **kwargs)

    def sync_buffers(self, root: int = 0) -> None:
        """Overwrite every rank's buffers with rank ``root``'s: one broadcast per (dtype, device),
        the buffers packed into it (recorded in the lazy graph like any op; no metadata exchange:
        the models were compared at creation, and the buffers are those the model had then).

        Example:
            >>> import burn, burn_dist
            >>> dp = burn_dist.DataParallel(burn.nn.BatchNorm1d(3))
            >>> dp.sync_buffers()
            >>> assert dp.running_mean.tolist() == [0.0, 0.0, 0.0]
        """
        if self.comm.world_size == 1 or not self._buffer_slots:
            return
        groups: dict = {}
        for m, name in self._buffer_slots:
            b = vars(m).get(name)
            if isinstance(b, burn.Tensor):
                groups.setdefault((b.dtype.name, b.device), []).append(b)
        with burn.no_grad():
            for bufs in groups.values():
                if len(bufs) == 1:
                    collectives.broadcast(bufs[0], root, comm=self.comm, check=False)
                    continue
                packed = burn.concat([b.detach().reshape((-1,)) for b in bufs])
                collectives.broadcast(packed, root, comm=self.comm, check=False)
                at = 0
                for b in bufs:
                    b.assign_(packed[at:at + b.size].reshape(b.shape))
                    at += b.size

    def __getattr__(self, name):
        module = self.__dict__.get("module")
        if module is None:
            raise AttributeError(name)
        return getattr(module, name)

    def __setattr__(self, name, value):
        setattr(self.module, name, value)

    @property
    def training(self) -> bool:
        """The wrapped model's training mode.

        Example:
            >>> import burn, burn_dist
            >>> dp = burn_dist.DataParallel(burn.nn.Dropout(0.5))
            >>> assert not dp.eval().training and dp.train().training
        """
        return getattr(self.module, "training", True)

    def __repr__(self) -> str:
        return f"DataParallel(world_size={self.comm.world_size}, buckets={len(self.buckets)}, module={self.module!r})"

    # -- state ------------------------------------------------------------------------------
    def broadcast_state(self, root: int = 0) -> None:
        """Copy rank ``root``'s parameters and buffers to every rank (creation does it).

        Example:
            >>> import burn, burn_dist
            >>> dp = burn_dist.DataParallel(burn.nn.Linear(2, 2), broadcast=False)
            >>> dp.broadcast_state()
        """
        if self.comm.world_size == 1:
            return
        tensors = [t for _, t in self.module.named_parameters()] + [t for _, t in self.module.named_buffers()]
        for t in tensors:
            collectives.broadcast(t, root, comm=self.comm)
        for dev in {t.device for t in tensors}:
            dev.sync()

    def _plan(self) -> list[list]:
        """Buckets of trainable parameters: the last layers first (their gradients are ready first),
        one dtype and device per bucket, about ``bucket_bytes`` each."""
        buckets, current, size, key = [], [], 0, None
        for _, p in reversed(list(self.module.named_parameters())):
            if getattr(p, "frozen", False):
                continue
            k = (p.dtype.name, p.device)
            nbytes = p.size * p.dtype.itemsize
            if current and (k != key or size + nbytes > self.bucket_bytes):
                buckets.append(current)
                current, size = [], 0
            current.append(p)
            size += nbytes
            key = k
        if current:
            buckets.append(current)
        return buckets

    # -- gradients --------------------------------------------------------------------------
    def average_gradients(self, grads: Gradients) -> Gradients:
        """The gradients averaged over the ranks: a new :class:`burn.Gradients` (one collective per
        bucket; frozen parameters' and other tensors' gradients are passed through unchanged).

        Example:
            >>> import burn, burn_dist
            >>> dev = burn.Device.flex().autodiff()
            >>> dp = burn_dist.DataParallel(burn.nn.Linear(2, 1, device=dev))
            >>> g = dp.average_gradients(dp(burn.ones((1, 2), device=dev)).sum().backward())
            >>> assert dp.weight.grad(g).shape == (2, 1)
        """
        if not isinstance(grads, Gradients):
            raise BurnError(f"burn.dist.DataParallel.average_gradients: expected burn.Gradients from backward(), "
                            f"got {type(grads).__name__}")
        if self.comm.world_size == 1:
            return grads
        out = Gradients()
        for leaf, g in grads.items():
            out.set(leaf, g)
        names = self._names()
        with burn.no_grad():
            for bucket in self.buckets:
                got = [grads.get(p) for p in bucket]
                # every bucket always carries every parameter of the plan (zeros where this rank has no
                # gradient), so its size is the same on every rank: no hang, whatever the ranks computed
                sends = [g if g is not None else burn.zeros(p.shape, dtype=p.dtype, device=p.device)
                         for p, g in zip(bucket, got)]
                kwargs = {}
                if self.check_gradients:
                    # and one flag per parameter: after the mean, a flag strictly between 0 and 1 means
                    # some ranks had a gradient and others not, which the kernel reports on every rank
                    sends.append(burn.tensor([float(g is not None) for g in got], dtype=bucket[0].dtype,
                                             device=bucket[0].device))
                    kwargs["presence"] = tuple(names[id(p)] for p in bucket)
                averaged = collectives.all_reduce_many(sends, "mean", comm=self.comm, check=False, **kwargs)
                for p, g, a in zip(bucket, got, averaged):
                    if g is not None or not self.check_gradients:
                        out.set(p, a)
        return out

    def _names(self) -> dict:
        names = self.__dict__.get("_names_cache")
        if names is None:
            names = {id(p): n for n, p in self.module.named_parameters()}
            object.__setattr__(self, "_names_cache", names)
        return names

    def backward(self, loss, **kwargs) -> Gradients:
        """``loss.backward(**kwargs)`` with the gradients averaged over the ranks.

        Example:
            >>> import burn, burn_dist
            >>> dev = burn.Device.flex().autodiff()
            >>> dp = burn_dist.DataParallel(burn.nn.Linear(2, 1, device=dev))
            >>> grads = dp.backward(dp(burn.ones((3, 2), device=dev)).mean())
            >>> assert dp.bias.grad(grads).tolist() == [1.0]
        """
        return self.average_gradients(loss.backward(**kwargs))
