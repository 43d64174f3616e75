"""The ``dist::*`` ops' kernels for cuda tensors (CuPy arrays).

With an NCCL communicator (``device_arrays``) the CuPy arrays go to NCCL as they are; with
the MPI one they cross to the host (``burn_cuda.api.to_host``), take the flex path, and come
back (``burn_cuda.api.to_device``). CuPy and burn-cuda are imported only when a cuda tensor
meets a collective.

Example:
    >>> from burn_dist import cuda_kernels
    >>> assert cuda_kernels.BACKEND == "cuda"
"""
from __future__ import annotations

from . import collectives as C

__all__ = ["BACKEND"]

BACKEND = "cuda"


def _api():
    from burn_cuda import api
    return api


def _through_host(kernel, arrays, **kw):
    api = _api()
    out = kernel(*[api.to_host(a) for a in arrays], **kw)
    return tuple(api.to_device(o) for o in out) if isinstance(out, tuple) else api.to_device(out)


@C._all_reduce_op.kernel(BACKEND)
def _all_reduce(*xs, op="sum", group=0, check=True, presence=(), donate=False):
    comm = C.group_communicator(group)
    if not getattr(comm, "device_arrays", False):
        return _through_host(C._flex_all_reduce, xs, op=op, group=group, check=check, presence=presence)
    cp = _api().cupy()
    if len(xs) == 1:
        out = cp.empty(xs[0].shape, xs[0].dtype)
        comm.all_reduce(cp.ascontiguousarray(xs[0]), op, out=out, check=check)
        return out
    flat = cp.concatenate([cp.ravel(x) for x in xs])
    comm.all_reduce(flat, op, check=check)
    if presence:
        C.check_presence(_api().to_host(flat[flat.size - len(presence):], count=False), presence, comm)
    outs, at = [], 0
    for x in xs:
        outs.append(flat[at:at + x.size].reshape(x.shape))
        at += x.size
    return tuple(outs)


@C._broadcast_op.kernel(BACKEND)
def _broadcast(x, root=0, group=0, check=True):
    comm = C.group_communicator(group)
    if not getattr(comm, "device_arrays", False):
        return _through_host(C._flex_broadcast, (x,), root=root, group=group, check=check)
    out = _api().cupy().array(x, copy=True, order="C")
    comm.broadcast(out, root, check=check)
    return out


@C._all_gather_op.kernel(BACKEND)
def _all_gather(x, world=1, group=0):
    comm = C.group_communicator(group)
    if not getattr(comm, "device_arrays", False):
        return _through_host(C._flex_all_gather, (x,), world=world, group=group)
    return comm.all_gather(_api().cupy().ascontiguousarray(x))


@C._reduce_scatter_op.kernel(BACKEND)
def _reduce_scatter(x, op="sum", group=0):
    comm = C.group_communicator(group)
    if not getattr(comm, "device_arrays", False):
        return _through_host(C._flex_reduce_scatter, (x,), op=op, group=group)
    return comm.reduce_scatter(_api().cupy().ascontiguousarray(x), op)
