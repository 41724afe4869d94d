"""Multi-process training: two processes on this machine with ``jax.distributed``, one CPU
device each (cross-process collectives through gloo, JAX's default on CPU), train exactly
as one process with two devices and the same seed does."""

import json
import os
import socket
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from tests.conftest import host_devices_flags, run_record

pytestmark = pytest.mark.slow  # end-to-end: python -m pytest -m 'not slow' leaves it out

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 240  # seconds for all processes of one test together: a hang fails, it does not block

# Compiling dominates these tiny runs; XLA's cheapest optimisation level halves it (after the
# suite's flags, so it counts). Every run below compiles with the same flags, so the
# comparisons are unchanged.
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(command, devices=1):
    env = {**os.environ, "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": host_devices_flags(devices, FAST_COMPILE)}
    return subprocess.Popen([sys.executable, *command], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def outputs(processes) -> list[str]:
    """Every process's stdout; on a failure or past TIMEOUT kills the rest and fails."""
    deadline = time.monotonic() + TIMEOUT
    try:
        results = []
        for process in processes:
            stdout, stderr = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert process.returncode == 0, stderr[-3000:]
            results.append(stdout)
        return results
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def distributed(rank: int, coordinator: str) -> list[str]:
    return ["--distributed", "--coordinator", coordinator, "--num-processes", "2", "--process-id", str(rank)]


# ---------------------------------------------------------------------------------------
# train.py end to end (the default learner): metrics, summary and checkpoints
# ---------------------------------------------------------------------------------------


AVI = ["train.py", "avi", "--size", "4x3x3", "--hidden", "16", "--num-envs", "16", "--beam-width", "2",
       "--buffer-lines", "16", "--total-updates", "12", "--chunk-updates", "4", "--seed", "3",
       "--eval-boards", "9", "--eval-every", "2", "--checkpoint-every", "2"]  # 9: shares of 5 and 4


def test_train_py_in_two_processes_equals_one_process_with_two_devices(tmp_path):
    from jaxdust.learn import runs

    coordinator = f"127.0.0.1:{free_port()}"
    # --devices is per process (checked against its local devices after joining the others).
    processes = [start([*AVI, "--run-dir", str(tmp_path / "distributed"), "--devices", "1",
                        *distributed(rank, coordinator)]) for rank in (0, 1)]
    processes.append(start([*AVI, "--run-dir", str(tmp_path / "two-devices"), "--devices", "2"], devices=2))
    printed = outputs(processes)
    assert ['"learner": "avi"' in out for out in printed] == [True, False, True]  # one summary a run

    lines, summary = run_record(tmp_path / "distributed")
    assert [line["chunk"] for line in lines] == [1, 2, 3]  # process 0 alone logged
    assert "greedy_clicks" in lines[-1]
    assert (lines, summary) == run_record(tmp_path / "two-devices")  # exactly: the same sums in the same order
    # The checkpoints the two processes wrote together hold the same parameters.
    loaded = [runs.load_run(str(tmp_path / name), newest=True) for name in ("distributed", "two-devices")]
    assert loaded[0].step == loaded[1].step == 3
    for a, b in zip(*(jax.tree.leaves(run.params) for run in loaded), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    # Resumed in two processes past a damaged newest checkpoint: each process names the one
    # folder it was moved to (process 1 looked after process 0's rename and named another).
    os.remove(tmp_path / "distributed" / "summary.json")
    os.remove(tmp_path / "distributed" / "checkpoints" / "3" / "checksums.json")  # an unfinished save
    coordinator = f"127.0.0.1:{free_port()}"  # the first run's port may linger after its coordinator ended
    processes = [start([*AVI, "--run-dir", str(tmp_path / "distributed"), "--devices", "1", "--resume",
                        *distributed(rank, coordinator)]) for rank in (0, 1)]
    deadline = time.monotonic() + TIMEOUT
    errs = [process.communicate(timeout=max(1.0, deadline - time.monotonic()))[1] for process in processes]
    assert [process.returncode for process in processes] == [0, 0], errs[0][-3000:] + errs[1][-3000:]
    moved = {line.split("moved to ")[1].split(",")[0] for err in errs for line in err.splitlines() if "moved to" in line}
    assert moved == {str(tmp_path / "distributed" / "checkpoints" / "3.damaged")}
    assert run_record(tmp_path / "distributed") == run_record(tmp_path / "two-devices")

    # Resumed with no --devices where there are more: on its own two, so it ends as it did
    # (all four split its games otherwise, and it warned so).
    whole = run_record(tmp_path / "two-devices")
    [resumed] = [start([*AVI, "--run-dir", str(tmp_path / "two-devices"), "--resume", "--resume-step", "2"], devices=4)]
    stdout, stderr = resumed.communicate(timeout=TIMEOUT)
    assert resumed.returncode == 0, stderr[-3000:]
    assert [line for line in stderr.splitlines() if line.startswith("warning:")] == []
    assert run_record(tmp_path / "two-devices") == whole


# ---------------------------------------------------------------------------------------
# DQN's sharded replay, at the learner level (cheaper than a second train.py run)
# ---------------------------------------------------------------------------------------


DQN_SCRIPT = """
import json, sys, jax, numpy as np
if len(sys.argv) > 1:
    jax.distributed.initialize(sys.argv[1], 2, int(sys.argv[2]))
from jaxdust.core.game import GameConfig
from jaxdust.learn import dqn, runs

config = dqn.DQNConfig(game=GameConfig(4, 3, 3), hidden=(16,), num_envs=16, total_steps=320, chunk_iterations=10,
                       buffer_size=128, batch_size=16, learning_starts=32)
mesh = runs.make_mesh(None)
init, run_chunk = dqn.make_dqn(config, mesh)
runner = init(jax.random.key(3))
losses = []
for _ in range(2):
    runner, metrics = run_chunk(runner)
    losses.append(float(metrics.loss))
print(json.dumps({"devices": mesh.size if mesh else 1, "processes": jax.process_count(), "losses": losses,
                  "params": [np.asarray(p).tolist() for p in jax.tree.leaves(runner.train.params)]}))
"""


def test_dqn_in_two_processes_equals_one_process_with_two_devices():
    coordinator = f"127.0.0.1:{free_port()}"
    processes = [start(["-c", DQN_SCRIPT, coordinator, str(rank)]) for rank in (0, 1)]
    processes.append(start(["-c", DQN_SCRIPT], devices=2))
    first, second, reference = (json.loads(out.strip().splitlines()[-1]) for out in outputs(processes))
    assert (first["devices"], first["processes"], reference["devices"], reference["processes"]) == (2, 2, 2, 1)
    assert first["losses"] == second["losses"] == reference["losses"]
    assert first["params"] == second["params"] == reference["params"]


def test_sigterm_stops_a_distributed_run_as_it_stops_one_process(tmp_path):
    """jax.distributed.initialize starts JAX's preemption service, which caught SIGTERM
    (scancel, a time limit, kill) and let the run train on to its end. Stopped, the run
    resumes from its checkpoints."""
    run_dir = tmp_path / "run"
    long_run = [*AVI[:AVI.index("--total-updates")], "--total-updates", "100000", "--chunk-updates", "4", "--seed", "3",
                "--eval-boards", "9", "--eval-every", "1000", "--checkpoint-every", "1"]
    process = start([*long_run, "--run-dir", str(run_dir), "--distributed", "--coordinator",
                     f"127.0.0.1:{free_port()}", "--num-processes", "1", "--process-id", "0"])
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (run_dir / "metrics.jsonl").exists() or not (run_dir / "metrics.jsonl").read_text():
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1][-3000:]
            time.sleep(0.2)
        process.terminate()
        process.wait(timeout=60)  # trained on, it would take hours
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode != 0 and not (run_dir / "summary.json").exists()
    logged = len((run_dir / "metrics.jsonl").read_text().splitlines())
    assert 1 <= logged < 100000 // 4
