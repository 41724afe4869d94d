"""The docs site builds offline with no warning (mkdocs build --strict: every page in the
nav, every link and anchor found), its API pages come from the docstrings, and its results
page holds the tables the README points to; the pages' Python examples run as written."""

import os
import pathlib
import json
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # end-to-end: python -m pytest -m 'not slow' leaves it out

ROOT = pathlib.Path(__file__).resolve().parent.parent


DOC_TEXTS = {path.relative_to(ROOT).as_posix(): path.read_text()
             for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]}


def _resolves(name: str) -> bool:
    """Whether ``name`` (``jaxdust.module.attribute``) is there once its longest module
    prefix is imported."""
    import importlib

    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:end]))
        except ModuleNotFoundError:
            continue
        for part in parts[end:]:
            if not hasattr(target, part):
                return False
            target = getattr(target, part)
        return True
    return False


def test_every_name_the_docs_give_exists():
    names = {(page, name) for page, text in DOC_TEXTS.items()
             for name in re.findall(r"`(jaxdust(?:\.[A-Za-z_]\w*)+)", text)}
    assert len(names) > 30
    assert [f"{page}: {name}" for page, name in sorted(names) if not _resolves(name)] == []


def test_the_calls_in_the_docs_tables_work_after_import_jaxdust():
    # A table row puts jaxdust.solve(...) beside jaxdust.solver.points.beam(...): one import for both.
    calls = sorted({name for text in DOC_TEXTS.values() for row in re.findall(r"^\|.*", text, re.M)
                    for name in re.findall(r"`(jaxdust(?:\.[A-Za-z_]\w*)+)\(", row)})
    assert "jaxdust.solver.points.nmcs" in calls
    script = ("import functools, sys, jaxdust\n"
              "for name in sys.argv[1:]:\n"
              "    functools.reduce(getattr, name.split('.')[1:], jaxdust)\n")
    result = subprocess.run([sys.executable, "-c", script, *calls], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
    site_dir = tmp_path_factory.mktemp("site")
    # Offline: a request through the proxy variables goes to a closed port and fails the build.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HTTP_PROXY": "http://127.0.0.1:9",
           "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}
    # From another folder: paths in mkdocs.yml are the config's, not the working folder's.
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                             "--site-dir", str(site_dir)],
                            cwd=site_dir.parent, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return site_dir


def test_api_pages_come_from_the_docstrings(site):
    top = (site / "api" / "index.html").read_text()
    assert 'id="jaxdust.solve"' in top and "A shortest solution of" in top  # jaxdust.solve's docstring
    evaluation = (site / "api" / "evaluation" / "index.html").read_text()
    assert "The fewest-clicks benchmark: versioned board sets" in evaluation
    # play_boards' docstring sends its reader to the baselines, which had no page.
    for name in ("baselines.largest_cluster", "stats.standard_error", "plots.length_histograms"):
        assert f'id="jaxdust.evaluation.{name}"' in evaluation, name
    # mkdocstrings leaves out what has no docstring: Solution, State and four more were missing.
    import jaxdust

    missing = [name for name in jaxdust.__all__ if f'id="jaxdust.{name}"' not in top]
    assert not missing, f"exported but not on the API page (give them docstrings): {missing}"


def test_results_page_has_the_tables(site):
    results = (site / "results" / "index.html").read_text()
    for header in ("gap to optimum", "plain IDA* median s (its proven)", "lengths equal to numba's",
                   "bytes of state per game", "largest batch in 80 GB", "top-1 optimal", "mean points"):
        assert header in results, header


def test_rules_page_includes_rules_md(site):
    assert "The family: other rule sets on the same boards" in (site / "rules" / "index.html").read_text()



PYTHON_BLOCK = r"```python\n(.*?)```"


def _examples(page: str) -> list[str]:
    return re.findall(PYTHON_BLOCK, (ROOT / "docs" / page).read_text(), re.S)


# Names a page's example leaves to the reader, given so the example can run as written.
READER_DEFINES = {"benchmark.md": "import jaxdust\n"
                                  "def my_solver(boards):\n"
                                  "    return [jaxdust.beam_search(board, width=8).actions for board in boards]\n"}
# A page whose only example is the README's first, which tests/test_readme.py runs, is not run again.
README_API_EXAMPLE = re.findall(PYTHON_BLOCK, (ROOT / "README.md").read_text(), re.S)[:1]
EXAMPLE_PAGES = sorted(page.name for page in (ROOT / "docs").glob("*.md")
                       if _examples(page.name) not in ([], README_API_EXAMPLE))


def test_every_page_with_python_examples_is_run():
    # A page given a new example is run by the test below without a change here.
    assert {"benchmark.md", "environments.md", "solvers.md"} <= set(EXAMPLE_PAGES)


@pytest.mark.parametrize("page", EXAMPLE_PAGES)
def test_a_page_s_python_examples_run_in_order(page, tmp_path):
    code = READER_DEFINES.get(page, "") + "\n".join(_examples(page))  # later blocks use earlier blocks' names
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    if page == "benchmark.md":  # score prints each row: the agent's name and its set
        assert "| mine |" in result.stdout and "| beam:64 |" in result.stdout, result.stdout
        # "Your own agent": the registered agent in evaluate.py's report, animation and the leaderboard
        assert set(json.loads((tmp_path / "results" / "mine" / "summary.json").read_text())["agents"]) >= {"mine"}
        assert (tmp_path / "results" / "mine" / "game-mine-0.gif").exists()
        assert "mine" in {row["agent"] for row in json.loads((tmp_path / "results" / "board.json").read_text())["rows"]}
