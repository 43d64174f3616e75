"""Datasets: anything with ``__len__`` and ``__getitem__``, and arrays sharing a first axis."""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import BurnError, ShapeError
from ..tensor import Tensor

__all__ = ["Dataset", "ArrayDataset", "TensorDataset"]


@runtime_checkable
class Dataset(Protocol):
    """What :class:`burn.data.DataLoader` needs: ``len(ds)`` and ``ds[i]`` for ``0 <= i < len(ds)``.

    ``ds[i]`` returns one sample: a tuple of arrays/numbers (one per field), a
    dict of them, or a single array. A dataset may also define
    ``get_batch(indices) -> tuple of arrays`` to serve a whole batch at once
    (vectorized); the loader then uses it instead of one ``ds[i]`` per sample.

    Example:
        >>> import burn, numpy as np
        >>> class Squares:
        ...     def __len__(self): return 5
        ...     def __getitem__(self, i): return (np.float32(i), np.float32(i * i))
        >>> assert isinstance(Squares(), burn.data.Dataset)
        >>> x, y = next(iter(burn.data.DataLoader(Squares(), batch_size=5)))
        >>> assert y.tolist() == [0.0, 1.0, 4.0, 9.0, 16.0]
    """

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Any: ...


def _as_host(name: str, a) -> np.ndarray:
    if isinstance(a, Tensor):
        return a.numpy()
    arr = np.asarray(a)
    if arr.dtype == object:
        raise BurnError(f"{name}: arrays must be numeric, got an object array from {type(a).__name__}")
    return arr


class ArrayDataset:
    """Samples ``(a[i], b[i], ...)`` of numpy arrays that share their first axis.

    Arrays are kept as given (no copy); a batch is one fancy-indexing per
    array (:meth:`get_batch`), so loading is vectorized.

    Example:
        >>> import burn, numpy as np
        >>> ds = burn.data.ArrayDataset(np.zeros((4, 2)), np.arange(4))
        >>> assert len(ds) == 4 and ds[3][1] == 3
        >>> x, y = ds.get_batch(np.array([3, 0]))
        >>> assert x.shape == (2, 2) and y.tolist() == [3, 0]
    """

    def __init__(self, *arrays):
        name = type(self).__name__
        if not arrays:
            raise BurnError(f"{name}: give at least one array")
        self.arrays = tuple(_as_host(name, a) for a in arrays)
        lens = [a.shape[0] if a.ndim else None for a in self.arrays]
        if None in lens or len(set(lens)) != 1:
            shapes = ", ".join(str(a.shape) for a in self.arrays)
            raise ShapeError(f"{name}: every array needs the same first axis (one row per sample), "
                             f"got shapes {shapes}")
        self._n = lens[0]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index):
        """Sample ``index``: a tuple with one row of each array.

        Example:
            >>> import burn, numpy as np
            >>> assert burn.data.ArrayDataset(np.arange(3))[-1] == (2,)
        """
        return tuple(a[index] for a in self.arrays)

    def get_batch(self, indices) -> tuple:
        """The rows ``indices`` of every array, as one array per field.

        Example:
            >>> import burn, numpy as np
            >>> (x,) = burn.data.ArrayDataset(np.arange(5) * 10).get_batch([4, 1])
            >>> assert x.tolist() == [40, 10]
        """
        idx = np.asarray(indices, dtype=np.intp)
        return tuple(a[idx] for a in self.arrays)


class TensorDataset(ArrayDataset):
    """:class:`ArrayDataset` over burn tensors (or arrays): tensors are copied to the host once.

    Example:
        >>> import burn
        >>> ds = burn.data.TensorDataset(burn.arange(6).reshape((3, 2)), burn.tensor([1.0, 2.0, 3.0]))
        >>> assert ds[1][0].tolist() == [2, 3] and ds[1][1] == 2.0
    """
