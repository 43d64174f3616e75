"""``burn.backend_extension``: reference fallback, eager meta errors, what
kernels receive, custom and reference backward rules, and how extensions sit in
the fusion graph. References are plain numpy formulas written independently of
the ops under test."""
from __future__ import annotations

import numpy as np
import pytest

import burn
from burn import ShapeError, TensorMeta
from burn.testing import gradcheck

calls: dict[str, list] = {}


def _count(key, value=None):
    calls.setdefault(key, []).append(value)


@pytest.fixture(autouse=True)
def _reset_calls():
    calls.clear()


# softsign f(u) = u / (1 + |u|), f'(u) = 1 / (1 + |u|)^2 ------------------------------

def np_softsign(u):
    return u / (1 + np.abs(u))


def np_softsign_grad(u):
    return 1 / (1 + np.abs(u)) ** 2


@burn.backend_extension("test_ext::softsign")
def softsign(u):
    """Opaque extension with a flex kernel and no .backward (autodiff uses this)."""
    _count("softsign_reference")
    return u / (1 + burn.abs(u))


@softsign.meta
def _(u):
    return TensorMeta(u.shape, u.dtype)


@softsign.kernel("flex")
def _(u):
    _count("softsign_flex", u.shape)
    return np_softsign(u)


@burn.backend_extension("test_ext::softsign_custom_bwd")
def softsign_custom_bwd(u):
    return u / (1 + burn.abs(u))


@softsign_custom_bwd.meta
def _(u):
    return TensorMeta(u.shape, u.dtype)


@softsign_custom_bwd.kernel("flex")
def _(u):
    return np_softsign(u)


@softsign_custom_bwd.backward
def _(ctx, grad):
    _count("custom_backward", (len(ctx.inputs), ctx.out.shape))
    (u,) = ctx.inputs
    d = 1 + burn.abs(u)
    return (grad / (d * d),)


@burn.backend_extension("test_ext::ew_softsign", elementwise=True)
def ew_softsign(u):
    return u / (1 + burn.abs(u))


@ew_softsign.meta
def _(u):
    return TensorMeta(u.shape, u.dtype)


@ew_softsign.kernel("flex")
def _(u):
    _count("ew_flex", u.shape)
    return np_softsign(u)


# an op with kernels only for a backend that is not installed --------------------------

@burn.backend_extension("test_ext::exact_add")
def exact_add(a, b):
    """a + b for operands of exactly the same shape (the meta rule refuses broadcasting)."""
    _count("exact_add_reference")
    return a + b


@exact_add.meta
def _(a, b):
    if a.shape != b.shape:
        raise ShapeError(f"test_ext::exact_add: shapes must match exactly, got {a.shape} and {b.shape}")
    return TensorMeta(a.shape, a.dtype)


@exact_add.kernel("nonexistent_backend")
def _(a, b):
    _count("exact_add_other_backend")
    return a + b


# a probe of what kernels receive -------------------------------------------------------

class Opaque:
    """A non-tensor argument that must reach the kernel as the very same object."""

    def __init__(self, k):
        self.k = k


@burn.backend_extension("test_ext::outer_scale")
def outer_scale(col, row, scale, *, opts):
    return col * row * (scale.k * opts["factor"])


@outer_scale.meta
def _(col, row, scale, *, opts):
    if col.ndim != 2 or row.ndim != 2 or col.shape[1] != 1 or row.shape[0] != 1:
        raise ShapeError(f"test_ext::outer_scale: want col (n, 1) and row (1, m), got {col.shape}, {row.shape}")
    return TensorMeta((col.shape[0], row.shape[1]), col.dtype)


@outer_scale.kernel("flex")
def _(col, row, scale, *, opts):
    _count("outer_scale_flex", (type(col), col.shape, type(row), row.shape, scale, opts))
    return col * row * (scale.k * opts["factor"])


# -- tests -------------------------------------------------------------------------------

def test_flex_kernel_is_used_and_matches_numpy():
    a = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    y = softsign(burn.tensor(a)).numpy()
    assert calls.get("softsign_flex") == [(3, 4)] and "softsign_reference" not in calls
    np.testing.assert_allclose(y, np_softsign(a), rtol=1e-6)


def test_reference_runs_where_the_backend_has_no_kernel():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.5, dtype=np.float32)
    y = exact_add(burn.tensor(a), burn.tensor(b))
    np.testing.assert_allclose(y.numpy(), a + b)
    assert calls.get("exact_add_reference") == [None] and "exact_add_other_backend" not in calls
    assert burn.dispatch.registry.kernel("test_ext::exact_add", "flex") is None


def test_meta_errors_are_raised_at_the_call_even_on_the_reference_path():
    a, b = burn.ones((2, 3)), burn.ones((3,))
    with pytest.raises(ShapeError, match=r"exact_add.*\(2, 3\).*\(3,\)"):
        exact_add(a, b)                   # no kernel on flex: the reference would broadcast
    assert "exact_add_reference" not in calls
    with pytest.raises(ShapeError, match="outer_scale"):
        outer_scale(burn.ones((3,)), burn.ones((1, 4)), Opaque(1.0), opts={"factor": 1.0})
    assert "outer_scale_flex" not in calls


def test_meta_must_return_tensor_meta():
    @burn.backend_extension("test_ext::bad_meta")
    def bad_meta(x):
        return x

    @bad_meta.meta
    def _(x):
        return x.shape                    # a common mistake

    @bad_meta.kernel("flex")
    def _(x):
        return x

    with pytest.raises(burn.BurnError, match="bad_meta.*TensorMeta"):
        bad_meta(burn.ones((2,)))


def test_kernel_receives_native_arrays_unbroadcast_and_other_args_unchanged():
    col = np.array([[1.0], [2.0], [3.0]], dtype=np.float32)
    row = np.array([[1.0, 10.0, 100.0, 1000.0]], dtype=np.float32)
    scale, opts = Opaque(2.0), {"factor": 0.5}
    y = outer_scale(burn.tensor(col) * 1, burn.tensor(row), scale, opts=opts)   # col is a lazy result
    np.testing.assert_allclose(y.numpy(), col * row * 1.0)
    assert y.shape == (3, 4)
    [(tcol, scol, trow, srow, got_scale, got_opts)] = calls["outer_scale_flex"]
    assert tcol is np.ndarray and trow is np.ndarray
    assert scol == (3, 1) and srow == (1, 4)          # not broadcast to the output shape
    assert got_scale is scale and got_opts is opts     # the very same objects


def test_tensor_keyword_argument_is_a_clear_error():
    with pytest.raises(burn.BurnError, match="keyword argument 'opts'.*positionally"):
        outer_scale(burn.ones((2, 1)), burn.ones((1, 2)), Opaque(1.0), opts=burn.ones((1,)))


def test_autodiff_through_the_reference_when_no_backward_is_given():
    a = np.array([[-2.0, -0.5, 0.0], [0.3, 1.0, 4.0]])
    assert gradcheck(softsign, a)
    dev = burn.Device.flex().autodiff()
    x = burn.tensor(a, dtype=burn.float64, device=dev).require_grad()
    g = x.grad(softsign(x).sum().backward()).numpy()
    np.testing.assert_allclose(g, np_softsign_grad(a), rtol=1e-10)
    assert "softsign_flex" in calls and "softsign_reference" in calls   # forward kernel, backward reference


def test_custom_backward_rule_is_used_when_given():
    a = np.array([[-2.0, -0.5, 0.1], [0.3, 1.0, 4.0]])
    assert gradcheck(softsign_custom_bwd, a)
    assert calls["custom_backward"] and calls["custom_backward"][0] == (1, (2, 3))


def test_custom_backward_sees_args_and_kwargs():
    seen = []

    @burn.backend_extension("test_ext::pow_scale")
    def pow_scale(x, p, *, scale):
        return (x ** p) * scale

    @pow_scale.meta
    def _(x, p, *, scale):
        return TensorMeta(x.shape, x.dtype)

    @pow_scale.kernel("flex")
    def _(x, p, *, scale):
        return (x ** p) * scale

    @pow_scale.backward
    def _(ctx, grad):
        x, p = ctx.args
        seen.append((p, ctx.kwargs))
        return (grad * ctx.kwargs["scale"] * p * x ** (p - 1),)

    a = np.array([0.5, 1.5, 2.0])
    assert gradcheck(lambda t: pow_scale(t, 3, scale=0.25), a)
    assert seen[0] == (3, {"scale": 0.25})


def _chain(ext, x):
    return ext(x * 2 + 1) * 3 - 1


@pytest.mark.parametrize("ext", [softsign, softsign_custom_bwd])
def test_opaque_extension_splits_the_elementwise_chain(ext):
    a = np.linspace(-2, 2, 20, dtype=np.float32).reshape(4, 5)
    y = _chain(ext, burn.tensor(a))
    groups = burn.fusion.explain(y).groups
    assert [(k, ops) for k, ops, _ in groups] == [
        ("elementwise", ["mul", "add"]), ("kernel", [ext.name]), ("elementwise", ["mul", "sub"])]
    assert ext.name in groups[0][2] and "extension" in groups[0][2] and "opaque" in groups[0][2]
    np.testing.assert_allclose(y.numpy(), np_softsign(a * 2 + 1) * 3 - 1, rtol=1e-5, atol=1e-6)
    # gradients through the split chain
    dev = burn.Device.flex().autodiff()
    x = burn.tensor(a, dtype=burn.float64, device=dev).require_grad()
    out = _chain(ext, x)
    assert [k for k, _, _ in burn.fusion.explain(out).groups] == ["elementwise", "kernel", "elementwise"]
    g = x.grad(out.sum().backward()).numpy()
    np.testing.assert_allclose(g, 6 * np_softsign_grad(a.astype(np.float64) * 2 + 1), rtol=1e-9)


def test_elementwise_extension_is_fused_into_the_group_on_flex():
    a = np.random.default_rng(0).standard_normal((600, 500)).astype(np.float32)   # big enough to block
    y = _chain(ew_softsign, burn.tensor(a))
    groups = burn.fusion.explain(y).groups
    assert [(k, ops) for k, ops, _ in groups] == [
        ("elementwise", ["mul", "add", ew_softsign.name, "mul", "sub"])]
    np.testing.assert_allclose(y.numpy(), np_softsign(a * 2 + 1) * 3 - 1, rtol=1e-5, atol=1e-6)
    # flex ran the kernel inside its fused, cache-blocked loop: on blocks, not the whole array
    shapes = calls["ew_flex"]
    assert len(shapes) > 1 and sum(int(np.prod(s)) for s in shapes) == a.size
    dev = burn.Device.flex().autodiff()
    x = burn.tensor(a[:3, :4], dtype=burn.float64, device=dev).require_grad()
    g = x.grad(_chain(ew_softsign, x).sum().backward()).numpy()
    np.testing.assert_allclose(g, 6 * np_softsign_grad(a[:3, :4].astype(np.float64) * 2 + 1), rtol=1e-9)


def test_extension_names_must_be_namespaced_and_unique():
    with pytest.raises(burn.BurnError, match="namespace::name"):
        burn.backend_extension("nonamespace")(lambda x: x)
    with pytest.raises(burn.PluginError, match="test_ext::softsign.*already defined"):
        burn.backend_extension("test_ext::softsign")(lambda x: x)


# -- the per-signature call cache: faster calls, same meaning ---------------------------

@burn.backend_extension("test_ext::affine")
def affine(x, scale, shift=0.0):
    """x * scale + shift; the kernel records what it was given."""
    return x * scale + shift


@affine.meta
def _(x, scale, shift=0.0):
    _count("affine_meta", x.shape)
    if x.ndim != 1:
        raise ShapeError(f"affine: expected a vector, got shape {x.shape}")
    return TensorMeta(x.shape, x.dtype)


@affine.kernel("flex")
def _(x, scale, shift=0.0):
    _count("affine_flex", (type(scale), scale, type(shift), shift))
    return x * np.asarray(scale, dtype=x.dtype) + np.asarray(shift, dtype=x.dtype)


def test_repeated_calls_reuse_the_meta_result_but_new_shapes_run_the_rule_and_raise_at_the_call():
    x = burn.tensor([1.0, 2.0])
    for _ in range(3):
        y = affine(x, 2.0)
    assert y.tolist() == [2.0, 4.0]
    assert calls["affine_meta"] == [(2,)]                  # validated once for this signature
    assert affine(burn.tensor([1.0, 2.0, 3.0]), 2.0).tolist() == [2.0, 4.0, 6.0]
    assert calls["affine_meta"] == [(2,), (3,)]
    with pytest.raises(ShapeError, match=r"affine: expected a vector, got shape \(2, 2\)"):
        affine(burn.ones((2, 2)), 2.0)


def test_equal_arguments_of_other_types_reach_the_kernel_as_given():
    x = burn.tensor([1.0, 2.0])
    for scale in (2, 2.0, True, np.float32(2.0)):
        affine(x, scale).numpy()
    assert [c[0] for c in calls["affine_flex"]] == [int, float, bool, np.float32]
    affine(x, 2.0, shift=1).numpy()
    affine(x, 2.0, shift=1.0).numpy()
    assert [c[2:] for c in calls["affine_flex"][-2:]] == [(int, 1), (float, 1.0)]


def test_unhashable_arguments_are_passed_through_uncached():
    x = burn.tensor([1.0, 2.0])
    assert affine(x, [3.0, 4.0]).tolist() == [3.0, 8.0]
    assert affine(x, np.array([1.0, -1.0])).tolist() == [1.0, -2.0]
    assert [c[1] for c in calls["affine_flex"]][0] == [3.0, 4.0]


def test_a_kernel_registered_after_calls_replaces_the_cached_one():
    @burn.backend_extension("test_ext::late_kernel")
    def late(x):
        return x + 1

    @late.meta
    def _(x):
        return TensorMeta(x.shape, x.dtype)

    @late.kernel("flex")
    def _(x):
        return x + 1
    x = burn.tensor([1.0])
    assert late(x).tolist() == [2.0] and late(x).tolist() == [2.0]

    @late.kernel("flex", priority=5)
    def _(x):
        return x + 100
    assert late(x).tolist() == [101.0]


def test_plain_and_autodiff_calls_of_one_signature_do_not_share_an_entry():
    plain = burn.tensor([0.5, -1.0])
    assert not affine(plain, 3.0).requires_grad
    w = burn.tensor([0.5, -1.0], device=burn.Device.flex().autodiff()).require_grad()
    y = affine(w, 3.0)
    assert y.requires_grad and w.grad(y.sum().backward()).tolist() == [3.0, 3.0]


def test_negative_zero_and_nan_arguments_are_not_confused_with_cached_ones():
    x = burn.tensor([-1.0])                     # -1 * 0.0 = -0.0; -1 * -0.0 = 0.0; -0.0 + -0.0 = -0.0
    sign = lambda *a, **k: bool(np.signbit(affine(x, *a, **k).numpy()[0]))
    assert sign(0.0, shift=-0.0) and not sign(-0.0, shift=-0.0)      # a positional zero's sign
    assert not sign(0.0, shift=0.0) and sign(0.0, shift=-0.0)        # a keyword zero's sign
    assert np.isnan(affine(x, 1.0, shift=float("nan")).numpy()[0])
    assert affine(x, 1.0, shift=1.0).tolist() == [0.0]


def test_cached_calls_of_one_op_with_different_output_counts_return_the_right_count():
    @burn.backend_extension("test::split_n")
    def split_n(x, *, n):
        return tuple(x * float(i) for i in range(n)) if n > 1 else x

    @split_n.meta
    def _(x, *, n):
        m = burn.TensorMeta(tuple(x.shape), x.dtype)
        return tuple([m] * n) if n > 1 else m

    split_n.kernel("flex")(lambda x, *, n: tuple(x * float(i) for i in range(n)) if n > 1 else x)
    x = burn.ones((2,))
    for _ in range(2):                     # the second round is served from the call cache
        assert len(split_n(x, n=3)) == 3
        assert len(split_n(x, n=2)) == 2
        assert isinstance(split_n(x, n=1), burn.Tensor)
