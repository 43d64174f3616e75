"""Export rules of burn-linalg's and burn-signal's ops where ONNX has a form for them
(declared by name: neither plugin is imported). ``linalg::det`` is ONNX's Det; real
convolutions and correlations are Conv; ops with a burn-ops reference definition
(``linalg::diagonal``, ``linalg::cholesky``, ``signal::sosfilt``...) export through it;
LAPACK-only ops and IIR filters have no ONNX form.

Example:
    >>> from burn_onnx.export.registry import RULES
    >>> assert RULES["linalg::det"].onnx == "Det" and not RULES["linalg::svd"].supported
"""
from __future__ import annotations

from .registry import export_rule, no_onnx_form

__all__: list = []


@export_rule("linalg::det", onnx="Det")
def _det(ctx, node):
    return ctx.op("Det", node.args[0].name)


for _op in ("solve", "inv", "slogdet", "qr", "svd", "svdvals", "eigh", "eigvalsh", "eig", "eigvals", "pinv",
            "lstsq", "lu", "lu_factor", "lu_solve"):
    no_onnx_form(f"linalg::{_op}", "ONNX has no operator for this LAPACK routine; compute it before export "
                                   "(a fixed matrix becomes a constant) or outside the exported function")
no_onnx_form("signal::lfilter", "an IIR filter's recursion has no ONNX operator; use an FIR filter "
                                "(signal.convolve)")
no_onnx_form("signal::sosfilt", "its sections are IIR filters (signal::lfilter), whose recursion has no ONNX "
                                "operator; use an FIR filter (signal.convolve)")
for _op in ("all_reduce", "broadcast", "all_gather", "reduce_scatter"):
    no_onnx_form(f"dist::{_op}", "a collective across the ranks of a burn-dist job; an ONNX model runs in one "
                                 "process: export the wrapped model (DataParallel's .module), not the training step")


def _conv_nd(ctx, node, flip):
    a, b = node.args[:2]
    mode = node.kwargs.get("mode", "full")
    if node.kwargs.get("axes") is not None:
        raise ctx.fail("fftconvolve with axes= (broadcast batch axes) has no Conv form here; convolve all axes")
    if not a.dtype.is_floating:
        raise ctx.fail(f"Conv needs floating inputs, got {a} and {b}")
    d = a.ndim
    if not 1 <= d <= 3:
        raise ctx.fail(f"Conv covers 1 to 3 dimensions, got {a}")
    if mode == "valid" and any(m > n for n, m in zip(a.shape, b.shape)):
        if not flip:
            raise ctx.fail("correlate with mode='valid' and a larger second input has no Conv form")
        a, b = b, a                  # convolution commutes: scipy swaps the inputs too
    x = ctx.op("Unsqueeze", a.name, ctx.ints([0, 1]))
    w = ctx.op("Unsqueeze", b.name, ctx.ints([0, 1]))
    if flip:                         # ONNX's Conv is a correlation: convolution flips the kernel
        axes = list(range(2, d + 2))
        w = ctx.op("Slice", w, ctx.ints([-1] * d), ctx.ints([-(2 ** 62)] * d), ctx.ints(axes), ctx.ints([-1] * d))
    pads = [0] * (2 * d) if mode == "valid" else [m - 1 for m in b.shape] * 2
    y = ctx.op("Conv", x, w, pads=pads, kernel_shape=list(b.shape))
    if mode == "same":
        starts = [(m - 1) // 2 for m in b.shape]
        y = ctx.op("Slice", y, ctx.ints(starts), ctx.ints([s + n for s, n in zip(starts, a.shape)]),
                   ctx.ints(list(range(2, d + 2))))
    return ctx.op("Squeeze", y, ctx.ints([0, 1]))


@export_rule("signal::convolve", onnx="Conv (kernel reversed)", note="real inputs, 1-3 dimensions")
def _convolve(ctx, node):
    return _conv_nd(ctx, node, True)


@export_rule("signal::fftconvolve", onnx="Conv (kernel reversed)", note="real inputs, axes=None")
def _fftconvolve(ctx, node):
    return _conv_nd(ctx, node, True)


@export_rule("signal::correlate", onnx="Conv", note="real inputs, 1-3 dimensions")
def _correlate(ctx, node):
    return _conv_nd(ctx, node, False)
