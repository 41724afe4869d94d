"""Text and SVG pictures of boards (host-side, for people, never inside ``jit``)."""

from __future__ import annotations

import html
import io
from collections.abc import Sequence

import numpy as np

from jaxdust.core import game

FRAME = "#3b3a36"  # around and between the cells
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


def _cells(board, what: str, highlight=None, cell_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One board ``[W, H]`` of colours 0..9 and its highlight (bool ``[W, H]``, none marked
    where None), checked: ValueError naming the function and the problem."""
    game.require_not_text(board, what)
    try:
        cells = np.asarray(board)
    except ValueError as error:  # rows of different lengths
        raise ValueError(f"{what}: the board is not a rectangular array ([x][y]): {error}") from None
    if cells.ndim != 2:
        raise ValueError(f"{what} renders one board [width, height], got shape {cells.shape}")
    if not game.holds_integers(cells.dtype):  # 1.7 would draw as colour 1
        raise ValueError(f"{what}: a board holds integer colours, got dtype {cells.dtype}")
    if cells.size == 0:
        raise ValueError(f"{what}: the board is empty, shape {cells.shape}")
    if cells.min() < 0 or cells.max() >= len(PALETTE):
        raise ValueError(f"{what}: the board holds {cells.min() if cells.min() < 0 else cells.max()}; colours are "
                         f"0 (empty) to {len(PALETTE) - 1}")
    marked = np.zeros(cells.shape, bool) if highlight is None else np.asarray(highlight)
    if marked.shape != cells.shape:
        raise ValueError(f"{what}: highlight of shape {marked.shape} for a board of shape {cells.shape}")
    if marked.dtype != bool:  # cluster labels or weights would outline every non-zero cell
        raise ValueError(f"{what}: highlight is a bool mask [W, H], got dtype {marked.dtype} (e.g. labels == k)")
    if cell_size is not None and (not game.is_integer(cell_size) or cell_size < 8):
        # Below 8 pixels the insets and a highlight's ring leave a cell no colour to show.
        raise ValueError(f"cell_size must be an integer >= 8 pixels, got {cell_size!r}")
    return cells, marked


def board_letters(board: game.BoardLike) -> str:
    """Letter grid, top row first: colour 1 is ``A``, empty is ``.``.

    A 3x2 board ``[[1, 2], [3, 0], [1, 0]]`` prints as ``"B..\\nACA"``.
    """
    cells, _ = _cells(board, "board_letters")
    return "\n".join(
        "".join(LETTERS[int(v)] for v in cells[:, y]) for y in reversed(range(cells.shape[1]))
    )


def board_svg(board: game.BoardLike, highlight: game.BoardLike | None = None, cell_size: int = 28,
              title: str | None = None) -> str:
    """An SVG picture of one board, y=0 at the bottom; ``highlight`` (bool ``[W, H]``)
    outlines cells, e.g. the cluster about to be clicked."""
    cells, marked = _cells(board, "board_svg", highlight, cell_size)
    width, height = cells.shape
    pad = 2
    caption = 18 if title else 0
    total_w, total_h = width * cell_size + 2 * pad, height * cell_size + 2 * pad + caption
    # A title wider than a narrow board widens the picture (~7 px a character at 12 px),
    # the board centred below it.
    shift = max(0, 7 * len(title or "") + 8 - total_w) // 2
    total_w += 2 * shift
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" '
        f'viewBox="0 0 {total_w} {total_h}">',
        f'<rect width="{total_w}" height="{total_h}" fill="{FRAME}" rx="4"/>',
    ]
    if title:
        parts.append(
            f'<text x="{total_w / 2}" y="13" fill="#f4f1ea" font-family="sans-serif" '
            f'font-size="12" text-anchor="middle">{html.escape(title)}</text>'
        )
    inset = 2
    for x in range(width):
        for y in range(height):
            left = shift + pad + x * cell_size
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

    def __init__(self, board: game.BoardLike, highlight: game.BoardLike | None = None,
                 title: str | None = None):
        self.board, _ = _cells(board, "BoardView", highlight)
        self.highlight = highlight
        self.title = title

    def _repr_svg_(self) -> str:
        return board_svg(self.board, self.highlight, title=self.title)

    def __repr__(self) -> str:
        return board_letters(self.board)


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16)


_RGB = np.array([_rgb(c) for c in PALETTE], np.uint8)
_FRAME = np.array(_rgb(FRAME), np.uint8)


def board_rgb(board: game.BoardLike, highlight: game.BoardLike | None = None, cell_size: int = 16) -> np.ndarray:
    """One board as an image: uint8 ``[height * cell_size, width * cell_size, 3]``, top row
    first (what ``render(mode="rgb_array")`` returns in Gymnasium); ``highlight`` (bool
    ``[W, H]``) draws those cells with a white border."""
    cells, marked = _cells(board, "board_rgb", highlight, cell_size)
    rows = np.flipud(cells.T)  # [H, W], top row first
    marked = np.flipud(marked.T)
    inset = max(1, cell_size // 8)
    tile = np.zeros((cell_size, cell_size), bool)
    tile[inset:-inset, inset:-inset] = True  # the coloured part of a cell; the rest is frame
    border = tile.copy()
    border[2 * inset : -2 * inset, 2 * inset : -2 * inset] = False
    colours = np.repeat(np.repeat(_RGB[rows], cell_size, 0), cell_size, 1)
    inside = np.tile(tile, rows.shape)
    ring = np.tile(border, rows.shape) & np.repeat(np.repeat(marked, cell_size, 0), cell_size, 1)
    empty = np.repeat(np.repeat(rows == 0, cell_size, 0), cell_size, 1)
    image = np.where(inside[..., None], colours, _FRAME)
    image[ring & ~empty] = 255
    image[ring & empty] = _FRAME  # a click on an empty cell (a wasted one): white would not show on its light fill
    return image


MAX_GIF_DELAY = 2**16 - 1  # hundredths of a second: the GIF format's 16-bit field


def game_gif(boards: game.BoardLike, highlights: Sequence[game.BoardLike | None] | None = None,
             cell_size: int = 24, milliseconds: int = 500) -> bytes:
    """A GIF of positions ``boards`` (a sequence of ``[W, H]`` boards of one shape, e.g.
    from ``jaxdust.positions``), each shown ``milliseconds``, the last twice as long;
    ``highlights`` (one bool ``[W, H]`` or None per board) marks the cluster clicked next.
    GIF delays are whole hundredths of a second: two identical frames in a row (a click
    that changed nothing, made twice) play as one frame for their summed time, and each
    frame's time is then rounded down to hundredths. ValueError for ``milliseconds``
    under 20 (browsers play a delay under two hundredths at ten) or one whose last frame
    would pass the format's longest delay."""
    from PIL import Image  # matplotlib's own dependency: no extra install

    boards = list(boards)
    if not boards:
        raise ValueError("game_gif needs at least one board")
    if not game.is_integer(milliseconds) or milliseconds < 1:
        raise ValueError(f"milliseconds must be a positive integer, got {milliseconds!r}")
    highlights = list(highlights) if highlights is not None else [None] * len(boards)
    if len(highlights) != len(boards):
        raise ValueError(f"{len(highlights)} highlights for {len(boards)} boards")
    shapes = {np.shape(b) for b in boards}
    if any(len(shape) != 2 for shape in shapes):
        raise ValueError(f"game_gif takes a game's positions, boards [W, H] (e.g. jaxdust.positions(board, clicks)[0]; "
                         f"one board: [board]), got items of shape {sorted(shapes)[0]}")
    if len(shapes) > 1:
        raise ValueError(f"game_gif: the boards are of several shapes, {sorted(shapes)}: one game's positions share one")
    if milliseconds < 20:  # the GIF format's hundredths; browsers take delays under 2 as 10
        raise ValueError(f"milliseconds must be at least 20 (GIF delays are hundredths of a second), got {milliseconds}")
    if 2 * milliseconds // 10 > MAX_GIF_DELAY:  # the last frame shows for twice as long
        raise ValueError(f"milliseconds must be at most {(MAX_GIF_DELAY * 10 + 9) // 2} (the last frame shows twice "
                         f"as long, and a GIF delay is at most {MAX_GIF_DELAY} hundredths of a second), got {milliseconds}")
    pixels = [board_rgb(b, h, cell_size) for b, h in zip(boards, highlights)]
    durations = [milliseconds] * (len(pixels) - 1) + [2 * milliseconds]
    longest = _longest_shown(pixels, durations)
    if longest // 10 > MAX_GIF_DELAY:  # Pillow merges identical frames in a row, summing their delays
        raise ValueError(f"milliseconds={milliseconds} shows one unchanged position for {longest} ms (identical frames "
                         f"in a row play as one), past a GIF delay's {MAX_GIF_DELAY} hundredths of a second")
    frames = [Image.fromarray(p) for p in pixels]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], duration=durations, loop=0)
    return buffer.getvalue()


def _longest_shown(pixels: list[np.ndarray], durations: list[int]) -> int:
    """The longest summed duration (ms) of a run of identical frames in a row."""
    longest = run = 0
    for index, (frame, duration) in enumerate(zip(pixels, durations)):
        run = run + duration if index and np.array_equal(frame, pixels[index - 1]) else duration
        longest = max(longest, run)
    return longest
