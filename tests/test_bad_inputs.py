"""Bad input, everywhere: every command line refuses it with exit status 2 and one line that
names the flag or file and the problem (never a traceback or a hang), and the parsers behind
them raise ValueError and nothing else on any text (hypothesis)."""

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evaluate
import jaxdust
from jaxdust.core import boards as board_io
from jaxdust.core import configs, files, flags, play, render
from jaxdust.core.play import play_boards
from jaxdust.evaluation import baselines
from jaxdust.evaluation import benchmark, leaderboard, ranking, registry
from jaxdust.learn import cli as train_cli
from jaxdust.learn import agents, avi, datasets, dqn, imitation, networks, runs
from jaxdust.learn.datasets import DatasetConfig
from jaxdust.search import beam, mcts, selection
from jaxdust.search.points import points_beam_solutions
from jaxdust.search.beam import lookahead_heuristic, lookahead_scorer
from jaxdust.solver import cli as solver_cli
from jaxdust.solver import upper_bound
from jaxdust.solver.dfs import solve_dfs
from jaxdust.solver import points as solver_points
from tests.conftest import notebook_runner

BOARDS_FILE = os.path.join(board_io.BOARDS_DIR, "optimal_8x4x5.txt")
MAINS = {
    "evaluate": evaluate.main,
    "solver": lambda argv: solver_cli.main([BOARDS_FILE, *argv]),
    "datasets": lambda argv: datasets.main(["--out", "never-written", *argv]),
    "ranking": ranking.main,
    "train": train_cli.main,
    "solver-file": solver_cli.main,  # the board file is the case's own
    "datasets-out": datasets.main,
    "leaderboard": leaderboard.main,
}


def refused(cli: str, argv: list[str], capsys) -> str:
    """The one line a refused command prints; fails unless it exits with status 2."""
    with pytest.raises(SystemExit) as exit_info:
        MAINS[cli](argv)
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    # Named after the command, not after whatever script called its main (argparse's default).
    assert lines[0].split(": error: ")[0] != argparse.ArgumentParser().prog
    return lines[0]


# ---------------------------------------------------------------------------------------
# Numbers: every numeric flag of every command, each out of range in every way.
# ---------------------------------------------------------------------------------------

BAD_VALUES = {
    "positive int": ["0", "-3", "2.5", "inf", "x"],
    "count": ["0", "-3", "2.5", "x", "2147483648"],  # arrays of that many boards or clicks: int32
    "non-negative int": ["-1", "2.5", "x"],
    "seed": ["-1", "2.5", "x", "4294967296", "9223372036854775808"],  # jax.random.key takes 32 bits
    "positive float": ["0", "-1", "inf", "nan", "x"],
    "fraction": ["-0.1", "1.5", "nan"],
}
NUMERIC_FLAGS = {
    "solver": {"positive int": ["--width", "--height", "--jobs", "--node-limit", "--table-bits", "--checkpoint-positions"], "non-negative int": ["--beam-width"],
               "positive float": ["--time-limit"]},
    "evaluate": {"positive int": ["--limit", "--jobs"], "count": ["--max-clicks", "--chunk", "--random"],
                 "non-negative int": ["--animate"], "seed": ["--seed"]},
    "datasets": {"positive int": ["--boards", "--node-limit", "--beam-width", "--shard-size", "--jobs"],
                 "non-negative int": ["--seed"]},  # numpy's generator takes any; train.py's sets go to 2^32
    "ranking": {"positive int": ["--boards", "--node-limit"]},
    "train": {"count": ["--eval-boards"], "positive int": ["--eval-every", "--checkpoint-every", "--devices",
                               "--num-processes", "--total-updates", "--num-envs", "--target-period",
                               "--teacher-simulations", "--teacher-considered"],
              "seed": ["--seed"], "non-negative int": ["--process-id", "--cell-rounds"], "positive float": ["--minutes", "--checkpoint-seconds", "--learning-rate",
                                                                                                 "--policy-temperature"],
              "fraction": ["--capped-share", "--epsilon-max"]},
    "train dqn": {"positive int": ["--batch-size", "--n-step", "--buffer-size"], "fraction": ["--gamma"]},
    "train imitation": {"positive int": ["--epochs", "--data-boards", "--data-beam-width"]},
}
NUMBER_CASES = [
    (cli, flag, value)
    for cli, kinds in NUMERIC_FLAGS.items() for kind, names in kinds.items()
    for flag in names for value in BAD_VALUES[kind]
]


@pytest.mark.parametrize("cli, flag, value", NUMBER_CASES, ids=[" ".join(c) for c in NUMBER_CASES])
def test_numeric_flags_are_checked(cli, flag, value, capsys):
    command, *learner = cli.split()
    line = refused(command, [*learner, flag, value], capsys)
    assert flag in line and "must be" in line and value.lstrip("-") in line


# ---------------------------------------------------------------------------------------
# Files, agents, sizes and flags that contradict each other
# ---------------------------------------------------------------------------------------


@pytest.fixture
def bad_files(tmp_path):
    board = "1" * 32
    paths = {
        "missing": tmp_path / "missing.txt",
        "folder": tmp_path,
        "not utf-8": tmp_path / "latin1.txt",
        "bad header": tmp_path / "header.txt",
        "empty": tmp_path / "empty.txt",
        "comments only": tmp_path / "comments.txt",
        "bad line": tmp_path / "bad-line.txt",
        "board file": tmp_path / "boards.txt",
        "no newline": tmp_path / "notes.txt",
        "other records": tmp_path / "metrics.jsonl",
        "two sizes": tmp_path / "sizes.txt",
        "other proven": tmp_path / "proven-6x6.txt",
    }
    # The proven boards of another set, as the solver's --board-file writes them.
    paths["other proven"].write_text("# width=6 height=6 colors=2; cells listed x-major\n# board optimal_clicks "
                                     f"(proven by python -m jaxdust.solver)\n{'12' * 18} 9\n")
    paths["two sizes"].write_text(f"# width=8 height=4\n{board}\n# width=4 height=2\n{board[:8]}\n")
    paths["no newline"].write_text("my notes, no newline")
    paths["other records"].write_text('{"chunk": 1, "loss": 0.5}\n')
    paths["not utf-8"].write_bytes(b"# width=8 height=4\n" + board.encode() + b" 9 \xe9\n")
    paths["bad header"].write_text(f"# width=eight height=4\n{board}\n")
    paths["empty"].write_text("")
    paths["comments only"].write_text("# width=8 height=4\n# nothing else\n")
    paths["bad line"].write_text(f"# width=8 height=4\n{board} 1\n{board[:-2]} 2\n")
    paths["board file"].write_text(f"# width=8 height=4\n{board} 1\n")
    return {name: str(path) for name, path in paths.items()}


FILE_CASES = [
    # (command, argv with {file names}, words the message must contain)
    ("solver-file", ["{missing}"], ["missing.txt", "no such file"]),
    ("solver-file", ["{folder}"], ["is a directory"]),
    ("solver", ["--rules", "samegame"], ["--rules", "invalid choice: 'samegame'", "former"]),
    ("solver", ["--table-bits", "40"], ["--table-bits must be between 9 and 36", "40"]),
    ("solver", ["--table-bits", "8"], ["--table-bits must be between 9 and 36", "8"]),
    ("solver", ["--beam-width", "100000000000000000000000"], ["--beam-width must be at most 16,777,216"]),
    ("solver", ["--checkpoint-positions", "100"], ["--checkpoint-positions goes with --checkpoint-dir"]),
    ("solver-file", ["{not utf-8}"], ["latin1.txt", "not UTF-8", "line 2: byte", "0xe9"]),
    ("solver-file", ["{bad header}"], ["header.txt:1", "width must be a positive integer", "'eight'"]),
    ("solver-file", ["{empty}"], ["no boards in", "empty.txt"]),
    ("solver-file", ["{comments only}"], ["no boards in", "comments.txt"]),
    # a JSON-lines file (a solver log) was an error for every line, each logged with --out
    ("solver-file", ["{other records}"], ["metrics.jsonl:1 is a JSON record, not a board", "JSON lines"]),
    ("solver-file", ["{board file}", "--out", "{folder}"], ["--out", "is a directory"]),
    ("solver-file", ["{board file}", "--out", "{board file}"], ["boards.txt:1 is not a JSON record", "nothing was changed"]),
    ("solver-file", ["{board file}", "--out", "{board file}/x.jsonl"], ["--out", "is a file"]),
    ("solver-file", ["{board file}", "--board-file", "x.txt"], ["--board-file needs --out"]),
    # --board-file is rewritten whole: over its input it lost the unproven boards, over --out the log
    ("solver-file", ["{board file}", "--out", "{missing}", "--board-file", "{board file}"],
     ["--board-file", "boards.txt is the board file: give it another name"]),
    ("solver-file", ["{board file}", "--out", "{missing}", "--board-file", "{missing}"],
     ["--board-file", "missing.txt is --out: give it another name"]),
    # Any file was replaced by the boards proven: a published set, an evaluation's report.
    ("solver-file", ["{board file}", "--out", "{missing}", "--board-file", "{two sizes}"],
     ["--board-file", "sizes.txt holds something other than the proven boards this command writes", "another name"]),
    # ... and so was a file of another set's proven boards (the shipped 8x6 set, by a 6x6 run)
    ("solver-file", ["{board file}", "--out", "{missing}", "--board-file", "{other proven}"],
     ["--board-file", "proven-6x6.txt holds proven boards that are not among those of", "boards.txt",
      "the first on its line 3)", "would lose them: give another name (or remove the file)"]),
    ("solver-file", ["{board file}", "--retry-unproven"], ["--retry-unproven needs --out"]),
    ("solver-file", ["{board file}", "--width", "4"],
     ["boards.txt:2: its header reads the boards at 8x4, --width/--height at 4x4"]),
    ("solver-file", ["{two sizes}", "--height", "4"], ["sizes.txt:4: its header reads the boards at 4x2", "at 4x4"]),
    ("solver-file", ["{board file}", "--lines", "2,3-4"], ["--lines: no board on lines 3-4 of", "boards.txt"]),
    ("solver-file", ["{board file}", "--lines", "1"], ["--lines: no board on line 1 of", "boards.txt"]),
    ("solver-file", ["{board file}", "--lines", "4-2"], ["--lines", "range 4-2 runs backwards"]),
    ("solver-file", ["{board file}", "--lines", "2,x"], ["--lines", "line numbers or ranges", "'2,x'"]),
    ("solver-file", ["{board file}", "--lines", "0"], ["--lines", "line numbers or ranges", "'0'"]),
    ("solver-file", ["{board file}", "--checkpoint-dir", "{board file}"], ["--checkpoint-dir", "is a file"]),
    ("solver-file", ["{board file}", "--checkpoint-dir", "{folder}/proofs"], ["--checkpoint-dir needs --out FILE"]),
    ("evaluate", ["--boards", "{missing}"], ["--boards", "no such file"]),
    ("evaluate", ["--boards", "{folder}"], ["--boards", "is a directory"]),
    ("evaluate", ["--boards", "{not utf-8}"], ["latin1.txt", "not UTF-8"]),
    ("evaluate", ["--boards", "{bad header}"], ["header.txt:1", "width must be a positive integer"]),
    ("evaluate", ["--boards", "{empty}"], ["no boards in", "empty.txt"]),
    ("evaluate", ["--boards", "{bad line}"], ["bad-line.txt:3", "30 digits"]),
    ("evaluate", ["--out", "{board file}"], ["--out", "is a file"]),
    ("evaluate", ["--agents", ""], ["--agents", "no agent given"]),
    ("evaluate", ["--agents", ","], ["--agents", "no agent given"]),
    ("evaluate", ["--agents", "largest,,random"], ["--agents", "empty name"]),
    # '' was read as left out: compared with the board file's lengths, not refused
    ("evaluate", ["--agents", "largest,random", "--reference", ""], ["--reference", "empty name"]),
    ("evaluate", ["--agents", "largest,random", "--reference", " "], ["--reference", "empty name"]),
    ("evaluate", ["--agents", "largest,largest"], ["largest given more than once"]),
    ("evaluate", ["--agents", "telepathy"], ["unknown agent 'telepathy'", "largest"]),
    ("evaluate", ["--agents", "largest:3"], ["'largest' takes no parameter"]),
    ("evaluate", ["--agents", "dfs:0"], ["dfs", "positive integer", "'0'"]),
    ("evaluate", ["--agents", "beam:inf"], ["beam", "positive integer", "'inf'"]),
    ("evaluate", ["--agents", "beam:-5"], ["beam", "positive integer", "'-5'"]),
    ("evaluate", ["--agents", "beam:2.5"], ["beam", "positive integer", "'2.5'"]),
    ("evaluate", ["--agents", "solver:0"], ["solver", "positive number", "'0'"]),
    ("evaluate", ["--agents", "solver:nan"], ["solver", "positive number", "'nan'"]),
    ("evaluate", ["--agents", "policy"], ["policy:RUN_DIR", "needs a run directory"]),
    ("evaluate", ["--agents", "greedy"], ["'greedy' was renamed", "policy:RUN", "value:RUN:1"]),
    ("evaluate", ["--agents", "policy:{folder}/no-run"], ["no-run is not a train.py run directory (no such directory)"]),
    ("evaluate", ["--agents", "policy:{folder}"], ["is not a train.py run directory (no config.json)"]),
    ("evaluate", ["--agents", "policy:{board file}"], ["is not a train.py run directory (it is a file)"]),
    ("evaluate", ["--agents", "value:{folder}/no-run:8"], ["no-run", "not a train.py run directory"]),
    ("evaluate", ["--agents", "lookahead:{folder}/no-run:8"], ["'lookahead' was renamed", "value:RUN[:WIDTH]"]),
    ("evaluate", ["--agents", "mcts"], ["mcts:RUN_DIR[:SIMULATIONS]", "needs a run directory"]),
    ("evaluate", ["--agents", "mcts:{folder}/no-run:64"], ["no-run", "not a train.py run directory"]),
    ("evaluate", ["--agents", "mcts-heuristic:0"], ["mcts-heuristic", "positive integer", "'0'"]),
    ("evaluate", ["--agents", "mcts-heuristic:many"], ["mcts-heuristic", "a number", "'many'"]),
    ("evaluate", ["--agents", "largest", "--reference", "random"], ["--reference", "'random'"]),
    ("evaluate", ["--size", "8x6x10", "--random", "3"], ["--size", "colors must be in 1..9"]),
    ("evaluate", ["--size", "8by6", "--random", "3"], ["--size", "must look like 8x6x5"]),
    ("evaluate", ["--size", "tetris:8x6x5", "--random", "3"], ["--size", "unknown rules 'tetris'; known: dust, former"]),
    ("evaluate", ["--size", "former:8x6", "--random", "3"], ["--size", "or former:6x6x4 (rules first)"]),
    ("evaluate", ["--size", ":8x6x5", "--random", "3"], ["--size", "unknown rules ''"]),
    ("evaluate", ["--size", "former:", "--random", "3"], ["--size", "no WxHxC after 'former':"]),
    ("evaluate", ["--size", "former:6x6x4:x", "--random", "3"], ["--size", "must look like 8x6x5", "'former:6x6x4:x'"]),
    ("evaluate", ["--size", "former:0x5x4", "--random", "3"], ["--size", "size 'former:0x5x4': width must be >= 2"]),
    ("evaluate", ["--size", "2000x2000x5", "--random", "3"], ["--size", "4,000,000 cells", "at most 65,536 cells"]),
    ("evaluate", ["--size", "2x32768x5", "--random", "3"], ["--size", "in 32,768 rows", "and 256 rows"]),
    ("datasets", ["--size", "samegame:6x6x4"], ["--size/--env samegame:6x6x4: data sets are labelled for fewest clicks",
                                                 "not 'samegame'"]),
    ("evaluate", ["--telepathy"], ["unrecognized arguments: --telepathy"]),
    ("evaluate", ["--env", "Tetris-1x1x1-v0"], ["--env", "unknown environment 'Tetris-1x1x1-v0'", "Former-7x9x4-v0"]),
    ("evaluate", ["--env", "SameGame-15x15x5-v0", "--agents", "dfs"], ["agent 'dfs' plays the dust rules"]),
    ("evaluate", ["--env", "SameGame-15x15x5-v0", "--boards", BOARDS_FILE, "--agents", "largest"],
     ["--env plays 15x15 boards", "holds 8x4 ones"]),  # one line: no note on the file's lengths first
    ("evaluate", ["--env", "Former-7x9x4-v0", "--agents", "nmcs"], ["agent 'nmcs' plays the samegame, clickomania"]),
    ("evaluate", ["--env", "SameGame-15x15x5-v0", "--agents", "nmcs:3"], ["nmcs: level must be 1 or 2"]),
    ("evaluate", ["--random", "2", "--boards", "{board file}"], ["--random and --boards: give one"]),
    ("evaluate", ["--size", "6x6x5"], ["--size: with --random, or with --boards"]),
    ("evaluate", ["--size", "former:6x6x4", "--boards", BOARDS_FILE, "--agents", "largest"],
     ["--size plays 6x6 boards", "holds 8x4 ones"]),
    ("evaluate", ["--agents", "largest,beam,beam:200"], ["--agents: beam and beam:200 are the same agent"]),
    ("evaluate", ["--agents", "largest,beam:"], ["--agents: agent 'beam': nothing after ':' (its width)"]),
    ("evaluate", ["--agents", "largest,beam:1e300"], ["--agents: beam: width must be below 2^31, got '1e300'"]),
    # refused before largest plays, not when the beam's turn comes
    ("evaluate", ["--agents", "largest,beam:300000000"], ["--agents: beam:300000000: 1 boards x width 300,000,000"]),
    ("evaluate", ["--boards", "{two sizes}"], ["sizes.txt:4: a 4x2 board after 8x4 ones (line 2)", "one size at a time"]),
    ("evaluate", ["--random", "0"], ["--random", "must be a positive integer, got '0'"]),
    ("evaluate", ["--random", "2", "--size", "4x3x3", "--max-clicks", "49"],  # [boards, clicks] kept: memory
     ["--max-clicks 49: at most 4 a cell (48 on 4x3 boards)"]),
    ("evaluate", ["--env", "SameGame-15x15x5-v0", "--agents", "largest", "--max-clicks", "3"],
     ["--max-clicks: only under the fewest-clicks rules; samegame games are played to their end"]),
    ("evaluate", ["--env", "Clickomania-10x10x4-v0", "--agents", "largest", "--reference", "largest"],
     ["--reference: only under the fewest-clicks rules"]),
    # The numba searches' bitboards hold 64 cells: refused before any agent plays.
    ("evaluate", ["--env", "Dust-10x10x5-v0", "--random", "1", "--agents", "largest,cpu-beam:4"],
     ["--agents", "'cpu-beam' plays boards of at most 64 cells under the dust rules", "not 10x10"]),
    ("evaluate", ["--random", "1", "--size", "9x9x3", "--agents", "random,dfs:10"], ["'dfs' plays boards of at most 64"]),
    ("leaderboard", ["--env", "Dust-15x15x5-v0", "--entries", "beam:1,solver:1"],
     ["--entries/--runs", "'solver' plays boards of at most 64 cells under the dust rules"]),
    ("leaderboard", ["--env", "Former-7x9x4-v0", "--solver-log", "{board file}"], ["--solver-log: only with --set"]),
    ("leaderboard", ["--size", "former:5x4x3", "--solver-log", "{board file}"], ["--solver-log: only with --set"]),
    ("leaderboard", ["--solver-log", "-"], ["--solver-log: a file (standard input is not read here)"]),
    ("train", ["avi", "--env", "SameGame-15x15x5-v0"],
     ["--size/--env samegame:15x15x5: avi plays the dust, former rules so far, not 'samegame'"]),
    ("train", ["imitation", "--env", "SameGame-15x15x5-v0"], ["imitation plays the dust, former rules so far"]),
    ("train", ["imitation", "--run-dir", "{folder}/huge", "--size", "9x8x5"],  # it named no flag
     ["train.py imitation: error: --size/--env 9x8x5: boards of 72 cells; data sets are labelled by the solver's "
      "searches, which take at most 64"]),
    ("datasets", ["--env", "Clickomania-10x10x4-v0"], ["fewest clicks: the dust, former rules", "'clickomania'"]),
    ("datasets", ["--env", "Former-7x9x4-v0", "--size", "7x9x4"], ["--size", "not allowed with argument --env"]),
    ("datasets", ["--size", "8x6x10"], ["--size", "colors must be in 1..9"]),
    ("datasets", ["--size", "1x6x5"], ["--size", "width must be >= 2"]),
    ("datasets", ["--size", "8x0x5"], ["--size", "height must be >= 1"]),
    ("datasets", ["--size", "9x8x5"], ["72 cells", "at most 64"]),
    ("datasets", ["--labeller", "oracle"], ["--labeller", "invalid choice"]),
    ("datasets-out", ["--out", "{board file}"], ["--out", "is a file"]),
    ("ranking", ["--out", "{board file}"], ["--out", "not a ranking file"]),
    ("ranking", ["--out", "-"], ["--out", "must be a file name"]),
    ("ranking", ["--boards", "1"], ["required: --out"]),  # its old default wrote into the installed package
    ("solver-file", ["{board file}", "--out", "{no newline}"], ["notes.txt:1 is not a JSON record"]),
    ("solver-file", ["{board file}", "--out", "{other records}"], ["metrics.jsonl:1 is not a solver result"]),
    ("ranking", ["--out", "{folder}"], ["--out", "is a directory"]),
    ("solver-file", ["{board file}", "--board-file", "proven/"], ["--board-file", "proven/ names a folder, not a file"]),
    ("train", ["bogus"], ["unknown learner 'bogus'", "avi"]),
    # The flags went to avi, and "unrecognized arguments: dqn" came out.
    ("train", ["--seed", "1", "dqn", "--hidden", "8"], ["name the learner before its flags: train.py dqn --seed 1 --hidden 8"]),
    ("train", ["--run-dir", "dqn", "--seed", "1", "dqn"],  # a flag's value that is a learner's name stays
     ["name the learner before its flags: train.py dqn --run-dir dqn --seed 1"]),
    ("train", ["--epochs", "2", "imitation"], ["name the learner before its flags: train.py imitation --epochs 2"]),
    ("train", ["dqn", "--seed", "1", "avi"], ["unrecognized arguments: avi"]),  # named first: no other to suggest
    ("train", ["dqn", "--rewards-click", "1"], ["--rewards-click must be negative"]),  # it named a --rewards
    ("train", ["dqn", "--max-clicks", str(2**31)], ["--max-clicks must be below 2^31"]),  # jit's OverflowError
    ("train", ["--resume-step", "3"], ["--resume-step needs --resume"]),
    ("train", ["--checkpoint-every", "2", "--checkpoint-seconds", "5"], ["--checkpoint-every or --checkpoint-seconds"]),
    ("train", ["--distributed", "--num-processes", "2", "--process-id", "2"], ["--process-id 2 must be below"]),
    ("train", ["--devices", "999"], ["--devices 999", "local device"]),
    ("train", ["--coordinator", "127.0.0.1:1"], ["--coordinator works only with --distributed"]),
    # JAX took either as it was: an IndexError traceback inside it, a segmentation fault in gRPC.
    ("train", ["--distributed", "--coordinator", "notahost"], ["--coordinator", "must be HOST:PORT", "'notahost'"]),
    ("train", ["--distributed", "--coordinator", "localhost:abc"], ["--coordinator", "port in 1..65535"]),
    ("train", ["--distributed", "--coordinator", "::1"], ["--coordinator", "an IPv6 host in brackets"]),
    ("train", ["--distributed", "--coordinator", "[]:80"], ["--coordinator", "an IPv6 host in brackets"]),
    ("train", ["dqn", "--num-processes", "2", "--process-id", "1"],
     ["--num-processes, --process-id work only with --distributed"]),
    ("train", ["--run-dir", "{board file}"], ["--run-dir", "is a file"]),
    ("train", ["dqn", "--run-dir", "/proc/x/run"], ["--run-dir", "cannot create /proc/x/run", "takes no new folders"]),
    ("train", ["--run-dir", "{folder}/fresh", "--resume"], ["nothing to resume"]),
    # Found at the first write: a traceback, and the leaderboard's after playing every row.
    ("train", ["--run-dir", "{folder}/" + "w" * 256], ["--run-dir", "256 bytes long, more than the"]),
    ("leaderboard", ["--out", "{folder}/" + "w" * 256 + "/lb.json"], ["--out", "256 bytes long"]),
    # Both played every row first: the rows' folder took the report's name (an IsADirectoryError
    # at the end), or went to /dev/leaderboard beside a pipe (refused where stdout was a file).
    ("leaderboard", ["--limit", "1", "--entries", "largest", "--out", "{folder}/leaderboard"],
     ["--out", "is the folder the report's rows are kept in", "leaderboard.json"]),
    ("leaderboard", ["--limit", "1", "--entries", "largest", "--out", "/dev/null"],
     ["--out /dev/null is a pipe, a device or a descriptor"]),
    ("solver-file", ["{board file}", "--out", "w" * 300], ["--out", "300 bytes long"]),
    ("train", ["--run-dir", ""], ["--run-dir", "empty path"]),  # not the default runs/avi-0
    ("train", ["imitation", "--data", "{folder}", "--data-boards", "5"],
     ["--data-boards, --data-beam-width and --data-jobs make a data set; with --data none is made"]),
    ("train", ["imitation", "--data", "{folder}", "--data-jobs", "1"], ["--data-jobs make a data set"]),
    ("train", ["imitation", "--data", "{board file}"], ["--data", "is a file, not a directory"]),
    ("train", ["imitation", "--run-dir", "{folder}/big", "--data-boards", str(10**7 + 1)],
     ["--data-boards must be at most 10,000,000, got 10,000,001"]),
    ("train", ["imitation", "--run-dir", "{folder}/wide", "--data-beam-width", "70000"],
     ["--data-beam-width must be at most 65,536"]),
    ("evaluate", ["--out", " "], ["--out", "empty path"]),
    ("train", ["--hidden", "0,3"], ["--hidden", "positive integers"]),
    ("train", ["--policy-teacher", "beam"], ["--policy-teacher must be one of lines, mcts", "'beam'"]),
    ("train", ["--hidden", "wide"], ["--hidden", "'wide'"]),
    ("train", ["--hidden", "512,99999999999"], ["--hidden", "each must be below 2^31"]),  # XLA aborted
    # The default settings on large boards overflowed int32 in the first update (a traceback).
    ("train", ["--size", "100x100x5"], ["--size/--env 100x100: with these --num-envs and --child-share, an update's "
                                        "3,200,000 children hold 32,003,200,000 cells, more than 2^31"]),
    ("train", ["dqn", "--backup", "full", "--size", "100x100x5"],
     ["--size/--env 100x100: with these --batch-size and --child-share"]),
    ("train", ["--size", "3x3x99"], ["--size", "colors must be in 1..9"]),
    ("train", ["--beam-width", "3"], ["--beam-width (3) must divide --num-envs (512)"]),  # flags, not fields
    ("train", ["--buffer-lines", "8"], ["--buffer-lines (8) must be >= the boards in play, --num-envs / --beam-width (64)"]),
    ("train", ["--child-share", "1.5"], ["--child-share must be in (0, 1], got 1.5"]),
    # Each of these trained on, on nothing or on noise, and read as trained.
    ("train", ["--child-share", "1e-9"], ["--child-share (1e-09) gives 1 child slots an update for 640 positions, "
                                          "not one each"]),
    ("train", ["dqn", "--backup", "full", "--child-share", "0.02"], ["--child-share (0.02) gives 245 child slots an "
                                                                     "update for 256 positions"]),
    ("train", ["--policy-temperature", "1e-10"], ["--policy-temperature must be at least 1e-06 clicks, got 1e-10"]),
    ("train", ["dqn", "--target-mix", "0"], ["--target-mix must be above 0", "every update is zero"]),
    ("train", ["dqn", "--rewards-click=-1e-45"], ["--rewards-click (-1e-45) is too small beside --rewards-clear (10)"]),
    ("train", ["dqn", "--rewards-clear", "1e30"], ["--rewards-click (-1) is too small beside --rewards-clear (1e+30)"]),
    ("train", ["dqn", "--no-mask-actions", "--max-clicks", "10000000"],
     ["--rewards-click (-1) is too small beside --rewards-empty-click over --max-clicks (1e+08)"]),
    ("train", ["--preset", "huge"], ["--preset", "invalid choice"]),
    ("train", ["dqn", "--bootstrap", "median"], ["--bootstrap must be 'max' or 'mean'"]),
    ("train", ["dqn", "--batch-size", "512", "--buffer-size", "256"], ["--batch-size (512) cannot exceed --buffer-size (256)"]),
    ("train", ["dqn", "--backup", "full", "--target-mix", "0.5"], ["--backup 'full' needs --mask-actions", "--target-mix 1"]),
    ("train", ["imitation", "--data", "{missing}"], ["--data", "no such directory"]),
    # Another learner's flag is named by the learner's parser, with the learners that take it.
    ("train", ["dqn", "--beam-width", "3"],
     ["train.py dqn: error: unrecognized arguments: --beam-width 3 (--beam-width is avi's)"]),
    ("train", ["--epochs=3", "--telepathy"],
     ["train.py avi: error: unrecognized arguments: --epochs=3 --telepathy (--epochs is imitation's)"]),
    ("train", ["imitation", "--data", "{folder}", "--run-dir", "{folder}/run"], ["not a data set", "manifest.json"]),
]


@pytest.mark.parametrize("cli, argv, words", FILE_CASES, ids=[f"{c[0]} {' '.join(c[1])}" for c in FILE_CASES])
def test_bad_files_agents_and_settings_are_named(cli, argv, words, bad_files, capsys):
    argv = [arg.format(**bad_files) for arg in argv]
    words = [word.format(**bad_files) for word in words]
    before = {name: Path(path).read_bytes() for name, path in bad_files.items() if os.path.isfile(path)}
    line = refused(cli, argv, capsys)
    for word in words:
        assert word in line, (word, line)
    after = {name: Path(path).read_bytes() for name, path in bad_files.items() if os.path.isfile(path)}
    assert after == before  # a refused command changes no file it was given


def test_ctrl_c_during_a_compile_on_another_thread_still_ends_with_status_130():
    """Ctrl-C can stop the main thread while XLA compiles on a thread of its own; the
    interpreter's shutdown then freed the client under that compile (a segmentation fault
    or an abort, seen after Ctrl-C in equal_time.py's calibration)."""
    import subprocess
    import sys

    script = ("import threading, time\nimport jax, jax.numpy as jnp\nfrom jaxdust.core import flags\n"
              "def long_program(x):\n    for i in range(300):\n        x = jnp.sin(x) @ x + i\n    return x\n"
              "def main():\n    threading.Thread(target=lambda: jax.jit(long_program).lower(jnp.ones((64, 64)))"
              ".compile(), daemon=True).start()\n    time.sleep(1.0)\n    raise KeyboardInterrupt\n"
              "flags.run_command(main, 'nothing is kept')\n")
    ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert ended.returncode == 130 and ended.stderr == "\ninterrupted: nothing is kept\n", ended.stderr[-2000:]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed Ctrl-C, on purpose
def test_a_ctrl_c_swallowed_or_wrapped_on_its_way_up_still_ends_a_command_in_one_line():
    """Python only prints a KeyboardInterrupt raised in a garbage-collector callback (JAX
    frees arrays in one): train.py went on to its end, status 0, in 3 of 20 timed Ctrl-Cs.
    And JAX raises a ValueError from one met while tracing, which was a traceback. A real
    error raised while handling a Ctrl-C on purpose is still shown whole."""
    import subprocess
    import sys

    swallowed = ("import gc\nfrom jaxdust.core import flags\n"
                 "def interrupted_in_gc(phase, info):\n    gc.callbacks.clear()\n    raise KeyboardInterrupt\n"
                 "def main():\n    gc.callbacks.append(interrupted_in_gc)\n    gc.collect()\n"
                 "    print('a step after')\n    flags.raise_if_interrupted()\n    print('never')\n"
                 "flags.run_command(main, 'nothing is kept')\n")
    wrapped = ("from jaxdust.core import flags\n"
               "def main():\n    try:\n        raise KeyboardInterrupt\n"
               "    except KeyboardInterrupt as error:\n        raise ValueError('while tracing') from error\n"
               "flags.run_command(main, 'nothing is kept')\n")
    for script, printed in ((swallowed, "a step after\n"), (wrapped, "")):
        ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert (ended.returncode, ended.stdout) == (130, printed), ended.stderr[-2000:]
        assert ended.stderr.endswith("\ninterrupted: nothing is kept\n") and "ValueError" not in ended.stderr
    for other in (wrapped.replace("KeyboardInterrupt", "KeyError"), wrapped.replace(" from error", "")):
        ended = subprocess.run([sys.executable, "-c", other], capture_output=True, text=True, timeout=120)
        assert ended.returncode == 1 and "ValueError: while tracing" in ended.stderr  # a real error, seen whole
    # In a session that goes on, what a swallowed Ctrl-C noted ends with its command: a
    # later run does not stop at its first step.
    import gc

    from jaxdust.core import flags

    def interrupted_in_gc(phase, info):
        gc.callbacks.remove(interrupted_in_gc)
        raise KeyboardInterrupt

    def swallowing():
        gc.callbacks.append(interrupted_in_gc)
        gc.collect()
        return flags._INTERRUPTED

    hook = sys.unraisablehook
    assert flags.run_command(swallowing, "nothing") is True
    assert sys.unraisablehook is hook and not flags._INTERRUPTED
    flags.raise_if_interrupted()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_ctrl_c_swallowed_while_a_command_imports_jax_ends_it_before_it_starts(tmp_path):
    """JAX's garbage-collector callback swallowed a Ctrl-C pressed while a command imported
    it about once in three tries, before ``run_command`` noted such interrupts: the command
    then ran to its end, status 0 (``train.py`` a whole training run). ``import jaxdust``
    notes them from before JAX's import, outside an interactive session; one swallowed
    outside an import (a test's, a library script's) is not held against a later command."""
    import subprocess
    import sys

    (tmp_path / "collects.py").write_text("import gc\ngc.collect()\n")  # a module whose import collects
    script = ("import gc, sys\n"
              f"sys.path.insert(0, {str(tmp_path)!r})\n"
              "def interrupted_in_gc(phase, info):\n"
              "    if 'jax' in sys.modules:  # from JAX's import on\n"
              "        gc.callbacks.remove(interrupted_in_gc)\n        raise KeyboardInterrupt\n"
              "gc.callbacks.append(interrupted_in_gc)\n"
              "from jaxdust.core import flags\n"
              "import jaxdust.search.beam\n"
              "import collects  # where the imports before collected nothing after JAX's\n"
              "def main():\n    print('ran')\n"
              "flags.run_command(main, 'nothing is kept')\n")
    ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (ended.returncode, ended.stdout) == (130, ""), ended.stderr[-2000:]
    assert ended.stderr.endswith("\ninterrupted: nothing is kept\n")
    later = (script.replace("if 'jax' in sys.modules:  # from JAX's import on", "if armed:")
             .replace("gc.callbacks.append", "armed = False\ngc.callbacks.append")
             .replace("import collects  #", "import collects\narmed = True\ngc.collect()  # not in an import:"))
    ended = subprocess.run([sys.executable, "-c", later], capture_output=True, text=True, timeout=120)
    assert (ended.returncode, ended.stdout) == (0, "ran\n"), ended.stderr[-2000:]
    session = "import sys\nsys.ps1 = '>>> '\nimport jaxdust\nfrom jaxdust.core import flags\nprint(flags._importing_hook)\n"
    shown = subprocess.run([sys.executable, "-c", session], capture_output=True, text=True, timeout=120, check=True)
    assert shown.stdout == "None\n"  # an interactive session is noted only while a command runs in it


def test_a_file_named_like_a_flag_is_named_in_the_error(tmp_path, monkeypatch, capsys):
    """argparse reads ``-x.txt`` as a flag, and its own error said nothing of the file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-x.txt").write_text("335122421413111551154255131234544142315221411124\n")
    assert refused("solver-file", ["-x.txt"], capsys).endswith(
        "required: boards; -x.txt is read as a flag: name the file ./-x.txt (see --help)")
    assert refused("evaluate", ["--boards", "-x.txt"], capsys).endswith(
        "expected one argument; -x.txt is read as a flag: name the file ./-x.txt (see --help)")
    assert "-x.txt" not in refused("evaluate", ["--bogus"], capsys)
    # After "--" it is no flag: the error is another's, and says nothing of the file.
    assert "-x.txt" not in refused("solver-file", ["--time-limit", "0", "--", "-x.txt"], capsys)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full, a device that is always full")
def test_a_full_disk_ends_a_command_in_one_line(tmp_path):
    """jaxdust-leaderboard --out /dev/full ended in atomic_write's OSError traceback."""
    import subprocess
    import sys

    script = ("from jaxdust.core import files, flags\n"
              "def main():\n    files.atomic_write_json('/dev/full', {'rows': 1})\n"
              "flags.run_command(main, 'the rows played so far are kept')\n")
    ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (ended.returncode, ended.stderr) == (1, "\nstopped: No space left on device writing /dev/full (make room; "
                                                   "the rows played so far are kept)\n"), ended.stderr[-2000:]
    # Over a file-size limit (ulimit -f): a traceback, and one naming atomic_write's temporary file.
    limited = ("import resource\nresource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
               + script.replace("atomic_write_json('/dev/full', {'rows': 1})",
                                f"atomic_write_bytes({str(tmp_path / 'big.json')!r}, bytes(5000))"))
    ended = subprocess.run([sys.executable, "-c", limited], capture_output=True, text=True, timeout=120)
    assert (ended.returncode, ended.stderr) == (1, f"\nstopped: File too large writing {tmp_path / 'big.json'} (a "
                                                   "file-size limit: see ulimit -f; the rows played so far are kept)\n")
    assert os.listdir(tmp_path) == []
    other = script.replace("files.atomic_write_json('/dev/full', {'rows': 1})", "open('/nonexistent/x')")
    ended = subprocess.run([sys.executable, "-c", other], capture_output=True, text=True, timeout=120)
    assert ended.returncode == 1 and "Traceback" in ended.stderr  # another OSError is a bug to see whole


def test_ctrl_c_keeps_what_was_printed_and_no_semaphore_is_reported_leaked():
    """The process ends without the interpreter's shutdown: what a command printed to a
    pipe is flushed first, and multiprocessing's semaphores are unlinked (no resource_tracker
    warning after the one line)."""
    import subprocess
    import sys

    script = ("import multiprocessing\nfrom jaxdust.core import flags\n"
              "lock = multiprocessing.get_context('spawn').Lock()  # a named semaphore, as a pool's\n"
              "def main():\n    print('a partial table')\n    raise KeyboardInterrupt\n"
              "flags.run_command(main, 'nothing is kept')\n")
    buffered = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=buffered)
    assert (ended.returncode, ended.stdout, ended.stderr) == (130, "a partial table\n",
                                                              "\ninterrupted: nothing is kept\n")


def test_ctrl_c_just_after_a_pool_finished_leaves_no_worker_traceback(tmp_path):
    """Two quick items end before the second worker has started: Ctrl-C then (which unlinks
    the pool's semaphores on its way out) left that worker printing a FileNotFoundError
    traceback after the command's one line, in about 5 runs of 6. The pipes stay open until
    every worker has gone, so its traceback would be read here."""
    import subprocess
    import sys

    script = tmp_path / "command.py"  # a script's workers import it again: they start slower
    script.write_text("from jaxdust.core import flags\nfrom jaxdust.core.processes import ordered_map\n"
                      "def main():\n    list(ordered_map(abs, [-1, -2], 2))\n    raise KeyboardInterrupt\n"
                      "if __name__ == '__main__':\n    flags.run_command(main, 'nothing is kept')\n")
    for _ in range(3):
        ended = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
        assert (ended.returncode, ended.stderr) == (130, "\ninterrupted: nothing is kept\n"), ended.stderr[-2000:]


def test_ctrl_c_in_an_interactive_session_raises_system_exit():
    """IPython, a notebook's kernel, ``python -i`` must go on after Ctrl-C in a command."""
    import subprocess
    import sys

    script = ("import sys\nsys.ps1 = '>>> '\nfrom jaxdust.core import flags\n"
              "try:\n    flags.exit_at_once(130)\nexcept SystemExit as stop:\n    print('still here', stop.code)\n")
    ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (ended.returncode, ended.stdout) == (0, "still here 130\n"), ended.stderr[-2000:]


@pytest.mark.parametrize("command", [train_cli.run, evaluate.run, leaderboard.run, solver_cli.run])
def test_ctrl_c_ends_a_command_with_one_line_and_status_130(command, monkeypatch, capsys):
    def interrupted(argv=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(command.__module__ + ".main", interrupted)
    monkeypatch.setattr("jaxdust.core.compile_cache.enable", lambda: None)  # this process's JAX stays as it is
    with pytest.raises(SystemExit) as ended:
        command()
    assert ended.value.code == 130
    err = capsys.readouterr().err
    assert err.startswith("\ninterrupted: ") and err.count("\n") == 2 and "Traceback" not in err


def test_an_envs_default_leaderboard_leaves_out_the_searches_its_boards_are_too_large_for():
    for env_id, kept in [("Dust-10x10x5-v0", False), ("Former-7x9x4-v0", True), ("SameGame-15x15x5-v0", True)]:
        config = jaxdust.make(env_id).game
        fits = functools.partial(leaderboard._fits, config=config, boards=1, jobs=1)
        assert fits("cpu-beam:2000") is kept, env_id  # SameGame's is not on bitboards
        assert fits("beam:64") and fits("largest")


def test_the_solver_resumes_only_its_own_boards_and_rules(tmp_path, capsys):
    """An ``--out`` of another board file, or of the same boards under other rules, would
    have its lines skipped as done and its lengths reported as this file's (and written to
    ``--board-file`` as proven): refused, the file untouched. A file's ``rules=`` header is
    its default rule set."""
    boards, others = tmp_path / "boards.txt", tmp_path / "others.txt"
    boards.write_text("# width=3 height=2\n223322\n")  # 2 clicks under dust, 3 under former
    others.write_text("# width=3 height=2\n232322\n")
    out = tmp_path / "out.jsonl"
    assert solver_cli.main([str(boards), "--jobs", "1", "--out", str(out)]) == 0
    capsys.readouterr()  # a loaded machine may take long enough loading the solver to say so
    written = out.read_bytes()
    assert json.loads(written)["rules"] == "dust" and json.loads(written)["length"] == 2
    line = refused("solver-file", [str(boards), "--rules", "former", "--out", str(out), "--board-file",
                              str(tmp_path / "proven.txt")], capsys)
    assert "solved under --rules dust, not former" in line and not (tmp_path / "proven.txt").exists()
    line = refused("solver-file", [str(others), "--out", str(out)], capsys)
    assert "another board for line 2 (223322, the file has 232322)" in line
    foreign = b'{"line": "x"}\n{"length": 4, "bo'  # the torn last line was cut before the refusal
    (tmp_path / "foreign.jsonl").write_bytes(foreign)
    assert "is not a solver result" in refused("solver-file", [str(boards), "--out", str(tmp_path / "foreign.jsonl")], capsys)
    assert (tmp_path / "foreign.jsonl").read_bytes() == foreign
    assert out.read_bytes() == written
    declared = tmp_path / "former.txt"
    declared.write_text("# width=3 height=2 rules=former\n223322\n")
    out = tmp_path / "former.jsonl"
    assert solver_cli.main([str(declared), "--jobs", "1", "--out", str(out)]) == 0
    capsys.readouterr()
    record = json.loads(out.read_text())
    assert (record["rules"], record["length"], record["optimal"]) == ("former", 3, True)
    # Resumed, its lines are replayed under its own rules (8x4 boards whose dust line would
    # not clear them under former's: 223322 clears under both).
    eight = tmp_path / "former8x4.txt"
    eight.write_text("# width=8 height=4 rules=former\n" + "\n".join(
        jaxdust.board_to_text(jaxdust.random_board(key, jaxdust.GameConfig(8, 4, 3, "former")))
        for key in jax.random.split(jax.random.key(5), 3)) + "\n")
    out = tmp_path / "former8x4.jsonl"
    assert solver_cli.main([str(eight), "--jobs", "1", "--out", str(out)]) == 0
    written = out.read_bytes()
    assert solver_cli.main([str(eight), "--jobs", "1", "--out", str(out)]) == 0 and out.read_bytes() == written
    capsys.readouterr()
    (tmp_path / "points.txt").write_text("# width=3 height=2 rules=samegame\n223322\n")
    assert "declares rules=samegame" in refused("solver-file", [str(tmp_path / "points.txt")], capsys)


@pytest.mark.slow
def test_one_bad_board_is_reported_by_line_and_the_others_are_solved(tmp_path, capsys):
    good = "31332522144325534512113254533545"
    board_file = tmp_path / "mixed.txt"
    board_file.write_text(f"# width=8 height=4\n{good} 10\n3133252214432553451211325453354x\n"
                          f"{'1' * 65}\n{good[::-1]}\n")
    out = tmp_path / "new" / "folder" / "out.jsonl"  # its folder is created
    assert solver_cli.main([str(board_file), "--jobs", "1", "--out", str(out)]) == 1
    records = {r["line"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert sorted(records) == [2, 3, 4, 5]
    assert records[2]["optimal"] and records[2]["length"] == 10 and records[5]["optimal"]
    assert "position 31" in records[3]["error"] and "65 digits" in records[4]["error"]
    err = capsys.readouterr().err
    assert "line 3:" in err and "line 4:" in err and "Traceback" not in err
    # A line of megabytes (not a board file) was copied whole into its error record.
    board_file.write_text(f"# width=8 height=4\n{'1' * 1_000_000}\n")
    assert solver_cli.main([str(board_file), "--jobs", "1", "--out", str(tmp_path / "long.jsonl")]) == 1
    (record,) = map(json.loads, (tmp_path / "long.jsonl").read_text().splitlines())
    assert record["board"] == "1" * 200 + "... (1,000,000 characters)" and "1000000 digits" in record["error"]


def test_files_an_editor_or_a_torn_write_changed_are_read_or_named_by_their_line(tmp_path):
    """A run's config.json saved by an editor with a byte-order mark is still the run's
    (it was called damaged, and a new run directory advised); a ranking set's bad line is
    named by its line in the file (JSON's own position counted within the line)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(
        {"learner": "avi", "config": configs.to_json(avi.AVIConfig(total_updates=7))}).encode())
    learner, config = runs.read_run_config(str(run))
    assert learner.name == "avi" and config.total_updates == 7
    path = tmp_path / "set.jsonl"
    record = json.dumps({"board": "1" * 48, "actions": [0], "child_values": [1.0]})
    path.write_text(f"{record}\n\n{record}\n{record[:40]}")
    with pytest.raises(ValueError, match=r"set.jsonl:4 is not JSON \(.*\); a torn last line\?"):
        ranking.load(str(path))
    path.write_text(f"{record}\n[1]\n")
    with pytest.raises(ValueError, match=r"set.jsonl:2 is not a ranking record"):
        ranking.load(str(path))


# ---------------------------------------------------------------------------------------
# The parsers behind the command lines, on any text
# ---------------------------------------------------------------------------------------

board_texts = st.one_of(
    st.text(max_size=80),
    st.text(alphabet="0123456789", min_size=0, max_size=70),
    st.lists(st.sampled_from("0123456789 \n#=xwidthegh"), max_size=90).map("".join),
)


@settings(max_examples=300)
@given(text=board_texts, width=st.one_of(st.none(), st.integers(-2, 12)), height=st.one_of(st.none(), st.integers(-2, 12)))
def test_parse_board_accepts_or_names_the_problem(text, width, height):
    try:
        board = board_io.parse_board(text, width, height)
    except ValueError as error:
        assert str(error)
        return
    assert board.ndim == 2 and board.shape[0] >= 2 and board.size == len(text.strip())
    assert board_io.board_to_text(board) == text.strip()


@settings(max_examples=200)
@given(data=st.one_of(st.binary(max_size=200),
                      st.lists(st.one_of(st.just("# width=8 height=4\n"), st.just("# width=0\n"),
                                         st.just("1" * 32 + " 5\n"), st.just("2" * 32 + "\n"), st.just("12x\n"),
                                         st.just("\n"), st.just("# note\n"), st.just("1" * 32 + " five\n")),
                               max_size=8).map(lambda lines: "".join(lines).encode())))
def test_board_files_parse_or_name_the_line(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "boards.txt"
    path.write_bytes(data)
    try:
        records = board_io.read_board_file(path)
    except ValueError as error:
        assert str(path) in str(error)
        return
    for record in records:
        assert record.board.shape == (8, 4) or record.board.size == len(data.decode().splitlines()[record.line - 1].split()[0])


@settings(max_examples=300)
@given(text=st.one_of(st.text(max_size=30),
                      st.tuples(st.sampled_from(sorted(registry.AGENTS) + ["", "x"]),
                                st.sampled_from(["", ":", ":0", ":1", ":-1", ":2.5", ":inf", ":nan", ":1e3", ":abc", ":3:4"]))
                      .map("".join)))
def test_agent_specs_parse_or_name_the_problem(text):
    try:
        names = registry.parse_agent_list(text)
    except ValueError as error:
        assert str(error)
        return
    assert names and len(set(names)) == len(names)
    for name in names:
        agent, settings_ = registry.parse_agent(name)
        if agent.name in ("dfs", "beam"):
            assert isinstance(settings_, int) and settings_ >= 1
        if agent.name == "solver":
            assert np.isfinite(settings_) and settings_ > 0


@settings(max_examples=300)
@given(data=st.one_of(st.binary(max_size=120),
                      st.lists(st.sampled_from([b'{"a": 1}\n', b'{"b": [2]}\n', b'{"c"', b'{"d": 4}', b"notes",
                                                b"\n", b"[1]\n", b"7\n", b"\xff", b"\x00\x00", b" \r\n"]),
                               max_size=6).map(b"".join)))
def test_json_lines_recover_or_refuse_without_losing_data(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("lines") / "log.jsonl"
    path.write_bytes(data)
    try:
        records = files.recover_json_lines(path)
    except ValueError:
        assert path.read_bytes() == data  # refused: left as it was
        return
    kept = path.read_bytes()
    if not data.startswith(kept):  # a whole last record, its newline added (where zero bytes or nothing were)
        assert kept.endswith(b"\n") and data.startswith(kept[:-1]) and not data[len(kept) - 1:].strip(b" \t\r\n\x00")
        assert isinstance(json.loads(kept.splitlines()[-1]), dict)
    else:
        torn = data[len(kept):]
        assert data.startswith(kept) and (kept == data or (torn.startswith(b"{") and b"\n" not in torn)
                                          or not torn.strip(b" \t\r\n\x00"))  # a tail of blanks or zero bytes
        if torn:
            with pytest.raises(ValueError):
                json.loads(torn)
    assert len(records) == kept.count(b"\n") and kept[-1:] in (b"", b"\n")


def test_a_json_lines_tail_of_blanks_or_zero_bytes_is_cut_as_a_torn_line(tmp_path):
    """What a power cut after an append can leave (zero bytes), or ``echo >> log`` (a blank
    line), was refused as "not a file this program wrote", so the run could not resume."""
    path = tmp_path / "log.jsonl"
    for tail in (b"\n", b"\x00\x00\x00\x00", b"  \r\n\n"):
        path.write_bytes(b'{"a": 1}\n' + tail)
        assert files.recover_json_lines(path) == [{"a": 1}] and path.read_bytes() == b'{"a": 1}\n'
    path.write_bytes(b'{"a": 1}\n{"b": 2}\x00\x00')  # the record whole, its newline among the zero bytes
    assert files.recover_json_lines(path) == [{"a": 1}, {"b": 2}] and path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'
    path.write_bytes(b'{"a": 1}\n{"b": 2}\x00\x00\n{"c": 3}\n')  # zero bytes before a record are no tail
    with pytest.raises(ValueError, match=":2 is not a JSON record"):
        files.recover_json_lines(path)
    path.write_bytes(b'{"a": 1}\n\n{"b": 2}\n')  # a blank line between records is no tail
    with pytest.raises(ValueError, match=":2 is not a JSON record"):
        files.recover_json_lines(path)


def test_json_lines_of_a_stream_are_none_and_not_waited_for(tmp_path):
    """A FIFO given as a log to resume (``--out``): reading it back waited for ever. A reader
    that repairs nothing (``--solver-log <(cat log)``) reads it."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert files.is_stream(fifo) and files.is_stream("/dev/null") and not files.is_stream(tmp_path)
    assert files.recover_json_lines(fifo) == []
    writer = subprocess.Popen(["sh", "-c", f"printf '{{\"a\": 1}}\\n' > {fifo}"])
    assert files.recover_json_lines(fifo, repair=False) == [{"a": 1}]
    writer.wait()
    first, second = files.open_to_append_alone("/dev/null"), files.open_to_append_alone("/dev/null")
    assert first is not None and second is not None  # a device is not locked: two runs may write to it
    first.close(), second.close()


# ---------------------------------------------------------------------------------------
# The library's entry points
# ---------------------------------------------------------------------------------------

def scores_two_per_board(boards, params):
    return jnp.zeros((boards.shape[0], 2))


def scores_one_number(boards, params):  # broadcast, it would rank every child alike
    return jnp.float32(0)


LOOKAHEAD_OF_ONE_NUMBER = lookahead_scorer(scores_one_number)


class _UnhashableEvaluator:
    __hash__ = None

    def __call__(self, boards, params):
        return mcts.heuristic_evaluator_for("dust")(boards, params)


TINY_NETWORK = networks.ValuePolicyNetwork((8,), 3)
TINY_POLICY, TINY_SCORER = agents.ClusterArgmax(TINY_NETWORK), agents.ValueHeadScorer(TINY_NETWORK)

API_CASES = [
    (lambda: jaxdust.solve("1" * 48, time_limit=0), "time_limit must be a positive number of seconds or None, got 0$"),
    (lambda: jaxdust.solve("1" * 48, time_limit=float("inf")), "time_limit must be a positive number .* got inf"),
    (lambda: jaxdust.solve("1" * 48, time_limit=10**400), "time_limit must be a positive number .* got 1000"),
    (lambda: jaxdust.solve("1" * 48, node_limit=0), "node_limit must be a positive integer or None, got 0"),
    (lambda: jaxdust.solve("1" * 48, node_limit=2.5), "node_limit must be a positive integer .* got 2.5"),
    (lambda: jaxdust.solve("1" * 48, colors=10), r"colors must be an integer in 1\.\.9 or None, got 10"),
    (lambda: jaxdust.solve("1" * 48, beam_width=-1), "beam_width must be an integer in 0..16777216 or None, got -1"),
    (lambda: jaxdust.solve("1" * 48, beam_width=2**70), "beam_width must be an integer in 0..16777216"),
    (lambda: jaxdust.solve("1" * 48, prune="no"), "prune must be True or False, got 'no'"),
    (lambda: jaxdust.game_gif(jnp.ones((4, 3), jnp.int8)), "game_gif takes a game's positions"),
    (lambda: jaxdust.solve(np.ones((9, 8), int)), "at most 64 cells"),
    (lambda: jaxdust.solve("2" * 48, colors=1), "colour 2"),
    (lambda: jaxdust.beam_search(jnp.ones((8, 6), jnp.int8), width=0), "beam_search: width must be a positive integer, got 0"),
    (lambda: jaxdust.beam_search(jnp.ones((8, 6), jnp.int8), width=2, max_clicks=-1),
     "beam_search: max_clicks must be a positive integer, got -1"),
    (lambda: jaxdust.beam_search(jnp.ones((2, 2, 8, 6), jnp.int8), width=2), "[B, W, H]"),
    (lambda: jaxdust.beam_search(jnp.ones((8, 6), jnp.int8), width=2, max_clicks=2**31),
     r"beam_search: max_clicks must be below 2\^31, got 2147483648"),
    (lambda: lookahead_scorer(beam.heuristic_scorer, chunk=0), "lookahead_scorer: chunk must be a positive integer, got 0"),
    (lambda: beam.beam_solutions(np.ones((2, 4, 3), np.int8), 0), "beam_solutions: width must be a positive integer, got 0"),
    (lambda: beam.beam_solutions(np.where(np.arange(8)[:, None, None] == 6, np.ones((4, 3), np.int8) * (np.arange(3) != 0),
                                          np.ones((4, 3), np.int8)).astype(np.int8), 2, batch=4),
     r"beam_solutions: board 6: cell \(0, 1\) floats"),
    (lambda: jaxdust.beam_search(np.ones((8, 6)), width=2), "must hold integers"),
    (lambda: jaxdust.beam_search(jnp.ones((8, 6)), width=2), "got dtype float32"),
    (lambda: jaxdust.beam_search(np.full((8, 6), 12), width=2), "holds 12"),
    (lambda: jaxdust.solve("1212"), "give its width and height"),
    (lambda: upper_bound.beam_clicks(np.ones((9, 8), np.int8), 4, 1), "bitboards hold at most 64 cells, got 9x8"),
    # Width 0 wrote the root into a beam of no rows: a segmentation fault.
    (lambda: upper_bound.beam_clicks(np.eye(4, 3, dtype=np.int8) + 1, 0, 2), "width must be a positive integer, got 0"),
    (lambda: upper_bound.beam_upper_bound(upper_bound.to_planes(np.eye(4, 3, dtype=np.int8) + 1, 2),
                                          upper_bound.make_geometry(4, 3, "dust"), 0, upper_bound.heuristic_weights("dust"),
                                          np.zeros(12, np.uint64)), "the width must be at least 1"),
    (lambda: upper_bound.beam_clicks(np.eye(4, 3, dtype=np.int8) + 1, 2, 2, shortlist=-1),
     "shortlist must be a non-negative integer, got -1"),
    # Past the row's length the bisection never had enough: column 0, repeated.
    (lambda: selection.smallest_columns(jnp.zeros((1, 3)), 5), "count must be between 1 and the row's 3 scores, got 5"),
    (lambda: solve_dfs(np.ones((9, 8), np.int8), time_limit=None, node_limit=10), "at most 64 cells"),
    (lambda: dqn.DQNConfig(buffer_size=4096), "learning_starts .8192. cannot exceed buffer_size .4096."),
    (lambda: dqn.DQNConfig(total_steps=10), r"total_steps \(10\) ends before the first update: learning_starts"),
    (lambda: dqn.DQNConfig(rewards=jaxdust.Rewards(click=0.0)), "click must be negative"),
    (lambda: dqn.DQNConfig(gamma=0.0), "gamma must be above 0"),
    # A hand-edited config.json: "false" is a true string, and 1 stood in for True.
    (lambda: configs.from_json(avi.AVIConfig, {"features": "false"}), "AVIConfig.features must be a JSON bool"),
    (lambda: configs.from_json(dqn.DQNConfig, {"num_envs": True}), "DQNConfig.num_envs must be a JSON int"),
    (lambda: dqn.DQNConfig(gamma=0.9, rewards=jaxdust.Rewards(clear=-20.0)), r"rewards_clear \(-20.0\) must be above the click reward / \(1 - gamma\)"),
    # One iteration's transitions written twice into one slot: the later ones lost.
    (lambda: dqn.DQNConfig(num_envs=512, buffer_size=256, batch_size=256, learning_starts=256),
     r"num_envs \(512\) cannot exceed buffer_size \(256\)"),
    # Rows and slots are drawn from 16 random bits: rows past 65536 were never sampled.
    (lambda: avi.AVIConfig(buffer_lines=100_000), "buffer_lines must be at most 65536, got 100000"),
    (lambda: jaxdust.one_hot(jnp.full((4, 3), 5, jnp.int8), 3), "one_hot: the board holds colour 5, above colors=3"),
    (lambda: jaxdust.one_hot(np.array([[0, -1]]), 2), r"one_hot: the board holds -1; colours are 0 \(empty\) to 2"),
    # A seed where a key belongs, or a batch of keys where one does.
    (lambda: jaxdust.random_board(0, jaxdust.GameConfig(8, 6, 5)), "random_board: key must be one jax.random.key"),
    (lambda: jaxdust.random_boards(0, 3), "random_boards: key must be one jax.random.key"),
    (lambda: jaxdust.random_board(jax.random.split(jax.random.key(0), 3)), r"got an array of dtype key<fry> and shape \(3,\)"),
    (lambda: jaxdust.DustEnv().reset(0), "DustEnv.reset: key must be one jax.random.key"),
    (lambda: jaxdust.DustEnv().init(0), "DustEnv.init: key must be one jax.random.key"),
    (lambda: jaxdust.play_boards(jnp.ones((1, 4, 3), jnp.int8), baselines.random_legal, 0, 10), "play_boards: key must"),
    (lambda: jaxdust.one_hot(jnp.ones((4, 3), jnp.int8), 0), "one_hot: colors must be an integer in 1..9, got 0"),
    (lambda: jaxdust.one_hot(jnp.ones((4, 3), jnp.int8), 5.0), "one_hot: colors must be an integer in 1..9"),
    # colors sets the output's shape: jit without static_argnames was told colors was no integer.
    (lambda: jax.jit(jaxdust.one_hot)(jnp.ones((4, 3), jnp.int8), 5),
     r"one_hot: colors sets the number of planes, so under jit it must be static: jax.jit\(one_hot, static_argnames='colors'\)"),
    # A float cell came back with no channel set; a bool board failed inside XLA.
    (lambda: jaxdust.one_hot(np.array([[1.7, 0.0], [2.0, 1.0]]), 5), "one_hot: the board must hold integers"),
    (lambda: jax.jit(lambda b: jaxdust.one_hot(b, 5))(jnp.ones((4, 3), bool)), "one_hot: the board must hold integers"),
    # A board traced by the caller's own transform: a float one ran (float boards out), or
    # failed deep in XLA; a host-side function called it a ragged board.
    (lambda: jax.vmap(jaxdust.click)(jnp.ones((2, 4, 3), jnp.float32), jnp.zeros(2, int), jnp.zeros(2, int)),
     r"a board array must hold integers \(colours 0 to 9\), got dtype float32"),
    (lambda: jax.jit(lambda b: jaxdust.beam_search(b, width=4))(jnp.ones((2, 4, 3), jnp.float32)),
     "a board array must hold integers"),
    (lambda: jax.jit(lambda b: jaxdust.score(b, [(0, 0)], partial=True))(jnp.ones((4, 3), jnp.int8)),
     r"the board is traced \(inside jit, vmap or grad\): parse_board, and positions, replay, score and solve"),
    # Layer sizes are checked where the config is made, not deep in flax at the first step.
    (lambda: dqn.DQNConfig(hidden=(0,)), "hidden must be a tuple of positive integers"),
    (lambda: dqn.DQNConfig(hidden=16), "hidden must be a tuple of positive integers"),
    (lambda: avi.AVIConfig(hidden="abc"), "hidden must be a tuple of positive integers"),
    (lambda: avi.AVIConfig(conv=(0,)), "conv must be a tuple of positive integers"),
    (lambda: imitation.ImitationConfig(hidden=(2.5,)), "hidden must be a tuple of positive integers"),
    (lambda: avi.AVIConfig(policy_teacher="mcts", policy_temperature=0.5), "policy_temperature acts on the 'lines'"),
    (lambda: avi.AVIConfig(policy_teacher="mcts", line_target_share=0.5), "line_target_share acts on the 'lines'"),
    (lambda: benchmark.score("largest", benchmark.load_set("6x6x5", limit=3), limit=0, show=False),
     "limit must be a positive integer"),
    # A policy as play_boards plays it failed inside the call, missing its 'board'.
    (lambda: benchmark.score(baselines.largest_cluster, "6x6x5", limit=2, show=False),
     "agent 'largest_cluster' takes 2 arguments: score takes a function of the boards alone"),
    (lambda: jaxdust.DustEnv(max_clicks=0), r"max_clicks must be >= 1 and below 2\^31, or None, got 0"),
    (lambda: jaxdust.DustEnv(rewards=jaxdust.Rewards(click=float("nan"))), "click must be finite, got nan"),
    (lambda: jaxdust.GameConfig(8, 6, 10), r"colors must be in 1\.\.9, got 10"),
    (lambda: jaxdust.GameConfig(1, 6, 5), "width must be >= 2, got 1"),
    (lambda: jaxdust.parse_board("1" * 47), "47 digits"),
    (lambda: jaxdust.parse_board([[1, 2], [3]]), "rectangular"),
    (lambda: jaxdust.parse_board(np.full((8, 6), 1.5)), "board must hold integers 0-9, got dtype float64"),
    # An object array of ints was called "not a rectangular array of integers", which it is.
    (lambda: jaxdust.parse_board(np.array([[1, 2], [2, 1]], dtype=object)), "got dtype object"),
    (lambda: jaxdust.GameConfig(rules="same-game"), "unknown rules 'same-game'; known: dust, former, samegame"),
    (lambda: jaxdust.GameConfig(rules=None), "rules must be a str"),
    (lambda: jaxdust.board_to_text(np.zeros((3, 0), np.int8)), r"shape \(3, 0\) holds no cell"),
    (lambda: jaxdust.click(jnp.ones((4, 3), jnp.int8), 0, 0, rules=None), "rules must be a str, one of dust"),
    (lambda: jaxdust.parse_board("1" * 12, 4, 3, rules=["dust"]), r"rules must be a str.*got \['dust'\]"),
    (lambda: jaxdust.click(jnp.ones((4, 3), jnp.int8), 0, 0, rules="tetris"), "unknown rules 'tetris'; known"),
    (lambda: jaxdust.legal_action_mask(jnp.ones((4, 3), jnp.int8), rules="tetris"), "unknown rules 'tetris'"),
    (lambda: jaxdust.parse_board("1" * 12, 4, 3, rules="tetris"), "unknown rules 'tetris'"),
    (lambda: jaxdust.parse_board([[1, 1], [0, 0], [2, 0]], rules="samegame"), "column x=1 is empty"),
    (lambda: jaxdust.parse_board([[1, 0, 2], [1, 1, 1]], rules="former"), r"cell \(0, 2\) floats"),
    (lambda: jaxdust.score([[1, 2], [2, 1]], [(0, 0)], rules="samegame"), "is a group of 1; samegame removes groups of 2"),
    (lambda: jaxdust.score([[1, 1], [2, 2]], [(0, 0)], rules="former"), "leaves 2 cells"),
    (lambda: jaxdust.make("SameGame-15x15x5-v0", game=jaxdust.GameConfig(rules="bogus")), "unknown rules 'bogus'"),
    (lambda: jaxdust.make("Former-7x9x4-v0", game=jaxdust.GameConfig(5, 5, 3)),
     "Former-7x9x4-v0 plays the former rules, but game= plays the dust rules: give GameConfig.5, 5, 3, 'former'."),
    (lambda: jaxdust.solve([[1, 1], [2, 2]], rules="samegame"), "the exact solver plays the fewest-clicks rules"),
    (lambda: jaxdust.beam_search(jnp.ones((1, 4, 3), jnp.int8), 4, rules="clickomania"), "beam_search plays the"),
    (lambda: jaxdust.points_beam(jnp.ones((1, 4, 3), jnp.int8), 4, rules="dust"), "points_beam plays the points"),
    (lambda: jaxdust.points_beam(jnp.ones((1, 4, 3), jnp.int8), 0), "width must be a positive integer"),
    (lambda: jaxdust.points_beam(jnp.ones((1, 1, 4, 3), jnp.int8)), r"takes boards \[B, W, H\] or one board"),
    (lambda: jaxdust.points_beam(jnp.ones((1, 4, 3), jnp.int8), 4, chunk=0), "chunk must be a positive integer"),
    (lambda: points_beam_solutions(np.ones((1, 4, 3), np.int8), 0), "width must be a positive integer"),
    (lambda: jaxdust.points_beam([[[1, 1], [2, 2]], [[1, 1, 1], [2, 2, 2]]]), "lists are not a rectangular array"),
    (lambda: jaxdust.play_boards([[[1, 1], [2]]], baselines.largest_cluster, jax.random.key(0), 4),
     "lists are not a rectangular array"),
    (lambda: jaxdust.play_boards(np.ones((2, 4, 3), np.int8), lambda key, board, params: jnp.float32(0),
                                 jax.random.key(0), 4), "one integer action per board, got float32 of shape"),
    (lambda: jaxdust.play_boards(np.ones((2, 4, 3), np.int8), lambda key, board, params: jnp.zeros(2, jnp.int32),
                                 jax.random.key(0), 4), r"got int32 of shape \(2,\) per board"),
    # Another network's parameters failed inside flax, in ScopeParamShapeError.
    (lambda: jaxdust.play_boards(jaxdust.random_boards(jax.random.key(0), 2), runs.load_run("@imitation-8x6x5").policy,
                                 jax.random.key(0), 4, params={"x": np.ones(3)}),
     r"ClusterArgmax: params are not this network's \(no \['params'\]\['MLP_0'\]\['Dense_0'\]\['bias'\] of shape"),
    # An AttributeError: 'NoneType' object has no attribute 'dtype'.
    (lambda: jaxdust.play_boards(np.ones((2, 4, 3), np.int8), lambda key, board, params: None,
                                 jax.random.key(0), 4),
     "play_boards: a policy returns one integer action per board, got NoneType"),
    (lambda: jaxdust.play_boards(np.ones((2, 4, 3), np.int8), lambda key, board, params: (0, 1),
                                 jax.random.key(0), 4), "one integer action per board, got tuple"),
    (lambda: mcts.MCTSPolicy(mcts.heuristic_evaluator_for("dust"), 0), "simulations must be a positive integer, got 0"),
    # It failed at play, in JAX's "Non-hashable static arguments are not supported" and its traceback.
    (lambda: mcts.MCTSPolicy(_UnhashableEvaluator()), "MCTSPolicy: evaluate must be hashable"),
    # These three failed in JAX's "Non-hashable static arguments are not supported", naming no argument.
    (lambda: jaxdust.beam_search(np.ones((4, 3), np.int8), 2, _UnhashableEvaluator()),
     r"beam_search: scorer must be hashable, .* got _UnhashableEvaluator"),
    (lambda: jaxdust.beam_search(np.ones((4, 3), np.int8), 2, rescorer=_UnhashableEvaluator()),
     "beam_search: rescorer must be hashable"),
    (lambda: jaxdust.play_boards(np.ones((2, 4, 3), np.int8), _UnhashableEvaluator(), jax.random.key(0), 4),
     "play_boards: policy must be hashable"),
    (lambda: mcts.search(jnp.ones((1, 4, 3), jnp.int8), mcts.heuristic_evaluator_for("dust"), None,
                         jax.random.key(0), 4, considered=0), "considered must be a positive integer, got 0"),
    # NaN noise played whichever action came first; a string failed inside mctx.
    (lambda: mcts.search(jnp.ones((1, 4, 3), jnp.int8), mcts.heuristic_evaluator_for("dust"), None,
                         jax.random.key(0), 4, gumbel_scale=float("nan")), "gumbel_scale must be a finite number >= 0"),
    (lambda: mcts.search(jnp.ones((1, 4, 3), jnp.int8), mcts.heuristic_evaluator_for("dust"), None,
                         jax.random.key(0), 4, gumbel_scale="x"), "gumbel_scale must be a finite number >= 0, got 'x'"),
    # The dust game's estimate was returned for the points rules, whose values are no clicks.
    (lambda: mcts.heuristic_evaluator_for("samegame"), "the mcts heuristic"),
    (lambda: solver_points.beam([[1, 1], [2, 2]], 8, rules="former"), "jaxdust.solver.points.beam plays the points"),
    (lambda: solver_points.nmcs([[1, 1], [2, 2]], level=0), "level must be 1 or 2"),
    # numpy's own MemoryError, or "array is too big", or an OverflowError naming nothing
    (lambda: solver_points.beam([[1, 1], [2, 2]], 2**63), "a points beam of width 9223372036854775808 on 4 cells: about"),
    (lambda: registry.run_agent("largest", np.array([[[257, 1, 1], [1, 2, 2]]]), key=jax.random.key(0),
                                max_clicks=20), "a board array holds 257"),  # it played as colour 1
    (lambda: registry.run_agent("mcts-heuristic:4", jnp.array([[[10, 1, 1], [1, 2, 2]]]), key=jax.random.key(0),
                                max_clicks=20), "holds 10"),
    (lambda: registry.run_agent("largest", np.ones((2, 3), np.int8), key=jax.random.key(0), max_clicks=20),
     r"takes boards \[N, W, H\], got shape \(2, 3\)"),
    (lambda: registry.run_agent("largest", np.ones((1, 1, 2, 3), np.int8), key=jax.random.key(0), max_clicks=20),
     r"takes boards \[N, W, H\], got shape \(1, 1, 2, 3\)"),
    (lambda: jaxdust.beam_search(jnp.ones((8, 6), jnp.int8), width=None), "width must be a positive integer, got None"),
    (lambda: jaxdust.beam_search(jnp.ones((8, 6), jnp.int8), 8, "former"),
     "scorer must be a function of \\(boards, params\\), got 'former'; the rule set is given as rules="),
    (lambda: jaxdust.points_beam("3351"), r"a board given as text \('3351'\): read it with parse_board"),
    (lambda: jaxdust.click("33512", 0, 0), r"a board given as text \('33512'\)"),
    (lambda: jaxdust.beam_search(jnp.ones((8, 6), jnp.int8), width=2, chunk=None),
     "chunk must be a positive integer, got None"),
    (lambda: jaxdust.beam_search(jnp.ones((8, 6), jnp.int8), width=2, shortlist=None, rescorer=lookahead_heuristic),
     "shortlist must be a positive integer, got None"),
    (lambda: solver_points.nmcs([[1, 1], [2, 2]], seed=2**70), r"seed must be an integer in \[0, 2\^32\)"),
    (lambda: jaxdust.solve("1" * 48, time_limit=np.float32("nan")), "time_limit"),
    (lambda: DatasetConfig(boards=0), "boards"),
    (lambda: DatasetConfig(game=jaxdust.GameConfig(9, 8, 5)), "at most 64"),
    (lambda: jaxdust.beam_search(jnp.zeros((0, 4, 3), jnp.int8), 4), "no boards"),
    (lambda: benchmark.replayed_lengths(np.array([[[1, 1], [2, 2]], [[0, 1], [2, 2]]]), [[(0, 0)], [(1, 0)]], 4),
     r"^board 1: cell \(0, 1\) floats"),  # the board's fault, not its solution's
    (lambda: benchmark.replayed_lengths(np.array([[[1, 1], [2, 2]]]), [[(5, 0)]], 4), r"^solution for board 0: "),
    (lambda: jaxdust.beam_search(np.ones((1, 4, 3), np.int8), 4, scorer=scores_two_per_board),
     r"the scorer returns one score per board, \[M\] for boards \[M, W, H\]; got shape \(\d+, 2\)"),
    (lambda: jaxdust.beam_search(np.ones((1, 4, 3), np.int8), 4, rescorer=scores_one_number),
     r"the rescorer returns one score per board.*got shape \(\) for \d+ boards"),
    (lambda: jaxdust.beam_search(np.ones((1, 4, 3), np.int8), 4, rescorer=LOOKAHEAD_OF_ONE_NUMBER),
     r"the lookahead's base scorer returns one score per board.*got shape \(\)"),
    (lambda: jaxdust.points_beam(jnp.zeros((0, 4, 3), jnp.int8), 4), "no boards"),
    # The wrong kind of rules is named before the boards are checked settled under them (a
    # dust board is unsettled under SameGame, whose contraction the error then advised).
    (lambda: beam.beam_solutions(np.array([[[0, 0], [1, 0], [2, 1], [3, 0]]], np.int8), 2, rules="samegame"),
     "^beam_solutions plays the fewest-clicks rules"),
    (lambda: points_beam_solutions(np.array([[[1, 1], [2, 0], [0, 0], [0, 0]]], np.int8), 2, rules="dust"),
     "^points_beam_solutions plays the points and cells-left rules"),
    (lambda: play_boards(jnp.zeros((0, 4, 3), jnp.int8), baselines.largest_cluster, jax.random.key(0), 9), "no boards"),
    (lambda: jaxdust.make("Dust-6x6x5-v0", auto_reset="false"), "auto_reset must be True or False"),
    (lambda: jaxdust.beam_search(np.array([[0, 1], [2, 2]], np.int8), 2), r"^beam_search: cell \(0, 1\) floats above"),
    (lambda: jaxdust.DustEnv(jaxdust.GameConfig(4, 3, 3)).reset(jax.random.key(0), np.ones((5, 5), np.int8)),
     r"board of shape \(5, 5\), this env plays \(4, 3\)"),
    (lambda: jaxdust.DustEnv(jaxdust.GameConfig(4, 3, 3)).reset(jax.random.key(0), np.full((4, 3), 7)), r"cell \(0, 0\) holds 7"),
    (lambda: jaxdust.DustEnv(jaxdust.GameConfig(4, 3, 3)).reset(jax.random.key(0), np.ones((4, 3), np.float32)), "must hold integers"),
    (lambda: jaxdust.read_board_file(BOARDS_FILE, limit=0), "limit must be a positive integer"),
    (lambda: jaxdust.board_to_text([[12, 1], [1, 1]]), r"board holds 12; colours are 0 \(empty\) to 9"),
    (lambda: jaxdust.parse_board("111111", width=-2, height=-3), "width must be a positive integer or None, got -2"),
    (lambda: jaxdust.parse_board(np.ones((8, 6), int), width=0), "width must be a positive integer or None, got 0"),
    (lambda: jaxdust.board_to_text(np.ones((2, 2, 2), int)), "must be 2-D"),
    (lambda: jaxdust.score("1" * 48, [(0.9, 0)]), r"click 0: \(0.9, 0\) is not an \(x, y\) pair of ints"),
    # A tuple of pairs with one bad click gets no hint about one click written as a pair.
    (lambda: jaxdust.positions("1" * 48, ((0, 0), "ab")), r"click 1: 'ab' is not an \(x, y\) pair of ints$"),
    (lambda: jaxdust.replay("1" * 48, [(0, 0), "00"]), "click 1: '00' is not an"),
    (lambda: jaxdust.Rewards(clear=True), "must be a number, got bool True"),
    # Beyond a float's range it was Python's OverflowError, which from_json's callers do not catch.
    (lambda: jaxdust.Rewards(clear=10**400), "^clear must be within float32's range"),
    (lambda: avi.AVIConfig(child_share="0.5"), "^child_share must be a number, got str"),
    (lambda: avi.AVIConfig(child_share=True), "^child_share must be a number, got bool"),
    (lambda: dqn.DQNConfig(hidden=(2**31, 16)), r"^hidden must be a tuple of positive integers below 2\^31"),
    (lambda: render.board_letters([[-1, 2], [3, 0]]), "board_letters: the board holds -1"),
    # numpy's own "inhomogeneous shape" message, and "got shape ()" for a board's text.
    (lambda: render.board_letters([[1, 2], [3]]),
     r"board_letters: the board is not a rectangular array \(\[x\]\[y\]\)"),
    (lambda: render.board_svg("1122"), r"board_svg: a board given as text \('1122'\): read it with parse_board"),
    (lambda: render.board_rgb([[10, 2], [3, 0]]), "board_rgb: the board holds 10"),
    (lambda: render.board_svg([[1, 2], [3, 0]], cell_size=0), "cell_size must be an integer >= 8"),
    (lambda: render.board_svg([[1, 2], [3, 0]], highlight=np.ones((3, 3))), r"highlight of shape \(3, 3\)"),
    (lambda: render.game_gif([[[1, 2], [3, 0]]], milliseconds=-5), "milliseconds must be a positive integer"),
    (lambda: render.game_gif([[[1, 2], [3, 0]]], milliseconds=10), "milliseconds must be at least 20"),
    (lambda: render.game_gif([[[1, 2], [3, 0]], [[1, 2, 3]]]), "the boards are of several shapes"),
    # The last frame shows twice as long, in the GIF format's 16-bit hundredths (PIL's OverflowError before).
    (lambda: render.game_gif([[[1, 2], [3, 0]]], milliseconds=327_680), "milliseconds must be at most 327679"),
    (lambda: jaxdust.DustEnv(jaxdust.GameConfig(4, 3, 3)).observe(np.ones((5, 3), np.int8)),
     r"env.observe: a board of shape \(5, 3\), this env plays \(4, 3\)"),
    (lambda: play.play_in_chunks(jnp.ones((2, 4, 3), jnp.int8), baselines.largest_cluster, jax.random.key(0), 9, 0),
     "chunk must be a positive integer .* got 0"),
    (lambda: play.play_in_chunks(jnp.ones((2, 4, 3), jnp.int8), baselines.largest_cluster, jax.random.key(0), 9, 2.5),
     "chunk must be a positive integer .* got 2.5"),
    # It was named "indexed_keys", a function the caller never called.
    (lambda: play.play_in_chunks(jnp.ones((2, 4, 3), jnp.int8), baselines.largest_cluster, 5, 9, 2),
     "^play_in_chunks: key must be one jax.random.key"),
    (lambda: render.board_svg([[1, 2], [3, 0]], highlight=np.full((2, 2), 0.2)), "highlight is a bool mask"),
    (lambda: render.BoardView([[1, 2], [3, 0]], highlight=np.array([[0, 2], [1, 0]])), "highlight is a bool mask"),
    (lambda: render.board_rgb(np.zeros((0, 6), np.int8)), r"the board is empty, shape \(0, 6\)"),
    (lambda: render.board_letters(np.full((2, 2), 1.7)), "board_letters: a board holds integer colours"),
    (lambda: render.BoardView(np.full((2, 2), 1.7)), "BoardView: a board holds integer colours"),
    (lambda: jaxdust.click(jnp.ones((4, 3), jnp.int8), 1.0, 0), "click: x must be an integer"),
    (lambda: jaxdust.click_action(jnp.ones((4, 3), jnp.int8), jnp.float32(3)), "click_action: action must be an integer"),
    (lambda: jaxdust.click(jnp.ones((2, 4, 3), jnp.int8), 0, 0), r"click takes one board \[W, H\], got shape \(2, 4, 3\)"),
    (lambda: jaxdust.click(jnp.ones((0, 0), jnp.int8), 0, 0), r"click takes one board \[W, H\], got shape \(0, 0\)"),
    (lambda: jaxdust.cluster_sizes(jnp.ones((2, 4, 3), jnp.int8)), r"cluster_sizes takes one board .*jax.vmap"),
    # Boards with no cells failed inside JAX (an index out of bounds, stacking nothing) or returned nothing.
    *((lambda function=function, shape=shape: function(np.zeros(shape, np.int8)),
       re.escape(f"{function.__name__} takes a board [W, H] (or boards [W, H, ...]) of at least one cell, got shape "
                 f"{shape}"))
      for function in (jaxdust.is_done, jaxdust.is_over, jaxdust.apply_gravity, jaxdust.settle)
      for shape in ((0, 6), (8, 0), (8, 0, 3))),
    (lambda: jaxdust.is_over(np.zeros((0, 6), np.int8), "samegame"), r"is_over takes a board .* got shape \(0, 6\)"),
    (lambda: _env_step(3.7), "env.step: the action must be an integer"),
    (lambda: _env_step([1, 2]), r"env.step takes one state and one action .* action \(2,\)"),
    (lambda: _env_step(1, batched=True), r"got board \(2, 4, 3\).*jax.vmap\(env.step\)"),
    (lambda: play_boards(jnp.ones((4, 3), jnp.int8), baselines.largest_cluster, jax.random.key(0), 9),
     r"takes a batch of boards \[N, W, H\], got shape \(4, 3\) \(one board: boards\[None\]\)"),
    (lambda: play_boards(jnp.ones((1, 4, 3), jnp.int8), baselines.largest_cluster, jax.random.key(0), 0),
     "max_clicks must be a positive integer below 2\\^31, got 0"),
    (lambda: play_boards(jnp.ones((1, 4, 3), jnp.int8), baselines.largest_cluster, jax.random.key(0), 3 * 10**9),
     "max_clicks must be a positive integer below 2\\^31, got 3000000000"),
    (lambda: play_boards(np.full((1, 4, 3), 1.5), baselines.largest_cluster, jax.random.key(0), 9), "must hold integers"),
    # Unsettled boards, a position the rules never make (a cell above a hole; Former: no sideways move).
    (lambda: play_boards(np.array([[[1, 1, 0]] * 4, [[0, 1, 0]] + [[1, 1, 0]] * 3], np.int8),
                         baselines.largest_cluster, jax.random.key(0), 9),
     r"play_boards: board 1: cell \(0, 1\) floats above an empty cell"),
    (lambda: play_boards(np.array([[[0, 0, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0]]], np.int8),
                         baselines.largest_cluster, jax.random.key(0), 9, rules="samegame"), "play_boards: board 0: "),
    (lambda: jaxdust.DustEnv(jaxdust.GameConfig(4, 3, 3)).reset(jax.random.key(0), np.array([[0, 2, 0]] + [[1, 1, 0]] * 3)),
     r"^cell \(0, 1\) floats above an empty cell; a board must be settled under the dust rules"),
    # A batch [B, W, H] where one board is taken would be read as boards [W, H] over B.
    *((lambda function=function: function(jnp.ones((3, 4, 2), jnp.int8)),
       f"{function.__name__} takes one board \\[W, H\\], got shape \\(3, 4, 2\\); for a batch, jax.vmap")
      for function in (jaxdust.cluster_labels, jaxdust.legal_action_mask, jaxdust.cluster_action_mask,
                       jaxdust.contract)),
    (lambda: jaxdust.click_action(jnp.ones((4, 3), jnp.int8), np.array([0, 1])),
     "click_action takes one action per board, got shape \\(2,\\); for many, jax.vmap"),
    (lambda: jaxdust.click(jnp.ones((4, 3), jnp.int8), np.array([0, 1]), 0), "click takes one x per board"),
    (lambda: jaxdust.random_board(jax.random.key(0), (3, 2, 2)), "random_board takes a GameConfig"),
    (lambda: jaxdust.random_boards(jax.random.key(0), jaxdust.GameConfig(6, 6, 5), 20),
     r"random_boards\(key, count, config\) takes a GameConfig third .*, got 20"),
    (lambda: jaxdust.beam_search(jnp.ones((2, 2), jnp.int8), width=2**31), "children a click .*, beyond 2\\^31"),
    # Within a chunk below 2^31 children, the chunks the children are made in passed it.
    (lambda: jaxdust.beam_search(np.ones((4, 4), np.int8), width=2**27 - 1),
     r"beam_search: 1 boards x width 134,217,727 x 16 cells = 2,147,483,632 children a click \(2,147,483,648 slots"),
    (lambda: jaxdust.points_beam(np.ones((4, 4), np.int8), width=2**27 + 1), "points_beam: 1 boards x width 134,217,729"),
    *((lambda search=search, shape=shape: search(np.zeros(shape, np.int8)),
       f"{search.__name__}: boards of {shape[-2]} x {shape[-1]} cells; a board is at least 2 wide and 1 high")
      for search in (jaxdust.beam_search, jaxdust.points_beam) for shape in ((3, 0), (0, 3), (2, 3, 0), (1, 4))),
    # One column: the searches played it, and no other tool (replay, solve, parse_board) reads it.
    (lambda: play_boards(np.ones((2, 1, 4), np.int8), baselines.largest_group, jax.random.key(0), 4),
     "play_boards: boards of 1 x 4 cells; a board is at least 2 wide and 1 high"),
    (lambda: jaxdust.beam_search(np.ones((4, 4), np.int8), width=2**25, rescorer=lookahead_heuristic),
     "beam_search: 1 boards x width 33,554,432 x shortlist 4 x 16 cells"),
    # SameGame's points of a larger board would wrap round int32.
    (lambda: play_boards(np.ones((1, 216, 216), np.int8), baselines.largest_group, jax.random.key(0), 2,
                         rules="samegame"), "216x216 board has 46,656 cells; under the samegame rules a board holds"),
    # A user's evaluator of the wrong shapes failed deep inside mctx, or broadcast into wrong values.
    *((lambda evaluate=evaluate: mcts.search(np.ones((2, 4, 3), np.int8), evaluate, None, jax.random.key(0), 4),
       re.escape("mcts: the evaluator returns (clicks_left [N], logits [N, W * H]) for boards [N, W, H], here [2] "
                 f"and [2, 12]; got {got}"))
      for evaluate, got in (
          (lambda boards, params: (jnp.zeros(2), jnp.zeros((2, 4, 3))), "shapes ((2,), (2, 4, 3))"),
          (lambda boards, params: (jnp.zeros((2, 1)), jnp.zeros((2, 12))), "shapes ((2, 1), (2, 12))"),
          (lambda boards, params: jnp.zeros(2), "one array of shape (2,)"))),
    (lambda: mcts.search(np.ones((4, 3), np.int8), mcts.heuristic_evaluator, None, jax.random.key(0), 4),
     r"mcts.search takes a batch of boards \[N, W, H\], got shape \(4, 3\) \(one board: boards\[None\]\)"),
    (lambda: mcts.search(np.ones((1, 4, 3), np.int8), mcts.heuristic_evaluator, None, 0, 4),
     "mcts.search: key must be one jax.random.key"),
    *((lambda shape=shape: mcts.search(np.ones(shape, np.int8), mcts.heuristic_evaluator, None, jax.random.key(0), 4),
       f"mcts.search: no boards, or boards of no cell \\(shape \\({shape[0]}, {shape[1]}, {shape[2]}\\)\\)")
      for shape in ((0, 4, 3), (2, 0, 3))),
    (lambda: mcts.search(np.ones((2, 1, 4), np.int8), mcts.heuristic_evaluator, None, jax.random.key(0), 4),
     "mcts.search: boards of 1 x 4 cells; a board is at least 2 wide and 1 high"),
    (lambda: mcts.search(np.array([[[0, 1, 0], [1, 1, 1]]], np.int8), mcts.heuristic_evaluator, None,
                         jax.random.key(0), 4), r"^mcts.search: board 0: cell \(0, 1\) floats above an empty cell"),
    *((lambda function=function: function(jnp.array([1, 0, 2, 0], jnp.int8)),
       re.escape(f"{function.__name__} takes a board [W, H] (or boards [W, H, ...]) of at least one cell, got shape "
                 "(4,)"))
      for function in (jaxdust.settle, jaxdust.apply_gravity, jaxdust.is_over)),
    # A trained network's agent called without its parameters (play_boards' default).
    (lambda: play_boards(np.ones((1, 4, 3), np.int8), TINY_POLICY, jax.random.key(0), 4),
     r"^ClusterArgmax plays a trained network: pass its parameters too \(params=agent.params"),
    (lambda: jaxdust.beam_search(np.ones((1, 4, 3), np.int8), 2, TINY_SCORER), "ValueHeadScorer plays a trained"),
    (lambda: TINY_SCORER(np.ones((4, 3), np.int8), {"params": {}}),
     r"ValueHeadScorer takes boards \[N, W, H\], got an array of shape \(4, 3\)"),
]


def _env_step(action, batched=False):
    env = jaxdust.DustEnv(jaxdust.GameConfig(4, 3, 3))
    state, _ = env.reset(jax.random.key(0))
    if batched:
        state = jax.tree.map(lambda leaf: jnp.stack([leaf, leaf]), state)
    return env.step(state, action)


def test_indices_beyond_int32_stay_off_the_board():
    """A numpy int64 of 2**32 would wrap round to int32 0, a cell: clipped, it removes nothing."""
    board = jnp.ones((4, 3), jnp.int8)
    for action in (np.int64(2**32), 2**40, np.int64(-2**32)):
        assert int(jaxdust.click_action(board, action)[1]) == 0
        assert int(jaxdust.click(board, action, 0)[1]) == 0
    env = jaxdust.DustEnv(jaxdust.GameConfig(4, 3, 3))
    state, _ = env.reset(jax.random.key(0))
    after, step = env.step(state, np.int64(2**32))
    assert float(step.reward) == env.rewards.empty_click and np.array_equal(after.board, state.board)


def test_narrow_integer_coordinates_click_the_cell_they_name():
    """``x * height + y`` in a JAX int8 or uint8 would wrap round onto another cell (10 * 15
    + 3 is past 127); any integer dtype clicks what Python ints do, eagerly and under vmap,
    and a JAX board of another integer dtype comes back int8."""
    board = jaxdust.random_board(jax.random.key(0), jaxdust.GameConfig(15, 15, 3, "former"))
    expected = jaxdust.click(board, 10, 3, rules="former")
    for dtype in (jnp.int8, jnp.uint8, jnp.int16):
        after, removed = jaxdust.click(board, jnp.asarray(10, dtype), jnp.asarray(3, dtype), rules="former")
        assert int(removed) == int(expected[1]) > 0 and np.array_equal(after, expected[0])
        mapped = jax.vmap(lambda x, y: jaxdust.click(board, x, y, rules="former")[1])(
            jnp.array([10], dtype), jnp.array([3], dtype))
        assert int(mapped[0]) == int(expected[1])
    assert jaxdust.contract(board.astype(jnp.int32), rules="former").dtype == jnp.int8
    with pytest.raises(ValueError, match="a board array holds 256; colours are 0 \\(empty\\) to 9"):
        jaxdust.is_done(jnp.full((2, 2), 256, jnp.int32))  # as int8 it would wrap round to an empty board


def test_keys_of_every_kind_are_taken_for_one():
    """A typed key, a raw ``PRNGKey`` (and a numpy copy of one), and the rbg
    implementations' raw keys of four words all pass the key check that refuses seeds; a
    raw key of the other implementation's shape is named, where JAX failed inside."""
    from jaxdust.core import game

    config = jaxdust.GameConfig(4, 3, 3)
    raw = jax.random.PRNGKey(5)
    same = [jaxdust.random_board(key, config) for key in (raw, np.asarray(raw))]
    assert np.array_equal(same[0], same[1])
    game.require_key(jax.random.key(5), "test")
    with jax.default_prng_impl("rbg"):
        game.require_key(np.zeros(4, np.uint32), "test")  # jax.random.PRNGKey there
        assert jaxdust.random_board(jax.random.PRNGKey(5), config).shape == (4, 3)
    with pytest.raises(TypeError, match=re.escape("shape (4,) (a raw key of this process's JAX has shape (2,)")):
        jaxdust.random_board(np.zeros(4, np.uint32), config)
    jax.vmap(lambda key: jaxdust.random_board(key, config))(jax.random.split(jax.random.key(5), 3))


@pytest.mark.parametrize("call, word", API_CASES, ids=[w for _, w in API_CASES])
def test_library_entry_points_name_the_problem(call, word):
    with pytest.raises((ValueError, TypeError), match=word):
        call()


def test_an_agent_takes_params_with_entries_its_network_does_not_read():
    """As flax's apply does: only a parameter of the network's missing or of another shape
    is refused."""
    agent = runs.load_run("@imitation-8x6x5")
    boards = jaxdust.random_boards(jax.random.key(0), 2)
    extra = {**agent.params, "intermediates": {"x": np.ones(3)}}
    played = [jaxdust.play_boards(boards, agent.policy, jax.random.key(0), 60, params=params).clicks.tolist()
              for params in (agent.params, extra)]
    assert played[0] == played[1]


def test_a_beam_without_a_rescorer_takes_no_shortlist():
    """``shortlist`` is read by a rescorer only: None is taken without one (and refused with
    one, above)."""
    board = jaxdust.random_board(jax.random.key(3), jaxdust.GameConfig(4, 3, 3))
    assert int(jaxdust.beam_search(board, width=2, shortlist=None).length) == int(
        jaxdust.beam_search(board, width=2).length)


def test_a_jax_beam_too_large_for_memory_is_refused_before_it_compiles(monkeypatch):
    # XLA failed after compiling, "Out of memory allocating 56400034976 bytes", for width
    # 2 * 10^7 on an 8x6 board with 23.5 GiB; the refusal takes the memory the machine says.
    from jaxdust.core import machine
    from jaxdust.evaluation import registry
    monkeypatch.setattr(machine, "memory_bytes", lambda: 2**30)
    monkeypatch.setattr(machine, "device_memory_bytes", lambda: None)
    board = jnp.ones((8, 6), jnp.int8)
    with pytest.raises(ValueError, match=r"^beam_search: 1 board x width 1,000,000 on 48 cells: about 2\.5 GiB of memory, "
                                         r"more than this machine's 1\.0 GiB$"):
        jaxdust.beam_search(board, 10**6)
    with pytest.raises(ValueError, match=r"^points_beam: 2 boards x width 1,000,000 on 48 cells: about 4\.6 GiB"):
        jaxdust.points_beam(jnp.ones((2, 8, 6), jnp.int8), 10**6, rules="clickomania")
    for rules in ("dust", "samegame"):
        with pytest.raises(ValueError, match=r"^beam:1000000: 1 board x width 1,000,000 on 48 cells"):
            registry.require_playable(["beam:1000000"], rules, 8, 6)
    assert int(jaxdust.beam_search(board, 1000).length) == 1  # a width that fits searches
    # An accelerator that does not say its memory is not held to the machine's.
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    machine.require_memory("a search", 2**40, device=True)
    with pytest.raises(ValueError, match="more than this machine's 1.0 GiB"):
        machine.require_memory("a search", 2**40)


def test_the_errors_documented_as_one_type_are_of_that_type():
    """The check above takes a ValueError or a TypeError; these are documented as one."""
    for call in (lambda: jaxdust.GameConfig(rules=None), lambda: jaxdust.core.game.rules_of(["dust"])):
        with pytest.raises(TypeError, match="rules must be a str"):
            call()
    with pytest.raises(jaxdust.UnsettledBoardError, match=r"^board 1: cell \(0, 1\) floats"):
        benchmark.replayed_lengths(np.array([[[1, 1], [2, 2]], [[0, 1], [2, 2]]]), [[(0, 0)], [(1, 0)]], 4)


def test_write_proven_names_the_command_for_boards_of_two_sizes(tmp_path):
    """Its error named ``python -m jaxdust.solver`` whatever the command."""
    jobs = [(1, "1122", 2, 2), (2, "112233", 3, 2)]
    records = [{"line": 1, "board": "1122", "optimal": True}, {"line": 2, "board": "112233", "optimal": True}]
    with pytest.raises(SystemExit, match=r"^jaxdust-solve: error: --board-file needs boards of one size"):
        solver_cli.write_proven(records, jobs, str(tmp_path / "p.txt"), "dust", "jaxdust-solve")


def test_line_ranges_are_kept_as_ranges():
    """``--lines 1-10000000000`` costs nothing: the solver picks lines by range, not from a set."""
    from jaxdust.core import flags

    assert flags.line_ranges("7,181-10000000000") == [(7, 7), (181, 10**10)]
    jobs = [(2, "x", 1, 1), (5, "y", 1, 1)]
    assert solver_cli._pick_lines(jobs, [(3, 10**12)], "f") == [(5, "y", 1, 1)]
    assert solver_cli._pick_lines(jobs, [(5, 5), (1, 5), (2, 2)], "f") == jobs  # in file order, each once
    with pytest.raises(ValueError, match="^--lines: no board on lines 3-4 of f$"):
        solver_cli._pick_lines(jobs, [(2, 2), (3, 4)], "f")


def test_the_notebook_runner_keeps_a_bars_last_frame_and_the_order_of_outputs():
    import nbformat

    def stream(name, text):
        return nbformat.v4.new_output("stream", name=name, text=text)

    outputs = [stream("stderr", "\r  0%| 0/8"), stream("stderr", "\r 50%| 4/8"), stream("stderr", "\r100%| 8/8\r\n"),
               stream("stdout", "a\r\nb\n"), stream("stdout", "b2\n"),
               nbformat.v4.new_output("display_data", data={"text/plain": "x"}),
               stream("stdout", "c\n"), stream("stderr", "d\n"), stream("stdout", "e\n")]
    merged = notebook_runner().merged_streams(outputs)
    assert [(o["output_type"], o.get("name"), o.get("text")) for o in merged] == [
        ("stream", "stderr", "100%| 8/8\n"), ("stream", "stdout", "a\nb\nb2\n"), ("display_data", None, None),
        ("stream", "stdout", "c\n"), ("stream", "stderr", "d\n"), ("stream", "stdout", "e\n")]


def test_the_notebook_runner_refuses_a_name_it_has_not(capsys):
    """``notebooks/execute.py`` took any word (``--help``, a misspelt name) as a notebook it
    had not, ran nothing and exited 0."""
    runner = notebook_runner()
    with pytest.raises(SystemExit) as exit_info:
        runner.main(["quickstar"])
    assert exit_info.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == "execute.py: error: no notebook quickstar here; there are quickstart, solvers_evaluation, train_avi, train_dqn"


def test_the_notebook_runner_takes_paths_and_runs_this_checkouts_jaxdust(monkeypatch):
    """``execute.py notebooks/quickstart.ipynb`` (a shell's completion) was no notebook; and
    the kernel imported whichever jaxdust was installed (another checkout's, editable) while
    the copy was stamped with this checkout's version."""
    runner = notebook_runner()
    kernels, stored = [], []

    class Client:
        def __init__(self, notebook, **kwargs):
            pass

        def execute(self, env):
            kernels.append(env)

    monkeypatch.setattr(runner, "NotebookClient", Client)
    monkeypatch.setattr(runner, "atomic_write_bytes", lambda path, data: stored.append(path.name))
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    runner.main(["notebooks/quickstart.ipynb", "train_dqn.ipynb"])
    assert stored == ["quickstart.ipynb", "train_dqn.ipynb"]
    checkout = str(Path(runner.__file__).resolve().parent.parent)
    assert [env["PYTHONPATH"] for env in kernels] == [os.pathsep.join([checkout, "/elsewhere"])] * 2


def test_help_states_each_options_default_once():
    """Many benchmark flags gave no default in ``--help``; a default worth naming is added,
    as the flag takes it, where the help names none (options of groups too), and left alone
    where it does or where there is none."""
    from jaxdust.core import flags

    parser = flags.Parser(prog="x")
    parser.add_argument("--boards", type=int, default=200)
    parser.add_argument("--width", type=int, default=64, help="beam width")
    parser.add_argument("--jobs", type=int, default=1, help="processes (Default: one a core)")
    parser.add_argument("--widths", default=[1, 16, 256], help="comma-separated, 5%% of them")
    parser.add_argument("--programs", default=("a", "b"), help="which: avi_default or b")
    parser.add_mutually_exclusive_group().add_argument("--seed", type=int, default=7, help="seeds it")
    parser.add_argument_group("more").add_argument("--rate", type=float, default=0.5, help="a rate")
    parser.add_argument("--share", default="5%", help="a share")
    for quiet in (dict(default=None, help="unset"), dict(action="store_true", help="a switch"),
                  dict(default="", help="empty"), dict(type=int, default=3, help=argparse.SUPPRESS)):
        parser.add_argument(f"--q{len(parser._actions)}", **quiet)
    text = " ".join(parser.format_help().split())
    assert "--boards BOARDS default 200 " in text and "beam width (default 64) " in text
    assert "processes (Default: one a core) " in text and "5% of them (default 1,16,256) " in text
    assert "which: avi_default or b (default a,b) " in text
    assert "seeds it (default 7)" in text and "a rate (default 0.5)" in text
    assert "a share (default 5%)" in text and text.lower().count("default") == 9 and "unset --q" in text and "None" not in text
    assert " ".join(parser.format_help().split()) == text  # formatting again adds nothing


def test_hints_name_the_other_commands_as_this_one_was_started(monkeypatch, tmp_path):
    """A finished run's hint to play it names ``jaxdust-evaluate`` where ``jaxdust-train``
    ran (an installed package has no ``evaluate.py``), ``python -m`` after ``python -m``."""
    sibling = functools.partial(flags.sibling_command, "evaluate.py", "jaxdust-evaluate", "jaxdust.evaluation.cli")
    monkeypatch.setattr(sys, "argv", ["/venv/bin/jaxdust-train"])
    assert sibling() == "jaxdust-evaluate"
    monkeypatch.setattr(sys, "argv", ["train.py"])
    assert sibling() == "python evaluate.py"
    # Run by its path from another folder, the hint named an evaluate.py that was not there.
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("train.py", "evaluate.py"):
        (checkout / name).write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [os.path.join("checkout", "train.py")])
    assert sibling() == f"python {os.path.join('checkout', 'evaluate.py')}"
    monkeypatch.chdir(tmp_path / "checkout")
    monkeypatch.setattr(sys, "argv", [str(checkout / "train.py")])
    assert sibling() == "python evaluate.py"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert sibling() == f"python {checkout / 'evaluate.py'}"  # not up and down again
    spaced = tmp_path / "a checkout"
    spaced.mkdir()
    for name in ("train.py", "evaluate.py"):
        (spaced / name).write_text("")
    monkeypatch.setattr(sys, "argv", [str(spaced / "train.py")])
    assert sibling() == f"python '{spaced / 'evaluate.py'}'"  # a command to paste into a shell
    monkeypatch.setattr(sys, "argv", [str(checkout / "train.py")])
    (checkout / "evaluate.py").unlink()  # a script of another program: no such sibling to name
    assert sibling() == "python evaluate.py"
    monkeypatch.setattr(sys.modules["__main__"], "__spec__", types.SimpleNamespace(name="jaxdust.learn.cli"),
                        raising=False)
    assert sibling() == "python -m jaxdust.evaluation.cli"


def test_help_shows_examples_as_the_command_was_started(monkeypatch, capsys):
    """``--help`` is the module docstring: as ``jaxdust-train`` its examples are that
    command's (a wheel has no ``train.py``), their comments in the same column, and its
    double backquotes are left out."""
    shown = {}
    for argv0 in ("/venv/bin/jaxdust-train", "train.py"):
        monkeypatch.setattr(sys, "argv", [argv0, "--help"])
        with pytest.raises(SystemExit) as exit_info:
            train_cli.main(["--help"])
        shown[argv0] = capsys.readouterr().out
        assert exit_info.value.code == 0 and "``" not in shown[argv0]
    installed, repository = shown["/venv/bin/jaxdust-train"], shown["train.py"]
    assert installed.startswith("usage: jaxdust-train") and "python train.py" not in installed
    assert "\njaxdust-train: train a dust-game agent" in installed
    example = [line for line in installed.splitlines() if "dqn --preset original" in line][0]
    assert example.lstrip().startswith("jaxdust-train dqn --preset original  ")
    assert example.index("#") == [line for line in repository.splitlines() if "dqn --preset original" in line][0].index(
        "#") and "    python train.py dqn --preset original" in repository
    with pytest.raises(SystemExit):
        leaderboard.main(["--help"])
    shown = capsys.readouterr().out
    assert "cells left: random,largest" in " ".join(shown.split()) and "{'" not in shown and "``" not in shown
    monkeypatch.setattr(sys, "argv", ["/venv/bin/jaxdust-solve", "--help"])
    with pytest.raises(SystemExit):
        solver_cli.main(["--help"])
    solver_help = capsys.readouterr().out
    assert "\n    jaxdust-solve data/boards/optimal_6x6x5.txt --out solutions.jsonl" in solver_help
    assert solver_help.startswith("usage: jaxdust-solve") and "python -m jaxdust.solver" not in solver_help
    # Started as a module (python -m jaxdust.learn.cli), it is called that, not train.py.
    main_module = type(sys)("__main__")
    main_module.__spec__ = type("Spec", (), {"name": "jaxdust.learn.cli"})()
    monkeypatch.setitem(sys.modules, "__main__", main_module)
    monkeypatch.setattr(sys, "argv", ["/site-packages/jaxdust/learn/cli.py", "--help"])
    with pytest.raises(SystemExit):
        train_cli.main(["--help"])
    as_module = capsys.readouterr().out
    assert as_module.startswith("usage: python -m jaxdust.learn.cli") and "train.py" not in as_module
    assert "    python -m jaxdust.learn.cli dqn --preset original  " in as_module
    with pytest.raises(SystemExit):
        train_cli.main(["avi", "--total-updates", "0"])
    assert capsys.readouterr().err.startswith("python -m jaxdust.learn.cli avi: error: --total-updates")


@pytest.mark.parametrize("module", ["jaxdust.evaluation.leaderboard", "jaxdust.evaluation.cli", "jaxdust.learn.cli",
                                    "jaxdust.solver.cli", "jaxdust.solver", "jaxdust.learn.published",
                                    "jaxdust.learn.datasets", "jaxdust.evaluation.ranking"])
def test_every_command_module_runs_with_python_m(module):
    """``python -m jaxdust.evaluation.leaderboard --bogus`` imported the module, ran nothing
    and exited 0."""
    result = subprocess.run([sys.executable, "-m", module, "--bogus"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result
    last = result.stderr.strip().splitlines()[-1]  # train's learner parsers name their learner: "... cli avi: error:"
    assert re.match(rf"python -m {re.escape(module)}( avi)?: error: ", last), last
