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
import jaxdust

board = jaxdust.random_board(jax.random.key(0))
after, removed = jaxdust.click(board, 0, 0)
clicks: int = jaxdust.solve(board, node_limit=1000).length
jaxdust.click(board, 0, 0, rules=3)
jaxdust.solve(board, node_limit="many")
jaxdust.beam_search(board, width="wide")
labels: str = jaxdust.cluster_labels(board)
"""


def test_a_users_type_checker_sees_the_public_signatures(tmp_path):
    script = tmp_path / "use.py"
    script.write_text(USER_SCRIPT)
    # The editable install's import hook is invisible to mypy: the checkout is given as a
    # source path instead (an installed wheel is found through py.typed).
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    result = _mypy("--follow-imports", "silent", str(script), cwd=tmp_path, env=env)
    errors = [int(line) for line in re.findall(r"^use\.py:(\d+): error", result.stdout, re.M)]
    assert errors == [7, 8, 9, 10], result.stdout + result.stderr
