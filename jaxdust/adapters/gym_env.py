"""The dust game under Gymnasium's API: ``DustGymEnv`` (one game) and ``DustVectorEnv``
(many games, stepped as one batched, jitted JAX call: no Python loop per game).

    env = DustGymEnv("Dust-8x6x5-v0", render_mode="rgb_array")
    obs, info = env.reset(seed=0)      # or gymnasium.make("jaxdust/Dust-8x6x5-v0") once imported
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample(mask=info["action_mask"]))

Observations are the board, int8 ``[W, H]`` (0 empty, 1..colours); actions click cell
``(a // H, a % H)``, and an action that is not an integer in ``Discrete(W * H)`` is refused
(ValueError); ``info["action_mask"]`` (int8 ``[W * H]``, 1 where a click removes something
under the id's rules, the form ``Discrete.sample(mask=...)`` takes) says which clicks are
legal. Rewards as ``jaxdust.DustEnv`` for the id's rules (the dust game: -1 per click, +10
for the click that clears the board, -10 for a click that removes nothing; SameGame: the
points; Clickomania: the cells removed). ``terminated``: no click removes anything any
more (for the dust game, the board is clear); ``truncated``: the env's click cap. Arrays
returned are the caller's own (writable copies). ``render_mode``: ``"rgb_array"`` (uint8
``[H * 16, W * 16, 3]``) or ``"ansi"`` (the board as letters, top row first, ``A`` for
colour 1, ``.`` empty); a vector env renders a tuple, a frame a game.

The vector env resets finished games as Gymnasium's ``SyncVectorEnv`` of ``DustGymEnv``
does in the same mode (``autoreset_mode``), and ``reset(seed=s)`` gives game ``i`` the board
``DustGymEnv.reset(seed=s + i)`` gives, as ``SyncVectorEnv`` seeds its envs (the boards
dealt when a game restarts by itself come from the vector env's own key, so they are not
those a ``SyncVectorEnv`` would deal):

- ``"same_step"`` (the default): the step that ends a game returns its fresh board; the
  final board is ``info["final_obs"]`` and the final info ``info["final_info"]`` where
  ``info["_final_obs"]`` is set.
- ``"next_step"``: the step that ends a game returns its final board, and the next step
  restarts it (that step's action is ignored; reward 0). Gymnasium's vector
  ``NormalizeObservation`` takes only this mode:
  ``gymnasium.make_vec(id, num_envs=N, autoreset_mode="next_step")``.
- ``"disabled"``: nothing restarts by itself; ``reset(options={"reset_mask": m})`` (bool
  ``[N]``) restarts the games ``m`` selects, and stepping a finished game that was not
  restarted is a RuntimeError.

Each env's programs are compiled once per configuration and mode, not per instance (a
``SyncVectorEnv`` of many single envs shares them); those of the ``PROGRAMS_KEPT``
configurations used last are kept.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

try:
    import gymnasium
except ModuleNotFoundError as error:  # an optional extra
    if error.name != "gymnasium":
        raise
    raise ImportError('the Gymnasium adapter needs gymnasium: pip install -e ".[gymnasium]" in a checkout') from error
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from jaxdust.core import game, render
from jaxdust.core.boards import parse_board
from jaxdust.core.env import DustEnv, State
from jaxdust.core.registry import as_env, make, registered

AUTORESET_MODES = (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED)
# Configurations whose compiled programs are kept: a sweep over many (each max_clicks is
# one) drops the least recently used rather than holding every one's programs.
PROGRAMS_KEPT = 32


RENDER_MODES = ("rgb_array", "ansi")  # a picture, uint8 [H * 16, W * 16, 3]; the board as letters


def _check_render_mode(render_mode: str | None) -> None:
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(f"render_mode must be None, {' or '.join(map(repr, RENDER_MODES))}, got {render_mode!r}")


def _rendered(env: DustEnv, render_mode: str | None, state):
    """One game's frame in ``render_mode``: an RGB picture, or the board as letters
    (``render.board_letters``: top row first, colour 1 is ``A``, ``.`` empty)."""
    if render_mode == "rgb_array":
        return env.render(state)
    return render.board_letters(state.board) + "\n"


def _env(env: DustEnv | str, overrides: dict, resets: str) -> DustEnv:
    """The ``DustEnv`` an adapter wraps: ``env``, or the registered id with ``overrides``
    (``DustEnv`` fields, e.g. ``gymnasium.make("jaxdust/Dust-8x6x5-v0", max_clicks=20)``).
    ValueError for one with ``auto_reset``: ``resets`` says what restarts games instead
    (dropping it without a word let a user think the env reset itself)."""
    if overrides and not isinstance(env, str):
        raise ValueError(f"{', '.join(sorted(overrides))}: such settings apply to a registered id, not to a "
                         f"DustEnv (use dataclasses.replace on it)")
    wrapped = make(env, **overrides) if isinstance(env, str) else as_env(env)
    if wrapped.auto_reset:
        raise ValueError(f"pass a DustEnv without auto_reset: {resets}")
    return wrapped


def _board_space(env: DustEnv) -> spaces.Box:
    return spaces.Box(0, env.game.colors, (env.game.width, env.game.height), np.int8)


NO_RENDER_MODE = ("render() was called with no render_mode: make the env with one, e.g. "
                  "render_mode=\"rgb_array\" or \"ansi\"")


def _can_render(env: DustGymEnv | DustVectorEnv) -> bool:
    """Whether either adapter has a render mode and a game to render; without a mode it warns,
    as Gymnasium's own envs do."""
    if env.render_mode is None:
        gymnasium.logger.warn(NO_RENDER_MODE)
    return env.render_mode is not None and env._state is not None


def _checked_actions(actions, count: int, num_envs: int | None = None) -> np.ndarray:
    """``actions`` as int32: a scalar (``num_envs`` None, the single env) or ``[num_envs]``
    (a vector env). ValueError, in one line, for another shape or any action that is not an
    integer in ``[0, count)`` (the JAX env itself turns those into no-ops under ``jit``)."""
    array = np.asarray(actions)
    # Python ints beyond int64 make an array of objects: out of range, not "not integers"
    python_ints = array.dtype == object and all(type(item) is int for item in array.flat)
    if not (python_ints or np.issubdtype(array.dtype, np.integer)):
        got = f"an array of {array.dtype}" if array.ndim else repr(actions)
        raise ValueError(f"actions must be integers in Discrete({count}), got {got}")
    if num_envs is None and array.shape:
        raise ValueError(f"one action per step (a scalar), got an array of shape {array.shape}")
    if num_envs is not None and array.shape != (num_envs,):  # the action space's shape, as SyncVectorEnv's
        got = f"{array.size}" if array.ndim == 1 else f"an array of shape {array.shape}"
        raise ValueError(f"{num_envs} actions per step, shaped ({num_envs},), got {got}")
    if python_ints:
        outside = np.flatnonzero([not 0 <= item < count for item in array.flat])
    else:
        outside = np.flatnonzero((array < 0) | (array >= count))
    if outside.size and num_envs is None:
        raise ValueError(f"action {array.flat[0]} is outside Discrete({count}): cells are 0..{count - 1}")
    if outside.size:  # one named: thousands of games' actions would print over many lines
        more = f" (and {outside.size - 1} more)" if outside.size > 1 else ""
        raise ValueError(f"game {outside[0]}'s action {array[outside[0]]}{more} is outside Discrete({count}): "
                         f"cells are 0..{count - 1}")
    return array.astype(np.int32)


def _clicks(counts) -> np.ndarray:
    """Click counts as ``SyncVectorEnv`` gathers the single env's Python ints: int64."""
    return np.asarray(counts, np.int64)


def _seed_int(rng: np.random.Generator) -> int:
    """A seed drawn from Gymnasium's seeded generator, so ``reset(seed=s)`` repeats."""
    return int(rng.integers(2**31))


def _seed_key(rng: np.random.Generator) -> jax.Array:
    """``jax.random.key`` of ``_seed_int(rng)``."""
    return jax.random.key(_seed_int(rng))


@jax.jit
def _keys(seeds: jax.Array) -> jax.Array:
    """``jax.random.key`` of each seed, int32 ``[N]`` below 2^31 (the same keys)."""
    return jax.vmap(jax.random.key)(seeds)


def _options(options, allowed: tuple[str, ...]) -> dict:
    """``reset``'s ``options`` as a dict of the ``allowed`` names; ValueError otherwise."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ValueError(f"reset's options must be a dict (e.g. {{'board': ...}}), got {options!r}")
    unknown = sorted(set(options) - set(allowed), key=str)
    if unknown:
        raise ValueError(f"reset takes the options {', '.join(map(repr, allowed))} only, got {unknown}")
    return options


def _start_board(env: DustEnv, board) -> jax.Array | None:
    """The board ``reset``'s ``options={"board": ...}`` asks for (anything ``parse_board``
    takes; text is read at the env's size), settled under its rules, of its size and
    colours, with a legal click; None for a random board."""
    if board is None:
        return None
    config = env.game
    board = (parse_board(board, config.width, config.height, config.rules) if isinstance(board, str)
             else parse_board(board, rules=config.rules))
    board = env.init(jax.random.key(0), board).board  # ValueError: another shape, a colour too high
    if not np.asarray(env.observe(board).action_mask).any():
        raise ValueError(f"the board's game is over already: no click removes anything under the "
                         f"{config.rules!r} rules")
    return board


@functools.lru_cache(maxsize=PROGRAMS_KEPT)
def _single_programs(env: DustEnv):
    """``DustGymEnv``'s jitted reset and step: one pair per configuration."""
    return jax.jit(env.reset), jax.jit(env.step)


@functools.lru_cache(maxsize=PROGRAMS_KEPT)
def _vector_programs(env: DustEnv, mode: AutoresetMode):
    """``DustVectorEnv``'s jitted reset and step for ``mode``: one pair per configuration.
    ``env`` (without ``auto_reset``: the adapters refuse it) restarts its games itself in
    the same step for ``same_step``."""
    env = dataclasses.replace(env, auto_reset=mode == AutoresetMode.SAME_STEP)

    def reset(keys, board):
        states, timestep = jax.vmap(env.reset, in_axes=(0, None))(keys, board)
        return states, timestep.observation.action_mask

    def masks(boards, which):
        """Legal clicks of ``boards``, labelled only in a step where some game is ``which``
        (bool ``[B]``); all False in the others."""
        return jax.lax.cond(which.any(), lambda: jax.vmap(env.observe)(boards).action_mask,
                            lambda: jnp.zeros((boards.shape[0], env.game.num_cells), bool))

    def same_step(states, actions):
        """Steps every game; ``env`` restarts the finished ones (``auto_reset``). A
        terminated game has no legal click left, so only a truncated one's final board is
        labelled."""
        states, timestep = jax.vmap(env.step)(states, actions)
        ended = timestep.step_type == 2
        terminated, truncated = ended & (timestep.discount == 0), ended & (timestep.discount == 1)
        final_mask = masks(timestep.extras["next_board"], truncated) & truncated[:, None]
        return (states, states.board, timestep.reward, terminated, truncated, timestep.observation.action_mask,
                states.clicks, timestep.extras["next_board"], final_mask, timestep.extras["clicks"])

    def next_step(previous, actions, restart):
        """Restarts the games that ended last step (``env.reset_finished``, as
        ``auto_reset`` would have) and steps the others (``disabled``: ``restart`` is all
        False)."""
        stepped, timestep = jax.vmap(env.step)(previous, actions)
        states = env.reset_finished(stepped, restart)
        mask = jnp.where(restart[:, None], masks(states.board, restart), timestep.observation.action_mask)
        ended = (timestep.step_type == 2) & ~restart
        return (states, states.board, jnp.where(restart, 0.0, timestep.reward),
                ended & (timestep.discount == 0), ended & (timestep.discount == 1), mask, states.clicks)

    return jax.jit(reset), jax.jit(same_step if mode == AutoresetMode.SAME_STEP else next_step)


class _Compiled:
    """Keeps the jitted functions out of pickles (they cannot be pickled) and makes them
    again on unpickling."""

    def _compile(self) -> None:
        raise NotImplementedError

    def __getstate__(self) -> dict:
        return {name: value for name, value in self.__dict__.items() if not name.startswith("_jit_")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._compile()


class DustGymEnv(_Compiled, gymnasium.Env):
    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 2}

    def __init__(self, env: DustEnv | str = "Dust-8x6x5-v0", render_mode: str | None = None, **overrides):
        """``overrides``: ``DustEnv`` fields changed from the registered id's (``max_clicks``,
        ``rewards``)."""
        _check_render_mode(render_mode)
        self.env = _env(env, overrides, "Gymnasium restarts a game with reset() (a vector env: autoreset_mode)")
        self.render_mode = render_mode
        self.observation_space = _board_space(self.env)
        self.action_space = spaces.Discrete(self.env.game.num_cells)
        self._state: State | None = None
        self._ended = False
        self._compile()

    def _compile(self) -> None:
        self._jit_reset, self._jit_step = _single_programs(self.env)

    def _info(self, timestep) -> dict:
        return {"action_mask": np.array(timestep.observation.action_mask, np.int8),
                "clicks": int(timestep.extras["clicks"])}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """``options={"board": ...}`` starts from that board (anything ``parse_board`` takes;
        text is read at this env's size), settled under its rules, of its size and colours,
        with a click left to make."""
        board = _start_board(self.env, _options(options, ("board",)).get("board"))
        super().reset(seed=seed)  # after the checks: a refused reset leaves the generator as it was
        self._state, timestep = self._jit_reset(_seed_key(self.np_random), board)
        self._ended = False
        return np.array(timestep.observation.board), self._info(timestep)

    def step(self, action):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        if self._ended:  # a finished game's discount is 0: a truncated one would read as terminated
            raise RuntimeError("the episode has ended (terminated or truncated): call reset() before step()")
        action = _checked_actions(action, self.env.game.num_cells)
        self._state, timestep = self._jit_step(self._state, jnp.int32(action))
        last, cleared = bool(timestep.step_type == 2), bool(timestep.discount == 0)
        self._ended = last
        return (np.array(timestep.observation.board), float(timestep.reward), last and cleared,
                last and not cleared, self._info(timestep))

    def render(self):
        if not _can_render(self):
            return None
        return _rendered(self.env, self.render_mode, self._state)

    def action_masks(self) -> np.ndarray:
        """Legal clicks, bool ``[W * H]`` (the method maskable agents, e.g. sb3-contrib's, call)."""
        if self._state is None:
            raise RuntimeError("call reset() before action_masks()")
        return np.array(self.env.observe(self._state.board).action_mask)


class DustVectorEnv(_Compiled, VectorEnv):
    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 2, "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int, env: DustEnv | str = "Dust-8x6x5-v0", render_mode: str | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP, max_episode_steps: int | None = None,
                 **overrides):
        """``overrides``: ``DustEnv`` fields changed from the registered id's (``max_clicks``,
        ``rewards``). ``max_episode_steps``: Gymnasium's time limit (``make_vec`` passes it
        here; -1 or None: none): a game is truncated at that step or at the env's own cap,
        ``max_clicks``, whichever comes first, as ``TimeLimit`` over a ``DustGymEnv`` truncates it
        (but a game that clears on its last allowed step is ``terminated`` only, where
        ``TimeLimit`` says ``truncated`` too)."""
        if not game.is_integer(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if max_episode_steps == -1:  # Gymnasium's word for no TimeLimit
            max_episode_steps = None
        if max_episode_steps is not None and (not game.is_integer(max_episode_steps) or max_episode_steps < 1):
            raise ValueError(f"max_episode_steps must be a positive integer, -1 or None, got {max_episode_steps!r}")
        _check_render_mode(render_mode)
        mode: AutoresetMode | str | None = autoreset_mode
        if isinstance(autoreset_mode, str):  # "NextStep" (the enum's value) or "next_step"
            named = {m.value.lower(): m for m in AutoresetMode}
            mode = named.get(autoreset_mode.replace("_", "").lower())
        if mode not in AUTORESET_MODES:
            raise ValueError(f"autoreset_mode must be one of {[m.value for m in AUTORESET_MODES]} (or "
                             f"'same_step', 'next_step', 'disabled'), got {autoreset_mode!r}")
        self.autoreset_mode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self.env = _env(env, overrides, "autoreset_mode says how a finished game restarts")
        cap = self.env.max_clicks  # None: no cap of its own
        if max_episode_steps is not None and (cap is None or max_episode_steps < cap):
            self.env = dataclasses.replace(self.env, max_clicks=int(max_episode_steps))
        self.num_envs = int(num_envs)
        self.render_mode = render_mode
        self.single_observation_space = _board_space(self.env)
        self.single_action_space = spaces.Discrete(self.env.game.num_cells)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._state: State | None = None  # the games' states, batched
        # next_step: games that ended last step, restarted by this one; disabled: games
        # ended and not yet reset (a step on them is refused).
        self._restart = np.zeros(self.num_envs, bool)
        self._compile()

    def _compile(self) -> None:
        self._jit_reset, self._jit_step = _vector_programs(self.env, self.autoreset_mode)

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        """``seed``: one int ``s`` (game ``i`` gets ``s + i``, as in ``SyncVectorEnv``), or
        one non-negative int or None per game (a None game's board is drawn from the seeds
        given, so the same list gives the same boards; Nones alone are ``seed=None``);
        ``options={"board": ...}`` starts every game from that board (as
        ``DustGymEnv.reset``); ``options={"reset_mask": m}`` (numpy bool ``[N]``, as
        Gymnasium takes it) restarts only the games ``m`` selects, the others going on as
        they were (``info``'s ``_action_mask`` and ``_clicks`` are ``m``)."""
        options = _options(options, ("board", "reset_mask"))
        reset_mask = self._reset_mask(options.get("reset_mask"))
        if reset_mask is not None and self._state is None:
            raise RuntimeError("reset_mask restarts some of the games: call reset() without it first")
        board = _start_board(self.env, options.get("board"))  # checked before the generator moves: a refused reset changes nothing
        if isinstance(seed, np.ndarray) and seed.ndim == 0:  # np.array(5): one seed, as np.int64(5)
            seed = seed.item()
        if isinstance(seed, (list, tuple, np.ndarray)) and len(seed) == self.num_envs and all(s is None for s in seed):
            seed = None  # what SyncVectorEnv makes of seed=None: the env's generator goes on
        if seed is None:
            super().reset()
            keys = jax.random.split(_seed_key(self.np_random), self.num_envs)
        else:
            seeds: list | None = None
            if game.is_integer(seed):
                seeds = [int(seed) + i for i in range(self.num_envs)]
            elif isinstance(seed, (list, tuple, np.ndarray)):
                seeds = list(seed)
            if (seeds is None or len(seeds) != self.num_envs
                    or not all(s is None or (game.is_integer(s) and s >= 0) for s in seeds)):
                raise ValueError(f"seed must be a non-negative int, None, or {self.num_envs} non-negative ints or "
                                 f"Nones (one a game), got {seed!r}")
            given = [int(s) for s in seeds if s is not None]
            # Seeded from all given seeds, so an unseeded reset after this one repeats too (not
            # from s alone: that is game 0's own generator, whose boards it would replay).
            self._np_random, self._np_random_seed = seeding.np_random(
                int(np.random.SeedSequence(given).generate_state(1)[0]) if given else None)
            if game.is_integer(seed):  # what Gymnasium's vector envs report
                self._np_random_seed = int(seed)
            # One call for all games: stacking a key a game compiled an N-way join on the first
            # seeded reset of each size (23 s for 4096 games on a 2-core CPU).
            keys = _keys(np.asarray([_seed_int(np.random.default_rng(s) if s is not None else self.np_random)
                                     for s in seeds], np.int32))
        states, mask = self._jit_reset(keys, board)
        if reset_mask is None:
            self._state = states
            self._restart[:] = False
            reset_mask = np.ones(self.num_envs, bool)
        else:
            old_states = self._state
            chosen = jnp.asarray(reset_mask)
            self._state = jax.tree.map(lambda new, old: jnp.where(chosen.reshape(-1, *[1] * (new.ndim - 1)), new, old),
                                       states, old_states)
            mask = jnp.where(chosen[:, None], mask, jax.vmap(self.env.observe)(self._state.board).action_mask)
            self._restart &= ~reset_mask
        return np.array(self._state.board), {"action_mask": np.array(mask, np.int8), "_action_mask": reset_mask.copy(),
                                             "clicks": _clicks(self._state.clicks), "_clicks": reset_mask.copy()}

    def _reset_mask(self, reset_mask) -> np.ndarray | None:
        """``options["reset_mask"]`` checked as Gymnasium checks it (ValueError here)."""
        if reset_mask is None:
            return None
        if not isinstance(reset_mask, np.ndarray) or reset_mask.dtype != np.bool_ or reset_mask.shape != (self.num_envs,):
            raise ValueError(f"options['reset_mask'] must be a numpy bool array of shape ({self.num_envs},), "
                             f"got {reset_mask!r}")
        if not reset_mask.any():
            raise ValueError("options['reset_mask'] selects no game: give at least one True")
        return reset_mask

    def step(self, actions):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        actions = _checked_actions(actions, self.env.game.num_cells, self.num_envs)
        actions = jnp.asarray(actions)
        if self.autoreset_mode == AutoresetMode.DISABLED and self._restart.any():
            raise RuntimeError(f"games {np.flatnonzero(self._restart).tolist()} have ended: restart them with "
                               f"reset(options={{'reset_mask': ...}}) before the next step (autoreset_mode "
                               f"'disabled')")
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            (self._state, board, reward, terminated, truncated, mask, clicks,
             final_board, final_mask, final_clicks) = self._jit_step(self._state, actions)
        else:  # next_step restarts the games that ended last step; disabled refused them above
            (self._state, board, reward, terminated, truncated, mask,
             clicks) = self._jit_step(self._state, actions, jnp.asarray(self._restart))
        terminated, truncated = np.array(terminated), np.array(truncated)
        every = np.ones(self.num_envs, bool)
        info = {"action_mask": np.array(mask, np.int8), "_action_mask": every,
                "clicks": _clicks(clicks), "_clicks": every.copy()}
        ended = terminated | truncated
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            if ended.any():
                final_obs = np.full(self.num_envs, None, object)  # Gymnasium's: None where no game ended
                boards = np.array(final_board)
                for i in np.flatnonzero(ended):
                    final_obs[i] = boards[i]
                # Each flag array its own, as Gymnasium's vector envs give them: a wrapper
                # that writes into one must not change the others.
                info.update(final_obs=final_obs, _final_obs=ended.copy(),
                            final_info={"action_mask": np.array(final_mask, np.int8), "_action_mask": ended.copy(),
                                        "clicks": np.where(ended, _clicks(final_clicks), 0), "_clicks": ended.copy()},
                            _final_info=ended.copy())
        else:
            self._restart = ended
        return np.array(board), np.array(reward, np.float64), terminated, truncated, info  # SyncVectorEnv's dtype

    def render(self):
        if not _can_render(self):
            return None
        return tuple(_rendered(self.env, self.render_mode, jax.tree.map(lambda leaf: leaf[i], self._state))
                     for i in range(self.num_envs))


# gymnasium.make("jaxdust/Dust-8x6x5-v0") and gymnasium.make_vec(..., num_envs=N): every
# registered size, single and vector.
for _env_id in registered():
    if f"jaxdust/{_env_id}" not in gymnasium.registry:
        # (gymnasium types a vector entry point as taking keywords only; make_vec gives num_envs so)
        # No max_episode_steps: the env truncates at its own cap, which max_clicks= may raise;
        # a horizon in the spec would wrap every env in a TimeLimit that cuts it back.
        gymnasium.register(f"jaxdust/{_env_id}", entry_point=DustGymEnv,
                           vector_entry_point=DustVectorEnv,  # type: ignore[arg-type]
                           kwargs={"env": _env_id})
