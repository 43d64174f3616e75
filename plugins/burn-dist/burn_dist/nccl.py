"""NCCL for cuda tensors: ``cupy.cuda.nccl`` on CuPy arrays, no host copy.

``NCCLCommunicator(host)`` makes one NCCL communicator over the ranks of a host communicator
(an :class:`~burn_dist.comm.MPICommunicator`, or the default one of :func:`burn_dist.init`:
world size 1 under plain python): rank 0 draws NCCL's unique id, the host communicator
broadcasts it (128 bytes), every rank joins with the GPU it uses (``cupy.cuda.Device()``, pick it first, e.g. from
:func:`burn_dist.local_rank`). Collectives take CuPy arrays and run on CuPy's current stream;
the metadata check goes over MPI on the host (a few bytes), so mismatched shapes are an error
here too. ``burn_dist.init(NCCLCommunicator(MPICommunicator()))`` makes it the default: then the
``dist::*`` ops of cuda tensors and :class:`~burn_dist.DataParallel` on cuda exchange over NCCL.

NCCL has no bool, complex or 16-bit-integer reductions here: those dtypes reduce through
float32/float64 views (complex as pairs of reals, for sum/mean) or are refused with a clear
error; broadcast and all-gather move raw bytes, so every dtype works.

Example:
    >>> from burn_dist.nccl import NCCLCommunicator, nccl_available
    >>> assert NCCLCommunicator.name == "nccl" and isinstance(nccl_available(), bool)
"""
from __future__ import annotations

import numpy as np

from burn import BurnError

from .comm import Communicator

__all__ = ["NCCLCommunicator", "nccl_available"]


def nccl_available() -> bool:
    """Whether CuPy with NCCL support and a GPU are usable in this process.

    Example:
        >>> from burn_dist.nccl import nccl_available
        >>> assert nccl_available() in (True, False)
    """
    try:
        import cupy
        from cupy.cuda import nccl
        return bool(nccl.available) and cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no NCCL, no driver: simply not available
        return False


def _nccl_types(nccl) -> dict:
    return {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32, "float64": nccl.NCCL_FLOAT64,
            "int8": nccl.NCCL_INT8, "uint8": nccl.NCCL_UINT8, "int32": nccl.NCCL_INT32,
            "uint32": nccl.NCCL_UINT32, "int64": nccl.NCCL_INT64, "uint64": nccl.NCCL_UINT64,
            "bfloat16": getattr(nccl, "NCCL_BFLOAT16", None)}


class NCCLCommunicator(Communicator):
    """Collectives on CuPy arrays through NCCL (see the module docstring).

    Example:
        >>> from burn_dist.nccl import NCCLCommunicator
        >>> assert hasattr(NCCLCommunicator, "all_reduce") and NCCLCommunicator.device_arrays
    """

    name = "nccl"
    device_arrays = True        # the dist ops hand it the cuda tensor's CuPy array itself

    def __init__(self, host: Communicator | None = None):
        try:
            import cupy
            from cupy.cuda import nccl
        except ImportError as e:
            raise BurnError(f"burn.dist.NCCLCommunicator needs CuPy with NCCL: pip install 'burn-dist[nccl]' "
                            f"({e})") from None
        if not nccl.available:
            raise BurnError("burn.dist.NCCLCommunicator: this CuPy was built without NCCL support")
        self.cupy, self.nccl = cupy, nccl
        if host is None:
            from .runtime import communicator
            host = communicator()
        if getattr(host, "device_arrays", False):
            raise BurnError("burn.dist.NCCLCommunicator: the host communicator must work on host buffers "
                            "(MPICommunicator or LocalCommunicator)")
        self.mpi = host
        self.rank, self.world_size = self.mpi.rank, self.mpi.world_size
        uid = np.zeros(128, np.int64)       # ncclUniqueId: 128 bytes
        if self.rank == 0:
            got = nccl.get_unique_id()
            uid = np.array(got, np.int64)
        self.mpi.broadcast(uid, root=0)
        self.comm = nccl.NcclCommunicator(self.world_size, tuple(int(v) for v in uid), self.rank)
        self._types = _nccl_types(nccl)
        self._ops = {"sum": nccl.NCCL_SUM, "prod": nccl.NCCL_PROD, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN,
                     "mean": nccl.NCCL_SUM}

    # metadata goes over MPI on the host
    def _gather_meta(self, row):
        return self.mpi._gather_meta(row)

    def _stream(self) -> int:
        return self.cupy.cuda.get_current_stream().ptr

    def _reducible(self, buf, op):
        """(array to reduce, NCCL datatype): complex as float pairs for sum/mean, bool/int16 refused."""
        name = buf.dtype.name
        if name.startswith("complex"):
            if op not in ("sum", "mean"):
                raise BurnError(f"burn.dist (nccl): op={op!r} on {name} is not supported; use sum or mean")
            return buf.view(np.float32 if name == "complex64" else np.float64), self._types[
                "float32" if name == "complex64" else "float64"]
        t = self._types.get(name)
        if t is None:
            raise BurnError(f"burn.dist (nccl): NCCL cannot reduce {name}; cast to a supported dtype "
                            f"({', '.join(k for k, v in self._types.items() if v is not None)}) or use the MPI "
                            f"communicator for it")
        return buf, t

    def _all_reduce(self, buf, op, out):
        src, t = self._reducible(self.cupy.ascontiguousarray(buf), op)
        dst = src if out is None else self._reducible(out, op)[0]
        self.comm.allReduce(src.data.ptr, dst.data.ptr, src.size, t, self._ops[op], self._stream())
        if op == "mean":
            target = buf if out is None else out
            target *= 1.0 / self.world_size

    def _broadcast(self, buf, root):
        raw = buf.view(np.uint8)
        self.comm.bcast(raw.data.ptr, raw.size, self.nccl.NCCL_UINT8, root, self._stream())

    def _all_gather(self, buf, out):
        send = self.cupy.ascontiguousarray(buf).view(np.uint8)
        self.comm.allGather(send.data.ptr, out.view(np.uint8).data.ptr, send.size, self.nccl.NCCL_UINT8,
                            self._stream())

    def _reduce_scatter(self, buf, op, out):
        src, t = self._reducible(self.cupy.ascontiguousarray(buf), op)
        dst = self._reducible(out, op)[0]
        self.comm.reduceScatter(src.data.ptr, dst.data.ptr, dst.size, t, self._ops[op], self._stream())
        if op == "mean":
            out *= 1.0 / self.world_size

    def _barrier(self):
        self.cupy.cuda.get_current_stream().synchronize()
        self.mpi.barrier()

    def _empty(self, shape, dtype, like):
        return self.cupy.empty(shape, dtype)
