"""Proof times of the exact solver, against plain IDA* in the same run.

For each board set: the distribution of seconds and nodes to prove a shortest solution, with
a fresh transposition table per board (no board profits from another) on one core per
board. The reference is the same search with the half-game bound, the single-colour
filter, the commuting-moves rule and the beam upper bound switched off (plain iterative deepening with
the colours-left bound, the one-cluster check and a mirror-aware table, as in the
original C solver), run on the first boards of each set with its own time cap.

    python benchmarks/solver.py                       # 6x6, 8x4 (60 each) and 100 8x6 boards
    python benchmarks/solver.py --sets 6x6,8x4        # the quick part
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time

import numpy as np

import jaxdust
from jaxdust import solve
from jaxdust.core import files, flags, machine
from jaxdust.core.progress import progress_bar

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SETS = {
    "6x6": ("data/boards/optimal_6x6x5.txt", "proven optimal lengths"),
    "8x4": ("data/boards/optimal_8x4x5.txt", "proven optimal lengths"),
    "8x6": ("data/boards/eval_8x6x5.txt", "first boards of the fixed eval set"),
}
BOARDS_8X6 = 100  # of the 8x6 set, unless --boards-8x6 says


def _solve_one(job):
    """Solve one board in a worker; returns a record (runs in a child process)."""
    text, width, height, known, time_limit, reference = job
    board = jaxdust.parse_board(text, width, height)
    options = {"beam_width": 0, "prune": False} if reference else {}
    try:
        result = solve(board, time_limit, **options)  # a fresh table, sized as solve's default
    except TimeoutError:
        return {"board": text, "known": known, "proven": False, "timed_out": True,
                "seconds": time_limit, "nodes": None, "length": None, "lower_bound": None}
    final, count = jaxdust.replay(board, result.clicks)
    if not (bool(jaxdust.is_done(final)) and count == result.length):
        raise AssertionError(f"solution does not clear {text}")
    return {"board": text, "known": known, "proven": result.optimal, "timed_out": not result.optimal,
            "seconds": result.seconds, "nodes": result.nodes, "length": result.length,
            "lower_bound": result.lower_bound}


def _warm_up(_):
    solve(jaxdust.parse_board("1221" * 9, 6, 6))  # loads numba's compiled code
    return True


def _results(jobs, processes):
    """Each job's record as its board ends, in the jobs' order."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        pool.map(_warm_up, range(processes))
        yield from pool.imap(_solve_one, jobs, chunksize=1)


def _run(jobs, processes, what, records, kept):
    """Appends the jobs' records to ``records``, calling ``kept`` after each board (so a killed
    run keeps the boards it measured)."""
    for record in progress_bar(_results(jobs, processes), total=len(jobs), desc=what, leave=False):
        records.append(record)
        kept()


def _percentiles(values):
    """p10 / p50 / p90 / max, or None for no values (e.g. --reference-boards 0)."""
    values = np.asarray(values, float)
    if not values.size:
        return None
    return {f"p{q}": float(np.percentile(values, q)) for q in (10, 50, 90)} | {"max": float(values.max())}


def main(argv=None) -> dict:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", type=flags.names(SETS, "sets"), default="6x6,8x4,8x6")
    parser.add_argument("--boards-8x6", type=flags.positive_int, default=None,
                        help=f"boards of the 8x6 set (default {BOARDS_8X6})")
    parser.add_argument("--time-limit", type=flags.positive_float, default=300.0, help="seconds per board")
    parser.add_argument("--reference-boards", type=flags.non_negative_int, default=20,
                        help="boards per set run by the reference (0: none, no speedup column)")
    parser.add_argument("--reference-limit", type=flags.positive_float, default=60.0, help="seconds per board for the reference")
    parser.add_argument("--jobs", type=flags.positive_int, default=1, help="boards solved at once, one core each")
    parser.add_argument("--out", type=flags.report_file("solver"), default="results/solver.json")
    args = parser.parse_args(argv)
    if args.boards_8x6 is None:
        args.boards_8x6 = BOARDS_8X6
    elif "8x6" not in args.sets:
        flags.fail(parser, f"--boards-8x6 sizes the 8x6 set, which --sets {','.join(args.sets)} leaves out")
    held = len(jaxdust.read_board_file(os.path.join(ROOT, SETS["8x6"][0])))
    if args.boards_8x6 > held:
        flags.fail(parser, f"--boards-8x6 {args.boards_8x6}: the evaluation set holds {held}")

    report = {"benchmark": "solver", "measured_on": machine.measured_on(jaxdust.__version__), "cpu": machine.cpu_name(),
              "cpu_count": machine.cpu_cores(), "jobs": args.jobs, "time_limit": args.time_limit,
              "reference_limit": args.reference_limit, "sets": {}}

    def kept():
        files.atomic_write_json(args.out, report)

    for name in args.sets:
        path, description = SETS[name]
        records = jaxdust.read_board_file(os.path.join(ROOT, path))
        if name == "8x6":
            records = records[: args.boards_8x6]
        width, height = records[0].board.shape
        texts = [(jaxdust.board_to_text(r.board), width, height, r.values[-1]) for r in records]
        results, reference = [], []
        report["sets"][name] = {"boards": len(texts), "description": description, "finished": False,
                                "per_board": results, "reference_per_board": reference}
        start = time.perf_counter()
        _run([(*t, args.time_limit, False) for t in texts], args.jobs, name, results, kept)
        wall = time.perf_counter() - start
        if args.reference_boards:
            _run([(*t, args.reference_limit, True) for t in texts[: args.reference_boards]], args.jobs,
                 f"{name} plain IDA*", reference, kept)

        if "optimal" in description:
            wrong = [r["board"] for r in results if r["proven"] and r["length"] != r["known"]]
            if wrong:
                raise AssertionError(f"{name}: proven lengths differ from the file on {wrong}")
        proven = [r for r in results if r["proven"]]
        speedups = [ref["seconds"] / ours["seconds"]
                    for ref, ours in zip(reference, results) if ref["proven"] and ours["proven"]]
        summary = {
            "boards": len(results), "description": description, "finished": True, "proven": len(proven),
            "seconds": _percentiles([r["seconds"] for r in results]),
            "nodes": _percentiles([r["nodes"] for r in proven]) if proven else None,
            "mean_length": float(np.mean([r["length"] for r in results])),
            "lengths": {str(k): int(v) for k, v in zip(*np.unique([r["length"] for r in results], return_counts=True))},
            "wall_seconds": wall,
            "reference": {
                "boards": len(reference), "proven": sum(r["proven"] for r in reference),
                "seconds": _percentiles([r["seconds"] for r in reference]),
                "median_speedup_where_both_proved": float(np.median(speedups)) if speedups else None,
            },
            "per_board": results, "reference_per_board": reference,
        }
        report["sets"][name] = summary
        print(f"{name}: {len(proven)}/{len(results)} proven, median {summary['seconds']['p50']:.3f}s, "
              f"p90 {summary['seconds']['p90']:.3f}s, max {summary['seconds']['max']:.3f}s", flush=True)
        files.atomic_write_json(args.out, report)

    print(f"\nExact solver, one core per board ({report['cpu']}, {report['cpu_count']} cores, "
          f"{args.jobs} board(s) at a time), time limit {args.time_limit:g} s; seconds over every board "
          "(an unproven one at the limit), positions over the proven ones\n")
    print("| set | boards | proven | median s | p90 s | max s | median positions (proven) "
          "| mean length (unproven: best found) | plain IDA* median s (its proven) | speedup where both proved |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, s in report["sets"].items():
        ref = s["reference"]
        nodes = f"{s['nodes']['p50']:,.0f}" if s["nodes"] else "-"
        speed = f"{ref['median_speedup_where_both_proved']:.1f}x" if ref["median_speedup_where_both_proved"] else "-"
        reference = f"{ref['seconds']['p50']:.2f} ({ref['proven']}/{ref['boards']})" if ref["seconds"] else "-"
        print(f"| {name} | {s['boards']} | {s['proven']} | {s['seconds']['p50']:.3f} | {s['seconds']['p90']:.3f} "
              f"| {s['seconds']['max']:.3f} | {nodes} | {s['mean_length']:.2f} | {reference} | {speed} |")
    print(f"\nwrote {args.out}")
    return report


if __name__ == "__main__":
    flags.run_command(main, "the rows measured so far are in its --out; the same command measures them all again")
