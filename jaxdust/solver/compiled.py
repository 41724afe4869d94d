"""Every cached numba search compiled (or loaded from numba's cache) in one call.

numba compiles a function on its first call and, with ``cache=True``, keeps the machine
code beside the source for later processes. A cold cache costs tens of seconds per process
(the exact solver alone 45 s on a 2-core Intel Xeon: benchmarks/numba_compile.py); processes
started together before anything is cached each pay it. ``compile_all`` pays it once, so
that a pool of workers, a test suite or a container image then only loads:

    python -c "from jaxdust.solver import compiled; compiled.compile_all()"

NMCS's levels are closures, which numba does not cache; each process compiles those.
"""

from __future__ import annotations

import numpy as np

from jaxdust.solver import api, dfs, points, table


def compile_searches() -> None:
    """What ``solve`` runs: the exact solver's searches and the numba beam."""
    api._load_compiled_code()


def compile_lines() -> None:
    """The rest: the transposition table's rehash, the depth-first search and the points
    searches (beam and NMCS), on a tiny board."""
    table.rehash(np.zeros(2, np.uint64), np.zeros(4, np.uint64))  # the table grows outside a search
    board = np.array([[1, 2], [1, 2]], np.int8)  # a pair to remove: the points line is scored too
    dfs.solve_dfs(board, time_limit=None, node_limit=10)
    points.beam(board, 1)
    points.nmcs(board, 1)


# Two halves for two processes compiling in parallel: they share next to nothing (each takes
# as long after the other as alone).
PARTS = (compile_searches, compile_lines)


def compile_all() -> None:
    """Compile every ``cache=True`` function of ``jaxdust.solver`` (callees with their
    callers)."""
    for part in PARTS:
        part()
