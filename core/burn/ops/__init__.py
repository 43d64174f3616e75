"""The primitive and composite ops of burn, one module per family."""
from . import creation, elementwise, reduction, movement, linear  # noqa: F401
from . import conv, arrayapi, sorting  # noqa: F401
