"""Play a batch of boards to the end with a policy, on the device, in one compiled loop.

A *policy* is ``policy(key, board, params) -> action``: a PRNG key, one int8 board
``[W, H]`` and the policy's parameters (a pytree, or None) in, an int32 flat action
``x * height + y`` out. Policies must be pure and ``vmap``-able.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import game
from jaxdust.core.boards import model_colors, require_hashable, require_model_fits, require_settled
from jaxdust.core.flags import INT32_LIMIT

Policy = Callable[[jax.Array, jax.Array, object], jax.Array]  # (key, board, params) -> action


class PlayResult(NamedTuple):
    """What ``play_boards`` played on each board: ``clicks`` int32 ``[N]``, the number of
    clicks made (wasted ones included; ``BeamResult.length`` counts the same); ``cleared``
    bool ``[N]``, emptied within the click cap; ``actions`` int32 ``[N, max_clicks]``, the
    flat actions ``x * height + y`` taken, -1 after the game ended (``score(...,
    wasted=True)`` takes them; a policy's action off the board, played as a click that
    removes nothing, is logged as ``W * H``, which ``score`` refuses); ``points`` int32
    ``[N]``, SameGame's points of the line (``(n - 2)^2`` a group, +1000 if cleared);
    ``cells_left`` int32 ``[N]``, occupied cells at the end."""

    clicks: jax.Array
    cleared: jax.Array
    actions: jax.Array
    points: jax.Array
    cells_left: jax.Array


class _PlayCarry(NamedTuple):
    boards: jax.Array  # int8 [N, W, H]
    clicks: jax.Array  # int32 [N]
    points: jax.Array  # int32 [N]
    actions: jax.Array  # int32 [N, max_clicks]
    step: jax.Array  # int32 []


@game.standard_numpy
def play_boards(boards: game.BoardLike, policy: Policy, key: jax.Array, max_clicks: int,
                params: Any = None, rules: str = "dust") -> PlayResult:
    """Play every board with ``policy`` under ``rules`` until no click removes anything (for
    the dust game: the board is empty) or ``max_clicks`` clicks were made.

    Args:
      boards: int8 ``[N, W, H]``.
      policy: ``policy(key, board, params) -> action``, see ``jaxdust.evaluation.baselines``; a
        hashable object (e.g. a module-level function), since it is a static argument.
      key: PRNG key for stochastic policies; board ``i`` plays with
        ``game.indexed_keys(key, N)[i]`` (folded with the click's number), so it plays alike
        however ``play_in_chunks`` splits the ``N`` boards and among more boards after it;
        moved to another index, it gets another key. (With JAX's default threefry keys:
        under ``rbg`` and ``unsafe_rbg`` keys a vmapped draw depends on the batch too.)
      max_clicks: the click cap; stops games that never finish (e.g. a policy that keeps
        clicking empty cells).
      params: the policy's parameters, passed to every call (traced, not baked in).
      rules: a name in ``game.RULES`` (static).

    Stops as soon as every game has ended, so the loop costs the longest game, not the cap.

    Raises:
      ValueError: for boards that are not a non-empty batch ``[N, W, H]`` of integers, too
        large for the rules' int32 figures (``game.require_cells``), not settled under
        ``rules`` or holding colours the policy's network was not built for (checked where
        they are not traced), a ``max_clicks`` that is not a positive
        integer below 2^31, unknown rules, ``rules`` other than those the policy's
        network says it was trained under (``boards.model_rules``), or a network's policy
        under rules outside ``game.CLICK_RULES`` (it may choose a lone cell, which the
        points rules do not remove).
      TypeError: ``key`` not one random key (``jax.random.key(seed)``, or a raw
        ``jax.random.PRNGKey(seed)``), a policy that cannot
        be hashed, or (while tracing)
        a policy that does not return one integer action per board.
    """
    boards = _checked(boards, policy, max_clicks, rules)
    game.require_key(key, "play_boards")
    return _play_boards(boards, policy, game.indexed_keys(key, boards.shape[0]), int(max_clicks), params, rules)


def _checked(boards, policy: Policy, max_clicks, rules: str) -> jax.Array:
    """``boards`` as an array, ValueError for what ``play_boards`` refuses."""
    boards = game.from_lists(boards)
    if np.ndim(boards) == 3 and np.shape(boards)[0] == 0:
        raise ValueError("play_boards: no boards (a batch of 0)")
    if np.ndim(boards) != 3 or 0 in np.shape(boards):
        raise ValueError(f"play_boards takes a batch of boards [N, W, H], got shape {np.shape(boards)}"
                         + (" (one board: boards[None])" if np.ndim(boards) == 2 else ""))
    game.require_board_shape(boards.shape[1], boards.shape[2], "play_boards")
    if not game.is_integer(max_clicks) or not 1 <= max_clicks < INT32_LIMIT:  # the click counter is int32
        raise ValueError(f"play_boards: max_clicks must be a positive integer below 2^31, got {max_clicks!r}")
    game.rules_of(rules)
    game.require_cells(boards.shape[1], boards.shape[2], rules)  # points past int32 would wrap
    require_settled(boards, rules, "play_boards")  # a position the rules never make plays otherwise
    require_model_fits(boards, policy, rules, "play_boards")
    if model_colors(policy) is not None:  # a network's cell or cluster may be a single cell, which removes nothing
        game.require_click_rules(rules, f"play_boards with a network's policy ({type(policy).__name__})")
    require_hashable(policy, "policy", "play_boards")
    return boards


@functools.partial(jax.jit, static_argnames=("policy", "max_clicks", "rules"))
def _play_boards(boards: jax.Array, policy: Policy, board_keys: jax.Array, max_clicks: int,
                 params, rules: str) -> PlayResult:
    """``play_boards``, its arguments checked; ``board_keys`` ``[N]``: each board's own."""
    num_boards, cells = boards.shape[0], boards.shape[1] * boards.shape[2]
    over = jax.vmap(lambda board: game.is_over(board, rules))

    def unfinished(carry: _PlayCarry) -> jax.Array:
        return (carry.step < max_clicks) & ~jnp.all(over(carry.boards))

    def one_click(carry: _PlayCarry) -> _PlayCarry:
        click_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(board_keys, carry.step)
        actions = _actions(jax.vmap(policy, in_axes=(0, 0, None))(click_keys, carry.boards, params), num_boards, cells)
        playing = ~over(carry.boards)
        after, removed = jax.vmap(lambda board, action: game.click_action(board, action, rules))(carry.boards, actions)
        return _PlayCarry(
            boards=jnp.where(playing[:, None, None], after, carry.boards),
            clicks=carry.clicks + playing,
            points=carry.points + jnp.where(playing, game.points(removed), 0),
            actions=carry.actions.at[:, carry.step].set(jnp.where(playing, actions, -1)),
            step=carry.step + 1,
        )

    start = _PlayCarry(
        boards=boards,
        clicks=jnp.zeros(num_boards, jnp.int32),
        points=jnp.zeros(num_boards, jnp.int32),
        actions=jnp.full((num_boards, max_clicks), -1, jnp.int32),
        step=jnp.int32(0),
    )
    end = jax.lax.while_loop(unfinished, one_click, start)
    cleared = jax.vmap(game.is_done)(end.boards)
    cells_left = jnp.sum(end.boards != 0, axis=(1, 2), dtype=jnp.int32)
    return PlayResult(end.clicks, cleared, end.actions, end.points + jnp.where(cleared, game.CLEAR_BONUS, 0), cells_left)


def _actions(actions: jax.Array, num_boards: int, cells: int) -> jax.Array:
    """A policy's actions ``[N]`` as int32, every one off the board (a negative one too) as
    ``cells``, never -1 (which marks a line's end); TypeError, while tracing, for a policy
    that does not return one integer per board. Under x64 ``jnp.argmax`` gives int64: the
    range is checked before the cast, which would wrap 2**32 round to cell 0."""
    if not isinstance(actions, jax.Array):  # None, or a tuple of actions
        raise TypeError(f"play_boards: a policy returns one integer action per board, got {type(actions).__name__}")
    if not jnp.issubdtype(actions.dtype, jnp.integer) or actions.shape != (num_boards,):
        raise TypeError(f"play_boards: a policy returns one integer action per board, "
                        f"got {actions.dtype} of shape {actions.shape[1:]} per board")
    if jnp.iinfo(actions.dtype).bits < 32:  # widened first: a uint8 cannot hold 256 cells to compare with
        actions = actions.astype(jnp.int32)
    return jnp.where((actions < 0) | (actions >= cells), cells, actions).astype(jnp.int32)


# Boards played at a time where a caller does not say (evaluate.py's --chunk, a run's
# evaluations): argmax play of 8x6 boards holds ~200 KB a board (the cell head's messages).
DEFAULT_CHUNK = 256


def play_in_chunks(boards, policy: Policy, key: jax.Array, max_clicks: int, chunk: int,
                   progress=None, params=None, rules: str = "dust") -> PlayResult:
    """``play_boards`` over ``chunk`` boards at a time (one compilation: the last chunk is
    padded with empty boards, which end at once), or all at once when there are fewer: a
    search policy (MCTS) pays for every padded board. Each board plays with the key
    ``play_boards(boards, ..., key)`` gives it, whatever ``chunk`` (a stochastic policy
    plays alike only with threefry keys: see ``play_boards``). ``progress(n)`` is called
    per chunk."""
    # Cut, padded and joined on the host (boards, keys' data, results): on the device each
    # new size of slice, padding and join compiled a program on the first call.
    game.require_key(key, "play_in_chunks")
    boards = np.asarray(_checked(boards, policy, max_clicks, rules), np.int8)
    if not game.is_integer(chunk) or chunk < 1:
        raise ValueError(f"play_in_chunks: chunk must be a positive integer (boards played at a time), got {chunk!r}")
    total = boards.shape[0]
    chunk = min(int(chunk), total)
    key_data = np.asarray(jax.random.key_data(game.indexed_keys(key, total)))
    parts = []
    for start in range(0, total, chunk):
        part, part_keys = boards[start : start + chunk], key_data[start : start + chunk]
        padding = chunk - part.shape[0]
        part = np.concatenate([part, np.zeros((padding, *part.shape[1:]), part.dtype)])
        part_keys = np.concatenate([part_keys, key_data[:padding]])  # the padded boards end at once
        keys = jax.random.wrap_key_data(jnp.asarray(part_keys), impl=jax.random.key_impl(key))
        result = _play_boards(jnp.asarray(part), policy, keys, int(max_clicks), params, rules)
        parts.append(jax.tree.map(lambda leaf: np.asarray(leaf)[: chunk - padding], result))
        if progress is not None:
            progress(chunk - padding)
    return jax.tree.map(lambda *leaves: jnp.asarray(np.concatenate(leaves)), *parts)
