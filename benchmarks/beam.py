"""Mean clicks of the JAX beam search on the fixed eval set, against the original score.

Runs ``jaxdust.beam.beam_search`` with the tuned hand-made scorer and with the original
beam search's score (colours + 0.6 * extra clusters) on the same boards in the same run,
and the numba beam (the exact solver's upper bound) with the same weights for a CPU
speed reference.

    python benchmarks/beam.py                          # 200 boards, width 2000
    python benchmarks/beam.py --boards 50 --width 500  # quicker
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import jaxdust  # noqa: E402
from jaxdust import beam, bitboard, exact, files  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def run_jax(boards, width, scorer):
    beam.beam_search(boards[0], width=width, scorer=scorer)  # compile
    lengths, start = [], time.perf_counter()
    for board in boards:
        result = beam.beam_search(board, width=width, scorer=scorer)
        length = int(result.length)
        actions = np.asarray(result.actions)[:length]
        height = board.shape[1]
        final, count = jaxdust.replay(board, [(a // height, a % height) for a in actions])
        assert bool(jaxdust.is_done(final)) and count == length
        lengths.append(length)
    return np.array(lengths), (time.perf_counter() - start) / len(boards)


def run_numba(boards, width, weights):
    width_cells, height = boards[0].shape
    geometry = bitboard.make_geometry(width_cells, height)
    path = np.zeros(width_cells * height, np.uint64)
    lengths, start = [], time.perf_counter()
    for board in boards:
        lengths.append(exact.beam_search(bitboard.to_planes(np.asarray(board), 5), geometry, width, weights, path))
    return np.array(lengths), (time.perf_counter() - start) / len(boards)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=int, default=200)
    parser.add_argument("--width", type=int, default=2000)
    parser.add_argument("--out", default="results/beam.json")
    args = parser.parse_args(argv)

    records = jaxdust.read_board_file(os.path.join(ROOT, "data/boards/eval_8x6x5.txt"))[: args.boards]
    boards = [r.board for r in records]
    best_known = np.array([r.values[-1] for r in records])
    rows = {}
    for name, runner in [
        ("jax, tuned heuristic", lambda: run_jax(boards, args.width, beam.heuristic_scorer)),
        ("jax, original score", lambda: run_jax(boards, args.width, beam.reference_scorer)),
        ("numba, tuned heuristic", lambda: run_numba(boards, args.width, exact.HEURISTIC_WEIGHTS)),
    ]:
        lengths, seconds = runner()
        rows[name] = {"mean": float(lengths.mean()), "share_equal_best_known": float(np.mean(lengths <= best_known)),
                      "seconds_per_board": seconds, "lengths": lengths.tolist()}
        print(f"  {name}: mean {lengths.mean():.3f}", flush=True)

    device = jax.devices()[0]
    report = {"benchmark": "beam", "boards": len(boards), "width": args.width,
              "best_known_mean": float(best_known.mean()), "backend": jax.default_backend(),
              "device_kind": device.device_kind, "cpu": platform.processor() or platform.machine(),
              "results": rows}
    print(f"\nBeam search, width {args.width}, first {len(boards)} boards of data/boards/eval_8x6x5.txt "
          f"(best known mean {best_known.mean():.3f}); JAX on {report['backend']} ({device.device_kind})\n")
    print("| search | mean clicks | share at best known | s per board |")
    print("|---|---:|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['mean']:.3f} | {row['share_equal_best_known']:.1%} | {row['seconds_per_board']:.2f} |")
    files.atomic_write_json(args.out, report)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
