"""Simple policies that show where learned agents and solvers stand.

A *policy* is ``policy(key, board, params) -> action``: a PRNG key, one int8 board
``[W, H]`` and the policy's parameters (a pytree, or None) in, an int32 flat action
``x * height + y`` out. Policies must be pure and ``vmap``-able;
``jaxdust.evaluation.play_boards`` runs them over a batch of boards.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxdust import game


def random_legal(key: jax.Array, board: jax.Array, params=None) -> jax.Array:
    """Click a uniformly random occupied cell."""
    return game.random_legal_action(key, game.legal_action_mask(board).reshape(-1))


def largest_cluster(key: jax.Array, board: jax.Array, params=None) -> jax.Array:
    """Click the largest cluster; ties go to the cluster met first scanning rows
    bottom-up, left to right (the rule behind ``boards/eval_8x6x5.txt``). ``key`` is unused.

    The first cell in that scan among all cells of maximal clusters belongs to the winner.
    """
    del key, params
    width, height = board.shape
    sizes = game.cluster_sizes(board)
    row_major = jnp.arange(height)[None, :] * width + jnp.arange(width)[:, None]  # [W, H]
    is_largest = (sizes == jnp.max(sizes)) & (sizes > 0)
    order = jnp.where(is_largest, row_major, width * height).reshape(-1)
    return jnp.argmin(order).astype(jnp.int32)


POLICIES = {
    "random": random_legal,
    "largest": largest_cluster,
}
