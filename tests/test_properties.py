"""Property tests (hypothesis) of the rules' consequences listed in RULES.md."""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxdust.core import game
from jaxdust.core.game import click, cluster_mask, cluster_sizes, contract, is_done
from jaxdust.core import reference as ref

# A few shapes keep compilation bounded; odd widths, height 1 and one-colour games included.
SHAPES = [(8, 6), (5, 4), (3, 7), (2, 1), (7, 2), (9, 9)]



@st.composite
def loose_boards(draw):
    """Any cells at all, possibly floating: int8 [W, H] and the colour count.

    A third of the boards are full, a third have random holes, a few are empty.
    """
    width, height = draw(st.sampled_from(SHAPES))
    colors = draw(st.integers(1, 9))
    size = width * height
    cells = np.array(draw(st.lists(st.integers(1, colors), min_size=size, max_size=size)))
    holes = draw(st.sampled_from(["none", "some", "some", "all"]))
    if holes == "some":
        cells[np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)))] = 0
    elif holes == "all":
        cells[:] = 0
    return cells.reshape(width, height).astype(np.int8), colors


@st.composite
def positions(draw):
    """A settled board (contracted by the reference) and a cell on it to click."""
    loose, colors = draw(loose_boards())
    settled = ref.contract(loose)
    width, height = settled.shape
    occupied = np.argwhere(settled != 0)
    if len(occupied) and draw(st.booleans()):
        x, y = occupied[draw(st.integers(0, len(occupied) - 1))]
    else:
        x, y = draw(st.integers(0, width - 1)), draw(st.integers(0, height - 1))
    return settled, colors, int(x), int(y)


def assert_settled(board: np.ndarray):
    width, _ = board.shape
    occupied = board != 0
    assert not np.any(occupied[:, 1:] & ~occupied[:, :-1]), "a cell floats"
    half = width // 2
    for row in occupied.T:
        left, right = row[:half], row[half:]
        assert np.array_equal(left, np.sort(left)), "left half not packed against the centre"
        assert np.array_equal(right, np.sort(right)[::-1]), "right half not packed against the centre"


@settings(max_examples=300)
@given(positions())
def test_click_consequences(position):
    board, colors, x, y = position
    new, removed = (np.asarray(v) for v in click(jnp.asarray(board), x, y))
    mask = np.asarray(cluster_mask(jnp.asarray(board), x, y))

    # Removed cells are exactly the clicked cluster.
    assert removed == mask.sum() == ref.cluster_mask(board, x, y).sum()
    assert removed == np.asarray(cluster_sizes(jnp.asarray(board)))[x, y]
    assert (removed == 0) == (board[x, y] == 0)

    # Colour counts change only by the removed cluster.
    before = np.bincount(board.ravel(), minlength=10)[1:]
    after = np.bincount(new.ravel(), minlength=10)[1:]
    change = np.zeros(9, int)
    if removed:
        change[board[x, y] - 1] = removed
    np.testing.assert_array_equal(before - after, change)

    # Nothing floats, rows are packed, and contracting again changes nothing.
    assert_settled(new)
    np.testing.assert_array_equal(np.asarray(contract(jnp.asarray(new))), new)

    # Track every cell by a unique id through the same removal and contraction.
    width, height = board.shape
    ids = np.arange(1, width * height + 1, dtype=np.int8).reshape(width, height)
    survivors = np.where((board != 0) & ~mask, ids, 0).astype(np.int8)
    moved = np.asarray(contract(jnp.asarray(survivors)))
    colour_of = dict(zip(ids.ravel(), board.ravel()))
    np.testing.assert_array_equal(np.vectorize(lambda i: colour_of.get(i, 0))(moved), new)
    half = width // 2
    for new_x, new_y in np.argwhere(moved != 0):
        old_x, old_y = np.argwhere(ids == moved[new_x, new_y])[0]
        assert new_y <= old_y, "a cell moved up"
        assert (new_x < half) == (old_x < half), "a cell crossed the centre line"
        assert (new_x >= old_x) if old_x < half else (new_x <= old_x), "a cell moved outward"


@settings(max_examples=150)
@given(loose_boards())
def test_contraction_is_idempotent_and_keeps_cells(loose):
    board, _ = loose
    once = np.asarray(contract(jnp.asarray(board)))
    np.testing.assert_array_equal(once, ref.contract(board))
    np.testing.assert_array_equal(np.asarray(contract(jnp.asarray(once))), once)
    np.testing.assert_array_equal(np.sort(once.ravel()), np.sort(board.ravel()))
    assert_settled(once)


@settings(max_examples=150)
@given(loose_boards())
def test_done_iff_empty(loose):
    board, _ = loose
    assert bool(is_done(jnp.asarray(board))) == (not board.any())
    assert bool(is_done(jnp.zeros_like(jnp.asarray(board))))


# ---------------------------------------------------------------------------------------
# The family's rule sets (RULES.md, "The family"): the same properties under each
# ---------------------------------------------------------------------------------------

FAMILY = ("former", "samegame", "clickomania", "dust")


@st.composite
def family_positions(draw):
    """A rule set, a board settled under it (by the JAX settle, checked below against
    parse_board's independent check) and a cell to click."""
    rules = draw(st.sampled_from(FAMILY))
    loose, colors = draw(loose_boards())
    board = np.asarray(contract(jnp.asarray(loose), rules=rules))
    width, height = board.shape
    return rules, board, draw(st.integers(0, width - 1)), draw(st.integers(0, height - 1))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(family_positions())
def test_family_clicks_keep_boards_settled_and_remove_whole_groups(case):
    from jaxdust.core.boards import parse_board
    rules, board, x, y = case
    parse_board(board, rules=rules)  # settling settles, by parse_board's own check
    np.testing.assert_array_equal(np.asarray(contract(jnp.asarray(board), rules=rules)), board)  # idempotent
    new, removed = map(np.asarray, click(jnp.asarray(board), x, y, rules=rules))
    parse_board(new, rules=rules)
    group = int(np.asarray(cluster_mask(jnp.asarray(board), x, y)).sum())
    assert removed == (group if group >= game.rules_of(rules).min_group else 0)
    colour = board[x, y]
    for value in range(1, 10):  # only the clicked group's colour loses cells, exactly its size
        lost = np.sum(board == value) - np.sum(new == value)
        assert lost == (removed if value == colour else 0)
    if removed == 0:
        np.testing.assert_array_equal(new, board)
    if rules == "former":  # nothing moves sideways: each column keeps its colours, in order
        kept = np.where(np.asarray(cluster_mask(jnp.asarray(board), x, y)), 0, board)
        for column, after in zip(kept, new):
            np.testing.assert_array_equal(column[column != 0], after[after != 0])
    if rules in ("samegame", "clickomania"):  # columns move as wholes, in order
        kept = np.where(np.asarray(cluster_mask(jnp.asarray(board), x, y)) & (removed > 0), 0, board)
        columns = [column[column != 0] for column in kept if column.any()]
        assert [list(c) for c in columns] == [list(c[c != 0]) for c in new if c.any()]
