"""burn-dist: collectives, DataParallel and the Learner on 2 ranks (burn-dist launch -> mpirun
--oversubscribe), over shared memory and forced over TCP; faults end the job; world size 1
under plain python. Every launch runs under a timeout (the launcher's and the subprocess's).

The references are independent of burn.dist: numpy on what every rank sent (collectives), one
process training on the full batch (DataParallel), one process running the digits example."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import burn

pytest.importorskip("mpi4py")
import burn_dist  # noqa: E402
from burn_dist import launch as L  # noqa: E402

WORKERS = Path(__file__).parent / "dist_workers"
ROOT = Path(__file__).resolve().parents[1]


def _mpirun_or_skip():
    try:
        return L.find_mpirun()
    except SystemExit as e:
        pytest.skip(str(e))


def launch(script, *args, n=2, tcp=False, timeout=120, env=None, cwd=None):
    """``burn-dist launch -n N [--tcp] -- python script args`` under a timeout; the CompletedProcess."""
    _mpirun_or_skip()
    cmd = [sys.executable, "-m", "burn_dist.launch", "launch", "-n", str(n), "--timeout", str(timeout)]
    cmd += ["--tcp"] if tcp else []
    cmd += ["--", sys.executable] + ([str(script)] if not str(script).startswith("-m") else str(script).split())
    cmd += [str(a) for a in args]
    env = dict(os.environ if env is None else env)
    env.pop("OMPI_COMM_WORLD_SIZE", None)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd) as p:
        try:
            out, err = p.communicate(timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            p.kill()
            raise
    r = subprocess.CompletedProcess(cmd, p.returncode, out, err)
    r.pid = p.pid            # the launcher's: its run directories are named burn-dist-<pid>-*
    return r


def _ok(r, n=2):
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
    for rank in range(n):
        assert f"rank {rank}: OK" in r.stdout, r.stdout[-3000:]


def _device_names():
    from devices import flex_and_wgpu
    return ",".join(d.kind for d in flex_and_wgpu())


# -- collectives --------------------------------------------------------------------------------
def test_collectives_every_dtype_odd_sizes_strided_and_mismatches_on_two_ranks():
    """all_reduce (sum/prod/max/min/mean), broadcast, all_gather, reduce_scatter for 15 dtypes on host
    buffers and tensors (flex, and wgpu where OpenCL runs), odd sizes, strided inputs; mismatched
    shapes/dtypes/ops/roots raise CollectiveMismatch on every rank; mismatched models and a parameter
    used on one rank only are errors naming the tensor."""
    _ok(launch(WORKERS / "collectives.py", _device_names()))


def test_collectives_on_cuda_tensors_through_the_host_with_the_cupy_stand_in(tmp_path):
    """cuda tensors (the numpy CuPy stand-in of tests/fakecupy.py) take the MPI host path of the
    dist ops' cuda kernels: same checks as flex."""
    from fakecupy import write_fake_cupy
    env = write_fake_cupy(tmp_path / "fake")
    _ok(launch(WORKERS / "collectives.py", "cuda", env=env))


# -- DataParallel: N ranks x 1/N batch == 1 process x full batch ------------------------------------
def test_two_ranks_half_batch_equal_one_process_full_batch_mlp_cnn_lora_capture():
    r = launch(WORKERS / "train_equiv.py", 4)
    _ok(r)
    for tag in ("mlp adam", "cnn adam", "mlp lora + groups + clip", "cnn adam, captured"):
        assert f"{tag}: losses" in r.stdout, r.stdout


def test_data_parallel_broadcasts_rank_0s_buffers_before_each_training_forward():
    """broadcast_buffers=True (DDP's default): BatchNorm's running statistics after K forwards are
    rank 0's after K-1 updated by the rank's own last batch (numpy reference); False: each rank's
    own; a forward under no_grad on one rank alone exchanges nothing (no hang)."""
    _ok(launch(WORKERS / "buffers.py", timeout=90))


def test_the_same_forced_over_tcp():
    r = launch(WORKERS / "train_equiv.py", 3, "mlp,captured", tcp=True)
    _ok(r)
    assert "mlp adam: losses" in r.stdout and "cnn adam, captured: losses" in r.stdout


# -- faults ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["raise", "kill", "exit", "mismatch"])
def test_a_failing_rank_ends_the_job_in_bounded_time_naming_the_rank(how):
    import tempfile
    shm = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else None
    tmp = set(os.listdir(tempfile.gettempdir()))
    t0 = time.perf_counter()
    r = launch(WORKERS / "faults.py", how, timeout=60)
    elapsed = time.perf_counter() - t0
    assert r.returncode != 0, r.stdout
    assert "unreachable" not in r.stdout
    assert elapsed < 30, f"the job took {elapsed:.1f} s to end"
    m = re.search(r"burn-dist launch: the job ended with exit code (\d+): rank\(s\) \[([\d, ]+)\] failed", r.stderr)
    assert m, r.stderr[-3000:]
    # a mismatch fails both ranks (each sees the other's metadata): the launcher names whichever
    # ended first, rank 0 or rank 1 (rank 0 first under load: seen in a fresh-clone CI run)
    named = m.group(2).split(", ")
    assert ("1" in named) if how != "mismatch" else set(named) <= {"0", "1"}, m.group(0)
    if how == "raise":
        assert "burn.dist: rank 1 of 2 failed with ValueError: deliberate failure in rank 1" in r.stderr
    if how == "exit":
        assert m.group(1) == "3", m.group(0)
    if how == "mismatch":
        assert "rank 0: float32 (4,) op=sum; rank 1: float32 (5,) op=sum" in r.stderr
    # the per-run session and shared-memory directories are gone, even after a killed rank
    # (only this launcher's: tests in other workers may be running their own jobs meanwhile)
    mine = f"burn-dist-{r.pid}-"
    if shm is not None:
        assert not [f for f in set(os.listdir("/dev/shm")) - shm if f.startswith(mine)]
    assert not [f for f in set(os.listdir(tempfile.gettempdir())) - tmp if f.startswith(mine)]


# -- the Learner and the example ---------------------------------------------------------------------
def _digits(args, n=None, cwd=None):
    if n is None:
        r = subprocess.run([sys.executable, "-m", "burn.examples.digits"] + args, capture_output=True, text=True,
                           timeout=300, cwd=cwd)
    else:
        r = launch("-m burn.examples.digits", *args, "--data-parallel", n=n, timeout=240, cwd=cwd)
    assert r.returncode == 0, r.stderr[-4000:]
    acc = float(re.search(r"test accuracy: ([\d.]+)%", r.stdout).group(1))
    losses = [float(v) for v in re.findall(r"train loss ([\d.]+)", r.stdout)]
    return acc, losses


def test_digits_example_data_parallel_on_two_ranks_reaches_one_process_accuracy_and_resumes_on_one(tmp_path):
    """``burn-dist launch -n 2 -- python -m burn.examples.digits --data-parallel`` trains to one process's
    accuracy and losses (metrics summed over the ranks); its epoch-1 checkpoint (rank 0's) resumes
    under plain python (world size 1) to the same epoch-2 result."""
    pytest.importorskip("sklearn")
    import shutil
    acc1, loss1 = _digits(["--epochs", "2", "--out", str(tmp_path / "a")], cwd=tmp_path)
    ck = tmp_path / "ck"
    acc2, loss2 = _digits(["--epochs", "2", "--out", str(tmp_path / "b"), "--checkpoint-dir", str(ck)], n=2,
                          cwd=tmp_path)
    assert abs(acc1 - acc2) <= 0.6, (acc1, acc2)          # 0.6%: two of 359 test images
    assert len(loss2) >= 2 and np.allclose(loss2[-2:], loss1[-2:], atol=2e-3), (loss1, loss2)
    assert sorted(os.listdir(ck)) == ["epoch-0001", "epoch-0002"]     # written once (rank 0)
    one = tmp_path / "ck1"
    one.mkdir()
    shutil.copytree(ck / "epoch-0001", one / "epoch-0001")
    acc3, loss3 = _digits(["--epochs", "2", "--out", str(tmp_path / "c"), "--checkpoint-dir", str(one), "--resume"],
                          cwd=tmp_path)
    assert abs(acc3 - acc1) <= 0.6 and np.allclose(loss3[-1], loss1[-1], atol=2e-3), (acc3, acc1, loss3, loss1)


# -- world size 1 under plain python -----------------------------------------------------------------
def test_world_size_one_under_plain_python_needs_no_mpi():
    code = ("import sys, burn, burn_dist; c = burn_dist.init(); assert c.world_size == 1 and c.rank == 0; "
            "t = burn.tensor([1.0, 2.0]); burn_dist.all_reduce(t, 'mean'); assert t.tolist() == [1.0, 2.0]; "
            "assert 'mpi4py' not in sys.modules, 'mpi4py imported under plain python'; print('ok')")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


def test_data_parallel_at_world_size_one_is_plain_training():
    dev = burn.Device.flex().autodiff()
    dev.seed(3)
    a = burn.nn.Linear(4, 3, device=dev)
    dev.seed(3)
    b = burn_dist.DataParallel(burn.nn.Linear(4, 3, device=dev))
    oa, ob = burn.optim.Adam(a, lr=0.1), burn.optim.Adam(b, lr=0.1)
    x = burn.tensor(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32), device=dev)
    for _ in range(3):
        oa.step((a(x) ** 2).mean().backward())
        ob.step(b.backward((b(x) ** 2).mean()))
    assert np.array_equal(a.weight.numpy(), b.weight.numpy())
    assert sorted(b.state_dict()) == ["bias", "weight"]


def test_learner_data_parallel_true_at_world_size_one_matches_plain_learner():
    dev = burn.Device.flex().autodiff()
    X = np.random.default_rng(1).standard_normal((64, 3)).astype(np.float32)
    y = (X.sum(1) > 0).astype(np.int64)
    res = []
    for dp in (False, True):
        dev.seed(0)
        m = burn.nn.Linear(3, 2, device=dev)
        dl = burn.data.DataLoader(burn.data.ArrayDataset(X, y), 16, shuffle=True, seed=0, device=dev)
        lr = burn.train.Learner(m, burn.optim.Adam(m, lr=0.05), burn.nn.functional.cross_entropy,
                                metrics=["accuracy"], progress=False, data_parallel=dp)
        h = lr.fit(dl, 3)
        res.append((h["train_loss"], m.weight.numpy()))
    assert np.allclose(res[0][0], res[1][0]) and np.array_equal(res[0][1], res[1][1])


def test_data_loader_shards_are_disjoint_and_cover_each_batch():
    ds = burn.data.ArrayDataset(np.arange(50))
    full = [b[0].tolist() for b in burn.data.DataLoader(ds, 8, shuffle=True, seed=4)]
    parts = [[b[0].tolist() for b in burn.data.DataLoader(ds, 8, shuffle=True, seed=4).shard(r, 3)] for r in range(3)]
    assert all(len(p) == 6 for p in parts)           # the last batch (2 samples) is smaller than 3 ranks: dropped
    for i, batch in enumerate(full[:6]):
        assert sorted(parts[0][i] + parts[1][i] + parts[2][i]) == sorted(batch)
    with pytest.raises(burn.BurnError, match="rank < count"):
        burn.data.DataLoader(ds, 8).shard(3, 3)


def test_errors_at_the_call():
    with pytest.raises(burn.BurnError, match="mean.*int32"):
        burn_dist.all_reduce(burn.tensor([1, 2], dtype=burn.int32), "mean")
    with pytest.raises(burn.BurnError, match="op must be one of"):
        burn_dist.all_reduce(burn.tensor([1.0]), "avg")
    with pytest.raises(burn.BurnError, match="root must be a rank"):
        burn_dist.broadcast(burn.tensor([1.0]), root=5)
    with pytest.raises(burn.BurnError, match="first axis must be the world size"):
        burn_dist.reduce_scatter(burn.ones((3, 2)))
    with pytest.raises(burn.BurnError, match="expected a burn Tensor"):
        burn_dist.all_reduce(np.ones(3))
    with pytest.raises(burn.BurnError, match="bucket_mb"):
        burn_dist.DataParallel(burn.nn.Linear(2, 2), bucket_mb=0)
    with pytest.raises(burn.BurnError, match="data_parallel must be"):
        m = burn.nn.Linear(2, 2)
        burn.train.Learner(m, burn.optim.SGD(m), burn.nn.functional.mse_loss, data_parallel="yes")


def test_gradient_buckets_respect_bucket_mb_and_skip_frozen_parameters():
    dev = burn.Device.flex().autodiff()
    m = burn.nn.Sequential(*[burn.nn.Linear(64, 64, device=dev) for _ in range(4)])
    m.layers[0].freeze()
    dp = burn_dist.DataParallel(m, bucket_mb=0.02)          # ~20 KB: one 16 KB weight (+ a bias) per bucket
    flat = [p for b in dp.buckets for p in b]
    assert len(flat) == 6 and all(not p.frozen for p in flat)
    assert all(sum(p.size * 4 for p in b) <= 0.02 * 1024 * 1024 or len(b) == 1 for b in dp.buckets)
    assert flat[0] is m.layers[3].bias                      # the last layers first


# -- NCCL -------------------------------------------------------------------------------------------------
def test_nccl_module_imports_and_refuses_clearly_without_cupy_nccl():
    from burn_dist import nccl
    if nccl.nccl_available():
        pytest.skip("a GPU with NCCL is here: the 2-GPU test needs 2 GPUs (plugins/burn-cuda/scripts/gpu_check.sh)")
    try:
        import cupy  # noqa: F401
        have_cupy = True
    except ImportError:
        have_cupy = False
    if not have_cupy:
        with pytest.raises(burn.BurnError, match=r"burn-dist\[nccl\]"):
            nccl.NCCLCommunicator()


@pytest.mark.skip(reason="NCCL across ranks needs 2 GPUs (none here); gpu_check.sh runs NCCL at world size 1")
def test_nccl_all_reduce_on_two_gpus():
    pass  # pragma: no cover
