"""Play a fixed set of boards to the end with a policy, batched on the device."""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxdust import game

Policy = Callable[[jax.Array, jax.Array, object], jax.Array]  # (key, board, params) -> action


class PlayResult(NamedTuple):
    clicks: jax.Array  # int32 [N], clicks made (wasted empty-cell clicks included)
    cleared: jax.Array  # bool [N], board emptied within the click cap
    actions: jax.Array  # int32 [N, max_clicks], flat actions taken; -1 after the game ended


class _PlayCarry(NamedTuple):
    boards: jax.Array  # int8 [N, W, H]
    clicks: jax.Array  # int32 [N]
    actions: jax.Array  # int32 [N, max_clicks]
    key: jax.Array  # PRNG key
    step: jax.Array  # int32 []


@functools.partial(jax.jit, static_argnames=("policy", "max_clicks"))
def play_boards(boards: jax.Array, policy: Policy, key: jax.Array, max_clicks: int,
                params=None) -> PlayResult:
    """Play every board with ``policy`` until it is empty or ``max_clicks`` clicks were made.

    Args:
      boards: int8 ``[N, W, H]``.
      policy: ``policy(key, board, params) -> action``, see ``jaxdust.baselines``; a
        hashable object (e.g. a module-level function), since it is a static argument.
      key: PRNG key for stochastic policies.
      max_clicks: the click cap; stops games that never finish (e.g. a policy that keeps
        clicking empty cells).
      params: the policy's parameters, passed to every call (traced, not baked in).

    Stops as soon as every game has ended, so the loop costs the longest game, not the cap.
    """
    num_boards = boards.shape[0]

    def unfinished(carry: _PlayCarry) -> jax.Array:
        return (carry.step < max_clicks) & ~jnp.all(jax.vmap(game.is_done)(carry.boards))

    def one_click(carry: _PlayCarry) -> _PlayCarry:
        key, step_key = jax.random.split(carry.key)
        actions = jax.vmap(policy, in_axes=(0, 0, None))(
            jax.random.split(step_key, num_boards), carry.boards, params
        )
        playing = ~jax.vmap(game.is_done)(carry.boards)
        after, _ = jax.vmap(game.click_action)(carry.boards, actions)
        return _PlayCarry(
            boards=jnp.where(playing[:, None, None], after, carry.boards),
            clicks=carry.clicks + playing,
            actions=carry.actions.at[:, carry.step].set(jnp.where(playing, actions, -1)),
            key=key,
            step=carry.step + 1,
        )

    start = _PlayCarry(
        boards=boards,
        clicks=jnp.zeros(num_boards, jnp.int32),
        actions=jnp.full((num_boards, max_clicks), -1, jnp.int32),
        key=key,
        step=jnp.int32(0),
    )
    end = jax.lax.while_loop(unfinished, one_click, start)
    return PlayResult(end.clicks, jax.vmap(game.is_done)(end.boards), end.actions)


def play_in_chunks(boards, policy: Policy, key: jax.Array, max_clicks: int, chunk: int,
                   progress=None, params=None) -> PlayResult:
    """``play_boards`` over ``chunk`` boards at a time (one compilation: the last chunk is
    padded with empty boards, which end at once). ``progress(n)`` is called per chunk."""
    boards = jnp.asarray(boards, game.BOARD_DTYPE)
    total = boards.shape[0]
    parts = []
    for index, start in enumerate(range(0, total, chunk)):
        part = boards[start : start + chunk]
        padding = chunk - part.shape[0]
        part = jnp.concatenate([part, jnp.zeros((padding, *part.shape[1:]), part.dtype)])
        result = play_boards(part, policy, jax.random.fold_in(key, index), max_clicks, params)
        parts.append(jax.tree.map(lambda leaf: leaf[: chunk - padding], result))
        if progress is not None:
            progress(chunk - padding)
    return jax.tree.map(lambda *leaves: jnp.concatenate(leaves), *parts)


def summarize(clicks, cleared, best_known=None, reference=None) -> dict:
    """Summary statistics of solution lengths.

    Args:
      clicks, cleared: per-board results of one agent, ``[N]``.
      best_known: optional ``[N]`` best known (or optimal) lengths.
      reference: optional ``[N]`` lengths of a reference solver to compare against.

    Lengths statistics cover cleared boards only; ``not_cleared`` counts the rest.
    """
    import numpy as np

    clicks, cleared = np.asarray(clicks), np.asarray(cleared, bool)
    solved = clicks[cleared]
    summary = {
        "boards": int(clicks.size),
        "not_cleared": int((~cleared).sum()),
        "mean": float(solved.mean()) if solved.size else float("nan"),
        "median": float(np.median(solved)) if solved.size else float("nan"),
        "std": float(solved.std()) if solved.size else float("nan"),
    }
    if best_known is not None:
        best_known = np.asarray(best_known)
        summary["share_equal_best"] = float(np.mean(cleared & (clicks <= best_known)))
        summary["mean_gap_to_best"] = float(np.mean(clicks[cleared] - best_known[cleared])) if solved.size else float("nan")
    if reference is not None:
        summary["share_at_least_as_good_as_reference"] = float(np.mean(cleared & (clicks <= np.asarray(reference))))
    return summary


# ---------------------------------------------------------------------------------------
# Agents: policies, searches and solvers behind one interface
# ---------------------------------------------------------------------------------------


class Agent(NamedTuple):
    description: str
    parameter: str | None  # meaning of the value after ':' in "name:value"
    default: float | None


AGENTS = {
    "random": Agent("clicks a random occupied cell", None, None),
    "largest": Agent("clicks the largest cluster", None, None),
    "dfs": Agent("the original post's depth-first search", "positions searched", 100_000),
    "beam": Agent("JAX beam search, tuned hand-made scorer", "width", 200),
    "solver": Agent("exact solver (numba IDA*)", "seconds per board", 10.0),
    "greedy": Agent("a trained run (train.py) clicking the argmax of its per-cell output", "run directory", None),
    "lookahead": Agent("beam search scored by a trained run (width 1: greedy on its value)", "run directory[:width]", 1),
}


class AgentSpec(NamedTuple):
    name: str
    number: float | None  # dfs nodes, beam width, solver seconds, lookahead width
    run: str | None  # run directory for greedy / lookahead


def parse_agent(text: str) -> AgentSpec:
    """``"beam:500"``, ``"greedy:runs/dqn-0"``, ``"lookahead:runs/imitation-0:8"``;
    raises ValueError naming the problem."""
    name, _, rest = text.partition(":")
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; choose from {', '.join(AGENTS)}")
    agent = AGENTS[name]
    if name in ("greedy", "lookahead"):
        if not rest:
            raise ValueError(f"agent {name} needs a run directory: {name}:RUN_DIR")
        run, width = rest, ""
        if name == "lookahead" and rest.rpartition(":")[2].isdigit():
            run, _, width = rest.rpartition(":")
        return AgentSpec(name, float(width) if width else agent.default, run)
    if not rest:
        return AgentSpec(name, agent.default, None)
    if agent.parameter is None:
        raise ValueError(f"agent {name!r} takes no parameter")
    try:
        return AgentSpec(name, float(rest), None)
    except ValueError:
        raise ValueError(f"agent {name}: {agent.parameter} must be a number, got {rest!r}") from None


def _solve_one(job) -> tuple[int, bool]:
    """Length and proven flag of one board (runs in a worker process)."""
    name, cells, parameter = job
    if name == "dfs":
        from jaxdust.dfs import solve_dfs

        return len(solve_dfs(cells, time_limit=None, node_limit=int(parameter))), False
    from jaxdust.solve import solve

    result = solve(cells, time_limit=parameter)
    return result.length, result.optimal


def beam_lengths(boards, width: int, scorer, params, max_clicks: int, progress=None) -> "np.ndarray":
    """Clicks the beam search of ``width`` needs on each of ``boards`` (int8 ``[N, W, H]``),
    searched in groups on the default device; -1 where it gives up at ``max_clicks``."""
    import numpy as np

    from jaxdust import beam

    search = jax.jit(jax.vmap(
        lambda b, p: beam.beam_search(b, width=width, scorer=scorer, params=p, max_clicks=max_clicks).length,
        in_axes=(0, None),
    ))
    group = max(1, 4096 // max(width, 1))  # boards searched at once
    lengths = []
    for start in range(0, boards.shape[0], group):
        part = boards[start : start + group]
        lengths.append(np.asarray(search(part, params)))
        if progress is not None:
            progress(part.shape[0])
    return np.concatenate(lengths)


def run_agent(text: str, boards, *, key: jax.Array, max_clicks: int, chunk: int = 256,
              jobs: int = 1, progress=None) -> dict:
    """Play or solve every board with agent ``text`` (see ``parse_agent``).

    Returns numpy arrays ``clicks`` [N] and ``cleared`` [N], and ``proven`` [N] for the
    exact solver (its length is the optimum). Raises ValueError for an unusable agent.
    """
    import numpy as np

    from jaxdust import baselines, beam

    spec = parse_agent(text)
    boards = jnp.asarray(boards, game.BOARD_DTYPE)
    count = boards.shape[0]
    if spec.name in baselines.POLICIES or spec.name == "greedy":
        if spec.name == "greedy":
            from jaxdust.runs import load_run

            trained = load_run(spec.run)
            policy, params = trained.policy, trained.params
        else:
            policy, params = baselines.POLICIES[spec.name], None
        played = play_in_chunks(boards, policy, key, max_clicks, min(chunk, count), progress, params)
        return {"clicks": np.asarray(played.clicks), "cleared": np.asarray(played.cleared)}
    if spec.name in ("beam", "lookahead"):
        if spec.name == "lookahead":
            from jaxdust.runs import load_run

            trained = load_run(spec.run)
            scorer, params = trained.scorer, trained.params
        else:
            scorer, params = beam.heuristic_scorer, None
        lengths = beam_lengths(boards, int(spec.number), scorer, params, max_clicks, progress)
        return {"clicks": np.where(lengths < 0, max_clicks, lengths), "cleared": lengths >= 0}
    import multiprocessing

    work = [(spec.name, board, spec.number) for board in np.asarray(boards)]
    results = []
    if jobs > 1:
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            for result in pool.imap(_solve_one, work):
                results.append(result)
                if progress is not None:
                    progress(1)
    else:
        for job in work:
            results.append(_solve_one(job))
            if progress is not None:
                progress(1)
    lengths = np.array([r[0] for r in results])
    return {"clicks": lengths, "cleared": np.ones(count, bool), "proven": np.array([r[1] for r in results])}
