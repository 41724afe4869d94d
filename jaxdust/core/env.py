"""The dust game as a reinforcement-learning environment (Jumanji-style, fully jittable).

``DustEnv`` is a frozen dataclass: hashable, so ``jax.jit(env.step)`` compiles once per
configuration, and ``jax.vmap(env.step)`` steps thousands of games in lockstep.

- **Observation** ``Observation``: ``board`` int8 ``[W, H]``; ``one_hot`` float32
  ``[W, H, colors + 1]`` (channel 0 marks empty cells); ``action_mask`` bool ``[W * H]``,
  True on occupied cells.
- **Action** int32 scalar in ``[0, W * H)``: click cell ``(a // H, a % H)``.
- **Reward** float32: ``rewards.clear`` (+10) for the click that empties the board,
  ``rewards.empty_click`` (-10) for a click on an empty cell (a no-op), ``rewards.click``
  (-1) for any other click.
- **Discount** float32: 0 once the board is cleared, else 1 (truncation keeps 1, so a
  learner bootstraps through it). With ``-1`` per click and discount 1, ``-Q`` counts the
  clicks left.
- **Termination** when the board is empty; **truncation** after ``max_clicks`` clicks if
  set. Both give ``StepType.LAST``.
- **Auto-reset** (``auto_reset=True``): a step that ends an episode returns the state and
  observation of a fresh random board drawn from ``state.key``, with the final step's
  reward, discount and ``LAST`` step type; ``extras["next_board"]`` keeps the board the
  click produced.
- Stepping an already finished state (no auto-reset) changes nothing and gives reward 0.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxdust.core import configs, game, render
from jaxdust.core.game import GameConfig


class StepType(enum.IntEnum):
    FIRST = 0
    MID = 1
    LAST = 2


@struct.dataclass
class State:
    board: jax.Array  # int8 [W, H]
    clicks: jax.Array  # int32 [], clicks made in this episode
    key: jax.Array  # PRNG key [], draws the next auto-reset board

    def _repr_svg_(self) -> str | None:
        # A batch of states has no single picture; notebooks then fall back to text.
        return render.board_svg(self.board) if self.board.ndim == 2 else None


class Observation(NamedTuple):
    board: jax.Array  # int8 [W, H]
    one_hot: jax.Array  # float32 [W, H, colors + 1]
    action_mask: jax.Array  # bool [W * H]


class TimeStep(NamedTuple):
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

    clear: float = 10.0
    click: float = -1.0
    empty_click: float = -10.0

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
        if self.max_clicks is not None and (not isinstance(self.max_clicks, int) or isinstance(self.max_clicks, bool)):
            raise TypeError(f"max_clicks must be an int or None, got {self.max_clicks!r}")
        if self.max_clicks is not None and self.max_clicks < 1:
            raise ValueError(f"max_clicks must be >= 1 or None, got {self.max_clicks}")

    def render(self, state: State, cell_size: int = 16) -> np.ndarray:
        """One state's board as an RGB image, uint8 ``[H * cell_size, W * cell_size, 3]``
        (host-side, not jittable); ``render.game_gif`` strings such frames together."""
        return render.board_rgb(state.board, cell_size=cell_size)

    def state_bytes(self) -> int:
        """Bytes of one game's ``State`` on a device (to size a batch to a GPU's memory)."""
        return tree_bytes(self.init(jax.random.key(0)))

    @property
    def num_actions(self) -> int:
        return self.game.num_cells

    def observation_spec(self) -> Observation:
        width, height, colors = self.game.width, self.game.height, self.game.colors
        return Observation(
            board=jax.ShapeDtypeStruct((width, height), game.BOARD_DTYPE),
            one_hot=jax.ShapeDtypeStruct((width, height, colors + 1), jnp.float32),
            action_mask=jax.ShapeDtypeStruct((width * height,), jnp.bool_),
        )

    def observe(self, board: jax.Array) -> Observation:
        return Observation(
            board=board,
            one_hot=game.one_hot(board, self.game.colors),
            action_mask=game.legal_action_mask(board).reshape(-1),
        )

    def init(self, key: jax.Array, board: jax.Array | None = None) -> State:
        """A first state: a random board from ``key``, or the given ``board``."""
        board_key, key = jax.random.split(key)
        if board is None:
            board = game.random_board(board_key, self.game)
        return State(board=board, clicks=jnp.int32(0), key=key)

    def reset(self, key: jax.Array, board: jax.Array | None = None) -> tuple[State, TimeStep]:
        state = self.init(key, board)
        timestep = TimeStep(
            step_type=jnp.int8(StepType.FIRST),
            reward=jnp.float32(0.0),
            discount=jnp.float32(1.0),
            observation=self.observe(state.board),
            extras={"removed": jnp.int32(0), "clicks": state.clicks, "next_board": state.board},
        )
        return state, timestep

    def step(self, state: State, action: jax.Array) -> tuple[State, TimeStep]:
        board, removed = game.click_action(state.board, action)
        finished_before = game.is_done(state.board)
        cleared = game.is_done(board) & ~finished_before
        clicks = state.clicks + jnp.where(finished_before, 0, 1).astype(jnp.int32)
        reward = jnp.where(
            removed == 0,
            self.rewards.empty_click,
            jnp.where(cleared, self.rewards.clear, self.rewards.click),
        )
        reward = jnp.where(finished_before, 0.0, reward).astype(jnp.float32)
        truncated = jnp.bool_(False)
        if self.max_clicks is not None:
            truncated = (clicks >= self.max_clicks) & ~cleared & ~finished_before
        last = cleared | truncated | finished_before
        extras = {"removed": removed, "clicks": clicks, "next_board": board}
        next_state = State(board=board, clicks=clicks, key=state.key)
        if self.auto_reset:
            fresh = self.init(state.key)
            next_state = jax.tree.map(lambda new, old: jnp.where(last, new, old), fresh, next_state)
        timestep = TimeStep(
            step_type=jnp.where(last, StepType.LAST, StepType.MID).astype(jnp.int8),
            reward=reward,
            discount=jnp.where(cleared | finished_before, 0.0, 1.0).astype(jnp.float32),
            observation=self.observe(next_state.board),
            extras=extras,
        )
        return next_state, timestep
