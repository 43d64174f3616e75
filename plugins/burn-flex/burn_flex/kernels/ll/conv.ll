; flex's JIT im2col / col2im for float32 convolutions (burn_flex/kernels/conv.py calls them through
; burn_flex/jit.py; compiled with LLVM -O3 for the host CPU, no fast-math flags).
;
; Layout: x is [P, H, W] (P = images * channels, contiguous). Column rows are OH * OW long; the
; row of plane p = n * C + c and kernel offset (i, j) starts at
;   n * IS + c * CS + (i * KW + j) * RS
; per image ([P, KH, KW, OH, OW] = conv.py's [N, G, C/G * KH * KW, OH * OW]: RS = OH * OW,
; CS = KH * KW * RS, IS = C * CS) or with the batch folded into the columns ([C * KH * KW, N * OH * OW]:
; RS = N * OH * OW, CS = KH * KW * RS, IS = OH * OW). The caller precomputes the geometry, so the
; loops hold one division per plane and no per-element bounds checks:
;   d      = [P, H * W, KH, KW, OH, OW, SW, C, RS, IS, CS]                (i64)
;   rowoff = [KH * OH + KH]: ih * W for kernel row i and output row oh, or -1 where ih is padding;
;            then per kernel row i, 1 when none of its rows is padding
; In im2col, a block (plane p, kernel offset i, j) with unit stride, no padded row or column and OW a
; multiple of 8 takes a fast path: whole <8 x float> vectors per row, no per-row padding tests
; (LeNet's second conv: rows of 8, where those tests cost more than the copy; 0.72x its time).
; col2im keeps one path: its adds of neighbouring offsets j overlap, and vectors there stall on
; store-to-load forwarding (measured: no faster).
;   colr   = [3 * KW]: lo[j], hi[j], co[j]: output columns lo..hi-1 read input column ow * SW + co[j]
;            (the others are padding)
; im2col_f32 writes every column element once (zeros in padding); col2im_f32 adds each column
; element into its input position (x += ...), rows in the fixed order p, i, j, oh, ow, so the sum
; per element is the same for any split of P over threads. The unit-stride row loops vectorize;
; interleave count 1 keeps short rows (LeNet's OW = 8) in the vector loop.

; zeros in p[0..n-1] (a store loop: "no-builtins" keeps LLVM from turning the loops into memset /
; memcpy calls, which cost more than the few elements of a row)
define internal void @zero_f32(ptr nocapture writeonly %p, i64 %n) alwaysinline nounwind #0 {
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

define void @im2col_f32(ptr noalias nocapture readonly %x, ptr noalias nocapture writeonly %out,
                        ptr noalias nocapture readonly %d, ptr noalias nocapture readonly %rowoff,
                        ptr noalias nocapture readonly %colr) nounwind #0 {
entry:
  %np = load i64, ptr %d
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %plane = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %kh = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %kw = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %oh = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %ow = load i64, ptr %d5
  %d6 = getelementptr inbounds i64, ptr %d, i64 6
  %sw = load i64, ptr %d6
  %d7 = getelementptr inbounds i64, ptr %d, i64 7
  %cpi = load i64, ptr %d7
  %d8 = getelementptr inbounds i64, ptr %d, i64 8
  %rs = load i64, ptr %d8
  %d9 = getelementptr inbounds i64, ptr %d, i64 9
  %istr = load i64, ptr %d9
  %d10 = getelementptr inbounds i64, ptr %d, i64 10
  %cstr = load i64, ptr %d10
  %kw2 = shl i64 %kw, 1
  %unit = icmp eq i64 %sw, 1
  %ow7 = and i64 %ow, 7
  %ow8ok = icmp eq i64 %ow7, 0
  %owpos = icmp sgt i64 %ow, 0
  %vecrows = and i1 %ow8ok, %owpos
  %unitvec = and i1 %unit, %vecrows
  %khoh = mul i64 %kh, %oh
  %empty = icmp sle i64 %np, 0
  br i1 %empty, label %exit, label %p.loop
p.loop:
  %p = phi i64 [ 0, %entry ], [ %p.next, %p.latch ]
  %xp = mul i64 %p, %plane
  %nimg = udiv i64 %p, %cpi
  %cimg = urem i64 %p, %cpi
  %ob1 = mul i64 %nimg, %istr
  %ob2 = mul i64 %cimg, %cstr
  %obase = add i64 %ob1, %ob2
  br label %i.loop
i.loop:
  %i = phi i64 [ 0, %p.loop ], [ %i.next, %i.latch ]
  %ik = mul i64 %i, %kw
  %ioh = mul i64 %i, %oh
  %vix = add i64 %khoh, %i
  %pvi = getelementptr inbounds i64, ptr %rowoff, i64 %vix
  %vi = load i64, ptr %pvi
  %rowsok = icmp ne i64 %vi, 0
  %ifast = and i1 %unitvec, %rowsok
  br label %j.loop
j.loop:
  %j = phi i64 [ 0, %i.loop ], [ %j.next, %j.latch ]
  %plo = getelementptr inbounds i64, ptr %colr, i64 %j
  %lo = load i64, ptr %plo
  %jhi = add i64 %j, %kw
  %phi_ = getelementptr inbounds i64, ptr %colr, i64 %jhi
  %hi = load i64, ptr %phi_
  %jco = add i64 %j, %kw2
  %pco = getelementptr inbounds i64, ptr %colr, i64 %jco
  %co = load i64, ptr %pco
  %ikj = add i64 %ik, %j
  %rjs = mul i64 %ikj, %rs
  %rowj = add i64 %obase, %rjs
  %haslo = icmp sgt i64 %lo, 0
  %hascopy = icmp slt i64 %lo, %hi
  %hastail = icmp slt i64 %hi, %ow
  %tailn = sub i64 %ow, %hi
  %lo0 = icmp eq i64 %lo, 0
  %hifull = icmp eq i64 %hi, %ow
  %full = and i1 %lo0, %hifull
  %jfast = and i1 %ifast, %full
  br i1 %jfast, label %f.loop, label %h.loop
f.loop:
  ; the fast path (see the header): every row whole, copied by vectors
  %fh = phi i64 [ 0, %j.loop ], [ %fh.next, %f.latch ]
  %fhw = mul i64 %fh, %ow
  %forow = add i64 %rowj, %fhw
  %fo = getelementptr inbounds float, ptr %out, i64 %forow
  %firoh = add i64 %ioh, %fh
  %pfro = getelementptr inbounds i64, ptr %rowoff, i64 %firoh
  %fro = load i64, ptr %pfro
  %fxr = add i64 %xp, %fro
  %fsrc = add i64 %fxr, %co
  %fx = getelementptr inbounds float, ptr %x, i64 %fsrc
  br label %f.copy
f.copy:
  %fw = phi i64 [ 0, %f.loop ], [ %fw.next, %f.copy ]
  %pfx = getelementptr inbounds float, ptr %fx, i64 %fw
  %fv = load <8 x float>, ptr %pfx, align 4
  %pfo = getelementptr inbounds float, ptr %fo, i64 %fw
  store <8 x float> %fv, ptr %pfo, align 4
  %fw.next = add nuw nsw i64 %fw, 8
  %fw.done = icmp eq i64 %fw.next, %ow
  br i1 %fw.done, label %f.latch, label %f.copy
f.latch:
  %fh.next = add nuw nsw i64 %fh, 1
  %fh.done = icmp eq i64 %fh.next, %oh
  br i1 %fh.done, label %j.latch, label %f.loop
h.loop:
  %h = phi i64 [ 0, %j.loop ], [ %h.next, %h.latch ]
  %hw = mul i64 %h, %ow
  %orow = add i64 %rowj, %hw
  %o = getelementptr inbounds float, ptr %out, i64 %orow
  %iroh = add i64 %ioh, %h
  %pro = getelementptr inbounds i64, ptr %rowoff, i64 %iroh
  %ro = load i64, ptr %pro
  %pad = icmp slt i64 %ro, 0
  br i1 %pad, label %h.zero, label %h.lo
h.zero:
  call void @zero_f32(ptr %o, i64 %ow)
  br label %h.latch
h.lo:
  br i1 %haslo, label %h.zlo, label %h.copy
h.zlo:
  call void @zero_f32(ptr %o, i64 %lo)
  br label %h.copy
h.copy:
  %xr = add i64 %xp, %ro
  %src = add i64 %xr, %co
  br i1 %hascopy, label %h.sel, label %h.tail
h.sel:
  br i1 %unit, label %c1.loop, label %cs.loop
c1.loop:
  %w1 = phi i64 [ %lo, %h.sel ], [ %w1.next, %c1.loop ]
  %s1 = add nsw i64 %src, %w1
  %ps1 = getelementptr inbounds float, ptr %x, i64 %s1
  %v1 = load float, ptr %ps1, align 4
  %po1 = getelementptr inbounds float, ptr %o, i64 %w1
  store float %v1, ptr %po1, align 4
  %w1.next = add nsw i64 %w1, 1
  %c1.done = icmp eq i64 %w1.next, %hi
  br i1 %c1.done, label %h.tail, label %c1.loop, !llvm.loop !0
cs.loop:
  %ws = phi i64 [ %lo, %h.sel ], [ %ws.next, %cs.loop ]
  %ms = mul i64 %ws, %sw
  %ss = add i64 %src, %ms
  %pss = getelementptr inbounds float, ptr %x, i64 %ss
  %vs = load float, ptr %pss, align 4
  %pos = getelementptr inbounds float, ptr %o, i64 %ws
  store float %vs, ptr %pos, align 4
  %ws.next = add nsw i64 %ws, 1
  %cs.done = icmp eq i64 %ws.next, %hi
  br i1 %cs.done, label %h.tail, label %cs.loop
h.tail:
  br i1 %hastail, label %h.ztail, label %h.latch
h.ztail:
  %pt = getelementptr inbounds float, ptr %o, i64 %hi
  call void @zero_f32(ptr %pt, i64 %tailn)
  br label %h.latch
h.latch:
  %h.next = add nuw nsw i64 %h, 1
  %h.done = icmp eq i64 %h.next, %oh
  br i1 %h.done, label %j.latch, label %h.loop
j.latch:
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %kw
  br i1 %j.done, label %i.latch, label %j.loop
i.latch:
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %kh
  br i1 %i.done, label %p.latch, label %i.loop
p.latch:
  %p.next = add nuw nsw i64 %p, 1
  %p.done = icmp eq i64 %p.next, %np
  br i1 %p.done, label %exit, label %p.loop
exit:
  ret void
}

define void @col2im_f32(ptr noalias nocapture readonly %cols, ptr noalias nocapture %x,
                        ptr noalias nocapture readonly %d, ptr noalias nocapture readonly %rowoff,
                        ptr noalias nocapture readonly %colr) nounwind #0 {
entry:
  %np = load i64, ptr %d
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %plane = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %kh = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %kw = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %oh = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %ow = load i64, ptr %d5
  %d6 = getelementptr inbounds i64, ptr %d, i64 6
  %sw = load i64, ptr %d6
  %d7 = getelementptr inbounds i64, ptr %d, i64 7
  %cpi = load i64, ptr %d7
  %d8 = getelementptr inbounds i64, ptr %d, i64 8
  %rs = load i64, ptr %d8
  %d9 = getelementptr inbounds i64, ptr %d, i64 9
  %istr = load i64, ptr %d9
  %d10 = getelementptr inbounds i64, ptr %d, i64 10
  %cstr = load i64, ptr %d10
  %kw2 = shl i64 %kw, 1
  %unit = icmp eq i64 %sw, 1
  %empty = icmp sle i64 %np, 0
  br i1 %empty, label %exit, label %p.loop
p.loop:
  %p = phi i64 [ 0, %entry ], [ %p.next, %p.latch ]
  %xp = mul i64 %p, %plane
  %nimg = udiv i64 %p, %cpi
  %cimg = urem i64 %p, %cpi
  %ob1 = mul i64 %nimg, %istr
  %ob2 = mul i64 %cimg, %cstr
  %obase = add i64 %ob1, %ob2
  br label %i.loop
i.loop:
  %i = phi i64 [ 0, %p.loop ], [ %i.next, %i.latch ]
  %ik = mul i64 %i, %kw
  %ioh = mul i64 %i, %oh
  br label %j.loop
j.loop:
  %j = phi i64 [ 0, %i.loop ], [ %j.next, %j.latch ]
  %plo = getelementptr inbounds i64, ptr %colr, i64 %j
  %lo = load i64, ptr %plo
  %jhi = add i64 %j, %kw
  %phi_ = getelementptr inbounds i64, ptr %colr, i64 %jhi
  %hi = load i64, ptr %phi_
  %jco = add i64 %j, %kw2
  %pco = getelementptr inbounds i64, ptr %colr, i64 %jco
  %co = load i64, ptr %pco
  %ikj = add i64 %ik, %j
  %rjs = mul i64 %ikj, %rs
  %rowj = add i64 %obase, %rjs
  %hascopy = icmp slt i64 %lo, %hi
  br i1 %hascopy, label %h.loop, label %j.latch
h.loop:
  %h = phi i64 [ 0, %j.loop ], [ %h.next, %h.latch ]
  %hw = mul i64 %h, %ow
  %crow = add i64 %rowj, %hw
  %c = getelementptr inbounds float, ptr %cols, i64 %crow
  %iroh = add i64 %ioh, %h
  %pro = getelementptr inbounds i64, ptr %rowoff, i64 %iroh
  %ro = load i64, ptr %pro
  %pad = icmp slt i64 %ro, 0
  br i1 %pad, label %h.latch, label %h.sel
h.sel:
  %xr = add i64 %xp, %ro
  %dst = add i64 %xr, %co
  br i1 %unit, label %a1.loop, label %as.loop
a1.loop:
  %w1 = phi i64 [ %lo, %h.sel ], [ %w1.next, %a1.loop ]
  %pc1 = getelementptr inbounds float, ptr %c, i64 %w1
  %v1 = load float, ptr %pc1, align 4
  %t1 = add nsw i64 %dst, %w1
  %px1 = getelementptr inbounds float, ptr %x, i64 %t1
  %g1 = load float, ptr %px1, align 4
  %s1 = fadd float %g1, %v1
  store float %s1, ptr %px1, align 4
  %w1.next = add nsw i64 %w1, 1
  %a1.done = icmp eq i64 %w1.next, %hi
  br i1 %a1.done, label %h.latch, label %a1.loop, !llvm.loop !3
as.loop:
  %ws = phi i64 [ %lo, %h.sel ], [ %ws.next, %as.loop ]
  %pcs = getelementptr inbounds float, ptr %c, i64 %ws
  %vs = load float, ptr %pcs, align 4
  %ms = mul i64 %ws, %sw
  %ts = add i64 %dst, %ms
  %pxs = getelementptr inbounds float, ptr %x, i64 %ts
  %gs = load float, ptr %pxs, align 4
  %ss = fadd float %gs, %vs
  store float %ss, ptr %pxs, align 4
  %ws.next = add nsw i64 %ws, 1
  %as.done = icmp eq i64 %ws.next, %hi
  br i1 %as.done, label %h.latch, label %as.loop
h.latch:
  %h.next = add nuw nsw i64 %h, 1
  %h.done = icmp eq i64 %h.next, %oh
  br i1 %h.done, label %j.latch, label %h.loop
j.latch:
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %kw
  br i1 %j.done, label %i.latch, label %j.loop
i.latch:
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %kh
  br i1 %i.done, label %p.latch, label %i.loop
p.latch:
  %p.next = add nuw nsw i64 %p, 1
  %p.done = icmp eq i64 %p.next, %np
  br i1 %p.done, label %exit, label %p.loop
exit:
  ret void
}

!0 = distinct !{!0, !1, !2}
!1 = !{!"llvm.loop.interleave.count", i32 1}
!2 = !{!"llvm.loop.vectorize.enable", i1 true}
!3 = distinct !{!3, !1, !2}
!4 = distinct !{!4, !1, !2}

attributes #0 = { nounwind "no-builtins" }

; im2col by gathers, for images whose output rows are too short for row copies (the digits CNN's
; 4 x 4 and 8 x 8 planes: a row of 4 costs its per-row tests and branches, ~1 ns per element).
; Every (kernel offset q, output position e) reads input offset tab[q * L8 + e] of its plane, or
; writes 0 where that is -1 (padding); one <8 x float> masked gather per 8 positions:
;   d   = [P, H * W, C, KH * KW, L = OH * OW, L8 = L rounded up to 8, RS, IS, CS]   (i64)
;   tab = [KH * KW * L8] int32 offsets within a plane (-1: padding, and the L..L8-1 tail)
; RS / IS / CS are im2col_f32's: the same per-image and folded layouts, the same columns.
define void @im2col_gather_f32(ptr noalias nocapture readonly %x, ptr noalias nocapture writeonly %out,
                               ptr noalias nocapture readonly %d, ptr noalias nocapture readonly %tab) nounwind #0 {
entry:
  %np = load i64, ptr %d
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %plane = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %cpi = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %kk = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %len = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %len8 = load i64, ptr %d5
  %d6 = getelementptr inbounds i64, ptr %d, i64 6
  %rs = load i64, ptr %d6
  %d7 = getelementptr inbounds i64, ptr %d, i64 7
  %istr = load i64, ptr %d7
  %d8 = getelementptr inbounds i64, ptr %d, i64 8
  %cstr = load i64, ptr %d8
  %noplanes = icmp sle i64 %np, 0
  %nolen = icmp sle i64 %len, 0
  %nokk = icmp sle i64 %kk, 0
  %e1 = or i1 %noplanes, %nolen
  %empty = or i1 %e1, %nokk
  br i1 %empty, label %exit, label %p.loop
p.loop:
  %p = phi i64 [ 0, %entry ], [ %p.next, %p.latch ]
  %xo = mul i64 %p, %plane
  %xp = getelementptr inbounds float, ptr %x, i64 %xo
  %nimg = udiv i64 %p, %cpi
  %cimg = urem i64 %p, %cpi
  %ob1 = mul i64 %nimg, %istr
  %ob2 = mul i64 %cimg, %cstr
  %obase = add i64 %ob1, %ob2
  br label %q.loop
q.loop:
  %q = phi i64 [ 0, %p.loop ], [ %q.next, %q.latch ]
  %qrs = mul i64 %q, %rs
  %oo = add i64 %obase, %qrs
  %o = getelementptr inbounds float, ptr %out, i64 %oo
  %qt = mul i64 %q, %len8
  %t = getelementptr inbounds i32, ptr %tab, i64 %qt
  br label %e.loop
e.loop:
  %e = phi i64 [ 0, %q.loop ], [ %e.next, %e.latch ]
  %pt = getelementptr inbounds i32, ptr %t, i64 %e
  %offs = load <8 x i32>, ptr %pt, align 4
  %m = icmp sge <8 x i32> %offs, zeroinitializer
  ; no inbounds: a masked-off lane's offset is -1
  %ptrs = getelementptr float, ptr %xp, <8 x i32> %offs
  %v = call <8 x float> @llvm.masked.gather.v8f32.v8p0(<8 x ptr> %ptrs, i32 4, <8 x i1> %m, <8 x float> zeroinitializer)
  %po = getelementptr inbounds float, ptr %o, i64 %e
  %e.next = add nuw nsw i64 %e, 8
  %whole = icmp sle i64 %e.next, %len
  br i1 %whole, label %e.full, label %e.part
e.full:
  store <8 x float> %v, ptr %po, align 4
  br label %e.latch
e.part:
  ; the row's last 1..7 positions: the lanes past L belong to the next row (or image)
  %left = sub i64 %len, %e
  %left32 = trunc i64 %left to i32
  %ls = insertelement <8 x i32> poison, i32 %left32, i64 0
  %lsplat = shufflevector <8 x i32> %ls, <8 x i32> poison, <8 x i32> zeroinitializer
  %sm = icmp slt <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>, %lsplat
  call void @llvm.masked.store.v8f32.p0(<8 x float> %v, ptr %po, i32 4, <8 x i1> %sm)
  br label %e.latch
e.latch:
  %e.done = icmp sge i64 %e.next, %len
  br i1 %e.done, label %q.latch, label %e.loop
q.latch:
  %q.next = add nuw nsw i64 %q, 1
  %q.done = icmp eq i64 %q.next, %kk
  br i1 %q.done, label %p.latch, label %q.loop
p.latch:
  %p.next = add nuw nsw i64 %p, 1
  %p.done = icmp eq i64 %p.next, %np
  br i1 %p.done, label %exit, label %p.loop
exit:
  ret void
}

declare <8 x float> @llvm.masked.gather.v8f32.v8p0(<8 x ptr>, i32, <8 x i1>, <8 x float>)
declare void @llvm.masked.store.v8f32.p0(<8 x float>, ptr, i32, <8 x i1>)

; x [P, H, W] copied into the middle of out [P, PT + H + PB, PL + W + PR], zeros around it: the
; padded input of the direct convolution (numpy's strided copy runs one inner loop per row, ~8 ns
; each: 34 us for the digits CNN's [64, 16, 4, 4] input, whose rows are 4 floats long).
;   d = [P, H, W, PT, PB, PL, PR]  (i64)
define void @pad_planes_f32(ptr noalias nocapture readonly %x, ptr noalias nocapture writeonly %out,
                            ptr noalias nocapture readonly %d) nounwind #0 {
entry:
  %np = load i64, ptr %d
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %h = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %w = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %pt = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %pb = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %pl = load i64, ptr %d5
  %d6 = getelementptr inbounds i64, ptr %d, i64 6
  %pr = load i64, ptr %d6
  %wl = add i64 %pl, %w
  %wp = add i64 %wl, %pr
  %top = mul i64 %pt, %wp
  %bottom = mul i64 %pb, %wp
  %hw = mul i64 %h, %w
  %ht = add i64 %pt, %h
  %hp = add i64 %ht, %pb
  %oplane = mul i64 %hp, %wp
  %empty = icmp sle i64 %np, 0
  %hasrows = icmp sgt i64 %h, 0
  br i1 %empty, label %exit, label %p.loop
p.loop:
  %p = phi i64 [ 0, %entry ], [ %p.next, %p.latch ]
  %xo = mul i64 %p, %hw
  %xpl = getelementptr inbounds float, ptr %x, i64 %xo
  %oo = mul i64 %p, %oplane
  %op = getelementptr inbounds float, ptr %out, i64 %oo
  call void @zero_f32(ptr %op, i64 %top)
  %ob = mul i64 %ht, %wp
  %opb = getelementptr inbounds float, ptr %op, i64 %ob
  call void @zero_f32(ptr %opb, i64 %bottom)
  br i1 %hasrows, label %r.loop, label %p.latch
r.loop:
  %r = phi i64 [ 0, %p.loop ], [ %r.next, %r.latch ]
  %orow0 = add i64 %pt, %r
  %orowo = mul i64 %orow0, %wp
  %orow = getelementptr inbounds float, ptr %op, i64 %orowo
  call void @zero_f32(ptr %orow, i64 %pl)
  %xro = mul i64 %r, %w
  %xr = getelementptr inbounds float, ptr %xpl, i64 %xro
  %oin = getelementptr inbounds float, ptr %orow, i64 %pl
  %hasw = icmp sgt i64 %w, 0
  br i1 %hasw, label %c.loop, label %c.done
c.loop:
  %c = phi i64 [ 0, %r.loop ], [ %c.next, %c.loop ]
  %pxc = getelementptr inbounds float, ptr %xr, i64 %c
  %v = load float, ptr %pxc, align 4
  %poc = getelementptr inbounds float, ptr %oin, i64 %c
  store float %v, ptr %poc, align 4
  %c.next = add nuw nsw i64 %c, 1
  %c.end = icmp eq i64 %c.next, %w
  br i1 %c.end, label %c.done, label %c.loop, !llvm.loop !4
c.done:
  %oright = getelementptr inbounds float, ptr %orow, i64 %wl
  call void @zero_f32(ptr %oright, i64 %pr)
  br label %r.latch
r.latch:
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %h
  br i1 %r.done, label %p.latch, label %r.loop
p.latch:
  %p.next = add nuw nsw i64 %p, 1
  %p.done = icmp eq i64 %p.next, %np
  br i1 %p.done, label %exit, label %p.loop
exit:
  ret void
}
