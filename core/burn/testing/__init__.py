"""Testing helpers: ``gradcheck`` against finite differences, and the backend
conformance suite (``burn.testing.conformance``) that any backend package can run."""
from .gradcheck import gradcheck, numerical_grad  # noqa: F401
