"""The Jumanji and Gymnasium adapters: specs and spaces that hold every observation, Jumanji's
own wrappers, Gymnasium's env checker, the vector env's same-step resets, and extras that
stay optional."""

import subprocess
import sys

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from jumanji.wrappers import AutoResetWrapper, JumanjiToGymWrapper, VmapWrapper

import jaxdust
from jaxdust.adapters.gym_env import DustGymEnv, DustVectorEnv
from jaxdust.adapters.jumanji_env import DustJumanji
from jaxdust.core import reference

BOARD = "335122421413111551154255131234544142315221411124"


def masked_random(key, mask):
    """A random legal click per game: mask bool [N, cells] -> int32 [N]."""
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


@pytest.mark.parametrize("env_id", ["Dust-6x6x5-v0", "Dust-8x6x5-v0"])
def test_jumanji_wrappers_play_it_and_every_timestep_fits_the_specs(env_id):
    env = DustJumanji(env_id)
    game = env.env.game
    assert env.action_spec.num_values == game.num_cells
    assert env.observation_spec.board.shape == (game.width, game.height)
    batched = VmapWrapper(AutoResetWrapper(env))
    state, timestep = batched.reset(jax.random.split(jax.random.key(0), 16))

    @jax.jit
    def step(carry, key):
        state, timestep = carry
        state, timestep = batched.step(state, masked_random(key, timestep.observation.action_mask))
        return (state, timestep), timestep

    _, steps = jax.lax.scan(step, (state, timestep), jax.random.split(jax.random.key(1), 120))
    for t in range(0, 120, 7):
        one = jax.tree.map(lambda leaf: leaf[t, 0], steps)
        env.observation_spec.validate(one.observation)
        env.reward_spec.validate(one.reward)
        env.discount_spec.validate(one.discount)
    last = np.asarray(steps.step_type) == 2
    assert last.any()  # some games ended, and were reset into full boards
    rewards = np.asarray(steps.reward)
    assert set(np.unique(rewards[last])) <= {10.0, -1.0} and set(np.unique(rewards[~last])) == {-1.0}
    fresh = np.asarray(steps.observation.board)[last]
    assert (fresh != 0).all()  # AutoResetWrapper's observation after LAST is a new, full board


def test_jumanji_steps_are_the_rules():
    env = DustJumanji("Dust-8x6x5-v0")
    state, timestep = env.reset(jax.random.key(3))
    board = np.asarray(state.board)
    action = int(np.argmax(np.asarray(timestep.observation.action_mask)))
    state, timestep = jax.jit(env.step)(state, action)
    expected, _ = reference.click(board, action // 6, action % 6)
    np.testing.assert_array_equal(np.asarray(state.board), expected)
    assert env.render(state).shape == (6 * 16, 8 * 16, 3)
    with pytest.raises(ValueError, match="without auto_reset"):
        DustJumanji(jaxdust.make("Dust-8x6x5-v0", auto_reset=True))


def test_jumanji_to_gym_wrapper_gives_observations_in_its_space():
    env = JumanjiToGymWrapper(DustJumanji("Dust-6x6x5-v0"))
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    for _ in range(10):
        obs, reward, terminated, truncated, _ = env.step(int(np.argmax(obs["action_mask"])))
        assert env.observation_space.contains(obs) and reward in (-1.0, 10.0)


@pytest.mark.parametrize("env_id", ["Dust-6x6x5-v0", "Dust-8x4x5-v0"])
def test_gymnasium_env_passes_the_env_checker(env_id):
    env = gymnasium.make(f"jaxdust/{env_id}", render_mode="rgb_array")
    assert isinstance(env.unwrapped, DustGymEnv)
    check_env(env.unwrapped)


@pytest.mark.slow
def test_gymnasium_env_plays_a_given_board_by_the_rules():
    env = DustGymEnv(render_mode="rgb_array")
    obs, info = env.reset(seed=5, options={"board": BOARD})
    np.testing.assert_array_equal(obs, np.asarray(jaxdust.parse_board(BOARD)))
    again, _ = env.reset(seed=9)
    assert not np.array_equal(again, env.reset(seed=10)[0]) and np.array_equal(again, env.reset(seed=9)[0])
    obs, info = env.reset(options={"board": BOARD})
    solution = jaxdust.solve(BOARD)
    for step, (x, y) in enumerate(solution.clicks):
        expected, _ = reference.click(obs, x, y)
        assert info["action_mask"][x * 6 + y] == 1
        obs, reward, terminated, truncated, info = env.step(x * 6 + y)
        np.testing.assert_array_equal(obs, expected)
        assert terminated == (step == solution.length - 1) and not truncated
        assert reward == (10.0 if terminated else -1.0)
    assert env.render().shape == (6 * 16, 8 * 16, 3)


def test_gymnasium_env_refuses_steps_after_its_episode_ended():
    """A truncated game stepped again would come back with discount 0, which reads as
    terminated: a step after the end is refused until reset, as one before the first is."""
    env = DustGymEnv(jaxdust.make("Dust-6x6x5-v0", max_clicks=1))
    with pytest.raises(RuntimeError, match="call reset"):
        env.action_masks()
    env.reset(seed=0)
    _, _, terminated, truncated, _ = env.step(0)
    assert (terminated, truncated) == (False, True)
    with pytest.raises(RuntimeError, match="the episode has ended"):
        env.step(1)
    env.reset(seed=1)
    assert env.step(0)[3]  # playable again


def test_gymnasium_reset_reads_text_at_the_envs_size_and_checks_the_colours():
    env = DustGymEnv("Dust-6x6x5-v0")
    board = np.asarray(jaxdust.random_board(jax.random.key(2), jaxdust.GameConfig(6, 6, 5)))
    obs, _ = env.reset(options={"board": jaxdust.board_to_text(board)})  # 36 digits: the env's 6x6
    np.testing.assert_array_equal(obs, board)
    assert env.observation_space.contains(obs)
    with pytest.raises(ValueError, match=r"holds 9; this env's colours are 0 \(empty\) to 5"):
        env.reset(options={"board": np.where(board == 1, 9, board)})
    with pytest.raises(ValueError, match=r"this env plays \(6, 6\)"):
        env.reset(options={"board": np.ones((8, 6), np.int8)})


@pytest.mark.parametrize("action", [48, -1, 1.5, "3", [1, 2]])
def test_gymnasium_envs_refuse_actions_outside_their_space(action):
    env = DustGymEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="Discrete\\(48\\)|one action per step"):
        env.step(action)
    vector = DustVectorEnv(2)
    vector.reset(seed=0)
    with pytest.raises(ValueError, match="Discrete\\(48\\)|2 actions per step"):
        vector.step([action, 0] if np.ndim(action) == 0 else action + [0])
    env.step(np.int64(47))  # the last cell is inside
    vector.step(np.array([0, 47]))


def test_vector_env_resets_finished_games_in_the_same_step():
    env = gymnasium.make_vec("jaxdust/Dust-6x6x5-v0", num_envs=32)
    assert isinstance(env, DustVectorEnv) and env.action_space.shape == (32,)
    obs, info = env.reset(seed=0)
    ended = 0
    rng = np.random.default_rng(0)
    for _ in range(150):
        assert env.observation_space.contains(obs)
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in info["action_mask"]])
        obs, rewards, terminated, truncated, info = env.step(actions)
        assert not truncated.any()  # the click cap (4 per cell) is far away
        if terminated.any():
            ended += terminated.sum()
            assert (info["_final_obs"] == terminated).all()
            assert not info["final_obs"][terminated].any()  # cleared boards...
            assert (obs[terminated] != 0).all()  # ...replaced by fresh, full ones
            assert (rewards[terminated] == 10.0).all()
        assert (rewards[~terminated] == -1.0).all()
    assert ended >= 32


def test_extras_stay_optional():
    """The core install imports neither Jumanji nor Gymnasium."""
    code = "import jaxdust, evaluate, sys; from jaxdust.learn import cli; print(sorted(m for m in ('jumanji', 'gymnasium') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent))
    assert out.stdout.strip() == "[]"


def test_the_gymnasium_example_plays_whole_games():
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent / "examples"))
    try:
        import gymnasium_random_agent
    finally:
        sys.path.pop(0)
    lengths = gymnasium_random_agent.main(["--env", "jaxdust/Dust-6x6x5-v0", "--episodes", "4"])
    assert len(lengths) == 4 and all(6 <= n <= 36 for n in lengths)
