"""Simple policies that show where learned agents and solvers stand (policies as in
``jaxdust.core.play``)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxdust.core import game


def largest_cluster(key: jax.Array, board: jax.Array, params=None) -> jax.Array:
    """Click the largest cluster; ties go to the cluster met first scanning rows
    bottom-up, left to right (the rule behind ``boards/eval_8x6x5.txt``). ``key`` is unused.

    The first cell in that scan among all cells of maximal clusters belongs to the winner.
    """
    del key, params
    width, height = board.shape
    sizes = game.cluster_sizes(board)
    row_major = (jnp.arange(height, dtype=jnp.int32)[None, :] * width
                 + jnp.arange(width, dtype=jnp.int32)[:, None])  # [W, H]
    is_largest = (sizes == jnp.max(sizes)) & (sizes > 0)
    order = jnp.where(is_largest, row_major, width * height).reshape(-1)
    return jnp.argmin(order).astype(jnp.int32)


def largest_group(key: jax.Array, board: jax.Array, params=None) -> jax.Array:
    """Click the largest cluster; ties go to the one whose representative (its cell with
    the smallest ``x * height + y``) is leftmost, then bottommost: the rule of the online
    judge's "The Same Game" (UVa 758), the SameGame family's greedy baseline. ``key`` is
    unused. (``largest_cluster`` breaks ties by a row-major scan instead.)"""
    del key, params
    return jnp.argmax(game.cluster_sizes(board).reshape(-1)).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class RandomLegal:
    """A uniformly random click among the cells where a click removes something under
    ``rules``."""

    rules: str = "dust"

    def __call__(self, key: jax.Array, board: jax.Array, params=None) -> jax.Array:
        return game.random_legal_action(key, game.legal_action_mask(board, self.rules).reshape(-1))


random_legal = RandomLegal("dust")  # click a uniformly random occupied cell
