"""The dust game and its family as a reinforcement-learning environment (Jumanji-style,
fully jittable). The rule set is the config's (``GameConfig.rules``, RULES.md).

``DustEnv`` is a frozen dataclass: hashable, so ``env.reset`` and ``env.step`` (jitted
already, and fast when called one at a time) and ``jax.jit(env.step)`` compile once per
configuration, and ``jax.vmap(env.step)`` steps thousands of games in lockstep.

- **Observation** ``Observation``: ``board`` int8 ``[W, H]``; ``one_hot`` float32
  ``[W, H, colors + 1]`` (channel 0 marks empty cells); ``action_mask`` bool ``[W * H]``,
  True where a click removes something (occupied cells; for ``samegame`` and
  ``clickomania``, cells in a group of 2 or more).
- **Action** int32 scalar in ``[0, W * H)``: click cell ``(a // H, a % H)``. An action
  outside that range never raises (``env.step`` is jitted, called eagerly or not, and so is
  the Jumanji adapter's): it removes nothing, counts as a click and is rewarded as a click
  that removes nothing (the Gymnasium adapter refuses such actions). Under a ``jax.jit`` or
  ``jax.vmap`` of your own, with 64-bit mode off, JAX narrows a NumPy int64 action to int32
  before the env sees it, so one beyond int32 wraps round (``2**32`` clicks cell 0).
- **Reward** float32, by the rules' objective. Fewest clicks (``dust``, ``former``):
  ``rewards.clear`` (+10) for the click that empties the board, ``rewards.empty_click``
  (-10) for a click that removes nothing (a no-op), ``rewards.click`` (-1) for any other
  click. Points (``samegame``): ``(n - 2)^2`` for a group of ``n``, plus 1000 for the click
  that clears the board, 0 for a click that removes nothing (float32 holds these exactly up
  to 2^24, a group of 4,098 cells; on larger boards ``game.points(extras["removed"])``, plus
  1000 for the click that clears, gives the exact int32). Cells left (``clickomania``):
  the cells removed, so a game's return is its board's cells minus those left. ``Rewards``
  applies to the fewest-clicks rule sets only.
- **Discount** float32: 0 once the episode terminates, else 1 (truncation keeps 1, so a
  learner bootstraps through it: with auto-reset from ``extras["next_board"]``, since the
  observation is then the fresh board). With the default rewards and discount 1 a position
  ``n`` clicks from empty is worth ``10 - (n - 1)``, so ``11 - Q`` counts the clicks left.
- **Termination** when no click removes anything any more (the board is empty, or for
  ``samegame`` and ``clickomania`` no two touching cells share a colour); **truncation**
  after ``max_clicks`` clicks if set. Both give ``StepType.LAST``.
- **Auto-reset** (``auto_reset=True``): a step that ends an episode returns the state and
  observation of a fresh random board drawn from ``state.key``, with the final step's
  reward, discount and ``LAST`` step type; ``extras["next_board"]`` keeps the board the
  click produced.
- Stepping an already finished state (terminated or truncated; no auto-reset) changes
  nothing and gives reward 0 and discount 0.
- **Batches**: ``jax.vmap(env.step)`` runs ``env.step_batch`` once on the whole batch (a
  ``custom_vmap`` rule), which clicks with the batch axis last; results equal stepping
  each game alone.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxdust.core import configs, flags, game, render
from jaxdust.core.boards import parse_board, require_settled
from jaxdust.core.game import GameConfig


class StepType(enum.IntEnum):
    """Where a ``TimeStep`` stands in its episode (dm_env's and Jumanji's convention)."""

    FIRST = 0
    MID = 1
    LAST = 2


@struct.dataclass
class State:
    """One game's state (a batch under ``vmap``): its board, the clicks made so far and the
    key of its next auto-reset board."""

    board: jax.Array  # int8 [W, H]
    clicks: jax.Array  # int32 [], clicks made in this episode
    key: jax.Array  # PRNG key [] (a raw uint32 [2] key where one was given), draws the next auto-reset board

    def _repr_svg_(self) -> str | None:
        # A batch of states has no single picture; notebooks then fall back to text.
        return render.board_svg(self.board) if self.board.ndim == 2 else None


class Observation(NamedTuple):
    """What an agent sees: the board, its one-hot colours (channel 0 empty) and the legal
    clicks (cells whose group the rules let a click remove)."""

    board: jax.Array  # int8 [W, H]
    one_hot: jax.Array  # float32 [W, H, colors + 1]
    action_mask: jax.Array  # bool [W * H]


class TimeStep(NamedTuple):
    """A step's outcome, as Jumanji's: its type, the reward, the discount (0 once the game
    is over, 1 while it goes on or is cut off by ``max_clicks``), the observation, and
    ``extras``."""

    step_type: jax.Array  # int8 []
    reward: jax.Array  # float32 []
    discount: jax.Array  # float32 []
    observation: Observation
    extras: dict  # "removed": int32 [], "clicks": int32 [], "next_board": int8 [W, H]

    def first(self) -> jax.Array:
        return self.step_type == StepType.FIRST

    def mid(self) -> jax.Array:
        return self.step_type == StepType.MID

    def last(self) -> jax.Array:
        return self.step_type == StepType.LAST


@dataclasses.dataclass(frozen=True)
class Rewards:
    """Reward scheme; the defaults are the original Deep Q-learning post's."""

    clear: float = 10.0  # reward for the click that empties the board
    click: float = -1.0  # reward for any other click that removes cells
    empty_click: float = -10.0  # reward for a click that removes nothing

    def __post_init__(self):
        configs.require(self, finite=("clear", "click", "empty_click"))


def tree_bytes(tree) -> int:
    """Bytes of a pytree's arrays, a PRNG key counted as its raw data."""
    total = 0
    for leaf in jax.tree.leaves(tree):
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        total += leaf.size * leaf.dtype.itemsize
    return total


@dataclasses.dataclass(frozen=True)
class DustEnv:
    """See the module docstring for observations, actions, rewards and episode ends."""

    game: GameConfig = GameConfig()
    rewards: Rewards = Rewards()
    max_clicks: int | None = None
    auto_reset: bool = False

    def __post_init__(self):
        if not isinstance(self.game, GameConfig) or not isinstance(self.rewards, Rewards):
            raise TypeError(f"DustEnv needs a GameConfig and Rewards, got {self.game!r}, {self.rewards!r}")
        if self.max_clicks is not None and not game.is_integer(self.max_clicks):
            raise TypeError(f"max_clicks must be an int or None, got {self.max_clicks!r}")
        if self.max_clicks is not None:  # a numpy integer, as GameConfig's sizes are taken, stored as an int
            object.__setattr__(self, "max_clicks", int(self.max_clicks))
        if self.max_clicks is not None and not 1 <= self.max_clicks < flags.INT32_LIMIT:  # an int32 in the state
            raise ValueError(f"max_clicks must be >= 1 and below 2^31, or None, got {self.max_clicks}")
        if not isinstance(self.auto_reset, bool):  # a string "false" would turn it on
            raise TypeError(f"auto_reset must be True or False, got {self.auto_reset!r}")
        if self.rewards != Rewards() and game.rules_of(self.game.rules).objective != "clicks":
            # The points and cells-left rules pay their own rewards: another scheme would be
            # ignored without a word (and repr hides it).
            raise ValueError(f"rewards= applies to the fewest-clicks rules (dust, former); the {self.game.rules} "
                             f"rules pay their own rewards, got {self.rewards!r}")

    def __repr__(self) -> str:
        # The points and cells-left rules pay their own rewards: showing Rewards there would
        # suggest a click costs -1 in SameGame.
        fields = [f"game={self.game!r}"]
        if game.rules_of(self.game.rules).objective == "clicks":
            fields.append(f"rewards={self.rewards!r}")
        fields += [f"max_clicks={self.max_clicks!r}", f"auto_reset={self.auto_reset!r}"]
        return f"DustEnv({', '.join(fields)})"

    def render(self, state: State, cell_size: int = 16) -> np.ndarray:
        """One state's board as an RGB image, uint8 ``[H * cell_size, W * cell_size, 3]``
        (host-side, not jittable); ``render.game_gif`` strings such frames together."""
        if np.ndim(state.board) != 2:
            raise ValueError(f"render draws one state's board [width, height], got shape {np.shape(state.board)}: "
                             "take one game of a batch first, e.g. jax.tree.map(lambda x: x[0], state)")
        return render.board_rgb(state.board, cell_size=cell_size)

    def state_bytes(self) -> int:
        """Bytes of one game's ``State`` on a device (to size a batch to a GPU's memory)."""
        return tree_bytes(self.init(jax.random.key(0)))

    @property
    def num_actions(self) -> int:
        return self.game.num_cells

    def observation_spec(self) -> Observation:
        width, height, colors = self.game.width, self.game.height, self.game.colors
        # An Observation of shapes, not arrays, as Jumanji's specs are.
        return Observation(
            board=jax.ShapeDtypeStruct((width, height), game.BOARD_DTYPE),  # type: ignore[arg-type]
            one_hot=jax.ShapeDtypeStruct((width, height, colors + 1), jnp.float32),  # type: ignore[arg-type]
            action_mask=jax.ShapeDtypeStruct((width * height,), jnp.bool_),  # type: ignore[arg-type]
        )

    def observe(self, board: jax.Array) -> Observation:
        """The ``Observation`` of one board int ``[W, H]`` of this env's size (ValueError
        for another: its observation would not fit ``observation_spec()``)."""
        given = board
        board = game.from_lists(board)  # int8, as reset makes it (lists, numpy, another dtype)
        self._require_board_shape(np.shape(board), "env.observe: a board")
        return Observation(
            # A copy: on a CPU JAX may share a NumPy int8 array's memory, and the caller's
            # later writes would change this board but not the planes made from it.
            board=jnp.array(board, copy=True) if isinstance(given, np.ndarray) else board,
            one_hot=game.one_hot(board, self.game.colors),
            action_mask=game.legal_action_mask(board, self.game.rules).reshape(-1),
        )

    def init(self, key: jax.Array, board: jax.Array | None = None) -> State:
        """A first state: a random board from ``key``, or the given ``board``, integer
        ``[W, H]`` of this env's size (held as int8) or its text (RULES.md, ``parse_board``).
        Its shape and dtype are checked always,
        its colours (0 to ``colors``) and that it is settled under the env's rules (no cell
        above a hole, none where the sideways rule would move it) where it is not traced
        (traced, under ``jit`` or ``vmap``, a board is taken as it is: a batch started with
        ``jax.vmap(env.reset)`` is not checked, so check its boards first). ``key`` is split first,
        one half for the board and one kept in the state (auto-reset's next boards), so
        the board is not ``random_board(key)``.

        Raises:
          ValueError: a board of another shape, a colour outside 0..colors, or an unsettled board.
          TypeError: a board that is not of integers, or ``key`` not one random key.
        """
        return self._first(key, board, "init")[0]

    def _first(self, key: jax.Array, board, method: str) -> tuple[State, TimeStep]:
        game.require_key(key, f"{type(self).__name__}.{method}")
        if board is not None:
            board = self._checked_board(board)
        return _first_step(self)(key, board)

    def _checked_board(self, board) -> jax.Array:
        if isinstance(board, str):  # RULES.md's text form, as the Gymnasium adapter takes it
            board = parse_board(board, self.game.width, self.game.height, self.game.rules)
        board = game.native_byte_order(board)
        if not isinstance(board, jax.Array):  # checked at its own width: JAX narrows int64 to int32 first
            board = np.asarray(board)
        self._require_board_shape(board.shape, "board")
        if not game.holds_integers(board.dtype):
            raise TypeError(f"board must hold integers (colours 0..{self.game.colors}), got dtype {board.dtype}")
        if not isinstance(board, jax.core.Tracer):
            cells = np.asarray(board)
            bad = np.argwhere((cells < 0) | (cells > self.game.colors))
            if len(bad):
                x, y = bad[0]
                raise ValueError(f"cell ({x}, {y}) holds {cells[x, y]}; this env's colours are 0 (empty) to "
                                 f"{self.game.colors}")
            require_settled(cells, self.game.rules)
        return jnp.asarray(board).astype(game.BOARD_DTYPE)

    def _require_board_shape(self, shape: tuple[int, ...], what: str) -> None:
        """ValueError for one board of another shape than this env's ``[W, H]``."""
        if tuple(shape) != (self.game.width, self.game.height):
            raise ValueError(f"{what} of shape {tuple(shape)}, this env plays "
                             f"{(self.game.width, self.game.height)} [width, height]")

    def reset(self, key: jax.Array, board: jax.Array | None = None) -> tuple[State, TimeStep]:
        """The first state (``init``: a random board from ``key``, or ``board``) and its
        ``FIRST`` timestep. Under the points rules a board can be dealt with no group to
        remove (common on small boards of many colours: a quarter of 3x3x9 ones): its
        action mask is all False, and the first step ends the game (``LAST``, reward 0)."""
        return self._first(key, board, "reset")

    def step(self, state: State, action: jax.Array) -> tuple[State, TimeStep]:
        """One click. Under ``jax.vmap`` the whole batch is stepped at once by ``step_batch``.

        Raises:
          ValueError: for an action that is not one integer, or a batched state (a slip for
            ``jax.vmap(env.step)`` or ``step_batch``).
        """
        action = game.index_argument(action, "env.step: the action")
        if np.ndim(action) != 0 or np.ndim(state.board) != 2:
            raise ValueError(f"env.step takes one state and one action (board [W, H], action []), got board "
                             f"{np.shape(state.board)} and action {np.shape(action)}; for a batch, "
                             "jax.vmap(env.step) or env.step_batch")
        self._require_shape(state.board.shape, "env.step")
        return _batched_step(self)(state, action)

    def _require_shape(self, shape: tuple[int, ...], caller: str) -> None:
        """ValueError for boards of another size than this env's (a state from another env)."""
        if tuple(shape) != (self.game.width, self.game.height):
            raise ValueError(f"{caller}: the state's boards are {'x'.join(map(str, shape))}, this env's are "
                             f"{self.game.width}x{self.game.height} (a state from another env?)")

    def step_batch(self, states: State, actions: jax.Array) -> tuple[State, TimeStep]:
        """``step`` for a batch: states with leading axis ``[B]``, actions int32 ``[B]``;
        what ``jax.vmap(env.step)`` runs (ValueError for float or bool actions).

        The boards are clicked with the batch axis last (``game.click_cells_first``); the
        clicked colour and the occupied count come from the batch-first boards (one gather,
        one row sum); a board is cleared when the click removed every occupied cell.
        """
        actions = game.index_argument(actions, "env.step_batch: the actions")
        if np.ndim(actions) != 1 or np.ndim(states.board) != 3 or np.shape(states.board)[0] != np.shape(actions)[0]:
            raise ValueError(f"env.step_batch takes a batch of states and one action a game (board [B, W, H], "
                             f"actions [B]), got board {np.shape(states.board)} and actions {np.shape(actions)}; "
                             "for one game, env.step")
        self._require_shape(states.board.shape[1:], "env.step_batch")
        return _batch_programs(self)[0](states, actions)

    def _step_batch(self, states: State, actions: jax.Array) -> tuple[State, TimeStep]:
        """``step_batch`` after its checks."""
        num_games = actions.shape[0]
        rules = game.rules_of(self.game.rules)
        # A game past its click cap (truncated, not reset) stays as it was: its click goes
        # off the board, where it removes nothing. With auto-reset no such state exists.
        capped = None
        if self.max_clicks is not None and not self.auto_reset:
            capped = states.clicks >= self.max_clicks
            actions = jnp.where(capped, self.game.num_cells, actions)
        cells = states.board.reshape(num_games, self.game.num_cells)  # -1 fails on 0 games
        colour = jnp.take_along_axis(cells, actions[:, None], axis=1, mode="fill", fill_value=0)[:, 0]
        occupied = jnp.sum(cells != 0, axis=1, dtype=jnp.int32)
        boards_last = jnp.moveaxis(states.board, 0, -1)
        boards, removed = game.click_cells_first(boards_last, actions, colour, rules.name)
        board = jnp.moveaxis(boards, -1, 0)

        if rules.min_group == 1:  # a non-empty board always has a click
            finished_before = occupied == 0
            stuck = jnp.zeros_like(finished_before)
        else:
            finished_before = game.is_over(boards_last, rules.name)
            stuck = game.is_over(boards, rules.name) & ~finished_before
        if capped is not None:
            finished_before = finished_before | capped
        cleared = (removed == occupied) & ~finished_before
        terminated = (cleared | stuck) & ~finished_before
        clicks = states.clicks + jnp.where(finished_before, 0, 1).astype(jnp.int32)
        if rules.objective == "clicks":
            reward = jnp.where(removed == 0, self.rewards.empty_click,
                               jnp.where(cleared, self.rewards.clear, self.rewards.click))
        elif rules.objective == "points":
            reward = game.points(removed) + jnp.where(cleared, game.CLEAR_BONUS, 0)
        else:  # cells_left: the return is the cells removed, the board's cells minus those left
            reward = removed
        reward = jnp.where(finished_before, 0.0, reward).astype(jnp.float32)
        truncated = jnp.zeros_like(cleared)
        if self.max_clicks is not None:
            truncated = (clicks >= self.max_clicks) & ~terminated & ~finished_before
        last = terminated | truncated | finished_before
        extras = {"removed": removed, "clicks": clicks, "next_board": board}
        next_states = State(board=board, clicks=clicks, key=states.key)
        if self.auto_reset:
            next_states = self._reset_finished(next_states, last)
        timestep = TimeStep(
            step_type=jnp.where(last, StepType.LAST, StepType.MID).astype(jnp.int8),
            reward=reward,
            discount=jnp.where(terminated | finished_before, 0.0, 1.0).astype(jnp.float32),
            observation=jax.vmap(self.observe)(next_states.board),
            extras=extras,
        )
        return next_states, timestep

    def reset_finished(self, states: State, last: jax.Array) -> State:
        """Games whose episode ended (bool ``[B]``) restart from ``init(state.key)``: what
        ``auto_reset`` does in the step that ends them (the Gymnasium adapter's next-step
        mode calls it a step later).

        Random play ends an episode every ~30 clicks on 8x6, so only the finished games
        draw fresh boards (the threefry draws are most of a reset's cost): up to ``B // 8``
        of them are gathered, drawn and scattered back; a step with more falls back to
        drawing for every game. Both give the same states.

        Raises:
          ValueError: for one game's state (a batch of one is ``jax.tree.map(lambda x:
            x[None], state)``), or ``last`` that is not bool ``[B]`` (``timestep.last()``).
        """
        boards, last = jnp.asarray(states.board), jnp.asarray(last)
        if boards.ndim != 3 or last.shape != boards.shape[:1] or last.dtype != jnp.bool_:
            raise ValueError(f"env.reset_finished takes a batch of states (boards [B, W, H]) and bool last [B] "
                             f"(timestep.last()), got boards {boards.shape} and last {last.dtype}{list(last.shape)}; "
                             "one game is a batch of one: jax.tree.map(lambda x: x[None], state)")
        self._require_shape(boards.shape[1:], "env.reset_finished")
        return _batch_programs(self)[1](states, last)

    def _reset_finished(self, states: State, last: jax.Array) -> State:
        """``reset_finished`` after its checks."""
        num_games = last.shape[0]
        capacity = num_games // 8

        def every(states: State) -> State:
            fresh = jax.vmap(self.init)(states.key)
            return jax.tree.map(lambda new, old: jnp.where(_per_game(last, new), new, old), fresh, states)

        if capacity == 0:
            return every(states)

        def few(states: State) -> State:
            (finished,) = jnp.nonzero(last, size=capacity, fill_value=num_games)
            fresh = jax.vmap(self.init)(states.key[jnp.minimum(finished, num_games - 1)])
            return jax.tree.map(lambda old, new: old.at[finished].set(new, mode="drop"), states, fresh)

        return jax.lax.cond(jnp.sum(last, dtype=jnp.int32) <= capacity, few, every, states)


def _per_game(flags: jax.Array, like: jax.Array) -> jax.Array:
    """``flags [B]`` shaped to broadcast against ``like [B, ...]``."""
    return flags.reshape(flags.shape + (1,) * (like.ndim - 1))


@functools.lru_cache(maxsize=64)  # bounded: a process sweeping many configurations keeps the newest
def _first_step(env: DustEnv):
    """``env.reset`` after its checks, jitted so that a reset called outside ``jit`` runs as
    one program (eagerly, op by op, it cost ~12 steps on a CPU). ``key`` is split first:
    one half draws the board (when none is given), the other is kept in the state."""

    def first(key: jax.Array, board: jax.Array | None) -> tuple[State, TimeStep]:
        board_key, key = jax.random.split(key)
        if board is None:
            board = game.random_board(board_key, env.game)
        state = State(board=board, clicks=jnp.int32(0), key=key)
        return state, TimeStep(
            step_type=jnp.int8(StepType.FIRST),
            reward=jnp.float32(0.0),
            discount=jnp.float32(1.0),
            observation=env.observe(state.board),
            extras={"removed": jnp.int32(0), "clicks": state.clicks, "next_board": state.board},
        )

    return jax.jit(game.standard_numpy(first))


@functools.lru_cache(maxsize=64)
def _batch_programs(env: DustEnv):
    """``env.step_batch`` and ``env.reset_finished`` after their checks, jitted so that a
    call outside ``jit`` compiles once per configuration and batch (op by op, each eager call
    compiled its loops again: ~0.1 s a step, ~1.5 s a reset on a CPU); inside a jit they
    are inlined."""
    return jax.jit(game.standard_numpy(env._step_batch)), jax.jit(game.standard_numpy(env._reset_finished))


@functools.lru_cache(maxsize=64)
def _batched_step(env: DustEnv):
    """``env.step`` as a jitted ``custom_vmap``: alone it is a batch of one; under ``vmap``
    the whole batch goes to ``env.step_batch`` (unmapped arguments broadcast). Jitted so
    that a step called outside ``jit`` compiles once per configuration (unjitted, each such
    call compiled its loops again: ~45 ms a step on a CPU)."""

    def step_one(state: State, action: jax.Array):
        states, actions = jax.tree.map(lambda leaf: leaf[None], (state, jnp.asarray(action, jnp.int32)))
        return jax.tree.map(lambda leaf: leaf[0], env.step_batch(states, actions))

    stepper = jax.custom_batching.custom_vmap(game.standard_numpy(step_one))

    @stepper.def_vmap
    def _rule(axis_size: int, in_batched, state: State, action: jax.Array):
        state, action = jax.tree.map(
            lambda leaf, batched: leaf if batched else jnp.broadcast_to(leaf, (axis_size,) + leaf.shape),
            (state, action),
            tuple(in_batched),
        )
        outputs = env.step_batch(state, jnp.asarray(action, jnp.int32))
        return outputs, jax.tree.map(lambda _: True, outputs)

    return jax.jit(stepper)
