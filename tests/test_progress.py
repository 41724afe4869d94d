"""Progress bars show in a terminal and a Jupyter kernel, not in logs or pipes."""

import sys
import types

from jaxdust.core.progress import in_notebook, progress_bar


def test_bars_show_in_a_jupyter_kernel_and_not_in_a_pipe(monkeypatch, capsys):
    assert not in_notebook()  # pytest captures: stderr is no terminal
    with progress_bar(total=3) as bar:
        assert bar.disable

    class ZMQInteractiveShell:  # the shell class of an IPython kernel
        pass

    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=ZMQInteractiveShell))
    assert in_notebook()
    with progress_bar(total=3, unit="board") as bar:
        assert not bar.disable
        bar.update(3)
    assert "3/3" in capsys.readouterr().err
    with progress_bar(total=3, enabled=False) as bar:
        assert bar.disable


def test_a_terminal_ipython_is_no_notebook(monkeypatch):
    class TerminalInteractiveShell:
        pass

    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=TerminalInteractiveShell))
    assert not in_notebook()
