"""SameGame for points on random boards: the baselines the literature's searches start from.

    python benchmarks/samegame.py                          # 100 random 15x15x5 boards
    python benchmarks/samegame.py --boards 1000 --size 15x15x5

Plays every board with each agent under the ``samegame`` rules, all boards in one compiled
loop (``jaxdust.core.play.play_boards``): random legal clicks (groups of 2 or more), and
largest-group greedy with UVa 758's tie-break (leftmost, then bottommost). Prints mean
points (``(n - 2)^2`` a group, +1000 for a cleared board), share cleared, cells left and
points per second; writes JSON. Beam search and nested Monte Carlo search rows are for a
later version (RULES.md's family; the README says what is measured).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import jax
import numpy as np

from jaxdust.core import configs, files, flags, game
from jaxdust.core.play import play_boards
from jaxdust.evaluation import baselines

AGENTS = {"random legal": baselines.RandomLegal("samegame"), "largest group (UVa 758)": baselines.largest_group}


def main(argv=None) -> dict:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=flags.positive_int, default=100)
    parser.add_argument("--size", type=configs.size_flag, default=game.GameConfig(15, 15, 5))
    parser.add_argument("--seed", type=flags.seed, default=0)
    parser.add_argument("--out", type=flags.output_file, default="results/samegame.json")
    args = parser.parse_args(argv)
    size = game.GameConfig(args.size.width, args.size.height, args.size.colors, "samegame")
    keys = jax.random.split(jax.random.key(args.seed), args.boards)
    boards = jax.vmap(lambda key: game.random_board(key, size))(keys)
    cap = size.num_cells  # every legal click removes 2 or more cells
    report = {"benchmark": "samegame", "boards": args.boards, "size": [size.width, size.height, size.colors],
              "seed": args.seed, "backend": jax.default_backend(), "cpu": platform.processor() or platform.machine(),
              "cpu_count": os.cpu_count(), "agents": {}}
    for name, policy in AGENTS.items():
        play_boards(boards[:2], policy, jax.random.key(1), cap, rules="samegame").points.block_until_ready()  # compile
        start = time.perf_counter()
        played = play_boards(boards, policy, jax.random.key(1), cap, rules="samegame")
        points = np.asarray(played.points)
        seconds = time.perf_counter() - start
        report["agents"][name] = {"mean_points": float(points.mean()), "std_points": float(points.std()),
                                  "cleared": float(np.mean(played.cleared)),
                                  "mean_cells_left": float(np.mean(played.cells_left)),
                                  "mean_clicks": float(np.mean(played.clicks)), "seconds": seconds,
                                  "boards_per_second": args.boards / seconds}
        files.atomic_write_json(args.out, report)
    print(f"\nSameGame, {args.boards} random {size.width}x{size.height}x{size.colors} boards (seed {args.seed}), "
          f"{report['backend']}, {report['cpu_count']} cores\n")
    print("| agent | mean points | std | cleared | cells left | clicks | boards/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, row in report["agents"].items():
        print(f"| {name} | {row['mean_points']:.1f} | {row['std_points']:.1f} | {100 * row['cleared']:.0f}% | "
              f"{row['mean_cells_left']:.1f} | {row['mean_clicks']:.1f} | {row['boards_per_second']:,.0f} |")
    print(f"\nwrote {args.out}")
    return report


if __name__ == "__main__":
    main()
