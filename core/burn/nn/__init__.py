"""Neural-network building blocks (functional API; modules arrive with burn.nn's Module)."""
from . import functional  # noqa: F401
