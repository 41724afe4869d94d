"""Under a user's strict NumPy settings, ``jax_numpy_rank_promotion="raise"`` and
``jax_numpy_dtype_promotion="strict"`` (which JAX's docs suggest for catching one's own
broadcasting and promotion bugs, and which some code bases set for a whole process), the
library gives what JAX's defaults give: its own code is traced under the defaults
(``game.standard_numpy``). Before, a vmapped click, the env's step, ``play_boards``, the
searches and the networks with rule features failed inside the package.

Each test runs its work under the defaults, then again under both strict settings: JAX
traces apart for each setting, so the second run is a program of its own.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdust
from jaxdust.core import play
from jaxdust.evaluation import baselines
from jaxdust.learn import avi, cli, networks, runs
from jaxdust.search import beam, mcts, points
from tests.conftest import run_log, same_in_both

CONFIG = jaxdust.GameConfig(5, 4, 3)
BOARDS = np.asarray(jaxdust.random_boards(jax.random.key(1), 3, CONFIG))


@contextlib.contextmanager
def strict_numpy():
    with jax.numpy_rank_promotion("raise"), jax.numpy_dtype_promotion("strict"):
        yield


def in_both_settings(run):
    """``run()``'s results under JAX's defaults and under the strict settings, checked
    equal leaf by leaf, dtypes included; returns the defaults'."""
    return same_in_both(run, strict_numpy)


def test_the_settings_are_strict_here():
    """The test's own code is held to them: a rank broadcast and an int-float mix fail."""
    with strict_numpy(), pytest.raises(ValueError, match="rank_promotion"):
        jnp.zeros((2, 3)) + jnp.zeros(3)
    with strict_numpy(), pytest.raises(jax.dtypes.TypePromotionError):
        jnp.zeros(3, jnp.int32) + jnp.zeros(3, jnp.float32)


def test_game_functions_under_vmap():
    boards = jnp.asarray(BOARDS)
    zeros = jnp.zeros(len(BOARDS), jnp.int32)
    in_both_settings(lambda: jax.vmap(jaxdust.click)(boards, zeros, zeros))
    in_both_settings(lambda: jax.vmap(jaxdust.cluster_sizes)(boards))
    in_both_settings(lambda: jaxdust.settle(np.moveaxis(BOARDS, 0, -1), "samegame"))
    in_both_settings(lambda: jax.vmap(lambda board: jaxdust.is_over(board, "samegame"))(boards))


@pytest.mark.parametrize("rules", jaxdust.core.game.RULES)
def test_env_reset_and_step(rules):
    env = jaxdust.DustEnv(jaxdust.GameConfig(5, 4, 3, rules), auto_reset=True, max_clicks=3)
    keys = jax.random.split(jax.random.key(0), 4)

    def steps():
        state, first = jax.vmap(env.reset)(keys)
        state, stepped = jax.jit(jax.vmap(env.step))(state, jnp.zeros(4, jnp.int32))
        return first, stepped, env.step(env.reset(keys[0])[0], 1)[1]
    in_both_settings(steps)


@pytest.mark.parametrize("policy, rules", [(baselines.largest_cluster, "dust"), (baselines.random_legal, "dust"),
                                           (baselines.random_legal, "samegame")])
def test_play_boards(policy, rules):
    played = in_both_settings(lambda: play.play_boards(BOARDS, policy, jax.random.key(0), 20, rules=rules))
    assert np.all(played.clicks > 0)


def test_the_searches():
    found = in_both_settings(lambda: beam.beam_search(BOARDS, 4, rescorer=beam.lookahead_heuristic))
    assert np.all(found.length > 0)
    in_both_settings(lambda: points.points_beam(BOARDS, 4, rules="samegame"))
    in_both_settings(lambda: mcts.search(jnp.asarray(BOARDS), mcts.heuristic_evaluator, None, jax.random.key(0), 4))


@pytest.mark.parametrize("network", [networks.QNetwork((8,), 3, features=True),
                                     avi.AVIConfig(game=CONFIG, hidden=(8,), cell_rounds=1, cell_width=4).network],
                         ids=["q-features", "value-policy"])
def test_a_networks_parameters_outputs_and_gradients(network):
    params = in_both_settings(lambda: network.init(jax.random.key(0), jnp.asarray(BOARDS)))

    def loss(params):
        return sum(jnp.sum(output) for output in jax.tree.leaves(network.apply(params, jnp.asarray(BOARDS))))
    gradients = in_both_settings(lambda: jax.grad(loss)(params))
    assert all(np.isfinite(leaf).all() for leaf in jax.tree.leaves(gradients))


def test_a_published_networks_agents():
    boards = jaxdust.random_boards(jax.random.key(2), 2)
    agent = runs.load_run("@imitation-8x6x5")
    in_both_settings(lambda: play.play_boards(boards, agent.policy, jax.random.key(0), 48, params=agent.params))
    in_both_settings(lambda: beam.beam_search(boards, 2, scorer=agent.scorer, params=agent.params))
    with strict_numpy():
        assert runs.load_run("@imitation-8x6x5").step == agent.step


@pytest.mark.slow  # end-to-end: two training runs
def test_the_default_learner_trains_alike(tmp_path):
    arguments = ["avi", "--size", "4x3x3", "--total-updates", "4", "--chunk-updates", "2", "--num-envs", "8",
                 "--eval-boards", "4", "--hidden", "8"]
    cli.main([*arguments, "--run-dir", str(tmp_path / "default")])
    with strict_numpy():
        cli.main([*arguments, "--run-dir", str(tmp_path / "strict")])
    assert run_log(tmp_path / "strict") == run_log(tmp_path / "default")


def test_the_learners_builders_and_a_chunk_of_each():
    """The notebooks build the learners themselves (``make_avi``, ``make_dqn``) and run their
    chunks: ``make_avi`` failed at once, ``make_dqn``'s first chunk when traced."""
    from jaxdust.learn import dqn

    def avi_chunk():
        init, run_chunk = avi.make_avi(avi.AVIConfig(game=CONFIG, hidden=(8,), cell_rounds=1, cell_width=4,
                                                     num_envs=8, chunk_updates=1))
        return run_chunk(init(jax.random.key(0)))[1]

    def dqn_chunk():
        init, run_chunk = dqn.make_dqn(dqn.DQNConfig(game=CONFIG, hidden=(8,), num_envs=8, chunk_iterations=2,
                                                     buffer_size=64, batch_size=8, learning_starts=8))
        return run_chunk(init(jax.random.key(0)))[1]
    in_both_settings(avi_chunk)
    in_both_settings(dqn_chunk)


def test_a_loaded_runs_agents_and_the_heuristics_called_alone():
    from jaxdust.search import heuristic
    boards = jnp.asarray(jaxdust.random_boards(jax.random.key(2), 2))
    agent = runs.load_run("@imitation-8x6x5")
    in_both_settings(lambda: jax.vmap(agent.policy, in_axes=(None, 0, None))(jax.random.key(0), boards, agent.params))
    in_both_settings(lambda: agent.scorer(boards, agent.params))
    in_both_settings(lambda: agent.evaluator(boards, agent.params))
    in_both_settings(lambda: beam.lookahead_heuristic(boards))
    in_both_settings(lambda: heuristic.batch_features(boards))
    in_both_settings(lambda: jax.vmap(heuristic.heuristic_features)(boards))
    in_both_settings(lambda: mcts.cluster_prior(boards, jnp.zeros((2, 48), jnp.float32)))
