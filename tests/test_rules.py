"""The rule sets of the family (dust, former, samegame, clickomania) in the JAX core and
environment, against the independent reference ``tests/family_reference.py`` and the
published sample of UVa 758 "The Same Game"."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests import family_reference as ref

import jaxdust
from jaxdust.core import game
from jaxdust.core.game import GameConfig

SIZES = [(4, 3), (5, 5), (8, 6), (7, 9), (10, 10), (15, 10)]
CLICKS_PER_RULES = 25_000  # 100,000 clicks over the four rule sets


def _step(rules):
    return jax.jit(jax.vmap(lambda board, action: game.click_action(board, action, rules)))


def _masks(rules):
    return jax.jit(jax.vmap(lambda board: (game.legal_action_mask(board, rules), game.is_over(board, rules))))


@pytest.mark.slow
@pytest.mark.parametrize("rules", game.RULES)
def test_clicks_equal_the_reference(rules):
    """Random games in lockstep, on every size: each click (mostly legal, some on empty
    cells or groups below the minimum) gives the reference's board and removed count, and
    the legal cells and the end of the game agree."""
    _play_against_the_reference(rules, SIZES, CLICKS_PER_RULES)


@pytest.mark.parametrize("rules", game.RULES)
def test_clicks_equal_the_reference_on_one_size(rules):
    """The same on one size, a few hundred clicks: the quick tier's check of every rule set."""
    _play_against_the_reference(rules, [(5, 4)], 640)


def _play_against_the_reference(rules: str, sizes: list[tuple[int, int]], total_clicks: int) -> None:
    rng = np.random.default_rng(sorted(game.RULES).index(rules))
    clicks = 0
    for width, height in sizes:
        games = 64
        boards = np.stack([ref.random_settled_board(rng, width, height, int(rng.integers(2, 6)), rules)
                           for _ in range(games)])
        step, masks = _step(rules), _masks(rules)
        while clicks < total_clicks * (sizes.index((width, height)) + 1) / len(sizes):
            legal, over = map(np.asarray, masks(jnp.asarray(boards)))
            for board, cells, done in zip(boards, legal, over):
                expected = {cell for cluster in ref.clusters(board) if len(cluster) >= ref.min_group(rules)
                            for cell in cluster}
                assert set(zip(*np.nonzero(cells))) == expected
                assert bool(done) == ref.is_over(board, rules)
            any_cell = rng.integers(0, width * height, games)
            legal_flat = legal.reshape(games, -1)
            chosen = np.array([rng.choice(np.flatnonzero(row)) if row.any() and rng.random() < 0.9 else cell
                               for row, cell in zip(legal_flat, any_cell)])
            new, removed = map(np.asarray, step(jnp.asarray(boards), jnp.asarray(chosen, jnp.int32)))
            for board, action, board_after, count in zip(boards, chosen, new, removed):
                expected_board, expected_count = ref.click(board, *divmod(int(action), height), rules)
                np.testing.assert_array_equal(board_after, expected_board)
                assert count == expected_count
            clicks += games
            finished = np.asarray(masks(jnp.asarray(new))[1])
            boards = np.array(new)
            for index in np.flatnonzero(finished):  # a fresh game where one ended
                boards[index] = ref.random_settled_board(rng, width, height, int(rng.integers(2, 6)), rules)
    assert clicks >= total_clicks


@pytest.mark.slow
@pytest.mark.parametrize("rules", game.RULES)
def test_settle_equals_the_reference(rules):
    rng = np.random.default_rng(1)
    for width, height in SIZES:
        boards = np.stack([ref.random_board(rng, width, height, 4) * (rng.random((width, height)) < 0.6)
                           for _ in range(50)]).astype(np.int8)
        settled = np.asarray(jax.vmap(lambda b: game.contract(b, rules))(jnp.asarray(boards)))
        for board, result in zip(boards, settled):
            np.testing.assert_array_equal(result, ref.settle(board, rules))


@pytest.mark.slow
def test_uva_758_sample_with_the_jax_rules():
    """The judge's largest-group greedy (ties: leftmost, then bottommost) played with the
    JAX click: the three sample games' moves and final scores as published."""
    published = [(3661, 1, [(4, 1, 32, "B"), (2, 1, 39, "R"), (1, 1, 37, "G"), (3, 4, 11, "B"), (1, 1, 8, "R"),
                            (2, 1, 6, "G"), (1, 6, 6, "B"), (1, 2, 5, "R"), (1, 2, 5, "G")]),
                 (4920, 0, [(1, 1, 30, "G"), (1, 1, 30, "R"), (1, 1, 30, "B"), (1, 1, 30, "G"), (1, 1, 30, "R")]),
                 (0, 150, [])]
    from tests.test_family_reference import UVA758_SAMPLE_INPUT
    click = jax.jit(lambda board, action: game.click_action(board, action, "samegame"))
    clickable_sizes = jax.jit(lambda board: (jnp.where(game.legal_action_mask(board, "samegame"),
                                                       game.cluster_sizes(board), 0), game.is_over(board, "samegame")))
    for board, (score, remaining, moves) in zip(ref.parse_uva758(UVA758_SAMPLE_INPUT), published):
        board, total, played = jnp.asarray(board, jnp.int8), 0, []
        while not bool((state := clickable_sizes(board))[1]):
            action = int(np.argmax(np.asarray(state[0]).reshape(-1)))  # ties: leftmost column, then bottommost
            colour = ref.UVA_LETTERS[int(board.reshape(-1)[action])]
            board, removed = click(board, action)
            x, y = divmod(action, 10)
            played.append((y + 1, x + 1, int(removed), colour))
            total += int(game.points(removed))
        total += game.CLEAR_BONUS if bool(game.is_done(board)) else 0
        assert played == moves
        assert (total, int(jnp.sum(board != 0))) == (score, remaining)


@pytest.mark.parametrize("rules", game.RULES)
def test_mirror_symmetric_says_where_a_mirrored_board_plays_the_mirrored_game(rules):
    """``game.mirror_symmetric`` against the reference: where it says so, every legal click
    of a settled board, mirrored, is the mirrored click of the mirror image (so keys and
    data sets may merge the two); where it does not, some click is not."""
    rng = np.random.default_rng(5)
    for width in range(2, 8):
        commutes = True
        for _ in range(40):
            board = ref.random_settled_board(rng, width, 3, 3, rules)
            for x, y in ref.legal_moves(board, rules):
                child = ref.click(board, x, y, rules)[0]
                commutes &= np.array_equal(child[::-1], ref.click(board[::-1], width - 1 - x, y, rules)[0])
        assert commutes == game.mirror_symmetric(rules, width), (rules, width)


def test_unknown_rules_are_refused_with_the_known_names():
    with pytest.raises(ValueError, match="unknown rules 'same'; known: dust, former, samegame, clickomania"):
        GameConfig(rules="same")
    with pytest.raises(ValueError, match="known: dust"):
        game.click(jnp.zeros((4, 3), jnp.int8), 0, 0, rules="tetris")


FAMILY_IDS = ["Dust-8x6x5-v0", "Former-7x9x4-v0", "SameGame-15x15x5-v0", "Clickomania-10x10x4-v0"]


@pytest.mark.parametrize("env_id", FAMILY_IDS)
def test_env_rewards_masks_and_ends_follow_the_rules(env_id):
    """Random legal games through ``jax.vmap(env.step)``: masks, rewards and episode ends
    as the reference says, and a SameGame game's return is its line's points."""
    env = jaxdust.make(env_id)
    rules = env.game.rules
    games = 8
    states, timesteps = jax.vmap(env.reset)(jax.random.split(jax.random.key(3), games))
    step = jax.jit(jax.vmap(env.step))
    boards = np.asarray(states.board)
    lines, returns, done = [[] for _ in range(games)], np.zeros(games), np.zeros(games, bool)
    rng = np.random.default_rng(0)
    while not done.all():
        masks = np.asarray(timesteps.observation.action_mask)
        actions = np.array([rng.choice(np.flatnonzero(mask)) if mask.any() else 0 for mask in masks], np.int32)
        states, timesteps = step(states, jnp.asarray(actions))
        for index in np.flatnonzero(~done):
            board, action = boards[index], int(actions[index])
            x, y = divmod(action, env.game.height)
            expected, removed = ref.click(board, x, y, rules)
            np.testing.assert_array_equal(np.asarray(states.board[index]), expected)
            assert set(np.flatnonzero(masks[index])) == {cx * env.game.height + cy for cluster in ref.clusters(board)
                                                         if len(cluster) >= ref.min_group(rules)
                                                         for cx, cy in cluster}
            cleared = not expected.any()
            reward = {"clicks": 10.0 if cleared else -1.0, "points": ref.points(removed) + 1000 * cleared,
                      "cells_left": removed}[game.rules_of(rules).objective]
            assert float(timesteps.reward[index]) == reward
            over = ref.is_over(expected, rules)
            assert bool(timesteps.last()[index]) == over and float(timesteps.discount[index]) == (0.0 if over else 1.0)
            lines[index].append((x, y))
            returns[index] += reward
            done[index] = over
        boards = np.asarray(states.board)
    start = np.asarray(jax.vmap(env.reset)(jax.random.split(jax.random.key(3), games))[0].board)
    if rules == "samegame":
        for board, line, total in zip(start, lines, returns):
            assert jaxdust.score(board, line, "samegame") == ref.line_points(board, line, "samegame") == total
    if rules == "clickomania":
        for board, line, total in zip(start, lines, returns):
            assert jaxdust.score(board, line, "clickomania") == board.size - total


def test_a_samegame_game_that_clears_gets_the_clear_bonus_on_its_last_click():
    """Random 15x15x5 games never clear, so the test above never reaches the bonus."""
    env = jaxdust.make("SameGame-15x15x5-v0")
    board = np.ones((15, 15), np.int8)
    board[:, :5] = 2  # two clicks: the 75 twos at the bottom, then the 150 ones above them
    state, timestep = env.reset(jax.random.key(0), jnp.asarray(board))
    rewards = []
    for x, y in ((0, 0), (0, 0)):
        state, timestep = env.step(state, jnp.int32(x * 15 + y))
        rewards.append(float(timestep.reward))
    assert rewards == [ref.points(75), ref.points(150) + 1000] and rewards[-1] == (150 - 2) ** 2 + 1000
    assert bool(timestep.last()) and float(timestep.discount) == 0.0
    assert sum(rewards) == jaxdust.score(board, [(0, 0), (0, 0)], "samegame")


@pytest.mark.slow
@pytest.mark.parametrize("env_id", FAMILY_IDS)
def test_adapters_and_pictures_for_every_family_id(env_id):
    import gymnasium

    import jaxdust.adapters.gym_env  # noqa: F401  (registers the jaxdust/ ids)

    from jaxdust.adapters.jumanji_env import DustJumanji
    env = jaxdust.make(env_id)
    gym_env = gymnasium.make(f"jaxdust/{env_id}", render_mode="rgb_array")
    observation, info = gym_env.reset(seed=0)
    mask = info["action_mask"] if "action_mask" in info else gym_env.unwrapped.action_masks()
    np.testing.assert_array_equal(mask, np.asarray(game.legal_action_mask(jnp.asarray(observation),
                                                                          env.game.rules)).reshape(-1))
    _, reward, terminated, truncated, _ = gym_env.step(int(np.flatnonzero(mask)[0]))
    assert np.isfinite(reward) and not truncated
    frame = gym_env.render()
    assert frame.shape == (env.game.height * 16, env.game.width * 16, 3)
    jumanji_env = DustJumanji(env_id)
    state, timestep = jumanji_env.reset(jax.random.key(0))
    assert jumanji_env.action_spec.num_values == env.game.num_cells
    np.testing.assert_array_equal(timestep.observation.action_mask,
                                  game.legal_action_mask(state.board, env.game.rules).reshape(-1))
    board = np.asarray(state.board)
    legal = ref.legal_moves(board, env.game.rules)[:3]
    boards, clusters = jaxdust.positions(board, legal[:1], env.game.rules)
    assert jaxdust.game_gif(boards, clusters, cell_size=8)[:6] == b"GIF89a"


def test_boards_are_checked_and_lines_scored_under_their_rules():
    unsettled_samegame = [[1, 1, 2], [0, 0, 0], [1, 0, 0], [0, 0, 0]]
    with pytest.raises(ValueError, match=r"column x=1 is empty but a column right of it is not"):
        jaxdust.parse_board(unsettled_samegame, rules="samegame")
    jaxdust.parse_board(unsettled_samegame, rules="former")  # gravity only: settled
    with pytest.raises(ValueError, match=r"row y=0: the left half has a gap"):
        jaxdust.parse_board(unsettled_samegame, rules="dust")
    with pytest.raises(ValueError, match=r"cell \(0, 2\) floats"):
        jaxdust.parse_board([[1, 0, 2], [1, 2, 0]], rules="former")
    board = [[1, 1, 2], [1, 2, 0], [2, 2, 0], [0, 0, 0]]
    assert jaxdust.score(board, [(0, 0), (0, 0)], "samegame") == 1 + 4 + 1000
    assert jaxdust.score(board, [(0, 0), (0, 0)], "clickomania") == 0
    assert jaxdust.score(board, [(0, 0), (0, 0)], "former") == 2
    with pytest.raises(ValueError, match=r"click 0: \(0, 2\) is a group of 1; samegame removes groups of 2"):
        jaxdust.score(board, [(0, 2)], "samegame")
    # A game stopped early has no result under its rules; partial=True scores it as it stands.
    for rules, so_far in (("former", 1), ("samegame", 1), ("clickomania", 4)):
        group = "" if rules == "former" else ", a group of 2 or more among them"
        with pytest.raises(ValueError, match=f"leaves 4 cells{group}; score takes a whole game under the {rules}"):
            jaxdust.score(board, [(0, 0)], rules)
        assert jaxdust.score(board, [(0, 0)], rules, partial=True) == so_far
    # A SameGame game ends with no group of 2 left, cells or not: one click here ends it.
    assert jaxdust.score([[1, 1, 2], [3, 0, 0]], [(0, 0)], "samegame") == 0
    assert jaxdust.score([[1, 1, 2], [3, 0, 0]], [(0, 0)], "clickomania") == 2


@pytest.mark.parametrize("learner", ["avi", "dqn", "imitation"])
def test_learners_refuse_rules_they_do_not_play_yet(learner):
    from jaxdust.learn import learners
    config_class = type(learners.get(learner).presets["default"])
    with pytest.raises(ValueError, match=f"{learner} plays the dust, former rules so far, not 'samegame'"):
        config_class(game=GameConfig(15, 15, 5, "samegame"))


@pytest.mark.slow
def test_throughput_benchmark_plays_every_id_beside_the_dust_game(tmp_path):
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "throughput.json"
    # A process of its own: the benchmark sets XLA_FLAGS (one host device per core) on import.
    subprocess.run([sys.executable, os.path.join(root, "benchmarks", "env_throughput.py"), "--batch-sizes", "64",
                    "--min-clicks", "512", "--repeats", "1", "--reference-seconds", "0.2",
                    "--ids", "Former-7x9x4-v0,Dust-8x6x5-v0", "--id-games", "64", "--out", str(out)],
                   check=True, capture_output=True, timeout=600)
    rows = {row["id"]: row for row in json.loads(out.read_text())["ids"]}
    assert rows["Dust-8x6x5-v0"]["vs_dust_8x6x5"] == 1.0 and rows["Dust-8x6x5-v0"]["speedup_vs_numpy"] > 0
    assert rows["Former-7x9x4-v0"]["speedup_vs_numpy"] is None  # the NumPy oracle plays the dust game only
    assert rows["Former-7x9x4-v0"]["clicks_per_second"] > 0 and rows["Former-7x9x4-v0"]["cells"] == 63


def test_a_timed_call_plays_at_least_its_clicks_and_at_most_its_steps(monkeypatch):
    """The GPU suite caps a call's steps (small batches on a GPU are launch-bound); the rate
    is the clicks a call played over its time either way."""
    import os
    # The benchmark adds one host device per core to XLA_FLAGS on import, unless a count is
    # there already; the count set here leaves with the test, so no later subprocess sees it.
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=1")
    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    import env_throughput
    env = jaxdust.make("Dust-6x6x5-v0", auto_reset=True)
    capped = env_throughput.measure(env, 16, jax.devices()[:1], 1 << 12, 1, seed=0, max_steps=24)
    assert capped["steps_per_call"] == 24  # 256 steps wanted for 4,096 clicks
    assert capped["clicks_per_second"] == pytest.approx(16 * 24 / capped["seconds_per_call"])
    assert env_throughput.measure(env, 16, jax.devices()[:1], 160, 1, seed=0, max_steps=24)["steps_per_call"] == 10
    assert env_throughput.measure(env, 16, jax.devices()[:1], 1 << 12, 1, seed=0)["steps_per_call"] == 256


def test_the_per_id_throughput_table_names_the_numpy_rate_of_each_ratio(monkeypatch, capsys):
    """The per-id table measured the NumPy reference again, the 8x6x5's too, and printed
    "x NumPy" against it without its rate: another figure than the headline's reference."""
    import os
    import types

    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=1")
    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    import env_throughput
    measured = []
    monkeypatch.setattr(env_throughput, "measure", lambda *args, **kwargs: {"clicks_per_second": 4e6})
    monkeypatch.setattr(env_throughput, "numpy_reference_rate",
                        lambda config, *args: measured.append(config.width) or 1e4 * config.width)
    args = types.SimpleNamespace(ids=["Dust-8x6x5-v0", "Dust-6x6x5-v0", "Former-7x9x4-v0"], id_games=4,
                                 min_clicks=8, repeats=1, seed=0, reference_seconds=0.1)
    rows = env_throughput.id_table(args, jax.devices()[:1], {jaxdust.GameConfig(): 2e4})
    assert measured == [6]  # the headline's reference shared, not measured again
    assert [(r["numpy_clicks_per_second"], r["speedup_vs_numpy"]) for r in rows] == [(2e4, 200), (6e4, 4e6 / 6e4),
                                                                                    (None, None)]
    printed = capsys.readouterr().out
    assert "| NumPy reference clicks/s (its size) | x NumPy |" in printed
    assert "| Dust-8x6x5-v0 | 48 | 4,000,000 | 1.00 | 20,000 | 200 | 60 |" in printed


def test_largest_group_plays_the_uva_758_sample_through_play_boards():
    """The batched player and the judge's greedy baseline: the three published games'
    final scores and balls remaining, all boards in one compiled loop."""
    from jaxdust.core.play import play_boards
    from jaxdust.evaluation import baselines
    from tests.test_family_reference import UVA758_SAMPLE_INPUT
    boards = jnp.asarray(np.stack(ref.parse_uva758(UVA758_SAMPLE_INPUT)), jnp.int8)
    played = play_boards(boards, baselines.largest_group, jax.random.key(0), 150, rules="samegame")
    assert np.asarray(played.points).tolist() == [3661, 4920, 0]
    assert np.asarray(played.cells_left).tolist() == [1, 0, 150]
    assert np.asarray(played.clicks).tolist() == [9, 5, 0] and np.asarray(played.cleared).tolist() == [False, True, False]
    random_play = play_boards(boards, baselines.RandomLegal("samegame"), jax.random.key(0), 150, rules="samegame")
    for board, actions, points in zip(np.asarray(boards), np.asarray(random_play.actions), np.asarray(random_play.points)):
        line = [divmod(int(a), 10) for a in actions if a >= 0]
        assert ref.line_points(board, line, "samegame") == points  # every random click was legal
