"""burn: a deep-learning framework whose backends are plugins.

The path of every op: Tensor (``burn.tensor``) -> Bridge (``burn.bridge``:
handles and eager checks) -> Dispatch (``burn.dispatch``: the registry; the
lazy graph ``burn.graph`` and planner ``burn.fusion``) -> Backend (a plugin
such as burn-flex). See docs/architecture.md.

Example:
    >>> import burn
    >>> dev = burn.Device.flex().autodiff()
    >>> w = burn.tensor([[1.0, -2.0]], device=dev).require_grad()
    >>> grads = (w * 3).relu().sum().backward()
    >>> assert w.grad(grads).tolist() == [[3.0, 0.0]]
"""
from __future__ import annotations

from ._version import __version__  # noqa: F401
from .errors import (BurnError, ShapeError, DTypeError, DeviceMismatch, BackendUnavailable,  # noqa: F401
                     PluginError, AutodiffError, OutOfMemory, IndexOutOfRange, ReadOnlyError, CaptureError)
from .dlpack import SharedMemoryWritten  # noqa: F401
from .dtypes import (DType, float16, bfloat16, float32, float64, int8, int16, int32, int64,  # noqa: F401
                     uint8, uint16, uint32, uint64,
                     complex64, complex128, as_dtype, result_type, can_cast)
from .dtypes import bool_ as bool  # noqa: F401,A001  (Array API name)
from .device import Device  # noqa: F401
from .inspection import (finfo, iinfo, isdtype, __array_namespace_info__,  # noqa: F401
                         __array_api_version__)
from .backend import Backend  # noqa: F401
from .primitives import TensorMeta  # noqa: F401
from .tensor import Tensor  # noqa: F401
from .autodiff import Gradients, no_grad, enable_grad, is_grad_enabled  # noqa: F401
from .ops.creation import *  # noqa: F401,F403
from .ops.elementwise import *  # noqa: F401,F403
from .ops.reduction import *  # noqa: F401,F403
from .ops.movement import *  # noqa: F401,F403
from .ops.linear import *  # noqa: F401,F403
from .ops.arrayapi import *  # noqa: F401,F403
from .ops.sorting import *  # noqa: F401,F403
from .ops.utility import *  # noqa: F401,F403
from .ops.einsum import *  # noqa: F401,F403
from . import _methods  # noqa: F401  (binds Tensor methods and operators)
from . import fusion, plugins, dispatch  # noqa: F401
from .threads import set_num_threads, get_num_threads  # noqa: F401
from .library import backend_extension  # noqa: F401
from .hookspecs import hookimpl  # noqa: F401
from . import fused  # noqa: F401
from .fused import softmax, log_softmax  # noqa: F401

_methods.alias_dims(globals())      # dim= as PyTorch's name for axis= (docs/architecture.md, the aliases)

# Imported on first use (``burn.nn`` or ``import burn.nn``), so ``import burn`` stays quick.
_ON_FIRST_USE = ("nn", "optim", "data", "train", "amp", "capture")     # burn.capture: decorator and namespace

bool_ = bool
uint8 = uint8
e = 2.718281828459045
pi = 3.141592653589793
inf = float("inf")
nan = float("nan")
newaxis = None

# Array API aliases
absolute = abs  # noqa: F405
negative = neg  # noqa: F405
concatenate = concat  # noqa: F405


def __getattr__(name):
    if name in _ON_FIRST_USE:
        import importlib     # deferred: see _ON_FIRST_USE; importing binds burn.<name>
        return importlib.import_module(f"{__name__}.{name}")
    if name == "Graph":         # burn.capture.Graph, imported on first use like burn.capture
        import importlib
        return importlib.import_module(f"{__name__}.capture").Graph
    if name == "autocast":      # burn.amp.autocast, imported on first use like burn.amp
        import importlib
        return importlib.import_module(f"{__name__}.amp").autocast
    # burn.<namespace> (linalg, signal, fft, ...) comes from the plugin that registered it
    # with burn_register_namespaces; resolved once, later lookups are plain attribute reads
    if name == "testing":
        import importlib
        return importlib.import_module("burn.testing")
    if name.startswith("_"):
        raise AttributeError(f"module 'burn' has no attribute {name!r}")
    ns = plugins.namespace(name)
    globals()[name] = ns
    return ns
