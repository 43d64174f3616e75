"""burn.onnx.export: export time, and onnxruntime's inference against burn flex's (and torch's).

    .venv/bin/python benchmarks/bench_onnx_export.py [--rounds 15] [--threads default,1] [--json out.json]

Workloads: the digits CNN (``burn.examples.digits.DigitsCNN``, batch 64 of 8x8 images) and a
2-layer transformer encoder (d_model 64, 4 heads, feed-forward 128, batch 64, sequence 32).
Export: median seconds of ``burn.onnx.export`` (trace, map, write, onnx.checker with
full_check) per model, with a dynamic batch axis (so three traces). Inference: one forward
pass at batch 64 by onnxruntime (CPU provider) on the exported file, by burn on flex (the
result read to numpy), and by torch CPU with a model of the same architecture (same sizes,
its own weights), interleaved rounds, medians and the per-round ratios burn/onnxruntime and
torch/onnxruntime, at the default thread settings and pinned to one thread (common.ThreadModes:
BLAS, torch and burn; onnxruntime's ``intra_op_num_threads=1``).
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from common import ThreadModes, interleaved_times, medians, paired_ratio, write_results


def _models(burn, torch):
    dev = burn.Device.flex()
    dev.seed(0)
    from burn.examples.digits import DigitsCNN
    cnn = DigitsCNN(dev)
    cnn.eval()
    enc = burn.nn.TransformerEncoder(burn.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, device=dev), 2)
    enc.eval()
    tn = torch.nn
    tcnn = tn.Sequential(tn.Conv2d(1, 16, 3, padding=1), tn.ReLU(), tn.MaxPool2d(2), tn.Conv2d(16, 32, 3, padding=1),
                         tn.ReLU(), tn.MaxPool2d(2), tn.Flatten(), tn.Linear(128, 64), tn.ReLU(), tn.Linear(64, 10)).eval()
    tenc = tn.TransformerEncoder(tn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True), 2,
                                 enable_nested_tensor=False).eval()
    rng = np.random.default_rng(0)
    x_cnn = rng.standard_normal((64, 1, 8, 8)).astype(np.float32)
    x_enc = rng.standard_normal((64, 32, 64)).astype(np.float32)
    return {"digits_cnn": (cnn, tcnn, x_cnn), "encoder": (enc, tenc, x_enc)}


def _export_times(burn, models, tmp, reps=3):
    out = {}
    for name, (m, _, x) in models.items():
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            burn.onnx.export(m, (burn.tensor(x[:4]),), os.path.join(tmp, f"{name}.onnx"), input_names=["x"],
                             dynamic_axes={"x": {0: "batch"}})
            ts.append(time.perf_counter() - t0)
        out[name] = statistics.median(ts)
        print(f"  export {name}: {out[name] * 1e3:.0f} ms (median of {reps})")
    return out


def _inference(burn, torch, ort, models, tmp, rounds, threads):
    res = {}
    for name, (m, tm, x) in models.items():
        opts = ort.SessionOptions()
        if threads == 1:
            opts.intra_op_num_threads = 1
            opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(os.path.join(tmp, f"{name}.onnx"), opts, providers=["CPUExecutionProvider"])
        xb, xt = burn.tensor(x), torch.from_numpy(x)
        want = m(xb).numpy()
        got = sess.run(None, {"x": x})[0]
        assert np.max(np.abs(want - got)) <= 1e-4 * max(1.0, np.max(np.abs(want))), "burn and onnxruntime differ"

        def run_burn():
            with burn.no_grad():
                m(xb).numpy()

        def run_torch():
            with torch.no_grad():
                tm(xt)
        times = interleaved_times({"onnxruntime": lambda: sess.run(None, {"x": x}), "burn": run_burn,
                                   "torch": run_torch}, rounds, warmup=2)
        med = medians(times)
        res[name] = {**{k: v * 1e3 for k, v in med.items()}, "burn/onnxruntime": paired_ratio(times, "burn", "onnxruntime"),
                     "torch/onnxruntime": paired_ratio(times, "torch", "onnxruntime")}
        r = res[name]
        print(f"  {name}: onnxruntime {r['onnxruntime']:.2f} ms, burn {r['burn']:.2f} ms, torch {r['torch']:.2f} ms;"
              f" burn/onnxruntime {r['burn/onnxruntime']:.2f}x, torch/onnxruntime {r['torch/onnxruntime']:.2f}x")
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", default="default,1", help="comma-separated settings: default and/or 1")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    import onnxruntime as ort
    import torch
    import burn
    print("load average at start:", os.getloadavg())
    models = _models(burn, torch)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["export_s"] = _export_times(burn, models, tmp)
        modes = ThreadModes(burn, torch)
        for setting in args.threads.split(","):
            print(f"-- threads: {setting}")
            default = setting == "default"
            modes.set("default" if default else "one")
            results["default" if default else "pinned"] = _inference(burn, torch, ort, models, tmp, args.rounds,
                                                                     None if default else 1)
        modes.set("default")
    return write_results(results, args.json)


if __name__ == "__main__":
    main()
