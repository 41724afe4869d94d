"""Provably shortest solutions: IDA* on bitboards with a transposition table (numba).

The search deepens a click budget ``t`` from an admissible lower bound. Each failed
iteration proves that no solution of ``t`` clicks exists and raises the bound; the first
iteration that finds a solution has found a shortest one.

Lower bound of a position: the number of colours left, plus one when no colour is a
single cluster (then the next click cannot finish a colour, so it leaves every colour on
the board). A move that removes the last cells of its colour lowers the colour count;
every other move leaves it, which prunes most moves before they are played when the budget
is tight. Where the budget leaves spare clicks, the bound from each half of the board
played on its own (``jaxdust.solver.halves``) is stronger: it prunes a position, and, at a node,
every move within one half when the other half alone needs too many clicks. Under gravity
alone (the ``former`` rules) columns never move, so each run of adjacent columns holding a
colour needs a click of its own (``column_runs``), a much stronger bound there.

The transposition table maps the canonical hash of a position (the smaller of its hash and
its mirror image's, ``x -> width - 1 - x``, where the two play alike: not the dust game at
odd widths) to a proven lower bound on the clicks it needs. Two clicks that commute are
played in one order only (``_commutes_before``), so a node that skipped a click that way
has not searched its position whole: its refutation is stored under the key of the click
that led to it from its parent (``edge_key``) and cuts only that click. The table
compares 62 bits of 64-bit hashes, which makes a wrong cut-off from a collision vanishingly
unlikely (about 1e-18 per probe), not impossible.
"""

from __future__ import annotations

import numba
import numpy as np

from jaxdust.solver import halves
from jaxdust.solver.halves import EXHAUSTED, FOUND, OUT_OF_TIME  # noqa: F401 (solve reads them here)
from jaxdust.solver.bitboard import (
    ONE,
    U64,
    ZERO,
    clusters,
    count_colours,
    flood,
    grow,
    lowest_bit,
    mix,
    now,
    popcount,
    occupied,
    removal_reach,
    remove_in_place,
)
from jaxdust.solver.table import table_bound, table_store

_COLOUR_SALT = U64(0x9E3779B97F4A7C15)
_EDGE_SALT = U64(0xD1B54A32D192ED03)


@numba.njit(cache=True, inline="always")
def _mirror(plane, geometry):
    width, height = geometry.width, geometry.height
    column_bits = (ONE << U64(height)) - ONE
    mirrored = ZERO
    for x in range(width):
        column = (plane >> U64(x * height)) & column_bits
        mirrored |= column << U64((width - 1 - x) * height)
    return mirrored


@numba.njit(cache=True, inline="always")
def position_key(planes, geometry):
    """Hash of a position, equal for a board and its mirror image where the two play alike
    (``geometry.mirror``: not the dust game at odd widths). Absent colours add nothing, so
    the key does not depend on the number of planes (``jaxdust.search.keys`` computes the
    same key in JAX)."""
    return position_keys(planes, geometry)[0]


@numba.njit(cache=True, inline="always")
def edge_key(direct, move):
    """Key of the click ``move`` played from the position whose unmirrored hash is
    ``direct`` (``position_keys``' second value), in the table beside the positions' keys."""
    return mix(direct + mix(move ^ _EDGE_SALT))


@numba.njit(cache=True, inline="always")
def position_keys(planes, geometry):
    """``(position_key, direct)``: the key and the position's own hash (without its mirror
    image), which ``edge_key`` needs."""
    direct = ZERO
    mirrored = ZERO
    for c in range(planes.shape[0]):
        if not planes[c]:
            continue
        salt = U64(c + 1) * _COLOUR_SALT
        direct += mix(planes[c] ^ salt)
        if geometry.mirror:
            mirrored += mix(_mirror(planes[c], geometry) ^ salt)
    return (min(direct, mirrored) if geometry.mirror else direct), direct


@numba.njit(cache=True, inline="always")
def single_cluster_colours(planes, geometry):
    """Bit ``c`` set when colour ``c`` is present and forms one cluster."""
    singles = 0
    for c in range(planes.shape[0]):
        plane = planes[c]
        if plane and flood(lowest_bit(plane), plane, geometry) == plane:
            singles |= 1 << c
    return singles


@numba.njit(cache=True, inline="always")
def bound_from(colours, singles):
    """Colours left, plus one when none of them is a single cluster."""
    if colours == 0:
        return 0
    return colours if singles else colours + 1


@numba.njit(cache=True, inline="always")
def _columns_holding(plane, geometry):
    """Bit ``x`` set when column ``x`` holds a cell of ``plane``."""
    holds = 0
    for x in range(geometry.width):
        if plane & geometry.column[x]:
            holds |= 1 << x
    return holds


@numba.njit(cache=True, inline="always")
def _runs(holds):
    return popcount(U64(holds & ~(holds << 1)))


@numba.njit(cache=True, inline="always")
def column_runs(planes, geometry):
    """Under gravity alone (``not geometry.slide``): the runs of adjacent columns that hold
    each colour, summed over colours, and whether some run's cells form one cluster.

    Columns never move and a column that lacks a colour never gains it, so no group ever
    joins two runs: a click removes cells of one run only, and ends a run only when it
    removes all of them. Each run needs a click of its own, and while no run is one
    cluster the next click ends none.
    """
    runs = 0
    single = False
    for c in range(planes.shape[0]):
        plane = planes[c]
        if not plane:
            continue
        holds = _columns_holding(plane, geometry)
        runs += _runs(holds)
        x = 0
        while not single and x < geometry.width:
            if not holds >> x & 1:
                x += 1
                continue
            run = ZERO
            while x < geometry.width and holds >> x & 1:
                run |= geometry.column[x]
                x += 1
            cells = plane & run
            single = flood(lowest_bit(cells), plane, geometry) == cells
    return runs, single


@numba.njit(cache=True, inline="always")
def rule_bound(planes, geometry):
    """The bound that only rules without a slide allow (0 where rows slide): the colours'
    column runs, plus one when no run is a single cluster."""
    if geometry.slide:
        return 0
    runs, single = column_runs(planes, geometry)
    return bound_from(runs, single)


@numba.njit(cache=True, inline="always")
def _ends_a_run(plane, move, geometry):
    """Whether removing ``move`` (cells of ``plane``) leaves fewer column runs of it."""
    return _runs(_columns_holding(plane & ~move, geometry)) < _runs(_columns_holding(plane, geometry))


@numba.njit(cache=True)
def lower_bound(planes, geometry):
    """Admissible lower bound on the clicks a position needs (0 for an empty board)."""
    return max(bound_from(count_colours(planes), single_cluster_colours(planes, geometry)),
               rule_bound(planes, geometry))


@numba.njit(cache=True, inline="always")
def _child_singles(parent, child, parent_singles, candidates, geometry):
    """``single_cluster_colours(child)``, re-flooding only colours whose cells moved, given
    that no colour outside the bit mask ``candidates`` can have become a single cluster."""
    singles = 0
    for c in range(child.shape[0]):
        plane = child[c]
        if plane == parent[c]:
            singles |= parent_singles & (1 << c)
        elif candidates & (1 << c) and plane and flood(lowest_bit(plane), plane, geometry) == plane:
            singles |= 1 << c
    return singles


@numba.njit(cache=True, inline="always")
def _order_moves(planes, masks, colours, count, finishes):
    """Moves that finish a colour first, then larger clusters first (insertion sort)."""
    keys = np.empty(count, np.int64)
    for i in range(count):
        finishes[i] = masks[i] == planes[colours[i]]
        keys[i] = (0 if finishes[i] else 100) - popcount(masks[i])
    for i in range(1, count):
        j = i
        while j > 0 and keys[j - 1] > keys[j]:
            keys[j - 1], keys[j] = keys[j], keys[j - 1]
            masks[j - 1], masks[j] = masks[j], masks[j - 1]
            colours[j - 1], colours[j] = colours[j], colours[j - 1]
            finishes[j - 1], finishes[j] = finishes[j], finishes[j - 1]
            j -= 1


@numba.njit(cache=True, inline="always")
def _finishing_moves(planes, singles, masks, colours, finishes):
    """At zero slack only moves that remove a whole colour can help: one per single colour."""
    count = 0
    for c in range(planes.shape[0]):
        if singles & (1 << c):
            masks[count] = planes[c]
            colours[count] = c
            finishes[count] = True
            count += 1
    return count


@numba.njit(cache=True, inline="always")
def _commutes_before(move, move_reach, arrival_reach, arrival_grown, geometry):
    """True when ``move`` commutes with the move that led here (given by its reach and its
    grown cluster); the caller plays such a pair only in cell order (lower lowest cell first).

    Each removal changes only cells within its reach, so when the reaches are disjoint
    and neither meets the other cluster or its neighbours, both orders remove the same
    clusters and end on the same board.
    """
    return not (
        arrival_reach & (grow(move, geometry) | move_reach) or move_reach & arrival_grown
    )


@numba.njit(cache=True, inline="always")
def _sides_that_may_leave_single(groups, group_start, num_colours, geometry):
    """Bit ``s`` set when some one-half removal in side ``s`` may leave a single colour.

    A removal in one half moves and touches nothing beyond that half and the other
    half's centre column, so a colour with a cluster wholly further out stays split.
    """
    sides = 0
    for side in range(2):
        beyond = geometry.beyond_touch[side]
        for c in range(num_colours):
            first, last = group_start[c], group_start[c + 1]
            if first == last:
                continue
            reachable = True
            for j in range(first, last):
                if not (groups[j] & ~beyond):
                    reachable = False
                    break
            if reachable:
                sides |= 1 << side
                break
    return sides


@numba.njit(cache=True, inline="always")
def _colours_that_may_become_single(reach, colour, groups, group_start, planes, geometry):
    """Bit mask of the colours that may be a single cluster after a removal (of a cluster
    of ``colour``) with this ``reach``; every other colour surely is not.

    A cluster that neither lies in nor touches the reach keeps its neighbourhood, so it
    stays a separate cluster: its colour cannot become a single cluster while it has
    another cluster left. ``groups[group_start[c]:group_start[c + 1]]`` are colour ``c``'s
    clusters. Assumes no colour is a single cluster now.
    """
    touched = grow(reach, geometry)
    candidates = 0
    for c in range(planes.shape[0]):
        first, last = group_start[c], group_start[c + 1]
        if first == last:
            continue
        if c == colour and last - first == 2:
            candidates |= 1 << c  # its other cluster is left on its own
            continue
        isolated = False
        for j in range(first, last):
            if not (groups[j] & touched):
                isolated = True
                break
        if not isolated:
            candidates |= 1 << c
    return candidates


@numba.njit(cache=True)
def bounded_search(root, geometry, budget, table, half_table, scratch, deadline, path,
                   prune=True, node_limit=0, half_limit=0):
    """Depth-first search for a solution of at most ``budget`` clicks.

    Returns ``(status, nodes, length)``: ``FOUND`` with the clicks' cluster masks in
    ``path[:length]``; ``EXHAUSTED`` when none exists (the table then holds the proof);
    ``OUT_OF_TIME`` once ``time.perf_counter() > deadline`` (``deadline <= 0``: no limit) or
    ``nodes`` reaches ``node_limit`` (``<= 0``: no limit); ``nodes`` counts positions
    generated; the half-game bound's searches (``jaxdust.solver.halves``, with ``half_table`` and
    ``scratch``) come on top of them, check the deadline themselves, and stop the search
    too once their positions (``scratch``'s counter, across the calls that share it) reach
    ``half_limit`` (``<= 0``: no limit). ``prune=False``
    turns off that bound, the single-colour filter and the commuting-moves rule, leaving
    plain IDA* with the colour bound and the table (the reference the benchmark compares
    against).
    """
    num_colours = root.shape[0]
    max_moves = 64
    depth_limit = budget + 1
    boards = np.empty((depth_limit + 1, num_colours), np.uint64)
    masks = np.empty((depth_limit + 1, max_moves), np.uint64)
    colours = np.empty((depth_limit + 1, max_moves), np.int64)
    finishes = np.empty((depth_limit + 1, max_moves), np.bool_)
    move_count = np.zeros(depth_limit + 1, np.int64)
    next_move = np.zeros(depth_limit + 1, np.int64)
    colours_left = np.zeros(depth_limit + 1, np.int64)
    singles = np.zeros(depth_limit + 1, np.int64)
    hashes = np.zeros(depth_limit + 1, np.uint64)
    direct_hashes = np.zeros(depth_limit + 1, np.uint64)  # unmirrored, for edge_key
    groups = np.empty((depth_limit + 1, max_moves), np.uint64)  # clusters by colour
    group_start = np.zeros((depth_limit + 1, num_colours + 1), np.int64)
    arrivals = np.zeros(depth_limit + 1, np.uint64)  # the move that led to each depth
    arrival_reach = np.zeros(depth_limit + 1, np.uint64)
    arrival_grown = np.zeros(depth_limit + 1, np.uint64)
    # Whether a depth's node skipped a move by the commuting-moves rule: its exhaustion then
    # proves only that no solution goes on from its arrival in the order the rule keeps (the
    # skipped order is searched from the parent), a fact about that click from that parent
    # (edge_key), not about the position, which another path, its mirror image or another
    # board may reach with that move still to search.
    commuted = np.zeros(depth_limit + 1, np.bool_)
    useful_sides = np.full(depth_limit + 1, -1, np.int64)  # see _sides_that_may_leave_single
    # Half-game values (jaxdust.solver.halves) of each depth's position, 0 while unknown (an empty
    # half's 0 is then looked up again, cheaply); a move that does not touch a half leaves
    # its value. Bit s of skip_within[d]: every non-finishing move within half s is
    # hopeless, as it leaves half 1 - s as it is.
    use_halves = prune and halves.applies(geometry)
    half_values = np.zeros((depth_limit + 1, 2), np.int64)
    skip_within = np.zeros(depth_limit + 1, np.int64)
    # Without a slide, a node whose column runs (column_runs) use up its budget may play
    # only moves that end a run: any other leaves as many runs and one click fewer.
    runs_only = not geometry.slide and prune
    runs_at = np.zeros(depth_limit + 1, np.int64)

    boards[0] = root
    colours_left[0] = count_colours(root)
    singles[0] = single_cluster_colours(root, geometry)
    if max(bound_from(colours_left[0], singles[0]), rule_bound(root, geometry)) > budget:
        return EXHAUSTED, 0, 0
    hashes[0], direct_hashes[0] = position_keys(root, geometry)
    if runs_only:
        runs_at[0] = column_runs(root, geometry)[0]
    if budget == colours_left[0]:
        move_count[0] = _finishing_moves(root, singles[0], masks[0], colours[0], finishes[0])
    else:
        move_count[0] = clusters(root, geometry, masks[0], colours[0], group_start[0])
        groups[0, : move_count[0]] = masks[0, : move_count[0]]
        _order_moves(root, masks[0], colours[0], move_count[0], finishes[0])
    nodes = 0
    depth = 0
    while depth >= 0:
        remaining = budget - depth  # clicks still allowed from this node
        index = next_move[depth]
        if index == move_count[depth]:
            if commuted[depth]:
                table_store(table, edge_key(direct_hashes[depth - 1], arrivals[depth]), remaining + 1)
            else:
                table_store(table, hashes[depth], remaining + 1)
            depth -= 1
            continue
        next_move[depth] = index + 1
        finishing = finishes[depth, index]
        child_colours = colours_left[depth] - (1 if finishing else 0)
        if child_colours + 1 > remaining:
            # Moves are sorted finishing-first: every later move also leaves too many colours.
            if not finishing:
                next_move[depth] = move_count[depth]
            continue
        parent = boards[depth]
        move = masks[depth, index]
        if runs_only and runs_at[depth] >= remaining and not _ends_a_run(
                parent[colours[depth, index]], move, geometry):
            continue
        if skip_within[depth] and not finishing and (
                (skip_within[depth] & 1 and not move & geometry.half[1])
                or (skip_within[depth] & 2 and not move & geometry.half[0])):
            continue
        move_reach = ZERO
        reach_known = False
        candidates = -1  # colours the child may have as single clusters
        if prune and singles[depth] == 0 and remaining - 1 == child_colours:
            # The child would need a single-cluster colour.
            colour = colours[depth, index]
            if group_start[depth, colour + 1] - group_start[depth, colour] != 2:
                if useful_sides[depth] < 0:
                    useful_sides[depth] = _sides_that_may_leave_single(
                        groups[depth], group_start[depth], num_colours, geometry
                    )
                in_left = move & geometry.half[0] != 0
                in_right = move & geometry.half[1] != 0
                if in_left != in_right and not useful_sides[depth] & (1 if in_left else 2):
                    continue
                move_reach, reach_known = removal_reach(move, occupied(parent), geometry), True
                candidates = _colours_that_may_become_single(
                    move_reach, colour, groups[depth], group_start[depth], parent, geometry
                )
                if not candidates:
                    continue
        if prune and depth > 0 and lowest_bit(move) < lowest_bit(arrivals[depth]):
            if not reach_known:
                move_reach, reach_known = removal_reach(move, occupied(parent), geometry), True
            if _commutes_before(move, move_reach, arrival_reach[depth], arrival_grown[depth], geometry):
                commuted[depth] = True
                continue  # the same position is reached with this move played first
        child = boards[depth + 1]
        child[:] = parent
        remove_in_place(child, move, geometry)
        nodes += 1
        if nodes == node_limit or ((nodes & 0xFFFF) == 0 and deadline > 0.0 and now() > deadline):
            return OUT_OF_TIME, nodes, 0
        if child_colours == 0:
            for d in range(depth + 1):
                path[d] = masks[d, next_move[d] - 1]
            return FOUND, nodes, depth + 1
        child_singles = _child_singles(parent, child, singles[depth], candidates, geometry)
        if bound_from(child_colours, child_singles) + 1 > remaining:
            continue
        child_runs = 0
        if not geometry.slide:
            child_runs, single_run = column_runs(child, geometry)
            if bound_from(child_runs, single_run) + 1 > remaining:
                continue
        key, direct = position_keys(child, geometry)
        if table_bound(table, key) + 1 > remaining:
            continue
        # The child can skip a move by the rule only if it has cells below this move's
        # lowest; only then may its refutation be held under the edge's key.
        if prune and occupied(child) & (lowest_bit(move) - ONE) and \
                table_bound(table, edge_key(direct_hashes[depth], move)) + 1 > remaining:
            continue
        skip_within[depth + 1] = 0
        if use_halves:
            for side in range(2):
                half_values[depth + 1, side] = 0 if move & geometry.half[side] else half_values[depth, side]
            if remaining - 1 > child_colours:  # at zero slack only finishing moves are tried
                only = halves.colours_only(child, geometry)
                bound = 0
                for side in range(2):
                    # The half's value that would prove the child hopeless: it needs more
                    # than remaining - 1 clicks.
                    cap = remaining - only[1 - side]
                    if half_values[depth + 1, side] < cap:  # inlined: edit this file too when halves changes
                        value = halves.half_value(child, side, geometry, cap, half_table, scratch, deadline,
                                                  half_limit)
                        if value < 0:
                            return OUT_OF_TIME, nodes, 0
                        half_values[depth + 1, side] = value
                    bound = max(bound, half_values[depth + 1, side] + only[1 - side])
                if bound > remaining - 1:
                    table_store(table, key, bound)
                    continue
                for side in range(2):
                    if half_values[depth + 1, 1 - side] + only[side] >= remaining - 1:
                        skip_within[depth + 1] |= 1 << side
        depth += 1
        arrivals[depth] = move
        arrival_reach[depth] = move_reach if reach_known else removal_reach(move, occupied(parent), geometry)
        arrival_grown[depth] = grow(move, geometry)
        hashes[depth] = key
        direct_hashes[depth] = direct
        commuted[depth] = False
        runs_at[depth] = child_runs
        colours_left[depth] = child_colours
        singles[depth] = child_singles
        if remaining - 1 == child_colours:
            move_count[depth] = _finishing_moves(child, child_singles, masks[depth], colours[depth], finishes[depth])
        else:
            count = clusters(child, geometry, masks[depth], colours[depth], group_start[depth])
            move_count[depth] = count
            groups[depth, :count] = masks[depth, :count]
            if child_singles:
                _order_moves(child, masks[depth], colours[depth], count, finishes[depth])
            else:  # nothing can finish a colour, and order does not change a refutation
                finishes[depth, :count] = False
        next_move[depth] = 0
        useful_sides[depth] = -1
    return EXHAUSTED, nodes, 0
