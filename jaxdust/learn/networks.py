"""Flax networks over boards: a Q-network (dqn), a policy/value network (imitation's mlp)
and a value/policy network whose policy head passes messages between cells (avi, and
imitation's default).

Networks take int8 boards ``[..., W, H]`` and one-hot them inside (channel 0 = empty), so
replay buffers and data sets stay int8. Outputs are per cell in the flat action order
``x * height + y``.

With ``features=True`` the input also carries facts an MLP finds hard to learn from cells
alone but the rules give exactly: per cell, the size of its cluster, how many clusters
its colour has and whether clicking it finishes that colour; per board, the beam
search's hand-made features. The value head then predicts a correction to the tuned
hand-made estimate (``jaxdust.search.heuristic``), so training starts from it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import game
from jaxdust.search import heuristic
from jaxdust.search.heuristic import HEURISTIC_WEIGHTS

PRESETS = {
    "default": (512, 512, 512),
    "original": (1500,) * 5,  # the Deep Q-learning post's 5 x 1500 ReLU layers
}


def encode(boards: jax.Array, colors: int) -> jax.Array:
    """int8 boards ``[..., W, H]`` -> float32 ``[..., W * H * (colors + 1)]`` (``game.one_hot``:
    ValueError for a concrete board holding a colour above ``colors``)."""
    planes = game.one_hot(boards, colors)
    return planes.reshape(*boards.shape[:-2], -1)


def batch_rule_features(boards: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``rule_features`` of boards int8 ``[M, W, H]``: float32 ``[M, W * H, 3]`` and
    ``[M, 5]``, from one labelling that the per-cell and the board features share."""
    tables = heuristic.cluster_tables(boards)
    occupied = tables.columns != 0  # [cells, M], as every table: the batch last
    cell_size = jnp.where(occupied, jnp.take_along_axis(tables.sizes, tables.labels.astype(jnp.int32), axis=0), 0)
    colour = jnp.maximum(tables.columns.astype(jnp.int32) - 1, 0)
    colour_clusters = jnp.where(occupied, jnp.take_along_axis(tables.per_colour, colour, axis=0), 0)
    per_cell = jnp.stack([cell_size / 10.0, colour_clusters / 10.0, (colour_clusters == 1) & occupied], -1)
    return jnp.moveaxis(per_cell, 1, 0).astype(jnp.float32), heuristic.batch_features(boards, tables)


@jax.custom_batching.custom_vmap
def rule_features(board: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Exact facts about one board: per cell float32 ``[W * H, 3]`` (cluster size / 10,
    clusters of its colour / 10, clicking it finishes its colour) and the board's
    heuristic features float32 ``[5]`` (``heuristic.FEATURES``, unscaled). ``jax.vmap`` of
    it calls ``batch_rule_features``."""
    per_cell, features = batch_rule_features(board[None])
    return per_cell[0], features[0]


@rule_features.def_vmap
def _rule_features_vmap(axis_size: int, in_batched: list, boards: jax.Array):
    return batch_rule_features(boards), (True, True)


_FEATURE_SCALE = np.array([0.2, 0.1, 1.0, 0.02, 0.1], np.float32)  # keeps inputs near [0, 1]


# Jitted (a caller's jit inlines it): a network applied outside jit would otherwise run the
# labelling's while loops op by op and compile their bodies again at every call.
@functools.partial(jax.jit, static_argnames="colors")
def encode_with_features(boards: jax.Array, colors: int) -> tuple[jax.Array, jax.Array]:
    """Network input ``[..., D]`` (one-hot cells, per-cell and board features) and the
    hand-made estimate of clicks left ``[...]``."""
    flat_boards = boards.reshape(-1, *boards.shape[-2:])
    per_cell, board_features = jax.vmap(rule_features)(flat_boards)
    prior = board_features @ jnp.asarray(HEURISTIC_WEIGHTS, jnp.float32)
    inputs = jnp.concatenate([
        encode(flat_boards, colors), per_cell.reshape(flat_boards.shape[0], -1), board_features * _FEATURE_SCALE,
    ], axis=-1)
    return inputs.reshape(*boards.shape[:-2], -1), prior.reshape(boards.shape[:-2])


if TYPE_CHECKING:
    class _Network(nn.Module):
        # flax types apply's result as "the output, or (output, mutated state)"; the networks
        # here are applied without mutable collections, so it is their output.
        def apply(self, variables, *args, **kwargs) -> Any: ...
else:
    _Network = nn.Module


class MLP(nn.Module):
    """ReLU layers with He initialisation, as the original post used."""

    hidden: Sequence[int]

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for size in self.hidden:
            x = nn.relu(nn.Dense(size, kernel_init=nn.initializers.he_normal())(x))
        return x


class QNetwork(_Network):
    """One value per cell: ``boards [..., W, H] -> [..., W * H]`` float32."""

    hidden: Sequence[int]
    colors: int
    features: bool = False

    @nn.compact
    @game.standard_numpy
    def __call__(self, boards: jax.Array) -> jax.Array:
        cells = boards.shape[-2] * boards.shape[-1]
        inputs = encode_with_features(boards, self.colors)[0] if self.features else encode(boards, self.colors)
        return nn.Dense(cells, kernel_init=nn.initializers.lecun_normal())(MLP(self.hidden)(inputs))


class PolicyValueNetwork(_Network):
    """Shared torso, two heads: click logits per cell ``[..., W * H]`` (a sigmoid per cell
    marks the cluster to click) and the cost-to-go ``[...]`` (clicks left)."""

    hidden: Sequence[int]
    colors: int
    features: bool = False
    prior_rules: str = "dust"  # with features, the cost-to-go starts at this rule set's heuristic

    @nn.compact
    @game.standard_numpy
    def __call__(self, boards: jax.Array) -> tuple[jax.Array, jax.Array]:
        cells = boards.shape[-2] * boards.shape[-1]
        if self.features:
            inputs, prior = encode_with_features(boards, self.colors)
            prior = heuristic.with_rule_feature(boards, prior, self.prior_rules)
        else:
            inputs, prior = encode(boards, self.colors), 0.0
        torso = MLP(self.hidden)(inputs)
        logits = nn.Dense(cells, name="policy")(torso)
        correction = nn.Dense(1, name="value", kernel_init=nn.initializers.zeros)(torso)[..., 0]
        return logits, prior + correction


def masked_argmax(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Index of the largest value where ``mask`` is True: ``[..., N] -> [...]`` int32. A
    masked-in value of ``-inf`` still ranks above every masked-out cell (held at the lowest
    finite value), so a network whose outputs overflow picks a legal cell, not cell 0."""
    floor = jnp.finfo(jnp.result_type(values, jnp.float32)).min
    return jnp.argmax(jnp.where(mask, jnp.maximum(values, floor), -jnp.inf), axis=-1).astype(jnp.int32)


def masked_max(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Largest value where ``mask`` is True, 0 where the mask is empty: ``[..., N] -> [...]``."""
    best = jnp.max(jnp.where(mask, values, -jnp.inf), axis=-1)
    return jnp.where(jnp.any(mask, axis=-1), best, 0.0)


@functools.partial(jax.jit, static_argnames=("colors", "features"))  # as encode_with_features
def board_planes(boards: jax.Array, colors: int, features: bool = True, per_cell: jax.Array | None = None) -> jax.Array:
    """Per-cell input planes for convolutions: float32 ``[..., W, H, colors + 8]``: the
    one-hot cell (``colors + 1``), its three rule features (``rule_features``, or
    ``per_cell`` ``[..., W, H, 3]`` where already computed; left out without ``features``:
    ``colors + 5`` planes) and where it is, since the slide toward the centre makes the game
    depend on position: distance to the centre column, which half, the row, and the column."""
    *batch, width, height = boards.shape
    if not features:
        per_cell = jnp.zeros((*batch, width, height, 0), jnp.float32)
    elif per_cell is None:
        flat_boards = boards.reshape(-1, width, height)
        per_cell = jax.vmap(rule_features)(flat_boards)[0].reshape(*batch, width, height, 3)
    x = (jnp.arange(width, dtype=jnp.float32) + 0.5) / width
    y = jnp.arange(height, dtype=jnp.float32) / height
    position = jnp.stack(jnp.broadcast_arrays(
        jnp.abs(x - 0.5)[:, None], (x < 0.5).astype(jnp.float32)[:, None], y[None, :], x[:, None]), -1)
    position = jnp.broadcast_to(position, (*batch, width, height, 4))
    return jnp.concatenate([game.one_hot(boards, colors), per_cell, position], -1)


class ValuePolicyNetwork(_Network):
    """Shared torso, two heads: the value of the board in clicks left ``[...]`` (lower is
    better) and click logits per cell ``[..., W * H]`` (a policy over clusters through
    ``cluster_log_probs``).

    With ``prior`` the value head starts at the hand-made estimate of the board (a
    zero-initialised correction), so untrained greedy play is the heuristic's; without it,
    at a constant. The estimate is the dust game's, or ``prior_rules``' own where that rule
    set has a feature of its own (``heuristic.heuristic_for``: Former's column runs). With
    ``features`` the exact rule features are input (``encode_with_features``), without it
    only the one-hot cells. With ``conv`` channels the cells first pass through 3x3
    convolutions over ``board_planes``, whose output replaces the flat cell inputs of the
    MLP. With ``cell_head`` every cell's logit also gets a term
    from one small MLP shared by all cells, over that cell's planes and a summary of the
    torso: what makes a click good is mostly the same wherever the cluster stands, and a
    shared head learns it once instead of once per cell. Over ``cell_rounds`` residual
    rounds of ``cell_width`` channels each cell hears its four neighbours, the mean of its
    cluster, of its column and of its row: what a click changes (what falls into the hole,
    which clusters then touch) is spatial, and a flat layer over the torso did not learn it.
    Logits start at zero (uniform).
    """

    hidden: Sequence[int]
    colors: int
    prior: bool = True
    conv: Sequence[int] = ()
    features: bool = True
    cell_head: bool = True
    cell_rounds: int = 0
    cell_width: int = 64
    prior_rules: str = "dust"

    @nn.compact
    @game.standard_numpy
    def __call__(self, boards: jax.Array) -> tuple[jax.Array, jax.Array]:
        cells = boards.shape[-2] * boards.shape[-1]
        inputs, estimate = encode_with_features(boards, self.colors)
        base = heuristic.with_rule_feature(boards, estimate, self.prior_rules) if self.prior else \
            jnp.full(estimate.shape, 10.0, jnp.float32)
        board_inputs = inputs[..., -HEURISTIC_WEIGHTS.shape[0]:]  # the scaled board features
        one_hot_size = cells * (self.colors + 1)  # encode_with_features puts the per-cell features next
        per_cell = inputs[..., one_hot_size: one_hot_size + 3 * cells].reshape(*boards.shape, 3)
        planes = board_planes(boards, self.colors, self.features, per_cell)
        if not self.features:
            inputs = encode(boards, self.colors)
        cell_inputs = planes
        if self.conv:
            x = planes
            for channels in self.conv:
                x = nn.relu(nn.Conv(channels, (3, 3), padding="SAME", kernel_init=nn.initializers.he_normal())(x))
            inputs = x.reshape(*boards.shape[:-2], -1)
            if self.features:
                inputs = jnp.concatenate([inputs, board_inputs], -1)
            cell_inputs = jnp.concatenate([planes, x], -1)  # the cell head sees each cell's neighbourhood too
        torso = MLP(self.hidden)(inputs)
        value = base + nn.Dense(1, kernel_init=nn.initializers.zeros, name="value")(torso)[..., 0]
        logits = nn.Dense(cells, kernel_init=nn.initializers.zeros, name="policy")(torso)
        if self.cell_head:
            context = nn.Dense(self.cell_width, name="cell_context")(torso)
            x = nn.relu(nn.Dense(self.cell_width, name="cell_planes")(cell_inputs) + context[..., None, None, :])
            if self.cell_rounds:
                clusters = cluster_means(boards)
            for round_index in range(self.cell_rounds):
                x = x + nn.relu(CellMessages(self.cell_width, name=f"cell_round_{round_index}")(x, clusters))
            x = nn.relu(nn.Dense(self.cell_width, kernel_init=nn.initializers.he_normal(), name="cell_hidden")(x))
            cell_logits = nn.Dense(1, kernel_init=nn.initializers.zeros, name="cell_logit")(x)[..., 0]
            logits = logits + cell_logits.reshape(*boards.shape[:-2], cells)
        return value, logits


def is_policy_head(name: str) -> bool:
    """Whether a ``ValuePolicyNetwork`` submodule of this name makes only the click logits:
    the torso's ``policy`` layer and the cell head's (``cell_...``) layers."""
    return name == "policy" or name.startswith("cell_")


class CellMessages(nn.Module):
    """One round of the cell head: what each cell ``[..., W, H, D]`` hears from its four
    neighbours, the mean of its cluster, of its column (where gravity acts) and of its row
    (where the halves slide), with itself; ``[..., W, H, features]`` before the activation.

    The parameters (and their initialisation) are those of one ``nn.Dense`` over the eight
    vectors side by side, ``8 * D`` inputs, but the column's and the row's means are
    multiplied before they are spread over their cells rather than after: the same sum,
    with a quarter of the multiplications left out (a default ``avi`` update ran 13% faster
    on a 2-core CPU: ``benchmarks/compile_times.py``'s ``avi_default``)."""

    features: int

    @nn.compact
    def __call__(self, x: jax.Array, clusters: jax.Array) -> jax.Array:
        depth = x.shape[-1]
        kernel = self.param("kernel", nn.initializers.he_normal(), (8 * depth, self.features), jnp.float32)
        bias = self.param("bias", nn.initializers.zeros, (self.features,), jnp.float32)
        local = jnp.concatenate([x, *neighbours(x), _apply_means(clusters, x)], -1)
        column = jnp.mean(x, axis=-2, keepdims=True) @ kernel[6 * depth: 7 * depth]  # [..., W, 1, features]
        row = jnp.mean(x, axis=-3, keepdims=True) @ kernel[7 * depth:]  # [..., 1, H, features]
        return local @ kernel[: 6 * depth] + column + row + bias


def neighbours(x: jax.Array) -> tuple[jax.Array, ...]:
    """Each cell's left, right, lower and upper neighbour's vector (zeros past the edge):
    four float32 ``[..., W, H, D]`` from ``x`` ``[..., W, H, D]``."""
    def shifted(axis: int, step: int) -> jax.Array:
        pad = [(0, 0)] * x.ndim
        pad[axis] = (1, 0) if step > 0 else (0, 1)
        padded = jnp.pad(x, pad)
        size = x.shape[axis]
        return jax.lax.slice_in_dim(padded, 0, size, axis=axis) if step > 0 else \
            jax.lax.slice_in_dim(padded, 1, size + 1, axis=axis)
    width_axis, height_axis = x.ndim - 3, x.ndim - 2
    return shifted(width_axis, 1), shifted(width_axis, -1), shifted(height_axis, 1), shifted(height_axis, -1)


@jax.jit  # as encode_with_features
def cluster_means(boards: jax.Array) -> jax.Array:
    """float32 ``[..., W * H, W * H]``: row ``i`` averages over the cells of cell ``i``'s
    cluster (zeros for an empty cell), so a product with it shares what the cells of one
    cluster know among them."""
    *batch, width, height = boards.shape
    labels = jax.vmap(game.cluster_labels)(boards.reshape(-1, width, height)).reshape(*batch, width * height)
    same = ((labels[..., :, None] == labels[..., None, :]) & (labels[..., None, :] >= 0)).astype(jnp.float32)
    return same / jnp.maximum(jnp.sum(same, -1, keepdims=True), 1.0)


def _apply_means(means: jax.Array, x: jax.Array) -> jax.Array:
    """``means`` ``[..., C, C]`` applied to the cell vectors ``x`` ``[..., W, H, D]``."""
    flat = x.reshape(*x.shape[:-3], -1, x.shape[-1])
    return (means @ flat).reshape(x.shape)

