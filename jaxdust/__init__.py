"""jaxdust: a JAX simulator, solvers and learners for the dust tile-clearing puzzle and its
family (Former, SameGame, Clickomania: ``GameConfig.rules``).

Rules and array conventions: RULES.md. Boards are int8 ``[width, height]`` arrays,
``board[x, y]`` with ``y = 0`` the bottom row, 0 empty and 1..colors colours.

The package is layered; each layer imports only the ones above it in this list:

- ``jaxdust.core``: the rules (``game``), the environment (``env``), rollouts of a policy
  (``play``), board text and files (``boards``), pictures (``render``), atomic files.
- ``jaxdust.search``: the hand-made heuristic, the batched JAX beam searches (fewest clicks;
  points and cells left) and Gumbel MuZero over the simulator.
- ``jaxdust.solver``: exact and depth-first search on bitboards (numba), ``solve``.
- ``jaxdust.learn``: networks, learners, data sets, checkpoints and trained runs.
- ``jaxdust.evaluation``: baselines, the agent registry, statistics and plots.

The names below are the everyday API.
"""

from jaxdust.core import flags as _flags

_flags.note_swallowed_interrupts()  # before JAX is imported: its garbage-collector callback swallows Ctrl-C

from jaxdust.core.boards import (UnsettledBoardError, board_to_text, parse_board, positions, read_board_file, replay,
                                 score)
from jaxdust.core.env import DustEnv, Observation, Rewards, State, StepType, TimeStep
from jaxdust.core.game import (
    RULES,
    BoardLike,
    GameConfig,
    Rules,
    apply_gravity,
    click,
    click_action,
    cluster_action_mask,
    cluster_labels,
    cluster_mask,
    cluster_sizes,
    contract,
    is_done,
    is_over,
    legal_action_mask,
    one_hot,
    random_board,
    random_boards,
    settle,
    slide_to_centre,
)
from jaxdust.core.play import PlayResult, play_boards
from jaxdust.core.registry import make, registered
from jaxdust.core.render import BoardView, board_letters, board_rgb, board_svg, game_gif
from jaxdust.search.beam import BeamResult, beam_search
from jaxdust.search.points import PointsResult, points_beam
from jaxdust.solver.api import Solution, solve

__version__ = "0.2.94"

__all__ = [
    "BeamResult",
    "BoardLike",
    "BoardView",
    "DustEnv",
    "GameConfig",
    "RULES",
    "Rules",
    "Observation",
    "PlayResult",
    "PointsResult",
    "Rewards",
    "Solution",
    "State",
    "StepType",
    "TimeStep",
    "UnsettledBoardError",
    "apply_gravity",
    "beam_search",
    "board_letters",
    "board_rgb",
    "board_svg",
    "board_to_text",
    "click",
    "click_action",
    "cluster_action_mask",
    "cluster_labels",
    "cluster_mask",
    "cluster_sizes",
    "contract",
    "game_gif",
    "is_done",
    "is_over",
    "legal_action_mask",
    "make",
    "one_hot",
    "parse_board",
    "play_boards",
    "points_beam",
    "positions",
    "random_board",
    "random_boards",
    "read_board_file",
    "registered",
    "replay",
    "score",
    "settle",
    "slide_to_centre",
    "solve",
]
