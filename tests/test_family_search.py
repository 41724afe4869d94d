"""Searches under the family's rule sets, against the independent reference
(``tests/family_reference.py``): the bitboard rules and the exact solver under ``former``."""

import csv
import json
import pathlib
import shlex
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
from PIL import Image
import pytest

from tests import family_reference as fr
import jaxdust
from jaxdust.core import boards as board_io
from jaxdust.core import files
from jaxdust.evaluation import baselines
from jaxdust.solver.api import TranspositionTable
from jaxdust.core.play import play_boards
from jaxdust.search import beam
from jaxdust.search.mcts import MCTSPolicy, heuristic_evaluator_for
from jaxdust.search.beam import LOOKAHEAD_SHORTLIST
from jaxdust.search import heuristic
from jaxdust.search.heuristic import HEURISTIC_WEIGHTS, heuristic_scorer
from jaxdust.solver import bitboard, ida, points, upper_bound
from jaxdust.evaluation import cli as evaluate, leaderboard, registry
from jaxdust.learn.cli import main as train_main
from jaxdust.solver.cli import main as solve_main


def brute_force_optimum(board: np.ndarray, rules: str) -> int:
    """Fewest clicks to clear ``board`` by breadth-first search over the reference's moves."""
    seen, frontier = {board.tobytes()}, deque([(board, 0)])
    while frontier:
        position, clicks = frontier.popleft()
        if not position.any():
            return clicks
        for x, y in fr.legal_moves(position, rules):
            child, _ = fr.click(position, x, y, rules)
            if child.tobytes() not in seen:
                seen.add(child.tobytes())
                frontier.append((child, clicks + 1))
    raise AssertionError("unreachable: every board of a click rule set can be cleared")


@pytest.mark.parametrize("size", [(7, 9, 4), (5, 3, 3), (8, 8, 4), (2, 32, 2), (1, 5, 2)],
                         ids=lambda s: "x".join(map(str, s)))
def test_bitboard_former_clicks_match_reference(size):
    width, height, colors = size
    geometry = bitboard.make_geometry(width, height, "former")
    assert not geometry.slide and bitboard.make_geometry(width, height).slide
    rng = np.random.default_rng(sum(size))
    transitions = 0
    while transitions < 500:
        board = fr.random_settled_board(rng, width, height, colors, "former")
        while board.any():
            x, y = fr.legal_moves(board, "former")[rng.integers(len(fr.legal_moves(board, "former")))]
            planes = bitboard.to_planes(board, colors)
            cluster = np.uint64(bitboard.flood(np.uint64(1 << int(x * height + y)), planes[board[x, y] - 1], geometry))
            reach = int(bitboard.removal_reach(cluster, np.uint64(bitboard.occupied(planes)), geometry))
            bitboard.remove_in_place(planes, cluster, geometry)
            after, _ = fr.click(board, x, y, "former")
            np.testing.assert_array_equal(bitboard.to_board(planes, width, height), after)
            for cell in np.flatnonzero((after != board).reshape(-1)):
                assert (reach >> int(cell)) & 1  # the commuting-moves rule relies on it
            board, transitions = after, transitions + 1


def test_former_solver_finds_the_brute_force_optimum():
    """Proven optima under gravity alone equal breadth-first search's, the column-runs
    bound never exceeds them, and each solution clears the board under the reference."""
    rng = np.random.default_rng(7)
    checked = above_colour_bound = 0
    for width, height, colors in [(4, 3, 3), (5, 3, 3), (3, 5, 3), (4, 4, 4), (6, 2, 3)] * 6:
        board = fr.random_settled_board(rng, width, height, colors, "former", hole_prob=0.1)
        if not board.any():
            continue
        optimum = brute_force_optimum(board, "former")
        geometry = bitboard.make_geometry(width, height, "former")
        planes = bitboard.to_planes(board, colors)
        assert ida.lower_bound(planes, geometry) <= optimum
        above_colour_bound += ida.rule_bound(planes, geometry) > ida.bound_from(
            bitboard.count_colours(planes), ida.single_cluster_colours(planes, geometry))
        solution = jaxdust.solve(board, rules="former", colors=colors)
        assert solution.optimal and solution.length == optimum
        position = board
        for x, y in solution.clicks:
            position, removed = fr.click(position, x, y, "former")
            assert removed > 0
        assert not position.any()
        checked += 1
    assert checked >= 25 and above_colour_bound >= 5  # the runs bound is not vacuous


def test_former_and_dust_optima_differ_and_boards_settle_by_their_rules():
    # Column 1 is empty: settled under former (gravity only), not under dust's slide.
    board = np.array([[1, 2], [0, 0], [2, 1]], np.int8)
    assert jaxdust.solve(board, rules="former").length == brute_force_optimum(board, "former") == 4
    with pytest.raises(ValueError, match="settled under the dust rules"):
        jaxdust.solve(board)
    # One board, two optima: the slide joins groups that gravity alone leaves apart.
    board = np.array([[1, 3, 1], [2, 2, 2], [1, 1, 3], [3, 3, 2]], np.int8)
    assert jaxdust.solve(board).length == brute_force_optimum(board, "dust") == 4
    assert jaxdust.solve(board, rules="former").length == brute_force_optimum(board, "former") == 6


@pytest.mark.parametrize("rules", ["samegame", "clickomania", "tetris"])
def test_solver_refuses_rules_it_does_not_play(rules):
    with pytest.raises(ValueError, match="dust, former" if rules != "tetris" else "known: dust, former"):
        jaxdust.solve(np.ones((2, 2), np.int8), rules=rules)


@pytest.mark.parametrize("rules, colors", [("dust", 3), ("former", 2)])
def test_the_solvers_table_holds_only_facts_about_positions(rules, colors):
    """4x3 boards (former: all 4,096 of 2 colours; dust: 6,000 random ones of 3), proven by
    IDA* alone (``beam_width=0``) with one table shared by all, need exactly plain IDA*'s
    clicks (no commuting-moves rule). A node that skips a click by that rule has not
    searched its position whole; when it stored its refutation as the position's bound,
    the position reached by another path, as its mirror image, in a later iteration or from
    another board was cut, and 283 of these former boards and one of these dust ones came
    out a click or more too long, "proven optimal" (the smallest case, a 3x3 board, in a
    fresh table). Such a refutation is now held under the click's own key (``ida.edge_key``).
    """
    table = TranspositionTable(16)
    indices = range(2 ** 12) if colors == 2 else np.random.default_rng(11).integers(0, 3 ** 12, 6000)
    for index in indices:
        board = ((int(index) // colors ** np.arange(12)) % colors + 1).astype(np.int8).reshape(4, 3)
        pruned = jaxdust.solve(board, colors=colors, beam_width=0, rules=rules, table=table)
        plain = jaxdust.solve(board, colors=colors, beam_width=0, rules=rules, prune=False)
        assert pruned.optimal and pruned.length == plain.length, (index, pruned.length, plain.length)
    smallest = np.array([[1, 2, 1], [2, 2, 2], [1, 3, 1]], np.int8)
    assert jaxdust.solve(smallest, colors=3, beam_width=0, rules=rules).length == brute_force_optimum(smallest, rules)


def test_solver_cli_proves_former_boards_into_a_board_file(tmp_path):
    rng = np.random.default_rng(3)
    boards = [fr.random_board(rng, 4, 4, 3) for _ in range(3)]
    source = tmp_path / "boards.txt"
    source.write_text("".join("".join(str(v) for v in b.reshape(-1)) + "\n" for b in boards))
    out, proven = tmp_path / "out.jsonl", tmp_path / "proven.txt"
    assert solve_main([str(source), "--rules", "former", "--width", "4", "--jobs", "1", "--out", str(out),
                       "--board-file", str(proven)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["length"] for r in records] == [brute_force_optimum(b, "former") for b in boards]
    assert "--rules former" in proven.read_text()
    lines = proven.read_text().splitlines()  # which evaluate.py reads as former's optima
    assert (board_io.declared_rules(lines), board_io.reference_columns(lines)) == ("former", "optima")
    assert [r.values[0] for r in jaxdust.read_board_file(proven, rules="former")] == [r["length"] for r in records]
    # Run again, the command replaces the board file it wrote (any other file it refuses), as an empty one.
    written = proven.read_bytes()
    proven.write_text("")
    for _ in range(2):
        assert solve_main([str(source), "--rules", "former", "--width", "4", "--jobs", "1", "--out", str(out),
                           "--board-file", str(proven)]) == 0
        assert proven.read_bytes() == written
    with pytest.raises(SystemExit):
        solve_main([str(source), "--rules", "samegame", "--width", "4"])


def independent_extra_column_runs(board: np.ndarray) -> int:
    """Runs of adjacent columns holding each colour, summed, less the colours: in plain Python."""
    runs, colours = 0, 0
    for colour in range(1, 10):
        holds = [colour in board[x] for x in range(board.shape[0])]
        runs += sum(1 for x, here in enumerate(holds) if here and (x == 0 or not holds[x - 1]))
        colours += any(holds)
    return runs - colours


def test_former_heuristic_counts_the_extra_column_runs_as_numba_and_plain_python_do():
    """``heuristic.extra_column_runs`` (JAX) against a plain count and the solver's
    ``ida.column_runs`` (numba) on settled Former boards with holes, whole columns empty
    among them; the Former scorer adds it with its weight, the dust game's does not."""
    rng = np.random.default_rng(5)
    boards = np.stack([fr.random_settled_board(rng, 7, 9, 4, "former", hole_prob=p)
                       for p in (0.0, 0.2, 0.5, 0.8) for _ in range(10)] + [np.zeros((7, 9), np.int8)])
    extra = np.asarray(heuristic.extra_column_runs(jnp.asarray(boards)))
    geometry = bitboard.make_geometry(7, 9, "former")
    for board, value in zip(boards, extra):
        planes = bitboard.to_planes(board, 4)
        assert value == independent_extra_column_runs(board)
        assert value == ida.column_runs(planes, geometry)[0] - bitboard.count_colours(planes)
    assert extra.max() >= 3 and extra.min() == 0
    features = np.asarray(heuristic.batch_features(jnp.asarray(boards)))
    weight = heuristic.RULE_FEATURE_WEIGHTS["former"]
    np.testing.assert_allclose(np.asarray(heuristic.heuristic_for("former")(jnp.asarray(boards))),
                               np.round((features @ HEURISTIC_WEIGHTS + weight * extra) / 1e-4) * 1e-4, atol=1e-3)
    assert heuristic.heuristic_for("dust") is heuristic_scorer
    assert heuristic.heuristic_weights("former").tolist() == [*HEURISTIC_WEIGHTS, weight]
    with pytest.raises(ValueError, match="unknown rules 'formr'; known: dust, former"):
        heuristic.heuristic_for("formr")


@pytest.mark.slow
def test_former_beams_in_jax_and_numba_agree_and_clear_the_board():
    """The batched JAX beam under ``former`` (its own heuristic by default) gives each board
    the numba beam's length (with and without the lookahead) and lines that clear the board
    under the reference."""
    rng = np.random.default_rng(11)
    boards = np.stack([fr.random_settled_board(rng, 7, 9, 4, "former", hole_prob=0.2) for _ in range(6)])
    geometry = bitboard.make_geometry(7, 9, "former")
    path = np.zeros(63, np.uint64)
    for rescorer, shortlist in [(None, 0), (beam.lookahead_scorer(heuristic.heuristic_for("former"), rules="former"),
                                            LOOKAHEAD_SHORTLIST)]:
        found = beam.beam_search(jnp.asarray(boards), width=16, rescorer=rescorer, chunk=256, rules="former")
        for board, length, actions in zip(boards, np.asarray(found.length), np.asarray(found.actions)):
            assert length == upper_bound.beam_upper_bound(bitboard.to_planes(board, 4), geometry, 16,
                                                          heuristic.heuristic_weights("former"), path, shortlist)
            position = board
            for action in actions[:length]:
                position, removed = fr.click(position, *divmod(int(action), 9), "former")
                assert removed > 0
            assert not position.any()
    with pytest.raises(ValueError, match="beam_search plays the fewest-clicks rules"):
        beam.beam_search(jnp.asarray(boards[:1]), width=16, rules="samegame")


# ---------------------------------------------------------------------------------------
# Points and cells left (jaxdust.solver.points)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("rules", list(fr.RULES))
def test_grid_rules_match_reference(rules):
    """The numba grid rules (any board size) give the reference's boards and group sizes."""
    sideways, min_group = points._SIDEWAYS[jaxdust.RULES[rules].sideways], jaxdust.RULES[rules].min_group
    rng = np.random.default_rng(len(rules))
    clicks = 0
    for width, height, colors in [(15, 15, 5), (7, 9, 4), (5, 3, 3), (1, 6, 2), (6, 1, 3)] * 6:
        board = fr.random_settled_board(rng, width, height, colors, rules)
        scratch = points._scratch(width * height)
        while not fr.is_over(board, rules):
            x, y = fr.legal_moves(board, rules)[rng.integers(len(fr.legal_moves(board, rules)))]
            grid = board.astype(np.int8)
            removed = points._click_cell(grid, x * height + y, *scratch[:4], sideways)
            board, expected = fr.click(board, x, y, rules)
            assert removed == expected >= min_group
            np.testing.assert_array_equal(grid, board)
            clicks += 1
    assert clicks > 300


def best_points(board: np.ndarray, rules: str) -> int:
    """Most points (or fewest cells left, negated) over every line, by exhaustive search."""
    best, stack, seen = -10**9, [(board, 0)], set()
    while stack:
        position, gained = stack.pop()
        moves = fr.legal_moves(position, rules)
        if not moves:
            final = gained + (1000 if not position.any() else 0) if rules == "samegame" else -np.count_nonzero(position)
            best = max(best, final)
        for x, y in moves:
            child, removed = fr.click(position, x, y, rules)
            key = (child.tobytes(), gained + fr.points(removed))
            if key not in seen:
                seen.add(key)
                stack.append((child, gained + fr.points(removed)))
    return best


@pytest.mark.parametrize("rules", ["samegame", "clickomania"])
def test_points_searches_return_lines_the_reference_scores_alike(rules):
    """Each search's line is legal under the reference, which gives the same points and
    cells left; a beam wide enough to hold every position finds the exhaustive optimum."""
    rng = np.random.default_rng(5)
    for width, height, colors in [(4, 3, 3), (3, 4, 2), (5, 3, 3), (4, 4, 3)] * 2:
        board = fr.random_board(rng, width, height, colors)
        optimum = best_points(board, rules)
        for line in (points.beam(board, 1, rules), points.beam(board, 4096, rules), points.nmcs(board, 1, rules),
                     points.nmcs(board, 2, rules)):
            position = board
            for x, y in line.clicks:
                position, removed = fr.click(position, x, y, rules)
                assert removed >= 2
            assert fr.is_over(position, rules)
            assert line.cells_left == np.count_nonzero(position)
            assert line.points == fr.line_points(board, line.clicks)
            found = line.points if rules == "samegame" else -line.cells_left
            assert found <= optimum
        wide = points.beam(board, 4096, rules)
        assert (wide.points if rules == "samegame" else -wide.cells_left) == optimum


def test_points_searches_on_research_boards_are_seeded_and_beat_greedy():
    rng = np.random.default_rng(0)
    boards = [fr.random_board(rng, 15, 15, 5) for _ in range(3)]
    greedy = np.mean([fr.largest_group_greedy(b)[1] for b in boards])
    first = [points.nmcs(b, 1, seed=3) for b in boards]
    assert [line.clicks for line in first] == [points.nmcs(b, np.int64(1), seed=np.uint32(3)).clicks for b in boards]
    assert [line.clicks for line in first] != [points.nmcs(b, 1, seed=4).clicks for b in boards]
    assert np.mean([line.points for line in first]) > 2 * greedy
    beams = [points.beam(b, 16) for b in boards]
    assert np.mean([line.points for line in beams]) > greedy
    assert [line.clicks for line in beams] == [points.beam(b, np.int32(16)).clicks for b in boards]
    for line, board in zip(first, boards):
        assert fr.line_points(board, line.clicks) == line.points


@pytest.mark.parametrize("call,message", [
    (lambda b: points.beam(b, 0), "width must be a positive integer"),
    (lambda b: points.beam(b, 8, "dust"), "jaxdust.solver.points.beam plays the points and cells-left rules"),
    (lambda b: points.nmcs(b, 1, "former"), "jaxdust.solver.points.nmcs plays the points and cells-left rules"),
    (lambda b: points.nmcs(b, 3), "level must be 1 or 2"),
    (lambda b: points.nmcs(b, True), "level must be 1 or 2"),
    (lambda b: points.beam(b, 8.0), "width must be a positive integer"),
    (lambda b: points.nmcs(b, 1, seed=-1), r"seed must be an integer in \[0, 2\^32\)"),
    (lambda b: points.nmcs(b, 1, seed=2**32), r"seed must be an integer in \[0, 2\^32\)"),
    (lambda b: points.nmcs(b, 1, rules="tetris"), "unknown rules 'tetris'"),
    (lambda b: points.beam(np.array([[0, 1], [2, 2]]), 8), "settled"),
])
def test_points_searches_refuse_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call(np.full((3, 3), 2, np.int8))


# ---------------------------------------------------------------------------------------
# evaluate.py and train.py on any registered id
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_evaluate_measures_samegame_in_points_and_clickomania_in_cells_left(tmp_path):
    report = evaluate.main(["--env", "SameGame-15x15x5-v0", "--random", "3", "--jobs", "1",
                            "--agents", "random,largest,cpu-beam:4,nmcs:1", "--out", str(tmp_path / "sg")])
    assert report["measure"] == "points" and report["rules"] == "samegame"
    rows = list(csv.DictReader(open(tmp_path / "sg" / "boards.csv")))
    assert {row["measure"] for row in rows} == {"points"}
    for name, summary in report["agents"].items():
        points = [int(row[name]) for row in rows]
        assert summary["mean"] == pytest.approx(np.mean(points))
        assert summary["std"] == pytest.approx(np.std(points, ddof=1))  # se's deviation, so se = std / sqrt(3)
        assert summary["se"] == pytest.approx(summary["std"] / np.sqrt(3))
    boards = [jaxdust.parse_board(row["board"], 15, 15, "samegame") for row in rows]
    greedy = [fr.largest_group_greedy(np.asarray(b))[1] for b in boards]
    assert report["agents"]["largest"]["mean"] == pytest.approx(np.mean(greedy))  # UVa 758's greedy
    assert report["agents"]["nmcs:1"]["mean"] > 3 * report["agents"]["random"]["mean"]
    assert (tmp_path / "sg" / "points.png").stat().st_size > 1000
    # A board file is read under the rules played: five full columns, closed left, are a
    # settled SameGame board (and no dust board: its left half is not packed to the centre).
    board = np.zeros((15, 15), np.int8)
    board[:5] = np.asarray(jaxdust.random_board(jax.random.key(4), jaxdust.GameConfig(5, 15, 5)))
    (tmp_path / "sg.txt").write_text("# width=15 height=15\n" + jaxdust.board_to_text(board) + "\n")
    report = evaluate.main(["--env", "SameGame-15x15x5-v0", "--boards", str(tmp_path / "sg.txt"), "--jobs", "1",
                            "--agents", "largest", "--out", str(tmp_path / "sg-file")])
    assert report["agents"]["largest"]["mean"] == fr.largest_group_greedy(board)[1]

    report = evaluate.main(["--env", "Clickomania-10x10x4-v0", "--random", "3", "--jobs", "1",
                            "--agents", "random,cpu-beam:16,beam:16", "--animate", "1", "--out", str(tmp_path / "ck")])
    assert report["measure"] == "cells_left"
    assert {row["measure"] for row in csv.DictReader(open(tmp_path / "ck" / "boards.csv"))} == {"cells_left"}
    for name in ("random", "cpu-beam-16", "beam-16"):  # one game of each, a frame a click and the start
        with Image.open(tmp_path / "ck" / f"game-{name}-0.gif") as gif:
            assert gif.n_frames >= 2
    assert not (tmp_path / "ck" / "game-beam-16-1.gif").exists()
    assert 0 <= report["agents"]["cpu-beam:16"]["mean"] < report["agents"]["random"]["mean"] <= 100
    assert 0 <= report["agents"]["beam:16"]["mean"] < report["agents"]["random"]["mean"]


FORMER_RUNS = {  # a few seconds of training each: the rules reach every learner, not skill
    "avi": ["--total-updates", "10", "--chunk-updates", "5", "--num-envs", "32", "--eval-boards", "4",
            "--eval-every", "2", "--hidden", "16", "--beam-width", "2", "--buffer-lines", "32", "--cell-rounds", "1",
            "--policy-teacher", "mcts", "--teacher-simulations", "2"],
    "dqn": ["--total-steps", "2048", "--chunk-iterations", "32", "--num-envs", "32", "--buffer-size", "1024",
            "--batch-size", "32", "--learning-starts", "256", "--hidden", "16", "--eval-boards", "4"],
    "imitation": ["--data-boards", "12", "--data-beam-width", "2", "--epochs", "1", "--batch-size", "32",
                  "--hidden", "16", "--eval-boards", "4", "--cell-rounds", "1", "--cell-width", "8"],
}


@pytest.mark.slow
@pytest.mark.parametrize("learner", list(FORMER_RUNS))
def test_train_and_evaluate_a_former_run(learner, tmp_path, capsys):
    """Every learner trains under the former rules (avi with the MCTS teacher, which plans
    with them) and its agents play former boards: lines the solver's never beat."""
    run = tmp_path / "run"
    summary = train_main([learner, "--env", "Former-7x9x4-v0", "--run-dir", str(run), *FORMER_RUNS[learner]])
    assert json.load(open(run / "config.json"))["config"]["game"]["rules"] == "former"
    assert summary["greedy_clicks"] > 0
    hint = f"play it with python evaluate.py --env Former-7x9x4-v0 --agents policy:{run},value:{run}"
    assert hint in capsys.readouterr().err
    entries = [entry for entry, _ in leaderboard.learner_entries(learner, str(run), "former")]
    assert (f"mcts:{run}:64" in entries) == (learner != "dqn")  # the leaderboard searches where it has a policy
    newest = [entry for entry, _ in leaderboard.learner_entries(learner, f"{run}@newest", "former")]
    assert newest == [entry.replace(str(run), f"{run}@newest") for entry in entries]
    agents = ["largest", f"value:{run}", f"policy:{run}", "solver:2"]
    agents += [f"mcts:{run}:4", "mcts-heuristic:4"] if learner == "avi" else []
    report = evaluate.main(["--env", "Former-7x9x4-v0", "--random", "2", "--jobs", "1",
                            "--agents", ",".join(agents), "--out", str(tmp_path / "ev")])
    assert report["rules"] == "former" and report["measure"] == "clicks"
    rows = list(csv.DictReader(open(tmp_path / "ev" / "boards.csv")))
    for name in agents:  # the summary is the per-board table's
        assert report["agents"][name]["mean"] == pytest.approx(np.mean([int(row[name]) for row in rows]))
    for row in rows:  # the solver's lines are former's: no longer than any other agent's
        board = jaxdust.parse_board(row["board"], 7, 9, "former")
        assert int(row["solver:2"]) <= min(int(row[name]) for name in agents)
        assert int(row["solver:2"]) >= bitboard_bound(board)
    if learner == "avi":  # the agent plans with the boards' rules: it is the former search's play
        boards = jnp.stack([jaxdust.parse_board(row["board"], 7, 9, "former") for row in rows])
        planned = play_boards(boards, MCTSPolicy(heuristic_evaluator_for("former"), 4, rules="former"), jax.random.key(0), 63,
                              rules="former")
        assert [int(row["mcts-heuristic:4"]) for row in rows] == np.asarray(planned.clicks).tolist()
    with pytest.raises(SystemExit):  # a former run does not play the dust game
        evaluate.main(["--random", "2", "--size", "7x9x4", "--agents", f"value:{run}", "--out", str(tmp_path / "x")])


@pytest.mark.slow
def test_a_former_run_of_a_size_no_id_registers_trains_and_plays_as_its_hint_says(tmp_path, capsys):
    """``--size former:6x5x4`` trains Former at a size with no registered id; the command
    train.py prints after it plays the run on boards of that size, under those rules (its
    run directory's name quoted for the shell)."""
    run = tmp_path / "my run"
    train_main(["avi", "--size", "former:6x5x4", "--run-dir", str(run), *FORMER_RUNS["avi"][:-4]])
    assert json.load(open(run / "config.json"))["config"]["game"] == {"width": 6, "height": 5, "colors": 4,
                                                                       "rules": "former"}
    hint = shlex.split(capsys.readouterr().err.rsplit("play it with python evaluate.py ", 1)[1])
    assert hint == ["--random", "100", "--size", "former:6x5x4", "--agents", f"policy:{run},value:{run}"]
    report = evaluate.main([*hint, "--limit", "3", "--out", str(tmp_path / "ev")])
    assert report["rules"] == "former" and report["boards"] == "3 random 6x5x4 boards (seed 0)"
    boards = jax.vmap(lambda k: jaxdust.random_board(k, jaxdust.GameConfig(6, 5, 4, "former")))(
        jax.random.split(jax.random.key(0), 100))[:3]
    rows = list(csv.DictReader(open(tmp_path / "ev" / "boards.csv")))
    assert [jaxdust.parse_board(row["board"], 6, 5, "former").tolist() for row in rows] == np.asarray(boards).tolist()
    for row in rows:  # former's lines: never shorter than the proven optimum under former
        optimum = jaxdust.solve(jaxdust.parse_board(row["board"], 6, 5, "former"), rules="former").length
        assert min(int(row[f"policy:{run}"]), int(row[f"value:{run}"])) >= optimum


def bitboard_bound(board) -> int:
    board = np.asarray(board)
    return ida.lower_bound(bitboard.to_planes(board, 4), bitboard.make_geometry(*board.shape, "former"))


@pytest.mark.parametrize("argv,message", [
    (["evaluate", "--env", "SameGame-15x15x5-v0", "--agents", "solver:1"], "agent 'solver' plays the dust, former rules"),
    (["evaluate", "--env", "Dust-8x6x5-v0", "--agents", "nmcs:1"], "agent 'nmcs' plays the samegame, clickomania"),
    (["evaluate", "--env", "Tetris-1"], "unknown environment 'Tetris-1'; registered: Dust-6x6x5-v0"),
    (["evaluate", "--env", "Dust-8x6x5-v0", "--size", "6x6x5"], "not allowed with argument"),
    (["evaluate", "--env", "SameGame-15x15x5-v0", "--agents", "nmcs:3"], "nmcs: level must be 1 or 2"),
    (["train", "avi", "--env", "SameGame-15x15x5-v0"], "avi plays the dust, former rules so far, not 'samegame'"),
    (["train", "dqn", "--env", "Clickomania-10x10x4-v0"], "dqn plays the dust, former rules so far, not 'clickomania'"),
    (["evaluate", "--env", "SameGame-15x15x5-v0", "--agents", "mcts-heuristic"],
     "agent 'mcts-heuristic' plays the dust, former rules"),
])
def test_cli_refuses_rules_an_agent_or_learner_does_not_play(argv, message, capsys, tmp_path):
    main = evaluate.main if argv[0] == "evaluate" else train_main
    with pytest.raises(SystemExit):
        main(argv[1:] + (["--out", str(tmp_path / "o")] if argv[0] == "evaluate" else ["--run-dir", str(tmp_path / "r")]))
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize("rules", ["samegame", "clickomania"])
def test_jax_points_beam_plays_legal_lines_and_matches_numba_at_width_one(rules):
    """The batched JAX beam's lines are legal under the reference and worth what it says;
    it keeps the numba beam's positions, so both find the same lines; wide enough, it finds
    the exhaustive optimum on small boards."""
    rng = np.random.default_rng(9)
    research = np.stack([fr.random_board(rng, 10, 8, 4) for _ in range(4)])
    small = np.stack([fr.random_board(rng, 4, 3, 3) for _ in range(5)])
    for boards, width in [(research, 1), (research, 8), (small, 512)]:
        found = jaxdust.points_beam(jnp.asarray(boards), width=width, rules=rules)
        for board, value, length, actions in zip(boards, *map(np.asarray, found)):
            position = board
            for action in actions[:length]:
                position, removed = fr.click(position, *divmod(int(action), board.shape[1]), rules)
                assert removed >= 2
            assert fr.is_over(position, rules) and np.all(actions[length:] == -1)
            clicks = [divmod(int(a), board.shape[1]) for a in actions[:length]]
            assert value == (fr.line_points(board, clicks) if rules == "samegame" else -np.count_nonzero(position))
            assert clicks == points.beam(board, width, rules).clicks
            if width == 512:
                assert value == best_points(board, rules)
    as_lists = jaxdust.points_beam(small.tolist(), width=np.int64(512), rules=rules)  # lists, a numpy width
    assert all(np.array_equal(a, b) for a, b in zip(as_lists, found))
    one = jaxdust.points_beam(small[-1], width=512, rules=rules)  # one board [W, H]
    assert all(np.array_equal(a, b[-1]) for a, b in zip(one, found))
    with pytest.raises(ValueError, match="points_beam plays the points and cells-left rules"):
        jaxdust.points_beam(jnp.asarray(small), rules="former")


def test_points_beam_in_batches_equals_one_search_of_every_board():
    """evaluate.py's points beam searches a few boards at a time (memory bounded however
    many boards): each board's line is the one a search of all of them at once finds."""
    from jaxdust.search.points import points_beam_solutions

    rng = np.random.default_rng(4)
    boards = np.stack([fr.random_board(rng, 6, 5, 3) for _ in range(7)])
    whole = jaxdust.points_beam(jnp.asarray(boards), width=4, rules="samegame")
    seen = []
    batched = points_beam_solutions(boards, 4, "samegame", batch=3, progress=seen.append)
    assert seen == [3, 3, 1] and all(isinstance(field, np.ndarray) for field in batched)
    assert all(np.array_equal(a, b) for a, b in zip(batched, whole))
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        points_beam_solutions(boards, 4, "samegame", batch=0)
    # the rules reach every batch: clickomania's lines are its own search's, not SameGame's
    clickomania = points_beam_solutions(boards, 4, "clickomania", batch=3)
    whole = jaxdust.points_beam(jnp.asarray(boards), width=4, rules="clickomania")
    assert all(np.array_equal(a, b) for a, b in zip(clickomania, whole))
    seen = []  # evaluate.py's agent counts the boards as they are searched
    registry.run_agent("beam:4", jnp.asarray(boards), key=jax.random.key(0), max_clicks=30, rules="samegame",
                       progress=seen.append)
    assert sum(seen) == len(boards)


@pytest.mark.parametrize("rules", ["samegame", "clickomania"])
def test_points_beam_on_a_board_with_room_for_no_group(rules):
    found = jaxdust.points_beam(np.array([[[3], [4]]], np.int8), 4, rules)  # the least board: 2 x 1
    assert int(found.length[0]) == 0 and np.all(np.asarray(found.actions) == -1)
    assert int(found.value[0]) == (0 if rules == "samegame" else -2)  # no points; two cells left
    one = jaxdust.points_beam(np.array([[3], [4]], np.int8), 4, rules)  # one board: unbatched results
    assert np.shape(one.value) == () and np.shape(one.actions) == found.actions.shape[1:]
    assert (int(one.value), int(one.length)) == (int(found.value[0]), 0)


@pytest.mark.slow
def test_nmcs2_boards_run_in_parallel_and_a_rerun_plays_only_the_rest(tmp_path, monkeypatch):
    """benchmarks/samegame.py's NMCS level 2: results equal one search per board, kept per
    board as they end, so a rerun after a stop plays only the boards not kept."""
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
    import samegame

    boards = np.random.default_rng(5).integers(1, 4, (4, 5, 4)).astype(np.int8)  # full boards: settled
    path = tmp_path / "nmcs2.jsonl"
    first = samegame.nmcs2_lines(boards[:2], 3, 2, str(path))
    for board, line in zip(boards[:2], first):
        alone = points.nmcs(board, 2, seed=3)
        assert (line["points"], line["cells_left"], line["clicks"]) == (alone.points, alone.cells_left,
                                                                        [list(c) for c in alone.clicks])
    kept = [json.loads(text) for text in path.read_text().splitlines()]
    kept[0]["points"] = -1  # marked: a board played again would not return it
    path.write_text("".join(json.dumps(line) + "\n" for line in kept))
    again = samegame.nmcs2_lines(boards, 3, 1, str(path))
    assert [line["board"] for line in again] == ["".join(map(str, b.reshape(-1))) for b in boards]
    assert -1 in [line["points"] for line in again[:2]] and len(path.read_text().splitlines()) == 4
    assert again[2]["points"] == points.nmcs(boards[2], 2, seed=3).points
    other_seed = samegame.nmcs2_lines(boards[:1], 4, 1, str(path))  # another seed is another result
    assert len(path.read_text().splitlines()) == 5 and other_seed[0]["seed"] == 4
    other_rules = samegame.nmcs2_lines(boards[:1], 3, 1, str(path), "clickomania")  # and other rules
    assert len(path.read_text().splitlines()) == 6 and other_rules[0]["rules"] == "clickomania"
    assert other_rules[0]["points"] != -1
    kept = [json.loads(text) for text in path.read_text().splitlines()]
    kept[-1]["jaxdust"] = "0.0.1"  # played by another version, which may search otherwise
    path.write_text("".join(json.dumps(line) + "\n" for line in kept))
    assert samegame.nmcs2_lines(boards[:1], 3, 1, str(path), "clickomania")[0]["jaxdust"] == jaxdust.__version__
    assert len(path.read_text().splitlines()) == 7


def test_samegame_benchmarks_table_leads_with_the_rules_measure(monkeypatch):
    """Points and their spread lead for SameGame, cells left for Clickomania; every row,
    the separator and an NMCS level 2 row's note have one cell a column."""
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
    import samegame

    row = {"boards": 4, "mean_points": 1234.56, "std_points": 78.9, "cleared": 0.25, "mean_cells_left": 6.5,
           "seconds_per_board": 0.01234}
    agents = {"beam": row, "NMCS 2": {**row, "others_measure": "points", "others_on_these_boards": {"beam": 99.0}}}
    points_table = samegame.markdown_table(agents, "points")
    assert points_table[:3] == ["| agent | boards | mean points | std | cleared | cells left | s/board |",
                                "|---|---:|---:|---:|---:|---:|---:|",
                                "| beam | 4 | 1234.6 | 78.9 | 25% | 6.5 | 0.0123 |"]
    assert points_table[4].startswith("|  on those boards, mean points: beam 99.0 |")
    cells_table = samegame.markdown_table({"beam": row}, "cells_left")
    assert cells_table == ["| agent | boards | mean cells left | cleared | points | s/board |",
                           "|---|---:|---:|---:|---:|---:|", "| beam | 4 | 6.5 | 25% | 1234.6 | 0.0123 |"]
    for line in points_table + cells_table:  # one cell a column
        assert line.count("|") == (points_table if line in points_table else cells_table)[0].count("|"), line


@pytest.mark.slow
def test_samegame_benchmark_plays_the_rules_of_env(tmp_path, monkeypatch, capsys):
    """benchmarks/samegame.py --env Clickomania-...: every agent plays the clickomania
    rules, the searches minimise cells left, and the batched JAX beam keeps the numba
    beam's positions (equal lines at width 1)."""
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
    import samegame

    out = tmp_path / "clickomania.json"
    report = samegame.main(["--env", "Clickomania-10x10x4-v0", "--boards", "4", "--beam-widths", "1",
                            "--jax-widths", "1", "--nmcs2-boards", "1", "--out", str(out)])
    assert report["rules"] == "clickomania" and report["objective"] == "cells_left" and report["size"] == [10, 10, 4]
    assert report["measured_on"]["jaxdust"] == jaxdust.__version__ and "backend" in report["measured_on"]
    rows = report["agents"]
    boards = [np.asarray(jaxdust.random_board(key, jaxdust.GameConfig(10, 10, 4, "clickomania")))
              for key in jax.random.split(jax.random.key(0), 4)]
    for name, search in (("beam 1 (numba)", lambda b: points.beam(b, 1, "clickomania")),
                         ("NMCS level 1 (numba)", lambda b: points.nmcs(b, 1, "clickomania", seed=0))):
        lines = [search(board) for board in boards]  # the searches for the id's objective, on its boards
        assert rows[name]["mean_cells_left"] == np.mean([line.cells_left for line in lines])
        assert rows[name]["mean_points"] == np.mean([line.points for line in lines])
        assert rows[name]["std_points"] == pytest.approx(np.std([line.points for line in lines], ddof=1))
    assert rows["beam 1 (JAX, batched)"]["mean_cells_left"] == rows["beam 1 (numba)"]["mean_cells_left"]
    assert rows["beam 1 (JAX, batched)"]["mean_points"] == rows["beam 1 (numba)"]["mean_points"]
    assert rows["NMCS level 1 (numba)"]["mean_cells_left"] < rows["random legal"]["mean_cells_left"]
    nmcs2 = rows["NMCS level 2 (numba), first 1 boards"]
    assert nmcs2["others_measure"] == "cells_left"
    assert nmcs2["others_on_these_boards"]["NMCS level 1 (numba)"] == points.nmcs(boards[0], 1, "clickomania").cells_left
    kept = json.loads((tmp_path / "clickomania-nmcs2.jsonl").read_text())
    assert kept["rules"] == "clickomania" and kept["board"] == "".join(map(str, boards[0].reshape(-1)))
    assert kept["cells_left"] == points.nmcs(boards[0], 2, "clickomania", seed=0).cells_left
    # As written, as strict JSON: a spread of one board is NaN in the report, null in the file.
    assert json.loads(out.read_text()) == files.strict_json(report)
    assert np.isnan(nmcs2["std_points"]) and json.loads(out.read_text())["agents"][
        "NMCS level 2 (numba), first 1 boards"]["std_points"] is None
    table = capsys.readouterr().out  # led by the rules' own measure
    assert "| agent | boards | mean cells left | cleared | points | s/board |" in table
    (others,) = [line for line in table.splitlines() if line.startswith("|  on those boards, mean cells left: ")]
    assert others.count("|") == 7  # six cells, as the header's
    row = rows["beam 1 (numba)"]
    assert (f"| beam 1 (numba) | 4 | {row['mean_cells_left']:.1f} | {100 * row['cleared']:.0f}% | "
            f"{row['mean_points']:.1f} |") in table
    # --seed reaches the random agent's clicks as well as the boards (its key stayed 1).
    seeded = samegame.main(["--env", "Clickomania-10x10x4-v0", "--boards", "4", "--beam-widths", "1", "--jax-widths",
                            "1", "--nmcs2-boards", "0", "--seed", "1", "--out", str(tmp_path / "seed1.json")])
    boards = jaxdust.random_boards(jax.random.key(1), 4, jaxdust.GameConfig(10, 10, 4, "clickomania"))
    played = jaxdust.play_boards(boards, baselines.RandomLegal("clickomania"), jax.random.key(2), 100,
                                 rules="clickomania")
    assert seeded["agents"]["random legal"]["mean_cells_left"] == np.mean(np.asarray(played.cells_left))


def test_samegame_benchmark_refuses_boards_its_jax_beam_cannot_take_before_playing(tmp_path, monkeypatch, capsys):
    """A 100x100 board played the random and largest-group agents for minutes, then ended
    in the JAX beam's traceback; it is refused in one line first."""
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
    import samegame

    monkeypatch.setattr(samegame, "play_boards", lambda *args, **kwargs: pytest.fail("played before refusing"))
    with pytest.raises(SystemExit) as exit_info:
        samegame.main(["--size", "100x100x5", "--boards", "2", "--out", str(tmp_path / "s.json")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "--size: the JAX beam (--jax-widths) takes boards of at most 4,096 cells, and samegame:100x100x5 has " \
           "10,000" in err, err


def test_samegame_benchmark_refuses_more_nmcs2_boards_than_boards(tmp_path, monkeypatch, capsys):
    """--nmcs2-boards 5 --boards 2 played NMCS level 2 on 2 boards without a word."""
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
    import samegame

    monkeypatch.setattr(samegame, "play_boards", lambda *args, **kwargs: pytest.fail("played before refusing"))
    with pytest.raises(SystemExit) as exit_info:
        samegame.main(["--nmcs2-boards", "5", "--boards", "2", "--out", str(tmp_path / "s.json")])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith("error: --nmcs2-boards 5: more than the 2 boards of --boards\n")


def test_the_jax_and_numba_points_beams_find_the_same_lines():
    """Both points beams rank by the same estimate (colours only, empty cells not one of
    them), so they keep the same positions and find the same lines (a quick version of the
    slow width-one comparison)."""
    rng = np.random.default_rng(3)
    boards = np.stack([rng.integers(1, 4, (6, 5)).astype(np.int8) for _ in range(6)])
    for rules in ("samegame", "clickomania"):
        for beam_width in (1, 4):
            found = jaxdust.points_beam(jnp.asarray(boards), width=beam_width, rules=rules)
            for board, length, actions in zip(boards, np.asarray(found.length), np.asarray(found.actions)):
                clicks = [divmod(int(a), board.shape[1]) for a in actions[:length]]
                assert clicks == points.beam(board, beam_width, rules).clicks, (rules, beam_width)


def test_searching_in_batches_compiles_only_the_search(compile_log):
    """A JAX array's batches were cut and padded on the device: a program for each new
    offset and size, compiled while ``benchmarks/beam.py`` timed the search after warming
    it up on the first batch. Only the search compiles, once, for boards of either kind."""
    from jaxdust.search.points import points_beam_solutions

    for solutions, rules in ((beam.beam_solutions, "former"), (points_beam_solutions, "clickomania")):
        boards = jaxdust.random_boards(jax.random.key(6), 7, jaxdust.GameConfig(5, 3, 3, rules))
        solutions(np.asarray(boards[:3]), 3, rules=rules, batch=3)  # compiles the search
        for given in (np.asarray(boards), boards):
            _, compiled = compile_log(lambda: solutions(given, 3, rules=rules, batch=3))
            assert not [message for message in compiled if message.startswith("Compiling ")], compiled
