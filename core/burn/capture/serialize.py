"""Graph files: the structure as JSON, the values (constants, state) as safetensors.

One file holds both: a safetensors file whose metadata key ``"burn.graph"`` is the JSON
structure (format, version, nodes with their attributes, inputs, state, constants, host
values and their recipes, results, updates, and which plugin provides each extension op) and whose tensors
are ``const.<k>`` and ``state.<j>``, stored as raw bytes with their dtype and shape in the
JSON (so every burn dtype, bfloat16 and complex included, round-trips exactly). No pickle:
attributes are encoded with explicit tags (tuples, dtypes, slices, non-finite floats).
"""
from __future__ import annotations

import json
import math
import os

import numpy as np
import safetensors
import safetensors.numpy

from .. import dtypes as dt
from .._version import __version__
from ..dispatch import registry
from ..errors import CaptureError
from ..library import _TENSOR
from ..ops.creation import _device, tensor
from .ir import GraphNode, Slot
from .recipes import make_host_fn
from .replay import missing_op_error

__all__ = ["save", "load", "encode_attr", "decode_attr", "FORMAT"]

FORMAT = "burn.graph"
_META = "burn.graph"


def encode_attr(v, where: str):
    """A JSON value for attribute value ``v`` (``where`` names it in errors).

    Example:
        >>> import burn
        >>> from burn.capture.serialize import encode_attr, decode_attr
        >>> v = ((1, 2), burn.float32, slice(None, 3), float("inf"), -0.0)
        >>> assert decode_attr(encode_attr(v, "x")) == v
    """
    if v is None or isinstance(v, (bool, str)):
        return v
    t = type(v)
    if t is int:
        return v
    if t is float:
        return v if math.isfinite(v) else {"$f": repr(v)}
    if t is tuple:
        return {"$t": [encode_attr(x, where) for x in v]}
    if t is list:
        return [encode_attr(x, where) for x in v]
    if t is dict:
        return {"$d": [[encode_attr(k, where), encode_attr(x, where)] for k, x in v.items()]}
    if isinstance(v, dt.DType):
        return {"$dtype": v.name}
    if t is slice:
        return {"$slice": [encode_attr(v.start, where), encode_attr(v.stop, where), encode_attr(v.step, where)]}
    if v is Ellipsis:
        return {"$ellipsis": True}
    if v is _TENSOR:                # an extension op's call template: "a tensor argument goes here"
        return {"$tensor": True}
    if t is complex:
        return {"$c": [encode_attr(v.real, where), encode_attr(v.imag, where)]}
    if isinstance(v, np.generic):
        return encode_attr(v.item(), where)
    if isinstance(v, np.ndarray):
        return {"$array": [str(v.dtype), list(v.shape), encode_attr(v.tolist(), where)]}
    raise CaptureError(f"burn.Graph.save: {where} holds a {t.__name__} ({v!r}), which a graph file cannot store "
                       f"(attributes must be numbers, strings, tuples, dtypes, slices or arrays)")


def decode_attr(v):
    """The attribute value a JSON value from :func:`encode_attr` stands for."""
    if isinstance(v, list):
        return [decode_attr(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "$t" in v:
        return tuple(decode_attr(x) for x in v["$t"])
    if "$f" in v:
        return float(v["$f"])
    if "$d" in v:
        return {decode_attr(k): decode_attr(x) for k, x in v["$d"]}
    if "$dtype" in v:
        return dt.as_dtype(v["$dtype"])
    if "$slice" in v:
        return slice(*[decode_attr(x) for x in v["$slice"]])
    if "$ellipsis" in v:
        return Ellipsis
    if "$tensor" in v:
        return _TENSOR
    if "$c" in v:
        return complex(*[decode_attr(x) for x in v["$c"]])
    if "$array" in v:
        dtype, shape, data = v["$array"]
        return np.asarray(decode_attr(data), dtype=dtype).reshape(shape)
    raise CaptureError(f"burn.Graph.load: an attribute holds an unknown tagged value {sorted(v)}")


def _np_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(np.bool_ if name == "bool" else name)


def _ref(r):
    return list(r)


def _slot(s):
    return [s.name, list(s.shape), s.dtype.name, bool(s.autodiff)]


def _unslot(x):
    return Slot(x[0], tuple(x[1]), dt.as_dtype(x[2]), bool(x[3]))


def _tree(tree, conv):
    tag = tree[0]
    if tag == "T":
        return ["T", conv(tree[1]), bool(tree[2])]
    if tag == "N":
        return ["N"]
    if tag == "dict":
        return ["dict", [[k, _tree(v, conv)] for k, v in tree[1]]]
    return [tag, [_tree(o, conv) for o in tree[1]]]


def _host_array(value, slot):
    """numpy array of a native (or numpy) value."""
    if isinstance(value, tuple):
        backend, index, native = value
        return np.asarray(backend.to_numpy(native, index))
    return np.asarray(value)


def structure(graph) -> dict:
    """The JSON-able structure of ``graph`` (what :func:`save` writes in the metadata)."""
    nodes = []
    for p, n in enumerate(graph.nodes):
        attrs = {k: (None if k == "_key" else encode_attr(v, f"node %{p} ({n.op}) attribute {k!r}"))
                 for k, v in n.attrs.items()}
        nodes.append({"op": n.op, "attrs": attrs, "in": [_ref(r) for r in n.inputs],
                      "out": [[list(s), d.name] for s, d in n.outputs]})
    return {"format": FORMAT, "version": graph.VERSION, "burn": __version__, "name": graph.name,
            "inputs": [_slot(s) for s in graph.inputs], "state": [_slot(s) for s in graph.state],
            "consts": [_slot(s) for s in graph.consts], "hosts": [_slot(s) for s in graph.hosts],
            "nodes": nodes, "outputs": _tree(graph.outputs, _ref),
            "updates": [[_ref(a), _ref(b)] for a, b in graph.updates], "ops": graph.op_plugins,
            "host_recipes": [_recipe(graph, k) for k in range(len(graph.hosts))]}


def _recipe(graph, k):
    """``[kind, params]`` of host value k's recipe at save time (None: it has none)."""
    fn = graph.host_recipes[k] if k < len(graph.host_recipes) else None
    if fn is None:
        return None
    kind, params = fn()
    return [kind, {p: encode_attr(v, f"host value {graph.hosts[k].name!r} recipe {p!r}") for p, v in params.items()}]


def save(graph, path) -> None:
    """Write ``graph`` to ``path`` (see the module docstring)."""
    doc = structure(graph)
    arrays = {}
    for k, (s, v) in enumerate(zip(graph.consts, graph.const_values)):
        arrays[f"const.{k}"] = _host_array(v, s)
    for j, (s, r) in enumerate(zip(graph.state, graph.state_refs)):
        t = r()
        if t is None:
            raise CaptureError(f"burn.Graph.save: state {s.name!r} no longer exists; bind it with "
                               f"g.bind_state({s.name!r}, tensor) first")
        arrays[f"state.{j}"] = np.asarray(t.numpy())
    raw = {}
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        raw[name] = np.frombuffer(a.tobytes(), dtype=np.uint8).copy()
    data = safetensors.numpy.save(raw, metadata={_META: json.dumps(doc)})
    path = os.fspath(path)
    tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.burn-tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)      # a reader never sees half a file
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _read(path):
    with open(path, "rb") as f:
        blob = f.read()
    try:
        with safetensors.safe_open(str(path), framework="numpy") as f:
            meta = f.metadata() or {}
    except Exception as e:
        raise CaptureError(f"burn.Graph.load: {str(path)!r} is not a graph file (not safetensors: {e})") from None
    if _META not in meta:
        raise CaptureError(f"burn.Graph.load: {str(path)!r} is a safetensors file without a graph "
                           f"(no {_META!r} metadata); write graphs with g.save(path)")
    tensors = dict(safetensors.deserialize(blob))
    return json.loads(meta[_META]), tensors


def _value(tensors, key, slot):
    info = tensors[key]
    buf = bytes(info["data"])
    return np.frombuffer(buf, dtype=_np_dtype(slot.dtype.name)).reshape(slot.shape).copy()


def load(cls, path, device=None):
    """Read a graph file into a ``cls`` (:class:`burn.Graph`), state on ``device``."""
    doc, tensors = _read(path)
    if doc.get("format") != FORMAT:
        raise CaptureError(f"burn.Graph.load: {str(path)!r} has format {doc.get('format')!r}, expected {FORMAT!r}")
    if int(doc.get("version", 0)) > cls.VERSION:
        raise CaptureError(f"burn.Graph.load: {str(path)!r} is graph format version {doc['version']} (written by "
                           f"burn {doc.get('burn')}); this burn reads up to version {cls.VERSION}: upgrade burn")
    registry.ensure_loaded()
    plugins = doc.get("ops", {})
    for n in doc["nodes"]:
        if n["op"] not in registry.ops:
            info = plugins.get(n["op"], {})
            raise missing_op_error(n["op"], f"burn.Graph.load({str(path)!r})", info.get("plugin"),
                                   info.get("distribution"))
    nodes = [GraphNode(n["op"], {k: decode_attr(v) for k, v in n["attrs"].items()},
                       tuple(tuple(r) for r in n["in"]), tuple((tuple(s), dt.as_dtype(d)) for s, d in n["out"]))
             for n in doc["nodes"]]
    inputs, state = [_unslot(x) for x in doc["inputs"]], [_unslot(x) for x in doc["state"]]
    consts, hosts = [_unslot(x) for x in doc["consts"]], [_unslot(x) for x in doc["hosts"]]
    g = cls(nodes, inputs, state, consts, hosts, _tree(doc["outputs"], tuple),
            [(tuple(a), tuple(b)) for a, b in doc["updates"]], op_plugins=plugins, name=doc.get("name", "graph"))
    dev = _device(device)
    g.device = dev.inner() if dev.is_autodiff else dev
    g.const_values = [_value(tensors, f"const.{k}", s) for k, s in enumerate(consts)]
    refs = []
    for j, s in enumerate(state):
        t = tensor(_value(tensors, f"state.{j}", s), dtype=s.dtype, device=dev.autodiff() if s.autodiff else g.device)
        refs.append(lambda t=t: t)
    g.state_refs = refs
    for k, r in enumerate(doc.get("host_recipes") or [None] * len(hosts)):
        if r is not None:
            fn = make_host_fn(r[0], {p: decode_attr(v) for p, v in r[1].items()}, hosts[k].name)
            g.events.append(("host", k, fn))
            g.host_recipes[k] = fn.recipe
    return g
