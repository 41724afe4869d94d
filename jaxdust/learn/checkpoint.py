"""Checkpoints of whole training runs with orbax (``CheckpointManager``).

A checkpoint holds the complete learner state (parameters, optimiser state, step, PRNG
keys, environment states, replay buffer) and the run's config as JSON. orbax writes each
step into a temporary directory and renames it when complete, so a process killed while
saving leaves the earlier checkpoints as they were; ``max_to_keep`` bounds the disk used.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import orbax.checkpoint as ocp


class CheckpointError(RuntimeError):
    """A checkpoint cannot be used (damaged, or made with another config)."""


def _is_key(leaf) -> bool:
    return isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)


def _keys_to_data(tree):
    """Typed PRNG keys become their uint32 data (what orbax can store)."""
    return jax.tree.map(lambda leaf: jax.random.key_data(leaf) if _is_key(leaf) else leaf, tree)


def _data_to_keys(tree, like):
    return jax.tree.map(lambda leaf, ref: jax.random.wrap_key_data(leaf) if _is_key(ref) else leaf, tree, like)


class Checkpoints:
    """``save(step, state, config)`` and ``restore(like, config)`` in ``directory``."""

    def __init__(self, directory: str, max_to_keep: int = 3):
        self.directory = os.path.abspath(directory)
        self.manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(
                max_to_keep=max_to_keep, create=True, enable_async_checkpointing=False
            ),
            item_names=("state", "config"),
        )

    def steps(self) -> list[int]:
        return sorted(self.manager.all_steps())

    def save(self, step: int, state: Any, config: dict) -> None:
        self.manager.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(_keys_to_data(state)), config=ocp.args.JsonSave(config)
            ),
            force=True,
        )
        self.manager.wait_until_finished()

    def restore(self, like: Any, config: dict, step: int | None = None) -> tuple[int, Any]:
        """The newest (or given) checkpoint, shaped like ``like`` (e.g. a fresh state).

        Raises:
          CheckpointError: with a one-line reason when there is none, it was made with
            another config, or it cannot be read (earlier ones are named).
        """
        steps = self.steps()
        if not steps:
            raise CheckpointError(f"no checkpoint in {self.directory}")
        step = steps[-1] if step is None else step
        if step not in steps:
            raise CheckpointError(f"no checkpoint {step} in {self.directory}; there are {steps}")
        earlier = [s for s in steps if s < step]
        hint = f"; earlier checkpoints {earlier} are intact (restore one with --resume-step)" if earlier else ""
        try:
            saved_config = self.manager.restore(step, args=ocp.args.Composite(config=ocp.args.JsonRestore()))["config"]
        except Exception as error:  # orbax raises several types for unreadable files
            raise CheckpointError(f"checkpoint {step} in {self.directory} cannot be read ({_brief(error)}){hint}") from None
        if saved_config != config:
            saved_flat, flat = _flatten(saved_config), _flatten(config)
            changed = sorted(k for k in set(saved_flat) | set(flat) if saved_flat.get(k) != flat.get(k))
            raise CheckpointError(
                f"checkpoint {step} in {self.directory} was made with another config "
                f"(differs in: {', '.join(changed)}); use a new run directory or the same settings"
            )
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, _keys_to_data(like))
        try:
            restored = self.manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract)))
        except Exception as error:
            raise CheckpointError(f"checkpoint {step} in {self.directory} cannot be read ({_brief(error)}){hint}") from None
        return step, _data_to_keys(restored["state"], like)

    def delete(self, step: int) -> None:
        self.manager.delete(step)

    def close(self) -> None:
        self.manager.close()


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
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text[:200]
