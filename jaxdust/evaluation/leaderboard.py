"""The fewest-clicks leaderboard (installed as ``jaxdust-leaderboard``; in the repository also
``python benchmarks/leaderboard.py``): every agent scored on a benchmark set by
``benchmark.score``.

    jaxdust-leaderboard                                       # 8x6x5, the default entries
    jaxdust-leaderboard --runs avi=results/learners/avi,dqn=results/learners/dqn
    jaxdust-leaderboard --set 6x6x5 --entries random,largest,dfs,beam:64,solver:300

Each learner run adds four rows: its policy alone (the argmax of its output, no
simulation), and beam search on its value at widths 1 (greedy), 8 and 64; a fifth, Gumbel
MuZero with 64 simulations, for learners with a policy and a value. Each row is kept in a
folder ``leaderboard/`` beside the report as soon as it is measured, so an interrupted run
resumes (``--fresh`` measures again; so does another version of jaxdust, and a learner's row
once its run has trained again; a second call on the same boards is refused while one
measures them). The
exact solver's row on the 1000-board set comes from the log of the run that made the set
(``--solver-log``; re-solving all 1000 boards takes an hour on two cores).
Prints the table in markdown and writes ``results/leaderboard-<set>.json`` (or ``--out``).

``--env ID`` ranks agents on a registered environment's rules and size instead, on
``--boards`` seeded random boards (100 by default): SameGame by mean points, Clickomania by
mean cells left, Former (and the dust ids) by mean clicks. Rows are kept and resumed the
same way; the report is ``results/leaderboard-<ID>.json``. ``--size RULES:WxHxC`` does the
same at a size no id registers (``results/leaderboard-size-former-6x6x4.json``); an id and
``--size`` of its rules and size share their kept rows (with reports in one folder):

    jaxdust-leaderboard --env SameGame-15x15x5-v0 --entries largest,beam:16,cpu-beam:256,nmcs:1
    jaxdust-leaderboard --env Former-7x9x4-v0 --runs avi=runs/avi-former
    jaxdust-leaderboard --size former:6x6x4 --entries largest,beam:64,solver:5
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import sys
import time
from typing import Callable

import jax
import numpy as np

from jaxdust import __version__
from jaxdust.core import compile_cache, configs, files, flags, game, machine
from jaxdust.core.progress import progress_bar
from jaxdust.evaluation import benchmark, registry, stats
from jaxdust.learn.runs import fingerprint, read_run_config

DEFAULT_ENTRIES = "random,largest,dfs,beam:1,beam:8,beam:64,cpu-beam:2000"
FAMILY_ENTRIES = {"clicks": "random,largest,beam:1,beam:64,cpu-beam:2000",
                  "points": "random,largest,beam:16,cpu-beam:256,nmcs:1"}
FAMILY_ENTRIES["cells_left"] = FAMILY_ENTRIES["points"]
LABELS = {"random": "random legal click", "largest": "largest cluster first",
          "dfs": "original post's DFS ({:,} positions)", "beam": "JAX beam, tuned heuristic, width {}",
          "cpu-beam": "numba beam, tuned heuristic + lookahead, width {}", "solver": "exact solver, {:g} s per board"}


# A short set's times are mostly its programs compiling (146 ms a board on 10 boards, 2 ms on 1000).
TIMING_NOTE = "(time per board: the agent's wall time over these boards, its compilation included)"


def describe(entry: str) -> str:
    """A row's name, with the agent's setting as it will be played (its default if none)."""
    agent, settings = registry.parse_agent(entry)
    return LABELS[agent.name].format(settings) if agent.name in LABELS else entry


def _env_id(text: str) -> str:
    """An argparse type: a registered environment's id, checked (``configs.env_flag``)."""
    configs.env_flag(text)
    return text


def learner_entries(label: str, run: str, rules: str = "dust") -> list[tuple[str, str]]:
    entries = [(f"policy:{run}", f"{label}, its policy alone (argmax, no simulation)"),
               (f"value:{run}:1", f"{label}, greedy on its value (width 1)"),
               (f"value:{run}:8", f"{label}, beam on its value, width 8"),
               (f"value:{run}:64", f"{label}, beam on its value, width 64")]
    try:
        learner, config = read_run_config(registry.split_run(run)[0])  # RUN or RUN@newest
    except ValueError:  # the entries' check below says what is wrong, in one line
        return entries
    if learner.evaluator(config) is not None and rules in registry.AGENTS["mcts"].rules:
        entries.append((f"mcts:{run}:64", f"{label}, Gumbel MuZero on its policy and value, 64 simulations"))
    return entries


def solver_row(records: list[dict], board_set: benchmark.BoardSet) -> benchmark.Row:
    """The solver's row from its log's records of the set's boards (in the set's order):
    its lines are replayed, as every solver's are, and must be as long as the log says.
    ValueError otherwise."""
    _, width, height = board_set.boards.shape
    clicks, cleared = benchmark.replayed_lengths(board_set.boards, [r["clicks"] for r in records], width * height,
                                                 what="the solver log", rules=board_set.rules)
    for index, (record, length, done) in enumerate(zip(records, clicks, cleared)):
        if not done or length != record["length"]:
            raise ValueError(f"the solver log's line for the board of index {index} ({record['board']}) does not "
                             f"clear it in the {record['length']} clicks it claims")
    proven = np.mean([r["optimal"] for r in records])
    return benchmark.row(f"exact solver (proven optimal: {proven:.1%})", board_set, clicks, cleared,
                         sum(r["seconds"] for r in records))


def _board_count(text: str) -> int:
    """``--boards``: a count; a file, as ``evaluate.py --boards`` takes, is told where the sets come from."""
    try:
        return flags.positive_int(text)
    except argparse.ArgumentTypeError as error:
        if os.path.isfile(text):
            raise argparse.ArgumentTypeError(f"{error}: a count of random boards here (the board files ranked on "
                                             "are the --set ones; evaluate.py --boards FILE plays a file)") from None
        raise


def build_parser() -> argparse.ArgumentParser:
    """``jaxdust-leaderboard``'s command line (docs/cli.md shows its ``--help``)."""
    parser = flags.Parser(prog="jaxdust-leaderboard", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    boards_from = parser.add_mutually_exclusive_group()
    boards_from.add_argument("--set", default="8x6x5", choices=benchmark.SIZES,
                             help="fewest-clicks board set (default 8x6x5: 1000 boards with proven optima)")
    boards_from.add_argument("--env", type=_env_id, default=None, metavar="ID",
                             help="rank on a registered environment's rules and size (random boards)")
    boards_from.add_argument("--size", type=configs.size_flag, default=None, metavar="WxHxC",
                             help="rank on random boards of this size: RULES:WxHxC (former:6x6x4), or WxHxC for "
                                  "the dust game's")
    parser.add_argument("--boards", type=_board_count, default=None,
                        help="with --env or --size: random boards played (default 100)")
    parser.add_argument("--entries", default=None,
                        help=f"agents as evaluate.py names them ('' for none; default {DEFAULT_ENTRIES}, "
                             "with --env or --size by the rules' measure: "
                             + "; ".join(f"{measure.replace('_', ' ')}: {entries}"
                                         for measure, entries in FAMILY_ENTRIES.items())
                             + "; less those the boards or this machine's memory rule out: cpu-beam past its "
                               "64 cells, and any at --jobs that would not fit)")
    parser.add_argument("--runs", default="", help="LABEL=RUN_DIR,... learner runs (four or five rows each)")
    parser.add_argument("--solver-log", type=flags.input_file, default=None,
                        help="JSON lines of python -m jaxdust.solver --time-limit 300 on the set's boards")
    parser.add_argument("--limit", type=flags.positive_int, default=None,
                        help="with --set: the set's first N boards only")
    parser.add_argument("--jobs", type=flags.positive_int, default=machine.cpu_cores(),
                        help="processes for CPU solvers (default: the cores this process may use, %(default)s here)")
    parser.add_argument("--seed", type=flags.seed, default=0, help="seed of the agents' randomness and of the random "
                        "boards of --env or --size (default 0)")
    parser.add_argument("--fresh", action="store_true", help="measure every row again")
    parser.add_argument("--out", type=flags.output_file, default=None,
                        help="JSON report (default results/leaderboard-<set>.json, -<ID>.json with --env, "
                             "-size-<RULES>-<WxHxC>.json with --size)")
    return parser


def main(argv=None) -> dict:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Random boards of a registered id's, or of --size's, rules and size: named by the id or
    # the size in rows and files; else the --set.
    config = configs.env_flag(args.env) if args.env is not None else args.size
    target = args.env or (args.size.size_spec if args.size is not None else None)
    if config is None and args.boards is not None:
        parser.error("--boards: only with --env or --size (random boards); --limit takes the set's first N boards")
    if config is not None and args.limit is not None:
        parser.error("--limit: only with --set; --boards sets how many random boards --env or --size plays")
    if args.solver_log == "-":  # read as a missing file: no boards
        parser.error("--solver-log: a file (standard input is not read here)")
    if config is not None and args.solver_log is not None:
        parser.error("--solver-log: only with --set (the log of the set's own boards); --env and --size play "
                     "random boards")
    args.boards = args.boards or 100
    rules = "dust" if config is None else config.rules
    measure = game.rules_of(rules).objective  # "clicks", "points" or "cells_left", as run_agent names them
    if args.entries is None:
        args.entries = DEFAULT_ENTRIES if config is None else FAMILY_ENTRIES[measure]
        if config is not None:  # the defaults that fit the id's boards (the numba beam's bitboards hold 64 cells)
            args.entries = ",".join(entry for entry in args.entries.split(",")
                                    if _fits(entry, config, args.boards, args.jobs))

    board_set = None
    if config is None:  # its boards' size is what the runs must fit
        try:
            board_set = benchmark.load_set(args.set, limit=args.limit)
            flags.note_short_limit(args.limit, len(board_set.boards), f"the set {board_set.name}")
        except ValueError as error:
            parser.error(f"--set: {error}")
    runs, labels = [], set()
    for item in filter(None, (item.strip() for item in args.runs.split(","))):
        label, equals, run = (part.strip() for part in item.partition("="))
        if not equals or not label or not run:
            parser.error(f"--runs: {item!r} is not LABEL=RUN_DIR")
        if label in labels:  # its rows would be told apart by nothing
            parser.error(f"--runs: the label {label!r} is given twice")
        labels.add(label)
        runs += learner_entries(label, run, rules)
    names = [name.strip() for name in args.entries.split(",")] if args.entries else []
    if names or runs:
        try:  # every agent checked (a run directory read) before the first plays
            checked = registry.parse_agent_list(",".join(names + [entry for entry, _ in runs]), rules)
            if config is not None:
                count, width, height, colours = args.boards, config.width, config.height, config.colors
            else:
                assert board_set is not None  # no --env or --size: a set was loaded
                (count, width, height), colours = board_set.boards.shape, int(np.max(board_set.boards))
            registry.require_playable(checked, rules, width, height, colours, boards=count, jobs=args.jobs)
        except ValueError as error:
            parser.error(f"--entries/--runs: {error}")
    elif not args.solver_log:
        # --solver-log ranks a set's own boards: with --env or --size only --runs remains.
        parser.error("nothing to rank: --entries '' needs --runs" + (" or --solver-log" if config is None else ""))
    # The labels describe the dust game's agents; on another rule set an entry is its own name.
    entries = [(name, describe(name) if config is None else name) for name in names] + runs
    sources = run_sources([entry for entry, _ in entries])
    if config is not None:
        assert target is not None  # --env or --size gave config
        return family_leaderboard(parser, args, target, config, entries, measure, sources)
    assert board_set is not None
    solver = None
    if args.solver_log:  # checked before any agent plays
        try:
            records = benchmark.solver_log_records(args.solver_log, board_set.boards, board_set.rules)
            solver = solver_row(records, board_set)
        except ValueError as error:
            parser.error(f"--solver-log: {error}")

    # Rows are kept per set version, board count and seed; a kept row is checked against them.
    out = args.out or os.path.join("results", f"leaderboard-{args.set}.json")
    if args.solver_log and os.path.exists(out) and os.path.samefile(out, args.solver_log):
        parser.error(f"--out {out} is --solver-log: the report would replace the log; give the report another name")
    _require_report_or_nothing(parser, out)
    cache = os.path.join(_rows_dir(out), board_set.name.replace(" ", "-") + f"-{len(board_set.boards)}"
                         f"-seed{args.seed}")
    with _rows_folder_alone(parser, cache):
        rows, reused = _kept_or_measured(
            parser, args.fresh, entries, cache, sources, benchmark.Row,
            lambda kept: (kept.set, kept.boards) == (board_set.name, len(board_set.boards)),
            lambda entry, label: benchmark.score(entry, board_set, name=label, seed=args.seed, jobs=args.jobs,
                                                 show=False))
    if solver is not None:
        rows.append(solver)
    rows.sort(key=lambda r: (r.mean_clicks, r.seconds_per_board))  # best first
    hardware = machine.cpu_description()
    print(f"\nFewest clicks on set {board_set.name} ({len(board_set.boards)} boards, "
          f"{board_set.proven.mean():.1%} with a proven optimum, mean {board_set.best.mean():.3f}; {hardware})")
    print(benchmark.Row.HEADER)
    for scored in rows:
        print(scored.markdown())
    print(TIMING_NOTE)
    if solver is not None:
        print("(the exact solver's row: --solver-log's own solve seconds a board, one core each, no compiling)")
    _say_reused(reused, cache)
    report = {"benchmark": "leaderboard", "set": board_set.name, "boards": len(board_set.boards),
              "optimum_mean": float(board_set.best.mean()), "hardware": hardware,
              "measured_on": machine.measured_on(__version__), "seed": args.seed, "jaxdust": __version__,
              "rows": [dataclasses.asdict(scored) for scored in rows], "kept": reused,
              "played": played_by(entries, sources), "solver_log": args.solver_log}
    files.atomic_write_json(out, report)
    print(f"wrote {out}")
    return report


def played_by(entries: list[tuple[str, str]], sources: dict[str, str]) -> dict[str, dict]:
    """Each row's label with the entry that played it (``evaluate.py``'s name for the
    agent, a run's path in it) and, for a learner's run, the run's ``fingerprint``: what
    made each row of a report, which a label alone does not say."""
    return {label: {"entry": entry, **({"run_fingerprint": sources[entry]} if entry in sources else {})}
            for entry, label in entries}


@dataclasses.dataclass(frozen=True)
class FamilyRow:
    """One agent's score on an environment's random boards, in the rule set's own measure."""

    agent: str
    env: str
    boards: int
    measure: str  # "points" (higher is better), "cells_left" or "clicks" (lower is better)
    mean: float
    cleared: float  # share of boards cleared
    seconds_per_board: float
    se: float = float("nan")  # the mean's standard error

    UNDEFINED_AT_TIMES = ("se",)  # nan on one board
    HEADER = "| agent | mean {} (+- se) | cleared | time per board |\n|---|---:|---:|---:|"

    def markdown(self) -> str:
        digits = {"clicks": ".3f", "cells_left": ".2f"}.get(self.measure, ".1f")  # points: .1f
        mean = benchmark.with_error(self.mean, self.se, digits)
        return f"| {self.agent} | {mean} | {self.cleared:.1%} | {benchmark.timing(self.seconds_per_board)} |"


def _require_report_or_nothing(parser, out: str) -> None:
    """Refuse an ``--out`` that is a regular file other than a leaderboard's report (a board
    file, another command's JSON): the report would replace it, after all the play. Refuse
    a pipe, a device or ``/dev/stdout`` (the rows are kept in a folder beside the report)
    and a report named as that folder, before any play."""
    if os.path.abspath(out) == os.path.abspath(_rows_dir(out)):
        parser.error(f"--out {out} is the folder the report's rows are kept in ({_rows_dir(out)}, beside the "
                     f"report): give the report another name, such as {out}.json")
    if os.path.exists(out) and files.is_stream(out):
        parser.error(f"--out {out} is a pipe, a device or a descriptor: the leaderboard keeps its rows in a folder "
                     f"beside its report, so give it a file")
    try:
        flags.report_file("leaderboard")(out)
    except argparse.ArgumentTypeError as error:
        parser.error(f"--out: {error}")


@contextlib.contextmanager
def _rows_folder_alone(parser, cache: str):
    """Make the folder the rows are kept in and hold its lock while the rows are measured,
    before any play: one that cannot be made (a file in its place, no permission) failed in
    a traceback once the first agent had played, and two calls on the same boards measured
    every row twice, each at about half speed, and kept the contended times for later calls."""
    try:
        lock = files.lock_directory(cache)
    except OSError as error:
        if not os.path.isdir(cache):
            parser.error(f"--out: the rows are kept in {cache}, which cannot be made ({error.strerror or error}): "
                         "give the report another folder")
        # A folder kept read-only (a copy of someone's rows): its rows are read, none kept.
        print(f"warning: the rows are kept in {cache}, which cannot be written ({error.strerror or error}): its "
              "rows are reused, new ones are not kept", file=sys.stderr)
        lock = None
    else:
        if lock is None:
            parser.error(f"--out: another leaderboard is measuring these boards' rows (it holds "
                         f"{os.path.join(cache, files.LOCK_FILE)}); wait for it to end, then its rows are reused")
    try:
        yield
    finally:
        if lock is not None:
            lock.release()


def run_sources(entries: list[str]) -> dict[str, str]:
    """Each entry that plays a learner's run (from ``--runs`` or named in ``--entries``),
    with the run's ``fingerprint``: a kept row of it stands only while the run does."""
    runs = {entry: run for entry in entries if (run := registry.run_of(entry)) is not None}
    fingerprints = {run: fingerprint(run) for run in set(runs.values())}  # once a run
    return {entry: fingerprints[run] for entry, run in runs.items()}


def _row_path(cache: str, entry: str) -> str:
    """The file that keeps ``entry``'s row in ``cache``, whatever its spelling."""
    return os.path.join(cache, registry.agent_file(entry))


def _rows_dir(out: str) -> str:
    """Where the rows of the report ``out`` are kept: ``leaderboard/`` beside it."""
    return os.path.join(os.path.dirname(out), "leaderboard")


def _keep_row(path: str, row, source: str | None = None) -> None:
    """Keep ``row`` at ``path`` for later calls; one that cannot be kept (a folder in its
    place) is said and left out, as the row itself is measured and reported all the same."""
    try:
        files.atomic_write_json(path, {**dataclasses.asdict(row), "jaxdust": __version__, "run": source})
    except OSError as error:
        print(f"warning: the row of {row.agent} cannot be kept in {path} ({error.strerror or error}); a later call "
              "measures it again", file=sys.stderr)


def _kept_row(path: str, row_type, source: str | None = None):
    """The row kept at ``path`` by this version of jaxdust from the same ``source`` (a
    learner run's ``fingerprint``; None for other agents), or None. A row kept by another
    version is measured again, as its agents may play otherwise now (a change of the beam's
    tie-break once moved the JAX beam's rows while kept rows went on being shown); so is a
    learner's row once its run has trained again under the same name."""
    if not os.path.exists(path):
        return None
    try:
        with open(path) as handle:
            saved = json.load(handle)
        version, run = saved.pop("jaxdust", None), saved.pop("run", None)
        if (version, run) != (__version__, source):
            return None
        for name in row_type.UNDEFINED_AT_TIMES:  # strict JSON keeps a NaN (one board's se) as null
            if name in saved and saved[name] is None:
                saved[name] = float("nan")
        kept = row_type(**saved)
        for field in dataclasses.fields(row_type):  # a row's figures are shown with formats that need numbers
            value, kind = getattr(kept, field.name), field.type if isinstance(field.type, str) else field.type.__name__
            expected: dict[str, type | tuple[type, ...]] = {"str": str, "int": int, "float": (int, float)}
            if isinstance(value, bool) or not isinstance(value, expected.get(kind, object)):
                raise TypeError(f"{field.name} is {value!r}, not {'a number' if kind != 'str' else 'text'}")
            if (kind == "float" and field.name not in row_type.UNDEFINED_AT_TIMES and isinstance(value, (int, float))
                    and not math.isfinite(value)):
                raise ValueError(f"{field.name} is {value!r}, not a finite number")  # a nan would rank first
        return kept
    except (OSError, ValueError, TypeError, AttributeError) as error:  # written atomically: edited or copied wrong
        print(f"warning: kept row {path} cannot be read ({type(error).__name__}: {error}); measuring it again",
              file=sys.stderr)
        return None


def _kept_or_measured(parser, fresh: bool, entries: list[tuple[str, str]], cache: str, sources: dict[str, str],
                      row_type, describes: Callable, measure: Callable) -> tuple[list, list[str]]:
    """Each entry's row, in order, and the labels of those reused: the row kept in
    ``cache`` for the entry (whatever its spelling) where it ``describes(kept)`` the same
    play (never with ``fresh``), shown under this call's label, else ``measure(entry,
    label)``, kept at once, so the rows measured before a failing agent stay (it fails the
    command with one line). An agent registered outside jaxdust (``registry.register``) is
    measured every call and its row not kept: nothing tells its code of one call from
    another's."""
    rows, reused = [], []
    for entry, label in entries:
        path = _row_path(cache, entry)
        own = registry.is_built_in(entry)
        kept = None if fresh or not own else _kept_row(path, row_type, sources.get(entry))
        if kept and describes(kept):
            rows.append(dataclasses.replace(kept, agent=label))
            reused.append(label)
            continue
        try:
            scored = measure(entry, label)
        except ValueError as error:
            flags.fail(parser, f"{entry}: {error}")
        if own:
            _keep_row(path, scored, sources.get(entry))
        print(scored.markdown(), flush=True)
        rows.append(scored)
    return rows, reused


def _say_reused(labels: list[str], cache: str) -> None:
    """Name the rows an earlier run measured (their times are that run's, on its machine)."""
    if labels:
        print(f"(kept from an earlier run of this version, in {cache}: {'; '.join(labels)}. --fresh measures "
              "them again)")


def _fits(entry: str, config, boards: int, jobs: int) -> bool:
    """Whether ``entry`` plays ``boards`` of ``config`` on ``jobs`` processes, as ``main``
    checks every entry before the first plays."""
    try:
        registry.require_playable([entry], config.rules, config.width, config.height, config.colors,
                                  boards=boards, jobs=jobs)
    except ValueError:
        return False
    return True


def family_leaderboard(parser, args, env_id: str, config: game.GameConfig, entries: list[tuple[str, str]],
                       measure: str, sources: dict[str, str]) -> dict:
    """``--env`` or ``--size``: every entry on ``args.boards`` random boards of ``config``
    (seed ``args.seed``), best first by ``measure``; rows kept beside the report, as ``main``
    keeps them. ``env_id``: the id, or the size as ``--size`` writes it."""
    # A size's files apart from the --set of its name (leaderboard-8x6x5.json) and from ids.
    size_stem = f"size-{config.size_spec.replace(':', '-')}"
    out = args.out or os.path.join("results", f"leaderboard-{env_id if args.env is not None else size_stem}.json")
    _require_report_or_nothing(parser, out)  # before the boards are dealt: a large size's take a while
    # Kept by rules and size, not by name: an id and --size of its size play the same boards.
    cache = os.path.join(_rows_dir(out), f"{size_stem}-{args.boards}-seed{args.seed}")
    with _rows_folder_alone(parser, cache):
        boards = game.random_boards(jax.random.key(args.seed), args.boards, config)
        registry.note_selection_boards(args.seed, [entry for entry, _ in entries])

        def measure_row(entry: str, label: str) -> FamilyRow:
            start = time.perf_counter()
            with progress_bar(total=args.boards, unit="board", desc=entry, leave=False) as bar:  # as --set's rows
                played = registry.run_agent(entry, boards, key=registry.agent_key(args.seed),
                                            max_clicks=config.width * config.height, jobs=args.jobs, rules=config.rules,
                                            progress=bar.update)
            return FamilyRow(label, env_id, args.boards, measure, float(np.mean(played[measure])),
                             float(np.mean(played["cleared"])), (time.perf_counter() - start) / args.boards,
                             stats.standard_error(played[measure]))

        rows, reused = _kept_or_measured(
            parser, args.fresh, entries, cache, sources, FamilyRow,
            lambda kept: (kept.boards, kept.measure) == (args.boards, measure), measure_row)
    rows = [dataclasses.replace(scored, env=env_id) for scored in rows]  # a kept row may name the other
    rows.sort(key=lambda r: (-r.mean if measure == "points" else r.mean, r.seconds_per_board))  # best first
    hardware = machine.cpu_description()
    print(f"\n{env_id}: {args.boards} random boards (seed {args.seed}), mean {measure.replace('_', ' ')} "
          f"({'higher' if measure == 'points' else 'lower'} is better; {hardware})")
    print(FamilyRow.HEADER.format(measure.replace("_", " ")))
    for scored in rows:
        print(scored.markdown())
    print(TIMING_NOTE)
    _say_reused(reused, cache)
    report = {"benchmark": "leaderboard", "env": env_id, "size": config.size_spec, "boards": args.boards,
              "seed": args.seed, "measure": measure, "hardware": hardware,
              "measured_on": machine.measured_on(__version__), "jaxdust": __version__,
              "rows": [dataclasses.asdict(scored) for scored in rows], "kept": reused,
              "played": played_by(entries, sources)}
    files.atomic_write_json(out, report)
    print(f"wrote {out}")
    return report


def run() -> None:
    """The installed command's entry point (exit status 0 once the report is written).

    XLA keeps the programs it compiles on disk between runs (``jaxdust.core.compile_cache``).
    """
    compile_cache.enable()
    flags.run_command(main, "the rows played so far are kept; the same command goes on from them")


if __name__ == "__main__":  # python -m jaxdust.evaluation.leaderboard
    run()
