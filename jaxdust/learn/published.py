"""Networks that ship with the package: a trained run's parameters, played by name.

A published network is a folder ``jaxdust/data/networks/NAME`` holding the run's
``config.json``, the network parameters of the checkpoints the run selected (flax's
serialization, no optimiser state: ``params.msgpack`` from ``best/``, which ``value:`` and
``mcts:`` play, and ``params-argmax.msgpack`` from ``best-argmax/``, which ``policy:``
plays, where the run kept another checkpoint there) and ``published.json``: where they
came from (the command that trained the run, what it ran on, the checkpoints, the
publishing version) and the sha256 of every other file, checked on loading. An agent plays
one by ``@NAME`` where it takes a run directory (``policy:@imitation-8x6x5``,
``value:@avi-8x6x5:64``) and ``load_run("@NAME")`` loads it, as the run itself would play.

    python -m jaxdust.learn.published RUN_DIR NAME --command "python train.py ..." --trained "..."
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from typing import Any

import jax
import numpy as np
from flax import serialization

from jaxdust.core import files, flags

NETWORKS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "networks")
PREFIX = "@"  # "@NAME" in place of a run directory
RECORD = "published.json"
CONFIG = "config.json"
# The parameters each measure of play selects (runs.Selection), as load_run's ``by`` names it.
PARAMS = {"greedy": "params.msgpack", "argmax": "params-argmax.msgpack"}
# Names an agent list can hold: no ":" (value:@NAME:8), "," (lists), "@" (@newest) or "/".
REPAIR = "reinstall jaxdust for the networks it ships, or publish yours again (--replace)"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_CHECKPOINT = re.compile(r"[\w.-]+/\d+\Z")  # best/30, best-argmax/40, checkpoints/12


def names(networks_dir: str | None = None) -> list[str]:
    """The published networks' names (in ``networks_dir``, by default ``NETWORKS_DIR``), sorted."""
    networks_dir = networks_dir or NETWORKS_DIR
    if not os.path.isdir(networks_dir):
        return []
    return sorted(name for name in os.listdir(networks_dir)
                  if _NAME.match(name) and os.path.isfile(os.path.join(networks_dir, name, RECORD)))


def resolve(run: str | os.PathLike, strict: bool = True, networks_dir: str | None = None) -> str:
    """The directory of ``run`` (a string or a path): a published network's for ``@NAME``,
    ``run`` itself otherwise. ``strict``: ValueError naming the published ones for an
    unknown name (else its would-be folder, which holds no run)."""
    run = os.fsdecode(os.fspath(run))  # TypeError naming what it got for anything but a path
    if not run.startswith(PREFIX):
        return run
    name, networks_dir = run[len(PREFIX):], networks_dir or NETWORKS_DIR
    if not strict:
        return os.path.join(networks_dir, name)
    if name not in names(networks_dir):
        published = ", ".join(PREFIX + known for known in names(networks_dir)) or "none"
        raise ValueError(f"{run} is not a published network; published: {published}")
    return os.path.join(networks_dir, name)


def is_published(directory: str) -> bool:
    """Whether ``directory`` holds a published network rather than a run's checkpoints."""
    return os.path.isfile(os.path.join(directory, RECORD))


def record(directory: str) -> dict:
    """A published network's ``published.json``, checked for what loading it reads;
    ValueError naming the file otherwise."""
    path = os.path.join(directory, RECORD)
    try:
        with open(path, encoding="utf-8") as handle:
            saved = json.load(handle)
    except ValueError as error:
        raise ValueError(f"{path} is damaged ({error})") from None
    checkpoints = saved.get("checkpoints") if isinstance(saved, dict) else None
    digests = saved.get("sha256") if isinstance(saved, dict) else None
    if not (isinstance(checkpoints, dict) and set(checkpoints) == set(PARAMS)
            and all(isinstance(c, str) and _CHECKPOINT.match(c) for c in checkpoints.values())
            and isinstance(digests, dict) and {CONFIG, PARAMS["greedy"]} <= set(digests)):
        raise ValueError(f"{path} is damaged: it names no checkpoint of each selection, or no sha256 of "
                         f"{CONFIG} and {PARAMS['greedy']}")
    return saved


def selection(directory: str, by: str) -> str:
    """The measure whose parameters play for ``by``: ``"argmax"`` where the network holds a
    checkpoint of its own for it, else ``"greedy"`` (the run kept one for both)."""
    return "argmax" if by == "argmax" and PARAMS["argmax"] in record(directory)["sha256"] else "greedy"


def read_params(directory: str, like: Any, measure: str = "greedy") -> tuple[Any, int, str]:
    """The parameters of the measure of play ``measure`` (as ``selection`` gives it) in the
    published network in ``directory``, restored into the tree of ``like`` (arrays or
    ``jax.ShapeDtypeStruct``s of the learner's network), the run's step they were saved at
    and their file's name.

    Raises:
      ValueError: a file is missing or differs from its published sha256 (its config.json
        too; ``verified_bytes``), or the parameters are not shaped as ``like``'s.
    """
    saved = record(directory)
    verified_bytes(directory, CONFIG, saved)  # the parameters are read as that config's network
    data = verified_bytes(directory, PARAMS[measure], saved)
    try:
        params = serialization.from_bytes(like, data)
    except ValueError:  # a key missing
        params = None
    if params is None or _layout(params) != _layout(like):
        raise ValueError(f"{directory}'s parameters are not shaped as its {CONFIG}'s network (published by "
                         "another version of jaxdust?)")
    step = int(saved["checkpoints"][measure].rpartition("/")[2])
    return jax.tree.map(jax.numpy.asarray, params), step, PARAMS[measure]


def verified_bytes(directory: str, name: str, saved: dict | None = None) -> bytes:
    """The published network's file ``name`` as it was published: ValueError in one line
    where it is not among the network's files, cannot be read, or differs from its sha256.
    ``saved``: its ``record``, where the caller has read it already."""
    digest = (saved or record(directory))["sha256"].get(name)
    path = os.path.join(directory, name)
    if digest is None:
        raise ValueError(f"{directory} publishes no {name} (published.json names no sha256 of it)")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise ValueError(f"{path} cannot be read ({error.strerror or error}); {REPAIR}") from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError(f"{path} is damaged: its sha256 is not the published one; {REPAIR}")
    return data


def _layout(tree: Any) -> list[tuple[str, tuple[int, ...], str]]:
    return [(jax.tree_util.keystr(path), tuple(leaf.shape), str(np.dtype(leaf.dtype)))
            for path, leaf in jax.tree_util.tree_leaves_with_path(tree)]


def write(directory: str, contents: dict[str, bytes], provenance: dict, replace: bool = False) -> None:
    """Write a published network into ``directory``: ``contents`` (file name -> bytes: its
    config.json and parameters) and ``published.json`` (``provenance`` and their sha256s).
    ValueError where ``directory`` exists, unless ``replace``."""
    if os.path.exists(directory) and not replace:
        raise ValueError(f"{directory} exists: pass replace (--replace) to publish over it")
    parent = os.path.dirname(os.path.abspath(directory))
    os.makedirs(parent, exist_ok=True)
    # Built beside it and renamed in, so no reader sees a network in part (a replaced one is
    # renamed aside first: gone for that moment, never mixed).
    staging = tempfile.mkdtemp(prefix=files.TEMPORARY_PREFIX, dir=parent)
    old = None
    try:
        os.chmod(staging, 0o777 & ~files.current_umask())  # mkdtemp's folder is its owner's only: as mkdir makes one
        for name, data in contents.items():
            files.atomic_write_bytes(os.path.join(staging, name), data)
        digests = {name: hashlib.sha256(data).hexdigest() for name, data in contents.items()}
        files.atomic_write_json(os.path.join(staging, RECORD), {**provenance, "sha256": digests})
        if os.path.exists(directory):
            old = tempfile.mkdtemp(prefix=files.TEMPORARY_PREFIX, dir=parent)
            os.rename(directory, os.path.join(old, "network"))
        os.rename(staging, directory)
    except BaseException:
        # A swap that fails half way puts the replaced network back: it is never lost.
        if old is not None and not os.path.exists(directory):
            os.rename(os.path.join(old, "network"), directory)
        for left in (staging, old):
            if left is not None:
                shutil.rmtree(left, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old)


def publish(run_dir: str, name: str, command: str, trained: str, networks_dir: str | None = None,
            replace: bool = False) -> str:
    """Publish the checkpoints ``run_dir`` selected (``best/``, and ``best-argmax/`` where its
    parameters differ) as ``@name``; ``command`` is the one that trained the run, ``trained`` what it
    ran on (jaxdust's version, the machine, the date). Returns the network's directory.
    ValueError for a name an agent list cannot hold, a blank ``command`` or ``trained``, a
    source that is no run (or is a published network) or has no selected checkpoint that
    can be read (a run stopped before its first evaluation), or an existing network unless
    ``replace``."""
    from jaxdust import __version__
    from jaxdust.learn import runs  # runs loads published networks: imported here, not above

    if not _NAME.match(name):
        raise ValueError(f"a published network's name is letters, digits, '.', '_' and '-', not starting with "
                         f"'.', '_' or '-': not {name!r}")
    for what, text in (("command", command), ("trained", trained)):  # the network's record of where it came from
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{what} must say {'what trained the run' if what == 'command' else 'what it ran on'}, "
                             f"got {text!r}")
    if os.fspath(run_dir).startswith(PREFIX):
        raise ValueError(f"{run_dir} names a published network: publish the run it was made from (a run folder "
                         f"of that name is ./{run_dir})")
    if is_published(run_dir):
        raise ValueError(f"{run_dir} is a published network already: publish the run it was made from")
    played = {measure: runs.load_run(run_dir, by=measure) for measure in PARAMS}
    # load_run plays the newest checkpoint where no selection can be read: no run should
    # ship that as what it selected.
    unselected = {measure: agent.checkpoint for measure, agent in played.items()
                  if agent.checkpoint.split(os.sep)[0] not in runs.SELECTED_DIRS.values()}
    if unselected:
        raise ValueError(f"{run_dir} holds no selected checkpoint by {' or '.join(unselected)} play that can be read "
                         f"(its {' and '.join(runs.SELECTED_DIRS.values())} folders are empty or damaged, so the "
                         f"newest, {', '.join(sorted(set(unselected.values())))}, would be published): train it on "
                         "with --resume to its next evaluation, or publish a finished run")
    with open(os.path.join(run_dir, CONFIG), encoding="utf-8-sig") as handle:
        saved_config = json.load(handle)
    contents = {CONFIG: files.json_bytes(saved_config)}
    for measure, agent in played.items():
        data = serialization.to_bytes(jax.device_get(agent.params))
        if data != contents.get(PARAMS["greedy"]):  # best-argmax/ often holds best/'s step
            contents[PARAMS[measure]] = data
    provenance = {"command": command, "trained": trained,
                  "checkpoints": {measure: agent.checkpoint for measure, agent in played.items()},
                  "run_fingerprint": runs.fingerprint(run_dir), "published_by": f"jaxdust {__version__}"}
    directory = os.path.join(networks_dir or NETWORKS_DIR, name)
    write(directory, contents, provenance, replace)
    return directory


def build_parser() -> flags.Parser:
    parser = flags.Parser(prog="python -m jaxdust.learn.published",
                          description="Publish a train.py run's selected checkpoints as @NAME (a maintainer's "
                                      "tool: by default into the package's own jaxdust/data/networks).")
    parser.add_argument("run_dir", help="the run directory")
    parser.add_argument("name", help="the published name (played as @NAME)")
    parser.add_argument("--command", required=True, help="the command that trained the run, kept with it")
    parser.add_argument("--trained", required=True,
                        help="what trained it, kept with it: jaxdust's version, the machine, the date")
    parser.add_argument("--networks-dir", type=flags.output_dir,
                        help="where published networks are kept (default: the package's jaxdust/data/networks); "
                             "@NAME plays the package's only: play one kept elsewhere by its folder "
                             "(policy:DIR/NAME)")
    parser.add_argument("--replace", action="store_true", help="publish over a network of that name")
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        directory = publish(args.run_dir, args.name, args.command, args.trained, args.networks_dir, args.replace)
    except (ValueError, OSError) as error:  # RunError is a ValueError
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(f"published {args.run_dir} as {PREFIX}{args.name} in {directory}", file=sys.stderr)


if __name__ == "__main__":
    main()
