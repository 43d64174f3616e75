"""matmul on cuda: cuBLAS through CuPy, and float16 / bfloat16 through cuBLAS's GemmEx (half
storage, float32 accumulation); the fused ``burn::linear_relu``.

``cupy.matmul`` multiplies bfloat16 only after casting it to float32 (burn-cuda then ran
SGEMM: 0.07x PyTorch on an H200 at 4096^3) and reaches float16's tensor cores through a
generic path. :func:`gemm_ex` calls ``cublasGemmEx`` / ``cublasGemmStridedBatchedEx``
(CuPy's bindings, ``cupy.cuda.cublas``) itself: A, B and C in ``CUDA_R_16F`` /
``CUDA_R_16BF`` (C may be ``CUDA_R_32F``: linear_relu's epilogue then rounds once),
``CUBLAS_COMPUTE_32F`` (float32 accumulation; no TF32, which only concerns float32
inputs), alpha = 1 and beta = 0 as float32 on the host, the device's cuBLAS handle on
burn's stream.

Layouts. cuBLAS is column-major: a row-major ``C = A @ B`` is computed as
``C^T = B^T A^T``, for which the row-major memory of B and A already is the column-major
B^T and A^T (``op N``, leading dimension = row stride). An operand whose last two dims are
a transposed contiguous layout (``x.mT`` of a contiguous tensor) is passed with ``op T``
and its column stride, without a copy; other layouts (slices with steps, negative strides)
are copied to C-contiguous first. Batch dims broadcast as numpy's: a broadcast operand
gets batch stride 0; batch dims whose strides cannot be merged into one (e.g. [2,1,M,K] @
[1,3,K,N]) are looped over in Python around one strided-batched call; [B.., M, K] @ [K, N]
with a row-major A is one [B..*M, K] @ [K, N] GEMM. Empty results are allocated without a
cuBLAS call (K = 0 gives zeros, as numpy and torch).

bfloat16 GEMMs need compute capability 8.0 (Ampere): :func:`supported` says whether this
device runs them; before that, :func:`matmul` keeps the float32 SGEMM path.
"""
from __future__ import annotations

import math

import numpy as np

from burn.errors import BurnError

from ..native import dtype_name, elem_strides
from .elementwise import _cp, _dc_of

# cudaDataType_t (library_types.h) and cuBLAS's enums (cublas_api.h): ABI values, stable
# across CUDA 11-13, written out because CuPy does not export all of them from one module
CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUBLAS_POINTER_MODE_HOST = 0
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1          # cuBLAS >= 11 picks tensor-core kernels for half inputs itself

CUDA_TYPE = {"float16": CUDA_R_16F, "bfloat16": CUDA_R_16BF, "float32": CUDA_R_32F}
# the oldest compute capability (major * 10 + minor) with cuBLAS GEMMs of each input type
MIN_CC = {"float16": 53, "bfloat16": 80}

# alpha and beta in the compute type (float32) on the host, alive as long as the process
_ONE = np.ones((), np.float32)
_ZERO = np.zeros((), np.float32)
_ONE_PTR, _ZERO_PTR = int(_ONE.ctypes.data), int(_ZERO.ctypes.data)
INT_MAX = (1 << 31) - 1
_CC: dict = {}


def supported(dc, dtype: str) -> bool:
    """Whether device context ``dc`` multiplies ``dtype`` (float16/bfloat16) with GemmEx:
    float16 from sm_53, bfloat16 from sm_80 (Ampere); never other dtypes.

    Example (on a GPU)::

        assert supported(burn_cuda.runtime.context(0), "float16")
    """
    need = MIN_CC.get(dtype)
    if need is None:
        return False
    cc = _CC.get(dc.index)
    if cc is None:
        cc = _CC[dc.index] = int(dc.device.compute_capability)
    return cc >= need


def operand_layout(rows: int, cols: int, s_rows: int, s_cols: int):
    """How cuBLAS reads a row-major ``[rows, cols]`` matrix with element strides ``(s_rows,
    s_cols)`` as its column-major transpose: ``(op, ld)``, or None when it must be copied.

    Row-major memory (``s_cols == 1``) is that transpose already (op N, ld = row stride);
    column-major memory (``s_rows == 1``, a ``.mT`` view) is passed as op T with ld = the
    column stride. Strides of a size-one dim do not matter.

    >>> assert operand_layout(3, 5, 5, 1) == (CUBLAS_OP_N, 5)      # C-contiguous
    >>> assert operand_layout(3, 5, 1, 3) == (CUBLAS_OP_T, 3)      # transposed contiguous
    >>> assert operand_layout(3, 5, 10, 2) is None                 # a stepped slice: copy
    """
    if (cols == 1 or s_cols == 1) and (rows == 1 or s_rows >= max(1, cols)):
        return CUBLAS_OP_N, (s_rows if rows > 1 else max(1, cols))
    if (rows == 1 or s_rows == 1) and (cols == 1 or s_cols >= max(1, rows)):
        return CUBLAS_OP_T, (s_cols if cols > 1 else max(1, rows))
    return None


def batch_plan(batch: tuple, strides: list) -> int:
    """The first batch dim from which every operand's batch strides (``strides``: one list per
    operand, aligned to ``batch``, 0 where it broadcasts) merge into one stride: dims before
    it are looped over, dims from it on are one strided-batched call.

    >>> assert batch_plan((2, 3), [[15, 5], [0, 0]]) == 0    # contiguous and broadcast: one call
    >>> assert batch_plan((2, 3), [[15, 0], [0, 20]]) == 1   # [2,1,..] @ [1,3,..]: loop over 2
    """
    s = max(len(batch) - 1, 0)
    while s > 0 and all(st[s - 1] == st[s] * batch[s] for st in strides):
        s -= 1
    return s


def _broadcast(x, y):
    """numpy's broadcast of two batch shapes (core's meta rule has checked that they broadcast)."""
    n = max(len(x), len(y))
    x, y = (1,) * (n - len(x)) + tuple(x), (1,) * (n - len(y)) + tuple(y)
    return tuple(int(p if q == 1 else q) for p, q in zip(x, y))


def _batch_strides(x, batch):
    """``x``'s batch strides (elements) aligned to the output's batch shape (0 where x broadcasts)."""
    nb = x.ndim - 2
    st = elem_strides(x)[:nb]
    lead = len(batch) - nb
    return [0] * lead + [0 if x.shape[d] == 1 else st[d] for d in range(nb)]


def _check_int(what, values, a, b):
    if max(values) > INT_MAX:
        raise BurnError(f"cuda: matmul {tuple(a.shape)} @ {tuple(b.shape)} ({dtype_name(a)}): {what} "
                        f"exceeds cuBLAS's 32-bit int ({max(values)}); split the product into smaller ones")


def gemm_ex(dc, a, b, out_dtype=None):
    """``a @ b`` for float16/bfloat16 CuPy arrays ``[..., M, K] @ [..., K, N]`` (batch dims
    broadcast) with cuBLAS GemmEx, float32 accumulation; the result is C-contiguous in
    ``out_dtype`` (default: the operands' dtype; float32 keeps the unrounded sums).
    Called inside ``dc.scope()`` (burn's device, stream and pool).

    Example (on a GPU)::

        c = gemm_ex(dc, cupy.ones((2, 8, 4), cupy.float16), cupy.ones((4, 3), cupy.float16))
        assert c.shape == (2, 8, 3) and float(c[0, 0, 0]) == 4.0
    """
    cp = dc.cp
    name = dtype_name(a)
    if dtype_name(b) != name or name not in ("float16", "bfloat16"):
        raise BurnError(f"cuda: GemmEx matmul takes two float16 or two bfloat16 operands, got "
                        f"{name} {tuple(a.shape)} @ {dtype_name(b)} {tuple(b.shape)}")
    out_dtype = a.dtype if out_dtype is None else np.dtype(out_dtype)
    m_, k_ = a.shape[-2:]
    n_ = b.shape[-1]
    if b.shape[-2] != k_:
        raise BurnError(f"cuda: matmul inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    batch = _broadcast(a.shape[:-2], b.shape[:-2]) if a.ndim > 2 or b.ndim > 2 else ()
    out_shape = batch + (m_, n_)
    if 0 in out_shape:
        return cp.empty(out_shape, out_dtype)
    if k_ == 0:
        return cp.zeros(out_shape, out_dtype)
    lay = []
    for i, x in enumerate((a, b)):
        r, c = x.shape[-2:]
        s_r, s_c = elem_strides(x)[-2:]
        layout = operand_layout(r, c, s_r, s_c)
        if layout is None or any(s < 0 for s in _batch_strides(x, batch)):
            x = cp.ascontiguousarray(x)
            layout = operand_layout(r, c, *elem_strides(x)[-2:])
            if i == 0:
                a = x
            else:
                b = x
        lay.append(layout)
    (op_a, ld_a), (op_b, ld_b) = lay
    sa, sb = _batch_strides(a, batch), _batch_strides(b, batch)
    keep = [d for d, s in enumerate(batch) if s != 1]     # size-one batch dims index nothing
    batch, sa, sb = tuple(batch[d] for d in keep), [sa[d] for d in keep], [sb[d] for d in keep]
    nbatch = math.prod(batch)
    m, n = m_, n_
    if batch and not any(sb) and op_a == CUBLAS_OP_N and batch_plan(batch, [sa]) == 0 \
            and sa[-1] == m * ld_a and m * nbatch <= INT_MAX:
        # b is shared by every batch and a's rows continue across batches: one tall GEMM
        m, nbatch, batch, sa, sb = m * nbatch, 1, (), [], []
    _check_int("a dimension or leading dimension", (m, n, k_, ld_a, ld_b, nbatch), a, b)
    out = cp.empty(out_shape, out_dtype)
    itemsize, out_item = a.dtype.itemsize, out.dtype.itemsize
    t_in, t_out = CUDA_TYPE[name], CUDA_TYPE[out.dtype.name]
    cublas = cp.cuda.cublas
    handle = cp.cuda.device.get_cublas_handle()
    # burn's stream (CuPy's wrappers set the current one, which inside scope() is the same) and
    # host scalars: another library may have left the shared handle in device pointer mode
    cublas.setStream(handle, dc.stream.ptr)
    cublas.setPointerMode(handle, CUBLAS_POINTER_MODE_HOST)
    pa, pb, pc = int(a.data.ptr), int(b.data.ptr), int(out.data.ptr)
    # C^T (n x m, ldc = n) = B^T (n x k) A^T (k x m): cuBLAS's A is our b, its B our a
    if not batch:
        cublas.gemmEx(handle, op_b, op_a, int(n), int(m), int(k_), _ONE_PTR,
                      pb, t_in, int(ld_b), pa, t_in, int(ld_a), _ZERO_PTR,
                      pc, t_out, int(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
        return out
    j = batch_plan(batch, [sa, sb])
    inner = math.prod(batch[j:])
    so = [math.prod(batch[d + 1:]) * m * n for d in range(len(batch))]
    _check_int("the batch count", (inner,), a, b)
    for idx in np.ndindex(*batch[:j]):
        oa = sum(i * s for i, s in zip(idx, sa))
        ob = sum(i * s for i, s in zip(idx, sb))
        oc = sum(i * s for i, s in zip(idx, so))
        cublas.gemmStridedBatchedEx(
            handle, op_b, op_a, int(n), int(m), int(k_), _ONE_PTR,
            pb + ob * itemsize, t_in, int(ld_b), int(sb[-1]),
            pa + oa * itemsize, t_in, int(ld_a), int(sa[-1]), _ZERO_PTR,
            pc + oc * out_item, t_out, int(n), int(m * n), int(inner), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
    return out


def _half(x):
    return dtype_name(x) in ("float16", "bfloat16")


def matmul(a, b):
    """cuBLAS (batched by broadcasting): float16 and bfloat16 through GemmEx with float32
    accumulation (:func:`gemm_ex`), other dtypes through CuPy's matmul; bfloat16 on
    GPUs before sm_80 (no bfloat16 GEMM) is cast to float32, multiplied by SGEMM and cast back."""
    if a.dtype.kind == "b":
        r = _cp().matmul(a.astype(np.int64), b.astype(np.int64)) != 0
        return r
    name = dtype_name(a)
    if name in ("float16", "bfloat16"):
        dc = _dc_of((a,))
        if supported(dc, name):
            return gemm_ex(dc, a, b)
    if name == "bfloat16":
        return _cp().matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    r = _cp().matmul(a, b)
    return r if r.dtype == a.dtype else r.astype(a.dtype)


def linear_relu(x, w, b):
    """burn::linear_relu: one cuBLAS call, then bias + relu in place (one generated kernel).
    bfloat16 (like flex) adds the bias to the float32 sums and rounds once, at the end."""
    cp = _cp()
    name = dtype_name(x)
    if name in ("float16", "bfloat16") and supported(_dc_of((x,)), name):
        wide = name == "bfloat16"
        y = gemm_ex(_dc_of((x,)), x, w, out_dtype=np.float32 if wide else None)
        y += b.astype(np.float32) if wide else b
        cp.maximum(y, 0, out=y)
        return y.astype(x.dtype) if wide else y
    if name == "bfloat16":
        y = cp.matmul(x.astype(np.float32), w.astype(np.float32))
        y += b.astype(np.float32)
        cp.maximum(y, 0, out=y)
        return y.astype(x.dtype)
    y = cp.matmul(x, w)
    y += b
    cp.maximum(y, 0, out=y)
    return y
