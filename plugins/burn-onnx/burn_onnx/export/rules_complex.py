"""Complex values inside an exported graph, and the FFTs of burn-signal as ONNX's DFT.

onnxruntime runs no complex ops, so a complex value travels through the ONNX graph as a real
tensor with a trailing axis of 2 (real and imaginary parts, the layout of ONNX's DFT). The
ops below have a rule for such operands; a complex graph input or output is an error (take
``burn.real`` / ``burn.imag`` / ``burn.abs`` inside the function, e.g. a spectrogram
``burn.abs(burn.signal.stft(x, ...)[2])``).

Example:
    >>> from burn_onnx.export.registry import COMPLEX
    >>> assert {"mul", "abs", "signal::rfft", "signal::irfft"} <= set(COMPLEX)
"""
from __future__ import annotations

import math

import numpy as np

import burn

from .context import Value
from .registry import complex_rule, export_rule
from .rules_elementwise import atan2
from .rules_movement import _same, _slice as _real_slice

__all__: list = []


def _rd(dtype):
    return burn.dtypes.real_of(dtype) if dtype.is_complex else dtype


def _part(ctx, name, k):
    return ctx.op("Gather", name, ctx.const(np.asarray(k, np.int64)), axis=-1)


def _pack(ctx, re, im):
    return ctx.op("Concat", ctx.op("Unsqueeze", re, ctx.ints([-1])), ctx.op("Unsqueeze", im, ctx.ints([-1])), axis=-1)


def _pair(ctx, v, dtype):
    """The [..., 2] form of Value ``v`` (a real one gets a zero imaginary part)."""
    if v.dtype.is_complex:
        return v.name if _rd(v.dtype) is _rd(dtype) else ctx.cast(v.name, _rd(dtype))
    re = v.name if v.dtype is _rd(dtype) else ctx.cast(v.name, _rd(dtype))
    im = ctx.op("Expand", ctx.scalar(0, _rd(dtype)), ctx.op("Shape", re))
    return _pack(ctx, re, im)


@complex_rule("cast")
def _cast(ctx, node):
    x, out = node.inputs[0], node.outputs[0][1]
    if out.is_complex:
        return _pair(ctx, x, out)
    return ctx.cast(_part(ctx, x.name, 0), out)        # numpy drops the imaginary part


def _parts(ctx, node):
    d = node.outputs[0][1]
    a, b = (_pair(ctx, v, d) for v in node.inputs)
    return (_part(ctx, a, 0), _part(ctx, a, 1)), (_part(ctx, b, 0), _part(ctx, b, 1)), a, b


@complex_rule("add")
def _add(ctx, node):
    _, _, a, b = _parts(ctx, node)
    return ctx.op("Add", a, b)


@complex_rule("sub")
def _sub(ctx, node):
    _, _, a, b = _parts(ctx, node)
    return ctx.op("Sub", a, b)


@complex_rule("mul")
def _mul(ctx, node):
    (ar, ai), (br, bi), _, _ = _parts(ctx, node)
    re = ctx.op("Sub", ctx.op("Mul", ar, br), ctx.op("Mul", ai, bi))
    im = ctx.op("Add", ctx.op("Mul", ar, bi), ctx.op("Mul", ai, br))
    return _pack(ctx, re, im)


@complex_rule("div")
def _div(ctx, node):
    (ar, ai), (br, bi), _, _ = _parts(ctx, node)
    den = ctx.op("Add", ctx.op("Mul", br, br), ctx.op("Mul", bi, bi))
    re = ctx.op("Div", ctx.op("Add", ctx.op("Mul", ar, br), ctx.op("Mul", ai, bi)), den)
    im = ctx.op("Div", ctx.op("Sub", ctx.op("Mul", ai, br), ctx.op("Mul", ar, bi)), den)
    return _pack(ctx, re, im)


@complex_rule("neg")
def _neg(ctx, node):
    return ctx.op("Neg", node.inputs[0].name)


@complex_rule("conj")
def _conj(ctx, node):
    x = node.inputs[0]
    return ctx.op("Mul", x.name, ctx.const(np.asarray([1, -1]), dtype=_rd(x.dtype)))


@complex_rule("real")
def _real(ctx, node):
    return _part(ctx, node.inputs[0].name, 0)


@complex_rule("imag")
def _imag(ctx, node):
    return _part(ctx, node.inputs[0].name, 1)


@complex_rule("abs")
def _abs(ctx, node):
    x = node.inputs[0].name
    return ctx.op("Sqrt", ctx.op("ReduceSum", ctx.op("Mul", x, x), ctx.ints([-1]), keepdims=0))


@complex_rule("angle")
def _angle(ctx, node):
    x = node.inputs[0]
    d = _rd(x.dtype)
    return atan2(ctx, Value(_part(ctx, x.name, 1), x.shape, d), Value(_part(ctx, x.name, 0), x.shape, d))


@complex_rule("reshape")
def _reshape(ctx, node):
    return ctx.op("Reshape", node.inputs[0].name, ctx.ints(list(node.dyn("shape")) + [2]))


@complex_rule("permute")
def _permute(ctx, node):
    axes = list(node.attrs["axes"])
    return ctx.op("Transpose", node.inputs[0].name, perm=axes + [len(axes)])


@complex_rule("broadcast_to")
def _broadcast_to(ctx, node):
    x = node.inputs[0]
    shape = list(node.dyn("shape"))
    lead = len(shape) - x.ndim
    for i in range(x.ndim):
        if _same(shape[lead + i], x.dims[i]):
            shape[lead + i] = 1
    return ctx.op("Expand", x.name, ctx.ints(shape + [1]))


# a slice names only the logical axes: the real rule slices the [..., 2] pairs as they are
complex_rule("slice")(_real_slice)


@complex_rule("concat")
def _concat(ctx, node):
    d = node.outputs[0][1]
    return ctx.op("Concat", *[_pair(ctx, v, d) for v in node.inputs], axis=node.attrs["axis"])


@complex_rule("pad")
def _pad(ctx, node):
    x = node.inputs[0]
    pw = list(node.attrs["pad_width"]) + [(0, 0)]
    if node.attrs["value"] != 0:
        raise ctx.fail("padding a complex tensor with a value other than 0")
    return ctx.op("Pad", x.name, ctx.ints([a for a, _ in pw] + [b for _, b in pw]), ctx.scalar(0, _rd(x.dtype)))


@complex_rule("sum")
def _sum(ctx, node):
    x = node.inputs[0]
    axis = node.attrs.get("axis")
    axes = list(range(x.ndim)) if axis is None else [a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis)]
    if not axes:
        return ctx.op("Identity", x.name)
    return ctx.op("ReduceSum", x.name, ctx.ints(axes), keepdims=int(bool(node.attrs.get("keepdims"))))


# -- DFT ----------------------------------------------------------------------------------------

def _dft(ctx, x, n, axis, inverse=0, onesided=0):
    length = ctx.const(np.asarray(n, np.int64))
    if ctx.opset >= 20:          # opset 20 moved the axis from an attribute to an input
        return ctx.op("DFT", x, length, ctx.const(np.asarray(axis, np.int64)), inverse=inverse, onesided=onesided)
    return ctx.op("DFT", x, length, axis=axis, inverse=inverse, onesided=onesided)


def _scale(ctx, x, factor, dtype):
    return x if factor == 1 else ctx.op("Mul", x, ctx.scalar(factor, _rd(dtype)))


def _norm(norm, n, inverse):
    """The factor numpy applies, relative to ONNX's DFT (no scale forward, 1/n inverse)."""
    want = {"backward": (1.0, 1.0 / n), "ortho": (1.0 / math.sqrt(n), 1.0 / math.sqrt(n)),
            "forward": (1.0 / n, 1.0)}[norm][inverse]
    return want * (n if inverse else 1)


def _transform(ctx, name, is_complex, shape, n, axis, kind, norm, dtype):
    """One 1-D transform along ``axis``; returns (name, shape) of the [..., 2] result."""
    if kind in ("fft", "ifft", "rfft"):
        x = name if is_complex else ctx.op("Unsqueeze", name, ctx.ints([-1]))
        inv = int(kind == "ifft")
        y = _dft(ctx, x, n, axis, inverse=inv, onesided=int(kind == "rfft"))
        shape = list(shape)
        shape[axis] = n // 2 + 1 if kind == "rfft" else n
        return _scale(ctx, y, _norm(norm, n, inv), dtype), shape
    # irfft: rebuild the full spectrum from its Hermitian half, inverse c2c, real part
    m = n // 2 + 1
    length = shape[axis]
    x = name
    if length > m:
        x = ctx.op("Slice", x, ctx.ints([0]), ctx.ints([m]), ctx.ints([axis]))
    elif length < m:
        pads = [0] * (2 * (len(shape) + 1))
        pads[len(shape) + 1 + axis] = m - length
        x = ctx.op("Pad", x, ctx.ints(pads), ctx.scalar(0, _rd(dtype)))
    if n - m > 0:
        mirror = ctx.op("Slice", x, ctx.ints([n - m]), ctx.ints([0]), ctx.ints([axis]), ctx.ints([-1]))
        mirror = ctx.op("Mul", mirror, ctx.const(np.asarray([1, -1]), dtype=_rd(dtype)))
        x = ctx.op("Concat", x, mirror, axis=axis)
    y = _dft(ctx, x, n, axis, inverse=1)
    shape = list(shape)
    shape[axis] = n
    return _scale(ctx, _part(ctx, y, 0), _norm(norm, n, 1), dtype), shape


def _fft_rule(name, kind, multi):
    @export_rule(f"signal::{name}", onnx="DFT" + (" per axis" if multi else ""),
                 note="complex values as [..., 2] real pairs inside the graph")
    def rule(ctx, node):
        raise ctx.fail("its input or output is complex, and complex tensors cannot be graph inputs or outputs")

    @complex_rule(f"signal::{name}")
    def crule(ctx, node):
        x = node.args[0]
        kw = node.kwargs
        axes = list(kw["axes"]) if multi else [kw["axis"]]
        sizes = list(kw["s"]) if multi else [kw["n"]]
        axes = [a % x.ndim for a in axes]
        norm = kw.get("norm", "backward")
        out_dtype = node.outputs[0][1]
        plan = [(a, n, kind) for a, n in zip(axes, sizes)]
        if kind == "rfft":          # the real transform on the last axis first, c2c on the rest
            plan = [(axes[-1], sizes[-1], "rfft")] + [(a, n, "fft") for a, n in zip(axes[:-1], sizes[:-1])]
        elif kind == "irfft":       # c2c inverses first, the real one on the last axis
            plan = [(a, n, "ifft") for a, n in zip(axes[:-1], sizes[:-1])] + [(axes[-1], sizes[-1], "irfft")]
        name_, is_c, shape = x.name, x.dtype.is_complex, list(x.shape)
        for a, n, k in plan:
            name_, shape = _transform(ctx, name_, is_c, shape, n, a, k, norm, out_dtype)
            is_c = k != "irfft"
        return name_


for _name, _kind in (("fft", "fft"), ("ifft", "ifft"), ("rfft", "rfft"), ("irfft", "irfft")):
    _fft_rule(_name, _kind, False)
    _fft_rule(_name + "n", _kind, True)
