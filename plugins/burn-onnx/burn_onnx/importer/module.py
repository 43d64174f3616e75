"""The Module that ``burn.onnx.load`` returns, and how a graph's initializers become its
parameters, buffers and layers.

- A 2-D float initializer that is only the right-hand side of MatMul/Gemm (directly or
  through a ``Transpose``) becomes a :class:`burn.nn.Linear` (weight in burn's layout
  [d_in, d_out]; a bias that Gemm or the following Add applies joins it), so
  :func:`burn.nn.apply_lora` finds it. Its path is the initializer's name without
  ``.weight`` (``fc1.weight`` -> layer ``fc1``; else the bias's name without ``.bias``; else
  the weight's name), and the node runs the layer.
- Other float initializers are Parameters at their dotted name; those read only as
  BatchNormalization's running statistics are buffers; the rest (integer tensors, shapes,
  Resize scales) are constants of the graph.
- ``forward`` runs the plan for the input signature (:mod:`.plan`), reading the current
  parameters and layers, so ``to_device``, ``load_state_dict`` and ``apply_lora`` all take
  effect.

Example:
    >>> from burn_onnx.importer.module import sanitize
    >>> assert sanitize("onnx::MatMul_12") == "onnx__MatMul_12" and sanitize("train") == "train_"
"""
from __future__ import annotations

import re
from collections import OrderedDict

import numpy as np
import onnx

import burn
from burn.nn import Linear, Module, Parameter

from ..errors import OnnxImportError
from .plan import make_plan
from .registry import OPS, Node

__all__ = ["OnnxModel", "sanitize"]

_MAX_PLANS = 16
_FLOAT_KINDS = "f"


def sanitize(component: str) -> str:
    """A path component usable as a Module attribute (no clash with Module's own names)."""
    c = re.sub(r"[^0-9A-Za-z_]", "_", component) or "_"
    if hasattr(Module, c) or c.startswith("_onnx"):
        c += "_"
    return c


class _Scope(Module):
    """A node of the path tree that only holds sub-modules and parameters."""

    def forward(self, *args):
        raise OnnxImportError("burn.onnx: a path scope of an imported model is not callable; call the model")


class OnnxModel(Module):
    """A model imported from ONNX: ``model(*inputs)`` (graph input order, or by name) returns the
    graph's output (a tuple when there are several).

    Example:
        >>> import burn, onnx, numpy as np, os, tempfile
        >>> from onnx import helper, numpy_helper, TensorProto as T
        >>> w = numpy_helper.from_array(np.ones((3, 2), np.float32), "fc.weight")
        >>> g = helper.make_graph([helper.make_node("MatMul", ["x", "fc.weight"], ["y"])], "g",
        ...     [helper.make_tensor_value_info("x", T.FLOAT, ["n", 3])],
        ...     [helper.make_tensor_value_info("y", T.FLOAT, ["n", 2])], [w])
        >>> p = os.path.join(tempfile.mkdtemp(), "m.onnx")
        >>> onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), p)
        >>> m = burn.onnx.load(p)
        >>> assert isinstance(m.fc, burn.nn.Linear) and m(burn.ones((4, 3))).tolist() == [[3.0, 3.0]] * 4
    """

    def __init__(self, nodes, inputs, outputs, constants, refs, source=""):
        object.__setattr__(self, "_onnx_nodes", nodes)
        object.__setattr__(self, "_onnx_inputs", inputs)          # [(name, burn dtype or None, dims)]
        object.__setattr__(self, "_onnx_outputs", outputs)
        object.__setattr__(self, "_onnx_constants", constants)
        object.__setattr__(self, "_onnx_refs", refs)              # [(slot name, path components)]
        object.__setattr__(self, "_onnx_plans", OrderedDict())
        object.__setattr__(self, "_onnx_source", source)
        object.__setattr__(self, "_onnx_graphs", OrderedDict())   # burn.capture graphs of the plans
        object.__setattr__(self, "_onnx_capture", True)

    @property
    def input_names(self) -> list:
        """The graph's input names, in order.

        Example:
            >>> from burn_onnx.importer.module import OnnxModel
            >>> assert OnnxModel([], [("x", None, [])], ["x"], {}, []).input_names == ["x"]
        """
        return [n for n, _, _ in self._onnx_inputs]

    @property
    def output_names(self) -> list:
        """The graph's output names, in order.

        Example:
            >>> from burn_onnx.importer.module import OnnxModel
            >>> assert OnnxModel([], [("x", None, [])], ["x"], {}, []).output_names == ["x"]
        """
        return list(self._onnx_outputs)

    def _bind(self, args, kwargs):
        specs = self._onnx_inputs
        if len(args) > len(specs):
            raise burn.BurnError(f"{self._onnx_source}: the model takes {len(specs)} inputs "
                                 f"({', '.join(self.input_names)}), got {len(args)}")
        vals = list(args) + [kwargs.pop(n, None) for n, _, _ in specs[len(args):]]
        if kwargs:
            raise burn.BurnError(f"{self._onnx_source}: unknown inputs {sorted(kwargs)}; the model's inputs "
                                 f"are {self.input_names}")
        for (name, dtype, dims), v in zip(specs, vals):
            if not isinstance(v, burn.Tensor):
                raise burn.BurnError(f"{self._onnx_source}: input {name!r} must be a burn.Tensor, got "
                                     f"{type(v).__name__}")
            if dtype is not None and v.dtype is not dtype:
                raise burn.DTypeError(f"{self._onnx_source}: input {name!r} must be {dtype.name}, got "
                                      f"{v.dtype.name}; cast it with x.astype(burn.{dtype.name})")
            if dims is not None and (len(dims) != v.ndim or any(isinstance(d, int) and d != s
                                                               for d, s in zip(dims, v.shape))):
                want = tuple(d if isinstance(d, int) else (d or "?") for d in dims)
                raise burn.ShapeError(f"{self._onnx_source}: input {name!r} must have shape {want}, got "
                                      f"{tuple(v.shape)}")
        return vals

    def forward(self, *args, **kwargs):
        """Run the graph on burn tensors (one per graph input).

        Example:
            >>> from burn_onnx.importer.module import OnnxModel
            >>> import burn
            >>> m = OnnxModel([], [("x", None, None)], ["x"], {}, [])
            >>> assert m(burn.tensor([1.0])).tolist() == [1.0]
        """
        # positional tensors: a key seen before passed _bind's checks (they read only what the
        # key holds: the inputs' devices, shapes and dtypes), so only a new key runs them
        positional = not kwargs and len(args) == len(self._onnx_inputs)
        if positional:
            for a in args:
                if not isinstance(a, _Tensor):
                    positional = False
                    break
        xs = list(args) if positional else self._bind(args, dict(kwargs))
        key = (xs[0].device if xs else None,) + tuple([(x.shape, x.dtype) for x in xs])
        plan = self._onnx_plans.get(key)
        if plan is None and positional:
            self._bind(args, {})
        refs = []
        for _, path in self._onnx_refs:
            obj = self
            for c in path:
                obj = getattr(obj, c)
            refs.append(obj)
        if plan is None:
            dev = xs[0].device if xs else burn.Device.flex()
            plan, outs = make_plan(self._onnx_nodes, self.input_names, xs, [n for n, _ in self._onnx_refs],
                                   refs, self._onnx_constants, self._onnx_outputs, dev)
            self._onnx_plans[key] = plan
            if len(self._onnx_plans) > _MAX_PLANS:
                self._onnx_plans.popitem(last=False)
        elif self._onnx_capture and xs and not (xs[0].device.is_autodiff and burn.is_grad_enabled()):
            outs = self._replay(key, plan, xs, refs)
        else:
            outs = plan.run(xs, refs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _replay(self, key, plan, xs, refs):
        """The plan through a ``burn.capture`` graph (inference: no Python per op). The graph is
        keyed by the identity of every layer, parameter and buffer, so ``apply_lora``,
        ``to_device`` or a reassigned parameter traces it again (the identities are read from the
        referenced layers only, not through ``state_dict``: that walk was 8-14% of a replay)."""
        ids = _identities(refs)
        g = self._onnx_graphs.get((key, ids))
        if g is None:
            g = burn.capture.trace(lambda *a: tuple(plan.run(list(a), refs)), *xs)
            self._onnx_graphs[(key, ids)] = g
            if len(self._onnx_graphs) > _MAX_PLANS:
                self._onnx_graphs.popitem(last=False)
        return list(g.run(xs))             # xs: the flat tensor arguments the graph was traced with

    def extra_repr(self) -> str:
        """Inputs, outputs and node count, shown in ``repr``.

        Example:
            >>> from burn_onnx.importer.module import OnnxModel
            >>> assert "inputs=['x']" in OnnxModel([], [("x", None, [])], ["x"], {}, []).extra_repr()
        """
        return f"inputs={self.input_names}, outputs={self.output_names}, nodes={len(self._onnx_nodes)}"


_Tensor = burn.Tensor
_HOLDERS = (Module, _Tensor, list, tuple, dict)


def _identities(refs) -> tuple:
    """The ids of ``refs`` and of every module, tensor and container inside the ones that are
    modules (a Linear's weight, a LoRA wrapper's base layer and adapters), depth first."""
    out, stack = [], list(refs)
    append, push, pop, tensor = out.append, stack.append, stack.pop, _Tensor
    while stack:
        r = pop()
        append(id(r))
        if r.__class__ is Parameter or isinstance(r, tensor):    # most refs: parameters, nothing inside
            continue
        if isinstance(r, Module):
            for v in vars(r).values():
                if isinstance(v, _HOLDERS):
                    push(v)
        elif isinstance(r, (list, tuple)):
            stack.extend(r)
        elif isinstance(r, dict):
            stack.extend(r.values())
    return tuple(out)


def _set_path(root, path, value):
    obj = root
    for c in path[:-1]:
        nxt = vars(obj).get(c)
        if nxt is None:
            nxt = _Scope()
            object.__setattr__(obj, c, nxt)
        elif not isinstance(nxt, _Scope):      # never inside a layer: apply_lora may wrap it
            return False
        obj = nxt
    if path[-1] in vars(obj):
        return False
    object.__setattr__(obj, path[-1], value)
    return True


def place(root, name, value, taken):
    """Put ``value`` at the dotted ``name`` in ``root`` (a unique sanitized path); returns the path."""
    path = tuple(sanitize(c) for c in name.split("."))
    if path in taken or not _set_path(root, path, value):
        base, k = "_".join(path), 1
        while (f"{base}_{k}",) in taken or not _set_path(root, (f"{base}_{k}",), value):
            k += 1
        path = (f"{base}_{k}",)
    taken.add(path)
    return path


def onnx_node(op, inputs, outputs, opset, name):
    """A :class:`Node` the importer adds (e.g. the Add of a Gemm bias kept apart)."""
    return Node(onnx.helper.make_node(op, inputs, outputs, name=name), opset)
