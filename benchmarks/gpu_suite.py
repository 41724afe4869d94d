"""Every GPU figure in one command, in steps that each fit a 10-minute slot and resume.

    python benchmarks/gpu_suite.py --out results/gpu --step all     # repeat until the report is whole
    python benchmarks/gpu_suite.py --out results/gpu --step train   # one more training piece
    python benchmarks/gpu_suite.py --smoke                          # toy sizes on a CPU (results/gpu-smoke)

Steps (``--step all`` runs each in this order, skipping what ``--out`` already holds and
one training piece per call, so the same command repeated, about five times of at most 10
minutes, carries on where the last stopped or was killed):

- ``device``: the device, its memory, jax / jaxlib / CUDA versions, ``jax.devices()``.
- ``env``: random-play clicks/s for every registered id, from 1,024 games up to the largest
  batch that fits in memory (up to 2**26 games tried), with bytes per game; then the same
  ids on the machine's CPU cores in the same run (``benchmarks/env_throughput.py``'s loop).
- ``beam``: the JAX beam at widths 64 and 2000 on the first 200 evaluation boards, sweeping
  the boards per compiled search, against the numba beam with the same scorer: s/board
  and boards whose lengths equal numba's.
- ``train``: the default learner, in 1000-update chunks, for ``--pieces`` x ``--piece-minutes``
  (3 x 8.5) with orbax checkpoints, one piece per call, each a ``train.py --resume`` of the
  last. The first piece times warm updates and sizes the schedule to the whole run, which
  keeps its number of pieces. A piece runs to ``--piece-minutes`` after its call started
  (the steps before it in the call spend part of that; with under two minutes, or half the
  piece, left, the next call trains it).
- ``eval`` (once the pieces are done): the trained run on 1000 fresh boards and the 100 proven boards (argmax, greedy,
  widths 8 and 64, mcts 64, share optimal), its selected checkpoints (argmax from the one
  selected by argmax play, the rest from the one selected by greedy play) and, where that
  is another, its final one, beside the hand-made heuristic in the same run.
- ``report``: ``report.json`` and ``report.md`` (tables ready for docs/results.md, with the
  measured-on line), and ``curve.png``, the run's play on its progress boards piece by piece.

``--step notebooks`` (not part of ``all``) runs one more of the Colab notebooks per call, top
to bottom in a Jupyter kernel on this machine, with the sizes each picks for the backend it
sees (``SMALL = False`` on a GPU); ``--notebooks`` names others. The report lists them.

Where JAX sees only the CPU, a call without --smoke is refused, but for --step eval
(a trained run played there, its rows marked so), --step report, --pack and --unpack: it
would measure the wrong machine.

Results are written atomically after every row, so a killed step keeps what it measured
(an env batch whose call was killed is measured once more, then counted as failed).
``--out`` holds one kind of run: ``suite.json`` says whether it is a ``--smoke`` one, and a
call of the other kind is refused (a smoke run's seconds-long results would pass for the
real ones). Each result names the device and host that measured it, and the report marks
the rows measured elsewhere than its measured-on line (after ``--unpack`` on another machine).
Each result names the jaxdust version and commit that measured it; a call of another version
measures the env, beam, eval and notebook results again (they would describe other code),
while the training run goes on across versions (its checkpoints are checked against the
learner's state) and the report names the version of each piece.

``--pack FILE`` and ``--unpack FILE`` carry ``--out`` to another machine, for device time
that comes in pieces shorter than the suite (a rented hour, a Colab runtime that expires):
the steps' files, the training run with its newest checkpoint and its selected ones, and
the executed notebooks, not the compiled programs, in gzip parts ``FILE.1``, ``FILE.2``, ...
of at most 15 MiB each. Unpacked into an empty ``--out`` elsewhere, the steps go on where they were;
each training piece records the device it ran on.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import glob
import importlib.metadata
import io
import json
import os
import pathlib
import platform
import re
import subprocess
import shutil
import tarfile
import tempfile
import time

CALL_STARTED = time.perf_counter()  # a training piece gets what is left of the call's slot

# The notebooks' kernels get the environment as the user set it, not the settings below.
USER_ENVIRONMENT = dict(os.environ)
# The training step runs in this process after others have used the device: let JAX's
# allocator grow rather than take 75% of the GPU up front.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import env_throughput  # noqa: E402  (benchmarks/; sets one XLA host device per CPU core)
import jax  # noqa: E402
import numpy as np  # noqa: E402

import beam as beam_benchmark  # noqa: E402  (benchmarks/beam.py)
import equal_time  # noqa: E402
import learners as learners_benchmark  # noqa: E402
import jaxdust  # noqa: E402
from jaxdust.core import files, flags, machine, processes  # noqa: E402
from jaxdust.evaluation import plots  # noqa: E402
from jaxdust.learn import checkpoint, cli, learners, runs  # noqa: E402
from jaxdust.search import heuristic  # noqa: E402
from jaxdust.search.mcts import heuristic_evaluator  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
STEPS = ("device", "env", "beam", "train", "eval", "report")
DEFAULT_PIECES = 3


@dataclasses.dataclass(frozen=True)
class Sizes:
    """What each step measures; ``SMOKE`` shrinks everything to toy sizes for a CPU."""
    env_ids: tuple[str, ...] | None = None  # None: every registered id
    accelerator_games: tuple[int, ...] = tuple(1024 * 4**k for k in range(9))  # 1,024 .. 67,108,864
    cpu_games: tuple[int, ...] = (1024, 16384, 65536)
    accelerator_clicks: int = 1 << 24  # clicks per timed call, in at most
    # 1,024 steps: a small batch's step on a GPU costs what launching its kernels costs, so a
    # longer call measures the same rate more slowly. With 16,384 steps at 1,024 games, the
    # calls took 4-7 s each on an H200 (0.2.16: 157 of the 200 s that 7 ids' sweeps took).
    accelerator_steps: int = 1024
    cpu_clicks: int = 1 << 19
    repeats: int = 3
    beam_boards: int = 200
    beam_batches: dict = dataclasses.field(default_factory=lambda: {64: (16, 64, 200), 2000: (1, 4, 16)})
    # On an H200, 0.2.5's default 100-update chunks (a checkpoint after each: now every 30 s)
    # ran 4.0 ms an update against 1.7 ms in 1000-update chunks; the suite keeps 1000, so
    # its runs stay comparable with the ones measured then.
    train_flags: tuple[str, ...] = ("--chunk-updates", "1000")
    train_updates: int | None = None  # None: as many as the pieces' minutes allow (timed)
    fresh_boards: int = 1000
    proven_boards: int | None = None  # None: all 100
    widths: tuple[int, ...] = (1, 8, 64)
    simulations: int = 64
    notebooks: tuple[str, ...] | None = None  # None: the repository's notebooks/*.ipynb
    notebook_cell_seconds: int = 540  # a cell running longer is stopped (its notebook fails)
    # A call with less than this left of its --piece-minutes (at most half of them) after the
    # steps before it (the env sweep, the beam) trains no piece: the next call does, from its
    # start. None: every call trains one (the smoke run's pieces are a chunk each, however late).
    piece_floor_seconds: float | None = 120.0


SMOKE = Sizes(env_ids=("Dust-6x6x5-v0", "Dust-8x6x5-v0"), accelerator_games=(64, 256), cpu_games=(64,),
              accelerator_clicks=1 << 10, cpu_clicks=1 << 10, repeats=1, beam_boards=4,
              beam_batches={4: (2, 4)},
              train_flags=("--hidden", "16", "--num-envs", "32", "--beam-width", "4", "--buffer-lines", "32",
                           "--cell-rounds", "1", "--cell-width", "8", "--chunk-updates", "2", "--eval-boards", "4",
                           "--eval-every", "1"),
              train_updates=40, piece_floor_seconds=None,
              fresh_boards=4, proven_boards=4, widths=(1, 4), simulations=2)  # 4 boards everywhere: shared programs


def _load(path: str) -> dict:
    if not os.path.exists(path):
        return {}
    with open(path) as handle:
        return json.load(handle)


def _out_of_memory(error: Exception) -> bool:
    text = str(error)
    return "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()


def step_device(out: str, sizes: Sizes, again: bool = False) -> dict:
    """The device and versions, kept from the first call (the report's measured-on line)
    unless ``again``."""
    path = os.path.join(out, "device.json")
    if os.path.exists(path) and not again:
        return _load(path)
    device = jax.devices()[0]
    # What JAX's allocator may take (the env sweep's ceiling), not the device's memory: by
    # default 75% of it (the H200's 140 GiB read 104.9).
    memory = (device.memory_stats() or {}).get("bytes_limit")
    report = {"backend": jax.default_backend(), "device_kind": device.device_kind,
              "devices": [str(d) for d in jax.devices()], "jax_memory_limit_bytes": memory,
              "jax_memory_fraction": os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.75 (JAX's default)"),
              "platform_version": device.client.platform_version, "jax": jax.__version__,
              "jaxlib": importlib.metadata.version("jaxlib"),
              "cpu": machine.cpu_name(), "cpu_cores": machine.cpu_cores(), "cpu_description": machine.cpu_description(),
              "python": platform.python_version(), "date": datetime.date.today().isoformat(),
              **_measured_by()}
    files.atomic_write_json(path, report)
    print(f"device: {report['device_kind']} ({report['backend']}), {report['platform_version']}, jax {report['jax']}")
    return report


def _measured_by(device: str | None = None) -> dict:
    """What a result was measured with: the jaxdust version, the repository's commit, the
    device (JAX's default unless given), the host's CPU, the jax version and the date."""
    return {"jaxdust": jaxdust.__version__, "commit": _commit(), "device": device or jax.devices()[0].device_kind,
            "host": machine.cpu_description(), "jax": jax.__version__, "date": datetime.date.today().isoformat()}


def _elsewhere(record: dict, device: dict, target: str = "accelerator") -> str:
    """``" (on X)"`` for a result measured on another device or host than the report's
    measured-on line names (its ``device.json``); ``""`` where the same, or either is not
    recorded."""
    mine, line = ((record.get("host"), device.get("cpu_description")) if target == "cpu" else
                  (record.get("device") or record.get("device_kind"), device.get("device_kind")))
    return f" (on {mine})" if mine and line and mine != line else ""


def claim_folder(out: str, smoke: bool) -> None:
    """Mark ``out`` as a ``--smoke`` suite or a real one, or ValueError where it is the other
    kind. A folder of results from before the mark is a real run's."""
    path = os.path.join(out, "suite.json")
    held = _load(path).get("smoke")
    if held is None:
        held = smoke if not glob.glob(os.path.join(out, "*.json")) else False
        files.atomic_write_json(path, {"smoke": held})
    if held != smoke:
        kind = "a --smoke run's" if held else "a full run's"
        raise ValueError(f"--out {out} holds {kind} results: give this {'--smoke ' if smoke else ''}call another --out "
                         f"(or delete that folder)")


def _same_version(saved: dict) -> bool:
    return saved.get("jaxdust") == jaxdust.__version__


def _drop_other_versions(rows: dict, what: str) -> dict:
    """``rows`` without those another jaxdust version measured (said on stdout)."""
    stale = [name for name, row in rows.items() if not _same_version(row)]
    if stale:
        print(f"  measuring again ({what}, measured by another version of jaxdust): {', '.join(stale)}", flush=True)
    return {name: row for name, row in rows.items() if _same_version(row)}


@functools.cache
def _commit() -> str | None:
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


KILLED_ATTEMPTS = 2  # calls killed while measuring a batch before it counts as failed


def _sweep(env_id: str, devices: list, games: tuple[int, ...], clicks: int, max_steps: int | None, repeats: int,
           entry: dict, save) -> None:
    """``env_throughput.measure`` at each batch size into ``entry["rows"]``, saved after every
    row. The sweep stops at the first batch that fails (out of memory, or anything else,
    whose error is kept); a batch left ``pending`` by a killed call is measured once more
    (the device's time limit kills a call, whichever batch it is on), and counts as failed
    when that call is killed too (one stopped by Ctrl-C is not left pending)."""
    env = jaxdust.make(env_id, auto_reset=True)
    rows = entry["rows"]
    attempts = 0
    if rows and rows[-1].get("pending"):
        attempts = rows[-1].get("attempts", 1)
        if attempts < KILLED_ATTEMPTS:
            rows.pop()
        else:
            rows[-1] = {"games": rows[-1]["games"], "error": f"the {attempts} calls measuring it were killed"}
    if rows and "error" in rows[-1]:
        save()
        return
    for count in games[len(rows):]:
        layout = devices if count % len(devices) == 0 else devices[:1]
        rows.append({"games": count, "pending": True, "attempts": attempts + 1})
        attempts = 0
        save()
        try:
            with jax.default_device(layout[0]):
                row = env_throughput.measure(env, count, layout, clicks, repeats, seed=0, max_steps=max_steps)
        except KeyboardInterrupt:  # not the batch's fault: the next call measures it
            rows.pop()
            save()
            raise
        except Exception as error:  # noqa: BLE001  (kept as the row's result; the sweep stops)
            rows[-1] = {"games": count, "out_of_memory": _out_of_memory(error),
                        "error": f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"}
            save()
            print(f"  {env_id}: {count:,} games failed ({rows[-1]['error']})", flush=True)
            return
        rows[-1] = row
        save()
        print(f"  {env_id} on {layout[0].platform}: {count:>10,} games {row['clicks_per_second']:>16,.0f} clicks/s",
              flush=True)


def step_env(out: str, sizes: Sizes) -> dict:
    path = os.path.join(out, "env.json")
    report = _load(path) or {"accelerator": {}, "cpu": {}}
    cpu = jax.devices("cpu")
    targets = [("cpu", cpu, sizes.cpu_games, sizes.cpu_clicks, None)]
    if jax.default_backend() != "cpu":
        targets.insert(0, ("accelerator", jax.devices(), sizes.accelerator_games, sizes.accelerator_clicks,
                           sizes.accelerator_steps))
        report.setdefault("accelerator_games", list(sizes.accelerator_games))  # the report's --env-games
    for target, devices, games, clicks, max_steps in targets:
        for env_id in sizes.env_ids or jaxdust.registered():
            if env_id in report[target] and not _same_version(report[target][env_id]):
                print(f"  measuring {env_id} again ({target}): measured by another version of jaxdust", flush=True)
                del report[target][env_id]
            entry = report[target].setdefault(env_id, {
                "bytes_per_game": jaxdust.make(env_id).state_bytes(), "rows": [],
                "device_kind": devices[0].device_kind, "devices": len(devices),
                **_measured_by(devices[0].device_kind)})
            last = entry["rows"][-1] if entry["rows"] else {}
            done = bool(last) and not last.get("pending") and ("error" in last or len(entry["rows"]) == len(games))
            if not done:
                _sweep(env_id, devices, games, clicks, max_steps, sizes.repeats, entry,
                       lambda: files.atomic_write_json(path, report))
    return report


def step_beam(out: str, sizes: Sizes) -> dict:
    path = os.path.join(out, "beam.json")
    report = _load(path) or {"rows": {}}
    report["rows"] = _drop_other_versions(report["rows"], "beam rows")
    records = jaxdust.read_board_file(os.path.join(ROOT, "data/boards/eval_8x6x5.txt"))[: sizes.beam_boards]
    boards = [record.board for record in records]
    report["boards"] = len(boards)
    for width, batches in sizes.beam_batches.items():
        numba_name = f"numba, width {width}"
        # A ratio compares two times of one host: numba's measured elsewhere (a pack unpacked
        # on another machine) is measured again, and each row keeps the time it was compared with.
        if report["rows"].get(numba_name, {}).get("host") != machine.cpu_description():
            lengths, seconds = beam_benchmark.run_numba(boards, width, heuristic.HEURISTIC_WEIGHTS)
            report["rows"][numba_name] = {"width": width, "mean": float(lengths.mean()), "seconds_per_board": seconds,
                                          "lengths": lengths.tolist(), **_measured_by()}
            files.atomic_write_json(path, report)
        numba = report["rows"][numba_name]
        for batch in batches:
            name = f"jax, width {width}, {batch} boards per search"
            if name in report["rows"]:
                continue
            if any(row.get("out_of_memory") for row in report["rows"].values() if row.get("width") == width):
                continue  # a smaller batch of this width did not fit
            try:
                lengths, seconds = beam_benchmark.run_jax(boards, width, heuristic.heuristic_scorer, batch=batch)
            except jax.errors.JaxRuntimeError as error:
                if not _out_of_memory(error):
                    raise
                report["rows"][name] = {"width": width, "batch": batch, "out_of_memory": True, **_measured_by()}
                files.atomic_write_json(path, report)
                continue
            report["rows"][name] = {
                "width": width, "batch": batch, "mean": float(lengths.mean()), "seconds_per_board": seconds,
                "time_vs_numba": seconds / numba["seconds_per_board"], "numba_seconds_per_board": numba["seconds_per_board"],
                "boards_equal_to_numba": int(np.sum(lengths == np.array(numba["lengths"]))), **_measured_by()}
            print(f"  {name}: {seconds:.3f} s per board, {report['rows'][name]['boards_equal_to_numba']} "
                  f"of {len(boards)} equal to numba", flush=True)
            files.atomic_write_json(path, report)
    return report


def step_train(out: str, sizes: Sizes, pieces: int, piece_minutes: float) -> dict:
    """One more piece of the training run (nothing once all ``pieces`` are done)."""
    path = os.path.join(out, "train.json")
    report = _load(path) or {"pieces": []}
    run_dir = os.path.join(out, "run")
    done = len(report["pieces"])
    if done >= pieces or os.path.exists(os.path.join(run_dir, "summary.json")):
        return report
    calibration = 0.0
    if "total_updates" not in report:
        learner = learners.get(cli.DEFAULT_LEARNER)
        _, config = cli.new_run_config(learner.name, sizes.train_flags)
        per_update, total = None, sizes.train_updates
        if total is None:  # sized from a timed chunk
            calibration_start = time.perf_counter()
            per_update = equal_time.seconds_per_unit(learner, config, seed=0)
            calibration = time.perf_counter() - calibration_start
            # The first piece gives the calibration its time; evaluations, checkpoints and each
            # resumed piece's compile take the rest of an allowance: 0.9 sized the H200's run of
            # 0.2.16 (3 x 8.5 minutes) at 900 chunks, where its first two pieces made 291 and 294.
            total = max(config.chunk_updates, int(0.85 * (60 * pieces * piece_minutes - calibration) / per_update))
        total -= total % config.chunk_updates
        report.update({"learner": learner.name, "seconds_per_update": per_update, "total_updates": total,
                       "chunk_updates": config.chunk_updates, "calibration_seconds": calibration,
                       "flags": list(sizes.train_flags), "planned_pieces": pieces, "piece_minutes": piece_minutes})
        files.atomic_write_json(path, report)
    # The piece runs to the end of the call's slot: the steps before it in this call (and the
    # calibration) have spent part of it.
    left = 60 * piece_minutes - (time.perf_counter() - CALL_STARTED)
    if sizes.piece_floor_seconds is not None and left < min(sizes.piece_floor_seconds, 30 * piece_minutes):
        print(f"  {left:.0f} s left of this call's {piece_minutes:g} minutes: no training piece now; the next call "
              f"trains it", flush=True)
        return report
    # A piece killed before it ended is not counted: the next call resumes from its checkpoint.
    started = os.path.exists(os.path.join(run_dir, "config.json"))
    trained = _resumed_seconds(run_dir)
    # At least a second past the run's clock, so the piece trains a chunk at least (a slot the
    # steps before it spent, as with --smoke's sizes): train.py trains nothing past --minutes.
    argv = [report["learner"], "--run-dir", run_dir, *sizes.train_flags, "--total-updates", str(report["total_updates"]),
            *(["--resume"] if started else []), "--minutes", f"{(trained + max(left, 1.0)) / 60:.4f}"]
    start = time.perf_counter()
    cli.main(argv)
    lines = files.recover_json_lines(os.path.join(run_dir, "metrics.jsonl"))
    report["pieces"].append({"piece": done + 1, "device": jax.devices()[0].device_kind, "piece_minutes": piece_minutes,
                             "wall_seconds": time.perf_counter() - start,
                             "last_chunk": lines[-1]["chunk"], "run_seconds": lines[-1]["seconds"],
                             "updates_done": lines[-1]["chunk"] * report["chunk_updates"],
                             "finished": os.path.exists(os.path.join(run_dir, "summary.json")), **_measured_by()})
    files.atomic_write_json(path, report)
    print(f"  piece {done + 1} of {pieces}: {report['pieces'][-1]['updates_done']} of {report['total_updates']} updates, "
          f"{lines[-1]['seconds'] / 60:.1f} minutes of training so far", flush=True)
    return report


def training_finished(out: str, pieces: int) -> bool:
    train = _load(os.path.join(out, "train.json"))
    return len(train.get("pieces", [])) >= pieces or os.path.exists(os.path.join(out, "run", "summary.json"))


def _resumed_seconds(run_dir: str) -> float:
    """The run's clock where ``train.py --resume`` starts it again: the seconds logged with
    its newest readable checkpoint (lines after it are redone; 0 before the first)."""
    path = os.path.join(run_dir, "metrics.jsonl")
    newest = _newest_readable_step(os.path.join(run_dir, "checkpoints"))
    if newest is None or not os.path.exists(path):
        return 0.0
    kept = [line["seconds"] for line in files.recover_json_lines(path) if line["chunk"] <= int(newest)]
    return kept[-1] if kept else 0.0


def _played_here() -> str:
    device = jax.devices()[0]
    return machine.cpu_description() if device.platform == "cpu" else device.device_kind


def step_eval(out: str, sizes: Sizes, pieces: int) -> dict:
    """The trained run's selected checkpoints (what ``evaluate.py`` plays: ``best-argmax/``
    for argmax play, ``best/`` for the searches), its final one where that is another (at a
    plateau the selection on the progress boards is mostly noise), and the hand-made
    heuristic, on fresh and proven boards; saved after each row, so a killed call goes on
    from the next."""
    path = os.path.join(out, "eval.json")
    report = _load(path)
    if report and not _same_version(report):
        print("  evaluating again: the evaluation was made by another version of jaxdust", flush=True)
        report = {}
    if not training_finished(out, pieces):
        print("  the training run is not finished: run --step train (or all) again first", flush=True)
        return report if report.get("complete", bool(report)) else {}
    trained, by_argmax, final = (runs.load_run(os.path.join(out, "run"), **how)
                                 for how in ({}, {"by": "argmax"}, {"newest": True}))
    played = {"step": trained.step, "argmax_step": by_argmax.step, "final_step": final.step}
    if report and {name: report.get(name) for name in played} != played:
        def listed(steps):
            return "{}, {} and {}".format(*steps)

        print(f"  evaluating again: the rows played checkpoints {listed(report.get(name) for name in played)} "
              f"(selected by greedy play, by argmax, the newest), the run's are now {listed(played.values())}",
              flush=True)
        report = {}
    if report.get("complete", bool(report)):  # files from before rows were saved one by one
        return report
    sets = learners_benchmark.board_sets(sizes.fresh_boards, seed=0, proven=sizes.proven_boards)
    cap = learners_benchmark.CAP
    report = report or {**played, "fresh_boards": sizes.fresh_boards,
                        "proven_optimum_mean": float(np.mean(sets["proven"][1])), "rows": {}, "complete": False,
                        **_measured_by()}
    # A run trained on a GPU may be played on another machine (--pack, --unpack) where
    # device time is short; the clicks can differ a little (a GPU's float32 products run
    # in TF32), so the report names where each row was played.
    report.setdefault("played_on", [])
    agents = [("trained", trained.policy, trained.scorer, trained.params, trained.evaluator, by_argmax.params)]
    # The final checkpoint's row where greedy play selected another (a run whose argmax alone
    # selected another shows the final's argmax only on its progress boards: each row here
    # costs a minute or more on a CPU).
    if final.step != trained.step:
        agents.append(("trained, final checkpoint", final.policy, final.scorer, final.params, final.evaluator, None))
    agents.append(("hand-made heuristic", None, heuristic.heuristic_scorer, None, heuristic_evaluator, None))
    for name, policy, scorer, params, evaluator, policy_params in agents:
        if name in report["rows"]:
            continue
        if _played_here() not in report["played_on"]:
            report["played_on"].append(_played_here())
        report["rows"][name] = {
            set_name: learners_benchmark.play_set(
                boards, optimum, cap, policy, scorer, params,
                widths=sizes.widths if set_name == "proven" else sizes.widths[:2],
                evaluator=evaluator if set_name == "proven" else None, simulations=(sizes.simulations,),
                policy_params=policy_params)
            for set_name, (boards, optimum) in sets.items()}
        files.atomic_write_json(path, report)
        print(f"  {name}: {json.dumps(report['rows'][name])}", flush=True)
    report["complete"] = True
    files.atomic_write_json(path, report)
    return report


def step_notebooks(out: str, sizes: Sizes) -> dict:
    """One more notebook (nothing once each has run), top to bottom in a Jupyter kernel as on
    a Colab runtime; the executed copy goes to ``out/notebooks/``. A failing notebook's
    error is kept as its result: the next call runs the next notebook."""
    import nbformat
    from nbclient import NotebookClient

    path = os.path.join(out, "notebooks.json")
    report = _load(path) or {"rows": {}}
    report["rows"] = _drop_other_versions(report["rows"], "notebooks")
    paths = sizes.notebooks or sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
    pending = [p for p in paths if _stem(p) not in report["rows"]]
    if not pending:
        return report
    notebook_path = pending[0]
    name = _stem(notebook_path)
    notebook = nbformat.read(notebook_path, as_version=4)
    for cell in notebook.cells:  # stored with a CPU's run: a cell a failure stops before must not show it
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(notebook, timeout=sizes.notebook_cell_seconds, kernel_name="python3",
                            resources={"metadata": {"path": os.path.dirname(os.path.abspath(notebook_path))}})
    start = time.perf_counter()
    try:
        client.execute(env=USER_ENVIRONMENT)
        error = None
    except Exception as failure:  # noqa: BLE001  (a failed cell, a timeout, a dead kernel: the row's result)
        lines = re.sub(r"\x1b\[[0-9;]*m", "", str(failure)).strip().splitlines() or [""]  # no terminal colours
        error = f"{type(failure).__name__}: {lines[-1][:300]}"
    # While it runs, nbclient takes Ctrl-C itself (an asyncio handler that shuts the kernel
    # down), and it surfaces as a dead kernel or an error in the cleanup; the handler leaves
    # this future behind. Then the call's slot ended, not the notebook: no row, the next call
    # runs it again.
    if getattr(client, "_async_cleanup_kernel_future", None) is not None:
        raise KeyboardInterrupt
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    printed = "".join(str(o.get("text", "")) for cell in code for o in cell.get("outputs", []))
    kernel = next((line for line in printed.splitlines() if line.startswith("JAX ")), None)
    row = report["rows"][name] = {
        "seconds": time.perf_counter() - start, "cells": len(code),
        "cells_run": sum(cell.get("execution_count") is not None for cell in code),
        "kernel": kernel, "error": error or _kernel_off_the_device(kernel), **_measured_by()}
    os.makedirs(os.path.join(out, "notebooks"), exist_ok=True)
    files.atomic_write_bytes(os.path.join(out, "notebooks", os.path.basename(notebook_path)),
                             (nbformat.writes(notebook) + "\n").encode())
    files.atomic_write_json(path, report)
    print(f"  {name}: {row['cells_run']} of {row['cells']} cells in {row['seconds']:.0f} s, "
          f"{row['error'] or 'no error'}", flush=True)
    return report


def _kernel_off_the_device(kernel: str | None) -> str | None:
    """An error where the suite runs on an accelerator but a notebook's kernel played on the
    CPU (a CPU build of JAX in the kernel's environment: the notebook then picks its small
    sizes and ends without an error, measuring nothing of the GPU); None otherwise."""
    if jax.default_backend() == "cpu" or kernel is None or "CpuDevice" not in kernel:
        return None
    return f"its kernel ran on the CPU ({kernel}), not on the {jax.default_backend()}: install jaxdust[cuda] there"


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _command(parts: dict, smoke: bool) -> str:
    """The suite's command line as far as the steps' files record it: the sizes that change
    what the tables mean (smoke sizes, training pieces, the env sweep's batches)."""
    words = ["python benchmarks/gpu_suite.py --step all" + (" --smoke" if smoke else "")]
    train = parts["train"]
    if "planned_pieces" in train and not smoke:
        # A later piece may be given other minutes than the first (NOTES' recipe: 9.1 for the last).
        minutes = [piece.get("piece_minutes", train["piece_minutes"]) for piece in train.get("pieces", [])]
        said = f"{train['piece_minutes']:g}" if len(set(minutes)) <= 1 else \
            f"{', '.join(f'{m:g}' for m in minutes)} (piece by piece)"
        words.append(f"--pieces {train['planned_pieces']} --piece-minutes {said}")
    games = parts["env"].get("accelerator_games")
    if games and tuple(games) != Sizes().accelerator_games:
        words.append("--env-games " + ",".join(map(str, games)))
    return " ".join(words)


def _records_by_step(parts: dict) -> dict[str, list[dict]]:
    """Each step's result records, each of which may name the version and date that made it."""
    return {
        "env": [entry for table in ("accelerator", "cpu") for entry in parts["env"].get(table, {}).values()],
        "beam": list(parts["beam"].get("rows", {}).values()),
        "training pieces": parts["train"].get("pieces", []),
        "eval": [parts["eval"]] if parts["eval"] else [],
        "notebooks": list(parts["notebooks"].get("rows", {}).values()),
    }


def _versions(parts: dict) -> str:
    """The jaxdust versions (and commits) behind the steps' results, for the measured-on
    line: one where every result has the same, else each step's."""
    def named(record: dict) -> str:
        if "jaxdust" not in record:
            return "a version not recorded"
        return f"jaxdust {record['jaxdust']}" + (f" (commit {record['commit']})" if record.get("commit") else "")

    names = {step: list(dict.fromkeys(map(named, records)))
             for step, records in _records_by_step(parts).items() if records}
    everywhere = {name for step_names in names.values() for name in step_names}
    if len(everywhere) <= 1:
        return next(iter(everywhere), named(parts["device"]))
    return "; ".join(f"{step}: {' and '.join(step_names)}" for step, step_names in names.items())


def _dates(parts: dict) -> str:
    """The day, or first and last days, of the device step and of every result that records
    one: a run resumed on later machines was not all measured on the device step's day."""
    days = sorted({record["date"] for records in _records_by_step(parts).values() for record in records
                   if record.get("date")} | ({parts["device"]["date"]} if parts["device"].get("date") else set()))
    if not days:
        return "date not recorded"
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def step_report(out: str, sizes: Sizes) -> dict:
    parts = {name: _load(os.path.join(out, f"{name}.json"))
             for name in ("device", "env", "beam", "train", "eval", "notebooks")}
    device = parts["device"]
    smoke = _load(os.path.join(out, "suite.json")).get("smoke", False)
    lines = [f"Measured with `{_command(parts, smoke)}` on {device.get('device_kind')} "
             f"({device.get('backend')}, {device.get('platform_version')}), jax {device.get('jax')}, "
             f"{device.get('cpu_cores')} CPU cores, {_versions(parts)}, {_dates(parts)}.", ""]
    for target in ("accelerator", "cpu"):
        table = parts["env"].get(target)
        if not table:
            continue
        lines += [f"Random play, clicks/s ({target}; the sweep's fastest batch, and where the sweep ended):", "",
                  "| id | bytes/game | games | clicks/s | sweep ended |", "|---|---:|---:|---:|---|"]
        for env_id, entry in table.items():
            measured = [r for r in entry["rows"] if "clicks_per_second" in r]
            best = max(measured, key=lambda r: r["clicks_per_second"]) if measured else None
            last = entry["rows"][-1] if entry["rows"] else {}
            if last.get("out_of_memory"):
                ended = f"{last['games']:,} games: out of memory"
            elif "error" in last or last.get("pending"):
                ended = f"{last['games']:,} games: {last.get('error', 'a call measuring it was killed')}"
            else:
                ended = f"{len(measured)} size{'' if len(measured) == 1 else 's'} measured"
            lines.append(f"| {env_id}{_elsewhere(entry, device, target)} | {entry['bytes_per_game']} | "
                         + (f"{best['games']:,} | {best['clicks_per_second']:,.0f}" if best else "- | -")
                         + f" | {ended} |")
        lines.append("")
    if parts["beam"].get("rows"):
        lines += [f"Beam search on the first {parts['beam']['boards']} evaluation boards:", "",
                  "| search | mean clicks | s/board | time / numba's | equal to numba |", "|---|---:|---:|---:|---:|"]
        for name, row in parts["beam"]["rows"].items():
            if "mean" in row:
                ratio = f"{row['time_vs_numba']:.2f}x" if "time_vs_numba" in row else ""
                equal = f"{row['boards_equal_to_numba']} / {parts['beam']['boards']}" if "time_vs_numba" in row else ""
                where = _elsewhere(row, device, "cpu" if name.startswith("numba") else "accelerator")
                lines.append(f"| {name}{where} | {row['mean']:.3f} | {row['seconds_per_board']:.4f} | "
                             f"{ratio} | {equal} |")
        lines.append("")
    if parts["train"].get("pieces") and not parts["eval"].get("rows"):
        lines += [_training_so_far(out, parts["train"]), ""]
    if parts["eval"].get("rows"):
        train = parts["train"]
        last = train["pieces"][-1] if train.get("pieces") else {}
        minutes = last.get("run_seconds", float("nan")) / 60
        columns = ["argmax"] + [f"width_{w}" for w in sizes.widths] + [f"mcts_{sizes.simulations}"]
        pieces_on = [piece.get("device") or device.get("device_kind") or "an unnamed device"
                     for piece in train.get("pieces", [])]
        elsewhere = f", its pieces on {', '.join(pieces_on)}" if set(pieces_on) - {device.get("device_kind")} else ""
        for field, said in (("jax", "with jax"), ("date", "dated")):  # pieces run on another day or jax than the line's
            values = [piece.get(field) or "?" for piece in train.get("pieces", [])]
            if set(values) - {device.get(field), "?"}:
                elsewhere += f", its pieces {said} {', '.join(values)}"
        played_on = parts["eval"].get("played_on", [])
        here = {device.get("device_kind"), device.get("cpu_description")}
        played = f"; played on {' and '.join(played_on)}" if set(played_on) - here else ""
        lines += [f"{train.get('learner')} trained {minutes:.1f} minutes ({last.get('updates_done')} of "
                  f"{train.get('total_updates')} planned updates{elsewhere}{played}); mean clicks (on the proven "
                  f"boards also the share optimal; their mean optimum {parts['eval']['proven_optimum_mean']:.2f}; "
                  "eval.json's ms_per_board include compiling):", "",
                  "| agent | set | " + " | ".join(c.replace("_", " ") for c in columns) + " |",
                  "|---|---|" + "---:|" * len(columns)]
        for name, by_set in parts["eval"]["rows"].items():
            for set_name, row in by_set.items():
                cells = [("-" if c not in row else f"{row[c]['mean']:.2f}"
                          + (f" ({100 * row[c]['optimal']:.0f}%)" if "optimal" in row[c] else "")) for c in columns]
                lines.append(f"| {name} | {set_name} | " + " | ".join(cells) + " |")
        lines.append("")
    if parts["notebooks"].get("rows"):
        lines += ["Notebooks (`--step notebooks`), top to bottom in a Jupyter kernel:", "",
                  "| notebook | kernel | cells run | seconds | error |", "|---|---|---:|---:|---|"]
        for name, row in parts["notebooks"]["rows"].items():
            lines.append(f"| {name}{_elsewhere(row, device)} | {row['kernel'] or '-'} | {row['cells_run']} of {row['cells']} | "
                         f"{row['seconds']:.0f} | {row['error'] or 'none'} |")
    curve = _progress_curve(out, parts["train"], device.get("device_kind"))
    if curve:
        files.atomic_write_bytes(os.path.join(out, "curve.png"), curve)
        lines += ["The training run's play on its progress boards, piece by piece: `curve.png`.", ""]
    text = "\n".join(lines) + "\n"
    files.atomic_write_bytes(os.path.join(out, "report.md"), text.encode())
    files.atomic_write_json(os.path.join(out, "report.json"), parts)
    print(text)
    return parts


def _training_so_far(out: str, train: dict) -> str:
    """Where the training run stands before it is evaluated (the table that says so after
    needs ``--step eval``): its pieces recorded and its own log, which also holds the chunks
    of a piece cut off before it was recorded (the next call resumes from them)."""
    logged = [line for line in files.recover_json_lines(os.path.join(out, "run", "metrics.jsonl"), repair=False)
              if "chunk" in line]
    last = logged[-1] if logged else {"chunk": 0, "seconds": 0.0}
    pieces = train["pieces"]
    finished = os.path.exists(os.path.join(out, "run", "summary.json"))
    cut_off = last["chunk"] > pieces[-1].get("last_chunk", 0)
    return (f"{train.get('learner')} training: {len(pieces)} of {train.get('planned_pieces')} pieces "
            + ("(the run finished)" if finished else "recorded")
            + f", {last['chunk'] * train.get('chunk_updates', 0):,} of {train.get('total_updates', 0):,} planned updates "
            f"in {last['seconds'] / 60:.1f} minutes of training"
            + (f" (its log reaches chunk {last['chunk']}: a piece cut off after chunk {pieces[-1].get('last_chunk')})"
               if cut_off else "")
            + "; not evaluated yet (`--step eval` once every piece has run).")


def _progress_curve(out: str, train: dict, device_kind: str | None) -> bytes | None:
    """Argmax and greedy play on the run's progress boards against its minutes of training,
    a line where each piece ended; None before the first evaluation."""
    evaluated = [r for r in files.recover_json_lines(os.path.join(out, "run", "metrics.jsonl")) if "argmax_clicks" in r]
    if not evaluated:
        return None
    seconds = [r["seconds"] for r in evaluated]
    pieces = train.get("pieces", [])
    devices = sorted({piece.get("device") or device_kind or "an unnamed device" for piece in pieces})
    return plots.variant_curves(
        {train.get("learner", "run"): {play: (seconds, [r[f"{play}_clicks"] for r in evaluated])
                                       for play in ("argmax", "greedy")}},
        f"progress boards, {len(pieces)} of {train.get('planned_pieces', '?')} pieces on {', '.join(devices)}",
        "mean clicks", marks={f"end of piece {piece['piece']}": piece["run_seconds"]
                              for piece in pieces[:-1] if "run_seconds" in piece})


PACK_PART_BYTES = 15 * 2**20  # under the 16 MiB a file some machines hand back may hold


def _packed_parts(path: str) -> list[str]:
    parts = []
    while os.path.exists(f"{path}.{len(parts) + 1}"):
        parts.append(f"{path}.{len(parts) + 1}")
    return parts


def _newest_readable_step(folder: str) -> str | None:
    """The newest step of a checkpoint folder whose files match their checksums."""
    steps = [int(name) for name in os.listdir(folder) if name.isdigit()] if os.path.isdir(folder) else []
    readable = [step for step in steps if checkpoint.damage(os.path.join(folder, str(step))) is None]
    return str(max(readable)) if readable else None


def pack(out: str, path: str, part_bytes: int = PACK_PART_BYTES) -> list[str]:
    """``out`` as gzip tar parts ``path.1``, ``path.2``, ...: everything the steps resume
    from, without the compiled programs (``jax_cache``, made for one machine) and, of the
    training run's checkpoints and selected ones, only the newest undamaged one of each
    (resuming needs the one, evaluation the others; older, damaged and unfinished ones stay
    behind). A link is followed where ``out`` is one, and refused inside it.

    Raises:
      ValueError: ``path`` inside ``out`` (the pack would hold its own earlier parts), no
        ``out``, or anything in it that is not a plain file or folder.
    """
    out = os.path.realpath(out)
    if os.path.commonpath([out, os.path.realpath(path)]) == out:  # through the same links, too
        raise ValueError(f"--pack {path} is inside --out {out}: write it elsewhere")
    if not os.path.isdir(out):
        raise ValueError(f"--out {out} does not exist: nothing to pack")
    newest = {folder: _newest_readable_step(os.path.join(out, "run", folder))
              for folder in ("checkpoints", *runs.SELECTED_DIRS.values())}

    def keep(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = member.name.split("/")[1:]  # below "."
        if parts[:1] == ["jax_cache"] or os.path.basename(member.name).startswith(files.TEMPORARY_PREFIX):
            return None
        if len(parts) >= 3 and parts[0] == "run" and parts[1] in newest and parts[2] != newest[parts[1]]:
            return None
        if not (member.isfile() or member.isdir()):  # unpack would refuse it, on the next machine
            raise ValueError(f"{os.path.join(out, *parts)} is not a plain file or folder: the pack cannot carry it")
        return member

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(out, arcname=".", filter=keep)
    data = buffer.getvalue()
    written, aside = [], []
    try:
        for index, begin in enumerate(range(0, len(data), part_bytes), start=1):
            written.append(f"{path}.{index}")
            aside.append(f"{os.path.dirname(os.path.abspath(path))}/{files.TEMPORARY_PREFIX}{os.path.basename(path)}.{index}")
            files.atomic_write_bytes(aside[-1], data[begin: begin + part_bytes])
        # All parts in place, or none: an earlier pack's parts mixed with this one's would not unpack.
        with processes.interrupt_deferred():
            for stale in _packed_parts(path)[len(written):]:  # from an earlier, larger pack
                os.remove(stale)
            for source, target in zip(aside, written):
                os.replace(source, target)
    finally:
        for source in aside:
            if os.path.exists(source):
                os.remove(source)
    return written


def unpack(path: str, out: str) -> list[str]:
    """Parts ``path.1``, ``path.2``, ... (``pack``'s) into ``out``, which must be empty or
    missing: two suites' files would mix. Returns the files written.

    Raises:
      ValueError: no parts, ``out`` not empty, an archive entry that is not a plain file
        or folder inside ``out``, or one in ``jax_cache/`` (compiled programs, which the
        suite would run: ``pack`` leaves them out).
    """
    parts = _packed_parts(path)
    if not parts:
        raise ValueError(f"no packed suite at {path}: expected {path}.1, {path}.2, ... (gpu_suite.py --pack)")
    out = os.path.realpath(out)  # a link to an empty folder: that folder is filled
    if os.path.isdir(out) and os.listdir(out):
        raise ValueError(f"--out {out} is not empty: unpack into an empty or new folder")
    data = b"".join(pathlib.Path(part).read_bytes() for part in parts)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            members = archive.getmembers()
            for member in members:
                name = os.path.normpath(member.name)
                if os.path.isabs(member.name) or name.split(os.sep)[0] == ".." or not (member.isfile() or member.isdir()):
                    raise ValueError(f"{path}: {member.name!r} is not a file or folder inside the suite's folder")
                if name.split(os.sep)[0] == "jax_cache":  # machine code the suite would load and run
                    raise ValueError(f"{path}: {member.name!r} is a compiled program, which --pack never writes: "
                                     "this pack was not made by gpu_suite.py --pack")
            # Into a new folder beside out, renamed into place once whole: a call killed
            # while extracting leaves no half-filled out that a retry would refuse.
            parent = os.path.dirname(os.path.abspath(out))
            os.makedirs(parent, exist_ok=True)
            staging = tempfile.mkdtemp(dir=parent, prefix=files.TEMPORARY_PREFIX)
            os.chmod(staging, 0o777 & ~files.current_umask())  # a folder made as usual, not mkdtemp's private one
            try:
                archive.extractall(staging, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
                if os.path.isdir(out):
                    os.rmdir(out)  # empty, checked above
                os.rename(staging, out)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
    except (tarfile.TarError, EOFError, OSError) as error:
        raise ValueError(f"{path}.1..{len(parts)} is not a packed suite (a part missing or damaged?): {error}") from None
    return [os.path.normpath(member.name) for member in members if member.isfile()]


def _notebook_paths(text: str) -> list[str]:
    paths = [flags.input_file(part) for part in text.split(",")]
    for path in paths:
        if not path.endswith(".ipynb"):
            raise argparse.ArgumentTypeError(f"{path} is not a notebook (.ipynb)")
    return [os.path.abspath(path) for path in paths]


def main(argv=None) -> dict:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=flags.output_dir,
                        help="the suite's folder (default results/gpu, with --smoke results/gpu-smoke)")
    parser.add_argument("--step", choices=(*STEPS, "notebooks", "all"), default="all")
    parser.add_argument("--smoke", action="store_true",
                        help="every step at toy sizes, on a CPU a few minutes in three calls (--out must not hold "
                             "a full run's results)")
    parser.add_argument("--pieces", type=flags.positive_int,
                        help=f"training pieces (default {DEFAULT_PIECES}; once a run has started, the number it was "
                             f"planned for: its schedule is sized to them)")
    parser.add_argument("--piece-minutes", type=flags.positive_float, default=8.5,
                        help="training minutes per piece, compilation included (default 8.5: with start-up and "
                             "the last chunk, a piece then fits a 10-minute slot; 0.02 with --smoke)")
    parser.add_argument("--env-games", type=flags.positive_ints,
                        help="comma-separated batch sizes for the accelerator's env sweep (default: 1,024 x 4**k up "
                             "to 2**26); fewer sizes shorten the env step when device time is short")
    parser.add_argument("--notebooks", type=_notebook_paths,
                        help="comma-separated notebooks for --step notebooks (default: notebooks/*.ipynb)")
    carry = parser.add_mutually_exclusive_group()
    carry.add_argument("--pack", metavar="FILE", type=flags.output_file,
                       help="write --out as FILE.1, FILE.2, ... (gzip parts of at most 15 MiB) to go on elsewhere; "
                            "runs no step")
    carry.add_argument("--unpack", metavar="FILE",  # read only: its parts may lie where nothing can be written
                       help="write FILE.1, FILE.2, ... (--pack's) into --out, empty or new; runs no step")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = flags.output_dir(os.path.join("results", "gpu-smoke" if args.smoke else "gpu"))
    if args.pack or args.unpack:
        given = [f"--{name.replace('_', '-')}" for name in ("step", "smoke", "pieces", "piece_minutes", "env_games",
                                                            "notebooks") if getattr(args, name) != parser.get_default(name)]
        if given:
            parser.error(f"--pack and --unpack run no step: leave out {', '.join(given)}")
        try:
            if args.pack:
                written = pack(args.out, args.pack)
                print(f"packed {args.out} into {', '.join(written)}")
            else:
                written = unpack(args.unpack, args.out)
                print(f"unpacked {len(written)} files into {args.out}")
        except ValueError as error:
            flags.fail(parser, str(error))
        return {"files": written}
    sizes = SMOKE if args.smoke else Sizes()
    # The env sweep resumes batch by batch: a folder keeps the batches it was started with.
    swept = _load(os.path.join(args.out, "env.json")).get("accelerator_games")
    if swept and args.env_games and tuple(args.env_games) != tuple(swept):
        flags.fail(parser, f"--env-games {','.join(map(str, args.env_games))}: the env sweep in {args.out} measures "
                           f"{','.join(map(str, swept))} games; leave --env-games out, or measure into another --out")
    if swept or args.env_games:
        sizes = dataclasses.replace(sizes, accelerator_games=tuple(swept or args.env_games))
    if args.notebooks and args.step != "notebooks":
        parser.error("--notebooks goes with --step notebooks")
    if args.notebooks:
        sizes = dataclasses.replace(sizes, notebooks=tuple(args.notebooks))
    if args.smoke and args.piece_minutes != parser.get_default("piece_minutes"):
        parser.error("--smoke sets its own piece length")
    piece_minutes = 0.02 if args.smoke else args.piece_minutes
    planned = _load(os.path.join(args.out, "train.json")).get("planned_pieces")
    if planned and args.pieces and args.pieces != planned:
        flags.fail(parser, f"--pieces {args.pieces}: the training run in {args.out} was planned for {planned} pieces "
                           f"(its schedule is sized to them); leave --pieces out")
    # A GPU runtime that is not on (a Colab default) or a jaxlib without CUDA leaves JAX on the
    # CPU: the steps would measure the wrong machine, and a training piece would join the run.
    # Playing a trained run (eval) is no measure of the machine, and its rows say where they ran.
    if not args.smoke and args.step not in ("eval", "report") and jax.default_backend() == "cpu":
        flags.fail(parser, "JAX sees no accelerator here, only the CPU: the suite measures a GPU. Install "
                           "jaxdust[cuda] on a GPU machine (docs/gpu.md), or pass --smoke for toy sizes on a CPU; "
                           "--step eval, --step report, --pack and --unpack run anywhere")
    if args.step == "report" and not os.path.exists(os.path.join(args.out, "device.json")):
        flags.fail(parser, f"--step report: {args.out} holds no measurements to report: run a step first")
    os.makedirs(args.out, exist_ok=True)
    try:
        claim_folder(args.out, args.smoke)
    except ValueError as error:
        flags.fail(parser, str(error))
    pieces = planned or args.pieces or DEFAULT_PIECES
    # Each step, and each training piece, may run in a new process: compiled programs are
    # kept on disk so that a resumed piece does not compile again.
    jax.config.update("jax_compilation_cache_dir", os.path.join(args.out, "jax_cache"))
    steps = STEPS if args.step == "all" else (args.step,)
    if steps[0] in ("env", "beam", "train", "eval", "notebooks") and not os.path.exists(os.path.join(args.out, "device.json")):
        steps = ("device", *steps)  # the report's measured-on line names the machine that measured
    results = {}
    for step in steps:
        print(f"[{step}]", flush=True)
        if step == "train":  # one piece per call: each fits a 10-minute slot
            results[step] = step_train(args.out, sizes, pieces, piece_minutes)
        elif step == "eval":
            results[step] = step_eval(args.out, sizes, pieces)
        elif step == "device":
            results[step] = step_device(args.out, sizes, again=args.step == "device")
        else:
            results[step] = globals()[f"step_{step}"](args.out, sizes)
    return results


if __name__ == "__main__":
    flags.run_command(main, "what the steps measured is kept (a training piece from its last checkpoint); the "
                            "same command goes on from it")
