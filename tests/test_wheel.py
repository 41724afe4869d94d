"""A wheel built from the repository carries what it needs: installed on its own (into an
empty folder, away from the checkout), the README's API example runs and the board sets
read; the optional extras stay optional in its metadata."""

import json
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # end-to-end: python -m pytest -m 'not slow' leaves it out

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_the_wheel_installs_and_runs_on_its_own(tmp_path):
    # Built from a copy: setuptools builds in the source tree, and a build/ folder left in the
    # checkout would carry stale files into later wheels.
    source = shutil.copytree(ROOT, tmp_path / "source", symlinks=True, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "runs", "results", "*.egg-info", "__pycache__", "notebooks"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(source)],
                   check=True, capture_output=True, timeout=600)
    [wheel] = (tmp_path / "dist").glob("jaxdust-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    # py.typed: a user's type checker reads the package's types
    assert {"jaxdust/data/boards/eval_8x6x5.txt", "jaxdust/data/boards/optimal_8x6x5.txt",
            "jaxdust/data/boards/fewest_clicks_v1_8x6x5.txt", "jaxdust/data/ranking/ranking_8x6x5.jsonl",
            "jaxdust/py.typed", "jaxdust/data/networks/imitation-8x6x5/params.msgpack",
            "jaxdust/data/networks/imitation-8x6x5/published.json"} <= names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert "License-Expression: MIT" in metadata
    requires = re.findall(r"^Requires-Dist: (.*)$", metadata, re.M)
    for optional in ("jumanji", "gymnasium", "tensorboardX"):
        assert all("extra ==" in line for line in requires if line.startswith(optional)), requires

    # Dependencies come from the test environment; jaxdust only from the wheel.
    target = tmp_path / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=600)
    example = re.search(r"## API in ten lines\n\n```python\n(.*?)```", README, re.S).group(1)
    check = example + (
        "\nimport jaxdust.core.boards as b, pathlib, sys\n"
        f"assert pathlib.Path(jaxdust.__file__).is_relative_to({str(target)!r}), jaxdust.__file__\n"
        "assert len(jaxdust.read_board_file(b.EVAL_FILE)) == 1000\n"
        "assert len(jaxdust.read_board_file(pathlib.Path(b.BOARDS_DIR) / 'optimal_8x6x5.txt')) == 100\n"
        "from jaxdust.evaluation import benchmark\n"
        "assert all(benchmark.load_set(size).proven.all() for size in benchmark.SIZES)\n"
        "from jaxdust.evaluation import ranking\n"
        "assert len(ranking.load()) > 100\n"
        "from jaxdust.learn.runs import load_run\n"
        "assert load_run('@imitation-8x6x5').learner == 'imitation'\n"
        "print('wheel ok')\n")
    # No JAX_COMPILATION_CACHE_DIR: the installed commands keep their programs in the user cache.
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu",
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0 and "wheel ok" in result.stdout, result.stderr[-3000:]

    # The installed commands, from the wheel alone.
    commands = target / "bin"
    result = subprocess.run([str(commands / "jaxdust-evaluate"), "--limit", "2", "--agents",
                             "largest,policy:@avi-8x6x5", "--jobs", "1", "--out", str(tmp_path / "evaluated")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "evaluated" / "summary.json").exists() and "optimal (proven)" in result.stdout
    assert "policy:@avi-8x6x5" in result.stdout  # a published network plays from the wheel
    result = subprocess.run([str(commands / "jaxdust-solve"), "-", "--width", "4", "--height", "3", "--jobs", "1"],
                            input="112233112233\n", cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and '"optimal": true' in result.stdout, result.stderr[-3000:]
    result = subprocess.run([str(commands / "jaxdust-leaderboard"), "--set", "8x4x5", "--limit", "3", "--entries",
                             "largest,beam:1", "--jobs", "1", "--out", str(tmp_path / "board.json")], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads((tmp_path / "board.json").read_text())["rows"]
    assert len(rows) == 2 and all(row["boards"] == 3 for row in rows), rows
    assert rows[0]["mean_clicks"] <= rows[1]["mean_clicks"]  # best first
    assert any((tmp_path / "cache" / "jaxdust" / "xla").iterdir())  # the beam compiled once is kept
    result = subprocess.run([str(commands / "jaxdust-train"), "avi", "--total-updates", "0"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    # Parsed by the installed command, which goes by its own name.
    assert result.returncode == 2 and result.stderr.startswith("jaxdust-train avi: error: --total-updates must be > 0")
    result = subprocess.run([str(commands / "jaxdust-train"), "avi", "--seed", "x"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 2 and result.stderr.startswith("jaxdust-train avi: error: argument --seed")


def test_the_sdist_holds_the_whole_project(tmp_path):
    """Its tests run from it (conftest, the reference rules, the scripts and docs they
    read), and it carries the licence."""
    try:
        tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True,
                                 text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs the project as a git checkout, to know its files")
    source = shutil.copytree(ROOT, tmp_path / "source", symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".whl", "build", "dist", "runs", "results", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path / "dist"), str(source)],
                   check=True, capture_output=True, timeout=600)
    [sdist] = (tmp_path / "dist").glob("jaxdust-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    # jaxdust/data, a link to data/, arrives as a folder of the files the wheel ships.
    missing = sorted(set(tracked) - names - {".gitignore", "jaxdust/data"})
    assert not missing, missing
    assert {"LICENSE", "tests/conftest.py", "jaxdust/data/boards/eval_8x6x5.txt"} <= names
