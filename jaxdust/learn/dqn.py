"""Deep Q-learning with the whole loop inside ``jit`` (PureJaxRL style).

Thousands of games run in lockstep through ``DustEnv``; each iteration every game clicks
once (epsilon-greedy over legal cells), the transitions enter a replay ring buffer of int8
boards, and the Q-network takes ``updates_per_step`` gradient steps on sampled batches
against a target network (Double DQN by default). Illegal clicks (empty cells) are
masked in the greedy choice, in the bootstrap maximum and in exploration.

With ``backup="full"`` the sampled boards are expanded by the simulator and *every*
occupied cell learns its one-step target ``r + gamma * max Q_target(child)`` at once
(``jaxdust.learn.avi``'s backup in reward units; ``n_step`` and ``double_dqn`` do not apply),
instead of only the clicked cell's sampled n-step target.

Rewards default to the original post's (+10 clear, -1 click, -10 empty click). With -1
per click and ``gamma = 1`` the return from a position with ``n`` clicks left is
``10 - (n - 1)``, so ``11 - max_a Q`` estimates the clicks left: exactly the heuristic a
search needs (``jaxdust.learn.agents.QScorer``).

``DQNConfig.original()`` approximates the post's learner: 5 x 1500 network, 1000 games,
no replay beyond the current batch, no target network, empty clicks allowed, a target
that mixes the old value with ``r + 0.8 * mean_a Q(s', a)`` and epsilon adapted to about
one random click per game. It fits each step's games otherwise: one Adam step on 1000
transitions drawn with replacement from the step's 1000 (the post's Keras ``fit`` made one
epoch, ~32 steps of 32, each transition once), a loss on the clicked cell alone (the post's
held the other cells at their own predictions) and gradients clipped at a norm of 10
(``max_grad_norm``).

    init, run_chunk = make_dqn(config)
    runner = init(key)
    runner, metrics = run_chunk(runner)      # config.chunk_iterations iterations
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from flax.training.train_state import TrainState
from jax.sharding import NamedSharding, PartitionSpec as P

from jaxdust.core import env as dust_env
from jaxdust.core import configs, game
from jaxdust.learn import expansion, networks
from jaxdust.learn.expansion import expand


@dataclasses.dataclass(frozen=True)
class DQNConfig:
    game: game.GameConfig = game.GameConfig()
    rewards: dust_env.Rewards = dust_env.Rewards()
    hidden: tuple[int, ...] = (512, 512)  # widths of the Q-network's dense layers
    features: bool = True  # exact cluster facts as extra inputs (networks module docstring)
    num_envs: int = 256  # games played in lockstep
    total_steps: int = 256 * 36_000  # transitions, summed over all games (4.5 min of training on 2 CPU cores, docs/results.md)
    chunk_iterations: int = 500  # iterations per jitted call (checkpoints and evaluation between)
    buffer_size: int = 131_072  # transitions kept in the replay buffer
    batch_size: int = 256  # transitions per gradient step
    updates_per_step: int = 1  # gradient steps per click of every game
    learning_starts: int = 8_192  # transitions in the buffer before the first update
    learning_rate: float = 5e-4  # Adam's rate at the start, cosine-decayed over the run
    final_lr_fraction: float = 0.05  # the rate at the end, as a share of learning_rate
    max_grad_norm: float = 10.0  # gradients clipped to this global norm
    gamma: float = 1.0  # discount per click
    n_step: int = 5  # bootstrap after n clicks (cut at the end of a game)
    target_mix: float = 1.0  # 1: standard target; the original mixed in the old Q value
    double_dqn: bool = True  # the online network picks the bootstrap's cell, the target values it
    target_period: int = 250  # updates between target-network copies; 0: no target network
    bootstrap: str = "max"  # "max" (Q-learning) or "mean" (the original post)
    backup: str = "sampled"  # "sampled": the clicked cell's n-step target; "full": every cell's one-step target
    child_share: float = 0.5  # full backup: child slots per update, as a share of batch_size * cells
    mask_actions: bool = True  # only occupied cells are chosen and bootstrapped from
    epsilon_start: float = 1.0  # share of random clicks at the start, decayed linearly
    epsilon_end: float = 0.01  # share of random clicks after the decay
    epsilon_fraction: float = 0.2  # of the run spent decaying epsilon
    adaptive_epsilon: bool = False  # the original: aim at random_moves_per_game
    random_moves_per_game: float = 1.0  # adaptive_epsilon's aim
    max_clicks: int = 100  # truncation of one game
    # Settings another turns off (configs.require_used_settings).
    UNUSED_WHERE: ClassVar[tuple] = (
        (("child_share",), lambda config: config.backup == "full",
         "sizes the 'full' backup only, and the backup is 'sampled'"),
        (("random_moves_per_game",), lambda config: config.adaptive_epsilon,
         "is adaptive_epsilon's aim, and adaptive_epsilon is off"),
        (("epsilon_end", "epsilon_fraction"), lambda config: not config.adaptive_epsilon,
         "shapes the scheduled epsilon, which adaptive_epsilon replaces"),
        (("rewards.empty_click",), lambda config: not config.mask_actions,
         "is paid for an empty click, and mask_actions allows none"),
    )

    def __post_init__(self):
        configs.require_rules(self.game, game.CLICK_RULES, "dqn")
        configs.require(self, positive=("num_envs", "total_steps", "chunk_iterations", "buffer_size", "batch_size",
                                        "updates_per_step", "learning_rate", "max_clicks", "n_step", "max_grad_norm",
                                        "child_share"),
                        non_negative=("learning_starts", "target_period", "random_moves_per_game"),
                        unit_interval=("final_lr_fraction", "gamma", "target_mix", "epsilon_start", "epsilon_end",
                                       "epsilon_fraction"),
                        layers=("hidden",), wide=("total_steps",))
        if self.bootstrap not in ("max", "mean"):
            raise configs.FieldError("bootstrap", f"must be 'max' or 'mean', got {self.bootstrap!r}")
        if self.batch_size > self.buffer_size:
            raise configs.FieldError("batch_size", f"({self.batch_size}) cannot exceed buffer_size ({self.buffer_size})")
        if self.num_envs > self.buffer_size:  # one iteration's transitions would overwrite each other
            raise configs.FieldError("num_envs", f"({self.num_envs}) cannot exceed buffer_size ({self.buffer_size})")
        if self.learning_starts > self.buffer_size:  # the buffer never holds that many: no update would run
            raise configs.FieldError("learning_starts", f"({self.learning_starts}) cannot exceed buffer_size "
                                                        f"({self.buffer_size})")
        if self.first_update >= self.iterations:  # a run of losses 0.0 that reads as trained
            raise configs.FieldError("total_steps", f"({self.total_steps}) ends before the first update: "
                                                    f"learning_starts ({self.learning_starts}) transitions come after "
                                                    f"{self.first_update + 1} iterations of {self.num_envs} games, the "
                                                    f"run has {self.iterations}")
        if self.rewards.click >= 0:  # the values' scale in clicks divides by it (agents.QScorer)
            raise configs.FieldError("rewards_click", f"must be negative (a cost per click), got {self.rewards.click}")
        # Values are float32: one click must stand out from the largest value by a few of its
        # 24 bits, or the scorer reads ties and rounding (a click of -1e-45 played by ties).
        # The largest is the clear, the clicks that remove cells (one per cell at most), or,
        # unmasked, the empty clicks up to the cap; discounted, at most 1 / (1 - gamma) clicks.
        horizon = 1.0 / (1.0 - self.gamma) if 0 < self.gamma < 1 else math.inf
        sizes = {"rewards_clear": abs(self.rewards.clear),
                 "rewards_click over a board's cells": abs(self.rewards.click) * min(self.game.num_cells, horizon)}
        if not self.mask_actions:
            empty_clicks = min(self.max_clicks, horizon)
            sizes["rewards_empty_click over max_clicks"] = abs(self.rewards.empty_click) * empty_clicks
        largest, scale = max(sizes.items(), key=lambda item: item[1])
        if abs(self.rewards.click) < max(scale * 2.0**-20, float(np.finfo(np.float32).tiny)):
            raise configs.FieldError("rewards_click", f"({self.rewards.click:g}) is too small beside {largest} "
                                                      f"({scale:g}): float32 values there resolve less than a "
                                                      f"sixteenth of a click; scale them together")
        if self.target_mix == 0:  # the target would be the network's own estimate
            raise configs.FieldError("target_mix", "must be above 0 (at 0 the target is the network's own "
                                                   "estimate, and every update is zero)")
        # The values are read back as clicks left (agents.clicks_from_value): at gamma 0 every
        # board is worth its next reward, and where clearing is worth no more than clicking
        # forever, shorter games are not worth more; either way the scorer cannot rank boards.
        if self.gamma == 0:
            raise configs.FieldError("gamma", "must be above 0 (at 0 the values say nothing of the clicks left)")
        if self.gamma < 1 and self.rewards.clear <= self.rewards.click / (1 - self.gamma):
            raise configs.FieldError("rewards_clear", f"({self.rewards.clear}) must be above the click reward / "
                                                      f"(1 - gamma) ({self.rewards.click / (1 - self.gamma):g}, the "
                                                      f"value of clicking forever), or shorter games are not worth more")
        if self.backup not in ("sampled", "full"):
            raise configs.FieldError("backup", f"must be 'sampled' or 'full', got {self.backup!r}")
        if self.backup == "full" and (not self.mask_actions or self.bootstrap != "max" or self.target_mix != 1.0):
            raise configs.FieldError("backup", "'full' needs mask_actions, bootstrap 'max' and target_mix 1 "
                                               "(it backs up occupied cells, one step, without the original's mixing)")
        if not 0.0 < self.child_share <= 1.0:
            raise configs.FieldError("child_share", f"must be in (0, 1], got {self.child_share}")
        configs.require_used_settings(self)
        if self.backup == "full":
            expansion.require_indexable(self.child_slots, self.game, "batch_size and child_share")
            expansion.require_room(self.child_slots, self.batch_size, self.child_share)

    @classmethod
    def original(cls, **overrides) -> "DQNConfig":
        """The Deep Q-learning post's setup, as near as this learner comes (the module
        docstring says where it differs)."""
        settings = dict(
            hidden=networks.PRESETS["original"], features=False, num_envs=1000, buffer_size=1000,
            batch_size=1000, learning_starts=1000, learning_rate=1e-3, final_lr_fraction=1.0,
            gamma=0.8, n_step=1, target_mix=0.9, double_dqn=False, target_period=0, bootstrap="mean",
            mask_actions=False, adaptive_epsilon=True, epsilon_start=0.05,
        )
        return cls(**{**settings, **overrides})

    @property
    def iterations(self) -> int:
        return max(1, self.total_steps // self.num_envs)

    @property
    def child_slots(self) -> int:
        """Children the full backup values per update."""
        return max(1, int(self.child_share * self.batch_size * self.game.num_cells))

    @property
    def first_update(self) -> int:
        """The iteration of the first update: the buffer takes ``num_envs`` transitions an
        iteration from iteration ``n_step - 1`` on, and updates once it holds
        ``transitions_before_updates``."""
        return max(0, -(-self.transitions_before_updates // self.num_envs) + self.n_step - 2)

    @property
    def transitions_before_updates(self) -> int:
        """``learning_starts``, and at least one: an empty buffer holds only zeros."""
        return max(self.learning_starts, 1)

    @property
    def env(self) -> dust_env.DustEnv:
        return dust_env.DustEnv(self.game, self.rewards, max_clicks=self.max_clicks, auto_reset=True)

    @property
    def network(self) -> networks.QNetwork:
        return networks.QNetwork(hidden=tuple(self.hidden), colors=self.game.colors, features=self.features)


# ---------------------------------------------------------------------------------------
# Replay: a ring buffer of int8 boards, entirely on the device
# ---------------------------------------------------------------------------------------


@struct.dataclass
class Replay:
    boards: jax.Array  # int8 [C, W, H]
    actions: jax.Array  # int32 [C]
    rewards: jax.Array  # float32 [C], n-step discounted reward
    discounts: jax.Array  # float32 [C], bootstrap weight (gamma**k, 0 after a clear)
    next_boards: jax.Array  # int8 [C, W, H]
    position: jax.Array  # int32 [], next slot to write
    size: jax.Array  # int32 [], filled slots


def replay_init(capacity: int, width: int, height: int) -> Replay:
    boards = jnp.zeros((capacity, width, height), game.BOARD_DTYPE)
    return Replay(boards, jnp.zeros(capacity, jnp.int32), jnp.zeros(capacity, jnp.float32),
                  jnp.zeros(capacity, jnp.float32), boards, jnp.int32(0), jnp.int32(0))


def replay_add(replay: Replay, batch: "Batch", valid: jax.typing.ArrayLike = True) -> Replay:
    """Write a batch of transitions at the ring position (overwriting the oldest). With
    ``valid`` False the slots are written but not counted, and are overwritten next."""
    capacity = replay.actions.shape[0]
    count = batch.actions.shape[0]
    slots = (replay.position + jnp.arange(count, dtype=jnp.int32)) % capacity
    advance = jnp.where(valid, count, 0)
    return Replay(
        replay.boards.at[slots].set(batch.boards),
        replay.actions.at[slots].set(batch.actions),
        replay.rewards.at[slots].set(batch.rewards),
        replay.discounts.at[slots].set(batch.discounts),
        replay.next_boards.at[slots].set(batch.next_boards),
        (replay.position + advance) % capacity,
        jnp.minimum(replay.size + advance, capacity),
    )


class Batch(NamedTuple):
    boards: jax.Array  # int8 [B, W, H]
    actions: jax.Array  # int32 [B]
    rewards: jax.Array  # float32 [B], discounted sum over the n clicks
    discounts: jax.Array  # float32 [B], gamma**k times 0 if the game was cleared
    next_boards: jax.Array  # int8 [B, W, H], the board to bootstrap from


def replay_sample(replay: Replay, key: jax.Array, batch_size: int) -> Batch:
    slots = jax.random.randint(key, (batch_size,), 0, jnp.maximum(replay.size, 1), jnp.int32)
    return Batch(replay.boards[slots], replay.actions[slots], replay.rewards[slots],
                 replay.discounts[slots], replay.next_boards[slots])


# ---------------------------------------------------------------------------------------
# The learner
# ---------------------------------------------------------------------------------------


class Window(NamedTuple):
    """The last ``n_step`` one-click transitions of every game, oldest first."""

    step: Batch  # fields [n, E, ...]; discounts here are the env's (0 after a clear)
    last: jax.Array  # bool [n, E], the click ended its game (clear or truncation)


def window_push(window: Window, step: Batch, last: jax.Array) -> Window:
    def roll(old, new):
        return jnp.concatenate([old[1:], new[None]])

    return Window(jax.tree.map(roll, window.step, step), roll(window.last, last))


def n_step_transition(window: Window, gamma: float) -> Batch:
    """Fold the window into one transition from its oldest position: rewards summed with
    ``gamma`` until the game ended, bootstrapped from the board reached there."""
    first = jax.tree.map(lambda a: a[0], window.step)
    total = jnp.zeros_like(first.rewards)
    weight = jnp.ones_like(first.rewards)  # gamma**k, zeroed after a clear
    running = jnp.ones_like(window.last[0])
    next_boards = first.next_boards
    for k in range(window.last.shape[0]):
        total = total + jnp.where(running, weight * window.step.rewards[k], 0.0)
        weight = jnp.where(running, weight * gamma * window.step.discounts[k], weight)
        next_boards = jnp.where(running[:, None, None], window.step.next_boards[k], next_boards)
        running = running & ~window.last[k]
    return Batch(first.boards, first.actions, total, weight, next_boards)


@struct.dataclass
class Runner:
    train: TrainState  # Q-network parameters, optimiser state, update count (.step)
    target_params: Any  # the target network's parameters
    env_state: dust_env.State  # [num_envs] games in flight
    window: Window  # the last n_step clicks of every game
    replay: Replay
    key: jax.Array
    iteration: jax.Array  # int32 [], environment steps taken by every game
    epsilon: jax.Array  # float32 [], current exploration rate (adaptive mode)


class ChunkMetrics(NamedTuple):
    loss: jax.Array  # float32 [], mean over the chunk's updates
    q_mean: jax.Array  # float32 [], mean Q of the chosen clicks
    episodes: jax.Array  # int32 [], games finished in the chunk
    episode_clicks: jax.Array  # float32 [], mean clicks of those games
    cleared: jax.Array  # float32 [], share of them that emptied the board
    epsilon: jax.Array  # float32 [], at the chunk's end


def legal_mask(boards: jax.Array, mask_actions: bool) -> jax.Array:
    """bool ``[..., W * H]``: occupied cells (under the click rules every one removes its
    cluster), or every cell when masking is off."""
    occupied = boards.reshape(*boards.shape[:-2], -1) != 0
    return occupied if mask_actions else jnp.ones_like(occupied)


def td_targets(config: DQNConfig, q_online_next, q_target_next, q_taken, batch: Batch) -> jax.Array:
    """Bootstrapped targets for the taken actions: float32 ``[B]``.

    ``target_mix`` < 1 blends in the current estimate, as the original post did.
    """
    mask = legal_mask(batch.next_boards, config.mask_actions)
    if config.bootstrap == "mean":
        count = jnp.maximum(jnp.sum(mask, axis=-1), 1)
        next_value = jnp.sum(jnp.where(mask, q_target_next, 0.0), axis=-1) / count
    elif config.double_dqn:
        best = networks.masked_argmax(q_online_next, mask)
        next_value = jnp.take_along_axis(q_target_next, best[:, None], axis=-1)[:, 0]
        next_value = jnp.where(jnp.any(mask, axis=-1), next_value, 0.0)
    else:
        next_value = networks.masked_max(q_target_next, mask)
    target = batch.rewards + batch.discounts * next_value
    return config.target_mix * target + (1.0 - config.target_mix) * q_taken


def full_backup_targets(config: DQNConfig, q_target, boards: jax.Array, slots: int) -> tuple[jax.Array, jax.Array]:
    """Every occupied cell's one-step target at once, its child made by the simulator (the
    backup of ``jaxdust.learn.avi`` in reward units): ``r(a) + gamma * max_b
    q_target(child(s, a))[b]``, 0 for the bootstrap of a cleared board. (Double DQN's
    choice by the online network made no difference on 4x3 boards; what destabilises this
    backup is copying the target too often at a high learning rate: 5 updates at 3e-3
    oscillates by +-7 clicks where 50 at 1e-3 converges.)

    Args:
      q_target: int8 ``[M, W, H]`` -> float32 ``[M, W * H]``, the target network.
      boards: int8 ``[B, W, H]``.
      slots: children expanded at most (static); cells whose child falls beyond get no target.

    Returns float32 targets ``[B, W * H]`` and bool ``[B, W * H]``, which cells have one.
    """
    def cost(children):  # expand() minimises, so it gets the negated bootstrap value
        return -networks.masked_max(q_target(children), legal_mask(children, True))

    expansion = expand(boards, slots, cost, config.game.rules)
    first_cell = jnp.maximum(expansion.labels, 0)  # cells of one cluster share its child
    at_cell = jnp.take_along_axis(expansion.values, first_cell, axis=1)
    child = jnp.minimum(jnp.take_along_axis(expansion.rows, first_cell, axis=1), slots - 1)
    cleared = jax.vmap(game.is_done)(expansion.children)[child]
    reward = jnp.where(cleared, config.rewards.clear, config.rewards.click)
    trained = (expansion.labels >= 0) & jnp.isfinite(at_cell)
    return jax.lax.stop_gradient(jnp.where(trained, reward - config.gamma * at_cell, 0.0)), trained


def runner_sharding(runner: Runner, mesh: jax.sharding.Mesh):
    """Games, their click windows and the replay buffer split over the mesh's ``data``
    axis; parameters, optimiser state and counters replicated."""
    def spec(path, leaf):
        names = [getattr(p, "name", getattr(p, "key", "")) for p in path]
        if not hasattr(leaf, "ndim") or leaf.ndim == 0:
            return NamedSharding(mesh, P())
        if names[0] in ("env_state",):
            return NamedSharding(mesh, P("data"))
        if names[0] == "window":
            return NamedSharding(mesh, P(None, "data"))
        if names[0] == "replay" and names[-1] not in ("position", "size"):
            return NamedSharding(mesh, P("data"))
        return NamedSharding(mesh, P())

    return jax.tree_util.tree_map_with_path(spec, runner)


@game.standard_numpy
def make_dqn(config: DQNConfig, mesh: jax.sharding.Mesh | None = None):
    """``init(key) -> Runner`` and ``run_chunk(runner, length=config.chunk_iterations) ->
    (Runner, ChunkMetrics)``, both jitted (``length`` is static: a run's last chunk may be shorter;
    with a ``mesh`` pass it positionally, as jit with shardings takes no keywords).

    With a ``mesh`` (axis ``data``), games, replay and each minibatch are split over its
    devices and the parameters replicated; XLA inserts the gradient all-reduce (data
    parallelism). ``num_envs``, ``buffer_size`` and ``batch_size`` must divide over them.
    """
    env = config.env
    network = config.network
    # Over the updates made, which begin at first_update: optax counts only those, and a
    # cosine over every iteration ended the run above final_lr_fraction.
    schedule = optax.cosine_decay_schedule(
        config.learning_rate, max(1, (config.iterations - config.first_update) * config.updates_per_step),
        alpha=config.final_lr_fraction,
    )
    optimizer = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(schedule))

    def init(key: jax.Array) -> Runner:
        key, network_key, env_key = jax.random.split(key, 3)
        dummy = jnp.zeros((1, config.game.width, config.game.height), game.BOARD_DTYPE)
        params = network.init(network_key, dummy)
        train = TrainState.create(apply_fn=network.apply, params=params, tx=optimizer)
        env_state, _ = jax.vmap(env.reset)(jax.random.split(env_key, config.num_envs))
        boards = jnp.zeros((config.n_step, config.num_envs, config.game.width, config.game.height), game.BOARD_DTYPE)
        zeros = jnp.zeros((config.n_step, config.num_envs), jnp.float32)
        window = Window(
            Batch(boards, zeros.astype(jnp.int32), zeros, zeros, boards),
            jnp.zeros((config.n_step, config.num_envs), bool),
        )
        return Runner(
            train=train, target_params=params, env_state=env_state, window=window,
            replay=replay_init(config.buffer_size, config.game.width, config.game.height),
            key=key, iteration=jnp.int32(0), epsilon=jnp.float32(config.epsilon_start),
        )

    def scheduled_epsilon(iteration: jax.Array) -> jax.Array:
        span = max(1.0, config.epsilon_fraction * config.iterations)
        fraction = jnp.clip(iteration.astype(jnp.float32) / span, 0.0, 1.0)
        return config.epsilon_start + fraction * (config.epsilon_end - config.epsilon_start)

    child_slots = config.child_slots

    def full_backup_loss(params, target_params, batch: Batch):
        target, trained = full_backup_targets(config, lambda b: network.apply(target_params, b), batch.boards,
                                              child_slots)
        q = network.apply(params, batch.boards)
        return jnp.sum(jnp.where(trained, optax.huber_loss(q, target), 0.0)) / jnp.maximum(jnp.sum(trained), 1)

    def loss_fn(params, target_params, batch: Batch):
        if config.backup == "full":
            return full_backup_loss(params, target_params, batch)
        q = network.apply(params, batch.boards)
        q_taken = jnp.take_along_axis(q, batch.actions[:, None], axis=-1)[:, 0]
        q_online_next = network.apply(params, batch.next_boards) if config.double_dqn else None
        q_target_next = network.apply(target_params, batch.next_boards)
        target = jax.lax.stop_gradient(td_targets(config, q_online_next, q_target_next, q_taken, batch))
        return jnp.mean(optax.huber_loss(q_taken, target))

    def learn(train: TrainState, target_params, replay: Replay, key: jax.Array):
        def one_update(carry, update_key):
            train, target_params = carry
            batch = replay_sample(replay, update_key, config.batch_size)
            if mesh is not None:  # each device computes the loss of its share of the minibatch
                batch = jax.lax.with_sharding_constraint(batch, NamedSharding(mesh, P("data")))
            target = train.params if config.target_period == 0 else target_params
            loss, grads = jax.value_and_grad(loss_fn)(train.params, target, batch)
            train = train.apply_gradients(grads=grads)
            if config.target_period > 0:
                copy = train.step % config.target_period == 0
                target_params = jax.lax.cond(copy, lambda: train.params, lambda: target_params)
            return (train, target_params), loss

        (train, target_params), losses = jax.lax.scan(
            one_update, (train, target_params), jax.random.split(key, config.updates_per_step)
        )
        return train, target_params, jnp.mean(losses)

    def iteration(runner: Runner, _):
        key, act_key, explore_key, learn_key = jax.random.split(runner.key, 4)
        boards = runner.env_state.board
        q = network.apply(runner.train.params, boards)
        mask = legal_mask(boards, config.mask_actions)
        greedy = networks.masked_argmax(q, mask)
        random = jax.vmap(game.random_legal_action)(jax.random.split(act_key, config.num_envs), mask)
        epsilon = runner.epsilon if config.adaptive_epsilon else scheduled_epsilon(runner.iteration)
        explore = jax.random.uniform(explore_key, (config.num_envs,), jnp.float32) < epsilon
        actions = jnp.where(explore, random, greedy)
        env_state, timestep = jax.vmap(env.step)(runner.env_state, actions)
        one_click = Batch(boards, actions, timestep.reward, timestep.discount, timestep.extras["next_board"])
        window = window_push(runner.window, one_click, timestep.last())
        replay = replay_add(runner.replay, n_step_transition(window, config.gamma),
                            valid=runner.iteration >= config.n_step - 1)

        ready = replay.size >= config.transitions_before_updates
        train, target_params, loss = jax.lax.cond(
            ready,
            lambda: learn(runner.train, runner.target_params, replay, learn_key),
            lambda: (runner.train, runner.target_params, jnp.float32(0.0)),
        )
        finished = timestep.last()
        clicks = timestep.extras["clicks"]
        if config.adaptive_epsilon:
            # Aim at random_moves_per_game: scale epsilon by the target over the random
            # clicks a finished game saw (about epsilon * its length), smoothed.
            games = jnp.sum(finished, dtype=jnp.int32)
            mean_length = jnp.sum(jnp.where(finished, clicks, 0), dtype=jnp.int32) / jnp.maximum(games, 1)
            wanted = jnp.minimum(config.random_moves_per_game / jnp.maximum(mean_length, 1.0), 1.0)
            epsilon = jnp.where(games > 0, 0.9 * runner.epsilon + 0.1 * wanted, runner.epsilon)
        step = (
            loss,
            jnp.mean(jnp.take_along_axis(q, actions[:, None], axis=-1)),
            jnp.sum(finished, dtype=jnp.int32),
            jnp.sum(jnp.where(finished, clicks, 0), dtype=jnp.int32),
            jnp.sum(finished & (timestep.discount == 0), dtype=jnp.int32),
            ready,
        )
        runner = Runner(train, target_params, env_state, window, replay, key, runner.iteration + 1,
                        jnp.float32(epsilon))
        return runner, step

    def run_chunk(runner: Runner, length: int = config.chunk_iterations) -> tuple[Runner, ChunkMetrics]:
        runner, (loss, q_mean, episodes, clicks, cleared, ready) = jax.lax.scan(
            iteration, runner, None, length=length
        )
        total = jnp.maximum(jnp.sum(episodes), 1)
        updates = jnp.maximum(jnp.sum(ready), 1)
        epsilon = runner.epsilon if config.adaptive_epsilon else scheduled_epsilon(runner.iteration)
        return runner, ChunkMetrics(
            loss=jnp.sum(loss) / updates, q_mean=jnp.mean(q_mean), episodes=jnp.sum(episodes),
            episode_clicks=jnp.sum(clicks) / total, cleared=jnp.sum(cleared) / total,
            epsilon=jnp.float32(epsilon),
        )

    init, run_chunk = game.standard_numpy(init), game.standard_numpy(run_chunk)  # traced later, when called
    if mesh is None:
        return jax.jit(init), jax.jit(run_chunk, static_argnames="length")
    shardings = runner_sharding(jax.eval_shape(init, jax.random.key(0)), mesh)
    return (jax.jit(init, out_shardings=shardings),
            jax.jit(run_chunk, in_shardings=(shardings,), out_shardings=(shardings, None), static_argnames="length"))


def make_train(config: DQNConfig):
    """PureJaxRL's shape: ``train(key) -> (Runner, ChunkMetrics per chunk)`` in one jit,
    so ``jax.vmap(make_train(config))(keys)`` trains several seeds at once."""
    init, run_chunk = make_dqn(config)
    full, rest = divmod(config.iterations, config.chunk_iterations)  # as train.py runs them

    @game.standard_numpy
    def train(key: jax.Array):
        runner, metrics = jax.lax.scan(lambda runner, _: run_chunk(runner), init(key), None, length=full)
        if rest:  # the last, shorter chunk
            runner, last = run_chunk(runner, length=rest)
            metrics = jax.tree.map(lambda whole, part: jnp.concatenate([whole, part[None]]), metrics, last)
        return runner, metrics

    return train
