"""Runnable examples: ``python -m burn.examples.digits``."""
