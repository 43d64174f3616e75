"""Element-wise kernels as C source: one expression per primitive, any chain fused.

A group (the ``ops``/``outputs`` of a ``burn.fusion.FusedGroup``, or one op
alone) is rendered into ONE kernel: each thread computes one output element,
reads every input through its own layout (contiguous, a broadcast scalar, or
arbitrary strides with broadcasting as stride 0) and evaluates the chain in
registers; only the group's outputs are written. Layouts, shapes and
attribute values (``full``'s value, ``clip``'s bounds) are run-time
arguments, so one compiled kernel serves every shape and value of its
structure: compiling is the expensive part on every target.

Index arithmetic is 32-bit (backends check sizes); up to :data:`MAX_DIMS`
dimensions after the backend merged the ones it could.

Semantics are numpy's (NaN propagation of maximum/minimum, floor semantics of
``remainder`` and ``floor_divide``, round half to even, wrap-around of small
integers), so a backend's results match burn-flex.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import complex as _cx
from .dialect import DTYPE_INFO, Dialect

__all__ = ["MAX_DIMS", "UNROLL", "VECTOR", "ELEMENTWISE_OPS", "out_dtype", "op_params", "render_group",
           "RenderedKernel", "param_words", "supports", "vector_bytes"]

MAX_DIMS = 6
_LN2 = "0x1.62e42fefa39efp-1"
_SQRT1_2 = "0x1.6a09e667f3bcdp-1"

PREDICATES = {"isnan", "isinf", "isfinite", "signbit", "logical_not", "eq", "ne", "lt", "le", "gt", "ge",
              "logical_and", "logical_or", "logical_xor"}


def _k(d):
    return DTYPE_INFO[d][0]


# -- unary -------------------------------------------------------------------------------
# each rule: (x, T, O, C) -> expression of C type O or None (unsupported); T/O dtype names,
# C the dialect's ctype function. Results are cast to O by the caller.

def _float_fn(fn):
    def r(x, t, o, c):
        if _k(o) != "f":
            return None
        return f"{fn}(({c(o)}){x})"
    return r


def _int_identity_or(fn):
    def r(x, t, o, c):
        return x if _k(t) != "f" else f"{fn}({x})"
    return r


def _abs(x, t, o, c):
    k = _k(t)
    return f"fabs({x})" if k == "f" else x if k in "ub" else f"({x} < 0 ? -{x} : {x})"


def _sign(x, t, o, c):
    k = _k(t)
    if k == "f":
        return f"(isnan({x}) ? {x} : ({c(o)})(({x} > 0) - ({x} < 0)))"
    return f"(({x} > 0) - ({x} < 0))" if k == "i" else f"({x} > 0)"


def _relu(x, t, o, c):
    if _k(t) == "f":
        return f"((isnan({x}) || {x} > 0) ? {x} : ({c(o)})0)"
    return f"({x} > 0 ? {x} : ({c(o)})0)"


def _pred(ffn, default):
    def r(x, t, o, c):
        return f"({ffn}({x}) != 0)" if _k(t) == "f" else default
    return r


def _signbit(x, t, o, c):
    k = _k(t)
    return f"(signbit({x}) != 0)" if k == "f" else f"({x} < 0)" if k == "i" else "0"


def _floaty(expr):
    """A float-only rule written with ``{x}`` and ``{T}`` (the output C type)."""
    def r(x, t, o, c):
        if _k(o) != "f":
            return None
        return expr.format(x=f"(({c(o)}){x})", T=c(o))
    return r


UNARY = {
    "neg": lambda x, t, o, c: None if _k(t) == "b" else f"(-{x})",
    "positive": lambda x, t, o, c: x,
    "abs": _abs, "sign": _sign,
    "exp": _float_fn("exp"), "expm1": _float_fn("expm1"), "log": _float_fn("log"),
    "log1p": _float_fn("log1p"), "log2": _float_fn("log2"), "log10": _float_fn("log10"),
    "sqrt": _float_fn("sqrt"), "sin": _float_fn("sin"), "cos": _float_fn("cos"), "tan": _float_fn("tan"),
    "asin": _float_fn("asin"), "acos": _float_fn("acos"), "atan": _float_fn("atan"),
    "sinh": _float_fn("sinh"), "cosh": _float_fn("cosh"), "tanh": _float_fn("tanh"),
    "asinh": _float_fn("asinh"), "acosh": _float_fn("acosh"), "atanh": _float_fn("atanh"),
    "erf": _float_fn("erf"),
    "rsqrt": _floaty("(({T})1 / sqrt({x}))"),
    "square": lambda x, t, o, c: None if _k(t) == "b" else f"({x} * {x})",
    "sigmoid": _floaty("(({T})1 / (({T})1 + exp(-{x})))"),
    "relu": _relu,
    "gelu": _floaty("({x} * (erf({x} * ({T})" + _SQRT1_2 + ") + ({T})1) * ({T})0.5)"),
    "silu": _floaty("({x} * (({T})1 / (({T})1 + exp(-{x}))))"),
    "softplus": _floaty("(fmax({x}, ({T})0) + log1p(exp(-fabs({x}))))"),
    "floor": _int_identity_or("floor"), "ceil": _int_identity_or("ceil"),
    "trunc": _int_identity_or("trunc"), "round": _int_identity_or("rint"),
    "reciprocal": lambda x, t, o, c: None if _k(t) == "b" else f"(({c(o)})1 / {x})",
    "isnan": _pred("isnan", "0"), "isinf": _pred("isinf", "0"), "isfinite": _pred("isfinite", "1"),
    "signbit": _signbit,
    "logical_not": lambda x, t, o, c: f"({x} == 0)",
    "bitwise_invert": lambda x, t, o, c: None if _k(t) == "f" else f"(!{x})" if _k(t) == "b" else f"(~{x})",
    "conj": lambda x, t, o, c: x, "real": lambda x, t, o, c: x,
    "imag": lambda x, t, o, c: f"({c(o)})0",
    "angle": lambda x, t, o, c: None if _k(o) != "f" else f"atan2(({c(o)})0, ({c(o)}){x})",
}

# -- binary ------------------------------------------------------------------------------


def _arith(sym):
    def r(a, b, t, o, c):
        return None if _k(t) == "b" else f"({a} {sym} {b})"
    return r


def _helper(name):
    def r(a, b, t, o, c):
        return f"burn_{name}_{t}({a}, {b})" if (name, t) in _HELPERS_OK else None
    return r


def _maxmin(sym):
    def r(a, b, t, o, c):
        if _k(t) == "f":
            return f"((isnan({a}) || {a} {sym} {b}) ? {a} : {b})"
        return f"({a} {sym} {b} ? {a} : {b})"
    return r


def _fbin(fn):
    def r(a, b, t, o, c):
        return f"{fn}({a}, {b})" if _k(t) == "f" else None
    return r


def _bitwise(sym):
    def r(a, b, t, o, c):
        return None if _k(t) == "f" else f"({a} {sym} {b})"
    return r


BINARY = {
    "add": lambda a, b, t, o, c: f"({a} + {b})" if _k(t) != "b" else f"(({a} | {b}) != 0)",
    "sub": _arith("-"), "mul": lambda a, b, t, o, c: f"({a} * {b})" if _k(t) != "b" else f"({a} & {b})",
    "div": lambda a, b, t, o, c: f"({a} / {b})" if _k(t) == "f" else None,
    "pow": _helper("pow"), "remainder": _helper("remainder"), "floor_divide": _helper("floor_divide"),
    "logaddexp": _helper("logaddexp"), "nextafter": _helper("nextafter"),
    "maximum": _maxmin(">"), "minimum": _maxmin("<"),
    "atan2": _fbin("atan2"), "hypot": _fbin("hypot"), "copysign": _fbin("copysign"),
    "eq": lambda a, b, t, o, c: f"({a} == {b})", "ne": lambda a, b, t, o, c: f"({a} != {b})",
    "lt": lambda a, b, t, o, c: f"({a} < {b})", "le": lambda a, b, t, o, c: f"({a} <= {b})",
    "gt": lambda a, b, t, o, c: f"({a} > {b})", "ge": lambda a, b, t, o, c: f"({a} >= {b})",
    "logical_and": lambda a, b, t, o, c: f"(({a} != 0) && ({b} != 0))",
    "logical_or": lambda a, b, t, o, c: f"(({a} != 0) || ({b} != 0))",
    "logical_xor": lambda a, b, t, o, c: f"(({a} != 0) != ({b} != 0))",
    "bitwise_and": _bitwise("&"), "bitwise_or": _bitwise("|"), "bitwise_xor": _bitwise("^"),
    "make_complex": lambda a, b, t, o, c: None,      # rendered by _expr: it needs the dialect
}
_PARTS_OF = {"float32": "complex64", "float64": "complex128"}

ELEMENTWISE_OPS = frozenset(UNARY) | frozenset(BINARY) | {"where", "clip", "cast", "full"}

_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_FLOATS = ("float16", "bfloat16", "float32", "float64")
_HELPERS_OK = ({("pow", t) for t in _INTS + _FLOATS} | {("remainder", t) for t in _INTS + _FLOATS}
               | {("floor_divide", t) for t in _INTS + _FLOATS} | {("logaddexp", t) for t in _FLOATS}
               | {("nextafter", t) for t in _FLOATS})

# CUDA computes float16 / bfloat16 in float, which has no nextafter of theirs: step the 16-bit
# pattern itself (the value converts back exactly); a zero steps to the smallest subnormal of b's sign
_NEXTAFTER16 = {"float16": ("__half_as_ushort(__float2half(a))", "__half2float(__ushort_as_half(u))"),
                "bfloat16": ("(unsigned short)(__float_as_uint(a) >> 16)", "__uint_as_float(((unsigned int)u) << 16)")}


def _helper_source(name, t, dialect):
    """C source of a helper function (numpy's algorithm for the op)."""
    if _k(t) == "c":
        return _cx.helper_source(name, t, dialect)
    T = dialect.vtype(t)
    f = dialect.func_prefix
    k = _k(t)
    if name == "pow":
        if k == "f":
            return f"{f} {T} burn_pow_{t}({T} a, {T} b) {{ return pow(a, b); }}"
        return (f"{f} {T} burn_pow_{t}({T} a, {T} b) {{ {T} r = 1; {T} e = b; {T} x = a;"
                f" if (e < 0) return (a == 1) ? ({T})1 : (a == ({T})-1) ? (({T})((e & 1) ? -1 : 1)) : ({T})0;"
                f" while (e > 0) {{ if (e & 1) r = ({T})(r * x); x = ({T})(x * x); e >>= 1; }} return r; }}")
    if name == "remainder":
        if k == "f":
            return (f"{f} {T} burn_remainder_{t}({T} a, {T} b) {{ {T} m = fmod(a, b);"
                    f" if (b == 0) return m; if (m != 0) {{ if ((b < 0) != (m < 0)) m += b; }}"
                    f" else m = copysign(({T})0, b); return m; }}")
        if k == "u":
            return f"{f} {T} burn_remainder_{t}({T} a, {T} b) {{ return b == 0 ? 0 : a % b; }}"
        return (f"{f} {T} burn_remainder_{t}({T} a, {T} b) {{ if (b == 0) return 0; {T} m = a % b;"
                f" return (m != 0 && ((m < 0) != (b < 0))) ? ({T})(m + b) : m; }}")
    if name == "floor_divide":
        if k == "f":
            return (f"{f} {T} burn_floor_divide_{t}({T} a, {T} b) {{ if (b == 0) return a / b;"
                    f" {T} m = fmod(a, b); {T} d = (a - m) / b;"
                    f" if (m != 0 && ((b < 0) != (m < 0))) d -= 1;"
                    f" if (d != 0) {{ {T} fd = floor(d); if (d - fd > ({T})0.5) fd += 1; return fd; }}"
                    f" return copysign(({T})0, a / b); }}")
        if k == "u":
            return f"{f} {T} burn_floor_divide_{t}({T} a, {T} b) {{ return b == 0 ? 0 : a / b; }}"
        return (f"{f} {T} burn_floor_divide_{t}({T} a, {T} b) {{ if (b == 0) return 0; {T} q = a / b;"
                f" return ((a % b != 0) && ((a < 0) != (b < 0))) ? ({T})(q - 1) : q; }}")
    if name == "nextafter":
        if T == dialect.ctype(t):       # the dialect's own nextafter of the storage type
            return f"{f} {T} burn_nextafter_{t}({T} a, {T} b) {{ return nextafter(a, b); }}"
        get, put = _NEXTAFTER16[t]
        return (f"{f} {T} burn_nextafter_{t}({T} a, {T} b) {{ if (a != a || b != b) return a + b;"
                f" if (a == b) return b; unsigned short u = {get};"
                f" if ((u & 0x7fff) == 0) u = (b > 0) ? 1 : 0x8001; else if ((b > a) == (a > 0)) u += 1;"
                f" else u -= 1; return {put}; }}")
    if name == "logaddexp":
        return (f"{f} {T} burn_logaddexp_{t}({T} a, {T} b) {{ if (a == b) return a + ({T}){_LN2};"
                f" {T} d = a - b; if (d > 0) return a + log1p(exp(-d));"
                f" if (d <= 0) return b + log1p(exp(d)); return d; }}")
    raise KeyError(name)


def out_dtype(op: str, in_dtypes, attrs) -> str:
    """The result dtype name of element-wise ``op`` (the core's meta rules, restated).

    Example:
        >>> assert out_dtype("lt", ["int32", "int32"], {}) == "bool"
        >>> assert out_dtype("where", ["bool", "float32", "float32"], {}) == "float32"
    """
    if op in ("cast", "full"):
        d = attrs["dtype"]
        return getattr(d, "name", d)
    if op in PREDICATES:
        return "bool"
    if op == "where":
        return in_dtypes[1]
    if op == "make_complex":
        return _PARTS_OF[in_dtypes[0]]
    if op in ("abs", "real", "imag", "angle") and _k(in_dtypes[0]) == "c":
        return _cx.PART[in_dtypes[0]]
    if op == "angle" and _k(in_dtypes[0]) != "f":
        return "float32"
    return in_dtypes[0]


def op_params(op: str, attrs, out: str) -> list:
    """The run-time scalar arguments of ``op``: ``[(dtype, value)]``.

    Values are arguments, not literals, so every value shares one compiled kernel.

    Example:
        >>> assert op_params("clip", {"min": 0.0, "max": None}, "float32")[1] == ("float32", float("inf"))
    """
    if op == "full":
        v = attrs["value"]
        if _k(out) == "b":
            v = bool(v)
        return [(out, v)]
    if op == "clip":
        lo, hi = attrs.get("min"), attrs.get("max")
        if _k(out) == "c":          # numpy has no clip of complex: the renderer refuses it
            return [(out, 0), (out, 0)]
        if _k(out) == "f":
            return [(out, -float("inf") if lo is None else float(lo)),
                    (out, float("inf") if hi is None else float(hi))]
        import numpy as np
        info = np.iinfo(np.dtype(out if out != "bool" else "uint8"))
        lo = info.min if lo is None else min(max(int(lo), info.min), info.max)
        hi = info.max if hi is None else min(max(int(hi), info.min), info.max)
        return [(out, lo), (out, hi)]
    return []


def _expr(op, args, in_dtypes, out, params, c, dialect):
    if op == "make_complex":
        return dialect.make(out, args[0], args[1]) if in_dtypes[0] == in_dtypes[1] in _PARTS_OF else None
    if _k(out) == "c" or any(_k(t) == "c" for t in in_dtypes):
        return _cx.expr(op, args, list(in_dtypes), out, params, dialect, _k)
    if op == "cast":
        t = in_dtypes[0]
        if _k(out) == "b":
            return f"({args[0]} != 0)"
        return args[0] if t != "bool" else f"({args[0]} != 0)"
    if op == "full":
        return params[0]
    if op == "where":
        return f"({args[0]} ? {args[1]} : {args[2]})"
    if op == "clip":
        x, lo, hi = args[0], params[0], params[1]
        return f"(({x} < {lo} ? {lo} : {x}) > {hi} ? {hi} : ({x} < {lo} ? {lo} : {x}))"
    if op in UNARY and len(args) == 1:
        return UNARY[op](args[0], in_dtypes[0], out, c)
    if op in BINARY and len(args) == 2:
        return BINARY[op](args[0], args[1], in_dtypes[0], out, c)
    return None


def supports(op: str, in_dtypes, dialect: Dialect, attrs=None) -> bool:
    """Can ``op`` be rendered for these input dtypes?

    Example:
        >>> from burn.codegen import OPENCL
        >>> assert supports("exp", ["float32"], OPENCL) and not supports("bitwise_and", ["float32"] * 2, OPENCL)
    """
    if op not in ELEMENTWISE_OPS:
        return False
    attrs = attrs or {}
    try:
        out = out_dtype(op, in_dtypes, attrs)
    except KeyError:
        return False
    names = [f"x{i}" for i in range(len(in_dtypes))]
    params = [f"p{i}" for i in range(len(op_params(op, attrs, out)) if op in ("clip", "full") else 0)]
    if op == "clip":
        params = ["p0", "p1"]
    return _expr(op, names, list(in_dtypes), out, params, dialect.vtype, dialect) is not None


@dataclass
class RenderedKernel:
    """A rendered kernel: ``source`` (helpers + kernel), its ``name``, the dtypes
    of its outputs and run-time scalar params, and the ``words`` of its index struct."""
    name: str
    source: str
    helpers: tuple
    out_dtypes: tuple
    param_dtypes: tuple
    words: int


def param_words(n_in: int) -> int:
    """Length (in 32-bit ints) of the index struct of a kernel with ``n_in`` inputs:
    ``[n, nd, shape[MAX_DIMS], per input (offset, mode, strides[MAX_DIMS])]``.
    Mode 0: contiguous like the output; 1: one element (broadcast scalar); 2: strided
    (nd > 0 then, and the shape holds the output's merged dimensions).

    Example:
        >>> assert param_words(2) == 2 + MAX_DIMS + 2 * (2 + MAX_DIMS)
    """
    return 2 + MAX_DIMS + n_in * (2 + MAX_DIMS)


UNROLL = 4      # elements per thread of the ``name_u<pattern>`` variants


def _render_chain(ops, in_dtypes, dialect, in_names, sfx=""):
    """The chain's statements ``<T> v<j><sfx> = <expr>;`` reading inputs ``in_names``.

    Returns ``(lines, helpers, param_dtypes, value_dtypes)``; run-time scalar params are
    ``p<i>`` whatever the suffix, so every copy of the chain shares them."""
    c = dialect.vtype
    n_in = len(in_dtypes)
    types = list(in_dtypes)        # dtype per env slot: inputs, then op results
    helpers, body, param_dtypes, op_vals = [], [], [], []
    for j, (op, attrs, args) in enumerate(ops):
        slots = [k if src == "in" else n_in + k for src, k in args]
        names = [in_names[k] if src == "in" else f"v{k}{sfx}" for src, k in args]
        ins = [types[s] for s in slots]
        out = out_dtype(op, ins, attrs)
        ps = []
        for pd, _ in op_params(op, attrs, out):
            ps.append(f"p{len(param_dtypes)}")
            param_dtypes.append(pd)
        e = _expr(op, names, ins, out, ps, c, dialect)
        if e is None:
            raise KeyError(f"codegen: op '{op}' cannot be rendered for dtypes {ins}")
        for h in ("pow", "remainder", "floor_divide", "logaddexp", "nextafter"):
            if f"burn_{h}_" in e:
                key = (h, ins[0])
                if key not in helpers:
                    helpers.append(key)
        if "burn_c" in e:
            helpers += [h for h in _cx.helper_keys(e) if h not in helpers]
        if _k(out) == "c":
            # complex expressions are complex-typed already; a cast would be OpenCL's vector
            # literal, which copies a scalar into both parts
            body.append(f"  {c(out)} v{j}{sfx} = {e};")
        else:
            body.append(f"  {c(out)} v{j}{sfx} = ({c(out)})({e});")
        types.append(out)
        op_vals.append(out)
    return body, helpers, param_dtypes, op_vals


def _zero(dtype, dialect):
    """A zero of ``dtype``'s register type (complex: both parts)."""
    if _k(dtype) == "c":
        return dialect.make(dtype, "0", "0")
    return f"({dialect.vtype(dtype)})0"


def _unrolled(name, params, pat, ops, in_dtypes, outputs, dialect, unroll):
    """``name_u<pat>``: thread t of block b computes elements ``(b * unroll + k) * L + t``
    for k < unroll (L the block size), so each of a warp's loads is one coalesced run
    and nothing is assumed about alignment. Every load of every k is issued first (the
    unroll * inputs loads are in flight together: what a latency-bound kernel lacks),
    then the chains, then the stores; each k is guarded by ``i_k < n``. Broadcast-scalar
    inputs (bit k of ``pat`` set) are read once.

    Indices are ``int`` like the other kernels': exact for n < 2**31 when unroll * L
    divides 2**31 (powers of two), as the launchers use."""
    if not (dialect.group_id and dialect.local_id and dialect.local_size):
        raise ValueError(f"codegen ({dialect.name}): the dialect has no work-group ids; "
                         f"render '{name}' without unrolled variants")
    c = dialect.vtype
    gid, lid, ls = dialect.group_id, dialect.local_id, dialect.local_size
    lines = [f"{dialect.kernel_decl(f'{name}_u{pat}', params)} {{",
             "  int n = p.v[0];"]
    # the arithmetic stays in the ids' unsigned type until the final int
    lines += [f"  int i{u} = (int)(({gid} * {unroll} + {u}) * {ls} + {lid});" for u in range(unroll)]
    body = []
    for u in range(unroll):
        in_names = [f"x{k}" if pat >> k & 1 else f"x{k}_{u}" for k in range(len(in_dtypes))]
        body += _render_chain(ops, in_dtypes, dialect, in_names, f"_{u}")[0]
    text = "\n".join(body)
    loads = []
    for k, t in enumerate(in_dtypes):
        if not re.search(rf"\bx{k}(_0)?\b", text):     # an input the chain ignores (isfinite of ints)
            continue
        b = 2 + MAX_DIMS + k * (2 + MAX_DIMS)
        if pat >> k & 1:
            loads.append(f"  {c(t)} x{k} = in{k}[p.v[{b}]];")
            continue
        # past the end a register zero (no load): the chain then computes on defined values
        loads += [f"  {c(t)} x{k}_{u} = i{u} < n ? ({c(t)})in{k}[p.v[{b}] + i{u}] : {_zero(t, dialect)};"
                  for u in range(unroll)]
    stores = []
    for u in range(unroll):
        stores.append(f"  if (i{u} < n) {{ " + " ".join(f"out{q}[i{u}] = v{j}_{u};" for q, j in enumerate(outputs))
                      + " }")
    return lines + loads + body + stores + ["}"]


VECTOR = 4      # elements per thread of the ``name_v<pattern>`` variants (CUDA only)

# CUDA storage type -> (vector type, vectors per VECTOR elements): one 16-byte load for 4-byte
# types (what PyTorch's float32 kernels issue), two for 8-byte ones, 8 bytes for the halves
# (loaded as raw bits, as uint2, and widened lane by lane), 4 bytes for the 1-byte types
_CUDA_VEC = {"float": ("float4", 1), "int": ("int4", 1), "double": ("double2", 2), "long long": ("longlong2", 2),
             "unsigned char": ("uchar4", 1), "signed char": ("char4", 1), "__half": ("uint2", 1),
             "__nv_bfloat16": ("uint2", 1), "short": ("short4", 1), "unsigned short": ("ushort4", 1),
             "unsigned int": ("uint4", 1), "unsigned long long": ("ulonglong2", 2)}
_HALF_BITS = {"__half": ("__ushort_as_half", "__half_as_ushort"),
              "__nv_bfloat16": ("__ushort_as_bfloat16", "__bfloat16_as_ushort")}


def vector_bytes(dtype: str) -> int:
    """The alignment (bytes) a ``name_v<pattern>`` kernel needs of a ``dtype`` array it
    reads or writes: the size of its vector load (4 elements, at most 16 bytes per load).

    >>> assert vector_bytes("float32") == 16 and vector_bytes("float16") == 8 and vector_bytes("bool") == 4
    """
    return min(16, VECTOR * DTYPE_INFO[dtype][1])


def _lanes(per, r):
    """The VECTOR lane expressions of vector register(s) ``r`` (``r.x`` .. or ``ra.x, ra.y, rb.x, rb.y``)."""
    fields = "xyzw"[:VECTOR // per]
    return [f"{r}{'ab'[i // len(fields)] if per > 1 else ''}.{fields[i % len(fields)]}" for i in range(VECTOR)]


def _vector(name, params, pat, ops, in_dtypes, outputs, out_dtypes, dialect):
    """``name_v<pat>`` (CUDA): thread t computes elements 4t .. 4t+3 with ONE aligned vector
    load per non-scalar input (``_CUDA_VEC``) and one vector store per output, every load
    before any computation, every computation before any store; the thread t == n / 4 computes
    the n % 4 last elements with scalar code. Launch ceil(n / VECTOR) threads. The launcher
    checks that every non-scalar input and every output is aligned to :func:`vector_bytes`
    of its dtype (burn-cuda's index structs hold element offsets 0: the pointer is the array's)."""
    if dialect.name != "cuda":
        raise ValueError(f"codegen ({dialect.name}): vector variants are CUDA C only; render '{name}' "
                         f"without vector=")
    c, S = dialect.vtype, dialect.ctype
    for t in list(in_dtypes) + list(out_dtypes):
        if S(t) not in _CUDA_VEC:
            raise KeyError(f"codegen: '{name}' has no vector variant for dtype {t} (complex values run the "
                           f"plain or unrolled kernels)")
    body = []
    for u in range(VECTOR):
        in_names = [f"x{k}" if pat >> k & 1 else f"x{k}_{u}" for k in range(len(in_dtypes))]
        body += ["  " + ln for ln in _render_chain(ops, in_dtypes, dialect, in_names, f"_{u}")[0]]
    tail = ["    " + ln for ln in _render_chain(ops, in_dtypes, dialect, [f"x{k}" for k in range(len(in_dtypes))])[0]]
    text = "\n".join(body)
    used = [k for k in range(len(in_dtypes)) if re.search(rf"\bx{k}(_0)?\b", text)]
    lines = [f"{dialect.kernel_decl(f'{name}_v{pat}', params)} {{",
             "  int n = p.v[0];",
             f"  int t = (int)({dialect.global_id});",
             f"  int nv = n / {VECTOR};",
             "  if (t > nv) return;",
             f"  int i0 = t * {VECTOR};      // t <= n / {VECTOR}: no overflow"]
    raw, unpack, tail_loads = [], [], []
    for k in used:
        t = in_dtypes[k]
        b = 2 + MAX_DIMS + k * (2 + MAX_DIMS)
        if pat >> k & 1:
            lines.append(f"  {c(t)} x{k} = in{k}[p.v[{b}]];")
            continue
        tail_loads.append(f"      {c(t)} x{k} = in{k}[p.v[{b}] + i];")
        vec, per = _CUDA_VEC[S(t)]
        q = f"reinterpret_cast<const {vec}*>(in{k} + p.v[{b}] + i0)"
        if per == 1:
            raw.append(f"    {vec} r{k} = *{q};")
        else:
            raw += [f"    const {vec}* q{k} = {q};", f"    {vec} r{k}a = q{k}[0];", f"    {vec} r{k}b = q{k}[1];"]
        if S(t) in _HALF_BITS:
            frombits = _HALF_BITS[S(t)][0]
            lanes = [f"r{k}.x & 0xffffu", f"r{k}.x >> 16", f"r{k}.y & 0xffffu", f"r{k}.y >> 16"]
            unpack += [f"    {c(t)} x{k}_{u} = ({c(t)}){frombits}((unsigned short)({ln}));"
                       for u, ln in enumerate(lanes)]
        else:
            unpack += [f"    {c(t)} x{k}_{u} = ({c(t)}){ln};" for u, ln in enumerate(_lanes(per, f"r{k}"))]
    stores, tail_stores = [], []
    for q, (j, o) in enumerate(zip(outputs, out_dtypes)):
        vec, per = _CUDA_VEC[S(o)]
        tail_stores.append(f"      out{q}[i] = v{j};")
        dst = f"reinterpret_cast<{vec}*>(out{q} + i0)"
        if S(o) in _HALF_BITS:
            tobits = _HALF_BITS[S(o)][1]
            h = [f"(unsigned){tobits}(({S(o)})(v{j}_{u}))" for u in range(VECTOR)]
            stores += [f"    {vec} w{q};", f"    w{q}.x = {h[0]} | ({h[1]} << 16);",
                       f"    w{q}.y = {h[2]} | ({h[3]} << 16);", f"    *{dst} = w{q};"]
        elif per == 1:
            stores.append(f"    *{dst} = make_{vec}({', '.join(f'v{j}_{u}' for u in range(VECTOR))});")
        else:
            stores += [f"    {vec}* s{q} = {dst};",
                       f"    s{q}[0] = make_{vec}(v{j}_0, v{j}_1);", f"    s{q}[1] = make_{vec}(v{j}_2, v{j}_3);"]
    lines += ["  if (t < nv) {"] + raw + unpack + body + stores + ["  } else {",
              "    for (int i = i0; i < n; ++i) {"] + tail_loads + tail + tail_stores + ["    }", "  }", "}"]
    return lines


def render_group(name: str, ops, in_dtypes, outputs, dialect: Dialect, patterns=(), general=True,
                 unrolled=(), unroll=UNROLL, vector=()) -> RenderedKernel:
    """Render a chain of element-wise ops as one kernel.

    Entry points: ``name`` reads any layout (see :func:`param_words`); for each
    ``pattern`` in ``patterns`` also ``name_c<pattern>``, a kernel without index
    arithmetic for inputs that are all contiguous (bit k of the pattern 0) or
    broadcast scalars (bit k 1), one element per thread; for each pattern in
    ``unrolled`` ``name_u<pattern>``, the same layouts with ``unroll`` elements per
    thread, all loads issued before any computation (launch ceil(n / (unroll * L))
    blocks of L threads: for large tensors, where one load in flight per thread leaves
    a GPU's memory bandwidth unused); for each pattern in ``vector`` (CUDA only)
    ``name_v<pattern>``, :data:`VECTOR` consecutive elements per thread moved with aligned
    vector loads and stores (launch ceil(n / VECTOR) threads; every array it moves must be
    aligned to :func:`vector_bytes`). ``general=False`` leaves out ``name``.

    ``ops`` is a list of ``(op, attrs, args)`` with args ``("in", k)`` or
    ``("op", j)`` (as in ``burn.fusion.FusedGroup``); ``outputs`` the op indices
    written out. Raises KeyError naming an op it cannot render.

    Example:
        >>> from burn.codegen import OPENCL
        >>> ops = [("mul", {}, [("in", 0), ("in", 1)]), ("exp", {}, [("op", 0)])]
        >>> k = render_group("k", ops, ["float32", "float32"], [1], OPENCL)
        >>> assert "exp(" in k.source and k.out_dtypes == ("float32",)
        >>> u = render_group("k", ops, ["float32", "float32"], [1], OPENCL, general=False, unrolled=(2,))
        >>> assert "void k_u2(" in u.source and u.source.count("exp(") == 4
        >>> from burn.codegen import CUDA
        >>> v = render_group("k", ops, ["float32", "float32"], [1], CUDA, general=False, vector=(0,))
        >>> assert "void k_v0(" in v.source and v.source.count("reinterpret_cast<const float4*>") == 2
    """
    c = dialect.vtype          # values live in registers in the compute type; pointers keep storage
    n_in = len(in_dtypes)
    words = param_words(n_in)
    body, helpers, param_dtypes, op_vals = _render_chain(ops, in_dtypes, dialect, [f"x{k}" for k in range(n_in)])
    struct = f"burn_idx{words}"
    params = [f"{struct} p"]
    params += [f"{dialect.ptr(op_vals[j])} out{q}" for q, j in enumerate(outputs)]
    params += [f"{dialect.ptr(t, const=True)} in{k}" for k, t in enumerate(in_dtypes)]
    params += [f"const {c(d)} p{i}" for i, d in enumerate(param_dtypes)]
    # ``name_c<bits>`` kernels (no index arithmetic: drivers vectorize them) serve launches
    # whose inputs are all contiguous (bit k = 0) or broadcast scalars (bit k = 1)
    lines = []
    for pat in patterns:
        lines += [f"{dialect.kernel_decl(f'{name}_c{pat}', params)} {{",
                  f"  int i = {dialect.global_id};",
                  "  if (i >= p.v[0]) return;"]
        for k, t in enumerate(in_dtypes):
            b = 2 + MAX_DIMS + k * (2 + MAX_DIMS)
            lines.append(f"  {c(t)} x{k} = in{k}[p.v[{b}]{'' if pat >> k & 1 else ' + i'}];")
        lines += body
        lines += [f"  out{q}[i] = v{j};" for q, j in enumerate(outputs)]
        lines.append("}")
    for pat in unrolled:
        lines += _unrolled(name, params, pat, ops, in_dtypes, outputs, dialect, int(unroll))
    for pat in vector:
        lines += _vector(name, params, pat, ops, in_dtypes, outputs, [op_vals[j] for j in outputs], dialect)
    if not general:
        return RenderedKernel(name, "\n".join(lines), tuple(helpers), tuple(op_vals[j] for j in outputs),
                              tuple(param_dtypes), words)
    lines += [f"{dialect.kernel_decl(name, params)} {{",
              f"  int i = {dialect.global_id};",
              "  if (i >= p.v[0]) return;"]
    if n_in:
        lines += ["  int nd = p.v[1];",
                  f"  int c[{MAX_DIMS}];",
                  "  if (nd > 0) {",
                  "    int r = i;",
                  f"    for (int d = {MAX_DIMS - 1}; d >= 0; --d) {{",
                  "      if (d < nd) { int s = p.v[2 + d]; c[d] = r % s; r /= s; } else c[d] = 0;",
                  "    }",
                  "  }"]
    for k, t in enumerate(in_dtypes):
        b = 2 + MAX_DIMS + k * (2 + MAX_DIMS)
        lines += [f"  int j{k} = p.v[{b}];",
                  f"  if (p.v[{b + 1}] == 0) j{k} += i;",
                  f"  else if (p.v[{b + 1}] == 2) for (int d = 0; d < nd; ++d) j{k} += c[d] * p.v[{b + 2} + d];",
                  f"  {c(t)} x{k} = in{k}[j{k}];"]
    lines += body
    lines += [f"  out{q}[i] = v{j};" for q, j in enumerate(outputs)]
    lines.append("}")
    src = "\n".join(lines)
    return RenderedKernel(name, src, tuple(helpers), tuple(op_vals[j] for j in outputs), tuple(param_dtypes),
                          words)


def program_source(kernels, dialect: Dialect, extra: str = "") -> str:
    """One program holding ``kernels`` (RenderedKernel), their helpers and index structs.

    Example:
        >>> from burn.codegen import OPENCL
        >>> k = render_group("k", [("remainder", {}, [("in", 0), ("in", 1)])], ["int32"] * 2, [0], OPENCL)
        >>> assert "burn_remainder_int32" in program_source([k], OPENCL)
    """
    parts = [dialect.preamble]
    text = "".join(k.source for k in kernels)
    parts += [line for marker, line in dialect.headers if marker in text]
    if any(_k(d) == "f" and DTYPE_INFO[d][1] == 8 for k in kernels for d in k.out_dtypes + k.param_dtypes) \
            or "double" in "".join(k.source for k in kernels):
        if dialect.name == "opencl":
            parts.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if dialect.name == "opencl" and "half" in "".join(k.source for k in kernels):
        parts.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
    seen_words, seen_helpers = set(), set()
    for k in kernels:
        if k.words not in seen_words:
            seen_words.add(k.words)
            parts.append(f"typedef struct {{ int v[{k.words}]; }} burn_idx{k.words};")
        for h in k.helpers:
            if h not in seen_helpers:
                seen_helpers.add(h)
                parts.append(_helper_source(h[0], h[1], dialect))
    parts.append(extra)
    parts += [k.source for k in kernels]
    return "\n".join(p for p in parts if p)
