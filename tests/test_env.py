"""DustEnv: rewards, episode ends, auto-reset, specs, compilation and batched play."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdust
from jaxdust import DustEnv, GameConfig, Rewards, StepType, make
from jaxdust.core import game
from jaxdust.core import reference as ref

# y=1: . 1 2 . / y=0: 2 1 3 2  (width 4, height 2, settled). Clicking (1, 0) removes the
# 1s, (2, 0) the 3, which joins the three 2s along the bottom; (1, 0) then clears it.
SMALL = jnp.asarray([[2, 0], [1, 1], [3, 2], [2, 0]], jnp.int8)
SMALL_ENV = DustEnv(GameConfig(4, 2, 3))


def action(x, y, height=2):
    return jnp.int32(x * height + y)


def test_reset_gives_first_step_and_matching_specs():
    env = DustEnv()
    state, timestep = env.reset(jax.random.key(3))
    assert int(timestep.step_type) == StepType.FIRST and bool(timestep.first())
    assert float(timestep.reward) == 0.0 and float(timestep.discount) == 1.0
    chex.assert_trees_all_equal_shapes_and_dtypes(timestep.observation, env.observation_spec())
    np.testing.assert_array_equal(
        timestep.observation.action_mask, np.asarray(state.board).reshape(-1) != 0
    )
    np.testing.assert_array_equal(timestep.observation.one_hot, ref.one_hot(state.board, 5))
    again, _ = env.reset(jax.random.key(3))
    np.testing.assert_array_equal(state.board, again.board)
    other, _ = env.reset(jax.random.key(4))
    assert not np.array_equal(state.board, other.board)


def test_a_board_in_the_other_byte_order_is_taken_as_the_game_functions_take_it():
    # As np.fromfile(path, ">i4") reads one: JAX takes no such array, so it failed inside JAX.
    swapped = np.asarray(SMALL).astype(">i4")
    state, timestep = SMALL_ENV.reset(jax.random.key(0), swapped)
    np.testing.assert_array_equal(state.board, SMALL)
    np.testing.assert_array_equal(timestep.observation.one_hot, ref.one_hot(SMALL, 3))
    np.testing.assert_array_equal(jaxdust.one_hot(swapped, 3), ref.one_hot(SMALL, 3))


def test_rewards_discounts_and_step_types():
    state, _ = SMALL_ENV.reset(jax.random.key(0), board=SMALL)
    state, ts = SMALL_ENV.step(state, action(0, 1))  # empty cell
    assert (float(ts.reward), int(ts.step_type), int(ts.extras["removed"])) == (-10.0, StepType.MID, 0)
    np.testing.assert_array_equal(state.board, SMALL)
    state, ts = SMALL_ENV.step(state, action(1, 0))  # the two 1s
    assert (float(ts.reward), float(ts.discount), int(ts.extras["removed"])) == (-1.0, 1.0, 2)
    for x, y in [(2, 0), (1, 0)]:  # the 3, then the 2s that it joined
        state, ts = SMALL_ENV.step(state, action(x, y))
    assert bool(game.is_done(state.board))
    assert (float(ts.reward), float(ts.discount), int(ts.step_type)) == (10.0, 0.0, StepType.LAST)
    assert int(ts.extras["clicks"]) == int(state.clicks) == 4


def test_custom_rewards():
    env = DustEnv(GameConfig(4, 2, 3), rewards=Rewards(clear=1.0, click=0.0, empty_click=-5.0))
    state, _ = env.reset(jax.random.key(0), board=SMALL)
    rewards = []
    for x, y in [(0, 1), (1, 0), (2, 0), (1, 0)]:
        state, ts = env.step(state, action(x, y))
        rewards.append(float(ts.reward))
    assert rewards == [-5.0, 0.0, 0.0, 1.0]


def test_truncation_keeps_discount_one():
    env = DustEnv(GameConfig(4, 2, 3), max_clicks=2)
    state, _ = env.reset(jax.random.key(0), board=SMALL)
    state, ts = env.step(state, action(1, 0))
    assert int(ts.step_type) == StepType.MID
    state, ts = env.step(state, action(2, 0))
    assert int(ts.step_type) == StepType.LAST and float(ts.discount) == 1.0
    assert not bool(game.is_done(state.board))


def test_finished_state_steps_are_no_ops_without_auto_reset():
    state, _ = SMALL_ENV.reset(jax.random.key(0), board=jnp.zeros((4, 2), jnp.int8))
    state, ts = SMALL_ENV.step(state, action(0, 0))
    assert (float(ts.reward), float(ts.discount), int(ts.step_type)) == (0.0, 0.0, StepType.LAST)
    assert int(state.clicks) == 0
    assert not bool(jnp.any(ts.observation.action_mask))


def test_a_truncated_state_steps_as_a_no_op_too():
    """Past its click cap (truncated, no auto-reset) a game changes no more: the board,
    the clicks, reward 0 and discount 0, as a terminated one."""
    env = DustEnv(GameConfig(4, 2, 3), max_clicks=1)
    state, _ = env.reset(jax.random.key(0), board=SMALL)
    state, ts = env.step(state, action(1, 0))
    assert int(ts.step_type) == StepType.LAST and float(ts.discount) == 1.0 and int(state.clicks) == 1
    for cell in [(2, 0), (0, 0)]:
        after, ts = env.step(state, action(*cell))
        np.testing.assert_array_equal(after.board, state.board)
        assert (int(after.clicks), int(ts.extras["removed"]), float(ts.reward), float(ts.discount),
                int(ts.step_type)) == (1, 0, 0.0, 0.0, StepType.LAST)
    batched, _ = jax.vmap(env.step)(jax.tree.map(lambda leaf: jnp.stack([leaf, leaf]), state), jnp.array([0, 4]))
    np.testing.assert_array_equal(batched.board, jnp.stack([state.board] * 2))


def test_a_given_board_is_checked_and_held_as_int8():
    board = np.asarray(SMALL, np.int64)
    state, ts = SMALL_ENV.reset(jax.random.key(0), board)
    assert state.board.dtype == jnp.int8 and ts.observation.board.dtype == jnp.int8
    jitted, _ = jax.jit(SMALL_ENV.reset)(jax.random.key(0), board)  # traced: shape and dtype still checked
    np.testing.assert_array_equal(jitted.board, state.board)
    with pytest.raises(ValueError, match="shape"):
        jax.jit(SMALL_ENV.reset)(jax.random.key(0), board[:3])
    # Its text, as the Gymnasium adapter takes it; and observe makes int8 arrays of lists too.
    text = jaxdust.board_to_text(state.board)
    from_text, _ = SMALL_ENV.reset(jax.random.key(0), text)
    np.testing.assert_array_equal(from_text.board, state.board)
    observed = SMALL_ENV.observe(board.tolist())
    assert isinstance(observed.board, jax.Array) and observed.board.dtype == jnp.int8
    with pytest.raises(ValueError, match="digits"):
        SMALL_ENV.reset(jax.random.key(0), text[:-1])
    # A NumPy int64 cell is checked before JAX narrows it to int32, where 2**32 + 3 played as 3.
    wide = board.copy()
    wide[0, 0] = 2**32 + 3
    for start in (SMALL_ENV.reset, SMALL_ENV.init):
        with pytest.raises(ValueError, match="cell \\(0, 0\\) holds 4294967299"):
            start(jax.random.key(0), wide)


def test_an_observation_keeps_its_board_when_the_callers_numpy_board_changes():
    """On a CPU JAX may take an aligned int8 array's memory as it is: a Gym-style loop that
    refills one buffer changed the board of every observation made from it, but not their
    one-hot planes and masks."""
    memory = np.empty(SMALL.size + 64, np.int8)
    buffer = memory[(-memory.ctypes.data) % 64:][:SMALL.size].reshape(SMALL.shape)  # 64-byte aligned
    buffer[:] = SMALL
    observation = SMALL_ENV.observe(buffer)
    buffer[:] = 0
    np.testing.assert_array_equal(observation.board, SMALL)


def test_auto_reset_starts_a_fresh_board_and_reports_the_final_one():
    env = DustEnv(GameConfig(4, 2, 3), auto_reset=True)
    state, _ = env.reset(jax.random.key(5), board=SMALL)
    for x, y in [(1, 0), (2, 0)]:
        state, ts = env.step(state, action(x, y))
    assert int(ts.step_type) == StepType.MID
    key_before = state.key
    state, ts = env.step(state, action(1, 0))
    assert int(ts.step_type) == StepType.LAST and float(ts.reward) == 10.0
    assert float(ts.discount) == 0.0
    assert not np.asarray(ts.extras["next_board"]).any()  # the cleared board
    assert int(state.clicks) == 0 and bool(jnp.all(state.board != 0))
    expected = env.init(key_before)
    np.testing.assert_array_equal(state.board, expected.board)
    np.testing.assert_array_equal(ts.observation.board, state.board)
    np.testing.assert_array_equal(ts.observation.action_mask, np.ones(8, bool))


def test_auto_reset_after_truncation():
    env = DustEnv(GameConfig(4, 2, 3), max_clicks=1, auto_reset=True)
    state, _ = env.reset(jax.random.key(5), board=SMALL)
    state, ts = env.step(state, action(1, 0))
    assert int(ts.step_type) == StepType.LAST and float(ts.discount) == 1.0
    assert int(state.clicks) == 0 and bool(jnp.all(state.board != 0))


def test_invalid_configuration():
    with pytest.raises(ValueError, match="max_clicks"):
        DustEnv(max_clicks=0)


def test_a_state_of_another_env_or_shape_is_refused_and_batches_may_be_empty():
    env8, env6 = DustEnv(GameConfig(8, 6, 5)), DustEnv(GameConfig(6, 6, 5))
    state6, _ = env6.reset(jax.random.key(0))
    batch6 = jax.tree.map(lambda leaf: jnp.stack([leaf, leaf]), state6)
    with pytest.raises(ValueError, match="env.step: the state's boards are 6x6, this env's are 8x6"):
        env8.step(state6, jnp.int32(0))
    with pytest.raises(ValueError, match="the state's boards are 6x6, this env's are 8x6"):
        jax.vmap(env8.step)(batch6, jnp.zeros(2, jnp.int32))
    with pytest.raises(ValueError, match="env.step_batch takes a batch of states"):
        env6.step_batch(state6, jnp.int32(0))
    with pytest.raises(ValueError, match="env.step_batch takes a batch of states"):
        env6.step_batch(batch6, jnp.zeros(3, jnp.int32))
    # reset_finished: one game's state (an IndexError from inside), or a float last taken as finished.
    for states, last in ((state6, jnp.bool_(True)), (batch6, jnp.array([0.5, 0.0])), (batch6, jnp.ones(3, bool))):
        with pytest.raises(ValueError, match=r"env.reset_finished takes a batch of states \(boards \[B, W, H\]\)"):
            env6.reset_finished(states, last)
    with pytest.raises(ValueError, match="env.reset_finished: the state's boards are 6x6, this env's are 8x6"):
        env8.reset_finished(batch6, jnp.ones(2, bool))
    restarted = jax.jit(env6.reset_finished)(batch6, jnp.array([True, False]))
    assert restarted.key.shape == batch6.key.shape and (restarted.board[1] == batch6.board[1]).all()
    states, _ = jax.vmap(env6.reset)(jax.random.split(jax.random.key(0), 0))
    states, timestep = jax.vmap(env6.step)(states, jnp.zeros(0, jnp.int32))
    assert timestep.reward.shape == (0,) and states.board.shape == (0, 6, 6)


def test_counts_stay_int32_with_64_bit_mode_on():
    """A scan carrying (state, timestep) needs every leaf's dtype as reset gives it."""
    with jax.enable_x64(True):
        state, first = SMALL_ENV.reset(jax.random.key(0), SMALL)
        _, timestep = SMALL_ENV.step(state, action(1, 0))
        assert timestep.extras["removed"].dtype == first.extras["removed"].dtype == jnp.int32
        assert game.click(SMALL, 1, 0)[1].dtype == jnp.int32


def test_a_64_bit_action_off_the_board_removes_nothing():
    """Cast to int32, 2^32 + 5 wrapped round to cell 5 (alone and under vmap; step_batch
    saw the same action as off the board)."""
    with jax.enable_x64(True):
        state, _ = SMALL_ENV.reset(jax.random.key(0), SMALL)
        removed = int(SMALL_ENV.step(state, 5)[1].extras["removed"])
        assert removed > 0  # so the wrapped action would show
        states = jax.tree.map(lambda leaf: leaf[None], state)
        for far in (jnp.int64(2**32 + 5), jnp.uint64(2**32 + 5), jnp.int64(5 - 2**32)):
            assert int(SMALL_ENV.step(state, far)[1].extras["removed"]) == 0
            assert int(jax.vmap(SMALL_ENV.step)(states, far[None])[1].extras["removed"][0]) == 0
            assert int(SMALL_ENV.step_batch(states, far[None])[1].extras["removed"][0]) == 0


def test_jitted_step_traces_once():
    env = DustEnv(auto_reset=True)
    step = jax.jit(chex.assert_max_traces(env.step, n=1))
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    for _ in range(5):
        state, ts = step(state, jnp.argmax(ts.observation.action_mask).astype(jnp.int32))



@pytest.mark.parametrize("rules", ["dust", "samegame"])
def test_a_step_outside_jit_compiles_once(rules, compile_log):
    """Unjitted, every eager step compiled its loops again (~45 ms a step on a CPU); the
    second step of a configuration must reuse the first one's program, and equal a step
    inside the user's own jit."""
    env = DustEnv(GameConfig(7, 5, 4, rules), auto_reset=True)
    state, timestep = env.reset(jax.random.key(4))
    action = jnp.argmax(timestep.observation.action_mask).astype(jnp.int32)
    state, timestep = env.step(state, action)
    action = jnp.argmax(timestep.observation.action_mask).astype(jnp.int32)
    expected = jax.jit(lambda s, a: env.step(s, a))(state, action)
    result, compiled = compile_log(lambda: env.step(state, action))
    assert not compiled
    chex.assert_trees_all_equal(result, expected)

@pytest.mark.parametrize("rules", ["dust", "samegame"])
def test_a_batch_step_and_its_resets_outside_jit_compile_once(rules, compile_log):
    """Unjitted, every eager ``step_batch`` compiled its loops again (~0.1 s and ~1.8 MB
    a call on a CPU) and every ``reset_finished`` its two branches (~1.5 s): the second call
    of a configuration and batch must reuse the first one's programs, and equal the same
    call inside the user's own jit."""
    env = DustEnv(GameConfig(7, 5, 4, rules), auto_reset=True)
    states, timesteps = jax.vmap(env.reset)(jax.random.split(jax.random.key(2), 16))
    actions = jnp.argmax(timesteps.observation.action_mask, axis=1).astype(jnp.int32)
    states, timesteps = env.step_batch(states, actions)
    actions = jnp.argmax(timesteps.observation.action_mask, axis=1).astype(jnp.int32)
    result, compiled = compile_log(lambda: env.step_batch(states, actions))
    assert not compiled
    chex.assert_trees_all_equal(result, jax.jit(env.step_batch)(states, actions))
    for ended in (np.arange(16) < 1, np.arange(16) < 9):  # the few games' branch and every game's
        last = jnp.asarray(ended)
        env.reset_finished(states, ~last)
        result, compiled = compile_log(lambda: env.reset_finished(states, last))
        assert not compiled
        chex.assert_trees_all_equal(result, jax.jit(env.reset_finished)(states, last))


def random_rollout(env, key, num_envs, num_steps):
    """Random legal play under jit + vmap + scan; returns the stacked timesteps."""

    @jax.jit
    def run(key):
        reset_key, play_key = jax.random.split(key)
        states, first = jax.vmap(env.reset)(jax.random.split(reset_key, num_envs))

        def one_step(carry, step_key):
            states, observation = carry
            keys = jax.random.split(step_key, num_envs)
            actions = jax.vmap(game.random_legal_action)(keys, observation.action_mask)
            states, ts = jax.vmap(env.step)(states, actions)
            return (states, ts.observation), ts

        _, timesteps = jax.lax.scan(
            one_step, (states, first.observation), jax.random.split(play_key, num_steps)
        )
        return timesteps

    return run(key)


def test_random_batched_episodes_are_consistent_and_seeded():
    env = DustEnv(auto_reset=True)
    timesteps = random_rollout(env, jax.random.key(0), num_envs=64, num_steps=200)
    for leaf in jax.tree.leaves(timesteps):
        assert np.all(np.isfinite(np.asarray(leaf, dtype=np.float64)))
    rewards = np.asarray(timesteps.reward)
    last = np.asarray(timesteps.last())
    # Random legal play never clicks an empty cell; only clears end episodes here.
    assert set(np.unique(rewards)) == {-1.0, 10.0}
    np.testing.assert_array_equal(last, rewards == 10.0)
    np.testing.assert_array_equal(np.asarray(timesteps.discount), np.where(last, 0.0, 1.0))
    lengths = np.asarray(timesteps.extras["clicks"])[last]
    assert lengths.min() >= 5  # 5 colours need 5 clicks
    # The same play (a uniformly random occupied cell) by the NumPy reference, on its own boards.
    rng = np.random.default_rng(0)
    reference = [len(ref.play_random_game(ref.random_board(rng, 8, 6, 5), rng)) for _ in range(600)]
    standard_error = np.hypot(np.std(reference, ddof=1) / np.sqrt(len(reference)),
                              np.std(lengths, ddof=1) / np.sqrt(len(lengths)))
    assert abs(lengths.mean() - np.mean(reference)) < 5 * standard_error, (lengths.mean(), np.mean(reference), standard_error)
    again = random_rollout(env, jax.random.key(0), num_envs=64, num_steps=200)
    np.testing.assert_array_equal(np.asarray(again.observation.board), np.asarray(timesteps.observation.board))
    other = random_rollout(env, jax.random.key(1), num_envs=64, num_steps=200)
    assert not np.array_equal(np.asarray(other.reward), rewards)


def _raw(tree):
    return jax.tree.leaves(jax.tree.map(
        lambda leaf: jax.random.key_data(leaf) if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key) else leaf, tree
    ))


def _game(tree, index):
    return jax.tree.map(lambda leaf: leaf[index], tree)


@pytest.mark.slow
@pytest.mark.parametrize("max_clicks", [None, 1])  # 1: every game resets at once (no gathering)
def test_vmapped_step_equals_each_game_stepped_alone(max_clicks):
    env = DustEnv(GameConfig(5, 4, 3), auto_reset=True, max_clicks=max_clicks)
    num_games = 48
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(3), num_games))
    batched, alone = jax.jit(jax.vmap(env.step)), jax.jit(env.step)
    resets = gathered = 0
    for step in range(12):
        masks = states.board.reshape(num_games, -1) != 0
        actions = jax.vmap(game.random_legal_action)(jax.random.split(jax.random.key(step), num_games), masks)
        actions = actions.at[0].set(-1).at[1].set(20)  # outside the board: a no-op click
        next_states, timesteps = batched(states, actions)
        for i in range(num_games):
            one = _game((next_states, timesteps), i)
            for got, want in zip(_raw(one), _raw(alone(_game(states, i), actions[i]))):
                np.testing.assert_array_equal(got, want)
        assert np.all(np.asarray(timesteps.extras["removed"])[:2] == 0)
        finished = int(np.sum(timesteps.last()))
        gathered += 0 < finished <= num_games // 8  # a step that drew only the finished games' boards
        resets += finished
        states = next_states
    assert resets > 0 and (gathered > 0 or max_clicks == 1)
    # One action for every game (unmapped) is broadcast.
    broadcast = jax.vmap(env.step, in_axes=(0, None))(states, jnp.int32(5))
    for got, want in zip(_raw(broadcast), _raw(batched(states, jnp.full(num_games, 5, jnp.int32)))):
        np.testing.assert_array_equal(got, want)


def test_env_game_matches_reference_rewards():
    env = DustEnv()
    rng = np.random.default_rng(11)
    step = jax.jit(env.step)
    for _ in range(5):
        start = ref.random_board(rng, 8, 6, 5)
        clicks = ref.play_random_game(start, rng)
        state, _ = env.reset(jax.random.key(0), board=jnp.asarray(start))
        total = 0.0
        expected_board = start
        for x, y in clicks:
            state, ts = step(state, action(x, y, height=6))
            expected_board, _ = ref.click(expected_board, x, y)
            np.testing.assert_array_equal(state.board, expected_board)
            total += float(ts.reward)
        assert total == 10.0 - (len(clicks) - 1)
        assert bool(ts.last())


def test_state_bytes_count_the_board_the_click_counter_and_the_key():
    from jaxdust.core.env import DustEnv
    from jaxdust.core.game import GameConfig

    assert DustEnv().state_bytes() == 8 * 6 + 4 + 8  # int8 cells, int32 clicks, two uint32 key words
    assert DustEnv(GameConfig(15, 15, 5)).state_bytes() == 225 + 4 + 8


def test_a_numpy_integer_click_cap_is_taken_as_its_int():
    """``max_clicks=np.int64(30)`` (a count read from an array) is 30, as GameConfig takes its
    sizes: the same env, equal and hashed alike (one compiled step); a bool is still no cap."""
    env = make("Dust-6x6x5-v0", max_clicks=np.int64(30))
    assert env == make("Dust-6x6x5-v0", max_clicks=30) and type(env.max_clicks) is int
    assert hash(env) == hash(make("Dust-6x6x5-v0", max_clicks=30))
    with pytest.raises(TypeError, match="max_clicks must be an int or None, got True"):
        DustEnv(max_clicks=True)


def test_a_batch_stepped_with_auto_reset_resets_only_the_games_that_ended():
    """In a batch of 16 (room to gather 2 resets) where no game ends, no game is dealt a
    fresh board: the resets' padding must point past the batch, not at its last game."""
    env = DustEnv(GameConfig(4, 2, 3), auto_reset=True)
    board = jnp.asarray([[1, 2], [3, 1], [2, 3], [1, 2]], jnp.int8)  # settled; (0, 0) is a group of one
    states, _ = jax.vmap(lambda key: env.reset(key, board))(jax.random.split(jax.random.key(0), 16))
    after, timesteps = jax.vmap(env.step)(states, jnp.zeros(16, jnp.int32))
    assert not bool(jnp.any(timesteps.last()))
    np.testing.assert_array_equal(after.board, timesteps.extras["next_board"])  # nobody was reset
    np.testing.assert_array_equal(after.clicks, np.ones(16))
    alone, _ = env.step(jax.tree.map(lambda leaf: leaf[15], states), jnp.int32(0))
    np.testing.assert_array_equal(after.board[15], alone.board)


def test_a_capped_game_ignores_clicks_on_any_cell():
    """Past ``max_clicks`` a click changes nothing, on any cell: a capped game's click is
    sent off the board, not to a cell (the top-right one here is occupied)."""
    env = DustEnv(GameConfig(4, 2, 3), max_clicks=1)
    board = jnp.asarray([[1, 2], [3, 1], [2, 3], [1, 2]], jnp.int8)
    state, _ = env.reset(jax.random.key(0), board)
    state, timestep = env.step(state, jnp.int32(0))  # removes the single 1 at (0, 0)
    assert bool(timestep.last()) and int(state.board[3, 1]) != 0
    for action in (0, 7):
        after, timestep = env.step(state, jnp.int32(action))
        np.testing.assert_array_equal(after.board, state.board)
        assert int(timestep.extras["removed"]) == 0 and float(timestep.reward) == 0.0


@pytest.mark.parametrize("with_board", [False, True])
def test_a_reset_outside_jit_is_one_program_equal_to_a_jitted_one(with_board, compile_log):
    """Eagerly, op by op, a reset cost ~12 steps on a CPU; it runs as one program,
    compiled once per configuration (an odd size, new to this process), and gives what a
    reset inside the user's jit gives."""
    env = DustEnv(GameConfig(9, 2, 7, "former"))
    key, first_key = jax.random.key(11), jax.random.key(3)
    board = env.reset(jax.random.key(5))[0].board if with_board else None
    _, compiled = compile_log(lambda: env.reset(first_key, board))
    assert sum(message.startswith("Compiling ") for message in compiled) <= 1
    result, compiled = compile_log(lambda: env.reset(key, board))
    assert not compiled
    chex.assert_trees_all_equal(result, jax.jit(env.reset)(key, board))
    chex.assert_trees_all_equal(env.init(key, board), result[0])
