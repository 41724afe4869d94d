"""Under ``jax_enable_x64`` (JAX's 64-bit mode, often turned on globally) the searches, play and
a learner's agents give what the default mode gives: the same lengths, actions and dtypes.

Each test runs its work in the default mode, then again inside ``jax.enable_x64(True)``:
JAX traces and compiles apart for each mode, so the second run is a program of its own,
where ``jnp.arange``, ``argsort``, sums of bools and Python scalars are 64-bit unless the
library gives them a dtype. (Training itself is not compared: optax computes its learning-rate
schedule in float64 under x64, a last-bit difference, and ``test_checkpoint_recovery`` loads runs
under x64.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdust
from jaxdust.core import play
from jaxdust.evaluation import baselines, registry
from jaxdust.learn import agents, avi
from jaxdust.search import beam, mcts, points
from tests.conftest import same_in_both

CONFIG = jaxdust.GameConfig(6, 5, 4)
BOARDS = np.stack([np.asarray(jaxdust.random_board(key, CONFIG)) for key in jax.random.split(jax.random.key(1), 3)])
MAX_CLICKS = CONFIG.num_cells


def in_both_modes(run):
    """``run()``'s results in the default mode and under x64, checked equal leaf by leaf,
    dtypes included; returns the default mode's."""
    return same_in_both(run, lambda: jax.enable_x64(True))


def cells_left(boards, params):
    """A user's scorer that is float64 under x64 (a sum of bools times a Python float)."""
    return jnp.sum(boards != 0, axis=(1, 2)) * 1.0


@pytest.mark.parametrize("width, scorer, rescorer", [(1, None, None), (8, None, None),
                                                     (4, None, beam.lookahead_heuristic), (4, cells_left, None)],
                         ids=["width-1", "width-8", "lookahead", "float64-scorer"])
def test_beam_search(width, scorer, rescorer):
    found = in_both_modes(lambda: beam.beam_search(BOARDS, width, scorer=scorer, rescorer=rescorer))
    assert found.length.dtype == np.int32 and np.all(found.length > 0)


def test_points_beam():
    found = in_both_modes(lambda: points.points_beam(BOARDS, 4, rules="samegame"))
    assert np.all(found.value > 0)


def test_play_boards_with_largest_and_with_mcts():
    largest = in_both_modes(lambda: play.play_boards(BOARDS, baselines.largest_cluster, jax.random.key(0), MAX_CLICKS))
    searched = in_both_modes(lambda: play.play_boards(BOARDS[:2], mcts.MCTSPolicy(mcts.heuristic_evaluator, 4, 4),
                                                      jax.random.key(0), MAX_CLICKS))
    assert largest.cleared.all() and searched.cleared.all()


def test_the_searchs_outputs_and_model_step_keep_their_dtypes():
    """The heuristic evaluator's prior logits were float64 under x64 (``jnp.zeros`` with no
    dtype), and with them the search's ``action_weights``, and the model step's reward and
    discount were float64 whatever the evaluator."""
    boards = jnp.asarray(BOARDS)
    searched = in_both_modes(lambda: mcts.search(boards, mcts.heuristic_evaluator, None, jax.random.key(0), 4))
    assert searched.action_weights.dtype == np.float32
    actions = jnp.zeros(len(BOARDS), jnp.int32)
    stepped, children = in_both_modes(lambda: mcts.recurrent_fn(mcts.heuristic_evaluator)(None, jax.random.key(0),
                                                                                      actions, boards))
    assert {np.asarray(leaf).dtype for leaf in (stepped.reward, stepped.discount, stepped.prior_logits,
                                                stepped.value)} == {np.dtype(np.float32)}
    assert children.dtype == np.int8


def first_filled_cell(key, board, params):
    """A user's policy that is int64 under x64 (``jnp.argmax``)."""
    return jnp.argmax(board.reshape(-1) != 0)


def test_play_boards_takes_a_users_int64_actions_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # JAX's "incompatible types" scatter warning, to be an error
        played = in_both_modes(lambda: play.play_boards(BOARDS, first_filled_cell, jax.random.key(0), MAX_CLICKS))
    assert played.actions.dtype == np.int32 and np.all(played.cleared)


def test_an_int64_action_beyond_int32_is_off_the_board_not_a_wrapped_cell():
    """Cast first, 2**32 wrapped round to cell 0 and cleared a board the policy never clicked."""
    with jax.enable_x64(True):
        played = play.play_boards(BOARDS, lambda key, board, params: jnp.asarray(2**32, jnp.int64),
                                  jax.random.key(0), 2)
        below = play.play_boards(BOARDS, lambda key, board, params: jnp.asarray(-2**32 + 3, jnp.int64),
                                  jax.random.key(0), 2)
    for result in (played, below):
        np.testing.assert_array_equal(result.actions, np.full((len(BOARDS), 2), CONFIG.num_cells))
        np.testing.assert_array_equal(result.cells_left, np.sum(BOARDS != 0, axis=(1, 2)))


def test_a_learners_network_and_its_policy():
    """An avi network (with a round of cell messages, whose parameters it declares itself)
    starts from the same float32 parameters, evaluates boards alike (the value and logits
    that the beam's scorer and MCTS read) and its policy plays alike."""
    network = avi.AVIConfig(game=CONFIG, hidden=(8,), cell_rounds=1, cell_width=8).network
    params = in_both_modes(lambda: network.init(jax.random.key(0), jnp.zeros((1, *CONFIG.shape), jnp.int8)))
    assert {leaf.dtype for leaf in jax.tree.leaves(params)} == {np.dtype(np.float32)}
    in_both_modes(lambda: jax.jit(agents.NetworkEvaluator(network))(BOARDS, params))
    in_both_modes(lambda: play.play_boards(BOARDS, agents.ClusterArgmax(network), jax.random.key(0), MAX_CLICKS,
                                           params))


def test_nmcs_draws_the_seed_the_default_mode_draws():
    """The evaluation's NMCS seed came from a randint whose dtype followed the mode: under
    x64 another seed, other lines (592.5 against 597.8 points on ten 6x5x3 boards)."""
    boards = np.stack([np.asarray(jaxdust.random_board(key, jaxdust.GameConfig(6, 5, 3, "samegame")))
                       for key in jax.random.split(jax.random.key(2), 4)])

    def play():
        played = registry.run_agent("nmcs:1", boards, key=registry.agent_key(0), max_clicks=30, rules="samegame")
        return {name: played[name] for name in ("clicks", "points", "cells_left")}
    in_both_modes(play)


def test_the_cluster_pooling_keeps_float32():
    """``cluster_log_probs`` pools each cluster in arrays it makes itself, float64 under
    x64 without a dtype: the policy's log-probabilities, and with them a learner's loss."""
    labels = jnp.asarray(jax.vmap(jaxdust.cluster_labels)(jnp.asarray(BOARDS)).reshape(len(BOARDS), -1))
    logits = jnp.asarray(np.random.default_rng(0).normal(size=labels.shape).astype(np.float32))
    pooled = in_both_modes(lambda: mcts.cluster_log_probs(logits, labels))
    assert pooled.dtype == np.float32 and np.isfinite(pooled[np.asarray(labels) >= 0]).all()
    with jax.enable_x64(True):  # a user's float64 logits: float32 as the docstring says, and so the prior
        wide = jnp.asarray(np.asarray(logits), jnp.float64)
        np.testing.assert_array_equal(mcts.cluster_log_probs(wide, labels), pooled)
        assert mcts.cluster_prior(jnp.asarray(BOARDS), wide)[0].dtype == jnp.float32
