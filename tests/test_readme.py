"""The README's commands are the ones CI runs, and its API example runs."""

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from tests import family_reference

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_is_short():
    # Results tables and details live in docs/ (the docs site); the README points there.
    assert len(README.splitlines()) <= 200


def test_readme_links_to_files_that_exist():
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README)  # relative links, anchors dropped
    assert "docs/results.md" in targets and "RULES.md" in targets
    assert [t for t in targets if not (ROOT / t).exists()] == []


def bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, re.S)


def test_readme_opens_with_main_job_and_test_commands():
    main_job, tests = (block.strip() for block in bash_blocks()[:2])
    assert "pip install -e ." in main_job and "pytest" not in main_job
    assert 'pip install -e ".[test]"' in tests and "pytest" in tests
    assert README.index(main_job) < 1500  # near the top


def test_ci_runs_the_readme_test_command():
    test_command = bash_blocks()[1].strip()
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines


@pytest.mark.slow
def test_readme_api_example_runs():
    code = re.search(r"## API in ten lines\n\n```python\n(.*?)```", README, re.S).group(1)
    check = "\nprint(gif[:6], tuple(state.board.shape), int(removed), int(timestep.reward.min()))\n"
    result = subprocess.run([sys.executable, "-c", code + check], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    *letters, printed, checked = result.stdout.splitlines()
    assert len(letters) == 6 and all(len(row) == 8 and row.isalpha() for row in letters)  # 8x6, top row first
    assert printed == "11 True 11"  # the board's proven optimum, which the width-500 beam finds too
    assert checked.startswith("b'GIF8") and "(4096, 8, 6)" in checked
    assert int(checked.split()[-2]) >= 1 and int(checked.split()[-1]) >= -1  # a cluster removed; masks pick legal clicks


@pytest.mark.slow
def test_readme_family_example_runs():
    code = re.search(r"## The SameGame family\n.*?```python\n(.*?)```", README, re.S).group(1)
    namespace = {}
    exec(code, namespace)
    board = np.asarray(namespace["board"])
    after, removed = family_reference.click(board, 0, 0, "samegame")
    assert int(namespace["removed"]) == removed == 3  # as its comment says
    np.testing.assert_array_equal(namespace["after"], after)
    legal = np.zeros(board.shape, bool)
    for cluster in family_reference.clusters(board):
        for x, y in cluster if len(cluster) >= 2 else ():
            legal[x, y] = True
    np.testing.assert_array_equal(namespace["mask"], legal)
    assert int(namespace["points"]) == family_reference.line_points(board, [(0, 0), (3, 2)]) > 0
    assert namespace["env"].game.rules == "samegame"


def test_version_is_the_changelog_s_newest():
    import jaxdust
    root = pathlib.Path(__file__).resolve().parent.parent
    version = re.search(r'^version = "(.+)"', (root / "pyproject.toml").read_text(), re.M).group(1)
    newest = re.search(r"^## (\S+)", (root / "CHANGELOG.md").read_text(), re.M).group(1)
    assert jaxdust.__version__ == version == newest
