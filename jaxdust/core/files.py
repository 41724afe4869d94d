"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it, then rename it over."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes 0600; match a plain open()
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def atomic_write_json(path: str | os.PathLike, value: Any) -> None:
    atomic_write_bytes(path, (json.dumps(value, indent=2, sort_keys=True) + "\n").encode())


def recover_json_lines(path: str | os.PathLike) -> list:
    """The records of a JSON-lines file written by appending, *repairing the file*: a torn
    last line (a process killed mid-write) is cut off it, so appending can continue cleanly.
    A missing file reads as no records."""
    records, keep = [], 0
    if not os.path.exists(path):
        return records
    with open(path, "rb") as handle:
        for line in handle:
            try:
                records.append(json.loads(line))
            except ValueError:
                break
            keep += len(line)
    with open(path, "r+b") as handle:
        handle.truncate(keep)
    return records
