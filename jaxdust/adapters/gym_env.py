"""The dust game under Gymnasium's API: ``DustGymEnv`` (one game) and ``DustVectorEnv``
(many games, stepped as one batched, jitted JAX call: no Python loop per game).

    env = DustGymEnv("Dust-8x6x5-v0", render_mode="rgb_array")
    obs, info = env.reset(seed=0)      # or gymnasium.make("jaxdust/Dust-8x6x5-v0") once imported
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample(mask=info["action_mask"]))

Observations are the board, int8 ``[W, H]`` (0 empty, 1..colours); actions click cell
``(a // H, a % H)``, and an action outside ``Discrete(W * H)`` is refused (ValueError);
``info["action_mask"]`` (int8 ``[W * H]``, 1 where a click removes something under the
id's rules, the form ``Discrete.sample(mask=...)`` takes) says which clicks are legal.
Rewards as ``jaxdust.DustEnv`` for the id's rules (the dust game: -1 per click, +10 for
the click that clears the board, -10 for a click that removes nothing; SameGame: the
points). ``terminated``: no click removes anything any more (for the dust game, the board
is clear); ``truncated``: the env's click cap.
The vector env resets finished games in the same step (``AutoresetMode.SAME_STEP``): the
final board is in ``info["final_obs"]`` where ``info["_final_obs"]`` is set.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError as error:  # an optional extra
    raise ImportError('the Gymnasium adapter needs gymnasium: pip install "jaxdust[gymnasium]"') from error

from jaxdust.core import game
from jaxdust.core.boards import parse_board
from jaxdust.core.env import DustEnv
from jaxdust.core.registry import as_env, registered


def _check_render_mode(render_mode: str | None) -> None:
    if render_mode not in (None, "rgb_array"):
        raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")


def _info(timestep, clicks=np.asarray) -> dict:
    """Legal clicks and clicks made (as ``clicks`` makes them: an int for one game), of one
    game or, batched, of each."""
    return {"action_mask": np.asarray(timestep.observation.action_mask, np.int8),
            "clicks": clicks(timestep.extras["clicks"])}


def _board_space(env: DustEnv) -> spaces.Box:
    return spaces.Box(0, env.game.colors, (env.game.width, env.game.height), np.int8)


def _checked_actions(actions, count: int) -> np.ndarray:
    """``actions`` as int32, or ValueError for any that is not a whole number in
    ``[0, count)`` (the JAX env itself turns those into no-ops under ``jit``)."""
    array = np.asarray(actions)
    if not (np.issubdtype(array.dtype, np.integer) or (np.issubdtype(array.dtype, np.floating)
                                                       and np.all(array == np.round(array)))):
        raise ValueError(f"actions must be integers in Discrete({count}), got {actions!r}")
    if np.any((array < 0) | (array >= count)):
        raise ValueError(f"action {actions!r} is outside Discrete({count}): cells are 0..{count - 1}")
    return array.astype(np.int32)


def _seed_key(rng: np.random.Generator) -> jax.Array:
    """A JAX key drawn from Gymnasium's seeded generator, so ``reset(seed=s)`` repeats."""
    return jax.random.key(int(rng.integers(2**31)))


class DustGymEnv(gymnasium.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, env: DustEnv | str = "Dust-8x6x5-v0", render_mode: str | None = None):
        _check_render_mode(render_mode)
        self.env = dataclasses.replace(as_env(env), auto_reset=False)
        self.render_mode = render_mode
        self.observation_space = _board_space(self.env)
        self.action_space = spaces.Discrete(self.env.game.num_cells)
        self._reset = jax.jit(self.env.reset)
        self._step = jax.jit(self.env.step)
        self._state = None
        self._ended = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """``options={"board": ...}`` starts from that board (anything ``parse_board`` takes;
        text is read at this env's size), settled under its rules, of its size and colours."""
        super().reset(seed=seed)
        board = (options or {}).get("board")
        if board is not None:
            width, height = self.observation_space.shape
            board = parse_board(board, *((width, height) if isinstance(board, str) else ()), rules=self.env.game.rules)
            board = self.env.init(jax.random.key(0), board).board  # ValueError: another shape, a colour too high
        self._state, timestep = self._reset(_seed_key(self.np_random), board)
        self._ended = False
        return np.asarray(timestep.observation.board), _info(timestep, int)

    def step(self, action):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        if self._ended:  # a finished game's discount is 0: a truncated one would read as terminated
            raise RuntimeError("the episode has ended (terminated or truncated): call reset() before step()")
        action = _checked_actions(action, self.env.game.num_cells)
        if action.shape:
            raise ValueError(f"one action per step, got {action.shape} of them")
        self._state, timestep = self._step(self._state, jnp.int32(action))
        last, cleared = bool(timestep.step_type == 2), bool(timestep.discount == 0)
        self._ended = last
        return (np.asarray(timestep.observation.board), float(timestep.reward), last and cleared,
                last and not cleared, _info(timestep, int))

    def render(self):
        if self.render_mode == "rgb_array" and self._state is not None:
            return self.env.render(self._state)
        return None

    def action_masks(self) -> np.ndarray:
        """Legal clicks, bool ``[W * H]`` (the method maskable agents, e.g. sb3-contrib's, call)."""
        if self._state is None:
            raise RuntimeError("call reset() before action_masks()")
        return np.asarray(self.env.observe(self._state.board).action_mask)



class DustVectorEnv(VectorEnv):
    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int, env: DustEnv | str = "Dust-8x6x5-v0", render_mode: str | None = None):
        if not game.is_integer(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        num_envs = int(num_envs)
        _check_render_mode(render_mode)
        self.env = dataclasses.replace(as_env(env), auto_reset=True)
        self.num_envs = num_envs
        self.render_mode = render_mode
        self.single_observation_space = _board_space(self.env)
        self.single_action_space = spaces.Discrete(self.env.game.num_cells)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._reset = jax.jit(jax.vmap(self.env.reset))
        self._step = jax.jit(jax.vmap(self.env.step))
        self._state = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        keys = jax.random.split(_seed_key(self.np_random), self.num_envs)
        self._state, timestep = self._reset(keys)
        return np.asarray(timestep.observation.board), _info(timestep)

    def step(self, actions):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        actions = _checked_actions(actions, self.env.game.num_cells)
        if actions.size != self.num_envs:
            raise ValueError(f"{self.num_envs} actions per step, got {actions.size}")
        actions = actions.reshape(self.num_envs)
        self._state, timestep = self._step(self._state, jnp.asarray(actions))
        last = np.asarray(timestep.step_type) == 2
        cleared = np.asarray(timestep.discount) == 0
        info = _info(timestep)
        if last.any():
            info["final_obs"] = np.asarray(timestep.extras["next_board"])
            info["_final_obs"] = last
        return (np.asarray(timestep.observation.board), np.asarray(timestep.reward), last & cleared,
                last & ~cleared, info)

    def render(self):
        if self.render_mode == "rgb_array" and self._state is not None:
            return [self.env.render(jax.tree.map(lambda leaf: leaf[i], self._state)) for i in range(self.num_envs)]
        return None



# gymnasium.make("jaxdust/Dust-8x6x5-v0") and gymnasium.make_vec(..., num_envs=N): every
# registered size, single and vector.
for _env_id in registered():
    if f"jaxdust/{_env_id}" not in gymnasium.registry:
        gymnasium.register(f"jaxdust/{_env_id}", entry_point=DustGymEnv, vector_entry_point=DustVectorEnv,
                           kwargs={"env": _env_id})
