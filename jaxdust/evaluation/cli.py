"""``evaluate.py`` (installed as ``jaxdust-evaluate``): evaluate agents, solvers and
baselines on a board set.

    python evaluate.py                                  # baselines on the 1000 boards with proven optima
    python evaluate.py --agents random,largest --random 500 --seed 1 --size 6x6x5
    python evaluate.py --agents largest,dfs,beam:500,solver:5 --limit 100
    python evaluate.py --agents policy:runs/avi-0,value:runs/avi-0:8,mcts:runs/avi-0:64

Agents are ``name[:value]`` (the default value in parentheses): random, largest,
dfs[:positions searched (100,000)], beam[:width (200)] (JAX), cpu-beam[:width (2000)]
(numba, with the one-click lookahead), solver[:seconds per board (10)] (a clock's limit: a
board it does not prove in time can end otherwise on a slower or busier machine),
mcts-heuristic[:simulations (64)], and for a train.py run: policy:RUN_DIR (the network's own
choice, the argmax of its output, no simulation), value:RUN_DIR[:width] (beam search scored
by the run's value; width 1, the default, is greedy play on it) and
mcts:RUN_DIR[:simulations] (Gumbel MuZero over the simulator with the run's policy and
value, 64 simulations by default). A run plays the checkpoint it selected by the agent's own
measure (``policy:`` the one whose argmax played best as it trained, ``best-argmax/``; the
others the one whose greedy play did, ``best/``), or its newest with ``RUN_DIR@newest``
(``policy:runs/avi-0@newest,value:runs/avi-0@newest:8``). ``@NAME`` in place of RUN_DIR
plays a network that ships with the package (``jaxdust.learn.published``:
``policy:@imitation-8x6x5,value:@avi-8x6x5:64``).

``--env ID`` plays a registered environment's rules and size on 100 random boards (or
``--random N``, ``--boards FILE``): ``Former-7x9x4-v0`` is measured in clicks like the dust
game; ``SameGame-15x15x5-v0`` in points and ``Clickomania-10x10x4-v0`` in cells left, where
the agents are random, largest (largest cluster first; UVa 758's rule), beam[:width] (JAX), cpu-beam[:width]
(numba) and nmcs[:level] (nested Monte Carlo search, level 1, the default, or 2):

    python evaluate.py --env SameGame-15x15x5-v0 --agents random,largest,cpu-beam:256,nmcs:1

Writes ``summary.json``, per-board ``boards.csv`` (its ``measure`` column says what its
numbers are, ``clicks``, ``points`` or ``cells_left``; for clicks its ``not_cleared`` column
names the agents stopped at the cap on that board), and for clicks ``lengths.png``
(overlaid length histograms) and ``joint-<agent>.png`` (each agent's length against the
reference's, the original post's key figure), for points ``points.png`` and for cells left
``cells-left.png`` (histograms) into ``--out``; with ``--animate N`` also ``game-<agent>-<i>.gif``,
each agent's game on board i < N, the cluster clicked next outlined. ``summary.json`` is
written last and lists the figures (``figures``); those an earlier evaluation into the same
``--out`` listed and this one does not write again are removed just before it. Until then
``.figures-pending.json`` lists both (the earlier summary is removed before ``boards.csv`` or
a figure it lists is written again): a run stopped half-way leaves no summary beside another
run's table or figures, and the next run removes the figures it had written. A folder of
another command's (a train.py run's ``config.json``, a data set's, or a ``summary.json``
that is no evaluation's) is refused. Each agent's play is kept in ``played-so-far/`` as it
finishes, until the summary is written: the same command run again after a Ctrl-C plays
only the agents not finished (kept play of other boards, settings, a run trained since,
another version of jaxdust or JAX, or another device is played again).

The board set is a file in the ``data/boards`` format or ``--random N`` boards drawn from
``--seed``. A file's comments say what its numbers are: a file of proven optima (column
comment ``# board optimal_clicks``, like ``data/boards/optimal_*.txt``), a fewest-clicks set
(fewest clicks found and the proven lower bound: where every line's two agree, the reference
is the proven optimum, else the best known), or the best known length as the last number of
a line (``data/boards/eval_8x6x5.txt``). A file is played at its own size under the rules its
header names (``rules=former``, as ``python -m jaxdust.solver --rules former --board-file``
writes; the dust game's where it names none), or under ``--env``'s rules at ``--env``'s size
(``--size RULES:WxHxC`` likewise at a size no id has: ``--size former:5x7x3``); lengths of
other rules than those played are not compared with.

A board not cleared within ``--max-clicks`` (a policy stopped there, or a search's longer
line) counts at the cap in every column, as on the leaderboard; ``uncleared`` says how many.
The points rule sets (``--env SameGame-...``, ``Clickomania-...``) play every game to its end
and measure it as it is: no cap and no reference agent there.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import fnmatch
import hashlib
import io
import json
import os
import shutil
import sys
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust import __version__
from jaxdust.core import compile_cache, configs, files, flags, game, machine, play
from jaxdust.core.boards import (UnsettledBoardError, board_to_text, declared_rules, positions, read_board_lines,
                                 reference_columns)
from jaxdust.core.progress import progress_bar
from jaxdust.core.registry import CLICKS_PER_CELL
from jaxdust.core.render import game_gif
from jaxdust.evaluation import benchmark, plots, registry, stats
from jaxdust.learn.datasets import MARKER_FILES


class LoadedBoards(NamedTuple):
    boards: jax.Array  # [N, W, H]
    best: np.ndarray | None  # [N] the reference lengths, if the file gives them
    proven: bool  # whether ``best`` are all proven optima
    description: str
    rules: str  # the rules they are played under


def kept_bytes(max_clicks: int) -> int:
    """Memory an agent's play of one board keeps for the report: its clicks (int32, in a few
    copies while chunks are joined) and the board's row. ``largest`` and ``random`` on 8x6
    boards peaked at 0.49 GB (RSS) on 20,000 boards and 0.60 GB on 100,000 at the default cap
    of 48 clicks, 0.81 GB on 100,000 at a cap of 192 (2-core Intel Xeon VM, jaxdust 0.2.79)."""
    return 8 * max_clicks + 256


def load_board_set(args) -> LoadedBoards:
    """The boards of ``--random`` (under ``--size``'s or ``--env``'s rules) or of the board
    file ``--boards``, played under ``--env``'s rules if given (or ``--size``'s, which ``main``
    puts there), else those the file's header declares (``boards.declared_rules``: the dust
    game's where it names none), at the file's size.

    The reference is read by the file's columns (``boards.reference_columns``): a file of
    optima gives them; a fewest-clicks set its fewest clicks found, proven where every
    line's lower bound equals them; any other file its last number, the best known. Lengths
    the file gives for other rules than those played (a file of one game played under
    ``--env`` of another) are no reference: they are left out, and stderr says so.
    """
    if args.random:
        try:
            boards = game.random_boards(jax.random.key(args.seed), args.random, args.size)[: args.limit]
        except ValueError as error:  # more than memory holds
            raise ValueError(f"--random {args.random}: {error}") from None
        flags.note_short_limit(args.limit, len(boards), f"--random {args.random}")
        described = f"{len(boards)} random {args.size.size_text} boards (seed {args.seed})"
        return LoadedBoards(boards, None, False, described, args.size.rules)
    boards_named = _named(args.boards)  # in messages
    played_as = getattr(args, "played_as", "--env")  # the flag that gave args.env: --env, or --size with a file
    lines = files.read_lines(args.boards, "board file")  # once: it may be standard input
    named = declared_rules(lines, boards_named, default=None)
    declared = named or "dust"
    rules = declared if args.env is None else args.env.rules
    # ValueError naming file and line; boards settled under the rules played
    try:
        records = read_board_lines(lines, boards_named, limit=args.limit, rules=rules,
                                   fallback=(None, None) if args.env is None else args.env.shape)  # a header wins
    except UnsettledBoardError as error:
        if declared == rules:
            raise
        whose = f"{declared}'s (its rules= header)" if named else "the dust game's (it has no rules= header)"
        raise UnsettledBoardError(f"{error}; the file's boards are {whose} and {played_as} plays {rules}") \
            from None
    if not records:
        raise ValueError(f"no boards in {boards_named}")
    other = next((r for r in records if r.board.shape != records[0].board.shape), None)
    if other is not None:
        (w, h), (ow, oh) = records[0].board.shape, other.board.shape
        raise ValueError(f"{boards_named}:{other.line}: a {ow}x{oh} board after {w}x{h} ones (line {records[0].line}); "
                         "evaluate.py plays one size at a time")
    boards = jnp.asarray(np.stack([r.board for r in records]))  # jnp.stack compiled an N-way join
    width, height = boards.shape[1:]
    if args.env is not None and (width, height) != (args.env.width, args.env.height):  # before any note
        raise ValueError(f"{played_as} plays {args.env.width}x{args.env.height} boards; {boards_named} holds "
                         f"{width}x{height} ones")
    columns, best, proven = reference_columns(lines), None, False
    missing = next((r for r in records if not r.values), None)
    if columns == "optima" and missing is not None:  # else the set would lose its reference with no word
        raise ValueError(f"{boards_named}:{missing.line}: no optimum after the board, in a file of proven optima "
                         f"(its '# board optimal_clicks' comment)")
    short = next((r for r in records if len(r.values) < 2), None)
    if columns == "fewest_clicks" and short is not None:
        raise ValueError(f"{boards_named}:{short.line}: a fewest-clicks set's line is the board, the fewest clicks "
                         "found and the proven lower bound (its column comment)")
    if columns == "best_known" and missing is not None and any(r.values for r in records):
        print(f"note: {boards_named}:{missing.line} gives no length after its board where other lines do, so the "
              "boards are compared with no reference lengths", file=sys.stderr)
    if columns == "fewest_clicks":  # every line holds both numbers (refused above otherwise)
        above = next((r for r in records if r.values[1] > r.values[0]), None)
        if above is not None:
            raise ValueError(f"{boards_named}:{above.line}: its proven lower bound {above.values[1]} is above its "
                             f"fewest clicks found {above.values[0]}")
        best = np.array([r.values[0] for r in records])
        proven = all(r.values[0] == r.values[1] for r in records)
    elif columns == "optima":  # every line holds its optimum (refused above otherwise)
        best, proven = np.array([r.values[0] for r in records]), True
    elif columns == "best_known" and all(r.values for r in records):
        best = np.array([r.values[-1] for r in records])
    if proven:  # one board, two optima: the file contradicts itself
        assert best is not None  # proven only where the lines hold optima
        optima: dict[str, tuple[int, int]] = {}
        for record, optimum in zip(records, best):
            text = board_to_text(record.board)
            if optima.setdefault(text, (optimum, record.line))[0] != optimum:
                raise ValueError(f"{boards_named}:{record.line}: its board's proven optimum is {optimum}, line "
                                 f"{optima[text][1]}'s (the same board) {optima[text][0]}")
    if best is not None and declared != rules:  # lengths of another game, played as --env says
        print(f"note: {boards_named} gives lengths under the {declared} rules; these boards are "
              f"played under {rules}, so they are compared with no reference lengths", file=sys.stderr)
        best, proven = None, False
    if best is not None and rules in game.CLICK_RULES and best.max() > width * height:
        # A column that is no length (a seed, a time) would be played against and then drawn
        # with a bin per click up to it.
        record = records[int(np.argmax(best))]
        raise ValueError(f"{boards_named}:{record.line}: {int(best.max())} clicks for a board of {width * height} "
                         f"cells: a line's last number is its board's length in clicks, and no game takes more "
                         f"clicks than cells")
    if best is not None and rules in game.CLICK_RULES:
        none = next((r for r, length in zip(records, best) if length == 0 and np.any(r.board)), None)
        if none is not None:
            raise ValueError(f"{boards_named}:{none.line}: 0 clicks for a board that is not empty")
    flags.note_short_limit(args.limit, len(records), _shown_path(args.boards))
    described = f"{len(records)} board{'s' if len(records) != 1 else ''} from {_shown_path(args.boards)}"
    cut = args.limit is not None and len(records) == args.limit  # fewer: the file held no more
    return LoadedBoards(boards, best, proven, f"first {described}" if cut else described, rules)


def _named(path: str) -> str:
    """``--boards`` as a message names it: ``-`` is standard input."""
    return "standard input" if path == "-" else path


def _shown_path(path: str) -> str:
    """``path`` as a report names it: relative to the working folder when under it, a
    board set that ships with the package as ``jaxdust/data/...`` (wherever it is
    installed), else absolute."""
    if path == "-":
        return _named(path)
    relative = os.path.relpath(path)
    if not relative.startswith(os.pardir):
        return relative
    installed = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the jaxdust package
    inside = os.path.relpath(os.path.abspath(path), installed)
    return os.path.join("jaxdust", inside) if not inside.startswith(os.pardir) else os.path.abspath(path)


TIMING_NOTE = ("(ms/board: an agent's wall time over the boards, its compiling and worker start-up "
               "included: on a few boards mostly that; a rerun with the programs cached is faster)")


def file_names(agents: list[str]) -> dict[str, str]:
    """Each agent's name as files name it (letters and digits, ``-`` for the rest), one
    apart from another: ``policy:runs/a-0`` and ``policy:runs/a_0`` would share one, and
    one agent's GIFs and histogram would replace the other's."""
    names: dict[str, str] = {}
    for agent in agents:
        safe = files.short_file_name("".join(c if c.isalnum() else "-" for c in agent))
        names[agent] = safe if safe not in names.values() else next(
            f"{safe}-{n}" for n in range(2, len(agents) + 2) if f"{safe}-{n}" not in names.values())
    return names


def _board_file(text: str) -> str:
    """``--boards``: a file; a count, as other commands' ``--boards`` take, is pointed to ``--random``."""
    try:
        return flags.input_file(text)
    except argparse.ArgumentTypeError as error:
        if text.isdecimal() and not os.path.exists(text):
            raise argparse.ArgumentTypeError(f"{error}; for {text} random boards: --random {text}") from None
        raise


def build_parser() -> argparse.ArgumentParser:
    """``evaluate.py``'s command line (docs/cli.md shows its ``--help``)."""
    parser = flags.Parser(prog="evaluate.py", description=__doc__,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=_board_file, default=None,
                        help="board file (default: the fewest-clicks set, the 1000 evaluation boards with "
                             "their proven optima; with --env, 100 random boards)")
    parser.add_argument("--random", type=flags.count, default=None, metavar="N",
                        help="use N random boards instead")
    configs.add_board_flags(parser, "WxHxC for --random (default 8x6x5), or RULES:WxHxC for other rules "
                                    "(former:6x6x4); with --boards, the rules to play the file under (its WxH "
                                    "must be the file's, which a file without a size header is read at; its "
                                    "colours are the file's)",
                            "play a registered environment's rules and size (e.g. SameGame-15x15x5-v0: "
                            "measured in points; Clickomania-10x10x4-v0: in cells left)")
    parser.add_argument("--seed", type=flags.seed, default=0,
                        help="seed of --random's boards and of the agents' randomness (default 0)")
    parser.add_argument("--agents", default=None,
                        help=f"comma-separated name[:value], from: {', '.join(registry.AGENTS)} (default: "
                             f"random,largest; with a points --env random,largest,cpu-beam:64,nmcs:1)")
    parser.add_argument("--limit", type=flags.positive_int, default=None, help="use only the first N boards")
    parser.add_argument("--jobs", type=flags.positive_int, default=machine.cpu_cores(),
                        help="processes for the numba searches and solvers (default: the cores this process may "
                             "use)")
    parser.add_argument("--max-clicks", type=flags.count, default=None,
                        help="click cap under the fewest-clicks rules (default: cells on the board; at most "
                             f"{CLICKS_PER_CELL} a cell)")
    parser.add_argument("--chunk", type=flags.count, default=play.DEFAULT_CHUNK,
                        help=f"boards played at once by the policies and MCTS agents (default {play.DEFAULT_CHUNK}; "
                             "the beams batch their own children)")
    parser.add_argument("--reference", type=flags.name, default=None,
                        help="agent to compare against, or 'best' for the board file's lengths (default: 'best' "
                             "where the file gives lengths, else the last of --agents)")
    parser.add_argument("--animate", type=flags.non_negative_int, default=0, metavar="N",
                        help="also write a GIF of each agent's game on the first N boards")
    parser.add_argument("--out", type=flags.output_dir, default="results/evaluate",
                        help="folder of the report, table and figures (default results/evaluate)")
    return parser


def main(argv=None) -> dict:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.random and args.boards is not None:
        flags.fail(parser, "--random and --boards: give one (random boards, or a board file)")
    if args.size is not None and not args.random:
        if args.boards is None:
            flags.fail(parser, "--size: with --random, or with --boards to play a board file of that size under "
                               "--size's rules (--env: a registered id's rules and size)")
        args.env, args.played_as = args.size, "--size"  # a file's own size, played as --env plays it
    args.size = args.size or game.GameConfig()
    if args.env is not None:
        args.size = args.env
        if args.boards is None and not args.random:
            args.random = 100
    args.boards = args.boards or benchmark.set_path("8x6x5")
    try:
        boards, best, proven, description, rules = load_board_set(args)
    except ValueError as error:
        flags.fail(parser, str(error))
    by_points = rules not in game.CLICK_RULES
    if by_points and best is not None:
        print(f"note: the lengths in {_named(args.boards)} are not compared with: {rules} games are measured in "
              f"{game.rules_of(rules).objective.replace('_', ' ')}", file=sys.stderr)
    if by_points and (args.reference is not None or args.max_clicks is not None):
        flags.fail(parser, f"--{'reference' if args.reference is not None else 'max-clicks'}: only under the "
                           f"fewest-clicks rules; {rules} games are played to their end and measured as they are")
    if args.agents is None:
        args.agents = "random,largest,cpu-beam:64,nmcs:1" if by_points else "random,largest"

    try:
        agents = registry.parse_agent_list(args.agents, rules)
    except ValueError as error:
        flags.fail(parser, f"--agents: {error}")
    if args.random:
        registry.note_selection_boards(args.seed, agents)
    _, width, height = boards.shape
    try:
        registry.require_playable(agents, rules, width, height, int(boards.max()) if boards.size else 0,
                                  boards=len(boards), chunk=args.chunk, jobs=args.jobs)
    except ValueError as error:
        flags.fail(parser, f"--agents: {error}")
    flags.note_short_limit(args.animate or None, len(boards), "this evaluation", "--animate", "animated")
    # Every game's clicks are kept ([boards, max_clicks]): a cap far beyond what any game
    # takes only asks for memory.
    if args.max_clicks is not None and args.max_clicks > CLICKS_PER_CELL * width * height:
        flags.fail(parser, f"--max-clicks {args.max_clicks}: at most {CLICKS_PER_CELL} a cell "
                           f"({CLICKS_PER_CELL * width * height} on {width}x{height} boards)")
    max_clicks = args.max_clicks or width * height
    try:
        machine.require_memory(f"{len(agents)} agent{'s' if len(agents) > 1 else ''}' clicks on {len(boards):,} boards "
                               f"(up to {max_clicks} a game)", len(boards) * len(agents) * kept_bytes(max_clicks))
    except ValueError as error:  # before any agent plays: every agent's clicks are kept to the end
        flags.fail(parser, f"--agents: {error}; play fewer boards or agents")
    reference = args.reference or ("best" if best is not None else agents[-1])
    reference = _as_spelled_in(reference, agents)
    if not by_points and reference not in agents and not (reference == "best" and best is not None):
        if reference == "best" and args.random:
            flags.fail(parser, "--reference best: --random's boards have no reference lengths; name one of --agents")
        if reference == "best" and args.boards:
            flags.fail(parser, f"--reference best: {_named(args.boards)} gives no reference lengths for these boards "
                               "(a number after each board, under the rules played); name one of --agents")
        flags.fail(parser, f"--reference {reference!r} is neither one of --agents nor 'best' with a board file")
    other = _other_commands_folder(args.out)
    if other is not None:  # its summary.json would be removed before this report's is written
        flags.fail(parser, f"--out {args.out}: {other}; give an evaluation a folder of its own")
    lock = files.lock_directory(args.out)  # two evaluations into one folder would mix their tables and figures
    if lock is None:
        flags.fail(parser, f"--out {args.out}: another evaluation is writing there (it holds {files.LOCK_FILE}); "
                           "wait for it to end, or give another --out")
    try:
        earlier = _earlier_figures(args.out)
        if by_points:
            return points_report(parser, args, agents, boards, description, rules, max_clicks, earlier)
        return clicks_report(parser, args, agents, boards, best, proven, reference, description, rules, max_clicks,
                             earlier)
    finally:
        lock.release()


def _warn_if_contradicted(name: str, clicks: np.ndarray, cleared: np.ndarray, proofs, best: np.ndarray,
                          proven: bool, path: str, rules: str) -> None:
    """Warn where agent ``name``'s lines contradict the board file's lengths ``best``: a
    line that cleared a board below its proven optimum, or a solver's proof (``proofs``:
    per board, or None) above the file's length, of which the file claims a line."""
    contradictions = [("cleared board {board} in {clicks} clicks, below", cleared & (clicks < best))] if proven else []
    if proofs is not None:
        contradictions.append(("proved board {board} needs {clicks} clicks, above",
                               np.asarray(proofs, bool) & cleared & (clicks > best)))
    for says, wrong in contradictions:
        boards = np.flatnonzero(wrong)
        if boards.size:
            board = boards[0]
            print(f"warning: {name} {says.format(board=board, clicks=clicks[board])} its "
                  f"{'proven optimum' if proven else 'best known length'} {best[board]} in {path} ({boards.size} such "
                  f"boards): that file's {'optima' if proven else 'lengths'} are wrong, or another game's than the "
                  f"{rules} rules played (a rules= header names the file's)", file=sys.stderr)


def _as_spelled_in(reference: str, agents: list[str]) -> str:
    """``reference`` as ``--agents`` spells the same agent (``beam:08`` for ``beam:8``, a
    run's path with or without its last slash), or as given where none is."""
    if reference in agents:
        return reference
    try:
        identity = registry.agent_identity(reference)
    except ValueError:
        return reference
    return next((agent for agent in agents if registry.agent_identity(agent) == identity), reference)


def clicks_report(parser, args, agents: list[str], boards, best, proven: bool, reference: str, description: str,
                  rules: str, max_clicks: int, earlier: list[str]) -> dict:
    """Play ``agents`` on ``boards`` under ``rules`` (fewest clicks); print, draw and write
    the report into ``args.out`` (``best``: the board file's best known or proven lengths;
    ``reference``: an agent's name, or ``best``)."""
    print(f"{description}, {rules} rules; backend {jax.default_backend()}")
    if best is not None and max_clicks < best.max():
        # A game stopped at the cap counts at the cap: below a reference it would read as
        # shorter than the reference.
        print(f"note: --max-clicks {max_clicks} is below {int(np.sum(best > max_clicks))} boards' "
              f"{'optimum' if proven else 'best known length'} (up to {int(best.max())}); a game stopped there "
              f"counts at {max_clicks}, so means and gaps on those boards read too low", file=sys.stderr)

    played, figures = _play_agents(parser, args, agents, boards, rules, max_clicks, earlier)
    per_board = {name: run["clicks"] for name, run in played.items()}
    cleared = {name: np.asarray(run["cleared"], bool) for name, run in played.items()}
    results = {name: {"seconds_per_board": run["seconds_per_board"], "proven": run.get("proven"),
                      "cleared": run["cleared"]} for name, run in played.items()}

    if best is not None:
        for name in agents:
            _warn_if_contradicted(name, np.asarray(per_board[name]), cleared[name], played[name].get("proven"), best,
                                  proven, _named(args.boards), rules)
    reference_lengths = best if reference == "best" else per_board[reference]
    reference_cleared = None if reference == "best" else cleared[reference]
    for name in agents:
        run = results[name]
        summary = stats.summarize(per_board[name], run["cleared"], best_known=best, reference=reference_lengths,
                                  reference_cleared=reference_cleared)
        summary["seconds_per_board"] = run["seconds_per_board"]
        if run["proven"] is not None:
            # A proven optimum past the click cap was not played: only cleared boards count.
            summary["proven_optimal"] = float(np.mean(np.asarray(run["proven"]) & np.asarray(run["cleared"], bool)))
        if "played" in played[name]:
            summary["played"] = played[name]["played"]
        results[name] = summary

    best_name = "optimal" if proven else "best known"
    # The table is shown once the files are written: a reader of standard output that goes
    # away (| head) ends the command at the next line printed. It is shown if writing fails.
    table = clicks_table(results, best, proven, reference)
    try:
        shown = dict(per_board)
        if best is not None:
            shown[best_name] = best
        _forget_summary(args.out)
        best_column = {best_name.replace(" ", "_"): best} if best is not None else {}
        write_board_table(args.out, boards, "clicks", {**per_board, **best_column}, cleared)
        stuck = {name: int(np.sum(~cleared[name])) for name in agents}
        figures.append(_write_figure(args.out, "lengths.png",
                                     plots.length_histograms(shown, f"{description}, {rules} rules", stuck)))
        reference_name = best_name if reference == "best" else reference
        names = file_names(agents)
        for name in agents:
            if name != reference:
                figure = plots.joint_histogram(per_board[name], reference_lengths, name, reference_name, cleared[name],
                                               None if reference == "best" else cleared[reference])
                figures.append(_write_figure(args.out, f"joint-{names[name]}.png", figure))
        report = {"boards": description, "rules": rules, "measure": "clicks", "backend": jax.default_backend(),
                  "measured_on": machine.measured_on(__version__),  # seconds_per_board is this machine's
                  "jaxdust": __version__, "seed": args.seed, "max_clicks": max_clicks,  # boards not cleared count at it
                  "reference": reference, "reference_proven_optimal": proven and reference == "best",
                  "best_mean": None if best is None else float(np.mean(best)),  # the file's lengths (the table's row)
                  "agents": results, "figures": sorted(set(figures))}
        _finish(args.out, earlier, report)
    finally:
        print(table)
    gifs = ", game-*.gif" if args.animate else ""
    joints = " and joint-*.png" if any(name.startswith("joint-") for name in report["figures"]) else ""
    print(f"\nwrote summary.json, boards.csv{gifs}, lengths.png{joints} to {args.out}")
    return report


def _spread(value: float, width: int, digits: int) -> str:
    """A std or standard error for a table: right-aligned, "-" where it is NaN (one board)."""
    return f"{'-' if np.isnan(value) else format(value, f'.{digits}f'):>{width}}"


def clicks_table(results: dict, best, proven: bool, reference: str) -> str:
    """The clicks report's table: a row per agent (``results``: each one's
    ``stats.summarize`` with its ``seconds_per_board``), the optimum's or best known's
    where ``best`` lengths are given, and notes on the differences to ``reference``."""
    best_row = "optimal (proven)" if proven else "best known"
    label = max(len(best_row), *(len(name) for name in results))
    header = f"{'agent':<{label}} {'mean':>7} {'se':>5} {'median':>7} {'std':>6}"
    header += f" {'=opt' if proven else '<=best':>6} {'gap':>6}" if best is not None else ""
    header += f" {'>=ref':>6} {'uncleared':>9} {'ms/board':>9}"
    lines = ["", header]
    for name, s in results.items():
        line = (f"{name:<{label}} {s['mean']:>7.2f} {_spread(s['se'], 5, 2)} {s['median']:>7.1f} "
                f"{_spread(s['std'], 6, 2)}")
        if best is not None:
            line += f" {s['share_equal_best']:>6.1%} {s['mean_gap_to_best']:>6.2f}"
        line += f" {s['share_at_least_as_good_as_reference']:>6.1%}"
        line += f" {s['not_cleared']:>9d} {1e3 * s['seconds_per_board']:>9.3f}"
        lines.append(line)
    if best is not None:
        lines.append(f"{best_row:<{label}} {best.mean():>7.2f} {_spread(stats.standard_error(best), 5, 2)} "
                     f"{np.median(best):>7.1f} {_spread(stats.deviation(best), 6, 2)}")
    reference_text = ('the optimum' if proven else 'the best known') if reference == 'best' else reference
    lines.append(f"(se: the mean's standard error; >=ref: share of boards cleared at least as short as "
                 f"{reference_text}, or left uncleared by both)")
    compared = [name for name in results if name != reference]
    if compared:  # the same boards: per-board differences say more than the means' own errors
        lines.append(f"clicks above {reference_text}, per board (mean +- paired standard error): " + "; ".join(
            f"{name} {benchmark.with_error(s['mean_difference_to_reference'], s['difference_se'], '+.2f')}"
            for name, s in results.items() if name != reference))
    runs_played = {name: os.path.join(s["played"]["run"], s["played"]["checkpoint"])
                   for name, s in results.items() if "played" in s}
    if runs_played:
        lines.append("checkpoints played: " + "; ".join(f"{name} {path}" for name, path in runs_played.items()))
    lines.append(TIMING_NOTE)
    return "\n".join(lines)


def _play_agents(parser, args, agents: list[str], boards, rules: str, max_clicks: int,
                 earlier: list[str]) -> tuple[dict, list[str]]:
    """Every agent's ``registry.run_agent`` result on ``boards``, with its
    ``seconds_per_board`` (the play only: the GIFs ``--animate`` draws are not timed), and
    the GIFs' file names (``earlier``: the earlier runs' figures, listed as pending first)."""
    if earlier:  # listed where this run's figures will be until its summary lists them
        _note_pending(args.out, earlier)
    played, figures, names, kept = {}, [], file_names(agents), []
    digest = hashlib.sha256(np.asarray(boards, np.int8).tobytes() + str(np.shape(boards)).encode()).hexdigest()
    with progress_bar(total=len(boards) * len(agents), unit="game") as bar:  # a game: one agent on one board
        for name in agents:
            bar.set_description(name)
            try:  # a run removed or damaged since the agents were checked: a RunError, a ValueError
                path = os.path.join(args.out, PLAYED, registry.agent_file(name))
                identity = _play_identity(args, name, digest, rules, max_clicks)
                own = registry.is_built_in(name)  # a user's registered agent may have changed since
                run = _kept_play(path, identity, np.shape(boards), max_clicks, args.animate, rules) if own else None
                if run is not None:
                    kept.append(name)
                    bar.update(len(boards))
                else:
                    start = time.perf_counter()
                    run = registry.run_agent(name, boards, key=registry.agent_key(args.seed), max_clicks=max_clicks,
                                             chunk=args.chunk, jobs=args.jobs, progress=bar.update,
                                             solutions=args.animate, rules=rules)
                    run = {**run, "seconds_per_board": (time.perf_counter() - start) / len(boards)}
                    if own:
                        files.atomic_write_json(path, {"identity": identity, "play": _as_json(run)})
            except ValueError as error:
                flags.fail(parser, f"agent {name}: {error}")
            played[name] = run
            figures += write_gifs(args.out, names[name], boards, run["solutions"], rules, run["cleared"], max_clicks)
        if len(agents) > 1:  # the finished bar counts every agent's games, not the last one's
            bar.set_description(f"{len(agents)} agents")
    if kept:
        print(f"(played before the interruption, kept in {os.path.join(args.out, PLAYED)}: {', '.join(kept)}; "
              "their times are that run's)")
    return played, figures


PLAYED = "played-so-far"  # each agent's play until the report is written: a rerun after a Ctrl-C plays the rest


def _play_identity(args, name: str, boards_digest: str, rules: str, max_clicks: int) -> dict:
    """What an agent's kept play must match to stand for playing it again: the boards, the
    agent however spelled (a run's fingerprint: trained since, it plays otherwise), the
    settings that change its games and this version of jaxdust."""
    run = registry.run_of(name)
    # JAX's version, device and modes: its random streams (threefry's partitionable mode) and
    # rounding (a GPU, 64-bit floats) can play the same agent otherwise.
    modes = {"jax": jax.__version__, "backend": jax.default_backend(),
             **{flag: bool(getattr(jax.config, flag)) for flag in ("jax_threefry_partitionable", "jax_enable_x64")}}
    return {"jaxdust": __version__, **modes, "agent": registry.agent_identity(name), "boards": boards_digest,
            "rules": rules, "run": None if run is None else registry.fingerprint(run), "seed": args.seed,
            "max_clicks": max_clicks, "chunk": args.chunk, "solutions": args.animate}


def _as_json(run: dict) -> dict:
    """``registry.run_agent``'s result in JSON: each array with its dtype, to be read back as it was."""
    def plain(value):
        if isinstance(value, np.ndarray):
            return {"array": value.tolist(), "dtype": value.dtype.str}
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, (list, tuple)):
            return [plain(item) for item in value]
        return {key: plain(item) for key, item in value.items()} if isinstance(value, dict) else value

    return {key: plain(value) for key, value in run.items()}


def _kept_play(path: str, identity: dict, shape: tuple[int, int, int], max_clicks: int, solutions: int,
               rules: str) -> dict | None:
    """The play kept at ``path`` where it was made as ``identity`` says, on boards of
    ``shape`` (``[N, W, H]``; ``solutions`` of them played out, under ``rules``), else None.
    Nothing in the identity is secret: a damaged or edited file's play is checked as far as
    it can be without playing again."""
    try:
        with open(path) as handle:
            saved = json.load(handle)
        if saved["identity"] != identity:
            return None
        play = {key: np.asarray(value["array"], np.dtype(value["dtype"]))
                if isinstance(value, dict) and set(value) == {"array", "dtype"} else value
                for key, value in saved["play"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # none, or not this command's: played again
        return None
    count, width, height = shape
    arrays = [value for value in play.values() if isinstance(value, np.ndarray)]
    clicks, cleared, lines = play.get("clicks"), play.get("cleared"), play.get("solutions")
    measures = () if game.rules_of(rules).objective == "clicks" else ("points", "cells_left")
    sound = (isinstance(clicks, np.ndarray) and isinstance(cleared, np.ndarray) and cleared.dtype == bool
             and all(isinstance(play.get(name), np.ndarray) for name in measures)
             and all(value.shape == (count,) and value.dtype.kind in "biu" for value in arrays)
             and bool(np.all((clicks >= 0) & (clicks <= max_clicks)))
             and isinstance(lines, list) and len(lines) == min(solutions, count)
             and all(isinstance(line, list) and all(
                 isinstance(click, list) and len(click) == 2 and all(type(v) is int for v in click)
                 and 0 <= click[0] < width and 0 <= click[1] < height for click in line) for line in lines)
             and isinstance(play.get("seconds_per_board"), (int, float)))
    return play if sound else None


def write_board_table(out: str, boards, measure: str, columns: dict[str, np.ndarray],
                      cleared: dict[str, np.ndarray] | None = None) -> None:
    """``boards.csv``: each board as text, the ``measure`` of its numbers (``clicks``,
    ``points`` or ``cells_left``), then one integer column per entry of ``columns`` (an
    agent's measure on each board, or the set's best known), and with ``cleared`` (bool
    ``[N]`` per agent) a last column ``not_cleared`` naming, ``;`` between them, the agents
    that did not clear the board: their clicks there are the cap."""
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(["board", "measure", *columns, *(["not_cleared"] if cleared is not None else [])])
    for i in range(len(boards)):
        stuck = [] if cleared is None else [";".join(name for name, done in cleared.items() if not done[i])]
        writer.writerow([board_to_text(boards[i]), measure, *(int(values[i]) for values in columns.values()), *stuck])
    files.atomic_write_bytes(os.path.join(out, "boards.csv"), table.getvalue().encode())


FIGURES = ("lengths.png", "points.png", "cells-left.png", "joint-*.png", "game-*.gif")  # what an evaluation draws


PENDING = ".figures-pending.json"  # the figures written since the last summary, and the ones it listed


def _listed_figures(path: str) -> list[str]:
    """The figure names the ``figures`` list of a JSON object at ``path`` holds (none when
    it cannot be read: files in ``--out`` that no evaluation listed are the user's)."""
    try:
        with open(path) as handle:
            figures = json.load(handle).get("figures", [])
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(figures, list):
        return []
    return [name for name in figures if isinstance(name, str) and os.path.basename(name) == name
            and any(fnmatch.fnmatchcase(name, pattern) for pattern in FIGURES)]


def _earlier_figures(out: str) -> list[str]:
    """The figures earlier evaluations into ``out`` wrote: those its summary.json lists and
    those a run stopped before its summary had listed as pending."""
    return sorted({*_listed_figures(os.path.join(out, "summary.json")),
                   *_listed_figures(os.path.join(out, PENDING))})


def _note_pending(out: str, names: list[str]) -> None:
    """Add ``names`` to ``out``'s pending figures, before they are written."""
    pending = set(_listed_figures(os.path.join(out, PENDING)))
    if not pending.issuperset(names):
        files.atomic_write_json(os.path.join(out, PENDING), {"figures": sorted(pending.union(names))})


def _write_figure(out: str, name: str, data: bytes) -> str:
    """Write figure ``name`` into ``out``, listed as pending first; returns ``name``. A
    figure the earlier summary lists is that summary's no more once replaced: the summary
    goes first."""
    _note_pending(out, [name])
    if name in _listed_figures(os.path.join(out, "summary.json")):
        _forget_summary(out)
    files.atomic_write_bytes(os.path.join(out, name), data)
    return name


def _other_commands_folder(out: str) -> str | None:
    """Why ``out`` is another command's folder, whose files an evaluation must not replace
    (a train.py run's, or one whose summary.json is not an evaluation's); None if it is not."""
    if os.path.isfile(os.path.join(out, "config.json")):
        return "it holds a config.json, as a train.py run directory does (its summary.json is the run's)"
    for name in MARKER_FILES:
        if os.path.isfile(os.path.join(out, name)):
            return f"it holds a data set ({name}), whose shards an evaluation's files would mix with"
    path = os.path.join(out, "summary.json")
    try:
        with open(path) as handle:
            summary = json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        return f"{path} cannot be read as an evaluation's summary ({error})"
    return None if isinstance(summary, dict) and isinstance(summary.get("agents"), dict) else \
        f"{path} is not an evaluation's summary"


def _forget_summary(out: str) -> None:
    """Remove an earlier summary.json before this run's table replaces its: beside the new
    ``boards.csv`` it would describe other play (its figures stay listed as pending)."""
    _remove_if_present(os.path.join(out, "summary.json"))


def _remove_if_present(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def _finish(out: str, earlier: list[str], report: dict) -> None:
    """Remove the earlier figures this run did not write again, write the summary that
    lists its own, then forget the pending list and the agents' kept play."""
    _remove_earlier_figures(out, earlier, report["figures"])
    files.atomic_write_json(os.path.join(out, "summary.json"), report)
    _remove_if_present(os.path.join(out, PENDING))
    shutil.rmtree(os.path.join(out, PLAYED), ignore_errors=True)


def _remove_earlier_figures(out: str, earlier: list[str], written: list[str]) -> None:
    """Remove the earlier evaluation's figures that this one did not write again (another
    agent's joint histogram, a board not animated this time): beside the new summary they
    would pass for its own."""
    for name in set(earlier) - set(written):
        try:
            os.remove(os.path.join(out, name))
        except OSError:  # gone already, or made a folder since: not a figure to remove
            pass


def write_gifs(out: str, name: str, boards, solutions: list, rules: str, cleared, max_clicks: int) -> list[str]:
    """``game-<name>-<i>.gif`` in ``out`` (``name``: the agent's, from ``file_names``) for
    each board ``i`` of ``solutions`` (its clicks, at most ``max_clicks`` of them: what the
    table counted); returns their names.
    Under the fewest-clicks rules a game not cleared within the cap (``cleared[i]`` False)
    is named on stdout."""
    written = []
    for board_index, clicks in enumerate(solutions):
        clicks = list(clicks)[:max_clicks]
        # A policy's wasted click (on an empty cell) is a frame where nothing changes.
        gif = game_gif(*positions(boards[board_index], clicks, rules, wasted=True))
        written.append(_write_figure(out, f"game-{name}-{board_index}.gif", gif))
        path = os.path.join(out, written[-1])
        if rules in game.CLICK_RULES and not cleared[board_index]:
            print(f"{path}: not cleared within {max_clicks} clicks; it shows the {len(clicks)} clicks played")
    return written


def points_report(parser, args, agents: list[str], boards, description: str, rules: str, max_clicks: int,
                  earlier: list[str]) -> dict:
    """Evaluate ``agents`` under a points rule set: SameGame's points (the clear bonus
    included) or Clickomania's cells left, per board; writes summary.json, boards.csv and
    a histogram, ``points.png`` or ``cells-left.png`` (``earlier``: the figures of the
    evaluation before, removed unless written again)."""
    measure = "points" if game.rules_of(rules).objective == "points" else "cells_left"
    print(f"{description}, {rules} rules; backend {jax.default_backend()}")
    played, figures = _play_agents(parser, args, agents, boards, rules, max_clicks, earlier)
    results, per_board = {}, {}
    for name, run in played.items():
        values = per_board[name] = np.asarray(run[measure])
        results[name] = {"mean": float(values.mean()), "se": stats.standard_error(values),
                         "median": float(np.median(values)), "std": stats.deviation(values),
                         "cleared": float(np.mean(run["cleared"])), "mean_clicks": float(np.mean(run["clicks"])),
                         "seconds_per_board": run["seconds_per_board"]}
    table = points_table(results, measure, rules)
    try:  # shown once the files are written, as clicks_report's table
        _forget_summary(args.out)
        write_board_table(args.out, boards, measure, per_board)
        figure = _write_figure(args.out, f"{measure.replace('_', '-')}.png",
                               plots.value_histograms(per_board, f"{description}, {rules} rules",
                                                      f"{measure.replace('_', ' ')} "
                                                      f"({'higher' if measure == 'points' else 'lower'} is better)",
                                                      digits=MEAN_DIGITS[measure]))
        report = {"boards": description, "rules": rules, "measure": measure, "backend": jax.default_backend(),
                  "measured_on": machine.measured_on(__version__), "jaxdust": __version__, "seed": args.seed,
                  "agents": results, "figures": sorted({*figures, figure})}
        _finish(args.out, earlier, report)
    finally:
        print(table)
    gifs = ", game-*.gif" if args.animate else ""
    print(f"\nwrote summary.json, boards.csv{gifs} and {figure} to {args.out}")
    return report


MEAN_DIGITS = {"points": 1, "cells_left": 2}  # cells left are few: 0.47 and 0.50 are not both 0.5


def points_table(results: dict, measure: str, rules: str) -> str:
    """The points report's table: a row per agent (``results``: each one's mean, se,
    median, std, share cleared and seconds per board) of ``measure``, ``points`` or
    ``cells_left``."""
    label = max(len("agent"), *(len(name) for name in results))
    lines = [f"\n{measure.replace('_', ' ')} per board under the {rules} rules "
             f"({'higher' if measure == 'points' else 'lower'} is better)",
             f"{'agent':<{label}} {'mean':>8} {'se':>6} {'median':>8} {'std':>7} {'cleared':>8} {'ms/board':>9}"]
    digits = MEAN_DIGITS[measure]
    for name, row in results.items():
        lines.append(f"{name:<{label}} {row['mean']:>8.{digits}f} {_spread(row['se'], 6, digits)} "
                     f"{row['median']:>8.1f} {_spread(row['std'], 7, digits)} {row['cleared']:>8.1%} "
                     f"{1e3 * row['seconds_per_board']:>9.1f}")
    lines.append(TIMING_NOTE)
    return "\n".join(lines)


def run() -> None:
    """The installed command's entry point (exit status 0 once the report is written).

    XLA keeps the programs it compiles on disk between runs (``jaxdust.core.compile_cache``).
    """
    compile_cache.enable()
    flags.run_command(main, "no output was left half-written; the same command plays only the agents not finished")


if __name__ == "__main__":  # python -m jaxdust.evaluation.cli
    run()
