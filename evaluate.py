"""Evaluate agents, solvers and baselines: ``python evaluate.py [flags]`` (``--help`` lists
them).

The command line lives in ``jaxdust.evaluation.cli``, so it is importable from the
installed package (``jaxdust-evaluate``); this file is its entry point at the repository's
top level.
"""

from jaxdust.evaluation.cli import main, run

__all__ = ["main", "run"]  # main(argv) returns the report: `import evaluate` in tests and notebooks

if __name__ == "__main__":
    run()
