"""A batched JAX beam search for SameGame's points and Clickomania's cells left.

The fewest-clicks beam (``jaxdust.search.beam``) stops at the first click that clears a
board; here every line runs until no group of the rules' minimum size is left, and the best
finished line of each board wins. Positions are ranked by what their line gained so far
plus an optimistic estimate of what is left (the colour with most cells gathered into one
group), as the numba beam of ``jaxdust.solver.points`` ranks them, and a position reached
twice is kept once (its best rank, then its first listing), so the two beams keep the same
positions (up to a collision of 64-bit hashes). Each click expands every group of every kept position with ``beam.for_each_child`` (the work
follows the groups, not the cells), and all boards of a batch advance in one compiled loop.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import game
from jaxdust.core.boards import require_settled
from jaxdust.search.beam import (CHUNK, child_capacity, for_each_child, in_batches, play_codes, require_beam_memory,
                                 require_children_indexable)


class PointsResult(NamedTuple):
    """What ``points_beam`` found for each board (without the batch axis for one board):
    ``value`` int32 ``[B]``, the points of its best line (the clear bonus included) or minus
    its cells left; ``length`` int32 ``[B]``, that line's clicks; ``actions`` int32
    ``[B, max(1, W * H // min_group)]`` (the most clicks a game can take), the line as flat
    actions ``x * height + y``, -1 after its end."""

    value: jax.Array
    length: jax.Array
    actions: jax.Array


class _Carry(NamedTuple):
    boards: jax.Array  # int8 [B * width, W, H]
    scores: jax.Array  # int32 [B * width], gained so far
    alive: jax.Array  # bool [B * width]
    parents: jax.Array  # int32 [max_clicks, B * width]
    moves: jax.Array  # int32 [max_clicks, B * width]
    depth: jax.Array  # int32 []
    best: jax.Array  # int32 [B], the best finished line's value
    best_depth: jax.Array  # int32 [B]
    best_row: jax.Array  # int32 [B], its row in the beam at best_depth


def _playable_labels(boards: jax.Array, min_group: int) -> jax.Array:
    """int32 ``[M, W * H]``: ``cluster_labels`` flattened, -1 on groups below ``min_group``
    (so ``for_each_child`` lists only the legal clicks)."""
    labels = jax.vmap(game.cluster_labels)(boards).reshape(boards.shape[0], -1)
    if min_group == 1:
        return labels
    sizes = jax.vmap(game.cluster_sizes)(boards).reshape(boards.shape[0], -1)
    return jnp.where(sizes >= min_group, labels, -1)


def _estimate(boards: jax.Array, objective: str) -> jax.Array:
    """int32 ``[M]``: what boards ``[M, W, H]`` may still gain, by their largest colour."""
    counts = jnp.sum(boards[..., None] == jnp.arange(1, game.MAX_COLORS + 1, dtype=boards.dtype),
                     axis=(1, 2), dtype=jnp.int32)
    largest = jnp.max(counts, axis=-1)
    return game.points(largest) if objective == "points" else jnp.where(largest >= 2, largest, 0)


MAX_CELLS = 4096  # boards of up to 64 x 64: the hash tables' size
# Memory a child a click, a little below the 53 bytes XLA's memory analysis measured (CPU,
# jaxdust 0.2.65, widths 10^4-10^5 on 8x6 and 15x15 boards): see beam.child_bytes.
CHILD_BYTES = 52
_HASH_TABLES = np.random.default_rng(20261125).integers(
    1, 2**32, size=(2, (game.MAX_COLORS + 1) * MAX_CELLS), dtype=np.uint32) | 1


def _board_hashes(boards: jax.Array) -> jax.Array:
    """uint32 ``[M, 2]``: two multiplicative hashes of boards ``[M, W, H]`` (odd random
    weights per cell and colour, wrapping sums); equal boards hash equal."""
    count, width, height = boards.shape
    stride = game.MAX_COLORS + 1
    index = (jnp.arange(width * height, dtype=jnp.uint32) * stride)[None] + boards.reshape(count, -1).astype(jnp.uint32)
    weights = jnp.asarray(_HASH_TABLES[:, : width * height * stride])
    present = boards.reshape(count, -1) != 0
    return jnp.stack([jnp.sum(jnp.where(present, weights[k][index], 0), axis=1, dtype=jnp.uint32)
                      for k in range(2)], axis=-1)


def _final(boards: jax.Array, scores: jax.Array, objective: str) -> jax.Array:
    left = jnp.sum(boards != 0, axis=(1, 2), dtype=jnp.int32)
    if objective == "points":
        return scores + jnp.where(left == 0, game.CLEAR_BONUS, 0)
    return -left


def _repeats(ranks: jax.Array, hashes: jax.Array) -> jax.Array:
    """bool ``[B, K]``: the listings of a position (by hash ``[B, K, 2]``) other than its
    best-ranked, first-listed one."""
    column = jnp.broadcast_to(jnp.arange(ranks.shape[1], dtype=jnp.int32), ranks.shape)
    order = jnp.lexsort((column, -ranks, hashes[..., 1], hashes[..., 0]), axis=-1).astype(jnp.int32)
    sorted_hashes = jnp.take_along_axis(hashes, order[..., None], axis=1)
    same = jnp.all(sorted_hashes[:, 1:] == sorted_hashes[:, :-1], axis=-1)
    repeat = jnp.concatenate([jnp.zeros_like(same[:, :1]), same], axis=1)
    return jnp.zeros_like(repeat).at[jnp.arange(ranks.shape[0], dtype=jnp.int32)[:, None], order].set(repeat)


@game.standard_numpy
def points_beam(boards: game.BoardLike, width: int = 16, rules: str = "samegame", chunk: int = CHUNK) -> PointsResult:
    """Beam search for the objective of ``rules`` (``samegame``: most points;
    ``clickomania``: fewest cells left) from boards int8 ``[B, W, H]`` or one board
    ``[W, H]`` (or nested lists).

    Every board keeps its own ``width`` positions per click; the search ends when no kept
    position has a legal click. Returns a ``PointsResult``, batched like ``boards``; its
    ``value`` is what ``jaxdust.score`` gives the line (negated cells left for clickomania).
    Boards must be settled under ``rules`` (ValueError naming the first that is not, for
    boards given outside a trace).
    """
    game.require_points_rules(rules, "points_beam")
    boards = game.from_lists(boards)
    if boards.ndim not in (2, 3):
        raise ValueError(f"points_beam takes boards [B, W, H] or one board [W, H], got shape {boards.shape}")
    game.require_board_shape(boards.shape[-2], boards.shape[-1], "points_beam")
    if boards.shape[0] == 0:
        raise ValueError("points_beam: no boards (a batch of 0)")
    if not game.is_integer(width) or width < 1:
        raise ValueError(f"points_beam: width must be a positive integer, got {width!r}")
    if not game.is_integer(chunk) or chunk < 1:
        raise ValueError(f"points_beam: chunk must be a positive integer, got {chunk!r}")
    require_settled(boards, rules, "points_beam")
    count, cells = boards.shape[0] if boards.ndim == 3 else 1, boards.shape[-2] * boards.shape[-1]
    require_children_indexable("points_beam", count, int(width), cells, int(chunk))
    require_beam_memory("points_beam", count, int(width), cells, CHILD_BYTES)
    if boards.ndim == 2:
        return jax.tree.map(lambda batched: batched[0], _points_beam(boards[None], int(width), rules, int(chunk)))
    return _points_beam(boards, int(width), rules, int(chunk))


def points_beam_solutions(boards, width: int, rules: str = "samegame", batch: int | None = None,
                          progress=None) -> PointsResult:
    """``points_beam`` of ``boards`` (int8 ``[N, W, H]``), ``batch`` boards per call
    (default: ``beam.default_batch``), so memory stays bounded however many boards; the last
    batch is padded with empty boards, so one compiled search serves all. ``progress(n)``
    is called after each batch. Returns the ``PointsResult`` as NumPy arrays."""
    game.require_points_rules(rules, "points_beam_solutions")  # before the boards are checked settled under them
    return in_batches(lambda part: points_beam(part, width=width, rules=rules), boards, width, batch, progress,
                      "points_beam_solutions", rules)


@functools.partial(jax.jit, static_argnames=("width", "rules", "chunk"))
def _points_beam(boards: jax.Array, width: int, rules: str, chunk: int) -> PointsResult:
    found = game.rules_of(rules)
    count, board_width, board_height = boards.shape
    if board_width * board_height > MAX_CELLS:
        raise ValueError(f"points_beam takes boards of at most {MAX_CELLS} cells, got {board_width}x{board_height}")
    cells = board_width * board_height
    max_clicks = max(1, cells // found.min_group)  # a board with room for no group still gets a row
    rows = count * width

    def step(carry: _Carry) -> _Carry:
        labels = _playable_labels(carry.boards, found.min_group)

        def visit(listed, start, children, parent, action, valid):
            ranks, hashes = listed
            removed = jnp.sum(labels[parent] == action[:, None], axis=1, dtype=jnp.int32)
            gain = game.points(removed) if found.objective == "points" else removed
            rank = carry.scores[parent] + gain + _estimate(children, found.objective)
            return (jax.lax.dynamic_update_slice(ranks, jnp.where(valid, rank, -1).astype(jnp.int32), (start,)),
                    jax.lax.dynamic_update_slice(hashes, _board_hashes(children), (start, jnp.zeros_like(start))))

        capacity = child_capacity(rows, cells, chunk)
        listing, (ranks, hashes) = for_each_child(
            carry.boards, labels, carry.alive, chunk, visit,
            (jnp.full(capacity, -1, jnp.int32), jnp.zeros((capacity, 2), jnp.uint32)), rules)

        # Positions with no legal click end their line here.
        ended = carry.alive & (listing.per_position == 0)
        values = jnp.where(ended, _final(carry.boards, carry.scores, found.objective), jnp.iinfo(jnp.int32).min)
        per_board = values.reshape(count, width)
        row_best = jnp.argmax(per_board, axis=1).astype(jnp.int32)
        improved = jnp.max(per_board, axis=1) > carry.best
        best = jnp.where(improved, jnp.max(per_board, axis=1), carry.best)
        best_depth = jnp.where(improved, carry.depth, carry.best_depth)
        best_row = jnp.where(improved, jnp.arange(count, dtype=jnp.int32) * width + row_best, carry.best_row)

        # Each board's children form one run of the list; keep its `width` best ranks.
        children_per_board = jnp.sum(listing.per_position.reshape(count, width), axis=1, dtype=jnp.int32)
        offset = jnp.cumsum(children_per_board, dtype=jnp.int32) - children_per_board
        column = jnp.arange(width * cells, dtype=jnp.int32)
        in_run = column < children_per_board[:, None]
        listed_at = jnp.where(in_run, offset[:, None] + column, 0)
        run_ranks = jnp.where(in_run, ranks[listed_at], -1)
        run_ranks = jnp.where(_repeats(run_ranks, hashes[listed_at]), -1, run_ranks)
        kept_ranks, kept_columns = jax.lax.top_k(run_ranks, width)  # ties keep the list's order
        code = listing.code_at(jnp.take_along_axis(listed_at, kept_columns, axis=1).reshape(-1))
        parent, action, children = play_codes(carry.boards, labels, code, rules)
        removed = jnp.sum(labels[parent] == action[:, None], axis=1, dtype=jnp.int32)
        gain = game.points(removed) if found.objective == "points" else removed
        alive = kept_ranks.reshape(-1) >= 0
        return _Carry(
            boards=jnp.where(alive[:, None, None], children, 0).astype(carry.boards.dtype),
            scores=jnp.where(alive, carry.scores[parent] + gain, 0),
            alive=alive,
            parents=carry.parents.at[carry.depth].set(parent),
            moves=carry.moves.at[carry.depth].set(action),
            depth=carry.depth + 1,
            best=best, best_depth=best_depth, best_row=best_row,
        )

    start_boards = jnp.zeros((rows, board_width, board_height), boards.dtype).at[::width].set(boards)
    start = _Carry(
        boards=start_boards,
        scores=jnp.zeros(rows, jnp.int32),
        alive=jnp.arange(rows, dtype=jnp.int32) % width == 0,
        parents=jnp.zeros((max_clicks + 1, rows), jnp.int32),
        moves=jnp.zeros((max_clicks + 1, rows), jnp.int32),
        depth=jnp.int32(0),
        best=jnp.full(count, jnp.iinfo(jnp.int32).min, jnp.int32),
        best_depth=jnp.zeros(count, jnp.int32),
        best_row=jnp.zeros(count, jnp.int32),
    )
    end = jax.lax.while_loop(lambda carry: jnp.any(carry.alive) & (carry.depth <= max_clicks), step, start)

    def trace_back(i, state):
        actions, row = state
        depth = max_clicks - 1 - i
        earlier = depth < end.best_depth
        actions = actions.at[:, depth].set(jnp.where(earlier, end.moves[depth, row], -1))
        return actions, jnp.where(earlier, end.parents[depth, row], row)

    actions = jax.lax.fori_loop(0, max_clicks, trace_back, (jnp.full((count, max_clicks), -1, jnp.int32),
                                                             end.best_row))[0]
    return PointsResult(end.best, end.best_depth, actions)
