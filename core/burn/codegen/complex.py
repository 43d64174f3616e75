"""Complex arithmetic for the element-wise renderer: complex64 / complex128.

A complex value is a two-component vector (``float2`` / ``double2`` in both
OpenCL and CUDA; ``.x`` the real part, ``.y`` the imaginary part), built
with the dialect's constructor (:meth:`~burn.codegen.dialect.Dialect.make`).
Neither target has complex operators: OpenCL's vector ``*`` is
component-wise and CUDA's ``float2`` has none, so everything but the simplest
expressions is a helper function ``burn_c<name>_<dtype>`` placed in the
program's preamble (with the helpers it calls, see :func:`helper_keys`).

Numerics follow numpy: division and reciprocal by Smith's algorithm (numpy's
loops), ``abs`` via ``hypot``, ``sign`` as ``z / |z|``, lexicographic
comparisons and ``maximum``/``minimum`` with numpy's NaN rules, ``pow`` with
numpy's exact small integer powers, ``expm1``/``log1p`` as numpy's
``nc_expm1``/``nc_log1p``, ``sqrt``/``tanh`` as the C library's
``csqrt``/``ctanh``. The inverse trigonometric and hyperbolic functions use
their principal-branch log/sqrt forms, odd Taylor series for small ``|z|``
and ``log(2z)`` for large ``|z|`` (numpy's relative accuracy over 1e-6..1e6);
at infinite inputs they may give NaN parts where the C library gives limits.

Example:
    >>> from burn.codegen import OPENCL, render_group, program_source
    >>> k = render_group("k", [("mul", {}, [("in", 0), ("in", 1)])], ["complex64"] * 2, [0], OPENCL)
    >>> assert "burn_cmul_complex64(x0, x1)" in k.source
    >>> assert "float2 burn_cmul_complex64" in program_source([k], OPENCL)
"""
from __future__ import annotations

import re

__all__ = ["PART", "is_complex", "expr", "helper_keys", "helper_source"]

# complex dtype -> the dtype of its parts
PART = {"complex64": "float32", "complex128": "float64"}
_HALF_PI = "0x1.921fb54442d18p+0"
_LOG2E = "0x1.71547652b82fep+0"
_LOG10E = "0x1.bcb7b1526e50ep-2"
_HELPER = re.compile(r"burn_(c[a-z0-9]+)_(complex64|complex128)\(")


def is_complex(dtype) -> bool:
    """True for complex64 / complex128 (a dtype name or a ``burn.DType``).

    >>> assert is_complex("complex128") and not is_complex("float64")
    """
    return getattr(dtype, "name", dtype) in PART


def _h(name, t, *args):
    return f"burn_c{name}_{t}({', '.join(args)})"


def _nz(x):
    return f"({x}.x != 0 || {x}.y != 0)"


# numpy's lexicographic order of complex numbers (loops.c.src CGE/CLE/CGT/CLT)
def _lex(sym, eq_sym):
    def r(a, b):
        return (f"(({a}.x {sym} {b}.x && !isnan({a}.y) && !isnan({b}.y)) || "
                f"({a}.x == {b}.x && {a}.y {eq_sym} {b}.y))")
    return r


_LEX = {"gt": _lex(">", ">"), "ge": _lex(">", ">="), "lt": _lex("<", "<"), "le": _lex("<", "<=")}

# unary ops computed by a helper of the same name (its dependencies in _DEPS)
_UNARY_HELPERS = {"exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh",
                  "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sign", "sigmoid"}


def _unary(op, x, t, o, d):
    mk = lambda re_, im: d.make(t, re_, im)  # noqa: E731
    if op == "neg":
        return mk(f"-{x}.x", f"-{x}.y")
    if op == "positive":
        return x
    if op == "conj":
        return mk(f"{x}.x", f"-{x}.y")
    if op == "real":
        return f"{x}.x"
    if op == "imag":
        return f"{x}.y"
    if op == "abs":
        return f"hypot({x}.x, {x}.y)"
    if op == "angle":
        return f"atan2({x}.y, {x}.x)"
    if op == "square":
        return _h("mul", t, x, x)      # numpy: (r*r - i*i, r*i + i*r), the product's formula
    if op == "reciprocal":
        return _h("recip", t, x)
    if op == "isnan":
        return f"(isnan({x}.x) || isnan({x}.y))"
    if op == "isinf":
        return f"(isinf({x}.x) || isinf({x}.y))"
    if op == "isfinite":
        return f"(isfinite({x}.x) && isfinite({x}.y))"
    if op == "logical_not":
        return f"({x}.x == 0 && {x}.y == 0)"
    if op in _UNARY_HELPERS:
        return _h(op, t, x)
    return None


def _binary(op, a, b, t, o, d):
    mk = lambda re_, im: d.make(t, re_, im)  # noqa: E731
    if op == "add":
        return mk(f"{a}.x + {b}.x", f"{a}.y + {b}.y")
    if op == "sub":
        return mk(f"{a}.x - {b}.x", f"{a}.y - {b}.y")
    if op in ("mul", "div", "pow"):
        return _h(op, t, a, b)
    if op == "eq":
        return f"({a}.x == {b}.x && {a}.y == {b}.y)"
    if op == "ne":
        return f"({a}.x != {b}.x || {a}.y != {b}.y)"
    if op in _LEX:
        return _LEX[op](a, b)
    if op in ("maximum", "minimum"):
        keep = _LEX["ge" if op == "maximum" else "le"](a, b)
        return f"((isnan({a}.x) || isnan({a}.y) || {keep}) ? {a} : {b})"
    if op == "logical_and":
        return f"({_nz(a)} && {_nz(b)})"
    if op == "logical_or":
        return f"({_nz(a)} || {_nz(b)})"
    if op == "logical_xor":
        return f"({_nz(a)} != {_nz(b)})"
    return None


def _cast(x, t, o, d, kind):
    """numpy's casts: real -> complex has imaginary part 0, complex -> real keeps the real
    part (numpy warns), complex -> bool tests both parts."""
    if is_complex(o):
        R = d.ctype(PART[o])
        if t == o:
            return x
        if is_complex(t):
            return d.make(o, f"({R}){x}.x", f"({R}){x}.y")
        re_ = f"({x} != 0)" if t == "bool" else x
        return d.make(o, f"({R}){re_}", f"({R})0")
    if kind(o) == "b":
        return _nz(x)
    return f"{x}.x"


def expr(op, args, in_dtypes, out, params, dialect, kind):
    """The C expression of ``op`` when a complex dtype is involved, or None (unsupported).

    ``kind(dtype)`` is the renderer's kind letter. Complex results are complex-typed
    expressions (never a scalar to be widened by a cast: OpenCL's ``(float2)(s)``
    would copy ``s`` into both parts).

    >>> from burn.codegen import OPENCL
    >>> assert expr("add", ["a", "b"], ["complex64"] * 2, "complex64", [], OPENCL, None) == \\
    ...     "(float2)(a.x + b.x, a.y + b.y)"
    """
    if op == "cast":
        return _cast(args[0], in_dtypes[0], out, dialect, kind)
    if op == "full":
        return params[0] if is_complex(out) else None
    if op == "where":
        return f"({args[0]} ? {args[1]} : {args[2]})" if in_dtypes[1] == in_dtypes[2] else None
    t = in_dtypes[0]
    if not is_complex(t) or any(d != t for d in in_dtypes):
        return None
    if len(args) == 1:
        return _unary(op, args[0], t, out, dialect)
    if len(args) == 2:
        return _binary(op, args[0], args[1], t, out, dialect)
    return None


# -- helper functions -------------------------------------------------------------------------

_DEPS = {
    "rsqrt": ("sqrt", "recip"), "sigmoid": ("exp", "recip"), "tan": ("tanh",), "log2": ("log",), "log10": ("log",),
    "asinh": ("mul", "sqrt", "log"), "asin": ("mul", "sqrt", "log", "asinh"),
    "acos": ("mul", "sqrt", "log", "asinh", "asin"), "acosh": ("mul", "sqrt", "log"),
    "atanh": ("mul", "log1p"), "atan": ("mul", "log1p", "atanh"), "pow": ("mul", "div", "exp", "log"),
}


def helper_keys(expression: str) -> list:
    """``(name, dtype)`` of the helpers ``expression`` calls, dependencies first.

    >>> assert helper_keys("burn_casin_complex64(x0)")[-2:] == [("casinh", "complex64"), ("casin", "complex64")]
    """
    keys = []
    for name, t in _HELPER.findall(expression):
        for n in _DEPS.get(name[1:], ()) + (name[1:],):
            k = ("c" + n, t)
            if k not in keys:
                keys.append(k)
    return keys


def _series(T, R, mk, call, coefs, t):
    """``if |z| < r: return z (1 + c1 z^2 + c2 z^4 + c3 z^6)``: the next term is below the
    dtype's epsilon there (r = 1/8 for complex64, 1/128 for complex128)."""
    c = [f"(({R}){a.split('/')[0]} / ({R}){a.split('/')[1]})" for a in coefs]
    r = "0.125" if t == "complex64" else "0.0078125"
    return (f"if (fabs(z.x) < ({R}){r} && fabs(z.y) < ({R}){r}) {{ {T} z2 = {call('mul', 'z', 'z')};"
            f" {T} s = {mk(f'{c[2]} * z2.x', f'{c[2]} * z2.y')}; s.x += {c[1]}; s = {call('mul', 's', 'z2')};"
            f" s.x += {c[0]}; s = {call('mul', 's', 'z2')}; s.x += ({R})1; return {call('mul', 's', 'z')}; }}")


def helper_source(name: str, t: str, dialect) -> str:
    """C source of helper ``burn_<name>_<t>`` (``name`` starts with ``c``).

    >>> from burn.codegen import CUDA
    >>> assert "make_double2" in helper_source("cmul", "complex128", CUDA)
    """
    T, R = dialect.ctype(t), dialect.ctype(PART[t])
    f = dialect.func_prefix
    mk = lambda re_, im: dialect.make(t, re_, im)  # noqa: E731
    n = name[1:]

    def fn(body, args="T z"):
        return f"{f} {T} burn_{name}_{t}({args.replace('T ', T + ' ')}) {{ {body} }}"

    def call(h, *a):
        return _h(h, t, *a)

    zr = f"{R} a = z.x, b = z.y;"
    if n == "mul":
        return fn(f"return {mk('p.x * q.x - p.y * q.y', 'p.x * q.y + p.y * q.x')};", "T p, T q")
    if n == "div":      # Smith's algorithm, as numpy's complex true_divide loop
        return fn(f"{R} ar = fabs(q.x), ai = fabs(q.y);"
                  f" if (ar >= ai) {{"
                  f" if (ar == 0 && ai == 0) return {mk('p.x / ar', 'p.y / ar')};"
                  f" {R} rat = q.y / q.x, scl = ({R})1 / (q.x + q.y * rat);"
                  f" return {mk('(p.x + p.y * rat) * scl', '(p.y - p.x * rat) * scl')}; }}"
                  f" {R} rat = q.x / q.y, scl = ({R})1 / (q.y + q.x * rat);"
                  f" return {mk('(p.x * rat + p.y) * scl', '(p.y * rat - p.x) * scl')};", "T p, T q")
    if n == "recip":    # numpy's complex reciprocal loop
        return fn(f"{zr} if (fabs(b) <= fabs(a)) {{ {R} r = b / a, d = a + b * r;"
                  f" return {mk(f'({R})1 / d', '-r / d')}; }}"
                  f" {R} r = a / b, d = a * r + b; return {mk('r / d', f'-({R})1 / d')};")
    if n == "sign":     # numpy >= 2: z / |z|, with its rules for zeros, infinities and NaN
        return fn(f"{zr} {R} m = hypot(a, b);"
                  f" if (isnan(m)) return {mk('(' + R + ')NAN', '(' + R + ')NAN')};"
                  f" if (isinf(m)) {{ if (isinf(a)) return isinf(b) ? {mk('(' + R + ')NAN', '(' + R + ')NAN')}"
                  f" : {mk(f'copysign(({R})1, a)', f'({R})0')}; return {mk(f'({R})0', f'copysign(({R})1, b)')}; }}"
                  f" if (m == 0) return {mk(f'({R})0', f'({R})0')}; return {mk('a / m', 'b / m')};")
    if n == "exp":
        return fn(f"{zr} if (b == 0) return {mk('exp(a)', 'b')};"
                  f" if (isinf(a) && a < 0 && !isfinite(b)) return {mk(f'({R})0', f'copysign(({R})0, b)')};"
                  f" {R} e = exp(a);"
                  f" return {mk('e * cos(b)', 'e * sin(b)')};")
    if n == "expm1":    # numpy's nc_expm1
        return fn(f"{zr} {R} s = sin(b * ({R})0.5);"
                  f" return {mk(f'expm1(a) * cos(b) - ({R})2 * s * s', 'exp(a) * sin(b)')};")
    if n == "log":
        return fn(f"return {mk('log(hypot(z.x, z.y))', 'atan2(z.y, z.x)')};")
    if n == "log1p":    # numpy's nc_log1p
        return fn(f"{R} a = z.x + ({R})1; return {mk('log(hypot(a, z.y))', 'atan2(z.y, a)')};")
    if n in ("log2", "log10"):
        c = _LOG2E if n == "log2" else _LOG10E
        return fn(f"{T} l = {call('log', 'z')}; return {mk(f'l.x * ({R}){c}', f'l.y * ({R}){c}')};")
    if n == "sqrt":     # the C library's csqrt (principal root, signed zeros kept)
        return fn(f"{zr} if (a == 0 && b == 0) return {mk(f'({R})0', 'b')};"
                  f" if (isinf(b)) return {mk(f'({R})INFINITY', 'b')};"
                  f" if (isnan(a)) return {mk('a', '(b - b) / (b - b)')};"
                  f" if (isinf(a)) return signbit(a) ? {mk('fabs(b - b)', 'copysign(a, b)')}"
                  f" : {mk('a', 'copysign(b - b, b)')};"
                  f" if (a >= 0) {{ {R} s = sqrt((a + hypot(a, b)) * ({R})0.5);"
                  f" return {mk('s', f'b / (({R})2 * s)')}; }}"
                  f" {R} s = sqrt((hypot(a, b) - a) * ({R})0.5);"
                  f" return {mk(f'fabs(b) / (({R})2 * s)', 'copysign(s, b)')};")
    if n == "sigmoid":  # PyTorch's complex sigmoid, 1 / (1 + exp(-z)) (numpy has none)
        return fn(f"{T} e = {call('exp', mk('-z.x', '-z.y'))}; e.x += ({R})1; return {call('recip', 'e')};")
    if n == "rsqrt":    # flex: reciprocal(sqrt(z))
        return fn(f"return {call('recip', call('sqrt', 'z'))};")
    if n == "sin":
        return fn(f"{zr} return {mk('sin(a) * cosh(b)', 'cos(a) * sinh(b)')};")
    if n == "cos":
        return fn(f"{zr} return {mk('cos(a) * cosh(b)', '-(sin(a) * sinh(b))')};")
    if n == "sinh":
        return fn(f"{zr} if (b == 0) return {mk('sinh(a)', 'b')};"
                  f" return {mk('sinh(a) * cos(b)', 'cosh(a) * sin(b)')};")
    if n == "cosh":
        return fn(f"{zr} if (b == 0) return {mk('cosh(a)', f'copysign(({R})0, a) * b')};"
                  f" return {mk('cosh(a) * cos(b)', 'sinh(a) * sin(b)')};")
    if n == "tanh":     # the C library's ctanh (Kahan's formula; saturates for large |a|)
        return fn(f"{zr} if (b == 0) return {mk('tanh(a)', 'b')};"
                  f" if (isinf(a)) return"
                  f" {mk(f'copysign(({R})1, a)', f'copysign(({R})0, isinf(b) ? b : sin(b) * cos(b))')};"
                  f" if (fabs(a) >= ({R})22) {{ {R} e = exp(-fabs(a));"
                  f" return {mk(f'copysign(({R})1, a)', f'({R})4 * sin(b) * cos(b) * e * e')}; }}"
                  f" {R} t = tan(b), beta = ({R})1 + t * t, s = sinh(a), rho = sqrt(({R})1 + s * s);"
                  f" {R} den = ({R})1 + beta * s * s; return {mk('beta * rho * s / den', 't / den')};")
    if n == "tan":      # tan(z) = -i tanh(i z)
        return fn(f"{T} w = {call('tanh', mk('-z.y', 'z.x'))}; return {mk('w.y', '-w.x')};")
    if n == "asinh":    # log(z + sqrt(z^2 + 1)) on the right half plane, odd symmetry on the left
        return fn(f"{_series(T, R, mk, call, ('-1/6', '3/40', '-5/112'), t)}"
                  f" int neg = z.x < 0; {T} w = neg ? {mk('-z.x', '-z.y')} : z;"
                  # |w| > 2^26: log(2w), where w^2 + 1 would round to w^2 (and w^2 may overflow)
                  f" if (fabs(w.x) > ({R})0x1p26 || fabs(w.y) > ({R})0x1p26) {{ {T} r = {call('log', 'w')};"
                  f" r.x += ({R})0x1.62e42fefa39efp-1; return neg ? {mk('-r.x', '-r.y')} : r; }}"
                  f" {T} s = {call('mul', 'w', 'w')}; s.x += ({R})1; {T} r = {call('sqrt', 's')};"
                  f" r = {call('log', mk('w.x + r.x', 'w.y + r.y'))};"
                  f" return neg ? {mk('-r.x', '-r.y')} : r;")
    if n == "asin":     # asin(z) = -i asinh(i z)
        return fn(f"{T} w = {call('asinh', mk('-z.y', 'z.x'))}; return {mk('w.y', '-w.x')};")
    if n == "acos":     # pi/2 - asin(z)
        return fn(f"{T} w = {call('asin', 'z')}; return {mk(f'({R}){_HALF_PI} - w.x', '-w.y')};")
    if n == "acosh":    # log(z + sqrt(z + 1) sqrt(z - 1)): Kahan's form, right branch cuts
        return fn(f"{T} p = {call('sqrt', mk(f'z.x + ({R})1', 'z.y'))};"
                  f" {T} m = {call('sqrt', mk(f'z.x - ({R})1', 'z.y'))};"
                  f" {T} q = {call('mul', 'p', 'm')}; return {call('log', mk('z.x + q.x', 'z.y + q.y'))};")
    if n == "atanh":    # (log1p(z) - log1p(-z)) / 2
        return fn(f"{_series(T, R, mk, call, ('1/3', '1/5', '1/7'), t)}"
                  f" {T} p = {call('log1p', 'z')}; {T} m = {call('log1p', mk('-z.x', '-z.y'))};"
                  f" return {mk(f'(p.x - m.x) * ({R})0.5', f'(p.y - m.y) * ({R})0.5')};")
    if n == "atan":     # atan(z) = -i atanh(i z)
        return fn(f"{T} w = {call('atanh', mk('-z.y', 'z.x'))}; return {mk('w.y', '-w.x')};")
    if n == "pow":      # numpy's npy_cpow: exact small integer powers by repeated products
        one = mk(f"({R})1", f"({R})0")
        return fn(f"if (q.x == 0 && q.y == 0) return {one};"
                  f" if (p.x == 0 && p.y == 0) return (q.x > 0 && q.y == 0) ? {mk(f'({R})0', f'({R})0')}"
                  f" : {mk(f'({R})NAN', f'({R})NAN')};"
                  f" if (q.y == 0 && q.x == floor(q.x) && fabs(q.x) < 100) {{"
                  f" int n = (int)q.x; if (n == 1) return p;"
                  f" if (n == 2) return {call('mul', 'p', 'p')};"
                  f" if (n == 3) return {call('mul', call('mul', 'p', 'p'), 'p')};"
                  f" int e = n < 0 ? -n : n; {T} r = {one}, x = p;"
                  f" while (e > 0) {{ if (e & 1) r = {call('mul', 'r', 'x')}; x = {call('mul', 'x', 'x')}; e >>= 1; }}"
                  f" return n < 0 ? {call('div', one, 'r')} : r; }}"
                  f" {T} l = {call('log', 'p')};"
                  f" return {call('exp', call('mul', 'q', 'l'))};", "T p, T q")
    raise KeyError(name)
