"""Train a dust-game agent: Deep Q-learning or imitation of solver data.

    python train.py dqn                         # CPU-sized default, about 9 minutes on 2 cores
    python train.py dqn --preset original       # the original post's learner, for comparison
    python train.py imitation                   # makes its own beam-labelled data first
    python train.py dqn --run-dir runs/a --resume

Every run lives in a directory (``--run-dir``, default ``runs/<learner>-<seed>``): orbax
checkpoints, ``metrics.jsonl`` (one line per chunk or epoch, with greedy evaluations on a
fixed board set), ``config.json`` and, at the end, ``summary.json``. A run killed at any
moment (even SIGKILL) continues from its last checkpoint with ``--resume`` and ends
exactly as an uninterrupted run with the same seed would.

All local devices are used: games, replay and minibatches are split over them, parameters
replicated (data parallelism through ``jax.sharding``). Several hosts: start the same
command on each with ``--distributed`` after setting JAX's coordinator variables (see
README, "Scaling out").
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
import typing

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

import jaxdust
from jaxdust import beam, checkpoint, dqn, evaluation, files, game, imitation, learned
from jaxdust.datasets import DatasetConfig, load_dataset, make_dataset

EVAL_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "boards", "eval_8x6x5.txt")


# ---------------------------------------------------------------------------------------
# Typed flags from the config dataclasses
# ---------------------------------------------------------------------------------------


def add_config_flags(parser: argparse.ArgumentParser, config_class) -> None:
    hints = typing.get_type_hints(config_class)
    for field in dataclasses.fields(config_class):
        flag = "--" + field.name.replace("_", "-")
        kind = hints[field.name]
        if kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None)
        elif typing.get_origin(kind) is tuple:
            parser.add_argument(flag, type=lambda s: tuple(int(v) for v in s.split(",")), default=None,
                                metavar="N,N,...")
        else:
            parser.add_argument(flag, type=kind, default=None)


def config_from_flags(args, config_class, base):
    changes = {f.name: getattr(args, f.name) for f in dataclasses.fields(config_class)
               if getattr(args, f.name) is not None}
    return dataclasses.replace(base, **changes)


# ---------------------------------------------------------------------------------------
# Evaluation boards and greedy play
# ---------------------------------------------------------------------------------------


def evaluation_boards(width: int, height: int, colors: int, count: int) -> jax.Array:
    """The first ``count`` boards of the fixed eval set (8x6x5), else fixed random ones."""
    if (width, height, colors) == (8, 6, 5):
        return jnp.stack([r.board for r in jaxdust.read_board_file(EVAL_FILE)[:count]])
    keys = jax.random.split(jax.random.key(2026), count)
    return jax.vmap(lambda k: game.random_board(k, game.GameConfig(width, height, colors)))(keys)


def greedy_clicks(boards, policy, params, max_clicks: int) -> float:
    played = evaluation.play_boards(boards, policy, jax.random.key(0), max_clicks, params)
    return float(np.mean(np.where(np.asarray(played.cleared), np.asarray(played.clicks), max_clicks)))


def lookahead_clicks(boards, scorer, params, max_clicks: int, chunk: int = 64) -> float:
    """Greedy one-step lookahead (a width-1 beam) with a learned scorer."""
    search = jax.jit(jax.vmap(lambda b, p: beam.beam_search(b, width=1, scorer=scorer, params=p,
                                                            max_clicks=max_clicks).length, in_axes=(0, None)))
    lengths = np.concatenate([np.asarray(search(boards[i:i + chunk], params)) for i in range(0, len(boards), chunk)])
    return float(np.mean(np.where(lengths < 0, max_clicks, lengths)))


# ---------------------------------------------------------------------------------------
# The run directory
# ---------------------------------------------------------------------------------------


class Run:
    """Checkpoints, the metrics log and the wall clock of one run directory."""

    def __init__(self, directory: str, config, resume: bool):
        self.directory = directory
        self.config_json = checkpoint.config_json(config)
        existing = os.path.exists(os.path.join(directory, "config.json"))
        if existing and not resume:
            raise SystemExit(f"train.py: error: {directory} already holds a run; pass --resume or another --run-dir")
        if resume and not existing:
            raise SystemExit(f"train.py: error: nothing to resume in {directory}")
        os.makedirs(directory, exist_ok=True)
        files.atomic_write_json(os.path.join(directory, "config.json"), self.config_json)
        self.checkpoints = checkpoint.Checkpoints(os.path.join(directory, "checkpoints"))
        self.metrics_path = os.path.join(directory, "metrics.jsonl")
        self.elapsed_before = 0.0
        self.started = time.perf_counter()

    def restore(self, like, step=None):
        try:
            chunk, state = self.checkpoints.restore(like, self.config_json, step)
        except checkpoint.CheckpointError as error:
            raise SystemExit(f"train.py: error: {error}") from None
        self._truncate_metrics(chunk)
        return chunk, state

    def _truncate_metrics(self, chunk: int) -> None:
        """Drop log lines of chunks after the checkpoint (they will be redone)."""
        kept = [r for r in files.read_json_lines(self.metrics_path) if r["chunk"] <= chunk]
        files.atomic_write_bytes(self.metrics_path, "".join(json.dumps(r) + "\n" for r in kept).encode())
        if kept:
            self.elapsed_before = kept[-1]["seconds"]

    def seconds(self) -> float:
        return self.elapsed_before + time.perf_counter() - self.started

    def log(self, record: dict) -> None:
        with open(self.metrics_path, "a") as handle:
            handle.write(json.dumps(record) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def finish(self, summary: dict) -> None:
        files.atomic_write_json(os.path.join(self.directory, "summary.json"), summary)
        self.checkpoints.close()


def make_mesh(devices: int | None):
    from jax.sharding import AxisType

    chosen = jax.devices()[: devices or len(jax.devices())]
    if len(chosen) == 1:
        return None
    return jax.make_mesh((len(chosen),), ("data",), axis_types=(AxisType.Auto,), devices=chosen)


# ---------------------------------------------------------------------------------------
# Learners
# ---------------------------------------------------------------------------------------


def train_dqn(args) -> dict:
    base = dqn.DQNConfig.original() if args.preset == "original" else dqn.DQNConfig()
    config = config_from_flags(args, dqn.DQNConfig, base)
    run = Run(args.run_dir, config, args.resume)
    mesh = make_mesh(args.devices)
    if mesh is not None and config.num_envs % mesh.size:
        raise SystemExit(f"train.py: error: --num-envs {config.num_envs} must divide over {mesh.size} devices")
    init, run_chunk = dqn.make_dqn(config, mesh)
    runner = init(jax.random.key(args.seed))
    chunks = max(1, config.iterations // config.chunk_iterations)
    done = 0
    if args.resume and run.checkpoints.steps():
        done, runner = run.restore(runner, args.resume_step)
    boards = evaluation_boards(config.width, config.height, config.colors, args.eval_boards)
    policy = learned.QGreedy(tuple(config.hidden), config.colors, config.features)
    scorer = learned.QScorer(tuple(config.hidden), config.colors, config.features,
                             config.clear_reward, config.click_reward)
    cap = 4 * config.width * config.height

    with tqdm(total=chunks, initial=done, unit="chunk", desc="dqn", disable=None) as bar:
        for chunk in range(done + 1, chunks + 1):
            runner, metrics = run_chunk(runner)
            record = {"chunk": chunk, "env_steps": int(runner.iteration) * config.num_envs,
                      **{k: float(v) for k, v in metrics._asdict().items()}}
            if chunk % args.eval_every == 0 or chunk == chunks:
                record["greedy_clicks"] = greedy_clicks(boards, policy, runner.train.params, cap)
            record["seconds"] = run.seconds()
            run.log(record)
            if chunk % args.checkpoint_every == 0 or chunk == chunks:
                run.checkpoints.save(chunk, runner, run.config_json)
            bar.set_postfix(clicks=record.get("greedy_clicks", float("nan")), train=f"{record['episode_clicks']:.1f}")
            bar.update()
            if args.minutes and run.seconds() > 60 * args.minutes and chunk < chunks:
                run.checkpoints.save(chunk, runner, run.config_json)
                print(f"stopped after {args.minutes} minutes at chunk {chunk}; continue with --resume")
                return {}
    summary = {"learner": "dqn", "seconds": run.seconds(), "env_steps": int(runner.iteration) * config.num_envs,
               "eval_boards": args.eval_boards,
               "greedy_clicks": greedy_clicks(boards, policy, runner.train.params, cap),
               "lookahead_clicks": lookahead_clicks(boards, scorer, runner.train.params, cap)}
    run.finish(summary)
    return summary


def train_imitation(args) -> dict:
    config = config_from_flags(args, imitation.ImitationConfig, imitation.ImitationConfig())
    data_dir = args.data or os.path.join(args.run_dir, "data")
    if not args.data:
        data_config = DatasetConfig(config.width, config.height, config.colors, boards=args.data_boards,
                                    seed=args.seed + 1, labeller="beam", beam_width=args.data_beam_width,
                                    shard_size=1000)
        print(f"making {args.data_boards} beam-labelled boards in {data_dir}", file=sys.stderr)
        make_dataset(data_dir, data_config, jobs=os.cpu_count())
    data = load_dataset(data_dir)
    run = Run(args.run_dir, config, args.resume)
    mesh = make_mesh(args.devices)
    init, run_epoch, validate = imitation.make_imitation(config, data, mesh)
    state = init(jax.random.key(args.seed))
    done = 0
    if args.resume and run.checkpoints.steps():
        done, state = run.restore(state, args.resume_step)
    boards = evaluation_boards(config.width, config.height, config.colors, args.eval_boards)
    policy = learned.PolicyGreedy(tuple(config.hidden), config.colors, config.features)
    scorer = learned.ValueScorer(tuple(config.hidden), config.colors, config.features)
    cap = 4 * config.width * config.height

    with tqdm(total=config.epochs, initial=done, unit="epoch", desc="imitation", disable=None) as bar:
        for epoch in range(done + 1, config.epochs + 1):
            state, metrics = run_epoch(state, jax.random.fold_in(jax.random.key(args.seed), epoch))
            record = {"chunk": epoch, **{f"train_{k}": float(v) for k, v in metrics._asdict().items()},
                      **{f"valid_{k}": float(v) for k, v in validate(state)._asdict().items()}}
            if epoch % args.eval_every == 0 or epoch == config.epochs:
                record["greedy_clicks"] = greedy_clicks(boards, policy, state.params, cap)
                record["lookahead_clicks"] = lookahead_clicks(boards, scorer, state.params, cap)
            record["seconds"] = run.seconds()
            run.log(record)
            if epoch % args.checkpoint_every == 0 or epoch == config.epochs:
                run.checkpoints.save(epoch, state, run.config_json)
            bar.set_postfix(lookahead=record.get("lookahead_clicks", float("nan")))
            bar.update()
            if args.minutes and run.seconds() > 60 * args.minutes and epoch < config.epochs:
                run.checkpoints.save(epoch, state, run.config_json)
                print(f"stopped after {args.minutes} minutes at epoch {epoch}; continue with --resume")
                return {}
    summary = {"learner": "imitation", "seconds": run.seconds(), "samples": int(len(data.boards)),
               "eval_boards": args.eval_boards,
               "greedy_clicks": greedy_clicks(boards, policy, state.params, cap),
               "lookahead_clicks": lookahead_clicks(boards, scorer, state.params, cap)}
    run.finish(summary)
    return summary


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    learners = parser.add_subparsers(dest="learner", required=True)
    for name, config_class in (("dqn", dqn.DQNConfig), ("imitation", imitation.ImitationConfig)):
        sub = learners.add_parser(name, help=f"train with {name}")
        sub.add_argument("--run-dir", default=None, help=f"default: runs/{name}-<seed>")
        sub.add_argument("--resume", action="store_true", help="continue the run in --run-dir")
        sub.add_argument("--resume-step", type=int, default=None, help="restore this checkpoint, not the newest")
        sub.add_argument("--seed", type=int, default=0)
        sub.add_argument("--minutes", type=float, default=None, help="stop (with a checkpoint) after this long")
        sub.add_argument("--eval-boards", type=int, default=256, help="greedy evaluation boards (fixed set)")
        sub.add_argument("--eval-every", type=int, default=5, help="chunks (dqn) or epochs between evaluations")
        sub.add_argument("--checkpoint-every", type=int, default=1)
        sub.add_argument("--devices", type=int, default=None, help="local devices to use (default all)")
        sub.add_argument("--distributed", action="store_true", help="jax.distributed.initialize() first")
        if name == "dqn":
            sub.add_argument("--preset", choices=("default", "original"), default="default")
        else:
            sub.add_argument("--data", default=None, help="a jaxdust.datasets directory (default: make one)")
            sub.add_argument("--data-boards", type=int, default=30_000, help="boards to label when making data")
            sub.add_argument("--data-beam-width", type=int, default=32)
        add_config_flags(sub, config_class)
    args = parser.parse_args(argv)
    if args.distributed:
        jax.distributed.initialize()
    args.run_dir = args.run_dir or os.path.join("runs", f"{args.learner}-{args.seed}")
    summary = train_dqn(args) if args.learner == "dqn" else train_imitation(args)
    if summary:
        print(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    main()
