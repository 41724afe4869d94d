"""The hand-made estimate of clicks left, shared by every search and by the networks' prior.

Five features of a position (``FEATURES``) weighted by ``HEURISTIC_WEIGHTS``; lower is
better. The weights were tuned by coordinate descent on boards 200-399 of the eval set
(``benchmarks/tune_heuristic.py`` reproduces them). The original post's beam search scored
colours + 0.6 * extra clusters (``REFERENCE_WEIGHTS``). This module is plain JAX and NumPy;
``jaxdust.solver.upper_bound`` computes the same features on bitboards.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import game

FEATURES = ("colours", "extra_clusters", "no_single_colour", "cells", "largest_cluster")
HEURISTIC_WEIGHTS = np.array([1.0, 0.15, 0.35, 0.015, -0.045])
REFERENCE_WEIGHTS = np.array([1.0, 0.6, 0.0, 0.0, 0.0])

# A scorer maps int8 boards [M, W, H] and its parameters (a pytree, or None) to float32 [M],
# an estimate of the clicks left: lower is better.
Scorer = Callable[[jax.Array, object], jax.Array]


def heuristic_features(board: jax.Array) -> jax.Array:
    """``FEATURES`` of one board: float32 ``[5]``.

    Colours left, extra clusters (clusters - colours), whether no colour is a single
    cluster, cells left, and the largest cluster's size.
    """
    width, height = board.shape
    cells = width * height
    labels = game.cluster_labels(board).reshape(-1)
    flat = board.reshape(-1)
    representative = labels == jnp.arange(cells)
    per_colour = jnp.sum(
        representative[None, :] & (flat[None, :] == jnp.arange(1, game.MAX_COLORS + 1)[:, None]),
        axis=1,
    )  # [9] clusters of each colour
    colours = jnp.sum(per_colour > 0)
    sizes = jnp.zeros(cells + 1, jnp.int32).at[labels].add(1, mode="drop")[:cells]
    return jnp.stack([
        colours,
        jnp.sum(representative) - colours,
        (colours > 0) & ~jnp.any(per_colour == 1),
        jnp.sum(flat != 0),
        jnp.max(sizes),
    ]).astype(jnp.float32)


def linear_scorer(weights) -> Scorer:
    """A scorer ``weights . heuristic_features(board)`` over a batch of boards."""
    # numpy, not a device array: one made at import would start JAX's backend before
    # train.py --distributed can call jax.distributed.initialize().
    weights = np.asarray(weights, np.float32)

    def score(boards: jax.Array, params=None) -> jax.Array:
        return jax.vmap(heuristic_features)(boards) @ weights

    return score


heuristic_scorer = linear_scorer(HEURISTIC_WEIGHTS)
reference_scorer = linear_scorer(REFERENCE_WEIGHTS)  # the original beam search's score
