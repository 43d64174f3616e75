"""Optimizers that consume the ``burn.Gradients`` of ``backward()``."""
from .optimizer import Optimizer, SGD, Adam, AdamW  # noqa: F401
