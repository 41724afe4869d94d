"""Named environments: ``jaxdust.make("Dust-8x6x5-v0")``.

An id names the rule set, the board (width x height x colours) and the version of the rules
(RULES.md; ``v0`` is the only one so far), so a result reported against an id stays
comparable. Each registered id is a ``DustEnv`` with a click cap of four clicks per cell (a
game of random clicks always ends) and auto-reset off; keyword arguments to ``make``
override any field.

    env = jaxdust.make("Dust-6x6x5-v0", auto_reset=True)
    jaxdust.make("SameGame-15x15x5-v0")  # the research benchmark's size, scored in points
    jaxdust.registered()  # ['Dust-6x6x5-v0', ..., 'Former-7x9x4-v0', 'SameGame-15x15x5-v0', ...]
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxdust.core.env import DustEnv
from jaxdust.core.flags import INT32_LIMIT
from jaxdust.core.game import GameConfig

RULES_VERSION = "v0"

_REGISTRY: dict[str, DustEnv] = {}


def register(env_id: str, env: DustEnv) -> None:
    """Add ``env`` under ``env_id``; ValueError if the id is taken by another env,
    TypeError for an id that is not a string (``make`` takes strings only)."""
    if not isinstance(env_id, str):
        raise TypeError(f"register needs a string id, got {type(env_id).__name__} {env_id!r}")
    if not isinstance(env, DustEnv):
        raise TypeError(f"register needs a DustEnv, got {type(env).__name__}")
    if _REGISTRY.get(env_id, env) != env:
        raise ValueError(f"{env_id!r} is already registered as {_REGISTRY[env_id]}")
    _REGISTRY[env_id] = env


def registered() -> list[str]:
    """The ids ``make`` knows, in the order they were registered."""
    return list(_REGISTRY)


def as_env(env: DustEnv | str) -> DustEnv:
    """``env`` itself, or the environment registered under that id (for APIs that take either)."""
    env = make(env) if isinstance(env, str) else env
    if not isinstance(env, DustEnv):
        raise TypeError(f"expected a DustEnv or a registered id, got {type(env).__name__}")
    return env


def make(env_id: str, **overrides: Any) -> DustEnv:
    """The environment registered as ``env_id``, with ``overrides`` (any ``DustEnv`` field;
    with another ``game`` and no ``max_clicks``, an id capped at four clicks a cell, as the
    built-in ones are, keeps that rule for the board given).

    Raises:
      ValueError: for an unknown id (the message lists the known ones), an unknown field, an
        override out of range (``max_clicks=0``), or a ``game`` of other rules than the id's.
      TypeError: for an override of the wrong type (``max_clicks="5"``, ``game="6x6x5"``),
        as ``DustEnv`` itself raises.
    """
    if not isinstance(env_id, str) or env_id not in _REGISTRY:
        raise ValueError(f"unknown environment {env_id!r}; registered: {', '.join(registered())}")
    fields = {field.name for field in dataclasses.fields(DustEnv)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(f"DustEnv has no field(s) {', '.join(unknown)}; fields: {', '.join(sorted(fields))}")
    registered_env = _REGISTRY[env_id]
    game = overrides.get("game")
    if isinstance(game, GameConfig) and game.rules != registered_env.game.rules:  # an id names its rules
        own = registered_env.game.rules
        others = [name for name in registered() if _REGISTRY[name].game.rules == game.rules]
        instead = f", or an id of the {game.rules} rules ({others[0]})" if others else ""
        raise ValueError(f"{env_id} plays the {own} rules, but game= plays the {game.rules} rules: give "
                         f"GameConfig({game.width}, {game.height}, {game.colors}, {own!r}){instead}")
    if (isinstance(game, GameConfig) and "max_clicks" not in overrides
            and registered_env.max_clicks == CLICKS_PER_CELL * registered_env.game.num_cells):
        # The id's cap is four clicks a cell: another board keeps that rule, not the number
        # (within the int32 a state counts clicks in).
        overrides["max_clicks"] = min(CLICKS_PER_CELL * game.num_cells, INT32_LIMIT - 1)
    return dataclasses.replace(registered_env, **overrides)


ID_PREFIX = {"dust": "Dust", "former": "Former", "samegame": "SameGame", "clickomania": "Clickomania"}

# The click cap of every registered id: a game of random legal clicks ends well before it;
# uniformly random clicks (wasted ones too) can reach it.
CLICKS_PER_CELL = 4

# The dust game's board sets in data/boards and the sizes of the throughput table; NRK's
# daily Former puzzle; the SameGame research benchmark's size; a Clickomania size.
for _game in [*(GameConfig(_width, _height, 5) for _width, _height in ((6, 6), (8, 4), (8, 6), (10, 10), (15, 15))),
              GameConfig(7, 9, 4, "former"), GameConfig(15, 15, 5, "samegame"), GameConfig(10, 10, 4, "clickomania")]:
    register(f"{ID_PREFIX[_game.rules]}-{_game.size_text}-{RULES_VERSION}",
             DustEnv(game=_game, max_clicks=CLICKS_PER_CELL * _game.num_cells))
