"""``python -m jaxdust``: the version, and the commands an install adds with what each does.

The commands are the installed scripts (pyproject's ``[project.scripts]``), each also run
as ``python -m MODULE``.
"""

import sys

from jaxdust import __version__
from jaxdust.core import flags

# (the command an install adds, or None; the module ``python -m`` runs; what it does)
COMMANDS = (
    ("jaxdust-train", "jaxdust.learn.cli", "train a learner (avi, dqn, imitation); --resume continues a run"),
    ("jaxdust-evaluate", "jaxdust.evaluation.cli", "play agents, searches and solvers on a board set"),
    ("jaxdust-solve", "jaxdust.solver", "proven shortest solutions of a file of boards, on all cores"),
    ("jaxdust-leaderboard", "jaxdust.evaluation.leaderboard", "every agent on the standard sets, resumable"),
    (None, "jaxdust.learn.datasets", "a training data set of solved boards, in resumable shards"),
    (None, "jaxdust.evaluation.ranking", "how a run's value ranks children, on positions with exact labels"),
    (None, "jaxdust.learn.published", "publish a run's selected checkpoints as @NAME (a maintainer's tool)"),
)

# The scripts a checkout has for the commands it uses most.
CHECKOUT_SCRIPTS = {"jaxdust.learn.cli": "train.py", "jaxdust.evaluation.cli": "evaluate.py"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["-h"], ["--help"], ["--version"]):
        print(f"{_overview()}\n\npython -m jaxdust: error: it takes no arguments but --version, got "
              f"{' '.join(argv)}", file=sys.stderr)
        return 2
    print(f"jaxdust {__version__}" if argv == ["--version"] else _overview())
    return 0


def _overview() -> str:
    names = [command or f"python -m {module}" for command, module, _ in COMMANDS]
    width = max(map(len, names))
    lines = [f"jaxdust {__version__}: JAX simulators, solvers and learners for the dust game and the SameGame "
             "family.", "", "Commands (each takes --help; python -m MODULE where the command is not on PATH):"]
    for name, (command, module, does) in zip(names, COMMANDS):
        lines.append(f"  {name:<{width}}  {does}")
        if command:
            script = f"; {CHECKOUT_SCRIPTS[module]} in a checkout" if module in CHECKOUT_SCRIPTS else ""
            lines.append(f"  {'':<{width}}  python -m {module}{script}")
    lines += ["", "The library: import jaxdust (docs/api/index.md)."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(flags.run_command(main, "nothing to keep"))
