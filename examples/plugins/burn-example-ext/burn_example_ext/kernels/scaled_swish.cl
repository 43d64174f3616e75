// example::scaled_swish on burn-wgpu: y = x * sigmoid(BETA * x), one work-item per element.
// Defines (from burn_wgpu.api.program): T, the element type (float or double); FP64 when T is
// double (the extension pragma must come before any use of double).
#ifdef FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

__kernel void scaled_swish(__global const T* x, __global T* y, const T beta, const int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    T v = x[i];
    T z = beta * v;
    // the stable sigmoid: exp of a non-positive argument never overflows
    T e = exp(-fabs(z));
    T s = (z >= (T)0) ? (T)1 / ((T)1 + e) : e / ((T)1 + e);
    y[i] = v * s;
}
