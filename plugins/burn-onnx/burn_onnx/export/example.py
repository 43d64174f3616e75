"""Export the digits CNN to ONNX and run it with onnxruntime.

    python -m burn_onnx.export.example [--weights runs/digits/model.safetensors] [--out digits.onnx]
        [--opset 18]

Builds ``burn.examples.digits.DigitsCNN`` (with the weights ``python -m burn.examples.digits``
saved, when given), exports it with a dynamic batch axis, runs the file with onnxruntime on the
digits test split (a batch size it was not traced at) and prints the largest difference from
burn's own output and how often the predicted classes agree.

Example:
    >>> import os, tempfile
    >>> from burn_onnx.export.example import main
    >>> assert main(["--out", os.path.join(tempfile.mkdtemp(), "d.onnx"), "--quiet"]) < 1e-4
"""
from __future__ import annotations

import argparse

import numpy as np

import burn

__all__ = ["main"]


def _inputs():
    """The digits test images (burn-core ships the data), as [359, 1, 8, 8] float32."""
    from burn.examples.digits import load_digits_split
    return load_digits_split(0)[2].reshape(-1, 1, 8, 8)


def main(argv=None) -> float:
    """Export, run with onnxruntime, print and return the largest absolute difference."""
    ap = argparse.ArgumentParser(prog="python -m burn_onnx.export.example", description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default=None, help="safetensors saved by python -m burn.examples.digits")
    ap.add_argument("--out", default="digits.onnx")
    ap.add_argument("--opset", type=int, default=18)
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    from burn.examples.digits import DigitsCNN
    from .check import run_onnxruntime
    dev = burn.Device.flex()
    dev.seed(0)
    net = DigitsCNN(dev)
    if a.weights:
        net.load(a.weights)
    net.eval()
    burn.onnx.export(net, (burn.zeros((4, 1, 8, 8), device=dev),), a.out, opset=a.opset, input_names=["images"],
                     output_names=["logits"], dynamic_axes={"images": {0: "batch"}})
    x = burn.tensor(_inputs(), device=dev)
    with burn.no_grad():
        want = net(x).numpy()
    got = run_onnxruntime(a.out, [x])[0]
    diff = float(np.max(np.abs(want - got)))
    agree = float(np.mean(want.argmax(1) == got.argmax(1)))
    if not a.quiet:
        print(f"exported {a.out} (opset {a.opset}, {'trained' if a.weights else 'untrained'} weights); "
              f"onnxruntime on {x.shape[0]} images: max |burn - onnxruntime| = {diff:.3g}, "
              f"predicted classes agree on {agree * 100:.1f}%")
    return diff


if __name__ == "__main__":
    main()
