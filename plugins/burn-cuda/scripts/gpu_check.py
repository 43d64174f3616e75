"""The Python side of gpu_check.sh: one step per call, results as JSON, one table at the end.

    python gpu_check.py conformance OUT.json          burn's conformance suite on cuda:0
    python gpu_check.py matmul OUT.json               4096^3 fp32, bf16, fp16 vs PyTorch
    python gpu_check.py elementwise OUT.json          8-op chain on 64M float32, GB/s vs PyTorch
    python gpu_check.py cnn OUT.json                  a CNN training step vs PyTorch eager
    python gpu_check.py cuda_graph OUT.json           the captured CNN step replayed through CUDA graphs
                                                      vs the plan replay and PyTorch eager (burn.capture)
    python gpu_check.py memory OUT.json               peak reserved bytes of the CNN step with the
                                                      pool chosen by BURN_CUDA_POOL (adaptive|cupy)
    python gpu_check.py extensions OUT.json           burn.linalg / burn.signal cuda kernels vs flex
                                                      (the repository's real-GPU tests, with pytest)
    python gpu_check.py reductions OUT.json           generated reduce kernels, each variant forced,
                                                      vs torch.sum (data for CUDA_TUNING; no target)
    python gpu_check.py table DIR                     print every DIR/*.json as one table

Each step is its own process (a failure or timeout of one does not hide the others);
nothing is downloaded.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time


def _dev():
    import burn
    return burn.Device.cuda(0)


def _time(fn, sync, reps, warmup=2):
    """Median seconds of ``fn`` over ``reps`` runs, each synchronized."""
    for _ in range(warmup):
        fn()
        sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _bf16_reason():
    """None when burn-cuda holds bfloat16 here (CuPy >= 14 with ml_dtypes), else why not."""
    import burn
    try:
        burn.zeros((1,), dtype=burn.bfloat16, device=_dev()).numpy()
    except burn.DTypeError as e:
        return str(e)
    return None


def conformance():
    import burn
    from burn.testing.conformance import cases, run_case
    dev = _dev()
    passed, failed, skipped = 0, [], 0
    no_bf16 = _bf16_reason()
    t0 = time.perf_counter()
    for c in cases():
        if no_bf16 and "bfloat16" in c.dtypes:        # CuPy < 14 (or no ml_dtypes): refused by design
            skipped += 1
            continue
        try:
            run_case(c, dev)
            passed += 1
        except Exception as e:     # every failure is reported, none stops the suite
            failed.append(f"{c.name}: {type(e).__name__}: {str(e)[:200]}")
    rows = [("conformance (cuda:0)", f"{passed} passed, {len(failed)} failed, {skipped} skipped"
             + (" (bfloat16: CuPy < 14 or no ml_dtypes)" if skipped else " (bfloat16 included)"),
             "", f"{time.perf_counter() - t0:.0f} s", "all pass" if not failed else "FAIL")]
    return {"rows": rows, "failures": failed[:40], "ok": not failed, "burn": burn.__name__}


def matmul():
    import burn
    import torch
    dev = _dev()
    n = 4096
    flop = 2 * n ** 3
    rows = []
    ok = True
    torch.backends.cuda.matmul.allow_tf32 = False
    import numpy as np
    no_bf16 = _bf16_reason()
    for tname in ("float32", "bfloat16", "float16"):
        name = f"matmul {n}^3 {tname}"
        try:
            td = getattr(torch, tname)
            a_t = torch.randn(n, n, device="cuda", dtype=td)
            b_t = torch.randn(n, n, device="cuda", dtype=td)
            if tname == "bfloat16":
                if no_bf16:
                    rows.append((name, f"n/a ({no_bf16[:60]})", "", "", "n/a"))
                    continue
                # CuPy exchanges bfloat16 over DLPack only since cupy PR #9670: the values go through the host
                a = burn.tensor(a_t.float().cpu().numpy(), dtype=burn.bfloat16, device=dev)
                b = burn.tensor(b_t.float().cpu().numpy(), dtype=burn.bfloat16, device=dev)
            else:
                a = burn.from_dlpack(a_t, device=dev)
                b = burn.from_dlpack(b_t, device=dev)
            keep = [None]      # only the latest product: timing the kernel, not fresh allocations

            def burn_mm():
                keep[0] = a @ b
            # sustained (products issued back to back: the GPU's time, what a TFLOP/s rate is) and
            # one synchronized call (host dispatch included: ~0.2 ms kernels feel tens of us)
            bt = _time_stream(burn_mm, dev.sync, 20, submit=dev.flush)
            tt = _time_stream(lambda: a_t @ b_t, torch.cuda.synchronize, 20)
            b1 = _time(burn_mm, dev.sync, 5)
            t1 = _time(lambda: a_t @ b_t, torch.cuda.synchronize, 5)
            got = keep[0].astype(burn.float32).numpy().astype(np.float64)
            want = (a_t @ b_t).float().cpu().numpy().astype(np.float64)
            err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
            ratio = tt / bt
            # float16 and bfloat16: cuBLAS GemmEx on tensor cores, float32 accumulation (burn_cuda.kernels.linear)
            good = ratio >= 0.9 and err < (1e-5 if tname == "float32" else 2e-2)
            ok &= good
            rows.append((name, f"{flop / bt / 1e12:.1f} TFLOP/s", f"{flop / tt / 1e12:.1f} TFLOP/s",
                         f"{ratio:.2f}x torch sustained, {t1 / b1:.2f}x one call (rel. max|diff| {err:.2g})",
                         "ok (>=0.9x)" if good else "MISS (<0.9x or wrong)"))
            keep.clear()
        except Exception as e:      # one dtype's failure must not hide the others' rows
            ok = False
            rows.append((name, f"ERROR {type(e).__name__}: {str(e)[:80]}", "", "", "FAIL"))
    return {"rows": rows, "ok": ok}


def _chain(x, relu, sigmoid, tanh):
    # 8 element-wise ops, one read of x and one write of the result when fused
    y = x * 1.5
    y = y + 0.5
    y = sigmoid(y)
    y = y * x
    y = y - 0.25
    y = relu(y)
    y = y + x
    return tanh(y)


def _peak_bandwidth(cupy) -> float:
    """Peak DRAM bytes/s: BURN_GPU_PEAK_GBS if set, else 2 (DDR) x memory clock x bus width
    (CUDA 13 dropped memoryClockRate from cudaDeviceProp: then the device attributes)."""
    if os.environ.get("BURN_GPU_PEAK_GBS"):
        return float(os.environ["BURN_GPU_PEAK_GBS"]) * 1e9
    rt = cupy.cuda.runtime
    props = rt.getDeviceProperties(0)
    clock_khz, bus_bits = props.get("memoryClockRate"), props.get("memoryBusWidth")
    if not clock_khz or not bus_bits:
        clock_khz = rt.deviceGetAttribute(36, 0)       # cudaDevAttrMemoryClockRate
        bus_bits = rt.deviceGetAttribute(37, 0)        # cudaDevAttrGlobalMemoryBusWidth
    return 2 * clock_khz * 1e3 * bus_bits / 8


def _time_stream(fn, sync, reps, warmup=2, submit=None):
    """Seconds per call of ``fn`` issued ``reps`` times back to back, one sync at the end: the
    GPU's sustained time per call once the host stays ahead of it (what a bandwidth is).

    ``submit`` (burn: ``Device.flush``) runs after every call: burn's ops are lazy, and a
    result replaced before the next flush is never computed (20 chains with one sync at the
    end ran ONE kernel), which would time one call's work as twenty's."""
    for _ in range(warmup):
        fn()
        if submit is not None:
            submit()
    sync()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
        if submit is not None:
            submit()
    sync()
    return (time.perf_counter() - t0) / reps


def elementwise():
    """The 8-op chain (64M float32: one fused kernel) timed sustained in each kernel form
    burn-cuda has (``BURN_CUDA_EW``: plain ``_c``, unrolled ``_u``, aligned-vector ``_v``; set
    in-process through ``burn_cuda.kernels.elementwise.EW_FORM``), one row per form, against torch; the
    80%-of-peak target is judged on the best form, which the last row names: the data that
    picks ``auto``'s form. A lone relu per form too (informational). One form's failure is
    reported in its row."""
    import burn
    import cupy
    import torch
    from burn_cuda.kernels import elementwise as bk
    dev = _dev()
    n = 64 * 2 ** 20
    x_t = torch.randn(n, device="cuda")
    x = burn.from_dlpack(x_t, device=dev)
    keep = [None]
    # hold only the latest result (as the torch loop does): keeping every 256 MB output would
    # time fresh allocations instead of the kernel

    def burn_chain():
        keep[0] = _chain(x, burn.relu, burn.sigmoid, burn.tanh)

    def torch_chain():
        return _chain(x_t, torch.relu, torch.sigmoid, torch.tanh)
    # sustained: calls issued back to back, so the host's recording and launch overlap the
    # previous kernel and the time is the GPU's; single: one call then a sync, host included
    tt = _time_stream(torch_chain, torch.cuda.synchronize, 20)
    t1 = _time(torch_chain, torch.cuda.synchronize, 10)
    want = torch_chain()
    peak = _peak_bandwidth(cupy)
    moved = 2 * n * 4
    rows, best, relu_cells = [], None, []
    default = bk.EW_FORM
    try:
        for form in ("plain", "unrolled", "vector"):
            name = f"8-op chain, 64M float32, {form} form"
            try:
                bk.EW_FORM = form
                bt = _time_stream(burn_chain, dev.sync, 20, submit=dev.flush)
                took = bk.LAST_FORM[0]       # "vector" falls back when an array is misaligned
                b1 = _time(burn_chain, dev.sync, 10)
                err = float((torch.from_dlpack(keep[0]) - want).abs().max())
                keep[0] = None
                frac = moved / bt / peak
                if took == form and (best is None or bt < best[1]):
                    best = (form, bt, b1, err)
                rows.append((name, f"{moved / bt / 1e9:.0f} GB/s sustained, {moved / b1 / 1e9:.0f} single call",
                             f"torch {moved * 8 / tt / 1e9:.0f} GB/s eff. sustained, {moved * 8 / t1 / 1e9:.0f} single",
                             f"{frac:.0%} of {peak / 1e9:.0f} GB/s peak, {tt / bt:.2f}x torch sustained "
                             f"(launched: {took}, max|diff| {err:.2g})", "info"))
            except Exception as e:      # one form's failure must not hide the others' rows
                keep[0] = None
                rows.append((name, f"ERROR {type(e).__name__}: {str(e)[:80]}", "", "", "FAIL"))
        # a lone relu: one read and one write, the per-op family kernel (or a one-op fused group)
        relu_t = _time_stream(lambda: torch.relu(x_t), torch.cuda.synchronize, 20)
        for form in ("plain", "unrolled", "vector"):
            try:
                bk.EW_FORM = form

                def relu():
                    keep[0] = burn.relu(x)
                rt = _time_stream(relu, dev.sync, 20, submit=dev.flush)
                keep[0] = None
                relu_cells.append(f"{form} {moved / rt / 1e9:.0f} ({bk.LAST_FORM[0]})")
            except Exception as e:
                relu_cells.append(f"{form}: {type(e).__name__}: {str(e)[:50]}")
    finally:
        bk.EW_FORM = default
        keep.clear()
    rows.append(("relu alone, 64M float32, per form", "; ".join(relu_cells) + " GB/s",
                 f"torch {moved / relu_t / 1e9:.0f} GB/s", "sustained (launched form in parentheses)", "info"))
    if best is None:
        rows.append(("8-op chain, 64M float32 (best form)", "no form ran", "", "", "FAIL"))
        return {"rows": rows, "ok": False}
    form, bt, b1, err = best
    frac = moved / bt / peak
    rows.append(("8-op chain, 64M float32 (best form)", f"{form}: {moved / bt / 1e9:.0f} GB/s sustained",
                 f"{moved * 8 / tt / 1e9:.0f} GB/s eff. sustained, {moved * 8 / t1 / 1e9:.0f} single",
                 f"{frac:.0%} of {peak / 1e9:.0f} GB/s peak, {tt / bt:.2f}x torch sustained, "
                 f"{t1 / b1:.1f}x single (max|diff| {err:.2g}); BURN_CUDA_EW default: {default}",
                 "ok (>=80%)" if frac >= 0.8 else "MISS (<80%)"))
    return {"rows": rows, "ok": frac >= 0.8}


def reductions():
    """Generated reduce kernels through burn, each variant forced, against torch.sum: the data
    to tune ``burn.codegen.reduce_run.CUDA_TUNING`` with (informational rows, no target)."""
    import burn
    import torch
    from burn_cuda.kernels import reduce as rf
    dev = _dev()
    rows = []
    cases = [("sum [64M] (full)", (64 << 20,), None), ("sum over rows [8, 8M]", (8, 8 << 20), 1),
             ("sum over rows [65536, 1024]", (65536, 1024), 1), ("sum over rows [4M, 16]", (4 << 20, 16), 1),
             ("sum over columns [8192, 8192]", (8192, 8192), 0)]
    for name, shape, axis in cases:
        try:
            x_t = torch.randn(*shape, device="cuda")
            x = burn.from_dlpack(x_t, device=dev)
            want = x_t.sum() if axis is None else x_t.sum(dim=axis)
            tt = _time_stream(lambda: x_t.sum() if axis is None else x_t.sum(dim=axis), torch.cuda.synchronize, 20)
            cells = []
            for v in ("row", "group", "split", None):
                rf.FORCE = v
                keep = [None]

                def run():
                    # (x * 1.0) makes a reduce group with a prologue: the generated kernel, not CuPy's
                    keep[0] = burn.sum(x * 1.0) if axis is None else burn.sum(x * 1.0, axis=axis)
                try:
                    bt = _time_stream(run, dev.sync, 10, submit=dev.flush)
                    got = torch.from_dlpack(keep[0])
                    err = float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))
                    label = v or f"auto={rf.LAST_VARIANT[0][0]}"
                    cells.append(f"{label} {x_t.numel() * 4 / bt / 1e9:.0f} GB/s ({tt / bt:.2f}x torch, err {err:.1g})")
                except Exception as e:
                    cells.append(f"{v or 'auto'}: {type(e).__name__}: {str(e)[:60]}")
            rf.FORCE = None
            rows.append((name, "; ".join(cells[:2]), f"torch {x_t.numel() * 4 / tt / 1e9:.0f} GB/s",
                         "; ".join(cells[2:]), "info"))
        except Exception as e:
            rows.append((name, f"ERROR {type(e).__name__}: {str(e)[:80]}", "", "", "info"))
    return {"rows": rows, "ok": True}


def _cnn_burn(dev, batch):
    import numpy as np
    import burn
    import burn.nn.functional as F
    nn = burn.nn
    ad = dev.autodiff()
    model = nn.Sequential(nn.Conv2d(3, 32, 3, device=ad), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, device=ad), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(64 * 6 * 6, 256, device=ad), nn.ReLU(), nn.Linear(256, 10, device=ad))
    opt = burn.optim.Adam(model, lr=1e-3)
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((batch, 3, 32, 32)).astype(np.float32), device=ad)
    y = burn.tensor(rng.integers(0, 10, batch), device=ad)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss
    return step


def _cnn_torch(batch):
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * 6 * 6, 256), nn.ReLU(),
                          nn.Linear(256, 10)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


BATCH = 128


def cnn():
    import torch
    dev = _dev()
    bstep = _cnn_burn(dev, BATCH)
    tstep = _cnn_torch(BATCH)
    bt = _time(bstep, dev.sync, 10)
    tt = _time(tstep, torch.cuda.synchronize, 10)
    # steps issued back to back (a training loop that does not read the loss every step):
    # informational, the target is judged on the synchronized step above
    bs = _time_stream(bstep, dev.sync, 20, submit=dev.flush)
    ts = _time_stream(tstep, torch.cuda.synchronize, 20)
    r = bt / tt
    rows = [(f"CNN train step (batch {BATCH}, 32x32)", f"{bt * 1e3:.1f} ms ({bs * 1e3:.1f} back to back)",
             f"{tt * 1e3:.1f} ms ({ts * 1e3:.1f} back to back)",
             f"{r:.2f}x torch eager time, {bs / ts:.2f}x back to back",
             "ok (<=1.3x)" if r <= 1.3 else "MISS (>1.3x)")]
    return {"rows": rows, "ok": r <= 1.3}


def _captured_steps(dev, n, graphs: bool):
    """A captured CNN training step replayed ``n`` times, through CUDA graphs or (graphs False)
    the fusion plan; returns (step function, losses of the n steps, how the replays ran)."""
    import burn
    os.environ["BURN_CAPTURE_BACKEND_REPLAY"] = "1" if graphs else "0"   # read at the first replay
    dev.autodiff().seed(0)                 # the same initial weights as the eager run
    step = burn.capture(_cnn_burn(dev, BATCH))
    losses = [step().item() for _ in range(n)]
    g = step.graph()
    return step, losses, g._prepared["cuda"].describe(dev.index)


def cuda_graph():
    """burn.capture's cuda replay hook: a captured CNN step through CUDA graphs (after its
    warm-up) against the same step replayed by the fusion plan and torch eager; the losses of
    10 steps must equal the eager step's, bit for bit. Plus tests/test_cuda_graph_replay.py."""
    import torch
    dev = _dev()
    dev.autodiff().seed(0)
    eager = _cnn_burn(dev, BATCH)
    want = [eager().item() for _ in range(10)]
    gstep, got, how = _captured_steps(dev, 10, graphs=True)
    pstep, got_plan, how_plan = _captured_steps(dev, 10, graphs=False)
    same = got == want and got_plan == want
    gt = _time(gstep, dev.sync, 10)
    pt = _time(pstep, dev.sync, 10)
    tt = _time(_cnn_torch(BATCH), torch.cuda.synchronize, 10)
    ok = same and how.startswith("CUDA graph") and gt <= pt
    rows = [(f"captured CNN step (batch {BATCH}): CUDA graph replay", f"{gt * 1e3:.2f} ms ({how[:40]})",
             f"{tt * 1e3:.2f} ms torch eager", f"{gt / tt:.2f}x torch, {gt / pt:.2f}x the plan replay "
             f"({pt * 1e3:.2f} ms); losses equal eager: {same}", "ok (<= plan, equal)" if ok else "MISS")]
    tests, ok2 = _real_gpu_tests("burn.capture replay hook tests", ("test_cuda_graph_replay.py",),
                                 "eager burn", "CUDA graph replay of a small graph")
    return {"rows": rows + [tests], "ok": ok and ok2}


def memory():
    dev = _dev()
    step = _cnn_burn(dev, BATCH)
    for _ in range(5):
        step()
    dev.sync()
    st = dev.memory_stats()
    return {"pool": os.environ.get("BURN_CUDA_POOL", "adaptive"), "peak_reserved": st["peak_reserved_bytes"],
            "peak_in_use": st["peak_in_use_bytes"], "rows": []}


def _real_gpu_tests(name, files, reference, notes, needs=("pytest",)):
    """One table row: the repository's ``real_gpu`` tests in ``files`` (skipped tests count as
    a failure here: on this machine they must run)."""
    import importlib.util
    import subprocess
    missing = [m for m in needs if importlib.util.find_spec(m) is None]
    if missing:
        return (name, "not run", "", f"needs {', '.join(missing)} installed", "n/a"), True
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    tests = [os.path.join(root, "tests", f) for f in files]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "real_gpu", *tests],
                       capture_output=True, text=True, cwd=root)
    tail = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
    ok = r.returncode == 0 and "skipped" not in tail
    if not ok:
        print(r.stdout[-4000:], r.stderr[-2000:])
    return (name, tail, reference, notes, "ok" if ok else "FAIL"), ok


def extensions():
    """The repository's real-GPU tests: burn-linalg's and burn-signal's cuda kernels (cuSOLVER,
    cuFFT, cupyx.scipy.signal) against flex's SciPy results, and burn-cuda's own kernels that
    the conformance suite reaches only partly (float16/bfloat16 GemmEx, generated reduce groups
    in every variant, the optimizer update kernels)."""
    ext, ok1 = _real_gpu_tests("burn.linalg / burn.signal ops on cuda vs flex",
                               ("test_linalg_cuda.py", "test_signal_cuda.py"), "flex (SciPy/LAPACK)",
                               "every op, float32/float64/complex128",
                               needs=("pytest", "scipy", "burn_linalg", "burn_signal"))
    own, ok2 = _real_gpu_tests("burn-cuda kernels: half GemmEx, reduce groups, Adam/SGD",
                               ("test_cuda_gemm.py", "test_cuda_reduce_fused.py", "test_cuda_host_path.py"),
                               "torch / numpy / flex", "every reduce variant forced; fp16/bf16")
    return {"rows": [ext, own], "ok": ok1 and ok2}


def dist():
    """burn-dist's NCCL path on one GPU (world size 1: NCCL with one rank; two GPUs are needed for
    more): the NCCLCommunicator's collectives on CuPy arrays, and the dist ops of cuda tensors
    through it, against numpy."""
    import importlib.util
    if importlib.util.find_spec("burn_dist") is None:
        return {"rows": [("burn.dist NCCL (world size 1)", "not run", "", "burn-dist not installed", "n/a")],
                "ok": True}
    import cupy
    import numpy as np
    import burn
    import burn_dist
    from burn_dist.nccl import NCCLCommunicator
    comm = NCCLCommunicator(burn_dist.LocalCommunicator())
    burn_dist.init(comm)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1001).astype(np.float32)
    checks = []
    x = cupy.asarray(a)
    comm.all_reduce(x, "sum")
    checks.append(np.array_equal(cupy.asnumpy(x), a))
    out = cupy.empty_like(x)
    comm.all_reduce(x, "mean", out=out)
    checks.append(np.allclose(cupy.asnumpy(out), a))
    checks.append(np.array_equal(cupy.asnumpy(comm.all_gather(x))[0], a))
    comm.broadcast(x, root=0)
    checks.append(np.array_equal(cupy.asnumpy(x), a))
    checks.append(np.array_equal(cupy.asnumpy(comm.reduce_scatter(x.reshape(1, -1))), a))
    dev = _dev()
    t = burn.tensor(a.reshape(7, 143), device=dev)
    checks.append(np.array_equal(burn_dist.all_gather(t).numpy()[0], a.reshape(7, 143)))
    many = burn_dist.all_reduce_many([t, t.T + 1], "mean")
    checks.append(np.allclose(many[1].numpy(), a.reshape(7, 143).T + 1))
    ok = all(checks)
    return {"rows": [("burn.dist NCCL (world size 1)", f"{sum(checks)}/{len(checks)} checks", "numpy",
                      "NCCLCommunicator + dist ops on cuda", "ok" if ok else "FAIL")], "ok": ok}


def table(d):
    """Every result of directory ``d`` as one table (memory rows combined)."""
    rows, ok = [], True
    res = {}
    for name in sorted(os.listdir(d)):
        if name.endswith(".json"):
            with open(os.path.join(d, name)) as f:
                res[name[:-5]] = json.load(f)
    for key in ("conformance", "matmul", "elementwise", "cnn", "cuda_graph", "extensions", "dist", "reductions"):
        r = res.get(key)
        if r is None and key == "reductions":      # informational: its absence fails nothing
            continue
        if r is None:
            rows.append((key, "did not finish (see its log)", "", "", "FAIL"))
            ok = False
            continue
        rows += [tuple(x) for x in r["rows"]]
        ok &= bool(r.get("ok"))
    a, c = res.get("memory_adaptive"), res.get("memory_cupy")
    if a and c:
        saving = 1 - a["peak_reserved"] / max(c["peak_reserved"], 1)
        # peak in use (live arrays) bounds what any pool can reach: printed to tell a pool's
        # fragmentation from the program's own footprint
        live = max(a.get("peak_in_use", 0), c.get("peak_in_use", 0))
        rows.append((f"peak memory, CNN step (batch {BATCH})", f"{a['peak_reserved'] / 2 ** 20:.0f} MiB adaptive",
                     f"{c['peak_reserved'] / 2 ** 20:.0f} MiB CuPy pool",
                     f"{saving:.0%} lower; peak in use {live / 2 ** 20:.0f} MiB",
                     "ok (>=30%)" if saving >= 0.3 else "MISS (<30%)"))
        ok &= saving >= 0.3
    else:
        rows.append(("peak memory (adaptive vs CuPy pool)", "did not finish", "", "", "FAIL"))
        ok = False
    head = ("check", "burn cuda", "reference (PyTorch / CuPy)", "ratio / notes", "target")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(5)]
    line = "+".join("-" * (w + 2) for w in widths)
    print(line)
    print("|".join(f" {h:<{w}} " for h, w in zip(head, widths)))
    print(line)
    for r in rows:
        print("|".join(f" {str(v):<{w}} " for v, w in zip(r, widths)))
    print(line)
    for f in (res.get("conformance") or {}).get("failures", []):
        print("  conformance failure:", f)
    return ok


STEPS = {"conformance": conformance, "matmul": matmul, "elementwise": elementwise, "cnn": cnn, "memory": memory,
         "extensions": extensions, "dist": dist, "reductions": reductions, "cuda_graph": cuda_graph}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in list(STEPS) + ["table"]:
        sys.exit(__doc__)
    if sys.argv[1] == "table":
        sys.exit(0 if table(sys.argv[2]) else 1)
    out = STEPS[sys.argv[1]]()
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)
