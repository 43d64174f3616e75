"""The Stockham passes of burn.signal's wgpu FFT: their plan and their generated code.

A row of length n = R1 R2 ... runs one pass per radix R (Stockham autosort:
ping-pong buffers, no digit reversal): with p the span done so far,
work-item (row, i < n / R) reads u_j = x[i + j n / R], twiddles them by
W_(R p)^(j k) (k = i mod p, from a table of length n), takes their R-point
DFT in registers and writes y[(i - k) R + k + j p]. The kernels are
``kernels/fft_pass.cl``; the R-point DFT is straight-line code generated here
(constant twiddles, multiplications by 1 and +-i left out: no loops, no
barriers) and handed to it as ``#define``s (``DFT_F``, ``DFT_I``), with the radix ``R``.

Measured on PoCL (CPU), 2^19 points: radix 16 ~1.6x faster than radix 4 (32:
no better); work-group-local sub-FFTs (radix-8 stages between barriers in
local memory) ~1.7x slower than radix-16 global passes; twiddles computed with
sincos per element ~5.7x slower than table reads, and powers of a few table
entries no faster. (PoCL does not vectorize float2 code across work-items; a
split re/im version that it did vectorize ran slower.)
"""
from __future__ import annotations

import functools
import math

from burn_wgpu import api as wgpu

from .. import _sources
from .common import defines

PMAX = 16                        # the largest radix of a pass
PRIMES = (2, 3, 5, 7, 11, 13)    # a length with another prime factor runs Bluestein


def radices(n):
    """The radices of the passes of an n-point FFT (product n), or None if n needs Bluestein.

    >>> radices(1 << 19), radices(3 << 18), radices(1_000_003)
    ([16, 16, 16, 16, 8], [16, 16, 16, 16, 12], None)
    """
    fs = []
    for f in PRIMES:
        while n % f == 0:
            fs.append(f)
            n //= f
    if n != 1:
        return None
    # first-fit decreasing into passes of at most PMAX points (a prime above it is a pass of its own)
    bins: list = []
    for f in sorted(fs, reverse=True):
        for i, b in enumerate(bins):
            if b * f <= PMAX:
                bins[i] = b * f
                break
        else:
            bins.append(f)
    return sorted(bins, reverse=True)


def _factors(R):
    out, r = [], R
    for f in PRIMES:
        while r % f == 0:
            out.append(f)
            r //= f
    return out


def dft_code(R, fwd):
    """OpenCL C statements: the R-point DFT (sign -1 if fwd) of u0..u(R-1) into v0..v(R-1),
    straight-line, one line (a ``#define``'s value).

    >>> dft_code(2, True)
    'C t1 = u0 + u1; C t2 = -u1; C t3 = u0 + t2; C v0 = t1; C v1 = t3;'
    """
    sg = -1 if fwd else 1
    lines, cur, tmp = [], [f"u{j}" for j in range(R)], [0]

    def new():
        tmp[0] += 1
        return f"t{tmp[0]}"

    def rot(v, e, den):
        # v * exp(sg 2 pi i e / den), exact for the multiples of a quarter turn
        e %= den
        if e == 0:
            return v
        if 4 * e == den or 4 * e == 3 * den:
            s = sg if 4 * e == den else -sg      # v * (s i)
            t = new()
            lines.append(f"C {t} = (C)({'-' if s > 0 else ''}{v}.y, {'' if s > 0 else '-'}{v}.x);")
            return t
        if 2 * e == den:
            t = new()
            lines.append(f"C {t} = -{v};")
            return t
        ang = sg * 2 * math.pi * e / den
        c, si = repr(math.cos(ang)), repr(math.sin(ang))
        t = new()
        lines.append(f"C {t} = (C)({v}.x * (T){c} - {v}.y * (T){si}, {v}.x * (T){si} + {v}.y * (T){c});")
        return t

    p = 1
    for f in _factors(R):
        nxt = [None] * R
        q = R // f
        for i in range(q):
            k = i % p
            us = [rot(cur[i + j * q], j * k, f * p) for j in range(f)]
            for m in range(f):
                terms = [rot(us[j], j * m, f) if j else us[j] for j in range(f)]
                t = new()
                lines.append(f"C {t} = " + " + ".join(terms) + ";")
                nxt[(i - k) * f + k + m * p] = t
        cur = nxt
        p *= f
    lines += [f"C v{j} = {cur[j]};" for j in range(R)]
    return " ".join(lines)


#: the files of a pass program (its #defines: :func:`pass_defines`)
PASS_FILES = ("common.cl", "fft_pass.cl")


@functools.lru_cache(maxsize=None)
def pass_defines(T, R):
    """The ``#define``s of the radix-R pass program in OpenCL type ``T``: the dtype, ``R`` and
    the generated R-point DFTs ``DFT_F`` / ``DFT_I``. Its kernels: ``pass_f`` (forward), ``pass_i``
    (inverse) and ``pass_frames`` (an stft's first forward pass).

    >>> d = pass_defines("float", 4)
    >>> assert d["R"] == 4 and d["DFT_I"].startswith("C t1 = u0 + u2;") and "FP64" not in d
    """
    return {**defines(T), "R": R, "DFT_F": dft_code(R, True), "DFT_I": dft_code(R, False)}


@functools.lru_cache(maxsize=None)
def _program(dc, T, R):
    # one Program per device, dtype and radix: its kernels are looked up once
    return wgpu.program(_sources.concat(PASS_FILES), defines=pass_defines(T, R), device=dc)


def pass_kernel(dc, T, R, name):
    """Kernel ``name`` of the radix-R pass program in OpenCL type ``T`` on ``dc`` (compiled once).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> assert pass_kernel(wgpu.device_of(), "float", 4, "pass_f").function_name == "pass_f"
    """
    return _program(dc, T, R).kernel(name)
