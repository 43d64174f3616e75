"""Export rules of core's extension ops (``burn::*``): softmax, log_softmax, layer_norm,
linear_relu, attention, softmax_cross_entropy and the NF4 (QLoRA) ops. Backward and
optimizer ops have no rule (export traces inference); the LSTM/GRU layers and every
extension op without a rule export through their reference definitions.

Example:
    >>> from burn_onnx.export.registry import RULES
    >>> assert RULES["burn::layer_norm"].onnx == "LayerNormalization"
"""
from __future__ import annotations

import numpy as np

import burn

from .registry import export_rule, no_onnx_form

__all__: list = []


@export_rule("burn::softmax", onnx="Softmax")
def _softmax(ctx, node):
    x, axis = node.args[0], node.args[1]
    return ctx.op("Softmax", x.name, axis=int(axis))


@export_rule("burn::log_softmax", onnx="LogSoftmax")
def _log_softmax(ctx, node):
    x, axis = node.args[0], node.args[1]
    return ctx.op("LogSoftmax", x.name, axis=int(axis))


@export_rule("burn::layer_norm", onnx="LayerNormalization")
def _layer_norm(ctx, node):
    x, w, b, eps = node.args[:4]
    return ctx.op("LayerNormalization", x.name, w.name, None if b is None else b.name, axis=-1,
                  epsilon=float(eps))


@export_rule("burn::linear_relu", onnx="Gemm, Relu (2-D) or MatMul, Add, Relu")
def _linear_relu(ctx, node):
    x, w, b = node.args[:3]
    if x.ndim == 2:
        return ctx.op("Relu", ctx.op("Gemm", x.name, w.name, b.name))
    return ctx.op("Relu", ctx.op("Add", ctx.op("MatMul", x.name, w.name), b.name))


@export_rule("burn::attention", onnx="Transpose, MatMul, Mul, Add, Softmax, MatMul")
def _attention(ctx, node):
    q, k, v, mask, scale = node.args[:5]
    perm = list(range(k.ndim - 2)) + [k.ndim - 1, k.ndim - 2]
    s = ctx.op("Mul", ctx.op("MatMul", q.name, ctx.op("Transpose", k.name, perm=perm)), ctx.scalar(scale, q.dtype))
    if mask is not None:
        s = ctx.op("Add", s, mask.name)
    w = ctx.op("Softmax", s, axis=-1)
    return ctx.op("MatMul", w, v.name), w


@export_rule("burn::softmax_cross_entropy", onnx="LogSoftmax, GatherElements, ReduceMean")
def _softmax_cross_entropy(ctx, node):
    logits, target = node.args[:2]
    reduction = node.args[2] if len(node.args) > 2 else node.kwargs.get("reduction", "mean")
    smoothing = node.args[3] if len(node.args) > 3 else node.kwargs.get("label_smoothing", 0.0)
    lp = ctx.op("LogSoftmax", logits.name, axis=-1)
    t = target.name if target.dtype.name == "int64" else ctx.cast(target.name, burn.int64)
    picked = ctx.op("GatherElements", lp, ctx.op("Unsqueeze", t, ctx.ints([1])), axis=1)
    loss = ctx.op("Neg", ctx.op("Reshape", picked, ctx.ints([-1])))
    if smoothing:
        smooth = ctx.op("Neg", ctx.op("ReduceMean", lp, ctx.ints([-1]), keepdims=0))
        loss = ctx.op("Add", ctx.op("Mul", loss, ctx.scalar(1 - smoothing, logits.dtype)),
                      ctx.op("Mul", smooth, ctx.scalar(smoothing, logits.dtype)))
    if reduction == "none":
        return loss
    return ctx.op("ReduceMean" if reduction == "mean" else "ReduceSum", loss, ctx.ints([0]), keepdims=0)


# -- NF4 (QLoRA) --------------------------------------------------------------------------

def _nf4_storage(ctx, node, offset):
    codes, scale_codes, steps, off = node.args[offset:offset + 4]
    vals = [ctx.value(v.name) for v in (codes, scale_codes, steps, off)]
    if any(v is None for v in vals):
        raise ctx.fail("the NF4 storage tensors are computed inside the function; export needs them as "
                       "parameters or buffers (a QLoRA model's frozen base)")
    kw = {"block_size": 64, "scale_block": 256, **node.kwargs}
    return (codes, scale_codes, steps, off), vals, tuple(kw["shape"]), kw["block_size"], kw["scale_block"]


def _nf4_weight(ctx, node, offset):
    """The weight of NF4 storage as an ONNX value: a float32 initializer (dequantized), or
    (qlora="blockwise", opset >= 21) 4-bit codes with a codebook Gather and per-block scales
    dequantized by DequantizeLinear with block_size."""
    storage, vals, shape, block, sblock = _nf4_storage(ctx, node, offset)
    base = storage[0].name.rsplit(".", 1)[0] if "." in storage[0].name else storage[0].name
    mode = ctx.options.get("qlora", "dequantized")
    if mode == "dequantized":
        ts = [burn.tensor(v) for v in vals]
        w = burn.nn.quant.nf4_dequantize(*ts, shape=shape, block_size=block, scale_block=sblock).numpy()
        return ctx.const(w, name=ctx.fresh(f"{base}.weight"))
    if ctx.opset < 21:
        raise ctx.fail("qlora='blockwise' needs opset 21 or newer (DequantizeLinear with block_size and the "
                       "UINT4 type); pass opset=21 or qlora='dequantized'")
    codes_u8, scale_codes, steps, off = vals
    from onnx import TensorProto, helper
    nib = np.stack([codes_u8 >> 4, codes_u8 & 15], axis=1).reshape(-1).astype(np.uint8)
    cname = ctx.fresh(f"{base}.codes_uint4")
    ctx.initializers.append(helper.make_tensor(cname, TensorProto.UINT4, nib.shape, nib.tolist()))
    table = ctx.const(np.asarray(burn.nn.quant.NF4_CODE, np.float32), name=ctx.fresh(f"{base}.nf4_code"))
    levels = ctx.op("Gather", table, ctx.op("Cast", cname, to=TensorProto.INT64), axis=0)
    sc = ctx.const(scale_codes, name=ctx.fresh(f"{base}.scale_codes"))
    # one group of blocks is per-tensor quantization (onnxruntime wants block_size 0 then)
    per_tensor = steps.size == 1
    st = ctx.const(steps.reshape(()) if per_tensor else steps, name=ctx.fresh(f"{base}.scale_steps"))
    deq = (ctx.op("DequantizeLinear", sc, st) if per_tensor else
           ctx.op("DequantizeLinear", sc, st, axis=0, block_size=sblock))
    absmax = ctx.op("Add", deq,
                    ctx.const(off.reshape(()), name=ctx.fresh(f"{base}.scale_offset")))
    nb = scale_codes.shape[0]
    w = ctx.op("Mul", ctx.op("Reshape", levels, ctx.ints([nb, block])), ctx.op("Unsqueeze", absmax, ctx.ints([1])))
    n = int(np.prod(shape))
    flat = ctx.op("Slice", ctx.op("Reshape", w, ctx.ints([-1])), ctx.ints([0]), ctx.ints([n]))
    return ctx.op("Reshape", flat, ctx.ints(list(shape)))


@export_rule("burn::nf4_dequantize", onnx="initializer, or Gather + DequantizeLinear(block_size) at opset 21+",
             note="qlora='dequantized' (default) or 'blockwise'")
def _nf4_dequantize(ctx, node):
    return ctx.op("Identity", _nf4_weight(ctx, node, 0))


@export_rule("burn::nf4_matmul", onnx="MatMul on the NF4 weight (see nf4_dequantize)",
             note="qlora='dequantized' (default) or 'blockwise'")
def _nf4_matmul(ctx, node):
    x = node.args[0]
    w = _nf4_weight(ctx, node, 1)
    if x.dtype is not burn.float32:
        w = ctx.cast(w, x.dtype)
    return ctx.op("MatMul", x.name, w)


for _op in ("attention_grad", "layer_norm_grad", "softmax_grad", "log_softmax_grad", "softmax_cross_entropy_grad",
            "lstm_layer_grad", "gru_layer_grad"):
    no_onnx_form(f"burn::{_op}", "a backward op: export traces inference (no gradients); call export "
                                 "outside backward()")
for _op in ("adam_update", "sgd_update", "adam_update_group", "sgd_update_group"):
    no_onnx_form(f"burn::{_op}", "an optimizer update: export traces inference; export the model, not the "
                                 "training step")
