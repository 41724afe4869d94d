"""parse_board, text form, board files and replay: the host-side entry points."""

import gzip
import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdust
from jaxdust.core import boards as board_io
from jaxdust.core import reference as ref
from jaxdust.solver import cli as solver_cli

TEXT = "335122421413111551154255131234544142315221411124"  # first board of eval_8x6x5


def test_text_array_and_lists_give_the_same_board():
    from_text = jaxdust.parse_board(TEXT)
    expected = ref.board_from_text(TEXT, 8, 6)
    assert from_text.dtype == jnp.int8 and from_text.shape == (8, 6)
    np.testing.assert_array_equal(from_text, expected)
    np.testing.assert_array_equal(jaxdust.parse_board(expected.tolist()), expected)
    np.testing.assert_array_equal(jaxdust.parse_board(expected.astype(np.int64)), expected)
    assert jaxdust.board_to_text(from_text) == TEXT


def test_text_shape_inference():
    assert jaxdust.parse_board("1" * 36, width=6).shape == (6, 6)
    assert jaxdust.parse_board("1" * 32, height=4).shape == (8, 4)
    assert jaxdust.parse_board(" 12 \n", width=2, height=1).shape == (2, 1)


@pytest.mark.parametrize(
    "data, kwargs, message",
    [
        ("1" * 47, {}, "47 digits"),
        ("1" * 36, {"width": 5}, "not a multiple of width=5"),
        ("12a4", {"width": 2}, "'a' at position 2"),
        ("", {}, "empty"),
        ([[1, 2], [3]], {}, "rectangular"),
        (np.ones((2, 2, 2), int), {}, "2-D"),
        (np.ones((3, 2)), {}, "dtype float64"),
        (np.ones((3, 2), bool), {}, "dtype bool"),
        (np.ones((3, 2), int), {"width": 4}, r"shape \(3, 2\), expected \(4, 2\)"),
        (np.ones((1, 2), int), {}, "at least 2 wide"),
        ([[1, 10], [1, 1]], {}, r"cell \(0, 1\) holds 10"),
        ([[1, -1], [1, 1]], {}, r"cell \(0, 1\) holds -1"),
        ([[0, 1], [1, 1]], {}, r"cell \(0, 1\) floats"),
        ([[1], [0], [0], [0]], {}, "row y=0: the left half has a gap"),
        ([[0], [0], [0], [1]], {}, "row y=0: the right half has a gap"),
    ],
)
def test_parse_board_names_the_problem(data, kwargs, message):
    with pytest.raises(ValueError, match=message):
        jaxdust.parse_board(data, **kwargs)


def test_replay_clears_a_board_with_the_reference_solution():
    board = ref.board_from_text(TEXT, 8, 6)
    clicks = ref.largest_cluster_first(board, tie_break="row_major")
    final, count = jaxdust.replay(TEXT, clicks)
    assert count == len(clicks) == 25  # the eval file's largest-first length for this board
    assert bool(jaxdust.is_done(final))


def test_a_searchs_flat_actions_replay_and_score_as_its_length():
    """beam_search and play_boards give flat actions x * H + y padded with -1; replay and
    score take them as they are, as a list of ints too, and a padded line ends at its first -1."""
    found = jaxdust.beam_search(jaxdust.parse_board(TEXT), 8, max_clicks=48)
    length = int(found.length)
    assert np.asarray(found.actions)[length] == -1
    assert jaxdust.score(TEXT, found.actions) == length
    pairs = [divmod(int(a), 6) for a in np.asarray(found.actions)[:length]]
    assert jaxdust.score(TEXT, pairs) == jaxdust.score(TEXT, np.asarray(found.actions)[:length].tolist()) == length
    assert jaxdust.replay(TEXT, found.actions[:2])[1] == 2
    # Any iterable of flat actions, as Clicks says: a generator was refused. A tuple of ints
    # is still refused: (3, 2) would be one click's pair.
    flat = np.asarray(found.actions)[:length].tolist()
    assert jaxdust.score(TEXT, (a for a in flat)) == jaxdust.score(TEXT, iter(pairs)) == length
    with pytest.raises(ValueError, match=re.escape("one click is a list of one pair, [(x, y)]")):
        jaxdust.score(TEXT, tuple(flat))
    # What holds no line in order: a set or a dict would be read in their own order.
    for unordered in (set(flat[:2]), dict.fromkeys(flat[:2]), bytearray(flat[:2]), 5, None, np.array(3)):
        with pytest.raises(ValueError, match="clicks must be a sequence of .x, y. pairs or of flat actions, in order"):
            jaxdust.score(TEXT, unordered)
    # -1 pads a line after its end, and only there: a stray -1 or another negative number
    # inside a line ended it there, dropping every click after it without a word.
    padded = [*flat[:2], -1, -1]
    assert jaxdust.replay(TEXT, np.array(padded))[1] == jaxdust.replay(TEXT, padded)[1] == 2
    for line, message in (([flat[0], -1, *flat[1:]], "click 2: .* after the line's end"),
                          ([flat[0], -5, *flat[1:]], "click 1: -5 is no cell"),
                          (np.array([flat[0], -2, -1]), "click 1: -2 is no cell")):
        with pytest.raises(ValueError, match=message):
            jaxdust.score(TEXT, line, partial=True)


@pytest.mark.parametrize("rules", ["dust", "samegame"])
def test_score_takes_play_boards_lines_with_their_wasted_clicks(rules):
    """``play_boards`` counts a wasted click (an empty cell, a group below the minimum) and
    scores the game it plays; ``score(wasted=True)`` gives the same clicks or points, and
    without ``wasted`` such a line is refused."""
    config = jaxdust.GameConfig(5, 4, 3, rules)
    boards = jaxdust.random_boards(jax.random.key(0), 6, config)
    played = jaxdust.play_boards(boards, lambda key, board, params: jax.random.randint(key, (), 0, 20),
                                 jax.random.key(0), 60, rules=rules)
    wasting = 0
    for board, actions, clicks, points in zip(boards, played.actions, played.clicks, played.points):
        expected = int(points) if rules == "samegame" else int(clicks)
        assert jaxdust.score(board, actions, rules=rules, wasted=True, partial=True) == expected
        try:
            jaxdust.score(board, actions, rules=rules, partial=True)
        except ValueError as error:
            assert "is an empty cell" in str(error) or "is a group of" in str(error)
            wasting += 1
    assert wasting  # random clicks waste some


@pytest.mark.parametrize(
    "clicks, message",
    [
        ([(0, 0), (8, 0)], r"click 1: \(8, 0\) is outside the 8x6 board"),
        ([(0, -1)], r"click 0: \(0, -1\) is outside"),
        ([(0, 0), "ab"], "click 1: 'ab' is not an"),
        ((0, 1), r"click 0: 0 is not an \(x, y\) pair of ints; one click is a list of one pair, \[\(x, y\)\]"),
        ([(0, 1), 5], r"click 1: 5 is not an \(x, y\) pair of ints$"),  # a list: no tuple of ints to explain
    ],
)
def test_replay_names_the_bad_step(clicks, message):
    with pytest.raises(ValueError, match=message):
        jaxdust.replay(TEXT, clicks)


def test_replay_rejects_a_click_on_an_empty_cell():
    board = jnp.asarray([[2, 0], [1, 1], [3, 2], [2, 0]], jnp.int8)
    with pytest.raises(ValueError, match=r"click 1: \(3, 1\) is an empty cell"):
        jaxdust.replay(board, [(1, 0), (3, 1)])


def test_board_files_parse_with_values_and_line_numbers(boards_dir):
    records = jaxdust.read_board_file(boards_dir / "eval_8x6x5.txt")
    assert len(records) == 1000
    first = records[0]
    assert jaxdust.board_to_text(first.board) == TEXT
    assert first.values == (25, 11) and first.line == 3
    optimal = jaxdust.read_board_file(boards_dir / "optimal_8x4x5.txt")
    assert optimal[0].board.shape == (8, 4) and len(optimal[0].values) == 1


def test_each_shape_comment_holds_until_the_next_and_boards_follow_their_rules(tmp_path):
    path = tmp_path / "boards.txt"
    path.write_text("# width=3 height=2\n112233 1\n# a plain comment keeps the shape\n121212 2\n"
                    "# width=2 height=3\n112233 3\n")
    records = jaxdust.read_board_file(path)
    assert [r.board.shape for r in records] == [(3, 2), (3, 2), (2, 3)] and [r.values for r in records] == [(1,), (2,), (3,)]
    # A given shape shapes a file without a header; against a header it would be other cells.
    with pytest.raises(ValueError, match=r"boards.txt:2: its header reads the boards at 3x2, width=/height= at 6x1"):
        jaxdust.read_board_file(path, width=6, height=1)
    with pytest.raises(ValueError, match=r"boards.txt:6: its header reads the boards at 2x3, width=/height= at 3x2"):
        jaxdust.read_board_file(path, width=3, height=2)
    bare = tmp_path / "bare.txt"
    bare.write_text("112233\n")
    assert [r.board.shape for r in jaxdust.read_board_file(bare, width=6, height=1)] == [(6, 1)]
    assert [r.board.shape for r in jaxdust.read_board_file(bare, width=3)] == [(3, 2)]
    assert len(jaxdust.read_board_file(path, limit=2)) == 2
    # Settled under samegame (columns close left), not under dust (halves pack to the centre).
    path.write_text("# width=4 height=2\n11200000\n")
    with pytest.raises(ValueError, match="boards.txt:2: .*left half"):
        jaxdust.read_board_file(path)
    (record,) = jaxdust.read_board_file(path, rules="samegame")
    assert jaxdust.board_to_text(record.board) == "11200000"


def test_prose_comments_and_unusual_characters_in_comments_leave_the_boards_alone(tmp_path):
    """A comment that does not start with a ``name=value`` field is prose: its ``width=``
    or ``rules=`` sets nothing. A form feed or a Unicode line separator inside a comment
    does not end a line, so every later line keeps its number."""
    path = tmp_path / "boards.txt"
    path.write_text("# width=3 height=2\n# best lengths from a beam of width=5000 height=1, rules=former\n"
                    "112233 1\n", encoding="utf-8")
    (record,) = jaxdust.read_board_file(path)
    assert record.board.shape == (3, 2) and record.line == 3
    assert board_io.declared_rules(path.read_text().splitlines()) == "dust"
    for separator in ("\x0c", "\u2028", "\x85", "\x1c"):
        path.write_text(f"# width=3 height=2\n# note{separator}by hand\n112233 1\n12x\n", encoding="utf-8")
        with pytest.raises(ValueError, match="boards.txt:4: "):
            jaxdust.read_board_file(path)
        path.write_text(f"# width=3 height=2\n# note{separator}by hand\n112233 1\n", encoding="utf-8")
        assert [r.line for r in jaxdust.read_board_file(path)] == [3], repr(separator)
    path.write_bytes(b"# width=3 height=2\r\n112233 1\r121212 2\n")  # Windows' and old Macs' line ends
    assert [(r.line, r.values) for r in jaxdust.read_board_file(path)] == [(2, (1,)), (3, (2,))]


def test_headers_are_read_as_people_write_them_and_hold_their_boards(tmp_path):
    """Spaces around ``=``, capitals, commas and a byte-order mark still give the shape (not
    the 48-digit default); ``rules=`` (in any case) is the rules the boards are read under unless given,
    ``colors=`` caps them; a stray field after a board names itself."""
    path = tmp_path / "boards.txt"
    board = "335122421413111551154255131234544142315221411124"
    for header in ("# width = 6, height = 8", "# Width=6 Height=8", "\ufeff# width=6 height=8"):
        path.write_text(f"{header}\n{board} 11\n", encoding="utf-8")
        (record,) = jaxdust.read_board_file(path)
        assert record.board.shape == (6, 8), header
    for header in ("# width=4 height=2 rules=samegame", "# Width=4 Height=2 Rules=SameGame"):
        path.write_text(f"{header}\n11200000\n")  # unsettled under dust
        (record,) = jaxdust.read_board_file(path)
        assert jaxdust.board_to_text(record.board) == "11200000", header
        assert board_io.declared_rules(path.read_text().splitlines()) == "samegame", header  # as --size reads it
    # A misspelt field is refused: "rule=former" read as no rules would play Former's boards as
    # dust. Other names are prose, as they always were, before or after the first board.
    path.write_text("# width=4 height=2 rule=former; cells listed x-major, y=0 bottom row\n11200000\n")
    for read in (jaxdust.read_board_file, lambda p: jaxdust.read_board_file(p, rules="former"),
                 lambda p: board_io.declared_rules(p.read_text().splitlines(), str(p))):
        with pytest.raises(ValueError, match=r"boards.txt:1: header .*: unknown field 'rule'; did you mean rules=\? "
                                             r"\(a header sets width, height, colors, rules\)"):
            read(path)
    path.write_text("# width=4 height=2 cells x-major; y=0 is the bottom row, rules=samegame\n11200000\n"
                    "# seed=2 boards below\n# n=2 by hand\n22100000\n")
    assert [jaxdust.board_to_text(r.board) for r in jaxdust.read_board_file(path)] == ["11200000", "22100000"]
    # "colours", as the docs spell it, is colors
    path.write_text("# width=8 height=6 Colours=3; cells listed x-major, y=0 bottom row\n" + board + "\n")
    with pytest.raises(ValueError, match="boards.txt:2: the board holds colour 5; the header says colors=3"):
        jaxdust.read_board_file(path)
    path.write_text("# a set by hand\n# width=4 height=2 rules=bogus\n11200000\n")
    with pytest.raises(ValueError, match="boards.txt:2: unknown rules 'bogus'"):
        jaxdust.read_board_file(path)
    path.write_text("# width=4 height=2\n# colors = 12\n11200000\n")
    with pytest.raises(ValueError, match="boards.txt:2: header colors=12: a whole number of colours"):
        jaxdust.read_board_file(path)
    path.write_text("# width=8 height=6 colors=3\n" + board + "\n")
    with pytest.raises(ValueError, match="boards.txt:2: the board holds colour 5; the header says colors=3"):
        jaxdust.read_board_file(path)
    path.write_text(board + " 11 # a note\n")
    with pytest.raises(ValueError, match="boards.txt:1: field 3 is '#'; after the board a line holds whole numbers"):
        jaxdust.read_board_file(path)


def test_files_as_editors_leave_them_are_read_at_their_own_shapes_or_named(tmp_path):
    """Two files saved by Notepad and joined hold a byte-order mark in the middle: the
    second header still sets its boards' shape (it was read as a bad board, and the board
    after it solved at the first header's shape). A shape written in prose sets nothing,
    so boards with no header would be read at 8x6: refused, naming the comment, unless the
    prose names 8x6 or a header follows. Board files hold digits 0-9 only, in headers and
    after the boards too (``int`` took ``1_2`` and fullwidth digits, and a superscript in
    ``colors=`` ended in int()'s own message)."""
    path = tmp_path / "boards.txt"
    path.write_bytes("\ufeff# width=3 height=2\r\n112233\r\n\ufeff# width=2 height=3\r\n111223\r\n".encode())
    assert [(r.line, r.board.shape) for r in jaxdust.read_board_file(path)] == [(2, (3, 2)), (4, (2, 3))]
    for prose in ("# width: 6, height: 8", "# w=6 h=8", "# size=6x8x5", "# 6x8x5 boards by hand"):
        path.write_text(f"{prose}\n{TEXT}\n")
        with pytest.raises(ValueError, match=re.escape("boards.txt:1: this comment names 6x8 boards but sets no "
                                                       "shape, and 48 digits without one are read as 8x6: write "
                                                       "'# width=6 height=8' (or '# width=8 height=6' if they are "
                                                       "8x6)")):
            jaxdust.read_board_file(path)
        assert jaxdust.read_board_file(path, width=6)[0].board.shape == (6, 8)  # given: the prose is a note
        path.write_text(f"{prose}\n# width=6 height=8\n{TEXT}\n")
        assert jaxdust.read_board_file(path)[0].board.shape == (6, 8)
        path.write_text(f"{prose}\n{TEXT}\n")  # the solver's flags give the shape: not refused
        solver_cli.main([str(path), "--width", "6", "--height", "8", "--jobs", "1", "--node-limit", "1000",
                         "--out", str(tmp_path / "out.jsonl")])
        assert (json.loads((tmp_path / "out.jsonl").read_text())["width"], prose) == (6, prose)
        (tmp_path / "out.jsonl").unlink()
    # Prose naming 8x6, or a shape of other than 48 cells (no board of it is read at 8x6), is a note.
    for prose in ("# 8x6x5 boards", "# 6x8 boards (an old set)\n# 8x6 boards", "# 0x1f, 3x faster, v1.2x3",
                  "# 1000 boards, written as 20 x 50 shards",
                  "# screenshots at 1920x1080", "# seed 0x2024", "# a 2x2 block in the corner"):
        path.write_text(f"{prose}\n{TEXT}\n")
        assert jaxdust.read_board_file(path)[0].board.shape == (8, 6), prose
    for text, words in (("# width=3 height=2 colors=\u00b3\n112233\n", "boards.txt:1: header colors=\u00b3: a whole "
                                                                      "number of colours"),
                        ("# width=\u00b3 height=2\n112233\n", "boards.txt:1: header '# width=\u00b3 height=2': width "
                                                               "must be a positive integer"),
                        ("# width=3 height=2\n112233 1_2\n", "boards.txt:2: field 2 is '1_2'"),
                        ("# width=3 height=2\n112233 \uff11\n", "boards.txt:2: field 2 is '\uff11'")):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError, match=re.escape(words)):
            jaxdust.read_board_file(path)
    for size in ("1_0x6x5", "\uff18x6x5"):
        with pytest.raises(ValueError, match="size must look like 8x6x5"):
            board_io.parse_size(size)


def test_text_that_is_not_utf8_says_what_it_looks_like(tmp_path):
    """UTF-16 (Notepad's 'Unicode', PowerShell 5's ``>``; without a byte-order mark it
    decodes as UTF-8, a NUL beside each character) and gzip get their usual cause named;
    bytes given to parse_board are named as bytes (numpy made a string dtype of them)."""
    path = tmp_path / "boards.txt"
    text = "# width=3 height=2\n112233\n"
    encoded = [(text.encode(utf16), "it looks like UTF-16") for utf16 in ("utf-16", "utf-16-le", "utf-16-be")]
    # UTF-32's byte-order mark begins as UTF-16's does: it was named UTF-16.
    encoded += [(text.encode(utf32), "it looks like UTF-32: save it as UTF-8") for utf32 in ("utf-32", "utf-32-le", "utf-32-be")]
    for data, words in encoded + [(gzip.compress(text.encode()), "gzip")]:
        path.write_bytes(data)
        with pytest.raises(ValueError, match=f"board file .*boards.txt is not UTF-8 text.*{words}"):
            jaxdust.read_board_file(path)
    with pytest.raises(ValueError, match=re.escape("board is bytes; pass its text (data.decode()) or an array")):
        jaxdust.parse_board(TEXT.encode())


def test_a_header_after_the_first_board_cannot_change_the_files_rules_or_colours(tmp_path, capsys):
    """Its width= and height= held for the boards after it, but its rules= and colors= were
    read only before the first board: a Former board after a dust one was solved (and
    evaluated) as the dust game's, 4 clicks where Former's optimum is 6."""
    path = tmp_path / "boards.txt"
    board = "131222113332"
    refusals = {
        f"# width=4 height=3\n{board}\n# width=4 height=3 rules=former\n{board}\n":
            "boards.txt:3: rules=former after the first board, in a file of rules=dust: a file's rules and colour "
            "cap hold for all its boards (put boards of other rules or colours in a file of their own)",
        f"# width=4 height=3 rules=former\n{board}\n# rules=dust\n{board}\n":
            "boards.txt:3: rules=dust after the first board, in a file of rules=former:",
        # A dust file as the project writes it (no rules=), pasted after a Former one.
        f"# width=4 height=3 colors=3 rules=former\n{board}\n# width=4 height=3 colors=3\n{board}\n":
            "boards.txt:3: a header with colors= and no rules= (a dust file's) after the first board, in a file "
            "of rules=former colors=3:",
        f"# width=4 height=3 colors=3\n{board}\n# width=4 height=3 colours=4\n{board}\n":
            "boards.txt:3: colors=4 after the first board, in a file of rules=dust colors=3:",
        # Not a number of colours: refused as before the first board, not passed over.
        f"# width=4 height=3 colors=3\n{board}\n# width=4 height=3 colors=three\n{board}\n":
            "boards.txt:3: header colors=three: a whole number of colours 1..",
        f"# width=4 height=3 colors=3\n{board}\n# colors=0\n{board}\n":
            "boards.txt:3: header colors=0: a whole number of colours 1..",
    }
    for text, message in refusals.items():
        path.write_text(text)
        with pytest.raises(ValueError, match=re.escape(message)):
            jaxdust.read_board_file(path)
        with pytest.raises(SystemExit):
            solver_cli.main([str(path), "--jobs", "1"])
        assert message in capsys.readouterr().err
    # The file's own rules again (in any case), a cap no higher (two dust files the project
    # wrote, one after the other), or a new size alone, are what they always were.
    for text in (f"# width=4 height=3 colors=3 rules=former\n{board}\n# width=3 height=4 Rules=Former colors=03\n"
                 f"{board}\n# width=4 height=3\n{board}\n",
                 f"# width=4 height=3 colors=3\n{board}\n# width=4 height=3 colors=2\n{board.replace('3', '1')}\n",
                 f"# width=4 height=3\n{board}\n# width=4 height=3 colors=3\n{board}\n"):
        path.write_text(text)
        assert len(jaxdust.read_board_file(path)) == text.count("\n") // 2


def test_a_lower_colour_cap_after_the_first_board_holds_for_the_boards_after_it(tmp_path, capsys):
    """It was taken and never read: colour 5 passed under a later ``colors=3``."""
    path = tmp_path / "boards.txt"
    for text, line in [("# width=2 height=2 colors=5\n1111\n# width=2 height=2 colors=3\n1313\n1515\n", 5),
                       ("# width=2 height=2\n1515\n# width=2 height=2 colors=3\n1515\n", 4),
                       ("# width=2 height=2 colors=5\n1111\n# colors=3\n1313\n# colors=5\n1515\n# colors=4\n"
                        "1515\n", 8)]:
        path.write_text(text)
        with pytest.raises(ValueError, match=re.escape(f"boards.txt:{line}: the board holds colour 5; the header says "
                                                       "colors=")):
            jaxdust.read_board_file(path)
        solver_cli.main([str(path), "--jobs", "1", "--out", str(tmp_path / f"solved{line}.jsonl")])
        errors = [json.loads(row) for row in (tmp_path / f"solved{line}.jsonl").read_text().splitlines()]
        assert [row["line"] for row in errors if "error" in row] == [line]
    capsys.readouterr()
    path.write_text("# width=2 height=2 colors=5\n1111\n# colors=3\n1313\n# colors=5\n1515\n")
    assert len(jaxdust.read_board_file(path)) == 3  # back at the file's cap


def test_a_huge_number_after_a_board_and_a_bad_digit_after_spaces_are_named_where_they_are(tmp_path):
    path = tmp_path / "boards.txt"
    path.write_text("# width=2 height=2\n1111 " + "9" * 5000 + "\n")
    with pytest.raises(ValueError, match=re.escape("boards.txt:2: field 2 has 5000 digits; the numbers after a board "
                                                   "(lengths, scores) have 18 at most")):
        jaxdust.read_board_file(path)
    for text, place in (("   1x11", 4), ("\n\n11x1", 4), ("11x1", 2)):
        with pytest.raises(ValueError, match=f"'x' at position {place};"):
            jaxdust.parse_board(text, 2, 2)


def test_headers_before_the_first_board_cannot_contradict_each_other(tmp_path):
    """The first rules= and colors= won without a word (a colour-3 board read under a later
    colors=2), and two fields on one line went the other way, the last winning."""
    path = tmp_path / "boards.txt"
    board = "131222113332"
    refusals = {
        f"# width=4 height=3 colors=3\n# colors=2\n{board}\n":
            "boards.txt:2: header colors=2, where an earlier header says colors=3: a file's rules and colour cap",
        f"# width=4 height=3 rules=former\n# rules=samegame\n{board}\n":
            "boards.txt:2: header rules=samegame, where an earlier header says rules=former",
        f"# width=4 height=3 colors=3 colors=2\n{board}\n": "boards.txt:1: header 'width=4 height=3 colors=3 colors=2' sets colors "
                                                         "twice, to 3 and 2",
    }
    for text, message in refusals.items():
        path.write_text(text)
        with pytest.raises(ValueError, match=re.escape(message)):
            jaxdust.read_board_file(path)
    # Saying the same again, in any spelling, is no contradiction.
    path.write_text(f"# width=4 height=3 rules=former colors=3 Rules=FORMER colours=03\n# colours=3 rules=Former\n"
                    f"{board}\n")
    assert len(jaxdust.read_board_file(path)) == 1


def test_the_solver_refuses_a_board_file_of_two_sizes_before_solving(tmp_path, capsys):
    """It solved every board, then said that --board-file needs boards of one size."""
    path = tmp_path / "boards.txt"
    path.write_text("# width=4 height=3 colors=3\n323323311113\n# width=3 height=4\n323323311113\n")
    with pytest.raises(SystemExit) as exit_info:
        solver_cli.main([str(path), "--jobs", "1", "--out", str(tmp_path / "out.jsonl"),
                         "--board-file", str(tmp_path / "proven.txt")])
    assert exit_info.value.code == 2 and not (tmp_path / "out.jsonl").exists()
    assert capsys.readouterr().err.strip().endswith(
        "error: --board-file needs boards of one size, and the boards to solve are 3x4, 4x3 (--lines picks those "
        "of one)")
    # One size at a time, as before.
    assert solver_cli.main([str(path), "--jobs", "1", "--lines", "4", "--out", str(tmp_path / "out.jsonl"),
                            "--board-file", str(tmp_path / "proven.txt")]) == 0
    assert (tmp_path / "proven.txt").read_text().startswith("# width=3 height=4")


def test_malformed_board_file_line_is_named(tmp_path):
    path = tmp_path / "boards.txt"
    path.write_text("# width=2 height=2\n1122 3\n11x2 4\n")
    with pytest.raises(ValueError, match=r"boards.txt:3: board text has 'x' at position 2"):
        jaxdust.read_board_file(path)


def test_files_of_optima_are_known_proven_by_their_column_comment(boards_dir, tmp_path, monkeypatch):
    """``evaluate.py`` calls a file's numbers proven optima where RULES.md's column comment
    (``# board optimal_clicks``) says so, or where each line's lower bound equals its length,
    from a path or from standard input; the same numbers under another comment stay "best
    known"."""
    import argparse
    import io
    import sys

    from jaxdust.core.boards import reference_columns
    from jaxdust.evaluation.cli import load_board_set

    def proven(path):
        return load_board_set(argparse.Namespace(random=None, boards=str(path), limit=None, size=jaxdust.GameConfig(),
                                                 env=None))[2]

    def declared(path):
        return reference_columns(path.read_text().splitlines()) == "optima"

    for name in ("optimal_6x6x5.txt", "optimal_8x4x5.txt", "optimal_8x6x5.txt"):
        assert declared(boards_dir / name) and proven(boards_dir / name), name
    assert proven(boards_dir / "fewest_clicks_v1_8x6x5.txt") and not declared(boards_dir / "fewest_clicks_v1_8x6x5.txt")
    assert not proven(boards_dir / "eval_8x6x5.txt")  # a beam's best lengths
    text = (boards_dir / "optimal_8x4x5.txt").read_text()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert proven("-")
    relabelled = tmp_path / "best.txt"
    relabelled.write_text(text.replace("# board optimal_clicks", "# board best_clicks"))
    assert not declared(relabelled) and not proven(relabelled)
    late = tmp_path / "late.txt"  # a column comment after the first board describes nothing
    lines = text.splitlines()
    late.write_text("\n".join([lines[0], *lines[2:4], lines[1], *lines[4:]]) + "\n")
    assert not declared(late)


@pytest.mark.parametrize("rules", ["dust", "former", "samegame", "clickomania"])
def test_a_batch_is_screened_for_unsettled_boards_as_one_board_is_checked(rules):
    """``require_settled`` screens a batch at once; it must refuse exactly the boards that
    ``parse_board`` refuses, and name the first with ``parse_board``'s reason."""

    rng = np.random.default_rng(7)
    shapes = [(w, h) for w in (2, 3, 4, 5) for h in (1, 2, 3)]
    for width, height in shapes:
        # Sparse random boards: about half unsettled, half settled after contraction.
        raw = rng.integers(0, 3, (300, width, height)) * (rng.random((300, width, height)) < 0.6)
        settled = np.stack([np.asarray(jaxdust.contract(jnp.asarray(b, jnp.int8), rules=rules)) for b in raw[:150]])
        batch = np.concatenate([settled, raw[150:]]).astype(np.int8)
        for index, board in enumerate(batch):
            try:
                jaxdust.parse_board(board, rules=rules)
                expected = None
            except jaxdust.UnsettledBoardError as error:  # its own type, so a caller can tell it apart
                expected = str(error)
            if expected is None:
                board_io.require_settled(board[None], rules)
            else:
                with pytest.raises(jaxdust.UnsettledBoardError) as caught:
                    board_io.require_settled(batch[index:index + 1], rules)
                assert str(caught.value) == f"board 0: {expected}"
    if rules in ("dust", "former"):  # beam_search's rule sets
        with pytest.raises(jaxdust.UnsettledBoardError, match="beam_search: board 1: cell .* floats above an empty cell"):
            jaxdust.beam_search(np.array([[[1, 0], [2, 2]], [[0, 1], [2, 2]]], np.int8), 2, rules=rules)


def test_a_file_s_unsettled_board_keeps_its_own_error_type_behind_the_line_number(tmp_path):
    unsettled, wrong_colour = tmp_path / "unsettled.txt", tmp_path / "colour.txt"
    unsettled.write_text("# width=2 height=2\n1122\n0112\n")
    wrong_colour.write_text("# width=2 height=2 colors=2\n1122\n1132\n")
    with pytest.raises(jaxdust.UnsettledBoardError, match=f"^{re.escape(str(unsettled))}:3: cell \\(0, 1\\) floats"):
        jaxdust.read_board_file(unsettled)
    with pytest.raises(ValueError, match=f"^{re.escape(str(wrong_colour))}:3: ") as caught:
        jaxdust.read_board_file(wrong_colour)
    assert not isinstance(caught.value, jaxdust.UnsettledBoardError)


def test_the_searches_refuse_a_batch_naming_its_first_unsettled_board():
    settled, floating = [[1, 1], [2, 2], [1, 2]], [[1, 0, 1], [2, 2, 2], [1, 1, 1]]
    batch = np.array([[[1, 1, 0], [2, 2, 0], [1, 2, 0]]] * 2 + [floating] + [[[1, 1, 0], [2, 2, 0], [1, 2, 0]]], np.int8)
    for search, rules in ((jaxdust.beam_search, "dust"), (jaxdust.points_beam, "samegame")):
        with pytest.raises(jaxdust.UnsettledBoardError, match=r"board 2: cell \(0, 2\) floats above an empty cell"):
            search(batch, 2, rules=rules)
    assert int(jaxdust.points_beam(np.array(settled, np.int8), 2, rules="samegame").value) >= 0


def test_flat_action_lines_that_click_cell_zero_replay_and_score_whole():
    """Action 0, the cell (0, 0), is a click like any other in a flat line; only negative
    actions are padding."""
    board = np.array([[1], [2]], np.int8)  # 2 x 1: two single cells
    final, clicks = jaxdust.replay(board, np.array([1, 0, -1, -1]))
    assert clicks == 2 and not np.asarray(final).any()
    assert jaxdust.score(board, np.array([1, 0, -1]), "dust") == 2
    assert jaxdust.score(board, [1, 0], "former") == 2
