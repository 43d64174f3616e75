// max pooling, its gradient and col2im over NCHW C-contiguous arrays, one dtype: one thread
// per output element of the pool, per input element of the gradients (which gather, so no
// two threads write one place). Defines: T (storage type), LD / ST (storage <-> the compute
// type C of the prelude), LOW (-inf in C), DIMS (the int dims after the arrays); kernels are
// named burn_conv_<kind>_DTYPE.
// the value of padded position (r, c) of one plane: the padding reads as -inf (max pooling)
__device__ __forceinline__ C burn_win_at(const T* xp, int r, int c, int H, int W) {
    return (r >= 0 && r < H && c >= 0 && c < W) ? LD(xp[(long long)r * W + c]) : LOW;
}

// the output position (oh, ow) whose window puts its offset (a, b) on input (h, w), if any
// (the gradients gather per input element, so no two threads write one place)
__device__ __forceinline__ bool burn_win_src(int h, int w, int a, int b, int& oh, int& ow,
        int OH, int OW, int SH, int SW, int PT, int PL, int DH, int DW) {
    int rr = h + PT - a * DH, cc = w + PL - b * DW;
    if (rr < 0 || rr % SH || cc < 0 || cc % SW) return false;
    oh = rr / SH;
    ow = cc / SW;
    return oh < OH && ow < OW;
}

extern "C" __global__ void burn_conv_maxpool_DTYPE(long long n, const T* __restrict__ x, T* __restrict__ out,
        DIMS) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int ow = (int)(i % OW); long long t = i / OW; int oh = (int)(t % OH); long long nc = t / OH;
    const T* xp = x + nc * H * W;
    C acc = burn_win_at(xp, oh * SH - PT, ow * SW - PL, H, W);
    for (int a = 0; a < KH; ++a)
        for (int b = (a == 0); b < KW; ++b) {
            C v = burn_win_at(xp, oh * SH + a * DH - PT, ow * SW + b * DW - PL, H, W);
            acc = (isnan(acc) || acc >= v) ? acc : v;       // maximum(): NaN propagates
        }
    out[i] = ST(acc);
}

extern "C" __global__ void burn_conv_maxpool_grad_DTYPE(long long n, const T* __restrict__ x,
        const T* __restrict__ out, const T* __restrict__ g, T* __restrict__ gx, DIMS) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int w = (int)(i % W); long long t = i / W; int h = (int)(t % H); long long nc = t / H;
    const T* xp = x + nc * H * W;
    const T* op = out + nc * OH * OW;
    const T* gp = g + nc * OH * OW;
    C xv = LD(x[i]);
    C acc = 0;
    for (int a = 0; a < KH; ++a)
        for (int b = 0; b < KW; ++b) {
            int oh, ow;
            if (!burn_win_src(h, w, a, b, oh, ow, OH, OW, SH, SW, PT, PL, DH, DW)) continue;
            long long o = (long long)oh * OW + ow;
            C ov = LD(op[o]);
            bool hit = xv == ov;
            // the window's gradient goes to its first maximum (row-major): none before (a, b)
            for (int a2 = 0; hit && a2 <= a; ++a2)
                for (int b2 = 0; b2 < (a2 == a ? b : KW); ++b2)
                    if (burn_win_at(xp, oh * SH + a2 * DH - PT, ow * SW + b2 * DW - PL, H, W) == ov) {
                        hit = false;
                        break;
                    }
            acc = ADD(acc, MUL(hit ? (C)1 : (C)0, LD(gp[o])));
        }
    gx[i] = ST(acc);
}

extern "C" __global__ void burn_conv_col2im_DTYPE(long long n, const T* __restrict__ cols, T* __restrict__ gx,
        DIMS) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int w = (int)(i % W); long long t = i / W; int h = (int)(t % H); long long nc = t / H;
    const T* cp = cols + nc * KH * KW * OH * OW;
    C acc = 0;
    for (int a = 0; a < KH; ++a)
        for (int b = 0; b < KW; ++b) {
            int oh, ow;
            if (burn_win_src(h, w, a, b, oh, ow, OH, OW, SH, SW, PT, PL, DH, DW))
                acc = ADD(acc, LD(cp[(((long long)a * KW + b) * OH + oh) * OW + ow]));
        }
    gx[i] = ST(acc);
}
