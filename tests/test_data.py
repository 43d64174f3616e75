"""burn.data: datasets and the DataLoader, checked against plain numpy indexing."""
import threading
import time

import numpy as np
import pytest

import burn

FLEX = burn.Device.flex()
AD = FLEX.autodiff()


def _data(n=23):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 3)).astype(np.float32), rng.integers(0, 5, n)


def _batches(loader):
    return [tuple(t.numpy() for t in b) for b in loader]


class _PerSample:
    """A dataset with only __len__/__getitem__ (no get_batch): the default_collate path."""

    def __init__(self, X, y, fail_at=None):
        self.X, self.y, self.fail_at, self.calls = X, y, fail_at, 0

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        self.calls += 1
        if i == self.fail_at:
            raise KeyError(f"sample {i} is corrupt")
        return self.X[i], self.y[i]


def test_array_dataset_indexes_like_numpy_and_checks_lengths():
    X, y = _data()
    ds = burn.data.ArrayDataset(X, y)
    assert len(ds) == 23 and isinstance(ds, burn.data.Dataset)
    assert np.array_equal(ds[4][0], X[4]) and ds[-1][1] == y[-1]
    idx = np.array([5, 0, 22, 5])
    xb, yb = ds.get_batch(idx)
    assert np.array_equal(xb, X[idx]) and np.array_equal(yb, y[idx])
    with pytest.raises(burn.ShapeError, match=r"same first axis.*\(23, 3\), \(22,\)"):
        burn.data.ArrayDataset(X, y[:-1])
    with pytest.raises(burn.BurnError, match="at least one array"):
        burn.data.ArrayDataset()
    tds = burn.data.TensorDataset(burn.tensor(X), burn.tensor(y))
    assert np.array_equal(tds.get_batch([1, 2])[0], X[[1, 2]])


@pytest.mark.parametrize("bs,drop_last", [(5, False), (5, True), (23, False), (30, False), (30, True), (1, False)])
def test_sequential_batches_match_numpy_slices(bs, drop_last):
    X, y = _data()
    dl = burn.data.DataLoader(burn.data.ArrayDataset(X, y), bs, drop_last=drop_last)
    stop = len(X) - len(X) % bs if drop_last else len(X)
    expected = [(X[i:i + bs], y[i:i + bs]) for i in range(0, stop, bs)]
    got = _batches(dl)
    assert len(dl) == len(expected) == len(got)
    for (gx, gy), (ex, ey) in zip(got, expected):
        assert np.array_equal(gx, ex) and np.array_equal(gy, ey)


def test_seeded_shuffle_is_a_permutation_reproducible_per_epoch_and_different_across_epochs():
    X, y = _data()
    ds = burn.data.ArrayDataset(X, y)
    a = burn.data.DataLoader(ds, 4, shuffle=True, seed=7)
    b = burn.data.DataLoader(ds, 4, shuffle=True, seed=7)
    epochs_a = [_batches(a) for _ in range(3)]
    epochs_b = [_batches(b) for _ in range(3)]
    orders = []
    for e, (ea, eb) in enumerate(zip(epochs_a, epochs_b)):
        ys = np.concatenate([bx[1] for bx in ea])
        xs = np.concatenate([bx[0] for bx in ea])
        order = a.indices(epoch=e)
        assert sorted(order.tolist()) == list(range(len(X)))
        assert np.array_equal(xs, X[order]) and np.array_equal(ys, y[order])   # numpy reference
        assert all(np.array_equal(p, q) for ba, bb in zip(ea, eb) for p, q in zip(ba, bb))
        orders.append(order.tolist())
    assert orders[0] != orders[1] and orders[1] != orders[2]
    # a loader resumed at epoch 2 replays exactly epoch 2
    c = burn.data.DataLoader(ds, 4, shuffle=True, seed=7)
    c.set_epoch(2)
    assert np.array_equal(np.concatenate([bx[0] for bx in _batches(c)]), X[orders[2]])
    # another seed, another order
    assert burn.data.DataLoader(ds, 4, shuffle=True, seed=8).indices(0).tolist() != orders[0]


def test_batches_land_on_the_device_keep_dtypes_and_do_not_alias_the_data():
    X, y = _data(8)
    X64 = X.astype(np.float64)
    dl = burn.data.DataLoader(burn.data.ArrayDataset(X64, y), 8, device=AD)
    xb, yb = next(iter(dl))
    assert xb.device == AD and yb.device == AD
    assert xb.dtype is burn.float64 and yb.dtype is burn.int64
    # a collate that returns views of the data must not let later writes leak into the batch
    view_dl = burn.data.DataLoader(_PerSample(X, y), 8, collate=lambda s: (X[:len(s)], y[:len(s)]))
    (vx, vy), = list(view_dl)
    expected = X.copy()
    X[0, 0] = 1000.0
    assert np.array_equal(vx.numpy(), expected)


def test_generic_dataset_custom_collate_and_dict_samples():
    X, y = _data(10)
    got = _batches(burn.data.DataLoader(_PerSample(X, y), 4, shuffle=True, seed=1))
    order = burn.data.DataLoader(_PerSample(X, y), 4, shuffle=True, seed=1).indices(0)
    assert np.array_equal(np.concatenate([g[0] for g in got]), X[order])
    # collate: samples -> anything tuple-like; here (sum of features, label + 1)
    dl = burn.data.DataLoader(burn.data.ArrayDataset(X, y), 3,
                              collate=lambda s: (np.array([a.sum() for a, _ in s]), np.array([b + 1 for _, b in s])))
    sums = np.concatenate([b[0] for b in _batches(dl)])
    np.testing.assert_allclose(sums, X.sum(axis=1), rtol=1e-6)

    class Dicts:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": X[i], "label": y[i]}

    batches = list(burn.data.DataLoader(Dicts(), 2))
    assert set(batches[0]) == {"x", "label"} and np.array_equal(batches[-1]["label"].numpy(), y[4:5])


def test_bad_arguments_are_burn_errors():
    ds = burn.data.ArrayDataset(np.zeros(3))
    for kwargs, msg in [(dict(batch_size=0), "batch_size"), (dict(batch_size=2.0), "batch_size"),
                        (dict(batch_size=2, prefetch=-1), "prefetch"), (dict(batch_size=2, collate=3), "collate")]:
        with pytest.raises(burn.BurnError, match=msg):
            burn.data.DataLoader(ds, **kwargs)
    with pytest.raises(burn.BurnError, match="__len__ and __getitem__"):
        burn.data.DataLoader(iter([1, 2]), 2)


# -- prefetch -------------------------------------------------------------------------------

def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "burn-data-prefetch"]


def _wait_no_prefetch_threads(timeout=5.0):
    end = time.monotonic() + timeout
    while _prefetch_threads() and time.monotonic() < end:
        time.sleep(0.01)
    return not _prefetch_threads()


@pytest.mark.parametrize("prefetch", [1, 3])
def test_prefetch_gives_the_same_batches(prefetch):
    X, y = _data()
    ds = burn.data.ArrayDataset(X, y)
    plain = burn.data.DataLoader(ds, 5, shuffle=True, seed=3)
    ahead = burn.data.DataLoader(ds, 5, shuffle=True, seed=3, prefetch=prefetch)
    for _ in range(2):
        for p, q in zip(_batches(plain), _batches(ahead), strict=True):
            assert np.array_equal(p[0], q[0]) and np.array_equal(p[1], q[1])
    assert _wait_no_prefetch_threads()


def test_prefetch_reraises_worker_errors_in_the_consumer():
    X, y = _data(12)
    dl = burn.data.DataLoader(_PerSample(X, y, fail_at=9), 4, prefetch=2)
    seen = []
    with pytest.raises(KeyError, match="sample 9 is corrupt"):
        for xb, _ in dl:
            seen.append(xb.numpy())
    assert len(seen) == 2 and np.array_equal(np.concatenate(seen), X[:8])
    assert _wait_no_prefetch_threads()


def test_prefetch_queue_is_bounded_and_early_stop_ends_the_worker():
    X, y = _data(200)
    ds = _PerSample(X, y)
    dl = burn.data.DataLoader(ds, 2, prefetch=2)
    it = iter(dl)
    next(it)
    time.sleep(0.2)   # let the worker run ahead as far as the queue allows
    # 1 consumed + 2 queued + 1 held by a blocked put, 2 samples each
    assert ds.calls <= 2 * (1 + 2 + 1)
    assert len(_prefetch_threads()) == 1
    it.close()
    assert _wait_no_prefetch_threads()
    for xb, _ in dl:    # a plain break
        break
    del xb
    assert _wait_no_prefetch_threads()
    assert ds.calls < 40
