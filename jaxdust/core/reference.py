"""Independent NumPy reference implementation of the dust game, used only as a test oracle.

This module was written from ``RULES.md`` alone (sections "Board", "A click" and
"Objective"), without looking at the JAX implementation it is meant to check.  It
favours clarity over speed: everything is plain Python loops over cells (an explicit
breadth-first search for clusters, explicit column and row loops for the contraction),
so that its correctness can be checked by reading it.

Conventions (from RULES.md):

* A board is an integer array indexed ``board[x, y]`` with shape ``(width, height)``;
  ``x`` runs left to right, ``y`` bottom to top (``y = 0`` is the bottom row).
  ``0`` is an empty cell and ``1..colors`` are colours.  Boards returned here are int8.
* The flat index of cell ``(x, y)`` is ``x * height + y`` (x-major order); it is also
  the position of the cell in the text form of a board.
* A click on an empty cell changes nothing.  A click on a coloured cell removes its
  4-connected same-colour cluster, then the board contracts once: gravity in every
  column, then in every row the left half (``x < width // 2``) slides right to end at
  ``x = width // 2 - 1`` and the right half slides left to start at ``x = width // 2``.
* The game is over when the board is empty.
"""

from __future__ import annotations

from collections import deque

import numpy as np

EMPTY = 0


# ---------------------------------------------------------------------------
# Boards
# ---------------------------------------------------------------------------


def random_board(rng: np.random.Generator, width: int, height: int, colors: int) -> np.ndarray:
    """A board whose every cell is uniform in ``1..colors``; int8, shape (width, height)."""
    return rng.integers(1, colors + 1, size=(width, height)).astype(np.int8)


def is_done(board: np.ndarray) -> bool:
    """True when the board has no coloured cell left."""
    board = np.asarray(board)
    width, height = board.shape
    for x in range(width):
        for y in range(height):
            if board[x, y] != EMPTY:
                return False
    return True


def one_hot(board: np.ndarray, colors: int) -> np.ndarray:
    """float32 array (width, height, colors + 1); channel c is 1 where the cell holds c (0 = empty)."""
    board = np.asarray(board)
    width, height = board.shape
    out = np.zeros((width, height, colors + 1), dtype=np.float32)
    for x in range(width):
        for y in range(height):
            out[x, y, int(board[x, y])] = 1.0
    return out


def board_from_text(text: str, width: int, height: int) -> np.ndarray:
    """Parse the x-major digit string: cell (x, y) is character ``x * height + y``."""
    text = text.strip()
    if len(text) != width * height:
        raise ValueError(f"expected {width * height} digits, got {len(text)}")
    board = np.zeros((width, height), dtype=np.int8)
    for x in range(width):
        for y in range(height):
            board[x, y] = int(text[x * height + y])
    return board


def board_to_text(board: np.ndarray) -> str:
    """Inverse of :func:`board_from_text`."""
    board = np.asarray(board)
    width, height = board.shape
    chars = []
    for x in range(width):
        for y in range(height):
            chars.append(str(int(board[x, y])))
    return "".join(chars)


# ---------------------------------------------------------------------------
# Clusters
# ---------------------------------------------------------------------------


def _neighbours(x: int, y: int, width: int, height: int):
    """The 4-neighbours (left, right, down, up) of (x, y) that lie on the board."""
    for nx, ny in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
        if 0 <= nx < width and 0 <= ny < height:
            yield nx, ny


def _cluster_cells(board: np.ndarray, x: int, y: int) -> list[tuple[int, int]]:
    """Breadth-first search: all cells 4-connected to (x, y) with its colour ([] if empty).
    ValueError off the board (numpy would read a negative index from the far edge)."""
    width, height = board.shape
    if not (0 <= x < width and 0 <= y < height):
        raise ValueError(f"cell ({x}, {y}) is off a board of shape {board.shape}")
    colour = board[x, y]
    if colour == EMPTY:
        return []
    seen = {(x, y)}
    queue = deque([(x, y)])
    cells = []
    while queue:
        cx, cy = queue.popleft()
        cells.append((cx, cy))
        for nx, ny in _neighbours(cx, cy, width, height):
            if (nx, ny) not in seen and board[nx, ny] == colour:
                seen.add((nx, ny))
                queue.append((nx, ny))
    return cells


def cluster_mask(board: np.ndarray, x: int, y: int) -> np.ndarray:
    """bool (width, height): True on the cluster of (x, y); all False if (x, y) is empty."""
    board = np.asarray(board)
    mask = np.zeros(board.shape, dtype=bool)
    for cx, cy in _cluster_cells(board, x, y):
        mask[cx, cy] = True
    return mask


def _all_clusters(board: np.ndarray) -> list[list[tuple[int, int]]]:
    """Every cluster of the board once, each as a list of cells.

    Cells are scanned in increasing flat index ``x * height + y``, so the first cell at
    which a cluster is discovered is its cell with the smallest flat index; clusters are
    returned in increasing order of that representative index.
    """
    width, height = board.shape
    assigned = np.zeros(board.shape, dtype=bool)
    clusters = []
    for x in range(width):
        for y in range(height):
            if board[x, y] == EMPTY or assigned[x, y]:
                continue
            cells = _cluster_cells(board, x, y)
            for cx, cy in cells:
                assigned[cx, cy] = True
            clusters.append(cells)
    return clusters


def _representative(cells: list[tuple[int, int]], height: int) -> tuple[int, int]:
    """The cell of a cluster with the smallest flat index x * height + y."""
    return min(cells, key=lambda c: c[0] * height + c[1])


def cluster_labels(board: np.ndarray) -> np.ndarray:
    """int32 (width, height): smallest flat index in each cell's cluster; -1 on empty cells."""
    board = np.asarray(board)
    width, height = board.shape
    labels = np.full(board.shape, -1, dtype=np.int32)
    for cells in _all_clusters(board):
        rx, ry = _representative(cells, height)
        for cx, cy in cells:
            labels[cx, cy] = rx * height + ry
    return labels


def cluster_sizes(board: np.ndarray) -> np.ndarray:
    """int32 (width, height): size of the cluster holding each cell; 0 on empty cells."""
    board = np.asarray(board)
    sizes = np.zeros(board.shape, dtype=np.int32)
    for cells in _all_clusters(board):
        for cx, cy in cells:
            sizes[cx, cy] = len(cells)
    return sizes


def cluster_representatives(board: np.ndarray) -> np.ndarray:
    """bool (width, height): True at the smallest-flat-index cell of every cluster."""
    board = np.asarray(board)
    width, height = board.shape
    reps = np.zeros(board.shape, dtype=bool)
    for cells in _all_clusters(board):
        rx, ry = _representative(cells, height)
        reps[rx, ry] = True
    return reps


# ---------------------------------------------------------------------------
# Contraction
# ---------------------------------------------------------------------------


def gravity(board: np.ndarray) -> np.ndarray:
    """In every column the coloured cells fall to the bottom, keeping their order."""
    board = np.asarray(board)
    width, height = board.shape
    out = np.zeros((width, height), dtype=np.int8)
    for x in range(width):
        next_y = 0  # lowest free slot in the output column
        for y in range(height):  # bottom to top, so the order is kept
            if board[x, y] != EMPTY:
                out[x, next_y] = board[x, y]
                next_y += 1
    return out


def slide_to_centre(board: np.ndarray) -> np.ndarray:
    """In every row, each half slides toward the centre, keeping its order.

    Left half (x < width // 2): cells end contiguous at x = width // 2 - 1.
    Right half (x >= width // 2): cells start contiguous at x = width // 2.
    """
    board = np.asarray(board)
    width, height = board.shape
    mid = width // 2
    out = np.zeros((width, height), dtype=np.int8)
    for y in range(height):
        # Left half: walk from the centre outward (right to left), packing at mid - 1, mid - 2, ...
        next_x = mid - 1
        for x in range(mid - 1, -1, -1):
            if board[x, y] != EMPTY:
                out[next_x, y] = board[x, y]
                next_x -= 1
        # Right half: walk from the centre outward (left to right), packing at mid, mid + 1, ...
        next_x = mid
        for x in range(mid, width):
            if board[x, y] != EMPTY:
                out[next_x, y] = board[x, y]
                next_x += 1
    return out


def contract(board: np.ndarray) -> np.ndarray:
    """Gravity, then every row slides toward the centre (once each)."""
    return slide_to_centre(gravity(board))


# ---------------------------------------------------------------------------
# Playing
# ---------------------------------------------------------------------------


def click(board: np.ndarray, x: int, y: int) -> tuple[np.ndarray, int]:
    """Click (x, y): returns (new int8 board, number of cells removed). Input is not mutated.

    An empty cell changes nothing (0 removed).  Otherwise its cluster is removed and the
    board contracts once.
    """
    board = np.asarray(board)
    cells = _cluster_cells(board, x, y)
    if not cells:
        return board.astype(np.int8, copy=True), 0
    new = board.astype(np.int8, copy=True)
    for cx, cy in cells:
        new[cx, cy] = EMPTY
    return contract(new), len(cells)


def largest_cluster_first(board: np.ndarray, tie_break: str = "flat") -> list[tuple[int, int]]:
    """Play to the end, always clicking the largest cluster; returns the clicks.

    The click recorded for a chosen cluster is always its representative, the cell with
    the smallest flat index ``x * height + y``.

    Among clusters of equal (largest) size, the one chosen is:

    * ``tie_break="flat"`` (default): the cluster whose representative has the smallest
      flat index ``x * height + y`` (first met scanning x-major: column by column).
    * ``tie_break="row_major"``: the cluster containing the cell with the smallest
      ``y * width + x`` (first met scanning row by row from the bottom, left to right).
      This is the rule that reproduces the largest-first column of
      ``boards/eval_8x6x5.txt`` (all 1000 boards); the default rule does not (it matches
      only 383 of them, since the game length depends on which tied cluster is taken).
    """
    if tie_break not in ("flat", "row_major"):
        raise ValueError(f"unknown tie_break {tie_break!r}")
    board = np.asarray(board).astype(np.int8, copy=True)
    width, height = board.shape
    clicks = []
    while not is_done(board):
        best_cells = None
        best_key = None
        for cells in _all_clusters(board):
            if tie_break == "flat":
                tie = min(cx * height + cy for cx, cy in cells)
            else:
                tie = min(cy * width + cx for cx, cy in cells)
            key = (-len(cells), tie)  # smaller key is better: larger size, then smaller tie
            if best_key is None or key < best_key:
                best_cells, best_key = cells, key
        assert best_cells is not None  # the game is not over, so a cluster was found
        x, y = _representative(best_cells, height)
        board, removed = click(board, x, y)
        assert removed == len(best_cells)
        clicks.append((x, y))
    return clicks


def play_random_game(board: np.ndarray, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Click a uniformly random occupied cell until the board is empty; returns the clicks."""
    board = np.asarray(board).astype(np.int8, copy=True)
    width, height = board.shape
    clicks = []
    while not is_done(board):
        occupied = [(x, y) for x in range(width) for y in range(height) if board[x, y] != EMPTY]
        x, y = occupied[int(rng.integers(len(occupied)))]
        board, removed = click(board, x, y)
        assert removed > 0
        clicks.append((x, y))
    return clicks
