"""Bitboard rules, the exact solver, the original-post DFS and the JAX beam search."""

import concurrent.futures
import itertools
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxdust
from jaxdust.search import beam, selection, keys
from jaxdust.search.heuristic import HEURISTIC_WEIGHTS, heuristic_features, heuristic_scorer
from jaxdust.search.beam import LOOKAHEAD_SHORTLIST
from jaxdust.solver import api, bitboard, halves, ida, progress, upper_bound
from jaxdust.solver import table as storage
from jaxdust.solver.dfs import solve_dfs
from jaxdust.solver.api import TranspositionTable, solve
from jaxdust.solver import cli as solver_cli
from jaxdust.solver.cli import main as solve_main
from jaxdust.core import files, game
from jaxdust.core.boards import board_lines
from jaxdust.core import reference as ref
from jaxdust.core.processes import WorkerDied, completed_map, ordered_map
from tests import workers
from tests.conftest import ROOT


def brute_force_optimum(board: np.ndarray) -> int:
    """Fewest clicks by breadth-first search over positions, using only the reference."""
    start = ref.board_to_text(board)
    width, height = board.shape
    seen, frontier = {start}, deque([(board, 0)])
    while frontier:
        position, clicks = frontier.popleft()
        if ref.is_done(position):
            return clicks
        for x, y in np.argwhere(ref.cluster_representatives(position)):
            child, _ = ref.click(position, x, y)
            text = ref.board_to_text(child)
            if text not in seen:
                seen.add(text)
                frontier.append((child, clicks + 1))
    raise AssertionError("unreachable: every board can be cleared")


def planes_of(board, colors):
    return bitboard.to_planes(np.asarray(board), colors)


# ---------------------------------------------------------------------------------------
# Bitboard rules
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(8, 6, 5), (5, 3, 3), (2, 1, 1), (8, 8, 4), (2, 32, 2), (9, 7, 9)],
                         ids=lambda s: "x".join(map(str, s)))
def test_bitboard_clicks_match_reference(size):
    width, height, colors = size
    geometry = bitboard.make_geometry(width, height)
    rng = np.random.default_rng(sum(size))
    transitions = 0
    while transitions < 600:
        board = ref.random_board(rng, width, height, colors)
        while not ref.is_done(board):
            x, y = np.argwhere(board != 0)[rng.integers(np.count_nonzero(board))]
            planes = planes_of(board, colors)
            seed = np.uint64(1 << int(x * height + y))
            cluster = np.uint64(bitboard.flood(seed, planes[board[x, y] - 1], geometry))
            np.testing.assert_array_equal(bitboard.to_board(np.array([cluster]), width, height) != 0,
                                          ref.cluster_mask(board, x, y))
            reach = int(bitboard.removal_reach(cluster, np.uint64(bitboard.occupied(planes)), geometry))
            bitboard.remove_in_place(planes, cluster, geometry)
            board_after, _ = ref.click(board, x, y)
            np.testing.assert_array_equal(bitboard.to_board(planes, width, height), board_after)
            # Everything that changed lies within the removal's reach.
            for cell in np.flatnonzero((board_after != board).reshape(-1)):
                assert (reach >> int(cell)) & 1
            board, transitions = board_after, transitions + 1


def test_bitboards_hold_every_cell_and_refuse_a_colour_past_their_planes():
    """``to_planes`` put a negative colour in a plane counted from the end, without a word."""
    rng = np.random.default_rng(5)
    for width, height, colors in ((8, 8, 9), (1, 1, 1), (3, 5, 2)):
        board = rng.integers(0, colors + 1, size=(width, height)).astype(np.int8)
        board[-1, -1] = colors  # the top bit of a 64-cell board: 2^63
        planes = bitboard.to_planes(board, colors)
        assert planes.dtype == np.uint64 and planes.shape == (colors,)
        assert [int(plane) for plane in planes] == [sum(1 << int(cell) for cell in np.flatnonzero(board.reshape(-1) == c))
                                                    for c in range(1, colors + 1)]
        assert bitboard.to_board(planes, width, height).dtype == np.int8
        np.testing.assert_array_equal(bitboard.to_board(planes, width, height), board)
    for colour in (-1, 3):
        with pytest.raises(ValueError, match=f"a board of colours 0 to 2 holds {colour}"):
            bitboard.to_planes(np.array([[1, colour], [2, 0]]), 2)


def test_an_install_numba_cannot_cache_beside_still_imports_and_caches_in_the_temporary_folder(tmp_path):
    """A read-only install run where the home folder is not writable either: numba found no
    place for its cache and ``import jaxdust`` failed. Here numba's locators are cut to the
    user-provided one alone, as if neither of the others took files."""
    script = ("from numba.core import caching\n"
              "impl = getattr(caching, 'CacheImpl', None) or caching._CacheImpl\n"
              "impl._locator_classes = [caching.UserProvidedCacheLocator if hasattr(caching, "
              "'UserProvidedCacheLocator') else caching._UserProvidedCacheLocator]\n"
              "import numpy as np, jaxdust\n"
              "from jaxdust.solver import bitboard\n"
              "print(bitboard.mix(np.uint64(5)))\n")
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env={**env, "TMPDIR": str(tmp_path)})
    assert ran.returncode == 0, ran.stderr[-2000:]
    folder = tmp_path / f"jaxdust-numba-{os.getuid()}"
    assert f"it caches in {folder}" in ran.stderr
    assert any(name.startswith("bitboard.mix") for _, _, names in os.walk(folder) for name in names)
    assert os.stat(folder).st_mode & 0o777 == 0o700  # numba unpickles what it finds there
    # Such a folder made by another user (here: open to all) is not taken: a fresh one is.
    os.chmod(folder, 0o777)
    again = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                           env={**env, "TMPDIR": str(tmp_path)})
    assert again.returncode == 0 and f"it caches in {tmp_path}{os.sep}jaxdust-numba-" in again.stderr
    assert f"it caches in {folder} " not in again.stderr, again.stderr[-2000:]


def test_bitboards_hold_at_most_64_cells():
    with pytest.raises(ValueError, match="at most 64 cells"):
        bitboard.make_geometry(9, 8)


@pytest.mark.parametrize("size", [(8, 6, 5), (8, 6, 3), (5, 3, 3), (9, 7, 4), (7, 4, 4)],
                         ids=lambda s: "x".join(map(str, s)))
def test_single_colour_filters_keep_every_move_that_leaves_a_single_colour(size):
    """Where no colour is one cluster and a click that finishes no colour would leave no
    slack, the solver plays only the moves its filters pass: they must include every move
    after which some colour is one cluster."""
    width, height, colors = size
    geometry = bitboard.make_geometry(width, height)
    rng = np.random.default_rng(sum(size))
    masks, colours = np.empty(64, np.uint64), np.empty(64, np.int64)
    group_start = np.empty(colors + 1, np.int64)
    making_singles = pruned = 0
    while making_singles < 300:
        board = ref.random_board(rng, width, height, colors)
        while not ref.is_done(board):
            planes = planes_of(board, colors)
            if not ida.single_cluster_colours(planes, geometry):
                count = bitboard.clusters(planes, geometry, masks, colours, group_start)
                sides = ida._sides_that_may_leave_single(masks, group_start, colors, geometry)
                for move, colour in zip(masks[:count], colours[:count]):
                    if group_start[colour + 1] - group_start[colour] == 2:
                        continue  # always played
                    child = planes.copy()
                    bitboard.remove_in_place(child, move, geometry)
                    singles = ida.single_cluster_colours(child, geometry)
                    reach = bitboard.removal_reach(move, bitboard.occupied(planes), geometry)
                    candidates = ida._colours_that_may_become_single(
                        reach, colour, masks, group_start, planes, geometry)
                    assert singles & ~candidates == 0
                    pruned += candidates == 0
                    in_left = bool(move & geometry.half[0])
                    if in_left != bool(move & geometry.half[1]):
                        assert sides & (1 if in_left else 2) or not singles
                    making_singles += bool(singles)
            x, y = np.argwhere(board != 0)[rng.integers(np.count_nonzero(board))]
            board, _ = ref.click(board, x, y)
    assert pruned > 300  # the filters are not vacuous


@pytest.mark.parametrize("width,height", [(8, 6), (6, 6), (5, 8), (8, 8), (3, 4), (16, 4), (4, 16), (7, 9)])
def test_canonical_hash_is_mirror_invariant_where_mirror_images_play_alike(width, height):
    """A board and its mirror image share a key where they play alike; at odd widths the
    dust game's middle column belongs to the right half, so there they must not (the
    table would hand one the other's bound)."""
    rng = np.random.default_rng(0)
    geometry = bitboard.make_geometry(width, height)
    assert geometry.mirror == (width % 2 == 0) and bitboard.make_geometry(width, height, "former").mirror
    for _ in range(20):
        board = ref.contract(np.where(rng.random((width, height)) < 0.3, 0,
                                      ref.random_board(rng, width, height, 5)))
        hashes = [ida.position_key(planes_of(b, 5), geometry) for b in (board, board[::-1])]
        assert (hashes[0] == hashes[1]) == (geometry.mirror or np.array_equal(board, board[::-1]))
        for c in range(5):
            mirrored = ida._mirror(planes_of(board, 5)[c], geometry)
            assert mirrored == planes_of(board[::-1], 5)[c]


# ---------------------------------------------------------------------------------------
# Exact solver
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["optimal_6x6x5.txt", "optimal_8x4x5.txt"])
def test_exact_solver_is_optimal_on_every_shared_board(boards_dir, name):
    for record in jaxdust.read_board_file(boards_dir / name):
        result = solve(record.board)
        assert result.optimal and result.length == result.lower_bound == record.values[0], record.line
        final, count = jaxdust.replay(record.board, result.clicks)
        assert count == result.length and bool(jaxdust.is_done(final))


@st.composite
def small_boards(draw):
    width, height = draw(st.sampled_from([(2, 2), (3, 3), (4, 3), (3, 4), (5, 2), (6, 2), (2, 5)]))
    colors = draw(st.integers(1, 4))
    cells = draw(st.lists(st.integers(1, colors), min_size=width * height, max_size=width * height))
    holes = draw(st.lists(st.booleans(), min_size=width * height, max_size=width * height))
    board = np.where(np.array(holes) & draw(st.booleans()), 0, cells).reshape(width, height)
    return ref.contract(board.astype(np.int8)), colors


def relaxed_half_optimum(board: np.ndarray, side: int) -> int:
    """Fewest clicks of the relaxed half game (see jaxdust.solver.halves), by breadth-first search
    with the reference rules: the other half emptied, each move one cluster or a union of
    two or more same-coloured clusters that touch the half's centre column."""
    width = board.shape[0]
    centre = width // 2 - 1 + side
    start = board.copy()
    start[width // 2:] = 0 if side == 0 else start[width // 2:]
    start[:width // 2] = 0 if side == 1 else start[:width // 2]
    seen, frontier = {ref.board_to_text(start)}, deque([(start, 0)])
    while frontier:
        position, clicks = frontier.popleft()
        if ref.is_done(position):
            return clicks
        moves = ref._all_clusters(position)
        for colour in range(1, int(position.max()) + 1):
            touching = [c for c in moves if position[c[0]] == colour and any(x == centre for x, _ in c)]
            for size in range(2, len(touching) + 1):
                moves += [sum(group, []) for group in itertools.combinations(touching, size)]
        for cells in moves:
            child = position.copy()
            for x, y in cells:
                child[x, y] = 0
            child = ref.contract(child)
            text = ref.board_to_text(child)
            if text not in seen:
                seen.add(text)
                frontier.append((child, clicks + 1))
    raise AssertionError("unreachable")


@settings(max_examples=60)
@given(small_boards())
def test_half_values_and_the_half_bound_against_brute_force(drawn):
    board, colors = drawn
    geometry = bitboard.make_geometry(*board.shape)
    planes = planes_of(board, colors)
    scratch = halves.make_scratch(colors, *board.shape)
    values = []
    for side in (0, 1):
        table = np.zeros(1 << 10, np.uint64)
        value = halves.half_value(planes, side, geometry, 99, table, scratch)
        assert value == relaxed_half_optimum(board, side)
        assert halves.half_value(planes, side, geometry, 99, table, scratch) == value  # from the table
        if value > 0:  # a smaller cap stops the search there, with a bound that reaches it
            assert halves.half_value(planes, side, geometry, value, np.zeros(1 << 10, np.uint64), scratch) == value
            assert halves.half_value(planes, side, geometry, value - 1, np.zeros(1 << 10, np.uint64), scratch) >= value - 1
        values.append(value)
    only_left, only_right = halves.colours_only(planes, geometry)
    assert max(values[0] + only_right, values[1] + only_left) <= brute_force_optimum(board)


def test_a_half_games_value_is_found_again_whatever_the_number_of_colour_planes():
    """An empty plane added to the half's key, so a table shared by solves of boards with
    fewer colours (a solution's later positions) or another ``colors=`` missed every half."""
    board = np.array([[1, 2, 1], [2, 2, 1], [1, 1, 2], [2, 1, 2]], np.int8)
    geometry = bitboard.make_geometry(*board.shape)
    table = np.zeros(1 << 10, np.uint64)
    value = halves.half_value(planes_of(board, 2), 0, geometry, 99, table, halves.make_scratch(2, *board.shape))
    assert value > 1 and halves.half_key(planes_of(board, 2)) == halves.half_key(planes_of(board, 5))
    stored = table.copy()
    assert halves.half_value(planes_of(board, 5), 0, geometry, 99, table, halves.make_scratch(5, *board.shape)) == value
    np.testing.assert_array_equal(table, stored)  # read from the table: no search stored anything more


def test_half_values_on_an_odd_width_reach_the_larger_half_cell_count():
    """Sixteen colours, one per cell of a 3x8 board's right half: every relaxed click
    removes one cell, so the right half's value is its cell count, deeper than half the
    board's cells (the scratch depth must follow the larger half)."""
    board = np.zeros((3, 8), np.int8)
    board[1:] = (np.arange(16) + 1).reshape(2, 8)
    geometry = bitboard.make_geometry(3, 8)
    planes = planes_of(board, 16)
    value = halves.half_value(planes, 1, geometry, 99, np.zeros(1 << 12, np.uint64),
                              halves.make_scratch(16, 3, 8))
    assert value == 16


@pytest.mark.slow
def test_time_limit_holds_where_half_searches_are_costly():
    """On 8x8 boards with 9 colours a single half-game search can take minutes; it must
    give up at the deadline like the main search."""
    board = ref.random_board(np.random.default_rng(0), 8, 8, 9)
    result = solve(board, time_limit=0.3)
    assert result.seconds < 3.0 and result.lower_bound <= result.length
    final, count = jaxdust.replay(board, result.clicks)
    assert count == result.length and bool(jaxdust.is_done(final))


def test_compiling_is_announced_and_kept_out_of_the_solution_seconds(monkeypatch, capsys):
    """A slow first load (a cold numba cache) says on stderr that it loads or compiles, and a solve
    without a time limit does not count it in ``seconds``; a quick load says nothing."""
    import time

    assert api.COMPILE_NOTICE_SECONDS >= 1.0  # a warm cache loads in well under a second: no notice
    monkeypatch.setattr(api, "_loaded", set())
    monkeypatch.setattr(api, "COMPILE_NOTICE_SECONDS", 0.05)
    monkeypatch.setattr(api, "_compile_searches", lambda: time.sleep(1.0))
    result = solve(np.array([[1, 2], [1, 2]]))
    assert result.optimal and result.seconds < 0.5
    assert "loading the exact solver (its first use after an install or upgrade compiles it" in \
        capsys.readouterr().err
    monkeypatch.setattr(api, "_loaded", set())
    monkeypatch.setattr(api, "_compile_searches", lambda: None)
    solve(np.array([[1, 2], [1, 2]]))
    time.sleep(0.2)  # past the notice's delay: a timer left running would print by now
    assert capsys.readouterr().err == ""


def test_threads_starting_a_search_at_once_load_it_once_and_say_so_once(monkeypatch, capsys):
    """Each of six threads calling ``points.beam`` first said its own loading notice."""
    import threading
    import time

    monkeypatch.setattr(api, "_loaded", set())
    monkeypatch.setattr(api, "COMPILE_NOTICE_SECONDS", 0.05)
    loads, start = [], threading.Barrier(6)

    def first_call():
        start.wait()
        api.load_once("a search", "1 s", lambda: (loads.append(1), time.sleep(0.5)))

    threads = [threading.Thread(target=first_call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == [1] and capsys.readouterr().err.count("loading a search") == 1


def test_a_slow_load_is_announced_once_above_the_bar_not_by_each_worker(monkeypatch, capsys):
    """Each worker of a pool said its own loading notice, onto the parent's progress bar: the
    parent now loads first (its notice said once, above its bars) and the workers say nothing."""
    import time

    from tqdm import tqdm

    from jaxdust.core import progress
    from jaxdust.evaluation import registry
    from jaxdust.solver import compiled

    script = ("from jaxdust.core.processes import ordered_map\nfrom tests import workers\n"
              "if __name__ == '__main__':\n    print(sum(ordered_map(workers.load_slowly, [0.3] * 4, 2)))\n")
    ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (ended.returncode, ended.stdout, ended.stderr) == (0, "1.2\n", ""), ended.stderr[-2000:]

    def cold_cache():
        with api.loading_notice("the exact solver", "20-60 s"):
            time.sleep(0.3)

    monkeypatch.setattr(api, "COMPILE_NOTICE_SECONDS", 0.05)
    monkeypatch.setattr(compiled, "compile_searches", cold_cache)
    boards = np.array([[[1, 2], [1, 2]]] * 3, np.int8)
    played = registry.run_agent("solver:1", boards, key=jax.random.key(0), max_clicks=4, jobs=2)
    assert played["clicks"].tolist() == [2, 2, 2]
    assert capsys.readouterr().err.count("jaxdust: loading the exact solver") == 1
    with tqdm(total=3, file=sys.stderr, bar_format="{n}/{total} bar") as bar:  # a bar drawn on the terminal
        bar.update()
        progress.note("a line of its own")
        err = capsys.readouterr().err
    assert re.search(r"\r\s*\ra line of its own\n\r1/3 bar$", err), repr(err)  # cleared, then drawn again below


def test_the_depth_first_searchs_time_limit_starts_after_its_compiling(monkeypatch, capsys):
    """A cold numba cache compiles the original post's search for seconds on its first call:
    that is announced and not taken from ``time_limit`` (a 2 s limit searched ~0 s)."""
    import time

    from jaxdust.solver import dfs

    monkeypatch.setattr(api, "_loaded", set())
    monkeypatch.setattr(api, "COMPILE_NOTICE_SECONDS", 0.05)
    real_search, left = dfs.depth_first_search, []

    def search(planes, geometry, node_limit, deadline, path):
        if not left:
            time.sleep(1.0)  # the first call compiles (a cold cache), before it runs
        left.append(deadline - time.perf_counter())
        return real_search(planes, geometry, node_limit, deadline, path)

    monkeypatch.setattr(dfs, "depth_first_search", search)
    clicks = dfs.solve_dfs(np.array([[1, 2], [1, 2]]), time_limit=0.8)
    assert len(clicks) == 2 and left[-1] > 0.7, left  # the search had its whole limit
    assert "loading the depth-first search (its first use" in capsys.readouterr().err


def test_the_half_bound_is_stronger_than_the_colour_bound_on_many_boards():
    rng = np.random.default_rng(5)
    geometry = bitboard.make_geometry(8, 6)
    scratch = halves.make_scratch(5, 8, 6)
    table = np.zeros(1 << 16, np.uint64)
    stronger = 0
    for _ in range(50):
        planes = planes_of(ref.random_board(rng, 8, 6, 5), 5)
        only_left, only_right = halves.colours_only(planes, geometry)
        half_bound = max(halves.half_value(planes, 0, geometry, 99, table, scratch) + only_right,
                         halves.half_value(planes, 1, geometry, 99, table, scratch) + only_left)
        stronger += half_bound > ida.lower_bound(planes, geometry)
    assert stronger >= 25  # at the root of a random board it adds a click or two, mostly


@pytest.mark.slow
@settings(max_examples=120)
@given(small_boards())
def test_bounds_and_solutions_against_brute_force(drawn):
    board, colors = drawn
    optimum = brute_force_optimum(board)
    geometry = bitboard.make_geometry(*board.shape)
    assert ida.lower_bound(planes_of(board, colors), geometry) <= optimum
    if not board.any():
        return
    for prune in (True, False):
        result = solve(board, colors=colors, prune=prune, table=TranspositionTable(12))
        assert result.length == optimum and result.optimal
        final, _ = jaxdust.replay(board, result.clicks)
        assert bool(jaxdust.is_done(final))


def test_skipping_to_the_last_budget_stays_optimal_when_the_upper_bound_is_not(boards_dir, monkeypatch):
    """A narrow beam gives loose upper bounds, so the search that skips straight to
    best - 1 often finds a shorter solution; the smaller budgets must then still be
    refuted before the answer counts as optimal."""
    searches = []
    original = ida.bounded_search

    def recording(root, geometry, budget, *args):
        status, nodes, length = original(root, geometry, budget, *args)
        searches[-1].append((budget, status))
        return status, nodes, length

    monkeypatch.setattr(ida, "bounded_search", recording)
    records = jaxdust.read_board_file(boards_dir / "optimal_6x6x5.txt")[:30]
    for record in records:
        searches.append([])
        result = solve(record.board, beam_width=1)
        assert result.optimal and result.length == record.values[0], record.line
        final, count = jaxdust.replay(record.board, result.clicks)
        assert count == result.length and bool(jaxdust.is_done(final))
    skipped = [s for s in searches if any(
        status == ida.FOUND and later < budget
        for (budget, status), (later, _) in zip(s, s[1:]))]
    assert skipped, "no board took the path where the skipped-to search finds a shorter solution"


def test_pruning_keeps_the_optimum_on_larger_boards():
    rng = np.random.default_rng(3)
    nodes = np.zeros(2, int)
    for _ in range(8):
        board = ref.random_board(rng, 6, 5, 4)
        pruned = solve(board, beam_width=0, table=TranspositionTable(18))  # alike but for the pruning
        plain = solve(board, prune=False, beam_width=0, table=TranspositionTable(18))
        assert pruned.length == plain.length and pruned.optimal and plain.optimal
        assert pruned.nodes <= plain.nodes
        nodes += pruned.nodes, plain.nodes
    assert nodes[0] * 3 < nodes[1]  # it prunes (6x fewer positions here: 3,384 against 21,294)


def test_time_limit_returns_the_best_solution_and_the_proven_bound(boards_dir):
    hard = next(r for r in jaxdust.read_board_file(boards_dir / "eval_8x6x5.txt") if r.values[1] >= 13)
    result = solve(hard.board, time_limit=0.2, table=TranspositionTable(16))
    assert not result.optimal and result.lower_bound < result.length
    assert result.seconds < 2.0
    final, count = jaxdust.replay(hard.board, result.clicks)
    assert count == result.length and bool(jaxdust.is_done(final))


def test_shared_table_changes_work_not_answers(boards_dir):
    record = jaxdust.read_board_file(boards_dir / "optimal_6x6x5.txt")[5]
    table = TranspositionTable(18)
    first = solve(record.board, table=table)
    second = solve(record.board, table=table)
    assert first.clicks == second.clicks and second.nodes * 100 < first.nodes  # the table is used (89 against 175,442)


def test_table_buckets_keep_the_key_the_largest_bound_and_evict_the_smallest():
    table = np.zeros(1 << 8, np.uint64)
    key = np.uint64(0xDEADBEEF12345608)
    # Keys of one bucket: equal bits 2..7 (the slot's), different bits above the low byte.
    same_bucket = [key ^ np.uint64(i << 40) for i in range(1, storage.BUCKET + 1)]
    other_bucket = key ^ np.uint64(0x04)  # bit 2 picks another bucket
    assert storage.table_bound(table, key) == 0
    storage.table_store(table, key, 7)
    storage.table_store(table, key, 5)  # a weaker proof never lowers a stored bound
    assert storage.table_bound(table, key) == 7
    assert storage.table_bound(table, key ^ np.uint64(0x01)) == 7  # the two lost bits
    assert storage.table_bound(table, other_bucket) == 0
    for bound, other in zip((3, 9, 4), same_bucket):  # the bucket fills up
        storage.table_store(table, other, bound)
    assert [storage.table_bound(table, k) for k in [key, *same_bucket]] == [7, 3, 9, 4, 0]
    storage.table_store(table, same_bucket[3], 6)  # full: the smallest bound (3) goes
    assert [storage.table_bound(table, k) for k in [key, *same_bucket]] == [7, 0, 9, 4, 6]
    storage.table_store(table, same_bucket[0], 2)  # goes in too, in place of the 4
    assert [storage.table_bound(table, k) for k in [key, *same_bucket]] == [7, 2, 9, 0, 6]
    for bits in (8, 37, 9.5, "12"):  # 2^37 entries asked for 1 TB; 70 failed in numpy's words
        with pytest.raises(ValueError, match="2\\^9 to 2\\^36"):
            TranspositionTable(bits)
    with pytest.raises(TypeError, match="table must be a TranspositionTable"):
        solve(np.array([[1, 2], [1, 2]]), table=np.zeros(512, np.uint64))
    with pytest.raises(TypeError, match="checkpoint must be a file path"):
        solve(np.array([[1, 2], [1, 2]]), checkpoint=5)


def test_a_growing_table_keeps_every_entry():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**64, size=200, dtype=np.uint64)
    table = TranspositionTable(10, max_bits=14)
    stored = {}
    for bound, key in enumerate(keys):
        storage.table_store(table.entries, key, bound + 1)
    for key in keys:  # 200 keys in 256 buckets of 4: nearly all are kept
        if storage.table_bound(table.entries, key):
            stored[int(key)] = storage.table_bound(table.entries, key)
    assert len(stored) > 190
    table.reserve(300)  # 1200 entries wanted: 2^11
    assert table.bits == 11
    table.reserve(10**6)  # capped at max_bits
    assert table.bits == 14
    for key, bound in stored.items():
        assert storage.table_bound(table.entries, np.uint64(key)) == bound
    fixed = TranspositionTable(10)
    fixed.reserve(10**6)
    assert fixed.bits == 10


def test_solver_rejects_bad_input():
    with pytest.raises(ValueError, match="at most 64 cells"):
        solve(np.ones((9, 8), int))
    with pytest.raises(ValueError, match="colors=2"):
        solve(np.full((2, 2), 3), colors=2)
    assert solve(np.zeros((3, 2), int)).length == 0


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------


def test_cli_solves_each_line_names_bad_ones_and_resumes(tmp_path, boards_dir, capsys):
    lines = (boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[:6]
    lines.insert(4, "1234x" + "1" * 27)
    source = tmp_path / "boards.txt"
    source.write_text("\n".join(lines) + "\n")
    out = tmp_path / "solutions.jsonl"
    assert solve_main([str(source), "--out", str(out), "--jobs", "2"]) == 1
    assert "line 5:" in capsys.readouterr().err
    records = sorted((json.loads(line) for line in out.read_text().splitlines()), key=lambda r: r["line"])  # as they ended
    assert [r["line"] for r in records] == [3, 4, 5, 6, 7]
    assert "'x' at position 4" in records[2]["error"]
    for record, line in zip([r for r in records if "error" not in r], [lines[2], lines[3], lines[5], lines[6]]):
        assert record["optimal"] and record["length"] == int(line.split()[1])
    out.write_text("".join(json.dumps(record) + "\n" for record in records))  # in line order, for what follows
    # A torn last line is dropped and solved again; finished lines are not redone.
    out.write_text(out.read_text()[:-20])
    proven_file = tmp_path / "proven.txt"
    # The bad line is tried again (an error may come from a flag or a limit) and fails again: status 1.
    assert solve_main([str(source), "--out", str(out), "--jobs", "1", "--board-file", str(proven_file)]) == 1
    again = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["line"] for r in again] == [3, 4, 5, 6, 5, 7]
    # The board file holds the proven boards (not the broken line) and reads back as one.
    written = jaxdust.read_board_file(proven_file)
    expected = [line.split() for line in (lines[2], lines[3], lines[5], lines[6])]
    assert [(jaxdust.board_to_text(r.board), r.values[-1]) for r in written] == [(b, int(n)) for b, n in expected]


def test_board_file_rewrites_proven_boards_of_its_own_boards_only(boards_dir):
    """The documented command rewrites the shipped 8x6 set from the eval file's first
    boards; the same run given the 6x6 set would lose it (it was replaced, silently)."""
    lines = (boards_dir / "eval_8x6x5.txt").read_text().splitlines()[:102]
    jobs = [(number, fields[0], width, height) for number, fields, width, height in board_lines(lines)]
    solver_cli._require_own_proven_boards(str(boards_dir / "optimal_8x6x5.txt"), jobs, "dust", "standard input")
    with pytest.raises(ValueError, match="optimal_6x6x5.txt holds proven boards that are not among those of "
                                         r"standard input solved now \(under rules dust, at their size; the first on its line 3\)"):
        solver_cli._require_own_proven_boards(str(boards_dir / "optimal_6x6x5.txt"), jobs, "dust", "standard input")
    with pytest.raises(ValueError, match="optimal_8x6x5.txt holds proven boards .*under rules former"):
        solver_cli._require_own_proven_boards(str(boards_dir / "optimal_8x6x5.txt"), jobs, "former", "standard input")


def test_board_file_is_not_written_without_the_boards_it_lists(tmp_path, boards_dir):
    """A new --out, or limits that stopped a proof, proved fewer of the input's boards than
    the board file listed: it was rewritten with those only."""
    source = tmp_path / "boards.txt"
    source.write_text("\n".join((boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[:4]) + "\n")
    proven_file = tmp_path / "proven.txt"
    assert solve_main([str(source), "--out", str(tmp_path / "a.jsonl"), "--jobs", "1",
                       "--board-file", str(proven_file)]) == 0
    listed = proven_file.read_text()
    assert len(jaxdust.read_board_file(proven_file)) == 2
    with pytest.raises(SystemExit, match=r"--board-file .*proven.txt lists 1 proven board that --out does not "
                                         r"prove \(the first on its line 4\), which it would lose: not written"):
        solve_main([str(source), "--out", str(tmp_path / "b.jsonl"), "--jobs", "1", "--lines", "3",
                    "--board-file", str(proven_file)])
    assert proven_file.read_text() == listed
    assert solve_main([str(source), "--out", str(tmp_path / "a.jsonl"), "--jobs", "1", "--lines", "3",
                       "--board-file", str(proven_file)]) == 0  # the log that proved them: listed again
    assert proven_file.read_text() == listed


def test_out_dev_stdout_redirected_to_a_log_is_written_to_never_resumed_from(tmp_path, boards_dir):
    """/dev/stdout redirected to a regular file stats as that file: it was read back as a
    run to resume (a second run into the same log printed nothing) and locked."""
    source = tmp_path / "boards.txt"
    source.write_text("\n".join((boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[:3]) + "\n")
    log = tmp_path / "log.jsonl"
    command = [sys.executable, "-m", "jaxdust.solver", str(source), "--out", "/dev/stdout", "--jobs", "1"]
    for _ in range(2):
        with open(log, "ab") as handle:
            subprocess.run(command, stdout=handle, stderr=subprocess.PIPE, check=True, timeout=600, cwd=ROOT)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["line"], r["optimal"]) for r in records] == [(3, True), (3, True)]
    with open(log, "ab") as handle:
        refused = subprocess.run([*command, "--board-file", str(tmp_path / "proven.txt")], stdout=handle,
                                 stderr=subprocess.PIPE, text=True, timeout=600, cwd=ROOT)
    assert refused.returncode == 2 and "/dev/stdout is a pipe, a device or a descriptor's name" in refused.stderr


def test_cli_with_no_proof_to_write_says_so_under_the_name_it_was_started_as(tmp_path, boards_dir, monkeypatch):
    source = tmp_path / "hard.txt"
    source.write_text(jaxdust.board_to_text(jaxdust.read_board_file(boards_dir / "eval_8x6x5.txt")[0].board) + "\n")
    monkeypatch.setattr(sys, "argv", ["/venv/bin/jaxdust-solve"])
    with pytest.raises(SystemExit, match="^jaxdust-solve: error: no board was proven optimal; --board-file not written"):
        solve_main([str(source), "--node-limit", "1", "--out", str(tmp_path / "s.jsonl"), "--jobs", "1",
                    "--board-file", str(tmp_path / "proven.txt")])
    assert not (tmp_path / "proven.txt").exists()


def test_no_answer_within_the_limits_names_the_clicks_proven_and_the_command_names_its_flag(tmp_path, boards_dir):
    """With no first beam (``beam_width=0``) a limit can end the proof before any solution:
    the error says the clicks the search proved the board needs (at most its optimum), and
    the command's line names ``--beam-width``, not ``solve``'s parameter."""
    board = jaxdust.read_board_file(boards_dir / "optimal_8x4x5.txt")[0]
    expected = r"within the limits \(it takes at least (\d+) clicks\); use beam_width > 0"
    with pytest.raises(TimeoutError, match=expected) as raised:
        solve(board.board, node_limit=1, beam_width=0)
    proven = int(re.search(r"at least (\d+) clicks", str(raised.value)).group(1))
    assert 0 < proven <= board.values[0]
    source, out = tmp_path / "board.txt", tmp_path / "log.jsonl"
    source.write_text(jaxdust.board_to_text(board.board) + "\n")
    assert solve_main([str(source), "--beam-width", "0", "--node-limit", "1", "--out", str(out), "--jobs", "1",
                       "--width", "8"]) == 1
    error = json.loads(out.read_text())["error"]
    assert error == f"no solution found within the limits (it takes at least {proven} clicks); use a --beam-width " \
                    "above 0 for a first answer"


def test_cli_holds_boards_to_their_headers_colours(tmp_path, capsys):
    """``colors=`` in a board file's header caps its boards' colours, for the solver's
    command as for ``read_board_file`` (which the command once read around)."""
    source = tmp_path / "capped.txt"
    source.write_text("# width=4 height=3 colors=2\n123412341234\n121212121212\n")
    out = tmp_path / "log.jsonl"
    assert solve_main([str(source), "--out", str(out), "--jobs", "1"]) == 1
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[0]["error"] == "the board holds colour 4; the header says colors=2"
    assert records[1]["optimal"]
    with pytest.raises(ValueError, match="the header says colors=2"):
        jaxdust.read_board_file(source)


def test_cli_tries_errors_again_and_refuses_results_of_another_shape(tmp_path, boards_dir, capsys):
    """A line whose record is an error (here a wrong --width) is solved on the next run; a
    board's digits read at another shape (a header added, --width given) are another board,
    so the earlier results are refused rather than reused."""
    lines = [line for line in (boards_dir / "optimal_8x6x5.txt").read_text().splitlines() if not line.startswith("#")]
    source = tmp_path / "bare.txt"  # no header: 48 digits read as 8x6
    source.write_text("\n".join(line.split()[0] for line in lines[:2]) + "\n")
    out = tmp_path / "log.jsonl"
    assert solve_main([str(source), "--out", str(out), "--width", "7", "--jobs", "1"]) == 1  # 48 digits: no 7xN
    assert all("error" in json.loads(line) for line in out.read_text().splitlines())
    assert solve_main([str(source), "--out", str(out), "--jobs", "1"]) == 0
    solved = [json.loads(line) for line in out.read_text().splitlines()][2:]
    assert [(r["width"], r["height"], r["length"]) for r in solved] == [(8, 6, int(line.split()[1])) for line in lines[:2]]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        solve_main([str(source), "--out", str(out), "--width", "6", "--height", "8", "--jobs", "1"])
    assert "solved line 1's board at 8x6, it is read at 6x8 now" in capsys.readouterr().err


def _wasted_last(record: dict) -> dict:
    """``record`` with its last click moved to a cell empty by then: as many clicks, one wasted."""
    board = jaxdust.parse_board(record["board"], record["width"], record["height"])
    before, _ = jaxdust.replay(board, record["clicks"][:-1])
    x, y = map(int, np.argwhere(np.asarray(before) == 0)[0])
    return {**record, "clicks": [*record["clicks"][:-1], [x, y]]}


@pytest.mark.parametrize("edit, words", [
    (lambda r: {**r, "length": r["length"] - 1, "lower_bound": r["length"] - 1}, "where its length is"),
    (lambda r: {**r, "length": r["length"] + 1, "lower_bound": r["length"] + 1}, "its clicks take "),  # claims more than it holds
    (lambda r: {**r, "clicks": r["clicks"][:-1]}, "its clicks do not clear the board"),
    (_wasted_last, "its clicks do not clear the board"),  # the same count, the board not cleared
    (lambda r: {**r, "optimal": not r["optimal"]}, "disagree"),
    (lambda r: {**r, "lower_bound": r["length"] + 1, "optimal": False}, "disagree"),  # a bound above the length
    (lambda r: {**r, "lower_bound": -1, "optimal": False}, "disagree"),
    (lambda r: {**r, "clicks": "[1, 2]"}, "its result cannot be read"),
    (lambda r: {**r, "clicks": [1, 2]}, "its result cannot be read"),  # numbers, not pairs: a TypeError
    (lambda r: {k: v for k, v in r.items() if k != "lower_bound"}, "its result cannot be read"),
    (lambda r: {k: v for k, v in r.items() if k != "length"}, "its result cannot be read"),  # was a KeyError
    (lambda r: {**r, "length": float("inf")}, "its result cannot be read"),  # Infinity: was an OverflowError
    (lambda r: {**r, "length": r["length"] + 0.5}, "its result cannot be read"),  # was read as its whole part
    (lambda r: {**r, "lower_bound": str(r["lower_bound"])}, "its result cannot be read"),
])
def test_cli_refuses_to_resume_a_result_line_edited_by_hand(tmp_path, boards_dir, capsys, edit, words):
    """A result line was taken as it stood: one edited to a shorter length was skipped on
    resume and listed by --board-file as that board's optimum. Each line is replayed."""
    lines = (boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[:4]
    source = tmp_path / "boards.txt"
    source.write_text("\n".join(lines) + "\n")
    out, proven_file = tmp_path / "solutions.jsonl", tmp_path / "proven.txt"
    assert solve_main([str(source), "--out", str(out), "--jobs", "1"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    out.write_text(json.dumps(edit(records[0])) + "\n" + json.dumps(records[1]) + "\n")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        solve_main([str(source), "--out", str(out), "--jobs", "1", "--board-file", str(proven_file)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and f"solutions.jsonl:1 (line {records[0]['line']}): its " in err, err
    assert words in err, err
    assert "edited by hand" in err and not proven_file.exists()
    if edit(records[0]).get("optimal") and "length" in edit(records[0]):  # it claims an optimum
        # --lines naming the other board only: --board-file would still list the edited one.
        with pytest.raises(SystemExit) as exit_info:
            solve_main([str(source), "--out", str(out), "--jobs", "1", "--lines", str(records[1]["line"]),
                        "--board-file", str(proven_file)])
        assert f"--out's result for line {records[0]['line']}: its" in str(exit_info.value.code)
        assert "edited by hand" in str(exit_info.value.code) and not proven_file.exists()


def test_board_file_keeps_the_declared_colours_and_reads_back_for_an_empty_board(tmp_path):
    """Its header's colors= was the proven boards' largest digit: a cap lowered without a
    word, and colors=0 (which no reader takes) for a file of empty boards."""
    source, out, proven_file = tmp_path / "boards.txt", tmp_path / "out.jsonl", tmp_path / "proven.txt"
    source.write_text("# width=2 height=2 colors=4\n1122\n")
    assert solve_main([str(source), "--out", str(out), "--jobs", "1", "--board-file", str(proven_file)]) == 0
    assert proven_file.read_text().startswith("# width=2 height=2 colors=4;")
    source.write_text("# width=2 height=2\n0000\n")
    out.unlink()
    with pytest.raises(SystemExit):  # other boards than the file's: the proven 1122 would be lost
        solve_main([str(source), "--out", str(out), "--jobs", "1", "--board-file", str(proven_file)])
    proven_file.unlink()
    assert solve_main([str(source), "--out", str(out), "--jobs", "1", "--board-file", str(proven_file)]) == 0
    assert proven_file.read_text().startswith("# width=2 height=2 colors=1;")
    [record] = jaxdust.read_board_file(proven_file)
    assert not record.board.any() and record.values[-1] == 0


def test_cli_retries_only_the_unproven_boards_and_their_last_line_counts(tmp_path, boards_dir):
    lines = (boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[:8]
    source = tmp_path / "boards.txt"
    source.write_text("\n".join(lines) + "\n")
    optimum = {number: int(line.split()[1]) for number, line in enumerate(lines[2:], start=3)}
    out, proven_file = tmp_path / "solutions.jsonl", tmp_path / "proven.txt"
    tight = [str(source), "--out", str(out), "--jobs", "1", "--beam-width", "1", "--node-limit", "5000"]
    assert solve_main(tight) == 0
    first = [json.loads(line) for line in out.read_text().splitlines()]
    unproven = {r["line"] for r in first if not r["optimal"]}
    assert unproven and len(unproven) < len(first)  # the limit leaves some boards open, not all
    assert solve_main(tight) == 0 and [json.loads(x) for x in out.read_text().splitlines()] == first  # resumed
    # One board retried on its own (--lines) at other settings gets a line; a proven board
    # named with it is not redone.
    one, proven_line = max(unproven), min(set(optimum) - unproven)
    assert solve_main([*tight[:-1], "500", "--beam-width", "64", "--retry-unproven",
                       "--lines", f"{proven_line},{one}"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["line"] for r in records[len(first):]] == [one]
    assert solve_main([str(source), "--out", str(out), "--jobs", "1", "--retry-unproven",
                       "--board-file", str(proven_file)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[: len(first)] == first  # the earlier lines stay, as history
    still_open = unproven - ({one} if records[len(first)]["optimal"] else set())
    assert sorted(r["line"] for r in records[len(first) + 1:]) == sorted(still_open)  # proven boards are not redone
    last = {r["line"]: r for r in records}
    assert all(r["optimal"] and r["length"] == optimum[n] for n, r in last.items())
    written = jaxdust.read_board_file(proven_file)  # each board once, in input order
    assert [(jaxdust.board_to_text(r.board), r.values[-1]) for r in written] == [
        (line.split()[0], int(line.split()[1])) for line in lines[2:]]


def test_a_rerun_keeps_a_retrys_saved_proof_and_a_failed_retry_hides_no_result(tmp_path, boards_dir, capsys):
    """The first pass's command run again (a script rerun after the retry pass was killed)
    deleted the retry's saved proofs of the unproven boards; a retry that failed (limits too
    small to find any solution) hid the boards' earlier results from every later run, and
    its errors made a run of other --lines exit 1 under a tally of 0 errors."""
    lines = (boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[:8]
    source = tmp_path / "boards.txt"
    source.write_text("\n".join(lines) + "\n")
    out, directory = tmp_path / "solutions.jsonl", tmp_path / "proofs"
    tight = [str(source), "--out", str(out), "--jobs", "1", "--beam-width", "1", "--node-limit", "5000"]
    assert solve_main(tight) == 0
    first = {r["line"]: r for r in map(json.loads, out.read_text().splitlines())}
    unproven = sorted(line for line, r in first.items() if not r["optimal"])
    proven = sorted(set(first) - set(unproven))
    assert unproven and proven
    directory.mkdir()
    for line in first:  # a retry's saves in progress, and a proven board's leftover
        (directory / f"line-{line}.npz").write_bytes(b"saved")
    # A killed save's temporary files, of both namings, go; the folder's other files, named
    # alike but not the saves', stay (it may be any folder of the user's).
    killed = [f"{files.TEMPORARY_PREFIX}a1b2c3d4{files._temporary_suffix(str(directory / 'line-3.npz'))}",
              f"{files.TEMPORARY_PREFIX}a1b2c3d4line-12.npz"]
    users = [f"{files.TEMPORARY_PREFIX}notes.txt", f"{files.TEMPORARY_PREFIX}a1b2c3d4line-3.npz.bak"]
    for name in killed + users:
        (directory / name).write_bytes(b"cut")
    (directory / f"{files.TEMPORARY_PREFIX}folder").mkdir()  # was unlinked: IsADirectoryError
    assert solve_main([*tight, "--checkpoint-dir", str(directory)]) == 0
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [".lock", *(f"line-{n}.npz" for n in unproven), *users, f"{files.TEMPORARY_PREFIX}folder"])
    for name in users:
        (directory / name).unlink()
    (directory / f"{files.TEMPORARY_PREFIX}folder").rmdir()
    for saved in directory.glob("line-*.npz"):
        saved.unlink()
    capsys.readouterr()
    assert solve_main([*tight[:-3], "0", "--node-limit", "5", "--retry-unproven"]) == 1  # no solution found
    failed = [r for r in map(json.loads, out.read_text().splitlines()) if "error" in r]
    assert sorted(r["line"] for r in failed) == unproven
    capsys.readouterr()
    size = out.stat().st_size
    assert solve_main(tight) == 0 and out.stat().st_size == size  # the earlier results stand: nothing redone
    assert f"{len(proven)} proven optimal, {len(unproven)} not proven, 0 errors" in capsys.readouterr().err
    assert solve_main([*tight, "--lines", str(proven[0])]) == 0
    # A device or pipe as --out is written to, never read back: nothing there to resume or list.
    with pytest.raises(SystemExit):
        solve_main([str(source), "--out", "/dev/null", "--board-file", str(tmp_path / "proven.txt")])
    assert "--board-file needs --out FILE, a regular file: /dev/null is a pipe, a device or a descriptor's name" in capsys.readouterr().err
    assert solve_main([str(source), "--out", "/dev/null", "--jobs", "1", "--node-limit", "100", "--lines", "3"]) == 0


# Boards whose proofs take ~7e4 positions: with a save every 5000, a dozen slices.
CHECKPOINTED = {"dust": ("35245411345442111431135453243145", 8, 4), "former": ("232321131212314244113232142433442341", 6, 6)}


class Killed(BaseException):
    pass


@pytest.mark.parametrize("rules", ["dust", "former"])
def test_checkpoint_slices_too_short_to_store_anything_still_end_the_proof(tmp_path, rules):
    """A slice goes back from the root to where the last stopped over what the table stored:
    one too short to store anything left the next the same search, and the proof never
    ended. The node limit stands in for the hang."""
    board = jaxdust.parse_board("3232333312131112", 4, 4, rules)
    expected = solve(board, rules=rules, beam_width=0)
    for positions in (1, 2, 3):
        path = tmp_path / f"{positions}.npz"
        sliced = solve(board, rules=rules, beam_width=0, checkpoint=path, checkpoint_positions=positions,
                       node_limit=1000)
        assert sliced.optimal and sliced.length == expected.length, (positions, sliced)
        final, clicks = jaxdust.replay(board, sliced.clicks, rules=rules)
        assert int(final.max()) == 0 and clicks == sliced.length
        assert not path.exists()


@pytest.mark.parametrize("rules", ["dust", "former"])
def test_a_killed_proof_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch, rules):
    text, width, height = CHECKPOINTED[rules]
    board = jaxdust.parse_board(text, width, height, rules)
    plain = solve(board, rules=rules)
    whole = solve(board, rules=rules, checkpoint=tmp_path / "whole.npz", checkpoint_positions=5000)
    assert whole.optimal and (whole.length, whole.lower_bound) == (plain.length, plain.lower_bound)
    assert plain.nodes <= whole.nodes < 1.05 * plain.nodes  # slicing re-enters each search: a few positions
    assert not (tmp_path / "whole.npz").exists()  # proven: nothing left to resume

    saves = []
    save = progress.save

    def dies_at_the_fourth_save(*args):
        saves.append(args)
        if len(saves) == 4:
            raise Killed  # before writing: the file holds the third save
        save(*args)

    path = tmp_path / "killed.npz"
    monkeypatch.setattr(progress, "save", dies_at_the_fourth_save)
    with pytest.raises(Killed):
        solve(board, rules=rules, checkpoint=path, checkpoint_positions=5000)
    monkeypatch.setattr(progress, "save", save)
    saved = progress.load(path, board, rules)
    assert saved.budget and saved.nodes + saved.partial >= 3 * 5000  # mid-search, three slices in
    assert saved.half_positions > 0  # the half-game searches' count, which a node limit caps, goes on from here
    # A save killed while writing left its temporary file, as large as the table, for good;
    # the resume removes its own (another file's, here "the-killed.npz"'s, is not its own).
    leftover, other = (tmp_path / f"{files.TEMPORARY_PREFIX}a1b2c3d4{files._temporary_suffix(str(tmp_path / name))}"
                       for name in ("killed.npz", "the-killed.npz"))
    leftover.write_bytes(b"cut")
    other.write_bytes(b"in use")
    resumed = solve(board, rules=rules, checkpoint=path, checkpoint_positions=5000)
    assert (resumed.clicks, resumed.length, resumed.lower_bound, resumed.nodes) == (
        whole.clicks, whole.length, whole.lower_bound, whole.nodes)
    assert resumed.optimal and not path.exists()
    assert not leftover.exists() and other.exists()

    # A limit stops the proof and saves it; larger limits go on from there.
    limited = solve(board, rules=rules, checkpoint=path, checkpoint_positions=5000, node_limit=plain.nodes // 3)
    assert not limited.optimal and limited.nodes == plain.nodes // 3
    assert progress.load(path, board, rules).bound == limited.lower_bound
    again = solve(board, rules=rules, checkpoint=path, checkpoint_positions=5000, node_limit=plain.nodes // 3)
    assert (again.nodes, again.lower_bound) == (limited.nodes, limited.lower_bound)  # nothing left under it
    finished = solve(board, rules=rules, checkpoint=path, checkpoint_positions=5000)
    assert finished.optimal and finished.length == plain.length and finished.nodes > limited.nodes
    assert not path.exists()
    assert not jaxdust.replay(board, finished.clicks, rules=rules)[0].any()  # the line clears the board


def test_a_proof_saved_without_a_first_beam_runs_the_one_its_resume_asks_for(tmp_path):
    """Saved under ``beam_width=0`` (no line yet), a resume with a beam searched on without
    one: under a limit it ended without an answer, telling the caller to give a beam, as it
    had, and the CLI's retry with a wider beam wrote the same error line again and again."""
    text, width, height = CHECKPOINTED["dust"]
    board = jaxdust.parse_board(text, width, height)
    plain = solve(board)
    path = tmp_path / "proof.npz"
    with pytest.raises(TimeoutError, match="use beam_width > 0"):
        solve(board, beam_width=0, node_limit=2000, checkpoint=path, checkpoint_positions=500)
    assert progress.load(path, board, "dust").best_clicks == []
    limited = solve(board, beam_width=64, node_limit=2001, checkpoint=path, checkpoint_positions=500)
    assert limited.length >= plain.length and not jaxdust.replay(board, limited.clicks)[0].any()
    finished = solve(board, beam_width=64, checkpoint=path, checkpoint_positions=500)
    assert finished.optimal and finished.length == plain.length and not path.exists()


def test_a_checkpoint_of_another_board_or_no_proof_is_refused(tmp_path):
    text, width, height = CHECKPOINTED["dust"]
    board = np.asarray(jaxdust.parse_board(text, width, height))
    path = tmp_path / "proof.npz"
    solve(board, checkpoint=path, node_limit=1000)
    other = board.copy()
    other[0, 0] = 5 if other[0, 0] != 5 else 4
    for wrong, rules in ((other, "dust"), (board, "former")):
        with pytest.raises(ValueError, match="proof.npz holds the proof of another board or rule set"):
            solve(wrong, rules=rules, checkpoint=path)
    (tmp_path / "junk.npz").write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="junk.npz is not a saved proof"):
        solve(board, checkpoint=tmp_path / "junk.npz")
    (tmp_path / "boards.txt").write_text(text + "\n")  # once NumPy's advice to unpickle it
    with pytest.raises(ValueError, match=r"boards.txt is not a saved proof \(not a .npz archive\)$"):
        solve(board, checkpoint=tmp_path / "boards.txt")
    (tmp_path / "empty.npz").write_bytes(b"")  # an EOFError from numpy, once a traceback
    with pytest.raises(ValueError, match="empty.npz is not a saved proof"):
        solve(board, checkpoint=tmp_path / "empty.npz")
    np.savez(tmp_path / "fieldless.npz", meta=np.array(json.dumps({"format": progress.FORMAT})),
             board=board, entries=np.zeros(4, np.uint64), halves=np.zeros(4, np.uint64))
    with pytest.raises(ValueError, match=r"fieldless.npz is not a saved proof \(KeyError"):
        solve(board, checkpoint=tmp_path / "fieldless.npz")
    # A header that claims terabytes (numpy allocates before it reads): once its MemoryError.
    header = "{'descr': '<u8', 'fortran_order': False, 'shape': (2199023255552,), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with zipfile.ZipFile(tmp_path / "claims.npz", "w") as archive:
        archive.writestr("entries.npy", b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
    with pytest.raises(ValueError, match=r"claims.npz is not a saved proof \(.*claim more bytes than the file holds"):
        solve(board, checkpoint=tmp_path / "claims.npz")
    with pytest.raises(ValueError, match="checkpoint_positions must be a positive integer"):
        solve(board, checkpoint=path, checkpoint_positions=0)
    assert path.exists()  # refusals leave the proof as it was
    os.mkfifo(tmp_path / "fifo.npz")  # once read by zipfile, which waited for a writer forever
    with pytest.raises(ValueError, match=r"fifo.npz is not a saved proof \(not a regular file\)"):
        solve(board, checkpoint=tmp_path / "fifo.npz")
    # Once found at the first save, after the search, whose result was lost.
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match=r"checkpoint .*file/proof.npz: cannot create .*file is a file"):
        solve(board, checkpoint=tmp_path / "file" / "proof.npz", time_limit=60)
    # Saved where the link points: a link into a folder that takes no files (even root's /sys)
    # is refused, and a link to a file in a folder that does is taken.
    os.symlink("/sys/proof.npz", tmp_path / "into_sys.npz")
    if os.path.isdir("/sys"):
        with pytest.raises(ValueError, match=r"into_sys.npz: cannot write into /sys/proof.npz|takes no new files"):
            solve(board, checkpoint=tmp_path / "into_sys.npz", time_limit=60)
    os.symlink(path, tmp_path / "to_proof.npz")
    assert solve(board, checkpoint=tmp_path / "to_proof.npz", node_limit=2000).length > 0
    assert path.exists() and os.path.islink(tmp_path / "to_proof.npz")


def _edited_checkpoint(source, target, meta=None, **arrays):
    """A copy of the proof at ``source`` with fields of its meta and its arrays replaced."""
    with np.load(source) as data:
        saved = {name: data[name] for name in data.files}
    saved["meta"] = np.array(json.dumps({**json.loads(str(saved["meta"])), **(meta or {})}))
    np.savez(target, **{**saved, **arrays})


def test_a_checkpoint_of_an_older_format_or_with_impossible_contents_is_refused(tmp_path):
    """Checkpoints before 0.2.31 may hold unsound table entries (a wrong optimum, proven);
    tables of the wrong shape crashed the process in numba (2 slots: a segmentation fault);
    an edited bound or best line was reported as a proof (a line of 3 clicks proven
    optimal for an 11-click board)."""
    text, width, height = CHECKPOINTED["dust"]
    board = np.asarray(jaxdust.parse_board(text, width, height))
    path = tmp_path / "proof.npz"
    solve(board, checkpoint=path, node_limit=1000)
    with np.load(path) as data:
        saved = json.loads(str(data["meta"]))
        entries = data["entries"]
    cases = [({"format": 1}, {}, "has format 1, this version reads 2 (saved by jaxdust 0.2.30 or older"),
             ({}, {"entries": np.zeros(2, np.uint64), "halves": np.zeros(1, np.uint64)}, "tables of 2 and 1 entries"),
             ({}, {"halves": np.zeros(entries.size, np.uint64)}, f"tables of {entries.size} and {entries.size} entries"),
             ({"budget": saved["best_length"] + 3}, {}, f"a search of {saved['best_length'] + 3} clicks between"),
             ({}, {"entries": entries.reshape(2, -1)}, "entries are not a power of two"),
             ({}, {"entries": entries[:-1]}, "entries are not a power of two"),
             ({"bound": saved["best_length"] + 1}, {},
              f"(bound {saved['best_length'] + 1} and best length {saved['best_length']} on"),
             ({"best_length": saved["best_length"] - 1}, {}, f"a best length of {saved['best_length'] - 1} with"),
             ({"best_clicks": [[99, 0]] * saved["best_length"]}, {}, "a click off the board"),
             ({"nodes": -3}, {}, "a count that is not a whole number"),
             # What solve never saves: a finished proof, a line that does not clear, odd fields.
             ({"bound": 3, "best_length": 3, "budget": 0, "partial": 0, "best_clicks": [[0, 0]] * 3}, {},
              "(bound 3 and best length 3 on"),
             ({"bound": 2, "best_length": 3, "budget": 0, "partial": 0, "best_clicks": [[0, 0]] * 3}, {},
              "(its best line of 3 clicks does not clear the board)"),
             ({"seconds": "abc"}, {}, "('abc' seconds)"),
             ({"seconds": float("nan")}, {}, "(nan seconds)"),
             ({"widened": 2}, {}, "(widened 2)")]
    for index, (meta, arrays, message) in enumerate(cases):
        edited = tmp_path / f"edited-{index}.npz"
        _edited_checkpoint(path, edited, meta, **arrays)
        with pytest.raises(ValueError, match=re.escape(message)):
            solve(board, checkpoint=edited)
    # Without its halves table, its size was allocated as saved: 256 TiB, a MemoryError.
    with np.load(path) as data:
        halfless = {name: data[name] for name in data.files if name != "halves"}
    for size in (2**45, -1, entries.size, entries.size // 2):
        halfless["meta"] = np.array(json.dumps({**saved, "halves_size": size}))
        np.savez(tmp_path / "halfless.npz", **halfless)
        if size == entries.size // 2:  # an empty halves table, as it may be saved
            assert solve(board, checkpoint=tmp_path / "halfless.npz").optimal
            continue
        with pytest.raises(ValueError, match=re.escape(f"halfless.npz is not a saved proof (ValueError: halves_size "
                                                       f"{size} is not half of {entries.size} entries)")):
            solve(board, checkpoint=tmp_path / "halfless.npz")
    assert solve(board, checkpoint=path).optimal  # the file as saved still resumes


def test_a_finished_proof_whose_checkpoint_cannot_be_removed_is_returned(tmp_path, monkeypatch):
    """A read-only folder: the proof, complete, ended in an OSError from removing its file."""
    text, width, height = CHECKPOINTED["dust"]
    board = np.asarray(jaxdust.parse_board(text, width, height))
    path = tmp_path / "proof.npz"
    solve(board, checkpoint=path, node_limit=1000)

    def read_only(name, *args, **kwargs):
        raise OSError(30, "Read-only file system", name)

    monkeypatch.setattr(api.os, "unlink", read_only)
    with pytest.warns(UserWarning, match=r"the proof is complete, but its checkpoint .*proof.npz could not be "
                                         r"removed \(Read-only file system\)"):
        found = solve(board, checkpoint=path)
    assert found.optimal and path.exists()


def test_cli_resumes_saved_proofs_and_removes_each_once_its_line_is_written(tmp_path, boards_dir):
    lines = (boards_dir / "optimal_8x4x5.txt").read_text().splitlines()
    text = CHECKPOINTED["dust"][0]
    lines = lines[:2] + [f"{text} 11"] + lines[3:5]  # lines 3-5: the checkpointed board and two more
    source = tmp_path / "boards.txt"
    source.write_text("\n".join(lines) + "\n")
    board = jaxdust.parse_board(text, 8, 4)
    directory = tmp_path / "proofs"
    directory.mkdir()
    # Line 3 was stopped part way (as by a killed run); line 4's file is another board's proof.
    solve(board, checkpoint=directory / "line-3.npz", checkpoint_positions=5000, node_limit=20000)
    for copy in (tmp_path / "copy.npz", directory / "line-4.npz"):
        copy.write_bytes((directory / "line-3.npz").read_bytes())
    expected = solve(board, checkpoint=tmp_path / "copy.npz", checkpoint_positions=5000)
    (directory / ".tmp-a1b2c3d4line-5.npz").write_bytes(b"PK")  # a save a killed run left half written
    out = tmp_path / "solutions.jsonl"
    assert solve_main([str(source), "--out", str(out), "--jobs", "1", "--checkpoint-dir", str(directory),
                       "--checkpoint-positions", "5000"]) == 1
    records = {r["line"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert (records[3]["nodes"], records[3]["clicks"]) == (expected.nodes, [list(c) for c in expected.clicks])
    assert records[3]["optimal"] and records[5]["optimal"]
    assert "line-4.npz holds the proof of another board" in records[4]["error"]
    assert sorted(p.name for p in directory.iterdir()) == [".lock", "line-4.npz"]  # the others' files are gone


def test_work_in_processes_comes_back_in_order_and_a_dead_process_is_an_error_not_a_hang():
    assert list(ordered_map(workers.square_or_die_on_three, [5, 1, 4, 2], 2)) == [25, 1, 16, 4]
    assert list(ordered_map(abs, [-2, 1], 1)) == [2, 1]  # one job: in this process
    results = []
    with pytest.raises(WorkerDied, match="a worker process died, by SIGKILL \\(killed, or out of memory"):
        for result in ordered_map(workers.square_or_die_on_three, [1, 2, 3, 4, 5, 6], 2):
            results.append(result)
    assert results == [1, 4][: len(results)]  # the results before it came in order
    # How it ended is named: a crash in compiled code wants another remedy than a lack of memory.
    with pytest.raises(WorkerDied, match="a worker process died, with exit code 3 \\(it exited by itself: in a script"):
        list(completed_map(workers.square_or_exit_on_three, [1, 2, 3, 4, 5, 6], 2))
    with pytest.raises(WorkerDied, match="a worker process died, by SIGSEGV \\(a crash in compiled code"):
        list(completed_map(workers.square_or_crash_on_three, [1, 2, 3, 4, 5, 6], 2))


def test_a_dead_worker_reaped_by_the_pool_meanwhile_is_not_named_by_the_survivors_sigterm():
    """The pool's thread reaps the dead worker while its ending is read, which then reads
    as unknown for a moment: the survivors' SIGTERM (the pool's own stop) was named as the
    cause, 3 times in 150 with 4 workers."""
    import types

    from jaxdust.core import processes

    def worker(exitcode, alive=False):
        return types.SimpleNamespace(exitcode=exitcode, join=lambda timeout: None, is_alive=lambda: alive)

    assert processes._endings([worker(-15), worker(None), worker(-15)]) == set()
    assert processes._endings([worker(-15), worker(-9)]) == {-9}
    assert processes._endings([worker(-15), worker(-15)]) == {-15}  # every ending known: SIGTERM it was
    assert processes._endings([worker(-15), worker(None, alive=True)]) == set()
    assert processes._endings([]) == set()
    assert processes._workers(types.SimpleNamespace(_processes=None)) == []
    assert processes._death_message(set()).startswith("a worker process died (killed, or out of memory? Or, in a script")


def test_items_are_handed_out_a_few_a_process_ahead_of_the_results():
    """Every item went to the pool before the first result came back: ~2 KB a pending item
    (20 GB for the data-set maker's 10^7 boards), and seconds a 10^5 items before the first
    result was passed on."""
    from jaxdust.core import processes

    drawn = []

    def items():
        for item in range(1_000):
            drawn.append(item)
            yield -item

    for spread in (ordered_map, completed_map):
        drawn.clear()
        results = spread(abs, items(), 2)
        first = next(results)
        # In order, each result that ends before the first one (a worker slower to start, on a
        # busy machine) frees a place too: at most a hold's worth.
        ahead = 1 if spread is completed_map else 2 * processes.HELD_PER_JOB
        if len(drawn) > 2 * processes.IN_FLIGHT_PER_JOB + ahead:
            results.close()  # its pool's workers end here, not in the next test
            raise AssertionError(f"{spread.__name__}: {len(drawn)} items drawn before the first result")
        results = [first, *results]
        assert sorted(results) == list(range(1_000)) and len(drawn) == 1_000
        assert spread is completed_map or results == list(range(1_000))


def test_ctrl_c_while_the_items_are_handed_out_stops_the_work():
    """Ctrl-C was ignored while every item was handed out (tens of seconds for a million
    boards), not only while the workers started."""
    import os
    import signal

    handed_out = []

    def items():
        for item in range(20_000):
            handed_out.append(item)
            if item == 10:  # the workers have started; items are still being handed out
                os.kill(os.getpid(), signal.SIGINT)
            yield item

    with pytest.raises(KeyboardInterrupt):
        list(ordered_map(abs, items(), 2))
    assert len(handed_out) < 100


def test_every_worker_starts_with_ctrl_c_ignored(monkeypatch, tmp_path):
    """A worker started while Ctrl-C is live prints a traceback of its own on Ctrl-C. When
    items come slowly, a worker that finished one took the next, and the other workers were
    started later, outside the block that ignores Ctrl-C."""
    import signal
    import time
    from concurrent.futures import process

    ignored, spawn = [], process.ProcessPoolExecutor._spawn_process

    def recording(executor):
        ignored.append(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
        return spawn(executor)

    first, second = str(tmp_path / "first"), str(tmp_path / "second")

    def slowly():  # the second item comes once the first worker has done the first: it is idle
        yield first
        deadline = time.monotonic() + 120
        while not os.path.exists(first) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # for the executor to read the result
        yield second

    monkeypatch.setattr(process.ProcessPoolExecutor, "_spawn_process", recording)
    assert list(ordered_map(workers.touch, slowly(), 2)) == [first, second]
    assert ignored == [True, True]


def test_no_items_start_no_workers():
    """A rerun of finished work (a data set, a solver's --out) handed the pool no items: its
    workers, still starting when the process ended, printed tracebacks."""
    script = ("from jaxdust.core.processes import completed_map, ordered_map\n"
              "print(list(ordered_map(abs, [], 2)), list(completed_map(abs, iter(()), 2)), "
              "list(ordered_map(abs, [-1], 2)))\n")
    ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (ended.returncode, ended.stdout, ended.stderr) == (0, "[] [] [1]\n", "")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")
def test_ctrl_c_while_a_pool_off_the_main_thread_starts_leaves_its_workers_alone():
    """A pool started off the main thread (whose handlers only the main thread may set) had
    workers that took a Ctrl-C while they started: each printed a traceback and died, and the
    pool failed with WorkerDied. The main thread here handles the Ctrl-C, so the pool must
    end as if there had been none, at every moment of the workers' start."""
    script = (
        "import os, signal, sys, threading, time\n"
        "from jaxdust.core.processes import ordered_map\n"
        "from tests import workers\n"
        "if __name__ == '__main__':\n"
        "    signal.signal(signal.SIGINT, lambda *_: print('handled'))\n"
        "    thread = threading.Thread(target=lambda: print(list(ordered_map(workers.nap, [0.3] * 4, 2))))\n"
        "    thread.start()\n"
        "    time.sleep(float(sys.argv[1]))\n"
        "    os.killpg(0, signal.SIGINT)  # as a terminal's Ctrl-C: to every process of the group\n"
        "    thread.join()\n")
    for delay in ("0.05", "0.25", "0.6"):  # while the workers import; about when they take items
        ended = subprocess.run([sys.executable, "-c", script, delay], capture_output=True, text=True, timeout=120,
                               cwd=ROOT, start_new_session=True)
        assert (ended.returncode, ended.stderr) == (0, ""), delay
        assert ended.stdout.split() == ["handled", "[0.3,", "0.3,", "0.3,", "0.3]"], delay


def test_a_workers_error_comes_back_as_itself_or_named_not_as_a_death():
    """A FieldError (which could not be unpickled) read as "a worker process died (killed,
    or out of memory?)", the error itself lost."""
    from jaxdust.core.configs import FieldError

    with pytest.raises(FieldError, match="node_limit must be positive, got 0") as error:
        list(ordered_map(workers.raise_a_field_error, [0], 2))
    assert error.value.field == "node_limit"
    with pytest.raises(WorkerDied, match="a worker's result could not be passed back: .*missing 1 required"):
        list(ordered_map(workers.raise_an_unpicklable_error, [0], 2))
    # With items left to hand out (more than the pool is given at once), as well.
    with pytest.raises(WorkerDied, match="a worker's result could not be passed back: .*missing 1 required"):
        list(ordered_map(workers.raise_an_unpicklable_error, [0] * 40, 2))


def test_results_that_ended_before_a_worker_died_are_passed_on_before_its_death():
    """The next item handed to a pool broken by a death was refused at once: the results
    that had ended meanwhile, waiting to be passed on, were lost (the solver's command keeps
    each proof that ends)."""
    import time

    for spread in (ordered_map, completed_map):
        results = []
        with pytest.raises(WorkerDied, match="a worker process died"):
            for result in spread(workers.square_or_die_late_on_three, range(1, 100), 2):
                results.append(result)
                if len(results) == 1:
                    time.sleep(3.0)  # the other items end, and item 3's worker dies, meanwhile
        assert 9 not in results
        if spread is ordered_map:
            assert results == [1, 4]
        else:
            assert {1, 4, 16} <= set(results)


def test_work_in_processes_can_come_back_as_it_ends():
    """``completed_map`` hands over each result when it is done: a slow item first does not
    hold back the ones after it (the solver's command writes each proof as it ends)."""
    results = list(completed_map(workers.nap, [3.0, 0.0, 0.0, 0.0], 2))
    assert sorted(results) == [0.0, 0.0, 0.0, 3.0] and results[-1] == 3.0
    assert list(completed_map(abs, [-2, 1], 1)) == [2, 1]  # one job: in this process, in order


def test_board_file_of_a_file_of_two_sizes_lists_the_size_solved(tmp_path, boards_dir, capsys):
    """--lines picks one size of a file of several for --board-file, as its refusal says;
    the boards of the other size proven by an earlier run into the same --out once made the
    board file two sizes, refused after the solving."""
    small = (boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[2].split()[0]
    square = (boards_dir / "optimal_6x6x5.txt").read_text().splitlines()[2].split()[0]
    source = tmp_path / "boards.txt"
    source.write_text(f"# width=6 height=6 colors=5\n{square}\n# width=8 height=4 colors=5\n{small}\n")
    out, proven_file = tmp_path / "solutions.jsonl", tmp_path / "proven.txt"
    assert solve_main([str(source), "--out", str(out), "--jobs", "1", "--lines", "2"]) == 0
    for line, board, size in ((4, small, (8, 4)), (2, square, (6, 6))):
        proven_file = tmp_path / f"proven-{line}.txt"
        assert solve_main([str(source), "--out", str(out), "--jobs", "1", "--lines", str(line),
                           "--board-file", str(proven_file)]) == 0
        [record] = jaxdust.read_board_file(proven_file)
        assert jaxdust.board_to_text(record.board) == board and record.board.shape == size
    # The other size's file given to this size: it would lose the 8x4 board proven there.
    with pytest.raises(SystemExit):
        solve_main([str(source), "--out", str(out), "--jobs", "1", "--lines", "2",
                    "--board-file", str(tmp_path / "proven-4.txt")])
    assert "proven-4.txt holds proven boards that are not among those of" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # both sizes at once are still refused, before any solving
        solve_main([str(source), "--out", str(out), "--jobs", "1", "--board-file", str(proven_file)])


def test_cli_retries_keep_what_earlier_lines_proved_and_the_board_file_lists_every_line(tmp_path, boards_dir, capsys,
                                                                                      monkeypatch):
    """A retry under weaker limits keeps the board's shorter solution and higher bound (both
    stay true); ``--board-file`` with ``--lines`` still lists every proven board of the
    file; a checkpoint directory serves one run at a time; a board that runs out of memory
    gets an error line."""
    lines = (boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[:6]
    source = tmp_path / "boards.txt"
    source.write_text("\n".join(lines) + "\n")
    out, proven_file = tmp_path / "solutions.jsonl", tmp_path / "proven.txt"
    assert solve_main([str(source), "--out", str(out), "--jobs", "1", "--lines", "3,5-6"]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"3 boards: 3 proven optimal, 0 not proven, 0 errors; lines in {out}")
    board_text, optimum = lines[3].split()
    board, optimum = jaxdust.parse_board(board_text, 8, 4), int(optimum)
    exact = solve(board)
    weak = solve(board, node_limit=1, beam_width=1)
    assert weak.length > optimum or weak.lower_bound < optimum - 1  # the retry alone would say less
    earlier = {"line": 4, "board": board_text, "width": 8, "height": 4, "rules": "dust",
               "clicks": [list(c) for c in exact.clicks], "length": optimum, "lower_bound": optimum - 1,
               "optimal": False, "nodes": 1, "seconds": 0.0}
    with open(out, "a") as handle:
        handle.write(json.dumps(earlier) + "\n")
    assert solve_main([str(source), "--out", str(out), "--jobs", "1", "--retry-unproven", "--lines", "4",
                       "--node-limit", "1", "--beam-width", "1", "--board-file", str(proven_file)]) == 0
    retried = json.loads(out.read_text().splitlines()[-1])
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"1 board: 0 proven optimal, 1 not proven, 0 errors; lines in {out}")
    assert (retried["line"], retried["length"], retried["clicks"]) == (4, optimum, earlier["clicks"])
    assert retried["lower_bound"] == max(optimum - 1, weak.lower_bound) and not retried["optimal"]
    written = jaxdust.read_board_file(proven_file)  # lines 3, 5 and 6, though --lines named 4
    assert [(jaxdust.board_to_text(r.board), r.values[-1]) for r in written] == [
        (line.split()[0], int(line.split()[1])) for line in (lines[2], lines[4], lines[5])]
    # The same --out given another file: its lines there hold other boards, which the board
    # file of this one does not list (nor replaces the first file's proven boards).
    other_lines = (boards_dir / "optimal_8x4x5.txt").read_text().splitlines()
    other = tmp_path / "other-boards.txt"
    other.write_text("\n".join(other_lines[:2] + other_lines[6:12]) + "\n")
    with pytest.raises(SystemExit):
        solve_main([str(other), "--out", str(out), "--jobs", "1", "--lines", "7", "--board-file", str(proven_file)])
    assert "proven.txt holds proven boards that are not among those of" in capsys.readouterr().err
    proven_file = tmp_path / "other-proven.txt"
    assert solve_main([str(other), "--out", str(out), "--jobs", "1", "--lines", "7",
                       "--board-file", str(proven_file)]) == 0
    assert [jaxdust.board_to_text(r.board) for r in jaxdust.read_board_file(proven_file)] == [
        other_lines[10].split()[0]]

    directory = tmp_path / "proofs"
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from jaxdust.core import files; "
                               f"lock = files.lock_directory({str(directory)!r}); print(lock is not None, flush=True); "
                               "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "True"
        capsys.readouterr()
        with pytest.raises(SystemExit):
            solve_main([str(source), "--out", str(tmp_path / "other.jsonl"), "--jobs", "1",
                        "--checkpoint-dir", str(directory)])
        assert f"another solver run is using --checkpoint-dir {directory}" in capsys.readouterr().err
    finally:
        holder.communicate("")
    # Another run writing the same --out: its torn last line is a record in progress, which
    # a second run's resume would cut.
    busy = tmp_path / "busy.jsonl"
    writer = files.open_to_append_alone(busy)
    try:
        writer.write('{"line": 3, "len')
        writer.flush()
        capsys.readouterr()
        with pytest.raises(SystemExit):
            solve_main([str(source), "--out", str(busy), "--jobs", "1"])
        assert f"another solver run is writing --out {busy}" in capsys.readouterr().err
        assert busy.read_text() == '{"line": 3, "len'
    finally:
        writer.close()

    def out_of_memory(*args, **kwargs):
        raise MemoryError
    monkeypatch.setattr(solver_cli, "solve", out_of_memory)
    assert solve_main([str(source), "--out", str(tmp_path / "memory.jsonl"), "--jobs", "1", "--lines", "3"]) == 1
    record = json.loads((tmp_path / "memory.jsonl").read_text())
    assert record["error"].startswith("out of memory (--beam-width None, --table-bits")
    assert "checkpoint" not in record["error"] and "remove" not in record["error"]
    # A saved proof's table is what a resume loads, whatever --table-bits: the message says so.
    (tmp_path / "saved").mkdir()
    (tmp_path / "saved" / "line-3.npz").write_bytes(b"a proof")
    assert solve_main([str(source), "--out", str(tmp_path / "memory2.jsonl"), "--jobs", "1", "--lines", "3",
                       "--checkpoint-dir", str(tmp_path / "saved")]) == 1
    record = json.loads((tmp_path / "memory2.jsonl").read_text())
    assert record["error"].endswith(f"try smaller ones, and remove {tmp_path / 'saved' / 'line-3.npz'}: a resume keeps "
                                    "its table")


def test_a_stopped_run_lets_go_of_its_files_though_its_exception_is_kept(tmp_path, boards_dir, capsys, monkeypatch):
    """A notebook keeps the last exception, and with it the command's frame: a run stopped
    by Ctrl-C must still let go of --out and --checkpoint-dir, or the cell run again to
    resume is refused as "another solver run"."""
    source = tmp_path / "boards.txt"
    source.write_text("\n".join((boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[:4]) + "\n")
    argv = [str(source), "--out", str(tmp_path / "out.jsonl"), "--jobs", "1", "--checkpoint-dir", str(tmp_path / "ck")]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    with monkeypatch.context() as patched:
        patched.setattr(solver_cli, "solve", interrupted)
        with pytest.raises(KeyboardInterrupt) as kept:
            solve_main(argv)
    assert kept.value.__traceback__ is not None
    assert not files.held_by_another(tmp_path / "ck")
    capsys.readouterr()
    assert solve_main(argv) == 0
    assert re.match(r"(\d+) boards: \1 proven optimal, 0 not proven, 0 errors", capsys.readouterr().err.splitlines()[-1])


def test_a_time_limit_holds_back_the_widened_beam_that_would_not_fit_in_it(boards_dir, monkeypatch):
    """Under a time limit the stronger second beam (~10x the first's time) runs only where
    that much time is left; given the time, it runs as before."""
    boards = [r.board for r in jaxdust.read_board_file(boards_dir / "optimal_6x6x5.txt")][:20]
    widths = []
    beam = api.beam_upper_bound
    monkeypatch.setattr(api, "beam_upper_bound", lambda planes, geometry, width, *rest: widths.append(width)
                        or beam(planes, geometry, width, *rest))
    ticks = itertools.count()  # a clock that reads 10 s later each time: the first beam "takes" 10 s
    monkeypatch.setattr(api.time, "perf_counter", lambda: 10.0 * next(ticks))
    for board in boards:
        solve(board, time_limit=1e6, node_limit=2_000_000)
    given_time = len(widths)
    assert given_time > len(boards)  # some boards widened their beam
    widths.clear()
    for board in boards:
        solve(board, time_limit=90.0, node_limit=2_000_000)  # 10 x 10 s would not fit
    assert len(widths) == len(boards)


def test_a_time_limit_narrows_a_wide_first_beam_to_one_position():
    """The first beam read no clock: at width 65,536 on this 7x9x4 Former board a 0.2 s
    limit took 5.5 s, the whole beam; it now goes on at width 1 once the limit is past
    (0.3-0.5 s), and still returns a solution."""
    board = np.random.default_rng(3).integers(1, 5, size=(7, 9)).astype(np.int8)
    found = solve(board, time_limit=0.2, rules="former", beam_width=65536)
    assert found.seconds < 1.5, found.seconds
    final, clicks = jaxdust.replay(board, found.clicks, "former")
    assert bool(jaxdust.is_done(final)) and clicks == found.length == len(found.clicks)


def test_a_finished_pool_leaves_no_process_behind_and_starts_no_more_than_its_items():
    """Quick items end before every worker has started: a pool that finished waits for them
    to end (one still starting after the program, which a Ctrl-C then left printing a
    traceback), and starts no worker beyond one an item."""
    import multiprocessing

    assert list(ordered_map(abs, [-1, -2], 4)) == [1, 2]
    assert multiprocessing.active_children() == []
    started = []
    original = concurrent.futures.ProcessPoolExecutor.__init__

    def counted(self, max_workers=None, *args, **kwargs):
        started.append(max_workers)
        original(self, max_workers, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(concurrent.futures.ProcessPoolExecutor, "__init__", counted)
        assert list(completed_map(abs, [-3], 8)) == [3]
    assert started == [1] and multiprocessing.active_children() == []


def test_a_pool_started_off_the_main_thread_outlives_that_thread():
    """A library caller may start the work on one thread and read it on another: the
    workers must not die with the thread that started them (Linux's parent-death signal
    follows the thread, not the process)."""
    import threading

    work = ordered_map(workers.nap, [0.0, 0.5, 0.5, 0.0], 2)
    first = []
    starter = threading.Thread(target=lambda: first.append(next(work)))
    starter.start()
    starter.join()
    assert first + list(work) == [0.0, 0.5, 0.5, 0.0]


def test_work_stopped_early_ends_the_processes_under_way():
    """A caller that stops (Ctrl-C, an error) does not wait for the items under way: Python's
    exit would otherwise wait for each (a proof may take hours)."""
    script = ("import time\nfrom jaxdust.core.processes import ordered_map\nif __name__ == '__main__':\n"
              "    work = ordered_map(time.sleep, [0.1, 300, 300], 2)\n    next(work)\n    work.close()\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)  # not 300 s
    # Not closed at all: a generator kept in a variable (or by a traceback) when the program
    # ends made the exit wait for the items under way.
    for end in ("", "    for _ in work:\n        raise SystemExit(3)\n"):
        script = ("import time\nfrom jaxdust.core.processes import ordered_map\nif __name__ == '__main__':\n"
                  "    work = ordered_map(time.sleep, [0.1, 0.1, 300, 300], 2)\n    next(work)\n" + end)
        ended = subprocess.run([sys.executable, "-c", script], timeout=120)
        assert ended.returncode == (3 if end else 0)
    # Work that a thread still running reads is not cut short when the main thread ends
    # (results lost without a word): in this process or in processes, it reads on to its end.
    # (In processes its next item was refused: the pools' exit hook shut every pool before
    # Python waited for the thread.)
    script = ("import threading, time\nfrom jaxdust.core.processes import ordered_map\nfrom tests import workers\n"
              "def read(jobs):\n    got = 0\n    try:\n        for _ in ordered_map(workers.nap, [0.0] * 40, jobs):\n"
              "            got += 1\n            time.sleep(0.02)  # the work waits, not running, most of the time\n"
              "    except RuntimeError:\n        got = 'refused'\n    print(jobs, got, flush=True)\n"
              "if __name__ == '__main__':\n"
              "    for jobs in (1, 2):\n        threading.Thread(target=read, args=(jobs,)).start()\n")
    ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert sorted(ended.stdout.split("\n")) == ["", "1 40", "2 40"], ended


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_while_the_exit_waits_for_a_reading_thread_ends_the_workers(tmp_path):
    """The exit waits for a thread still reading work over processes, and says so after a
    while (a wait that may never end: a thread that waits for the main thread's end); one
    Ctrl-C then ends the program and its workers, rather than a wait for every item under
    way (hours)."""
    script = ("import os, signal, sys, threading, time\nfrom jaxdust.core import processes\n"
              "from tests import workers\nif __name__ == '__main__':\n    folder = sys.argv[1]\n"
              "    processes.READER_NOTICE_SECONDS = 0.2\n"
              "    threading.Thread(target=lambda: list(processes.ordered_map(workers.nap_holding_the_gil, "
              "[(folder, 300)] * 4, 2)), name='reader').start()\n"
              "    def interrupt():  # once both workers are at work, and the main thread has ended\n"
              "        while len(os.listdir(folder)) < 2:\n            time.sleep(0.1)\n"
              "        time.sleep(1.5)\n        os.kill(os.getpid(), signal.SIGINT)\n"
              "    threading.Thread(target=interrupt, daemon=True).start()\n")
    ended = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                           timeout=120, cwd=ROOT)
    assert "KeyboardInterrupt" in ended.stderr, ended.stderr
    assert ended.stderr.startswith("the program ends when thread 'reader' has read its work over processes to the "
                                   "end (Ctrl-C stops it)\n"), ended.stderr
    deadline = time.monotonic() + 30
    for pid in map(int, os.listdir(tmp_path)):
        while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "a worker outlived the interrupted program"
            time.sleep(0.2)


def test_results_held_behind_a_slow_item_are_bounded():
    """``ordered_map`` went on handing out items while an earlier one ran: tens of thousands
    of results waited in memory behind it."""
    from jaxdust.core import processes

    drawn = []

    def items():
        for index in range(5_000):
            drawn.append(index)
            yield 3.0 if index == 0 else 0.0

    work = ordered_map(workers.nap, items(), 2)
    assert next(work) == 3.0
    assert len(drawn) <= 2 * (processes.HELD_PER_JOB + processes.IN_FLIGHT_PER_JOB) + 1, len(drawn)
    assert sum(1 for _ in work) == 4_999  # and then the rest, none lost


def test_ctrl_c_during_a_deferred_block_stops_the_program_after_it():
    """What checkpoint saves run in: an interrupted save would leave orbax's threads to
    spill tracebacks at exit; the save ends first, then the program stops."""
    import os
    import signal

    from jaxdust.core.processes import interrupt_deferred

    steps, handler = [], signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with interrupt_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            steps.append("after the signal")  # the block goes on to its end
    assert steps == ["after the signal"] and signal.getsignal(signal.SIGINT) is handler
    with interrupt_deferred():  # no signal: nothing raised
        steps.append("quiet")
    # Ignored (a job a script started with &): it raised once the block had caught it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupt_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            steps.append("ignored")
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    except KeyboardInterrupt:
        pytest.fail("a Ctrl-C that was ignored stopped the program after the block")
    finally:
        signal.signal(signal.SIGINT, handler)
    assert steps == ["after the signal", "quiet", "ignored"]


def test_cli_stops_with_an_error_when_a_solver_process_dies_and_keeps_its_lines(tmp_path, boards_dir, monkeypatch,
                                                                               capsys):
    def first_then_dies(function, jobs, processes):
        yield function(jobs[0])
        raise WorkerDied("a worker process died (killed, or out of memory?)")

    source = tmp_path / "boards.txt"
    source.write_text("\n".join((boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[:5]) + "\n")
    out = tmp_path / "solutions.jsonl"
    monkeypatch.setattr(solver_cli, "completed_map", first_then_dies)
    assert solve_main([str(source), "--out", str(out), "--jobs", "2"]) == 1
    assert "a worker process died" in capsys.readouterr().err
    assert [json.loads(line)["line"] for line in out.read_text().splitlines()] == [3]  # kept, to resume from
    monkeypatch.undo()
    assert solve_main([str(source), "--out", str(out), "--jobs", "1"]) == 0
    assert [json.loads(line)["line"] for line in out.read_text().splitlines()] == [3, 4, 5]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pseudo-terminal")
def test_results_and_errors_on_the_bars_terminal_get_lines_of_their_own(tmp_path):
    """``echo BOARD | python -m jaxdust.solver -`` on a terminal glued each result, and each
    board's error, onto the end of the progress bar's line."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    path = tmp_path / "boards.txt"
    path.write_text("1122\n12\n2121\n")  # width 2: a board, one too short, a board
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 0 columns: tqdm draws nothing
    solving = subprocess.Popen([sys.executable, "-m", "jaxdust.solver", str(path), "--width", "2", "--height", "2",
                                "--jobs", "1"],
                               stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    shown = b""
    while True:
        assert select.select([leader], [], [], 120)[0], shown  # a hung command fails the test, not hangs it
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed with the command
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert solving.wait(timeout=120) == 1
    text = shown.decode()
    assert "board/s]" in text or "s/board]" in text, text  # a bar was drawn
    assert text.count('{"line"') == 3 and "line 2: board text has 2 digits" in text, text
    assert not re.search(r"\](\{\"line\"|line 2:)", text), text  # a bar's line is cleared first


def test_cli_reads_stdin():
    board = "31332522144325534512113254533545"
    result = subprocess.run(
        [sys.executable, "-m", "jaxdust.solver", "-", "--width", "8", "--jobs", "1"],
        input=board + "\n", capture_output=True, text=True, check=True,
    )
    record = json.loads(result.stdout)
    assert record["board"] == board and record["length"] == 10 and record["optimal"]
    # Its reader gone (``| head -1``), the command stops quietly, without a traceback.
    reader = subprocess.Popen([sys.executable, "-m", "jaxdust.solver", "-", "--width", "8", "--jobs", "1"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader.stdin.write((board + "\n") * 400)
    reader.stdin.close()
    assert json.loads(reader.stdout.readline())["board"] == board
    reader.stdout.close()
    stderr = reader.stderr.read()
    assert reader.wait(timeout=300) == 1 and "Traceback" not in stderr, stderr[-2000:]
    # Another pipe's failure, its reader still there, is a real error: shown.
    script = ("from jaxdust.core import flags\ndef main():\n    raise BrokenPipeError('a socket of its own')\n"
              "flags.run_command(main, 'nothing')\n")
    failed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert failed.returncode == 1 and "BrokenPipeError: a socket of its own" in failed.stderr
    if os.path.exists("/dev/full"):  # standard output on a full disk: named as such, not as "-"
        with open("/dev/full", "w") as full:
            ended = subprocess.run([sys.executable, "-m", "jaxdust.solver", "-", "--width", "8", "--jobs", "1"],
                                   input=board + "\n", stdout=full, stderr=subprocess.PIPE, text=True)
        assert ended.returncode == 1 and ended.stderr.startswith(
            "\nstopped: No space left on device writing standard output (make room;"), ended.stderr[-2000:]


# ---------------------------------------------------------------------------------------
# Baselines and anytime search
# ---------------------------------------------------------------------------------------


def test_original_depth_first_search_is_deterministic_with_a_node_budget(boards_dir):
    record = jaxdust.read_board_file(boards_dir / "eval_8x6x5.txt")[0]
    small = solve_dfs(record.board, time_limit=None, node_limit=2_000)
    assert small == solve_dfs(record.board, time_limit=None, node_limit=2_000)
    large = solve_dfs(record.board, time_limit=None, node_limit=200_000)
    assert record.values[1] <= len(large) <= len(small)
    for clicks in (small, large):
        final, _ = jaxdust.replay(record.board, clicks)
        assert bool(jaxdust.is_done(final))


def test_the_depth_first_search_searches_as_many_positions_as_its_node_limit():
    """It counted the limit's last position, then stopped before looking at it: one click on
    one colour, its first position, took a limit of 2."""
    assert solve_dfs(np.ones((2, 2), np.int8), time_limit=None, node_limit=1) == [(0, 0)]
    from jaxdust.solver import dfs

    planes = bitboard.to_planes(np.ones((2, 2), np.int8), 1)
    assert dfs.depth_first_search(planes, bitboard.make_geometry(2, 2), 1, 0.0, np.zeros(4, np.uint64)) == (1, 1)


@pytest.mark.parametrize("text, width, height", [("12", 2, 1), ("3412", 2, 2), ("613", 3, 1), ("121", 3, 1)])
def test_the_depth_first_search_solves_boards_that_take_a_click_a_cell(text, width, height):
    """Its bound (colours left, plus one once a cell is empty) overshoots by a click: under a
    first best of cells + 1 it pruned every line of a board whose cells all differ, and
    raised TimeoutError at once."""
    board = jaxdust.parse_board(text, width, height)
    clicks = solve_dfs(board, time_limit=None, node_limit=10_000)
    final, _ = jaxdust.replay(board, clicks)
    assert bool(jaxdust.is_done(final)) and len(clicks) <= jaxdust.solve(board).length + 1


def test_heuristic_features_match_the_numba_ones():
    rng = np.random.default_rng(5)
    geometry = bitboard.make_geometry(8, 6)
    masks, colours = np.empty(64, np.uint64), np.empty(64, np.int64)
    groups, features = np.empty(6, np.int64), np.empty(5)
    boards = []
    for _ in range(40):
        board = ref.random_board(rng, 8, 6, 5)
        for _ in range(rng.integers(0, 12)):
            if ref.is_done(board):
                break
            x, y = np.argwhere(board != 0)[rng.integers(np.count_nonzero(board))]
            board, _ = ref.click(board, x, y)
        boards.append(board)
    jax_features = np.asarray(jax.jit(jax.vmap(heuristic_features))(jnp.asarray(np.stack(boards))))
    for board, got in zip(boards, jax_features):
        upper_bound.board_features(planes_of(board, 5), geometry, masks, colours, groups, features)
        np.testing.assert_allclose(got, features)


def test_beam_search_solutions_replay_and_never_beat_the_optimum(boards_dir):
    gaps = []
    for record in jaxdust.read_board_file(boards_dir / "optimal_8x4x5.txt")[:6]:
        result = beam.beam_search(record.board, width=32)
        length = int(result.length)
        actions = np.asarray(result.actions)
        assert length >= record.values[0] and np.all(actions[length:] == -1)
        final, count = jaxdust.replay(record.board, [(a // 4, a % 4) for a in actions[:length]])
        assert count == length and bool(jaxdust.is_done(final))
        gaps.append(length - record.values[0])
    assert gaps == [0] * 6  # and it searches: width 32 finds all six optima (a beam on a reversed score did not)
    # Nested lists and a numpy integer width: the same search.
    as_lists = beam.beam_search(np.asarray(record.board).tolist(), width=np.int64(32))
    assert int(as_lists.length) == length and np.array_equal(as_lists.actions, actions)


_NEGATIVE_NAN = jax.lax.bitcast_convert_type(jnp.uint32(0xFFC00000), jnp.float32)  # what inf * 0 gives on x86


def _spoiled_scorer(boards, params):
    """The heuristic, but NaN with its sign bit set (a network's runtime NaN on a CPU) on a
    third of the children and -inf on another third."""
    scores = heuristic_scorer(boards, params)
    cells = jnp.sum(boards != 0, axis=(1, 2)) % 3
    return jnp.where(cells == 0, _NEGATIVE_NAN, jnp.where(cells == 1, -jnp.inf, scores))


def test_children_a_scorer_cannot_rank_are_ranked_last_not_lost(boards_dir):
    """Such children sorted below every finite score, so a board's whole beam could be
    dropped (length -1), for one board alone and not inside another batch."""
    records = jaxdust.read_board_file(boards_dir / "optimal_8x4x5.txt")[:4]
    boards = jnp.stack([r.board for r in records])
    for width in (1, 4):
        found = beam.beam_search(boards, width=width, scorer=_spoiled_scorer)
        lengths, actions = np.asarray(found.length), np.asarray(found.actions)
        assert (lengths > 0).all(), (width, lengths)
        for record, length, line in zip(records, lengths, actions):
            final, count = jaxdust.replay(record.board, [(a // 4, a % 4) for a in line[:length]])
            assert count == length and bool(jaxdust.is_done(final))
    assert int(beam.beam_search(boards[0], width=4, scorer=_spoiled_scorer).length) == int(
        beam.beam_search(boards, width=4, scorer=_spoiled_scorer).length[0])
    for kwargs, message in (({"batch": 0}, "batch must be a positive integer"),
                            ({"batch": -1}, "batch must be a positive integer")):
        with pytest.raises(ValueError, match=message):
            beam.beam_solutions(boards, 4, **kwargs)
    with pytest.raises(ValueError, match="no boards"):
        beam.beam_solutions(boards[:0], 4)
    # the rescorer reaches every batch (benchmarks/beam.py's lookahead rows)
    lengths, actions = beam.beam_solutions(boards, 4, rescorer=beam.lookahead_heuristic, batch=3)
    whole = beam.beam_search(boards, width=4, rescorer=beam.lookahead_heuristic)
    assert np.array_equal(lengths, whole.length) and np.array_equal(actions, whole.actions)
    sizes = []  # two boards are searched as a batch of two, not padded to default_batch's
    beam.in_batches(lambda part: (sizes.append(part.shape[0]), part)[1], boards[:2], 4, None, None, "a test", "dust")
    assert sizes == [2]


def test_a_table_serves_one_board_size_and_rule_set():
    """Its entries are one game's facts: this board needs 7 clicks under dust, but with the
    table of its former proof (11 clicks) the dust search returned 8 as proven optimal."""
    board = jaxdust.parse_board("222412124324341244222314", 6, 4)
    table = TranspositionTable(12)
    assert solve(board, rules="former", table=table).optimal
    with pytest.raises(ValueError, match="table holds facts about 6x4 boards under the former rules, not 6x4 under dust"):
        solve(board, rules="dust", table=table)
    with pytest.raises(ValueError, match="not 4x6 under former"):
        solve(np.asarray(board).T.copy(), rules="former", table=table)
    proof = solve(board, rules="dust", table=TranspositionTable(12))
    assert proof.optimal and proof.length == 7  # brute_force_optimum's too (~25 s, so not run here)


def test_the_beams_position_hash_takes_boards_up_to_64_by_64():
    board = jnp.asarray(np.random.default_rng(0).integers(1, 5, (33, 32)), jnp.int8)
    assert keys.canonical_hash(board, True).shape == (2,)
    assert not np.array_equal(keys.canonical_hash(board, True), keys.canonical_hash(board.at[32, 31].set(0), True))
    with pytest.raises(ValueError, match="at most 4096 cells, got 65x64"):
        keys.canonical_hash(jnp.ones((65, 64), jnp.int8), True)
    # The hashes order the beams' ties: boards up to 32 x 32 keep those they had before
    # larger boards were taken (values from jaxdust 0.2.31, whose table stopped at 1024 cells).
    for shape, expected in (((6, 5), [1570064687, 1435720588]), ((32, 32), [455126431, 1725874317])):
        board = jnp.asarray(np.random.default_rng(0).integers(1, 5, shape), jnp.int8)
        assert [int(value) for value in keys.canonical_hash(board, False)] == expected


@pytest.mark.slow
def test_wider_beams_are_no_worse(boards_dir):
    records = jaxdust.read_board_file(boards_dir / "optimal_6x6x5.txt")[:8]
    boards = jnp.stack([r.board for r in records])
    narrow = beam.beam_search(boards, width=4).length
    wide = beam.beam_search(boards, width=64).length
    optimal = np.array([r.values[0] for r in records])
    assert np.all(np.asarray(wide) >= optimal)
    assert np.asarray(wide).sum() <= np.asarray(narrow).sum()
    assert np.mean(np.asarray(wide) == optimal) >= 0.5


@pytest.mark.slow
@pytest.mark.parametrize("lookahead", [False, True])
def test_a_batch_searches_each_board_as_alone_and_as_the_numba_beam(boards_dir, lookahead):
    """One compiled search over a batch (an empty board and a one-click board included)
    gives each board what a search of it alone gives, and the numba beam's lengths."""
    records = jaxdust.read_board_file(boards_dir / "optimal_6x6x5.txt")[:10]
    boards = [r.board for r in records] + [np.zeros((6, 6), np.int8), np.full((6, 6), 3, np.int8)]
    rescorer = beam.lookahead_heuristic if lookahead else None
    # A small chunk makes several chunks per click, and a shortlist of 8 x 16 runs the
    # selection's top-k prefix (not the whole-row sort) on the first boards' rows.
    batch = beam.beam_search(jnp.asarray(np.stack(boards)), width=16, rescorer=rescorer, chunk=64)
    geometry = bitboard.make_geometry(6, 6)
    path = np.zeros(36, np.uint64)
    for i, board in enumerate(boards):
        alone = beam.beam_search(jnp.asarray(board), width=16, rescorer=rescorer)
        length = int(batch.length[i])
        assert length == int(alone.length)
        np.testing.assert_array_equal(batch.actions[i], alone.actions)
        final, count = jaxdust.replay(board, [divmod(int(a), 6) for a in np.asarray(batch.actions[i])[:length]])
        assert bool(jaxdust.is_done(final)) and count == length
        if board.any():
            shortlist = LOOKAHEAD_SHORTLIST if lookahead else 0
            assert length == upper_bound.beam_upper_bound(planes_of(board, 5), geometry, 16, HEURISTIC_WEIGHTS,
                                                          path, shortlist)
    assert int(batch.length[-2]) == 0 and int(batch.length[-1]) == 1


@pytest.mark.slow
def test_the_selection_prefix_agrees_with_sorting_whole_rows():
    """``_best_distinct`` sorts a top-k prefix of each row when that decides; many tied
    scores and repeated hashes force the whole-row path on some rows."""
    rng = np.random.default_rng(5)
    for ties in (3, 1000):  # scores in 0..ties-1: heavy ties, then few
        scores = rng.integers(0, ties, size=(4, 300)).astype(np.float32)
        scores[:, 250:] = np.inf  # children past the end of a board's run
        hashes = rng.integers(0, 40, size=(4, 300, 2)).astype(np.uint32)
        scores, hashes = jnp.asarray(scores), jnp.asarray(hashes)

        def hashes_of(columns, hashes=hashes):
            return jnp.take_along_axis(hashes, columns[..., None], axis=1)

        for count in (5, 40, 200):  # jitted as in the beam (eager, each loop compiles per call)
            got = jax.jit(beam._best_distinct, static_argnums=(1, 2))(scores, hashes_of, count)
            whole = jax.jit(beam._first_distinct, static_argnums=2)(scores, hashes, count)[:2]
            np.testing.assert_array_equal(got[1], whole[1])
            finite = np.isfinite(np.asarray(whole[1]))
            np.testing.assert_array_equal(np.asarray(got[0])[finite], np.asarray(whole[0])[finite])


@pytest.mark.slow
@pytest.mark.parametrize("columns", [5, 300])
def test_selection_picks_top_ks_set_and_compacts_as_nonzero(columns):
    """``smallest_columns`` keeps the set ``top_k`` keeps (ties to the lower column, -0 before
    +0, negatives, infinities), ``first_trues`` is ``nonzero`` and ``trues_before`` an
    exclusive running count, on row lengths that are and are not whole 32-bit words."""
    rng = np.random.default_rng(columns)
    scores = rng.integers(-4, 5, size=(6, columns)).astype(np.float32) * np.float32(0.25)
    scores[0] = rng.normal(size=columns)  # no ties
    scores[1, ::3] = np.inf
    scores[2, : columns // 2] = np.inf  # fewer finite scores than some counts
    scores[3] = -scores[3] * 0.0  # only +0 and -0
    scores[4, ::2] = -np.inf
    for count in sorted({1, 2, columns // 3 + 1, columns - 1, columns} - {0}):
        picked, last = jax.jit(selection.smallest_columns, static_argnums=1)(jnp.asarray(scores), count)
        negated, expected = jax.lax.top_k(-jnp.asarray(scores), count)
        np.testing.assert_array_equal(picked, np.sort(np.asarray(expected), axis=1))
        np.testing.assert_array_equal(last[:, 0], -negated[:, -1])
    mask = rng.random((3, columns)) < 0.3
    mask[1] = False
    before = np.cumsum(mask, axis=1) - mask
    np.testing.assert_array_equal(selection.trues_before(jnp.asarray(mask)), before)
    for count in (1, columns // 2 + 1, columns):
        found, exists = selection.first_trues(jnp.asarray(mask), count)
        for row in range(3):
            expected = np.flatnonzero(mask[row])[:count]
            np.testing.assert_array_equal(np.asarray(found[row])[: len(expected)], expected)
            np.testing.assert_array_equal(exists[row], np.arange(count) < len(expected))


@pytest.mark.slow
@pytest.mark.parametrize("width, height, colors", [(5, 4, 3), (8, 6, 5), (9, 9, 6)])  # 1, 2 and 3 mask words
def test_every_cluster_of_every_alive_position_is_played_once(width, height, colors):
    rng = np.random.default_rng(8)
    cells = width * height
    boards = np.stack(_partly_played_boards(rng, 12, width, height, colors))
    alive = np.arange(12) % 3 != 0
    labels = jax.vmap(jaxdust.cluster_labels)(jnp.asarray(boards)).reshape(12, -1)

    def visit(seen, start, children, parent, action, valid):
        boards_seen, codes = seen
        codes = jax.lax.dynamic_update_slice(codes, jnp.where(valid, parent * cells + action, -1), (start,))
        return jax.lax.dynamic_update_slice(boards_seen, children, (start, 0, 0)), codes

    seen = (jnp.zeros((12 * cells, width, height), jnp.int8), jnp.full(12 * cells, -1))
    listing, (children, codes) = beam.for_each_child(jnp.asarray(boards), labels, jnp.asarray(alive), 7, visit, seen)
    expected = [(i, x * height + y) for i in range(12) if alive[i]
                for x, y in np.argwhere(ref.cluster_representatives(boards[i]))]
    np.testing.assert_array_equal(listing.per_position, [np.count_nonzero(ref.cluster_representatives(b)) if a else 0
                                                         for b, a in zip(boards, alive)])
    assert int(listing.total) == len(expected)
    assert [divmod(int(c), cells) for c in np.asarray(codes)[: len(expected)]] == sorted(expected)
    assert np.all(np.asarray(codes)[len(expected):] == -1)
    # Any entry can be read out of order, as the beam reads the ones it keeps.
    shuffled = rng.permutation(len(expected))
    assert [divmod(int(c), cells) for c in listing.code_at(jnp.asarray(shuffled, jnp.int32))] == [
        sorted(expected)[i] for i in shuffled]
    for (parent, action), child in zip(sorted(expected), np.asarray(children)):
        np.testing.assert_array_equal(child, ref.click(boards[parent], *divmod(action, height))[0])


@pytest.mark.slow
@pytest.mark.parametrize("width, height, colors", [(8, 6, 5), (6, 6, 9), (8, 8, 3), (9, 9, 4), (7, 5, 4)])
def test_jax_position_keys_are_the_solvers(width, height, colors):
    """The JAX beam breaks ties by the same key as the numba beam, so the two keep the same
    positions: equal to ``ida.position_key`` (whatever the number of planes) up to 64 cells,
    mirror-invariant where mirror images play alike (not the dust game at odd widths) and
    telling boards apart beyond."""
    rng = np.random.default_rng(width * height + colors)
    mirror = game.mirror_symmetric("dust", width)
    boards = np.stack([ref.random_board(rng, width, height, colors) for _ in range(64)])
    boards[:32] = np.where(rng.random(boards[:32].shape) < 0.5, 0, boards[:32])  # absent colours, empty cells
    key_of = jax.jit(jax.vmap(lambda board: keys.solver_key(board, mirror)))
    got = np.asarray(key_of(jnp.asarray(boards)))
    assert got.dtype == np.uint32 and got.shape == (64, 2)
    mirrored = np.asarray(key_of(jnp.asarray(boards[:, ::-1])))
    assert np.array_equal(got, mirrored) == mirror
    np.testing.assert_array_equal(np.asarray(keys.solver_key(jnp.asarray(boards[3]), mirror)), got[3])
    canonical = {min(b.tobytes(), b[::-1].tobytes()) if mirror else b.tobytes() for b in boards}
    assert len({tuple(key) for key in got}) == len(canonical)
    if width * height <= 64:
        geometry = bitboard.make_geometry(width, height)
        assert geometry.mirror == mirror
        for board, key in zip(boards, got):
            for planes in (colors, 9):
                solver_key = int(ida.position_key(bitboard.to_planes(board, planes), geometry))
                assert solver_key == (int(key[0]) << 32) | int(key[1])


def _partly_played_boards(rng, count, width, height, colors):
    boards = []
    for _ in range(count):
        board = ref.random_board(rng, width, height, colors)
        for _ in range(rng.integers(0, width * height // 3)):
            if ref.is_done(board):
                break
            x, y = np.argwhere(board != 0)[rng.integers(np.count_nonzero(board))]
            board, _ = ref.click(board, x, y)
        boards.append(board)
    return boards


@pytest.mark.slow
def test_lookahead_scorers_are_one_plus_the_best_child_by_the_reference():
    """JAX and numba lookahead scores against children played by the NumPy oracle, boards
    that one click clears (score 1) and the empty board (score 0) included."""
    rng = np.random.default_rng(11)
    boards = _partly_played_boards(rng, 24, 6, 4, 3)
    boards += [np.zeros((6, 4), np.int8), np.pad(np.ones((2, 4), np.int8), ((2, 2), (0, 0)))]
    children = {i: [ref.click(board, x, y)[0] for x, y in np.argwhere(ref.cluster_representatives(board))]
                for i, board in enumerate(boards) if not ref.is_done(board)}
    scores = iter(np.asarray(beam.heuristic_scorer(jnp.asarray(np.stack(sum(children.values(), []))))))
    expected = []
    for i in range(len(boards)):  # one batch scored, then each board's children in order
        values = [0.0 if ref.is_done(child) else float(score) for child, score in zip(children.get(i, []), scores)]
        expected.append(1.0 + min(values) if i in children else 0.0)
    got = np.asarray(jax.jit(beam.lookahead_heuristic)(jnp.asarray(np.stack(boards))))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert got[-2] == 0.0 and got[-1] == 1.0

    geometry = bitboard.make_geometry(6, 4)
    scratch = [np.empty(64, np.uint64), np.empty(64, np.int64), np.empty(4, np.int64),
               np.empty(64, np.uint64), np.empty(64, np.int64), np.empty(5), np.empty(3, np.uint64)]
    for board, want in zip(boards, expected):
        if ref.is_done(board):
            continue  # the numba beam never scores an empty board
        score = upper_bound._lookahead_score(planes_of(board, 3), geometry, HEURISTIC_WEIGHTS, *scratch)
        assert score == pytest.approx(want, rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("searcher", ["numba", "jax"])
def test_lookahead_beams_replay_and_never_beat_the_optimum(boards_dir, searcher):
    records = jaxdust.read_board_file(boards_dir / "optimal_6x6x5.txt")[:10]
    geometry = bitboard.make_geometry(6, 6)
    path = np.zeros(36, np.uint64)
    plain, looked = [], []
    for record in records:
        if searcher == "numba":
            planes = planes_of(record.board, 5)
            plain.append(upper_bound.beam_upper_bound(planes, geometry, 8, HEURISTIC_WEIGHTS, path))
            length = upper_bound.beam_upper_bound(planes, geometry, 8, HEURISTIC_WEIGHTS, path, LOOKAHEAD_SHORTLIST)
            clicks = bitboard.path_clicks(path, length, 6)
        else:
            plain.append(int(beam.beam_search(record.board, width=8).length))
            result = beam.beam_search(record.board, width=8, rescorer=beam.lookahead_heuristic)
            length = int(result.length)
            clicks = [divmod(int(a), 6) for a in np.asarray(result.actions)[:length]]
        final, count = jaxdust.replay(record.board, clicks)
        assert bool(jaxdust.is_done(final)) and count == length >= record.values[0]
        looked.append(length)
    assert sum(looked) < sum(plain)  # the lookahead must pay for itself on these boards


@pytest.mark.parametrize("node_limit", [20_000_000, None])
def test_results_without_a_time_limit_do_not_depend_on_the_clock(boards_dir, monkeypatch, node_limit):
    """Without a time limit solve's decisions (widening its beam) count positions, so a
    clock that runs 10 s per reading changes nothing (it used to widen at once)."""
    boards = [r.board for r in jaxdust.read_board_file(boards_dir / "optimal_6x6x5.txt")]
    normal = [solve(b, node_limit=node_limit) for b in boards]
    ticks = itertools.count()
    monkeypatch.setattr(api.time, "perf_counter", lambda: 10.0 * next(ticks))
    slow = [solve(b, node_limit=node_limit) for b in boards]
    assert [(s.length, s.nodes, s.clicks) for s in slow] == [(s.length, s.nodes, s.clicks) for s in normal]


def test_solver_benchmark_runs_without_reference_boards(tmp_path, boards_dir):
    """``benchmarks/solver.py --reference-boards 0`` reports no speedup instead of crashing."""
    out = tmp_path / "solver.json"
    result = subprocess.run([sys.executable, "benchmarks/solver.py", "--sets", "8x4", "--reference-boards", "0",
                             "--jobs", "1", "--out", str(out)], capture_output=True, text=True, cwd=boards_dir.parent.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    summary = report["sets"]["8x4"]
    assert summary["proven"] == summary["boards"] == 60
    # what the figures were measured on and with (machine.measured_on), as every benchmark's report says
    assert report["measured_on"]["jaxdust"] == jaxdust.__version__ and report["measured_on"]["cores"] >= 1
    assert {"cpu", "backend", "device", "jax", "numba", "python"} <= set(report["measured_on"])
    assert summary["reference"]["boards"] == 0 and summary["reference"]["median_speedup_where_both_proved"] is None
    bad = subprocess.run([sys.executable, "benchmarks/solver.py", "--reference-boards", "-1"],
                         capture_output=True, text=True, cwd=boards_dir.parent.parent)
    assert bad.returncode == 2 and "--reference-boards: must be an integer >= 0" in bad.stderr


def test_after_compile_all_the_searches_only_load_from_numba_s_cache():
    """``compiled.compile_all`` (run once by conftest before the tests) leaves every cached
    search compiled: in a fresh process the public searches of every rule set then load
    their machine code and compile nothing (a miss would be a function it does not reach).
    A fresh process, because tests here call inner functions directly, compiling them alone."""
    check = """
import importlib, json, pkgutil, numba, numpy as np, jaxdust
from jaxdust.solver import compiled, points, solve, solve_dfs, upper_bound
compiled.compile_all()
board = np.array([[1, 2, 2], [2, 1, 1], [1, 1, 2], [3, 3, 1]], np.int8)
solve(board), solve(board, rules="former"), solve(board, time_limit=5.0), solve(board, prune=False)
solve_dfs(board, time_limit=None, node_limit=1000)
upper_bound.beam_clicks(board, 4, 3, shortlist=4)
for rules in ("samegame", "clickomania"):
    points.beam(board, 4, rules=rules), points.nmcs(board, 2, rules=rules)
cached = {f"{m.name}.{n}": v for m in pkgutil.iter_modules(jaxdust.solver.__path__) if not m.name.startswith("_")
          for n, v in vars(importlib.import_module(f"jaxdust.solver.{m.name}")).items()
          if isinstance(v, numba.core.registry.CPUDispatcher) and v._cache.__class__.__name__ != "NullCache"}
print(json.dumps({"cached": len(cached),
                  "misses": {n: sum(d.stats.cache_misses.values()) for n, d in cached.items() if d.stats.cache_misses},
                  "hits": {n: sum(d.stats.cache_hits.values()) for n, d in cached.items()}}))
"""
    result = subprocess.run([sys.executable, "-c", check], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["cached"] > 20 and report["misses"] == {}
    for entry in ("ida.bounded_search", "dfs.depth_first_search", "upper_bound.beam_upper_bound", "points.beam_points"):
        assert report["hits"][entry] > 0, entry


def test_a_node_limit_caps_the_half_game_searches_too(tmp_path):
    """A long single row's halves are hard games of their own: their searches, uncounted
    by ``nodes``, once ran for minutes within ``node_limit=1000``. Their positions are
    capped (``api.HALF_POSITIONS_PER_POSITION`` per position of the limit, over the proof): a half search stops
    at its cap, in the same 1024-position steps as its deadline checks, and the solve
    returns its beam's line unproven."""
    row = np.array([[1 + x % 2] for x in range(52)], np.int8)
    geometry, planes = bitboard.make_geometry(52, 1), bitboard.to_planes(row, 2)
    scratch = halves.make_scratch(2, 52, 1)
    assert halves.half_value(planes, 0, geometry, 30, TranspositionTable(12).halves, scratch, 0.0, 4096) == -1
    assert 4096 <= scratch[-1][0] < 4096 + 1024
    long_row = np.array([[1 + x % 2] for x in range(64)], np.int8)
    path = tmp_path / "row.npz"
    result = solve(long_row, node_limit=1000, checkpoint=path)  # seconds; minutes without the cap
    assert not result.optimal and result.nodes <= 1000 and result.lower_bound < result.length
    cap = api.HALF_POSITIONS_PER_POSITION * 1000
    assert cap <= progress.load(path, long_row, "dust").half_positions < cap + 1024  # kept to resume
    final, clicks = jaxdust.replay(long_row, result.clicks)
    assert clicks == result.length and not np.any(final)


def test_a_click_on_the_top_cell_of_a_64_cell_board_comes_back():
    """The top-right cell of an 8x8 board is bit 63: converting its mask through numba's
    int64 from Python overflowed, so any line ending there crashed ``solve`` (one random
    8x8 Former board in about 150)."""
    assert bitboard.path_clicks(np.array([np.uint64(1 << 63), np.uint64(0b1100)], np.uint64), 2, 8) == [
        (7, 7), (0, 2)]
    board = jaxdust.parse_board("4233131223143313233431144224113233334432113321443121234124414335", 8, 8)
    found = solve(board, node_limit=1000, beam_width=8)
    assert (7, 7) in found.clicks and found.length == len(found.clicks)
    final, clicks = jaxdust.replay(board, found.clicks)
    assert clicks == found.length and bool(jaxdust.is_done(final))


def test_numpy_scalars_are_limits_as_python_numbers_are():
    board = np.ones((4, 3), np.int8)
    for limit in (np.float16(5.0), np.float32(5.0), np.int64(5), np.float64(0.5)):  # float16: a numba error
        assert solve(board, time_limit=limit).length == 1
        assert len(solve_dfs(board, time_limit=limit)) == 1
    assert solve(board, node_limit=np.int64(10)).optimal
    text, width, height = CHECKPOINTED["dust"]  # a proof of ~80,000 positions
    hard = np.asarray(jaxdust.parse_board(text, width, height))
    for limit in (10, np.int64(10), np.uint16(10)):
        stopped = solve(hard, node_limit=limit)
        assert not stopped.optimal and stopped.nodes <= 10


@pytest.mark.slow
@pytest.mark.parametrize("time_limit", [60, None])
def test_ctrl_c_during_a_proof_is_a_keyboard_interrupt_at_once(time_limit):
    """A Ctrl-C (a notebook's interrupt button) during a proof is met where the compiled
    search reads its clock, in numba's object mode: with a time limit numba raised it as a
    SystemError, and without one the search never read its clock, so the interrupt waited
    for the search to end (minutes to hours). Both are now a KeyboardInterrupt at once. The
    board is a 7x9 Former board no proof finishes within a minute
    (data/proofs/former-200.jsonl, line 3)."""
    script = """
import os, signal, sys, threading, time
import jaxdust
board = jaxdust.parse_board("422424343341411241241122131321232332342322414234124413332212432", width=7, height=9,
                            rules="former")
jaxdust.solve(board, time_limit=0.1, rules="former")  # compiled (or loaded) before the clock starts
sent = []
def interrupt():
    time.sleep(2.0)  # the beam is done: the search is under way
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=interrupt, daemon=True).start()
try:
    jaxdust.solve(board, time_limit=LIMIT, rules="former")
    print("finished")
except KeyboardInterrupt:
    print(f"interrupted {time.perf_counter() - sent[0]:.3f}")
"""
    result = subprocess.run([sys.executable, "-c", script.replace("LIMIT", repr(time_limit))], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    word, seconds = result.stdout.split()
    assert word == "interrupted" and float(seconds) < 1.0, result.stdout


def test_only_a_ctrl_c_met_in_the_searches_clock_becomes_a_keyboard_interrupt():
    def fails(cause):
        try:
            raise cause
        except BaseException as error:
            raise SystemError("returned a result with an exception set") from error

    with pytest.raises(KeyboardInterrupt):
        bitboard.interrupts_as_such(fails)(KeyboardInterrupt())
    with pytest.raises(SystemError, match="exception set") as raised:  # any other cause stays what it is
        bitboard.interrupts_as_such(fails)(ValueError("a real fault"))
    assert isinstance(raised.value.__cause__, ValueError)


def test_the_jax_beam_keeps_the_numba_beams_positions_at_odd_and_even_widths():
    """The JAX beam plays the numba beam's line (same score-then-key order), on dust boards
    of odd width (where a board and its mirror image play apart, so they must not be merged)
    and of even width (narrow beams, where the selection's prefix often ends inside a tie of
    scores and the key must decide)."""
    for width, height, colors in [(5, 4, 4), (6, 6, 5)]:
        boards = np.asarray(jaxdust.random_boards(jax.random.key(width), 6, jaxdust.GameConfig(width, height, colors)))
        geometry = bitboard.make_geometry(width, height)
        for beam_width in (1, 2, 8):
            found = beam.beam_search(jnp.asarray(boards), width=beam_width)
            for board, length, actions in zip(boards, np.asarray(found.length), np.asarray(found.actions)):
                path = np.zeros(width * height, np.uint64)
                clicks = upper_bound.beam_upper_bound(bitboard.to_planes(board, colors), geometry, beam_width,
                                                      HEURISTIC_WEIGHTS, path)
                # each click's cluster mask -> its lowest cell, the flat action the JAX beam gives
                expected = [(int(m) & -int(m)).bit_length() - 1 for m in path[:clicks]]
                assert list(actions[:length]) == expected, (width, height, beam_width)


def test_moves_the_solver_takes_to_commute_do_commute():
    """Every pair of clicks the exact solver plays in one order only
    (``ida._commutes_before``) ends, in the other order, on the same board with the same
    clusters. Dropping its test of the move's reach against the grown arrival changed no
    optimum on 11,550 small random boards (other paths reach the position it loses), so the
    helper is checked itself, on every pair of clicks of random small boards."""
    def remove(planes, mask, geometry):
        after = planes.copy()
        bitboard.remove_in_place(after, mask, geometry)
        return after

    def cluster_list(planes, geometry):
        masks, colours = np.zeros(64, np.uint64), np.zeros(64, np.int64)
        count = bitboard.clusters(planes, geometry, masks, colours, np.zeros(planes.shape[0] + 1, np.int64))
        return [(masks[i], colours[i]) for i in range(count)]

    checked = 0
    for rules in ("former", "dust"):
        for width, height, colors in [(3, 4, 3), (4, 4, 3), (5, 3, 3)]:
            geometry = bitboard.make_geometry(width, height, rules)
            config = jaxdust.GameConfig(width, height, colors, rules=rules)
            for board in np.asarray(jaxdust.random_boards(jax.random.key(width * height), 40, config)):
                root = bitboard.to_planes(board, colors)
                for arrival, _ in cluster_list(root, geometry):
                    arrival_reach = bitboard.removal_reach(arrival, bitboard.occupied(root), geometry)
                    arrival_grown = bitboard.grow(arrival, geometry)
                    node = remove(root, arrival, geometry)
                    for move, colour in cluster_list(node, geometry):
                        if bitboard.lowest_bit(move) >= bitboard.lowest_bit(arrival):
                            continue
                        move_reach = bitboard.removal_reach(move, bitboard.occupied(node), geometry)
                        if not ida._commutes_before(move, move_reach, arrival_reach, arrival_grown, geometry):
                            continue
                        checked += 1
                        first = remove(root, move, geometry)  # the other order: the move, then the arrival
                        assert any(m == move for m, _ in cluster_list(root, geometry)), "the move was a cluster before"
                        assert any(m == arrival for m, _ in cluster_list(first, geometry)), "the arrival stays a cluster"
                        np.testing.assert_array_equal(remove(first, arrival, geometry), remove(node, move, geometry))
    assert checked > 100


def test_numpy_integers_size_tables_and_beams_as_python_ones():
    """``1 << np.int8(12)`` is 0: such a table was empty and the solve read and wrote past
    it (a segmentation fault); twice an int8 beam of 100 is -56, which failed the widened
    beam on this board (node-limited, so the same choices on any machine)."""
    table = api.TranspositionTable(np.int8(12), np.int8(13))
    assert (table.entries.size, table.halves.size, table.max_bits) == (4096, 2048, 13)
    table.reserve(10**6)
    assert table.entries.size == 2**13
    board = jaxdust.parse_board("515334113512421124152334541413513154315531441525")
    expected = solve(board, beam_width=100, node_limit=3_000_000)
    found = solve(board, beam_width=np.int8(100), node_limit=3_000_000)
    assert (found.clicks, found.lower_bound) == (expected.clicks, expected.lower_bound)


def test_the_depth_first_search_takes_a_node_limit_past_int64_as_no_limit():
    """As ``solve`` does: numba's int64 refused 2^63 with an OverflowError naming nothing."""
    board = jaxdust.parse_board("123312231132", 4, 3)
    clicks = solve_dfs(board, None, node_limit=2**63)
    assert clicks == solve_dfs(board, None) and not np.any(jaxdust.replay(board, clicks)[0])


def test_the_numba_searches_start_no_jax_backend():
    """``solve``, ``solve_dfs`` and the points searches read their boards through a JAX
    array: each started JAX's backend (on a GPU, CUDA and its memory) for numba's work, and
    in a worker forked from a process that had used JAX, starting it never returned."""
    script = ("import numpy as np\nimport jaxdust\nfrom jax._src import xla_bridge\n"
              "from jaxdust.solver import points\nfrom jaxdust.solver.dfs import solve_dfs\n"
              "board = np.array([[1, 2, 1, 2], [2, 1, 2, 1], [1, 1, 2, 2], [2, 2, 1, 1]])\n"
              "lengths = [jaxdust.solve(board).length, len(solve_dfs(board, time_limit=None))]\n"
              "game = np.array([[1, 1, 2], [2, 2, 1], [1, 1, 2]])\n"
              "lengths += [len(points.beam(game, 4, 'samegame').clicks), len(points.nmcs(game, 1, 'samegame', 0).clicks)]\n"
              "print(lengths, xla_bridge.backends_are_initialized())\n")
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert shown.returncode == 0, shown.stderr[-2000:]
    lengths, started = shown.stdout.rsplit(" ", 1)
    board = np.array([[1, 2, 1, 2], [2, 1, 2, 1], [1, 1, 2, 2], [2, 2, 1, 1]])
    assert started == "False\n" and json.loads(lengths)[0] == jaxdust.solve(board).length  # the searches ran
