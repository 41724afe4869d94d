"""jaxdust's exact Former solver against tommyod/NRK-former-game's, on the same boards and machine.

    git clone https://github.com/tommyod/NRK-former-game /tmp/nrk
    python benchmarks/fewest_clicks_sets.py --former-boards results/former_boards_7x9x4.txt
    python benchmarks/former_solvers.py --tommyod /tmp/nrk --limit 20 --time-limit 60

tommyod's strongest prover is ``heuristic_search``, a branch and bound that yields shorter
and shorter solutions and whose last one is optimal once it returns (its ``a_star_search``
runs out of memory on 7x9 boards). Both solvers get ``--time-limit`` seconds per board, one
process at a time pinned to one core (``--cpu``); each side's solutions are replayed under
jaxdust's former rules (they must clear the board), and where both prove an optimum the two
must agree. Prints a table and writes ``--out`` (JSON lines per board, resumed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np

import jaxdust
from jaxdust.core import files, flags, machine

DEFAULT_BOARDS = "results/former_boards_7x9x4.txt"
# A child process per solve: a hard time limit on tommyod's search (a Python generator that
# cannot be interrupted from inside) and a fresh memory for each.
THEIRS = textwrap.dedent("""
    import json, sys, time
    from board import Board
    from solvers import heuristic_search
    grid, limit = json.loads(sys.stdin.read())
    start = time.perf_counter()
    for moves in heuristic_search(Board(grid)):
        print(json.dumps({"clicks": moves, "seconds": time.perf_counter() - start}), flush=True)
    print(json.dumps({"done": True, "seconds": time.perf_counter() - start}), flush=True)
""")

OURS = textwrap.dedent("""
    import json, sys, time
    import jaxdust
    from jaxdust.solver.api import TranspositionTable
    text, width, height, limit, bits = json.loads(sys.stdin.read())
    board = jaxdust.parse_board(text, width, height, rules="former")
    jaxdust.solve(jaxdust.parse_board("1" * 4, 2, 2), rules="former")  # compile outside the clock
    start = time.perf_counter()
    solution = jaxdust.solve(board, limit, rules="former", table=TranspositionTable(22, bits))
    print(json.dumps({"clicks": [list(c) for c in solution.clicks], "optimal": solution.optimal,
                      "lower_bound": solution.lower_bound, "seconds": time.perf_counter() - start}))
""")


def to_grid(board: np.ndarray) -> list[list[int]]:
    """jaxdust's ``[x, y]`` board (y = 0 the bottom row) as tommyod's ``grid[row][col]``, row 0 the top."""
    return np.asarray(board)[:, ::-1].T.tolist()


def from_rowcol(clicks, height: int) -> list[tuple[int, int]]:
    return [(int(j), height - 1 - int(i)) for i, j in clicks]


def clears(board, clicks) -> bool:
    after, _ = jaxdust.replay(board, clicks, rules="former")
    return not np.asarray(after).any()


def pinned(cpu: int, command: list[str]) -> list[str]:
    """``command`` run on core ``cpu`` where ``taskset`` is at hand (Linux), else as it is."""
    return ["taskset", "-c", str(cpu), *command] if shutil.which("taskset") else command


def run_ours(text, width, height, limit, bits, cpu) -> dict:
    result = subprocess.run(pinned(cpu, [sys.executable, "-c", OURS]), capture_output=True, text=True,
                            input=json.dumps([text, width, height, limit, bits]), timeout=limit + 600)
    if result.returncode:
        raise RuntimeError(result.stderr[-2000:])
    found = json.loads(result.stdout.strip().splitlines()[-1])
    return {"length": len(found["clicks"]), "optimal": found["optimal"], "lower_bound": found["lower_bound"],
            "seconds": found["seconds"], "clicks": found["clicks"]}


def run_theirs(grid, height, limit, checkout, cpu) -> dict:
    process = subprocess.Popen(pinned(cpu, [sys.executable, "-c", THEIRS]), cwd=checkout,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = process.communicate(json.dumps([grid, limit]), timeout=limit)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
    else:
        if process.returncode:  # a failure, not a search out of time: nothing to record
            raise RuntimeError(f"tommyod's solver failed (exit status {process.returncode}): {err[-2000:]}")
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    solutions = [line for line in lines if "clicks" in line]
    done = any("done" in line for line in lines)
    best = solutions[-1] if solutions else None
    return {"length": len(best["clicks"]) if best else None, "optimal": done and best is not None,
            "seconds": lines[-1]["seconds"] if done else float(limit),
            "clicks": from_rowcol(best["clicks"], height) if best else None}


def machine_text(found: dict | None) -> str:
    """A row's machine in a few words (rows kept before 0.2.40 did not record it)."""
    if found is None:
        return "not recorded"
    return f"{found['cpu']}, {found['cores']} cores, jaxdust {found['jaxdust']}, numba {found['numba']}"


def checkout_commit(directory: str) -> str | None:
    """The git commit ``directory`` is checked out at (None: not a git checkout)."""
    found = subprocess.run(["git", "-C", directory, "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return found.stdout.strip() or None if found.returncode == 0 else None


def main(argv=None) -> list[dict]:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tommyod", type=flags.input_dir, required=True, help="a checkout of tommyod/NRK-former-game")
    # Checked after the flags: argparse reads a default before it asks for the required --tommyod.
    parser.add_argument("--boards", type=flags.input_file, default=None,
                        help=f"the Former boards (default {DEFAULT_BOARDS}, which fewest_clicks_sets.py "
                             "--former-boards writes)")
    parser.add_argument("--limit", type=flags.positive_int, default=20, help="the file's first N boards")
    parser.add_argument("--time-limit", type=flags.positive_float, default=60.0, help="seconds per board and solver")
    parser.add_argument("--table-bits", type=flags.positive_int, default=28, help="jaxdust's largest table, 2^N entries")
    parser.add_argument("--cpu", type=flags.cpu, default=0, help="the core both solvers run on")
    parser.add_argument("--out", type=flags.output_file, default="results/former_solvers.jsonl")
    args = parser.parse_args(argv)
    if not os.path.exists(os.path.join(args.tommyod, "solvers.py")):
        flags.fail(parser, f"--tommyod: no solvers.py in {args.tommyod}")
    if args.boards is None:
        try:
            args.boards = flags.input_file(DEFAULT_BOARDS)
        except argparse.ArgumentTypeError as error:
            flags.fail(parser, f"--boards: {error}")
    try:
        records = jaxdust.read_board_file(args.boards, limit=args.limit)  # full boards: settled under any rules
    except ValueError as error:
        flags.fail(parser, f"--boards: {error}")
    # Kept rows are reused only from the same code on both sides: a solver change moves them.
    settings = {"time_limit": args.time_limit, "table_bits": args.table_bits, "jaxdust": jaxdust.__version__,
                "tommyod_commit": checkout_commit(args.tommyod)}
    try:
        done = {row["line"]: row for row in files.recover_json_lines(args.out)} if os.path.exists(args.out) else {}
    except (ValueError, KeyError, TypeError) as error:
        flags.fail(parser, f"--out {args.out} is not this benchmark's log ({error!r}): give another --out")
    for record in records:  # rows are reused only for the same board and settings
        row = done.get(record.line)
        if row is not None and (row.get("board") != jaxdust.board_to_text(record.board)
                                or row.get("settings") != settings):  # none kept before 0.2.23: unknown
            flags.fail(parser, f"--out {args.out} holds line {record.line} for another board or other settings "
                               f"({row.get('settings', 'not recorded')}): give another --out")
    rows, measured_on = [], machine.measured_on(jaxdust.__version__)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "a") as log:
        for record in records:
            if record.line in done:
                rows.append(done[record.line])
                continue
            board = np.asarray(record.board)
            width, height = board.shape
            text = jaxdust.board_to_text(board)
            ours = run_ours(text, width, height, args.time_limit, args.table_bits, args.cpu)
            theirs = run_theirs(to_grid(board), height, args.time_limit, args.tommyod, args.cpu)
            for side in (ours, theirs):
                side["clears"] = side["clicks"] is not None and clears(board, [tuple(c) for c in side["clicks"]])
            # Beside the settings, not in them: a kept row from another machine is reused, and named below.
            row = {"line": record.line, "board": text, "settings": settings, "measured_on": measured_on,
                   "ours": ours, "theirs": theirs}
            log.write(json.dumps(row) + "\n")
            log.flush()
            rows.append(row)
            print(f"line {record.line}: ours {ours['length']}{'*' if ours['optimal'] else ''} "
                  f"{ours['seconds']:.1f} s, theirs {theirs['length']}{'*' if theirs['optimal'] else ''} "
                  f"{theirs['seconds']:.1f} s", flush=True)

    both = [r for r in rows if r["ours"]["optimal"] and r["theirs"]["optimal"]]
    disagree = [r["line"] for r in both if r["ours"]["length"] != r["theirs"]["length"]]
    shapes = ", ".join(f"{w}x{h}" for w, h in sorted({tuple(r.board.shape) for r in records}))
    print(f"\nFormer {shapes}, {len(rows)} boards of {args.boards}, {args.time_limit:g} s per board and solver, one core")
    print("| solver | proven optimal | mean length found | solutions clear the board | median s (proven) |")
    print("|---|---:|---:|---:|---:|")
    for side, name in (("ours", "jaxdust.solve(rules='former')"), ("theirs", "tommyod heuristic_search")):
        proven = [r[side]["seconds"] for r in rows if r[side]["optimal"]]
        lengths = [r[side]["length"] for r in rows if r[side]["length"] is not None]
        print(f"| {name} | {len(proven)}/{len(rows)} | {np.mean(lengths) if lengths else float('nan'):.2f} "
              f"({len(lengths)} found) | {sum(r[side]['clears'] for r in rows)}/{len(lengths)} | "
              f"{np.median(proven) if proven else float('nan'):.1f} |")
    print(f"both proven: {len(both)}, lengths disagree on: {disagree or 'none'}")
    machines = sorted({machine_text(r.get("measured_on")) for r in rows})
    print(f"measured on: {'; '.join(machines)}")
    if disagree:
        raise SystemExit(1)
    return rows


if __name__ == "__main__":
    flags.run_command(main, "finished boards are kept in its --out; the same command plays the rest")
