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

# A DQN run of seconds (train.py's arguments, less --total-steps): what the tests of training
# runs (resume, recovery, TensorBoard) train.
TINY_DQN = ["dqn", "--num-envs", "32", "--chunk-iterations", "10", "--hidden", "32", "--buffer-size", "1024",
            "--batch-size", "32", "--learning-starts", "64", "--no-features", "--eval-boards", "16", "--eval-every", "2"]

BOARDS_DIR = pathlib.Path(__file__).resolve().parent.parent / "data" / "boards"


@pytest.fixture(scope="session")
def boards_dir() -> pathlib.Path:
    return BOARDS_DIR
