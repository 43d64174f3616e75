"""Optimizers that consume the ``burn.Gradients`` of ``backward()``, parameter groups,
gradient clipping and learning-rate schedulers."""
from .param_group import ParamGroup  # noqa: F401
from .clip import clip_grad_norm, clip_grad_value, GradClip  # noqa: F401
from .optimizer import Optimizer, SGD, Adam, AdamW, save, load  # noqa: F401
from .adaptive import RMSprop, Adagrad  # noqa: F401
from .schedulers import (LRScheduler, LambdaLR, StepLR, MultiStepLR, ExponentialLR,  # noqa: F401
                         CosineAnnealingLR, LinearLR, LinearWarmup, ConstantLR, OneCycleLR, SequentialLR,
                         ChainedScheduler, ReduceLROnPlateau)
