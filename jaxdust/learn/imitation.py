"""Supervised imitation of solver data (``jaxdust.learn.datasets``) with Flax and optax.

Two networks (``ImitationConfig.architecture``):

- ``"cell-head"`` (the default): ``avi``'s network (``networks.ValuePolicyNetwork``), whose
  cell head passes messages between neighbouring cells and within clusters. Its logits
  make a distribution over clusters (``mcts.cluster_log_probs``: all cells of a cluster
  are one click), trained by cross-entropy towards the cluster the solver clicked; it plays
  alone ("argmax") by the most likely cluster (``agents.ClusterArgmax``).
- ``"mlp"``: the original supervised post's target on a plain MLP
  (``networks.PolicyValueNetwork``): a sigmoid on every cell learns, with binary
  cross-entropy, to mark the whole cluster the solver clicked; it plays the highest-scoring
  legal cell (``agents.PolicyGreedy``).

Both regress the clicks left along the solution with a value head (Huber), which scores
positions for the beam search (width 1 is "greedy": a one-step lookahead).

    init, run_chunk, evaluate = make_imitation(config, data)
    state = init(key)
    for chunk in range(config.epoch_chunks):             # one pass over the training split
        state, train_metrics = run_chunk(state, epoch_key, chunk)
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training.train_state import TrainState
from jax.sharding import NamedSharding, PartitionSpec as P

from jaxdust.core import configs, game
from jaxdust.core.game import CLICK_RULES, GameConfig
from jaxdust.learn import networks
from jaxdust.learn.datasets import Dataset
from jaxdust.search import mcts

ARCHITECTURES = ("cell-head", "mlp")


@dataclasses.dataclass(frozen=True)
class ImitationConfig:
    game: GameConfig = GameConfig()
    # "cell-head": avi's network, a softmax over clusters (cross-entropy on the clicked one);
    # "mlp": the original post's sigmoid on every cell of an MLP (binary cross-entropy)
    architecture: str = "cell-head"
    hidden: tuple[int, ...] = (256, 256)  # widths of the dense layers (the cell-head network's torso)
    features: bool = True  # exact cluster facts as extra inputs (networks module docstring)
    rule_prior: bool = True  # with features, the value starts at the rule set's own heuristic (heuristic_for)
    cell_rounds: int = 4  # rounds of the cell head's messages between neighbours and within clusters
    cell_width: int = 64  # the cell head's channels per cell
    epochs: int = 2  # passes over the training split
    # An epoch of the default data set takes ~2 minutes on 2 CPU cores: in chunks, a run
    # shows progress, saves checkpoints and stops for --minutes within it.
    epoch_chunks: int = 10  # chunks an epoch is trained in (what the progress bar and --eval-every count)
    # On a CPU a step of 64 takes under a quarter of one of 256 (12-13 ms against 53-59 on
    # a 2-core AMD EPYC), so an epoch takes no longer with four times the updates, which the
    # policy needs more than large batches (docs/research-log.md, "Imitation with the cell
    # head"). On GPUs it is untimed.
    batch_size: int = 64  # positions per gradient step
    learning_rate: float = 1e-3  # the rate at the start, cosine-decayed over the run
    final_lr_fraction: float = 0.05  # the rate at the end, as a share of learning_rate
    weight_decay: float = 1e-4  # AdamW's decoupled weight decay
    # At steps of 64 the value plays better greedily with twice the weight it had at 256.
    value_weight: float = 0.4  # value loss (Huber in clicks: squared within one, linear beyond) against the policy's
    validation_share: float = 0.1  # of source boards held out
    mirror: bool = True  # also train on mirror images, where they play alike (game.mirror_symmetric)
    # Runs saved before rule_prior started from the dust game's estimate on every rule set,
    # before architecture trained the mlp, before epoch_chunks stepped an epoch at a time.
    ABSENT_MEANS: ClassVar[dict] = {"rule_prior": False, "architecture": "mlp", "epoch_chunks": 1}
    UNUSED_WHERE: ClassVar[tuple] = (
        (("cell_rounds", "cell_width"), lambda config: config.architecture == "cell-head",
         "acts on the 'cell-head' architecture only"),
        (("mirror",), lambda config: config.game.mirror_symmetric,
         "acts where a board and its mirror image play alike (game.mirror_symmetric), and these boards do not"),
    )

    def __post_init__(self):
        configs.require_rules(self.game, CLICK_RULES, "imitation")
        configs.require(self, positive=("epochs", "epoch_chunks", "batch_size", "learning_rate", "cell_width"),
                        non_negative=("weight_decay", "value_weight", "cell_rounds"),
                        unit_interval=("final_lr_fraction",), layers=("hidden",))
        if self.architecture not in ARCHITECTURES:
            raise configs.FieldError("architecture", f"must be one of {', '.join(ARCHITECTURES)}, "
                                                     f"got {self.architecture!r}")
        if not 0.0 < self.validation_share < 1.0:
            raise configs.FieldError("validation_share", f"must be in (0, 1), got {self.validation_share}")
        configs.require_used_settings(self)

    @property
    def network(self) -> networks.ValuePolicyNetwork | networks.PolicyValueNetwork:
        prior_rules = self.game.rules if self.rule_prior else "dust"
        if self.architecture == "mlp":
            return networks.PolicyValueNetwork(tuple(self.hidden), self.game.colors, self.features, prior_rules)
        # The value starts at the hand-made estimate where the exact features are input, as
        # the mlp's does.
        return networks.ValuePolicyNetwork(tuple(self.hidden), self.game.colors, prior=self.features,
                                           features=self.features, cell_rounds=self.cell_rounds,
                                           cell_width=self.cell_width, prior_rules=prior_rules)

    @classmethod
    def mlp(cls, **changes) -> "ImitationConfig":
        """The learner up to jaxdust 0.2.48: the mlp of three 512-wide layers, 12 epochs of
        steps of 256, the value's loss at weight 0.2."""
        return cls(**{"architecture": "mlp", "hidden": networks.PRESETS["default"], "epochs": 12, "batch_size": 256,
                      "value_weight": 0.2, **changes})


class TooFewPositions(ValueError):
    """A data set's training split holds fewer positions than a batch."""


class Split(NamedTuple):
    boards: jax.Array  # int8 [N, W, H]
    clicked: jax.Array  # float32 [N, W * H]
    cost_to_go: jax.Array  # float32 [N]


class ImitationMetrics(NamedTuple):
    policy_loss: jax.Array  # float32 [], mean cross-entropy over clusters (cell-head) or BCE per cell (mlp)
    value_loss: jax.Array  # float32 [], mean Huber of the clicks left
    click_accuracy: jax.Array  # float32 [], the network's own click lies in the clicked cluster
    value_error: jax.Array  # float32 [], mean absolute error of the clicks left


def split_dataset(data: Dataset, config: ImitationConfig) -> tuple[Split, Split]:
    """Training and validation splits by source board (no board's positions in both)."""
    boards = np.unique(data.board_id)
    held_out = boards[len(boards) - max(1, int(round(len(boards) * config.validation_share))):]
    validation = np.isin(data.board_id, held_out)

    def split(rows, mirror):
        b, c, v = data.boards[rows], data.clicked[rows], data.cost_to_go[rows]
        if mirror:
            b, c, v = np.concatenate([b, b[:, ::-1]]), np.concatenate([c, c[:, ::-1]]), np.concatenate([v, v])
        return Split(jnp.asarray(b), jnp.asarray(c.reshape(len(c), math.prod(c.shape[1:])), jnp.float32),
                     jnp.asarray(v, jnp.float32))

    return split(~validation, config.mirror and config.game.mirror_symmetric), split(validation, False)


def make_optimizer(config: ImitationConfig, total_steps: int) -> optax.GradientTransformation:
    schedule = optax.cosine_decay_schedule(config.learning_rate, max(1, total_steps), alpha=config.final_lr_fraction)
    return optax.adamw(schedule, weight_decay=config.weight_decay)


def initial_state(config: ImitationConfig, key: jax.Array, total_steps: int = 1) -> TrainState:
    """A fresh TrainState (also the shape a checkpoint is restored into)."""
    network = config.network
    params = network.init(key, jnp.zeros((1, config.game.width, config.game.height), jnp.int8))
    return TrainState.create(apply_fn=network.apply, params=params, tx=make_optimizer(config, total_steps))


@game.standard_numpy
def make_imitation(config: ImitationConfig, data: Dataset, mesh: jax.sharding.Mesh | None = None):
    """``init(key)``, ``run_chunk(state, epoch_key, chunk)`` and ``evaluate(state)``
    (validation); a chunk's steps and the validation are jitted.

    With a ``mesh`` (axis ``data``) every minibatch is split over its devices and the
    parameters replicated; the gradient mean becomes an all-reduce (data parallelism).

    Raises:
      ValueError: for data of another board size, more colours than ``config.game`` or
        negative cells (``data`` does not say its rules: ``dataset_config`` of its
        directory does).
      TooFewPositions: a training split smaller than a batch.
    """
    size = config.game
    if tuple(data.boards.shape[1:]) != (size.width, size.height):
        raise ValueError(f"the data holds {data.boards.shape[1]}x{data.boards.shape[2]} boards, the config plays "
                         f"{size.width}x{size.height}")
    if data.boards.size and int(data.boards.max()) > size.colors:
        raise ValueError(f"the data holds colour {int(data.boards.max())}, the config plays {size.colors} colours")
    if data.boards.size and int(data.boards.min()) < 0:  # one-hot as no colour: a blank the network would learn
        raise ValueError(f"the data holds cell value {int(data.boards.min())}; cells are 0 (empty) to "
                         f"{size.colors}")
    train, validation = split_dataset(data, config)
    boards = len(np.unique(data.board_id))
    if train.boards.shape[0] == 0:  # no batch size helps
        raise TooFewPositions(f"the data set's training split is empty: each of the {boards} boards with positions "
                              f"left after removing repeats is held out for validation (at least one, and a share "
                              f"of {config.validation_share:g}): make more boards or lower --validation-share")
    if train.boards.shape[0] < config.batch_size:
        raise TooFewPositions(f"the data set's training split holds {train.boards.shape[0]} positions, fewer "
                              f"than batch_size {config.batch_size} (of its {boards} boards with positions left "
                              f"after removing repeats, at least one and a share of {config.validation_share:g} are "
                              f"held out for validation): make more boards or lower --batch-size")
    if mesh is not None and config.batch_size % mesh.size:
        raise ValueError(f"--batch-size {config.batch_size} must divide over {mesh.size} devices")

    def spread(batch: Split) -> Split:
        if mesh is None:
            return batch
        return jax.lax.with_sharding_constraint(batch, NamedSharding(mesh, P("data")))
    network = config.network
    steps_per_epoch = max(1, train.boards.shape[0] // config.batch_size)
    # Chunk c of K takes steps c * S // K to (c + 1) * S // K of an epoch's S: their lengths
    # differ by at most one (some are empty where an epoch has fewer steps than chunks), so
    # one program of the longest length runs them all, skipping the steps past a chunk's end.
    chunk_length = -(-steps_per_epoch // config.epoch_chunks)

    def init(key: jax.Array) -> TrainState:
        return initial_state(config, key, config.epochs * steps_per_epoch)

    def metrics(params, batch: Split) -> ImitationMetrics:
        if config.architecture == "mlp":
            logits, cost = network.apply(params, batch.boards)
            legal = batch.boards.reshape(batch.boards.shape[0], -1) != 0
            best = networks.masked_argmax(logits, legal)
            policy_loss = jnp.mean(optax.sigmoid_binary_cross_entropy(logits, batch.clicked))
        else:
            cost, logits = network.apply(params, batch.boards)
            labels = jax.vmap(game.cluster_labels)(batch.boards).reshape(logits.shape)
            log_probs = mcts.cluster_log_probs(logits, labels)
            # Any cell of the clicked cluster holds the cluster's log-probability.
            clicked_cell = jnp.argmax(batch.clicked, axis=-1)
            policy_loss = -jnp.mean(jnp.take_along_axis(log_probs, clicked_cell[:, None], axis=-1))
            best = jnp.argmax(log_probs, axis=-1)
        hit = jnp.take_along_axis(batch.clicked, best[:, None], axis=-1)[:, 0]
        return ImitationMetrics(
            policy_loss=policy_loss,
            value_loss=jnp.mean(optax.huber_loss(cost, batch.cost_to_go)),
            click_accuracy=jnp.mean(hit),
            value_error=jnp.mean(jnp.abs(cost - batch.cost_to_go)),
        )

    def loss_fn(params, batch: Split):
        m = metrics(params, batch)
        return m.policy_loss + config.value_weight * m.value_loss, m

    # The data are jit arguments, not closed-over constants: as constants XLA would embed
    # and constant-fold them (slow compiles, warnings on large sets).
    train, validation = jax.device_put((train, validation))

    @jax.jit
    @game.standard_numpy  # traced later, when called
    def chunk_steps(state: TrainState, key: jax.Array, first: jax.Array, count: jax.Array,
                    train: Split) -> tuple[TrainState, ImitationMetrics]:
        rows = jnp.arange(train.boards.shape[0], dtype=jnp.int32)
        order = jax.random.permutation(key, rows)[: steps_per_epoch * config.batch_size]
        batches = order.reshape(steps_per_epoch, config.batch_size)

        def step(state, index):
            def update(state):
                batch = spread(jax.tree.map(lambda a: a[batches[first + index]], train))
                (_, m), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, batch)
                return state.apply_gradients(grads=grads), m

            def skip(state):
                return state, ImitationMetrics(*[jnp.float32(0.0)] * len(ImitationMetrics._fields))
            return jax.lax.cond(index < count, update, skip, state)

        state, per_step = jax.lax.scan(step, state, jnp.arange(chunk_length, dtype=jnp.int32))
        return state, jax.tree.map(lambda values: jnp.sum(values) / count, per_step)

    @jax.jit
    @game.standard_numpy
    def validate(state: TrainState, split: Split) -> ImitationMetrics:
        # Row by row, batch_size rows at a time (lax.map vmaps each batch): the cell head's
        # messages over a whole validation split at once took ~5 GB on the default data set's.
        per_row = jax.lax.map(lambda row: metrics(state.params, jax.tree.map(lambda a: a[None], row)), split,
                              batch_size=config.batch_size)
        return jax.tree.map(jnp.mean, per_row)

    def run_chunk(state: TrainState, epoch_key: jax.Array, chunk: int) -> tuple[TrainState, ImitationMetrics | None]:
        """Chunk ``chunk`` (0 to ``epoch_chunks - 1``) of the epoch whose order of rows
        ``epoch_key`` draws: the mean training metrics of its steps, None for an empty chunk."""
        if not 0 <= chunk < config.epoch_chunks:
            raise ValueError(f"chunk {chunk} is not one of the epoch's {config.epoch_chunks}")
        first = chunk * steps_per_epoch // config.epoch_chunks
        count = (chunk + 1) * steps_per_epoch // config.epoch_chunks - first
        if count == 0:
            return state, None
        return chunk_steps(state, epoch_key, jnp.int32(first), jnp.int32(count), train)

    def evaluate(state: TrainState) -> ImitationMetrics:
        return validate(state, validation)

    return init, run_chunk, evaluate
