"""Run on N ranks by tests/test_dist.py: rank 1 fails in the way argv[1] names while rank 0 waits in a
collective; the job must end (non-zero, the rank named) instead of hanging."""
import os
import signal
import sys

import numpy as np

import burn
import burn_dist

comm = burn_dist.init()
how = sys.argv[1]
buf = np.ones(1000, np.float32)
comm.all_reduce(buf)
if comm.rank == 1:
    if how == "raise":
        raise ValueError("deliberate failure in rank 1")
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "exit":
        sys.exit(3)
    if how == "mismatch":
        burn_dist.all_reduce(burn.zeros((5,)), "sum").numpy()
if how == "mismatch":
    burn_dist.all_reduce(burn.zeros((4,)), "sum").numpy()
comm.all_reduce(buf)          # rank 0 waits here for a rank that is gone
print("unreachable: rank", comm.rank, flush=True)
