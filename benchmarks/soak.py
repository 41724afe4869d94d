"""Soak: the main job's pieces killed (SIGKILL) at random moments, again and again, then
checked against uninterrupted runs.

    python benchmarks/soak.py --minutes 30            # rounds until the time is up
    python benchmarks/soak.py --rounds 1 --kills 1    # the short form the tests run

Pieces: ``train`` (a small DQN run, restarted with ``--resume``), ``datasets`` (an exact-
labelled data set, resumed by rerunning), ``solve`` (``python -m jaxdust.solver --out``,
resumed by rerunning) and ``evaluate`` (resumed by rerunning: the agents it had finished
are kept; what a killed run left must be whole files or none). Each piece runs once uninterrupted for its reference and
duration; each round then starts it in a fresh directory and kills it ``--kills`` times,
each after a random delay (from ``--seed``) of up to 80% of its reference duration,
restarting it after each kill (a run that finishes first is started over), and finally lets
it finish. Its result must equal the reference: the data set
byte for byte, the others with wall-clock fields removed. Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import jaxdust
from jaxdust.core import files, flags, machine
from jaxdust.core.boards import BOARDS_DIR

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PYTHON = sys.executable
BOARDS = os.path.join(BOARDS_DIR, "optimal_8x4x5.txt")
TRAIN = ["train.py", "dqn", "--total-steps", str(32 * 60), "--num-envs", "32", "--chunk-iterations", "10",
         "--hidden", "32", "--buffer-size", "1024", "--batch-size", "32", "--learning-starts", "64",
         "--no-features", "--eval-boards", "16", "--eval-every", "2",
         "--checkpoint-every", "1"]  # not by the clock: the kills must fall between checkpoints


def _without(record: dict, *keys: str) -> dict:
    return {k: v for k, v in record.items() if k not in keys}


def _bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _folder_bytes(directory: str) -> dict:
    return {name: _bytes(os.path.join(directory, name)).hex() for name in sorted(os.listdir(directory))}


# Each piece: the command for a fresh output directory (and whether it has been started
# before there), and what its finished output must equal.
def train_command(out: str) -> list:
    started = os.path.exists(os.path.join(out, "config.json"))
    return [PYTHON, *TRAIN, "--run-dir", out, *(["--resume"] if started else [])]


def train_result(out: str):
    return {"metrics": [_without(r, "seconds") for r in files.recover_json_lines(os.path.join(out, "metrics.jsonl"), repair=False)],
            "summary": _without(json.loads(_bytes(os.path.join(out, "summary.json"))), "seconds")}


def datasets_command(out: str) -> list:
    return [PYTHON, "-m", "jaxdust.learn.datasets", "--out", out, "--boards", "24", "--size", "6x4x4",
            "--seed", "7", "--node-limit", "20000", "--shard-size", "5", "--jobs", "1"]


def solve_command(out: str) -> list:
    return [PYTHON, "-m", "jaxdust.solver", BOARDS, "--out", os.path.join(out, "solutions.jsonl"), "--jobs", "1"]


def solve_result(out: str):
    records = files.recover_json_lines(os.path.join(out, "solutions.jsonl"), repair=False)
    return sorted((_without(r, "seconds") for r in records), key=lambda r: r["line"])


def evaluate_command(out: str) -> list:
    return [PYTHON, "evaluate.py", "--boards", BOARDS, "--limit", "40", "--agents", "largest,beam:8,dfs:2000",
            "--jobs", "1", "--out", out]


def evaluate_result(out: str):
    summary = json.loads(_bytes(os.path.join(out, "summary.json")))
    for agent in summary["agents"].values():
        agent.pop("seconds_per_board")
    return {"summary": summary, "boards.csv": _bytes(os.path.join(out, "boards.csv"))}


def evaluate_leftovers_whole(out: str) -> bool:
    """A killed evaluate.py leaves each output whole or absent (atomic writes)."""
    ends = {"summary.json": b"}\n", "lengths.png": b"IEND\xaeB`\x82"}
    kept = os.path.join(out, "played-so-far")
    ends.update({os.path.join(kept, name): b"}\n" for name in (os.listdir(kept) if os.path.isdir(kept) else [])
                 if not name.startswith(files.TEMPORARY_PREFIX)})  # a write cut short, never read
    for name, end in ends.items():
        path = os.path.join(out, name)
        if os.path.exists(path) and not _bytes(path).endswith(end):
            return False
    return True


PIECES = {
    "train": (train_command, train_result),
    "datasets": (datasets_command, _folder_bytes),
    "solve": (solve_command, solve_result),
    "evaluate": (evaluate_command, evaluate_result),
}


def run_to_end(command: list) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def killed_run(piece: str, out: str, kills: int, duration: float, rng: random.Random) -> dict:
    """Start, kill after random delays ``kills`` times (restarting each time), then finish.
    ``duration`` is a whole run's seconds; a whole run that ends before its kill shortens it
    (the reference run was the cold one: later ones load XLA's and numba's caches)."""
    command_for = PIECES[piece][0]
    done = {"kills": 0, "finished_before_kill": 0, "whole_leftovers": True}
    for _ in range(4 * kills):
        if done["kills"] == kills:
            break
        started, whole = time.perf_counter(), not os.listdir(out)  # a whole run, not a resumed one
        process = subprocess.Popen(command_for(out), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # A restarted run has less left to do: kill within the first 80% of a whole one.
            if process.wait(timeout=rng.uniform(0.1, 0.8) * duration) != 0:
                raise RuntimeError(f"{piece} failed on its own after {done['kills']} kill(s) in {out}")
            done["finished_before_kill"] += 1
            if whole:
                duration = min(duration, time.perf_counter() - started)
            shutil.rmtree(out)  # it won the race: start over, so the next kill lands
            os.makedirs(out)
            done["kills"] = 0  # those kills are not in the history of the run that is checked
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
            process.wait()
            done["kills"] += 1
            if piece == "evaluate":
                done["whole_leftovers"] &= evaluate_leftovers_whole(out)
    subprocess.run(command_for(out), cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return done


def main(argv=None) -> dict:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pieces", default=",".join(PIECES), help=f"comma-separated, from {', '.join(PIECES)}")
    parser.add_argument("--minutes", type=flags.positive_float, default=None, help="run rounds until this long")
    parser.add_argument("--rounds", type=flags.positive_int, default=None, help="rounds (default 1 without --minutes)")
    parser.add_argument("--kills", type=flags.positive_int, default=3, help="kills per run before it may finish")
    parser.add_argument("--seed", type=flags.seed, default=0)
    parser.add_argument("--out", type=flags.report_file("soak"), default="results/soak.json")
    args = parser.parse_args(argv)
    pieces = [p.strip() for p in args.pieces.split(",")]
    unknown = [p for p in pieces if p not in PIECES]
    if unknown or not pieces:
        flags.fail(parser, f"--pieces: unknown {', '.join(unknown)}; choose from {', '.join(PIECES)}")
    if len(set(pieces)) < len(pieces):  # each piece's runs share one folder
        flags.fail(parser, f"--pieces: {', '.join(sorted({p for p in pieces if pieces.count(p) > 1}))} given twice")
    rounds = args.rounds or (None if args.minutes else 1)

    rng = random.Random(args.seed)
    start = time.perf_counter()
    report = {"benchmark": "soak", "kills_per_run": args.kills, "seed": args.seed, "pieces": {}}
    with tempfile.TemporaryDirectory(prefix="soak-") as scratch:
        references = {}
        for piece in pieces:
            out = os.path.join(scratch, f"{piece}-reference")
            os.makedirs(out)
            seconds = run_to_end(PIECES[piece][0](out))
            references[piece] = (PIECES[piece][1](out), seconds)
            report["pieces"][piece] = {"reference_seconds": seconds, "runs": 0, "kills": 0, "equal": 0,
                                       "finished_before_kill": 0, "whole_leftovers": True}
        round_index = 0
        # At least one round: --minutes shorter than the references would otherwise soak
        # nothing and still pass.
        while round_index == 0 or ((rounds is None or round_index < rounds) and (
                args.minutes is None or time.perf_counter() - start < 60 * args.minutes)):
            for piece in pieces:
                out = os.path.join(scratch, f"{piece}-{round_index}")
                os.makedirs(out)
                reference, seconds = references[piece]
                outcome = killed_run(piece, out, args.kills, seconds, rng)
                row = report["pieces"][piece]
                row["runs"] += 1
                row["kills"] += outcome["kills"]
                row["finished_before_kill"] += outcome["finished_before_kill"]
                row["whole_leftovers"] &= outcome["whole_leftovers"]
                row["equal"] += PIECES[piece][1](out) == reference
                shutil.rmtree(out)
            round_index += 1
    report["minutes"] = (time.perf_counter() - start) / 60
    # Asked after the pieces: JAX's backend started in this process beside them would take
    # a GPU's memory (preallocated) from their train.py.
    report["measured_on"] = machine.measured_on(jaxdust.__version__)

    print(f"\n{'piece':<10} {'runs':>5} {'kills':>6} {'equal':>6} {'reference s':>12}")
    for piece, row in report["pieces"].items():
        print(f"{piece:<10} {row['runs']:>5} {row['kills']:>6} {row['equal']:>6} {row['reference_seconds']:>12.1f}")
    print(f"({report['minutes']:.1f} minutes; 'equal': runs that ended equal to the uninterrupted reference)")
    for piece, row in report["pieces"].items():
        if row["kills"] < row["runs"] * args.kills:  # the runs outran their kills: they tested less than asked
            print(f"{piece}: {row['kills']} kills landed of the {row['runs'] * args.kills} asked", file=sys.stderr)
    files.atomic_write_json(args.out, report)
    return report


def passed(report: dict) -> bool:
    """Every run ended equal to its reference, left whole files and took every kill asked."""
    return all(r["runs"] > 0 and r["equal"] == r["runs"] and r["whole_leftovers"]
               and r["kills"] == r["runs"] * report["kills_per_run"] for r in report["pieces"].values())


if __name__ == "__main__":
    sys.exit(0 if passed(flags.run_command(main, "nothing is kept between soaks; run the command again")) else 1)
