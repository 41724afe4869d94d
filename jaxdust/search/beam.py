"""Anytime search in JAX: a batched beam search with a pluggable scorer (CPU or GPU).

Each click, every kept position is expanded by every cluster (one action per cluster), the
children are scored, positions equal up to the mirror image ``x -> width - 1 - x`` are kept
once, and the ``width`` best survive. The search stops at the first click that empties a
board, which gives the shortest solution this beam can see.

A *scorer* is ``scorer(boards, params)``: int8 boards ``[M, W, H]`` and its parameters
(a pytree, or None) to float32 ``[M]``, lower is better (an estimate of the clicks left).
``jaxdust.search.heuristic.heuristic_scorer`` is the hand-made one; learned networks fit the
same signature (``jaxdust.learn.agents``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import game
from jaxdust.search.heuristic import Scorer, heuristic_scorer

LOOKAHEAD_SHORTLIST = 4  # children per kept position that the lookahead rescoring sees


def _play(board: jax.Array, labels: jax.Array, actions: jax.Array) -> jax.Array:
    """Boards after clicking each flat cell of ``actions`` ``[K]``: int8 ``[K, W, H]``.
    ``labels`` are ``game.cluster_labels(board)`` flattened."""
    masks = (labels[None, :] == actions[:, None]).reshape(actions.shape[0], *board.shape)
    return jax.vmap(game.remove_and_contract, in_axes=(None, 0))(board, masks)[0]


def lookahead_scorer(base: Scorer, batch_size: int = 256) -> Scorer:
    """A scorer that plays every cluster of each board and keeps the best outcome:
    ``1 + min(base(child))``, with ``base = 0`` for an emptied board. It sees the next
    click's effect exactly, for one ``base`` call per cluster; pair it with the beam's
    ``shortlist`` so only the most promising children pay that. ``batch_size`` boards are
    expanded at a time (bounds memory; ``W * H`` children each)."""

    def score(boards: jax.Array, params=None) -> jax.Array:
        cell_index = jnp.arange(boards.shape[1] * boards.shape[2], dtype=jnp.int32)

        def one(board):
            labels = game.cluster_labels(board).reshape(-1)
            children = _play(board, labels, cell_index)
            values = jnp.where(jax.vmap(game.is_done)(children), 0.0, base(children, params))
            best = jnp.min(jnp.where(labels == cell_index, values, jnp.inf))
            return jnp.where(game.is_done(board), 0.0, 1.0 + best)

        return jax.lax.map(one, boards, batch_size=batch_size)

    return score


lookahead_heuristic = lookahead_scorer(heuristic_scorer)

# Two independent 32-bit hashes of a board; collisions only merge two beam entries.
_HASH_MULTIPLIERS = np.random.default_rng(20261121).integers(1, 2**32, size=(2, 1024), dtype=np.uint64)
_HASH_MULTIPLIERS = (_HASH_MULTIPLIERS | 1).astype(np.uint32)


def _hash_pair(board: jax.Array) -> jax.Array:
    """uint32 ``[2]`` hash of one board."""
    values = board.reshape(-1).astype(jnp.uint32) + jnp.uint32(1)
    multipliers = jnp.asarray(_HASH_MULTIPLIERS[:, : values.shape[0]])
    mixed = jnp.sum(values[None, :] * multipliers, axis=1, dtype=jnp.uint32)
    mixed = (mixed ^ jnp.right_shift(mixed, 15)) * jnp.uint32(0x2C1B3C6D)
    return mixed ^ jnp.right_shift(mixed, 12)


def canonical_hash(board: jax.Array) -> jax.Array:
    """uint32 ``[2]``, equal for a board and its mirror image (the smaller of the two)."""
    direct, mirrored = _hash_pair(board), _hash_pair(board[::-1])
    direct_first = (direct[0] < mirrored[0]) | ((direct[0] == mirrored[0]) & (direct[1] <= mirrored[1]))
    return jnp.where(direct_first, direct, mirrored)


def sort_distinct(scores: jax.Array, hashes: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Candidates sorted by score, repeats marked: boards with equal ``canonical_hash`` and
    equal score are one position (reached twice, or mirrored), kept once.

    Args: scores float32 ``[K]``; hashes uint32 ``[K, 2]``.
    Returns the order int32 ``[K]`` and the sorted scores ``[K]``, inf at every repeat.
    """
    order = jnp.lexsort((hashes[:, 1], hashes[:, 0], scores))
    sorted_scores, sorted_hashes = scores[order], hashes[order]
    repeat = jnp.concatenate([
        jnp.array([False]),
        (sorted_scores[1:] == sorted_scores[:-1]) & jnp.all(sorted_hashes[1:] == sorted_hashes[:-1], axis=1),
    ])
    return order, jnp.where(repeat, jnp.inf, sorted_scores)


class BeamResult(NamedTuple):
    length: jax.Array  # int32 [], clicks of the solution found; -1 if none within max_clicks
    actions: jax.Array  # int32 [max_clicks], flat actions x * height + y, -1 after the end


class _BeamCarry(NamedTuple):
    boards: jax.Array  # int8 [B, W, H]
    alive: jax.Array  # bool [B]
    history: jax.Array  # int32 [B, max_clicks]
    depth: jax.Array  # int32 []
    length: jax.Array  # int32 [], -1 until a board is cleared
    solution: jax.Array  # int32 [max_clicks]


@functools.partial(jax.jit, static_argnames=("width", "scorer", "max_children", "max_clicks", "rescorer",
                                             "shortlist"))
def beam_search(board: jax.Array, width: int = 2000, scorer: Scorer = heuristic_scorer,
                max_children: int | None = None, max_clicks: int | None = None,
                params=None, rescorer: Scorer | None = None,
                shortlist: int = LOOKAHEAD_SHORTLIST) -> BeamResult:
    """Beam search from one board (int8 ``[W, H]``); ``jax.vmap`` it for several boards.

    Args:
      width: positions kept per click.
      scorer: ``scorer(boards [M, W, H], params) -> [M]``, lower is better; a static
        argument, so pass a module-level function or one object reused across calls.
      max_children: clusters expanded per position (the first in cell order); default all
        cells, which never drops one.
      max_clicks: give up after this many clicks (default: cells on the board).
      params: the scorer's parameters (traced, so new weights need no recompilation).
      rescorer: a costlier scorer (e.g. ``lookahead_heuristic``) that reorders the
        ``shortlist * width`` best distinct children under ``scorer`` before ``width``
        are kept; it gets ``params`` too.

    Raises:
      ValueError: when tracing, for a board that is not 2-D or a size that is not a
        positive integer.
    """
    if board.ndim != 2:
        raise ValueError(f"beam_search takes one board [W, H] (jax.vmap it for several), got shape {board.shape}")
    for name, value in (("width", width), ("max_children", max_children), ("max_clicks", max_clicks),
                        ("shortlist", shortlist)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"beam_search: {name} must be a positive integer, got {value!r}")
    board_width, board_height = board.shape
    cells = board_width * board_height
    children = max_children or cells
    max_clicks = max_clicks or cells
    cell_index = jnp.arange(cells, dtype=jnp.int32)

    def expand(position: jax.Array, alive: jax.Array):
        """Children of one position: boards [K, W, H], actions [K], valid [K]."""
        labels = game.cluster_labels(position).reshape(-1)
        is_action = (labels == cell_index) & alive
        key = jnp.where(is_action, cell_index, cells + cell_index)
        actions = -jax.lax.top_k(-key, children)[0]  # the first ``children`` actions
        valid = actions < cells
        actions = jnp.where(valid, actions, 0)
        return _play(position, labels, actions), actions, valid

    def step(carry: _BeamCarry) -> _BeamCarry:
        kids, actions, valid = jax.vmap(expand)(carry.boards, carry.alive)  # [B, K, ...]
        kids = kids.reshape(-1, board_width, board_height)
        actions, valid = actions.reshape(-1), valid.reshape(-1)
        parents = jnp.repeat(jnp.arange(width), children)

        cleared = valid & jax.vmap(game.is_done)(kids)
        first = jnp.argmax(cleared)
        finished = jnp.any(cleared)
        solution = jnp.where(
            finished, carry.history[parents[first]].at[carry.depth].set(actions[first]), carry.solution
        )

        scores = jnp.where(valid, scorer(kids, params), jnp.inf)
        hashes = jax.vmap(canonical_hash)(kids)
        order, sorted_scores = sort_distinct(scores, hashes)
        if rescorer is None:
            ranked = jnp.argsort(sorted_scores, stable=True)[:width]
            keep, kept_scores = order[ranked], sorted_scores[ranked]
        else:
            ranked = jnp.argsort(sorted_scores, stable=True)[: shortlist * width]
            short, short_scores = order[ranked], sorted_scores[ranked]
            rescored = jnp.where(jnp.isfinite(short_scores), rescorer(kids[short], params), jnp.inf)
            best = jnp.argsort(rescored, stable=True)[:width]
            keep, kept_scores = short[best], rescored[best]
        history = carry.history[parents[keep]].at[:, carry.depth].set(actions[keep])
        return _BeamCarry(
            boards=kids[keep],
            alive=jnp.isfinite(kept_scores),
            history=history,
            depth=carry.depth + 1,
            length=jnp.where(finished, carry.depth + 1, carry.length),
            solution=solution,
        )

    def searching(carry: _BeamCarry) -> jax.Array:
        return (carry.length < 0) & (carry.depth < max_clicks) & jnp.any(carry.alive)

    start = _BeamCarry(
        boards=jnp.zeros((width, board_width, board_height), board.dtype).at[0].set(board),
        alive=jnp.zeros(width, bool).at[0].set(True),
        history=jnp.full((width, max_clicks), -1, jnp.int32),
        depth=jnp.int32(0),
        length=jnp.where(game.is_done(board), 0, -1).astype(jnp.int32),
        solution=jnp.full(max_clicks, -1, jnp.int32),
    )
    end = jax.lax.while_loop(searching, step, start)
    return BeamResult(end.length, end.solution)


@functools.lru_cache(maxsize=32)
def _batched_lengths(width: int, scorer: Scorer, max_clicks: int | None):
    """One compiled search per setting, so evaluating again (e.g. during training) reuses it
    instead of tracing a new function each call."""
    return jax.jit(jax.vmap(
        lambda b, p: beam_search(b, width=width, scorer=scorer, params=p, max_clicks=max_clicks).length,
        in_axes=(0, None),
    ))


def beam_lengths(boards, width: int, scorer: Scorer = heuristic_scorer, params=None,
                 max_clicks: int | None = None, progress=None) -> np.ndarray:
    """Clicks the beam search of ``width`` needs on each of ``boards`` (int8 ``[N, W, H]``),
    searched in groups on the default device; -1 where it gives up at ``max_clicks``.
    ``progress(n)`` is called after each group."""
    if boards.ndim != 3:
        raise ValueError(f"beam_lengths takes boards [N, W, H], got shape {boards.shape}")
    search = _batched_lengths(width, scorer, max_clicks)
    group = max(1, 4096 // max(width, 1))  # boards searched at once
    lengths = []
    for start in range(0, boards.shape[0], group):
        part = boards[start : start + group]
        lengths.append(np.asarray(search(part, params)))
        if progress is not None:
            progress(part.shape[0])
    return np.concatenate(lengths)
