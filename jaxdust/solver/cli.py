"""``python -m jaxdust.solver``: shortest solutions of a file of boards, on all cores.

    python -m jaxdust.solver data/boards/optimal_6x6x5.txt --out solutions.jsonl
    echo 335122421413111551154255131234544142315221411124 | python -m jaxdust.solver -

One JSON line per board (its line number, the board, ``dataclasses.asdict(Solution)``); an
existing ``--out`` file is resumed, boards already in it are skipped. ``--board-file`` also
writes the boards proven optimal, with their optimum, as a board file (``data/boards``
format), e.g. the proven 8x6 set the learners benchmark uses:

    head -n 102 data/boards/eval_8x6x5.txt | python -m jaxdust.solver - --jobs 1 \
        --out results/proven-8x6.jsonl --board-file data/boards/optimal_8x6x5.txt
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import sys

from tqdm import tqdm

from jaxdust.core.boards import header_shape, parse_board
from jaxdust.core.files import atomic_write_bytes, recover_json_lines
from jaxdust.solver.api import solve


def _read_jobs(lines, width, height):
    """``(line_number, text, width, height)`` per board line; comments may set the shape."""
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if text.startswith("#"):
            header_width, header_height = header_shape(text)
            width, height = width or header_width, height or header_height
            continue
        if text:
            yield number, text.split()[0], width, height


def _solve_job(job):
    number, text, width, height, time_limit, beam_width = job
    try:
        board = parse_board(text, width, height)
    except ValueError as error:
        return {"line": number, "board": text, "error": str(error)}
    result = solve(board, time_limit, beam_width=beam_width)
    record = dataclasses.asdict(result)
    record["clicks"] = [list(c) for c in result.clicks]
    return {"line": number, "board": text, **record}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jaxdust.solver", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("boards", help="file of boards in RULES.md text form, or - for stdin")
    parser.add_argument("--width", type=int, default=None)
    parser.add_argument("--height", type=int, default=None)
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per board")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="processes (default: all cores)")
    parser.add_argument("--beam-width", type=int, default=None, help="default: by board size")
    parser.add_argument("--out", default="-", help="JSON lines output; an existing file is resumed")
    parser.add_argument("--board-file", help="also write the boards proven optimal and their optimum here")
    args = parser.parse_args(argv)

    if args.boards == "-":
        lines = sys.stdin.read().splitlines()
    else:
        if not os.path.exists(args.boards):
            parser.exit(2, f"python -m jaxdust.solver: error: no such file: {args.boards}\n")
        with open(args.boards) as handle:
            lines = handle.read().splitlines()
    jobs = list(_read_jobs(lines, args.width, args.height))
    done = {record["line"] for record in recover_json_lines(args.out)} if args.out != "-" else set()
    todo = [(*job, args.time_limit, args.beam_width) for job in jobs if job[0] not in done]

    if args.board_file and args.out == "-":
        parser.exit(2, "python -m jaxdust.solver: error: --board-file needs --out FILE\n")
    output = sys.stdout if args.out == "-" else open(args.out, "a")
    errors = 0
    context = multiprocessing.get_context("spawn")  # workers must not inherit JAX's threads
    try:
        with context.Pool(max(1, args.jobs)) as pool, tqdm(
            total=len(jobs), initial=len(jobs) - len(todo), unit="board", file=sys.stderr, disable=None,
        ) as bar:
            for record in pool.imap(_solve_job, todo):
                if "error" in record:
                    errors += 1
                    print(f"line {record['line']}: {record['error']}", file=sys.stderr)
                output.write(json.dumps(record) + "\n")
                output.flush()
                bar.update()
    finally:
        if output is not sys.stdout:
            output.close()
    if args.board_file:
        write_proven(recover_json_lines(args.out), jobs, args.board_file)
    return 1 if errors else 0


def write_proven(records, jobs, path) -> None:
    """The boards of ``jobs`` whose record proves them optimal, in input order, as a board file."""
    shapes = {number: (width, height) for number, _, width, height in jobs}
    proven = sorted((r for r in records if r.get("optimal") and r["line"] in shapes), key=lambda r: r["line"])
    if not proven:
        raise SystemExit("python -m jaxdust.solver: error: no board was proven optimal; --board-file not written")
    sizes = {parse_board(r["board"], *shapes[r["line"]]).shape for r in proven}
    if len(sizes) > 1:
        raise SystemExit(f"python -m jaxdust.solver: error: --board-file needs boards of one size, got {sorted(sizes)}")
    (width, height), = sizes
    colors = max(int(c) for r in proven for c in r["board"])
    header = (f"# width={width} height={height} colors={colors}; cells listed x-major: cell (x,y) is character "
              f"x*{height}+y, y=0 bottom row\n# board optimal_clicks (proven by python -m jaxdust.solver)\n")
    atomic_write_bytes(path, (header + "".join(f"{r['board']} {r['length']}\n" for r in proven)).encode())
