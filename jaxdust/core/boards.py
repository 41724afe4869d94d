"""Boards in and out: validated parsing, the RULES.md text form, board files, replays.

These run on the host (plain Python around NumPy) and raise ``ValueError`` naming what is
wrong, so a bad board never reaches a jitted function.
"""

from __future__ import annotations

import collections.abc
import difflib
import functools
import operator
import os
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple, overload

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import files, game

DEFAULT_SHAPE = (game.GameConfig().width, game.GameConfig().height)
# The board sets (RULES.md): a fixed 8x6x5 evaluation set and boards with proven optima.
# jaxdust/data links to the repository's data/ folder, so an installed wheel carries them.
BOARDS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "boards")
EVAL_FILE = os.path.join(BOARDS_DIR, "eval_8x6x5.txt")


def _shape_from_length(length: int, width: int | None, height: int | None) -> tuple[int, int]:
    if width is None and height is None:
        width, height = DEFAULT_SHAPE
        if length != width * height:
            raise ValueError(
                f"board text has {length} digits: give its width and height (a '# width=W height=H' line "
                f"above it in a file, parse_board(text, width, height), the solver's --width/--height, "
                f"evaluate.py's --env; only {width * height} digits default to {width}x{height})"
            )
    elif width is None:
        assert height is not None
        if height <= 0 or length % height:
            raise ValueError(f"board text has {length} digits, not a multiple of height={height}")
        width = length // height
    elif height is None:
        if width <= 0 or length % width:
            raise ValueError(f"board text has {length} digits, not a multiple of width={width}")
        height = length // width
    if width * height != length:
        raise ValueError(f"board text has {length} digits but width*height = {width}*{height}")
    return width, height


def _text_to_array(text: str, width: int | None, height: int | None) -> np.ndarray:
    digits = text.strip()
    bad = next((i for i, ch in enumerate(digits) if ch not in "0123456789"), None)
    if bad is not None:
        place = bad + len(text) - len(text.lstrip())  # counted in the text as given
        raise ValueError(f"board text has {digits[bad]!r} at position {place}; expected digits 0-9")
    if not digits:
        raise ValueError("board text is empty")
    width, height = _shape_from_length(len(digits), width, height)
    return np.frombuffer(digits.encode(), np.uint8).astype(np.int64).reshape(width, height) - 48


class UnsettledBoardError(ValueError):
    """A board that ``game.settle`` under the rules played would change: a position those
    rules never make. Its own type so a caller can tell it from other bad input (e.g. a
    file of one game's boards played under another's rules)."""


def _check_settled(board: np.ndarray, rules: str = "dust") -> None:
    """``UnsettledBoardError`` naming the first cell or line that ``game.settle`` under
    ``rules`` would move."""
    width, height = board.shape
    occupied = board != 0
    advice = f"a board must be settled under the {rules} rules (call jaxdust.contract(board, rules={rules!r}) first)"
    floating = occupied[:, 1:] & ~occupied[:, :-1]
    if floating.any():
        x, y = np.argwhere(floating)[0]
        raise UnsettledBoardError(f"cell ({x}, {y + 1}) floats above an empty cell; {advice}")
    sideways = game.rules_of(rules).sideways
    if sideways == "left":
        filled = occupied[:, 0]
        if filled.any() and not filled[: width - int(np.argmax(filled[::-1]))].all():
            x = int(np.argmin(filled))
            raise UnsettledBoardError(f"column x={x} is empty but a column right of it is not; {advice}")
    if sideways != "centre":
        return
    half = width // 2
    for y in range(height):
        row = occupied[:, y]
        left, right = row[:half], row[half:]
        # Settled rows are solid runs that touch the centre line from both sides.
        if left.any() and not left[int(np.argmax(left)) :].all():
            raise UnsettledBoardError(f"row y={y}: the left half has a gap before the centre; {advice}")
        if right.any() and not right[: len(right) - int(np.argmax(right[::-1]))].all():
            raise UnsettledBoardError(f"row y={y}: the right half has a gap after the centre; {advice}")


def require_settled(boards, rules: str = "dust", caller: str = "") -> None:
    """``_check_settled``'s ``UnsettledBoardError`` for the first unsettled board of ``boards``
    ``[..., W, H]``, led by ``"<caller>: "`` and, in a batch, ``"board <index>: "``; the
    batch is screened at once, so a large settled batch costs one pass over its cells.
    Boards traced under ``jit`` have no values to look at and pass."""
    if isinstance(boards, jax.core.Tracer):
        return
    one_board = np.ndim(boards) == 2
    boards = np.asarray(boards).reshape((-1, *np.shape(boards)[-2:]))
    occupied = boards != 0
    unsettled = np.any(occupied[:, :, 1:] & ~occupied[:, :, :-1], axis=(1, 2))  # a cell above a hole
    sideways = game.rules_of(rules).sideways
    if sideways == "left":  # an empty column left of a filled one
        filled = occupied[:, :, 0]
        filled_right = np.logical_or.accumulate(filled[:, ::-1], axis=1)[:, ::-1]
        unsettled |= np.any(~filled[:, :-1] & filled_right[:, 1:], axis=1)
    elif sideways == "centre":  # a hole between a half's cells and the centre
        half = occupied.shape[1] // 2
        left, right = occupied[:, :half], occupied[:, half:]
        unsettled |= np.any(left[:, :-1] & ~left[:, 1:], axis=(1, 2))
        unsettled |= np.any(~right[:, :-1] & right[:, 1:], axis=(1, 2))
    if unsettled.any():
        index = int(np.argmax(unsettled))
        try:
            _check_settled(boards[index], rules)
        except UnsettledBoardError as error:
            where = "" if one_board else f"board {index}: "
            raise UnsettledBoardError(f"{caller}: {where}{error}" if caller else f"{where}{error}") from None


def _wrapped_field(model, name: str, wanted):
    """``model``'s own field ``name`` where ``wanted(value)``, or that of the network,
    evaluator or scorer it wraps (``network``, ``evaluate``, a lookahead's ``base``); None
    where none has one."""
    for _ in range(4):  # an MCTSPolicy wraps an evaluator that wraps a network
        value = getattr(model, name, None)
        if wanted(value):
            return value
        model = getattr(model, "network", None) or getattr(model, "evaluate", None) or getattr(model, "base", None)
        if model is None:
            return None
    return None


def model_colors(model) -> int | None:
    """The colours a network-backed policy, scorer or evaluator was built for: its own
    ``colors``, or that of the network, evaluator or scorer it wraps (``network``,
    ``evaluate``, ``base``); None for one that does not say (the hand-made ones play any colours)."""
    colors = _wrapped_field(model, "colors", game.is_integer)
    return None if colors is None else int(colors)


def model_rules(model) -> str | None:
    """The rule set a network-backed policy, scorer or evaluator says it was trained under
    (a ``lookahead_scorer``: the rules it plays its click under): its own ``trained_rules``
    or that of what it wraps (``load_run``'s agents say them), else
    its network's ``prior_rules`` where those are not the dust game's (a network keeps the
    rules there only with its rule prior on, ``avi``'s default; one that says "dust" may
    have been trained under any rules), else None."""
    said = _wrapped_field(model, "trained_rules", lambda value: isinstance(value, str))
    if said is not None:
        return said
    rules = _wrapped_field(model, "prior_rules", lambda value: isinstance(value, str))
    return None if rules in (None, "dust") else rules


def require_model_rules(model, rules: str, caller: str) -> None:
    """ValueError where ``model`` says it was trained under other rules than ``rules``
    (``model_rules``)."""
    trained = model_rules(model)
    if trained is not None and trained != rules:
        raise ValueError(f"{caller}: the network (or lookahead) given was trained under (or plays) the {trained} "
                         f"rules, and rules={rules!r} was asked (pass rules={trained!r})")


def require_hashable(model, name: str, caller: str) -> None:
    """TypeError where ``model`` cannot be hashed: it is a static argument of a compiled
    program, and JAX's own error ("Non-hashable static arguments") names neither the
    argument nor what to give instead."""
    try:
        hash(model)
    except TypeError as error:  # "unhashable type: 'numpy.ndarray'" where a frozen dataclass holds an array
        raise TypeError(f"{caller}: {name} must be hashable, as a compiled program's static arguments are (a "
                        f"module-level function or a frozen dataclass of hashable fields), got "
                        f"{type(model).__name__} ({error})") from None


def require_model_fits(boards, model, rules: str, caller: str) -> None:
    """ValueError where ``model``'s network was built for other boards than ``boards``
    (``require_model_shape``) or other rules than ``rules`` (``require_model_rules``: a
    Former network played under the dust game's default rules gives plausible numbers of
    the wrong game)."""
    require_model_rules(model, rules, caller)
    require_model_shape(boards, model, caller)


def require_model_shape(boards, model, caller: str) -> None:
    """ValueError where ``boards`` (``[..., W, H]``) are of another width and height than
    ``model``'s ``trained_size`` (where it says one) or hold colours above its
    ``model_colors`` (it one-hots such a colour as no colour at all and plays on without a
    word), or below 0. Boards traced under ``jit`` pass the colour check, as in
    ``require_settled``."""
    size = _wrapped_field(model, "trained_size", lambda value: isinstance(value, tuple) and len(value) == 2)
    shape = tuple(np.shape(boards)[-2:])  # known under jit too
    if size is not None and shape != tuple(size):
        # A board of another shape failed inside flax, and one of the same cells transposed
        # (6x8 for 8x6) played on, its cells fed to the network in the wrong places.
        raise ValueError(f"{caller}: the boards are {shape[0]}x{shape[1]}, but the network was trained on "
                         f"{size[0]}x{size[1]} boards (play it on boards of the size and colours it was trained on)")
    colors = model_colors(model)
    if colors is None or isinstance(boards, jax.core.Tracer) or not np.size(boards):
        return
    cells = np.asarray(boards)
    most, least = int(np.max(cells)), int(np.min(cells))
    if most > colors:
        raise ValueError(f"{caller}: the boards hold colour {most}, but the network was built for {colors} colours "
                         f"(play it on boards of the size and colours it was trained on)")
    if least < 0:  # the agents take a board as a JAX array, whose int8 colours nothing else checks
        raise ValueError(f"{caller}: the boards hold {least}; a cell is 0 (empty) or a colour 1..{colors}")


def parse_board(data: str | game.BoardLike, width: int | None = None, height: int | None = None,
                rules: str = "dust") -> jax.Array:
    """A validated board: int8 ``[width, height]``, settled under ``rules`` (RULES.md).

    Args:
      data: the RULES.md text form (``width*height`` digits, x-major: cell ``(x, y)`` is
        character ``x*height + y``), nested lists indexed ``[x][y]``, or an integer array of
        shape ``[width, height]``.
      width, height: required for text unless it has 48 digits (the default 8x6) or one of
        them can be inferred from the length; for arrays they are checked when given.

    Raises:
      ValueError: naming the problem (shape, dtype, a value outside 0..9, unknown rules, a
        floating cell, a row not packed against the centre (dust) or an empty column left
        of a filled one (samegame, clickomania)).
    """
    # Narrowed on the host: JAX's own int64-to-int8 conversion dispatches an op per board.
    return jnp.asarray(_checked_board(data, width, height, rules).astype(np.int8))


def _checked_board(data: str | game.BoardLike, width: int | None, height: int | None, rules: str) -> np.ndarray:
    """``parse_board``'s checks, on the host only: the numba solvers' boards start no JAX
    backend (in a worker forked from a process that used JAX, starting it never returns)."""
    game.rules_of(rules)
    for name, value in (("width", width), ("height", height)):
        if value is not None and (not game.is_integer(value) or value < 1):
            raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    if isinstance(data, jax.core.Tracer):  # numpy's conversion error read as a ragged board
        raise ValueError("the board is traced (inside jit, vmap or grad): parse_board, and positions, replay, score "
                         "and solve built on it, read boards on the host; call them outside the transform")
    if isinstance(data, (bytes, bytearray)):  # numpy would make one string of it, "dtype |S48"
        raise ValueError(f"board is {type(data).__name__}; pass its text (data.decode()) or an array")
    if isinstance(data, str):
        array = _text_to_array(data, width, height)
    else:
        try:
            array = np.asarray(data)
        except (ValueError, TypeError) as error:  # ragged nested lists
            raise ValueError(f"board is not a rectangular array: {error}") from None
        if array.dtype == object:  # an array of Python objects, or lists holding None or strings
            raise ValueError("board must hold integers 0-9, got dtype object (for an array of Python ints: "
                             "np.asarray(board, dtype=int))")
        if not game.holds_integers(array.dtype):
            raise ValueError(f"board must hold integers 0-9, got dtype {array.dtype}")
        if array.ndim != 2:
            raise ValueError(f"board must be 2-D [width, height], got shape {array.shape}")
        expected = (width or array.shape[0], height or array.shape[1])
        if array.shape != expected:
            raise ValueError(f"board has shape {array.shape}, expected {expected}")
    if array.shape[0] < 2 or array.shape[1] < 1:
        raise ValueError(f"board must be at least 2 wide and 1 high, got shape {array.shape}")
    game.require_cells(array.shape[0], array.shape[1], rules)
    if array.size and (array.min() < 0 or array.max() > game.MAX_COLORS):
        bad = np.argwhere((array < 0) | (array > game.MAX_COLORS))[0]
        raise ValueError(
            f"cell ({bad[0]}, {bad[1]}) holds {array[tuple(bad)]}; colours are 0 (empty) to "
            f"{game.MAX_COLORS}"
        )
    require_settled(array, rules)  # screened in a few array operations; _check_settled only names the fault
    return array


def board_array(board: str | game.BoardLike, rules: str = "dust") -> np.ndarray:
    """Anything ``parse_board`` accepts (settled under ``rules``), as an int64 numpy
    ``[W, H]`` array (for the numba solvers), made without JAX."""
    return np.asarray(_checked_board(board, None, None, rules), np.int64)


def parse_size(text: str, rules: str = "dust") -> game.GameConfig:
    """``"8x6x5"`` (width x height x colours, under ``rules``) or ``"former:6x6x4"`` (the
    rules named first) -> ``GameConfig`` (``GameConfig.size_spec`` writes it); ValueError
    naming the problem."""
    named, colon, size = text.partition(":")
    if not colon:
        size = text
    else:
        rules = named.strip().lower()
        if rules not in game.RULES:
            raise ValueError(f"size {text!r}: unknown rules {named!r}; known: {', '.join(game.RULES)}")
        if not size.strip():
            raise ValueError(f"size {text!r}: no WxHxC after {named.strip()!r}:")
    try:
        parts = [part.strip() for part in size.lower().split("x")]
        if not all(map(_is_whole, parts)):  # int() would take 1_0 and other scripts' digits
            raise ValueError
        width, height, colors = map(int, parts)
    except ValueError:
        raise ValueError(f"size must look like 8x6x5 (width x height x colours) or former:6x6x4 (rules first), "
                         f"got {text!r}") from None
    try:
        return game.GameConfig(width, height, colors, rules)
    except ValueError as error:
        raise ValueError(f"size {text!r}: {error}") from None


def board_to_text(board: game.BoardLike) -> str:
    """The RULES.md text form of a board ``[W, H]``: its digits in x-major order.

    Raises:
      ValueError: a board that is not 2-D, holds no cell (its text, "", would read back as
        no board) or holds a value outside 0..9 (one digit a cell).
    """
    cells = np.asarray(board)
    if cells.ndim != 2:
        raise ValueError(f"board must be 2-D [width, height], got shape {cells.shape}")
    if cells.size == 0:
        raise ValueError(f"board of shape {cells.shape} holds no cell, so it has no text form")
    return "".join(map(str, game.check_colours(cells, "board").reshape(-1).tolist()))


class BoardRecord(NamedTuple):
    """One line of a board file: the board and the integers that follow it."""

    board: jax.Array  # int8 [W, H]
    values: tuple[int, ...]  # e.g. (largest_first_clicks, best_clicks) or (optimal_clicks,)
    line: int  # 1-based line number in the file


def _is_whole(text: str) -> bool:
    """Digits 0-9 only: ``str.isdigit`` also takes superscripts, which ``int`` refuses, and
    ``int`` also takes ``1_2`` and other scripts' digits, which a board file does not hold."""
    return re.fullmatch(r"[0-9]+", text) is not None


def line_text(raw: str) -> str:
    """A file's line without the whitespace around it, and without a byte-order mark at its
    start: two files saved by Notepad and joined (``cat``) hold one in the middle."""
    return raw.strip().lstrip("\ufeff").strip()


def header_shape(line: str) -> tuple[int | None, int | None]:
    """The shape a ``# width=W height=H`` comment line sets, else ``(None, None)``;
    ValueError when it names a width or height that is not a positive integer."""
    fields = _header_fields(line)
    if "width" not in fields and "height" not in fields:
        return None, None
    shape = []
    for name in ("width", "height"):
        value = fields.get(name, "").strip()
        if not _is_whole(value) or int(value) < 1:
            raise ValueError(f"header {line.strip()!r}: {name} must be a positive integer, got {value!r}")
        shape.append(int(value))
    return shape[0], shape[1]


OPTIMA_HEADER = ("board", "optimal_clicks")  # RULES.md's data/boards/optimal_*.txt: "# board optimal_clicks ..."
# A fewest-clicks set's column comment (``jaxdust.evaluation.benchmark.write_set``).
FEWEST_CLICKS_COLUMNS = "columns: board, fewest clicks found, proven lower bound"


def _header_comments(lines: Iterable[str]):
    """``(line number, text)`` of the comment lines before a board file's first board,
    ``#`` stripped: the ones that describe its columns and rules."""
    for number, raw in enumerate(lines, start=1):
        text = line_text(raw)
        if text and not text.startswith("#"):
            return
        if text:
            yield number, text.lstrip("#").strip()


def reference_columns(lines: Iterable[str]) -> str:
    """What the numbers after each board of a board file (its ``lines``) are, by its
    comments before the first board: ``"optima"`` for RULES.md's ``# board optimal_clicks``
    (``data/boards/optimal_*.txt``: the one number is the proven optimum), ``"fewest_clicks"``
    for a fewest-clicks set (``FEWEST_CLICKS_COLUMNS``: the fewest clicks found, then the
    proven lower bound; equal, they are the optimum), else ``"best_known"`` (the last
    number, if any, is a length found, e.g. ``eval_8x6x5.txt``'s beam column)."""
    for _, comment in _header_comments(lines):
        if tuple(comment.split()[:2]) == OPTIMA_HEADER:
            return "optima"
        if comment.startswith(FEWEST_CLICKS_COLUMNS):
            return "fewest_clicks"
    return "best_known"


HEADER_FIELDS = ("width", "height", "colors", "rules")  # what a header comment sets
_HEADER_SPELLINGS = {"colours": "colors"}


def _header_fields(line: str) -> dict[str, str]:
    """``name=value`` fields of a header comment, names in lower case, spaces around ``=``
    and ``,``/``;`` between fields allowed (``# Width = 6, height=8``); ``colours`` is
    ``colors``. A header comment starts with a field; any other comment is prose, whose
    ``width=5000`` sets nothing. Other names (``y=0 bottom row``) are prose too, but one
    a letter or two from a field's (``rule=former``, which would leave Former's boards read
    as the dust game's) is a ValueError naming the field meant."""
    text = re.sub(r"\s*=\s*", "=", line.lstrip("#").replace(";", " ").replace(",", " "))
    parts = text.split()
    if not parts or "=" not in parts[0]:
        return {}
    fields: dict[str, str] = {}
    for name, _, value in (part.partition("=") for part in parts if "=" in part[1:]):
        name = _HEADER_SPELLINGS.get(name.lower(), name.lower())
        meant = difflib.get_close_matches(name, HEADER_FIELDS, n=1, cutoff=0.75)
        if name not in HEADER_FIELDS and meant:
            raise ValueError(f"header {line.strip()!r}: unknown field {name!r}; did you mean {meant[0]}=? "
                             f"(a header sets {', '.join(HEADER_FIELDS)})")
        if name in HEADER_FIELDS and _header_value(fields.get(name, value)) != _header_value(value):
            raise ValueError(f"header {line.strip()!r} sets {name} twice, to {fields[name]} and {value}")
        fields[name] = value
    return fields


def _header_value(value: str) -> int | str:
    """A header field's value as its readers compare it: a number as a number (``03`` is 3),
    a name in any case."""
    return int(value) if _is_whole(value) else value.lower()


def _header_field(lines: Iterable[str], name: str, source: str | None = None) -> tuple[str | None, int | None]:
    """The first ``name=value`` of a board file's header comments (before its first board)
    and its line number; ``(None, None)`` without one. ValueError ``"<source>:<line>: ..."``
    for a header field that is not one."""
    for number, text in _header_comments(lines):
        try:
            fields = _header_fields(text)
        except ValueError as error:
            raise ValueError(f"{_where(source, number)}: {error}") from None
        if name in fields:
            return fields[name], number
    return None, None


# A shape written in a comment's prose (``# 6x8 boards``, ``# width: 6, height: 8``,
# ``# w=6 h=8``): it sets nothing, so boards after it would be read at the default shape.
_PROSE_SHAPES = (re.compile(r"(?<![\w.])([0-9]+)\s*x\s*([0-9]+)(?![^\Wx])"),
                 re.compile(r"\bw(?:idth)?\s*[:=]?\s*([0-9]+)\W+h(?:eight)?\s*[:=]?\s*([0-9]+)"))


def _prose_shape(comment: str) -> tuple[int, int] | None:
    """The ``(width, height)`` a comment that is not a header reads as giving, if any."""
    for pattern in _PROSE_SHAPES:
        found = pattern.search(comment.lower())
        if found:
            return int(found[1]), int(found[2])
    return None


def _where(source: str | None, number: int | None) -> str:
    """``source:line``, or ``line N`` where the lines have no name."""
    return f"{source}:{number}" if source else f"line {number}"


def declared_colours(lines: Iterable[str], source: str | None = None) -> int | None:
    """The ``colors=C`` of a board file's header comments, or None; ValueError
    ``"<source>:<line>: ..."`` for a value that is not a number of colours."""
    value, number = _header_field(lines, "colors", source)
    if value is not None and (not _is_whole(value) or not 1 <= int(value) <= game.MAX_COLORS):
        raise ValueError(f"{_where(source, number)}: header colors={value}: a whole number of colours "
                         f"1..{game.MAX_COLORS}")
    return None if value is None else int(value)


def colour_caps(lines: Sequence[str], source: str | None = None) -> dict[int, int | None]:
    """Line number -> the colour cap (or None) of each board line of a board file: the
    file's ``colors=`` (``declared_colours``), or a lower one that a header after the first
    board gives (two files the project wrote, one after the other), which holds until the
    next header with a ``colors=``. ``board_lines`` refuses a header raising the file's."""
    cap = declared_colours(lines, source)
    in_force, caps = cap, {}
    for number, raw in enumerate(lines, start=1):
        text = line_text(raw)
        if text.startswith("#"):
            try:
                said = _header_fields(text).get("colors")
            except ValueError:  # a misspelt field: board_lines names its line
                continue
            if said is not None and _is_whole(said):
                in_force = int(said) if cap is None else min(cap, int(said))
        elif text:
            caps[number] = in_force
    return caps


def require_declared_colours(board: np.ndarray | jax.Array, colours: int | None) -> None:
    """ValueError when ``board`` holds a colour above its file's ``colors=`` (None: no cap)."""
    if colours is not None and board.size and int(np.max(board)) > colours:
        raise ValueError(f"the board holds colour {int(np.max(board))}; the header says colors={colours}")


def _column(text: str, index: int) -> int:
    """A board line's number after the board (its ``index``-th field), e.g. a length."""
    if text.startswith("-") and _is_whole(text[1:]):
        raise ValueError(f"field {index} is {text}; the numbers after a board (lengths, scores) are >= 0")
    if not _is_whole(text):
        raise ValueError(f"field {index} is {text!r}; after the board a line holds whole numbers (lengths, "
                         "digits 0-9), and a comment starts a line of its own with #")
    if len(text) > 18:  # past int64, and past Python's limit for reading digits at 4,300
        raise ValueError(f"field {index} has {len(text)} digits; the numbers after a board (lengths, scores) have "
                         "18 at most")
    return int(text)


@overload
def declared_rules(lines: Iterable[str], source: str | None = None, default: str = "dust") -> str: ...
@overload
def declared_rules(lines: Iterable[str], source: str | None = None, default: str | None = None) -> str | None: ...
def declared_rules(lines: Iterable[str], source: str | None = None, default: str | None = "dust") -> str | None:
    """The rule set whose lengths a board file gives: a ``rules=NAME`` field of a header
    comment (``# width=7 height=9 colors=4 rules=former; ...``), else ``default``.
    ValueError ``"<source>:<line>: ..."`` for a name that is not a rule set."""
    rules, number = _header_field(lines, "rules", source)
    if rules is None:
        return default
    rules = rules.lower()  # as --size reads it: rules=Former is Former
    try:
        game.rules_of(rules)  # one line listing the known ones
    except ValueError as error:
        raise ValueError(f"{_where(source, number)}: {error}") from None
    return rules


def board_lines(lines: Iterable[str], width: int | None = None, height: int | None = None,
                source: str | None = None, fallback: tuple[int | None, int | None] = (None, None)):
    """``(line_number, fields, width, height)`` for each board line of a board file: blank
    lines and ``#`` comments are skipped, and a ``# width=W height=H`` comment sets the shape
    unless given; each such comment holds until the next one; ``fallback`` is the shape
    where neither says. ValueError ``"<source>:<line>: ..."`` (``"line <line>: ..."``
    without a source) for a bad header, and for one after the first board that would be
    read as changing the file's rules or raising its colour cap (``declared_rules``,
    ``declared_colours``: they hold for the whole file), or before it for one that
    contradicts an earlier one: a ``rules=`` other than the file's,
    a ``colors=`` above its cap or not a number of colours, or in a file of other rules than
    the dust game's a header with ``colors=`` and no ``rules=`` (a dust file's, as the
    project writes them, pasted after another game's boards). Also a ValueError for a board
    whose shape nothing gives, so that it is read at ``DEFAULT_SHAPE``, after a comment whose
    prose names another shape of as many cells (``# width: 6, height: 8``, ``# 6x8 boards``),
    which sets nothing."""
    header: tuple[int | None, int | None] = (None, None)
    rules, cap, boards_began = None, None, False
    prose = None  # (line number, shape) of the last comment naming a shape in prose
    for number, raw in enumerate(lines, start=1):
        text = line_text(raw)
        if text.startswith("#"):
            try:
                shape = header_shape(text)
                fields = _header_fields(text)
            except ValueError as error:
                raise ValueError(f"{_where(source, number)}: {error}") from None
            header = shape if shape != (None, None) else header
            named = _prose_shape(text)
            if shape != (None, None) or named == DEFAULT_SHAPE:
                prose = None
            elif named is not None:
                prose = number, named
            said_rules = fields["rules"].lower() if "rules" in fields else None
            said_cap = int(fields["colors"]) if _is_whole(fields.get("colors", "")) else None
            if not boards_began:
                for name, earlier, said in (("rules", rules, said_rules), ("colors", cap, said_cap)):
                    if earlier is not None and said is not None and said != earlier:
                        raise ValueError(f"{_where(source, number)}: header {name}={fields[name]}, where an earlier "
                                         f"header says {name}={earlier}: a file's rules and colour cap hold for all "
                                         "its boards")
                rules, cap = rules or said_rules, cap if cap is not None else said_cap
                continue
            said_colours = fields.get("colors")
            if said_colours is not None and (said_cap is None or not 1 <= said_cap <= game.MAX_COLORS):
                # as declared_colours refuses it before the first board, where it reads the cap
                raise ValueError(f"{_where(source, number)}: header colors={said_colours}: a whole number of colours "
                                 f"1..{game.MAX_COLORS}")
            file_rules = rules or "dust"
            if said_rules is None and said_cap is not None and file_rules != "dust":
                problem = "a header with colors= and no rules= (a dust file's)"
            elif said_rules not in (None, file_rules):
                problem = f"rules={fields['rules']}"
            elif said_cap is not None and cap is not None and said_cap > cap:
                problem = f"colors={said_cap}"
            else:
                continue
            held = f"rules={file_rules}" + ("" if cap is None else f" colors={cap}")
            raise ValueError(f"{_where(source, number)}: {problem} after the first board, in a file of {held}: a "
                             f"file's rules and colour cap hold for all its boards (put boards of other rules or "
                             f"colours in a file of their own)")
        elif text:
            boards_began = True
            line_width, line_height = width or header[0] or fallback[0], height or header[1] or fallback[1]
            parts = text.split()
            cells = len(parts[0])
            if (prose and line_width is None and line_height is None
                    and cells == prose[1][0] * prose[1][1] == DEFAULT_SHAPE[0] * DEFAULT_SHAPE[1]):
                said, (prose_width, prose_height) = prose
                raise ValueError(f"{_where(source, said)}: this comment names {prose_width}x{prose_height} boards "
                                 f"but sets no shape, and {cells} digits without one are read as {DEFAULT_SHAPE[0]}x"
                                 f"{DEFAULT_SHAPE[1]}: write '# width={prose_width} height={prose_height}' (or "
                                 f"'# width={DEFAULT_SHAPE[0]} height={DEFAULT_SHAPE[1]}' if they are "
                                 f"{DEFAULT_SHAPE[0]}x{DEFAULT_SHAPE[1]})")
            yield number, parts, line_width, line_height


def require_header_shape(lines: Iterable[str], width: int | None, height: int | None, source: str | None,
                         given: str = "width=/height=") -> None:
    """ValueError naming the first board whose header's shape ``width``/``height`` (named
    ``given`` in the message) contradict: read at another shape than its file says, a board
    is other cells, or an error. A file without a header is read at the given shape."""
    if width is None and height is None:
        return
    for number, _, header_width, header_height in board_lines(lines, source=source, fallback=(width, height)):
        if header_width is not None and (width or header_width, height or header_height) != (header_width, header_height):
            raise ValueError(f"{_where(source, number)}: its header reads the boards at "
                             f"{header_width}x{header_height}, {given} at {width or header_width}x"
                             f"{height or header_height}: leave {given} out or correct the header")


def read_board_file(path: str | os.PathLike, width: int | None = None, height: int | None = None,
                    limit: int | None = None, rules: str | None = None) -> list[BoardRecord]:
    """Boards from a file in the ``boards/`` format, each settled under ``rules`` (None: the
    rules its header declares, ``# ... rules=former``, else ``"dust"``).

    Lines starting with ``#`` are comments; a ``# width=W height=H`` comment sets the
    shape of the boards after it (``width``/``height`` given here shape the boards of a file
    without one, and must agree with every one it has, past ``limit`` too), and a ``colors=C``
    field caps the
    colours its boards may hold. Each other non-blank line is a board in text form followed
    by optional integers. ``limit``: read only the first that many boards (a positive
    integer, or None for all).

    Raises:
      ValueError: ``"<path>:<line>: <problem>"`` for the first malformed line, or the first
        board whose header's shape ``width``/``height`` contradict; a ``limit`` below 1; a
        file that cannot be read (``cannot read board file <path>: ...``).
    """
    lines = files.read_lines(os.fspath(path), "board file")
    return read_board_lines(lines, str(path), width, height, limit, rules)


def read_board_lines(lines: Sequence[str], source: str, width: int | None = None, height: int | None = None,
                     limit: int | None = None, rules: str | None = None,
                     fallback: tuple[int | None, int | None] = (None, None)) -> list[BoardRecord]:
    """``read_board_file`` on a file's lines (read once, as from standard input, for
    ``reference_columns`` and ``declared_rules`` too); ``source`` names the file in errors;
    ``fallback``: the shape of boards whose size neither the arguments nor a header give."""
    if limit is not None and (not game.is_integer(limit) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    rules = declared_rules(lines, source) if rules is None else rules
    game.rules_of(rules)
    require_header_shape(lines, width, height, source)
    caps = colour_caps(lines, source)
    records = []
    for number, (digits, *rest), line_width, line_height in board_lines(lines, width, height, source, fallback):
        try:
            board = parse_board(digits, line_width, line_height, rules)
            require_declared_colours(board, caps[number])
            values = tuple(_column(v, index) for index, v in enumerate(rest, start=2))
        except ValueError as error:
            kind = UnsettledBoardError if isinstance(error, UnsettledBoardError) else ValueError
            raise kind(f"{source}:{number}: {error}") from None
        records.append(BoardRecord(board, values, number))
        if len(records) == limit:
            break
    return records


def _is_action(click) -> bool:
    """An int, or a 0-d integer array: an element of a numpy or JAX array of actions."""
    return game.is_integer(click) or (isinstance(click, (np.ndarray, jax.Array)) and click.ndim == 0
                                      and click.dtype != bool and np.issubdtype(click.dtype, np.integer))


def _as_pairs(clicks, height: int):
    """``clicks`` as ``(x, y)`` pairs: flat actions ``x * height + y`` (a 1-D integer array
    or any iterable of ints but a tuple, as ``beam_search``, ``points_beam`` and
    ``play_boards`` give them, perhaps padded with -1 after the last click) become pairs;
    anything else is taken as pairs, to be checked click by click. ValueError for what holds
    no line in order (a set, a dict, a number), and for a negative action other than that
    padding (which would cut the line short)."""
    if isinstance(clicks, tuple):  # (3, 2) is one click's pair, not two flat actions: refused with a hint
        return clicks
    unordered = isinstance(clicks, (collections.abc.Set, collections.abc.Mapping, bytearray, memoryview))
    if unordered or not isinstance(clicks, collections.abc.Iterable) or getattr(clicks, "ndim", None) == 0:
        raise ValueError(f"clicks must be a sequence of (x, y) pairs or of flat actions, in order, "
                         f"not {type(clicks).__name__}")
    if not isinstance(clicks, (np.ndarray, jax.Array, str, bytes)):
        clicks = list(clicks)  # a range or a generator of either kind: read once
    if isinstance(clicks, (np.ndarray, jax.Array)) or (clicks and all(_is_action(c) for c in clicks)):
        flat = np.asarray(clicks)
        if flat.ndim == 1 and flat.dtype != bool and np.issubdtype(flat.dtype, np.integer):
            negative = np.flatnonzero(flat < 0)
            end = int(negative[0]) if len(negative) else len(flat)
            if (stray := np.flatnonzero(flat[end:] != -1)).size:  # a line cut short would be scored as whole
                step = end + int(stray[0])
                raise ValueError(f"click {step}: {int(flat[step])} is no cell" if flat[step] < 0 else
                                 f"click {step}: {int(flat[step])} after the line's end (click {end}'s -1); "
                                 "-1 pads a line of flat actions after its last click, and only there")
            return [divmod(int(a), height) for a in flat[:end]]
    return clicks


# A game's line: (x, y) pairs, or flat actions x * H + y (as the batched searches and
# play_boards give them, perhaps padded with -1 after the end), in anything but a tuple:
# (3, 2) would be one click's pair.
Clicks = Iterable[Sequence[int]] | Iterable[int]


def positions(board: str | game.BoardLike, clicks: Clicks, rules: str = "dust",
              wasted: bool = False) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every position of a game played under ``rules`` and the cluster each click removes.

    ``board`` is an array, nested lists, or text of 48 digits read as 8x6 (as ``score`` and
    ``replay`` take it; ``parse_board(text, width, height)`` reads text of other sizes).

    ``clicks`` are ``(x, y)`` pairs, or flat actions ``x * H + y`` as the batched searches
    and ``play_boards`` return them (a 1-D array padded with -1 after the end).

    Args:
      wasted: take a click on an empty cell or on a group smaller than the rules allow as
        RULES.md does, a wasted click that changes nothing (its "cluster" is the cell
        clicked, or its group, so a picture shows where it went); without it such a click
        is refused, since a played line never wastes one.

    Returns:
      ``(boards, clusters)``: ``len(clicks) + 1`` int8 ``[W, H]`` boards (the start, then
      the board after each click) and, for each board, the bool ``[W, H]`` cluster clicked
      there (all False for the last), e.g. for ``render.game_gif``.

    Raises:
      ValueError: ``clicks`` not a sequence in order (a set, a number), or naming the step
        index of a click that is not an (x, y) pair of ints, out of range, or (without
        ``wasted``) on an empty cell or a group smaller than the rules allow.
    """
    board = np.asarray(parse_board(board, rules=rules))
    width, height = board.shape
    smallest = game.rules_of(rules).min_group
    boards, clusters = [np.asarray(board)], []
    for step, click in enumerate(_as_pairs(clicks, height)):
        try:  # integers only (operator.index): 0.9 is not cell 0, nor "00" the click (0, 0)
            if isinstance(click, (str, bytes)):
                raise TypeError
            pair = tuple(click)  # once: an iterator is read here
            if any(isinstance(v, (bool, np.bool_)) for v in pair):
                raise TypeError
            x, y = (operator.index(v) for v in pair)
        except (TypeError, ValueError):
            hint = ("; one click is a list of one pair, [(x, y)], and flat actions a list or a 1-D array"
                    if isinstance(clicks, tuple) and clicks and all(_is_action(c) for c in clicks) else "")
            raise ValueError(f"click {step}: {click!r} is not an (x, y) pair of ints{hint}") from None
        if not (0 <= x < width and 0 <= y < height):
            raise ValueError(f"click {step}: ({x}, {y}) is outside the {width}x{height} board")
        cluster, after = _click_step(board, x, y, rules=rules)
        cluster, after = np.asarray(cluster), np.asarray(after)
        if wasted and cluster.sum() < smallest:
            clicked = np.zeros((width, height), bool)
            clicked[x, y] = True  # the cell the wasted click hit (its group removes nothing)
            clusters.append(cluster | clicked)
            boards.append(boards[-1])
            continue
        if int(board[x, y]) == 0:
            raise ValueError(f"click {step}: ({x}, {y}) is an empty cell")
        if cluster.sum() < smallest:
            raise ValueError(f"click {step}: ({x}, {y}) is a group of {cluster.sum()}; {rules} removes groups of "
                             f"{smallest} or more")
        clusters.append(cluster)
        board = after
        boards.append(board)
    clusters.append(np.zeros((width, height), bool))
    return boards, clusters


@functools.partial(jax.jit, static_argnames="rules")
def _click_step(board: jax.Array, x: jax.Array, y: jax.Array, rules: str) -> tuple[jax.Array, jax.Array]:
    """One click of a replay as one compiled call (op by op, each of its dozens of
    operations was a dispatch of its own): the cluster at ``(x, y)`` (all False on an empty
    cell) and the board after the click."""
    return game.cluster_mask(board, x, y), game.click(board, x, y, rules=rules)[0]


def replay(board: str | game.BoardLike, clicks: Clicks, rules: str = "dust",
           wasted: bool = False) -> tuple[jax.Array, int]:
    """Apply clicks (``(x, y)`` pairs or flat actions, as ``positions`` takes them) in order
    to ``board`` (as ``positions`` takes it) under ``rules`` (``wasted``: as ``positions``).

    Returns:
      ``(final_board, number_of_clicks)``, wasted clicks included.

    Raises:
      ValueError: as ``positions``.
    """
    boards, _ = positions(board, clicks, rules, wasted)
    return jnp.asarray(boards[-1]), len(boards) - 1


def score(board: str | game.BoardLike, clicks: Clicks, rules: str = "dust", partial: bool = False,
          wasted: bool = False) -> int:
    """A played game's result by the rules' objective (RULES.md): SameGame's points
    (``(n - 2)^2`` for each group of ``n``, +1000 if the board ends empty), Clickomania's
    cells left, or the clicks of the fewest-clicks games, of ``board`` (as ``positions`` takes
    it). The line must play the game to its end (the board empty, or for ``samegame`` and
    ``clickomania`` no group of 2 left): the result of a game stopped early is no result of
    its rules.

    Args:
      partial: score a line that stops before the game ends, as it stands: the points
        and cells left so far, or the clicks made.
      wasted: take wasted clicks as ``positions`` does (as ``play_boards`` plays and counts
        them): such a click scores no points and counts as a click.

    Raises:
      ValueError: as ``positions``, or (without ``partial``) a line after which a click
        still removes something.
    """
    boards, clusters = positions(board, clicks, rules, wasted)
    found = game.rules_of(rules)
    objective = found.objective
    if not partial and not bool(game.is_over(jnp.asarray(boards[-1]), rules)):
        left = f"{np.count_nonzero(boards[-1])} cells"
        if objective != "clicks":
            left += f", a group of {found.min_group} or more among them"
        raise ValueError(f"the line leaves {left}; score takes a whole game under the {rules} rules "
                         "(partial=True scores it as it stands)")
    if objective == "points":
        cleared = game.CLEAR_BONUS if not boards[-1].any() else 0
        return int(sum(int(game.points(int(cluster.sum()))) for cluster in clusters)) + cleared
    if objective == "cells_left":
        return int(np.count_nonzero(boards[-1]))
    return len(boards) - 1
