"""Progress bars for long work: redrawn in place on a terminal and in a Jupyter kernel;
where output goes to a log or a pipe (where redraws would fill the file), a plain line a
minute once the work has run that long, so a job of hours in a log says how far it is
while a short one writes nothing. ``TQDM_DISABLE=1`` in the environment (tqdm's own
setting, read when tqdm is imported) turns them all off."""

from __future__ import annotations

import contextlib
import multiprocessing
import sys

from tqdm import tqdm

LOG_SECONDS = 60.0  # between two lines in a log, and before the first


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel: its stderr is no terminal, but the
    notebook redraws a bar's line in place. Colab's shell (and Sage's) is a subclass of
    Jupyter's."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return any(cls.__name__ == "ZMQInteractiveShell" for cls in type(shell).__mro__)


class _Lines:
    """A stream for tqdm that turns each redraw (``\\r`` and the bar, padded) into a line."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").rstrip()
        if line:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()


class _LogBar(tqdm):
    """A bar written to a log: besides updates, ``set_postfix`` and ``set_description``
    redraw (at once on a terminal), so every redraw waits its turn here. With no delay, tqdm
    draws the bar within its ``__init__``, before it has set the times read here."""

    def refresh(self, *args, **kwargs):
        now = self._time()
        begun = hasattr(self, "start_t")
        if begun and (now - self.start_t < self.delay or now - self.last_print_t < self.mininterval):
            return
        super().refresh(*args, **kwargs)
        self.last_print_t = now


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):  # no such method, or a closed stream
        return False


def _lock_in_a_named_context() -> None:
    """tqdm's first bar makes its lock, a multiprocessing one, in the default context, which
    fixes this process's start method: a user's later ``set_start_method("spawn")`` was
    refused, and their ``Pool()`` forked. Before then, give it one made in the context
    the process's pools will use, named (a lock of another context cannot be handed to
    their workers), which leaves the choice open."""
    if not hasattr(tqdm, "_lock"):
        tqdm.set_lock(multiprocessing.get_context(_start_method()).RLock())


def _start_method() -> str:
    """The start method set, else the platform's default, read without setting it."""
    method = multiprocessing.get_start_method(allow_none=True)
    default = getattr(getattr(multiprocessing.context, "_default_context", None), "_default_context", None)
    return method or getattr(default, "_name", None) or "spawn"


def progress_bar(iterable=None, *, enabled: bool = True, **kwargs) -> tqdm:
    """``tqdm(iterable, **kwargs)`` drawn as the module says, never where not ``enabled``."""
    _lock_in_a_named_context()
    if not enabled:
        return tqdm(iterable, disable=True, **kwargs)
    stream = kwargs.pop("file", None) or sys.stderr
    if stream is None:  # no stderr at all (pythonw)
        return tqdm(iterable, disable=True, **kwargs)
    if in_notebook() or _is_terminal(stream):
        return tqdm(iterable, file=stream, **kwargs)
    return _LogBar(iterable, file=_Lines(stream), mininterval=LOG_SECONDS, maxinterval=LOG_SECONDS,
                   delay=LOG_SECONDS, **kwargs)


@contextlib.contextmanager
def above_bars(stream=None):
    """Writes to ``stream`` (standard error) inside go above the bars this process draws on
    the same terminal (cleared, then drawn again below), not onto a bar's line. A bar in a
    log writes whole lines, and a stream that is no terminal (standard output to a file)
    shares no line with a bar: nothing to clear there. With no bar at all, tqdm's lock is
    left alone (see ``_lock_in_a_named_context``)."""
    stream = stream if stream is not None else sys.stderr
    if not getattr(tqdm, "_instances", None) or not (stream is sys.stderr or _is_terminal(stream)):
        yield
        return
    with tqdm.external_write_mode(file=stream):
        yield


def note(text: str) -> None:
    """``text`` as a line on standard error, above any bar this process draws there."""
    with above_bars():
        print(text, file=sys.stderr, flush=True)
