"""Proof times of two revisions of the exact solver, interleaved on the same boards.

One benchmark run cannot resolve a 10% change on a machine whose speed drifts by more than
that between minutes (this VM: up to 25%). This script checks both revisions out into
temporary git worktrees and, round after round, proves each board once per revision,
alternating, each proof in a fresh process pinned to one core with its own numba cache. Per
board it keeps the fastest round; it reports the medians and the median per-board ratio.

    python benchmarks/compare_solvers.py HEAD~1 HEAD             # ten 12-click 8x6 boards
    python benchmarks/compare_solvers.py main WORKTREE --rounds 3 --length 13 --boards 4

``WORKTREE`` is the working tree as it is, uncommitted changes included.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import numpy as np

from jaxdust.core import files, flags, machine
from jaxdust.core.progress import progress_bar

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

BOARDS = os.path.join(ROOT, "data", "boards", "eval_8x6x5.txt")
# Runs in a fresh interpreter with a revision's source tree first on the path.
_PROVE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import jaxdust
from jaxdust import solve
assert jaxdust.__file__.startswith(sys.argv[1]), jaxdust.__file__
solve(jaxdust.parse_board("1221" * 9, 6, 6))  # loads the compiled code before the clock starts
board = jaxdust.parse_board(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
result = solve(board, float(sys.argv[5]))
print(json.dumps({"seconds": result.seconds, "nodes": result.nodes, "length": result.length,
                  "optimal": result.optimal}))
"""


def _checkout(revision: str, into: str, index: int) -> str:
    if revision == "WORKTREE":
        return ROOT
    # Numbered: a revision compared with itself (a noise check) gets a worktree of its own.
    path = os.path.join(into, f"{index}-" + revision.replace("/", "_").replace("~", "-").replace("^", "-"))
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", path, revision],
                   check=True, capture_output=True)
    return path


@contextlib.contextmanager
def checked_out(*revisions: str):
    """Each revision's source tree, a temporary git worktree (``WORKTREE``: this checkout
    as it is), and a scratch folder beside them; all removed afterwards."""
    scratch = tempfile.mkdtemp(prefix="jaxdust-revisions-")
    sources = []
    # Stopped by SIGTERM (timeout, a job scheduler) too, the worktrees are removed: else
    # they stay registered in the repository.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        for index, revision in enumerate(revisions):
            sources.append(_checkout(revision, scratch, index))
        yield sources, scratch
    finally:
        for source in sources:
            if source != ROOT:
                subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", source], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)


def _prove(source: str, cache: str, board: str, time_limit: float, cpu: int | None) -> dict:
    command = [sys.executable, "-c", _PROVE, source, board, "8", "6", str(time_limit)]
    if cpu is not None and shutil.which("taskset"):
        command = ["taskset", "-c", str(cpu), *command]
    return run_json(command, dict(os.environ, NUMBA_CACHE_DIR=cache), source, "proof")


class RevisionFailed(RuntimeError):
    """A revision's process failed, or did not do what is measured: ``main_command`` ends
    the command with its message."""


def run_json(command: list[str], environment: dict, source: str, what: str) -> dict:
    """``command`` run in the checkout ``source``: its last printed line, read as JSON
    (RevisionFailed with the end of its stderr when it fails)."""
    done = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=source)
    if done.returncode:
        raise RevisionFailed(f"{what} failed in {source}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main_command(main):
    """``main()`` as the command runs it: Ctrl-C, a full disk (``flags.run_command``) and a
    failing revision each end it in a line or two, not a traceback (status 1)."""
    def checked():
        try:
            return main()
        except RevisionFailed as error:
            print(f"{os.path.basename(sys.argv[0])}: error: {error}", file=sys.stderr)
            raise SystemExit(1) from None

    return flags.run_command(checked, "nothing was written and the worktrees are removed; run the command again")


def described(text: str) -> dict:
    """What a revision argument named, for the report: its commit and, for ``WORKTREE``,
    whether the checkout had changes beyond it."""
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD" if text == "WORKTREE" else f"{text}^{{commit}}"],
                            capture_output=True, text=True).stdout.strip()
    found = {"given": text, "commit": commit}
    if text == "WORKTREE":
        found["changed"] = bool(subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                                               capture_output=True, text=True).stdout.strip())
    return found


def revision(text: str) -> str:
    """``WORKTREE`` or a revision of this checkout's git history."""
    if text != "WORKTREE" and subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "--quiet", f"{text}^{{commit}}"],
                                             capture_output=True).returncode:
        raise argparse.ArgumentTypeError(f"{text!r} is not a commit of {os.path.abspath(ROOT)} (or WORKTREE)")
    return text


def revisions_parser(description: str) -> flags.Parser:
    """The two revisions every comparing benchmark takes."""
    parser = flags.Parser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=revision, help="git revision (or WORKTREE)")
    parser.add_argument("new", type=revision, help="git revision (or WORKTREE)")
    return parser


def main(argv=None) -> dict:
    parser = revisions_parser(__doc__)
    parser.add_argument("--length", type=flags.positive_int, default=12,
                        help="take eval boards whose best known length is this (default 12: ~2-6 s each)")
    parser.add_argument("--boards", type=flags.positive_int, default=10)
    parser.add_argument("--rounds", type=flags.positive_int, default=2)
    parser.add_argument("--time-limit", type=flags.positive_float, default=600.0, help="seconds per proof")
    parser.add_argument("--cpu", type=flags.cpu, default=0, help="core to pin the proofs to (taskset)")
    parser.add_argument("--out", type=flags.report_file("compare_solvers"), default="results/compare_solvers.json")
    args = parser.parse_args(argv)

    with open(BOARDS) as handle:
        rows = [line.split() for line in handle if line.strip() and not line.startswith("#")]
    boards = [text for text, _, best in rows if int(best) == args.length][: args.boards]
    if not boards:
        parser.error(f"no eval board has best known length {args.length}")

    with checked_out(args.old, args.new) as (sources, scratch):
        caches = [os.path.join(scratch, f"numba-cache-{i}") for i in range(2)]
        for name, source, cache in zip((args.old, args.new), sources, caches):  # compile outside the measurements
            print(f"compiling {name}'s solver into a fresh numba cache (minutes on a small machine)", file=sys.stderr,
                  flush=True)
            _require_proven(_prove(source, cache, boards[0], args.time_limit, args.cpu), boards[0], args.time_limit,
                            name)
        seconds = np.full((2, len(boards)), np.inf)
        nodes = np.zeros((2, len(boards)), np.int64)
        lengths = np.zeros((2, len(boards)), np.int64)
        with progress_bar(total=args.rounds * len(boards) * 2, unit="proof", file=sys.stderr) as bar:
            for _ in range(args.rounds):
                for b, board in enumerate(boards):
                    for v in range(2):
                        record = _prove(sources[v], caches[v], board, args.time_limit, args.cpu)
                        _require_proven(record, board, args.time_limit, (args.old, args.new)[v])
                        seconds[v, b] = min(seconds[v, b], record["seconds"])
                        nodes[v, b], lengths[v, b] = record["nodes"], record["length"]
                        bar.update()
    if (lengths[0] != lengths[1]).any():
        raise AssertionError("the two revisions prove different optimal lengths")

    ratio = seconds[1] / seconds[0]
    report = {
        "benchmark": "compare_solvers", "old": described(args.old), "new": described(args.new),
        "measured_on": machine.measured_on(None), "cpu_pinned": args.cpu, "time_limit": args.time_limit,
        "rounds": args.rounds,
        "boards": boards, "lengths": lengths[0].tolist(),
        "seconds": {"old": seconds[0].tolist(), "new": seconds[1].tolist()},
        "nodes": {"old": nodes[0].tolist(), "new": nodes[1].tolist()},
        "median_seconds": {"old": float(np.median(seconds[0])), "new": float(np.median(seconds[1]))},
        "median_time_ratio": float(np.median(ratio)),
        "total_time_ratio": float(seconds[1].sum() / seconds[0].sum()),
        "median_nodes_ratio": float(np.median(nodes[1] / nodes[0])),
    }
    print(f"\n{len(boards)} boards of best known length {args.length}, fastest of {args.rounds} rounds, "
          f"one core\n")
    print("| revision | median s | total s | median nodes |")
    print("|---|---:|---:|---:|")
    for v, name in enumerate((args.old, args.new)):
        print(f"| {name} | {np.median(seconds[v]):.3f} | {seconds[v].sum():.2f} | {np.median(nodes[v]):,.0f} |")
    print(f"\nnew / old per board: time {report['median_time_ratio']:.3f} (median), "
          f"{report['total_time_ratio']:.3f} (total); nodes {report['median_nodes_ratio']:.3f} (median)")
    files.atomic_write_json(args.out, report)
    print(f"wrote {args.out}")
    return report


def _require_proven(record: dict, board: str, time_limit: float, name: str) -> None:
    if not record["optimal"]:
        raise RevisionFailed(f"{name} did not prove {board} within --time-limit {time_limit:g} s "
                             f"(the comparison times proofs): give a larger one")


if __name__ == "__main__":
    main_command(main)
