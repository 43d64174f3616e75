// burn::sgd_update with momentum: h holds [lr, weight_decay, momentum, 1 - dampening];
// first / decay / nesterov are 0 or 1. The reference's operation order, every op rounded as
// flex rounds it. Defines as in adam.cu; the kernel is named burn_optim_sgd_DTYPE.
extern "C" __global__ void burn_optim_sgd_DTYPE(long long n, const T* __restrict__ p, const T* __restrict__ g,
        const T* __restrict__ buf, const double* __restrict__ h, int first, int decay, int nesterov,
        T* __restrict__ po, T* __restrict__ bo) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const C lr = HP(h[0]), wd = HP(h[1]), mom = HP(h[2]), omd = HP(h[3]);
    C pv = LD(p[i]), gv = LD(g[i]);
    if (decay) gv = ADD(gv, MUL(pv, wd));
    C b = first ? gv : ADD(MUL(LD(buf[i]), mom), MUL(gv, omd));
    C d = nesterov ? ADD(gv, MUL(b, mom)) : b;
    po[i] = ST(SUB(pv, MUL(d, lr)));
    bo[i] = ST(b);
}
