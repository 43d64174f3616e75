"""Old name of :mod:`burn_wgpu.native`, kept while burn-linalg and burn-signal import it
(they move to :mod:`burn_wgpu.api`); new code imports ``burn_wgpu.native``."""
from .native import NUMPY, WTensor, contiguous_strides, empty, numel, reshape_view  # noqa: F401
