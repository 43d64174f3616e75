"""Communicators: one small interface over the engines that move the bytes.

A :class:`Communicator` has a ``rank``, a ``world_size`` and five collectives on buffers of
its own kind (numpy arrays for MPI and for world size 1, CuPy arrays for NCCL):
``all_reduce`` (in place, or into ``out``), ``broadcast`` (in place), ``all_gather``,
``reduce_scatter`` and ``barrier``. Every collective first exchanges a few integers of
metadata (which collective, shape, dtype, op, root) so that ranks passing different
buffers get a :class:`CollectiveMismatch` naming each rank's shape and dtype instead of a
hang or a silently truncated result; ``check=False`` skips that exchange.

- :class:`LocalCommunicator`: world size 1 (plain ``python``); every collective is the identity.
- :class:`MPICommunicator`: mpi4py's buffer methods (``Allreduce``, ``Bcast``, ...) on numpy
  arrays, in place where MPI allows it; never its pickle-based lowercase methods.
- :class:`burn_dist.nccl.NCCLCommunicator`: ``cupy.cuda.nccl`` on CuPy arrays, no host copy.

Example:
    >>> import numpy as np
    >>> from burn_dist.comm import LocalCommunicator
    >>> c = LocalCommunicator()
    >>> buf = np.arange(4.0)
    >>> c.all_reduce(buf, "sum")
    >>> assert c.world_size == 1 and buf.tolist() == [0.0, 1.0, 2.0, 3.0]
"""
from __future__ import annotations

import numpy as np

from burn import BurnError

__all__ = ["Communicator", "LocalCommunicator", "MPICommunicator", "CollectiveMismatch", "OPS", "KINDS"]

OPS = ("sum", "mean", "prod", "max", "min")
KINDS = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier")
_MAX_DIMS = 6           # dims sent in a collective's metadata (more are folded into the last one)
_META_LEN = 4 + _MAX_DIMS


class CollectiveMismatch(BurnError):
    """Ranks called a collective with different buffers (shape, dtype, op or root).

    Every rank raises it (they all see every rank's metadata), so the job ends instead of hanging.

    Example:
        >>> from burn_dist.comm import CollectiveMismatch
        >>> import burn
        >>> assert issubclass(CollectiveMismatch, burn.BurnError)
    """


def _dtype_code(dt: np.dtype) -> int:
    return (ord(dt.kind) << 8) | dt.itemsize


def _dtype_name(code: int) -> str:
    kind, size = chr(code >> 8), code & 0xFF
    return {"f": f"float{size * 8}", "i": f"int{size * 8}", "u": f"uint{size * 8}", "b": "bool",
            "c": f"complex{size * 8}", "V": f"bfloat16/{size}-byte"}.get(kind, f"{kind}{size}")


def describe_meta(row) -> str:
    """``"float32 (3, 4) op=sum"``: one rank's metadata row, for messages.

    Example:
        >>> from burn_dist.comm import describe_meta, metadata
        >>> import numpy as np
        >>> assert describe_meta(metadata("all_reduce", np.zeros((3, 4), np.float32), "sum")) == "float32 (3, 4) op=sum"
    """
    kind, code, op, root, *dims = (int(v) for v in row)
    ndim = next((i for i, d in enumerate(dims) if d < 0), len(dims))
    shape = tuple(dims[:ndim])
    extra = f" op={OPS[op]}" if KINDS[kind] in ("all_reduce", "reduce_scatter") else \
        f" root={root}" if KINDS[kind] == "broadcast" else ""
    return f"{_dtype_name(code)} {shape}{extra}"


def metadata(kind: str, buf, op: str | None = None, root: int = 0) -> np.ndarray:
    """The int64 row a rank sends before a collective: kind, dtype, op, root, shape.

    Example:
        >>> import numpy as np
        >>> from burn_dist.comm import metadata
        >>> row = metadata("broadcast", np.zeros(5, np.int8), root=1)
        >>> assert row.dtype == np.int64 and row[3] == 1 and row[4] == 5
    """
    row = np.full(_META_LEN, -1, np.int64)
    shape = tuple(buf.shape) if buf is not None else ()
    if len(shape) > _MAX_DIMS:
        shape = shape[:_MAX_DIMS - 1] + (int(np.prod(shape[_MAX_DIMS - 1:])),)
    row[0] = KINDS.index(kind)
    row[1] = _dtype_code(np.dtype(buf.dtype)) if buf is not None else 0
    row[2] = OPS.index(op) if op is not None else -1
    row[3] = root
    row[4:4 + len(shape)] = shape
    return row


def check_op(op: str, dtype, where: str) -> None:
    """Raise a BurnError at the call for an op the dtype has no meaning for.

    Example:
        >>> import numpy as np
        >>> from burn_dist.comm import check_op
        >>> check_op("sum", np.float32, "all_reduce")
        >>> try:
        ...     check_op("mean", np.int32, "all_reduce")
        ... except Exception as e:
        ...     assert "mean" in str(e) and "int32" in str(e)
    """
    dt = np.dtype(dtype)
    if op not in OPS:
        raise BurnError(f"burn.dist.{where}: op must be one of {OPS}, got {op!r}")
    if op == "mean" and dt.kind not in "fcV":
        raise BurnError(f"burn.dist.{where}: op='mean' needs a floating or complex dtype, got {dt}; use op='sum' "
                        f"and divide, or cast first")
    if op in ("max", "min") and dt.kind == "c":
        raise BurnError(f"burn.dist.{where}: op={op!r} is not defined for complex dtype {dt}")


class Communicator:
    """The interface every engine implements (see the module docstring).

    Subclasses set ``rank``, ``world_size`` and ``name`` and implement ``_gather_meta``
    (all ranks' metadata rows) and the ``_*`` collectives; the public methods validate and
    check metadata first.

    Example:
        >>> from burn_dist.comm import Communicator, LocalCommunicator
        >>> assert isinstance(LocalCommunicator(), Communicator)
    """

    rank: int = 0
    world_size: int = 1
    name: str = "communicator"

    # -- metadata ----------------------------------------------------------------------
    def _gather_meta(self, row: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def check(self, kind: str, buf, op: str | None = None, root: int = 0, what: str | None = None) -> None:
        """Exchange this collective's metadata; raise :class:`CollectiveMismatch` on every rank
        if the ranks disagree (a few dozen bytes, one small all-gather).

        Example:
            >>> import numpy as np
            >>> from burn_dist.comm import LocalCommunicator
            >>> LocalCommunicator().check("all_reduce", np.zeros(3), "sum")
        """
        if self.world_size == 1:
            return
        rows = self._gather_meta(metadata(kind, buf, op, root))
        if (rows == rows[0]).all():
            return
        per_rank = "; ".join(f"rank {r}: {describe_meta(row)}" for r, row in enumerate(rows))
        raise CollectiveMismatch(
            f"burn.dist.{what or kind}: the ranks passed different buffers ({per_rank}); every rank must "
            f"call the same collective with the same shape, dtype{', op' if op else ''}"
            f"{' and root' if kind == 'broadcast' else ''} (rank {self.rank} of {self.world_size} raises this)")

    # -- collectives -------------------------------------------------------------------
    def all_reduce(self, buf, op: str = "sum", *, out=None, check: bool = True) -> None:
        """Reduce ``buf`` over the ranks: in place, or into ``out`` (same shape and dtype).

        Example:
            >>> import numpy as np
            >>> from burn_dist.comm import LocalCommunicator
            >>> a, out = np.ones(3, np.float32), np.empty(3, np.float32)
            >>> LocalCommunicator().all_reduce(a, "mean", out=out)
            >>> assert out.tolist() == [1.0, 1.0, 1.0]
        """
        check_op(op, buf.dtype, "all_reduce")
        if out is not None and (tuple(out.shape) != tuple(buf.shape) or out.dtype != buf.dtype):
            raise BurnError(f"burn.dist.all_reduce: out has shape {tuple(out.shape)} {out.dtype}, buf "
                            f"{tuple(buf.shape)} {buf.dtype}; give out of the same shape and dtype")
        if check:
            self.check("all_reduce", buf, op)
        self._all_reduce(buf, op, out)

    def broadcast(self, buf, root: int = 0, *, check: bool = True) -> None:
        """Overwrite ``buf`` on every rank with rank ``root``'s (in place).

        Example:
            >>> import numpy as np
            >>> from burn_dist.comm import LocalCommunicator
            >>> b = np.arange(3)
            >>> LocalCommunicator().broadcast(b, root=0)
            >>> assert b.tolist() == [0, 1, 2]
        """
        self._check_root(root, "broadcast")
        if check:
            self.check("broadcast", buf, root=root)
        self._broadcast(buf, root)

    def all_gather(self, buf, out=None, *, check: bool = True):
        """Every rank's ``buf`` stacked along a new first axis (``out``: ``(world_size, *buf.shape)``).

        Example:
            >>> import numpy as np
            >>> from burn_dist.comm import LocalCommunicator
            >>> assert LocalCommunicator().all_gather(np.arange(2)).tolist() == [[0, 1]]
        """
        out = self._result("all_gather", out, (self.world_size,) + tuple(buf.shape), buf)
        if check:
            self.check("all_gather", buf)
        self._all_gather(buf, out)
        return out

    def reduce_scatter(self, buf, op: str = "sum", out=None, *, check: bool = True):
        """Reduce ``buf`` (first axis ``world_size``) over the ranks; rank ``r`` gets block ``r``.

        Example:
            >>> import numpy as np
            >>> from burn_dist.comm import LocalCommunicator
            >>> assert LocalCommunicator().reduce_scatter(np.arange(3.0).reshape(1, 3)).tolist() == [0.0, 1.0, 2.0]
        """
        check_op(op, buf.dtype, "reduce_scatter")
        if buf.ndim == 0 or buf.shape[0] != self.world_size:
            raise BurnError(f"burn.dist.reduce_scatter: buf's first axis must be the world size "
                            f"{self.world_size} (one block per rank), got shape {tuple(buf.shape)}")
        out = self._result("reduce_scatter", out, tuple(buf.shape[1:]), buf)
        if check:
            self.check("reduce_scatter", buf, op)
        self._reduce_scatter(buf, op, out)
        return out

    def barrier(self) -> None:
        """Wait until every rank got here.

        Example:
            >>> from burn_dist.comm import LocalCommunicator
            >>> LocalCommunicator().barrier()
        """
        self._barrier()

    def _check_root(self, root, where):
        if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root < self.world_size:
            raise BurnError(f"burn.dist.{where}: root must be a rank in [0, {self.world_size}), got {root!r}")

    @staticmethod
    def _empty(shape, dtype, like):
        return np.empty(shape, dtype)

    def _result(self, op: str, out, want: tuple, buf):
        """The buffer ``op`` writes: ``out`` checked against the shape ``want`` and ``buf``'s dtype,
        or a new one."""
        if out is None:
            return self._empty(want, buf.dtype, like=buf)
        if tuple(out.shape) != want or out.dtype != buf.dtype:
            raise BurnError(f"burn.dist.{op}: out must have shape {want} and dtype {buf.dtype}, got "
                            f"{tuple(out.shape)} {out.dtype}")
        return out

    def __repr__(self):
        return f"{type(self).__name__}(rank={self.rank}, world_size={self.world_size})"


class LocalCommunicator(Communicator):
    """World size 1: plain ``python``, no MPI needed; every collective is the identity
    (``mean`` of one rank is its value).

    Example:
        >>> import numpy as np
        >>> from burn_dist.comm import LocalCommunicator
        >>> out = LocalCommunicator().all_gather(np.ones((2, 2)))
        >>> assert out.shape == (1, 2, 2)
    """

    name = "local"

    def _gather_meta(self, row):
        return row[None]

    def _all_reduce(self, buf, op, out):
        if out is not None:
            out[...] = buf

    def _broadcast(self, buf, root):
        pass

    def _all_gather(self, buf, out):
        out[0] = buf

    def _reduce_scatter(self, buf, op, out):
        out[...] = buf[0]

    def _barrier(self):
        pass


# numpy kinds without an MPI datatype are reduced in a wider type and rounded back
_WIDEN = {"float16": np.float32, "bfloat16": np.float32}


class MPICommunicator(Communicator):
    """Collectives through mpi4py's buffer API on host (numpy) arrays.

    ``comm`` is an ``mpi4py.MPI.Comm`` (default ``COMM_WORLD``). Half types (float16,
    bfloat16), which MPI has no reduction datatype for, are reduced in float32 and rounded
    back; bool sums are logical or, bool products logical and. Broadcast and all-gather move
    raw bytes, so every dtype works.

    Example:
        >>> from burn_dist.comm import MPICommunicator
        >>> assert MPICommunicator.name == "mpi"
    """

    name = "mpi"

    def __init__(self, comm=None):
        from mpi4py import MPI
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank = self.comm.Get_rank()
        self.world_size = self.comm.Get_size()
        self._meta_out = np.empty((self.world_size, _META_LEN), np.int64)
        self._ops = {"sum": MPI.SUM, "mean": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}
        self._bool_ops = {"sum": MPI.LOR, "max": MPI.LOR, "prod": MPI.LAND, "min": MPI.LAND}
        self._types = {"float32": MPI.FLOAT, "float64": MPI.DOUBLE, "int8": MPI.INT8_T, "int16": MPI.INT16_T,
                       "int32": MPI.INT32_T, "int64": MPI.INT64_T, "uint8": MPI.UINT8_T, "uint16": MPI.UINT16_T,
                       "uint32": MPI.UINT32_T, "uint64": MPI.UINT64_T, "bool": MPI.C_BOOL,
                       "complex64": MPI.C_FLOAT_COMPLEX, "complex128": MPI.C_DOUBLE_COMPLEX}

    def _gather_meta(self, row):
        self.comm.Allgather(row, self._meta_out)
        return self._meta_out.copy()

    def _spec(self, buf):
        """(buffer, predefined MPI datatype) for a contiguous numpy array."""
        try:
            return [buf, self._types[buf.dtype.name]]
        except KeyError:
            raise BurnError(f"burn.dist: no MPI datatype for {buf.dtype} (reductions need a number or bool "
                            f"dtype)") from None

    def _all_reduce(self, buf, op, out):
        wide = _WIDEN.get(buf.dtype.name)
        if wide is not None:
            tmp = np.ascontiguousarray(buf, dtype=wide)
            self._all_reduce(tmp, op, None)
            (buf if out is None else out)[...] = tmp.astype(buf.dtype)
            return
        mpi_op = self._bool_ops[op] if buf.dtype == np.bool_ else self._ops[op]
        if out is None:
            self.comm.Allreduce(self.MPI.IN_PLACE, self._spec(_contiguous(buf, "all_reduce")), mpi_op)
            target = buf
        else:
            self.comm.Allreduce(self._spec(np.ascontiguousarray(buf)), self._spec(_contiguous(out, "all_reduce")),
                                mpi_op)
            target = out
        if op == "mean":
            np.multiply(target, target.dtype.type(1.0 / self.world_size), out=target)

    def _broadcast(self, buf, root):
        # reshape(-1) first: a 0-d array (BatchNorm's num_batches_tracked) has no uint8 view of its
        # own; of a contiguous array it is a view, so Bcast still writes into buf
        self.comm.Bcast([_contiguous(buf, "broadcast").reshape(-1).view(np.uint8), self.MPI.BYTE], root=root)

    def _all_gather(self, buf, out):
        send = np.ascontiguousarray(buf).view(np.uint8).reshape(-1)
        self.comm.Allgather([send, self.MPI.BYTE], [_contiguous(out, "all_gather").view(np.uint8), self.MPI.BYTE])

    def _reduce_scatter(self, buf, op, out):
        wide = _WIDEN.get(buf.dtype.name)
        if wide is not None:
            tmp = np.empty(out.shape, wide)
            self._reduce_scatter(np.ascontiguousarray(buf, dtype=wide), op, tmp)
            out[...] = tmp.astype(out.dtype)
            return
        mpi_op = self._bool_ops[op] if buf.dtype == np.bool_ else self._ops[op]
        self.comm.Reduce_scatter_block(self._spec(np.ascontiguousarray(buf)),
                                       self._spec(_contiguous(out, "reduce_scatter")), mpi_op)
        if op == "mean":
            np.multiply(out, out.dtype.type(1.0 / self.world_size), out=out)

    def _barrier(self):
        self.comm.Barrier()


def _contiguous(buf, where):
    """An in-place target must be one contiguous block: MPI writes into its memory."""
    if not buf.flags.c_contiguous:
        raise BurnError(f"burn.dist.{where}: an in-place buffer must be C-contiguous (got strides {buf.strides} "
                        f"for shape {buf.shape}); pass np.ascontiguousarray(buf) and read the result from it")
    if not buf.flags.writeable:
        raise BurnError(f"burn.dist.{where}: the buffer is read-only; pass a writeable copy")
    return buf
