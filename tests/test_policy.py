"""The policy over clusters: its maths, the network's policy head, Gumbel MuZero search
(mctx) over the simulator, and the policy / value / mcts agents (the avi learner's policy
targets are tested in test_avi.py)."""

import dataclasses
import os
import re
import subprocess
import sys

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdust import solve
from jaxdust.core import game
from jaxdust.core import reference as ref
from jaxdust.core.game import GameConfig
from jaxdust.core.boards import model_colors, model_rules, parse_board, require_model_fits
from jaxdust.core.play import play_boards, play_in_chunks
from jaxdust.evaluation import baselines, ranking, registry
from jaxdust.learn import agents, learners, networks
from jaxdust.search import beam, heuristic, mcts
from jaxdust.search.beam import beam_search, lookahead_scorer
from tests import family_reference as fr

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = GameConfig(4, 3, 3)  # the exact solver proves these in microseconds


def random_boards(count, size, seed):
    return jax.vmap(lambda k: game.random_board(k, size))(jax.random.split(jax.random.key(seed), count))


def optimum(boards, colors):
    return np.array([solve(b, colors=colors).length for b in np.asarray(boards)], float)


@pytest.mark.slow
def test_cluster_log_probs_sum_the_cells_of_each_cluster():
    log_probs = mcts.cluster_log_probs(jnp.array([0.0, 0.0, 0.0, 9.0]), jnp.array([0, 0, 2, -1]))
    np.testing.assert_allclose(np.exp(log_probs), [2 / 3, 2 / 3, 1 / 3, 0.0], rtol=1e-6)
    # Random logits on random boards: one probability per cluster, summing to one.
    boards = random_boards(5, GameConfig(), seed=4)
    labels = jax.vmap(game.cluster_labels)(boards).reshape(5, -1)
    logits = jax.random.normal(jax.random.key(1), (5, 48))
    probs = np.exp(np.asarray(mcts.cluster_log_probs(logits, labels)))
    labels = np.asarray(labels)
    for row, label in zip(probs, labels):
        first = label == np.arange(48)
        np.testing.assert_allclose(row[first].sum(), 1.0, rtol=1e-5)
        np.testing.assert_allclose(row[label >= 0], row[label[label >= 0]], rtol=1e-6)  # shared by the cluster


def test_cluster_log_probs_equal_a_float64_reference_far_below_float32s_range():
    """Pooled per cluster in one pass over the cells (was: every cell against every other):
    batch axes, a board with no cell, clusters of probability e^-300 (finite log, not
    -inf) and gradients that stay finite, also where labels broadcast against the logits."""
    rng = np.random.default_rng(7)
    boards = np.array(random_boards(6, GameConfig(), seed=9))
    boards[5] = 0
    labels = np.asarray(jax.vmap(game.cluster_labels)(jnp.asarray(boards))).reshape(2, 3, 48)
    logits = rng.normal(size=(2, 3, 48)) * np.where(rng.random((2, 3, 48)) < 0.3, 150.0, 1.0)
    got = np.asarray(mcts.cluster_log_probs(jnp.asarray(logits, jnp.float32), jnp.asarray(labels)), np.float64)
    for index in np.ndindex(2, 3):
        label, logit = labels[index], logits[index]
        on_board = label >= 0
        assert np.all(got[index][~on_board] == -np.inf)
        if not on_board.any():
            continue
        log_cells = logit[on_board] - np.logaddexp.reduce(logit[on_board])
        for cluster in np.unique(label[on_board]):
            expected = np.logaddexp.reduce(log_cells[label[on_board] == cluster])
            np.testing.assert_allclose(got[index][label == cluster], expected, rtol=1e-5, atol=1e-4)
    occupied = labels >= 0
    assert got[occupied].min() < -250 and np.isfinite(got[occupied]).all()  # far below float32's smallest probability
    gradient = jax.grad(lambda x: jnp.sum(jnp.where(labels >= 0, mcts.cluster_log_probs(x, jnp.asarray(labels)), 0.0)))(
        jnp.asarray(logits, jnp.float32))
    assert np.isfinite(np.asarray(gradient)).all()
    one_board = mcts.cluster_log_probs(jnp.asarray(logits[0], jnp.float32), jnp.asarray(labels[0, 0]))
    np.testing.assert_allclose(one_board[0], got[0, 0], rtol=1e-6)


def test_cluster_log_probs_of_a_cluster_masked_to_minus_infinity_and_of_int8_labels():
    """A cluster whose cells all have -inf logits (an evaluator's own mask) pooled to NaN,
    and mctx then searched on a NaN prior; int8 labels could not index 128 cells."""
    log_probs = mcts.cluster_log_probs(jnp.array([0.0, 0.0, -jnp.inf, 1.0]), jnp.array([0, 0, 2, 3]))
    expected = [np.log(2 / (2 + np.e))] * 2 + [-np.inf, np.log(np.e / (2 + np.e))]
    np.testing.assert_allclose(np.asarray(log_probs), expected, rtol=1e-6)
    labels = np.where(np.arange(130) < 128, np.arange(130) // 2 * 2, -1)  # pairs of cells, the last two empty
    pooled = mcts.cluster_log_probs(jnp.zeros(130), jnp.asarray(labels, jnp.int8))
    np.testing.assert_allclose(np.exp(np.asarray(pooled[:128])), 2 / 128, rtol=1e-5)
    assert np.all(np.asarray(pooled[128:]) == -np.inf)


def test_cluster_log_probs_of_masked_or_far_shifted_logits_keep_finite_gradients_and_empty_cells_out():
    """A cluster of -inf logits gave every other cluster a NaN gradient (``log(0)``'s infinite
    slope times a zero cotangent); logits far below -1e9 on every occupied cell lost the
    softmax to the empty cells, which were masked to -1e9 (a shift of all logits must not
    change the policy)."""
    labels = jnp.array([0, 0, 2, -1])
    grads = jax.grad(lambda logits: mcts.cluster_log_probs(logits, labels)[2])(jnp.array([-jnp.inf, -jnp.inf, 0.0, 9.0]))
    np.testing.assert_allclose(np.asarray(grads), [0.0, 0.0, 0.0, 0.0], atol=1e-6)  # the only cluster left: p = 1
    grads = jax.grad(lambda logits: mcts.cluster_log_probs(logits, jnp.array([0, 0, 2, 3]))[2])(
        jnp.array([-jnp.inf, -jnp.inf, 0.0, 0.0]))
    np.testing.assert_allclose(np.asarray(grads), [0.0, 0.0, 0.5, -0.5], atol=1e-6)
    for shift in (-2e9, -1e9 - 50, 1e9):
        log_probs = mcts.cluster_log_probs(jnp.array([shift, shift, 0.0]), jnp.array([0, 1, -1]))
        np.testing.assert_allclose(np.asarray(log_probs), [np.log(0.5), np.log(0.5), -np.inf], rtol=1e-6)


def test_the_imitation_prior_ranks_clusters_as_its_argmax_does_whatever_their_size():
    """Its per-cell logits each say "this cell's cluster is the click": summed over a
    cluster's cells they weighed a cluster of 6 at a sigmoid of 0.27 above a single cell at
    0.73, the order ``PolicyGreedy`` plays reversed."""
    board = jnp.asarray([[1, 1, 1], [1, 1, 1], [2, 3, 2], [3, 2, 3]], jnp.int8)  # a cluster of 6, six singles
    cell_logits = jnp.where(board.reshape(-1) == 1, -1.0, 1.0)
    cell_logits = cell_logits.at[9].set(0.5)  # one single below the others

    class Network:  # stands in for a trained PolicyValueNetwork
        @staticmethod
        def apply(params, boards):
            return jnp.broadcast_to(cell_logits, (boards.shape[0], 12)), jnp.zeros(boards.shape[0])

    _, logits = agents.PolicyValueEvaluator(Network())(board[None], {})
    prior, legal = mcts.cluster_prior(board[None], logits)
    prior = np.where(np.asarray(legal[0]), np.asarray(jax.nn.softmax(prior[0])), 0.0)
    by_prior = sorted(np.flatnonzero(legal[0]), key=lambda cell: -prior[cell])
    by_logit = sorted(np.flatnonzero(legal[0]), key=lambda cell: -float(cell_logits[cell]))
    assert by_prior == by_logit and by_prior[-1] == 0  # the cluster of 6 last, at its cells' logit
    np.testing.assert_allclose(prior[0] / prior[by_prior[0]], np.exp(-1.0 - 1.0), rtol=1e-5)


def test_cell_messages_reach_neighbours_and_cluster_mates():
    x = jnp.arange(6.0).reshape(3, 2, 1)  # W=3, H=2
    left, right, below, above = (np.asarray(a)[..., 0] for a in networks.neighbours(x))
    assert left.tolist() == [[0, 0], [0, 1], [2, 3]] and right.tolist() == [[2, 3], [4, 5], [0, 0]]
    assert below.tolist() == [[0, 0], [0, 2], [0, 4]] and above.tolist() == [[1, 0], [3, 0], [5, 0]]
    board = jnp.asarray([[1, 1], [2, 0], [1, 3]], jnp.int8)  # the 1s at x=0 are one cluster, (2, 0) another
    means = np.asarray(networks.cluster_means(board[None]))[0]
    np.testing.assert_allclose(means[0], [0.5, 0.5, 0, 0, 0, 0])
    np.testing.assert_allclose(means[4], [0, 0, 0, 0, 1, 0])
    np.testing.assert_allclose(means[3], 0.0)  # empty


def test_a_message_round_is_one_dense_layer_over_the_eight_messages():
    """``CellMessages`` multiplies the column's and row's means before spreading them: the
    parameters, their initial values and the output are those of an ``nn.Dense`` over
    [the cell, its four neighbours, its cluster's, column's and row's means] side by side,
    so checkpoints of either form load in the other."""
    import flax.linen as nn

    boards = random_boards(3, GameConfig(), seed=6)
    clusters = networks.cluster_means(boards)
    x = jax.random.normal(jax.random.key(3), (3, 8, 6, 16))

    class Reference(nn.Module):  # the plain form, spelled out
        @nn.compact
        def __call__(self, x, clusters):
            column = jnp.broadcast_to(jnp.mean(x, axis=-2, keepdims=True), x.shape)
            row = jnp.broadcast_to(jnp.mean(x, axis=-3, keepdims=True), x.shape)
            messages = jnp.concatenate([x, *networks.neighbours(x), networks._apply_means(clusters, x), column, row], -1)
            return nn.Dense(12, kernel_init=nn.initializers.he_normal(), name="round")(messages)

    class Ours(nn.Module):
        @nn.compact
        def __call__(self, x, clusters):
            return networks.CellMessages(12, name="round")(x, clusters)

    reference_params = Reference().init(jax.random.key(4), x, clusters)
    params = Ours().init(jax.random.key(4), x, clusters)
    assert jax.tree.structure(params) == jax.tree.structure(reference_params)
    for ours, theirs in zip(jax.tree.leaves(params), jax.tree.leaves(reference_params)):
        np.testing.assert_array_equal(ours, theirs)
    params = jax.tree.map(lambda p: p + jax.random.normal(jax.random.key(5), p.shape), params)  # a nonzero bias too
    np.testing.assert_allclose(Ours().apply(params, x, clusters), Reference().apply(params, x, clusters),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_policy_head_starts_uniform_over_cells_and_value_at_the_estimate():
    boards = random_boards(3, GameConfig(), seed=2)
    network = networks.ValuePolicyNetwork((16,), 5, cell_rounds=1)
    params = network.init(jax.random.key(0), boards)
    value, logits = network.apply(params, boards)
    np.testing.assert_allclose(logits, 0.0)
    from jaxdust.search.heuristic import HEURISTIC_WEIGHTS, heuristic_features
    expected = jax.vmap(heuristic_features)(boards) @ jnp.asarray(HEURISTIC_WEIGHTS, jnp.float32)
    np.testing.assert_allclose(value, expected, rtol=1e-6)


def test_networks_and_the_heuristic_outside_jit_compile_once(compile_log):
    """Flax applies a network outside jit op by op, and a user may call the heuristic so;
    the feature functions are jitted, so the labelling's loops do not compile again at every
    call (and give what the caller's own jit gives)."""
    from jaxdust.search.heuristic import heuristic_features, heuristic_scorer
    boards, others = random_boards(3, GameConfig(), seed=2), random_boards(3, GameConfig(), seed=3)
    network = networks.ValuePolicyNetwork((16,), 5, cell_rounds=1)
    params = jax.jit(network.init)(jax.random.key(0), boards)
    for call in (lambda b: network.apply(params, b), jax.vmap(heuristic_features), heuristic_scorer):
        call(boards)
        result, compiled = compile_log(lambda: call(others))
        assert compiled == []
        for got, expected in zip(jax.tree.leaves(result), jax.tree.leaves(jax.jit(call)(others))):
            np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("rules", ["dust", "former"])
def test_mcts_plays_tiny_boards_near_optimally_and_only_legal_clicks(rules):
    boards = random_boards(24, SMALL, seed=5)
    best = np.array([solve(b, colors=3, rules=rules).length for b in np.asarray(boards)], float)
    policy = mcts.MCTSPolicy(mcts.heuristic_evaluator, 64, rules=rules)
    played = play_boards(boards, policy, jax.random.key(0), 12, None, rules)
    assert bool(np.all(played.cleared))
    largest = play_boards(boards, baselines.largest_cluster, jax.random.key(0), 12, rules=rules)
    clicks = np.asarray(played.clicks, float)
    assert clicks.mean() - best.mean() < 0.25, (clicks.mean(), best.mean())
    assert clicks.mean() < np.asarray(largest.clicks, float).mean()
    # The policy is the search under its rules (a search under the other rules plans other clicks).
    output = mcts.search(boards, mcts.heuristic_evaluator, None, jax.random.key(1), 16, rules=rules)
    few = mcts.MCTSPolicy(mcts.heuristic_evaluator, 16, rules=rules)
    chosen = jax.vmap(lambda board: few(jax.random.key(1), board, None))(boards)
    np.testing.assert_array_equal(chosen, output.action)
    other = mcts.search(boards, mcts.heuristic_evaluator, None, jax.random.key(1), 16,
                        rules="former" if rules == "dust" else "dust").action
    assert np.any(np.asarray(other) != np.asarray(output.action))
    labels = np.asarray(jax.vmap(game.cluster_labels)(boards)).reshape(24, -1)
    weights = np.asarray(output.action_weights)
    first = labels == np.arange(12)
    assert np.all(weights[~first] == 0) and np.allclose(weights.sum(1), 1.0, atol=1e-5)
    assert np.all(first[np.arange(24), np.asarray(output.action)])


def first_cells_and_sizes(board: np.ndarray) -> dict[int, int]:
    """The family reference's clusters: each one's first cell (``x * H + y``) -> its size."""
    height = board.shape[1]
    return {min(x * height + y for x, y in cluster): len(cluster) for cluster in fr.clusters(board)}


@pytest.mark.slow
@pytest.mark.parametrize("rules", ["dust", "former"])
def test_mcts_model_step_equals_the_reference_click(rules):
    size = GameConfig(6, 5, 4)
    boards = np.array(random_boards(40, size, seed=5))
    rng = np.random.default_rng(0)
    actions = np.array([rng.choice(sorted(first_cells_and_sizes(b))) for b in boards], np.int32)
    boards[-3:] = 0  # mctx may step past a cleared board
    output, children = mcts.recurrent_fn(mcts.heuristic_evaluator, rules)(None, jax.random.key(0),
                                                                          jnp.asarray(actions), jnp.asarray(boards))
    heuristic = np.asarray(mcts.heuristic_evaluator(children)[0])
    differs = False
    for board, action, child, reward, discount, value, prior, estimate in zip(
            boards, actions, np.asarray(children), *map(np.asarray, (output.reward, output.discount, output.value,
                                                                     output.prior_logits)), heuristic):
        playing = board.any()
        expected = fr.click(board, *divmod(int(action), size.height), rules)[0] if playing else board
        differs |= playing and not np.array_equal(expected, ref.click(board, *divmod(int(action), size.height))[0])
        np.testing.assert_array_equal(child, expected)
        assert reward == (-1.0 if playing else 0.0)
        assert discount == (0.0 if not expected.any() else 1.0)
        assert value == (0.0 if not expected.any() else -estimate)
        clusters = first_cells_and_sizes(expected)
        first = np.isin(np.arange(30), list(clusters))
        assert np.all(prior[~first] == mcts._MASKED) and np.all(prior[first] > mcts._MASKED)
        if first.any():  # a uniform prior over cells: each cluster's probability is its share of the cells
            sizes = np.array([clusters[cell] for cell in np.flatnonzero(first)])
            np.testing.assert_allclose(np.exp(prior[first]), sizes / sizes.sum(), rtol=1e-5)
    assert differs == (rules != "dust")  # the former rules' children are not the dust game's


def test_mcts_plans_with_the_click_rules_only():
    for make in (lambda: mcts.recurrent_fn(mcts.heuristic_evaluator, "samegame"),
                 lambda: mcts.MCTSPolicy(mcts.heuristic_evaluator, 8, rules="clickomania")):
        with pytest.raises(ValueError, match="mcts plays the fewest-clicks rules"):
            make()


@pytest.mark.slow
def test_mcts_prefers_the_click_that_clears():
    # 1 2 1 in a row: clicking the 2 lets the 1s meet, then one click clears.
    board = jnp.asarray([[1], [2], [1], [0]], jnp.int8).reshape(4, 1)
    output = mcts.search(board[None], mcts.heuristic_evaluator, None, jax.random.key(0), 8)
    assert int(output.action[0]) == 1


def test_a_network_refuses_boards_of_more_colours_than_it_was_built_for():
    """A colour above the network's one-hots as no colour at all: play, the beam and the
    search refuse such boards before compiling, and take boards of its colours or fewer."""
    network = networks.ValuePolicyNetwork(hidden=(8,), colors=3)
    evaluator = agents.NetworkEvaluator(network)
    boards = random_boards(3, GameConfig(4, 3, 4), 0)
    assert int(jnp.max(boards)) == 4  # one colour too many: the boundary
    key = jax.random.key(0)
    for call in (lambda: play_boards(boards, agents.ClusterArgmax(network), key, 12),
                 lambda: play_in_chunks(boards, agents.ClusterArgmax(network), key, 12, chunk=2),
                 lambda: play_boards(boards, mcts.MCTSPolicy(evaluator, simulations=4), key, 12),
                 lambda: beam_search(boards, 2, scorer=agents.ValueHeadScorer(network)),
                 lambda: beam_search(boards, 2, rescorer=agents.ValueHeadScorer(network)),
                 lambda: mcts.search(boards, evaluator, None, key, 4)):
        with pytest.raises(ValueError, match=f"hold colour {int(jnp.max(boards))}, but the network was built for 3"):
            call()
    assert model_colors(mcts.MCTSPolicy(evaluator)) == 3 and model_colors(baselines.largest_cluster) is None
    for fitting in (random_boards(3, SMALL, 0), random_boards(3, GameConfig(4, 3, 2), 0)):
        require_model_fits(fitting, mcts.MCTSPolicy(evaluator), "dust", "play_boards")  # no error
    # Boards that fit play, the searches' own traced boards included (they are not looked at).
    params = network.init(jax.random.key(1), fitting)
    assert bool(jnp.all(play_boards(fitting, mcts.MCTSPolicy(evaluator, 4), key, 12, params=params).cleared))
    searched = jax.jit(lambda b: mcts.search(b, evaluator, params, key, 4).action)(fitting)
    assert searched.shape == (3,) and bool(jnp.all(searched >= 0))


def test_a_run_refuses_boards_of_another_size_than_it_was_trained_on():
    """A run's agents say the size they were trained on: another size failed inside flax
    (6x6 for 8x6), and the same cells transposed (6x8) played on, the cells fed to the
    network in the wrong places. Refused for play, the beam and the search, under jit too
    (a shape is known while tracing); the trained size plays."""
    from jaxdust.learn.runs import load_run

    run, key = load_run("@avi-8x6x5"), jax.random.key(0)
    assert run.policy.trained_size == run.scorer.trained_size == run.evaluator.trained_size == (8, 6)
    for width, height in ((6, 8), (6, 6)):
        boards = game.random_boards(jax.random.key(1), 2, GameConfig(width, height, 5))
        for call in (lambda: play_boards(boards, run.policy, key, 48, params=run.params),
                     lambda: play_boards(boards, mcts.MCTSPolicy(run.evaluator, 4), key, 48, params=run.params),
                     lambda: beam_search(boards, 2, scorer=run.scorer, params=run.params),
                     lambda: beam_search(boards, 2, rescorer=lookahead_scorer(run.scorer), params=run.params),
                     lambda: jax.jit(lambda b: mcts.search(b, run.evaluator, run.params, key, 4).action)(boards),
                     # the agents called directly, as their docstrings allow
                     lambda: run.policy(key, boards[0], run.params), lambda: run.scorer(boards, run.params),
                     lambda: jax.jit(run.evaluator)(boards, run.params)):
            with pytest.raises(ValueError, match=f"the boards are {width}x{height}, but the network was trained on "
                                                 "8x6 boards"):
                call()
    boards = game.random_boards(jax.random.key(1), 2, GameConfig(8, 6, 5))
    assert bool(jnp.all(beam_search(boards, 2, scorer=run.scorer, params=run.params).length > 0))
    with pytest.raises(ValueError, match="ValueHeadScorer: the boards hold colour 7, but the network was built "
                                         "for 5 colours"):
        run.scorer(boards.at[0, 0, 0].set(7), run.params)  # a colour it would one-hot as blank
    for size in ([8, 6], (8,), (8, 0)):
        with pytest.raises(ValueError, match=r"ValueHeadScorer: trained_size must be a \(width, height\) tuple"):
            agents.ValueHeadScorer(run.scorer.network, trained_size=size)
    with pytest.raises(ValueError, match="unknown rules 'dsut'"):
        agents.ValueHeadScorer(run.scorer.network, trained_rules="dsut")
    with pytest.raises(TypeError, match="rules must be a str"):
        agents.ValueHeadScorer(run.scorer.network, trained_rules=["dust"])
    with pytest.raises(TypeError, match="QGreedy: its fields must be hashable"):
        agents.QGreedy(hidden=[8], colors=5)


def _former_line_clears(board, actions) -> bool:
    """Whether flat actions (``-1`` after the end) clear ``board`` under the plain-Python
    oracle's Former rules, every click removing a cluster."""
    position, height = np.asarray(board), board.shape[1]
    for action in (int(a) for a in actions if a >= 0):
        position, removed = fr.click(position, action // height, action % height, "former")
        if not removed:
            return False
    return not position.any()


def test_a_network_trained_under_other_rules_is_refused_under_the_default_ones():
    """A Former network (its rule prior keeps the rules) played by play_boards, the beam or
    the search without rules="former" gave plausible numbers of the dust game."""
    network = networks.ValuePolicyNetwork(hidden=(8,), colors=3, prior_rules="former")
    evaluator = agents.NetworkEvaluator(network)
    boards = random_boards(2, GameConfig(4, 3, 3, "former"), 0)
    params = network.init(jax.random.key(1), boards)
    key = jax.random.key(0)
    for call in (lambda: play_boards(boards, agents.ClusterArgmax(network), key, 12, params),
                 lambda: beam_search(boards, 2, scorer=agents.ValueHeadScorer(network), params=params),
                 lambda: beam_search(boards, 2, rescorer=agents.ValueHeadScorer(network), params=params),
                 lambda: mcts.search(boards, evaluator, params, key, 4)):
        with pytest.raises(ValueError, match=r"trained under \(or plays\) the former rules, and rules='dust' was asked"):
            call()
    with pytest.raises(ValueError, match=r"MCTSPolicy: .* trained under \(or plays\) the former rules, and rules='dust'"):
        mcts.MCTSPolicy(evaluator)  # it would plan the dust game and be played in Former's
    assert model_rules(mcts.MCTSPolicy(evaluator, rules="former")) == "former"
    played = play_boards(boards, agents.ClusterArgmax(network), key, 12, params, rules="former")
    assert bool(jnp.all(played.cleared)) and all(map(_former_line_clears, boards, played.actions))
    # Under the rules it says, the beam and the search take it (the rules asked reach the check).
    found = beam_search(boards, 2, scorer=agents.ValueHeadScorer(network), params=params, rules="former")
    assert all(map(_former_line_clears, boards, found.actions))
    assert [int(n) for n in found.length] == [int(np.sum(a >= 0)) for a in np.asarray(found.actions)]
    beam_search(boards, 2, rescorer=agents.ValueHeadScorer(network), params=params, rules="former")
    assert mcts.search(boards, evaluator, params, key, 4, rules="former").action.shape == (2,)
    # A network that says "dust" may come from a run without the rule prior, of any rules.
    assert model_rules(agents.ValueHeadScorer(networks.ValuePolicyNetwork(hidden=(8,), colors=3))) is None


def test_argmax_play_clicks_a_cluster_when_the_policys_logits_overflow():
    """Every cluster's prior was -inf, below the -1e9 of the cells that are no cluster's
    first: the plain argmax chose cell 0, empty on most positions, until the click cap."""
    network = networks.ValuePolicyNetwork(hidden=(8,), colors=3)
    board = parse_board("000000" "000000" "110000" "122300" "221300" "330000" "000000" "000000", 8, 6)
    params = network.init(jax.random.key(1), board[None])
    inner = dict(params["params"])
    for layer in ("policy", "cell_logit"):  # finite parameters, logits of +inf
        inner[layer] = {**inner[layer], "bias": jnp.full_like(inner[layer]["bias"], 3e38)}
    overflowing = {"params": inner}
    assert np.isinf(np.asarray(network.apply(overflowing, board[None])[1])).all()
    action = int(agents.ClusterArgmax(network)(jax.random.key(0), board, overflowing))
    assert board.reshape(-1)[action] != 0
    played = play_boards(board[None], agents.ClusterArgmax(network), jax.random.key(0), 20, overflowing)
    assert bool(played.cleared[0])


def test_a_networks_agents_refuse_negative_cells_and_the_points_rules():
    """A numpy board of negative colours was scored and played (taken as a JAX array, whose
    int8 colours nothing checked), and a network's policy under the SameGame rules chose
    lone cells, which remove nothing there, until the click cap."""
    network = networks.ValuePolicyNetwork(hidden=(8,), colors=3)
    boards = np.asarray(random_boards(2, GameConfig(4, 3, 3), 0))
    params = network.init(jax.random.key(1), boards)
    for call in (lambda: agents.ValueHeadScorer(network)(-boards, params),
                 lambda: agents.ClusterArgmax(network)(jax.random.key(0), -boards[0], params)):
        with pytest.raises(ValueError, match=r"the boards hold -3; a cell is 0 \(empty\) or a colour 1..3"):
            call()
    for rules in ("samegame", "clickomania"):
        with pytest.raises(ValueError, match=r"play_boards with a network's policy \(ClusterArgmax\) plays the "
                                             r"fewest-clicks rules \(dust, former\), got '" + rules):
            play_boards(boards, agents.ClusterArgmax(network), jax.random.key(0), 12, params, rules=rules)


@pytest.mark.parametrize("name", ["avi", "dqn", "imitation"])
def test_every_learners_agents_say_the_rules_they_were_trained_under(name):
    """dqn's and imitation's networks (and avi's without the rule prior) said nothing: a
    Former run's agents played the dust game under play_boards' default rules."""
    learner = learners.get(name)
    for rules in ("dust", "former"):
        config = dataclasses.replace(learner.presets["default"], game=GameConfig(4, 3, 3, rules))
        made = [learner.policy(config), learner.scorer(config), learner.evaluator(config)]
        assert [model_rules(agent) for agent in made if agent is not None] == [rules] * (2 + (name != "dqn"))
    boards = random_boards(2, GameConfig(4, 3, 3, "dust"), 0)
    with pytest.raises(ValueError, match=r"trained under \(or plays\) the former rules, and rules='dust' was asked"):
        play_boards(boards, learner.policy(config), jax.random.key(0), 12, params={})
    with pytest.raises(ValueError, match=r"lookahead_scorer: the network \(or lookahead\) given was trained under \(or plays\) the former"):
        lookahead_scorer(learner.scorer(config))
    assert model_rules(lookahead_scorer(learner.scorer(config), rules="former")) == "former"


def test_a_lookahead_plays_its_own_rules_and_a_beam_under_others_refuses_it():
    """lookahead_heuristic (dust clicks) reranked a Former beam's children without a word."""
    boards = random_boards(2, GameConfig(4, 3, 3, "former"), 0)
    with pytest.raises(ValueError, match=r"beam_search: .* plays\) the dust rules, and rules='former' was asked"):
        beam_search(boards, 2, rescorer=beam.lookahead_heuristic, rules="former")
    former = beam.lookahead_scorer(heuristic.heuristic_for("former"), rules="former")
    assert model_rules(former) == "former"
    found = beam_search(boards, 2, rescorer=former, rules="former")
    assert all(map(_former_line_clears, boards, found.actions))


def test_a_lookahead_says_its_base_networks_colours_and_an_mcts_policy_its_rules():
    """Wrapped in a lookahead, a 3-colour network played 5-colour boards (the one-hot drops
    colours 4 and 5) where alone it was refused; a Former MCTS policy played dust games."""
    network = agents.QScorer(hidden=(8,), colors=3)
    params = networks.QNetwork((8,), 3, False).init(jax.random.key(0), jnp.zeros((1, 8, 6), jnp.int8))
    boards = game.random_boards(jax.random.key(1), 2, GameConfig(8, 6, 5))
    assert model_colors(lookahead_scorer(network)) == 3
    for kwargs in ({"scorer": lookahead_scorer(network)}, {"rescorer": lookahead_scorer(network)}):
        with pytest.raises(ValueError, match="colour 5, but the network was built for 3 colours"):
            beam_search(boards, 2, params=params, **kwargs)
    former = mcts.MCTSPolicy(mcts.heuristic_evaluator_for("former"), 8, rules="former")
    assert model_rules(former) == "former"
    with pytest.raises(ValueError, match=r"trained under \(or plays\) the former rules, and rules='dust' was asked"):
        play_boards(np.ones((3, 4, 3), np.int8), former, jax.random.key(0), 30)


def test_a_lookahead_ranks_a_child_its_base_cannot_score_last_not_its_parent():
    """One NaN among a position's children made the position's whole value NaN (ranked
    last), though its other child clears the board in one more click."""
    def base(boards, params=None):  # NaN for positions of exactly two cells
        cells = jnp.sum(boards != 0, axis=(1, 2))
        return jnp.where(cells == 2, jnp.nan, cells.astype(jnp.float32))
    board = jnp.array([[[1, 1], [2, 0]]], jnp.int8)  # clicking the 2 leaves two cells (NaN), the 1s one cell
    assert np.asarray(lookahead_scorer(base)(board)).tolist() == [2.0]


def test_scorers_made_alike_are_equal_so_a_beam_compiles_once_for_them():
    """A scorer is a static argument of the beam: two made by the same call must be equal,
    or every fresh one compiles the beam again (seconds a call)."""
    weights = heuristic.heuristic_weights("former")
    assert heuristic.linear_scorer(weights) == heuristic.linear_scorer(list(weights)) == heuristic.heuristic_for("former")
    assert heuristic.linear_scorer(weights) != heuristic.heuristic_scorer
    made = [beam.lookahead_scorer(heuristic.linear_scorer(weights), rules="former") for _ in range(2)]
    assert made[0] == made[1] and hash(made[0]) == hash(made[1])
    assert made[0] != beam.lookahead_scorer(heuristic.linear_scorer(weights), chunk=7, rules="former")
    boards = random_boards(2, GameConfig(4, 3, 3, "former"), 0)
    beam_search(boards, 2, rescorer=made[0], rules="former")
    compiled = beam._beam_search._cache_size()
    again = beam_search(boards, 2, rescorer=beam.lookahead_scorer(heuristic.linear_scorer(weights), rules="former"),
                        rules="former")
    assert beam._beam_search._cache_size() == compiled and all(map(_former_line_clears, boards, again.actions))

    @dataclasses.dataclass  # not frozen: no hash, so no static argument
    class Unhashable:
        def __call__(self, boards, params=None):
            return heuristic.heuristic_scorer(boards)
    with pytest.raises(TypeError, match="lookahead_scorer: the base scorer must be hashable, .* got Unhashable"):
        beam.lookahead_scorer(Unhashable())


@pytest.mark.slow
def test_policy_scores_rank_children_by_cluster_probability():
    records = ranking.load()[:6]

    def oracle(boards, params):  # logits: minus each first cell's exact child value
        logits = np.full((boards.shape[0], 48), -1e4, np.float32)  # other cells of a cluster add nothing
        for row, record in enumerate(records):
            logits[row, record["actions"]] = -np.asarray(record["child_values"], np.float32) * 10
        return jnp.zeros(boards.shape[0]), jnp.asarray(logits)

    metrics = ranking.ranking_metrics(ranking.policy_scores(records, oracle, None), records, clicks_left=False)
    assert metrics["top1"] == 1.0 and metrics["regret"] == 0.0


@pytest.mark.slow
def test_agents_policy_value_and_mcts_through_evaluate(tmp_path, capsys, whole_dqn_run):
    import evaluate

    run = tmp_path / "run"
    subprocess.run([sys.executable, "train.py", "avi", "--hidden", "16", "--num-envs", "32", "--beam-width", "2",
                    "--buffer-lines", "32", "--total-updates", "20", "--chunk-updates", "10", "--eval-boards", "8",
                    "--cell-rounds", "1", "--run-dir", str(run)], check=True, cwd=ROOT, capture_output=True)
    names = [f"policy:{run}", f"value:{run}:2", f"mcts:{run}:8"]
    report = evaluate.main(["--limit", "6", "--agents", ",".join(names), "--out", str(tmp_path / "eval")])
    assert report["reference_proven_optimal"]  # the default set: the fewest-clicks boards, all proven
    unproven = evaluate.main(["--limit", "3", "--agents", "largest", "--boards", os.path.join(ROOT, "data/boards/eval_8x6x5.txt"),
                              "--out", str(tmp_path / "eval-unproven")])
    assert not unproven["reference_proven_optimal"]  # best known lengths of a beam
    for name in names:
        assert report["agents"][name]["boards"] == 6 and report["agents"][name]["not_cleared"] == 0
    # 0.1.0's names are refused with their replacements ("greedy" is width 1 on the value).
    for old, new in (("greedy", "value:RUN:1"), ("lookahead", "value:RUN[:WIDTH]")):
        with pytest.raises(ValueError, match=re.escape(new)):
            registry.parse_agent(f"{old}:{run}")
    with pytest.raises(ValueError, match="no policy and value"):
        registry.run_agent(f"mcts:{whole_dqn_run}", random_boards(2, GameConfig(), 0), key=jax.random.key(0),
                           max_clicks=48)


def test_considering_more_actions_than_cells_is_the_same_search():
    """Sequential Halving considers at most the legal actions; a larger count only grew
    mctx's table of visits, built in Python before the search (minutes at 10^5)."""
    boards = game.random_boards(jax.random.key(2), 3, GameConfig(4, 3, 3))
    evaluate, key = mcts.heuristic_evaluator_for("dust"), jax.random.key(7)
    expected = mcts.search(boards, evaluate, None, key, 8, considered=12, gumbel_scale=1.0)
    found = mcts.search(boards, evaluate, None, key, 8, considered=10**6, gumbel_scale=1.0)
    np.testing.assert_array_equal(found.action, expected.action)
    np.testing.assert_array_equal(found.action_weights, expected.action_weights)


def test_a_search_outside_jit_is_one_program_equal_to_a_jitted_one(compile_log):
    """Outside jit mctx ran op by op, traced again every call (seconds a call where the
    compiled search takes milliseconds). The search compiles once per evaluator, counts and
    rules, the noise's scale traced, and gives what a search inside the user's jit gives;
    an evaluator that cannot be hashed still searches, as it did."""
    boards = game.random_boards(jax.random.key(4), 2, GameConfig(5, 3, 3, "former"))
    evaluate = mcts.heuristic_evaluator_for("former")
    compile_log(lambda: mcts.search(boards, evaluate, None, jax.random.key(0), 6, 5, 1.0, "former"))
    for seed, scale in ((1, 1.0), (2, 0.5)):
        key = jax.random.key(seed)
        found, compiled = compile_log(lambda: mcts.search(boards, evaluate, None, key, 6, 5, scale, "former"))
        assert not compiled
        expected = jax.jit(lambda b, k: mcts.search(b, evaluate, None, k, 6, 5, scale, "former"))(boards, key)
        chex.assert_trees_all_equal(found, expected)

    class Unhashable:
        __hash__ = None

        def __call__(self, positions, params):
            return evaluate(positions, params)

    # Inside the caller's jit the search is traced where it is called: an evaluator made for
    # that trace (avi's lambda) leaves nothing in the compiled searches' cache.
    kept = mcts._compiled.cache_info().currsize
    jax.jit(lambda b: mcts.search(b, lambda p, q: evaluate(p, q), None, key, 6, 5, rules="former").action)(boards)
    assert mcts._compiled.cache_info().currsize == kept
    unhashed = mcts.search(boards, Unhashable(), None, key, 6, 5, scale, "former")
    np.testing.assert_array_equal(unhashed.action, found.action)
    chex.assert_trees_all_close(unhashed.action_weights, found.action_weights, atol=1e-6)  # op by op: other rounding


def test_the_noise_scale_may_be_a_jax_number_or_traced():
    """``gumbel_scale`` as a JAX scalar, or traced in the caller's jit (the search passes it
    into its program traced), was refused as "not a finite number >= 0"."""
    boards = game.random_boards(jax.random.key(5), 3, SMALL)
    evaluate, key = mcts.heuristic_evaluator_for("dust"), jax.random.key(3)
    expected = mcts.search(boards, evaluate, None, key, 6, 4, 0.5)
    for scale in (jnp.float32(0.5), np.float32(0.5), np.array(0.5), jnp.array(0.5)):
        chex.assert_trees_all_equal(mcts.search(boards, evaluate, None, key, 6, 4, scale), expected)
    traced = jax.jit(lambda b, k, s: mcts.search(b, evaluate, None, k, 6, 4, s))(boards, key, 0.5)
    np.testing.assert_array_equal(traced.action, expected.action)
    chex.assert_trees_all_close(traced.action_weights, expected.action_weights, atol=1e-6)
    for bad in (jnp.float32(np.nan), jnp.float32(-1), jnp.ones(2), jnp.array(True)):
        with pytest.raises(ValueError, match="gumbel_scale must be a finite number >= 0"):
            mcts.search(boards, evaluate, None, key, 6, 4, bad)
    with pytest.raises(ValueError, match="gumbel_scale must be a number, got a traced bool"):
        jax.jit(lambda s: mcts.search(boards, evaluate, None, key, 6, 4, s))(True)


@pytest.mark.parametrize("boards,simulations,width,height", [(64, 8, 20, 20), (64, 1, 8, 6), (16, 64, 8, 6),
                                                            (16, 2000, 8, 6), (4, 1000, 20, 20)])
def test_the_memory_a_search_asks_for_covers_its_program(boards, simulations, width, height):
    """The agents' memory check counted the search trees only, then a cluster prior that
    compared every cell with every other (eight times the trees on 20x20 boards, till it
    pooled each cluster in one pass): the estimate stays within twice what XLA allots."""
    program = mcts._compiled(mcts.heuristic_evaluator_for("dust"), simulations, 16, "dust").lower(
        jax.ShapeDtypeStruct((boards, width, height), jnp.int8), None, jax.random.key(0), 0.0).compile()
    used = program.memory_analysis()
    used = used.temp_size_in_bytes + used.argument_size_in_bytes + used.output_size_in_bytes
    assert used <= mcts.search_bytes(boards, simulations, width * height) <= 2 * used
