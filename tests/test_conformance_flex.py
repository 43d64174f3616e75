"""The backend conformance suite (burn.testing.conformance) on burn-flex, one test
per case; and proof that the suite catches a backend that gets an op wrong."""
import numpy as np
import pytest

import burn
from burn.testing import conformance
from burn.testing.pytest_plugin import make_conformance_tests

test_conformance_flex = make_conformance_tests(burn.Device.flex)


def _tanh_gelu(x):
    return (0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))).astype(x.dtype)


def _round_half_away(x):
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(x.dtype)


def _argmax_last(x, *, axis, keepdims):
    flipped = np.flip(x, axis=axis) if axis is not None else x.reshape(-1)[::-1]
    n = x.shape[axis] if axis is not None else x.size
    return (n - 1 - np.argmax(flipped, axis=axis, keepdims=keepdims)).astype(np.int64)


def _sum_f64(x, *, axis, keepdims):
    return np.asarray(np.sum(x, axis=axis, keepdims=keepdims, dtype=np.float64))


def _pad_edge(x, *, pad_width, value):
    return np.pad(x, pad_width, mode="edge")


def _argsort_ties_reversed(x, *, axis):
    # sorted, but equal keys in reverse order: an unstable sort's worst case
    n = x.shape[axis]
    return (n - 1 - np.flip(np.argsort(np.flip(x, axis=axis), axis=axis, kind="stable"), axis=axis)).astype(np.int64)


def _searchsorted_other_side(a, v, *, side):
    return np.searchsorted(a, v, side="right" if side == "left" else "left").astype(np.int64)


MUTANTS = {  # op -> (wrong kernel, ops whose cases must catch it)
    "gelu": (_tanh_gelu, {"gelu"}),                               # tanh approximation
    "remainder": (np.fmod, {"remainder", "mod"}),                 # C semantics for negatives
    "round": (_round_half_away, {"round"}),                       # half away from zero
    "argmax": (_argmax_last, {"argmax"}),                         # last of ties
    "sum": (_sum_f64, {"sum"}),                                   # wrong output dtype
    "pad": (_pad_edge, {"pad"}),                                  # wrong padding mode
    "matmul": (lambda a, b: np.matmul(a, b).astype(np.float32), {"matmul"}),   # bfloat16/float64 dtype
    "argsort": (_argsort_ties_reversed, {"argsort"}),             # not stable
    "searchsorted": (_searchsorted_other_side, {"searchsorted"}),  # side ignored
}


@pytest.fixture(scope="module")
def mutant_registry():
    """A third-party style backend: flex's kernels under a new name, one op replaced at a time."""
    from burn.dispatch import registry
    from burn_flex.backend import FlexBackend
    from burn_flex.kernels import all_kernels
    from burn_flex.kernels.linear import linear_relu
    registered = []

    def make(op):
        name = f"mutant{len(registered)}"
        registry.register_backend(name, type(f"Mutant{op}", (FlexBackend,), {"name": name}), plugin="tests-mutant")
        kernels = dict(all_kernels(), **{"burn::linear_relu": linear_relu})
        kernels[op] = MUTANTS[op][0]
        for k, fn in kernels.items():
            registry.register_kernel(k, name, fn, plugin="tests-mutant")
        registered.append(name)
        return burn.Device(name)
    yield make
    registry.forget_plugin("tests-mutant")


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")   # the mutants drop imaginary parts
@pytest.mark.parametrize("op", sorted(MUTANTS))
def test_the_suite_catches_a_wrong_kernel(mutant_registry, op):
    dev = mutant_registry(op)
    caught = []
    ran = 0
    for case in conformance.cases():
        if case.op not in MUTANTS[op][1] or case.check != "forward":
            continue
        ran += 1
        try:
            conformance.run_case(case, dev)
        except AssertionError:
            caught.append(case.name)
    assert ran and caught, f"no conformance case of {op} noticed the wrong kernel"
