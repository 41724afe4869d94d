"""The package type-checks under mypy with pyproject's settings, and a user's type checker
reads the public functions' own signatures (the jitting and numba wrappers keep them): a
wrong argument to ``jaxdust.click`` or ``jaxdust.solve`` is an error. The wheel carries
``py.typed`` (tests/test_wheel.py), which tells a type checker to read them at all."""

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _mypy(*args: str, cwd: pathlib.Path, env: dict | None = None) -> subprocess.CompletedProcess:
    # No cache: a stale one from another version of the code could hide an error.
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", os.devnull, *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


def test_the_package_type_checks():
    result = _mypy("jaxdust", cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


USER_SCRIPT = """\
import jax
import numpy as np
import jaxdust

board = jaxdust.random_board(jax.random.key(0))
grid, lists = np.asarray(board), [[1, 2], [2, 1]]
after, removed = jaxdust.click(grid, 0, np.int64(0))
labels = jaxdust.cluster_labels(lists)
done = jaxdust.is_done(grid)
text = jaxdust.board_to_text(lists) + jaxdust.board_svg(grid)
found = jaxdust.solve(lists, node_limit=1000)
clicks: int = found.length + jaxdust.score(grid, found.clicks)
jaxdust.click(board, 0, 0, rules=3)  # wrong
jaxdust.solve(board, node_limit="many")  # wrong
jaxdust.beam_search(board, width="wide")  # wrong
labels_text: str = jaxdust.cluster_labels(board)  # wrong
"""


def test_a_users_type_checker_sees_the_public_signatures(tmp_path):
    """Boards given as numpy arrays or nested lists, as the functions take them, pass; a
    wrong argument or result type is an error on its own line, and only there."""
    script = tmp_path / "use.py"
    script.write_text(USER_SCRIPT)
    # The editable install's import hook is invisible to mypy: the checkout is given as a
    # source path instead (an installed wheel is found through py.typed).
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    result = _mypy("--follow-imports", "silent", str(script), cwd=tmp_path, env=env)
    errors = sorted({int(line) for line in re.findall(r"^use\.py:(\d+): error", result.stdout, re.M)})
    wrong = [number for number, line in enumerate(USER_SCRIPT.splitlines(), start=1) if line.endswith("# wrong")]
    assert errors == wrong, result.stdout + result.stderr
