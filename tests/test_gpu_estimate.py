"""The GPU estimate's loop accounting: the passes it counts are the ones a batched loop runs."""

import importlib.util
import os

import jax
import numpy as np
import pytest

from jaxdust.core import game

_spec = importlib.util.spec_from_file_location(
    "gpu_estimate", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks/gpu_estimate.py"))
gpu_estimate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_estimate)


def test_counted_passes_are_exactly_what_the_batch_needs():
    positions = gpu_estimate.random_positions(64, game.GameConfig(), seed=3)
    passes = gpu_estimate._batch_max_passes(game.cluster_labels, positions)
    exact = jax.vmap(game.cluster_labels)(positions)

    def labels_after(count):
        with gpu_estimate._fixed_point(gpu_estimate._unrolled(count)):
            return jax.jit(jax.vmap(game.cluster_labels))(positions)

    # The count includes the pass that finds nothing changed, so one fewer still labels all.
    np.testing.assert_array_equal(labels_after(passes - 1), exact)
    assert not np.array_equal(labels_after(passes - 2), exact)


def test_unrolled_passes_are_counted_by_the_cost_analysis():
    board = gpu_estimate.random_positions(1, game.GameConfig(), seed=0)[0]
    few, _, _ = gpu_estimate._analyse(game.cluster_labels, board, passes=2)
    many, _, _ = gpu_estimate._analyse(game.cluster_labels, board, passes=6)
    assert many > 2 * few  # three times the passes: at least twice the flops (fusion varies)


def test_the_roofline_picks_the_slower_of_compute_and_memory():
    row = gpu_estimate.bounds({"flops": 67e12, "bytes": 1.0, "memory": 8e9, "batch": 10})  # 1 s at the peak
    assert row["bound"] == "compute" and row["roofline_per_s"] == 10.0 and row["largest_batch"] == 100
    row = gpu_estimate.bounds({"flops": 1.0, "bytes": 6.7e12, "memory": 1.0, "batch": 1})
    assert row["bound"] == "memory" and row["roofline_per_s"] == 0.5


@pytest.mark.slow
def test_the_beam_expansion_is_analysed_and_grows_with_the_width():
    narrow = gpu_estimate.beam_expansion(4, game.GameConfig(), seed=1)
    wide = gpu_estimate.beam_expansion(16, game.GameConfig(), seed=1)
    assert wide["children"] > 2 * narrow["children"] > 0
    assert wide["flops"] > 2 * narrow["flops"] and wide["bytes"] > 2 * narrow["bytes"]


def test_every_avi_variant_is_a_valid_config_and_others_are_refused(monkeypatch):
    """The variants --avi-variants estimates (equal_time.py's, its scale set among them) build
    a config the learner accepts; a name that is not an avi variant is refused by name."""
    import argparse
    import dataclasses

    from jaxdust.learn import avi

    monkeypatch.syspath_prepend(os.path.dirname(gpu_estimate.__file__))
    variants = gpu_estimate.avi_variants()
    assert {"wide", "deep", "cell-wide", "many-boards", "wide-teacher"} <= set(variants)
    assert "dqn-full" not in variants and "mlp" not in variants  # another learner's; the default's row, always there
    for changes in variants.values():
        avi.make_avi(dataclasses.replace(avi.AVIConfig(), **changes))  # raises on a config the learner refuses
    assert gpu_estimate._avi_variants("wide,deep") == ["wide", "deep"]
    with pytest.raises(argparse.ArgumentTypeError, match="mlp, dqn-full, nope"):
        gpu_estimate._avi_variants("wide,mlp,dqn-full,nope")


def test_positions_and_rows_of_other_rules_are_played_under_them(monkeypatch):
    """``--sizes samegame:6x5x3``: the positions are reached by SameGame's clicks (settled
    under its rules: columns closed to the left, not packed to the centre), the step
    analysed draws SameGame's legal clicks (groups of two, not any cell) and the row names
    the rules, not only the size."""
    size = game.GameConfig(6, 5, 3, "samegame")
    positions = np.asarray(gpu_estimate.random_positions(32, size, seed=2))
    settled = np.asarray(jax.vmap(lambda board: game.contract(board, rules="samegame"))(positions))
    np.testing.assert_array_equal(settled, positions)
    assert (positions == 0).sum() > 0  # clicks were played, so settling was put to the test
    asked, legal_action_mask = [], game.legal_action_mask

    def recording(board, rules="dust"):
        asked.append(rules)
        return legal_action_mask(board, rules)

    monkeypatch.setattr(game, "legal_action_mask", recording)
    assert gpu_estimate.env_step(64, size, seed=2)["program"] == "env step, samegame:6x5x3"
    assert asked and set(asked) == {"samegame"}
