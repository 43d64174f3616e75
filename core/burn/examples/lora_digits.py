"""LoRA and QLoRA fine-tuning of a digits CNN: pretrain on 0-4, adapt to 5-9.

    python -m burn.examples.lora_digits [--device flex] [--rank 8] [--alpha 16] [--seed 0]

The CNN of ``burn.examples.digits`` is trained on the digits 0-4 only. Then
two copies of it are fine-tuned on 5-9 through adapters on its Linear layers
(the convolutions and every base weight stay frozen): one with LoRA (fp32
base), one with QLoRA (base weights stored as 4-bit NF4 with double-quantized
scales). Prints the trainable-parameter fraction, the bytes of the frozen
Linear weights (fp32 vs NF4) and the accuracy on 5-9 before and after.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import burn
import burn.nn.functional as F
from burn.examples.digits import DigitsCNN, load_digits_split
from burn.optim import ParamGroup


class AdaptableDigitsCNN(DigitsCNN):
    """DigitsCNN with the hidden layer called as a module (``relu(hidden(h))``, the same
    function as its fused ``linear_relu``), so an adapted layer runs its own forward
    (the NF4 matmul under QLoRA) instead of having its ``.weight`` read."""

    def forward(self, x):
        h = self.features(x.reshape((-1, 1, 8, 8)))
        return self.head(F.relu(self.hidden(h)))


def _train(model, opt, x, y, dev, epochs, batch_size, rng, label_smoothing=0.0):
    model.train()
    steps = max(len(x) // batch_size, 1)
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for s in range(steps):
            idx = order[s * batch_size:(s + 1) * batch_size]
            loss = F.cross_entropy(model(burn.tensor(x[idx], device=dev)), burn.tensor(y[idx], device=dev),
                                   label_smoothing=label_smoothing)
            opt.step(loss.backward())
    return float(loss.item())


def accuracy(model, x, y, dev) -> float:
    """Fraction of ``x`` classified as ``y`` (argmax over all 10 classes)."""
    model.eval()
    with burn.no_grad():
        pred = burn.argmax(model(burn.tensor(x, device=dev)), axis=1).numpy()
    return float((pred == y).mean())


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None, help="flex, wgpu:0, cuda:0 (default: Device.default())")
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=16.0)
    ap.add_argument("--pretrain-epochs", type=int, default=15)
    ap.add_argument("--finetune-epochs", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3, help="pretraining learning rate")
    ap.add_argument("--lora-lr", type=float, default=5e-3, help="learning rate of the adapters")
    ap.add_argument("--label-smoothing", type=float, default=0.1,
                    help="of pretraining: keeps the logits of the unseen digits 5-9 within reach of the adapters")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    base_dev = burn.Device(args.device) if args.device else burn.Device.default()
    dev = base_dev.autodiff()
    base_dev.seed(args.seed)
    t0 = time.perf_counter()
    xtr, ytr, xte, yte = load_digits_split(args.seed)
    old_tr, new_tr = ytr < 5, ytr >= 5
    old_te, new_te = yte < 5, yte >= 5

    model = AdaptableDigitsCNN(dev)
    _train(model, burn.optim.Adam(model, lr=args.lr), xtr[old_tr], ytr[old_tr], dev, args.pretrain_epochs,
           args.batch_size, np.random.default_rng(args.seed), label_smoothing=args.label_smoothing)
    pretrained = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    acc_old = accuracy(model, xte[old_te], yte[old_te], dev)
    acc_new = accuracy(model, xte[new_te], yte[new_te], dev)
    print(f"burn {burn.__version__} on {base_dev}: pretrained on digits 0-4 ({int(old_tr.sum())} images): "
          f"test accuracy 0-4 {acc_old * 100:.1f}%, 5-9 {acc_new * 100:.1f}%")

    results = {"pretrain_acc_0_4": acc_old, "before_acc_5_9": acc_new}
    for name, apply in (("LoRA", burn.nn.apply_lora), ("QLoRA", burn.nn.apply_qlora)):
        m = AdaptableDigitsCNN(dev).load_state_dict(pretrained)
        m = apply(m, rank=args.rank, alpha=args.alpha, targets=ParamGroup.from_regex(r"^(hidden|head)\.weight$"))
        s = burn.nn.lora_summary(m)
        before = accuracy(m, xte[new_te], yte[new_te], dev)
        base_old = accuracy(m, xte[old_te], yte[old_te], dev)   # what NF4 costs the base, if anything
        # the adapters get their own group; the frozen rest gets no state at all
        opt = burn.optim.Adam(m, lr=args.lr, groups=[(ParamGroup.from_regex(r"\.lora_[AB]$"), {"lr": args.lora_lr})])
        t1 = time.perf_counter()
        loss = _train(m, opt, xtr[new_tr], ytr[new_tr], dev, args.finetune_epochs, args.batch_size,
                      np.random.default_rng(args.seed + 1))
        after = accuracy(m, xte[new_te], yte[new_te], dev)
        old_after = accuracy(m, xte[old_te], yte[old_te], dev)
        print(f"{name:5s}: trainable {s.trainable:,}/{s.total:,} parameters ({100 * s.fraction:.1f}%); "
              f"frozen Linear weights {s.base_bytes:,} bytes ({s.base_bytes_per_param:.3f} B/param, "
              f"fp32 {s.base_fp32_bytes:,}); accuracy on 5-9 {before * 100:.1f}% -> {after * 100:.1f}% "
              f"(0-4: {base_old * 100:.1f}% before, {old_after * 100:.1f}% after training on 5-9 only; "
              f"final loss {loss:.3f}, {time.perf_counter() - t1:.1f} s)")
        results[name] = {"trainable_fraction": s.fraction, "base_bytes": s.base_bytes,
                         "base_fp32_bytes": s.base_fp32_bytes, "bytes_per_param": s.base_bytes_per_param,
                         "before": before, "after": after, "old_before": base_old, "old_after": old_after}
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return results


if __name__ == "__main__":
    main()
