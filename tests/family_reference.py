"""Independent plain-Python reference for four tile-clearing rule sets.

This module is a *test oracle*: it was written from the written rules only (RULES.md and the
family table below), without looking at the ``jaxdust`` package, and it imports nothing from
it. It favours clarity over speed: every operation is a plain loop over cells.

Conventions
-----------
* A board is a 2-D integer array ``board[x][y]``; ``x`` in ``[0, W)`` runs left to right and
  ``y`` in ``[0, H)`` runs **bottom to top** (``y = 0`` is the bottom row). ``0`` is an empty
  cell, ``1..9`` are colours. Functions accept numpy arrays or nested lists and return numpy
  ``int8`` arrays of shape ``(W, H)``.
* A cluster is a maximal set of same-coloured (non-empty) cells connected through
  4-neighbours. Its *representative* is its cell with the smallest flat index ``x*H + y``
  (leftmost column, then bottommost cell in it).
* The flat index ``x*H + y`` is also the order used for "first cell" questions.

Rule sets
---------
=============  =========  ==================================================  ===============
rules          min group  contraction after a removal                         objective
=============  =========  ==================================================  ===============
"dust"         1          gravity, then in every row the left half            fewest clicks
                          (``x < W//2``) packs right so it ends at
                          ``x = W//2 - 1`` and the right half packs left so
                          it starts at ``x = W//2`` (order kept per half)
"former"       1          gravity only                                        fewest clicks
"samegame"     2          gravity, then empty columns are removed and the     (n-2)^2 points
                          columns to their right shift left (order kept)      per group, +1000
                                                                              if cleared
"clickomania"  2          as samegame                                         fewest cells left
=============  =========  ==================================================  ===============

A click on an empty cell, or on a cluster smaller than the minimum group size, changes
nothing and removes 0 cells. The game is over when no legal click remains (for dust and
former that means the board is empty).
"""

from __future__ import annotations

import numpy as np

RULES = ("dust", "former", "samegame", "clickomania")

_MIN_GROUP = {"dust": 1, "former": 1, "samegame": 2, "clickomania": 2}

#: Letters of the UVa 758 input format and the colours they map to.
UVA_COLOURS = {"R": 1, "G": 2, "B": 3}
UVA_LETTERS = {v: k for k, v in UVA_COLOURS.items()}

Cell = tuple[int, int]


# ---------------------------------------------------------------------------------------------
# Basics
# ---------------------------------------------------------------------------------------------


def _check_rules(rules: str) -> str:
    """Return ``rules`` if it names a known rule set, else raise ``ValueError``."""
    if not isinstance(rules, str) or rules not in _MIN_GROUP:
        raise ValueError(f"unknown rules {rules!r}; known rules are {', '.join(RULES)}")
    return rules


def min_group(rules: str) -> int:
    """Smallest cluster size that may be clicked under ``rules`` (1 or 2).

    Raises ``ValueError`` (naming the known rule sets) for an unknown name.
    """
    return _MIN_GROUP[_check_rules(rules)]


def as_board(board) -> np.ndarray:
    """Copy ``board`` (numpy array or nested lists, indexed ``[x][y]``) to an int8 array.

    Raises ``ValueError`` if it is not 2-D or holds anything but integers in ``0..9``.
    """
    raw = np.asarray(board)
    if raw.size and raw.dtype.kind not in "iu":  # 1.7 would have been colour 1, 0.5 empty
        raise ValueError(f"a board must hold integers, got {raw.dtype}")
    arr = raw.astype(np.int64)
    if arr.ndim != 2:
        raise ValueError(f"a board must be 2-D, got shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() > 9):
        raise ValueError("board values must lie in 0..9 (0 = empty)")
    return arr.astype(np.int8)


def board_from_rows(rows) -> np.ndarray:
    """Build a board from a picture: a list of strings, **top row first**.

    Each character is one cell, left to right: ``'.'`` or ``'0'`` is empty, ``'1'..'9'`` a
    colour; spaces are ignored. Handy for writing examples by hand::

        board_from_rows(["1.",
                         "23"])   # (0,1)=1, (0,0)=2, (1,0)=3, (1,1) empty
    """
    rows = [r.replace(" ", "") for r in rows]
    height = len(rows)
    width = len(rows[0]) if rows else 0
    if any(len(r) != width for r in rows):
        raise ValueError("all rows must have the same length")
    out = np.zeros((width, height), dtype=np.int8)
    for i, row in enumerate(rows):
        y = height - 1 - i
        for x, ch in enumerate(row):
            out[x, y] = 0 if ch in ".0" else int(ch)
    return out


def board_to_rows(board) -> list[str]:
    """Inverse of :func:`board_from_rows`: the picture of ``board``, top row first."""
    b = as_board(board)
    width, height = b.shape
    return [
        "".join("." if b[x, y] == 0 else str(int(b[x, y])) for x in range(width))
        for y in range(height - 1, -1, -1)
    ]


def _in_range(board: np.ndarray, x: int, y: int) -> bool:
    return 0 <= x < board.shape[0] and 0 <= y < board.shape[1]


def _flood(grid: list[list[int]], x: int, y: int) -> list[Cell]:
    """The cluster of ``(x, y)`` on ``grid`` (``board.tolist()``: plain ints index fast)."""
    colour, width, height = grid[x][y], len(grid), len(grid[0])
    seen = {(x, y)}
    stack = [(x, y)]
    while stack:
        cx, cy = stack.pop()
        for nx, ny in ((cx - 1, cy), (cx + 1, cy), (cx, cy - 1), (cx, cy + 1)):
            if 0 <= nx < width and 0 <= ny < height and (nx, ny) not in seen and grid[nx][ny] == colour:
                seen.add((nx, ny))
                stack.append((nx, ny))
    return sorted(seen)  # tuple order (x, y) == flat index order x*H + y


def cluster_at(board, x: int, y: int) -> list[Cell]:
    """Cells of the cluster containing ``(x, y)``, sorted by flat index (``[]`` if empty)."""
    b = as_board(board)
    if not _in_range(b, x, y):
        raise ValueError(f"cell ({x}, {y}) is outside a board of shape {b.shape}")
    return _flood(b.tolist(), x, y) if b[x, y] else []


def clusters(board) -> list[list[Cell]]:
    """All clusters of non-empty cells (singletons included).

    Each cluster is a list of ``(x, y)`` sorted by flat index, so ``cluster[0]`` is its
    representative; the clusters are sorted by representative.
    """
    grid = as_board(board).tolist()
    done: set[Cell] = set()
    out = []
    for x, column in enumerate(grid):
        for y, colour in enumerate(column):
            if colour != 0 and (x, y) not in done:
                cells = _flood(grid, x, y)
                done.update(cells)
                out.append(cells)
    return out  # discovered in flat order, so already sorted by representative


# ---------------------------------------------------------------------------------------------
# Contraction
# ---------------------------------------------------------------------------------------------


def settle_moves(board, rules: str) -> dict[Cell, Cell]:
    """Where the contraction of ``rules`` sends every non-empty cell: ``{old: new}``.

    The contraction is applied once, in this order: gravity (every column's cells fall to
    the bottom, order kept), then the rule's sideways move (dust: per row, per half, pack
    toward the centre; samegame/clickomania: drop empty columns, shift the rest left;
    former: nothing).
    """
    _check_rules(rules)
    b = as_board(board)
    width, height = b.shape
    # position[cell] tracks the current position of each original cell.
    position: dict[Cell, Cell] = {}
    # Gravity.
    for x in range(width):
        ys = [y for y in range(height) if b[x, y] != 0]
        for new_y, y in enumerate(ys):
            position[(x, y)] = (x, new_y)
    if rules == "dust":
        half = width // 2
        by_row: dict[int, list[Cell]] = {}
        for cell, (x, y) in position.items():
            by_row.setdefault(y, []).append(cell)
        for y, cells in by_row.items():
            cells.sort(key=lambda c: position[c][0])
            left = [c for c in cells if position[c][0] < half]
            right = [c for c in cells if position[c][0] >= half]
            for i, c in enumerate(left):
                position[c] = (half - len(left) + i, y)
            for i, c in enumerate(right):
                position[c] = (half + i, y)
    elif rules in ("samegame", "clickomania"):
        occupied_columns = sorted({x for (x, _y) in position.values()})
        new_x = {x: i for i, x in enumerate(occupied_columns)}
        for c, (x, y) in list(position.items()):
            position[c] = (new_x[x], y)
    return position


def settle(board, rules: str) -> np.ndarray:
    """Apply the contraction of ``rules`` (gravity + the sideways move) to ``board``.

    Works on any board, e.g. one with holes; on a settled board it changes nothing.
    """
    b = as_board(board)
    out = np.zeros_like(b)
    for (x, y), (nx, ny) in settle_moves(b, rules).items():
        out[nx, ny] = b[x, y]
    return out


def unsettled_cell(board, rules: str) -> Cell | None:
    """The first non-empty cell (smallest ``x*H + y``) that :func:`settle` would move.

    ``None`` if the board is settled. Every shape defect shows up as a moved cell: a cell
    above an empty cell falls; for samegame/clickomania the bottom cell of the first
    non-empty column right of an empty column shifts left; for dust a cell is moved when
    its half-row block has a gap or does not touch the centre.
    """
    moves = settle_moves(board, rules)
    moved = [cell for cell, dest in moves.items() if cell != dest]
    return min(moved) if moved else None


# ---------------------------------------------------------------------------------------------
# Playing
# ---------------------------------------------------------------------------------------------


def click(board, x: int, y: int, rules: str) -> tuple[np.ndarray, int]:
    """Click cell ``(x, y)``: returns ``(new_board, removed)``.

    If the cell is non-empty and its cluster has at least ``min_group(rules)`` cells, the
    cluster is removed and the board contracts (:func:`settle`). Otherwise (empty cell, or
    a too-small cluster) the board is returned unchanged with ``removed == 0``.
    Raises ``ValueError`` for a cell outside the board.
    """
    need = min_group(rules)
    b = as_board(board)
    cells = cluster_at(b, x, y)
    if len(cells) < max(need, 1):
        return b, 0
    for cx, cy in cells:
        b[cx, cy] = 0
    return settle(b, rules), len(cells)


def legal_moves(board, rules: str) -> list[Cell]:
    """Representatives of all clickable clusters, sorted by flat index."""
    need = min_group(rules)
    return [c[0] for c in clusters(board) if len(c) >= need]


def is_over(board, rules: str) -> bool:
    """True when no legal click remains (dust/former: when the board is empty)."""
    return not legal_moves(board, rules)


def points(removed: int) -> int:
    """SameGame points for removing a group of ``removed`` cells: ``(removed-2)**2``, 0 if < 2."""
    return (removed - 2) ** 2 if removed >= 2 else 0


def line_points(board, clicks, rules: str = "samegame") -> int:
    """Play ``clicks`` ``[(x, y), ...]`` from ``board``; the sum of :func:`points`.

    Adds 1000 if the board is empty after the last click. Clicks that remove nothing score 0.
    """
    b = as_board(board)
    total = 0
    for x, y in clicks:
        b, removed = click(b, x, y, rules)
        total += points(removed)
    if not b.any():
        total += 1000
    return total


def largest_group_greedy(board, rules: str = "samegame"):
    """Repeatedly click the largest clickable cluster until the game is over.

    Ties are broken by the representative: smallest column ``x`` first, then smallest row
    ``y``. Returns ``(moves, score, remaining)``: ``moves`` is a list of
    ``(x, y, size, colour)`` with ``(x, y)`` the clicked cluster's representative; ``score``
    is as :func:`line_points` (with the +1000 bonus when cleared); ``remaining`` is the
    number of cells left.
    """
    need = min_group(rules)
    b = as_board(board)
    moves = []
    score = 0
    while True:
        candidates = [c for c in clusters(b) if len(c) >= need]
        if not candidates:
            break
        # max size; among equals the smallest representative (x, then y)
        best = min(candidates, key=lambda c: (-len(c), c[0]))
        x, y = best[0]
        colour = int(b[x, y])
        b, removed = click(b, x, y, rules)
        assert removed == len(best)
        moves.append((x, y, removed, colour))
        score += points(removed)
    remaining = int(np.count_nonzero(b))
    if remaining == 0:
        score += 1000
    return moves, score, remaining


def play_random(board, rules: str, rng) -> list[Cell]:
    """Play uniformly random legal clicks (cluster representatives) until the game is over.

    ``rng`` is a ``numpy.random.Generator`` (or a seed). Returns the clicks ``[(x, y), ...]``.
    """
    rng = np.random.default_rng(rng)
    b = as_board(board)
    played = []
    while True:
        moves = legal_moves(b, rules)
        if not moves:
            return played
        x, y = moves[int(rng.integers(len(moves)))]
        b, removed = click(b, x, y, rules)
        assert removed > 0
        played.append((x, y))


# ---------------------------------------------------------------------------------------------
# Random boards
# ---------------------------------------------------------------------------------------------


def random_board(rng, width: int, height: int, colors: int) -> np.ndarray:
    """A full board: every cell independently uniform in ``1..colors``."""
    rng = np.random.default_rng(rng)
    return rng.integers(1, colors + 1, size=(width, height)).astype(np.int8)


def random_settled_board(rng, width: int, height: int, colors: int, rules: str,
                         hole_prob: float | None = None) -> np.ndarray:
    """A random board with some holes, then settled under ``rules``.

    Each cell is emptied with probability ``hole_prob`` (default: drawn uniformly in
    ``[0, 0.6)`` per board, so some boards are full and some sparse).
    """
    _check_rules(rules)
    rng = np.random.default_rng(rng)
    b = random_board(rng, width, height, colors)
    p = rng.uniform(0.0, 0.6) if hole_prob is None else hole_prob
    b[rng.random((width, height)) < p] = 0
    return settle(b, rules)


# ---------------------------------------------------------------------------------------------
# UVa 758 "The Same Game"
# ---------------------------------------------------------------------------------------------


def parse_uva758(text: str) -> list[np.ndarray]:
    """Parse the input of UVa 758: boards of 15 x 10 with R->1, G->2, B->3.

    The first line is the number of games; each game is 10 lines of 15 letters, the top
    row first; games are separated by blank lines (blank lines are ignored altogether).
    """
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        raise ValueError("empty input")
    n_games = int(lines[0])
    rows = lines[1:]
    if len(rows) < 10 * n_games:
        raise ValueError(f"expected {10 * n_games} board lines, got {len(rows)}")
    boards = []
    for g in range(n_games):
        game_rows = rows[10 * g:10 * g + 10]
        board = np.zeros((15, 10), dtype=np.int8)
        for i, row in enumerate(game_rows):
            if len(row) != 15 or any(ch not in UVA_COLOURS for ch in row):
                raise ValueError(f"game {g + 1}: bad row {row!r}")
            y = 9 - i  # top row first
            for x, ch in enumerate(row):
                board[x, y] = UVA_COLOURS[ch]
        boards.append(board)
    return boards


def uva758_report(board, game_number: int) -> list[str]:
    """The UVa 758 output lines for one game, played by :func:`largest_group_greedy`.

    Coordinates are printed as ``(row, column)``, 1-based, row 1 = bottom, column 1 = left,
    i.e. ``(y + 1, x + 1)``.
    """
    moves, score, remaining = largest_group_greedy(board, "samegame")
    out = [f"Game {game_number}:"]
    for i, (x, y, size, colour) in enumerate(moves, start=1):
        out.append(
            f"Move {i} at ({y + 1},{x + 1}): removed {size} balls of color "
            f"{UVA_LETTERS[colour]}, got {points(size)} points."
        )
    out.append(f"Final score: {score}, with {remaining} balls remaining.")
    return out


def solve_uva758(text: str) -> str:
    """The full UVa 758 output for an input ``text`` (games separated by blank lines)."""
    games = parse_uva758(text)
    blocks = ["\n".join(uva758_report(b, i)) for i, b in enumerate(games, start=1)]
    return "\n\n".join(blocks) + "\n"
