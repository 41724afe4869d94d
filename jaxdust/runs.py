"""Load a trained run (a ``train.py`` run directory) as a policy and a scorer."""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

import jax

from jaxdust import checkpoint, dqn, imitation, learned


class TrainedAgent(NamedTuple):
    learner: str  # "dqn" or "imitation"
    config: Any  # the run's config dataclass
    params: Any  # network parameters from the newest checkpoint
    policy: Any  # policy(key, board, params): greedy play
    scorer: Any  # scorer(boards, params): clicks left, for the beam search
    step: int  # the checkpoint's chunk or epoch


def load_run(directory: str) -> TrainedAgent:
    """The newest checkpoint of a ``train.py`` run.

    Raises:
      ValueError: one line naming the problem (no run there, no checkpoint, a damaged or
        incompatible checkpoint).
    """
    config_path = os.path.join(directory, "config.json")
    if not os.path.exists(config_path):
        raise ValueError(f"{directory} is not a train.py run (no config.json)")
    with open(config_path) as handle:
        saved = json.load(handle)
    if "num_envs" in saved:
        learner, config_class = "dqn", dqn.DQNConfig
    elif "epochs" in saved:
        learner, config_class = "imitation", imitation.ImitationConfig
    else:
        raise ValueError(f"{config_path} belongs to no known learner")
    try:
        config = config_class(**{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()})
    except TypeError as error:
        raise ValueError(f"{config_path} does not match this version of jaxdust ({error})") from None

    if learner == "dqn":
        like = dqn.make_dqn(config)[0](jax.random.key(0))
    else:
        like = imitation.initial_state(config, jax.random.key(0))
    checkpoints = checkpoint.Checkpoints(os.path.join(directory, "checkpoints"))
    try:
        step, state = checkpoints.restore(like, checkpoint.config_json(config))
    except checkpoint.CheckpointError as error:
        raise ValueError(str(error)) from None
    finally:
        checkpoints.close()
    params = state.train.params if learner == "dqn" else state.params
    hidden = tuple(config.hidden)
    if learner == "dqn":
        policy = learned.QGreedy(hidden, config.colors, config.features)
        scorer = learned.QScorer(hidden, config.colors, config.features, config.clear_reward, config.click_reward)
    else:
        policy = learned.PolicyGreedy(hidden, config.colors, config.features)
        scorer = learned.ValueScorer(hidden, config.colors, config.features)
    return TrainedAgent(learner, config, params, policy, scorer, step)
