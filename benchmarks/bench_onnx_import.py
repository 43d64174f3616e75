"""burn.onnx.load: imported models on flex against onnxruntime (and PyTorch eager), same run.

    .venv/bin/python benchmarks/bench_onnx_import.py               # default threads, then one thread
    .venv/bin/python benchmarks/bench_onnx_import.py --rounds 30 --threads 1 --only cnn
    .venv/bin/python benchmarks/bench_onnx_import.py --only cnn --batch 1

Workloads (issue 14's target: the imported model within 1.3x of onnxruntime's time):

- ``cnn``: the digits CNN of ``burn.examples.digits`` (conv 1->16, pool, conv 16->32, pool,
  128->64->10) built in torch, exported with ``torch.onnx.export``, forward at batch 64 [64, 1, 8, 8];
- ``encoder``: ``nn.TransformerEncoder`` of 2 layers (d_model 64, 4 heads, ff 256, seq 16),
  forward at batch 64.

``burn (py steps)`` is the same imported model with flex's native replay programs off
(``BURN_FLEX_NATIVE_REPLAY=0`` while its replay is prepared: every step through Python, as before
burn_flex.native_replay); ``--batch`` sets the batch size (the models are exported with a dynamic
batch axis).

Each round runs every contender once in turn (burn, onnxruntime, torch, burn, ...); the table gives
medians and the median of the per-round ratios burn/onnxruntime. One thread means
``burn.set_num_threads(1)`` + threadpoolctl + ``torch.set_num_threads(1)`` for burn and torch, and
``intra_op_num_threads=1`` for onnxruntime.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import ThreadModes, interleaved_times, medians, paired_ratio  # noqa: E402


def _cnn(torch):
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)).eval()


def _encoder(torch):
    layer = torch.nn.TransformerEncoderLayer(64, 4, 256, dropout=0.0, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    with torch.no_grad():
        for p in enc.parameters():           # distinct layers (the copies would share weights)
            p.copy_(torch.randn(p.shape) * 0.1)
    return enc


WORKLOADS = {"cnn": (_cnn, (64, 1, 8, 8)), "encoder": (_encoder, (64, 16, 64))}


def _export(torch, model, shape, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(*shape),), path, dynamo=False, opset_version=18,
                          input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "b"}, "y": {0: "b"}})


def _python_steps(burn, path, bx):
    """The model at ``path`` loaded again, its replay prepared with native programs off."""
    m = burn.onnx.load(path, device=burn.Device.flex())
    old = os.environ.get("BURN_FLEX_NATIVE_REPLAY")
    os.environ["BURN_FLEX_NATIVE_REPLAY"] = "0"
    try:
        for _ in range(2):               # the plan, then the replay that decides
            m(bx).numpy()
    finally:
        if old is None:
            del os.environ["BURN_FLEX_NATIVE_REPLAY"]
        else:
            os.environ["BURN_FLEX_NATIVE_REPLAY"] = old
    return m


def run(names, rounds, thread_modes, batch=None):
    import burn
    import onnxruntime as ort
    import torch
    modes = ThreadModes(burn, torch)
    print(f"# {modes.describe()}; onnxruntime {ort.__version__}, torch {torch.__version__}")
    d = tempfile.mkdtemp()
    rows = []
    for name in names:
        make, shape = WORKLOADS[name]
        torch.manual_seed(0)
        model = make(torch)
        path = os.path.join(d, f"{name}.onnx")
        _export(torch, model, shape, path)
        m = burn.onnx.load(path, device=burn.Device.flex())
        if batch is not None:
            shape = (batch,) + tuple(shape[1:])
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        bx, tx = burn.tensor(x), torch.from_numpy(x)
        m_py = _python_steps(burn, path, bx)
        want = model(tx).detach().numpy()
        err = np.abs(m(bx).numpy() - want).max() / np.abs(want).max()
        for mode in thread_modes:
            modes.set(mode)
            so = ort.SessionOptions()
            if mode == "one":
                so.intra_op_num_threads = 1
                so.inter_op_num_threads = 1
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

            def burn_fwd():
                m(bx).numpy()

            def burn_py_fwd():
                m_py(bx).numpy()

            def ort_fwd():
                sess.run(None, {"x": x})

            def torch_fwd():
                with torch.no_grad():
                    model(tx)
            times = interleaved_times({"burn": burn_fwd, "burn (py steps)": burn_py_fwd, "onnxruntime": ort_fwd,
                                       "torch": torch_fwd}, rounds, warmup=3)
            med = medians(times)
            rows.append((name, mode, med, paired_ratio(times, "burn", "onnxruntime"),
                         paired_ratio(times, "burn (py steps)", "onnxruntime"), paired_ratio(times, "burn", "torch"),
                         err))
    print(f"# batch {'as exported' if batch is None else batch}; py steps: native replay programs off")
    print(f"{'workload':9} {'threads':8} {'burn ms':>9} {'py steps':>9} {'ort ms':>9} {'torch ms':>9} "
          f"{'burn/ort':>9} {'py/ort':>7} {'burn/torch':>10}  max rel err")
    for name, mode, med, r_ort, r_py, r_torch, err in rows:
        print(f"{name:9} {mode:8} {med['burn'] * 1e3:9.3f} {med['burn (py steps)'] * 1e3:9.3f} "
              f"{med['onnxruntime'] * 1e3:9.3f} {med['torch'] * 1e3:9.3f} {r_ort:9.2f} {r_py:7.2f} "
              f"{r_torch:10.2f}  {err:.1e}")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--threads", choices=["default", "1", "both"], default="both")
    ap.add_argument("--batch", type=int, default=None, help="batch size (default: 64, as exported)")
    a = ap.parse_args(argv)
    modes = {"default": ["default"], "1": ["one"], "both": ["default", "one"]}[a.threads]
    run([n for n in a.only.split(",") if n], a.rounds, modes, a.batch)


if __name__ == "__main__":
    main()
