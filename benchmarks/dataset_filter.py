"""Memory and time of the data-set maker's duplicate filter, against a Python set of bytes.

``datasets.PositionFilter`` (each position's cells packed to the bits its colours need, in
sorted runs) and the filter it replaced (a Python set of ``datasets.canonical_key`` bytes,
48 bytes a key on 8x6 boards) take the same random positions in the same run, in batches
the size of an 8x6x5 shard's positions (50 boards of about 12), and must keep the same
ones. Memory is Python's traced allocations (``tracemalloc``, numpy's arrays included),
final and peak, per position kept; time is measured in a pass without tracing.

    python benchmarks/dataset_filter.py                       # 2,000,000 positions, 8x6x5
    python benchmarks/dataset_filter.py --positions 200000 --size former:7x9x4
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

import jaxdust
from jaxdust.core import boards, configs, files, flags, machine
from jaxdust.learn import datasets


class BytesSet:
    """The filter before ``PositionFilter``: a Python set of each position's canonical bytes."""

    def __init__(self, game):
        self.mirror, self.keys = game.mirror_symmetric, set()

    def new(self, batch):
        fresh = []
        for board in batch:
            key = datasets.canonical_key(board, mirror=self.mirror)
            fresh.append(key not in self.keys)
            self.keys.add(key)
        return np.array(fresh, bool)


def batches(game, positions: int, batch: int, seed: int):
    rng = np.random.default_rng(seed)
    for start in range(0, positions, batch):
        size = min(batch, positions - start)
        yield rng.integers(1, game.colors + 1, size=(size, game.width, game.height)).astype(np.int8)


def measure(make, game, positions: int, batch: int, seed: int, traced: bool) -> dict:
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    kept, fresh = make(game), []
    for part in batches(game, positions, batch, seed):
        fresh.append(kept.new(part) if not traced else int(kept.new(part).sum()))  # a traced pass counts only
    seconds = time.perf_counter() - start
    if traced:
        row = {"kept": sum(fresh)}
        row["bytes"], row["peak_bytes"] = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return row
    return {"seconds": seconds, "fresh": np.concatenate(fresh)}


def main(argv=None):
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=flags.positive_int, default=2_000_000)
    parser.add_argument("--size", type=configs.size_flag, default=boards.parse_size("8x6x5"), metavar="WxHxC",
                        help="the positions' game, as WxHxC or RULES:WxHxC (default 8x6x5)")
    parser.add_argument("--batch", type=flags.positive_int, default=600, help="positions a call (a shard's)")
    parser.add_argument("--seed", type=flags.non_negative_int, default=0)
    parser.add_argument("--out", type=flags.report_file("dataset_filter"), default="results/dataset_filter.json")
    args = parser.parse_args(argv)
    game = args.size

    rows = {}
    for name, make in (("set of bytes", BytesSet), ("PositionFilter", datasets.PositionFilter)):
        timed = measure(make, game, args.positions, args.batch, args.seed, traced=False)
        traced = measure(make, game, args.positions, args.batch, args.seed, traced=True)
        if rows and not np.array_equal(timed["fresh"], rows["set of bytes"]["fresh"]):
            raise SystemExit(f"{name} kept other positions than the set of bytes")
        rows[name] = {"seconds": timed["seconds"], "kept": traced["kept"], "bytes": traced["bytes"],
                      "peak_bytes": traced["peak_bytes"], "fresh": timed["fresh"]}
        print(f"  {name}: {timed['seconds']:.2f} s, {traced['bytes'] / traced['kept']:.1f} bytes a position kept",
              flush=True)
    for row in rows.values():
        del row["fresh"]
    report = {"benchmark": "dataset_filter", "measured_on": machine.measured_on(jaxdust.__version__),
              "size": game.size_spec, "positions": args.positions, "batch": args.batch, "seed": args.seed,
              "results": rows}
    files.atomic_write_json(args.out, report)
    print(f"\nDuplicate filter, {args.positions:,} random {game.size_spec} positions in batches of {args.batch} "
          f"({machine.cpu_name()}, jaxdust {jaxdust.__version__})\n")
    print("| filter | kept | bytes a position | peak bytes a position | s per 10^6 positions |")
    print("|---|---:|---:|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['kept']:,} | {row['bytes'] / row['kept']:.1f} | {row['peak_bytes'] / row['kept']:.1f} "
              f"| {row['seconds'] / args.positions * 1e6:.2f} |")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    flags.run_command(main, "nothing is kept between calls: the same command measures it all again")
