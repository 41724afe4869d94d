"""Learners and networks side by side at equal wall time, with curves of play against time.

Each variant is a registered learner with some settings changed. It gets ``--minutes`` of
training on this machine: a short calibration measures its seconds per update, its
schedule (learning-rate decay, exploration) is sized to end at the budget, and the clock
stops while it is evaluated (it runs while the sized program compiles, so runs end up to a
minute or so off the budget; the table gives each run's minutes). At ``--points`` evenly spaced moments it plays the 100 proven
boards of ``data/boards/optimal_8x6x5.txt`` (argmax of the network's output, greedy = a
width-1 beam on the value, and a width-8 beam: mean clicks and share optimal); the last
point also plays width 64 and Gumbel MuZero with 64 simulations (learners with a policy and
a value) on the proven boards, and 1000 fresh random boards (argmax, greedy and width 8).
The model measured is the one training ends with (no selection).

Sets: ``scale`` (for a GPU, where the default levels off after a few minutes: a wider and
a deeper value torso, a wider policy head, eight times the boards in play, beams of 32), ``policy`` (the default's message-passing policy head against a shared per-cell MLP
and a plain dense head), ``networks`` (the MLP default, the original 5 x 1500 layers, a convolutional torso,
without the rule features, without the heuristic prior, with neither) and ``backups``
(Deep Q-learning with its sampled n-step target against the full-width backup of every
cell, beside value iteration). Variants already measured (``--out-dir``/<variant>.json)
with the same settings on the same kind of machine are reused, so two processes pinned to a core each can share a set:

    taskset -c 0 python benchmarks/equal_time.py --variants mlp,conv,no-prior,dqn-sampled &
    taskset -c 1 python benchmarks/equal_time.py --variants original,no-features,raw,dqn-full,dqn-full-25
    taskset -c 0 python benchmarks/equal_time.py --set networks   # the table and curves (pinned as they were)
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import math
import os
import time

import jax
import numba
import numpy as np

from jaxdust import __version__, read_board_file
from jaxdust.core import configs, files, flags, machine
from jaxdust.evaluation import plots
from jaxdust.learn import learners
from jaxdust.search.heuristic import heuristic_scorer
from jaxdust.search.mcts import heuristic_evaluator

from learners import CAP, MCTS_SIMULATIONS, PROVEN_FILE, board_sets, play_set  # benchmarks/learners.py

VARIANTS = {  # name -> (learner, settings changed from its default config, what it is)
    "mlp": ("avi", {}, "value iteration and its search's policy, MLP 256x256, rule features, heuristic prior, "
                       "message-passing policy head (the default)"),
    "policy-plain": ("avi", {"cell_rounds": 0}, "policy head: one per-cell MLP shared by all cells, no messages"),
    "policy-dense": ("avi", {"cell_head": False, "cell_rounds": 0}, "policy head: one dense layer, a logit per cell"),
    "policy-mcts": ("avi", {"policy_teacher": "mcts"},
                    "policy trained on a 16-simulation Gumbel MuZero search's improved policy (mctx)"),
    "policy-wide": ("avi", {"beam_width": 16}, "wider teacher: beams of 16 (32 boards in play instead of 64)"),
    "original": ("avi", {"hidden": (1500,) * 5}, "the original post's 5 x 1500 MLP"),
    "conv": ("avi", {"conv": (16, 16)}, "two 3x3 convolutions (16 channels, position planes) before the MLP"),
    "no-features": ("avi", {"features": False}, "one-hot cells only (no rule features)"),
    "no-prior": ("avi", {"prior": False}, "heads start at a constant, not the heuristic"),
    "raw": ("avi", {"features": False, "prior": False}, "one-hot cells, no prior"),
    "dqn-sampled": ("dqn", {}, "Deep Q-learning, the clicked cell's 5-step target (the default)"),
    "dqn-full": ("dqn", {"backup": "full"}, "Deep Q-learning, every cell's one-step target (full width)"),
    # A one-step backup moves values one click per target copy: copied as often as avi's.
    "dqn-full-25": ("dqn", {"backup": "full", "target_period": 25}, "the same, target copied every 25 updates"),
    # Where updates are cheap (a GPU) and more of them no longer pay, spend them on size.
    "wide": ("avi", {"hidden": (1024, 1024)}, "value torso 1024x1024"),
    "deep": ("avi", {"hidden": (512,) * 4}, "value torso 4 x 512"),
    "cell-wide": ("avi", {"cell_width": 256}, "policy head: 256 channels per cell"),
    "many-boards": ("avi", {"num_envs": 4096, "buffer_lines": 4096}, "4096 beam slots: 512 boards in play"),
    "wide-teacher": ("avi", {"num_envs": 4096, "buffer_lines": 4096, "beam_width": 32},
                     "wider teacher: beams of 32 over 4096 slots (128 boards in play)"),
}
SETS = {
    "networks": ["mlp", "original", "conv", "no-features", "no-prior", "raw"],
    "backups": ["dqn-sampled", "dqn-full", "dqn-full-25", "mlp"],
    "policy": ["mlp", "policy-plain", "policy-dense", "policy-mcts", "policy-wide"],
    "scale": ["mlp", "wide", "deep", "cell-wide", "many-boards", "wide-teacher"],  # for a GPU: minutes enough to level off
}


def sized(learner: str, config, units: int, chunk: int):
    """``config`` with a schedule of ``units`` updates (env steps for dqn) in chunks of ``chunk``."""
    if learner == "avi":
        return dataclasses.replace(config, total_updates=units, chunk_updates=chunk)
    if learner == "dqn":
        return dataclasses.replace(config, total_steps=units * config.num_envs, chunk_iterations=chunk)
    raise ValueError(f"equal-time runs support avi and dqn, not {learner}")


CALIBRATION_CHUNK = {"avi": 5, "dqn": 50}  # dqn's first 32 iterations only fill the replay


CALIBRATION_SECONDS = 1.0
# A chunk is one call: its dispatch and its sync (milliseconds on a GPU) count as training.
# Below SHORT_CHUNK_SECONDS a chunk is timed again at a size of about LONG_CHUNK_SECONDS,
# where they are lost: one more compile, against a plan a third short (an H100 update took
# 2.1 ms in 5-update chunks, 1.57 ms in 1000-update ones).
SHORT_CHUNK_SECONDS = 0.05
LONG_CHUNK_SECONDS = 0.5


def seconds_per_unit(learner: learners.Learner, config, seed: int) -> float:
    """Seconds per update (env step per game for dqn) in warm chunks (after a first chunk
    that compiles and warms up), timed over at least ``CALIBRATION_SECONDS``: on a GPU a
    small chunk takes milliseconds, and one alone was timed mostly by noise. Where a chunk
    is shorter than ``SHORT_CHUNK_SECONDS``, chunks long enough to hide each call's own
    cost are timed instead."""
    chunk = CALIBRATION_CHUNK[learner.name]
    seconds = _warm_chunk_seconds(learner, config, seed, chunk)
    if seconds < SHORT_CHUNK_SECONDS:
        chunk = math.ceil(chunk * LONG_CHUNK_SECONDS / max(seconds, 1e-6))
        seconds = _warm_chunk_seconds(learner, config, seed, chunk)
    return seconds / chunk


def _warm_chunk_seconds(learner: learners.Learner, config, seed: int, chunk: int) -> float:
    trainer = learner.trainer(sized(learner.name, config, 10**6, chunk), argparse.Namespace(), None)
    state = trainer.init(jax.random.key(seed))
    state, _ = trainer.step(state, 1)
    jax.block_until_ready(state)
    start, chunks = time.perf_counter(), 0
    while chunks < 1 or time.perf_counter() - start < CALIBRATION_SECONDS:
        chunks += 1
        state, _ = trainer.step(state, 1 + chunks)
        jax.block_until_ready(state)
    return (time.perf_counter() - start) / chunks


def measure(name: str, minutes: float, points: int, seed: int, sets: dict) -> dict:
    learner_name, changes, description = VARIANTS[name]
    learner = learners.get(learner_name)
    config = dataclasses.replace(learner.presets["default"], **changes)
    calibration_start = time.perf_counter()
    per_unit = seconds_per_unit(learner, config, seed)
    calibration = time.perf_counter() - calibration_start
    chunk = max(1, int(60 * minutes / per_unit / points))
    config = sized(learner_name, config, chunk * points, chunk)
    trainer = learner.trainer(config, argparse.Namespace(), None)
    policy, scorer, evaluator = learner.policy(config), learner.scorer(config), learner.evaluator(config)
    state = trainer.init(jax.random.key(seed))
    trained_seconds, curve = 0.0, []
    for index in range(1, trainer.total + 1):
        start = time.perf_counter()
        state, metrics = trainer.step(state, index)
        jax.block_until_ready(state)
        trained_seconds += time.perf_counter() - start
        params = learner.params(state)
        final = index == trainer.total
        point = {"seconds": trained_seconds, "units": index * chunk,
                 "proven": play_set(*sets["proven"], CAP, policy, scorer, params, widths=(1, 8, 64) if final else (1, 8),
                                    evaluator=evaluator if final else None, seed=seed)}
        if final:
            point["fresh"] = play_set(*sets["fresh"], CAP, policy, scorer, params, widths=(1, 8), seed=seed)
        curve.append(point)
        print(f"{name} {index}/{trainer.total} {trained_seconds / 60:.1f} min: "
              f"{json.dumps({k: v['mean'] for k, v in point['proven'].items()})}", flush=True)
    return {"variant": name, "learner": learner_name, "description": description, "changes": changes,
            "seconds_per_unit": per_unit, "calibration_seconds": calibration, "units": chunk * points,
            "unit": "updates" if learner_name == "avi" else "env steps per game", "curve": curve}


def other_machine(saved: dict, hardware: dict) -> str | None:
    """How the ``hardware`` a saved result records differs from this process's, or None: the
    same kind of device, on a CPU the same processor and cores, and the same jax, jaxlib and
    numba."""
    machine_keys = ("backend", "device_kind") + (("cpu", "cores") if hardware["backend"] == "cpu" else ()) \
        + ("jax", "jaxlib", "numba")
    for key in machine_keys:
        was = saved.get("hardware", {}).get(key)
        if was != hardware[key]:
            pinned = " (a process pinned with taskset counts the cores it may use)" if key == "cores" else ""
            return f"measured with {key} {was!r}, this process has {hardware[key]!r}{pinned}"
    return None


def difference(saved: dict, name: str, settings: dict, hardware: dict) -> str | None:
    """What keeps a saved result of variant ``name`` from answering this call, or None: it
    needs the same settings and changes, measured on the same machine (``other_machine``:
    minutes buy different training on other hardware)."""
    if (why_not := other_machine(saved, hardware)) is not None:
        return why_not
    for key, value in settings.items():
        if saved.get(key) != value:
            return f"measured with {key} {saved.get(key)!r}, not {value!r}"
    if saved.get("changes") != json.loads(json.dumps(VARIANTS[name][1])):
        return f"measured with other changes than {name}'s"
    return None


def print_table(results: dict, minutes: float, heuristic: dict) -> None:
    print(f"\nEqual wall time (a budget of {minutes:g} minutes of training each); the final model; mean clicks "
          "on fresh boards, mean clicks (share optimal) on proven ones\n")
    fresh_columns, proven_columns = ("argmax", "width_1", "width_8"), ("argmax", "width_1", "width_8", "width_64",
                                                                       f"mcts_{MCTS_SIMULATIONS}")
    names = {"argmax": "argmax", "width_1": "greedy", "width_8": "width 8", "width_64": "width 64",
             f"mcts_{MCTS_SIMULATIONS}": f"mcts {MCTS_SIMULATIONS}"}
    print("| variant | minutes | updates | " + " | ".join(f"fresh {names[c]}" for c in fresh_columns) + " | "
          + " | ".join(f"proven {names[c]}" for c in proven_columns) + " |")
    print("|---|---:|---:|" + "---:|" * (len(fresh_columns) + len(proven_columns)))

    def cells(row, columns, share):
        return [("-" if column not in row else f"{row[column]['mean']:.2f}"
                 + (f" ({100 * row[column]['optimal']:.0f}%)" if share else "")) for column in columns]

    for name, result in results.items():
        final = result["curve"][-1]
        units = result["units"] if result["unit"] == "updates" else f"{result['units']} steps"  # dqn: env steps a game
        print(f"| {name}: {result['description']} | {final['seconds'] / 60:.1f} | {units} | "
              + " | ".join(cells(final["fresh"], fresh_columns, False) + cells(final["proven"], proven_columns, True))
              + " |")
    print("| hand-made heuristic (for mcts a uniform prior over cells) | - | - | "
          + " | ".join(cells(heuristic["fresh"], fresh_columns, False) + cells(heuristic["proven"], proven_columns, True))
          + " |")


def reference_play(path: str, sets: dict, settings: dict, hardware: dict) -> dict:
    """The hand-made heuristic on the same boards, kept in ``path`` for later calls with the
    same boards on the same machine, as the variants are (its beams and MCTS take as long as
    a short variant)."""
    if os.path.exists(path):
        with open(path) as handle:
            saved = json.load(handle)
        why_not = other_machine(saved, hardware)
        if why_not is None and saved["settings"] == settings:
            return saved["play"]
        print(f"{path} does not answer this call ({why_not or 'other settings'}): playing the heuristic again")
    play = {set_name: play_set(*board_set, CAP, scorer=heuristic_scorer,
                               widths=(1, 8, 64) if set_name == "proven" else (1, 8),
                               evaluator=heuristic_evaluator if set_name == "proven" else None,
                               seed=settings["seed"])
            for set_name, board_set in sets.items()}
    files.atomic_write_json(path, {"settings": settings, "hardware": hardware,
                                   "measured_on": machine.measured_on(__version__), "play": play})
    return play


def main(argv=None):
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    chosen = parser.add_mutually_exclusive_group()  # a --set beside --variants was ignored
    chosen.add_argument("--set", choices=sorted(SETS), default=None, help="a named set of variants (default networks)")
    chosen.add_argument("--variants", type=flags.names(VARIANTS, "variants"), default=None,
                        help=f"comma-separated, from {', '.join(VARIANTS)} (default: the --set)")
    parser.add_argument("--minutes", type=flags.positive_float, default=8.0, help="training wall time per variant")
    parser.add_argument("--points", type=flags.positive_int, default=4, help="evaluations along each run")
    parser.add_argument("--boards", type=flags.positive_int, default=1000, help="fresh random boards at the end")
    parser.add_argument("--proven-boards", type=flags.positive_int, default=None,
                        help="play only the first N proven boards (default all 100)")
    parser.add_argument("--seed", type=flags.seed, default=0)
    parser.add_argument("--out-dir", type=flags.output_dir, default="results/equal_time")
    args = parser.parse_args(argv)
    set_name = args.set or "networks"  # no argparse default: one equal to it would pass beside --variants
    names = args.variants or SETS[set_name]
    proven = len(read_board_file(PROVEN_FILE))
    if args.proven_boards and args.proven_boards > proven:  # it played them all and recorded the number asked
        flags.fail(parser, f"--proven-boards {args.proven_boards}: {PROVEN_FILE} holds {proven}")

    sets = board_sets(args.boards, args.seed, args.proven_boards)
    # The versions of what compiles and runs the programs too: minutes buy other training on
    # another XLA or numba as on another machine.
    hardware = {"cpu": machine.cpu_name(), "cores": machine.cpu_cores(),
                "backend": jax.default_backend(), "device_kind": jax.devices()[0].device_kind,
                "jax": jax.__version__, "jaxlib": importlib.metadata.version("jaxlib"), "numba": numba.__version__}
    # The version too: another version's learners and beams may play otherwise (a kept result
    # would hide it, as kept leaderboard rows once hid a change of the beam's tie-break).
    settings = {"minutes": args.minutes, "seed": args.seed, "points": args.points, "boards": args.boards,
                "proven_boards": args.proven_boards, "jaxdust": __version__}
    results = {}
    for name in names:
        path = os.path.join(args.out_dir, f"{name}.json")
        if os.path.exists(path):
            with open(path) as handle:
                saved = json.load(handle)
            why_not = difference(saved, name, settings, hardware)
            if why_not is None:
                results[name] = saved
                continue
            print(f"{path} does not answer this call ({why_not}): measuring {name} again")
        try:
            result = measure(name, args.minutes, args.points, args.seed, sets)
        except configs.FieldError as error:  # the measured speed leaves too few updates for the schedule
            flags.fail(parser, f"--minutes {args.minutes:g} in {args.points} points is too short for {name} on this "
                               f"machine: {error}")
        results[name] = {**result, **settings, "hardware": hardware,
                         "measured_on": machine.measured_on(__version__)}
        files.atomic_write_json(path, results[name])

    heuristic = reference_play(os.path.join(args.out_dir, "heuristic.json"), sets,
                               {k: settings[k] for k in ("seed", "boards", "proven_boards", "jaxdust")}, hardware)
    print_table(results, args.minutes, heuristic)
    label = "+".join(args.variants) if args.variants else set_name
    for figure_name, field, ylabel in (("clicks", "mean", "mean clicks"), ("optimal", "optimal", "share optimal")):
        curves = {name: {play: (np.array([point["seconds"] for point in result["curve"]]),
                                np.array([point["proven"][key][field] for point in result["curve"]]))
                         for key, play in (("width_1", "greedy"), ("width_8", "width 8"), ("argmax", "argmax"))}
                  for name, result in results.items()}
        references = {f"heuristic, {play}": heuristic["proven"][key][field]
                      for key, play in (("width_1", "greedy"), ("width_8", "width 8"))}
        if field == "mean":
            references["proven optimum"] = float(np.mean(sets["proven"][1]))
        figure = plots.variant_curves(curves, f"{len(sets['proven'][1])} proven 8x6 boards, equal training time", ylabel,
                                      references)
        files.atomic_write_bytes(os.path.join(args.out_dir, f"{label}-{figure_name}.png"), figure)
    print(f"\nwrote {args.out_dir}/<variant>.json and {args.out_dir}/{label}-clicks.png, -optimal.png")
    return results


if __name__ == "__main__":
    flags.run_command(main, "finished variants are kept; the same command measures the rest")
