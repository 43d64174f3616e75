// The point-wise part of one LSTM / GRU time step and of its gradient (burn::lstm_layer,
// burn::gru_layer and their _grad ops): one work-item per element (b, j) of the [B, H] state.
// Every array is contiguous; *_off are element offsets of the step's slice. xp, hh, gh and
// d_xp are torch's [B, G*H] rows (LSTM i, f, g, o; GRU r, z, n); the saved gates are gate-major
// [4, B, H] (LSTM i, f, g, o; GRU r, z, n, gh_n = W_hn h + b_hn). Defines: T (float or double).

inline T sigm(T x) { return (T)1 / ((T)1 + exp(-x)); }

// a = xp[t] + hh (hh = h @ W_hh^T): gates activated, c = f c_prev + i g, h = o tanh(c)
__kernel void lstm_step(const int B, const int H, __global const T* xp, const int xp_off,
                        __global const T* hh, const int hh_off, __global const T* cp, const int cp_off,
                        __global T* gates, const int g_off, __global T* cells, const int c_off,
                        __global T* out, const int o_off) {
  int k = get_global_id(0); if (k >= B * H) return;
  int b = k / H, j = k - b * H;
  int r = b * 4 * H + j;
  __global const T* x = xp + xp_off + r;
  __global const T* a = hh + hh_off + r;
  T i = sigm(x[0] + a[0]), f = sigm(x[H] + a[H]), g = tanh(x[2 * H] + a[2 * H]), o = sigm(x[3 * H] + a[3 * H]);
  T c = f * cp[cp_off + k] + i * g;
  int n = B * H;
  __global T* gt = gates + g_off + k;
  gt[0] = i; gt[n] = f; gt[2 * n] = g; gt[3 * n] = o;
  cells[c_off + k] = c;
  out[o_off + k] = o * tanh(c);
}

// dh = dmm (+ g_out[t]); writes d_xp[t] (the pre-activation gate gradients) and dc <- dc' * f
__kernel void lstm_step_grad(const int B, const int H, __global const T* dmm, const int dm_off,
                             const int has_gout, __global const T* gout, const int go_off,
                             __global const T* gates, const int g_off, __global const T* cells, const int c_off,
                             __global const T* cp, const int cp_off, __global T* dc, __global T* dxp,
                             const int d_off) {
  int k = get_global_id(0); if (k >= B * H) return;
  int b = k / H, j = k - b * H;
  int r = b * 4 * H + j;
  T dh = dmm[dm_off + k] + (has_gout ? gout[go_off + k] : (T)0);
  int n = B * H;
  __global const T* gt = gates + g_off + k;
  T i = gt[0], f = gt[n], g = gt[2 * n], o = gt[3 * n];
  T tc = tanh(cells[c_off + k]);
  T dcc = dc[k] + dh * o * ((T)1 - tc * tc);
  __global T* d = dxp + d_off + r;
  d[0] = dcc * g * i * ((T)1 - i);
  d[H] = dcc * cp[cp_off + k] * f * ((T)1 - f);
  d[2 * H] = dcc * i * ((T)1 - g * g);
  d[3 * H] = dh * tc * o * ((T)1 - o);
  dc[k] = dcc * f;
}

// gh = h @ W_hh^T (+ b_hh): r, z = sigm(x + gh), n = tanh(x_n + r gh_n), h = n + z (h_prev - n)
__kernel void gru_step(const int B, const int H, __global const T* xp, const int xp_off,
                       __global const T* gh, const int gh_off, const int has_bias, __global const T* bhh,
                       const int b_off, __global const T* hp, const int hp_off, __global T* saved, const int s_off,
                       __global T* out, const int o_off) {
  int k = get_global_id(0); if (k >= B * H) return;
  int b = k / H, j = k - b * H;
  int r3 = b * 3 * H + j;
  __global const T* x = xp + xp_off + r3;
  __global const T* a = gh + gh_off + r3;
  T br = 0, bz = 0, bn = 0;
  if (has_bias) { br = bhh[b_off + j]; bz = bhh[b_off + H + j]; bn = bhh[b_off + 2 * H + j]; }
  T r = sigm(x[0] + a[0] + br), z = sigm(x[H] + a[H] + bz);
  T ghn = a[2 * H] + bn;
  T n = tanh(x[2 * H] + r * ghn);
  T hprev = hp[hp_off + k];
  int m = B * H;
  __global T* s = saved + s_off + k;
  s[0] = r; s[m] = z; s[2 * m] = n; s[3 * m] = ghn;
  out[o_off + k] = n + z * (hprev - n);
}

// dh = dmm + carry (+ g_out[t]); writes d_xp[t] = (dr, dz, dn), d_gh[t] = (dr, dz, dn r) and
// carry <- dh z (the part of the previous step's dh that does not go through W_hh)
__kernel void gru_step_grad(const int B, const int H, __global const T* dmm, const int dm_off,
                            __global T* carry, const int has_gout, __global const T* gout, const int go_off,
                            __global const T* saved, const int s_off, __global const T* hp, const int hp_off,
                            __global T* dxp, __global T* dgh, const int d_off) {
  int k = get_global_id(0); if (k >= B * H) return;
  int b = k / H, j = k - b * H;
  int r3 = b * 3 * H + j;
  T dh = dmm[dm_off + k] + carry[k] + (has_gout ? gout[go_off + k] : (T)0);
  int m = B * H;
  __global const T* s = saved + s_off + k;
  T r = s[0], z = s[m], n = s[2 * m], ghn = s[3 * m];
  T dn = dh * ((T)1 - z) * ((T)1 - n * n);
  T dr = dn * ghn * r * ((T)1 - r);
  T dz = dh * (hp[hp_off + k] - n) * z * ((T)1 - z);
  __global T* dx = dxp + d_off + r3;
  __global T* dg = dgh + d_off + r3;
  dx[0] = dr; dx[H] = dz; dx[2 * H] = dn;
  dg[0] = dr; dg[H] = dz; dg[2 * H] = dn * r;
  carry[k] = dh * z;
}
