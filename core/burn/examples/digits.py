"""Train a small CNN on the digits dataset (bundled with burn) on the default device.

    python -m burn.examples.digits [--device flex] [--epochs 15] [--seed 0] [--out runs/digits]
        [--checkpoint-dir runs/digits/ckpt [--resume]] [--plot curves.png] [--data-parallel]

    burn-dist launch -n 2 -- python -m burn.examples.digits --data-parallel

A CNN (``burn.nn`` conv blocks, a head through the fused ``linear_relu``
extension) trained with cross-entropy and ``burn.optim.Adam`` on an autodiff device
by ``burn.train.Learner``, which shows a live progress bar (rich; plain
lines when not a terminal) and a summary line per epoch; prints the test
accuracy and where the model was saved (safetensors). ``--checkpoint-dir`` and
``--resume`` continue an interrupted run, ``--plot`` writes the curves.
``--data-parallel`` trains on every rank of a ``burn-dist launch`` job (the burn-dist plugin):
each rank a part of every batch, gradients averaged, so it reaches one process's accuracy;
rank 0 prints, saves and checkpoints.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import burn
import burn.nn.functional as F


DIGITS_FILE = os.path.join(os.path.dirname(__file__), "data", "digits.npz")


def load_digits_arrays():
    """The 1797 8x8 digit images (uint8 in 0..16, shape [1797, 64]) and their labels (0..9).

    The "Optical Recognition of Handwritten Digits" test set (E. Alpaydin, C. Kaynak, UCI
    Machine Learning Repository, 1998, CC BY 4.0), the same copy scikit-learn bundles as
    ``load_digits``; it ships with burn so the examples need nothing but burn-core and a
    backend. Stored as a compressed ``.npz`` of two integer arrays, read without pickle.

        >>> x, y = load_digits_arrays()
        >>> x.shape, y.shape
        ((1797, 64), (1797,))
    """
    with np.load(DIGITS_FILE, allow_pickle=False) as f:
        images, labels = f["images"], f["labels"]
    if images.shape != (1797, 64) or labels.shape != (1797,):
        raise ValueError(f"{DIGITS_FILE}: unexpected shapes {images.shape}, {labels.shape}; reinstall burn-core")
    return images, labels


def load_digits_split(seed: int):
    """Digits (1797 8x8 images) scaled to [0, 1], split 80/20 with a fixed seed.

        >>> xtr, ytr, xte, yte = load_digits_split(0)
        >>> xtr.shape, xte.shape
        ((1438, 64), (359, 64))
    """
    images, labels = load_digits_arrays()
    x = (images / 16.0).astype(np.float32)
    y = labels.astype(np.int64)
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


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="flex, wgpu:0, cuda:0 (default: Device.default())")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join("runs", "digits"), help="where to save the model")
    ap.add_argument("--checkpoint-dir", default=None,
                    help="save a checkpoint every epoch here (the newest 3 are kept)")
    ap.add_argument("--resume", action="store_true", help="continue from the newest checkpoint of --checkpoint-dir")
    ap.add_argument("--plot", default=None, metavar="PNG", help="write the training curves here (needs matplotlib)")
    ap.add_argument("--data-parallel", action="store_true",
                    help="train on every rank of a burn-dist launch job (needs burn-dist)")
    args = ap.parse_args(argv)
    if args.resume and not args.checkpoint_dir:
        ap.error("--resume needs --checkpoint-dir")

    base = burn.Device(args.device) if args.device else burn.Device.default()
    dev = base.autodiff()
    base.seed(args.seed)
    xtr, ytr, xte, yte = load_digits_split(args.seed)
    model = DigitsCNN(dev)
    opt = burn.optim.Adam(model, lr=args.lr)
    train = burn.data.DataLoader(burn.data.ArrayDataset(xtr, ytr), args.batch_size, shuffle=True, seed=args.seed,
                                 drop_last=True, device=dev)
    test = burn.data.DataLoader(burn.data.ArrayDataset(xte, yte), 512, device=dev)
    learner = burn.train.Learner(model, opt, F.cross_entropy, metrics=["accuracy"],
                                 checkpoint_dir=args.checkpoint_dir,
                                 progress=burn.train.ProgressDisplay(log_every_s=10.0),
                                 data_parallel=args.data_parallel)
    main_rank = learner.parallel is None or learner.parallel.is_main
    if main_rank:
        print(f"burn {burn.__version__}: training a small CNN ({model.num_params()} parameters) on digits "
              f"({len(xtr)} train / {len(xte)} test) on {base}")
    if args.data_parallel and main_rank:
        print(f"data parallel: {learner.parallel.world_size} ranks, {args.batch_size // learner.parallel.world_size}"
              f" samples of each batch of {args.batch_size} per rank")
    t0 = time.perf_counter()
    history = learner.fit(train, args.epochs, valid_loader=test, resume=args.resume)
    acc = learner.evaluate(test)["accuracy"]
    if not main_rank:
        return acc
    print(f"test accuracy: {acc * 100:.2f}%  ({time.perf_counter() - t0:.1f} s on {base})")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.abspath(os.path.join(args.out, "model.safetensors"))
    model.save(path, metadata={"test_accuracy": f"{acc:.4f}"})
    print(f"model saved to {path}")
    if args.plot:
        print(f"curves saved to {history.plot(args.plot, title='digits CNN')}")
    return acc


if __name__ == "__main__":
    main()
