"""numpy kernels of every core primitive, one module per op family: op name -> kernel
(:func:`all_kernels`, :func:`extension_kernels`).

Kernels receive numpy arrays (operands of one dtype for binary ops, numpy broadcasting
between them) and the primitive's attributes; they return an array of the dtype the
primitive's meta rule promised. :mod:`.elementwise`, :mod:`.creation`, :mod:`.movement`,
:mod:`.reduce`, :mod:`.linear`, :mod:`.nn`, :mod:`.indexing`, :mod:`.optim`, :mod:`.conv`,
:mod:`.quant` (NF4), :mod:`.sorting`, :mod:`.attention`, :mod:`.recurrent` (LSTM / GRU layers).
"""
from __future__ import annotations

from burn.fused import group_kernel

from . import attention, creation, elementwise, indexing, linear, movement, nn, optim, recurrent, reduce, sorting


def all_kernels() -> dict:
    """op name -> kernel, for registration.

    >>> assert all_kernels()["matmul"] is linear.matmul
    """
    e, c, r, m, i = elementwise, creation, reduce, movement, indexing
    k = dict(e.UNARY)
    k.update(e.BINARY)
    k["pow"] = e._int_pow
    k.update({
        "cast": e.cast, "clip": e.clip, "where": e.where, "full": c.full, "arange": c.arange,
        "linspace": c.linspace, "eye": c.eye, "rand_uniform": c.rand_uniform, "rand_normal": c.rand_normal,
        "rand_int": c.rand_int, "sum": r.sum_, "prod": r.prod, "max": r.max_, "min": r.min_, "any": r.any_,
        "all": r.all_, "argmax": r.argmax, "argmin": r.argmin, "cumsum": r.cumsum, "cumprod": r.cumprod,
        "argsort": sorting.argsort, "searchsorted": sorting.searchsorted,
        "reshape": m.reshape, "permute": m.permute, "broadcast_to": m.broadcast_to, "slice": m.slice_,
        "slice_grad": m.slice_grad, "pad": m.pad, "concat": m.concat, "index": i.index, "index_add": i.index_add,
        "index_put": i.index_put, "take_along_axis": i.take_along_axis, "scatter_add": i.scatter_add,
        "matmul": linear.matmul,
    })
    return k


def extension_kernels() -> dict:
    """``burn::`` extension op name -> kernel, for registration.

    >>> assert extension_kernels()["burn::softmax"] is nn.softmax
    """
    return {"burn::linear_relu": linear.linear_relu, "burn::softmax_cross_entropy": nn.softmax_cross_entropy,
            "burn::softmax_cross_entropy_grad": nn.softmax_cross_entropy_grad,
            "burn::adam_update": optim.adam_update, "burn::sgd_update": optim.sgd_update,
            # a group's updates: the batched kernel once for the whole group
            "burn::adam_update_group": group_kernel(optim.adam_update, 4, many=optim.adam_update_many),
            "burn::sgd_update_group": group_kernel(optim.sgd_update, 3, many=optim.sgd_update_many),
            "burn::softmax": nn.softmax, "burn::softmax_grad": nn.softmax_grad,
            "burn::log_softmax": nn.log_softmax, "burn::log_softmax_grad": nn.log_softmax_grad,
            "burn::layer_norm": nn.layer_norm, "burn::layer_norm_grad": nn.layer_norm_grad,
            "burn::attention": attention.attention, "burn::attention_grad": attention.attention_grad,
            **recurrent.KERNELS}
