"""Named environments (jaxdust.make) and pictures that move (RGB frames, GIFs of games)."""

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

import jaxdust
from jaxdust.core import registry, render

BOARD = "335122421413111551154255131234544142315221411124"  # 8x6


@pytest.mark.slow
def test_make_builds_the_named_board_size_and_steps_it():
    assert jaxdust.registered()[:3] == ["Dust-6x6x5-v0", "Dust-8x4x5-v0", "Dust-8x6x5-v0"]
    for env_id in jaxdust.registered():
        env = jaxdust.make(env_id)
        width, height, colors = (int(v) for v in env_id.split("-")[1].split("x"))
        assert (env.game.width, env.game.height, env.game.colors) == (width, height, colors)
        state, timestep = env.reset(jax.random.key(0))
        assert timestep.observation.action_mask.shape == (width * height,)
        assert int(state.board.max()) <= colors
    env = jaxdust.make("Dust-6x6x5-v0", auto_reset=True, max_clicks=3)
    assert env.auto_reset and env.max_clicks == 3 and env.game.width == 6
    # Another board under an id keeps its rule of four clicks a cell, not its number.
    assert jaxdust.make("Dust-8x6x5-v0", game=jaxdust.GameConfig(3, 3, 2)).max_clicks == 36
    assert jaxdust.make("Dust-8x6x5-v0", game=jaxdust.GameConfig(3, 3, 2), max_clicks=5).max_clicks == 5
    assert jaxdust.make("Dust-8x6x5-v0").max_clicks == 192


def test_an_id_that_is_not_a_string_is_refused_where_it_is_registered():
    """``make`` takes strings only: a tuple id could never be made, and its name broke the
    listing in ``make``'s error for every unknown id after it."""
    with pytest.raises(TypeError, match=r"register needs a string id, got tuple \('Mine', 4\)"):
        registry.register(("Mine", 4), jaxdust.DustEnv(game=jaxdust.GameConfig(4, 4, 3)))
    assert ("Mine", 4) not in registry.registered()
    with pytest.raises(ValueError, match="unknown environment 'Dust-8x6x5-v1'; registered: "):
        jaxdust.make("Dust-8x6x5-v1")


def test_an_id_of_another_cap_keeps_it_for_another_board(monkeypatch):
    monkeypatch.setitem(registry._REGISTRY, "Uncapped-v0", jaxdust.DustEnv(max_clicks=None))
    monkeypatch.setitem(registry._REGISTRY, "Ten-v0", jaxdust.DustEnv(max_clicks=10))
    small = jaxdust.GameConfig(3, 3, 2)
    assert jaxdust.make("Uncapped-v0", game=small).max_clicks is None
    assert jaxdust.make("Ten-v0", game=small).max_clicks == 10


def test_an_env_shows_the_rewards_only_where_its_rules_pay_them():
    from jaxdust.adapters.jumanji_env import DustJumanji

    dust = jaxdust.make("Dust-8x6x5-v0", rewards=jaxdust.Rewards(click=-2.0))
    assert "rewards=Rewards(clear=10.0, click=-2.0, empty_click=-10.0)" in repr(dust)
    assert repr(dust).startswith("DustEnv(game=GameConfig(width=8, height=6, colors=5, rules='dust')")
    assert repr(dust).endswith("max_clicks=192, auto_reset=False)")
    for env_id in ("SameGame-15x15x5-v0", "Clickomania-10x10x4-v0"):
        points = jaxdust.make(env_id)
        assert "rewards" not in repr(points) and "rewards" not in repr(DustJumanji(points))
        assert f"max_clicks={points.max_clicks}, auto_reset=False)" in repr(points)


@pytest.mark.parametrize("env_id, kwargs, message", [
    ("Dust-7x7x5-v0", {}, "registered: Dust-6x6x5-v0, Dust-8x4x5-v0"),
    ("dust-8x6x5-v0", {}, "unknown environment"),
    ("Dust-8x6x5-v0", {"colours": 4}, "no field(s) colours"),
    ("Dust-8x6x5-v0", {"max_clicks": 0}, "max_clicks must be >= 1"),
    # the state's click count is int32: 2^31 was taken, then failed in the first step's jit
    ("Dust-8x6x5-v0", {"max_clicks": 2**31}, "max_clicks must be >= 1 and below 2^31"),
    (["Dust-8x6x5-v0"], {}, "unknown environment ['Dust-8x6x5-v0']; registered"),  # was unhashable: a TypeError
    # the points rules pay their own rewards: these were taken and ignored without a word
    ("SameGame-15x15x5-v0", {"rewards": jaxdust.Rewards(clear=5.0)}, "rewards= applies to the fewest-clicks rules"),
    ("Clickomania-10x10x4-v0", {"rewards": jaxdust.Rewards(click=0.0)}, "the clickomania rules pay their own"),
])
def test_make_names_what_is_wrong(env_id, kwargs, message):
    with pytest.raises(ValueError) as error:
        jaxdust.make(env_id, **kwargs)
    assert message in str(error.value)


@pytest.mark.parametrize("width, height, rules, words", [
    (216, 216, "samegame", "a 216x216 board has 46,656 cells; under the samegame rules a board holds at most 46,342"),
    (65536, 32769, "dust", "a board holds at most 2,147,483,647"),
])
def test_boards_too_large_for_int32_figures_are_refused(width, height, rules, words):
    """A 216x216 SameGame board's one group scored -2118370560 points (int32 wrapped round)."""
    with pytest.raises(ValueError, match=words):
        jaxdust.GameConfig(width, height, 1, rules)
    if width * height < 10**5:  # a board as an array: score, replay, the env's reset
        with pytest.raises(ValueError, match=words):
            jaxdust.score(np.ones((width, height), np.int8), [(0, 0)], rules=rules)
    assert jaxdust.GameConfig(215, 215, 1, "samegame").num_cells == 46_225  # points up to 46,223^2 + 1000
    assert jaxdust.GameConfig(2, 23_171, 1, "samegame").num_cells == 46_342  # the largest: 46,340^2 + 1000 < 2^31
    with pytest.raises(ValueError, match="a 11x4213 board has 46,343 cells"):
        jaxdust.GameConfig(11, 4213, 1, "samegame")
    assert jaxdust.GameConfig(216, 216, 1, "clickomania").num_cells == 46_656  # cells left, not points: no cap
    # An id's cap of four clicks a cell, on a board of 2^29 cells or more, stays within int32.
    assert jaxdust.make("Dust-8x6x5-v0", game=jaxdust.GameConfig(32768, 16384, 5)).max_clicks == 2**31 - 1


def test_float_settings_out_of_float32s_range_are_refused():
    """Rewards (and every config's floats) are float32 in arrays: a reward of 1e40 passed
    as finite and became inf there."""
    with pytest.raises(ValueError, match=r"clear must be within float32's range \(\+-3.403e\+38\), got 1e\+40"):
        jaxdust.Rewards(clear=1e40)
    with pytest.raises(ValueError, match="click must be within float32's range"):
        jaxdust.Rewards(click=-1e40)  # -inf as well
    assert jaxdust.Rewards(clear=3.4028235e38).clear == 3.4028235e38  # float32's largest, as printed


def test_rgb_frames_show_each_cell_in_its_colour():
    board = np.array(jaxdust.parse_board(BOARD))
    highlight = np.array(jaxdust.cluster_mask(board, 0, 0))
    image = jaxdust.board_rgb(board, highlight, cell_size=10)
    assert image.shape == (60, 80, 3) and image.dtype == np.uint8
    for x in range(8):
        for y in range(6):
            row, col = (5 - y) * 10 + 5, x * 10 + 5  # the centre of cell (x, y); y = 0 is the bottom row
            assert tuple(image[row, col]) == render._rgb(render.PALETTE[board[x, y]])
            ring = tuple(image[(5 - y) * 10 + 1, x * 10 + 5])  # the top edge of the coloured part
            assert (ring == (255, 255, 255)) == bool(highlight[x, y])
    state, _ = jaxdust.make("Dust-8x6x5-v0").reset(jax.random.key(0), jaxdust.parse_board(BOARD))
    np.testing.assert_array_equal(jaxdust.make("Dust-8x6x5-v0").render(state, cell_size=10),
                                  jaxdust.board_rgb(board, cell_size=10))
    batch = jax.tree.map(lambda leaf: jnp.stack([leaf, leaf]), state)
    with pytest.raises(ValueError, match=r"render draws one state's board \[width, height\], got shape \(2, 8, 6\): "
                                         r"take one game of a batch first"):
        jaxdust.make("Dust-8x6x5-v0").render(batch)


def test_a_solved_game_becomes_a_gif_of_every_position():
    solution = jaxdust.solve(BOARD)
    boards, clusters = jaxdust.positions(BOARD, solution.clicks)
    assert len(boards) == solution.length + 1 and not boards[-1].any()
    for before, cluster, after, (x, y) in zip(boards, clusters, boards[1:], solution.clicks):
        np.testing.assert_array_equal(cluster, jaxdust.cluster_mask(before, x, y))
        assert after.astype(bool).sum() == before.astype(bool).sum() - cluster.sum()
    gif = Image.open(io.BytesIO(jaxdust.game_gif(boards, clusters, cell_size=8)))
    assert gif.n_frames == len(boards)
    for index in (0, len(boards) // 2):
        gif.seek(index)
        np.testing.assert_array_equal(np.asarray(gif.convert("RGB")),
                                      jaxdust.board_rgb(boards[index], clusters[index], cell_size=8))
    # The longest delay the GIF format holds: the last frame's 2 x 327,679 ms is 65,535 hundredths.
    slow = Image.open(io.BytesIO(jaxdust.game_gif(boards[:2], milliseconds=327_679)))
    durations = []
    for index in range(2):
        slow.seek(index)
        durations.append(slow.info["duration"])
    assert durations == [327_670, 655_350]
    # Identical frames in a row play as one for their summed time, which must fit the field too.
    still = [boards[-1]] * 3
    with pytest.raises(ValueError, match="shows one unchanged position for 1200000 ms"):
        jaxdust.game_gif(still, milliseconds=300_000)
    merged = Image.open(io.BytesIO(jaxdust.game_gif(still, milliseconds=100_000)))
    assert merged.n_frames == 1 and merged.info["duration"] == 400_000


def test_positions_refuse_a_wasted_click_or_mark_where_it_went():
    with pytest.raises(ValueError, match="click 1: .* is an empty cell"):
        jaxdust.positions("1" * 48, [(0, 0), (0, 0)])
    boards, clusters = jaxdust.positions("1" * 48, [(0, 0), (3, 2)], wasted=True)
    np.testing.assert_array_equal(boards[2], boards[1])  # nothing left to remove
    assert clusters[1].sum() == 1 and clusters[1][3, 2]  # the frame shows the cell clicked


def test_evaluate_animates_each_agents_games(tmp_path, boards_dir):
    import evaluate

    out = tmp_path / "eval"
    evaluate.main(["--boards", str(boards_dir / "optimal_8x4x5.txt"), "--limit", "3", "--jobs", "1",
                   "--agents", "largest,beam:4,dfs:500,solver:5", "--animate", "2", "--out", str(out)])
    rows = (out / "boards.csv").read_text().splitlines()
    header = rows[0].split(",")
    for agent in ("largest", "beam:4", "dfs:500", "solver:5"):
        safe = "".join(c if c.isalnum() else "-" for c in agent)
        assert not (out / f"game-{safe}-2.gif").exists()  # only the first two boards
        for index in range(2):
            gif = Image.open(out / f"game-{safe}-{index}.gif")
            clicks = int(rows[index + 1].split(",")[header.index(agent)])
            assert gif.n_frames == clicks + 1  # the game evaluate.py counted, position by position
            gif.seek(gif.n_frames - 1)
            np.testing.assert_array_equal(np.asarray(gif.convert("RGB")),  # cleared
                                          jaxdust.board_rgb(np.zeros((8, 4), np.int8), cell_size=24))
