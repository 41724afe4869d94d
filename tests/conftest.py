import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import jax  # noqa: E402  (first: the settings below must not reach this process)

# The end-to-end tests' subprocesses (train.py, evaluate.py, benchmark scripts) share one XLA
# compilation cache: many of them compile the same programs (the default learner, the beams
# at widths 1, 8 and 64). Not this process, which read its settings when jax was imported
# above: its many small programs would pay more for the cache than they save. Entries are
# keyed by the program, flags and jax version, so a cache left by an earlier run is safe to
# reuse. Every program is kept, however fast it compiled (JAX keeps only those over 1 s): under
# the flags below many compile in under half a second, and the subprocesses compile them again
# and again (the gpu_suite smoke test, cold cache, alone: 108-111 s against 117-120 s keeping
# those over 0.5 s).
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"jaxdust-tests-xla-{os.getuid()}"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")

# XLA's CPU compiler as the tests run it (programs and processes alike): its older loop
# emitters at optimisation level 1. On a 2-core CPU (`XLA_FLAGS=... python
# benchmarks/compile_times.py OLD NEW`) a first call of the width-8 beam costs 2.8-2.9 CPU s
# instead of 4.9, a 10-update avi chunk 6.1 instead of 9.5, and five training-heavy tests
# alone ran in 51 s instead of 73 s (level 0 compiles faster still but ran them in 115 s).
# Warm, the width-64 beam runs 1.6x slower, which the tests' tiny searches do not feel. The
# suite passes under either: both emitters are XLA's supported paths, and every comparison
# runs under the same flags. The wheel's test runs the installed commands with XLA's
# defaults. A user's own XLA_FLAGS are left alone, and a jaxlib that no longer knows a flag
# (XLA aborts on one) gets its defaults: the check costs one process start, in the first
# process (xdist's workers inherit the result).
FAST_XLA_FLAGS = "--xla_cpu_use_fusion_emitters=false --xla_backend_optimization_level=1"
if "XLA_FLAGS" not in os.environ:
    _known = subprocess.run([sys.executable, "-c", "import jax; jax.devices()"], capture_output=True,
                            env={**os.environ, "XLA_FLAGS": FAST_XLA_FLAGS, "JAX_PLATFORMS": "cpu"}).returncode == 0
    os.environ["XLA_FLAGS"] = FAST_XLA_FLAGS if _known else ""

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# numba's cache, compiled once: on a fresh checkout every process that reached a search
# before anything was cached compiled it again (tens of seconds each for the exact solver). The first
# process starts compiled.PARTS in the background, one process each (~30 s on a fresh
# checkout where compile_all in one process takes ~50 s); each test process waits for them
# after collecting, before its first test (xdist's workers inherit the variable). Letting a
# worker start at once cost more than it saved: its first tests compiled the solver again.
_WARM = "JAXDUST_TESTS_NUMBA_WARM"


def _warm_files() -> list[str]:
    from jaxdust.solver import compiled

    return [os.path.join(os.environ[_WARM], part.__name__) for part in compiled.PARTS]


def pytest_configure(config):
    if _WARM in os.environ:  # an xdist worker: the controller started it
        return
    os.environ[_WARM] = tempfile.mkdtemp(prefix="jaxdust-tests-")
    warm = ("import sys\ntry:\n    from jaxdust.solver import compiled; getattr(compiled, sys.argv[1])()\n"
            "finally:\n    open(sys.argv[2], 'w').close()")
    # Quiet: its notices ("compiling the level-1 NMCS search") are no test's output, and a
    # failure there fails the tests that reach the same search.
    config._jaxdust_warm = [subprocess.Popen([sys.executable, "-c", warm, os.path.basename(done), done], cwd=ROOT,
                                             stderr=subprocess.DEVNULL)
                            for done in _warm_files()]


def pytest_unconfigure(config):
    for process in getattr(config, "_jaxdust_warm", ()):
        process.wait()


# The modules with the longest end-to-end tests (over 30 s each on 2 cores), longest first.
LONG_FIRST = ("test_gpu_suite", "test_learners", "test_wheel", "test_notebooks", "test_soak", "test_policy",
              "test_distributed", "test_family_search", "test_avi")


def pytest_collection_modifyitems(config, items):
    """``LONG_FIRST``'s modules first, each kept whole and in its order: the long tests start
    early and short ones fill the end, where one worker used to run the wheel's test alone
    for 40 s while the other sat idle. This needs ``--dist worksteal`` (pyproject's addopts):
    xdist's default hands each worker a block of consecutive tests up front, and one worker
    then holds every long test."""
    rank = {name: index for index, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(pathlib.Path(item.nodeid.partition("::")[0]).stem, len(rank)))  # stable


def pytest_collection_finish(session):
    done, waited = _warm_files(), 0.0
    # A failed part writes its file too: tests then compile what they need.
    while not all(map(os.path.exists, done)) and waited < 600:
        time.sleep(0.2)
        waited += 0.2


# Deterministic property tests: the same examples on every run and every machine.
settings.register_profile(
    "default",
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("default")

# A DQN run of seconds (train.py's arguments, less --total-steps): what the tests of training
# runs (resume, recovery, TensorBoard) train, with a checkpoint after every chunk (not by the
# clock), so that interrupted runs have some to resume from.
TINY_DQN = ["dqn", "--num-envs", "32", "--chunk-iterations", "10", "--hidden", "32", "--buffer-size", "1024",
            "--batch-size", "32", "--learning-starts", "64", "--no-features", "--eval-boards", "16", "--eval-every", "2",
            "--checkpoint-every", "1"]

# The tiny DQN run that the tests of finished runs read (evaluate, loading, refusals) and that
# interrupted runs must end equal to.
WHOLE_DQN = [*TINY_DQN, "--total-steps", str(32 * 60)]


def notebook_runner():
    """``notebooks/execute.py`` as a module (it is a script, not in the package)."""
    import importlib.util

    path = pathlib.Path(__file__).resolve().parent.parent / "notebooks" / "execute.py"
    spec = importlib.util.spec_from_file_location("notebook_runner", path)
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    return runner


def host_devices_flags(devices: int, *flags: str) -> str:
    """``XLA_FLAGS`` for a subprocess with ``devices`` CPU devices: the suite's flags, then
    the device count and ``flags`` (the last of a flag given twice counts)."""
    return " ".join((os.environ.get("XLA_FLAGS", ""), f"--xla_force_host_platform_device_count={devices}", *flags))


def same_in_both(run, other_mode):
    """``run()``'s results (host arrays) as they are and inside ``other_mode()`` (a context
    manager: a JAX mode, in which JAX traces and compiles anew), checked equal leaf by
    leaf, dtypes included; returns the first."""
    import numpy as np

    first = jax.device_get(run())
    with other_mode():
        second = jax.device_get(run())
    assert jax.tree.structure(first) == jax.tree.structure(second)
    for ours, theirs in zip(jax.tree.leaves(first), jax.tree.leaves(second)):
        assert np.asarray(theirs).dtype == np.asarray(ours).dtype
        np.testing.assert_array_equal(theirs, ours)
    return first


def run_log(run_dir) -> list[dict]:
    """A run's ``metrics.jsonl`` lines less their wall-clock seconds: what two runs that
    trained alike share."""
    lines = [json.loads(line) for line in (pathlib.Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
    for line in lines:
        line.pop("seconds")
    return lines


def run_record(run_dir) -> tuple[list[dict], dict]:
    """``run_log`` and the run's summary, less its wall-clock seconds."""
    summary = json.loads((pathlib.Path(run_dir) / "summary.json").read_text())
    summary.pop("seconds")
    return run_log(run_dir), summary


ROOT = pathlib.Path(__file__).resolve().parent.parent
BOARDS_DIR = ROOT / "data" / "boards"


@pytest.fixture(autouse=True)
def _interrupted_commands_raise(monkeypatch):
    """A command interrupted in this process raises SystemExit rather than ending the
    process there (``flags.exit_at_once``); commands run as processes end for real."""
    from jaxdust.core import flags

    def exit_status(status):
        raise SystemExit(status)
    monkeypatch.setattr(flags, "exit_at_once", exit_status)


@pytest.fixture
def compile_log(caplog):
    """``compile_log(call)``: ``call()``'s result (ready) and the compilations JAX logged
    while it ran."""
    def run(call):
        caplog.clear()
        with jax.log_compiles(), caplog.at_level("WARNING"):
            result = jax.block_until_ready(call())
        return result, [record.message for record in caplog.records if "ompil" in record.message]
    return run


@pytest.fixture(scope="session")
def boards_dir() -> pathlib.Path:
    return BOARDS_DIR


@pytest.fixture(scope="session")
def whole_dqn_run(tmp_path_factory) -> pathlib.Path:
    """A finished ``train.py`` DQN run with ``WHOLE_DQN``'s settings; tests only read it."""
    directory = tmp_path_factory.mktemp("whole-dqn") / "run"
    subprocess.run([sys.executable, "train.py", *WHOLE_DQN, "--run-dir", str(directory)], capture_output=True,
                   text=True, cwd=ROOT, check=True)
    return directory
