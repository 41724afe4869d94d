"""The dust game as pure JAX functions on one board.

A board is an ``int8`` array ``[width, height]`` indexed ``board[x, y]``: ``x`` left to
right, ``y`` bottom to top, ``0`` empty and ``1..colors`` colours (see RULES.md). Every
function here works on a single board, is free of Python-side state and can be wrapped in
``jax.jit``, ``jax.vmap`` and ``jax.lax.scan``; ``width`` and ``height`` are read from the
board's static shape, so one compiled function serves one board size. The everyday
functions (moves, labels, masks) come jitted already (``public``), so they are fast when
called one at a time outside ``jit`` too.

A cell is also addressed by its flat *action* index ``a = x * height + y`` (x-major, the
same order as the board text format).

Layout for batches. ``jax.vmap`` puts the batch first (``[B, W, H]``), where a CPU vectorises
only along the 6 or 8 cells of a column. The moves (``click_action``, which ``click``
calls, ``contract``, ``remove_and_contract``) and ``cluster_labels`` therefore carry
``custom_vmap`` rules that move the batch *last* (``[W, H, B]``) and call the same code,
which is written for a board ``[W, H, ...]`` with any trailing batch axes: every
elementwise step then runs along the batch (4-10x faster on a CPU, and the natural
coalesced layout on a GPU). Per-board reductions are XLA ``reduce`` ops, not unrolled
chains: XLA on a CPU copies a chain of cheap elementwise ops into every consumer that
broadcasts its result back over the cells.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from collections.abc import Sequence
from typing import Any, Callable, Concatenate, NamedTuple, ParamSpec, TypeGuard, TypeVar, cast, overload

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import machine

BOARD_DTYPE = jnp.int8
MAX_COLORS = 9
BoardLike = jax.Array | np.ndarray | Sequence[Any]
"""A board, or a batch of them, as the library's functions take it: an integer array (JAX or
numpy) or nested lists (``[x][y]`` for one board ``[W, H]``)."""


@dataclasses.dataclass(frozen=True)
class Rules:
    """One rule set of the family (RULES.md): which groups a click may remove, how the
    board settles afterwards and what a player optimises."""

    name: str
    min_group: int  # smallest group a click removes (smaller ones: the click changes nothing)
    sideways: str  # after gravity: "centre" (row halves to the centre), "left" (empty columns close), "none"
    objective: str  # "clicks" (fewest to clear), "points" ((n - 2)^2 a group, +1000 if cleared), "cells_left"


RULES = {rules.name: rules for rules in (
    Rules("dust", 1, "centre", "clicks"),
    Rules("former", 1, "none", "clicks"),
    Rules("samegame", 2, "left", "points"),
    Rules("clickomania", 2, "left", "cells_left"),
)}
"""The four rule sets by name (RULES.md): the smallest group a click removes, where the
columns slide once one empties, and what a game is scored by."""
CLEAR_BONUS = 1000  # SameGame's points for a cleared board
# A game's points, at most (cells - 2)^2 + CLEAR_BONUS, and every flat action (x * H + y)
# are int32: boards past these sizes would wrap round to negative figures.
MAX_BOARD_CELLS = 2**31 - 1
MAX_POINTS_CELLS = 46_342


def rules_of(name: str) -> Rules:
    """The rule set called ``name``: TypeError for a name that is not a str (as
    ``GameConfig.rules``), ValueError naming the known ones for an unknown one."""
    if not isinstance(name, str):
        raise TypeError(f"rules must be a str, one of {', '.join(RULES)}; got {name!r}")
    if name not in RULES:
        raise ValueError(f"unknown rules {name!r}; known: {', '.join(RULES)}")
    return RULES[name]


# The rule sets whose every group may be removed and whose goal is fewest clicks: the exact
# solver and the fewest-clicks beam play these (SameGame's points: jaxdust.points_beam).
CLICK_RULES = tuple(name for name, rules in RULES.items() if rules.objective == "clicks" and rules.min_group == 1)
# The rule sets scored by points or cells left: the points beams and NMCS play these.
POINTS_RULES = tuple(name for name, rules in RULES.items() if rules.objective != "clicks")


def mirror_symmetric(rules: str, width: int) -> bool:
    """Whether a board and its mirror image (``x -> width - 1 - x``) play alike under
    ``rules`` at ``width``, so that one may stand for the other (position keys, data sets,
    mirrored training samples): gravity alone (``former``) always; the dust game's centre
    slide only at even widths (at an odd one the middle column belongs to the right half);
    closing empty columns to the left never."""
    sideways = rules_of(rules).sideways
    return sideways == "none" or (sideways == "centre" and width % 2 == 0)


def require_click_rules(rules: str, what: str) -> None:
    """ValueError unless ``rules`` names a rule set of ``CLICK_RULES``; ``what`` names the caller."""
    rules_of(rules)
    if rules not in CLICK_RULES:
        raise ValueError(f"{what} plays the fewest-clicks rules ({', '.join(CLICK_RULES)}), got {rules!r}; "
                         "for points and cells left use jaxdust.points_beam or jaxdust.solver.points")


def require_points_rules(rules: str, what: str) -> None:
    """ValueError unless ``rules`` names a rule set of ``POINTS_RULES``; ``what`` names the caller."""
    rules_of(rules)
    if rules not in POINTS_RULES:
        raise ValueError(f"{what} plays the points and cells-left rules ({', '.join(POINTS_RULES)}), got {rules!r}; "
                         "for fewest clicks use jaxdust.solve or jaxdust.beam_search")


def is_integer(value) -> TypeGuard[int | np.integer]:
    """A Python or numpy integer, not a bool: what a size, count or limit must be."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def require_cells(width: int, height: int, rules: str) -> None:
    """ValueError for a board too large for int32 figures: its flat actions, and under
    SameGame's points (``(n - 2)^2`` a group) a whole game's points."""
    cells = width * height
    if rules_of(rules).objective == "points" and cells > MAX_POINTS_CELLS:
        raise ValueError(f"a {width}x{height} board has {cells:,} cells; under the {rules} rules a board holds at "
                         f"most {MAX_POINTS_CELLS:,}, whose points ((n - 2)^2 a group of n) fit 32-bit integers")
    if cells > MAX_BOARD_CELLS:
        raise ValueError(f"a {width}x{height} board has {cells:,} cells; a board holds at most {MAX_BOARD_CELLS:,} "
                         f"(2^31 - 1: its clicks are 32-bit cell numbers)")


def require_board_shape(width: int, height: int, caller: str) -> None:
    """ValueError naming ``caller`` for boards of fewer cells than a game has (``GameConfig``'s
    least size), which the searches would otherwise play and no other tool reads back."""
    if width < 2 or height < 1:
        raise ValueError(f"{caller}: boards of {width} x {height} cells; a board is at least 2 wide and 1 high")


@dataclasses.dataclass(frozen=True)
class GameConfig:
    """Static size and rule set of a game. Hashable, so it can be a ``jit`` static argument."""

    width: int = 8
    height: int = 6
    colors: int = 5
    rules: str = "dust"  # a name in RULES

    def __post_init__(self):
        if not isinstance(self.rules, str):
            raise TypeError(f"GameConfig.rules must be a str, got {self.rules!r}")
        rules_of(self.rules)
        for name in ("width", "height", "colors"):
            value = getattr(self, name)
            if not is_integer(value):
                raise TypeError(f"GameConfig.{name} must be an int, got {value!r}")
            object.__setattr__(self, name, int(value))  # a numpy integer would not write as JSON
        if self.width < 2:
            raise ValueError(f"width must be >= 2, got {self.width}")
        if self.height < 1:
            raise ValueError(f"height must be >= 1, got {self.height}")
        if not 1 <= self.colors <= MAX_COLORS:
            raise ValueError(f"colors must be in 1..{MAX_COLORS}, got {self.colors}")
        require_cells(self.width, self.height, self.rules)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.width, self.height)

    @property
    def num_cells(self) -> int:
        return self.width * self.height

    def takes_boards_of(self, boards: GameConfig) -> bool:
        """Whether a network trained on this game plays boards of ``boards``: the same size
        and rules, and no colour it never saw."""
        return ((self.width, self.height, self.rules) == (boards.width, boards.height, boards.rules)
                and boards.colors <= self.colors)

    @property
    def size_text(self) -> str:
        """``"WxHxC"``, as ``--size`` and the env ids write a size."""
        return f"{self.width}x{self.height}x{self.colors}"

    @property
    def size_spec(self) -> str:
        """What ``--size`` takes for this game: ``"8x6x5"`` for the dust game,
        ``"former:6x6x4"`` under other rules (``boards.parse_size`` reads it back, a plain
        size as the dust game's: its default)."""
        return self.size_text if self.rules == "dust" else f"{self.rules}:{self.size_text}"

    @property
    def mirror_symmetric(self) -> bool:
        """Whether a board and its mirror image play alike here (``mirror_symmetric``)."""
        return mirror_symmetric(self.rules, self.width)


def uniform_below(bits: jax.Array, n: jax.Array | int) -> jax.Array:
    """Map uniform 16-bit values (held in uint32) to int32 in ``[0, n)``: ``bits * n >> 16``.

    No integer division. Off uniform by at most ``n / 2**16``, the same as
    ``jax.random.randint`` with an 8-bit dtype, which also draws 16 bits per value.
    ``n`` may be traced; it must be at most ``2**16``.
    """
    return jnp.right_shift(bits * jnp.asarray(n, jnp.uint32), 16).astype(jnp.int32)


def random_halfwords(key: jax.Array, count: int) -> jax.Array:
    """``count`` uniform 16-bit values as uint32 ``[count]``: two from every threefry word."""
    words = jax.random.bits(key, (-(-count // 2),), jnp.uint32)
    return jnp.concatenate([words & jnp.uint32(0xFFFF), jnp.right_shift(words, 16)])[:count]


def require_key(key, caller: str) -> None:
    """TypeError unless ``key`` is one JAX random key: ``jax.random.key(seed)``, or the
    older raw ``jax.random.PRNGKey(seed)`` (uint32 ``[2]``, ``[4]`` under the rbg
    implementations: the shape the process's ``jax_default_prng_impl`` makes; a numpy copy
    too); a batch of keys goes through ``vmap``, whose traced key is one."""
    if isinstance(key, (jax.Array, np.ndarray)):
        if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) and key.shape == ():
            return
        given = f"an array of dtype {key.dtype} and shape {key.shape}"
        if key.dtype == np.uint32:
            with jax.ensure_compile_time_eval():  # a constant, also while the caller's jit traces
                raw = jax.random.key_data(jax.random.key(0)).shape
            if key.shape == raw:
                return
            if key.shape in ((2,), (4,)):  # another implementation's raw key
                given += f" (a raw key of this process's JAX has shape {raw}: jax_default_prng_impl)"
    else:
        given = repr(key)
    raise TypeError(f"{caller}: key must be one jax.random.key(seed) (a batch of keys: through jax.vmap), "
                    f"got {given}")


def random_board(key: jax.Array, config: GameConfig = GameConfig()) -> jax.Array:
    """A board with every cell uniform in ``1..colors``: int8 ``[width, height]``."""
    if not isinstance(config, GameConfig):
        raise TypeError(f"random_board takes a GameConfig (e.g. GameConfig(8, 6, 5)), got {config!r}")
    require_key(key, "random_board")
    return _draw_board(key, config)


@functools.partial(jax.jit, static_argnames="config")
def _draw_board(key: jax.Array, config: GameConfig) -> jax.Array:
    # Jitted so that a board drawn outside jit is one program, not a dozen ops (~1 ms).
    colours = uniform_below(random_halfwords(key, config.num_cells), config.colors) + 1
    return colours.reshape(config.shape).astype(BOARD_DTYPE)


def _require_count(count) -> None:
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or not 0 <= count < 2**31:
        raise ValueError(f"count must be an integer in [0, 2^31), got {count!r}")


def indexed_keys(key: jax.Array, count: int) -> jax.Array:
    """``count`` keys, the ``i``-th ``jax.random.fold_in(key, i)``: ``[count]``.

    Item ``i`` of a batch plays with key ``i`` whatever the batch's size, so the first ``n``
    of a longer batch are the ``n`` of a shorter one. ``jax.random.split(key, count)`` gives
    the same keys for JAX's default key implementation (threefry, and rbg) in its default
    ``jax_threefry_partitionable`` mode; in the other mode its keys change with ``count``.
    (For ``unsafe_rbg`` keys the two differ.)"""
    require_key(key, "indexed_keys")
    _require_count(count)
    return jax.vmap(lambda index: jax.random.fold_in(key, index))(jnp.arange(count, dtype=jnp.uint32))


def random_boards(key: jax.Array, count: int, config: GameConfig = GameConfig()) -> jax.Array:
    """``count`` random boards, int8 ``[count, width, height]``: board ``i`` is
    ``random_board(indexed_keys(key, count)[i], config)``, so a longer set begins with a
    shorter one of the same key. ValueError for a count whose draw would not fit in the
    machine's (or the accelerator's) memory (``random_boards_bytes``)."""
    if not isinstance(config, GameConfig):
        raise TypeError(f"random_boards(key, count, config) takes a GameConfig third (e.g. GameConfig(8, 6, 5)), "
                        f"got {config!r}")
    require_key(key, "random_boards")
    _require_count(count)
    # XLA aborts the process, with no Python error, where a draw cannot be allotted.
    machine.require_memory(f"{int(count):,} random {config.size_spec} boards", random_boards_bytes(count, config),
                           device=True)
    return _draw_boards(key, int(count), config)


def random_boards_bytes(count: int, config: GameConfig) -> int:
    """Memory ``random_boards(key, count, config)`` asks for: XLA's allotment for the draw
    (about 9 bytes a cell and 30 a board from 3x3 to 16x16 boards) and a NumPy copy of the
    boards."""
    return int(count) * (10 * config.num_cells + 64)


@functools.partial(jax.jit, static_argnames=("count", "config"))
def _draw_boards(key: jax.Array, count: int, config: GameConfig) -> jax.Array:
    return jax.vmap(lambda board_key: _draw_board(board_key, config))(indexed_keys(key, count))


def random_legal_action(key: jax.Array, action_mask: jax.Array) -> jax.Array:
    """A uniformly random True index of ``action_mask`` (bool ``[N]``): int32 scalar.

    Returns ``N`` if the mask is all False.
    """
    count = jnp.sum(action_mask, dtype=jnp.int32)
    if action_mask.shape[0] <= 2**16:
        k = uniform_below(random_halfwords(key, 1)[0], count)
    else:  # past uniform_below's 2**16 its product wraps, and no cell after the 65,536th was drawn
        k = jax.random.randint(key, (), 0, jnp.maximum(count, 1), jnp.int32)
    return jnp.where(count == 0, action_mask.shape[0], kth_true(action_mask, k))


def inclusive_prefix_sum(values: jax.Array, axis: int) -> jax.Array:
    """Running total along ``axis``: ``[1 0 1 1] -> [1 1 2 3]``.

    Log-step shift-and-add: elementwise work that XLA fuses, where ``jnp.cumsum`` lowers
    to ``reduce-window`` kernels that run several times slower on these short axes.
    """
    step = 1
    while step < values.shape[axis]:
        values = values + _shift(values, step, axis)
        step *= 2
    return values


BIT = np.left_shift(np.uint32(1), np.arange(32, dtype=np.uint32))  # BIT[i]: bit i of a word


def pack_words(mask: jax.Array) -> jax.Array:
    """uint32 ``[..., ceil(N / 32)]``: bool ``mask [..., N]``, column ``32 * w + i`` as bit
    ``i`` of word ``w`` (columns past ``N`` clear)."""
    size = mask.shape[-1]
    padded = jnp.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, -size % 32)])
    bits = jnp.where(padded.reshape(*mask.shape[:-1], -1, 32), BIT, np.uint32(0))
    return jnp.sum(bits, axis=-1, dtype=jnp.uint32)


def kth_true(mask: jax.Array, k: jax.Array) -> jax.Array:
    """Index of the ``k``-th (from 0) True of ``mask`` (bool ``[N]``, ``k`` below its count).

    On 32-bit words: the word holding it from their popcounts, then a binary search of
    popcounts inside that word. Every step is a scalar operation per mask, so under
    ``vmap`` they run along the batch; a prefix sum over the ``N`` cells would shift along
    each mask's own short axis instead.
    """
    words = pack_words(mask)
    words_count = words.shape[0]
    counts = jax.lax.population_count(words).astype(jnp.int32)
    before = inclusive_prefix_sum(counts, axis=0) - counts
    index = jnp.sum(before + counts <= k, dtype=jnp.int32)  # whole words before the k-th True
    index = jnp.minimum(index, words_count - 1)
    return 32 * index + kth_set_bit(words[index], k - before[index])


def kth_set_bit(word: jax.Array, rank: jax.Array) -> jax.Array:
    """int32: the position of the ``rank``-th (from 0) set bit of uint32 ``word`` (any
    matching shapes), by a binary search on popcounts of its halves."""
    position = jnp.zeros(jnp.shape(rank), jnp.int32)
    for half in (16, 8, 4, 2, 1):
        low = jax.lax.population_count(word & jnp.uint32((1 << half) - 1)).astype(jnp.int32)
        beyond = rank >= low
        rank = jnp.where(beyond, rank - low, rank)
        word = jnp.where(beyond, jnp.right_shift(word, half), word)
        position = position + jnp.where(beyond, half, 0)
    return position


# ---------------------------------------------------------------------------------------
# Neighbourhoods
# ---------------------------------------------------------------------------------------


def _shift(mask: jax.Array, offset: int, axis: int) -> jax.Array:
    """``mask`` moved by ``offset`` cells along ``axis``, zero-filled.

    ``_shift([1 2 3], +1, 0) -> [0 1 2]``.
    """
    size = mask.shape[axis]
    fill_shape = list(mask.shape)
    fill_shape[axis] = abs(offset)
    fill = jnp.zeros(fill_shape, mask.dtype)
    if offset > 0:
        kept = jax.lax.slice_in_dim(mask, 0, size - offset, axis=axis)
        return jnp.concatenate([fill, kept], axis=axis)
    kept = jax.lax.slice_in_dim(mask, -offset, size, axis=axis)
    return jnp.concatenate([kept, fill], axis=axis)


def _word_type(height: int):
    """The unsigned type of one packed word: the narrowest that holds a column, else 32 bits."""
    for dtype in (jnp.uint8, jnp.uint16):
        if height <= jnp.iinfo(dtype).bits:
            return dtype
    return jnp.uint32


def pack_columns(mask: jax.Array) -> jax.Array:
    """Bit-pack each column: bool ``[W, H, ...]`` -> ``[W, K, ...]`` words.

    Bit ``y % bits`` of word ``y // bits`` holds cell ``(x, y)``: ``[[1 0 1]] -> [[0b101]]``.
    A word is uint8 for ``H <= 8``, uint16 for ``H <= 16``, else uint32 (``K = ceil(H / 32)``).
    """
    height = mask.shape[1]
    dtype = _word_type(height)
    bits = jnp.iinfo(dtype).bits
    words = []
    for first in range(0, height, bits):
        word = jnp.zeros(mask.shape[:1] + mask.shape[2:], dtype)
        for y in range(first, min(first + bits, height)):
            word = word | jnp.where(mask[:, y], dtype(1 << (y - first)), dtype(0))
        words.append(word)
    return jnp.stack(words, axis=1)


def unpack_columns(packed: jax.Array, height: int) -> jax.Array:
    """Inverse of ``pack_columns``: ``[W, K, ...]`` words -> bool ``[W, height, ...]``."""
    bits = jnp.iinfo(packed.dtype).bits
    one = packed.dtype.type(1)
    return jnp.stack([(packed[:, y // bits] >> (y % bits)) & one != 0 for y in range(height)], axis=1)


def _grow_packed(packed: jax.Array) -> jax.Array:
    """Packed columns plus their 4-neighbours: ``[W, K, ...]`` -> ``[W, K, ...]``.

    Bits beyond the board's height may be set; callers mask with an ``allowed`` set.
    """
    up = jnp.left_shift(packed, 1)
    down = jnp.right_shift(packed, 1)
    if packed.shape[1] > 1:  # carry bits across the words of one column
        top = jnp.iinfo(packed.dtype).bits - 1
        up = up | _shift(jnp.right_shift(packed, top), 1, 1)
        down = down | _shift(jnp.left_shift(packed, top), -1, 1)
    return packed | up | down | _shift(packed, 1, 0) | _shift(packed, -1, 0)


def fold_rows(values: jax.Array, combine=jnp.bitwise_or, axes: int = 1) -> jax.Array:
    """``values`` combined over its first ``axes`` axes: shape ``values.shape[axes:]``.
    ``combine`` must be associative and commutative (integer sums, max, bitwise ops).

    Written as ``combine`` of the first half of the rows with the second, halving until one
    row is left: each step is one elementwise op over whole rows that XLA on a CPU
    vectorises along the trailing (batch) axes. XLA's own reductions over leading axes ran
    several times slower (``is_done`` of 8,192 children of 8 x 6: ~70 ns a board), and a
    chain of one op per row made programs several times larger: the heuristic compiled
    23% slower and ran 19% slower (8,192 8 x 6 boards, 2-core AMD EPYC).
    """
    rows = values.reshape(math.prod(values.shape[:axes]), *values.shape[axes:])  # -1 fails on 0 boards
    while rows.shape[0] > 1:
        half = rows.shape[0] // 2
        folded = combine(rows[:half], rows[half:2 * half])
        rows = jnp.concatenate([folded, rows[2 * half:]]) if rows.shape[0] % 2 else folded
    return rows[0]


class _FixedPointCarry(NamedTuple):
    previous: jax.Array
    current: jax.Array


def _fixed_point(update, start: jax.Array, passes_per_check: int = 1) -> jax.Array:
    """Apply ``update`` until the array stops changing (``update`` must be monotone).

    Never several stencil steps in one expression: XLA fuses them only by recomputing
    neighbours of neighbours, which costs more than the checks it saves. Extra passes run
    in an inner loop instead (``passes_per_check``), whose body XLA keeps apart: on a CPU
    the check costs about a label pass, so checking every second pass made labels ~30%
    faster (0.37 to 0.24 us per 8 x 6 board, 8,192 at a time).
    """

    def changed(carry: _FixedPointCarry) -> jax.Array:
        # A third cheaper on a CPU than ``any(previous != current)``: XLA turns that into a
        # compare and a reduce-window over the whole array.
        difference = jnp.bitwise_xor(carry.previous, carry.current)
        return jnp.any(fold_rows(difference, axes=difference.ndim - 1) != 0)

    def step(carry: _FixedPointCarry) -> _FixedPointCarry:
        current = carry.current
        if passes_per_check > 1:
            current = jax.lax.fori_loop(0, passes_per_check - 1, lambda _, value: update(value), current)
        return _FixedPointCarry(current, update(current))

    # ``previous`` starts as the complement so that the first check always passes.
    return jax.lax.while_loop(changed, step, _FixedPointCarry(~start, start)).current


def _flood_packed(seed: jax.Array, allowed: jax.Array) -> jax.Array:
    """Cells of ``allowed`` 4-connected to ``seed`` within ``allowed`` (bool ``[W, H, ...]``),
    as ``pack_columns`` words ``[W, K, ...]``: a handful of word operations per column and step."""
    allowed_bits = pack_columns(allowed)
    start = pack_columns(seed) & allowed_bits
    return _fixed_point(lambda bits: _grow_packed(bits) & allowed_bits, start)


_Function = TypeVar("_Function", bound=Callable[..., Any])
_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


def standard_numpy(function: _Function) -> _Function:
    """``function`` run (and so traced) under JAX's default NumPy promotion rules, whatever
    the caller's ``jax_numpy_rank_promotion`` and ``jax_numpy_dtype_promotion``: the
    package's code broadcasts ranks and mixes Python scalars, bools and ints as JAX's
    defaults allow, and a user's stricter settings (``"raise"``, ``"strict"``, which JAX's
    docs suggest for catching their own bugs) would otherwise fail inside it."""
    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        with jax.numpy_rank_promotion("allow"), jax.numpy_dtype_promotion("standard"):
            return function(*args, **kwargs)
    return wrapped  # type: ignore[return-value]


# Typed so that a type checker sees each public function's own signature through the
# wrapper, with the board as the wrapper takes it (numpy or nested lists too).
@overload
def public(function: Callable[Concatenate[jax.Array, _Params], _Result], *, indices: tuple[str, ...] = (),
           one_board: bool = False) -> Callable[Concatenate[BoardLike, _Params], _Result]: ...
@overload
def public(function: None = None, *, indices: tuple[str, ...] = (), one_board: bool = False
           ) -> Callable[[Callable[Concatenate[jax.Array, _Params], _Result]],
                         Callable[Concatenate[BoardLike, _Params], _Result]]: ...
def public(function=None, *, indices: tuple[str, ...] = (), one_board: bool = False):
    """``function`` jitted, its ``rules`` argument static: the everyday API compiles once per
    board shape and rule set. Called outside ``jit`` it would otherwise run op by op and
    compile its fixed-point loops on every call (40-150 ms a click or a labelling on a CPU
    instead of tens of microseconds); inside another ``jit`` the wrapper is inlined. A board
    given as nested lists ``[x][y]`` becomes an int8 array first (under ``jit`` a list would
    be a list of scalars). The arguments named in ``indices`` (cells, actions) are checked
    by ``index_argument``; with ``one_board``, the board must be one ``[W, H]`` (under
    ``jax.vmap`` it is)."""
    if function is None:
        return functools.partial(public, indices=indices, one_board=one_board)
    signature = inspect.signature(function)
    static = ("rules",) if "rules" in signature.parameters else ()
    jitted = jax.jit(standard_numpy(function), static_argnames=static)

    @functools.wraps(function)
    def call(board, *args, **kwargs):
        board = from_lists(board)
        if one_board and (np.ndim(board) != 2 or 0 in np.shape(board)):
            raise ValueError(f"{function.__name__} takes one board [W, H], got shape {np.shape(board)}; "
                             f"for a batch, jax.vmap({function.__name__})")
        if np.ndim(board) < 2 or 0 in np.shape(board)[:2]:  # a row or a column is a board of width or height 1
            raise ValueError(f"{function.__name__} takes a board [W, H] (or boards [W, H, ...]) of at least one "
                             f"cell, got shape {np.shape(board)}")
        if indices:
            bound = signature.bind(board, *args, **kwargs)
            for name in indices:
                bound.arguments[name] = index_argument(bound.arguments[name], f"{function.__name__}: {name}")
                if one_board and np.ndim(bound.arguments[name]) != 0:
                    raise ValueError(f"{function.__name__} takes one {name} per board, got shape "
                                     f"{np.shape(bound.arguments[name])}; for many, jax.vmap({function.__name__})")
            return jitted(*bound.args, **bound.kwargs)
        return jitted(board, *args, **kwargs)

    return call


INDEX_MAX = int(np.iinfo(np.int32).max)


def index_argument(value, what: str):
    """A cell coordinate or flat action as the game takes it, as int32: a JAX array or
    tracer of an integer dtype (narrower ones widened, wider ones clipped), a Python or
    numpy integer (or array of them); one beyond int32 is clipped to -1 or ``INDEX_MAX``
    (still off the board, where a click removes nothing) rather than wrapped round onto a
    cell. ValueError naming ``what`` for a float or bool (3.7 would click 3). Inside a
    ``jit`` or ``vmap`` of the caller's with 64-bit mode off, JAX has already narrowed a
    NumPy int64 argument to int32, wrapping one beyond int32 round, before this sees it."""
    if isinstance(value, jax.Array):  # tracers included: only the dtype is known
        if not holds_integers(value.dtype):
            raise ValueError(f"{what} must be an integer, got dtype {value.dtype}")
        if value.dtype.itemsize < 4:  # x * height + y in int8 or int16 would wrap round onto another cell
            return value.astype(jnp.int32)
        if value.dtype != jnp.int32:  # int64 or unsigned (under jax_enable_x64): a cast would wrap 2^32 + 5 to 5
            lowest = -1 if jnp.issubdtype(value.dtype, jnp.signedinteger) else 0
            return jnp.clip(value, lowest, INDEX_MAX).astype(jnp.int32)
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return np.int32(min(max(value, -1), INDEX_MAX))
    array = np.asarray(value)
    if not holds_integers(array.dtype):
        raise ValueError(f"{what} must be an integer, got {value!r}")
    return np.clip(array, -1, INDEX_MAX).astype(np.int32)


def holds_integers(dtype) -> bool:
    """Whether cells or indices of ``dtype`` are integers: bool is not (True would be 1),
    nor a float (1.7 would be 1)."""
    return dtype != bool and bool(jnp.issubdtype(dtype, jnp.integer))


_Cells = TypeVar("_Cells", np.ndarray, jax.Array)


def check_colours(cells: _Cells, what: str) -> _Cells:
    """``cells`` (any shape), or ValueError naming ``what``: they must be integers 0 (empty)
    to ``MAX_COLORS``."""
    if not holds_integers(cells.dtype):
        raise ValueError(f"{what} must hold integers (colours 0 to {MAX_COLORS}), got dtype {cells.dtype}")
    if cells.size:
        low, high = cells.min(), cells.max()
        if low < 0 or high > MAX_COLORS:
            raise ValueError(f"{what} holds {low if low < 0 else high}; colours are 0 (empty) to {MAX_COLORS}")
    return cells


def require_not_text(board, what: str = "") -> None:
    """ValueError, led by ``"<what>: "``, for a board given as text or bytes, which only
    ``parse_board`` reads (it takes the shape)."""
    if isinstance(board, (str, bytes)):
        text = "text.decode()" if isinstance(board, bytes) else "text"
        raise ValueError(f"{what + ': ' if what else ''}a board given as text ({board!r:.24}): read it with "
                         f"parse_board({text}, width, height) first")


def from_lists(boards: BoardLike) -> jax.Array:
    """Boards given as nested lists (``[x][y]``, or ``[b][x][y]``) or a numpy array as an
    int8 array, checked (``check_colours``); a JAX array checked for an integer dtype (an
    int8 one's values stay on the device, unchecked; another integer dtype's are checked,
    then made int8); a tracer's dtype checked and made int8, its values unseen. Under
    ``jit`` a list would be traced as a list of scalars, and float cells would fail deep
    inside the game, so the public entry points convert first."""
    require_not_text(boards)
    if isinstance(boards, (list, tuple)):
        try:
            cells = np.asarray(boards)
        except ValueError as error:  # rows or boards of different lengths
            raise ValueError(f"boards given as lists are not a rectangular array ([x][y] or [b][x][y]): "
                             f"{error}") from None
        if cells.size == 0:  # numpy reads [] as floats: the shape is what is wrong
            raise ValueError(f"a board given as lists holds no cells (shape {cells.shape})")
        return jnp.asarray(check_colours(cells, "a board given as lists"), BOARD_DTYPE)
    if isinstance(boards, np.ndarray):
        return jnp.asarray(check_colours(boards, "a board array"), BOARD_DTYPE)
    if isinstance(boards, jax.core.Tracer):  # the same dtype in and out as outside a transform
        if not holds_integers(boards.dtype):
            raise ValueError(f"a board array must hold integers (colours 0 to {MAX_COLORS}), got dtype {boards.dtype}")
        return boards.astype(BOARD_DTYPE)
    if isinstance(boards, jax.Array) and boards.dtype != BOARD_DTYPE:
        # Results are int8, as documented: the values are checked first, so none wraps round.
        return check_colours(boards, "a board array").astype(BOARD_DTYPE)
    return cast(jax.Array, boards)  # an int8 array, or what the caller's own checks refuse


def batch_last_vmap(function: _Function) -> _Function:
    """``function`` (arrays with any trailing batch axes) with a ``vmap`` rule that moves
    the mapped axis of every argument last, calls ``function`` once on the whole batch, and
    moves the mapped axis of every output back to the front.

    Unmapped arguments are broadcast. One call on the batch also means one fixed-point loop
    for the whole batch, run until its slowest board settles (extra passes leave settled
    boards unchanged), instead of ``vmap``'s per-board loop with a select per pass.
    """
    function = standard_numpy(function)
    batched = jax.custom_batching.custom_vmap(function)

    @batched.def_vmap
    def _rule(axis_size: int, in_batched: list, *args):
        moved = [
            jnp.moveaxis(arg, 0, -1) if is_batched else jnp.broadcast_to(arg[..., None], arg.shape + (axis_size,))
            for arg, is_batched in zip(args, in_batched)
        ]
        outputs = function(*moved)
        return jax.tree.map(lambda out: jnp.moveaxis(out, -1, 0), outputs), jax.tree.map(lambda _: True, outputs)

    return cast(_Function, batched)


# ---------------------------------------------------------------------------------------
# Clusters
# ---------------------------------------------------------------------------------------


def cell_values(board: jax.Array, action: jax.Array) -> jax.Array:
    """``board``'s value at flat index ``action``: board ``[W, H, ...]``, action ``[...]``
    -> ``[...]``, one gather per board (0 for an index outside the board)."""
    cells = board.reshape((board.shape[0] * board.shape[1], -1))
    picked = jnp.take_along_axis(cells, action.reshape(1, -1), axis=0, mode="fill", fill_value=0)
    return picked.reshape(action.shape)


def _cluster_at(board: jax.Array, action: jax.Array, colour: jax.Array) -> jax.Array:
    """Packed words ``[W, K, ...]`` of the cluster at flat index ``action`` whose colour is
    ``colour`` (``cell_values(board, action)``); none if that is 0. Any trailing batch axes."""
    width, height = board.shape[:2]
    seed = cell_index(width, height, jnp.int32, board.ndim - 2) == action
    return _flood_packed(seed, (board == colour) & (colour != 0))


def _action_at(board: jax.Array, x: jax.typing.ArrayLike, y: jax.typing.ArrayLike) -> jax.Array:
    """Flat index of cell ``(x, y)`` of one board ``[W, H]``, or -1 (no cell) outside it."""
    width, height = board.shape
    x, y = jnp.asarray(x), jnp.asarray(y)
    inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
    return jnp.where(inside, x * height + y, -1)


@public(indices=("x", "y"), one_board=True)
def cluster_mask(board: jax.Array, x: jax.typing.ArrayLike, y: jax.typing.ArrayLike) -> jax.Array:
    """The cluster containing cell ``(x, y)``: bool ``[W, H]``; all False if it is empty."""
    action = _action_at(board, x, y)
    return unpack_columns(_cluster_at(board, action, cell_values(board, action)), board.shape[1])


def _same_colour_neighbour(board: jax.Array, offset: int, axis: int) -> jax.Array:
    """bool, ``board``'s shape: the cell ``offset`` away along ``axis`` exists and has my colour."""
    neighbour = _shift(board, -offset, axis)  # neighbour[x] = board[x + offset]
    return (neighbour == board) & (board != 0)


def label_dtype(cells: int):
    """The narrowest signed integer type that holds ``0..cells``: the labels' working type."""
    for dtype in (jnp.int8, jnp.int16):
        if cells <= jnp.iinfo(dtype).max:
            return dtype
    return jnp.int32


def cell_index(width: int, height: int, dtype=jnp.int32, batch_dims: int = 0) -> jax.Array:
    """Flat index ``x * height + y`` of every cell: ``[W, H]`` then ``batch_dims`` ones."""
    index = jnp.arange(width * height, dtype=dtype)
    return index.reshape((width, height) + (1,) * batch_dims)


def labels_cells_first(boards: jax.Array) -> jax.Array:
    """``cluster_labels`` of boards int8 ``[W, H, ...]`` (batch axes last), in
    ``label_dtype(W * H)``, with ``W * H`` (not ``-1``) on empty cells.

    Batch axes last is how XLA on a CPU vectorises this: the shifts then move whole
    contiguous rows of boards, and narrow labels fill more lanes (5x faster per board than
    the batch-first layout ``vmap`` gives, at 8,192 boards of 8 x 6).
    """
    width, height = boards.shape[:2]
    cells = width * height
    dtype = label_dtype(cells)
    occupied = boards != 0
    links = [(o, a, _same_colour_neighbour(boards, o, a)) for a in (0, 1) for o in (1, -1)]

    def relax(labels: jax.Array) -> jax.Array:
        for offset, axis, linked in links:
            neighbour = _shift(labels, -offset, axis)
            labels = jnp.where(linked, jnp.minimum(labels, neighbour), labels)
        return labels

    start = jnp.where(occupied, cell_index(width, height, dtype, boards.ndim - 2), jnp.asarray(cells, dtype))
    return _fixed_point(relax, start, passes_per_check=2)


def _public_labels(labels: jax.Array, cells: int) -> jax.Array:
    return jnp.where(labels == cells, -1, labels.astype(jnp.int32))


@public(one_board=True)
@batch_last_vmap
def cluster_labels(board: jax.Array) -> jax.Array:
    """Cluster id of every cell: int32 ``[W, H]``.

    The id of an occupied cell is the smallest flat index ``x * height + y`` in its
    cluster; empty cells get ``-1``. Minimum-label propagation over same-colour edges, run
    to a fixed point. Under ``jax.vmap`` the batch is moved last (``labels_cells_first``).
    """
    return _public_labels(labels_cells_first(board), board.shape[0] * board.shape[1])


@public(one_board=True)
def cluster_sizes(board: jax.Array) -> jax.Array:
    """Size of the cluster containing each cell: int32 ``[W, H]``, 0 on empty cells (one
    board; for a batch, ``jax.vmap``)."""
    labels = cluster_labels(board).reshape(-1)
    counts = jnp.zeros(labels.shape[0] + 1, jnp.int32).at[labels].add(1, mode="drop")
    return jnp.where(labels >= 0, counts[labels], 0).reshape(board.shape)


def in_group_of_two(board: jax.Array) -> jax.Array:
    """Occupied cells with a same-coloured neighbour, i.e. in a group of 2 or more: bool,
    ``board``'s shape ``[W, H, ...]``."""
    return functools.reduce(jnp.logical_or, [_same_colour_neighbour(board, offset, axis)
                                             for axis in (0, 1) for offset in (1, -1)])


@public(one_board=True)
def legal_action_mask(board: jax.Array, rules: str = "dust") -> jax.Array:
    """Cells a click removes something at: bool ``[W, H]`` (occupied cells, in a group of
    at least the rules' ``min_group``)."""
    if rules_of(rules).min_group == 1:
        return board != 0
    return in_group_of_two(board)


@public(one_board=True)
def cluster_action_mask(board: jax.Array, rules: str = "dust") -> jax.Array:
    """One cell per clickable cluster, the one with the smallest flat index: bool ``[W, H]``.

    Clicking any cell of a cluster has the same effect, so searches branch on these only.
    """
    width, height = board.shape
    index = jnp.arange(width * height, dtype=jnp.int32).reshape(width, height)
    return (cluster_labels(board) == index) & legal_action_mask(board, rules)


@public
def is_over(board: jax.Array, rules: str = "dust") -> jax.Array:
    """No click removes anything (for ``dust`` and ``former``: the board is empty; for
    ``samegame`` and ``clickomania``: no two touching cells share a colour): bool ``[...]``
    for boards ``[W, H, ...]`` (a scalar for one board; trailing axes are batch axes, so a
    batch-first ``[B, W, H]`` array must be ``jax.vmap``-ed)."""
    if rules_of(rules).min_group == 1:
        return is_done(board)
    return ~jnp.any(in_group_of_two(board), axis=(0, 1))


def points(removed: jax.typing.ArrayLike) -> jax.Array:
    """SameGame's points for removing a group of ``removed`` cells: ``(removed - 2)^2``
    (0 for fewer than 2), int32, any shape: exact up to ``MAX_POINTS_CELLS`` (the
    largest board the points rules allow), past which int32 wraps round. ValueError for
    counts that are not integers (3.9 would score as 3)."""
    if isinstance(removed, (list, tuple)):
        removed = np.asarray(removed)
    if not (holds_integers(removed.dtype) if hasattr(removed, "dtype") else is_integer(removed)):
        raise ValueError(f"points: removed must be integer counts, got {getattr(removed, 'dtype', removed)!r}")
    removed = jnp.asarray(removed, jnp.int32)
    return jnp.where(removed >= 2, (removed - 2) ** 2, 0)


# ---------------------------------------------------------------------------------------
# Contraction
# ---------------------------------------------------------------------------------------


# Lines this short settle by a sequential bubble: in a whole click of the 8 x 6 dust game
# it ran 5-9% faster than odd-even passes (``benchmarks/env_throughput.py``).
BUBBLE_MAX_LINE = 6


def _compact_to_front(cells: jax.Array, axis: int) -> jax.Array:
    """Non-empty cells moved to the low end of ``axis``, order kept: ``[0 3 0 2] -> [3 2 0 0]``.

    Odd-even transposition: pass ``p`` pairs places ``(i, i + 1)`` for every ``i`` of
    parity ``p`` and lets the upper cell of a pair drop into an empty lower one; non-empty
    cells never swap, so the order is kept, and ``n`` passes settle a line of ``n``. Each
    pass is a few selects on strided slices that span the batch axes, which XLA fuses. The
    bubble (one select per pair of places, ``n (n - 1) / 2`` steps in sequence) is kept for
    lines of up to ``BUBBLE_MAX_LINE`` places; at 9 places and more it was slower (a third
    slower for 7 x 9 Former clicks, half the speed at 15 x 15), and its compile time grows
    so fast that a 3 x 40 click took 12 s to compile (odd-even: 0.5 s).
    """
    length = cells.shape[axis]
    empty = jnp.zeros((), cells.dtype)
    if length <= BUBBLE_MAX_LINE:
        lines = [jax.lax.index_in_dim(cells, i, axis, keepdims=False) for i in range(length)]
        for settled in range(length - 1):
            for i in range(length - 1 - settled):
                hole = lines[i] == 0
                lines[i], lines[i + 1] = jnp.where(hole, lines[i + 1], lines[i]), jnp.where(hole, empty, lines[i + 1])
        return jnp.stack(lines, axis)
    for step in range(length):  # lines here are longer than the bubble's, so every pass has pairs
        parity = step % 2
        pairs = (length - parity) // 2
        end = parity + 2 * pairs
        lower = jax.lax.slice_in_dim(cells, parity, end, 2, axis)
        upper = jax.lax.slice_in_dim(cells, parity + 1, end, 2, axis)
        hole = lower == 0
        paired = jnp.stack([jnp.where(hole, upper, lower), jnp.where(hole, empty, upper)], axis + 1)
        parts = [jax.lax.slice_in_dim(cells, 0, parity, axis=axis),
                 paired.reshape(cells.shape[:axis] + (2 * pairs,) + cells.shape[axis + 1:]),
                 jax.lax.slice_in_dim(cells, end, length, axis=axis)]
        cells = jnp.concatenate([part for part in parts if part.shape[axis]], axis)
    return cells


@public
def apply_gravity(board: jax.Array) -> jax.Array:
    """Cells fall to the bottom of their column, order kept: boards ``[W, H, ...]`` (any
    trailing batch axes), int8 (under ``jit`` too)."""
    return _compact_to_front(board, axis=1)


@public
def slide_to_centre(board: jax.Array) -> jax.Array:
    """Each row's left half packs right against the centre and its right half packs left,
    on boards ``[W, H, ...]`` (any trailing batch axes).

    One row of width 6: ``[1 0 2 | 0 3 0] -> [0 1 2 | 3 0 0]``. The left half is the
    mirror image of the right half's rule, so it is flipped, compacted and flipped back.
    """
    half = board.shape[0] // 2
    if half == 0:  # one column: nothing slides
        return board
    left = _compact_to_front(board[:half][::-1], axis=0)[::-1]
    right = _compact_to_front(board[half:], axis=0)
    return jnp.concatenate([left, right], axis=0)


def close_columns_left(board: jax.Array) -> jax.Array:
    """Empty columns of a board after gravity (``[W, H, ...]``) removed, the columns right
    of them moved left in order (SameGame): columns ``[a, 0, b] -> [a, b, 0]``.

    After gravity a column is empty exactly when its bottom cell is. The new order of the
    columns is a stable sort of the small ``[W, ...]`` emptiness flags, then one gather of
    whole columns: a bubble of column selects, as ``_compact_to_front`` does for cells,
    makes XLA recompute the chain of flags inside every cell's select (10x slower).
    """
    width = board.shape[0]
    position = jnp.arange(width, dtype=jnp.int32).reshape((width,) + (1,) * (board.ndim - 2))
    order = jnp.argsort(jnp.where(board[:, 0] != 0, position, position + width), axis=0)
    return jnp.take_along_axis(board, order[:, None], axis=0)


_SIDEWAYS = {"centre": slide_to_centre, "left": close_columns_left, "none": lambda board: board}


@public
def settle(board: jax.Array, rules: str = "dust") -> jax.Array:
    """Gravity, then the rules' sideways move, on boards ``[W, H, ...]`` (any trailing
    batch axes): what follows every click."""
    return _SIDEWAYS[rules_of(rules).sideways](apply_gravity(board))


@public(one_board=True)
def contract(board: jax.Array, rules: str = "dust") -> jax.Array:
    """``settle`` one board int8 ``[W, H]`` (under ``jax.vmap``, the batch is moved last)."""
    return _moves(rules).contract(board)


# ---------------------------------------------------------------------------------------
# Moves
# ---------------------------------------------------------------------------------------


def _count_packed(words: jax.Array) -> jax.Array:
    """Set bits of ``pack_columns`` words ``[W, K, ...]`` per board: int32 ``[...]``."""
    # dtype: without it, jax_enable_x64 makes the count (``removed``) int64.
    return jnp.sum(jax.lax.population_count(words).astype(jnp.int32), axis=(0, 1), dtype=jnp.int32)


def click_cells_first(board: jax.Array, action: jax.Array, colour: jax.Array,
                      rules: str = "dust") -> tuple[jax.Array, jax.Array]:
    """``click_action`` on boards int8 ``[W, H, ...]`` (batch axes last) whose clicked cell
    holds ``colour`` (``cell_values(board, action)``, which a caller may already have).

    Returns ``(new_boards, removed)``: int8 ``[W, H, ...]`` and int32 ``[...]``. The removed
    count comes from the packed cluster, so nothing reduces over the contracted boards. A
    group smaller than the rules' ``min_group`` stays (``removed == 0``).
    """
    words = _cluster_at(board, action, colour)
    removed = _count_packed(words)
    if rules_of(rules).min_group > 1:
        removed = jnp.where(removed >= rules_of(rules).min_group, removed, 0)
        words = jnp.where(removed > 0, words, jnp.zeros((), words.dtype))
    cleared = jnp.where(unpack_columns(words, board.shape[1]), jnp.zeros((), board.dtype), board)
    return settle(cleared, rules), removed


class _Moves(NamedTuple):
    contract: Callable[..., Any]
    remove_and_contract: Callable[..., Any]
    click_action: Callable[..., Any]


@functools.cache
def _moves(rules: str) -> _Moves:
    """The batched moves of one rule set (``batch_last_vmap`` takes arrays only, so each
    rule set gets its own)."""
    rules_of(rules)

    def remove_and_contract(board, removed_mask):
        cleared = jnp.where(removed_mask, jnp.zeros((), board.dtype), board)
        return settle(cleared, rules), jnp.sum(removed_mask & (board != 0), axis=(0, 1), dtype=jnp.int32)

    def click_action(board, action):
        return click_cells_first(board, action, cell_values(board, action), rules)

    return _Moves(batch_last_vmap(lambda board: settle(board, rules)), batch_last_vmap(remove_and_contract),
                  batch_last_vmap(click_action))


@public
def remove_and_contract(board: jax.Array, removed_mask: jax.typing.ArrayLike,
                        rules: str = "dust") -> tuple[jax.Array, jax.Array]:
    """Empty the cells of ``removed_mask`` and settle (whatever their groups' sizes).

    Args:
      board: int8 ``[W, H]``, or boards ``[W, H, ...]`` with trailing batch axes.
      removed_mask: bool, the board's shape (nested lists too).
      rules: a name in ``RULES`` (static).

    Returns the new int8 board(s), of the board's shape, and the int32 number of occupied
    cells removed, ``[...]`` (the batch axes). ValueError for a mask of another shape or not of bools (a
    float's 0.5 would empty a cell and count none).
    """
    removed_mask = jnp.asarray(removed_mask)
    if removed_mask.dtype != bool or removed_mask.shape != board.shape:
        raise ValueError(f"remove_and_contract: removed_mask must be bools of the board's shape {board.shape}, got "
                         f"{removed_mask.dtype} {removed_mask.shape}")
    return _moves(rules).remove_and_contract(board, removed_mask)


@public(indices=("action",), one_board=True)
def click_action(board: jax.Array, action: jax.typing.ArrayLike, rules: str = "dust") -> tuple[jax.Array, jax.Array]:
    """``click`` addressed by the flat action index ``x * height + y``.

    Args:
      board: int8 ``[W, H]``.
      action: int scalar; an index outside ``[0, W * H)`` removes nothing.
      rules: a name in ``RULES`` (static).

    Returns:
      ``(new_board, removed)``: int8 ``[W, H]`` and int32 scalar. A click on an empty cell,
      or on a group smaller than the rules' ``min_group``, removes nothing (``removed == 0``)
      and returns the board settled: unchanged for every position the rules make (a board
      given unsettled comes back settled). Under ``jax.vmap`` pass arrays of boards and actions.
    """
    return _moves(rules).click_action(board, action)


@public(indices=("x", "y"), one_board=True)
def click(board: jax.Array, x: jax.typing.ArrayLike, y: jax.typing.ArrayLike,
          rules: str = "dust") -> tuple[jax.Array, jax.Array]:
    """Click cell ``(x, y)``: remove its cluster and settle the board under ``rules``.

    Args:
      board: int8 ``[W, H]``.
      x, y: int scalars, ``0 <= x < W``, ``0 <= y < H``.
      rules: a name in ``RULES`` (static; default the dust game).

    Returns:
      ``(new_board, removed)``: int8 ``[W, H]`` and int32 scalar. A click on an empty cell,
      off the board (as an out-of-range action is for the environment; nothing wraps), or on
      a group smaller than the rules' ``min_group``, removes nothing (``removed == 0``) and
      returns the board settled: unchanged for every position the rules make (a board given
      unsettled comes back settled). Under ``jax.vmap`` pass arrays of boards and coordinates.
    """
    return click_action(board, _action_at(board, x, y), rules)


@public
@batch_last_vmap
def is_done(board: jax.Array) -> jax.Array:
    """The board is empty: bool scalar for one board int8 ``[W, H]``; ``[...]`` for boards
    ``[W, H, ...]``, whose trailing axes are batch axes (a batch-first ``[B, W, H]`` array
    would be read as boards ``[B, W]``: ``jax.vmap`` it)."""
    return fold_rows(board, axes=2) == 0


def one_hot(board: BoardLike, colors: int, dtype: jax.typing.DTypeLike = jnp.float32) -> jax.Array:
    """One-hot planes ``[..., W, H, colors + 1]`` of ``dtype``, channel 0 marking empty cells.
    ``colors`` sets the output's shape: static under ``jit`` (``static_argnames="colors"``).

    Raises:
      ValueError: ``colors`` traced or not an integer in 1..MAX_COLORS, a ``board`` not of
        integers, or a concrete one holding a colour above ``colors`` or below 0 (its cells
        would have no channel set); traced boards' values are not looked at.
    """
    if isinstance(colors, jax.core.Tracer):  # it sets the output's shape
        raise ValueError("one_hot: colors sets the number of planes, so under jit it must be static: "
                         "jax.jit(one_hot, static_argnames='colors')")
    if not is_integer(colors) or not 1 <= colors <= MAX_COLORS:
        raise ValueError(f"one_hot: colors must be an integer in 1..{MAX_COLORS}, got {colors!r}")
    dtype_in = board.dtype if hasattr(board, "dtype") else np.asarray(board).dtype
    if not holds_integers(dtype_in):  # a float cell had no channel set
        raise ValueError(f"one_hot: the board must hold integers (colours 0 to {colors}), got dtype {dtype_in}")
    if not isinstance(board, jax.core.Tracer) and np.size(board):
        if int(np.max(board)) > colors:
            raise ValueError(f"one_hot: the board holds colour {int(np.max(board))}, above colors={colors}")
        if int(np.min(board)) < 0:
            raise ValueError(f"one_hot: the board holds {int(np.min(board))}; colours are 0 (empty) to {colors}")
    return jax.nn.one_hot(native_byte_order(board), colors + 1, dtype=dtype)


def native_byte_order(cells):
    """``cells`` as they are, or a NumPy array in the other byte order (as
    ``np.fromfile(path, ">i4")`` reads one) in this machine's: JAX takes no such array."""
    if isinstance(cells, np.ndarray) and not cells.dtype.isnative:
        return cells.astype(cells.dtype.newbyteorder("="))
    return cells
