import pathlib

import pytest
from hypothesis import HealthCheck, settings

# Deterministic property tests: the same examples on every run and every machine.
settings.register_profile(
    "default",
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("default")

BOARDS_DIR = pathlib.Path(__file__).resolve().parent.parent / "data" / "boards"


@pytest.fixture(scope="session")
def boards_dir() -> pathlib.Path:
    return BOARDS_DIR
