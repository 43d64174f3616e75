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


# CUDA's vector types (vector_types.h: the alignment is the point, a misaligned vector load
# faults), their make_ functions, and __half / __nv_bfloat16 as 16-bit storage that converts
# to and from float with round-to-nearest-even (cuda_fp16.h / cuda_bf16.h); the burn.codegen
# vector kernels (``name_v<pattern>``) use these. Appended to SHIM by the tests that need it.
VECTOR_SHIM = r"""
#include <cstdint>
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) longlong2 { long long x, y; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(4) uchar4 { unsigned char x, y, z, w; };
struct alignas(4) char4 { signed char x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
static inline double2 make_double2(double x, double y) { return {x, y}; }
static inline longlong2 make_longlong2(long long x, long long y) { return {x, y}; }
static inline uchar4 make_uchar4(unsigned char x, unsigned char y, unsigned char z, unsigned char w) {
    return {x, y, z, w};
}
static inline char4 make_char4(signed char x, signed char y, signed char z, signed char w) { return {x, y, z, w}; }
struct __half {
    unsigned short bits;
    __half() = default;
    __half(float f) { _Float16 h = (_Float16)f; std::memcpy(&bits, &h, 2); }
    operator float() const { _Float16 h; std::memcpy(&h, &bits, 2); return (float)h; }
};
struct __nv_bfloat16 {
    unsigned short bits;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) {
        uint32_t u; std::memcpy(&u, &f, 4);
        bits = (u & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((u >> 16) | 0x40u)
                                               : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    operator float() const { uint32_t u = (uint32_t)bits << 16; float f; std::memcpy(&f, &u, 4); return f; }
};
static inline __half __ushort_as_half(unsigned short b) { __half h; h.bits = b; return h; }
static inline unsigned short __half_as_ushort(__half h) { return h.bits; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { __nv_bfloat16 h; h.bits = b; return h; }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.bits; }
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
