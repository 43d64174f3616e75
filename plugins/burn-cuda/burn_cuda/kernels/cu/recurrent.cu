// The point-wise part of one LSTM / GRU time step and of its gradient (burn::lstm_layer,
// burn::gru_layer and their _grad ops): one thread per element (b, j) of the [B, H] state.
// Every pointer is the step's C-contiguous slice; xp, hh, gh and d_xp are torch's [B, G*H]
// rows (LSTM i, f, g, o; GRU r, z, n); the saved gates are gate-major [4, B, H] (LSTM i, f, g, o;
// GRU r, z, n, gh_n = W_hn h + b_hn). Defines: T (float or double); kernels: burn_<name>_DTYPE.

__device__ __forceinline__ T sigm(T x) { return (T)1 / ((T)1 + exp(-x)); }

// a = xp_t + hh (hh = h @ W_hh^T): gates activated, c = f c_prev + i g, h = o tanh(c)
extern "C" __global__ void burn_lstm_step_DTYPE(long long n, int H, const T* __restrict__ xp,
        const T* __restrict__ hh, const T* __restrict__ cp, T* __restrict__ gates, T* __restrict__ cells,
        T* __restrict__ out) {
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    long long b = k / H, j = k - b * H, r = b * 4 * H + j;
    T i = sigm(xp[r] + hh[r]), f = sigm(xp[r + H] + hh[r + H]);
    T g = tanh(xp[r + 2 * H] + hh[r + 2 * H]), o = sigm(xp[r + 3 * H] + hh[r + 3 * H]);
    T c = f * cp[k] + i * g;
    gates[k] = i; gates[k + n] = f; gates[k + 2 * n] = g; gates[k + 3 * n] = o;
    cells[k] = c;
    out[k] = o * tanh(c);
}

// dh = dmm (+ g_out_t); writes d_xp_t (the pre-activation gate gradients) and dc <- dc' * f
extern "C" __global__ void burn_lstm_step_grad_DTYPE(long long n, int H, const T* __restrict__ dmm,
        int has_gout, const T* __restrict__ gout, const T* __restrict__ gates, const T* __restrict__ cells,
        const T* __restrict__ cp, T* __restrict__ dc, T* __restrict__ d) {
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    long long b = k / H, j = k - b * H, r = b * 4 * H + j;
    T dh = dmm[k] + (has_gout ? gout[k] : (T)0);
    T i = gates[k], f = gates[k + n], g = gates[k + 2 * n], o = gates[k + 3 * n];
    T tc = tanh(cells[k]);
    T dcc = dc[k] + dh * o * ((T)1 - tc * tc);
    d[r] = dcc * g * i * ((T)1 - i);
    d[r + H] = dcc * cp[k] * f * ((T)1 - f);
    d[r + 2 * H] = dcc * i * ((T)1 - g * g);
    d[r + 3 * H] = dh * tc * o * ((T)1 - o);
    dc[k] = dcc * f;
}

// gh = h @ W_hh^T (+ b_hh): r, z = sigm(x + gh), n = tanh(x_n + r gh_n), h = n + z (h_prev - n)
extern "C" __global__ void burn_gru_step_DTYPE(long long n, int H, const T* __restrict__ xp,
        const T* __restrict__ gh, int has_bias, const T* __restrict__ bhh, const T* __restrict__ hp,
        T* __restrict__ saved, T* __restrict__ out) {
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    long long b = k / H, j = k - b * H, r3 = b * 3 * H + j;
    T br = 0, bz = 0, bn = 0;
    if (has_bias) { br = bhh[j]; bz = bhh[H + j]; bn = bhh[2 * H + j]; }
    T r = sigm(xp[r3] + gh[r3] + br), z = sigm(xp[r3 + H] + gh[r3 + H] + bz);
    T ghn = gh[r3 + 2 * H] + bn;
    T nn = tanh(xp[r3 + 2 * H] + r * ghn);
    saved[k] = r; saved[k + n] = z; saved[k + 2 * n] = nn; saved[k + 3 * n] = ghn;
    out[k] = nn + z * (hp[k] - nn);
}

// dh = dmm + carry (+ g_out_t); writes d_xp_t = (dr, dz, dn), d_gh_t = (dr, dz, dn r) and
// carry <- dh z (the part of the previous step's dh that does not go through W_hh)
extern "C" __global__ void burn_gru_step_grad_DTYPE(long long n, int H, const T* __restrict__ dmm,
        T* __restrict__ carry, int has_gout, const T* __restrict__ gout, const T* __restrict__ saved,
        const T* __restrict__ hp, T* __restrict__ dx, T* __restrict__ dg) {
    long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    long long b = k / H, j = k - b * H, r3 = b * 3 * H + j;
    T dh = dmm[k] + carry[k] + (has_gout ? gout[k] : (T)0);
    T r = saved[k], z = saved[k + n], nn = saved[k + 2 * n], ghn = saved[k + 3 * n];
    T dn = dh * ((T)1 - z) * ((T)1 - nn * nn);
    T dr = dn * ghn * r * ((T)1 - r);
    T dz = dh * (hp[k] - nn) * z * ((T)1 - z);
    dx[r3] = dr; dx[r3 + H] = dz; dx[r3 + 2 * H] = dn;
    dg[r3] = dr; dg[r3 + H] = dz; dg[r3 + 2 * H] = dn * r;
    carry[k] = dh * z;
}
