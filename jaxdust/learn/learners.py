"""The learner registry: what ``train.py``, ``runs.train`` and ``runs.load_run`` need of
each learner, in one entry. A new learner is one ``register(Learner(...))`` call.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Any, Callable, NamedTuple

import jax

from jaxdust.core import configs, flags, machine
from jaxdust.core.processes import WorkerDied
from jaxdust.learn import agents, avi, dqn, imitation, networks
from jaxdust.learn.datasets import (DatasetConfig, OtherSettings, dataset_config, load_dataset, make_dataset,
                                   require_finished)


class Trainer(NamedTuple):
    """A learner set up for one run; ``step`` is one chunk of training."""

    init: Callable[[jax.Array], Any]  # key -> state
    step: Callable[[Any, int], tuple[Any, dict]]  # (state, 1-based index) -> (state, metrics)
    total: int  # steps in the whole run
    info: Callable[[Any], dict]  # state -> figures for the summary (env steps, samples)


@dataclasses.dataclass(frozen=True)
class Learner:
    name: str
    description: str
    config_class: type
    presets: dict[str, Any]  # preset name -> config; "default" first
    add_arguments: Callable[[argparse.ArgumentParser], None]  # flags beyond the config's
    trainer: Callable[[Any, argparse.Namespace, Any], Trainer]  # (config, args, mesh)
    # config -> steps in a whole run (its trainer's total), known without building the
    # trainer: a finished run resumed says so without making what a trainer needs (data).
    total: Callable[[Any], int]
    template: Callable[[Any], Any]  # config -> a state shaped like a checkpoint's
    params: Callable[[Any], Any]  # state -> network parameters
    policy: Callable[[Any], Any]  # config -> argmax policy over the network's output
    scorer: Callable[[Any], Any]  # config -> scorer of clicks left (beam search, greedy)
    evaluator: Callable[[Any], Any] = lambda config: None  # config -> jaxdust.search.mcts evaluator, if any
    # (config, args) -> None, raising ValueError for settings it cannot run with (or noting
    # on stderr what it will do otherwise than asked): called before the run directory is
    # written, so a corrected command needs no --resume.
    check: Callable[[Any, argparse.Namespace], None] = lambda config, args: None
    # Flags of add_arguments that shape what a run computes, with their defaults: kept in
    # the run's config.json and taken from there on resume (runs.settle_run_flags).
    run_flags: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Config fields whose flags size a step's memory, named when a step runs out of it (those
    # another setting turns off left out: configs.unused_settings).
    memory_fields: tuple[str, ...] = ()


LEARNERS: dict[str, Learner] = {}


def register(learner: Learner) -> Learner:
    LEARNERS[learner.name] = learner
    return learner


def get(name: str) -> Learner:
    if name not in LEARNERS:
        raise ValueError(f"unknown learner {name!r}; choose from {', '.join(LEARNERS)}")
    return LEARNERS[name]


def _trained_on(config) -> dict:
    """What a run's agents say of the boards its network was trained on: the rules and the
    size (``boards.require_model_fits`` refuses others)."""
    return {"trained_rules": config.game.rules, "trained_size": (config.game.width, config.game.height)}


def _require_split(mesh, count: int, what: str) -> None:
    """ValueError unless ``count`` (``what`` names it as the flags do) divides over the mesh's
    devices, which each hold an equal share of what it counts."""
    if mesh is not None and count % mesh.size:
        raise ValueError(f"{what} must divide over {mesh.size} devices")


def _lockstep_trainer(make, config, mesh, iterations: int, chunk: int, counters) -> Trainer:
    """A learner whose ``make(config, mesh)`` gives ``init`` and ``run_chunk`` over
    ``config.num_envs`` games in lockstep: ``iterations`` in all (what its schedules span),
    in chunks of ``chunk`` and a shorter last one; ``counters(runner)`` go into every record."""
    _require_split(mesh, config.num_envs, f"--num-envs {config.num_envs}")
    init, run_chunk = make(config, mesh)

    def step(runner, index):
        length = min(chunk, iterations - (index - 1) * chunk)
        # Full chunks call it as everyone does: jit traces run_chunk(runner) and
        # run_chunk(runner, chunk) apart, and would compile the same program twice. The
        # length goes positionally: jit with in_shardings (several devices) takes no keywords.
        runner, metrics = run_chunk(runner) if length == chunk else run_chunk(runner, length)
        return runner, {**counters(runner), **{k: float(v) for k, v in metrics._asdict().items()}}

    return Trainer(init, step, _chunks(iterations, chunk), counters)


def _chunks(iterations: int, chunk: int) -> int:
    return -(-iterations // chunk)


# ---------------------------------------------------------------------------------------
# Approximate value iteration
# ---------------------------------------------------------------------------------------


def _avi_trainer(config: avi.AVIConfig, args, mesh) -> Trainer:
    _require_split(mesh, config.boards_in_play,  # each device holds whole beams
                   f"{config.boards_in_play} boards in play (--num-envs {config.num_envs} / --beam-width "
                   f"{config.beam_width})")
    policy_rows = config.boards_in_play + config.capped_positions  # a beam slot per board, every line position
    _require_split(mesh, policy_rows, f"{policy_rows} policy rows ({config.boards_in_play} boards in play and "
                                      f"{config.capped_positions} search-line positions, --capped-share "
                                      f"{config.capped_share})")
    return _lockstep_trainer(avi.make_avi, config, mesh, config.total_updates, config.chunk_updates,
                             lambda runner: {"updates": int(runner.update),
                                             "positions": int(runner.update) * config.num_envs})


register(Learner(
    name="avi",
    description="approximate value iteration over every click and a policy trained on its search's choices (jaxdust.learn.avi)",
    config_class=avi.AVIConfig,
    presets={"default": avi.AVIConfig(), "original": avi.AVIConfig(hidden=networks.PRESETS["original"])},
    add_arguments=lambda parser: None,
    trainer=_avi_trainer,
    memory_fields=("num_envs", "child_share", "buffer_lines"),
    total=lambda config: _chunks(config.total_updates, config.chunk_updates),
    template=lambda config: avi.make_avi(config)[0](jax.random.key(0)),
    params=lambda runner: runner.train.params,
    policy=lambda config: agents.ClusterArgmax(config.network, **_trained_on(config)),
    scorer=lambda config: agents.ValueHeadScorer(config.network, **_trained_on(config)),
    evaluator=lambda config: agents.NetworkEvaluator(config.network, **_trained_on(config)),
))


# ---------------------------------------------------------------------------------------
# Deep Q-learning
# ---------------------------------------------------------------------------------------


def _dqn_trainer(config: dqn.DQNConfig, args, mesh) -> Trainer:
    _require_split(mesh, config.buffer_size, f"--buffer-size {config.buffer_size}")  # the replay is split,
    _require_split(mesh, config.batch_size, f"--batch-size {config.batch_size}")  # and each minibatch
    return _lockstep_trainer(dqn.make_dqn, config, mesh, config.iterations, config.chunk_iterations,
                             lambda runner: {"env_steps": int(runner.iteration) * config.num_envs})


def _note_whole_iterations(config: dqn.DQNConfig, args) -> None:
    """A new run is told when ``--total-steps`` is not whole iterations of its games."""
    if not args.resume and config.total_steps % config.num_envs and jax.process_index() == 0:
        print(f"note: dqn steps all {config.num_envs} games at once (--num-envs): --total-steps "
              f"{config.total_steps} makes {config.iterations * config.num_envs} ({config.iterations} "
              f"iteration{'s' if config.iterations != 1 else ''})",
              file=sys.stderr)


register(Learner(
    name="dqn",
    description="Deep Q-learning, the whole loop in jit (jaxdust.learn.dqn)",
    config_class=dqn.DQNConfig,
    presets={"default": dqn.DQNConfig(), "original": dqn.DQNConfig.original()},
    add_arguments=lambda parser: None,
    trainer=_dqn_trainer,
    memory_fields=("num_envs", "batch_size", "child_share", "buffer_size"),
    total=lambda config: _chunks(config.iterations, config.chunk_iterations),
    check=_note_whole_iterations,
    template=lambda config: dqn.make_dqn(config)[0](jax.random.key(0)),
    params=lambda runner: runner.train.params,
    policy=lambda config: agents.QGreedy(tuple(config.hidden), config.game.colors, config.features,
                                         **_trained_on(config)),
    scorer=lambda config: agents.QScorer(tuple(config.hidden), config.game.colors, config.features, config.rewards,
                                          config.gamma, **_trained_on(config)),
))


# ---------------------------------------------------------------------------------------
# Imitation of solver data
# ---------------------------------------------------------------------------------------


IMITATION_RUN_FLAGS = {"data": None, "data_boards": 30_000, "data_beam_width": 32}


def _imitation_arguments(parser: argparse.ArgumentParser) -> None:
    # Defaults None, filled in by runs.settle_run_flags: a resumed run's own, else these.
    parser.add_argument("--data", type=flags.input_dir, default=None,
                        help="a jaxdust.learn.datasets directory (default: make one in RUN_DIR/data)")
    parser.add_argument("--data-boards", type=flags.positive_int, default=None,
                        help=f"boards to label when making data (default {IMITATION_RUN_FLAGS['data_boards']})")
    parser.add_argument("--data-beam-width", type=flags.positive_int, default=None,
                        help=f"beam width of those labels (default {IMITATION_RUN_FLAGS['data_beam_width']})")
    # Not a run flag: the data is the same whatever the number, so a resume may change it.
    parser.add_argument("--data-jobs", type=flags.positive_int, default=None,
                        help=f"processes that label the run's data set (default: the cores this process "
                             f"may use, {machine.cpu_cores()} here)")


_RUN_DATA_FLAGS = {"boards": "--data-boards", "beam_width": "--data-beam-width", "seed": "--seed", "game": "--size/--env"}


def _run_data_config(config: imitation.ImitationConfig, args) -> DatasetConfig:
    """The data set a run without ``--data`` makes in its folder (seeded with the run's
    seed + 1); ValueError naming the flag out of range."""
    try:
        return DatasetConfig(config.game, boards=args.data_boards, seed=args.seed + 1, labeller="beam",
                             beam_width=args.data_beam_width, shard_size=1000)
    except configs.FieldError as error:
        raise ValueError(f"{_RUN_DATA_FLAGS.get(error.field, error.field)} {error.problem}") from None


def _run_data_differences(made: DatasetConfig, asked: DatasetConfig) -> str:
    """How a run folder's data set differs from the one ``train.py`` asks for, in its flags."""
    flagged: list[tuple[str, Callable[[int], str]]] = [("boards", str), ("beam_width", str)]
    if 1 <= made.seed <= flags.MAX_SEED + 1:  # seeded by a --seed (seed 0, the data command's default, by none)
        flagged.append(("seed", lambda seed: str(seed - 1)))
    parts = [f"{_RUN_DATA_FLAGS[field]} {shown(getattr(made, field))}, not {shown(getattr(asked, field))}"
             for field, shown in flagged if getattr(made, field) != getattr(asked, field)]
    parts += configs.board_differences(made.game, asked.game)
    unset = {field: getattr(asked, field) for field in [field for field, _ in flagged] + ["game"]}
    others = configs.differences(configs.to_json(dataclasses.replace(made, **unset)), configs.to_json(asked))
    if others:  # settings train.py has no flag for: the set was not made by train.py
        parts.append(f"{others} (not made by train.py: pass it with --data instead)")
    return "; ".join(parts)


def _check_imitation_data(config: imitation.ImitationConfig, args) -> None:
    if not args.data:
        _run_data_config(config, args)
    if not args.data and jax.process_count() > 1:  # every process would make it, into one directory
        raise ValueError("over several processes (--distributed), make the data first "
                         "(python -m jaxdust.learn.datasets) and pass --data")
    if args.data and getattr(args, "data_jobs", None) is not None:  # a resumed run's --data, read from its config.json
        raise ValueError(f"--data-jobs makes a data set; the run trains on {args.data}, made already")
    if args.data and not os.path.isdir(args.data):
        return  # a resumed run's, moved or deleted since: a finished run needs none (the trainer says so)
    if args.data:
        require_finished(args.data)
        made = dataset_config(args.data).game
        if made != config.game:
            raise ValueError(f"{args.data} holds {made.size_text} boards under the {made.rules} rules, not "
                             f"{config.game.size_text} under {config.game.rules}: train on it with --size "
                             f"{made.size_spec}")


def _imitation_trainer(config: imitation.ImitationConfig, args, mesh) -> Trainer:
    _require_split(mesh, config.batch_size, f"--batch-size {config.batch_size}")  # before any data is made
    data_dir = args.data or os.path.join(args.run_dir, "data")
    if not args.data:
        data_config = _run_data_config(config, args)
        try:
            make_dataset(data_dir, data_config, jobs=getattr(args, "data_jobs", None) or machine.cpu_cores(),
                         announce=f"making {args.data_boards} beam-labelled boards in {data_dir}")
        except OtherSettings:  # made by a start refused after it
            differences = _run_data_differences(dataset_config(data_dir), data_config)
            raise ValueError(f"{data_dir} holds a data set made with other settings ({differences}): give the "
                             "flags it was made with, or remove it") from None
        except WorkerDied as error:
            raise ValueError(f"{error}; the same command goes on from the boards labelled so far") from None
    elif not os.path.isdir(args.data):
        raise ValueError(f"the run's data set {args.data} is gone: pass --data with a copy of it")
    data = load_dataset(data_dir, finished=True)
    try:
        init, run_chunk, validate = imitation.make_imitation(config, data, mesh)
    except imitation.TooFewPositions as error:
        if args.data:
            raise
        # The run's own data set stays (it took the labelling's time), and a start with
        # other --data-boards is refused while it is there.
        raise ValueError(f"{error}; more boards with --data-boards need another --run-dir, or {data_dir} "
                         f"removed first") from None

    def step(state, index):
        epoch, chunk = divmod(index - 1, config.epoch_chunks)
        state, metrics = run_chunk(state, jax.random.fold_in(jax.random.key(args.seed), epoch + 1), chunk)
        record = {f"train_{k}": float(v) for k, v in metrics._asdict().items()} if metrics is not None else {}
        if chunk == config.epoch_chunks - 1:  # the held-out split once an epoch
            record.update({f"valid_{k}": float(v) for k, v in validate(state)._asdict().items()})
        return state, record

    return Trainer(init, step, config.epochs * config.epoch_chunks, lambda state: {"samples": int(len(data.boards))})


def _imitation_agent(config: imitation.ImitationConfig, cell_head: type, mlp: type):
    """The agent of an imitation run's architecture: ``avi``'s for the cell-head network."""
    agent = cell_head if config.architecture == "cell-head" else mlp
    return agent(config.network, **_trained_on(config))


register(Learner(
    name="imitation",
    description="supervised policy and value from solver-labelled positions (jaxdust.learn.imitation)",
    config_class=imitation.ImitationConfig,
    presets={"default": imitation.ImitationConfig(), "mlp": imitation.ImitationConfig.mlp()},
    add_arguments=_imitation_arguments,
    trainer=_imitation_trainer,
    memory_fields=("batch_size",),
    total=lambda config: config.epochs * config.epoch_chunks,
    check=_check_imitation_data,
    run_flags=IMITATION_RUN_FLAGS,
    template=lambda config: imitation.initial_state(config, jax.random.key(0)),
    params=lambda state: state.params,
    # From the config's network, which carries its value's prior (rule_prior): the agents
    # value positions as the network was trained to.
    policy=lambda config: _imitation_agent(config, agents.ClusterArgmax, agents.PolicyGreedy),
    scorer=lambda config: _imitation_agent(config, agents.ValueHeadScorer, agents.ValueScorer),
    evaluator=lambda config: _imitation_agent(config, agents.NetworkEvaluator, agents.PolicyValueEvaluator),
))
