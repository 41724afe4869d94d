"""The fewest-clicks benchmark: its published sets, the scorer and the leaderboard script."""

import contextlib
import dataclasses
import functools
import json
import math
import os
import subprocess
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdust
from jaxdust.core import boards as board_io
from jaxdust.core import configs, flags, machine
from jaxdust.evaluation import benchmark, leaderboard, plots, registry
from jaxdust.evaluation import cli as evaluate_cli
from jaxdust.learn import avi, cli, runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("size", ["6x6x5", "8x4x5"])
def test_small_sets_hold_the_proven_boards(size, boards_dir):
    board_set = benchmark.load_set(size)
    optimal = jaxdust.read_board_file(boards_dir / f"optimal_{size}.txt")
    assert board_set.boards.shape[0] == len(optimal) == 60
    np.testing.assert_array_equal(board_set.boards, np.stack([np.asarray(r.board) for r in optimal]))
    np.testing.assert_array_equal(board_set.best, [r.values[-1] for r in optimal])
    assert board_set.proven.all()


def test_the_1000_board_set_is_the_evaluation_set_with_bounds(boards_dir):
    board_set = benchmark.load_set("8x6x5")
    evaluation = jaxdust.read_board_file(boards_dir / "eval_8x6x5.txt")
    np.testing.assert_array_equal(board_set.boards, np.stack([np.asarray(r.board) for r in evaluation]))
    beam_5000 = np.array([r.values[-1] for r in evaluation])
    assert (board_set.lower <= board_set.best).all() and (board_set.best <= beam_5000).all()
    first_100 = [r.values[-1] for r in jaxdust.read_board_file(boards_dir / "optimal_8x6x5.txt")]
    np.testing.assert_array_equal(board_set.best[:100], first_100)
    assert board_set.proven.mean() > 0.95


def test_unknown_set_names_the_published_ones():
    with pytest.raises(ValueError, match="no benchmark set 9x9x5 v1; there are .*fewest_clicks_v1_6x6x5.txt"):
        benchmark.load_set("9x9x5")


def test_a_set_of_other_rules_is_published_and_loaded_with_them(tmp_path, monkeypatch):
    """load_set gave every set the dust game's rules: a Former set's optimal lines scored
    as dust-game play (16 clicks, half cleared, where they clear in 6.5)."""
    monkeypatch.setattr(board_io, "BOARDS_DIR", str(tmp_path))
    former = jaxdust.GameConfig(5, 5, 3, "former")
    boards = np.stack([np.asarray(jaxdust.random_board(key, former)) for key in jax.random.split(jax.random.key(3), 2)])
    lengths = [jaxdust.solve(board, rules="former").length for board in boards]
    path = benchmark.write_set("5x5x3_former", boards, lengths, lengths, "test", rules="former")
    assert open(path).readline().startswith("# width=5 height=5 colors=3 rules=former; ")
    board_set = benchmark.load_set("5x5x3_former")
    assert board_set.rules == "former"
    np.testing.assert_array_equal(board_set.boards, boards)
    scored = benchmark.score(lambda found: [jaxdust.solve(b, rules="former").clicks for b in found], board_set,
                             progress=False, show=False)
    assert scored.cleared == 1.0 and scored.mean_clicks == pytest.approx(np.mean(lengths))
    with pytest.raises(ValueError, match="lengths are fewest clicks"):
        benchmark.write_set("5x5x3_points", boards, lengths, lengths, "test", rules="samegame")


def _solver_solutions(boards):
    return [jaxdust.solve(board).clicks for board in boards]


def test_a_row_carries_the_standard_errors_of_its_mean_and_of_its_gap():
    """The gap's error is that of the per-board differences (paired with the optimum), far
    smaller than the mean's where lengths vary from board to board but the gap does not."""
    board_set = benchmark.load_set("8x4x5", limit=4)
    assert board_set.proven.all() and np.ptp(board_set.best) > 0
    clicks = board_set.best + np.array([0, 1, 0, 1])
    scored = benchmark.row("some agent", board_set, clicks, np.ones(4, bool), seconds=2.0)
    assert scored.se == pytest.approx(np.std(clicks, ddof=1) / 2)
    assert scored.gap == 0.5 and scored.gap_se == pytest.approx(np.std([0, 1, 0, 1], ddof=1) / 2)
    assert f"| {scored.mean_clicks:.3f} +- {scored.se:.3f} |" in scored.markdown()
    assert "| +0.500 +- 0.289 |" in scored.markdown()
    unproven = dataclasses.replace(board_set, lower=board_set.best - 1)
    # No proven board: no share optimal and no gap, shown as such (not "nan%" and "+nan").
    none_proven = benchmark.row("x", unproven, clicks, np.ones(4, bool), 2.0).markdown().split("|")
    assert [cell.strip() for cell in none_proven[3:5]] == ["-", "-"]


def test_a_solvers_own_solutions_are_replayed_and_scored():
    exact = benchmark.score(_solver_solutions, "8x4x5", name="exact", limit=6, show=False)
    assert (exact.boards, exact.mean_clicks, exact.optimal, exact.gap, exact.cleared) == (
        6, pytest.approx(benchmark.load_set("8x4x5").best[:6].mean()), 1.0, 0.0, 1.0)
    # Solvers of the boards alone, however made: a policy (key, board, params) is refused
    # by name, a batch solver that functools.wraps a one-board one is not.
    def per_board(solve_one):
        @functools.wraps(solve_one)
        def solve_all(boards):
            return [solve_one(board, 32) for board in boards]
        return solve_all

    @per_board
    def exact_one(board, max_clicks):
        return jaxdust.solve(board).clicks

    class Exact:
        def __call__(self, boards, unused=None):
            return _solver_solutions(boards)

    for solver in (exact_one, Exact(), functools.partial(lambda boards, width: _solver_solutions(boards), width=2)):
        assert benchmark.score(solver, "8x4x5", limit=2, show=False).optimal == 1.0

    def stops_one_click_short(boards):
        return [solution[:-1] for solution in _solver_solutions(boards)]

    short = benchmark.score(stops_one_click_short, "8x4x5", limit=6, show=False)
    assert short.cleared == 0.0 and short.mean_clicks == 32 and short.optimal == 0.0

    # A click on an empty cell is a wasted click (RULES.md): it counts, and the board is
    # still cleared, where it used to abort the whole score.
    def wastes_a_click(boards):
        return [[(0, 3)] + solution if index == 0 else solution
                for index, solution in enumerate(_solver_solutions(boards))]

    emptied = benchmark.load_set("8x4x5", limit=2)
    emptied = dataclasses.replace(emptied, boards=np.where(np.arange(4) == 3, 0, emptied.boards).astype(np.int8))
    assert emptied.boards[0, 0, 3] == 0  # (0, 3) is empty on a board whose top row is empty
    wasted = benchmark.replayed_lengths(emptied.boards, wastes_a_click(emptied.boards), 32)
    plain = benchmark.replayed_lengths(emptied.boards, _solver_solutions(emptied.boards), 32)
    assert wasted[0].tolist() == [plain[0][0] + 1, plain[0][1]] and wasted[1].all()
    # After the board is cleared, further clicks are wasted too, and count.
    after = benchmark.score(lambda boards: [s + [(0, 0)] for s in _solver_solutions(boards)], "8x4x5", limit=2,
                            show=False)
    assert after.cleared == 1.0 and after.mean_clicks == pytest.approx(exact_two := benchmark.load_set(
        "8x4x5").best[:2].mean() + 1) and exact_two > 0 and after.optimal == 0.0

    # The library's own searches return flat actions as a JAX array (padded with -1).
    searched = benchmark.score(lambda boards: [jaxdust.beam_search(board, width=8).actions for board in boards],
                               "8x4x5", limit=2, show=False)
    lengths = [int(np.sum(np.asarray(jaxdust.beam_search(board, width=8).actions) >= 0))
               for board in benchmark.load_set("8x4x5", limit=2).boards]
    assert searched.cleared == 1.0 and searched.mean_clicks == np.mean(lengths)
    board = benchmark.load_set("8x4x5", limit=1).boards[0]  # a list of JAX scalars is flat actions too
    actions = [a for a in np.asarray(jaxdust.beam_search(board, width=8).actions) if a >= 0]
    final, count = jaxdust.replay(board, [jax.numpy.int32(a) for a in actions])
    assert count == len(actions) and not np.asarray(final).any()
    for agent, board_set, options, words in [(3, "8x4x5", {}, "agent must be an agent's name"),
                                             ("largest", 3, {}, "board_set must be a size"),
                                             ("largest", "8x4x5", {"jobs": 0}, "jobs must be a positive integer"),
                                             ("largest", "8x4x5", {"jobs": "2"}, "jobs must be a positive integer"),
                                             ("largest", "8x4x5", {"seed": 2**70}, "seed must be an integer in"),
                                             ("largest", "8x4x5", {"seed": 1.5}, "seed must be an integer in")]:
        with pytest.raises((TypeError, ValueError), match=words):
            benchmark.score(agent, board_set, limit=2, show=False, **options)
    with pytest.raises(ValueError, match="returned 1 solutions for 2 boards"):
        benchmark.score(lambda boards: _solver_solutions(boards[:1]), "8x4x5", limit=2, show=False)
    # What is not one line of (x, y) clicks per board is refused by name, never a TypeError.
    for returned, words in [((s for s in [[], []]), None), (None, "returned NoneType, not one solution per board"),
                            ([None, None], "solution for board 0: clicks must be a sequence of"),
                            # one click given as a bare pair, not a line of one: never read as two flat actions
                            ([(0, 0), (0, 0)], r"solution for board 0: click 0: 0 is not an \(x, y\) pair"),
                            ([[(0.0, 1.0)], []], r"click 0: \(0.0, 1.0\) is not an \(x, y\) pair of ints"),
                            ([[(-1, 0)], []], "outside the 8x4 board")]:
        if words is None:  # a generator of lines is a sequence of lines: two unfinished boards
            assert benchmark.score(lambda boards: returned, "8x4x5", limit=2, show=False).cleared == 0.0
            continue
        with pytest.raises(ValueError, match=words):
            benchmark.score(lambda boards, returned=returned: returned, "8x4x5", limit=2, show=False)


def test_a_set_of_former_boards_is_scored_under_the_former_rules():
    """A ``BoardSet`` of other fewest-clicks rules is played and replayed under them: a
    Former set scored under the dust rules read the dust game's lengths against Former's
    optima (a beam's lines even fell below its proven bounds)."""
    size = jaxdust.GameConfig(6, 5, 4, "former")
    boards = np.asarray(jax.vmap(lambda k: jaxdust.random_board(k, size))(jax.random.split(jax.random.key(5), 4)))
    optima = np.array([jaxdust.solve(board, rules="former").length for board in boards])
    former = benchmark.BoardSet("former 6x5x4", boards, optima, optima, rules="former")
    largest = registry.run_agent("largest", boards, key=jax.random.key(0), max_clicks=30, rules="former")["clicks"]
    assert benchmark.score("largest", former, show=False).mean_clicks == pytest.approx(largest.mean())
    beam = benchmark.score("beam:64", former, show=False)  # at or above Former's optima: no refusal
    assert beam.cleared == 1.0 and beam.gap >= 0

    def former_lines(boards):
        return [jaxdust.solve(board, rules="former").clicks for board in boards]

    exact = benchmark.score(former_lines, former, show=False)  # replayed under former: clears, at the optimum
    assert (exact.cleared, exact.optimal, exact.gap) == (1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="fewest clicks, under the dust, former rules, not 'samegame'"):
        benchmark.BoardSet("points", boards, optima, optima, rules="samegame")


def test_a_board_set_checks_its_lengths_when_made_not_after_the_agent_played():
    """A set made in Python with lists of lengths scores like one of arrays (a list failed
    in ``score`` with a TypeError once the agent had played); lengths that are not one
    whole click count per board, a bound above the best, boards not [N, W, H], colours
    past 9 or boards the rules never make are refused where the set is made."""
    loaded = benchmark.load_set("6x6x5", limit=3)
    from_lists = benchmark.BoardSet("lists", loaded.boards.tolist(), [int(b) for b in loaded.best],
                                    [float(b) for b in loaded.lower])
    assert from_lists.lower.dtype.kind == "i" and from_lists.boards.shape == loaded.boards.shape
    scored = [(row.mean_clicks, row.optimal, row.gap, row.cleared)
              for row in (benchmark.score("largest", board_set, show=False) for board_set in (from_lists, loaded))]
    assert scored[0] == scored[1]
    best, lower = list(loaded.best), list(loaded.lower)
    for boards, best_, lower_, words in (
            (loaded.boards, best[:2], lower, "best: one click count .* per board, 3 in all; got int64 \\(2,\\)"),
            (loaded.boards, best, [0.5] + lower[1:], "lower: one click count"),
            (loaded.boards, best, [-1] + lower[1:], "lower: one click count"),
            (loaded.boards, best, [best[0] + 1] + lower[1:], "lower bound above its fewest clicks found, on board 0"),
            (loaded.boards[0], best[:1], lower[:1], "boards: integers \\[N, W, H\\]"),
            (loaded.boards.astype(float), best, lower, "boards: integers"),
            (np.where(np.arange(3)[:, None, None] == 1, 12, loaded.boards), best, lower,
             "a board of the benchmark set holds 12; colours are 0 \\(empty\\) to 9"),
            (loaded.boards * (np.arange(6)[None, None, :] != 0), best, lower,
             "a benchmark set: board 0: cell \\(0, 1\\) floats above an empty cell"),
            # taken, and every agent's row then read 0% optimal, or raised as if the solver were wrong
            (loaded.boards, [0, 0, 0], [0, 0, 0], "0 clicks on a board with cells, on board 0"),
            (loaded.boards, [999] * 3, [999] * 3, "more clicks than its cells, on board 0")):
        with pytest.raises(ValueError, match=words):
            benchmark.BoardSet("bad", boards, best_, lower_)
    empty = benchmark.BoardSet("empty", np.zeros((1, 6, 6), np.int64), [0], [0])  # nothing to click
    assert empty.boards.dtype == np.int8  # as score's docstring hands them to a callable: an int64 set gave int64


def test_a_solver_cannot_change_the_boards_it_is_scored_on():
    """The solver gets a copy; its lines are replayed on the set's own boards, which are
    read-only. Rewriting its input into easier boards, then solving those, scores as the
    lines it returned on the real boards: not cleared."""
    board_set = benchmark.load_set("8x6x5", limit=4)
    original = board_set.boards.copy()

    def rewrites_its_boards(boards):
        _, width, height = boards.shape
        order = [(x, y) for pair in ((3, 4), (2, 5)) for x in pair for y in range(height)]
        lines = []
        for index in range(len(boards)):
            cells = order[: int(board_set.best[index])]  # as many lone cells as the optimum
            boards[index] = 0
            for x, y in cells:
                boards[index, x, y] = 1 + (x + 2 * y) % 5  # no two neighbours alike
            lines.append(cells[::-1])  # the last placed first: nothing moves
        return lines

    scored = benchmark.score(rewrites_its_boards, board_set, show=False)
    assert scored.cleared == 0.0 and scored.optimal == 0.0
    np.testing.assert_array_equal(board_set.boards, original)
    with pytest.raises(ValueError, match="read-only"):
        board_set.boards[0, 0, 0] = 0


def test_named_agents_score_as_evaluate_plays_them(capsys):
    board_set = benchmark.load_set("6x6x5", limit=12)
    scored = benchmark.score("largest", board_set)
    played = registry.run_agent("largest", board_set.boards, key=jax.random.key(0), max_clicks=36)
    assert scored.mean_clicks == pytest.approx(played["clicks"].mean())
    assert scored.gap == pytest.approx((played["clicks"] - board_set.best).mean())
    assert scored.optimal == pytest.approx(np.mean(played["clicks"] == board_set.best))
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "6x6x5 v1, 12 boards" and printed[1] == benchmark.Row.HEADER.splitlines()[0]
    assert printed[-1] == scored.markdown() and printed[-1].startswith("| largest | ")


def test_a_length_below_a_proven_optimum_is_refused():
    board_set = benchmark.load_set("6x6x5", limit=3)
    lengths = board_set.best - np.array([0, 1, 1])
    with pytest.raises(ValueError, match=f"liar: board 1 cleared in {lengths[1]} clicks, below the set's proven lower "
                                         f"bound {board_set.lower[1]}: the set's bound, or the agent's line, is wrong"):
        benchmark.row("liar", board_set, lengths, np.ones(3, bool), 1.0)


def test_cpu_beam_agent_returns_replayable_solutions_no_shorter_than_the_optimum():
    board_set = benchmark.load_set("6x6x5", limit=8)
    found = registry.run_agent("cpu-beam:50", board_set.boards, key=jax.random.key(0), max_clicks=36, solutions=8)
    for board, solution, clicks in zip(board_set.boards, found["solutions"], found["clicks"]):
        final, count = jaxdust.replay(board, solution)
        assert bool(jaxdust.is_done(final)) and count == clicks
    assert (found["clicks"] >= board_set.best).all()


def test_published_sets_are_never_rewritten(tmp_path, monkeypatch):
    monkeypatch.setattr(board_io, "BOARDS_DIR", str(tmp_path))
    source = np.stack([np.asarray(r.board) for r in
                       jaxdust.read_board_file(os.path.join(ROOT, "data/boards/optimal_8x4x5.txt"), limit=3)])
    path = benchmark.write_set("8x4x5", source, [9, 9, 10], [9, 8, 10], "test")
    again = benchmark.load_set("8x4x5")
    np.testing.assert_array_equal(again.boards, source)
    assert again.proven.tolist() == [True, False, True]
    with pytest.raises(ValueError, match="is published; make version 2"):
        benchmark.write_set("8x4x5", source, [9, 9, 10], [9, 9, 10], "test")
    with pytest.raises(ValueError, match="lower bound above"):
        benchmark.write_set("8x4x5", source, [9, 9, 10], [9, 10, 10], "test", version=2)
    # A name that says another size was published and read back under it.
    with pytest.raises(ValueError, match="the set's name '6x6x5' says 6x6 boards of at most 5 colours; these are 8x4"):
        benchmark.write_set("6x6x5", source, [9, 9, 10], [9, 9, 10], "test", version=3)
    assert os.path.exists(path) and not os.path.exists(benchmark.set_path("8x4x5", 2))


def test_a_time_per_board_keeps_two_digits():
    """The fastest agents (largest cluster first: ~0.1 ms a board) printed "0 ms"."""
    assert [benchmark.timing(s) for s in (0.00002, 0.0002, 0.004, 0.05, 2.0)] == [
        "0.02 ms", "0.20 ms", "4.0 ms", "50 ms", "2.0 s"]


@pytest.mark.slow
def test_leaderboard_script_resumes_from_its_rows(tmp_path):
    command = [sys.executable, os.path.join(ROOT, "benchmarks/leaderboard.py"), "--set", "8x4x5", "--limit", "5",
               "--entries", "largest,cpu-beam:20", "--jobs", "1", "--out", str(tmp_path / "board.json")]
    first = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    report = json.loads((tmp_path / "board.json").read_text())
    assert [row["agent"] for row in report["rows"]] == ["numba beam, tuned heuristic + lookahead, width 20",
                                                        "largest cluster first"]  # fewest clicks first
    assert report["rows"][0]["mean_clicks"] <= report["rows"][1]["mean_clicks"]
    assert report["played"] == {"largest cluster first": {"entry": "largest"},
                                "numba beam, tuned heuristic + lookahead, width 20": {"entry": "cpu-beam:20"}}
    cached = tmp_path / "leaderboard/8x4x5-v1-5-seed0/largest.json"  # beside --out
    row = json.loads(cached.read_text())
    cached.write_text(json.dumps({**row, "mean_clicks": 99.0}))  # a kept row is not measured again
    second = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "| largest cluster first | 99.000 +- " in second.stdout
    # The rows an earlier run measured are named as such (their times are that run's).
    assert "kept from an earlier run of this version" in second.stdout and "--fresh" in second.stdout
    assert json.loads((tmp_path / "board.json").read_text())["kept"] == [
        "largest cluster first", "numba beam, tuned heuristic + lookahead, width 20"]
    other_seed = subprocess.run(command + ["--seed", "1"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "| largest cluster first | 99.000 +- " not in other_seed.stdout  # kept per seed
    assert "| largest cluster first |" in first.stdout
    cached.write_text(json.dumps({**row, "mean_clicks": 99.0, "jaxdust": "0.1.0"}))  # kept by another version
    other_version = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "| largest cluster first | 99.000 +- " not in other_version.stdout
    again = json.loads(cached.read_text())  # measured again, and kept as this version's
    assert (again["mean_clicks"], again["jaxdust"]) == (row["mean_clicks"], jaxdust.__version__)


@pytest.mark.parametrize("argv, words", [
    (["--entries", "largest,telepathy"], "--entries/--runs: unknown agent 'telepathy'"),
    (["--runs", "avi"], "--runs: 'avi' is not LABEL=RUN_DIR"),
    (["--runs", "avi=no/such/run"], "no/such/run"),
    (["--limit", "0"], "--limit"),
    (["--env", "SameGame-9x9x9-v7"], "--env: unknown environment 'SameGame-9x9x9-v7'"),
    (["--env", "SameGame-15x15x5-v0", "--entries", "dfs"], "agent 'dfs' plays the dust rules, not 'samegame'"),
    (["--env", "Clickomania-10x10x4-v0", "--boards", "0"], "--boards"),
    (["--boards", "5"], "--boards: only with --env"),  # not silently the whole set
    (["--env", "Former-7x9x4-v0", "--boards", "{former run}/config.json"],
     "a count of random boards here (the board files ranked on are the --set ones; evaluate.py --boards FILE"),
    (["--env", "Former-7x9x4-v0", "--limit", "3"], "--limit: only with --set"),
    (["--runs", "avi=a,avi=b"], "--runs: the label 'avi' is given twice"),
    (["--runs", "avi=a, avi =b"], "--runs: the label 'avi' is given twice"),  # spaces are not part of a label
    (["--entries", "random,beam:300000000"], "--entries/--runs: beam:300000000: 1 boards x width"),
    (["--runs", "avi={former run}"], "{former run} was trained on 7x9 boards; these are 8x4"),  # before any row
    (["--env", "Former-7x9x4-v0", "--entries", "largest,mcts:{former dqn run}:8"], "is a run of dqn, which has no policy"),
])
def test_leaderboard_refuses_bad_entries_in_one_line(argv, words, tmp_path, monkeypatch, capsys):
    """Refused before any agent plays: nothing is written."""
    from jaxdust.core import configs
    from jaxdust.learn import avi, dqn

    former = jaxdust.GameConfig(7, 9, 4, rules="former")
    for name, learner, config in (("former run", "avi", avi.AVIConfig(game=former)),
                                  ("former dqn run", "dqn", dqn.DQNConfig(game=former))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({"learner": learner, "config": configs.to_json(config)}))
        argv = [a.replace("{" + name + "}", str(tmp_path / name)) for a in argv]
        words = words.replace("{" + name + "}", str(tmp_path / name))
    monkeypatch.chdir(tmp_path)
    argv = argv if "--env" in argv else ["--set", "8x4x5", *argv]
    with pytest.raises(SystemExit) as exit_info:
        leaderboard.main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert words in err and not (tmp_path / "results").exists()


def test_a_solver_function_is_timed_with_its_lazy_work(monkeypatch):
    """A function that answers with a generator (or ``map``) does its work as the answer is
    read: the clock stopped first and timed nothing."""
    clock = [0.0]
    monkeypatch.setattr(benchmark.time, "perf_counter", lambda: clock[0])

    def one_second_a_board(boards):
        for _ in boards:
            clock[0] += 1.0
            yield iter([(0, 0)] * 0)  # a lazy line too: nothing clicked

    row = benchmark.score(one_second_a_board, "8x4x5", limit=3, show=False)
    assert row.seconds_per_board == 1.0 and row.cleared == 0.0


def test_the_solver_logs_row_is_replayed_like_every_other(tmp_path, monkeypatch, capsys):
    """``--solver-log``: the log's lines are replayed on the set's boards; a log that claims
    lengths its clicks do not make is refused, not ranked. ``--entries ''`` with a log
    ranks the solver alone."""
    from jaxdust.solver.cli import main as solve_main

    monkeypatch.chdir(tmp_path)
    board_set = benchmark.load_set("8x4x5", limit=3)
    source = tmp_path / "boards.txt"
    source.write_text("".join(board_io.board_to_text(board) + "\n" for board in board_set.boards))
    assert solve_main([str(source), "--width", "8", "--height", "4", "--jobs", "1", "--out", "log.jsonl"]) == 0
    report = leaderboard.main(["--set", "8x4x5", "--limit", "3", "--entries", "", "--solver-log", "log.jsonl"])
    (row,) = report["rows"]
    assert row["agent"] == "exact solver (proven optimal: 100.0%)"
    assert (row["mean_clicks"], row["optimal"], row["cleared"]) == (pytest.approx(board_set.best.mean()), 1.0, 1.0)
    # The table's note said the row's time included compiling: it is the log's own seconds.
    assert "the exact solver's row: --solver-log's own solve seconds" in capsys.readouterr().out

    records = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    records[1]["clicks"] = records[1]["clicks"][:1]  # still claims the optimum
    (tmp_path / "forged.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    capsys.readouterr()
    with pytest.raises(SystemExit):
        leaderboard.main(["--set", "8x4x5", "--limit", "3", "--entries", "", "--solver-log", "forged.jsonl"])
    assert "--solver-log: the solver log's line for the board of index 1" in capsys.readouterr().err
    # The same digits solved under other rules, or read at another shape, are other boards.
    for change, words in (({"rules": "former"}, "solved the board of index 2 (line 3) under rules former, not dust"),
                          ({"width": 4, "height": 8}, "solved the board of index 2 (line 3) at 4x8, not 8x4")):
        (tmp_path / "other.jsonl").write_text("".join(json.dumps(record | (change if record["line"] == 3 else {}))
                                                      + "\n" for record in records))
        with pytest.raises(SystemExit):
            leaderboard.main(["--set", "8x4x5", "--limit", "3", "--entries", "", "--solver-log", "other.jsonl"])
        assert words in capsys.readouterr().err
    (tmp_path / "short.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records[::2]))
    with pytest.raises(SystemExit):
        leaderboard.main(["--set", "8x4x5", "--limit", "3", "--entries", "", "--solver-log", "short.jsonl"])
    assert "short.jsonl lacks 1 of the 3 boards (the first at index 1, counted from 0)" in capsys.readouterr().err
    # A record's fields are checked before they are ranked: a NaN or negative time was shown
    # as "nan s" or "-1632 ms", other types ended in KeyError or TypeError.
    records = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    for change, words in (({"seconds": float("nan")}, "its seconds are not a time"),
                          ({"seconds": -5}, "its seconds are not a time"),
                          ({"seconds": "0.5"}, "its seconds are not a time"),
                          ({"optimal": "false"}, "its optimal is not true or false"),
                          ({"length": "9"}, "its length is not a whole number"),
                          ({"board": [1, 2]}, "its board is not text"), ({"clicks": None}, "its clicks"),
                          # read as another shape, a hand-edited "8" said "at 8x4, not 8x4"
                          ({"width": "8"}, "its width is not a whole number"),
                          ({"height": 4.5}, "its height is not a whole number"),
                          ({"rules": 3}, "its rules are not text")):
        (tmp_path / "edited.jsonl").write_text("".join(json.dumps(record | (change if record["line"] == 2 else {}))
                                                       + "\n" for record in records))
        with pytest.raises(SystemExit):
            leaderboard.main(["--set", "8x4x5", "--limit", "3", "--entries", "", "--solver-log", "edited.jsonl"])
        assert f"edited.jsonl:2 is not a solver result as python -m jaxdust.solver writes them ({words}" in \
            capsys.readouterr().err, change
    for field in ("seconds", "optimal"):
        (tmp_path / "edited.jsonl").write_text("".join(
            json.dumps({k: v for k, v in record.items() if k != field or record["line"] != 2}) + "\n"
            for record in records))
        with pytest.raises(SystemExit):
            leaderboard.main(["--set", "8x4x5", "--limit", "3", "--entries", "", "--solver-log", "edited.jsonl"])
        assert "edited.jsonl:2 is not a solver result" in capsys.readouterr().err, field
    with pytest.raises(SystemExit):
        leaderboard.main(["--set", "8x4x5", "--limit", "3", "--entries", ""])
    assert "nothing to rank: --entries '' needs --runs or --solver-log" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # random boards: a solver log, refused with them, is not offered
        leaderboard.main(["--env", "SameGame-15x15x5-v0", "--entries", ""])
    assert "nothing to rank: --entries '' needs --runs (see" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the set is read (and its size said) before the refusal
        leaderboard.main(["--set", "8x4x5", "--limit", "61", "--entries", ""])
    assert "--limit 61 is more than the 60 boards of the set 8x4x5 v1; all are played" in capsys.readouterr().err
    # The report written over the log it ranks would lose an hour's solving.
    log = (tmp_path / "log.jsonl").read_text()
    with pytest.raises(SystemExit):
        leaderboard.main(["--set", "8x4x5", "--limit", "3", "--entries", "", "--solver-log", "log.jsonl",
                          "--out", "./log.jsonl"])
    assert "--out ./log.jsonl is --solver-log" in capsys.readouterr().err
    assert (tmp_path / "log.jsonl").read_text() == log


@pytest.mark.slow
def test_leaderboard_ranks_an_environment_by_its_own_measure(tmp_path, monkeypatch):
    """--env: random boards of the id, each rule set's measure (points: most first; cells left:
    fewest first), the same boards and figures as evaluate's agents give, rows kept."""
    monkeypatch.chdir(tmp_path)
    report = leaderboard.main(["--env", "Clickomania-10x10x4-v0", "--boards", "3", "--entries", "random,cpu-beam:8",
                               "--jobs", "1"])
    assert report["measure"] == "cells_left" and [r["agent"] for r in report["rows"]] == ["cpu-beam:8", "random"]
    written = json.loads((tmp_path / "results/leaderboard-Clickomania-10x10x4-v0.json").read_text())  # named by id
    assert written["env"] == "Clickomania-10x10x4-v0" and written["rows"] == report["rows"]
    assert report["rows"][0]["mean"] <= report["rows"][1]["mean"]
    keys = jax.random.split(jax.random.key(0), 3)
    boards = jax.vmap(lambda k: jaxdust.random_board(k, jaxdust.GameConfig(10, 10, 4, "clickomania")))(keys)
    played = registry.run_agent("cpu-beam:8", boards, key=jax.random.key(0), max_clicks=100, rules="clickomania")
    assert report["rows"][0]["mean"] == pytest.approx(float(np.mean(played["cells_left"])))

    report = leaderboard.main(["--env", "SameGame-15x15x5-v0", "--boards", "2", "--entries", "random,largest,nmcs:1",
                               "--jobs", "1", "--out", "samegame.json"])
    means = [r["mean"] for r in report["rows"]]
    assert report["measure"] == "points" and means == sorted(means, reverse=True) and means[0] > 0
    kept = tmp_path / "leaderboard/size-samegame-15x15x5-2-seed0/largest.json"  # beside --out, by rules and size
    kept.write_text(json.dumps({**json.loads(kept.read_text()), "mean": 12345.0}))
    again = leaderboard.main(["--env", "SameGame-15x15x5-v0", "--boards", "2", "--entries", "random, largest, nmcs:1",
                              "--jobs", "1", "--out", "samegame.json"])  # spaces after the commas: the same rows
    assert again["rows"][0] == {**report["rows"][[r["agent"] for r in report["rows"]].index("largest")], "mean": 12345.0}
    assert again["kept"] == ["random", "largest", "nmcs:1"] and report["kept"] == []
    assert (again["seed"], again["jaxdust"]) == (0, jaxdust.__version__)


def test_leaderboard_ranks_random_boards_of_any_size_and_rules(tmp_path, monkeypatch, capsys):
    """--size RULES:WxHxC: random boards of a size no id registers, under those rules (the
    solver's proven lines lead), in files apart from the --set of the same name."""
    monkeypatch.chdir(tmp_path)
    report = leaderboard.main(["--size", "former:5x4x3", "--boards", "3", "--entries", "largest,solver:5",
                               "--jobs", "1"])
    assert (report["env"], report["size"], report["measure"]) == ("former:5x4x3", "former:5x4x3", "clicks")
    assert [r["agent"] for r in report["rows"]][0] == "solver:5"
    boards = jax.vmap(lambda k: jaxdust.random_board(k, jaxdust.GameConfig(5, 4, 3, "former")))(
        jax.random.split(jax.random.key(0), 3))
    optima = [jaxdust.solve(board, rules="former").length for board in np.asarray(boards)]
    assert report["rows"][0]["mean"] == pytest.approx(np.mean(optima))
    assert (tmp_path / "results" / "leaderboard-size-former-5x4x3.json").exists()
    assert (tmp_path / "results" / "leaderboard" / "size-former-5x4x3-3-seed0").is_dir()
    with pytest.raises(SystemExit):
        leaderboard.main(["--size", "former:5x4x3", "--limit", "2"])
    assert "--limit: only with --set" in capsys.readouterr().err


def test_two_leaderboards_do_not_measure_the_same_rows_at_once(tmp_path, monkeypatch, capsys):
    """Two calls on the same boards (a set's or a size's) measured every row twice at once,
    each at about half speed, and kept whichever contended time ended last for later calls
    to reuse: the second is refused while the first holds the rows' folder."""
    from jaxdust.core import files

    monkeypatch.chdir(tmp_path)
    rows = tmp_path / "results" / "leaderboard"
    for argv, folder in ((["--size", "4x3x3", "--boards", "2"], rows / "size-4x3x3-2-seed0"),
                         (["--set", "8x4x5", "--limit", "2"], rows / "8x4x5-v1-2-seed0")):
        holder = files.lock_directory(folder)  # as the same call in another terminal holds it
        try:
            with pytest.raises(SystemExit) as exit_info:
                leaderboard.main([*argv, "--entries", "largest", "--out", "results/other.json"])
            assert exit_info.value.code == 2
            said = capsys.readouterr().err
            assert "another leaderboard is measuring these boards' rows" in said and str(folder.relative_to(tmp_path)) in said, said
            assert os.listdir(folder) == [".lock"] and not (tmp_path / "results" / "other.json").exists()
        finally:
            holder.release()
        report = leaderboard.main([*argv, "--entries", "largest", "--out", "results/mine.json"])
        assert len(report["rows"]) == 1 and not files.held_by_another(folder)
    # Rows kept in a folder that cannot be written (a copy kept read-only) are still reused.
    def unwritable(directory, timeout=0):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files, "lock_directory", unwritable)
    again = leaderboard.main(["--size", "4x3x3", "--boards", "2", "--entries", "largest", "--out", "results/mine.json"])
    assert again["kept"] == ["largest"], again["kept"]
    assert "which cannot be written (Permission denied): its rows are reused" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # no folder to read rows from: nothing reused, nothing kept
        leaderboard.main(["--size", "4x3x3", "--boards", "3", "--entries", "largest", "--out", "results/mine.json"])
    assert "size-4x3x3-3-seed0, which cannot be made (Permission denied)" in capsys.readouterr().err


def test_leaderboard_size_of_points_rules_ranks_its_defaults_by_points(tmp_path, monkeypatch):
    """--size samegame:5x5x3 with no --entries: the points rules' default entries, each
    played under SameGame's rules and ranked by points, highest first (not by clicks)."""
    monkeypatch.chdir(tmp_path)
    played = []

    def fake_run_agent(entry, boards, key, max_clicks, jobs, rules, progress=None):
        assert callable(progress)  # a bar a row, as --set's rows have: minutes of nothing on the screen before
        played.append((entry, rules, boards.shape))
        count = len(boards)
        return {"points": np.full(count, 10.0 * len(played)), "clicks": np.full(count, 5 - len(played)),
                "cells_left": np.full(count, 3), "cleared": np.zeros(count, bool)}

    monkeypatch.setattr(leaderboard.registry, "run_agent", fake_run_agent)
    report = leaderboard.main(["--size", "samegame:5x5x3", "--boards", "2"])
    assert played == [(entry, "samegame", (2, 5, 5)) for entry in leaderboard.FAMILY_ENTRIES["points"].split(",")]
    assert report["measure"] == "points"
    assert [row["mean"] for row in report["rows"]] == [50.0, 40.0, 30.0, 20.0, 10.0]  # highest first


def _entries_played(monkeypatch) -> list[str]:
    """The entries the leaderboard plays from here on, in order (none is played: each
    scores no point, one click and one cell left on every board)."""
    played = []

    def fake_run_agent(entry, boards, key, max_clicks, jobs, rules, progress=None):
        played.append(entry)
        count = len(boards)
        return {"points": np.zeros(count), "clicks": np.ones(count), "cells_left": np.ones(count),
                "cleared": np.zeros(count, bool)}

    monkeypatch.setattr(leaderboard.registry, "run_agent", fake_run_agent)
    return played


def test_leaderboard_defaults_leave_out_the_searches_a_size_is_too_large_for(tmp_path, monkeypatch):
    """A points size past the JAX beam's hash tables (4096 cells) drops beam:16 from the
    defaults instead of playing the agents before it and failing on it; 64 x 64 keeps it,
    and the numba searches of the points rules play any size."""
    monkeypatch.chdir(tmp_path)
    played = _entries_played(monkeypatch)
    leaderboard.main(["--size", "clickomania:65x64x2", "--boards", "1"])
    assert played == ["random", "largest", "cpu-beam:256", "nmcs:1"]
    played.clear()
    leaderboard.main(["--size", "clickomania:64x64x2", "--boards", "1"])
    assert played == ["random", "largest", "beam:16", "cpu-beam:256", "nmcs:1"]


def test_leaderboard_defaults_leave_out_a_search_that_fits_one_process_but_not_jobs(tmp_path, monkeypatch, capsys):
    """The defaults were checked at one board and one process, then every entry at --jobs:
    where one numba beam fits the memory but --jobs of them do not, the command with no
    --entries was refused, naming cpu-beam:256, which nobody asked for."""
    from jaxdust.solver import points as points_search

    monkeypatch.chdir(tmp_path)
    played = _entries_played(monkeypatch)
    one_beam = points_search.beam_bytes(256, 15 * 15)
    monkeypatch.setattr(leaderboard.registry.machine, "memory_bytes", lambda: int(1.5 * one_beam))
    leaderboard.main(["--env", "SameGame-15x15x5-v0", "--boards", "2", "--jobs", "2"])
    assert "cpu-beam:256" not in played and played[:2] == ["random", "largest"]
    played.clear()
    leaderboard.main(["--env", "SameGame-15x15x5-v0", "--boards", "2", "--jobs", "1"])
    assert "cpu-beam:256" in played
    # A rows folder that cannot be made is refused before any play (it failed in a
    # traceback once the first agent had played).
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "leaderboard").write_text("")  # where the rows folder beside the report goes
    played.clear()
    with pytest.raises(SystemExit):
        leaderboard.main(["--env", "SameGame-15x15x5-v0", "--boards", "2", "--entries", "largest",
                          "--out", str(tmp_path / "ro" / "report.json")])
    assert played == [] and "which cannot be made" in capsys.readouterr().err


def test_an_id_and_size_of_its_rules_and_size_share_their_kept_rows(tmp_path, monkeypatch):
    """--env Dust-6x6x5-v0 and --size 6x6x5 play the same boards: the second reuses the
    first's rows under its own name; another size or seed is measured."""
    monkeypatch.chdir(tmp_path)
    played = []

    def fake_run_agent(entry, boards, key, max_clicks, jobs, rules, progress=None):
        played.append((entry, np.asarray(boards).tobytes()))
        count = len(boards)
        return {"points": np.zeros(count), "clicks": np.full(count, float(len(played))),
                "cells_left": np.zeros(count), "cleared": np.ones(count, bool)}

    monkeypatch.setattr(leaderboard.registry, "run_agent", fake_run_agent)
    first = leaderboard.main(["--env", "Dust-6x6x5-v0", "--boards", "2", "--entries", "random,largest"])
    again = leaderboard.main(["--size", "6x6x5", "--boards", "2", "--entries", "largest,random"])
    assert len(played) == 2 and again["kept"] == ["largest", "random"] and first["kept"] == []
    assert {row["env"] for row in again["rows"]} == {"6x6x5"} and {row["env"] for row in first["rows"]} == {
        "Dust-6x6x5-v0"}
    assert [row["mean"] for row in again["rows"]] == [row["mean"] for row in first["rows"]]
    assert (tmp_path / "results" / "leaderboard-size-6x6x5.json").exists()
    leaderboard.main(["--size", "6x6x5", "--boards", "2", "--entries", "random", "--seed", "1"])
    leaderboard.main(["--size", "former:6x6x5", "--boards", "2", "--entries", "random"])
    assert len(played) == 4 and played[2][1] != played[0][1] == played[1][1]  # rows of other rules: measured
    # A report is replaced by the next; any other file given as --out is refused before the play,
    # and before the boards are dealt (a large size's take minutes).
    dealt = []
    monkeypatch.setattr(leaderboard.game, "random_boards", lambda *args: dealt.append(args))
    for other in ("12345678\n", '{"agents": {}}', ""):
        (tmp_path / "boards.txt").write_text(other)
        with pytest.raises(SystemExit):
            leaderboard.main(["--size", "6x6x5", "--boards", "2", "--entries", "random", "--out", "boards.txt"])
        assert (tmp_path / "boards.txt").read_text() == other and len(played) == 4 and dealt == []
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(leaderboard.registry, "run_agent", fake_run_agent)
    leaderboard.main(["--size", "6x6x5", "--boards", "2", "--entries", "random", "--out",
                      "results/leaderboard-Dust-6x6x5-v0.json"])


def test_another_spelling_of_an_entry_reuses_its_kept_row_under_the_new_name(tmp_path, monkeypatch):
    """Rows were kept by the entry's text: ``beam:8`` after ``beam:08`` (or ``beam`` after
    ``beam:200``) played the boards again. One agent now keeps one row, shown as spelt."""
    monkeypatch.chdir(tmp_path)
    played = []

    def fake_run_agent(entry, boards, key, max_clicks, jobs, rules, progress=None):
        played.append(entry)
        count = len(boards)
        return {"points": np.zeros(count), "clicks": np.full(count, 7.0),
                "cells_left": np.zeros(count), "cleared": np.ones(count, bool)}

    monkeypatch.setattr(leaderboard.registry, "run_agent", fake_run_agent)
    leaderboard.main(["--size", "6x6x5", "--boards", "2", "--entries", "beam:08,beam"])
    again = leaderboard.main(["--size", "6x6x5", "--boards", "2", "--entries", "beam:8,beam:200,beam:9"])
    assert played == ["beam:08", "beam", "beam:9"]
    assert again["kept"] == ["beam:8", "beam:200"]
    assert sorted(row["agent"] for row in again["rows"]) == ["beam:200", "beam:8", "beam:9"]
    assert registry.agent_identity("largest") == "largest"  # its row's file: leaderboard/.../largest.json


def test_a_learners_kept_row_is_measured_again_once_its_run_trains_again(tmp_path, capsys):
    """A row measured on a run keeps the run's fingerprint (its config and checkpoints'
    checksums): the same run directory trained again, or further, no longer matches."""
    run = tmp_path / "run"
    assert runs.fingerprint(str(run)) == ""
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"learner": "avi", "config": configs.to_json(avi.AVIConfig())}))
    for folder, step in (("best", "25"), ("checkpoints", "30")):
        (run / folder / step).mkdir(parents=True)
        (run / folder / step / "checksums.json").write_text('{"state/a": "1"}')
    first = runs.fingerprint(str(run))
    assert first and runs.fingerprint(str(run)) == first
    (run / "checkpoints" / "30" / "unrelated.txt").write_text("x")  # only checksums and step names count
    assert runs.fingerprint(str(run)) == first
    (run / "checkpoints" / "30" / "checksums.json").write_text('{"state/a": "2"}')  # trained again
    retrained = runs.fingerprint(str(run))
    (run / "checkpoints" / "35").mkdir()  # trained further
    (run / "checkpoints" / "35" / "checksums.json").write_text('{"state/a": "3"}')
    assert len({first, retrained, runs.fingerprint(str(run))}) == 3

    row = benchmark.Row("avi, greedy", "8x4x5 v1", 3, 10.0, 0.5, 0.4, 1.0, 0.01, 0.2, 0.1)
    path = str(tmp_path / "row.json")
    leaderboard._keep_row(path, row, first)
    assert leaderboard._kept_row(path, benchmark.Row, first) == row
    assert leaderboard._kept_row(path, benchmark.Row, retrained) is None
    assert leaderboard._kept_row(path, benchmark.Row) is None  # a run's row is no other agent's
    leaderboard._keep_row(path, row)
    assert leaderboard._kept_row(path, benchmark.Row) == row
    one_board = leaderboard.FamilyRow("largest", "Dust-4x3x3-v0", 1, "clicks", 5.0, 1.0, 0.01)  # se: NaN
    leaderboard._keep_row(path, one_board)  # kept as null (strict JSON), read back as NaN
    assert json.loads(open(path).read())["se"] is None
    kept = leaderboard._kept_row(path, leaderboard.FamilyRow)
    assert kept is not None and math.isnan(kept.se) and kept.markdown() == one_board.markdown()
    # A row damaged by hand (rows are written atomically) is measured again, with a warning;
    # so is one whose figures are not numbers (shown with number formats: a string stopped
    # the command after the other rows were played).
    kept = {**dataclasses.asdict(row), "jaxdust": jaxdust.__version__, "run": None}
    for damaged in ('{"agent": "lar', "[1, 2]", '{"agent": "largest"}', json.dumps(kept | {"mean_clicks": "10.0"}),
                    json.dumps(kept | {"boards": 3.5}), json.dumps(kept | {"cleared": True}),
                    json.dumps(kept | {"agent": 7}), json.dumps(kept | {"mean_clicks": None}),
                    json.dumps(kept | {"cleared": None}), json.dumps(kept | {"seconds_per_board": float("inf")})):
        with open(path, "w") as handle:
            handle.write(damaged)
        assert leaderboard._kept_row(path, benchmark.Row) is None, damaged
        warned = f"warning: kept row {path} cannot be read" in capsys.readouterr().err
        assert warned == (damaged != '{"agent": "largest"}'), damaged  # that one has no version: another's
    # A null where a figure may be undefined (no proven board: optimal and gap) is read as nan.
    with open(path, "w") as handle:
        handle.write(json.dumps(kept | {"optimal": None, "gap": None}))
    undefined = leaderboard._kept_row(path, benchmark.Row)
    assert undefined is not None and math.isnan(undefined.optimal) and math.isnan(undefined.gap)
    # A folder in a row's place: the row is measured and shown, not kept; it stopped the
    # command in a traceback once the agent had played.
    os.remove(path)
    os.mkdir(path)
    assert leaderboard._kept_row(path, benchmark.Row) is None
    leaderboard._keep_row(path, row)
    err = capsys.readouterr().err
    assert f"warning: kept row {path} cannot be read" in err
    assert f"warning: the row of avi, greedy cannot be kept in {path} (" in err and os.path.isdir(path)
    # Every entry that plays the run carries it, from --runs or named in --entries.
    entries = [f"policy:{run}", f"value:{run}:8", "largest", f"mcts:{run}:64", f"value:{run}"]
    assert leaderboard.run_sources(entries) == {entry: runs.fingerprint(str(run)) for entry in entries if entry != "largest"}


def test_reports_name_the_cpu_model_the_kernel_reports():
    from jaxdust.core import machine

    name = machine.cpu_name()
    assert name and name == name.strip()
    if os.path.exists("/proc/cpuinfo"):  # Linux: the model, not just the architecture
        assert f": {name}\n" in open("/proc/cpuinfo").read()
    cores = machine.cpu_cores()
    assert machine.cpu_description() == f"{name}, {cores} core{'s' if cores > 1 else ''}"


def _fake_cgroups(tmp_path, monkeypatch, membership: str, files: dict) -> None:
    from jaxdust.core import machine

    for name, text in files.items():
        (tmp_path / "cg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "cg" / name).write_text(text)
    (tmp_path / "membership").write_text(membership)
    monkeypatch.setattr(machine, "CGROUP_ROOT", str(tmp_path / "cg"))
    monkeypatch.setattr(machine, "MEMBERSHIP", str(tmp_path / "membership"))


def test_cores_and_memory_follow_a_containers_cgroup_limits(tmp_path, monkeypatch):
    """A container's CPU quota and memory limit are not in the affinity or the physical
    memory: a 2-CPU container on a 64-core host defaulted to 64 worker processes."""
    from jaxdust.core import machine

    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    # cgroup v2 (Docker --cpus 0.5 --memory 1g): the limits in the container's own cgroup
    _fake_cgroups(tmp_path / "v2", monkeypatch, "0::/\n", {
        "cgroup.controllers": "cpu memory\n", "cpu.max": "50000 100000\n", "memory.max": f"{2**30}\n"})
    assert machine.cgroup_cpu_limit() == 0.5 and machine.cpu_cores() == 1  # rounded up, never 0
    assert machine.cgroup_memory_limit() == 2**30 and machine.memory_bytes() == min(physical, 2**30)
    # v2 under systemd: the smallest limit on the way up holds; "max" is none
    _fake_cgroups(tmp_path / "nested", monkeypatch, "0::/a/b\n", {
        "cgroup.controllers": "", "a/cpu.max": "150000 100000\n", "a/b/cpu.max": "max 100000\n",
        "a/b/memory.max": "max\n"})
    assert machine.cgroup_cpu_limit() == 1.5 and machine.cpu_cores() == min(affinity, 2)
    assert machine.cgroup_memory_limit() is None and machine.memory_bytes() == physical
    # v1 without a cgroup namespace: the path is the host's, the mount point the container's
    _fake_cgroups(tmp_path / "v1", monkeypatch, "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n0::/\n", {
        "cpu,cpuacct/cpu.cfs_quota_us": "300000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
        "memory/memory.limit_in_bytes": f"{3 * 2**30}\n", "unified/cgroup.procs": ""})
    assert machine.cgroup_cpu_limit() == 3.0 and machine.cgroup_memory_limit() == 3 * 2**30
    _fake_cgroups(tmp_path / "v1-none", monkeypatch, "2:cpu,cpuacct:/\n", {
        "cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"})
    assert machine.cgroup_cpu_limit() is None and machine.cpu_cores() == affinity
    monkeypatch.setattr(machine, "MEMBERSHIP", str(tmp_path / "absent"))  # no cgroups (not Linux)
    assert machine.cgroup_cpu_limit() is None and machine.cgroup_memory_limit() is None


def test_the_former_log_reports_each_boards_last_line_and_the_open_ones(tmp_path, monkeypatch):
    """``benchmarks/fewest_clicks_sets.py --former-log``: a retried board counts by its last
    line, a broken board is left out, and the open boards are listed with their bounds; a
    log of other boards is refused."""
    boards = _benchmark("fewest_clicks_sets", monkeypatch).former_boards().splitlines()

    def record(line, length, bound, nodes, seconds, board=None):
        return {"line": line, "board": board or boards[line - 1], "clicks": [], "length": length,
                "lower_bound": bound, "optimal": length == bound, "nodes": nodes, "seconds": seconds}
    records = [record(3, 14, 13, 100, 9.0), record(4, 12, 12, 10, 1.0), {"line": 5, "board": "x", "error": "bad"},
               record(6, 13, 13, 30, 3.0), record(3, 14, 14, 500, 50.0), record(7, 16, 14, 900, 99.0)]
    log = tmp_path / "former.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = subprocess.run([sys.executable, "benchmarks/fewest_clicks_sets.py", "--former-log", str(log)],
                            cwd=ROOT, capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    assert lines[0] == "3 of 200 boards proven, 1 open, 196 not tried yet."
    rows = {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]] for line in lines
            if line.startswith("| ") and not line.startswith("| clicks")}
    assert rows["12"] == ["1", "1", "1.00", "1.0", "1.0", "1.0e+01"]
    assert rows["14"] == ["1", "1", "50.00", "50.0", "50.0", "5.0e+02"]  # the retry's line, not the first
    assert rows["all"][:2] == ["3", "3"] and rows["all"][5] == "3.0e+01"
    assert lines[-1] == "Open (line: bound..best found): 7: 14..16"
    log.write_text(json.dumps(record(3, 14, 13, 100, 9.0, board="1" * 63)) + "\n")
    foreign = subprocess.run([sys.executable, "benchmarks/fewest_clicks_sets.py", "--former-log", str(log)],
                             cwd=ROOT, capture_output=True, text=True)
    assert foreign.returncode == 2 and "line 3 holds another board than the Former set's" in foreign.stderr
    log.write_text(json.dumps({**record(3, 14, 13, 100, 9.0), "rules": "dust"}) + "\n")
    dust = subprocess.run([sys.executable, "benchmarks/fewest_clicks_sets.py", "--former-log", str(log)],
                          cwd=ROOT, capture_output=True, text=True)
    assert dust.returncode == 2 and "line 3 was solved under rules dust, not former" in dust.stderr
    assert board_io.declared_rules(boards) == "former"  # the solver reads the set's file under its rules
    both = subprocess.run([sys.executable, "benchmarks/fewest_clicks_sets.py", "--former-log", str(log),
                           "--former-boards", str(tmp_path / "boards.txt")], cwd=ROOT, capture_output=True, text=True)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr  # one job a call, not one of two
    log.write_text(json.dumps(record(3, 14, 13, 100, 9.0)) + "\n" + '{"a": 1}\n')  # JSON lines, of something else
    other = subprocess.run([sys.executable, "benchmarks/fewest_clicks_sets.py", "--former-log", str(log)],
                           cwd=ROOT, capture_output=True, text=True)  # was a KeyError's traceback
    assert other.returncode == 2 and f"line 2 of {log} is not a result of python -m jaxdust.solver" in other.stderr
    log.write_text(json.dumps({k: v for k, v in record(3, 14, 14, 100, 9.0).items() if k != "seconds"}) + "\n")
    partial = subprocess.run([sys.executable, "benchmarks/fewest_clicks_sets.py", "--former-log", str(log)],
                             cwd=ROOT, capture_output=True, text=True)  # the table reads every field
    assert partial.returncode == 2 and "line 1 of" in partial.stderr and "Traceback" not in partial.stderr


def test_the_committed_former_proofs_are_of_the_set_and_their_lines_clear_their_boards(monkeypatch):
    """``data/proofs/former-200.jsonl``, the Former proof pass's log kept in the repository
    (docs/research-log.md): each board is the set's board at its line, its clicks clear it under the former
    rules in ``length`` clicks, and a board marked proven has its bound at its length."""
    expected = _benchmark("fewest_clicks_sets", monkeypatch).former_boards().splitlines()
    with open(os.path.join(ROOT, "data", "proofs", "former-200.jsonl")) as handle:
        records = [json.loads(line) for line in handle]
    assert records and all("error" not in record for record in records)
    for record in records:
        assert record["board"] == expected[record["line"] - 1], record["line"]
        board = board_io.parse_board(record["board"], width=7, height=9, rules="former")
        final, clicks = board_io.replay(board, record["clicks"], rules="former")
        assert not np.asarray(final).any() and clicks == record["length"], record["line"]
        assert record["lower_bound"] <= record["length"]
        assert record["optimal"] == (record["lower_bound"] == record["length"]), record["line"]


@pytest.mark.slow
def test_compile_profile_counts_compiles_in_every_process_of_a_command(tmp_path):
    """``benchmarks/compile_profile.py``: a child that clicks twice (the jitted click compiles
    once) and starts a grandchild that labels a board; both processes' events are counted,
    by program and by script (the child's too, though it ends without Python's shutdown, as
    the commands end on Ctrl-C), and the log can be summarised again alone."""
    child = tmp_path / "child.py"
    child.write_text(
        "import subprocess, sys\nimport jax, jaxdust\n"
        "board = jaxdust.random_board(jax.random.key(0))\n"
        "jaxdust.click(board, 1, 1)\njaxdust.click(board, 2, 3)\n"
        "subprocess.run([sys.executable, '-c', 'import jax, jaxdust; "
        "jaxdust.cluster_labels(jaxdust.random_board(jax.random.key(1)))'], check=True)\n"
        "import os\nos._exit(0)\n")
    log = tmp_path / "events.tsv"
    command = [sys.executable, "benchmarks/compile_profile.py", "--log", str(log), "--", sys.executable, str(child)]
    outside_pytest = {name: value for name, value in os.environ.items() if name != "PYTEST_CURRENT_TEST"}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=outside_pytest)
    assert result.returncode == 0, result.stderr[-2000:]

    def rows(output, first_header):
        lines = output.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith(first_header)) + 2
        table = {}
        for line in lines[start:]:
            if not line.startswith("| "):
                break
            cells = [cell.strip() for cell in line.split("|")[1:-1]]
            table[cells[0]] = cells[1:]
        return table

    programs = rows(result.stdout, "| program |")
    assert programs["jit(click)"][0] == "1" and programs["jit(cluster_labels)"][0] == "1"
    scripts = rows(result.stdout, "| test (or script) |")
    assert set(scripts) == {"(child.py, outside a test)", "(-c, outside a test)"}
    assert {line.split("\t")[4] for line in log.read_text().splitlines()} == {"child.py", "-c"}
    again = subprocess.run([sys.executable, "benchmarks/compile_profile.py", "--log", str(log)], cwd=ROOT,
                           capture_output=True, text=True, check=True)
    assert rows(again.stdout, "| program |") == programs
    refused = subprocess.run([sys.executable, "benchmarks/compile_profile.py", "--top", "0", "--", "true"], cwd=ROOT,
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "--top: must be a positive integer" in refused.stderr
    missing = subprocess.run([sys.executable, "benchmarks/compile_profile.py", "--", "no-such-command"], cwd=ROOT,
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "command not found: no-such-command" in missing.stderr
    failing = subprocess.run([sys.executable, "benchmarks/compile_profile.py", "--", sys.executable, "-c", "exit(3)"],
                             cwd=ROOT, capture_output=True, text=True)
    assert failing.returncode == 3 and "no JAX compile events were logged" in failing.stderr


@pytest.mark.slow
def test_the_numba_benchmark_compiles_into_an_empty_cache_then_only_loads(tmp_path):
    """``benchmarks/numba_compile.py``, the source of the loading notices' seconds: the
    first process compiles (numba's cache misses), the second on the cache it left
    compiles nothing, so its time is a load's."""
    out = tmp_path / "numba.json"
    ran = subprocess.run([sys.executable, "benchmarks/numba_compile.py", "--searches", "dfs", "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-2000:]
    row = json.loads(out.read_text())["results"]["dfs"]
    assert row["compile"]["cache_misses"] > 0 and row["compile"]["cache_hits"] == 0
    assert row["load"]["cache_misses"] == 0 and row["load"]["cache_hits"] >= 1  # callees come with their caller
    assert "| dfs |" in ran.stdout


def test_compile_times_compares_two_revisions_program_by_program(tmp_path):
    """``benchmarks/compile_times.py``: each revision's first call and warm calls of a
    program, in fresh processes (both sides here are the working tree: no timing is
    asserted, only that each ratio is new over old and the lines agree). An unknown program
    is refused before any run."""
    out = tmp_path / "times.json"
    command = [sys.executable, "benchmarks/compile_times.py", "WORKTREE", "WORKTREE", "--rounds", "1",
               "--programs", "solver_key,env_4096,beam_w8_4", "--out", str(out)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    assert sorted(rows) == ["beam_w8_4", "env_4096", "solver_key"]  # the beam reads the evaluation boards
    for row in rows.values():
        for side in ("old", "new"):
            assert row[side]["first_call_cpu_s"] > 0 and row[side]["warm_ms"] > 0
        assert row["first_call_ratio"] == pytest.approx(row["new"]["first_call_cpu_s"] / row["old"]["first_call_cpu_s"])
        assert row["warm_ratio"] == pytest.approx(row["new"]["warm_ms"] / row["old"]["warm_ms"]) and row["same_lengths"]
    assert "| solver_key |" in result.stdout and "| env_4096 |" in result.stdout
    report = json.loads(out.read_text())  # what was compared, as commits, and where
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert report["old"]["given"] == "WORKTREE" and report["old"]["commit"] == head and "changed" in report["old"]
    assert {"cpu", "cores", "jax", "numba"} <= set(report["measured_on"])
    refused = subprocess.run([*command[:6], "--programs", "nope"], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "unknown programs" in refused.stderr


def test_compare_solvers_ends_in_one_line_where_a_revision_proves_nothing(tmp_path, monkeypatch, capsys):
    """A --time-limit too small for the proofs (or a revision whose process fails) ended in a
    RuntimeError's traceback; it ends in one line, status 1, before the rounds begin."""
    compare = _benchmark("compare_solvers", monkeypatch)
    proofs = []

    @contextlib.contextmanager
    def here(*revisions):
        yield [ROOT] * len(revisions), str(tmp_path)

    def unproven(*args):
        proofs.append(args)
        return {"optimal": False, "seconds": 0.001, "nodes": 10, "length": 13}

    monkeypatch.setattr(compare, "checked_out", here)
    monkeypatch.setattr(compare, "_prove", unproven)
    with pytest.raises(SystemExit) as exit_info:
        compare.main_command(lambda: compare.main(["WORKTREE", "HEAD", "--boards", "2", "--time-limit", "0.001",
                                                   "--out", str(tmp_path / "c.json")]))
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and "Traceback" not in err
    assert "error: WORKTREE did not prove" in err and "within --time-limit 0.001 s" in err, err
    assert len(proofs) == 1 and not (tmp_path / "c.json").exists()  # the first (compiling) proof said so
    # The rounds name the revision that failed: here the new one, at its first timed proof.
    calls = iter(range(100))
    monkeypatch.setattr(compare, "_prove", lambda *args: {"optimal": next(calls) != 3, "seconds": 0.001,
                                                          "nodes": 10, "length": 12})
    with pytest.raises(SystemExit):
        compare.main_command(lambda: compare.main(["WORKTREE", "HEAD", "--boards", "1", "--out",
                                                   str(tmp_path / "c.json")]))
    assert "error: HEAD did not prove" in capsys.readouterr().err
    # A revision's process that fails is one line too (run_json), not a traceback.
    with pytest.raises(compare.RevisionFailed, match="proof failed in"):
        compare.run_json([sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ), ROOT, "proof")


def test_compare_solvers_names_each_revision_by_its_commit_and_the_machine(tmp_path, monkeypatch, capsys):
    compare = _benchmark("compare_solvers", monkeypatch)

    @contextlib.contextmanager
    def here(*revisions):
        yield [ROOT] * len(revisions), str(tmp_path)

    monkeypatch.setattr(compare, "checked_out", here)
    monkeypatch.setattr(compare, "_prove", lambda *args: {"optimal": True, "seconds": 0.01, "nodes": 10,
                                                          "length": 12})
    report = compare.main(["WORKTREE", "HEAD~1", "--boards", "1", "--rounds", "1", "--out", str(tmp_path / "c.json")])
    commit = lambda text: subprocess.run(["git", "rev-parse", text], cwd=ROOT, capture_output=True,  # noqa: E731
                                         text=True).stdout.strip()
    assert report["old"]["given"] == "WORKTREE" and report["old"]["commit"] == commit("HEAD")
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    assert report["old"]["changed"] is bool(dirty)  # the checkout's edits beyond the commit named
    assert report["new"] == {"given": "HEAD~1", "commit": commit("HEAD~1")}
    assert {"cpu", "cores", "jax", "numba"} <= set(report["measured_on"]) and "jaxdust" not in report["measured_on"]
    assert json.loads((tmp_path / "c.json").read_text()) == report


def test_equal_times_heuristic_reference_plays_with_the_runs_seed_and_is_kept_per_machine(tmp_path, monkeypatch,
                                                                                          capsys):
    """The kept reference named no machine and was reused on any, where the variants beside
    it are measured again on another."""
    equal_time = _benchmark("equal_time", monkeypatch)
    seeds = []
    monkeypatch.setattr(equal_time, "play_set", lambda *args, seed, **kwargs: seeds.append(seed) or {})
    path, sets = str(tmp_path / "reference.json"), {"proven": (None, None), "fresh": (None, None)}
    cpu = {"cpu": "AMD EPYC", "cores": 2, "backend": "cpu", "device_kind": "cpu", "jax": "0.10.2", "jaxlib": "0.10.2",
           "numba": "0.68.0"}
    equal_time.reference_play(path, sets, {"seed": 3}, cpu)
    assert seeds == [3, 3]
    saved = json.loads(open(path).read())
    assert saved["hardware"] == cpu and saved["measured_on"] == machine.measured_on(jaxdust.__version__)
    equal_time.reference_play(path, sets, {"seed": 3}, cpu)
    assert seeds == [3, 3]  # kept
    equal_time.reference_play(path, sets, {"seed": 3}, {**cpu, "cores": 1})
    assert seeds == [3, 3, 3, 3]
    assert "does not answer this call (measured with cores 2, this process has 1" in capsys.readouterr().out
    equal_time.reference_play(path, sets, {"seed": 3}, {**cpu, "cores": 1, "jax": "0.12.0.1"})
    assert seeds == [3, 3, 3, 3, 3, 3]  # another jax plays it again


def _benchmark(name: str, monkeypatch):
    """``benchmarks/NAME.py`` as a module (its sibling imports found), run in this process."""
    import importlib

    monkeypatch.syspath_prepend(os.path.join(ROOT, "benchmarks"))
    return importlib.import_module(name)


def test_a_revision_compared_with_itself_gets_a_worktree_each(monkeypatch):
    """Both worktrees were named after the revision: ``compare_solvers.py HEAD HEAD`` (a
    noise check) ended in git's refusal to add the second."""
    compare = _benchmark("compare_solvers", monkeypatch)
    with compare.checked_out("HEAD", "HEAD") as (sources, _):
        assert len(set(sources)) == 2 and all(os.path.isfile(os.path.join(s, "pyproject.toml")) for s in sources)
    assert not any(os.path.exists(source) for source in sources)


def test_a_soak_that_killed_nothing_does_not_pass(monkeypatch):
    """--minutes shorter than the uninterrupted references ran no round, and passed."""
    soak = _benchmark("soak", monkeypatch)
    row = {"runs": 1, "kills": 2, "equal": 1, "whole_leftovers": True}
    assert soak.passed({"kills_per_run": 2, "pieces": {"solve": row}})
    assert not soak.passed({"kills_per_run": 2, "pieces": {"solve": {**row, "runs": 0, "kills": 0, "equal": 0}}})


@pytest.mark.parametrize("script, argv, words", [
    ("ranking", ["--runs", "no/such/run"], "--runs: no/such/run is not a train.py run directory"),
    ("ranking", ["--set", "no/such/set.jsonl"], "--set: no such file: no/such/set.jsonl"),
    ("ranking", ["--set", "{README}"], "--set: {README}:1 is not JSON"),
    ("ranking", ["--set", "{solver log}"], "solver.jsonl:1 is not a ranking record"),  # JSON lines, not records
    ("ranking", ["--set", "-"], "--set: must be a file, not standard input"),
    ("ranking", ["--set", "{empty}"], "--set: {empty} holds no positions"),  # was a ZeroDivisionError
    ("solver", ["--sets", "9x9"], "--sets: unknown sets 9x9; known: 6x6, 8x4, 8x6"),
    ("solver", ["--sets", "6x6,6x6"], "--sets: sets named twice: 6x6"),
    ("solver", ["--sets", "8x6", "--boards-8x6", "5000"], "--boards-8x6 5000: the evaluation set holds 1000"),
    # Flags that did nothing beside another.
    ("solver", ["--sets", "6x6", "--boards-8x6", "5"], "--boards-8x6 sizes the 8x6 set, which --sets 6x6 leaves out"),
    ("env_throughput", ["--quick", "--batch-sizes", "4"], "argument --batch-sizes: not allowed with argument --quick"),
    ("learners", ["--learners", "dqn", "--avi-flags", "--num-envs 4"], "--avi-flags: avi is not among --learners (dqn)"),
    ("learners", ["--dqn-flags", "--num-envs '4"], "argument --dqn-flags: No closing quotation"),
    # The data-set maker's own limits ended in a FieldError's traceback.
    ("dataset_maker", ["--size", "samegame:5x5x3"], "--size samegame:5x5x3: data sets are labelled for fewest clicks"),
    ("dataset_maker", ["--size", "10x10x5"], "--size 10x10x5: boards of 100 cells"),
    ("dataset_maker", ["--boards", "20000000"], "--boards must be at most 10,000,000"),
    # A bad size lost its reason ("invalid parse_size value").
    ("dataset_filter", ["--size", "8x6"], "argument --size: size must look like 8x6x5"),
    # jax.random.key(2**32) is key(0): a seed past 32 bits ran as another.
    ("cluster_pooling", ["--seed", "4294967296"], "argument --seed: must be an integer in 0..4294967295"),
    ("learners", ["--learners", "avi,telepathy"], "--learners: unknown learners telepathy; known: avi, dqn, imitation"),
    ("learners", ["--learners", "avi,dqn", "--dqn-flags", "--size 6x4x4"],  # before avi trains, not after dqn
     "--dqn-flags train on 6x4x4 boards under the dust rules; this benchmark plays 8x6x5 dust boards"),
    ("learners", ["--avi-flags", "--bogus 3"], "--avi-flags: unrecognized arguments: --bogus 3 (see train.py avi --help)"),
    ("learners", ["--dqn-flags", "--total-steps -3"], "--dqn-flags: --total-steps must be > 0, got -3"),
    # The command's own flags: argparse let the later value win, training elsewhere than it read.
    ("learners", ["--avi-flags", "--run-dir elsewhere"], "--avi-flags: --run-dir is set by this command"),
    ("learners", ["--imitation-flags=--seed=7"], "--imitation-flags: --seed is set by this command"),
    ("learners", ["--avi-flags", "--run-d x"], "--avi-flags: --run-d is set by this command"),  # an abbreviation
    ("equal_time", ["--set", "policy", "--variants", "mlp"], "argument --variants: not allowed with argument --set"),
    ("equal_time", ["--proven-boards", "500"], "--proven-boards 500: "),  # played 100, recorded 500
    ("former_solvers", [], "the following arguments are required: --tommyod"),  # not its default --boards missing
    ("equal_time", ["--variants", "mlp,huge"], "--variants: unknown variants huge; known: mlp"),
    ("compare_solvers", ["no-such-revision", "WORKTREE"], "argument old: 'no-such-revision' is not a commit"),
    ("solver_soundness", ["--sizes", "samegame:5x5x3"], "--sizes: samegame:5x5x3: the solver plays the dust, former rules"),
    ("solver_soundness", ["--sizes", "dust:9x9x4"], "--sizes: dust:9x9x4: needs 2..64 cells"),
    ("ranking", ["--runs", "{former run}"], "--runs: {former run} was trained on 7x9x4 boards under the former rules"),
    ("ranking", ["--runs", "{former run},{former run}/"], "--runs: a run given twice"),
    ("beam", ["--boards", "5000"], "--boards 5000: the evaluation set holds 1000"),
    ("beam", ["--only", "nothing"], "--only 'nothing' matches no row"),
    ("soak", ["--pieces", "solve,solve"], "--pieces: solve given twice"),
    ("compare_solvers", ["WORKTREE", "WORKTREE", "--cpu", "999"], "no core 999 here"),
])
def test_benchmarks_refuse_bad_input_in_one_line(script, argv, words, tmp_path, monkeypatch, capsys):
    """As every command line does: one line naming the flag, exit status 2, before any work
    (no traceback from deep inside, no board set built first)."""
    paths = {"README": os.path.join(ROOT, "README.md"), "solver log": str(tmp_path.parent / "solver.jsonl"),
             "former run": str(tmp_path.parent / "former-run"), "empty": str(tmp_path.parent / "empty.jsonl")}
    (tmp_path.parent / "solver.jsonl").write_text('{"index": 0, "length": 9, "optimal": true}\n')
    (tmp_path.parent / "empty.jsonl").write_text("")
    os.makedirs(paths["former run"], exist_ok=True)  # a run's config alone: refused before its checkpoints are read
    former = avi.AVIConfig(game=jaxdust.make("Former-7x9x4-v0").game)
    with open(os.path.join(paths["former run"], "config.json"), "w") as handle:
        json.dump({"learner": "avi", "config": configs.to_json(former)}, handle)
    main = _benchmark(script, monkeypatch).main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main([arg.format(**paths) for arg in argv] + ["--out" if script != "equal_time" else "--out-dir",
                                                      str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert words.format(**paths) in err and not os.listdir(tmp_path)


REPORTING_BENCHMARKS = ["beam", "beam_sizes", "cluster_pooling", "compare_solvers", "compile_times", "dataset_filter",
                        "dataset_maker", "env_throughput", "gpu_estimate", "learners", "numba_compile", "ranking", "replay",
                        "samegame", "soak", "solver", "solver_soundness", "tune_heuristic"]


def test_every_benchmark_with_a_json_report_names_its_out_flag_here():
    """A new benchmark whose --out is a JSON report joins the list the next test checks,
    its --out checked against its own name (the one its report gives as "benchmark")."""
    found = {}
    for name in os.listdir(os.path.join(ROOT, "benchmarks")):
        text = open(os.path.join(ROOT, "benchmarks", name)).read() if name.endswith(".py") else ""
        if "flags.report_file" in text:
            found[os.path.splitext(name)[0]] = text
    assert sorted(found) == sorted(REPORTING_BENCHMARKS)
    for script, text in found.items():
        assert f'type=flags.report_file("{script}")' in text and f'"benchmark": "{script}"' in text, script


@pytest.mark.parametrize("script", REPORTING_BENCHMARKS)
def test_a_benchmarks_report_replaces_only_an_earlier_report(script, tmp_path, monkeypatch, capsys):
    """``--out`` over any file replaced it with the report once the work was done: a
    script, a text file (samegame.py and env_throughput.py, in a review of 0.2.75), or
    another benchmark's report (a leaderboard's, hours of play)."""
    main = _benchmark(script, monkeypatch).main
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "notes.py"
    for content in ("print('mine')\n", json.dumps({"benchmark": "leaderboard", "rows": []})):
        mine.write_text(content)
        with pytest.raises(SystemExit) as exit_info:
            main(["--out", str(mine)])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"--out: {mine} holds something other than an earlier {script} report" in err
        assert mine.read_text() == content and os.listdir(tmp_path) == ["notes.py"]
    mine.write_text(json.dumps({"benchmark": script}))
    assert flags.report_file(script)(str(mine)) == str(mine)


def test_the_learners_benchmarks_figure_replaces_only_a_figure(tmp_path, monkeypatch, capsys):
    """learners.py wrote its learning curves to ``<out>.png`` over whatever was there, hours
    of training later; ``--out x.png`` wrote the figure, then the report over it."""
    learners_benchmark = _benchmark("learners", monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "report.png").write_text("my notes\n")
    for out, words in (("report.json", "go to report.png, which holds something other than a PNG image"),
                       ("figure.png", "figure.png is the name of the report's figure")):
        with pytest.raises(SystemExit) as exit_info:
            learners_benchmark.main(["--learners", "avi", "--out", out])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
        assert words in err
    assert sorted(os.listdir(tmp_path)) == ["report.png"] and (tmp_path / "report.png").read_text() == "my notes\n"
    os.mkfifo(tmp_path / "piped.png")  # opened to be read, it waited for a writer for good
    with pytest.raises(SystemExit):
        learners_benchmark.main(["--learners", "avi", "--out", "piped.json"])
    assert "the learning curves go to piped.png, which is not a file" in capsys.readouterr().err
    os.unlink(tmp_path / "piped.png")

    class Checked(Exception):
        pass

    def past_the_checks(*args):
        raise Checked
    monkeypatch.setattr(learners_benchmark, "board_sets", past_the_checks)
    (tmp_path / "report.png").write_bytes(plots.learning_curves({"avi": ([1.0, 2.0], [14.0, 13.0])}, {}, "curves"))
    with pytest.raises(Checked):  # an earlier run's figure is replaced
        learners_benchmark.main(["--learners", "avi", "--out", "report.json"])


def test_the_compile_profile_names_a_log_line_it_cannot_read(tmp_path, monkeypatch, capsys):
    """A log line whose seconds are no number (another file, a hand edit) was a traceback."""
    log = tmp_path / "bad.tsv"
    log.write_text("1\t/jax/core/compile/backend_compile_duration\tabc\tjit(f)\tx.py\t\n")
    with pytest.raises(SystemExit) as exit_info:
        _benchmark("compile_profile", monkeypatch).main(["--log", str(log)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{log}:1 is no line of this profiler's log (seconds 'abc')" in err


def test_the_equal_time_benchmark_says_in_one_line_when_its_minutes_are_too_few(tmp_path, monkeypatch, capsys):
    """DQN's schedule needs its replay filled before an update: a slow machine's few steps
    in --minutes ended in a FieldError's traceback after the calibration."""
    equal_time = _benchmark("equal_time", monkeypatch)
    monkeypatch.setattr(equal_time, "seconds_per_unit", lambda *args: 60.0)  # a minute a step: 1 step a point
    with pytest.raises(SystemExit) as exit_info:
        equal_time.main(["--variants", "dqn-sampled", "--minutes", "1", "--points", "1", "--boards", "2",
                         "--proven-boards", "2", "--out-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "--minutes 1 in 1 points is too short for dqn-sampled" in err, err
    assert "ends before the first update" in err and not os.path.exists(tmp_path / "out" / "dqn-sampled.json")


def test_the_learners_benchmarks_players_draw_their_keys_from_the_seed(monkeypatch):
    """learners.py and equal_time.py played every seed with key 1, so MCTS's Gumbel noise was
    the same whatever ``--seed``; seed 0 keeps key 1 (the figures measured before)."""
    learners_benchmark = _benchmark("learners", monkeypatch)
    keys = []

    def recorded(boards, policy, key, *args, **kwargs):
        keys.append(np.asarray(jax.random.key_data(key)).tolist())
        return types.SimpleNamespace(cleared=np.ones(len(boards), bool), clicks=np.full(len(boards), 3))

    monkeypatch.setattr(learners_benchmark, "play_in_chunks", recorded)
    boards = np.zeros((2, 8, 6), np.int8)
    for seed in (0, 0, 1):
        learners_benchmark.play_set(boards, None, 10, policy=object(), widths=(), seed=seed)
    assert keys[0] == keys[1] == np.asarray(jax.random.key_data(jax.random.key(1))).tolist()
    assert keys[2] != keys[0]


def test_the_learners_benchmarks_argmax_plays_its_own_parameters(monkeypatch):
    """A run's argmax is played from its checkpoint selected by argmax play
    (``policy_params``), its searches from the one selected by greedy play (``params``)."""
    learners_benchmark = _benchmark("learners", monkeypatch)
    played = []

    def recorded(boards, policy, key, cap, chunk, params):
        played.append(params)
        return types.SimpleNamespace(cleared=np.ones(len(boards), bool), clicks=np.full(len(boards), 3))

    monkeypatch.setattr(learners_benchmark, "play_in_chunks", recorded)
    monkeypatch.setattr(learners_benchmark, "beam_lengths", lambda boards, width, scorer, params, cap: (
        played.append(params) or np.full(len(boards), 3)))
    boards = np.zeros((2, 8, 6), np.int8)
    learners_benchmark.play_set(boards, None, 10, policy=object(), scorer=object(), params="greedy's", widths=(1,),
                                policy_params="argmax's")
    learners_benchmark.play_set(boards, None, 10, policy=object(), scorer=object(), params="one", widths=(1,))
    assert played == ["argmax's", "greedy's", "one", "one"]


@pytest.mark.parametrize("kept, words", [
    # A row kept under another time limit was reused, its figures printed under this run's settings.
    ({"line": 2, "board": "1" * 63, "settings": {"time_limit": 5.0, "table_bits": 28}, "ours": {}, "theirs": {}},
     "holds line 2 for another board or other settings"),
    # A row kept before the settings named the code: the solvers may have changed since.
    ({"line": 2, "board": "1" * 63, "settings": {"time_limit": 60.0, "table_bits": 28}, "ours": {}, "theirs": {}},
     "holds line 2 for another board or other settings"),
    # A row kept before 0.2.23 recorded no settings at all: its limit and code are unknown.
    ({"line": 2, "board": "1" * 63, "ours": {}, "theirs": {}}, "other settings (not recorded): give another --out"),
    ("not json", "is not this benchmark's log"),
    ({"board": "1" * 63}, "is not this benchmark's log"),  # JSON, but no line number
])
def test_the_former_solvers_benchmark_reuses_rows_only_of_its_boards_settings_and_code(tmp_path, monkeypatch, capsys,
                                                                                      kept, words):
    former_solvers = _benchmark("former_solvers", monkeypatch)
    (tmp_path / "tommyod").mkdir()
    (tmp_path / "tommyod" / "solvers.py").write_text("")
    boards = tmp_path / "boards.txt"
    boards.write_text("# width=7 height=9\n" + "1" * 63 + "\n")
    out = tmp_path / "rows.jsonl"
    out.write_text((kept if isinstance(kept, str) else json.dumps(kept)) + "\n")
    with pytest.raises(SystemExit) as exit_info:
        former_solvers.main(["--tommyod", str(tmp_path / "tommyod"), "--boards", str(boards), "--time-limit", "60",
                             "--out", str(out)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and words in err and "Traceback" not in err, err


def test_the_former_solvers_benchmark_records_and_prints_the_machine_of_each_row(tmp_path, monkeypatch, capsys):
    former_solvers = _benchmark("former_solvers", monkeypatch)
    (tmp_path / "tommyod").mkdir()
    (tmp_path / "tommyod" / "solvers.py").write_text("")
    boards = tmp_path / "boards.txt"
    boards.write_text("# width=7 height=9\n" + "1" * 63 + "\n" + "2" * 63 + "\n")
    one_click = {"length": 1, "optimal": True, "lower_bound": 1, "seconds": 0.1, "clicks": [[0, 0]]}
    monkeypatch.setattr(former_solvers, "run_ours", lambda *args: dict(one_click))
    monkeypatch.setattr(former_solvers, "run_theirs", lambda *args: dict(one_click))
    out = tmp_path / "rows.jsonl"
    argv = ["--tommyod", str(tmp_path / "tommyod"), "--boards", str(boards), "--limit", "1", "--out", str(out)]
    former_solvers.main(argv)
    row = json.loads(out.read_text())
    assert row["measured_on"] == machine.measured_on(jaxdust.__version__) and row["ours"]["clears"]
    assert f"measured on: {machine.cpu_name()}" in capsys.readouterr().out
    # A row kept from before rows named their machine is reused and said to be unknown.
    del row["measured_on"]
    out.write_text(json.dumps(row) + "\n")
    rows = former_solvers.main([*argv[:-3], "2", "--out", str(out)])
    assert [r["line"] for r in rows] == [2, 3] and "measured_on" not in rows[0] and "measured_on" in rows[1]
    printed = capsys.readouterr().out
    assert "measured on: " in printed and "not recorded" in printed and machine.cpu_name() in printed


def test_the_solver_benchmark_keeps_each_board_as_it_ends(tmp_path, monkeypatch):
    """It wrote its JSON after a whole set, with no progress shown: a run killed in the
    hours of the 8x6 set kept nothing of it."""
    solver_benchmark = _benchmark("solver", monkeypatch)
    out = tmp_path / "solver.json"
    bars = []

    def recorded_bar(iterable, **kwargs):
        bars.append(kwargs)
        return iterable

    def two_boards_then_killed(jobs, processes):
        for text, width, height, known, *_ in jobs[:2]:
            yield {"board": text, "known": known, "proven": True, "timed_out": False, "seconds": 0.1,
                   "nodes": 10, "length": known, "lower_bound": known}
        assert len(json.loads(out.read_text())["sets"]["8x4"]["per_board"]) == 2
        raise KeyboardInterrupt

    monkeypatch.setattr(solver_benchmark, "progress_bar", recorded_bar)
    monkeypatch.setattr(solver_benchmark, "_results", two_boards_then_killed)
    with pytest.raises(KeyboardInterrupt):
        solver_benchmark.main(["--sets", "8x4", "--reference-boards", "0", "--out", str(out)])
    kept = json.loads(out.read_text())["sets"]["8x4"]
    assert kept["finished"] is False and kept["boards"] == 60 and len(kept["per_board"]) == 2
    assert bars == [{"total": 60, "desc": "8x4", "leave": False}]


def test_the_learners_benchmark_reads_its_proven_boards_from_any_directory(tmp_path, monkeypatch):
    learners_benchmark = _benchmark("learners", monkeypatch)
    monkeypatch.chdir(tmp_path)
    sets = learners_benchmark.board_sets(2, seed=0, proven=3)
    assert sets["proven"][0].shape == (3, 8, 6) and sets["fresh"][0].shape == (2, 8, 6)
    records = jaxdust.read_board_file(os.path.join(ROOT, "data/boards/optimal_8x6x5.txt"), limit=3)
    np.testing.assert_array_equal(sets["proven"][1], [r.values[-1] for r in records])


def test_the_learners_benchmark_reuses_a_finished_run_only_with_the_same_run_flags(tmp_path, monkeypatch):
    """A run evaluated on other boards, or trained from other data, is not the run the flags
    ask for: its curve and its ``best/`` would be reported under flags it was not run with."""
    learners_benchmark = _benchmark("learners", monkeypatch)
    run_dir = str(tmp_path / "avi")
    argv = ["avi", "--run-dir", run_dir, "--seed", "0", "--total-updates", "40"]
    _, config = cli.new_run_config(argv[0], argv[1:])
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, "config.json"), "w") as handle:
        json.dump({"learner": "avi", "config": configs.to_json(config),
                   "run": {"seed": 0, "eval_boards": 256, "eval_every": 5}}, handle)
    assert learners_benchmark.other_settings(argv, run_dir) is None
    assert learners_benchmark.other_settings([*argv, "--eval-boards", "256"], run_dir) is None
    assert learners_benchmark.other_settings([*argv, "--eval-boards", "64"], run_dir) == "--eval-boards 256, not 64"
    assert learners_benchmark.other_settings([*argv, "--eval-every", "7"], run_dir) == "--eval-every 5, not 7"
    assert learners_benchmark.other_settings([*argv[:-4], "--seed", "1", *argv[-2:]], run_dir) == "--seed 0, not 1"
    assert learners_benchmark.other_settings([*argv[:-1], "80"], run_dir) == "other settings (--total-updates 40, not 80)"


def test_the_learners_benchmark_stops_in_one_line_when_minutes_stop_a_run(tmp_path, monkeypatch, capsys):
    learners_benchmark = _benchmark("learners", monkeypatch)
    monkeypatch.setattr(learners_benchmark.cli, "main", lambda argv: {})  # what train.py returns when --minutes stops it
    with pytest.raises(SystemExit) as exit_info:
        learners_benchmark.main(["--learners", "avi", "--runs-dir", str(tmp_path), "--boards", "2",
                                 "--avi-flags", "--minutes 0.01", "--out", str(tmp_path / "learners.json")])
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == (f"{tmp_path / 'avi'} is not finished: --minutes in --avi-flags counts the "
                                       "whole run, so raise or drop it and run the command again to go on training it\n")


# Every script in benchmarks/ (leaderboard.py is the package command's entry point, run()).
@pytest.mark.parametrize("script", sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, "benchmarks"))
                                          if name.endswith(".py") and name != "leaderboard.py"))
def test_ctrl_c_ends_a_benchmark_with_one_line_and_status_130(script, monkeypatch, capsys):
    """Run as a script, each ends an interrupt as the commands do: one line saying what a
    rerun keeps, exit status 130, no traceback from wherever it was."""
    import runpy

    from jaxdust.core import flags

    def interrupted(argv=None):
        raise KeyboardInterrupt

    run_command = flags.run_command
    monkeypatch.setattr(flags, "run_command", lambda main, resumes: run_command(interrupted, resumes))
    monkeypatch.syspath_prepend(os.path.join(ROOT, "benchmarks"))
    with pytest.raises(SystemExit) as ended:
        runpy.run_path(os.path.join(ROOT, "benchmarks", f"{script}.py"), run_name="__main__")
    assert ended.value.code == 130
    err = capsys.readouterr().err
    assert err.startswith("\ninterrupted: ") and err.count("\n") == 2 and "Traceback" not in err


def test_solver_soundness_finds_no_fault_and_reports_one_planted(tmp_path, monkeypatch, capsys):
    """``benchmarks/solver_soundness.py`` on two small sizes: the solver agrees with plain
    IDA* on every board; a solver that proves a click too many is caught, board by board."""
    soundness = _benchmark("solver_soundness", monkeypatch)
    # A plain size is the dust game's, as --size reads it everywhere.
    assert soundness.sizes("4x4x3, former:5x3x3") == [jaxdust.GameConfig(4, 4, 3), jaxdust.GameConfig(5, 3, 3, "former")]
    out = tmp_path / "sound.json"
    assert soundness.main(["--sizes", "dust:4x4x3,former:5x3x3", "--boards", "40", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [(r["rules"], r["boards"], r["faults"]) for r in report["sizes"]] == [("dust", 40, []), ("former", 40, [])]
    assert all(r["max_optimum"] >= 4 and r["positions"] > 0 for r in report["sizes"])
    assert report["measured_on"]["jaxdust"] == jaxdust.__version__

    solve = jaxdust.solve

    def one_too_many(board, **options):
        found = solve(board, **options)
        return dataclasses.replace(found, length=found.length + 1) if options.get("prune", True) else found

    monkeypatch.setattr(soundness.jaxdust, "solve", one_too_many)
    assert soundness.main(["--sizes", "dust:4x4x3", "--boards", "3", "--out", str(out)]) == 1
    faults = json.loads(out.read_text())["sizes"][0]["faults"]
    assert [f["solver"] - f["plain"] for f in faults] == [1, 1, 1]
    assert capsys.readouterr().out.count("FAULT dust board") == 3

    # --paths: a node-limited call resumed from its checkpoint whose line stops short of the
    # end, or whose bound passes the optimum, is a fault of that way; --holes draws boards
    # with empty cells, settled, and single rows and one colour are sizes too.
    def short_line_when_stopped(board, **options):
        found = solve(board, **options)
        if options.get("node_limit") and options["node_limit"] <= 32:
            return dataclasses.replace(found, clicks=found.clicks[:-1])
        if options.get("node_limit"):
            return dataclasses.replace(found, lower_bound=found.length + 1)
        return found

    monkeypatch.setattr(soundness.jaxdust, "solve", short_line_when_stopped)
    assert soundness.main(["--sizes", "6x4x4", "--boards", "2", "--paths", "--out", str(out)]) == 1
    ways = [f["way"] for f in json.loads(out.read_text())["sizes"][0]["faults"]]
    assert ways[:2] == ["resumed under node_limit 16", "resumed under node_limit 32"] and len(ways) > 2
    assert "resumed under node_limit 64), plain IDA*" in capsys.readouterr().out
    monkeypatch.setattr(soundness.jaxdust, "solve", solve)
    assert soundness.main(["--sizes", "8x1x3,3x4x1,former:4x4x3", "--boards", "30", "--holes", "1", "--paths",
                           "--out", str(out)]) == 0
    report = json.loads(out.read_text())["sizes"]
    assert all(r["faults"] == [] and r["holes"] == 1 and r["paths"] for r in report)
    assert report[1]["max_optimum"] == 1 and report[0]["boards"] == 30


def test_the_learners_benchmark_checks_every_learners_size_before_training_any(tmp_path, monkeypatch, capsys):
    learners_benchmark = _benchmark("learners", monkeypatch)
    monkeypatch.setattr(learners_benchmark.cli, "main",
                        lambda argv: pytest.fail(f"{argv[0]} trained before dqn's size was checked"))
    with pytest.raises(SystemExit) as exit_info:
        learners_benchmark.main(["--learners", "avi,dqn", "--runs-dir", str(tmp_path), "--boards", "2",
                                 "--dqn-flags", "--size 6x4x4", "--out", str(tmp_path / "learners.json")])
    assert exit_info.value.code == 2 and "--dqn-flags train on 6x4x4 boards" in capsys.readouterr().err


def test_a_run_given_a_new_label_reuses_its_kept_rows_under_that_label(tmp_path, monkeypatch):
    """Rows were kept under the label: ``--runs b=RUN`` after ``--runs a=RUN`` played the run
    again. They are kept by the agent, and shown under the label of the call."""
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "runs" / "x"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"learner": "avi", "config": configs.to_json(avi.AVIConfig())}))
    played = []

    def fake_run_agent(entry, boards, key, max_clicks, jobs, rules, progress=None):
        played.append(entry)
        count = len(boards)
        return {"points": np.zeros(count), "clicks": np.full(count, 9.0 + len(played)),
                "cells_left": np.zeros(count), "cleared": np.ones(count, bool)}

    monkeypatch.setattr(leaderboard.registry, "run_agent", fake_run_agent)
    monkeypatch.setattr(leaderboard.registry, "require_playable", lambda *args, **kwargs: None)  # it loads the network
    first = leaderboard.main(["--size", "8x6x5", "--boards", "2", "--entries", "largest", "--runs", "a=runs/x"])
    count = len(played)
    again = leaderboard.main(["--size", "8x6x5", "--boards", "2", "--entries", "largest", "--runs", "b=runs/x"])
    assert len(played) == count > 1  # nothing played again
    assert sorted(row["agent"] for row in again["rows"]) == sorted(
        row["agent"].replace("a, ", "b, ") for row in first["rows"])
    assert [label for label in again["kept"] if label.startswith("b, ")] and not any(
        label.startswith("a, ") for label in again["kept"])


def test_the_leaderboard_names_its_machine_and_that_its_times_include_compiling(tmp_path, monkeypatch, capsys):
    """Its report named the CPU only, not the versions, and its times per board (146 ms on
    10 boards, 2 ms on 1000: the compiling) said nothing of what they include."""
    monkeypatch.chdir(tmp_path)

    def played(entry, boards, **kwargs):
        count = len(boards)
        return {"clicks": np.full(count, 20), "cleared": np.ones(count, bool), "points": np.zeros(count),
                "cells_left": np.zeros(count)}

    monkeypatch.setattr(leaderboard.registry, "run_agent", played)
    for where in (["--limit", "2"], ["--size", "6x4x4", "--boards", "2"]):
        report = leaderboard.main([*where, "--entries", "largest"])
        assert report["measured_on"] == machine.measured_on(jaxdust.__version__)
        assert "time per board: the agent's wall time over these boards, its compilation included" in \
            capsys.readouterr().out


def test_the_beam_benchmark_names_its_share_shows_short_times_and_says_when_a_ratio_has_no_reference(
        tmp_path, monkeypatch, capsys):
    """Its key ``share_equal_best_known`` held the share at or below the best known; a time
    under 5 ms a board printed as 0.00; ``--only`` without the numba twin of a JAX row left
    its ratio columns empty without a word."""
    beam_benchmark = _benchmark("beam", monkeypatch)
    monkeypatch.setattr(beam_benchmark, "run_jax", lambda boards, *args: (np.array([30, 1]), 0.000412))
    monkeypatch.setattr(beam_benchmark, "run_numba", lambda boards, *args: (np.array([30, 1]), 0.0002))
    out = tmp_path / "beam.json"
    beam_benchmark.main(["--boards", "2", "--width", "2", "--only", "jax, tuned heuristic", "--out", str(out)])
    row = json.loads(out.read_text())["results"]["jax, tuned heuristic"]
    assert row["share_at_or_below_best_known"] == 0.5 and "share_equal_best_known" not in row
    printed = capsys.readouterr()
    assert "| jax, tuned heuristic | 15.500 | 50.0% | 0.000412 |  |  |" in printed.out
    assert printed.err == ("--only 'jax, tuned heuristic' leaves out 'numba, tuned heuristic': 'jax, tuned heuristic' "
                           "has no time or lengths against numba's\n")
    beam_benchmark.main(["--boards", "2", "--width", "2", "--only", "tuned heuristic", "--out", str(out)])
    assert capsys.readouterr().err == ""


def test_the_heuristic_tuning_says_its_held_out_figures_are_mean_clicks_of_named_weights(monkeypatch, capsys):
    """"held-out, width 8, reference: 13.205" named neither the unit nor the weights."""
    tune = _benchmark("tune_heuristic", monkeypatch)
    monkeypatch.setattr(tune, "mean_length", lambda planes, geometry, width, weights: 13.205)
    tune.held_out((("reference", [1.0, 0.6, 0.5, 0.0, 0.0]),), [], None, 8)
    assert capsys.readouterr().out == "held-out, width 8, reference [1.0, 0.6, 0.5, 0.0, 0.0]: mean 13.205 clicks\n"


def test_short_seconds_print_with_their_decimals(tmp_path, monkeypatch, capsys):
    """solver_soundness.py printed 0.40 s as 0; compile_profile.py's summary said "XLA
    compiling 0 s" above tables that showed 0.1."""
    soundness = _benchmark("solver_soundness", monkeypatch)
    monkeypatch.setattr(soundness, "check_size", lambda config, count, seed, **ways: {
        "rules": config.rules, "width": config.width, "height": config.height, "colors": config.colors,
        "boards": count, "seed": seed, "faults": [], "mean_optimum": 5.0, "max_optimum": 6, "positions": 10,
        "plain_positions": 20, "seconds": 0.4})
    assert soundness.main(["--sizes", "4x4x3", "--boards", "2", "--out", str(tmp_path / "sound.json")]) == 0
    assert "| dust | 4x4x3 | 2 | 5.00 | 6 | 0 | 0.500 | 0.40 |" in capsys.readouterr().out
    profile = _benchmark("compile_profile", monkeypatch)
    log = tmp_path / "events.tsv"
    log.write_text(f"0\t{profile.COMPILE}\t0.12\tjit(click)\tchild.py\t\n")
    assert profile.summarise(str(log), 5).startswith("XLA compiling 0.1 s, tracing and lowering 0.0 s, ")


def test_the_sets_script_without_a_job_names_all_three(monkeypatch, capsys):
    sets_script = _benchmark("fewest_clicks_sets", monkeypatch)
    with pytest.raises(SystemExit) as exit_info:
        sets_script.main([])
    assert exit_info.value.code == 2
    assert "one of --solver-log, --former-boards or --former-log is required" in capsys.readouterr().err


def test_the_learners_benchmark_says_the_heuristics_mcts_plays_a_uniform_prior(monkeypatch):
    """Its "hand-made heuristic" row's mcts cell is MCTS on a uniform prior, as equal_time.py
    labels it; the row was labelled as the heuristic alone."""
    learners_benchmark = _benchmark("learners", monkeypatch)
    rows = learners_benchmark.table_rows({"learners": {"avi": {"training_seconds": 90.0}},
                                          "references": {"hand-made heuristic": {}, "largest cluster first": {}}})
    assert list(rows) == ["avi (1.5 min)", "hand-made heuristic (for mcts a uniform prior over cells)",
                          "largest cluster first"]


def test_a_leaderboard_report_names_the_run_and_entry_behind_each_row(tmp_path, monkeypatch, capsys):
    """A row's label ("imi, its policy alone ...") does not say which network played it:
    the report names each row's entry and its run's fingerprint."""
    from jaxdust.learn.runs import fingerprint

    monkeypatch.chdir(tmp_path)

    def fake_run_agent(entry, boards, key, max_clicks, jobs, rules, progress=None):
        count = len(boards)
        return {"points": np.zeros(count), "clicks": np.ones(count), "cells_left": np.zeros(count),
                "cleared": np.ones(count, bool)}

    monkeypatch.setattr(leaderboard.registry, "run_agent", fake_run_agent)
    report = leaderboard.main(["--size", "8x6x5", "--boards", "2", "--entries", "largest",
                               "--runs", "imi=@imitation-8x6x5"])
    played = report["played"]
    assert played["largest"] == {"entry": "largest"}
    assert played["imi, greedy on its value (width 1)"] == {"entry": "value:@imitation-8x6x5:1",
                                                            "run_fingerprint": fingerprint("@imitation-8x6x5")}
    assert {row["agent"] for row in report["rows"]} == set(played)
    assert "note: --seed" not in capsys.readouterr().err
    # Seed 2026's boards are those a run's checkpoints were picked on: said, as evaluate.py says it.
    leaderboard.main(["--size", "8x6x5", "--boards", "2", "--seed", "2026", "--runs", "imi=@imitation-8x6x5"])
    assert "note: --seed 2026 draws, first, the boards train.py evaluates a run on" in capsys.readouterr().err
    leaderboard.main(["--size", "8x6x5", "--boards", "2", "--seed", "2026", "--entries", "largest"])
    assert "note: --seed" not in capsys.readouterr().err  # no run played


def test_the_duplicate_filter_benchmark_compares_equal_choices_by_their_memory(tmp_path, monkeypatch, capsys):
    """``benchmarks/dataset_filter.py``: both filters keep the same positions (on boards small
    enough to repeat), and the packed one holds fewer bytes a position than the set."""
    out = tmp_path / "filter.json"
    _benchmark("dataset_filter", monkeypatch).main(["--positions", "3000", "--batch", "70", "--size", "4x2x3",
                                                    "--out", str(out)])
    report = json.loads(out.read_text())
    packed, plain = report["results"]["PositionFilter"], report["results"]["set of bytes"]
    assert packed["kept"] == plain["kept"] < 3000 and report["size"] == "4x2x3"
    assert packed["bytes"] < plain["bytes"] / 3
    assert "| PositionFilter | " in capsys.readouterr().out


def test_the_cluster_pooling_benchmark_times_both_poolings_and_refuses_one_that_differs(tmp_path, monkeypatch,
                                                                                        capsys):
    """``benchmarks/cluster_pooling.py``: a row per size and batch with both poolings'
    times, their differences within float32 rounding; a pooling that differs (each cell
    alone, not its cluster) ends the benchmark before a report is written."""
    out = tmp_path / "pooling.json"
    pooling = _benchmark("cluster_pooling", monkeypatch)
    argv = ["--sizes", "4x3x3,5x4x2", "--batches", "8", "--repeats", "3", "--seconds", "0.01", "--out", str(out)]
    pooling.main(argv)
    rows = json.loads(out.read_text())["results"]
    assert [(row["size"], row["batch"]) for row in rows] == [("4x3x3", 8), ("5x4x2", 8)]
    assert all(row["pairwise"] > 0 and row["per cluster"] > 0 and row["gradient_difference"] < 1e-4 for row in rows)
    assert "| 5x4x2 | 8 | " in capsys.readouterr().out
    out.unlink()

    def each_cell_alone(logits, labels):
        return jnp.where(labels >= 0, jax.nn.log_softmax(jnp.where(labels >= 0, logits, -1e9), axis=-1), -jnp.inf)
    monkeypatch.setattr(pooling.mcts, "cluster_log_probs", each_cell_alone)
    with pytest.raises(SystemExit, match="the poolings differ on 4x3x3 boards"):
        pooling.main(argv)
    assert not out.exists()


def test_the_beam_size_benchmark_times_each_shape_and_refuses_a_line_that_does_not_clear(tmp_path, monkeypatch,
                                                                                        capsys):
    """``benchmarks/beam_sizes.py``: a row per shape with the beam's time a click beside a
    chunk of plain clicks of that shape, its lines replayed to the end; a beam whose line
    stops short ends the benchmark with the size named; a points rule set, and a width
    beam_search would refuse, are refused before anything is measured."""
    out = tmp_path / "sizes.json"
    sizes = _benchmark("beam_sizes", monkeypatch)
    argv = ["--sizes", "4x3x3,former:5x4x3", "--width", "4", "--repeats", "1", "--out", str(out)]
    sizes.main(argv)
    rows = json.loads(out.read_text())["results"]
    assert [(row["size"], row["cells"], row["chunk"]) for row in rows] == [("4x3x3", 12, 96), ("former:5x4x3", 20, 160)]
    assert all(row["mean_clicks"] >= 1 and row["seconds_per_click"] > 0 and row["chunks_per_click"] > 0 for row in rows)
    assert "| former:5x4x3 | 20 | " in capsys.readouterr().out
    out.unlink()

    search = sizes.jaxdust.beam_search

    def one_click_short(*args, **kwargs):
        found = search(*args, **kwargs)
        return found._replace(length=found.length - 1)
    monkeypatch.setattr(sizes.jaxdust, "beam_search", one_click_short)
    with pytest.raises(SystemExit, match="a beam line on a 4x3 board does not clear it"):
        sizes.main(argv)
    assert not out.exists()
    with pytest.raises(SystemExit):
        sizes.main(["--sizes", "samegame:5x5x3", "--out", str(out)])
    assert "points_beam plays samegame" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # refused before the first size is measured
        sizes.main(["--sizes", "4x3x3,20x20x5", "--width", "3000000", "--out", str(out)])
    assert "--sizes 20x20x5: beam_search: 2 boards x width 3,000,000 x 400 cells = 2,400,000,000 children" in capsys.readouterr().err
    assert not out.exists()


def test_the_replay_benchmark_times_both_replays_and_refuses_one_that_ends_elsewhere(tmp_path, monkeypatch, capsys):
    """``benchmarks/replay.py``: both replays' times on the same lines, which end on the
    same boards; a reference that ends elsewhere ends the benchmark before a report."""
    out = tmp_path / "replay.json"
    replay = _benchmark("replay", monkeypatch)
    argv = ["--size", "former:5x4x3", "--boards", "6", "--out", str(out)]
    replay.main(argv)
    report = json.loads(out.read_text())
    assert report["size"] == "former:5x4x3" and report["boards"] == 6 and report["mean_clicks"] > 1
    assert report["seconds_per_board"] > 0 and report["reference_seconds_per_board"] > 0
    assert "| op by op (reference) | " in capsys.readouterr().out
    out.unlink()
    monkeypatch.setattr(replay, "op_by_op", lambda board, actions, rules: np.ones_like(board))  # no line ends on a move
    with pytest.raises(SystemExit, match="the replays end on other boards than the reference's"):
        replay.main(argv)
    assert not out.exists()


def test_the_data_set_maker_benchmark_syncs_the_journal_by_the_second_and_streams_a_resume(tmp_path, monkeypatch,
                                                                                          capsys):
    """``benchmarks/dataset_maker.py``: the three ways of syncing the journal write the same
    shards (the benchmark checks), the maker's way syncs far less than once a board, and a
    board more costs a resume and the closing line less than holding its journal records."""
    out = tmp_path / "maker.json"
    _benchmark("dataset_maker", monkeypatch).main(["--boards", "120", "--size", "4x3x3", "--shard-size", "40",
                                                   "--beam-width", "2", "--rounds", "1", "--out", str(out)])
    report = json.loads(out.read_text())
    syncs = {way: row["fsyncs"] for way, row in report["time"].items()}
    assert syncs["every board"] >= 120 > 4 * syncs["as made"] and syncs["never"] == 0
    more = {name: row["a board more"] for name, row in report["memory_peak_bytes"].items()}
    assert max(more["resume"], more["closing line"]) < more["journal's records held"] / 2
    shard = report["one_shard_bytes_a_board"]
    assert shard["peak making it"] > shard["its arrays"] > 0
    assert "| every board | " in capsys.readouterr().out


def _registered(monkeypatch, name: str, play, replace: bool = False) -> registry.Agent:
    """``name`` registered for this test only (``register`` into a copy of the registry)."""
    monkeypatch.setattr(registry, "AGENTS", dict(registry.AGENTS))
    return registry.register(registry.Agent(name, f"{name} (a test's)", None, lambda text: None, play,
                                            tuple(jaxdust.core.game.RULES)), replace)


def _plays_clicks(clicks: int):
    def play(settings, boards, context):
        count = len(boards)
        return {"clicks": np.full(count, clicks), "cleared": np.ones(count, bool),
                "points": np.zeros(count), "cells_left": np.zeros(count)}
    return play


def test_register_refuses_a_built_in_name_or_one_an_agent_list_cannot_hold(monkeypatch):
    with pytest.raises(ValueError, match=r"agent 'largest' is one of jaxdust's \(clicks the largest group"):
        _registered(monkeypatch, "largest", _plays_clicks(3))
    assert registry.is_built_in("largest")
    _registered(monkeypatch, "largest", _plays_clicks(3), replace=True)
    assert not registry.is_built_in("largest")  # another agent's code under a built-in name
    for name in ("mine:2", "a,b", "my agent", ""):
        with pytest.raises(ValueError, match="an agent's name holds no"):
            _registered(monkeypatch, name, _plays_clicks(3))
    _registered(monkeypatch, "mine", _plays_clicks(3))
    assert not registry.is_built_in("mine") and registry.is_built_in("beam:8") and registry.is_built_in("policy:x")
    registry.register(registry.Agent("mine", "mine again", None, lambda text: None, _plays_clicks(4)))  # a cell rerun
    assert registry.AGENTS["mine"].description == "mine again"


@pytest.mark.parametrize("rules, played, words", [
    ("dust", {"clicks": np.ones(2)}, r"play returned no 'cleared' \(it returns clicks, cleared under the dust rules"),
    ("samegame", {"clicks": np.ones(2), "cleared": np.ones(2, bool)},
     r"play returned no 'points' \(it returns clicks, cleared, points, cells_left under the samegame rules"),
    ("dust", {"clicks": np.ones((2, 1)), "cleared": np.ones(2, bool)}, r"play's 'clicks' has shape \(2, 1\), not \(2,\)"),
    ("dust", [np.ones(2), np.ones(2)], "play returned a list, not a dict"),
])
def test_run_agent_names_what_a_registered_agents_play_lacks(monkeypatch, rules, played, words):
    """evaluate.py failed with a KeyError ('solutions', 'points') on such an agent."""
    _registered(monkeypatch, "mine", lambda settings, boards, context: played)
    config = jaxdust.GameConfig(4, 3, 3, rules=rules)
    boards = jaxdust.random_boards(jax.random.key(0), 2, config)
    with pytest.raises(ValueError, match=f"agent 'mine': {words}"):
        registry.run_agent("mine", boards, key=jax.random.key(0), max_clicks=12, rules=rules)


def test_a_registered_agent_without_solutions_or_numpy_arrays_is_evaluated(tmp_path, monkeypatch):
    def play(settings, boards, context):  # JAX arrays, no solutions kept
        return {"clicks": jnp.full(len(boards), 9), "cleared": jnp.ones(len(boards), bool)}

    _registered(monkeypatch, "mine", play)
    out = tmp_path / "out"
    evaluate_cli.main(["--random", "3", "--size", "4x3x3", "--agents", "mine,largest", "--animate", "1",
                       "--out", str(out)])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["agents"]["mine"]["mean"] == 9.0
    assert (out / "game-largest-0.gif").exists() and not (out / "game-mine-0.gif").exists()


def test_the_rows_and_play_of_a_registered_agent_are_not_kept_between_calls(tmp_path, monkeypatch):
    """Its row was reused after its code changed: nothing in the row's key tells one
    version of a user's function from another."""
    monkeypatch.chdir(tmp_path)
    _registered(monkeypatch, "mine", _plays_clicks(7))
    arguments = ["--size", "4x3x3", "--boards", "2", "--entries", "mine,largest"]
    first = leaderboard.main(arguments)
    _registered(monkeypatch, "mine", _plays_clicks(5), replace=True)
    again = leaderboard.main(arguments)
    assert again["kept"] == ["largest"] and first["kept"] == []
    assert {row["agent"]: row["mean"] for row in again["rows"]}["mine"] == 5.0
    written = []
    monkeypatch.setattr(evaluate_cli.files, "atomic_write_json",
                        lambda path, value, write=evaluate_cli.files.atomic_write_json: (written.append(path),
                                                                                          write(path, value)))
    evaluate_cli.main(["--random", "2", "--size", "4x3x3", "--agents", "mine,largest", "--out", "out"])
    played = [os.path.basename(path) for path in written if evaluate_cli.PLAYED in path]
    assert played == [registry.agent_file("largest")]
