"""Trained networks as policies (for ``jaxdust.core.play``) and scorers (for
``jaxdust.search.beam``). Each is a small frozen dataclass, hashable, so it can be a static
argument; the parameters travel separately as ``params``."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxdust.core.env import Rewards
from jaxdust.learn import networks
from jaxdust.search.mcts import cluster_prior


@dataclasses.dataclass(frozen=True)
class QGreedy:
    """Click the legal cell with the highest Q value."""

    hidden: tuple[int, ...]
    colors: int
    features: bool = False

    def __call__(self, key: jax.Array, board: jax.Array, params) -> jax.Array:
        q = networks.QNetwork(self.hidden, self.colors, self.features).apply(params, board[None])[0]
        return networks.masked_argmax(q, board.reshape(-1) != 0)


@dataclasses.dataclass(frozen=True)
class QScorer:
    """Clicks left from a Q-network: with rewards ``clear`` for the last click and ``click``
    for every other, ``V = clear + (n - 1) * click``, so ``n = (V - clear) / click + 1``."""

    hidden: tuple[int, ...]
    colors: int
    features: bool = False
    rewards: Rewards = Rewards()

    def __call__(self, boards: jax.Array, params) -> jax.Array:
        q = networks.QNetwork(self.hidden, self.colors, self.features).apply(params, boards)
        value = networks.masked_max(q, boards.reshape(boards.shape[0], -1) != 0)
        clicks = (value - self.rewards.clear) / self.rewards.click + 1.0
        return jnp.where(jnp.any(boards != 0, axis=(1, 2)), clicks, 0.0)


@dataclasses.dataclass(frozen=True)
class PolicyGreedy:
    """Click the legal cell with the highest policy logit (imitation network)."""

    network: networks.PolicyValueNetwork

    def __call__(self, key: jax.Array, board: jax.Array, params) -> jax.Array:
        logits, _ = self.network.apply(params, board[None])
        return networks.masked_argmax(logits[0], board.reshape(-1) != 0)


@dataclasses.dataclass(frozen=True)
class ValueScorer:
    """The imitation network's cost-to-go head (0 for an empty board)."""

    network: networks.PolicyValueNetwork

    def __call__(self, boards: jax.Array, params) -> jax.Array:
        _, cost = self.network.apply(params, boards)
        return jnp.where(jnp.any(boards != 0, axis=(1, 2)), cost, 0.0)


@dataclasses.dataclass(frozen=True)
class ClusterArgmax:
    """Click the cluster the policy head finds most likely (no simulation): the argmax
    play of a ``ValuePolicyNetwork``, at the cluster's first cell."""

    network: networks.ValuePolicyNetwork

    def __call__(self, key: jax.Array, board: jax.Array, params) -> jax.Array:
        _, logits = self.network.apply(params, board[None])
        prior, _ = cluster_prior(board[None], logits)
        return jnp.argmax(prior[0]).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class ValueHeadScorer:
    """A ``ValuePolicyNetwork``'s value head (0 for an empty board)."""

    network: networks.ValuePolicyNetwork

    def __call__(self, boards: jax.Array, params) -> jax.Array:
        value, _ = self.network.apply(params, boards)
        return jnp.where(jnp.any(boards != 0, axis=(1, 2)), value, 0.0)


@dataclasses.dataclass(frozen=True)
class NetworkEvaluator:
    """A ``ValuePolicyNetwork`` as the evaluator of ``jaxdust.search.mcts``: clicks left
    ``[N]`` and click logits ``[N, W * H]``."""

    network: networks.ValuePolicyNetwork

    def __call__(self, boards: jax.Array, params) -> tuple[jax.Array, jax.Array]:
        return self.network.apply(params, boards)


@dataclasses.dataclass(frozen=True)
class PolicyValueEvaluator:
    """The imitation network (``PolicyValueNetwork``) as an evaluator of
    ``jaxdust.search.mcts``: its cost-to-go and its click logits."""

    network: networks.PolicyValueNetwork

    def __call__(self, boards: jax.Array, params) -> tuple[jax.Array, jax.Array]:
        logits, cost = self.network.apply(params, boards)
        return cost, logits
