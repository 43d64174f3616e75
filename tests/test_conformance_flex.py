"""The backend conformance suite (burn.testing.conformance) on burn-flex: one test per case."""
import burn
from burn.testing.pytest_plugin import make_conformance_tests

test_conformance_flex = make_conformance_tests(burn.Device.flex)
