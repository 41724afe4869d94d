"""Tests of the independent plain-Python reference ``tests/family_reference.py``.

1. The outside check: the published sample of the online-judge problem UVa 758
   "The Same Game" (largest group first, SameGame rules) must be reproduced exactly.
2. Small examples worked out by hand from the written rules, one per rule set.
3. Properties over random boards (settledness, conservation of cells, no sideways move
   for "former", whole columns for "samegame"/"clickomania", half/centre rules for "dust").
"""

from collections import Counter

import numpy as np
import pytest

from tests.family_reference import (
    RULES,
    as_board,
    board_from_rows,
    board_to_rows,
    click,
    cluster_at,
    clusters,
    is_over,
    largest_group_greedy,
    legal_moves,
    line_points,
    min_group,
    parse_uva758,
    play_random,
    points,
    random_board,
    random_settled_board,
    settle,
    settle_moves,
    solve_uva758,
    unsettled_cell,
)

B = board_from_rows


def same(a, b) -> bool:
    return np.array_equal(np.asarray(a), np.asarray(b))


# ---------------------------------------------------------------------------------------------
# 1. UVa 758 sample (published input and output; never edit the expected data)
# ---------------------------------------------------------------------------------------------

UVA758_SAMPLE_INPUT = """\
3
RGGBBGGRBRRGGBG
RBGRBGRBGRBGRBG
RRRRGBBBRGGRBBB
GGRGBGGBRRGGGBG
GBGGRRRRRBGGRRR
BBBBBBBBBBBBBBB
BBBBBBBBBBBBBBB
RRRRRRRRRRRRRRR
RRRRRRGGGGRRRRR
GGGGGGGGGGGGGGG

RRRRRRRRRRRRRRR
RRRRRRRRRRRRRRR
GGGGGGGGGGGGGGG
GGGGGGGGGGGGGGG
BBBBBBBBBBBBBBB
BBBBBBBBBBBBBBB
RRRRRRRRRRRRRRR
RRRRRRRRRRRRRRR
GGGGGGGGGGGGGGG
GGGGGGGGGGGGGGG

RBGRBGRBGRBGRBG
BGRBGRBGRBGRBGR
GRBGRBGRBGRBGRB
RBGRBGRBGRBGRBG
BGRBGRBGRBGRBGR
GRBGRBGRBGRBGRB
RBGRBGRBGRBGRBG
BGRBGRBGRBGRBGR
GRBGRBGRBGRBGRB
RBGRBGRBGRBGRBG
"""

UVA758_SAMPLE_OUTPUT = """\
Game 1:
Move 1 at (4,1): removed 32 balls of color B, got 900 points.
Move 2 at (2,1): removed 39 balls of color R, got 1369 points.
Move 3 at (1,1): removed 37 balls of color G, got 1225 points.
Move 4 at (3,4): removed 11 balls of color B, got 81 points.
Move 5 at (1,1): removed 8 balls of color R, got 36 points.
Move 6 at (2,1): removed 6 balls of color G, got 16 points.
Move 7 at (1,6): removed 6 balls of color B, got 16 points.
Move 8 at (1,2): removed 5 balls of color R, got 9 points.
Move 9 at (1,2): removed 5 balls of color G, got 9 points.
Final score: 3661, with 1 balls remaining.
Game 2:
Move 1 at (1,1): removed 30 balls of color G, got 784 points.
Move 2 at (1,1): removed 30 balls of color R, got 784 points.
Move 3 at (1,1): removed 30 balls of color B, got 784 points.
Move 4 at (1,1): removed 30 balls of color G, got 784 points.
Move 5 at (1,1): removed 30 balls of color R, got 784 points.
Final score: 4920, with 0 balls remaining.
Game 3:
Final score: 0, with 150 balls remaining.
"""


def _expected_uva_games():
    """Parse UVA758_SAMPLE_OUTPUT into per-game (moves, score, remaining).

    A move is ``(x, y, size, colour_letter, points)`` with the printed (row, column)
    converted to our (x, y) = (column - 1, row - 1).
    """
    import re

    games = []
    for line in UVA758_SAMPLE_OUTPUT.splitlines():
        if line.startswith("Game "):
            games.append({"moves": []})
            continue
        m = re.fullmatch(
            r"Move (\d+) at \((\d+),(\d+)\): removed (\d+) balls of color ([RGB]), "
            r"got (\d+) points\.",
            line,
        )
        if m:
            n, row, col, size, letter, pts = m.groups()
            assert int(n) == len(games[-1]["moves"]) + 1
            games[-1]["moves"].append((int(col) - 1, int(row) - 1, int(size), letter, int(pts)))
            continue
        m = re.fullmatch(r"Final score: (\d+), with (\d+) balls remaining\.", line)
        assert m, line
        games[-1]["score"] = int(m.group(1))
        games[-1]["remaining"] = int(m.group(2))
    return games


def test_uva758_parse():
    boards = parse_uva758(UVA758_SAMPLE_INPUT)
    assert len(boards) == 3
    for b in boards:
        assert b.shape == (15, 10) and b.dtype == np.int8
    g1 = boards[0]
    # top line "RGGBBGGRBRRGGBG" is y = 9; bottom line "GGG..." is y = 0
    assert [int(g1[x, 9]) for x in range(4)] == [1, 2, 2, 3]
    assert all(int(g1[x, 0]) == 2 for x in range(15))
    # y = 1 is "RRRRRRGGGGRRRRR"
    assert [int(g1[x, 1]) for x in range(15)] == [1] * 6 + [2] * 4 + [1] * 5
    assert board_to_rows(g1)[0] == "122332213112232"


def test_uva758_sample_largest_group_greedy():
    letters = {1: "R", 2: "G", 3: "B"}
    boards = parse_uva758(UVA758_SAMPLE_INPUT)
    expected = _expected_uva_games()
    assert len(expected) == len(boards) == 3
    for board, exp in zip(boards, expected):
        moves, score, remaining = largest_group_greedy(board, "samegame")
        got = [(x, y, size, letters[c], points(size)) for (x, y, size, c) in moves]
        assert got == exp["moves"]
        assert score == exp["score"]
        assert remaining == exp["remaining"]
        # the score is also what line_points gives for the same clicks
        assert line_points(board, [(x, y) for (x, y, _s, _c) in moves]) == score


def test_uva758_sample_text_output():
    got = [ln for ln in solve_uva758(UVA758_SAMPLE_INPUT).splitlines() if ln.strip()]
    assert got == UVA758_SAMPLE_OUTPUT.splitlines()


# ---------------------------------------------------------------------------------------------
# 2. Hand-worked examples
# ---------------------------------------------------------------------------------------------

# A 4 x 3 board (top row first). Settled under every rule set.
#   y2: . 2 . .
#   y1: 1 2 3 .
#   y0: 1 3 3 2
BASE = [".2..",
        "123.",
        "1332"]


def test_board_picture_roundtrip_and_layout():
    b = B(BASE)
    assert b.shape == (4, 3)
    assert b[0, 0] == 1 and b[0, 1] == 1 and b[0, 2] == 0
    assert b[1, 2] == 2 and b[3, 0] == 2
    assert board_to_rows(b) == BASE


def test_min_group_and_unknown_rules():
    assert [min_group(r) for r in RULES] == [1, 1, 2, 2]
    with pytest.raises(ValueError) as err:
        min_group("tetris")
    for name in RULES:
        assert name in str(err.value)
    with pytest.raises(ValueError):
        click(B(BASE), 0, 0, "bogus")


def test_a_board_of_fractions_is_refused_not_truncated():
    """1.7 was colour 1 and 0.5 an empty cell, where ``jaxdust.core.reference`` reads the
    cells as they are: the two oracles disagreed on such a board."""
    with pytest.raises(ValueError, match="must hold integers, got float64"):
        as_board([[1.7, 2.2], [0.5, 3.9]])
    with pytest.raises(ValueError, match="must hold integers"):
        click([[1.7, 1.2]], 0, 0, "samegame")
    assert as_board(np.array([[1, 2]], np.uint8)).tolist() == [[1, 2]]


def test_clusters_and_legal_moves():
    b = B(BASE)
    assert clusters(b) == [
        [(0, 0), (0, 1)],            # 1s
        [(1, 0), (2, 0), (2, 1)],    # 3s
        [(1, 1), (1, 2)],            # 2s
        [(3, 0)],                    # lone 2
    ]
    assert legal_moves(b, "dust") == [(0, 0), (1, 0), (1, 1), (3, 0)]
    assert legal_moves(b, "former") == [(0, 0), (1, 0), (1, 1), (3, 0)]
    assert legal_moves(b, "samegame") == [(0, 0), (1, 0), (1, 1)]
    assert legal_moves(b, "clickomania") == [(0, 0), (1, 0), (1, 1)]
    for r in RULES:
        assert unsettled_cell(b, r) is None


@pytest.mark.parametrize(
    "rules, cell, removed, expected",
    [
        # remove the 3s {(1,0),(2,0),(2,1)}: the 2s of column 1 fall, column 2 is empty.
        ("dust", (1, 0), 3, ["....", "12..", "122."]),       # lone 2 slides left to x=W//2
        ("former", (1, 0), 3, ["....", "12..", "12.2"]),     # no sideways move
        ("samegame", (1, 0), 3, ["....", "12..", "122."]),   # empty column 2 removed
        ("clickomania", (1, 0), 3, ["....", "12..", "122."]),
        # remove the 2s {(1,1),(1,2)}: in row 1 the 1 at x=0 is alone in the left half.
        ("dust", (1, 2), 2, ["....", ".13.", "1332"]),       # it slides right to x=W//2-1
        ("former", (1, 2), 2, ["....", "1.3.", "1332"]),
        ("samegame", (1, 2), 2, ["....", "1.3.", "1332"]),   # no column became empty
        # remove the 1s {(0,0),(0,1)}: column 0 becomes empty.
        ("dust", (0, 0), 2, [".2..", ".23.", ".332"]),       # left halves already touch centre
        ("former", (0, 1), 2, [".2..", ".23.", ".332"]),
        ("samegame", (0, 1), 2, ["2...", "23..", "332."]),   # all columns shift left
        ("clickomania", (0, 0), 2, ["2...", "23..", "332."]),
        # the lone 2 at (3,0): clickable only under dust/former.
        ("dust", (3, 0), 1, [".2..", "123.", "133."]),
        ("former", (3, 0), 1, [".2..", "123.", "133."]),
        ("samegame", (3, 0), 0, BASE),                       # below the minimum: no change
        ("clickomania", (3, 0), 0, BASE),
    ],
)
def test_hand_clicks(rules, cell, removed, expected):
    new, got_removed = click(B(BASE), *cell, rules)
    assert got_removed == removed
    assert board_to_rows(new) == expected
    assert new.dtype == np.int8 and new.shape == (4, 3)


@pytest.mark.parametrize("rules", RULES)
def test_click_on_empty_cell_changes_nothing(rules):
    b = B(BASE)
    new, removed = click(b, 3, 2, rules)
    assert removed == 0 and same(new, b)
    with pytest.raises(ValueError):
        click(b, 4, 0, rules)


def test_hand_settle():
    holes = B(["1..2",
               ".3..",
               "2..1"])
    # gravity gives   y1 "1..2" / y0 "23.1"
    assert board_to_rows(settle(holes, "former")) == ["....", "1..2", "23.1"]
    assert board_to_rows(settle(holes, "dust")) == ["....", ".12.", "231."]
    assert board_to_rows(settle(holes, "samegame")) == ["....", "1.2.", "231."]
    assert board_to_rows(settle(holes, "clickomania")) == ["....", "1.2.", "231."]


def test_dust_odd_width_halves():
    # W = 5: left half is x < 2, right half is x >= 2 (three columns).
    b = B(["1...3",
           "1.2.3"])
    assert board_to_rows(settle(b, "dust")) == [".13..", ".123."]


def test_points_and_bonus():
    assert [points(n) for n in range(6)] == [0, 0, 0, 1, 4, 9]
    full = B(["11", "11"])
    assert line_points(full, [(1, 1)]) == 4 + 1000
    two_step = B(["221",
                  "111"])
    # 1s (4 cells, 4 points), then the 2s fall into row 0 (2 cells, 0 points), cleared.
    assert line_points(two_step, [(0, 0), (0, 0)]) == 4 + 0 + 1000
    assert line_points(two_step, [(0, 1), (0, 0)]) == 0 + 4 + 1000
    assert line_points(two_step, [(0, 0)]) == 4                  # not cleared: no bonus
    assert largest_group_greedy(two_step) == ([(0, 0, 4, 1), (0, 0, 2, 2)], 1004, 0)
    left_over = B(["2..",
                   "111"])
    assert line_points(left_over, [(1, 0)]) == 1
    assert largest_group_greedy(left_over) == ([(0, 0, 3, 1)], 1, 1)
    # wasted clicks score nothing and do not prevent the bonus
    assert line_points(full, [(0, 0), (0, 0)]) == 1004


def test_greedy_tie_break_leftmost_then_bottommost():
    # two clusters of size 2: 1s with representative (0,1), 2s with representative (1,0).
    b = B(["14",
           "12",
           "32"])
    moves, _score, _rem = largest_group_greedy(b, "samegame")
    assert moves[0] == (0, 1, 2, 1)
    # columns of equal size groups: same column, the bottom one first
    c = B(["3",
           "3",
           "1",
           "1"])
    assert largest_group_greedy(c) == ([(0, 0, 2, 1), (0, 0, 2, 3)], 1000, 0)
    # dust: singletons are clickable; the largest still goes first
    d = B(["12", "33"])
    assert largest_group_greedy(d, "dust")[0][0] == (0, 0, 2, 3)


def test_is_over():
    singles = B(["2.",
                 "13"])
    assert is_over(singles, "samegame") and is_over(singles, "clickomania")
    assert not is_over(singles, "dust") and not is_over(singles, "former")
    assert legal_moves(singles, "dust") == [(0, 0), (0, 1), (1, 0)]
    assert legal_moves(singles, "samegame") == []
    empty = np.zeros((3, 2), dtype=np.int8)
    for r in RULES:
        assert is_over(empty, r)
        assert unsettled_cell(empty, r) is None
    assert not is_over(B(BASE), "samegame")


def test_unsettled_cell():
    floating = B(["...",
                  ".2.",
                  "1.3"])
    for r in ("former", "samegame", "clickomania"):
        assert unsettled_cell(floating, r) == (1, 1)
    # dust: (2,0) is also misplaced (right half must start at x=1) but (1,1) comes first
    assert unsettled_cell(floating, "dust") == (1, 1)

    gap_column = B(["..3",
                    "1.2"])
    assert unsettled_cell(gap_column, "samegame") == (2, 0)
    assert unsettled_cell(gap_column, "clickomania") == (2, 0)
    assert unsettled_cell(gap_column, "former") is None
    assert unsettled_cell(gap_column, "dust") == (2, 0)

    # dust: the left-half block must end at x = W//2 - 1 = 1
    assert unsettled_cell(B(["1.22"]), "dust") == (0, 0)
    assert unsettled_cell(B(["1.22"]), "former") is None
    # dust: the right-half block must start at x = W//2 = 2
    assert unsettled_cell(B(["11.2"]), "dust") == (3, 0)
    # dust: a gap inside the right-half block
    assert unsettled_cell(B(["...2.3"]), "dust") == (5, 0)
    assert unsettled_cell(B([".112.."]), "dust") is None
    assert unsettled_cell(B(["..12.."]), "dust") is None


# ---------------------------------------------------------------------------------------------
# 3. Properties on random boards
# ---------------------------------------------------------------------------------------------


def _columns(board):
    """Each column's non-empty colours, bottom to top."""
    b = np.asarray(board)
    return [[int(v) for v in b[x] if v != 0] for x in range(b.shape[0])]


def _counts(board):
    return Counter(int(v) for v in np.asarray(board).ravel() if v != 0)


def test_settle_idempotent_and_unsettled_cell_agree():
    rng = np.random.default_rng(1234)
    for i in range(400):
        rules = RULES[i % 4]
        w, h = int(rng.integers(1, 9)), int(rng.integers(1, 7))
        b = random_board(rng, w, h, int(rng.integers(1, 6)))
        b[rng.random((w, h)) < rng.uniform(0, 0.7)] = 0
        s = settle(b, rules)
        assert same(settle(s, rules), s)
        assert unsettled_cell(s, rules) is None
        assert _counts(s) == _counts(b)
        first = unsettled_cell(b, rules)
        assert (first is None) == same(s, b)
        if first is not None:
            assert b[first] != 0
            moves = settle_moves(b, rules)
            assert moves[first] != first
            assert all(dst == src for src, dst in moves.items() if src < first)
        if rules == "former":
            assert _columns(s) == _columns(b)


def _check_click(before, cell, rules, after, removed):
    x, y = cell
    group = cluster_at(before, x, y)
    assert unsettled_cell(after, rules) is None
    assert after.shape == before.shape and after.dtype == np.int8
    if len(group) < min_group(rules) or before[x, y] == 0:
        assert removed == 0 and same(after, before)
        return
    assert removed == len(group)
    colour = int(before[x, y])
    expect = _counts(before)
    expect[colour] -= removed
    expect = +expect  # drop zero counts
    assert _counts(after) == expect
    holed = np.array(before)
    for cx, cy in group:
        holed[cx, cy] = 0
    if rules == "former":
        assert _columns(after) == _columns(holed)        # nothing moves sideways
    elif rules in ("samegame", "clickomania"):
        whole = [col for col in _columns(holed) if col]
        w = before.shape[0]
        assert _columns(after) == whole + [[]] * (w - len(whole))
    else:  # dust: cells keep their half, never move up, never move away from the centre
        w = before.shape[0]
        half = w // 2
        for (sx, sy), (dx, dy) in settle_moves(holed, "dust").items():
            assert after[dx, dy] == holed[sx, sy]
            assert (sx < half) == (dx < half)
            assert dy <= sy
            assert (dx >= sx) if sx < half else (dx <= sx)


def test_random_clicks_properties():
    rng = np.random.default_rng(2024)
    total = 0
    while total < 2000:
        for rules in RULES:
            w, h = int(rng.integers(1, 8)), int(rng.integers(1, 7))
            board = random_settled_board(rng, w, h, int(rng.integers(1, 6)), rules)
            assert unsettled_cell(board, rules) is None
            for _ in range(30):
                if is_over(board, rules):
                    break
                if rng.random() < 0.7:
                    options = legal_moves(board, rules)
                    cell = options[int(rng.integers(len(options)))]
                    # click any cell of that cluster, not only the representative
                    group = cluster_at(board, *cell)
                    cell = group[int(rng.integers(len(group)))]
                else:
                    cell = (int(rng.integers(w)), int(rng.integers(h)))
                after, removed = click(board, *cell, rules)
                _check_click(board, cell, rules, after, removed)
                board = after
                total += 1
            if rules in ("dust", "former") and is_over(board, rules):
                assert not board.any()


def test_play_random_and_greedy_end_over():
    rng = np.random.default_rng(7)
    for i in range(40):
        rules = RULES[i % 4]
        board = random_settled_board(rng, 6, 5, 4, rules)
        line = play_random(board, rules, rng)
        b = board
        for x, y in line:
            assert (x, y) in legal_moves(b, rules)
            b, removed = click(b, x, y, rules)
            assert removed >= min_group(rules)
        assert is_over(b, rules)
        moves, score, remaining = largest_group_greedy(board, rules)
        assert sum(m[2] for m in moves) + remaining == int(np.count_nonzero(board))
        assert score == line_points(board, [(m[0], m[1]) for m in moves], rules)
        sizes = [m[2] for m in moves]
        assert all(s >= min_group(rules) for s in sizes)
        if rules in ("dust", "former"):
            assert remaining == 0
