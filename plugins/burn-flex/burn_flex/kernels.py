"""numpy kernels of every core primitive, one line each where numpy allows.

Kernels receive numpy arrays (operands of one dtype for binary ops, numpy
broadcasting between them) and the primitive's attributes; they return an
array of the dtype the primitive's meta rule promised.
"""
from __future__ import annotations

import numpy as np

from burn.ops import random_stream
from burn.ops.movement import build_numpy_index

from .dtypes import native

_SQRT1_2 = np.sqrt(0.5)


def tune_malloc() -> bool:
    """Keep freed arrays of up to 32 MiB in glibc's heap instead of returning them to the OS.

    numpy allocates every result with malloc; glibc serves blocks over its mmap
    threshold (128 KiB, adapting up to 32 MiB) with fresh mmap pages and trims the
    heap top after frees, so a training step that allocates and frees the same
    few-MiB arrays each step page-faults them in again every time (~2 us per 4 KiB
    page on a VM: 1.3 ms instead of 0.35 ms for ``maximum(x + b, 0)`` on [1024, 512]).
    Raising both thresholds lets those blocks be reused. Process-wide (it helps every
    library in the process alike); glibc only; ``BURN_FLEX_MALLOC_TUNE=0`` skips it.
    Returns whether the thresholds were set.

    Example:
        >>> assert tune_malloc() in (True, False)
    """
    import os
    import sys
    if os.environ.get("BURN_FLEX_MALLOC_TUNE", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        ok = libc.mallopt(m_mmap_threshold, 32 << 20) == 1
        return bool(libc.mallopt(m_trim_threshold, 256 << 20) == 1 and ok)
    except (OSError, AttributeError):     # not glibc (musl, ...): keep the defaults
        return False


_SPECIAL = None


def _sps():
    # scipy.special costs ~150 ms to import: load it at the first kernel that needs it
    # (sigmoid, silu, non-float32 erf), not when a flex device is first used
    global _SPECIAL
    if _SPECIAL is None:
        import scipy.special
        _SPECIAL = scipy.special
    return _SPECIAL


def _keep(name, complex_fn=None):
    """A scipy.special float ufunc whose result keeps the input dtype (scipy upcasts halves);
    ``complex_fn`` computes complex inputs, which scipy's real ufuncs reject."""
    def k(x):
        if complex_fn is not None and x.dtype.kind == "c":
            return complex_fn(x)
        r = getattr(_sps(), name)(x)
        return r.astype(x.dtype, copy=False) if r.dtype != x.dtype else r
    k.__name__ = name
    return k


def _log1p_kahan(x):
    # Kahan: log1p(x) = log(u) * (x / (u - 1)) with u = 1 + x, accurate to a few ulp
    # with one (SIMD) log; x / (u - 1) first so huge x cannot overflow the product
    one = x.dtype.type(1)
    u = x + one
    d = u - one
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.divide(x, d)
        r = np.log(u)
        r *= q
    # u == 1 (|x| below half an ulp of 1): log1p(x) == x; x == inf: log1p(inf) == inf
    return np.where((d == 0) | (x == np.inf), x, r)


def _fast_log1p_ufunc() -> bool:
    """Is numpy's own log1p fast here? It is a SIMD loop on CPUs numpy has one for
    (e.g. AVX-512) and a scalar libm call elsewhere (~10x slower than log)."""
    import time
    x = np.linspace(0.5, 4.0, 16384, dtype=np.float32)
    out = np.empty_like(x)
    best = {}
    for name, f in (("log1p", np.log1p), ("log", np.log)):
        t = []
        for _ in range(5):
            t0 = time.perf_counter()
            f(x, out=out)
            t.append(time.perf_counter() - t0)
        best[name] = min(t)
    return best["log1p"] <= 2.0 * best["log"]


# decided once, when the kernels are loaded (first use of a flex device)
_log1p = np.log1p if _fast_log1p_ufunc() else _log1p_kahan


# erf(x) = x * P(x^2) / Q(x^2) on [-4, 4] (XLA/Eigen's float32 rational fit; |erf| rounds
# to 1 beyond). Evaluated in float64 on cache-sized chunks: within 2 float32 ulp of
# the exact erf over the whole range, and ~2x faster than scipy.special.erf's float32
# loop (float32 evaluation is faster still but loses ~7 ulp near |x| = 3.3).
_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
          -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
          -1.42647390514189e-02)
_ERF_CHUNK = 32768


def _horner(coefs, x2, out):
    np.multiply(x2, coefs[0], out=out)
    for c in coefs[1:-1]:
        out += c
        out *= x2
    out += coefs[-1]
    return out


def _erf(x):
    if x.dtype != np.float32:
        r = _sps().erf(x)
        return r.astype(x.dtype, copy=False) if r.dtype != x.dtype else r
    flat = x.reshape(-1)
    n = flat.size
    out = np.empty(n, np.float32)
    m = min(_ERF_CHUNK, n)
    xc, x2, p, q = (np.empty(m) for _ in range(4))
    for s in range(0, n, _ERF_CHUNK):
        e = min(s + _ERF_CHUNK, n)
        k = e - s
        a, b, c, d = xc[:k], x2[:k], p[:k], q[:k]
        np.clip(flat[s:e], -4.0, 4.0, out=a)       # NaN stays NaN, +-inf -> +-4 -> +-1
        np.multiply(a, a, out=b)
        _horner(_ERF_P, b, c)
        _horner(_ERF_Q, b, d)
        c /= d
        c *= a               # times x last: tiny (subnormal) results keep their precision
        out[s:e] = c
    return out.reshape(x.shape)


def _gelu(x):
    r = np.multiply(x, np.asarray(_SQRT1_2, x.dtype))
    r = _erf(r)
    r += 1
    r *= x
    r *= np.asarray(0.5, x.dtype)
    return r


def _silu(x):
    return x * _sps().expit(x).astype(x.dtype, copy=False)


def _relu(x, out=None):
    return np.maximum(x, np.zeros((), x.dtype), out=out)


# writes its result into ``out=`` like a ufunc, never returns a view of its input: fused
# groups may run it into their scratch buffers (fused.py)
_relu.accepts_out = True


def _rsqrt(x):
    return np.reciprocal(np.sqrt(x))


def _sign(x):
    return np.sign(x)


def _angle(x):
    return np.angle(x).astype(np.float32 if x.dtype in (np.complex64, np.float32, np.float16) else np.float64,
                              copy=False)


UNARY = {
    "neg": np.negative, "positive": np.positive, "abs": np.abs, "sign": _sign, "exp": np.exp,
    "expm1": np.expm1, "log": np.log, "log1p": _log1p, "log2": np.log2, "log10": np.log10,
    "sqrt": np.sqrt, "rsqrt": _rsqrt, "square": np.square, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "sigmoid": _keep("expit", lambda z: 1 / (1 + np.exp(-z))), "relu": _relu, "gelu": _gelu, "silu": _silu,
    "softplus": lambda x: np.logaddexp(np.zeros((), x.dtype), x), "erf": _erf,
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc,
    "reciprocal": np.reciprocal, "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
    "signbit": np.signbit, "logical_not": np.logical_not, "bitwise_invert": np.invert,
    "conj": np.conj, "real": np.real, "imag": np.imag, "angle": _angle,
}

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "remainder": np.remainder,
    "floor_divide": np.floor_divide, "atan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp,
    "copysign": np.copysign, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}


def _int_pow(a, b):
    if a.dtype.kind in "iu" and (np.asarray(b) < 0).any():
        raise ValueError("pow: integers to negative integer powers are not allowed")
    return np.power(a, b)


def _as_array(r, dtype):
    r = np.asarray(r)
    return r if r.dtype == dtype else r.astype(dtype)


def cast(x, *, dtype):
    return np.asarray(x).astype(native(dtype), copy=False) if x.dtype != native(dtype) else x


def clip(x, *, min, max):
    return np.clip(x, min, max).astype(x.dtype, copy=False)


_SAME_SIZE_INT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def where(c, a, b):
    # np.where branches per element: ~3 ns each on an unpredictable mask (a relu
    # gradient), 6x slower than this branchless bitwise select on integer views,
    # b ^ ((a ^ b) & -mask), which is exact for every bit pattern (NaN, -0.0)
    it = _SAME_SIZE_INT.get(a.dtype.itemsize)
    if (it is None or a.dtype != b.dtype or a.dtype.kind not in "fiu" or c.dtype != np.bool_
            or max(a.size, b.size, c.size) < 512):
        return np.where(c, a, b)
    m = c.astype(it)
    np.negative(m, out=m)
    if b.size == 1 and b.ndim <= a.ndim and c.shape == a.shape and not b.view(it).any():
        # where(c, a, +0.0), a relu gradient: with b's bits all zero the select is a & mask
        return np.bitwise_and(a.view(it), m, out=m).view(a.dtype)
    bi = b.view(it)
    r = np.bitwise_xor(a.view(it), bi)
    r = np.bitwise_and(r, m, out=m if m.shape == np.broadcast_shapes(r.shape, m.shape) else None)
    r ^= bi
    return r.view(a.dtype)


def full(*, shape, value, dtype):
    return np.full(shape, value, dtype=native(dtype))


def arange(*, start, stop, step, dtype):
    return np.arange(start, stop, step).astype(native(dtype), copy=False)


def linspace(*, start, stop, num, endpoint, dtype):
    return np.linspace(start, stop, num, endpoint=endpoint).astype(native(dtype), copy=False)


def eye(*, n, m, k, dtype):
    return np.eye(n, m, k, dtype=native(dtype))


def rand_uniform(**attrs):
    return random_stream.uniform(**attrs).astype(native(attrs["dtype"]), copy=False)


def rand_normal(**attrs):
    return random_stream.normal(**attrs).astype(native(attrs["dtype"]), copy=False)


def rand_int(**attrs):
    return random_stream.integers(**attrs).astype(native(attrs["dtype"]), copy=False)


def _acc_dtype(x):
    return np.int64 if x.dtype.kind in "biu" else None


def sum_(x, *, axis, keepdims):
    return np.asarray(np.sum(x, axis=axis, keepdims=keepdims, dtype=_acc_dtype(x)))


def prod(x, *, axis, keepdims):
    return np.asarray(np.prod(x, axis=axis, keepdims=keepdims, dtype=_acc_dtype(x)))


def max_(x, *, axis, keepdims):
    return np.asarray(np.max(x, axis=axis, keepdims=keepdims))


def min_(x, *, axis, keepdims):
    return np.asarray(np.min(x, axis=axis, keepdims=keepdims))


def any_(x, *, axis, keepdims):
    return np.asarray(np.any(x, axis=axis, keepdims=keepdims))


def all_(x, *, axis, keepdims):
    return np.asarray(np.all(x, axis=axis, keepdims=keepdims))


def argmax(x, *, axis, keepdims):
    return np.asarray(np.argmax(x, axis=axis, keepdims=keepdims)).astype(np.int64, copy=False)


def argmin(x, *, axis, keepdims):
    return np.asarray(np.argmin(x, axis=axis, keepdims=keepdims)).astype(np.int64, copy=False)


def cumsum(x, *, axis):
    return np.cumsum(x, axis=axis, dtype=_acc_dtype(x))


def cumprod(x, *, axis):
    return np.cumprod(x, axis=axis, dtype=_acc_dtype(x))


def reshape(x, *, shape):
    return np.reshape(x, shape)


def permute(x, *, axes):
    return np.transpose(x, axes)


def broadcast_to(x, *, shape):
    return np.broadcast_to(x, shape)


def _slices(starts, stops, steps):
    # slice.indices() gives stop=-1 for a reversed slice reaching index 0;
    # in numpy that would mean "the last element", so use None instead
    return tuple(slice(a, None if b < 0 else b, c) for a, b, c in zip(starts, stops, steps))


def slice_(x, *, starts, stops, steps):
    return x[_slices(starts, stops, steps)]


def slice_grad(g, *, shape, starts, stops, steps):
    z = np.zeros(shape, dtype=g.dtype)
    z[_slices(starts, stops, steps)] = g
    return z


def pad(x, *, pad_width, value):
    return np.pad(x, pad_width, constant_values=value)


def concat(*xs, axis):
    return np.concatenate(xs, axis=axis)


def _bounds_checked(fn):
    """numpy's IndexError for an out-of-range index array becomes the IndexOutOfRange (a
    BurnError naming the op) that the wgpu and cuda kernels raise, with numpy's message."""
    import functools

    from burn.errors import IndexOutOfRange
    op = fn.__name__.rstrip("_")

    @functools.wraps(fn)
    def run(*args, **kw):
        try:
            return fn(*args, **kw)
        except IndexError as e:
            raise IndexOutOfRange(f"{op}: {e}") from e
    return run


@_bounds_checked
def index(x, *idx, spec):
    return np.asarray(x[build_numpy_index(spec, idx)])


@_bounds_checked
def index_add(g, *idx, spec, shape):
    z = np.zeros(shape, dtype=g.dtype)
    np.add.at(z, build_numpy_index(spec, idx), g)
    return z


@_bounds_checked
def index_put(x, v, *idx, spec):
    out = np.array(x, copy=True)
    out[build_numpy_index(spec, idx)] = v
    return out


@_bounds_checked
def take_along_axis(x, idx, *, axis):
    shape = tuple(b if i == axis else max(a, b) for i, (a, b) in enumerate(zip(x.shape, idx.shape)))
    xs = tuple(shape[i] if i != axis else x.shape[i] for i in range(x.ndim))
    return np.take_along_axis(np.broadcast_to(x, xs), np.broadcast_to(idx, shape), axis=axis)


@_bounds_checked
def scatter_add(x, idx, src, *, axis):
    out = np.array(x, copy=True)
    grid = list(np.indices(idx.shape, sparse=True))
    grid[axis] = idx
    np.add.at(out, tuple(grid), src)
    return out


def matmul(a, b):
    r = np.matmul(a, b)
    # numpy computes bfloat16 products in float32: keep the operands' dtype
    return r if r.dtype == a.dtype else r.astype(a.dtype)


def linear_relu(x, w, b):
    """Fused linear + bias + relu: one BLAS call, then the epilogue in place."""
    y = np.matmul(x, w)
    y += b
    np.maximum(y, 0, out=y)
    return y if y.dtype == x.dtype else y.astype(x.dtype)   # bfloat16 matmul gives float32


def _ce_prepare(logits, target):
    """Max-shifted float32/64 logits and the checked class indices of one cross-entropy call."""
    x = logits if logits.dtype.itemsize >= 4 else logits.astype(np.float32)
    n, c = x.shape
    if n and (target.min() < 0 or target.max() >= c):
        raise IndexError(f"cross_entropy: target class indices must lie in [0, {c}), got values from "
                         f"{target.min()} to {target.max()}")
    # numpy reduces short rows slowly (~8 us for [128, 10]); over a transposed copy
    # the max is a few vectorized passes
    m = (np.ascontiguousarray(x.T).max(axis=0) if c <= 64 else x.max(axis=1))[:, None]
    # an all -inf row is shifted by 0 (its loss is then nan, as torch's); a +inf max stays,
    # so the row is nan everywhere (torch), not inf
    if (m == -np.inf).any():
        m = np.where(m == -np.inf, 0, m)
    return x - m, np.arange(n), target


def _row_sums(e):
    # a BLAS matrix-vector product sums short rows ~3x faster than e.sum(axis=1)
    return e @ np.ones(e.shape[1], e.dtype)


def softmax_cross_entropy(logits, target, reduction="mean", label_smoothing=0.0):
    """Fused log-softmax + gather + reduction (burn::softmax_cross_entropy)."""
    z, rows, target = _ce_prepare(logits, target)
    n, c = z.shape
    lse = np.log(_row_sums(np.exp(z)))
    loss = lse - z[rows, target]
    if label_smoothing:
        loss *= 1.0 - label_smoothing
        loss += (lse - z.mean(axis=1)) * label_smoothing
    if reduction == "mean":
        loss = loss.sum() / n if n else np.asarray(np.nan, loss.dtype)
    elif reduction == "sum":
        loss = loss.sum()
    return np.asarray(loss, dtype=logits.dtype)


def softmax_cross_entropy_grad(logits, target, g, reduction="mean", label_smoothing=0.0):
    """``(softmax - smoothed one-hot) * g`` (burn::softmax_cross_entropy_grad)."""
    z, rows, target = _ce_prepare(logits, target)
    n, c = z.shape
    p = np.exp(z)
    p /= _row_sums(p)[:, None]
    if label_smoothing:
        p -= label_smoothing / c
    p[rows, target] -= 1.0 - label_smoothing
    g = np.asarray(g, dtype=p.dtype)
    if reduction == "none":
        p *= g[:, None]
    else:
        p *= g / n if reduction == "mean" else g
    return p.astype(logits.dtype, copy=False)


def _rows(x, axis):
    """``x`` as a C-contiguous [rows, n] array with ``axis`` last, and a function putting
    a result of that layout back into ``x``'s."""
    if axis == x.ndim - 1:
        shape = x.shape
        return np.ascontiguousarray(x).reshape(-1, shape[-1]), lambda r: r.reshape(shape)
    xm = np.moveaxis(x, axis, -1)
    shape = xm.shape
    return (np.ascontiguousarray(xm).reshape(-1, shape[-1]),
            lambda r: np.ascontiguousarray(np.moveaxis(r.reshape(shape), -1, axis)))


def _row_max(x2):
    # numpy reduces short contiguous rows slowly (~1.4 ns per element for rows of 64);
    # folding the halves with element-wise maximum first is ~1.5x faster (NaN propagates)
    a = x2
    while a.shape[1] >= 16 and a.shape[1] % 2 == 0:
        h = a.shape[1] // 2
        a = np.maximum(a[:, :h], a[:, h:])
    return a.max(axis=1)


def softmax(x, axis):
    """burn::softmax: max shift, exp, row sums as a BLAS matrix-vector product, divide."""
    if x.size == 0:
        return x.copy()
    x2, back = _rows(x, axis)
    with np.errstate(invalid="ignore"):        # all -inf rows give NaN, as in torch
        e = np.subtract(x2, _row_max(x2)[:, None])
        np.exp(e, out=e)
        e /= _row_sums(e)[:, None]
    return back(e)


def softmax_grad(y, g, axis):
    """burn::softmax_grad: ``y * (g - sum(g * y))`` along ``axis``."""
    if y.size == 0:
        return np.zeros_like(y)
    y2, back = _rows(y, axis)
    g2, _ = _rows(g, axis)
    t = np.multiply(g2, y2)
    s = _row_sums(t)
    np.subtract(g2, s[:, None], out=t)
    t *= y2
    return back(t)


def log_softmax(x, axis):
    """burn::log_softmax: ``(x - max) - log(sum(exp(x - max)))`` per row. As torch: an all -inf
    row shifts by 0 and gives NaN (-inf - log 0); a row holding +inf or NaN is NaN everywhere
    (its max is kept: x - (+inf) is -inf or NaN, so the row's sum is NaN)."""
    if x.size == 0:
        return x.copy()
    x2, back = _rows(x, axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = _row_max(x2)
        m = np.where(m == -np.inf, 0, m).astype(x2.dtype)
        z = np.subtract(x2, m[:, None])
        z -= np.log(_row_sums(np.exp(z)))[:, None]
    return back(z)


def log_softmax_grad(y, g, axis):
    """burn::log_softmax_grad: ``g - exp(y) * sum(g)`` along ``axis``."""
    if y.size == 0:
        return np.zeros_like(y)
    y2, back = _rows(y, axis)
    g2, _ = _rows(g, axis)
    t = np.exp(y2)
    t *= _row_sums(g2)[:, None]
    np.subtract(g2, t, out=t)
    return back(t)


def _ln_stats(x2, eps):
    """Centered rows and 1/sqrt(var + eps) (row means as BLAS products with 1/D)."""
    inv = np.full(x2.shape[1], 1.0 / x2.shape[1], dtype=x2.dtype)
    d = np.subtract(x2, (x2 @ inv)[:, None])
    sq = np.multiply(d, d)
    r = sq @ inv
    r += np.asarray(eps, r.dtype)
    np.sqrt(r, out=r)
    np.reciprocal(r, out=r)
    return d, r, inv, sq


def layer_norm(x, w, b, eps):
    """burn::layer_norm over the last axis, with weight and bias."""
    if x.size == 0:
        return x.copy()
    x2 = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    d, r, _, _ = _ln_stats(x2, eps)
    d *= r[:, None]
    d *= w
    d += b
    return d.reshape(x.shape)


def layer_norm_grad(x, w, g, eps):
    """burn::layer_norm_grad: (dx, dweight, dbias) in a few passes over [rows, D]."""
    n = x.shape[-1]
    if x.size == 0:
        return np.zeros_like(x), np.zeros(n, x.dtype), np.zeros(n, x.dtype)
    x2 = np.ascontiguousarray(x).reshape(-1, n)
    g2 = np.ascontiguousarray(g).reshape(-1, n)
    xh, r, inv, t = _ln_stats(x2, eps)
    xh *= r[:, None]
    ones = np.ones(x2.shape[0], x2.dtype)
    gb = ones @ g2                         # column sums as BLAS products
    np.multiply(g2, xh, out=t)
    gw = ones @ t
    gh = np.multiply(g2, w)
    mean_gh = gh @ inv
    np.multiply(gh, xh, out=t)
    mean_ghxh = t @ inv
    gh -= mean_gh[:, None]
    xh *= mean_ghxh[:, None]
    gh -= xh
    gh *= r[:, None]
    return gh.reshape(x.shape), gw, gb


def _hyper_scalars(h, dtype):
    # 0-d arrays of the parameter's dtype: the operands op-by-op execution would use
    return [np.asarray(x, dtype=dtype) for x in h.tolist()]


def adam_update(p, g, m, v, h, mode="none"):
    """burn::adam_update: the reference's ops in its order (bit-identical), with out= buffers."""
    if p.ndim == 0:       # ufuncs return numpy scalars for 0-d operands, which out= cannot take
        return tuple(r.reshape(()) for r in adam_update(p.reshape(1), g.reshape(1), m.reshape(1), v.reshape(1),
                                                        h, mode))
    lr, b1, omb1, b2, omb2, c1, c2, eps, wd, decay = _hyper_scalars(h, p.dtype)
    mul, add = np.multiply, np.add
    if mode == "l2":
        t = mul(p, wd)
        g = add(g, t, out=t)
    m2 = mul(m, b1)
    t = mul(g, omb1)
    add(m2, t, out=m2)
    v2 = mul(g, g)
    mul(v2, omb2, out=v2)
    mul(v, b2, out=t)
    add(t, v2, out=v2)                      # v*b2 + g*g*(1-b2) (addition commutes exactly)
    mul(v2, c2, out=t)
    np.sqrt(t, out=t)
    add(t, eps, out=t)
    s = mul(m2, c1)
    np.divide(s, t, out=s)
    mul(s, lr, out=s)
    if mode == "decoupled":
        mul(p, decay, out=t)
        return np.subtract(t, s, out=s), m2, v2
    return np.subtract(p, s, out=s), m2, v2


def sgd_update(p, g, buf, h, mode=("next", False, False)):
    """burn::sgd_update: the reference's ops in its order (bit-identical)."""
    if p.ndim == 0:
        return tuple(r.reshape(()) for r in sgd_update(p.reshape(1), g.reshape(1), buf.reshape(1), h, mode))
    first, decay, nesterov = mode
    lr, wd, mom, omd = _hyper_scalars(h, p.dtype)
    if decay:
        g = np.add(g, np.multiply(p, wd))
    if first == "first":
        b = g.copy()
    else:
        b = np.multiply(buf, mom)
        b += np.multiply(g, omd)
    if nesterov:
        d = np.multiply(b, mom)
        np.add(g, d, out=d)
    else:
        d = b.copy()
    d *= lr
    return np.subtract(p, d, out=d), b


def all_kernels() -> dict:
    """op name -> kernel, for registration."""
    k = {}
    for name, f in UNARY.items():
        k[name] = f
    for name, f in BINARY.items():
        k[name] = f
    k["pow"] = _int_pow
    k.update({
        "cast": cast, "clip": clip, "where": where, "full": full, "arange": arange, "linspace": linspace,
        "eye": eye, "rand_uniform": rand_uniform, "rand_normal": rand_normal, "rand_int": rand_int,
        "sum": sum_, "prod": prod, "max": max_, "min": min_, "any": any_, "all": all_, "argmax": argmax,
        "argmin": argmin, "cumsum": cumsum, "cumprod": cumprod, "reshape": reshape, "permute": permute,
        "broadcast_to": broadcast_to, "slice": slice_, "slice_grad": slice_grad, "pad": pad,
        "concat": concat, "index": index, "index_add": index_add, "index_put": index_put, "take_along_axis": take_along_axis,
        "scatter_add": scatter_add, "matmul": matmul,
    })
    return k


def extension_kernels() -> dict:
    """``burn::`` extension op name -> kernel, for registration."""
    return {"burn::linear_relu": linear_relu, "burn::softmax_cross_entropy": softmax_cross_entropy,
            "burn::softmax_cross_entropy_grad": softmax_cross_entropy_grad,
            "burn::adam_update": adam_update, "burn::sgd_update": sgd_update,
            "burn::softmax": softmax, "burn::softmax_grad": softmax_grad,
            "burn::log_softmax": log_softmax, "burn::log_softmax_grad": log_softmax_grad,
            "burn::layer_norm": layer_norm, "burn::layer_norm_grad": layer_norm_grad}
