"""Import a PyTorch-exported model and LoRA-fine-tune it with burn.

    python -m burn_onnx.examples.onnx_finetune [--rank 8] [--steps 60] [--seed 0] [--out DIR]

A digits CNN (the architecture of ``burn.examples.digits``) is trained in PyTorch on the
digits 0-4 only and exported with ``torch.onnx.export``. ``burn.onnx.load`` turns the file
into a ``burn.nn.Module`` on an autodiff device; ``burn.nn.apply_lora`` freezes it and adds
adapters to its Linear layers (the ONNX Gemm weights); a few Adam steps on 5-9 teach it the
new classes while every imported weight stays frozen. Prints the accuracy on 5-9 before and
after and the trainable fraction. Needs torch (the dev environment has it).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

import numpy as np

import burn
import burn.nn.functional as F


def _data(seed):
    """The digits (burn-core ships them) as [1797, 1, 8, 8] float32 images and labels, shuffled."""
    from burn.examples.digits import load_digits_arrays
    images, labels = load_digits_arrays()
    x = (images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = labels.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    return x[order], y[order]


def pretrain_and_export(x, y, path, seed, epochs=4):
    """Train the torch CNN on ``x, y`` and export it to ``path`` (dynamic batch); returns its accuracy."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        sys.exit("this example needs PyTorch to make the ONNX model: pip install torch")
    torch.manual_seed(seed)
    torch.set_num_threads(1)          # a tiny model: threads only add overhead
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(epochs):
        for i in range(0, len(tx), 64):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(tx[i:i + 64]), ty[i:i + 64]).backward()
            opt.step()
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (tx[:2],), path, dynamo=False, opset_version=18, input_names=["x"],
                          output_names=["logits"], dynamic_axes={"x": {0: "b"}, "logits": {0: "b"}})
    with torch.no_grad():
        return float((model(tx).argmax(1) == ty).float().mean())


def _accuracy(model, x, y, dev):
    with burn.no_grad():
        return float((model(burn.tensor(x, device=dev)).numpy().argmax(1) == y).mean())


def main(argv=None) -> dict:
    """Run the example; returns the accuracies and losses it printed.

    Example:
        >>> from burn_onnx.examples import onnx_finetune
        >>> assert callable(onnx_finetune.main)
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="where to write model.onnx (default: a temporary folder)")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    x, y = _data(a.seed)
    old, new = y < 5, y >= 5
    path = os.path.join(a.out or tempfile.mkdtemp(), "model.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    acc_torch = pretrain_and_export(x[old], y[old], path, a.seed)
    print(f"torch: trained on 0-4 (accuracy {acc_torch:.3f}), exported to {path}")

    dev = burn.Device.flex().autodiff()
    model = burn.onnx.load(path, device=dev)
    xn, yn = x[new], y[new]
    n_test = len(xn) // 4
    xt, yt, xf, yf = xn[:n_test], yn[:n_test], xn[n_test:], yn[n_test:]
    before = _accuracy(model, xt, yt, dev)
    model = burn.nn.apply_lora(model, rank=a.rank, alpha=2 * a.rank)
    print(f"burn: imported {len(list(model.named_parameters()))} tensors; {burn.nn.lora_summary(model)}")
    opt = burn.optim.Adam([p for p in model.parameters() if not p.frozen], lr=1e-2)
    rng = np.random.default_rng(a.seed)
    losses = []
    for _ in range(a.steps):
        idx = rng.integers(0, len(xf), 64)
        loss = F.cross_entropy(model(burn.tensor(xf[idx], device=dev)), burn.tensor(yf[idx], device=dev))
        opt.step(loss.backward())
        losses.append(loss.item())
    after = _accuracy(model, xt, yt, dev)
    print(f"accuracy on 5-9: {before:.3f} before, {after:.3f} after {a.steps} LoRA steps "
          f"(loss {losses[0]:.3f} -> {losses[-1]:.3f}); {time.perf_counter() - t0:.1f} s")
    return {"before": before, "after": after, "first_loss": losses[0], "last_loss": losses[-1]}


if __name__ == "__main__":
    main()
