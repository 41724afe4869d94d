"""Keys of positions in JAX, equal for a board and its mirror image (``x -> W - 1 - x``)
where the two play alike (``mirror=True``; ``game.mirror_symmetric`` says where).

``solver_key`` is the exact solver's key (``jaxdust.solver.ida.position_key``). The beams
merge positions with equal keys and break score ties by it, so a JAX beam and the numba
beam with the same scorer keep the same positions and find solutions of the same length.
``canonical_hash`` is ~5x cheaper and only merges equal positions (value iteration's
beams, where the order of ties does not need to match anything). A solver key is the
smaller of a board's and its mirror image's 64-bit sums of splitmix64-mixed colour planes;
JAX without x64 has no 64-bit integers, so the arithmetic runs on ``(high, low)`` uint32
pairs. Its constants repeat the solver's (``search`` may not import ``solver``); the tests
compare the two keys. Boards of more than 64 cells have
several words per plane (the solver's planes stop at 64 cells; the key extends past them).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxdust.core import game

_GOLDEN = 0x9E3779B97F4A7C15  # ida's colour salt
_MIX_1, _MIX_2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # splitmix64's multipliers (bitboard.mix)
_WORD = 2**64 - 1


def _halves(value: int) -> tuple[np.uint32, np.uint32]:
    return np.uint32(value >> 32), np.uint32(value & 0xFFFFFFFF)


def _multiply_high(a: jax.Array, b: np.uint32) -> jax.Array:
    """The high 32 bits of the 64-bit product of uint32 ``a`` and ``b``, from 16-bit halves."""
    a_low, a_high = a & 0xFFFF, a >> 16
    b_low, b_high = b & np.uint32(0xFFFF), b >> np.uint32(16)
    low_low, high_low = a_low * b_low, a_high * b_low
    cross = (low_low >> 16) + (high_low & 0xFFFF) + a_low * b_high  # below 2**32
    return a_high * b_high + (high_low >> 16) + (cross >> 16)


def _multiply(value, constant: int):
    high, low = value
    c_high, c_low = _halves(constant)
    return _multiply_high(low, c_low) + low * c_high + high * c_low, low * c_low


def _xor_shift(value, shift: int):
    high, low = value
    return high ^ (high >> shift), low ^ ((low >> shift) | (high << (32 - shift)))


def _mix(value):
    """splitmix64's finaliser on a (high, low) pair."""
    value = _multiply(_xor_shift(value, 30), _MIX_1)
    value = _multiply(_xor_shift(value, 27), _MIX_2)
    return _xor_shift(value, 31)


def _packed(cells: jax.Array, colour: jax.Array) -> jax.Array:
    """uint32 ``[...]``: bit ``i`` set where ``cells[i]`` (``[n <= 32, ...]``) is ``colour``;
    0 for no cells."""
    if cells.shape[0] == 0:
        return jnp.zeros(cells.shape[1:], jnp.uint32)
    shifts = np.arange(cells.shape[0], dtype=np.uint32).reshape((-1,) + (1,) * (cells.ndim - 1))
    return game.fold_rows((cells == colour).astype(jnp.uint32) << shifts, jnp.bitwise_or)


def solver_key(board: jax.Array, mirror: bool = True) -> jax.Array:
    """uint32 ``[2, ...]`` (high, low) key of boards int8 ``[W, H, ...]``, equal for a board and
    its mirror image when ``mirror`` (static; ``game.mirror_symmetric``); for boards of at
    most 64 cells it is ``ida.position_key``'s value. Under ``jax.vmap`` the key comes back
    ``[M, 2]``."""
    high, low = _oriented_keys(board)  # [2 (direct, mirrored), ...] each
    if not mirror:
        return jnp.stack([high[0], low[0]])
    mirrored_first = (high[1] < high[0]) | ((high[1] == high[0]) & (low[1] < low[0]))
    return jnp.stack([jnp.where(mirrored_first, part[1], part[0]) for part in (high, low)])


@game.batch_last_vmap
def _oriented_keys(board: jax.Array) -> jax.Array:
    """uint32 ``[2 (high, low), 2 (board, mirror image), ...]``: the solver's key of each
    orientation. Under ``jax.vmap`` the batch runs last.

    One loop pass per colour, both orientations side by side: written as one expression,
    XLA on a CPU fused the whole key into one loop that ran ~10x slower per board.
    """
    width, height = board.shape[:2]
    cells = width * height
    words = -(-cells // 64)
    salts = np.array([[_halves(((colour + 16 * word) * _GOLDEN) & _WORD) for word in range(words)]
                      for colour in range(game.MAX_COLORS + 1)], np.uint32)
    both = jnp.stack([board, board[::-1]], axis=2).reshape((cells, 2) + board.shape[2:])  # [cells, 2, ...]
    zero = jnp.zeros(both.shape[1:], jnp.uint32)

    def add_colour(colour, sums):
        # 64-bit sums kept as (high, low 16 bits, high 16 bits of low): no carry chains.
        high_sum, low_sum, middle_sum = sums
        for word in range(words):
            low, high = (_packed(both[start:min(cells, start + 32)], colour)
                         for start in (64 * word, 64 * word + 32))
            salt = jnp.asarray(salts)[colour, word]
            mixed_high, mixed_low = _mix((high ^ salt[0], low ^ salt[1]))
            present = ((high | low) != 0).astype(jnp.uint32)  # absent colours add nothing, as in the solver
            high_sum = high_sum + mixed_high * present
            low_sum = low_sum + (mixed_low & 0xFFFF) * present
            middle_sum = middle_sum + (mixed_low >> 16) * present
        return high_sum, low_sum, middle_sum

    high, low, middle = jax.lax.fori_loop(1, game.MAX_COLORS + 1, add_colour, (zero, zero, zero))
    middle = middle + (low >> 16)
    high, low = high + (middle >> 16), (low & 0xFFFF) | (middle << 16)
    return jnp.stack([high, low])


# Two independent 32-bit hashes of a board; collisions only merge two beam entries. Boards
# of up to 4096 cells (64 x 64); the first 1024 multipliers are those of the first boards
# hashed (up to 32 x 32), so their hashes, which order ties, stay as they were.
_HASH_MULTIPLIERS = np.concatenate(
    [np.random.default_rng(seed).integers(1, 2**32, size=(2, size), dtype=np.uint64)
     for seed, size in ((20261121, 1024), (20261129, 3072))], axis=1)
_HASH_MULTIPLIERS = (_HASH_MULTIPLIERS | 1).astype(np.uint32)


def _hash_pair(board: jax.Array) -> jax.Array:
    """uint32 ``[2]`` hash of one board."""
    if board.size > _HASH_MULTIPLIERS.shape[1]:
        raise ValueError(f"canonical_hash takes boards of at most {_HASH_MULTIPLIERS.shape[1]} cells, got "
                         f"{board.shape[0]}x{board.shape[1]}")
    values = board.reshape(-1).astype(jnp.uint32) + jnp.uint32(1)
    multipliers = jnp.asarray(_HASH_MULTIPLIERS[:, : values.shape[0]])
    mixed = jnp.sum(values[None, :] * multipliers, axis=1, dtype=jnp.uint32)
    mixed = (mixed ^ jnp.right_shift(mixed, 15)) * jnp.uint32(0x2C1B3C6D)
    return mixed ^ jnp.right_shift(mixed, 12)


def canonical_hash(board: jax.Array, mirror: bool = True) -> jax.Array:
    """uint32 ``[2]`` hash of one board ``[W, H]``, equal for it and its mirror image (the
    smaller of the two) when ``mirror`` (static; ``game.mirror_symmetric``)."""
    direct = _hash_pair(board)
    if not mirror:
        return direct
    mirrored = _hash_pair(board[::-1])
    direct_first = (direct[0] < mirrored[0]) | ((direct[0] == mirrored[0]) & (direct[1] <= mirrored[1]))
    return jnp.where(direct_first, direct, mirrored)
