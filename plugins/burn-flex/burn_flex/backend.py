"""The flex backend: numpy arrays on the host CPU."""
from __future__ import annotations

import numpy as np

import burn
from burn.primitives import ELEMENTWISE, MATMUL, REDUCE

from . import threads
from .native import adapt_half, native
from .fused import compile_elementwise


class FlexBackend(burn.Backend):
    """numpy CPU backend. Native arrays are numpy arrays (treated as immutable)."""

    name = "flex"
    # a small flush may run op by op with the registry's kernels (burn.graph.run_small_flush):
    # adapt_kernel changes only half-precision kernels, which that path leaves to the planner,
    # and compiled groups of small arrays run the same kernels op by op
    runs_small_flushes = True

    def device_indices(self):
        return [0]

    def describe_devices(self):
        import os
        blas = threads.blas_threads()
        return [f"flex:0 (numpy {np.__version__}, {os.cpu_count()} CPU cores; {threads.num_threads()} flex "
                f"threads, BLAS {blas if blas is not None else 'unknown'} threads)"]

    def set_num_threads(self, n):
        threads.set_num_threads(n)

    def num_threads(self):
        return threads.num_threads()

    def dtype_unavailable_reason(self, dtype, index):
        return None     # numpy (with ml_dtypes for bfloat16) holds every burn dtype

    def native_dtype(self, dtype):
        return native(dtype)

    def from_numpy(self, array, dtype, index):
        arr = np.asarray(array)
        if dtype is None:
            return arr
        nd = native(dtype)
        return arr if arr.dtype == nd else arr.astype(nd)

    def to_numpy(self, native_array, index):
        return np.asarray(native_array)

    def from_dlpack(self, obj, index):
        return np.from_dlpack(obj)

    def to_dlpack_source(self, native_array, index):
        return np.asarray(native_array)

    def adapt_kernel(self, fn, op, in_dtypes, out_dtypes):
        # float16/bfloat16 inputs: the float32 kernel, rounding results once (native.HalfKernel)
        return adapt_half(fn, op, in_dtypes, out_dtypes)

    def merge_steps(self, steps, nodes):
        # a convolution's bias and relu into its direct kernel (burn_flex.conv_epilogue), then a
        # flush's optimizer updates as one step (burn_flex.batched)
        from .batched import merge_steps as batch_updates
        from .conv_epilogue import merge_steps as conv_epilogues
        index_of = list(range(len(steps)))
        changed = False
        for merge in (conv_epilogues, batch_updates):
            done = merge(steps, nodes)
            if done is not None:
                steps, again = done
                index_of = [None if i is None else again[i] for i in index_of]
                changed = True
        return (steps, index_of) if changed else None

    def prepare_replay(self, prepared, index):
        # burn.capture: the plan's steps flattened once, attributes bound (burn_flex.replay)
        from .replay import prepare_replay
        return prepare_replay(prepared, index)

    def compile_group(self, group):
        if group.kind == ELEMENTWISE:
            return compile_elementwise(group)
        if group.kind == MATMUL:
            # the matmul as one BLAS call, a large epilogue blocked on the pool
            return compile_elementwise(group, blocked=False, matmul=True)
        if group.kind == REDUCE:
            # prologue + reduction: whole-array ops (large ones split on the pool)
            return compile_elementwise(group, blocked=False)
        return None
