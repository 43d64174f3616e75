"""The extension ops of burn.signal: ``.meta`` rules, backward rules, references.

Each op is a :func:`burn.backend_extension` named ``signal::<name>``. Tensor
operands are positional, options are keywords, already normalized by the
public functions of :mod:`burn_signal._api` (concrete sizes, non-negative
axes), so a kernel never resolves defaults. Kernels live per backend in their
own modules (``_flex``) and are registered by the plugin's hook.

Gradients follow PyTorch's convention for complex numbers: the gradient of
a real loss L with respect to a complex z is dL/dRe z + i dL/dIm z, so the
adjoint of a linear map is its conjugate transpose. FFTs differentiate
through their adjoints (an FFT of the dual normalization), convolutions
through correlations with the other operand, and ``lfilter`` through the
reversed-filter adjoint. ``stft``, ``istft``, ``sosfilt`` and ``resample``
differentiate through their reference definitions, which are written with
the other ops of this module.
"""
from __future__ import annotations

import numpy as np

import burn
from burn.library import kernels_only
from burn import DTypeError, ShapeError, TensorMeta
from burn.errors import require_same_dtype

from ._errors import SignalError

_EXT: dict = {}
_FLOATS = ("float32", "float64", "complex64", "complex128")
NORMS = ("backward", "ortho", "forward")
_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _desc(m) -> str:
    return f"shape={tuple(m.shape)} dtype={m.dtype}"


def _ext(name, reference):
    ext = burn.backend_extension(f"signal::{name}")(reference)
    _EXT[name] = ext
    return ext


def _no_reference(op):
    return kernels_only(f"signal::{op}")


# -- meta helpers -------------------------------------------------------------------------------

def complex_of(d):
    return burn.complex64 if d in (burn.float32, burn.complex64) else burn.complex128


def real_of(d):
    return burn.float32 if d in (burn.float32, burn.complex64) else burn.float64


def check_dtype(op, *metas, real=False):
    for m in metas:
        if str(m.dtype) not in _FLOATS:
            raise DTypeError(f"signal::{op}: needs a float32/float64/complex64/complex128 tensor, got "
                             f"{_desc(m)}; cast it with x.astype(burn.float64) (or burn.float32)")
        if real and m.dtype.is_complex:
            raise DTypeError(f"signal::{op}: needs a real input, got {_desc(m)}; use the complex "
                             f"transform (e.g. burn.signal.fft) or take burn.real(x)")
    require_same_dtype(f"signal::{op}", *metas)


def check_norm(op, norm):
    if norm is None:
        return "backward"
    if norm not in _DUAL:
        raise SignalError(f"signal::{op}: norm must be one of {NORMS} (or None), got {norm!r}")
    return norm


def check_axes(op, m, axes):
    nd = len(m.shape)
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool) or not -nd <= a < nd:
            raise ShapeError(f"signal::{op}: axis {a!r} is out of range for the input {_desc(m)}")
        out.append(int(a) % nd)
    if len(set(out)) != len(out):
        raise ShapeError(f"signal::{op}: repeated axes {tuple(axes)} for the input {_desc(m)}")
    return tuple(out)


# -- small burn-op helpers ----------------------------------------------------------------------------

def cj(t):
    return burn.conj(t) if t.dtype.is_complex else t


def pad_axis(t, axis, before, after):
    if before == 0 and after == 0:
        return t
    pw = [(0, 0)] * t.ndim
    pw[axis] = (before, after)
    return burn.pad(t, tuple(pw))


def slice_axis(t, axis, start, stop):
    if start == 0 and stop == t.shape[axis]:
        return t
    key = [slice(None)] * t.ndim
    key[axis] = slice(start, stop)
    return t[tuple(key)]


def fit_axis(t, axis, n):
    """Crop or zero-pad ``axis`` to length ``n`` (the adjoint of itself, reversed)."""
    cur = t.shape[axis]
    return slice_axis(t, axis, 0, n) if cur > n else pad_axis(t, axis, 0, n - cur)


def along(values, axis, like, dtype=None):
    """A constant numpy vector as a tensor laid along ``axis`` of ``like``."""
    shape = [1] * like.ndim
    shape[axis] = -1
    return burn.tensor(np.asarray(values).reshape(shape), dtype=dtype or real_of(like.dtype), device=like.device)


def sum_to(g, shape):
    """The adjoint of broadcasting: sum ``g`` down to ``shape`` (same rank)."""
    axes = tuple(i for i, (a, b) in enumerate(zip(g.shape, shape)) if a != b)
    return burn.sum(g, axis=axes, keepdims=True) if axes else g


# -- FFTs ---------------------------------------------------------------------------------------------
# Eight ops: fft, ifft, rfft, irfft (kwargs n, axis, norm) and fftn, ifftn, rfftn, irfftn (s, axes, norm).
# Their backward rules share one adjoint written in terms of (s, axes).

_FFT_KIND = {"fft": "c2c", "ifft": "c2c", "rfft": "r2c", "irfft": "c2r"}


def _sa(kw):
    if "axes" in kw:
        return tuple(kw["s"]), tuple(kw["axes"]), kw.get("norm", "backward")
    return (kw["n"],), (kw["axis"],), kw.get("norm", "backward")


def fft_meta(op, kind, x, s, axes, norm):
    check_norm(op, norm)
    check_dtype(op, x, real=kind == "r2c")
    axes = check_axes(op, x, axes)
    if len(s) != len(axes):
        raise ShapeError(f"signal::{op}: s={tuple(s)} and axes={tuple(axes)} must have the same length")
    for a, n in zip(axes, s):
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ShapeError(f"signal::{op}: invalid number of FFT data points ({n!r}) along axis {a}; "
                             f"it must be >= 1 (input {_desc(x)})")
        if x.shape[a] == 0:
            raise ShapeError(f"signal::{op}: the input is empty along axis {a} ({_desc(x)})")
    shape = list(x.shape)
    for a, n in zip(axes, s):
        shape[a] = int(n)
    if kind == "r2c":
        shape[axes[-1]] = s[-1] // 2 + 1
    dtype = real_of(x.dtype) if kind == "c2r" else complex_of(x.dtype)
    return TensorMeta(tuple(shape), dtype)


def fft_adjoint(name, x, g, s, axes, norm):
    """The gradient for input ``x`` of ``name`` (fft/ifft/rfft/irfft, 1-D or n-D) given ``g``."""
    base = name[:-1] if name not in _FFT_KIND else name
    kind = _FFT_KIND[base]
    dual = _DUAL[norm]
    if kind == "c2c":
        # the adjoint of an unnormalized DFT is n times the inverse: the inverse with the dual norm
        adj = _EXT["ifftn" if base == "fft" else "fftn"]
        gx = adj(g, s=s, axes=axes, norm=dual)
    elif kind == "r2c":
        # the one-sided spectrum selects bins of the full one: zero-fill the rest, then the c2c adjoint
        last = axes[-1]
        gx = _EXT["ifftn"](pad_axis(g, last, 0, s[-1] - g.shape[last]), s=s, axes=axes, norm=dual)
    else:
        # irfft reads each bin k (0 < k < n - k) twice, through X[k] and its mirror conj(X[k])
        gx = _EXT["rfftn"](g, s=s, axes=axes, norm=dual)
        m = s[-1] // 2 + 1
        w = np.ones(m)
        w[1:1 + s[-1] - m] = 2.0
        gx = gx * along(w, axes[-1], gx)
    for a, n in zip(axes, s):
        gx = fit_axis(gx, a, x.shape[a])
    return gx if x.dtype.is_complex else burn.real(gx)


def _make_fft(name):
    ndim = name.endswith("n") and name not in _FFT_KIND
    base = name[:-1] if ndim else name
    kind = _FFT_KIND[base]
    ext = _ext(name, _no_reference(name))

    @ext.meta
    def _(x, **kw):
        s, axes, norm = _sa(kw)
        return fft_meta(name, kind, x, s, axes, norm)

    @ext.backward
    def _(ctx, g):
        s, axes, norm = _sa(ctx.kwargs)
        return (fft_adjoint(name, ctx.inputs[0], g, s, axes, norm),)

    return ext


for _n in ("fft", "ifft", "rfft", "irfft", "fftn", "ifftn", "rfftn", "irfftn"):
    _make_fft(_n)


# -- convolution and correlation -----------------------------------------------------------------------

MODES = ("full", "same", "valid")


def conv_meta(op, a, b, mode, axes=None):
    if mode not in MODES:
        raise SignalError(f"signal::{op}: mode must be one of {MODES}, got {mode!r}")
    check_dtype(op, a, b)
    if len(a.shape) != len(b.shape):
        raise ShapeError(f"signal::{op}: in1 and in2 must have the same number of dimensions, got "
                         f"in1 {_desc(a)} and in2 {_desc(b)}")
    nd = len(a.shape)
    axes = tuple(range(nd)) if axes is None else check_axes(op, a, axes)
    ge = all(a.shape[i] >= b.shape[i] for i in axes)
    le = all(a.shape[i] <= b.shape[i] for i in axes)
    if mode == "valid" and not (ge or le):
        raise ShapeError(f"signal::{op}: in 'valid' mode one input must be at least as large as the other "
                         f"along every convolved axis, got in1 {_desc(a)} and in2 {_desc(b)}")
    shape = []
    for i in range(nd):
        na, nb = a.shape[i], b.shape[i]
        if i in axes:
            if na == 0 or nb == 0:
                raise ShapeError(f"signal::{op}: empty input along axis {i} (in1 {_desc(a)}, in2 {_desc(b)})")
            shape.append(na + nb - 1 if mode == "full" else na if mode == "same" else abs(na - nb) + 1)
        else:
            if na != nb and na != 1 and nb != 1:
                raise ShapeError(f"signal::{op}: axis {i} is not convolved and its sizes do not broadcast "
                                 f"(in1 {_desc(a)}, in2 {_desc(b)}); they must be equal or 1")
            shape.append(max(na, nb))
    return TensorMeta(tuple(shape), a.dtype)


def embed_full(g, a_shape, b_shape, mode, axes):
    """Place the cotangent of a 'same'/'valid' output inside the zeros of the 'full' output."""
    if mode == "full":
        return g
    for i in axes:
        na, nb = a_shape[i], b_shape[i]
        full = na + nb - 1
        start = (nb - 1) // 2 if mode == "same" else min(na, nb) - 1
        g = pad_axis(g, i, start, full - start - g.shape[i])
    return g


def rc(t, axes):
    """Reverse along ``axes`` and conjugate (scipy's correlate(x, y) = convolve(x, rc(y)))."""
    return cj(burn.flip(t, axis=tuple(axes)))


def _conv_grads(ctx, g, *, flipped, conv_valid):
    a, b = ctx.inputs
    mode = ctx.kwargs.get("mode", "full")
    axes = ctx.kwargs.get("axes")
    axes = tuple(range(a.ndim)) if axes is None else tuple(axes)
    gf = embed_full(g, a.shape, b.shape, mode, axes)
    # z = conv(a, c), c = b or rc(b): dz/da is correlation with c, dz/dc correlation with a
    c = rc(b, axes) if flipped else b
    ga = sum_to(conv_valid(gf, rc(c, axes), axes), a.shape) if a.requires_grad else None
    gb = None
    if b.requires_grad:
        gc = sum_to(conv_valid(gf, rc(a, axes), axes), b.shape)
        gb = rc(gc, axes) if flipped else gc
    return ga, gb


def _direct_valid(gf, k, axes):
    # correlate(gf, rc(k)) == convolve(gf, k): both full-rank, no broadcast axes
    return _EXT["convolve"](gf, k, mode="valid")


def _fft_valid(axes_kw):
    def run(gf, k, axes):
        return _EXT["fftconvolve"](gf, k, mode="valid", axes=tuple(axes) if axes_kw else None)
    return run


convolve_op = _ext("convolve", _no_reference("convolve"))
correlate_op = _ext("correlate", _no_reference("correlate"))
fftconvolve_op = _ext("fftconvolve", _no_reference("fftconvolve"))


@convolve_op.meta
def _(a, b, *, mode="full"):
    return conv_meta("convolve", a, b, mode)


@correlate_op.meta
def _(a, b, *, mode="full"):
    return conv_meta("correlate", a, b, mode)


@fftconvolve_op.meta
def _(a, b, *, mode="full", axes=None):
    return conv_meta("fftconvolve", a, b, mode, axes)


@convolve_op.backward
def _(ctx, g):
    return _conv_grads(ctx, g, flipped=False, conv_valid=_direct_valid)


@correlate_op.backward
def _(ctx, g):
    return _conv_grads(ctx, g, flipped=True, conv_valid=_direct_valid)


@fftconvolve_op.backward
def _(ctx, g):
    axes = ctx.kwargs.get("axes")
    return _conv_grads(ctx, g, flipped=False, conv_valid=_fft_valid(axes is not None))


# -- lfilter -------------------------------------------------------------------------------------------
# signal::lfilter is scipy.signal.lfilter's y (zf is composed from it in the public function):
#   A y = B x + a[0] * zi_seq,  zi_seq = zi followed by zeros, along the filter axis.

def lfilter_meta(op, b, a, x, zi=None, *, axis):
    check_dtype(op, b, a, x, *([zi] if zi is not None else []))
    for name, m in (("b", b), ("a", a)):
        if len(m.shape) != 1 or m.shape[0] == 0:
            raise ShapeError(f"signal::{op}: {name} must be a non-empty 1-D coefficient vector, got {_desc(m)}")
    (ax,) = check_axes(op, x, (axis,))
    k = max(a.shape[0], b.shape[0]) - 1
    if zi is not None:
        want = tuple(k if i == ax else n for i, n in enumerate(x.shape))
        if tuple(zi.shape) != want:
            raise ShapeError(f"signal::{op}: zi must have shape {want} (x's shape with the filter axis "
                             f"replaced by max(len(a), len(b)) - 1 = {k}), got zi {_desc(zi)} for x {_desc(x)}")
    return TensorMeta(tuple(x.shape), x.dtype)


lfilter_op = _ext("lfilter", _no_reference("lfilter"))


@lfilter_op.meta
def _(b, a, x, zi=None, *, axis):
    return lfilter_meta("lfilter", b, a, x, zi, axis=axis)


def _one(like):
    return burn.ones((1,), dtype=like.dtype, device=like.device)


def _lag_products(u, v, nlags, axis):
    """``r[j] = sum(u[n] * conj(v[n - j]))`` over n and every other axis, for j < nlags."""
    n = u.shape[axis]
    out = []
    for j in range(nlags):
        if j >= n:
            out.append(burn.zeros((), dtype=u.dtype, device=u.device))
        else:
            out.append(burn.sum(slice_axis(u, axis, j, n) * cj(slice_axis(v, axis, 0, n - j))))
    return burn.stack(out)


@lfilter_op.backward
def _(ctx, g):
    b, a, x = ctx.inputs[:3]
    zi = ctx.inputs[3] if len(ctx.inputs) > 3 else None
    axis = ctx.kwargs["axis"] % x.ndim
    y = ctx.out
    one = _one(a)
    # gv: the adjoint of v -> y = v / A, the all-pole filter run backwards in time
    gv = burn.flip(lfilter_op(one, cj(a), burn.flip(g, axis=axis), axis=axis), axis=axis)
    gb = _lag_products(gv, x, b.shape[0], axis) if b.requires_grad else None
    gx = None
    if x.requires_grad:
        gx = burn.flip(lfilter_op(cj(b), one, burn.flip(gv, axis=axis), axis=axis), axis=axis)
    ga = None
    if a.requires_grad:
        ga = -_lag_products(gv, y, a.shape[0], axis)
    gzi = None
    if zi is not None and (zi.requires_grad or a.requires_grad):
        k = zi.shape[axis]
        gvz = fit_axis(gv, axis, k)
        if zi.requires_grad:
            gzi = gvz * cj(a[0:1].reshape((1,) * zi.ndim))
        if a.requires_grad:
            # a[0] scales the initial state: A y = B x + a[0] zi_seq
            e0 = burn.tensor(np.eye(a.shape[0])[0], dtype=a.dtype, device=a.device)
            ga = ga + e0 * burn.sum(gvz * cj(zi))
    return gb, ga, gx, *(() if zi is None else (gzi,))


def lfilter_full(b, a, x, zi, axis):
    """``(y, zf)`` as scipy.signal.lfilter with ``zi``: zf from filtering K-1 more zeros."""
    n = x.shape[axis]
    k = max(a.shape[0], b.shape[0]) - 1
    if k == 0:
        y = lfilter_op(b, a, x, zi, axis=axis)
        return y, slice_axis(y, axis, 0, 0)
    ye = lfilter_op(b, a, pad_axis(x, axis, 0, k), zi, axis=axis)
    # the state after n samples is what, fed to 1/A with zero input, continues the output: zf = A/a0 * tail
    zf = lfilter_op(a, a[0:1], slice_axis(ye, axis, n, n + k), axis=axis)
    return slice_axis(ye, axis, 0, n), zf


# -- sosfilt (kernel; differentiated through its lfilter cascade) -----------------------------------------

def _sosfilt_ref(sos, x, zi=None, *, axis):
    y, zfs = x, []
    for i in range(sos.shape[0]):
        b, a = sos[i, :3], sos[i, 3:]
        if zi is None:
            y = lfilter_op(b, a, y, axis=axis)
        else:
            y, zf = lfilter_full(b, a, y, zi[i], axis)
            zfs.append(zf)
    return y if zi is None else (y, burn.stack(zfs))


sosfilt_op = _ext("sosfilt", _sosfilt_ref)


@sosfilt_op.meta
def _(sos, x, zi=None, *, axis):
    check_dtype("sosfilt", sos, x, *([zi] if zi is not None else []))
    if len(sos.shape) != 2 or sos.shape[1] != 6 or sos.shape[0] == 0:
        raise ShapeError(f"signal::sosfilt: sos must have shape (n_sections, 6), got {_desc(sos)}")
    (ax,) = check_axes("sosfilt", x, (axis,))
    y = TensorMeta(tuple(x.shape), x.dtype)
    if zi is None:
        return y
    want = (sos.shape[0],) + tuple(2 if i == ax else n for i, n in enumerate(x.shape))
    if tuple(zi.shape) != want:
        raise ShapeError(f"signal::sosfilt: zi must have shape {want} (n_sections, then x's shape with the "
                         f"filter axis replaced by 2), got zi {_desc(zi)} for x {_desc(x)}")
    return y, TensorMeta(want, x.dtype)


# -- stft / istft (kernels; differentiated through their references) ----------------------------------------

def stft_plan(op, n, nperseg, noverlap, nfft, boundary, padded):
    if nperseg < 1:
        raise SignalError(f"signal::{op}: nperseg must be positive, got {nperseg}")
    if not 0 <= noverlap < nperseg:
        raise SignalError(f"signal::{op}: noverlap must be in [0, nperseg), got noverlap={noverlap} "
                          f"with nperseg={nperseg}")
    if nfft < nperseg:
        raise SignalError(f"signal::{op}: nfft must be >= nperseg, got nfft={nfft} < nperseg={nperseg}")
    if boundary not in ("zeros", None):
        raise SignalError(f"signal::{op}: boundary must be 'zeros' or None, got {boundary!r}")
    step = nperseg - noverlap
    if boundary == "zeros":
        n += 2 * (nperseg // 2)
    if n < nperseg:
        raise ShapeError(f"signal::{op}: the signal has {n} samples (after boundary padding), fewer than "
                         f"nperseg={nperseg}; use a smaller nperseg")
    if padded:
        n += (-(n - nperseg) % step) % nperseg
    return step, n, (n - nperseg) // step + 1


def _win_scale(win, scaling, fs):
    if scaling == "spectrum":
        return burn.abs(burn.sum(win))       # scipy: 1 / |sum(win)|, also for a window summing below 0
    return burn.sqrt(burn.sum(win * win) * fs)


def frames(x, nperseg, step, nseg):
    """(..., n) -> (..., nseg, nperseg) overlapping segments (a gather along the last axis)."""
    idx = (np.arange(nseg)[:, None] * step + np.arange(nperseg)[None, :]).reshape(-1)
    f = burn.take(x, burn.tensor(idx, device=x.device), axis=-1)
    return f.reshape(tuple(x.shape[:-1]) + (nseg, nperseg))


def overlap_add(fr, step):
    """(..., nseg, nperseg) -> (..., nperseg + (nseg - 1) * step): the adjoint of :func:`frames`."""
    nseg, nperseg = fr.shape[-2:]
    r = -(-nperseg // step)
    fr = pad_axis(fr, fr.ndim - 1, 0, r * step - nperseg).reshape(tuple(fr.shape[:-2]) + (nseg, r, step))
    out = None
    for k in range(r):
        part = pad_axis(fr[..., k, :], fr.ndim - 3, k, r - 1 - k)   # block i + k gets chunk k of segment i
        out = part if out is None else out + part
    out = out.reshape(tuple(out.shape[:-2]) + ((nseg + r - 1) * step,))
    return slice_axis(out, out.ndim - 1, 0, nperseg + (nseg - 1) * step)


def _stft_ref(x, win, *, fs, noverlap, nfft, boundary, padded, onesided, scaling):
    nperseg = win.shape[0]
    step, n, nseg = stft_plan("stft", x.shape[-1], nperseg, noverlap, nfft, boundary, padded)
    if boundary == "zeros":
        x = pad_axis(x, x.ndim - 1, nperseg // 2, nperseg // 2)
    x = fit_axis(x, x.ndim - 1, n)
    fr = frames(x, nperseg, step, nseg) * win
    z = (_EXT["rfft"] if onesided else _EXT["fft"])(fr, n=nfft, axis=fr.ndim - 1, norm="backward")
    z = z / _win_scale(win, scaling, fs)
    return burn.swapaxes(z, -1, -2)


stft_op = _ext("stft", _stft_ref)


@stft_op.meta
def _(x, win, *, fs, noverlap, nfft, boundary, padded, onesided, scaling):
    check_dtype("stft", x, real=onesided)
    if len(win.shape) != 1:
        raise ShapeError(f"signal::stft: the window must be 1-D, got {_desc(win)}")
    if scaling not in ("spectrum", "psd"):
        raise SignalError(f"signal::stft: scaling must be 'spectrum' or 'psd', got {scaling!r}")
    if len(x.shape) == 0:
        raise ShapeError(f"signal::stft: x must have at least one dimension, got {_desc(x)}")
    _, _, nseg = stft_plan("stft", x.shape[-1], win.shape[0], noverlap, nfft, boundary, padded)
    nfreq = nfft // 2 + 1 if onesided else nfft
    return TensorMeta(tuple(x.shape[:-1]) + (nfreq, nseg), complex_of(x.dtype))


def istft_length(nseg, nperseg, step, boundary):
    n = nperseg + (nseg - 1) * step
    return n - 2 * (nperseg // 2) if boundary else n


def _istft_ref(z, win, *, fs, noverlap, nfft, onesided, boundary, scaling):
    nperseg = win.shape[0]
    step = nperseg - noverlap
    inv = _EXT["irfft"] if onesided else _EXT["ifft"]
    xs = inv(z, n=nfft, axis=z.ndim - 2, norm="backward")
    xs = slice_axis(xs, xs.ndim - 2, 0, nperseg) * _win_scale(win, scaling, fs)
    fr = burn.swapaxes(xs, -1, -2) * win
    nseg = fr.shape[-2]
    x = overlap_add(fr, step)
    w2 = burn.broadcast_to((win * win)[None, :], (nseg, nperseg))
    norm = overlap_add(w2, step)
    if boundary:
        h = nperseg // 2
        x = slice_axis(x, x.ndim - 1, h, x.shape[-1] - h)
        norm = slice_axis(norm, 0, h, norm.shape[0] - h)
    ok = norm > 1e-10
    return x / burn.where(ok, norm, burn.ones_like(norm))


istft_op = _ext("istft", _istft_ref)


@istft_op.meta
def _(z, win, *, fs, noverlap, nfft, onesided, boundary, scaling):
    check_dtype("istft", z)
    if len(z.shape) < 2:
        raise ShapeError(f"signal::istft: Zxx must have at least 2 dimensions (..., freq, time), got {_desc(z)}")
    if len(win.shape) != 1:
        raise ShapeError(f"signal::istft: the window must be 1-D, got {_desc(win)}")
    nperseg = win.shape[0]
    stft_plan("istft", nperseg, nperseg, noverlap, nfft, None, False)
    if scaling not in ("spectrum", "psd"):
        raise SignalError(f"signal::istft: scaling must be 'spectrum' or 'psd', got {scaling!r}")
    nseg = z.shape[-1]
    n = istft_length(nseg, nperseg, nperseg - noverlap, boundary)
    dtype = real_of(z.dtype) if onesided else complex_of(z.dtype)
    return TensorMeta(tuple(z.shape[:-2]) + (n,), dtype)


# -- resample (kernel; differentiated through its reference) ------------------------------------------------

def _resample_ref(x, *, num, axis):
    if x.dtype.is_complex:
        raise SignalError("signal::resample: the reference definition (used for gradients and on backends "
                          "without a kernel) handles real input only")
    x = burn.moveaxis(x, axis, -1)
    nx = x.shape[-1]
    m = min(num, nx)
    m2 = m // 2 + 1
    X = slice_axis(_EXT["rfft"](x, n=nx, axis=x.ndim - 1, norm="backward"), x.ndim - 1, 0, m2)
    w = np.full(m2, num / nx)
    if m % 2 == 0 and num != nx:
        # the unpaired bin at m/2: fold its mirror in (down) or split it in two (up), as scipy
        w[m // 2] *= 2 if num < nx else 0.5
    X = X * along(w, X.ndim - 1, X)
    y = _EXT["irfft"](X, n=num, axis=X.ndim - 1, norm="backward")
    return burn.moveaxis(y, -1, axis)


resample_op = _ext("resample", _resample_ref)


@resample_op.meta
def _(x, *, num, axis):
    check_dtype("resample", x)
    (ax,) = check_axes("resample", x, (axis,))
    if not isinstance(num, (int, np.integer)) or num < 1:
        raise ShapeError(f"signal::resample: num must be a positive number of samples, got {num!r}")
    if x.shape[ax] == 0:
        raise ShapeError(f"signal::resample: the input is empty along axis {ax} ({_desc(x)})")
    shape = list(x.shape)
    shape[ax] = int(num)
    return TensorMeta(tuple(shape), x.dtype)
