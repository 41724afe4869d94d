"""The notebooks run top to bottom with their small settings (as in Colab, but on CPU)."""

import pathlib
import re

import jax
import nbformat
import pytest

import jaxdust

from tests.conftest import notebook_runner

pytestmark = pytest.mark.slow  # end-to-end: python -m pytest -m 'not slow' leaves it out

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_four_notebooks():
    assert [p.stem for p in NOTEBOOKS] == ["quickstart", "solvers_evaluation", "train_avi", "train_dqn"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_notebooks_are_executed_and_open_in_colab(path):
    """Stored with their outputs (``python notebooks/execute.py``), so they read unrun."""
    notebook = nbformat.read(path, as_version=4)
    counts = [c.get("execution_count") for c in notebook.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1))  # run top to bottom, in one kernel
    assert any(c.get("outputs") for c in notebook.cells if c.cell_type == "code")
    assert not [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])
                if o.get("output_type") == "error"]
    for cell in (c for c in notebook.cells if c.cell_type == "code"):  # streams merged, bars at their last frame
        streams = [o.get("name") if o.get("output_type") == "stream" else None for o in cell.get("outputs", [])]
        assert all(a is None or a != b for a, b in zip(streams, streams[1:])), streams
        assert not any("\r" in o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    colab = f"https://colab.research.google.com/github/jaxdust/jaxdust/blob/main/notebooks/{path.name}"
    assert colab in notebook.cells[0].source
    # printed_shape blanks the numbers, so stale seeded figures pass it: a version's copies are its own
    made_by = notebook.metadata.get("jaxdust", {}).get("version")
    assert made_by == jaxdust.__version__, (
        f"{path.name} was stored by jaxdust {made_by}, this is {jaxdust.__version__}: run python notebooks/execute.py")


def test_the_install_cell_says_when_a_gpu_answers_but_jax_runs_on_the_cpu(tmp_path):
    """With jaxdust installed the cell installs nothing: a CPU build on a GPU runtime ran
    every cell on the CPU without a word."""
    import os
    import subprocess
    import sys

    cell = nbformat.read(NOTEBOOKS[0], as_version=4).cells[1].source
    assert all(nbformat.read(path, as_version=4).cells[1].source == cell for path in NOTEBOOKS)
    (tmp_path / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")  # a GPU that answers
    (tmp_path / "nvidia-smi").chmod(0o755)
    for path_dirs, noted in (([str(tmp_path)], True), ([], False)):
        env = {**os.environ, "JAX_PLATFORMS": "cpu",
               "PATH": os.pathsep.join(path_dirs + [p for p in os.environ["PATH"].split(os.pathsep)
                                                    if not os.path.exists(os.path.join(p, "nvidia-smi"))])}
        ran = subprocess.run([sys.executable, "-c", cell], capture_output=True, text=True, env=env, timeout=300)
        assert ran.returncode == 0, ran.stderr[-2000:]
        import jax
        note = f'note: a GPU answers but JAX runs on the CPU: pip install "jax[cuda12]=={jax.__version__}"'
        assert (note in ran.stdout) == noted, ran.stdout


# Run before the install cell: jaxdust is found only in the working folder and on
# PYTHONPATH, as where no jaxdust is installed (whatever way this one was), and pip is
# recorded, not run.
NOT_INSTALLED = """
import importlib.machinery, os, subprocess, sys
class _OnlyBesideOrOnPythonpath:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in os.environ.get("MISSING_MODULES", "").split(","):  # as on a Colab runtime
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if name != "jaxdust":
            return None
        allowed = [os.getcwd(), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        spec = importlib.machinery.PathFinder.find_spec(name, allowed)
        if spec is None:
            raise ModuleNotFoundError("No module named 'jaxdust'", name=name)
        return spec
sys.meta_path.insert(0, _OnlyBesideOrOnPythonpath())
_run = subprocess.run
def _recorded(command, *args, **kwargs):
    if "pip" in command:
        print("PIP", " ".join(command))
        if os.environ.get("PIP_UPGRADES_JAX"):  # as pip would on Colab: a newer JAX on the disk
            import importlib.metadata
            _version = importlib.metadata.version
            importlib.metadata.version = lambda name: "99.0" if name == "jax" else _version(name)
        return subprocess.CompletedProcess(command, 0, "", "")
    return _run(command, *args, **kwargs)
subprocess.run = _recorded
"""


def test_the_install_cell_installs_only_where_jaxdust_does_not_import(tmp_path):
    """A checkout on PYTHONPATH (no distribution) asked pip for jaxdust from GitHub, which a
    machine without the internet cannot reach: every notebook failed in its first cell.
    Where jaxdust does not import it installs: nowhere to be found, a clone's folder beside
    the notebook (no code: a namespace), a clone's root without jaxdust's dependencies, or
    without those ``import jaxdust`` leaves for later (mctx, say: it imported, and the first
    cell to train failed). A
    JAX imported before pip upgraded it (by that clone's failed import) stayed in use at its
    old version, beside the new one's files, without a word: the cell asks for a restart."""
    import os
    import subprocess
    import sys

    cell = nbformat.read(NOTEBOOKS[0], as_version=4).cells[1].source
    checkout = str(pathlib.Path(__file__).resolve().parent.parent)
    for folder in ("empty", "beside/jaxdust", "root/jaxdust", "late/jaxdust"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "root" / "jaxdust" / "__init__.py").write_text("import jax\nimport no_such_dependency_of_jaxdust\n")
    (tmp_path / "late" / "jaxdust" / "__init__.py").write_text("import jax\n")  # imports; mctx is missing
    for folder, pythonpath, installs, upgrades in (("empty", checkout, False, False), ("empty", "", True, False),
                                                   ("beside", "", True, False), ("root", "", True, False),
                                                   ("root", "", True, True), ("late", "", True, False)):
        env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": pythonpath, "PIP_UPGRADES_JAX": "1" * upgrades,
               "MISSING_MODULES": "mctx" if folder == "late" else ""}
        ran = subprocess.run([sys.executable, "-c", NOT_INSTALLED + cell], capture_output=True, text=True,
                             env=env, cwd=tmp_path / folder, timeout=300)
        assert ("PIP" in ran.stdout and "jaxdust @ git+https://" in ran.stdout) == installs, (folder, ran.stdout)
        if upgrades:
            assert ran.returncode == 1 and "RuntimeError: jaxdust is installed, but jax had been imported before at " \
                "another version: restart the runtime" in ran.stderr, ran.stderr[-2000:]
        else:
            assert ran.returncode == 0 and "JAX" in ran.stdout, ran.stderr[-2000:]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path):
    notebook = nbformat.read(path, as_version=4)
    # Small sizes on a CPU (as here), full ones on a GPU runtime; the install cell takes
    # JAX's CUDA wheels when a GPU answers.
    assert 'SMALL = jax.default_backend() == "cpu"' in notebook.cells[2].source
    assert '"jaxdust[cuda]" if gpu else "jaxdust"' in notebook.cells[1].source
    notebook = notebook_runner().execute(path)  # as stored: in a temporary folder, streams merged
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    for cell in (c for c in notebook.cells if c.cell_type == "code"):
        streams = [o.get("name") if o.get("output_type") == "stream" else None for o in cell.outputs]
        assert all(a is None or a != b for a, b in zip(streams, streams[1:])), streams
        assert not any("\r" in o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    if jax.default_backend() == "cpu":  # the stored copies are a CPU's run, at the small sizes
        stored = nbformat.read(path, as_version=4)
        assert printed_shape(notebook) == printed_shape(stored), (
            f"{path.name}: its stored outputs are not what the code prints now; run python notebooks/execute.py "
            f"{path.stem}")
    outputs = "".join(str(o.get("text", "")) for c in notebook.cells for o in c.get("outputs", []))
    assert "JAX" in outputs  # the install cell ran
    assert f"jaxdust {jaxdust.__version__}, JAX {jax.__version__}, on " in outputs  # what its figures were measured on
    if path.stem == "solvers_evaluation":  # the evaluation shows its progress in a kernel
        assert "game/s]" in outputs or "s/game]" in outputs


def printed_shape(notebook) -> list:
    """Each code cell's stdout with its numbers and runs of spaces blanked (timings, and the
    columns they shift, vary by machine), and the kinds of its other outputs: what a stored
    copy must still show after a change to what the code prints. Stderr is left out (a
    cold numba cache's note, progress bars), and so are the install cell's output (the JAX
    build and devices it found, a note where a GPU answers but JAX runs on the CPU) and the
    settings cell's (the machine's name)."""
    shape = []
    for cell in [c for c in notebook.cells if c.cell_type == "code"][2:]:
        stdout = "".join(o["text"] for o in cell.get("outputs", []) if o.get("output_type") == "stream"
                         and o["name"] == "stdout")
        kinds = [o["output_type"] for o in cell.get("outputs", []) if o.get("output_type") != "stream"]
        shape.append((re.sub(r"\s+", " ", re.sub(r"[+-]?\d[\d,]*(\.\d+)?", "#", stdout)), kinds))
    return shape
