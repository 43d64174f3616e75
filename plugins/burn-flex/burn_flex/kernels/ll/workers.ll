; flex's native worker pool (burn_flex/native_pool.py): chunks of one JIT kernel call run on the
; calling thread and on worker threads that wait for work in native code, so a hand-off costs a
; cache line, not a Python thread's wake-up and the GIL (~20-50 us: as much as splitting a 100 us
; convolution saves). Compiled with the other kernels (burn_flex/jit.py).
;
; One task at a time (the Python side holds a lock around @wp_run): @wp_fn(@wp_arg, chunk) for
; chunk = 0 .. n-1. The task is published in one 64-bit word, @wp_ticket = gen << 40 | n << 20 | i
; (i: the next chunk to claim; gen counts tasks), and a thread claims chunk i by a compare-and-swap
; of the whole word to i + 1, so a claim can only succeed for the task that is published (a thread
; that read an older word fails its swap) and the task's fields, written before the word, are read
; after it. @wp_done counts finished chunks; @wp_run returns when it reaches n, so every chunk has
; run, on whichever thread, before the caller reads the result. Which thread runs a chunk never
; changes a result: chunks write disjoint outputs (the callers' contract).
;
; A worker (@wp_worker, called by a Python thread that then holds no GIL) claims chunks while there
; are any, and otherwise spins (pause, and sched_yield every 64 rounds: OpenBLAS's threads and the
; caller may need the core) until @wp_spin cycles have passed without work; then it marks its slot
; 0 and returns 0, and the Python thread parks on an event until the next task wakes it. Before
; returning it looks at the ticket once more after the slot is 0 (both seq_cst), and the poster
; stores the ticket before it reads the slots (in Python, after @wp_run's store: see
; native_pool.py): a task is either seen by the worker or the worker is seen parked and woken.
; @wp_stop set: the worker returns 1 (the pool is being shut down).

@wp_ticket = internal global i64 0, align 64
@wp_fn = internal global ptr null, align 64
@wp_arg = internal global ptr null, align 8
@wp_done = internal global i64 0, align 64
@wp_stop = internal global i64 0, align 64
@wp_spin = internal global i64 600000, align 8
@wp_yield = internal global ptr null, align 8
@wp_by_workers = internal global i64 0, align 64
@wp_syscall = internal global ptr null, align 8
@wp_futex_nr = internal global i64 0, align 8
@wp_wake = internal global i32 0, align 64
@wp_sleepers = internal global i64 0, align 64

define internal void @wp_relax() alwaysinline nounwind {
  call void @llvm.x86.sse2.pause()
  ret void
}

declare void @llvm.x86.sse2.pause()

declare i64 @llvm.readcyclecounter()

; wp_setup(spin cycles, sched_yield's address or null, syscall's address or null, SYS_futex)
define void @wp_setup(i64 %spin, ptr %yield, ptr %syscall, i64 %futex) nounwind {
  store i64 %spin, ptr @wp_spin
  store ptr %yield, ptr @wp_yield
  store ptr %syscall, ptr @wp_syscall
  store i64 %futex, ptr @wp_futex_nr
  ; a fresh pool (or one in a forked child, which has none of the parent's workers): no task on
  ; offer, no sleeper counted
  %old = load atomic i64, ptr @wp_ticket seq_cst, align 8
  %g = lshr i64 %old, 40
  %g1 = add i64 %g, 1
  %gm = and i64 %g1, 16777215
  %t = shl i64 %gm, 40
  store atomic i64 %t, ptr @wp_ticket seq_cst, align 8
  store atomic i64 0, ptr @wp_sleepers seq_cst, align 8
  store atomic i64 0, ptr @wp_stop seq_cst, align 8
  ret void
}

; wake every worker sleeping on @wp_wake (FUTEX_WAKE_PRIVATE), if any sleeps
define internal void @wp_wake_all() nounwind {
entry:
  %n = load atomic i64, ptr @wp_sleepers seq_cst, align 8
  %any = icmp sgt i64 %n, 0
  br i1 %any, label %wake, label %exit
wake:
  %old = atomicrmw add ptr @wp_wake, i32 1 seq_cst
  %sys = load ptr, ptr @wp_syscall
  %nr = load i64, ptr @wp_futex_nr
  %r = call i64 (i64, ...) %sys(i64 %nr, ptr @wp_wake, i64 129, i64 2147483647)
  br label %exit
exit:
  ret void
}

define void @wp_shutdown() nounwind {
  store atomic i64 1, ptr @wp_stop seq_cst, align 8
  call void @wp_wake_all()
  ret void
}

; the chunk the word %v offers (its i, when i < n), or -1
define internal i64 @wp_offered(i64 %v) alwaysinline nounwind readnone {
  %i = and i64 %v, 1048575
  %ns = lshr i64 %v, 20
  %n = and i64 %ns, 1048575
  %has = icmp ult i64 %i, %n
  %r = select i1 %has, i64 %i, i64 -1
  ret i64 %r
}

define internal void @wp_maybe_yield(i64 %round) alwaysinline nounwind {
entry:
  %m = and i64 %round, 63
  %due = icmp eq i64 %m, 63
  %f = load ptr, ptr @wp_yield
  %has = icmp ne ptr %f, null
  %go = and i1 %due, %has
  br i1 %go, label %call, label %exit
call:
  %r = call i32 %f()
  br label %exit
exit:
  ret void
}

; claim and run chunks of the published task until none is left; how many it ran
define internal i64 @wp_drain() nounwind {
entry:
  br label %look
look:
  %ran = phi i64 [ 0, %entry ], [ %ran, %lost ], [ %ran.next, %run ]
  %v = load atomic i64, ptr @wp_ticket acquire, align 8
  %i = call i64 @wp_offered(i64 %v)
  %none = icmp slt i64 %i, 0
  br i1 %none, label %exit, label %claim
claim:
  %v1 = add i64 %v, 1
  %pair = cmpxchg ptr @wp_ticket, i64 %v, i64 %v1 acq_rel acquire
  %ok = extractvalue { i64, i1 } %pair, 1
  br i1 %ok, label %run, label %lost
lost:
  br label %look
run:
  %fn = load ptr, ptr @wp_fn
  %arg = load ptr, ptr @wp_arg
  call void %fn(ptr %arg, i64 %i)
  %old = atomicrmw add ptr @wp_done, i64 1 acq_rel
  %ran.next = add i64 %ran, 1
  br label %look
exit:
  ret i64 %ran
}

; chunks run by workers (not by the thread that published them) since the module was loaded
define i64 @wp_worker_chunks() nounwind {
  %n = load atomic i64, ptr @wp_by_workers acquire, align 8
  ret i64 %n
}

; wp_worker(slot): 1 in *slot while here; after @wp_spin idle cycles it sleeps in the kernel (with
; syscall's address given to wp_setup) or returns 0 (slot 0: the Python thread parks); 1 on stop
define i64 @wp_worker(ptr %slot) nounwind {
entry:
  store atomic i64 1, ptr %slot seq_cst, align 8
  %t0 = call i64 @llvm.readcyclecounter()
  br label %round
round:
  %since = phi i64 [ %t0, %entry ], [ %since.next, %idle.more ], [ %t0, %recheck.work ], [ %t1, %woke ]
  %k = phi i64 [ 0, %entry ], [ %k.next, %idle.more ], [ 0, %recheck.work ], [ 0, %woke ]
  %ran = call i64 @wp_drain()
  %any = icmp ne i64 %ran, 0
  br i1 %any, label %worked, label %idle
worked:
  %cnt = atomicrmw add ptr @wp_by_workers, i64 %ran monotonic
  %tw = call i64 @llvm.readcyclecounter()
  br label %idle.more.from.work
idle.more.from.work:
  br label %idle.check
idle:
  br label %idle.check
idle.check:
  %s0 = phi i64 [ %tw, %idle.more.from.work ], [ %since, %idle ]
  %stop = load atomic i64, ptr @wp_stop acquire, align 8
  %stopping = icmp ne i64 %stop, 0
  br i1 %stopping, label %leave.stop, label %clock
clock:
  %now = call i64 @llvm.readcyclecounter()
  %el = sub i64 %now, %s0
  %lim = load i64, ptr @wp_spin
  %over = icmp ugt i64 %el, %lim
  br i1 %over, label %park, label %idle.more
idle.more:
  call void @wp_relax()
  call void @wp_maybe_yield(i64 %k)
  %k.next = add i64 %k, 1
  %since.next = add i64 %s0, 0
  br label %round
park:
  %sys = load ptr, ptr @wp_syscall
  %native = icmp ne ptr %sys, null
  br i1 %native, label %sleep, label %park.python
sleep:
  ; sleep in the kernel until a task comes (FUTEX_WAIT_PRIVATE on @wp_wake): the count of sleepers
  ; goes up before the ticket is looked at again, and a poster stores the ticket before it reads
  ; the count (all seq_cst), so a task is either seen here or its poster wakes this worker
  %seq = load atomic i32, ptr @wp_wake seq_cst, align 4
  %sl = atomicrmw add ptr @wp_sleepers, i64 1 seq_cst
  %v2 = load atomic i64, ptr @wp_ticket seq_cst, align 8
  %i2 = call i64 @wp_offered(i64 %v2)
  %has2 = icmp sge i64 %i2, 0
  %stop2 = load atomic i64, ptr @wp_stop seq_cst, align 8
  %st2 = icmp ne i64 %stop2, 0
  %skip = or i1 %has2, %st2
  br i1 %skip, label %woke, label %wait
wait:
  %nr = load i64, ptr @wp_futex_nr
  %seq64 = zext i32 %seq to i64
  %r = call i64 (i64, ...) %sys(i64 %nr, ptr @wp_wake, i64 128, i64 %seq64, ptr null)
  br label %woke
woke:
  %sl2 = atomicrmw sub ptr @wp_sleepers, i64 1 seq_cst
  %t1 = call i64 @llvm.readcyclecounter()
  br label %round
park.python:
  store atomic i64 0, ptr %slot seq_cst, align 8
  %v = load atomic i64, ptr @wp_ticket seq_cst, align 8
  %i = call i64 @wp_offered(i64 %v)
  %none = icmp slt i64 %i, 0
  br i1 %none, label %leave, label %recheck.work
recheck.work:
  store atomic i64 1, ptr %slot seq_cst, align 8
  br label %round
leave:
  ret i64 0
leave.stop:
  store atomic i64 0, ptr %slot seq_cst, align 8
  ret i64 1
}

; wp_run(fn, arg, n, wake): publish the task, wake sleeping workers if %wake is not 0 (a small task
; leaves them asleep: a wake-up costs the caller more than a late worker saves), run chunks here
; too, return when all n have run
define void @wp_run(ptr %fn, ptr %arg, i64 %n, i64 %wake) nounwind {
entry:
  store ptr %fn, ptr @wp_fn
  store ptr %arg, ptr @wp_arg
  store atomic i64 0, ptr @wp_done seq_cst, align 8
  %old = load atomic i64, ptr @wp_ticket seq_cst, align 8
  %g = lshr i64 %old, 40
  %g1 = add i64 %g, 1
  %gm = and i64 %g1, 16777215
  %gs = shl i64 %gm, 40
  %nm = and i64 %n, 1048575
  %ns = shl i64 %nm, 20
  %t = or i64 %gs, %ns
  store atomic i64 %t, ptr @wp_ticket seq_cst, align 8
  %wakes = icmp ne i64 %wake, 0
  br i1 %wakes, label %wake.them, label %work
wake.them:
  call void @wp_wake_all()
  br label %work
work:
  %r = call i64 @wp_drain()
  br label %wait
wait:
  %k = phi i64 [ 0, %work ], [ %k.next, %more ]
  %d = load atomic i64, ptr @wp_done acquire, align 8
  %all = icmp sge i64 %d, %nm
  br i1 %all, label %exit, label %more
more:
  call void @wp_relax()
  call void @wp_maybe_yield(i64 %k)
  %k.next = add i64 %k, 1
  br label %wait
exit:
  ret void
}

; Any kernel whose arguments are pointers, called once per chunk with a row of arguments of its
; own: arg is an i64 table of rows [kernel, a0, ..., a9] (11 i64 each; a kernel with fewer
; arguments ignores the rest). The caller prepares every row (its slices, its geometry array).
define void @wp_call_chunk(ptr %tab, i64 %c) nounwind {
entry:
  %row0 = mul i64 %c, 11
  %row = getelementptr inbounds i64, ptr %tab, i64 %row0
  %fn = load ptr, ptr %row
  %p1 = getelementptr inbounds i64, ptr %row, i64 1
  %a0 = load ptr, ptr %p1
  %p2 = getelementptr inbounds i64, ptr %row, i64 2
  %a1 = load ptr, ptr %p2
  %p3 = getelementptr inbounds i64, ptr %row, i64 3
  %a2 = load ptr, ptr %p3
  %p4 = getelementptr inbounds i64, ptr %row, i64 4
  %a3 = load ptr, ptr %p4
  %p5 = getelementptr inbounds i64, ptr %row, i64 5
  %a4 = load ptr, ptr %p5
  %p6 = getelementptr inbounds i64, ptr %row, i64 6
  %a5 = load ptr, ptr %p6
  %p7 = getelementptr inbounds i64, ptr %row, i64 7
  %a6 = load ptr, ptr %p7
  %p8 = getelementptr inbounds i64, ptr %row, i64 8
  %a7 = load ptr, ptr %p8
  %p9 = getelementptr inbounds i64, ptr %row, i64 9
  %a8 = load ptr, ptr %p9
  %p10 = getelementptr inbounds i64, ptr %row, i64 10
  %a9 = load ptr, ptr %p10
  call void %fn(ptr %a0, ptr %a1, ptr %a2, ptr %a3, ptr %a4, ptr %a5, ptr %a6, ptr %a7, ptr %a8, ptr %a9)
  ret void
}

; A kernel call split over items (images, planes) whose arguments advance by a fixed number of
; bytes per item: arg is an i64 table
;   [kernel, N, CHUNKS, DARG, DLEN, DSLOT, DMUL, 0, (address, bytes per item) x 10]
; Chunk c takes items N * c / CHUNKS .. N * (c + 1) / CHUNKS - 1: each argument's address plus the
; first item's offset, and for argument DARG (the kernel's geometry array, DLEN <= 16 i64; -1: none)
; a copy whose entry DSLOT is the chunk's item count times DMUL (planes = images * channels).
define void @wp_strided_chunk(ptr %tab, i64 %c) nounwind {
entry:
  %args = alloca [10 x ptr], align 8
  %dl = alloca [16 x i64], align 8
  %p1 = getelementptr inbounds i64, ptr %tab, i64 1
  %n = load i64, ptr %p1
  %p2 = getelementptr inbounds i64, ptr %tab, i64 2
  %chunks = load i64, ptr %p2
  %p3 = getelementptr inbounds i64, ptr %tab, i64 3
  %darg = load i64, ptr %p3
  %p4 = getelementptr inbounds i64, ptr %tab, i64 4
  %dlen = load i64, ptr %p4
  %p5 = getelementptr inbounds i64, ptr %tab, i64 5
  %dslot = load i64, ptr %p5
  %p6 = getelementptr inbounds i64, ptr %tab, i64 6
  %dmul = load i64, ptr %p6
  %m0 = mul i64 %n, %c
  %a = sdiv i64 %m0, %chunks
  %c1 = add i64 %c, 1
  %m1 = mul i64 %n, %c1
  %e = sdiv i64 %m1, %chunks
  %cnt = sub i64 %e, %a
  %empty = icmp sle i64 %cnt, 0
  br i1 %empty, label %exit, label %args.loop
args.loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %args.loop ]
  %ti = mul i64 %i, 2
  %tb = add i64 %ti, 8
  %pbase = getelementptr inbounds i64, ptr %tab, i64 %tb
  %base = load i64, ptr %pbase
  %ts = add i64 %tb, 1
  %pstride = getelementptr inbounds i64, ptr %tab, i64 %ts
  %stride = load i64, ptr %pstride
  %off = mul i64 %a, %stride
  %addr = add i64 %base, %off
  %ptr = inttoptr i64 %addr to ptr
  %slot = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 %i
  store ptr %ptr, ptr %slot
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, 10
  br i1 %more, label %args.loop, label %geometry
geometry:
  %hasd = icmp sge i64 %darg, 0
  br i1 %hasd, label %patch, label %call
patch:
  %dti = mul i64 %darg, 2
  %dtb = add i64 %dti, 8
  %pdbase = getelementptr inbounds i64, ptr %tab, i64 %dtb
  %dbase = load i64, ptr %pdbase
  %dsrc = inttoptr i64 %dbase to ptr
  %dbytes = mul i64 %dlen, 8
  call void @llvm.memcpy.p0.p0.i64(ptr align 8 %dl, ptr align 8 %dsrc, i64 %dbytes, i1 false)
  %count = mul i64 %cnt, %dmul
  %pslot = getelementptr inbounds [16 x i64], ptr %dl, i64 0, i64 %dslot
  store i64 %count, ptr %pslot
  %dslotarg = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 %darg
  store ptr %dl, ptr %dslotarg
  br label %call
call:
  %fn = load ptr, ptr %tab
  %q0 = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 0
  %a0 = load ptr, ptr %q0
  %q1 = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 1
  %a1 = load ptr, ptr %q1
  %q2 = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 2
  %a2 = load ptr, ptr %q2
  %q3 = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 3
  %a3 = load ptr, ptr %q3
  %q4 = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 4
  %a4 = load ptr, ptr %q4
  %q5 = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 5
  %a5 = load ptr, ptr %q5
  %q6 = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 6
  %a6 = load ptr, ptr %q6
  %q7 = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 7
  %a7 = load ptr, ptr %q7
  %q8 = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 8
  %a8 = load ptr, ptr %q8
  %q9 = getelementptr inbounds [10 x ptr], ptr %args, i64 0, i64 9
  %a9 = load ptr, ptr %q9
  call void %fn(ptr %a0, ptr %a1, ptr %a2, ptr %a3, ptr %a4, ptr %a5, ptr %a6, ptr %a7, ptr %a8, ptr %a9)
  br label %exit
exit:
  ret void
}

declare void @llvm.memcpy.p0.p0.i64(ptr noalias nocapture writeonly, ptr noalias nocapture readonly, i64, i1 immarg)

; A program of strided calls (burn_flex.native_replay): arg is an i64 table [CALLS, 0 x 7, then
; CALLS tables of wp_strided_chunk (28 i64 each)], all with the same item count and chunk count.
; Chunk c runs every call's chunk c in order: a call reads what the calls before it wrote for
; the same items (a captured graph's steps, split by images).
define void @wp_program_chunk(ptr %tab, i64 %c) nounwind {
entry:
  %n = load i64, ptr %tab
  %none = icmp sle i64 %n, 0
  br i1 %none, label %exit, label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k.next, %loop ]
  %k28 = mul i64 %k, 28
  %off = add i64 %k28, 8
  %sub = getelementptr inbounds i64, ptr %tab, i64 %off
  call void @wp_strided_chunk(ptr %sub, i64 %c)
  %k.next = add i64 %k, 1
  %more = icmp slt i64 %k.next, %n
  br i1 %more, label %loop, label %exit
exit:
  ret void
}

; C = A @ B through the BLAS numpy uses (its cblas_sgemm, ILP64: burn_flex.native_replay finds it)
; with numpy's own arguments, so the bits are numpy's matmul's: geo is an i64 table
;   [cblas_sgemm, M, N, K, lda, ldb, ldc, TRANSB, TRANSA] (111: as stored, 112: transposed)
; row-major, alpha 1, beta 0.
define void @wp_sgemm(ptr %a, ptr %b, ptr %c, ptr %geo) nounwind {
entry:
  %fn = load ptr, ptr %geo
  %g1 = getelementptr inbounds i64, ptr %geo, i64 1
  %m = load i64, ptr %g1
  %g2 = getelementptr inbounds i64, ptr %geo, i64 2
  %n = load i64, ptr %g2
  %g3 = getelementptr inbounds i64, ptr %geo, i64 3
  %k = load i64, ptr %g3
  %g4 = getelementptr inbounds i64, ptr %geo, i64 4
  %lda = load i64, ptr %g4
  %g5 = getelementptr inbounds i64, ptr %geo, i64 5
  %ldb = load i64, ptr %g5
  %g6 = getelementptr inbounds i64, ptr %geo, i64 6
  %ldc = load i64, ptr %g6
  %g7 = getelementptr inbounds i64, ptr %geo, i64 7
  %tb64 = load i64, ptr %g7
  %tb = trunc i64 %tb64 to i32
  %g8 = getelementptr inbounds i64, ptr %geo, i64 8
  %ta64 = load i64, ptr %g8
  %ta = trunc i64 %ta64 to i32
  call void %fn(i32 101, i32 %ta, i32 %tb, i64 %m, i64 %n, i64 %k, float 1.0, ptr %a, i64 %lda, ptr %b,
                i64 %ldb, float 0.0, ptr %c, i64 %ldc)
  ret void
}

; y = A^T x through numpy's cblas_sgemv, as numpy's matmul calls it for a vector @ matrix or a
; matrix @ vector: geo is [cblas_sgemv, ORDER (101 row-, 102 column-major), ROWS, COLS, lda, incx,
; incy], transposed, alpha 1, beta 0.
define void @wp_sgemv(ptr %a, ptr %x, ptr %y, ptr %geo) nounwind {
entry:
  %fn = load ptr, ptr %geo
  %g1 = getelementptr inbounds i64, ptr %geo, i64 1
  %order64 = load i64, ptr %g1
  %order = trunc i64 %order64 to i32
  %g2 = getelementptr inbounds i64, ptr %geo, i64 2
  %rows = load i64, ptr %g2
  %g3 = getelementptr inbounds i64, ptr %geo, i64 3
  %cols = load i64, ptr %g3
  %g4 = getelementptr inbounds i64, ptr %geo, i64 4
  %lda = load i64, ptr %g4
  %g5 = getelementptr inbounds i64, ptr %geo, i64 5
  %incx = load i64, ptr %g5
  %g6 = getelementptr inbounds i64, ptr %geo, i64 6
  %incy = load i64, ptr %g6
  call void %fn(i32 %order, i32 112, i64 %rows, i64 %cols, float 1.0, ptr %a, i64 %lda, ptr %x, i64 %incx,
                float 0.0, ptr %y, i64 %incy)
  ret void
}
