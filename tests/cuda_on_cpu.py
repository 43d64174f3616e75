"""Generated CUDA C run on the CPU: a shim for CUDA's spellings, built with g++ (shared by tests).

burn's generated kernels are plain C++ apart from CUDA's spellings: with :data:`SHIM` (thread
indices as globals, ``__global__``/``__device__`` erased, the ``_rn`` intrinsics as IEEE
operations) g++ builds them into a library whose drivers run every thread in turn, setting
``blockIdx``/``threadIdx`` first. That executes the real kernel text (index arithmetic, bounds,
order of operations) against numpy/SciPy/PyTorch without a GPU; nvcc checks it compiles for one.
``-ffp-contract=off`` keeps g++ from fusing what the ``_rn`` intrinsics forbid nvcc to fuse.

Example (a test with ``tmp_path``)::

    lib = build_library(tmp_path, "k", SHIM + kernel_source + driver_source)
    lib.run_k(ctypes.c_longlong(n), a.ctypes.data_as(ctypes.c_void_p))
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess

GXX = shutil.which("g++")

SHIM = r"""
#include <cmath>
#include <cstring>
struct burn_dim3 { unsigned x, y, z; };
static burn_dim3 blockIdx, blockDim, threadIdx;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
using std::isnan;
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return std::sqrt(a); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsqrt_rn(double a) { return std::sqrt(a); }
static inline float __int_as_float(int v) { float f; std::memcpy(&f, &v, 4); return f; }
static inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
"""


def build_library(tmp_path, stem: str, source: str) -> ctypes.CDLL:
    """Compile ``source`` (C++: :data:`SHIM`, a kernel's CUDA C, ``extern "C"`` drivers) with g++
    into ``tmp_path/<stem>.so`` and load it; a compile error fails the test with g++'s message."""
    src = tmp_path / f"{stem}.cpp"
    src.write_text(source)
    lib = tmp_path / f"{stem}.so"
    r = subprocess.run([GXX, "-O1", "-std=c++17", "-ffp-contract=off", "-shared", "-fPIC", str(src), "-o", str(lib)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return ctypes.CDLL(str(lib))
