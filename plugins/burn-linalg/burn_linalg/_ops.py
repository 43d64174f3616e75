"""The extension ops of burn.linalg: reference definitions, ``.meta`` and ``.backward`` rules.

Each op is a :func:`burn.backend_extension` named ``linalg::<name>``. Tensor
operands are positional, options are keywords (the public functions in
:mod:`burn_linalg._api` always pass them, normalized). Kernels live per
backend in their own modules (``_flex``) and are registered by the plugin's
``burn_register_kernels`` hook.

Backward rules are the standard matrix-calculus results (Giles 2008, Murray
2016 for Cholesky, Townsend 2016 for the SVD, Walter & Lehmann 2018 for QR),
written with burn ops and with these same extension ops, so they run on
whichever backend the forward ran on.

Complex matrices (complex64/complex128) are accepted by every op. Their
gradients follow core's (and PyTorch's) convention: for a real loss L the
gradient G of a complex input Z is the one with dL = Re(tr(G^H dZ)), so the
real rules hold with every transpose replaced by the conjugate transpose
(:func:`_H`), plus the terms that fix the phase freedom of complex
factorizations: QR's R has a real diagonal (LAPACK), and the singular and
eigen vectors are unique only up to a phase per column, so their gradients
are those of losses that do not depend on that phase (as in PyTorch).
Singular values, eigenvalues of Hermitian matrices and ``log|det|`` are real.

Degenerate spectra. The gradients of singular vectors (svd) and
eigenvectors (eigh) contain 1/(s_j^2 - s_i^2) and 1/(w_j - w_i): they do not
exist where values repeat, because the vectors are then not unique. We zero
those terms where the gap is below ``k * eps * max|value|`` instead of
returning inf/nan; the result is the exact gradient of any loss that is
invariant to the choice of basis inside a repeated eigenspace (e.g. one
that uses the projector ``V V^T``), and otherwise not meaningful. Gradients
of the values alone (svdvals, eigvalsh) are always well defined.
"""
from __future__ import annotations

import numpy as np

import burn
from burn.library import kernels_only
from burn import DTypeError, ShapeError, TensorMeta
from burn.errors import require_same_dtype
from burn.dtypes import complex_of, real_of

from ._errors import LinAlgError  # noqa: F401  (re-exported for kernels of other backends)

# -- meta helpers -------------------------------------------------------------------------------


def _desc(m) -> str:
    return f"shape={tuple(m.shape)} dtype={m.dtype}"


def _floating(op, *metas):
    for m in metas:
        if not m.dtype.is_inexact:
            raise DTypeError(f"linalg::{op}: needs a floating or complex tensor, got {_desc(m)}; "
                             f"cast it with x.astype(burn.float64) (or burn.float32)")
    require_same_dtype(f"linalg::{op}", *metas)


def _matrix(op, m, name="a"):
    if len(m.shape) < 2:
        raise ShapeError(f"linalg::{op}: {name} must have at least 2 dimensions (..., M, N), got {_desc(m)}")


def _square(op, m, name="a"):
    _matrix(op, m, name)
    if m.shape[-1] != m.shape[-2]:
        raise ShapeError(f"linalg::{op}: {name} must be square in its last two dimensions "
                         f"(..., N, N), got {_desc(m)}")


def _batch(op, *shapes_and_metas):
    """numpy broadcasting of batch shapes; ``(batch_shape, meta)`` pairs, meta for the message."""
    try:
        return tuple(np.broadcast_shapes(*[s for s, _ in shapes_and_metas]))
    except ValueError:
        ops = ", ".join(_desc(m) for _, m in shapes_and_metas)
        raise ShapeError(f"linalg::{op}: batch dimensions cannot be broadcast together ({ops}); "
                         f"the leading dimensions must match or be 1") from None


def _rows_match(op, a, b, a_dim, what="rows"):
    if b.shape[-2] != a_dim:
        raise ShapeError(f"linalg::{op}: b must have {a_dim} {what} to match a ({_desc(a)}), "
                         f"got b {_desc(b)}")


def _no_reference(op):
    return kernels_only(f"linalg::{op}")


_EXT: dict = {}


def _ext(name, reference=None):
    def deco(fn):
        ref = fn if reference is None else reference
        ext = burn.backend_extension(f"linalg::{name}")(ref)
        ext.__doc__ = fn.__doc__ or ext.__doc__
        _EXT[name] = ext
        return ext
    return deco


def _real_dtype(d):
    """The dtype of values that are real whatever the input (singular values, eigenvalues)."""
    return real_of(d)


# -- burn-op helpers for references and backward rules ----------------------------------------------

def _T(x):
    return burn.matrix_transpose(x)


def _H(x):
    """The conjugate transpose (the transpose of a real matrix)."""
    return burn.matrix_transpose(burn.conj(x)) if x.dtype.is_complex else burn.matrix_transpose(x)


def _conj(x):
    return burn.conj(x) if x.dtype.is_complex else x


def _ct(x):
    """The ``trans`` option of the triangular / LU solves meaning "conjugate transpose"."""
    return 2 if x.dtype.is_complex else 1


def _sum_to(g, shape):
    """The adjoint of broadcasting: sum ``g`` down to ``shape``."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    return burn.sum(g, axis=axes, keepdims=True).reshape(shape)


def _eye(n, like):
    return burn.eye(n, dtype=like.dtype, device=like.device)


def _diag_embed(v):
    return v[..., None, :] * _eye(v.shape[-1], v)


def _sym(x):
    """The Hermitian (symmetric, for real x) part."""
    return (x + _H(x)) * 0.5


def _inv_gaps(d, scale, k):
    """Entry-wise 1/d with 0 where |d| is below k * eps * scale (degenerate pairs and the diagonal)."""
    eps = float(np.finfo(np.float32 if d.dtype.itemsize <= 4 else np.float64).eps)
    tol = scale * (eps * max(k, 1)) + float(np.finfo(np.float64).tiny)
    ok = burn.abs(d) > tol
    return burn.where(ok, 1.0 / burn.where(ok, d, burn.ones_like(d)), burn.zeros_like(d))


def _selectors(m, n, offset, like):
    """Constant 0/1 matrices R (m, L), C (L, n) with diag_offset(x)[j] = (R^T x C^T)[j, j]."""
    r0, c0 = max(0, -offset), max(0, offset)
    k = max(0, min(m - r0, n - c0))
    R = np.zeros((m, k))
    C = np.zeros((k, n))
    j = np.arange(k)
    R[j + r0, j] = 1
    C[j, j + c0] = 1
    return (burn.tensor(R, dtype=like.dtype, device=like.device),
            burn.tensor(C, dtype=like.dtype, device=like.device))


# -- diagonal -----------------------------------------------------------------------------------------

def _diagonal_ref(x, *, offset=0):
    R, C = _selectors(x.shape[-2], x.shape[-1], offset, x)
    return burn.sum((_T(R) @ x) * C, axis=-1)


@_ext("diagonal", _diagonal_ref)
def diagonal_op():
    """``linalg::diagonal``: the ``offset`` diagonal of the last two axes."""


@diagonal_op.meta
def _(x, *, offset=0):
    _matrix("diagonal", x, "x")
    m, n = x.shape[-2:]
    k = max(0, min(m - max(0, -offset), n - max(0, offset)))
    return TensorMeta(tuple(x.shape[:-2]) + (k,), x.dtype)


@diagonal_op.backward
def _(ctx, g):
    (x,) = ctx.inputs
    R, C = _selectors(x.shape[-2], x.shape[-1], ctx.kwargs.get("offset", 0), g)
    return ((R * g[..., None, :]) @ C,)


# -- solve / inv / det / slogdet ------------------------------------------------------------------


@_ext("solve", _no_reference("solve"))
def solve_op():
    """``linalg::solve``: X with A X = B, A (..., N, N), B (..., N, K)."""


@solve_op.meta
def _(a, b):
    _floating("solve", a, b)
    _square("solve", a)
    _matrix("solve", b, "b")
    _rows_match("solve", a, b, a.shape[-1])
    return TensorMeta(_batch("solve", (a.shape[:-2], a), (b.shape[:-2], b)) + tuple(b.shape[-2:]), a.dtype)


@solve_op.backward
def _(ctx, g):
    a, b = ctx.inputs
    x = ctx.out
    gb = solve_op(_H(a), g)
    ga = -(gb @ _H(x))
    return _sum_to(ga, a.shape), _sum_to(gb, b.shape)


@_ext("inv", _no_reference("inv"))
def inv_op():
    """``linalg::inv``."""


@inv_op.meta
def _(a):
    _floating("inv", a)
    _square("inv", a)
    return TensorMeta(tuple(a.shape), a.dtype)


@inv_op.backward
def _(ctx, g):
    xt = _H(ctx.out)
    return (-(xt @ g @ xt),)


@_ext("det", _no_reference("det"))
def det_op():
    """``linalg::det``."""


@det_op.meta
def _(a):
    _floating("det", a)
    _square("det", a)
    return TensorMeta(tuple(a.shape[:-2]), a.dtype)


@det_op.backward
def _(ctx, g):
    # d det = det * tr(A^-1 dA): needs A invertible (a singular A raises at the flush)
    (a,) = ctx.inputs
    return ((g * _conj(ctx.out))[..., None, None] * _H(inv_op(a)),)


@_ext("slogdet", _no_reference("slogdet"))
def slogdet_op():
    """``linalg::slogdet``: (sign, log|det|)."""


@slogdet_op.meta
def _(a):
    _floating("slogdet", a)
    _square("slogdet", a)
    b = tuple(a.shape[:-2])
    return (TensorMeta(b, a.dtype), TensorMeta(b, _real_dtype(a.dtype)))


@slogdet_op.backward
def _(ctx, gsign, glog):
    (a,) = ctx.inputs
    if not a.dtype.is_complex:     # the sign of a real determinant is piecewise constant
        return (glog[..., None, None] * _T(inv_op(a)),)
    # log det = log|det| + i theta and sign = e^{i theta}: a gradient on sign acts on theta
    sign = ctx.outputs[0]
    gtheta = burn.imag(gsign * burn.conj(sign))
    G = glog + gtheta * 1j
    return (G[..., None, None] * _H(inv_op(a)),)


# -- cholesky ---------------------------------------------------------------------------------------

def _cholesky_ref(a, *, upper=False):
    # Cholesky-Banachiewicz, one column per step, in burn ops (any backend)
    n = a.shape[-1]
    cols = []
    for j in range(n):
        if j:
            Lj = burn.stack(cols, axis=-1)            # (..., n, j): columns so far
            c = a[..., :, j] - burn.sum(Lj * _conj(Lj[..., j:j + 1, :]), axis=-1)
        else:
            c = a[..., :, 0]
        d = burn.sqrt(c[..., j:j + 1])
        mask = burn.tensor(np.arange(n) >= j, device=a.device)
        cols.append(burn.where(mask, c / d, burn.zeros_like(c)))
    L = burn.stack(cols, axis=-1)
    return _H(L) if upper else L


@_ext("cholesky", _cholesky_ref)
def cholesky_op():
    """``linalg::cholesky``."""


@cholesky_op.meta
def _(a, *, upper=False):
    _floating("cholesky", a)
    _square("cholesky", a)
    return TensorMeta(tuple(a.shape), a.dtype)


@cholesky_op.backward
def _(ctx, g):
    # Murray (2016): A_bar = sym(L^-H Phi(L^H L_bar) L^-1), Phi = lower triangle with half diagonal
    L = ctx.out
    if ctx.kwargs.get("upper", False):
        L, g = _H(L), _H(g)
    P = burn.tril(_H(L) @ g)
    P = P - 0.5 * _diag_embed(diagonal_op(P, offset=0))
    t = _ct(L)
    Y = solve_triangular_op(L, P, trans=t, lower=True, unit_diagonal=False)           # L^-H P
    Z = _H(solve_triangular_op(L, _H(Y), trans=t, lower=True, unit_diagonal=False))   # ... L^-1
    return (_sym(Z),)


# -- qr --------------------------------------------------------------------------------------------


@_ext("qr", _no_reference("qr"))
def qr_op():
    """``linalg::qr``."""


@qr_op.meta
def _(a, *, mode="reduced"):
    _floating("qr", a)
    _matrix("qr", a)
    b, (m, n) = tuple(a.shape[:-2]), a.shape[-2:]
    k = min(m, n)
    if mode == "reduced":
        return (TensorMeta(b + (m, k), a.dtype), TensorMeta(b + (k, n), a.dtype))
    if mode == "complete":
        return (TensorMeta(b + (m, m), a.dtype), TensorMeta(b + (m, n), a.dtype))
    return TensorMeta(b + (k, n), a.dtype)


def _copyltu(M):
    """The Hermitian matrix with M's strict lower triangle and the real part of its diagonal.

    R's diagonal is real (LAPACK), which leaves Q^H dQ skew-Hermitian with an imaginary
    diagonal set by dA: hence only Re(diag M) enters (for real M: tril(M) + tril(M, -1)^T)."""
    low = burn.tril(M, k=-1)
    d = diagonal_op(M, offset=0)
    return low + _H(low) + _diag_embed(burn.real(d) if d.dtype.is_complex else d)


def _qr_bw_tall(Q, R, gQ, gR):
    # m >= n (Walter & Lehmann): A_bar = (Q_bar + Q copyltu(M)) R^-H, M = R R_bar^H - Q_bar^H Q
    M = R @ _H(gR) - _H(gQ) @ Q
    b = gQ + Q @ _copyltu(M)
    return _H(solve_triangular_op(R, _H(b), trans=0, lower=False, unit_diagonal=False))


@qr_op.backward
def _(ctx, *grads):
    (a,) = ctx.inputs
    mode = ctx.kwargs.get("mode", "reduced")
    m, n = a.shape[-2:]
    if mode == "complete" and m > n:
        raise burn.AutodiffError(
            f"linalg::qr: no gradient for mode='complete' with more rows than columns ({_desc(a)}): "
            f"the extra columns of Q are not unique; use mode='reduced'")
    if mode == "r":
        Q, R = qr_op(a, mode="reduced")
        gQ, gR = burn.zeros_like(Q), grads[0]
    else:
        (Q, R), (gQ, gR) = ctx.outputs, grads
    if m >= n:
        return (_qr_bw_tall(Q, R, gQ, gR),)
    # wide: A = [X | Y], R = [U | V]; X = Q U is a square QR, Y = Q V
    Y, U, gU, gV = a[..., :, m:], R[..., :, :m], gR[..., :, :m], gR[..., :, m:]
    gX = _qr_bw_tall(Q, U, gQ + Y @ _H(gV), gU)
    return (burn.concat([gX, Q @ gV], axis=-1),)


# -- svd / svdvals ------------------------------------------------------------------------------------


@_ext("svd", _no_reference("svd"))
def svd_op():
    """``linalg::svd``."""


@svd_op.meta
def _(a, *, full_matrices=True):
    _floating("svd", a)
    _matrix("svd", a)
    b, (m, n) = tuple(a.shape[:-2]), a.shape[-2:]
    k = min(m, n)
    return (TensorMeta(b + (m, m if full_matrices else k), a.dtype), TensorMeta(b + (k,), _real_dtype(a.dtype)),
            TensorMeta(b + (n if full_matrices else k, n), a.dtype))


@svd_op.backward
def _(ctx, gU, gS, gVh):
    (a,) = ctx.inputs
    U, S, Vh = ctx.outputs
    m, n = a.shape[-2:]
    k = min(m, n)
    if ctx.kwargs.get("full_matrices", True) and m != n:
        # the extra singular vectors are not unique: only the reduced part has a gradient
        U, Vh, gU, gVh = U[..., :, :k], Vh[..., :k, :], gU[..., :, :k], gVh[..., :k, :]
    V, gV = _H(Vh), _H(gVh)
    S2 = S * S
    F = _inv_gaps(S2[..., None, :] - S2[..., :, None],
                  burn.max(S2, axis=-1, keepdims=True)[..., None], k)   # F_ij = 1/(s_j^2 - s_i^2)
    UtgU, VtgV = _H(U) @ gU, _H(V) @ gV
    J = F * (UtgU - _H(UtgU))
    K = F * (VtgV - _H(VtgV))
    inner = _diag_embed(gS) + J * S[..., None, :] + S[..., :, None] * K
    smax = burn.max(S, axis=-1, keepdims=True)
    inv_s = _inv_gaps(S, smax, max(m, n))
    if a.dtype.is_complex:
        # each pair (u_i, v_i) is unique up to a common phase: the loss sees only the
        # difference of the phase changes, i (Im(U^H U_bar)_ii - Im(V^H V_bar)_ii) / (2 s_i)
        dphase = burn.imag(diagonal_op(UtgU, offset=0)) - burn.imag(diagonal_op(VtgV, offset=0))
        inner = inner + _diag_embed(dphase * inv_s * 0.5j)
    ga = U @ inner @ Vh
    if m > k:    # (I - U U^H) U_bar S^-1 V^H
        ga = ga + ((gU - U @ UtgU) * inv_s[..., None, :]) @ Vh
    if n > k:    # U S^-1 V_bar^H (I - V V^H)
        ga = ga + U @ (inv_s[..., :, None] * _H(gV - V @ VtgV))
    return (ga,)


@_ext("svdvals", _no_reference("svdvals"))
def svdvals_op():
    """``linalg::svdvals``."""


@svdvals_op.meta
def _(a):
    _floating("svdvals", a)
    _matrix("svdvals", a)
    return TensorMeta(tuple(a.shape[:-2]) + (min(a.shape[-2:]),), _real_dtype(a.dtype))


@svdvals_op.backward
def _(ctx, gS):
    (a,) = ctx.inputs
    U, _, Vh = svd_op(a, full_matrices=False)
    return (U @ (gS[..., :, None] * Vh),)


# -- eigh / eigvalsh -----------------------------------------------------------------------------------


@_ext("eigh", _no_reference("eigh"))
def eigh_op():
    """``linalg::eigh``."""


@eigh_op.meta
def _(a, *, UPLO="L"):
    _floating("eigh", a)
    _square("eigh", a)
    return (TensorMeta(tuple(a.shape[:-1]), _real_dtype(a.dtype)), TensorMeta(tuple(a.shape), a.dtype))


@eigh_op.backward
def _(ctx, gw, gV):
    # A_bar = V (diag(w_bar) + F o (V^H V_bar)) V^H, F_ij = 1/(w_j - w_i); Hermitian, as A is
    w, V = ctx.outputs
    k = w.shape[-1]
    F = _inv_gaps(w[..., None, :] - w[..., :, None],
                  burn.max(burn.abs(w), axis=-1, keepdims=True)[..., None], k)
    inner = _diag_embed(gw) + F * (_H(V) @ gV)
    return (_sym(V @ inner @ _H(V)),)


@_ext("eigvalsh", _no_reference("eigvalsh"))
def eigvalsh_op():
    """``linalg::eigvalsh``."""


@eigvalsh_op.meta
def _(a, *, UPLO="L"):
    _floating("eigvalsh", a)
    _square("eigvalsh", a)
    return TensorMeta(tuple(a.shape[:-1]), _real_dtype(a.dtype))


@eigvalsh_op.backward
def _(ctx, gw):
    (a,) = ctx.inputs
    _, V = eigh_op(a, UPLO=ctx.kwargs.get("UPLO", "L"))
    return ((V * gw[..., None, :]) @ _H(V),)


# -- eig / eigvals (general square matrices: complex results) -----------------------------------------


def _eig_meta(op, a):
    _floating(op, a)
    _square(op, a)
    return TensorMeta(tuple(a.shape[:-1]), complex_of(a.dtype))


def _eig_grad(a, w, V, gw, gV):
    """PyTorch's rule (linalg_eig_backward): with E_ij = conj(w_j - w_i),
    A_bar = V^-H (diag(w_bar) + (V^H V_bar - V^H V diag(Re diag(V^H V_bar))) / E) V^H,
    off the diagonal; the projection drops the part of V_bar that only turns a column's
    phase (the vectors are unit columns, unique up to that phase), so the gradient is that
    of a loss that does not depend on it. Repeated eigenvalues have no eigenvector gradient
    (1/E is infinite there), as in PyTorch. A real input gets the real part."""
    Vh = _H(V)
    n = w.shape[-1]
    I = _eye(n, V)
    inner = None
    if gV is not None:
        VhgV = Vh @ gV
        d = burn.real(burn.sum(VhgV * I, axis=-1)).astype(V.dtype)
        off = VhgV - Vh @ (V * d[..., None, :])
        wc = burn.conj(w)
        E = wc[..., None, :] - wc[..., :, None] + I         # 1 on the diagonal, masked below
        inner = off / E * (1 - I)
    if gw is not None:
        dg = _diag_embed(gw.astype(V.dtype))
        inner = dg if inner is None else inner + dg
    ga = solve_op(Vh, inner @ Vh)
    return ga if a.dtype.is_complex else burn.real(ga)


@_ext("eig", _no_reference("eig"))
def eig_op():
    """``linalg::eig``."""


eig_op.meta(lambda a: (_eig_meta("eig", a), TensorMeta(tuple(a.shape), complex_of(a.dtype))))


@eig_op.backward
def _(ctx, gw, gV):
    w, V = ctx.outputs
    return (_eig_grad(ctx.inputs[0], w, V, gw, gV),)


@_ext("eigvals", _no_reference("eigvals"))
def eigvals_op():
    """``linalg::eigvals``."""


eigvals_op.meta(lambda a: _eig_meta("eigvals", a))


@eigvals_op.backward
def _(ctx, gw):
    (a,) = ctx.inputs
    w, V = eig_op(a)
    return (_eig_grad(a, w, V, gw, None),)


# -- pinv / lstsq ------------------------------------------------------------------------------------


@_ext("pinv", _no_reference("pinv"))
def pinv_op():
    """``linalg::pinv``."""


@pinv_op.meta
def _(a, *, rcond, hermitian=False):
    _floating("pinv", a)
    _matrix("pinv", a)
    return TensorMeta(tuple(a.shape[:-2]) + (a.shape[-1], a.shape[-2]), a.dtype)


def _pinv_grad(a, P, gP):
    Pt, gPt = _H(P), _H(gP)
    ga = -(Pt @ gP @ Pt)
    ga = ga + (gPt - a @ (P @ gPt)) @ (P @ Pt)          # (I - A P) gP^H P P^H
    ga = ga + (Pt @ P) @ (gPt - (gPt @ P) @ a)          # P^H P gP^H (I - P A)
    return ga


@pinv_op.backward
def _(ctx, g):
    (a,) = ctx.inputs
    return (_pinv_grad(a, ctx.out, g),)


@_ext("lstsq", _no_reference("lstsq"))
def lstsq_op():
    """``linalg::lstsq``: the minimum-norm least-squares solution X of A X ~ B."""


@lstsq_op.meta
def _(a, b, *, rcond):
    _floating("lstsq", a, b)
    _matrix("lstsq", a)
    _matrix("lstsq", b, "b")
    _rows_match("lstsq", a, b, a.shape[-2])
    batch = _batch("lstsq", (a.shape[:-2], a), (b.shape[:-2], b))
    return TensorMeta(batch + (a.shape[-1], b.shape[-1]), a.dtype)


@lstsq_op.backward
def _(ctx, g):
    # X = pinv(A) B (what gelsd computes): differentiate through the pseudo-inverse
    a, b = ctx.inputs
    P = pinv_op(a, rcond=ctx.kwargs["rcond"], hermitian=False)
    gb = _H(P) @ g
    ga = _pinv_grad(a, P, g @ _H(b))
    return _sum_to(ga, a.shape), _sum_to(gb, b.shape)


# -- lu / lu_factor / lu_solve ----------------------------------------------------------------------------


@_ext("lu", _no_reference("lu"))
def lu_op():
    """``linalg::lu``: P, L, U with A = P L U (scipy.linalg.lu)."""


@lu_op.meta
def _(a, *, permute_l=False):
    _floating("lu", a)
    _matrix("lu", a)
    b, (m, n) = tuple(a.shape[:-2]), a.shape[-2:]
    k = min(m, n)
    L, U = TensorMeta(b + (m, k), a.dtype), TensorMeta(b + (k, n), a.dtype)
    return (L, U) if permute_l else (TensorMeta(b + (m, m), a.dtype), L, U)


def _lu_grad(P, L, U, gL, gU):
    # square A = P L U: A_bar = P L^-H (tril_-1(L^H L_bar) + triu(U_bar U^H)) U^-H
    M = burn.tril(_H(L) @ gL, k=-1) + burn.triu(gU @ _H(U))
    X = solve_triangular_op(L, M, trans=_ct(L), lower=True, unit_diagonal=True)
    Y = _H(solve_triangular_op(U, _H(X), trans=0, lower=False, unit_diagonal=False))
    return P @ Y


def _need_square(op, a):
    if a.shape[-1] != a.shape[-2]:
        raise burn.AutodiffError(f"linalg::{op}: the gradient is implemented for square matrices only, "
                                 f"got {_desc(a)}")


@lu_op.backward
def _(ctx, *grads):
    (a,) = ctx.inputs
    _need_square("lu", a)
    if ctx.kwargs.get("permute_l", False):
        P, L, U = lu_op(a, permute_l=False)
        gPL, gU = grads
        return (_lu_grad(P, L, U, _H(P) @ gPL, gU),)
    P, L, U = ctx.outputs
    return (_lu_grad(P, L, U, grads[1], grads[2]),)


@_ext("lu_factor", _no_reference("lu_factor"))
def lu_factor_op():
    """``linalg::lu_factor``: (LU packed, pivots) as scipy.linalg.lu_factor."""


@lu_factor_op.meta
def _(a):
    _floating("lu_factor", a)
    _square("lu_factor", a)
    return (TensorMeta(tuple(a.shape), a.dtype), TensorMeta(tuple(a.shape[:-1]), burn.int32))


@lu_factor_op.backward
def _(ctx, glu, gpiv):
    (a,) = ctx.inputs
    P, L, U = lu_op(a, permute_l=False)
    return (_lu_grad(P, L, U, burn.tril(glu, k=-1), burn.triu(glu)),)


@_ext("lu_solve", _no_reference("lu_solve"))
def lu_solve_op():
    """``linalg::lu_solve``: solve A X = B (trans=0), A^T X = B (1) or A^H X = B (2) from lu_factor's output."""


@lu_solve_op.meta
def _(lu, piv, b, *, trans=0):
    _floating("lu_solve", lu, b)
    _square("lu_solve", lu, "lu")
    _matrix("lu_solve", b, "b")
    if not piv.dtype.is_integer or len(piv.shape) < 1 or piv.shape[-1] != lu.shape[-1]:
        raise ShapeError(f"linalg::lu_solve: piv must be an integer tensor of shape (..., {lu.shape[-1]}) "
                         f"as returned by lu_factor, got {_desc(piv)}")
    _rows_match("lu_solve", lu, b, lu.shape[-1])
    batch = _batch("lu_solve", (lu.shape[:-2], lu), (piv.shape[:-1], piv), (b.shape[:-2], b))
    return TensorMeta(batch + tuple(b.shape[-2:]), b.dtype)


def _adjoint_solve(solve, trans, g, complex_):
    """op(A)^-H g from a solve(y, trans) of op(A) = A, A^T or A^H (trans 0, 1, 2)."""
    if not complex_:
        return solve(g, 1 - min(trans, 1))
    if trans == 1:          # (A^T)^-H = conj(A)^-1: conjugate around a plain solve
        return burn.conj(solve(burn.conj(g), 0))
    return solve(g, 2 - trans)


@lu_solve_op.backward
def _(ctx, g):
    lu, piv, b = ctx.inputs
    trans = ctx.kwargs.get("trans", 0)
    x = ctx.out
    cplx = lu.dtype.is_complex
    gb = _adjoint_solve(lambda y, t: lu_solve_op(lu, piv, y, trans=t), trans, g, cplx)
    L = burn.tril(lu, k=-1) + _eye(lu.shape[-1], lu)
    U = burn.triu(lu)

    def lt_ut(y, t):   # L^-T U^-T y (t=1) or L^-H U^-H y (t=2); P^T A^-T y resp. P^T A^-H y
        z = solve_triangular_op(U, y, trans=t, lower=False, unit_diagonal=False)
        return solve_triangular_op(L, z, trans=t, lower=True, unit_diagonal=True)

    # P^T A_bar with A = P L U: A_bar = -A^-H g x^H (trans 0), -conj(x) gb^T (1), -x gb^H (2),
    # with P^T x = L^-T U^-T b (1) resp. L^-H U^-H b (2)
    if trans == 0:
        PtgA = -(lt_ut(g, _ct(lu)) @ _H(x))
    elif trans == 1:
        PtgA = -(_conj(lt_ut(b, 1)) @ _T(gb))
    else:
        PtgA = -(lt_ut(b, 2) @ _H(gb))
    glu = burn.tril(PtgA @ _H(U), k=-1) + burn.triu(_H(L) @ PtgA)
    return _sum_to(glu, lu.shape), None, _sum_to(gb, b.shape)


# -- solve_triangular ----------------------------------------------------------------------------------

def _solve_triangular_ref(a, b, *, trans=0, lower=False, unit_diagonal=False):
    # substitution, one row per step, in burn ops (any backend)
    if trans:
        a, lower = (_H(a) if trans == 2 else _T(a)), not lower
    n = a.shape[-1]
    rows = [None] * n
    order = range(n) if lower else range(n - 1, -1, -1)
    done = []
    for i in order:
        r = b[..., i, :]
        if done:
            idx = done
            coeffs = burn.stack([a[..., i, j] for j in idx], axis=-1)          # (..., len)
            xs = burn.stack([rows[j] for j in idx], axis=-2)                    # (..., len, k)
            r = r - burn.sum(coeffs[..., :, None] * xs, axis=-2)
        rows[i] = r if unit_diagonal else r / a[..., i, i][..., None]
        done.append(i)
    return burn.stack(rows, axis=-2)


@_ext("solve_triangular", _solve_triangular_ref)
def solve_triangular_op():
    """``linalg::solve_triangular``."""


@solve_triangular_op.meta
def _(a, b, *, trans=0, lower=False, unit_diagonal=False):
    _floating("solve_triangular", a, b)
    _square("solve_triangular", a)
    _matrix("solve_triangular", b, "b")
    _rows_match("solve_triangular", a, b, a.shape[-1])
    batch = _batch("solve_triangular", (a.shape[:-2], a), (b.shape[:-2], b))
    return TensorMeta(batch + tuple(b.shape[-2:]), b.dtype)


@solve_triangular_op.backward
def _(ctx, g):
    a, b = ctx.inputs
    kw = ctx.kwargs
    trans, lower, unit = kw.get("trans", 0), kw.get("lower", False), kw.get("unit_diagonal", False)
    x = ctx.out
    gb = _adjoint_solve(lambda y, t: solve_triangular_op(a, y, trans=t, lower=lower, unit_diagonal=unit),
                        trans, g, a.dtype.is_complex)
    # the gradient for op(A) is -gb x^H; A's is that, transposed (1) or conjugate-transposed (2)
    ga = -(gb @ _H(x)) if trans == 0 else -(_conj(x) @ _T(gb)) if trans == 1 else -(x @ _H(gb))
    k = (-1 if lower else 1) if unit else 0
    ga = burn.tril(ga, k=k) if lower else burn.triu(ga, k=k)
    return _sum_to(ga, a.shape), _sum_to(gb, b.shape)
