"""Checkpoints of whole training runs with orbax (``CheckpointManager``).

A checkpoint holds the complete learner state (parameters, optimiser state, step, PRNG
keys, environment states, replay buffer) and the run's config as JSON. orbax writes each
step into a temporary directory and renames it when complete, so a process killed while
saving leaves the earlier checkpoints as they were; ``max_to_keep`` bounds the disk used
(the oldest are removed once the new one is finished).
A save is finished when its checksums are written (orbax keeps none of array data); a
checkpoint damaged afterwards (a file truncated, overwritten or deleted) is found by them,
one without them (a process killed between orbax's rename and the checksums) counts as
unfinished, and either can be set aside so that its step can be saved again.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import logging
import os
import re
import shutil
import sys
import threading
import time
import zlib
from typing import Any, Callable

import jax
import numpy as np
import orbax.checkpoint as ocp

from jaxdust.core import files, game, processes


class CheckpointError(RuntimeError):
    """A checkpoint cannot be used (damaged, or made with another config or state layout)."""


class UnreadableCheckpoint(CheckpointError):
    """Checkpoint ``step``'s files are damaged or missing (other checkpoints may be fine)."""

    def __init__(self, message: str, step: int, reason: str = ""):
        super().__init__(message)
        self.step, self.reason = step, reason or message


class MismatchedCheckpoint(CheckpointError):
    """Checkpoint ``step`` is intact but not this run's: another config or another layout of
    the state (``reason`` says which, ``advice`` what to do)."""

    def __init__(self, directory: str, step: int, reason: str, advice: str):
        super().__init__(f"checkpoint {step} in {directory} {reason}; {advice}")
        self.step, self.reason = step, reason


class NoReadableCheckpoint(CheckpointError):
    """Every checkpoint in a directory is damaged (``damaged``: each one's error, newest first)."""

    def __init__(self, directory: str, damaged: list[UnreadableCheckpoint]):
        steps = sorted(error.step for error in damaged)
        super().__init__(f"every checkpoint in {directory} is unreadable: {steps} "
                         f"(checkpoint {damaged[0].step}: {damaged[0].reason})")
        self.damaged = damaged


# orbax keeps no checksums of array data: bytes overwritten there would restore silently.
CHECKSUMS = "checksums.json"
DAMAGED = ".damaged"  # suffix of set-aside step directories: orbax lists only digit names
TEMPORARY = ".orbax-checkpoint-tmp"  # in the name of a save's folder until orbax renames it
UNFINISHED = "its save did not finish"  # the reason given for a checkpoint without checksums
EMPTY = "its directory is empty"
GONE = "its directory is gone"
# A reader beside a writer: how many times the steps are listed again after the writer
# deleted or was still saving the one being read, and the pause before looking again.
RELISTS = 10
SETTLE_SECONDS = 0.2
LATE_ECHO_SECONDS = 0.05  # how long a failed orbax call's echoes are waited for


def _crc32(path: str) -> int:
    crc = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 24):
            crc = zlib.crc32(block, crc)
    return crc


def _write_checksums(directory: str) -> None:
    paths = [os.path.join(root, name) for root, _, names in os.walk(directory) for name in names]
    sums = {os.path.relpath(path, directory): _crc32(path) for path in paths}
    files.atomic_write_json(os.path.join(directory, CHECKSUMS), sums)


def damage(directory: str) -> str | None:
    """What is wrong with a step directory's files by its checksums (None: nothing seen).
    One without them is refused: its bytes cannot be vouched for, and orbax restores
    overwritten array data without a sign."""
    path = os.path.join(directory, CHECKSUMS)
    if not os.path.exists(path):
        try:
            if not os.listdir(directory):
                return EMPTY
        except FileNotFoundError:  # deleted (by the run that wrote it) since it was listed
            return GONE
        return f"{UNFINISHED}: no {CHECKSUMS}, so the process stopped before writing them"
    try:
        with open(path) as handle:
            sums = dict(json.load(handle))
    except (OSError, ValueError, TypeError):
        return f"{CHECKSUMS} is damaged"
    if not sums:  # written from a walk of the saved files: never empty
        return f"{CHECKSUMS} lists no files"
    for relative, crc in sorted(sums.items()):
        try:  # another OSError (EIO, EMFILE) is no sign of damage: it is raised
            if _crc32(os.path.join(directory, relative)) != crc:
                return f"{relative} has changed since it was saved"
        except (FileNotFoundError, IsADirectoryError):  # or deleted while read, by the run that wrote it
            return GONE if not os.path.isdir(directory) else f"{relative} is missing"
    return None


def remove_unfinished_saves(directory: str) -> None:
    """Delete the temporary folders of saves that a killed process left in ``directory``
    (orbax would remove one only when the same step is saved again, with a warning). Call
    it only where this process is the one writer (a run directory it holds the lock of)."""
    for name in os.listdir(directory) if os.path.isdir(directory) else []:
        if TEMPORARY in name:
            shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


def _is_key(leaf) -> bool:
    return hasattr(leaf, "dtype") and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)


def _key_data(key):
    if isinstance(key, jax.Array):
        return jax.random.key_data(key)
    data = jax.eval_shape(jax.random.key_data, key)
    return jax.ShapeDtypeStruct(data.shape, data.dtype, sharding=key.sharding)


def _keys_to_data(tree):
    """Typed PRNG keys (or their shapes) become their uint32 data (what orbax can store)."""
    return jax.tree.map(lambda leaf: _key_data(leaf) if _is_key(leaf) else leaf, tree)


def _data_to_keys(tree, like):
    # The key's own algorithm: the default one would read an "rbg" key's 4 words as no key.
    return jax.tree.map(lambda leaf, ref: jax.random.wrap_key_data(leaf, dtype=ref.dtype) if _is_key(ref) else leaf,
                        tree, like)


NO_SPACE = "No space left on device"
# How tensorstore's errors carry the system's: "...: File too large [os_error_code='27']"
_SYSTEM_ERROR = re.compile(r":\s*([^:\[\]]+?)\s*\[os_error_code='?(\d+)'?\]")


_ORBAX_CODE = os.path.dirname(os.path.abspath(ocp.__file__)) + os.sep


def _raised_in_orbax(traceback) -> bool:
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename.startswith(_ORBAX_CODE):
            return True
        traceback = traceback.tb_next
    return False


def _not_an_orbax_echo(record: logging.LogRecord) -> bool:
    """False for a record of orbax's on a full disk; while orbax calls run here, for an error
    of orbax's that carries one of the system's (a file-size limit), and for asyncio's report
    of one of orbax's tasks collected with its error unretrieved (a failed read's or write's)."""
    try:
        text = record.pathname + record.getMessage() + str(record.exc_info[1] if record.exc_info else "")
        refused = NO_SPACE in text or (_orbax_calls_running and record.levelno >= logging.ERROR
                                       and _SYSTEM_ERROR.search(text))  # a warning of orbax's own is kept
        if refused and "orbax" in text:
            return False
        # asyncio's message: "Task exception was never retrieved", then the task on lines of its own
        unretrieved = record.name == "asyncio" and "exception was never retrieved" in record.getMessage()
        # tensorstore's errors have no Python frames; orbax stores its arrays in OCDBT files
        return not (_orbax_calls_running and unretrieved and record.exc_info
                    and (_raised_in_orbax(record.exc_info[2]) or "OCDBT database" in str(record.exc_info[1])))
    except Exception:  # a record that cannot be formatted: logging reports it, as ever
        return True


@functools.cache
def _quiet_orbax_echoes() -> None:
    """A write that fails for lack of space is reported by each of orbax's writing threads
    and again as each of its tasks is collected (some at exit), dozens of tracebacks in all,
    and a read of files deleted under it (a reader beside a training run) by each array's
    task; the call reports it in one line, so those echoes (absl's and asyncio's log
    records from orbax) are dropped."""
    for name in ("absl", "asyncio"):
        logging.getLogger(name).addFilter(_not_an_orbax_echo)


_orbax_calls_running = 0
_orbax_calls_lock = threading.Lock()
_unraisable_hook_outside_orbax = sys.unraisablehook  # set again while orbax runs


def _drop_orbax_echoes(report) -> None:
    closed_loop = report.exc_type is RuntimeError and str(report.exc_value) == "Event loop is closed"
    interrupt = isinstance(report.exc_value, KeyboardInterrupt)  # flags.run_command's hook notes it
    if interrupt or not (closed_loop or _raised_in_orbax(report.exc_traceback)):
        _unraisable_hook_outside_orbax(report)


@contextlib.contextmanager
def _orbax_echoes_dropped():
    """While saves or reads run (in any thread), tensorstore's callbacks into the event loop
    of a call that failed (and was closed) raise where no caller can catch them, and its
    unfinished tasks report their errors as they are collected; the call's own error says
    why. The hook is Python's again once the last call ends, after a failed one's leftovers
    are collected."""
    global _orbax_calls_running, _unraisable_hook_outside_orbax
    _quiet_orbax_echoes()
    with _orbax_calls_lock:
        if _orbax_calls_running == 0:
            _unraisable_hook_outside_orbax, sys.unraisablehook = sys.unraisablehook, _drop_orbax_echoes
        _orbax_calls_running += 1
    try:
        yield
    except BaseException as error:
        if not isinstance(error, MismatchedCheckpoint):  # read intact: no task of orbax's failed
            if isinstance(error, CheckpointError) and error.__suppress_context__:
                error.__context__ = None  # orbax's own error: its traceback holds the unfinished tasks
            # tensorstore's threads call back into the closed loop once their reads or writes
            # end, a moment after the call failed; collected, its unfinished tasks report.
            time.sleep(LATE_ECHO_SECONDS)
            gc.collect()
        raise
    finally:
        with _orbax_calls_lock:
            _orbax_calls_running -= 1
            if _orbax_calls_running == 0:
                sys.unraisablehook = _unraisable_hook_outside_orbax


def _while_steps_vanish(call: Callable[[], Any]) -> Any:
    """``call()`` (one that lists steps), again while a step deleted under orbax's listing
    by a writer beside this reader makes it fail."""
    for attempt in range(RELISTS):
        try:
            return call()
        except FileNotFoundError:
            if attempt == RELISTS - 1:
                raise
            time.sleep(SETTLE_SECONDS)


class Checkpoints:
    """``save(step, state, config)``, ``restore(like, config)`` (or ``restore_newest``,
    past damaged ones) and ``set_aside(step)`` (a damaged one) in ``directory`` (made
    unless ``create`` is False: a reader leaves a run as it is).

    ``upgrade`` maps a config read from a checkpoint to this version's form before it is
    compared with the caller's (``runs`` fills in fields added since, at their defaults,
    so that adding a config field leaves older runs readable)."""

    def __init__(self, directory: str, max_to_keep: int = 3, upgrade: Callable[[dict], dict] | None = None,
                 create: bool = True):
        if not (game.is_integer(max_to_keep) and max_to_keep >= 1):  # 0 kept every one ([:-0] is empty)
            raise ValueError(f"Checkpoints: max_to_keep must be a positive integer, got {max_to_keep!r}")
        _quiet_orbax_echoes()
        self.directory = os.path.abspath(directory)
        self.upgrade = upgrade or (lambda config: config)
        self.max_to_keep = max_to_keep
        self.manager = ocp.CheckpointManager(
            self.directory,
            # orbax would remove the old steps inside its save, before the new one's
            # checksums: a process killed between the two would leave only an unfinished
            # checkpoint. ``save`` removes them itself once the new one is finished.
            options=ocp.CheckpointManagerOptions(
                max_to_keep=None, create=create, enable_async_checkpointing=False
            ),
            # Handlers named up front, so that a new process can read a state's metadata
            # before it has saved or restored one.
            item_handlers={"state": ocp.StandardCheckpointHandler(), "config": ocp.JsonCheckpointHandler()},
        )

    def steps(self) -> list[int]:
        return sorted(self.manager.all_steps())

    @classmethod
    def reader(cls, directory: str, upgrade: Callable[[dict], dict] | None = None,
               beside_writer: bool = False) -> "Checkpoints":
        """Checkpoints of ``directory`` for reading (nothing is made there). ``beside_writer``
        as in ``restore_newest``: orbax's first listing is tried again while a step the
        writer deletes under it makes it fail."""
        def made() -> "Checkpoints":
            return cls(directory, upgrade=upgrade, create=False)

        return _while_steps_vanish(made) if beside_writer else made()

    def _listed_again(self) -> list[int]:
        """The steps on disk now (orbax caches them)."""
        def listed() -> list[int]:
            self.manager.reload()
            return self.steps()

        return _while_steps_vanish(listed)

    def save(self, step: int, state: Any, config: dict) -> None:
        """Whole or not at all: Ctrl-C during a save stops the program after it. A save that
        fails (a full disk) is a CheckpointError in one line; the earlier checkpoints stay.
        Only once the new one is finished (its checksums written) are the steps past
        ``max_to_keep`` removed."""
        earlier = self.steps()
        if step in earlier:  # orbax's refusal would have read as a failed save ("free space?")
            raise CheckpointError(f"checkpoint {step} exists in {self.directory}: a step is saved once")
        if len(earlier) >= self.max_to_keep and step < earlier[-self.max_to_keep]:  # else removed once saved
            raise CheckpointError(f"checkpoint {step} is older than the {self.max_to_keep} kept in {self.directory} "
                                  f"({', '.join(map(str, earlier[-self.max_to_keep:]))}), which would remove it as "
                                  "soon as it is saved: delete the later ones first")
        with processes.interrupt_deferred(), _orbax_echoes_dropped():
            try:
                self.manager.save(
                    step,
                    args=ocp.args.Composite(
                        state=ocp.args.StandardSave(_keys_to_data(state)), config=ocp.args.JsonSave(config)
                    ),
                    force=True,
                )
                self.manager.wait_until_finished()
                if jax.process_index() == 0:  # orbax has finished every process's files by now
                    _write_checksums(self._path(step))
            except Exception as error:  # orbax wraps the OSError in several types
                full = NO_SPACE in str(error)
                reason = "no space left on device" if full else _brief(error)
                kept = "the earlier checkpoints there are intact" if earlier else "none was saved there before it"
                raise CheckpointError(f"saving checkpoint {step} in {self.directory} failed ({reason}); {kept}: "
                                      f"{'free space' if full else 'fix the cause'} and resume") from error
            self._remove_old_steps(step)

    def _remove_old_steps(self, saved: int) -> None:
        """The oldest steps past ``max_to_keep``, on every process (orbax deletes on its
        primary one, then waits for the others). One that cannot be removed only takes disk
        space: a warning, and the run goes on."""
        for old in self.steps()[:-self.max_to_keep]:
            try:
                self.delete(old)
            except (OSError, CheckpointError) as error:
                if jax.process_index() == 0:
                    print(f"warning: checkpoint {saved} saved in {self.directory}, but removing the older checkpoint "
                          f"{old} failed ({_brief(error)}); it stays there until removed", file=sys.stderr)

    def _path(self, step: int) -> str:
        return os.path.join(self.directory, str(step))

    def restore(self, like: Any, config: dict, step: int | None = None, hint: str = "") -> tuple[int, Any]:
        """The newest (or given) checkpoint, shaped like ``like`` (e.g. a fresh state).

        Raises:
          CheckpointError: with a one-line reason when there is none or it was made with
            another config or state layout (MismatchedCheckpoint); UnreadableCheckpoint
            when it cannot be read, naming the other checkpoints that can (each checked
            by ``verify``, not restored), followed by ``hint`` if there are any.
        """
        steps = self.steps()
        if not steps:
            raise CheckpointError(f"no checkpoint in {self.directory}")
        step = steps[-1] if step is None else step
        if step not in steps:
            raise CheckpointError(f"no checkpoint {step} in {self.directory}; there are {steps}")
        try:
            return step, self.read(step, like, config)
        except UnreadableCheckpoint as error:
            intact = [s for s in steps if s != step and self.readable(s, like, config)]
            others = f"checkpoints {intact} are intact{hint}" if intact else "no other checkpoint can be read"
            raise UnreadableCheckpoint(f"{error}; {others}", step, error.reason) from None

    def restore_newest(self, like: Any, config: dict, beside_writer: bool = False,
                       ) -> tuple[int, Any, list[UnreadableCheckpoint]]:
        """The newest checkpoint that can be read, and why each newer one cannot.

        ``beside_writer``: another process may be saving here now (a run being trained), so
        a step that it deletes while this one reads it (``max_to_keep``), or the newest one
        before its checksums are written, is no damage: the steps are listed again.

        Raises:
          CheckpointError: when there is none, or the newest readable one was made with
            another config or state layout (MismatchedCheckpoint); NoReadableCheckpoint when
            none can be read.
        """
        steps = self._listed_again() if beside_writer else self.steps()
        relists = RELISTS if beside_writer else 0
        while True:
            if not steps:
                raise CheckpointError(f"no checkpoint in {self.directory}")
            damaged: list[UnreadableCheckpoint] = []
            for step in reversed(steps):
                try:
                    return step, self.read(step, like, config), damaged
                except UnreadableCheckpoint as error:
                    if relists and self._moved_on(step, steps, error):
                        break
                    damaged.append(error)
            else:
                raise NoReadableCheckpoint(self.directory, damaged)
            relists -= 1
            steps = self._listed_again()

    def _moved_on(self, step: int, steps: list[int], error: UnreadableCheckpoint) -> bool:
        """Whether a writer, not damage, made ``step`` unreadable: it is gone once the
        writer's deletion has had a moment, or it is the newest and its save not finished."""
        if error.reason == GONE:
            return True
        time.sleep(SETTLE_SECONDS)
        if not os.path.isdir(self._path(step)):
            return True
        return step == steps[-1] and (error.reason.startswith(UNFINISHED) or error.reason == EMPTY)

    def readable(self, step: int, like: Any, config: dict) -> bool:
        try:
            self.verify(step, like, config)
            return True
        except CheckpointError:
            return False

    def verify(self, step: int, like: Any, config: dict) -> None:
        """UnreadableCheckpoint or CheckpointError as ``read`` raises them for damaged files,
        another config or another layout of the state, without restoring the state (its
        checksums vouch for its files; a second copy of a whole state on a device costs
        memory and seconds)."""
        with _orbax_echoes_dropped():
            self._check(step, config, like)

    def _unreadable(self, step: int, reason: str) -> UnreadableCheckpoint:
        return UnreadableCheckpoint(f"checkpoint {step} in {self.directory} cannot be read ({reason})", step, reason)

    def _check(self, step: int, config: dict, like: Any) -> None:
        """UnreadableCheckpoint if the files are damaged, MismatchedCheckpoint if its config
        is another one or its state is not laid out as ``like``."""
        if damage_seen := damage(self._path(step)):
            raise self._unreadable(step, damage_seen)
        try:
            saved_config = self.manager.restore(step, args=ocp.args.Composite(config=ocp.args.JsonRestore()))["config"]
        except Exception as error:  # orbax raises several types for unreadable files
            raise self._unreadable(step, _brief(error)) from None
        saved_config = self.upgrade(saved_config)
        if saved_config != config:
            saved_flat, flat = _flatten(saved_config), _flatten(config)
            changed = sorted(k for k in set(saved_flat) | set(flat) if saved_flat.get(k) != flat.get(k))
            raise MismatchedCheckpoint(self.directory, step, f"was made with another config (differs in: "
                                                             f"{', '.join(changed)})",
                                       "use a new run directory or the same settings")
        self._check_layout(step, like)

    def _check_layout(self, step: int, like: Any) -> None:
        """MismatchedCheckpoint if the saved arrays' names, shapes or dtypes are not ``like``'s:
        a state saved by another version of the learner under the same config. orbax would
        refuse it too, but as an error indistinguishable from damaged files, which resume
        sets aside."""
        try:
            saved = self.manager.item_metadata(step)["state"]
            if saved is None:
                raise ValueError("its state has no metadata")
            stored = {leaf.name: (tuple(leaf.shape), np.dtype(leaf.dtype)) for leaf in
                      jax.tree.leaves(saved, is_leaf=lambda leaf: isinstance(leaf, ocp.metadata.ArrayMetadata))}
        except Exception as error:  # orbax raises several types for unreadable metadata
            raise self._unreadable(step, _brief(error)) from None
        wanted = _layout(like)
        missing, extra = sorted(set(wanted) - set(stored)), sorted(set(stored) - set(wanted))
        reshaped = sorted(name for name in set(stored) & set(wanted) if not _fits(stored[name], wanted[name]))
        if missing or extra or reshaped:
            parts = [f"{label}: {', '.join(names[:4])}{', ...' if len(names) > 4 else ''}" for label, names in
                     (("missing", missing), ("unexpected", extra), ("another shape or dtype", reshaped)) if names]
            raise MismatchedCheckpoint(self.directory, step, f"holds a state laid out otherwise than this "
                                                             f"learner's ({'; '.join(parts)})",
                                       "another version of jaxdust saved it: use a new run directory, or that version")

    def read(self, step: int, like: Any, config: dict) -> Any:
        """Checkpoint ``step``'s state, shaped like ``like`` (arrays, or ``jax.eval_shape``
        of them); UnreadableCheckpoint or CheckpointError (another config or layout)."""
        with _orbax_echoes_dropped():
            self._check(step, config, like)
            try:
                restored = self.manager.restore(
                    step, args=ocp.args.Composite(state=ocp.args.StandardRestore(_abstract(like))))
            except Exception as error:
                raise self._unreadable(step, _brief(error)) from None
        return _data_to_keys(restored["state"], like)

    def delete(self, step: int) -> None:
        """Remove checkpoint ``step`` whole: renamed out of orbax's sight first, so that a
        process killed while removing its files leaves no part of it to be read as a
        damaged step (a selected one set aside as such lost the run its selection), only a
        temporary folder, which the run's next start removes (``remove_unfinished_saves``)."""
        doomed = self._moved(step, TEMPORARY + "-deleted", "delete")
        if jax.process_index() == 0:
            shutil.rmtree(doomed, ignore_errors=True)

    def set_aside(self, step: int) -> str:
        """Rename a damaged checkpoint out of orbax's sight (kept for inspection, and its
        step can be saved again); returns the new path."""
        return self._moved(step, DAMAGED, "set_aside")

    def _moved(self, step: int, suffix: str, why: str) -> str:
        """Step ``step`` renamed to a free name ending ``suffix`` (``-2``, ``-3`` after it
        where taken), which orbax does not list; returns the new path."""
        if not os.path.isdir(self._path(step)):  # else the rename's error would ask for a writable folder
            steps = self._listed_again()
            raise CheckpointError(f"no checkpoint {step} in {self.directory}; "
                                  + (f"there are {', '.join(map(str, steps))}" if steps else "there is none"))
        target, copy = self._path(step) + suffix, 1
        while os.path.exists(target):
            copy += 1
            target = f"{self._path(step)}{suffix}-{copy}"
        if jax.process_count() > 1:  # every process has looked before process 0 renames: one name for all
            ocp.multihost.sync_global_processes(f"jaxdust {why} {step} looked")
        if jax.process_index() == 0:
            try:
                os.rename(self._path(step), target)
            except OSError as error:  # a read-only folder: nothing has moved
                raise CheckpointError(f"cannot move checkpoint {step} in {self.directory} out of the way "
                                      f"({error.strerror or _brief(error)}): make the folder writable and run "
                                      "again") from error
        if jax.process_count() > 1:
            ocp.multihost.sync_global_processes(f"jaxdust {why} {step}")
        self.manager.reload()  # it caches the steps; a stale one would refuse to save this step
        return target

    def close(self) -> None:
        self.manager.close()


def _abstract(like: Any) -> Any:
    """``like``'s arrays as shapes and dtypes (keys as their data); Python scalars as they are."""
    return jax.tree.map(ocp.utils.to_shape_dtype_struct, _keys_to_data(like))


def _layout(like: Any) -> dict[str, tuple[tuple[int, ...], np.dtype | None]]:
    """Array name (orbax's, e.g. ``train.params.params.MLP_0.Dense_0.bias``) -> (shape, dtype)
    of the state ``like`` as it would be saved. A Python scalar (a fresh flax ``TrainState``'s
    ``step``, saved after training as an array) fits any dtype: None."""
    abstract = _abstract(like)
    names = ocp.tree.get_param_names(abstract, include_empty_nodes=False)
    return {name: (tuple(leaf.shape), np.dtype(leaf.dtype)) if hasattr(leaf, "shape") else ((), None)
            for name, leaf in zip(jax.tree.leaves(names), jax.tree.leaves(abstract))}


def _fits(stored: tuple, wanted: tuple) -> bool:
    """Whether an array saved as ``stored`` restores as ``wanted``: (shape, dtype) pairs as
    ``_layout`` makes them (a None dtype fits any). A scalar counter (a step) fits any
    integer width: under ``jax_enable_x64`` a template's Python-int step is int64, where
    the run saved int32, or the other way round."""
    if stored[0] != wanted[0]:
        return False
    counters = wanted[0] == () and stored[1] is not None and wanted[1] is not None and stored[1].kind in "iu" \
        and wanted[1].kind in "iu"
    return wanted[1] in (None, stored[1]) or counters


def _flatten(tree: dict, prefix: str = "") -> dict:
    """``{"config": {"hidden": [8]}}`` -> ``{"config.hidden": [8]}``."""
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _brief(error: Exception) -> str:
    """``error``'s first line, or where tensorstore names the system's error (after a
    long path that a cut at 200 characters would keep instead), that error."""
    if system := _SYSTEM_ERROR.search(str(error)):
        return f"{system[1]}, errno {system[2]}"
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[:200]
