"""Train a small CNN on scikit-learn's bundled digits on the default device.

    python -m burn.examples.digits [--device flex] [--epochs 15] [--seed 0] [--out runs/digits]

A CNN (``burn.nn`` conv blocks, a head through the fused ``linear_relu``
extension) trained with cross-entropy and ``burn.optim.Adam`` on an autodiff device;
shows a live progress bar (rich; plain lines when not a terminal), and prints
the test accuracy and where the model was saved (safetensors).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import burn
import burn.nn.functional as F


def load_digits_split(seed: int):
    """Digits (1797 8x8 images) scaled to [0, 1], split 80/20 with a fixed seed."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:  # pragma: no cover - declared in the examples extra
        sys.exit("this example needs scikit-learn: pip install 'burn-core[examples]'")
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = len(x) // 5
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


class DigitsCNN(burn.nn.Module):
    """Two 3x3 conv blocks (8x8 -> 4x4 -> 2x2) and a head through the fused
    ``linear_relu`` extension."""

    def __init__(self, device):
        nn = burn.nn
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1, device=device), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1, device=device), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten())
        self.hidden = nn.Linear(32 * 2 * 2, 64, device=device)
        self.head = nn.Linear(64, 10, device=device)

    def forward(self, x):
        h = self.features(x.reshape((-1, 1, 8, 8)))
        h = F.linear_relu(h, self.hidden.weight, self.hidden.bias)
        return self.head(h)


def _progress(total, enabled):
    """A rich progress bar on a terminal, plain periodic lines otherwise."""
    if enabled and sys.stdout.isatty():
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)
        return Progress(TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn())
    return None


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="flex, wgpu:0, cuda:0 (default: Device.default())")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join("runs", "digits"), help="where to save the model")
    args = ap.parse_args(argv)

    base = burn.Device(args.device) if args.device else burn.Device.default()
    dev = base.autodiff()
    base.seed(args.seed)
    xtr, ytr, xte, yte = load_digits_split(args.seed)
    model = DigitsCNN(dev)
    opt = burn.optim.Adam(model, lr=args.lr)
    steps_per_epoch = len(xtr) // args.batch_size
    total = args.epochs * steps_per_epoch
    print(f"burn {burn.__version__}: training a small CNN ({model.num_params()} parameters) on digits "
          f"({len(xtr)} train / {len(xte)} test) on {base}")
    rng = np.random.default_rng(args.seed)
    progress = _progress(total, True)
    task = progress.add_task("train", total=total, status="") if progress else None
    t0 = time.perf_counter()
    if progress:
        progress.start()
    try:
        for epoch in range(args.epochs):
            order = rng.permutation(len(xtr))
            running = 0.0
            for s in range(steps_per_epoch):
                idx = order[s * args.batch_size:(s + 1) * args.batch_size]
                xb = burn.tensor(xtr[idx], device=dev)
                yb = burn.tensor(ytr[idx], device=dev)
                loss = F.cross_entropy(model(xb), yb)
                opt.step(loss.backward())
                running += loss.item()
                if progress:
                    progress.update(task, advance=1, status=f"epoch {epoch + 1}/{args.epochs} loss {loss.item():.4f}")
            if not progress and (epoch + 1) % 5 == 0:
                rate = (epoch + 1) * steps_per_epoch / (time.perf_counter() - t0)
                print(f"epoch {epoch + 1:3d}/{args.epochs}  loss {running / steps_per_epoch:.4f}  "
                      f"{rate:.0f} steps/s", flush=True)
    finally:
        if progress:
            progress.stop()
    with burn.no_grad():
        logits = model(burn.tensor(xte, device=dev))
        acc = float((burn.argmax(logits, axis=1) == burn.tensor(yte, device=dev)).astype(burn.float32).mean().item())
    print(f"test accuracy: {acc * 100:.2f}%  ({time.perf_counter() - t0:.1f} s on {base})")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.abspath(os.path.join(args.out, "model.safetensors"))
    model.save(path, metadata={"test_accuracy": f"{acc:.4f}"})
    print(f"model saved to {path}")
    return acc


if __name__ == "__main__":
    main()
