"""The hand-made estimate of clicks left, shared by every search and by the networks' prior.

Five features of a position (``FEATURES``) weighted by ``HEURISTIC_WEIGHTS``; lower is
better. The weights were tuned by coordinate descent on boards 200-399 of the eval set
(``benchmarks/tune_heuristic.py`` reproduces them). The original post's beam search scored
colours + 0.6 * extra clusters (``REFERENCE_WEIGHTS``). Under gravity alone (``former``)
a sixth feature counts: the column runs beyond one a colour (``extra_column_runs``), with
the weight of ``RULE_FEATURE_WEIGHTS``; ``heuristic_for(rules)`` is the scorer of a rule
set. This module is plain JAX and NumPy; ``jaxdust.solver.upper_bound`` computes the same
features on bitboards.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import game

FEATURES = ("colours", "extra_clusters", "no_single_colour", "cells", "largest_cluster")
HEURISTIC_WEIGHTS = np.array([1.0, 0.15, 0.35, 0.015, -0.045])
REFERENCE_WEIGHTS = np.array([1.0, 0.6, 0.0, 0.0, 0.0])
# Where columns never move, each run of adjacent columns that hold a colour needs a click
# of its own (the exact solver's bound there, ``jaxdust.solver.ida.column_runs``), so the
# runs beyond one a colour are clicks a position still owes. The weight was picked on fresh
# random Former boards (``benchmarks/tune_heuristic.py --rules former``); the other
# weights stay the dust game's: retuned there they gained 0.02 clicks a board at width
# 2000, where this feature gained 0.14.
RULE_FEATURE_WEIGHTS = {"former": 0.3}

# Scores are whole multiples of this. With weights on this grid a score is an exact sum
# (integer features times integer weights), so positions of equal worth tie exactly,
# whatever the order of summation, float32 or float64; JAX and numba beams then break the
# tie the same way (by position key) and find the same solutions.
SCORE_STEP = 1e-4

# A scorer maps int8 boards [M, W, H] and its parameters (a pytree, or None) to float32 [M],
# an estimate of the clicks left: lower is better.
Scorer = Callable[[jax.Array, object], jax.Array]


class ClusterTables(NamedTuple):
    """One labelling of boards ``[M, W, H]`` and the counts read from it, cells first and
    the batch last (how XLA on a CPU vectorises them): what ``batch_features`` and the
    networks' per-cell rule features (``jaxdust.learn.networks``) share."""

    columns: jax.Array  # int8 [cells, M], the boards' cells in flat order
    labels: jax.Array  # [cells, M], game.labels_cells_first (cells where a cell is empty)
    representative: jax.Array  # bool [cells, M], a cluster's first cell
    per_colour: jax.Array  # [9, M], clusters of each colour 1..9
    sizes: jax.Array  # int32 [cells + 1, M], cells of each label (row ``cells``: the empty cells)


# Jitted (a caller's jit inlines it): called outside jit, the labelling's while loops would
# run op by op and compile their bodies again at every call.
@jax.jit
@game.standard_numpy
def cluster_tables(boards: jax.Array) -> ClusterTables:
    """``ClusterTables`` of boards int8 ``[M, W, H]``. Cluster sizes are one scatter-add
    over all boards, which on a CPU beats comparing every cell with every label (0.1
    against 1.4 us per board)."""
    count, width, height = boards.shape
    cells = width * height
    columns = jnp.moveaxis(boards, 0, -1).reshape(cells, count)
    labels = game.labels_cells_first(columns.reshape(width, height, count)).reshape(cells, count)
    dtype = labels.dtype
    representative = labels == game.cell_index(width, height, dtype, 1).reshape(cells, 1)
    first_colours = jnp.where(representative, columns, jnp.zeros((), columns.dtype))
    per_colour = jnp.stack([game.fold_rows((first_colours == colour).astype(dtype), jnp.add)
                            for colour in range(1, game.MAX_COLORS + 1)])
    # Sizes label-major ([label, board]), in the labels' cell-major order: no transposed copy,
    # and neighbouring boards write to neighbouring slots (2x faster than board-major).
    slots = labels.astype(jnp.int32) * count + jnp.arange(count, dtype=jnp.int32)
    sizes = jnp.zeros((cells + 1) * count, jnp.int32).at[slots.reshape(-1)].add(
        1, mode="promise_in_bounds").reshape(cells + 1, count)
    return ClusterTables(columns, labels, representative, per_colour, sizes)


@jax.jit  # as cluster_tables
@game.standard_numpy
def batch_features(boards: jax.Array, tables: ClusterTables | None = None) -> jax.Array:
    """``FEATURES`` of boards int8 ``[M, W, H]``: float32 ``[M, 5]``.

    Colours left, extra clusters (clusters - colours), whether no colour is a single
    cluster, cells left, and the largest cluster's size, from ``tables``
    (``cluster_tables(boards)`` unless given); sums over cells are ``game.fold_rows``.
    """
    columns, _, representative, per_colour, sizes = cluster_tables(boards) if tables is None else tables
    colours = game.fold_rows((per_colour > 0).astype(jnp.int32), jnp.add)
    return jnp.stack([
        colours,
        game.fold_rows(representative.astype(jnp.int32), jnp.add) - colours,
        (colours > 0) & ~game.fold_rows(per_colour == 1),
        game.fold_rows((columns != 0).astype(jnp.int32), jnp.add),
        game.fold_rows(sizes[:-1], jnp.maximum),
    ], axis=1).astype(jnp.float32)


@jax.custom_batching.custom_vmap
@game.standard_numpy
def heuristic_features(board: jax.Array) -> jax.Array:
    """``FEATURES`` of one board int8 ``[W, H]``: float32 ``[5]`` (see ``batch_features``,
    which ``jax.vmap`` of this calls)."""
    return batch_features(board[None])[0]


@heuristic_features.def_vmap
def _heuristic_features_vmap(axis_size: int, in_batched: list, boards: jax.Array):
    return batch_features(boards), True


@jax.jit  # as cluster_tables
@game.standard_numpy
def extra_column_runs(boards: jax.Array) -> jax.Array:
    """Runs of adjacent columns that hold a colour, summed over colours, less the colours
    present, of boards int8 ``[M, W, H]``: float32 ``[M]`` (0 for a board whose every colour
    fills one block of columns)."""
    runs = jnp.zeros(boards.shape[0], jnp.int32)
    for colour in range(1, game.MAX_COLORS + 1):
        holds = jnp.any(boards == colour, axis=-1)  # [M, W]
        starts = holds & ~jnp.pad(holds, ((0, 0), (1, 0)))[:, :-1]
        runs = runs + jnp.sum(starts, axis=-1, dtype=jnp.int32) - jnp.any(holds, axis=-1)
    return runs.astype(jnp.float32)


def with_rule_feature(boards: jax.Array, estimate: jax.Array, rules: str) -> jax.Array:
    """An unrounded estimate ``[...]`` of boards ``[..., W, H]`` from the five features
    (``HEURISTIC_WEIGHTS``) made ``rules``' own: plus its weighted rule feature where it has
    one (what ``heuristic_for(rules)`` adds, for the networks' prior)."""
    if rules not in RULE_FEATURE_WEIGHTS:
        return estimate
    extra = extra_column_runs(boards.reshape(-1, *boards.shape[-2:])).reshape(estimate.shape)
    return estimate + RULE_FEATURE_WEIGHTS[rules] * extra


def heuristic_weights(rules: str = "dust") -> np.ndarray:
    """The weights of ``rules``' heuristic: ``HEURISTIC_WEIGHTS``, then the weight of its
    rule feature where it has one (``former``: ``extra_column_runs``)."""
    game.rules_of(rules)  # an unknown name fails here, listing the known ones
    if rules not in RULE_FEATURE_WEIGHTS:
        return HEURISTIC_WEIGHTS
    return np.append(HEURISTIC_WEIGHTS, RULE_FEATURE_WEIGHTS[rules])


def linear_scorer(weights) -> Scorer:
    """A scorer ``weights . heuristic_features(board)`` over a batch of boards; a sixth
    weight multiplies ``extra_column_runs``. Equal weights give equal scorers, so a beam
    compiled for one serves the other."""
    # numpy, not a device array: one made at import would start JAX's backend before
    # train.py --distributed can call jax.distributed.initialize().
    steps = np.asarray(weights, np.float64) / SCORE_STEP  # whole numbers for weights on the grid
    steps = steps.astype(np.float32)
    if steps.shape not in ((len(FEATURES),), (len(FEATURES) + 1,)):
        raise ValueError(f"a linear scorer takes {len(FEATURES)} or {len(FEATURES) + 1} weights, "
                         f"got shape {steps.shape}")
    return LinearScorer(tuple(float(step) for step in steps))


@dataclasses.dataclass(frozen=True)
class LinearScorer:
    """``linear_scorer``'s scorer: its weights in ``SCORE_STEP``s (float32 values), hashable
    and equal by them (a static argument)."""

    steps: tuple[float, ...]

    @game.standard_numpy
    def __call__(self, boards: jax.Array, params=None) -> jax.Array:
        steps = np.asarray(self.steps, np.float32)
        # HIGHEST: a GPU may multiply float32 at TF32's 11 bits by default, which rounds a
        # weight of thousands of steps, and the scores' exact ties with numba's would go.
        total = jnp.dot(batch_features(boards), steps[: len(FEATURES)], precision=jax.lax.Precision.HIGHEST)
        if steps.shape[0] > len(FEATURES):
            total = total + extra_column_runs(boards) * steps[len(FEATURES)]
        return jnp.round(total) * np.float32(SCORE_STEP)


heuristic_scorer = linear_scorer(HEURISTIC_WEIGHTS)
# One scorer object a rule set, so the beams' compiled programs (the scorer is static) are shared.
_RULE_SCORERS = {rules: linear_scorer(heuristic_weights(rules)) for rules in RULE_FEATURE_WEIGHTS}


def heuristic_for(rules: str = "dust") -> Scorer:
    """The hand-made scorer of ``rules``: ``heuristic_scorer``, or with the rule set's own
    feature where it has one (``RULE_FEATURE_WEIGHTS``)."""
    game.rules_of(rules)
    return _RULE_SCORERS.get(rules, heuristic_scorer)
