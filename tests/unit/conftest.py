import pytest

from _unit_helpers import FIXTURE_NAMES, Recording, recording


@pytest.fixture(params=FIXTURE_NAMES)
def rec(request) -> Recording:
    """Each recorded fixture in turn."""
    return recording(request.param)
