"""Run a flex computation on one thread and on two (tests that check results do not depend on
how the pool splits the work)."""
from __future__ import annotations

from burn_flex import threads


def on_one_and_two_threads(fn):
    """``(fn() on one flex thread, fn() on two)``, the thread count restored afterwards."""
    before = threads.num_threads()
    try:
        threads.set_num_threads(1)
        one = fn()
        threads.set_num_threads(2)
        two = fn()
    finally:
        threads.set_num_threads(before)
    return one, two
