"""DataLoader(num_workers=, collate_fn=): worker processes load whole batches by index and give
torch.utils.data.DataLoader's batches for the same dataset and sampler order; prefetch_factor,
persistent_workers, worker_init_fn; a worker's error names the batch and its traceback; stopping
early or a dead worker never hangs (each test runs under an alarm)."""
import os
import signal

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import burn
from burn.data import DataLoader, default_collate
from data_samples import Pair, Samples, add_one_collate, mark_worker   # torch-free: workers import it


class TorchView(tud.Dataset):
    def __init__(self, ds):
        self.ds = ds

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        return self.ds[i]


@pytest.fixture(autouse=True)
def alarm():
    """No test here may hang: SIGALRM fails it after 120 s."""
    def fail(*_):
        raise TimeoutError("the DataLoader test hung")
    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _same(burn_batch, torch_batch):
    if isinstance(torch_batch, dict):
        assert burn_batch.keys() == torch_batch.keys()
        for k in torch_batch:
            _same(burn_batch[k], torch_batch[k])
    elif isinstance(torch_batch, (tuple, list)) and not isinstance(torch_batch[0], str):
        assert len(burn_batch) == len(torch_batch)
        for b, t in zip(burn_batch, torch_batch):
            _same(b, t)
    elif isinstance(torch_batch, list):
        assert burn_batch == torch_batch                    # strings stay a list
    else:
        got = burn_batch.numpy()
        assert str(got.dtype) == str(torch_batch.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(got, torch_batch.numpy())


@pytest.mark.parametrize("kind", ["tuple", "dict", "namedtuple"])
def test_worker_batches_equal_torch_dataloader_batches(kind):
    ds = Samples(kind=kind)
    dl = DataLoader(ds, 5, shuffle=True, seed=3, num_workers=2, prefetch_factor=1)
    order = dl.indices(epoch=0)
    want = list(tud.DataLoader(TorchView(ds), batch_size=5, sampler=order.tolist()))
    got = list(dl)
    assert len(got) == len(want) == 5
    for b, t in zip(got, want):
        _same(b, t)
        if kind == "namedtuple":
            assert isinstance(b, Pair)


def test_default_collate_has_torch_s_meaning():
    ds = Samples(kind="dict")
    samples = [ds[i] for i in range(4)]
    _same_host = default_collate(samples)
    want = tud.default_collate(samples)
    for k in ("x", "label", "weight"):
        np.testing.assert_array_equal(_same_host[k], want[k].numpy())
        assert str(_same_host[k].dtype) == str(want[k].dtype).removeprefix("torch.")
    assert _same_host["name"] == want["name"]
    nested = [(np.float32(i), [True, i]) for i in range(3)]
    got, w = default_collate(nested), tud.default_collate(nested)
    np.testing.assert_array_equal(got[0], w[0].numpy())
    assert got[0].dtype == np.float32 and got[1][0].dtype == np.bool_ and got[1][1].dtype == np.int64
    with pytest.raises(burn.BurnError, match="same number of fields"):
        default_collate([(1, 2), (1,)])


def test_array_dataset_get_batch_and_collate_fn_through_workers():
    X, y = np.arange(40.0).reshape(20, 2), np.arange(20)
    ds = burn.data.ArrayDataset(X, y)
    serial = [(a.tolist(), b.tolist()) for a, b in DataLoader(ds, 6, shuffle=True, seed=1)]
    workers = [(a.tolist(), b.tolist()) for a, b in DataLoader(ds, 6, shuffle=True, seed=1, num_workers=3)]
    assert workers == serial
    dl = DataLoader(Samples(), 4, collate_fn=add_one_collate, num_workers=2, device=burn.Device.flex())
    (x, label), *_ = list(dl)
    np.testing.assert_allclose(x.numpy(), Samples().x[:4] + 1)
    with pytest.raises(TypeError, match="both collate= and collate_fn="):
        DataLoader(ds, 2, collate=add_one_collate, collate_fn=add_one_collate)


def test_persistent_workers_keep_their_processes_and_worker_init_fn_runs_first():
    ds = Samples(n=12, kind="pid")
    dl = DataLoader(ds, 3, num_workers=2, persistent_workers=True, worker_init_fn=mark_worker)
    try:
        pids = []
        for _ in range(2):
            epoch = list(dl)
            ids = [int(b[2].numpy()[0]) for b in epoch]
            assert ids == [0, 1, 0, 1]                      # round-robin: batch k from worker k % 2
            assert [int(b[3].numpy()[0]) for b in epoch] == [100, 101, 100, 101]
            pids.append(sorted({int(p) for b in epoch for p in b[1].numpy()}))
        assert pids[0] == pids[1] and len(pids[0]) == 2 and os.getpid() not in pids[0]
    finally:
        dl.close()
    fresh = DataLoader(ds, 3, num_workers=2)
    assert sorted({int(p) for b in fresh for p in b[1].numpy()}) != pids[0]


def test_a_worker_error_names_the_batch_and_the_worker_traceback():
    dl = DataLoader(Samples(fail_at=7), 3, num_workers=2)
    got = []
    with pytest.raises(burn.BurnError, match=r"worker 0 raised while loading batch 2 \(samples \[6, 7, 8\]\)") as e:
        for b in dl:
            got.append(b)
    assert len(got) == 2
    assert "ValueError: sample 7 is corrupt" in str(e.value) and "__getitem__" in str(e.value)


def test_a_dead_worker_and_an_early_break_do_not_hang():
    with pytest.raises(burn.BurnError, match="exited unexpectedly with code 3"):
        list(DataLoader(Samples(exit_at=4), 2, num_workers=2))
    dl = DataLoader(Samples(n=40, kind="pid"), 2, num_workers=2, prefetch_factor=4)
    it = iter(dl)
    first = next(it)
    pids = {int(p) for p in first[1].numpy()}
    it.close()                                               # what ``break`` does
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)                                  # joined: gone, not a zombie


def test_worker_arguments_are_checked_at_the_call():
    ds = Samples()
    for kw, what in [(dict(num_workers=-1), "num_workers"), (dict(prefetch_factor=2), "prefetch_factor"),
                     (dict(persistent_workers=True), "persistent_workers"),
                     (dict(num_workers=1, worker_init_fn=3), "worker_init_fn"),
                     (dict(num_workers=1, multiprocessing_context="fork"), "fork")]:
        with pytest.raises(burn.BurnError, match=what):
            DataLoader(ds, 2, **kw)
    with pytest.raises(burn.BurnError, match="pickling"):
        list(DataLoader(ds, 2, num_workers=1, collate_fn=lambda s: default_collate(s)))
    assert torch.utils.data.get_worker_info() is None and burn.data.get_worker_info() is None
