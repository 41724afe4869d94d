"""Run every notebook here top to bottom and store it with its outputs, so that it reads
(boards, curves, histograms) without being run. Its settings follow the machine (``SMALL``
on a CPU, the full sizes on a GPU); the files a notebook writes go to a temporary folder,
not into the checkout:

    python notebooks/execute.py            # all three, a few minutes on a CPU
    python notebooks/execute.py quickstart

The tests execute them again and check that the stored copies were executed in order.
"""

import pathlib
import sys
import tempfile

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from jaxdust.core.files import atomic_write_bytes

HERE = pathlib.Path(__file__).resolve().parent


def execute(path: pathlib.Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="jaxdust-notebook-") as folder:
        NotebookClient(notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": folder}}).execute()
    return notebook


def main(names: list[str]) -> None:
    for path in sorted(HERE.glob("*.ipynb")):
        if names and path.stem not in names:
            continue
        notebook = execute(path)
        atomic_write_bytes(path, (nbformat.writes(notebook) + "\n").encode())
        print(f"stored {path.name} with its outputs")


if __name__ == "__main__":
    main(sys.argv[1:])
