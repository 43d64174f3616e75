// burn::adam_update: one thread per element of contiguous p g m v; h holds the ten float64
// hyperparameters; mode 0 none, 1 L2 (g + p * wd), 2 decoupled (p * (1 - lr * wd)).
// The reference's operation order, every op rounded as flex rounds it (MUL ADD SUB DIV SQRT
// from the prelude: no FMA contraction). Defines: T (storage type), LD / ST (storage <-> the
// compute type C), HP (a float64 hyperparameter as C); the kernel is named burn_optim_adam_DTYPE.
extern "C" __global__ void burn_optim_adam_DTYPE(long long n, const T* __restrict__ p, const T* __restrict__ g,
        const T* __restrict__ m, const T* __restrict__ v, const double* __restrict__ h, int mode,
        T* __restrict__ po, T* __restrict__ mo, T* __restrict__ vo) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const C lr = HP(h[0]), b1 = HP(h[1]), omb1 = HP(h[2]), b2 = HP(h[3]), omb2 = HP(h[4]), c1 = HP(h[5]),
        c2 = HP(h[6]), eps = HP(h[7]), wd = HP(h[8]), decay = HP(h[9]);
    C pv = LD(p[i]), gv = LD(g[i]);
    if (mode == 1) gv = ADD(gv, MUL(pv, wd));
    C mn = ADD(MUL(LD(m[i]), b1), MUL(gv, omb1));
    C vn = ADD(MUL(LD(v[i]), b2), MUL(MUL(gv, gv), omb2));
    C step = DIV(MUL(mn, c1), ADD(SQRT(MUL(vn, c2)), eps));
    if (mode == 2) pv = MUL(pv, decay);
    po[i] = ST(SUB(pv, MUL(step, lr)));
    mo[i] = ST(mn);
    vo[i] = ST(vn);
}
