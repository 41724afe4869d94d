"""Text and SVG pictures of boards."""

import xml.etree.ElementTree as ElementTree

import jax
import numpy as np
import pytest

import jaxdust
from jaxdust.core import render

BOARD = np.array([[1, 2], [3, 0], [1, 0]], np.int8)  # y=1: B.. / y=0: ACA


def test_text_is_a_letter_grid_with_the_top_row_first():
    assert jaxdust.board_letters(BOARD) == "B..\nACA"
    assert repr(jaxdust.BoardView(BOARD)) == "B..\nACA"


def test_svg_draws_every_cell_with_its_colour_and_highlight():
    svg = jaxdust.board_svg(BOARD, highlight=BOARD == 1, title="a <title>")
    root = ElementTree.fromstring(svg)
    namespace = "{http://www.w3.org/2000/svg}"
    cells = [r for r in root.iter(namespace + "rect") if r.find(namespace + "title") is not None]
    assert len(cells) == BOARD.size
    by_cell = {c.find(namespace + "title").text: c for c in cells}
    assert by_cell["(1, 0)"].get("fill") == render.PALETTE[3]
    assert by_cell["(2, 1)"].get("fill") == render.PALETTE[0]
    outlined = sorted(k for k, c in by_cell.items() if c.get("stroke"))
    assert outlined == ["(0, 0)", "(2, 0)"]
    # y=0 is drawn at the bottom: larger SVG y coordinate than y=1 in the same column.
    assert float(by_cell["(0, 0)"].get("y")) > float(by_cell["(0, 1)"].get("y"))
    assert "a &lt;title&gt;" in svg


def test_states_render_inline_in_notebooks():
    env = jaxdust.DustEnv()
    state, _ = env.reset(jax.random.key(0))
    assert state._repr_svg_().startswith("<svg")
    batch, _ = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 3))
    assert batch._repr_svg_() is None  # no single picture for a batch


def test_rendering_rejects_batches():
    with pytest.raises(ValueError, match="one board"):
        jaxdust.board_letters(np.zeros((2, 8, 6), np.int8))


def test_small_pictures_keep_their_colours_and_titles():
    """A wasted click's highlight (on an empty cell) shows on the empty cell's light fill; a
    title wider than a narrow board widens the picture, the board centred; below 8 pixels a
    cell would have no colour left to show, so it is refused."""
    board = np.array([[1, 0]], np.int8)  # one column: a colour below, an empty cell above
    plain = render.board_rgb(board, cell_size=16)
    marked = render.board_rgb(board, np.array([[False, True]]), cell_size=16)
    top = (slice(0, 16), slice(0, 16))  # the empty cell, drawn in the top row
    assert not np.array_equal(plain[top], marked[top]) and not (marked[top] == 255).all(axis=-1).any()
    svg = render.board_svg(board, title="a rather long title")
    root = ElementTree.fromstring(svg)
    width = float(root.get("width"))
    cells = [float(rect.get("x")) for rect in root.iter("{http://www.w3.org/2000/svg}rect") if rect.find(
        "{http://www.w3.org/2000/svg}title") is not None]
    assert width >= 7 * len("a rather long title") and abs((cells[0] - 2 + 28 - 2 - 2) - width / 2) < 16
    with pytest.raises(ValueError, match="cell_size must be an integer >= 8"):
        render.board_rgb(board, cell_size=7)


def test_each_agent_has_its_own_file_names():
    from jaxdust.evaluation.cli import file_names

    names = file_names(["policy:runs/a-0", "policy:runs/a_0", "largest", "policy:runs/a.0"])
    assert len(set(names.values())) == 4 and names["largest"] == "largest"
    assert names["policy:runs/a-0"] == "policy-runs-a-0" and names["policy:runs/a_0"] == "policy-runs-a-0-2"
