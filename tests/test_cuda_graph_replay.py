"""burn-cuda's replay hook (burn_cuda.replay: CUDA graphs through CuPy stream capture).

Without a GPU the capture itself cannot run: on the numpy stand-in for CuPy
(tests/fakecupy.py) the CUDA calls are replaced by a stand-in capture whose "graph" runs the
captured body again on the same static buffers and writes its results into the captured
arrays (what a CUDA graph launch does), so what is tested here is the runner's wiring: the
warm-up, the private pool, copying sources in and results out, the fallbacks and their
reasons, and that a captured training step trains exactly like eager. The real capture runs
in plugins/burn-cuda/scripts/gpu_check.sh (`cuda_graph` step) on a GPU."""
from __future__ import annotations

import pytest

pytest.importorskip("burn_cuda")

from fakecupy import real_gpu, run_probe  # noqa: E402

PROBE = r'''
import json, numpy as np, burn, cupy
import burn.nn.functional as F
import burn_cuda.replay as replay

class Rerun:
    """A CUDA graph stand-in: launch runs the captured body again, results into the captured arrays."""
    captures = launches = 0
    fail = None
    def capture(self, dc, body):
        if self.fail:
            raise RuntimeError(self.fail)
        Rerun.captures += 1
        outs = body()
        return (body, outs), outs
    def launch(self, dc, graph):
        Rerun.launches += 1
        body, outs = graph
        for o, n in zip(outs, body()):
            o[...] = n

replay.CAPTURE = Rerun()
nn = burn.nn

def train(captured, dropout=0.0):
    dev = burn.Device.cuda(0).autodiff()
    dev.seed(0)
    m = nn.Sequential(nn.Linear(8, 16, device=dev), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 3, device=dev))
    opt = burn.optim.RMSprop(m, lr=1e-2)       # (the stand-in runs no fused optimizer kernel)
    def step(x, y):
        loss = F.cross_entropy(m(x), y)
        opt.step(loss.backward())
        return loss
    fn = burn.capture(step) if captured else step
    rng = np.random.default_rng(0)
    losses = [fn(burn.tensor(rng.random((4, 8), dtype=np.float32), device=dev),
                 burn.tensor(rng.integers(0, 3, 4), device=dev)).item() for _ in range(8)]
    how = None
    if captured:
        g = [v for v in fn._graphs.values() if isinstance(v, burn.Graph)][0]
        how = g._prepared["cuda"].describe(0)
    return losses, [p.numpy().tolist() for p in m.parameters()], how

res = {}
e, c = train(False), train(True)
res["train_equal"] = e[0] == c[0] and e[1] == c[1]
res["train_how"] = c[2]
res["captures"], res["launches"] = Rerun.captures, Rerun.launches
res["dropout_how"] = train(True, dropout=0.5)[2]
cu = burn.Device.cuda(0)
h = burn.capture.trace(lambda x: x * 3 + 1, burn.ones((2,), device=cu))
rs = [h(burn.tensor([float(i), 1.0], device=cu)) for i in range(6)]    # capture on replay 3
res["results_kept"] = [r.tolist() for r in rs] == [[3.0 * i + 1, 4.0] for i in range(6)]
res["kept_how"] = h._prepared["cuda"].describe(0)
Rerun.fail = "cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing"
g = burn.capture.trace(lambda x: (x * 2).exp().sum(), burn.ones((3,), device=burn.Device.cuda(0)))
vals = [g(burn.tensor([0.0, 1.0, float(i)], device=burn.Device.cuda(0))).item() for i in range(5)]
res["fail_values_ok"] = all(abs(v - (1 + np.exp(2) + np.exp(2 * i))) < 1e-3 * v for i, v in enumerate(vals))
res["fail_how"] = g._prepared["cuda"].describe(0)
print(json.dumps(res))
'''


def test_cuda_graph_runner_wiring_on_the_stand_in(tmp_path):
    res = run_probe(tmp_path, PROBE)
    assert res["train_equal"], res
    assert res["train_how"].startswith("CUDA graph ("), res
    # one capture after the warm-up (call 1 made the optimizer state: an ordinary call; trace on 2;
    # replays 3, 4 warm up; replay 5 captures and launches; 6..8 launch)
    assert res["captures"] == 1 and res["launches"] == 4, res
    assert "declined: 1 random op(s)" in res["dropout_how"], res
    # each replay's result is a copy: the next launch does not overwrite an earlier result
    assert res["results_kept"] and res["kept_how"].startswith("CUDA graph"), res
    assert res["fail_values_ok"] and "the capture failed: RuntimeError: cudaErrorStreamCaptureUnsupported" in \
        res["fail_how"], res


def test_real_gpu_cuda_graph_replay():
    why = real_gpu()
    if why != "ok":
        pytest.skip(f"needs a CUDA GPU with CuPy ({why or 'no GPU here'}); "
                    f"plugins/burn-cuda/scripts/gpu_check.sh runs this case (step cuda_graph)")
    import numpy as np
    import burn
    dev = burn.Device.cuda(0)
    w = burn.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), device=dev)
    g = burn.capture.trace(lambda x: burn.softmax(x @ w, axis=-1) * 2.0, burn.ones((2, 3), device=dev))
    for i in range(6):
        x = np.full((2, 3), i / 5, np.float32)
        np.testing.assert_array_equal(g(burn.tensor(x, device=dev)).numpy(),
                                      (burn.softmax(burn.tensor(x, device=dev) @ w, axis=-1) * 2.0).numpy())
    assert g._prepared["cuda"].describe(0).startswith("CUDA graph")
