// Stable sort of contiguous rows and binary search, of one dtype.
// Defines: T (the element type), IS_FLOAT (1 for floating types). NaNs order after every
// number (numpy's rule); equal keys keep their original order (the sort is stable).
#if IS_FLOAT
#define LESS(a, b) ((a) < (b) || (isnan(b) && !isnan(a)))
#else
#define LESS(a, b) ((a) < (b))
#endif

// One pass of a bottom-up merge sort of M rows of L keys: runs of width W, already sorted,
// are merged pairwise. Each element finds its place in the merged run by a binary search in
// the partner run: a left-run element goes after the partner's strictly smaller keys, a
// right-run element after the partner's keys that are not larger, so ties keep the left
// (earlier) element first. kin has an element offset (the first pass reads the input tensor);
// first=1 starts the positions at 0..L-1 instead of reading iin.
__kernel void sort_merge(int M, int L, int W, int first, __global T* kout, __global long* iout,
                         __global const T* kin, int koff, __global const long* iin) {
  long g = get_global_id(0); if (g >= (long)M * L) return;
  long m = g / L; int i = (int)(g - m * L);
  __global const T* row = kin + koff + m * L;
  int run = i / W, start = run * W, pstart = (run ^ 1) * W;
  T v = row[i];
  int pos = i;
  if (pstart < L) {
    int plen = min(W, L - pstart), lo = 0, hi = plen;
    if ((run & 1) == 0) {
      while (lo < hi) { int mid = (lo + hi) >> 1; if (LESS(row[pstart + mid], v)) lo = mid + 1; else hi = mid; }
    } else {
      while (lo < hi) { int mid = (lo + hi) >> 1; if (!LESS(v, row[pstart + mid])) lo = mid + 1; else hi = mid; }
    }
    pos = min(run, run ^ 1) * W + (i - start) + lo;
  }
  kout[m * L + pos] = v;
  iout[m * L + pos] = first ? (long)i : iin[m * L + i];
}

// The first passes of the same merge sort in local memory: a work-group of SORT_BLOCK items
// sorts one block of SORT_BLOCK consecutive keys of a row (a row's last block may be shorter),
// merging runs of width 1, 2, ... until the block is one run; the global passes go on from
// there. Work-groups: M * ceil(L / SORT_BLOCK), in row order.
#define SORT_BLOCK 256
__kernel __attribute__((reqd_work_group_size(SORT_BLOCK, 1, 1)))
void sort_block(int M, int L, __global T* kout, __global long* iout, __global const T* kin, int koff) {
  __local T ka[SORT_BLOCK], kb[SORT_BLOCK];
  __local int ia[SORT_BLOCK], ib[SORT_BLOCK];
  int nb = (L + SORT_BLOCK - 1) / SORT_BLOCK;
  long grp = get_group_id(0), m = grp / nb;
  int b0 = (int)(grp - m * nb) * SORT_BLOCK, t = get_local_id(0), n = min(SORT_BLOCK, L - b0);
  if (t < n) { ka[t] = kin[koff + m * L + b0 + t]; ia[t] = t; }
  barrier(CLK_LOCAL_MEM_FENCE);
  __local T* ks = ka; __local T* kd = kb; __local int* is = ia; __local int* id = ib;
  for (int W = 1; W < n; W <<= 1) {      // n is the same for the whole group: uniform barriers
    if (t < n) {
      int run = t / W, start = run * W, pstart = (run ^ 1) * W, pos = t;
      T v = ks[t];
      if (pstart < n) {
        int lo = 0, hi = min(W, n - pstart);
        if ((run & 1) == 0) {
          while (lo < hi) { int mid = (lo + hi) >> 1; if (LESS(ks[pstart + mid], v)) lo = mid + 1; else hi = mid; }
        } else {
          while (lo < hi) { int mid = (lo + hi) >> 1; if (!LESS(v, ks[pstart + mid])) lo = mid + 1; else hi = mid; }
        }
        pos = min(run, run ^ 1) * W + (t - start) + lo;
      }
      kd[pos] = v; id[pos] = is[t];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __local T* k2 = ks; ks = kd; kd = k2;
    __local int* i2 = is; is = id; id = i2;
  }
  if (t < n) { kout[m * L + b0 + t] = ks[t]; iout[m * L + b0 + t] = b0 + is[t]; }
}

// The insertion position of each of N values v in the sorted a[0..L): left = the first index
// whose key is not less than the value, right = the first whose key is greater.
__kernel void sort_search(int N, int L, int right, __global long* out, __global const T* a, int aoff,
                          __global const T* v, int voff) {
  int n = get_global_id(0); if (n >= N) return;
  T x = v[voff + n];
  int lo = 0, hi = L;
  while (lo < hi) {
    int mid = (lo + hi) >> 1; T y = a[aoff + mid];
    if (right ? !LESS(x, y) : LESS(y, x)) lo = mid + 1; else hi = mid;
  }
  out[n] = lo;
}
