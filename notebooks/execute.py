"""Run every notebook here top to bottom and store it with its outputs, so that it reads
(boards, curves, histograms) without being run. The stored copies are a CPU's run at the
small settings (``SMALL``), which the tests compare with, so the kernel runs on the CPU
also where a GPU answers (``benchmarks/gpu_suite.py --step notebooks`` runs them at a GPU's
sizes); the files a notebook writes go to a temporary folder, not into the checkout. Each
copy names the jaxdust version that made it (its metadata's ``jaxdust``), and the tests
ask for this version's: run it again after a version change.

    python notebooks/execute.py            # all four, a few minutes on a CPU
    python notebooks/execute.py quickstart
"""

import argparse
import os
import pathlib
import sys
import tempfile

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import jaxdust
from jaxdust.core.files import atomic_write_bytes

HERE = pathlib.Path(__file__).resolve().parent


def execute(path: pathlib.Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="jaxdust-notebook-") as folder:
        # The kernel imports this checkout's jaxdust, whose version the copy is stamped with,
        # not whichever is installed (another checkout's, editable).
        pythonpath = os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))
        NotebookClient(notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": folder}}).execute(
            env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": pythonpath})
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = merged_streams(cell.outputs)
    notebook.metadata["jaxdust"] = {"version": jaxdust.__version__}
    return notebook


def merged_streams(outputs: list) -> list:
    """``outputs`` with each run of one stream's outputs in one, and of every line only its
    last ``\r`` frame (a progress bar's last; tqdm pads its frames, so none shows through),
    so a stored bar reads as one line on every viewer, not one line per frame."""
    merged = []
    for output in outputs:
        if (output.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                and merged[-1]["name"] == output["name"]):
            merged[-1]["text"] += output["text"]
        else:
            merged.append(output)
    for output in merged:
        if output.get("output_type") == "stream":
            output["text"] = "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in output["text"].split("\n"))
    return merged


def main(argv: list[str] | None = None) -> None:
    notebooks = {path.stem: path for path in sorted(HERE.glob("*.ipynb"))}
    parser = argparse.ArgumentParser(prog="execute.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"notebooks to run (default all): {', '.join(notebooks)}")
    names = [pathlib.Path(name).stem for name in parser.parse_args(argv).names] or list(notebooks)  # or their paths
    names = list(dict.fromkeys(names))  # each once, in the order given
    unknown = [name for name in names if name not in notebooks]
    if unknown:
        parser.error(f"no notebook {', '.join(unknown)} here; there are {', '.join(notebooks)}")
    for name in names:
        notebook = execute(notebooks[name])
        atomic_write_bytes(notebooks[name], (nbformat.writes(notebook) + "\n").encode())
        print(f"stored {name}.ipynb with its outputs")


if __name__ == "__main__":
    main()
