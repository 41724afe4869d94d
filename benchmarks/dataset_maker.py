"""Time and memory of the data-set maker a board: making a set, resuming it, its closing line.

Time: the same boards are labelled in the same run with the journal put on the disk (fsync)
as the maker does (once ``datasets.SYNC_SECONDS`` and before each shard), after every board
(the maker before 0.2.73: the reference), and with no fsync at all (the floor: none of the
journal's, the shards', the manifest's or the folder's), in interleaved rounds; the fastest
round of each is kept, and every way must write the same shards. ``fsyncs`` counts them
all, the shards' and the manifest's too.

Memory: the peak of Python's traced allocations (``tracemalloc``, numpy's arrays included)
in a resume of a finished set (``make_dataset`` again: it reads the shards and streams the
journal) and in its closing line (``datasets.summary``), against holding the journal's
records (``list`` of its lines) and the samples (``load_dataset``), which both did before
0.2.73. Each is taken on the set and on one twice its size: the difference over the boards
is what a board more costs (a shard read whole and the fixed costs are in both). Last, the
peak of making the set as one shard, against that shard's arrays.

    python benchmarks/dataset_maker.py     # 3,000 8x6x5 boards, beam width 4, shards of 1,000
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import shutil
import tempfile
import time
import tracemalloc

import jaxdust
from jaxdust.core import boards, configs, files, flags, machine
from jaxdust.learn import datasets

SYNCS = ("as made", "every board", "never")  # "every board" is the reference


@contextlib.contextmanager
def journal_syncs(way: str, counted: list):
    """The maker's fsyncs made ``way`` for a while, each one made counted in ``counted``."""
    real_fsync, real_seconds = os.fsync, datasets.SYNC_SECONDS

    def fsync(descriptor):
        if way != "never":
            counted.append(1)
            real_fsync(descriptor)

    os.fsync, datasets.SYNC_SECONDS = fsync, 0.0 if way == "every board" else real_seconds
    try:
        yield
    finally:
        os.fsync, datasets.SYNC_SECONDS = real_fsync, real_seconds


def timed_make(directory: str, config: datasets.DatasetConfig, way: str) -> dict:
    shutil.rmtree(directory, ignore_errors=True)
    counted = []
    with journal_syncs(way, counted):
        start = time.perf_counter()
        manifest = datasets.make_dataset(directory, config, progress=False)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "fsyncs": len(counted), "sha256": manifest["sha256"]}


def peak_bytes(work) -> int:
    """The peak of Python's traced allocations while ``work()`` runs, after a first call
    untraced (what is allocated once a process, as imports are, is no cost of the work)."""
    work()
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main(argv=None):
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=flags.positive_int, default=3000)
    parser.add_argument("--size", type=configs.size_flag, default=boards.parse_size("8x6x5"), metavar="WxHxC",
                        help="the boards' game, as WxHxC or RULES:WxHxC (default 8x6x5)")
    parser.add_argument("--beam-width", type=flags.positive_int, default=4, help="the beam labeller's (default 4)")
    parser.add_argument("--shard-size", type=flags.positive_int, default=1000, help="boards a shard (default 1000)")
    parser.add_argument("--rounds", type=flags.positive_int, default=2, help="timed rounds of each way (default 2)")
    parser.add_argument("--seed", type=flags.non_negative_int, default=0)
    parser.add_argument("--out", type=flags.report_file("dataset_maker"), default="results/dataset_maker.json")
    args = parser.parse_args(argv)
    try:
        config = datasets.DatasetConfig(args.size, boards=args.boards, seed=args.seed, labeller="beam",
                                        beam_width=args.beam_width, shard_size=args.shard_size)
    except configs.FieldError as error:  # the data-set maker's own limits (rules, cells, boards)
        flags.fail(parser, f"{'--size' if error.field == 'game' else configs.flag_name(error.field)} {error.problem}")

    with tempfile.TemporaryDirectory(prefix="dataset_maker-") as scratch:
        made = os.path.join(scratch, "set")
        datasets.make_dataset(os.path.join(scratch, "warm"), datasets.DatasetConfig(
            args.size, boards=2, labeller="beam", beam_width=args.beam_width), progress=False)  # numba compiles

        times, shards = {way: [] for way in SYNCS}, None
        for round_ in range(args.rounds):
            for way in SYNCS if round_ % 2 == 0 else SYNCS[::-1]:
                result = timed_make(made, config, way)
                shards = shards or result["sha256"]
                if result["sha256"] != shards:
                    raise SystemExit(f"the journal synced {way} gave other shards")
                times[way].append(result)
                print(f"  round {round_ + 1}, journal synced {way}: {result['seconds']:.2f} s, "
                      f"{result['fsyncs']} fsyncs", flush=True)

        # What a board more costs, from the peaks of the set and of one twice its size (the
        # same boards first): a shard read whole and the fixed costs are in both.
        doubled, doubled_config = os.path.join(scratch, "doubled"), dataclasses.replace(config, boards=2 * args.boards)
        datasets.make_dataset(doubled, doubled_config, progress=False)
        memory = {}
        for directory, made_config in ((made, config), (doubled, doubled_config)):
            journal = os.path.join(directory, "journal.jsonl")
            for name, work in (
                ("resume", lambda: datasets.make_dataset(directory, made_config, progress=False)),
                ("closing line", lambda: datasets.summary(directory, made_config)),
                ("journal's records held", lambda: list(files.iter_json_lines(journal, repair=False))),
                ("samples held", lambda: datasets.load_dataset(directory)),
            ):
                memory.setdefault(name, []).append(peak_bytes(work))
        whole = os.path.join(scratch, "one-shard")
        one_shard = dataclasses.replace(config, shard_size=args.boards)

        def make_whole():
            shutil.rmtree(whole, ignore_errors=True)
            datasets.make_dataset(whole, one_shard, progress=False)

        one_shard_peak = peak_bytes(make_whole)
        one_shard_arrays = sum(a.nbytes for a in datasets.load_dataset(whole))

    fastest = {way: min(runs, key=lambda r: r["seconds"]) for way, runs in times.items()}
    report = {"benchmark": "dataset_maker", "measured_on": machine.measured_on(jaxdust.__version__),
              "size": args.size.size_spec, "boards": args.boards, "beam_width": args.beam_width,
              "shard_size": args.shard_size, "seed": args.seed, "sync_seconds": datasets.SYNC_SECONDS,
              "time": {way: {"ms_a_board": row["seconds"] / args.boards * 1e3, "fsyncs": row["fsyncs"],
                             "rounds_seconds": [r["seconds"] for r in times[way]]} for way, row in fastest.items()},
              "memory_peak_bytes": {name: {"boards": peaks[0], "twice the boards": peaks[1],
                                           "a board more": (peaks[1] - peaks[0]) / args.boards}
                                    for name, peaks in memory.items()},
              "one_shard_bytes_a_board": {"peak making it": one_shard_peak / args.boards,
                                          "its arrays": one_shard_arrays / args.boards}}
    files.atomic_write_json(args.out, report)

    print(f"\nData-set maker, {args.boards:,} {args.size.size_spec} boards, beam labels of width {args.beam_width}, "
          f"shards of {args.shard_size:,}, one job ({machine.cpu_name()}, jaxdust {jaxdust.__version__})\n")
    print("| journal synced | fsyncs | ms a board | against every board |")
    print("|---|---:|---:|---:|")
    reference = report["time"]["every board"]["ms_a_board"]
    for way, row in report["time"].items():
        print(f"| {way} | {row['fsyncs']:,} | {row['ms_a_board']:.2f} | {row['ms_a_board'] / reference:.2f} |")
    print(f"\n| memory, peak | {args.boards:,} boards | {2 * args.boards:,} boards | bytes a board more |")
    print("|---|---:|---:|---:|")
    for name, row in report["memory_peak_bytes"].items():
        print(f"| {name} | {row['boards']:,} | {row['twice the boards']:,} | {row['a board more']:,.0f} |")
    shard = report["one_shard_bytes_a_board"]
    print(f"\nMade as one shard: a peak of {shard['peak making it']:,.0f} bytes a board, "
          f"its arrays {shard['its arrays']:,.0f}")
    print(f"\nwrote {args.out}")
    return report


if __name__ == "__main__":
    flags.run_command(main, "nothing is kept between calls: the same command measures it all again")
