"""Row kernels of the ``burn::`` fused nn ops on wgpu: softmax, log_softmax, layer_norm and
their gradients, one work-item per row or one work-group per row (:func:`rows_variant`)."""
from __future__ import annotations

import os

import numpy as np

from burn.codegen import OPENCL
from burn.errors import BurnError

from ..native import NP as _NP
from ..native import empty, numel
from .movement import _filled, broadcast_to, contiguous
from .source import library_kernel as _lib
from .source import library_source, part_of, register


def _float_rows(op, *xs):
    for x in xs:
        if x.dtype not in ("float32", "float64"):
            raise BurnError(f"wgpu: {op} needs float32 or float64 inputs, got {x.dtype}; cast first "
                            f"(x.to(burn.float32))")


def softmax(x, axis):
    """burn::softmax: one launch, a work-item or a work-group per row along ``axis`` (any axis, no
    transpose; :func:`launch_rows` picks)."""
    _float_rows("burn::softmax", x)
    x = contiguous(x)
    out = empty(x.dc, x.shape, x.dtype)
    if x.size:
        L = x.shape[axis]
        I = numel(x.shape[axis + 1:])
        O = numel(x.shape[:axis])
        i32 = np.int32
        launch_rows(x.dc, x.dtype, "row_softmax", O * I, L, [i32(O), i32(L), i32(I), out.buf, x.buf,
                                                             i32(x.offset)], inner=I)
    return out


def softmax_grad(y, g, axis):
    """burn::softmax_grad: ``y * (g - sum(g * y, axis))`` in one launch."""
    _float_rows("burn::softmax_grad", y, g)
    y, g = contiguous(y), contiguous(broadcast_to(g, shape=y.shape) if g.shape != y.shape else g)
    out = empty(y.dc, y.shape, y.dtype)
    if y.size:
        L, I, O = y.shape[axis], numel(y.shape[axis + 1:]), numel(y.shape[:axis])
        i32 = np.int32
        launch_rows(y.dc, y.dtype, "row_softmax_grad", O * I, L,
                    [i32(O), i32(L), i32(I), out.buf, y.buf, i32(y.offset), g.buf, i32(g.offset)], inner=I)
    return out


def _row_launch(axis, kernel, y, *others):
    """A row kernel over ``axis`` rows of contiguous [O, L, I] tensors: out = kernel(y, others)."""
    y = contiguous(y)
    others = [contiguous(broadcast_to(g, shape=y.shape) if g.shape != y.shape else g) for g in others]
    out = empty(y.dc, y.shape, y.dtype)
    if y.size:
        L, I, O = y.shape[axis], numel(y.shape[axis + 1:]), numel(y.shape[:axis])
        i32 = np.int32
        args = [i32(O), i32(L), i32(I), out.buf, y.buf, i32(y.offset)]
        for g in others:
            args += [g.buf, i32(g.offset)]
        launch_rows(y.dc, y.dtype, kernel, O * I, L, args, inner=I)
    return out


def log_softmax(x, axis):
    """burn::log_softmax: one launch, a work-item or a work-group per row along ``axis`` (any axis,
    no transpose; :func:`launch_rows` picks)."""
    _float_rows("burn::log_softmax", x)
    return _row_launch(axis, "row_log_softmax", x)


def log_softmax_grad(y, g, axis):
    """burn::log_softmax_grad: ``g - exp(y) * sum(g, axis)`` in one launch."""
    _float_rows("burn::log_softmax_grad", y, g)
    return _row_launch(axis, "row_log_softmax_grad", y, g)


def layer_norm(x, w, b, eps):
    """burn::layer_norm over the last axis: one launch, a work-item or a work-group per row."""
    _float_rows("burn::layer_norm", x, w, b)
    x, w, b = contiguous(x), contiguous(w), contiguous(b)
    out = empty(x.dc, x.shape, x.dtype)
    if x.size:
        D = x.shape[-1]
        R = x.size // D
        i32 = np.int32
        launch_rows(x.dc, x.dtype, "row_layer_norm", R, D,
                    [i32(R), i32(D), out.buf, x.buf, i32(x.offset), w.buf, i32(w.offset), b.buf, i32(b.offset),
                     _NP[x.dtype].type(eps)])
    return out


def layer_norm_grad(x, w, g, eps):
    """burn::layer_norm_grad: dx per row (one launch), then dweight / dbias per column (one launch)."""
    _float_rows("burn::layer_norm_grad", x, w, g)
    x, w = contiguous(x), contiguous(w)
    g = contiguous(broadcast_to(g, shape=x.shape) if g.shape != x.shape else g)
    dc, D = x.dc, x.shape[-1]
    dx = empty(dc, x.shape, x.dtype)
    if not x.size:
        return dx, _filled(dc, (D,), x.dtype, 0), _filled(dc, (D,), x.dtype, 0)
    R = x.size // D
    i32 = np.int32
    stats = empty(dc, (R, 2), x.dtype)
    launch_rows(dc, x.dtype, "row_layer_norm_grad", R, D,
              [i32(R), i32(D), dx.buf, stats.buf, x.buf, i32(x.offset), w.buf, i32(w.offset), g.buf, i32(g.offset),
               _NP[x.dtype].type(eps)])
    dw, db = empty(dc, (D,), x.dtype), empty(dc, (D,), x.dtype)
    dc.launch(_lib(dc, x.dtype, "col_layer_norm_grad"), D,
              [i32(R), i32(D), dw.buf, db.buf, stats.buf, x.buf, i32(x.offset), g.buf, i32(g.offset)])
    return dx, dw, db


ROW_VEC_MIN = 256           # row_ kernels without exp: compensated vector loops on rows this long


ROW_CHAINS = 4              # independent Kahan chains of a compensated scalar loop


def _row_helpers(T):
    """The C-writing helpers of the row kernels of dtype ``T`` (see :func:`_rows_src`)."""
    GV = row_vector_width(T)
    V, IV = f"{T}{GV}", ("long" if T == "double" else "int") + str(GV)

    def kahan(s, val):
        return f"{{ {T} y_ = ({val}) - {s}c_; {T} t_ = {s} + y_; {s}c_ = (t_ - {s}) - y_; {s} = t_; }}"

    def vkahan(s, val):
        return f"{{ {V} y_ = ({val}) - {s}vc_; {V} t_ = {s}v_ + y_; {s}vc_ = (t_ - {s}v_) - y_; {s}v_ = t_; }}"

    def vfold(a):
        """The GV lanes of ``a``'s chains (sums ``a##v_``, compensations ``a##vc_``) into
        ``a`` / ``a##c_`` without losing the compensation: halves added pairwise, each add's
        rounding error (Knuth's TwoSum, exact) moved into the compensation."""
        out, s, c, w = [], f"{a}v_", f"{a}vc_", GV
        while w > 1:
            w //= 2
            t = T if w == 1 else f"{T}{w}"
            out.append(f"{t} t{w}_ = {s}.lo + {s}.hi, b{w}_ = t{w}_ - {s}.lo; "
                       f"{t} e{w}_ = ({s}.lo - (t{w}_ - b{w}_)) + ({s}.hi - b{w}_); "
                       f"{t} c{w}_ = ({c}.lo + {c}.hi) - e{w}_;")
            s, c = f"t{w}_", f"c{w}_"
        return "{ " + " ".join(out) + f" {a} = t1_; {a}c_ = c1_; }}"

    def ksum(n, cond, sums, vpre=lambda k: "", spre=lambda k: "", ru=1, plain=False):
        """Compensated sums over k in [0, n): ``sums`` is [(acc, vector val(k), scalar val(k))]
        (``vpre`` / ``spre``: statements before them, e.g. softmax's exp and store); the sum of
        ``acc`` is ``acc - acc##c_``. Under ``cond`` (contiguous rows) GV lanes at a time, each
        lane its own Kahan chain, folded by :func:`vfold` (softmax_grad reuses the compensation);
        the rest (all of a strided or short row) one by one in ``ru`` independent chains
        (elements k, k+1, ... round robin: a core overlaps them), folded with Kahan steps, or
        with ``plain`` in one plain chain (see ROW_VEC_MIN)."""
        decl = " ".join(f"{T} {a} = 0, {a}c_ = 0;" for a, _, _ in sums)
        vdecl = " ".join(f"{V} {a}v_ = 0, {a}vc_ = 0;" for a, _, _ in sums)
        vstep = " ".join(vkahan(a, vv("k")) for a, vv, _ in sums)
        fold = " ".join(vfold(a) for a, _, _ in sums)
        chain = [[a if j == 0 else f"{a}_{j}" for j in range(ru)] for a, _, _ in sums]
        cdecl = " ".join(f"{T} {c} = 0, {c}c_ = 0;" for cs in chain for c in cs[1:])

        def sstep(k, j):
            return "{ " + f"const int k_ = {k}; {spre('k_')} " + " ".join(
                f"{cs[j]} += {sv('k_')};" if plain else kahan(cs[j], sv("k_"))
                for cs, (_, _, sv) in zip(chain, sums)) + " }"
        ru = 1 if plain else ru
        chains = ""
        if ru > 1:
            body = " ".join(sstep(f"k + {j}", j) for j in range(ru))
            cfold = " ".join(kahan(cs[0], cs[j]) + " " + kahan(cs[0], f"-{cs[j]}c_") for cs in chain
                             for j in range(1, ru))
            chains = f"    {{ {cdecl}\n      for (; k + {ru} <= {n}; k += {ru}) {{ {body} }}\n      {cfold} }}\n"
        # the vector loop's remainder (< GV elements) always compensated: a plain add there
        # would drop what the compensated lanes kept (4 tiny terms: 5e-3 of softmax_grad's dx)
        rest = "{ " + f"const int k_ = k; {spre('k_')} " + " ".join(
            kahan(a, sv("k_")) for a, _, sv in sums) + " }"
        return (f"{decl}\n  {{ int k = 0;\n    if ({cond}) {{ {vdecl}\n"
                f"      for (; k + {GV} <= {n}; k += {GV}) {{ {vpre('k')} {vstep} }}\n      {fold}\n"
                f"      for (; k < {n}; ++k) {rest} }}\n"
                f"{chains}    for (; k < {n}; ++k) {sstep('k', 0)}\n  }}")

    def vmax(ptr, n, cond, at):
        """``mx``: the row's max, NaN first (any NaN wins), -inf for an all -inf row."""
        fold = " ".join(f"{{ {T} v = mv_.s{j:x}; if (!isnan(mx) && (isnan(v) || v > mx)) mx = v; }}"
                        for j in range(GV))
        return (f"{T} mx = -INFINITY;\n  {{ int k = 0;\n    if ({cond}) {{ {V} mv_ = -INFINITY;\n"
                f"      for (; k + {GV} <= {n}; k += {GV}) {{ {V} v = vload{GV}(0, {ptr} + k);\n"
                f"        {IV} tk_ = (isnan(v) | (v > mv_)) & ~isnan(mv_); mv_ = select(mv_, v, tk_); }}\n"
                f"      {fold} }}\n"
                f"    for (; k < {n}; ++k) {{ {T} v = {at('k')}; "
                "if (!isnan(mx) && (isnan(v) || v > mx)) mx = v; }\n  }")

    def each(n, cond, vstmt, sstmt):
        """An element-wise pass: GV lanes at a time under ``cond``, then one by one."""
        return (f"{{ int k = 0;\n    if ({cond}) for (; k + {GV} <= {n}; k += {GV}) {{ {vstmt('k')} }}\n"
                f"    for (; k < {n}; ++k) {{ {sstmt('k')} }}\n  }}")

    def ld(ptr, k):
        return f"vload{GV}(0, {ptr} + {k})"

    def at(ptr):
        return lambda k: f"{ptr}[(long){k} * I]"
    return kahan, ksum, vmax, each, ld, at, V


def _rows_src(T):
    """Row-wise reduce-then-broadcast kernels of burn::softmax(_grad), burn::log_softmax(_grad) and
    burn::layer_norm(_grad).

    softmax rows are the ``L`` elements ``base + k * I`` of a contiguous [O, L, I] tensor (any
    axis, no transpose; neighbouring work-items read neighbouring ``i``); layer_norm rows are
    contiguous [R, D]. One work-item per row: three passes over a row that stays in cache.

    Row sums are Kahan-compensated, as in the ``grp_`` twins: one plain float32 chain over a
    row of 700 values spanning a large range drops the small terms (softmax of [0, -17, -17,
    ...]: 2e-5 off; layer_norm rows around 3000: 1e-3 of the spread off). A compensated step is
    four adds where a plain one is one; to pay for it, contiguous rows (``I == 1``, layer_norm)
    run ``GV`` lanes at a time (vload, vector exp, GV Kahan chains folded with TwoSum, keeping
    the compensation): softmax / log_softmax / log_softmax_grad got ~4x faster on PoCL, not
    slower. Strided rows (softmax over a leading axis) run ``ROW_CHAINS`` scalar Kahan chains.
    softmax_grad and layer_norm(_grad) rows shorter than ``ROW_VEC_MIN`` keep plain sums (see
    there), layer_norm's mean over ``x - x[0]``. Special values as torch: a +inf, a NaN or only
    -inf in a row give NaN everywhere (log_softmax shifts only an all -inf row by 0)."""
    return _softmax_rows_src(T) + _layer_norm_rows_src(T)


def _softmax_rows_src(T):
    GV = row_vector_width(T)
    kahan, ksum, vmax, each, ld, at, V = _row_helpers(T)
    # softmax rows: contiguous when I == 1. Kernels without exp take the vector loops only on
    # rows of ROW_VEC_MIN or more: on shorter rows PoCL runs the scalar loop over a row 8 rows a
    # vector (across work-items), which explicit vectors forgo, and compensation is not free
    # there (4 adds where a plain sum has 1; measured [16384, 64]: layer_norm 1.3x, softmax_grad
    # 1.2x in compensated vectors or chains; [4096, 256]: 0.93x). Shorter rows sum plainly (n
    # < 256 terms: n * eps bounds the error), layer_norm's mean shifted by the row's first value
    # (the error that matters there: a plain sum of values around 3000 drifts by 1e-3)
    c1 = "I == 1"
    cv = f"I == 1 && L >= {ROW_VEC_MIN}"
    return f"""
__kernel void row_softmax(const int O, const int L, const int I, __global {T}* out,
                          __global const {T}* x, const int offx) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* p = x + offx + base;
  __global {T}* q = out + base;
  {vmax("p", "L", c1, at("p"))}
  /* a +inf max makes every exp(x - mx) 0 or NaN (+inf - +inf), an all -inf row NaN: as torch */
  {ksum("L", c1, [("s", lambda k: "e_", lambda k: "e_")],
        lambda k: f"{V} e_ = exp({ld('p', k)} - mx); vstore{GV}(e_, 0, q + {k});",
        lambda k: f"{T} e_ = exp(p[(long){k} * I] - mx); q[(long){k} * I] = e_;", ru=ROW_CHAINS)}
  {T} r = ({T})1 / (s - sc_);
  {each("L", c1, lambda k: f"vstore{GV}({ld('q', k)} * r, 0, q + {k});", lambda k: f"q[(long){k} * I] *= r;")}
}}
__kernel void row_softmax_grad(const int O, const int L, const int I, __global {T}* out,
                               __global const {T}* y, const int offy, __global const {T}* g, const int offg) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* py = y + offy + base;
  __global const {T}* pg = g + offg + base;
  __global {T}* q = out + base;
  {ksum("L", cv, [("s", lambda k: f"{ld('py', k)} * {ld('pg', k)}",
                   lambda k: f"py[(long){k} * I] * pg[(long){k} * I]")],
        plain=True)}
  /* g - (s - sc_) as (g - s) + sc_: where y ~ 1 and g ~ s, g - s cancels exactly and the
     compensation keeps the low bits a float32 s would round away */
  {each("L", cv, lambda k: f"vstore{GV}({ld('py', k)} * (({ld('pg', k)} - s) + sc_), 0, q + {k});",
        lambda k: f"q[(long){k} * I] = py[(long){k} * I] * ((pg[(long){k} * I] - s) + sc_);")}
}}
__kernel void row_log_softmax(const int O, const int L, const int I, __global {T}* out,
                              __global const {T}* x, const int offx) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* p = x + offx + base;
  __global {T}* q = out + base;
  {vmax("p", "L", c1, at("p"))}
  /* an all -inf row shifts by 0 (then -inf - log(0) is NaN, as torch); a +inf max stays: every
     x - mx is then -inf or NaN and the sum NaN, so the whole row is NaN wherever the +inf sits */
  if (mx == -INFINITY) mx = 0;
  {ksum("L", c1, [("s", lambda k: f"exp({ld('p', k)} - mx)", lambda k: f"exp(p[(long){k} * I] - mx)")], ru=ROW_CHAINS)}
  {T} ls = log(s - sc_);
  {each("L", c1, lambda k: f"vstore{GV}(({ld('p', k)} - mx) - ls, 0, q + {k});",
        lambda k: f"q[(long){k} * I] = (p[(long){k} * I] - mx) - ls;")}
}}
__kernel void row_log_softmax_grad(const int O, const int L, const int I, __global {T}* out,
                                   __global const {T}* y, const int offy, __global const {T}* g, const int offg) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* py = y + offy + base;
  __global const {T}* pg = g + offg + base;
  __global {T}* q = out + base;
  {ksum("L", c1, [("s", lambda k: ld("pg", k), lambda k: f"pg[(long){k} * I]")], ru=ROW_CHAINS)}
  s -= sc_;
  {each("L", c1, lambda k: f"vstore{GV}({ld('pg', k)} - exp({ld('py', k)}) * s, 0, q + {k});",
        lambda k: f"q[(long){k} * I] = pg[(long){k} * I] - exp(py[(long){k} * I]) * s;")}
}}"""


def _layer_norm_rows_src(T):
    GV = row_vector_width(T)
    kahan, ksum, vmax, each, ld, at, V = _row_helpers(T)
    # rows of ROW_VEC_MIN or more take the vector loops (see _softmax_rows_src); shorter
    # ones sum plainly, the mean shifted by the row's first value
    cd = f"D >= {ROW_VEC_MIN}"
    return f"""
__kernel void row_layer_norm(const int R, const int D, __global {T}* out, __global const {T}* x, const int offx,
                             __global const {T}* w, const int offw, __global const {T}* b, const int offb,
                             const {T} eps) {{
  int m = get_global_id(0); if (m >= R) return;
  __global const {T}* p = x + offx + (long)m * D;
  __global {T}* q = out + (long)m * D;
  __global const {T}* pw = w + offw;
  __global const {T}* pb = b + offb;
  {T} p0 = p[0];
  {ksum("D", cd, [("s", lambda k: f"({ld('p', k)} - p0)", lambda k: f"(p[{k}] - p0)")], plain=True)}
  {T} mean = p0 + (s - sc_) / D;
  {ksum("D", cd, [("v", lambda k: "d_ * d_", lambda k: "d_ * d_")],
        lambda k: f"{V} d_ = {ld('p', k)} - mean;", lambda k: f"{T} d_ = p[{k}] - mean;", plain=True)}
  {T} r = ({T})1 / sqrt((v - vc_) / D + eps);
  {each("D", cd, lambda k: f"vstore{GV}(({ld('p', k)} - mean) * r * {ld('pw', k)} + {ld('pb', k)}, 0, q + {k});",
        lambda k: f"q[{k}] = (p[{k}] - mean) * r * pw[{k}] + pb[{k}];")}
}}
__kernel void row_layer_norm_grad(const int R, const int D, __global {T}* dx, __global {T}* stats,
                                  __global const {T}* x, const int offx, __global const {T}* w, const int offw,
                                  __global const {T}* g, const int offg, const {T} eps) {{
  int m = get_global_id(0); if (m >= R) return;
  __global const {T}* p = x + offx + (long)m * D;
  __global const {T}* pg = g + offg + (long)m * D;
  __global const {T}* pw = w + offw;
  __global {T}* q = dx + (long)m * D;
  {T} p0 = p[0];
  {ksum("D", cd, [("s", lambda k: f"({ld('p', k)} - p0)", lambda k: f"(p[{k}] - p0)")], plain=True)}
  {T} mean = p0 + (s - sc_) / D;
  {ksum("D", cd, [("v", lambda k: "d_ * d_", lambda k: "d_ * d_")],
        lambda k: f"{V} d_ = {ld('p', k)} - mean;", lambda k: f"{T} d_ = p[{k}] - mean;", plain=True)}
  {T} r = ({T})1 / sqrt((v - vc_) / D + eps);
  {ksum("D", cd, [("sgh", lambda k: "gh_", lambda k: "gh_"), ("sghx", lambda k: f"gh_ * ({ld('p', k)} - mean) * r",
                                                                lambda k: f"gh_ * (p[{k}] - mean) * r")],
        lambda k: f"{V} gh_ = {ld('pg', k)} * {ld('pw', k)};", lambda k: f"{T} gh_ = pg[{k}] * pw[{k}];",
        plain=True)}
  sgh = (sgh - sghc_) / D; sghx = (sghx - sghxc_) / D;
  {each("D", cd, lambda k: f"vstore{GV}(r * ({ld('pg', k)} * {ld('pw', k)} - sgh - ({ld('p', k)} - mean) * r * sghx), "
                           f"0, q + {k});",
        lambda k: f"q[{k}] = r * (pg[{k}] * pw[{k}] - sgh - (p[{k}] - mean) * r * sghx);")}
  stats[2 * m] = mean; stats[2 * m + 1] = r;
}}
__kernel void col_layer_norm_grad(const int R, const int D, __global {T}* dw, __global {T}* db,
                                  __global const {T}* stats, __global const {T}* x, const int offx,
                                  __global const {T}* g, const int offg) {{
  /* one item per column, a serial sum over all R rows (R may be 1e5): compensated as the rows */
  int k = get_global_id(0); if (k >= D) return;
  {T} sw = 0, swc_ = 0, sb = 0, sbc_ = 0;
  for (int m = 0; m < R; ++m) {{
    {T} gv = g[offg + (long)m * D + k];
    {kahan("sw", "gv * (x[offx + (long)m * D + k] - stats[2 * m]) * stats[2 * m + 1]")}
    {kahan("sb", "gv")}
  }}
  dw[k] = sw - swc_; db[k] = sb - sbc_;
}}"""


GV = 8                      # row kernels: lanes of the vector loops over contiguous rows (4-byte types)


def row_vector_width(T: str) -> int:
    """Lanes of the row kernels' vector loops for OpenCL type ``T``: one 256-bit vector. An
    8-lane double vector would be 512-bit, which PoCL 3.0 cannot compile on CPUs whose flags
    say avx512 while LLVM's target lacks avx512f (see burn_wgpu.kernels.linear.VW).

    >>> assert row_vector_width("float") == 8 and row_vector_width("double") == 4
    """
    return GV // 2 if T in ("double", "long") else GV


LONG_ROW = 768              # rows at least this long get a work-group whatever their number:


                            # measured on PoCL, [4096, 768] is even, [8192, 512] mixed, 1000 2x
# ... except the exp kernels: since their one-item kernels sum GV lanes at a time, a row of up
# to ~4K runs faster (or even) there as long as the rows fill the units (PoCL, [2048, 1000]
# softmax 5.0 vs 9.6 ms; fwd + bwd [2048, 1024] 21 vs 27 ms, log_softmax 22 vs 38 ms)
LONG_ROW_BY_KERNEL = {"softmax": 4096, "softmax_grad": 4096, "log_softmax": 4096, "log_softmax_grad": 4096}


RL = 64                     # work-group size of the grp_ kernels (reduce_fused.local_size on a CPU)


ROWS_FORCE = os.environ.get("BURN_WGPU_ROWS") or None      # "row" or "group": pin a variant


# each item a contiguous block (CPU devices: one item streams its cache lines, and contiguous
# rows reduce in vectors) or "0": a strided share (coalesced loads on a GPU; ~10x slower on
# PoCL). Read once: the program source is cached per process.
GRP_BLOCKED = os.environ.get("BURN_WGPU_ROWS_BLOCKED", "1") == "1"


LAST_ROWS = [None]          # the latest row launch's variant, for tests and benchmarks


def rows_variant(M: int, R: int, units: int, force=None, kernel: str | None = None) -> str:
    """"row" (one work-item per row) or "group" (one work-group per row) for ``M`` rows of
    length ``R`` on a device with ``units`` compute units: the rule of
    :func:`burn_wgpu.kernels.reduce.generated.choose` without its split (a row kernel writes the whole row,
    partials would need a second pass over it), and a work-group for any number of rows of at
    least ``LONG_ROW`` (the group kernels' vector loops; ``LONG_ROW_BY_KERNEL`` for ``kernel``,
    e.g. "softmax").

    >>> assert rows_variant(16384, 512, 2) == "row" and rows_variant(8, 1 << 20, 2) == "group"
    >>> assert rows_variant(16384, 1000, 2) == "group" and rows_variant(8, 32, 2) == "row"
    >>> assert rows_variant(16384, 1000, 2, kernel="softmax") == "row"
    >>> assert rows_variant(8, 1 << 20, 2, force="row") == "row"
    """
    force = force or ROWS_FORCE
    if force in ("row", "group"):
        return force
    if force is not None:
        raise ValueError(f"BURN_WGPU_ROWS={force!r}: expected 'row' or 'group'")
    if R < RL:
        return "row"
    # a work-group reduces GV lanes at a time where one item runs a serial chain: long rows
    # gain even when there are rows enough for every unit (PoCL, [2048, 1000]: 2x softmax)
    if R >= LONG_ROW_BY_KERNEL.get(kernel, LONG_ROW):
        return "group"
    # a full work-group of rows per unit keeps every unit busy with one item per row
    return "row" if M >= units * 256 else "group"


def launch_rows(dc, dtype: str, name: str, M: int, R: int, args, inner: int = 1) -> None:
    """Launch row kernel ``name`` (``row_softmax``, ...) over ``M`` rows of length ``R``, as the
    one-work-item kernel or its ``grp_`` twin (same arguments), picked by :func:`rows_variant`.
    ``inner``: the stride between a row's elements (1: contiguous rows, which the one-item exp
    kernels sum in vector lanes; strided rows keep the general long-row threshold).

    >>> assert part_of("grp_softmax") == part_of("row_softmax") == "rows"
    """
    units = getattr(dc.device, "max_compute_units", 1) or 1
    variant = LAST_ROWS[0] = rows_variant(M, R, units, kernel=name[len("row_"):] if inner == 1 else None)
    if variant == "group":
        name = "grp_" + name[len("row_"):]
    k = dc.kernel(library_source(dtype, dc.fp64, "rows"), name)
    if variant == "group":
        dc.launch(k, M * RL, args, local=RL)
    else:
        dc.launch(k, M, args)


def _grp_rows_src(T, blocked):
    """The work-group-per-row twins of :func:`_rows_src` (same arguments, same numerics: the
    NaN-first max, -inf rows, Kahan-compensated sums where the one-item kernels use them; each
    item's compensated partial then goes through a pairwise tree). On contiguous rows (softmax's
    ``I == 1``, layer_norm) an item folds its block GV values at a time: GV independent Kahan or
    max chains instead of one latency-bound chain (4-5x on [8, 1M] softmax on PoCL)."""
    GV = row_vector_width(T)
    def tree(var, comb):
        # every item ends with the row's value; the closing barrier keeps ta[0] intact until
        # all items have read it (the next tree overwrites ta)
        return (f"  ta[lid] = {var}; barrier(CLK_LOCAL_MEM_FENCE);\n"
                f"  for (int w = {RL // 2}; w > 0; w >>= 1) {{\n"
                f"    if (lid < w) {{ {T} a = ta[lid], b = ta[lid + w]; ta[lid] = {comb}; }}\n"
                f"    barrier(CLK_LOCAL_MEM_FENCE);\n  }}\n"
                f"  {var} = ta[0]; barrier(CLK_LOCAL_MEM_FENCE);")
    tmax = tree("mx", "(!isnan(a) && (isnan(b) || b > a)) ? b : a")

    def tsum(v):
        return tree(v, "a + b")

    def kahan(s, c, val):
        return f"{{ {T} y_ = ({val}) - {c}; {T} t_ = {s} + y_; {c} = (t_ - {s}) - y_; {s} = t_; }}"

    def span(n):
        if blocked:
            return f"  int cs_ = ({n} + {RL - 1}) / {RL}; int ka = min({n}, lid * cs_), kb = min({n}, ka + cs_);\n"
        return f"  int ka = lid, kb = {n};\n"
    lp = "for (int k = ka; k < kb; ++k)" if blocked else f"for (int k = ka; k < kb; k += {RL})"
    rest = "for (; k < kb; ++k)" if blocked else f"for (; k < kb; k += {RL})"
    V, IV = f"{T}{GV}", ("long" if T == "double" else "int") + str(GV)
    lanes = [f"d_.s{j:x}" for j in range(GV)]

    def lsum(xs):
        # pairwise over the lanes, as the tree does over the items
        while len(xs) > 1:
            xs = [f"({xs[i]} + {xs[i + 1]})" for i in range(0, len(xs), 2)]
        return xs[0]

    def vsum(s, cond, vpre, vval, spre, sval, comp=True):
        """``s`` (and its compensation ``{s}c_``) = the sum of this item's values: GV lanes at a
        time where ``cond`` holds (contiguous rows; the serial chain of a Kahan sum is
        latency-bound, GV independent chains are not), the rest one by one."""
        c = f"{s}c_"
        vstep = (f"{V} y_ = ({vval}) - cv_; {V} t_ = sv_ + y_; cv_ = (t_ - sv_) - y_; sv_ = t_;" if comp
                 else f"sv_ += {vval};")
        sstep = kahan(s, c, sval) if comp else f"{s} += {sval};"
        vec = "0" if not blocked else cond
        return (f"  {T} {s} = 0, {c} = 0;\n  {{ int k = ka;\n"
                f"    if ({vec}) {{ {V} sv_ = 0, cv_ = 0;\n"
                f"      for (; k + {GV} <= kb; k += {GV}) {{ {vpre} {vstep} }}\n"
                f"      {V} d_ = sv_ - cv_; {s} = {lsum(lanes)}; }}\n"
                f"    {rest} {{ {spre} {sstep} }}\n  }}\n  {s} -= {c};\n")

    def vmax(ptr, cond):
        fold = " ".join(f"{{ {T} v = mv_.s{j:x}; if (!isnan(mx) && (isnan(v) || v > mx)) mx = v; }}"
                        for j in range(GV))
        vec = "0" if not blocked else cond
        return (f"  {T} mx = -INFINITY;\n  {{ int k = ka;\n"
                f"    if ({vec}) {{ {V} mv_ = -INFINITY;\n"
                f"      for (; k + {GV} <= kb; k += {GV}) {{ {V} v = vload{GV}(0, {ptr} + k);\n"
                f"        {IV} tk_ = (isnan(v) | (v > mv_)) & ~isnan(mv_); mv_ = select(mv_, v, tk_); }}\n"
                f"      {fold} }}\n"
                f"    {rest} {{ {T} v = {ptr}[(long)k * I]; if (!isnan(mx) && (isnan(v) || v > mx)) mx = v; }}\n  }}\n")
    head = (f"  __local {T} ta[{RL}];\n"
            "  int m = get_group_id(0), lid = get_local_id(0);\n")
    # softmax rows: L elements base + k * I; this item's block [ka, kb) of k
    srow = (head + "  long base = (long)(m / I) * L * I + m % I;\n"
            + span("L"))
    lrow = head + span("D")
    mx_loop = vmax("p", "I == 1") + tmax
    return f"""
__kernel void grp_softmax(const int O, const int L, const int I, __global {T}* out,
                          __global const {T}* x, const int offx) {{
{srow}  __global const {T}* p = x + offx + base;
  __global {T}* q = out + base;
{mx_loop}
{vsum("s", "I == 1", f"{V} e_ = exp(vload{GV}(0, p + k) - mx); vstore{GV}(e_, 0, q + k);", "e_",
       f"{T} e = exp(p[(long)k * I] - mx); q[(long)k * I] = e;", "e")}{tsum("s")}
  {T} r = ({T})1 / s;
  {lp} q[(long)k * I] *= r;
}}
__kernel void grp_softmax_grad(const int O, const int L, const int I, __global {T}* out,
                               __global const {T}* y, const int offy, __global const {T}* g, const int offg) {{
{srow}  __global const {T}* py = y + offy + base;
  __global const {T}* pg = g + offg + base;
{vsum("s", "I == 1", "", f"vload{GV}(0, py + k) * vload{GV}(0, pg + k)", "",
       "py[(long)k * I] * pg[(long)k * I]")}{tsum("s")}
  {lp} out[base + (long)k * I] = py[(long)k * I] * (pg[(long)k * I] - s);
}}
__kernel void grp_log_softmax(const int O, const int L, const int I, __global {T}* out,
                              __global const {T}* x, const int offx) {{
{srow}  __global const {T}* p = x + offx + base;
  __global {T}* q = out + base;
{mx_loop}
  if (mx == -INFINITY) mx = 0;  /* all -inf: NaN (as torch); a +inf max stays: a NaN row, as row_ */
{vsum("s", "I == 1", "", f"exp(vload{GV}(0, p + k) - mx)", "", "exp(p[(long)k * I] - mx)")}{tsum("s")}
  {T} ls = log(s);
  {lp} q[(long)k * I] = (p[(long)k * I] - mx) - ls;
}}
__kernel void grp_log_softmax_grad(const int O, const int L, const int I, __global {T}* out,
                                   __global const {T}* y, const int offy, __global const {T}* g, const int offg) {{
{srow}  __global const {T}* py = y + offy + base;
  __global const {T}* pg = g + offg + base;
{vsum("s", "I == 1", "", f"vload{GV}(0, pg + k)", "", "pg[(long)k * I]")}{tsum("s")}
  {lp} out[base + (long)k * I] = pg[(long)k * I] - exp(py[(long)k * I]) * s;
}}
__kernel void grp_layer_norm(const int R, const int D, __global {T}* out, __global const {T}* x, const int offx,
                             __global const {T}* w, const int offw, __global const {T}* b, const int offb,
                             const {T} eps) {{
{lrow}  __global const {T}* p = x + offx + (long)m * D;
  __global {T}* q = out + (long)m * D;
{vsum("s", "1", "", f"vload{GV}(0, p + k)", "", "p[k]", comp=False)}{tsum("s")}
  {T} mean = s / D;
{vsum("v", "1", f"{V} dv_ = vload{GV}(0, p + k) - mean;", "dv_ * dv_", f"{T} d = p[k] - mean;", "d * d",
      comp=False)}{tsum("v")}
  {T} r = ({T})1 / sqrt(v / D + eps);
  {lp} q[k] = (p[k] - mean) * r * w[offw + k] + b[offb + k];
}}
__kernel void grp_layer_norm_grad(const int R, const int D, __global {T}* dx, __global {T}* stats,
                                  __global const {T}* x, const int offx, __global const {T}* w, const int offw,
                                  __global const {T}* g, const int offg, const {T} eps) {{
{lrow}  __global const {T}* p = x + offx + (long)m * D;
  __global const {T}* pg = g + offg + (long)m * D;
  __global {T}* q = dx + (long)m * D;
{vsum("s", "1", "", f"vload{GV}(0, p + k)", "", "p[k]", comp=False)}{tsum("s")}
  {T} mean = s / D;
{vsum("v", "1", f"{V} dv_ = vload{GV}(0, p + k) - mean;", "dv_ * dv_", f"{T} d = p[k] - mean;", "d * d",
      comp=False)}{tsum("v")}
  {T} r = ({T})1 / sqrt(v / D + eps);
  {T} sgh = 0, sghx = 0;
  {{ int k = ka;
    if ({int(blocked)}) {{ {V} a_ = 0, b_ = 0;
      for (; k + {GV} <= kb; k += {GV}) {{ {V} gh = vload{GV}(0, pg + k) * vload{GV}(0, w + offw + k);
        a_ += gh; b_ += gh * (vload{GV}(0, p + k) - mean) * r; }}
      {V} d_ = a_; sgh = {lsum(lanes)}; d_ = b_; sghx = {lsum(lanes)}; }}
    {rest} {{ {T} gh = pg[k] * w[offw + k]; sgh += gh; sghx += gh * (p[k] - mean) * r; }}
  }}
{tsum("sgh")}
{tsum("sghx")}
  sgh /= D; sghx /= D;
  {lp} q[k] = r * (pg[k] * w[offw + k] - sgh - (p[k] - mean) * r * sghx);
  if (lid == 0) {{ stats[2 * m] = mean; stats[2 * m + 1] = r; }}
}}"""


def _rows_part(dtype, fp64):
    if dtype not in ("float32", "float64"):
        return ""
    T = OPENCL.ctype(dtype)
    return _rows_src(T) + "\n" + _grp_rows_src(T, GRP_BLOCKED)


register("rows", ("row_softmax", "row_softmax_grad", "row_log_softmax", "row_log_softmax_grad", "row_layer_norm",
                  "row_layer_norm_grad", "col_layer_norm_grad", "grp_"), _rows_part)
