"""The Array API namespace functions composed in core (issue 12, part 1): values, dtypes
and shapes against numpy on flex and wgpu, gradients against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import burn
from burn.testing import gradcheck

from devices import flex_and_wgpu

DEVS = flex_and_wgpu()


@pytest.fixture(params=DEVS, ids=lambda d: d.kind)
def device(request):
    return request.param


def same(t, expected):
    expected = np.asarray(expected)
    assert t.shape == expected.shape, (t.shape, expected.shape)
    assert np.dtype(t.dtype) == expected.dtype, (t.dtype, expected.dtype)
    np.testing.assert_array_equal(t.numpy(), expected)


# -- dtypes and inspection ----------------------------------------------------------

def test_version_and_numpy_dtypes():
    assert burn.__array_api_version__ == "2024.12"
    for d in (burn.bool, burn.uint8, burn.uint16, burn.uint32, burn.uint64, burn.int8, burn.int16, burn.int32,
              burn.int64, burn.float16, burn.float32, burn.float64, burn.complex64, burn.complex128):
        assert np.dtype(d) == np.dtype(d.name)
        assert burn.as_dtype(np.dtype(d)) is d
    assert np.zeros(2, dtype=burn.float64).dtype == np.float64
    assert np.dtype(burn.bfloat16).name == "bfloat16"


@pytest.mark.parametrize("a,b", [("int8", "int32"), ("uint8", "int8"), ("uint8", "int64"), ("float16", "float64"),
                                 ("float32", "complex64"), ("float64", "complex64"), ("complex64", "complex128"),
                                 ("bool", "bool"), ("int32", "int64"), ("uint16", "int16"), ("uint32", "int8"),
                                 ("uint16", "uint64"), ("int16", "int64"), ("bool", "uint32")])
def test_result_type_matches_numpy_within_kinds(a, b):
    da, db = burn.as_dtype(a), burn.as_dtype(b)
    expected = np.result_type(a, b)
    assert np.dtype(burn.result_type(da, db)) == expected
    assert burn.result_type(burn.ones(2, dtype=da), db) is burn.result_type(da, db)


def test_result_type_python_scalars():
    assert burn.result_type(burn.float16, 1.0) is burn.float16
    assert burn.result_type(burn.int8, 1) is burn.int8
    assert burn.result_type(burn.uint8, True) is burn.uint8
    assert burn.result_type(burn.float32, 1j) is burn.complex64
    assert burn.result_type(burn.float64, 1j) is burn.complex128
    assert burn.result_type(burn.ones(2, dtype=burn.int32), 2.5) is burn.float32
    with pytest.raises(TypeError, match="at least one array or dtype"):
        burn.result_type(1, 2.0)


def test_can_cast_matches_numpy_safe_casting():
    names = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"]
    for a in names:
        for b in names:
            assert burn.can_cast(burn.as_dtype(a), burn.as_dtype(b)) == np.can_cast(a, b, "safe"), (a, b)
    assert burn.can_cast(burn.ones(1, dtype=burn.int8), burn.float32)
    assert burn.can_cast(burn.bfloat16, burn.float32) and not burn.can_cast(burn.float16, burn.bfloat16)


def test_finfo_iinfo_on_dtypes_and_tensors():
    for d in (burn.float16, burn.float32, burn.float64, burn.bfloat16, burn.complex64, burn.complex128):
        for arg in (d, burn.ones(1, dtype=d)):
            f = burn.finfo(arg)
            real = {burn.complex64: burn.float32, burn.complex128: burn.float64}.get(d, d)
            assert f.dtype is real
            for v in (f.eps, f.max, f.min, f.smallest_normal):
                assert type(v) is float
            if d is not burn.bfloat16:
                nf = np.finfo(np.dtype(real))
                assert (f.bits, f.eps, f.max, f.smallest_normal) == (nf.bits, nf.eps, nf.max, nf.smallest_normal)
    for d in (burn.uint8, burn.int8, burn.int32, burn.int64):
        i = burn.iinfo(burn.zeros(1, dtype=d))
        ni = np.iinfo(d.name)
        assert (i.bits, i.min, i.max, i.dtype) == (ni.bits, ni.min, ni.max, d) and type(i.max) is int
    with pytest.raises(burn.DTypeError, match="finfo"):
        burn.finfo(burn.int32)
    with pytest.raises(burn.DTypeError, match="iinfo"):
        burn.iinfo(burn.float32)


def test_isdtype_kinds():
    assert burn.isdtype(burn.int8, "signed integer") and not burn.isdtype(burn.uint8, "signed integer")
    assert burn.isdtype(burn.uint8, "integral") and burn.isdtype(burn.complex64, "numeric")
    assert not burn.isdtype(burn.bool, "numeric") and burn.isdtype(burn.bool, ("bool", burn.int8))
    with pytest.raises(ValueError, match="unknown kind"):
        burn.isdtype(burn.int8, "integer")
    with pytest.raises(TypeError):
        burn.isdtype("int8", "integral")


def test_namespace_info(device):
    info = burn.__array_namespace_info__()
    caps = info.capabilities()
    assert caps == {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}
    assert info.default_device() == burn.ones(1).device
    assert device in info.devices()
    dd = info.default_dtypes(device=device)
    assert dd["real floating"] is burn.float32 and dd["integral"] is burn.int64 and dd["indexing"] is burn.int64
    all_ = info.dtypes(device=device)
    assert set(all_) >= {"bool", "int8", "int32", "int64", "uint8", "float32"}
    assert all(burn.isdtype(d, "real floating") for d in info.dtypes(device=device, kind="real floating").values())
    assert info.dtypes(device=device, kind=("bool", "unsigned integer")) == {
        "bool": burn.bool, "uint8": burn.uint8, "uint16": burn.uint16, "uint32": burn.uint32, "uint64": burn.uint64}


# -- Python scalar conversions --------------------------------------------------------

def test_scalar_conversions_0d_only(device):
    assert complex(burn.tensor(1.5 + 2j, dtype=burn.complex64, device=device)) == 1.5 + 2j
    assert complex(burn.tensor(2, device=device)) == 2 + 0j
    assert float(burn.tensor(2.5, device=device)) == 2.5 and int(burn.tensor(-3, device=device)) == -3
    assert bool(burn.tensor(True, device=device)) is True
    assert [10, 20, 30][burn.tensor(1, device=device)] == 20
    one = burn.ones(1, device=device)
    for conv in (float, int, complex, bool):
        with pytest.raises(TypeError, match="0-d"):
            conv(one)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(burn.ones(2, device=device))
    with pytest.raises(TypeError, match="complex"):
        float(burn.tensor(1j, device=device))
    with pytest.raises(TypeError, match="index"):
        [1, 2][burn.tensor(1.0, device=device)]


# -- bit shifts -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_shifts_match_numpy(device, dtype):
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=64, dtype=dtype, endpoint=True)
    bits = info.bits
    s = rng.integers(0, bits + 3, size=64).astype(dtype if dtype != "int8" else "int8")
    ta, ts = burn.tensor(a, device=device), burn.tensor(s, device=device)
    same(burn.bitwise_left_shift(ta, ts), np.left_shift(a, s))
    same(burn.bitwise_right_shift(ta, ts), np.right_shift(a, s))
    same(ta << 3, a << np.array(3, dtype=dtype))
    same(ta >> 1, a >> np.array(1, dtype=dtype))
    t = burn.tensor(a, device=device)
    t <<= 1
    same(t, a << np.array(1, dtype=dtype))
    t = burn.tensor(a, device=device)
    t >>= 2
    same(t, a >> np.array(2, dtype=dtype))


def test_shift_negative_counts_follow_numpy(device):
    a = np.array([5, -5, 7], dtype=np.int64)
    s = np.array([-1, -1, -70], dtype=np.int64)
    ta, ts = burn.tensor(a, device=device), burn.tensor(s, device=device)
    same(burn.bitwise_left_shift(ta, ts), np.left_shift(a, s))
    same(burn.bitwise_right_shift(ta, ts), np.right_shift(a, s))
    same(2 << burn.tensor([1, 2], device=device), np.array([4, 8]))


def test_shift_rejects_floats():
    with pytest.raises(burn.DTypeError, match="bitwise_left_shift"):
        burn.bitwise_left_shift(burn.ones(2), 1)


def test_inplace_operators(device):
    x = burn.tensor([7, 9], device=device)
    x //= 2
    x %= 3
    same(x, np.array([0, 1]))
    x **= 2
    same(x, np.array([0, 1]))
    b = burn.tensor([True, False], device=device)
    b &= burn.tensor([True, True], device=device)
    b |= burn.tensor([False, True], device=device)
    b ^= burn.tensor([True, True], device=device)
    same(b, np.array([False, False]))
    same(True ^ burn.tensor([True, False], device=device), np.array([False, True]))
    m = burn.eye(2, device=device)
    m @= burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    same(m, np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32))


# -- shapes and grids -----------------------------------------------------------------

def test_broadcast_shapes():
    for shapes in [((2, 1), (3,)), ((), (4, 1, 2)), ((1,), (0, 1)), ((5, 1, 3), (1, 4, 1), (4, 3))]:
        assert burn.broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)
    with pytest.raises(burn.ShapeError, match="broadcast_shapes"):
        burn.broadcast_shapes((2,), (3,))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid(device, indexing):
    arrs = [np.arange(2.0, dtype=np.float32), np.arange(3.0, dtype=np.float32) + 10,
            np.arange(4.0, dtype=np.float32) - 5]
    for n in (1, 2, 3):
        out = burn.meshgrid(*[burn.tensor(a, device=device) for a in arrs[:n]], indexing=indexing)
        for t, e in zip(out, np.meshgrid(*arrs[:n], indexing=indexing)):
            same(t, e)
    with pytest.raises(ValueError, match="indexing"):
        burn.meshgrid(burn.ones(2), indexing="yx")
    with pytest.raises(burn.ShapeError, match="1-D"):
        burn.meshgrid(burn.ones((2, 2)))


def test_moveaxis_tuples(device):
    a = np.arange(120.0).reshape(2, 3, 4, 5)
    t = burn.tensor(a, device=device)
    for s, d in [(0, -1), ((0, 1), (2, 0)), ((0, 3), (3, 0)), ((-1, 0), (0, -1)), ((1, 2, 3), (0, 1, 2))]:
        same(burn.moveaxis(t, s, d), np.moveaxis(a, s, d))
    with pytest.raises(burn.ShapeError, match="as many axes"):
        burn.moveaxis(t, (0, 1), (1,))
    with pytest.raises(burn.ShapeError, match="repeated"):
        burn.moveaxis(t, (0, 0), (1, 2))


def test_repeat_with_counts(device):
    a = np.array([[1, 2, 3], [4, 5, 6]])
    t = burn.tensor(a, device=device)
    same(burn.repeat(t, burn.tensor([2, 0], device=device), axis=0), np.repeat(a, [2, 0], axis=0))
    same(burn.repeat(t, [1, 0, 3], axis=1), np.repeat(a, [1, 0, 3], axis=1))
    same(burn.repeat(t, [2], axis=1), np.repeat(a, [2], axis=1))
    same(burn.repeat(t, np.array([1, 2, 0, 1, 1, 1])), np.repeat(a, [1, 2, 0, 1, 1, 1]))
    with pytest.raises(burn.ShapeError, match="repeat"):
        burn.repeat(t, [1, 2, 3], axis=0)
    with pytest.raises(ValueError, match="non-negative"):
        burn.repeat(t, [1, -1], axis=0)


def test_repeat_counts_gradient():
    assert gradcheck(lambda x: burn.repeat(x, burn.tensor([2, 0, 1]), axis=1), np.random.rand(2, 3))


# -- diff and cumulative ops ------------------------------------------------------------

def test_diff(device):
    a = np.array([[1, 4, 9, 16], [2, 3, 5, 7]])
    t = burn.tensor(a, device=device)
    for kw in [{}, {"n": 2}, {"n": 0}, {"axis": 0}, {"n": 5}]:
        same(burn.diff(t, **kw), np.diff(a, **kw))
    pre, app = np.array([[0], [1]]), np.array([[3], [3]])
    same(burn.diff(t, prepend=burn.tensor(pre, device=device), append=burn.tensor(app, device=device)),
         np.diff(a, prepend=pre, append=app))
    same(burn.diff(t, axis=0, prepend=0), np.diff(a, axis=0, prepend=0))
    b = np.array([True, True, False, True])
    same(burn.diff(burn.tensor(b, device=device)), np.diff(b))
    with pytest.raises(burn.ShapeError, match="diff"):
        burn.diff(burn.tensor(1.0))


def test_diff_gradient():
    assert gradcheck(lambda x: burn.diff(x, n=2, axis=0), np.random.rand(5, 3))
    assert gradcheck(lambda x, p: burn.diff(x, prepend=p), np.random.rand(2, 4), np.random.rand(2, 1))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative(device, name):
    fn, ref = getattr(burn, name), getattr(np, name)
    a = np.array([[1.0, 2.0, -3.0], [0.5, 4.0, 2.0]], dtype=np.float32)
    t = burn.tensor(a, device=device)
    for kw in [{"axis": 0}, {"axis": 1}, {"axis": -1, "include_initial": True}, {"axis": 0, "include_initial": True}]:
        np.testing.assert_allclose(fn(t, **kw).numpy(), ref(a, **kw), rtol=1e-6)
        assert fn(t, **kw).shape == ref(a, **kw).shape and fn(t, **kw).dtype is burn.float32
    one = np.array([3, 100, 2], dtype=np.int8)
    same(fn(burn.tensor(one, device=device)), ref(one).astype(np.int64))
    same(fn(burn.tensor(one, device=device), dtype=burn.int8), ref(one, dtype=np.int8))
    same(fn(burn.tensor(one, device=device), dtype=burn.float64, include_initial=True),
         ref(one, dtype=np.float64, include_initial=True))
    with pytest.raises(burn.ShapeError, match="axis is required"):
        fn(t)
    with pytest.raises(burn.ShapeError, match="at least one dimension"):
        fn(burn.tensor(1.0))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_gradient(name):
    fn = getattr(burn, name)
    assert gradcheck(lambda x: fn(x, axis=1, include_initial=True), np.random.rand(2, 4) + 0.5)
    assert gradcheck(lambda x: fn(x, axis=0, dtype=burn.float64), np.random.rand(3, 2) + 0.5)


@pytest.mark.parametrize("name", ["sum", "prod"])
def test_sum_prod_dtype(device, name):
    fn, ref = getattr(burn, name), getattr(np, name)
    a = np.array([[100, 3], [7, 120]], dtype=np.uint8)
    t = burn.tensor(a, device=device)
    for kw in [{"dtype": burn.uint8}, {"dtype": burn.float64, "axis": 0},
               {"dtype": burn.int8, "axis": 1, "keepdims": True}, {"dtype": burn.int32, "axis": (0, 1)}]:
        npkw = dict(kw, dtype=np.dtype(kw["dtype"]))
        same(fn(t, **kw), ref(a, **npkw))
    same(getattr(t, name)(dtype=burn.int64), ref(a, dtype=np.int64))
    assert gradcheck(lambda x: fn(x, axis=1, dtype=burn.float64), np.random.rand(2, 3) + 0.5)


def test_isin(device):
    a = np.array([[1, 5, 3], [4, 2, 2]])
    b = np.array([[2, 9], [1, 8]])
    same(burn.isin(burn.tensor(a, device=device), burn.tensor(b, device=device)), np.isin(a, b))
    same(burn.isin(burn.tensor(a, device=device), burn.tensor(b, device=device), invert=True),
         np.isin(a, b, invert=True))
    same(burn.isin(burn.tensor(a, device=device), burn.zeros((0,), dtype=burn.int64, device=device)),
         np.isin(a, np.zeros(0, dtype=np.int64)))


def test_isin_chunks(monkeypatch):
    import burn.ops.arrayapi as X
    monkeypatch.setattr(X, "_ISIN_CHUNK", 4)      # chunks of 1 test value: the OR of the chunks counts
    a, b = np.arange(10), np.array([3, 7, 11, 0])
    same(burn.isin(burn.tensor(a), burn.tensor(b)), np.isin(a, b))


# -- indexing, devices, DLPack ---------------------------------------------------------

def test_zero_dim_bool_mask(device):
    a = np.arange(12).reshape(3, 4)
    t = burn.tensor(a, device=device)
    for key in [True, False, (slice(None), False), (Ellipsis, True), (1, True), (None, False, slice(1, 3))]:
        bkey = tuple(burn.tensor(k, device=device) if isinstance(k, bool) else k for k in
                     (key if isinstance(key, tuple) else (key,)))
        same(t[bkey], a[key])
        same(t[key], a[key])
    same(burn.tensor(5.0, device=device)[burn.tensor(False, device=device)], np.float32(5.0)[np.False_])
    with pytest.raises(burn.BurnError, match="0-d boolean"):
        t[burn.tensor(True, device=device), burn.tensor([0, 1], device=device)]


def test_to_device_stream_and_astype_device(device):
    x = burn.ones(2)
    assert x.to_device(device, stream=None).device == device
    with pytest.raises(ValueError, match="stream"):
        x.to_device(device, stream=1)
    y = burn.astype(x, burn.int32, device=device)
    assert y.device == device and y.dtype is burn.int32
    assert x.astype(burn.float64, device=device).device == device


def test_from_dlpack_copy(device):
    a = np.arange(4.0)
    c = burn.from_dlpack(a, device=device, copy=True)
    a[0] = 9.0
    same(c, np.arange(4.0))
    if device.kind == "flex":
        s = burn.from_dlpack(a, device=device, copy=False)     # shared, checked at each read
        assert s.numpy()[0] == 9.0
        a[1] = 8.0                                              # an owner's write is found, not read
        with pytest.raises(burn.SharedMemoryWritten):
            s.numpy()
    else:
        with pytest.raises(BufferError, match="copy=False"):
            burn.from_dlpack(a, device=device, copy=False)
    t = burn.arange(3, device=device)
    same(burn.from_dlpack(t), np.arange(3))
    np.testing.assert_array_equal(np.from_dlpack(t), np.arange(3))


def test_floor_divide_special_cases(device):
    inf = np.inf
    a = np.array([inf, inf, -inf, -inf, 5.0, 5.0, -5.0, -5.0, 0.0, 7.0, -7.0, 7.5, -7.5])
    b = np.array([2.0, -2.0, 2.0, -2.0, inf, -inf, inf, -inf, -inf, 0.0, 2.0, -2.0, 2.0])
    # the Array API's special cases: inf // finite is a signed inf, finite // inf a signed zero
    expected = np.array([inf, -inf, -inf, inf, 0.0, -0.0, -0.0, 0.0, -0.0, inf, -4.0, -4.0, -4.0])
    for dtype in (burn.float32, burn.float64):
        out = burn.floor_divide(burn.tensor(a, dtype=dtype, device=device), burn.tensor(b, dtype=dtype, device=device))
        assert out.dtype is dtype
        np.testing.assert_array_equal(out.numpy(), expected)
        np.testing.assert_array_equal(np.signbit(out.numpy()), np.signbit(expected))
    same(burn.tensor([7, -7], device=device) // 2, np.array([3, -4]))
    np.testing.assert_array_equal((burn.tensor(a, device=device) // 2.0).numpy()[:4], [inf, inf, -inf, -inf])


def test_zero_dim_bool_mask_setitem(device):
    for key in [True, False, (slice(None), True), (1, True), (Ellipsis, False)]:
        a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
        t = burn.tensor(a, device=device)
        bkey = tuple(burn.tensor(k, device=device) if isinstance(k, bool) else k for k in
                     (key if isinstance(key, tuple) else (key,)))
        a[key] = 7
        t[bkey] = 7.0
        same(t, a)
    t = burn.tensor(np.zeros((2, 3), dtype=np.float32), device=device)
    t[burn.tensor(True, device=device)] = burn.tensor([[1.0, 2.0, 3.0]], device=device)
    same(t, np.array([[1, 2, 3], [1, 2, 3]], dtype=np.float32))


def test_zero_dim_false_mask_setitem_takes_an_empty_value(device):
    # x[False] selects a length-0 axis: numpy accepts a value of that (empty) shape and writes
    # nothing; scipy.stats.pearsonr does ``out[cond] = f(x[cond])`` on 0-d arrays this way
    a = np.array(2.0)
    t = burn.tensor(a, device=device)
    f = burn.tensor(False, device=device)
    a[np.False_] = a[np.False_] + 5
    t[f] = t[f] + 5.0
    same(t, a)
    t2 = burn.tensor(np.zeros((2, 3), dtype=np.float32), device=device)
    t2[f] = burn.ones((0, 2, 3), device=device)
    same(t2, np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(burn.ShapeError, match=r"broadcast_to.*\(0, 2, 3\)"):
        t2[f] = burn.ones((4,), device=device)


def test_tuple_axes(device):
    a = np.arange(24.0, dtype=np.float32).reshape(2, 1, 3, 1, 4)
    t = burn.tensor(a, device=device)
    same(burn.squeeze(t, axis=(1, 3)), np.squeeze(a, axis=(1, 3)))
    same(burn.flip(t, axis=(0, 2)), np.flip(a, axis=(0, 2)))
    for shift, axis in [((1, 2), (0, 4)), (1, (0, 4)), ((1, -1), 2)]:
        same(burn.roll(t, shift, axis=axis), np.roll(a, shift, axis=axis))
    with pytest.raises(burn.ShapeError, match="roll"):
        burn.roll(t, (1, 2), axis=(0, 1, 2))
    for name in ("sum", "prod", "max", "min", "mean", "any", "all"):
        r = getattr(burn, name)(t, axis=(0, 2), keepdims=True)
        e = getattr(np, name)(a, axis=(0, 2), keepdims=True)
        np.testing.assert_allclose(r.numpy(), e, rtol=1e-6)
        assert r.shape == e.shape
