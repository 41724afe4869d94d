"""Work spread over processes, results in order, failing loudly when a process dies."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable, Iterator


class WorkerDied(RuntimeError):
    """A process of ``ordered_map`` died (killed, out of memory) before returning its result."""


def ordered_map(function: Callable, items: Iterable, jobs: int) -> Iterator:
    """``map(function, items)`` over ``jobs`` processes, yielding each result in the items'
    order as soon as it and those before it are done (``jobs <= 1``: in this process).

    The processes are spawned, not forked, so they inherit no JAX threads. A process that
    dies (killed, out of memory) raises ``WorkerDied``: ``multiprocessing.Pool`` would wait
    for its result forever.

    Raises:
      WorkerDied: when a process died; the results yielded before stay valid.
    """
    if jobs <= 1:
        yield from map(function, items)
        return
    executor = concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        yield from executor.map(function, items)
    except BrokenProcessPool:
        raise WorkerDied("a worker process died (killed, or out of memory?)") from None
    finally:  # the caller stopped early or failed: start no more items
        executor.shutdown(wait=False, cancel_futures=True)
