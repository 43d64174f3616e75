; flex's JIT optimizer updates on float32 (burn_flex/kernels/optim.py calls them through
; burn_flex/jit.py; compiled with LLVM -O3 for the host CPU, no fast-math flags, so no contraction
; of a multiply and an add into an FMA and no reassociation).
;
; One pass over the parameter instead of the numpy path's 14 ufunc passes (each its own loop
; over memory and ~1 us of call overhead). Every element goes through the numpy path's float32
; operations in the same order (see _adam_into / _sgd_into in optim.py), each IEEE-754 exact-
; rounded (mul, add, sub, div, sqrt), so results are bit-identical to it (tested).
;
; h points at the hyper-parameters as float32, in burn::adam_update's order:
;   adam: [lr, b1, 1 - b1, b2, 1 - b2, c1, c2, eps, wd, decay]
;   sgd:  [lr, wd, momentum, 1 - dampening]
; Outputs are fresh buffers (noalias); the inputs are only read, so they may alias each other.

define internal void @adam_f32(ptr noalias nocapture readonly %p, ptr noalias nocapture readonly %g,
                               ptr noalias nocapture readonly %m, ptr noalias nocapture readonly %v,
                               ptr noalias nocapture writeonly %op, ptr noalias nocapture writeonly %om,
                               ptr noalias nocapture writeonly %ov, ptr noalias nocapture readonly %h,
                               i64 %n, i64 %mode) alwaysinline nounwind {
entry:
  %lr = load float, ptr %h, align 4
  %h1 = getelementptr inbounds float, ptr %h, i64 1
  %b1 = load float, ptr %h1, align 4
  %h2 = getelementptr inbounds float, ptr %h, i64 2
  %omb1 = load float, ptr %h2, align 4
  %h3 = getelementptr inbounds float, ptr %h, i64 3
  %b2 = load float, ptr %h3, align 4
  %h4 = getelementptr inbounds float, ptr %h, i64 4
  %omb2 = load float, ptr %h4, align 4
  %h5 = getelementptr inbounds float, ptr %h, i64 5
  %c1 = load float, ptr %h5, align 4
  %h6 = getelementptr inbounds float, ptr %h, i64 6
  %c2 = load float, ptr %h6, align 4
  %h7 = getelementptr inbounds float, ptr %h, i64 7
  %eps = load float, ptr %h7, align 4
  %h8 = getelementptr inbounds float, ptr %h, i64 8
  %wd = load float, ptr %h8, align 4
  %h9 = getelementptr inbounds float, ptr %h, i64 9
  %decay = load float, ptr %h9, align 4
  %l2 = icmp eq i64 %mode, 1
  %decoupled = icmp eq i64 %mode, 2
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pp = getelementptr inbounds float, ptr %p, i64 %i
  %pv = load float, ptr %pp, align 4
  %pg = getelementptr inbounds float, ptr %g, i64 %i
  %g0 = load float, ptr %pg, align 4
  %pm = getelementptr inbounds float, ptr %m, i64 %i
  %mv = load float, ptr %pm, align 4
  %pvv = getelementptr inbounds float, ptr %v, i64 %i
  %vv = load float, ptr %pvv, align 4
  ; mode l2: g = g + p * wd
  %pwd = fmul float %pv, %wd
  %gl2 = fadd float %g0, %pwd
  %gv = select i1 %l2, float %gl2, float %g0
  ; m' = m * b1 + g * (1 - b1)
  %mb = fmul float %mv, %b1
  %gb = fmul float %gv, %omb1
  %m2 = fadd float %mb, %gb
  ; v' = v * b2 + (g * g) * (1 - b2)
  %gg = fmul float %gv, %gv
  %ggb = fmul float %gg, %omb2
  %vb = fmul float %vv, %b2
  %v2 = fadd float %vb, %ggb
  ; step = ((m' * c1) / (sqrt(v' * c2) + eps)) * lr
  %vc = fmul float %v2, %c2
  %sq = call float @llvm.sqrt.f32(float %vc)
  %den = fadd float %sq, %eps
  %mc = fmul float %m2, %c1
  %q = fdiv float %mc, %den
  %st = fmul float %q, %lr
  ; p' = p * decay - step (decoupled) or p - step
  %pd = fmul float %pv, %decay
  %base = select i1 %decoupled, float %pd, float %pv
  %p2 = fsub float %base, %st
  %qp = getelementptr inbounds float, ptr %op, i64 %i
  store float %p2, ptr %qp, align 4
  %qm = getelementptr inbounds float, ptr %om, i64 %i
  store float %m2, ptr %qm, align 4
  %qv = getelementptr inbounds float, ptr %ov, i64 %i
  store float %v2, ptr %qv, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; one exported function per mode, so each loop is compiled with its mode a constant
define void @adam_f32_none(ptr %p, ptr %g, ptr %m, ptr %v, ptr %op, ptr %om, ptr %ov, ptr %h, i64 %n) nounwind {
  call void @adam_f32(ptr %p, ptr %g, ptr %m, ptr %v, ptr %op, ptr %om, ptr %ov, ptr %h, i64 %n, i64 0)
  ret void
}

define void @adam_f32_l2(ptr %p, ptr %g, ptr %m, ptr %v, ptr %op, ptr %om, ptr %ov, ptr %h, i64 %n) nounwind {
  call void @adam_f32(ptr %p, ptr %g, ptr %m, ptr %v, ptr %op, ptr %om, ptr %ov, ptr %h, i64 %n, i64 1)
  ret void
}

define void @adam_f32_decoupled(ptr %p, ptr %g, ptr %m, ptr %v, ptr %op, ptr %om, ptr %ov, ptr %h,
                                i64 %n) nounwind {
  call void @adam_f32(ptr %p, ptr %g, ptr %m, ptr %v, ptr %op, ptr %om, ptr %ov, ptr %h, i64 %n, i64 2)
  ret void
}

; SGD with momentum buffer: flags bit 0 = first step (buf' = g), bit 1 = weight decay
; (g = g + p * wd), bit 2 = nesterov (step = g + buf' * momentum, else buf'); then
; p' = p - step * lr. Written as _sgd_into: buf' = buf * momentum + g * (1 - dampening).
define internal void @sgd_f32(ptr noalias nocapture readonly %p, ptr noalias nocapture readonly %g,
                              ptr noalias nocapture readonly %buf, ptr noalias nocapture writeonly %op,
                              ptr noalias nocapture writeonly %ob, ptr noalias nocapture readonly %h,
                              i64 %n, i64 %flags) alwaysinline nounwind {
entry:
  %lr = load float, ptr %h, align 4
  %h1 = getelementptr inbounds float, ptr %h, i64 1
  %wd = load float, ptr %h1, align 4
  %h2 = getelementptr inbounds float, ptr %h, i64 2
  %mom = load float, ptr %h2, align 4
  %h3 = getelementptr inbounds float, ptr %h, i64 3
  %omd = load float, ptr %h3, align 4
  %f0 = and i64 %flags, 1
  %first = icmp ne i64 %f0, 0
  %f1 = and i64 %flags, 2
  %decay = icmp ne i64 %f1, 0
  %f2 = and i64 %flags, 4
  %nesterov = icmp ne i64 %f2, 0
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %join ]
  %pp = getelementptr inbounds float, ptr %p, i64 %i
  %pv = load float, ptr %pp, align 4
  %pg = getelementptr inbounds float, ptr %g, i64 %i
  %g0 = load float, ptr %pg, align 4
  %pwd = fmul float %pv, %wd
  %gd = fadd float %g0, %pwd
  %gv = select i1 %decay, float %gd, float %g0
  br i1 %first, label %join, label %later
later:
  ; the buffer is read only after the first step (on the first, the caller may pass any array)
  %pb = getelementptr inbounds float, ptr %buf, i64 %i
  %bv = load float, ptr %pb, align 4
  %bm = fmul float %bv, %mom
  %gm = fmul float %gv, %omd
  %bl = fadd float %bm, %gm
  br label %join
join:
  %b2 = phi float [ %gv, %loop ], [ %bl, %later ]
  %bn = fmul float %b2, %mom
  %sn = fadd float %gv, %bn
  %s = select i1 %nesterov, float %sn, float %b2
  %sl = fmul float %s, %lr
  %p2 = fsub float %pv, %sl
  %qp = getelementptr inbounds float, ptr %op, i64 %i
  store float %p2, ptr %qp, align 4
  %qb = getelementptr inbounds float, ptr %ob, i64 %i
  store float %b2, ptr %qb, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

define void @sgd_f32_0(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n) nounwind {
  call void @sgd_f32(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n, i64 0)
  ret void
}
define void @sgd_f32_1(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n) nounwind {
  call void @sgd_f32(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n, i64 1)
  ret void
}
define void @sgd_f32_2(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n) nounwind {
  call void @sgd_f32(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n, i64 2)
  ret void
}
define void @sgd_f32_3(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n) nounwind {
  call void @sgd_f32(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n, i64 3)
  ret void
}
define void @sgd_f32_4(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n) nounwind {
  call void @sgd_f32(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n, i64 4)
  ret void
}
define void @sgd_f32_5(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n) nounwind {
  call void @sgd_f32(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n, i64 5)
  ret void
}
define void @sgd_f32_6(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n) nounwind {
  call void @sgd_f32(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n, i64 6)
  ret void
}
define void @sgd_f32_7(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n) nounwind {
  call void @sgd_f32(ptr %p, ptr %g, ptr %b, ptr %op, ptr %ob, ptr %h, i64 %n, i64 7)
  ret void
}

declare float @llvm.sqrt.f32(float)
