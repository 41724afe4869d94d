"""jaxdust: a JAX simulator, solvers and learners for the dust tile-clearing puzzle.

Rules and array conventions: RULES.md. Boards are int8 ``[width, height]`` arrays,
``board[x, y]`` with ``y = 0`` the bottom row, 0 empty and 1..colors colours.
"""

from jaxdust.board_io import board_to_text, parse_board, read_board_file, replay
from jaxdust.env import DustEnv, Observation, Rewards, State, StepType, TimeStep
from jaxdust.game import (
    GameConfig,
    apply_gravity,
    click,
    click_action,
    cluster_action_mask,
    cluster_labels,
    cluster_mask,
    cluster_sizes,
    contract,
    is_done,
    legal_action_mask,
    one_hot,
    random_board,
    slide_to_centre,
)
from jaxdust.render import BoardView, board_svg, board_text
from jaxdust.solve import Solution, solve
from jaxdust import baselines, beam, evaluation  # noqa: E402  (submodules used as jaxdust.beam etc.)

__version__ = "0.1.0"

__all__ = [
    "BoardView",
    "Solution",
    "DustEnv",
    "GameConfig",
    "Observation",
    "Rewards",
    "State",
    "StepType",
    "TimeStep",
    "apply_gravity",
    "board_svg",
    "board_text",
    "board_to_text",
    "click",
    "click_action",
    "cluster_action_mask",
    "cluster_labels",
    "cluster_mask",
    "cluster_sizes",
    "contract",
    "is_done",
    "legal_action_mask",
    "one_hot",
    "parse_board",
    "random_board",
    "read_board_file",
    "replay",
    "slide_to_centre",
    "solve",
]
