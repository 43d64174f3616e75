"""burn.dist: all_reduce bandwidth against raw mpi4py (and torch gloo), and the DataParallel step
on the digits CNN at 2 ranks against 1, in one command.

    .venv/bin/python benchmarks/bench_dist.py                  # ~1-2 minutes
    .venv/bin/python benchmarks/bench_dist.py --rounds 9 --sizes 4,64 --no-torch --json out.json

Parts (issue 16's targets, as ratios of the same run):

- ``allreduce``: float32 sum all-reduce of 4 MB and 64 MB over 2 ranks (``burn-dist launch -n 2``,
  shared memory): raw ``comm.Allreduce(MPI.IN_PLACE, buf)``, burn's communicator on the same
  buffer (``burn.dist.communicator().all_reduce(buf)``: metadata check + the same call), burn's
  tensor op (``burn.dist.all_reduce(t)`` on a flex tensor it holds alone: the buffer is donated
  and reduced in place), the same op on a tensor whose value another tensor shares (reduced out
  of place into a new buffer: MPI's copy + fresh pages), torch gloo
  (``torch.distributed.all_reduce``). Interleaved per round, each timed call preceded by a
  barrier; medians; target: burn's bandwidth >= 0.9x raw mpi4py's.
- ``step``: one digits-CNN Adam step (batch 64 in all), 1 process x 64 samples vs 2 ranks x 32
  samples with ``DataParallel`` (gradients averaged) vs the same 2 ranks x 32 without the exchange
  (interleaved within the 2-rank job): the exchange's share of the step, target <= 15%; the
  2-rank speed-up over one process. At the launcher's default threads (cores / ranks each)
  and with every rank pinned to one thread; the 1-process runs alternate with the 2-rank ones
  (1 2 1 2 ...), medians over all.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


# -- inside the job ---------------------------------------------------------------------------------
def _slowest(raw, seconds: float) -> float:
    """The largest of every rank's ``seconds`` (a collective ends when its slowest rank does)."""
    from mpi4py import MPI
    buf = np.array([seconds], np.float64)
    raw.Allreduce(MPI.IN_PLACE, buf, MPI.MAX)
    return float(buf[0])


def _allreduce_worker(sizes_mb, rounds, use_torch):
    import burn
    import burn_dist
    from mpi4py import MPI
    comm = burn_dist.init()
    raw = MPI.COMM_WORLD
    tdist = None
    if use_torch:
        try:
            import torch
            import torch.distributed as tdist
            tdist.init_process_group("gloo", rank=comm.rank, world_size=comm.world_size,
                                     init_method=f"tcp://127.0.0.1:{os.environ['BENCH_DIST_PORT']}")
        except Exception as e:  # noqa: BLE001 - reported, the rest runs
            tdist = None
            if comm.rank == 0:
                print(f"torch gloo unavailable: {e}", file=sys.stderr)
    out = {}
    for mb in sizes_mb:
        n = int(mb * 1024 * 1024 // 4)
        buf = np.random.default_rng(comm.rank).standard_normal(n).astype(np.float32)
        t = burn.tensor(buf)
        shared = burn.tensor(buf)
        flex = burn.Device.flex()
        fns = {"mpi4py": lambda: raw.Allreduce(MPI.IN_PLACE, buf, MPI.SUM),
               "burn_comm": lambda: comm.all_reduce(buf, "sum"),
               "burn_nocheck": lambda: comm.all_reduce(buf, "sum", check=False),
               "burn_tensor": lambda: (burn_dist.all_reduce(t, "sum"), flex.sync()),
               # the tuple holds a second tensor of the value while the op is recorded: not donated
               "burn_shared": lambda: (shared.detach(), burn_dist.all_reduce(shared, "sum"), flex.sync())}
        if tdist is not None:
            tt = torch.from_numpy(buf.copy())
            fns["torch_gloo"] = lambda: tdist.all_reduce(tt)
        times = {k: [] for k in fns}
        for f in fns.values():
            f()
        for _ in range(rounds):
            for k, f in fns.items():
                raw.Barrier()
                t0 = time.perf_counter()
                f()
                dt = time.perf_counter() - t0
                times[k].append(_slowest(raw, dt))
        out[mb] = {k: statistics.median(v) for k, v in times.items()}
    if comm.rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
    if tdist is not None:
        tdist.destroy_process_group()


def _cnn_setup(batch, seed=0):
    import burn
    import burn.nn.functional as F
    from burn.examples.digits import DigitsCNN
    dev = burn.Device.flex().autodiff()
    dev.seed(seed)
    model = DigitsCNN(dev)
    rng = np.random.default_rng(seed)
    x = burn.tensor(rng.random((batch, 64), dtype=np.float32), device=dev)
    y = burn.tensor(rng.integers(0, 10, batch), device=dev)
    return burn, F, dev, model, x, y


def _step_worker(rounds, threads):
    import burn_dist
    comm = burn_dist.init()
    burn, F, dev, model, x, y = _cnn_setup(64 // comm.world_size)
    if threads == "one":
        import threadpoolctl
        threadpoolctl.threadpool_limits(1)
        burn.set_num_threads(1)
    if comm.world_size > 1:
        dp = burn_dist.DataParallel(model)
        opt = burn.optim.Adam(dp, lr=1e-3)
        opt_local = burn.optim.Adam(model, lr=1e-3)

        def step_dp():
            opt.step(dp.backward(F.cross_entropy(dp(x), y)))
            dev.sync()

        def step_local():
            opt_local.step(F.cross_entropy(model(x), y).backward())
            dev.sync()
        fns = {"dp": step_dp, "local": step_local}
    else:
        opt = burn.optim.Adam(model, lr=1e-3)

        def step_one():
            opt.step(F.cross_entropy(model(x), y).backward())
            dev.sync()
        fns = {"one": step_one}
    from mpi4py import MPI     # noqa: F401  (the 1-process run is launched with -n 1 too: same imports)
    raw = MPI.COMM_WORLD
    for f in fns.values():
        for _ in range(3):
            f()
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            raw.Barrier()
            t0 = time.perf_counter()
            for _ in range(5):
                f()
            times[k].append((time.perf_counter() - t0) / 5)
    med = {k: _slowest(raw, statistics.median(v)) for k, v in times.items()}
    if comm.rank == 0:
        print("RESULT " + json.dumps(med), flush=True)


# -- the driver ---------------------------------------------------------------------------------------
def _launch(n, args, extra_env=None, timeout=600, tcp=False):
    cmd = [sys.executable, "-m", "burn_dist.launch", "launch", "-n", str(n), "--timeout", str(timeout)]
    cmd += (["--tcp"] if tcp else []) + ["--", sys.executable, os.path.abspath(__file__)] + args
    env = dict(os.environ, **(extra_env or {}))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30, env=env)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"bench_dist: the {n}-rank job failed (exit {r.returncode}):\n{r.stderr[-4000:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--sizes", default="4,64", help="all-reduce sizes in MB")
    ap.add_argument("--no-torch", action="store_true", help="skip torch gloo")
    ap.add_argument("--only", default="allreduce,step")
    ap.add_argument("--threads", default="default,one")
    ap.add_argument("--repeats", type=int, default=2, help="1-process / 2-rank alternations of the step part")
    ap.add_argument("--tcp", action="store_true", help="force the all-reduce part over TCP (OMPI_MCA_btl=tcp,self)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker == "allreduce":
        return _allreduce_worker([float(s) for s in args.sizes.split(",")], args.rounds, not args.no_torch)
    if args.worker and args.worker.startswith("step"):
        return _step_worker(args.rounds, args.worker.split(":")[1])

    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} (uptime's 1-minute average)")
    report = {}
    if "allreduce" in args.only:
        res = _launch(2, ["--worker", "allreduce", "--sizes", args.sizes, "--rounds", str(args.rounds)]
                      + (["--no-torch"] if args.no_torch else []), {"BENCH_DIST_PORT": str(29500 + os.getpid() % 1000)}, tcp=args.tcp)
        print(f"\nall_reduce float32 sum, 2 ranks, {'TCP' if args.tcp else 'shared memory'} "
              f"(median of the slowest rank per call)")
        print(f"{'size':>7} {'mpi4py':>10} {'burn comm':>10} {'unchecked':>10} {'burn tensor':>12} {'torch gloo':>11}"
              f" {'GB/s mpi4py':>12} {'comm/raw bw':>12} {'unchecked/raw':>14} {'tensor/raw bw':>14}"
              f" {'shared/raw bw':>14}")
        for mb, m in res.items():
            bw = float(mb) / 1024 / m["mpi4py"]
            gloo = f"{m['torch_gloo'] * 1e3:9.2f}ms" if "torch_gloo" in m else f"{'-':>11}"
            print(f"{mb:>5}MB {m['mpi4py'] * 1e3:8.2f}ms {m['burn_comm'] * 1e3:8.2f}ms {m['burn_nocheck'] * 1e3:8.2f}ms "
                  f"{m['burn_tensor'] * 1e3:10.2f}ms {gloo} {bw:12.2f} {m['mpi4py'] / m['burn_comm']:11.2f}x "
                  f"{m['mpi4py'] / m['burn_nocheck']:13.2f}x {m['mpi4py'] / m['burn_tensor']:13.2f}x "
                  f"{m['mpi4py'] / m['burn_shared']:13.2f}x")
        report["allreduce"] = res
    if "step" in args.only:
        print("\nDataParallel step, digits CNN + Adam, batch 64 in all")
        report["step"] = {}
        for threads in args.threads.split(","):
            one, two = [], []
            for _ in range(args.repeats):             # 1 2 1 2 ...: the load drifts alike for both
                one.append(_launch(1, ["--worker", f"step:{threads}", "--rounds", str(args.rounds)])["one"])
                two.append(_launch(2, ["--worker", f"step:{threads}", "--rounds", str(args.rounds)]))
            t1 = statistics.median(one)
            tdp = statistics.median(t["dp"] for t in two)
            tloc = statistics.median(t["local"] for t in two)
            share = (tdp - tloc) / tdp
            print(f"  threads {threads:>7}: 1 process {t1 * 1e3:6.2f} ms | 2 ranks DataParallel {tdp * 1e3:6.2f} ms, "
                  f"without the exchange {tloc * 1e3:6.2f} ms | exchange {share * 100:5.1f}% of the step | "
                  f"2-rank speed-up {t1 / tdp:4.2f}x")
            report["step"][threads] = {"one_ms": t1 * 1e3, "dp_ms": tdp * 1e3, "local_ms": tloc * 1e3,
                                       "exchange_share": share, "speedup": t1 / tdp}
    print(f"\nload after: {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
