"""Approximate value iteration on the simulator, improved by its own search (expert
iteration), with a policy trained on what that search chooses; the whole loop in ``jit``.

The rules are known, so no click needs to be sampled to learn its value: every position
is backed up over *all* its distinct clicks at once,

    y(s) = min over clusters c of 1 + V_target(child(s, c)),   V_target(empty) = 0.

One-step backups alone converge towards the value of the network's own greedy play: where
it ranks children wrongly, the minimum picks a worse child than the best, and that error
is backed up. So the games are played by search: ``num_envs`` slots hold ``num_envs /
beam_width`` boards, each a beam of ``beam_width`` positions. Every iteration expands the
children of every slot (compacted over distinct clusters: static shapes, no per-cell
waste; a position whose children do not all fit in ``child_share``'s slots, as some fresh
boards' do not at the start, gets no backup that iteration) once, for both the backup and
the beam, which keeps the ``beam_width`` best
distinct children of each board (a share of boards picks at random, to visit positions
of every quality). When a board's beam clears it, the line it found caps the targets of
the positions along it (``V(s) <= clicks the line still took from s``); those positions go
to a ring buffer of search lines, and each batch adds ``capped_share * num_envs`` of them
to the positions in play, so labels improve as the network (and the search it guides)
does. ``beam_width = 1`` is plain epsilon-greedy play. The target network is copied every
``target_period`` updates.

The policy head plays without simulating: its logits over cells make a distribution over
clusters (``mcts.cluster_log_probs``: all cells of a cluster are one click), trained by
cross-entropy towards what the search prefers: ``softmax(-(1 + V_target(child)) /
policy_temperature)`` over the clusters, the full-width one-click search's preference,
which comes from the expansion the backup makes anyway (``policy_targets``). On a position
drawn from a search line, ``line_target_share`` of the target can go to the cluster the
line clicked there instead (unless that click was a random one); by default none does: a
line is one order among clicks that often commute or tie, and imitating it played worse
(docs/research-log.md, "Learners"). The policy trains on one random slot of each beam and on every
search-line position, its head at ``policy_lr_scale`` times the learning rate.

    init, run_chunk = make_avi(config)
    runner = init(key)
    runner, metrics = run_chunk(runner)      # config.chunk_updates iterations
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax.training.train_state import TrainState
from jax.sharding import NamedSharding, PartitionSpec as P

from jaxdust.core import configs, game
from jaxdust.core.game import GameConfig
from jaxdust.learn import expansion, networks
from jaxdust.learn.expansion import expand
from jaxdust.search.beam import sort_distinct
from jaxdust.search.keys import canonical_hash
from jaxdust.search import mcts


POLICY_TEACHERS = ("lines", "mcts")
MIN_TEMPERATURE = 1e-6  # clicks: a softmax of child values divided by it stays finite


@dataclasses.dataclass(frozen=True)
class AVIConfig:
    game: GameConfig = GameConfig()
    hidden: tuple[int, ...] = (256, 256)  # widths of the torso's dense layers
    conv: tuple[int, ...] = ()  # channels of 3x3 convolutions before the dense layers (none: an MLP)
    prior: bool = True  # the value starts at the hand-made estimate (networks.ValuePolicyNetwork)
    rule_prior: bool = True  # the estimate is the rule set's own (heuristic.heuristic_for), not the dust game's
    features: bool = True  # exact rule features as inputs beside the one-hot cells
    num_envs: int = 512  # beam slots: num_envs / beam_width boards in play at once
    beam_width: int = 8  # positions kept per board (1 = epsilon-greedy games)
    capped_share: float = 0.25  # positions per update from search lines, as a share of num_envs
    buffer_lines: int = 1024  # search lines kept (ring buffer), each up to W * H positions
    child_share: float = 0.5  # child slots per iteration, as a share of positions * cells
    total_updates: int = 3000  # Adam steps, one per iteration of search and learning
    chunk_updates: int = 100  # iterations per jitted call (checkpoints and evaluation between)
    learning_rate: float = 1e-3  # Adam's rate at the start, cosine-decayed over the run
    final_lr_fraction: float = 0.05  # the rate at the end, as a share of learning_rate
    target_period: int = 25  # updates between target-network copies
    epsilon_max: float = 0.3  # board i of B picks at random with probability epsilon_max * i / B
    random_share: float = 0.1  # the first ceil(random_share * B) boards always pick at random
    huber_delta: float = 1.0  # clicks; the value loss is quadratic below, linear above
    cell_head: bool = True  # a per-cell policy term shared by all cells (networks.ValuePolicyNetwork)
    cell_rounds: int = 4  # rounds of the cell head's messages between neighbours and within clusters
    cell_width: int = 64  # the cell head's channels per cell
    policy_weight: float = 1.0  # weight of the policy's cross-entropy beside the value loss
    policy_temperature: float = 0.25  # clicks; soft policy targets are softmax(-(1 + V(child)) / this)
    line_target_share: float = 0.0  # on a search line, the policy target's weight on its click (the rest: the softmax)
    # "lines": the child values' softmax, with line_target_share on the search lines' clicks;
    # "mcts": mctx's improved policy from a Gumbel MuZero search of every policy row with the
    # target network, softmax(prior logits + sigma(completed Q)): every cluster gets weight,
    # the unvisited ones through the value. Sequential Halving gives each of the considered
    # clusters one visit before any goes deeper, so with simulations <= considered the search
    # is a one-click lookahead on the considered clusters (about considered * log2(considered)
    # simulations reach its last halving).
    policy_teacher: str = "lines"  # the policy imitates "lines" (child values) or "mcts" (Gumbel MuZero)
    teacher_simulations: int = 16  # the mcts teacher's simulations per position
    teacher_considered: int = 16  # clusters the mcts teacher's Sequential Halving starts from at the root
    # The mcts teacher's Gumbel noise (mctx's default 1): which clicks it considers is
    # sampled, so over training every click gets scored, not only the policy's top ones.
    teacher_gumbel_scale: float = 1.0
    # At CPU budgets the policy still lags its teacher when training ends, while the value
    # has levelled off.
    policy_lr_scale: float = 2.0  # the policy head's learning rate as a multiple of learning_rate
    # Runs saved before line_target_share existed trained on the line's click alone, before
    # policy_lr_scale with one learning rate, before rule_prior from the dust game's estimate,
    # and before teacher_gumbel_scale with a noiseless teacher.
    ABSENT_MEANS: ClassVar[dict] = {"line_target_share": 1.0, "policy_lr_scale": 1.0, "rule_prior": False,
                                    "teacher_gumbel_scale": 0.0}
    # Settings another turns off (configs.require_used_settings): the mcts teacher's improved
    # policy replaces the child values' softmax.
    UNUSED_WHERE: ClassVar[tuple] = (
        (("policy_temperature", "line_target_share"), lambda config: config.policy_teacher == "lines",
         "acts on the 'lines' policy teacher only; the 'mcts' teacher ignores it"),
        (("teacher_simulations", "teacher_considered", "teacher_gumbel_scale"),
         lambda config: config.policy_teacher == "mcts",
         "acts on the 'mcts' policy teacher only, and the teacher is 'lines'"),
    )

    def __post_init__(self):
        configs.require_rules(self.game, game.CLICK_RULES, "avi")
        configs.require(self, positive=("num_envs", "beam_width", "cell_width", "buffer_lines", "total_updates", "chunk_updates",
                                        "learning_rate", "target_period", "huber_delta", "policy_temperature",
                                        "teacher_simulations", "teacher_considered", "policy_lr_scale", "child_share"),
                        non_negative=("policy_weight", "cell_rounds", "teacher_gumbel_scale"),
                        unit_interval=("capped_share", "final_lr_fraction", "epsilon_max", "random_share",
                                       "line_target_share"),
                        layers=("hidden", "conv"))
        if self.policy_temperature < MIN_TEMPERATURE:  # below it -V / T can overflow to -inf: NaN targets
            raise configs.FieldError("policy_temperature", f"must be at least {MIN_TEMPERATURE:g} clicks, got "
                                                           f"{self.policy_temperature:g}")
        if self.policy_teacher not in POLICY_TEACHERS:
            raise configs.FieldError("policy_teacher", f"must be one of {', '.join(POLICY_TEACHERS)}, "
                                                       f"got {self.policy_teacher!r}")
        if not 0.0 < self.child_share <= 1.0:
            raise configs.FieldError("child_share", f"must be in (0, 1], got {self.child_share}")
        if self.num_envs % self.beam_width:
            raise configs.FieldError("beam_width", f"({self.beam_width}) must divide num_envs ({self.num_envs})")
        if self.buffer_lines > 2**16 or self.beam_width > 2**16:  # rows and slots are drawn from 16 bits
            field = "buffer_lines" if self.buffer_lines > 2**16 else "beam_width"
            raise configs.FieldError(field, f"must be at most 65536, got {getattr(self, field)}")
        configs.require_used_settings(self)
        expansion.require_indexable(self.child_slots, self.game, "num_envs and child_share")
        expansion.require_room(self.child_slots, self.num_envs + self.capped_positions, self.child_share)
        if self.buffer_lines < self.num_envs // self.beam_width:
            # Every board may finish in one iteration; each needs its own row.
            raise configs.FieldError("buffer_lines", f"({self.buffer_lines}) must be >= the boards in play, "
                                                     f"num_envs / beam_width ({self.num_envs // self.beam_width})")

    @property
    def network(self) -> networks.ValuePolicyNetwork:
        return networks.ValuePolicyNetwork(tuple(self.hidden), self.game.colors, self.prior, tuple(self.conv),
                                           self.features, self.cell_head, self.cell_rounds,
                                           self.cell_width, self.game.rules if self.rule_prior else "dust")

    @property
    def boards_in_play(self) -> int:
        return self.num_envs // self.beam_width

    @property
    def capped_positions(self) -> int:
        return int(round(self.capped_share * self.num_envs))

    @property
    def child_slots(self) -> int:
        positions = self.num_envs + self.capped_positions
        return max(1, int(self.child_share * positions * self.game.num_cells))


class Lines(NamedTuple):
    """Ring buffer of solutions the beams found: ``R`` lines of up to ``L = W * H`` clicks."""

    positions: jax.Array  # int8 [R, L, W, H], the position before each click
    actions: jax.Array  # int32 [R, L], the click played from it
    explored: jax.Array  # bool [R, L], the click was picked at random (no policy target)
    length: jax.Array  # int32 [R], clicks of the line (0 = empty row)
    written: jax.Array  # int32 [], lines written so far, kept in [R, 2R) once past R (see _written)


def _written(count: jax.Array, buffer_lines: int) -> jax.Array:
    """``Lines.written`` after ``count`` lines (int32 []): the same row (``% R``) and fill
    (``min(., R)``), folded into ``[R, 2R)`` past ``2R``. A plain count would pass 2^31 in a
    long run of many boards and turn negative: every line drawn would then be row 0. Read
    as unsigned, a count that did (a run saved before 0.2.90) folds as the true count."""
    unsigned = jax.lax.bitcast_convert_type(count, jnp.uint32)
    rows = jnp.uint32(buffer_lines)
    return jnp.where(unsigned >= 2 * rows, rows + (unsigned - rows) % rows, unsigned).astype(jnp.int32)


class Runner(NamedTuple):
    train: TrainState
    target_params: Any
    boards: jax.Array  # int8 [N, W, H], the beam slots' positions (board b owns slots b*w .. b*w+w-1)
    path: jax.Array  # int8 [N, L, W, H], each slot's line from its board's start
    path_actions: jax.Array  # int32 [N, L]
    path_explored: jax.Array  # bool [N, L]
    depth: jax.Array  # int32 [B], clicks made by each board's beam
    lines: Lines
    key: jax.Array
    update: jax.Array  # int32 [], updates made


class ChunkMetrics(NamedTuple):
    """A chunk's figures: ``loss`` and ``line_positions`` are means over its updates,
    ``episodes`` and ``dropped`` sums, and the others means over every position (or policy
    row, board) the chunk counted, whichever update it fell in."""

    loss: jax.Array  # float32 [], mean over the chunk's updates
    value_error: jax.Array  # float32 [], mean |V(s) - y(s)|, clicks
    policy_loss: jax.Array  # float32 [], cross-entropy of the policy over clusters
    policy_agreement: jax.Array  # float32 [], share of positions whose most likely cluster is the target's
    target: jax.Array  # float32 [], mean target of the positions in play trained on, clicks
    capped: jax.Array  # float32 [], share of the search-line positions trained on whose cap was below the backup
    line_positions: jax.Array  # float32 [], search-line positions trained on per update
    episodes: jax.Array  # int32 [], boards cleared in the chunk
    episode_clicks: jax.Array  # float32 [], mean clicks of those boards' lines
    dropped: jax.Array  # int32 [], children beyond child_slots (their positions get no backup that update)


def select_beam(values: jax.Array, hashes: jax.Array, explore: jax.Array, key: jax.Array, width: int) -> jax.Array:
    """The ``width`` children one board's beam keeps.

    Args:
      values: float32 ``[K]``, candidate children's values (inf: no child).
      hashes: uint32 ``[K, 2]``, their ``canonical_hash``; equal boards (up to the mirror)
        with equal values are kept once.
      explore: bool, pick among the distinct children at random instead of the best.

    Returns int32 ``[width]`` candidate indices, best first (in random order when
    exploring); when fewer than ``width`` distinct children exist, the first repeats (a
    duplicate only costs a slot).
    """
    order, distinct = sort_distinct(values, hashes)
    noise = jax.random.uniform(key, distinct.shape, jnp.float32)
    keys = jnp.where(explore & jnp.isfinite(distinct), noise, distinct)
    best_keys, best = jax.lax.top_k(-keys, width)
    best = jnp.where(jnp.isfinite(best_keys), best, best[0])
    return order[best]


def value_targets(child_values: jax.Array, labels: jax.Array, cap: jax.Array) -> tuple[jax.Array, ...]:
    """The value's targets: ``y(s) = min(1 + min over clusters of V_target(child), cap)``.

    Args:
      child_values: float32 ``[N, W * H]`` (``Expansion.values``: inf at the cells that are
        no cluster's first, and at clusters whose child fell beyond the slots).
      labels: int32 ``[N, W * H]``, each cell's cluster's first cell (-1 empty).
      cap: float32 ``[N]``, the clicks a search line still took from the position (inf: none).

    Returns ``(target, capped, complete)``, ``[N]`` each: the target (inf: none), whether
    the cap is below the backup (the line, not the backup, sets the target), and whether
    every cluster's child was valued. A position missing some children has no backup (the
    minimum over part of its clicks would be too high), only its cap, and is not counted
    as capped.
    """
    backup = 1.0 + jnp.min(child_values, axis=1)
    cells = labels.shape[1]
    complete = (jnp.sum(jnp.isfinite(child_values), axis=1, dtype=jnp.int32)
                == jnp.sum(labels == jnp.arange(cells, dtype=jnp.int32), axis=1, dtype=jnp.int32))
    return jnp.minimum(jnp.where(complete, backup, jnp.inf), cap), complete & (cap < backup), complete


def policy_targets(child_values: jax.Array, line_cluster: jax.Array, temperature: float,
                   line_share: float) -> jax.Array:
    """What the policy imitates from each position, over its clusters' first cells.

    Args:
      child_values: float32 ``[N, W * H]``, ``V_target`` of the child at each cluster's
        first cell, inf elsewhere (``Expansion.values``).
      line_cluster: int32 ``[N]``, the first cell of the cluster a search line clicked from
        the position, -1 where none did (a position in play, or a random click).

    Returns float32 ``[N, W * H]``: ``softmax(-(1 + V(child)) / temperature)`` over the
    clusters; where a line clicked, ``line_share`` of the weight on its cluster and the
    rest spread by that softmax. A line is one of the search's choices where several
    clusters may be as good (clicks that commute, equal children): the softmax keeps
    some weight on those. Rows without a child are zero.
    """
    has_child = jnp.isfinite(child_values)
    # Cells without a child at -inf: a finite mask took the weight once -V / T fell below it.
    soft = jax.nn.softmax(jnp.where(has_child, -child_values / temperature, -jnp.inf), axis=1)
    soft = jnp.where(has_child, soft, 0.0)  # and rows without a child (NaN) to zeros
    line = jax.nn.one_hot(line_cluster, child_values.shape[1], dtype=jnp.float32)  # zeros for -1
    # Exact at the ends: a share of 1 gives the one-hot, 0 the softmax, to the last bit.
    return jnp.where((line_cluster >= 0)[:, None], line_share * line + (1.0 - line_share) * soft, soft)


def make_optimizer(config: AVIConfig) -> optax.GradientTransformation:
    """Adam on a cosine schedule, the policy head's parameters (``networks.is_policy_head``)
    at ``policy_lr_scale`` times the rate. At a scale of 1, plain Adam: the optimiser state
    that runs saved before the scale existed, so they resume."""
    schedule = optax.cosine_decay_schedule(config.learning_rate, config.total_updates, alpha=config.final_lr_fraction)
    if config.policy_lr_scale == 1.0:
        return optax.adam(schedule)

    def labels(params):
        return jax.tree_util.tree_map_with_path(
            lambda path, _: "policy" if any(networks.is_policy_head(getattr(key, "key", "")) for key in path)
            else "rest", params)

    return optax.multi_transform({"rest": optax.adam(schedule),
                                  "policy": optax.adam(lambda step: config.policy_lr_scale * schedule(step))}, labels)


def runner_sharding(runner: Runner, mesh: jax.sharding.Mesh):
    """Boards (with their beams) split over the mesh's ``data`` axis; parameters, optimiser
    state and the line buffer replicated."""
    def spec(path, leaf):
        name = getattr(path[0], "name", "")
        if name in ("boards", "path", "path_actions", "path_explored", "depth"):
            return NamedSharding(mesh, P("data"))
        return NamedSharding(mesh, P())

    return jax.tree_util.tree_map_with_path(spec, runner)


@game.standard_numpy
def make_avi(config: AVIConfig, mesh: jax.sharding.Mesh | None = None):
    """``init(key) -> Runner`` and ``run_chunk(runner, length=config.chunk_updates) ->
    (Runner, ChunkMetrics)``, jitted (``length`` is static: a run's last chunk may be shorter;
    with a ``mesh`` pass it positionally, as jit with shardings takes no keywords)."""
    network = config.network
    size = config.game
    count, cells, slots = config.num_envs, size.num_cells, config.child_slots
    width, boards_count, capped = config.beam_width, config.boards_in_play, config.capped_positions
    buffer_lines = config.buffer_lines
    optimizer = make_optimizer(config)
    board_index = jnp.arange(boards_count, dtype=jnp.int32)
    epsilon = jnp.where(board_index < config.random_share * boards_count, 1.0,
                        config.epsilon_max * board_index / boards_count).astype(jnp.float32)

    def fresh_boards(key):
        return jax.vmap(lambda k: game.random_board(k, size))(jax.random.split(key, boards_count))

    def init(key: jax.Array) -> Runner:
        network_key, board_key, key = jax.random.split(key, 3)
        params = network.init(network_key, jnp.zeros((1, size.width, size.height), game.BOARD_DTYPE))
        train = TrainState.create(apply_fn=network.apply, params=params, tx=optimizer)
        lines = Lines(jnp.zeros((buffer_lines, cells, size.width, size.height), game.BOARD_DTYPE),
                      jnp.zeros((buffer_lines, cells), jnp.int32), jnp.zeros((buffer_lines, cells), bool),
                      jnp.zeros(buffer_lines, jnp.int32), jnp.int32(0))
        return Runner(train, params, jnp.repeat(fresh_boards(board_key), width, axis=0),
                      jnp.zeros((count, cells, size.width, size.height), game.BOARD_DTYPE),
                      jnp.zeros((count, cells), jnp.int32), jnp.zeros((count, cells), bool),
                      jnp.zeros(boards_count, jnp.int32), lines, key, jnp.int32(0))

    def sample_lines(lines: Lines, key):
        """``capped`` positions of stored lines, their caps (inf for none), the lines' clicks
        from them and whether those were random."""
        row_key, depth_key = jax.random.split(key)
        filled = jnp.minimum(lines.written, buffer_lines)
        rows = game.uniform_below(game.random_halfwords(row_key, capped), jnp.maximum(filled, 1))
        length = lines.length[rows]
        steps = game.uniform_below(game.random_halfwords(depth_key, capped), jnp.maximum(length, 1))
        cap = jnp.where(length > 0, (length - steps).astype(jnp.float32), jnp.inf)
        return lines.positions[rows, steps], cap, lines.actions[rows, steps], lines.explored[rows, steps]

    def iteration(runner: Runner, _):
        # A no-op but for a run saved after its count wrapped, before the fold: its first
        # iteration draws and writes at the true count's rows too.
        runner = runner._replace(lines=runner.lines._replace(written=_written(runner.lines.written, buffer_lines)))
        key, line_key, explore_key, select_key, reset_key, slot_key = jax.random.split(runner.key, 6)
        line_boards, cap, cap_action, cap_explored = sample_lines(runner.lines, line_key)
        boards = jnp.concatenate([runner.boards, line_boards])
        trained = jnp.concatenate([jnp.ones(count, bool), jnp.isfinite(cap)])
        cap = jnp.concatenate([jnp.full(count, jnp.inf, jnp.float32), cap])
        cap_action = jnp.concatenate([jnp.full(count, -1, jnp.int32), cap_action])
        cap_explored = jnp.concatenate([jnp.zeros(count, bool), cap_explored])

        expansion = expand(boards, slots, lambda b: network.apply(runner.target_params, b)[0], size.rules)
        labels, child_values = expansion.labels, expansion.values
        # A position some of whose children fell beyond the slots is not trained in play, a
        # line's position only towards its line's cap.
        target, below_backup, complete = value_targets(child_values, labels, cap)
        trained = trained & jnp.isfinite(target)
        weight = trained.astype(jnp.float32)
        # The policy trains on one random slot of each board's beam (its slots are close
        # relatives, and the policy head costs far more per position than the value) and
        # on every search-line position.
        policy_slot = game.uniform_below(game.random_halfwords(slot_key, boards_count), width)
        policy_rows = jnp.concatenate([board_index * width + policy_slot, count + jnp.arange(capped, dtype=jnp.int32)])
        row_boards, row_labels, row_values = boards[policy_rows], labels[policy_rows], child_values[policy_rows]
        if mesh is not None:  # each device trains the policy on its share of the rows
            row_boards, row_labels, row_values = jax.lax.with_sharding_constraint(
                (row_boards, row_labels, row_values), NamedSharding(mesh, P("data")))
        row_action = cap_action[policy_rows]
        line_cluster = jnp.take_along_axis(row_labels, jnp.maximum(row_action, 0)[:, None], axis=1)[:, 0]
        use_line = (row_action >= 0) & ~cap_explored[policy_rows] & (line_cluster >= 0)
        policy_target = policy_targets(row_values, jnp.where(use_line, line_cluster, -1),
                                       config.policy_temperature, config.line_target_share)
        if config.policy_teacher == "mcts":
            searched = mcts.search(row_boards, lambda b, p: network.apply(p, b), runner.target_params,
                                   jax.random.fold_in(slot_key, 1), config.teacher_simulations,
                                   config.teacher_considered, gumbel_scale=config.teacher_gumbel_scale,
                                   rules=size.rules)
            # A row without a position (the line buffer not yet filled) has no legal action,
            # and mctx then spreads its weights over all cells: no target there.
            policy_target = jnp.where(row_labels >= 0, searched.action_weights.astype(jnp.float32), 0.0)
        target_cluster = jnp.take_along_axis(row_labels, jnp.argmax(policy_target, axis=1)[:, None], axis=1)[:, 0]
        # An all-zero target teaches nothing, nor one over part of a position's clusters (its
        # first ones: the policy would learn the board's left side).
        row_weight = weight[policy_rows] * jnp.any(policy_target > 0, axis=1) * complete[policy_rows]

        def loss_fn(params):
            value, _ = network.apply(params, boards)  # the policy head's work is cut from this call
            value_loss = jnp.sum(weight * optax.huber_loss(value, jnp.where(trained, target, 0.0), delta=config.huber_delta))
            value_loss = value_loss / jnp.maximum(jnp.sum(weight), 1.0)  # none trained: 0, not NaN
            _, logits = network.apply(params, row_boards)
            log_probs = mcts.cluster_log_probs(logits, row_labels)
            cross = -jnp.sum(jnp.where(policy_target > 0, policy_target * log_probs, 0.0), axis=1)
            policy_loss = jnp.sum(row_weight * cross) / jnp.maximum(jnp.sum(row_weight), 1.0)
            picked = jnp.take_along_axis(row_labels, jnp.argmax(log_probs, axis=1)[:, None], axis=1)[:, 0]
            agreement = jnp.sum(row_weight * (picked == target_cluster)) / jnp.maximum(jnp.sum(row_weight), 1.0)
            value_error = jnp.sum(weight * jnp.abs(value - jnp.where(trained, target, 0.0))) / jnp.maximum(
                jnp.sum(weight), 1.0)
            return value_loss + config.policy_weight * policy_loss, (value_error, policy_loss, agreement)

        (loss, (value_error, policy_loss, agreement)), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            runner.train.params)
        train = runner.train.apply_gradients(grads=grads)
        update = runner.update + 1
        copy = update % config.target_period == 0
        target_params = jax.tree.map(lambda old, new: jnp.where(copy, new, old), runner.target_params, train.params)

        # The beams: each board keeps its `width` best distinct children over all its slots.
        child_hashes = jax.vmap(lambda child: canonical_hash(child, size.mirror_symmetric))(expansion.children)
        beam_index = expansion.rows[:count]
        candidate_hashes = child_hashes[jnp.minimum(beam_index, slots - 1)].reshape(boards_count, width * cells, 2)
        explore = jax.random.uniform(explore_key, (boards_count,), jnp.float32) < epsilon
        chosen = jax.vmap(select_beam, in_axes=(0, 0, 0, 0, None))(
            child_values[:count].reshape(boards_count, width * cells), candidate_hashes, explore,
            jax.random.split(select_key, boards_count), width)  # [B, w]
        parent = (board_index[:, None] * width + chosen // cells).reshape(-1)
        action = (chosen % cells).reshape(-1)
        after = expansion.children[beam_index[parent, action]]
        slot_depth = jnp.repeat(runner.depth, width)
        slot = jnp.arange(count, dtype=jnp.int32)
        path = runner.path.at[slot, slot_depth].set(runner.boards)[parent]
        path_actions = runner.path_actions[parent].at[slot, slot_depth].set(action)
        path_explored = runner.path_explored[parent].at[slot, slot_depth].set(jnp.repeat(explore, width))
        # A board whose children all fell beyond the slots (fresh boards at the start have
        # the most) waits for the next iteration rather than taking another board's child.
        stalled = ~jnp.any(jnp.isfinite(child_values[:count].reshape(boards_count, width * cells)), axis=1)
        stalled_slot = jnp.repeat(stalled, width)
        after = jnp.where(stalled_slot[:, None, None], runner.boards, after)
        path = jnp.where(stalled_slot[:, None, None, None], runner.path, path)
        path_actions = jnp.where(stalled_slot[:, None], runner.path_actions, path_actions)
        path_explored = jnp.where(stalled_slot[:, None], runner.path_explored, path_explored)

        cleared = jax.vmap(game.is_done)(after).reshape(boards_count, width)
        finished = jnp.any(cleared, axis=1)
        winner = board_index * width + jnp.argmax(cleared, axis=1).astype(jnp.int32)
        length = runner.depth + 1
        rows = (runner.lines.written + jnp.cumsum(finished, dtype=jnp.int32) - 1) % buffer_lines
        rows = jnp.where(finished, rows, buffer_lines)
        lines = Lines(positions=runner.lines.positions.at[rows].set(path[winner], mode="drop"),
                      actions=runner.lines.actions.at[rows].set(path_actions[winner], mode="drop"),
                      explored=runner.lines.explored.at[rows].set(path_explored[winner], mode="drop"),
                      length=runner.lines.length.at[rows].set(length, mode="drop"),
                      written=_written(runner.lines.written + jnp.sum(finished, dtype=jnp.int32), buffer_lines))
        restart = jnp.repeat(finished, width)
        after = jnp.where(restart[:, None, None], jnp.repeat(fresh_boards(reset_key), width, axis=0), after)
        depth = jnp.where(finished, 0, jnp.where(stalled, runner.depth, length))
        runner = Runner(train=train, target_params=target_params, boards=after, path=path, path_actions=path_actions,
                        path_explored=path_explored, depth=depth, lines=lines, key=key, update=update)
        # One update's figures, which run_chunk reduces (episode_clicks: a total here).
        step = ChunkMetrics(
            loss=loss, value_error=value_error, policy_loss=policy_loss, policy_agreement=agreement,
            target=(jnp.sum(jnp.where(trained[:count], target[:count], 0.0))
                    / jnp.maximum(jnp.sum(trained[:count], dtype=jnp.int32), 1)),
            capped=jnp.sum(trained[count:] & below_backup[count:]).astype(jnp.float32),  # a count here
            line_positions=jnp.sum(trained[count:]).astype(jnp.float32),
            episodes=jnp.sum(finished, dtype=jnp.int32),
            episode_clicks=jnp.sum(jnp.where(finished, length, 0), dtype=jnp.int32),
            dropped=expansion.dropped)
        # What each of the update's means was over, so that run_chunk weighs it by that.
        counts = (jnp.sum(weight), jnp.sum(row_weight), jnp.sum(trained[:count], dtype=jnp.float32))
        return runner, (step, counts)

    def run_chunk(runner: Runner, length: int = config.chunk_updates) -> tuple[Runner, ChunkMetrics]:
        runner, (steps, (value_rows, policy_rows, in_play)) = jax.lax.scan(iteration, runner, None, length=length)
        means = jax.tree.map(jnp.mean, steps)

        def over(values, counts):  # an update that trained no position counts for nothing
            return jnp.sum(values * counts) / jnp.maximum(jnp.sum(counts), 1.0)

        episodes = jnp.sum(steps.episodes)
        return runner, means._replace(episodes=episodes, dropped=jnp.sum(steps.dropped),
                                      value_error=over(steps.value_error, value_rows),
                                      policy_loss=over(steps.policy_loss, policy_rows),
                                      policy_agreement=over(steps.policy_agreement, policy_rows),
                                      target=over(steps.target, in_play),
                                      capped=jnp.sum(steps.capped) / jnp.maximum(jnp.sum(steps.line_positions), 1),
                                      episode_clicks=jnp.sum(steps.episode_clicks) / jnp.maximum(episodes, 1))

    init, run_chunk = game.standard_numpy(init), game.standard_numpy(run_chunk)  # traced later, when called
    if mesh is None:
        return jax.jit(init), jax.jit(run_chunk, donate_argnums=0, static_argnames="length")
    shardings = runner_sharding(jax.eval_shape(init, jax.random.key(0)), mesh)
    return (jax.jit(init, out_shardings=shardings),
            jax.jit(run_chunk, in_shardings=(shardings,), out_shardings=(shardings, None), donate_argnums=0,
                    static_argnames="length"))
