r"""``python -m jaxdust.solver``: shortest solutions of a file of boards, on all cores.

    python -m jaxdust.solver data/boards/optimal_6x6x5.txt --out solutions.jsonl
    echo 335122421413111551154255131234544142315221411124 | python -m jaxdust.solver -

One JSON line per board (its line number, the board, its width and height, the rules,
``dataclasses.asdict(Solution)``), written to ``--out`` as each board ends (on standard
output in the file's order);
an existing ``--out`` file is resumed, boards already in it are skipped (refused if it holds
other boards on those lines, or other rules: another file's results). The rules are
``--rules``, else the file's ``rules=NAME`` header (as ``--board-file`` writes it), else dust. A board that cannot be
solved (malformed, too large) gets a line with its ``error`` and the others are still
solved; the exit status is then 1 (2: the command line or the file cannot be used), and the
next run tries it again. An ``--out`` that is a pipe, a device or ``/dev/stdout`` (even
redirected to a file) is written to and never read back: nothing is resumed from it.

``--retry-unproven`` solves again, under the new limits, the boards whose every line in
``--out`` is unproven, and appends the new line (a board's last line that is no error is its
result; it keeps the shorter solution and the higher bound of the board's earlier lines). A
run without it leaves a retry's saved proofs (``--checkpoint-dir``) in place. A large
set is proven in passes, e.g. 7x9x4 Former boards, three fifths of which are proven
within 10^9 positions (minutes) while the rest need more:

    python -m jaxdust.solver FILE --rules former --node-limit 1000000000 --table-bits 27 --out OUT
    python -m jaxdust.solver FILE --rules former --node-limit 8000000000 --table-bits 28 --out OUT \
        --retry-unproven --checkpoint-dir DIR

``--lines`` picks boards by their line in the file: ``--lines 83 --retry-unproven
--beam-width 16384`` retries one board with a wider first beam, and ``--lines 1-100`` and
``--lines 101-200`` split a set between two machines (their ``--out`` files joined after).

``--checkpoint-dir`` saves each proof in progress (``jaxdust.solve``'s ``checkpoint``: the
search's state and its tables, 2^--table-bits x 12 bytes) every ``--checkpoint-positions``
positions, so that a run killed hours into a proof resumes it where it was last saved. One
run at a time may use a directory.

``--board-file`` also writes the boards proven optimal, with their optimum, as a board file
(``data/boards`` format), e.g. the proven 8x6 set the learners benchmark uses:

    head -n 102 data/boards/eval_8x6x5.txt | python -m jaxdust.solver - --jobs 1 \
        --out results/proven-8x6.jsonl --board-file data/boards/optimal_8x6x5.txt
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import functools
import json
import os
import sys


from jaxdust.core import flags, machine
from jaxdust.core.boards import (board_lines, colour_caps, declared_colours, declared_rules, parse_board, replay,
                                 require_declared_colours, require_header_shape)
from jaxdust.core.processes import WorkerDied, completed_map, ordered_map
from jaxdust.core.files import (atomic_write_bytes, errors_named, is_stream, lock_directory, open_to_append_alone,
                                read_lines, recover_json_lines, remove_leftover_temporaries)
from jaxdust.solver import compiled
from jaxdust.solver.api import (CHECKPOINT_POSITIONS, MAX_BEAM_WIDTH, MAX_TABLE_BITS, TABLE_BITS,
                                TranspositionTable, initial_table_bits, solve)
from jaxdust.core.game import CLICK_RULES, is_done, is_integer
from jaxdust.core.progress import above_bars, note, progress_bar


def checkpoint_path(directory: str | None, number: int) -> str | None:
    """Where the proof of the board on line ``number`` saves its progress."""
    return None if directory is None else os.path.join(directory, f"line-{number}.npz")


def _shown(text: str, limit: int = 200) -> str:
    """A line's text as an error's record keeps it: a board has at most 64 digits, and a
    line of megabytes (a file that is not a board file) would be copied whole."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def _solve_job(job):
    (number, text, width, height, colours, time_limit, node_limit, beam_width, rules, table_bits,
     checkpoint_dir, checkpoint_positions) = job
    try:  # one bad board is reported on its line; the others are still solved
        board = parse_board(text, width, height, rules)
        require_declared_colours(board, colours)
        table = TranspositionTable(min(initial_table_bits(board.size), table_bits), table_bits)
        result = solve(board, time_limit, node_limit=node_limit, beam_width=beam_width, rules=rules, table=table,
                       checkpoint=checkpoint_path(checkpoint_dir, number), checkpoint_positions=checkpoint_positions)
    except ValueError as error:
        return {"line": number, "board": _shown(text), "rules": rules, "error": str(error)}
    except TimeoutError as error:  # --beam-width 0 and out of time: name the flag, not solve's parameter
        return {"line": number, "board": _shown(text), "rules": rules,
                "error": str(error).replace("beam_width > 0", "a --beam-width above 0")}
    except MemoryError:
        saved = checkpoint_path(checkpoint_dir, number)
        return {"line": number, "board": _shown(text), "rules": rules,
                "error": f"out of memory (--beam-width {beam_width}, --table-bits {table_bits}): try smaller ones"
                         + (f", and remove {saved}: a resume keeps its table" if saved and os.path.exists(saved) else "")}
    record = dataclasses.asdict(result)
    record["clicks"] = [list(c) for c in result.clicks]
    width, height = board.shape  # the same digits read at another shape are another board
    return {"line": number, "board": text, "width": width, "height": height, "rules": rules, **record}


def build_parser() -> argparse.ArgumentParser:
    """``python -m jaxdust.solver``'s command line (docs/cli.md shows its ``--help``)."""
    parser = flags.Parser(
        prog="python -m jaxdust.solver", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("boards", type=flags.input_file, help="file of boards in RULES.md text form, or - for stdin")
    parser.add_argument("--width", type=flags.positive_int, default=None,
                        help="the boards' width, for a file with no '# width=W height=H' header")
    parser.add_argument("--height", type=flags.positive_int, default=None, help="the boards' height, likewise")
    parser.add_argument("--time-limit", type=flags.positive_float, default=None, help="seconds per board (default: none, each search runs until its proof)")
    parser.add_argument("--node-limit", type=flags.positive_int, default=None,
                        help="positions per board (default: none; without --time-limit the results are the same on "
                             "any machine)")
    parser.add_argument("--jobs", type=flags.positive_int, default=machine.cpu_cores(),
                        help="processes (default: the cores this process may use)")
    parser.add_argument("--beam-width", type=flags.non_negative_int, default=None,
                        help=f"default: by board size; 0: no initial upper bound (plain iterative deepening); "
                             f"at most {MAX_BEAM_WIDTH:,}")
    parser.add_argument("--rules", choices=CLICK_RULES, default=None,
                        help="rule set (RULES.md); the exact solver plays the fewest-clicks ones (default: the "
                             "file's rules=NAME header, as --board-file writes it, else dust)")
    parser.add_argument("--table-bits", type=flags.positive_int, default=MAX_TABLE_BITS,
                        help=f"the transposition table grows up to 2^N entries of 8 bytes per job, and the "
                             f"half-game table to half as many (default {MAX_TABLE_BITS}: 384 MiB in all); proofs "
                             "of billions of positions (7x9 former) gain from 28; a proof resumed from "
                             "--checkpoint-dir keeps the size it was saved with")
    parser.add_argument("--out", type=flags.output_file_or_stdout, default="-",
                        help="JSON lines output; an existing file is resumed (default -: standard output)")
    parser.add_argument("--retry-unproven", action="store_true",
                        help="solve again the boards of --out that were not proven (larger limits)")
    parser.add_argument("--lines", type=flags.line_ranges, metavar="SPEC",
                        help="solve only the boards on these lines of the file, e.g. 83 or 7,181-202 (with "
                             "--retry-unproven: retry one board at other settings; or split a set between "
                             "machines)")
    parser.add_argument("--board-file", type=flags.output_file,
                        help="also write the boards proven optimal and their optimum here (needs --out FILE; it "
                             "replaces a file of proven boards it wrote, and refuses one listing boards it would not: another "
                             "set's or size's, or boards --out does not prove; and any other file): the file's proven "
                             "boards of the size solved (--lines picks one size of a file of several)")
    parser.add_argument("--checkpoint-dir", type=flags.output_dir,
                        help="each board in progress saves its proof here (its tables: up to 2^--table-bits x 12 "
                             "bytes) every --checkpoint-positions positions, so a killed run resumes it where "
                             "it was saved; a board's file is removed once its line is written, proven or stopped "
                             "by a limit (needs --out FILE)")
    parser.add_argument("--checkpoint-positions", type=flags.positive_int,
                        help=f"positions between saves (default {CHECKPOINT_POSITIONS:.0e}, minutes on 7x9 boards); each "
                             "save writes the whole table, so well under ~1e6 the saves take longer than the search")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.board_file and args.out == "-":
        flags.fail(parser, "--board-file needs --out FILE")
    if args.board_file:  # it is rewritten whole: the boards to solve, or the log that resumes, would be lost
        for flag, other in (("the board file", args.boards), ("--out", args.out)):
            if other != "-" and _same_file(other, args.board_file):
                flags.fail(parser, f"--board-file {args.board_file} is {flag}: give it another name")
        if not _written_as_proven_boards(args.board_file):
            flags.fail(parser, f"--board-file {args.board_file} holds something other than the proven boards this "
                               "command writes (its second line is not '" + PROVEN_HEADER + "'), which it would "
                               "replace: give another name")
    if args.out != "-" and os.path.exists(args.out) and is_stream(args.out):
        # A pipe, a terminal, a device or /dev/stdout: written to, never read back (no run to resume).
        for flag, given in (("--retry-unproven", args.retry_unproven), ("--checkpoint-dir", args.checkpoint_dir),
                            ("--board-file", args.board_file)):
            if given:
                flags.fail(parser, f"{flag} needs --out FILE, a regular file: {args.out} is a pipe, a device or "
                                   "a descriptor's name")
    if args.retry_unproven and args.out == "-":
        flags.fail(parser, "--retry-unproven needs --out FILE")
    if args.checkpoint_dir and args.out == "-":  # a proof done behind a slower board, its file gone, not yet printed
        flags.fail(parser, "--checkpoint-dir needs --out FILE (the proofs resume from the lines written there)")
    if args.checkpoint_positions is not None and not args.checkpoint_dir:
        flags.fail(parser, "--checkpoint-positions goes with --checkpoint-dir (where the proofs are saved)")
    args.checkpoint_positions = args.checkpoint_positions or CHECKPOINT_POSITIONS
    if args.beam_width is not None and args.beam_width > MAX_BEAM_WIDTH:
        flags.fail(parser, f"--beam-width must be at most {MAX_BEAM_WIDTH:,}, got {args.beam_width:,}")
    if args.table_bits not in TABLE_BITS:
        flags.fail(parser, f"--table-bits must be between 9 and 36 (2^36 entries: 512 GB), got {args.table_bits}")

    source = "standard input" if args.boards == "-" else args.boards
    try:
        lines = read_lines(args.boards, "board file")
        args.rules = args.rules or declared_rules(lines, source)
        if args.rules not in CLICK_RULES:
            raise ValueError(f"{source} declares rules={args.rules}; the exact solver plays {', '.join(CLICK_RULES)}")
        require_header_shape(lines, args.width, args.height, source, given="--width/--height")
        colours = declared_colours(lines, source)  # the header's colors=, a cap on every board's
        caps = colour_caps(lines, source)  # and a lower one a later header gives, on the boards after it
        jobs = [(number, fields[0], width, height)  # (line, board text, shape): one job per board
                for number, fields, width, height in board_lines(lines, args.width, args.height, source)]
        if jobs and jobs[0][1].startswith("{"):  # a JSON-lines file (this command's --out, a ranking set)
            raise ValueError(f"{source}:{jobs[0][0]} is a JSON record, not a board: {source} looks like JSON lines "
                             "(a solver log?), and the solver reads board files (RULES.md text form)")
        every_board = jobs  # --board-file lists the whole file's proven boards, whichever --lines
        if args.lines is not None:
            jobs = _pick_lines(jobs, args.lines, source)
        shapes = {(width, height) for _, _, width, height in jobs}
        if args.board_file and len(shapes) > 1 and all(None not in shape for shape in shapes):
            raise ValueError(f"--board-file needs boards of one size, and the boards to solve are "
                             f"{', '.join(f'{w}x{h}' for w, h in sorted(shapes))} (--lines picks those of one)")
        if len(shapes) == 1 and None not in next(iter(shapes)):
            # Of a file of several sizes, the board file lists the proven boards of the size
            # solved now: those of the others, proven by earlier runs, would make two sizes.
            every_board = [job for job in every_board if (job[2], job[3]) in shapes]
        if args.board_file:  # before any solving: the proven boards of another set or size
            _require_own_proven_boards(args.board_file, every_board, args.rules, source)
    except ValueError as error:
        flags.fail(parser, str(error))
    if not jobs:
        flags.fail(parser, f"no boards in {source}")
    output = sys.stdout
    if args.out != "-":
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        output = open_to_append_alone(args.out)
        if output is None:
            flags.fail(parser, f"another solver run is writing --out {args.out}: let it finish (or stop it; "
                               f"a run resumes), or give this one another --out")
    checkpoint_lock = None
    # Whatever ends this (a refusal, Ctrl-C, a worker's death), --out and --checkpoint-dir
    # are let go at once: a caller that keeps the exception (a notebook) keeps this frame,
    # and a run in the same process must be able to resume.
    try:
        try:
            # checked before the repair, which would first cut another program's torn last line
            previous = recover_json_lines(args.out, check=lambda records: _check_resumable(
                records, jobs, args.rules, args.out)) if args.out != "-" else []
            last = _results(previous)
            done = {line for line, record in last.items()
                    if "error" not in record and (not args.retry_unproven or record.get("optimal"))}
        except ValueError as error:
            flags.fail(parser, str(error))
        todo = [(*job, caps[job[0]], args.time_limit, args.node_limit, args.beam_width, args.rules,
                 args.table_bits, args.checkpoint_dir, args.checkpoint_positions) for job in jobs if job[0] not in done]
        if args.checkpoint_dir:
            # One run at a time: another run's saves in flight are temporary files that this
            # start would delete as a killed run's leftovers.
            checkpoint_lock = lock_directory(args.checkpoint_dir)
            if checkpoint_lock is None:
                flags.fail(parser, f"another solver run is using --checkpoint-dir {args.checkpoint_dir}: give this "
                                   f"one another (several runs of one set may share a directory one after another, "
                                   f"not at once)")
            # Only the saves' own: --checkpoint-dir may be any folder of the user's.
            remove_leftover_temporaries(args.checkpoint_dir, of=r"line-\d+\.npz")
            # Proven, but killed before its progress file was removed. An unproven board's file
            # may be a retry's (--retry-unproven) in progress: it stays for that retry to resume.
            for number in (line for line, record in last.items() if record.get("optimal")):
                _remove_checkpoint(args.checkpoint_dir, number)

        known = _best_facts(previous)
        errors = 0  # this run's: a board whose result is an error is tried again
        workers = min(args.jobs, len(todo))  # one board is solved here: a worker would load the solver a second time
        if workers > 1:
            compiled.compile_searches()  # once, here: the workers then load numba's cache
        # Into a file each line as its board ends (a proof finished behind a slower board is
        # kept if the run stops); on standard output in the file's order.
        spread = ordered_map if output is sys.stdout else completed_map
        written = "standard output" if output is sys.stdout else args.out  # what a refused write names
        with progress_bar(total=len(jobs), initial=len(jobs) - len(todo), unit="board", file=sys.stderr) as bar:
            for record in spread(_solve_job, todo, workers):
                record = _with_earlier_facts(record, known.get(record["line"]))
                if "error" in record:
                    errors += 1
                    note(f"line {record['line']}: {record['error']}")
                # On standard output, on the bar's terminal: above the bar, not onto its line.
                with errors_named(written), above_bars(output):
                    output.write(json.dumps(record) + "\n")
                    output.flush()
                if "error" not in record:  # an error may be the file's own (another board's proof): kept
                    _remove_checkpoint(args.checkpoint_dir, record["line"])
                last[record["line"]] = record
                bar.update()
    except WorkerDied as error:  # the lines written so far are kept
        print(f"{parser.prog}: error: {error}; run again to resume", file=sys.stderr)
        return 1
    finally:
        if checkpoint_lock is not None:
            checkpoint_lock.release()
        if output is not sys.stdout:
            with errors_named(args.out):
                output.close()
    print(_tally([last.get(job[0]) for job in jobs], len(jobs) - len(todo))
          + ("" if args.out == "-" else f"; lines in {args.out}"), file=sys.stderr)
    if args.board_file:
        write_proven(recover_json_lines(args.out, repair=False), every_board, args.board_file, args.rules,
                     parser.prog, checked={job[0] for job in jobs}, colors=colours)
    return 1 if errors else 0


def _results(records: list[dict]) -> dict[int, dict]:
    """Each line's result in ``--out``: its last record that is not an error (a retry appends
    one, the earlier line stays as history), else its last error (a flag, a limit, the
    board: tried again by the next run). A retry that failed leaves the earlier result."""
    results: dict[int, dict] = {}
    for record in records:
        if "error" not in record or "error" in results.get(record["line"], record):
            results[record["line"]] = record
    return results


def _tally(results: list[dict | None], earlier: int) -> str:
    """One line on the boards' last records: how many are proven optimal, not proven, errors."""
    proven = sum(1 for r in results if r and r.get("optimal"))
    failed = sum(1 for r in results if r and "error" in r)
    before = f", {earlier} of them done by an earlier run" if earlier else ""
    return (f"{len(results)} board{'s' if len(results) != 1 else ''}{before}: {proven} proven optimal, "
            f"{len(results) - proven - failed} not proven, {failed} error{'s' if failed != 1 else ''}")


def _best_facts(records) -> dict[int, dict]:
    """Per line, the shortest solution and the highest lower bound its lines in ``--out``
    hold (``length``, ``clicks``, ``lower_bound``)."""
    best: dict[int, dict] = {}
    for record in records:
        if "error" not in record and "length" in record:
            best[record["line"]] = _with_earlier_facts(record, best.get(record["line"]))
    return best


def _with_earlier_facts(record: dict, earlier: dict | None) -> dict:
    """A retried board's new record, keeping what an earlier line proved where that was more
    (a shorter solution, a higher bound: both stay true, whatever limits found them), so a
    retry under weaker limits does not make its result worse."""
    if earlier is None or "error" in record:
        return record
    merged = dict(record)
    if earlier["length"] < merged["length"]:
        merged["length"], merged["clicks"] = earlier["length"], earlier["clicks"]
    merged["lower_bound"] = max(merged["lower_bound"], earlier["lower_bound"])
    merged["optimal"] = merged["length"] == merged["lower_bound"]
    return merged


def _pick_lines(jobs, ranges, source):
    """The jobs on ``ranges``' lines (``flags.line_ranges``), in file order, each once;
    ValueError for a line or a range that holds no board, which is a mistake, not a request
    for nothing. ``jobs`` are in file order, so each range is two bisections: a list of
    thousands of lines costs no pass over the file's boards per line."""
    numbers = [job[0] for job in jobs]
    picked = set()
    for low, high in ranges:
        start, stop = bisect.bisect_left(numbers, low), bisect.bisect_right(numbers, high)
        if start == stop:
            where = f"line {low}" if low == high else f"lines {low}-{high}"
            raise ValueError(f"--lines: no board on {where} of {source}")
        picked.update(range(start, stop))
    return [jobs[index] for index in sorted(picked)]


PROVEN_HEADER = "# board optimal_clicks (proven by python -m jaxdust.solver"  # write_proven's second line


def _written_as_proven_boards(path: str) -> bool:
    """Whether ``path`` is no regular file (missing, or a device the write names), an empty
    one or a board file ``write_proven`` wrote (which a run may replace)."""
    if not os.path.isfile(path):  # a FIFO would block a read
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).split(b"\n")
    except OSError:  # unreadable: the write says whether it can replace it
        return True
    return head == [b""] or (len(head) > 1 and head[1].startswith(PROVEN_HEADER.encode()))


def _same_file(a: str, b: str) -> bool:
    """One file under two names (links, or case on a case-insensitive disk), or one path."""
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def _check_resumable(previous, jobs, rules, out):
    """ValueError unless every record of ``--out`` is a solver result whose board, shape
    and rules are the ones on its line now, and whose result replays (``_unsound``):
    resuming another file's results, another shape's or another rule set's, would skip
    boards and report their lengths as this file's. An error's line is left out (its board
    may have been mended since)."""
    boards = {number: (text, width, height) for number, text, width, height in jobs}
    for index, record in enumerate(previous, start=1):
        if not isinstance(record.get("line"), int) or not isinstance(record.get("board"), str):
            raise ValueError(f"--out {out}:{index} is not a solver result (no line number and board); "
                             "is it a file this program wrote? (nothing was changed)")
        number = record["line"]
        if "error" in record or number not in boards:
            continue
        text = boards[number][0]
        if "width" in record:  # lines written before 0.2.23 carry no shape
            shape = _shape_read(*boards[number], record.get("rules", rules))
            if shape is not None and shape != (record["width"], record["height"]):
                raise ValueError(f"--out {out}:{index} solved line {number}'s board at {record['width']}x"
                                 f"{record['height']}, it is read at {shape[0]}x{shape[1]} now (--width, "
                                 f"--height or the file's header): use another --out")
        if text != record["board"]:
            raise ValueError(f"--out {out}:{index} holds another board for line {number} ({record['board']}, "
                             f"the file has {text}): the results of another board file? "
                             "use another --out")
        if record.get("rules", rules) != rules:  # lines written before 0.2.21 carry no rules
            raise ValueError(f"--out {out}:{index} was solved under --rules {record['rules']}, not {rules}: "
                             "use another --out")
        problem = _unsound(record, *boards[number][1:], rules)
        if problem:
            raise ValueError(f"--out {out}:{index} (line {number}): {problem}; was it edited by hand? mend or "
                             f"delete that line (the board is then solved again)")


def _unsound(record: dict, width: int | None, height: int | None, rules: str) -> str | None:
    """What is wrong with a result line of ``--out``, or None: its clicks must clear its
    board in its length, and its bound and ``optimal`` must agree with the length. The
    solver writes only such lines; one edited by hand would be skipped on resume and listed
    by ``--board-file`` as proven."""
    try:
        length, bound = record["length"], record["lower_bound"]
        if not (is_integer(length) and is_integer(bound)):  # int() would read 2.5 as 2
            raise TypeError(f"its length {length!r} and lower bound {bound!r} are not both integers")
        board = parse_board(record["board"], width, height, rules)
        final, played = replay(board, [tuple(click) for click in record["clicks"]], rules, wasted=True)
    except (KeyError, TypeError, ValueError, OverflowError) as error:  # no such field, not integers or pairs, off the board
        return f"its result cannot be read ({type(error).__name__}: {error})"
    if not bool(is_done(final)) or played != length:
        outcome = "do not clear the board" if not bool(is_done(final)) else f"take {played}"
        return f"its clicks {outcome}, where its length is {length}"
    if not 0 <= bound <= length or bool(record.get("optimal")) != (bound == length):
        return f"its lower bound {bound}, length {length} and optimal={record.get('optimal')} disagree"
    return None


def _remove_checkpoint(directory: str | None, number: int) -> None:
    path = checkpoint_path(directory, number)
    if path is not None and os.path.exists(path):
        os.unlink(path)


@functools.cache
def _shape_read(text: str, width: int | None, height: int | None, rules: str) -> tuple[int, int] | None:
    """The shape board ``text`` is read at with the file's ``width`` and ``height`` (None
    where it cannot be read: its own error comes when it is solved)."""
    try:
        board_width, board_height = parse_board(text, width, height, rules).shape
        return board_width, board_height
    except ValueError:
        return None


def _solved_shape(record: dict, shape: tuple, rules: str) -> bool:
    """Whether ``record`` solved its board at the shape the file reads it at now (records
    written before 0.2.23 carry no shape: taken as read)."""
    return "width" not in record or _shape_read(record["board"], *shape, rules) == (record["width"], record["height"])


def _kept_proven_boards(path: str) -> tuple[str | None, list]:
    """The rules and the ``board_lines`` of the proven boards file ``path`` holds (none where
    it holds none, or cannot be read as a board file: the header check says what it may
    replace)."""
    if not os.path.isfile(path):
        return None, []
    try:
        lines = read_lines(path, "board file")
        return declared_rules(lines, path), list(board_lines(lines, None, None, path))
    except (ValueError, OSError):
        return None, []


def _require_own_proven_boards(path: str, jobs, rules: str, source: str) -> None:
    """ValueError where the proven boards already in ``path`` are not all among ``jobs``
    (the boards the file lists now) under ``rules``: rewritten, the file would lose them
    (another set's proven boards, as the shipped ones, given to a run of other boards)."""
    kept_rules, kept = _kept_proven_boards(path)
    shapes: dict[str, set] = {}
    for _, text, width, height in jobs:
        shapes.setdefault(text, set()).add((width, height))
    for number, fields, width, height in kept:  # a shape unknown on either side is taken as the same
        among = any(all(None in pair or pair[0] == pair[1] for pair in ((width, w), (height, h)))
                    for w, h in shapes.get(fields[0], ()))
        if kept_rules != rules or not among:
            raise ValueError(f"--board-file {path} holds proven boards that are not among those of {source} "
                             f"solved now (under rules {rules}, at their size; the first on its line {number}): "
                             "this run would lose them: give another name (or remove the file)")


def write_proven(records, jobs, path, rules: str = "dust", prog: str = "python -m jaxdust.solver",
                 checked=frozenset(), colors: int | None = None) -> None:
    """The boards of ``jobs`` whose record proves them optimal, in input order, as a board file.
    A record counts for its line only where it holds that line's board under ``rules`` (an
    ``--out`` checked for the lines solved now may hold other lines of another file); one
    of a line not in ``checked`` (the lines the resume checked or solved) is replayed first
    (``_unsound``). ``prog``: the command, as its errors name it. ``colors``: the input's
    declared ``colors=``, kept in the header; else the proven boards' largest colour (at
    least 1, which the header takes)."""
    shapes = {number: (width, height) for number, _, width, height in jobs}
    texts = {number: text for number, text, _, _ in jobs}
    proven = sorted({r["line"]: r for r in records
                     if r.get("optimal") and texts.get(r["line"]) == r["board"] and r.get("rules", rules) == rules
                     and _solved_shape(r, shapes[r["line"]], rules)}.values(), key=lambda r: r["line"])
    if not proven:
        raise SystemExit(f"{prog}: error: no board was proven optimal; --board-file not written")
    sizes = {parse_board(r["board"], *shapes[r["line"]], rules).shape for r in proven}
    if len(sizes) > 1:
        raise SystemExit(f"{prog}: error: --board-file needs boards of one size, got {sorted(sizes)}")
    (width, height), = sizes
    for record in (r for r in proven if r["line"] not in checked):  # lines --lines left out
        problem = _unsound(record, *shapes[record["line"]], rules)
        if problem:
            raise SystemExit(f"{prog}: error: --out's result for line {record['line']}: {problem}; was it edited "
                             f"by hand? mend or delete that line (--board-file not written)")
    # Boards of the file's that --out does not prove (a new --out, limits that stopped a proof).
    proven_texts = {record["board"] for record in proven}  # once: a set a kept board was quadratic
    lost = [number for number, fields, _, _ in _kept_proven_boards(path)[1] if fields[0] not in proven_texts]
    if lost:
        raise SystemExit(f"{prog}: error: --board-file {path} lists {len(lost)} proven board{'s' if len(lost) > 1 else ''} "
                         f"that --out does not prove (the first on its line {lost[0]}), which it would lose: not "
                         "written; give --out the log that proved them, or another --board-file")
    colors = colors or max(1, max(int(c) for r in proven for c in r["board"]))
    rules_field = "" if rules == "dust" else f" rules={rules}"  # boards.declared_rules reads it
    header = (f"# width={width} height={height} colors={colors}{rules_field}; cells listed x-major: cell (x,y) is character "
              f"x*{height}+y, y=0 bottom row\n{PROVEN_HEADER}{'' if rules == 'dust' else ' --rules ' + rules})\n")
    atomic_write_bytes(path, (header + "".join(f"{r['board']} {r['length']}\n" for r in proven)).encode())


INTERRUPTED = "with --out, the same command goes on from the boards solved (and, with --checkpoint-dir, from the proof under way)"


def run() -> None:
    """The installed command's entry point (``jaxdust-solve``): exits with ``main``'s status."""
    raise SystemExit(flags.run_command(main, INTERRUPTED))


if __name__ == "__main__":  # python -m jaxdust.solver.cli
    run()
