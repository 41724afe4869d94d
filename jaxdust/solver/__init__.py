"""Search on bitboards (numba), for one board at a time on a CPU core.

``api.solve`` proves shortest solutions: ``upper_bound`` (a beam search) gives a first
solution, ``ida`` (IDA* with the bounds of ``halves`` and the table of ``table``) proves
it optimal or finds a shorter one. ``dfs`` is the original post's depth-first search.
``bitboard`` holds the rules on 64-bit colour planes. CLI: ``python -m jaxdust.solver``.
"""

from jaxdust.solver import cache_dir

cache_dir.ensure_writable()  # before the first cache=True function is defined

from jaxdust.solver.api import Solution, TranspositionTable, solve  # noqa: E402
from jaxdust.solver.dfs import solve_dfs  # noqa: E402
from jaxdust.solver import points  # noqa: E402  (the docs call jaxdust.solver.points.beam after import jaxdust)

__all__ = ["Solution", "TranspositionTable", "points", "solve", "solve_dfs"]
