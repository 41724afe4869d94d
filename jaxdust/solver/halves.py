"""A lower bound from each half of the board played on its own (numba).

No cell ever changes half, and a half contracts by its own cells alone, so the clicks
that remove cells of the left half play, on that half, a game of their own: each removes
one cluster of the half, or, when it spans the centre, a union of same-coloured clusters
of the half that all touch its centre column (they join through the other half). The
*relaxed half game* allows exactly those moves, any union of centre-touching clusters of
one colour included, so the clicks that touch the left half are at least the half's
relaxed value ``v_left``. A colour found only in the right half needs a click that does
not touch the left half, so a position needs at least

    max(v_left + colours only in the right, v_right + colours only in the left)

clicks. Half positions repeat far more often than whole ones, and the relaxed values are
found by a small IDA* of their own, kept in a table of the same format as the whole
positions' (``jaxdust.solver.table``): its byte holds ``2 * value + 1`` for an exact value
and ``2 * bound`` for a lower bound, so the larger entry is always the stronger fact.
"""

from __future__ import annotations

import numba
import numpy as np

from jaxdust.solver.bitboard import (
    U64,
    ZERO,
    clusters,
    count_colours,
    flood,
    grow,
    lowest_bit,
    mix,
    now,
    occupied,
    removal_reach,
    remove_in_place,
)
from jaxdust.solver.table import table_bound, table_store

FOUND, EXHAUSTED, OUT_OF_TIME = 0, 1, 2  # as in jaxdust.solver.ida

# A half of at most 35 cells (9x7 boards) has at most 35 clusters; with at most 8 cells on
# its centre column (applies() below) the unions of 2+ centre-touching clusters of one
# colour number at most 11 per colour, 22 in all.
MAX_MOVES = 64
_HALF_SALT = U64(0x632BE59BD9B4E019)  # a per-colour salt, as in ida.position_key


@numba.njit(cache=True, inline="always")
def half_key(half):
    """Absent colours add nothing, as in ``ida.position_key``: the key does not depend on
    the number of planes, so a table shared by solves with different colour counts hits."""
    key = ZERO
    for c in range(half.shape[0]):
        if half[c]:
            key += mix(half[c] ^ (U64(c + 1) * _HALF_SALT))
    return key


@numba.njit(cache=True, inline="always")
def centre_column(side, geometry):
    return geometry.column[geometry.width // 2 - 1 + side]


@numba.njit(cache=True, inline="always")
def _finishable(plane, centre, geometry):
    """One relaxed click can remove the whole colour: one cluster, or all on the centre."""
    return (flood(lowest_bit(plane), plane, geometry) == plane
            or flood(plane & centre, plane, geometry) == plane)


@numba.njit(cache=True, inline="always")
def relaxed_colour_bound(half, centre, geometry):
    """Colours in the half, plus one when no colour can go in one relaxed click."""
    colours = 0
    finishable = False
    for c in range(half.shape[0]):
        if half[c]:
            colours += 1
            finishable = finishable or _finishable(half[c], centre, geometry)
    return colours if finishable or colours == 0 else colours + 1


@numba.njit(cache=True, inline="always")
def _finishing_moves(half, centre, geometry, moves):
    count = 0
    for c in range(half.shape[0]):
        if half[c] and _finishable(half[c], centre, geometry):
            moves[count] = half[c]
            count += 1
    return count


@numba.njit(cache=True, inline="always")
def _relaxed_moves(half, centre, geometry, moves, move_colours, group_start):
    """Every cluster (as ``bitboard.clusters`` groups them), then every union of two or more
    centre-touching clusters of one colour; returns the count."""
    count = clusters(half, geometry, moves, move_colours, group_start)
    for c in range(half.shape[0]):
        first, size = group_start[c], group_start[c + 1] - group_start[c]
        touching = 0  # bit j: cluster first + j touches the centre
        for j in range(size):
            if moves[first + j] & centre:
                touching |= 1 << j
        subset = touching
        while subset:  # the subsets of ``touching`` with two or more members
            if subset & (subset - 1):
                union = ZERO
                for j in range(size):
                    if (subset >> j) & 1:
                        union |= moves[first + j]
                moves[count] = union
                move_colours[count] = c
                count += 1
            subset = (subset - 1) & touching
    return count


@numba.njit(cache=True, inline="always")
def _may_leave_finishable(move, colour, reach, moves, group_start, centre, geometry):
    """False when no colour can be finishable after ``move`` (removed with this ``reach``),
    given that none is now: a cluster neither in nor next to the reach keeps its cells and
    neighbours, so off the centre it stays apart from the rest of its colour."""
    touched = grow(reach, geometry)
    for c in range(group_start.shape[0] - 1):
        left_after = 0
        stranded = False
        for j in range(group_start[c], group_start[c + 1]):
            cluster = moves[j]
            if c == colour and cluster & move:
                continue  # removed by the move
            left_after += 1
            stranded |= not (cluster & touched) and not (cluster & centre)
        if left_after and (left_after == 1 or not stranded):
            return True
    return False


@numba.njit(cache=True)
def _relaxed_search(root, root_key, root_bound, centre, geometry, budget, table, scratch, deadline, work_limit):
    """FOUND when the relaxed half game ``root`` (its key and ``relaxed_colour_bound``
    given) can be cleared in ``budget`` clicks; EXHAUSTED when not (the table then holds the
    proof, ``2 * bound`` entries); OUT_OF_TIME once ``now() > deadline`` (``deadline <= 0``:
    no limit) or ``work[0]`` reaches ``work_limit`` (``<= 0``: none), checked every 1024
    positions entered, counted in ``work[0]`` across calls."""
    boards, moves, move_colours, group_start, keys, state, work = scratch
    move_count, next_move, bounds, filtered = state[0], state[1], state[2], state[3]
    boards[0] = root
    keys[0] = root_key
    bounds[0] = root_bound
    depth = 0
    while True:
        # Enter the node at ``depth`` (its bound and table entry were checked by the caller).
        work[0] += 1
        if (work[0] & 0x3FF) == 0 and ((deadline > 0.0 and now() > deadline)
                                       or (work_limit > 0 and work[0] >= work_limit)):
            return OUT_OF_TIME
        remaining = budget - depth
        node = boards[depth]
        colours = count_colours(node)
        if remaining == colours:
            move_count[depth] = _finishing_moves(node, centre, geometry, moves[depth])
        else:
            move_count[depth] = _relaxed_moves(node, centre, geometry, moves[depth],
                                               move_colours[depth], group_start[depth])
        # With one spare click and no colour finishable, the first click must make one so.
        filtered[depth] = remaining == colours + 1 and bounds[depth] > colours
        next_move[depth] = 0
        while True:
            index = next_move[depth]
            if index == move_count[depth]:
                table_store(table, keys[depth], np.int64(2 * (budget - depth + 1)))
                if depth == 0:
                    return EXHAUSTED
                depth -= 1
                continue
            next_move[depth] = index + 1
            move = moves[depth, index]
            parent = boards[depth]
            if filtered[depth] and not _may_leave_finishable(
                    move, move_colours[depth, index], removal_reach(move, occupied(parent), geometry),
                    moves[depth], group_start[depth], centre, geometry):
                continue
            child = boards[depth + 1]
            child[:] = parent
            remove_in_place(child, move, geometry)
            bound = relaxed_colour_bound(child, centre, geometry)
            if bound == 0:
                return FOUND
            left = budget - depth - 1
            if bound > left:
                continue
            key = half_key(child)
            entry = table_bound(table, key)
            if entry & 1 and entry >> 1 <= left:
                return FOUND
            if entry >> 1 > left:
                continue
            depth += 1
            keys[depth] = key
            bounds[depth] = bound
            break


@numba.njit(cache=True)
def _solve_half(half, side, geometry, cap, table, key, known, scratch, deadline, work_limit):
    centre = centre_column(side, geometry)
    colour_bound = relaxed_colour_bound(half, centre, geometry)
    if colour_bound == 0:
        return 0  # an empty half
    bound = max(colour_bound, known)
    while bound < cap:
        status = _relaxed_search(half, key, colour_bound, centre, geometry, bound, table, scratch, deadline,
                                 work_limit)
        if status == OUT_OF_TIME:
            return -1
        if status == FOUND:
            table_store(table, key, np.int64(2 * bound + 1))
            return bound
        bound += 1
    table_store(table, key, np.int64(2 * bound))
    return bound


@numba.njit(cache=True, inline="always")
def half_value(planes, side, geometry, cap, table, scratch, deadline=0.0, work_limit=0):
    """The relaxed game of half ``side`` (0 left, 1 right) of ``planes``: its value, or a
    lower bound ``>= cap`` when that is larger; -1 when ``now()`` passed ``deadline``
    (``<= 0``: none) first, or the half positions searched so far (``scratch``'s counter)
    reached ``work_limit`` (``<= 0``: none). Searches only as far as ``cap`` needs; ``table`` keeps what it
    finds; ``scratch`` comes from ``make_scratch``."""
    half = scratch[0][scratch[0].shape[0] - 1]
    for c in range(planes.shape[0]):
        half[c] = planes[c] & geometry.half[side]
    key = half_key(half)
    entry = table_bound(table, key)
    if entry & 1 or entry >> 1 >= cap:
        return entry >> 1
    return _solve_half(half, side, geometry, cap, table, key, entry >> 1, scratch, deadline, work_limit)


@numba.njit(cache=True, inline="always")
def colours_only(planes, geometry):
    """``(colours only in the left half, colours only in the right half)``."""
    only_left = only_right = 0
    for c in range(planes.shape[0]):
        in_left = planes[c] & geometry.half[0] != 0
        in_right = planes[c] & geometry.half[1] != 0
        only_left += in_left and not in_right
        only_right += in_right and not in_left
    return only_left, only_right


@numba.njit(cache=True, inline="always")
def applies(geometry):
    """Whether the bound is used: two halves, and columns short enough that the unions
    of centre-touching clusters stay few (at most 11 per colour)."""
    return geometry.width >= 2 and geometry.height <= 8


def make_scratch(num_colours: int, width: int, height: int):
    """Work arrays for ``half_value``: per depth the boards, moves and their colours, groups,
    keys, and move counts, next moves, bounds and filter flags; and a counter of the positions searched."""
    depth = (width - width // 2) * height + 2  # the larger half's cells bound its value
    return (np.empty((depth + 1, num_colours), np.uint64), np.empty((depth, MAX_MOVES), np.uint64),
            np.empty((depth, MAX_MOVES), np.int64), np.empty((depth, num_colours + 1), np.int64),
            np.empty(depth, np.uint64), np.empty((4, depth), np.int64), np.zeros(1, np.int64))
