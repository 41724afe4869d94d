"""XLA's persistent compilation cache for the commands (``jaxdust-train``, ``-evaluate``,
``-leaderboard``, ``train.py``, ``evaluate.py``).

Every run of a command compiles the same programs again: the beams at each width, the
networks' updates, the tree search, 3-7 s each on a CPU. JAX can keep compiled programs on
disk; the commands turn that on, so that a resumed training piece or a second evaluation
with the same agents loads them instead. The library itself changes no JAX setting when
imported: only the commands' entry points call ``enable``.

Where the cache lives, first match wins:

- JAX's own setting (``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``), left as it is, its
  size limit too (``JAX_COMPILATION_CACHE_MAX_SIZE``, none by default);
- ``JAXDUST_COMPILE_CACHE``: a directory (a URL such as ``gs://bucket/xla`` too, which JAX
  reads through ``etils``), ``off`` for no cache, or ``on`` for the default below;
- ``$XDG_CACHE_HOME/jaxdust/xla`` (``~/.cache/jaxdust/xla``).

In the last two it keeps at most ``MAX_BYTES``, the least recently used programs evicted first.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping

import jax

VARIABLE = "JAXDUST_COMPILE_CACHE"
OFF = ("off", "0", "no", "false", "")
ON = ("on", "1", "yes", "true")  # the default folder (not a folder named "1" where the command starts)
MAX_BYTES = 2 << 30  # a default beam or training program takes 0.1-1 MB


def default_directory(environ: Mapping[str, str] = os.environ) -> str | None:
    """The cache directory ``enable`` picks when JAX has none (None: ``off``)."""
    value = environ.get(VARIABLE, "on").strip()
    if value.lower() in OFF:
        return None
    if _remote(value):
        return value
    if value.lower() not in ON:  # a relative folder is taken from where the command starts
        return os.path.abspath(os.path.expanduser(value))
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxdust", "xla")


def enable() -> str | None:
    """Turn the cache on (before anything is compiled); returns the directory in use, or
    None when ``JAXDUST_COMPILE_CACHE=off``."""
    # jax.config's options are attributes made at run time, unknown to a type checker.
    if jax.config.jax_compilation_cache_dir:  # type: ignore[attr-defined]
        return jax.config.jax_compilation_cache_dir  # type: ignore[attr-defined]
    directory = default_directory()
    if directory is None:
        return None
    try:  # a file there, or no right to write: JAX would warn at every compile
        if not _remote(directory):
            os.makedirs(directory, exist_ok=True)
            if not os.access(directory, os.W_OK | os.X_OK):
                raise PermissionError(f"cannot write into {directory}")
    except OSError as error:
        # One plain line, as the commands' other warnings are (Python's would name this file).
        print(f"warning: no XLA compilation cache ({error}); set {VARIABLE} to a folder, or to off", file=sys.stderr)
        return None
    jax.config.update("jax_compilation_cache_dir", directory)
    # JAX's default is no limit; a limit needs filelock (a dependency, absent only from an
    # install without dependencies, where JAX would warn at every compile instead).
    has_filelock = importlib.util.find_spec("filelock") is not None
    if jax.config.jax_compilation_cache_max_size < 0 and has_filelock:  # type: ignore[attr-defined]
        jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    # Any limit (the user's JAX_COMPILATION_CACHE_MAX_SIZE too) is where a half-saved entry blocks saving.
    if jax.config.jax_compilation_cache_max_size != -1 and has_filelock and not _remote(directory):  # type: ignore[attr-defined]
        drop_unfinished_entries(directory)
    return directory


def _remote(directory: str) -> bool:
    return "://" in directory


def drop_unfinished_entries(directory: str) -> list[str]:
    """Remove the programs a killed process left half-saved in ``directory``; returns their
    file names.

    With a size limit JAX saves a program as ``KEY-cache``, then its last use as
    ``KEY-atime``, and reads every entry's ``-atime`` before each save: one ``-cache``
    without its ``-atime`` (a kill between the two, or during the first) made every later
    save fail with a warning, so the cache stopped growing for good (jax-ml/jax#39880).
    Nothing is removed where the installed JAX names its files otherwise."""
    import filelock
    from jax._src import lru_cache

    program, last_use = getattr(lru_cache, "_CACHE_SUFFIX", None), getattr(lru_cache, "_ATIME_SUFFIX", None)
    if program != "-cache" or last_use != "-atime":
        return []
    dropped = []
    try:
        with filelock.FileLock(os.path.join(directory, ".lockfile"), timeout=10):  # JAX's own lock on the folder
            for name in os.listdir(directory):
                key = name.removesuffix(program)
                if key != name and not os.path.exists(os.path.join(directory, key + last_use)):
                    os.remove(os.path.join(directory, name))
                    dropped.append(name)
    except (OSError, filelock.Timeout):  # another process holds the folder: it is left for the next start
        pass
    return dropped
