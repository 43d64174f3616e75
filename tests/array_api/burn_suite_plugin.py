"""pytest plugin loaded into the array-api-tests run by run_suite.py (``-p``).

The suite's conftest loads a hypothesis profile with max_examples, derandomize
and deadline from its command line; this plugin runs after it and loads a child
of that profile without the shrink and target phases. burn fails many tests
today, and shrinking each failure to a minimal example costs hundreds of extra
examples per failing test: most of the run time, for a smaller example in a
message that the expected-failure list does not keep anyway. Generation is
unchanged, so the same tests fail, and the run stays deterministic.
"""
import pytest
from hypothesis import Phase, settings

PROFILE = "burn-array-api-tests"


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """Load the suite's profile less shrinking (after the suite's own conftest).

    Example:
        >>> settings.register_profile("array-api-tests", max_examples=5, derandomize=True)
        >>> pytest_configure(None)
        >>> settings.default.max_examples, settings.default.derandomize, Phase.shrink in settings.default.phases
        (5, True, False)
        >>> settings.load_profile("default")
    """
    settings.register_profile(PROFILE, parent=settings.get_profile("array-api-tests"),
                              phases=[Phase.explicit, Phase.reuse, Phase.generate])
    settings.load_profile(PROFILE)
