"""Loss modules (and their functional forms): each takes ``reduction`` = "mean", "sum" or "none"."""
from __future__ import annotations

from . import functional as F
from .functional import bce_with_logits, cross_entropy, mse_loss, nll_loss
from .module import Module

__all__ = ["CrossEntropyLoss", "NLLLoss", "MSELoss", "BCEWithLogitsLoss",
           "cross_entropy", "nll_loss", "mse_loss", "bce_with_logits"]

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    def __init__(self, reduction: str = "mean"):
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self) -> str:
        """The reduction, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.MSELoss(reduction="sum").extra_repr() == "reduction='sum'"
        """
        return f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """``cross_entropy(logits [N, C] or [N, C, d1, ...], target)`` with integer classes or
    probabilities, as PyTorch's: per-class ``weight``, ``ignore_index`` (None: nothing is
    ignored), ``label_smoothing`` mixing the target with the uniform distribution.

    Example:
        >>> import burn, math
        >>> loss = burn.nn.CrossEntropyLoss(label_smoothing=0.1)(burn.zeros((2, 4)), burn.tensor([1, 2]))
        >>> assert abs(loss.item() - math.log(4)) < 1e-6
        >>> masked = burn.nn.CrossEntropyLoss(ignore_index=-1)(burn.zeros((2, 4)), burn.tensor([1, -1]))
        >>> assert abs(masked.item() - math.log(4)) < 1e-6
    """

    def __init__(self, reduction: str = "mean", label_smoothing: float = 0.0, weight=None, ignore_index=None):
        super().__init__(reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"CrossEntropyLoss: label_smoothing must be in [0, 1], got {label_smoothing}")
        self.label_smoothing = float(label_smoothing)
        self.weight = weight
        self.ignore_index = ignore_index

    def forward(self, logits, target):
        """Cross entropy of ``logits`` [N, C] against class indices ``target`` [N].

        Example:
            >>> import burn, math
            >>> loss = burn.nn.CrossEntropyLoss().forward(burn.tensor([[0.0, 0.0]]), burn.tensor([1]))
            >>> assert abs(loss.item() - math.log(2)) < 1e-6
        """
        return F.cross_entropy(logits, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)

    def extra_repr(self) -> str:
        """Reduction and label smoothing, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.CrossEntropyLoss().extra_repr() == "reduction='mean', label_smoothing=0.0"
        """
        return f"reduction={self.reduction!r}, label_smoothing={self.label_smoothing}"


class NLLLoss(_Loss):
    """Negative log-likelihood of integer classes [N] (or [N, d1, ...]) under log-probabilities
    [N, C] (or [N, C, d1, ...]), with PyTorch's per-class ``weight`` and ``ignore_index``.

    Example:
        >>> import burn
        >>> lp = burn.tensor([[-0.5, -1.0], [-2.0, -0.25]])
        >>> assert burn.nn.NLLLoss(reduction="sum")(lp, burn.tensor([0, 1])).item() == 0.75
    """

    def __init__(self, reduction: str = "mean", weight=None, ignore_index=None):
        super().__init__(reduction)
        self.weight = weight
        self.ignore_index = ignore_index

    def forward(self, log_probs, target):
        """Negative log-likelihood of ``log_probs`` [N, C] at class indices ``target`` [N].

        Example:
            >>> import burn
            >>> loss = burn.nn.NLLLoss().forward(burn.tensor([[-1.0, -2.0]]), burn.tensor([1]))
            >>> assert loss.item() == 2.0
        """
        return F.nll_loss(log_probs, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class MSELoss(_Loss):
    """Squared error ``(input - target)²``, reduced.

    Example:
        >>> import burn
        >>> assert burn.nn.MSELoss(reduction="sum")(burn.tensor([1.0, 3.0]), burn.tensor([0.0, 0.0])).item() == 10.0
    """

    def forward(self, input, target):
        """Mean (or summed) squared difference of ``input`` and ``target``.

        Example:
            >>> import burn
            >>> loss = burn.nn.MSELoss().forward(burn.tensor([1.0, 3.0]), burn.tensor([1.0, 1.0]))
            >>> assert loss.item() == 2.0
        """
        return F.mse_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy on logits (stable), with optional per-class ``pos_weight`` and
    per-element ``weight`` (see :func:`burn.nn.functional.bce_with_logits`).

    Example:
        >>> import burn, math
        >>> loss = burn.nn.BCEWithLogitsLoss(pos_weight=burn.tensor([3.0]))
        >>> assert abs(loss(burn.zeros((2, 1)), burn.ones((2, 1))).item() - 3 * math.log(2)) < 1e-6
    """

    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None):
        super().__init__(reduction)
        # buffers, as in torch: they move with to_device and appear in state_dict
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, logits, target):
        """Binary cross entropy of ``sigmoid(logits)`` against ``target`` in [0, 1] (computed stably).

        Example:
            >>> import burn, math
            >>> loss = burn.nn.BCEWithLogitsLoss().forward(burn.tensor([0.0]), burn.tensor([1.0]))
            >>> assert abs(loss.item() - math.log(2)) < 1e-6
        """
        return F.bce_with_logits(logits, target, weight=self.weight, pos_weight=self.pos_weight,
                                 reduction=self.reduction)

    def extra_repr(self) -> str:
        """Reduction and whether ``pos_weight`` is set, shown in ``repr``.

        Example:
            >>> import burn
            >>> assert burn.nn.BCEWithLogitsLoss().extra_repr() == "reduction='mean', pos_weight=False"
        """
        return f"reduction={self.reduction!r}, pos_weight={self.pos_weight is not None}"
