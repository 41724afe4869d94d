"""Tune the beam search's hand-made heuristic by coordinate descent (numba, one core).

Scores a weight vector by the mean solution length of the numba beam search on a set of
boards, then moves one weight at a time while that improves, and checks the result on
held-out boards against a reference scored in the same run.

    python benchmarks/tune_heuristic.py                  # dust: tune on eval boards 200-399, check on 0-199
    python benchmarks/tune_heuristic.py --rules former   # Former 7x9x4: fresh random boards

The dust game's run prints the weights that ``jaxdust.search.heuristic.HEURISTIC_WEIGHTS``
holds (against the original beam search's). Former's sweeps the weight of its rule
feature, the extra column runs, on 200 fresh random boards (seed 101), the other weights
being the dust game's, then retunes those five with the feature's weight at 0, and plays
200 other fresh boards (seed 202) at ``--check-width`` with each: the dust game's
heuristic, the five retuned, and the dust game's with the feature
(``heuristic.RULE_FEATURE_WEIGHTS``).
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import numpy as np

import jaxdust
from jaxdust.core import files, flags, machine
from jaxdust.search import heuristic
from jaxdust.solver import bitboard
from jaxdust.solver.upper_bound import beam_upper_bound

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
START = np.array([1.0, 0.6, 0.5, 0.0, 0.0])
SCALE = np.array([1.0, 1.0, 1.0, 0.1, 0.1])  # per-cell features move in tenths
RULE_FEATURE_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
FORMER_SIZE = jaxdust.GameConfig(7, 9, 4, "former")


def mean_length(planes_list, geometry, width, weights):
    path = np.zeros(geometry.width * geometry.height, np.uint64)
    return float(np.mean([beam_upper_bound(p, geometry, width, weights, path) for p in planes_list]))


def descend(planes_list, geometry, width, weights, steps=(0.3, 0.15)):
    """Coordinate descent over the five weights (colours' stays 1: the scale); returns
    the weights and their mean length."""
    best = mean_length(planes_list, geometry, width, weights)
    print(f"start {np.round(weights, 3).tolist()}: mean {best:.3f} clicks", flush=True)
    for step in steps:
        for feature in (1, 2, 4, 3):
            for sign in (-1, 1):
                trial = weights.copy()
                trial[feature] += sign * step * SCALE[feature]
                value = mean_length(planes_list, geometry, width, trial)
                if value < best - 1e-9:
                    best, weights = value, trial
                    print(f"  {heuristic.FEATURES[feature]} -> {np.round(weights, 3).tolist()}: mean {value:.3f} clicks",
                          flush=True)
    return np.round(weights, 4), best


def held_out(candidates, planes_list, geometry, width) -> dict:
    results = {}
    for name, weights in candidates:
        start = time.perf_counter()
        value = mean_length(planes_list, geometry, width, weights)
        results[name] = {"weights": np.asarray(weights).tolist(), "mean": value,
                         "seconds": time.perf_counter() - start}
        print(f"held-out, width {width}, {name} {np.round(weights, 3).tolist()}: mean {value:.3f} clicks",
              flush=True)
    return results


def random_planes(seed: int, count: int, size: jaxdust.GameConfig) -> list:
    boards = np.asarray(jaxdust.random_boards(jax.random.key(seed), count, size))
    return [bitboard.to_planes(board, size.colors) for board in boards]


def tune_dust(args) -> dict:
    records = jaxdust.read_board_file(os.path.join(ROOT, "data/boards/eval_8x6x5.txt"))
    planes = [bitboard.to_planes(np.asarray(r.board), 5) for r in records]
    geometry = bitboard.make_geometry(8, 6)
    weights, best = descend(planes[200:400], geometry, args.width, START.copy())
    report = {"rules": "dust", "features": heuristic.FEATURES, "weights": weights.tolist(), "train_mean": best,
              "train_boards": "eval_8x6x5 200-399", "tune_width": args.width,
              "held_out": held_out((("reference", heuristic.REFERENCE_WEIGHTS), ("tuned", weights)),
                                   planes[0:200], geometry, args.check_width)}
    report["held_out"]["best_known_mean"] = float(np.mean([r.values[-1] for r in records[:200]]))
    print(f"weights {weights.tolist()}")
    return report


def tune_former(args) -> dict:
    geometry = bitboard.make_geometry(FORMER_SIZE.width, FORMER_SIZE.height, "former")
    train, check = random_planes(101, 200, FORMER_SIZE), random_planes(202, 200, FORMER_SIZE)
    sweep = {}
    for value in RULE_FEATURE_GRID:
        sweep[value] = mean_length(train, geometry, args.width, np.append(heuristic.HEURISTIC_WEIGHTS, value))
        print(f"extra column runs x {value}: mean {sweep[value]:.3f} clicks", flush=True)
    chosen = min(sweep, key=sweep.get)
    retuned, retuned_mean = descend(train, geometry, args.width, heuristic.HEURISTIC_WEIGHTS.copy())
    candidates = (("dust heuristic", heuristic.HEURISTIC_WEIGHTS), ("five weights retuned", retuned),
                  (f"dust heuristic + {chosen} x extra column runs", np.append(heuristic.HEURISTIC_WEIGHTS, chosen)))
    print(f"best weight of the extra column runs: {chosen} (heuristic.RULE_FEATURE_WEIGHTS: "
          f"{heuristic.RULE_FEATURE_WEIGHTS['former']})")
    return {"rules": "former", "features": [*heuristic.FEATURES, "extra_column_runs"], "size": "7x9x4",
            "train_boards": "random, seed 101, 200", "held_out_boards": "random, seed 202, 200", "tune_width": args.width,
            "sweep": {str(k): v for k, v in sweep.items()}, "chosen": chosen,
            "retuned": {"weights": retuned.tolist(), "train_mean": retuned_mean},
            "held_out": held_out(candidates, check, geometry, args.check_width)}


def main(argv=None):
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rules", choices=("dust", "former"), default="dust", help="rule set to tune (default dust)")
    parser.add_argument("--width", type=flags.positive_int, default=150, help="beam width while tuning")
    parser.add_argument("--check-width", type=flags.positive_int, default=2000, help="beam width on held-out boards")
    parser.add_argument("--out", type=flags.report_file("tune_heuristic"), default=None,
                        help="JSON report (default results/tune_heuristic.json, or tune_heuristic_former.json)")
    args = parser.parse_args(argv)
    report = {"benchmark": "tune_heuristic", "measured_on": machine.measured_on(jaxdust.__version__),
              **(tune_former(args) if args.rules == "former" else tune_dust(args))}
    suffix = "" if args.rules == "dust" else f"_{args.rules}"
    out = args.out or os.path.join("results", f"tune_heuristic{suffix}.json")
    files.atomic_write_json(out, report)
    print(f"wrote {out}")


if __name__ == "__main__":
    flags.run_command(main, "nothing was written; run the command again")
