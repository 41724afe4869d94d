"""Where numba keeps the solver's compiled code.

numba caches a ``cache=True`` function beside its source (``__pycache__``) or in the user's
cache folder, and refuses to define it where neither takes files: a read-only install run
by a user whose home is not writable (a container's usual case) could not even ``import
jaxdust``. There the cache goes to a folder of the user's own in the temporary folder, said
once on stderr; ``NUMBA_CACHE_DIR`` chooses another.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile


def ensure_writable() -> str | None:
    """Point numba's cache at a private temporary folder where none of its own places takes
    files; the folder chosen, or None where numba's own choice stands."""
    # config's settings are made at run time: unknown to a type checker.
    from numba.core import caching, config

    if config.CACHE_DIR or getattr(config, "CACHE_LOCATOR_CLASSES", None):  # type: ignore[attr-defined]
        return None  # the user's own choice
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bitboard.py")

    def probe():
        pass

    try:
        # _CacheImpl: older numba's name.
        impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # type: ignore[attr-defined]
        if any(locator.from_function(probe, source) is not None for locator in impl._locator_classes):
            return None
    except Exception:  # numba's internals moved: its own error, if any, stands
        return None
    folder = _private_folder()
    config.CACHE_DIR = folder  # type: ignore[attr-defined]
    # Worker processes inherit it (no second probe or message), and numba's reload of its
    # settings keeps it.
    os.environ["NUMBA_CACHE_DIR"] = folder
    print(f"jaxdust: numba cannot cache compiled code beside {os.path.dirname(source)} or in your cache "
          f"folder; it caches in {folder} (NUMBA_CACHE_DIR chooses another)", file=sys.stderr)
    return folder


def _private_folder() -> str:
    """``jaxdust-numba-UID`` in the temporary folder, if it is this user's alone: numba
    unpickles what it finds in its cache, so a folder another user made (or a link to one)
    must not be taken. Otherwise a fresh folder of its own."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    folder = os.path.join(tempfile.gettempdir(), f"jaxdust-numba-{uid if uid is not None else 'user'}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return tempfile.mkdtemp(prefix="jaxdust-numba-")
    found = os.lstat(folder)
    private = stat.S_ISDIR(found.st_mode) and found.st_mode & 0o077 == 0 and (uid is None or found.st_uid == uid)
    return folder if private else tempfile.mkdtemp(prefix="jaxdust-numba-")
