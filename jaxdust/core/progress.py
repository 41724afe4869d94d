"""Progress bars for long work: shown on a terminal and in a Jupyter kernel, off where
output goes to a log or a pipe (where a bar's redraws would fill the file)."""

from __future__ import annotations

import sys

from tqdm import tqdm


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel: its stderr is no terminal, but the
    notebook redraws a bar's line in place."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def progress_bar(iterable=None, *, enabled: bool = True, **kwargs) -> tqdm:
    """``tqdm(iterable, **kwargs)``, drawn where someone watches (see the module), never
    where not ``enabled``."""
    return tqdm(iterable, disable=True if not enabled else (False if in_notebook() else None), **kwargs)
