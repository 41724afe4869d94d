"""Approximate value iteration: the full-width expansion against the NumPy oracle, and
learning (value and policy) on small boards measured against exact optima."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdust import solve
from jaxdust.core import configs, game
from jaxdust.core import reference as ref
from jaxdust.core.game import GameConfig
from jaxdust.core.play import play_boards
from jaxdust.evaluation import baselines
from jaxdust.learn import agents, avi, imitation, networks
from jaxdust.learn.expansion import expand
from jaxdust.search import heuristic
from jaxdust.search.beam import beam_lengths


def occupied_cells(boards):
    return jnp.sum(boards != 0, axis=(1, 2)).astype(jnp.float32)


def random_boards(count, size, seed):
    return jax.vmap(lambda k: game.random_board(k, size))(jax.random.split(jax.random.key(seed), count))


def test_expand_values_every_distinct_child_like_the_oracle():
    size = GameConfig(5, 4, 3)
    boards = random_boards(6, size, seed=3)
    expansion = expand(boards, slots=6 * 20, value_fn=occupied_cells)
    assert int(expansion.dropped) == 0
    labels, values = np.asarray(expansion.labels), np.asarray(expansion.values)
    children, index = np.asarray(expansion.children), np.asarray(expansion.rows)
    for i, board in enumerate(np.asarray(boards)):
        seen = set()
        for cell in range(20):
            x, y = divmod(cell, 4)
            if labels[i, cell] != cell:
                assert np.isinf(values[i, cell])  # one value per cluster, at its first cell
                continue
            child, _ = ref.click(board, x, y)
            expected = 0.0 if not child.any() else float((child != 0).sum())
            assert values[i, cell] == expected
            np.testing.assert_array_equal(children[index[i, cell]], child)  # the beam reads children here
            seen.add(int(labels[i, cell]))
        assert len(seen) == len(set(labels[i][labels[i] >= 0]))  # every cluster once
        for cell in range(20):  # each cell labelled with its cluster's first cell, empty ones not at all
            x, y = divmod(cell, 4)
            first = np.flatnonzero(ref.cluster_mask(board, x, y).reshape(-1)).min() if board[x, y] else -1
            assert labels[i, cell] == first or (first < 0 and labels[i, cell] < 0)


def test_a_position_missing_some_children_gets_no_backup_only_its_cap():
    """The minimum over the children that fitted was its target (too high where the best
    child did not fit, and the policy's target over its first clusters only)."""
    boards = random_boards(3, GameConfig(5, 4, 3), seed=3)
    reference = [1.0 + min(float((ref.click(board, x, y)[0] != 0).sum()) for x in range(5) for y in range(4))
                 for board in np.asarray(boards)]
    cap = jnp.array([jnp.inf, jnp.inf, 7.0])
    full = expand(boards, slots=3 * 20, value_fn=occupied_cells)
    target, capped, complete = avi.value_targets(full.values, full.labels, cap)
    assert np.asarray(complete).all() and list(np.asarray(target)) == [*reference[:2], min(reference[2], 7.0)]
    assert list(np.asarray(capped)) == [False, False, 7.0 < reference[2]] and 7.0 < reference[2]
    _, tied, _ = avi.value_targets(full.values, full.labels, jnp.array([jnp.inf, reference[1], 7.0]))
    assert not bool(tied[1])  # a cap equal to the backup is not below it
    first = int(np.isfinite(np.asarray(full.values[0])).sum())
    part = expand(boards, slots=first + 2, value_fn=occupied_cells)  # board 1 keeps 2 children, board 2 none
    target, capped, complete = avi.value_targets(part.values, part.labels, cap)
    assert list(np.asarray(complete)) == [True, False, False] and float(target[0]) == reference[0]
    assert np.isinf(target[1])  # a partial minimum: no target at all
    assert float(target[2]) == 7.0  # a line's position keeps its cap, with no backup to be below
    assert not np.asarray(capped).any()


def test_expand_reports_children_beyond_its_slots():
    boards = random_boards(4, GameConfig(), seed=0)
    expansion = expand(boards, slots=10, value_fn=occupied_cells)
    assert int(expansion.dropped) > 0
    assert int(np.isfinite(np.asarray(expansion.values)).sum()) == 10


@pytest.mark.parametrize("rules", ["samegame", "clickomania"])
def test_expand_refuses_rules_whose_lone_cells_are_no_click(rules):
    """Under the points rules a lone cell is no move; expand made it a child all the same."""
    with pytest.raises(ValueError, match="expand plays the fewest-clicks rules"):
        expand(random_boards(2, GameConfig(), seed=0), slots=10, value_fn=occupied_cells, rules=rules)


SMALL = GameConfig(4, 3, 3)


@pytest.mark.slow
def test_value_iteration_learns_optimal_costs_and_a_policy_that_plays_small_boards_near_optimally():
    """avi on 4x3x3 boards without the hand-made prior: the value heads start at a
    constant 10 clicks and the policy uniform; all they know, they learnt. (One test, not
    two on a module fixture, which xdist would train once per worker.)"""
    config = avi.AVIConfig(game=SMALL, hidden=(64, 64), prior=False, num_envs=128, total_updates=800,
                           learning_rate=3e-3, chunk_updates=400, child_share=1.0, target_period=5, cell_rounds=1)
    init, run_chunk = avi.make_avi(config)
    runner, first = run_chunk(init(jax.random.key(0)))
    runner, last = run_chunk(runner)
    boards = random_boards(60, SMALL, seed=11)
    best = np.array([solve(b, colors=3).length for b in np.asarray(boards)], float)

    assert int(first.dropped) == int(last.dropped) == 0
    value = agents.ValueHeadScorer(config.network)
    error = np.mean(np.abs(np.asarray(value(boards, runner.train.params)) - best))
    constant_error = np.mean(np.abs(np.mean(best) - best))  # the best constant guess
    assert error < 0.8 * constant_error, (error, constant_error)  # untrained: ~5 clicks off

    assert float(last.policy_loss) < float(first.policy_loss)
    assert float(last.policy_agreement) > 0.6
    policy = agents.ClusterArgmax(config.network)
    played = play_boards(boards, policy, jax.random.key(0), 12, runner.train.params)
    assert bool(np.all(played.cleared))
    clicks = np.asarray(played.clicks, float)
    random_clicks = np.asarray(play_boards(boards, baselines.random_legal, jax.random.key(0), 12).clicks, float)
    # Random play takes ~1.5 clicks more than the optimum on these boards; the policy, no simulation, ~0.1.
    assert clicks.mean() - best.mean() < 0.35 * (random_clicks.mean() - best.mean()), (clicks.mean(), best.mean())
    for board, actions in zip(np.asarray(boards), np.asarray(played.actions)):  # only ever first cells
        for action in actions[actions >= 0]:
            labels = np.asarray(game.cluster_labels(jnp.asarray(board))).reshape(-1)
            assert labels[action] == action
            board, _ = ref.click(board, *divmod(int(action), SMALL.height))


@pytest.mark.slow
def test_mcts_teacher_trains_the_policy_on_the_search_it_runs():
    config = avi.AVIConfig(game=SMALL, hidden=(64, 64), prior=False, num_envs=128, total_updates=600,
                           learning_rate=3e-3, chunk_updates=300, child_share=1.0, target_period=5, cell_rounds=1,
                           policy_teacher="mcts", teacher_simulations=8)
    init, run_chunk = avi.make_avi(config)
    runner, first = run_chunk(init(jax.random.key(1)))
    runner, last = run_chunk(runner)
    assert np.isfinite(float(first.policy_loss)) and float(last.policy_loss) < float(first.policy_loss)
    assert float(last.policy_agreement) > 0.6  # the network's argmax is the search's choice
    boards = random_boards(60, SMALL, seed=11)
    best = np.array([solve(b, colors=3).length for b in np.asarray(boards)], float)
    played = play_boards(boards, agents.ClusterArgmax(config.network), jax.random.key(0), 12, runner.train.params)
    random_clicks = np.asarray(play_boards(boards, baselines.random_legal, jax.random.key(0), 12).clicks, float)
    assert bool(np.all(played.cleared))
    clicks = np.asarray(played.clicks, float)
    assert clicks.mean() - best.mean() < 0.35 * (random_clicks.mean() - best.mean()), (clicks.mean(), best.mean())


@pytest.mark.slow
def test_random_clicks_give_no_line_targets():
    """Half the boards always click at random (``random_share``), the rest never do
    (``epsilon_max`` 0): every stored line is flagged explored at each click or at none,
    and both kinds are stored. One run, one compilation, instead of a run per share."""
    config = avi.AVIConfig(game=SMALL, hidden=(16,), num_envs=32, beam_width=2, buffer_lines=64, total_updates=40,
                           chunk_updates=40, random_share=0.5, epsilon_max=0.0, cell_head=False)
    init, run_chunk = avi.make_avi(config)
    lines = run_chunk(init(jax.random.key(3)))[0].lines
    stored = min(int(lines.written), 64)
    length = np.asarray(lines.length[:stored])
    flags = [row[:n] for row, n in zip(np.asarray(lines.explored[:stored]), length)]
    assert all(n > 0 for n in length)
    assert all(row.all() or not row.any() for row in flags)  # a line's board explores at every click or never
    random_lines = np.mean([row.all() for row in flags])
    assert 0.2 < random_lines < 0.8, random_lines  # both kinds of board finish lines


def test_policy_lr_scale_speeds_the_policy_head_alone():
    """Adam's first step moves a parameter by the learning rate times ``g / (|g| + eps)``:
    from one start and one batch, the policy head's parameters move exactly twice as far
    at ``policy_lr_scale=2`` and every other parameter as far as at 1 (plain Adam)."""
    base = avi.AVIConfig(game=SMALL, hidden=(16,), num_envs=32, beam_width=2, buffer_lines=64, total_updates=10,
                         chunk_updates=1, cell_rounds=1, cell_width=8)
    moved = {}
    for scale in (1.0, 2.0):
        init, run_chunk = avi.make_avi(dataclasses.replace(base, policy_lr_scale=scale))
        runner = init(jax.random.key(0))
        before = jax.tree.map(np.asarray, runner.train.params)
        after = jax.tree.map(np.asarray, run_chunk(runner)[0].train.params)
        moved[scale] = {"/".join(key.key for key in path): np.asarray(new, np.float64) - old
                        for (path, new), old in zip(jax.tree_util.tree_flatten_with_path(after)[0],
                                                    jax.tree.leaves(before))}
    heads = {name for name in moved[1.0] if networks.is_policy_head(name.split("/")[1])}
    assert {name.split("/")[1] for name in heads} == {"policy", "cell_context", "cell_planes", "cell_round_0",
                                                      "cell_hidden", "cell_logit"}
    # The zero-initialised last layers stop the first step's gradient there: both groups
    # must still have moved for the comparison to mean something.
    stepped = {name for name, step in moved[1.0].items() if np.abs(step).max() > 0}
    assert stepped & heads and stepped - heads, stepped
    for name, step in moved[1.0].items():
        np.testing.assert_allclose(moved[2.0][name], (2.0 if name in heads else 1.0) * step, rtol=1e-3, atol=1e-7,
                                   err_msg=name)


@pytest.mark.parametrize("line_share", [1.0, 0.5, 0.0])
def test_policy_targets_mix_the_line_click_with_the_child_values_softmax(line_share):
    inf = np.inf
    values = np.array([[2.0, inf, 1.0, 3.0], [2.0, inf, 1.0, 3.0], [inf, inf, inf, inf]], np.float32)
    line = np.array([3, -1, -1], np.int32)  # the line clicked the worst child of row 0
    got = np.asarray(avi.policy_targets(jnp.asarray(values), jnp.asarray(line), 0.5, line_share))
    finite = np.isfinite(values[0])
    soft = np.where(finite, np.exp(-np.where(finite, values[0], 0) / 0.5), 0.0)
    soft /= soft.sum()
    np.testing.assert_allclose(got[1], soft, rtol=1e-6)  # no line: the values' softmax
    np.testing.assert_allclose(got[0], line_share * np.eye(4)[3] + (1 - line_share) * soft, rtol=1e-6, atol=1e-7)
    assert got[0, 1] == 0.0 and not got[2].any()  # no weight where no cluster starts, nor on a row without children


def test_policy_targets_stay_on_the_children_at_the_lowest_temperature():
    """Where -V / T fell below the finite mask of cells without a child (large values, a
    low temperature), the softmax went to those cells and the target was all zeros."""
    values = jnp.array([[2001.0, jnp.inf, 2000.0], [5.0, 4.0, jnp.inf]], jnp.float32)
    got = np.asarray(avi.policy_targets(values, jnp.array([-1, -1], jnp.int32), avi.MIN_TEMPERATURE, 0.0))
    np.testing.assert_array_equal(got, [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    with pytest.raises(configs.FieldError, match="at least 1e-06 clicks"):
        avi.AVIConfig(policy_temperature=avi.MIN_TEMPERATURE / 2)


def test_select_beam_keeps_the_best_distinct_children():
    values = jnp.array([3.0, 1.0, 1.0, 2.0, jnp.inf, 1.0])
    hashes = jnp.array([[5, 5], [7, 7], [7, 7], [9, 9], [0, 0], [8, 8]], jnp.uint32)
    kept = np.asarray(avi.select_beam(values, hashes, jnp.bool_(False), jax.random.key(0), 4))
    # Candidates 1 and 2 are one board (same hash and value): only the first is kept.
    assert kept.tolist() == [1, 5, 3, 0]
    # Fewer distinct children than the width: the best one fills the rest, never the missing child.
    few = avi.select_beam(values[:3], hashes[:3], jnp.bool_(False), jax.random.key(0), 3)
    assert np.asarray(few).tolist() == [1, 0, 1]


def test_exploring_beam_picks_every_distinct_child_sometimes():
    values = jnp.array([1.0, 2.0, 3.0, jnp.inf, 1.0])
    hashes = jnp.array([[1, 1], [2, 2], [3, 3], [4, 4], [1, 1]], jnp.uint32)
    picks = {int(avi.select_beam(values, hashes, jnp.bool_(True), jax.random.key(s), 1)[0]) for s in range(60)}
    assert 3 not in picks  # no child there
    assert {1, 2} <= picks and len(picks & {0, 4}) == 1  # the duplicate of child 0 is one choice


@pytest.mark.slow
@pytest.mark.parametrize("child_share", [1.0, 0.1])  # 0.1: most children fall beyond the slots
def test_search_lines_replay_to_a_cleared_board_and_bound_the_optimum(child_share):
    size = GameConfig(5, 4, 3)
    config = avi.AVIConfig(game=size, hidden=(32,), num_envs=64, beam_width=4, buffer_lines=64, total_updates=60,
                           chunk_updates=60, child_share=child_share)
    init, run_chunk = avi.make_avi(config)
    runner, metrics = run_chunk(init(jax.random.key(1)))
    assert (int(metrics.dropped) > 0) == (child_share < 1)
    assert np.isfinite(float(metrics.loss)) and np.isfinite(float(metrics.target))
    lines = jax.tree.map(np.asarray, runner.lines)
    stored = min(int(lines.written), config.buffer_lines)
    episodes, rows = int(metrics.episodes), config.buffer_lines
    assert episodes > 20 and int(lines.written) == (episodes if episodes < 2 * rows else rows + (episodes - rows) % rows)
    for row in range(stored):
        length = int(lines.length[row])
        board = lines.positions[row, 0]
        for step in range(length):
            np.testing.assert_array_equal(lines.positions[row, step], board)  # the stored position is the one played
            x, y = divmod(int(lines.actions[row, step]), size.height)
            assert board[x, y] != 0
            board, _ = ref.click(board, x, y)
        assert not board.any()  # the line clears its board: a valid cap on every position along it
        if row < 8:
            assert length >= solve(lines.positions[row, 0], colors=3).length



@pytest.mark.slow
def test_value_iteration_learns_former_costs():
    """The same learner under gravity alone (``former``): its targets, its children and its
    evaluation follow the config's rules, so the value it learns tracks former's optima."""
    size = GameConfig(4, 3, 3, "former")
    config = avi.AVIConfig(game=size, hidden=(64, 64), prior=False, num_envs=128, total_updates=800,
                           learning_rate=3e-3, chunk_updates=400, child_share=1.0, target_period=5, cell_rounds=1)
    init, run_chunk = avi.make_avi(config)
    runner, _ = run_chunk(init(jax.random.key(0)))
    runner, metrics = run_chunk(runner)
    assert int(metrics.dropped) == 0
    boards = random_boards(40, size, seed=12)
    former = np.array([solve(b, colors=3, rules="former").length for b in np.asarray(boards)], float)
    dust = np.array([solve(b, colors=3).length for b in np.asarray(boards)], float)
    assert np.mean(former) > np.mean(dust)  # the rule sets' optima differ on these boards
    scorer = agents.ValueHeadScorer(config.network)
    value = np.asarray(scorer(boards, runner.train.params))
    assert np.mean(np.abs(value - former)) < np.mean(np.abs(np.mean(former) - former))  # it learnt something
    greedy = beam_lengths(boards, 1, scorer, runner.train.params, rules="former")
    assert np.all(greedy >= former) and np.mean(greedy) <= np.mean(former) + 0.3


def test_a_former_runs_value_starts_at_formers_own_heuristic():
    """Untrained, the value of ``avi`` and ``imitation`` is the hand-made estimate of the
    run's rules: under ``former`` with the column runs (``heuristic.heuristic_for``), under
    ``rule_prior=False`` (how Former runs saved before it trained) the dust game's five
    features alone."""
    size = GameConfig(7, 9, 4, "former")
    boards = random_boards(16, size, seed=3)
    values = {}
    for rule_prior, scorer in ((True, heuristic.heuristic_for("former")), (False, heuristic.heuristic_scorer)):
        network = avi.AVIConfig(game=size, hidden=(16,), cell_rounds=0, rule_prior=rule_prior).network
        values[rule_prior] = np.asarray(network.apply(network.init(jax.random.key(0), boards[:1]), boards)[0])
        np.testing.assert_allclose(values[rule_prior], np.asarray(scorer(boards, None)), atol=1e-4)
    extra = np.asarray(heuristic.extra_column_runs(boards))
    assert extra.min() >= 1  # random full boards split some colour's columns
    np.testing.assert_allclose(values[True] - values[False], heuristic.RULE_FEATURE_WEIGHTS["former"] * extra, atol=1e-4)
    dust = avi.AVIConfig(hidden=(16,), cell_rounds=0).network  # the dust game has no rule feature
    assert dust.prior_rules == "dust"
    for architecture, value_output, small in (("cell-head", 0, {"cell_rounds": 0}), ("mlp", 1, {})):
        for rule_prior in (True, False):  # imitation's value starts at the same estimate, whatever its network
            network = imitation.ImitationConfig(game=size, architecture=architecture, hidden=(16,),
                                                rule_prior=rule_prior, **small).network
            value = network.apply(network.init(jax.random.key(0), boards[:1]), boards)[value_output]
            np.testing.assert_allclose(np.asarray(value), values[rule_prior], atol=1e-4)


@pytest.mark.parametrize("rules", ["dust", "former"])
def test_mcts_teacher_and_beam_keys_follow_the_runs_rules(rules, monkeypatch):
    """The MCTS teacher plans with the run's rules, and the beams merge mirror images only
    where they play alike (not the dust game at odd widths); traced, not run."""
    planned, merged = [], []
    search, canonical_hash = avi.mcts.search, avi.canonical_hash
    monkeypatch.setattr(avi.mcts, "search", lambda *a, **k: planned.append((k["rules"], a[5])) or search(*a, **k))
    monkeypatch.setattr(avi, "canonical_hash", lambda board, mirror: merged.append(mirror) or canonical_hash(board, mirror))
    config = avi.AVIConfig(game=GameConfig(5, 3, 3, rules), hidden=(8,), num_envs=8, beam_width=2, buffer_lines=8,
                           total_updates=1, chunk_updates=1, cell_rounds=1, policy_teacher="mcts", teacher_simulations=2,
                           teacher_considered=3)
    init, run_chunk = avi.make_avi(config)
    jax.eval_shape(run_chunk, jax.eval_shape(init, jax.random.key(0)))
    assert set(planned) == {(rules, 3)} and set(merged) == {rules == "former"}


def test_an_update_that_trains_no_position_logs_numbers_not_nan():
    """One board in play and a beam of one: the first position's children do not all fit
    the slots, and no search line exists yet, so no position is trained. Its losses were
    0/0 (the parameters stayed finite only because XLA dropped a 0 * inf term)."""
    config = avi.AVIConfig(game=GameConfig(8, 6, 5), hidden=(16,), num_envs=1, beam_width=1, buffer_lines=4,
                           chunk_updates=1, total_updates=2, cell_rounds=1, cell_width=8)
    init, run_chunk = avi.make_avi(config)
    runner, metrics = run_chunk(init(jax.random.key(0)))
    assert int(metrics.dropped) > 0 and float(metrics.line_positions) == 0
    assert np.isfinite(float(metrics.loss)) and np.isfinite(float(metrics.value_error))
    assert all(np.isfinite(np.asarray(leaf)).all() for leaf in jax.tree.leaves(runner.train.params))


def test_the_line_count_of_a_long_run_keeps_its_ring_row_and_fill_past_int32():
    """A run of many boards writes 2^31 lines in a few hundred thousand updates: a plain
    int32 count turned negative, and every line drawn was then row 0."""
    config = avi.AVIConfig(game=GameConfig(3, 2, 2), hidden=(16,), num_envs=16, beam_width=1, buffer_lines=16,
                           chunk_updates=5, total_updates=10, cell_rounds=1, cell_width=8)
    init, run_chunk = avi.make_avi(config)
    runner = init(jax.random.key(0))
    near_the_end = 2**31 - 3
    runner = runner._replace(lines=runner.lines._replace(written=jnp.int32(near_the_end)))
    runner, metrics = run_chunk(runner)
    episodes, written = int(metrics.episodes), int(runner.lines.written)
    assert episodes > 3
    assert config.buffer_lines <= written < 2 * config.buffer_lines
    assert written % config.buffer_lines == (near_the_end + episodes) % config.buffer_lines
    assert [int(avi._written(jnp.int32(n), 16)) for n in (0, 15, 16, 31, 32, 33, 47, 48, 2**31 - 1)] == [
        0, 15, 16, 31, 16, 17, 31, 16, (2**31 - 1 - 16) % 16 + 16]
    # A run saved after its count wrapped (before the fold) resumes at the true count's row,
    # from its first update on.
    wrapped = init(jax.random.key(0))
    wrapped = wrapped._replace(lines=wrapped.lines._replace(written=jnp.int32(-5)))
    wrapped, metrics = run_chunk(wrapped)
    assert int(wrapped.lines.written) % config.buffer_lines == (2**32 - 5 + int(metrics.episodes)) % config.buffer_lines
    assert config.buffer_lines <= int(wrapped.lines.written) < 2 * config.buffer_lines
    assert int(avi._written(jnp.int32(-5), 16)) == 16 + (2**32 - 5 - 16) % 16
    assert int(avi._written(jnp.int32(-5), 24)) == 24 + (2**32 - 5 - 24) % 24


def test_a_chunks_means_leave_out_updates_that_trained_nothing():
    """Two boards and few slots: the first updates train no position. A chunk ending at the
    first update that trains logs that update's figures, not them divided by the chunk's
    length (the zeros of the updates before it were averaged in)."""
    config = avi.AVIConfig(game=GameConfig(8, 6, 5), hidden=(16,), num_envs=2, beam_width=1, buffer_lines=4,
                           chunk_updates=1, total_updates=60, cell_rounds=1, cell_width=8, child_share=0.25)
    init, run_chunk = avi.make_avi(config)
    runner, first = init(jax.random.key(0)), None
    for update in range(30):
        runner, metrics = run_chunk(runner, 1)
        if float(metrics.target) > 0:
            first = update, metrics
            break
    assert first is not None and first[0] > 0, "the test needs updates that train nothing before one that trains"
    update, alone = first
    _, chunk = run_chunk(init(jax.random.key(0)), update + 1)
    for name in ("target", "value_error", "policy_loss", "policy_agreement"):
        np.testing.assert_allclose(float(getattr(chunk, name)), float(getattr(alone, name)), rtol=1e-5, err_msg=name)
