"""Trained networks as policies (for ``jaxdust.core.play``) and scorers (for
``jaxdust.search.beam``). Each is a small frozen dataclass, hashable, so it can be a static
argument; the parameters travel separately as ``params``. Each may say the rules its
network was trained under (``trained_rules``, as ``load_run``'s do) and the size of its
boards (``trained_size``): ``play_boards`` and the searches then refuse other rules and
sizes (``jaxdust.core.boards.require_model_fits``)."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import game
from jaxdust.core.boards import require_model_shape
from jaxdust.core.env import Rewards
from jaxdust.learn import networks
from jaxdust.search.mcts import cluster_prior


@dataclasses.dataclass(frozen=True)
class Trained:
    """What every agent may say of its network beside its own fields."""

    trained_rules: str | None = dataclasses.field(default=None, kw_only=True)  # None: not said
    trained_size: tuple[int, int] | None = dataclasses.field(default=None, kw_only=True)  # (W, H); None: not said

    def __post_init__(self):
        size = self.trained_size
        if size is not None and not (isinstance(size, tuple) and len(size) == 2
                                     and all(game.is_integer(n) and n >= 1 for n in size)):
            # A list was skipped by the size check and made the agent unhashable (no static argument).
            raise ValueError(f"{type(self).__name__}: trained_size must be a (width, height) tuple of positive "
                             f"integers or None, got {size!r}")
        if self.trained_rules is not None:
            game.rules_of(self.trained_rules)  # TypeError or ValueError naming the known rules
        try:
            hash(self)
        except TypeError as error:  # a list among the fields (hidden=[8]): no static argument
            raise TypeError(f"{type(self).__name__}: its fields must be hashable (tuples, not lists): {error}") from None

    def _inputs(self, boards, params, dims: int) -> jax.Array:
        """``boards`` as an array of ``dims`` dimensions (one board ``[W, H]`` for a policy,
        ``[N, W, H]`` for a scorer or evaluator); ValueError, checked as a call is traced,
        for parameters left out (``params=None`` is the default of ``play_boards`` and the
        searches, where an untrained agent needs none) or not shaped as its network's
        (another run's), boards of another rank, or boards
        of another size or more colours than the network's (``require_model_shape``: an
        agent called directly is held to them as ``play_boards`` holds it)."""
        name = type(self).__name__
        if params is None:
            raise ValueError(f"{name} plays a trained network: pass its parameters too (params=agent.params, "
                             "where agent = load_run(...))")
        boards = jnp.asarray(game.native_byte_order(boards))
        if boards.ndim != dims:
            wanted = "one board [W, H]" if dims == 2 else "boards [N, W, H]"
            raise ValueError(f"{name} takes {wanted}, got an array of shape {tuple(boards.shape)}")
        require_model_shape(boards, self, name)
        # Another network's parameters failed inside flax, naming a layer but not the mix-up.
        module = self.module()
        if not hasattr(module, "init"):  # a stand-in with an apply alone: nothing to check against
            return boards
        missing = _parameter_mismatch(_parameter_shapes(module, *boards.shape[-2:], boards.dtype), params)
        if missing:
            raise ValueError(f"{name}: params are not this network's ({missing}): give the parameters load_run "
                             "gave with this agent (agent.params)")
        return boards

    def module(self):
        """The flax module whose parameters a call takes."""
        return getattr(self, "network")


@functools.lru_cache(maxsize=64)  # tracing the network's init takes ~30 ms: not at every call made outside jit
def _parameter_shapes(module, width: int, height: int, dtype) -> dict[str, tuple[int, ...]]:
    """The shape of each of ``module``'s parameters for boards ``[N, width, height]``, by its
    path (``jax.tree_util.keystr``)."""
    board = jax.ShapeDtypeStruct((1, width, height), dtype)
    return _shapes_by_path(jax.eval_shape(module.init, jax.random.key(0), board))


def _shapes_by_path(tree) -> dict[str, tuple[int, ...]]:
    return {jax.tree_util.keystr(path): np.shape(leaf) for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def _parameter_mismatch(network_shapes: dict[str, tuple[int, ...]], params) -> str:
    """What keeps ``params`` from being the network's: its first parameter missing or of
    another shape, named by its path; "" when each is there. Other entries are ignored, as
    flax's ``apply`` ignores them."""
    given = _shapes_by_path(params)
    for path, shape in network_shapes.items():
        if path not in given:
            return f"no {path} of shape {shape}"
        if given[path] != shape:
            return f"{path} has shape {given[path]} where the network's has {shape}"
    return ""


@dataclasses.dataclass(frozen=True)
class QGreedy(Trained):
    """Click the legal cell with the highest Q value."""

    hidden: tuple[int, ...]
    colors: int
    features: bool = False

    def module(self):
        return networks.QNetwork(self.hidden, self.colors, self.features)

    @game.standard_numpy
    def __call__(self, key: jax.Array, board: jax.Array, params) -> jax.Array:
        board = self._inputs(board, params, 2)
        q = self.module().apply(params, board[None])[0]
        return networks.masked_argmax(q, board.reshape(-1) != 0)


@dataclasses.dataclass(frozen=True)
class QScorer(Trained):
    """Clicks left from a Q-network: ``clicks_from_value`` of its best legal Q-value."""

    hidden: tuple[int, ...]
    colors: int
    features: bool = False
    rewards: Rewards = Rewards()
    gamma: float = 1.0

    def module(self):
        return networks.QNetwork(self.hidden, self.colors, self.features)

    @game.standard_numpy
    def __call__(self, boards: jax.Array, params) -> jax.Array:
        boards = self._inputs(boards, params, 3)
        q = self.module().apply(params, boards)
        value = networks.masked_max(q, boards.reshape(boards.shape[0], -1) != 0)
        clicks = clicks_from_value(value, self.rewards, self.gamma)
        return jnp.where(jnp.any(boards != 0, axis=(1, 2)), clicks, 0.0)


def clicks_from_value(value: jax.Array, rewards: Rewards, gamma: float) -> jax.Array:
    """The ``n`` whose return is ``value``: with rewards ``clear`` for the last click and
    ``click`` for every other, discounted by ``gamma`` per click, a position ``n`` clicks
    from empty is worth ``click * (1 + g + ... + g^(n-2)) + g^(n-1) * clear``, so at ``gamma``
    1 ``n = (value - clear) / click + 1``. Below 1, a value no ``n`` reaches (a network's
    error) is held at the nearest one that does, keeping the order of values. Any shape.

    ``gamma`` is taken as the float32 the training discounted by (a ``gamma`` that rounds to
    1 trained as 1). Where ``g^(n-1)`` is near 1 (few clicks, or ``gamma`` near 1) its
    logarithm comes from its distance to 1 (``log1p``), which float32 keeps where it would
    round ``g^(n-1)`` itself, and the clicks with it, away."""
    gamma = float(np.float32(gamma))
    if gamma == 1.0:
        return (value - rewards.clear) / rewards.click + 1.0
    never = rewards.click / (1.0 - gamma)  # the value of clicking forever
    shortfall = jnp.maximum((rewards.clear - value) / (rewards.clear - never), 0.0)  # 1 - g^(n-1)
    discount = jnp.clip((value - never) / (rewards.clear - never), np.finfo(np.float32).tiny, 1.0)  # g^(n-1)
    log_discount = jnp.where(shortfall < 0.5, jnp.log1p(-jnp.minimum(shortfall, 0.5)), jnp.log(discount))
    return log_discount / np.float32(np.log1p(gamma - 1.0)) + 1.0


@dataclasses.dataclass(frozen=True)
class PolicyGreedy(Trained):
    """Click the legal cell with the highest policy logit (imitation's mlp network,
    ``--architecture mlp``)."""

    network: networks.PolicyValueNetwork

    @game.standard_numpy
    def __call__(self, key: jax.Array, board: jax.Array, params) -> jax.Array:
        board = self._inputs(board, params, 2)
        logits, _ = self.network.apply(params, board[None])
        return networks.masked_argmax(logits[0], board.reshape(-1) != 0)


@dataclasses.dataclass(frozen=True)
class ValueScorer(Trained):
    """The cost-to-go head of imitation's mlp network (0 for an empty board)."""

    network: networks.PolicyValueNetwork

    @game.standard_numpy
    def __call__(self, boards: jax.Array, params) -> jax.Array:
        boards = self._inputs(boards, params, 3)
        _, cost = self.network.apply(params, boards)
        return jnp.where(jnp.any(boards != 0, axis=(1, 2)), cost, 0.0)


@dataclasses.dataclass(frozen=True)
class ClusterArgmax(Trained):
    """Click the cluster the policy head finds most likely (no simulation): the argmax
    play of a ``ValuePolicyNetwork``, at the cluster's first cell."""

    network: networks.ValuePolicyNetwork

    @game.standard_numpy
    def __call__(self, key: jax.Array, board: jax.Array, params) -> jax.Array:
        board = self._inputs(board, params, 2)
        _, logits = self.network.apply(params, board[None])
        prior, first = cluster_prior(board[None], logits)
        # Masked, not a plain argmax: with logits that overflow every cluster's prior is -inf,
        # below the placeholder of the cells that are no cluster's first (empty ones too).
        return networks.masked_argmax(prior[0], first[0])


@dataclasses.dataclass(frozen=True)
class ValueHeadScorer(Trained):
    """A ``ValuePolicyNetwork``'s value head (0 for an empty board)."""

    network: networks.ValuePolicyNetwork

    @game.standard_numpy
    def __call__(self, boards: jax.Array, params) -> jax.Array:
        boards = self._inputs(boards, params, 3)
        value, _ = self.network.apply(params, boards)
        return jnp.where(jnp.any(boards != 0, axis=(1, 2)), value, 0.0)


@dataclasses.dataclass(frozen=True)
class NetworkEvaluator(Trained):
    """A ``ValuePolicyNetwork`` as the evaluator of ``jaxdust.search.mcts``: clicks left
    ``[N]`` and click logits ``[N, W * H]``."""

    network: networks.ValuePolicyNetwork

    @game.standard_numpy
    def __call__(self, boards: jax.Array, params) -> tuple[jax.Array, jax.Array]:
        boards = self._inputs(boards, params, 3)
        return self.network.apply(params, boards)


@dataclasses.dataclass(frozen=True)
class PolicyValueEvaluator(Trained):
    """Imitation's mlp network (``PolicyValueNetwork``) as an evaluator of
    ``jaxdust.search.mcts``: its cost-to-go and its click logits.

    Its logits are per cell, each trained (a sigmoid) to say that the cell's cluster is the
    click; the search pools a cluster's cells by summing their probabilities, which would
    weigh a cluster by its size. Each cell's logit is lowered by the log of its cluster's
    size, so a cluster's prior is the mean of its cells' (as one cell's, where they agree)."""

    network: networks.PolicyValueNetwork

    @game.standard_numpy
    def __call__(self, boards: jax.Array, params) -> tuple[jax.Array, jax.Array]:
        boards = self._inputs(boards, params, 3)
        logits, cost = self.network.apply(params, boards)
        sizes = jax.vmap(game.cluster_sizes)(boards).reshape(logits.shape)
        return cost, logits - jnp.log(jnp.maximum(sizes, 1)).astype(logits.dtype)
