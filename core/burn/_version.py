"""The version of burn core (the distribution's, in core/pyproject.toml).

Its own module, at the bottom of the layers, so that modules inside burn
(``burn.nn.state`` writes it into files) read it without importing the package.
"""
__version__ = "0.1.0"
