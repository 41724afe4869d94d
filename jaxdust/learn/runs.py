"""Run directories: train any registered learner into one, resume it, load it back.

A run directory holds ``config.json`` (``{"learner": name, "config": {...}}``), orbax
checkpoints (every ``CHECKPOINT_SECONDS`` of training by default), ``metrics.jsonl`` (one
line per chunk, with evaluations on fixed random boards), ``best/`` (the newest
evaluated checkpoint whose greedy play is within a standard error of the best:
``Run.keep_if_best``), ``best-argmax/`` (the same by argmax play, which ``policy:`` plays)
and, at the end, ``summary.json``. A run killed at
any moment (even SIGKILL) continues from its last checkpoint with ``resume=True`` and ends
exactly as an uninterrupted run with the same seed would.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sys
import time
from typing import Any, NamedTuple

import filelock
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import AxisType

from jaxdust import __version__
from jaxdust.core import configs, files, flags, game, machine, play
from jaxdust.core.progress import progress_bar
from jaxdust.learn import checkpoint, learners, published
from jaxdust.search.beam import beam_lengths


class RunError(ValueError):
    """A run directory cannot be used as asked (one line, names the problem)."""


# ---------------------------------------------------------------------------------------
# Evaluation during training
# ---------------------------------------------------------------------------------------


EVALUATION_SEED = 2026  # not the evaluation set's boards: models are selected on these


def evaluation_boards(size: game.GameConfig, count: int) -> jax.Array:
    """``count`` fixed random boards, the same in every run of one size."""
    return game.random_boards(jax.random.key(EVALUATION_SEED), count, size)


def evaluation_bytes(size: game.GameConfig, count: int) -> int:
    """Memory an evaluation of ``count`` boards holds for them: the boards and the clicks
    its argmax and greedy play keep of each (``[count, 4 * cells]`` int32, in a few copies
    while they are joined); one chunk's working memory of play comes on top. An 8x6
    evaluation's peak RSS grew by 1.9 KB a board from 20,000 to 100,000 boards (2-core Intel
    Xeon VM, jaxdust 0.2.79)."""
    return int(count) * (40 * size.num_cells + 64)


def argmax_lengths(boards, policy, params, max_clicks: int, rules: str = "dust", progress=None) -> np.ndarray:
    """Clicks of a policy on each board, int ``[N]`` (uncleared games count ``max_clicks``),
    played ``play.DEFAULT_CHUNK`` boards at a time; ``progress(n)`` after each chunk."""
    played = play.play_in_chunks(boards, policy, jax.random.key(0), max_clicks, play.DEFAULT_CHUNK, progress,
                                 params=params, rules=rules)
    return np.where(np.asarray(played.cleared), np.asarray(played.clicks), max_clicks)


def greedy_lengths(boards, scorer, params, max_clicks: int, rules: str = "dust", progress=None) -> np.ndarray:
    """Clicks of greedy play on a scorer's value (a width-1 beam search) on each board,
    int ``[N]`` (uncleared games count ``max_clicks``); ``progress(n)`` after each batch."""
    lengths = beam_lengths(boards, 1, scorer, params, max_clicks, progress=progress, rules=rules)
    return np.where(lengths < 0, max_clicks, lengths)


MEASURES = ("argmax", "greedy")  # the evaluations' measures of play, each selecting a checkpoint


def progress_evaluation(boards, learner: learners.Learner, config):
    """``evaluate(state, progress=None) -> {"argmax_clicks", "argmax_se", "greedy_clicks",
    "greedy_se"}`` on ``boards`` (``_se``: the mean's standard error, which ``Run.keep_if_best``
    reads); ``progress(fraction)`` after each batch of play, with the share of this process's
    games (argmax and greedy on each of its boards) played so far. In a run
    over several processes each plays its own share of the boards with its local copy of
    the (replicated) parameters, and the click totals are summed over the processes: each
    board is played once in all. The learners' policies and greedy play are deterministic,
    so the means are those of one process playing them all (exactly, on CPUs; a GPU may
    round a batch of another size differently)."""
    policy, scorer = learner.policy(config), learner.scorer(config)
    cap, rules = 4 * config.game.num_cells, config.game.rules
    count = boards.shape[0]
    share = np.array_split(np.asarray(boards), jax.process_count())[jax.process_index()]

    def evaluate(state, progress=None) -> dict:
        params = learner.params(state)
        if jax.process_count() > 1:
            assert all(leaf.is_fully_replicated for leaf in jax.tree.leaves(params)), "parameters must be replicated"
            params = jax.tree.map(lambda leaf: leaf.addressable_data(0), params)
        # int32: what process_allgather carries without x64; a total overflows past ~1e6 boards.
        # The squares (for the spreads) in float32, where they cannot overflow.
        totals, squares = np.zeros(2, np.int32), np.zeros(2, np.float32)
        if len(share):
            played_games = 0

            def played_more(games: int) -> None:
                nonlocal played_games
                played_games += games
                if progress is not None:
                    progress(played_games / (2 * len(share)))

            played = (argmax_lengths(share, policy, params, cap, rules, played_more),
                      greedy_lengths(share, scorer, params, cap, rules, played_more))
            totals[:] = [lengths.sum() for lengths in played]
            squares[:] = [np.sum(lengths.astype(np.float32) ** 2) for lengths in played]
        if jax.process_count() > 1:
            totals = np.asarray(multihost_utils.process_allgather(totals)).sum(0)
            squares = np.asarray(multihost_utils.process_allgather(squares)).sum(0)
        evaluation = {}
        for measure, total, square in zip(MEASURES, totals, squares):
            mean = total / count
            variance = max(0.0, float(square) / count - mean**2) * count / max(1, count - 1)
            evaluation[f"{measure}_clicks"], evaluation[f"{measure}_se"] = float(mean), float(np.sqrt(variance / count))
        return evaluation

    return evaluate


# ---------------------------------------------------------------------------------------
# The run directory
# ---------------------------------------------------------------------------------------


def read_run_config(directory: str | os.PathLike, writing: bool = False) -> tuple[learners.Learner, Any]:
    """The learner and config of a ``train.py`` run directory (or ``@NAME``: a published
    network's); RunError naming the problem (``writing``: for a command that would train
    there, which is told to use another)."""
    directory = _resolved(directory)
    path = os.path.join(directory, "config.json")
    if published.is_published(directory):  # its config is checked against its sha256 first
        try:
            saved = json.loads(published.verified_bytes(directory, published.CONFIG))
        except ValueError as error:
            raise RunError(str(error)) from None
    else:
        if not os.path.exists(path):  # a typo, or a run not trained yet
            why = ("no config.json" if os.path.isdir(directory)
                   else "it is a file" if os.path.exists(directory) else "no such directory")
            raise RunError(f"{directory} is not a train.py run directory ({why})")
        _require_files(directory, writing)
        try:
            with open(path, encoding="utf-8-sig") as handle:  # a byte-order mark: an editor saved it
                saved = json.load(handle)
        except (OSError, ValueError) as error:
            raise RunError(f"{path} is damaged ({error}); every checkpoint keeps the run's config, "
                           "but a new run directory is the simple way on") from None
    try:
        learner = learners.get(saved["learner"])
        return learner, configs.from_json(learner.config_class, saved["config"])
    except (ValueError, TypeError, KeyError) as error:
        raise RunError(f"{path} does not match this version of jaxdust ({error})") from None


def _resolved(directory: str | os.PathLike) -> str:
    """``published.resolve``: a published network's folder for ``@NAME``; RunError for an
    unknown name."""
    try:
        return published.resolve(directory)
    except ValueError as error:
        raise RunError(str(error)) from None


def base_config(learner: learners.Learner, args):
    """The config ``train.py``'s flags change: ``--preset`` (``default`` when none is
    given), or with ``--resume`` the run's own saved settings, so that a run resumes as it
    was started even where this version's defaults differ. A ``--preset`` given with
    ``--resume`` must be the run's own (RunError); a run from before jaxdust 0.2.74 does not
    say its preset, so one given is then its settings, as for a new run."""
    if args.resume and os.path.exists(os.path.join(args.run_dir, "config.json")):
        saved_learner, saved = read_run_config(args.run_dir, writing=True)
        if saved_learner is learner:
            own = read_run_flags(args.run_dir).get("preset")
            if args.preset is None or args.preset == own:
                return saved
            if own is not None:
                began = "; it never finished a step, so without --resume this preset starts there anew" if \
                    never_began(args.run_dir) else ""
                raise RunError(f"--preset {args.preset} is not the run's own ({own}, in "
                               f"{os.path.join(args.run_dir, 'config.json')}): leave --preset out to resume the run "
                               f"as it was started, or use another --run-dir{began}")
    return learner.presets[args.preset or "default"]


def _preset_kept(args, saved: dict) -> str | None:
    """The preset a run began from, for its config.json: this start's, or a resumed run's
    own from its run flags ``saved`` (None for a run from before jaxdust 0.2.74, which did
    not keep it)."""
    if not args.resume:
        return args.preset or "default"
    return saved.get("preset")


# Flags beyond the config that shape what a run computes (its seed; the boards, and the
# steps, on which it is evaluated and its checkpoints are selected), with their defaults; a learner adds
# its own (``Learner.run_flags``: an imitation run's data). config.json keeps them under
# "run", so that a resumed run goes on with them: ``settle_run_flags``.
RUN_FLAGS = {"seed": 0, "eval_boards": 256, "eval_every": 5}

# Data sets, kept as absolute paths (a run may be resumed from another folder) and with
# their settings, under NAME + SETTINGS: a copy made with them is the same data.
DIRECTORY_FLAGS = ("data",)
SETTINGS = "_settings"


def settle_run_flags(learner: learners.Learner, args) -> dict:
    """Fill in ``args``' run flags (``RUN_FLAGS`` and ``learner.run_flags``) that were left
    out (None): with ``args.resume``, the run's own from its config.json, else the defaults.
    Returns them as config.json keeps them (a data directory as an absolute path).

    A run whose config.json has no "run" (written before jaxdust 0.2.22) takes the flags
    given, as then.

    Raises:
      RunError: for a flag given that differs from the resumed run's (one line, naming it).
    """
    defaults = {**RUN_FLAGS, **learner.run_flags}
    saved = read_run_flags(args.run_dir) if args.resume else {}
    for name, default in defaults.items():
        given = getattr(args, name, None)
        if name in saved:
            if given is not None and not same_run_flag(name, given, saved, args.run_dir):
                flag = "--" + name.replace("_", "-")
                made = name in DIRECTORY_FLAGS and saved[name] is None  # no directory given: its own
                own = f"{os.path.join(args.run_dir, name)}, which it made" if made else saved[name]
                # Gone, its settings are unknown here: a copy cannot be compared, but can take its place.
                gone = (f" (a resume that trains makes {os.path.join(args.run_dir, name)} again; or copy {given} "
                        f"there first)"
                        if made and not os.path.isdir(os.path.join(args.run_dir, name)) else "")
                raise RunError(f"{flag} {given} is not the run's own ({own}, in {args.run_dir}/config.json): "
                               f"leave {flag} out to resume the run as it was started{gone}, or use another "
                               f"--run-dir")
            if given is None:  # one given is kept: a copy of the run's data set, say
                setattr(args, name, saved[name])
        elif given is None:
            setattr(args, name, default)
    kept = {name: os.path.abspath(value) if name in DIRECTORY_FLAGS and value else value
            for name, value in ((name, getattr(args, name)) for name in defaults)}
    for name in DIRECTORY_FLAGS:
        if kept.get(name):  # what a copy must have been made with, should the folder move
            recorded, now = saved.get(name + SETTINGS), _data_settings(kept[name])
            recorded = recorded and _settings_as_written(recorded)
            if recorded and now and now != recorded:  # the folder was made again since
                raise RunError(f"{kept[name]} holds a data set made with other settings than the run's "
                               f"({configs.differences(now, recorded)}): give --data a copy made with the "
                               f"run's, or use another --run-dir")
            kept[name + SETTINGS] = recorded or now
            if name in saved and saved[name] != kept[name] and \
                    _data_settings(saved[name] or os.path.join(args.run_dir, name)) is not None:
                kept[name] = saved[name]  # a copy given for this resume only: the run's own is still there
        elif saved.get(name + SETTINGS):  # recorded by a resume that named the folder: kept, not dropped
            kept[name + SETTINGS] = saved[name + SETTINGS]
    return kept


def _settings_as_written(settings: dict) -> dict:
    from jaxdust.learn.datasets import settings_as_written  # datasets imports the solver: only when needed

    return settings_as_written(settings)


def _data_settings(directory: str) -> dict | None:
    from jaxdust.learn.datasets import dataset_config

    try:
        return configs.to_json(dataset_config(directory))
    except (OSError, ValueError):
        return None  # no data set there: the learner's check names the problem


def _saved_json(directory: str) -> dict:
    """A run directory's config.json as saved; {} where there is none to read (no run
    there, or not one: ``Run`` and ``read_run_config`` name the problem)."""
    try:
        with open(os.path.join(directory, "config.json"), encoding="utf-8-sig") as handle:  # as read_run_config
            saved = json.load(handle)
    except (OSError, ValueError):
        return {}
    return saved if isinstance(saved, dict) else {}


def saved_learner_name(directory: str) -> str | None:
    """The learner named in a run directory's config.json; None where there is none to read
    (``read_run_config`` says why)."""
    name = _saved_json(directory).get("learner")
    return name if isinstance(name, str) else None


def read_run_flags(directory: str) -> dict:
    """The run flags a run directory's config.json keeps (``settle_run_flags``); {} where
    there are none (no run there, or one written before they were kept)."""
    saved = _saved_json(directory).get("run", {})
    return saved if isinstance(saved, dict) else {}


def same_run_flag(name: str, given, saved: dict, run_dir: str) -> bool:
    """Whether run flag ``name`` given as ``given`` is what a run in ``run_dir``, whose run
    flags are ``saved``, was started with."""
    if name not in DIRECTORY_FLAGS or given is None:
        return given == saved[name]
    # The run's folder (RUN_DIR/data where it made its own), or a copy made with the same
    # settings (a data set is determined by them): the run may be resumed on another machine.
    if os.path.realpath(given) == os.path.realpath(saved[name] or os.path.join(run_dir, name)):
        return True
    kept = saved.get(name + SETTINGS) or _data_settings(saved[name] or os.path.join(run_dir, name))
    return kept is not None and _data_settings(given) == kept


def upgrade(learner: learners.Learner):
    """``Checkpoints``' ``upgrade`` for ``learner``'s runs: a saved ``{"learner", "config"}``
    as this version writes it, each config field added since it was saved at its default or
    its ``ABSENT_MEANS`` value (as ``read_run_config`` reads ``config.json``); one that does
    not fit stays as it was, to be reported as another config."""

    def upgraded(saved: dict) -> dict:
        try:
            return {**saved, "config": configs.to_json(configs.from_json(learner.config_class, saved["config"]))}
        except (KeyError, TypeError, ValueError):
            return saved

    return upgraded


class Selection:
    """The checkpoint one measure of play (``greedy`` or ``argmax``) selects: the newest
    evaluation within one standard error (``MEASURE_se``) of the best evaluated so far. Of
    evaluations that noise cannot tell apart that is the one trained longest, at the lowest
    learning rate. Taking the plain minimum picked noise at a plateau: default ``avi`` runs'
    minimum played fresh boards worse than their newest checkpoint, on greedy play itself
    as well as argmax (docs/research-log.md), while an overfitting run's newest is many
    errors worse and stays out."""

    def __init__(self, measure: str, checkpoints: checkpoint.Checkpoints):
        self.measure, self.checkpoints = measure, checkpoints
        self.kept = float("inf")  # the selected state's clicks
        self.floor = float("inf")  # the fewest clicks evaluated so far

    def selects(self, evaluation: dict) -> bool:
        """Whether ``evaluation`` (one of ``progress_evaluation``'s) is now the selected one;
        an evaluation without the measure leaves the selection as it is."""
        clicks = evaluation.get(f"{self.measure}_clicks")
        if clicks is None:
            return False
        self.floor = min(self.floor, clicks)
        # With none kept (a resume from before the selected checkpoint deleted it, or a run
        # begun by a version that did not keep this one), this one is: a run always ends
        # with one selected, and replayed exactly it is the same.
        if clicks <= self.floor + evaluation.get(f"{self.measure}_se", 0.0) or not self.checkpoints.steps():
            self.kept = clicks
            return True
        return False

    def summary(self) -> dict:
        """The selection's lines of a run's ``summary.json``: its step (None before one is
        kept) and clicks, ``best_step`` and ``best_greedy_clicks`` for greedy play."""
        steps = self.checkpoints.steps()
        step_key = "best_step" if self.measure == "greedy" else f"best_{self.measure}_step"
        return {f"best_{self.measure}_clicks": self.kept, step_key: steps[-1] if steps else None}

    def resume(self, done: int, log: list[dict]) -> None:
        """Forget a selected checkpoint after step ``done`` (its step will be redone). The
        selected play is then that of the checkpoint left (none where it was newer: the next
        evaluation is kept), and the bar later evaluations are held to is still the best
        evaluated up to ``done``, from the ``log``."""
        for step in self.checkpoints.steps():
            if step > done:
                self.checkpoints.delete(step)
        kept = self.checkpoints.steps()
        name = f"{self.measure}_clicks"
        clicks = {r["chunk"]: r[name] for r in log if name in r and r["chunk"] <= done}
        self.kept = clicks.get(kept[-1], float("inf")) if kept else float("inf")
        self.floor = min(clicks.values(), default=float("inf"))


class Run:
    """Checkpoints, the metrics log and the wall clock of one run directory."""

    def __init__(self, directory: str, learner: learners.Learner, config, resume: bool,
                 tensorboard: bool = False, run_flags: dict | None = None):
        self.directory = directory
        # What every checkpoint is saved with and compared to on restore: the run flags
        # stay out of it, so checkpoints of runs from before they were kept still restore.
        self.saved = {"learner": learner.name, "config": configs.to_json(config)}
        summary_writer = _tensorboard_writer_class() if tensorboard else None  # before any file is written
        if not os.path.exists(os.path.join(directory, "config.json")) or published.is_published(directory):
            # Refuses before the lock makes a folder, or a file among a published network's or
            # another command's files.
            _check_run_directory(directory, learner, config, resume)
        # Several processes (train.py --distributed) share the directory: process 0 holds
        # its lock, all of them look before process 0 writes, and only it writes the files
        # here (orbax coordinates the checkpoints itself).
        self.primary = jax.process_index() == 0
        self.lock, refused = None, None
        if self.primary:
            try:
                self.lock = _lock_run_directory(directory)
            except RunError as error:
                refused = error
        # Every process stops alike (one alone would leave the others in the next collective).
        if _process_0_says(refused is not None)[0]:
            raise refused or RunError(f"another process is training in {directory} (it holds {LOCK_FILE})")
        try:
            _check_run_directory(directory, learner, config, resume)
            if jax.process_count() > 1:
                multihost_utils.sync_global_devices("jaxdust run directory checked")
            os.makedirs(directory, exist_ok=True)
            if self.primary:
                files.remove_leftover_temporaries(directory)
                for folder in ("checkpoints", *SELECTED_DIRS.values()):
                    checkpoint.remove_unfinished_saves(os.path.join(directory, folder))
            self.config_record = {**self.saved, **({"run": run_flags} if run_flags else {})}
            if not resume:  # a resume's flags are kept once it is taken and trains: ``write_config``
                self.write_config(resumed=False)
            self.checkpoints = checkpoint.Checkpoints(os.path.join(directory, "checkpoints"),
                                                      upgrade=upgrade(learner))
            # Models are selected on the evaluation boards (keep_if_best), by greedy play on the
            # value and by the policy's argmax, each kept apart from the newest (which resume
            # continues from): a long imitation run's value stops improving half-way while
            # its policy goes on learning.
            self.by_greedy, self.by_argmax = (
                Selection(measure, checkpoint.Checkpoints(os.path.join(directory, SELECTED_DIRS[measure]),
                                                          max_to_keep=1, upgrade=upgrade(learner)))
                for measure in SELECTED_DIRS)
            self.best = self.by_greedy.checkpoints
        except BaseException:
            self.release()
            raise
        self.metrics_path = os.path.join(directory, "metrics.jsonl")
        self.summary_writer = summary_writer if self.primary else None
        self.tensorboard = None  # made at the first record, which a resume redoes from
        self.elapsed_before = 0.0
        self.last_evaluation = None  # a resumed run's last logged evaluation, for its progress bar
        self.started = time.perf_counter()

    def release(self) -> None:
        """Let another process train in the directory (at the latest when this one ends)."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def write_config(self, resumed: bool) -> None:
        """Write ``config.json``: the learner, its config, the run flags this start took and
        the jaxdust versions that have trained the run (``VERSIONS_KEY``; a new run's: this one)."""
        if self.primary:
            recorded = _saved_json(self.directory).get(VERSIONS_KEY) if resumed else None
            versions = files.with_version(recorded, __version__, earlier=resumed)
            files.atomic_write_json(os.path.join(self.directory, "config.json"),
                                    {**self.config_record, VERSIONS_KEY: versions})

    def forget_config(self) -> None:
        """Remove the ``config.json`` this run wrote, so that the directory no longer holds
        a run (what else a failed start made, e.g. an imitation data set, a retry reuses)."""
        if self.primary:
            os.remove(os.path.join(self.directory, "config.json"))
            for folder in ("checkpoints", *SELECTED_DIRS.values()):  # empty: made for a run that never began
                try:
                    os.rmdir(os.path.join(self.directory, folder))
                except OSError:
                    pass

    def restore(self, like, step=None):
        """Checkpoint ``step``, or the newest that can be read: newer damaged ones are set
        aside with a warning (their steps are redone, as are those after ``step``)."""
        log = self._log_records()  # a damaged log is refused before anything is moved
        try:
            if step is None:
                done, state, damaged = self.checkpoints.restore_newest(like, self.saved)
            else:
                hint = " (restore one with --resume-step)"
                done, state = self.checkpoints.restore(like, self.saved, step, hint)
                damaged = []
        except checkpoint.NoReadableCheckpoint as error:
            if step is None and all(d.reason.startswith(checkpoint.UNFINISHED) for d in error.damaged):
                # Killed while saving its first checkpoint: as if killed before it. A finished
                # run cannot be killed so; its checksums were lost (a partial copy): refused
                # before anything is moved or deleted.
                _refuse_to_start_over(self.directory, gone=False, log=log,
                                      unfinished=tuple(d.step for d in error.damaged))
                for unfinished in error.damaged:
                    moved = self.checkpoints.set_aside(unfinished.step)
                    print(f"warning: {unfinished}; moved to {moved}, starting over", file=sys.stderr)
                self.start_over(log)
                return 0, like
            raise RunError(f"{error}; to start over, move {self.checkpoints.directory} away and resume, "
                           "or use another --run-dir") from None
        except checkpoint.CheckpointError as error:
            raise RunError(str(error)) from None
        for unfinished in damaged:
            moved = self.checkpoints.set_aside(unfinished.step)
            print(f"warning: {unfinished}; moved to {moved}, resuming from checkpoint {done}", file=sys.stderr)
        # Checkpoints first: killed between the two, the log still covers every checkpoint
        # left and the next resume cuts it; the other way round it lost lines for good.
        self._truncate_checkpoints(done, log)
        self._truncate_metrics(done, log)
        self._set_aside_a_damaged_best(like)
        return done, state

    def _set_aside_a_damaged_best(self, like) -> None:
        """A selected checkpoint whose files are damaged (``Checkpoints.verify``: by its
        checksums, without restoring it) stops counting: the next evaluation becomes the
        best, rather than losing to a score whose state is gone. One made with another config
        or state layout (copied in from another run) is a RunError."""
        for selection in self.selections:
            kept = selection.checkpoints.steps()
            if not kept:
                continue
            try:
                selection.checkpoints.verify(kept[-1], like, self.saved)
            except checkpoint.UnreadableCheckpoint as error:
                moved = selection.checkpoints.set_aside(error.step)
                print(f"warning: {error}; moved to {moved}; the next evaluation becomes the best", file=sys.stderr)
                selection.kept = selection.floor = float("inf")
            except checkpoint.MismatchedCheckpoint as error:
                raise RunError(f"{os.path.join(selection.checkpoints.directory, str(kept[-1]))} {error.reason}: move "
                               "it away and resume (the next evaluation becomes the best)") from None

    @property
    def selections(self) -> tuple[Selection, Selection]:
        return self.by_greedy, self.by_argmax

    def start_over(self, log: list[dict]) -> None:
        """Forget every checkpoint and line of the ``log`` (``_log_records``): the run is
        trained again from its first step."""
        self._truncate_checkpoints(0, log)  # first, as in restore
        self._truncate_metrics(0, log)

    def _log_records(self) -> list[dict]:
        """``metrics.jsonl``'s records (a torn last line cut off); RunError if it is damaged."""
        try:
            records = files.recover_json_lines(self.metrics_path, repair=self.primary)
            for number, record in enumerate(records, start=1):
                if not game.is_integer(record.get("chunk")):
                    raise ValueError(f"record {number} has no integer 'chunk'")
                # What a resume reads back: the clock, and the evaluations checkpoints are selected by.
                judged = (f"{measure}_{part}" for measure in MEASURES for part in ("clicks", "se"))
                for name in ("seconds", *(name for name in judged if name in record)):
                    if not isinstance(record.get(name), (int, float)) or isinstance(record.get(name), bool):
                        raise ValueError(f"record {number}'s {name!r} is not a number")
        except ValueError as error:
            raise RunError(f"{self.metrics_path} is damaged ({error}): remove its damaged lines, or the file "
                           "(losing the log of the steps before), and resume") from None
        return records

    def _truncate_checkpoints(self, done: int, log: list[dict]) -> None:
        """Forget checkpoints of steps after ``done`` (a kill or ``--resume-step``: they will
        be redone), and read back from the log each selection's play up to ``done``
        (``Selection.resume``)."""
        for step in self.checkpoints.steps():
            if step > done:
                self.checkpoints.delete(step)
        for selection in self.selections:
            selection.resume(done, log)

    def _truncate_metrics(self, done: int, log: list[dict]) -> None:
        """Drop log lines of steps after the checkpoint (they will be redone)."""
        kept = [r for r in log if r["chunk"] <= done]
        if self.primary:
            files.atomic_write_bytes(self.metrics_path, "".join(json.dumps(r) + "\n" for r in kept).encode())
        if kept:
            self.elapsed_before = kept[-1]["seconds"]
        self.last_evaluation = next((r for r in reversed(kept) if "greedy_clicks" in r), None)

    def seconds(self) -> float:
        return self.elapsed_before + time.perf_counter() - self.started

    def log(self, record: dict) -> None:
        if not self.primary:
            return
        with files.errors_named(self.metrics_path), open(self.metrics_path, "a") as handle:
            handle.write(json.dumps(record) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        if self.summary_writer is not None and self.tensorboard is None:
            # Each session of a run (a start or a resume) writes its own event file; its
            # purge step tells a viewer to drop the earlier files' values of the steps redone.
            self.tensorboard = self.summary_writer(os.path.join(self.directory, TENSORBOARD_DIR),
                                                   purge_step=record["chunk"])
        if self.tensorboard is not None:
            for name, value in record.items():
                if name != "chunk" and isinstance(value, (int, float)) and not isinstance(value, bool):
                    self.tensorboard.add_scalar(name, value, record["chunk"])
            self.tensorboard.flush()

    def keep_if_best(self, step: int, state, evaluation: dict) -> None:
        """Keep ``state`` in ``best/`` and ``best-argmax/`` where ``Selection.selects`` it."""
        for selection in self.selections:
            # A run killed after its last best was saved and resumed at its end evaluates
            # that step again: the state kept is the same one.
            if selection.selects(evaluation) and step not in selection.checkpoints.steps():
                self.save(selection.checkpoints, step, state)

    def save(self, checkpoints: checkpoint.Checkpoints, step: int, state) -> None:
        try:
            checkpoints.save(step, state, self.saved)
        except checkpoint.CheckpointError as error:
            raise RunError(str(error)) from None

    def summary(self) -> dict | None:
        """The finished run's ``summary.json``, or None where there is none to read."""
        try:
            with open(os.path.join(self.directory, "summary.json")) as handle:
                summary = json.load(handle)
        except (OSError, ValueError):
            return None
        return summary if isinstance(summary, dict) else None

    def forget_summary(self) -> None:
        if self.primary:
            try:
                os.remove(os.path.join(self.directory, "summary.json"))
            except FileNotFoundError:
                pass

    def finish(self, summary: dict) -> None:
        if self.primary:
            files.atomic_write_json(os.path.join(self.directory, "summary.json"), summary)

    def close(self) -> None:
        self.checkpoints.close()
        for selection in self.selections:
            selection.checkpoints.close()
        if self.tensorboard is not None:
            self.tensorboard.close()
        self.release()


LOCK_FILE = files.LOCK_FILE
VERSIONS_KEY = files.VERSIONS_KEY


def _lock_run_directory(directory: str) -> filelock.FileLock:
    """The directory's lock, held while this process trains there (the OS lets go of it
    when the process ends, however it ends); RunError when another process holds it."""
    # The wait outlasts a reader's look at the lock (load_run: files.held_by_another).
    lock = files.lock_directory(directory, timeout=1.0)
    if lock is None:
        raise RunError(f"another process is training in {directory} (it holds {LOCK_FILE}): "
                       "wait for it to end, or use another --run-dir")
    return lock


def _check_run_directory(directory: str, learner: learners.Learner, config, resume: bool) -> None:
    """RunError unless ``directory`` can take this run: a new one where nothing of a run
    is, or a resume of the same learner with the same settings."""
    if published.is_published(directory):
        raise RunError(f"{directory} holds a published network (its parameters alone), not a run to train or "
                       "resume: use another --run-dir")
    _require_files(directory)
    if not os.path.exists(os.path.join(directory, "config.json")):
        # What a run writes beside config.json:
        written = ("checkpoints", *SELECTED_DIRS.values(), "metrics.jsonl", "summary.json", TENSORBOARD_DIR)
        left = [name for name in written if os.path.isfile(os.path.join(directory, name))
                or _listdir(os.path.join(directory, name))]
        if left:
            raise RunError(f"{directory} holds {', '.join(left)} of a run but no config.json, so nothing there "
                           "can be resumed and a new run would mix with them; use another --run-dir, or move "
                           "them away")
        if resume:
            raise RunError(f"nothing to resume in {directory}: without --resume a new run starts there")
        # The lock, temporaries and hidden files aside, and a data set a failed start of this
        # learner made there (RUN_DIR/data, which the retry reuses); an empty run folder stays.
        own = set(learner.run_flags) & set(DIRECTORY_FLAGS) | {"checkpoints", *SELECTED_DIRS.values()}
        others = sorted(name for name in _listdir(directory) if not name.startswith(".") and name not in own)
        if others:
            raise RunError(f"{directory} holds other files ({', '.join(others[:3])}{', ...' if len(others) > 3 else ''}"
                           ") and no run, which a new run would mix with: give a new or empty --run-dir")
        return
    if not resume:
        if never_began(directory):  # its start failed (an error, XLA's abort, out of memory): begin again
            return
        raise RunError(f"{directory} already holds a run; pass --resume or another --run-dir")
    saved_learner, saved_config = _require_learner(directory, learner)
    if saved_config != config:
        began = "; it never finished a step, so without --resume these settings start there anew" if \
            never_began(directory) else ""
        raise RunError(f"{directory} holds a run of {saved_learner.name} with other settings "
                       f"({setting_differences(saved_config, config)}): "
                       f"resume it with the same ones or use another --run-dir{began}")


def setting_differences(saved, asked) -> str:
    """How a run's settings differ from those asked for, by the flags that give them: its
    board as ``--size former:6x5x4, not 6x5x4``, the rest as ``--hidden 16, not 32``."""
    asked_json = configs.to_json(asked)
    # The game is left out in the JSON, not by a config with the asked game: the saved
    # settings need not be valid on the asked board (a batch too large for it).
    parts = [configs.differences({**configs.to_json(saved), "game": asked_json["game"]}, asked_json, as_flags=True)]
    return "; ".join(part for part in parts + configs.board_differences(saved.game, asked.game) if part)


def _require_files(directory: str, writing: bool = True) -> None:
    """RunError where a file a run keeps is something else (a folder); ``writing``: the
    command would train there, and is told to go elsewhere."""
    for name in ("config.json", "metrics.jsonl", "summary.json"):
        if os.path.exists(os.path.join(directory, name)) and not os.path.isfile(os.path.join(directory, name)):
            raise RunError(f"{os.path.join(directory, name)} is not a file, so {directory} holds no run this "
                           + ("command can write: move it away or use another --run-dir" if writing
                              else "command can read"))


def _require_learner(directory: str, learner: learners.Learner) -> tuple[learners.Learner, Any]:
    """The run's saved learner and config (``read_run_config``); RunError where the learner
    is another than ``learner``."""
    saved_learner, saved_config = read_run_config(directory, writing=True)
    if saved_learner is not learner:
        raise RunError(f"{directory} holds a run of {saved_learner.name}, not {learner.name}: resume it "
                       f"with the {saved_learner.name} learner or use another --run-dir")
    return saved_learner, saved_config


def never_began(directory: str) -> bool:
    """Whether the run in ``directory`` never finished a step: no checkpoint (not even a
    save cut short), no line in its log and no summary. A new start may take its place,
    whatever its settings: nothing of it would be lost."""
    saved = [name for folder in ("checkpoints", *SELECTED_DIRS.values())
             for name in _listdir(os.path.join(directory, folder))]
    log = os.path.join(directory, "metrics.jsonl")
    return (not saved and not os.path.exists(os.path.join(directory, "summary.json"))
            and (not os.path.exists(log) or os.path.getsize(log) == 0))


TENSORBOARD_DIR = "tensorboard"


def _tensorboard_writer_class():
    """TensorBoard's event writer (the optional ``tensorboardX``), or RunError saying how to
    install it."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        raise RunError('--tensorboard needs tensorboardX: pip install -e ".[tensorboard]" in a checkout') from None
    return SummaryWriter


def make_mesh(devices: int | None):
    """A one-axis ``data`` mesh over the first ``devices`` local devices of every process
    (all by default; None for one device in all). Process 0's devices come first, so a
    run over several processes splits its data as one process with all devices would."""
    chosen = _chosen_devices(devices)
    if len(chosen) == 1:
        return None
    return jax.make_mesh((len(chosen),), ("data",), axis_types=(AxisType.Auto,), devices=chosen)


def _chosen_devices(devices: int | None) -> list:
    return [d for p in range(jax.process_count()) for d in jax.local_devices(p)[:devices or None]]


def _devices_kept(args, saved: dict) -> tuple[int | None, str | None]:
    """The devices a run started on, for its config.json (this start's count, or a resumed
    run's own from its run flags ``saved``: None for a run from before jaxdust 0.2.38, which did not keep it), and for a
    resume on another count a warning that it will not end as the uninterrupted run would:
    the games and minibatches split otherwise, and sums over them round otherwise.

    A resume given no ``--devices`` takes the run's own count where every process has its
    share of it (sets ``args.devices``), else all the devices there are."""
    kept = saved.get("devices") if args.resume else None
    # None where none is kept (or it was edited by hand into no count).
    started = int(kept) if game.is_integer(kept) and kept > 0 else None
    given = args.devices
    if started is not None and given is None:
        share, rest = divmod(started, jax.process_count())
        if not rest and 0 < share <= jax.local_device_count():
            args.devices = share
    count = len(_chosen_devices(args.devices))
    if not args.resume:
        return count, None
    if started is None or started == count:
        return started, None
    how = f"--devices {given}" if given is not None else "all there are"
    return started, (f"warning: {args.run_dir} started on {started} device{'s' * (started != 1)} and resumes on "
                     f"{count} ({how}): it goes on, but will not end as a run on one count does")


# How often a run saves: kept in config.json's "run" so that a resume saves as the run did,
# but not in its fingerprint (a resume may change it, and it never changes what is learned).
CADENCE_FLAGS = ("checkpoint_every", "checkpoint_seconds")


def _cadence_kept(args, saved: dict) -> dict:
    """How often a run saves, for its config.json: this start's ``--checkpoint-every`` or
    ``--checkpoint-seconds``, or on a resume given neither the run's own from its run flags
    ``saved`` (set in ``args``).
    The cadence never changes what a run learns, so a resume may change it."""
    if args.resume and args.checkpoint_every is None and args.checkpoint_seconds is None:
        args.checkpoint_every, args.checkpoint_seconds = _saved_cadence(saved)
    return {name: getattr(args, name) for name in CADENCE_FLAGS}


def _saved_cadence(saved: dict) -> tuple[int | np.integer | None, float | None]:
    """The ``--checkpoint-every`` and ``--checkpoint-seconds`` that run flags ``saved``
    (a config.json's) keep, None for each left out. A value edited by hand into something
    else is left out too: the clock's default saves."""
    every, seconds = (saved.get(name) for name in CADENCE_FLAGS)
    return (every if game.is_integer(every) and every > 0 else None,
            seconds if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and 0 < seconds < math.inf
            else None)


def _without_cadence(config_json: bytes) -> bytes:
    """A config.json's bytes as written without what a resume may change in it and leave
    the run the same: the cadence it keeps (``CADENCE_FLAGS``) and the versions that
    trained it (``VERSIONS_KEY``; a new one's checkpoints change the run's digest)."""
    try:
        saved = json.loads(config_json)
    except ValueError:
        return config_json
    if not isinstance(saved, dict):
        return config_json
    run = saved.get("run")
    run = run if isinstance(run, dict) else {}
    cadence = bool(run.keys() & set(CADENCE_FLAGS))
    if not cadence and VERSIONS_KEY not in saved:
        return config_json
    trimmed = {name: value for name, value in saved.items() if name != VERSIONS_KEY}
    if cadence:
        trimmed["run"] = {name: value for name, value in run.items() if name not in CADENCE_FLAGS}
    return files.json_bytes(trimmed)


def _process_0_says(*flags: bool) -> tuple[bool, ...]:
    """Process 0's ``flags``, in every process: their clocks differ, and one that stopped
    or saved alone would leave the others waiting forever in the next collective."""
    if jax.process_count() == 1:
        return flags
    return tuple(bool(flag) for flag in multihost_utils.broadcast_one_to_all(np.array(flags, dtype=bool)))


# Saving the default avi state (9 MB) takes ~0.15 s on a 2-core CPU: ~1-2% of a 100-update
# chunk there, but as long as the chunk itself on a GPU (an H200 ran 100-update chunks, a
# save after each, at 4.0 ms an update against 1.7 ms in 1000-update chunks). By the clock,
# a SIGKILL costs at most this much training.
CHECKPOINT_SECONDS = 30.0


def start(learner: learners.Learner, config, args) -> tuple[Run, object, int, object]:
    """What ``train`` begins from: the run directory, the learner's trainer (None for a
    finished run resumed), the number of chunks already done and the state (fresh, or the
    checkpoint ``args.resume`` finds).
    ``args``' run flags left out are filled in (``settle_run_flags``). Raises RunError
    before any file is written for settings the learner cannot run with."""
    if args.resume and os.path.exists(os.path.join(args.run_dir, "config.json")):
        _require_learner(args.run_dir, learner)  # before its run flags are compared, which it would explain
        if not os.path.isdir(os.path.join(args.run_dir, "checkpoints")):
            # Before Run makes the folder again, so that a second --resume is refused too.
            _refuse_to_start_over(args.run_dir, gone=True)
    saved = read_run_flags(args.run_dir) if args.resume else {}
    run_flags = settle_run_flags(learner, args)
    devices, device_warning = _devices_kept(args, saved)
    for name, kept in (("devices", devices), ("preset", _preset_kept(args, saved)),
                       *_cadence_kept(args, saved).items()):
        if kept is not None:
            run_flags[name] = kept
    try:
        learner.check(config, args)
        # Boards past the machine's memory end the run at its first evaluation, after training
        # up to it: XLA aborts the process, or the kernel kills it.
        machine.require_memory(f"--eval-boards {args.eval_boards} (the boards and their clicks)",
                               evaluation_bytes(config.game, args.eval_boards))
    except ValueError as error:
        raise RunError(str(error)) from None
    run = Run(args.run_dir, learner, config, args.resume, getattr(args, "tensorboard", False), run_flags)
    if device_warning and run.primary:  # once the resume is taken
        print(device_warning, file=sys.stderr)
    try:
        total = learner.total(config)
        if (args.resume and args.resume_step is None and jax.process_count() == 1
                and max(run.checkpoints.steps(), default=0) == total):
            # Said finished without building the trainer: an imitation run whose data set
            # was deleted would label it all again first. A damaged last checkpoint is set
            # aside here, and the run goes on from the one before.
            done, state = run.restore(learner.template(config))
            if _finished(learner, config, args, run, done, state) is not None:
                return run, None, done, state
        try:
            trainer = learner.trainer(config, args, make_mesh(args.devices))
        except ValueError as error:
            if not args.resume:  # a new run that never began: the corrected command needs no --resume
                run.forget_config()
            raise RunError(str(error)) from None
        with _out_of_memory_named(learner, config, args, run, "making its first state"):
            state = trainer.init(jax.random.key(args.seed))
        done = 0
        if args.resume and run.checkpoints.steps():
            done, state = run.restore(state, args.resume_step)
        elif args.resume and args.resume_step is not None:  # starting over would delete what it asks for
            raise RunError(f"no checkpoint {args.resume_step} in {run.checkpoints.directory}; there are none "
                           "(leave --resume-step out to start the run over)")
        elif args.resume:  # killed before its first checkpoint: what it logged is redone
            log = run._log_records()  # a damaged log is refused before anything is deleted
            _refuse_to_start_over(run.directory, gone=False, log=log)
            run.start_over(log)
        if args.resume and done < total:
            # Not before, nor at the end: a refused resume, or one that finds the run
            # finished (at its end, or at ``--resume-step`` of its last step), would keep
            # flags that trained nothing, and a changed config.json is a changed run
            # (``fingerprint``), whose kept results are played again.
            run.write_config(resumed=True)
    except checkpoint.CheckpointError as error:  # a checkpoint that could not be moved aside or deleted
        run.close()
        raise RunError(str(error)) from None
    except BaseException:
        run.close()
        raise
    return run, trainer, done, state


def _refuse_to_start_over(directory: str, gone: bool, log: list[dict] | None = None,
                          unfinished: tuple[int, ...] = ()) -> None:
    """RunError where a run with no checkpoint to resume from shows it had saved some: it
    finished (``summary.json``); its ``checkpoints/`` folder is ``gone`` (deleted to free
    space, left out of a copy) while its log says it trained; or, with the folder there,
    its ``log`` (records) went on past a save, or several of its checkpoints are
    ``unfinished`` (steps saved without checksums: a kill leaves one at most, so they are
    a partial copy's, or a run's from before jaxdust 0.2.79). ``--resume`` would take it
    for a run killed before its first checkpoint, empty its log and its selected
    checkpoints (``best/``, ``best-argmax/``) and train it again."""
    where = "its checkpoints/ folder is gone" if gone else "its checkpoints/ folder holds no finished checkpoint"
    path = os.path.join(directory, "metrics.jsonl")
    if os.path.exists(os.path.join(directory, "summary.json")):
        why = "it finished (summary.json)"
    elif gone and os.path.isfile(path) and os.path.getsize(path) > 0:
        why = "metrics.jsonl logs its training"
    elif len(unfinished) > 1:
        where = f"its checkpoints {', '.join(map(str, sorted(unfinished)))} have no checksums.json"
        why = "a kill leaves one such checkpoint at most (a partial copy, or a run saved before jaxdust 0.2.79?)"
    elif log and _logged_past_a_save(log, read_run_flags(directory), unfinished):
        why = "metrics.jsonl logs training after a checkpoint was saved"
    else:
        return
    raise RunError(f"{directory}: {where}, yet {why}: --resume would start it over, deleting its log and its "
                   f"selected checkpoints ({', '.join(SELECTED_DIRS.values())}). Play it as it is, train anew in "
                   f"another --run-dir, or remove {directory} to start over there")


def _logged_past_a_save(log: list[dict], run_flags: dict, unfinished: tuple[int, ...]) -> bool:
    """Whether ``log`` (records since the run last started over: a run that resumed from a
    checkpoint had saved one anyway) shows a finished save. A chunk's record is written
    before its checkpoint, and the next chunk's after the save returned, so a record past an
    ``unfinished`` step's chunk shows its save was whole; so does one past the first save
    that the cadence the run saved by (``run_flags``, its config.json's; a resume that
    changed it hides the earlier one's saves) made due: chunk ``checkpoint_every``, or, by
    the clock (no cadence kept: the default, as a config.json keeps it), a record logged
    a save's interval after the first (the session's clock started before that first
    record)."""
    last = max(record["chunk"] for record in log)
    if unfinished and last > unfinished[0]:
        return True
    every, seconds = _saved_cadence(run_flags)
    if every is not None:
        return last > every
    interval = seconds or CHECKPOINT_SECONDS
    return any(record["seconds"] >= log[0]["seconds"] + interval for record in log[:-1])


def _finished(learner: learners.Learner, config, args, run: Run, done: int, state) -> dict | None:
    """The summary of a run that has done all its steps (``state`` is its final one), or
    None. A selected checkpoint missing there (set aside as damaged, or one a run made
    before jaxdust 0.2.52 did not keep) is selected again from an evaluation of the final
    state: that trains nothing, so only that selection and its lines of the summary change."""
    summary = run.summary() if done == learner.total(config) else None
    missing = [selection for selection in run.selections if not selection.checkpoints.steps()]
    if summary is None or not missing:
        return summary
    evaluate = progress_evaluation(evaluation_boards(config.game, args.eval_boards), learner, config)
    with _training_bar(learner, run, done, done, leave=False) as bar, \
            _out_of_memory_named(learner, config, args, run, "an evaluation", evaluation=True):
        evaluation = evaluate(state, _evaluation_shown(bar))
    for selection in missing:
        selection.selects(evaluation)  # with none kept, this one is
        run.save(selection.checkpoints, done, state)
        summary.update(selection.summary())
        if run.primary:
            print(f"{run.directory}: its final checkpoint is now its selection by {selection.measure} play too "
                  f"({selection.checkpoints.directory})")
    run.finish(summary)
    return summary


@game.standard_numpy
def train(learner_name: str, config, args) -> dict:
    """Train ``config`` with the named learner into ``args.run_dir`` (see ``train.py`` for
    the fields of ``args``). Returns the summary, or {} when ``args.minutes`` stopped it
    early (a checkpoint is saved; resume continues). Raises RunError or ValueError."""
    learner = learners.get(learner_name)
    run, trainer, done, state = start(learner, config, args)
    try:
        return _train(learner, config, args, run, trainer, done, state)
    finally:
        run.close()


def _train(learner: learners.Learner, config, args, run: Run, trainer, done: int, state) -> dict:
    if (summary := _finished(learner, config, args, run, done, state)) is not None:
        print(f"{run.directory} finished its {done} chunks already: nothing to train")
        return summary
    if done < trainer.total:  # resumed before its end (--resume-step): a summary there is of steps undone
        run.forget_summary()
    past = bool(args.minutes) and done > 0 and run.elapsed_before > 60 * args.minutes  # the earlier pieces' time
    if done < trainer.total and _process_0_says(past)[0]:
        # A --resume-step has deleted the later checkpoints by now: say so, or it reads as nothing changed.
        back = f", rolled back to checkpoint {done} (--resume-step)" if args.resume_step is not None else ""
        print(f"{run.directory} has trained {run.elapsed_before / 60:.1f} minutes already{back}, past --minutes "
              f"{args.minutes:g} (the run's time in all): nothing done; continue with --resume and a larger "
              f"--minutes, or none")
        return {}
    evaluate = progress_evaluation(evaluation_boards(config.game, args.eval_boards), learner, config)

    last_evaluation = None  # the loop always evaluates its final step; the summary reuses it
    interval = args.checkpoint_seconds or CHECKPOINT_SECONDS
    next_save = run.seconds() + interval
    with _training_bar(learner, run, trainer.total, done) as bar:
        if run.last_evaluation is not None:  # resumed: shown until the next evaluation
            _show_evaluation(bar, run.last_evaluation)
        for index in range(done + 1, trainer.total + 1):
            with _out_of_memory_named(learner, config, args, run, f"chunk {index}"):
                state, metrics = trainer.step(state, index)
            if (diverged := _divergence(learner.params(state), metrics)) is not None:
                raise RunError(_diverged_message(learner, config, run, index, diverged))
            record = {"chunk": index, **metrics}
            if index % args.eval_every == 0 or index == trainer.total:
                with _out_of_memory_named(learner, config, args, run, "an evaluation", evaluation=True):
                    last_evaluation = evaluate(state, _evaluation_shown(bar))
                record.update(last_evaluation)
                run.keep_if_best(index, state, last_evaluation)
            record["seconds"] = seconds = run.seconds()
            run.log(record)
            out_of_time, due = _process_0_says(
                bool(args.minutes) and seconds > 60 * args.minutes and index < trainer.total,
                index % args.checkpoint_every == 0 if args.checkpoint_every else seconds >= next_save)
            if due or index == trainer.total or out_of_time:
                run.save(run.checkpoints, index, state)
                next_save = run.seconds() + interval
            if "greedy_clicks" in record:  # the last evaluation stays shown between evaluations
                _show_evaluation(bar, record, refresh=False)  # drawn with its chunk's count, by update
            bar.update()
            flags.raise_if_interrupted()  # a Ctrl-C swallowed in a gc callback stops the run here
            if out_of_time:
                bar.close()  # the line below the bar, not onto its line (and no bar drawn again after it)
                made = ", making its data set" if learner.name == "imitation" else ""
                print(f"stopped after {seconds / 60:.1f} minutes (--minutes {args.minutes:g}: the run's time in all, "
                      f"compiling, evaluations{made} included) at chunk {index}; continue with --resume, with a larger "
                      f"--minutes or none")
                return {}
        if last_evaluation is None:  # resumed at its end, killed before its summary was written
            with _out_of_memory_named(learner, config, args, run, "an evaluation", evaluation=True):
                last_evaluation = evaluate(state, _evaluation_shown(bar))
            run.keep_if_best(trainer.total, state, last_evaluation)
            _show_evaluation(bar, last_evaluation)
    summary = {"learner": learner.name, "jaxdust": __version__, "seconds": run.seconds(),
               "eval_boards": args.eval_boards,
               **trainer.info(state), **last_evaluation,
               **{key: value for selection in run.selections for key, value in selection.summary().items()}}
    run.finish(summary)
    return summary


@contextlib.contextmanager
def _out_of_memory_named(learner: learners.Learner, config, args, run: Run, where: str, evaluation: bool = False):
    """XLA's out of memory within as a RunError, one line naming the flags to lower (the
    learner's ``memory_fields``, or ``--eval-boards`` in an evaluation); other errors pass.
    Sizes that fit 8x6 boards ask for the number of cells squared on larger ones (a child
    per cluster, a line of positions per click)."""
    try:
        yield
    except jax.errors.JaxRuntimeError as error:
        if "RESOURCE_EXHAUSTED" not in str(error):
            raise
        asked = next(line.strip() for line in str(error).splitlines() if "RESOURCE_EXHAUSTED" in line)
        turned_off = configs.unused_settings(config)
        values = {"eval_boards": args.eval_boards} if evaluation else {
            name: getattr(config, name) for name in learner.memory_fields if name not in turned_off}
        lower = " or ".join(f"--{name.replace('_', '-')} (now {value if isinstance(value, int) else format(value, 'g')})"
                            for name, value in values.items())
        where_to = "the same --run-dir starts over with them" if never_began(run.directory) else \
            "train anew in another --run-dir (a resumed run keeps its settings)"
        raise RunError(f"out of memory in {where} on {config.game.size_spec} boards ({asked.rstrip('.')}): lower "
                       f"{lower}; {where_to}") from None


@jax.jit
def _finite(params) -> jax.Array:
    """Whether every floating-point number in ``params`` is finite: bool ``[]``."""
    leaves = [jnp.all(jnp.isfinite(leaf)) for leaf in jax.tree.leaves(params)
              if jnp.issubdtype(leaf.dtype, jnp.floating)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.bool_(True)


def _divergence(params, metrics: dict) -> str | None:
    """What a step left NaN or infinite (its network's parameters, the losses it logged),
    or None. Diverged parameters stay NaN: every later step, checkpoint and evaluation
    would be of a broken network, under a summary that looks like any other."""
    broken = ([] if bool(_finite(params)) else ["the network's parameters"]) + [
        name for name, value in metrics.items() if "loss" in name and not math.isfinite(value)]
    return None if not broken else broken[0] if len(broken) == 1 else f"{', '.join(broken[:-1])} and {broken[-1]}"


def _diverged_message(learner: learners.Learner, config, run: Run, index: int, diverged: str) -> str:
    saved = run.checkpoints.steps()
    selected = [f"chunk {s.checkpoints.steps()[-1]} in {SELECTED_DIRS[s.measure]}/"
                for s in run.selections if s.checkpoints.steps()]
    if saved:
        kept = (f"its checkpoints end at chunk {saved[-1]}, from where the same settings would diverge "
                f"again: train anew in another --run-dir")
    elif selected:
        kept = (f"only its selected checkpoints ({' and '.join(selected)}, playable) were kept: train anew in "
                f"another --run-dir")
    elif never_began(run.directory):
        kept = "nothing it trained was kept: train anew in the same --run-dir"
    else:
        kept = "no checkpoint was saved yet: train anew in another --run-dir"
    return (f"training diverged in chunk {index}: {diverged} became NaN or infinite, and nothing of that "
            f"chunk is kept; {kept}, with a lower --learning-rate (now {config.learning_rate:g})")


def _training_bar(learner: learners.Learner, run: Run, total: int, done: int, leave: bool = True):
    """The bar of a run's chunks, drawn by its first process only."""
    return progress_bar(total=total, initial=done, unit="chunk", desc=learner.name, enabled=run.primary, leave=leave)


def _show_evaluation(bar, record: dict, refresh: bool = True) -> None:
    """An evaluation's means on ``bar``, to the hundredth of a click (tqdm's own format keeps
    three digits: 14.14 clicks showed as 14.1)."""
    bar.set_postfix(greedy=f"{record['greedy_clicks']:.2f}", argmax=f"{record.get('argmax_clicks', float('nan')):.2f}",
                    refresh=refresh)


def _evaluation_shown(bar):
    """An evaluation's ``progress`` shown on ``bar`` after the last evaluation's figures
    (which the caller replaces once it ends): many --eval-boards take minutes to play, and
    the bar would stand still meanwhile. The figures stay: a log's line a minute is often
    drawn during an evaluation."""
    shown, figures = -1, getattr(bar, "postfix", None)  # a disabled tqdm (not process 0) has none

    def progress(fraction: float) -> None:
        nonlocal shown
        if (percent := int(100 * fraction)) != shown:  # a redraw per percent at most
            shown = percent
            bar.set_postfix_str(f"{figures}, evaluating {percent}%" if figures else f"evaluating {percent}%")

    return progress


# ---------------------------------------------------------------------------------------
# Loading a finished (or interrupted) run
# ---------------------------------------------------------------------------------------


class TrainedAgent(NamedTuple):
    """A run's network as ``load_run`` reads it: argmax play is
    ``jaxdust.play_boards(boards, agent.policy, key, max_clicks, params=agent.params)``,
    play on the value ``jaxdust.beam_search(boards, width, scorer=agent.scorer,
    params=agent.params)`` (width 1: greedy), MCTS ``jaxdust.search.mcts.search(boards,
    agent.evaluator, agent.params, key, simulations)``; ``step`` is the checkpoint's chunk."""

    learner: str  # a name in jaxdust.learn.learners.LEARNERS
    config: Any  # the run's config dataclass
    params: Any  # network parameters of the checkpoint load_run read (selected, unless newest)
    policy: Any  # policy(key, board, params): argmax of the network's output
    scorer: Any  # scorer(boards, params): clicks left, for the beam search
    evaluator: Any  # evaluator(boards, params) -> (clicks left, logits) for jaxdust.search.mcts; None if none
    step: int  # the checkpoint's chunk
    # The checkpoint played, relative to the run directory: best/30 or checkpoints/30 (in a
    # published network, the file of its parameters: params.msgpack or params-argmax.msgpack).
    checkpoint: str = ""


BEST_DIR = "best"
# The checkpoint each measure of play selects (Selection): policy: plays the argmax one.
SELECTED_DIRS = {"greedy": BEST_DIR, "argmax": "best-argmax"}


def fingerprint(directory: str | os.PathLike) -> str:
    """A digest of what ``load_run`` may read from a run directory: its ``config.json`` (but
    the checkpoint cadence, which a resume may change) and the step names and checksums of
    every checkpoint (``best/``, ``best-argmax/`` and ``checkpoints/``). A result measured
    on a run keeps it, so training the run again (or more) shows as a change; an empty string where there is no run. A published network's
    (``@NAME`` too) is of its ``published.json``, which holds the sha256 of its other files."""
    digest = hashlib.sha256()
    directory = published.resolve(directory, strict=False)
    if published.is_published(directory):  # published.json holds the sha256 of every other file
        with open(os.path.join(directory, published.RECORD), "rb") as handle:
            digest.update(handle.read())
        return digest.hexdigest()
    for folder in ("", *SELECTED_DIRS.values(), "checkpoints"):
        names = ["config.json"] if not folder else sorted(
            name for name in _listdir(os.path.join(directory, folder)) if name.isdigit())
        for name in names:
            path = os.path.join(directory, folder, name, checkpoint.CHECKSUMS) if folder else os.path.join(directory, name)
            digest.update(f"{folder}/{name}\0".encode())
            if os.path.exists(path):
                with open(path, "rb") as handle:
                    digest.update(handle.read() if folder else _without_cadence(handle.read()))
    return digest.hexdigest() if os.path.exists(os.path.join(directory, "config.json")) else ""


def _listdir(path: str) -> list[str]:
    return os.listdir(path) if os.path.isdir(path) else []


def selected_by(directory: str | os.PathLike, newest: bool = False, by: str = "greedy") -> str | None:
    """The measure whose selected checkpoint ``load_run(directory, newest, by)`` reads:
    ``by``, or ``"greedy"`` where ``best/`` stands in for a selection that a run made before
    it was kept lacks; None for the newest checkpoint (asked for, or no selection kept)."""
    if by not in MEASURES:
        raise ValueError(f"load_run: by is one of {', '.join(MEASURES)}, not {by!r}")
    directory = published.resolve(directory, strict=False)
    if published.is_published(directory):  # it holds the selected checkpoints only
        if newest:
            raise RunError(f"{directory} is a published network: it keeps the checkpoints its run selected, "
                           "no newest one (play it without @newest, or the run it was published from)")
        try:
            return published.selection(directory, by)
        except (OSError, ValueError) as error:
            raise RunError(str(error)) from None
    if newest:
        return None
    kept = (measure for measure in dict.fromkeys([by, "greedy"])
            if any(name.isdigit() for name in _listdir(os.path.join(directory, SELECTED_DIRS[measure]))))
    return next(kept, None)


def load_run(directory: str | os.PathLike, newest: bool = False, by: str = "greedy") -> TrainedAgent:
    """A ``train.py`` run's checkpoint selected ``by`` a measure of play (``Selection``):
    ``"greedy"`` (``best/``: the newest whose value-greedy play on its evaluation boards is
    within a standard error of the best) or ``"argmax"`` (``best-argmax/``, the same by the
    policy's argmax; ``best/`` in runs made before jaxdust 0.2.52, which did not keep it).
    With ``newest`` (or in runs without one) the newest checkpoint.

    A damaged checkpoint is skipped with a one-line warning on stderr (the run directory is
    left as it is): a damaged selected one falls back to the newest checkpoint that can be
    read. While another process trains the run (it holds the run's lock), a checkpoint that
    it deletes or is still saving as this one reads is no damage: the newest one there then
    is read.

    ``"@NAME"`` loads the network published as NAME (``jaxdust.learn.published``): the
    checkpoint its run selected ``by`` the measure (it holds no newest one: ``newest`` is
    refused).

    Raises:
      RunError: one line naming the problem (no run there, no checkpoint, none that can
        be read, or an incompatible one).
      ValueError: ``by`` that is no measure of play.
    """
    directory = _resolved(directory)
    measure = selected_by(directory, newest, by)  # ValueError for a measure there is none of
    learner, config = read_run_config(directory)
    if published.is_published(directory):
        assert measure is not None  # a published network holds selections only
        like = learner.params(jax.eval_shape(lambda: learner.template(config)))
        try:
            params, step, name = published.read_params(directory, like, measure)
        except (OSError, ValueError) as error:
            raise RunError(str(error)) from None
        return TrainedAgent(learner.name, config, params, learner.policy(config), learner.scorer(config),
                            learner.evaluator(config), step, name)
    saved = {"learner": learner.name, "config": configs.to_json(config)}
    sources = [] if measure is None else [os.path.join(directory, SELECTED_DIRS[measure])]
    every_checkpoint = os.path.join(directory, "checkpoints")
    sources.append(every_checkpoint)
    # Shapes only (making the template takes seconds), placed as a fresh one would be: on
    # one device, whatever devices the run was trained on.
    device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    like = jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=device),
                        jax.eval_shape(lambda: learner.template(config)))
    unreadable = []  # NoReadableCheckpoint of each source tried
    unlisted = []  # selections whose folder lists no finished step
    training = files.held_by_another(directory)
    if os.path.exists(every_checkpoint) and not os.path.isdir(every_checkpoint):  # "not saved yet" would mislead
        raise RunError(f"{every_checkpoint} is a file, not a folder of checkpoints: {directory} holds no run this "
                       "command can read")
    if not os.path.exists(every_checkpoint) and os.path.exists(os.path.join(directory, published.PARAMS["greedy"])):
        raise RunError(f"{directory} holds a published network's parameters without its {published.RECORD}: "
                       f"{published.REPAIR}")
    for source in sources:
        checkpoints = checkpoint.Checkpoints.reader(source, upgrade(learner), beside_writer=training)
        try:
            if not checkpoints.steps():
                if source != sources[-1]:  # a selection's first save, not finished (or under way now)
                    unlisted.append(source)
                    continue
                raise checkpoint.CheckpointError(f"no checkpoint in {source}: " + (
                    "the run, training now, has not saved one yet" if training
                    else "the run has not saved one yet (train it further with --resume)"))
            step, state, skipped = checkpoints.restore_newest(like, saved, beside_writer=training)
        except checkpoint.NoReadableCheckpoint as error:
            unreadable.append(error)
            continue
        except checkpoint.CheckpointError as error:  # none there, or made with another config or layout
            raise RunError("; ".join(map(str, [*unreadable, error]))) from None
        finally:
            checkpoints.close()
        for passed_over in [*(d for e in unreadable for d in e.damaged), *skipped]:
            print(f"warning: {passed_over}; using checkpoint {step} in {source}", file=sys.stderr)
        if not training:  # beside a writer, an unlisted selection is its first save under way
            for selection in unlisted:
                print(f"warning: no finished checkpoint in {selection}; using checkpoint {step} in {source}",
                      file=sys.stderr)
        return TrainedAgent(learner.name, config, learner.params(state), learner.policy(config),
                            learner.scorer(config), learner.evaluator(config), step,
                            os.path.relpath(os.path.join(source, str(step)), directory))
    raise RunError("; ".join(map(str, unreadable)))
