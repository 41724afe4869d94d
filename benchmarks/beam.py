"""Mean clicks of the beam searches on the fixed eval set, against the original score.

On the same boards in the same run: the numba beam (the exact solver's upper bound) with
the original beam search's score (colours + 0.6 * extra clusters) as the reference, with
the tuned hand-made heuristic, and with the tuned heuristic plus a one-click lookahead on
a shortlist of 4 x width children; then ``jaxdust.search.beam.beam_search`` with the same
scorers, ``beam.default_batch`` boards per compiled search (``--batch``: 2 at width 2000
on a CPU), with the time per board and the
boards where the lengths equal the numba beam's. Every solution is replayed under the game core. The JSON is rewritten after
each row, so an interrupted run keeps what it measured.

    python benchmarks/beam.py                          # 200 boards, width 2000
    python benchmarks/beam.py --boards 50 --width 500  # quicker
    python benchmarks/beam.py --only numba             # rows whose name contains "numba"
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import numpy as np

import jaxdust
from jaxdust.core import files, flags, machine
from jaxdust.core.progress import progress_bar
from jaxdust.search import beam, heuristic
from jaxdust.solver import bitboard
from jaxdust.solver.upper_bound import beam_upper_bound

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _check(board, clicks, length):
    final, count = jaxdust.replay(board, clicks)
    if not (bool(jaxdust.is_done(final)) and count == length):
        raise AssertionError("a beam solution does not clear its board")


def run_jax(boards, width, scorer, rescorer=None, batch=None):
    """``batch`` boards per compiled search (``beam.beam_solutions``)."""
    stacked = np.stack(boards)
    batch = batch or beam.default_batch(width)
    beam.beam_solutions(stacked[:batch], width, scorer, rescorer=rescorer, batch=batch)  # compile
    start = time.perf_counter()
    with progress_bar(total=len(boards), unit="board", desc=f"JAX beam {width}", leave=False) as bar:
        lengths, actions = beam.beam_solutions(stacked, width, scorer, rescorer=rescorer, batch=batch,
                                               progress=bar.update)
    seconds = (time.perf_counter() - start) / len(boards)
    height = boards[0].shape[1]
    for board, length, found in zip(boards, lengths, actions):  # replay outside the timed loop
        _check(board, [divmod(int(a), height) for a in found[:length]], length)
    return lengths, seconds


def run_numba(boards, width, weights, shortlist=0):
    width_cells, height = boards[0].shape
    geometry = bitboard.make_geometry(width_cells, height)
    path = np.zeros(width_cells * height, np.uint64)
    planes = [bitboard.to_planes(np.asarray(board), 5) for board in boards]
    beam_upper_bound(planes[0], geometry, 2, weights, path, shortlist)  # compile
    lengths, paths, start = [], [], time.perf_counter()
    for plane in progress_bar(planes, unit="board", desc=f"numba beam {width}", leave=False):
        lengths.append(beam_upper_bound(plane, geometry, width, weights, path, shortlist))
        paths.append(path.copy())
    seconds = (time.perf_counter() - start) / len(boards)
    for board, length, found in zip(boards, lengths, paths):  # replay outside the timed loop
        _check(board, bitboard.path_clicks(found, length, height), length)
    return np.array(lengths), seconds


def main(argv=None):
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=flags.positive_int, default=200)
    parser.add_argument("--width", type=flags.positive_int, default=2000)
    parser.add_argument("--only", default="", help="run only the rows whose name contains this")
    parser.add_argument("--batch", type=flags.positive_int, default=None,
                        help="boards per JAX search (default: beam.default_batch)")
    parser.add_argument("--out", type=flags.report_file("beam"), default="results/beam.json")
    args = parser.parse_args(argv)

    records = jaxdust.read_board_file(os.path.join(ROOT, "data/boards/eval_8x6x5.txt"))
    if args.boards > len(records):
        flags.fail(parser, f"--boards {args.boards}: the evaluation set holds {len(records)}")
    records = records[: args.boards]
    boards = [r.board for r in records]
    best_known = np.array([r.values[-1] for r in records])
    device = jax.devices()[0]
    rows = {}
    report = {"benchmark": "beam", "measured_on": machine.measured_on(jaxdust.__version__), "boards": len(boards),
              "width": args.width,
              "best_known_mean": float(best_known.mean()), "backend": jax.default_backend(),
              "device_kind": device.device_kind, "cpu": machine.cpu_name(),
              # as beam_solutions groups them: never more than the boards
              "jax_boards_per_search": min(len(boards), args.batch or beam.default_batch(args.width)),
              "results": rows}
    weights = heuristic.HEURISTIC_WEIGHTS
    searches = [
        ("numba, original score", lambda: run_numba(boards, args.width, heuristic.REFERENCE_WEIGHTS)),
        ("numba, tuned heuristic", lambda: run_numba(boards, args.width, weights)),
        ("numba, tuned + lookahead", lambda: run_numba(boards, args.width, weights, beam.LOOKAHEAD_SHORTLIST)),
        ("jax, tuned + lookahead", lambda: run_jax(boards, args.width, heuristic.heuristic_scorer,
                                                   beam.lookahead_heuristic, args.batch)),
        ("jax, tuned heuristic", lambda: run_jax(boards, args.width, heuristic.heuristic_scorer, None, args.batch)),
    ]
    if not any(args.only in name for name, _ in searches):
        flags.fail(parser, f"--only {args.only!r} matches no row; rows: {', '.join(name for name, _ in searches)}")
    for name, runner in searches:
        if args.only not in name:
            continue
        lengths, seconds = runner()
        rows[name] = {"mean": float(lengths.mean()),
                      "share_at_or_below_best_known": float(np.mean(lengths <= best_known)),
                      "seconds_per_board": seconds, "lengths": lengths.tolist()}
        twin = rows.get(name.replace("jax", "numba")) if name.startswith("jax") else None
        if twin is not None:  # the numba beam with the same scorer, same run
            rows[name]["time_vs_numba"] = seconds / twin["seconds_per_board"]
            rows[name]["boards_equal_to_numba"] = int(np.sum(lengths == np.array(twin["lengths"])))
        elif name.startswith("jax"):
            print(f"--only {args.only!r} leaves out {name.replace('jax', 'numba')!r}: {name!r} has no time or "
                  "lengths against numba's", file=sys.stderr)
        print(f"  {name}: mean {lengths.mean():.3f}, {seconds:.3g} s per board", flush=True)
        files.atomic_write_json(args.out, report)
    print(f"\nBeam search, width {args.width}, first {len(boards)} boards of data/boards/eval_8x6x5.txt "
          f"(best known mean {best_known.mean():.3f}); JAX on {report['backend']} ({device.device_kind}), "
          f"{report['jax_boards_per_search']} boards per search\n")
    print("| search | mean clicks | share at or below best known | s per board | time / numba's | lengths equal to numba's |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, row in rows.items():
        ratio = f"{row['time_vs_numba']:.1f}x" if "time_vs_numba" in row else ""
        equal = f"{row['boards_equal_to_numba']} / {len(boards)}" if "boards_equal_to_numba" in row else ""
        print(f"| {name} | {row['mean']:.3f} | {row['share_at_or_below_best_known']:.1%} | {row['seconds_per_board']:.3g} "
              f"| {ratio} | {equal} |")
    files.atomic_write_json(args.out, report)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    flags.run_command(main, "the rows measured so far are in its --out; the same command measures them all again")
