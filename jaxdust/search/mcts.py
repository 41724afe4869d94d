"""Monte Carlo tree search over the exact simulator: Gumbel MuZero from ``mctx``.

The model the search plans with is the game itself (``game.click_action`` under one of the
click rule sets, ``game.CLICK_RULES``), so only the evaluation of a position is learned or
hand-made: an *evaluator* maps boards to clicks
left and click logits,

    evaluate(boards int8 [N, W, H], params) -> (clicks_left float32 [N], logits float32 [N, W * H])

In mctx's terms a click is reward -1, a cleared board ends the episode (discount 0) and a
position's value is minus its clicks left, so the search maximises minus the clicks. An
action is a cell; only each cluster's first cell is a legal action (the others are the
same click), and a cluster's prior is the summed probability of its cells.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from typing import Any, Callable

import jax
import jax.numpy as jnp
import mctx
import numpy as np

from jaxdust.core import game
from jaxdust.core.boards import require_hashable, require_model_fits, require_model_rules, require_settled
from jaxdust.search.heuristic import RULE_FEATURE_WEIGHTS, Scorer, heuristic_for, heuristic_scorer

Evaluator = Callable[[jax.Array, Any], tuple[jax.Array, jax.Array]]

_MASKED = -1e9  # the logit of an illegal action: finite, so softmaxes stay defined


@game.standard_numpy
def cluster_log_probs(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Log-probability of clicking each cell's cluster: float32 ``[..., N]``.

    Every cell of a cluster is the same click, so a policy over cells is a policy over
    clusters whose probability is the sum of its cells' (softmax over occupied cells).
    ``labels`` int32 ``[..., N]`` are ``game.cluster_labels`` (``-1`` empty); empty cells
    and boards with no occupied cell get ``-inf``. Logits ``[0, 0, 0, 9]`` with labels
    ``[0, 0, 2, -1]`` -> ``log([2/3, 2/3, 1/3, 0])``.
    """
    labels, logits = jnp.broadcast_arrays(labels, jnp.asarray(logits, jnp.float32))  # float32 under x64 too
    occupied = labels >= 0
    # Shifted so that the largest occupied logit is 0 (the same numbers log_softmax makes
    # of usual logits): empty cells at _MASKED then stay out of the softmax whatever the
    # logits' level (at -2e9 they took it all).
    level = jnp.max(jnp.where(occupied, logits, -jnp.inf), axis=-1, keepdims=True)
    level = jax.lax.stop_gradient(jnp.where(jnp.isfinite(level), level, 0.0))
    log_cells = jax.nn.log_softmax(jnp.where(occupied, logits - level, _MASKED), axis=-1)
    cells = labels.shape[-1]
    # A cluster's id is one of its cells' indices, so a segment per index pools it: linear
    # in the cells, where comparing every cell with every other was quadratic (30-60x
    # slower on 16x16 boards: benchmarks/cluster_pooling.py). Empty cells pool in an extra
    # segment that is never read.
    segments = jnp.where(occupied, labels.astype(jnp.int32), cells).reshape(-1, cells)  # int8 cannot count to 128

    def pool(segment: jax.Array, log_cell: jax.Array) -> jax.Array:
        top = jnp.full(cells + 1, -jnp.inf, log_cell.dtype).at[segment].max(log_cell)
        # A cluster of -inf logits only (an evaluator's mask) pools to -inf, not -inf - -inf.
        top = jax.lax.stop_gradient(jnp.where(jnp.isfinite(top), top, 0.0))[segment]
        total = jnp.zeros(cells + 1, log_cell.dtype).at[segment].add(jnp.exp(log_cell - top))[segment]
        # Such a cluster sums to 0: its log, taken of 1 instead, would pass a NaN gradient
        # (log's infinite slope times a zero) to every cell.
        return jnp.where(total > 0, jnp.log(jnp.where(total > 0, total, 1.0)) + top, -jnp.inf)

    pooled = jax.vmap(pool)(segments, log_cells.reshape(-1, cells)).reshape(labels.shape)
    return jnp.where(occupied, pooled, -jnp.inf)


@game.standard_numpy
def cluster_prior(boards: jax.Array, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Prior logits over clusters and the legal actions: float32 ``[N, W * H]`` (each
    cluster's log-probability at its first cell, ``_MASKED`` elsewhere) and bool
    ``[N, W * H]`` (the first cells)."""
    labels = jax.vmap(game.cluster_labels)(boards).reshape(boards.shape[0], -1)
    first = labels == jnp.arange(labels.shape[1], dtype=labels.dtype)
    return jnp.where(first, cluster_log_probs(logits, labels), _MASKED), first


def _evaluator(scorer: Scorer) -> Evaluator:
    def evaluate(boards: jax.Array, params=None) -> tuple[jax.Array, jax.Array]:
        """The hand-made estimate as the value, a uniform prior over cells: a cluster's
        prior is in proportion to its size, so a search without noise considers the largest
        clusters at the root first."""
        return scorer(boards, None), jnp.zeros((boards.shape[0], boards.shape[1] * boards.shape[2]), jnp.float32)
    return evaluate


heuristic_evaluator = _evaluator(heuristic_scorer)  # the dust game's
# One object a rule set: the search compiles once per evaluator.
_RULE_EVALUATORS = {rules: _evaluator(heuristic_for(rules)) for rules in RULE_FEATURE_WEIGHTS}


def heuristic_evaluator_for(rules: str = "dust") -> Evaluator:
    """``heuristic_evaluator`` with the hand-made estimate of ``rules`` (``heuristic.heuristic_for``)."""
    heuristic_for(rules)  # an unknown name fails here
    game.require_click_rules(rules, "the mcts heuristic")  # the points rules' estimate is no click count
    return _RULE_EVALUATORS.get(rules, heuristic_evaluator)


@game.standard_numpy
def search(boards: jax.Array, evaluate: Evaluator, params, key: jax.Array, simulations: int,
           considered: int = 16, gumbel_scale: float = 0.0, rules: str = "dust") -> mctx.PolicyOutput:
    """One Gumbel MuZero search from each board.

    Args:
      boards: int8 ``[N, W, H]``. An empty board has no legal action: mctx then spreads
        its ``action_weights`` over every cell, so a caller masks them (``avi`` does).
      evaluate: the evaluator (module docstring); ``params`` are passed to it.
      simulations: simulations per board (static).
      considered: actions Sequential Halving starts from at the root (static).
      gumbel_scale: 0 plays deterministically (evaluation); 1 is mctx's default noise,
        drawn for the whole batch from ``key``: a board searched in another batch (or
        alone) with the same key gets other noise.
      rules: the click rule set the search plans with (static).

    Returns mctx's ``PolicyOutput``: ``action`` int32 ``[N]`` and ``action_weights``
    float32 ``[N, W * H]``, the improved policy (a training target).

    Raises:
      ValueError: counts that are not positive integers, a ``gumbel_scale`` that is not a
        finite number >= 0, boards that are not a non-empty
        batch ``[N, W, H]`` of integers, not settled under ``rules`` (checked where they
        are not traced), or of a size or colours the evaluator's network was not built for
        (where it says them, as ``load_run``'s agents do).
      TypeError: ``key`` not one random key (``jax.random.key(seed)``), or (while
        tracing) an evaluator whose outputs are not ``[N]`` and ``[N, W * H]``.
    """
    _require_counts(simulations, considered)
    _require_gumbel_scale(gumbel_scale)
    game.require_key(key, "mcts.search")
    boards = game.from_lists(boards)
    if boards.ndim != 3:
        raise ValueError(f"mcts.search takes a batch of boards [N, W, H], got shape {tuple(boards.shape)}"
                         + (" (one board: boards[None])" if boards.ndim == 2 else ""))
    if 0 in boards.shape:
        raise ValueError(f"mcts.search: no boards, or boards of no cell (shape {tuple(boards.shape)})")
    game.require_board_shape(boards.shape[1], boards.shape[2], "mcts.search")
    game.require_click_rules(rules, "mcts")
    require_settled(boards, rules, "mcts.search")  # a position the rules never make plays otherwise
    require_model_fits(boards, evaluate, rules, "mcts")
    # No board has more actions than cells, so a larger count is the same search; mctx builds
    # a table of (considered + 1) x simulations visits in Python first (minutes at 10^5).
    considered = min(int(considered), boards.shape[1] * boards.shape[2])
    if isinstance(boards, jax.core.Tracer) or isinstance(key, jax.core.Tracer) or not _hashable(evaluate):
        # Inside the caller's jit (or for an evaluator no cache can key): traced where called.
        return _search(boards, evaluate, params, key, int(simulations), considered, gumbel_scale, rules)
    # Outside jit mctx ran op by op, each call traced again: 3-15 s a call where the compiled
    # search took 2 ms (4 boards of 8x6, 16 simulations, 2-core AMD EPYC).
    return _compiled(evaluate, int(simulations), considered, rules)(boards, params, key, gumbel_scale)


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


@functools.lru_cache(maxsize=16)
def _compiled(evaluate: Evaluator, simulations: int, considered: int, rules: str):
    """``_search`` compiled for one evaluator, counts and rules. A few are kept: an evaluator
    made anew for each call (a lambda) compiles each time, and what it holds is let go."""
    return jax.jit(lambda boards, params, key, gumbel_scale: _search(boards, evaluate, params, key, simulations,
                                                                     considered, gumbel_scale, rules))


def _search(boards: jax.Array, evaluate: Evaluator, params, key: jax.Array, simulations: int, considered: int,
            gumbel_scale, rules: str) -> mctx.PolicyOutput:
    """``search`` of checked arguments."""
    value, prior, legal = _evaluated(evaluate, params, boards)
    root = mctx.RootFnOutput(prior_logits=prior, value=value, embedding=boards)
    return mctx.gumbel_muzero_policy(params, key, root, recurrent_fn(evaluate, rules), simulations, invalid_actions=~legal,
                                     max_num_considered_actions=considered, gumbel_scale=gumbel_scale)


def search_bytes(boards: int, simulations: int, cells: int) -> int:
    """About the memory a search of ``boards`` boards of ``cells`` cells takes: mctx's tree,
    a node per simulation and the root, each with its board, a dozen 4-byte scalars and
    eight 4-byte entries per action, a cell (the tree's six and two that the search's loop
    keeps beside them), and up to 96 bytes a cell of each board for the cluster prior and
    the evaluator's work. Fitted to XLA's memory analysis on a CPU (6x5 to 20x20 boards, 1
    to 20,000 simulations: within 1.4x above what the program takes). A network
    evaluator's own activations are not counted."""
    return boards * ((simulations + 1) * (cells + 12 * 4 + 8 * 4 * cells) + 96 * cells)


def _require_gumbel_scale(scale) -> None:
    """ValueError unless ``scale`` is a finite number >= 0: a Python, numpy or JAX scalar,
    or traced (a real scalar, its value unknown here)."""
    if isinstance(scale, jax.core.Tracer):
        if jnp.shape(scale) != () or not jnp.issubdtype(scale.dtype, jnp.floating) and \
                not jnp.issubdtype(scale.dtype, jnp.integer):
            raise ValueError(f"mcts: gumbel_scale must be a number, got a traced {scale.dtype} of shape "
                             f"{jnp.shape(scale)}")
        return
    if isinstance(scale, (np.ndarray, np.generic, jax.Array)) and np.shape(scale) == () and \
            scale.dtype != bool:
        scale = scale.item()
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or \
            not 0 <= float(scale) < math.inf:  # NaN noise made every action's score NaN
        raise ValueError(f"mcts: gumbel_scale must be a finite number >= 0, got {scale!r}")


def _require_counts(simulations, considered) -> None:
    """ValueError unless both are positive integers (mctx fails deep inside on 0)."""
    for name, value in (("simulations", simulations), ("considered", considered)):
        if not game.is_integer(value) or value < 1:
            raise ValueError(f"mcts: {name} must be a positive integer, got {value!r}")


def _evaluated(evaluate: Evaluator, params, positions: jax.Array):
    """mctx's value (0 once cleared), prior logits and legal actions of ``positions``;
    TypeError, while tracing, for an evaluator whose outputs are not ``[N]`` and
    ``[N, W * H]`` (mctx would fail deep inside, or broadcast them into wrong values)."""
    outputs = evaluate(positions, params)
    count, cells = positions.shape[0], positions.shape[1] * positions.shape[2]
    shapes = tuple(np.shape(output) for output in outputs) if isinstance(outputs, (tuple, list)) else None
    if shapes != ((count,), (count, cells)):
        got = (f"shapes {shapes}" if shapes is not None else f"one array of shape {np.shape(outputs)}"
               if hasattr(outputs, "shape") else f"a {type(outputs).__name__}")
        raise TypeError(f"mcts: the evaluator returns (clicks_left [N], logits [N, W * H]) for boards [N, W, H], "
                        f"here [{count}] and [{count}, {cells}]; got {got}")
    clicks_left, logits = outputs
    prior, legal = cluster_prior(positions, logits)
    return jnp.where(jax.vmap(game.is_done)(positions), 0.0, -clicks_left), prior, legal


def recurrent_fn(evaluate: Evaluator, rules: str = "dust"):
    """mctx's model step over the exact simulator under the click rule set ``rules``:
    ``(params, key, action int32 [N], boards int8 [N, W, H]) -> (RecurrentFnOutput,
    children int8 [N, W, H])``. A click is reward -1; a click from a cleared board (mctx
    may step past the end) changes nothing and costs nothing; a cleared child ends the
    episode (discount 0)."""
    # cluster_prior makes every cluster an action and rewards count clicks: both hold only
    # where a group of one is a click and fewest clicks is the objective.
    game.require_click_rules(rules, "mcts")

    def step(params, key, action, positions):
        children, _ = jax.vmap(lambda board, cell: game.click_action(board, cell, rules))(positions, action)
        playing = ~jax.vmap(game.is_done)(positions)
        value, prior, _ = _evaluated(evaluate, params, children)
        cleared = jax.vmap(game.is_done)(children)
        output = mctx.RecurrentFnOutput(reward=jnp.where(playing, -1.0, 0.0).astype(jnp.float32),
                                        discount=jnp.where(cleared, 0.0, 1.0).astype(jnp.float32),
                                        prior_logits=prior, value=value)
        return output, children
    return step


@dataclasses.dataclass(frozen=True)
class MCTSPolicy:
    """A ``jaxdust.core.play`` policy: the action of a ``search`` of ``simulations`` from
    the board under the click rule set ``rules`` (noise off). ``evaluate`` must be hashable
    (a module-level function or a frozen dataclass) and, where it says the rules it was
    trained under, trained under ``rules`` (ValueError otherwise). The policy says
    ``rules`` (``boards.model_rules``), so a game under others refuses it."""

    evaluate: Evaluator
    simulations: int = 64
    considered: int = 16
    rules: str = "dust"

    def __post_init__(self):
        require_hashable(self.evaluate, "evaluate", "MCTSPolicy")  # the play loop's jit fails far from here
        game.require_click_rules(self.rules, "mcts")
        _require_counts(self.simulations, self.considered)
        require_model_rules(self.evaluate, self.rules, "MCTSPolicy")  # it would plan one game and play another

    @property
    def trained_rules(self) -> str:  # read by boards.model_rules: a game under other rules is refused
        return self.rules

    @game.standard_numpy
    def __call__(self, key: jax.Array, board: jax.Array, params) -> jax.Array:
        return search(board[None], self.evaluate, params, key, self.simulations, self.considered,
                      rules=self.rules).action[0]
