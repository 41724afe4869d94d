r"""Publish the fewest-clicks benchmark sets (``data/boards/fewest_clicks_v1_*.txt``).

    python -m jaxdust.solver data/boards/eval_8x6x5.txt --out results/solver-eval-1000.jsonl --jobs 2 --time-limit 300
    python benchmarks/fewest_clicks_sets.py --solver-log results/solver-eval-1000.jsonl

8x6x5: the 1000 evaluation boards with the solver's lengths and lower bounds from that log
(boards it could not prove within its time keep both, unequal). 6x6x5 and 8x4x5: the
boards of ``optimal_6x6x5.txt`` and ``optimal_8x4x5.txt``, whose optima the solver proved
(``tests/test_solvers.py`` proves them again). A set already published is left alone.
Prints the solver's proof times on the 1000 boards by optimal length.

Former (NRK's 7x9x4, gravity alone): ``--former-boards FILE`` writes the 200 seeded random
boards the ``fewest_clicks_v1_7x9x4_former`` set is to hold, for the solver to prove in
passes of growing limits (``python -m jaxdust.solver --help``); ``--former-log`` prints
where the proofs stand, with the proof times and positions by optimum:

    python benchmarks/fewest_clicks_sets.py --former-boards results/former_boards_7x9x4.txt
    python -m jaxdust.solver results/former_boards_7x9x4.txt --rules former --jobs 2 \
        --node-limit 1000000000 --table-bits 27 --out data/proofs/former-200.jsonl \
        --checkpoint-dir results/former-proofs
    python benchmarks/fewest_clicks_sets.py --former-log data/proofs/former-200.jsonl
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from jaxdust.core import boards as board_io
from jaxdust.core import files, flags, reference
from jaxdust.evaluation import benchmark


def length_table(records: list[dict], positions: bool = False) -> str:
    """Proof times by optimal length (markdown), the solver's distribution over the set;
    ``positions`` adds the median positions searched (machine-independent, unlike seconds)."""
    lengths = np.array([r["length"] for r in records])
    seconds = np.array([r["seconds"] for r in records])
    proven = np.array([r["optimal"] for r in records])
    nodes = np.array([r["nodes"] for r in records], np.float64)
    extra = (" median positions |", "---:|") if positions else ("", "")
    lines = ["| clicks | boards | proven | median s | p90 s | max s |" + extra[0],
             "|---:|---:|---:|---:|---:|---:|" + extra[1]]
    for label, chosen in [*((str(n), lengths == n) for n in np.unique(lengths)), ("all", lengths > -1)]:
        times = seconds[chosen]
        lines.append(f"| {label} | {times.size} | {proven[chosen].sum()} | {np.median(times):.2f} | "
                     f"{np.percentile(times, 90):.1f} | {times.max():.1f} |"
                     + (f" {np.median(nodes[chosen]):.1e} |" if positions else ""))
    return "\n".join(lines)


def former_progress(records: list[dict], boards: int) -> str:
    """Where the proofs of a solver log stand: each board's last line is its result."""
    last = {r["line"]: r for r in records if "error" not in r}
    proven = [r for r in last.values() if r["optimal"]]
    open_ = sorted((r for r in last.values() if not r["optimal"]), key=lambda r: r["line"])
    lines = [f"{len(proven)} of {boards} boards proven, {len(open_)} open, {boards - len(last)} not tried yet."]
    if proven:
        lines += ["Proven, by optimum (seconds include other load on the machine; positions do not):",
                  length_table(proven, positions=True)]
    if open_:
        lines.append("Open (line: bound..best found): " + ", ".join(
            f"{r['line']}: {r['lower_bound']}..{r['length']}" for r in open_))
    return "\n".join(lines)


FORMER_SEED = 794  # numpy's default_rng
FORMER_COUNT = 200


def former_boards(count: int = FORMER_COUNT) -> str:
    """``count`` random full 7x9 boards of 4 colours (NRK Former's size), as a board file."""
    rng = np.random.default_rng(FORMER_SEED)
    lines = ["# width=7 height=9 colors=4 rules=former; cells listed x-major: cell (x,y) is character x*9+y, "
             "y=0 bottom row",
             f"# {count} random boards (uniform colours, numpy default_rng({FORMER_SEED})), NRK Former's size"]
    lines += [board_io.board_to_text(reference.random_board(rng, 7, 9, 4)) for _ in range(count)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group()  # each is its own job
    action.add_argument("--solver-log", type=flags.input_file,
                        help="JSON lines of python -m jaxdust.solver on data/boards/eval_8x6x5.txt")
    action.add_argument("--former-boards", type=flags.output_file, help="write the Former set's 200 boards here")
    action.add_argument("--former-log", type=flags.input_file,
                        help="JSON lines of python -m jaxdust.solver on the Former boards: print where they stand")
    args = parser.parse_args(argv)
    if args.former_log:
        try:
            records = files.recover_json_lines(args.former_log, repair=False)
        except ValueError as error:
            parser.error(f"--former-log: {error}")
        fields = ("line", "board", "length", "lower_bound", "optimal", "nodes", "seconds")  # a solver result's
        unlike = [index for index, record in enumerate(records, 1)
                  if not isinstance(record, dict) or not all(field in record for field in fields[:2])
                  or ("error" not in record and not all(field in record for field in fields))]
        if unlike:
            parser.error(f"--former-log: line {unlike[0]} of {args.former_log} is not a result of python -m "
                         f"jaxdust.solver (it holds {', '.join(fields)}, or an error)")
        expected = {number: text for number, text in enumerate(former_boards().splitlines(), 1)
                    if text and not text.startswith("#")}
        foreign = [record.get("line") for record in records
                   if "error" not in record and expected.get(record.get("line")) != record.get("board")]
        if foreign:
            parser.error(f"--former-log: line {foreign[0]} holds another board than the Former set's: "
                         f"{args.former_log} is a log of other boards")
        other_rules = [record for record in records  # the set's first passes predate the rules field
                       if "error" not in record and record.get("rules", "former") != "former"]
        if other_rules:
            parser.error(f"--former-log: line {other_rules[0]['line']} was solved under rules "
                         f"{other_rules[0]['rules']}, not former (python -m jaxdust.solver --rules former)")
        print(former_progress(records, FORMER_COUNT))
        return
    if args.former_boards:
        files.atomic_write_bytes(args.former_boards, former_boards().encode())
        print(f"wrote {args.former_boards}")
        return
    if not args.solver_log:
        parser.error("one of --solver-log, --former-boards or --former-log is required")

    for size in ("6x6x5", "8x4x5"):
        if not os.path.exists(benchmark.set_path(size)):
            records = board_io.read_board_file(os.path.join(board_io.BOARDS_DIR, f"optimal_{size}.txt"))
            optima = [r.values[-1] for r in records]
            print(benchmark.write_set(size, np.stack([np.asarray(r.board) for r in records]), optima, optima,
                                      "Optima proven by python -m jaxdust.solver."))
    boards = np.stack([np.asarray(r.board) for r in board_io.read_board_file(board_io.EVAL_FILE)])
    try:
        solved = benchmark.solver_log_records(args.solver_log, boards)
    except ValueError as error:
        parser.error(f"--solver-log: {error}")
    if not os.path.exists(benchmark.set_path("8x6x5")):
        print(benchmark.write_set("8x6x5", boards, [r["length"] for r in solved], [r["lower_bound"] for r in solved],
                                  "The boards of eval_8x6x5.txt; python -m jaxdust.solver --time-limit 300."))
    print(f"The solver on the {len(solved)} boards, by length (one board per process):")
    print(length_table(solved))


if __name__ == "__main__":
    flags.run_command(main, "a set is published whole or not at all; the same command publishes the rest")
