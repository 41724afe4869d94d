"""What a measurement ran on, in the words its report prints: the CPU's model and cores,
and (``measured_on``) the device and the versions of the libraries."""

from __future__ import annotations

import os
import platform


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux; elsewhere what ``platform`` knows,
    which on Linux is only the architecture)."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_cores() -> int:
    """Cores this process may run on (its affinity, where the platform has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def memory_bytes() -> int | None:
    """This machine's physical memory, where the platform says (Linux, macOS); else None."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def device_memory_bytes() -> int | None:
    """The memory of JAX's first device where it is an accelerator's and JAX says (a GPU's
    ``bytes_limit``); else None."""
    import jax

    device = jax.devices()[0]
    if device.platform == "cpu":
        return None
    try:
        return (device.memory_stats() or {}).get("bytes_limit")
    except Exception:  # a backend without memory statistics
        return None


def require_memory(what: str, needed: int, device: bool = False) -> None:
    """ValueError unless ``needed`` bytes fit in this machine's memory (``device``: JAX's
    device's, a GPU's where JAX runs on one), where it is known: an agent whose settings
    ask for more fails in numpy or XLA with a traceback, after the agents before it have
    played. An accelerator that does not say its memory is not checked (the machine's
    memory is no measure of it)."""
    accelerator = None
    if device:
        import jax

        accelerator = device_memory_bytes()
        if accelerator is None and jax.default_backend() != "cpu":
            return
    memory = accelerator if accelerator is not None else memory_bytes()
    if memory is not None and needed > memory:
        where = "its device's" if accelerator is not None else "this machine's"
        raise ValueError(f"{what}: about {needed / 2**30:,.1f} GiB of memory, more than {where} "
                         f"{memory / 2**30:,.1f} GiB")


def cpu_description() -> str:
    """``"AMD EPYC, 2 cores"``."""
    cores = cpu_cores()
    return f"{cpu_name()}, {cores} core{'s' if cores > 1 else ''}"


def measured_on(jaxdust_version: str | None) -> dict:
    """What a report's figures were measured with: the CPU, the cores this process may use,
    JAX's backend and device, and the versions of jax, numba, Python and jaxdust (given by
    the caller, ``jaxdust.__version__``; None for a comparison of two revisions, each of
    which brings its own)."""
    import jax  # here, not above: the questions above are answered without JAX
    import numba

    found = {"cpu": cpu_name(), "cores": cpu_cores(), "backend": jax.default_backend(),
             "device": jax.devices()[0].device_kind, "jax": jax.__version__, "numba": numba.__version__,
             "python": platform.python_version()}
    return found if jaxdust_version is None else {"jaxdust": jaxdust_version, **found}
