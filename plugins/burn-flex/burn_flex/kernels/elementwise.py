"""Element-wise ops on flex: numpy's ufuncs, one line each where numpy allows, and the
kernels numpy lacks or computes too slowly (erf, gelu, log1p in float32, ...)."""
from __future__ import annotations

import numpy as np

from .. import jit
from ..native import native

_SQRT1_2 = np.sqrt(0.5)


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
    """Does numpy have a SIMD log1p loop on this CPU? It has one for AVX-512 (SKX) CPUs and
    calls scalar libm elsewhere (~10x slower than log). Read from numpy's CPU feature table,
    not timed: a timing taken on a busy machine would pick another kernel, and other last
    bits, from run to run."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:          # pragma: no cover - numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__
    return bool(__cpu_features__.get("AVX512_SKX", False))


def _log1p_real_kahan(x):
    # Kahan's form for real floats only: complex log1p has branch cuts and special values
    # (e.g. log1p(inf + nan j) = inf + nan j) that numpy's complex loop gets right
    if x.dtype.kind == "f":
        return _log1p_kahan(x)
    return np.log1p(x)


# decided once, when the kernels are loaded (first use of a flex device)
_log1p = np.log1p if _fast_log1p_ufunc() else _log1p_real_kahan


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


def _erf(x, out=None):
    """erf; float32 runs flex's JIT kernel (burn_flex.jit), bit-identical to :func:`_erf_numpy`."""
    if x.dtype == np.float32:
        k = jit.kernels()
        if k is not None:
            return k.erf(x, out)
    return _into(_erf_numpy(x), out)


def _erf_numpy(x):
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


def _gelu(x, out=None):
    """gelu (erf form); float32 runs flex's JIT kernel, bit-identical to :func:`_gelu_numpy`."""
    if x.dtype == np.float32:
        k = jit.kernels()
        if k is not None:
            return k.gelu(x, out)
    return _into(_gelu_numpy(x), out)


def _gelu_numpy(x):
    r = np.multiply(x, np.asarray(_SQRT1_2, x.dtype))
    r = _erf_numpy(r)
    r += 1
    r *= x
    r *= np.asarray(0.5, x.dtype)
    return r


def _into(r, out):
    if out is None:
        return r
    out[...] = r
    return out


# both write their result into ``out=`` like a ufunc and never return a view of their input:
# fused groups run them into their scratch buffers (fused.py)
_erf.accepts_out = True
_gelu.accepts_out = True


def _silu(x):
    return x * _sps().expit(x).astype(x.dtype, copy=False)


def _relu(x, out=None):
    """relu = numpy's maximum(x, 0); float32 of 1024 elements or more runs flex's JIT kernel, which
    gives the same bits: numpy takes its slow scalar-operand loop here (~4x an array maximum)."""
    if x.dtype == np.float32 and x.size >= 1024:
        k = jit.kernels()
        if k is not None:
            return k.relu(x, out)
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

def _make_complex(a, b):
    # each part written bit for bit: a + 1j * b would give inf * 1j = nan + inf j
    out = np.empty(np.broadcast_shapes(np.shape(a), np.shape(b)), np.complex128 if a.dtype == np.float64 else
                   np.complex64)
    out.real = a
    out.imag = b
    return out


BINARY = {
    "make_complex": _make_complex, "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "remainder": np.remainder,
    "floor_divide": np.floor_divide, "atan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp,
    "copysign": np.copysign, "nextafter": np.nextafter, "eq": np.equal, "ne": np.not_equal, "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}


def _int_pow(a, b):
    # numpy refuses negative integer exponents; burn gives PyTorch's (C's) integer result on every
    # backend: 1 ** -k = 1, (-1) ** -k = -1 or 1 by the parity of k, anything else 0
    b = np.asarray(b)
    if a.dtype.kind not in "iu" or b.dtype.kind != "i" or not (b < 0).any():
        return np.power(a, b)
    neg = b < 0
    r = np.power(a, np.where(neg, 0, b))
    low = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 1, -1, 1), 0))
    return np.where(neg, low, r).astype(r.dtype, copy=False)


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


