; flex's JIT row kernels on float32: softmax and layer norm, forward and backward
; (burn_flex/kernels/nn.py and attention.py call them through burn_flex/jit.py; compiled with
; LLVM -O3 for the host CPU, no fast-math flags).
;
; numpy runs a softmax as five passes (row max, subtract, exp, row sum, divide), and its row
; reductions over short rows (attention's 64 keys) cost more than the arithmetic; float32 np.exp
; takes ~2.5 ns an element here. These kernels do a row in three passes over data in L1, with
; explicit <8 x float> vectors (LLVM does not vectorize a float sum or max without fast-math: the
; lanes fix a summation order, the same for every call, so results never depend on threads).
;
; exp is Cephes' expf (range reduction by ln 2 in two parts, a degree-6 polynomial, 2^n from the
; exponent bits), within 2 ulp of the exact value (tested), subnormal results included; below
; -103.97 it is 0, above 88.72 +inf, NaN stays NaN.
; So a softmax here differs from numpy's in the last bits, never in NaN / inf positions: a row
; with a NaN, an all -inf row (max -inf: -inf - -inf = NaN) or a +inf give NaN as numpy does.
;
; softmax_rows_f32(x, out, rows, n): out[r] = exp(x[r] - max x[r]) / sum; out may be x.
; softmax_grad_rows_f32(y, g, out, rows, n): out[r] = (g[r] - sum(g[r] * y[r])) * y[r]; out may be g.

define internal <8 x float> @np_max8(<8 x float> %a, <8 x float> %b) alwaysinline nounwind readnone {
  %gt = fcmp ogt <8 x float> %a, %b
  %nan = fcmp uno <8 x float> %a, %a
  %keep = or <8 x i1> %gt, %nan
  %r = select <8 x i1> %keep, <8 x float> %a, <8 x float> %b
  ret <8 x float> %r
}

define internal float @np_max1(float %a, float %b) alwaysinline nounwind readnone {
  %gt = fcmp ogt float %a, %b
  %nan = fcmp uno float %a, %a
  %keep = or i1 %gt, %nan
  %r = select i1 %keep, float %a, float %b
  ret float %r
}

define internal <8 x float> @exp8(<8 x float> %x) alwaysinline nounwind readnone {
  ; clamp into [-103.97, 88.72] (NaN goes to the lower bound: patched at the end)
  %lo = fcmp oge <8 x float> %x, <float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000>
  %x1 = select <8 x i1> %lo, <8 x float> %x, <8 x float> <float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000>
  %hi = fcmp ole <8 x float> %x1, <float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000>
  %xc = select <8 x i1> %hi, <8 x float> %x1, <8 x float> <float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000>
  ; n = floor(x * log2(e) + 0.5), in [-150, 128]
  %t = fmul <8 x float> %xc, <float 0x3FF7154760000000, float 0x3FF7154760000000, float 0x3FF7154760000000, float 0x3FF7154760000000, float 0x3FF7154760000000, float 0x3FF7154760000000, float 0x3FF7154760000000, float 0x3FF7154760000000>
  %t5 = fadd <8 x float> %t, <float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000>
  %n = call <8 x float> @llvm.floor.v8f32(<8 x float> %t5)
  ; r = x - n * ln 2, ln 2 in two parts (0.693359375 - 2.12194440e-4: Cody and Waite)
  %c1 = fmul <8 x float> %n, <float 0x3FE6300000000000, float 0x3FE6300000000000, float 0x3FE6300000000000, float 0x3FE6300000000000, float 0x3FE6300000000000, float 0x3FE6300000000000, float 0x3FE6300000000000, float 0x3FE6300000000000>
  %r1 = fsub <8 x float> %xc, %c1
  %c2 = fmul <8 x float> %n, <float 0xBF2BD01060000000, float 0xBF2BD01060000000, float 0xBF2BD01060000000, float 0xBF2BD01060000000, float 0xBF2BD01060000000, float 0xBF2BD01060000000, float 0xBF2BD01060000000, float 0xBF2BD01060000000>
  %r = fsub <8 x float> %r1, %c2
  %z = fmul <8 x float> %r, %r
  ; Cephes' polynomial: ((((p0 r + p1) r + p2) r + p3) r + p4) r + p5, then * r^2 + r + 1
  %q0 = fmul <8 x float> %r, <float 0x3F2A0D2CE0000000, float 0x3F2A0D2CE0000000, float 0x3F2A0D2CE0000000, float 0x3F2A0D2CE0000000, float 0x3F2A0D2CE0000000, float 0x3F2A0D2CE0000000, float 0x3F2A0D2CE0000000, float 0x3F2A0D2CE0000000>
  %q1 = fadd <8 x float> %q0, <float 0x3F56E879C0000000, float 0x3F56E879C0000000, float 0x3F56E879C0000000, float 0x3F56E879C0000000, float 0x3F56E879C0000000, float 0x3F56E879C0000000, float 0x3F56E879C0000000, float 0x3F56E879C0000000>
  %q1r = fmul <8 x float> %q1, %r
  %q2 = fadd <8 x float> %q1r, <float 0x3F81112100000000, float 0x3F81112100000000, float 0x3F81112100000000, float 0x3F81112100000000, float 0x3F81112100000000, float 0x3F81112100000000, float 0x3F81112100000000, float 0x3F81112100000000>
  %q2r = fmul <8 x float> %q2, %r
  %q3 = fadd <8 x float> %q2r, <float 0x3FA5553820000000, float 0x3FA5553820000000, float 0x3FA5553820000000, float 0x3FA5553820000000, float 0x3FA5553820000000, float 0x3FA5553820000000, float 0x3FA5553820000000, float 0x3FA5553820000000>
  %q3r = fmul <8 x float> %q3, %r
  %q4 = fadd <8 x float> %q3r, <float 0x3FC5555540000000, float 0x3FC5555540000000, float 0x3FC5555540000000, float 0x3FC5555540000000, float 0x3FC5555540000000, float 0x3FC5555540000000, float 0x3FC5555540000000, float 0x3FC5555540000000>
  %q4r = fmul <8 x float> %q4, %r
  %q5 = fadd <8 x float> %q4r, <float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000, float 0x3FE0000000000000>
  %yz = fmul <8 x float> %q5, %z
  %y1 = fadd <8 x float> %yz, %r
  %y = fadd <8 x float> %y1, <float 1.0, float 1.0, float 1.0, float 1.0, float 1.0, float 1.0, float 1.0, float 1.0>
  ; y * 2^n as y * 2^(n >> 1) * 2^(n - (n >> 1)): both factors normal floats from their exponent
  ; bits, each product exact but the last (rounded once, to a subnormal or inf where it must)
  %ni = fptosi <8 x float> %n to <8 x i32>
  %na = ashr <8 x i32> %ni, <i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1>
  %nb = sub <8 x i32> %ni, %na
  %ea = add <8 x i32> %na, <i32 127, i32 127, i32 127, i32 127, i32 127, i32 127, i32 127, i32 127>
  %eb = add <8 x i32> %nb, <i32 127, i32 127, i32 127, i32 127, i32 127, i32 127, i32 127, i32 127>
  %ba = shl <8 x i32> %ea, <i32 23, i32 23, i32 23, i32 23, i32 23, i32 23, i32 23, i32 23>
  %bb = shl <8 x i32> %eb, <i32 23, i32 23, i32 23, i32 23, i32 23, i32 23, i32 23, i32 23>
  %pa = bitcast <8 x i32> %ba to <8 x float>
  %pb = bitcast <8 x i32> %bb to <8 x float>
  %ya = fmul <8 x float> %y, %pa
  %e = fmul <8 x float> %ya, %pb
  ; outside the range: 0 below, +inf above, NaN stays
  %under = fcmp olt <8 x float> %x, <float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000, float 0xC059FE36A0000000>
  %e1 = select <8 x i1> %under, <8 x float> zeroinitializer, <8 x float> %e
  %over = fcmp ogt <8 x float> %x, <float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000, float 0x40562E4300000000>
  %e2 = select <8 x i1> %over, <8 x float> <float 0x7FF0000000000000, float 0x7FF0000000000000, float 0x7FF0000000000000, float 0x7FF0000000000000, float 0x7FF0000000000000, float 0x7FF0000000000000, float 0x7FF0000000000000, float 0x7FF0000000000000>, <8 x float> %e1
  %isnan = fcmp uno <8 x float> %x, %x
  %e3 = select <8 x i1> %isnan, <8 x float> %x, <8 x float> %e2
  ret <8 x float> %e3
}

; the first k (< 8) elements of p as a vector, padded with %fill (a row's tail); masked loads and
; stores (vmaskmovps) touch no byte past the row's end, and avoid building the vector through the
; stack (a store-forwarding stall per row on short rows)
define internal <8 x i1> @tail_mask(i64 %k) alwaysinline nounwind readnone {
  %k0 = insertelement <8 x i64> undef, i64 %k, i64 0
  %ks = shufflevector <8 x i64> %k0, <8 x i64> undef, <8 x i32> zeroinitializer
  %m = icmp slt <8 x i64> <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7>, %ks
  ret <8 x i1> %m
}

define internal <8 x float> @load_tail(ptr %p, i64 %k, float %fill) alwaysinline nounwind {
  %v0 = insertelement <8 x float> undef, float %fill, i64 0
  %splat = shufflevector <8 x float> %v0, <8 x float> undef, <8 x i32> zeroinitializer
  %m = call <8 x i1> @tail_mask(i64 %k)
  %r = call <8 x float> @llvm.masked.load.v8f32.p0(ptr %p, i32 4, <8 x i1> %m, <8 x float> %splat)
  ret <8 x float> %r
}

define internal void @store_tail(ptr %p, i64 %k, <8 x float> %v) alwaysinline nounwind {
  %m = call <8 x i1> @tail_mask(i64 %k)
  call void @llvm.masked.store.v8f32.p0(<8 x float> %v, ptr %p, i32 4, <8 x i1> %m)
  ret void
}

declare <8 x float> @llvm.masked.load.v8f32.p0(ptr, i32, <8 x i1>, <8 x float>)
declare void @llvm.masked.store.v8f32.p0(<8 x float>, ptr, i32, <8 x i1>)

; the lanes of v summed in a fixed order: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))
define internal float @hsum8(<8 x float> %v) alwaysinline nounwind readnone {
  %hi = shufflevector <8 x float> %v, <8 x float> undef, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %lo = shufflevector <8 x float> %v, <8 x float> undef, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %s4 = fadd <4 x float> %lo, %hi
  %s4h = shufflevector <4 x float> %s4, <4 x float> undef, <2 x i32> <i32 2, i32 3>
  %s4l = shufflevector <4 x float> %s4, <4 x float> undef, <2 x i32> <i32 0, i32 1>
  %s2 = fadd <2 x float> %s4l, %s4h
  %a = extractelement <2 x float> %s2, i64 0
  %b = extractelement <2 x float> %s2, i64 1
  %s = fadd float %a, %b
  ret float %s
}

define internal float @hmax8(<8 x float> %v) alwaysinline nounwind readnone {
  %hi = shufflevector <8 x float> %v, <8 x float> undef, <8 x i32> <i32 4, i32 5, i32 6, i32 7, i32 undef, i32 undef, i32 undef, i32 undef>
  %m4 = call <8 x float> @np_max8(<8 x float> %v, <8 x float> %hi)
  %hi2 = shufflevector <8 x float> %m4, <8 x float> undef, <8 x i32> <i32 2, i32 3, i32 undef, i32 undef, i32 undef, i32 undef, i32 undef, i32 undef>
  %m2 = call <8 x float> @np_max8(<8 x float> %m4, <8 x float> %hi2)
  %a = extractelement <8 x float> %m2, i64 0
  %b = extractelement <8 x float> %m2, i64 1
  %m = call float @np_max1(float %a, float %b)
  ret float %m
}

define void @softmax_rows_f32(ptr nocapture readonly %x, ptr nocapture %out, i64 %rows, i64 %n) nounwind {
entry:
  %n8 = and i64 %n, -8
  %tail = sub i64 %n, %n8
  %tv0 = insertelement <8 x i64> undef, i64 %tail, i64 0
  %tails = shufflevector <8 x i64> %tv0, <8 x i64> undef, <8 x i32> zeroinitializer
  %hastail = icmp sgt i64 %tail, 0
  %none = icmp sle i64 %rows, 0
  %empty = icmp sle i64 %n, 0
  %skip = or i1 %none, %empty
  br i1 %skip, label %exit, label %row
row:
  %r = phi i64 [ 0, %entry ], [ %r.next, %row.end ]
  %off = mul i64 %r, %n
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %po = getelementptr inbounds float, ptr %out, i64 %off
  %has8 = icmp sgt i64 %n8, 0
  br i1 %has8, label %max.loop, label %max.tail
max.loop:
  %i = phi i64 [ 0, %row ], [ %i.next, %max.loop ]
  %vm = phi <8 x float> [ <float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000>, %row ], [ %vm2, %max.loop ]
  %pv = getelementptr inbounds float, ptr %px, i64 %i
  %v = load <8 x float>, ptr %pv, align 4
  %vm2 = call <8 x float> @np_max8(<8 x float> %vm, <8 x float> %v)
  %i.next = add nuw nsw i64 %i, 8
  %i.done = icmp eq i64 %i.next, %n8
  br i1 %i.done, label %max.tail, label %max.loop
max.tail:
  %vmax = phi <8 x float> [ <float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000>, %row ], [ %vm2, %max.loop ]
  %ptl = getelementptr inbounds float, ptr %px, i64 %n8
  %vt = call <8 x float> @load_tail(ptr %ptl, i64 %tail, float 0xFFF0000000000000)
  %vmt = call <8 x float> @np_max8(<8 x float> %vmax, <8 x float> %vt)
  %m = call float @hmax8(<8 x float> %vmt)
  %m0 = insertelement <8 x float> undef, float %m, i64 0
  %ms = shufflevector <8 x float> %m0, <8 x float> undef, <8 x i32> zeroinitializer
  br i1 %has8, label %exp.loop, label %exp.tail
exp.loop:
  %j = phi i64 [ 0, %max.tail ], [ %j.next, %exp.loop ]
  %vs = phi <8 x float> [ zeroinitializer, %max.tail ], [ %vs2, %exp.loop ]
  %pj = getelementptr inbounds float, ptr %px, i64 %j
  %xj = load <8 x float>, ptr %pj, align 4
  %dj = fsub <8 x float> %xj, %ms
  %ej = call <8 x float> @exp8(<8 x float> %dj)
  %qj = getelementptr inbounds float, ptr %po, i64 %j
  store <8 x float> %ej, ptr %qj, align 4
  %vs2 = fadd <8 x float> %vs, %ej
  %j.next = add nuw nsw i64 %j, 8
  %j.done = icmp eq i64 %j.next, %n8
  br i1 %j.done, label %exp.tail, label %exp.loop
exp.tail:
  %vsum = phi <8 x float> [ zeroinitializer, %max.tail ], [ %vs2, %exp.loop ]
  %pot = getelementptr inbounds float, ptr %po, i64 %n8
  br i1 %hastail, label %exp.rest, label %exp.sum
exp.rest:
  %xt = call <8 x float> @load_tail(ptr %ptl, i64 %tail, float 0xFFF0000000000000)
  %dt = fsub <8 x float> %xt, %ms
  %et = call <8 x float> @exp8(<8 x float> %dt)
  ; the padding lanes: exp(-inf - m) is 0 for a finite m; NaN for m = -inf or NaN, as the row
  %tailmask = icmp slt <8 x i64> <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7>, %tails
  %et0 = select <8 x i1> %tailmask, <8 x float> %et, <8 x float> zeroinitializer
  call void @store_tail(ptr %pot, i64 %tail, <8 x float> %et)
  %vsumr = fadd <8 x float> %vsum, %et0
  br label %exp.sum
exp.sum:
  %vsumt = phi <8 x float> [ %vsum, %exp.tail ], [ %vsumr, %exp.rest ]
  %s = call float @hsum8(<8 x float> %vsumt)
  %s0 = insertelement <8 x float> undef, float %s, i64 0
  %ss = shufflevector <8 x float> %s0, <8 x float> undef, <8 x i32> zeroinitializer
  br i1 %has8, label %div.loop, label %div.tail
div.loop:
  %k = phi i64 [ 0, %exp.sum ], [ %k.next, %div.loop ]
  %pk = getelementptr inbounds float, ptr %po, i64 %k
  %ek = load <8 x float>, ptr %pk, align 4
  %yk = fdiv <8 x float> %ek, %ss
  store <8 x float> %yk, ptr %pk, align 4
  %k.next = add nuw nsw i64 %k, 8
  %k.done = icmp eq i64 %k.next, %n8
  br i1 %k.done, label %div.tail, label %div.loop
div.tail:
  br i1 %hastail, label %div.rest, label %row.end
div.rest:
  %eto = call <8 x float> @load_tail(ptr %pot, i64 %tail, float 0.0)
  %yt = fdiv <8 x float> %eto, %ss
  call void @store_tail(ptr %pot, i64 %tail, <8 x float> %yt)
  br label %row.end
row.end:
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %rows
  br i1 %r.done, label %exit, label %row
exit:
  ret void
}

define void @softmax_grad_rows_f32(ptr nocapture readonly %y, ptr nocapture readonly %g, ptr nocapture %out,
                                   i64 %rows, i64 %n) nounwind {
entry:
  %n8 = and i64 %n, -8
  %tail = sub i64 %n, %n8
  %none = icmp sle i64 %rows, 0
  %empty = icmp sle i64 %n, 0
  %skip = or i1 %none, %empty
  br i1 %skip, label %exit, label %row
row:
  %r = phi i64 [ 0, %entry ], [ %r.next, %row.end ]
  %off = mul i64 %r, %n
  %py = getelementptr inbounds float, ptr %y, i64 %off
  %pg = getelementptr inbounds float, ptr %g, i64 %off
  %po = getelementptr inbounds float, ptr %out, i64 %off
  %has8 = icmp sgt i64 %n8, 0
  br i1 %has8, label %dot.loop, label %dot.tail
dot.loop:
  %i = phi i64 [ 0, %row ], [ %i.next, %dot.loop ]
  %acc = phi <8 x float> [ zeroinitializer, %row ], [ %acc2, %dot.loop ]
  %pyi = getelementptr inbounds float, ptr %py, i64 %i
  %yi = load <8 x float>, ptr %pyi, align 4
  %pgi = getelementptr inbounds float, ptr %pg, i64 %i
  %gi = load <8 x float>, ptr %pgi, align 4
  %pr = fmul <8 x float> %gi, %yi
  %acc2 = fadd <8 x float> %acc, %pr
  %i.next = add nuw nsw i64 %i, 8
  %i.done = icmp eq i64 %i.next, %n8
  br i1 %i.done, label %dot.tail, label %dot.loop
dot.tail:
  %accv = phi <8 x float> [ zeroinitializer, %row ], [ %acc2, %dot.loop ]
  %pyt = getelementptr inbounds float, ptr %py, i64 %n8
  %pgt = getelementptr inbounds float, ptr %pg, i64 %n8
  %pot = getelementptr inbounds float, ptr %po, i64 %n8
  %yt = call <8 x float> @load_tail(ptr %pyt, i64 %tail, float 0.0)
  %gt = call <8 x float> @load_tail(ptr %pgt, i64 %tail, float 0.0)
  %prt = fmul <8 x float> %gt, %yt
  %acct = fadd <8 x float> %accv, %prt
  %s = call float @hsum8(<8 x float> %acct)
  %s0 = insertelement <8 x float> undef, float %s, i64 0
  %ss = shufflevector <8 x float> %s0, <8 x float> undef, <8 x i32> zeroinitializer
  br i1 %has8, label %out.loop, label %out.tail
out.loop:
  %k = phi i64 [ 0, %dot.tail ], [ %k.next, %out.loop ]
  %pyk = getelementptr inbounds float, ptr %py, i64 %k
  %yk = load <8 x float>, ptr %pyk, align 4
  %pgk = getelementptr inbounds float, ptr %pg, i64 %k
  %gk = load <8 x float>, ptr %pgk, align 4
  %dk = fsub <8 x float> %gk, %ss
  %ok = fmul <8 x float> %dk, %yk
  %pok = getelementptr inbounds float, ptr %po, i64 %k
  store <8 x float> %ok, ptr %pok, align 4
  %k.next = add nuw nsw i64 %k, 8
  %k.done = icmp eq i64 %k.next, %n8
  br i1 %k.done, label %out.tail, label %out.loop
out.tail:
  %dt = fsub <8 x float> %gt, %ss
  %ot = fmul <8 x float> %dt, %yt
  call void @store_tail(ptr %pot, i64 %tail, <8 x float> %ot)
  br label %row.end
row.end:
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %rows
  br i1 %r.done, label %exit, label %row
exit:
  ret void
}

declare <8 x float> @llvm.floor.v8f32(<8 x float>)

; exp over rows * n floats (out may be x): the softmax's exp on its own, for tests of its accuracy
define void @exp_f32(ptr nocapture readonly %x, ptr nocapture %out, i64 %rows, i64 %cols) nounwind {
entry:
  %n = mul i64 %rows, %cols
  %n8 = and i64 %n, -8
  %tail = sub i64 %n, %n8
  %has8 = icmp sgt i64 %n8, 0
  br i1 %has8, label %loop, label %rest
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %v = load <8 x float>, ptr %px, align 4
  %e = call <8 x float> @exp8(<8 x float> %v)
  %po = getelementptr inbounds float, ptr %out, i64 %i
  store <8 x float> %e, ptr %po, align 4
  %i.next = add nuw nsw i64 %i, 8
  %i.done = icmp eq i64 %i.next, %n8
  br i1 %i.done, label %rest, label %loop
rest:
  %pxt = getelementptr inbounds float, ptr %x, i64 %n8
  %vt = call <8 x float> @load_tail(ptr %pxt, i64 %tail, float 0.0)
  %et = call <8 x float> @exp8(<8 x float> %vt)
  %pot = getelementptr inbounds float, ptr %out, i64 %n8
  call void @store_tail(ptr %pot, i64 %tail, <8 x float> %et)
  ret void
}


; -- layer norm over rows of n floats, n a multiple of 8 (the caller checks) -------------------
; Per row, as burn_flex/kernels/nn.py's numpy path: mean = sum(x) * (1/n), d = x - mean,
; r = 1 / sqrt(sum(d * d) * (1/n) + eps); the sums in the 8-lane order of hsum8.
;   layer_norm_rows_f32(x, w, b, out, rows, n, eps): out = ((d * r) * w) + b
;   layer_norm_grad_rows_f32(x, w, g, dx, t, rows, n, eps): xh = d * r, t = g * xh (the caller's
;     column sums of t and g are dweight and dbias), gh = g * w,
;     dx = ((gh - sum(gh) / n) - xh * (sum(gh * xh) / n)) * r

define internal <8 x float> @splat8(float %v) alwaysinline nounwind readnone {
  %v0 = insertelement <8 x float> undef, float %v, i64 0
  %s = shufflevector <8 x float> %v0, <8 x float> undef, <8 x i32> zeroinitializer
  ret <8 x float> %s
}

; (mean, r) of the row at p as splats
define internal { <8 x float>, <8 x float> } @ln_stats(ptr %p, i64 %n, float %invn, float %eps) alwaysinline nounwind {
entry:
  br label %sum.loop
sum.loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %sum.loop ]
  %acc = phi <8 x float> [ zeroinitializer, %entry ], [ %acc2, %sum.loop ]
  %pi = getelementptr inbounds float, ptr %p, i64 %i
  %v = load <8 x float>, ptr %pi, align 4
  %acc2 = fadd <8 x float> %acc, %v
  %i.next = add nuw nsw i64 %i, 8
  %i.done = icmp sge i64 %i.next, %n
  br i1 %i.done, label %mean, label %sum.loop
mean:
  %s = call float @hsum8(<8 x float> %acc2)
  %m = fmul float %s, %invn
  %ms = call <8 x float> @splat8(float %m)
  br label %var.loop
var.loop:
  %j = phi i64 [ 0, %mean ], [ %j.next, %var.loop ]
  %acc3 = phi <8 x float> [ zeroinitializer, %mean ], [ %acc4, %var.loop ]
  %pj = getelementptr inbounds float, ptr %p, i64 %j
  %vj = load <8 x float>, ptr %pj, align 4
  %dj = fsub <8 x float> %vj, %ms
  %sq = fmul <8 x float> %dj, %dj
  %acc4 = fadd <8 x float> %acc3, %sq
  %j.next = add nuw nsw i64 %j, 8
  %j.done = icmp sge i64 %j.next, %n
  br i1 %j.done, label %done, label %var.loop
done:
  %vs = call float @hsum8(<8 x float> %acc4)
  %var = fmul float %vs, %invn
  %ve = fadd float %var, %eps
  %sd = call float @llvm.sqrt.f32(float %ve)
  %r = fdiv float 1.0, %sd
  %rs = call <8 x float> @splat8(float %r)
  %res0 = insertvalue { <8 x float>, <8 x float> } undef, <8 x float> %ms, 0
  %res = insertvalue { <8 x float>, <8 x float> } %res0, <8 x float> %rs, 1
  ret { <8 x float>, <8 x float> } %res
}

define void @layer_norm_rows_f32(ptr nocapture readonly %x, ptr nocapture readonly %w, ptr nocapture readonly %b,
                                 ptr nocapture writeonly %out, i64 %rows, i64 %n, float %eps) nounwind {
entry:
  %nf = sitofp i64 %n to float
  %invn = fdiv float 1.0, %nf
  %none = icmp sle i64 %rows, 0
  %empty = icmp sle i64 %n, 0
  %skip = or i1 %none, %empty
  br i1 %skip, label %exit, label %row
row:
  %r = phi i64 [ 0, %entry ], [ %r.next, %row.end ]
  %off = mul i64 %r, %n
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %po = getelementptr inbounds float, ptr %out, i64 %off
  %st = call { <8 x float>, <8 x float> } @ln_stats(ptr %px, i64 %n, float %invn, float %eps)
  %ms = extractvalue { <8 x float>, <8 x float> } %st, 0
  %rs = extractvalue { <8 x float>, <8 x float> } %st, 1
  br label %out.loop
out.loop:
  %k = phi i64 [ 0, %row ], [ %k.next, %out.loop ]
  %pk = getelementptr inbounds float, ptr %px, i64 %k
  %xk = load <8 x float>, ptr %pk, align 4
  %pwk = getelementptr inbounds float, ptr %w, i64 %k
  %wk = load <8 x float>, ptr %pwk, align 4
  %pbk = getelementptr inbounds float, ptr %b, i64 %k
  %bk = load <8 x float>, ptr %pbk, align 4
  %dk = fsub <8 x float> %xk, %ms
  %nk = fmul <8 x float> %dk, %rs
  %sk = fmul <8 x float> %nk, %wk
  %ok = fadd <8 x float> %sk, %bk
  %pok = getelementptr inbounds float, ptr %po, i64 %k
  store <8 x float> %ok, ptr %pok, align 4
  %k.next = add nuw nsw i64 %k, 8
  %k.done = icmp sge i64 %k.next, %n
  br i1 %k.done, label %row.end, label %out.loop
row.end:
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %rows
  br i1 %r.done, label %exit, label %row
exit:
  ret void
}

define void @layer_norm_grad_rows_f32(ptr nocapture readonly %x, ptr nocapture readonly %w, ptr nocapture readonly %g,
                                      ptr nocapture writeonly %dx, ptr nocapture writeonly %t, i64 %rows, i64 %n,
                                      float %eps) nounwind {
entry:
  %nf = sitofp i64 %n to float
  %invn = fdiv float 1.0, %nf
  %none = icmp sle i64 %rows, 0
  %empty = icmp sle i64 %n, 0
  %skip = or i1 %none, %empty
  br i1 %skip, label %exit, label %row
row:
  %r = phi i64 [ 0, %entry ], [ %r.next, %row.end ]
  %off = mul i64 %r, %n
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %pg = getelementptr inbounds float, ptr %g, i64 %off
  %pdx = getelementptr inbounds float, ptr %dx, i64 %off
  %pt = getelementptr inbounds float, ptr %t, i64 %off
  %st = call { <8 x float>, <8 x float> } @ln_stats(ptr %px, i64 %n, float %invn, float %eps)
  %ms = extractvalue { <8 x float>, <8 x float> } %st, 0
  %rs = extractvalue { <8 x float>, <8 x float> } %st, 1
  br label %a.loop
a.loop:
  ; t = g * xh; the sums of gh = g * w and of gh * xh
  %i = phi i64 [ 0, %row ], [ %i.next, %a.loop ]
  %s1 = phi <8 x float> [ zeroinitializer, %row ], [ %s1n, %a.loop ]
  %s2 = phi <8 x float> [ zeroinitializer, %row ], [ %s2n, %a.loop ]
  %pxi = getelementptr inbounds float, ptr %px, i64 %i
  %xi = load <8 x float>, ptr %pxi, align 4
  %pgi = getelementptr inbounds float, ptr %pg, i64 %i
  %gi = load <8 x float>, ptr %pgi, align 4
  %pwi = getelementptr inbounds float, ptr %w, i64 %i
  %wi = load <8 x float>, ptr %pwi, align 4
  %di = fsub <8 x float> %xi, %ms
  %xhi = fmul <8 x float> %di, %rs
  %ti = fmul <8 x float> %gi, %xhi
  %pti = getelementptr inbounds float, ptr %pt, i64 %i
  store <8 x float> %ti, ptr %pti, align 4
  %ghi = fmul <8 x float> %gi, %wi
  %s1n = fadd <8 x float> %s1, %ghi
  %gx = fmul <8 x float> %ghi, %xhi
  %s2n = fadd <8 x float> %s2, %gx
  %i.next = add nuw nsw i64 %i, 8
  %i.done = icmp sge i64 %i.next, %n
  br i1 %i.done, label %means, label %a.loop
means:
  %sum1 = call float @hsum8(<8 x float> %s1n)
  %sum2 = call float @hsum8(<8 x float> %s2n)
  %mgh = fmul float %sum1, %invn
  %mghxh = fmul float %sum2, %invn
  %mghs = call <8 x float> @splat8(float %mgh)
  %mghxhs = call <8 x float> @splat8(float %mghxh)
  br label %b.loop
b.loop:
  %k = phi i64 [ 0, %means ], [ %k.next, %b.loop ]
  %pxk = getelementptr inbounds float, ptr %px, i64 %k
  %xk = load <8 x float>, ptr %pxk, align 4
  %pgk = getelementptr inbounds float, ptr %pg, i64 %k
  %gk = load <8 x float>, ptr %pgk, align 4
  %pwk = getelementptr inbounds float, ptr %w, i64 %k
  %wk = load <8 x float>, ptr %pwk, align 4
  %dk = fsub <8 x float> %xk, %ms
  %xhk = fmul <8 x float> %dk, %rs
  %ghk = fmul <8 x float> %gk, %wk
  %c1 = fsub <8 x float> %ghk, %mghs
  %c2 = fmul <8 x float> %xhk, %mghxhs
  %c3 = fsub <8 x float> %c1, %c2
  %dxk = fmul <8 x float> %c3, %rs
  %pdk = getelementptr inbounds float, ptr %pdx, i64 %k
  store <8 x float> %dxk, ptr %pdk, align 4
  %k.next = add nuw nsw i64 %k, 8
  %k.done = icmp sge i64 %k.next, %n
  br i1 %k.done, label %row.end, label %b.loop
row.end:
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %rows
  br i1 %r.done, label %exit, label %row
exit:
  ret void
}

declare float @llvm.sqrt.f32(float)


; -- log-softmax and cross-entropy over rows of n floats (any n) ------------------------------
; As burn_flex/kernels/nn.py's numpy path: m = max of the row (NaN propagates), an all -inf row
; shifted by 0 instead (its result is then NaN, as torch's), z = x - m, S = sum(exp(z)) in the
; softmax's lane order, lse = log(S) (libm's logf, once per row).
;   log_softmax_rows_f32(x, out, rows, n): out = z - lse; out may be x.
;   ce_loss_rows_f32(x, t, loss, rows, n) -> bad: loss[r] = lse - z[t[r]] (t: int64 classes);
;   ce_grad_rows_f32(x, t, scale, step, out, rows, n) -> bad:
;     out[r] = (exp(z) / S - onehot(t[r])) * scale[r * step] (step 0: one scale for every row).
; A row whose class lies outside [0, n) is skipped (nothing written) and counted in the result
; (the caller raises).

define internal float @row_max(ptr %px, i64 %n) alwaysinline nounwind {
entry:
  %n8 = and i64 %n, -8
  %tail = sub i64 %n, %n8
  %has8 = icmp sgt i64 %n8, 0
  br i1 %has8, label %loop, label %rest
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %vm = phi <8 x float> [ <float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000>, %entry ], [ %vm2, %loop ]
  %pv = getelementptr inbounds float, ptr %px, i64 %i
  %v = load <8 x float>, ptr %pv, align 4
  %vm2 = call <8 x float> @np_max8(<8 x float> %vm, <8 x float> %v)
  %i.next = add nuw nsw i64 %i, 8
  %i.done = icmp eq i64 %i.next, %n8
  br i1 %i.done, label %rest, label %loop
rest:
  %vmax = phi <8 x float> [ <float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000, float 0xFFF0000000000000>, %entry ], [ %vm2, %loop ]
  %ptl = getelementptr inbounds float, ptr %px, i64 %n8
  %vt = call <8 x float> @load_tail(ptr %ptl, i64 %tail, float 0xFFF0000000000000)
  %vmt = call <8 x float> @np_max8(<8 x float> %vmax, <8 x float> %vt)
  %m = call float @hmax8(<8 x float> %vmt)
  ret float %m
}

; the row's shift: its max, or 0 for an all -inf row
define internal float @row_shift(ptr %px, i64 %n) alwaysinline nounwind {
  %m = call float @row_max(ptr %px, i64 %n)
  %ninf = fcmp oeq float %m, 0xFFF0000000000000
  %s = select i1 %ninf, float 0.0, float %m
  ret float %s
}

; sum(exp(x - m)) over the row in the softmax's lane order; each exp stored at %po unless it is null
define internal float @row_exp_sum(ptr %px, ptr %po, i64 %n, float %m) alwaysinline nounwind {
entry:
  %n8 = and i64 %n, -8
  %tail = sub i64 %n, %n8
  %tv0 = insertelement <8 x i64> undef, i64 %tail, i64 0
  %tails = shufflevector <8 x i64> %tv0, <8 x i64> undef, <8 x i32> zeroinitializer
  %ms = call <8 x float> @splat8(float %m)
  %store = icmp ne ptr %po, null
  %has8 = icmp sgt i64 %n8, 0
  br i1 %has8, label %loop, label %rest
loop:
  %j = phi i64 [ 0, %entry ], [ %j.next, %loop.end ]
  %vs = phi <8 x float> [ zeroinitializer, %entry ], [ %vs2, %loop.end ]
  %pj = getelementptr inbounds float, ptr %px, i64 %j
  %xj = load <8 x float>, ptr %pj, align 4
  %dj = fsub <8 x float> %xj, %ms
  %ej = call <8 x float> @exp8(<8 x float> %dj)
  %vs2 = fadd <8 x float> %vs, %ej
  br i1 %store, label %loop.store, label %loop.end
loop.store:
  %qj = getelementptr inbounds float, ptr %po, i64 %j
  store <8 x float> %ej, ptr %qj, align 4
  br label %loop.end
loop.end:
  %j.next = add nuw nsw i64 %j, 8
  %j.done = icmp eq i64 %j.next, %n8
  br i1 %j.done, label %rest, label %loop
rest:
  %vsum = phi <8 x float> [ zeroinitializer, %entry ], [ %vs2, %loop.end ]
  %hastail = icmp sgt i64 %tail, 0
  br i1 %hastail, label %tailb, label %done
tailb:
  %ptl = getelementptr inbounds float, ptr %px, i64 %n8
  %xt = call <8 x float> @load_tail(ptr %ptl, i64 %tail, float 0xFFF0000000000000)
  %dt = fsub <8 x float> %xt, %ms
  %et = call <8 x float> @exp8(<8 x float> %dt)
  %tailmask = icmp slt <8 x i64> <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7>, %tails
  %et0 = select <8 x i1> %tailmask, <8 x float> %et, <8 x float> zeroinitializer
  %vsumr = fadd <8 x float> %vsum, %et0
  br i1 %store, label %tail.store, label %done
tail.store:
  %pot = getelementptr inbounds float, ptr %po, i64 %n8
  call void @store_tail(ptr %pot, i64 %tail, <8 x float> %et)
  br label %done
done:
  %vf = phi <8 x float> [ %vsum, %rest ], [ %vsumr, %tailb ], [ %vsumr, %tail.store ]
  %s = call float @hsum8(<8 x float> %vf)
  ret float %s
}

; out[j] = x[j] * a + b over n floats (vector loop, scalar tail): the rows' last pass
define internal void @row_affine(ptr %px, ptr %po, i64 %n, float %a, float %b, i1 %mul) alwaysinline nounwind {
entry:
  %n8 = and i64 %n, -8
  %va = call <8 x float> @splat8(float %a)
  %vb = call <8 x float> @splat8(float %b)
  %has8 = icmp sgt i64 %n8, 0
  br i1 %has8, label %loop, label %rest
loop:
  %j = phi i64 [ 0, %entry ], [ %j.next, %loop ]
  %pj = getelementptr inbounds float, ptr %px, i64 %j
  %xj = load <8 x float>, ptr %pj, align 4
  %yj = call <8 x float> @affine8(<8 x float> %xj, <8 x float> %va, <8 x float> %vb, i1 %mul)
  %qj = getelementptr inbounds float, ptr %po, i64 %j
  store <8 x float> %yj, ptr %qj, align 4
  %j.next = add nuw nsw i64 %j, 8
  %j.done = icmp eq i64 %j.next, %n8
  br i1 %j.done, label %rest, label %loop
rest:
  %k0 = phi i64 [ 0, %entry ], [ %n8, %loop ]
  %more = icmp slt i64 %k0, %n
  br i1 %more, label %tail, label %done
tail:
  %k = phi i64 [ %k0, %rest ], [ %k.next, %tail ]
  %pk = getelementptr inbounds float, ptr %px, i64 %k
  %xk = load float, ptr %pk, align 4
  %xv = call <8 x float> @splat8(float %xk)
  %yv = call <8 x float> @affine8(<8 x float> %xv, <8 x float> %va, <8 x float> %vb, i1 %mul)
  %yk = extractelement <8 x float> %yv, i64 0
  %qk = getelementptr inbounds float, ptr %po, i64 %k
  store float %yk, ptr %qk, align 4
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, %n
  br i1 %k.done, label %done, label %tail
done:
  ret void
}

; mul: (x / a) * b (the cross-entropy gradient's p / S * scale); else (x - a) - b (log-softmax's z - lse)
define internal <8 x float> @affine8(<8 x float> %x, <8 x float> %a, <8 x float> %b, i1 %mul) alwaysinline nounwind readnone {
  br i1 %mul, label %m, label %s
m:
  %q = fdiv <8 x float> %x, %a
  %qb = fmul <8 x float> %q, %b
  ret <8 x float> %qb
s:
  %d = fsub <8 x float> %x, %a
  %db = fsub <8 x float> %d, %b
  ret <8 x float> %db
}

define void @log_softmax_rows_f32(ptr nocapture readonly %x, ptr nocapture %out, i64 %rows, i64 %n) nounwind {
entry:
  %none = icmp sle i64 %rows, 0
  %empty = icmp sle i64 %n, 0
  %skip = or i1 %none, %empty
  br i1 %skip, label %exit, label %row
row:
  %r = phi i64 [ 0, %entry ], [ %r.next, %row ]
  %off = mul i64 %r, %n
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %po = getelementptr inbounds float, ptr %out, i64 %off
  %m = call float @row_shift(ptr %px, i64 %n)
  %s = call float @row_exp_sum(ptr %px, ptr null, i64 %n, float %m)
  %lse = call float @llvm.log.f32(float %s)
  call void @row_affine(ptr %px, ptr %po, i64 %n, float %m, float %lse, i1 false)
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %rows
  br i1 %r.done, label %exit, label %row
exit:
  ret void
}

define i64 @ce_loss_rows_f32(ptr nocapture readonly %x, ptr nocapture readonly %t, ptr nocapture %loss,
                             i64 %rows, i64 %n) nounwind {
entry:
  %none = icmp sle i64 %rows, 0
  br i1 %none, label %exit, label %row
row:
  %r = phi i64 [ 0, %entry ], [ %r.next, %row.end ]
  %bad = phi i64 [ 0, %entry ], [ %bad.next, %row.end ]
  %pt = getelementptr inbounds i64, ptr %t, i64 %r
  %tr = load i64, ptr %pt, align 8
  %lo = icmp sge i64 %tr, 0
  %hi = icmp slt i64 %tr, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %good, label %row.end
good:
  %off = mul i64 %r, %n
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %m = call float @row_shift(ptr %px, i64 %n)
  %s = call float @row_exp_sum(ptr %px, ptr null, i64 %n, float %m)
  %lse = call float @llvm.log.f32(float %s)
  %pxt = getelementptr inbounds float, ptr %px, i64 %tr
  %xt = load float, ptr %pxt, align 4
  %zt = fsub float %xt, %m
  %l = fsub float %lse, %zt
  %pl = getelementptr inbounds float, ptr %loss, i64 %r
  store float %l, ptr %pl, align 4
  br label %row.end
row.end:
  %miss = phi i64 [ 1, %row ], [ 0, %good ]
  %bad.next = add i64 %bad, %miss
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %rows
  br i1 %r.done, label %exit, label %row
exit:
  %res = phi i64 [ 0, %entry ], [ %bad.next, %row.end ]
  ret i64 %res
}

define i64 @ce_grad_rows_f32(ptr nocapture readonly %x, ptr nocapture readonly %t, ptr nocapture readonly %scale,
                             i64 %step, ptr nocapture %out, i64 %rows, i64 %n) nounwind {
entry:
  %none = icmp sle i64 %rows, 0
  br i1 %none, label %exit, label %row
row:
  %r = phi i64 [ 0, %entry ], [ %r.next, %row.end ]
  %bad = phi i64 [ 0, %entry ], [ %bad.next, %row.end ]
  %pt = getelementptr inbounds i64, ptr %t, i64 %r
  %tr = load i64, ptr %pt, align 8
  %lo = icmp sge i64 %tr, 0
  %hi = icmp slt i64 %tr, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %good, label %row.end
good:
  %off = mul i64 %r, %n
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %po = getelementptr inbounds float, ptr %out, i64 %off
  %m = call float @row_shift(ptr %px, i64 %n)
  %s = call float @row_exp_sum(ptr %px, ptr %po, i64 %n, float %m)
  %soff = mul i64 %r, %step
  %psc = getelementptr inbounds float, ptr %scale, i64 %soff
  %sc = load float, ptr %psc, align 4
  %pot = getelementptr inbounds float, ptr %po, i64 %tr
  %et = load float, ptr %pot, align 4
  call void @row_affine(ptr %po, ptr %po, i64 %n, float %s, float %sc, i1 true)
  %qt = fdiv float %et, %s
  %qt1 = fsub float %qt, 1.0
  %ot = fmul float %qt1, %sc
  store float %ot, ptr %pot, align 4
  br label %row.end
row.end:
  %miss = phi i64 [ 1, %row ], [ 0, %good ]
  %bad.next = add i64 %bad, %miss
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %rows
  br i1 %r.done, label %exit, label %row
exit:
  %res = phi i64 [ 0, %entry ], [ %bad.next, %row.end ]
  ret i64 %res
}

declare float @llvm.log.f32(float)


; -- a convolution's weight gradient over per-image columns --------------------------------------
; dot_nt_sum_f32(a, b, out, d): out[o * K + k] = sum over n, p of a[n * SA + o * P + p] * b[n * SB + k * P + p]
; with d = [N, O, K, P, SA, SB] (i64): g [N, O, P] times the columns [N, K, P] transposed, summed over
; the images, for small O and K (LeNet's first conv: 6 x 25 outputs, each a sum of 64 * 576 products)
; where BLAS runs one tiny GEMM per image. Image by image (its rows stay in cache), each output
; gets the image's dot product (four 8-lane accumulators over p in steps of 32, then 8, then a
; masked tail, the lanes added as hsum8; products added with llvm.fmuladd, fused where the CPU has
; FMA), the images added in order: a fixed order, whatever splits the outputs over threads.
define void @dot_nt_sum_f32(ptr noalias nocapture readonly %a, ptr noalias nocapture readonly %b,
                            ptr noalias nocapture %out, ptr noalias nocapture readonly %d) nounwind {
entry:
  %n = load i64, ptr %d
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %no = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %nk = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %np = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %sa = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %sb = load i64, ptr %d5
  %p32 = and i64 %np, -32
  %p8 = and i64 %np, -8
  %tail = sub i64 %np, %p8
  %nout = mul i64 %no, %nk
  %hasout = icmp sgt i64 %nout, 0
  br i1 %hasout, label %z.loop, label %exit
z.loop:
  ; out = 0, then each image's products added
  %z = phi i64 [ 0, %entry ], [ %z.next, %z.loop ]
  %pz = getelementptr inbounds float, ptr %out, i64 %z
  store float 0.0, ptr %pz, align 4
  %z.next = add nuw nsw i64 %z, 1
  %z.done = icmp eq i64 %z.next, %nout
  br i1 %z.done, label %z.end, label %z.loop
z.end:
  %hasn = icmp sgt i64 %n, 0
  br i1 %hasn, label %n.loop, label %exit
n.loop:
  %i = phi i64 [ 0, %z.end ], [ %i.next, %n.latch ]
  %an = mul i64 %i, %sa
  %bn = mul i64 %i, %sb
  br label %o.loop
o.loop:
  %o = phi i64 [ 0, %n.loop ], [ %o.next, %o.latch ]
  %ao = mul i64 %o, %np
  %aon = add i64 %an, %ao
  %pa = getelementptr inbounds float, ptr %a, i64 %aon
  br label %k.loop
k.loop:
  %k = phi i64 [ 0, %o.loop ], [ %k.next, %k.end ]
  %bk = mul i64 %k, %np
  %bkn = add i64 %bn, %bk
  %pb = getelementptr inbounds float, ptr %b, i64 %bkn
  %has32 = icmp sgt i64 %p32, 0
  br i1 %has32, label %v32, label %v32.end
v32:
  %j = phi i64 [ 0, %k.loop ], [ %j.next, %v32 ]
  %u0 = phi <8 x float> [ zeroinitializer, %k.loop ], [ %u0n, %v32 ]
  %u1 = phi <8 x float> [ zeroinitializer, %k.loop ], [ %u1n, %v32 ]
  %u2 = phi <8 x float> [ zeroinitializer, %k.loop ], [ %u2n, %v32 ]
  %u3 = phi <8 x float> [ zeroinitializer, %k.loop ], [ %u3n, %v32 ]
  %qa0 = getelementptr inbounds float, ptr %pa, i64 %j
  %qb0 = getelementptr inbounds float, ptr %pb, i64 %j
  %xa0 = load <8 x float>, ptr %qa0, align 4
  %xb0 = load <8 x float>, ptr %qb0, align 4
  %u0n = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %xa0, <8 x float> %xb0, <8 x float> %u0)
  %j1 = add nuw nsw i64 %j, 8
  %qa1 = getelementptr inbounds float, ptr %pa, i64 %j1
  %qb1 = getelementptr inbounds float, ptr %pb, i64 %j1
  %xa1 = load <8 x float>, ptr %qa1, align 4
  %xb1 = load <8 x float>, ptr %qb1, align 4
  %u1n = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %xa1, <8 x float> %xb1, <8 x float> %u1)
  %j2 = add nuw nsw i64 %j, 16
  %qa2 = getelementptr inbounds float, ptr %pa, i64 %j2
  %qb2 = getelementptr inbounds float, ptr %pb, i64 %j2
  %xa2 = load <8 x float>, ptr %qa2, align 4
  %xb2 = load <8 x float>, ptr %qb2, align 4
  %u2n = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %xa2, <8 x float> %xb2, <8 x float> %u2)
  %j3 = add nuw nsw i64 %j, 24
  %qa3 = getelementptr inbounds float, ptr %pa, i64 %j3
  %qb3 = getelementptr inbounds float, ptr %pb, i64 %j3
  %xa3 = load <8 x float>, ptr %qa3, align 4
  %xb3 = load <8 x float>, ptr %qb3, align 4
  %u3n = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %xa3, <8 x float> %xb3, <8 x float> %u3)
  %j.next = add nuw nsw i64 %j, 32
  %j.done = icmp eq i64 %j.next, %p32
  br i1 %j.done, label %v32.end, label %v32
v32.end:
  %e0 = phi <8 x float> [ zeroinitializer, %k.loop ], [ %u0n, %v32 ]
  %e1 = phi <8 x float> [ zeroinitializer, %k.loop ], [ %u1n, %v32 ]
  %e2 = phi <8 x float> [ zeroinitializer, %k.loop ], [ %u2n, %v32 ]
  %e3 = phi <8 x float> [ zeroinitializer, %k.loop ], [ %u3n, %v32 ]
  %has8 = icmp slt i64 %p32, %p8
  br i1 %has8, label %v8, label %v8.end
v8:
  %jj = phi i64 [ %p32, %v32.end ], [ %jj.next, %v8 ]
  %w0 = phi <8 x float> [ %e0, %v32.end ], [ %w0n, %v8 ]
  %ra = getelementptr inbounds float, ptr %pa, i64 %jj
  %rb = getelementptr inbounds float, ptr %pb, i64 %jj
  %ya = load <8 x float>, ptr %ra, align 4
  %yb = load <8 x float>, ptr %rb, align 4
  %w0n = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %ya, <8 x float> %yb, <8 x float> %w0)
  %jj.next = add nuw nsw i64 %jj, 8
  %jj.done = icmp eq i64 %jj.next, %p8
  br i1 %jj.done, label %v8.end, label %v8
v8.end:
  %f0 = phi <8 x float> [ %e0, %v32.end ], [ %w0n, %v8 ]
  %hastail = icmp sgt i64 %tail, 0
  br i1 %hastail, label %vt, label %k.sum
vt:
  %ta = getelementptr inbounds float, ptr %pa, i64 %p8
  %tb = getelementptr inbounds float, ptr %pb, i64 %p8
  %za = call <8 x float> @load_tail(ptr %ta, i64 %tail, float 0.0)
  %zb = call <8 x float> @load_tail(ptr %tb, i64 %tail, float 0.0)
  %g0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %za, <8 x float> %zb, <8 x float> %f0)
  br label %k.sum
k.sum:
  %t0 = phi <8 x float> [ %f0, %v8.end ], [ %g0, %vt ]
  %h01 = fadd <8 x float> %t0, %e1
  %h23 = fadd <8 x float> %e2, %e3
  %h = fadd <8 x float> %h01, %h23
  %dot = call float @hsum8(<8 x float> %h)
  %ok = mul i64 %o, %nk
  %okk = add i64 %ok, %k
  %po = getelementptr inbounds float, ptr %out, i64 %okk
  %prev = load float, ptr %po, align 4
  %acc = fadd float %prev, %dot
  store float %acc, ptr %po, align 4
  br label %k.end
k.end:
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, %nk
  br i1 %k.done, label %o.latch, label %k.loop
o.latch:
  %o.next = add nuw nsw i64 %o, 1
  %o.done = icmp eq i64 %o.next, %no
  br i1 %o.done, label %n.latch, label %o.loop
n.latch:
  %i.next = add nuw nsw i64 %i, 1
  %i.done = icmp eq i64 %i.next, %n
  br i1 %i.done, label %exit, label %n.loop
exit:
  ret void
}

declare <8 x float> @llvm.fmuladd.v8f32(<8 x float>, <8 x float>, <8 x float>)
