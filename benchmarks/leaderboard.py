"""The fewest-clicks leaderboard: ``python benchmarks/leaderboard.py [flags]`` (``--help`` lists
them).

The command line lives in ``jaxdust.evaluation.leaderboard``, so it is importable from the
installed package (``jaxdust-leaderboard``); this file is its entry point beside the other
benchmarks.
"""

from jaxdust.evaluation.leaderboard import main, run

__all__ = ["main", "run"]  # main(argv) returns the report, as evaluate.main does

if __name__ == "__main__":
    run()
