"""pytest plugin: run burn's backend conformance suite against any device.

Installed with burn-core (entry point ``pytest11``), so in any project the
fixtures below exist. It imports nothing but pytest until a test asks for
it. A backend package's whole conformance test can be::

    import burn
    from burn.testing.pytest_plugin import make_conformance_tests
    test_conformance = make_conformance_tests(lambda: burn.Device("mybackend"))

or, with the fixtures (one test per case, device from ``--burn-device`` or
``BURN_DEVICE``, else ``burn.Device.default()``; override the
``burn_conformance_device`` fixture in a conftest.py to pin one)::

    from burn.testing.conformance import run_case
    def test_conformance(burn_conformance_case, burn_conformance_device):
        run_case(burn_conformance_case, burn_conformance_device)
"""
from __future__ import annotations

import os

import pytest

import burn

__all__ = ["make_conformance_tests", "burn_conformance_device", "selected_cases"]


def pytest_addoption(parser):
    group = parser.getgroup("burn", "burn backend conformance")
    group.addoption("--burn-device", default=None,
                    help="device the burn conformance suite runs on, e.g. 'flex' or 'cuda:0'")


def selected_cases(select=None, exclude=(), skip_dtypes=()):
    """Conformance cases filtered by op name (``select``: names to keep), by
    ``exclude`` (names of ops or of cases to drop) and by ``skip_dtypes``
    (dtype names the backend does not support, e.g. ``("float64",)``).

    Example:
        >>> from burn.testing.pytest_plugin import selected_cases
        >>> cs = selected_cases(select={"matmul"}, skip_dtypes={"float64"})
        >>> assert cs and all(c.op == "matmul" and "float64" not in c.dtypes for c in cs)
    """
    from .conformance import cases   # deferred: pytest loads this plugin in every session; the table needs burn.nn
    keep = None if select is None else set(select)
    drop, no = set(exclude), set(skip_dtypes)
    return [c for c in cases() if (keep is None or c.op in keep) and c.op not in drop and c.name not in drop
            and not (c.dtypes & no)]


def make_conformance_tests(device_factory, *, select=None, exclude=(), skip_dtypes=()):
    """A pytest test function, parametrized with one test per conformance case.

    ``device_factory`` is a Device, a device string, or a callable returning
    one (called per test, so a missing backend fails the tests, not the import).
    ``select``/``exclude``/``skip_dtypes`` filter the cases (see
    :func:`selected_cases`). Assign the result to a ``test_*`` name in a test module.

    Example:
        >>> import burn
        >>> from burn.testing.pytest_plugin import make_conformance_tests
        >>> test_conformance = make_conformance_tests(burn.Device.flex, select={"add"})
        >>> marks = test_conformance.pytestmark
        >>> assert marks[0].name == "parametrize" and len(marks[0].args[1]) > 10
    """
    from .conformance import run_case   # deferred, as in selected_cases
    cs = selected_cases(select, exclude, skip_dtypes)

    @pytest.mark.parametrize("case", cs, ids=[c.name for c in cs])
    def test_burn_conformance(case):
        dev = device_factory() if callable(device_factory) else device_factory
        run_case(case, dev)
    return test_burn_conformance


@pytest.fixture
def burn_conformance_device(request):
    """The device the conformance suite runs on: ``--burn-device``, else
    ``BURN_DEVICE``, else ``burn.Device.default()``. Override it in a
    conftest.py (a fixture of the same name) to pin a backend's device."""
    spec = request.config.getoption("--burn-device", default=None) or os.environ.get("BURN_DEVICE")
    return burn.Device(spec) if spec else burn.Device.default()


def pytest_generate_tests(metafunc):
    # any test asking for ``burn_conformance_case`` gets one run per case
    if "burn_conformance_case" in metafunc.fixturenames:
        cs = selected_cases()
        metafunc.parametrize("burn_conformance_case", cs, ids=[c.name for c in cs])
