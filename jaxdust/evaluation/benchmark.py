"""The fewest-clicks benchmark: versioned board sets with proven optima, and one scorer.

    from jaxdust.evaluation import benchmark
    benchmark.score("beam:64", "6x6x5")             # any agent evaluate.py knows; prints the row
    benchmark.score(my_solver, "6x6x5", name="mine")  # or your function: boards -> clicks

A set is a file ``data/boards/fewest_clicks_v<version>_<W>x<H>x<C>.txt``: each line is a
board, the fewest clicks found for it and the proven lower bound; where the two are equal
the length is the optimum. A set never changes once published: new boards or a better
bound make a new version, so scores stay comparable.

A solver's own solutions are replayed on the boards before they count, so a row cannot
claim a length that does not clear its board.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import time
from typing import Callable, Iterator, Sequence

import jax
import numpy as np

from jaxdust.core import boards as board_io
from jaxdust.core import files, flags, game
from jaxdust.core.progress import progress_bar
from jaxdust.evaluation import stats

VERSION = 1
SIZES = ("8x6x5", "6x6x5", "8x4x5")

Solver = Callable[[np.ndarray], Sequence[Sequence[tuple[int, int]]]]


@dataclasses.dataclass(frozen=True)
class BoardSet:
    """A benchmark set: boards int8 ``[N, W, H]``, ``best`` [N] (fewest clicks found) and
    ``lower`` [N] (proven lower bound; equal to ``best`` where that is optimal), all under
    ``rules`` (a fewest-clicks rule set). Lists are taken; ValueError where the boards hold
    colours outside 0..``MAX_COLORS`` or are not settled under ``rules``
    (``UnsettledBoardError``), or the lengths are not whole click counts, one per board,
    with ``lower <= best``."""

    name: str  # e.g. "8x6x5 v1"
    boards: np.ndarray
    best: np.ndarray
    lower: np.ndarray
    rules: str = "dust"

    def __post_init__(self):
        """ValueError for what would otherwise fail in ``score`` after the agent had played."""
        if self.rules not in game.CLICK_RULES:  # lengths to compare: the fewest-clicks rules
            raise ValueError(f"a benchmark set's lengths are fewest clicks, under the {', '.join(game.CLICK_RULES)} "
                             f"rules, not {self.rules!r}")
        boards = np.asarray(self.boards)
        if boards.ndim != 3 or not len(boards) or boards.dtype.kind not in "iu":
            raise ValueError(f"a benchmark set's boards: integers [N, W, H] with N >= 1, got {boards.dtype} "
                             f"{boards.shape}")
        game.check_colours(boards, "a board of the benchmark set")
        board_io.require_settled(boards, self.rules, "a benchmark set")
        as_played = boards.astype(np.int8, copy=False)  # as every agent takes them: ``score`` says int8
        if not boards.flags.writeable:  # a loaded set's: no agent may rewrite the boards it is scored on
            as_played.setflags(write=False)
        object.__setattr__(self, "boards", as_played)
        for field in ("best", "lower"):
            object.__setattr__(self, field, _lengths(field, getattr(self, field), len(boards)))
        if np.any(self.lower > self.best):
            raise ValueError(f"a benchmark set's lower bound above its fewest clicks found, on board "
                             f"{int(np.argmax(self.lower > self.best))}")
        # A click removes a cell at least and leaves no board unchanged: evaluate.py refuses these lengths too.
        cells = np.count_nonzero(boards.reshape(len(boards), -1), axis=1)
        for wrong, words in ((self.best > cells, "more clicks than its cells"),
                             ((self.best == 0) & (cells > 0), "0 clicks on a board with cells")):
            if np.any(wrong):
                raise ValueError(f"a benchmark set's fewest clicks found: {words}, on board {int(np.argmax(wrong))}")

    @property
    def proven(self) -> np.ndarray:
        return self.best == self.lower


def _lengths(field: str, values, boards: int) -> np.ndarray:
    """``values`` as an integer array of one length per board, or ValueError."""
    array = np.asarray(values)
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        array = array.astype(np.int64)  # 11.0 is a length; 11.5 is not
    if array.shape != (boards,) or array.dtype.kind not in "iu" or np.any(array < 0):
        raise ValueError(f"a benchmark set's {field}: one click count (an integer >= 0) per board, {boards} in "
                         f"all; got {array.dtype} {array.shape}")
    return array


def set_path(size: str, version: int = VERSION) -> str:
    return os.path.join(board_io.BOARDS_DIR, f"fewest_clicks_v{version}_{size}.txt")


def load_set(size: str = "8x6x5", version: int = VERSION, limit: int | None = None) -> BoardSet:
    """The published set of ``size`` (one of ``SIZES``); ``limit``: its first boards only.

    Raises:
      ValueError: for an unknown size or version, naming the ones there are.
    """
    path = set_path(size, version)
    if not os.path.exists(path):
        known = sorted(name for name in os.listdir(board_io.BOARDS_DIR) if name.startswith("fewest_clicks_"))
        raise ValueError(f"no benchmark set {size} v{version}; there are {', '.join(known)}")
    lines = files.read_lines(path, "board file")
    rules = board_io.declared_rules(lines, path)  # a set's rules=NAME header: its lengths are of those rules
    records = board_io.read_board_lines(lines, path, limit=limit, rules=rules)
    values = np.array([record.values for record in records])
    return BoardSet(f"{size} v{version}", _read_only(np.stack([np.asarray(r.board) for r in records])),
                    _read_only(values[:, 0]), _read_only(values[:, 1]), rules)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclasses.dataclass(frozen=True)
class Row:
    """One agent's score on one set. Boards it did not clear count at their click cap."""

    agent: str
    set: str
    boards: int
    mean_clicks: float
    optimal: float  # share of proven boards cleared in their optimal number of clicks
    gap: float  # mean clicks above the optimum, over the proven boards
    cleared: float  # share of boards cleared
    seconds_per_board: float
    se: float = float("nan")  # the mean's standard error
    gap_se: float = float("nan")  # the gap's: of the per-board differences to the optimum

    UNDEFINED_AT_TIMES = ("optimal", "gap", "se", "gap_se")  # nan with no proven board, or one board
    HEADER = ("| agent | mean clicks (+- se) | optimal | gap to optimum (+- se) | cleared | time per board |\n"
              "|---|---:|---:|---:|---:|---:|")

    def markdown(self) -> str:
        optimal = "-" if np.isnan(self.optimal) else f"{self.optimal:.1%}"  # no proven board
        return (f"| {self.agent} | {with_error(self.mean_clicks, self.se, '.3f')} | {optimal} | "
                f"{with_error(self.gap, self.gap_se, '+.3f')} | {self.cleared:.1%} | "
                f"{timing(self.seconds_per_board)} |")


def with_error(value: float, error: float, spec: str) -> str:
    """``value +- error`` (the error to the value's precision), the value alone where there
    is no error (nan: one board), or ``-`` where there is no value (nan: a gap with no proven
    board)."""
    if np.isnan(value):
        return "-"
    shown = format(value, spec)
    return shown if np.isnan(error) else f"{shown} +- {error:.{spec[-2]}f}"


def timing(seconds: float) -> str:
    """A time per board as the tables print it, with two significant digits or more (the
    fastest agents took well under a millisecond a board, printed as "0 ms")."""
    milliseconds = seconds * 1000
    if seconds >= 1:
        return f"{seconds:.1f} s"
    return f"{milliseconds:.{2 if milliseconds < 1 else 1 if milliseconds < 10 else 0}f} ms"


def row(agent: str, board_set: BoardSet, clicks, cleared, seconds: float) -> Row:
    """The row of per-board ``clicks`` [N] and ``cleared`` [N] on ``board_set``'s first N boards."""
    clicks, cleared = np.asarray(clicks), np.asarray(cleared, bool)
    count = clicks.shape[0]
    best, proven = board_set.best[:count], board_set.proven[:count]
    below = cleared & (clicks < board_set.lower[:count])
    if np.any(below):
        # score replays every line on the set's own boards: there, the set's bound is what is wrong
        board = int(np.argmax(below))
        raise ValueError(f"{agent}: board {board} cleared in {int(clicks[board])} clicks, below the set's proven "
                         f"lower bound {int(board_set.lower[board])}: the set's bound, or the agent's line, is wrong")
    gaps = (clicks - best)[proven]
    return Row(agent, board_set.name, count, float(clicks.mean()),
               float(np.mean((clicks == best)[proven] & cleared[proven])) if proven.any() else float("nan"),
               float(np.mean(gaps)) if proven.any() else float("nan"),
               float(cleared.mean()), seconds / count, stats.standard_error(clicks),
               stats.standard_error(gaps) if proven.any() else float("nan"))


def replayed_lengths(boards: np.ndarray, solutions, max_clicks: int, what: str = "the solver",
                     rules: str = "dust") -> tuple[np.ndarray, np.ndarray]:
    """Lengths ``[N]`` and whether cleared ``[N]`` of one solution ``[(x, y), ...]`` per
    board of ``boards`` [N, W, H], each replayed under ``rules``: a click on an empty
    cell is a wasted click (RULES.md) and counts; a line that does not clear its board, or
    takes over ``max_clicks`` clicks, counts as not cleared, at ``max_clicks``.

    Raises:
      ValueError: not one solution per board, or a click that is not an (x, y) pair of ints
        on the board (naming the board and the click); ``UnsettledBoardError`` for a board
        the rules never make.
    """
    try:
        solutions = list(solutions)
    except TypeError:
        raise ValueError(f"{what} returned {type(solutions).__name__}, not one solution per board") from None
    if len(solutions) != len(boards):
        raise ValueError(f"{what} returned {len(solutions)} solutions for {len(boards)} boards")
    clicks, cleared = [], []
    for index, (board, solution) in enumerate(zip(boards, solutions)):
        try:
            # As given, not listed: replay reads a tuple as one (x, y) click and refuses it with a hint
            final, length = board_io.replay(board, solution, rules, wasted=True)
        except TypeError:
            raise ValueError(f"solution for board {index}: {solution!r} is not a sequence of (x, y) clicks") from None
        except board_io.UnsettledBoardError as error:  # the board's fault, not the solution's
            raise board_io.UnsettledBoardError(f"board {index}: {error}") from None
        except ValueError as error:
            raise ValueError(f"solution for board {index}: {error}") from None
        done = bool(game.is_done(final)) and length <= max_clicks
        clicks.append(length if done else max_clicks)
        cleared.append(done)
    return np.array(clicks), np.array(cleared)


def _computed(solutions):
    """A solver's answer with its work done, so that it is timed: a lazy one (a generator,
    ``map``, for the set or for a board) is listed, and JAX arrays are waited for."""
    if isinstance(solutions, Iterator):
        solutions = list(solutions)
    if isinstance(solutions, (list, tuple)):
        solutions = [list(s) if isinstance(s, Iterator) else s for s in solutions]
    # Only the arrays: walking every click tuple would be timed as the solver's. Anything
    # else is replayed_lengths' to refuse by name.
    parts = solutions if isinstance(solutions, list) else [solutions]
    for array in parts:
        if isinstance(array, jax.Array):
            array.block_until_ready()
    return solutions


def _required_arguments(function) -> int:
    """How many positional arguments ``function`` needs (0 where Python cannot tell): its
    own, not those of a function it wraps (``functools.wraps`` of a solver of one board)."""
    try:
        parameters = inspect.signature(function, follow_wrapped=False).parameters.values()
    except (TypeError, ValueError):  # some builtins and extension functions keep no signature
        return 0
    return sum(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def score(agent: str | Solver, board_set: str | BoardSet = "8x6x5", *, name: str | None = None,
          seed: int = 0, jobs: int = 1, limit: int | None = None, progress: bool = True,
          show: bool = True) -> Row:
    """Score an agent on a benchmark set, print its row (``show``) and return it.

    Args:
      agent: an agent name as ``evaluate.py --agents`` takes it (``"largest"``,
        ``"beam:64"``, ``"value:RUN_DIR:8"``, ``"mcts:RUN_DIR:64"``, ...), or a function taking the boards
        (int8 ``[N, W, H]`` numpy, a copy of the set's) and returning one solution
        ``[(x, y), ...]`` per board; those solutions are replayed on the set's boards
        (``replayed_lengths``: a click on an empty cell is a wasted click, and one that does
        not clear its board counts as not cleared).
      board_set: a size from ``SIZES`` (the current version) or a ``BoardSet`` (played
        under its ``rules``).
      name: the row's name (default: the agent's name, or the function's).
      seed: for stochastic agents.
      jobs: processes for the CPU solvers among the named agents.
      limit: score the set's first boards only (the row says how many).
    """
    from jaxdust.evaluation import registry  # it imports the learners; not needed for load_set

    if not (isinstance(agent, str) or callable(agent)):
        raise TypeError(f"agent must be an agent's name (as evaluate.py --agents takes it) or a function of the "
                        f"boards, got {agent!r}")
    if callable(agent) and (needed := _required_arguments(agent)) > 1:  # a policy(key, board, params)
        raise TypeError(f"agent {getattr(agent, '__name__', agent)!r} takes {needed} arguments: "
                        "score takes a function of the boards alone, solutions = agent(boards [N, W, H]), or an "
                        "agent's name (a policy of the baselines by its name: 'largest', 'random')")
    if not isinstance(board_set, (str, BoardSet)):
        raise TypeError(f"board_set must be a size ({', '.join(SIZES)}) or a BoardSet, got {board_set!r}")
    if limit is not None and (not game.is_integer(limit) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    if not game.is_integer(jobs) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if not game.is_integer(seed) or not 0 <= seed <= flags.MAX_SEED:
        raise ValueError(f"seed must be an integer in 0..{flags.MAX_SEED}, got {seed!r}")
    if isinstance(board_set, str):
        board_set = load_set(board_set, limit=None if limit is None else int(limit))
    elif limit is not None:
        board_set = dataclasses.replace(board_set, boards=board_set.boards[:limit], best=board_set.best[:limit],
                                        lower=board_set.lower[:limit])
    count, width, height = board_set.boards.shape
    max_clicks = width * height
    start = time.perf_counter()
    if callable(agent):
        # A copy: the lines are replayed on the set's own boards, which the solver may not
        # change (in place, by playing on them or otherwise).
        solutions = _computed(agent(np.array(board_set.boards)))
        seconds = time.perf_counter() - start
        clicks, cleared = replayed_lengths(board_set.boards, solutions, max_clicks, rules=board_set.rules)
        label = name or str(getattr(agent, "__name__", "solver"))
    else:
        with progress_bar(total=count, unit="board", desc=agent, enabled=progress, leave=False) as bar:
            result = registry.run_agent(agent, board_set.boards, key=registry.agent_key(seed), max_clicks=max_clicks,
                                        jobs=jobs, progress=bar.update, rules=board_set.rules)
        seconds = time.perf_counter() - start
        clicks, cleared = result["clicks"], result["cleared"]
        label = name or agent
    scored = row(label, board_set, clicks, cleared, seconds)
    if show:
        print(f"{board_set.name}, {count} boards\n{Row.HEADER}\n{scored.markdown()}")
    return scored


def solver_log_records(path: str, boards, rules: str = "dust") -> list[dict]:
    """The records of ``python -m jaxdust.solver --out`` (JSON lines) for ``boards``
    (int ``[N, W, H]``) under ``rules``, in their order; ValueError naming how many are
    missing, or a record of one of them solved under other rules or read at another shape
    (the same digits are another board there)."""
    found = {}
    for number, record in enumerate(files.recover_json_lines(path, repair=False), start=1):
        if "length" in record:  # an error's record has none
            problem = _solver_record_problem(record)
            if problem:
                raise ValueError(f"{path}:{number} is not a solver result as python -m jaxdust.solver writes them "
                                 f"({problem}); was it edited by hand?")
            found[record["board"]] = record
    texts = [board_io.board_to_text(board) for board in boards]
    _, width, height = np.shape(boards)
    for index, text in enumerate(texts):
        record = found.get(text, {})
        if record.get("rules", rules) != rules:  # lines written before 0.2.21 carry no rules
            raise ValueError(f"{path} solved the board of index {index} (line {record['line']}) under rules "
                             f"{record['rules']}, not {rules}: the log of another solver run")
        if record.get("width", width) != width or record.get("height", height) != height:
            raise ValueError(f"{path} solved the board of index {index} (line {record['line']}) at "
                             f"{record['width']}x{record['height']}, not {width}x{height}: the log of another "
                             "solver run")
    missing = [index for index, text in enumerate(texts) if text not in found]
    if missing:
        raise ValueError(f"{path} lacks {len(missing)} of the {len(texts)} boards (the first at index "
                         f"{missing[0]}, counted from 0)")
    return [found[text] for text in texts]


def _solver_record_problem(record: dict) -> str | None:
    """What keeps a solver log's result record from being read as one, or None."""
    def whole(value):
        return game.is_integer(value) and value >= 0

    seconds = record.get("seconds")
    for problem, wrong in (("its board is not text", not isinstance(record.get("board"), str)),
                           ("its length is not a whole number", not whole(record["length"])),
                           ("its line is not a whole number", not whole(record.get("line"))),
                           ("its clicks are not a list", not isinstance(record.get("clicks"), list)),
                           ("its optimal is not true or false", not isinstance(record.get("optimal"), bool)),
                           # absent from the lines of older versions, which were all of the set's own shape
                           ("its width is not a whole number", "width" in record and not whole(record["width"])),
                           ("its height is not a whole number", "height" in record and not whole(record["height"])),
                           ("its rules are not text", "rules" in record and not isinstance(record["rules"], str)),
                           ("its seconds are not a time", isinstance(seconds, bool)
                            or not isinstance(seconds, (int, float)) or not 0 <= seconds < float("inf"))):
        if wrong:
            return problem
    return None


def write_set(size: str, boards: np.ndarray, best, lower, source: str, version: int = VERSION,
              rules: str = "dust") -> str:
    """Publish a set as ``set_path(size, version)`` and return the path; a published
    version is never rewritten (ValueError), since scores on it must stay comparable."""
    path = set_path(size, version)
    if os.path.exists(path):
        raise ValueError(f"{path} is published; make version {version + 1} instead")
    checked = BoardSet(size, boards, best, lower, rules)  # a fewest-clicks rule set, lengths per board, or ValueError
    boards, best, lower = checked.boards, checked.best, checked.lower
    _, width, height = boards.shape
    colors = int(np.max(boards))
    # The name leads with the size ("8x6x5", "5x5x3_former"), which the benchmark's users read.
    named = board_io.parse_size(size.partition("_")[0], rules)
    if (named.width, named.height) != (width, height) or colors > named.colors:
        raise ValueError(f"write_set: the set's name {size!r} says {named.width}x{named.height} boards of at most "
                         f"{named.colors} colours; these are {width}x{height} with {colors}")
    rules_field = "" if rules == "dust" else f" rules={rules}"  # load_set reads it back (declared_rules)
    lines = [f"# width={width} height={height} colors={colors}{rules_field}; cells listed x-major: "
             f"cell (x,y) is character x*{height}+y, y=0 bottom row",
             f"# fewest-clicks benchmark, set {size} version {version}: {len(boards)} boards, "
             f"{int(np.sum(best == lower))} with a proven optimum",
             f"# {board_io.FEWEST_CLICKS_COLUMNS} (equal: the optimum). {source}"]
    lines += [f"{board_io.board_to_text(board)} {b} {lo}" for board, b, lo in zip(boards, best, lower)]
    files.atomic_write_bytes(path, ("\n".join(lines) + "\n").encode())
    return path
