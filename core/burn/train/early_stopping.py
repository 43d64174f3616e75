"""Early stopping: end training when a monitored metric stops improving."""
from __future__ import annotations

import math

from ..errors import BurnError

__all__ = ["EarlyStopping"]


class EarlyStopping:
    """Stop after ``patience`` epochs without an improvement of ``monitor`` by more than ``min_delta``.

    ``monitor`` names a history key (``"valid_loss"``, ``"valid_accuracy"``,
    ``"train_loss"``, ...). ``mode="min"`` counts a decrease as an
    improvement, ``"max"`` an increase; ``"auto"`` takes ``max`` for keys
    whose metric says ``higher_is_better`` (accuracies) and ``min``
    otherwise. An improvement must beat the best value so far by more than
    ``min_delta``; a NaN is never one. Its state (best value, epochs waited)
    is saved in checkpoints, so a resumed run stops where an uninterrupted
    one would.

    Example:
        >>> import burn
        >>> es = burn.train.EarlyStopping("valid_loss", patience=2, mode="min")
        >>> [es.update(v) for v in [1.0, 0.5, 0.6, 0.55]]
        [False, False, False, True]
        >>> assert es.best == 0.5 and es.best_epoch == 2
    """

    def __init__(self, monitor: str = "valid_loss", *, patience: int = 3, min_delta: float = 0.0,
                 mode: str = "auto"):
        if not isinstance(monitor, str) or not monitor:
            raise BurnError(f"EarlyStopping: monitor must be a history key such as 'valid_loss', got {monitor!r}")
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise BurnError(f"EarlyStopping: patience must be an int >= 1 (epochs without improvement), "
                            f"got {patience!r}")
        if not isinstance(min_delta, (int, float)) or min_delta < 0:
            raise BurnError(f"EarlyStopping: min_delta must be a number >= 0, got {min_delta!r}")
        if mode not in ("min", "max", "auto"):
            raise BurnError(f"EarlyStopping: mode must be 'min', 'max' or 'auto', got {mode!r}")
        self.monitor, self.patience, self.min_delta, self.mode = monitor, patience, float(min_delta), mode
        self.best: float | None = None
        self.best_epoch = 0
        self.wait = 0
        self.epochs_seen = 0
        self.stopped = False

    def resolve_mode(self, higher_is_better: bool | None) -> None:
        """Fix ``mode="auto"`` to ``"max"`` or ``"min"`` (the Learner calls it with the metric's preference).

        ``None`` guesses from the key: ``"max"`` for accuracies. An explicit mode is kept.

        Example:
            >>> import burn
            >>> es = burn.train.EarlyStopping("valid_top5")
            >>> es.resolve_mode(True)
            >>> assert es.mode == "max"
        """
        if self.mode == "auto":
            if higher_is_better is None:
                higher_is_better = "acc" in self.monitor
            self.mode = "max" if higher_is_better else "min"

    def update(self, value: float) -> bool:
        """Record one epoch's value; True when training should stop now.

        Example:
            >>> import burn
            >>> es = burn.train.EarlyStopping("valid_accuracy", patience=1)
            >>> assert es.update(0.8) is False and es.update(0.7) is True and es.mode == "max"
        """
        if self.mode == "auto":
            self.resolve_mode(None)
        self.epochs_seen += 1
        value = float(value)
        better = not math.isnan(value) and (
            self.best is None
            or (value < self.best - self.min_delta if self.mode == "min" else value > self.best + self.min_delta))
        if better:
            self.best, self.best_epoch, self.wait = value, self.epochs_seen, 0
        else:
            self.wait += 1
        self.stopped = self.wait >= self.patience
        return self.stopped

    def state_dict(self) -> dict:
        """JSON-able state (for checkpoints).

        Example:
            >>> import burn
            >>> es = burn.train.EarlyStopping("train_loss", patience=1)
            >>> es.update(1.0) or es.update(2.0)
            True
            >>> es2 = burn.train.EarlyStopping("train_loss", patience=1)
            >>> es2.load_state_dict(es.state_dict())
            >>> assert es2.best == 1.0 and es2.wait == 1 and es2.mode == "min"
        """
        return {"monitor": self.monitor, "mode": self.mode, "best": self.best, "best_epoch": self.best_epoch,
                "wait": self.wait, "epochs_seen": self.epochs_seen, "stopped": self.stopped}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s position; the monitored key must be the same.

        Example:
            >>> import burn
            >>> es = burn.train.EarlyStopping("valid_loss", patience=2)
            >>> _ = es.update(1.0)
            >>> resumed = burn.train.EarlyStopping("valid_loss", patience=2)
            >>> resumed.load_state_dict(es.state_dict())
            >>> assert resumed.best == 1.0 and resumed.epochs_seen == 1
        """
        if state.get("monitor") != self.monitor:
            raise BurnError(f"EarlyStopping.load_state_dict: the state monitors {state.get('monitor')!r}, "
                            f"this one monitors {self.monitor!r}")
        self.mode = state["mode"]
        self.best = state["best"]
        self.best_epoch = int(state["best_epoch"])
        self.wait = int(state["wait"])
        self.epochs_seen = int(state["epochs_seen"])
        self.stopped = bool(state["stopped"])

    def __repr__(self):
        return (f"EarlyStopping(monitor={self.monitor!r}, patience={self.patience}, min_delta={self.min_delta}, "
                f"mode={self.mode!r}, best={self.best}, wait={self.wait})")
