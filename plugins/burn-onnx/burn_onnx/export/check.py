"""``export(..., check=True)``: run the written file with onnxruntime and compare with burn.

Example:
    >>> from burn_onnx.export.check import tolerance
    >>> import burn
    >>> assert tolerance(burn.float32) == 1e-5 and tolerance(burn.float16) == 2e-2
"""
from __future__ import annotations

import numpy as np

import burn

from ..errors import OnnxExportError

__all__ = ["compare_with_onnxruntime", "tolerance", "run_onnxruntime"]


def tolerance(dtype) -> float:
    """The relative tolerance of a comparison: 1e-5 for float32 and wider, 2e-2 for half types."""
    return 2e-2 if dtype.name in ("float16", "bfloat16") else 1e-5


def run_onnxruntime(path, leaves):
    """The outputs of the ONNX file at ``path`` on the numpy values of ``leaves`` (burn tensors).

    Example:
        >>> import burn, os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "r.onnx")
        >>> _ = burn.onnx.export(lambda x: x + 1, (burn.ones((2,)),), p)
        >>> assert run_onnxruntime(p, [burn.zeros((2,))])[0].tolist() == [1.0, 1.0]
    """
    try:
        import onnxruntime as ort
    except ImportError:
        raise OnnxExportError("burn.onnx.export(check=True) needs onnxruntime: pip install 'burn-onnx[check]'") from None
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.asarray(t.numpy()) for i, t in zip(sess.get_inputs(), leaves)}
    return sess.run(None, feeds)


def compare_with_onnxruntime(fn, args, path):
    """Raise OnnxExportError when onnxruntime's outputs differ from burn's beyond :func:`tolerance`."""
    from burn.capture.tree import flatten
    leaves, _ = flatten(args)
    with burn.no_grad():
        want = [t for t in flatten(fn(*args))[0]]
    got = run_onnxruntime(path, leaves)
    for k, (w, g) in enumerate(zip(want, got)):
        wn = np.asarray(w.numpy())
        if wn.shape != g.shape:
            raise OnnxExportError(f"burn.onnx.export(check=True): output {k} has shape {g.shape} in onnxruntime, "
                                  f"{wn.shape} in burn")
        if wn.dtype.kind in "fc":
            tol = tolerance(w.dtype)
            err = np.max(np.abs(wn.astype(np.float64) - g) / (np.abs(wn.astype(np.float64)) + 1.0), initial=0.0)
            if not err <= tol:
                raise OnnxExportError(f"burn.onnx.export(check=True): output {k} differs from burn's by {err:.3g} "
                                      f"(relative, tolerance {tol})")
        elif not np.array_equal(wn, g):
            raise OnnxExportError(f"burn.onnx.export(check=True): output {k} ({wn.dtype}) differs from burn's")
