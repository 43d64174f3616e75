"""Edge cases of the row kernels (softmax, log_softmax, layer_norm and their gradients) on every
backend that has them: special values and float32 accuracy.

Special values, against torch CPU (2.13): a row holding +inf anywhere, NaN anywhere, or only
-inf gives NaN everywhere, for softmax and log_softmax alike (+inf - +inf is NaN; an all -inf
row has no finite max); a row with some -inf gives 0 (softmax) / -inf (log_softmax) there and
the softmax of the rest. The +inf must poison the row wherever it sits: a one-item kernel that
shifted a +inf max by 0 summed exp(+inf) into its Kahan chain and got NaN, or not, depending on
whether the +inf came last (log_softmax([1, 2, inf]) was [-inf, -inf, nan]). Checked on flex,
on wgpu's one-work-item-per-row and work-group-per-row kernels (pinned through
``burn_wgpu.kernels.nn.ROWS_FORCE``), along the last axis and along axis 0 (strided rows), and on
cuda through the numpy stand-in for CuPy (:mod:`fakecupy`), or on a real GPU when there is one.

Accuracy: the one-item kernels sum a row in one serial float32 chain; with a compensated
(Kahan) sum a row of 700 values with a large dynamic range stays near a float64 reference
where the plain sum drifts (each case below fails on the plain-sum kernels)."""
import json

import numpy as np
import pytest

import burn
import burn.nn.functional as F
from devices import wgpu_or_skip as _wgpu_or_skip  # noqa: E402  (tests/ is on sys.path)

torch = pytest.importorskip("torch")

INF, NAN = np.inf, np.nan
# (name, row of 5): every special value first, in the middle and last, and in combinations
PATTERNS = [
    ("+inf first", [INF, 1, 2, 3, 4]), ("+inf mid", [1, 2, INF, 3, 4]), ("+inf last", [1, 2, 3, 4, INF]),
    ("two +inf", [INF, 1, 2, 3, INF]), ("all +inf", [INF] * 5), ("+inf and -inf", [-INF, 1, 2, 3, INF]),
    ("+inf then -inf", [INF, 1, 2, 3, -INF]), ("some -inf", [-INF, 1, -INF, 3, 4]),
    ("-inf last", [1, 2, 3, 4, -INF]), ("all -inf", [-INF] * 5), ("NaN first", [NAN, 1, 2, 3, 4]),
    ("NaN last", [1, 2, 3, 4, NAN]), ("NaN and +inf", [1, INF, 2, 3, NAN]),
    ("NaN and -inf", [-INF, NAN, -INF, -INF, -INF]), ("all NaN", [NAN] * 5), ("finite", [1, 2, 3, 4, 5]),
    ("huge finite", [3e37, -3e37, 1, 3e37, 0]),
]
NAMES = [p[0] for p in PATTERNS]


def _special(dtype, length=5):
    """The patterns as rows of ``length`` (a pattern fills the row's start and end, finite values
    between: long rows run the group kernels' vector loops and remainders)."""
    rows = []
    for _, r in PATTERNS:
        r = np.asarray(r, np.float64)
        row = np.linspace(-2, 2, length)
        row[:3], row[-2:] = r[:3], r[3:]
        rows.append(row)
    return np.asarray(rows, dtype=dtype)


def _torch(name, a, axis):
    fn = torch.softmax if name == "softmax" else torch.log_softmax
    return fn(torch.tensor(a), dim=axis).numpy()


def _brief(v):
    # a long row's values, first and last few: which end the kernel got wrong shows
    return str(v.tolist()) if v.size <= 8 else f"[{v[:4].tolist()} ... {v[-4:].tolist()}]"


def _assert_like_torch(y, ty, what):
    # NaN where torch has NaN, the same infinities, and close finite values; a per-row message
    # names the pattern that differs
    for i, nm in enumerate(NAMES):
        yi, ti = np.take(y, i, axis=what[1]), np.take(ty, i, axis=what[1])
        assert np.array_equal(np.isnan(yi), np.isnan(ti)), \
            f"{what[0]} {nm}: {_brief(yi)} vs torch {_brief(ti)}"
        np.testing.assert_allclose(yi, ti, rtol=1e-5, atol=1e-6, err_msg=f"{what[0]} {nm}")


@pytest.fixture
def rows_force(monkeypatch):
    lib = pytest.importorskip("burn_wgpu.kernels.nn")

    def pin(variant):
        monkeypatch.setattr(lib, "ROWS_FORCE", variant)
        lib.LAST_ROWS[0] = None
    return pin, lib


def test_torch_semantics_this_file_relies_on():
    # the reference itself: if a torch release changes these, the tests below follow it
    a = np.array([[1, INF, 2], [-INF, -INF, -INF], [1, NAN, 2], [-INF, 0, 0]], np.float32)
    for fn in (torch.softmax, torch.log_softmax):
        y = fn(torch.tensor(a), dim=1).numpy()
        assert np.isnan(y[:3]).all()
    assert torch.softmax(torch.tensor(a[3]), 0).tolist() == [0.0, 0.5, 0.5]
    assert torch.log_softmax(torch.tensor(a[3]), 0)[0].item() == -np.inf


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [1, 0])
def test_special_values_on_flex_match_torch(name, dtype, axis):
    a = _special(dtype)
    a = a if axis == 1 else np.ascontiguousarray(a.T)
    fn = F.softmax if name == "softmax" else F.log_softmax
    y = fn(burn.tensor(a, device=burn.Device.flex()), axis=axis).numpy()
    _assert_like_torch(y, _torch(name, a, axis), (f"flex {name}", 1 - axis))


@pytest.mark.parametrize("variant", ["row", "group"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis,length", [(1, 5), (0, 5), (1, 1001), (0, 130)])
def test_special_values_on_wgpu_match_torch(variant, name, dtype, axis, length, rows_force):
    dev = _wgpu_or_skip()
    pin, lib = rows_force
    pin(variant)
    a = _special(dtype, length)
    a = a if axis == 1 else np.ascontiguousarray(a.T)
    fn = F.softmax if name == "softmax" else F.log_softmax
    y = fn(burn.tensor(a, device=dev), axis=axis).numpy()
    assert lib.LAST_ROWS[0] == variant          # the pinned kernel ran, not another path
    _assert_like_torch(y, _torch(name, a, axis), (f"wgpu {variant} {name} L={length}", 1 - axis))


def test_single_element_rows_on_flex_and_wgpu(rows_force):
    # L == 1: softmax is 1 and log_softmax 0 for a finite value, NaN for +-inf or NaN (torch)
    a = np.array([[3.0], [INF], [-INF], [NAN]], np.float32)
    devs = [("flex", burn.Device.flex(), None)]
    try:
        devs += [("wgpu", _wgpu_or_skip(), v) for v in ("row", "group")]
    except pytest.skip.Exception:
        pass
    pin, _ = rows_force
    for name in ("softmax", "log_softmax"):
        ty = _torch(name, a, 1)
        fn = F.softmax if name == "softmax" else F.log_softmax
        for label, dev, variant in devs:
            pin(variant)
            y = fn(burn.tensor(a, device=dev), axis=1).numpy()
            np.testing.assert_array_equal(y, ty, err_msg=f"{label} {variant} {name}")


CUDA_PROBE = r'''
import json, numpy as np, burn
import burn.nn.functional as F
a = np.array(json.loads(A), dtype=DTYPE)
dev = burn.Device.cuda(0)
out = {}
for name, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
    for axis in (0, 1):
        x = a if axis == 1 else np.ascontiguousarray(a.T)
        out[f"{name}/{axis}"] = fn(burn.tensor(x, device=dev), axis=axis).numpy().astype(np.float64).tolist()
print(json.dumps(out))
'''


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_values_on_cuda_stand_in_match_torch(dtype, tmp_path):
    # burn_cuda's softmax / log_softmax are CuPy array calls: the numpy stand-in runs them as
    # written (NaN / inf propagation is numpy's, as CuPy's follows IEEE the same way)
    pytest.importorskip("burn_cuda")
    from fakecupy import run_probe
    a = _special(np.dtype(dtype).type)
    probe = f"A = {json.dumps(json.dumps(a.tolist()))}\nDTYPE = {dtype!r}\n" + CUDA_PROBE
    res = run_probe(tmp_path, probe, without_flex=True)
    for key, y in res.items():
        name, axis = key.split("/")
        axis = int(axis)
        x = a if axis == 1 else np.ascontiguousarray(a.T)
        _assert_like_torch(np.asarray(y), _torch(name, x, axis).astype(np.float64),
                           (f"cuda (stand-in) {dtype} {name} axis {axis}", 1 - axis))


def test_special_values_on_a_real_gpu_match_torch():
    from fakecupy import real_gpu
    why = real_gpu()
    if why != "ok":
        pytest.skip(f"needs CuPy and a CUDA GPU: {why}")
    dev = burn.Device.cuda(0)
    for dtype in (np.float32, np.float64):
        a = _special(dtype, 300)
        for name, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
            y = fn(burn.tensor(a, device=dev), axis=1).numpy()
            _assert_like_torch(y, _torch(name, a, 1), (f"cuda {name}", 0))


# -- float32 accuracy of the one-work-item kernels (rows shorter than LONG_ROW) -----------------

def _row_dev(rows_force):
    dev = _wgpu_or_skip()
    pin, lib = rows_force
    pin("row")
    return dev, lib


def _wide_range_row(rng, n=700):
    # the row's max first, then 699 values whose exp (~1e-8..5e-8) each lies below half an ulp of
    # 1.0 in float32: a plain running sum drops every one of them (their total is ~2e-5)
    x = rng.uniform(-19.0, -16.8, n)
    x[0] = 0.0
    return x.astype(np.float32)


def _rel_err(y, ref):
    return float(np.max(np.abs(y.astype(np.float64) - ref) / np.abs(ref)))


@pytest.mark.parametrize("n", [700, 120])
def test_softmax_of_a_wide_range_row_is_near_float64(n, rows_force):
    # contiguous rows run GV-lane compensated chains, strided ones (axis 0) scalar chains
    dev, lib = _row_dev(rows_force)
    rng = np.random.default_rng(1)
    a = np.stack([_wide_range_row(rng, n) for _ in range(4)])
    x64 = a.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    ref = e / e.sum(1, keepdims=True)
    for axis, arr, r in ((1, a, ref), (0, np.ascontiguousarray(a.T), ref.T)):
        y = F.softmax(burn.tensor(arr, device=dev), axis=axis).numpy()
        assert lib.LAST_ROWS[0] == "row"
        # plain float32 sum: ~2e-5 off (every small term lost); compensated: a few ulps
        assert _rel_err(y, r) < 1e-6, f"axis {axis}: relative error {_rel_err(y, r):.2e}"


@pytest.mark.parametrize("axis", [1, 0])
def test_log_softmax_of_a_wide_range_row_is_near_float64(axis, rows_force):
    dev, lib = _row_dev(rows_force)
    rng = np.random.default_rng(2)
    a = np.stack([_wide_range_row(rng) for _ in range(4)])
    x64 = a.astype(np.float64)
    ref = x64 - x64.max(1, keepdims=True)
    ref -= np.log(np.exp(ref).sum(1, keepdims=True))
    arr = a if axis == 1 else np.ascontiguousarray(a.T)
    y = F.log_softmax(burn.tensor(arr, device=dev), axis=axis).numpy()
    y = y if axis == 1 else y.T
    assert lib.LAST_ROWS[0] == "row"
    # the max's entry is -log(1 + 2e-5): its absolute error shows a lost sum directly
    assert np.max(np.abs(y[:, 0] - ref[:, 0])) < 1e-7
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-7)


def test_softmax_grad_of_a_wide_range_row_is_near_float64(rows_force):
    # dx = y * (g - sum(g * y)); at the max's entry (y ~ 1, g = 1) dx ~ -sum of the small terms,
    # so the error of the row sum shows undamped (rows of ROW_VEC_MIN or more: compensated;
    # shorter ones sum plainly, where compensation cost 1.2x)
    dev, lib = _row_dev(rows_force)
    rng = np.random.default_rng(3)
    a = np.stack([_wide_range_row(rng) for _ in range(4)])
    g = rng.uniform(2.0, 4.0, a.shape).astype(np.float32)
    g[:, 0] = 1.0
    ad = dev.autodiff()
    x = burn.tensor(a, device=ad).require_grad()
    y = F.softmax(x, axis=1)
    yv = y.numpy().astype(np.float64)
    dx = x.grad((y * burn.tensor(g, device=ad)).sum().backward()).numpy()
    assert lib.LAST_ROWS[0] == "row"
    # the reference from the kernel's own float32 y: only the gradient kernel's sum is checked
    ref = yv * (g - (g * yv).sum(1, keepdims=True))
    # plain float32 sum: 0.2 off; compensated (and g - s + the compensation): ~1e-5
    assert _rel_err(dx[:, :1], ref[:, :1]) < 1e-4, f"relative error {_rel_err(dx[:, :1], ref[:, :1]):.2e}"
    np.testing.assert_allclose(dx, ref, rtol=1e-5, atol=1e-12)


@pytest.mark.parametrize("n", [700, 120])
def test_layer_norm_of_rows_with_a_large_mean_is_near_float64(n, rows_force):
    # rows around 3000: the float32 running sum of the mean drifts by ~1e-3 of the spread, which
    # the normalized output carries; a compensated (700) or shifted (120: x - x[0]) mean stays
    # within a few ulps of 3000
    dev, lib = _row_dev(rows_force)
    rng = np.random.default_rng(4)
    a = (3000 + rng.standard_normal((6, n))).astype(np.float32)
    w = rng.uniform(0.5, 1.5, n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    g = rng.standard_normal(a.shape).astype(np.float32)
    x64 = a.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    r = 1 / np.sqrt(((x64 - mu) ** 2).mean(1, keepdims=True) + 1e-5)
    xh = (x64 - mu) * r
    ref = xh * w + b
    gh = g * w
    ref_dx = r * (gh - gh.mean(1, keepdims=True) - xh * (gh * xh).mean(1, keepdims=True))
    ad = dev.autodiff()
    x, xw, xb = (burn.tensor(v, device=ad).require_grad() for v in (a, w, b))
    y = F.layer_norm(x, (n,), xw, xb, eps=1e-5)
    yv = y.numpy()
    assert lib.LAST_ROWS[0] == "row"
    grads = (y * burn.tensor(g, device=ad)).sum().backward()
    dx, dw = x.grad(grads).numpy(), xw.grad(grads).numpy()
    assert lib.LAST_ROWS[0] == "row"
    # a float32 mean near 3000 is itself rounded by up to 1.2e-4 (half its ulp), carried into
    # (x - mean) * r * w with w up to 1.5: 5e-4 is that bound with margin; the plain sum: 2.6e-3
    assert np.max(np.abs(yv - ref)) < 5e-4, f"max error {np.max(np.abs(yv - ref)):.2e}"
    assert np.max(np.abs(dx - ref_dx)) < 5e-4, f"dx max error {np.max(np.abs(dx - ref_dx)):.2e}"
    # dw sums 6 rows' g * x_hat, each term carrying the bound above times |g| (up to ~3)
    np.testing.assert_allclose(dw, (g * xh).sum(0), rtol=1e-4, atol=6 * 3 * 5e-4)


@pytest.mark.parametrize("n", [255, 256, 263])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_both_sides_of_the_vector_threshold_match_torch(n, dtype, rows_force):
    # softmax_grad and layer_norm(_grad) switch to compensated vector loops at ROW_VEC_MIN (256):
    # just below, at, and past it with a scalar remainder
    dev, lib = _row_dev(rows_force)
    assert lib.ROW_VEC_MIN == 256
    rng = np.random.default_rng(n)
    a = (rng.standard_normal((5, n)) * 3 + 20).astype(dtype)
    w, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    gy = rng.standard_normal(a.shape).astype(dtype)
    ad = dev.autodiff()
    x, xw, xb = (burn.tensor(v, device=ad).require_grad() for v in (a, w, b))
    y = F.layer_norm(x, (n,), xw, xb, eps=1e-5) + F.softmax(x, axis=1)
    yv = y.numpy()
    assert lib.LAST_ROWS[0] == "row"
    lib.LAST_ROWS[0] = None
    grads = (y * burn.tensor(gy, device=ad)).sum().backward()
    t, tw, tb = (torch.tensor(v, requires_grad=True) for v in (a, w, b))
    ty = torch.nn.functional.layer_norm(t, (n,), tw, tb, 1e-5) + torch.softmax(t, 1)
    (ty * torch.tensor(gy)).sum().backward()
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(yv, ty.detach().numpy(), rtol=tol, atol=tol)
    for mine, theirs in ((x, t), (xw, tw), (xb, tb)):
        np.testing.assert_allclose(mine.grad(grads).numpy(), theirs.grad.numpy(), rtol=tol * 10, atol=tol * 10)
    assert lib.LAST_ROWS[0] == "row"                # the gradient kernels too


@pytest.mark.parametrize("row", [[np.inf, 1.0, 2.0], [1.0, np.inf, 2.0], [-np.inf, 1.0, 2.0],
                                 [-np.inf, -np.inf, -np.inf], [np.nan, 1.0, 2.0], [np.inf, -np.inf, 0.0]])
@pytest.mark.parametrize("target", [0, 1])
def test_cross_entropy_with_special_logits_matches_torch(row, target):
    # the loss and its gradient: a +inf logit makes its row nan (not inf), as torch's
    import burn.nn.functional as F
    x = np.array([row, [0.5, 1.0, -2.0]], np.float32)
    y = np.array([target, 2])
    xt = torch.tensor(x, requires_grad=True)
    lt = torch.nn.functional.cross_entropy(xt, torch.tensor(y))
    lt.backward()
    from devices import flex_and_wgpu
    for dev in [d.autodiff() for d in flex_and_wgpu()]:
        xb = burn.tensor(x, device=dev).require_grad()
        lb = F.cross_entropy(xb, burn.tensor(y, device=dev))
        gb = xb.grad(lb.backward())
        np.testing.assert_allclose(lb.item(), lt.item(), rtol=1e-6, equal_nan=True, err_msg=str(dev))
        np.testing.assert_allclose(gb.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-7, equal_nan=True,
                                   err_msg=str(dev))
