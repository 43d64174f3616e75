// One radix-R Stockham pass of burn.signal's FFT (a program per dtype and radix, after common.cl).
// The host defines R (2..16) and the straight-line code it generates for that radix:
//   DFT_F / DFT_I  the R-point DFT (forward / inverse) of u0..u(R-1) into v0..v(R-1), constant
//                  twiddles, multiplications by 1 and +-i left out: no loops, no barriers.
// Index math is 32-bit: total = rows * n / R < 2^32 work-items (64-bit divisions are slow on CPUs).

// REP1(M) expands to M(1) M(2) ... M(R-1), REP(M) to M(0) M(1) ... M(R-1): the R loads,
// twiddles and stores of a work-item, unrolled
#define REP1_2(M) M(1)
#define REP1_3(M) REP1_2(M) M(2)
#define REP1_4(M) REP1_3(M) M(3)
#define REP1_5(M) REP1_4(M) M(4)
#define REP1_6(M) REP1_5(M) M(5)
#define REP1_7(M) REP1_6(M) M(6)
#define REP1_8(M) REP1_7(M) M(7)
#define REP1_9(M) REP1_8(M) M(8)
#define REP1_10(M) REP1_9(M) M(9)
#define REP1_11(M) REP1_10(M) M(10)
#define REP1_12(M) REP1_11(M) M(11)
#define REP1_13(M) REP1_12(M) M(12)
#define REP1_14(M) REP1_13(M) M(13)
#define REP1_15(M) REP1_14(M) M(14)
#define REP1_16(M) REP1_15(M) M(15)
#define REP_CAT_(a, b) a##b
#define REP_CAT(a, b) REP_CAT_(a, b)
#define REP1(M) REP_CAT(REP1_, R)(M)
#define REP(M) M(0) REP1(M)

// input j of the R of work-item i: source rows hold mv values, zeros after
#define LOAD(j) C u##j = i + j * q < mv ? x[i + j * q] : (C)(0, 0);
#define TWIDDLE_F(j) { C w = tw[j * ts]; u##j = cmul(u##j, w); }
#define TWIDDLE_I(j) { C w = tw[j * ts]; w.y = -w.y; u##j = cmul(u##j, w); }
#define STORE(j) y[j0 + j * p] = v##j;

// one radix-R pass (forward: pass_f, inverse: pass_i); q = n / R, p = span done, tstep = n / (R p).
// Source rows start at xoff + b xs and hold mv values (zeros after): the first pass reads a
// contiguous input in place, cropped or zero-padded, without a copy.
#define PASS(NAME, TWIDDLE, DFT)                                                                  \
__kernel void NAME(uint q, uint p, uint total, uint tstep, __global const C* x, __global C* y,    \
                   __global const C* tw, ulong xoff, uint xs, uint mv) {                          \
  uint g = get_global_id(0); if (g >= total) return;                                             \
  uint b = g / q, i = g - b * q, k = i % p;                                                      \
  x += xoff + (size_t)b * xs; y += (size_t)b * q * R;                                            \
  REP(LOAD)                                                                                      \
  if (p > 1) {                                                                                   \
    uint ts = k * tstep;                                                                         \
    REP1(TWIDDLE)                                                                                \
  }                                                                                              \
  DFT                                                                                            \
  uint j0 = (i - k) * R + k;                                                                     \
  REP(STORE)                                                                                     \
}

PASS(pass_f, TWIDDLE_F, DFT_F)
PASS(pass_i, TWIDDLE_I, DFT_I)

// the stft's first forward pass (p = 1, no twiddles), its rows (signal, segment) windowed and scaled
// from the signal as it loads them: no framing pass over memory
#define LOAD_FRAME(j) C u##j = frame(i + j * q, n, nper, pk, cplx, i0, x, base, sx, w, ow, sw, sc);
#define STORE_ROW(j) y[i * R + j] = v##j;

__kernel void pass_frames(uint q, uint total, __global const T* x, __global C* y, int n, int nper, int step,
                          int pl, uint nseg, int pk, int cplx, long ox, long sx, uint d1, uint d2, uint d3,
                          long s0, long s1, long s2, long s3, __global const T* w, long ow, long sw,
                          __global const T* isc) {
  uint g = get_global_id(0); if (g >= total) return;
  uint b = g / q, i = g - b * q;
  uint sgl = b / nseg; int sg = b - sgl * nseg;
  long base = ox + row_base(sgl, d1, d2, d3, s0, s1, s2, s3);
  long i0 = (long)sg * step - pl;
  T sc = isc[0];
  y += (size_t)b * q * R;
  REP(LOAD_FRAME)
  DFT_F
  REP(STORE_ROW)
}
