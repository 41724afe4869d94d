"""Approximate value iteration on the simulator (DeepCubeA-style), the whole loop in ``jit``.

The rules are known, so no click needs to be sampled to learn its value: every position
is backed up over *all* its distinct clicks at once,

    y(s) = min over clusters c of 1 + V_target(child(s, c)),   V_target(empty) = 0,

and the per-cell head learns ``Q(s, a) = 1 + V_target(child(s, a))`` for every occupied cell
in the same pass (cells of one cluster share their child), so argmax play needs no
simulation. ``num_envs`` games advance in lockstep; each iteration expands the children of
every current position (compacted over distinct clusters: static shapes, no per-cell
waste), takes one gradient step on the backed-up targets, then each game clicks
epsilon-greedily on the target values it just computed (a share of games plays uniformly
at random, so positions of every depth and quality are visited) and restarts on a fresh
random board once cleared. The target network is copied every ``target_period`` updates.

    init, run_chunk = make_avi(config)
    runner = init(key)
    runner, metrics = run_chunk(runner)      # config.chunk_updates iterations
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax.training.train_state import TrainState
from jax.sharding import NamedSharding, PartitionSpec as P

from jaxdust.core import game
from jaxdust.core.game import GameConfig
from jaxdust.learn import networks


@dataclasses.dataclass(frozen=True)
class AVIConfig:
    game: GameConfig = GameConfig()
    hidden: tuple[int, ...] = (256, 256)
    prior: bool = True  # both heads start at the hand-made estimate (networks.ValueQNetwork)
    num_envs: int = 512
    child_share: float = 0.5  # child slots per iteration, as a share of num_envs * cells
    total_updates: int = 4000
    chunk_updates: int = 100  # iterations per jitted call (checkpoints and evaluation between)
    learning_rate: float = 1e-3
    final_lr_fraction: float = 0.05
    target_period: int = 25  # updates between target-network copies
    epsilon_max: float = 0.3  # game i of N explores with epsilon = epsilon_max * i / N
    random_share: float = 0.1  # share of games that click uniformly at random
    huber_delta: float = 1.0
    q_weight: float = 1.0  # weight of the per-cell loss beside the value loss

    def __post_init__(self):
        if not 0.0 < self.child_share <= 1.0:
            raise ValueError(f"child_share must be in (0, 1], got {self.child_share}")
        if self.total_updates < 1 or self.chunk_updates < 1 or self.target_period < 1:
            raise ValueError("total_updates, chunk_updates and target_period must be >= 1")

    @property
    def network(self) -> networks.ValueQNetwork:
        return networks.ValueQNetwork(tuple(self.hidden), self.game.colors, self.prior)

    @property
    def child_slots(self) -> int:
        return max(1, int(self.child_share * self.num_envs * self.game.num_cells))


class Runner(NamedTuple):
    train: TrainState
    target_params: Any
    boards: jax.Array  # int8 [N, W, H], the games' current positions
    clicks: jax.Array  # int32 [N], clicks made in each current game
    key: jax.Array
    update: jax.Array  # int32 [], updates made


class ChunkMetrics(NamedTuple):
    loss: jax.Array  # float32 [], mean over the chunk's updates
    value_error: jax.Array  # float32 [], mean |V(s) - y(s)|, clicks
    target: jax.Array  # float32 [], mean backed-up value of the positions trained on
    episodes: jax.Array  # int32 [], games finished in the chunk
    episode_clicks: jax.Array  # float32 [], mean clicks of those games
    dropped: jax.Array  # int32 [], children beyond child_slots (their positions get less exact targets)


def expand(boards: jax.Array, slots: int, value_fn) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Every distinct child of every board, valued by ``value_fn``.

    Args:
      boards: int8 ``[N, W, H]``.
      slots: children evaluated at most (static); the first in board and cell order.
      value_fn: int8 ``[M, W, H]`` -> float32 ``[M]``, clicks left.

    Returns:
      labels int32 ``[N, W * H]`` (``game.cluster_labels``), child values float32
      ``[N, W * H]`` at each cluster's representative cell (0 for a cleared board, inf at
      other cells and for children beyond ``slots``), and how many were beyond.
    """
    count_boards, width, height = boards.shape
    cells = width * height
    labels = jax.vmap(game.cluster_labels)(boards).reshape(count_boards, cells)
    is_action = (labels == jnp.arange(cells, dtype=jnp.int32)).reshape(-1)
    actions = jnp.sum(is_action)
    flat_index = jnp.nonzero(is_action, size=slots, fill_value=0)[0]
    valid = jnp.arange(slots) < actions
    parent, action = flat_index // cells, flat_index % cells

    def play(board_index, cell):
        removed = (labels[board_index] == cell).reshape(width, height)
        return game.remove_and_contract(boards[board_index], removed)[0]

    children = jax.vmap(play)(parent, action)
    values = jnp.where(jax.vmap(game.is_done)(children), 0.0, value_fn(children))
    values = jnp.where(valid, values, jnp.inf)
    per_cell = jnp.full(count_boards * cells, jnp.inf).at[jnp.where(valid, flat_index, count_boards * cells)].set(
        values, mode="drop")
    return labels, per_cell.reshape(count_boards, cells), jnp.maximum(actions - slots, 0)


def runner_sharding(runner: Runner, mesh: jax.sharding.Mesh):
    """Games split over the mesh's ``data`` axis; parameters, optimiser state replicated."""
    def spec(path, leaf):
        name = getattr(path[0], "name", "")
        if name in ("boards", "clicks"):
            return NamedSharding(mesh, P("data"))
        return NamedSharding(mesh, P())

    return jax.tree_util.tree_map_with_path(spec, runner)


def make_avi(config: AVIConfig, mesh: jax.sharding.Mesh | None = None):
    """``init(key) -> Runner`` and ``run_chunk(runner) -> (Runner, ChunkMetrics)``, jitted."""
    network = config.network
    size = config.game
    count, cells, slots = config.num_envs, size.num_cells, config.child_slots
    schedule = optax.cosine_decay_schedule(config.learning_rate, config.total_updates, alpha=config.final_lr_fraction)
    optimizer = optax.adam(schedule)
    index = jnp.arange(count)
    epsilon = jnp.where(index < config.random_share * count, 1.0, config.epsilon_max * index / count)

    def fresh_boards(key):
        return jax.vmap(lambda k: game.random_board(k, size))(jax.random.split(key, count))

    def init(key: jax.Array) -> Runner:
        network_key, board_key, key = jax.random.split(key, 3)
        params = network.init(network_key, jnp.zeros((1, size.width, size.height), game.BOARD_DTYPE))
        train = TrainState.create(apply_fn=network.apply, params=params, tx=optimizer)
        return Runner(train, params, fresh_boards(board_key), jnp.zeros(count, jnp.int32), key, jnp.int32(0))

    def iteration(runner: Runner, _):
        key, explore_key, random_key, reset_key = jax.random.split(runner.key, 4)
        boards = runner.boards
        labels, child_values, dropped = expand(
            boards, slots, lambda b: network.apply(runner.target_params, b)[0])
        target = 1.0 + jnp.min(child_values, axis=1)
        cell_values = jnp.take_along_axis(child_values, jnp.maximum(labels, 0), axis=1)
        trained_cells = (labels >= 0) & jnp.isfinite(cell_values)
        cell_targets = jnp.where(trained_cells, 1.0 + cell_values, 0.0)

        def loss_fn(params):
            value, per_cell = network.apply(params, boards)
            value_loss = jnp.mean(optax.huber_loss(value, target, delta=config.huber_delta))
            cell_loss = jnp.where(trained_cells, optax.huber_loss(per_cell, cell_targets, delta=config.huber_delta), 0.0)
            cell_loss = jnp.sum(cell_loss) / jnp.maximum(jnp.sum(trained_cells), 1)
            return value_loss + config.q_weight * cell_loss, jnp.mean(jnp.abs(value - target))

        (loss, value_error), grads = jax.value_and_grad(loss_fn, has_aux=True)(runner.train.params)
        train = runner.train.apply_gradients(grads=grads)
        update = runner.update + 1
        copy = update % config.target_period == 0
        target_params = jax.tree.map(lambda old, new: jnp.where(copy, new, old), runner.target_params, train.params)

        is_action = labels == jnp.arange(cells)
        random_actions = jax.vmap(game.random_legal_action)(jax.random.split(random_key, count), is_action)
        explore = jax.random.uniform(explore_key, (count,)) < epsilon
        actions = jnp.where(explore, random_actions, jnp.argmin(child_values, axis=1)).astype(jnp.int32)
        removed = (labels == actions[:, None]).reshape(boards.shape)
        after = jax.vmap(game.remove_and_contract)(boards, removed)[0]
        clicks = runner.clicks + 1
        done = jax.vmap(game.is_done)(after)
        after = jnp.where(done[:, None, None], fresh_boards(reset_key), after)
        runner = Runner(train, target_params, after, jnp.where(done, 0, clicks), key, update)
        finished = jnp.sum(done)
        return runner, (loss, value_error, jnp.mean(target), finished, jnp.sum(jnp.where(done, clicks, 0)), dropped)

    def run_chunk(runner: Runner) -> tuple[Runner, ChunkMetrics]:
        runner, (loss, value_error, target, finished, clicks, dropped) = jax.lax.scan(
            iteration, runner, None, length=config.chunk_updates)
        episodes = jnp.sum(finished)
        return runner, ChunkMetrics(jnp.mean(loss), jnp.mean(value_error), jnp.mean(target), episodes,
                                    jnp.sum(clicks) / jnp.maximum(episodes, 1), jnp.sum(dropped))

    if mesh is None:
        return jax.jit(init), jax.jit(run_chunk, donate_argnums=0)
    shardings = runner_sharding(jax.eval_shape(init, jax.random.key(0)), mesh)
    return (jax.jit(init, out_shardings=shardings),
            jax.jit(run_chunk, in_shardings=(shardings,), out_shardings=(shardings, None), donate_argnums=0))
