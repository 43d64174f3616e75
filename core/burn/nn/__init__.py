"""Neural-network building blocks: Module, Parameter, layers, functional ops, initializers."""
from . import functional, init  # noqa: F401
from .module import Module, Parameter  # noqa: F401
from .layers import Linear, ReLU, GELU, Sequential  # noqa: F401
from . import state  # noqa: F401
from .state import save_state_dict, load_state_dict, load_metadata  # noqa: F401
