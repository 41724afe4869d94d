"""A re-creation of the original post's time-limited depth-first search (a baseline).

Branch and bound over clusters, as the original solver did:
- in the first ``ROOT_PLIES`` clicks, moves whose click and best follow-up remove the most
  cells come first (cluster size plus the largest cluster left after it);
- deeper down, larger clusters first;
- a child is searched only if ``depth + distinct values left < best`` where, as in the
  original, the empty value counts as one of the values once any cell is empty. That is one
  click stricter than admissible, so this search can miss a solution one click shorter
  than the best it has; it is kept because the point is to show where the original stood.
It stops at a time or node limit and returns the best solution found. Use ``node_limit``
for results that do not depend on the machine.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from jaxdust.core.boards import board_array
from jaxdust.solver import bitboard
from jaxdust.solver.api import COUNT_MAX, board_colours, check_limits, load_once
from jaxdust.solver.bitboard import clusters, count_colours, now, popcount, remove_in_place

ROOT_PLIES = 6


@numba.njit(cache=True)
def _values_left(planes, geometry):
    """Distinct values on the board, counting empty as one once a cell is empty."""
    colours = count_colours(planes)
    cells = 0
    for c in range(planes.shape[0]):
        cells += popcount(planes[c])
    return colours + (1 if cells < geometry.width * geometry.height else 0)


@numba.njit(cache=True)
def _order(planes, geometry, masks, colours, count, depth, keys, scratch, scratch_masks,
           scratch_colours, scratch_groups):
    for i in range(count):
        keys[i] = -popcount(masks[i])
        if depth < ROOT_PLIES:
            scratch[:] = planes
            remove_in_place(scratch, masks[i], geometry)
            follow = clusters(scratch, geometry, scratch_masks, scratch_colours, scratch_groups)
            largest = 0
            for j in range(follow):
                largest = max(largest, popcount(scratch_masks[j]))
            keys[i] -= largest
    order = np.argsort(keys[:count], kind="mergesort")
    masks[:count] = masks[:count][order]


@numba.njit(cache=True)
def depth_first_search(root, geometry, node_limit, deadline, best_path):
    """Returns ``(best_length, nodes)``; the best clicks' masks are in ``best_path``.

    ``best_length`` is ``-1`` if no solution was found before a limit.
    """
    num_colours = root.shape[0]
    max_depth = geometry.width * geometry.height
    boards = np.empty((max_depth + 1, num_colours), np.uint64)
    masks = np.empty((max_depth + 1, 64), np.uint64)
    colours = np.empty(64, np.int64)
    groups = np.empty(num_colours + 1, np.int64)
    keys = np.empty(64, np.int64)
    scratch = np.empty(num_colours, np.uint64)
    scratch_masks = np.empty(64, np.uint64)
    scratch_colours = np.empty(64, np.int64)
    scratch_groups = np.empty(num_colours + 1, np.int64)
    move_count = np.zeros(max_depth + 1, np.int64)
    next_move = np.zeros(max_depth + 1, np.int64)

    # The bound below overshoots by up to one click, so a first solution of one click a
    # cell (every cell its own colour) passes only under a best of two clicks more.
    best = max_depth + 2
    nodes = 0
    boards[0] = root
    move_count[0] = clusters(root, geometry, masks[0], colours, groups)
    _order(root, geometry, masks[0], colours, move_count[0], 0, keys, scratch,
           scratch_masks, scratch_colours, scratch_groups)
    depth = 0
    while depth >= 0:
        index = next_move[depth]
        if index == move_count[depth]:
            depth -= 1
            continue
        if nodes >= node_limit > 0:  # before the child is made: the limit's last position is searched
            break
        next_move[depth] = index + 1
        child = boards[depth + 1]
        child[:] = boards[depth]
        remove_in_place(child, masks[depth, index], geometry)
        nodes += 1
        if (nodes & 0x3FFF) == 0 and deadline > 0.0 and now() > deadline:
            break
        if count_colours(child) == 0:
            if depth + 1 < best:
                best = depth + 1
                for d in range(depth + 1):
                    best_path[d] = masks[d, next_move[d] - 1]
            continue
        if _values_left(child, geometry) + depth + 1 < best:
            depth += 1
            move_count[depth] = clusters(child, geometry, masks[depth], colours, groups)
            _order(child, geometry, masks[depth], colours, move_count[depth], depth, keys,
                   scratch, scratch_masks, scratch_colours, scratch_groups)
            next_move[depth] = 0
    return (best if best <= max_depth else -1), nodes


@bitboard.interrupts_as_such
def solve_dfs(board, time_limit: float | None = 15.0, node_limit: int | None = None,
              colors: int | None = None) -> list[tuple[int, int]]:
    """The original post's search: the best clicks ``[(x, y), ...]`` found within the limits.

    Raises ``TimeoutError`` if no solution was found at all (only with tiny limits), and
    ValueError for a limit or ``colors`` it cannot take, as ``solve`` does.
    """
    time_limit = check_limits(time_limit, node_limit, colors)
    _load_compiled_code()  # before the clock starts: a cold cache's compiling would eat the limit
    cells = board_array(board)
    width, height = cells.shape
    if not cells.any():
        return []
    planes = bitboard.to_planes(cells, board_colours(cells, colors))
    geometry = bitboard.make_geometry(width, height)
    deadline = bitboard.deadline(time_limit, time.perf_counter())
    path = np.zeros(width * height, np.uint64)
    length, _ = depth_first_search(planes, geometry, min(int(node_limit or 0), COUNT_MAX), deadline, path)
    if length < 0:
        raise TimeoutError("the depth-first search found no solution within its limits")
    return bitboard.path_clicks(path, length, height)


def _load_compiled_code() -> None:
    """Compile (or load from numba's cache) the search once per process, as ``solve`` does
    its own, so that ``time_limit`` is spent searching."""
    def first_call() -> None:
        planes = bitboard.to_planes(np.array([[1, 2], [1, 2]], np.int8), 2)
        depth_first_search(planes, bitboard.make_geometry(2, 2), 10, 0.0, np.zeros(4, np.uint64))

    load_once("the depth-first search", "5-15 s", first_call)
