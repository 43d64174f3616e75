"""Datasets and batching: feed numpy data to burn models.

A dataset is anything with ``__len__`` and ``__getitem__`` (:class:`Dataset`);
:class:`ArrayDataset` / :class:`TensorDataset` wrap arrays that share their
first axis. :class:`DataLoader` batches a dataset into tuples of burn tensors
on a device, with a seeded shuffle that is deterministic per epoch, an
optional background prefetch thread, and optional worker processes
(``num_workers=``, :mod:`burn.data.workers`).

Example:
    >>> import burn, numpy as np
    >>> ds = burn.data.ArrayDataset(np.arange(10.0), np.arange(10))
    >>> xs = [x.tolist() for x, _ in burn.data.DataLoader(ds, batch_size=4)]
    >>> assert xs == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0]]
"""
from .dataset import Dataset, ArrayDataset, TensorDataset  # noqa: F401
from .loader import DataLoader, default_collate  # noqa: F401
from .workers import get_worker_info  # noqa: F401

__all__ = ["Dataset", "ArrayDataset", "TensorDataset", "DataLoader", "default_collate", "get_worker_info"]
