; flex's JIT kernels for erf and gelu on float32 (burn_flex/jit.py compiles this module for the
; host CPU with LLVM -O3, which vectorizes the loops; no fast-math flags, so no contraction).
;
; Each kernel computes exactly what the numpy path in burn_flex/kernels/elementwise.py computes,
; op for op, so results are bit-identical to it:
;   erf(x) = x * P(x^2) / Q(x^2) on x clipped to [-4, 4], evaluated in double (XLA/Eigen's float32
;   rational fit; within 2 float32 ulp of the exact erf), rounded to float once; NaN stays NaN
;   (both compares are false), +-inf -> +-4 -> +-1.
;   gelu(x) = ((erf(x * f32(sqrt(0.5))) + 1) * x) * 0.5, every step but erf in float.
; The constants are the coefficients of _ERF_P / _ERF_Q as IEEE-754 double bit patterns.
;
; Two forms per kernel: @name(x, out, n) for distinct buffers (noalias: the caller never passes
; overlapping ones) and @name_inplace(p, n), which reads and writes p.

define internal double @erf_d(double %x) alwaysinline nounwind readnone {
  %g = fcmp ogt double %x, 0x4010000000000000      ; 4.0
  %x1 = select i1 %g, double 0x4010000000000000, double %x
  %l = fcmp olt double %x1, 0xC010000000000000     ; -4.0
  %a = select i1 %l, double 0xC010000000000000, double %x1
  %b = fmul double %a, %a
  ; P(b), Horner from the highest coefficient: -2.72614225801306e-10 ... -1.60960333262415e-02
  %p0 = fmul double %b, 0xBDF2BBE1536358B7
  %p1a = fadd double %p0, 0x3E5DBFFDB951FFF6
  %p1 = fmul double %p1a, %b
  %p2a = fadd double %p1, 0xBEC19FEA2BAA463B
  %p2 = fmul double %p2a, %b
  %p3a = fadd double %p2, 0xBF0DD85A4DC426E3
  %p3 = fmul double %p3a, %b
  %p4a = fadd double %p3, 0xBF48158C5C2CE6A4
  %p4 = fmul double %p4a, %b
  %p5a = fadd double %p4, 0xBF68343EB19D459E
  %p5 = fmul double %p5a, %b
  %p = fadd double %p5, 0xBF907B7A82ED1713
  ; Q(b): -1.45660718464996e-05 ... -1.42647390514189e-02
  %q0 = fmul double %b, 0xBEEE8C19ABB84B81
  %q1a = fadd double %q0, 0xBF2BF7A52DB09376
  %q1 = fmul double %q1a, %b
  %q2a = fadd double %q1, 0xBF5B9249B4778FB8
  %q2 = fmul double %q2a, %b
  %q3a = fadd double %q2, 0xBF7E337EFA2C2F02
  %q3 = fmul double %q3a, %b
  %q = fadd double %q3, 0xBF8D36D4DDB1CDC3
  %r = fdiv double %p, %q
  %ra = fmul double %r, %a                          ; times x last: tiny results keep their precision
  ret double %ra
}

define internal float @erf_f(float %x) alwaysinline nounwind readnone {
  %d = fpext float %x to double
  %e = call double @erf_d(double %d)
  %f = fptrunc double %e to float
  ret float %f
}

define internal float @gelu_f(float %x) alwaysinline nounwind readnone {
  %s = fmul float %x, 0x3FE6A09E60000000            ; f32(sqrt(0.5))
  %e = call float @erf_f(float %s)
  %e1 = fadd float %e, 1.0
  %m = fmul float %e1, %x
  %r = fmul float %m, 0.5
  ret float %r
}

define void @erf_f32(ptr noalias nocapture readonly %x, ptr noalias nocapture writeonly %out, i64 %n) nounwind {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %px, align 4
  %r = call float @erf_f(float %v)
  %po = getelementptr inbounds float, ptr %out, i64 %i
  store float %r, ptr %po, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

define void @erf_f32_inplace(ptr nocapture %p, i64 %n) nounwind {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pp = getelementptr inbounds float, ptr %p, i64 %i
  %v = load float, ptr %pp, align 4
  %r = call float @erf_f(float %v)
  store float %r, ptr %pp, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

define void @gelu_f32(ptr noalias nocapture readonly %x, ptr noalias nocapture writeonly %out, i64 %n) nounwind {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %px, align 4
  %r = call float @gelu_f(float %v)
  %po = getelementptr inbounds float, ptr %out, i64 %i
  store float %r, ptr %po, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

define void @gelu_f32_inplace(ptr nocapture %p, i64 %n) nounwind {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pp = getelementptr inbounds float, ptr %p, i64 %i
  %v = load float, ptr %pp, align 4
  %r = call float @gelu_f(float %v)
  store float %r, ptr %pp, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
