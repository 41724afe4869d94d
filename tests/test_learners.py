"""Networks, DQN and imitation maths, checkpoints, data parallelism and train.py runs."""

import dataclasses
import hashlib
import itertools
import json
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import types

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jaxdust
from jaxdust.core import configs, files, game, machine, play, progress
from jaxdust.core.env import Rewards
from jaxdust.evaluation import baselines, registry
from jaxdust.learn import agents, avi, checkpoint, cli, dqn, imitation, learners, networks, runs
from jaxdust.search.heuristic import HEURISTIC_WEIGHTS, heuristic_features
from jaxdust.learn.datasets import Dataset, DatasetConfig, load_dataset, make_dataset
from tests import family_reference as fr
from tests.conftest import TINY_DQN, WHOLE_DQN, host_devices_flags, run_log

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = dict(num_envs=32, chunk_iterations=10, hidden=(32,), buffer_size=1024, batch_size=32,
            learning_starts=64, features=False)


def board(columns):
    return jnp.asarray(columns, jnp.int8)


# ---------------------------------------------------------------------------------------
# Networks
# ---------------------------------------------------------------------------------------


def test_masked_argmax_and_max():
    values = jnp.array([[3.0, 9.0, 5.0], [1.0, 2.0, 3.0]])
    mask = jnp.array([[True, False, True], [False, False, False]])
    np.testing.assert_array_equal(networks.masked_argmax(values, mask)[:1], [2])
    np.testing.assert_array_equal(networks.masked_max(values, mask), [5.0, 0.0])
    # a network whose outputs overflowed still picks a legal cell (it picked cell 0, masked out)
    np.testing.assert_array_equal(networks.masked_argmax(jnp.array([-jnp.inf, 9.0, -jnp.inf]),
                                                         jnp.array([False, False, True])), 2)


@pytest.mark.slow
def test_rule_features_by_hand():
    # y=1: . 1 2 . / y=0: 2 1 3 2 : the 1s are one cluster of size 2 and finish colour 1.
    per_cell, board_features = networks.rule_features(board([[2, 0], [1, 1], [3, 2], [2, 0]]))
    np.testing.assert_allclose(per_cell[2], [0.2, 0.1, 1.0])  # cell (1, 0)
    np.testing.assert_allclose(per_cell[0], [0.1, 0.3, 0.0])  # cell (0, 0): colour 2 has 3 clusters
    np.testing.assert_allclose(per_cell[1], [0.0, 0.0, 0.0])  # empty
    np.testing.assert_allclose(board_features, [3, 2, 0, 6, 2])


@pytest.mark.slow
def test_value_head_starts_at_the_hand_made_estimate():
    network = networks.PolicyValueNetwork((16,), 5, features=True)
    boards = jnp.stack([r.board for r in jaxdust.read_board_file(os.path.join(ROOT, "data/boards/eval_8x6x5.txt"))[:4]])
    params = network.init(jax.random.key(0), boards)
    _, value = network.apply(params, boards)
    expected = jax.vmap(heuristic_features)(boards) @ jnp.asarray(HEURISTIC_WEIGHTS, jnp.float32)
    np.testing.assert_allclose(value, expected, rtol=1e-6)


@pytest.mark.slow
def test_conv_torso_starts_at_the_estimate_and_sees_where_cells_are():
    boards = jnp.stack([r.board for r in jaxdust.read_board_file(os.path.join(ROOT, "data/boards/eval_8x6x5.txt"))[:3]])
    network = networks.ValuePolicyNetwork((16,), 5, prior=True, conv=(4, 4))
    params = network.init(jax.random.key(0), boards)
    value, logits = network.apply(params, boards)
    expected = jax.vmap(heuristic_features)(boards) @ jnp.asarray(HEURISTIC_WEIGHTS, jnp.float32)
    np.testing.assert_allclose(value, expected, rtol=1e-6)
    np.testing.assert_allclose(logits, 0.0)  # a uniform policy
    assert params["params"]["Conv_0"]["kernel"].shape == (3, 3, 6 + 3 + 4, 4)
    # The shared cell head reads each cell's planes and its convolution channels.
    assert params["params"]["cell_planes"]["kernel"].shape == (6 + 3 + 4 + 4, 64)

    planes = np.asarray(networks.board_planes(boards, 5))
    flat, _ = networks.encode_with_features(boards, 5)
    np.testing.assert_array_equal(planes[..., :6].reshape(3, -1), np.asarray(flat)[:, : 48 * 6])
    np.testing.assert_array_equal(planes[..., 6:9].reshape(3, -1), np.asarray(flat)[:, 48 * 6: 48 * 9])
    # Position planes: column 0 and 7 are equally far from the centre, in opposite halves.
    assert planes[0, 0, 0, 9] == planes[0, 7, 0, 9] == 0.4375 and planes[0, 3, 0, 9] == 0.0625
    assert planes[0, 0, 0, 10] == 1 and planes[0, 7, 0, 10] == 0 and np.isclose(planes[0, 2, 5, 11], 5 / 6)
    # A colour the network has no plane for was all zeros, read as an empty cell.
    with pytest.raises(ValueError, match="one_hot: the board holds colour 6, above colors=5"):
        networks.encode(boards.at[0, 0, 0].set(6), 5)


@pytest.mark.slow
def test_network_without_rule_features_sees_only_cells():
    boards = jnp.stack([r.board for r in jaxdust.read_board_file(os.path.join(ROOT, "data/boards/eval_8x6x5.txt"))[:3]])
    for conv, first, inputs in (((), "Dense_0", 48 * 6), ((4,), "Conv_0", 6 + 4)):
        network = networks.ValuePolicyNetwork((16,), 5, prior=False, conv=conv, features=False)
        params = network.init(jax.random.key(0), boards)
        kernel = params["params"]["MLP_0"][first]["kernel"] if not conv else params["params"][first]["kernel"]
        assert kernel.shape[-2] == inputs  # one-hot cells (and position planes) only
        assert params["params"]["cell_planes"]["kernel"].shape[0] == 6 + 4 + len(conv) * 4  # no rule features
        value, _ = network.apply(params, boards)
        np.testing.assert_allclose(value, 10.0)  # no prior: a constant start


@pytest.mark.slow
@pytest.mark.parametrize("rules", ["dust", "former"])
def test_full_backup_targets_every_cell_like_the_oracle(rules):
    size = jaxdust.GameConfig(5, 4, 3, rules)
    boards = jax.vmap(lambda k: jaxdust.core.game.random_board(k, size))(jax.random.split(jax.random.key(7), 5))

    def q_target(children):  # any fixed function of the child will do: its occupied cells, per cell
        occupied = jnp.sum(children != 0, axis=(1, 2)).astype(jnp.float32)
        return -occupied[:, None] + 0.1 * jnp.arange(20, dtype=jnp.float32)

    config = dqn.DQNConfig(game=size, gamma=0.9)
    target, trained = dqn.full_backup_targets(config, q_target, boards, slots=5 * 20)
    target, trained = np.asarray(target), np.asarray(trained)
    for i, board in enumerate(np.asarray(boards)):
        for cell in range(20):
            x, y = divmod(cell, 4)
            assert trained[i, cell] == (board[x, y] != 0)
            if not board[x, y]:
                continue
            child, _ = fr.click(board, x, y, rules)
            if not child.any():
                expected = config.rewards.clear
            else:  # the best legal cell of the child: the last occupied one in cell order
                best = max(c for c in range(20) if child.reshape(-1)[c])
                expected = config.rewards.click + 0.9 * (-(child != 0).sum() + 0.1 * best)
            assert np.isclose(target[i, cell], expected), (i, cell)

    few = dqn.full_backup_targets(config, q_target, boards, slots=3)[1]  # children beyond the slots: no target
    assert 0 < int(np.sum(few)) < int(np.sum(trained))


@pytest.mark.slow
def test_full_backup_dqn_learns_optimal_costs_on_small_boards():
    size = jaxdust.GameConfig(4, 3, 3)
    # (A target copied every 5 updates at 3e-3 oscillates here by +-7 clicks.)
    config = dqn.DQNConfig(game=size, hidden=(64, 64), features=False, num_envs=128, total_steps=128 * 800,
                           chunk_iterations=800, buffer_size=16384, batch_size=128, learning_starts=512,
                           learning_rate=1e-3, backup="full", child_share=1.0, target_period=50)
    init, run_chunk = dqn.make_dqn(config)
    runner, _ = run_chunk(init(jax.random.key(0)))
    boards = jax.vmap(lambda k: jaxdust.core.game.random_board(k, size))(jax.random.split(jax.random.key(11), 60))
    optimum = np.array([jaxdust.solve(b, colors=3).length for b in np.asarray(boards)], float)
    clicks_left = np.asarray(agents.QScorer((64, 64), 3, False, config.rewards)(boards, runner.train.params))
    # Untrained it is ~9 clicks off; measured 0.57 (signed +0.32), the sampled target 0.72 (0.2.88).
    assert np.mean(np.abs(clicks_left - optimum)) < 0.8
    assert abs(np.mean(clicks_left - optimum)) < 0.6


def test_q_scorer_turns_values_into_clicks_left():
    scorer = agents.QScorer((8,), 5)
    network = networks.QNetwork((8,), 5)
    boards = jnp.stack([board(np.full((8, 6), 1)), board(np.zeros((8, 6), int))])
    params = network.init(jax.random.key(1), boards)
    best = float(jnp.max(network.apply(params, boards[:1])))
    np.testing.assert_allclose(scorer(boards, params), [(best - 10.0) / -1.0 + 1.0, 0.0], rtol=1e-6)



# Near 1 the plain logarithms lost the clicks: 1 - 1e-7 read a board 10 clicks from empty
# as 8.5, and 1 - 1e-8 (float32's 1, the gamma training used) read every board as NaN or -inf.
@pytest.mark.parametrize("gamma", [1.0, 0.8, 0.97, 1 - 1e-7, 1 - 1e-8])
def test_clicks_from_value_inverts_the_discounted_return(gamma):
    rewards = jaxdust.Rewards()
    clicks = np.arange(1, 30)
    # Played out click by click: n - 1 clicks of `click`, then the clearing one, discounted
    # by the float32 gamma that training uses.
    g = float(np.float32(gamma))
    returns = [sum(g**k * rewards.click for k in range(n - 1)) + g ** (n - 1) * rewards.clear for n in clicks]
    np.testing.assert_allclose(agents.clicks_from_value(jnp.array(returns, jnp.float32), rewards, gamma),
                               clicks, rtol=1e-4)
    # Values no game reaches (above a one-click clear, below clicking forever) keep their order.
    odd = jnp.array([rewards.clear + 5.0, -1e6, -2e6], jnp.float32)
    found = np.asarray(agents.clicks_from_value(odd, rewards, gamma))
    assert np.all(np.isfinite(found)) and found[0] <= 1.0 and found[1] <= found[2]

# ---------------------------------------------------------------------------------------
# DQN maths
# ---------------------------------------------------------------------------------------


def window_of(rewards, discounts, lasts):
    n, games = len(rewards), len(rewards[0])
    boards = jnp.arange(n * games, dtype=jnp.int8).reshape(n, games, 1, 1) * jnp.ones((1, 1, 2, 1), jnp.int8)
    step = dqn.Batch(boards, jnp.zeros((n, games), jnp.int32), jnp.asarray(rewards, jnp.float32),
                     jnp.asarray(discounts, jnp.float32), boards + 100)
    return dqn.Window(step, jnp.asarray(lasts))


def test_n_step_returns_by_hand():
    # Game 0: three ordinary clicks. Game 1: cleared at the second click. Game 2: truncated first.
    window = window_of(rewards=[[-1, -1, -1], [-1, 10, -1], [-1, -1, -1]],
                       discounts=[[1, 1, 1], [1, 0, 1], [1, 1, 1]],
                       lasts=[[False, False, True], [False, True, False], [False, False, False]])
    folded = dqn.n_step_transition(window, gamma=0.5)
    np.testing.assert_allclose(folded.rewards, [-1 - 0.5 - 0.25, -1 + 0.5 * 10, -1])
    np.testing.assert_allclose(folded.discounts, [0.125, 0.0, 0.5])
    # Bootstrap from the board after the last counted click (boards + 100 hold the index).
    np.testing.assert_array_equal(folded.next_boards[:, 0, 0], [100 + 6, 100 + 4, 100 + 2])


def test_td_targets_by_hand():
    q_next_target = jnp.array([[1.0, 5.0, 3.0], [2.0, 2.0, 2.0]])
    q_next_online = jnp.array([[0.0, 1.0, 9.0], [0.0, 0.0, 0.0]])
    next_boards = jnp.array([[[1, 0, 1]], [[0, 0, 0]]], jnp.int8).reshape(2, 3, 1)
    batch = dqn.Batch(next_boards, jnp.zeros(2, jnp.int32), jnp.array([-1.0, 10.0]), jnp.array([1.0, 0.0]), next_boards)
    q_taken = jnp.array([4.0, 4.0])
    plain = dqn.DQNConfig(double_dqn=False)
    np.testing.assert_allclose(dqn.td_targets(plain, None, q_next_target, q_taken, batch), [-1 + 3, 10])
    double = dqn.DQNConfig(double_dqn=True)  # online picks cell 2, the target values it
    np.testing.assert_allclose(dqn.td_targets(double, q_next_online, q_next_target, q_taken, batch), [-1 + 3, 10])
    mean = dqn.DQNConfig(bootstrap="mean", mask_actions=False, target_mix=0.9)
    expected = 0.9 * np.array([-1 + 3.0, 10]) + 0.1 * 4.0
    np.testing.assert_allclose(dqn.td_targets(mean, None, q_next_target, q_taken, batch), expected)


def test_replay_ring_wraps_and_gates():
    replay = dqn.replay_init(5, 1, 1)

    def batch(start):
        ids = jnp.arange(start, start + 3)
        boards = ids.astype(jnp.int8).reshape(3, 1, 1)
        return dqn.Batch(boards, ids.astype(jnp.int32), ids.astype(jnp.float32), jnp.ones(3), boards)

    replay = dqn.replay_add(replay, batch(0), valid=False)
    assert int(replay.size) == 0 and int(replay.position) == 0
    replay = dqn.replay_add(dqn.replay_add(replay, batch(0)), batch(3))
    assert int(replay.size) == 5 and int(replay.position) == 1
    np.testing.assert_array_equal(replay.actions, [5, 1, 2, 3, 4])  # 5 overwrote the oldest


def test_original_preset_reproduces_the_post():
    config = dqn.DQNConfig.original()
    assert config.hidden == (1500,) * 5 and config.num_envs == 1000 and config.gamma == 0.8
    assert config.bootstrap == "mean" and not config.mask_actions and config.adaptive_epsilon
    assert config.target_period == 0 and config.buffer_size == config.batch_size == 1000


@pytest.mark.parametrize("config_class", [avi.AVIConfig, dqn.DQNConfig, imitation.ImitationConfig, DatasetConfig])
def test_a_game_that_is_not_a_game_config_is_named(config_class):
    """game=(5, 5, 3) failed with "'tuple' object has no attribute 'rules'"."""
    with pytest.raises(TypeError, match=r"game must be a GameConfig, e.g. GameConfig\(8, 6, 5\).*got tuple \(5, 5, 3\)"):
        config_class(game=(5, 5, 3))


def test_a_new_dqn_run_is_told_when_its_steps_are_not_whole_iterations(capsys):
    """--total-steps 1000 over 32 games made 992 steps without a word."""
    check = learners.get("dqn").check
    check(dqn.DQNConfig(total_steps=1000, **TINY), types.SimpleNamespace(resume=False))
    assert capsys.readouterr().err == ("note: dqn steps all 32 games at once (--num-envs): --total-steps 1000 "
                                       "makes 992 (31 iterations)\n")
    check(dqn.DQNConfig(total_steps=1000, **TINY), types.SimpleNamespace(resume=True))  # told when it started
    check(dqn.DQNConfig(total_steps=32 * 31, **TINY), types.SimpleNamespace(resume=False))
    assert capsys.readouterr().err == ""


def test_adaptive_epsilon_aims_at_most_at_every_click_random():
    """An aim of more random clicks than a game has logged epsilon 1.5e29."""
    config = dqn.DQNConfig(total_steps=32 * 10, adaptive_epsilon=True, random_moves_per_game=1e30, **TINY)
    _, metrics = jax.jit(dqn.make_train(config))(jax.random.key(0))
    assert float(np.max(metrics.epsilon)) == 1.0  # starts at every click random, and stays there


def test_make_train_is_seeded_and_vmaps_over_seeds():
    config = dqn.DQNConfig(total_steps=32 * 25, **TINY)  # two chunks of 10 iterations and one of 5
    train = jax.jit(jax.vmap(dqn.make_train(config)))
    runners, metrics = train(jax.random.split(jax.random.key(0), 2))
    again, _ = train(jax.random.split(jax.random.key(0), 2))
    first = jax.tree.leaves(runners.train.params)[0]
    np.testing.assert_array_equal(first, jax.tree.leaves(again.train.params)[0])
    assert not np.array_equal(first[0], first[1])  # the two seeds learn differently
    assert metrics.loss.shape == (2, 3) and np.all(np.isfinite(np.asarray(metrics.loss)))
    assert np.all(np.asarray(runners.iteration) == 25)  # what the schedules span, not two whole chunks


@pytest.mark.parametrize("name, config, total", [
    ("avi", avi.AVIConfig(total_updates=250, chunk_updates=100), 3), ("avi", avi.AVIConfig(), 30),
    ("dqn", dqn.DQNConfig(total_steps=32 * 25, **TINY), 3)])
def test_a_learners_total_is_its_trainers_without_building_it(name, config, total, monkeypatch):
    """``Learner.total`` is what a finished run resumed is checked against before any
    trainer (or imitation data set) is made."""
    assert learners.get(name).total(config) == total
    built = []
    monkeypatch.setattr(learners, "_lockstep_trainer", lambda make, config, mesh, iterations, chunk, counters:
                        built.append(learners._chunks(iterations, chunk)))
    learners.get(name).trainer(config, types.SimpleNamespace(), None)
    assert built == [total]
    assert learners.get("imitation").total(imitation.ImitationConfig(epochs=7)) == 70  # 10 chunks an epoch
    assert learners.get("imitation").total(imitation.ImitationConfig(epochs=7, epoch_chunks=3)) == 21


@pytest.mark.slow
def test_train_py_runs_a_last_shorter_chunk_as_make_train_does():
    config = dqn.DQNConfig(total_steps=32 * 25, **TINY)
    trainer = learners.get("dqn").trainer(config, types.SimpleNamespace(), None)
    assert trainer.total == learners.get("dqn").total(config) == 3
    runner = trainer.init(jax.random.key(0))
    for index in range(1, trainer.total + 1):
        runner, record = trainer.step(runner, index)
    assert record["env_steps"] == 32 * 25
    whole, _ = jax.jit(dqn.make_train(config))(jax.random.key(0))
    for ours, theirs in zip(jax.tree.leaves(runner.train.params), jax.tree.leaves(whole.train.params)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_dqn_learns_to_beat_random_play():
    config = dqn.DQNConfig(num_envs=128, total_steps=128 * 1200, chunk_iterations=1200, hidden=(128, 128),
                           buffer_size=32768, batch_size=128, learning_starts=2048, n_step=5, target_period=200)
    init, run_chunk = dqn.make_dqn(config)
    runner, _ = run_chunk(init(jax.random.key(0)))
    boards = jnp.stack([r.board for r in jaxdust.read_board_file(os.path.join(ROOT, "data/boards/eval_8x6x5.txt"))[:64]])
    greedy = play.play_boards(boards, agents.QGreedy((128, 128), 5, True), jax.random.key(0), 96,
                                    runner.train.params)
    random = play.play_boards(boards, baselines.random_legal, jax.random.key(0), 96)
    assert bool(greedy.cleared.all())
    assert float(np.mean(greedy.clicks)) < float(np.mean(random.clicks)) - 2.0


# ---------------------------------------------------------------------------------------
# Imitation
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def beam_data(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("beam"))
    make_dataset(directory, DatasetConfig(boards=60, labeller="beam", beam_width=8, shard_size=30), progress=False)
    return load_dataset(directory)


def test_imitation_splits_by_board_and_mirrors(beam_data):
    config = imitation.ImitationConfig(hidden=(32,), validation_share=0.2)
    train, validation = imitation.split_dataset(beam_data, config)
    held_out = np.unique(beam_data.board_id)[-12:]
    assert validation.boards.shape[0] == np.isin(beam_data.board_id, held_out).sum()
    assert train.boards.shape[0] == 2 * (len(beam_data.boards) - validation.boards.shape[0])
    # The second half is the first mirrored (not copied), each click with its board.
    half = train.boards.shape[0] // 2
    boards, clicked = np.asarray(train.boards), np.asarray(train.clicked).reshape(train.boards.shape)
    np.testing.assert_array_equal(boards[half:], boards[:half, ::-1])
    np.testing.assert_array_equal(clicked[half:], clicked[:half, ::-1])
    assert not np.array_equal(boards[half:], boards[:half])
    for board, click in zip(boards[half:half + 20], clicked[half:half + 20]):
        cells = {tuple(cell) for cell in np.argwhere(click)}
        assert any(cells == set(cluster) for cluster in fr.clusters(board))  # a cluster of its own board
    np.testing.assert_array_equal(train.cost_to_go[half:], train.cost_to_go[:half])
    too_large = dataclasses.replace(config, batch_size=train.boards.shape[0] + 1)  # not one batch: refused
    with pytest.raises(ValueError, match=f"training split holds {train.boards.shape[0]} positions, fewer than"):
        imitation.make_imitation(too_large, beam_data)
    one_board = type(beam_data)(*(column[beam_data.board_id == 0] for column in beam_data))  # all held out
    # No batch size helps an empty split: the message names what does.
    with pytest.raises(ValueError, match="training split is empty: each of the 1 boards with positions left after "
                                         "removing repeats is held out .* lower --validation-share$"):
        imitation.make_imitation(config, one_board)


def test_imitation_refuses_data_of_another_size_colours_or_negative_cells(beam_data):
    config = imitation.ImitationConfig(hidden=(32,), validation_share=0.2)
    transposed = beam_data._replace(boards=np.swapaxes(np.asarray(beam_data.boards), 1, 2))
    with pytest.raises(ValueError, match="the data holds 6x8 boards, the config plays 8x6"):
        imitation.make_imitation(config, transposed)
    boards = np.array(beam_data.boards)
    boards[3, 0, 0] = config.game.colors + 1
    with pytest.raises(ValueError, match=f"the data holds colour {config.game.colors + 1}, the config plays"):
        imitation.make_imitation(config, beam_data._replace(boards=boards))
    boards[3, 0, 0] = -1
    with pytest.raises(ValueError, match="the data holds cell value -1; cells are 0 \\(empty\\) to 5"):
        imitation.make_imitation(config, beam_data._replace(boards=boards))


@pytest.mark.slow
@pytest.mark.parametrize("architecture, small", [("cell-head", {"cell_rounds": 1, "cell_width": 16}), ("mlp", {})])
def test_imitation_loss_falls_and_its_clicks_agree_more(beam_data, architecture, small):
    config = imitation.ImitationConfig(architecture=architecture, hidden=(64,), epochs=8, batch_size=64, **small)
    init, run_chunk, evaluate = imitation.make_imitation(config, beam_data)
    state = init(jax.random.key(0))
    losses, before = [], float(evaluate(state).click_accuracy)
    for epoch in range(8):
        for chunk in range(config.epoch_chunks):
            state, metrics = run_chunk(state, jax.random.key(epoch), chunk)
            if metrics is not None:
                losses.append(float(metrics.policy_loss))
    assert losses[-1] < 0.8 * losses[0]
    assert float(evaluate(state).click_accuracy) > before + 0.05  # on the held-out boards


def test_an_imitation_epoch_in_chunks_makes_the_same_steps_as_in_one_piece(beam_data):
    """Chunks split an epoch's steps (unevenly, or with empty chunks where there are more
    chunks than steps) without changing them: the same parameters, and the chunks' metrics
    weighted by their steps are the epoch's."""
    small = dict(hidden=(16,), cell_rounds=1, cell_width=8, batch_size=64, epochs=2)
    outcomes = {}
    for chunks in (1, 4, 50):
        config = imitation.ImitationConfig(epoch_chunks=chunks, **small)
        init, run_chunk, _ = imitation.make_imitation(config, beam_data)
        state, means = init(jax.random.key(0)), []
        for epoch in range(config.epochs):
            weighted, steps_before = 0.0, int(state.step)
            for chunk in range(chunks):
                before = int(state.step)
                state, metrics = run_chunk(state, jax.random.key(epoch), chunk)
                assert (metrics is None) == (int(state.step) == before)
                if metrics is not None:
                    weighted += float(metrics.policy_loss) * (int(state.step) - before)
            means.append(weighted / (int(state.step) - steps_before))
        outcomes[chunks] = state, means
    steps = int(outcomes[1][0].step)
    assert 2 < steps // 2 < 50  # so 50 chunks an epoch leave some empty
    assert (steps // 2) % 4 and steps // 2 >= 8  # 4 chunks of unequal lengths: the shorter skip a step
    for chunks in (4, 50):
        state, means = outcomes[chunks]
        assert int(state.step) == steps
        np.testing.assert_allclose(means, outcomes[1][1], rtol=1e-5)
        for leaf, reference in zip(jax.tree.leaves(state.params), jax.tree.leaves(outcomes[1][0].params)):
            np.testing.assert_allclose(leaf, reference, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="chunk 4 is not one of the epoch's 4"):
        imitation.make_imitation(imitation.ImitationConfig(epoch_chunks=4, **small), beam_data)[1](
            outcomes[1][0], jax.random.key(0), 4)


def test_imitations_cell_head_loss_is_the_clicked_clusters_cross_entropy():
    """The cell-head network's policy loss is ``-log p(clicked cluster)``, ``p`` the softmax
    over the occupied cells summed over each cluster's cells; its accuracy asks whether the
    most likely cluster is the clicked one (the argmax agent's click). Validation runs in
    batches (here 2 and a last one of 1) and averages over every row."""
    board = np.array([[1, 1, 2], [2, 2, 0]], np.int8)  # x-major: clusters {0, 1}, {2}, {3, 4}; cell 5 empty
    clusters = [[0, 1], [2], [3, 4]]
    config = imitation.ImitationConfig(game=game.GameConfig(2, 3, 3), hidden=(4,), cell_rounds=1, cell_width=4,
                                       batch_size=2, validation_share=0.5, mirror=False)
    state = imitation.initial_state(config, jax.random.key(0))
    leaves, tree = jax.tree_util.tree_flatten(state.params)  # logits start at zero: perturb them
    noise = jax.random.split(jax.random.key(1), len(leaves))
    params = jax.tree_util.tree_unflatten(tree, [leaf + jax.random.normal(k, leaf.shape) for leaf, k in zip(leaves, noise)])
    logits = np.asarray(config.network.apply(params, jnp.asarray(board[None]))[1][0], np.float64)
    cells = np.exp(logits[:5] - logits[:5].max())
    p = np.array([cells[cluster].sum() for cluster in clusters]) / cells.sum()
    clicked = np.zeros((5, 6), bool)  # rows 0-1 train (board 0); rows 2-4 (board 1) are held out, one per cluster
    for row, cluster in enumerate([0, 0, 0, 1, 2]):
        clicked[row, clusters[cluster]] = True
    data = Dataset(np.repeat(board[None], 5, 0), clicked.reshape(5, 2, 3), np.full(5, 2, np.int16), np.ones(5, bool),
                   np.array([0, 0, 1, 1, 1], np.int32), np.zeros(5, np.int16))
    _, _, evaluate = imitation.make_imitation(config, data)
    metrics = evaluate(state.replace(params=params))
    np.testing.assert_allclose(float(metrics.policy_loss), -np.mean(np.log(p)), rtol=1e-5)
    assert float(metrics.click_accuracy) == pytest.approx(1 / 3)  # one of the three rows clicked the likeliest


def test_imitation_runs_play_with_their_architectures_agents():
    """The cell-head network plays as avi's does; a run saved before ``architecture``
    existed (0.2.48's config.json) reads as the mlp preset and plays as it did."""
    learner = learners.get("imitation")
    made = {name: (learner.policy(config), learner.scorer(config), learner.evaluator(config))
            for name, config in learner.presets.items()}
    assert [type(agent) for agent in made["default"]] == [agents.ClusterArgmax, agents.ValueHeadScorer,
                                                           agents.NetworkEvaluator]
    assert [type(agent) for agent in made["mlp"]] == [agents.PolicyGreedy, agents.ValueScorer,
                                                       agents.PolicyValueEvaluator]
    mlp = learner.presets["mlp"]
    assert (mlp.batch_size, mlp.value_weight) == (256, 0.2)  # 0.2.48's, not the default's (64, 0.4)
    saved = configs.to_json(imitation.ImitationConfig.mlp())
    older = {name: value for name, value in saved.items()
             if name not in ("architecture", "cell_rounds", "cell_width", "epoch_chunks")}
    assert configs.from_json(imitation.ImitationConfig, older) == dataclasses.replace(learner.presets["mlp"],
                                                                                       epoch_chunks=1)
    with pytest.raises(configs.FieldError, match="cell_width acts on the 'cell-head' architecture only"):
        imitation.ImitationConfig.mlp(cell_width=32)
    with pytest.raises(configs.FieldError, match="architecture must be one of cell-head, mlp, got 'cnn'"):
        imitation.ImitationConfig(architecture="cnn")


def test_dqn_with_no_learning_starts_waits_for_its_first_transition():
    """``learning_starts=0`` with n-step returns: the buffer holds nothing before iteration
    ``n_step - 1`` (its slots are zeros), so the first update comes there, as
    ``first_update`` says, not at iteration 0."""
    config = dqn.DQNConfig(total_steps=32 * 20, n_step=3, **{**TINY, "learning_starts": 0})
    assert config.first_update == 2
    init, run_chunk = dqn.make_dqn(config)
    runner, _ = run_chunk(init(jax.random.key(0)), length=2)
    assert int(runner.train.step) == 0
    runner, _ = run_chunk(runner, length=1)
    assert int(runner.train.step) == config.updates_per_step


# ---------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------


def test_checkpoints_round_trip_and_explain_failures(tmp_path):
    config = dqn.DQNConfig(total_steps=32 * 20, **TINY)
    init, run_chunk = dqn.make_dqn(config)
    runner = init(jax.random.key(0))
    saved = checkpoint.Checkpoints(str(tmp_path))
    first, _ = run_chunk(runner)
    second, _ = run_chunk(first)
    saved.save(1, first, configs.to_json(config))
    saved.save(2, second, configs.to_json(config))
    step, restored = saved.restore(runner, configs.to_json(config))
    assert step == 2
    np.testing.assert_array_equal(jax.random.key_data(restored.key), jax.random.key_data(second.key))
    np.testing.assert_array_equal(restored.replay.boards, second.replay.boards)

    other = configs.to_json(dqn.DQNConfig(total_steps=32 * 20, **{**TINY, "hidden": (16,)}))
    with pytest.raises(checkpoint.CheckpointError, match="another config.*hidden"):
        saved.restore(runner, other)

    for root, _, names in os.walk(tmp_path / "2"):  # damage every file of checkpoint 2
        for name in names:
            with open(os.path.join(root, name), "wb") as handle:
                handle.write(b"\x00garbage")
    with pytest.raises(checkpoint.CheckpointError, match=r"checkpoint 2 .* cannot be read.*\[1\] are intact"):
        saved.restore(runner, configs.to_json(config))
    step, restored = saved.restore(runner, configs.to_json(config), step=1)
    np.testing.assert_array_equal(jax.random.key_data(restored.key), jax.random.key_data(first.key))


def test_verify_vouches_by_checksums_without_reading(tmp_path, monkeypatch):
    """Resume checks the best checkpoint with ``verify``: the same verdicts as ``read``,
    without restoring a state whose files its checksums cover."""
    config = dqn.DQNConfig(total_steps=32 * 20, **TINY)
    runner = dqn.make_dqn(config)[0](jax.random.key(0))
    saved = checkpoint.Checkpoints(str(tmp_path))
    as_json = configs.to_json(config)
    for step in (1, 2):
        saved.save(step, runner, as_json)
    reads, read = [], checkpoint.Checkpoints.read

    def counted_read(self, step, *args):
        reads.append(step)
        return read(self, step, *args)

    monkeypatch.setattr(checkpoint.Checkpoints, "read", counted_read)
    saved.verify(1, runner, as_json)
    assert reads == []
    other = configs.to_json(dqn.DQNConfig(total_steps=32 * 20, **{**TINY, "hidden": (16,)}))
    with pytest.raises(checkpoint.CheckpointError, match="another config.*hidden") as error:
        saved.verify(1, runner, other)
    assert not isinstance(error.value, checkpoint.UnreadableCheckpoint)
    arrays = [os.path.join(root, name) for root, _, names in os.walk(tmp_path / "1" / "state")
              for name in names if os.sep + "d" + os.sep in os.path.join(root, name)]
    with open(max(arrays, key=os.path.getsize), "r+b") as handle:  # bytes orbax itself would restore
        handle.seek(8)
        handle.write(b"\xff" * 16)
    with pytest.raises(checkpoint.UnreadableCheckpoint, match="has changed since it was saved"):
        saved.verify(1, runner, as_json)
    os.remove(tmp_path / "2" / checkpoint.CHECKSUMS)  # a save that did not finish
    with pytest.raises(checkpoint.UnreadableCheckpoint, match="its save did not finish"):
        saved.verify(2, runner, as_json)
    assert reads == []


def test_a_failed_save_is_one_line_and_keeps_the_earlier_checkpoints(tmp_path, monkeypatch):
    state, config = {"w": jnp.arange(4.0)}, {"config": 1}
    saved = checkpoint.Checkpoints(str(tmp_path))
    saved.save(1, state, config)

    def full_disk(*args, **kwargs):
        raise ValueError('RESOURCE_EXHAUSTED: Error writing "w/0" in OCDBT database at local file "...": Failed '
                         "to write 40392 bytes to file 18: No space left on device [os_error_code='28']")

    monkeypatch.setattr(saved.manager, "save", full_disk)
    with pytest.raises(checkpoint.CheckpointError, match=r"saving checkpoint 2 in .* failed \(no space left on "
                                                         r"device\); the earlier checkpoints there are intact") as error:
        saved.save(2, state, config)
    assert "\n" not in str(error.value)
    assert saved.steps() == [1] and saved.verify(1, state, config) is None
    first = checkpoint.Checkpoints(str(tmp_path / "new"))
    monkeypatch.setattr(first.manager, "save", full_disk)
    with pytest.raises(checkpoint.CheckpointError, match=r"none was saved there before it: free space and resume"):
        first.save(1, state, config)

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(first.manager, "save", read_only)
    with pytest.raises(checkpoint.CheckpointError, match=r"failed \(\[Errno 30\] Read-only file system\); none was "
                                                         r"saved there before it: fix the cause and resume$"):
        first.save(1, state, config)  # the hint at space only where space ran out


def test_a_save_killed_before_its_checksums_leaves_the_checkpoint_it_would_replace(tmp_path, monkeypatch, capsys):
    """orbax removed the steps past ``max_to_keep`` inside its save, before the checksums
    that finish the new one: a save stopped there left ``best/`` (one kept) with only an
    unfinished checkpoint, and said the earlier ones were intact where none had been saved."""
    state, config = {"w": jnp.arange(4.0)}, {"config": 1}
    saved = checkpoint.Checkpoints(str(tmp_path / "best"), max_to_keep=1)
    write_checksums = checkpoint._write_checksums

    def killed(directory):  # as a SIGKILL there: the step is on disk, its checksums are not
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpoint, "_write_checksums", killed)
    with pytest.raises(checkpoint.CheckpointError, match="none was saved there before it"):
        saved.save(1, state, config)
    monkeypatch.setattr(checkpoint, "_write_checksums", write_checksums)
    saved.save(2, state, config)
    assert saved.steps() == [2]  # the unfinished one goes with the rest
    monkeypatch.setattr(checkpoint, "_write_checksums", killed)
    with pytest.raises(checkpoint.CheckpointError, match="the earlier checkpoints there are intact"):
        saved.save(3, {"w": jnp.arange(4.0) + 3}, config)
    monkeypatch.setattr(checkpoint, "_write_checksums", write_checksums)
    reader = checkpoint.Checkpoints.reader(str(tmp_path / "best"))
    step, restored, damaged = reader.restore_newest(state, config)
    assert (step, [error.step for error in damaged]) == (2, [3]) and float(restored["w"][0]) == 0.0

    def refused(step, *args):  # the rename that takes a step out of orbax's sight, before its removal
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(saved, "_moved", refused)
    saved.save(4, state, config)  # saved and finished: the old ones only take space
    assert "checkpoint 4 saved" in capsys.readouterr().err and saved.steps() == [2, 3, 4]
    monkeypatch.undo()
    saved.save(5, state, config)
    assert saved.steps() == [5] and saved.verify(5, state, config) is None


@pytest.mark.parametrize("cause, reported", [("No space left on device [os_error_code='28']", "no space left"),
                                             ("File too large [os_error_code='27']", r"File too large, errno 27")],
                         ids=["full-disk", "file-size-limit"])
def test_a_full_disk_is_reported_once_not_by_every_writing_thread(cause, reported, tmp_path, monkeypatch, caplog):
    """orbax's threads log the failed write again (absl), its tasks as they are collected
    (asyncio), tensorstore's callbacks raise into the closed event loop: the save's one line
    stands alone, and what is not orbax's echo of the full disk still gets through. A write
    over a file-size limit was echoed in full (110 lines), and its line cut before the cause."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: unraisable.append(str(report.exc_value)))

    class RaisesWhenCollected:
        def __init__(self, message):
            self.message = message

        def __del__(self):
            raise RuntimeError(self.message)

    no_space = ('OUT_OF_RANGE: Error writing "w/0" in OCDBT database at local file "/runs/a/checkpoints/1.orbax-'
                'checkpoint-tmp/state.orbax-checkpoint-tmp/ocdbt.process_0/": Failed writing: "/runs/a/checkpoints/1.'
                'orbax-checkpoint-tmp/state.orbax-checkpoint-tmp/ocdbt.process_0/d/30c993ff3eaeca7b6755a5d313e7536c": '
                f"Failed to write 40392 bytes to file 18: {cause}")

    def full_disk(*args, **kwargs):
        logging.getLogger("absl").error("_SignalingThread.run() raised an exception: %s", no_space)
        logging.getLogger("asyncio").error("Task exception was never retrieved", exc_info=ValueError(no_space))
        logging.getLogger("absl").error("something else")
        logging.getLogger("asyncio").error("my own task: No space left on device")  # not orbax's
        RaisesWhenCollected("Event loop is closed")
        RaisesWhenCollected("another callback failed")
        raise ValueError(no_space)

    saved = checkpoint.Checkpoints(str(tmp_path))
    monkeypatch.setattr(saved.manager, "save", full_disk)
    with caplog.at_level(logging.ERROR), pytest.raises(checkpoint.CheckpointError, match=reported):
        saved.save(1, {"w": jnp.arange(4.0)}, {"config": 1})
    assert [record.getMessage() for record in caplog.records] == ["something else",
                                                                   "my own task: No space left on device"]
    assert unraisable == ["another callback failed"]
    RaisesWhenCollected("Event loop is closed")  # outside a save: reported
    assert unraisable == ["another callback failed", "Event loop is closed"]
    badly_formatted = logging.LogRecord("absl", logging.WARNING, __file__, 1, "%d items", ("x",), None)
    assert checkpoint._not_an_orbax_echo(badly_formatted)  # passed on to logging's own report, not raised


def test_a_failed_read_is_reported_once_not_by_every_array_task(tmp_path, monkeypatch, caplog):
    """A read of files deleted under it (``evaluate.py`` beside a training run) fails in
    every array's task: asyncio logs each as it is collected and the dropped coroutines are
    reported to Python's hook. The read's one error stands alone; what is not orbax's gets
    through, and so does orbax's own outside a call."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: unraisable.append(str(report.exc_value)))
    orbax_code = {}
    exec(compile("def read_array(message):\n    raise ValueError(message)\n"
                 "def interrupted():\n    raise KeyboardInterrupt('Ctrl-C')\n",
                 os.path.join(checkpoint._ORBAX_CODE, "_src", "serialization", "serialization.py"), "exec"),
         orbax_code)
    try:
        orbax_code["read_array"]("Truncated Zstd-compressed stream")
    except ValueError:
        task_error = sys.exc_info()

    class DroppedCoroutine:
        def __del__(self):
            orbax_code["read_array"]("a dropped read")

    def files_deleted_under_it(*args, **kwargs):
        logging.getLogger("asyncio").error("Task exception was never retrieved\nfuture: <Task finished>",
                                           exc_info=task_error)
        logging.getLogger("asyncio").error("my own task", exc_info=(ValueError, ValueError("mine"), None))
        logging.getLogger("absl").error("orbax's own warning", exc_info=task_error)  # not an echo: kept
        DroppedCoroutine()
        raise ValueError("Encountered error while reading array index")

    state, config = {"w": jnp.arange(4.0)}, {"config": 1}
    saved = checkpoint.Checkpoints(str(tmp_path))
    saved.save(1, state, config)
    monkeypatch.setattr(saved.manager, "restore", files_deleted_under_it)
    with caplog.at_level(logging.ERROR), pytest.raises(checkpoint.UnreadableCheckpoint, match="reading array index"):
        saved.read(1, state, config)
    assert [record.getMessage() for record in caplog.records] == ["my own task", "orbax's own warning"]
    assert unraisable == []
    DroppedCoroutine()  # outside orbax's calls: reported
    assert unraisable == ["a dropped read"]

    class InterruptedInOrbax:  # a Ctrl-C landing in orbax's code during a call: flags.run_command notes it
        def __del__(self):
            orbax_code["interrupted"]()

    with checkpoint._orbax_echoes_dropped():
        InterruptedInOrbax()
    assert unraisable == ["a dropped read", "Ctrl-C"]


def test_saves_in_overlapping_threads_give_back_the_unraisable_hook():
    hook = sys.unraisablehook
    first, second = checkpoint._orbax_echoes_dropped(), checkpoint._orbax_echoes_dropped()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first save ends while the second still runs
    assert sys.unraisablehook is not hook
    second.__exit__(None, None, None)
    assert sys.unraisablehook is hook


def test_a_reader_beside_a_writer_takes_what_the_writer_deleted_or_is_saving_for_no_damage(tmp_path, monkeypatch):
    """``evaluate.py`` on a run being trained: the writer keeps one checkpoint in ``best/``,
    so the step a reader listed can be deleted while it reads, and the newest can lack its
    checksums for a moment. Beside a writer that is no damage (the steps are listed again);
    alone, a step without checksums is still reported."""
    state, config = {"w": jnp.arange(4.0)}, {"config": 1}
    writer = checkpoint.Checkpoints(str(tmp_path), max_to_keep=1)
    writer.save(1, state, config)
    reader = checkpoint.Checkpoints.reader(str(tmp_path), beside_writer=True)
    assert reader.steps() == [1]
    damage, moves = checkpoint.damage, []

    def writer_moves_on(directory):  # the writer's next save, between the reader's listing and its read
        if not moves:
            moves.append(directory)
            writer.save(2, {"w": jnp.arange(4.0) + 2}, config)  # and deletes step 1
        return damage(directory)

    monkeypatch.setattr(checkpoint, "damage", writer_moves_on)
    monkeypatch.setattr(checkpoint, "SETTLE_SECONDS", 0.0)
    step, restored, damaged = reader.restore_newest(state, config, beside_writer=True)
    assert moves and (step, damaged) == (2, []) and float(restored["w"][0]) == 2.0
    monkeypatch.setattr(checkpoint, "damage", damage)

    writer.save(3, state, config)
    os.remove(tmp_path / "3" / checkpoint.CHECKSUMS)  # saved, its checksums not yet written
    alone = checkpoint.Checkpoints.reader(str(tmp_path))
    with pytest.raises(checkpoint.NoReadableCheckpoint, match=checkpoint.UNFINISHED):
        alone.restore_newest(state, config)  # nobody writes: the save did not finish
    checksums, moved_on = {}, checkpoint.Checkpoints._moved_on

    def checksums_written(self, *args):  # the writer finishes while the reader waits
        if not checksums:
            checksums["written"] = checkpoint._write_checksums(str(tmp_path / "3"))
        return moved_on(self, *args)

    monkeypatch.setattr(checkpoint.Checkpoints, "_moved_on", checksums_written)
    step, _, damaged = alone.restore_newest(state, config, beside_writer=True)
    assert (step, damaged) == (3, []) and "written" in checksums


def test_a_state_laid_out_otherwise_is_a_mismatch_not_damage(tmp_path):
    """Another version's state under the same config: named, and not taken for damaged files
    (which resume would set aside), by ``read``, ``verify`` and ``restore_newest`` alike."""
    state = {"params": {"kernel": jnp.zeros((3, 4)), "bias": jnp.zeros(4)}, "step": jnp.int32(7),
             "key": jax.random.key(1)}
    checkpoint.Checkpoints(str(tmp_path)).save(1, state, {"config": 1})
    saved = checkpoint.Checkpoints(str(tmp_path))  # as a resuming process: nothing saved or read yet
    assert saved.verify(1, state, {"config": 1}) is None
    others = [
        ({**state, "params": {**state["params"], "kernel": jnp.zeros((3, 5))}}, "another shape or dtype: params.kernel"),
        ({**state, "step": jnp.float32(7)}, "another shape or dtype: step"),
        ({**state, "count": jnp.int32(0)}, "missing: count"),
        ({"params": state["params"], "step": state["step"]}, "unexpected: key"),
    ]
    for like, named in others:
        for check in (saved.read, saved.verify):
            with pytest.raises(checkpoint.MismatchedCheckpoint, match=f"laid out otherwise.*{named}"):
                check(1, like, {"config": 1})
        with pytest.raises(checkpoint.MismatchedCheckpoint):
            saved.restore_newest(like, {"config": 1})
    assert saved.steps() == [1] and saved.read(1, state, {"config": 1})["step"] == 7
    with pytest.raises(checkpoint.MismatchedCheckpoint, match="another version of jaxdust saved it"):
        saved.verify(1, others[0][0], {"config": 1})


def test_a_fresh_train_state_fits_its_trained_checkpoints(tmp_path):
    """A fresh flax TrainState (imitation's, what resume builds ``like`` from) holds its step
    as a Python int; once trained, the step is saved as an int32 array. Both are one layout."""
    config = imitation.ImitationConfig(hidden=(8,))
    fresh = imitation.initial_state(config, jax.random.key(0))
    assert isinstance(fresh.step, int)
    checkpoint.Checkpoints(str(tmp_path)).save(1, fresh.replace(step=jnp.int32(3)), {"config": 1})
    saved = checkpoint.Checkpoints(str(tmp_path))
    saved.verify(1, fresh, {"config": 1})
    assert int(saved.read(1, fresh, {"config": 1}).step) == 3
    wider = imitation.initial_state(dataclasses.replace(config, hidden=(9,)), jax.random.key(0))
    with pytest.raises(checkpoint.MismatchedCheckpoint, match="another shape or dtype: .*MLP_0.Dense_0"):
        saved.verify(1, wider, {"config": 1})


def test_a_config_field_added_since_a_checkpoint_was_saved_reads_at_its_default(tmp_path):
    """A checkpoint saved before a config field existed (its config lacks the field) is this
    version's run where the field holds its default, and another config where it does not."""
    learner = learners.get("imitation")
    config = imitation.ImitationConfig(hidden=(8,))
    state = imitation.initial_state(config, jax.random.key(0))
    current = {"learner": "imitation", "config": configs.to_json(config)}
    older = {"learner": "imitation", "config": {k: v for k, v in current["config"].items() if k != "features"}}
    checkpoint.Checkpoints(str(tmp_path)).save(1, state, older)
    saved = checkpoint.Checkpoints(str(tmp_path), upgrade=runs.upgrade(learner))
    saved.verify(1, state, current)
    assert int(saved.read(1, state, current).step) == int(state.step)
    other = {"learner": "imitation", "config": configs.to_json(dataclasses.replace(config, features=not config.features))}
    with pytest.raises(checkpoint.MismatchedCheckpoint, match="differs in: config.features"):
        saved.verify(1, state, other)
    with pytest.raises(checkpoint.MismatchedCheckpoint, match="differs in: config.features"):
        checkpoint.Checkpoints(str(tmp_path)).verify(1, state, current)  # without the upgrade: as it was saved


@pytest.mark.parametrize("config_class, field, before", [
    (avi.AVIConfig, "line_target_share", 1.0), (avi.AVIConfig, "policy_lr_scale", 1.0),
    (avi.AVIConfig, "rule_prior", False), (imitation.ImitationConfig, "rule_prior", False),
    (avi.AVIConfig, "teacher_gumbel_scale", 0.0), (imitation.ImitationConfig, "architecture", "mlp"),
    (imitation.ImitationConfig, "epoch_chunks", 1)])
def test_a_default_changed_since_a_run_was_saved_keeps_the_runs_setting(config_class, field, before):
    current = configs.to_json(config_class())
    older = {name: value for name, value in current.items() if name != field}
    assert getattr(config_class(), field) != before
    assert getattr(configs.from_json(config_class, older), field) == before  # what runs did before the field
    assert configs.from_json(config_class, current) == config_class()


def test_an_mcts_teacher_run_from_before_line_target_share_still_reads():
    """The mcts teacher refuses settings only the lines teacher reads, but a run saved
    before ``line_target_share`` existed reads as 1.0 (its ABSENT_MEANS), not as a setting."""
    older = configs.to_json(avi.AVIConfig(policy_teacher="mcts"))
    del older["line_target_share"]
    assert configs.from_json(avi.AVIConfig, older).line_target_share == 1.0
    with pytest.raises(configs.FieldError, match="line_target_share acts on the 'lines' policy teacher only"):
        avi.AVIConfig(policy_teacher="mcts", line_target_share=0.5)


@pytest.mark.parametrize("make, words", [
    (lambda: avi.AVIConfig(teacher_simulations=32), "teacher_simulations acts on the 'mcts' policy teacher only"),
    (lambda: avi.AVIConfig(teacher_gumbel_scale=0.5), "teacher_gumbel_scale acts on the 'mcts' policy teacher"),
    (lambda: dqn.DQNConfig(child_share=0.25), "child_share sizes the 'full' backup only"),
    (lambda: dqn.DQNConfig(random_moves_per_game=3.0), "random_moves_per_game is adaptive_epsilon's aim, and adaptive_epsilon is off"),
    (lambda: dqn.DQNConfig.original(epsilon_end=0.1), "epsilon_end shapes the scheduled epsilon, which adaptive"),
    (lambda: imitation.ImitationConfig(game=jaxdust.GameConfig(5, 3, 3), mirror=False),
     r"^mirror acts where a board and its mirror image play alike \(game.mirror_symmetric\), and these boards"),
    # Nested: masked clicks are never empty, and the reward was recorded as trained under.
    (lambda: dqn.DQNConfig(rewards=Rewards(empty_click=-3.0)),
     r"^rewards_empty_click is paid for an empty click, and mask_actions allows none \(got -3.0\)"),
])
def test_a_setting_another_setting_turns_off_is_refused(make, words):
    """It was taken and recorded in config.json as if the run had trained under it."""
    with pytest.raises(configs.FieldError, match=words):
        make()


@pytest.mark.parametrize("config_class, base, setting", [
    (dqn.DQNConfig, {}, {"child_share": 0.25}), (dqn.DQNConfig, {}, {"random_moves_per_game": 3.0}),
    (dqn.DQNConfig, {"adaptive_epsilon": True}, {"epsilon_end": 0.1, "epsilon_fraction": 0.5}),
    (avi.AVIConfig, {}, {"teacher_simulations": 32, "teacher_gumbel_scale": 0.5}),
    (imitation.ImitationConfig, {"game": jaxdust.GameConfig(5, 3, 3)}, {"mirror": False})])
def test_a_run_saved_with_a_setting_turned_off_reads_it_at_its_default(config_class, base, setting):
    """Versions before 0.2.45 took these settings, which did nothing, and saved them in
    config.json: such a run still reads (to evaluate or resume it), as the run it was."""
    saved = {**configs.to_json(config_class(**base)), **setting}
    read = configs.from_json(config_class, saved)
    assert read == config_class(**base)
    assert configs.from_json(config_class, configs.to_json(read)) == read


def test_a_dqn_run_saved_with_an_empty_click_reward_it_never_paid_reads_it_at_its_default():
    saved = configs.to_json(dqn.DQNConfig())
    saved["rewards"]["empty_click"] = -3.0
    assert configs.from_json(dqn.DQNConfig, saved) == dqn.DQNConfig()
    unmasked = {**configs.to_json(dqn.DQNConfig.original()), "rewards": saved["rewards"]}  # paid there: kept
    assert configs.from_json(dqn.DQNConfig, unmasked).rewards.empty_click == -3.0


def test_dqns_learning_rate_decays_over_the_updates_it_makes(monkeypatch):
    """The cosine ran over every iteration, but the updates begin at ``first_update`` and
    optax counts only those: a run with a late start ended at ~10x its final rate."""
    built = []
    cosine = optax.cosine_decay_schedule
    monkeypatch.setattr(dqn.optax, "cosine_decay_schedule", lambda *a, **k: built.append(cosine(*a, **k)) or built[-1])
    config = dqn.DQNConfig(game=jaxdust.GameConfig(4, 3, 3), hidden=(16,), num_envs=16, total_steps=640, chunk_iterations=40,
                           buffer_size=256, batch_size=16, learning_starts=256)
    init, run_chunk = dqn.make_dqn(config)
    runner, _ = run_chunk(init(jax.random.key(0)))
    updates = int(runner.train.step)
    assert updates == (config.iterations - config.first_update) * config.updates_per_step == 21
    assert float(built[0](updates)) == pytest.approx(config.learning_rate * config.final_lr_fraction)
    assert float(built[0](updates - 1)) > float(built[0](updates))


def test_settings_turned_off_at_their_defaults_still_read():
    assert avi.AVIConfig(policy_teacher="mcts", teacher_simulations=32).teacher_simulations == 32
    assert dqn.DQNConfig(backup="full", child_share=0.25).child_share == 0.25
    assert dqn.DQNConfig.original(random_moves_per_game=3.0).random_moves_per_game == 3.0
    older = configs.to_json(avi.AVIConfig())  # a lines-teacher run from before teacher_gumbel_scale
    del older["teacher_gumbel_scale"]
    assert configs.from_json(avi.AVIConfig, older).teacher_gumbel_scale == 0.0


@dataclasses.dataclass(frozen=True)
class _Noted:
    plain: int = 1
    trailing: int = 2  # what it does
    # Why it is so,
    # over two lines.
    above: float = 0.5
    # Why, not what.
    both: str = "x"  # what it is


def test_field_notes_are_each_fields_own_comment():
    assert configs.field_notes(_Noted) == {"trailing": "what it does", "above": "Why it is so, over two lines.",
                                           "both": "what it is"}


@pytest.mark.parametrize("name", sorted(learners.LEARNERS))
def test_every_config_flag_says_what_it_does_and_its_default(name):
    learner = learners.LEARNERS[name]
    sub = cli.build_parser()._subparsers._group_actions[0].choices[name]
    by_flag = {flag: action for action in sub._actions for flag in action.option_strings}
    default = learner.presets["default"]
    for field in dataclasses.fields(default):
        value = getattr(default, field.name)
        if field.name == "game":
            assert by_flag["--size"].help.endswith("; default 8x6x5")
            continue
        nested = dataclasses.fields(value) if dataclasses.is_dataclass(value) else None
        for dest, value in ([(f"{field.name}_{f.name}", getattr(value, f.name)) for f in nested] if nested
                            else [(field.name, value)]):
            flag = "--" + dest.replace("_", "-")
            shown = (",".join(map(str, value)) or "none") if isinstance(value, tuple) else str(value)
            what, _, default_text = by_flag[flag].help.rpartition("; ")
            assert what, f"{flag} has no help beyond its default"
            assert default_text == f"default {shown}"


def test_resume_starts_from_the_runs_own_settings(tmp_path):
    learner = learners.get("avi")
    saved = dataclasses.replace(avi.AVIConfig(), hidden=(16,), line_target_share=1.0)
    with open(tmp_path / "config.json", "w") as handle:
        json.dump({"learner": "avi", "config": configs.to_json(saved)}, handle)

    def base(*flags):
        return runs.base_config(learner, cli.build_parser().parse_args(["avi", "--run-dir", str(tmp_path), *flags]))

    assert base("--resume") == saved
    # A run from before 0.2.74 does not say its preset: one given is its settings, as for a new run.
    assert base("--resume", "--preset", "default") == base() == avi.AVIConfig()
    with open(tmp_path / "config.json", "w") as handle:
        json.dump({"learner": "avi", "config": configs.to_json(saved), "run": {"preset": "default"}}, handle)
    assert base("--resume", "--preset", "default") == saved  # its own: the flags given change the saved settings
    with pytest.raises(runs.RunError, match=re.escape(f"--preset original is not the run's own (default, in {tmp_path}/"
                                                      "config.json): leave --preset out")):
        base("--resume", "--preset", "original")
    dqn_run = learners.get("dqn")
    assert runs.base_config(dqn_run, types.SimpleNamespace(run_dir=str(tmp_path), resume=True, preset=None)) == \
        dqn_run.presets["default"]  # another learner's run: Run refuses it as other settings


# ---------------------------------------------------------------------------------------
# Data parallelism and train.py
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_data_parallel_training_equals_one_device():
    script = """
import jax, jax.numpy as jnp, json
from jax.sharding import AxisType
from jaxdust import GameConfig
from jaxdust.learn import avi, dqn, imitation
config = dqn.DQNConfig(num_envs=64, total_steps=64 * 40, chunk_iterations=20, hidden=(32,), buffer_size=2048,
                       batch_size=128, learning_starts=256, features=True)
mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
runs = []
for m in (None, mesh):
    init, run_chunk = dqn.make_dqn(config, m)
    runner = init(jax.random.key(0))
    for _ in range(2):
        runner, metrics = run_chunk(runner)
    runs.append((runner, float(metrics.loss)))
(a, la), (b, lb) = runs
diff = max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(jax.tree.leaves(a.train.params), jax.tree.leaves(b.train.params)))
program = run_chunk.lower(runner).compile().as_text()
# The first layer's products: 8 games a device act, 16 of the minibatch's 128 rows learn.
split = "f32[16,32]" in program and "f32[128,32]" not in program
small = avi.AVIConfig(game=GameConfig(4, 3, 3), num_envs=64, beam_width=2, chunk_updates=3, total_updates=6,
                      buffer_lines=32)
avi_params, avi_boards = [], []
for m in (None, mesh):
    init, run_chunk = avi.make_avi(small, m)
    runner = init(jax.random.key(0))
    for _ in range(2):
        runner, _ = run_chunk(runner)
    # The cell logits' bias shifts every logit alike: its gradient is 0 up to rounding, which
    # Adam's first steps turn into steps of +-lr that change no choice. Left out.
    params = dict(runner.train.params["params"])
    params["cell_logit"] = {"kernel": params["cell_logit"]["kernel"]}
    avi_params.append(params)
    avi_boards.append(runner.boards)
avi_diff = max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(*map(jax.tree.leaves, avi_params)))
avi_diff = avi_diff if bool(jnp.all(avi_boards[0] == avi_boards[1])) else float("inf")
print(json.dumps({"devices": len(jax.devices()), "spec": str(b.replay.boards.sharding.spec), "diff": diff,
                  "loss": [la, lb], "boards_equal": bool(jnp.all(a.env_state.board == b.env_state.board)),
                  "minibatch_split": split, "avi_diff": avi_diff}))
"""
    env = {**os.environ, "XLA_FLAGS": host_devices_flags(8)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    from jax.sharding import PartitionSpec

    assert report["devices"] == 8 and report["spec"] == str(PartitionSpec("data"))
    assert report["diff"] < 1e-5 and report["boards_equal"] and report["minibatch_split"]
    assert abs(report["loss"][0] - report["loss"][1]) < 1e-5
    assert report["avi_diff"] < 1e-4  # and the boards in play are the same


@pytest.mark.slow
@pytest.mark.parametrize("flags, counter, total", [
    (["avi", "--size", "4x3x3", "--hidden", "16", "--num-envs", "16", "--beam-width", "2", "--buffer-lines", "16",
      "--total-updates", "12", "--chunk-updates", "5"], "updates", 12),
    ([*TINY_DQN, "--total-steps", str(32 * 25)], "env_steps", 32 * 25),  # chunks of 10, 10 and 5 iterations
])
def test_a_shorter_last_chunk_trains_on_several_devices(tmp_path, flags, counter, total):
    # A sharded jit takes no keyword arguments: the last chunk's length must reach it otherwise.
    result = subprocess.run([sys.executable, "train.py", *flags, "--devices", "2", "--run-dir", str(tmp_path / "run")],
                            cwd=ROOT, capture_output=True, text=True, env={**os.environ, "XLA_FLAGS": host_devices_flags(2)})
    assert result.returncode == 0, result.stderr[-2000:]
    chunks = [line for line in run_log(tmp_path / "run") if counter in line]
    assert [line["chunk"] for line in chunks][-1] == 3 and chunks[-1][counter] == total


@pytest.mark.slow
@pytest.mark.parametrize("flags, message", [
    (["dqn", "--num-envs", "32", "--buffer-size", "1025", "--learning-starts", "512"],
     "--buffer-size 1025 must divide over 2 devices"),
    (["dqn", "--num-envs", "32", "--batch-size", "33"], "--batch-size 33 must divide over 2 devices"),
    (["avi", "--num-envs", "32", "--capped-share", "0.15"],
     "9 policy rows (4 boards in play and 5 search-line positions, --capped-share 0.15) must divide over 2"),
    (["imitation", "--batch-size", "33"], "--batch-size 33 must divide over 2 devices"),  # before making data
])
def test_counts_that_do_not_divide_over_the_devices_are_refused_before_the_run_starts(tmp_path, flags, message):
    result = subprocess.run([sys.executable, "train.py", *flags, "--run-dir", str(tmp_path / "run")], cwd=ROOT,
                            capture_output=True, text=True, env={**os.environ, "XLA_FLAGS": host_devices_flags(2)})
    assert result.returncode == 2 and message in result.stderr, result.stderr[-2000:]
    assert not (tmp_path / "run" / "config.json").exists()  # the corrected command needs no --resume
    assert not (tmp_path / "run" / "data").exists()


@pytest.mark.slow
def test_distributed_without_a_coordinator_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COORDINATOR", "SLURM_", "OMPI_"))}
    result = subprocess.run([sys.executable, "train.py", "dqn", "--distributed", "--run-dir", str(tmp_path / "run")],
                            cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 2 and result.stderr.startswith("train.py dqn: error: --distributed: "), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "give --coordinator" in result.stderr


def run_train(run_dir, *extra, check=True):
    return subprocess.run([sys.executable, "train.py", *WHOLE_DQN, "--run-dir", str(run_dir), *extra],
                          capture_output=True, text=True, cwd=ROOT, check=check)


@pytest.mark.slow
def test_killed_run_resumes_to_the_uninterrupted_result(tmp_path, whole_dqn_run):
    killed = tmp_path / "killed"
    # The run kills itself (SIGKILL) once checkpoint 2 is on disk; polling for it from here
    # raced the run, which could finish between two polls.
    killer = ("import os, signal, sys; from jaxdust.learn import checkpoint as c, cli; save = c.Checkpoints.save; "
              "c.Checkpoints.save = lambda self, step, *rest: (save(self, step, *rest), step >= 2 and "
              "self.directory.endswith('checkpoints') and os.kill(os.getpid(), signal.SIGKILL)); cli.main()")
    process = subprocess.run([sys.executable, "-c", killer, *WHOLE_DQN, "--run-dir", str(killed)],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    assert process.returncode == -signal.SIGKILL
    assert not (killed / "summary.json").exists()  # it really died part way
    leftover = killed / ".tmp-abc123metrics.jsonl"
    leftover.write_text("{}")  # as if killed while rewriting the metrics
    run_train(killed, "--resume")
    assert not leftover.exists()
    assert run_log(killed) == run_log(whole_dqn_run)
    summaries = [json.load(open(d / "summary.json")) for d in (killed, whole_dqn_run)]
    assert summaries[0]["greedy_clicks"] == summaries[1]["greedy_clicks"]


@pytest.mark.slow
def test_trained_runs_play_through_evaluate(tmp_path, capsys, whole_dqn_run):
    import evaluate

    report = evaluate.main(["--limit", "8", "--agents", f"largest,policy:{whole_dqn_run},value:{whole_dqn_run}:2",
                            "--out", str(tmp_path / "eval")])
    summary = json.loads((whole_dqn_run / "summary.json").read_text())
    for name, selected in ((f"policy:{whole_dqn_run}", f"best-argmax/{summary['best_argmax_step']}"),
                           (f"value:{whole_dqn_run}:2", f"best/{summary['best_step']}")):
        assert report["agents"][name]["boards"] == 8
        assert report["agents"][name]["played"] == {"run": str(whole_dqn_run), "checkpoint": selected,
                                                    "fingerprint": runs.fingerprint(str(whole_dqn_run))}
    assert "played" not in report["agents"]["largest"]
    assert (tmp_path / "eval" / "lengths.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(SystemExit):
        evaluate.main(["--limit", "4", "--agents", f"policy:{tmp_path / 'missing'}", "--out", str(tmp_path / "x")])
    assert "not a train.py run directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        evaluate.main(["--random", "2", "--size", "6x6x5", "--agents", f"largest,value:{whole_dqn_run}",
                       "--out", str(tmp_path / "y")])
    # Refused with the flags, before the agents ahead of it play.
    assert f"--agents: {whole_dqn_run} was trained on 8x6 boards; these are 6x6" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # colours past its one-hot input would read as blank cells
        evaluate.main(["--random", "2", "--size", "8x6x9", "--agents", f"value:{whole_dqn_run}",
                       "--out", str(tmp_path / "z")])
    assert "was trained on boards of 5 colours; these hold colour" in capsys.readouterr().err
    # Seed 2026's boards start with those a run was evaluated and selected on while training.
    for seed, noted in ((2026, True), (2027, False)):
        with pytest.raises(SystemExit):  # refused after the note, before any play
            evaluate.main(["--random", "2", "--seed", str(seed), "--agents", f"value:{whole_dqn_run}",
                           "--reference", "largest", "--out", str(tmp_path / "z")])
        err = capsys.readouterr().err
        assert ("note: --seed 2026 draws, first, the boards train.py evaluates a run on" in err) == noted, err
        assert "--reference 'largest' is neither one of --agents" in err


@pytest.mark.slow
def test_train_refuses_to_mix_runs(tmp_path, whole_dqn_run):
    missing = run_train(tmp_path / "none", "--resume", check=False)
    assert missing.returncode != 0 and "nothing to resume" in missing.stderr
    shutil.copytree(whole_dqn_run, tmp_path / "done")
    again = run_train(tmp_path / "done", check=False)
    assert again.returncode != 0 and "already holds a run" in again.stderr
    changed = subprocess.run([sys.executable, "train.py", *WHOLE_DQN, "--hidden", "16", "--run-dir",
                              str(tmp_path / "done"), "--resume"], capture_output=True, text=True, cwd=ROOT)
    assert changed.returncode != 0 and "other settings" in changed.stderr
    # Resuming a finished run reports it as it finished: no evaluation, no new summary.
    resumed = run_train(tmp_path / "done", "--resume")
    assert "finished its 6 chunks already: nothing to train" in resumed.stdout
    assert (tmp_path / "done" / "summary.json").read_text() == (whole_dqn_run / "summary.json").read_text()


@pytest.mark.slow
def test_minutes_stop_with_a_checkpoint_and_resume(tmp_path, whole_dqn_run):
    stopped = run_train(tmp_path / "run", "--minutes", "0.00001")
    assert re.search(r"stopped after \d+\.\d minutes \(--minutes 1e-05: the run's time in all, compiling, evaluations "
                     r"included\) at chunk 1; continue with "
                     r"--resume, with a larger --minutes or none", stopped.stdout) and not (tmp_path / "run" / "summary.json").exists()
    # It plays as it stands: the hint a finished run gives (a time-stopped run gave none).
    agents = shlex.quote(f"policy:{tmp_path / 'run'},value:{tmp_path / 'run'}")
    assert (f"the run is in {tmp_path / 'run'} (not finished, as it stands); play it with python evaluate.py "
            f"--agents {agents}") in stopped.stderr, stopped.stderr[-2000:]
    # Past its --minutes already, a resume with them trains nothing (it trained a chunk more each time).
    log = (tmp_path / "run" / "metrics.jsonl").read_text()
    again = run_train(tmp_path / "run", "--resume", "--minutes", "0.00001")
    assert re.search(r"has trained \d+\.\d minutes already, past --minutes 1e-05 \(the run's time in all\): "
                     r"nothing done", again.stdout), again.stdout
    assert (tmp_path / "run" / "metrics.jsonl").read_text() == log
    # No flag but the run directory (and its own preset, which was refused unless every flag
    # the run began with came again): its settings and its run flags (WHOLE_DQN's
    # --eval-boards 16 --eval-every 2, not the defaults) come from its config.json.
    assert json.load(open(tmp_path / "run" / "config.json"))["run"]["preset"] == "default"
    resumed = subprocess.run([sys.executable, "train.py", "dqn", "--run-dir", str(tmp_path / "run"), "--resume",
                              "--preset", "default"], capture_output=True, text=True, cwd=ROOT)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert run_log(tmp_path / "run") == run_log(whole_dqn_run)
    assert json.load(open(tmp_path / "run" / "summary.json"))["eval_boards"] == 16


def _write_run(directory, **run_flags):
    os.makedirs(directory, exist_ok=True)
    saved = {"learner": "imitation", "config": configs.to_json(imitation.ImitationConfig())}
    with open(os.path.join(directory, "config.json"), "w") as handle:
        json.dump({**saved, **({"run": run_flags} if run_flags else {})}, handle)


def _settled(run_dir, *flags):
    args = cli.build_parser().parse_args(["imitation", "--run-dir", str(run_dir), *flags])
    return args, runs.settle_run_flags(learners.get("imitation"), args)


def test_resuming_a_run_trained_on_data_refuses_the_flags_that_make_data(tmp_path, capsys):
    """Its config.json keeps the making flags' defaults beside --data: --data-boards 200 was
    refused as "not the run's own (30000)", a number no data set of the run had, and 30000
    taken without a word."""
    _write_run(tmp_path / "run", data=str(tmp_path / "data"), data_boards=30_000, data_beam_width=32)
    for flag, value in (("--data-boards", "200"), ("--data-boards", "30000"), ("--data-beam-width", "32")):
        with pytest.raises(SystemExit):
            cli.main(["imitation", "--run-dir", str(tmp_path / "run"), "--resume", flag, value])
        assert capsys.readouterr().err.strip().endswith(
            f"with --data none is made (the run trains on {tmp_path / 'data'})")


@pytest.mark.parametrize("learner", ["avi", "dqn", "imitation"])
def test_a_new_runs_config_is_read_from_flags_without_a_run_directory(learner):
    """What the GPU suite and the learners benchmark call: it once read a run directory the
    flags had not named (None) and ended in a TypeError."""
    args, config = cli.new_run_config(learner, ["--seed", "4"])
    assert args.run_dir is None and args.seed == 4 and config == learners.get(learner).presets["default"]


def test_a_resumed_run_takes_its_own_run_flags_and_refuses_others(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "x").mkdir(parents=True)
    args, kept = _settled(tmp_path / "new", "--seed", "3", "--eval-boards", "16", "--data", str(data))
    assert kept == {"seed": 3, "eval_boards": 16, "eval_every": runs.RUN_FLAGS["eval_every"], "data": str(data),
                    "data_boards": 30_000, "data_beam_width": 32, "data_settings": None}
    _write_run(tmp_path / "run", **kept)
    monkeypatch.chdir(tmp_path / "data" / "x")  # resumed from elsewhere: the data path still holds
    args, again = _settled(tmp_path / "run", "--resume")
    assert again == kept and (args.seed, args.eval_boards, args.data) == (3, 16, str(data))
    _settled(tmp_path / "run", "--resume", "--seed", "3", "--data", "..")  # the same values given
    for flags, named in ((["--seed", "4"], "--seed 4 is not the run's own (3"),
                         (["--eval-every", "1"], "--eval-every 1 is not the run's own"),
                         (["--data", str(data / "x")], f"--data {data / 'x'} is not the run's own")):
        with pytest.raises(runs.RunError, match=re.escape(named)):
            _settled(tmp_path / "run", "--resume", *flags)
    _write_run(tmp_path / "seed-0", **{**kept, "seed": 0})  # a falsy value is still the run's own
    with pytest.raises(runs.RunError, match=re.escape("--seed 4 is not the run's own (0, in")):
        _settled(tmp_path / "seed-0", "--resume", "--seed", "4")
    _write_run(tmp_path / "legacy")  # written before run flags were kept: the flags given count
    assert _settled(tmp_path / "legacy", "--resume", "--seed", "7")[1]["seed"] == 7
    _write_run(tmp_path / "own", **{**kept, "data": None})  # it made its data in RUN_DIR/data
    (tmp_path / "own" / "data").mkdir()
    assert _settled(tmp_path / "own", "--resume", "--data", str(tmp_path / "own" / "data"))[0].data
    # Recorded by a resume that named its own folder, its data's settings were dropped by
    # the next resume that did not: config.json, and the run's fingerprint, flipped.
    _write_run(tmp_path / "own", **{**kept, "data": None, "data_settings": {"boards": 12}})
    assert _settled(tmp_path / "own", "--resume")[1]["data_settings"] == {"boards": 12}


def test_a_run_that_never_finished_a_step_gives_way_to_a_new_start(tmp_path):
    """A start that died in its first step (XLA aborting on a size, memory running out)
    leaves config.json and empty folders: the corrected command starts there, with or
    without --resume; once a step is logged the run is kept."""
    learner, other = learners.get("imitation"), imitation.ImitationConfig(epochs=3)
    _write_run(tmp_path / "run")
    for folder in ("checkpoints", runs.BEST_DIR):
        (tmp_path / "run" / folder).mkdir()
    (tmp_path / "run" / "metrics.jsonl").write_text("")
    assert runs.never_began(str(tmp_path / "run"))
    runs._check_run_directory(str(tmp_path / "run"), learner, other, resume=False)
    with pytest.raises(runs.RunError, match="never finished a step, so without --resume these settings start"):
        runs._check_run_directory(str(tmp_path / "run"), learner, other, resume=True)
    (tmp_path / "run" / "metrics.jsonl").write_text('{"chunk": 1}\n')
    assert not runs.never_began(str(tmp_path / "run"))
    with pytest.raises(runs.RunError, match="already holds a run"):
        runs._check_run_directory(str(tmp_path / "run"), learner, other, resume=False)
    with pytest.raises(runs.RunError, match="use another --run-dir$"):
        runs._check_run_directory(str(tmp_path / "run"), learner, other, resume=True)


def test_a_new_run_starts_only_where_nothing_else_is(tmp_path):
    """A new run in a folder of other files (a data set, --run-dir .) trained there and
    scattered its files among them; the lock and an imitation run's own data set (left by a
    start that failed) are its own."""
    imitation_learner, avi_learner = learners.get("imitation"), learners.get("avi")
    folder = tmp_path / "mine"
    (folder / "plots").mkdir(parents=True)
    for name in ("notes.txt", "boards.txt", "zeta.csv"):
        (folder / name).touch()
    with pytest.raises(runs.RunError, match=re.escape(f"{folder} holds other files (boards.txt, notes.txt, plots, "
                                                      "...) and no run, which a new run would mix with")):
        runs._check_run_directory(str(folder), avi_learner, avi.AVIConfig(), resume=False)
    with pytest.raises(runs.RunError, match="and no run, which a new run would mix with"):
        runs.Run(str(folder), avi_learner, avi.AVIConfig(), resume=False)
    assert sorted(os.listdir(folder)) == ["boards.txt", "notes.txt", "plots", "zeta.csv"]  # no lock left behind
    own = tmp_path / "own"
    (own / "data").mkdir(parents=True)
    (own / runs.LOCK_FILE).touch()
    runs._check_run_directory(str(own), imitation_learner, imitation.ImitationConfig(), resume=False)
    with pytest.raises(runs.RunError, match=r"holds other files \(data\)"):
        runs._check_run_directory(str(own), avi_learner, avi.AVIConfig(), resume=False)


def test_a_resumed_runs_data_may_be_a_copy_made_with_the_same_settings(tmp_path):
    size = game.GameConfig(4, 3, 3)
    made = DatasetConfig(size, boards=2, seed=1, labeller="beam", beam_width=2, shard_size=2)
    make_dataset(str(tmp_path / "data"), made, progress=False)
    shutil.copytree(tmp_path / "data", tmp_path / "copy")
    make_dataset(str(tmp_path / "other"), dataclasses.replace(made, seed=2), progress=False)
    args, kept = _settled(tmp_path / "new", "--data", str(tmp_path / "data"))
    assert kept["data_settings"] == configs.to_json(made)
    _write_run(tmp_path / "run", **kept)
    args, resumed = _settled(tmp_path / "run", "--resume", "--data", str(tmp_path / "copy"))
    # Trained on the copy this once; config.json keeps the run's own while it is there (a
    # deleted copy left every later resume refused).
    assert (args.data, resumed["data"]) == (str(tmp_path / "copy"), str(tmp_path / "data"))
    # --data-jobs makes a run's own data set: resuming one trained on --data, it would do nothing.
    args, _ = _settled(tmp_path / "run", "--resume", "--data-jobs", "2")
    with pytest.raises(ValueError, match=re.escape(f"--data-jobs makes a data set; the run trains on {tmp_path / 'data'}")):
        learners.get("imitation").check(imitation.ImitationConfig(game=size), args)
    with pytest.raises(runs.RunError, match="is not the run's own"):
        _settled(tmp_path / "run", "--resume", "--data", str(tmp_path / "other"))
    shutil.rmtree(tmp_path / "data")  # moved away: a copy is still known by the settings kept
    resumed = _settled(tmp_path / "run", "--resume", "--data", str(tmp_path / "copy"))[1]
    assert (resumed["data_settings"], resumed["data"]) == (kept["data_settings"], str(tmp_path / "copy"))
    args, _ = _settled(tmp_path / "run", "--resume")
    # Gone: passed by the check (a finished run needs no data), refused by the trainer.
    learners.get("imitation").check(imitation.ImitationConfig(game=size), args)
    with pytest.raises(ValueError, match="is gone: pass --data"):
        learners.get("imitation").trainer(imitation.ImitationConfig(game=size), args, None)
    # Made again in the run's own folder with other settings: refused, given or not.
    make_dataset(str(tmp_path / "data"), dataclasses.replace(made, seed=3, boards=3), progress=False)
    for flags in ([], ["--data", str(tmp_path / "data")]):
        with pytest.raises(runs.RunError, match=re.escape(f"{tmp_path / 'data'} holds a data set made with other "
                                                          "settings than the run's (boards 3, not 2; seed 3, not 1)")):
            _settled(tmp_path / "run", "--resume", *flags)
    # A run that made its own (RUN_DIR/data, no settings kept): a copy of it is its data too.
    _write_run(tmp_path / "own", **{**kept, "data": None, "data_settings": None})
    shutil.copytree(tmp_path / "copy", tmp_path / "own" / "data")
    args, resumed = _settled(tmp_path / "own", "--resume", "--data", str(tmp_path / "copy"))
    assert (args.data, resumed["data"]) == (str(tmp_path / "copy"), None)  # still its own, RUN_DIR/data
    with pytest.raises(runs.RunError, match=re.escape(f"is not the run's own ({tmp_path / 'own' / 'data'}, which it "
                                                      "made, in")):
        _settled(tmp_path / "own", "--resume", "--data", str(tmp_path / "other"))


def test_runs_load_the_checkpoints_with_the_best_greedy_and_argmax_play(whole_dqn_run):
    evaluated = [line for line in run_log(whole_dqn_run) if "greedy_clicks" in line]
    summary = json.load(open(whole_dqn_run / "summary.json"))
    newest = runs.load_run(str(whole_dqn_run), newest=True)
    assert newest.step == evaluated[-1]["chunk"]
    boards = runs.evaluation_boards(newest.config.game, 16)  # the run's --eval-boards
    cap = 4 * newest.config.game.num_cells
    for measure, summary_key in (("greedy", "best_step"), ("argmax", "best_argmax_step")):
        floor, best = float("inf"), None  # the newest within a standard error of the best so far
        for line in evaluated:
            assert line[f"{measure}_se"] > 0
            floor = min(floor, line[f"{measure}_clicks"])
            best = line if line[f"{measure}_clicks"] <= floor + line[f"{measure}_se"] else best
        selected = runs.load_run(str(whole_dqn_run), by=measure)
        assert selected.step == best["chunk"] == summary[summary_key]
        assert summary[f"best_{measure}_clicks"] == best[f"{measure}_clicks"]
        replayed = (runs.greedy_lengths(boards, selected.scorer, selected.params, cap) if measure == "greedy"
                    else runs.argmax_lengths(boards, selected.policy, selected.params, cap))
        assert np.mean(replayed) == best[f"{measure}_clicks"]  # the state that was evaluated, not a later one
        assert np.std(replayed, ddof=1) / 4 == pytest.approx(best[f"{measure}_se"], rel=1e-5)


def test_a_resume_before_the_selected_checkpoint_holds_later_evaluations_to_the_best_logged(tmp_path):
    """``best/`` keeps one checkpoint: resumed from an earlier step, it is deleted (its step
    is redone). The next evaluation is then kept whatever it plays, but the bar stays the
    best evaluated, read from the log: it was reset to none, which let a checkpoint the
    uninterrupted run rejected be selected."""
    learner, config = learners.get("imitation"), imitation.ImitationConfig(hidden=(8,))
    state = imitation.initial_state(config, jax.random.key(0))
    run = runs.Run(str(tmp_path / "run"), learner, config, resume=False)
    for step, greedy in enumerate([14.0, 14.5, 14.05], start=1):
        evaluation = {"greedy_clicks": greedy, "greedy_se": 0.1}
        run.keep_if_best(step, state, evaluation)
        run.log({"chunk": step, **evaluation, "seconds": 0.0})
        if step < 3:  # killed after step 3's evaluation, before its checkpoint
            run.checkpoints.save(step, state, run.saved)
    assert run.best.steps() == [3]
    run.close()
    resumed = runs.Run(str(tmp_path / "run"), learner, config, resume=True)
    assert resumed.restore(state)[0] == 2
    assert (resumed.best.steps(), resumed.by_greedy.floor) == ([], 14.0)
    resumed.keep_if_best(3, state, {"greedy_clicks": 14.3, "greedy_se": 0.1})  # redone (here not exactly): kept
    assert resumed.best.steps() == [3]
    resumed.keep_if_best(4, state, {"greedy_clicks": 14.2, "greedy_se": 0.1})  # within 0.1 of 14.3, not of 14.0
    assert resumed.best.steps() == [3]
    resumed.close()


def test_best_is_the_newest_evaluation_within_a_standard_error_of_the_best(tmp_path):
    """Of evaluations that noise cannot tell apart the newest is kept; one many errors worse
    (overfitting) is not, and the floor it is measured from survives a resume."""
    learner, config = learners.get("imitation"), imitation.ImitationConfig(hidden=(8,))
    state = imitation.initial_state(config, jax.random.key(0))
    run = runs.Run(str(tmp_path / "run"), learner, config, resume=False)
    kept = []
    for step, greedy in enumerate([14.4, 14.2, 14.25, 14.5, 14.31, 14.29], start=1):
        evaluation = {"greedy_clicks": greedy, "greedy_se": 0.1}
        run.keep_if_best(step, state, evaluation)
        run.log({"chunk": step, **evaluation, "seconds": 0.0})
        run.checkpoints.save(step, state, run.saved)
        kept.append(run.best.steps()[-1])
    assert kept == [1, 2, 3, 3, 3, 6]  # 14.25 and 14.29 are within 0.1 of 14.2; 14.5 and 14.31 are not
    run.finish({})
    with pytest.raises(runs.RunError, match="another process is training in"):
        runs.Run(str(tmp_path / "run"), learner, config, resume=True)
    run.close()
    resumed = runs.Run(str(tmp_path / "run"), learner, config, resume=True)
    resumed.restore(state)
    assert (resumed.best.steps(), resumed.by_greedy.kept, resumed.by_greedy.floor) == ([6], 14.29, 14.2)
    resumed.keep_if_best(7, state, {"greedy_clicks": 14.35, "greedy_se": 0.1})  # 0.15 over the floor, not the kept
    assert resumed.best.steps() == [6]
    resumed.keep_if_best(8, state, {"greedy_clicks": 14.1, "greedy_se": 0.1})
    assert (resumed.best.steps(), resumed.by_greedy.kept, resumed.by_greedy.floor) == ([8], 14.1, 14.1)
    resumed.close()


def test_argmax_play_selects_its_own_checkpoint_which_policy_agents_play(tmp_path):
    """``best-argmax/`` follows the policy's argmax as ``best/`` follows greedy play: where
    the value stops improving and the policy goes on learning, they part, and a resume
    reads each one's bar back from the log. ``policy:`` plays it; a run without one (made
    before it was kept) plays ``best/``."""
    learner, config = learners.get("imitation"), imitation.ImitationConfig(hidden=(8,))
    states = [imitation.initial_state(config, jax.random.key(seed)) for seed in range(5)]
    run = runs.Run(str(tmp_path / "run"), learner, config, resume=False)
    played = [(14.2, 15.0), (14.0, 14.6), (14.3, 14.4), (14.4, 14.3)]  # (greedy, argmax) of chunks 1-4
    for step, (greedy, argmax) in enumerate(played, start=1):
        evaluation = {"argmax_clicks": argmax, "argmax_se": 0.05, "greedy_clicks": greedy, "greedy_se": 0.05}
        run.keep_if_best(step, states[step], evaluation)
        run.log({"chunk": step, **evaluation, "seconds": 0.0})
        run.checkpoints.save(step, states[step], run.saved)
    assert (run.best.steps(), run.by_argmax.checkpoints.steps()) == ([2], [4])
    run.close()
    directory = str(tmp_path / "run")
    for by, step in (("greedy", 2), ("argmax", 4)):
        loaded = runs.load_run(directory, by=by)
        assert (loaded.step, loaded.checkpoint) == (step, os.path.join(runs.SELECTED_DIRS[by], str(step)))
        chex.assert_trees_all_equal(loaded.params, learner.params(states[step]))
    boards = np.asarray(runs.evaluation_boards(config.game, 2))
    for agent, checkpoint_played in (("policy", "best-argmax/4"), ("value", "best/2")):
        result = registry.run_agent(f"{agent}:{directory}", boards, key=jax.random.key(0), max_clicks=192)
        assert result["played"]["checkpoint"] == checkpoint_played

    resumed = runs.Run(directory, learner, config, resume=True)
    assert resumed.restore(states[0], step=3)[0] == 3  # best-argmax/4 is redone; the bar is chunk 3's 14.4
    assert (resumed.by_argmax.checkpoints.steps(), resumed.by_argmax.floor, resumed.by_greedy.kept) == ([], 14.4, 14.0)
    for step, argmax in ((4, 14.7), (5, 14.5), (6, 14.44)):  # kept (none was), 0.1 over the bar, within 0.05
        resumed.keep_if_best(step, states[4], {"argmax_clicks": argmax, "argmax_se": 0.05})
        assert (resumed.by_argmax.checkpoints.steps(), resumed.best.steps()) == ([4 if step < 6 else 6], [2])
    resumed.close()
    shutil.rmtree(tmp_path / "run" / runs.SELECTED_DIRS["argmax"])
    assert runs.load_run(directory, by="argmax").checkpoint == "best/2"
    # policy: and value: then play one checkpoint, loaded once (its warnings said once).
    assert registry._loaded_run(directory, "argmax")[0] is registry._loaded_run(directory, "greedy")[0]
    # Its fingerprint is 0.2.51's, so results kept on a run made before are not played again
    # (its config.json as such a run wrote it, without the versions that trained it).
    run_dir = tmp_path / "run"
    config_json = json.loads((run_dir / "config.json").read_text())
    assert config_json.pop(runs.VERSIONS_KEY) == [jaxdust.__version__]
    (run_dir / "config.json").write_bytes(files.json_bytes(config_json))
    digest = hashlib.sha256(b"/config.json\0" + (run_dir / "config.json").read_bytes())
    for folder in ("best", "checkpoints"):
        for step in sorted(os.listdir(run_dir / folder)):
            digest.update(f"{folder}/{step}\0".encode() + (run_dir / folder / step / "checksums.json").read_bytes())
    assert runs.fingerprint(directory) == digest.hexdigest()
    with pytest.raises(ValueError, match="by is one of argmax, greedy, not 'value'"):
        runs.load_run(directory, by="value")


@pytest.mark.slow
def test_resuming_before_the_best_checkpoint_redoes_it(tmp_path):
    args = ("--eval-every", "1", "--checkpoint-every", "3")
    run_train(tmp_path / "run", *args)
    first = json.load(open(tmp_path / "run" / "summary.json"))
    assert first["best_step"] > 3  # else resuming at 3 would not replay the best step
    # Resuming at 3 replays the best step: its checkpoint is made again, not refused as existing.
    run_train(tmp_path / "run", *args, "--resume", "--resume-step", "3")
    again = json.load(open(tmp_path / "run" / "summary.json"))
    selected = ("best_step", "best_greedy_clicks", "best_argmax_step", "best_argmax_clicks")
    assert [again[key] for key in selected] == [first[key] for key in selected]


@pytest.mark.slow
def test_equal_time_benchmark_trains_measures_and_reuses(tmp_path):
    """benchmarks/equal_time.py end to end on a tiny budget: a variant is calibrated,
    trained and played; its saved result is reused by the next call with the same settings."""
    command = [sys.executable, "benchmarks/equal_time.py", "--variants", "mlp", "--minutes", "0.02", "--points", "1",
               "--boards", "6", "--proven-boards", "6", "--out-dir", str(tmp_path)]  # one batch shape: one compilation
    first = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-2000:]
    with open(tmp_path / "mlp.json") as handle:
        result = json.load(handle)
    (point,) = result["curve"]
    records = jaxdust.read_board_file(os.path.join(ROOT, "data/boards/optimal_8x6x5.txt"), limit=6)
    optimum = np.mean([r.values[-1] for r in records])
    for played in ("argmax", "width_1", "width_8", "width_64", "mcts_64"):  # nothing beats the proven optimum
        assert point["proven"][played]["mean"] >= optimum and 0 <= point["proven"][played]["optimal"] <= 1
    assert point["proven"]["width_8"]["mean"] <= point["proven"]["width_1"]["mean"] + 0.5
    assert result["units"] >= 1 and point["seconds"] > 0 and "fresh" in point
    reference = json.loads((tmp_path / "heuristic.json").read_text())
    assert reference["settings"] == {"seed": 0, "boards": 6, "proven_boards": 6, "jaxdust": jaxdust.__version__}
    assert result["jaxdust"] == jaxdust.__version__  # a setting: another version measures again
    assert reference["play"]["proven"]["width_64"]["mean"] >= optimum
    assert set(reference["play"]["fresh"]) == {"width_1", "width_8"}
    written = (tmp_path / "heuristic.json").stat().st_mtime_ns
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and "mlp 1/1" not in again.stdout and "| mlp:" in again.stdout
    assert (tmp_path / "heuristic.json").stat().st_mtime_ns == written  # kept, not played again
    assert (tmp_path / "mlp-clicks.png").read_bytes()[:4] == b"\x89PNG"


def _equal_time_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("equal_time_reuse", os.path.join(ROOT, "benchmarks", "equal_time.py"))
    equal_time = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))  # its sibling import of learners.py
    try:
        spec.loader.exec_module(equal_time)
    finally:
        sys.path.remove(os.path.join(ROOT, "benchmarks"))
    return equal_time


def test_equal_time_table_counts_dqn_in_env_steps(capsys):
    """Its column is "updates"; a dqn variant's count is env steps a game, said in the cell."""
    equal_time = _equal_time_module()
    row = {"fresh": {"argmax": {"mean": 14.0}}, "proven": {}}
    results = {name: {"description": name, "units": 120, "unit": unit, "curve": [{"seconds": 60, **row}]}
               for name, unit in (("a", "updates"), ("d", "env steps per game"))}
    equal_time.print_table(results, 1.0, row)
    lines = capsys.readouterr().out.splitlines()
    assert "| a: a | 1.0 | 120 | 14.00 |" in "\n".join(lines) and "| d: d | 1.0 | 120 steps | 14.00 |" in "\n".join(lines)


@pytest.mark.parametrize("per_update, per_call, chunks_timed", [
    (0.129, 1e-4, [5, 5]),  # a 2-core CPU's avi update: 5-update chunks of 0.65 s, two of them timed
    (1.57e-3, 2.6e-3, [5, 240]),  # an H100's (10.5 ms a 5-update chunk): timed again at ~0.5 s a chunk
])
def test_equal_time_calibrates_on_warm_chunks_long_enough_to_hide_each_call(monkeypatch, per_update, per_call,
                                                                            chunks_timed):
    """Warm chunks are timed for at least a second, the first, compiling one left out; where
    a chunk takes milliseconds, its call's own cost is hidden in longer chunks. A fake clock
    that each chunk advances: 2 s to compile, then ``per_call`` plus ``per_update`` a unit."""
    equal_time = _equal_time_module()
    clock, chunk_sizes, calls = [0.0], [], []

    def trainer(config, args, mesh):
        chunk_sizes.append(config.chunk_updates)

        def step(state, index):
            clock[0] += 2.0 if index == 1 else per_call + per_update * config.chunk_updates
            calls.append(index)
            return state, {}

        return learners.Trainer(lambda key: 0, step, 10**6, lambda state: {})

    fake = dataclasses.replace(learners.get("avi"), trainer=trainer)
    monkeypatch.setattr(equal_time, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    measured = equal_time.seconds_per_unit(fake, avi.AVIConfig(), seed=0)
    assert chunk_sizes == sorted(set(chunks_timed))
    warm = [equal_time.CALIBRATION_SECONDS / (per_call + per_update * size) for size in chunk_sizes]
    assert len(calls) == sum(1 + max(1, int(np.ceil(n - 1e-9))) for n in warm)
    assert measured == pytest.approx(per_update + per_call / chunk_sizes[-1])
    assert measured == pytest.approx(per_update, rel=0.01)


def test_equal_time_reuses_a_variant_only_from_the_same_settings_and_machine():
    equal_time = _equal_time_module()
    settings = {"minutes": 8.0, "seed": 0, "points": 4, "boards": 1000, "proven_boards": None, "jaxdust": "0.2.13"}
    versions = {"jax": "0.10.2", "jaxlib": "0.10.2", "numba": "0.68.0"}
    cpu = {"cpu": "Intel(R) Xeon(R) Processor", "cores": 2, "backend": "cpu", "device_kind": "cpu", **versions}
    gpu = {"cpu": "Intel(R) Xeon(R) Processor", "cores": 16, "backend": "gpu", "device_kind": "NVIDIA H100 80GB HBM3",
           **versions}
    saved = {**settings, "changes": {"hidden": [1024, 1024]}, "hardware": gpu}
    assert equal_time.difference(saved, "wide", settings, gpu) is None
    assert equal_time.difference(saved, "wide", settings, {**gpu, "cpu": "AMD EPYC", "cores": 8}) is None  # the GPU trains
    assert equal_time.difference(saved, "wide", settings, cpu) == "measured with backend 'gpu', this process has 'cpu'"
    assert equal_time.difference(saved, "wide", settings, {**gpu, "device_kind": "NVIDIA H200"}) == (
        "measured with device_kind 'NVIDIA H100 80GB HBM3', this process has 'NVIDIA H200'")
    assert equal_time.difference({**saved, "jaxdust": "0.2.12"}, "wide", settings, gpu) == (
        "measured with jaxdust '0.2.12', not '0.2.13'")
    assert equal_time.difference(saved, "wide", {**settings, "minutes": 15.0}, gpu) == (
        "measured with minutes 8.0, not 15.0")
    assert equal_time.difference(saved, "deep", settings, gpu) == "measured with other changes than deep's"
    on_cpu = {**saved, "hardware": cpu}
    assert equal_time.difference(on_cpu, "wide", settings, cpu) is None
    assert equal_time.difference(on_cpu, "wide", settings, {**cpu, "cores": 4}).startswith(
        "measured with cores 2, this process has 4")
    assert equal_time.difference({k: v for k, v in on_cpu.items() if k != "hardware"}, "wide", settings, cpu) == (
        "measured with backend None, this process has 'cpu'")  # a result that names no machine
    assert equal_time.difference(on_cpu, "wide", settings, {**cpu, "cores": 1}) == (  # said, so a user can pin it
        "measured with cores 2, this process has 1 (a process pinned with taskset counts the cores it may use)")
    assert equal_time.difference(on_cpu, "wide", {**settings, "jaxdust": "0.2.14"}, cpu) == (
        "measured with jaxdust '0.2.13', not '0.2.14'")
    # Minutes buy other training under another XLA or numba: a new jax was hidden by a kept run.
    assert equal_time.difference(saved, "wide", settings, {**gpu, "jaxlib": "0.12.0.1"}) == (
        "measured with jaxlib '0.10.2', this process has '0.12.0.1'")
    assert equal_time.difference(on_cpu, "wide", settings, {**cpu, "numba": "0.69.0"}) == (
        "measured with numba '0.68.0', this process has '0.69.0'")


def test_a_loaded_imitation_runs_agents_value_boards_as_its_network_was_trained():
    """The policy, scorer and evaluator a run is played with are built from the config's
    network, prior included: a Former run's value starts at Former's heuristic (rule_prior),
    so agents built without it would score every board by the dust game's instead."""
    config = imitation.ImitationConfig.mlp(game=jaxdust.GameConfig(7, 9, 4, "former"), hidden=(16,))
    learner = learners.get("imitation")
    params = learner.template(config).params
    boards = jax.vmap(lambda k: jaxdust.random_board(k, config.game))(jax.random.split(jax.random.key(3), 4))
    logits, cost = config.network.apply(params, boards)
    assert config.network.prior_rules == "former"
    np.testing.assert_allclose(learner.scorer(config)(boards, params), cost, rtol=1e-6)
    evaluated_cost, evaluated_logits = learner.evaluator(config)(boards, params)
    np.testing.assert_allclose(evaluated_cost, cost, rtol=1e-6)
    sizes = np.maximum(np.asarray(jax.vmap(game.cluster_sizes)(boards)).reshape(logits.shape), 1)
    np.testing.assert_allclose(evaluated_logits, logits - np.log(sizes), rtol=1e-5, atol=1e-6)  # a cluster's mean
    dust_prior = dataclasses.replace(config, rule_prior=False).network.apply(params, boards)[1]
    assert np.all(np.abs(np.asarray(dust_prior) - np.asarray(cost)) > 0.05)  # the prior matters
    legal = np.asarray(boards[0]).reshape(-1) != 0
    assert learner.policy(config)(jax.random.key(0), boards[0], params) == np.argmax(np.where(legal, logits[0], -np.inf))
    cell_head = imitation.ImitationConfig(game=config.game, hidden=(16,), cell_rounds=1, cell_width=8)
    params = learner.template(cell_head).params
    value, logits = cell_head.network.apply(params, boards)
    assert cell_head.network.prior_rules == "former"
    np.testing.assert_allclose(learner.scorer(cell_head)(boards, params), value, rtol=1e-6)
    np.testing.assert_allclose(learner.evaluator(cell_head)(boards, params)[0], value, rtol=1e-6)
    dust_prior = dataclasses.replace(cell_head, rule_prior=False).network.apply(params, boards)[0]
    assert np.all(np.abs(np.asarray(dust_prior) - np.asarray(value)) > 0.05)


@pytest.mark.slow
def test_a_start_refused_after_its_run_directory_was_written_needs_no_resume(tmp_path, capsys):
    """Settings only the trainer can refuse (here a batch larger than the data's training
    split) are found after the run directory's config.json is written: the refusal removes
    it, so the corrected command starts the run (on the data already made) with no --resume."""
    run_dir = tmp_path / "run"
    argv = ["imitation", "--run-dir", str(run_dir), "--size", "6x6x5", "--epochs", "1", "--hidden", "8",
            "--data-boards", "3", "--eval-boards", "4"]
    with pytest.raises(SystemExit):
        cli.main(argv)
    err = capsys.readouterr().err
    assert "fewer than batch_size 64" in err and "making 3 beam-labelled boards" in err
    # its advice to make more boards names what that takes here: the refusal below
    assert f"more boards with --data-boards need another --run-dir, or {run_dir / 'data'} removed first" in err
    assert not (run_dir / "config.json").exists() and (run_dir / "data").is_dir()
    made = {path: path.stat().st_mtime_ns for path in (run_dir / "data").rglob("*") if path.is_file()}
    with pytest.raises(SystemExit):  # its data, made with 3 boards, is not remade with 4 in its place
        cli.main([*argv, "--batch-size", "8", "--data-boards", "4", "--seed", "5"])
    assert ("data holds a data set made with other settings (--data-boards 3, not 4; --seed 0, not 5): give the flags "
            "it was made with") in capsys.readouterr().err
    assert not (run_dir / "config.json").exists() and not (run_dir / "checkpoints").exists()
    summary = cli.main([*argv, "--batch-size", "8"])
    assert summary["learner"] == "imitation" and (run_dir / "config.json").exists()
    assert "beam-labelled boards" not in capsys.readouterr().err  # made already: nothing to make
    assert made and all(path.stat().st_mtime_ns == mtime for path, mtime in made.items())  # not made again


def test_an_unfinished_data_set_of_other_settings_is_refused_before_saying_it_is_made(tmp_path, capsys):
    """A run folder holding a data set begun with other settings (no shard written yet): the
    start is refused naming them, and says nothing of making boards it will not make."""
    from jaxdust.learn import datasets

    run_dir = tmp_path / "run"
    begun = DatasetConfig(game.GameConfig(6, 6, 5), boards=4, seed=1, labeller="beam", shard_size=1000)
    (run_dir / "data").mkdir(parents=True)
    (run_dir / "data" / "manifest.json").write_text(json.dumps(
        {"format": datasets.FORMAT_VERSION, "config": configs.to_json(begun), "shards": []}))
    with pytest.raises(SystemExit):
        cli.main(["imitation", "--run-dir", str(run_dir), "--size", "6x6x5", "--epochs", "1", "--hidden", "8",
                  "--data-boards", "3", "--data-beam-width", str(begun.beam_width), "--eval-boards", "4"])
    err = capsys.readouterr().err
    assert "data holds a data set made with other settings (--data-boards 4, not 3)" in err
    assert "beam-labelled boards" not in err


def test_a_run_out_of_memory_stops_in_one_line_naming_the_flags_that_size_it(tmp_path, capsys, monkeypatch):
    """XLA's out of memory (the defaults on large boards ask for cells squared) ends train.py
    in one line naming the learner's sizing flags with their values, or --eval-boards where
    an evaluation ran out; a run that never finished a step starts over in the same folder,
    one with checkpoints is sent to another. Other runtime errors pass as they are."""

    real = learners._lockstep_trainer
    failures = {}

    def failing(*args, **kwargs):
        trainer = real(*args, **kwargs)

        def step(state, index):
            if index in failures:
                raise jax.errors.JaxRuntimeError(failures[index])
            return trainer.step(state, index)
        return trainer._replace(step=step)

    monkeypatch.setattr(learners, "_lockstep_trainer", failing)
    exhausted = "RESOURCE_EXHAUSTED: Out of memory allocating 29035504064 bytes."
    argv = ["avi", "--size", "5x4x3", "--hidden", "16", "--num-envs", "32", "--chunk-updates", "5",
            "--total-updates", "20", "--eval-boards", "4", "--checkpoint-every", "1"]
    failures[1] = exhausted
    with pytest.raises(SystemExit) as stop:
        cli.main([*argv, "--run-dir", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert ("out of memory in chunk 1 on 5x4x3 boards (RESOURCE_EXHAUSTED: Out of memory allocating 29035504064 "
            "bytes): lower --num-envs (now 32) or --child-share (now 0.5) or --buffer-lines (now 1024); the same "
            "--run-dir starts over with them") in err
    failures.clear()
    failures[3] = exhausted
    with pytest.raises(SystemExit):
        cli.main([*argv, "--run-dir", str(tmp_path / "a"), "--num-envs", "16"])
    assert ("out of memory in chunk 3 on 5x4x3 boards (RESOURCE_EXHAUSTED: Out of memory allocating 29035504064 "
            "bytes): lower --num-envs (now 16) or --child-share (now 0.5) or --buffer-lines (now 1024); train anew "
            "in another --run-dir (a resumed run keeps its settings)") in capsys.readouterr().err
    failures.clear()
    failures[1] = "INTERNAL: something else"
    with pytest.raises(jax.errors.JaxRuntimeError, match="something else"):
        cli.main([*argv, "--run-dir", str(tmp_path / "b")])
    failures.clear()
    evaluations = iter([jax.errors.JaxRuntimeError(exhausted)])
    monkeypatch.setattr(runs, "progress_evaluation",
                        lambda *args: lambda state, progress=None: (_ for _ in ()).throw(next(evaluations)))
    with pytest.raises(SystemExit):
        cli.main([*argv, "--run-dir", str(tmp_path / "c"), "--eval-every", "1"])
    assert ("out of memory in an evaluation on 5x4x3 boards (RESOURCE_EXHAUSTED: Out of memory allocating "
            "29035504064 bytes): lower --eval-boards (now 4)") in capsys.readouterr().err


def test_an_evaluation_larger_than_memory_is_refused_before_the_run_begins(tmp_path, capsys, monkeypatch):
    """``--eval-boards 10**9`` made XLA abort the process: the evaluation's boards and the
    clicks it keeps of them are checked against the machine's memory before any file is
    written, in one line naming the flag."""
    monkeypatch.setattr(machine, "memory_bytes", lambda: 2**30)
    with pytest.raises(SystemExit) as stop:
        cli.main(["avi", "--size", "5x4x3", "--hidden", "16", "--num-envs", "32", "--chunk-updates", "5",
                  "--total-updates", "5", "--eval-boards", "10000000", "--run-dir", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert re.search(r"--eval-boards 10000000 \(.+\): about [\d.]+ GiB of memory, more than this machine's "
                     r"1\.0 GiB", err), err
    assert not (tmp_path / "a").exists()


def test_an_evaluation_plays_argmax_in_chunks_as_it_would_all_at_once(monkeypatch):
    """Argmax play of every board in one program took ~200 KB a board of 8x6 (the cell
    head's messages): 120,000 --eval-boards were killed by the kernel after training. It
    plays ``play.DEFAULT_CHUNK`` boards at a time, each board as it plays among all."""
    config = avi.AVIConfig(game=game.GameConfig(5, 4, 3), hidden=(16,), num_envs=32, cell_width=8)
    learner = learners.get("avi")
    params = learner.params(learner.template(config))
    boards = runs.evaluation_boards(config.game, 10)
    sizes = []
    real = play._play_boards
    monkeypatch.setattr(play, "_play_boards", lambda part, *rest: sizes.append(part.shape[0]) or real(part, *rest))
    whole = runs.argmax_lengths(boards, learner.policy(config), params, 80)
    assert sizes == [10]
    played = play.play_boards(boards, learner.policy(config), jax.random.key(0), 80, params)  # how it played before
    np.testing.assert_array_equal(whole, np.where(played.cleared, played.clicks, 80))
    sizes.clear()
    monkeypatch.setattr(play, "DEFAULT_CHUNK", 4)
    chunked = runs.argmax_lengths(boards, learner.policy(config), params, 80)
    assert sizes == [4, 4, 4]
    np.testing.assert_array_equal(chunked, whole)
    assert len(set(whole.tolist())) > 1  # boards that play alike would hide a mix-up


def test_a_runs_bar_shows_how_far_each_evaluation_has_played(tmp_path, capsys, monkeypatch):
    """120,000 --eval-boards played ~16 minutes with nothing printed: the training's bar shows
    the share of the evaluation's games played (argmax, then greedy, on each board) in place
    of the last evaluation's figures, which come back once it ends."""
    monkeypatch.setattr(progress, "LOG_SECONDS", 0.0)  # a log's line at every redraw
    monkeypatch.setattr(play, "DEFAULT_CHUNK", 2)  # argmax: 4 chunks of the 8 boards; greedy: 1 batch
    cli.main(["avi", "--size", "5x4x3", "--hidden", "16", "--num-envs", "32", "--chunk-updates", "1",
              "--total-updates", "2", "--eval-every", "1", "--eval-boards", "8", "--run-dir", str(tmp_path / "a")])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("avi:")]
    shown = [(re.search(r"evaluating (\d+)%", line), "greedy=" in line) for line in lines]
    steps = [int(found[1]) if found else "figures" for found, figures in shown if found or figures]
    evaluation = [12, 25, 37, 50, 100, "figures"]  # 2, 4, 6, 8 and 16 of 16 games; then its means
    assert [step for step, _ in itertools.groupby(steps)] == evaluation * 2, lines
    # Each evaluation's means, to the hundredth, are drawn with its own chunk counted, and
    # stay beside the next evaluation's progress (a log's line a minute often falls there).
    log = [json.loads(line) for line in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    first = f"argmax={log[0]['argmax_clicks']:.2f}, greedy={log[0]['greedy_clicks']:.2f}"
    for record in log:
        means = f"argmax={record['argmax_clicks']:.2f}, greedy={record['greedy_clicks']:.2f}"
        assert any(f"{record['chunk']}/2" in line and means in line for line in lines), (means, lines)
    assert not any("0/2" in line and "greedy=" in line for line in lines), lines
    assert any(line.endswith(f"{first}, evaluating 12%]") and "1/2" in line for line in lines), lines
    with progress.progress_bar(total=2, enabled=False) as hidden:  # another process's bar: tqdm's disabled one
        runs._evaluation_shown(hidden)(0.5)  # has no postfix


def test_the_out_of_memory_line_leaves_out_the_settings_another_turns_off(tmp_path):
    """dqn's --child-share sizes the full backup only: under the sampled one, lowering it
    frees nothing, so the line does not name it."""
    args = types.SimpleNamespace(eval_boards=4)
    run = types.SimpleNamespace(directory=str(tmp_path))
    for backup, named in (("sampled", False), ("full", True)):
        config = dqn.DQNConfig(backup=backup)
        assert ("child_share" in configs.unused_settings(config)) is not named
        with pytest.raises(runs.RunError) as stopped:
            with runs._out_of_memory_named(learners.get("dqn"), config, args, run, "chunk 1"):
                raise jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 8 bytes.")
        assert ("--child-share" in str(stopped.value)) is named
        assert "lower --num-envs (now 256) or --batch-size (now 256) or " in str(stopped.value)


def test_a_run_that_diverges_stops_in_one_line_keeping_nothing_of_the_broken_network(tmp_path, capsys, monkeypatch):
    """A learning rate far too high sends avi's network to NaN in its first chunk: train.py
    stops there in one line, logs, saves and selects nothing of it, and the corrected command
    starts in the same folder. Diverging after checkpoints names the last one and another
    folder (the same settings would diverge again from it)."""
    run_dir = tmp_path / "run"
    argv = ["avi", "--run-dir", str(run_dir), "--size", "5x4x3", "--hidden", "16", "--num-envs", "32",
            "--chunk-updates", "5", "--total-updates", "20", "--eval-boards", "4", "--checkpoint-every", "1"]
    with pytest.raises(SystemExit) as stop:
        cli.main([*argv, "--learning-rate", "1e6"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert ("training diverged in chunk 1: the network's parameters, loss and policy_loss became NaN or infinite, "
            "and nothing of that chunk is kept; nothing it trained was kept: train anew in the same --run-dir, with "
            "a lower --learning-rate (now 1e+06)") in err
    assert not os.listdir(run_dir / "checkpoints") and not os.listdir(run_dir / runs.BEST_DIR)
    assert not (run_dir / "metrics.jsonl").exists() or not (run_dir / "metrics.jsonl").read_text()
    checks = iter([True, True, False])  # the network breaks in chunk 3, after checkpoints 1 and 2
    monkeypatch.setattr(runs, "_finite", lambda params: next(checks))
    with pytest.raises(SystemExit):
        cli.main(argv)
    assert ("training diverged in chunk 3: the network's parameters became NaN or infinite, and nothing of that "
            "chunk is kept; its checkpoints end at chunk 2, from where the same settings would diverge again: train "
            "anew in another --run-dir, with a lower --learning-rate (now 0.001)") in capsys.readouterr().err
    assert [json.loads(line)["chunk"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    # Timed checkpoints not yet due: only the best of the evaluations is on disk.
    checks = iter([True, False])
    with pytest.raises(SystemExit):
        cli.main([*argv[:-2], "--checkpoint-seconds", "100000", "--eval-every", "1", "--run-dir", str(tmp_path / "b")])
    assert ("training diverged in chunk 2: the network's parameters became NaN or infinite, and nothing of that "
            "chunk is kept; only its selected checkpoints (chunk 1 in best/ and chunk 1 in best-argmax/, playable) were "
            "kept: train anew in another --run-dir"
            ) in capsys.readouterr().err
    assert not os.listdir(tmp_path / "b" / "checkpoints") and os.listdir(tmp_path / "b" / runs.BEST_DIR) == ["1"]
    monkeypatch.undo()  # the finite checks, by hand: only parameters and losses count
    nan, inf = float("nan"), float("inf")
    assert runs._divergence({"w": jnp.ones(2), "step": jnp.int32(3)}, {"loss": 1.0, "q_mean": nan}) is None
    assert runs._divergence({"w": jnp.array([1.0, -inf])}, {"loss": 1.0}) == "the network's parameters"
    assert runs._divergence({"w": jnp.ones(2)}, {"train_policy_loss": inf, "valid_value_loss": nan}) == \
        "train_policy_loss and valid_value_loss"


def test_a_run_folders_data_set_is_told_apart_in_train_flags():
    """The data set a run makes is seeded with the run's seed + 1: a hint must name the
    --seed that makes it again, and settings train.py cannot give as what they are."""
    asked = DatasetConfig(game.GameConfig(6, 6, 5), boards=4, seed=6, labeller="beam", beam_width=32, shard_size=1000)
    made = dataclasses.replace(asked, boards=3, seed=1, game=game.GameConfig(6, 5, 5))
    assert learners._run_data_differences(made, asked) == \
        "--data-boards 3, not 4; --seed 0, not 5; --size 6x5x5, not 6x6x5"
    by_hand = dataclasses.replace(asked, labeller="exact", shard_size=50)
    assert learners._run_data_differences(by_hand, asked) == \
        "labeller exact, not beam; shard_size 50, not 1000 (not made by train.py: pass it with --data instead)"
    # Seeded 0 (python -m jaxdust.learn.datasets' default): no --seed makes it; --seed -1 is no answer.
    assert learners._run_data_differences(dataclasses.replace(asked, seed=0), asked) == \
        "seed 0, not 6 (not made by train.py: pass it with --data instead)"


def test_resuming_with_other_settings_names_them(tmp_path):
    """A resume refused for its settings says which differ, by the flags that set them, and
    another learner's run is named as such (both before any checkpoint is read)."""
    config = avi.AVIConfig()
    (tmp_path / "config.json").write_text(json.dumps({"learner": "avi", "config": configs.to_json(config)}))
    with pytest.raises(runs.RunError, match=r"other settings \(--total-updates 3000, not 12\)"):
        runs.Run(str(tmp_path), learners.get("avi"), dataclasses.replace(config, total_updates=12), resume=True)
    other_game = dataclasses.replace(config, total_updates=12, game=game.GameConfig(8, 6, 5, "former"))
    with pytest.raises(runs.RunError, match=r"other settings \(--total-updates 3000, not 12; --size 8x6x5, not "
                                            r"former:8x6x5\)"):  # the board as the flag that gives it
        runs.Run(str(tmp_path), learners.get("avi"), other_game, resume=True)
    with pytest.raises(runs.RunError, match=r"other settings \(--size 8x6x5, not former:8x6x5\): "):
        runs.Run(str(tmp_path), learners.get("avi"), dataclasses.replace(config, game=other_game.game), resume=True)
    # Saved settings that no config of the asked board could hold (its children past 2^31)
    # are still named as the run's, not refused as if they had been asked for.
    small = dataclasses.replace(config, game=game.GameConfig(4, 3, 3), num_envs=65536, child_share=1.0,
                                buffer_lines=8192)
    (tmp_path / "config.json").write_text(json.dumps({"learner": "avi", "config": configs.to_json(small)}))
    with pytest.raises(runs.RunError, match=r"other settings \(--buffer-lines 8192, not 1024; --child-share 1.0, "
                                            r"not 0.5; --num-envs 65536, not 512; --size 4x3x3, not 15x15x5\)"):
        runs.Run(str(tmp_path), learners.get("avi"), dataclasses.replace(config, game=game.GameConfig(15, 15, 5)),
                 resume=True)
    with pytest.raises(runs.RunError, match=r"holds a run of avi, not dqn: resume it with the avi learner"):
        runs.Run(str(tmp_path), learners.get("dqn"), dqn.DQNConfig(), resume=True)
    # Tuples as the flag takes them, booleans as the flag that sets each, nested fields by their
    # flag: each of these is what train.py --help lists.
    saved = dataclasses.replace(dqn.DQNConfig(), hidden=(16, 16), double_dqn=False)
    (tmp_path / "config.json").write_text(json.dumps({"learner": "dqn", "config": configs.to_json(saved)}))
    asked = dataclasses.replace(dqn.DQNConfig(), hidden=(32,), rewards=dataclasses.replace(dqn.DQNConfig().rewards,
                                                                                          clear=2.0))
    with pytest.raises(runs.RunError) as refused:
        runs.Run(str(tmp_path), learners.get("dqn"), asked, resume=True)
    assert f"(--no-double-dqn, not --double-dqn; --hidden 16,16, not 32; --rewards-clear " \
           f"{saved.rewards.clear}, not 2.0)" in str(refused.value)
    help_text = subprocess.run([sys.executable, "train.py", "dqn", "--help"], capture_output=True, text=True,
                               cwd=ROOT).stdout
    assert all(flag in help_text for flag in ("--no-double-dqn", "--hidden", "--rewards-clear"))
    # An empty tuple is "none", as --help shows it, and the flag takes it back.
    assert runs.setting_differences(dataclasses.replace(config, conv=(32, 32)), config) == "--conv 32,32, not none"
    assert cli.new_run_config("avi", ["--conv", "none"])[1].conv == ()


def test_the_hint_after_training_a_run_whose_folder_holds_a_comma_says_to_name_it_otherwise(tmp_path, monkeypatch,
                                                                                            capsys):
    """Its --agents list was split at the comma: "x given more than once"."""
    monkeypatch.setattr(runs, "train", lambda learner, config, args: {"learner": learner})
    cli.main(["dqn", "--run-dir", str(tmp_path / "my run,x")])
    assert capsys.readouterr().err == (f"the run is in {tmp_path / 'my run,x'}; the evaluation's --agents names "
                                       "runs in a comma-separated list, so play it by a path without a comma (a "
                                       "symbolic link to it, say)\n")
    cli.main(["dqn", "--run-dir", str(tmp_path / "my run")])
    assert "play it with python evaluate.py --agents 'policy:" in capsys.readouterr().err


def test_the_hint_after_training_names_boards_of_the_runs_size():
    """``play it with python evaluate.py --agents ...`` was refused for a run of any other
    size ("trained on 7x9 boards; these are 8x6"): the hint names the boards to play."""
    from jaxdust.learn.cli import _evaluation_boards_flags

    assert _evaluation_boards_flags(jaxdust.GameConfig()) == ""
    assert _evaluation_boards_flags(jaxdust.GameConfig(7, 9, 4, "former")) == " --env Former-7x9x4-v0"
    assert _evaluation_boards_flags(jaxdust.GameConfig(5, 4, 3)) == " --random 100 --size 5x4x3"
    assert _evaluation_boards_flags(jaxdust.GameConfig(5, 4, 3, "former")) == " --random 100 --size former:5x4x3"


def test_checkpoints_keep_a_keys_own_algorithm_and_refuse_what_they_cannot_keep(tmp_path):
    """An "rbg" key came back through the default algorithm (a TypeError: 4 words where 2
    were expected); max_to_keep=0 kept every checkpoint ([:-0] is empty); saving a step
    again failed inside orbax and said "free space?"."""
    state = {"key": jax.random.key(3, impl="rbg"), "w": jnp.arange(4.0)}
    saved = checkpoint.Checkpoints(str(tmp_path / "rbg"))
    saved.save(1, state, {"config": 1})
    step, restored = saved.restore(state, {"config": 1})
    assert jax.random.key_impl(restored["key"]) == jax.random.key_impl(state["key"])
    np.testing.assert_array_equal(jax.random.key_data(restored["key"]), jax.random.key_data(state["key"]))
    with pytest.raises(checkpoint.CheckpointError, match="checkpoint 1 exists in .*: a step is saved once"):
        saved.save(1, state, {"config": 1})
    # A step older than those kept was saved, checksummed and at once removed, without a word;
    # removing a step that is not there asked for a writable folder.
    two = checkpoint.Checkpoints(str(tmp_path / "two"), max_to_keep=2)
    for step in (2, 4):
        two.save(step, state, {"config": 1})
    with pytest.raises(checkpoint.CheckpointError, match=r"checkpoint 1 is older than the 2 kept in .* \(2, 4\)"):
        two.save(1, state, {"config": 1})
    two.save(3, state, {"config": 1})  # newer than one of those kept: saved, and 2 removed
    assert two.steps() == [3, 4]
    for move in (two.delete, two.set_aside):
        with pytest.raises(checkpoint.CheckpointError, match=r"no checkpoint 7 in .*; there are 3, 4$"):
            move(7)
    shutil.rmtree(tmp_path / "two" / "4")  # behind the manager's back: its cached listing still holds 4
    with pytest.raises(checkpoint.CheckpointError, match=r"no checkpoint 4 in .*; there are 3$"):
        two.delete(4)
    for bad in (0, -1, None, 1.5):
        with pytest.raises(ValueError, match="max_to_keep must be a positive integer"):
            checkpoint.Checkpoints(str(tmp_path / "bad"), max_to_keep=bad)
    assert not os.path.exists(tmp_path / "bad")
