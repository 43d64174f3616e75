"""One small function per burn primitive and core extension op, for tests/test_onnx_export.py:
``CASES[op] = (fn, args)``; tracing ``fn(*args)`` records ``op``."""
from __future__ import annotations

import numpy as np

import burn
import burn.nn.functional as F

_r = np.random.default_rng(0)


def _f(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return burn.tensor(_r.uniform(lo, hi, shape).astype(dtype))


def _i(*shape, lo=0, hi=3):
    return burn.tensor(_r.integers(lo, hi, shape).astype(np.int64))


X = _f(3, 4)
P = _f(3, 4, lo=0.5, hi=2.0)          # positive (log, sqrt, pow)
U = _f(3, 4, lo=-0.9, hi=0.9)         # inside (-1, 1)
I = burn.tensor(_r.integers(-5, 6, (3, 4)).astype(np.int32))
J = burn.tensor(_r.integers(1, 4, (3, 4)).astype(np.int32))
B = burn.tensor(_r.integers(0, 2, (3, 4)).astype(bool))

_UNARY_ARGS = {"log": P, "log1p": P, "log2": P, "log10": P, "sqrt": P, "rsqrt": P, "reciprocal": P,
               "asin": U, "acos": U, "atanh": U, "acosh": P + 1.0, "expm1": P}
_UNARY = ["neg", "positive", "abs", "sign", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt",
          "square", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
          "atanh", "sigmoid", "relu", "erf", "gelu", "silu", "softplus", "floor", "ceil", "round", "trunc",
          "reciprocal", "isnan", "isinf", "isfinite", "signbit", "real", "imag", "conj", "angle"]
_FN = {"neg": burn.negative, "positive": burn.positive}

CASES = {}
for _n in _UNARY:
    _fn = _FN.get(_n) or getattr(burn, _n)
    CASES[_n] = (_fn, (_UNARY_ARGS.get(_n, X),))
CASES["logical_not"] = (burn.logical_not, (B,))
CASES["bitwise_invert"] = (burn.bitwise_invert, (I,))
_BIN = {"add": burn.add, "sub": burn.subtract, "mul": burn.multiply, "div": burn.divide, "maximum": burn.maximum,
        "minimum": burn.minimum, "atan2": burn.atan2, "hypot": burn.hypot, "logaddexp": burn.logaddexp,
        "copysign": burn.copysign, "eq": burn.equal, "ne": burn.not_equal, "lt": burn.less, "le": burn.less_equal,
        "gt": burn.greater, "ge": burn.greater_equal}
for _n, _fn in _BIN.items():
    CASES[_n] = (_fn, (X, _f(4)))                       # broadcasting [3, 4] with [4]
CASES["pow"] = (burn.pow, (P, _f(4)))
CASES["remainder"] = (burn.remainder, (X, _f(4, lo=0.5, hi=1.5) * burn.tensor([1.0, -1.0, 1.0, -1.0])))
CASES["floor_divide"] = (burn.floor_divide, (I, J * burn.tensor(np.array([1, -1, 1, -1], np.int32))))
for _n in ("logical_and", "logical_or", "logical_xor"):
    CASES[_n] = (getattr(burn, _n), (B, burn.tensor(np.array([True, False, True, False]))))
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    CASES[_n] = (getattr(burn, _n), (I, J))
CASES["nextafter"] = (burn.nextafter, (X, _f(4)))
CASES["make_complex"] = (lambda a, b: burn.abs(burn.ops.elementwise._make_complex(a, b)), (X, X))
CASES["cast"] = (lambda x: x.astype(burn.int32), (X * 3.0,))
CASES["where"] = (lambda x: burn.where(x > 0, x, x * 0.5), (X,))
CASES["clip"] = (lambda x: burn.clip(x, -1.0, 0.5), (X,))
CASES["reshape"] = (lambda x: x.reshape((4, 3)), (X,))
CASES["permute"] = (lambda x: x.permute((1, 0)), (X,))
CASES["broadcast_to"] = (lambda x: burn.broadcast_to(x, (2, 3, 4)) + 0, (X,))
CASES["slice"] = (lambda x: x[1:, ::-2], (X,))
CASES["index"] = (lambda x, i: x[i, 1:3], (X, _i(2, 5)))
CASES["index_put"] = (lambda x, i: burn.index_put(x, (i,), 7.0), (X, burn.tensor([0, 2])))
CASES["take_along_axis"] = (lambda x, i: burn.take_along_axis(x, i, axis=1), (X, _i(3, 2, hi=4)))
CASES["scatter_add"] = (lambda x, i, v: burn.scatter_add(x, i, v, axis=1), (X, _i(3, 2, hi=4), _f(3, 2)))
CASES["concat"] = (lambda x, y: burn.concat([x, y], axis=0), (X, _f(2, 4)))
CASES["pad"] = (lambda x: burn.pad(x, ((1, 0), (2, 3)), value=1.5), (X,))
for _n in ("sum", "prod", "max", "min"):
    CASES[_n] = (lambda x, _n=_n: getattr(burn, _n)(x, axis=1, keepdims=True), (X,))
CASES["any"] = (lambda x: burn.any(x > 1.0, axis=0), (X,))
CASES["all"] = (lambda x: burn.all(x > -1.5, axis=1), (X,))
CASES["argmax"] = (lambda x: burn.argmax(x, axis=1), (X,))
CASES["argmin"] = (lambda x: burn.argmin(x, axis=0, keepdims=True), (X,))
CASES["cumsum"] = (lambda x: burn.cumsum(x, axis=1), (X,))
CASES["cumprod"] = (lambda x: burn.cumprod(x, axis=0), (X,))
CASES["argsort"] = (lambda x: burn.argsort(x, axis=-1), (X,))
CASES["searchsorted"] = (lambda a, v: burn.searchsorted(a, v), (burn.tensor([-1.0, 0.0, 0.5, 1.0]), X))
CASES["matmul"] = (lambda a, b: a @ b, (_f(2, 3, 4), _f(4, 5)))
_IMG, _W = _f(2, 3, 8, 8), _f(4, 3, 3, 3)
CASES["conv2d"] = (lambda x, w: F.conv2d(x, w, stride=2, padding=1), (_IMG, _W))
CASES["conv2d_grad_input"] = (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1), (_IMG, _f(3, 4, 3, 3)))
CASES["max_pool2d"] = (lambda x: F.max_pool2d(x, 3, stride=2, padding=1), (_IMG,))
CASES["avg_pool2d"] = (lambda x: F.avg_pool2d(x, 3, stride=1, padding=1), (_IMG,))
CASES["full"] = (lambda x: x + burn.full((3, 4), 2.5), (X,))
CASES["arange"] = (lambda x: x + burn.arange(4).astype(burn.float32), (X,))
CASES["linspace"] = (lambda x: x + burn.linspace(0.0, 1.0, 4), (X,))
CASES["eye"] = (lambda x: burn.eye(3, 4) * x, (X,))
CASES["rand_uniform"] = (lambda x: x * 0 + burn.rand((3, 4)), (X,))
CASES["rand_normal"] = (lambda x: x * 0 + burn.randn((3, 4)), (X,))
CASES["rand_int"] = (lambda x: burn.randint(0, 5, (3, 4)), (X,))
# backward primitives: what a gradient records (export traces inference; they still map where ONNX can)
CASES["slice_grad"] = (lambda g: burn.ops.movement.apply(burn.ops.movement.slice_grad_p, (g,), {
    "shape": (5, 6), "starts": (1, 0), "stops": (4, 6), "steps": (1, 2)}), (_f(3, 3),))
CASES["index_add"] = (lambda g, i: burn.ops.movement.apply(burn.ops.movement.index_add_p, (g, i), {
    "spec": (("t", 0),), "shape": (5, 4)}), (X, burn.tensor([0, 4, 0])))
CASES["conv2d_grad_weight"] = (lambda x, g: burn.ops.movement.apply(burn.ops.conv.conv2d_grad_weight_p, (x, g), {
    "stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1, "kernel_hw": (3, 3)}),
    (_IMG, _f(2, 4, 6, 6)))
CASES["max_pool2d_grad"] = (lambda x, o, g: burn.ops.movement.apply(burn.ops.conv.max_pool2d_grad_p, (x, o, g), {
    "kernel": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0), "dilation": (1, 1)}),
    (_IMG, _f(2, 3, 4, 4), _f(2, 3, 4, 4)))
CASES["avg_pool2d_grad"] = (lambda g: burn.ops.movement.apply(burn.ops.conv.avg_pool2d_grad_p, (g,), {
    "kernel": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0), "count_include_pad": True, "input_hw": (8, 8)}),
    (_f(2, 3, 4, 4),))

# core extension ops
EXT = {
    "burn::softmax": (lambda x: F.softmax(x, axis=1), (X,)),
    "burn::log_softmax": (lambda x: F.log_softmax(x, axis=-1), (X,)),
    "burn::layer_norm": (lambda x, w, b: F.layer_norm(x, (4,), w, b), (X, _f(4), _f(4))),
    "burn::linear_relu": (lambda x, w, b: F.linear_relu(x, w, b), (_f(2, 3, 4), _f(4, 5), _f(5))),
    "burn::attention": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                        (_f(2, 2, 5, 4), _f(2, 2, 5, 4), _f(2, 2, 5, 4))),
    "burn::softmax_cross_entropy": (lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), (X, _i(3, hi=4))),
    "burn::lstm_layer": (lambda x, w, h, c: burn.fused.lstm_layer(x, w, h, c)[0],
                         (_f(3, 2, 8), _f(8, 2), _f(2, 2), _f(2, 2))),
    "burn::gru_layer": (lambda x, w, b, h: burn.fused.gru_layer(x, w, b, h)[0],
                        (_f(3, 2, 6), _f(6, 2), _f(6), _f(2, 2))),
}

# burn-linalg / burn-signal ops with an ONNX form (rule or reference definition)
_SQ = burn.tensor((_r.standard_normal((2, 4, 4)) + 4 * np.eye(4)).astype(np.float32))
_SPD = burn.tensor((lambda a: a @ a.transpose(0, 2, 1) + 4 * np.eye(4))(_r.standard_normal((2, 4, 4))).astype(np.float32))
LIBRARY = {
    "linalg::det": (lambda a: burn.linalg.det(a), (_SQ,)),
    "linalg::diagonal": (lambda a: burn.linalg.diagonal(a, offset=1), (_SQ,)),
    "linalg::cholesky": (lambda a: burn.linalg.cholesky(a), (_SPD,)),
    "signal::convolve": (lambda a, b: [burn.signal.convolve(a, b, mode=m) for m in ("full", "same", "valid")],
                         (_f(9), _f(4))),
    "signal::correlate": (lambda a, b: [burn.signal.correlate(a, b, mode=m) for m in ("full", "same")],
                          (_f(6, 7), _f(3, 2))),
    "signal::fftconvolve": (lambda a, b: burn.signal.fftconvolve(a, b, mode="same"), (_f(10), _f(3))),
}

_SIG = _f(2, 64)


def _spectral_mix(x):
    z = burn.signal.rfft(x, axis=-1)
    w = z * burn.conj(z[:, ::-1]) / (z + 2.0)           # complex mul, div, conj, slice, cast
    return [burn.abs(w), burn.angle(z), burn.real(w), burn.imag(w)]


SIGNAL_FFT = {
    "signal::rfft": (_spectral_mix, (_SIG,)),
    "signal::fft": (lambda x: burn.abs(burn.signal.fft(x, n=48, axis=1, norm="ortho")), (_SIG,)),
    "signal::ifft": (lambda x: burn.real(burn.signal.ifft(burn.signal.fft(x, axis=1) * 1j)), (_SIG,)),
    "signal::irfft": (lambda x: burn.signal.irfft(burn.signal.rfft(x), n=62, norm="forward"), (_SIG,)),
    "signal::fftn": (lambda x: burn.abs(burn.signal.fftn(x)), (_f(4, 6),)),
    "signal::ifftn": (lambda x: burn.real(burn.signal.ifftn(burn.signal.fftn(x))), (_f(4, 6),)),
    "signal::rfftn": (lambda x: burn.imag(burn.signal.rfftn(x)), (_f(4, 6),)),
    "signal::irfftn": (lambda x: burn.signal.irfftn(burn.signal.rfftn(x), s=(4, 6)), (_f(4, 6),)),
    "signal::stft": (lambda x: burn.abs(burn.signal.stft(x, nperseg=16)[2]), (_SIG,)),
    "signal::istft": (lambda x: burn.signal.istft(burn.signal.stft(x, nperseg=16)[2], nperseg=16)[1], (_SIG,)),
    "signal::resample": (lambda x: burn.signal.resample(x, 40, axis=-1), (_SIG,)),
    "linalg::solve_triangular": (lambda a, b: burn.linalg.solve_triangular(a, b, lower=True),
                                 (burn.tensor(np.tril(_r.standard_normal((4, 4))) + 4 * np.eye(4)).astype(burn.float32),
                                  _f(4, 2))),
}
LIBRARY.update(SIGNAL_FFT)
