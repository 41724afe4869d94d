"""Search for SameGame's points and Clickomania's cells left on boards of any size (numba).

The rules here run on plain int8 grids ``[W, H]`` (``board[x, y]``, ``y = 0`` the bottom row,
as ``jaxdust.core.game``), so the 15x15 research boards fit, which bitboards (64 cells) do not.
Two searches, the research baselines for the points objective:

- ``beam`` (its kernel ``beam_points``): a beam over positions ranked by the objective so far plus an optimistic
  estimate of what is left (``_estimate``), keeping each position once.
- ``nmcs``: nested Monte Carlo search (Cazenave, IJCAI 2009) at levels 1 and 2. Level 0 is
  a random playout that avoids the colour with most cells while another is playable (the
  "tabu colour" playout of the SameGame literature); level ``n`` tries every legal move
  with a level ``n - 1`` search after it, plays the best, and follows the best line found so
  far when no move does better.

Both return the whole line, so ``jaxdust.score`` checks their results. The beam is
deterministic; ``nmcs`` takes a seed, and the same seed gives the same line.
"""

from __future__ import annotations

import dataclasses
import time

import numba
import numpy as np

from jaxdust.core.boards import board_array
from jaxdust.core.game import CLEAR_BONUS, is_integer, require_points_rules, rules_of
from jaxdust.core.machine import require_memory
from jaxdust.solver.api import load_once

_SIDEWAYS = {"none": 0, "centre": 1, "left": 2}
_OBJECTIVE = {"clicks": 0, "points": 1, "cells_left": 2}


@numba.njit(cache=True)
def label_groups(board, labels, sizes, first_cell, stack):
    """Write each cell's group number into ``labels`` (int32 ``[W * H]``, -1 empty) and each
    group's size and first cell (flat ``x * H + y``) into ``sizes``/``first_cell``; return the
    number of groups. ``stack`` is scratch int32 ``[W * H]``. Groups are numbered in the
    order of their first cells."""
    width, height = board.shape
    labels[:] = -1
    count = 0
    for start in range(width * height):
        if board[start // height, start % height] == 0 or labels[start] >= 0:
            continue
        colour = board[start // height, start % height]
        labels[start] = count
        stack[0] = start
        top, size = 1, 0
        while top:
            top -= 1
            cell = stack[top]
            size += 1
            x, y = cell // height, cell % height
            for nx, ny in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
                if 0 <= nx < width and 0 <= ny < height:
                    neighbour = nx * height + ny
                    if labels[neighbour] < 0 and board[nx, ny] == colour:
                        labels[neighbour] = count
                        stack[top] = neighbour
                        top += 1
        sizes[count] = size
        first_cell[count] = start
        count += 1
    return count


@numba.njit(cache=True)
def remove_group(board, labels, group, sideways):
    """Empty the cells labelled ``group``, then settle: gravity, then ``sideways`` (0 none,
    1 the dust game's slide to the centre, 2 empty columns close to the left). In place."""
    width, height = board.shape
    for x in range(width):
        write = 0
        for y in range(height):
            value = board[x, y]
            if value and labels[x * height + y] != group:
                board[x, write] = value
                write += 1
        for y in range(write, height):
            board[x, y] = 0
    if sideways == 2:
        write = 0
        for x in range(width):
            if board[x, 0]:
                if write != x:
                    board[write, :] = board[x, :]
                write += 1
        for x in range(write, width):
            board[x, :] = 0
    elif sideways == 1:
        half = width // 2
        for y in range(height):
            write = half - 1
            for x in range(half - 1, -1, -1):
                if board[x, y]:
                    board[write, y] = board[x, y]
                    write -= 1
            for x in range(write, -1, -1):
                board[x, y] = 0
            write = half
            for x in range(half, width):
                if board[x, y]:
                    board[write, y] = board[x, y]
                    write += 1
            for x in range(write, width):
                board[x, y] = 0


@numba.njit(cache=True, inline="always")
def _points(removed):
    return (removed - 2) * (removed - 2) if removed >= 2 else 0


@numba.njit(cache=True)
def _colour_counts(board, counts):
    counts[:] = 0
    for value in board.ravel():
        counts[value] += 1


@numba.njit(cache=True)
def _estimate(board, objective, counts):
    """What is still to gain, as the tabu-colour playouts play: the colour with most cells
    gathered into one group at the end (its points), the others assumed lost."""
    _colour_counts(board, counts)
    largest = 0
    for colour in range(1, counts.shape[0]):
        largest = max(largest, counts[colour])
    if objective == 1:
        return _points(largest)
    return largest if largest >= 2 else 0


@numba.njit(cache=True, inline="always")
def _gain(removed, objective):
    """The objective's reward for removing a group of ``removed`` cells (higher is better)."""
    return _points(removed) if objective == 1 else removed


@numba.njit(cache=True)
def _board_key(board):
    key = np.uint64(0xCBF29CE484222325)
    for value in board.ravel():
        key = (key ^ np.uint64(value + 1)) * np.uint64(0x100000001B3)
    return key


@numba.njit(cache=True)
def _final(board, score, objective):
    """The objective's value at a game's end: points with the bonus, or minus cells left."""
    if objective == 1:
        return score + (CLEAR_BONUS if not board.any() else 0)
    return -np.count_nonzero(board)


@numba.njit(cache=True)
def beam_points(root, min_group, sideways, objective, width, line):
    """Beam search for the objective (1 points, 2 cells left): each click, every kept
    position is expanded by every group of at least ``min_group`` cells and the ``width``
    best distinct children, by gain so far plus ``_estimate``, are kept. Writes the best
    finished game's clicks (flat first cells) into ``line`` and returns ``(value, length)``:
    value as ``_final``."""
    board_width, height = root.shape
    cells = board_width * height
    states = np.empty((width, board_width, height), np.int8)
    scores = np.zeros(width, np.int64)
    states[0] = root
    alive = 1
    capacity = width * cells
    child_boards = np.empty((capacity, board_width, height), np.int8)
    child_scores = np.empty(capacity, np.int64)
    child_rank = np.empty(capacity, np.float64)
    child_keys = np.empty(capacity, np.uint64)
    child_parent = np.empty(capacity, np.int64)
    child_move = np.empty(capacity, np.int64)
    parents = np.empty((cells, width), np.int64)
    moves = np.empty((cells, width), np.int64)
    labels = np.empty(cells, np.int32)
    sizes = np.empty(cells, np.int32)
    first_cell = np.empty(cells, np.int32)
    stack = np.empty(cells, np.int32)
    counts = np.zeros(16, np.int64)
    best_value, best_depth, best_row = -(1 << 62), -1, 0
    for depth in range(cells):
        count = 0
        for i in range(alive):
            groups = label_groups(states[i], labels, sizes, first_cell, stack)
            legal = 0
            for group in range(groups):
                if sizes[group] < min_group:
                    continue
                legal += 1
                child = child_boards[count]
                child[:] = states[i]
                remove_group(child, labels, group, sideways)
                child_scores[count] = scores[i] + _gain(sizes[group], objective)
                child_rank[count] = child_scores[count] + _estimate(child, objective, counts)
                child_keys[count] = _board_key(child)
                child_parent[count] = i
                child_move[count] = first_cell[group]
                count += 1
            if legal == 0:  # a finished game: the line ends here
                value = _final(states[i], scores[i], objective)
                if value > best_value:
                    best_value, best_depth, best_row = value, depth, i
        if count == 0:
            break
        order = np.argsort(-child_rank[:count], kind="mergesort")
        kept = 0
        seen = np.empty(width, np.uint64)
        for position in order:
            key = child_keys[position]
            repeat = False
            for k in range(kept):
                if seen[k] == key:
                    repeat = True
                    break
            if repeat:
                continue
            seen[kept] = key
            parents[depth, kept] = child_parent[position]
            moves[depth, kept] = child_move[position]
            states[kept] = child_boards[position]
            scores[kept] = child_scores[position]
            kept += 1
            if kept == width:
                break
        alive = kept
    # The best game ended at ``best_depth`` clicks, in row ``best_row`` of that depth's beam.
    row = best_row
    for d in range(best_depth - 1, -1, -1):
        line[d] = moves[d, row]
        row = parents[d, row]
    return best_value, best_depth


@numba.njit(cache=True)
def _playout(board, min_group, sideways, objective, labels, sizes, first_cell, stack, counts, line, start):
    """Level 0: random legal clicks until the game ends, avoiding the colour with most
    cells while another is playable; plays on ``board`` in place, writes clicks into
    ``line[start:]``; returns ``(gain, end)``."""
    height = board.shape[1]
    gain, at = 0, start
    candidates = np.empty(labels.shape[0], np.int64)
    while True:
        groups = label_groups(board, labels, sizes, first_cell, stack)
        _colour_counts(board, counts)
        tabu = 1
        for colour in range(2, counts.shape[0]):
            if counts[colour] > counts[tabu]:
                tabu = colour
        legal = other = 0
        for group in range(groups):
            if sizes[group] >= min_group:
                cell = first_cell[group]
                if board[cell // height, cell % height] != tabu:  # non-tabu groups first
                    candidates[legal] = candidates[other]
                    candidates[other] = group
                    other += 1
                else:
                    candidates[legal] = group
                legal += 1
        if legal == 0:
            return gain, at
        pick = candidates[np.random.randint(other)] if other else candidates[np.random.randint(legal)]
        gain += _gain(sizes[pick], objective)
        line[at] = first_cell[pick]
        at += 1
        remove_group(board, labels, pick, sideways)


@numba.njit(cache=True)
def _click_cell(board, cell, labels, sizes, first_cell, stack, sideways):
    """Play the group whose first cell is ``cell``; return its size."""
    groups = label_groups(board, labels, sizes, first_cell, stack)
    for group in range(groups):
        if first_cell[group] == cell:
            size = sizes[group]
            remove_group(board, labels, group, sideways)
            return size
    return 0


@numba.njit(cache=True)
def _level_0(root, gain0, min_group, sideways, objective, scratch, line):
    """NMCS level 0: one playout from ``root`` (kept), its clicks into ``line``;
    returns ``(value, length)``, value as ``_final``."""
    labels, sizes, first_cell, stack, counts = scratch
    board = root.copy()
    more, end = _playout(board, min_group, sideways, objective, labels, sizes, first_cell, stack, counts, line, 0)
    return _final(board, gain0 + more, objective), end


def _nested_level(search_below):
    """NMCS one level above ``search_below`` (same signature as ``_level_0``): at each
    position every legal click is followed by ``search_below``; the best line seen so far
    is kept and its next click played, so a step never ends worse than an earlier one saw.
    ``scratch`` is ``(labels, sizes, first_cell, stack, counts)``, shared by the levels:
    each relabels the board before reading it. (A factory, as numba compiles no recursion
    through array slices; closures are not cached, so each process compiles these.)"""

    @numba.njit
    def level(root, gain0, min_group, sideways, objective, scratch, line):
        labels, sizes, first_cell, stack, counts = scratch
        cells = labels.shape[0]
        board = root.copy()
        child = np.empty_like(root)
        moves = np.empty(cells, np.int64)
        below = np.empty(cells + 1, np.int64)
        best_line = np.empty(cells, np.int64)
        best_value, best_length = _final(board, gain0, objective), 0
        gain, played = gain0, 0
        while True:
            groups = label_groups(board, labels, sizes, first_cell, stack)
            count = 0
            for group in range(groups):
                if sizes[group] >= min_group:
                    moves[count] = first_cell[group]
                    count += 1
            if count == 0:
                break
            for m in range(count):
                child[:] = board
                removed = _click_cell(child, moves[m], labels, sizes, first_cell, stack, sideways)
                below[0] = moves[m]
                value, end = search_below(child, gain + _gain(removed, objective), min_group, sideways, objective,
                                          scratch, below[1:])
                if value > best_value or best_length <= played:
                    best_value, best_length = value, played + end + 1
                    best_line[played:best_length] = below[:end + 1]
            gain += _gain(_click_cell(board, best_line[played], labels, sizes, first_cell, stack, sideways),
                          objective)
            played += 1
        line[:best_length] = best_line[:best_length]
        return best_value, best_length

    return level


_LEVELS = [_level_0]
for _ in range(2):
    _LEVELS.append(_nested_level(_LEVELS[-1]))


def _scratch(cells: int):
    return (np.empty(cells, np.int32), np.empty(cells, np.int32), np.empty(cells, np.int32),
            np.empty(cells, np.int32), np.zeros(16, np.int64))


@numba.njit(cache=True)
def _seed(seed):
    """Seed numba's own generator (the playouts draw from it, not from NumPy's)."""
    np.random.seed(seed)


@dataclasses.dataclass(frozen=True)
class PointsLine:
    """A finished game found by a search: its clicks and its result."""

    clicks: list[tuple[int, int]]  # each on its group's cell with the smallest x * height + y
    points: int  # SameGame's points of the line, the clear bonus included (any rules)
    cells_left: int
    seconds: float  # searching, not compiling (numba compiles a search on its first use)


def _rules_codes(rules: str) -> tuple[int, int, int]:
    found = rules_of(rules)
    return found.min_group, _SIDEWAYS[found.sideways], _OBJECTIVE[found.objective]


def _result(board: np.ndarray, cells: np.ndarray, rules: str, start: float) -> PointsLine:
    height = board.shape[1]
    clicks = [divmod(int(c), height) for c in cells]
    position = board.astype(np.int8).copy()
    labels, sizes, first, stack = (np.empty(board.size, np.int32) for _ in range(4))
    min_group, sideways, _ = _rules_codes(rules)
    points = 0
    for cell in cells:
        removed = _click_cell(position, int(cell), labels, sizes, first, stack, sideways)
        if removed < min_group:
            raise AssertionError("a search returned an illegal click")
        points += _points(removed)
    left = int(np.count_nonzero(position))
    return PointsLine(clicks, points + (CLEAR_BONUS if left == 0 else 0), left, time.perf_counter() - start)


def _run(board: np.ndarray, rules: str, search, name: str, kept: bool = True) -> PointsLine:
    """``search(grid, min_group, sideways, objective, line) -> length`` on ``board`` (as
    ``board_array`` returns it under ``rules``), timed, its line checked and scored by
    ``_result``. The search ``name`` first plays a 2x2 board once a process, so ``seconds``
    counts searching, not compiling (as ``Solution.seconds`` does); ``kept``: numba's cache
    keeps the search's code."""
    codes = _rules_codes(rules)
    # A fresh writable C array: numba compiles another program for a read-only one (a
    # JAX array's numpy view), which the 2x2 board below would not have compiled.
    cells = np.array(board, np.int8, order="C")

    def played(grid: np.ndarray) -> PointsLine:
        start = time.perf_counter()
        line = np.zeros(grid.size, np.int64)
        return _result(grid, line[:search(grid, *codes, line)], rules, start)

    load_once(f"the {name} search", "5-20 s", lambda: played(np.array([[1, 1], [2, 2]], np.int8)), kept)
    return played(cells)


def beam_bytes(width: int, cells: int) -> int:
    """What ``beam_points`` allocates at ``width`` on a board of ``cells`` cells: the kept
    boards, a child per kept board and cell with its score, rank, key and origin, and a
    parent and a move per kept board and click."""
    return width * (cells + 8) + width * cells * (cells + 5 * 8) + 2 * 8 * cells * width


def beam(board, width: int = 64, rules: str = "samegame") -> PointsLine:
    """The best line a beam of ``width`` finds for ``board`` (anything ``parse_board``
    accepts, any size) under ``rules`` (``samegame``: most points; ``clickomania``: fewest
    cells left)."""
    if not is_integer(width) or width < 1:
        raise ValueError(f"width must be a positive integer, got {width!r}")
    width = int(width)
    require_points_rules(rules, "jaxdust.solver.points.beam")  # before the board is read under them
    grid = board_array(board, rules)
    require_memory(f"a points beam of width {width} on {grid.size} cells", beam_bytes(width, grid.size))

    def search(grid, min_group, sideways, objective, line):
        return beam_points(grid, min_group, sideways, objective, width, line)[1]

    return _run(grid, rules, search, "points beam")


def nmcs(board, level: int = 1, rules: str = "samegame", seed: int = 0) -> PointsLine:
    """Nested Monte Carlo search at ``level`` 1 or 2 for ``board`` under ``rules``; the
    playouts draw from numba's generator seeded with ``seed``."""
    require_points_rules(rules, "jaxdust.solver.points.nmcs")
    if not is_integer(level) or level not in (1, 2):  # True == 1
        raise ValueError(f"level must be 1 or 2, got {level!r}")
    if not is_integer(seed) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an integer in [0, 2^32), got {seed!r}")
    seed = int(seed)

    def search(grid, min_group, sideways, objective, line):
        _seed(seed)
        return _LEVELS[int(level)](grid, 0, min_group, sideways, objective, _scratch(grid.size), line)[1]

    return _run(board_array(board, rules), rules, search, f"level-{int(level)} NMCS", kept=False)  # closures: not cached
