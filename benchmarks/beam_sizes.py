"""Time of the JAX beam (``jaxdust.beam_search``) across board shapes, against a batch of
plain clicks of the same shape.

The beam runs with its default scorer, the hand-made heuristic. Each of its clicks plays
every cluster of every kept position, ``beam.CHUNK`` children at a time (fewer when the
positions have fewer cells), then scores, keys and ranks them. Its cost should follow the
board's cells; a shape where XLA compiles the search badly shows up as a jump in the last
column: the beam's time a click over that of one batch of ``jax.vmap``-ed
``game.click_action`` as large as the beam's chunk, on boards of the same shape, in the
same run. Every size searches the same seeded random boards to the end, and every line
found is replayed under the game core.

    python benchmarks/beam_sizes.py                                # 8x6 to 20x20, width 8
    python benchmarks/beam_sizes.py --sizes 15x15x5,16x16x5 --width 64 --boards 4
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

import jaxdust
from jaxdust.core import configs, files, flags, game, machine
from jaxdust.search import beam

SIZES = "8x6x5,10x10x5,15x15x5,15x17x5,16x15x5,16x16x5,14x18x5,32x8x5,20x20x5"


def _best_seconds(function, repeats: int, sample_seconds: float = 0.0) -> tuple[float, object]:
    """Seconds a call, the fewest of ``repeats`` samples after a first (compiling) call (the
    least disturbed by other work on the machine), and the last result. A sample calls
    ``function`` until ``sample_seconds`` have passed (once at least), so that a call of
    a tenth of a millisecond is not timed alone."""
    result = jax.block_until_ready(function())
    times = []
    for _ in range(repeats):
        calls, began = 0, time.perf_counter()
        while not calls or time.perf_counter() - began < sample_seconds:
            result = jax.block_until_ready(function())
            calls += 1
        times.append((time.perf_counter() - began) / calls)
    return min(times), result


def _check_lines(boards: np.ndarray, lengths: np.ndarray, actions: np.ndarray, rules: str) -> None:
    height = boards.shape[2]
    for board, length, line in zip(boards, lengths, actions):
        final, count = jaxdust.replay(board, [divmod(int(a), height) for a in line[:length]], rules=rules)
        if length < 1 or not (bool(jaxdust.is_done(final)) and count == length):
            raise SystemExit(f"a beam line on a {board.shape[0]}x{height} board does not clear it")


def measure(config: game.GameConfig, width: int, count: int, seed: int, repeats: int) -> dict:
    """The beam's seconds on ``count`` random boards of ``config`` at ``width``, and a batch
    of clicks as large as its chunk on boards of the same shape."""
    boards = game.random_boards(jax.random.key(seed), count, config)
    rules = config.rules

    def search():
        return jaxdust.beam_search(boards, width=width, max_clicks=config.num_cells, rules=rules)

    seconds, found = _best_seconds(search, repeats)
    lengths, actions = np.asarray(found.length), np.asarray(found.actions)
    _check_lines(np.asarray(boards), lengths, actions, rules)
    chunk = min(beam.CHUNK, count * width * config.num_cells)  # as beam.for_each_child
    clicked = game.random_boards(jax.random.key(seed + 1), chunk, config)
    cells = jax.random.randint(jax.random.key(seed + 2), (chunk,), 0, config.num_cells)
    click = jax.jit(jax.vmap(lambda board, cell: game.click_action(board, cell, rules)))
    chunk_seconds, _ = _best_seconds(lambda: click(clicked, cells), repeats, sample_seconds=0.05)
    clicks = int(lengths.max())  # the search runs until its longest line ends
    return {"size": config.size_spec, "cells": config.num_cells, "width": width, "boards": count,
            "mean_clicks": float(lengths.mean()), "seconds": seconds, "seconds_per_click": seconds / clicks,
            "chunk": chunk, "chunk_seconds": chunk_seconds, "chunks_per_click": seconds / clicks / chunk_seconds}


def main(argv=None):
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=configs.size_list_flag, default=configs.size_list_flag(SIZES),
                        help=f"the boards' games, comma-separated WxHxC or RULES:WxHxC (default {SIZES})")
    parser.add_argument("--width", type=flags.positive_int, default=8, help="the beam's width (default 8)")
    parser.add_argument("--boards", type=flags.positive_int, default=2,
                        help="boards searched together, in one call (default 2)")
    parser.add_argument("--repeats", type=flags.positive_int, default=3,
                        help="timed calls after the compiling one; the fastest is kept (default 3)")
    parser.add_argument("--seed", type=flags.seed, default=0)
    parser.add_argument("--out", type=flags.report_file("beam_sizes"), default="results/beam_sizes.json")
    args = parser.parse_args(argv)
    for config in args.sizes:
        if config.rules not in game.CLICK_RULES:
            flags.fail(parser, f"--sizes {config.size_spec}: beam_search plays the click objectives "
                               f"({', '.join(game.CLICK_RULES)}); points_beam plays {config.rules}")
        cells = config.num_cells
        try:  # before any size is measured, as beam_search would refuse it
            beam.require_children_indexable("beam_search", args.boards, args.width, cells, beam.CHUNK)
            beam.require_beam_memory("beam_search", args.boards, args.width, cells, beam.child_bytes(cells, cells))
        except ValueError as error:
            flags.fail(parser, f"--sizes {config.size_spec}: {error}")

    rows = []
    report = {"benchmark": "beam_sizes", "measured_on": machine.measured_on(jaxdust.__version__),
              "width": args.width, "boards": args.boards, "seed": args.seed, "results": rows}
    for config in args.sizes:
        row = measure(config, args.width, args.boards, args.seed, args.repeats)
        rows.append(row)
        files.atomic_write_json(args.out, report)
        print(f"  {row['size']}: {row['seconds_per_click'] * 1e3:.2f} ms a click, "
              f"{row['chunks_per_click']:.1f} chunks of clicks", flush=True)
    print(f"\nJAX beam, width {args.width}, {args.boards} random board{'s' if args.boards > 1 else ''} a search, "
          f"seed {args.seed} ({machine.cpu_name()}, jax {jax.__version__}, {jax.devices()[0].platform}, "
          f"jaxdust {jaxdust.__version__})\n")
    print("| boards | cells | mean clicks | ms a click | chunk | ms a chunk of clicks | beam click / chunk of clicks |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['size']} | {row['cells']} | {row['mean_clicks']:.1f} | {row['seconds_per_click'] * 1e3:.2f} "
              f"| {row['chunk']:,} | {row['chunk_seconds'] * 1e3:.2f} | {row['chunks_per_click']:.1f} |")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    flags.run_command(main, "the sizes measured so far are in its --out; the same command measures them all again")
