"""Import rule of ONNX's ``DFT`` (opset 17: axis attribute; opset 20: axis input) through
burn-signal's FFTs: the [..., 1] real or [..., 2] (real, imaginary) layout of the graph is
turned into a complex burn tensor, transformed, and split back into [..., 2] pairs.

- forward: ``fft``; ``onesided=1`` (a real input): ``rfft``, the first n//2 + 1 frequencies;
- ``inverse=1``: ``ifft`` (ONNX and numpy both scale by 1/n); ``inverse=1, onesided=1``:
  ``irfft``, a real [..., 1] signal of ``dft_length`` (default 2 * (m - 1)).

Example:
    >>> from burn_onnx.importer.registry import OPS
    >>> assert OPS["DFT"].static == frozenset({1, 2})
"""
from __future__ import annotations

import numpy as np

import burn

from .registry import rule

__all__: list = []


def _signal(node):
    try:
        return burn.signal
    except AttributeError as e:
        raise node.fail(f"needs burn.signal (pip install burn-signal): {e}") from e


@rule("DFT", static=(1, 2), note="opset 17 and 20 forms, onesided and inverse, through burn.signal")
def _dft(node, x, dft_length=None, axis=None):
    sig = _signal(node)
    nd = len(x.shape)
    if nd < 2 or x.shape[-1] not in (1, 2):
        raise node.fail(f"input of shape {tuple(x.shape)} must end in an axis of 1 (real) or 2 (complex)")
    if not x.dtype.is_inexact:
        raise node.fail(f"input dtype {x.dtype.name} is not a float type")
    a = node.attr("axis", 1 if node.opset < 20 else -2) if axis is None else node.ints(axis, "axis")[0]
    if not (-nd <= a <= -2 or 0 <= a <= nd - 2):
        raise node.fail(f"axis {a} is out of range for an input of rank {nd} (the last axis holds the parts)")
    a %= nd
    inverse, onesided = bool(node.attr("inverse", 0)), bool(node.attr("onesided", 0))
    real_in = x.shape[-1] == 1
    if dft_length is not None:
        n = node.ints(dft_length, "dft_length")[0]
    else:
        n = 2 * (x.shape[a] - 1) if inverse and onesided else x.shape[a]
    if n < 1:
        raise node.fail(f"dft_length {n} must be positive")

    def complex_of(x):
        if real_in:
            return burn.reshape(x, x.shape[:-1])
        return burn.make_complex(burn.reshape(x[..., 0:1], x.shape[:-1]), burn.reshape(x[..., 1:2], x.shape[:-1]))

    def pairs(z):
        return burn.stack([burn.real(z), burn.imag(z)], axis=-1)

    if inverse and onesided:
        return lambda x, *_: burn.expand_dims(sig.irfft(complex_of(x), n=n, axis=a), axis=-1)
    if inverse:
        return lambda x, *_: pairs(sig.ifft(complex_of(x), n=n, axis=a))
    if onesided and real_in:
        return lambda x, *_: pairs(sig.rfft(complex_of(x), n=n, axis=a))
    if onesided:
        raise node.fail(f"onesided=1 needs a real input ([..., 1]), got shape {tuple(x.shape)}")
    return lambda x, *_: pairs(sig.fft(complex_of(x), n=n, axis=a))
