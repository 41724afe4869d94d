"""The fewest-clicks leaderboard: every agent scored on a benchmark set by ``benchmark.score``.

    python benchmarks/leaderboard.py                          # 8x6x5, the default entries
    python benchmarks/leaderboard.py --runs avi=results/learners/avi,dqn=results/learners/dqn
    python benchmarks/leaderboard.py --set 6x6x5 --entries random,largest,dfs,beam:64,solver:300

Each learner run adds four rows: the argmax of its per-cell output, and beam search on its
value at widths 1 (greedy), 8 and 64. Each row is kept in ``results/leaderboard/<set>/`` as
soon as it is measured, so an interrupted run resumes (``--fresh`` measures again). The
exact solver's row on the 1000-board set comes from the log of the run that made the set
(``--solver-log``; re-solving all 1000 boards takes an hour on two cores).
Prints the table in markdown and writes ``results/leaderboard-<set>.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform

import numpy as np

from jaxdust.core import files, flags
from jaxdust.evaluation import benchmark, registry

DEFAULT_ENTRIES = "random,largest,dfs,beam:1,beam:8,beam:64,cpu-beam:2000"
NAMES = {"random": "random legal click", "largest": "largest cluster first",
         "dfs": "original post's DFS (100,000 positions)"}


def describe(entry: str) -> str:
    name, _, value = entry.partition(":")
    if entry in NAMES:
        return NAMES[entry]
    if name == "beam":
        return f"JAX beam, tuned heuristic, width {value}"
    if name == "cpu-beam":
        return f"numba beam, tuned heuristic + lookahead, width {value}"
    if name == "solver":
        return f"exact solver, {value} s cap"
    return entry


def learner_entries(label: str, run: str) -> list[tuple[str, str]]:
    return [(f"greedy:{run}", f"{label}, argmax of its per-cell output"),
            (f"lookahead:{run}:1", f"{label}, greedy on its value (width 1)"),
            (f"lookahead:{run}:8", f"{label}, beam on its value, width 8"),
            (f"lookahead:{run}:64", f"{label}, beam on its value, width 64")]


def solver_row(log: str, board_set: benchmark.BoardSet, time_limit: float) -> benchmark.Row:
    """The solver's row from a ``python -m jaxdust.solver --out`` log of the set's boards."""
    found = {}
    for record in files.recover_json_lines(log, repair=False):
        if "length" in record:
            found[record["board"]] = record
    texts = [benchmark.board_io.board_to_text(board) for board in board_set.boards]
    missing = [i for i, text in enumerate(texts) if text not in found]
    if missing:
        raise ValueError(f"{log} lacks {len(missing)} of the set's boards (first: board {missing[0]})")
    records = [found[text] for text in texts]
    return benchmark.row(f"exact solver, {time_limit:g} s cap (proven: {np.mean([r['optimal'] for r in records]):.1%})",
                         board_set, [r["length"] for r in records], np.ones(len(records), bool),
                         sum(r["seconds"] for r in records))


def main(argv=None) -> dict:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="8x6x5", choices=benchmark.SIZES)
    parser.add_argument("--entries", default=DEFAULT_ENTRIES, help="agents as evaluate.py names them")
    parser.add_argument("--runs", default="", help="LABEL=RUN_DIR,... learner runs (four rows each)")
    parser.add_argument("--solver-log", type=flags.input_file, default=None,
                        help="JSON lines of the solver on the set's boards, for the solver's row")
    parser.add_argument("--solver-time-limit", type=flags.positive_float, default=300.0)
    parser.add_argument("--limit", type=flags.positive_int, default=None, help="the set's first N boards only")
    parser.add_argument("--jobs", type=flags.positive_int, default=os.cpu_count(), help="processes for CPU solvers")
    parser.add_argument("--seed", type=flags.seed, default=0)
    parser.add_argument("--fresh", action="store_true", help="measure every row again")
    parser.add_argument("--out", type=flags.output_file, default=None,
                        help="JSON report (default results/leaderboard-<set>.json)")
    args = parser.parse_args(argv)

    entries = [(entry, describe(entry)) for entry in args.entries.split(",") if entry]
    for item in filter(None, args.runs.split(",")):
        label, equals, run = item.partition("=")
        if not equals or not label or not run:
            parser.error(f"--runs: {item!r} is not LABEL=RUN_DIR")
        entries += learner_entries(label, run)
    try:  # every agent checked (a run directory read) before the first plays
        registry.parse_agent_list(",".join(entry for entry, _ in entries))
    except ValueError as error:
        parser.error(f"--entries/--runs: {error}")
    try:
        board_set = benchmark.load_set(args.set, limit=args.limit)
    except ValueError as error:
        parser.error(f"--set: {error}")
    cache = os.path.join("results", "leaderboard", args.set + (f"-first{args.limit}" if args.limit else ""))
    rows = []
    for entry, label in entries:
        path = os.path.join(cache, "".join(c if c.isalnum() else "-" for c in entry) + ".json")
        if os.path.exists(path) and not args.fresh:
            rows.append(benchmark.Row(**json.load(open(path))))
            continue
        scored = benchmark.score(entry, board_set, name=label, seed=args.seed, jobs=args.jobs, show=False)
        files.atomic_write_json(path, dataclasses.asdict(scored))
        print(scored.markdown(), flush=True)
        rows.append(scored)
    if args.solver_log:
        rows.append(solver_row(args.solver_log, board_set, args.solver_time_limit))
    rows.sort(key=lambda r: (-r.mean_clicks, r.seconds_per_board))
    hardware = f"{platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} cores"
    print(f"\nFewest clicks on set {board_set.name} ({len(board_set.boards)} boards, "
          f"{board_set.proven.mean():.1%} with a proven optimum, mean {board_set.best.mean():.3f}; {hardware})")
    print(benchmark.Row.HEADER)
    for scored in rows:
        print(scored.markdown())
    report = {"benchmark": "leaderboard", "set": board_set.name, "boards": len(board_set.boards),
              "optimum_mean": float(board_set.best.mean()), "hardware": hardware,
              "rows": [dataclasses.asdict(scored) for scored in rows]}
    files.atomic_write_json(args.out or os.path.join("results", f"leaderboard-{args.set}.json"), report)
    return report


if __name__ == "__main__":
    main()
