"""The live progress display of a fit: a rich bar on a terminal, plain lines elsewhere.

Reading a metric waits for the device, so the display asks the Learner for
running values (a ``read()`` callback) only when it is about to show them:
at most every ``refresh_s`` on a terminal, every ``log_every_s`` seconds (or
``log_every_steps`` steps) in plain mode, and at each epoch's end.
"""
from __future__ import annotations

import sys
import time

from ..errors import BurnError

__all__ = ["ProgressDisplay", "format_metrics"]


def _fmt(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "nan"
        return f"{v:.4f}" if 1e-3 <= abs(v) < 1e4 or v == 0 else f"{v:.3e}"
    return str(v)


def format_metrics(values: dict) -> str:
    """``"loss 0.1234 accuracy 0.9500"`` from ``{"loss": 0.1234, "accuracy": 0.95}``.

    Example:
        >>> import burn
        >>> assert burn.train.format_metrics({"loss": 0.5, "accuracy": 1.0}) == "loss 0.5000 accuracy 1.0000"
    """
    return " ".join(f"{k} {_fmt(v)}" for k, v in values.items())


def _duration(s: float) -> str:
    s = int(round(max(s, 0.0)))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class ProgressDisplay:
    """How a Learner reports progress; pass one as ``Learner(progress=...)`` to configure it.

    ``mode``: ``"auto"`` (rich bar when ``file`` is a terminal and rich is
    installed, else plain lines), ``"rich"``, ``"plain"`` or ``"none"``.
    Plain mode prints one summary line per epoch, plus a progress line
    every ``log_every_s`` seconds or ``log_every_steps`` steps (whichever is
    given; ``log_every_steps`` wins). ``file`` defaults to ``sys.stdout``
    at the time of the fit.

    Example:
        >>> import burn, io
        >>> out = io.StringIO()
        >>> d = burn.train.ProgressDisplay("plain", file=out)
        >>> d.start(epochs=1, start_epoch=0, steps_per_epoch=2)
        >>> d.update(epoch=0, step=1, samples=8, read=lambda: {"loss": 1.0})
        >>> d.epoch_end(0, {"epoch": 1, "train_loss": 0.75, "samples_per_s": 100.0, "time_s": 0.1})
        >>> d.close()
        >>> assert out.getvalue().startswith("epoch 1/1  train loss 0.7500")
    """

    def __init__(self, mode: str = "auto", *, refresh_s: float = 0.25, log_every_s: float | None = 30.0,
                 log_every_steps: int | None = None, file=None):
        if mode not in ("auto", "rich", "plain", "none"):
            raise BurnError(f"ProgressDisplay: mode must be 'auto', 'rich', 'plain' or 'none', got {mode!r}")
        if log_every_steps is not None and (not isinstance(log_every_steps, int) or log_every_steps < 1):
            raise BurnError(f"ProgressDisplay: log_every_steps must be an int >= 1 or None, got {log_every_steps!r}")
        self.mode, self.refresh_s = mode, float(refresh_s)
        self.log_every_s, self.log_every_steps = log_every_s, log_every_steps
        self.file = file
        self._progress = None

    @classmethod
    def coerce(cls, progress) -> "ProgressDisplay":
        """The display for a Learner's ``progress=`` argument (bool, mode string or display).

        Example:
            >>> import burn
            >>> D = burn.train.ProgressDisplay
            >>> assert D.coerce(False).mode == "none" and D.coerce("plain").mode == "plain"
        """
        if isinstance(progress, ProgressDisplay):
            return progress
        if progress is True or progress is None:
            return cls("auto")
        if progress is False:
            return cls("none")
        if isinstance(progress, str):
            return cls(progress)
        raise BurnError(f"Learner: progress must be True/False, 'auto'/'rich'/'plain'/'none' or a "
                        f"burn.train.ProgressDisplay, got {progress!r}")

    # -- lifecycle ---------------------------------------------------------------------
    def start(self, *, epochs: int, start_epoch: int, steps_per_epoch: int | None) -> None:
        """Begin a fit of ``epochs`` epochs in total, of which ``start_epoch`` are already done.

        ``steps_per_epoch`` (None if unknown) sizes the bar and the eta.

        Example:
            >>> import burn, io
            >>> d = burn.train.ProgressDisplay("plain", file=io.StringIO())
            >>> d.start(epochs=3, start_epoch=1, steps_per_epoch=10)
            >>> assert d.epochs == 3 and d.start_epoch == 1
            >>> d.close()
        """
        self._out = self.file if self.file is not None else sys.stdout
        mode = self.mode
        if mode == "auto":
            mode = "rich" if _isatty(self._out) and _has_rich() else "plain"
        if mode == "rich" and not _has_rich():
            raise BurnError("ProgressDisplay('rich') needs the rich package: pip install rich "
                            "(or use progress='plain')")
        self._mode = mode
        self.epochs, self.start_epoch, self.steps_per_epoch = epochs, start_epoch, steps_per_epoch
        self._t0 = self._last_shown = time.perf_counter()
        self._steps_done = 0
        self._epoch_t0 = self._t0
        self._epoch_samples = 0
        if mode == "rich":
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)
            total = None if steps_per_epoch is None else (epochs - start_epoch) * steps_per_epoch
            self._progress = Progress(
                TextColumn("[bold]epoch {task.fields[epoch]}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TextColumn("eta"),
                TimeRemainingColumn(), console=Console(file=self._out), refresh_per_second=8)
            self._task = self._progress.add_task("fit", total=total, epoch=f"{start_epoch + 1}/{epochs}",
                                                 status="")
            self._progress.start()

    def update(self, *, epoch: int, step: int, samples: int, read) -> None:
        """One training step is done (``step`` counts from 1 within ``epoch``, 0-based).

        ``read()`` returns the current metric values; it is only called when a
        line is shown, since reading values waits for the device.

        Example:
            >>> import burn, io
            >>> out = io.StringIO()
            >>> d = burn.train.ProgressDisplay("plain", log_every_steps=2, file=out)
            >>> d.start(epochs=1, start_epoch=0, steps_per_epoch=4)
            >>> for step in (1, 2):
            ...     d.update(epoch=0, step=step, samples=8, read=lambda: {"loss": 0.5})
            >>> assert out.getvalue().startswith("epoch 1/1 step 2/4  loss 0.5000")
        """
        self._steps_done += 1
        self._epoch_samples += samples
        if self._mode == "none":
            return
        now = time.perf_counter()
        if self._mode == "rich":
            if now - self._last_shown >= self.refresh_s:
                self._last_shown = now
                self._progress.update(self._task, advance=1, epoch=f"{epoch + 1}/{self.epochs}",
                                      status=self._status(epoch, step, read(), now))
                self._progress.refresh()   # draw the values just read, not only at rich's next tick
            else:
                self._progress.update(self._task, advance=1)
            return
        due = (step % self.log_every_steps == 0) if self.log_every_steps else (
            self.log_every_s is not None and now - self._last_shown >= self.log_every_s)
        if due:
            self._last_shown = now
            line = f"epoch {epoch + 1}/{self.epochs} " + self._status(epoch, step, read(), now)
            total = None if self.steps_per_epoch is None else (self.epochs - self.start_epoch) * self.steps_per_epoch
            if total:
                eta = (now - self._t0) / self._steps_done * (total - self._steps_done)
                line += f"  eta {_duration(eta)}"
            print(line, file=self._out, flush=True)

    def _status(self, epoch, step, values, now) -> str:
        of = f"/{self.steps_per_epoch}" if self.steps_per_epoch else ""
        rate = self._epoch_samples / max(now - self._epoch_t0, 1e-9)
        return f"step {step}{of}  {format_metrics(values)}  {rate:.0f} samples/s"

    def epoch_end(self, epoch: int, record: dict) -> None:
        """Show the summary line of ``epoch`` (0-based) from its history ``record``.

        Example:
            >>> import burn, io
            >>> out = io.StringIO()
            >>> d = burn.train.ProgressDisplay("plain", file=out)
            >>> d.start(epochs=2, start_epoch=0, steps_per_epoch=None)
            >>> d.epoch_end(0, {"epoch": 1, "train_loss": 0.25})
            >>> assert out.getvalue().splitlines() == ["epoch 1/2  train loss 0.2500"]
        """
        self._epoch_t0 = time.perf_counter()
        self._epoch_samples = 0
        if self._mode == "none":
            return
        line = self.summary(record, self.epochs)
        if self._mode == "rich":
            self._progress.console.print(line, highlight=False, markup=False)
            self._progress.update(self._task, epoch=f"{min(epoch + 2, self.epochs)}/{self.epochs}", status="")
        else:
            print(line, file=self._out, flush=True)

    @staticmethod
    def summary(record: dict, epochs: int) -> str:
        """``epoch 2/10  train loss .. accuracy .. | valid loss .. | lr .. | N samples/s | T s``.

        Example:
            >>> import burn
            >>> line = burn.train.ProgressDisplay.summary({"epoch": 2, "train_loss": 0.5, "valid_loss": 0.625,
            ...                                             "lr": 0.01, "samples_per_s": 1e3, "time_s": 1.5}, 3)
            >>> assert line == "epoch 2/3  train loss 0.5000 | valid loss 0.6250 | lr 0.0100 | 1000 samples/s | 1.5 s"
        """
        parts = [f"epoch {record['epoch']}/{epochs} "]
        for split in ("train", "valid"):
            vals = {k[len(split) + 1:]: v for k, v in record.items() if k.startswith(split + "_")}
            if vals:
                parts.append(f"{split} {format_metrics(vals)}")
        line = parts[0] + " " + " | ".join(parts[1:])
        if record.get("lr") is not None:
            line += f" | lr {_fmt(float(record['lr']))}"
        if record.get("samples_per_s") is not None:
            line += f" | {record['samples_per_s']:.0f} samples/s"
        if record.get("time_s") is not None:
            line += f" | {record['time_s']:.1f} s"
        return line

    def message(self, text: str) -> None:
        """Print a line above the bar (or plainly); nothing in mode ``"none"``.

        Example:
            >>> import burn, io
            >>> out = io.StringIO()
            >>> d = burn.train.ProgressDisplay("plain", file=out)
            >>> d.start(epochs=1, start_epoch=0, steps_per_epoch=1)
            >>> d.message("checkpoint saved")
            >>> assert out.getvalue().splitlines() == ["checkpoint saved"]
        """
        if self._mode == "none":
            return
        if self._mode == "rich":
            self._progress.console.print(text, highlight=False, markup=False)
        else:
            print(text, file=self._out, flush=True)

    def close(self) -> None:
        """Stop the progress bar (if any); call it when the fit ends, even on error.

        Example:
            >>> import burn, io
            >>> d = burn.train.ProgressDisplay("plain", file=io.StringIO())
            >>> d.start(epochs=1, start_epoch=0, steps_per_epoch=1)
            >>> d.close()
            >>> assert d._progress is None
        """
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _isatty(f) -> bool:
    try:
        return bool(f.isatty())
    except (AttributeError, ValueError):
        return False


def _has_rich() -> bool:
    try:
        import rich.progress  # noqa: F401
    except ImportError:
        return False
    return True
