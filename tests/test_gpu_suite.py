"""``benchmarks/gpu_suite.py --smoke``: every step on a CPU in seconds, resumable."""

import glob
import io
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zlib

import nbformat
import pytest

import jaxdust
from jaxdust.core import files, machine

pytestmark = pytest.mark.slow  # end-to-end: python -m pytest -m 'not slow' leaves it out

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE = os.path.join(ROOT, "benchmarks", "gpu_suite.py")


def run_suite(out, *argv):
    environment = {**os.environ, "JAX_PLATFORMS": "cpu"}  # the CPU table alone, also where a GPU is
    result = subprocess.run([sys.executable, SUITE, "--smoke", "--out", str(out), *argv], cwd=ROOT,
                            capture_output=True, text=True, timeout=900, env=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def load(out, name):
    with open(os.path.join(out, f"{name}.json")) as handle:
        return json.load(handle)


def test_smoke_suite_runs_every_step_in_resumed_calls(tmp_path):
    """One test (xdist would run a shared module fixture once per worker): ``--step all``
    three times, one training piece each, as on a GPU with 10-minute slots; the third on
    another machine, as it were, from what ``--pack`` carried there."""
    here, there = tmp_path / "here", tmp_path / "there"
    first = run_suite(here, "--step", "all")
    assert "the training run is not finished" in first and not (here / "eval.json").exists()
    train = load(here, "train")  # the first piece as another version's: the run goes on
    train["pieces"][0].update(jaxdust="0.1.0", commit="0000000")
    files.atomic_write_json(str(here / "train.json"), train)
    run_suite(here, "--step", "all")
    carry_to(here, there, tmp_path / "carried" / "suite.tgz")
    # The same machine in fact: its compiled programs, which a pack leaves out, spare the
    # third call compiling them again.
    shutil.copytree(here / "jax_cache", there / "jax_cache")
    stdout = run_suite(there, "--step", "all")
    check_device_and_env(there)
    check_beam(there)
    check_training_and_evaluation(there)
    check_report_and_resumed_steps(there, stdout)


def carry_to(here, there, packed):
    """``--pack`` leaves out the compiled programs and all but the newest checkpoint (and
    the best); ``--unpack`` restores the rest as it was and refuses a folder in use."""
    suite = [sys.executable, SUITE]
    subprocess.run([*suite, "--out", str(here), "--pack", str(packed)], cwd=ROOT, check=True, capture_output=True)
    assert os.listdir(here / "jax_cache") and os.listdir(here / "run" / "checkpoints")
    unpacked = subprocess.run([*suite, "--out", str(there), "--unpack", str(packed)], cwd=ROOT, capture_output=True,
                              text=True, check=True)
    assert "unpacked" in unpacked.stdout and os.listdir(packed.parent) == ["suite.tgz.1"]
    assert not (there / "jax_cache").exists()
    steps = sorted(int(name) for name in os.listdir(here / "run" / "checkpoints") if name.isdigit())
    assert len(steps) > 1 and os.listdir(there / "run" / "checkpoints") == [str(steps[-1])]
    for name in ("device.json", "train.json", "env.json", "beam.json", "run/metrics.jsonl", "run/config.json"):
        assert (there / name).read_bytes() == (here / name).read_bytes(), name
    for folder in ("best", "best-argmax"):  # a lost one would not show: load_run falls back to best/
        assert os.listdir(here / "run" / folder) and os.listdir(there / "run" / folder) == os.listdir(here / "run" / folder)
    again = subprocess.run([*suite, "--out", str(there), "--unpack", str(packed)], cwd=ROOT, capture_output=True,
                           text=True)
    assert again.returncode == 2 and "is not empty" in again.stderr
    # In parts (a real run's two checkpoints exceed one): split, rejoined, and a smaller pack
    # over a larger one leaves none of its parts behind.
    script = f"""
import json, gpu_suite
small = gpu_suite.pack({str(here)!r}, {str(packed)!r} + "-parts", 64 * 1024)
gpu_suite.pack({str(here)!r}, {str(packed)!r} + "-parts")
print(len(small), json.dumps(gpu_suite.unpack({str(packed)!r} + "-parts", {str(packed.parent / "rejoined")!r})))
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "benchmarks")})
    assert result.returncode == 0, result.stderr[-2000:]
    count, rejoined = result.stdout.split(" ", 1)
    assert int(count) > 1 and sorted(os.listdir(packed.parent)) == ["rejoined", "suite.tgz-parts.1", "suite.tgz.1"]
    assert sorted(json.loads(rejoined)) == sorted(  # the files of the first, whole pack
        os.path.relpath(os.path.join(root, name), there) for root, _, names in os.walk(there) for name in names)


def check_device_and_env(out):
    device = load(out, "device")
    assert device["backend"] == "cpu" and device["jax"] and device["jaxlib"] and device["devices"]
    env = load(out, "env")
    assert env["accelerator"] == {}  # no accelerator here: the CPU table alone
    assert set(env["cpu"]) == {"Dust-6x6x5-v0", "Dust-8x6x5-v0"}
    for env_id, entry in env["cpu"].items():
        assert entry["bytes_per_game"] == jaxdust.make(env_id).state_bytes()
        assert [row["games"] for row in entry["rows"]] == [64]
        assert all(row["clicks_per_second"] > 0 and row["episodes_finished_in_last_call"] >= 0 for row in entry["rows"])


def check_beam(out):
    beam = load(out, "beam")
    jax_rows = [row for name, row in beam["rows"].items() if name.startswith("jax")]
    assert sorted((row["width"], row["batch"]) for row in jax_rows) == [(4, 2), (4, 4)]
    for row in jax_rows:  # ties are ordered by the solver's key in both beams: the same lengths
        assert row["boards_equal_to_numba"] == beam["boards"] == 4
        assert row["mean"] == beam["rows"][f"numba, width {row['width']}"]["mean"]


def check_training_and_evaluation(out):
    train = load(out, "train")
    assert train["learner"] == "avi" and train["total_updates"] > 0
    assert [piece["updates_done"] for piece in train["pieces"]] == [2, 4, 6]  # chunks of 2 updates
    assert [piece["piece"] for piece in train["pieces"]] == [1, 2, 3]
    assert [piece["jaxdust"] for piece in train["pieces"]] == ["0.1.0", jaxdust.__version__, jaxdust.__version__]
    assert {piece["device"] for piece in train["pieces"]} == {load(out, "device")["device_kind"]}
    chunks = [piece["last_chunk"] for piece in train["pieces"]]
    assert chunks == sorted(chunks) and len(set(chunks)) == 3  # each piece went on from the last
    logged = [line["chunk"] for line in files.recover_json_lines(os.path.join(out, "run", "metrics.jsonl"))]
    assert logged == list(range(1, chunks[-1] + 1))  # resumed, never restarted or repeated
    evaluation = load(out, "eval")
    rows = evaluation["rows"]
    assert evaluation["complete"] and evaluation["step"] <= evaluation["final_step"] == chunks[-1]
    final = {"trained, final checkpoint"} if evaluation["final_step"] != evaluation["step"] else set()
    assert set(rows) == {"trained", "hand-made heuristic"} | final
    assert set(rows["trained"]["proven"]) == {"argmax", "width_1", "width_4", "mcts_2"}
    assert "argmax" not in rows["hand-made heuristic"]["proven"]
    for by_set in rows.values():
        for name, row in by_set["proven"].items():
            assert 0.0 <= row["optimal"] <= 1.0 and row["gap"] >= 0.0, name


def check_report_and_resumed_steps(out, stdout):
    report = (out / "report.md").read_text()
    assert "Measured with `python benchmarks/gpu_suite.py --step all --smoke` on" in report
    assert "| Dust-8x6x5-v0 |" in report and "| jax, width 4, 4 boards per search |" in report
    assert "| trained | proven |" in report
    assert f"; training pieces: jaxdust 0.1.0 (commit 0000000) and jaxdust {jaxdust.__version__}" in report
    assert "`curve.png`" in report and (out / "curve.png").read_bytes()[:4] == b"\x89PNG"  # the pieces' progress
    before = {name: (out / f"{name}.json").read_text() for name in ("env", "beam", "train", "eval")}
    run_suite(out, "--step", "env")
    run_suite(out, "--step", "train")  # all pieces done: nothing more
    assert {name: (out / f"{name}.json").read_text() for name in before} == before
    check_results_of_another_version_are_measured_again(out)
    # An evaluation killed after its first row goes on from the next.
    evaluation = load(out, "eval")
    partial = {**evaluation, "complete": False, "rows": {"trained": {**evaluation["rows"]["trained"], "kept": True}}}
    files.atomic_write_json(str(out / "eval.json"), partial)
    run_suite(out, "--step", "eval")
    resumed = load(out, "eval")
    assert resumed["complete"] and resumed["rows"]["trained"]["kept"] and set(resumed["rows"]) == set(evaluation["rows"])
    def played(row):  # what was played, not how long it took
        return {set_name: {agent: {k: v for k, v in result.items() if k != "ms_per_board"}
                           for agent, result in by_agent.items()} for set_name, by_agent in row.items()}

    assert played(resumed["rows"]["hand-made heuristic"]) == played(evaluation["rows"]["hand-made heuristic"])
    # Rows of other checkpoints than the run's (it trained on after them) are played again.
    files.atomic_write_json(str(out / "eval.json"), {**partial, "complete": True, "step": 0})
    assert "evaluating again: the rows played checkpoints 0, " in run_suite(out, "--step", "eval")
    again = load(out, "eval")
    assert again["step"] == evaluation["step"] and "kept" not in again["rows"]["trained"]
    files.atomic_write_json(str(out / "eval.json"), evaluation)  # without the mark, for the report below
    # Pieces on other machines are named; a piece from before pieces recorded theirs counts
    # as the report's device.
    train = load(out, "train")
    train["pieces"][1]["device"] = "NVIDIA H100 80GB HBM3"
    del train["pieces"][2]["device"]
    files.atomic_write_json(str(out / "train.json"), train)
    run_suite(out, "--step", "report")
    kind = load(out, "device")["device_kind"]
    assert f"its pieces on {kind}, NVIDIA H100 80GB HBM3, {kind})" in (out / "report.md").read_text()
    # Played on this machine: not named. Trained on a GPU and played elsewhere: named.
    assert evaluation["played_on"] == [machine.cpu_description()]
    device = load(out, "device")
    files.atomic_write_json(str(out / "device.json"), {**device, "device_kind": "NVIDIA H100 80GB HBM3",
                                                       "cpu_description": "AMD EPYC, 16 cores"})
    run_suite(out, "--step", "report")
    report = (out / "report.md").read_text()
    assert f"HBM3; played on {machine.cpu_description()}); mean clicks (on the proven" in report
    # Rows measured elsewhere than the measured-on line's device and host are marked.
    assert "| jax, width 4, 4 boards per search (on cpu) |" in report
    assert f"| numba, width 4 (on {machine.cpu_description()}) |" in report
    assert f"| Dust-8x6x5-v0 (on {machine.cpu_description()}) |" in report
    # A smoke run's folder is refused to a full call (its results would pass for real ones).
    full = subprocess.run([sys.executable, SUITE, "--out", str(out), "--step", "report"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert full.returncode == 2 and "holds a --smoke run's results" in full.stderr


def check_results_of_another_version_are_measured_again(out):
    """A result kept by another jaxdust version is measured again (env, beam and eval would
    describe other code); where one version made every result, the report names it once."""
    env, beam, evaluation = load(out, "env"), load(out, "beam"), load(out, "eval")
    planted = {"jaxdust": "0.1.0", "commit": "0000000"}
    files.atomic_write_json(str(out / "env.json"), {**env, "cpu": {**env["cpu"], "Dust-6x6x5-v0": {
        **env["cpu"]["Dust-6x6x5-v0"], **planted, "rows": [{"games": 64, "clicks_per_second": 1.0}]}}})
    row_name = "jax, width 4, 2 boards per search"
    files.atomic_write_json(str(out / "beam.json"), {**beam, "rows": {
        **beam["rows"], row_name: {**beam["rows"][row_name], **planted, "seconds_per_board": 99.0}}})
    files.atomic_write_json(str(out / "eval.json"), {**evaluation, **planted, "rows": {"kept": {}}})
    stdout = run_suite(out, "--step", "env") + run_suite(out, "--step", "beam") + run_suite(out, "--step", "eval")
    assert "measuring Dust-6x6x5-v0 again (cpu)" in stdout and f"measuring again (beam rows, measured by another version of jaxdust): {row_name}" in stdout
    assert "evaluating again" in stdout
    again = load(out, "env")["cpu"]
    assert again["Dust-6x6x5-v0"]["jaxdust"] == jaxdust.__version__ and again["Dust-6x6x5-v0"]["rows"][0]["clicks_per_second"] > 1
    assert again["Dust-8x6x5-v0"] == env["cpu"]["Dust-8x6x5-v0"]  # this version's: kept
    rows = load(out, "beam")["rows"]
    assert rows[row_name]["jaxdust"] == jaxdust.__version__ and rows[row_name]["seconds_per_board"] < 99
    assert rows["jax, width 4, 4 boards per search"] == beam["rows"]["jax, width 4, 4 boards per search"]
    evaluated = load(out, "eval")
    assert evaluated["jaxdust"] == jaxdust.__version__ and set(evaluated["rows"]) == set(evaluation["rows"])
    files.atomic_write_json(str(out / "eval.json"), evaluation)  # the report checks below read these
    train = load(out, "train")
    assert f"CPU cores, env: jaxdust {jaxdust.__version__}" in run_suite(out, "--step", "report")
    files.atomic_write_json(str(out / "train.json"), train | {"pieces": [
        {**piece, "jaxdust": jaxdust.__version__, "commit": train["pieces"][-1]["commit"]} for piece in train["pieces"]]})
    assert f"CPU cores, jaxdust {jaxdust.__version__}" in run_suite(out, "--step", "report")
    assert "training pieces:" not in (out / "report.md").read_text()  # one version: named once


def write_notebook(path, *sources):
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources]), path)
    return path


def test_notebooks_step_runs_one_notebook_per_call_and_keeps_a_failure(tmp_path):
    """``--step notebooks`` (the Colab notebooks on the suite's machine, one per call) runs
    a kernel with the user's environment, not the suite's host devices; a failing cell is
    its notebook's result and the next call goes on to the next notebook."""
    good = write_notebook(tmp_path / "good.ipynb", 'import jax\nprint("JAX", jax.__version__, "on", jax.devices())',
                          "print('four', 2 + 2)")
    bad = write_notebook(tmp_path / "bad.ipynb", 'raise ValueError("planted failure")', 'print("never")')
    stored = nbformat.read(bad, as_version=4)  # stored with an earlier run's outputs, as the repository's are
    for count, cell in enumerate(stored.cells, 1):
        cell.execution_count = count
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"an earlier run's cell {count}\n")]
    nbformat.write(stored, bad)
    out = tmp_path / "out"
    argv = ("--step", "notebooks", "--notebooks", f"{good},{bad}")
    run_suite(out, *argv)
    rows = load(out, "notebooks")["rows"]
    assert list(rows) == ["good"]
    assert rows["good"]["cells_run"] == rows["good"]["cells"] == 2 and rows["good"]["error"] is None
    assert rows["good"]["kernel"].startswith("JAX ") and rows["good"]["kernel"].endswith("[CpuDevice(id=0)]")
    executed = nbformat.read(out / "notebooks" / "good.ipynb", as_version=4)
    assert "four 4" in "".join(o.get("text", "") for cell in executed.cells for o in cell.outputs)
    run_suite(out, *argv)
    bad_row = load(out, "notebooks")["rows"]["bad"]
    assert (bad_row["cells_run"], bad_row["cells"]) == (1, 2) and bad_row["kernel"] is None
    assert bad_row["error"] == "CellExecutionError: ValueError: planted failure"  # no terminal colours
    executed = nbformat.read(out / "notebooks" / "bad.ipynb", as_version=4)  # what ran, not what was stored
    assert "an earlier run's" not in str(executed) and executed.cells[1].execution_count is None
    before = (out / "notebooks.json").read_text()
    run_suite(out, *argv)  # each has run: nothing more
    assert (out / "notebooks.json").read_text() == before
    kept = load(out, "notebooks")
    assert {row["jaxdust"] for row in kept["rows"].values()} == {jaxdust.__version__}
    kept["rows"]["good"]["jaxdust"] = "0.1.0"  # run by another version: run again, after the rest
    files.atomic_write_json(str(out / "notebooks.json"), kept)
    stdout = run_suite(out, *argv)
    assert "measuring again (notebooks, measured by another version of jaxdust): good" in stdout
    rows = load(out, "notebooks")["rows"]
    assert list(rows) == ["bad", "good"] and rows["good"]["jaxdust"] == jaxdust.__version__
    assert rows["bad"] == kept["rows"]["bad"]
    before = (out / "notebooks.json").read_text()
    run_suite(out, "--step", "report")
    report = (out / "report.md").read_text()
    assert "| good | JAX " in report and "| 2 of 2 |" in report and "| 1 of 2 |" in report


def test_the_accelerator_table_caps_each_call_at_its_steps(tmp_path):
    """Small batches on a GPU are launch-bound: a timed call there plays at most
    ``accelerator_steps``; the CPU table keeps its clicks a call. The accelerator's path
    runs here on CPU devices that the suite takes for a GPU."""
    script = f"""
import dataclasses, json, gpu_suite
gpu_suite.jax.default_backend = lambda: "gpu"
sizes = dataclasses.replace(gpu_suite.SMOKE, env_ids=("Dust-6x6x5-v0",), accelerator_games=(16, 64), cpu_games=(16,),
                            accelerator_clicks=1 << 12, accelerator_steps=24, cpu_clicks=1 << 8)
report = gpu_suite.step_env({str(tmp_path)!r}, sizes)
print(json.dumps({{target: [row["steps_per_call"] for row in table["Dust-6x6x5-v0"]["rows"]]
                  for target, table in report.items() if target in ("accelerator", "cpu")}}))
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": os.path.join(ROOT, "benchmarks")})
    assert result.returncode == 0, result.stderr[-3000:]
    # 4,096 clicks want 256 and 64 steps; 256 clicks of 16 games, 16 steps
    assert json.loads(result.stdout.splitlines()[-1]) == {"accelerator": [24, 24], "cpu": [16]}


def test_an_interrupted_env_batch_is_measured_again_and_a_killed_one_is_reported(tmp_path):
    """Ctrl-C during a batch leaves no pending row (the next call measures it); a batch
    left pending by a killed call is measured once more (the device's time limit kills
    whichever batch a call is on), and left pending again ends its id's sweep, and the
    report says so rather than dropping the id. A folder holds one kind of run: a full call is refused a smoke folder
    and the other way round, and results from before the mark count as a full run's."""
    script = f"""
import dataclasses, json, os, gpu_suite
out = {str(tmp_path / "suite")!r}
os.makedirs(out)
gpu_suite.claim_folder(out, smoke=True)
sizes = dataclasses.replace(gpu_suite.SMOKE, env_ids=("Dust-6x6x5-v0", "Dust-8x6x5-v0"), cpu_games=(16, 32),
                            cpu_clicks=1 << 8)
measure = gpu_suite.env_throughput.measure
def interrupted(env, count, *args, **kwargs):
    if count == 32:
        raise KeyboardInterrupt
    return measure(env, count, *args, **kwargs)
gpu_suite.env_throughput.measure = interrupted
try:
    gpu_suite.step_env(out, sizes)
except KeyboardInterrupt:
    pass
first = [row["games"] for row in gpu_suite._load(os.path.join(out, "env.json"))["cpu"]["Dust-6x6x5-v0"]["rows"]]
gpu_suite.env_throughput.measure = measure
report = gpu_suite._load(os.path.join(out, "env.json"))
# As kill -9 leaves a batch: once (measured again), and a second time (reported).
report["cpu"]["Dust-8x6x5-v0"] = {{**report["cpu"]["Dust-6x6x5-v0"], "rows": [{{"games": 16, "pending": True}}]}}
gpu_suite.files.atomic_write_json(os.path.join(out, "env.json"), report)
measured = gpu_suite.step_env(out, sizes)["cpu"]["Dust-8x6x5-v0"]["rows"]
once = [row["games"] for row in measured if "clicks_per_second" in row]
report = gpu_suite._load(os.path.join(out, "env.json"))
# The sweep's last batch (the one a time limit kills most) likewise.
report["cpu"]["Dust-8x6x5-v0"]["rows"][-1] = {{"games": 32, "pending": True}}
gpu_suite.files.atomic_write_json(os.path.join(out, "env.json"), report)
last = [row["games"] for row in gpu_suite.step_env(out, sizes)["cpu"]["Dust-8x6x5-v0"]["rows"] if "clicks_per_second" in row]
report = gpu_suite._load(os.path.join(out, "env.json"))
report["cpu"]["Dust-8x6x5-v0"]["rows"] = [{{"games": 16, "pending": True, "attempts": 2}}]
gpu_suite.files.atomic_write_json(os.path.join(out, "env.json"), report)
report = gpu_suite.step_env(out, sizes)
again = [row["games"] for row in report["cpu"]["Dust-6x6x5-v0"]["rows"] if "clicks_per_second" in row]
gpu_suite.step_device(out, sizes)
table = gpu_suite.step_report(out, sizes) and open(os.path.join(out, "report.md")).read()
refusals = []
for folder, smoke in ((out, False), (out + "-full", True), (out + "-old", True)):
    os.makedirs(folder, exist_ok=True)
    if folder.endswith("-full"):
        gpu_suite.claim_folder(folder, smoke=False)
    if folder.endswith("-old"):  # a folder from before the mark: a full run's
        open(os.path.join(folder, "train.json"), "w").write("{{}}")
    try:
        gpu_suite.claim_folder(folder, smoke)
        refusals.append("")
    except ValueError as error:
        refusals.append(str(error))
print(json.dumps([first, once, last, again, table, refusals]))
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": os.path.join(ROOT, "benchmarks")})
    assert result.returncode == 0, result.stderr[-3000:]
    first, once, last, again, table, refusals = json.loads(result.stdout.splitlines()[-1])
    assert first == [16] and once == last == again == [16, 32]
    assert re.search(r"\| Dust-6x6x5-v0 \| \d+ \| (16|32) \| [\d,]+ \| 2 sizes measured \|", table)
    assert "| Dust-8x6x5-v0 | " in table and "| - | - | 16 games: the 2 calls measuring it were killed |" in table
    assert "holds a --smoke run's results" in refusals[0]
    assert "holds a full run's results" in refusals[1] and "holds a full run's results" in refusals[2]


def test_a_training_piece_gets_what_is_left_of_its_call(tmp_path):
    """A piece runs to the end of its call's slot: the steps before it in the same call
    have spent part of it, and a call with too little left trains no piece. A resumed run's
    clock restarts at its newest checkpoint's logged seconds, not the last logged line's
    (those after it are redone), so a piece after a killed one is no longer than the rest."""
    script = f"""
import dataclasses, json, os, time, gpu_suite
out = {str(tmp_path / "suite")!r}
run = os.path.join(out, "run")
os.makedirs(os.path.join(run, "checkpoints"))
open(os.path.join(run, "config.json"), "w").write("{{}}")
with open(os.path.join(run, "metrics.jsonl"), "w") as handle:
    for chunk in range(1, 6):
        handle.write(json.dumps({{"chunk": chunk, "seconds": 100.0 * chunk}}) + "\\n")
gpu_suite.files.atomic_write_json(os.path.join(out, "train.json"), {{
    "learner": "avi", "total_updates": 5000, "chunk_updates": 1000, "pieces": [], "planned_pieces": 3}})
gpu_suite._newest_readable_step = lambda folder: "3"  # a piece killed after chunk 5, its last checkpoint at 3
asked = []
gpu_suite.cli.main = lambda argv: asked.append(float(argv[argv.index("--minutes") + 1]) * 60)
sizes = dataclasses.replace(gpu_suite.SMOKE, piece_floor_seconds=120.0)
gpu_suite.CALL_STARTED = time.perf_counter() - 100  # earlier steps took 100 s of a 3-minute slot
gpu_suite.step_train(out, sizes, 3, 3.0)
gpu_suite.CALL_STARTED = time.perf_counter() - 30
report = gpu_suite.step_train(out, sizes, 3, 3.0)
gpu_suite.CALL_STARTED = time.perf_counter() - 30  # short pieces: the floor is half of one
report = gpu_suite.step_train(out, sizes, 3, 2.0)
print(json.dumps([asked, len(report["pieces"])]))
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": os.path.join(ROOT, "benchmarks")})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "80 s left of this call's 3 minutes: no training piece now" in result.stdout
    (asked, pieces), = [json.loads(result.stdout.splitlines()[-1])]
    assert len(asked) == 2 and 300 + 145 < asked[0] <= 300 + 150 and pieces == 2  # chunk 3's 300 s + what is left
    assert 300 + 85 < asked[1] <= 300 + 90  # 2 minutes less 30 s: over the floor of half a piece


def test_a_notebook_cut_off_by_ctrl_c_runs_again_in_the_next_call(tmp_path):
    """The slot's end (``timeout -s INT``, which signals the whole process group) stops the
    call, not the notebook: it gets no row, so the next call runs it again rather than
    reporting it failed. The call records the device first, for the report's line."""
    started = tmp_path / "started"
    notebook = write_notebook(tmp_path / "long.ipynb", f"open({str(started)!r}, 'w').close()",
                              "import time\ntime.sleep(120)")
    out = tmp_path / "out"
    call = subprocess.Popen([sys.executable, SUITE, "--smoke", "--out", str(out), "--step", "notebooks",
                             "--notebooks", str(notebook)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    deadline = time.monotonic() + 240
    while not started.exists() and call.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert started.exists(), call.communicate()[1][-3000:] if call.poll() is not None else "the kernel did not start"
    time.sleep(1)
    os.killpg(call.pid, signal.SIGINT)
    _, stderr = call.communicate(timeout=120)
    assert call.returncode == 130, stderr[-3000:]
    rows = load(out, "notebooks")["rows"] if (out / "notebooks.json").exists() else {}
    assert "long" not in rows
    assert not (out / "notebooks" / "long.ipynb").exists() and load(out, "device")["backend"] == "cpu"


def test_bad_flags_are_refused_before_any_step(tmp_path):
    notebook = write_notebook(tmp_path / "one.ipynb", "x = 1")
    cases = ((["--env-games", "1024,0"], "--env-games"), (["--pieces", "0"], "--pieces"),
             (["--smoke", "--piece-minutes", "2"], "--smoke sets its own piece length"),
             (["--step", "env", "--notebooks", str(notebook)], "--notebooks goes with --step notebooks"),
             (["--step", "notebooks", "--notebooks", str(tmp_path / "none.ipynb")], "no such file"),
             (["--step", "notebooks", "--notebooks", __file__], "is not a notebook"),
             (["--unpack", str(tmp_path / "none.tgz")], "no packed suite at"),
             (["--pack", str(tmp_path / "a.tgz"), "--step", "env"], "run no step: leave out --step"),
             (["--pack", str(tmp_path / "a.tgz"), "--ste", "env"], "run no step: leave out --step"),
             (["--smoke", "--piece-m", "2"], "--smoke sets its own piece length"),
             (["--pack", str(tmp_path / "out" / "a.tgz")], "is inside --out"),
             (["--out", str(tmp_path / "planned"), "--step", "eval", "--pieces", "2"],
              "the training run in " + str(tmp_path / "planned") + " was planned for 3 pieces"),
             # The sweep resumed by position: 64,1024,4096 after 64,256 skipped 1024.
             (["--out", str(tmp_path / "planned"), "--step", "eval", "--env-games", "64,1024,4096"],
              "--env-games 64,1024,4096: the env sweep in " + str(tmp_path / "planned") + " measures 64,256 games"),
             # No GPU: a full call would measure the CPU, and train a piece of the GPU run on it.
             (["--step", "train"], "JAX sees no accelerator here, only the CPU: the suite measures a GPU"),
             (["--step", "all"], "--step eval, --step report, --pack and --unpack run anywhere"),
             # The report's line read "on None (None, None)".
             (["--step", "report"], "holds no measurements to report: run a step first"))
    (tmp_path / "planned").mkdir()
    (tmp_path / "planned" / "suite.json").write_text('{"smoke": false}')
    (tmp_path / "planned" / "train.json").write_text('{"planned_pieces": 3, "pieces": []}')
    (tmp_path / "planned" / "env.json").write_text('{"accelerator": {}, "cpu": {}, "accelerator_games": [64, 256]}')
    # One process calls the suite's main with each (its import, JAX's among them, is most of a start).
    script = """
import contextlib, io, json, sys, gpu_suite
answers = []
for argv in json.loads(sys.argv[1]):
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        try:
            gpu_suite.main(argv)
            code = 0
        except SystemExit as stop:
            code = stop.code
    answers.append([code, stderr.getvalue()])
print(json.dumps(answers))
"""
    argvs = [["--out", str(tmp_path / "out"), *argv] for argv, _ in cases]
    result = subprocess.run([sys.executable, "-c", script, json.dumps(argvs)], cwd=ROOT, capture_output=True, text=True,
                            timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu",  # the CPU refusals, on any machine
                                              "PYTHONPATH": os.path.join(ROOT, "benchmarks")})
    assert result.returncode == 0, result.stderr[-3000:]
    for (argv, message), (code, stderr) in zip(cases, json.loads(result.stdout.splitlines()[-1]), strict=True):
        assert code == 2 and message in stderr, (argv, stderr[-500:])
    assert not (tmp_path / "out").exists()  # nothing claimed, nothing measured
    # Playing a carried-in run is no measure of the machine: --step eval goes on on a CPU.
    (tmp_path / "planned" / "device.json").write_text("{}")
    played = subprocess.run([sys.executable, SUITE, "--out", str(tmp_path / "planned"), "--step", "eval"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert played.returncode == 0 and "the training run is not finished" in played.stdout, played.stderr[-2000:]


def test_pack_follows_a_linked_out_skips_damaged_checkpoints_and_refuses_links_inside(tmp_path):
    """``--out`` may be a link (to scratch space): its folder is packed, not the link. A
    newest checkpoint whose files fail their checksums stays behind for the newest readable
    one. A link inside the folder is refused when packing, not on the next machine."""
    real = tmp_path / "real"
    for step in ("100", "200"):
        folder = real / "run" / "checkpoints" / step
        folder.mkdir(parents=True)
        (folder / "state").write_bytes(step.encode())
        files.atomic_write_json(str(folder / "checksums.json"), {"state": zlib.crc32(step.encode())})
    (real / "run" / "checkpoints" / "200" / "state").write_bytes(b"changed after saving")
    (real / "train.json").write_text("{}")
    linked = tmp_path / "linked"
    linked.symlink_to(real, target_is_directory=True)
    script = f"""
import gpu_suite
gpu_suite.pack({str(linked)!r}, {str(tmp_path / "suite.tgz")!r})
print(sorted(gpu_suite.unpack({str(tmp_path / "suite.tgz")!r}, {str(tmp_path / "there")!r})))
try:  # a pack inside --out through the link is inside it all the same
    gpu_suite.pack({str(linked)!r}, {str(linked / "inside.tgz")!r})
except ValueError as error:
    print("inside:", error)
import os
os.makedirs({str(tmp_path / "empty")!r})
os.symlink({str(tmp_path / "empty")!r}, {str(tmp_path / "to-empty")!r})  # a linked, empty --out is filled
print(len(gpu_suite.unpack({str(tmp_path / "suite.tgz")!r}, {str(tmp_path / "to-empty")!r})))
os.symlink("train.json", {str(real / "alias.json")!r})
try:
    gpu_suite.pack({str(real)!r}, {str(tmp_path / "again.tgz")!r})
except ValueError as error:
    print("refused:", error)
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "benchmarks")})
    assert result.returncode == 0, result.stderr[-2000:]
    unpacked, inside, through_link, refused = result.stdout.splitlines()
    assert inside.startswith("inside:") and "is inside --out" in inside and not (real / "inside.tgz.1").exists()
    assert unpacked == str(sorted(["run/checkpoints/100/checksums.json", "run/checkpoints/100/state", "train.json"]))
    assert through_link == "3" and (tmp_path / "empty" / "train.json").exists() and (tmp_path / "to-empty").is_symlink()
    assert refused.startswith("refused:") and "alias.json is not a plain file or folder" in refused
    assert not (tmp_path / "again.tgz.1").exists()
    assert oct((tmp_path / "there").stat().st_mode & 0o777) == oct(0o777 & ~files.current_umask())


def test_unpack_refuses_compiled_programs_which_pack_never_writes(tmp_path, monkeypatch):
    """The suite points JAX's compilation cache at ``OUT/jax_cache``: a pack carrying one
    would have the next machine load and run programs made elsewhere."""
    monkeypatch.syspath_prepend(os.path.join(ROOT, "benchmarks"))
    import gpu_suite

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in (("./train.json", b"{}"), ("./jax_cache/jit_step-0123abcd-cache", b"code")):
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    (tmp_path / "suite.tgz.1").write_bytes(buffer.getvalue())
    with pytest.raises(ValueError, match="jit_step-0123abcd-cache' is a compiled program, which --pack never writes"):
        gpu_suite.unpack(str(tmp_path / "suite.tgz"), str(tmp_path / "there"))
    assert not (tmp_path / "there").exists()


def newest_committed_pack():
    """The GPU run in progress that the next machine continues: the newest ``suite.tgz``
    under ``docs/measured/`` (folders named ``DEVICE-YYYY-MM-DD``, perhaps with a suffix);
    of two on one day, the one with more training pieces."""
    measured = os.path.join(ROOT, "docs", "measured")
    dated = {os.path.join(measured, name, "suite.tgz"): re.search(r"\d{4}-\d\d-\d\d", name).group()
             for name in os.listdir(measured) if os.path.exists(os.path.join(measured, name, "suite.tgz.1"))}
    if not dated:
        return None
    newest = [pack for pack, date in dated.items() if date == max(dated.values())]
    # Reading a pack means unzipping megabytes, at every collection (the skip mark): only for a tie.
    return max(newest, key=pieces_in) if len(newest) > 1 else newest[0]


def pieces_in(pack):
    """The training pieces a pack's ``train.json`` records (its gzip parts read as one)."""
    parts = sorted(glob.glob(pack + ".*"), key=lambda part: int(part.rsplit(".", 1)[1]))
    data = b"".join(pathlib.Path(part).read_bytes() for part in parts)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        return len(json.load(archive.extractfile("./train.json"))["pieces"])


@pytest.mark.skipif(newest_committed_pack() is None, reason="no GPU run in progress is committed")
def test_the_committed_gpu_run_resumes_on_this_version(tmp_path):
    """A GPU session continues the committed run with ``--unpack`` then ``--step train``
    (NOTES): the pieces' flags must agree with its settings, and its newest checkpoint must
    restore into this version's learner state, or that session's device time is lost. A
    change that breaks this moves the run on (or starts it over) before it lands."""
    pack = newest_committed_pack()
    script = f"""
import json, os
import jax, numpy as np
import gpu_suite
from jaxdust.core import configs
from jaxdust.learn import cli, runs
out = {str(tmp_path / "suite")!r}
gpu_suite.unpack({pack!r}, out)
with open(os.path.join(out, "train.json")) as handle:
    train = json.load(handle)
run_dir = os.path.join(out, "run")
learner, saved = runs.read_run_config(run_dir)
flags = [*train["flags"], "--total-updates", str(train["total_updates"])]
args = cli.build_parser().parse_args([learner.name, "--run-dir", run_dir, *flags, "--resume"])
config = configs.from_flags(args, runs.base_config(learner, args))  # as train.py --resume reads its settings
if config != saved:
    raise SystemExit(f"the suite's flags no longer match the committed run's settings: {{config}} != {{saved}}")
_, trainer, done, state = runs.start(learner, config, args)  # as train.py --resume begins
fresh = trainer.init(jax.random.key(args.seed)) if trainer is not None else learner.template(config)  # None: finished
same = jax.tree.structure(state) == jax.tree.structure(fresh) and all(
    a.shape == b.shape and a.dtype == b.dtype for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(fresh)))
moved = sum(float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).sum())
            for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(fresh)) if jax.numpy.issubdtype(a.dtype, np.floating))
print(json.dumps({{"done": done, "last_chunk": train["pieces"][-1]["last_chunk"],
                  "same_layout": same, "params_moved": moved}}))
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "JAX_PLATFORMS": "cpu",
                                 "PYTHONPATH": os.path.join(ROOT, "benchmarks")})
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.splitlines()[-1])
    assert found["done"] == found["last_chunk"] > 0 and found["same_layout"]
    assert found["params_moved"] > 0  # the trained network came back, not the fresh one


def test_the_report_counts_one_size_and_names_both_sets_of_the_evaluation(tmp_path, monkeypatch):
    """It said "1 sizes measured", and "proven boards: mean clicks (share optimal)" above a
    table with fresh rows, with nothing on eval.json's ms_per_board including compiling.
    Its measured-on line gave the device step's day alone for a run resumed days later."""
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=1")
    monkeypatch.syspath_prepend(os.path.join(ROOT, "benchmarks"))
    import gpu_suite

    parts = {"device": {"device_kind": "cpu", "date": "2026-11-27"}, "beam": {}, "notebooks": {},
             "env": {"cpu": {"Dust-6x6x5-v0": {"bytes_per_game": 48, "rows": [{"games": 16, "clicks_per_second": 1e6}]}}},
             "train": {"learner": "avi", "total_updates": 4,
                       "pieces": [{"run_seconds": 60.0, "updates_done": 4, "date": "2026-12-04"}]},
             "eval": {"proven_optimum_mean": 11.74, "rows": {"trained": {
                 "fresh": {"argmax": {"mean": 14.0, "ms_per_board": 5.0}},
                 "proven": {"argmax": {"mean": 13.0, "optimal": 0.25, "ms_per_board": 5.0}}}}}}
    for name, part in parts.items():
        files.atomic_write_json(str(tmp_path / f"{name}.json"), part)
    gpu_suite.step_report(str(tmp_path), gpu_suite.SMOKE)
    report = (tmp_path / "report.md").read_text()
    assert report.splitlines()[0].endswith(", 2026-11-27 to 2026-12-04.")
    assert "| Dust-6x6x5-v0 | 48 | 16 | 1,000,000 | 1 size measured |" in report
    assert ("avi trained 1.0 minutes (4 of 4 planned updates, its pieces dated 2026-12-04); mean clicks (on the proven boards also the share "
            "optimal; their mean optimum 11.74; eval.json's ms_per_board include compiling):") in report


def test_the_beams_ratio_compares_two_times_of_one_host(tmp_path):
    """A numba row measured on another machine (a pack unpacked elsewhere) was divided into
    this host's JAX times; it is measured again here, and each JAX row keeps the numba time
    its ratio used."""
    script = f"""
import json, os, gpu_suite
out = {str(tmp_path / "suite")!r}
os.makedirs(out)
gpu_suite.claim_folder(out, smoke=True)
elsewhere = {{"width": 4, "mean": 1.0, "seconds_per_board": 1e9, "lengths": [1, 1, 1, 1],
              **gpu_suite._measured_by(), "host": "another CPU, 64 cores"}}
gpu_suite.files.atomic_write_json(os.path.join(out, "beam.json"), {{"rows": {{"numba, width 4": elsewhere}}}})
print(json.dumps(gpu_suite.step_beam(out, gpu_suite.SMOKE)["rows"]))
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": os.path.join(ROOT, "benchmarks")})
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads(result.stdout.splitlines()[-1])
    numba = rows.pop("numba, width 4")
    assert numba["host"] == machine.cpu_description() and numba["seconds_per_board"] < 1e9
    assert sorted(rows) == ["jax, width 4, 2 boards per search", "jax, width 4, 4 boards per search"]
    for row in rows.values():
        assert row["numba_seconds_per_board"] == numba["seconds_per_board"]
        assert row["time_vs_numba"] == row["seconds_per_board"] / numba["seconds_per_board"]


def test_the_report_says_how_far_training_got_before_its_evaluation(tmp_path, monkeypatch):
    """Before ``--step eval`` the report said nothing of the training run, however many of
    its pieces had run or were cut off; and its command line gave the first piece's minutes
    to every piece (NOTES' recipe gives the last one 9.1)."""
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=1")
    monkeypatch.syspath_prepend(os.path.join(ROOT, "benchmarks"))
    import gpu_suite

    train = {"learner": "avi", "total_updates": 9000, "chunk_updates": 1000, "planned_pieces": 3, "piece_minutes": 8.5,
             "pieces": [{"piece": 1, "last_chunk": 3, "run_seconds": 60.0},
                        {"piece": 2, "last_chunk": 5, "run_seconds": 120.0, "piece_minutes": 8.5}]}
    parts = {"device": {"device_kind": "NVIDIA H200", "date": "2026-12-04"}, "env": {}, "beam": {}, "eval": {},
             "notebooks": {}, "train": train}
    for name, part in parts.items():
        files.atomic_write_json(str(tmp_path / f"{name}.json"), part)
    os.makedirs(tmp_path / "run")
    log = "".join(json.dumps({"chunk": chunk, "seconds": 24.0 * chunk}) + "\n" for chunk in range(1, 7))
    (tmp_path / "run" / "metrics.jsonl").write_text(log)  # chunk 6: a third piece cut off before it was recorded
    gpu_suite.step_report(str(tmp_path), gpu_suite.SMOKE)
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("Measured with `python benchmarks/gpu_suite.py --step all --pieces 3 --piece-minutes 8.5` ")
    assert ("avi training: 2 of 3 pieces recorded, 6,000 of 9,000 planned updates in 2.4 minutes of training (its log "
            "reaches chunk 6: a piece cut off after chunk 5); not evaluated yet (`--step eval` once every piece has "
            "run).") in report
    train["pieces"].append({"piece": 3, "last_chunk": 6, "run_seconds": 144.0, "piece_minutes": 9.1})
    files.atomic_write_json(str(tmp_path / "train.json"), train)
    gpu_suite.step_report(str(tmp_path), gpu_suite.SMOKE)
    report = (tmp_path / "report.md").read_text()
    assert "--pieces 3 --piece-minutes 8.5, 8.5, 9.1 (piece by piece)` on NVIDIA H200" in report
    assert "avi training: 3 of 3 pieces recorded, 6,000 of 9,000 planned updates in 2.4 minutes of training;" in report


def test_a_notebook_kernel_on_the_cpu_is_an_error_on_a_gpu(monkeypatch):
    """A CPU build of JAX in the notebooks' kernel on a GPU machine ran them at their small
    sizes without an error: the row said "none" and measured nothing of the GPU."""
    monkeypatch.syspath_prepend(os.path.join(ROOT, "benchmarks"))
    import gpu_suite

    on_cpu, on_gpu = "JAX 0.11.2 on [CpuDevice(id=0)]", "JAX 0.11.2 on [CudaDevice(id=0)]"
    assert gpu_suite._kernel_off_the_device(on_cpu) is None  # the suite itself on a CPU: the smoke run
    monkeypatch.setattr(gpu_suite.jax, "default_backend", lambda: "gpu")
    assert gpu_suite._kernel_off_the_device(on_gpu) is None and gpu_suite._kernel_off_the_device(None) is None
    assert gpu_suite._kernel_off_the_device(on_cpu) == (
        "its kernel ran on the CPU (JAX 0.11.2 on [CpuDevice(id=0)]), not on the gpu: install jaxdust[cuda] there")
