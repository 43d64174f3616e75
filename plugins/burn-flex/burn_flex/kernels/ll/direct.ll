; flex's JIT direct convolution (float32 forward, any stride / dilation / padding, one group):
; burn_flex/kernels/conv.py calls it through burn_flex/jit.py where im2col + GEMM runs below BLAS's
; speed (few output positions per image, few input channels); compiled with LLVM -O3 for the host
; CPU, no fast-math flags.
;
; The caller pads the input (xp [N, C, Hp, Wp], zeros where the convolution reads padding) and
; repacks the weights in blocks of 8 output channels: wt[(b * K + k) * 8 + lane] = w[b * 8 + lane, k]
; (k = c * KH * KW + i * KW + j; zeros past O, and whole zero blocks up to a multiple of the tile's
; block count). Then for image n, position p and input tap k:
;   x(n, p, k) = xp[n * XS + base[p] + koff[k]]
; base[p] = (oh * SH) * Wp + ow * SW (the window's corner; padded to a multiple of the tile's
; positions with 0), koff[k] = c * Hp * Wp + (i * DH) * Wp + j * DW. A tile is R positions x B
; blocks of 8 output channels, R * B <8 x float> accumulators (R * B FMAs per tap, R broadcasts
; and B weight loads: FMA-bound, no im2col columns); the sum over k runs in order 0..K-1 with
; fmuladd, so results do not depend on the tile or on threads. The tile is stored lane by lane
; into y [N, O, P] (positions past P and channels past O dropped).
;   d = [N, K, XS, P, O, OBT, FLAGS]  (i64; OBT = tiles of B blocks)
; FLAGS bit 0: add bias[o] to each sum (bias holds OBT * B * 8 floats, zeros past O), bit 1: then
; relu (flex's: x if x > 0 or x is NaN, else +0.0): a convolution's bias and activation while the
; tile is in registers, the same bits as the sum, numpy's add and flex's relu one after another.
; direct_conv_r4b2_f32: 4 positions x 16 channels; direct_conv_r8b1_f32: 8 positions x 8 channels.
;
; direct_conv_pool_r4b2_f32 adds a 2 x 2 max pooling with stride 2 to the epilogue: the caller lists
; the positions window by window (base[4 q + r] is position (2 i + r / 2, 2 j + r % 2) of pooled
; position q = i * PW + j), so a tile of 4 positions is one window; after the bias and relu the
; tile's maximum maximum(maximum(maximum(a, b), c), d) (numpy's maximum, as pool.ll's maxpool2
; takes it: the same bits) is stored into y at n * O * YP + o * YP + qoff[q] (YP = d[7], an output
; plane: PP = PH * PW pooled positions with qoff[q] = q, or a plane padded for the convolution that
; reads it, qoff[q] = (i + PT) * (PW + PL + PR) + j + PL, its zeros left to the caller). P is
; 4 * PP (the rows and columns no window covers, an odd last one, are never computed).

define void @direct_conv_r4b2_f32(ptr noalias nocapture readonly %xp, ptr noalias nocapture readonly %wt,
                    ptr noalias nocapture writeonly %y, ptr noalias nocapture readonly %d,
                    ptr noalias nocapture readonly %base, ptr noalias nocapture readonly %koff,
                    ptr noalias nocapture readonly %bias) nounwind #3 {
entry:
  %d0 = getelementptr inbounds i64, ptr %d, i64 0
  %nn = load i64, ptr %d0
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %nk = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %xs = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %np = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %no = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %obt = load i64, ptr %d5
  %d6 = getelementptr inbounds i64, ptr %d, i64 6
  %flags = load i64, ptr %d6
  %acc = alloca [8 x <8 x float>], align 32
  %op = mul i64 %no, %np
  %fb = and i64 %flags, 1
  %hasbias = icmp ne i64 %fb, 0
  %fr = and i64 %flags, 2
  %hasrelu = icmp ne i64 %fr, 0
  %z1 = icmp sle i64 %nn, 0
  %z2 = icmp sle i64 %nk, 0
  %z3 = icmp sle i64 %np, 0
  %z4 = icmp sle i64 %obt, 0
  %z12 = or i1 %z1, %z2
  %z34 = or i1 %z3, %z4
  %empty = or i1 %z12, %z34
  br i1 %empty, label %exit, label %n.loop
n.loop:
  %n = phi i64 [ 0, %entry ], [ %n.next, %n.latch ]
  %xno = mul i64 %n, %xs
  %xn = getelementptr inbounds float, ptr %xp, i64 %xno
  %yno = mul i64 %n, %op
  %yn = getelementptr inbounds float, ptr %y, i64 %yno
  br label %p.loop
p.loop:
  %p0 = phi i64 [ 0, %n.loop ], [ %p.next, %p.latch ]
  %bi0 = add i64 %p0, 0
  %pb0 = getelementptr inbounds i64, ptr %base, i64 %bi0
  %b0 = load i64, ptr %pb0
  %xr0 = getelementptr inbounds float, ptr %xn, i64 %b0
  %bi1 = add i64 %p0, 1
  %pb1 = getelementptr inbounds i64, ptr %base, i64 %bi1
  %b1 = load i64, ptr %pb1
  %xr1 = getelementptr inbounds float, ptr %xn, i64 %b1
  %bi2 = add i64 %p0, 2
  %pb2 = getelementptr inbounds i64, ptr %base, i64 %bi2
  %b2 = load i64, ptr %pb2
  %xr2 = getelementptr inbounds float, ptr %xn, i64 %b2
  %bi3 = add i64 %p0, 3
  %pb3 = getelementptr inbounds i64, ptr %base, i64 %bi3
  %b3 = load i64, ptr %pb3
  %xr3 = getelementptr inbounds float, ptr %xn, i64 %b3
  br label %t.loop
t.loop:
  %t = phi i64 [ 0, %p.loop ], [ %t.next, %t.latch ]
  %tb = mul i64 %t, 16
  %tbk = mul i64 %tb, %nk
  %wtile = getelementptr inbounds float, ptr %wt, i64 %tbk
  br label %k.loop
k.loop:
  %k = phi i64 [ 0, %t.loop ], [ %k.next, %k.loop ]
  %a0_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an0_0, %k.loop ]
  %a0_1 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an0_1, %k.loop ]
  %a1_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an1_0, %k.loop ]
  %a1_1 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an1_1, %k.loop ]
  %a2_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an2_0, %k.loop ]
  %a2_1 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an2_1, %k.loop ]
  %a3_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an3_0, %k.loop ]
  %a3_1 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an3_1, %k.loop ]
  %pko = getelementptr inbounds i64, ptr %koff, i64 %k
  %ko = load i64, ptr %pko
  %px0 = getelementptr inbounds float, ptr %xr0, i64 %ko
  %s0 = load float, ptr %px0, align 4
  %si0 = insertelement <8 x float> poison, float %s0, i64 0
  %x0 = shufflevector <8 x float> %si0, <8 x float> poison, <8 x i32> zeroinitializer
  %px1 = getelementptr inbounds float, ptr %xr1, i64 %ko
  %s1 = load float, ptr %px1, align 4
  %si1 = insertelement <8 x float> poison, float %s1, i64 0
  %x1 = shufflevector <8 x float> %si1, <8 x float> poison, <8 x i32> zeroinitializer
  %px2 = getelementptr inbounds float, ptr %xr2, i64 %ko
  %s2 = load float, ptr %px2, align 4
  %si2 = insertelement <8 x float> poison, float %s2, i64 0
  %x2 = shufflevector <8 x float> %si2, <8 x float> poison, <8 x i32> zeroinitializer
  %px3 = getelementptr inbounds float, ptr %xr3, i64 %ko
  %s3 = load float, ptr %px3, align 4
  %si3 = insertelement <8 x float> poison, float %s3, i64 0
  %x3 = shufflevector <8 x float> %si3, <8 x float> poison, <8 x i32> zeroinitializer
  %k8 = mul i64 %k, 8
  %wbo0 = mul i64 %nk, 0
  %wbk0 = add i64 %wbo0, %k8
  %pw0 = getelementptr inbounds float, ptr %wtile, i64 %wbk0
  %w0 = load <8 x float>, ptr %pw0, align 4
  %wbo1 = mul i64 %nk, 8
  %wbk1 = add i64 %wbo1, %k8
  %pw1 = getelementptr inbounds float, ptr %wtile, i64 %wbk1
  %w1 = load <8 x float>, ptr %pw1, align 4
  %an0_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x0, <8 x float> %w0, <8 x float> %a0_0)
  %an0_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x0, <8 x float> %w1, <8 x float> %a0_1)
  %an1_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x1, <8 x float> %w0, <8 x float> %a1_0)
  %an1_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x1, <8 x float> %w1, <8 x float> %a1_1)
  %an2_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x2, <8 x float> %w0, <8 x float> %a2_0)
  %an2_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x2, <8 x float> %w1, <8 x float> %a2_1)
  %an3_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x3, <8 x float> %w0, <8 x float> %a3_0)
  %an3_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x3, <8 x float> %w1, <8 x float> %a3_1)
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, %nk
  br i1 %k.done, label %t.epilogue, label %k.loop
t.epilogue:
  %o0e = mul i64 %t, 16
  %bo0 = add i64 %o0e, 0
  %pbias0 = getelementptr inbounds float, ptr %bias, i64 %bo0
  %bv0 = load <8 x float>, ptr %pbias0, align 4
  %bo1 = add i64 %o0e, 8
  %pbias1 = getelementptr inbounds float, ptr %bias, i64 %bo1
  %bv1 = load <8 x float>, ptr %pbias1, align 4
  %eb0_0 = fadd <8 x float> %an0_0, %bv0
  %ec0_0 = select i1 %hasbias, <8 x float> %eb0_0, <8 x float> %an0_0
  %eg0_0 = fcmp ogt <8 x float> %ec0_0, zeroinitializer
  %eu0_0 = fcmp uno <8 x float> %ec0_0, %ec0_0
  %ek0_0 = or <8 x i1> %eg0_0, %eu0_0
  %er0_0 = select <8 x i1> %ek0_0, <8 x float> %ec0_0, <8 x float> zeroinitializer
  %en0_0 = select i1 %hasrelu, <8 x float> %er0_0, <8 x float> %ec0_0
  %eb0_1 = fadd <8 x float> %an0_1, %bv1
  %ec0_1 = select i1 %hasbias, <8 x float> %eb0_1, <8 x float> %an0_1
  %eg0_1 = fcmp ogt <8 x float> %ec0_1, zeroinitializer
  %eu0_1 = fcmp uno <8 x float> %ec0_1, %ec0_1
  %ek0_1 = or <8 x i1> %eg0_1, %eu0_1
  %er0_1 = select <8 x i1> %ek0_1, <8 x float> %ec0_1, <8 x float> zeroinitializer
  %en0_1 = select i1 %hasrelu, <8 x float> %er0_1, <8 x float> %ec0_1
  %eb1_0 = fadd <8 x float> %an1_0, %bv0
  %ec1_0 = select i1 %hasbias, <8 x float> %eb1_0, <8 x float> %an1_0
  %eg1_0 = fcmp ogt <8 x float> %ec1_0, zeroinitializer
  %eu1_0 = fcmp uno <8 x float> %ec1_0, %ec1_0
  %ek1_0 = or <8 x i1> %eg1_0, %eu1_0
  %er1_0 = select <8 x i1> %ek1_0, <8 x float> %ec1_0, <8 x float> zeroinitializer
  %en1_0 = select i1 %hasrelu, <8 x float> %er1_0, <8 x float> %ec1_0
  %eb1_1 = fadd <8 x float> %an1_1, %bv1
  %ec1_1 = select i1 %hasbias, <8 x float> %eb1_1, <8 x float> %an1_1
  %eg1_1 = fcmp ogt <8 x float> %ec1_1, zeroinitializer
  %eu1_1 = fcmp uno <8 x float> %ec1_1, %ec1_1
  %ek1_1 = or <8 x i1> %eg1_1, %eu1_1
  %er1_1 = select <8 x i1> %ek1_1, <8 x float> %ec1_1, <8 x float> zeroinitializer
  %en1_1 = select i1 %hasrelu, <8 x float> %er1_1, <8 x float> %ec1_1
  %eb2_0 = fadd <8 x float> %an2_0, %bv0
  %ec2_0 = select i1 %hasbias, <8 x float> %eb2_0, <8 x float> %an2_0
  %eg2_0 = fcmp ogt <8 x float> %ec2_0, zeroinitializer
  %eu2_0 = fcmp uno <8 x float> %ec2_0, %ec2_0
  %ek2_0 = or <8 x i1> %eg2_0, %eu2_0
  %er2_0 = select <8 x i1> %ek2_0, <8 x float> %ec2_0, <8 x float> zeroinitializer
  %en2_0 = select i1 %hasrelu, <8 x float> %er2_0, <8 x float> %ec2_0
  %eb2_1 = fadd <8 x float> %an2_1, %bv1
  %ec2_1 = select i1 %hasbias, <8 x float> %eb2_1, <8 x float> %an2_1
  %eg2_1 = fcmp ogt <8 x float> %ec2_1, zeroinitializer
  %eu2_1 = fcmp uno <8 x float> %ec2_1, %ec2_1
  %ek2_1 = or <8 x i1> %eg2_1, %eu2_1
  %er2_1 = select <8 x i1> %ek2_1, <8 x float> %ec2_1, <8 x float> zeroinitializer
  %en2_1 = select i1 %hasrelu, <8 x float> %er2_1, <8 x float> %ec2_1
  %eb3_0 = fadd <8 x float> %an3_0, %bv0
  %ec3_0 = select i1 %hasbias, <8 x float> %eb3_0, <8 x float> %an3_0
  %eg3_0 = fcmp ogt <8 x float> %ec3_0, zeroinitializer
  %eu3_0 = fcmp uno <8 x float> %ec3_0, %ec3_0
  %ek3_0 = or <8 x i1> %eg3_0, %eu3_0
  %er3_0 = select <8 x i1> %ek3_0, <8 x float> %ec3_0, <8 x float> zeroinitializer
  %en3_0 = select i1 %hasrelu, <8 x float> %er3_0, <8 x float> %ec3_0
  %eb3_1 = fadd <8 x float> %an3_1, %bv1
  %ec3_1 = select i1 %hasbias, <8 x float> %eb3_1, <8 x float> %an3_1
  %eg3_1 = fcmp ogt <8 x float> %ec3_1, zeroinitializer
  %eu3_1 = fcmp uno <8 x float> %ec3_1, %ec3_1
  %ek3_1 = or <8 x i1> %eg3_1, %eu3_1
  %er3_1 = select <8 x i1> %ek3_1, <8 x float> %ec3_1, <8 x float> zeroinitializer
  %en3_1 = select i1 %hasrelu, <8 x float> %er3_1, <8 x float> %ec3_1
  br label %t.store
t.store:
  %o0 = mul i64 %t, 16
  %rleft = sub i64 %np, %p0
  %rlt = icmp slt i64 %rleft, 4
  %rn = select i1 %rlt, i64 %rleft, i64 4
  %oleft = sub i64 %no, %o0
  %olt = icmp slt i64 %oleft, 16
  %on = select i1 %olt, i64 %oleft, i64 16
  %partial = or i1 %rlt, %olt
  br i1 %partial, label %t.spill, label %t.vec
t.vec:
  %tl0_0 = shufflevector <8 x float> %en0_0, <8 x float> %en1_0, <8 x i32> <i32 0, i32 8, i32 1, i32 9, i32 4, i32 12, i32 5, i32 13>
  %th0_0 = shufflevector <8 x float> %en0_0, <8 x float> %en1_0, <8 x i32> <i32 2, i32 10, i32 3, i32 11, i32 6, i32 14, i32 7, i32 15>
  %tl0_2 = shufflevector <8 x float> %en2_0, <8 x float> %en3_0, <8 x i32> <i32 0, i32 8, i32 1, i32 9, i32 4, i32 12, i32 5, i32 13>
  %th0_2 = shufflevector <8 x float> %en2_0, <8 x float> %en3_0, <8 x i32> <i32 2, i32 10, i32 3, i32 11, i32 6, i32 14, i32 7, i32 15>
  %u0_0_0 = shufflevector <8 x float> %tl0_0, <8 x float> %tl0_2, <8 x i32> <i32 0, i32 1, i32 8, i32 9, i32 4, i32 5, i32 12, i32 13>
  %u0_0_1 = shufflevector <8 x float> %tl0_0, <8 x float> %tl0_2, <8 x i32> <i32 2, i32 3, i32 10, i32 11, i32 6, i32 7, i32 14, i32 15>
  %u0_0_2 = shufflevector <8 x float> %th0_0, <8 x float> %th0_2, <8 x i32> <i32 0, i32 1, i32 8, i32 9, i32 4, i32 5, i32 12, i32 13>
  %u0_0_3 = shufflevector <8 x float> %th0_0, <8 x float> %th0_2, <8 x i32> <i32 2, i32 3, i32 10, i32 11, i32 6, i32 7, i32 14, i32 15>
  %c0_0 = shufflevector <8 x float> %u0_0_0, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %vo0_0 = add i64 %o0, 0
  %vop0_0 = mul i64 %vo0_0, %np
  %vyo0_0 = add i64 %vop0_0, %p0
  %vy0_0 = getelementptr inbounds float, ptr %yn, i64 %vyo0_0
  store <4 x float> %c0_0, ptr %vy0_0, align 4
  %c0_1 = shufflevector <8 x float> %u0_0_1, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %vo0_1 = add i64 %o0, 1
  %vop0_1 = mul i64 %vo0_1, %np
  %vyo0_1 = add i64 %vop0_1, %p0
  %vy0_1 = getelementptr inbounds float, ptr %yn, i64 %vyo0_1
  store <4 x float> %c0_1, ptr %vy0_1, align 4
  %c0_2 = shufflevector <8 x float> %u0_0_2, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %vo0_2 = add i64 %o0, 2
  %vop0_2 = mul i64 %vo0_2, %np
  %vyo0_2 = add i64 %vop0_2, %p0
  %vy0_2 = getelementptr inbounds float, ptr %yn, i64 %vyo0_2
  store <4 x float> %c0_2, ptr %vy0_2, align 4
  %c0_3 = shufflevector <8 x float> %u0_0_3, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %vo0_3 = add i64 %o0, 3
  %vop0_3 = mul i64 %vo0_3, %np
  %vyo0_3 = add i64 %vop0_3, %p0
  %vy0_3 = getelementptr inbounds float, ptr %yn, i64 %vyo0_3
  store <4 x float> %c0_3, ptr %vy0_3, align 4
  %c0_4 = shufflevector <8 x float> %u0_0_0, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %vo0_4 = add i64 %o0, 4
  %vop0_4 = mul i64 %vo0_4, %np
  %vyo0_4 = add i64 %vop0_4, %p0
  %vy0_4 = getelementptr inbounds float, ptr %yn, i64 %vyo0_4
  store <4 x float> %c0_4, ptr %vy0_4, align 4
  %c0_5 = shufflevector <8 x float> %u0_0_1, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %vo0_5 = add i64 %o0, 5
  %vop0_5 = mul i64 %vo0_5, %np
  %vyo0_5 = add i64 %vop0_5, %p0
  %vy0_5 = getelementptr inbounds float, ptr %yn, i64 %vyo0_5
  store <4 x float> %c0_5, ptr %vy0_5, align 4
  %c0_6 = shufflevector <8 x float> %u0_0_2, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %vo0_6 = add i64 %o0, 6
  %vop0_6 = mul i64 %vo0_6, %np
  %vyo0_6 = add i64 %vop0_6, %p0
  %vy0_6 = getelementptr inbounds float, ptr %yn, i64 %vyo0_6
  store <4 x float> %c0_6, ptr %vy0_6, align 4
  %c0_7 = shufflevector <8 x float> %u0_0_3, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %vo0_7 = add i64 %o0, 7
  %vop0_7 = mul i64 %vo0_7, %np
  %vyo0_7 = add i64 %vop0_7, %p0
  %vy0_7 = getelementptr inbounds float, ptr %yn, i64 %vyo0_7
  store <4 x float> %c0_7, ptr %vy0_7, align 4
  %tl1_0 = shufflevector <8 x float> %en0_1, <8 x float> %en1_1, <8 x i32> <i32 0, i32 8, i32 1, i32 9, i32 4, i32 12, i32 5, i32 13>
  %th1_0 = shufflevector <8 x float> %en0_1, <8 x float> %en1_1, <8 x i32> <i32 2, i32 10, i32 3, i32 11, i32 6, i32 14, i32 7, i32 15>
  %tl1_2 = shufflevector <8 x float> %en2_1, <8 x float> %en3_1, <8 x i32> <i32 0, i32 8, i32 1, i32 9, i32 4, i32 12, i32 5, i32 13>
  %th1_2 = shufflevector <8 x float> %en2_1, <8 x float> %en3_1, <8 x i32> <i32 2, i32 10, i32 3, i32 11, i32 6, i32 14, i32 7, i32 15>
  %u1_0_0 = shufflevector <8 x float> %tl1_0, <8 x float> %tl1_2, <8 x i32> <i32 0, i32 1, i32 8, i32 9, i32 4, i32 5, i32 12, i32 13>
  %u1_0_1 = shufflevector <8 x float> %tl1_0, <8 x float> %tl1_2, <8 x i32> <i32 2, i32 3, i32 10, i32 11, i32 6, i32 7, i32 14, i32 15>
  %u1_0_2 = shufflevector <8 x float> %th1_0, <8 x float> %th1_2, <8 x i32> <i32 0, i32 1, i32 8, i32 9, i32 4, i32 5, i32 12, i32 13>
  %u1_0_3 = shufflevector <8 x float> %th1_0, <8 x float> %th1_2, <8 x i32> <i32 2, i32 3, i32 10, i32 11, i32 6, i32 7, i32 14, i32 15>
  %c1_0 = shufflevector <8 x float> %u1_0_0, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %vo1_0 = add i64 %o0, 8
  %vop1_0 = mul i64 %vo1_0, %np
  %vyo1_0 = add i64 %vop1_0, %p0
  %vy1_0 = getelementptr inbounds float, ptr %yn, i64 %vyo1_0
  store <4 x float> %c1_0, ptr %vy1_0, align 4
  %c1_1 = shufflevector <8 x float> %u1_0_1, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %vo1_1 = add i64 %o0, 9
  %vop1_1 = mul i64 %vo1_1, %np
  %vyo1_1 = add i64 %vop1_1, %p0
  %vy1_1 = getelementptr inbounds float, ptr %yn, i64 %vyo1_1
  store <4 x float> %c1_1, ptr %vy1_1, align 4
  %c1_2 = shufflevector <8 x float> %u1_0_2, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %vo1_2 = add i64 %o0, 10
  %vop1_2 = mul i64 %vo1_2, %np
  %vyo1_2 = add i64 %vop1_2, %p0
  %vy1_2 = getelementptr inbounds float, ptr %yn, i64 %vyo1_2
  store <4 x float> %c1_2, ptr %vy1_2, align 4
  %c1_3 = shufflevector <8 x float> %u1_0_3, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %vo1_3 = add i64 %o0, 11
  %vop1_3 = mul i64 %vo1_3, %np
  %vyo1_3 = add i64 %vop1_3, %p0
  %vy1_3 = getelementptr inbounds float, ptr %yn, i64 %vyo1_3
  store <4 x float> %c1_3, ptr %vy1_3, align 4
  %c1_4 = shufflevector <8 x float> %u1_0_0, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %vo1_4 = add i64 %o0, 12
  %vop1_4 = mul i64 %vo1_4, %np
  %vyo1_4 = add i64 %vop1_4, %p0
  %vy1_4 = getelementptr inbounds float, ptr %yn, i64 %vyo1_4
  store <4 x float> %c1_4, ptr %vy1_4, align 4
  %c1_5 = shufflevector <8 x float> %u1_0_1, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %vo1_5 = add i64 %o0, 13
  %vop1_5 = mul i64 %vo1_5, %np
  %vyo1_5 = add i64 %vop1_5, %p0
  %vy1_5 = getelementptr inbounds float, ptr %yn, i64 %vyo1_5
  store <4 x float> %c1_5, ptr %vy1_5, align 4
  %c1_6 = shufflevector <8 x float> %u1_0_2, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %vo1_6 = add i64 %o0, 14
  %vop1_6 = mul i64 %vo1_6, %np
  %vyo1_6 = add i64 %vop1_6, %p0
  %vy1_6 = getelementptr inbounds float, ptr %yn, i64 %vyo1_6
  store <4 x float> %c1_6, ptr %vy1_6, align 4
  %c1_7 = shufflevector <8 x float> %u1_0_3, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %vo1_7 = add i64 %o0, 15
  %vop1_7 = mul i64 %vo1_7, %np
  %vyo1_7 = add i64 %vop1_7, %p0
  %vy1_7 = getelementptr inbounds float, ptr %yn, i64 %vyo1_7
  store <4 x float> %c1_7, ptr %vy1_7, align 4
  br label %t.latch
t.spill:
  %sp0_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 0
  store <8 x float> %en0_0, ptr %sp0_0, align 32
  %sp0_1 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 1
  store <8 x float> %en0_1, ptr %sp0_1, align 32
  %sp1_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 2
  store <8 x float> %en1_0, ptr %sp1_0, align 32
  %sp1_1 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 3
  store <8 x float> %en1_1, ptr %sp1_1, align 32
  %sp2_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 4
  store <8 x float> %en2_0, ptr %sp2_0, align 32
  %sp2_1 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 5
  store <8 x float> %en2_1, ptr %sp2_1, align 32
  %sp3_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 6
  store <8 x float> %en3_0, ptr %sp3_0, align 32
  %sp3_1 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 7
  store <8 x float> %en3_1, ptr %sp3_1, align 32
  br label %so.loop
so.loop:
  %oo = phi i64 [ 0, %t.spill ], [ %oo.next, %so.latch ]
  %og = add i64 %o0, %oo
  %ogp = mul i64 %og, %np
  %yo0 = add i64 %ogp, %p0
  %yo = getelementptr inbounds float, ptr %yn, i64 %yo0
  br label %sr.loop
sr.loop:
  %rr = phi i64 [ 0, %so.loop ], [ %rr.next, %sr.loop ]
  %ai0 = mul i64 %rr, 16
  %ai = add i64 %ai0, %oo
  %pa = getelementptr inbounds float, ptr %acc, i64 %ai
  %v = load float, ptr %pa, align 4
  %py = getelementptr inbounds float, ptr %yo, i64 %rr
  store float %v, ptr %py, align 4
  %rr.next = add nuw nsw i64 %rr, 1
  %rr.done = icmp eq i64 %rr.next, %rn
  br i1 %rr.done, label %so.latch, label %sr.loop
so.latch:
  %oo.next = add nuw nsw i64 %oo, 1
  %oo.done = icmp eq i64 %oo.next, %on
  br i1 %oo.done, label %t.latch, label %so.loop
t.latch:
  %t.next = add nuw nsw i64 %t, 1
  %t.done = icmp eq i64 %t.next, %obt
  br i1 %t.done, label %p.latch, label %t.loop
p.latch:
  %p.next = add nuw nsw i64 %p0, 4
  %p.done = icmp sge i64 %p.next, %np
  br i1 %p.done, label %n.latch, label %p.loop
n.latch:
  %n.next = add nuw nsw i64 %n, 1
  %n.done = icmp eq i64 %n.next, %nn
  br i1 %n.done, label %exit, label %n.loop
exit:
  ret void
}

define void @direct_conv_r8b1_f32(ptr noalias nocapture readonly %xp, ptr noalias nocapture readonly %wt,
                    ptr noalias nocapture writeonly %y, ptr noalias nocapture readonly %d,
                    ptr noalias nocapture readonly %base, ptr noalias nocapture readonly %koff,
                    ptr noalias nocapture readonly %bias) nounwind #3 {
entry:
  %d0 = getelementptr inbounds i64, ptr %d, i64 0
  %nn = load i64, ptr %d0
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %nk = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %xs = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %np = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %no = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %obt = load i64, ptr %d5
  %d6 = getelementptr inbounds i64, ptr %d, i64 6
  %flags = load i64, ptr %d6
  %acc = alloca [8 x <8 x float>], align 32
  %op = mul i64 %no, %np
  %fb = and i64 %flags, 1
  %hasbias = icmp ne i64 %fb, 0
  %fr = and i64 %flags, 2
  %hasrelu = icmp ne i64 %fr, 0
  %z1 = icmp sle i64 %nn, 0
  %z2 = icmp sle i64 %nk, 0
  %z3 = icmp sle i64 %np, 0
  %z4 = icmp sle i64 %obt, 0
  %z12 = or i1 %z1, %z2
  %z34 = or i1 %z3, %z4
  %empty = or i1 %z12, %z34
  br i1 %empty, label %exit, label %n.loop
n.loop:
  %n = phi i64 [ 0, %entry ], [ %n.next, %n.latch ]
  %xno = mul i64 %n, %xs
  %xn = getelementptr inbounds float, ptr %xp, i64 %xno
  %yno = mul i64 %n, %op
  %yn = getelementptr inbounds float, ptr %y, i64 %yno
  br label %p.loop
p.loop:
  %p0 = phi i64 [ 0, %n.loop ], [ %p.next, %p.latch ]
  %bi0 = add i64 %p0, 0
  %pb0 = getelementptr inbounds i64, ptr %base, i64 %bi0
  %b0 = load i64, ptr %pb0
  %xr0 = getelementptr inbounds float, ptr %xn, i64 %b0
  %bi1 = add i64 %p0, 1
  %pb1 = getelementptr inbounds i64, ptr %base, i64 %bi1
  %b1 = load i64, ptr %pb1
  %xr1 = getelementptr inbounds float, ptr %xn, i64 %b1
  %bi2 = add i64 %p0, 2
  %pb2 = getelementptr inbounds i64, ptr %base, i64 %bi2
  %b2 = load i64, ptr %pb2
  %xr2 = getelementptr inbounds float, ptr %xn, i64 %b2
  %bi3 = add i64 %p0, 3
  %pb3 = getelementptr inbounds i64, ptr %base, i64 %bi3
  %b3 = load i64, ptr %pb3
  %xr3 = getelementptr inbounds float, ptr %xn, i64 %b3
  %bi4 = add i64 %p0, 4
  %pb4 = getelementptr inbounds i64, ptr %base, i64 %bi4
  %b4 = load i64, ptr %pb4
  %xr4 = getelementptr inbounds float, ptr %xn, i64 %b4
  %bi5 = add i64 %p0, 5
  %pb5 = getelementptr inbounds i64, ptr %base, i64 %bi5
  %b5 = load i64, ptr %pb5
  %xr5 = getelementptr inbounds float, ptr %xn, i64 %b5
  %bi6 = add i64 %p0, 6
  %pb6 = getelementptr inbounds i64, ptr %base, i64 %bi6
  %b6 = load i64, ptr %pb6
  %xr6 = getelementptr inbounds float, ptr %xn, i64 %b6
  %bi7 = add i64 %p0, 7
  %pb7 = getelementptr inbounds i64, ptr %base, i64 %bi7
  %b7 = load i64, ptr %pb7
  %xr7 = getelementptr inbounds float, ptr %xn, i64 %b7
  br label %t.loop
t.loop:
  %t = phi i64 [ 0, %p.loop ], [ %t.next, %t.latch ]
  %tb = mul i64 %t, 8
  %tbk = mul i64 %tb, %nk
  %wtile = getelementptr inbounds float, ptr %wt, i64 %tbk
  br label %k.loop
k.loop:
  %k = phi i64 [ 0, %t.loop ], [ %k.next, %k.loop ]
  %a0_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an0_0, %k.loop ]
  %a1_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an1_0, %k.loop ]
  %a2_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an2_0, %k.loop ]
  %a3_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an3_0, %k.loop ]
  %a4_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an4_0, %k.loop ]
  %a5_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an5_0, %k.loop ]
  %a6_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an6_0, %k.loop ]
  %a7_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an7_0, %k.loop ]
  %pko = getelementptr inbounds i64, ptr %koff, i64 %k
  %ko = load i64, ptr %pko
  %px0 = getelementptr inbounds float, ptr %xr0, i64 %ko
  %s0 = load float, ptr %px0, align 4
  %si0 = insertelement <8 x float> poison, float %s0, i64 0
  %x0 = shufflevector <8 x float> %si0, <8 x float> poison, <8 x i32> zeroinitializer
  %px1 = getelementptr inbounds float, ptr %xr1, i64 %ko
  %s1 = load float, ptr %px1, align 4
  %si1 = insertelement <8 x float> poison, float %s1, i64 0
  %x1 = shufflevector <8 x float> %si1, <8 x float> poison, <8 x i32> zeroinitializer
  %px2 = getelementptr inbounds float, ptr %xr2, i64 %ko
  %s2 = load float, ptr %px2, align 4
  %si2 = insertelement <8 x float> poison, float %s2, i64 0
  %x2 = shufflevector <8 x float> %si2, <8 x float> poison, <8 x i32> zeroinitializer
  %px3 = getelementptr inbounds float, ptr %xr3, i64 %ko
  %s3 = load float, ptr %px3, align 4
  %si3 = insertelement <8 x float> poison, float %s3, i64 0
  %x3 = shufflevector <8 x float> %si3, <8 x float> poison, <8 x i32> zeroinitializer
  %px4 = getelementptr inbounds float, ptr %xr4, i64 %ko
  %s4 = load float, ptr %px4, align 4
  %si4 = insertelement <8 x float> poison, float %s4, i64 0
  %x4 = shufflevector <8 x float> %si4, <8 x float> poison, <8 x i32> zeroinitializer
  %px5 = getelementptr inbounds float, ptr %xr5, i64 %ko
  %s5 = load float, ptr %px5, align 4
  %si5 = insertelement <8 x float> poison, float %s5, i64 0
  %x5 = shufflevector <8 x float> %si5, <8 x float> poison, <8 x i32> zeroinitializer
  %px6 = getelementptr inbounds float, ptr %xr6, i64 %ko
  %s6 = load float, ptr %px6, align 4
  %si6 = insertelement <8 x float> poison, float %s6, i64 0
  %x6 = shufflevector <8 x float> %si6, <8 x float> poison, <8 x i32> zeroinitializer
  %px7 = getelementptr inbounds float, ptr %xr7, i64 %ko
  %s7 = load float, ptr %px7, align 4
  %si7 = insertelement <8 x float> poison, float %s7, i64 0
  %x7 = shufflevector <8 x float> %si7, <8 x float> poison, <8 x i32> zeroinitializer
  %k8 = mul i64 %k, 8
  %wbo0 = mul i64 %nk, 0
  %wbk0 = add i64 %wbo0, %k8
  %pw0 = getelementptr inbounds float, ptr %wtile, i64 %wbk0
  %w0 = load <8 x float>, ptr %pw0, align 4
  %an0_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x0, <8 x float> %w0, <8 x float> %a0_0)
  %an1_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x1, <8 x float> %w0, <8 x float> %a1_0)
  %an2_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x2, <8 x float> %w0, <8 x float> %a2_0)
  %an3_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x3, <8 x float> %w0, <8 x float> %a3_0)
  %an4_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x4, <8 x float> %w0, <8 x float> %a4_0)
  %an5_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x5, <8 x float> %w0, <8 x float> %a5_0)
  %an6_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x6, <8 x float> %w0, <8 x float> %a6_0)
  %an7_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x7, <8 x float> %w0, <8 x float> %a7_0)
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, %nk
  br i1 %k.done, label %t.epilogue, label %k.loop
t.epilogue:
  %o0e = mul i64 %t, 8
  %bo0 = add i64 %o0e, 0
  %pbias0 = getelementptr inbounds float, ptr %bias, i64 %bo0
  %bv0 = load <8 x float>, ptr %pbias0, align 4
  %eb0_0 = fadd <8 x float> %an0_0, %bv0
  %ec0_0 = select i1 %hasbias, <8 x float> %eb0_0, <8 x float> %an0_0
  %eg0_0 = fcmp ogt <8 x float> %ec0_0, zeroinitializer
  %eu0_0 = fcmp uno <8 x float> %ec0_0, %ec0_0
  %ek0_0 = or <8 x i1> %eg0_0, %eu0_0
  %er0_0 = select <8 x i1> %ek0_0, <8 x float> %ec0_0, <8 x float> zeroinitializer
  %en0_0 = select i1 %hasrelu, <8 x float> %er0_0, <8 x float> %ec0_0
  %eb1_0 = fadd <8 x float> %an1_0, %bv0
  %ec1_0 = select i1 %hasbias, <8 x float> %eb1_0, <8 x float> %an1_0
  %eg1_0 = fcmp ogt <8 x float> %ec1_0, zeroinitializer
  %eu1_0 = fcmp uno <8 x float> %ec1_0, %ec1_0
  %ek1_0 = or <8 x i1> %eg1_0, %eu1_0
  %er1_0 = select <8 x i1> %ek1_0, <8 x float> %ec1_0, <8 x float> zeroinitializer
  %en1_0 = select i1 %hasrelu, <8 x float> %er1_0, <8 x float> %ec1_0
  %eb2_0 = fadd <8 x float> %an2_0, %bv0
  %ec2_0 = select i1 %hasbias, <8 x float> %eb2_0, <8 x float> %an2_0
  %eg2_0 = fcmp ogt <8 x float> %ec2_0, zeroinitializer
  %eu2_0 = fcmp uno <8 x float> %ec2_0, %ec2_0
  %ek2_0 = or <8 x i1> %eg2_0, %eu2_0
  %er2_0 = select <8 x i1> %ek2_0, <8 x float> %ec2_0, <8 x float> zeroinitializer
  %en2_0 = select i1 %hasrelu, <8 x float> %er2_0, <8 x float> %ec2_0
  %eb3_0 = fadd <8 x float> %an3_0, %bv0
  %ec3_0 = select i1 %hasbias, <8 x float> %eb3_0, <8 x float> %an3_0
  %eg3_0 = fcmp ogt <8 x float> %ec3_0, zeroinitializer
  %eu3_0 = fcmp uno <8 x float> %ec3_0, %ec3_0
  %ek3_0 = or <8 x i1> %eg3_0, %eu3_0
  %er3_0 = select <8 x i1> %ek3_0, <8 x float> %ec3_0, <8 x float> zeroinitializer
  %en3_0 = select i1 %hasrelu, <8 x float> %er3_0, <8 x float> %ec3_0
  %eb4_0 = fadd <8 x float> %an4_0, %bv0
  %ec4_0 = select i1 %hasbias, <8 x float> %eb4_0, <8 x float> %an4_0
  %eg4_0 = fcmp ogt <8 x float> %ec4_0, zeroinitializer
  %eu4_0 = fcmp uno <8 x float> %ec4_0, %ec4_0
  %ek4_0 = or <8 x i1> %eg4_0, %eu4_0
  %er4_0 = select <8 x i1> %ek4_0, <8 x float> %ec4_0, <8 x float> zeroinitializer
  %en4_0 = select i1 %hasrelu, <8 x float> %er4_0, <8 x float> %ec4_0
  %eb5_0 = fadd <8 x float> %an5_0, %bv0
  %ec5_0 = select i1 %hasbias, <8 x float> %eb5_0, <8 x float> %an5_0
  %eg5_0 = fcmp ogt <8 x float> %ec5_0, zeroinitializer
  %eu5_0 = fcmp uno <8 x float> %ec5_0, %ec5_0
  %ek5_0 = or <8 x i1> %eg5_0, %eu5_0
  %er5_0 = select <8 x i1> %ek5_0, <8 x float> %ec5_0, <8 x float> zeroinitializer
  %en5_0 = select i1 %hasrelu, <8 x float> %er5_0, <8 x float> %ec5_0
  %eb6_0 = fadd <8 x float> %an6_0, %bv0
  %ec6_0 = select i1 %hasbias, <8 x float> %eb6_0, <8 x float> %an6_0
  %eg6_0 = fcmp ogt <8 x float> %ec6_0, zeroinitializer
  %eu6_0 = fcmp uno <8 x float> %ec6_0, %ec6_0
  %ek6_0 = or <8 x i1> %eg6_0, %eu6_0
  %er6_0 = select <8 x i1> %ek6_0, <8 x float> %ec6_0, <8 x float> zeroinitializer
  %en6_0 = select i1 %hasrelu, <8 x float> %er6_0, <8 x float> %ec6_0
  %eb7_0 = fadd <8 x float> %an7_0, %bv0
  %ec7_0 = select i1 %hasbias, <8 x float> %eb7_0, <8 x float> %an7_0
  %eg7_0 = fcmp ogt <8 x float> %ec7_0, zeroinitializer
  %eu7_0 = fcmp uno <8 x float> %ec7_0, %ec7_0
  %ek7_0 = or <8 x i1> %eg7_0, %eu7_0
  %er7_0 = select <8 x i1> %ek7_0, <8 x float> %ec7_0, <8 x float> zeroinitializer
  %en7_0 = select i1 %hasrelu, <8 x float> %er7_0, <8 x float> %ec7_0
  br label %t.store
t.store:
  %o0 = mul i64 %t, 8
  %rleft = sub i64 %np, %p0
  %rlt = icmp slt i64 %rleft, 8
  %rn = select i1 %rlt, i64 %rleft, i64 8
  %oleft = sub i64 %no, %o0
  %olt = icmp slt i64 %oleft, 8
  %on = select i1 %olt, i64 %oleft, i64 8
  %partial = or i1 %rlt, %olt
  br i1 %partial, label %t.spill, label %t.vec
t.vec:
  %tl0_0 = shufflevector <8 x float> %en0_0, <8 x float> %en1_0, <8 x i32> <i32 0, i32 8, i32 1, i32 9, i32 4, i32 12, i32 5, i32 13>
  %th0_0 = shufflevector <8 x float> %en0_0, <8 x float> %en1_0, <8 x i32> <i32 2, i32 10, i32 3, i32 11, i32 6, i32 14, i32 7, i32 15>
  %tl0_2 = shufflevector <8 x float> %en2_0, <8 x float> %en3_0, <8 x i32> <i32 0, i32 8, i32 1, i32 9, i32 4, i32 12, i32 5, i32 13>
  %th0_2 = shufflevector <8 x float> %en2_0, <8 x float> %en3_0, <8 x i32> <i32 2, i32 10, i32 3, i32 11, i32 6, i32 14, i32 7, i32 15>
  %tl0_4 = shufflevector <8 x float> %en4_0, <8 x float> %en5_0, <8 x i32> <i32 0, i32 8, i32 1, i32 9, i32 4, i32 12, i32 5, i32 13>
  %th0_4 = shufflevector <8 x float> %en4_0, <8 x float> %en5_0, <8 x i32> <i32 2, i32 10, i32 3, i32 11, i32 6, i32 14, i32 7, i32 15>
  %tl0_6 = shufflevector <8 x float> %en6_0, <8 x float> %en7_0, <8 x i32> <i32 0, i32 8, i32 1, i32 9, i32 4, i32 12, i32 5, i32 13>
  %th0_6 = shufflevector <8 x float> %en6_0, <8 x float> %en7_0, <8 x i32> <i32 2, i32 10, i32 3, i32 11, i32 6, i32 14, i32 7, i32 15>
  %u0_0_0 = shufflevector <8 x float> %tl0_0, <8 x float> %tl0_2, <8 x i32> <i32 0, i32 1, i32 8, i32 9, i32 4, i32 5, i32 12, i32 13>
  %u0_0_1 = shufflevector <8 x float> %tl0_0, <8 x float> %tl0_2, <8 x i32> <i32 2, i32 3, i32 10, i32 11, i32 6, i32 7, i32 14, i32 15>
  %u0_0_2 = shufflevector <8 x float> %th0_0, <8 x float> %th0_2, <8 x i32> <i32 0, i32 1, i32 8, i32 9, i32 4, i32 5, i32 12, i32 13>
  %u0_0_3 = shufflevector <8 x float> %th0_0, <8 x float> %th0_2, <8 x i32> <i32 2, i32 3, i32 10, i32 11, i32 6, i32 7, i32 14, i32 15>
  %u0_4_0 = shufflevector <8 x float> %tl0_4, <8 x float> %tl0_6, <8 x i32> <i32 0, i32 1, i32 8, i32 9, i32 4, i32 5, i32 12, i32 13>
  %u0_4_1 = shufflevector <8 x float> %tl0_4, <8 x float> %tl0_6, <8 x i32> <i32 2, i32 3, i32 10, i32 11, i32 6, i32 7, i32 14, i32 15>
  %u0_4_2 = shufflevector <8 x float> %th0_4, <8 x float> %th0_6, <8 x i32> <i32 0, i32 1, i32 8, i32 9, i32 4, i32 5, i32 12, i32 13>
  %u0_4_3 = shufflevector <8 x float> %th0_4, <8 x float> %th0_6, <8 x i32> <i32 2, i32 3, i32 10, i32 11, i32 6, i32 7, i32 14, i32 15>
  %c0_0 = shufflevector <8 x float> %u0_0_0, <8 x float> %u0_4_0, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 8, i32 9, i32 10, i32 11>
  %vo0_0 = add i64 %o0, 0
  %vop0_0 = mul i64 %vo0_0, %np
  %vyo0_0 = add i64 %vop0_0, %p0
  %vy0_0 = getelementptr inbounds float, ptr %yn, i64 %vyo0_0
  store <8 x float> %c0_0, ptr %vy0_0, align 4
  %c0_1 = shufflevector <8 x float> %u0_0_1, <8 x float> %u0_4_1, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 8, i32 9, i32 10, i32 11>
  %vo0_1 = add i64 %o0, 1
  %vop0_1 = mul i64 %vo0_1, %np
  %vyo0_1 = add i64 %vop0_1, %p0
  %vy0_1 = getelementptr inbounds float, ptr %yn, i64 %vyo0_1
  store <8 x float> %c0_1, ptr %vy0_1, align 4
  %c0_2 = shufflevector <8 x float> %u0_0_2, <8 x float> %u0_4_2, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 8, i32 9, i32 10, i32 11>
  %vo0_2 = add i64 %o0, 2
  %vop0_2 = mul i64 %vo0_2, %np
  %vyo0_2 = add i64 %vop0_2, %p0
  %vy0_2 = getelementptr inbounds float, ptr %yn, i64 %vyo0_2
  store <8 x float> %c0_2, ptr %vy0_2, align 4
  %c0_3 = shufflevector <8 x float> %u0_0_3, <8 x float> %u0_4_3, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 8, i32 9, i32 10, i32 11>
  %vo0_3 = add i64 %o0, 3
  %vop0_3 = mul i64 %vo0_3, %np
  %vyo0_3 = add i64 %vop0_3, %p0
  %vy0_3 = getelementptr inbounds float, ptr %yn, i64 %vyo0_3
  store <8 x float> %c0_3, ptr %vy0_3, align 4
  %c0_4 = shufflevector <8 x float> %u0_0_0, <8 x float> %u0_4_0, <8 x i32> <i32 4, i32 5, i32 6, i32 7, i32 12, i32 13, i32 14, i32 15>
  %vo0_4 = add i64 %o0, 4
  %vop0_4 = mul i64 %vo0_4, %np
  %vyo0_4 = add i64 %vop0_4, %p0
  %vy0_4 = getelementptr inbounds float, ptr %yn, i64 %vyo0_4
  store <8 x float> %c0_4, ptr %vy0_4, align 4
  %c0_5 = shufflevector <8 x float> %u0_0_1, <8 x float> %u0_4_1, <8 x i32> <i32 4, i32 5, i32 6, i32 7, i32 12, i32 13, i32 14, i32 15>
  %vo0_5 = add i64 %o0, 5
  %vop0_5 = mul i64 %vo0_5, %np
  %vyo0_5 = add i64 %vop0_5, %p0
  %vy0_5 = getelementptr inbounds float, ptr %yn, i64 %vyo0_5
  store <8 x float> %c0_5, ptr %vy0_5, align 4
  %c0_6 = shufflevector <8 x float> %u0_0_2, <8 x float> %u0_4_2, <8 x i32> <i32 4, i32 5, i32 6, i32 7, i32 12, i32 13, i32 14, i32 15>
  %vo0_6 = add i64 %o0, 6
  %vop0_6 = mul i64 %vo0_6, %np
  %vyo0_6 = add i64 %vop0_6, %p0
  %vy0_6 = getelementptr inbounds float, ptr %yn, i64 %vyo0_6
  store <8 x float> %c0_6, ptr %vy0_6, align 4
  %c0_7 = shufflevector <8 x float> %u0_0_3, <8 x float> %u0_4_3, <8 x i32> <i32 4, i32 5, i32 6, i32 7, i32 12, i32 13, i32 14, i32 15>
  %vo0_7 = add i64 %o0, 7
  %vop0_7 = mul i64 %vo0_7, %np
  %vyo0_7 = add i64 %vop0_7, %p0
  %vy0_7 = getelementptr inbounds float, ptr %yn, i64 %vyo0_7
  store <8 x float> %c0_7, ptr %vy0_7, align 4
  br label %t.latch
t.spill:
  %sp0_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 0
  store <8 x float> %en0_0, ptr %sp0_0, align 32
  %sp1_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 1
  store <8 x float> %en1_0, ptr %sp1_0, align 32
  %sp2_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 2
  store <8 x float> %en2_0, ptr %sp2_0, align 32
  %sp3_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 3
  store <8 x float> %en3_0, ptr %sp3_0, align 32
  %sp4_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 4
  store <8 x float> %en4_0, ptr %sp4_0, align 32
  %sp5_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 5
  store <8 x float> %en5_0, ptr %sp5_0, align 32
  %sp6_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 6
  store <8 x float> %en6_0, ptr %sp6_0, align 32
  %sp7_0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 7
  store <8 x float> %en7_0, ptr %sp7_0, align 32
  br label %so.loop
so.loop:
  %oo = phi i64 [ 0, %t.spill ], [ %oo.next, %so.latch ]
  %og = add i64 %o0, %oo
  %ogp = mul i64 %og, %np
  %yo0 = add i64 %ogp, %p0
  %yo = getelementptr inbounds float, ptr %yn, i64 %yo0
  br label %sr.loop
sr.loop:
  %rr = phi i64 [ 0, %so.loop ], [ %rr.next, %sr.loop ]
  %ai0 = mul i64 %rr, 8
  %ai = add i64 %ai0, %oo
  %pa = getelementptr inbounds float, ptr %acc, i64 %ai
  %v = load float, ptr %pa, align 4
  %py = getelementptr inbounds float, ptr %yo, i64 %rr
  store float %v, ptr %py, align 4
  %rr.next = add nuw nsw i64 %rr, 1
  %rr.done = icmp eq i64 %rr.next, %rn
  br i1 %rr.done, label %so.latch, label %sr.loop
so.latch:
  %oo.next = add nuw nsw i64 %oo, 1
  %oo.done = icmp eq i64 %oo.next, %on
  br i1 %oo.done, label %t.latch, label %so.loop
t.latch:
  %t.next = add nuw nsw i64 %t, 1
  %t.done = icmp eq i64 %t.next, %obt
  br i1 %t.done, label %p.latch, label %t.loop
p.latch:
  %p.next = add nuw nsw i64 %p0, 8
  %p.done = icmp sge i64 %p.next, %np
  br i1 %p.done, label %n.latch, label %p.loop
n.latch:
  %n.next = add nuw nsw i64 %n, 1
  %n.done = icmp eq i64 %n.next, %nn
  br i1 %n.done, label %exit, label %n.loop
exit:
  ret void
}

define void @direct_conv_pool_r4b2_f32(ptr noalias nocapture readonly %xp, ptr noalias nocapture readonly %wt,
                    ptr noalias nocapture writeonly %y, ptr noalias nocapture readonly %d,
                    ptr noalias nocapture readonly %base, ptr noalias nocapture readonly %koff,
                    ptr noalias nocapture readonly %bias, ptr noalias nocapture readonly %qoff) nounwind #3 {
entry:
  %d0 = getelementptr inbounds i64, ptr %d, i64 0
  %nn = load i64, ptr %d0
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %nk = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %xs = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %np = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %no = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %obt = load i64, ptr %d5
  %d6 = getelementptr inbounds i64, ptr %d, i64 6
  %flags = load i64, ptr %d6
  %d7 = getelementptr inbounds i64, ptr %d, i64 7
  %pp = load i64, ptr %d7
  %acc = alloca [8 x <8 x float>], align 32
  %op = mul i64 %no, %pp
  %fb = and i64 %flags, 1
  %hasbias = icmp ne i64 %fb, 0
  %fr = and i64 %flags, 2
  %hasrelu = icmp ne i64 %fr, 0
  %z1 = icmp sle i64 %nn, 0
  %z2 = icmp sle i64 %nk, 0
  %z3 = icmp sle i64 %np, 0
  %z4 = icmp sle i64 %obt, 0
  %z12 = or i1 %z1, %z2
  %z34 = or i1 %z3, %z4
  %empty = or i1 %z12, %z34
  br i1 %empty, label %exit, label %n.loop
n.loop:
  %n = phi i64 [ 0, %entry ], [ %n.next, %n.latch ]
  %xno = mul i64 %n, %xs
  %xn = getelementptr inbounds float, ptr %xp, i64 %xno
  %yno = mul i64 %n, %op
  %yn = getelementptr inbounds float, ptr %y, i64 %yno
  br label %p.loop
p.loop:
  %p0 = phi i64 [ 0, %n.loop ], [ %p.next, %p.latch ]
  %bi0 = add i64 %p0, 0
  %pb0 = getelementptr inbounds i64, ptr %base, i64 %bi0
  %b0 = load i64, ptr %pb0
  %xr0 = getelementptr inbounds float, ptr %xn, i64 %b0
  %bi1 = add i64 %p0, 1
  %pb1 = getelementptr inbounds i64, ptr %base, i64 %bi1
  %b1 = load i64, ptr %pb1
  %xr1 = getelementptr inbounds float, ptr %xn, i64 %b1
  %bi2 = add i64 %p0, 2
  %pb2 = getelementptr inbounds i64, ptr %base, i64 %bi2
  %b2 = load i64, ptr %pb2
  %xr2 = getelementptr inbounds float, ptr %xn, i64 %b2
  %bi3 = add i64 %p0, 3
  %pb3 = getelementptr inbounds i64, ptr %base, i64 %bi3
  %b3 = load i64, ptr %pb3
  %xr3 = getelementptr inbounds float, ptr %xn, i64 %b3
  br label %t.loop
t.loop:
  %t = phi i64 [ 0, %p.loop ], [ %t.next, %t.latch ]
  %tb = mul i64 %t, 16
  %tbk = mul i64 %tb, %nk
  %wtile = getelementptr inbounds float, ptr %wt, i64 %tbk
  br label %k.loop
k.loop:
  %k = phi i64 [ 0, %t.loop ], [ %k.next, %k.loop ]
  %a0_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an0_0, %k.loop ]
  %a0_1 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an0_1, %k.loop ]
  %a1_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an1_0, %k.loop ]
  %a1_1 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an1_1, %k.loop ]
  %a2_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an2_0, %k.loop ]
  %a2_1 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an2_1, %k.loop ]
  %a3_0 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an3_0, %k.loop ]
  %a3_1 = phi <8 x float> [ zeroinitializer, %t.loop ], [ %an3_1, %k.loop ]
  %pko = getelementptr inbounds i64, ptr %koff, i64 %k
  %ko = load i64, ptr %pko
  %px0 = getelementptr inbounds float, ptr %xr0, i64 %ko
  %s0 = load float, ptr %px0, align 4
  %si0 = insertelement <8 x float> poison, float %s0, i64 0
  %x0 = shufflevector <8 x float> %si0, <8 x float> poison, <8 x i32> zeroinitializer
  %px1 = getelementptr inbounds float, ptr %xr1, i64 %ko
  %s1 = load float, ptr %px1, align 4
  %si1 = insertelement <8 x float> poison, float %s1, i64 0
  %x1 = shufflevector <8 x float> %si1, <8 x float> poison, <8 x i32> zeroinitializer
  %px2 = getelementptr inbounds float, ptr %xr2, i64 %ko
  %s2 = load float, ptr %px2, align 4
  %si2 = insertelement <8 x float> poison, float %s2, i64 0
  %x2 = shufflevector <8 x float> %si2, <8 x float> poison, <8 x i32> zeroinitializer
  %px3 = getelementptr inbounds float, ptr %xr3, i64 %ko
  %s3 = load float, ptr %px3, align 4
  %si3 = insertelement <8 x float> poison, float %s3, i64 0
  %x3 = shufflevector <8 x float> %si3, <8 x float> poison, <8 x i32> zeroinitializer
  %k8 = mul i64 %k, 8
  %wbo0 = mul i64 %nk, 0
  %wbk0 = add i64 %wbo0, %k8
  %pw0 = getelementptr inbounds float, ptr %wtile, i64 %wbk0
  %w0 = load <8 x float>, ptr %pw0, align 4
  %wbo1 = mul i64 %nk, 8
  %wbk1 = add i64 %wbo1, %k8
  %pw1 = getelementptr inbounds float, ptr %wtile, i64 %wbk1
  %w1 = load <8 x float>, ptr %pw1, align 4
  %an0_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x0, <8 x float> %w0, <8 x float> %a0_0)
  %an0_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x0, <8 x float> %w1, <8 x float> %a0_1)
  %an1_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x1, <8 x float> %w0, <8 x float> %a1_0)
  %an1_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x1, <8 x float> %w1, <8 x float> %a1_1)
  %an2_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x2, <8 x float> %w0, <8 x float> %a2_0)
  %an2_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x2, <8 x float> %w1, <8 x float> %a2_1)
  %an3_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x3, <8 x float> %w0, <8 x float> %a3_0)
  %an3_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %x3, <8 x float> %w1, <8 x float> %a3_1)
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, %nk
  br i1 %k.done, label %t.epilogue, label %k.loop
t.epilogue:
  %o0e = mul i64 %t, 16
  %bo0 = add i64 %o0e, 0
  %pbias0 = getelementptr inbounds float, ptr %bias, i64 %bo0
  %bv0 = load <8 x float>, ptr %pbias0, align 4
  %bo1 = add i64 %o0e, 8
  %pbias1 = getelementptr inbounds float, ptr %bias, i64 %bo1
  %bv1 = load <8 x float>, ptr %pbias1, align 4
  %eb0_0 = fadd <8 x float> %an0_0, %bv0
  %ec0_0 = select i1 %hasbias, <8 x float> %eb0_0, <8 x float> %an0_0
  %eg0_0 = fcmp ogt <8 x float> %ec0_0, zeroinitializer
  %eu0_0 = fcmp uno <8 x float> %ec0_0, %ec0_0
  %ek0_0 = or <8 x i1> %eg0_0, %eu0_0
  %er0_0 = select <8 x i1> %ek0_0, <8 x float> %ec0_0, <8 x float> zeroinitializer
  %en0_0 = select i1 %hasrelu, <8 x float> %er0_0, <8 x float> %ec0_0
  %eb0_1 = fadd <8 x float> %an0_1, %bv1
  %ec0_1 = select i1 %hasbias, <8 x float> %eb0_1, <8 x float> %an0_1
  %eg0_1 = fcmp ogt <8 x float> %ec0_1, zeroinitializer
  %eu0_1 = fcmp uno <8 x float> %ec0_1, %ec0_1
  %ek0_1 = or <8 x i1> %eg0_1, %eu0_1
  %er0_1 = select <8 x i1> %ek0_1, <8 x float> %ec0_1, <8 x float> zeroinitializer
  %en0_1 = select i1 %hasrelu, <8 x float> %er0_1, <8 x float> %ec0_1
  %eb1_0 = fadd <8 x float> %an1_0, %bv0
  %ec1_0 = select i1 %hasbias, <8 x float> %eb1_0, <8 x float> %an1_0
  %eg1_0 = fcmp ogt <8 x float> %ec1_0, zeroinitializer
  %eu1_0 = fcmp uno <8 x float> %ec1_0, %ec1_0
  %ek1_0 = or <8 x i1> %eg1_0, %eu1_0
  %er1_0 = select <8 x i1> %ek1_0, <8 x float> %ec1_0, <8 x float> zeroinitializer
  %en1_0 = select i1 %hasrelu, <8 x float> %er1_0, <8 x float> %ec1_0
  %eb1_1 = fadd <8 x float> %an1_1, %bv1
  %ec1_1 = select i1 %hasbias, <8 x float> %eb1_1, <8 x float> %an1_1
  %eg1_1 = fcmp ogt <8 x float> %ec1_1, zeroinitializer
  %eu1_1 = fcmp uno <8 x float> %ec1_1, %ec1_1
  %ek1_1 = or <8 x i1> %eg1_1, %eu1_1
  %er1_1 = select <8 x i1> %ek1_1, <8 x float> %ec1_1, <8 x float> zeroinitializer
  %en1_1 = select i1 %hasrelu, <8 x float> %er1_1, <8 x float> %ec1_1
  %eb2_0 = fadd <8 x float> %an2_0, %bv0
  %ec2_0 = select i1 %hasbias, <8 x float> %eb2_0, <8 x float> %an2_0
  %eg2_0 = fcmp ogt <8 x float> %ec2_0, zeroinitializer
  %eu2_0 = fcmp uno <8 x float> %ec2_0, %ec2_0
  %ek2_0 = or <8 x i1> %eg2_0, %eu2_0
  %er2_0 = select <8 x i1> %ek2_0, <8 x float> %ec2_0, <8 x float> zeroinitializer
  %en2_0 = select i1 %hasrelu, <8 x float> %er2_0, <8 x float> %ec2_0
  %eb2_1 = fadd <8 x float> %an2_1, %bv1
  %ec2_1 = select i1 %hasbias, <8 x float> %eb2_1, <8 x float> %an2_1
  %eg2_1 = fcmp ogt <8 x float> %ec2_1, zeroinitializer
  %eu2_1 = fcmp uno <8 x float> %ec2_1, %ec2_1
  %ek2_1 = or <8 x i1> %eg2_1, %eu2_1
  %er2_1 = select <8 x i1> %ek2_1, <8 x float> %ec2_1, <8 x float> zeroinitializer
  %en2_1 = select i1 %hasrelu, <8 x float> %er2_1, <8 x float> %ec2_1
  %eb3_0 = fadd <8 x float> %an3_0, %bv0
  %ec3_0 = select i1 %hasbias, <8 x float> %eb3_0, <8 x float> %an3_0
  %eg3_0 = fcmp ogt <8 x float> %ec3_0, zeroinitializer
  %eu3_0 = fcmp uno <8 x float> %ec3_0, %ec3_0
  %ek3_0 = or <8 x i1> %eg3_0, %eu3_0
  %er3_0 = select <8 x i1> %ek3_0, <8 x float> %ec3_0, <8 x float> zeroinitializer
  %en3_0 = select i1 %hasrelu, <8 x float> %er3_0, <8 x float> %ec3_0
  %eb3_1 = fadd <8 x float> %an3_1, %bv1
  %ec3_1 = select i1 %hasbias, <8 x float> %eb3_1, <8 x float> %an3_1
  %eg3_1 = fcmp ogt <8 x float> %ec3_1, zeroinitializer
  %eu3_1 = fcmp uno <8 x float> %ec3_1, %ec3_1
  %ek3_1 = or <8 x i1> %eg3_1, %eu3_1
  %er3_1 = select <8 x i1> %ek3_1, <8 x float> %ec3_1, <8 x float> zeroinitializer
  %en3_1 = select i1 %hasrelu, <8 x float> %er3_1, <8 x float> %ec3_1
  br label %t.store
t.store:
  %o0 = mul i64 %t, 16
  %qi = lshr i64 %p0, 2
  %pqo = getelementptr inbounds i64, ptr %qoff, i64 %qi
  %q = load i64, ptr %pqo
  %mx0_0 = call <8 x float> @dc_np_max8(<8 x float> %en0_0, <8 x float> %en1_0)
  %mx0_1 = call <8 x float> @dc_np_max8(<8 x float> %mx0_0, <8 x float> %en2_0)
  %mx0 = call <8 x float> @dc_np_max8(<8 x float> %mx0_1, <8 x float> %en3_0)
  %mx1_0 = call <8 x float> @dc_np_max8(<8 x float> %en0_1, <8 x float> %en1_1)
  %mx1_1 = call <8 x float> @dc_np_max8(<8 x float> %mx1_0, <8 x float> %en2_1)
  %mx1 = call <8 x float> @dc_np_max8(<8 x float> %mx1_1, <8 x float> %en3_1)
  %oleft = sub i64 %no, %o0
  %olt = icmp slt i64 %oleft, 16
  br i1 %olt, label %t.spill, label %t.vec
t.vec:
  %pe0_0 = extractelement <8 x float> %mx0, i64 0
  %pc0_0 = add i64 %o0, 0
  %pq0_0 = mul i64 %pc0_0, %pp
  %pr0_0 = add i64 %pq0_0, %q
  %py0_0 = getelementptr inbounds float, ptr %yn, i64 %pr0_0
  store float %pe0_0, ptr %py0_0, align 4
  %pe0_1 = extractelement <8 x float> %mx0, i64 1
  %pc0_1 = add i64 %o0, 1
  %pq0_1 = mul i64 %pc0_1, %pp
  %pr0_1 = add i64 %pq0_1, %q
  %py0_1 = getelementptr inbounds float, ptr %yn, i64 %pr0_1
  store float %pe0_1, ptr %py0_1, align 4
  %pe0_2 = extractelement <8 x float> %mx0, i64 2
  %pc0_2 = add i64 %o0, 2
  %pq0_2 = mul i64 %pc0_2, %pp
  %pr0_2 = add i64 %pq0_2, %q
  %py0_2 = getelementptr inbounds float, ptr %yn, i64 %pr0_2
  store float %pe0_2, ptr %py0_2, align 4
  %pe0_3 = extractelement <8 x float> %mx0, i64 3
  %pc0_3 = add i64 %o0, 3
  %pq0_3 = mul i64 %pc0_3, %pp
  %pr0_3 = add i64 %pq0_3, %q
  %py0_3 = getelementptr inbounds float, ptr %yn, i64 %pr0_3
  store float %pe0_3, ptr %py0_3, align 4
  %pe0_4 = extractelement <8 x float> %mx0, i64 4
  %pc0_4 = add i64 %o0, 4
  %pq0_4 = mul i64 %pc0_4, %pp
  %pr0_4 = add i64 %pq0_4, %q
  %py0_4 = getelementptr inbounds float, ptr %yn, i64 %pr0_4
  store float %pe0_4, ptr %py0_4, align 4
  %pe0_5 = extractelement <8 x float> %mx0, i64 5
  %pc0_5 = add i64 %o0, 5
  %pq0_5 = mul i64 %pc0_5, %pp
  %pr0_5 = add i64 %pq0_5, %q
  %py0_5 = getelementptr inbounds float, ptr %yn, i64 %pr0_5
  store float %pe0_5, ptr %py0_5, align 4
  %pe0_6 = extractelement <8 x float> %mx0, i64 6
  %pc0_6 = add i64 %o0, 6
  %pq0_6 = mul i64 %pc0_6, %pp
  %pr0_6 = add i64 %pq0_6, %q
  %py0_6 = getelementptr inbounds float, ptr %yn, i64 %pr0_6
  store float %pe0_6, ptr %py0_6, align 4
  %pe0_7 = extractelement <8 x float> %mx0, i64 7
  %pc0_7 = add i64 %o0, 7
  %pq0_7 = mul i64 %pc0_7, %pp
  %pr0_7 = add i64 %pq0_7, %q
  %py0_7 = getelementptr inbounds float, ptr %yn, i64 %pr0_7
  store float %pe0_7, ptr %py0_7, align 4
  %pe1_0 = extractelement <8 x float> %mx1, i64 0
  %pc1_0 = add i64 %o0, 8
  %pq1_0 = mul i64 %pc1_0, %pp
  %pr1_0 = add i64 %pq1_0, %q
  %py1_0 = getelementptr inbounds float, ptr %yn, i64 %pr1_0
  store float %pe1_0, ptr %py1_0, align 4
  %pe1_1 = extractelement <8 x float> %mx1, i64 1
  %pc1_1 = add i64 %o0, 9
  %pq1_1 = mul i64 %pc1_1, %pp
  %pr1_1 = add i64 %pq1_1, %q
  %py1_1 = getelementptr inbounds float, ptr %yn, i64 %pr1_1
  store float %pe1_1, ptr %py1_1, align 4
  %pe1_2 = extractelement <8 x float> %mx1, i64 2
  %pc1_2 = add i64 %o0, 10
  %pq1_2 = mul i64 %pc1_2, %pp
  %pr1_2 = add i64 %pq1_2, %q
  %py1_2 = getelementptr inbounds float, ptr %yn, i64 %pr1_2
  store float %pe1_2, ptr %py1_2, align 4
  %pe1_3 = extractelement <8 x float> %mx1, i64 3
  %pc1_3 = add i64 %o0, 11
  %pq1_3 = mul i64 %pc1_3, %pp
  %pr1_3 = add i64 %pq1_3, %q
  %py1_3 = getelementptr inbounds float, ptr %yn, i64 %pr1_3
  store float %pe1_3, ptr %py1_3, align 4
  %pe1_4 = extractelement <8 x float> %mx1, i64 4
  %pc1_4 = add i64 %o0, 12
  %pq1_4 = mul i64 %pc1_4, %pp
  %pr1_4 = add i64 %pq1_4, %q
  %py1_4 = getelementptr inbounds float, ptr %yn, i64 %pr1_4
  store float %pe1_4, ptr %py1_4, align 4
  %pe1_5 = extractelement <8 x float> %mx1, i64 5
  %pc1_5 = add i64 %o0, 13
  %pq1_5 = mul i64 %pc1_5, %pp
  %pr1_5 = add i64 %pq1_5, %q
  %py1_5 = getelementptr inbounds float, ptr %yn, i64 %pr1_5
  store float %pe1_5, ptr %py1_5, align 4
  %pe1_6 = extractelement <8 x float> %mx1, i64 6
  %pc1_6 = add i64 %o0, 14
  %pq1_6 = mul i64 %pc1_6, %pp
  %pr1_6 = add i64 %pq1_6, %q
  %py1_6 = getelementptr inbounds float, ptr %yn, i64 %pr1_6
  store float %pe1_6, ptr %py1_6, align 4
  %pe1_7 = extractelement <8 x float> %mx1, i64 7
  %pc1_7 = add i64 %o0, 15
  %pq1_7 = mul i64 %pc1_7, %pp
  %pr1_7 = add i64 %pq1_7, %q
  %py1_7 = getelementptr inbounds float, ptr %yn, i64 %pr1_7
  store float %pe1_7, ptr %py1_7, align 4
  br label %t.latch
t.spill:
  %sp0 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 0
  store <8 x float> %mx0, ptr %sp0, align 32
  %sp1 = getelementptr inbounds [8 x <8 x float>], ptr %acc, i64 0, i64 1
  store <8 x float> %mx1, ptr %sp1, align 32
  br label %so.loop
so.loop:
  %oo = phi i64 [ 0, %t.spill ], [ %oo.next, %so.loop ]
  %pa = getelementptr inbounds float, ptr %acc, i64 %oo
  %v = load float, ptr %pa, align 4
  %og = add i64 %o0, %oo
  %ogp = mul i64 %og, %pp
  %yo = add i64 %ogp, %q
  %py = getelementptr inbounds float, ptr %yn, i64 %yo
  store float %v, ptr %py, align 4
  %oo.next = add nuw nsw i64 %oo, 1
  %oo.done = icmp eq i64 %oo.next, %oleft
  br i1 %oo.done, label %t.latch, label %so.loop
t.latch:
  %t.next = add nuw nsw i64 %t, 1
  %t.done = icmp eq i64 %t.next, %obt
  br i1 %t.done, label %p.latch, label %t.loop
p.latch:
  %p.next = add nuw nsw i64 %p0, 4
  %p.done = icmp sge i64 %p.next, %np
  br i1 %p.done, label %n.latch, label %p.loop
n.latch:
  %n.next = add nuw nsw i64 %n, 1
  %n.done = icmp eq i64 %n.next, %nn
  br i1 %n.done, label %exit, label %n.loop
exit:
  ret void
}

; numpy's maximum(a, b) on eight lanes: a where a > b or a is NaN, else b (pool.ll's np_max8p)
define internal <8 x float> @dc_np_max8(<8 x float> %a, <8 x float> %b) alwaysinline nounwind readnone {
  %gt = fcmp ogt <8 x float> %a, %b
  %nan = fcmp uno <8 x float> %a, %a
  %keep = or <8 x i1> %gt, %nan
  %r = select <8 x i1> %keep, <8 x float> %a, <8 x float> %b
  ret <8 x float> %r
}

; A stride-1 convolution's weight gradient for few taps or output channels (the first layer of a
; CNN: 1 or 3 input channels), vectorized over output positions instead of channels:
;   acc[o, k, lane] += g[n, o, oh, ow] * xp[n * XS + koff[k] + oh * Wp + ow]   (ow = ow0 + lane)
; for every image n, output row oh and block of 8 output columns ow0 (the last one masked), in a
; tile of OT output channels x KT taps (OT * KT <8 x float> accumulators: OT + KT loads per OT * KT
; FMAs); acc [O4, K3, 8] (O4, K3: O and K rounded up to the tile) is the caller's zeroed scratch,
; loaded and stored back once per image and tile (an image's g and x stay in L1 across the tiles),
; and the caller sums its 8 lanes. Channels past O read channel O - 1 and taps past K offset 0:
; their accumulators are scratch rows the caller drops.
;   d = [N, O, K, OH, OW, XS, Wp, O4, K3]  (i64)
define void @grad_weight_rows_o4k3_f32(ptr noalias nocapture readonly %xp, ptr noalias nocapture readonly %g,
                    ptr noalias nocapture %acc, ptr noalias nocapture readonly %d,
                    ptr noalias nocapture readonly %koff) nounwind #3 {
entry:
  %dp0 = getelementptr inbounds i64, ptr %d, i64 0
  %nn = load i64, ptr %dp0
  %dp1 = getelementptr inbounds i64, ptr %d, i64 1
  %no = load i64, ptr %dp1
  %dp2 = getelementptr inbounds i64, ptr %d, i64 2
  %nk = load i64, ptr %dp2
  %dp3 = getelementptr inbounds i64, ptr %d, i64 3
  %oh = load i64, ptr %dp3
  %dp4 = getelementptr inbounds i64, ptr %d, i64 4
  %ow = load i64, ptr %dp4
  %dp5 = getelementptr inbounds i64, ptr %d, i64 5
  %xs = load i64, ptr %dp5
  %dp6 = getelementptr inbounds i64, ptr %d, i64 6
  %wp = load i64, ptr %dp6
  %dp7 = getelementptr inbounds i64, ptr %d, i64 7
  %o4 = load i64, ptr %dp7
  %dp8 = getelementptr inbounds i64, ptr %d, i64 8
  %k3 = load i64, ptr %dp8
  %plane = mul i64 %oh, %ow
  %gs = mul i64 %no, %plane
  %olast = sub i64 %no, 1
  %ow8 = and i64 %ow, -8
  %owrest = sub i64 %ow, %ow8
  %hasrest = icmp sgt i64 %owrest, 0
  %r32 = trunc i64 %owrest to i32
  %rs = insertelement <8 x i32> poison, i32 %r32, i64 0
  %rsplat = shufflevector <8 x i32> %rs, <8 x i32> poison, <8 x i32> zeroinitializer
  %rmask = icmp slt <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>, %rsplat
  %z1 = icmp sle i64 %nn, 0
  %z2 = icmp sle i64 %no, 0
  %z3 = icmp sle i64 %nk, 0
  %z4 = icmp sle i64 %plane, 0
  %z12 = or i1 %z1, %z2
  %z34 = or i1 %z3, %z4
  %empty = or i1 %z12, %z34
  br i1 %empty, label %exit, label %n.loop
n.loop:
  %n = phi i64 [ 0, %entry ], [ %n.next, %n.latch ]
  %xno = mul i64 %n, %xs
  %xn = getelementptr inbounds float, ptr %xp, i64 %xno
  %gno = mul i64 %n, %gs
  %gn = getelementptr inbounds float, ptr %g, i64 %gno
  br label %o.loop
o.loop:
  %o0 = phi i64 [ 0, %n.loop ], [ %o.next, %o.latch ]
  %or0 = add i64 %o0, 0
  %ob0 = icmp slt i64 %or0, %no
  %oc0 = select i1 %ob0, i64 %or0, i64 %olast
  %go0 = mul i64 %oc0, %plane
  %gr0 = getelementptr inbounds float, ptr %gn, i64 %go0
  %or1 = add i64 %o0, 1
  %ob1 = icmp slt i64 %or1, %no
  %oc1 = select i1 %ob1, i64 %or1, i64 %olast
  %go1 = mul i64 %oc1, %plane
  %gr1 = getelementptr inbounds float, ptr %gn, i64 %go1
  %or2 = add i64 %o0, 2
  %ob2 = icmp slt i64 %or2, %no
  %oc2 = select i1 %ob2, i64 %or2, i64 %olast
  %go2 = mul i64 %oc2, %plane
  %gr2 = getelementptr inbounds float, ptr %gn, i64 %go2
  %or3 = add i64 %o0, 3
  %ob3 = icmp slt i64 %or3, %no
  %oc3 = select i1 %ob3, i64 %or3, i64 %olast
  %go3 = mul i64 %oc3, %plane
  %gr3 = getelementptr inbounds float, ptr %gn, i64 %go3
  br label %k.loop
k.loop:
  %k0 = phi i64 [ 0, %o.loop ], [ %k.next, %k.latch ]
  %kt0 = add i64 %k0, 0
  %pko0 = getelementptr inbounds i64, ptr %koff, i64 %kt0
  %ko0 = load i64, ptr %pko0
  %xk0 = getelementptr inbounds float, ptr %xn, i64 %ko0
  %kt1 = add i64 %k0, 1
  %pko1 = getelementptr inbounds i64, ptr %koff, i64 %kt1
  %ko1 = load i64, ptr %pko1
  %xk1 = getelementptr inbounds float, ptr %xn, i64 %ko1
  %kt2 = add i64 %k0, 2
  %pko2 = getelementptr inbounds i64, ptr %koff, i64 %kt2
  %ko2 = load i64, ptr %pko2
  %xk2 = getelementptr inbounds float, ptr %xn, i64 %ko2
  %ai0_0a = mul i64 %or0, %k3
  %ai0_0b = add i64 %ai0_0a, %kt0
  %ai0_0 = mul i64 %ai0_0b, 8
  %pa0_0 = getelementptr inbounds float, ptr %acc, i64 %ai0_0
  %a0_0_0 = load <8 x float>, ptr %pa0_0, align 4
  %ai0_1a = mul i64 %or0, %k3
  %ai0_1b = add i64 %ai0_1a, %kt1
  %ai0_1 = mul i64 %ai0_1b, 8
  %pa0_1 = getelementptr inbounds float, ptr %acc, i64 %ai0_1
  %a0_0_1 = load <8 x float>, ptr %pa0_1, align 4
  %ai0_2a = mul i64 %or0, %k3
  %ai0_2b = add i64 %ai0_2a, %kt2
  %ai0_2 = mul i64 %ai0_2b, 8
  %pa0_2 = getelementptr inbounds float, ptr %acc, i64 %ai0_2
  %a0_0_2 = load <8 x float>, ptr %pa0_2, align 4
  %ai1_0a = mul i64 %or1, %k3
  %ai1_0b = add i64 %ai1_0a, %kt0
  %ai1_0 = mul i64 %ai1_0b, 8
  %pa1_0 = getelementptr inbounds float, ptr %acc, i64 %ai1_0
  %a0_1_0 = load <8 x float>, ptr %pa1_0, align 4
  %ai1_1a = mul i64 %or1, %k3
  %ai1_1b = add i64 %ai1_1a, %kt1
  %ai1_1 = mul i64 %ai1_1b, 8
  %pa1_1 = getelementptr inbounds float, ptr %acc, i64 %ai1_1
  %a0_1_1 = load <8 x float>, ptr %pa1_1, align 4
  %ai1_2a = mul i64 %or1, %k3
  %ai1_2b = add i64 %ai1_2a, %kt2
  %ai1_2 = mul i64 %ai1_2b, 8
  %pa1_2 = getelementptr inbounds float, ptr %acc, i64 %ai1_2
  %a0_1_2 = load <8 x float>, ptr %pa1_2, align 4
  %ai2_0a = mul i64 %or2, %k3
  %ai2_0b = add i64 %ai2_0a, %kt0
  %ai2_0 = mul i64 %ai2_0b, 8
  %pa2_0 = getelementptr inbounds float, ptr %acc, i64 %ai2_0
  %a0_2_0 = load <8 x float>, ptr %pa2_0, align 4
  %ai2_1a = mul i64 %or2, %k3
  %ai2_1b = add i64 %ai2_1a, %kt1
  %ai2_1 = mul i64 %ai2_1b, 8
  %pa2_1 = getelementptr inbounds float, ptr %acc, i64 %ai2_1
  %a0_2_1 = load <8 x float>, ptr %pa2_1, align 4
  %ai2_2a = mul i64 %or2, %k3
  %ai2_2b = add i64 %ai2_2a, %kt2
  %ai2_2 = mul i64 %ai2_2b, 8
  %pa2_2 = getelementptr inbounds float, ptr %acc, i64 %ai2_2
  %a0_2_2 = load <8 x float>, ptr %pa2_2, align 4
  %ai3_0a = mul i64 %or3, %k3
  %ai3_0b = add i64 %ai3_0a, %kt0
  %ai3_0 = mul i64 %ai3_0b, 8
  %pa3_0 = getelementptr inbounds float, ptr %acc, i64 %ai3_0
  %a0_3_0 = load <8 x float>, ptr %pa3_0, align 4
  %ai3_1a = mul i64 %or3, %k3
  %ai3_1b = add i64 %ai3_1a, %kt1
  %ai3_1 = mul i64 %ai3_1b, 8
  %pa3_1 = getelementptr inbounds float, ptr %acc, i64 %ai3_1
  %a0_3_1 = load <8 x float>, ptr %pa3_1, align 4
  %ai3_2a = mul i64 %or3, %k3
  %ai3_2b = add i64 %ai3_2a, %kt2
  %ai3_2 = mul i64 %ai3_2b, 8
  %pa3_2 = getelementptr inbounds float, ptr %acc, i64 %ai3_2
  %a0_3_2 = load <8 x float>, ptr %pa3_2, align 4
  br label %h.loop
h.loop:
  %h = phi i64 [ 0, %k.loop ], [ %h.next, %h.latch ]
  %ah0_0 = phi <8 x float> [ %a0_0_0, %k.loop ], [ %aw0_0, %h.latch ]
  %ah0_1 = phi <8 x float> [ %a0_0_1, %k.loop ], [ %aw0_1, %h.latch ]
  %ah0_2 = phi <8 x float> [ %a0_0_2, %k.loop ], [ %aw0_2, %h.latch ]
  %ah1_0 = phi <8 x float> [ %a0_1_0, %k.loop ], [ %aw1_0, %h.latch ]
  %ah1_1 = phi <8 x float> [ %a0_1_1, %k.loop ], [ %aw1_1, %h.latch ]
  %ah1_2 = phi <8 x float> [ %a0_1_2, %k.loop ], [ %aw1_2, %h.latch ]
  %ah2_0 = phi <8 x float> [ %a0_2_0, %k.loop ], [ %aw2_0, %h.latch ]
  %ah2_1 = phi <8 x float> [ %a0_2_1, %k.loop ], [ %aw2_1, %h.latch ]
  %ah2_2 = phi <8 x float> [ %a0_2_2, %k.loop ], [ %aw2_2, %h.latch ]
  %ah3_0 = phi <8 x float> [ %a0_3_0, %k.loop ], [ %aw3_0, %h.latch ]
  %ah3_1 = phi <8 x float> [ %a0_3_1, %k.loop ], [ %aw3_1, %h.latch ]
  %ah3_2 = phi <8 x float> [ %a0_3_2, %k.loop ], [ %aw3_2, %h.latch ]
  %hg = mul i64 %h, %ow
  %hx = mul i64 %h, %wp
  %hasv = icmp sgt i64 %ow8, 0
  br i1 %hasv, label %w.loop, label %w.done
w.loop:
  %c = phi i64 [ 0, %h.loop ], [ %c.next, %w.loop ]
  %av0_0 = phi <8 x float> [ %ah0_0, %h.loop ], [ %an0_0, %w.loop ]
  %av0_1 = phi <8 x float> [ %ah0_1, %h.loop ], [ %an0_1, %w.loop ]
  %av0_2 = phi <8 x float> [ %ah0_2, %h.loop ], [ %an0_2, %w.loop ]
  %av1_0 = phi <8 x float> [ %ah1_0, %h.loop ], [ %an1_0, %w.loop ]
  %av1_1 = phi <8 x float> [ %ah1_1, %h.loop ], [ %an1_1, %w.loop ]
  %av1_2 = phi <8 x float> [ %ah1_2, %h.loop ], [ %an1_2, %w.loop ]
  %av2_0 = phi <8 x float> [ %ah2_0, %h.loop ], [ %an2_0, %w.loop ]
  %av2_1 = phi <8 x float> [ %ah2_1, %h.loop ], [ %an2_1, %w.loop ]
  %av2_2 = phi <8 x float> [ %ah2_2, %h.loop ], [ %an2_2, %w.loop ]
  %av3_0 = phi <8 x float> [ %ah3_0, %h.loop ], [ %an3_0, %w.loop ]
  %av3_1 = phi <8 x float> [ %ah3_1, %h.loop ], [ %an3_1, %w.loop ]
  %av3_2 = phi <8 x float> [ %ah3_2, %h.loop ], [ %an3_2, %w.loop ]
  %gc = add i64 %hg, %c
  %xc = add i64 %hx, %c
  %pvg0 = getelementptr inbounds float, ptr %gr0, i64 %gc
  %vg0 = load <8 x float>, ptr %pvg0, align 4
  %pvg1 = getelementptr inbounds float, ptr %gr1, i64 %gc
  %vg1 = load <8 x float>, ptr %pvg1, align 4
  %pvg2 = getelementptr inbounds float, ptr %gr2, i64 %gc
  %vg2 = load <8 x float>, ptr %pvg2, align 4
  %pvg3 = getelementptr inbounds float, ptr %gr3, i64 %gc
  %vg3 = load <8 x float>, ptr %pvg3, align 4
  %pvx0 = getelementptr inbounds float, ptr %xk0, i64 %xc
  %vx0 = load <8 x float>, ptr %pvx0, align 4
  %pvx1 = getelementptr inbounds float, ptr %xk1, i64 %xc
  %vx1 = load <8 x float>, ptr %pvx1, align 4
  %pvx2 = getelementptr inbounds float, ptr %xk2, i64 %xc
  %vx2 = load <8 x float>, ptr %pvx2, align 4
  %an0_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg0, <8 x float> %vx0, <8 x float> %av0_0)
  %an0_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg0, <8 x float> %vx1, <8 x float> %av0_1)
  %an0_2 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg0, <8 x float> %vx2, <8 x float> %av0_2)
  %an1_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg1, <8 x float> %vx0, <8 x float> %av1_0)
  %an1_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg1, <8 x float> %vx1, <8 x float> %av1_1)
  %an1_2 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg1, <8 x float> %vx2, <8 x float> %av1_2)
  %an2_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg2, <8 x float> %vx0, <8 x float> %av2_0)
  %an2_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg2, <8 x float> %vx1, <8 x float> %av2_1)
  %an2_2 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg2, <8 x float> %vx2, <8 x float> %av2_2)
  %an3_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg3, <8 x float> %vx0, <8 x float> %av3_0)
  %an3_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg3, <8 x float> %vx1, <8 x float> %av3_1)
  %an3_2 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %vg3, <8 x float> %vx2, <8 x float> %av3_2)
  %c.next = add nuw nsw i64 %c, 8
  %c.done = icmp eq i64 %c.next, %ow8
  br i1 %c.done, label %w.done, label %w.loop
w.done:
  %ad0_0 = phi <8 x float> [ %ah0_0, %h.loop ], [ %an0_0, %w.loop ]
  %ad0_1 = phi <8 x float> [ %ah0_1, %h.loop ], [ %an0_1, %w.loop ]
  %ad0_2 = phi <8 x float> [ %ah0_2, %h.loop ], [ %an0_2, %w.loop ]
  %ad1_0 = phi <8 x float> [ %ah1_0, %h.loop ], [ %an1_0, %w.loop ]
  %ad1_1 = phi <8 x float> [ %ah1_1, %h.loop ], [ %an1_1, %w.loop ]
  %ad1_2 = phi <8 x float> [ %ah1_2, %h.loop ], [ %an1_2, %w.loop ]
  %ad2_0 = phi <8 x float> [ %ah2_0, %h.loop ], [ %an2_0, %w.loop ]
  %ad2_1 = phi <8 x float> [ %ah2_1, %h.loop ], [ %an2_1, %w.loop ]
  %ad2_2 = phi <8 x float> [ %ah2_2, %h.loop ], [ %an2_2, %w.loop ]
  %ad3_0 = phi <8 x float> [ %ah3_0, %h.loop ], [ %an3_0, %w.loop ]
  %ad3_1 = phi <8 x float> [ %ah3_1, %h.loop ], [ %an3_1, %w.loop ]
  %ad3_2 = phi <8 x float> [ %ah3_2, %h.loop ], [ %an3_2, %w.loop ]
  br i1 %hasrest, label %w.tail, label %h.latch
w.tail:
  ; the row's last OW mod 8 columns: masked loads (zeros past the row add nothing)
  %gt = add i64 %hg, %ow8
  %xt = add i64 %hx, %ow8
  %ptg0 = getelementptr inbounds float, ptr %gr0, i64 %gt
  %tg0 = call <8 x float> @llvm.masked.load.v8f32.p0(ptr %ptg0, i32 4, <8 x i1> %rmask, <8 x float> zeroinitializer)
  %ptg1 = getelementptr inbounds float, ptr %gr1, i64 %gt
  %tg1 = call <8 x float> @llvm.masked.load.v8f32.p0(ptr %ptg1, i32 4, <8 x i1> %rmask, <8 x float> zeroinitializer)
  %ptg2 = getelementptr inbounds float, ptr %gr2, i64 %gt
  %tg2 = call <8 x float> @llvm.masked.load.v8f32.p0(ptr %ptg2, i32 4, <8 x i1> %rmask, <8 x float> zeroinitializer)
  %ptg3 = getelementptr inbounds float, ptr %gr3, i64 %gt
  %tg3 = call <8 x float> @llvm.masked.load.v8f32.p0(ptr %ptg3, i32 4, <8 x i1> %rmask, <8 x float> zeroinitializer)
  %ptx0 = getelementptr inbounds float, ptr %xk0, i64 %xt
  %tx0 = call <8 x float> @llvm.masked.load.v8f32.p0(ptr %ptx0, i32 4, <8 x i1> %rmask, <8 x float> zeroinitializer)
  %ptx1 = getelementptr inbounds float, ptr %xk1, i64 %xt
  %tx1 = call <8 x float> @llvm.masked.load.v8f32.p0(ptr %ptx1, i32 4, <8 x i1> %rmask, <8 x float> zeroinitializer)
  %ptx2 = getelementptr inbounds float, ptr %xk2, i64 %xt
  %tx2 = call <8 x float> @llvm.masked.load.v8f32.p0(ptr %ptx2, i32 4, <8 x i1> %rmask, <8 x float> zeroinitializer)
  %at0_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg0, <8 x float> %tx0, <8 x float> %ad0_0)
  %at0_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg0, <8 x float> %tx1, <8 x float> %ad0_1)
  %at0_2 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg0, <8 x float> %tx2, <8 x float> %ad0_2)
  %at1_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg1, <8 x float> %tx0, <8 x float> %ad1_0)
  %at1_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg1, <8 x float> %tx1, <8 x float> %ad1_1)
  %at1_2 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg1, <8 x float> %tx2, <8 x float> %ad1_2)
  %at2_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg2, <8 x float> %tx0, <8 x float> %ad2_0)
  %at2_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg2, <8 x float> %tx1, <8 x float> %ad2_1)
  %at2_2 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg2, <8 x float> %tx2, <8 x float> %ad2_2)
  %at3_0 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg3, <8 x float> %tx0, <8 x float> %ad3_0)
  %at3_1 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg3, <8 x float> %tx1, <8 x float> %ad3_1)
  %at3_2 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %tg3, <8 x float> %tx2, <8 x float> %ad3_2)
  br label %h.latch
h.latch:
  %aw0_0 = phi <8 x float> [ %ad0_0, %w.done ], [ %at0_0, %w.tail ]
  %aw0_1 = phi <8 x float> [ %ad0_1, %w.done ], [ %at0_1, %w.tail ]
  %aw0_2 = phi <8 x float> [ %ad0_2, %w.done ], [ %at0_2, %w.tail ]
  %aw1_0 = phi <8 x float> [ %ad1_0, %w.done ], [ %at1_0, %w.tail ]
  %aw1_1 = phi <8 x float> [ %ad1_1, %w.done ], [ %at1_1, %w.tail ]
  %aw1_2 = phi <8 x float> [ %ad1_2, %w.done ], [ %at1_2, %w.tail ]
  %aw2_0 = phi <8 x float> [ %ad2_0, %w.done ], [ %at2_0, %w.tail ]
  %aw2_1 = phi <8 x float> [ %ad2_1, %w.done ], [ %at2_1, %w.tail ]
  %aw2_2 = phi <8 x float> [ %ad2_2, %w.done ], [ %at2_2, %w.tail ]
  %aw3_0 = phi <8 x float> [ %ad3_0, %w.done ], [ %at3_0, %w.tail ]
  %aw3_1 = phi <8 x float> [ %ad3_1, %w.done ], [ %at3_1, %w.tail ]
  %aw3_2 = phi <8 x float> [ %ad3_2, %w.done ], [ %at3_2, %w.tail ]
  %h.next = add nuw nsw i64 %h, 1
  %h.done = icmp eq i64 %h.next, %oh
  br i1 %h.done, label %k.store, label %h.loop
k.store:
  store <8 x float> %aw0_0, ptr %pa0_0, align 4
  store <8 x float> %aw0_1, ptr %pa0_1, align 4
  store <8 x float> %aw0_2, ptr %pa0_2, align 4
  store <8 x float> %aw1_0, ptr %pa1_0, align 4
  store <8 x float> %aw1_1, ptr %pa1_1, align 4
  store <8 x float> %aw1_2, ptr %pa1_2, align 4
  store <8 x float> %aw2_0, ptr %pa2_0, align 4
  store <8 x float> %aw2_1, ptr %pa2_1, align 4
  store <8 x float> %aw2_2, ptr %pa2_2, align 4
  store <8 x float> %aw3_0, ptr %pa3_0, align 4
  store <8 x float> %aw3_1, ptr %pa3_1, align 4
  store <8 x float> %aw3_2, ptr %pa3_2, align 4
  br label %k.latch
k.latch:
  %k.next = add nuw nsw i64 %k0, 3
  %k.done = icmp sge i64 %k.next, %k3
  br i1 %k.done, label %o.latch, label %k.loop
o.latch:
  %o.next = add nuw nsw i64 %o0, 4
  %o.done = icmp sge i64 %o.next, %o4
  br i1 %o.done, label %n.latch, label %o.loop
n.latch:
  %n.next = add nuw nsw i64 %n, 1
  %n.done = icmp eq i64 %n.next, %nn
  br i1 %n.done, label %exit, label %n.loop
exit:
  ret void
}

; The same tilings on 16 lanes (blocks of 16 output channels, weights packed as
; wt[(b * K + k) * 16 + lane] = w[b * 16 + lane, k], bias OBT * B * 16 floats; d as above with OBT
; counting tiles of B blocks of 16), for hosts with 512-bit vectors (AVX-512): 4 positions x 32
; channels in 8 accumulators of 16 lanes (r4b2w16), twice the multiply-adds per instruction, or
; 4 positions x 16 channels (r4b1w16, half the instructions of r4b2's 8-lane tile for 9 to 16
; channels). Each lane runs the same fmuladd chain over k as the 8-lane kernels: the same bits.

define void @direct_conv_r4b2w16_f32(ptr noalias nocapture readonly %xp, ptr noalias nocapture readonly %wt,
                    ptr noalias nocapture writeonly %y, ptr noalias nocapture readonly %d,
                    ptr noalias nocapture readonly %base, ptr noalias nocapture readonly %koff,
                    ptr noalias nocapture readonly %bias) nounwind #4 {
entry:
  %d0 = getelementptr inbounds i64, ptr %d, i64 0
  %nn = load i64, ptr %d0
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %nk = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %xs = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %np = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %no = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %obt = load i64, ptr %d5
  %d6 = getelementptr inbounds i64, ptr %d, i64 6
  %flags = load i64, ptr %d6
  %acc = alloca [8 x <16 x float>], align 64
  %op = mul i64 %no, %np
  %fb = and i64 %flags, 1
  %hasbias = icmp ne i64 %fb, 0
  %fr = and i64 %flags, 2
  %hasrelu = icmp ne i64 %fr, 0
  %z1 = icmp sle i64 %nn, 0
  %z2 = icmp sle i64 %nk, 0
  %z3 = icmp sle i64 %np, 0
  %z4 = icmp sle i64 %obt, 0
  %z12 = or i1 %z1, %z2
  %z34 = or i1 %z3, %z4
  %empty = or i1 %z12, %z34
  br i1 %empty, label %exit, label %n.loop
n.loop:
  %n = phi i64 [ 0, %entry ], [ %n.next, %n.latch ]
  %xno = mul i64 %n, %xs
  %xn = getelementptr inbounds float, ptr %xp, i64 %xno
  %yno = mul i64 %n, %op
  %yn = getelementptr inbounds float, ptr %y, i64 %yno
  br label %p.loop
p.loop:
  %p0 = phi i64 [ 0, %n.loop ], [ %p.next, %p.latch ]
  %bi0 = add i64 %p0, 0
  %pb0 = getelementptr inbounds i64, ptr %base, i64 %bi0
  %b0 = load i64, ptr %pb0
  %xr0 = getelementptr inbounds float, ptr %xn, i64 %b0
  %bi1 = add i64 %p0, 1
  %pb1 = getelementptr inbounds i64, ptr %base, i64 %bi1
  %b1 = load i64, ptr %pb1
  %xr1 = getelementptr inbounds float, ptr %xn, i64 %b1
  %bi2 = add i64 %p0, 2
  %pb2 = getelementptr inbounds i64, ptr %base, i64 %bi2
  %b2 = load i64, ptr %pb2
  %xr2 = getelementptr inbounds float, ptr %xn, i64 %b2
  %bi3 = add i64 %p0, 3
  %pb3 = getelementptr inbounds i64, ptr %base, i64 %bi3
  %b3 = load i64, ptr %pb3
  %xr3 = getelementptr inbounds float, ptr %xn, i64 %b3
  br label %t.loop
t.loop:
  %t = phi i64 [ 0, %p.loop ], [ %t.next, %t.latch ]
  %tb = mul i64 %t, 32
  %tbk = mul i64 %tb, %nk
  %wtile = getelementptr inbounds float, ptr %wt, i64 %tbk
  br label %k.loop
k.loop:
  %k = phi i64 [ 0, %t.loop ], [ %k.next, %k.loop ]
  %a0_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an0_0, %k.loop ]
  %a0_1 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an0_1, %k.loop ]
  %a1_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an1_0, %k.loop ]
  %a1_1 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an1_1, %k.loop ]
  %a2_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an2_0, %k.loop ]
  %a2_1 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an2_1, %k.loop ]
  %a3_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an3_0, %k.loop ]
  %a3_1 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an3_1, %k.loop ]
  %pko = getelementptr inbounds i64, ptr %koff, i64 %k
  %ko = load i64, ptr %pko
  %px0 = getelementptr inbounds float, ptr %xr0, i64 %ko
  %s0 = load float, ptr %px0, align 4
  %si0 = insertelement <16 x float> poison, float %s0, i64 0
  %x0 = shufflevector <16 x float> %si0, <16 x float> poison, <16 x i32> zeroinitializer
  %px1 = getelementptr inbounds float, ptr %xr1, i64 %ko
  %s1 = load float, ptr %px1, align 4
  %si1 = insertelement <16 x float> poison, float %s1, i64 0
  %x1 = shufflevector <16 x float> %si1, <16 x float> poison, <16 x i32> zeroinitializer
  %px2 = getelementptr inbounds float, ptr %xr2, i64 %ko
  %s2 = load float, ptr %px2, align 4
  %si2 = insertelement <16 x float> poison, float %s2, i64 0
  %x2 = shufflevector <16 x float> %si2, <16 x float> poison, <16 x i32> zeroinitializer
  %px3 = getelementptr inbounds float, ptr %xr3, i64 %ko
  %s3 = load float, ptr %px3, align 4
  %si3 = insertelement <16 x float> poison, float %s3, i64 0
  %x3 = shufflevector <16 x float> %si3, <16 x float> poison, <16 x i32> zeroinitializer
  %k8 = mul i64 %k, 16
  %wbo0 = mul i64 %nk, 0
  %wbk0 = add i64 %wbo0, %k8
  %pw0 = getelementptr inbounds float, ptr %wtile, i64 %wbk0
  %w0 = load <16 x float>, ptr %pw0, align 4
  %wbo1 = mul i64 %nk, 16
  %wbk1 = add i64 %wbo1, %k8
  %pw1 = getelementptr inbounds float, ptr %wtile, i64 %wbk1
  %w1 = load <16 x float>, ptr %pw1, align 4
  %an0_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x0, <16 x float> %w0, <16 x float> %a0_0)
  %an0_1 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x0, <16 x float> %w1, <16 x float> %a0_1)
  %an1_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x1, <16 x float> %w0, <16 x float> %a1_0)
  %an1_1 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x1, <16 x float> %w1, <16 x float> %a1_1)
  %an2_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x2, <16 x float> %w0, <16 x float> %a2_0)
  %an2_1 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x2, <16 x float> %w1, <16 x float> %a2_1)
  %an3_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x3, <16 x float> %w0, <16 x float> %a3_0)
  %an3_1 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x3, <16 x float> %w1, <16 x float> %a3_1)
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, %nk
  br i1 %k.done, label %t.epilogue, label %k.loop
t.epilogue:
  %o0e = mul i64 %t, 32
  %bo0 = add i64 %o0e, 0
  %pbias0 = getelementptr inbounds float, ptr %bias, i64 %bo0
  %bv0 = load <16 x float>, ptr %pbias0, align 4
  %bo1 = add i64 %o0e, 16
  %pbias1 = getelementptr inbounds float, ptr %bias, i64 %bo1
  %bv1 = load <16 x float>, ptr %pbias1, align 4
  %eb0_0 = fadd <16 x float> %an0_0, %bv0
  %ec0_0 = select i1 %hasbias, <16 x float> %eb0_0, <16 x float> %an0_0
  %eg0_0 = fcmp ogt <16 x float> %ec0_0, zeroinitializer
  %eu0_0 = fcmp uno <16 x float> %ec0_0, %ec0_0
  %ek0_0 = or <16 x i1> %eg0_0, %eu0_0
  %er0_0 = select <16 x i1> %ek0_0, <16 x float> %ec0_0, <16 x float> zeroinitializer
  %en0_0 = select i1 %hasrelu, <16 x float> %er0_0, <16 x float> %ec0_0
  %eb0_1 = fadd <16 x float> %an0_1, %bv1
  %ec0_1 = select i1 %hasbias, <16 x float> %eb0_1, <16 x float> %an0_1
  %eg0_1 = fcmp ogt <16 x float> %ec0_1, zeroinitializer
  %eu0_1 = fcmp uno <16 x float> %ec0_1, %ec0_1
  %ek0_1 = or <16 x i1> %eg0_1, %eu0_1
  %er0_1 = select <16 x i1> %ek0_1, <16 x float> %ec0_1, <16 x float> zeroinitializer
  %en0_1 = select i1 %hasrelu, <16 x float> %er0_1, <16 x float> %ec0_1
  %eb1_0 = fadd <16 x float> %an1_0, %bv0
  %ec1_0 = select i1 %hasbias, <16 x float> %eb1_0, <16 x float> %an1_0
  %eg1_0 = fcmp ogt <16 x float> %ec1_0, zeroinitializer
  %eu1_0 = fcmp uno <16 x float> %ec1_0, %ec1_0
  %ek1_0 = or <16 x i1> %eg1_0, %eu1_0
  %er1_0 = select <16 x i1> %ek1_0, <16 x float> %ec1_0, <16 x float> zeroinitializer
  %en1_0 = select i1 %hasrelu, <16 x float> %er1_0, <16 x float> %ec1_0
  %eb1_1 = fadd <16 x float> %an1_1, %bv1
  %ec1_1 = select i1 %hasbias, <16 x float> %eb1_1, <16 x float> %an1_1
  %eg1_1 = fcmp ogt <16 x float> %ec1_1, zeroinitializer
  %eu1_1 = fcmp uno <16 x float> %ec1_1, %ec1_1
  %ek1_1 = or <16 x i1> %eg1_1, %eu1_1
  %er1_1 = select <16 x i1> %ek1_1, <16 x float> %ec1_1, <16 x float> zeroinitializer
  %en1_1 = select i1 %hasrelu, <16 x float> %er1_1, <16 x float> %ec1_1
  %eb2_0 = fadd <16 x float> %an2_0, %bv0
  %ec2_0 = select i1 %hasbias, <16 x float> %eb2_0, <16 x float> %an2_0
  %eg2_0 = fcmp ogt <16 x float> %ec2_0, zeroinitializer
  %eu2_0 = fcmp uno <16 x float> %ec2_0, %ec2_0
  %ek2_0 = or <16 x i1> %eg2_0, %eu2_0
  %er2_0 = select <16 x i1> %ek2_0, <16 x float> %ec2_0, <16 x float> zeroinitializer
  %en2_0 = select i1 %hasrelu, <16 x float> %er2_0, <16 x float> %ec2_0
  %eb2_1 = fadd <16 x float> %an2_1, %bv1
  %ec2_1 = select i1 %hasbias, <16 x float> %eb2_1, <16 x float> %an2_1
  %eg2_1 = fcmp ogt <16 x float> %ec2_1, zeroinitializer
  %eu2_1 = fcmp uno <16 x float> %ec2_1, %ec2_1
  %ek2_1 = or <16 x i1> %eg2_1, %eu2_1
  %er2_1 = select <16 x i1> %ek2_1, <16 x float> %ec2_1, <16 x float> zeroinitializer
  %en2_1 = select i1 %hasrelu, <16 x float> %er2_1, <16 x float> %ec2_1
  %eb3_0 = fadd <16 x float> %an3_0, %bv0
  %ec3_0 = select i1 %hasbias, <16 x float> %eb3_0, <16 x float> %an3_0
  %eg3_0 = fcmp ogt <16 x float> %ec3_0, zeroinitializer
  %eu3_0 = fcmp uno <16 x float> %ec3_0, %ec3_0
  %ek3_0 = or <16 x i1> %eg3_0, %eu3_0
  %er3_0 = select <16 x i1> %ek3_0, <16 x float> %ec3_0, <16 x float> zeroinitializer
  %en3_0 = select i1 %hasrelu, <16 x float> %er3_0, <16 x float> %ec3_0
  %eb3_1 = fadd <16 x float> %an3_1, %bv1
  %ec3_1 = select i1 %hasbias, <16 x float> %eb3_1, <16 x float> %an3_1
  %eg3_1 = fcmp ogt <16 x float> %ec3_1, zeroinitializer
  %eu3_1 = fcmp uno <16 x float> %ec3_1, %ec3_1
  %ek3_1 = or <16 x i1> %eg3_1, %eu3_1
  %er3_1 = select <16 x i1> %ek3_1, <16 x float> %ec3_1, <16 x float> zeroinitializer
  %en3_1 = select i1 %hasrelu, <16 x float> %er3_1, <16 x float> %ec3_1
  br label %t.store
t.store:
  %o0 = mul i64 %t, 32
  %rleft = sub i64 %np, %p0
  %rlt = icmp slt i64 %rleft, 4
  %rn = select i1 %rlt, i64 %rleft, i64 4
  %oleft = sub i64 %no, %o0
  %olt = icmp slt i64 %oleft, 32
  %on = select i1 %olt, i64 %oleft, i64 32
  %partial = or i1 %rlt, %olt
  br i1 %partial, label %t.spill, label %t.vec
t.vec:
  %i01_0 = shufflevector <16 x float> %en0_0, <16 x float> %en1_0, <32 x i32> <i32 0, i32 16, i32 1, i32 17, i32 2, i32 18, i32 3, i32 19, i32 4, i32 20, i32 5, i32 21, i32 6, i32 22, i32 7, i32 23, i32 8, i32 24, i32 9, i32 25, i32 10, i32 26, i32 11, i32 27, i32 12, i32 28, i32 13, i32 29, i32 14, i32 30, i32 15, i32 31>
  %i23_0 = shufflevector <16 x float> %en2_0, <16 x float> %en3_0, <32 x i32> <i32 0, i32 16, i32 1, i32 17, i32 2, i32 18, i32 3, i32 19, i32 4, i32 20, i32 5, i32 21, i32 6, i32 22, i32 7, i32 23, i32 8, i32 24, i32 9, i32 25, i32 10, i32 26, i32 11, i32 27, i32 12, i32 28, i32 13, i32 29, i32 14, i32 30, i32 15, i32 31>
  %iq_0 = shufflevector <32 x float> %i01_0, <32 x float> %i23_0, <64 x i32> <i32 0, i32 1, i32 32, i32 33, i32 2, i32 3, i32 34, i32 35, i32 4, i32 5, i32 36, i32 37, i32 6, i32 7, i32 38, i32 39, i32 8, i32 9, i32 40, i32 41, i32 10, i32 11, i32 42, i32 43, i32 12, i32 13, i32 44, i32 45, i32 14, i32 15, i32 46, i32 47, i32 16, i32 17, i32 48, i32 49, i32 18, i32 19, i32 50, i32 51, i32 20, i32 21, i32 52, i32 53, i32 22, i32 23, i32 54, i32 55, i32 24, i32 25, i32 56, i32 57, i32 26, i32 27, i32 58, i32 59, i32 28, i32 29, i32 60, i32 61, i32 30, i32 31, i32 62, i32 63>
  %c0_0 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %vo0_0 = add i64 %o0, 0
  %vop0_0 = mul i64 %vo0_0, %np
  %vyo0_0 = add i64 %vop0_0, %p0
  %vy0_0 = getelementptr inbounds float, ptr %yn, i64 %vyo0_0
  store <4 x float> %c0_0, ptr %vy0_0, align 4
  %c0_1 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %vo0_1 = add i64 %o0, 1
  %vop0_1 = mul i64 %vo0_1, %np
  %vyo0_1 = add i64 %vop0_1, %p0
  %vy0_1 = getelementptr inbounds float, ptr %yn, i64 %vyo0_1
  store <4 x float> %c0_1, ptr %vy0_1, align 4
  %c0_2 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 8, i32 9, i32 10, i32 11>
  %vo0_2 = add i64 %o0, 2
  %vop0_2 = mul i64 %vo0_2, %np
  %vyo0_2 = add i64 %vop0_2, %p0
  %vy0_2 = getelementptr inbounds float, ptr %yn, i64 %vyo0_2
  store <4 x float> %c0_2, ptr %vy0_2, align 4
  %c0_3 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 12, i32 13, i32 14, i32 15>
  %vo0_3 = add i64 %o0, 3
  %vop0_3 = mul i64 %vo0_3, %np
  %vyo0_3 = add i64 %vop0_3, %p0
  %vy0_3 = getelementptr inbounds float, ptr %yn, i64 %vyo0_3
  store <4 x float> %c0_3, ptr %vy0_3, align 4
  %c0_4 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 16, i32 17, i32 18, i32 19>
  %vo0_4 = add i64 %o0, 4
  %vop0_4 = mul i64 %vo0_4, %np
  %vyo0_4 = add i64 %vop0_4, %p0
  %vy0_4 = getelementptr inbounds float, ptr %yn, i64 %vyo0_4
  store <4 x float> %c0_4, ptr %vy0_4, align 4
  %c0_5 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 20, i32 21, i32 22, i32 23>
  %vo0_5 = add i64 %o0, 5
  %vop0_5 = mul i64 %vo0_5, %np
  %vyo0_5 = add i64 %vop0_5, %p0
  %vy0_5 = getelementptr inbounds float, ptr %yn, i64 %vyo0_5
  store <4 x float> %c0_5, ptr %vy0_5, align 4
  %c0_6 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 24, i32 25, i32 26, i32 27>
  %vo0_6 = add i64 %o0, 6
  %vop0_6 = mul i64 %vo0_6, %np
  %vyo0_6 = add i64 %vop0_6, %p0
  %vy0_6 = getelementptr inbounds float, ptr %yn, i64 %vyo0_6
  store <4 x float> %c0_6, ptr %vy0_6, align 4
  %c0_7 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 28, i32 29, i32 30, i32 31>
  %vo0_7 = add i64 %o0, 7
  %vop0_7 = mul i64 %vo0_7, %np
  %vyo0_7 = add i64 %vop0_7, %p0
  %vy0_7 = getelementptr inbounds float, ptr %yn, i64 %vyo0_7
  store <4 x float> %c0_7, ptr %vy0_7, align 4
  %c0_8 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 32, i32 33, i32 34, i32 35>
  %vo0_8 = add i64 %o0, 8
  %vop0_8 = mul i64 %vo0_8, %np
  %vyo0_8 = add i64 %vop0_8, %p0
  %vy0_8 = getelementptr inbounds float, ptr %yn, i64 %vyo0_8
  store <4 x float> %c0_8, ptr %vy0_8, align 4
  %c0_9 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 36, i32 37, i32 38, i32 39>
  %vo0_9 = add i64 %o0, 9
  %vop0_9 = mul i64 %vo0_9, %np
  %vyo0_9 = add i64 %vop0_9, %p0
  %vy0_9 = getelementptr inbounds float, ptr %yn, i64 %vyo0_9
  store <4 x float> %c0_9, ptr %vy0_9, align 4
  %c0_10 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 40, i32 41, i32 42, i32 43>
  %vo0_10 = add i64 %o0, 10
  %vop0_10 = mul i64 %vo0_10, %np
  %vyo0_10 = add i64 %vop0_10, %p0
  %vy0_10 = getelementptr inbounds float, ptr %yn, i64 %vyo0_10
  store <4 x float> %c0_10, ptr %vy0_10, align 4
  %c0_11 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 44, i32 45, i32 46, i32 47>
  %vo0_11 = add i64 %o0, 11
  %vop0_11 = mul i64 %vo0_11, %np
  %vyo0_11 = add i64 %vop0_11, %p0
  %vy0_11 = getelementptr inbounds float, ptr %yn, i64 %vyo0_11
  store <4 x float> %c0_11, ptr %vy0_11, align 4
  %c0_12 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 48, i32 49, i32 50, i32 51>
  %vo0_12 = add i64 %o0, 12
  %vop0_12 = mul i64 %vo0_12, %np
  %vyo0_12 = add i64 %vop0_12, %p0
  %vy0_12 = getelementptr inbounds float, ptr %yn, i64 %vyo0_12
  store <4 x float> %c0_12, ptr %vy0_12, align 4
  %c0_13 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 52, i32 53, i32 54, i32 55>
  %vo0_13 = add i64 %o0, 13
  %vop0_13 = mul i64 %vo0_13, %np
  %vyo0_13 = add i64 %vop0_13, %p0
  %vy0_13 = getelementptr inbounds float, ptr %yn, i64 %vyo0_13
  store <4 x float> %c0_13, ptr %vy0_13, align 4
  %c0_14 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 56, i32 57, i32 58, i32 59>
  %vo0_14 = add i64 %o0, 14
  %vop0_14 = mul i64 %vo0_14, %np
  %vyo0_14 = add i64 %vop0_14, %p0
  %vy0_14 = getelementptr inbounds float, ptr %yn, i64 %vyo0_14
  store <4 x float> %c0_14, ptr %vy0_14, align 4
  %c0_15 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 60, i32 61, i32 62, i32 63>
  %vo0_15 = add i64 %o0, 15
  %vop0_15 = mul i64 %vo0_15, %np
  %vyo0_15 = add i64 %vop0_15, %p0
  %vy0_15 = getelementptr inbounds float, ptr %yn, i64 %vyo0_15
  store <4 x float> %c0_15, ptr %vy0_15, align 4
  %i01_1 = shufflevector <16 x float> %en0_1, <16 x float> %en1_1, <32 x i32> <i32 0, i32 16, i32 1, i32 17, i32 2, i32 18, i32 3, i32 19, i32 4, i32 20, i32 5, i32 21, i32 6, i32 22, i32 7, i32 23, i32 8, i32 24, i32 9, i32 25, i32 10, i32 26, i32 11, i32 27, i32 12, i32 28, i32 13, i32 29, i32 14, i32 30, i32 15, i32 31>
  %i23_1 = shufflevector <16 x float> %en2_1, <16 x float> %en3_1, <32 x i32> <i32 0, i32 16, i32 1, i32 17, i32 2, i32 18, i32 3, i32 19, i32 4, i32 20, i32 5, i32 21, i32 6, i32 22, i32 7, i32 23, i32 8, i32 24, i32 9, i32 25, i32 10, i32 26, i32 11, i32 27, i32 12, i32 28, i32 13, i32 29, i32 14, i32 30, i32 15, i32 31>
  %iq_1 = shufflevector <32 x float> %i01_1, <32 x float> %i23_1, <64 x i32> <i32 0, i32 1, i32 32, i32 33, i32 2, i32 3, i32 34, i32 35, i32 4, i32 5, i32 36, i32 37, i32 6, i32 7, i32 38, i32 39, i32 8, i32 9, i32 40, i32 41, i32 10, i32 11, i32 42, i32 43, i32 12, i32 13, i32 44, i32 45, i32 14, i32 15, i32 46, i32 47, i32 16, i32 17, i32 48, i32 49, i32 18, i32 19, i32 50, i32 51, i32 20, i32 21, i32 52, i32 53, i32 22, i32 23, i32 54, i32 55, i32 24, i32 25, i32 56, i32 57, i32 26, i32 27, i32 58, i32 59, i32 28, i32 29, i32 60, i32 61, i32 30, i32 31, i32 62, i32 63>
  %c1_0 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %vo1_0 = add i64 %o0, 16
  %vop1_0 = mul i64 %vo1_0, %np
  %vyo1_0 = add i64 %vop1_0, %p0
  %vy1_0 = getelementptr inbounds float, ptr %yn, i64 %vyo1_0
  store <4 x float> %c1_0, ptr %vy1_0, align 4
  %c1_1 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %vo1_1 = add i64 %o0, 17
  %vop1_1 = mul i64 %vo1_1, %np
  %vyo1_1 = add i64 %vop1_1, %p0
  %vy1_1 = getelementptr inbounds float, ptr %yn, i64 %vyo1_1
  store <4 x float> %c1_1, ptr %vy1_1, align 4
  %c1_2 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 8, i32 9, i32 10, i32 11>
  %vo1_2 = add i64 %o0, 18
  %vop1_2 = mul i64 %vo1_2, %np
  %vyo1_2 = add i64 %vop1_2, %p0
  %vy1_2 = getelementptr inbounds float, ptr %yn, i64 %vyo1_2
  store <4 x float> %c1_2, ptr %vy1_2, align 4
  %c1_3 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 12, i32 13, i32 14, i32 15>
  %vo1_3 = add i64 %o0, 19
  %vop1_3 = mul i64 %vo1_3, %np
  %vyo1_3 = add i64 %vop1_3, %p0
  %vy1_3 = getelementptr inbounds float, ptr %yn, i64 %vyo1_3
  store <4 x float> %c1_3, ptr %vy1_3, align 4
  %c1_4 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 16, i32 17, i32 18, i32 19>
  %vo1_4 = add i64 %o0, 20
  %vop1_4 = mul i64 %vo1_4, %np
  %vyo1_4 = add i64 %vop1_4, %p0
  %vy1_4 = getelementptr inbounds float, ptr %yn, i64 %vyo1_4
  store <4 x float> %c1_4, ptr %vy1_4, align 4
  %c1_5 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 20, i32 21, i32 22, i32 23>
  %vo1_5 = add i64 %o0, 21
  %vop1_5 = mul i64 %vo1_5, %np
  %vyo1_5 = add i64 %vop1_5, %p0
  %vy1_5 = getelementptr inbounds float, ptr %yn, i64 %vyo1_5
  store <4 x float> %c1_5, ptr %vy1_5, align 4
  %c1_6 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 24, i32 25, i32 26, i32 27>
  %vo1_6 = add i64 %o0, 22
  %vop1_6 = mul i64 %vo1_6, %np
  %vyo1_6 = add i64 %vop1_6, %p0
  %vy1_6 = getelementptr inbounds float, ptr %yn, i64 %vyo1_6
  store <4 x float> %c1_6, ptr %vy1_6, align 4
  %c1_7 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 28, i32 29, i32 30, i32 31>
  %vo1_7 = add i64 %o0, 23
  %vop1_7 = mul i64 %vo1_7, %np
  %vyo1_7 = add i64 %vop1_7, %p0
  %vy1_7 = getelementptr inbounds float, ptr %yn, i64 %vyo1_7
  store <4 x float> %c1_7, ptr %vy1_7, align 4
  %c1_8 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 32, i32 33, i32 34, i32 35>
  %vo1_8 = add i64 %o0, 24
  %vop1_8 = mul i64 %vo1_8, %np
  %vyo1_8 = add i64 %vop1_8, %p0
  %vy1_8 = getelementptr inbounds float, ptr %yn, i64 %vyo1_8
  store <4 x float> %c1_8, ptr %vy1_8, align 4
  %c1_9 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 36, i32 37, i32 38, i32 39>
  %vo1_9 = add i64 %o0, 25
  %vop1_9 = mul i64 %vo1_9, %np
  %vyo1_9 = add i64 %vop1_9, %p0
  %vy1_9 = getelementptr inbounds float, ptr %yn, i64 %vyo1_9
  store <4 x float> %c1_9, ptr %vy1_9, align 4
  %c1_10 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 40, i32 41, i32 42, i32 43>
  %vo1_10 = add i64 %o0, 26
  %vop1_10 = mul i64 %vo1_10, %np
  %vyo1_10 = add i64 %vop1_10, %p0
  %vy1_10 = getelementptr inbounds float, ptr %yn, i64 %vyo1_10
  store <4 x float> %c1_10, ptr %vy1_10, align 4
  %c1_11 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 44, i32 45, i32 46, i32 47>
  %vo1_11 = add i64 %o0, 27
  %vop1_11 = mul i64 %vo1_11, %np
  %vyo1_11 = add i64 %vop1_11, %p0
  %vy1_11 = getelementptr inbounds float, ptr %yn, i64 %vyo1_11
  store <4 x float> %c1_11, ptr %vy1_11, align 4
  %c1_12 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 48, i32 49, i32 50, i32 51>
  %vo1_12 = add i64 %o0, 28
  %vop1_12 = mul i64 %vo1_12, %np
  %vyo1_12 = add i64 %vop1_12, %p0
  %vy1_12 = getelementptr inbounds float, ptr %yn, i64 %vyo1_12
  store <4 x float> %c1_12, ptr %vy1_12, align 4
  %c1_13 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 52, i32 53, i32 54, i32 55>
  %vo1_13 = add i64 %o0, 29
  %vop1_13 = mul i64 %vo1_13, %np
  %vyo1_13 = add i64 %vop1_13, %p0
  %vy1_13 = getelementptr inbounds float, ptr %yn, i64 %vyo1_13
  store <4 x float> %c1_13, ptr %vy1_13, align 4
  %c1_14 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 56, i32 57, i32 58, i32 59>
  %vo1_14 = add i64 %o0, 30
  %vop1_14 = mul i64 %vo1_14, %np
  %vyo1_14 = add i64 %vop1_14, %p0
  %vy1_14 = getelementptr inbounds float, ptr %yn, i64 %vyo1_14
  store <4 x float> %c1_14, ptr %vy1_14, align 4
  %c1_15 = shufflevector <64 x float> %iq_1, <64 x float> poison, <4 x i32> <i32 60, i32 61, i32 62, i32 63>
  %vo1_15 = add i64 %o0, 31
  %vop1_15 = mul i64 %vo1_15, %np
  %vyo1_15 = add i64 %vop1_15, %p0
  %vy1_15 = getelementptr inbounds float, ptr %yn, i64 %vyo1_15
  store <4 x float> %c1_15, ptr %vy1_15, align 4
  br label %t.latch
t.spill:
  %sp0_0 = getelementptr inbounds [8 x <16 x float>], ptr %acc, i64 0, i64 0
  store <16 x float> %en0_0, ptr %sp0_0, align 64
  %sp0_1 = getelementptr inbounds [8 x <16 x float>], ptr %acc, i64 0, i64 1
  store <16 x float> %en0_1, ptr %sp0_1, align 64
  %sp1_0 = getelementptr inbounds [8 x <16 x float>], ptr %acc, i64 0, i64 2
  store <16 x float> %en1_0, ptr %sp1_0, align 64
  %sp1_1 = getelementptr inbounds [8 x <16 x float>], ptr %acc, i64 0, i64 3
  store <16 x float> %en1_1, ptr %sp1_1, align 64
  %sp2_0 = getelementptr inbounds [8 x <16 x float>], ptr %acc, i64 0, i64 4
  store <16 x float> %en2_0, ptr %sp2_0, align 64
  %sp2_1 = getelementptr inbounds [8 x <16 x float>], ptr %acc, i64 0, i64 5
  store <16 x float> %en2_1, ptr %sp2_1, align 64
  %sp3_0 = getelementptr inbounds [8 x <16 x float>], ptr %acc, i64 0, i64 6
  store <16 x float> %en3_0, ptr %sp3_0, align 64
  %sp3_1 = getelementptr inbounds [8 x <16 x float>], ptr %acc, i64 0, i64 7
  store <16 x float> %en3_1, ptr %sp3_1, align 64
  br label %so.loop
so.loop:
  %oo = phi i64 [ 0, %t.spill ], [ %oo.next, %so.latch ]
  %og = add i64 %o0, %oo
  %ogp = mul i64 %og, %np
  %yo0 = add i64 %ogp, %p0
  %yo = getelementptr inbounds float, ptr %yn, i64 %yo0
  br label %sr.loop
sr.loop:
  %rr = phi i64 [ 0, %so.loop ], [ %rr.next, %sr.loop ]
  %ai0 = mul i64 %rr, 32
  %ai = add i64 %ai0, %oo
  %pa = getelementptr inbounds float, ptr %acc, i64 %ai
  %v = load float, ptr %pa, align 4
  %py = getelementptr inbounds float, ptr %yo, i64 %rr
  store float %v, ptr %py, align 4
  %rr.next = add nuw nsw i64 %rr, 1
  %rr.done = icmp eq i64 %rr.next, %rn
  br i1 %rr.done, label %so.latch, label %sr.loop
so.latch:
  %oo.next = add nuw nsw i64 %oo, 1
  %oo.done = icmp eq i64 %oo.next, %on
  br i1 %oo.done, label %t.latch, label %so.loop
t.latch:
  %t.next = add nuw nsw i64 %t, 1
  %t.done = icmp eq i64 %t.next, %obt
  br i1 %t.done, label %p.latch, label %t.loop
p.latch:
  %p.next = add nuw nsw i64 %p0, 4
  %p.done = icmp sge i64 %p.next, %np
  br i1 %p.done, label %n.latch, label %p.loop
n.latch:
  %n.next = add nuw nsw i64 %n, 1
  %n.done = icmp eq i64 %n.next, %nn
  br i1 %n.done, label %exit, label %n.loop
exit:
  ret void
}

define void @direct_conv_pool_r4b2w16_f32(ptr noalias nocapture readonly %xp, ptr noalias nocapture readonly %wt,
                    ptr noalias nocapture writeonly %y, ptr noalias nocapture readonly %d,
                    ptr noalias nocapture readonly %base, ptr noalias nocapture readonly %koff,
                    ptr noalias nocapture readonly %bias, ptr noalias nocapture readonly %qoff) nounwind #4 {
entry:
  %d0 = getelementptr inbounds i64, ptr %d, i64 0
  %nn = load i64, ptr %d0
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %nk = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %xs = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %np = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %no = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %obt = load i64, ptr %d5
  %d6 = getelementptr inbounds i64, ptr %d, i64 6
  %flags = load i64, ptr %d6
  %d7 = getelementptr inbounds i64, ptr %d, i64 7
  %pp = load i64, ptr %d7
  %acc = alloca [8 x <16 x float>], align 64
  %op = mul i64 %no, %pp
  %fb = and i64 %flags, 1
  %hasbias = icmp ne i64 %fb, 0
  %fr = and i64 %flags, 2
  %hasrelu = icmp ne i64 %fr, 0
  %z1 = icmp sle i64 %nn, 0
  %z2 = icmp sle i64 %nk, 0
  %z3 = icmp sle i64 %np, 0
  %z4 = icmp sle i64 %obt, 0
  %z12 = or i1 %z1, %z2
  %z34 = or i1 %z3, %z4
  %empty = or i1 %z12, %z34
  br i1 %empty, label %exit, label %n.loop
n.loop:
  %n = phi i64 [ 0, %entry ], [ %n.next, %n.latch ]
  %xno = mul i64 %n, %xs
  %xn = getelementptr inbounds float, ptr %xp, i64 %xno
  %yno = mul i64 %n, %op
  %yn = getelementptr inbounds float, ptr %y, i64 %yno
  br label %p.loop
p.loop:
  %p0 = phi i64 [ 0, %n.loop ], [ %p.next, %p.latch ]
  %bi0 = add i64 %p0, 0
  %pb0 = getelementptr inbounds i64, ptr %base, i64 %bi0
  %b0 = load i64, ptr %pb0
  %xr0 = getelementptr inbounds float, ptr %xn, i64 %b0
  %bi1 = add i64 %p0, 1
  %pb1 = getelementptr inbounds i64, ptr %base, i64 %bi1
  %b1 = load i64, ptr %pb1
  %xr1 = getelementptr inbounds float, ptr %xn, i64 %b1
  %bi2 = add i64 %p0, 2
  %pb2 = getelementptr inbounds i64, ptr %base, i64 %bi2
  %b2 = load i64, ptr %pb2
  %xr2 = getelementptr inbounds float, ptr %xn, i64 %b2
  %bi3 = add i64 %p0, 3
  %pb3 = getelementptr inbounds i64, ptr %base, i64 %bi3
  %b3 = load i64, ptr %pb3
  %xr3 = getelementptr inbounds float, ptr %xn, i64 %b3
  br label %t.loop
t.loop:
  %t = phi i64 [ 0, %p.loop ], [ %t.next, %t.latch ]
  %tb = mul i64 %t, 32
  %tbk = mul i64 %tb, %nk
  %wtile = getelementptr inbounds float, ptr %wt, i64 %tbk
  br label %k.loop
k.loop:
  %k = phi i64 [ 0, %t.loop ], [ %k.next, %k.loop ]
  %a0_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an0_0, %k.loop ]
  %a0_1 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an0_1, %k.loop ]
  %a1_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an1_0, %k.loop ]
  %a1_1 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an1_1, %k.loop ]
  %a2_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an2_0, %k.loop ]
  %a2_1 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an2_1, %k.loop ]
  %a3_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an3_0, %k.loop ]
  %a3_1 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an3_1, %k.loop ]
  %pko = getelementptr inbounds i64, ptr %koff, i64 %k
  %ko = load i64, ptr %pko
  %px0 = getelementptr inbounds float, ptr %xr0, i64 %ko
  %s0 = load float, ptr %px0, align 4
  %si0 = insertelement <16 x float> poison, float %s0, i64 0
  %x0 = shufflevector <16 x float> %si0, <16 x float> poison, <16 x i32> zeroinitializer
  %px1 = getelementptr inbounds float, ptr %xr1, i64 %ko
  %s1 = load float, ptr %px1, align 4
  %si1 = insertelement <16 x float> poison, float %s1, i64 0
  %x1 = shufflevector <16 x float> %si1, <16 x float> poison, <16 x i32> zeroinitializer
  %px2 = getelementptr inbounds float, ptr %xr2, i64 %ko
  %s2 = load float, ptr %px2, align 4
  %si2 = insertelement <16 x float> poison, float %s2, i64 0
  %x2 = shufflevector <16 x float> %si2, <16 x float> poison, <16 x i32> zeroinitializer
  %px3 = getelementptr inbounds float, ptr %xr3, i64 %ko
  %s3 = load float, ptr %px3, align 4
  %si3 = insertelement <16 x float> poison, float %s3, i64 0
  %x3 = shufflevector <16 x float> %si3, <16 x float> poison, <16 x i32> zeroinitializer
  %k8 = mul i64 %k, 16
  %wbo0 = mul i64 %nk, 0
  %wbk0 = add i64 %wbo0, %k8
  %pw0 = getelementptr inbounds float, ptr %wtile, i64 %wbk0
  %w0 = load <16 x float>, ptr %pw0, align 4
  %wbo1 = mul i64 %nk, 16
  %wbk1 = add i64 %wbo1, %k8
  %pw1 = getelementptr inbounds float, ptr %wtile, i64 %wbk1
  %w1 = load <16 x float>, ptr %pw1, align 4
  %an0_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x0, <16 x float> %w0, <16 x float> %a0_0)
  %an0_1 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x0, <16 x float> %w1, <16 x float> %a0_1)
  %an1_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x1, <16 x float> %w0, <16 x float> %a1_0)
  %an1_1 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x1, <16 x float> %w1, <16 x float> %a1_1)
  %an2_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x2, <16 x float> %w0, <16 x float> %a2_0)
  %an2_1 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x2, <16 x float> %w1, <16 x float> %a2_1)
  %an3_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x3, <16 x float> %w0, <16 x float> %a3_0)
  %an3_1 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x3, <16 x float> %w1, <16 x float> %a3_1)
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, %nk
  br i1 %k.done, label %t.epilogue, label %k.loop
t.epilogue:
  %o0e = mul i64 %t, 32
  %bo0 = add i64 %o0e, 0
  %pbias0 = getelementptr inbounds float, ptr %bias, i64 %bo0
  %bv0 = load <16 x float>, ptr %pbias0, align 4
  %bo1 = add i64 %o0e, 16
  %pbias1 = getelementptr inbounds float, ptr %bias, i64 %bo1
  %bv1 = load <16 x float>, ptr %pbias1, align 4
  %eb0_0 = fadd <16 x float> %an0_0, %bv0
  %ec0_0 = select i1 %hasbias, <16 x float> %eb0_0, <16 x float> %an0_0
  %eg0_0 = fcmp ogt <16 x float> %ec0_0, zeroinitializer
  %eu0_0 = fcmp uno <16 x float> %ec0_0, %ec0_0
  %ek0_0 = or <16 x i1> %eg0_0, %eu0_0
  %er0_0 = select <16 x i1> %ek0_0, <16 x float> %ec0_0, <16 x float> zeroinitializer
  %en0_0 = select i1 %hasrelu, <16 x float> %er0_0, <16 x float> %ec0_0
  %eb0_1 = fadd <16 x float> %an0_1, %bv1
  %ec0_1 = select i1 %hasbias, <16 x float> %eb0_1, <16 x float> %an0_1
  %eg0_1 = fcmp ogt <16 x float> %ec0_1, zeroinitializer
  %eu0_1 = fcmp uno <16 x float> %ec0_1, %ec0_1
  %ek0_1 = or <16 x i1> %eg0_1, %eu0_1
  %er0_1 = select <16 x i1> %ek0_1, <16 x float> %ec0_1, <16 x float> zeroinitializer
  %en0_1 = select i1 %hasrelu, <16 x float> %er0_1, <16 x float> %ec0_1
  %eb1_0 = fadd <16 x float> %an1_0, %bv0
  %ec1_0 = select i1 %hasbias, <16 x float> %eb1_0, <16 x float> %an1_0
  %eg1_0 = fcmp ogt <16 x float> %ec1_0, zeroinitializer
  %eu1_0 = fcmp uno <16 x float> %ec1_0, %ec1_0
  %ek1_0 = or <16 x i1> %eg1_0, %eu1_0
  %er1_0 = select <16 x i1> %ek1_0, <16 x float> %ec1_0, <16 x float> zeroinitializer
  %en1_0 = select i1 %hasrelu, <16 x float> %er1_0, <16 x float> %ec1_0
  %eb1_1 = fadd <16 x float> %an1_1, %bv1
  %ec1_1 = select i1 %hasbias, <16 x float> %eb1_1, <16 x float> %an1_1
  %eg1_1 = fcmp ogt <16 x float> %ec1_1, zeroinitializer
  %eu1_1 = fcmp uno <16 x float> %ec1_1, %ec1_1
  %ek1_1 = or <16 x i1> %eg1_1, %eu1_1
  %er1_1 = select <16 x i1> %ek1_1, <16 x float> %ec1_1, <16 x float> zeroinitializer
  %en1_1 = select i1 %hasrelu, <16 x float> %er1_1, <16 x float> %ec1_1
  %eb2_0 = fadd <16 x float> %an2_0, %bv0
  %ec2_0 = select i1 %hasbias, <16 x float> %eb2_0, <16 x float> %an2_0
  %eg2_0 = fcmp ogt <16 x float> %ec2_0, zeroinitializer
  %eu2_0 = fcmp uno <16 x float> %ec2_0, %ec2_0
  %ek2_0 = or <16 x i1> %eg2_0, %eu2_0
  %er2_0 = select <16 x i1> %ek2_0, <16 x float> %ec2_0, <16 x float> zeroinitializer
  %en2_0 = select i1 %hasrelu, <16 x float> %er2_0, <16 x float> %ec2_0
  %eb2_1 = fadd <16 x float> %an2_1, %bv1
  %ec2_1 = select i1 %hasbias, <16 x float> %eb2_1, <16 x float> %an2_1
  %eg2_1 = fcmp ogt <16 x float> %ec2_1, zeroinitializer
  %eu2_1 = fcmp uno <16 x float> %ec2_1, %ec2_1
  %ek2_1 = or <16 x i1> %eg2_1, %eu2_1
  %er2_1 = select <16 x i1> %ek2_1, <16 x float> %ec2_1, <16 x float> zeroinitializer
  %en2_1 = select i1 %hasrelu, <16 x float> %er2_1, <16 x float> %ec2_1
  %eb3_0 = fadd <16 x float> %an3_0, %bv0
  %ec3_0 = select i1 %hasbias, <16 x float> %eb3_0, <16 x float> %an3_0
  %eg3_0 = fcmp ogt <16 x float> %ec3_0, zeroinitializer
  %eu3_0 = fcmp uno <16 x float> %ec3_0, %ec3_0
  %ek3_0 = or <16 x i1> %eg3_0, %eu3_0
  %er3_0 = select <16 x i1> %ek3_0, <16 x float> %ec3_0, <16 x float> zeroinitializer
  %en3_0 = select i1 %hasrelu, <16 x float> %er3_0, <16 x float> %ec3_0
  %eb3_1 = fadd <16 x float> %an3_1, %bv1
  %ec3_1 = select i1 %hasbias, <16 x float> %eb3_1, <16 x float> %an3_1
  %eg3_1 = fcmp ogt <16 x float> %ec3_1, zeroinitializer
  %eu3_1 = fcmp uno <16 x float> %ec3_1, %ec3_1
  %ek3_1 = or <16 x i1> %eg3_1, %eu3_1
  %er3_1 = select <16 x i1> %ek3_1, <16 x float> %ec3_1, <16 x float> zeroinitializer
  %en3_1 = select i1 %hasrelu, <16 x float> %er3_1, <16 x float> %ec3_1
  br label %t.store
t.store:
  %o0 = mul i64 %t, 32
  %qi = lshr i64 %p0, 2
  %pqo = getelementptr inbounds i64, ptr %qoff, i64 %qi
  %q = load i64, ptr %pqo
  %mx0_0 = call <16 x float> @dc_np_max16(<16 x float> %en0_0, <16 x float> %en1_0)
  %mx0_1 = call <16 x float> @dc_np_max16(<16 x float> %mx0_0, <16 x float> %en2_0)
  %mx0 = call <16 x float> @dc_np_max16(<16 x float> %mx0_1, <16 x float> %en3_0)
  %mx1_0 = call <16 x float> @dc_np_max16(<16 x float> %en0_1, <16 x float> %en1_1)
  %mx1_1 = call <16 x float> @dc_np_max16(<16 x float> %mx1_0, <16 x float> %en2_1)
  %mx1 = call <16 x float> @dc_np_max16(<16 x float> %mx1_1, <16 x float> %en3_1)
  %oleft = sub i64 %no, %o0
  %olt = icmp slt i64 %oleft, 32
  br i1 %olt, label %t.spill, label %t.vec
t.vec:
  %pe0_0 = extractelement <16 x float> %mx0, i64 0
  %pc0_0 = add i64 %o0, 0
  %pq0_0 = mul i64 %pc0_0, %pp
  %pr0_0 = add i64 %pq0_0, %q
  %py0_0 = getelementptr inbounds float, ptr %yn, i64 %pr0_0
  store float %pe0_0, ptr %py0_0, align 4
  %pe0_1 = extractelement <16 x float> %mx0, i64 1
  %pc0_1 = add i64 %o0, 1
  %pq0_1 = mul i64 %pc0_1, %pp
  %pr0_1 = add i64 %pq0_1, %q
  %py0_1 = getelementptr inbounds float, ptr %yn, i64 %pr0_1
  store float %pe0_1, ptr %py0_1, align 4
  %pe0_2 = extractelement <16 x float> %mx0, i64 2
  %pc0_2 = add i64 %o0, 2
  %pq0_2 = mul i64 %pc0_2, %pp
  %pr0_2 = add i64 %pq0_2, %q
  %py0_2 = getelementptr inbounds float, ptr %yn, i64 %pr0_2
  store float %pe0_2, ptr %py0_2, align 4
  %pe0_3 = extractelement <16 x float> %mx0, i64 3
  %pc0_3 = add i64 %o0, 3
  %pq0_3 = mul i64 %pc0_3, %pp
  %pr0_3 = add i64 %pq0_3, %q
  %py0_3 = getelementptr inbounds float, ptr %yn, i64 %pr0_3
  store float %pe0_3, ptr %py0_3, align 4
  %pe0_4 = extractelement <16 x float> %mx0, i64 4
  %pc0_4 = add i64 %o0, 4
  %pq0_4 = mul i64 %pc0_4, %pp
  %pr0_4 = add i64 %pq0_4, %q
  %py0_4 = getelementptr inbounds float, ptr %yn, i64 %pr0_4
  store float %pe0_4, ptr %py0_4, align 4
  %pe0_5 = extractelement <16 x float> %mx0, i64 5
  %pc0_5 = add i64 %o0, 5
  %pq0_5 = mul i64 %pc0_5, %pp
  %pr0_5 = add i64 %pq0_5, %q
  %py0_5 = getelementptr inbounds float, ptr %yn, i64 %pr0_5
  store float %pe0_5, ptr %py0_5, align 4
  %pe0_6 = extractelement <16 x float> %mx0, i64 6
  %pc0_6 = add i64 %o0, 6
  %pq0_6 = mul i64 %pc0_6, %pp
  %pr0_6 = add i64 %pq0_6, %q
  %py0_6 = getelementptr inbounds float, ptr %yn, i64 %pr0_6
  store float %pe0_6, ptr %py0_6, align 4
  %pe0_7 = extractelement <16 x float> %mx0, i64 7
  %pc0_7 = add i64 %o0, 7
  %pq0_7 = mul i64 %pc0_7, %pp
  %pr0_7 = add i64 %pq0_7, %q
  %py0_7 = getelementptr inbounds float, ptr %yn, i64 %pr0_7
  store float %pe0_7, ptr %py0_7, align 4
  %pe0_8 = extractelement <16 x float> %mx0, i64 8
  %pc0_8 = add i64 %o0, 8
  %pq0_8 = mul i64 %pc0_8, %pp
  %pr0_8 = add i64 %pq0_8, %q
  %py0_8 = getelementptr inbounds float, ptr %yn, i64 %pr0_8
  store float %pe0_8, ptr %py0_8, align 4
  %pe0_9 = extractelement <16 x float> %mx0, i64 9
  %pc0_9 = add i64 %o0, 9
  %pq0_9 = mul i64 %pc0_9, %pp
  %pr0_9 = add i64 %pq0_9, %q
  %py0_9 = getelementptr inbounds float, ptr %yn, i64 %pr0_9
  store float %pe0_9, ptr %py0_9, align 4
  %pe0_10 = extractelement <16 x float> %mx0, i64 10
  %pc0_10 = add i64 %o0, 10
  %pq0_10 = mul i64 %pc0_10, %pp
  %pr0_10 = add i64 %pq0_10, %q
  %py0_10 = getelementptr inbounds float, ptr %yn, i64 %pr0_10
  store float %pe0_10, ptr %py0_10, align 4
  %pe0_11 = extractelement <16 x float> %mx0, i64 11
  %pc0_11 = add i64 %o0, 11
  %pq0_11 = mul i64 %pc0_11, %pp
  %pr0_11 = add i64 %pq0_11, %q
  %py0_11 = getelementptr inbounds float, ptr %yn, i64 %pr0_11
  store float %pe0_11, ptr %py0_11, align 4
  %pe0_12 = extractelement <16 x float> %mx0, i64 12
  %pc0_12 = add i64 %o0, 12
  %pq0_12 = mul i64 %pc0_12, %pp
  %pr0_12 = add i64 %pq0_12, %q
  %py0_12 = getelementptr inbounds float, ptr %yn, i64 %pr0_12
  store float %pe0_12, ptr %py0_12, align 4
  %pe0_13 = extractelement <16 x float> %mx0, i64 13
  %pc0_13 = add i64 %o0, 13
  %pq0_13 = mul i64 %pc0_13, %pp
  %pr0_13 = add i64 %pq0_13, %q
  %py0_13 = getelementptr inbounds float, ptr %yn, i64 %pr0_13
  store float %pe0_13, ptr %py0_13, align 4
  %pe0_14 = extractelement <16 x float> %mx0, i64 14
  %pc0_14 = add i64 %o0, 14
  %pq0_14 = mul i64 %pc0_14, %pp
  %pr0_14 = add i64 %pq0_14, %q
  %py0_14 = getelementptr inbounds float, ptr %yn, i64 %pr0_14
  store float %pe0_14, ptr %py0_14, align 4
  %pe0_15 = extractelement <16 x float> %mx0, i64 15
  %pc0_15 = add i64 %o0, 15
  %pq0_15 = mul i64 %pc0_15, %pp
  %pr0_15 = add i64 %pq0_15, %q
  %py0_15 = getelementptr inbounds float, ptr %yn, i64 %pr0_15
  store float %pe0_15, ptr %py0_15, align 4
  %pe1_0 = extractelement <16 x float> %mx1, i64 0
  %pc1_0 = add i64 %o0, 16
  %pq1_0 = mul i64 %pc1_0, %pp
  %pr1_0 = add i64 %pq1_0, %q
  %py1_0 = getelementptr inbounds float, ptr %yn, i64 %pr1_0
  store float %pe1_0, ptr %py1_0, align 4
  %pe1_1 = extractelement <16 x float> %mx1, i64 1
  %pc1_1 = add i64 %o0, 17
  %pq1_1 = mul i64 %pc1_1, %pp
  %pr1_1 = add i64 %pq1_1, %q
  %py1_1 = getelementptr inbounds float, ptr %yn, i64 %pr1_1
  store float %pe1_1, ptr %py1_1, align 4
  %pe1_2 = extractelement <16 x float> %mx1, i64 2
  %pc1_2 = add i64 %o0, 18
  %pq1_2 = mul i64 %pc1_2, %pp
  %pr1_2 = add i64 %pq1_2, %q
  %py1_2 = getelementptr inbounds float, ptr %yn, i64 %pr1_2
  store float %pe1_2, ptr %py1_2, align 4
  %pe1_3 = extractelement <16 x float> %mx1, i64 3
  %pc1_3 = add i64 %o0, 19
  %pq1_3 = mul i64 %pc1_3, %pp
  %pr1_3 = add i64 %pq1_3, %q
  %py1_3 = getelementptr inbounds float, ptr %yn, i64 %pr1_3
  store float %pe1_3, ptr %py1_3, align 4
  %pe1_4 = extractelement <16 x float> %mx1, i64 4
  %pc1_4 = add i64 %o0, 20
  %pq1_4 = mul i64 %pc1_4, %pp
  %pr1_4 = add i64 %pq1_4, %q
  %py1_4 = getelementptr inbounds float, ptr %yn, i64 %pr1_4
  store float %pe1_4, ptr %py1_4, align 4
  %pe1_5 = extractelement <16 x float> %mx1, i64 5
  %pc1_5 = add i64 %o0, 21
  %pq1_5 = mul i64 %pc1_5, %pp
  %pr1_5 = add i64 %pq1_5, %q
  %py1_5 = getelementptr inbounds float, ptr %yn, i64 %pr1_5
  store float %pe1_5, ptr %py1_5, align 4
  %pe1_6 = extractelement <16 x float> %mx1, i64 6
  %pc1_6 = add i64 %o0, 22
  %pq1_6 = mul i64 %pc1_6, %pp
  %pr1_6 = add i64 %pq1_6, %q
  %py1_6 = getelementptr inbounds float, ptr %yn, i64 %pr1_6
  store float %pe1_6, ptr %py1_6, align 4
  %pe1_7 = extractelement <16 x float> %mx1, i64 7
  %pc1_7 = add i64 %o0, 23
  %pq1_7 = mul i64 %pc1_7, %pp
  %pr1_7 = add i64 %pq1_7, %q
  %py1_7 = getelementptr inbounds float, ptr %yn, i64 %pr1_7
  store float %pe1_7, ptr %py1_7, align 4
  %pe1_8 = extractelement <16 x float> %mx1, i64 8
  %pc1_8 = add i64 %o0, 24
  %pq1_8 = mul i64 %pc1_8, %pp
  %pr1_8 = add i64 %pq1_8, %q
  %py1_8 = getelementptr inbounds float, ptr %yn, i64 %pr1_8
  store float %pe1_8, ptr %py1_8, align 4
  %pe1_9 = extractelement <16 x float> %mx1, i64 9
  %pc1_9 = add i64 %o0, 25
  %pq1_9 = mul i64 %pc1_9, %pp
  %pr1_9 = add i64 %pq1_9, %q
  %py1_9 = getelementptr inbounds float, ptr %yn, i64 %pr1_9
  store float %pe1_9, ptr %py1_9, align 4
  %pe1_10 = extractelement <16 x float> %mx1, i64 10
  %pc1_10 = add i64 %o0, 26
  %pq1_10 = mul i64 %pc1_10, %pp
  %pr1_10 = add i64 %pq1_10, %q
  %py1_10 = getelementptr inbounds float, ptr %yn, i64 %pr1_10
  store float %pe1_10, ptr %py1_10, align 4
  %pe1_11 = extractelement <16 x float> %mx1, i64 11
  %pc1_11 = add i64 %o0, 27
  %pq1_11 = mul i64 %pc1_11, %pp
  %pr1_11 = add i64 %pq1_11, %q
  %py1_11 = getelementptr inbounds float, ptr %yn, i64 %pr1_11
  store float %pe1_11, ptr %py1_11, align 4
  %pe1_12 = extractelement <16 x float> %mx1, i64 12
  %pc1_12 = add i64 %o0, 28
  %pq1_12 = mul i64 %pc1_12, %pp
  %pr1_12 = add i64 %pq1_12, %q
  %py1_12 = getelementptr inbounds float, ptr %yn, i64 %pr1_12
  store float %pe1_12, ptr %py1_12, align 4
  %pe1_13 = extractelement <16 x float> %mx1, i64 13
  %pc1_13 = add i64 %o0, 29
  %pq1_13 = mul i64 %pc1_13, %pp
  %pr1_13 = add i64 %pq1_13, %q
  %py1_13 = getelementptr inbounds float, ptr %yn, i64 %pr1_13
  store float %pe1_13, ptr %py1_13, align 4
  %pe1_14 = extractelement <16 x float> %mx1, i64 14
  %pc1_14 = add i64 %o0, 30
  %pq1_14 = mul i64 %pc1_14, %pp
  %pr1_14 = add i64 %pq1_14, %q
  %py1_14 = getelementptr inbounds float, ptr %yn, i64 %pr1_14
  store float %pe1_14, ptr %py1_14, align 4
  %pe1_15 = extractelement <16 x float> %mx1, i64 15
  %pc1_15 = add i64 %o0, 31
  %pq1_15 = mul i64 %pc1_15, %pp
  %pr1_15 = add i64 %pq1_15, %q
  %py1_15 = getelementptr inbounds float, ptr %yn, i64 %pr1_15
  store float %pe1_15, ptr %py1_15, align 4
  br label %t.latch
t.spill:
  %sp0 = getelementptr inbounds [8 x <16 x float>], ptr %acc, i64 0, i64 0
  store <16 x float> %mx0, ptr %sp0, align 64
  %sp1 = getelementptr inbounds [8 x <16 x float>], ptr %acc, i64 0, i64 1
  store <16 x float> %mx1, ptr %sp1, align 64
  br label %so.loop
so.loop:
  %oo = phi i64 [ 0, %t.spill ], [ %oo.next, %so.loop ]
  %pa = getelementptr inbounds float, ptr %acc, i64 %oo
  %v = load float, ptr %pa, align 4
  %og = add i64 %o0, %oo
  %ogp = mul i64 %og, %pp
  %yo = add i64 %ogp, %q
  %py = getelementptr inbounds float, ptr %yn, i64 %yo
  store float %v, ptr %py, align 4
  %oo.next = add nuw nsw i64 %oo, 1
  %oo.done = icmp eq i64 %oo.next, %oleft
  br i1 %oo.done, label %t.latch, label %so.loop
t.latch:
  %t.next = add nuw nsw i64 %t, 1
  %t.done = icmp eq i64 %t.next, %obt
  br i1 %t.done, label %p.latch, label %t.loop
p.latch:
  %p.next = add nuw nsw i64 %p0, 4
  %p.done = icmp sge i64 %p.next, %np
  br i1 %p.done, label %n.latch, label %p.loop
n.latch:
  %n.next = add nuw nsw i64 %n, 1
  %n.done = icmp eq i64 %n.next, %nn
  br i1 %n.done, label %exit, label %n.loop
exit:
  ret void
}

define void @direct_conv_r4b1w16_f32(ptr noalias nocapture readonly %xp, ptr noalias nocapture readonly %wt,
                    ptr noalias nocapture writeonly %y, ptr noalias nocapture readonly %d,
                    ptr noalias nocapture readonly %base, ptr noalias nocapture readonly %koff,
                    ptr noalias nocapture readonly %bias) nounwind #4 {
entry:
  %d0 = getelementptr inbounds i64, ptr %d, i64 0
  %nn = load i64, ptr %d0
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %nk = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %xs = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %np = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %no = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %obt = load i64, ptr %d5
  %d6 = getelementptr inbounds i64, ptr %d, i64 6
  %flags = load i64, ptr %d6
  %acc = alloca [4 x <16 x float>], align 64
  %op = mul i64 %no, %np
  %fb = and i64 %flags, 1
  %hasbias = icmp ne i64 %fb, 0
  %fr = and i64 %flags, 2
  %hasrelu = icmp ne i64 %fr, 0
  %z1 = icmp sle i64 %nn, 0
  %z2 = icmp sle i64 %nk, 0
  %z3 = icmp sle i64 %np, 0
  %z4 = icmp sle i64 %obt, 0
  %z12 = or i1 %z1, %z2
  %z34 = or i1 %z3, %z4
  %empty = or i1 %z12, %z34
  br i1 %empty, label %exit, label %n.loop
n.loop:
  %n = phi i64 [ 0, %entry ], [ %n.next, %n.latch ]
  %xno = mul i64 %n, %xs
  %xn = getelementptr inbounds float, ptr %xp, i64 %xno
  %yno = mul i64 %n, %op
  %yn = getelementptr inbounds float, ptr %y, i64 %yno
  br label %p.loop
p.loop:
  %p0 = phi i64 [ 0, %n.loop ], [ %p.next, %p.latch ]
  %bi0 = add i64 %p0, 0
  %pb0 = getelementptr inbounds i64, ptr %base, i64 %bi0
  %b0 = load i64, ptr %pb0
  %xr0 = getelementptr inbounds float, ptr %xn, i64 %b0
  %bi1 = add i64 %p0, 1
  %pb1 = getelementptr inbounds i64, ptr %base, i64 %bi1
  %b1 = load i64, ptr %pb1
  %xr1 = getelementptr inbounds float, ptr %xn, i64 %b1
  %bi2 = add i64 %p0, 2
  %pb2 = getelementptr inbounds i64, ptr %base, i64 %bi2
  %b2 = load i64, ptr %pb2
  %xr2 = getelementptr inbounds float, ptr %xn, i64 %b2
  %bi3 = add i64 %p0, 3
  %pb3 = getelementptr inbounds i64, ptr %base, i64 %bi3
  %b3 = load i64, ptr %pb3
  %xr3 = getelementptr inbounds float, ptr %xn, i64 %b3
  br label %t.loop
t.loop:
  %t = phi i64 [ 0, %p.loop ], [ %t.next, %t.latch ]
  %tb = mul i64 %t, 16
  %tbk = mul i64 %tb, %nk
  %wtile = getelementptr inbounds float, ptr %wt, i64 %tbk
  br label %k.loop
k.loop:
  %k = phi i64 [ 0, %t.loop ], [ %k.next, %k.loop ]
  %a0_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an0_0, %k.loop ]
  %a1_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an1_0, %k.loop ]
  %a2_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an2_0, %k.loop ]
  %a3_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an3_0, %k.loop ]
  %pko = getelementptr inbounds i64, ptr %koff, i64 %k
  %ko = load i64, ptr %pko
  %px0 = getelementptr inbounds float, ptr %xr0, i64 %ko
  %s0 = load float, ptr %px0, align 4
  %si0 = insertelement <16 x float> poison, float %s0, i64 0
  %x0 = shufflevector <16 x float> %si0, <16 x float> poison, <16 x i32> zeroinitializer
  %px1 = getelementptr inbounds float, ptr %xr1, i64 %ko
  %s1 = load float, ptr %px1, align 4
  %si1 = insertelement <16 x float> poison, float %s1, i64 0
  %x1 = shufflevector <16 x float> %si1, <16 x float> poison, <16 x i32> zeroinitializer
  %px2 = getelementptr inbounds float, ptr %xr2, i64 %ko
  %s2 = load float, ptr %px2, align 4
  %si2 = insertelement <16 x float> poison, float %s2, i64 0
  %x2 = shufflevector <16 x float> %si2, <16 x float> poison, <16 x i32> zeroinitializer
  %px3 = getelementptr inbounds float, ptr %xr3, i64 %ko
  %s3 = load float, ptr %px3, align 4
  %si3 = insertelement <16 x float> poison, float %s3, i64 0
  %x3 = shufflevector <16 x float> %si3, <16 x float> poison, <16 x i32> zeroinitializer
  %k8 = mul i64 %k, 16
  %wbo0 = mul i64 %nk, 0
  %wbk0 = add i64 %wbo0, %k8
  %pw0 = getelementptr inbounds float, ptr %wtile, i64 %wbk0
  %w0 = load <16 x float>, ptr %pw0, align 4
  %an0_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x0, <16 x float> %w0, <16 x float> %a0_0)
  %an1_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x1, <16 x float> %w0, <16 x float> %a1_0)
  %an2_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x2, <16 x float> %w0, <16 x float> %a2_0)
  %an3_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x3, <16 x float> %w0, <16 x float> %a3_0)
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, %nk
  br i1 %k.done, label %t.epilogue, label %k.loop
t.epilogue:
  %o0e = mul i64 %t, 16
  %bo0 = add i64 %o0e, 0
  %pbias0 = getelementptr inbounds float, ptr %bias, i64 %bo0
  %bv0 = load <16 x float>, ptr %pbias0, align 4
  %eb0_0 = fadd <16 x float> %an0_0, %bv0
  %ec0_0 = select i1 %hasbias, <16 x float> %eb0_0, <16 x float> %an0_0
  %eg0_0 = fcmp ogt <16 x float> %ec0_0, zeroinitializer
  %eu0_0 = fcmp uno <16 x float> %ec0_0, %ec0_0
  %ek0_0 = or <16 x i1> %eg0_0, %eu0_0
  %er0_0 = select <16 x i1> %ek0_0, <16 x float> %ec0_0, <16 x float> zeroinitializer
  %en0_0 = select i1 %hasrelu, <16 x float> %er0_0, <16 x float> %ec0_0
  %eb1_0 = fadd <16 x float> %an1_0, %bv0
  %ec1_0 = select i1 %hasbias, <16 x float> %eb1_0, <16 x float> %an1_0
  %eg1_0 = fcmp ogt <16 x float> %ec1_0, zeroinitializer
  %eu1_0 = fcmp uno <16 x float> %ec1_0, %ec1_0
  %ek1_0 = or <16 x i1> %eg1_0, %eu1_0
  %er1_0 = select <16 x i1> %ek1_0, <16 x float> %ec1_0, <16 x float> zeroinitializer
  %en1_0 = select i1 %hasrelu, <16 x float> %er1_0, <16 x float> %ec1_0
  %eb2_0 = fadd <16 x float> %an2_0, %bv0
  %ec2_0 = select i1 %hasbias, <16 x float> %eb2_0, <16 x float> %an2_0
  %eg2_0 = fcmp ogt <16 x float> %ec2_0, zeroinitializer
  %eu2_0 = fcmp uno <16 x float> %ec2_0, %ec2_0
  %ek2_0 = or <16 x i1> %eg2_0, %eu2_0
  %er2_0 = select <16 x i1> %ek2_0, <16 x float> %ec2_0, <16 x float> zeroinitializer
  %en2_0 = select i1 %hasrelu, <16 x float> %er2_0, <16 x float> %ec2_0
  %eb3_0 = fadd <16 x float> %an3_0, %bv0
  %ec3_0 = select i1 %hasbias, <16 x float> %eb3_0, <16 x float> %an3_0
  %eg3_0 = fcmp ogt <16 x float> %ec3_0, zeroinitializer
  %eu3_0 = fcmp uno <16 x float> %ec3_0, %ec3_0
  %ek3_0 = or <16 x i1> %eg3_0, %eu3_0
  %er3_0 = select <16 x i1> %ek3_0, <16 x float> %ec3_0, <16 x float> zeroinitializer
  %en3_0 = select i1 %hasrelu, <16 x float> %er3_0, <16 x float> %ec3_0
  br label %t.store
t.store:
  %o0 = mul i64 %t, 16
  %rleft = sub i64 %np, %p0
  %rlt = icmp slt i64 %rleft, 4
  %rn = select i1 %rlt, i64 %rleft, i64 4
  %oleft = sub i64 %no, %o0
  %olt = icmp slt i64 %oleft, 16
  %on = select i1 %olt, i64 %oleft, i64 16
  %partial = or i1 %rlt, %olt
  br i1 %partial, label %t.spill, label %t.vec
t.vec:
  %i01_0 = shufflevector <16 x float> %en0_0, <16 x float> %en1_0, <32 x i32> <i32 0, i32 16, i32 1, i32 17, i32 2, i32 18, i32 3, i32 19, i32 4, i32 20, i32 5, i32 21, i32 6, i32 22, i32 7, i32 23, i32 8, i32 24, i32 9, i32 25, i32 10, i32 26, i32 11, i32 27, i32 12, i32 28, i32 13, i32 29, i32 14, i32 30, i32 15, i32 31>
  %i23_0 = shufflevector <16 x float> %en2_0, <16 x float> %en3_0, <32 x i32> <i32 0, i32 16, i32 1, i32 17, i32 2, i32 18, i32 3, i32 19, i32 4, i32 20, i32 5, i32 21, i32 6, i32 22, i32 7, i32 23, i32 8, i32 24, i32 9, i32 25, i32 10, i32 26, i32 11, i32 27, i32 12, i32 28, i32 13, i32 29, i32 14, i32 30, i32 15, i32 31>
  %iq_0 = shufflevector <32 x float> %i01_0, <32 x float> %i23_0, <64 x i32> <i32 0, i32 1, i32 32, i32 33, i32 2, i32 3, i32 34, i32 35, i32 4, i32 5, i32 36, i32 37, i32 6, i32 7, i32 38, i32 39, i32 8, i32 9, i32 40, i32 41, i32 10, i32 11, i32 42, i32 43, i32 12, i32 13, i32 44, i32 45, i32 14, i32 15, i32 46, i32 47, i32 16, i32 17, i32 48, i32 49, i32 18, i32 19, i32 50, i32 51, i32 20, i32 21, i32 52, i32 53, i32 22, i32 23, i32 54, i32 55, i32 24, i32 25, i32 56, i32 57, i32 26, i32 27, i32 58, i32 59, i32 28, i32 29, i32 60, i32 61, i32 30, i32 31, i32 62, i32 63>
  %c0_0 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %vo0_0 = add i64 %o0, 0
  %vop0_0 = mul i64 %vo0_0, %np
  %vyo0_0 = add i64 %vop0_0, %p0
  %vy0_0 = getelementptr inbounds float, ptr %yn, i64 %vyo0_0
  store <4 x float> %c0_0, ptr %vy0_0, align 4
  %c0_1 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %vo0_1 = add i64 %o0, 1
  %vop0_1 = mul i64 %vo0_1, %np
  %vyo0_1 = add i64 %vop0_1, %p0
  %vy0_1 = getelementptr inbounds float, ptr %yn, i64 %vyo0_1
  store <4 x float> %c0_1, ptr %vy0_1, align 4
  %c0_2 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 8, i32 9, i32 10, i32 11>
  %vo0_2 = add i64 %o0, 2
  %vop0_2 = mul i64 %vo0_2, %np
  %vyo0_2 = add i64 %vop0_2, %p0
  %vy0_2 = getelementptr inbounds float, ptr %yn, i64 %vyo0_2
  store <4 x float> %c0_2, ptr %vy0_2, align 4
  %c0_3 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 12, i32 13, i32 14, i32 15>
  %vo0_3 = add i64 %o0, 3
  %vop0_3 = mul i64 %vo0_3, %np
  %vyo0_3 = add i64 %vop0_3, %p0
  %vy0_3 = getelementptr inbounds float, ptr %yn, i64 %vyo0_3
  store <4 x float> %c0_3, ptr %vy0_3, align 4
  %c0_4 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 16, i32 17, i32 18, i32 19>
  %vo0_4 = add i64 %o0, 4
  %vop0_4 = mul i64 %vo0_4, %np
  %vyo0_4 = add i64 %vop0_4, %p0
  %vy0_4 = getelementptr inbounds float, ptr %yn, i64 %vyo0_4
  store <4 x float> %c0_4, ptr %vy0_4, align 4
  %c0_5 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 20, i32 21, i32 22, i32 23>
  %vo0_5 = add i64 %o0, 5
  %vop0_5 = mul i64 %vo0_5, %np
  %vyo0_5 = add i64 %vop0_5, %p0
  %vy0_5 = getelementptr inbounds float, ptr %yn, i64 %vyo0_5
  store <4 x float> %c0_5, ptr %vy0_5, align 4
  %c0_6 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 24, i32 25, i32 26, i32 27>
  %vo0_6 = add i64 %o0, 6
  %vop0_6 = mul i64 %vo0_6, %np
  %vyo0_6 = add i64 %vop0_6, %p0
  %vy0_6 = getelementptr inbounds float, ptr %yn, i64 %vyo0_6
  store <4 x float> %c0_6, ptr %vy0_6, align 4
  %c0_7 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 28, i32 29, i32 30, i32 31>
  %vo0_7 = add i64 %o0, 7
  %vop0_7 = mul i64 %vo0_7, %np
  %vyo0_7 = add i64 %vop0_7, %p0
  %vy0_7 = getelementptr inbounds float, ptr %yn, i64 %vyo0_7
  store <4 x float> %c0_7, ptr %vy0_7, align 4
  %c0_8 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 32, i32 33, i32 34, i32 35>
  %vo0_8 = add i64 %o0, 8
  %vop0_8 = mul i64 %vo0_8, %np
  %vyo0_8 = add i64 %vop0_8, %p0
  %vy0_8 = getelementptr inbounds float, ptr %yn, i64 %vyo0_8
  store <4 x float> %c0_8, ptr %vy0_8, align 4
  %c0_9 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 36, i32 37, i32 38, i32 39>
  %vo0_9 = add i64 %o0, 9
  %vop0_9 = mul i64 %vo0_9, %np
  %vyo0_9 = add i64 %vop0_9, %p0
  %vy0_9 = getelementptr inbounds float, ptr %yn, i64 %vyo0_9
  store <4 x float> %c0_9, ptr %vy0_9, align 4
  %c0_10 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 40, i32 41, i32 42, i32 43>
  %vo0_10 = add i64 %o0, 10
  %vop0_10 = mul i64 %vo0_10, %np
  %vyo0_10 = add i64 %vop0_10, %p0
  %vy0_10 = getelementptr inbounds float, ptr %yn, i64 %vyo0_10
  store <4 x float> %c0_10, ptr %vy0_10, align 4
  %c0_11 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 44, i32 45, i32 46, i32 47>
  %vo0_11 = add i64 %o0, 11
  %vop0_11 = mul i64 %vo0_11, %np
  %vyo0_11 = add i64 %vop0_11, %p0
  %vy0_11 = getelementptr inbounds float, ptr %yn, i64 %vyo0_11
  store <4 x float> %c0_11, ptr %vy0_11, align 4
  %c0_12 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 48, i32 49, i32 50, i32 51>
  %vo0_12 = add i64 %o0, 12
  %vop0_12 = mul i64 %vo0_12, %np
  %vyo0_12 = add i64 %vop0_12, %p0
  %vy0_12 = getelementptr inbounds float, ptr %yn, i64 %vyo0_12
  store <4 x float> %c0_12, ptr %vy0_12, align 4
  %c0_13 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 52, i32 53, i32 54, i32 55>
  %vo0_13 = add i64 %o0, 13
  %vop0_13 = mul i64 %vo0_13, %np
  %vyo0_13 = add i64 %vop0_13, %p0
  %vy0_13 = getelementptr inbounds float, ptr %yn, i64 %vyo0_13
  store <4 x float> %c0_13, ptr %vy0_13, align 4
  %c0_14 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 56, i32 57, i32 58, i32 59>
  %vo0_14 = add i64 %o0, 14
  %vop0_14 = mul i64 %vo0_14, %np
  %vyo0_14 = add i64 %vop0_14, %p0
  %vy0_14 = getelementptr inbounds float, ptr %yn, i64 %vyo0_14
  store <4 x float> %c0_14, ptr %vy0_14, align 4
  %c0_15 = shufflevector <64 x float> %iq_0, <64 x float> poison, <4 x i32> <i32 60, i32 61, i32 62, i32 63>
  %vo0_15 = add i64 %o0, 15
  %vop0_15 = mul i64 %vo0_15, %np
  %vyo0_15 = add i64 %vop0_15, %p0
  %vy0_15 = getelementptr inbounds float, ptr %yn, i64 %vyo0_15
  store <4 x float> %c0_15, ptr %vy0_15, align 4
  br label %t.latch
t.spill:
  %sp0_0 = getelementptr inbounds [4 x <16 x float>], ptr %acc, i64 0, i64 0
  store <16 x float> %en0_0, ptr %sp0_0, align 64
  %sp1_0 = getelementptr inbounds [4 x <16 x float>], ptr %acc, i64 0, i64 1
  store <16 x float> %en1_0, ptr %sp1_0, align 64
  %sp2_0 = getelementptr inbounds [4 x <16 x float>], ptr %acc, i64 0, i64 2
  store <16 x float> %en2_0, ptr %sp2_0, align 64
  %sp3_0 = getelementptr inbounds [4 x <16 x float>], ptr %acc, i64 0, i64 3
  store <16 x float> %en3_0, ptr %sp3_0, align 64
  br label %so.loop
so.loop:
  %oo = phi i64 [ 0, %t.spill ], [ %oo.next, %so.latch ]
  %og = add i64 %o0, %oo
  %ogp = mul i64 %og, %np
  %yo0 = add i64 %ogp, %p0
  %yo = getelementptr inbounds float, ptr %yn, i64 %yo0
  br label %sr.loop
sr.loop:
  %rr = phi i64 [ 0, %so.loop ], [ %rr.next, %sr.loop ]
  %ai0 = mul i64 %rr, 16
  %ai = add i64 %ai0, %oo
  %pa = getelementptr inbounds float, ptr %acc, i64 %ai
  %v = load float, ptr %pa, align 4
  %py = getelementptr inbounds float, ptr %yo, i64 %rr
  store float %v, ptr %py, align 4
  %rr.next = add nuw nsw i64 %rr, 1
  %rr.done = icmp eq i64 %rr.next, %rn
  br i1 %rr.done, label %so.latch, label %sr.loop
so.latch:
  %oo.next = add nuw nsw i64 %oo, 1
  %oo.done = icmp eq i64 %oo.next, %on
  br i1 %oo.done, label %t.latch, label %so.loop
t.latch:
  %t.next = add nuw nsw i64 %t, 1
  %t.done = icmp eq i64 %t.next, %obt
  br i1 %t.done, label %p.latch, label %t.loop
p.latch:
  %p.next = add nuw nsw i64 %p0, 4
  %p.done = icmp sge i64 %p.next, %np
  br i1 %p.done, label %n.latch, label %p.loop
n.latch:
  %n.next = add nuw nsw i64 %n, 1
  %n.done = icmp eq i64 %n.next, %nn
  br i1 %n.done, label %exit, label %n.loop
exit:
  ret void
}

define void @direct_conv_pool_r4b1w16_f32(ptr noalias nocapture readonly %xp, ptr noalias nocapture readonly %wt,
                    ptr noalias nocapture writeonly %y, ptr noalias nocapture readonly %d,
                    ptr noalias nocapture readonly %base, ptr noalias nocapture readonly %koff,
                    ptr noalias nocapture readonly %bias, ptr noalias nocapture readonly %qoff) nounwind #4 {
entry:
  %d0 = getelementptr inbounds i64, ptr %d, i64 0
  %nn = load i64, ptr %d0
  %d1 = getelementptr inbounds i64, ptr %d, i64 1
  %nk = load i64, ptr %d1
  %d2 = getelementptr inbounds i64, ptr %d, i64 2
  %xs = load i64, ptr %d2
  %d3 = getelementptr inbounds i64, ptr %d, i64 3
  %np = load i64, ptr %d3
  %d4 = getelementptr inbounds i64, ptr %d, i64 4
  %no = load i64, ptr %d4
  %d5 = getelementptr inbounds i64, ptr %d, i64 5
  %obt = load i64, ptr %d5
  %d6 = getelementptr inbounds i64, ptr %d, i64 6
  %flags = load i64, ptr %d6
  %d7 = getelementptr inbounds i64, ptr %d, i64 7
  %pp = load i64, ptr %d7
  %acc = alloca [4 x <16 x float>], align 64
  %op = mul i64 %no, %pp
  %fb = and i64 %flags, 1
  %hasbias = icmp ne i64 %fb, 0
  %fr = and i64 %flags, 2
  %hasrelu = icmp ne i64 %fr, 0
  %z1 = icmp sle i64 %nn, 0
  %z2 = icmp sle i64 %nk, 0
  %z3 = icmp sle i64 %np, 0
  %z4 = icmp sle i64 %obt, 0
  %z12 = or i1 %z1, %z2
  %z34 = or i1 %z3, %z4
  %empty = or i1 %z12, %z34
  br i1 %empty, label %exit, label %n.loop
n.loop:
  %n = phi i64 [ 0, %entry ], [ %n.next, %n.latch ]
  %xno = mul i64 %n, %xs
  %xn = getelementptr inbounds float, ptr %xp, i64 %xno
  %yno = mul i64 %n, %op
  %yn = getelementptr inbounds float, ptr %y, i64 %yno
  br label %p.loop
p.loop:
  %p0 = phi i64 [ 0, %n.loop ], [ %p.next, %p.latch ]
  %bi0 = add i64 %p0, 0
  %pb0 = getelementptr inbounds i64, ptr %base, i64 %bi0
  %b0 = load i64, ptr %pb0
  %xr0 = getelementptr inbounds float, ptr %xn, i64 %b0
  %bi1 = add i64 %p0, 1
  %pb1 = getelementptr inbounds i64, ptr %base, i64 %bi1
  %b1 = load i64, ptr %pb1
  %xr1 = getelementptr inbounds float, ptr %xn, i64 %b1
  %bi2 = add i64 %p0, 2
  %pb2 = getelementptr inbounds i64, ptr %base, i64 %bi2
  %b2 = load i64, ptr %pb2
  %xr2 = getelementptr inbounds float, ptr %xn, i64 %b2
  %bi3 = add i64 %p0, 3
  %pb3 = getelementptr inbounds i64, ptr %base, i64 %bi3
  %b3 = load i64, ptr %pb3
  %xr3 = getelementptr inbounds float, ptr %xn, i64 %b3
  br label %t.loop
t.loop:
  %t = phi i64 [ 0, %p.loop ], [ %t.next, %t.latch ]
  %tb = mul i64 %t, 16
  %tbk = mul i64 %tb, %nk
  %wtile = getelementptr inbounds float, ptr %wt, i64 %tbk
  br label %k.loop
k.loop:
  %k = phi i64 [ 0, %t.loop ], [ %k.next, %k.loop ]
  %a0_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an0_0, %k.loop ]
  %a1_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an1_0, %k.loop ]
  %a2_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an2_0, %k.loop ]
  %a3_0 = phi <16 x float> [ zeroinitializer, %t.loop ], [ %an3_0, %k.loop ]
  %pko = getelementptr inbounds i64, ptr %koff, i64 %k
  %ko = load i64, ptr %pko
  %px0 = getelementptr inbounds float, ptr %xr0, i64 %ko
  %s0 = load float, ptr %px0, align 4
  %si0 = insertelement <16 x float> poison, float %s0, i64 0
  %x0 = shufflevector <16 x float> %si0, <16 x float> poison, <16 x i32> zeroinitializer
  %px1 = getelementptr inbounds float, ptr %xr1, i64 %ko
  %s1 = load float, ptr %px1, align 4
  %si1 = insertelement <16 x float> poison, float %s1, i64 0
  %x1 = shufflevector <16 x float> %si1, <16 x float> poison, <16 x i32> zeroinitializer
  %px2 = getelementptr inbounds float, ptr %xr2, i64 %ko
  %s2 = load float, ptr %px2, align 4
  %si2 = insertelement <16 x float> poison, float %s2, i64 0
  %x2 = shufflevector <16 x float> %si2, <16 x float> poison, <16 x i32> zeroinitializer
  %px3 = getelementptr inbounds float, ptr %xr3, i64 %ko
  %s3 = load float, ptr %px3, align 4
  %si3 = insertelement <16 x float> poison, float %s3, i64 0
  %x3 = shufflevector <16 x float> %si3, <16 x float> poison, <16 x i32> zeroinitializer
  %k8 = mul i64 %k, 16
  %wbo0 = mul i64 %nk, 0
  %wbk0 = add i64 %wbo0, %k8
  %pw0 = getelementptr inbounds float, ptr %wtile, i64 %wbk0
  %w0 = load <16 x float>, ptr %pw0, align 4
  %an0_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x0, <16 x float> %w0, <16 x float> %a0_0)
  %an1_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x1, <16 x float> %w0, <16 x float> %a1_0)
  %an2_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x2, <16 x float> %w0, <16 x float> %a2_0)
  %an3_0 = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %x3, <16 x float> %w0, <16 x float> %a3_0)
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, %nk
  br i1 %k.done, label %t.epilogue, label %k.loop
t.epilogue:
  %o0e = mul i64 %t, 16
  %bo0 = add i64 %o0e, 0
  %pbias0 = getelementptr inbounds float, ptr %bias, i64 %bo0
  %bv0 = load <16 x float>, ptr %pbias0, align 4
  %eb0_0 = fadd <16 x float> %an0_0, %bv0
  %ec0_0 = select i1 %hasbias, <16 x float> %eb0_0, <16 x float> %an0_0
  %eg0_0 = fcmp ogt <16 x float> %ec0_0, zeroinitializer
  %eu0_0 = fcmp uno <16 x float> %ec0_0, %ec0_0
  %ek0_0 = or <16 x i1> %eg0_0, %eu0_0
  %er0_0 = select <16 x i1> %ek0_0, <16 x float> %ec0_0, <16 x float> zeroinitializer
  %en0_0 = select i1 %hasrelu, <16 x float> %er0_0, <16 x float> %ec0_0
  %eb1_0 = fadd <16 x float> %an1_0, %bv0
  %ec1_0 = select i1 %hasbias, <16 x float> %eb1_0, <16 x float> %an1_0
  %eg1_0 = fcmp ogt <16 x float> %ec1_0, zeroinitializer
  %eu1_0 = fcmp uno <16 x float> %ec1_0, %ec1_0
  %ek1_0 = or <16 x i1> %eg1_0, %eu1_0
  %er1_0 = select <16 x i1> %ek1_0, <16 x float> %ec1_0, <16 x float> zeroinitializer
  %en1_0 = select i1 %hasrelu, <16 x float> %er1_0, <16 x float> %ec1_0
  %eb2_0 = fadd <16 x float> %an2_0, %bv0
  %ec2_0 = select i1 %hasbias, <16 x float> %eb2_0, <16 x float> %an2_0
  %eg2_0 = fcmp ogt <16 x float> %ec2_0, zeroinitializer
  %eu2_0 = fcmp uno <16 x float> %ec2_0, %ec2_0
  %ek2_0 = or <16 x i1> %eg2_0, %eu2_0
  %er2_0 = select <16 x i1> %ek2_0, <16 x float> %ec2_0, <16 x float> zeroinitializer
  %en2_0 = select i1 %hasrelu, <16 x float> %er2_0, <16 x float> %ec2_0
  %eb3_0 = fadd <16 x float> %an3_0, %bv0
  %ec3_0 = select i1 %hasbias, <16 x float> %eb3_0, <16 x float> %an3_0
  %eg3_0 = fcmp ogt <16 x float> %ec3_0, zeroinitializer
  %eu3_0 = fcmp uno <16 x float> %ec3_0, %ec3_0
  %ek3_0 = or <16 x i1> %eg3_0, %eu3_0
  %er3_0 = select <16 x i1> %ek3_0, <16 x float> %ec3_0, <16 x float> zeroinitializer
  %en3_0 = select i1 %hasrelu, <16 x float> %er3_0, <16 x float> %ec3_0
  br label %t.store
t.store:
  %o0 = mul i64 %t, 16
  %qi = lshr i64 %p0, 2
  %pqo = getelementptr inbounds i64, ptr %qoff, i64 %qi
  %q = load i64, ptr %pqo
  %mx0_0 = call <16 x float> @dc_np_max16(<16 x float> %en0_0, <16 x float> %en1_0)
  %mx0_1 = call <16 x float> @dc_np_max16(<16 x float> %mx0_0, <16 x float> %en2_0)
  %mx0 = call <16 x float> @dc_np_max16(<16 x float> %mx0_1, <16 x float> %en3_0)
  %oleft = sub i64 %no, %o0
  %olt = icmp slt i64 %oleft, 16
  br i1 %olt, label %t.spill, label %t.vec
t.vec:
  %pe0_0 = extractelement <16 x float> %mx0, i64 0
  %pc0_0 = add i64 %o0, 0
  %pq0_0 = mul i64 %pc0_0, %pp
  %pr0_0 = add i64 %pq0_0, %q
  %py0_0 = getelementptr inbounds float, ptr %yn, i64 %pr0_0
  store float %pe0_0, ptr %py0_0, align 4
  %pe0_1 = extractelement <16 x float> %mx0, i64 1
  %pc0_1 = add i64 %o0, 1
  %pq0_1 = mul i64 %pc0_1, %pp
  %pr0_1 = add i64 %pq0_1, %q
  %py0_1 = getelementptr inbounds float, ptr %yn, i64 %pr0_1
  store float %pe0_1, ptr %py0_1, align 4
  %pe0_2 = extractelement <16 x float> %mx0, i64 2
  %pc0_2 = add i64 %o0, 2
  %pq0_2 = mul i64 %pc0_2, %pp
  %pr0_2 = add i64 %pq0_2, %q
  %py0_2 = getelementptr inbounds float, ptr %yn, i64 %pr0_2
  store float %pe0_2, ptr %py0_2, align 4
  %pe0_3 = extractelement <16 x float> %mx0, i64 3
  %pc0_3 = add i64 %o0, 3
  %pq0_3 = mul i64 %pc0_3, %pp
  %pr0_3 = add i64 %pq0_3, %q
  %py0_3 = getelementptr inbounds float, ptr %yn, i64 %pr0_3
  store float %pe0_3, ptr %py0_3, align 4
  %pe0_4 = extractelement <16 x float> %mx0, i64 4
  %pc0_4 = add i64 %o0, 4
  %pq0_4 = mul i64 %pc0_4, %pp
  %pr0_4 = add i64 %pq0_4, %q
  %py0_4 = getelementptr inbounds float, ptr %yn, i64 %pr0_4
  store float %pe0_4, ptr %py0_4, align 4
  %pe0_5 = extractelement <16 x float> %mx0, i64 5
  %pc0_5 = add i64 %o0, 5
  %pq0_5 = mul i64 %pc0_5, %pp
  %pr0_5 = add i64 %pq0_5, %q
  %py0_5 = getelementptr inbounds float, ptr %yn, i64 %pr0_5
  store float %pe0_5, ptr %py0_5, align 4
  %pe0_6 = extractelement <16 x float> %mx0, i64 6
  %pc0_6 = add i64 %o0, 6
  %pq0_6 = mul i64 %pc0_6, %pp
  %pr0_6 = add i64 %pq0_6, %q
  %py0_6 = getelementptr inbounds float, ptr %yn, i64 %pr0_6
  store float %pe0_6, ptr %py0_6, align 4
  %pe0_7 = extractelement <16 x float> %mx0, i64 7
  %pc0_7 = add i64 %o0, 7
  %pq0_7 = mul i64 %pc0_7, %pp
  %pr0_7 = add i64 %pq0_7, %q
  %py0_7 = getelementptr inbounds float, ptr %yn, i64 %pr0_7
  store float %pe0_7, ptr %py0_7, align 4
  %pe0_8 = extractelement <16 x float> %mx0, i64 8
  %pc0_8 = add i64 %o0, 8
  %pq0_8 = mul i64 %pc0_8, %pp
  %pr0_8 = add i64 %pq0_8, %q
  %py0_8 = getelementptr inbounds float, ptr %yn, i64 %pr0_8
  store float %pe0_8, ptr %py0_8, align 4
  %pe0_9 = extractelement <16 x float> %mx0, i64 9
  %pc0_9 = add i64 %o0, 9
  %pq0_9 = mul i64 %pc0_9, %pp
  %pr0_9 = add i64 %pq0_9, %q
  %py0_9 = getelementptr inbounds float, ptr %yn, i64 %pr0_9
  store float %pe0_9, ptr %py0_9, align 4
  %pe0_10 = extractelement <16 x float> %mx0, i64 10
  %pc0_10 = add i64 %o0, 10
  %pq0_10 = mul i64 %pc0_10, %pp
  %pr0_10 = add i64 %pq0_10, %q
  %py0_10 = getelementptr inbounds float, ptr %yn, i64 %pr0_10
  store float %pe0_10, ptr %py0_10, align 4
  %pe0_11 = extractelement <16 x float> %mx0, i64 11
  %pc0_11 = add i64 %o0, 11
  %pq0_11 = mul i64 %pc0_11, %pp
  %pr0_11 = add i64 %pq0_11, %q
  %py0_11 = getelementptr inbounds float, ptr %yn, i64 %pr0_11
  store float %pe0_11, ptr %py0_11, align 4
  %pe0_12 = extractelement <16 x float> %mx0, i64 12
  %pc0_12 = add i64 %o0, 12
  %pq0_12 = mul i64 %pc0_12, %pp
  %pr0_12 = add i64 %pq0_12, %q
  %py0_12 = getelementptr inbounds float, ptr %yn, i64 %pr0_12
  store float %pe0_12, ptr %py0_12, align 4
  %pe0_13 = extractelement <16 x float> %mx0, i64 13
  %pc0_13 = add i64 %o0, 13
  %pq0_13 = mul i64 %pc0_13, %pp
  %pr0_13 = add i64 %pq0_13, %q
  %py0_13 = getelementptr inbounds float, ptr %yn, i64 %pr0_13
  store float %pe0_13, ptr %py0_13, align 4
  %pe0_14 = extractelement <16 x float> %mx0, i64 14
  %pc0_14 = add i64 %o0, 14
  %pq0_14 = mul i64 %pc0_14, %pp
  %pr0_14 = add i64 %pq0_14, %q
  %py0_14 = getelementptr inbounds float, ptr %yn, i64 %pr0_14
  store float %pe0_14, ptr %py0_14, align 4
  %pe0_15 = extractelement <16 x float> %mx0, i64 15
  %pc0_15 = add i64 %o0, 15
  %pq0_15 = mul i64 %pc0_15, %pp
  %pr0_15 = add i64 %pq0_15, %q
  %py0_15 = getelementptr inbounds float, ptr %yn, i64 %pr0_15
  store float %pe0_15, ptr %py0_15, align 4
  br label %t.latch
t.spill:
  %sp0 = getelementptr inbounds [4 x <16 x float>], ptr %acc, i64 0, i64 0
  store <16 x float> %mx0, ptr %sp0, align 64
  br label %so.loop
so.loop:
  %oo = phi i64 [ 0, %t.spill ], [ %oo.next, %so.loop ]
  %pa = getelementptr inbounds float, ptr %acc, i64 %oo
  %v = load float, ptr %pa, align 4
  %og = add i64 %o0, %oo
  %ogp = mul i64 %og, %pp
  %yo = add i64 %ogp, %q
  %py = getelementptr inbounds float, ptr %yn, i64 %yo
  store float %v, ptr %py, align 4
  %oo.next = add nuw nsw i64 %oo, 1
  %oo.done = icmp eq i64 %oo.next, %oleft
  br i1 %oo.done, label %t.latch, label %so.loop
t.latch:
  %t.next = add nuw nsw i64 %t, 1
  %t.done = icmp eq i64 %t.next, %obt
  br i1 %t.done, label %p.latch, label %t.loop
p.latch:
  %p.next = add nuw nsw i64 %p0, 4
  %p.done = icmp sge i64 %p.next, %np
  br i1 %p.done, label %n.latch, label %p.loop
n.latch:
  %n.next = add nuw nsw i64 %n, 1
  %n.done = icmp eq i64 %n.next, %nn
  br i1 %n.done, label %exit, label %n.loop
exit:
  ret void
}

; the same on sixteen lanes (the 16-lane tiles' pooling)
define internal <16 x float> @dc_np_max16(<16 x float> %a, <16 x float> %b) alwaysinline nounwind readnone {
  %gt = fcmp ogt <16 x float> %a, %b
  %nan = fcmp uno <16 x float> %a, %a
  %keep = or <16 x i1> %gt, %nan
  %r = select <16 x i1> %keep, <16 x float> %a, <16 x float> %b
  ret <16 x float> %r
}

declare <8 x float> @llvm.fmuladd.v8f32(<8 x float>, <8 x float>, <8 x float>)
declare <16 x float> @llvm.fmuladd.v16f32(<16 x float>, <16 x float>, <16 x float>)
declare <8 x float> @llvm.masked.load.v8f32.p0(ptr, i32, <8 x i1>, <8 x float>)

attributes #3 = { nounwind "no-builtins" }
; 512-bit vectors are legal in these functions even where the CPU's tuning prefers 256-bit ones
attributes #4 = { nounwind "no-builtins" "min-legal-vector-width"="512" }
