"""Selection without sorting: the few best of long rows, and compaction, as a CPU runs them.

XLA on a CPU lowers ``jax.lax.top_k`` to a full sort of each row, and ``jnp.cumsum`` /
``jnp.nonzero`` over long rows to reduce-window kernels; at width 2000 the beam picks
16,000 of 96,000 children per board and click, where these took ~15% of its time. Here a
bisection on the scores' bits finds the cut, and 32-column bit words (popcounts, a
log-step prefix over words) rank and compact. Results equal ``top_k``'s and ``nonzero``'s.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import game


def trues_before(mask: jax.Array) -> jax.Array:
    """int32 ``[B, R]``: how many Trues of bool ``mask [B, R]`` lie left of each column."""
    rows, columns = mask.shape
    words = game.pack_words(mask)
    counts = jax.lax.population_count(words).astype(jnp.int32)
    before = game.inclusive_prefix_sum(counts, axis=1) - counts
    inside = jax.lax.population_count(words[:, :, None] & (game.BIT - np.uint32(1))).astype(jnp.int32)
    return (before[:, :, None] + inside).reshape(rows, -1)[:, :columns]


def first_trues(mask: jax.Array, count: int) -> tuple[jax.Array, jax.Array]:
    """The columns of the first ``count`` Trues of each row of bool ``mask [B, R]``, int32
    ``[B, count]`` in column order (0 past the last True, as ``jnp.nonzero(size=count)``),
    and bool ``[B, count]``: whether each exists."""
    rows, columns = mask.shape
    slot = jnp.where(mask, trues_before(mask), count)
    row = jnp.broadcast_to(jnp.arange(rows, dtype=jnp.int32)[:, None], mask.shape)
    column = jnp.broadcast_to(jnp.arange(columns, dtype=jnp.int32), mask.shape)
    found = jnp.zeros((rows, count), jnp.int32).at[row, slot].set(column, mode="drop")
    return found, jnp.arange(count, dtype=jnp.int32) < jnp.sum(mask, axis=1, dtype=jnp.int32)[:, None]


def order_key(scores: jax.Array) -> jax.Array:
    """uint32 in the order of float32 ``scores`` (its bits, negatives flipped), the total
    order ``jnp.sort`` and ``top_k`` use: -0 before +0."""
    bits = jax.lax.bitcast_convert_type(scores, jnp.uint32)
    return jnp.where(jnp.right_shift(bits, 31) == 1, ~bits, bits | np.uint32(1 << 31))


def from_order_key(keys: jax.Array) -> jax.Array:
    """The float32 scores of ``order_key``'s uint32 ``keys``."""
    bits = jnp.where(jnp.right_shift(keys, 31) == 1, keys ^ np.uint32(1 << 31), ~keys)
    return jax.lax.bitcast_convert_type(bits, jnp.float32)


def smallest_columns(scores: jax.Array, count: int) -> tuple[jax.Array, jax.Array]:
    """The columns of the ``count`` smallest scores of each row, the set
    ``jax.lax.top_k(-scores, count)`` picks (ties to the lower column), in column order,
    and the largest score picked.

    Args: scores float32 ``[B, R]`` without NaN, ``count <= R``.
    Returns int32 ``[B, count]`` and float32 ``[B, 1]``.
    """
    if not 1 <= count <= scores.shape[-1]:  # past R the bisection never has enough: column 0, repeated
        raise ValueError(f"smallest_columns: count must be between 1 and the row's {scores.shape[-1]} scores, "
                         f"got {count}")
    keys = order_key(scores)

    def bisect(_, bounds):  # the count-th smallest key lies in [low, high]
        low, high = bounds
        middle = low + (high - low) // 2
        enough = jnp.sum(keys <= middle[:, None], axis=1, dtype=jnp.int32) >= count
        return jnp.where(enough, low, middle + 1), jnp.where(enough, middle, high)

    threshold = jax.lax.fori_loop(0, 32, bisect, (jnp.min(keys, axis=1), jnp.max(keys, axis=1)))[0][:, None]
    below, tied = keys < threshold, keys == threshold
    room = count - jnp.sum(below, axis=1, dtype=jnp.int32)[:, None]
    picked = below | (tied & (trues_before(tied) < room))
    return first_trues(picked, count)[0], from_order_key(threshold)
