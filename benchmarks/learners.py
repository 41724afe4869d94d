"""Quality of the learners: default CPU runs, learning curves, and greedy play on fresh boards.

Trains each learner with ``train.py``'s defaults (the imitation run includes making its
data, which counts as training time), draws mean greedy clicks against wall time, then
plays 1000 fresh random 8x6 boards with every trained network (greedy, and as the scorer
of a width-1 and width-8 beam) beside the references in the same run: largest cluster
first and the hand-made heuristic at the same widths.

    python benchmarks/learners.py                      # both learners, about 20 minutes on 2 cores
    python benchmarks/learners.py --learners dqn --runs-dir results/learners
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import jax
import numpy as np

from jaxdust.core import files, game
from jaxdust.core.play import play_boards
from jaxdust.evaluation import baselines, plots
from jaxdust.learn import cli, runs
from jaxdust.search.beam import beam_lengths
from jaxdust.search.heuristic import heuristic_scorer


def fresh_boards(count: int, seed: int) -> jax.Array:
    keys = jax.random.split(jax.random.key(seed), count)
    return jax.vmap(lambda k: game.random_board(k, game.GameConfig()))(keys)


def mean_clicks(lengths, cap):
    return float(np.mean(np.where(np.asarray(lengths) < 0, cap, lengths)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--learners", default="avi,dqn,imitation")
    parser.add_argument("--runs-dir", default="results/learners")
    parser.add_argument("--boards", type=int, default=1000, help="fresh random boards for the final evaluation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dqn-flags", default="", help="extra train.py flags for dqn, e.g. '--total-steps 100000'")
    parser.add_argument("--imitation-flags", default="", help="extra train.py flags for imitation")
    parser.add_argument("--out", default="results/learners.json")
    args = parser.parse_args(argv)

    boards = fresh_boards(args.boards, seed=10_000 + args.seed)
    cap = 4 * 48
    report = {"benchmark": "learners", "cpu": platform.processor() or platform.machine(),
              "cpu_count": os.cpu_count(), "backend": jax.default_backend(),
              "device_kind": jax.devices()[0].device_kind, "boards": args.boards, "learners": {}}

    curves = {}
    for learner in args.learners.split(","):
        run_dir = os.path.join(args.runs_dir, learner)
        start = time.perf_counter()
        if not os.path.exists(os.path.join(run_dir, "summary.json")):
            resume = ["--resume"] if os.path.exists(os.path.join(run_dir, "config.json")) else []
            extra = (args.dqn_flags if learner == "dqn" else args.imitation_flags).split()
            cli.main([learner, "--run-dir", run_dir, "--seed", str(args.seed), *resume, *extra])
        wall = time.perf_counter() - start
        lines = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
        evaluated = [line for line in lines if "greedy_clicks" in line]
        data_seconds = 0.0
        summary = json.load(open(os.path.join(run_dir, "summary.json")))
        if learner == "imitation":  # the data phase ran before the first epoch's clock started
            data_seconds = max(0.0, wall - summary["seconds"])
        seconds = np.array([line["seconds"] + data_seconds for line in evaluated])
        curves[f"{learner}, greedy"] = (seconds, np.array([line["greedy_clicks"] for line in evaluated]))
        curves[f"{learner}, argmax"] = (seconds, np.array([line["argmax_clicks"] for line in evaluated]))

        trained = runs.load_run(run_dir)
        played = play_boards(boards, trained.policy, jax.random.key(1), cap, trained.params)
        row = {"training_seconds": summary["seconds"] + data_seconds, "data_seconds": data_seconds,
               "argmax": mean_clicks(np.where(np.asarray(played.cleared), np.asarray(played.clicks), -1), cap)}
        for width in (1, 8):
            row[f"lookahead_{width}"] = mean_clicks(
                beam_lengths(boards, width, trained.scorer, trained.params, cap), cap)
        report["learners"][learner] = row
        print(f"{learner}: {row}", flush=True)

    largest = play_boards(boards, baselines.largest_cluster, jax.random.key(0), cap)
    report["references"] = {"largest cluster first": float(np.mean(largest.clicks))}
    for width in (1, 8):
        report["references"][f"hand-made heuristic, width {width}"] = mean_clicks(
            beam_lengths(boards, width, heuristic_scorer, None, cap), cap)
    report["curves"] = {name: {"seconds": c[0].tolist(), "clicks": c[1].tolist()} for name, c in curves.items()}

    references = {"largest first (fresh boards)": report["references"]["largest cluster first"],
                  "heuristic, width 1 (fresh boards)": report["references"]["hand-made heuristic, width 1"]}
    figure = plots.learning_curves(
        curves, references, f"greedy and argmax play on train.py's 256 evaluation boards ({report['cpu_count']}-core CPU)")
    files.atomic_write_bytes(os.path.splitext(args.out)[0] + ".png", figure)
    files.atomic_write_json(args.out, report)

    print(f"\nLearners, default CPU runs; {args.boards} fresh random 8x6 boards ({report['cpu_count']} cores, "
          f"{report['backend']})\n")
    print("| agent | training minutes | argmax | greedy (width 1) | width-8 beam |")
    print("|---|---:|---:|---:|---:|")
    for name, row in report["learners"].items():
        print(f"| {name} | {row['training_seconds'] / 60:.1f} | {row['argmax']:.2f} | {row['lookahead_1']:.2f} "
              f"| {row['lookahead_8']:.2f} |")
    refs = report["references"]
    print(f"| largest cluster first | - | {refs['largest cluster first']:.2f} | - | - |")
    print(f"| hand-made heuristic | - | - | {refs['hand-made heuristic, width 1']:.2f} "
          f"| {refs['hand-made heuristic, width 8']:.2f} |")
    print(f"\nwrote {args.out} and {os.path.splitext(args.out)[0]}.png")
    return report


if __name__ == "__main__":
    main()
