"""Train a dust-game agent: ``python train.py LEARNER [flags]`` (``--help`` lists them).

The command line lives in ``jaxdust.learn.cli``, so it is importable from the installed
package; this file is its entry point at the repository's top level.
"""

from jaxdust.learn.cli import run

if __name__ == "__main__":
    run()
