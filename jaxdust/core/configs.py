"""Frozen config dataclasses to and from JSON and command-line flags, nested ones included.

Learner and data-set configs hold a ``GameConfig`` (and a learner its ``Rewards``) rather
than repeating their fields, so a run's ``config.json`` nests them the same way.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import io
import json
import math
import re
import tokenize
import types
import typing

import numpy as np

from jaxdust.core import flags
from jaxdust.core.boards import parse_size
from jaxdust.core.game import GameConfig, is_integer


def to_json(config) -> dict:
    """A (nested) dataclass config as JSON-compatible values (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(config)))


def from_json(config_class, data: dict):
    """The inverse of ``to_json``; TypeError or ValueError naming the problem when ``data``
    does not fit ``config_class`` (unknown fields, bad values). A field ``data`` lacks takes
    its default, or the value ``config_class.ABSENT_MEANS`` names for it: what configs
    saved before the field existed did, where the default now does otherwise."""
    if not isinstance(data, dict):
        raise TypeError(f"{config_class.__name__} needs a JSON object, got {type(data).__name__}")
    hints = typing.get_type_hints(config_class)
    known = {field.name for field in dataclasses.fields(config_class)}
    unknown = set(data) - known
    if unknown:
        raise TypeError(f"{config_class.__name__} has no field(s) {', '.join(sorted(unknown))}")
    # A field added with a default that changes what older configs did: those configs,
    # saved without it, keep their behaviour.
    values = {name: value for name, value in getattr(config_class, "ABSENT_MEANS", {}).items() if name not in data}
    for name, value in data.items():
        kind = hints[name]
        if dataclasses.is_dataclass(kind):
            value = from_json(kind, value)
        elif typing.get_origin(kind) is tuple and isinstance(value, list):
            value = tuple(value)
        elif kind in _SCALARS and not _SCALARS[kind](value):  # "false" would read as true
            raise TypeError(f"{config_class.__name__}.{name} must be a JSON {kind.__name__}, got {value!r}")
        values[name] = value
    return config_class(**_unused_settings_at_default(config_class, values, set(data)))


_SCALARS = {bool: lambda v: isinstance(v, bool), str: lambda v: isinstance(v, str),
            int: lambda v: isinstance(v, int) and not isinstance(v, bool),
            float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}


class FieldError(ValueError):
    """A config field holds a value out of its range; ``field`` names it (flags map it to
    their own name)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field} {message}")
        self.field = field
        self.problem = message

    def __reduce__(self):  # raised in a worker process, it is pickled back to the caller
        return type(self), (self.field, self.problem)


FLOAT32_MAX = float(np.finfo(np.float32).max)


def _inf_in_float32(value: float) -> bool:
    """Whether ``value`` rounds to an infinity in float32 (float32's largest, as printed, does not)."""
    with np.errstate(over="ignore"):
        return bool(np.isinf(np.float32(value)))


def require(config, positive=(), non_negative=(), unit_interval=(), finite=(), layers=(), wide=()) -> None:
    """Range checks for a config's ``__post_init__``: FieldError for the first field out of
    range. Every number named must also be finite, a float field's within float32's range
    and an int field's an int below 2^31 (sizes, counts and indices become int32 in arrays,
    floats float32) unless named in ``wide`` (totals
    that stay Python ints); ``layers`` are tuples (or lists, as JSON keeps them; kept as
    tuples) of positive ints below 2^31: widths or channels."""
    for name in layers:
        value = getattr(config, name)
        if not isinstance(value, (tuple, list)) or not all(
                is_integer(width) and 0 < width < flags.INT32_LIMIT for width in value):
            raise FieldError(name, f"must be a tuple of positive integers below 2^31 (layer sizes), got {value!r}")
        object.__setattr__(config, name, tuple(int(width) for width in value))  # hashable, and equal once read back
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):  # a numpy scalar, e.g. from a sweep over np.arange, as Python's
        value = getattr(config, field.name)
        if hints[field.name] is int and is_integer(value):
            object.__setattr__(config, field.name, int(value))
        elif hints[field.name] is float and (is_integer(value) or isinstance(value, np.floating)):
            try:
                object.__setattr__(config, field.name, float(value))
            except OverflowError:  # an int beyond a float's range
                raise FieldError(field.name, f"must be within float32's range (+-{FLOAT32_MAX:.4g}), got {value!r}") from None
    for names, ok, wanted in ((positive, lambda v: v > 0, "> 0"), (non_negative, lambda v: v >= 0, ">= 0"),
                              (unit_interval, lambda v: 0 <= v <= 1, "in [0, 1]"),
                              (finite, lambda v: True, "finite")):
        for name in names:
            value = getattr(config, name)
            if hints[name] is int and (not isinstance(value, int) or isinstance(value, bool)):
                raise FieldError(name, f"must be an integer, got {value!r}")
            if type(value) not in (int, float):  # a bool or a string
                raise FieldError(name, f"must be a number, got {type(value).__name__} {value!r}")
            if not math.isfinite(value) or not ok(value):
                raise FieldError(name, f"must be {wanted}, got {value!r}")
            if hints[name] is float and _inf_in_float32(value):  # float32 in arrays: it would be inf there
                raise FieldError(name, f"must be within float32's range (+-{FLOAT32_MAX:.4g}), got {value!r}")
            if hints[name] is int and value >= flags.INT32_LIMIT and name not in wide:
                raise FieldError(name, f"must be below 2^31 = {flags.INT32_LIMIT:,}, got {value!r}")


def _defaults(config_class) -> dict:
    """Each field's default (a factory's value), for the fields that have one."""
    defaults = {}
    for field in dataclasses.fields(config_class):
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            defaults[field.name] = field.default_factory()
    return defaults


def _setting(holder, name: str):
    """``holder``'s setting ``name``: a field, or a field of a nested config as
    ``rewards.empty_click``."""
    for part in name.split("."):
        holder = getattr(holder, part)
    return holder


def _turned_off(config, config_class=None) -> list[tuple[str, str]]:
    """``(name, why)`` for each setting another setting of ``config`` turns off (the class's
    ``UNUSED_WHERE``: ``(names, used(config), why)`` triples, a name a field or one of a
    nested config's, ``rewards.empty_click``; ``config_class``: where ``config`` is a view of
    a saved one's values)."""
    rules = getattr(config_class or type(config), "UNUSED_WHERE", ())
    return [(name, why) for names, used, why in rules if not used(config) for name in names]


def unused_settings(config) -> set[str]:
    """The fields another setting of ``config`` turns off: what they are set to does nothing."""
    return {name for name, _ in _turned_off(config)}


def require_used_settings(config) -> None:
    """For a config's ``__post_init__``: FieldError for a setting changed from its default
    where another setting turns it off (``_turned_off``), which a run would record in
    ``config.json`` as if it had trained under it. A field's ``ABSENT_MEANS`` value (a run
    saved before the field existed) passes."""
    turned_off = _turned_off(config)
    absent = getattr(type(config), "ABSENT_MEANS", {})
    defaults = types.SimpleNamespace(**_defaults(type(config))) if turned_off else None
    for name, why in turned_off:
        value = _setting(config, name)
        if value != _setting(defaults, name) and not (name in absent and value == absent[name]):
            raise FieldError(name.replace(".", "_"), f"{why} (got {value!r})")  # the flag's name


def _unused_settings_at_default(config_class, values: dict, saved) -> dict:
    """``values`` read from a saved config with each setting another turns off, where it was
    ``saved``, back at its default: versions before 0.2.45 took such settings (which did
    nothing) and saved them. A field the config lacked keeps its ``ABSENT_MEANS`` value."""
    if not getattr(config_class, "UNUSED_WHERE", ()):
        return values
    defaults = _defaults(config_class)
    view = types.SimpleNamespace(**{**defaults, **values})
    read = dict(values)
    for name, _ in _turned_off(view, config_class):
        field, _, nested = name.partition(".")  # one level of nesting: rewards.empty_click
        if field in saved:
            read[field] = dataclasses.replace(read[field], **{nested: getattr(defaults[field], nested)}) if nested \
                else defaults[field]
    return read


def require_game(game_config) -> None:
    """TypeError unless a config's ``game`` is a ``GameConfig`` (a tuple such as
    ``(5, 5, 3)`` failed later with an AttributeError)."""
    if not isinstance(game_config, GameConfig):
        raise TypeError(f"game must be a GameConfig, e.g. GameConfig(8, 6, 5) or GameConfig(7, 9, 4, 'former'), "
                        f"got {type(game_config).__name__} {game_config!r}")


def require_rules(game_config: GameConfig, supported: tuple[str, ...], what: str) -> None:
    """FieldError (of the ``game`` field, so the flags name ``--size/--env``) unless
    ``game_config.rules`` is one that ``what`` plays (so far); TypeError for a ``game``
    that is not a ``GameConfig``."""
    require_game(game_config)
    if game_config.rules not in supported:
        raise FieldError("game", f"{game_config.size_spec}: {what} plays the {', '.join(supported)} rules so far, "
                                 f"not {game_config.rules!r}")


# ---------------------------------------------------------------------------------------
# Flags: one per field; a nested config's fields get its name as a prefix, and a
# GameConfig is one --size WxHxC flag.
# ---------------------------------------------------------------------------------------


FLAG_MAX_CELLS, FLAG_MAX_HEIGHT = 65_536, 256
"""The most cells and rows ``--size`` takes (256x256). A click's program grows with the
board's height and a game's time about with its cells squared: a 2000x2000 board ran out of
memory compiling its first click, where it should be refused at once."""


def size_flag(text: str, rules: str = "dust") -> GameConfig:
    """An argparse type for ``--size [RULES:]WxHxC`` (``8x6x5``: under ``rules``;
    ``former:6x6x4``: the rules named), of at most ``FLAG_MAX_CELLS`` cells and
    ``FLAG_MAX_HEIGHT`` rows."""
    try:
        config = parse_size(text, rules)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if config.num_cells > FLAG_MAX_CELLS or config.height > FLAG_MAX_HEIGHT:
        raise argparse.ArgumentTypeError(
            f"size {text!r}: {config.num_cells:,} cells in {config.height:,} rows, where the commands take at most "
            f"{FLAG_MAX_CELLS:,} cells and {FLAG_MAX_HEIGHT} rows: a game's time grows about with its cells squared, "
            f"and its programs with the rows")
    return config


def env_flag(text: str) -> GameConfig:
    """An argparse type for ``--env ID``: the rules and size of a registered environment."""
    from jaxdust.core.registry import make  # the registry builds environments from configs

    try:
        return make(text).game
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_board_flags(parser: argparse.ArgumentParser, size_help: str, env_help: str, dest: str | None = None,
                    size_default: GameConfig | None = None, size_rules: str = "dust") -> None:
    """``--size [RULES:]WxHxC`` (a size under ``size_rules`` unless it names others) or
    ``--env ID`` (a registered environment's rules and size), not both: into ``dest`` when
    given, else into ``size`` and ``env`` apart."""
    board = parser.add_mutually_exclusive_group()
    board.add_argument("--size", dest=dest or "size", type=functools.partial(size_flag, rules=size_rules),
                       default=size_default, metavar="WxHxC",
                       help=size_help)
    board.add_argument("--env", dest=dest or "env", type=env_flag, default=None, metavar="ID", help=env_help)


def size_list_flag(text: str) -> list[GameConfig]:
    """An argparse type for comma-separated sizes, ``6x6x5,8x6x5``."""
    return [size_flag(part) for part in text.split(",")]


def _checked(kind):
    """An argparse type for ``kind``: integers must be integers, floats finite (ranges are
    the config's own ``__post_init__`` checks)."""
    return {int: flags.integer, float: flags.finite_float}.get(kind, kind)


def _tuple_of_ints(text: str) -> tuple[int, ...]:
    if text.strip().lower() == "none":  # as --help shows an empty default (no layers)
        return ()
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    if max(values) >= flags.INT32_LIMIT:  # array sizes: XLA aborts the process on larger ones
        raise argparse.ArgumentTypeError(f"each must be below 2^31 = {flags.INT32_LIMIT:,}, got {text!r}")
    return values


@functools.cache
def field_notes(config_class) -> dict[str, str]:
    """Each field's comment in ``config_class``'s source: the comment ending its line, else the
    whole-line comments just above it. Fields without one, and classes whose source is not
    at hand, are left out."""
    try:
        source = inspect.getsource(config_class)
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    fields = {field.name for field in dataclasses.fields(config_class)}
    line_of: dict[int, str] = {}  # a line's first name at the body's indent
    notes, above, body_indent = {}, [], None
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        row = token.start[0]
        if token.type == tokenize.INDENT and body_indent is None:
            body_indent = len(token.string)
        elif token.type == tokenize.COMMENT:
            text = token.string.lstrip("#").strip()
            if line_of.get(row, "") in fields:
                notes[line_of[row]] = text
            elif lines[row - 1].lstrip().startswith("#"):
                above.append(text)
        elif token.type == tokenize.NAME and row not in line_of and token.start[1] == body_indent:
            line_of[row] = token.string  # the statement's first name: a field, or a def, ...
            if token.string in fields and above:
                notes[token.string] = " ".join(above)
            above = []
    return notes


def add_flags(parser: argparse.ArgumentParser, config_class, prefix: str = "", defaults=None) -> None:
    """A flag per field of ``config_class`` (default None: keep the base config's value). Its
    help is the field's comment (``field_notes``) and, given ``defaults`` (an instance), the
    value it holds there."""
    hints = typing.get_type_hints(config_class)
    notes = field_notes(config_class)
    for field in dataclasses.fields(config_class):
        kind = hints[field.name]
        dest = prefix + field.name
        flag = "--" + dest.replace("_", "-")
        default = None if defaults is None else getattr(defaults, field.name)
        shown = _flag_value(default)
        help_text = "; ".join(part for part in (notes.get(field.name, "").rstrip("."),
                                                 "" if default is None else f"default {shown}") if part
                              ).replace("%", "%%") or None
        if kind is GameConfig:
            add_board_flags(parser, "board size and colours, e.g. 8x6x5 (the dust game) or former:6x6x4 (rules first)"
                            + ("" if default is None else f"; default {default.size_spec}"),
                            "a registered environment's rules and size, e.g. Former-7x9x4-v0", dest)
        elif dataclasses.is_dataclass(kind):
            add_flags(parser, kind, prefix=dest + "_", defaults=default)
        elif kind is bool:
            parser.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif typing.get_origin(kind) is tuple:
            parser.add_argument(flag, dest=dest, type=_tuple_of_ints, default=None, metavar="N,N,...",
                                help=help_text)
        else:
            parser.add_argument(flag, dest=dest, type=_checked(kind), default=None, help=help_text)


def from_flags(args: argparse.Namespace, base, prefix: str = ""):
    """``base`` with every field whose flag was given replaced (nested configs too).

    Raises:
      ValueError: naming the flag when the config refuses its value.
    """
    hints = typing.get_type_hints(type(base))
    changes = {}
    for field in dataclasses.fields(base):
        kind = hints[field.name]
        if dataclasses.is_dataclass(kind) and kind is not GameConfig:
            changes[field.name] = from_flags(args, getattr(base, field.name), prefix + field.name + "_")
        elif getattr(args, prefix + field.name, None) is not None:
            changes[field.name] = getattr(args, prefix + field.name)
    try:
        return dataclasses.replace(base, **changes)
    except FieldError as error:
        # Other fields a problem names (snake_case, so no English word is taken for one)
        # become their flags too: "--batch-size (64) cannot exceed --buffer-size (32)".
        names = {field.name for field in dataclasses.fields(base) if "_" in field.name}
        for field in dataclasses.fields(base):  # a nested config's fields are flags of both names
            nested = getattr(base, field.name)
            if dataclasses.is_dataclass(nested) and not isinstance(nested, GameConfig):
                names |= {f"{field.name}_{inner.name}" for inner in dataclasses.fields(nested)}
        problem = re.sub(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b",
                         lambda match: flag_name(prefix + match[0]) if match[0] in names else match[0], error.problem)
        flag = "--size/--env" if error.field == "game" else flag_name(prefix + error.field)  # one GameConfig, two flags
        raise ValueError(f"{flag} {problem}") from None


def flag_name(field: str) -> str:
    """The flag of a config field: ``beam_width`` -> ``--beam-width``."""
    return "--" + field.replace("_", "-")


def board_differences(made: GameConfig, asked: GameConfig) -> list[str]:
    """``["--size former:6x5x4, not 6x5x4"]`` where two boards differ, named by the flag
    that gives them (size and rules in one), else ``[]``: the part every "other settings"
    message shares."""
    return [] if made == asked else [f"--size {made.size_spec}, not {asked.size_spec}"]


def differences(made: dict, asked: dict, prefix: str = "", as_flags: bool = False) -> str:
    """The fields two configs' JSON (``to_json``) differ in: ``boards 5, not 40; ...``, or
    ``as_flags``, as the flags ``add_flags`` gives them: ``--hidden 16,16, not 32; --prior,
    not --no-prior; --rewards-clear 10.0, not 2.0``."""
    parts = []
    for name in sorted(set(made) | set(asked)):
        if made.get(name) == asked.get(name):
            continue
        if isinstance(made.get(name), dict) and isinstance(asked.get(name), dict):
            parts.append(differences(made[name], asked[name], f"{prefix}{name}{'_' if as_flags else '.'}", as_flags))
        elif as_flags and isinstance(made.get(name), bool) and isinstance(asked.get(name), bool):
            parts.append(", not ".join(flag_name(("" if value else "no_") + prefix + name)
                                       for value in (made[name], asked[name])))
        elif as_flags:
            parts.append(f"{flag_name(prefix + name)} {_flag_value(made.get(name))}, not {_flag_value(asked.get(name))}")
        else:
            parts.append(f"{prefix}{name} {made.get(name)}, not {asked.get(name)}")
    return "; ".join(parts)


def _flag_value(value) -> str:
    """A config's value (or its JSON) as its flag takes it: a tuple comma-separated, an
    empty one ``none``."""
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value)) or "none"
    return str(value)
