"""burn.train: metrics against numpy, the progress display (plain and on a terminal), checkpoints,
bit-exact resume in a new process, early stopping, corrupt checkpoints and the curves' PNG."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import burn
import burn.nn.functional as F
from burn.train import Accuracy, EarlyStopping, Learner, MeanMetric, ProgressDisplay, TopKAccuracy

AD = burn.Device.flex().autodiff()


def _data(n=96, d=6, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    w = rng.standard_normal((d, classes)).astype(np.float32)
    return x, (x @ w).argmax(1).astype(np.int64)


def _loader(x, y, bs=16, shuffle=True, seed=0, **kw):
    return burn.data.DataLoader(burn.data.ArrayDataset(x, y), batch_size=bs, shuffle=shuffle, seed=seed,
                                device=AD, **kw)


def _mlp(seed=0, d=6, classes=3):
    burn.Device.flex().seed(seed)
    return burn.nn.Sequential(burn.nn.Linear(d, 16, device=AD), burn.nn.ReLU(),
                              burn.nn.Linear(16, classes, device=AD))


def _learner(model, **kw):
    kw.setdefault("progress", False)
    return Learner(model, burn.optim.Adam(model, lr=0.02), F.cross_entropy, **kw)


# -- metrics ------------------------------------------------------------------------------------

def _np_topk(logits, y, k):
    order = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    return float(np.mean([y[i] in order[i] for i in range(len(y))]))


def test_accuracy_and_topk_over_uneven_batches_match_numpy():
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((53, 7)).astype(np.float32)
    y = rng.integers(0, 7, 53)
    metrics = [Accuracy(), TopKAccuracy(1), TopKAccuracy(3), TopKAccuracy(7)]
    for m in metrics:
        m.reset()
    for lo, hi in ((0, 20), (20, 21), (21, 53)):        # uneven batch sizes: per-sample weighting
        for m in metrics:
            m.update(burn.tensor(logits[lo:hi]), burn.tensor(y[lo:hi]))
    assert metrics[0].compute() == pytest.approx(np.mean(logits.argmax(1) == y), abs=1e-12)
    assert metrics[1].compute() == pytest.approx(_np_topk(logits, y, 1), abs=1e-12)
    assert metrics[2].compute() == pytest.approx(_np_topk(logits, y, 3), abs=1e-12)
    assert metrics[3].compute() == 1.0
    assert 0 < metrics[1].compute() < metrics[2].compute() < 1
    # one-hot targets give the same result; reset starts over
    acc = Accuracy()
    acc.update(burn.tensor(logits), burn.tensor(np.eye(7, dtype=np.float32)[y]))
    assert acc.compute() == metrics[0].compute()
    acc.reset()
    assert np.isnan(acc.compute())


def test_mean_metric_and_loss_weight_samples_and_metric_errors():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(10).astype(np.float32), rng.standard_normal(10).astype(np.float32)
    mae = MeanMetric(lambda o, t: abs(o - t), name="mae")
    for lo, hi in ((0, 3), (3, 10)):
        mae.update(burn.tensor(a[lo:hi]), burn.tensor(b[lo:hi]))
    assert mae.compute() == pytest.approx(np.abs(a - b).mean(), rel=1e-6)
    with pytest.raises(burn.BurnError, match="unknown metric 'f1'"):
        burn.train.get_metric("f1")
    with pytest.raises(burn.BurnError, match="lacks update, compute"):
        burn.train.get_metric(object())
    with pytest.raises(burn.BurnError, match="targets must be class indices"):
        Accuracy().update(burn.zeros((4, 3)), burn.zeros((5,), dtype=burn.int64))


def test_evaluate_matches_numpy_cross_entropy_and_accuracy():
    x, y = _data(70)
    model = _mlp()
    res = _learner(model, metrics=["accuracy", "top2"]).evaluate(_loader(x, y, bs=32, shuffle=False))
    logits = model(burn.tensor(x, device=AD)).numpy().astype(np.float64)
    lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
    assert res["loss"] == pytest.approx(np.mean(lse - logits[np.arange(70), y]), rel=1e-5)
    assert res["accuracy"] == pytest.approx(np.mean(logits.argmax(1) == y), abs=1e-12)
    assert res["top2_accuracy"] == pytest.approx(_np_topk(logits, y, 2), abs=1e-12)


def test_an_epoch_reads_metrics_from_the_device_only_at_its_end(monkeypatch):
    x, y = _data(128)
    reads = []
    real_item = burn.Tensor.item
    monkeypatch.setattr(burn.Tensor, "item", lambda self: reads.append(1) or real_item(self))
    learner = _learner(_mlp(), metrics=["accuracy", "top2"])
    learner.fit(_loader(x, y, bs=8), epochs=2)            # 16 steps per epoch
    assert learner.global_step == 32
    assert len(reads) == 2 * 3                            # loss, accuracy, top2 once per epoch


# -- progress display ------------------------------------------------------------------------------

def test_plain_progress_lines_when_stdout_is_not_a_terminal(capsys):
    x, y = _data(64)
    learner = _learner(_mlp(), metrics=["accuracy"], progress=ProgressDisplay("auto", log_every_steps=2))
    learner.fit(_loader(x, y, bs=16), epochs=3, valid_loader=_loader(x, y, bs=32, shuffle=False))
    lines = capsys.readouterr().out.splitlines()
    summaries = [ln for ln in lines if "train loss" in ln]
    assert [ln.split()[1] for ln in summaries] == ["1/3", "2/3", "3/3"]
    h = learner.history
    assert f"train loss {h['train_loss'][2]:.4f} accuracy {h['train_accuracy'][2]:.4f}" in summaries[2]
    assert f"| valid loss {h['valid_loss'][2]:.4f} accuracy {h['valid_accuracy'][2]:.4f}" in summaries[2]
    assert "samples/s" in summaries[0] and " s" in summaries[0]
    periodic = [ln for ln in lines if " step " in ln]
    assert len(periodic) == 3 * 2                          # steps 2 and 4 of each 4-step epoch
    assert periodic[0].startswith("epoch 1/3 step 2/4  loss ") and "samples/s" in periodic[0]
    assert "eta 0:00:" in periodic[0]
    assert "\x1b[" not in "".join(lines)                  # no terminal control codes


def test_progress_false_prints_nothing(capsys):
    x, y = _data(32)
    _learner(_mlp(), progress=False).fit(_loader(x, y), epochs=1)
    assert capsys.readouterr().out == ""


_TTY_SCRIPT = """
import numpy as np, burn, burn.nn.functional as F
dev = burn.Device.flex().autodiff()
rng = np.random.default_rng(0)
x = rng.standard_normal((256, 4)).astype(np.float32); y = (x[:, 0] > 0).astype(np.int64)
dl = burn.data.DataLoader(burn.data.ArrayDataset(x, y), 8, shuffle=True, seed=0, device=dev)
m = burn.nn.Linear(4, 2, device=dev)
burn.train.Learner(m, burn.optim.SGD(m, lr=0.1), F.cross_entropy, metrics=["accuracy"],
                   progress=burn.train.ProgressDisplay(refresh_s=0.0)).fit(dl, epochs=2)
"""


def test_rich_progress_bar_on_a_terminal(tmp_path):
    # `script` gives the child a pseudo-terminal, so the display picks the live rich bar
    if subprocess.call(["which", "script"], stdout=subprocess.DEVNULL) != 0:
        pytest.skip("util-linux `script` is not installed")
    pytest.importorskip("rich")
    prog = tmp_path / "tty_fit.py"
    prog.write_text(_TTY_SCRIPT)
    r = subprocess.run(["script", "-qec", f"{sys.executable} {prog}", "/dev/null"], capture_output=True,
                       text=True, env=dict(os.environ, COLUMNS="160", TERM="xterm"), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "\x1b[" in out and "━" in out                  # a redrawn bar, not plain lines
    assert "epoch 1/2  train loss" in out and "epoch 2/2  train loss" in out
    assert "samples/s" in out and "step " in out and "eta" in out and "64/64" in out


# -- checkpoints and resume -----------------------------------------------------------------------------

def test_checkpoint_contents_and_keep_last(tmp_path):
    x, y = _data(64)
    model = _mlp()
    opt = burn.optim.SGD(model, lr=0.05, momentum=0.9)
    sched = burn.optim.StepLR(opt, step_size=3, gamma=0.5)
    learner = Learner(model, opt, F.cross_entropy, scheduler=sched, metrics=["accuracy"], progress=False,
                      checkpoint_dir=tmp_path, keep_last=2)
    learner.fit(_loader(x, y), epochs=5)
    assert sorted(os.listdir(tmp_path)) == ["epoch-0004", "epoch-0005"]   # no temporary leftovers
    last = tmp_path / "epoch-0005"
    assert sorted(os.listdir(last)) == ["learner.json", "model.safetensors", "optimizer.safetensors"]
    meta = json.loads((last / "learner.json").read_text())
    assert meta["epoch"] == 5 and meta["global_step"] == 20 == sched.last_step
    assert [r["epoch"] for r in meta["history"]] == [1, 2, 3, 4, 5]
    assert meta["history"][4]["train_loss"] == learner.history["train_loss"][4]
    g = burn.graph.graph_for(AD)
    assert meta["rng"]["devices"]["flex:0"] == {"seed": g.rng_seed, "counter": g.rng_counter}
    assert meta["rng"]["loaders"]["train"] == {"seed": 0, "epoch": 5}
    assert set(meta["files"]) == {"model.safetensors", "optimizer.safetensors"}
    # the model file stands alone; the optimizer file holds its state and the scheduler's position
    fresh = _mlp(seed=5)
    fresh.load_state(last / "model.safetensors")
    for (n, a), (_, b) in zip(model.named_parameters(), fresh.named_parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=n)
    opt2 = burn.optim.SGD(fresh, lr=0.05, momentum=0.9)
    sched2 = burn.optim.StepLR(opt2, step_size=3, gamma=0.5)
    burn.optim.load(opt2, last / "optimizer.safetensors", scheduler=sched2)
    assert sched2.last_step == 20 and opt2.lr == opt.lr and opt2.steps == 20
    # keep_last=None keeps all
    learner2 = _learner(_mlp(), checkpoint_dir=tmp_path / "all", keep_last=None)
    learner2.fit(_loader(x, y), epochs=4)
    assert len(burn.train.list_checkpoints(tmp_path / "all")) == 4


_RESUME_SCRIPT = """
import sys, numpy as np, burn, burn.nn.functional as F
mode, ckdir, out, loader_seed, dev_seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
every = int(sys.argv[6]) if len(sys.argv) > 6 and int(sys.argv[6]) else None   # mid-epoch checkpoint period
crash_at = int(sys.argv[7]) if len(sys.argv) > 7 else None  # "crash": die at this global step
prefetch = int(sys.argv[8]) if len(sys.argv) > 8 else 0
base = burn.Device.flex(); dev = base.autodiff()
np.random.seed(dev_seed)                     # the global numpy stream the collate draws noise from
base.seed(dev_seed)                          # init and dropout draw from the device stream
rng = np.random.default_rng(0)
x = rng.standard_normal((120, 8)).astype(np.float32)
y = (x[:, :3].sum(1) > 0).astype(np.int64) + (x[:, 3] > 1).astype(np.int64)

def noisy(samples):                          # augmentation with numpy's global generator
    xs = np.stack([s[0] for s in samples]); ys = np.stack([s[1] for s in samples])
    return xs + np.random.normal(0, 0.1, xs.shape).astype(np.float32), ys

train = burn.data.DataLoader(burn.data.ArrayDataset(x, y), 16, shuffle=True, seed=loader_seed, device=dev,
                             collate=noisy, prefetch=prefetch)
valid = burn.data.DataLoader(burn.data.ArrayDataset(x[:40], y[:40]), 20, device=dev)
model = burn.nn.Sequential(burn.nn.Linear(8, 32, device=dev), burn.nn.ReLU(), burn.nn.Dropout(0.3),
                           burn.nn.Linear(32, 3, device=dev))
opt = burn.optim.AdamW(model, lr=0.01, weight_decay=0.05, grad_clip=burn.optim.GradClip.norm(1.0))
sched = burn.optim.SequentialLR(opt, [burn.optim.LinearWarmup(opt, warmup_steps=5, start_factor=0.1),
                                      burn.optim.CosineAnnealingLR(opt, T_max=40)], milestones=[5])
def loss_fn(out, target):
    if model.training and learner.global_step + 1 == crash_at:    # a training step, not validation
        import os
        os._exit(3)                          # no cleanup, as a killed process
    return F.cross_entropy(out, target)

learner = burn.train.Learner(model, opt, loss_fn, scheduler=sched, metrics=["accuracy"],
                             checkpoint_dir=ckdir, keep_last=1, progress=False, checkpoint_every=every,
                             early_stopping=burn.train.EarlyStopping("valid_loss", patience=50))
epochs = {"straight": 4, "first": 2, "resume": 4, "crash": 4}[mode]
h = learner.fit(train, epochs, valid_loader=valid, resume=(mode == "resume"))
np.savez(out, **{n: p.numpy() for n, p in model.named_parameters()},
         __loss=np.array(h["train_loss"]), __vloss=np.array(h["valid_loss"]), __steps=learner.global_step)
"""


def _run(script, *args, rc=0):
    r = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == rc, r.stdout + r.stderr


def test_resume_in_a_new_process_is_bit_identical_to_an_uninterrupted_run(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(_RESUME_SCRIPT)
    _run(script, "straight", tmp_path / "a", tmp_path / "straight.npz", 7, 0)
    _run(script, "first", tmp_path / "b", tmp_path / "first.npz", 7, 0)
    # the resumed process seeds everything differently: the checkpoint must restore each stream
    _run(script, "resume", tmp_path / "b", tmp_path / "resumed.npz", 12345, 99)
    straight, first, resumed = (np.load(tmp_path / f"{n}.npz") for n in ("straight", "first", "resumed"))
    params = [k for k in straight.files if not k.startswith("__")]
    assert len(params) == 4
    for k in params:
        np.testing.assert_array_equal(straight[k], resumed[k], err_msg=k)
        assert not np.array_equal(straight[k], first[k]), k      # the last two epochs did change them
    np.testing.assert_array_equal(straight["__loss"], resumed["__loss"])
    np.testing.assert_array_equal(straight["__vloss"], resumed["__vloss"])
    assert int(resumed["__steps"]) == int(straight["__steps"]) == 4 * 8
    assert [os.path.basename(p) for p in burn.train.list_checkpoints(tmp_path / "b")] == ["epoch-0004"]


def test_resume_from_a_corrupt_or_foreign_checkpoint_is_a_clear_error(tmp_path):
    x, y = _data(32)
    _learner(_mlp(), checkpoint_dir=tmp_path, keep_last=None).fit(_loader(x, y), epochs=2)
    fresh = lambda **kw: _learner(_mlp(seed=3), checkpoint_dir=tmp_path, **kw)   # noqa: E731
    assert fresh().resume().epoch == 2
    # a flipped byte in the model's data
    p = tmp_path / "epoch-0002" / "model.safetensors"
    raw = bytearray(p.read_bytes())
    raw[-3] ^= 0xFF
    p.write_bytes(bytes(raw))
    with pytest.raises(burn.BurnError, match=r"epoch-0002.*model.safetensors is corrupted"):
        fresh().resume()
    # an explicit earlier checkpoint still loads
    assert fresh().resume(tmp_path / "epoch-0001").epoch == 1
    (tmp_path / "epoch-0001" / "learner.json").write_text('{"format": "burn.tr')
    with pytest.raises(burn.BurnError, match="learner.json is unreadable or corrupted"):
        fresh().resume(tmp_path / "epoch-0001")
    with pytest.raises(burn.BurnError, match="no checkpoint in"):
        fresh().resume(tmp_path / "nothing")
    # a checkpoint of another architecture names the mismatch
    other = tmp_path / "other"
    _learner(_mlp(), checkpoint_dir=other).fit(_loader(x, y), epochs=1)
    wide = burn.nn.Sequential(burn.nn.Linear(6, 8, device=AD), burn.nn.ReLU(), burn.nn.Linear(8, 3, device=AD))
    mismatch = r"(?s)Learner.resume from .*shape of layers.0.weight: file \(6, 16\), model \(6, 8\)"
    with pytest.raises(burn.BurnError, match=mismatch):
        _learner(wide).resume(other)
    with pytest.raises(burn.BurnError, match="metrics"):
        _learner(_mlp(), metrics=["accuracy"]).resume(other)


def test_a_failed_checkpoint_write_leaves_no_partial_checkpoint(tmp_path, monkeypatch):
    x, y = _data(32)
    learner = _learner(_mlp(), checkpoint_dir=tmp_path, keep_last=None)
    learner.fit(_loader(x, y), epochs=2)
    before = (tmp_path / "epoch-0002" / "model.safetensors").read_bytes()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(burn.optim, "save", crash)      # fails after the model file was written
    with pytest.raises(OSError, match="disk full"):
        learner.fit(_loader(x, y), epochs=3)
    assert sorted(os.listdir(tmp_path)) == ["epoch-0001", "epoch-0002"]
    assert (tmp_path / "epoch-0002" / "model.safetensors").read_bytes() == before
    monkeypatch.undo()
    assert _learner(_mlp(seed=2), checkpoint_dir=tmp_path).resume().epoch == 2


def test_fit_resume_without_checkpoints_starts_from_scratch(tmp_path):
    x, y = _data(32)
    learner = _learner(_mlp(), checkpoint_dir=tmp_path)
    learner.fit(_loader(x, y), epochs=2, resume=True)
    assert learner.epoch == 2 and len(learner.history) == 2
    again = _learner(_mlp(seed=4), checkpoint_dir=tmp_path)
    again.fit(_loader(x, y), epochs=2, resume=True)      # already done: nothing to train
    assert again.global_step == learner.global_step and again.history.to_list() == learner.history.to_list()


# -- early stopping ---------------------------------------------------------------------------------------

class _Scripted(burn.train.Metric):
    """Reports a fixed value per epoch, whatever the model does."""

    name = "score"
    higher_is_better = True

    def __init__(self, values, start=0):
        self.values, self.calls = list(values), start - 1

    def reset(self):
        self.calls += 1

    def update(self, outputs, targets):
        pass

    def compute(self):
        return self.values[self.calls]


@pytest.mark.parametrize("values,patience,min_delta,stop_epoch,best_epoch", [
    ([0.5, 0.6, 0.6, 0.59, 0.7, 0.8], 2, 0.0, 4, 2),       # equal is no improvement
    ([0.5, 0.6, 0.605, 0.61, 0.7, 0.8], 2, 0.01, 4, 2),    # improvements below min_delta do not count
    ([0.5, 0.4, 0.6, 0.3, 0.2, 0.1], 3, 0.0, 6, 3),        # the counter restarts at a new best
    ([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], 1, 0.0, None, 6),     # always improving: runs to the end
])
def test_early_stopping_stops_at_the_right_epoch(values, patience, min_delta, stop_epoch, best_epoch):
    x, y = _data(32)
    es = EarlyStopping("train_score", patience=patience, min_delta=min_delta)   # mode auto -> max
    learner = _learner(_mlp(), metrics=[_Scripted(values)], early_stopping=es)
    h = learner.fit(_loader(x, y), epochs=6)
    assert es.mode == "max"
    assert len(h) == (stop_epoch or 6) and h.stopped_early == (stop_epoch is not None)
    assert h["train_score"] == values[:len(h)] and es.best_epoch == best_epoch


def test_early_stopping_state_survives_a_resume(tmp_path):
    x, y = _data(32)
    values = [0.5, 0.6, 0.6, 0.59, 0.7, 0.8]      # patience 2: stops after epoch 4
    first = _learner(_mlp(), metrics=[_Scripted(values)], checkpoint_dir=tmp_path,
                     early_stopping=EarlyStopping("train_score", patience=2))
    assert len(first.fit(_loader(x, y), epochs=3)) == 3
    es = EarlyStopping("train_score", patience=2)
    again = _learner(_mlp(seed=1), metrics=[_Scripted(values, start=3)], checkpoint_dir=tmp_path, early_stopping=es)
    h = again.fit(_loader(x, y), epochs=6, resume=True)
    assert h["epoch"] == [1, 2, 3, 4] and h.stopped_early and (es.best, es.best_epoch, es.wait) == (0.6, 2, 2)
    _learner(_mlp(), metrics=[_Scripted(values)], checkpoint_dir=tmp_path / "x").fit(_loader(x, y), 1)
    with pytest.raises(burn.BurnError, match="without early stopping"):
        _learner(_mlp(), metrics=[_Scripted(values)], early_stopping=EarlyStopping("train_score")).resume(
            tmp_path / "x")


def test_early_stopping_min_mode_and_missing_key():
    es = EarlyStopping("valid_loss", patience=2)
    es.resolve_mode(False)
    assert [es.update(v) for v in [1.0, 0.8, float("nan"), 0.9, 0.7]] == [False, False, False, True, False]
    x, y = _data(32)
    learner = _learner(_mlp(), early_stopping=EarlyStopping("valid_loss"))
    with pytest.raises(burn.BurnError, match="valid_\\* keys need a valid_loader"):
        learner.fit(_loader(x, y), epochs=1)


def test_learner_argument_errors():
    m = _mlp()
    with pytest.raises(burn.BurnError, match="loss_fn must return a scalar"):
        Learner(m, burn.optim.SGD(m), lambda o, t: o, progress=False).fit(_loader(*_data(32)), 1)
    with pytest.raises(burn.BurnError, match="keep_last must be"):
        _learner(m, keep_last=0)
    with pytest.raises(burn.BurnError, match="two metrics are named"):
        _learner(m, metrics=["accuracy", Accuracy()])


# -- curves -------------------------------------------------------------------------------------------------

def test_history_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    x, y = _data(32)
    h = _learner(_mlp(), metrics=["accuracy"]).fit(_loader(x, y), 3, valid_loader=_loader(x, y))
    path = h.plot(tmp_path / "curves.png", title="mlp")
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    import matplotlib.image
    img = matplotlib.image.imread(path)
    assert img.shape[1] > img.shape[0]                     # two panels side by side: loss, accuracy


def test_history_plot_without_matplotlib_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(burn.BurnError, match="pip install matplotlib"):
        burn.train.History([{"epoch": 1, "train_loss": 1.0}]).plot("x.png")


@pytest.mark.parametrize("prefetch", [0, 3])
def test_mid_epoch_checkpoints_resume_bit_identically_after_a_crash(tmp_path, prefetch):
    # the collate draws augmentation noise from numpy's global generator; with prefetch the
    # loader's thread has drawn ahead of the batch trained when the checkpoint is written
    script = tmp_path / "fit.py"
    script.write_text(_RESUME_SCRIPT)
    _run(script, "straight", tmp_path / "a", tmp_path / "straight.npz", 7, 0, 0, 0, prefetch)
    # 8 batches per epoch, a checkpoint every 3: the process dies in batch 6 of epoch 3 (step 22),
    # after the checkpoint written at batch 3 of that epoch
    _run(script, "crash", tmp_path / "b", tmp_path / "unused.npz", 7, 0, 3, 22, prefetch, rc=3)
    assert [os.path.basename(p) for p in burn.train.list_checkpoints(tmp_path / "b")] == ["epoch-0002-step-000003"]
    _run(script, "resume", tmp_path / "b", tmp_path / "resumed.npz", 12345, 99, 3, 0, prefetch)
    straight, resumed = np.load(tmp_path / "straight.npz"), np.load(tmp_path / "resumed.npz")
    for k in (k for k in straight.files if not k.startswith("__")):
        np.testing.assert_array_equal(straight[k], resumed[k], err_msg=k)
    # the interrupted epoch's loss covers all of its batches: the saved partial sums were restored
    np.testing.assert_array_equal(straight["__loss"], resumed["__loss"])
    np.testing.assert_array_equal(straight["__vloss"], resumed["__vloss"])
    assert int(resumed["__steps"]) == 4 * 8


def test_checkpoint_names_order_mid_epoch_checkpoints_after_their_epoch(tmp_path):
    for n in ("epoch-0002", "epoch-0001-step-000010", "epoch-0001", "epoch-0002-step-000002", "epoch-0001-step-2"):
        os.mkdir(tmp_path / n)
    assert [os.path.basename(p) for p in burn.train.list_checkpoints(tmp_path)] == [
        "epoch-0001", "epoch-0001-step-2", "epoch-0001-step-000010", "epoch-0002", "epoch-0002-step-000002"]
    with pytest.raises(burn.BurnError, match="checkpoint_every needs a checkpoint_dir"):
        _learner(_mlp(), checkpoint_every=5)
    with pytest.raises(burn.BurnError, match="checkpoint_every must be an int >= 1"):
        _learner(_mlp(), checkpoint_dir=tmp_path, checkpoint_every=0)
