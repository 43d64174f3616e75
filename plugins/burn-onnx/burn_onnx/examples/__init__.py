"""Runnable examples of burn-onnx: ``python -m burn_onnx.examples.onnx_finetune``.

Example:
    >>> from burn_onnx import examples
    >>> assert examples.__name__ == "burn_onnx.examples"
"""
