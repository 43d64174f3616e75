"""Training: a Learner with metrics, a live progress display, checkpoints, resume and early stopping.

Example:
    >>> import burn, numpy as np
    >>> dev = burn.Device.flex().autodiff()
    >>> X = np.random.default_rng(1).standard_normal((32, 3)).astype(np.float32)
    >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(X, (X.sum(1) > 0).astype(np.int64)), 8, device=dev)
    >>> model = burn.nn.Linear(3, 2, device=dev)
    >>> learner = burn.train.Learner(model, burn.optim.Adam(model, lr=0.05), burn.nn.functional.cross_entropy,
    ...                              metrics=["accuracy"], progress=False)
    >>> history = learner.fit(dl, epochs=5, valid_loader=dl)
    >>> assert set(history.last) >= {"train_loss", "train_accuracy", "valid_loss", "valid_accuracy"}
"""
from .metrics import Metric, Loss, Accuracy, TopKAccuracy, MeanMetric, get_metric  # noqa: F401
from .early_stopping import EarlyStopping  # noqa: F401
from .history import History  # noqa: F401
from .progress import ProgressDisplay, format_metrics  # noqa: F401
from .checkpoint import list_checkpoints, latest_checkpoint, capture_rng, restore_rng  # noqa: F401
from .parallel import TrainingParallel  # noqa: F401
from .learner import Learner  # noqa: F401

__all__ = ["Learner", "History", "EarlyStopping", "ProgressDisplay", "Metric", "Loss", "Accuracy",
           "TopKAccuracy", "MeanMetric", "get_metric", "format_metrics", "list_checkpoints",
           "latest_checkpoint", "capture_rng", "restore_rng", "TrainingParallel"]
