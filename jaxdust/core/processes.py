"""Work spread over processes, results in order or as they come, failing loudly when a
process dies."""

from __future__ import annotations

import collections.abc
import concurrent.futures
import contextlib
import ctypes
import itertools
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
import weakref
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Generator, Iterable, Iterator


class WorkerDied(RuntimeError):
    """A process of ``ordered_map`` or ``completed_map`` died (killed, out of memory) before
    returning its result."""


_NONE = object()


def ordered_map(function: Callable, items: Iterable, jobs: int) -> Iterator:
    """``map(function, items)`` over ``jobs`` processes, yielding each result in the items'
    order as soon as it and those before it are done (``jobs <= 1``: in this process).

    The processes are spawned, not forked, so they inherit no JAX threads. ``items`` is read
    as the work goes, ``IN_FLIGHT_PER_JOB`` items a process ahead of the results that have
    ended. Results that end before an earlier one are held until it ends, at most
    ``HELD_PER_JOB`` a process: past that the processes wait for it, as memory would
    otherwise grow without bound behind one slow item. A process that dies (killed, out of
    memory) raises ``WorkerDied``: ``multiprocessing.Pool`` would wait for its result forever.
    Work left open when the program ends (kept in a variable, or by a traceback) stops its
    processes then rather than waiting for the items under way, unless a thread that goes on
    running read it last: that thread reads on, and the program ends after it (Python's
    pools refuse new items once the main thread's end is under way, so the thread is waited
    for before the main thread counts as ended; a thread that waits for that must be a
    daemon, or stop another way).

    Raises:
      WorkerDied: when a process died; the results yielded before stay valid.
    """
    return _tracked(_pool_map(function, items, jobs, in_order=True), jobs)


def completed_map(function: Callable, items: Iterable, jobs: int) -> Iterator:
    """``ordered_map`` yielding each result as soon as it is done, in no fixed order: for
    results worth keeping the moment they exist (a proof that took hours), which a slower
    item before them would hold back until it ended, and lose if the run was stopped first.

    Raises:
      WorkerDied: when a process died; the results yielded before stay valid.
    """
    return _tracked(_pool_map(function, items, jobs, in_order=False), jobs)


IN_FLIGHT_PER_JOB = 8  # items handed to the pool a process: a queue for each, not every item at once
HELD_PER_JOB = 128  # ordered_map's results a process held behind an earlier one still under way


class _Work:
    """The results of work over processes, as they come: a generator that knows the thread
    that read it last."""

    def __init__(self, generator: Generator):
        self._generator = generator
        self.reader = threading.current_thread()

    def __iter__(self) -> _Work:
        return self

    def __next__(self):
        self.reader = threading.current_thread()
        return next(self._generator)

    def close(self) -> None:
        """Stop handing out items and end the processes under way."""
        self._generator.close()


_open_work: weakref.WeakSet[_Work] = weakref.WeakSet()  # the work handed out to processes, while it lives
_pools: weakref.WeakSet[concurrent.futures.ProcessPoolExecutor] = weakref.WeakSet()  # their pools, while they live
_open_work_lock = threading.Lock()  # a set copied while another thread adds to it can fail
READER_NOTICE_SECONDS = 5.0  # the program's end waits this long for a reading thread before it says so


def _close_open_work() -> None:
    """At the program's end, close the work nobody closed (kept in a variable, or by a
    traceback), which stops its processes: ``concurrent.futures``' own exit hook, which runs
    after this one, would wait for every item under way (hours). Work read last by a thread
    still running is left to it: Python waits for that thread after the exit hooks, but
    ``concurrent.futures``' hook shuts every pool first, which would refuse the thread's next
    item; so the thread is waited for here, before that hook. A daemon thread, which Python
    does not wait for, has its work closed. Ctrl-C meanwhile ends every pool's workers, which
    Python's exit would otherwise wait for in turn."""
    try:
        _wait_for_readers()
    except KeyboardInterrupt:
        for executor in list(_pools):
            for worker in _workers(executor):
                worker.terminate()
        raise


def _wait_for_readers() -> None:
    told = set()
    while True:
        with _open_work_lock:
            works = list(_open_work)
        readers = set()  # threads Python waits for that read work on: theirs is left open
        for work in works:
            if work.reader is not threading.main_thread() and work.reader.is_alive() and not work.reader.daemon:
                readers.add(work.reader)
            else:
                with contextlib.suppress(ValueError):  # being read at this moment (a daemon thread)
                    work.close()
        if not readers:
            return
        for reader in readers:  # then again: work it started meanwhile, or handed to another thread
            reader.join(READER_NOTICE_SECONDS)
            if reader.is_alive() and reader not in told:  # a long wait, or one for ever: said, not silent
                told.add(reader)
                print(f"the program ends when thread {reader.name!r} has read its work over processes to the "
                      "end (Ctrl-C stops it)", file=sys.stderr, flush=True)
            reader.join()


# Registered after concurrent.futures.process (imported above) registered its own hook: these
# run in reverse order, so this one first.
getattr(threading, "_register_atexit", lambda hook: None)(_close_open_work)


def _tracked(generator: Generator, jobs: int) -> Iterator:
    """``generator``, closed at the program's end if left open where it runs processes."""
    if jobs <= 1:  # in this process: nothing to stop, and a thread reading it must not be cut short
        return generator
    work = _Work(generator)
    with _open_work_lock:
        _open_work.add(work)
    return work


def _pool_map(function: Callable, items: Iterable, jobs: int, in_order: bool) -> Generator:
    if jobs <= 1:
        yield from map(function, items)
        return
    remaining = iter(items)
    first = next(remaining, _NONE)
    if first is _NONE:  # nothing to do (a rerun of finished work): no workers, which an exit
        return  # while they start would leave printing tracebacks
    remaining = itertools.chain([first], remaining)
    if isinstance(items, collections.abc.Sized):  # no worker to start (and wait for) beyond one an item
        jobs = min(jobs, len(items))
    executor = concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                                      initializer=_worker_setup, initargs=(os.getpid(),))
    _pools.add(executor)
    # Items are handed out as results come back, a few a process ahead: a pool given every
    # item at once holds ~2 KB a pending item (20 GB for 10^7 boards) and hands out a million
    # for a minute before the first result is passed on.
    window = jobs * IN_FLIGHT_PER_JOB
    held_at_most = jobs * HELD_PER_JOB if in_order else None
    places: dict = {}  # each future handed out and not yet passed on -> its item's place among the items
    done: queue.SimpleQueue = queue.SimpleQueue()  # futures as they end (put there by the pool's thread)
    handed_out = running = 0  # running: handed out, not yet ended
    next_place = 0  # in order: the place of the next result to pass on
    refused: list[BrokenProcessPool] = []

    def hand_out() -> None:
        nonlocal handed_out, running
        count = window - running
        if held_at_most is not None:
            count = min(count, next_place + held_at_most - handed_out)
        for item in itertools.islice(remaining, 0 if refused else max(count, 0)):
            try:
                future = executor.submit(function, item)
            except BrokenProcessPool as error:
                # A worker died and the pool takes no more: what ended before is still passed
                # on, and the futures it failed then raise with their cause.
                refused.append(error)
                return
            places[future] = handed_out
            handed_out += 1
            running += 1
            future.add_done_callback(done.put)

    finished = False
    try:
        # The workers start (seconds of imports) with Ctrl-C ignored from birth (an ignored
        # signal stays ignored across exec, and Python keeps it so; off the main thread,
        # where no handler can be set, the launcher thread's signal mask blocks it): the
        # parent alone takes it, not each worker with a traceback. They are all started
        # first, as the executor does for forked workers; the items are then handed out with
        # Ctrl-C live.
        def start() -> None:
            launch = getattr(executor, "_launch_processes", None)  # noqa: SLF001
            if launch is not None:
                launch()
            else:  # a Python without it: each of the first items starts a worker
                hand_out()

        with _sigint_handler(signal.SIG_IGN):
            start() if _on_main_thread() else _on_launcher_thread(start)
        hand_out()
        ended: dict = {}  # in order: the futures that ended before one handed out earlier, by place
        while places:
            future = done.get()
            running -= 1
            hand_out()  # before the result is passed on: the workers stay busy meanwhile
            if not in_order:
                del places[future]
                yield future.result()
                continue
            ended[places[future]] = future
            while next_place in ended:
                future = ended.pop(next_place)
                del places[future]
                next_place += 1
                hand_out()  # the places past a full hold are free now
                yield future.result()  # each let go once passed on
        if refused:  # every future had ended well, but items were left
            raise refused[0]
        finished = True
    except BrokenProcessPool as error:
        if error.__cause__ is not None:  # alive, but what it sent back (a result, an error) could not be read here
            lines = [line for line in str(error.__cause__).splitlines() if line.strip(" '")]
            raise WorkerDied(f"a worker's result could not be passed back: {lines[-1] if lines else error}") from None
        raise WorkerDied(_death_message(_endings(_workers(executor)))) from None
    finally:  # the caller stopped early or failed (Ctrl-C): start no more items
        workers = _workers(executor)
        # Done, the workers are let end: one still starting (quick items) would else go on
        # starting after the program, and a Ctrl-C then, which unlinks the pool's semaphores
        # on its way out, would leave it printing a traceback.
        stopped = not finished
        try:
            executor.shutdown(wait=finished, cancel_futures=True)
        except BaseException:  # Ctrl-C while they end: as if stopped early
            stopped = True
            raise
        finally:
            if stopped:  # nor finish those under way: Python's exit would wait for them (a proof: hours)
                for worker in workers:
                    worker.terminate()


def _workers(executor: concurrent.futures.ProcessPoolExecutor) -> list:
    """The pool's worker processes now (the pool names them nowhere else)."""
    return list((executor._processes or {}).values())  # noqa: SLF001


def _endings(workers: list) -> set[int]:
    """The exit codes of a broken pool's ``workers`` that are known to have died of something
    else than the pool's own stop (SIGTERM, which it sends the survivors): the pool tells
    only that one died, and SIGKILL (the out-of-memory killer), SIGSEGV (a crash in
    compiled code) and an exit code call for different remedies. SIGTERM is kept only when
    every worker's ending is known and it is the only one."""
    endings, unknown = set(), False
    deadline = time.monotonic() + 1.0
    for worker in workers:
        # The pool learns of a death when its pipe closes, a moment before the process can be
        # reaped; it is stopping the others meanwhile.
        worker.join(timeout=max(deadline - time.monotonic(), 0.0))
        # Reaped by the pool's own thread at this moment, its exit code is set there shortly;
        # meanwhile it reads as alive here (this thread's wait finds no child left to reap).
        while worker.exitcode is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if worker.exitcode is None:
            unknown = True
        else:
            endings.add(worker.exitcode)
    if len(endings) > 1 or unknown:
        endings.discard(-signal.SIGTERM)
    endings.discard(0)
    return endings


CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT}


def _death_message(endings: set[int]) -> str:
    """``WorkerDied``'s words for workers that ended so (``_endings``), with the likely cause."""
    signals = [_signal_name(-code) for code in sorted(endings, reverse=True) if code < 0]
    codes = [str(code) for code in sorted(endings) if code > 0]
    how = ((f", by {' or '.join(signals)}" if signals else "")
           + (f", with exit code {' or '.join(codes)}" if codes else ""))
    script = "workers started outside `if __name__ == \"__main__\":` import the script again"
    if endings and all(code < 0 and -code in CRASH_SIGNALS for code in endings):
        cause = "a crash in compiled code, numba's or XLA's: please report it with the input that caused it"
    elif endings == {-signal.SIGKILL}:
        cause = "killed, or out of memory?"
    elif endings and all(code > 0 for code in endings):
        cause = f"it exited by itself: in a script, {script} and fail there?"
    else:
        cause = f"killed, or out of memory? Or, in a script, {script}"
    return f"a worker process died{how} ({cause})"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@contextlib.contextmanager
def _sigint_handler(handler):
    """Ctrl-C goes to ``handler`` within the block; off the main thread, where handlers
    cannot be set, a plain block."""
    if not _on_main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def interrupt_deferred():
    """Ctrl-C within the block takes effect when it ends: for work that must not stop half
    done (a checkpoint's files: orbax's threads, stopped mid-write, fill the terminal with
    tracebacks at exit). Where Ctrl-C is ignored (a job a script started with ``&``), it
    stays so: the block does not make it count."""
    if _on_main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return
    received = []
    with _sigint_handler(lambda number, frame: received.append(number)):
        yield
    if received:
        raise KeyboardInterrupt


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


_marked_worker = False


def mark_worker() -> None:
    """Mark this process as a worker whose parent speaks for it (``in_worker``): one-off
    notices (a numba search's slow first load) would land on the parent's progress bar, once
    a worker. ``ordered_map``'s and ``completed_map``'s workers are marked; call it in the
    initializer of a pool of your own."""
    global _marked_worker
    _marked_worker = True


def in_worker() -> bool:
    """Whether ``mark_worker`` marked this process."""
    return _marked_worker


def _worker_setup(parent: int) -> None:
    """In each worker: ``mark_worker``; Ctrl-C is the parent's to handle (it stops handing out work), not a
    traceback from every worker; and on Linux a worker dies with its parent, so that a
    parent killed outright (SIGKILL) leaves no idle workers behind. (The parent-death
    signal follows the *thread* that started the worker, hence ``_on_launcher_thread``.)"""
    mark_worker()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # blocked from birth if the launcher thread started it: ignored now
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # it died while this worker was starting, before the line above
            os._exit(1)


_launcher: queue.SimpleQueue | None = None
_launcher_lock = threading.Lock()


def _on_launcher_thread(function: Callable):
    """``function()``, run on one daemon thread that lives as long as the process. Workers
    started off the main thread are started there: the parent-death signal follows the
    thread that started a worker, and the caller's thread may end while the pool works on
    (a watch of the parent's pid in each worker would not do: a numba search holds the GIL
    for hours)."""
    global _launcher
    with _launcher_lock:
        if _launcher is None:
            _launcher = queue.SimpleQueue()
            threading.Thread(target=_serve, args=(_launcher,), daemon=True, name="jaxdust-pool-launcher").start()
    done: concurrent.futures.Future = concurrent.futures.Future()
    _launcher.put((function, done))
    return done.result()


def _serve(requests: queue.SimpleQueue) -> None:
    # Handlers can be set on the main thread only, but a thread's signal mask is its own and
    # a process started from it inherits it: workers started here have Ctrl-C blocked from
    # birth (until `_worker_setup` ignores it), as the main thread's have it ignored. Python
    # takes signals on its main thread, so blocking them here loses none of the parent's.
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    while True:
        function, done = requests.get()
        try:
            done.set_result(function())
        except BaseException as error:  # noqa: BLE001  (handed to the caller, which raises it)
            done.set_exception(error)


def _forget_launcher() -> None:  # a forked child has no launcher thread, and the lock may have been held
    global _launcher, _launcher_lock
    _launcher, _launcher_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_launcher)
