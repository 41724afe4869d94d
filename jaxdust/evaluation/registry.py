"""Every way of clearing boards behind one interface: ``run_agent("beam:500", boards, ...)``.

An agent is named ``name[:value]`` (``"solver:5"``, ``"value:runs/avi-0:8"``). The
registry ``AGENTS`` holds one ``Agent`` per name: its description, a parser for the text
after the colon and a function that plays a batch of boards. A new agent is one
``register(Agent(...))`` call; from then on, in that Python process, ``run_agent``,
``benchmark.score``, ``jaxdust.evaluation.cli.main`` (``evaluate.py``) and
``jaxdust.evaluation.leaderboard.main`` take its name (docs/benchmark.md, "Your own agent").
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import sys
import urllib.parse
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import files, flags, game, machine
from jaxdust.core.flags import INT32_LIMIT
from jaxdust.core.boards import positions, require_settled
from jaxdust.core.play import play_in_chunks
from jaxdust.core.processes import ordered_map
from jaxdust.core.progress import note
from jaxdust.evaluation import baselines
from jaxdust.learn import published
from jaxdust.learn.runs import EVALUATION_SEED, fingerprint, load_run, read_run_config, selected_by
from jaxdust.search.beam import (CHUNK, LOOKAHEAD_SHORTLIST, beam_solutions, child_bytes, require_beam_memory,
                                 require_children_indexable)
from jaxdust.search.heuristic import heuristic_for
from jaxdust.search.points import CHILD_BYTES as POINTS_CHILD_BYTES, MAX_CELLS as POINTS_BEAM_CELLS, points_beam_solutions
from jaxdust.search.mcts import MCTSPolicy, heuristic_evaluator_for, search_bytes
from jaxdust.solver.api import compile_notice, solve
from jaxdust.solver.bitboard import MAX_CELLS
from jaxdust.solver import compiled, points, upper_bound
from jaxdust.solver.dfs import solve_dfs


class Context(NamedTuple):
    """What every agent is played with."""

    key: jax.Array  # PRNG key for stochastic policies
    max_clicks: int  # a game not cleared within this many clicks counts as not cleared
    chunk: int  # boards played at once by device policies
    jobs: int  # processes for the CPU solvers
    progress: Callable[[int], Any] | None  # called with the number of boards just finished
    solutions: int = 0  # keep the clicks [(x, y), ...] played on this many first boards
    rules: str = "dust"  # the rule set the boards are played under (RULES.md)


@dataclasses.dataclass(frozen=True)
class Agent:
    """One way of clearing boards. ``play(settings, boards, context)`` plays the boards
    int8 ``[N, W, H]`` under ``context.rules`` and returns a dict of NumPy-convertible
    arrays ``[N]``: ``clicks`` and ``cleared`` (bool); under the points rules
    (``game.POINTS_RULES``) also ``points`` and ``cells_left``; optionally ``proven``
    (bool: its length is the optimum) and ``solutions``, the clicks ``[(x, y), ...]``
    played on the first ``context.solutions`` boards (animated by ``evaluate.py
    --animate``; none are drawn without them). ``run_agent`` checks that dict."""

    name: str
    description: str
    parameter: str | None  # the meaning of the value after ':', None if it takes none
    parse: Callable[[str], Any]  # the text after ':' ("" if none) -> settings; ValueError
    play: Callable[[Any, jax.Array, Context], dict]  # (settings, boards [N, W, H], context)
    rules: tuple[str, ...] = ("dust",)  # the rule sets it plays
    bitboard_rules: tuple[str, ...] = ()  # those it plays on 64-bit planes: boards of at most 64 cells


AGENTS: dict[str, Agent] = {}
BUILT_IN: dict[str, Agent] = {}  # jaxdust's own agents, filled once this module has registered them


def register(agent: Agent, replace: bool = False) -> Agent:
    """Add ``agent`` to ``AGENTS``; ValueError where it would replace one of jaxdust's own
    agents, unless ``replace`` (its name would otherwise play other code unnoticed). An agent
    registered by the user is replaced by another of its name (a notebook cell run again)."""
    if not isinstance(agent, Agent):
        raise TypeError(f"register takes an Agent, got {type(agent).__name__}")
    if is_built_in(agent.name) and not replace:
        raise ValueError(f"agent {agent.name!r} is one of jaxdust's ({AGENTS[agent.name].description}); give "
                         "yours another name, or register(..., replace=True)")
    if not isinstance(agent.name, str) or not agent.name or any(mark in agent.name for mark in ":,") \
            or agent.name != "".join(agent.name.split()):  # an agent list splits on them
        raise ValueError(f"an agent's name holds no ':', ',' or space, and is not empty: not {agent.name!r}")
    AGENTS[agent.name] = agent
    return agent


def is_built_in(text: str) -> bool:
    """Whether agent entry ``text`` names one of jaxdust's own agents, not one a user
    registered (whose code the leaderboard cannot tell apart between calls)."""
    name = text.strip().partition(":")[0]
    return name in BUILT_IN and AGENTS.get(name) is BUILT_IN[name]


# Names of 0.1.0, refused with their replacement: "greedy" means width-1 play on a value,
# which greedy:RUN (the network's own choice) never was.
RENAMED = {"greedy": "policy:RUN (the network's own choice; greedy play on its value is value:RUN:1)",
           "lookahead": "value:RUN[:WIDTH]"}


def agent_key(seed: int) -> jax.Array:
    """The key every agent of an evaluation with ``seed`` plays with: one for all, so that an
    agent plays alike wherever it is listed and however the rows were kept, and apart from
    ``jax.random.key(seed)``, which random board sets are drawn from."""
    # Random boards take game.indexed_keys(key(seed), N), fold_in(key(seed), i), and no board
    # index reaches INT32_LIMIT.
    return jax.random.fold_in(jax.random.key(seed), INT32_LIMIT)


def parse_agent(text: str) -> tuple[Agent, Any]:
    """The agent and its settings for ``"name[:value]"``; ValueError naming the problem."""
    name, colon, rest = text.strip().partition(":")
    if name in RENAMED:
        raise ValueError(f"agent {name!r} was renamed in 0.2.0 and removed in 0.2.23: use {RENAMED[name]}")
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; choose from {', '.join(AGENTS)}")
    agent = AGENTS[name]
    if (rest or colon) and agent.parameter is None:
        raise ValueError(f"agent {name!r} takes no parameter")
    if colon and not rest and not _is_run_agent(agent):  # "beam:" hid the default's width
        raise ValueError(f"agent {name!r}: nothing after ':' (its {agent.parameter}); give one or leave the ':' "
                         f"out for the default")
    return agent, agent.parse(rest)


NEWEST = "@newest"


def split_run(run: str) -> tuple[str, bool]:
    """The directory of a run agent's ``RUN`` or ``RUN@newest``, and whether it plays the
    run's newest checkpoint rather than the one it selected (``best-argmax/`` for
    ``policy:``, ``best/`` for the others). A directory whose
    own name ends in ``@newest`` stays a directory. ``@NAME`` is a published network's
    folder (``jaxdust.learn.published``; one that is not published holds no run)."""
    named, newest = _named_run(run)
    return published.resolve(named, strict=False), newest


def _named_run(run: str) -> tuple[str, bool]:
    """``RUN`` as written (a directory or ``@NAME``) without ``@newest``, and whether it had it."""
    newest = run.endswith(NEWEST) and not _holds_run(run)
    return (run[: -len(NEWEST)] if newest else run), newest


def _is_run_agent(agent: Agent) -> bool:
    """Whether ``agent`` plays a trained run (its value starts with the run directory)."""
    return (agent.parameter or "").startswith("run directory")


def _run_of(agent: Agent, settings) -> str | None:
    """The run an agent plays, as written (``RUN`` or ``RUN@newest``), from its parsed
    settings, or None."""
    if not _is_run_agent(agent):
        return None
    return settings if isinstance(settings, str) else settings[0]


def run_of(text: str) -> str | None:
    """The run directory an agent entry plays (``policy:RUN``, ``value:RUN@newest:8``, ...), or None."""
    run = _run_of(*parse_agent(text))
    return None if run is None else split_run(run)[0]


def note_selection_boards(seed: int, agents) -> None:
    """Say on stderr where random boards of ``seed`` are the ones a run's checkpoints were
    selected on (``runs.EVALUATION_SEED``) and ``agents`` play a run: its figures there
    flatter it."""
    if seed == EVALUATION_SEED and any(run_of(agent) for agent in agents):
        print(f"note: --seed {EVALUATION_SEED} draws, first, the boards train.py evaluates a run on as it trains "
              f"and picks its best/ and best-argmax/ checkpoints by: for boards no run was selected on, give another "
              f"--seed", file=sys.stderr)


def _require_rules(agent: Agent, rules: str) -> None:
    if rules not in agent.rules:
        raise ValueError(f"agent {agent.name!r} plays the {', '.join(agent.rules)} rules, not {rules!r}")


PLAY_CHUNK = 256  # boards a policy plays (or an MCTS agent searches) together, by default


def require_playable(names, rules: str, width: int, height: int, colours: int | None = None,
                     boards: int = 1, chunk: int = PLAY_CHUNK, jobs: int = 1) -> None:
    """ValueError naming the first agent of ``names`` that cannot play ``width x height``
    boards (holding colours up to ``colours``, if given) under ``rules``: the numba
    searches' bitboards hold 64 cells, a search's width or simulations must fit in memory
    (of ``boards`` boards, an MCTS agent searches ``chunk`` together, in the device's
    memory; ``jobs`` processes each run a numba beam, in the machine's), a run plays the
    size, rules and colours it was trained on (read from its config.json), and ``mcts:``
    searches only a run with a policy and a value. A command calls it so that it refuses
    before any agent has played, not after."""
    cells = width * height
    boards_at_once, processes = min(chunk, boards), min(jobs, boards)
    for name in names:
        agent, settings = parse_agent(name)
        _require_rules(agent, rules)
        if rules in agent.bitboard_rules and cells > MAX_CELLS:
            raise ValueError(f"agent {agent.name!r} plays boards of at most {MAX_CELLS} cells under the {rules} "
                             f"rules (numba bitboards), not {width}x{height}")
        if agent.name == "beam" and rules not in game.CLICK_RULES and cells > POINTS_BEAM_CELLS:
            raise ValueError(f"agent 'beam' plays boards of at most {POINTS_BEAM_CELLS} cells under the {rules} "
                             f"rules (its hash tables), not {width}x{height}")
        if agent.name in ("beam", "value"):  # a width too wide for one board's children, refused before play
            beam_width = settings if agent.name == "beam" else settings[1]
            require_children_indexable(name, 1, beam_width, cells, CHUNK)
            require_beam_memory(name, 1, beam_width, cells,
                                child_bytes(cells, cells) if rules in game.CLICK_RULES else POINTS_CHILD_BYTES)
        if agent.name == "cpu-beam":  # one board's search in each process
            needed = (upper_bound.beam_bytes(settings, cells, colours or game.MAX_COLORS)
                      if rules in game.CLICK_RULES else points.beam_bytes(settings, cells))
            machine.require_memory(f"{name} on {processes} {width}x{height} board{'s' if processes > 1 else ''} at "
                                   f"a time", processes * needed)
        if agent.name in ("mcts", "mcts-heuristic"):
            simulations = settings[1] if agent.name == "mcts" else settings
            machine.require_memory(f"{name}'s searches of {boards_at_once} {width}x{height} boards at a time",
                                   search_bytes(boards_at_once, simulations, cells), device=True)
        run = _run_of(agent, settings)
        if run is not None:
            learner, config = read_run_config(split_run(run)[0])
            _require_trained_for(run, config.game, rules, width, height, colours)
            if agent.name == "mcts" and learner.evaluator(config) is None:
                raise ValueError(f"{run} is a run of {learner.name}, which has no policy and value to search with "
                                 f"(mcts:); try value:{run}")
            _loaded_run(run, PLAYED_BY[agent.name])  # a run with no checkpoint that reads is refused now too


# The measure of play that selects the checkpoint each run agent plays (load_run's ``by``):
# the policy's argmax for policy:, greedy play on the value for the searches.
PLAYED_BY = {"policy": "argmax", "value": "greedy", "mcts": "greedy"}


def _loaded_run(run: str, by: str) -> tuple[Any, dict]:
    """``load_run`` of ``RUN`` (its checkpoint selected ``by`` a measure of play) or
    ``RUN@newest``, read once for all the agents that play it (and its warnings said once),
    and again when the run has changed on disk since; and what a result played on it
    records: the run as given, the checkpoint played (relative to the run directory) and the
    run's fingerprint."""
    named, newest = _named_run(run)
    directory = published.resolve(named, strict=False)
    digest = fingerprint(directory)
    # Keyed by the checkpoint read, so that two agents playing the same one share it.
    trained = _load_run_as_it_is(os.path.abspath(directory), selected_by(directory, newest, by), digest)
    return trained, {"run": named if named.startswith(published.PREFIX) else directory,
                     "checkpoint": trained.checkpoint, "fingerprint": digest}


@functools.lru_cache(maxsize=8)
def _load_run_as_it_is(directory: str, measure: str | None, _fingerprint: str):
    return load_run(directory, newest=measure is None, by=measure or "greedy")


def _require_trained_for(run: str, trained: game.GameConfig, rules: str, width: int, height: int,
                         colours: int | None) -> None:
    if (trained.width, trained.height) != (width, height):
        raise ValueError(f"{run} was trained on {trained.width}x{trained.height} boards; these are {width}x{height}")
    if trained.rules != rules:
        raise ValueError(f"{run} was trained on the {trained.rules} rules; these boards are played under {rules}")
    if colours is not None and colours > trained.colors:  # its one-hot input would show those cells as blank
        raise ValueError(f"{run} was trained on boards of {trained.colors} colours; these hold colour {colours}")


def parse_agent_list(text: str, rules: str | None = None) -> list[str]:
    """The agent names of a comma-separated list, each checked by ``parse_agent`` (and, if
    given, for playing ``rules``); ValueError for an empty list, a repeated agent or a bad one."""
    names = [part.strip() for part in text.split(",")]
    if not any(names):
        raise ValueError(f"no agent given; choose from {', '.join(AGENTS)}")
    if not all(names):
        raise ValueError(f"empty name in {text!r}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} given more than once")
    seen: dict[str, str] = {}  # an agent's identity -> its first spelling
    for index, name in enumerate(names):
        try:
            if rules is not None:
                _require_rules(parse_agent(name)[0], rules)
            identity = agent_identity(name)
        except ValueError as error:
            hint = _comma_in_a_path(text.split(","), index)
            if not hint:
                raise
            raise type(error)(f"{error}{hint}") from None
        same = seen.setdefault(identity, name)
        if same != name:  # "beam" and "beam:200": the default spelt out
            raise ValueError(f"{same} and {name} are the same agent")
    return names


def _comma_in_a_path(parts: list[str], index: int) -> str:
    """Where the item ``parts[index]`` of a list split at commas, joined with those after it,
    names an existing path (``policy:runs/a, b``): a hint that a run directory holding ','
    cannot be listed; else ""."""
    for end in range(index + 2, len(parts) + 1):
        value = ",".join(parts[index:end]).strip().partition(":")[2]
        for path in (path for path in (value, value.rpartition(":")[0]) if "," in path and os.path.exists(path)):
            return (f" (the list is split at its commas, and the path {path!r} holds one: give a symbolic "
                    "link to it whose path holds none)")
    return ""


def agent_identity(text: str) -> str:
    """One text for every spelling of an agent entry: ``beam``, ``beam:200`` and
    ``beam:0200`` give the same, and so do ``policy:runs/a``, ``policy:runs/a/`` and
    ``policy:./runs/a``. ValueError as ``parse_agent``."""
    agent, settings = parse_agent(text)
    run = _run_of(agent, settings)
    if run is not None:
        path = run
        if not run.startswith(published.PREFIX):
            path = os.path.normpath(run)
            if path.startswith(published.PREFIX):  # ./@x, a folder, is not @x, a published network
                path = os.path.join(".", path)
        settings = (path, () if isinstance(settings, str) else settings[1:])
    return agent.name if settings is None else f"{agent.name}:{settings!r}"


def agent_file(text: str) -> str:
    """The name of the file that keeps an agent entry's results (a leaderboard's row, an
    evaluation's play), whatever its spelling: ``beam:08`` and ``beam:8`` share one; a long
    run path is shortened."""
    return files.short_file_name(urllib.parse.quote(agent_identity(text), safe="")) + ".json"


def run_agent(text: str, boards, *, key: jax.Array, max_clicks: int, chunk: int = PLAY_CHUNK,
              jobs: int = 1, progress=None, solutions: int = 0, rules: str = "dust") -> dict:
    """Play or solve every board with agent ``text`` under ``rules``.

    Returns numpy arrays ``clicks`` [N] and ``cleared`` [N], ``proven`` [N] for the exact
    solver (where cleared, its length is the optimum), ``points`` [N] and ``cells_left``
    [N] where the agent plays the points rule sets, and with ``solutions`` the clicks
    ``[(x, y), ...]`` on the first that many boards (``"solutions"``, e.g. for
    ``jaxdust.game_gif``: a policy's clicks played; a search's line, whole, which may be
    longer than ``max_clicks``, or ``[]`` where it found none: the JAX beam past
    ``max_clicks``, ``dfs`` past its positions), and for a trained run's agent what it
    played (``"played"``: the run, the checkpoint in it and the run's fingerprint). Under
    the fewest-clicks rules ``max_clicks`` holds for every agent: a board cleared in more
    clicks (a search's line) counts as not cleared, at ``max_clicks``, as a policy stopped
    there does. Raises ValueError for an unusable agent, one that does not play ``rules``,
    boards that are not settled under them, and bad settings; TypeError for a ``key``
    that is no key.
    """
    agent, settings = parse_agent(text)
    _require_rules(agent, rules)
    game.require_key(key, "run_agent")
    for name, value in (("max_clicks", max_clicks), ("jobs", jobs)):  # the click counters are int32
        if not game.is_integer(value) or not 1 <= value < INT32_LIMIT:
            raise ValueError(f"run_agent: {name} must be a positive integer below 2^31, got {value!r}")
    boards = jnp.asarray(game.from_lists(boards), game.BOARD_DTYPE)  # checked: colour 257 would wrap round to 1
    if boards.ndim != 3 or 0 in boards.shape:
        raise ValueError(f"run_agent takes boards [N, W, H], got shape {boards.shape}")
    require_settled(boards, rules, "run_agent")  # the numba beam would play a floating cell
    require_playable([text], rules, boards.shape[1], boards.shape[2], int(jnp.max(boards)),
                     boards=len(boards), chunk=chunk, jobs=jobs)
    context = Context(key, max_clicks, chunk, jobs, progress, solutions, rules)
    played = _required_play(agent.name, agent.play(settings, boards, context), rules, len(boards))
    if rules in game.CLICK_RULES:
        clicks = np.asarray(played["clicks"])
        cleared = np.asarray(played["cleared"], bool) & (clicks <= max_clicks)
        played = {**played, "clicks": np.minimum(clicks, max_clicks), "cleared": cleared}
        if "proven" in played:
            played["proven"] = np.asarray(played["proven"], bool) & cleared
    return played


def _required_play(name: str, played, rules: str, count: int) -> dict:
    """An agent's ``play`` result (``Agent``) with ``solutions`` ([] where it keeps none);
    ValueError naming what it lacks: a registered agent's mistake otherwise surfaced as a
    KeyError inside ``evaluate.py``."""
    if not isinstance(played, dict):
        raise ValueError(f"agent {name!r}: play returned a {type(played).__name__}, not a dict (Agent's docstring)")
    needed = ("clicks", "cleared", *(("points", "cells_left") if rules in game.POINTS_RULES else ()))
    for key in needed:
        if key not in played:
            raise ValueError(f"agent {name!r}: play returned no {key!r} (it returns {', '.join(needed)} under the "
                             f"{rules} rules: Agent's docstring)")
        if np.shape(played[key]) != (count,):
            raise ValueError(f"agent {name!r}: play's {key!r} has shape {np.shape(played[key])}, not ({count},): "
                             "one value a board")
    arrays = {key: np.asarray(played[key]) for key in (*needed, "proven") if key in played}  # JSON takes NumPy's
    return {"solutions": [], **played, **arrays}


def _clicks(actions, height: int) -> list[tuple[int, int]]:
    """Flat actions (``-1`` after the end) as ``[(x, y), ...]``."""
    return [divmod(int(a), height) for a in np.asarray(actions) if a >= 0]


# ---------------------------------------------------------------------------------------
# Parsers and players shared by several agents
# ---------------------------------------------------------------------------------------


def _number(text: str, what: str, default: float, integer: bool) -> float | int:
    """A positive finite number (an int where ``integer``), or ``default`` for ``""``."""
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0 or (integer and value != int(value)):
        kind = "a positive integer" if integer else "a positive number"
        raise ValueError(f"{what} must be {kind}, got {text!r}")
    if integer and value >= INT32_LIMIT:
        raise ValueError(f"{what} must be below 2^31, got {text!r}")
    return int(value) if integer else value


def _no_parameter(text: str) -> None:
    return None


def _play_policy(policy, params, boards, context: Context) -> dict:
    played = play_in_chunks(boards, policy, context.key, context.max_clicks, context.chunk, context.progress, params,
                            context.rules)
    return {"clicks": np.asarray(played.clicks), "cleared": np.asarray(played.cleared),
            "points": np.asarray(played.points), "cells_left": np.asarray(played.cells_left),
            "solutions": [_clicks(a, boards.shape[2]) for a in np.asarray(played.actions[: context.solutions])]}


def _play_beam(width: int, scorer, params, boards, context: Context) -> dict:
    lengths, actions = beam_solutions(boards, width, scorer, params, context.max_clicks, progress=context.progress,
                                      rules=context.rules)
    solutions = [_clicks(found[: max(int(length), 0)], boards.shape[2])
                 for length, found in zip(lengths[: context.solutions], actions[: context.solutions])]
    return {"clicks": np.where(lengths < 0, context.max_clicks, lengths), "cleared": lengths >= 0,
            "solutions": solutions}


_TINY_BOARD = np.array([[1, 2], [1, 2]], np.int8)  # a search's first use, for its compiling alone


def _in_processes(work: Callable, items: list, context: Context, warm: Callable | None = None) -> list:
    """``[work(item) for item in items]``, over ``context.jobs`` processes. ``warm()``, the
    numba search's first use, runs here first where there are several: its loading notice
    (a cold cache) is then said once, above the bar, and the workers load the cache it fills
    (a worker's notice would land on the bar's line, once a worker)."""
    jobs = context.jobs if len(items) > 1 else 1  # one item here: a worker would load the search again
    if warm is not None and jobs > 1:
        warm()
    results = []
    for result in ordered_map(work, items, jobs):
        results.append(result)
        if context.progress is not None:
            context.progress(1)
    return results


# ---------------------------------------------------------------------------------------
# The agents
# ---------------------------------------------------------------------------------------


ALL_RULES = tuple(game.RULES)
register(Agent("random", "clicks a random legal cell (so a group in proportion to its size)", None, _no_parameter,
               lambda _, boards, context: _play_policy(baselines.RandomLegal(context.rules), None, boards, context),
               ALL_RULES))


def _play_largest(_, boards, context: Context) -> dict:
    # The points rule sets' largest-first is UVa 758's (its tie-break, groups of 2 or more).
    largest = baselines.largest_cluster if context.rules in game.CLICK_RULES else baselines.largest_group
    return _play_policy(largest, None, boards, context)


register(Agent("largest", "clicks the largest group (points rules: UVa 758's tie-break)", None, _no_parameter,
               _play_largest, ALL_RULES))


def _dfs_clicks(job) -> list | None:
    """The search's line, or None where it found none within its positions."""
    board, positions = job
    try:
        return solve_dfs(board, time_limit=None, node_limit=positions)
    except TimeoutError:
        return None


def _play_dfs(positions: int, boards, context: Context) -> dict:
    found = _in_processes(_dfs_clicks, [(b, positions) for b in np.asarray(boards)], context,
                          warm=lambda: _dfs_clicks((_TINY_BOARD, 10)))
    cleared = np.array([clicks is not None for clicks in found])  # none found: not cleared, at the cap
    return {"clicks": np.array([context.max_clicks if clicks is None else len(clicks) for clicks in found]),
            "cleared": cleared, "solutions": [clicks or [] for clicks in found[: context.solutions]]}


register(Agent(
    "dfs", "the original post's depth-first search", "positions searched",
    lambda text: _number(text, "dfs: positions searched", 100_000, integer=True),
    _play_dfs, bitboard_rules=("dust",),
))

def _play_jax_beam(width: int, boards, context: Context) -> dict:
    if context.rules in game.CLICK_RULES:
        return _play_beam(width, heuristic_for(context.rules), None, boards, context)
    found = points_beam_solutions(boards, width, context.rules, progress=context.progress)
    height, lengths = boards.shape[2], found.length
    lines = [_clicks(actions[:length], height) for actions, length in zip(found.actions, lengths)]
    played = [positions(board, line, context.rules) for board, line in zip(boards, lines)]  # checks every click
    cells_left = np.array([int(np.count_nonzero(steps[-1])) for steps, _ in played])
    points = np.array([sum(int(game.points(int(np.sum(c)))) for c in clusters) for _, clusters in played])
    return {"clicks": lengths, "cleared": cells_left == 0, "cells_left": cells_left,
            "points": points + np.where(cells_left == 0, game.CLEAR_BONUS, 0), "solutions": lines[: context.solutions]}


register(Agent(
    "beam", "JAX beam search: the tuned hand-made scorer for clicks; for points and cells left, the gain so far "
    "plus the largest colour's", "width",
    lambda text: _number(text, "beam: width", 200, integer=True), _play_jax_beam, ALL_RULES,
))


def _cpu_beam_result(job) -> list:
    board, width, rules = job
    return upper_bound.beam_clicks(board, width, int(board.max()), LOOKAHEAD_SHORTLIST, rules)


def _play_cpu_beam(width: int, boards, context: Context) -> dict:
    if context.rules not in game.CLICK_RULES:
        return _play_points("beam", width, boards, context)
    found = _in_processes(_cpu_beam_result, [(b, width, context.rules) for b in np.asarray(boards)], context,
                          warm=lambda: _cpu_beam_result((_TINY_BOARD, 1, context.rules)))
    return {"clicks": np.array([len(clicks) for clicks in found]), "cleared": np.ones(len(found), bool),
            "solutions": found[: context.solutions]}


register(Agent(
    "cpu-beam", "numba beam search: for clicks the solver's upper bound (tuned scorer, one-click lookahead on a "
    "shortlist); for points and cells left as the JAX beam's, repeated positions kept once", "width",
    lambda text: _number(text, "cpu-beam: width", 2000, integer=True),
    _play_cpu_beam, ALL_RULES, bitboard_rules=game.CLICK_RULES,
))


def _solver_result(job) -> tuple[int, bool, list]:
    board, seconds, rules = job
    result = solve(board, time_limit=seconds, rules=rules)
    return result.length, result.optimal, result.clicks


def _play_solver(seconds: float, boards, context: Context) -> dict:
    results = _in_processes(_solver_result, [(b, seconds, context.rules) for b in np.asarray(boards)], context,
                            warm=compiled.compile_searches)
    return {"clicks": np.array([r[0] for r in results]), "cleared": np.ones(len(results), bool),
            "proven": np.array([r[1] for r in results]), "solutions": [r[2] for r in results[: context.solutions]]}


register(Agent(
    "solver", "exact solver (numba IDA*)", "seconds per board",
    lambda text: _number(text, "solver: seconds per board", 10.0, integer=False),
    _play_solver, game.CLICK_RULES, bitboard_rules=game.CLICK_RULES,
))


def _points_result(job) -> tuple[list, int, int]:
    board, search, setting, rules, seed = job
    line = points.beam(board, setting, rules) if search == "beam" else points.nmcs(board, setting, rules, seed)
    return line.clicks, line.points, line.cells_left


def _play_points(search: str, setting: int, boards, context: Context) -> dict:
    seed = int(jax.random.randint(context.key, (), 0, 2**31 - 1, jnp.int32))  # int32 under x64 too: one seed

    def warm() -> None:
        if search == "beam":
            points.beam(_TINY_BOARD, 1, context.rules)
        else:  # not cached: each worker compiles it, which no load here saves them
            note(compile_notice(f"the level-{setting} NMCS search", "5-20 s", kept=False,
                                workers=min(context.jobs, len(boards))))

    found = _in_processes(_points_result, [(b, search, setting, context.rules, seed) for b in np.asarray(boards)],
                          context, warm=warm)
    cells_left = np.array([r[2] for r in found])
    return {"clicks": np.array([len(r[0]) for r in found]), "cleared": cells_left == 0,
            "points": np.array([r[1] for r in found]), "cells_left": cells_left,
            "solutions": [r[0] for r in found[: context.solutions]]}


POINTS_RULES = tuple(name for name in game.RULES if name not in game.CLICK_RULES)
register(Agent(
    "nmcs", "nested Monte Carlo search (numba), tabu-colour playouts", "level (1 or 2)",
    lambda text: _level(text), lambda level, boards, context: _play_points("nmcs", level, boards, context),
    POINTS_RULES,
))


def _level(text: str) -> int:
    level = int(_number(text, "nmcs: level", 1, integer=True))
    if level not in (1, 2):
        raise ValueError(f"nmcs: level must be 1 or 2, got {text!r}")
    return level


def _run_directory(text: str) -> str:
    """``RUN`` or ``RUN@newest`` (RUN a directory or ``@NAME``), checked before any agent
    plays, so a typo does not waste the agents before it."""
    named, newest = _named_run(text)
    head, at, tail = named.rpartition("@")
    if at and head and not os.path.exists(named) and _holds_run(head):
        or_newest = "" if published.is_published(head) else f" or, as {head}{NEWEST}, at its newest"
        raise ValueError(f"{text}: a run is played at its selected checkpoint{or_newest}; @{tail} is neither")
    if flags.unexpanded_home(named):
        raise ValueError(f"{text}: '~' is no folder here: the shell does not expand it inside an agent's name "
                         "(write $HOME/...)")
    read_run_config(named)  # RunError, a ValueError (an unknown @NAME named as such)
    if newest:
        selected_by(published.resolve(named), newest=True)  # RunError for a published network
    return text


def _holds_run(directory: str) -> bool:
    """Whether ``directory`` is a run's (its ``config.json`` there), read without checking it."""
    return os.path.isfile(os.path.join(directory, "config.json"))


def _run_then_more(text: str, run: str) -> bool:
    """Whether ``text`` is no path but ``run`` (its part before the last ':') is a run
    directory: ``RUN:...`` names a run and something after it."""
    return bool(run) and not os.path.exists(text) and _holds_run(split_run(run)[0])


def _run_only(name: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if not text or text.startswith(":"):
            raise ValueError(f"needs a run directory: {name}:RUN_DIR")
        run, _, number = text.rpartition(":")
        if number.isdigit() and _run_then_more(text, run):
            raise ValueError(f"{name}: takes no number after the run ({name}:RUN_DIR[@newest]), got {text!r}")
        return _run_directory(text)
    return parse


def _run_and_number(name: str, what: str, default: int) -> Callable[[str], tuple[str, int]]:
    """A parser of ``RUN_DIR`` or ``RUN_DIR:NUMBER`` (a run directory may itself contain ':')."""
    def parse(text: str) -> tuple[str, int]:
        if not text or text.startswith(":"):
            raise ValueError(f"needs a run directory: {name}:RUN_DIR[:{what.upper()}]")
        directory, newest = split_run(text)
        if newest and _holds_run(directory):  # a run "avi-10:30" played @newest
            return _run_directory(text), default
        run, _, number = text.rpartition(":")
        if run and number.isdigit():
            if not _holds_run(text):  # RUN then its number (unless text itself is a run: "avi-10:30")
                return _run_directory(run), int(_number(number, f"{name}: {what}", default, integer=True))
            if _holds_run(split_run(run)[0]):
                raise ValueError(f"{name}:{text} is ambiguous: both {run} and {text} are runs; write {name}:{text}:"
                                 f"{default} for the second, {name}:{run}{os.sep}:{number} for the first")
        if _run_then_more(text, run):
            # value:RUN:abc is a run with a mistyped number, not a directory named "RUN:abc"; a
            # number is read as beam:'s is (1e3, +8)
            if not number:
                raise ValueError(f"{name}: nothing after the run's ':' (its {what}); give one or leave the ':' out "
                                 "for the default")
            count = int(_number(number, f"{name}: {what}", default, integer=True))
            return _run_directory(run), count
        return _run_directory(text), default
    return parse


# The run agents: run_agent has checked (require_playable) that each run fits the boards and,
# for mcts:, has a policy and a value.


def _play_run_policy(run: str, boards, context: Context) -> dict:
    trained, played = _loaded_run(run, PLAYED_BY["policy"])
    return {**_play_policy(trained.policy, trained.params, boards, context), "played": played}


def _play_run_value(spec: tuple[str, int], boards, context: Context) -> dict:
    run, width = spec
    trained, played = _loaded_run(run, PLAYED_BY["value"])
    return {**_play_beam(width, trained.scorer, trained.params, boards, context), "played": played}


def _play_run_mcts(spec: tuple[str, int], boards, context: Context) -> dict:
    run, simulations = spec
    trained, played = _loaded_run(run, PLAYED_BY["mcts"])  # one with a policy and a value (require_playable)
    return {**_play_policy(MCTSPolicy(trained.evaluator, simulations, rules=context.rules), trained.params, boards,
                           context), "played": played}


register(Agent("policy", "a trained run (train.py) playing its network's own choice: the argmax of its output, "
               "no simulation", "run directory[@newest]", _run_only("policy"), _play_run_policy, game.CLICK_RULES))
register(Agent("value", "beam search scored by a trained run's value (width 1: greedy on it)",
               "run directory[@newest][:width]", _run_and_number("value", "width", 1), _play_run_value, game.CLICK_RULES))
register(Agent("mcts", "Gumbel MuZero search (mctx) over the simulator with a trained run's policy and value, "
               "noise off", "run directory[@newest][:simulations]", _run_and_number("mcts", "simulations", 64),
               _play_run_mcts, game.CLICK_RULES))
register(Agent("mcts-heuristic", "Gumbel MuZero search (mctx) with the hand-made estimate as value and a "
               "uniform prior over cells (a cluster's in proportion to its size)", "simulations",
               lambda text: _number(text, "mcts-heuristic: simulations", 64, integer=True),
               lambda simulations, boards, context: _play_policy(
                   MCTSPolicy(heuristic_evaluator_for(context.rules), simulations, rules=context.rules), None, boards, context),
               game.CLICK_RULES))


BUILT_IN.update(AGENTS)
