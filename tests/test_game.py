"""The JAX game core against hand-worked boards and the independent NumPy reference."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdust
from jaxdust.core import game, machine
from jaxdust.core import reference as ref


def board(columns) -> jnp.ndarray:
    """A board from its columns, each listed bottom to top: ``board(cols)[x, y]``."""
    return jnp.asarray(columns, dtype=jnp.int8)


# ---------------------------------------------------------------------------------------
# Hand-worked cases (expected values derived from RULES.md on paper)
# ---------------------------------------------------------------------------------------


def test_gravity_keeps_column_order():
    start = board([[1, 0, 2], [0, 0, 3]])
    np.testing.assert_array_equal(game.apply_gravity(start), board([[1, 2, 0], [3, 0, 0]]))


@pytest.mark.parametrize("height", [1, 2, 5, 6, 7, 9, 16, 23])
def test_gravity_and_sliding_equal_the_reference_on_either_side_of_the_bubble(height):
    """Lines of up to ``BUBBLE_MAX_LINE`` places settle by a bubble, longer ones by odd-even
    passes: boards with holes anywhere, batched (batch axes last) as the moves call them."""
    rng = np.random.default_rng(height)
    width = 2 * height + 1  # half-rows of ``height`` and ``height + 1`` places
    boards = np.stack([ref.random_board(rng, width, height, 4) for _ in range(6)], axis=-1)
    boards[rng.random(boards.shape) < 0.4] = 0
    gravity, sliding = game.apply_gravity(jnp.asarray(boards)), game.slide_to_centre(jnp.asarray(boards))
    for i in range(boards.shape[-1]):
        np.testing.assert_array_equal(gravity[..., i], ref.gravity(boards[..., i]))
        np.testing.assert_array_equal(sliding[..., i], ref.slide_to_centre(boards[..., i]))


def test_rows_slide_toward_the_centre_from_both_halves():
    # One row of width 6: [1 0 2 | 0 3 0] -> [0 1 2 | 3 0 0]
    start = board([[1], [0], [2], [0], [3], [0]])
    expected = board([[0], [1], [2], [3], [0], [0]])
    np.testing.assert_array_equal(game.slide_to_centre(start), expected)


def test_odd_width_middle_column_belongs_to_the_right_half():
    # Width 5: left half is x < 2. [1 0 0 0 2] -> [0 1 | 2 0 0]
    start = board([[1], [0], [0], [0], [2]])
    np.testing.assert_array_equal(game.slide_to_centre(start), board([[0], [1], [2], [0], [0]]))


def test_click_removes_cluster_and_contracts():
    # y=2: 1 2 2 3 / y=1: 1 1 2 3 / y=0: 2 1 3 3 ; clicking (0, 1) removes four 1s.
    start = board([[2, 1, 1], [1, 1, 2], [3, 2, 2], [3, 3, 3]])
    new, removed = game.click(start, 0, 1)
    assert int(removed) == 4
    np.testing.assert_array_equal(new, board([[2, 0, 0], [2, 0, 0], [3, 2, 2], [3, 3, 3]]))


def test_two_clicks_with_gravity_then_sliding():
    start = board([[2, 1], [3, 2], [2, 3], [3, 1]])
    first, removed = game.click(start, 1, 0)  # a lone 3; the 2 above falls, row 1 slides
    assert int(removed) == 1
    np.testing.assert_array_equal(first, board([[2, 0], [2, 1], [2, 3], [3, 1]]))
    second, removed = game.click(first, 0, 0)  # the three 2s along the bottom
    assert int(removed) == 3
    np.testing.assert_array_equal(second, board([[0, 0], [1, 0], [3, 1], [3, 0]]))


def test_cluster_that_wraps_around_a_column():
    start = board([[1, 2, 1, 1], [1, 1, 1, 2]])
    new, removed = game.click(start, 0, 0)
    assert int(removed) == 6
    np.testing.assert_array_equal(new, board([[2, 0, 0, 0], [2, 0, 0, 0]]))


def test_empty_cell_click_is_a_no_op():
    start = board([[2, 0, 0, 0], [2, 0, 0, 0]])
    new, removed = game.click(start, 0, 3)
    assert int(removed) == 0
    np.testing.assert_array_equal(new, start)


def test_single_row_cleared_in_one_click():
    new, removed = game.click(board([[1], [1]]), 1, 0)
    assert int(removed) == 2
    assert bool(game.is_done(new))


def test_a_board_one_column_wide_and_a_board_as_lists_play_as_the_reference():
    """One column slides nowhere (the dust rules' halves are empty and whole); a board
    given as nested lists is the int8 board, and lists of anything but colours are refused."""
    column = [[1, 2, 2, 1, 1]]
    for y in range(5):
        new, removed = game.click(board(column), 0, y)
        want, want_removed = ref.click(np.array(column, np.int8), 0, y)
        np.testing.assert_array_equal(new, want)
        assert int(removed) == want_removed
    lists = [[1, 1, 2], [2, 1, 0], [3, 0, 0]]
    for function in (game.click, lambda b, x, y: game.click(b, x, y, rules="samegame")):
        got, array = function(lists, 1, 1), function(board(lists), 1, 1)
        assert got[0].dtype == jnp.int8 and all(np.array_equal(g, a) for g, a in zip(got, array))
    assert bool(game.is_over([[0, 0], [0, 0]])) and not bool(game.is_over(lists))
    with pytest.raises(ValueError, match="must hold integers"):
        game.click([[1.5, 1.0]], 0, 0)
    with pytest.raises(ValueError, match="holds 12"):
        game.cluster_labels([[12, 1]])
    # A board of another integer dtype comes back int8 traced by the caller's transform too
    # (it came back int32 there, int8 outside).
    wide = jnp.asarray(lists, jnp.int32)
    traced = jax.jit(lambda b: game.click(b, 1, 1)[0])(wide), jax.vmap(game.settle)(wide[None])[0]
    assert all(out.dtype == jnp.int8 for out in traced)
    np.testing.assert_array_equal(traced[0], game.click(wide, 1, 1)[0])


def test_labels_sizes_and_one_action_per_cluster():
    start = board([[1, 2], [1, 2], [2, 0]])
    np.testing.assert_array_equal(game.cluster_labels(start), [[0, 1], [0, 1], [4, -1]])
    np.testing.assert_array_equal(game.cluster_sizes(start), [[2, 2], [2, 2], [1, 0]])
    np.testing.assert_array_equal(
        game.cluster_action_mask(start), [[True, True], [False, False], [True, False]]
    )


def test_one_hot_marks_empty_in_channel_zero():
    planes = game.one_hot(board([[0, 3]]), colors=3)
    assert planes.shape == (1, 2, 4) and planes.dtype == jnp.float32
    np.testing.assert_array_equal(planes[0, 0], [1, 0, 0, 0])
    np.testing.assert_array_equal(planes[0, 1], [0, 0, 0, 1])
    assert game.one_hot(np.zeros((0, 4, 3), np.int8), colors=3).shape == (0, 4, 3, 4)  # an empty batch: no cells


@pytest.mark.parametrize(
    "height, dtype, words",
    [(1, jnp.uint8, 1), (8, jnp.uint8, 1), (9, jnp.uint16, 1), (16, jnp.uint16, 1), (17, jnp.uint32, 1),
     (32, jnp.uint32, 1), (33, jnp.uint32, 2), (70, jnp.uint32, 3)],
)
def test_column_packing_round_trips(height, dtype, words):
    mask = jax.random.bernoulli(jax.random.key(height), 0.5, (3, height, 5))  # trailing batch axis
    packed = game.pack_columns(mask)
    assert packed.shape == (3, words, 5) and packed.dtype == dtype
    np.testing.assert_array_equal(game.unpack_columns(packed, height), mask)
    one = game.pack_columns(mask[..., 2])
    np.testing.assert_array_equal(one, packed[..., 2])


def test_game_config_rejects_bad_sizes():
    with pytest.raises(ValueError, match="width"):
        game.GameConfig(width=1)
    with pytest.raises(ValueError, match="height"):
        game.GameConfig(height=0)
    with pytest.raises(ValueError, match="colors"):
        game.GameConfig(colors=10)
    with pytest.raises(TypeError, match="int"):
        game.GameConfig(width=8.0)
    with pytest.raises(TypeError, match="int"):
        game.GameConfig(colors=True)


def test_configs_take_numpy_scalars_as_python_numbers():
    """A sweep over ``np.arange`` gives numpy scalars: the configs keep Python numbers, so
    they write as JSON and equal the configs written with literals."""
    import json

    from jaxdust.core import configs
    from jaxdust.core.boards import parse_size
    from jaxdust.learn.avi import AVIConfig

    size = game.GameConfig(*np.arange(6, 9))
    assert size == game.GameConfig(6, 7, 8) and {type(v) for v in (size.width, size.height, size.colors)} == {int}
    assert size.size_text == "6x7x8" and parse_size(size.size_text) == size
    for rules in game.RULES:  # --size names other rules first, and reads back what size_spec writes
        other = game.GameConfig(6, 7, 4, rules)
        assert parse_size(other.size_spec) == other and parse_size("6x7x4", rules) == other
        assert other.size_spec == ("6x7x4" if rules == "dust" else f"{rules}:6x7x4")
    assert parse_size("Former:6x7x4", "samegame") == game.GameConfig(6, 7, 4, "former")  # named rules win
    assert size.takes_boards_of(game.GameConfig(6, 7, 5)) and not size.takes_boards_of(game.GameConfig(6, 7, 9))
    assert size.takes_boards_of(size)  # a run plays boards of its own size and colours
    assert not size.takes_boards_of(game.GameConfig(7, 6, 5)) and not size.takes_boards_of(game.GameConfig(6, 7, 5, "former"))
    config = AVIConfig(game=size, beam_width=np.int64(4), learning_rate=np.float32(0.5), hidden=list(np.arange(8, 10)))
    assert type(config.beam_width) is int and type(config.learning_rate) is float
    assert config == AVIConfig(game=game.GameConfig(6, 7, 8), beam_width=4, learning_rate=0.5, hidden=(8, 9))
    assert {type(width) for width in config.hidden} == {int} and hash(config)  # a list is kept as a tuple
    assert configs.from_json(AVIConfig, json.loads(json.dumps(configs.to_json(config)))) == config
    assert type(jaxdust.Rewards(clear=np.float64(2)).clear) is float


# ---------------------------------------------------------------------------------------
# Random boards and random actions
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [game.GameConfig(), game.GameConfig(5, 3, 9), game.GameConfig(2, 1, 1)])
def test_random_boards_are_full_uniform_and_seeded(config):
    keys = jax.random.split(jax.random.key(7), 4000)
    boards = jax.vmap(lambda k: game.random_board(k, config))(keys)
    assert boards.dtype == jnp.int8 and boards.shape == (4000, *config.shape)
    values = np.asarray(boards).ravel()
    assert values.min() == 1 and values.max() == config.colors
    frequencies = np.bincount(values, minlength=config.colors + 1)[1:] / values.size
    # 4000 boards give at least 8000 cells: each frequency is within 5 sigma of 1/colors.
    sigma = np.sqrt((1 / config.colors) * (1 - 1 / config.colors) / values.size)
    assert np.all(np.abs(frequencies - 1 / config.colors) < 5 * sigma + 1e-12)
    again = jax.vmap(lambda k: game.random_board(k, config))(keys)
    np.testing.assert_array_equal(boards, again)
    assert not np.array_equal(boards[0], boards[1]) or config.num_cells * config.colors <= 2


@pytest.mark.parametrize("partitionable", [True, False])
def test_random_boards_begin_alike_for_any_count_in_either_threefry_mode(partitionable):
    """Board ``i`` comes from ``fold_in(key, i)``: ``--random 10`` is the first ten boards of
    ``--random 40`` even where JAX's ``split(key, n)`` gives other keys for another ``n``."""
    key, config = jax.random.key(3), game.GameConfig(5, 4, 3)
    with jax.threefry_partitionable(partitionable):
        many, few = game.random_boards(key, 40, config), game.random_boards(key, 10, config)
        np.testing.assert_array_equal(many[:10], few)
        np.testing.assert_array_equal(many[7], game.random_board(jax.random.fold_in(key, 7), config))
        split_prefix = np.array_equal(jax.random.key_data(jax.random.split(key, 40)[:10]),
                                      jax.random.key_data(jax.random.split(key, 10)))
    assert split_prefix == partitionable  # what the test guards against: split alone drifts
    if partitionable:  # JAX's default: the boards every earlier version drew, so figures stand
        split_boards = jax.vmap(lambda k: game.random_board(k, config))(jax.random.split(key, 40))
        np.testing.assert_array_equal(many, split_boards)
    assert game.random_boards(key, 0, config).shape == (0, 5, 4)


def test_the_random_boards_every_figure_was_measured_on_are_still_drawn():
    """``evaluate.py --random N --seed S``, a run's evaluation boards and a data set's boards
    come from JAX's and NumPy's random streams: a release of either that changed its stream
    (JAX's threefry mode is one switch: its other mode draws other boards) would leave every
    figure measured on them unreproducible, with nothing else failing."""
    import hashlib

    from jaxdust.core.boards import board_to_text
    from jaxdust.learn import datasets, runs

    def digest(boards) -> str:
        return hashlib.sha256(np.asarray(boards, np.int8).tobytes()).hexdigest()[:16]

    drawn = game.random_boards(jax.random.key(20000), 1000, game.GameConfig())  # evaluate.py --random 1000 --seed 20000
    assert board_to_text(drawn[0]) == "434414323423242225342554313422125121525312213532"
    assert digest(drawn) == "76c259856a58053c"
    assert digest(runs.evaluation_boards(game.GameConfig(), 256)) == "0ccee91fd32a3251"
    assert board_to_text(datasets.source_board(datasets.DatasetConfig(), 0)) == \
        "543221111545345443352541253144511513123331111434"  # NumPy's default_rng((0, 0))
    with jax.threefry_partitionable(False):
        assert digest(game.random_boards(jax.random.key(20000), 1000, game.GameConfig())) != "76c259856a58053c"


def test_random_boards_ask_for_their_memory_first(monkeypatch):
    """10^9 8x6 boards (45 GiB) made XLA abort the process, with no Python error: a count
    that cannot fit is refused before drawing. What is asked covers XLA's allotment for the
    draw and a NumPy copy of the boards, at most twice that."""
    for config in (game.GameConfig(8, 6, 5), game.GameConfig(3, 3, 2), game.GameConfig(16, 16, 5, "samegame")):
        analysis = game._draw_boards.lower(jax.random.key(0), 1000, config).compile().memory_analysis()
        allotted = analysis.temp_size_in_bytes + analysis.output_size_in_bytes + analysis.argument_size_in_bytes
        asked = game.random_boards_bytes(1000, config)
        assert allotted + 1000 * config.num_cells <= asked <= 2 * allotted, (config, allotted, asked)
    monkeypatch.setattr(machine, "memory_bytes", lambda: 2**30)
    with pytest.raises(ValueError, match=r"^10,000,000 random 8x6x5 boards: about 5\.\d GiB of memory, more than this "
                                         r"machine's 1\.0 GiB$"):
        game.random_boards(jax.random.key(0), 10**7, game.GameConfig(8, 6, 5))
    assert game.random_boards(jax.random.key(0), 1000, game.GameConfig(8, 6, 5)).shape == (1000, 8, 6)


def test_boards_drawn_outside_jit_are_one_program_each(compile_log):
    """Op by op, a board cost ~1 ms to draw on a CPU; each draw is one program, compiled once
    per configuration (an odd size, new to this process) and count."""
    key, config = jax.random.key(6), game.GameConfig(3, 7, 6, "former")
    for draw in (lambda: game.random_board(key, config), lambda: game.random_boards(key, 5, config)):
        _, compiled = compile_log(draw)
        assert sum(message.startswith("Compiling ") for message in compiled) <= 1
        _, compiled = compile_log(draw)
        assert not compiled
    np.testing.assert_array_equal(game.random_boards(key, 5, config)[2],
                                  jax.jit(lambda k: game.random_board(k, config))(jax.random.fold_in(key, 2)))


@pytest.mark.parametrize("count", [-1, 2.0, True, 2**31])
def test_indexed_keys_refuse_a_count_that_is_no_size(count):
    with pytest.raises(ValueError, match="count must be an integer"):
        game.indexed_keys(jax.random.key(0), count)
    with pytest.raises(ValueError, match="count must be an integer"):
        game.random_boards(jax.random.key(0), count)
    with pytest.raises(TypeError, match="GameConfig"):
        game.random_boards(jax.random.key(0), 3, (5, 4, 3))


def test_random_legal_action_is_uniform_over_the_mask():
    mask = jnp.array([False, True, False, True, True, False])
    actions = jax.vmap(game.random_legal_action, (0, None))(
        jax.random.split(jax.random.key(0), 30000), mask
    )
    counts = np.bincount(np.asarray(actions), minlength=7)
    assert counts[[0, 2, 5, 6]].sum() == 0
    np.testing.assert_allclose(counts[[1, 3, 4]] / 30000, 1 / 3, atol=0.015)
    assert int(game.random_legal_action(jax.random.key(0), jnp.zeros(6, bool))) == 6
    # Past 2**16 legal cells the 16-bit draw wrapped: no cell after the 65,536th was ever drawn.
    large = jnp.ones(2**17, bool).at[::4].set(False)  # 98,304 legal cells, half of them past the 2**16th cell
    actions = np.asarray(jax.vmap(game.random_legal_action, (0, None))(jax.random.split(jax.random.key(0), 2000), large))
    assert np.all(actions % 4 != 0) and 0.45 < np.mean(actions >= 2**16) < 0.55
    assert int(game.random_legal_action(jax.random.key(0), jnp.zeros(2**17, bool))) == 2**17


@pytest.mark.parametrize("size", [1, 6, 31, 32, 33, 48, 100, 225])
def test_kth_true_finds_every_true_index(size):
    rng = np.random.default_rng(size)
    masks = rng.random((40, size)) < rng.random((40, 1))
    masks[0] = True
    find = jax.jit(jax.vmap(game.kth_true, (None, 0)))
    for mask in masks:
        expected = np.flatnonzero(mask)
        found = find(jnp.asarray(mask), jnp.arange(size))  # ranks past the count are not asked
        np.testing.assert_array_equal(found[: len(expected)], expected)


# ---------------------------------------------------------------------------------------
# Parity with the NumPy reference: >100,000 transitions and whole games
# ---------------------------------------------------------------------------------------

# (width, height, colors, transitions). Heights 33 and 40 use two packed words per column.
PARITY_SIZES = [
    (8, 6, 5, 40_000),
    (6, 6, 5, 12_000),
    (8, 4, 5, 12_000),
    (5, 3, 3, 10_000),
    (7, 1, 3, 4_000),
    (2, 1, 1, 1_000),
    (3, 7, 2, 8_000),
    (9, 9, 9, 8_000),
    (4, 33, 4, 4_000),
    (3, 40, 2, 2_000),
]


def reference_transitions(width, height, colors, count, seed):
    """Positions from random reference games, and the cell clicked at each.

    Four clicks in five hit an occupied cell; the rest are any cell, so empty-cell clicks
    (no-ops) are covered too. Returns boards [N, W, H], xs [N], ys [N], and the
    reference's next boards [N, W, H] and removed counts [N].
    """
    rng = np.random.default_rng(seed)
    boards, xs, ys, nexts, removed = [], [], [], [], []
    current = ref.random_board(rng, width, height, colors)
    while len(boards) < count:
        if ref.is_done(current):
            current = ref.random_board(rng, width, height, colors)
        if rng.random() < 0.8:
            occupied = np.argwhere(current != 0)
            x, y = occupied[rng.integers(len(occupied))]
        else:
            x, y = rng.integers(width), rng.integers(height)
        after, count_removed = ref.click(current, int(x), int(y))
        boards.append(current), xs.append(x), ys.append(y)
        nexts.append(after), removed.append(count_removed)
        current = after
    return (np.stack(boards), np.array(xs, np.int32), np.array(ys, np.int32),
            np.stack(nexts), np.array(removed))


@pytest.fixture(scope="module")
def parity_data():
    return {
        (w, h, c): reference_transitions(w, h, c, n, seed=w * 1000 + h * 10 + c)
        for w, h, c, n in PARITY_SIZES
    }


def test_parity_covers_at_least_100k_transitions(parity_data):
    assert sum(len(data[0]) for data in parity_data.values()) >= 100_000
    removed = np.concatenate([data[4] for data in parity_data.values()])
    assert (removed == 0).sum() > 1000  # empty-cell clicks
    assert (removed >= 5).sum() > 1000  # large clusters


@pytest.mark.slow
@pytest.mark.parametrize("size", [s[:3] for s in PARITY_SIZES], ids=lambda s: "x".join(map(str, s)))
def test_click_matches_reference(parity_data, size):
    boards, xs, ys, expected, expected_removed = parity_data[size]
    new, removed = jax.jit(jax.vmap(game.click))(boards, xs, ys)
    mismatched = np.flatnonzero(
        np.any(np.asarray(new) != expected, axis=(1, 2)) | (np.asarray(removed) != expected_removed)
    )
    assert mismatched.size == 0, f"{mismatched.size} mismatches, first board index {mismatched[:1]}"


@pytest.mark.parametrize("size", [s[:3] for s in PARITY_SIZES], ids=lambda s: "x".join(map(str, s)))
def test_cluster_queries_match_reference(parity_data, size):
    boards = parity_data[size][0][:1500]
    labels = jax.jit(jax.vmap(game.cluster_labels))(boards)
    sizes = jax.jit(jax.vmap(game.cluster_sizes))(boards)
    representatives = jax.jit(jax.vmap(game.cluster_action_mask))(boards)
    done = jax.jit(jax.vmap(game.is_done))(boards)
    for i, b in enumerate(boards):
        np.testing.assert_array_equal(labels[i], ref.cluster_labels(b), err_msg=f"board {i}")
        np.testing.assert_array_equal(sizes[i], ref.cluster_sizes(b), err_msg=f"board {i}")
        np.testing.assert_array_equal(representatives[i], ref.cluster_representatives(b))
        assert bool(done[i]) == ref.is_done(b)
    np.testing.assert_array_equal(
        jax.vmap(lambda b: game.one_hot(b, size[2]))(boards[:50]),
        np.stack([ref.one_hot(b, size[2]) for b in boards[:50]]),
    )


@pytest.mark.parametrize("size", [(8, 6, 5), (5, 4, 3), (4, 33, 4)], ids=lambda s: "x".join(map(str, s)))
def test_whole_random_games_match_reference(size):
    """Games threaded through ``lax.scan`` equal the reference position by position."""
    width, height, colors = size
    rng = np.random.default_rng(sum(size))
    games = []
    for _ in range(25):
        start = ref.random_board(rng, width, height, colors)
        clicks = ref.play_random_game(start, rng)
        positions = [start]
        for x, y in clicks:
            positions.append(ref.click(positions[-1], x, y)[0])
        games.append((start, clicks, positions))
    longest = max(len(c) for _, c, _ in games)

    @jax.jit
    def play(start, xs, ys):
        def step(b, xy):
            after, _ = game.click(b, xy[0], xy[1])
            return after, after

        return jax.lax.scan(step, start, jnp.stack([xs, ys], axis=1))[1]

    for start, clicks, positions in games:
        # Pad with clicks on a cell that is empty once the game is over (a no-op).
        padded = clicks + [(0, height - 1)] * (longest - len(clicks))
        xs, ys = (jnp.array(v, jnp.int32) for v in zip(*padded))
        trajectory = np.asarray(play(jnp.asarray(start), xs, ys))
        np.testing.assert_array_equal(trajectory[: len(clicks)], np.stack(positions[1:]))
        assert ref.is_done(trajectory[-1])


# ---------------------------------------------------------------------------------------
# Compilation
# ---------------------------------------------------------------------------------------


def test_jitted_click_traces_once_for_many_boards():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def click(b, x, y):
        return game.click(b, x, y)

    rng = np.random.default_rng(0)
    for _ in range(5):
        b = ref.random_board(rng, 8, 6, 5)
        click(jnp.asarray(b), jnp.int32(rng.integers(8)), jnp.int32(rng.integers(6)))


def test_each_board_size_compiles_once():
    traced_shapes = []

    @jax.jit
    def click(b, x, y):
        traced_shapes.append(b.shape)  # runs only while tracing
        return game.click(b, x, y)

    rng = np.random.default_rng(0)
    for size in [(8, 6), (8, 6), (6, 6), (8, 6), (6, 6)]:
        click(jnp.asarray(ref.random_board(rng, *size, 5)), jnp.int32(0), jnp.int32(0))
    assert traced_shapes == [(8, 6), (6, 6)]


EVERYDAY_CALLS = {
    "click": lambda b: game.click(b, 2, 1),
    "former click": lambda b: game.click(b, 2, 1, "former"),
    "click_action": lambda b: game.click_action(b, 7, rules="samegame"),
    "cluster_labels": game.cluster_labels,
    "cluster_sizes": game.cluster_sizes,
    "cluster_mask": lambda b: game.cluster_mask(b, 3, 0),
    "cluster_action_mask": lambda b: game.cluster_action_mask(b, "clickomania"),
    "legal_action_mask": lambda b: game.legal_action_mask(b, rules="samegame"),
    "contract": game.contract,
    "settle": lambda b: game.settle(b, "former"),
    "remove_and_contract": lambda b: game.remove_and_contract(b, b == 1),
    "is_done": game.is_done,
    "is_over": lambda b: game.is_over(b, "samegame"),
}


@pytest.mark.parametrize("name", EVERYDAY_CALLS)
def test_everyday_functions_called_outside_jit_compile_once(name, compile_log):
    """Unjitted, each call ran op by op and compiled its fixed-point loop again (40-150 ms
    a call on a CPU); the second board of a shape must reuse the first one's program."""
    call = EVERYDAY_CALLS[name]
    rng = np.random.default_rng(1)
    first, second = (jnp.asarray(ref.random_board(rng, 7, 5, 4)) for _ in range(2))
    expected = jax.jit(call)(second)  # the same function traced inside a jit of its own
    jax.block_until_ready(call(first))
    result, compiled = compile_log(lambda: call(second))
    assert not compiled
    chex.assert_trees_all_equal(result, expected)


def test_a_click_off_the_board_changes_nothing_and_nothing_wraps():
    board = jaxdust.random_board(jax.random.key(3), jaxdust.GameConfig(8, 6, 3))
    for x, y in [(8, 0), (-1, 0), (0, 6), (0, -1), (-8, -6)]:
        after, removed = jaxdust.click(board, x, y)
        assert int(removed) == 0 and np.array_equal(after, board), (x, y)
        # The reference refuses it: numpy read (-1, 0) from the far column, and joined clusters there.
        with pytest.raises(ValueError, match=rf"cell \({x}, {y}\) is off a board of shape \(8, 6\)"):
            ref.click(np.asarray(board), x, y)
        with pytest.raises(ValueError, match="is off a board"):
            ref.cluster_mask(np.asarray(board), x, y)


def test_cluster_action_mask_under_samegame_leaves_out_single_cells():
    """``cluster_action_mask`` follows the rules' ``min_group``: under SameGame and
    Clickomania a group of one is no action."""
    board = jnp.asarray([[1, 2], [1, 3]], jnp.int8)  # the two 1s along the bottom row; 2 and 3 alone
    for rules in ("samegame", "clickomania"):
        np.testing.assert_array_equal(game.cluster_action_mask(board, rules), [[True, False], [False, False]])
    np.testing.assert_array_equal(game.cluster_action_mask(board, "dust"), [[True, True], [False, True]])


def test_remove_and_contract_counts_the_cells_it_empties_and_takes_only_a_mask_of_bools():
    """A mask over empty cells counted them as removed; a float mask's 0.5 emptied a cell and
    counted none, an int's 2 counted it twice; a mask of another shape failed in broadcasting."""
    board = np.array([[1, 0, 0], [1, 1, 0]], np.int8)
    contracted, removed = game.remove_and_contract(board, np.ones((2, 3), bool))
    assert int(removed) == 3 and not np.asarray(contracted).any()
    contracted, removed = game.remove_and_contract(board, [[True, False, False], [False, False, True]])
    assert int(removed) == 1 and np.asarray(contracted).tolist() == [[0, 0, 0], [1, 1, 0]]
    boards = np.stack([board, board[::-1]], axis=-1)  # trailing batch axis, as the docstring says
    _, removed = game.remove_and_contract(boards, boards == 1)
    assert np.asarray(removed).tolist() == [3, 3]
    for mask in (np.full((2, 3), 0.5), np.full((2, 3), 2), np.ones((3, 2), bool)):
        with pytest.raises(ValueError, match=r"removed_mask must be bools of the board's shape \(2, 3\)"):
            game.remove_and_contract(board, mask)


def test_points_refuses_counts_that_are_not_integers_and_an_empty_list_board_is_named_as_such():
    assert np.asarray(game.points(np.array([0, 1, 2, 3, 46342]))).tolist() == [0, 0, 0, 1, 46340 ** 2]
    assert np.asarray(game.points([2, 3, 4])).tolist() == [0, 1, 4] and int(game.points(np.int64(5))) == 9
    assert np.asarray(jax.vmap(game.points)(jnp.arange(4))).tolist() == [0, 0, 0, 1]
    for count in (3.9, True, None, [2.0, 5.0], np.array([2.0, 5.0])):
        with pytest.raises(ValueError, match="points: removed must be integer counts"):
            game.points(count)
    for empty in ([], [[]]):
        with pytest.raises(ValueError, match=r"a board given as lists holds no cells \(shape"):
            game.click(empty, 0, 0)
