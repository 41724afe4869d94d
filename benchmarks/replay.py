"""Time of replaying lines (``jaxdust.score``, which ``replay`` and ``positions`` share),
against replaying each click op by op.

The solver command's resume replays every result it keeps, and ``benchmark.score`` and the
leaderboard's solver row every line they are given. ``score`` replays a click as one
compiled call; the reference, the way before 0.2.87, runs the cluster and the click as JAX
operations one at a time. Both replay the same width-1 beam lines on the same random boards
in the same run and must end on the same boards. Time is the mean per board, after one
board of each to compile.

    python benchmarks/replay.py                     # 200 boards of 8x6x5
    python benchmarks/replay.py --size former:7x9x4 --boards 100
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import jaxdust
from jaxdust.core import configs, files, flags, game, machine


def op_by_op(board: np.ndarray, actions: np.ndarray, rules: str) -> np.ndarray:
    """The final board of a line, each click's cluster and move run as JAX operations one at
    a time (the checks ``score`` makes on the host are made here too)."""
    height = board.shape[1]
    board = jax.numpy.asarray(board)
    for action in actions[actions >= 0]:
        x, y = divmod(int(action), height)
        cluster = np.asarray(game.cluster_mask(board, x, y))
        if not int(board[x, y]) or cluster.sum() < game.rules_of(rules).min_group:
            raise SystemExit(f"the reference refuses click ({x}, {y}) of a line score took")
        board, _ = game.click(board, x, y, rules=rules)
    return np.asarray(board)


def per_board(replay, boards: np.ndarray, lines: np.ndarray) -> tuple[float, list]:
    """Mean seconds a board of ``replay(board, line)``, after one call to compile, and its results."""
    replay(boards[0], lines[0])
    start = time.perf_counter()
    results = [replay(board, line) for board, line in zip(boards, lines)]
    return (time.perf_counter() - start) / len(boards), results


def main(argv=None):
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=configs.size_flag, default=game.GameConfig(8, 6, 5), metavar="WxHxC",
                        help="the boards' game, as WxHxC or RULES:WxHxC under fewest-clicks rules (default 8x6x5)")
    parser.add_argument("--boards", type=flags.positive_int, default=200, help="boards replayed (default 200)")
    parser.add_argument("--seed", type=flags.seed, default=0)
    parser.add_argument("--out", type=flags.report_file("replay"), default="results/replay.json")
    args = parser.parse_args(argv)
    config = args.size
    if config.rules not in game.CLICK_RULES:
        flags.fail(parser, f"--size {config.size_spec}: beam lines are played under the fewest-clicks rules "
                           f"({', '.join(game.CLICK_RULES)})")

    boards = np.asarray(game.random_boards(jax.random.key(args.seed), args.boards, config))
    lines = np.asarray(jaxdust.beam_search(boards, 1, rules=config.rules).actions)
    seconds, clicks = per_board(lambda board, line: jaxdust.replay(board, line, config.rules), boards, lines)
    reference_seconds, finals = per_board(lambda board, line: op_by_op(board, line, config.rules), boards, lines)
    if not all(np.array_equal(np.asarray(final), reference) for (final, _), reference in zip(clicks, finals)):
        raise SystemExit("the replays end on other boards than the reference's")
    report = {"benchmark": "replay", "measured_on": machine.measured_on(jaxdust.__version__),
              "size": config.size_spec, "boards": args.boards, "seed": args.seed,
              "mean_clicks": float(np.mean([count for _, count in clicks])),
              "seconds_per_board": seconds, "reference_seconds_per_board": reference_seconds}
    files.atomic_write_json(args.out, report)
    print(f"\nReplaying {args.boards} width-1 beam lines of {config.size_spec} boards "
          f"({report['mean_clicks']:.1f} clicks on average; {machine.cpu_name()}, jax {jax.__version__}, "
          f"{jax.devices()[0].platform}, jaxdust {jaxdust.__version__})\n")
    print("| replay | ms a board | speed-up |\n|---|---:|---:|")
    print(f"| op by op (reference) | {reference_seconds * 1e3:.2f} | 1.0x |")
    print(f"| jaxdust.replay | {seconds * 1e3:.2f} | {reference_seconds / seconds:.1f}x |")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    flags.run_command(main, "nothing is kept between calls: the same command measures it all again")
