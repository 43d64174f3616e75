"""Datasets and functions the DataLoader worker tests send to worker processes: a module that
imports neither torch nor pytest, so a worker unpickling them imports only burn and numpy."""
import collections
import os

import numpy as np

import burn
from burn.data import default_collate

Pair = collections.namedtuple("Pair", "x label")


class Samples:
    """Per-sample dataset (no get_batch): tuple, dict or namedtuple samples of arrays and numbers."""

    def __init__(self, n=23, kind="tuple", fail_at=None, exit_at=None):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((n, 3)).astype(np.float32)
        self.kind, self.fail_at, self.exit_at = kind, fail_at, exit_at

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"sample {i} is corrupt")
        if i == self.exit_at:
            os._exit(3)
        if self.kind == "dict":
            return {"x": self.x[i], "label": int(i % 4), "weight": float(i) / 2, "name": f"s{i}"}
        if self.kind == "namedtuple":
            return Pair(self.x[i], int(i % 4))
        if self.kind == "pid":
            info = burn.data.get_worker_info()
            return self.x[i], os.getpid(), info.id, _INIT_MARK.get("mark", -1)
        return self.x[i], int(i % 4), float(i) / 2


_INIT_MARK = {}


def mark_worker(wid):
    _INIT_MARK["mark"] = 100 + wid


def add_one_collate(samples):
    x, label, _ = default_collate(samples)
    return x + 1, label
