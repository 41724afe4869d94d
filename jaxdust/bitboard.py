"""The rules on 64-bit bitboards, compiled with numba, for CPU tree search.

A board of at most 64 cells is ``planes``: uint64 ``[colors]``, bit ``x * height + y`` of
``planes[c]`` set where cell ``(x, y)`` holds colour ``c + 1`` (the flat action index of
``jaxdust.game``). Geometry lives in ``Geometry``, a tuple of masks built once per board
size. Every function here is ``numba.njit``; they allocate nothing on the hot path.

JAX cannot express the deep, data-dependent recursion of exact search; numba compiles
these loops to machine code instead (see README: dependencies).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

MAX_CELLS = 64
U64 = np.uint64
ONE = U64(1)
ZERO = U64(0)


class Geometry(NamedTuple):
    """Masks of one board size (numba receives it as a tuple)."""

    width: int
    height: int
    full: np.uint64  # all cells
    not_bottom: np.uint64  # every cell but row 0
    not_top: np.uint64  # every cell but row height - 1
    column: np.ndarray  # uint64 [W], the cells of column x
    row_half: np.ndarray  # uint64 [2, H], row y of the left (0) or right (1) half
    packed: np.ndarray  # uint64 [2, H, W + 1], n cells of that half-row against the centre
    reach: np.ndarray  # uint64 [W, H], cells a removal at column x, lowest row y can move
    outward_row: np.ndarray  # uint64 [W, H], row y from column x outward, within x's half
    half: np.ndarray  # uint64 [2], the cells of the left and the right half
    beyond_touch: np.ndarray  # uint64 [2], cells no removal in that half can move or touch


def make_geometry(width: int, height: int) -> Geometry:
    if width * height > MAX_CELLS:
        raise ValueError(f"bitboards hold at most {MAX_CELLS} cells, got {width}x{height}")
    cells = width * height
    full = (1 << cells) - 1
    column = np.array([((1 << height) - 1) << (x * height) for x in range(width)], np.uint64)
    row = [sum(1 << (x * height + y) for x in range(width)) for y in range(height)]
    half = width // 2
    left_cells = sum(((1 << height) - 1) << (x * height) for x in range(half))
    row_half = np.array(
        [[r & left_cells for r in row], [r & ~left_cells & full for r in row]], np.uint64
    )
    packed = np.zeros((2, height, width + 1), np.uint64)
    for y in range(height):
        for n in range(1, half + 1):
            packed[0, y, n] = packed[0, y, n - 1] | (1 << ((half - n) * height + y))
        for n in range(1, width - half + 1):
            packed[1, y, n] = packed[1, y, n - 1] | (1 << ((half + n - 1) * height + y))
    # Removing cells at column x (lowest row y) moves nothing below row y, nothing in the
    # other half, and, within the half, nothing closer to the centre than column x.
    reach = np.zeros((width, height), np.uint64)
    for x in range(width):
        outward = range(0, x + 1) if x < half else range(x, width)
        for y in range(height):
            reach[x, y] = sum(1 << (ox * height + oy) for ox in outward for oy in range(y, height))
    outward_row = np.zeros((width, height), np.uint64)
    for x in range(width):
        outward = range(0, x + 1) if x < half else range(x, width)
        for y in range(height):
            outward_row[x, y] = sum(1 << (ox * height + y) for ox in outward)
    return Geometry(
        width, height, U64(full), U64(full & ~row[0]), U64(full & ~row[height - 1]),
        column, row_half, packed, reach, outward_row,
        np.array([left_cells, full & ~left_cells], np.uint64),
        np.array([sum(int(column[x]) for x in range(half + 1, width)),
                  sum(int(column[x]) for x in range(0, half - 1))], np.uint64),
    )


def to_planes(board: np.ndarray, colors: int) -> np.ndarray:
    """int board ``[W, H]`` -> uint64 ``[colors]``."""
    flat = np.asarray(board).reshape(-1)
    planes = np.zeros(colors, np.uint64)
    for index, value in enumerate(flat):
        if value:
            planes[value - 1] |= U64(1 << index)
    return planes


def to_board(planes: np.ndarray, width: int, height: int) -> np.ndarray:
    """uint64 ``[colors]`` -> int8 board ``[W, H]``."""
    board = np.zeros(width * height, np.int8)
    for colour, plane in enumerate(planes):
        for index in range(width * height):
            if (int(plane) >> index) & 1:
                board[index] = colour + 1
    return board.reshape(width, height)


def path_clicks(path: np.ndarray, length: int, height: int) -> list[tuple[int, int]]:
    """The first ``length`` cluster masks of a search's ``path`` as clicks ``[(x, y), ...]``,
    each on the cluster's cell with the smallest ``x * height + y``."""
    cells = [bit_index(lowest_bit(U64(mask))) for mask in path[:length]]
    return [divmod(int(cell), height) for cell in cells]


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
def bit_index(bit):
    """Index of a one-bit mask: ``0b0100 -> 2``."""
    return popcount(bit - ONE)


@numba.njit(cache=True)
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


@numba.njit(cache=True)
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


@numba.njit(cache=True)
def removal_reach(removed, occupied, geometry):
    """Cells whose content may change when ``removed`` is cleared from a settled board
    with cells ``occupied`` and the board contracts.

    Gravity moves only cells above the lowest removed cell of a column; a column of height
    ``h`` that loses ``k`` cells opens gaps in rows ``h - k .. h - 1`` only, and a row slide
    moves only cells outward of its gap.
    """
    height = geometry.height
    reach = ZERO
    for x in range(geometry.width):
        column = geometry.column[x]
        gone = removed & column
        if not gone:
            continue
        reach |= column & ~(lowest_bit(gone) - ONE)
        top = popcount(occupied & column)
        for y in range(top - popcount(gone), top):
            reach |= geometry.outward_row[x, y]
    return reach


@numba.njit(cache=True)
def occupied(planes):
    cells = ZERO
    for plane in planes:
        cells |= plane
    return cells


@numba.njit(cache=True)
def _fall_above(planes, column_mask, position):
    """Shift every plane's cells above bit ``position`` of one column down by one."""
    bit = ONE << U64(position)
    above = column_mask & ~(bit | (bit - ONE))  # no shift by 64 at the last cell
    for c in range(planes.shape[0]):
        plane = planes[c]
        planes[c] = (plane & ~above) | ((plane & above) >> ONE)


@numba.njit(cache=True)
def _move_cell(planes, source, target):
    for c in range(planes.shape[0]):
        if planes[c] & source:
            planes[c] = (planes[c] & ~source) | target
            return


@numba.njit(cache=True)
def remove_and_contract(planes, removed, geometry):
    """Remove the cells of ``removed`` from ``planes`` (in place), then contract.

    Gravity closes each removed cell of a column from the top down; then every half-row
    that may have changed is packed against the centre with a write pointer.
    """
    width, height = geometry.width, geometry.height
    half = width // 2
    lowest_row = height
    touched_left = False
    touched_right = False
    for c in range(planes.shape[0]):
        planes[c] &= ~removed
    for x in range(width):
        gaps = removed & geometry.column[x]
        if not gaps:
            continue
        if x < half:
            touched_left = True
        else:
            touched_right = True
        for y in range(height - 1, -1, -1):
            position = x * height + y
            if (gaps >> U64(position)) & ONE:
                _fall_above(planes, geometry.column[x], position)
                lowest_row = min(lowest_row, y)
    cells = occupied(planes)
    for y in range(lowest_row, height):
        if touched_left:
            row = cells & geometry.row_half[0, y]
            if row != geometry.packed[0, y, popcount(row)]:
                write = half - 1
                for x in range(half - 1, -1, -1):
                    source = ONE << U64(x * height + y)
                    if cells & source:
                        if x != write:
                            _move_cell(planes, source, ONE << U64(write * height + y))
                        write -= 1
        if touched_right:
            row = cells & geometry.row_half[1, y]
            if row != geometry.packed[1, y, popcount(row)]:
                write = half
                for x in range(half, width):
                    source = ONE << U64(x * height + y)
                    if cells & source:
                        if x != write:
                            _move_cell(planes, source, ONE << U64(write * height + y))
                        write += 1
