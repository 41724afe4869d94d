import os
import pathlib
import tempfile

import jax  # noqa: E402  (first: the settings below must not reach this process)

# The end-to-end tests' subprocesses (train.py, evaluate.py, benchmark scripts) share one XLA
# compilation cache: many of them compile the same programs (the default learner, the beams
# at widths 1, 8 and 64). Not this process, which read its settings when jax was imported
# above: its many small programs would pay more for the cache than they save. Entries are
# keyed by the program, flags and jax version, so a cache left by an earlier run is safe to
# reuse.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"jaxdust-tests-xla-{os.getuid()}"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

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
