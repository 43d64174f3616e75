; flex's JIT relu on float32 (burn_flex/jit.py; compiled with LLVM -O3 for the host CPU, no
; fast-math flags). numpy's relu, maximum(x, 0), takes its slow scalar-operand loop (~4x an
; array-array maximum here); this loop vectorizes.
;
; relu(x) = numpy's maximum(x, +0.0): x if x > 0 or x is NaN, else +0.0 (so relu(-0.0) = +0.0),
; bit-identical to flex's numpy kernel. Two forms, as erf.ll: @relu_f32(x, out, n) for distinct
; buffers and @relu_f32_inplace(p, n).

define internal float @relu_f(float %x) alwaysinline nounwind readnone {
  %gt = fcmp ogt float %x, 0.0
  %nan = fcmp uno float %x, %x
  %keep = or i1 %gt, %nan
  %r = select i1 %keep, float %x, float 0.0
  ret float %r
}

define void @relu_f32(ptr noalias nocapture readonly %x, ptr noalias nocapture writeonly %out, i64 %n) nounwind {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %px, align 4
  %r = call float @relu_f(float %v)
  %po = getelementptr inbounds float, ptr %out, i64 %i
  store float %r, ptr %po, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

define void @relu_f32_inplace(ptr nocapture %p, i64 %n) nounwind {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pp = getelementptr inbounds float, ptr %p, i64 %i
  %v = load float, ptr %pp, align 4
  %r = call float @relu_f(float %v)
  store float %r, ptr %pp, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
