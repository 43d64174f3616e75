"""History: one record per epoch (train and valid metrics, lr, time), and a PNG of the curves."""
from __future__ import annotations

import math
import os

from ..errors import BurnError

__all__ = ["History"]


class History:
    """The per-epoch records of a fit: ``history.records`` is a list of dicts.

    Each record has ``epoch`` (1-based), ``train_<metric>`` for every metric
    (``train_loss`` always), ``valid_<metric>`` when there was a validation
    loader, ``lr`` (the default group's learning rate at the epoch's end),
    ``time_s`` and ``samples_per_s``. ``history["train_loss"]`` gives one
    key's values in epoch order (None where an epoch lacks it).

    Example:
        >>> import burn
        >>> h = burn.train.History([{"epoch": 1, "train_loss": 0.9}, {"epoch": 2, "train_loss": 0.4}])
        >>> assert h["train_loss"] == [0.9, 0.4] and len(h) == 2 and h.last["epoch"] == 2
        >>> assert h.best("train_loss") == {"epoch": 2, "train_loss": 0.4}
    """

    def __init__(self, records=None):
        self.records: list[dict] = [dict(r) for r in (records or [])]
        self.stopped_early = False

    def append(self, record: dict) -> None:
        """Add one epoch's record (copied).

        Example:
            >>> import burn
            >>> h = burn.train.History()
            >>> h.append({"epoch": 1, "train_loss": 0.5})
            >>> assert h["train_loss"] == [0.5]
        """
        self.records.append(dict(record))

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def __getitem__(self, key):
        if isinstance(key, int):
            return self.records[key]
        if not any(key in r for r in self.records):
            raise KeyError(f"History has no {key!r}; keys: {', '.join(self.keys())}")
        return [r.get(key) for r in self.records]

    def keys(self) -> list[str]:
        """Every key seen, in first-seen order.

        Example:
            >>> import burn
            >>> h = burn.train.History([{"epoch": 1, "train_loss": 1.0}, {"epoch": 2, "valid_loss": 2.0}])
            >>> assert h.keys() == ["epoch", "train_loss", "valid_loss"]
        """
        out: dict = {}
        for r in self.records:
            out.update(dict.fromkeys(r))
        return list(out)

    @property
    def last(self) -> dict | None:
        """The latest epoch's record (None before the first epoch).

        Example:
            >>> import burn
            >>> assert burn.train.History().last is None
            >>> assert burn.train.History([{"epoch": 1}, {"epoch": 2}]).last == {"epoch": 2}
        """
        return self.records[-1] if self.records else None

    def best(self, key: str, mode: str = "auto") -> dict | None:
        """The record with the best value of ``key`` (``"max"`` for accuracies in ``"auto"`` mode).

        NaN and missing values are skipped; None if there is none.

        Example:
            >>> import burn
            >>> h = burn.train.History([{"epoch": 1, "valid_accuracy": 0.7}, {"epoch": 2, "valid_accuracy": 0.9}])
            >>> assert h.best("valid_accuracy")["epoch"] == 2 and h.best("valid_accuracy", "min")["epoch"] == 1
        """
        if mode == "auto":
            mode = "max" if "acc" in key else "min"
        rows = [r for r in self.records if isinstance(r.get(key), (int, float)) and not math.isnan(r[key])]
        if not rows:
            return None
        return (max if mode == "max" else min)(rows, key=lambda r: r[key])

    def to_list(self) -> list[dict]:
        """The records as plain JSON-able dicts (copies).

        Example:
            >>> import burn, json
            >>> h = burn.train.History([{"epoch": 1, "train_loss": 0.5}])
            >>> assert json.loads(json.dumps(h.to_list())) == [{"epoch": 1, "train_loss": 0.5}]
        """
        return [dict(r) for r in self.records]

    def __repr__(self):
        return f"History({len(self)} epochs, keys={self.keys()})"

    def plot(self, path, keys=None, *, title: str | None = None) -> str:
        """Write a PNG of the curves to ``path`` and return its absolute path.

        One panel per metric (loss, accuracy, ...), with the train and valid
        curves together; ``keys`` restricts it to those history keys. Needs
        matplotlib (an optional dependency: ``pip install matplotlib``); uses
        its object API with the Agg canvas, so no window opens and pyplot's
        global state is untouched.

        Example:
            >>> import burn, os, tempfile
            >>> h = burn.train.History([{"epoch": 1, "train_loss": 1.0, "valid_loss": 1.2},
            ...                         {"epoch": 2, "train_loss": 0.5, "valid_loss": 0.7}])
            >>> try:
            ...     out = h.plot(os.path.join(tempfile.mkdtemp(), "curves.png"))
            ... except burn.BurnError:   # matplotlib is not installed
            ...     out = None
            >>> assert out is None or open(out, "rb").read(4) == b"\\x89PNG"
        """
        try:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure
        except ImportError:
            raise BurnError("History.plot needs matplotlib, an optional dependency of burn: "
                            "pip install matplotlib") from None
        if not self.records:
            raise BurnError("History.plot: the history is empty (no epoch finished)")
        skip = {"epoch", "lr", "time_s", "samples_per_s"}
        keys = [k for k in (keys or self.keys()) if k not in skip]
        unknown = [k for k in keys if k not in self.keys()]
        if unknown:
            raise BurnError(f"History.plot: unknown key(s) {unknown}; keys: {', '.join(self.keys())}")
        panels: dict[str, list[str]] = {}
        for k in keys:
            base = k.split("_", 1)[1] if k.startswith(("train_", "valid_")) else k
            panels.setdefault(base, []).append(k)
        if not panels:
            raise BurnError(f"History.plot: nothing to plot among {self.keys()}")
        fig = Figure(figsize=(4.5 * len(panels), 3.5), dpi=100)
        FigureCanvasAgg(fig)
        epochs = self["epoch"] if "epoch" in self.keys() else list(range(1, len(self) + 1))
        for i, (base, ks) in enumerate(panels.items()):
            ax = fig.add_subplot(1, len(panels), i + 1)
            for k in ks:
                pts = [(e, v) for e, v in zip(epochs, self[k]) if v is not None]
                ax.plot([e for e, _ in pts], [v for _, v in pts], marker="o", markersize=3,
                        label=k.split("_", 1)[0] if k != base else k)
            ax.set_xlabel("epoch")
            ax.set_title(base)
            ax.grid(alpha=0.3)
            ax.legend()
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        path = os.path.abspath(os.fspath(path))
        fig.savefig(path, format="png")
        return path
