"""Complex tensors on wgpu: the generated complex kernels (burn.codegen.complex) against numpy.

Every element-wise op the generator renders for complex64 / complex128 runs on
Device.wgpu() and is compared with numpy (random values, broadcasting, strided
views, and the special values numpy's algorithms treat specially); fused
complex chains are one launch; reductions, scans and matmul of complex tensors
(burn_wgpu.kernels.reduce.complex) and the movement ops on complex storage match
numpy; FFT gradients through wgpu match finite differences; the CUDA dialect's
complex kernels compile with ``nvcc --ptx``. complex128 cases need the device's
fp64 and are skipped without it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings

import numpy as np
import pytest

import burn
from burn.codegen import CUDA, OPENCL, program_source, render_group
from burn.codegen.family import family_kernels

CT = ("complex64", "complex128")
NP_NAME = {"neg": "negative", "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
           "acosh": "arccosh", "atanh": "arctanh", "sub": "subtract", "mul": "multiply", "div": "true_divide",
           "pow": "power", "eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
           "ge": "greater_equal"}
UNARY = ["neg", "positive", "conj", "real", "imag", "abs", "angle", "square", "reciprocal", "sign", "exp", "expm1",
         "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos",
         "atan", "asinh", "acosh", "atanh", "isnan", "isinf", "isfinite", "logical_not"]
BINARY = ["add", "sub", "mul", "div", "pow", "eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum",
          "logical_and", "logical_or", "logical_xor"]


@pytest.fixture(scope="module")
def wgdev(wg):
    return wg        # conftest's (device, OpenCL context) fixture


@pytest.fixture(params=CT)
def ct(request, wgdev):
    if request.param == "complex128" and not wgdev[1].fp64:
        pytest.skip("the OpenCL device has no fp64 (cl_khr_fp64)")
    return request.param


def _np_ref(op, *xs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if op == "rsqrt":
            return np.reciprocal(np.sqrt(xs[0]))
        if op == "positive":
            return np.positive(xs[0])
        return getattr(np, NP_NAME.get(op, op))(*xs)


def _burn_op(op, *xs):
    names = {"sub": "subtract", "mul": "multiply", "div": "divide", "eq": "equal", "ne": "not_equal",
             "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}
    return getattr(burn, names.get(op, op))(*xs)


def _tol(ct):
    return (3e-5, 3e-6) if ct == "complex64" else (1e-12, 1e-14)


def _check(got, want, ct, scale=1.0):
    """Values (and dtype) of a wgpu result against numpy's; NaN in the same places."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if got.dtype.kind in "fc":
        rtol, atol = _tol(ct)
        np.testing.assert_allclose(got, want, rtol=rtol * scale, atol=atol * scale, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def _rand(rng, shape, ct, lo=-2.0, hi=2.0):
    return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(ct)


def _w(a, dev):
    return burn.tensor(a, device=dev)


# -- element-wise forward -------------------------------------------------------------------------

@pytest.mark.parametrize("op", UNARY)
def test_unary_op_matches_numpy(wgdev, ct, op, rng):
    dev, _ = wgdev
    z = _rand(rng, (3, 5), ct)
    # inverse trig near their branch points loses digits in the log/sqrt forms: scale the tolerance
    scale = 20 if op in ("asin", "acos", "atan", "asinh", "acosh", "atanh") else 2
    _check(_burn_op(op, _w(z, dev)).numpy(), _np_ref(op, z), ct, scale)


@pytest.mark.parametrize("op", BINARY)
def test_binary_op_matches_numpy(wgdev, ct, op, rng):
    dev, _ = wgdev
    a, b = _rand(rng, (4, 3), ct), _rand(rng, (4, 3), ct)
    a[0, :2] = b[0, :2]                                 # ties for the comparisons
    a[1, 0] = b[1, 0].real + 1j * (b[1, 0].imag + 1)    # equal real parts, the imaginary decides
    b[2, 1] = 0                                         # zero for the logical ops
    _check(_burn_op(op, _w(a, dev), _w(b, dev)).numpy(), _np_ref(op, a, b), ct, 4)


def test_transcendentals_over_twelve_decades(wgdev, ct, rng):
    """Relative error against numpy for |z| from 1e-6 to 1e6 in every direction: the small-|z|
    series and large-|z| forms of the inverse functions keep their digits."""
    dev, _ = wgdev
    z = (10.0 ** rng.uniform(-6, 6, 400) * np.exp(1j * rng.uniform(-np.pi, np.pi, 400))).astype(ct)
    rtol = 4e-6 if ct == "complex64" else 1e-13
    for op in ("asin", "acos", "atan", "asinh", "acosh", "atanh", "tan", "tanh", "sqrt", "log", "log1p", "sin",
               "cosh"):
        got = _burn_op(op, _w(z, dev)).numpy()
        want = _np_ref(op, z)
        fin = np.isfinite(want)
        np.testing.assert_array_equal(np.isfinite(got), fin, err_msg=op)
        rel = np.abs(got[fin] - want[fin]) / np.maximum(np.abs(want[fin]), np.finfo(got.real.dtype).tiny)
        assert rel.max() < rtol, (op, rel.max())


def test_broadcasting_and_strided_views(wgdev, ct, rng):
    dev, _ = wgdev
    a = _rand(rng, (4, 6), ct)
    b = _rand(rng, (6,), ct)
    c = _rand(rng, (6, 1), ct)
    ta = _w(a, dev)
    for x, xn in [(ta, a), (ta.mT, a.T), (ta[::2, 1::2], a[::2, 1::2]), (ta[:, ::-1], a[:, ::-1])]:
        n = xn.shape[-1]
        want = (xn * b[:n] - c[: xn.shape[0]]) / (xn + 3)
        got = (x * _w(b[:n], dev) - _w(c[: xn.shape[0]], dev)) / (x + 3)
        _check(got.numpy(), want, ct, 4)
    # a 0-d complex scalar broadcast against a matrix, and a Python complex scalar
    _check((ta * _w(np.asarray(b[0]), dev)).numpy(), a * b[0], ct)
    _check((ta * (0.5 - 2j) + 1j).numpy(), (a * (0.5 - 2j) + 1j).astype(ct), ct)


def test_numpy_special_values(wgdev, ct):
    dev, _ = wgdev
    inf, nan = np.inf, np.nan
    v = np.array([0, -0.0, 1, -1, 1j, -1j, -4 + 0j, complex(-4, -0.0), complex(inf, 0), complex(-inf, 2),
                  complex(2, inf), complex(nan, 1), complex(1, nan), complex(3, 4), complex(1e-30, -1e-30)], ct)
    tv = _w(v, dev)
    for op in ("sqrt", "sign", "isnan", "isinf", "isfinite", "abs", "angle", "reciprocal", "conj", "neg",
               "logical_not"):
        _check(_burn_op(op, tv).numpy(), _np_ref(op, v), ct)
    # Smith's division: a zero divisor, huge and tiny parts, infinities
    a = np.array([1 + 1j, 1 + 1j, 0, 1e30 + 1e30j, 1e-30 + 2e-30j, complex(inf, 1)], ct)
    b = np.array([0, 1e-30 + 1e30j, 0, 1e30 - 1e30j, 3e-30 + 1e-30j, 2 + 1j], ct)
    _check((_w(a, dev) / _w(b, dev)).numpy(), _np_ref("div", a, b), ct)
    # pow: numpy's exact integer powers, zero bases and the exp(b log a) form
    base = np.array([1 + 2j, 1 + 2j, 1 + 2j, -2 + 0.5j, 0, 0, 3 - 1j], ct)
    expo = np.array([2, -3, 7, 0.5 + 0.25j, 2, 0, 0], ct)
    _check(burn.pow(_w(base, dev), _w(expo, dev)).numpy(), _np_ref("pow", base, expo), ct, 4)
    # exp of a real value keeps an exact zero imaginary part; tanh saturates for large real parts
    e = np.array([2 + 0j, -1 + 0j, 30 + 1j, -30 - 2j, 400 + 0.5j], ct)
    _check(burn.exp(_w(e[:2], dev)).numpy(), np.exp(e[:2]), ct)
    _check(burn.tanh(_w(e, dev)).numpy(), np.tanh(e), ct)
    # the C library's limits at infinities
    s = np.array([complex(-inf, -inf), complex(inf, 0), complex(-inf, 0), complex(inf, inf), complex(-inf, 2)], ct)
    for op in ("exp", "sinh", "cosh", "tanh"):
        got, want = _burn_op(op, _w(s, dev)).numpy(), _np_ref(op, s)
        keep = [i for i in range(len(s)) if not (op == "exp" and i > 0)]   # exp(inf + ...) has nan parts
        _check(got[keep], want[keep], ct)


def test_casts_between_real_bool_and_complex(wgdev, ct, rng):
    dev, dc = wgdev
    z = _rand(rng, (3, 4), ct)
    z[0, 0] = 0
    z[0, 1] = 1j
    t = _w(z, dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # numpy's ComplexWarning: the real part is kept
        for d in ("float32", "int32", "int64", "bool") + (("float64",) if dc.fp64 else ()):
            _check(t.astype(burn.as_dtype(d)).numpy(), z.astype(d), ct)
    for d in ("float32", "int32", "bool", "uint8"):
        x = rng.uniform(-3, 3, (3, 4)).astype(d)
        _check(_w(x, dev).astype(burn.as_dtype(ct)).numpy(), x.astype(ct), ct)
    other = "complex128" if ct == "complex64" else "complex64"
    if dc.fp64:
        _check(t.astype(burn.as_dtype(other)).numpy(), z.astype(other), "complex64")
    # promotion: complex64 + float64 -> complex128
    if dc.fp64 and ct == "complex64":
        r = rng.standard_normal((3, 4))
        _check((t + _w(r, dev)).numpy(), z + r, "complex64")


def test_where_full_and_creation(wgdev, ct, rng):
    dev, _ = wgdev
    z, w = _rand(rng, (3, 4), ct), _rand(rng, (4,), ct)
    cond = rng.random((3, 4)) < 0.5
    _check(burn.where(_w(cond, dev), _w(z, dev), _w(w, dev)).numpy(), np.where(cond, z, w), ct)
    d = burn.as_dtype(ct)
    _check(burn.full((2, 3), 1.5 - 2.5j, dtype=d, device=dev).numpy(), np.full((2, 3), 1.5 - 2.5j, ct), ct)
    _check(burn.zeros((2, 3), dtype=d, device=dev).numpy(), np.zeros((2, 3), ct), ct)
    _check(burn.ones((2,), dtype=d, device=dev).numpy(), np.ones((2,), ct), ct)
    _check(burn.eye(3, 4, k=1, dtype=d, device=dev).numpy(), np.eye(3, 4, k=1, dtype=ct), ct)
    _check(burn.arange(0, 7, 2, dtype=d, device=dev).numpy(), np.arange(0, 7, 2).astype(ct), ct)


def test_movement_ops_copy_complex_storage(wgdev, ct, rng):
    dev, _ = wgdev
    z = _rand(rng, (3, 4, 5), ct)
    t = _w(z, dev)
    _check(burn.permute_dims(t, (2, 0, 1)).numpy(), np.transpose(z, (2, 0, 1)), ct)
    _check(t.mT.reshape((-1,)).numpy(), np.swapaxes(z, -1, -2).reshape(-1), ct)
    _check(t[1:, ::-1, ::2].numpy(), z[1:, ::-1, ::2], ct)
    _check(burn.concat([t, t[:1]], axis=0).numpy(), np.concatenate([z, z[:1]], 0), ct)
    _check(burn.stack([t[0], t[1]], axis=1).numpy(), np.stack([z[0], z[1]], 1), ct)
    _check(burn.broadcast_to(t[:, :1], (3, 4, 5)).numpy(), np.broadcast_to(z[:, :1], (3, 4, 5)), ct)
    _check(t[burn.tensor([2, 0], device=dev)].numpy(), z[[2, 0]], ct)
    idx = rng.integers(0, 5, (3, 4, 2))
    _check(burn.take_along_axis(t, _w(idx, dev), axis=2).numpy(), np.take_along_axis(z, idx, 2), ct)


# -- fusion -----------------------------------------------------------------------------------------

def _launches(dev):
    return dev.backend.stats(dev.index)["launches"]


def test_fused_complex_chain_is_one_launch(wgdev, ct, rng):
    dev, _ = wgdev
    a, b = _rand(rng, (1 << 16,), ct, -1, 1), _rand(rng, (1 << 16,), ct, -1, 1)
    x, y = _w(a, dev), _w(b, dev)
    dev.sync()
    before = _launches(dev)
    out = burn.sqrt(burn.exp(x * y) / (burn.conj(x) + 2)) - y * y
    mag = burn.abs(out)              # a real output of the same group
    dev.sync()
    assert _launches(dev) - before == 1
    want = np.sqrt(np.exp(a * b) / (np.conj(a) + 2)) - b * b
    _check(out.numpy(), want, ct, 4)
    _check(mag.numpy(), np.abs(want), ct, 4)


def test_fused_chain_with_real_and_complex_values(wgdev, ct, rng):
    """real -> complex casts and complex -> real parts inside one fused group."""
    dev, _ = wgdev
    r = rng.standard_normal((1 << 16,)).astype("float32" if ct == "complex64" else "float64")
    x = _w(r, dev)
    dev.sync()
    before = _launches(dev)
    z = x.astype(burn.as_dtype(ct)) * (1 + 2j)
    out = burn.real(z * z) + burn.imag(z) * 0.5
    dev.sync()
    assert _launches(dev) - before == 1
    zz = r.astype(ct) * np.asarray(1 + 2j, ct)
    _check(out.numpy(), (zz * zz).real + zz.imag * 0.5, ct, 4)


def test_fused_reduce_group_on_complex(wgdev, ct, rng):
    dev, _ = wgdev
    a = _rand(rng, (64, 1024), ct, -1, 1)
    x = _w(a, dev)
    s = burn.sum(x * burn.conj(x) + 1j, axis=1)
    _check(s.numpy(), np.sum(a * np.conj(a) + 1j, axis=1), ct, 50)


def test_real_reduction_of_a_complex_prologue_is_one_launch(wgdev, ct, rng):
    """sum(|z * w|^2 + Re(z)): the complex chain is evaluated in the reduction kernel's load."""
    dev, _ = wgdev
    a, b = _rand(rng, (256, 512), ct, -1, 1), _rand(rng, (512,), ct, -1, 1)
    x, y = _w(a, dev), _w(b, dev)
    counts = []
    for _ in range(2):
        dev.sync()
        before = _launches(dev)
        s = burn.sum(burn.square(burn.abs(x * y)) + burn.real(x), axis=1)
        dev.sync()
        counts.append(_launches(dev) - before)
        _check(s.numpy(), np.sum(np.abs(a * b) ** 2 + a.real, axis=1), ct, 50)
    assert counts[-1] == 1


# -- reductions, scans, matmul --------------------------------------------------------------------

@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, True), (1, False), ((0, 2), True), (-1, False)])
def test_sum_and_mean_over_axes(wgdev, ct, axis, keepdims, rng):
    dev, _ = wgdev
    z = _rand(rng, (3, 4, 5), ct)
    t = _w(z, dev)
    _check(burn.sum(t, axis=axis, keepdims=keepdims).numpy(), np.sum(z, axis=axis, keepdims=keepdims), ct, 4)
    _check(burn.mean(t, axis=axis, keepdims=keepdims).numpy(), np.mean(z, axis=axis, keepdims=keepdims), ct, 4)
    _check(burn.sum(t.mT, axis=axis, keepdims=keepdims).numpy(),
           np.sum(np.swapaxes(z, -1, -2), axis=axis, keepdims=keepdims), ct, 4)


def test_long_complex_sum_stays_accurate(wgdev, ct, rng):
    dev, _ = wgdev
    z = _rand(rng, (2, 100_000), ct, 0, 1)
    got = burn.sum(_w(z, dev), axis=1).numpy()
    want = np.sum(z.astype(np.complex128), axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-6 if ct == "complex64" else 1e-13)


def test_other_reductions_follow_numpy(wgdev, ct, rng):
    dev, _ = wgdev
    z = _rand(rng, (4, 6), ct)
    z[0, 3] = z[0, 1]                            # a tie: the first index wins
    z[1, :] = z[1, 0].real + 1j * np.arange(6)  # equal real parts: the imaginary part decides
    z[2, 4] = complex(np.nan, 0)                 # a NaN is the max and the min
    z[3, 2] = 0
    t = _w(z, dev)
    for op in ("max", "min", "argmax", "argmin", "prod", "any", "all"):
        for axis in (0, 1):
            _check(getattr(burn, op)(t, axis=axis).numpy(), getattr(np, op)(z, axis=axis), ct, 8)
    for op in ("cumsum", "cumprod"):
        for axis in (0, 1):
            _check(getattr(burn, op)(t[:3], axis=axis).numpy(), getattr(np, op)(z[:3], axis=axis), ct, 8)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 6)), ((4,), (4, 3))])
def test_matmul(wgdev, ct, sa, sb, rng):
    dev, _ = wgdev
    a, b = _rand(rng, sa, ct), _rand(rng, sb, ct)
    _check((_w(a, dev) @ _w(b, dev)).numpy(), a @ b, ct, 8)
    _check((_w(b, dev).mT @ _w(a, dev).mT).numpy() if len(sa) > 1 else (_w(b, dev).mT @ _w(a, dev)).numpy(),
           np.swapaxes(b, -1, -2) @ np.swapaxes(a, -1, -2) if len(sa) > 1 else np.swapaxes(b, -1, -2) @ a, ct, 8)


def test_complex_matmul_with_epilogue(wgdev, ct, rng):
    dev, _ = wgdev
    a, b, c = _rand(rng, (64, 32), ct), _rand(rng, (32, 48), ct), _rand(rng, (48,), ct)
    x, y, bias = _w(a, dev), _w(b, dev), _w(c, dev)
    for _ in range(2):                  # the second call runs the fused matmul group
        out = burn.exp((x @ y) * 0.1 + bias)
        _check(out.numpy(), np.exp((a @ b) * np.asarray(0.1, ct) + c), ct, 8)


def test_complex128_needs_fp64(wgdev):
    dev, dc = wgdev
    if dc.fp64:
        pytest.skip("this device has fp64")
    with pytest.raises(burn.DTypeError, match="float64"):
        burn.zeros((2,), dtype=burn.complex128, device=dev).numpy()


def test_ops_numpy_lacks_on_complex_raise_a_clear_error(wgdev):
    dev, _ = wgdev
    z = _w(np.array([1 + 1j], np.complex64), dev)
    with pytest.raises(burn.DTypeError, match="floor.*complex"):
        burn.floor(z).numpy()
    big = _w(np.full(1 << 17, 1 + 1j, np.complex64), dev)     # a fused group declines, op by op raises
    for f in (lambda x: burn.floor(x * 2) + 1, lambda x: burn.sum(burn.floor(x * 2)), lambda x: burn.relu(x) * 2):
        with pytest.raises(burn.DTypeError, match="complex"):
            f(big).numpy()


# -- gradients through wgpu --------------------------------------------------------------------------

def _fft():
    return burn.fft


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "fft2"])
def test_fft_gradients_on_wgpu_match_finite_differences(wgdev, name, rng):
    dev, dc = wgdev
    if not dc.fp64:
        pytest.skip("gradcheck needs float64")
    F = _fft()
    if name == "rfft":
        ok = burn.testing.gradcheck(lambda x: burn.abs(F.rfft(x)), rng.standard_normal(10), device=dev)
    elif name == "irfft":
        ok = burn.testing.gradcheck(lambda a, b: F.irfft(a + b * 1j, n=8), rng.standard_normal(5),
                                    rng.standard_normal(5), device=dev)
    elif name == "fft2":
        ok = burn.testing.gradcheck(lambda x: burn.real(F.fft2(x)) * burn.imag(F.fft2(x) * (1 - 1j)),
                                    rng.standard_normal((3, 4)), device=dev)
    else:
        fn = getattr(F, name)
        ok = burn.testing.gradcheck(lambda a, b: burn.real(fn(a + b * 1j) * burn.conj(fn(a * 1j - b))),
                                    rng.standard_normal(6), rng.standard_normal(6), device=dev)
    assert ok


def test_complex_elementwise_gradients_on_wgpu(wgdev, rng):
    dev, dc = wgdev
    if not dc.fp64:
        pytest.skip("gradcheck needs float64")

    def f(a, b):
        z = a + b * 1j
        w = z * z * (0.5 - 1j) + burn.conj(z) * 3 - z[:1]
        return burn.abs(w) + burn.imag(w) + burn.real(burn.sum(w * burn.conj(z), axis=0))
    assert burn.testing.gradcheck(f, rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), device=dev)


def test_holomorphic_backward_rules_conjugate(wgdev, rng):
    dev, dc = wgdev
    if not dc.fp64:
        pytest.skip("gradcheck needs float64")
    assert burn.testing.gradcheck(lambda a, b: burn.real(burn.exp((a + b * 1j) * 0.3)), rng.standard_normal(4),
                                  rng.standard_normal(4), device=dev)


# -- the generator itself (no device) ------------------------------------------------------------------

def _top_level_args(text):
    depth, n = 0, 1
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        n += ch == "," and depth == 0
    return n


def test_complex_values_never_go_through_a_scalar_cast():
    """OpenCL's ``(float2)(s)`` copies a scalar into both parts: a complex value is only ever
    built from its two parts, never by the renderer's generic one-argument cast."""
    built = 0
    for sig, out in [(("float32",), "complex64"), (("complex64",), "complex64"), ((), "complex128"),
                     (("int64",), "complex128"), (("complex64",) * 2, "complex64")]:
        src = program_source(family_kernels(sig, out, OPENCL), OPENCL)
        for m in re.finditer(r"(?:float2|double2) v\d+ = \((?:float2|double2)\)\((.*)\);\n", src):
            built += 1
            assert _top_level_args(m[1]) == 2, m[0]
    assert built >= 4


def test_cuda_dialect_spells_complex_with_make_functions():
    k = render_group("k", [("div", {}, [("in", 0), ("in", 1)])], ["complex128"] * 2, [0], CUDA)
    src = program_source([k], CUDA)
    assert "burn_cdiv_complex128(x0, x1)" in k.source and "make_double2(" in src and "(double2)(" not in src


NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)
_KERNEL = re.compile(r'(extern "C" __global__ void )(\w+)\(')


def _cuda_complex_modules():
    sigs = []
    for t in CT:
        sigs += [((t,), t), ((t,), "float32" if t == "complex64" else "float64"), ((t, t), t), ((t, t), "bool"),
                 (("bool", t, t), t), ((), t), (("float32",), t), (("int64",), t), (("bool",), t),
                 ((t,), "bool"), ((t,), "int32"), ((t,), "complex128" if t == "complex64" else "complex64")]
    mods = [program_source(family_kernels(ins, out, CUDA), CUDA) for ins, out in sigs]
    chain = [("mul", {}, [("in", 0), ("in", 1)]), ("exp", {}, [("op", 0)]), ("div", {}, [("op", 1), ("in", 0)]),
             ("abs", {}, [("op", 2)]), ("cast", {"dtype": "complex64"}, [("op", 3)]),
             ("pow", {}, [("op", 4), ("in", 1)])]
    mods.append(program_source([render_group("fused", chain, ["complex64"] * 2, [3, 5], CUDA, patterns=(0,))], CUDA))
    return [m for m in mods if m]


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed here")
def test_cuda_complex_kernels_compile_with_nvcc(tmp_path):
    mods = _cuda_complex_modules()
    assert sum(len(_KERNEL.findall(m)) for m in mods) > 100
    head, body = [], []
    for i, src in enumerate(mods):       # one .cu: each module in its own namespace, kernels renamed apart
        lines = src.split("\n")
        head += [ln for ln in lines if ln.startswith("#") and ln not in head]
        rest = "\n".join(ln for ln in lines if not ln.startswith("#"))
        body.append(f"namespace m{i} {{\n" + _KERNEL.sub(lambda m: f"{m.group(1)}m{i}_{m.group(2)}(", rest) + "\n}")
    path = tmp_path / "complex.cu"
    path.write_text("\n".join(head) + "\n" + "\n".join(body) + "\n")
    r = subprocess.run([NVCC, "--ptx", "-std=c++17", "-arch=compute_80", str(path), "-o", str(path) + ".ptx"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[:4000]
    assert os.path.getsize(str(path) + ".ptx") > 0
