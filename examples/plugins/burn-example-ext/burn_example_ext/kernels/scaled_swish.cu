// example::scaled_swish on burn-cuda: y = x * sigmoid(beta * x), one thread per element.
// Defines (from burn_cuda.api.program): T, the element type (float or double).
extern "C" __global__ void scaled_swish(const T* x, T* y, const T beta, const int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T v = x[i];
    T z = beta * v;
    T e = exp(-fabs(z));            // the stable sigmoid: never exp of a positive argument
    T s = (z >= (T)0) ? (T)1 / ((T)1 + e) : e / ((T)1 + e);
    y[i] = v * s;
}
