"""The ``burn::`` fused ops of core: extension ops with kernels from the backend plugins.

One layer above :mod:`burn.library` (they are ``backend_extension`` ops) and below
``burn.nn`` and ``burn.optim``, which call them. Each has a reference definition
in burn ops (so every backend and autodiff run it), a meta rule and, where the
reference VJP would cost more, an analytic backward. The backends register
kernels for these names (``burn_flex``, ``burn_wgpu``, ``burn_cuda``).

==========================================  ==============================
op name                                     defined in
==========================================  ==============================
``burn::softmax``, ``burn::softmax_grad``    :mod:`burn.fused.softmax`
``burn::log_softmax``, ``..._grad``          :mod:`burn.fused.softmax`
``burn::softmax_cross_entropy``, ``..._grad``  :mod:`burn.fused.softmax`
``burn::layer_norm``, ``burn::layer_norm_grad``  :mod:`burn.fused.layer_norm`
``burn::linear_relu``                        :mod:`burn.fused.linear`
``burn::nf4_dequantize``, ``burn::nf4_matmul``  :mod:`burn.fused.linear`
``burn::adam_update``, ``burn::sgd_update``  :mod:`burn.fused.updates`
``burn::attention``, ``..._grad``            :mod:`burn.fused.attention`
``burn::lstm_layer``, ``burn::gru_layer``, ``..._grad``  :mod:`burn.fused.recurrent`
==========================================  ==============================

Example:
    >>> import burn
    >>> y = burn.fused.linear_relu(burn.ones((2, 3)), burn.ones((3, 4)), -burn.ones((4,)))
    >>> assert y.tolist() == [[2.0] * 4] * 2
"""
from __future__ import annotations

from .attention import attention_fused, attention_grad
from .layer_norm import layer_norm, layer_norm_fused, layer_norm_grad
from .linear import NF4_CODE, linear_relu, nf4_dequantize, nf4_matmul
from .softmax import (log_softmax, log_softmax_fused, log_softmax_grad, softmax, softmax_cross_entropy,
                      softmax_cross_entropy_grad, softmax_fused, softmax_grad)
from .recurrent import gru_layer, gru_layer_grad, lstm_layer, lstm_layer_grad
from .updates import adam_update, adam_update_group, group_kernel, sgd_update, sgd_update_group

__all__ = ["softmax", "log_softmax", "softmax_fused", "softmax_grad", "log_softmax_fused", "log_softmax_grad",
           "softmax_cross_entropy", "softmax_cross_entropy_grad", "layer_norm", "layer_norm_fused",
           "layer_norm_grad", "linear_relu", "NF4_CODE", "nf4_dequantize", "nf4_matmul", "adam_update",
           "adam_update_group", "group_kernel", "sgd_update", "sgd_update_group", "attention_fused", "attention_grad", "lstm_layer", "lstm_layer_grad", "gru_layer",
           "gru_layer_grad"]
