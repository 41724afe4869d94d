"""Quality of the learners: default CPU runs, learning curves, and play on fresh and proven boards.

Trains each learner with ``train.py``'s defaults (the imitation run includes making its
data, which counts as training time), draws mean greedy and argmax clicks against wall
time, then plays two board sets with every trained network: argmax of its output (the policy,
no simulation), its value as the scorer of a width-1 (greedy), width-8 and width-64 beam,
and Gumbel MuZero with 64 simulations on its policy and value (learners that have both),
beside the hand-made heuristic at the same widths (and MCTS with a uniform prior over cells) in the
same run. The sets: 1000 fresh
random 8x6 boards (seed 10000 + --seed) and the 100 boards of
``data/boards/optimal_8x6x5.txt`` (the first 100 of the evaluation set, each optimum
proven by ``python -m jaxdust.solver``), where the gap to the optimum and the share of
boards solved optimally are reported too.

    python benchmarks/learners.py                      # all learners, about 50 minutes on 2 cores
    python benchmarks/learners.py --learners dqn --runs-dir results/learners
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import time

import jax
import numpy as np

import jaxdust
from jaxdust.core import files, flags, game, machine
from jaxdust.core.boards import BOARDS_DIR, read_board_file
from jaxdust.core.play import play_boards, play_in_chunks
from jaxdust.evaluation import baselines, plots
from jaxdust.learn import cli, runs
from jaxdust.search.beam import beam_lengths
from jaxdust.search.heuristic import heuristic_scorer
from jaxdust.search.mcts import MCTSPolicy, heuristic_evaluator


def fresh_boards(count: int, seed: int) -> jax.Array:
    return game.random_boards(jax.random.key(seed), count)


WIDTHS = (1, 8, 64)
MCTS_SIMULATIONS = 64
PLAY_CHUNK = 256  # boards played at once by a policy (an MCTS player holds a tree per board)
CAP = 4 * 48  # clicks an unfinished game counts as
PROVEN_FILE = os.path.join(BOARDS_DIR, "optimal_8x6x5.txt")  # the package's copy: any working directory


def board_sets(fresh: int, seed: int, proven: int | None = None) -> dict:
    """``{"fresh": (boards, None), "proven": (boards, optima)}``: ``fresh`` random 8x6 boards
    (seed 10000 + ``seed``) and the boards of ``PROVEN_FILE`` (the first ``proven``, default
    all) with their proven optima."""
    records = read_board_file(PROVEN_FILE, limit=proven)
    return {"fresh": (fresh_boards(fresh, seed=10_000 + seed), None),
            "proven": (jax.numpy.asarray(np.stack([r.board for r in records])), np.array([r.values[-1] for r in records]))}


def play_set(boards, optimum, cap, policy=None, scorer=None, params=None, widths=WIDTHS, evaluator=None,
             simulations=(MCTS_SIMULATIONS,), seed: int = 0, policy_params=None) -> dict:
    """Argmax play (when ``policy`` is given, with ``policy_params``, else ``params``: a run's
    checkpoint selected by argmax play, where the searches play the one selected by greedy
    play), the ``scorer``'s beams at ``widths`` and, with an ``evaluator``, Gumbel MuZero at
    each of ``simulations`` on one board set: mean clicks and milliseconds per board
    (compilation included), and with ``optimum`` the gap and the share played optimally.
    ``seed`` draws the players' keys; every player here is deterministic (MCTS searches
    with its Gumbel noise off), so the figures do not depend on it."""
    lengths, seconds = {}, {}
    # key 1 at seed 0 keeps the figures measured before the players' key followed --seed
    play_key = jax.random.key(1 + seed)

    def played_by(policy_fn, played_params=params):
        played = play_in_chunks(boards, policy_fn, play_key, cap, PLAY_CHUNK, params=played_params)
        return np.where(np.asarray(played.cleared), np.asarray(played.clicks), cap)

    def beamed(width):
        found = beam_lengths(boards, width, scorer, params, cap)
        return np.where(found < 0, cap, found)

    def timed(name, play):
        start = time.perf_counter()
        lengths[name] = play()
        seconds[name] = time.perf_counter() - start

    if policy is not None:
        timed("argmax", lambda: played_by(policy, params if policy_params is None else policy_params))
    for width in widths:
        timed(f"width_{width}", lambda: beamed(width))
    if evaluator is not None:
        for count in simulations:
            timed(f"mcts_{count}", lambda: played_by(MCTSPolicy(evaluator, count)))
    row = {}
    for name, clicks in lengths.items():
        row[name] = {"mean": float(np.mean(clicks)), "ms_per_board": 1e3 * seconds[name] / len(clicks)}
        if optimum is not None:
            row[name]["gap"] = float(np.mean(clicks - optimum))
            row[name]["optimal"] = float(np.mean(clicks == optimum))
    return row


def table_rows(report: dict) -> dict:
    """The tables' rows by label: each learner with its minutes of training, then the
    references; the heuristic's MCTS plays a uniform prior over cells (it has no policy), as
    equal_time.py's label says."""
    labels = {"hand-made heuristic": "hand-made heuristic (for mcts a uniform prior over cells)"}
    return {**{f"{name} ({row['training_seconds'] / 60:.1f} min)": row for name, row in report["learners"].items()},
            **{labels.get(name, name): row for name, row in report["references"].items()}}


def print_table(title, rows, proven):
    columns = ["argmax"] + [f"width_{w}" for w in WIDTHS] + [f"mcts_{MCTS_SIMULATIONS}"]
    print(f"\n{title}\n")
    print("| agent | " + " | ".join(c.replace("_", " ") for c in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for name, row in rows.items():
        cells = []
        for column in columns:
            if column not in row:
                cells.append("-")
            elif proven:
                cells.append(f"{row[column]['mean']:.2f} ({100 * row[column]['optimal']:.0f}%)")
            else:
                cells.append(f"{row[column]['mean']:.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def other_settings(argv: list[str], run_dir: str) -> str | None:
    """What a finished run differs in from the one ``train.py argv`` would train (its config
    or a run flag: the seed, the evaluation boards, imitation's data), or None: a finished
    run is reused only when it is that run."""
    args, wanted = cli.new_run_config(argv[0], argv[1:])
    saved_learner, saved = runs.read_run_config(run_dir)
    if saved_learner.name != args.learner:
        return f"another learner ({saved_learner.name})"
    if saved != wanted:  # named: a field added since the run was saved reads as its old behaviour
        return f"other settings ({runs.setting_differences(saved, wanted)})"
    kept = runs.read_run_flags(run_dir)
    for name, default in {**runs.RUN_FLAGS, **saved_learner.run_flags}.items():
        given = default if getattr(args, name, None) is None else getattr(args, name)  # as a new run takes it
        if name in kept and not runs.same_run_flag(name, given, kept, run_dir):
            return f"--{name.replace('_', '-')} {kept[name]}, not {given}"
    return None


def shell_words(text: str) -> str:
    """An argparse type for a learner's flags as a shell would split them (quotes hold a
    value with spaces together): unbalanced quotes are refused here."""
    try:
        shlex.split(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{error} in {text!r}") from None
    return text


def extra_flags(args, learner: str) -> list[str]:
    """``--LEARNER-flags`` as the words a shell would make of them."""
    return shlex.split(getattr(args, f"{learner}_flags"))


def learner_flags(args, learner: str, run_dir: str | None = None) -> list[str]:
    """``train.py LEARNER``'s flags for this call (``--run-dir`` where given)."""
    return [*(["--run-dir", run_dir] if run_dir else []), "--seed", str(args.seed), *extra_flags(args, learner)]


# What this command decides for each run: given again in --LEARNER-flags, argparse let the
# later value win, so a run trained elsewhere (or with another seed) than the table read.
OWNED_FLAGS = ("--run-dir", "--seed", "--resume", "--resume-step")


def flags_config(parser, args, learner: str):
    """The config ``train.py LEARNER`` starts a new run of this call with; flags it refuses
    fail this command naming ``--LEARNER-flags`` (train.py's own line named only train.py),
    as do the flags this command sets itself (``OWNED_FLAGS``, or an abbreviation of one)."""
    for token in extra_flags(args, learner):
        name = token.partition("=")[0]
        owned = [flag for flag in OWNED_FLAGS if len(name) > 2 and flag.startswith(name)]
        if token.startswith("--") and owned:
            flags.fail(parser, f"--{learner}-flags: {name} is set by this command (--runs-dir, --seed); leave it "
                               "out of the learner's flags")
    refusal = io.StringIO()
    try:
        with contextlib.redirect_stderr(refusal):
            return cli.new_run_config(learner, learner_flags(args, learner))[1]
    except ValueError as error:
        flags.fail(parser, f"--{learner}-flags: {error}")
    except SystemExit as exit_status:
        if not exit_status.code:  # --help among the flags: train.py's help is printed
            raise
        message = refusal.getvalue().strip().partition("error: ")[2].removesuffix(" (see --help)")
        flags.fail(parser, f"--{learner}-flags: {message} (see train.py {learner} --help)")


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def require_figure_file(parser, figure_path: str, out: str) -> None:
    """Refuse, before hours of training, a figure path that the report would overwrite
    (``--out x.png``) or that holds something other than an image (an earlier run's
    learning curves are replaced)."""
    if os.path.abspath(figure_path) == os.path.abspath(out):
        parser.error(f"--out: {out} is the name of the report's figure (<out>.png): give the report a .json name")
    if not os.path.exists(figure_path):
        return
    if not os.path.isfile(figure_path):  # a folder, or a FIFO the check itself would wait on
        parser.error(f"--out: the learning curves go to {figure_path}, which is not a file: give the report "
                     "another name")
    try:
        with open(figure_path, "rb") as handle:
            is_png = handle.read(len(PNG_SIGNATURE)) == PNG_SIGNATURE
    except OSError:
        is_png = False
    if not is_png:
        parser.error(f"--out: the learning curves go to {figure_path}, which holds something other than a PNG image "
                     "and would be replaced: give the report another name (or remove the file)")


def main(argv=None):
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--learners", type=flags.names(("avi", "dqn", "imitation"), "learners"), default="avi,dqn,imitation")
    parser.add_argument("--runs-dir", type=flags.output_dir, default="results/learners")
    parser.add_argument("--boards", type=flags.positive_int, default=1000, help="fresh random boards for the final evaluation")
    parser.add_argument("--seed", type=flags.seed, default=0)
    parser.add_argument("--avi-flags", type=shell_words, default="",
                        help="extra train.py flags for avi, e.g. '--total-updates 9000'")
    parser.add_argument("--dqn-flags", type=shell_words, default="",
                        help="extra train.py flags for dqn, e.g. '--total-steps 100000'")
    parser.add_argument("--imitation-flags", type=shell_words, default="", help="extra train.py flags for imitation")
    parser.add_argument("--out", type=flags.report_file("learners"), default="results/learners.json")
    args = parser.parse_args(argv)
    figure_path = os.path.splitext(args.out)[0] + ".png"
    require_figure_file(parser, figure_path, args.out)

    for learner in ("avi", "dqn", "imitation"):
        if extra_flags(args, learner) and learner not in args.learners:
            flags.fail(parser, f"--{learner}-flags: {learner} is not among --learners ({','.join(args.learners)})")
    for learner in args.learners:  # every learner's size, before hours of training the first
        size = flags_config(parser, args, learner).game
        if not size.takes_boards_of(game.GameConfig()):
            parser.error(f"--{learner}-flags train on {size.size_text} boards under the {size.rules} rules; "
                         "this benchmark plays 8x6x5 dust boards")
    sets = board_sets(args.boards, args.seed)
    report = {"benchmark": "learners", "measured_on": machine.measured_on(jaxdust.__version__), "cpu": machine.cpu_name(),
              "cpu_count": machine.cpu_cores(), "backend": jax.default_backend(),
              "device_kind": jax.devices()[0].device_kind, "boards": args.boards, "seed": args.seed,
              "proven_file": os.path.basename(PROVEN_FILE),
              "learners": {}}

    curves = {}
    for learner in args.learners:
        run_dir = os.path.join(args.runs_dir, learner)
        argv = [learner, *learner_flags(args, learner, run_dir)]
        if os.path.exists(os.path.join(run_dir, "summary.json")):
            problem = other_settings(argv, run_dir)
            if problem:
                parser.error(f"{run_dir} holds a finished run with {problem}: remove it or give another --runs-dir")
        else:
            resume = ["--resume"] if os.path.exists(os.path.join(run_dir, "config.json")) else []
            if not cli.main([*argv, *resume]):  # --minutes in the extra flags stopped it: no report yet
                parser.exit(1, f"{run_dir} is not finished: --minutes in --{learner}-flags counts the whole run, "
                               "so raise or drop it and run the command again to go on training it\n")
        lines = files.recover_json_lines(os.path.join(run_dir, "metrics.jsonl"))
        evaluated = [line for line in lines if "greedy_clicks" in line]
        with open(os.path.join(run_dir, "summary.json")) as handle:
            summary = json.load(handle)
        # A run's clock starts before imitation makes its data: its seconds include the data.
        seconds = np.array([line["seconds"] for line in evaluated])
        curves[f"{learner}, greedy"] = (seconds, np.array([line["greedy_clicks"] for line in evaluated]))
        curves[f"{learner}, argmax"] = (seconds, np.array([line["argmax_clicks"] for line in evaluated]))

        trained, by_argmax = runs.load_run(run_dir), runs.load_run(run_dir, by="argmax")
        row = {"training_seconds": summary["seconds"], "train_flags": argv[3:],
               "checkpoints": {"greedy": trained.checkpoint, "argmax": by_argmax.checkpoint}}
        for set_name, (boards, optimum) in sets.items():
            row[set_name] = play_set(boards, optimum, CAP, trained.policy, trained.scorer, trained.params,
                                     evaluator=trained.evaluator, seed=args.seed, policy_params=by_argmax.params)
        report["learners"][learner] = row
        print(f"{learner}: {json.dumps(row)}", flush=True)

    report["references"] = {"hand-made heuristic": {
        set_name: play_set(boards, optimum, CAP, scorer=heuristic_scorer, evaluator=heuristic_evaluator, seed=args.seed)
        for set_name, (boards, optimum) in sets.items()}}
    largest = play_boards(sets["fresh"][0], baselines.largest_cluster, jax.random.key(args.seed), CAP)
    report["references"]["largest cluster first"] = {"fresh": {"argmax": {"mean": float(np.mean(largest.clicks))}}}
    report["curves"] = {name: {"seconds": c[0].tolist(), "clicks": c[1].tolist()} for name, c in curves.items()}

    references = {"largest first (fresh boards)": float(np.mean(largest.clicks)),
                  "heuristic, width 1 (fresh boards)": report["references"]["hand-made heuristic"]["fresh"]["width_1"]["mean"]}
    evaluation_boards = sorted({runs.read_run_flags(os.path.join(args.runs_dir, learner)).get("eval_boards", "?")
                                for learner in args.learners}, key=str)
    figure = plots.learning_curves(
        curves, references, f"greedy and argmax play on train.py's {'/'.join(map(str, evaluation_boards))} "
                            f"evaluation boards ({report['cpu_count']}-core CPU)")
    files.atomic_write_bytes(figure_path, figure)
    files.atomic_write_json(args.out, report)

    rows = table_rows(report)
    hardware = f"{report['cpu_count']} cores, {report['backend']}"
    given = [f"{learner}: {flags_given}" for learner in args.learners
             if (flags_given := getattr(args, f"{learner}_flags").strip())]
    runs_were = f"runs with extra flags ({'; '.join(given)})" if given else "default runs"
    print_table(f"Learners, {runs_were}; {args.boards} fresh random 8x6 boards, mean clicks ({hardware})",
                {name: row["fresh"] for name, row in rows.items()}, proven=False)
    print_table(f"The same on the {len(sets['proven'][1])} proven boards of {os.path.basename(PROVEN_FILE)}: mean clicks (share optimal); "
                f"mean optimum {np.mean(sets['proven'][1]):.2f}",
                {name: row["proven"] for name, row in rows.items() if "proven" in row}, proven=True)
    print(f"\nwrote {args.out} and {figure_path}")
    return report


if __name__ == "__main__":
    flags.run_command(main, "finished runs are kept and an unfinished one resumes; the same command goes on")
