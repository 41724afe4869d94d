"""SameGame for points on random boards: the literature's baselines and searches.

    python benchmarks/samegame.py                          # 100 random 15x15x5 boards
    python benchmarks/samegame.py --boards 1000 --beam-widths 1,16 --nmcs2-boards 0
    python benchmarks/samegame.py --env Clickomania-10x10x4-v0   # searches for fewest cells left

Plays every board with each agent under the ``samegame`` rules (or those of ``--env``, a
registered id of the points or cells-left rules: the moves are the same, the searches
optimise that id's objective):
- random legal clicks (groups of 2 or more) and largest group first with UVa 758's
  tie-break (leftmost, then bottommost), all boards in one compiled JAX loop
  (``jaxdust.core.play.play_boards``);
- the batched JAX beam for points (``jaxdust.points_beam``, all boards in one compiled
  search) at each of ``--jax-widths``;
- the numba beam for points at each of ``--beam-widths`` and nested Monte Carlo search
  level 1 (``jaxdust.solver.points``), one board at a time on one core;
- NMCS level 2 on the first ``--nmcs2-boards`` boards only (about a minute a board), on
  ``--jobs`` boards at a time, with the other agents' mean on those same boards beside it.
  Each board's result is appended to ``<--out without .json>-nmcs2.jsonl`` as it finishes,
  and a rerun with the same seed plays only the boards not there yet:

      python benchmarks/samegame.py --nmcs2-boards 100 --jobs 2      # ~50 minutes on 2 cores

Prints mean points (``(n - 2)^2`` a group, +1000 for a cleared board), share cleared, cells
left and seconds per board (one core's, for NMCS level 2 too); writes JSON after each agent
(a rerun repeats every agent but NMCS level 2's finished boards).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import time

import jax
import numpy as np

import jaxdust
from jaxdust import __version__, points_beam
from jaxdust.core import configs, files, flags, game, machine, processes
from jaxdust.core.play import play_boards
from jaxdust.core.progress import note, progress_bar
from jaxdust.evaluation import baselines, stats
from jaxdust.search.points import MAX_CELLS as points_beam_cells
from jaxdust.solver import points as points_search
from jaxdust.solver.api import compile_notice

def main(argv=None) -> dict:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=flags.positive_int, default=100)
    configs.add_board_flags(parser, "random SameGame boards of this size (default 15x15x5; clickomania:WxHxC "
                                    "for Clickomania's)",
                            "a registered id of the points or cells-left rules, e.g. Clickomania-10x10x4-v0",
                            size_rules="samegame")
    parser.add_argument("--seed", type=flags.seed, default=0)
    parser.add_argument("--beam-widths", type=flags.positive_ints, default=[1, 16, 256])
    parser.add_argument("--jax-widths", type=flags.positive_ints, default=[1, 16])
    parser.add_argument("--nmcs2-boards", type=flags.non_negative_int, default=None,
                        help="boards NMCS level 2 plays (the first N of --boards; default 2, or --boards where "
                             "fewer; about a minute each on one core)")
    parser.add_argument("--jobs", type=flags.positive_int, default=1, help="processes for NMCS level 2")
    parser.add_argument("--out", type=flags.report_file("samegame"), default="results/samegame.json")
    args = parser.parse_args(argv)
    if args.nmcs2_boards is None:
        args.nmcs2_boards = min(2, args.boards)
    elif args.nmcs2_boards > args.boards:
        flags.fail(parser, f"--nmcs2-boards {args.nmcs2_boards}: more than the {args.boards} boards of --boards")
    size = args.env or args.size or game.GameConfig(15, 15, 5, "samegame")
    if game.rules_of(size.rules).objective == "clicks":
        parser.error(f"--{'env' if args.env else 'size'}: this benchmark plays the points and cells-left rules "
                     f"(samegame, clickomania), not {size.rules!r}; fewest clicks: evaluate.py")
    if size.num_cells > points_beam_cells:  # before minutes of the other agents' play
        parser.error(f"--{'env' if args.env else 'size'}: the JAX beam (--jax-widths) takes boards of at most "
                     f"{points_beam_cells:,} cells, and {size.size_spec} has {size.num_cells:,}")
    rules = size.rules
    boards = game.random_boards(jax.random.key(args.seed), args.boards, size)
    cap = size.num_cells  # every legal click removes 2 or more cells
    report = {"benchmark": "samegame", "measured_on": machine.measured_on(jaxdust.__version__), "rules": rules,
              "objective": game.rules_of(rules).objective,
              "boards": args.boards, "size": [size.width, size.height, size.colors], "seed": args.seed,
              "backend": jax.default_backend(), "cpu": machine.cpu_name(), "cpu_count": machine.cpu_cores(), "agents": {}}
    # agent -> each board's measure (points, or cells left under clickomania), for the NMCS-2 subset's row
    per_board = {}
    measure = "cells_left" if report["objective"] == "cells_left" else "points"
    agents = {"random legal": baselines.RandomLegal(rules), "largest group (UVa 758)": baselines.largest_group}
    play_key = jax.random.key(1 + args.seed)  # the random agent's clicks follow --seed (seed 0's as they were)
    for name, policy in agents.items():
        # Compiled for this very batch first: another batch size is another program.
        play_boards(boards, policy, play_key, cap, rules=rules).points.block_until_ready()
        start = time.perf_counter()
        played = jax.block_until_ready(play_boards(boards, policy, play_key, cap, rules=rules))
        seconds = time.perf_counter() - start
        per_board[name] = np.asarray(getattr(played, measure))
        record(report, args.out, name, np.asarray(played.points), np.asarray(played.cells_left), seconds)

    for width in args.jax_widths:
        points_beam(boards, width=width, rules=rules).value.block_until_ready()  # compile
        start = time.perf_counter()
        found = jax.block_until_ready(points_beam(boards, width=width, rules=rules))
        seconds = time.perf_counter() - start
        lines = [[divmod(int(a), size.height) for a in actions[:length]]
                 for actions, length in zip(np.asarray(found.actions), np.asarray(found.length))]
        # Both rule sets make the same moves, so SameGame's points score a clickomania line too.
        name = f"beam {width} (JAX, batched)"
        points = np.array([jaxdust.score(b, line, "samegame") for b, line in zip(boards, lines)])
        cells_left = np.array([np.count_nonzero(np.asarray(jaxdust.replay(b, line, rules)[0]))
                               for b, line in zip(boards, lines)])
        per_board[name] = cells_left if measure == "cells_left" else points
        record(report, args.out, name, points, cells_left, seconds)

    host_boards = np.asarray(boards)
    searches = [(f"beam {width} (numba)", lambda b, w=width: points_search.beam(b, w, rules))
                for width in args.beam_widths]
    searches.append(("NMCS level 1 (numba)", lambda b: points_search.nmcs(b, 1, rules, seed=args.seed)))
    points_search.beam(host_boards[0][:4, :4], 1, rules)  # compile
    points_search.nmcs(host_boards[0][:4, :4], 2 if args.nmcs2_boards else 1, rules)  # level 2 compiles level 1 too
    for name, search in searches:
        lines = [search(board) for board in progress_bar(host_boards, desc=name, unit="board")]
        per_board[name] = np.array([getattr(line, measure) for line in lines])
        record(report, args.out, name, np.array([line.points for line in lines]),
               np.array([line.cells_left for line in lines]), sum(line.seconds for line in lines))
    if args.nmcs2_boards:
        subset = host_boards[: args.nmcs2_boards]
        lines = nmcs2_lines(subset, args.seed, args.jobs, os.path.splitext(args.out)[0] + "-nmcs2.jsonl", rules)
        name = f"NMCS level 2 (numba), first {len(subset)} boards"
        record(report, args.out, name, np.array([line["points"] for line in lines]),
               np.array([line["cells_left"] for line in lines]), sum(line["seconds"] for line in lines))
        report["agents"][name]["others_measure"] = measure
        report["agents"][name]["others_on_these_boards"] = {
            other: float(values[: len(subset)].mean()) for other, values in per_board.items()}
        files.atomic_write_json(args.out, report)

    print(f"\n{rules}, {args.boards} random {size.size_text} boards (seed {args.seed}), "
          f"{report['backend']}, {report['cpu_count']} cores\n")
    print("\n".join(markdown_table(report["agents"], measure)))
    print(f"\nwrote {args.out}")
    return report


def markdown_table(agents: dict, measure: str) -> list[str]:
    """The report's ``agents`` rows as a markdown table, led by the rules' own ``measure``:
    points (with their spread) for SameGame, cells left for Clickomania."""
    by_points = measure == "points"
    lead = ([("mean points", "{mean_points:.1f}"), ("std", "{std_points:.1f}")] if by_points
            else [("mean cells left", "{mean_cells_left:.1f}")])
    other = ("cells left", "{mean_cells_left:.1f}") if by_points else ("points", "{mean_points:.1f}")
    columns = [("boards", "{boards}"), *lead, ("cleared", "{cleared:.0%}"), other,
               ("s/board", "{seconds_per_board:.4f}")]
    lines = ["| agent | " + " | ".join(title for title, _ in columns) + " |", "|---|" + "---:|" * len(columns)]
    for name, row in agents.items():
        lines.append(f"| {name} | " + " | ".join(shown.format(**row) for _, shown in columns) + " |")
        if "others_on_these_boards" in row:
            lines.append(f"|  on those boards, mean {row['others_measure'].replace('_', ' ')}: "
                         + ", ".join(f"{k} {v:.1f}" for k, v in row["others_on_these_boards"].items())
                         + " |" * (1 + len(columns)))  # the agent's cell, then one a column
    return lines


def nmcs2_lines(boards: np.ndarray, seed: int, jobs: int, path: str, rules: str = "samegame") -> list[dict]:
    """NMCS level 2 under ``rules`` on each of ``boards`` (int8 ``[N, W, H]``), ``jobs``
    boards at a time: ``{"board", "shape", "rules", "seed", "jaxdust", "points",
    "cells_left", "seconds", "clicks"}`` per board, in order. Each result is appended to
    ``path`` when its board ends; boards already there (same cells, shape, rules and seed,
    played by this version of jaxdust: another may search otherwise) are not played again."""
    texts = ["".join(map(str, board.reshape(-1))) for board in boards]
    shape = list(boards.shape[1:])
    done = {(line["board"], line["seed"]): line for line in files.recover_json_lines(path)
            if line["shape"] == shape and line.get("rules") == rules and line.get("jaxdust") == __version__}
    todo = [(text, board, seed, rules) for text, board in zip(texts, boards) if (text, seed) not in done]
    if todo:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        # Spawned workers (a fork would inherit JAX's threads); one job plays here.
        workers = multiprocessing.get_context("spawn").Pool(min(jobs, len(todo)), _warm_up, (rules,)) \
            if jobs > 1 else None
        if workers:  # each compiles the search, silently (its line would land on the bar's): said once here
            note(compile_notice("the level-2 NMCS search", "5-20 s", kept=False, workers=min(jobs, len(todo))))
        with workers or contextlib.nullcontext(), open(path, "a") as output:
            played = workers.imap_unordered(_nmcs2_job, todo) if workers else map(_nmcs2_job, todo)
            for line in progress_bar(played, total=len(boards), initial=len(boards) - len(todo), desc="NMCS level 2",
                             unit="board"):
                output.write(json.dumps(line) + "\n")
                output.flush()
                done[(line["board"], line["seed"])] = line
    return [done[(text, seed)] for text in texts]


def _warm_up(rules: str) -> None:
    """Load (or compile) the numba search in a worker before its first board is timed: it
    was counted in that board's seconds (30 s on a cold 2-core machine). Its parent says so
    once, for every worker."""
    processes.mark_worker()
    points_search.nmcs(np.ones((4, 4), np.int8), 2, rules)


def _nmcs2_job(job: tuple) -> dict:
    text, board, seed, rules = job
    line = points_search.nmcs(board, 2, rules, seed=seed)
    return {"board": text, "shape": list(board.shape), "rules": rules, "seed": seed, "jaxdust": __version__,
            "points": line.points,
            "cells_left": line.cells_left, "seconds": line.seconds,
            "clicks": [list(map(int, click)) for click in line.clicks]}


def record(report: dict, out: str, name: str, points: np.ndarray, cells_left: np.ndarray, seconds: float) -> None:
    """One agent's row in the report, written at once (a long run keeps what it measured)."""
    report["agents"][name] = {"boards": int(points.size), "mean_points": float(points.mean()),
                              "std_points": stats.deviation(points), "cleared": float(np.mean(cells_left == 0)),
                              "mean_cells_left": float(cells_left.mean()), "seconds": seconds,
                              "seconds_per_board": seconds / points.size}
    files.atomic_write_json(out, report)


if __name__ == "__main__":
    flags.run_command(main, "NMCS level 2's finished boards are kept; the same command plays the rest")
