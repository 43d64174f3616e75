"""Backend-neutral kernel source generation (shared by burn-wgpu and burn-cuda).

:mod:`~burn.codegen.elementwise` renders element-wise primitives and fused
chains of them as C-like source; a :class:`~burn.codegen.dialect.Dialect`
(:data:`OPENCL`, :data:`CUDA`) spells the target's differences.
:mod:`~burn.codegen.family` builds the per-op kernel families,
:mod:`~burn.codegen.layout` the index struct of a launch and
:mod:`~burn.codegen.segments` runs a fused group segment by segment. Nothing here
imports a GPU library: a backend compiles and launches what it gets.

Example:
    >>> from burn.codegen import OPENCL, render_group, program_source
    >>> k = render_group("relu_k", [("relu", {}, [("in", 0)])], ["float32"], [0], OPENCL)
    >>> assert "__kernel void relu_k" in program_source([k], OPENCL)
"""
from .dialect import CUDA, DTYPE_INFO, OPENCL, Dialect, sum_dtype
from .elementwise import (ELEMENTWISE_OPS, MAX_DIMS, UNROLL, VECTOR, RenderedKernel, op_params, out_dtype,
                          param_words, program_source, render_group, supports, vector_bytes)

__all__ = ["Dialect", "OPENCL", "CUDA", "DTYPE_INFO", "ELEMENTWISE_OPS", "MAX_DIMS", "UNROLL", "VECTOR",
           "RenderedKernel", "op_params", "out_dtype", "param_words", "program_source", "render_group", "supports",
           "vector_bytes", "sum_dtype"]
