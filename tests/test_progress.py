"""Progress bars redraw in a terminal and a Jupyter kernel; a log or a pipe gets a line
now and then, and none for short work."""

import subprocess
import sys
import types

import tqdm.std

from jaxdust.core import progress
from jaxdust.core.progress import in_notebook, progress_bar


def test_a_log_gets_a_line_a_while_and_nothing_from_short_work(monkeypatch, capsys):
    assert not in_notebook()  # pytest captures: stderr is no terminal
    with progress_bar(total=3, unit="board") as bar:
        bar.update(3)
        bar.set_postfix(greedy=14.0)
    assert capsys.readouterr().err == ""

    monkeypatch.setattr(progress, "LOG_SECONDS", 0.3)
    clock = [1000.0]  # tqdm's clock, moved by hand: a busy machine's pauses add no line
    monkeypatch.setattr(tqdm.std, "time", lambda: clock[0])
    with progress_bar(total=402, unit="board", desc="work") as bar:
        for _ in range(200):  # before the first interval: nothing
            bar.update()
        clock[0] += 0.35
        bar.update()  # a line
        for _ in range(200):  # within the next interval, redraws of every kind wait
            bar.update()
            bar.set_postfix(greedy=14.0)
            bar.set_description("work")
        clock[0] += 0.35
        bar.update()  # a second line
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "\r" not in err and err.endswith("\n"), repr(err)
    assert len(lines) == 3 and "201/402" in lines[0] and "402/402" in lines[1], lines
    assert lines[2].startswith("work: 100%") and "402/402" in lines[2] and "greedy=14" in lines[2], lines

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


def test_a_kernel_whose_shell_subclasses_jupyters_is_a_notebook(monkeypatch):
    """Colab's shell is ``google.colab._shell.Shell(ZMQInteractiveShell)``: its bars were
    written as a log's, a line a minute."""
    class ZMQInteractiveShell:
        pass

    class Shell(ZMQInteractiveShell):
        pass

    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=Shell))
    assert in_notebook()


def test_a_terminal_ipython_is_no_notebook(monkeypatch):
    class TerminalInteractiveShell:
        pass

    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=TerminalInteractiveShell))
    assert not in_notebook()


def test_a_log_with_no_interval_gets_every_redraw(monkeypatch, capsys):
    """With no delay tqdm draws within its ``__init__``, before the log's bar has its times."""
    monkeypatch.setattr(progress, "LOG_SECONDS", 0.0)
    with progress_bar(total=2, unit="board", desc="work") as bar:
        bar.update()
        bar.set_postfix_str("half")
    lines = capsys.readouterr().err.splitlines()
    assert [line.split("|")[0] for line in lines] == ["work:   0%", "work:  50%", "work:  50%", "work:  50%"], lines
    assert lines[2].endswith("half]"), lines


def test_tqdms_own_setting_turns_the_bars_off():
    """No --quiet flag: ``TQDM_DISABLE=1`` (read when tqdm is imported) silences every bar,
    the log's too, and the notes printed beside them still go out."""
    script = ("from jaxdust.core import progress\nprogress.LOG_SECONDS = 0.0\n"
              "with progress.progress_bar(total=2, desc='work') as bar:\n    bar.update(2)\n"
              "progress.note('a note')\n")
    import os
    environment = {name: value for name, value in os.environ.items() if not name.startswith("TQDM_")}
    for extra, bars in (({}, True), ({"TQDM_DISABLE": "1"}, False)):
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                env={**environment, **extra})
        assert result.returncode == 0, result.stderr
        lines = result.stderr.splitlines()
        assert lines[-1] == "a note" and any(line.startswith("work: 100%") for line in lines) == bars, lines
        assert bars or lines == ["a note"], lines


def test_a_bar_leaves_the_start_method_of_multiprocessing_to_the_user(tmp_path):
    """tqdm's first bar made its lock in multiprocessing's default context, which fixes the
    start method: a user's ``set_start_method("spawn")`` after any jaxdust bar was refused."""
    script = ("import multiprocessing\nfrom jaxdust.core.progress import progress_bar\n"
              "for _ in progress_bar(range(3)):\n    pass\n"
              "for _ in progress_bar(range(3), enabled=False):\n    pass\n"
              "print(multiprocessing.get_start_method(allow_none=True))\n"
              "multiprocessing.set_start_method('spawn')\n")
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (shown.returncode, shown.stdout) == (0, "None\n"), shown.stderr[-2000:]
    # Set first, the context's own lock: tqdm hands it to spawned workers (a fork context's refused).
    spawned = ("import multiprocessing\nfrom tqdm.contrib.concurrent import process_map\n"
               "from jaxdust.core.progress import progress_bar\n"
               "if __name__ == '__main__':\n    multiprocessing.set_start_method('spawn')\n"
               "    for _ in progress_bar(range(3)):\n        pass\n"
               "    print(process_map(abs, [-1, -2], max_workers=2, disable=True))\n")
    script_file = tmp_path / "spawned.py"
    script_file.write_text(spawned)
    shown = subprocess.run([sys.executable, str(script_file)], capture_output=True, text=True, timeout=120)
    assert (shown.returncode, shown.stdout) == (0, "[1, 2]\n"), shown.stderr[-2000:]
