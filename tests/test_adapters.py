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
from gymnasium.vector import AutoresetMode
from jumanji.wrappers import AutoResetWrapper, JumanjiToGymWrapper, VmapWrapper

import jaxdust
from jaxdust.adapters.gym_env import DustGymEnv, DustVectorEnv
from jaxdust.adapters import gym_env
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


@pytest.mark.parametrize("env_id", ["Dust-6x6x5-v0", "Dust-8x4x5-v0", "Former-7x9x4-v0", "SameGame-15x15x5-v0",
                                    "Clickomania-10x10x4-v0"])
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


def test_gymnasium_envs_render_the_board_as_letters_in_ansi_mode():
    env = gymnasium.make("jaxdust/Dust-8x6x5-v0", render_mode="ansi")
    assert env.unwrapped.metadata["render_modes"] == ["rgb_array", "ansi"]
    obs, info = env.reset(options={"board": BOARD})
    first = env.render()
    assert first.splitlines()[-1] == "".join("ABCDE"[int(BOARD[x * 6]) - 1] for x in range(8))  # the bottom row
    obs, *_ = env.step(int(np.argmax(info["action_mask"])))
    assert env.render() == jaxdust.board_letters(obs) + "\n" != first
    envs = DustVectorEnv(2, "Dust-6x6x5-v0", render_mode="ansi")
    boards, _ = envs.reset(seed=3)
    assert envs.render() == tuple(jaxdust.board_letters(board) + "\n" for board in boards)
    with pytest.raises(ValueError, match="render_mode must be None, 'rgb_array' or 'ansi', got 'human'"):
        DustGymEnv(render_mode="human")


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


@pytest.mark.parametrize("action", [48, -1, 1.5, 3.0, "3", [1, 2]])
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


def test_gymnasium_envs_name_a_bad_action_in_one_line():
    """A vector env's refusal printed every action (7 to 1000 games: several lines), and an
    integer beyond int64 was called "not an integer"."""
    vector = DustVectorEnv(64)
    vector.reset(seed=0)
    actions = np.zeros(64, np.int64)
    actions[[5, 9]] = 48
    with pytest.raises(ValueError) as refused:
        vector.step(actions)
    assert str(refused.value) == "game 5's action 48 (and 1 more) is outside Discrete(48): cells are 0..47"
    with pytest.raises(ValueError) as refused:
        vector.step(np.full(64, 0.5))
    assert str(refused.value) == "actions must be integers in Discrete(48), got an array of float64"
    with pytest.raises(ValueError) as refused:  # the shape first: no game 2 (or 3, a flat index) to name
        vector.step(np.r_[actions, 60])
    assert str(refused.value) == "64 actions per step, shaped (64,), got 65"
    env = DustGymEnv()
    env.reset(seed=0)
    for action in (2**70, -2**70):
        with pytest.raises(ValueError) as refused:
            env.step(action)
        assert str(refused.value) == f"action {action} is outside Discrete(48): cells are 0..47"
    with pytest.raises(ValueError, match=r"one action per step \(a scalar\), got an array of shape \(1,\)"):
        env.step([60])


def test_gymnasium_envs_without_a_render_mode_warn_as_gymnasiums_own():
    for env in (DustGymEnv(), DustVectorEnv(2)):
        env.reset(seed=0)
        with pytest.warns(UserWarning, match="no render_mode"):
            assert env.render() is None


@pytest.mark.parametrize("actions", [[[0], [47]], [[0, 47]], 0])
def test_the_vector_env_takes_its_action_space_shape_only(actions):
    """``(num_envs,)``, as ``SyncVectorEnv`` of the single envs (which take a scalar each)."""
    vector = DustVectorEnv(2 if np.ndim(actions) else 1)
    vector.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions per step, shaped \((2|1),\), got an array of shape"):
        vector.step(actions)
    assert vector.action_space.contains(np.zeros(vector.num_envs, np.int64))


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
            assert all(info["final_obs"][i] is None for i in np.flatnonzero(~terminated))  # Gymnasium's form
            assert not np.stack(info["final_obs"][terminated]).any()  # cleared boards...
            assert (obs[terminated] != 0).all()  # ...replaced by fresh, full ones
            assert (rewards[terminated] == 10.0).all()
        assert (rewards[~terminated] == -1.0).all()
    assert ended >= 32


def legal_clicks(masks, which):
    """One legal click a game (its first or last), or cell 0 where the game is over (in
    next-step mode the step after a game's end restarts it, whatever the action)."""
    return np.array([np.flatnonzero(mask)[which] if mask.any() else 0 for mask in masks])


@pytest.mark.parametrize("mode", ["same_step", "next_step"])
def test_vector_env_steps_as_gymnasiums_sync_vector_env_of_single_envs(mode):
    """The batched env against Gymnasium's own ``SyncVectorEnv`` over ``DustGymEnv``, in the
    same autoreset mode, seeded game by game (so the first boards agree), with a click cap
    so that games end both ways: every return agrees until a game's restart, and the
    restart step itself says what Gymnasium's says (the final board and info, or reward 0
    and a fresh game). Later boards come from each env's own generator, so differ."""
    capped = jaxdust.make("Dust-6x6x5-v0", max_clicks=20)
    ours = DustVectorEnv(6, capped, autoreset_mode=mode)
    theirs = gymnasium.vector.SyncVectorEnv([lambda: DustGymEnv(capped)] * 6, autoreset_mode=ours.autoreset_mode)
    seeds = [3, 4, 5, 6, 7, 8]
    (obs, info), (sync_obs, sync_info) = ours.reset(seed=seeds), theirs.reset(seed=seeds)
    np.testing.assert_array_equal(obs, sync_obs)
    live = np.ones(6, bool)  # games still on the boards both envs share
    ended_before = np.zeros(6, bool)
    endings = set()
    for _ in range(40):
        actions = legal_clicks(info["action_mask"], -1)
        obs, reward, terminated, truncated, info = ours.step(actions)
        sync_obs, sync_reward, sync_terminated, sync_truncated, sync_info = theirs.step(actions)
        assert obs.flags.writeable and reward.flags.writeable
        for name, a, b in [("terminated", terminated, sync_terminated), ("truncated", truncated, sync_truncated),
                           ("reward", reward, sync_reward)]:
            np.testing.assert_array_equal(a[live], b[live], err_msg=name)
            assert a.dtype == b.dtype, name
        ended = terminated | truncated
        endings |= {("terminated", "truncated")[int(t)] for t in truncated[live & ended]}
        if mode == "same_step":
            restarted = live & ended
            both = live & ~ended
            if restarted.any():
                np.testing.assert_array_equal(info["_final_obs"], sync_info["_final_obs"] & live)
                for i in range(6):  # Gymnasium's form: an object array, None where no game ended
                    if info["_final_obs"][i]:
                        np.testing.assert_array_equal(info["final_obs"][i], sync_info["final_obs"][i])
                    else:
                        assert info["final_obs"][i] is None
                for key in ("clicks", "action_mask"):  # the games that go on too: Gymnasium fills them with 0
                    np.testing.assert_array_equal(info["final_info"][key][live], sync_info["final_info"][key][live])
                    assert info["final_info"][key].dtype == sync_info["final_info"][key].dtype, key
                assert (info["clicks"][restarted] == 0).all()
                flags = [info["_final_obs"], info["_final_info"], info["final_info"]["_clicks"],
                         info["final_info"]["_action_mask"]]
                assert len({id(flag) for flag in flags}) == len(flags)  # a wrapper may write into one
            live = both
        else:
            restarting = live & ended_before  # restarted by this step, its action ignored
            assert (reward[restarting] == 0).all() and (info["clicks"][restarting] == 0).all()
            assert not ended[restarting].any()
            live &= ~restarting
            ended_before = ended
        np.testing.assert_array_equal(obs[live], sync_obs[live])
        np.testing.assert_array_equal(info["clicks"][live], sync_info["clicks"][live])
        assert info["clicks"].dtype == sync_info["clicks"].dtype
        np.testing.assert_array_equal(info["action_mask"][live], sync_info["action_mask"][live])
        if not live.any():
            break
    assert not live.any() and endings == {"terminated", "truncated"}


def test_vector_env_in_next_step_mode_takes_gymnasiums_vector_wrappers():
    """Gymnasium's vector observation wrappers take only next-step resets; its reward
    wrappers write into the rewards (which must be the caller's own arrays)."""
    envs = gymnasium.make_vec("jaxdust/Dust-6x6x5-v0", num_envs=4, autoreset_mode="next_step")
    envs = gymnasium.wrappers.vector.RecordEpisodeStatistics(
        gymnasium.wrappers.vector.ClipReward(gymnasium.wrappers.vector.FlattenObservation(envs), -1, 1))
    obs, info = envs.reset(seed=0)
    assert obs.shape == (4, 36)
    lengths = []
    for _ in range(80):
        obs, reward, terminated, truncated, info = envs.step(legal_clicks(info["action_mask"], 0))
        assert reward.max() <= 1.0
        if "episode" in info:
            lengths += list(info["episode"]["l"][info["_episode"]])
    assert len(lengths) >= 4 and all(6 <= n <= 36 for n in lengths)
    with pytest.raises(ValueError, match="autoreset_mode must be one of"):
        DustVectorEnv(2, autoreset_mode="never")


def test_vector_env_with_autoreset_disabled_restarts_what_reset_mask_selects():
    """Gymnasium's third mode against its ``SyncVectorEnv``: nothing restarts by itself, a
    step with an ended game left is refused, and ``reset(options={"reset_mask": m})``
    restarts only the games ``m`` selects (each from its own seed, as Gymnasium's)."""
    capped = jaxdust.make("Dust-6x6x5-v0", max_clicks=12)
    ours = DustVectorEnv(4, capped, autoreset_mode="disabled")
    theirs = gymnasium.vector.SyncVectorEnv([lambda: DustGymEnv(capped)] * 4, autoreset_mode=AutoresetMode.DISABLED)
    (obs, info), (sync_obs, sync_info) = ours.reset(seed=5), theirs.reset(seed=5)
    np.testing.assert_array_equal(obs, sync_obs)
    restarts = 0
    for _ in range(60):
        actions = legal_clicks(info["action_mask"], 0)
        obs, reward, terminated, truncated, info = ours.step(actions)
        sync_obs, sync_reward, sync_terminated, sync_truncated, sync_info = theirs.step(actions)
        for a, b in [(obs, sync_obs), (reward, sync_reward), (terminated, sync_terminated),
                     (truncated, sync_truncated), (info["clicks"], sync_info["clicks"]),
                     (info["action_mask"], sync_info["action_mask"])]:
            np.testing.assert_array_equal(a, b)
        ended = terminated | truncated
        if ended.any():
            if not ended.all():
                with pytest.raises(RuntimeError, match="have ended: restart them with reset"):
                    ours.step(legal_clicks(info["action_mask"], 0))
            seeds = [100 + restarts * 4 + i for i in range(4)]
            (obs, info), (sync_obs, sync_info) = (env.reset(seed=seeds, options={"reset_mask": ended})
                                                  for env in (ours, theirs))
            np.testing.assert_array_equal(obs, sync_obs)
            np.testing.assert_array_equal(info["_action_mask"], ended)
            np.testing.assert_array_equal(info["action_mask"][ended], sync_info["action_mask"][ended])
            assert (info["clicks"][ended] == 0).all() and (info["clicks"][~ended] > 0).all()
            restarts += 1
    assert restarts >= 4
    for bad in (np.ones(3, bool), np.zeros(4, bool), np.ones(4, int), [True] * 4):
        with pytest.raises(ValueError, match="reset_mask"):
            ours.reset(options={"reset_mask": bad})


def test_a_seeded_vector_reset_compiles_no_program_that_grows_with_the_games(compile_log):
    """Stacking a key a game compiled an N-way join on the first seeded reset of each size
    (23 s for 4096 games on a 2-core CPU); the keys are made in one call, the same keys
    (``test_gymnasium_envs_compile_once...`` compares with ``SyncVectorEnv``)."""
    logged = {}
    for games in (7, 509):
        envs = DustVectorEnv(games, "Dust-8x4x5-v0")
        envs.reset()
        _, compiled = compile_log(lambda: envs.reset(seed=games))
        assert sum(message.startswith("Compiling ") for message in compiled) <= 1  # the keys' program
        logged[games] = sum(len(message) for message in compiled)
    assert 0 < logged[509] < 2 * logged[7]


def test_gymnasium_envs_compile_once_per_configuration_and_seed_as_sync_vector_env():
    """A new env of a configuration seen before reuses its programs (a ``SyncVectorEnv`` of
    many single envs compiles once), and ``reset(seed=s)`` gives game ``i`` what
    ``DustGymEnv.reset(seed=s + i)`` does, as ``SyncVectorEnv`` seeds."""
    first, second = DustGymEnv("Dust-6x6x5-v0"), DustGymEnv("Dust-6x6x5-v0")
    assert first._jit_step is second._jit_step and first._jit_reset is second._jit_reset
    assert DustVectorEnv(3, "Dust-6x6x5-v0")._jit_step is DustVectorEnv(5, "Dust-6x6x5-v0")._jit_step
    assert (DustVectorEnv(3, "Dust-6x6x5-v0")._jit_step
            is not DustVectorEnv(3, "Dust-6x6x5-v0", autoreset_mode="next_step")._jit_step)
    envs = DustVectorEnv(3, "Dust-6x6x5-v0", render_mode="rgb_array")
    sync = gymnasium.vector.SyncVectorEnv([lambda: DustGymEnv("Dust-6x6x5-v0")] * 3)
    np.testing.assert_array_equal(envs.reset(seed=7)[0], sync.reset(seed=7)[0])
    np.testing.assert_array_equal(envs.reset(seed=7)[0][1], first.reset(seed=8)[0])
    # A 0-d array is one seed, as np.int64(7) is (it failed in len()).
    np.testing.assert_array_equal(envs.reset(seed=np.array(7))[0], sync.reset(seed=7)[0])
    frames = envs.render()
    assert isinstance(frames, tuple) and len(frames) == 3 and envs.metadata["render_fps"] == 2
    # DustEnv fields through gymnasium.make and make_vec
    assert gymnasium.make("jaxdust/Dust-6x6x5-v0", max_clicks=3).unwrapped.env.max_clicks == 3
    assert gymnasium.make_vec("jaxdust/Dust-6x6x5-v0", num_envs=2, max_clicks=3).env.max_clicks == 3
    with pytest.raises(ValueError, match="no field\\(s\\) max_clickz"):
        gymnasium.make("jaxdust/Dust-6x6x5-v0", max_clickz=3)
    with pytest.raises(ValueError, match="apply to a registered id"):
        DustGymEnv(jaxdust.make("Dust-6x6x5-v0"), max_clicks=3)
    # auto_reset is the adapters' own business: asked for, it was dropped without a word.
    with pytest.raises(ValueError, match=r"without auto_reset: Gymnasium restarts a game with reset\(\)"):
        gymnasium.make("jaxdust/Dust-6x6x5-v0", auto_reset=True)
    with pytest.raises(ValueError, match="without auto_reset: Gymnasium restarts"):
        DustGymEnv(jaxdust.make("Dust-6x6x5-v0", auto_reset=True))
    with pytest.raises(ValueError, match="without auto_reset: autoreset_mode says how a finished game restarts"):
        gymnasium.make_vec("jaxdust/Dust-6x6x5-v0", num_envs=2, auto_reset=True)
    vector = gymnasium.make_vec("jaxdust/Dust-6x6x5-v0", num_envs=2, auto_reset=False)  # same_step all the same
    assert DustVectorEnv(2, vector.env).env == DustGymEnv(vector.env).env == vector.env  # an adapter's env is reusable
    # A sweep over configurations keeps the programs of the latest PROGRAMS_KEPT, not all.
    for max_clicks in range(1, gym_env.PROGRAMS_KEPT + 9):
        DustGymEnv("Dust-6x6x5-v0", max_clicks=max_clicks)
    assert gym_env._single_programs.cache_info().currsize == gym_env.PROGRAMS_KEPT
    for max_clicks in range(1, gym_env.PROGRAMS_KEPT + 9):
        DustVectorEnv(2, "Dust-6x6x5-v0", max_clicks=max_clicks)
    assert gym_env._vector_programs.cache_info().currsize == gym_env.PROGRAMS_KEPT
    assert DustGymEnv("Dust-6x6x5-v0", max_clicks=gym_env.PROGRAMS_KEPT + 8)._jit_step is \
        DustGymEnv("Dust-6x6x5-v0", max_clicks=gym_env.PROGRAMS_KEPT + 8)._jit_step


def test_gymnasium_time_limits_truncate_as_the_envs_own_cap_does():
    """``max_episode_steps`` given to ``make_vec`` (which hands it to a vector entry point,
    where it failed) truncates the batched env where Gymnasium's ``TimeLimit`` truncates a
    ``SyncVectorEnv`` of single envs, and never later than the env's own cap, which
    ``max_clicks=`` raises (no TimeLimit of the spec's cuts it back). ``np_random_seed`` is
    the seed given, as in Gymnasium."""
    assert DustVectorEnv(2, "Dust-6x6x5-v0", max_episode_steps=10**6).env.max_clicks == 144
    assert DustVectorEnv(2, "Dust-6x6x5-v0", max_clicks=None, max_episode_steps=7).env.max_clicks == 7
    assert DustVectorEnv(2, "Dust-6x6x5-v0", max_episode_steps=-1).env.max_clicks == 144  # Gymnasium's "none"
    assert gymnasium.make_vec("jaxdust/Dust-6x6x5-v0", num_envs=2, max_clicks=300).env.max_clicks == 300
    single = gymnasium.make("jaxdust/Dust-6x6x5-v0", max_clicks=300)
    single.reset(seed=0)
    assert sum(1 for _ in range(200) if not any(single.step(0)[2:4])) == 200  # past the id's cap of 144
    ends = {}
    for mode in ("vector_entry_point", "sync"):
        envs = gymnasium.make_vec("jaxdust/Dust-6x6x5-v0", num_envs=3, max_episode_steps=3, vectorization_mode=mode)
        envs.reset(seed=1)
        ends[mode] = [np.stack(envs.step(np.zeros(3, int))[2:4]).tolist() for _ in range(4)]
    assert ends["vector_entry_point"] == ends["sync"]
    assert [step[1] for step in ends["sync"]] == [[False] * 3, [False] * 3, [True] * 3, [False] * 3]
    with pytest.raises(ValueError, match="max_episode_steps must be a positive integer, -1 or None, got 0"):
        DustVectorEnv(2, max_episode_steps=0)
    envs = DustVectorEnv(3, "Dust-6x6x5-v0")
    envs.reset(seed=7)
    assert envs.np_random_seed == 7
    # An unseeded reset after it draws boards the seeded games do not play next (a generator
    # seeded with 7 alone is game 0's, whose restarted boards game 1 then replayed).
    capped = DustVectorEnv(4, "Dust-6x6x5-v0", max_clicks=1)
    capped.reset(seed=7)
    restarted = capped.step(np.zeros(4, int))[0]  # every game truncated and restarted
    again = capped.reset()[0]
    assert not any((board == restarted).all(axis=(1, 2)).any() for board in again)


def test_gymnasium_envs_pickle_and_check_their_reset_arguments():
    import pickle

    env, envs = DustGymEnv("Dust-6x6x5-v0"), DustVectorEnv(3, "Dust-6x6x5-v0")
    obs, _ = env.reset(seed=1)
    envs.reset(seed=[1, 2, 3])
    copy, copies = pickle.loads(pickle.dumps(env)), pickle.loads(pickle.dumps(envs))
    action = int(np.flatnonzero(env.action_masks())[0])
    np.testing.assert_array_equal(copy.step(action)[0], env.step(action)[0])
    np.testing.assert_array_equal(copies.step(np.array([0, 1, 2]))[0], envs.step(np.array([0, 1, 2]))[0])
    # One seed per game: the same boards again, and game 0's is the single env's of seed 1.
    first, _ = envs.reset(seed=[1, None, 3])
    np.testing.assert_array_equal(first[0], obs)
    np.testing.assert_array_equal(envs.reset(seed=[1, 2, 3])[0], envs.reset(seed=[1, 2, 3])[0])
    # A Nones-only list is seed=None, as SyncVectorEnv reads it: the seeded generator goes on
    # (a fresh one from the OS had made the rest of a seeded run unrepeatable).
    def after_seed_5(seed):
        vector = DustVectorEnv(3, "Dust-6x6x5-v0")
        vector.reset(seed=5)
        return vector.reset(seed=seed)[0], vector.reset()[0]

    for unseeded in ([None] * 3, (None,) * 3):
        for ours, plain in zip(after_seed_5(unseeded), after_seed_5(None)):
            np.testing.assert_array_equal(ours, plain)
    board = np.asarray(jaxdust.random_board(jax.random.key(2), jaxdust.GameConfig(6, 6, 5)))
    assert (envs.reset(options={"board": board})[0] == board).all()
    with pytest.raises(ValueError, match="3 non-negative ints or Nones"):
        envs.reset(seed=[1, 2])
    with pytest.raises(ValueError, match="non-negative int.*got \\[1, -1, 2\\]"):
        envs.reset(seed=[1, -1, 2])
    with pytest.raises(ValueError, match="non-negative int.*got -1"):
        envs.reset(seed=-1)
    for reset in (env.reset, envs.reset):
        with pytest.raises(ValueError, match="the options 'board'.* only, got \\['borad'\\]"):
            reset(options={"borad": board})
        with pytest.raises(ValueError, match="options must be a dict"):
            reset(options="board")
        with pytest.raises(ValueError, match="game is over already"):
            reset(options={"board": np.zeros((6, 6), np.int8)})


def test_extras_stay_optional():
    """The core install imports neither Jumanji nor Gymnasium."""
    code = "import jaxdust, evaluate, sys; from jaxdust.learn import cli; print(sorted(m for m in ('jumanji', 'gymnasium') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent))
    assert out.stdout.strip() == "[]"


def test_the_gymnasium_example_plays_whole_games(capsys):
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent / "examples"))
    try:
        import gymnasium_random_agent
    finally:
        sys.path.pop(0)
    lengths = gymnasium_random_agent.main(["--env", "jaxdust/Dust-6x6x5-v0", "--episodes", "4"])
    assert len(lengths) == 4 and all(6 <= n <= 36 for n in lengths)
    assert gymnasium_random_agent.main(["--env", "Dust-6x6x5-v0", "--episodes", "4"]) == lengths  # jaxdust.make's id
    for argv, said in ((["--episodes", "0"], "--episodes must be at least 1"), (["--seed", "-1"], "--seed must be >= 0"),
                       (["--env", "Foo"], "--env: Environment `Foo` doesn't exist in namespace jaxdust")):
        with pytest.raises(SystemExit):
            gymnasium_random_agent.main(argv)
        assert said in capsys.readouterr().err, argv


def test_a_refused_reset_leaves_the_envs_generator_where_it_was():
    """The vector env drew its games' keys before checking the board (or a ``reset_mask``
    given before any reset): a refused reset moved its generator, so the next unseeded
    reset dealt other boards than it would have. The single env re-seeded its generator
    before checking: a refused ``reset(seed=5, ...)`` left it on seed 5's stream."""
    for make in (lambda: DustVectorEnv(2, "Dust-6x6x5-v0"), lambda: DustGymEnv("Dust-6x6x5-v0")):
        plain, refused = make(), make()
        plain.reset(seed=0)
        refused.reset(seed=0)
        for seed, options, said in ((None, {"board": "7" * 36}, "holds 7"), (5, {"board": "7" * 36}, "holds 7"),
                                    (5, {"bogus": 1}, "bogus")):
            with pytest.raises(ValueError, match=said):
                refused.reset(seed=seed, options=options)
        np.testing.assert_array_equal(refused.reset()[0], plain.reset()[0])
        assert refused.np_random_seed == plain.np_random_seed == 0
    fresh = DustVectorEnv(2, "Dust-6x6x5-v0")
    before = fresh.np_random.bit_generator.state
    with pytest.raises(RuntimeError, match="call reset\\(\\) without it first"):
        fresh.reset(seed=3, options={"reset_mask": np.ones(2, bool)})
    assert fresh.np_random.bit_generator.state == before
