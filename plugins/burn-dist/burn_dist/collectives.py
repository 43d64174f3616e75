"""Collectives on burn tensors, as ops of the lazy graph.

Each collective is a ``burn.backend_extension`` op (``dist::all_reduce``, ``dist::broadcast``,
``dist::all_gather``, ``dist::reduce_scatter``): recorded like any op, run when the graph runs,
and recorded by ``burn.capture`` like any op, so a captured training step exchanges its
gradients at every replay instead of baking one exchange's result in as a constant. The
kernel of a flex tensor hands its numpy array to the communicator; a cuda tensor's kernel
uses NCCL when the communicator is an :class:`~burn_dist.nccl.NCCLCommunicator`, else a
host copy; any other backend (wgpu) runs the reference definition, which moves the tensor
to the host (flex), runs the collective there and moves the result back.

The public functions: :func:`all_reduce` and :func:`broadcast` update their tensor in place
(``assign_``) and return it; :func:`all_gather` and :func:`reduce_scatter` return new tensors.

Copies: MPI's out-of-place ``Allreduce(src, dst)`` copies ``src`` into ``dst`` before reducing
(0.7x the in-place bandwidth at 4 and 64 MB here), and a fresh ``dst`` of 32 MB or more is
fresh pages to fault in. So :func:`all_reduce` on a flex tensor whose buffer nobody else can
see (:func:`_donatable`: a computed value, one numpy array owning its memory, referenced by
this tensor's handle only, the handle by this tensor only, no views) *donates* it: the op
reduces that buffer in place (``MPI.IN_PLACE``) and it becomes the result. Any other tensor
(shared with another tensor, a view, a numpy array the user holds, pending in the graph, a
trace of ``burn.capture`` in progress) takes the out-of-place kernel, so a collective never
writes into a value someone else still holds.

Example:
    >>> import burn, burn_dist
    >>> t = burn.tensor([1.0, 2.0])
    >>> _ = burn_dist.all_reduce(t, op="sum")
    >>> assert t.tolist() == [1.0 * burn_dist.world_size(), 2.0 * burn_dist.world_size()]
"""
from __future__ import annotations

import sys

import numpy as np

import burn
from burn import BurnError, Tensor, TensorMeta
from burn.bridge import TRACE

from . import runtime
from .comm import check_op

__all__ = ["all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier", "all_reduce_many",
           "register_group", "group_communicator"]

_GROUPS: dict = {}     # small int -> communicator: the ops' attribute (hashable, cheap in call signatures)


def register_group(comm) -> int:
    """A small integer naming ``comm`` in the ops' arguments (``group=`` of every function here).

    Example:
        >>> import burn_dist
        >>> from burn_dist.collectives import register_group, group_communicator
        >>> g = register_group(burn_dist.init())
        >>> assert group_communicator(g) is burn_dist.init() and register_group(burn_dist.init()) == g
    """
    for key, c in _GROUPS.items():
        if c is comm:
            return key
    key = len(_GROUPS) + 1
    _GROUPS[key] = comm
    return key


def group_communicator(group: int):
    """The communicator a group number names (0: the default one).

    Example:
        >>> import burn_dist
        >>> from burn_dist.collectives import group_communicator
        >>> assert group_communicator(0) is burn_dist.communicator()
    """
    if group == 0:
        return runtime.communicator()
    try:
        return _GROUPS[group]
    except KeyError:
        raise BurnError(f"burn.dist: unknown communicator group {group!r}; get one from register_group(comm)") from None


def _group_of(comm) -> int:
    return 0 if comm is None else register_group(comm)


def _flex(x=None):
    if x is not None and x.device.kind == "flex":      # the flex kernel itself is missing: never recurse
        raise BurnError("burn.dist: the dist::* ops' flex kernels are not registered (is burn-flex disabled?)")
    return burn.Device.flex()


# -- the ops ---------------------------------------------------------------------------------
@burn.backend_extension("dist::all_reduce")
def _all_reduce_op(*xs, op="sum", group=0, check=True, presence=(), donate=False):
    """Reference: through the host (flex) for backends without a kernel (wgpu)."""
    host = [x.to_device(_flex(x)) for x in xs]
    outs = _all_reduce_op(*host, op=op, group=group, check=check, presence=presence)
    outs = outs if isinstance(outs, tuple) else (outs,)
    res = tuple(o.to_device(x.device) for o, x in zip(outs, xs))
    return res if len(res) > 1 else res[0]


@_all_reduce_op.meta
def _(*xs, op="sum", group=0, check=True, presence=(), donate=False):
    dt = xs[0].dtype
    for i, x in enumerate(xs):
        if x.dtype != dt:
            raise BurnError(f"burn.dist.all_reduce: every tensor of one call must have one dtype, got {dt.name} "
                            f"and {x.dtype.name} (tensor {i}); reduce them in separate calls")
    check_op(op, _np_dtype(dt), "all_reduce")
    metas = tuple(TensorMeta(x.shape, x.dtype) for x in xs)
    return metas if len(metas) > 1 else metas[0]


@_all_reduce_op.backward
def _(ctx, *grads):
    raise BurnError("burn.dist.all_reduce: no gradient through a collective; reduce gradients after "
                    "backward() (burn.dist.DataParallel does) instead of differentiating through one")


@_all_reduce_op.kernel("flex")
def _flex_all_reduce(*xs, op="sum", group=0, check=True, presence=(), donate=False):
    """Several tensors are packed into one host buffer: one collective per call (a bucket).
    ``check=False`` skips the metadata exchange (DataParallel sends the same sizes on every rank);
    ``presence``: the last tensor holds one 0/1 flag per name, checked after the mean;
    ``donate``: the one input's buffer is this op's alone (:func:`all_reduce` checked it when it
    recorded the op): reduced in place and returned, no copy."""
    comm = group_communicator(group)
    if len(xs) == 1:
        x = xs[0]
        if donate:
            comm.all_reduce(x, op, check=check)
            return x
        out = np.empty(x.shape, x.dtype)
        comm.all_reduce(np.ascontiguousarray(x), op, out=out, check=check)
        return out
    sizes = [x.size for x in xs]
    flat = np.concatenate([np.ravel(x) for x in xs])
    comm.all_reduce(flat, op, check=check)
    if presence:
        check_presence(flat[flat.size - len(presence):], presence, comm)
    outs, at = [], 0
    for x, n in zip(xs, sizes):
        outs.append(flat[at:at + n].reshape(x.shape))
        at += n
    return tuple(outs)


def check_presence(flags, names, comm) -> None:
    """Raise on every rank (they all hold the same averaged flags) if a flag is neither 0 nor 1.

    Example:
        >>> import numpy as np, burn_dist
        >>> from burn_dist.collectives import check_presence
        >>> check_presence(np.array([1.0, 0.0]), ("a", "b"), burn_dist.communicator())
    """
    flags = np.asarray(flags, np.float64)
    bad = [(n, f) for n, f in zip(names, flags) if not (f == 0.0 or f == 1.0)]
    if bad:
        which = ", ".join(f"{n!r} (on {f * comm.world_size:.0f} of {comm.world_size} ranks)" for n, f in bad)
        raise BurnError(f"burn.dist.DataParallel: parameter(s) {which} got a gradient on some ranks only; every "
                        f"rank must use the same parameters in its step (use a parameter on every rank or freeze "
                        f"it on every rank; rank {comm.rank} raises this)")


@burn.backend_extension("dist::broadcast")
def _broadcast_op(x, root=0, group=0, check=True):
    """Reference: through the host (flex)."""
    return _broadcast_op(x.to_device(_flex(x)), root=root, group=group, check=check).to_device(x.device)


@_broadcast_op.meta
def _(x, root=0, group=0, check=True):
    return TensorMeta(x.shape, x.dtype)


@_broadcast_op.kernel("flex")
def _flex_broadcast(x, root=0, group=0, check=True):
    out = np.array(x, copy=True, order="C")
    group_communicator(group).broadcast(out, root, check=check)
    return out


@burn.backend_extension("dist::all_gather")
def _all_gather_op(x, world=1, group=0):
    """Reference: through the host (flex)."""
    return _all_gather_op(x.to_device(_flex(x)), world=world, group=group).to_device(x.device)


@_all_gather_op.meta
def _(x, world=1, group=0):
    return TensorMeta((world,) + tuple(x.shape), x.dtype)


@_all_gather_op.kernel("flex")
def _flex_all_gather(x, world=1, group=0):
    return group_communicator(group).all_gather(np.ascontiguousarray(x))


@burn.backend_extension("dist::reduce_scatter")
def _reduce_scatter_op(x, op="sum", group=0):
    """Reference: through the host (flex)."""
    return _reduce_scatter_op(x.to_device(_flex(x)), op=op, group=group).to_device(x.device)


@_reduce_scatter_op.meta
def _(x, op="sum", group=0):
    check_op(op, _np_dtype(x.dtype), "reduce_scatter")
    return TensorMeta(tuple(x.shape[1:]), x.dtype)


@_reduce_scatter_op.kernel("flex")
def _flex_reduce_scatter(x, op="sum", group=0):
    return group_communicator(group).reduce_scatter(np.ascontiguousarray(x), op)


def _np_dtype(dt):
    if dt.name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    if dt.name == "bool_" or dt.name == "bool":
        return np.dtype(np.bool_)
    return np.dtype(dt.name)


# -- the public functions --------------------------------------------------------------------
def _tensor(t, where):
    if not isinstance(t, Tensor):
        raise BurnError(f"burn.dist.{where}: expected a burn Tensor, got {type(t).__name__}; host arrays go "
                        f"to burn.dist.communicator().{where}(array)")
    return t


def all_reduce(t: Tensor, op: str = "sum", *, comm=None) -> Tensor:
    """Reduce ``t`` over every rank, in place (``op``: sum, mean, prod, max, min); returns ``t``.

    Example:
        >>> import burn, burn_dist
        >>> t = burn.tensor([3.0])
        >>> assert burn_dist.all_reduce(t, "mean") is t and t.tolist() == [3.0]
    """
    _tensor(t, "all_reduce")
    g = _group_of(comm)
    if group_communicator(g).world_size == 1:
        check_op(op, _np_dtype(t.dtype), "all_reduce")
        return t
    kwargs = {"donate": True} if _donatable(t) else {}
    with burn.no_grad():
        return t.assign_(_all_reduce_op(t.detach(), op=op, group=g, **kwargs))


class _Holder:
    __slots__ = ("_h", "data")


def _count_refs(t) -> tuple[int, int]:
    """(references to ``t``'s handle, references to the handle's array), as counted from here."""
    h = t._h
    data = h.data
    return sys.getrefcount(h), sys.getrefcount(data)


def _baseline_refs() -> tuple[int, int]:
    """What :func:`_count_refs` counts when one object holds the handle and the handle alone
    holds its array (measured, not assumed: the count of a call's own references differs
    between Python versions)."""
    holder, handle = _Holder(), _Holder()
    handle.data = np.empty(1)
    holder._h = handle
    del handle
    return _count_refs(holder)


_UNIQUE_REFS = _baseline_refs()


def _donatable(t: Tensor) -> bool:
    """Whether ``t``'s buffer can be reduced in place: nothing but ``t`` can ever read it again.

    True only for a flex tensor outside a trace whose handle is computed (not pending in the
    graph, which would hold it), held by ``t`` alone (no other tensor, no autodiff record), and
    whose numpy array owns its memory (not a view of another array), is writeable, C-contiguous
    and held by that handle alone (no numpy array, view or DLPack capsule of the user's).

    Example:
        >>> import numpy as np, burn
        >>> from burn_dist.collectives import _donatable
        >>> t = burn.tensor([1.0, 2.0]) + 1
        >>> t.device.sync()
        >>> assert _donatable(t)
        >>> u = t.detach()                      # another tensor shares the value
        >>> assert not _donatable(t)
    """
    if TRACE[0] is not None or t.device.kind != "flex":
        return False
    if getattr(t, "_vbase", None) is not None or any(r() is not None for r in (getattr(t, "_views", None) or ())):
        return False
    h = t._h
    data = h.data
    if h.node is not None or type(data) is not np.ndarray:
        return False
    if data.base is not None or not data.flags.owndata or not data.flags.writeable or not data.flags.c_contiguous:
        return False
    del h, data
    return _count_refs(t) == _UNIQUE_REFS


def all_reduce_many(tensors, op: str = "sum", *, comm=None, check: bool = True, presence: tuple = ()) -> tuple:
    """Reduce several tensors of one dtype with ONE collective (packed into one buffer); new tensors.

    ``check=False`` skips the metadata exchange: only for callers that know every rank sends
    the same shapes (DataParallel compares its models at creation and its gradients each step).

    Example:
        >>> import burn, burn_dist
        >>> a, b = burn_dist.all_reduce_many([burn.ones((2,)), burn.zeros((3,))], "mean")
        >>> assert a.tolist() == [1.0, 1.0] and b.shape == (3,)
    """
    ts = [_tensor(t, "all_reduce_many") for t in tensors]
    if not ts:
        return ()
    kwargs = {"presence": tuple(presence)} if presence else {}
    out = _all_reduce_op(*ts, op=op, group=_group_of(comm), check=bool(check), **kwargs)
    return out if isinstance(out, tuple) else (out,)


def broadcast(t: Tensor, root: int = 0, *, comm=None, check: bool = True) -> Tensor:
    """Overwrite ``t`` on every rank with rank ``root``'s value, in place; returns ``t``.

    ``check=False`` skips the metadata exchange: only for callers that know every rank sends
    the same shape and dtype (DataParallel's buffers, compared at its creation).

    Example:
        >>> import burn, burn_dist
        >>> t = burn.tensor([1, 2])
        >>> assert burn_dist.broadcast(t, root=0).tolist() == [1, 2]
    """
    _tensor(t, "broadcast")
    g = _group_of(comm)
    group_communicator(g)._check_root(root, "broadcast")
    with burn.no_grad():
        kwargs = {} if check else {"check": False}
        return t.assign_(_broadcast_op(t.detach(), root=int(root), group=g, **kwargs))


def all_gather(t: Tensor, *, comm=None) -> Tensor:
    """Every rank's ``t`` stacked along a new first axis: shape ``(world_size, *t.shape)``.

    Example:
        >>> import burn, burn_dist
        >>> out = burn_dist.all_gather(burn.tensor([5.0]))
        >>> assert out.shape == (burn_dist.world_size(), 1)
    """
    _tensor(t, "all_gather")
    g = _group_of(comm)
    with burn.no_grad():
        return _all_gather_op(t.detach(), world=group_communicator(g).world_size, group=g)


def reduce_scatter(t: Tensor, op: str = "sum", *, comm=None) -> Tensor:
    """Reduce ``t`` (first axis: one block per rank) over the ranks; this rank's block ``t[rank]``.

    Example:
        >>> import burn, burn_dist
        >>> t = burn.ones((burn_dist.world_size(), 2))
        >>> assert burn_dist.reduce_scatter(t).tolist() == [float(burn_dist.world_size())] * 2
    """
    _tensor(t, "reduce_scatter")
    g = _group_of(comm)
    w = group_communicator(g).world_size
    if t.ndim == 0 or t.shape[0] != w:
        raise BurnError(f"burn.dist.reduce_scatter: the first axis must be the world size {w} (one block per "
                        f"rank), got shape {tuple(t.shape)}")
    with burn.no_grad():
        return _reduce_scatter_op(t.detach(), op=op, group=g)


def barrier(*, comm=None) -> None:
    """Wait until every rank got here (pending work of this process is not flushed).

    Example:
        >>> import burn_dist
        >>> burn_dist.barrier()
    """
    group_communicator(_group_of(comm)).barrier()


from . import cuda_kernels  # noqa: E402,F401  (registers the cuda kernels of the ops above)
