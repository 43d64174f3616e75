"""Advanced indexing on flex: ``index``, ``index_add`` (duplicates accumulate), ``index_put``
(the last write wins), take_along_axis and scatter_add, with bounds checked as a
``burn.IndexOutOfRange`` (a ShapeError and an IndexError)."""
from __future__ import annotations

import numpy as np

from burn.ops.movement import build_numpy_index


def _bounds_checked(fn):
    """numpy's IndexError for an out-of-range index array becomes the IndexOutOfRange (a
    BurnError naming the op) that the wgpu and cuda kernels raise, with numpy's message."""
    import functools

    from burn.errors import IndexOutOfRange
    op = fn.__name__.rstrip("_")

    @functools.wraps(fn)
    def run(*args, **kw):
        try:
            return fn(*args, **kw)
        except IndexError as e:
            raise IndexOutOfRange(f"{op}: {e}") from e
    return run


@_bounds_checked
def index(x, *idx, spec):
    return np.asarray(x[build_numpy_index(spec, idx)])


@_bounds_checked
def index_add(g, *idx, spec, shape):
    z = np.zeros(shape, dtype=g.dtype)
    np.add.at(z, build_numpy_index(spec, idx), g)
    return z


@_bounds_checked
def index_put(x, v, *idx, spec):
    out = np.array(x, copy=True)
    out[build_numpy_index(spec, idx)] = v
    return out


@_bounds_checked
def take_along_axis(x, idx, *, axis):
    shape = tuple(b if i == axis else max(a, b) for i, (a, b) in enumerate(zip(x.shape, idx.shape)))
    xs = tuple(shape[i] if i != axis else x.shape[i] for i in range(x.ndim))
    return np.take_along_axis(np.broadcast_to(x, xs), np.broadcast_to(idx, shape), axis=axis)


@_bounds_checked
def scatter_add(x, idx, src, *, axis):
    out = np.array(x, copy=True)
    grid = list(np.indices(idx.shape, sparse=True))
    grid[axis] = idx
    np.add.at(out, tuple(grid), src)
    return out
