"""Anytime search in JAX: a beam search over a batch of boards with a pluggable scorer.

Each click, every kept position is expanded by every cluster (one child per cluster, made
``chunk`` at a time from a ``ChildList``, so the work follows the number of clusters and
not the ``W * H`` cells), the children are scored, positions equal up to the mirror image
``x -> width - 1 - x`` are kept once (where the two play alike, ``game.mirror_symmetric``), and the ``width`` best of each board survive. A board's
search stops at the first click that empties it, which gives the shortest solution this
beam can see. All boards of a batch advance together in one compiled loop (CPU or GPU).

A *scorer* is ``scorer(boards, params)``: int8 boards ``[M, W, H]`` and its parameters
(a pytree, or None) to float32 ``[M]``, lower is better (an estimate of the clicks left).
``jaxdust.search.heuristic.heuristic_for(rules)`` is the hand-made one (the default);
learned networks fit the same signature (``jaxdust.learn.agents``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import game, machine
from jaxdust.core.boards import require_hashable, require_model_fits, require_model_rules, require_settled
from jaxdust.search.heuristic import Scorer, heuristic_for, heuristic_scorer
from jaxdust.search.keys import solver_key
from jaxdust.search.selection import first_trues, smallest_columns

LOOKAHEAD_SHORTLIST = 4  # children per kept position that the lookahead rescoring sees
CHUNK = 8192  # children made and scored at a time


class ChildList(NamedTuple):
    """The (position, cluster) pairs of a batch of positions, in position then cell order,
    listed without being compacted: ``code_at`` finds any entry from per-position
    bit masks, so a caller pays for the entries it reads, not for every cell."""

    per_position: jax.Array  # int32 [M]: children of each position
    ends: jax.Array  # int32 [M]: children of positions 0..m together
    words: jax.Array  # uint32 [M, ceil(W * H / 32)]: bit c of a position's words: cell c is a cluster's first
    cells: int

    @property
    def total(self) -> jax.Array:
        return self.ends[-1]

    def code_at(self, index: jax.Array) -> jax.Array:
        """int32, ``index``'s shape: the pair code ``parent * W * H + action`` of the list's
        ``index``-th entry (below ``total``): the position by a binary search of ``ends``,
        the cell by the rank inside its mask."""
        parent = jnp.minimum(jnp.searchsorted(self.ends, index, side="right"), self.ends.shape[0] - 1)
        rank = index - (self.ends[parent] - self.per_position[parent])
        words = self.words[parent]
        action = jnp.zeros_like(index)
        for word in range(words.shape[-1] - 1):  # skip whole words before the rank-th bit
            bits = jax.lax.population_count(words[..., word]).astype(jnp.int32)
            later = (action == 32 * word) & (rank >= bits)
            rank = jnp.where(later, rank - bits, rank)
            action = jnp.where(later, action + 32, action)
        rank_word = jnp.take_along_axis(words, (action // 32)[..., None], axis=-1)[..., 0]
        return (parent * self.cells + action + game.kth_set_bit(rank_word, rank)).astype(jnp.int32)


def list_children(labels: jax.Array, alive: jax.Array) -> ChildList:
    """The ``ChildList`` of positions with labels int32 ``[M, W * H]`` (``game.cluster_labels``
    flattened) whose ``alive`` (bool ``[M]``) is set: one child per cluster."""
    cells = labels.shape[1]
    is_action = (labels == jnp.arange(cells, dtype=labels.dtype)) & alive[:, None]
    per_position = jnp.sum(is_action, axis=1, dtype=jnp.int32)
    return ChildList(per_position, game.inclusive_prefix_sum(per_position, axis=0), game.pack_words(is_action), cells)


def play_codes(boards: jax.Array, labels: jax.Array, code: jax.Array, rules: str = "dust"
               ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The children of pair codes ``parent * W * H + action`` (int32 ``[C]``) of boards int8
    ``[M, W, H]`` with labels ``[M, W * H]``, contracted under ``rules``:
    ``(parent [C], action [C], children [C, W, H])``."""
    width, height = boards.shape[1:]
    parent, action = code // (width * height), code % (width * height)
    removed = (labels[parent] == action[:, None]).reshape(-1, width, height)
    contract = functools.partial(game.remove_and_contract, rules=rules)
    return parent, action, jax.vmap(contract)(boards[parent], removed)[0]


def for_each_child(boards: jax.Array, labels: jax.Array, alive: jax.Array, chunk: int, visit, carry,
                   rules: str = "dust"):
    """Play every cluster of every alive position, ``chunk`` children at a time.

    The work follows the number of clusters (about 26 on 8 x 6 boards a few random clicks
    in) rather than the ``W * H`` cells: each chunk reads its entries of the
    ``list_children`` list, and the loop runs as many chunks as there are children.

    Args:
      boards: int8 ``[M, W, H]``; labels: int32 ``[M, W * H]`` (``game.cluster_labels``
        flattened); alive: bool ``[M]``, the positions to expand.
      visit: ``visit(carry, start, children [C, W, H], parent [C], action [C], valid [C])
        -> carry``: entry ``start + i`` of the list is ``children[i]``, made by clicking
        flat cell ``action[i]`` of ``boards[parent[i]]``; ``valid`` is False past the end.
      rules: the click rule set the children are made by (``game.CLICK_RULES``).

    Returns ``(listing, carry)``: the ``ChildList`` and the final carry.
    """
    listing = list_children(labels, alive)
    chunk = min(chunk, labels.size)  # no more children than cells of the positions

    def entries(k):  # int32 [chunk]: the list entries of chunk k
        return k * chunk + jnp.arange(chunk, dtype=jnp.int32)

    def codes_of_chunk(k):  # int32 [chunk], 0 past the list's end
        index = entries(k)
        return jnp.where(index < listing.total, listing.code_at(index), 0)

    chunks = (listing.total + chunk - 1) // chunk

    # Each chunk's codes are made one iteration ahead and carried (the last iteration makes
    # its own again, unplayed, rather than index past the list's slots): made beside the
    # children, XLA on a CPU fused code_at's rank search into the contraction's gathers and
    # redid it for every cell of every child (20 x 20 boards, width 8: 2x the time a click,
    # benchmarks/beam_sizes.py).
    def one_chunk(k, state):
        carry, code = state
        start = k * chunk
        valid = entries(k) < listing.total
        parent, action, children = play_codes(boards, labels, code, rules)
        return visit(carry, start, children, parent, action, valid), codes_of_chunk(jnp.minimum(k + 1, chunks - 1))

    return listing, jax.lax.fori_loop(0, chunks, one_chunk, (carry, codes_of_chunk(0)))[0]


def child_capacity(positions: int, cells: int, chunk: int) -> int:
    """Entries a ``for_each_child`` carry buffer needs for ``positions`` positions of
    ``cells`` cells: every child they can have, rounded up to the whole chunks it writes."""
    children = positions * cells
    chunk = min(chunk, children)  # as for_each_child
    return -(-children // chunk) * chunk


def require_children_indexable(caller: str, count: int, width: int, cells: int, chunk: int,
                               shortlist: int | None = None) -> None:
    """ValueError unless the children a click of ``count`` boards' ``width`` positions can
    be indexed in int32: a slot each, rounded up to the whole ``chunk`` s that
    ``for_each_child`` writes. With a rescorer's ``shortlist``, the children one click below
    each of ``shortlist`` children a position count too (made ``CHUNK`` at a time, as
    ``lookahead_scorer`` makes them)."""
    children, slots = count * width * cells, child_capacity(count * width, cells, chunk)
    if shortlist is not None:
        children *= shortlist
        slots = max(slots, child_capacity(count * width * shortlist, cells, CHUNK))
    if slots > game.INDEX_MAX:
        looked = f" x shortlist {shortlist}" if shortlist is not None else ""
        raise ValueError(f"{caller}: {count} boards x width {width:,}{looked} x {cells} cells = {children:,} "
                         f"children a click ({slots:,} slots in whole chunks), beyond 2^31: lower the width or "
                         "search fewer boards at a time")


def child_bytes(cells: int, max_clicks: int, shortlist: int | None = None) -> int:
    """About the memory ``beam_search`` holds per child a click on boards of ``cells``
    cells searched to ``max_clicks`` (its score, key and origin, and the kept lines, a
    parent and a move per click), with a rescorer's ``shortlist``, if any. XLA's memory
    analysis of the compiled search (CPU, jaxdust 0.2.65, widths 10^4-10^5, 6x5 to 15x15
    boards) measured 58-60 bytes a child to the cells' clicks, 51 to 3 clicks, and 59, 72,
    200 and 781 with a lookahead rescorer's shortlist of 1, 4, 16 and 64; these are a
    little below, so that a refusal is never of a search that fits."""
    return 48 + 8 * max_clicks // cells if shortlist is None else max(64, 12 * shortlist)


def require_beam_memory(caller: str, count: int, width: int, cells: int, per_child: int) -> None:
    """ValueError unless a beam over ``count`` boards of ``cells`` cells at ``width``,
    ``per_child`` bytes a child, fits in the memory of JAX's device: it would otherwise
    fail inside XLA after compiling, with a traceback."""
    machine.require_memory(f"{caller}: {count} board{'s' if count > 1 else ''} x width {width:,} on {cells} cells",
                           count * width * cells * per_child, device=True)


def _labels(boards: jax.Array) -> jax.Array:
    """int32 ``[M, W * H]``: ``game.cluster_labels`` of boards ``[M, W, H]``, flattened."""
    return jax.vmap(game.cluster_labels)(boards).reshape(boards.shape[0], -1)


def lookahead_scorer(base: Scorer, chunk: int = CHUNK, rules: str = "dust") -> Scorer:
    """A scorer that plays every cluster of each board and keeps the best outcome:
    ``1 + min(base(child))``, with ``base = 0`` for an emptied board (and 0 for an empty
    board). It sees the next click's effect exactly, for one ``base`` call per cluster;
    pair it with the beam's ``shortlist`` so only the most promising children pay that.
    ``chunk`` children are made and scored at a time, under ``rules``, which must be those
    ``base`` says it was trained under, if it says (``boards.model_rules``); the lookahead
    says ``rules`` in turn, so a beam under other rules refuses it as a rescorer. Two calls
    with equal arguments give equal scorers, so a beam compiled for one serves the other;
    ``base`` must be hashable (a module-level function or a frozen dataclass), as a beam's
    ``scorer`` must: TypeError otherwise; ValueError for a ``chunk`` that is not a positive
    integer (at 0 it would make no child and score every board last)."""
    if not game.is_integer(chunk) or chunk < 1:
        raise ValueError(f"lookahead_scorer: chunk must be a positive integer, got {chunk!r}")
    require_model_rules(base, rules, "lookahead_scorer")
    require_hashable(base, "the base scorer", "lookahead_scorer")
    return LookaheadScorer(base, int(chunk), rules)


@dataclasses.dataclass(frozen=True)
class LookaheadScorer:
    """``lookahead_scorer``'s scorer: hashable and equal by its fields (a static argument)."""

    base: Scorer
    chunk: int = CHUNK
    rules: str = "dust"

    @property
    def trained_rules(self) -> str:  # read by boards.model_rules
        return self.rules

    @game.standard_numpy
    def __call__(self, boards: jax.Array, params=None) -> jax.Array:
        alive = ~jax.vmap(game.is_done)(boards)

        def visit(best, start, children, parent, action, valid):
            # A child the base cannot score (NaN) ranks last among its siblings, not the parent.
            scores = _rankable(self.base(children, params), children, "lookahead's base scorer")
            values = jnp.where(jax.vmap(game.is_done)(children), 0.0, scores)
            return best.at[parent].min(jnp.where(valid, values, jnp.inf))

        best = for_each_child(boards, _labels(boards), alive, self.chunk, visit,
                              jnp.full(boards.shape[0], jnp.inf, jnp.float32), self.rules)[1]
        return jnp.where(alive, 1.0 + best, 0.0)


lookahead_heuristic = lookahead_scorer(heuristic_scorer)


def sort_distinct(scores: jax.Array, hashes: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Candidates sorted by score then key, repeats marked: boards with equal key and equal
    score are one position (reached twice, or mirrored), kept once. The beam's keys are
    ``keys.solver_key`` (then this is the numba beam's order); avi's, ``keys.canonical_hash``.

    Args: scores float32 ``[..., K]``; hashes uint32 ``[..., K, 2]`` (rows sorted apart).
    Returns the order int32 ``[..., K]`` and the sorted scores ``[..., K]``, inf at every
    repeat.
    """
    order = jnp.lexsort((hashes[..., 1], hashes[..., 0], scores), axis=-1).astype(jnp.int32)
    sorted_scores = jnp.take_along_axis(scores, order, axis=-1)
    sorted_hashes = jnp.take_along_axis(hashes, order[..., None], axis=-2)
    repeat = (sorted_scores[..., 1:] == sorted_scores[..., :-1]) & jnp.all(
        sorted_hashes[..., 1:, :] == sorted_hashes[..., :-1, :], axis=-1)
    repeat = jnp.concatenate([jnp.zeros_like(repeat[..., :1]), repeat], axis=-1)
    return order, jnp.where(repeat, jnp.inf, sorted_scores)


def _first_distinct(scores: jax.Array, hashes: jax.Array, count: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The ``count`` best distinct candidates of each row (``sort_distinct``'s order).

    Args: scores float32 ``[B, K]``; hashes uint32 ``[B, K, 2]``.
    Returns their columns int32 ``[B, count]``, their scores ``[B, count]`` (inf: fewer
    exist), and ``sort_distinct``'s sorted scores ``[B, K]`` (inf at repeats).
    """
    order, distinct = sort_distinct(scores, hashes)
    pick, found = first_trues(jnp.isfinite(distinct), count)
    columns = jnp.take_along_axis(order, pick, axis=-1)
    chosen = jnp.where(found, jnp.take_along_axis(distinct, pick, axis=-1), jnp.inf)
    return columns, chosen, distinct


def _best_distinct(scores: jax.Array, hashes_of, count: int, prefixes: tuple[int, ...] = (2, 8)
                   ) -> tuple[jax.Array, jax.Array]:
    """``_first_distinct`` over whole rows, sorting only a prefix (the smallest scores, as
    ``selection.smallest_columns`` picks them) when it decides.

    Args: scores float32 ``[B, R]``; ``hashes_of(columns [B, K]) -> uint32 [B, K, 2]``.

    Sorting ``R`` (96,000 at width 2000 on 8 x 6) costs ~10x picking and sorting twice
    ``count``; the prefix decides whenever ``count`` distinct candidates score strictly
    below its last score (ties at its edge would otherwise be cut by index, not by key).
    When it does not, a longer prefix (``prefixes`` times ``count``) is tried, then whole
    rows: without the lookahead, scores tie in large groups and 2 x ``count`` ended inside
    a tie on 7 of 13 clicks (16 eval boards), each sorting every child.
    """
    rows = scores.shape[-1]
    prefix = min(rows, prefixes[0] * count) if prefixes else rows
    if prefix == rows:
        every = jnp.broadcast_to(jnp.arange(rows, dtype=jnp.int32), scores.shape)
        return _first_distinct(scores, hashes_of(every), count)[:2]
    columns, last = smallest_columns(scores, prefix)
    picked, chosen, distinct = _first_distinct(jnp.take_along_axis(scores, columns, axis=1), hashes_of(columns), count)
    decided = (jnp.sum(distinct < last, axis=-1, dtype=jnp.int32) >= count) | ~jnp.isfinite(last[:, 0])
    return jax.lax.cond(jnp.all(decided), lambda: (jnp.take_along_axis(columns, picked, axis=-1), chosen),
                        lambda: _best_distinct(scores, hashes_of, count, prefixes[1:]))


_LAST = float(np.finfo(np.float32).max)


def _one_per_board(scores: jax.Array, boards: jax.Array, which: str) -> jax.Array:
    """``scores`` of ``boards`` ``[M, W, H]`` as float32 ``[M]`` (a scorer of float64 under
    ``jax_enable_x64`` included); TypeError, while tracing, for scores that are not one
    number per board (a scalar would broadcast to every child and rank them all alike)."""
    if np.shape(scores) != boards.shape[:1]:
        raise TypeError(f"beam_search: the {which} returns one score per board, [M] for boards [M, W, H]; "
                        f"got shape {np.shape(scores)} for {boards.shape[0]} boards")
    return jnp.asarray(scores, jnp.float32)


def _rankable(scores: jax.Array, boards: jax.Array, which: str = "scorer") -> jax.Array:
    """A scorer's ``scores`` of ``boards`` (``_one_per_board``) with each one that is not
    finite (a network's NaN, an infinity) ranked after every finite one: that child stays
    in the search, last, where the selection would drop it (``inf`` marks a slot with no
    child) or, for a NaN whose sign bit is set, rank it below every finite score and lose
    the board's whole beam."""
    scores = _one_per_board(scores, boards, which)
    return jnp.where(jnp.isfinite(scores), scores, _LAST)


class BeamResult(NamedTuple):
    """What ``beam_search`` found for each board (without the batch axis for one board):
    ``length`` int32 ``[B]``, the clicks of its solution (-1 if none within ``max_clicks``),
    and ``actions`` int32 ``[B, max_clicks]``, the line as flat actions ``x * height + y``,
    -1 after its end (``replay``, ``score`` and ``positions`` take it as it is)."""

    length: jax.Array
    actions: jax.Array


class _BeamCarry(NamedTuple):
    boards: jax.Array  # int8 [B * width, W, H]; board b's beam is rows b * width ...
    labels: jax.Array  # int32 [B * width, W * H]
    alive: jax.Array  # bool [B * width]
    parents: jax.Array  # int32 [max_clicks, B * width], each kept position's row one click earlier
    moves: jax.Array  # int32 [max_clicks, B * width], the flat action that made it
    depth: jax.Array  # int32 []
    length: jax.Array  # int32 [B], -1 until a board is cleared
    last_parent: jax.Array  # int32 [B], the row the clearing click was made from
    last_move: jax.Array  # int32 [B], the clearing click


@game.standard_numpy
def beam_search(boards: game.BoardLike, width: int = 2000, scorer: Scorer | None = None,
                max_clicks: int | None = None, params: Any = None, rescorer: Scorer | None = None,
                shortlist: int = LOOKAHEAD_SHORTLIST, chunk: int = CHUNK, rules: str = "dust") -> BeamResult:
    """Beam search from a batch of boards (int8 ``[B, W, H]``), or one board ``[W, H]``.

    Every board keeps its own ``width`` positions; the boards share one compiled loop that
    runs until the last of them is cleared, so a batch costs about its slowest board's
    clicks times the children of all boards.

    Args:
      width: positions kept per board and click.
      scorer: ``scorer(boards [M, W, H], params) -> [M]``, lower is better (a score that
        is not finite, NaN or infinite, ranks after every finite one); a static
        argument, so pass a module-level function or one object reused across calls
        (default: the hand-made heuristic of ``rules``, ``heuristic.heuristic_for``).
      max_clicks: give up after this many clicks, below 2^31 (default: cells on the board).
      params: the scorer's parameters (traced, so new weights need no recompilation).
      rescorer: a costlier scorer (e.g. ``lookahead_heuristic``) that reorders each
        board's ``shortlist * width`` best distinct children under ``scorer`` before
        ``width`` are kept; it gets ``params`` too.
      chunk: children made and scored at a time (bounds memory).
      rules: a fewest-clicks rule set (``"dust"`` or ``"former"``); SameGame's points
        have ``jaxdust.search.points``.

    Returns a ``BeamResult``, batched like ``boards``. The search compiles once per batch
    shape and static argument; every click removes a cell, so a ``max_clicks`` beyond the
    cells searches (and compiles) as the cells, its ``actions`` padded with -1.

    Raises:
      ValueError: for boards that are not 2-D or 3-D, not settled under ``rules`` or holding
        colours a network scorer was not built for (boards given outside a trace: under
        ``jit`` they are not looked at), a size that is not a positive integer, rules
        that are not a fewest-clicks rule set, or other rules than those a network scorer
        says it was trained under (``boards.model_rules``).
      TypeError: a scorer or rescorer that is not a function, cannot be hashed (it is a
        static argument), or whose scores are not one number per board ``[M]``.
    """
    boards = game.from_lists(boards)
    shape = np.shape(boards)
    if len(shape) not in (2, 3):
        raise ValueError(f"beam_search takes boards [B, W, H] or one board [W, H], got shape {shape}")
    game.require_board_shape(shape[-2], shape[-1], "beam_search")
    if shape[0] == 0:
        raise ValueError("beam_search: no boards (a batch of 0)")
    for name, value in (("width", width), ("max_clicks", max_clicks), ("shortlist", shortlist), ("chunk", chunk)):
        # No limit; a shortlist is read by a rescorer only.
        if value is None and (name == "max_clicks" or (name == "shortlist" and rescorer is None)):
            continue
        if not game.is_integer(value) or value < 1:
            raise ValueError(f"beam_search: {name} must be a positive integer, got {value!r}")
    if max_clicks is not None and max_clicks > game.INDEX_MAX:  # lengths are int32; actions [B, max_clicks]
        raise ValueError(f"beam_search: max_clicks must be below 2^31, got {max_clicks!r}")
    width, chunk = int(width), int(chunk)
    shortlist = LOOKAHEAD_SHORTLIST if shortlist is None else int(shortlist)
    max_clicks = None if max_clicks is None else int(max_clicks)
    game.require_click_rules(rules, "beam_search")
    for name, model in (("scorer", scorer), ("rescorer", rescorer)):
        if model is not None and not callable(model):  # beam_search(boards, 8, "former"): rules= is a keyword
            raise TypeError(f"beam_search: {name} must be a function of (boards, params), got {model!r}"
                            + ("; the rule set is given as rules=" if isinstance(model, str) else ""))
        require_hashable(model, name, "beam_search")
    scorer = heuristic_for(rules) if scorer is None else scorer
    require_settled(boards, rules, "beam_search")  # a position the rules never make plays otherwise
    for model in (scorer, rescorer):
        require_model_fits(boards, model, rules, "beam_search")
    one_board = len(shape) == 2
    batch = boards[None] if one_board else boards
    count, cells = batch.shape[0], shape[-2] * shape[-1]
    listed = shortlist if rescorer is not None else None
    require_children_indexable("beam_search", count, width, cells, chunk, listed)
    requested = max_clicks or cells
    require_beam_memory("beam_search", count, width, cells, child_bytes(cells, min(requested, cells), listed))
    found = _beam_search(batch, width, scorer, min(requested, cells), params, rescorer, shortlist, chunk, rules)
    if requested > cells:
        found = BeamResult(found.length, jnp.pad(found.actions, ((0, 0), (0, requested - cells)), constant_values=-1))
    return jax.tree.map(lambda batched: batched[0], found) if one_board else found


@functools.partial(jax.jit, static_argnames=("width", "scorer", "max_clicks", "rescorer", "shortlist", "chunk",
                                             "rules"))
def _beam_search(boards: jax.Array, width: int, scorer: Scorer, max_clicks: int, params, rescorer: Scorer | None,
                 shortlist: int, chunk: int, rules: str) -> BeamResult:
    """``beam_search`` of a batch ``[B, W, H]``, its arguments checked."""
    count, board_width, board_height = boards.shape
    cells = board_width * board_height
    rows = count * width
    listed = shortlist * width if rescorer is not None else width  # children per board that reach the rescorer
    board_of_row = jnp.arange(rows, dtype=jnp.int32) // width
    mirror = game.mirror_symmetric(rules, board_width)

    def step(carry: _BeamCarry) -> _BeamCarry:
        def visit(found, start, children, parent, action, valid):
            # Every child is keyed while it is at hand: the selection's prefixes then only
            # gather keys. Making their few candidates again and keying them cost about as
            # much to run, but each prefix held its own copy of the contraction, and the beam
            # compiled 27% slower (8 x 6, widths 1 to 2000, 2-core AMD EPYC).
            scores, cleared, keys = found
            done = valid & jax.vmap(game.is_done)(children)
            values = jnp.where(valid, _rankable(scorer(children, params), children), jnp.inf)
            return (jax.lax.dynamic_update_slice(scores, values, (start,)),
                    jax.lax.dynamic_update_slice(cleared, done, (start,)),
                    jax.lax.dynamic_update_slice(keys, jax.vmap(lambda child: solver_key(child, mirror))(children),
                                                 (start, jnp.zeros_like(start))))

        capacity = child_capacity(rows, cells, chunk)
        empty = (jnp.full(capacity, jnp.inf, jnp.float32), jnp.zeros(capacity, bool), jnp.zeros((capacity, 2), jnp.uint32))
        listing, (scores, cleared, child_keys) = for_each_child(
            carry.boards, carry.labels, carry.alive, chunk, visit, empty, rules)

        # Children are listed position by position, so each board's form one run of the list.
        per_board = jnp.sum(listing.per_position.reshape(count, width), axis=1, dtype=jnp.int32)
        offset = jnp.cumsum(per_board, dtype=jnp.int32) - per_board
        column = jnp.arange(width * cells, dtype=jnp.int32)
        in_run = column < per_board[:, None]
        listed_at = jnp.where(in_run, offset[:, None] + column, 0)  # [B, width * cells], index in the list
        run_scores = jnp.where(in_run, scores[listed_at], jnp.inf)
        run_cleared = in_run & cleared[listed_at]

        finished = jnp.any(run_cleared, axis=1) & (carry.length < 0)
        first = listing.code_at(offset + jnp.argmax(run_cleared, axis=1).astype(jnp.int32))
        last_parent = jnp.where(finished, first // cells, carry.last_parent)
        last_move = jnp.where(finished, first % cells, carry.last_move)
        length = jnp.where(finished, carry.depth + 1, carry.length)

        def children_at(columns):  # [B, K] columns of the runs -> parents, actions, boards, all [B * K]
            code = listing.code_at(jnp.take_along_axis(listed_at, columns, axis=1).reshape(-1))
            return play_codes(carry.boards, carry.labels, code, rules)

        def hashes_of(columns):
            return child_keys[jnp.take_along_axis(listed_at, columns, axis=1)]

        listed_columns, listed_scores = _best_distinct(run_scores, hashes_of, listed)
        parent, action, children = children_at(listed_columns)
        if rescorer is None:
            keep, kept_scores = jnp.arange(rows, dtype=jnp.int32), listed_scores.reshape(-1)
        else:
            rescores = _rankable(rescorer(children, params), children, "rescorer")
            rescored = jnp.where(jnp.isfinite(listed_scores), rescores.reshape(count, listed), jnp.inf)
            negated, best = jax.lax.top_k(-rescored, width)  # ties keep the shortlist's order
            keep = (best + jnp.arange(count, dtype=jnp.int32)[:, None] * listed).reshape(-1)
            kept_scores = -negated.reshape(-1)
        boards = children[keep]
        return _BeamCarry(
            boards=boards,
            labels=_labels(boards),
            alive=jnp.isfinite(kept_scores) & (length < 0)[board_of_row],
            parents=carry.parents.at[carry.depth].set(parent[keep]),
            moves=carry.moves.at[carry.depth].set(action[keep]),
            depth=carry.depth + 1,
            length=length,
            last_parent=last_parent,
            last_move=last_move,
        )

    def searching(carry: _BeamCarry) -> jax.Array:
        return (carry.depth < max_clicks) & jnp.any(carry.alive)

    start_boards = jnp.zeros((rows, board_width, board_height), boards.dtype).at[::width].set(boards)
    first_row = jnp.arange(rows, dtype=jnp.int32) % width == 0
    start_done = jax.vmap(game.is_done)(boards)
    start = _BeamCarry(
        boards=start_boards,
        labels=_labels(start_boards),
        alive=first_row & ~start_done[board_of_row],
        parents=jnp.zeros((max_clicks, rows), jnp.int32),
        moves=jnp.zeros((max_clicks, rows), jnp.int32),
        depth=jnp.int32(0),
        length=jnp.where(start_done, 0, -1).astype(jnp.int32),
        last_parent=jnp.zeros(count, jnp.int32),
        last_move=jnp.zeros(count, jnp.int32),
    )
    end = jax.lax.while_loop(searching, step, start)

    def trace_back(i, state):
        actions, row = state
        depth = max_clicks - 1 - i
        earlier = depth < end.length - 1
        actions = actions.at[:, depth].set(jnp.where(earlier, end.moves[depth, row], actions[:, depth]))
        return actions, jnp.where(earlier, end.parents[depth, row], row)

    clicks = jnp.arange(max_clicks, dtype=jnp.int32)
    actions = jnp.where((clicks == end.length[:, None] - 1), end.last_move[:, None], -1)
    actions = jax.lax.fori_loop(0, max_clicks, trace_back, (actions, end.last_parent))[0]
    return BeamResult(end.length, actions)


def default_batch(width: int) -> int:
    """Boards per ``beam_search`` call: about 4,096 positions' worth on a CPU, 65,536 on an
    accelerator. A batch runs until its slowest board is cleared, and every click's
    selection spans every board's rows; on a 2-core CPU (scratch runs of this function),
    2 boards at width 2000 ran 1.6x faster per board than 32, and 64 at width 64 and 512
    at width 8 ~1.2-1.4x faster than 512 and 64 (``benchmarks/beam.py --batch N`` times
    width 2000)."""
    positions = 4096 if jax.default_backend() == "cpu" else 65536
    return max(1, positions // width)


def beam_solutions(boards, width: int, scorer: Scorer | None = None, params=None,
                   max_clicks: int | None = None, rescorer: Scorer | None = None, batch: int | None = None,
                   progress=None, rules: str = "dust") -> tuple[np.ndarray, np.ndarray]:
    """``beam_search`` of ``boards`` (int8 ``[N, W, H]``) under ``rules``, ``batch`` boards per call on the
    default device (default: ``default_batch``); the last batch is padded with empty
    boards, so one compiled search serves all. ``progress(n)`` is called after each.

    Returns NumPy ``(lengths [N], actions [N, max_clicks])`` as in ``BeamResult``.
    """
    game.require_click_rules(rules, "beam_solutions")  # before the boards are checked settled under them
    found = in_batches(lambda part: beam_search(part, width=width, scorer=scorer, params=params, max_clicks=max_clicks,
                                                rescorer=rescorer, rules=rules),
                       boards, width, batch, progress, "beam_solutions", rules)
    return found.length, found.actions


def in_batches(search, boards, width: int, batch: int | None, progress, what: str, rules: str):
    """``search(part)`` of ``boards`` (``[N, W, H]``, arrays or nested lists), ``batch``
    boards a call (default: ``default_batch(width)``): the last batch is padded with empty
    boards (no click: their lines end at once), so one compiled search serves all.
    ``progress(n)`` is called after each. Returns the results (a NamedTuple of arrays
    ``[N, ...]``) as NumPy arrays; ``what`` names the search in errors. Every board is
    checked settled under ``rules`` before the first search, so that an error names the
    board by its index in ``boards`` and comes before any work."""
    boards = game.from_lists(boards)
    if np.ndim(boards) != 3:
        raise ValueError(f"{what} takes boards [N, W, H], got shape {np.shape(boards)}")
    if not game.is_integer(width) or width < 1:  # before default_batch divides by it
        raise ValueError(f"{what}: width must be a positive integer, got {width!r}")
    if batch is not None and (not game.is_integer(batch) or batch < 1):
        raise ValueError(f"{what}: batch must be a positive integer or None, got {batch!r}")
    total = boards.shape[0]
    if total == 0:
        raise ValueError(f"{what}: no boards (a batch of 0)")
    require_settled(boards, rules, what)
    # Cut and padded on the host: a JAX array's slices and padding compiled a program for
    # each new size, so the first call over many boards compiled as it searched.
    boards = np.asarray(boards)
    group = min(total, batch or default_batch(width))
    parts = []
    for start in range(0, total, group):
        part = boards[start : start + group]
        real = part.shape[0]
        if real < group:
            part = np.concatenate([part, np.zeros((group - real, *part.shape[1:]), part.dtype)])
        parts.append(jax.tree.map(lambda field: np.asarray(field)[:real], search(jnp.asarray(part))))
        if progress is not None:
            progress(real)
    return jax.tree.map(lambda *fields: np.concatenate(fields), *parts)


def beam_lengths(boards, width: int, scorer: Scorer | None = None, params=None,
                 max_clicks: int | None = None, progress=None, rules: str = "dust") -> np.ndarray:
    """Clicks the beam search of ``width`` needs on each of ``boards`` (int8 ``[N, W, H]``;
    ``beam_solutions``' batches); -1 where it gives up at ``max_clicks``."""
    return beam_solutions(boards, width, scorer, params, max_clicks, progress=progress, rules=rules)[0]
