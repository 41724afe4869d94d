"""Text and SVG pictures of boards (host-side, for people, never inside ``jit``)."""

from __future__ import annotations

import html

import numpy as np

# Colour 1..9 as letters for text and as fills for SVG; index 0 is the empty cell.
LETTERS = ".ABCDEFGHI"
PALETTE = (
    "#f4f1ea",  # empty
    "#d1495b",  # 1 red
    "#66a182",  # 2 green
    "#2e86ab",  # 3 blue
    "#edae49",  # 4 yellow
    "#8d6a9f",  # 5 purple
    "#f18f01",  # 6 orange
    "#4ecdc4",  # 7 cyan
    "#ef767a",  # 8 pink
    "#7d5a50",  # 9 brown
)


def board_letters(board) -> str:
    """Letter grid, top row first: colour 1 is ``A``, empty is ``.``.

    A 3x2 board ``[[1, 2], [3, 0], [1, 0]]`` prints as ``"B..\\nACA"``.
    """
    cells = np.asarray(board)
    if cells.ndim != 2:
        raise ValueError(f"board_letters renders one board [width, height], got shape {cells.shape}")
    return "\n".join(
        "".join(LETTERS[int(v)] for v in cells[:, y]) for y in reversed(range(cells.shape[1]))
    )


def board_svg(board, highlight=None, cell_size: int = 28, title: str | None = None) -> str:
    """An SVG picture of one board, y=0 at the bottom; ``highlight`` (bool ``[W, H]``)
    outlines cells, e.g. the cluster about to be clicked."""
    cells = np.asarray(board)
    if cells.ndim != 2:
        raise ValueError(f"board_svg renders one board [width, height], got shape {cells.shape}")
    width, height = cells.shape
    marked = np.zeros_like(cells, bool) if highlight is None else np.asarray(highlight, bool)
    pad = 2
    caption = 18 if title else 0
    total_w, total_h = width * cell_size + 2 * pad, height * cell_size + 2 * pad + caption
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" '
        f'viewBox="0 0 {total_w} {total_h}">',
        f'<rect width="{total_w}" height="{total_h}" fill="#3b3a36" rx="4"/>',
    ]
    if title:
        parts.append(
            f'<text x="{total_w / 2}" y="13" fill="#f4f1ea" font-family="sans-serif" '
            f'font-size="12" text-anchor="middle">{html.escape(title)}</text>'
        )
    inset = 2
    for x in range(width):
        for y in range(height):
            left = pad + x * cell_size
            top = caption + pad + (height - 1 - y) * cell_size
            colour = int(cells[x, y])
            stroke = ' stroke="#ffffff" stroke-width="3"' if marked[x, y] else ""
            parts.append(
                f'<rect x="{left + inset}" y="{top + inset}" width="{cell_size - 2 * inset}" '
                f'height="{cell_size - 2 * inset}" rx="6" fill="{PALETTE[colour]}"{stroke}>'
                f"<title>({x}, {y})</title></rect>"
            )
    parts.append("</svg>")
    return "".join(parts)


class BoardView:
    """Wraps a board so notebooks draw it inline and terminals print letters."""

    def __init__(self, board, highlight=None, title: str | None = None):
        self.board = np.asarray(board)
        self.highlight = highlight
        self.title = title

    def _repr_svg_(self) -> str:
        return board_svg(self.board, self.highlight, title=self.title)

    def __repr__(self) -> str:
        return board_letters(self.board)
