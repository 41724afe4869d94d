"""The full-width expansion both learners back up over: every distinct child of every
board in a batch, made once and valued by one call of a network.

Distinct children are one per cluster (every cell of a cluster makes the same child), so
the children are compacted over clusters' first cells into ``slots`` rows: static shapes
and no per-cell waste. ``avi`` backs up ``1 + min V(child)`` and keeps its beams from the
same children; ``dqn``'s full backup reads a target for every cluster from them.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxdust.core import configs, game


class Expansion(NamedTuple):
    labels: jax.Array  # int32 [N, W * H], game.cluster_labels
    values: jax.Array  # float32 [N, W * H], child value at each cluster's first cell, inf elsewhere
    dropped: jax.Array  # int32 [], children beyond the slots
    children: jax.Array  # int8 [S, W, H], the distinct children, compacted
    rows: jax.Array  # int32 [N, W * H], each value's row of ``children`` (S where none)


def expand(boards: jax.Array, slots: int, value_fn, rules: str = "dust") -> Expansion:
    """Every distinct child of every board, valued by ``value_fn``.

    Args:
      boards: int8 ``[N, W, H]``.
      slots: children evaluated at most (static); the first in board and cell order.
      value_fn: int8 ``[M, W, H]`` -> float32 ``[M]``, clicks left.
      rules: the click rule set the children are made by (``game.CLICK_RULES``).

    Returns an ``Expansion``: child values are 0 for a cleared board and inf at cells that
    are not a cluster's first cell and for children beyond ``slots``. ValueError for rules
    of the points game (every cluster is a click here, a lone cell too).
    """
    game.require_click_rules(rules, "expand")
    count_boards, width, height = boards.shape
    cells = width * height
    labels = jax.vmap(game.cluster_labels)(boards).reshape(count_boards, cells)
    is_action = (labels == jnp.arange(cells, dtype=jnp.int32)).reshape(-1)
    actions = jnp.sum(is_action, dtype=jnp.int32)
    flat_index = jnp.nonzero(is_action, size=slots, fill_value=0)[0].astype(jnp.int32)
    valid = jnp.arange(slots, dtype=jnp.int32) < actions
    parent, action = flat_index // cells, flat_index % cells

    def play(board_index, cell):
        removed = (labels[board_index] == cell).reshape(width, height)
        return game.remove_and_contract(boards[board_index], removed, rules)[0]

    children = jax.vmap(play)(parent, action)
    values = jnp.where(jax.vmap(game.is_done)(children), 0.0, value_fn(children))
    values = jnp.where(valid, values, jnp.inf)
    target_cell = jnp.where(valid, flat_index, count_boards * cells)
    per_cell = jnp.full(count_boards * cells, jnp.inf, jnp.float32).at[target_cell].set(values, mode="drop")
    rows = jnp.full(count_boards * cells, slots, jnp.int32).at[target_cell].set(jnp.arange(slots, dtype=jnp.int32),
                                                                                mode="drop")
    return Expansion(labels, per_cell.reshape(count_boards, cells), jnp.maximum(actions - slots, 0), children,
                     rows.reshape(count_boards, cells))


def require_indexable(slots: int, size: game.GameConfig, settings: str) -> None:
    """``configs.FieldError`` (on ``game``) unless the cells of ``slots`` children of
    ``size`` boards, and a label more per board, can be indexed in int32, as the expansion
    and the heuristic's cluster tables index them: a learner's settings made for small
    boards ask for billions of cells on large ones."""
    cells = slots * (size.num_cells + 1)
    if cells >= 2**31:
        raise configs.FieldError("game", f"{size.width}x{size.height}: with these {settings}, an update's "
                                         f"{slots:,} children hold {cells:,} cells, more than 2^31; lower them or play "
                                         f"smaller boards")


def require_room(slots: int, positions: int, share: float) -> None:
    """``configs.FieldError`` (on ``child_share``) unless ``slots`` children give each of
    the ``positions`` an update expands one at least: with fewer, most positions are never
    backed up (nor, in a beam, moved on), and the learner trains on almost nothing.

    Necessary, not enough: a position is backed up only when all its clusters' children
    fit, and the slots fill in board order, so a share passing here by a small margin can
    still leave most positions without one (the log's ``dropped`` counts the children that
    did not fit)."""
    if slots < positions:
        raise configs.FieldError("child_share", f"({share:g}) gives {slots} child slots an update for {positions} "
                                                f"positions, not one each: most would get no backup; raise it")
