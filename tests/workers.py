"""Functions for tests that run work in spawned processes: a module that imports nothing
heavy, so that each process starts in a moment."""

import ctypes
import os
import signal
import time


def square_or_die_on_three(item: int) -> int:
    if item == 3:
        os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer would
    return item * item


def square_or_exit_on_three(item: int) -> int:
    if item == 3:
        os._exit(3)
    return item * item


def square_or_crash_on_three(item: int) -> int:
    if item == 3:
        os.kill(os.getpid(), signal.SIGSEGV)  # as a fault in compiled code would
    return item * item


def square_or_die_late_on_three(item: int) -> int:
    """``square_or_die_on_three``, dying a second after item 3 is taken: the items before it
    have ended by then."""
    if item == 3:
        time.sleep(1.0)
    return square_or_die_on_three(item)


def touch(path: str) -> str:
    """Make the file ``path`` (a sign to the test that this item is done)."""
    open(path, "w").close()
    return path


def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def nap_holding_the_gil(directory_and_seconds: tuple[str, int]) -> int:
    """Say so with a file named by this process's pid in the directory, then sleep as a
    numba search works: no other thread of the process runs meanwhile."""
    directory, seconds = directory_and_seconds
    open(os.path.join(directory, str(os.getpid())), "w").close()
    ctypes.PyDLL(None).sleep(seconds)  # libc's sleep, called with the GIL held
    return seconds


class NeedsTwoArguments(Exception):
    def __init__(self, what: str, why: str):
        super().__init__(f"{what}: {why}")


def raise_a_field_error(item: int) -> int:
    from jaxdust.core.configs import FieldError  # light: no JAX

    raise FieldError("node_limit", f"must be positive, got {item}")


def raise_an_unpicklable_error(item: int) -> int:
    raise NeedsTwoArguments("item", str(item))


def load_slowly(seconds: float) -> float:
    """A numba search's first use on a cold cache, as a worker meets it: a load that
    outlasts the loading notice's delay."""
    from jaxdust.solver import api

    api.COMPILE_NOTICE_SECONDS = 0.05
    with api.loading_notice("a search", "1 s"):
        time.sleep(seconds)
    return seconds
