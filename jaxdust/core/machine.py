"""What a measurement ran on, in the words its report prints: the CPU's model and cores."""

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


def cpu_description() -> str:
    """``"AMD EPYC, 2 cores"``."""
    cores = cpu_cores()
    return f"{cpu_name()}, {cores} core{'s' if cores > 1 else ''}"
