"""``train.py``: train a dust-game agent with any registered learner (``jaxdust.learn.learners``).
The times are training alone (docs/results.md); compiling and the progress evaluations add
minutes on a CPU.

    python train.py                             # the default learner (avi: value and policy), ~5 min of training on 2 cores
    python train.py dqn                         # Deep Q-learning, ~4.5 min of training on 2 cores
    python train.py dqn --preset original       # near the original post's learner, for comparison
    python train.py imitation                   # makes its own beam-labelled data first
    python train.py dqn --run-dir runs/a --resume

Every run lives in a directory (``--run-dir``, default ``runs/<learner>-<seed>``): orbax
checkpoints (every 30 seconds of training, at the end and when ``--minutes`` stops it),
``metrics.jsonl`` (one line per chunk, with argmax and greedy evaluations on fixed
random boards), ``best/`` (the newest checkpoint whose greedy play on them is within a
standard error of the best evaluated: what ``evaluate.py``'s searches and ``load_run`` play),
``best-argmax/`` (the same by argmax play: what ``policy:`` plays), ``config.json`` and, at
the end, ``summary.json``. A run killed at any moment (even SIGKILL) continues from its last checkpoint with
``--resume`` and ends exactly as an uninterrupted run with the same seed would.

All local devices are used: games, replay and minibatches are split over them, parameters
replicated (data parallelism through ``jax.sharding``). Several hosts: start the same
command on each with ``--distributed --coordinator HOST:PORT --num-processes N --process-id I`` (see
docs/gpu.md, "Several GPUs or hosts").

Each learner's flags, with their defaults: ``python train.py avi --help`` (or ``dqn``,
``imitation``); flags given with no learner go to ``avi``, or with ``--resume`` to the
learner of the run in ``--run-dir``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import sys
from collections.abc import Mapping

import jax

from jaxdust.core import compile_cache, configs, flags
from jaxdust.core.game import GameConfig
from jaxdust.core.registry import make, registered
from jaxdust.learn import learners, published, runs


class TrainParser(flags.Parser):
    """``train.py``'s command line; ``learner_parsers`` are its learners' own, so that a
    learner's errors go by its name: ``train.py avi: error: ...``."""

    learner_parsers: Mapping[str, argparse.ArgumentParser]


def _run_dir(text: str) -> str:
    """``--run-dir``: a folder to write a run into; ``@NAME`` names a published network,
    which plays but does not train."""
    if text.startswith(published.PREFIX):
        raise argparse.ArgumentTypeError(f"{text} would name a published network (@NAME plays one; none trains): "
                                         f"give a folder whose name starts with @ as ./{text}")
    return flags.output_dir(text)


def build_parser() -> TrainParser:
    parser = TrainParser(prog="train.py", description=__doc__,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(dest="learner", required=True)
    parser.learner_parsers = subparsers.choices
    for name, learner in learners.LEARNERS.items():
        sub = subparsers.add_parser(name, help=learner.description)
        sub.add_argument("--run-dir", type=_run_dir, default=None, help=f"default: runs/{name}-<seed>")
        sub.add_argument("--resume", action="store_true",
                         help="continue the run in --run-dir with its own settings and seed, evaluation "
                              "and data flags (flags given must match them)")
        sub.add_argument("--resume-step", type=flags.positive_int, default=None,
                         help="restore this checkpoint, not the newest (later ones are deleted: they are redone; "
                              "default: the newest)")
        # Run flags (runs.RUN_FLAGS) default to None: filled in with a resumed run's own or
        # their defaults by runs.settle_run_flags.
        sub.add_argument("--seed", type=flags.seed, default=None, help=f"seeds the run (default {runs.RUN_FLAGS['seed']})")
        sub.add_argument("--minutes", type=flags.positive_float, default=None, help="stop (with a checkpoint) once the run has lasted this long in all, the "
                                      "pieces before a --resume included (default: no time limit)")
        sub.add_argument("--eval-boards", type=flags.count, default=None,
                         help="fixed random boards (not the evaluation set) on which progress is measured and best/ "
                              "and best-argmax/ are picked (the newest checkpoints within a standard error of the "
                              "best greedy and argmax play; "
                              f"default {runs.RUN_FLAGS['eval_boards']})")
        sub.add_argument("--eval-every", type=flags.positive_int, default=None,
                         help=f"chunks between evaluations (default {runs.RUN_FLAGS['eval_every']})")
        sub.add_argument("--checkpoint-every", type=flags.positive_int, default=None,
                         help="chunks between checkpoints (default: by the clock, see --checkpoint-seconds; "
                              "with --resume, the run's own cadence)")
        sub.add_argument("--checkpoint-seconds", type=flags.positive_float, default=None,
                         help=f"training seconds between checkpoints (default {runs.CHECKPOINT_SECONDS:g}; with "
                              "--resume, the run's own cadence); a run also saves at its end and when --minutes "
                              "stops it")
        sub.add_argument("--tensorboard", action="store_true",
                         help="also write metrics.jsonl's scalars for TensorBoard, into RUN_DIR/tensorboard "
                              '(pip install -e ".[tensorboard]" in a checkout)')
        sub.add_argument("--devices", type=flags.positive_int, default=None,
                         help="local devices to use (default all; with --resume, the run's own count where there "
                              "are as many)")
        sub.add_argument("--distributed", action="store_true",
                         help="one of several processes (hosts) training together: jax.distributed.initialize() "
                              "first, with the three flags below; any left out JAX detects (SLURM, Open MPI, ...; "
                              "the coordinator also from JAX_COORDINATOR_ADDRESS)")
        sub.add_argument("--coordinator", type=flags.host_port, default=None, metavar="HOST:PORT",
                         help="with --distributed: process 0's address")
        sub.add_argument("--num-processes", type=flags.positive_int, default=None, help="with --distributed")
        sub.add_argument("--process-id", type=flags.non_negative_int, default=None,
                         help="with --distributed: 0 for the coordinator")
        sub.add_argument("--preset", choices=tuple(learner.presets), default=None,
                         help="settings the flags change (default: 'default'; with --resume, the run's own)")
        learner.add_arguments(sub)
        configs.add_flags(sub, learner.config_class, defaults=learner.presets["default"])
    return parser


DEFAULT_LEARNER = "avi"  # the best measured (docs/results.md, "Learners")


def new_run_config(learner_name: str, flag_list) -> tuple[argparse.Namespace, object]:
    """``train.py LEARNER FLAGS``' parsed flags and the config it starts a new run with."""
    args = build_parser().parse_args([learner_name, *flag_list])
    return args, configs.from_flags(args, runs.base_config(learners.get(learner_name), args))


def _owners(parser, unknown: list[str]) -> str:
    """Which learners take the flags in ``unknown`` (``" (--beam-width is avi's)"``), or ""."""
    said = []
    for flag in dict.fromkeys(text.partition("=")[0] for text in unknown if text.startswith("--")):
        owners = [name for name, sub in parser.learner_parsers.items() if flag in sub._option_string_actions]
        if owners:
            said.append(f"{flag} is {' and '.join(owners)}'s")
    return f" ({'; '.join(said)})" if said else ""


def main(argv=None) -> dict:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and not argv[0].startswith("-") and argv[0] not in learners.LEARNERS:
        flags.fail(parser, f"unknown learner {argv[0]!r}; choose from {', '.join(learners.LEARNERS)}")
    unnamed = not argv or (argv[0] not in learners.LEARNERS and argv[0] not in ("-h", "--help"))
    if unnamed:
        argv = [_unnamed_learner(argv), *argv]
    args, unknown = parser.parse_known_args(argv)
    learner = learners.get(args.learner)
    learner_parser = parser.learner_parsers[args.learner]
    if unnamed and any(text in learners.LEARNERS for text in unknown):
        _fail_named_late(parser, argv[1:], unknown)
    if unknown:  # said by the learner's parser, naming the learners a flag belongs to
        flags.fail(learner_parser, f"unrecognized arguments: {' '.join(unknown)}{_owners(parser, unknown)}")
    if args.resume_step is not None and not args.resume:
        flags.fail(learner_parser, "--resume-step needs --resume")
    if args.checkpoint_every is not None and args.checkpoint_seconds is not None:
        flags.fail(learner_parser, "give --checkpoint-every or --checkpoint-seconds, not both")
    if args.distributed and args.num_processes is not None and args.process_id is not None \
            and args.process_id >= args.num_processes:
        flags.fail(learner_parser, f"--process-id {args.process_id} must be below --num-processes {args.num_processes}")
    given = [flag for flag, value in (("--coordinator", args.coordinator), ("--num-processes", args.num_processes),
                                      ("--process-id", args.process_id)) if value is not None]
    if given and not args.distributed:  # else every host would train alone, as process 0, into one directory
        flags.fail(learner_parser, f"{', '.join(given)} {'works' if len(given) == 1 else 'work'} only with --distributed")
    if args.distributed:  # before anything starts JAX's backend (jax.local_device_count() below does)
        if args.coordinator is not None:  # it waits (minutes) until every process has joined
            print(f"waiting for {args.num_processes or 'all'} processes at {args.coordinator} "
                  f"(this is process {args.process_id if args.process_id is not None else '?'})", file=sys.stderr,
                  flush=True)
        # JAX's preemption service would catch SIGTERM (scancel, a time limit, kill) and let the
        # run train on to its end; without it the run stops as a single process does, and its
        # checkpoints resume.
        jax.config.update("jax_enable_preemption_service", False)
        try:
            jax.distributed.initialize(args.coordinator, args.num_processes, args.process_id)
        except (ValueError, RuntimeError) as error:  # no coordinator found, or it cannot be reached
            flags.fail(learner_parser, f"--distributed: {str(error).strip().splitlines()[0]} (give --coordinator, "
                               "--num-processes and --process-id, or run under a cluster JAX detects)")
    if args.devices is not None and args.devices > jax.local_device_count():
        flags.fail(learner_parser, f"--devices {args.devices}: only {jax.local_device_count()} local device(s)")
    seed = runs.RUN_FLAGS["seed"] if args.seed is None else args.seed
    if args.run_dir is None:  # checked as a given --run-dir is
        try:
            args.run_dir = flags.output_dir(os.path.join("runs", f"{args.learner}-{seed}"))
        except argparse.ArgumentTypeError as error:
            flags.fail(learner_parser, f"--run-dir (default): {error}")
    # A resumed run started with --data keeps it in its config.json (with the making flags'
    # defaults beside it, which describe no data set).
    data = getattr(args, "data", None) or (args.resume and runs.read_run_flags(args.run_dir).get("data"))
    if data and any(getattr(args, name) is not None for name in ("data_boards", "data_beam_width", "data_jobs")):
        flags.fail(learner_parser, "--data-boards, --data-beam-width and --data-jobs make a data set; with --data "
                   f"none is made{'' if args.data else f' (the run trains on {data})'}")
    try:
        config = configs.from_flags(args, runs.base_config(learner, args))
    except (ValueError, TypeError) as error:  # runs.RunError is a ValueError
        flags.fail(learner_parser, str(error))
    try:
        summary = runs.train(args.learner, config, args)
    except runs.RunError as error:
        flags.fail(learner_parser, str(error))
    if jax.process_index() == 0:  # one summary for a run over several processes
        if summary:
            print(json.dumps(summary, indent=2))
        # {}: --minutes stopped it after a checkpoint, which plays as the run stands.
        where = f"the run is in {args.run_dir}" + ("" if summary else " (not finished, as it stands)")
        if "," in args.run_dir:  # --agents and the leaderboard's --runs are lists split at commas
            print(f"{where}; the evaluation's --agents names runs in a comma-separated list, "
                  f"so play it by a path without a comma (a symbolic link to it, say)", file=sys.stderr)
        else:
            agents = shlex.quote(f"policy:{args.run_dir},value:{args.run_dir}")
            evaluate = flags.sibling_command("evaluate.py", "jaxdust-evaluate", "jaxdust.evaluation.cli")
            print(f"{where}; play it with {evaluate}{_evaluation_boards_flags(config.game)} --agents {agents}",
                  file=sys.stderr)
    return summary


class _Peek(argparse.ArgumentParser):
    """A parser that raises its errors (Python 3.11's ``exit_on_error=False`` still exits
    on some, an ambiguous abbreviation among them)."""

    def error(self, message):
        raise argparse.ArgumentError(None, message)


def _fail_named_late(parser, given: list[str], unknown: list[str]) -> None:
    """``train.py --seed 1 dqn``: the flags went to the default learner, and the learner's
    name was left over. Say the command with it first (the name that, taken out, leaves
    flags that learner parses; not a flag's value that happens to be a learner's name)."""
    for name in dict.fromkeys(text for text in unknown if text in learners.LEARNERS):
        for index in (i for i, text in enumerate(given) if text == name):
            rest = given[:index] + given[index + 1:]
            try:
                with contextlib.redirect_stderr(io.StringIO()):  # a trial: argparse's own error is not ours
                    left = parser.parse_known_args([name, *rest])[1]
            except SystemExit:
                continue
            if not left:
                flags.fail(parser, f"name the learner before its flags: {parser.prog} {shlex.join([name, *rest])}")


def _unnamed_learner(argv: list[str]) -> str:
    """The learner flags given with no learner name go to: the resumed run's own, else the
    default one."""
    peek = _Peek(add_help=False)
    peek.add_argument("--resume", action="store_true")
    peek.add_argument("--run-dir")
    try:
        given, _ = peek.parse_known_args(argv)
    except argparse.ArgumentError:  # --run-dir with no value, say: the learner's parser names it
        return DEFAULT_LEARNER
    resumed = runs.saved_learner_name(given.run_dir) if given.resume and given.run_dir else None
    return resumed if resumed in learners.LEARNERS else DEFAULT_LEARNER


def _evaluation_boards_flags(size: GameConfig) -> str:
    """evaluate.py's flags for boards of the size and rules ``size`` a run trained on: none
    for the default set's, ``--env`` for a registered id's, ``--random`` boards of ``--size``
    for any other."""
    if size == GameConfig():
        return ""
    env_id = next((name for name in registered() if make(name).game == size), None)
    if env_id is not None:
        return f" --env {env_id}"
    return f" --random 100 --size {size.size_spec}"



def run() -> None:
    """The installed command's entry point (``jaxdust-train``).

    XLA keeps the programs it compiles on disk between runs (``jaxdust.core.compile_cache``).
    """
    compile_cache.enable()
    flags.run_command(main, "--resume (with the same --run-dir) continues from the last checkpoint")


if __name__ == "__main__":  # python -m jaxdust.learn.cli
    run()
