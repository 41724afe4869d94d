"""The transposition table's storage: proven lower bounds on the clicks a position needs,
keyed by a 64-bit hash, in a power-of-two uint64 array (numba).

Used by ``jaxdust.solver.ida`` for whole positions and by ``jaxdust.solver.halves`` for half positions
(in a table of their own); ``jaxdust.solver.TranspositionTable`` owns the arrays.
"""

from __future__ import annotations

import numba
import numpy as np

from jaxdust.solver.bitboard import U64

# A table entry is one uint64: the key's bits above the lowest byte, and the bound in the
# lowest byte. Entries sit in buckets of BUCKET slots (32 bytes, one cache line fetch); a
# key's bucket is given by its bits from bit 2 up, so only its two lowest bits are lost
# (the table has at least 2^8 slots) and a probe costs one cache miss. A full bucket gives
# up its smallest bound: the position with the fewest clicks left, the cheapest to search
# again. (Against one slot per key, always replaced: 3% fewer positions on 13-click 8x6
# proofs in 2^25 slots, 22% in 2^22; `benchmarks/compare_solvers.py`, 2026-11-22.)
_BOUND_BITS = U64(0xFF)
BUCKET = 4


@numba.njit(cache=True, inline="always")
def _entry_bound(entry, key):
    """The bound an entry holds for ``key``, 0 when it holds another position's."""
    # np.int64, not int(): numba keeps int() of a uint64 unsigned, and comparing that with
    # the signed click budgets would go through float64 on every probe.
    return np.int64(entry & _BOUND_BITS) if entry & ~_BOUND_BITS == key & ~_BOUND_BITS else np.int64(0)


@numba.njit(cache=True, inline="always")
def _bucket(table, key):
    return key & U64(table.shape[0] - BUCKET)


@numba.njit(cache=True, inline="always")
def table_bound(table, key):
    first = _bucket(table, key)
    bound = np.int64(0)
    for i in range(BUCKET):
        bound = max(bound, _entry_bound(table[first + U64(i)], key))
    return bound


@numba.njit(cache=True, inline="always")
def table_store(table, key, bound):
    first = _bucket(table, key)
    victim, smallest = first, np.int64(_BOUND_BITS) + 1
    for i in range(BUCKET):
        slot = first + U64(i)
        entry = table[slot]
        held = _entry_bound(entry, key)
        if held:  # the key's own entry: keep the larger bound
            table[slot] = (key & ~_BOUND_BITS) | U64(max(bound, held))
            return
        other = np.int64(entry & _BOUND_BITS)  # 0 for an empty slot
        if other < smallest:
            victim, smallest = slot, other
    table[victim] = (key & ~_BOUND_BITS) | U64(bound)


@numba.njit(cache=True)
def rehash(table, larger):
    """Copy every entry of ``table`` into the empty, larger power-of-two table ``larger``.

    A key's bucket in either table is given by its bits from bit 2 up, which the entry and
    its slot's low byte hold; keys of one bucket of the larger table all come from one
    bucket of the smaller, so no entry is lost.
    """
    for slot in range(table.shape[0]):
        entry = table[slot]
        if entry:
            key = (entry & ~_BOUND_BITS) | (U64(slot) & _BOUND_BITS)
            table_store(larger, key, np.int64(entry & _BOUND_BITS))
