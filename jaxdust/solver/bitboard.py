"""The rules on 64-bit bitboards, compiled with numba, for CPU tree search.

A board of at most 64 cells is ``planes``: uint64 ``[colors]``, bit ``x * height + y`` of
``planes[c]`` set where cell ``(x, y)`` holds colour ``c + 1`` (the flat action index of
``jaxdust.core.game``). Geometry lives in ``Geometry``, a tuple of masks built once per board
size. Every function here is ``numba.njit``; they allocate nothing on the hot path. The
search's helpers are ``inline="always"``: a call copies every field of ``geometry`` onto the
stack, which costs a good part of what a small helper does.

JAX cannot express the deep, data-dependent recursion of exact search; numba compiles
these loops to machine code instead (see README: dependencies).
"""

from __future__ import annotations

import functools
import time
from typing import Any, Callable, NamedTuple, TypeVar, cast

import numba
import numpy as np

from jaxdust.core.game import mirror_symmetric, require_click_rules, rules_of

MAX_CELLS = 64
U64 = np.uint64
ONE = U64(1)
ZERO = U64(0)


class Geometry(NamedTuple):
    """Masks of one board size and whether rows slide (numba receives it as a tuple)."""

    width: int
    height: int
    slide: bool  # the dust game's centre slide follows gravity; False: gravity alone (former)
    mirror: bool  # a board and its mirror image play alike (game.mirror_symmetric): one key for both
    full: np.uint64  # all cells
    not_bottom: np.uint64  # every cell but row 0
    not_top: np.uint64  # every cell but row height - 1
    column: np.ndarray  # uint64 [W], the cells of column x
    from_row: np.ndarray  # uint64 [H], the cells of rows y and up
    outward_row: np.ndarray  # uint64 [W, H], row y from column x outward, within x's half
    half: np.ndarray  # uint64 [2], the cells of the left and the right half
    beyond_touch: np.ndarray  # uint64 [2], cells no removal in that half can move or touch


def make_geometry(width: int, height: int, rules: str = "dust") -> Geometry:
    """Masks for ``width x height`` boards under ``rules``: the click objectives, whose
    every group may be removed (``game.CLICK_RULES``)."""
    if width * height > MAX_CELLS:
        raise ValueError(f"bitboards hold at most {MAX_CELLS} cells, got {width}x{height}")
    require_click_rules(rules, "the exact solver")
    cells = width * height
    full = (1 << cells) - 1
    column = np.array([((1 << height) - 1) << (x * height) for x in range(width)], np.uint64)
    row = [sum(1 << (x * height + y) for x in range(width)) for y in range(height)]
    from_row = np.array([sum(row[y:]) for y in range(height)], np.uint64)
    half = width // 2
    left_cells = sum(((1 << height) - 1) << (x * height) for x in range(half))
    outward_row = np.zeros((width, height), np.uint64)
    for x in range(width):
        outward = range(0, x + 1) if x < half else range(x, width)
        for y in range(height):
            outward_row[x, y] = sum(1 << (ox * height + y) for ox in outward)
    return Geometry(
        width, height, rules_of(rules).sideways == "centre", mirror_symmetric(rules, width), U64(full),
        U64(full & ~row[0]), U64(full & ~row[height - 1]),
        column, from_row, outward_row,
        np.array([left_cells, full & ~left_cells], np.uint64),
        np.array([sum(int(column[x]) for x in range(half + 1, width)),
                  sum(int(column[x]) for x in range(0, half - 1))], np.uint64),
    )


def to_planes(board: np.ndarray, colors: int) -> np.ndarray:
    """int board ``[W, H]`` of colours 0 (empty) to ``colors`` -> uint64 ``[colors]``;
    ValueError past ``MAX_CELLS`` cells or for a colour outside that range."""
    board = np.asarray(board)
    if board.size > MAX_CELLS:
        raise ValueError(f"bitboards hold at most {MAX_CELLS} cells, got {'x'.join(map(str, board.shape))}")
    flat = board.reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() > colors):
        raise ValueError(f"a board of colours 0 to {colors} holds {flat.min() if flat.min() < 0 else flat.max()}")
    cells = np.left_shift(ONE, np.arange(flat.size, dtype=np.uint64))
    of_colour = flat[None, :] == np.arange(1, colors + 1)[:, None]
    return np.bitwise_or.reduce(np.where(of_colour, cells[None, :], ZERO), axis=1)


def to_board(planes: np.ndarray, width: int, height: int) -> np.ndarray:
    """uint64 ``[colors]`` -> int8 board ``[W, H]`` (a cell in two planes takes the later's colour)."""
    planes = np.asarray(planes, np.uint64)
    bits = (planes[:, None] >> np.arange(width * height, dtype=np.uint64)) & ONE
    colours = np.arange(1, len(planes) + 1, dtype=np.int8)[:, None]
    return np.max(bits.astype(np.int8) * colours, axis=0, initial=0).reshape(width, height)


def path_clicks(path: np.ndarray, length: int, height: int) -> list[tuple[int, int]]:
    """The first ``length`` cluster masks of a search's ``path`` as clicks ``[(x, y), ...]``,
    each on the cluster's cell with the smallest ``x * height + y``."""
    # In Python: a numba function called from Python takes an int64, which the top cell's
    # bit (2^63) of a 64-cell board overflows.
    cells = [(int(mask) & -int(mask)).bit_length() - 1 for mask in path[:length]]
    return [divmod(cell, height) for cell in cells]


MIX_1 = U64(0xBF58476D1CE4E5B9)
MIX_2 = U64(0x94D049BB133111EB)


@numba.njit(cache=True, inline="always")
def mix(value):
    """splitmix64's finaliser: a bijection of uint64 with good avalanche."""
    value = (value ^ (value >> U64(30))) * MIX_1
    value = (value ^ (value >> U64(27))) * MIX_2
    return value ^ (value >> U64(31))


@numba.njit(cache=True)
def now():
    """``time.perf_counter()`` inside compiled code (the searches' deadlines). A Ctrl-C is
    met here, in numba's object mode, which hands it on as a SystemError caused by it
    (``interrupts_as_such``)."""
    with numba.objmode(value="float64"):
        value = time.perf_counter()
    return value


NO_LIMIT_SECONDS = 1e12  # a deadline no search reaches


def deadline(time_limit: float | None, start: float) -> float:
    """The ``now()`` a search stops at: ``start + time_limit``. Without a limit, one no
    search reaches rather than none, so that the search still reads its clock: compiled
    code meets a Ctrl-C only there, in numba's object mode."""
    return start + (NO_LIMIT_SECONDS if time_limit is None else time_limit)


_Search = TypeVar("_Search", bound=Callable[..., Any])


def interrupts_as_such(search: _Search) -> _Search:
    """``search`` (a function running compiled searches with a deadline) raising a Ctrl-C
    that met its clock as the KeyboardInterrupt it is, not numba's SystemError (a
    notebook's interrupt, a command's one-line stop)."""
    @functools.wraps(search)
    def searched(*args, **kwargs):
        try:
            return search(*args, **kwargs)
        except SystemError as error:
            if isinstance(error.__cause__, KeyboardInterrupt):
                raise error.__cause__ from None
            raise
    return cast(_Search, searched)


@numba.njit(cache=True, inline="always")
def popcount(value):
    value = value - ((value >> U64(1)) & U64(0x5555555555555555))
    value = (value & U64(0x3333333333333333)) + ((value >> U64(2)) & U64(0x3333333333333333))
    value = (value + (value >> U64(4))) & U64(0x0F0F0F0F0F0F0F0F)
    return int((value * U64(0x0101010101010101)) >> U64(56))


@numba.njit(cache=True, inline="always")
def lowest_bit(value):
    """The lowest set bit as a mask: ``0b0110 -> 0b0010``."""
    return value & (~value + ONE)


@numba.njit(cache=True, inline="always")
def flood(seed, allowed, geometry):
    """Cells of ``allowed`` 4-connected to ``seed`` within ``allowed``."""
    height = U64(geometry.height)
    current = seed & allowed
    while True:
        grown = (
            current
            | ((current << ONE) & geometry.not_bottom)
            | ((current >> ONE) & geometry.not_top)
            | (current << height)
            | (current >> height)
        ) & allowed
        if grown == current:
            return current
        current = grown


@numba.njit(cache=True, inline="always")
def grow(cells, geometry):
    """``cells`` and their 4-neighbours."""
    height = U64(geometry.height)
    return (
        cells
        | ((cells << ONE) & geometry.not_bottom)
        | ((cells >> ONE) & geometry.not_top)
        | (cells << height)
        | (cells >> height)
    ) & geometry.full


@numba.njit(cache=True, inline="always")
def removal_reach(removed, occupied, geometry):
    """Cells whose content may change when ``removed`` is cleared from a settled board
    with cells ``occupied`` and the board contracts.

    Gravity moves only cells above the lowest removed cell of a column; a column of height
    ``h`` that loses ``k`` cells opens gaps in rows ``h - k .. h - 1`` only, and a row slide
    (``geometry.slide``) moves only cells outward of its gap.
    """
    reach = ZERO
    for x in range(geometry.width):
        column = geometry.column[x]
        gone = removed & column
        if not gone:
            continue
        reach |= column & ~(lowest_bit(gone) - ONE)
        if not geometry.slide:
            continue
        top = popcount(occupied & column)
        for y in range(top - popcount(gone), top):
            reach |= geometry.outward_row[x, y]
    return reach


@numba.njit(cache=True, inline="always")
def count_colours(planes):
    colours = 0
    for c in range(planes.shape[0]):
        if planes[c]:
            colours += 1
    return colours


@numba.njit(cache=True, inline="always")
def clusters(planes, geometry, masks, colours, group_start):
    """Write every cluster's mask and colour index into ``masks``/``colours``, grouped by
    colour (colour ``c``'s from ``group_start[c]`` to ``group_start[c + 1]``); return count."""
    count = 0
    for c in range(planes.shape[0]):
        group_start[c] = count
        rest = planes[c]
        while rest:
            cluster = flood(lowest_bit(rest), planes[c], geometry)
            masks[count] = cluster
            colours[count] = c
            count += 1
            rest &= ~cluster
    group_start[planes.shape[0]] = count
    return count


@numba.njit(cache=True, inline="always")
def occupied(planes):
    cells = ZERO
    for plane in planes:
        cells |= plane
    return cells


@numba.njit(cache=True, inline="always")
def _bit_length(n):
    """Bits needed to write ``n >= 0``: ``5 -> 3``."""
    length = 0
    while n >> length:
        length += 1
    return length


@numba.njit(cache=True, inline="always")
def remove_in_place(planes, removed, geometry):
    """Remove the cells of ``removed`` from ``planes`` (uint64 ``[colors]``, in place), then
    contract: gravity, and the centre slide where ``geometry.slide``. The board must be
    contracted already, as every position of a game is.

    Both steps move each remaining cell toward its place by a distance ``d``: gravity by
    the removed cells below it in its column, the slide by the empty cells between it and
    the centre in its half-row. Neither changes the order of the cells it moves, so each
    is a bit compress (Hacker's Delight, 7-4): stage ``k`` moves the cells whose ``d`` has
    bit ``k`` set by ``2**k`` steps. The stage masks depend only on which cells are
    occupied, so all colours share them, and the only branches are the stage counts.

    On a contracted board no cell drops further than the number ``n`` of cells removed,
    and a half-row gets no more gaps than the number of columns that lost cells, so each
    kind needs at most ``bit_length(n)`` stages: one for a single cell.
    """
    height = geometry.height
    cells = ZERO
    for c in range(planes.shape[0]):
        planes[c] &= ~removed
        cells |= planes[c]
    lost = np.int64(popcount(removed))  # a uint64 mixed with ints would give floats

    # Gravity, within each column. "gaps" marks each cell whose lower neighbour is empty,
    # so a prefix XOR up the column (kept inside it by from_row) gives at each cell the
    # parity of the gaps below it: bit 0 of its drop. Keeping only the gaps where that
    # parity is 0 halves every count, so the next stage finds bit 1 the same way, and so on.
    gaps = (~cells << ONE) & geometry.not_bottom
    for stage in range(_bit_length(min(lost, height - 1))):
        parity = gaps
        span = 1
        while span < height:
            parity ^= (parity << U64(span)) & geometry.from_row[span]
            span *= 2
        moving = parity & cells
        step = U64(1 << stage)
        cells = (cells ^ moving) | (moving >> step)
        gaps &= ~parity
        for c in range(planes.shape[0]):
            moved = planes[c] & moving
            planes[c] ^= moved ^ (moved >> step)

    if not geometry.slide:
        return
    # Toward the centre, within each half-row: the same compress with a column (``height``
    # bits) as the step, counting the gaps on the centre side of each cell. The left half
    # moves up the bits, the right half down; the prefix runs outward, so each half counts
    # only its own gaps.
    widest = geometry.width - geometry.width // 2  # the right half is never the narrower
    column = U64(height)  # below 64 whenever a stage runs (a one-column board has none)
    left, right = geometry.half[0], geometry.half[1]
    left_cells, right_cells = cells & left, cells & right
    left_gaps = (~cells & left) >> column
    right_gaps = (~cells & right) << column  # the bits this pushes past the board stay unused
    for stage in range(_bit_length(min(lost, widest - 1))):
        left_parity, right_parity = left_gaps, right_gaps
        span = 1
        while span < widest:
            left_parity ^= left_parity >> (U64(span) * column)
            right_parity ^= right_parity << (U64(span) * column)
            span *= 2
        left_moving, right_moving = left_parity & left_cells, right_parity & right_cells
        step = U64(1 << stage) * column
        left_cells = (left_cells ^ left_moving) | (left_moving << step)
        right_cells = (right_cells ^ right_moving) | (right_moving >> step)
        left_gaps &= ~left_parity
        right_gaps &= ~right_parity
        for c in range(planes.shape[0]):
            moved_left = planes[c] & left_moving
            moved_right = planes[c] & right_moving
            planes[c] ^= moved_left ^ (moved_left << step) ^ moved_right ^ (moved_right >> step)
