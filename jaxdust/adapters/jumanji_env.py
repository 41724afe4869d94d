"""``DustJumanji``: the dust game as a ``jumanji.Environment`` with ``jumanji.specs``.

    from jumanji.wrappers import AutoResetWrapper, VmapWrapper
    env = VmapWrapper(AutoResetWrapper(DustJumanji("Dust-8x6x5-v0")))

Everything is ``jaxdust.DustEnv`` underneath (same state, observation and rewards); only
the time step becomes Jumanji's and the specs Jumanji's. Episodes end (``LAST``) when no
click removes anything any more (the board is cleared, or for SameGame and Clickomania no
group of 2 is left; discount 0) or after the env's click cap (discount 1: a truncation).
"""

from __future__ import annotations

from functools import cached_property

import jax
import numpy as np

try:
    import jumanji
except ModuleNotFoundError as error:  # an optional extra
    if error.name != "jumanji":
        raise
    raise ImportError('the Jumanji adapter needs jumanji: pip install -e ".[jumanji]" in a checkout') from error
from jumanji import specs
from jumanji.types import TimeStep

from jaxdust.core.env import DustEnv, Observation, State
from jaxdust.core.registry import as_env


class DustJumanji(jumanji.Environment[State, specs.DiscreteArray, Observation]):
    def __init__(self, env: DustEnv | str = "Dust-8x6x5-v0"):
        self.env = as_env(env)
        if self.env.auto_reset:
            raise ValueError("pass a DustEnv without auto_reset: Jumanji's AutoResetWrapper does the resets")
        super().__init__()

    def __repr__(self) -> str:
        return f"DustJumanji({self.env})"

    def reset(self, key: jax.Array) -> tuple[State, TimeStep[Observation]]:
        state, timestep = self.env.reset(key)
        return state, _jumanji_timestep(timestep)

    def step(self, state: State, action: jax.Array) -> tuple[State, TimeStep[Observation]]:
        state, timestep = self.env.step(state, action)
        return state, _jumanji_timestep(timestep)

    # The specs' dtypes are numpy's scalar types, as Jumanji types them (the same dtypes as jnp's).
    @cached_property
    def observation_spec(self) -> specs.Spec[Observation]:
        game = self.env.game
        return specs.Spec(
            Observation, "ObservationSpec",
            board=specs.BoundedArray((game.width, game.height), np.int8, 0, game.colors, "board"),
            one_hot=specs.BoundedArray((game.width, game.height, game.colors + 1), np.float32, 0.0, 1.0, "one_hot"),
            action_mask=specs.BoundedArray((game.num_cells,), bool, False, True, "action_mask"),
        )

    @cached_property
    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(self.env.game.num_cells, name="action", dtype=np.int32)

    @cached_property
    def reward_spec(self) -> specs.Array:
        return specs.Array((), np.float32, "reward")

    @cached_property
    def discount_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((), np.float32, 0.0, 1.0, "discount")

    def render(self, state: State) -> np.ndarray:
        return self.env.render(state)


def _jumanji_timestep(timestep) -> TimeStep:
    return TimeStep(step_type=timestep.step_type, reward=timestep.reward, discount=timestep.discount,
                    observation=timestep.observation, extras=timestep.extras)
