"""Tune the beam search's hand-made heuristic by coordinate descent (numba, one core).

Scores a weight vector by the mean solution length of the numba beam search on a slice of
the eval set, then moves one weight at a time while that improves. Prints the weights
that ``jaxdust.search.heuristic.HEURISTIC_WEIGHTS`` holds and the held-out result against the
original beam search's score in the same run.

    python benchmarks/tune_heuristic.py            # tune on boards 200-399, check on 0-199
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import jaxdust
from jaxdust.core import files, flags
from jaxdust.search import heuristic
from jaxdust.solver import bitboard
from jaxdust.solver.upper_bound import beam_upper_bound

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
START = np.array([1.0, 0.6, 0.5, 0.0, 0.0])
SCALE = np.array([1.0, 1.0, 1.0, 0.1, 0.1])  # per-cell features move in tenths


def mean_length(planes_list, geometry, width, weights):
    path = np.zeros(geometry.width * geometry.height, np.uint64)
    return float(np.mean([beam_upper_bound(p, geometry, width, weights, path) for p in planes_list]))


def main(argv=None):
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=flags.positive_int, default=150, help="beam width while tuning")
    parser.add_argument("--check-width", type=flags.positive_int, default=2000, help="beam width on held-out boards")
    parser.add_argument("--out", type=flags.output_file, default="results/tune_heuristic.json")
    args = parser.parse_args(argv)

    records = jaxdust.read_board_file(os.path.join(ROOT, "data/boards/eval_8x6x5.txt"))
    planes = [bitboard.to_planes(np.asarray(r.board), 5) for r in records]
    geometry = bitboard.make_geometry(8, 6)
    train, held_out = planes[200:400], planes[0:200]

    weights = START.copy()
    best = mean_length(train, geometry, args.width, weights)
    print(f"start {np.round(weights, 3).tolist()}: {best:.3f}", flush=True)
    for step in (0.3, 0.15):
        for feature in (1, 2, 4, 3):
            for sign in (-1, 1):
                trial = weights.copy()
                trial[feature] += sign * step * SCALE[feature]
                value = mean_length(train, geometry, args.width, trial)
                if value < best - 1e-9:
                    best, weights = value, trial
                    print(f"  {heuristic.FEATURES[feature]} -> {np.round(weights, 3).tolist()}: {value:.3f}", flush=True)
    weights = np.round(weights, 4)

    report = {"features": heuristic.FEATURES, "weights": weights.tolist(), "train_mean": best,
              "train_boards": "eval_8x6x5 200-399", "tune_width": args.width, "held_out": {}}
    for name, w in (("reference", heuristic.REFERENCE_WEIGHTS), ("tuned", weights)):
        start = time.perf_counter()
        value = mean_length(held_out, geometry, args.check_width, w)
        report["held_out"][name] = {"mean": value, "seconds": time.perf_counter() - start}
        print(f"held-out boards 0-199, width {args.check_width}, {name}: {value:.3f}", flush=True)
    report["held_out"]["best_known_mean"] = float(np.mean([r.values[-1] for r in records[:200]]))
    print(f"weights {weights.tolist()}")
    files.atomic_write_json(args.out, report)


if __name__ == "__main__":
    main()
