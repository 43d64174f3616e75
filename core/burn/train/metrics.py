"""Metrics that accumulate on the device and are read once, when asked.

A metric follows a three-method protocol (:class:`Metric`):
``update(outputs, targets)`` after every batch, ``compute() -> float`` at the
end of an epoch (or when the progress display refreshes), ``reset()`` before
the next epoch. The built-in ones keep their running sums as burn tensors on
the batch's device, so an update records a few lazy ops and never waits for
the device; only ``compute()`` reads a value back.

Outputs are the model's outputs, detached (the Learner calls ``update`` under
``burn.no_grad()``); targets are what the loader gave.
"""
from __future__ import annotations

import math
import re

from ..errors import BurnError
from ..tensor import Tensor
from ..ops.reduction import argmax
from .. import dtypes
from ..ops.creation import arange, tensor
from ..ops.elementwise import where

__all__ = ["Metric", "Loss", "Accuracy", "TopKAccuracy", "MeanMetric", "get_metric"]


class Metric:
    """The protocol of a metric: ``update(outputs, targets)``, ``compute() -> float``, ``reset()``.

    ``name`` labels it in the progress display and the history
    (``train_<name>``, ``valid_<name>``); ``higher_is_better`` tells early
    stopping in ``mode="auto"`` which way is an improvement. Any object with
    these members works; subclassing is optional.

    Example:
        >>> import burn
        >>> class MaxAbs(burn.train.Metric):
        ...     name, higher_is_better = "max_abs", False
        ...     def reset(self): self.value = 0.0
        ...     def update(self, outputs, targets): self.value = max(self.value, float(abs(outputs).max().item()))
        ...     def compute(self): return self.value
        >>> m = MaxAbs(); m.reset(); m.update(burn.tensor([1.0, -3.0]), None)
        >>> assert m.compute() == 3.0
    """

    name: str = "metric"
    higher_is_better: bool = True

    def reset(self) -> None:
        """Forget everything seen (the Learner calls it at the start of each epoch).

        Example:
            >>> import burn
            >>> acc = burn.train.Accuracy()
            >>> acc.update(burn.tensor([[0.0, 1.0]]), burn.tensor([0]))
            >>> acc.reset(); acc.update(burn.tensor([[0.0, 1.0]]), burn.tensor([1]))
            >>> assert acc.compute() == 1.0
        """
        raise NotImplementedError(f"{type(self).__name__} must define reset()")

    def update(self, outputs, targets) -> None:
        """Add one batch: the model's ``outputs`` and the ``targets``.

        Example:
            >>> import burn
            >>> acc = burn.train.Accuracy()
            >>> acc.update(burn.tensor([[0.0, 1.0], [1.0, 0.0]]), burn.tensor([1, 1]))
            >>> assert acc.compute() == 0.5
        """
        raise NotImplementedError(f"{type(self).__name__} must define update(outputs, targets)")

    def state_dict(self):
        """The accumulated state as JSON-able data, or None if this metric cannot save it
        (a Learner resumed mid-epoch then counts only the batches after the resume).

        Example:
            >>> import burn
            >>> loss = burn.train.Loss()
            >>> loss.update_loss(burn.tensor(3.0), 2)
            >>> other = burn.train.Loss()
            >>> other.load_state_dict(loss.state_dict(), burn.Device.flex())
            >>> assert other.compute() == 3.0
        """
        acc = getattr(self, "_sum", None)
        return acc.state() if isinstance(acc, _Sum) else None

    def load_state_dict(self, state, device) -> None:
        """Put back what :meth:`state_dict` returned (its tensors on ``device``).

        Example:
            >>> import burn
            >>> m = burn.train.Accuracy()
            >>> m.load_state_dict({"total": 3.0, "dtype": "float32", "count": 4}, burn.Device.flex())
            >>> assert m.compute() == 0.75
        """
        acc = getattr(self, "_sum", None)
        if not isinstance(acc, _Sum):
            raise BurnError(f"{type(self).__name__}.load_state_dict: this metric keeps no saved state; "
                            f"override state_dict/load_state_dict to resume it mid-epoch")
        acc.restore(state, device)

    def compute(self) -> float:
        """The value over every batch since the last ``reset()``, as a Python float.

        Example:
            >>> import burn
            >>> acc = burn.train.Accuracy()
            >>> acc.update(burn.tensor([[2.0, 1.0]]), burn.tensor([0]))
            >>> assert acc.compute() == 1.0
        """
        raise NotImplementedError(f"{type(self).__name__} must define compute()")

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r})"


class _Sum:
    """A running sum kept on the device of the values added (one lazy add per update)."""

    __slots__ = ("total", "count")

    def __init__(self):
        self.total, self.count = None, 0

    def add(self, value: Tensor, count: int) -> None:
        self.total = value if self.total is None else self.total + value
        self.count += count

    def mean(self) -> float:
        if self.count == 0 or self.total is None:
            return math.nan
        return float(self.total.item()) / self.count

    def state(self) -> dict:
        """JSON-able: the total's exact value and dtype (float32 values are exact in JSON floats)."""
        if self.total is None:
            return {"total": None, "count": self.count}
        return {"total": self.total.numpy().tolist(), "dtype": self.total.dtype.name, "count": self.count}

    def restore(self, state: dict, device) -> None:
        self.count = int(state["count"])
        total = state["total"]
        self.total = None if total is None else tensor(total, dtype=dtypes.as_dtype(state["dtype"]), device=device)


class MeanMetric(Metric):
    """The mean over all samples of ``fn(outputs, targets)``, a tensor of per-sample values.

    Use it for any metric that is an average of per-sample scores (absolute
    error, a per-sample loss, ...). A scalar result counts as the mean of the
    batch (weighted by the batch size).

    Example:
        >>> import burn
        >>> mae = burn.train.MeanMetric(lambda o, t: abs(o - t), name="mae", higher_is_better=False)
        >>> mae.reset()
        >>> mae.update(burn.tensor([1.0, 2.0]), burn.tensor([1.0, 4.0]))
        >>> mae.update(burn.tensor([0.0]), burn.tensor([3.0]))
        >>> assert abs(mae.compute() - 5.0 / 3) < 1e-6
    """

    def __init__(self, fn, name: str = "mean", higher_is_better: bool = False):
        if not callable(fn):
            raise BurnError(f"MeanMetric: fn must be callable (outputs, targets) -> tensor, got {fn!r}")
        self.fn, self.name, self.higher_is_better = fn, name, higher_is_better
        self.reset()

    def reset(self) -> None:
        """Forget every value seen.

        Example:
            >>> import burn
            >>> m = burn.train.MeanMetric(lambda o, t: o - t)
            >>> m.update(burn.tensor([5.0]), burn.tensor([0.0]))
            >>> m.reset(); m.update(burn.tensor([1.0]), burn.tensor([0.0]))
            >>> assert m.compute() == 1.0
        """
        self._sum = _Sum()

    def update(self, outputs, targets) -> None:
        """Add ``fn(outputs, targets)``: per-sample values, or a scalar counted once per sample.

        Example:
            >>> import burn
            >>> m = burn.train.MeanMetric(lambda o, t: ((o - t) ** 2).mean())     # a batch mean
            >>> m.update(burn.tensor([1.0, 3.0]), burn.tensor([0.0, 0.0]))       # 5.0 for 2 samples
            >>> m.update(burn.tensor([2.0]), burn.tensor([0.0]))                 # 4.0 for 1 sample
            >>> assert abs(m.compute() - 14.0 / 3) < 1e-6
        """
        v = self.fn(outputs, targets)
        if not isinstance(v, Tensor):
            raise BurnError(f"MeanMetric {self.name!r}: fn returned {type(v).__name__}, expected a burn tensor")
        n = _batch_size(outputs, targets)
        if v.ndim == 0:
            self._sum.add(v * n, n)
        else:
            self._sum.add(v.sum(), v.size)

    def compute(self) -> float:
        """The mean over all samples seen.

        Example:
            >>> import burn
            >>> m = burn.train.MeanMetric(lambda o, t: o)
            >>> m.update(burn.tensor([1.0, 2.0, 6.0]), None)
            >>> assert m.compute() == 3.0
        """
        return self._sum.mean()


class Loss(Metric):
    """The mean loss over the samples seen (each batch's mean loss weighted by its size).

    The Learner feeds it the loss of every batch through ``update_loss``; as
    a stand-alone metric it takes ``fn(outputs, targets)`` (a mean loss).

    Example:
        >>> import burn
        >>> loss = burn.train.Loss()
        >>> loss.reset()
        >>> loss.update_loss(burn.tensor(1.0), 2)
        >>> loss.update_loss(burn.tensor(4.0), 1)
        >>> assert loss.compute() == 2.0
    """

    name = "loss"
    higher_is_better = False

    def __init__(self, fn=None, name: str = "loss"):
        self.fn, self.name = fn, name
        self.reset()

    def reset(self) -> None:
        """Forget every loss seen.

        Example:
            >>> import burn
            >>> loss = burn.train.Loss()
            >>> loss.update_loss(burn.tensor(9.0), 1)
            >>> loss.reset(); loss.update_loss(burn.tensor(1.0), 1)
            >>> assert loss.compute() == 1.0
        """
        self._sum = _Sum()

    def update_loss(self, loss: Tensor, n: int) -> None:
        """Add one batch's mean ``loss`` over ``n`` samples.

        Example:
            >>> import burn
            >>> loss = burn.train.Loss()
            >>> loss.update_loss(burn.tensor(1.0), 3)
            >>> loss.update_loss(burn.tensor(5.0), 1)
            >>> assert loss.compute() == 2.0
        """
        loss = loss.detach()
        self._sum.add(loss * n, n)

    def update(self, outputs, targets) -> None:
        """Add ``fn(outputs, targets)`` for a Loss built with ``fn`` (raises BurnError otherwise).

        Example:
            >>> import burn
            >>> mse = burn.train.Loss(lambda o, t: ((o - t) ** 2).mean(), name="mse")
            >>> mse.update(burn.tensor([1.0, 3.0]), burn.tensor([1.0, 1.0]))
            >>> assert mse.compute() == 2.0
        """
        if self.fn is None:
            raise BurnError("Loss.update: this Loss metric has no fn; the Learner feeds it through "
                            "update_loss(loss, n), or build it as Loss(fn)")
        self.update_loss(self.fn(outputs, targets), _batch_size(outputs, targets))

    def compute(self) -> float:
        """The mean loss per sample over every batch since ``reset()``.

        Example:
            >>> import burn
            >>> loss = burn.train.Loss()
            >>> loss.update_loss(burn.tensor(2.0), 3)
            >>> assert loss.compute() == 2.0
        """
        return self._sum.mean()


def _batch_size(outputs, targets) -> int:
    ref = targets if isinstance(targets, Tensor) and targets.ndim else outputs
    return int(ref.shape[0]) if isinstance(ref, Tensor) and ref.ndim else 1


def _class_targets(name, outputs: Tensor, targets: Tensor) -> Tensor:
    """Integer class targets: as given, or the argmax of one-hot / probability targets."""
    if not isinstance(outputs, Tensor) or not isinstance(targets, Tensor):
        raise BurnError(f"{name}: outputs and targets must be burn tensors, got {type(outputs).__name__} and "
                        f"{type(targets).__name__}")
    if outputs.ndim != 2:
        raise BurnError(f"{name}: outputs must be logits or scores of shape (batch, classes), got "
                        f"{tuple(outputs.shape)}")
    if targets.ndim == 2 and tuple(targets.shape) == tuple(outputs.shape):
        return argmax(targets, axis=1)
    if targets.ndim != 1 or targets.shape[0] != outputs.shape[0]:
        raise BurnError(f"{name}: targets must be class indices of shape ({outputs.shape[0]},) or one-hot "
                        f"{tuple(outputs.shape)}, got {tuple(targets.shape)}")
    if not targets.dtype.is_integer:
        raise BurnError(f"{name}: class-index targets must be integers, got {targets.dtype.name}")
    return targets


class Accuracy(Metric):
    """The fraction of samples whose highest output is the target class.

    ``outputs``: scores ``(batch, classes)``; ``targets``: class indices
    ``(batch,)`` or one-hot/probabilities of the outputs' shape. Ties go to
    the first maximal class (``argmax``).

    Example:
        >>> import burn
        >>> acc = burn.train.Accuracy()
        >>> acc.reset()
        >>> acc.update(burn.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]), burn.tensor([1, 1, 1]))
        >>> assert abs(acc.compute() - 2 / 3) < 1e-12
    """

    name = "accuracy"
    higher_is_better = True

    def __init__(self, name: str = "accuracy"):
        self.name = name
        self.reset()

    def reset(self) -> None:
        """Forget every sample seen.

        Example:
            >>> import burn
            >>> acc = burn.train.Accuracy()
            >>> acc.update(burn.tensor([[1.0, 0.0]]), burn.tensor([1]))
            >>> acc.reset(); acc.update(burn.tensor([[1.0, 0.0]]), burn.tensor([0]))
            >>> assert acc.compute() == 1.0
        """
        self._sum = _Sum()

    def update(self, outputs, targets) -> None:
        """Count the samples of the batch whose argmax output is the target (indices or one-hot).

        Example:
            >>> import burn
            >>> acc = burn.train.Accuracy()
            >>> acc.update(burn.tensor([[0.2, 0.8], [0.6, 0.4]]), burn.tensor([[0.0, 1.0], [0.0, 1.0]]))
            >>> assert acc.compute() == 0.5
        """
        t = _class_targets("Accuracy", outputs, targets)
        if t.device != outputs.device:
            t = t.to_device(outputs.device)
        self._sum.add((argmax(outputs, axis=1) == t).sum(), int(t.shape[0]))

    def compute(self) -> float:
        """The fraction correct over every sample since ``reset()``.

        Example:
            >>> import burn
            >>> acc = burn.train.Accuracy()
            >>> acc.update(burn.tensor([[0.0, 1.0]] * 4), burn.tensor([1, 1, 1, 0]))
            >>> assert acc.compute() == 0.75
        """
        return self._sum.mean()


class TopKAccuracy(Metric):
    """The fraction of samples whose target class is among the ``k`` highest outputs.

    A sample counts as correct when fewer than ``k`` classes score strictly
    higher than the target class (so ties are resolved in the target's
    favour); computed with comparisons and sums, no sort.

    Example:
        >>> import burn
        >>> top2 = burn.train.TopKAccuracy(2)
        >>> top2.reset()
        >>> top2.update(burn.tensor([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7]]), burn.tensor([1, 0]))
        >>> assert top2.compute() == 0.5 and top2.name == "top2_accuracy"
    """

    higher_is_better = True

    def __init__(self, k: int = 5, name: str | None = None):
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise BurnError(f"TopKAccuracy: k must be an int >= 1, got {k!r}")
        self.k = k
        self.name = name or f"top{k}_accuracy"
        self.reset()

    def reset(self) -> None:
        """Forget every sample seen.

        Example:
            >>> import burn
            >>> top1 = burn.train.TopKAccuracy(1)
            >>> top1.update(burn.tensor([[1.0, 0.0]]), burn.tensor([1]))
            >>> top1.reset(); top1.update(burn.tensor([[1.0, 0.0]]), burn.tensor([0]))
            >>> assert top1.compute() == 1.0
        """
        self._sum = _Sum()

    def update(self, outputs, targets) -> None:
        """Count the samples of the batch whose target is among the ``k`` highest outputs.

        Example:
            >>> import burn
            >>> top2 = burn.train.TopKAccuracy(2)
            >>> top2.update(burn.tensor([[0.1, 0.5, 0.4]]), burn.tensor([2]))
            >>> assert top2.compute() == 1.0
        """
        t = _class_targets("TopKAccuracy", outputs, targets)
        if t.device != outputs.device:
            t = t.to_device(outputs.device)
        onehot = arange(outputs.shape[1], device=outputs.device) == t[:, None]
        target_score = where(onehot, outputs, 0.0).sum(axis=1, keepdims=True)
        higher = (outputs > target_score).sum(axis=1)
        self._sum.add((higher < self.k).sum(), int(t.shape[0]))

    def compute(self) -> float:
        """The fraction of samples counted correct since ``reset()``.

        Example:
            >>> import burn
            >>> top1 = burn.train.TopKAccuracy(1)
            >>> top1.update(burn.tensor([[0.1, 0.5, 0.4], [0.9, 0.0, 0.1]]), burn.tensor([2, 0]))
            >>> assert top1.compute() == 0.5
        """
        return self._sum.mean()


_TOPK = re.compile(r"^top[_-]?(\d+)(?:_acc(?:uracy)?)?$")


def get_metric(spec) -> Metric:
    """A metric from a name (``"accuracy"``, ``"top5"`` / ``"top5_accuracy"``) or a metric object.

    Example:
        >>> import burn
        >>> assert burn.train.get_metric("top3").k == 3
        >>> assert isinstance(burn.train.get_metric("acc"), burn.train.Accuracy)
    """
    if isinstance(spec, str):
        key = spec.strip().lower()
        if key in ("accuracy", "acc"):
            return Accuracy()
        m = _TOPK.match(key)
        if m:
            return TopKAccuracy(int(m.group(1)))
        raise BurnError(f"unknown metric {spec!r}: use 'accuracy', 'top<k>' (e.g. 'top5'), or a metric object "
                        f"(burn.train.Accuracy(), TopKAccuracy(k), MeanMetric(fn, name), or your own with "
                        f"update/compute/reset)")
    missing = [a for a in ("update", "compute", "reset") if not callable(getattr(spec, a, None))]
    if missing:
        raise BurnError(f"metric {spec!r} lacks {', '.join(missing)}: a metric needs update(outputs, targets), "
                        f"compute() and reset()")
    if not isinstance(getattr(spec, "name", None), str):
        raise BurnError(f"metric {spec!r} needs a str attribute 'name' (its label in history and display)")
    return spec
