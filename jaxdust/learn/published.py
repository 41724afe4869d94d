"""Networks that ship with the package: a trained run's parameters, played by name.

A published network is a folder ``jaxdust/data/networks/NAME`` holding the run's
``config.json``, one checkpoint's network parameters (``params.msgpack``, flax's
serialization: no optimiser state, a third of a checkpoint) and ``published.json`` (where
they came from: the command that trained the run, the checkpoint, the jaxdust version, the
sha256 of the parameters). An agent plays one by ``@NAME`` where it takes a run directory
(``policy:@imitation-8x6x5``, ``value:@avi-8x6x5:64``), and ``load_run("@NAME")`` loads it,
so a trained network plays with no training first.

    python -m jaxdust.learn.published RUN_DIR NAME --command "python train.py ..." --trained "..."
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from typing import Any

import jax
import numpy as np
from flax import serialization

from jaxdust.core import files

NETWORKS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "networks")
PREFIX = "@"  # "@NAME" in place of a run directory
RECORD = "published.json"
PARAMS = "params.msgpack"


def names(networks_dir: str | None = None) -> list[str]:
    """The published networks' names (in ``networks_dir``, by default ``NETWORKS_DIR``), sorted."""
    networks_dir = networks_dir or NETWORKS_DIR
    if not os.path.isdir(networks_dir):
        return []
    return sorted(name for name in os.listdir(networks_dir)
                  if os.path.isfile(os.path.join(networks_dir, name, RECORD)))


def resolve(run: str, strict: bool = True, networks_dir: str | None = None) -> str:
    """The directory of ``run``: a published network's for ``@NAME``, ``run`` itself
    otherwise. ``strict``: ValueError naming the published ones for an unknown name
    (else its would-be folder, which holds no run)."""
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
    """A published network's ``published.json``."""
    with open(os.path.join(directory, RECORD), encoding="utf-8") as handle:
        return json.load(handle)


def read_params(directory: str, like: Any) -> Any:
    """The parameters of the published network in ``directory``, restored into the tree of
    ``like`` (arrays or ``jax.ShapeDtypeStruct``s of the learner's network).

    Raises:
      ValueError: the file's sha256 differs from the one published, or its parameters
        are not shaped as ``like``'s.
    """
    with open(os.path.join(directory, PARAMS), "rb") as handle:
        data = handle.read()
    expected = record(directory)["sha256"]
    if hashlib.sha256(data).hexdigest() != expected:
        raise ValueError(f"{os.path.join(directory, PARAMS)} is damaged: its sha256 is not the published {expected}")
    try:
        params = serialization.from_bytes(like, data)
    except ValueError:  # a key missing
        params = None
    if params is None or _layout(params) != _layout(like):
        raise ValueError(f"{directory}'s parameters are not shaped as its config.json's network (published by "
                         "another version of jaxdust?)")
    return jax.tree.map(jax.numpy.asarray, params)


def _layout(tree: Any) -> list[tuple[str, tuple[int, ...], str]]:
    return [(jax.tree_util.keystr(path), tuple(leaf.shape), str(np.dtype(leaf.dtype)))
            for path, leaf in jax.tree_util.tree_leaves_with_path(tree)]


def write(directory: str, params: Any, saved_config: dict, provenance: dict) -> None:
    """Write a published network into ``directory`` (made, or replaced whole): the run's
    ``saved_config`` (its config.json's content), ``params`` and ``provenance`` (what
    ``published.json`` says besides the sha256)."""
    data = serialization.to_bytes(jax.device_get(params))
    parent = os.path.dirname(os.path.abspath(directory))
    os.makedirs(parent, exist_ok=True)
    # Built beside it, then renamed in: no reader sees a network in part.
    staging = tempfile.mkdtemp(prefix=files.TEMPORARY_PREFIX, dir=parent)
    try:
        os.chmod(staging, 0o755)  # mkdtemp's folder is its owner's only; a package's data is everyone's
        files.atomic_write_json(os.path.join(staging, "config.json"), saved_config)
        files.atomic_write_bytes(os.path.join(staging, PARAMS), data)
        files.atomic_write_json(os.path.join(staging, RECORD),
                                {**provenance, "sha256": hashlib.sha256(data).hexdigest()})
        if os.path.exists(directory):
            shutil.rmtree(directory)
        os.rename(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def publish(run_dir: str, name: str, command: str, trained: str, by: str = "argmax",
            networks_dir: str | None = None) -> str:
    """Publish the checkpoint of ``run_dir`` that ``load_run`` selects ``by`` a measure of
    play as ``@name``; ``command`` is the one that trained the run, ``trained`` what it ran
    on (jaxdust's version, the machine, the date). Returns its directory."""
    from jaxdust.learn import runs  # runs loads published networks: imported here, not above

    if not name or os.sep in name or name.startswith((".", PREFIX)):
        raise ValueError(f"a published network's name is a plain folder name, not {name!r}")
    agent = runs.load_run(run_dir, by=by)
    with open(os.path.join(run_dir, "config.json"), encoding="utf-8-sig") as handle:
        saved_config = json.load(handle)
    from jaxdust import __version__
    provenance = {"command": command, "trained": trained, "checkpoint": agent.checkpoint, "selected_by": by,
                  "run_fingerprint": runs.fingerprint(run_dir), "published_by": f"jaxdust {__version__}"}
    directory = os.path.join(networks_dir or NETWORKS_DIR, name)
    write(directory, agent.params, saved_config, provenance)
    return directory


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jaxdust.learn.published",
                                     description="Publish a train.py run's selected checkpoint as @NAME.")
    parser.add_argument("run_dir", help="the run directory")
    parser.add_argument("name", help="the published name (played as @NAME)")
    parser.add_argument("--command", required=True, help="the command that trained the run, kept with it")
    parser.add_argument("--trained", required=True,
                        help="what trained it, kept with it: jaxdust's version, the machine, the date")
    parser.add_argument("--by", choices=("argmax", "greedy"), default="argmax",
                        help="the checkpoint the run selected by this measure of play (default: argmax)")
    parser.add_argument("--networks-dir", help="where published networks are kept (default: the package's "
                                               "jaxdust/data/networks)")
    args = parser.parse_args(argv)
    try:
        directory = publish(args.run_dir, args.name, args.command, args.trained, args.by, args.networks_dir)
    except ValueError as error:  # RunError is one
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(f"published {args.run_dir} as {PREFIX}{args.name} in {directory}", file=sys.stderr)


if __name__ == "__main__":
    main()
