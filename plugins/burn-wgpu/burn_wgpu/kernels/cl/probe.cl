// Built once when a device is opened (runtime._check_compiler): a device whose OpenCL
// compiler cannot build this is reported unavailable instead of failing every op.
__kernel void burn_probe(__global float* x) { x[get_global_id(0)] += 1.0f; }
