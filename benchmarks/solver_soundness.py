r"""Differential soundness check of the exact solver: are its "proven" optima optimal?

For each size, random full boards are proven twice: by ``jaxdust.solve`` with every pruning
rule, IDA* alone (``beam_width=0``, so no beam hides a wrong refutation) and one
transposition table shared by all boards of the size (so every stored fact is reused by
other paths, mirror images and other boards), and by plain IDA* (``prune=False``: the
colour bound and a fresh table only). A board where the two disagree, or where the first is
not proven, is a fault; the script prints a table, writes JSON and exits with 1 on any.
The shared table is how the 0.2.15 solver's wrong optima were found (CHANGELOG 0.2.16);
``tests/test_family_search.py`` holds the exhaustive small-board check.

``--holes`` draws a share of the boards with empty cells, settled under the rules (empty
columns and ragged heights: what every position after a click looks like). ``--paths``
also solves each board the ways a user does, each held to plain IDA*'s length: with the
default first beam, and in a chain of calls stopped by ``node_limit`` (16 positions, then
twice as many each call) resumed from a ``checkpoint`` file; a stopped call's line must
replay to an empty board and its lower bound stay at most the optimum.

    python benchmarks/solver_soundness.py                      # 10,400 boards, ~12 min on one core
    python benchmarks/solver_soundness.py --sizes former:6x6x5 --boards 200 --seed 3
    python benchmarks/solver_soundness.py --sizes 8x1x3,3x5x1,5x4x3 --holes 0.5 --paths --boards 300
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

import jaxdust
from jaxdust.core import files, flags, machine
from jaxdust.core.boards import parse_size
from jaxdust.core.game import CLICK_RULES, GameConfig
from jaxdust.core.progress import progress_bar
from jaxdust.solver.api import TranspositionTable
from jaxdust.solver.bitboard import MAX_CELLS

DEFAULT_SIZES = ("dust:6x4x4,former:6x4x4,dust:5x5x4,former:6x5x4,dust:6x6x5,former:6x6x5,dust:8x4x5,"
                 "dust:7x5x5,former:7x5x4,dust:8x5x4")
BOARDS = {"default": 3000, "large": 200}  # boards of at most 25 cells / of more


def sizes(text: str) -> list[GameConfig]:
    """``[RULES:]WxHxC`` items as ``--size`` takes them, comma-separated (``6x4x4,former:6x6x5``)."""
    chosen = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        try:
            config = parse_size(part)
        except ValueError as error:  # it names the size
            raise argparse.ArgumentTypeError(str(error)) from None
        if config.rules not in CLICK_RULES:
            raise argparse.ArgumentTypeError(f"{part}: the solver plays the {', '.join(CLICK_RULES)} rules, "
                                             f"not {config.rules!r}")
        if config.num_cells > MAX_CELLS or config.width < 2:
            raise argparse.ArgumentTypeError(f"{part}: needs 2..{MAX_CELLS} cells, at least 2 wide")
        chosen.append(config)
    if not chosen:
        raise argparse.ArgumentTypeError("names no size")
    return chosen


def check_size(config: GameConfig, boards: int, seed: int, table_bits: int = 20, holes: float = 0.0,
               paths: bool = False) -> dict:
    """Prove ``boards`` random boards of ``config`` both ways (and with ``paths`` the other
    ways); the disagreements, with their boards."""
    rules, width, height, colors = config.rules, config.width, config.height, config.colors
    rng = np.random.default_rng(seed)
    shared = TranspositionTable(table_bits)
    faults, lengths, positions = [], [], [0, 0]
    start = time.perf_counter()
    for index in progress_bar(range(boards), desc=f"{rules} {width}x{height}x{colors}", unit="board"):
        board = rng.integers(1, colors + 1, (width, height)).astype(np.int8)
        if rng.random() < holes:  # each cell emptied with probability 0.3, then settled
            board = np.asarray(jaxdust.settle(np.where(rng.random(board.shape) < 0.3, 0, board).astype(np.int8),
                                              rules=rules))
            if not board.any():
                continue
        pruned = jaxdust.solve(board, colors=colors, beam_width=0, rules=rules, table=shared)
        plain = jaxdust.solve(board, colors=colors, beam_width=0, rules=rules, prune=False)
        lengths.append(plain.length)
        positions[0] += pruned.nodes
        positions[1] += plain.nodes
        fault = {"index": index, "board": jaxdust.board_to_text(board), "plain": plain.length}
        if pruned.length != plain.length or not pruned.optimal:
            faults.append({**fault, "solver": pruned.length, "proven": pruned.optimal})
        if paths:
            for way, found in other_ways(board, colors, rules, plain.length):
                faults.append({**fault, "solver": found.length, "proven": found.optimal, "way": way})
    return {"rules": rules, "width": width, "height": height, "colors": colors, "boards": len(lengths),
            "holes": holes, "paths": paths, "seed": seed, "faults": faults, "mean_optimum": float(np.mean(lengths)),
            "max_optimum": int(max(lengths)), "positions": positions[0], "plain_positions": positions[1],
            "seconds": time.perf_counter() - start}


def other_ways(board: np.ndarray, colors: int, rules: str, optimum: int):
    """``(way, solution)`` for each way of solving ``board`` that contradicts its ``optimum``:
    a wrong length where proven, a line that does not clear the board in its length, a lower
    bound above the optimum."""
    def wrong(found) -> bool:
        try:
            clears = jaxdust.score(board, found.clicks, rules=rules) == found.length
        except ValueError:  # the line does not play the game to its end
            clears = False
        return (not clears or found.lower_bound > optimum or found.length < optimum
                or (found.optimal and found.length != optimum))

    found = jaxdust.solve(board, colors=colors, rules=rules)
    if wrong(found) or not found.optimal:
        yield "beam first", found
    with tempfile.TemporaryDirectory() as folder:
        progress, limit = os.path.join(folder, "proof.npz"), 16
        while True:
            found = jaxdust.solve(board, colors=colors, rules=rules, node_limit=limit, checkpoint=progress)
            if wrong(found):
                yield f"resumed under node_limit {limit}", found
            if found.optimal:
                return
            limit *= 2


def main(argv=None) -> int:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=sizes, default=DEFAULT_SIZES,
                        help="WxHxC (the dust game) or RULES:WxHxC, comma-separated")
    parser.add_argument("--boards", type=flags.positive_int, default=None,
                        help=f"boards per size (default {BOARDS['default']} up to 25 cells, else {BOARDS['large']})")
    parser.add_argument("--seed", type=flags.non_negative_int, default=0, help="size i draws its boards with seed + i")
    parser.add_argument("--holes", type=flags.share, default=0.0,
                        help="share of the boards drawn with empty cells (each with probability 0.3), settled; "
                             "a board left empty is skipped (default 0)")
    parser.add_argument("--paths", action="store_true",
                        help="also solve each board with the default first beam, and in node-limited calls resumed "
                             "from a checkpoint")
    parser.add_argument("--out", type=flags.report_file("solver_soundness"), default="results/solver_soundness.json")
    args = parser.parse_args(argv)

    report = {"benchmark": "solver_soundness", "measured_on": machine.measured_on(jaxdust.__version__),
              "version": jaxdust.__version__, "cpu": machine.cpu_name(),
              "sizes": []}
    for i, config in enumerate(args.sizes):
        count = args.boards or BOARDS["default" if config.num_cells <= 25 else "large"]
        report["sizes"].append(check_size(config, count, args.seed + i, holes=args.holes, paths=args.paths))
        files.atomic_write_json(args.out, report)

    also = (f", {args.holes:g} of the boards with holes" if args.holes else "") + \
        (", also beam first and resumed under node limits" if args.paths else "")
    print(f"\nExact solver against plain IDA* (jaxdust {report['version']}, {report['cpu']}, one core{also})\n")
    print("| rules | size | boards | mean optimum | max | wrong or unproven | positions / plain's | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in report["sizes"]:
        print(f"| {r['rules']} | {r['width']}x{r['height']}x{r['colors']} | {r['boards']} | {r['mean_optimum']:.2f} "
              f"| {r['max_optimum']} | {len(r['faults'])} | {r['positions'] / max(r['plain_positions'], 1):.3f} "
              f"| {r['seconds']:.2f} |")
    faults = [(r["rules"], f) for r in report["sizes"] for f in r["faults"]]
    for rules, fault in faults[:20]:
        print(f"FAULT {rules} board {fault['board']}: solver {fault['solver']} (proven {fault['proven']}"
              + (f", {fault['way']}" if "way" in fault else "") + f"), plain IDA* {fault['plain']}")
    print(f"wrote {args.out}")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(flags.run_command(main, "the sizes finished before this one are in its --out (none if it was the "
                                     "first); the same command checks them all again"))
