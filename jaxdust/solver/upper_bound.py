"""A fast beam search on bitboards (numba): the exact solver's first upper bound, and the
labeller of beam data sets.

It scores positions with the hand-made heuristic (``jaxdust.search.heuristic``), computed
here on bit planes, the rule set's feature included where its weights have one (under
``former``, the extra column runs); ``jaxdust.search.beam`` is the JAX beam for batches and
learned scorers.
"""

from __future__ import annotations

import numba
import numpy as np

from jaxdust.core.game import is_integer
from jaxdust.search.heuristic import FEATURES, SCORE_STEP, heuristic_weights
from jaxdust.solver.bitboard import (
    clusters,
    count_colours,
    make_geometry,
    now,
    path_clicks,
    popcount,
    remove_in_place,
    to_planes,
)
from jaxdust.solver.ida import column_runs, position_key


@numba.njit(cache=True)
def board_features(planes, geometry, masks, colours, group_start, out):
    """Write FEATURES of a position into ``out`` (float64 [5]); scratch arrays as in clusters."""
    num_clusters = clusters(planes, geometry, masks, colours, group_start)
    num_colours = 0
    has_single = False
    cells = 0
    for c in range(planes.shape[0]):
        count = group_start[c + 1] - group_start[c]
        if count:
            num_colours += 1
            has_single |= count == 1
        cells += popcount(planes[c])
    largest = 0
    for j in range(num_clusters):
        largest = max(largest, popcount(masks[j]))
    out[0] = num_colours
    out[1] = num_clusters - num_colours
    out[2] = 1.0 if (num_colours and not has_single) else 0.0
    out[3] = cells
    out[4] = largest


@numba.njit(cache=True, inline="always")
def _rule_feature(planes, geometry, weights, features):
    """Where ``weights`` has a sixth weight, ``features[5]``: the column runs beyond one a
    colour (``heuristic.extra_column_runs``; ``features[0]`` holds the colours)."""
    if weights.shape[0] > len(FEATURES):
        features[len(FEATURES)] = column_runs(planes, geometry)[0] - features[0]


@numba.njit(cache=True, inline="always")
def _score(weights, features):
    """``weights . features`` rounded to ``SCORE_STEP``, as ``heuristic.linear_scorer``."""
    return np.floor(np.dot(weights, features) / SCORE_STEP + 0.5) * SCORE_STEP


@numba.njit(cache=True)
def _lookahead_score(child, geometry, weights, masks, colours, group_start, scratch_masks,
                     scratch_colours, features, grandchild):
    """One plus the best heuristic score among ``child``'s children (1 if one is empty):
    an estimate of clicks left that sees the next click's effect exactly."""
    count = clusters(child, geometry, masks, colours, group_start)
    best = np.inf
    for j in range(count):
        grandchild[:] = child
        remove_in_place(grandchild, masks[j], geometry)
        if count_colours(grandchild) == 0:
            return 1.0
        board_features(grandchild, geometry, scratch_masks, scratch_colours, group_start, features)
        _rule_feature(grandchild, geometry, weights, features)
        best = min(best, _score(weights, features))
    return 1.0 + best


@numba.njit(cache=True)
def _past_deadline(deadline, width):
    """Whether a beam ``width`` wide should narrow to one: its ``deadline`` (0: none) has passed."""
    return deadline > 0.0 and width > 1 and now() > deadline


@numba.njit(cache=True)
def beam_upper_bound(root, geometry, width, weights, path, shortlist=0, deadline=0.0):
    """A quick upper bound: keep the ``width`` best distinct positions per click, scored
    by ``weights`` over FEATURES (``heuristic.heuristic_weights``: a sixth weight adds the
    rule feature). Writes the clicks' cluster masks into ``path`` and
    returns the solution length.

    ``shortlist > 0`` rescores the ``shortlist * width`` best children with a one-click
    lookahead (``_lookahead_score``) before keeping ``width``: about 3x the time of the
    plain search at ``shortlist=4``, and shorter solutions (see benchmarks/beam.py).

    ``deadline > 0``: the ``bitboard.now()`` past which the rest is played at width 1 (a
    solution still, in moments: unbounded, a 0.2 s limit took 5.5 s at width 65,536 on a
    7x9x4 Former board); the clock is read once a click and every 1,024 parents expanded,
    positions scored or positions rescored by the lookahead, where a Ctrl-C is met too.
    0: no clock read.
    """
    if width < 1:  # no row to hold the root: writes past the arrays' ends
        raise ValueError("beam_upper_bound: the width must be at least 1")
    num_colours = root.shape[0]
    max_depth = geometry.width * geometry.height
    capacity = width * 64
    states = np.empty((width, num_colours), np.uint64)
    states[0] = root
    alive = 1
    parents = np.empty((max_depth, width), np.int64)
    moves = np.empty((max_depth, width), np.uint64)
    candidates = np.empty((capacity, num_colours), np.uint64)
    scores = np.empty(capacity, np.float64)
    keys = np.empty(capacity, np.uint64)
    candidate_parent = np.empty(capacity, np.int64)
    candidate_move = np.empty(capacity, np.uint64)
    masks = np.empty(64, np.uint64)
    colours = np.empty(64, np.int64)
    group_start = np.empty(num_colours + 1, np.int64)
    scratch_masks = np.empty(64, np.uint64)
    scratch_colours = np.empty(64, np.int64)
    lookahead_masks = np.empty(64, np.uint64)
    lookahead_colours = np.empty(64, np.int64)
    grandchild = np.empty(num_colours, np.uint64)
    features = np.empty(weights.shape[0], np.float64)
    for depth in range(max_depth):
        if _past_deadline(deadline, width):
            width = alive = 1  # the best position kept (the first) goes on alone
        count = 0
        for i in range(alive):
            if i % 1024 == 1023 and _past_deadline(deadline, width):
                width = 1  # a wide click's children take seconds: those of the first parents do
                break
            moves_here = clusters(states[i], geometry, masks, colours, group_start)
            for j in range(moves_here):
                child = candidates[count]
                child[:] = states[i]
                remove_in_place(child, masks[j], geometry)
                if count_colours(child) == 0:
                    path[depth] = masks[j]
                    parent = i
                    for d in range(depth - 1, -1, -1):
                        path[d] = moves[d, parent]
                        parent = parents[d, parent]
                    return depth + 1
                keys[count] = position_key(child, geometry)
                candidate_parent[count] = i
                candidate_move[count] = masks[j]
                count += 1
        # Distinct positions only (equal keys are adjacent once sorted by key), then the
        # best scores first; the key order breaks ties, so the result is deterministic.
        by_key = np.argsort(keys[:count], kind="mergesort")
        distinct = np.ones(count, np.bool_)
        for k in range(1, count):
            distinct[k] = keys[by_key[k]] != keys[by_key[k - 1]]
        order = by_key[distinct]
        scored = 0
        for position in order:
            if scored % 1024 == 1023 and _past_deadline(deadline, width):
                width = 1  # the most of a wide click's time: the best of those scored goes on
                break
            board_features(candidates[position], geometry, scratch_masks, scratch_colours, group_start, features)
            _rule_feature(candidates[position], geometry, weights, features)
            scores[position] = _score(weights, features)
            scored += 1
        order = order[:scored]
        order = order[np.argsort(scores[order], kind="mergesort")]
        if shortlist > 0:
            order = order[: shortlist * width]
            rescored = 0
            for position in order:
                if rescored % 1024 == 1023 and _past_deadline(deadline, width):
                    width = 1  # a full shortlist takes seconds; lookahead scores rank only each other
                    break
                scores[position] = _lookahead_score(
                    candidates[position], geometry, weights, lookahead_masks, lookahead_colours,
                    group_start, scratch_masks, scratch_colours, features, grandchild,
                )
                rescored += 1
            order = order[:rescored]
            order = order[np.argsort(scores[order], kind="mergesort")]
        kept = 0
        for position in order:
            parents[depth, kept] = candidate_parent[position]
            moves[depth, kept] = candidate_move[position]
            states[kept] = candidates[position]
            kept += 1
            if kept == width:
                break
        alive = kept
    return -1


def beam_bytes(width: int, cells: int, colours: int) -> int:
    """What ``beam_upper_bound`` allocates at ``width`` on a board of ``cells`` cells and
    ``colours`` colours: the kept positions, a parent and a move per kept position and
    click, and 64 candidates per kept position with their scores, keys and origins."""
    return 8 * width * (colours + 2 * cells + 64 * (colours + 4))


def beam_clicks(board: np.ndarray, width: int, colors: int, shortlist: int = 0,
                rules: str = "dust") -> list[tuple[int, int]]:
    """The solution ``[(x, y), ...]`` that ``beam_upper_bound`` finds with the heuristic of
    ``rules`` for one int board ``[W, H]`` of ``colors`` colours (none for an empty board)."""
    if not is_integer(width) or width < 1:
        raise ValueError(f"beam_clicks: width must be a positive integer, got {width!r}")
    if not is_integer(shortlist) or shortlist < 0:
        raise ValueError(f"beam_clicks: shortlist must be a non-negative integer, got {shortlist!r}")
    if not np.any(board):
        return []
    board_width, height = board.shape
    path = np.zeros(board_width * height, np.uint64)
    length = beam_upper_bound(to_planes(board, colors), make_geometry(board_width, height, rules), width,
                              heuristic_weights(rules), path, shortlist)
    return path_clicks(path, length, height)
