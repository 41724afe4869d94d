"""What a measurement ran on, in the words its report prints: the CPU's model and cores,
and (``measured_on``) the device and the versions of the libraries."""

from __future__ import annotations

import math
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
    """Cores this process may run on: its affinity (where the platform has one), or fewer
    where its cgroup's CPU quota allows fewer (a container's ``--cpus``, a Kubernetes
    limit; rounded up), which the affinity does not show: a 2-CPU container on a 64-core
    host would otherwise start 64 worker processes, each importing JAX."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = cgroup_cpu_limit()
    return cores if quota is None else max(1, min(cores, math.ceil(quota)))


def memory_bytes() -> int | None:
    """This machine's physical memory, where the platform says (Linux, macOS), or less where
    this process's cgroup allows less (a container's memory limit); else None."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    limit = cgroup_memory_limit()
    return physical if limit is None else min(physical, limit)


CGROUP_ROOT = "/sys/fs/cgroup"
MEMBERSHIP = "/proc/self/cgroup"  # "0::PATH" (cgroup v2), "N:CONTROLLERS:PATH" (v1)


def cgroup_cpu_limit() -> float | None:
    """The CPUs (a fraction: 1.5) the quotas of this process's cgroup and those above it
    allow, the smallest; None where there is none (or no cgroups: not Linux)."""
    limits = []
    for folder in _cgroup_folders("cpu"):
        quota_v2 = _read_words(folder, "cpu.max")  # "max 100000": none
        quota_v1, period_v1 = _read_words(folder, "cpu.cfs_quota_us"), _read_words(folder, "cpu.cfs_period_us")
        for quota, period in ((quota_v2[:1], quota_v2[1:2]), (quota_v1, period_v1)):
            if quota and period and quota[0].isdigit() and int(quota[0]) > 0 and int(period[0]) > 0:  # v1: -1 for none
                limits.append(int(quota[0]) / int(period[0]))
    return min(limits, default=None)


def cgroup_memory_limit() -> int | None:
    """The bytes the memory limits of this process's cgroup and those above it allow, the
    smallest; None where there is none (v1 writes "none" as a number near 2^63, which is
    taken as it is: no machine has that much)."""
    limits = []
    for folder in _cgroup_folders("memory"):
        for name in ("memory.max", "memory.limit_in_bytes"):  # v2 ("max": none), v1
            words = _read_words(folder, name)
            if words and words[0].isdigit():
                limits.append(int(words[0]))
    return min(limits, default=None)


def _cgroup_folders(controller: str) -> list[str]:
    """The folders of this process's cgroup that hold ``controller``'s files, and of every
    cgroup above it (their limits hold too). In a container without a cgroup namespace of
    its own the path names the host's cgroup while the container sees its own at the mount
    point: then the mount point alone."""
    try:
        with open(MEMBERSHIP) as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    folders = []
    for line in lines:
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if number == "0" and not controllers:
            unified = os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers"))  # else v2 beside v1
            mounts = [CGROUP_ROOT if unified else os.path.join(CGROUP_ROOT, "unified")]
        elif controller in controllers.split(","):
            mounts = [os.path.join(CGROUP_ROOT, controllers), os.path.join(CGROUP_ROOT, controller)]
        else:
            continue
        mount = next((folder for folder in mounts if os.path.isdir(folder)), None)
        if mount is None:
            continue
        parts = [part for part in path.split("/") if part]
        for depth in range(len(parts), -1, -1):
            folder = os.path.join(mount, *parts[:depth])
            if (depth == 0 or os.path.isdir(folder)) and folder not in folders:
                folders.append(folder)
    return folders


def _read_words(folder: str, name: str) -> list[str]:
    try:
        with open(os.path.join(folder, name)) as handle:
            return handle.read().split()
    except OSError:
        return []


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
