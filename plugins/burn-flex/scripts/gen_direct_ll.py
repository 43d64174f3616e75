"""Writes burn_flex/kernels/ll/direct.ll: the direct convolution for two register tilings.

The kernel is one loop nest per tiling (R positions x B blocks of 8 output channels: R * B
accumulators, the transposing stores unrolled), so its IR is generated here rather than written
R * B times by hand. Run it after changing the template; tests/test_conv_threads.py checks that
the committed file is what this script writes.

    python plugins/burn-flex/scripts/gen_direct_ll.py            # rewrites the file
    python plugins/burn-flex/scripts/gen_direct_ll.py --check    # exit 1 if it differs
"""
import os
import sys

TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "burn_flex", "kernels", "ll", "direct.ll")
HEADER = '''; flex's JIT direct convolution (float32 forward, any stride / dilation / padding, one group):
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
'''

def tile_fn(R, B, pool=False, W=8):
    wide = f"w{W}" if W != 8 else ""
    name = f"direct_conv_pool_r{R}b{B}{wide}_f32" if pool else f"direct_conv_r{R}b{B}{wide}_f32"
    V = f"<{W} x float>"
    L = []
    a = L.append
    a(f"define void @{name}(ptr noalias nocapture readonly %xp, ptr noalias nocapture readonly %wt,")
    a(f"                    ptr noalias nocapture writeonly %y, ptr noalias nocapture readonly %d,")
    a(f"                    ptr noalias nocapture readonly %base, ptr noalias nocapture readonly %koff,")
    a(f"                    ptr noalias nocapture readonly %bias{', ptr noalias nocapture readonly %qoff' if pool else ''}) nounwind #{3 if W == 8 else 4} {{")
    a("entry:")
    for i, v in enumerate(["nn", "nk", "xs", "np", "no", "obt", "flags"] + (["pp"] if pool else [])):
        a(f"  %d{i} = getelementptr inbounds i64, ptr %d, i64 {i}")
        a(f"  %{v} = load i64, ptr %d{i}")
    a(f"  %acc = alloca [{R * B} x {V}], align {4 * W}")
    a(f"  %op = mul i64 %no, {'%pp' if pool else '%np'}")
    a("  %fb = and i64 %flags, 1")
    a("  %hasbias = icmp ne i64 %fb, 0")
    a("  %fr = and i64 %flags, 2")
    a("  %hasrelu = icmp ne i64 %fr, 0")
    a("  %z1 = icmp sle i64 %nn, 0")
    a("  %z2 = icmp sle i64 %nk, 0")
    a("  %z3 = icmp sle i64 %np, 0")
    a("  %z4 = icmp sle i64 %obt, 0")
    a("  %z12 = or i1 %z1, %z2")
    a("  %z34 = or i1 %z3, %z4")
    a("  %empty = or i1 %z12, %z34")
    a("  br i1 %empty, label %exit, label %n.loop")
    a("n.loop:")
    a("  %n = phi i64 [ 0, %entry ], [ %n.next, %n.latch ]")
    a("  %xno = mul i64 %n, %xs")
    a("  %xn = getelementptr inbounds float, ptr %xp, i64 %xno")
    a("  %yno = mul i64 %n, %op")
    a("  %yn = getelementptr inbounds float, ptr %y, i64 %yno")
    a("  br label %p.loop")
    a("p.loop:")
    a("  %p0 = phi i64 [ 0, %n.loop ], [ %p.next, %p.latch ]")
    for r in range(R):
        a(f"  %bi{r} = add i64 %p0, {r}")
        a(f"  %pb{r} = getelementptr inbounds i64, ptr %base, i64 %bi{r}")
        a(f"  %b{r} = load i64, ptr %pb{r}")
        a(f"  %xr{r} = getelementptr inbounds float, ptr %xn, i64 %b{r}")
    a("  br label %t.loop")
    a("t.loop:")
    a("  %t = phi i64 [ 0, %p.loop ], [ %t.next, %t.latch ]")
    a(f"  %tb = mul i64 %t, {B * W}")
    a("  %tbk = mul i64 %tb, %nk")
    a("  %wtile = getelementptr inbounds float, ptr %wt, i64 %tbk")
    a("  br label %k.loop")
    a("k.loop:")
    a("  %k = phi i64 [ 0, %t.loop ], [ %k.next, %k.loop ]")
    for r in range(R):
        for b in range(B):
            a(f"  %a{r}_{b} = phi {V} [ zeroinitializer, %t.loop ], [ %an{r}_{b}, %k.loop ]")
    a("  %pko = getelementptr inbounds i64, ptr %koff, i64 %k")
    a("  %ko = load i64, ptr %pko")
    for r in range(R):
        a(f"  %px{r} = getelementptr inbounds float, ptr %xr{r}, i64 %ko")
        a(f"  %s{r} = load float, ptr %px{r}, align 4")
        a(f"  %si{r} = insertelement {V} poison, float %s{r}, i64 0")
        a(f"  %x{r} = shufflevector {V} %si{r}, {V} poison, <{W} x i32> zeroinitializer")
    a(f"  %k8 = mul i64 %k, {W}")
    for b in range(B):
        # block b of this tile: wt + ((t * B + b) * K + k) * 8 = wtile + b * K * 8 + k * 8
        a(f"  %wbo{b} = mul i64 %nk, {b * W}")
        a(f"  %wbk{b} = add i64 %wbo{b}, %k8")
        a(f"  %pw{b} = getelementptr inbounds float, ptr %wtile, i64 %wbk{b}")
        a(f"  %w{b} = load {V}, ptr %pw{b}, align 4")
    for r in range(R):
        for b in range(B):
            a(f"  %an{r}_{b} = call {V} @llvm.fmuladd.v{W}f32({V} %x{r}, {V} %w{b}, {V} %a{r}_{b})")
    a("  %k.next = add nuw nsw i64 %k, 1")
    a("  %k.done = icmp eq i64 %k.next, %nk")
    a("  br i1 %k.done, label %t.epilogue, label %k.loop")
    _epilogue(a, R, B, W)
    if pool:
        _store_pooled(a, B, W)
    else:
        if W == 8:
            _store_whole_tile(a, R, B)
        else:
            _store_whole_tile_wide(a, R, B, W)
        _store_partial_tile(a, R, B, W)
    a("t.latch:")
    a("  %t.next = add nuw nsw i64 %t, 1")
    a("  %t.done = icmp eq i64 %t.next, %obt")
    a("  br i1 %t.done, label %p.latch, label %t.loop")
    a("p.latch:")
    a(f"  %p.next = add nuw nsw i64 %p0, {R}")
    a("  %p.done = icmp sge i64 %p.next, %np")
    a("  br i1 %p.done, label %n.latch, label %p.loop")
    a("n.latch:")
    a("  %n.next = add nuw nsw i64 %n, 1")
    a("  %n.done = icmp eq i64 %n.next, %nn")
    a("  br i1 %n.done, label %exit, label %n.loop")
    a("exit:")
    a("  ret void")
    a("}")
    return "\n".join(L) + "\n"

def _epilogue(a, R, B, W=8):
    """t.epilogue: flags bit 0 adds bias[o] (lanes are output channels: one vector load per block),
    bit 1 applies relu (flex's: x if x > 0 or x is NaN, else +0.0); without a flag the sum is kept
    as it is (adding a zero would turn -0.0 into +0.0)."""
    V, M = f"<{W} x float>", f"<{W} x i1>"
    a("t.epilogue:")
    a(f"  %o0e = mul i64 %t, {B * W}")
    for b in range(B):
        a(f"  %bo{b} = add i64 %o0e, {b * W}")
        a(f"  %pbias{b} = getelementptr inbounds float, ptr %bias, i64 %bo{b}")
        a(f"  %bv{b} = load {V}, ptr %pbias{b}, align 4")
    for r in range(R):
        for b in range(B):
            a(f"  %eb{r}_{b} = fadd {V} %an{r}_{b}, %bv{b}")
            a(f"  %ec{r}_{b} = select i1 %hasbias, {V} %eb{r}_{b}, {V} %an{r}_{b}")
            a(f"  %eg{r}_{b} = fcmp ogt {V} %ec{r}_{b}, zeroinitializer")
            a(f"  %eu{r}_{b} = fcmp uno {V} %ec{r}_{b}, %ec{r}_{b}")
            a(f"  %ek{r}_{b} = or {M} %eg{r}_{b}, %eu{r}_{b}")
            a(f"  %er{r}_{b} = select {M} %ek{r}_{b}, {V} %ec{r}_{b}, {V} zeroinitializer")
            a(f"  %en{r}_{b} = select i1 %hasrelu, {V} %er{r}_{b}, {V} %ec{r}_{b}")
    a("  br label %t.store")


def _store_whole_tile(a, R, B):
    """t.store: a whole tile transposed in registers, one vector store per output channel (else t.spill)."""
    a("t.store:")
    a(f"  %o0 = mul i64 %t, {B * 8}")
    a(f"  %rleft = sub i64 %np, %p0")
    a(f"  %rlt = icmp slt i64 %rleft, {R}")
    a(f"  %rn = select i1 %rlt, i64 %rleft, i64 {R}")
    a(f"  %oleft = sub i64 %no, %o0")
    a(f"  %olt = icmp slt i64 %oleft, {B * 8}")
    a(f"  %on = select i1 %olt, i64 %oleft, i64 {B * 8}")
    a("  %partial = or i1 %rlt, %olt")
    a("  br i1 %partial, label %t.spill, label %t.vec")
    a("t.vec:")
    # a whole tile: transposed in registers, one vector store per output channel
    for b in range(B):
        rows = [f"%en{r}_{b}" for r in range(R)]
        for h in range(0, R, 2):
            a(f"  %tl{b}_{h} = shufflevector <8 x float> {rows[h]}, <8 x float> {rows[h + 1]}, <8 x i32> <i32 0, i32 8, i32 1, i32 9, i32 4, i32 12, i32 5, i32 13>")
            a(f"  %th{b}_{h} = shufflevector <8 x float> {rows[h]}, <8 x float> {rows[h + 1]}, <8 x i32> <i32 2, i32 10, i32 3, i32 11, i32 6, i32 14, i32 7, i32 15>")
        lo = "<8 x i32> <i32 0, i32 1, i32 8, i32 9, i32 4, i32 5, i32 12, i32 13>"
        hi = "<8 x i32> <i32 2, i32 3, i32 10, i32 11, i32 6, i32 7, i32 14, i32 15>"
        for q in range(0, R, 4):
            # u0..u3 of rows q..q+3: columns (0, 4), (1, 5), (2, 6), (3, 7)
            a(f"  %u{b}_{q}_0 = shufflevector <8 x float> %tl{b}_{q}, <8 x float> %tl{b}_{q + 2}, {lo}")
            a(f"  %u{b}_{q}_1 = shufflevector <8 x float> %tl{b}_{q}, <8 x float> %tl{b}_{q + 2}, {hi}")
            a(f"  %u{b}_{q}_2 = shufflevector <8 x float> %th{b}_{q}, <8 x float> %th{b}_{q + 2}, {lo}")
            a(f"  %u{b}_{q}_3 = shufflevector <8 x float> %th{b}_{q}, <8 x float> %th{b}_{q + 2}, {hi}")
        for j in range(8):
            u = j % 4
            if R == 8:
                sel = "<8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 8, i32 9, i32 10, i32 11>" if j < 4 else \
                      "<8 x i32> <i32 4, i32 5, i32 6, i32 7, i32 12, i32 13, i32 14, i32 15>"
                a(f"  %c{b}_{j} = shufflevector <8 x float> %u{b}_0_{u}, <8 x float> %u{b}_4_{u}, {sel}")
                ty = "<8 x float>"
            else:
                sel = "<4 x i32> <i32 0, i32 1, i32 2, i32 3>" if j < 4 else "<4 x i32> <i32 4, i32 5, i32 6, i32 7>"
                a(f"  %c{b}_{j} = shufflevector <8 x float> %u{b}_0_{u}, <8 x float> poison, {sel}")
                ty = "<4 x float>"
            a(f"  %vo{b}_{j} = add i64 %o0, {b * 8 + j}")
            a(f"  %vop{b}_{j} = mul i64 %vo{b}_{j}, %np")
            a(f"  %vyo{b}_{j} = add i64 %vop{b}_{j}, %p0")
            a(f"  %vy{b}_{j} = getelementptr inbounds float, ptr %yn, i64 %vyo{b}_{j}")
            a(f"  store {ty} %c{b}_{j}, ptr %vy{b}_{j}, align 4")
    a("  br label %t.latch")


def _store_whole_tile_wide(a, R, B, W):
    """t.store of a 16-lane tile of 4 positions: the 4 rows interleaved into one [W, 4] vector per
    block (two rounds of shufflevector), then one <4 x float> store per output channel (else t.spill)."""
    V = f"<{W} x float>"
    assert R == 4, "the wide tiles hold 4 positions"
    a("t.store:")
    a(f"  %o0 = mul i64 %t, {B * W}")
    a(f"  %rleft = sub i64 %np, %p0")
    a(f"  %rlt = icmp slt i64 %rleft, {R}")
    a(f"  %rn = select i1 %rlt, i64 %rleft, i64 {R}")
    a(f"  %oleft = sub i64 %no, %o0")
    a(f"  %olt = icmp slt i64 %oleft, {B * W}")
    a(f"  %on = select i1 %olt, i64 %oleft, i64 {B * W}")
    a("  %partial = or i1 %rlt, %olt")
    a("  br i1 %partial, label %t.spill, label %t.vec")
    a("t.vec:")
    pairs = ", ".join(f"i32 {i}, i32 {i + W}" for i in range(W))            # (r0[i], r1[i]) for each lane i
    quads = ", ".join(f"i32 {2 * i}, i32 {2 * i + 1}, i32 {2 * i + 2 * W}, i32 {2 * i + 2 * W + 1}" for i in range(W))
    for b in range(B):
        a(f"  %i01_{b} = shufflevector {V} %en0_{b}, {V} %en1_{b}, <{2 * W} x i32> <{pairs}>")
        a(f"  %i23_{b} = shufflevector {V} %en2_{b}, {V} %en3_{b}, <{2 * W} x i32> <{pairs}>")
        # lane j's four positions at 4 j .. 4 j + 3
        a(f"  %iq_{b} = shufflevector <{2 * W} x float> %i01_{b}, <{2 * W} x float> %i23_{b}, <{4 * W} x i32> <{quads}>")
        for j in range(W):
            sel = ", ".join(f"i32 {4 * j + r}" for r in range(4))
            a(f"  %c{b}_{j} = shufflevector <{4 * W} x float> %iq_{b}, <{4 * W} x float> poison, <4 x i32> <{sel}>")
            a(f"  %vo{b}_{j} = add i64 %o0, {b * W + j}")
            a(f"  %vop{b}_{j} = mul i64 %vo{b}_{j}, %np")
            a(f"  %vyo{b}_{j} = add i64 %vop{b}_{j}, %p0")
            a(f"  %vy{b}_{j} = getelementptr inbounds float, ptr %yn, i64 %vyo{b}_{j}")
            a(f"  store <4 x float> %c{b}_{j}, ptr %vy{b}_{j}, align 4")
    a("  br label %t.latch")


def _store_partial_tile(a, R, B, W=8):
    """t.spill: a partial tile (the last positions, the last channels) spilled, stored lane by lane."""
    V = f"<{W} x float>"
    a("t.spill:")
    # a partial tile (the last positions, the last channels): spilled, then stored lane by lane
    for r in range(R):
        for b in range(B):
            a(f"  %sp{r}_{b} = getelementptr inbounds [{R * B} x {V}], ptr %acc, i64 0, i64 {r * B + b}")
            a(f"  store {V} %en{r}_{b}, ptr %sp{r}_{b}, align {4 * W}")
    a("  br label %so.loop")
    a("so.loop:")
    a("  %oo = phi i64 [ 0, %t.spill ], [ %oo.next, %so.latch ]")
    a("  %og = add i64 %o0, %oo")
    a("  %ogp = mul i64 %og, %np")
    a("  %yo0 = add i64 %ogp, %p0")
    a("  %yo = getelementptr inbounds float, ptr %yn, i64 %yo0")
    a("  br label %sr.loop")
    a("sr.loop:")
    a("  %rr = phi i64 [ 0, %so.loop ], [ %rr.next, %sr.loop ]")
    # acc float index: (rr * B + oo / W) * W + oo % W = rr * B * W + oo
    a(f"  %ai0 = mul i64 %rr, {B * W}")
    a("  %ai = add i64 %ai0, %oo")
    a("  %pa = getelementptr inbounds float, ptr %acc, i64 %ai")
    a("  %v = load float, ptr %pa, align 4")
    a("  %py = getelementptr inbounds float, ptr %yo, i64 %rr")
    a("  store float %v, ptr %py, align 4")
    a("  %rr.next = add nuw nsw i64 %rr, 1")
    a("  %rr.done = icmp eq i64 %rr.next, %rn")
    a("  br i1 %rr.done, label %so.latch, label %sr.loop")
    a("so.latch:")
    a("  %oo.next = add nuw nsw i64 %oo, 1")
    a("  %oo.done = icmp eq i64 %oo.next, %on")
    a("  br i1 %oo.done, label %t.latch, label %so.loop")


def _store_pooled(a, B, W=8):
    """t.store of the pooled kernel: the window's maximum per output channel (its 4 positions are the
    tile's rows), one float per channel into y[n, o, q]; the last channels (past O) spilled."""
    V = f"<{W} x float>"
    a("t.store:")
    a(f"  %o0 = mul i64 %t, {B * W}")
    a("  %qi = lshr i64 %p0, 2")
    a("  %pqo = getelementptr inbounds i64, ptr %qoff, i64 %qi")
    a("  %q = load i64, ptr %pqo")
    for b in range(B):
        a(f"  %mx{b}_0 = call {V} @dc_np_max{W}({V} %en0_{b}, {V} %en1_{b})")
        a(f"  %mx{b}_1 = call {V} @dc_np_max{W}({V} %mx{b}_0, {V} %en2_{b})")
        a(f"  %mx{b} = call {V} @dc_np_max{W}({V} %mx{b}_1, {V} %en3_{b})")
    a("  %oleft = sub i64 %no, %o0")
    a(f"  %olt = icmp slt i64 %oleft, {B * W}")
    a("  br i1 %olt, label %t.spill, label %t.vec")
    a("t.vec:")
    for b in range(B):
        for j in range(W):
            a(f"  %pe{b}_{j} = extractelement {V} %mx{b}, i64 {j}")
            a(f"  %pc{b}_{j} = add i64 %o0, {b * W + j}")
            a(f"  %pq{b}_{j} = mul i64 %pc{b}_{j}, %pp")
            a(f"  %pr{b}_{j} = add i64 %pq{b}_{j}, %q")
            a(f"  %py{b}_{j} = getelementptr inbounds float, ptr %yn, i64 %pr{b}_{j}")
            a(f"  store float %pe{b}_{j}, ptr %py{b}_{j}, align 4")
    a("  br label %t.latch")
    a("t.spill:")
    for b in range(B):
        a(f"  %sp{b} = getelementptr inbounds [{4 * B} x {V}], ptr %acc, i64 0, i64 {b}")
        a(f"  store {V} %mx{b}, ptr %sp{b}, align {4 * W}")
    a("  br label %so.loop")
    a("so.loop:")
    a("  %oo = phi i64 [ 0, %t.spill ], [ %oo.next, %so.loop ]")
    a("  %pa = getelementptr inbounds float, ptr %acc, i64 %oo")
    a("  %v = load float, ptr %pa, align 4")
    a("  %og = add i64 %o0, %oo")
    a("  %ogp = mul i64 %og, %pp")
    a("  %yo = add i64 %ogp, %q")
    a("  %py = getelementptr inbounds float, ptr %yn, i64 %yo")
    a("  store float %v, ptr %py, align 4")
    a("  %oo.next = add nuw nsw i64 %oo, 1")
    a("  %oo.done = icmp eq i64 %oo.next, %oleft")
    a("  br i1 %oo.done, label %t.latch, label %so.loop")


GRAD_ROWS_HEADER = """
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
"""


def grad_rows_fn(OT, KT):
    name = f"grad_weight_rows_o{OT}k{KT}_f32"
    L = []
    a = L.append
    a(f"define void @{name}(ptr noalias nocapture readonly %xp, ptr noalias nocapture readonly %g,")
    a("                    ptr noalias nocapture %acc, ptr noalias nocapture readonly %d,")
    a("                    ptr noalias nocapture readonly %koff) nounwind #3 {")
    a("entry:")
    for i, v in enumerate(["nn", "no", "nk", "oh", "ow", "xs", "wp", "o4", "k3"]):
        a(f"  %dp{i} = getelementptr inbounds i64, ptr %d, i64 {i}")
        a(f"  %{v} = load i64, ptr %dp{i}")
    a("  %plane = mul i64 %oh, %ow")
    a("  %gs = mul i64 %no, %plane")
    a("  %olast = sub i64 %no, 1")
    a("  %ow8 = and i64 %ow, -8")
    a("  %owrest = sub i64 %ow, %ow8")
    a("  %hasrest = icmp sgt i64 %owrest, 0")
    a("  %r32 = trunc i64 %owrest to i32")
    a("  %rs = insertelement <8 x i32> poison, i32 %r32, i64 0")
    a("  %rsplat = shufflevector <8 x i32> %rs, <8 x i32> poison, <8 x i32> zeroinitializer")
    a("  %rmask = icmp slt <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>, %rsplat")
    a("  %z1 = icmp sle i64 %nn, 0")
    a("  %z2 = icmp sle i64 %no, 0")
    a("  %z3 = icmp sle i64 %nk, 0")
    a("  %z4 = icmp sle i64 %plane, 0")
    a("  %z12 = or i1 %z1, %z2")
    a("  %z34 = or i1 %z3, %z4")
    a("  %empty = or i1 %z12, %z34")
    a("  br i1 %empty, label %exit, label %n.loop")
    a("n.loop:")
    a("  %n = phi i64 [ 0, %entry ], [ %n.next, %n.latch ]")
    a("  %xno = mul i64 %n, %xs")
    a("  %xn = getelementptr inbounds float, ptr %xp, i64 %xno")
    a("  %gno = mul i64 %n, %gs")
    a("  %gn = getelementptr inbounds float, ptr %g, i64 %gno")
    a("  br label %o.loop")
    a("o.loop:")
    a("  %o0 = phi i64 [ 0, %n.loop ], [ %o.next, %o.latch ]")
    for r in range(OT):
        a(f"  %or{r} = add i64 %o0, {r}")
        a(f"  %ob{r} = icmp slt i64 %or{r}, %no")
        a(f"  %oc{r} = select i1 %ob{r}, i64 %or{r}, i64 %olast")
        a(f"  %go{r} = mul i64 %oc{r}, %plane")
        a(f"  %gr{r} = getelementptr inbounds float, ptr %gn, i64 %go{r}")
    a("  br label %k.loop")
    a("k.loop:")
    a("  %k0 = phi i64 [ 0, %o.loop ], [ %k.next, %k.latch ]")
    for t in range(KT):
        a(f"  %kt{t} = add i64 %k0, {t}")
        a(f"  %pko{t} = getelementptr inbounds i64, ptr %koff, i64 %kt{t}")
        a(f"  %ko{t} = load i64, ptr %pko{t}")
        a(f"  %xk{t} = getelementptr inbounds float, ptr %xn, i64 %ko{t}")
    # load the tile's accumulators
    for r in range(OT):
        for t in range(KT):
            a(f"  %ai{r}_{t}a = mul i64 %or{r}, %k3")
            a(f"  %ai{r}_{t}b = add i64 %ai{r}_{t}a, %kt{t}")
            a(f"  %ai{r}_{t} = mul i64 %ai{r}_{t}b, 8")
            a(f"  %pa{r}_{t} = getelementptr inbounds float, ptr %acc, i64 %ai{r}_{t}")
            a(f"  %a0_{r}_{t} = load <8 x float>, ptr %pa{r}_{t}, align 4")
    a("  br label %h.loop")
    a("h.loop:")
    a("  %h = phi i64 [ 0, %k.loop ], [ %h.next, %h.latch ]")
    _tile_phis(a, OT, KT, "ah", ("a0_", "%k.loop"), ("aw", "%h.latch"))
    a("  %hg = mul i64 %h, %ow")
    a("  %hx = mul i64 %h, %wp")
    a("  %hasv = icmp sgt i64 %ow8, 0")
    a("  br i1 %hasv, label %w.loop, label %w.done")
    a("w.loop:")
    a("  %c = phi i64 [ 0, %h.loop ], [ %c.next, %w.loop ]")
    _tile_phis(a, OT, KT, "av", ("ah", "%h.loop"), ("an", "%w.loop"))
    a("  %gc = add i64 %hg, %c")
    a("  %xc = add i64 %hx, %c")
    _rows_fma(a, OT, KT, "v", "%gc", "%xc", "av", "an", masked=False)
    a("  %c.next = add nuw nsw i64 %c, 8")
    a("  %c.done = icmp eq i64 %c.next, %ow8")
    a("  br i1 %c.done, label %w.done, label %w.loop")
    a("w.done:")
    _tile_phis(a, OT, KT, "ad", ("ah", "%h.loop"), ("an", "%w.loop"))
    a("  br i1 %hasrest, label %w.tail, label %h.latch")
    a("w.tail:")
    a("  ; the row's last OW mod 8 columns: masked loads (zeros past the row add nothing)")
    a("  %gt = add i64 %hg, %ow8")
    a("  %xt = add i64 %hx, %ow8")
    _rows_fma(a, OT, KT, "t", "%gt", "%xt", "ad", "at", masked=True)
    a("  br label %h.latch")
    a("h.latch:")
    _tile_phis(a, OT, KT, "aw", ("ad", "%w.done"), ("at", "%w.tail"))
    a("  %h.next = add nuw nsw i64 %h, 1")
    a("  %h.done = icmp eq i64 %h.next, %oh")
    a("  br i1 %h.done, label %k.store, label %h.loop")
    a("k.store:")
    for r in range(OT):
        for t in range(KT):
            a(f"  store <8 x float> %aw{r}_{t}, ptr %pa{r}_{t}, align 4")
    a("  br label %k.latch")
    a("k.latch:")
    a(f"  %k.next = add nuw nsw i64 %k0, {KT}")
    a("  %k.done = icmp sge i64 %k.next, %k3")
    a("  br i1 %k.done, label %o.latch, label %k.loop")
    a("o.latch:")
    a(f"  %o.next = add nuw nsw i64 %o0, {OT}")
    a("  %o.done = icmp sge i64 %o.next, %o4")
    a("  br i1 %o.done, label %n.latch, label %o.loop")
    a("n.latch:")
    a("  %n.next = add nuw nsw i64 %n, 1")
    a("  %n.done = icmp eq i64 %n.next, %nn")
    a("  br i1 %n.done, label %exit, label %n.loop")
    a("exit:")
    a("  ret void")
    a("}")
    return "\n".join(L) + "\n"



def _tile_phis(a, OT, KT, name, first, second):
    """The tile's accumulators as phis: ``%name{r}_{t}`` from ``(value prefix, block)`` pairs."""
    for r in range(OT):
        for t in range(KT):
            a(f"  %{name}{r}_{t} = phi <8 x float> [ %{first[0]}{r}_{t}, {first[1]} ], "
              f"[ %{second[0]}{r}_{t}, {second[1]} ]")


def _rows_fma(a, OT, KT, tag, g_off, x_off, acc_in, acc_out, masked):
    """One block of 8 positions: OT rows of g and KT shifted input rows loaded (masked: the
    row's tail, zeros past it), OT * KT FMAs from accumulators acc_in into acc_out."""
    def load(ptr):
        if masked:
            return (f"call <8 x float> @llvm.masked.load.v8f32.p0(ptr {ptr}, i32 4, <8 x i1> %rmask, "
                    f"<8 x float> zeroinitializer)")
        return f"load <8 x float>, ptr {ptr}, align 4"
    for r in range(OT):
        a(f"  %p{tag}g{r} = getelementptr inbounds float, ptr %gr{r}, i64 {g_off}")
        a(f"  %{tag}g{r} = {load(f'%p{tag}g{r}')}")
    for t in range(KT):
        a(f"  %p{tag}x{t} = getelementptr inbounds float, ptr %xk{t}, i64 {x_off}")
        a(f"  %{tag}x{t} = {load(f'%p{tag}x{t}')}")
    for r in range(OT):
        for t in range(KT):
            a(f"  %{acc_out}{r}_{t} = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %{tag}g{r}, "
              f"<8 x float> %{tag}x{t}, <8 x float> %{acc_in}{r}_{t})")


WIDE_HEADER = """
; The same tilings on 16 lanes (blocks of 16 output channels, weights packed as
; wt[(b * K + k) * 16 + lane] = w[b * 16 + lane, k], bias OBT * B * 16 floats; d as above with OBT
; counting tiles of B blocks of 16), for hosts with 512-bit vectors (AVX-512): 4 positions x 32
; channels in 8 accumulators of 16 lanes (r4b2w16), twice the multiply-adds per instruction, or
; 4 positions x 16 channels (r4b1w16, half the instructions of r4b2's 8-lane tile for 9 to 16
; channels). Each lane runs the same fmuladd chain over k as the 8-lane kernels: the same bits.
"""

def _np_max(W, comment):
    """numpy's maximum(a, b) on W lanes: a where a > b or a is NaN, else b."""
    V, M = f"<{W} x float>", f"<{W} x i1>"
    return f"""
{comment}
define internal {V} @dc_np_max{W}({V} %a, {V} %b) alwaysinline nounwind readnone {{
  %gt = fcmp ogt {V} %a, %b
  %nan = fcmp uno {V} %a, %a
  %keep = or {M} %gt, %nan
  %r = select {M} %keep, {V} %a, {V} %b
  ret {V} %r
}}
"""


NP_MAX8 = _np_max(8, "; numpy's maximum(a, b) on eight lanes: a where a > b or a is NaN, else b (pool.ll's np_max8p)")
NP_MAX16 = _np_max(16, "; the same on sixteen lanes (the 16-lane tiles' pooling)")


def source() -> str:
    """The text of direct.ll."""
    return HEADER + "\n" + tile_fn(4, 2) + "\n" + tile_fn(8, 1) + "\n" + tile_fn(4, 2, pool=True) + NP_MAX8 \
        + GRAD_ROWS_HEADER + grad_rows_fn(4, 3) + WIDE_HEADER + "\n" + tile_fn(4, 2, W=16) + "\n" \
        + tile_fn(4, 2, pool=True, W=16) + "\n" + tile_fn(4, 1, W=16) + "\n" + tile_fn(4, 1, pool=True, W=16) + NP_MAX16 + '''
declare <8 x float> @llvm.fmuladd.v8f32(<8 x float>, <8 x float>, <8 x float>)
declare <16 x float> @llvm.fmuladd.v16f32(<16 x float>, <16 x float>, <16 x float>)
declare <8 x float> @llvm.masked.load.v8f32.p0(ptr, i32, <8 x i1>, <8 x float>)

attributes #3 = { nounwind "no-builtins" }
; 512-bit vectors are legal in these functions even where the CPU's tuning prefers 256-bit ones
attributes #4 = { nounwind "no-builtins" "min-legal-vector-width"="512" }
'''


if __name__ == "__main__":
    text = source()
    if "--check" in sys.argv:
        with open(TARGET) as f:
            sys.exit(0 if f.read() == text else 1)
    with open(TARGET, "w") as f:
        f.write(text)
