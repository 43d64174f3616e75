; flex's JIT max pooling over 2x2 windows with stride 2 (no padding or dilation: the pooling of
; LeNet-style and VGG-style networks) on float32; burn_flex/kernels/conv.py calls it through
; burn_flex/jit.py for that case and runs its numpy paths for every other. Compiled with LLVM -O3
; for the host CPU, no fast-math flags.
;
; x is [P, H, W] (P = images * channels), out and g are [P, OH, OW] with OH = H / 2, OW = W / 2
; rounded down; d = [P, H, W, OH, OW] (i64). One output row reads two input rows; the loops over
; a row read and write with a constant stride of 2, which LLVM vectorizes (interleaved accesses).
;
; maxpool2_f32: out = numpy's maximum over the window in the numpy path's order (offsets
; row-major: maximum(maximum(maximum(a, b), c), d), maximum(o, v) = o if o > v or o is NaN, else
; v), so results are bit-identical to it.
;
; maxpool2_grad_f32: PyTorch's gradient: each window's g goes to one input, the first (row-major)
; element equal to the window's maximum, or the last NaN of a window whose maximum is NaN
; (max_pool2d's index rule: val > max || isnan(val)); every other input of gx gets +0.0 (the
; rows and columns no window covers too), whatever g holds. Branch-free: which element wins is
; data, and branches on it mispredict on every other window.

; numpy's maximum(a, b): a if a > b or a is NaN, else b
define internal float @np_max(float %a, float %b) alwaysinline nounwind readnone {
  %gt = fcmp ogt float %a, %b
  %nan = fcmp uno float %a, %a
  %keep = or i1 %gt, %nan
  %r = select i1 %keep, float %a, float %b
  ret float %r
}

define internal void @zero_f32s(ptr nocapture writeonly %p, i64 %n) alwaysinline nounwind #2 {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pp = getelementptr inbounds float, ptr %p, i64 %i
  store float 0.0, ptr %pp, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; numpy's maximum(a, b) on eight lanes (np_max per lane)
define internal <8 x float> @np_max8p(<8 x float> %a, <8 x float> %b) alwaysinline nounwind readnone {
  %gt = fcmp ogt <8 x float> %a, %b
  %nan = fcmp uno <8 x float> %a, %a
  %keep = or <8 x i1> %gt, %nan
  %r = select <8 x i1> %keep, <8 x float> %a, <8 x float> %b
  ret <8 x float> %r
}

; 2x2 max pooling of planes 8 wide with an even height, flat: the planes' rows pair up with no
; leftover row, so output o (of all planes, in order) reads input row pair o / 4, columns
; 2 * (o mod 4) and the next; eight outputs read 32 contiguous inputs, taken apart by constant
; shuffles into the windows' a, b (top row) and c, d (bottom row), then maximum(maximum(maximum(a,
; b), c), d) as the row path does (np_max8: the same bits). The last outs mod 8 one by one.
define internal void @maxpool2_narrow8(ptr noalias nocapture readonly %x, ptr noalias nocapture writeonly %out,
                                        i64 %outs) alwaysinline nounwind {
entry:
  %blocks = lshr i64 %outs, 3
  %hasb = icmp ne i64 %blocks, 0
  br i1 %hasb, label %v.loop, label %tail.check
v.loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %v.loop ]
  %xo = shl i64 %i, 5
  %px = getelementptr inbounds float, ptr %x, i64 %xo
  %px1 = getelementptr inbounds float, ptr %px, i64 8
  %px2 = getelementptr inbounds float, ptr %px, i64 16
  %px3 = getelementptr inbounds float, ptr %px, i64 24
  %v0 = load <8 x float>, ptr %px, align 4
  %v1 = load <8 x float>, ptr %px1, align 4
  %v2 = load <8 x float>, ptr %px2, align 4
  %v3 = load <8 x float>, ptr %px3, align 4
  %v01 = shufflevector <8 x float> %v0, <8 x float> %v1, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %v23 = shufflevector <8 x float> %v2, <8 x float> %v3, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %va = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 0, i32 2, i32 4, i32 6, i32 16, i32 18, i32 20, i32 22>
  %vb = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 1, i32 3, i32 5, i32 7, i32 17, i32 19, i32 21, i32 23>
  %vc = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 8, i32 10, i32 12, i32 14, i32 24, i32 26, i32 28, i32 30>
  %vd = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 9, i32 11, i32 13, i32 15, i32 25, i32 27, i32 29, i32 31>
  %m1 = call <8 x float> @np_max8p(<8 x float> %va, <8 x float> %vb)
  %m2 = call <8 x float> @np_max8p(<8 x float> %m1, <8 x float> %vc)
  %m3 = call <8 x float> @np_max8p(<8 x float> %m2, <8 x float> %vd)
  %oo = shl i64 %i, 3
  %po = getelementptr inbounds float, ptr %out, i64 %oo
  store <8 x float> %m3, ptr %po, align 4
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %blocks
  br i1 %i.done, label %tail.check, label %v.loop
tail.check:
  %t0 = shl i64 %blocks, 3
  %hast = icmp ult i64 %t0, %outs
  br i1 %hast, label %t.loop, label %exit
t.loop:
  %o = phi i64 [ %t0, %tail.check ], [ %o.next, %t.loop ]
  %r = udiv i64 %o, 4
  %j = urem i64 %o, 4
  %ra = mul i64 %r, 16
  %j2 = shl i64 %j, 1
  %ia = add i64 %ra, %j2
  %pa = getelementptr inbounds float, ptr %x, i64 %ia
  %a = load float, ptr %pa, align 4
  %pb = getelementptr inbounds float, ptr %pa, i64 1
  %b = load float, ptr %pb, align 4
  %pc = getelementptr inbounds float, ptr %pa, i64 8
  %c = load float, ptr %pc, align 4
  %pd = getelementptr inbounds float, ptr %pa, i64 9
  %dd = load float, ptr %pd, align 4
  %s1 = call float @np_max(float %a, float %b)
  %s2 = call float @np_max(float %s1, float %c)
  %s3 = call float @np_max(float %s2, float %dd)
  %pt = getelementptr inbounds float, ptr %out, i64 %o
  store float %s3, ptr %pt, align 4
  %o.next = add nuw nsw i64 %o, 1
  %o.done = icmp eq i64 %o.next, %outs
  br i1 %o.done, label %exit, label %t.loop
exit:
  ret void
}

; 2x2 max pooling of planes 4 wide with an even height, flat: the planes' rows pair up with no
; leftover row, so output o (of all planes, in order) reads input row pair o / 2, columns
; 2 * (o mod 2) and the next; eight outputs read 32 contiguous inputs, taken apart by constant
; shuffles into the windows' a, b (top row) and c, d (bottom row), then maximum(maximum(maximum(a,
; b), c), d) as the row path does (np_max8: the same bits). The last outs mod 8 one by one.
define internal void @maxpool2_narrow4(ptr noalias nocapture readonly %x, ptr noalias nocapture writeonly %out,
                                        i64 %outs) alwaysinline nounwind {
entry:
  %blocks = lshr i64 %outs, 3
  %hasb = icmp ne i64 %blocks, 0
  br i1 %hasb, label %v.loop, label %tail.check
v.loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %v.loop ]
  %xo = shl i64 %i, 5
  %px = getelementptr inbounds float, ptr %x, i64 %xo
  %px1 = getelementptr inbounds float, ptr %px, i64 8
  %px2 = getelementptr inbounds float, ptr %px, i64 16
  %px3 = getelementptr inbounds float, ptr %px, i64 24
  %v0 = load <8 x float>, ptr %px, align 4
  %v1 = load <8 x float>, ptr %px1, align 4
  %v2 = load <8 x float>, ptr %px2, align 4
  %v3 = load <8 x float>, ptr %px3, align 4
  %v01 = shufflevector <8 x float> %v0, <8 x float> %v1, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %v23 = shufflevector <8 x float> %v2, <8 x float> %v3, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %va = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 0, i32 2, i32 8, i32 10, i32 16, i32 18, i32 24, i32 26>
  %vb = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 1, i32 3, i32 9, i32 11, i32 17, i32 19, i32 25, i32 27>
  %vc = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 4, i32 6, i32 12, i32 14, i32 20, i32 22, i32 28, i32 30>
  %vd = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 5, i32 7, i32 13, i32 15, i32 21, i32 23, i32 29, i32 31>
  %m1 = call <8 x float> @np_max8p(<8 x float> %va, <8 x float> %vb)
  %m2 = call <8 x float> @np_max8p(<8 x float> %m1, <8 x float> %vc)
  %m3 = call <8 x float> @np_max8p(<8 x float> %m2, <8 x float> %vd)
  %oo = shl i64 %i, 3
  %po = getelementptr inbounds float, ptr %out, i64 %oo
  store <8 x float> %m3, ptr %po, align 4
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %blocks
  br i1 %i.done, label %tail.check, label %v.loop
tail.check:
  %t0 = shl i64 %blocks, 3
  %hast = icmp ult i64 %t0, %outs
  br i1 %hast, label %t.loop, label %exit
t.loop:
  %o = phi i64 [ %t0, %tail.check ], [ %o.next, %t.loop ]
  %r = udiv i64 %o, 2
  %j = urem i64 %o, 2
  %ra = mul i64 %r, 8
  %j2 = shl i64 %j, 1
  %ia = add i64 %ra, %j2
  %pa = getelementptr inbounds float, ptr %x, i64 %ia
  %a = load float, ptr %pa, align 4
  %pb = getelementptr inbounds float, ptr %pa, i64 1
  %b = load float, ptr %pb, align 4
  %pc = getelementptr inbounds float, ptr %pa, i64 4
  %c = load float, ptr %pc, align 4
  %pd = getelementptr inbounds float, ptr %pa, i64 5
  %dd = load float, ptr %pd, align 4
  %s1 = call float @np_max(float %a, float %b)
  %s2 = call float @np_max(float %s1, float %c)
  %s3 = call float @np_max(float %s2, float %dd)
  %pt = getelementptr inbounds float, ptr %out, i64 %o
  store float %s3, ptr %pt, align 4
  %o.next = add nuw nsw i64 %o, 1
  %o.done = icmp eq i64 %o.next, %outs
  br i1 %o.done, label %exit, label %t.loop
exit:
  ret void
}

define void @maxpool2_f32(ptr noalias nocapture readonly %x, ptr noalias nocapture writeonly %out,
                          ptr noalias nocapture readonly %d) nounwind #2 {
entry:
  %np = load i64, ptr %d
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %h = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %w = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %oh = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %ow = load i64, ptr %d4
  %plane = mul i64 %h, %w
  %w2 = shl i64 %w, 1
  %none = icmp sle i64 %np, 0
  %flat = icmp sle i64 %oh, 0
  %narrow = icmp sle i64 %ow, 0
  %e1 = or i1 %none, %flat
  %skip = or i1 %e1, %narrow
  br i1 %skip, label %exit, label %check.narrow
check.narrow:
  ; planes 4 or 8 wide with an even height: the flat paths below (rows too short to vectorize)
  %hodd = and i64 %h, 1
  %heven = icmp eq i64 %hodd, 0
  %w4 = icmp eq i64 %w, 4
  %w8 = icmp eq i64 %w, 8
  %n4 = and i1 %heven, %w4
  %n8 = and i1 %heven, %w8
  %total = mul i64 %np, %plane
  %outs = lshr i64 %total, 2
  br i1 %n8, label %narrow8, label %check.narrow4
check.narrow4:
  br i1 %n4, label %narrow4, label %p.loop
narrow8:
  call void @maxpool2_narrow8(ptr %x, ptr %out, i64 %outs)
  br label %exit
narrow4:
  call void @maxpool2_narrow4(ptr %x, ptr %out, i64 %outs)
  br label %exit
p.loop:
  %p = phi i64 [ %p.next, %p.latch ], [ 0, %check.narrow4 ]
  %pbase = mul i64 %p, %plane
  %xp = getelementptr inbounds float, ptr %x, i64 %pbase
  %opo = mul i64 %p, %oh
  br label %r.loop
r.loop:
  ; output row q of plane p reads input rows 2q and 2q + 1
  %q = phi i64 [ 0, %p.loop ], [ %q.next, %r.latch ]
  %qoff = mul i64 %q, %w2
  %row0 = getelementptr inbounds float, ptr %xp, i64 %qoff
  %row1 = getelementptr inbounds float, ptr %row0, i64 %w
  %orr = add i64 %opo, %q
  %ooff = mul i64 %orr, %ow
  %orow = getelementptr inbounds float, ptr %out, i64 %ooff
  br label %c.loop
c.loop:
  %c = phi i64 [ 0, %r.loop ], [ %c.next, %c.loop ]
  %c2 = shl i64 %c, 1
  %c21 = or i64 %c2, 1
  %pa = getelementptr inbounds float, ptr %row0, i64 %c2
  %a = load float, ptr %pa, align 4
  %pb = getelementptr inbounds float, ptr %row0, i64 %c21
  %b = load float, ptr %pb, align 4
  %pc = getelementptr inbounds float, ptr %row1, i64 %c2
  %cc = load float, ptr %pc, align 4
  %pd = getelementptr inbounds float, ptr %row1, i64 %c21
  %dd = load float, ptr %pd, align 4
  %m1 = call float @np_max(float %a, float %b)
  %m2 = call float @np_max(float %m1, float %cc)
  %m3 = call float @np_max(float %m2, float %dd)
  %po = getelementptr inbounds float, ptr %orow, i64 %c
  store float %m3, ptr %po, align 4
  %c.next = add nuw nsw i64 %c, 1
  %c.done = icmp eq i64 %c.next, %ow
  br i1 %c.done, label %r.latch, label %c.loop, !llvm.loop !30
r.latch:
  %q.next = add nuw nsw i64 %q, 1
  %q.done = icmp eq i64 %q.next, %oh
  br i1 %q.done, label %p.latch, label %r.loop
p.latch:
  %p.next = add nuw nsw i64 %p, 1
  %p.done = icmp eq i64 %p.next, %np
  br i1 %p.done, label %exit, label %p.loop
exit:
  ret void
}

; the gradient of maxpool2_narrow8: eight windows per step, g (as integers: moved, never computed
; with) to the element maxpool2_grad_f32's rule picks, +0.0 to the three others, put back into the
; 32 contiguous inputs by constant shuffles; the last outs mod 8 windows one by one
define internal void @maxpool2_grad_narrow8(ptr noalias nocapture readonly %x, ptr noalias nocapture readonly %out,
                                             ptr noalias nocapture readonly %g, ptr noalias nocapture writeonly %gx,
                                             i64 %outs) alwaysinline nounwind {
entry:
  %blocks = lshr i64 %outs, 3
  %hasb = icmp ne i64 %blocks, 0
  br i1 %hasb, label %v.loop, label %tail.check
v.loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %v.loop ]
  %xo = shl i64 %i, 5
  %px = getelementptr inbounds float, ptr %x, i64 %xo
  %px1 = getelementptr inbounds float, ptr %px, i64 8
  %px2 = getelementptr inbounds float, ptr %px, i64 16
  %px3 = getelementptr inbounds float, ptr %px, i64 24
  %v0 = load <8 x float>, ptr %px, align 4
  %v1 = load <8 x float>, ptr %px1, align 4
  %v2 = load <8 x float>, ptr %px2, align 4
  %v3 = load <8 x float>, ptr %px3, align 4
  %v01 = shufflevector <8 x float> %v0, <8 x float> %v1, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %v23 = shufflevector <8 x float> %v2, <8 x float> %v3, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %va = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 0, i32 2, i32 4, i32 6, i32 16, i32 18, i32 20, i32 22>
  %vb = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 1, i32 3, i32 5, i32 7, i32 17, i32 19, i32 21, i32 23>
  %vc = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 8, i32 10, i32 12, i32 14, i32 24, i32 26, i32 28, i32 30>
  %vd = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 9, i32 11, i32 13, i32 15, i32 25, i32 27, i32 29, i32 31>
  %oo = shl i64 %i, 3
  %pm = getelementptr inbounds float, ptr %out, i64 %oo
  %vm = load <8 x float>, ptr %pm, align 4
  %pg = getelementptr inbounds float, ptr %g, i64 %oo
  %vg = load <8 x i32>, ptr %pg, align 4
  %ec = fcmp oeq <8 x float> %vc, %vm
  %eb = fcmp oeq <8 x float> %vb, %vm
  %ea = fcmp oeq <8 x float> %va, %vm
  %f2 = select <8 x i1> %ec, <8 x i32> <i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2>, <8 x i32> <i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3>
  %f1 = select <8 x i1> %eb, <8 x i32> <i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1>, <8 x i32> %f2
  %first = select <8 x i1> %ea, <8 x i32> zeroinitializer, <8 x i32> %f1
  %nb = fcmp uno <8 x float> %vb, %vb
  %nc = fcmp uno <8 x float> %vc, %vc
  %nd = fcmp uno <8 x float> %vd, %vd
  %l1 = select <8 x i1> %nb, <8 x i32> <i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1>, <8 x i32> zeroinitializer
  %l2 = select <8 x i1> %nc, <8 x i32> <i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2>, <8 x i32> %l1
  %last = select <8 x i1> %nd, <8 x i32> <i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3>, <8 x i32> %l2
  %mnan = fcmp uno <8 x float> %vm, %vm
  %k = select <8 x i1> %mnan, <8 x i32> %last, <8 x i32> %first
  %ta = icmp eq <8 x i32> %k, zeroinitializer
  %tb = icmp eq <8 x i32> %k, <i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1>
  %tc = icmp eq <8 x i32> %k, <i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2>
  %td = icmp eq <8 x i32> %k, <i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3>
  %ia = select <8 x i1> %ta, <8 x i32> %vg, <8 x i32> zeroinitializer
  %ib = select <8 x i1> %tb, <8 x i32> %vg, <8 x i32> zeroinitializer
  %ic = select <8 x i1> %tc, <8 x i32> %vg, <8 x i32> zeroinitializer
  %id = select <8 x i1> %td, <8 x i32> %vg, <8 x i32> zeroinitializer
  %iab = shufflevector <8 x i32> %ia, <8 x i32> %ib, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %icd = shufflevector <8 x i32> %ic, <8 x i32> %id, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %pgx = getelementptr inbounds float, ptr %gx, i64 %xo
  %w0 = shufflevector <16 x i32> %iab, <16 x i32> %icd, <8 x i32> <i32 0, i32 8, i32 1, i32 9, i32 2, i32 10, i32 3, i32 11>
  %pw0 = getelementptr inbounds i32, ptr %pgx, i64 0
  store <8 x i32> %w0, ptr %pw0, align 4
  %w1 = shufflevector <16 x i32> %iab, <16 x i32> %icd, <8 x i32> <i32 16, i32 24, i32 17, i32 25, i32 18, i32 26, i32 19, i32 27>
  %pw1 = getelementptr inbounds i32, ptr %pgx, i64 8
  store <8 x i32> %w1, ptr %pw1, align 4
  %w2 = shufflevector <16 x i32> %iab, <16 x i32> %icd, <8 x i32> <i32 4, i32 12, i32 5, i32 13, i32 6, i32 14, i32 7, i32 15>
  %pw2 = getelementptr inbounds i32, ptr %pgx, i64 16
  store <8 x i32> %w2, ptr %pw2, align 4
  %w3 = shufflevector <16 x i32> %iab, <16 x i32> %icd, <8 x i32> <i32 20, i32 28, i32 21, i32 29, i32 22, i32 30, i32 23, i32 31>
  %pw3 = getelementptr inbounds i32, ptr %pgx, i64 24
  store <8 x i32> %w3, ptr %pw3, align 4
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %blocks
  br i1 %i.done, label %tail.check, label %v.loop
tail.check:
  %t0 = shl i64 %blocks, 3
  %hast = icmp ult i64 %t0, %outs
  br i1 %hast, label %t.loop, label %exit
t.loop:
  %o = phi i64 [ %t0, %tail.check ], [ %o.next, %t.loop ]
  %r = udiv i64 %o, 4
  %j = urem i64 %o, 4
  %ra = mul i64 %r, 16
  %j2 = shl i64 %j, 1
  %ixa = add i64 %ra, %j2
  %pa = getelementptr inbounds float, ptr %x, i64 %ixa
  %a = load float, ptr %pa, align 4
  %pb = getelementptr inbounds float, ptr %pa, i64 1
  %b = load float, ptr %pb, align 4
  %pc = getelementptr inbounds float, ptr %pa, i64 8
  %cc = load float, ptr %pc, align 4
  %pd = getelementptr inbounds float, ptr %pa, i64 9
  %dd = load float, ptr %pd, align 4
  %pmo = getelementptr inbounds float, ptr %out, i64 %o
  %sm = load float, ptr %pmo, align 4
  %pgo = getelementptr inbounds float, ptr %g, i64 %o
  %gi = load i32, ptr %pgo, align 4
  %sec = fcmp oeq float %cc, %sm
  %seb = fcmp oeq float %b, %sm
  %sea = fcmp oeq float %a, %sm
  %sf2 = select i1 %sec, i32 2, i32 3
  %sf1 = select i1 %seb, i32 1, i32 %sf2
  %sfirst = select i1 %sea, i32 0, i32 %sf1
  %snb = fcmp uno float %b, %b
  %snc = fcmp uno float %cc, %cc
  %snd = fcmp uno float %dd, %dd
  %sl1 = select i1 %snb, i32 1, i32 0
  %sl2 = select i1 %snc, i32 2, i32 %sl1
  %slast = select i1 %snd, i32 3, i32 %sl2
  %smnan = fcmp uno float %sm, %sm
  %sk = select i1 %smnan, i32 %slast, i32 %sfirst
  %sta = icmp eq i32 %sk, 0
  %stb = icmp eq i32 %sk, 1
  %stc = icmp eq i32 %sk, 2
  %std = icmp eq i32 %sk, 3
  %sia = select i1 %sta, i32 %gi, i32 0
  %sib = select i1 %stb, i32 %gi, i32 0
  %sic = select i1 %stc, i32 %gi, i32 0
  %sid = select i1 %std, i32 %gi, i32 0
  %qa = getelementptr inbounds float, ptr %gx, i64 %ixa
  store i32 %sia, ptr %qa, align 4
  %qb = getelementptr inbounds float, ptr %qa, i64 1
  store i32 %sib, ptr %qb, align 4
  %qc = getelementptr inbounds float, ptr %qa, i64 8
  store i32 %sic, ptr %qc, align 4
  %qd = getelementptr inbounds float, ptr %qa, i64 9
  store i32 %sid, ptr %qd, align 4
  %o.next = add nuw nsw i64 %o, 1
  %o.done = icmp eq i64 %o.next, %outs
  br i1 %o.done, label %exit, label %t.loop
exit:
  ret void
}

; the gradient of maxpool2_narrow4: eight windows per step, g (as integers: moved, never computed
; with) to the element maxpool2_grad_f32's rule picks, +0.0 to the three others, put back into the
; 32 contiguous inputs by constant shuffles; the last outs mod 8 windows one by one
define internal void @maxpool2_grad_narrow4(ptr noalias nocapture readonly %x, ptr noalias nocapture readonly %out,
                                             ptr noalias nocapture readonly %g, ptr noalias nocapture writeonly %gx,
                                             i64 %outs) alwaysinline nounwind {
entry:
  %blocks = lshr i64 %outs, 3
  %hasb = icmp ne i64 %blocks, 0
  br i1 %hasb, label %v.loop, label %tail.check
v.loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %v.loop ]
  %xo = shl i64 %i, 5
  %px = getelementptr inbounds float, ptr %x, i64 %xo
  %px1 = getelementptr inbounds float, ptr %px, i64 8
  %px2 = getelementptr inbounds float, ptr %px, i64 16
  %px3 = getelementptr inbounds float, ptr %px, i64 24
  %v0 = load <8 x float>, ptr %px, align 4
  %v1 = load <8 x float>, ptr %px1, align 4
  %v2 = load <8 x float>, ptr %px2, align 4
  %v3 = load <8 x float>, ptr %px3, align 4
  %v01 = shufflevector <8 x float> %v0, <8 x float> %v1, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %v23 = shufflevector <8 x float> %v2, <8 x float> %v3, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %va = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 0, i32 2, i32 8, i32 10, i32 16, i32 18, i32 24, i32 26>
  %vb = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 1, i32 3, i32 9, i32 11, i32 17, i32 19, i32 25, i32 27>
  %vc = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 4, i32 6, i32 12, i32 14, i32 20, i32 22, i32 28, i32 30>
  %vd = shufflevector <16 x float> %v01, <16 x float> %v23, <8 x i32> <i32 5, i32 7, i32 13, i32 15, i32 21, i32 23, i32 29, i32 31>
  %oo = shl i64 %i, 3
  %pm = getelementptr inbounds float, ptr %out, i64 %oo
  %vm = load <8 x float>, ptr %pm, align 4
  %pg = getelementptr inbounds float, ptr %g, i64 %oo
  %vg = load <8 x i32>, ptr %pg, align 4
  %ec = fcmp oeq <8 x float> %vc, %vm
  %eb = fcmp oeq <8 x float> %vb, %vm
  %ea = fcmp oeq <8 x float> %va, %vm
  %f2 = select <8 x i1> %ec, <8 x i32> <i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2>, <8 x i32> <i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3>
  %f1 = select <8 x i1> %eb, <8 x i32> <i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1>, <8 x i32> %f2
  %first = select <8 x i1> %ea, <8 x i32> zeroinitializer, <8 x i32> %f1
  %nb = fcmp uno <8 x float> %vb, %vb
  %nc = fcmp uno <8 x float> %vc, %vc
  %nd = fcmp uno <8 x float> %vd, %vd
  %l1 = select <8 x i1> %nb, <8 x i32> <i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1>, <8 x i32> zeroinitializer
  %l2 = select <8 x i1> %nc, <8 x i32> <i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2>, <8 x i32> %l1
  %last = select <8 x i1> %nd, <8 x i32> <i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3>, <8 x i32> %l2
  %mnan = fcmp uno <8 x float> %vm, %vm
  %k = select <8 x i1> %mnan, <8 x i32> %last, <8 x i32> %first
  %ta = icmp eq <8 x i32> %k, zeroinitializer
  %tb = icmp eq <8 x i32> %k, <i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1>
  %tc = icmp eq <8 x i32> %k, <i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2, i32 2>
  %td = icmp eq <8 x i32> %k, <i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3, i32 3>
  %ia = select <8 x i1> %ta, <8 x i32> %vg, <8 x i32> zeroinitializer
  %ib = select <8 x i1> %tb, <8 x i32> %vg, <8 x i32> zeroinitializer
  %ic = select <8 x i1> %tc, <8 x i32> %vg, <8 x i32> zeroinitializer
  %id = select <8 x i1> %td, <8 x i32> %vg, <8 x i32> zeroinitializer
  %iab = shufflevector <8 x i32> %ia, <8 x i32> %ib, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %icd = shufflevector <8 x i32> %ic, <8 x i32> %id, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %pgx = getelementptr inbounds float, ptr %gx, i64 %xo
  %w0 = shufflevector <16 x i32> %iab, <16 x i32> %icd, <8 x i32> <i32 0, i32 8, i32 1, i32 9, i32 16, i32 24, i32 17, i32 25>
  %pw0 = getelementptr inbounds i32, ptr %pgx, i64 0
  store <8 x i32> %w0, ptr %pw0, align 4
  %w1 = shufflevector <16 x i32> %iab, <16 x i32> %icd, <8 x i32> <i32 2, i32 10, i32 3, i32 11, i32 18, i32 26, i32 19, i32 27>
  %pw1 = getelementptr inbounds i32, ptr %pgx, i64 8
  store <8 x i32> %w1, ptr %pw1, align 4
  %w2 = shufflevector <16 x i32> %iab, <16 x i32> %icd, <8 x i32> <i32 4, i32 12, i32 5, i32 13, i32 20, i32 28, i32 21, i32 29>
  %pw2 = getelementptr inbounds i32, ptr %pgx, i64 16
  store <8 x i32> %w2, ptr %pw2, align 4
  %w3 = shufflevector <16 x i32> %iab, <16 x i32> %icd, <8 x i32> <i32 6, i32 14, i32 7, i32 15, i32 22, i32 30, i32 23, i32 31>
  %pw3 = getelementptr inbounds i32, ptr %pgx, i64 24
  store <8 x i32> %w3, ptr %pw3, align 4
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %blocks
  br i1 %i.done, label %tail.check, label %v.loop
tail.check:
  %t0 = shl i64 %blocks, 3
  %hast = icmp ult i64 %t0, %outs
  br i1 %hast, label %t.loop, label %exit
t.loop:
  %o = phi i64 [ %t0, %tail.check ], [ %o.next, %t.loop ]
  %r = udiv i64 %o, 2
  %j = urem i64 %o, 2
  %ra = mul i64 %r, 8
  %j2 = shl i64 %j, 1
  %ixa = add i64 %ra, %j2
  %pa = getelementptr inbounds float, ptr %x, i64 %ixa
  %a = load float, ptr %pa, align 4
  %pb = getelementptr inbounds float, ptr %pa, i64 1
  %b = load float, ptr %pb, align 4
  %pc = getelementptr inbounds float, ptr %pa, i64 4
  %cc = load float, ptr %pc, align 4
  %pd = getelementptr inbounds float, ptr %pa, i64 5
  %dd = load float, ptr %pd, align 4
  %pmo = getelementptr inbounds float, ptr %out, i64 %o
  %sm = load float, ptr %pmo, align 4
  %pgo = getelementptr inbounds float, ptr %g, i64 %o
  %gi = load i32, ptr %pgo, align 4
  %sec = fcmp oeq float %cc, %sm
  %seb = fcmp oeq float %b, %sm
  %sea = fcmp oeq float %a, %sm
  %sf2 = select i1 %sec, i32 2, i32 3
  %sf1 = select i1 %seb, i32 1, i32 %sf2
  %sfirst = select i1 %sea, i32 0, i32 %sf1
  %snb = fcmp uno float %b, %b
  %snc = fcmp uno float %cc, %cc
  %snd = fcmp uno float %dd, %dd
  %sl1 = select i1 %snb, i32 1, i32 0
  %sl2 = select i1 %snc, i32 2, i32 %sl1
  %slast = select i1 %snd, i32 3, i32 %sl2
  %smnan = fcmp uno float %sm, %sm
  %sk = select i1 %smnan, i32 %slast, i32 %sfirst
  %sta = icmp eq i32 %sk, 0
  %stb = icmp eq i32 %sk, 1
  %stc = icmp eq i32 %sk, 2
  %std = icmp eq i32 %sk, 3
  %sia = select i1 %sta, i32 %gi, i32 0
  %sib = select i1 %stb, i32 %gi, i32 0
  %sic = select i1 %stc, i32 %gi, i32 0
  %sid = select i1 %std, i32 %gi, i32 0
  %qa = getelementptr inbounds float, ptr %gx, i64 %ixa
  store i32 %sia, ptr %qa, align 4
  %qb = getelementptr inbounds float, ptr %qa, i64 1
  store i32 %sib, ptr %qb, align 4
  %qc = getelementptr inbounds float, ptr %qa, i64 4
  store i32 %sic, ptr %qc, align 4
  %qd = getelementptr inbounds float, ptr %qa, i64 5
  store i32 %sid, ptr %qd, align 4
  %o.next = add nuw nsw i64 %o, 1
  %o.done = icmp eq i64 %o.next, %outs
  br i1 %o.done, label %exit, label %t.loop
exit:
  ret void
}

define void @maxpool2_grad_f32(ptr noalias nocapture readonly %x, ptr noalias nocapture readonly %out,
                               ptr noalias nocapture readonly %g, ptr noalias nocapture writeonly %gx,
                               ptr noalias nocapture readonly %d) nounwind #2 {
entry:
  %np = load i64, ptr %d
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %h = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %w = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %oh = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %ow = load i64, ptr %d4
  %plane = mul i64 %h, %w
  %w2 = shl i64 %w, 1
  %ow2 = shl i64 %ow, 1
  %ow4 = and i64 %ow, -4                ; windows taken four at a time (the rest one by one)
  %colrest = sub i64 %w, %ow2           ; input columns past the last window (W odd): 0 or 1
  %oh2 = shl i64 %oh, 1
  %rowrest = sub i64 %h, %oh2           ; input rows past the last window (H odd)
  %restn = mul i64 %rowrest, %w
  %empty = icmp sle i64 %np, 0
  br i1 %empty, label %exit, label %g.narrow
g.narrow:
  ; planes 4 or 8 wide with an even height: the flat paths (every input in a window)
  %ghodd = and i64 %h, 1
  %gheven = icmp eq i64 %ghodd, 0
  %gw4 = icmp eq i64 %w, 4
  %gw8 = icmp eq i64 %w, 8
  %gn4 = and i1 %gheven, %gw4
  %gn8 = and i1 %gheven, %gw8
  %gtotal = mul i64 %np, %plane
  %gouts = lshr i64 %gtotal, 2
  br i1 %gn8, label %gnarrow8, label %g.narrow4
g.narrow4:
  br i1 %gn4, label %gnarrow4, label %p.loop
gnarrow8:
  call void @maxpool2_grad_narrow8(ptr %x, ptr %out, ptr %g, ptr %gx, i64 %gouts)
  br label %exit
gnarrow4:
  call void @maxpool2_grad_narrow4(ptr %x, ptr %out, ptr %g, ptr %gx, i64 %gouts)
  br label %exit
p.loop:
  %p = phi i64 [ 0, %g.narrow4 ], [ %p.next, %p.latch ]
  %pbase = mul i64 %p, %plane
  %xp = getelementptr inbounds float, ptr %x, i64 %pbase
  %gxp = getelementptr inbounds float, ptr %gx, i64 %pbase
  %opo = mul i64 %p, %oh
  %norows = icmp sle i64 %oh, 0
  br i1 %norows, label %p.rest, label %q.loop
q.loop:
  %q = phi i64 [ 0, %p.loop ], [ %q.next, %q.latch ]
  %qoff = mul i64 %q, %w2
  %row0 = getelementptr inbounds float, ptr %xp, i64 %qoff
  %row1 = getelementptr inbounds float, ptr %row0, i64 %w
  %grow0 = getelementptr inbounds float, ptr %gxp, i64 %qoff
  %grow1 = getelementptr inbounds float, ptr %grow0, i64 %w
  %orr = add i64 %opo, %q
  %ooff = mul i64 %orr, %ow
  %orow = getelementptr inbounds float, ptr %out, i64 %ooff
  %gorow = getelementptr inbounds float, ptr %g, i64 %ooff
  %nocols = icmp sle i64 %ow, 0
  br i1 %nocols, label %q.rest, label %v.check
v.check:
  %has4 = icmp sgt i64 %ow4, 0
  br i1 %has4, label %v.loop, label %s.check
v.loop:
  ; four windows at once: input columns 2c .. 2c + 7 of both rows, split into the windows' a b / c d
  %vc = phi i64 [ 0, %v.check ], [ %vc.next, %v.loop ]
  %vc2 = shl i64 %vc, 1
  %pr0 = getelementptr inbounds float, ptr %row0, i64 %vc2
  %r0 = load <8 x float>, ptr %pr0, align 4
  %pr1 = getelementptr inbounds float, ptr %row1, i64 %vc2
  %r1 = load <8 x float>, ptr %pr1, align 4
  %va = shufflevector <8 x float> %r0, <8 x float> undef, <4 x i32> <i32 0, i32 2, i32 4, i32 6>
  %vb = shufflevector <8 x float> %r0, <8 x float> undef, <4 x i32> <i32 1, i32 3, i32 5, i32 7>
  %vcc = shufflevector <8 x float> %r1, <8 x float> undef, <4 x i32> <i32 0, i32 2, i32 4, i32 6>
  %vdd = shufflevector <8 x float> %r1, <8 x float> undef, <4 x i32> <i32 1, i32 3, i32 5, i32 7>
  %pvm = getelementptr inbounds float, ptr %orow, i64 %vc
  %vm = load <4 x float>, ptr %pvm, align 4
  %pvg = getelementptr inbounds float, ptr %gorow, i64 %vc
  %vg = load <4 x i32>, ptr %pvg, align 4
  %vec = fcmp oeq <4 x float> %vcc, %vm
  %veb = fcmp oeq <4 x float> %vb, %vm
  %vea = fcmp oeq <4 x float> %va, %vm
  %vf2 = select <4 x i1> %vec, <4 x i32> <i32 2, i32 2, i32 2, i32 2>, <4 x i32> <i32 3, i32 3, i32 3, i32 3>
  %vf1 = select <4 x i1> %veb, <4 x i32> <i32 1, i32 1, i32 1, i32 1>, <4 x i32> %vf2
  %vfirst = select <4 x i1> %vea, <4 x i32> zeroinitializer, <4 x i32> %vf1
  %vnb = fcmp uno <4 x float> %vb, %vb
  %vnc = fcmp uno <4 x float> %vcc, %vcc
  %vnd = fcmp uno <4 x float> %vdd, %vdd
  %vl1 = select <4 x i1> %vnb, <4 x i32> <i32 1, i32 1, i32 1, i32 1>, <4 x i32> zeroinitializer
  %vl2 = select <4 x i1> %vnc, <4 x i32> <i32 2, i32 2, i32 2, i32 2>, <4 x i32> %vl1
  %vlast = select <4 x i1> %vnd, <4 x i32> <i32 3, i32 3, i32 3, i32 3>, <4 x i32> %vl2
  %vmnan = fcmp uno <4 x float> %vm, %vm
  %vk = select <4 x i1> %vmnan, <4 x i32> %vlast, <4 x i32> %vfirst
  %vta = icmp eq <4 x i32> %vk, zeroinitializer
  %vtb = icmp eq <4 x i32> %vk, <i32 1, i32 1, i32 1, i32 1>
  %vtc = icmp eq <4 x i32> %vk, <i32 2, i32 2, i32 2, i32 2>
  %vtd = icmp eq <4 x i32> %vk, <i32 3, i32 3, i32 3, i32 3>
  %via = select <4 x i1> %vta, <4 x i32> %vg, <4 x i32> zeroinitializer
  %vib = select <4 x i1> %vtb, <4 x i32> %vg, <4 x i32> zeroinitializer
  %vic = select <4 x i1> %vtc, <4 x i32> %vg, <4 x i32> zeroinitializer
  %vid = select <4 x i1> %vtd, <4 x i32> %vg, <4 x i32> zeroinitializer
  %w0 = shufflevector <4 x i32> %via, <4 x i32> %vib, <8 x i32> <i32 0, i32 4, i32 1, i32 5, i32 2, i32 6, i32 3, i32 7>
  %w1 = shufflevector <4 x i32> %vic, <4 x i32> %vid, <8 x i32> <i32 0, i32 4, i32 1, i32 5, i32 2, i32 6, i32 3, i32 7>
  %pw0 = getelementptr inbounds float, ptr %grow0, i64 %vc2
  store <8 x i32> %w0, ptr %pw0, align 4
  %pw1 = getelementptr inbounds float, ptr %grow1, i64 %vc2
  store <8 x i32> %w1, ptr %pw1, align 4
  %vc.next = add nuw nsw i64 %vc, 4
  %vc.done = icmp eq i64 %vc.next, %ow4
  br i1 %vc.done, label %s.check, label %v.loop
s.check:
  %more = icmp slt i64 %ow4, %ow
  br i1 %more, label %c.loop, label %q.rest
c.loop:
  %c = phi i64 [ %ow4, %s.check ], [ %c.next, %c.loop ]
  %c2 = shl i64 %c, 1
  %c21 = or i64 %c2, 1
  %pa = getelementptr inbounds float, ptr %row0, i64 %c2
  %a = load float, ptr %pa, align 4
  %pb = getelementptr inbounds float, ptr %row0, i64 %c21
  %b = load float, ptr %pb, align 4
  %pc = getelementptr inbounds float, ptr %row1, i64 %c2
  %cc = load float, ptr %pc, align 4
  %pd = getelementptr inbounds float, ptr %row1, i64 %c21
  %dd = load float, ptr %pd, align 4
  %po = getelementptr inbounds float, ptr %orow, i64 %c
  %m = load float, ptr %po, align 4
  %pg = getelementptr inbounds float, ptr %gorow, i64 %c
  %gi = load i32, ptr %pg, align 4        ; g's bits: moved, never computed with
  ; the window's chosen element k: the first equal to the maximum, or the last NaN of a NaN one
  %ec = fcmp oeq float %cc, %m
  %eb = fcmp oeq float %b, %m
  %ea = fcmp oeq float %a, %m
  %f2 = select i1 %ec, i32 2, i32 3
  %f1 = select i1 %eb, i32 1, i32 %f2
  %first = select i1 %ea, i32 0, i32 %f1
  %nb = fcmp uno float %b, %b
  %nc = fcmp uno float %cc, %cc
  %nd = fcmp uno float %dd, %dd
  %l1 = select i1 %nb, i32 1, i32 0
  %l2 = select i1 %nc, i32 2, i32 %l1
  %last = select i1 %nd, i32 3, i32 %l2
  %mnan = fcmp uno float %m, %m
  %k = select i1 %mnan, i32 %last, i32 %first
  ; g or +0.0, selected and stored as integers: a float select on these conditions compiles to a
  ; branch on x86 (no conditional move into vector registers), mispredicted on every other window
  %ta = icmp eq i32 %k, 0
  %tb = icmp eq i32 %k, 1
  %tc = icmp eq i32 %k, 2
  %td = icmp eq i32 %k, 3
  %ia = select i1 %ta, i32 %gi, i32 0
  %ib = select i1 %tb, i32 %gi, i32 0
  %ic = select i1 %tc, i32 %gi, i32 0
  %id = select i1 %td, i32 %gi, i32 0
  %qa = getelementptr inbounds float, ptr %grow0, i64 %c2
  store i32 %ia, ptr %qa, align 4
  %qb = getelementptr inbounds float, ptr %grow0, i64 %c21
  store i32 %ib, ptr %qb, align 4
  %qc = getelementptr inbounds float, ptr %grow1, i64 %c2
  store i32 %ic, ptr %qc, align 4
  %qd = getelementptr inbounds float, ptr %grow1, i64 %c21
  store i32 %id, ptr %qd, align 4
  %c.next = add nuw nsw i64 %c, 1
  %c.done = icmp eq i64 %c.next, %ow
  br i1 %c.done, label %q.rest, label %c.loop, !llvm.loop !35
q.rest:
  ; the column past the last window of both rows (W odd)
  %rc0 = getelementptr inbounds float, ptr %grow0, i64 %ow2
  call void @zero_f32s(ptr %rc0, i64 %colrest)
  %rc1 = getelementptr inbounds float, ptr %grow1, i64 %ow2
  call void @zero_f32s(ptr %rc1, i64 %colrest)
  br label %q.latch
q.latch:
  %q.next = add nuw nsw i64 %q, 1
  %q.done = icmp eq i64 %q.next, %oh
  br i1 %q.done, label %p.rest, label %q.loop
p.rest:
  ; the rows past the last window (H odd)
  %oh2w = mul i64 %oh2, %w
  %rr = getelementptr inbounds float, ptr %gxp, i64 %oh2w
  call void @zero_f32s(ptr %rr, i64 %restn)
  br label %p.latch
p.latch:
  %p.next = add nuw nsw i64 %p, 1
  %p.done = icmp eq i64 %p.next, %np
  br i1 %p.done, label %exit, label %p.loop
exit:
  ret void
}

; the forward row loop: vectors of 4 windows (LeNet's rows of 12 and 4 windows take no scalar
; remainder); the gradient's: written with explicit <4 x> vectors above, its remainder loop scalar
!30 = distinct !{!30, !32, !33, !34}
!32 = !{!"llvm.loop.interleave.count", i32 1}
!33 = !{!"llvm.loop.vectorize.enable", i1 true}
!34 = !{!"llvm.loop.vectorize.width", i32 4}
!35 = distinct !{!35, !32, !36}
!36 = !{!"llvm.loop.vectorize.enable", i1 false}

attributes #2 = { nounwind "no-builtins" }
