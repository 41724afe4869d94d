"""Baseline policies, batched play of board sets, summaries and the evaluate.py CLI."""

import csv
import io
import json
import os
import re
import shutil
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evaluate
import jaxdust
from jaxdust.core import play
from jaxdust.evaluation import baselines, ranking, registry, stats
from jaxdust.evaluation import cli as evaluate_cli
from jaxdust.learn.runs import RunError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def eval_set(boards_dir):
    records = jaxdust.read_board_file(boards_dir / "eval_8x6x5.txt")[:300]
    boards = jnp.stack([r.board for r in records])
    return boards, np.array([r.values[0] for r in records]), np.array([r.values[1] for r in records])


def test_largest_first_reproduces_the_eval_file(eval_set):
    boards, largest_first, _ = eval_set
    played = play.play_boards(boards, baselines.largest_cluster, jax.random.key(0), 48)
    np.testing.assert_array_equal(played.clicks, largest_first)
    assert bool(played.cleared.all())


def test_recorded_actions_replay_to_an_empty_board(eval_set):
    boards = eval_set[0][:20]
    played = play.play_boards(boards, baselines.random_legal, jax.random.key(1), 48)
    for board, actions, clicks in zip(boards, np.asarray(played.actions), np.asarray(played.clicks)):
        taken = actions[actions >= 0]
        assert len(taken) == clicks
        final, count = jaxdust.replay(board, [(a // 6, a % 6) for a in taken])
        assert count == clicks and bool(jaxdust.is_done(final))


def test_random_play_is_seeded_and_never_wastes_clicks(eval_set):
    boards = eval_set[0][:64]
    first = play.play_boards(boards, baselines.random_legal, jax.random.key(2), 48)
    again = play.play_boards(boards, baselines.random_legal, jax.random.key(2), 48)
    other = play.play_boards(boards, baselines.random_legal, jax.random.key(3), 48)
    np.testing.assert_array_equal(first.actions, again.actions)
    assert not np.array_equal(first.actions, other.actions)
    assert bool(first.cleared.all()) and int(first.clicks.max()) <= 48


def clicks_bottom_left(key, board, params=None):
    return jnp.int32(0)


def test_click_cap_stops_policies_that_never_finish(eval_set):
    played = play.play_boards(eval_set[0][:4], clicks_bottom_left, jax.random.key(0), 30)
    assert not bool(played.cleared.any())
    np.testing.assert_array_equal(played.clicks, [30, 30, 30, 30])


def sometimes_off_the_board(key, board, params):
    """Half the time -1 (off the board), else the first occupied cell."""
    first = jnp.argmax(board.reshape(-1) != 0).astype(jnp.int32)
    return jnp.where(jax.random.bernoulli(key, 0.5), jnp.int32(-1), first)


def test_a_policys_clicks_off_the_board_are_logged_as_such_not_as_the_lines_end(eval_set):
    """A policy's -1 was logged as -1, the mark after a line's end, so ``score`` dropped the
    rest of the line; off the board is logged as ``W * H``, one value, whatever the policy gave."""
    boards = eval_set[0][:6]
    cells = boards.shape[1] * boards.shape[2]
    played = play.play_boards(boards, sometimes_off_the_board, jax.random.key(0), 200)
    assert bool(played.cleared.all())
    for clicks, actions, board in zip(np.asarray(played.clicks), np.asarray(played.actions), np.asarray(boards)):
        line = actions[:clicks]
        assert (actions[clicks:] == -1).all() and (line >= 0).all() and (line == cells).any()
        on_board = line[line < cells]
        assert jaxdust.score(board, on_board) == len(on_board)  # the clicks that hit the board clear it
        with pytest.raises(ValueError, match="outside"):
            jaxdust.score(board, line, wasted=True)


@pytest.mark.parametrize("policy", [baselines.largest_cluster, baselines.random_legal])
def test_chunked_play_equals_one_batch_even_for_random_policies(eval_set, policy, compile_log):
    """Each board plays with its own key, so ``--chunk`` (how many boards at a time) moves
    no result; it did for random agents, whose keys were drawn per chunk. A second call
    with other boards compiles nothing: the chunks were cut, padded and joined on the
    device, a program for each new size (17 for 39 boards at chunk 8)."""
    boards = eval_set[0][:50]
    whole = play.play_boards(boards, policy, jax.random.key(0), 48)
    for chunk in (16, 7):
        chunked = play.play_in_chunks(boards, policy, jax.random.key(0), 48, chunk)
        np.testing.assert_array_equal(whole.clicks, chunked.clicks)
        np.testing.assert_array_equal(whole.actions, chunked.actions)
    others = np.asarray(eval_set[0])[50:89]
    play.play_in_chunks(others, policy, jax.random.key(2), 48, 16)  # the keys of 39 boards
    for chunk in (16, 7):
        _, compiled = compile_log(lambda: play.play_in_chunks(others, policy, jax.random.key(3), 48, chunk))
        assert not [message for message in compiled if message.startswith("Compiling ")], compiled
    assert not np.array_equal(whole.actions, play.play_boards(boards, policy, jax.random.key(1), 48).actions) \
        or policy is baselines.largest_cluster  # the key matters to a random policy


def test_a_random_board_plays_alike_among_more_boards_in_either_threefry_mode(eval_set):
    """``--limit 12`` plays its boards as the first 12 of the whole set do, even under
    JAX's other threefry mode, where ``split(key, n)``'s keys change with ``n``."""
    boards = eval_set[0][:30]
    with jax.threefry_partitionable(False):
        whole = play.play_boards(boards, baselines.random_legal, jax.random.key(4), 48)
        first = play.play_in_chunks(boards[:12], baselines.random_legal, jax.random.key(4), 48, 5)
    np.testing.assert_array_equal(whole.actions[:12], first.actions)


def test_summary_numbers_by_hand():
    summary = stats.summarize(
        clicks=[10, 12, 14, 48], cleared=[True, True, True, False],
        best_known=[10, 11, 14, 12], reference=[11, 11, 13, 20],
    )
    # The board not cleared counts at the 48 clicks it was stopped at.
    assert summary["boards"] == 4 and summary["not_cleared"] == 1
    assert summary["mean"] == 21.0 and summary["median"] == 13.0
    assert summary["std"] == pytest.approx(np.std([10, 12, 14, 48], ddof=1))  # the sample deviation, as se's
    assert summary["se"] == pytest.approx(summary["std"] / 2)
    assert summary["share_equal_best"] == 0.5
    assert summary["mean_gap_to_best"] == pytest.approx((0 + 1 + 0 + 36) / 4)
    assert summary["share_at_least_as_good_as_reference"] == 0.25
    # Standard errors by hand: sample deviations (n - 1) over sqrt(n); the gap's and the
    # difference's are paired, from the per-board differences.
    assert summary["se"] == pytest.approx(np.sqrt(np.sum((np.array([10, 12, 14, 48]) - 21.0) ** 2) / 3) / 2)
    gaps = np.array([0, 1, 0, 36])
    assert summary["gap_se"] == pytest.approx(np.sqrt(np.sum((gaps - gaps.mean()) ** 2) / 3) / 2)
    differences = np.array([-1, 1, 1, 28])
    assert summary["mean_difference_to_reference"] == pytest.approx(7.25)
    assert summary["difference_se"] == pytest.approx(np.sqrt(np.sum((differences - 7.25) ** 2) / 3) / 2)
    one = stats.summarize([12], [True], best_known=[11])  # one board: no spread, so no error (not an exact 0)
    assert np.isnan(one["std"]) and np.isnan(one["se"]) and np.isnan(one["gap_se"]) and one["mean"] == 12
    # A board neither the agent nor the reference agent cleared is a tie at the cap; one the
    # reference cleared and the agent did not is not.
    tied = stats.summarize(clicks=[20, 20, 9], cleared=[False, False, True], reference=[20, 15, 9],
                           reference_cleared=[False, True, True])
    assert tied["share_at_least_as_good_as_reference"] == pytest.approx(2 / 3)


def _reference(path, rules="dust"):
    import argparse

    from jaxdust.evaluation.cli import load_board_set

    size = jaxdust.GameConfig(8, 4, 5, rules)
    _, best, proven, _, _ = load_board_set(argparse.Namespace(random=None, boards=str(path), limit=None, size=size,
                                                              env=size))  # as --env of those rules
    return (None if best is None else best.tolist()), proven


def test_a_board_files_reference_follows_its_columns(tmp_path, boards_dir, capsys, monkeypatch):
    """What a file's numbers are comes from its comments, never from the numbers: a
    fewest-clicks set's reference is its fewest clicks found (proven where every lower bound
    equals it); a file of largest-first and best-known columns is best known, even where the
    two agree; lengths of other rules are no reference for these."""
    lines = (boards_dir / "fewest_clicks_v1_8x4x5.txt").read_text().splitlines()[:6]
    boards = [line.split()[0] for line in lines[3:]]
    fewest = tmp_path / "fewest.txt"
    fewest.write_text("\n".join(lines[:3] + [f"{boards[0]} 10 10", f"{boards[1]} 9 8", f"{boards[2]} 10 10"]) + "\n")
    assert _reference(fewest) == ([10, 9, 10], False)  # best known: 9 found, 8 only a bound
    proven = tmp_path / "proven.txt"
    proven.write_text(fewest.read_text().replace(" 9 8", " 9 9"))
    assert _reference(proven) == ([10, 9, 10], True)
    beam = tmp_path / "beam.txt"  # eval_8x6x5.txt's columns: largest first, best known
    beam.write_text("\n".join([lines[0], "# columns: board, clicks of largest-cluster-first, best known clicks"]
                              + [f"{board} 13 13" for board in boards]) + "\n")
    assert _reference(beam) == ([13, 13, 13], False)
    capsys.readouterr()
    beam.write_text(beam.read_text().replace(f"{boards[1]} 13 13", boards[1]))  # one line with no length
    assert _reference(beam) == (None, False)
    assert "beam.txt:4 gives no length after its board where other lines do" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(beam.read_bytes())))
    assert _reference("-") == (None, False)
    assert "note: standard input:4 gives no length" in capsys.readouterr().err  # was "-:4"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"# rules=bogus\n")))
    with pytest.raises(ValueError, match="^standard input:1: unknown rules 'bogus'"):
        _reference("-")
    fewest.write_text(fewest.read_text().replace(" 9 8", " 9"))  # a lower bound missing
    with pytest.raises(ValueError, match=r"fewest.txt:5: a fewest-clicks set's line is the board, the fewest"):
        _reference(fewest)
    former = tmp_path / "former.txt"
    former.write_text(proven.read_text().replace("colors=5;", "colors=5 rules=former;"))
    assert _reference(former, "former") == ([10, 9, 10], True)
    capsys.readouterr()
    assert _reference(former) == (None, False)  # former's lengths, dust play
    assert "gives lengths under the former rules; these boards are played under dust" in capsys.readouterr().err


def test_a_former_file_played_under_env_of_the_dust_game_says_why_its_boards_do_not_fit(tmp_path, capsys):
    """A Former board with an empty column between full ones is settled under Former's
    gravity, not under the dust game's: the refusal names the file's rules and --env's."""
    path = tmp_path / "former.txt"
    path.write_text("# width=6 height=6 colors=4 rules=former\n" + "123412" + "000000" + "341234" * 4 + "\n")
    with pytest.raises(SystemExit):
        evaluate.main(["--boards", str(path), "--env", "Dust-6x6x5-v0", "--agents", "largest",
                       "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert f"{path}:2: " in err and "must be settled under the dust rules" in err
    assert "the file's boards are former's (its rules= header) and --env plays dust" in err
    plain = tmp_path / "dust.txt"  # no rules= header: the dust game's boards, whose edge columns may be empty
    plain.write_text("# width=10 height=10 colors=4\n" + "0" * 10 + "1234123412" * 9 + "\n")
    with pytest.raises(SystemExit):
        evaluate.main(["--boards", str(plain), "--env", "Clickomania-10x10x4-v0", "--agents", "largest",
                       "--out", str(tmp_path / "out")])
    assert ("the file's boards are the dust game's (it has no rules= header) and --env plays clickomania"
            in capsys.readouterr().err)
    report = evaluate.main(["--boards", str(path), "--agents", "largest", "--out", str(tmp_path / "out")])
    assert report["rules"] == "former" and report["agents"]["largest"]["not_cleared"] == 0  # under its own rules
    # Where the file and --env agree on the rules, or the board is wrong in another way, no
    # word about rules follows the refusal.
    unsettled = tmp_path / "unsettled.txt"
    unsettled.write_text("# width=6 height=6 colors=4\n" + "012341" + "123412" * 5 + "\n")
    wrong_colour = tmp_path / "colour.txt"
    wrong_colour.write_text("# width=6 height=6 colors=4 rules=former\n" + "123451" + "341234" * 5 + "\n")
    for board_file, words in ((unsettled, "must be settled under the dust rules"), (wrong_colour, "colour")):
        with pytest.raises(SystemExit):
            evaluate.main(["--boards", str(board_file), "--env", "Dust-6x6x5-v0", "--agents", "largest",
                           "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert words in err and "the file's boards are" not in err, err


def test_a_plain_board_file_with_prose_in_its_header_plays_with_no_note(tmp_path, capsys):
    """Header names far from width/height/colors/rules are prose, and a file with no
    lengths at all is compared with none, without the note meant for a file that lost some."""
    path = tmp_path / "plain.txt"
    path.write_text("# width=4 height=2 colors=3 boards=2 scores=0 lines=2\n11220000\n22110000\n")
    report = evaluate.main(["--boards", str(path), "--agents", "largest", "--out", str(tmp_path / "out")])
    assert report["boards"].startswith("2 boards from") and (report["agents"]["largest"]["not_cleared"], report["reference"]) == (0, "largest")
    assert "note:" not in capsys.readouterr().err


def test_a_board_files_numbers_that_cannot_be_true_are_refused_or_named(tmp_path, boards_dir, capsys):
    """A negative length, one board given two proven optima, an unknown rule set, a board
    with no optimum in a file of optima, an optimum of 0 clicks for a full board and a lower
    bound above the fewest clicks are refused naming the file; an agent that clears a
    board below its proven optimum is reported, since the file's optimum is then wrong."""
    lines = (boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[:4]
    board, optimum = lines[2].split()
    cases = [(lines[:2] + [f"{board} -5"], "field 2 is -5; the numbers after a board (lengths, scores) are >= 0"),
             (lines[:2] + [f"{board} {optimum}", f"{board} {int(optimum) + 1}"],
              f"its board's proven optimum is {int(optimum) + 1}, line 3's (the same board) {optimum}"),
             ([lines[0].replace("colors=5", "colors=5 rules=bogus")] + lines[1:], "bogus.txt:1: unknown rules 'bogus'"),
             (lines[:3] + [lines[3].split()[0]], "bad-3.txt:4: no optimum after the board, in a file of proven optima"),
             (lines[:2] + [f"{board} 0"], "bad-4.txt:3: 0 clicks for a board that is not empty"),
             (["# width=8 height=4", "# columns: board, fewest clicks found, proven lower bound (equal: the optimum)",
               f"{board} {optimum} {int(optimum) + 2}"],
              f"bad-5.txt:3: its proven lower bound {int(optimum) + 2} is above its fewest clicks found {optimum}")]
    for index, (text, words) in enumerate(cases):
        path = tmp_path / ("bogus.txt" if index == 2 else f"bad-{index}.txt")
        path.write_text("\n".join(text) + "\n")
        capsys.readouterr()
        with pytest.raises(SystemExit):
            evaluate.main(["--boards", str(path), "--agents", "largest", "--out", str(tmp_path / "out")])
        assert words in capsys.readouterr().err
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("\n".join(lines[:2] + [f"{board} {int(optimum) + 3}"]) + "\n")
    capsys.readouterr()
    evaluate.main(["--boards", str(wrong), "--agents", "cpu-beam:64", "--jobs", "1", "--out", str(tmp_path / "out")])
    assert f"below its proven optimum {int(optimum) + 3} in {wrong}" in capsys.readouterr().err


def test_a_column_that_is_no_length_is_refused_before_play(tmp_path, boards_dir, capsys):
    """A seed or a time as a line's last number was taken as its length: every agent played,
    then the histogram asked for a bin per click up to it (a MemoryError traceback)."""
    lines = (boards_dir / "optimal_8x4x5.txt").read_text().splitlines()[:3]
    stamped = tmp_path / "stamped.txt"
    stamped.write_text(f"# width=8 height=4\n{lines[2].split()[0]} 1732971234\n")
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["--boards", str(stamped), "--agents", "largest", "--out", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert "stamped.txt:2: 1732971234 clicks for a board of 32 cells" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    with pytest.raises(SystemExit):  # random boards: no file to blame
        evaluate.main(["--random", "2", "--size", "6x5x4", "--reference", "best", "--agents", "largest",
                       "--out", str(tmp_path / "out")])
    assert "--reference best: --random's boards have no reference lengths" in capsys.readouterr().err


def test_an_interrupted_evaluation_plays_only_the_agents_it_had_not_finished(tmp_path, monkeypatch, capsys):
    """A Ctrl-C lost every agent played (an hour's solver:N on the whole set). Each
    finished agent's play is kept until the report is written; the rerun plays the rest and
    writes what an uninterrupted run writes, and a rerun with other boards plays them all."""
    argv = ["--random", "6", "--size", "6x5x4", "--agents", "largest,random,beam:4", "--animate", "1"]
    whole = evaluate.main([*argv, "--out", str(tmp_path / "whole")])
    played, interrupt = [], ["random"]
    real = registry.run_agent

    def counted(name, *args, **kwargs):
        if name in interrupt:
            interrupt.remove(name)
            raise KeyboardInterrupt
        played.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(registry, "run_agent", counted)
    out = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt):
        evaluate.main([*argv, "--out", str(out)])
    assert played == ["largest"] and os.listdir(out / evaluate_cli.PLAYED) == ["largest.json"]
    report = evaluate.main([*argv, "--out", str(out)])
    assert played == ["largest", "random", "beam:4"]
    assert "(played before the interruption, kept in" in capsys.readouterr().out
    for name in ("largest", "random", "beam:4"):
        mine, uninterrupted = report["agents"][name], whole["agents"][name]
        assert {k: v for k, v in mine.items() if k != "seconds_per_board"} == \
            {k: v for k, v in uninterrupted.items() if k != "seconds_per_board"}
    assert sorted(os.listdir(out)) == sorted(os.listdir(tmp_path / "whole"))  # the kept play is gone with the report
    assert (out / "boards.csv").read_text() == (tmp_path / "whole" / "boards.csv").read_text()
    # Kept play describes its boards, seed and settings: other boards play every agent again.
    interrupt.append("beam:4")
    with pytest.raises(KeyboardInterrupt):
        evaluate.main([*argv, "--out", str(out)])
    del played[:]
    evaluate.main([*argv, "--seed", "1", "--out", str(out)])
    assert played == ["largest", "random", "beam:4"]


@pytest.mark.parametrize("damage", ["short", "negative", "no solutions", "not a list", "off the board"])
def test_kept_play_that_is_damaged_is_played_again(tmp_path, monkeypatch, damage):
    """Its identity holds nothing secret: an edited or damaged file's play, too short for the
    boards, ended in an IndexError; one of negative clicks went into the report."""
    argv = ["--random", "3", "--size", "6x5x4", "--agents", "largest,random", "--animate", "1"]
    whole = evaluate.main([*argv, "--out", str(tmp_path / "whole")])
    played, real = [], registry.run_agent

    def counted(name, *args, **kwargs):
        played.append(name)
        if name == "random" and played.count("random") == 1:
            raise KeyboardInterrupt
        return real(name, *args, **kwargs)

    monkeypatch.setattr(registry, "run_agent", counted)
    out = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt):
        evaluate.main([*argv, "--out", str(out)])
    kept = out / evaluate_cli.PLAYED / "largest.json"
    saved = json.loads(kept.read_text())
    clicks = saved["play"]["clicks"]["array"]
    if damage == "short":
        saved["play"]["clicks"]["array"] = clicks[:1]
    elif damage == "negative":
        saved["play"]["clicks"]["array"] = [-5] + clicks[1:]
    elif damage == "no solutions":
        saved["play"]["solutions"] = []
    elif damage == "off the board":  # drawn in the GIF: a ValueError, once a traceback
        saved["play"]["solutions"][0][0] = [99, 99]
    else:
        saved["play"] = []
    kept.write_text(json.dumps(saved))
    report = evaluate.main([*argv, "--out", str(out)])
    assert played == ["largest", "random", "largest", "random"]
    mine, uninterrupted = report["agents"]["largest"], whole["agents"]["largest"]
    assert {k: v for k, v in mine.items() if k != "seconds_per_board"} == \
        {k: v for k, v in uninterrupted.items() if k != "seconds_per_board"}


def test_kept_play_is_an_agents_however_spelled_and_a_run_gone_since_is_one_line(tmp_path, monkeypatch, capsys):
    played, real = [], registry.run_agent
    run = shutil.copytree(os.path.join(os.path.dirname(jaxdust.__file__), "data", "networks", "avi-8x6x5"),
                          tmp_path / "run")

    def counted(name, *args, **kwargs):
        played.append(name)
        if name == "random":
            raise KeyboardInterrupt
        if name == "largest" and os.path.isdir(tmp_path / "gone"):
            shutil.rmtree(tmp_path / "gone")  # the run of the next agent, after its check
        return real(name, *args, **kwargs)

    monkeypatch.setattr(registry, "run_agent", counted)
    argv = ["--random", "3", "--out", str(tmp_path / "out")]
    with pytest.raises(KeyboardInterrupt):
        evaluate.main([*argv, "--agents", "largest,beam:4,random"])
    with pytest.raises(KeyboardInterrupt):
        evaluate.main([*argv, "--agents", "beam:04,largest,random"])  # the same agents, spelled and listed otherwise
    assert played == ["largest", "beam:4", "random", "random"]
    # A run removed between the agents' check and its play: a RunError's traceback.
    shutil.copytree(run, tmp_path / "gone")
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main([*argv, "--seed", "1", "--agents", f"largest,policy:{tmp_path / 'gone'}"])
    assert exit_info.value.code == 2
    assert f"agent policy:{tmp_path / 'gone'}: {tmp_path / 'gone'} is not a train.py run directory" in \
        capsys.readouterr().err


def test_an_evaluation_does_not_take_over_another_commands_folder(tmp_path, capsys):
    """``--out RUN_DIR`` removed the run's summary.json and wrote the evaluation's in its
    place (train.py --resume then printed it as the run's)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    (run / "summary.json").write_text('{"argmax_clicks": 9.3}')
    other = tmp_path / "other"
    other.mkdir()
    (other / "summary.json").write_text('{"benchmark": "beam"}')
    # A data set's folder took the evaluation's files beside its shards.
    data_sets = {name: tmp_path / name for name in ("made", "in-progress")}
    (data_sets["made"] / "manifest.json").parent.mkdir()
    (data_sets["made"] / "manifest.json").write_text("{}")
    data_sets["in-progress"].mkdir()
    (data_sets["in-progress"] / "journal.jsonl").write_text("")
    for out, words in ((run, "as a train.py run directory does"), (other, "summary.json is not an evaluation's"),
                       (data_sets["made"], "it holds a data set (manifest.json)"),
                       (data_sets["in-progress"], "it holds a data set (journal.jsonl)")):
        with pytest.raises(SystemExit):
            evaluate.main(["--random", "2", "--size", "6x5x4", "--agents", "largest", "--out", str(out)])
        assert words in capsys.readouterr().err
    assert (run / "summary.json").read_text() == '{"argmax_clicks": 9.3}' and sorted(os.listdir(run)) == [
        "config.json", "summary.json"]
    assert [sorted(os.listdir(folder)) for folder in data_sets.values()] == [["manifest.json"], ["journal.jsonl"]]
    # An evaluation's own folder is taken again, as before.
    evaluate.main(["--random", "2", "--size", "6x5x4", "--agents", "largest", "--out", str(tmp_path / "ev")])
    evaluate.main(["--random", "2", "--size", "6x5x4", "--agents", "random", "--out", str(tmp_path / "ev")])
    assert list(json.loads((tmp_path / "ev" / "summary.json").read_text())["agents"]) == ["random"]


def test_a_search_too_large_for_memory_is_refused_before_any_agent_plays(monkeypatch):
    """A numba beam or an MCTS tree past the machine's memory ended in a MemoryError
    traceback from a worker, after the agents listed before it had played. The beams of
    several processes, and the trees of a chunk of boards, are there at once."""
    from jaxdust.core import machine

    monkeypatch.setattr(machine, "memory_bytes", lambda: 2**30)
    registry.require_playable(["cpu-beam:2000", "mcts-heuristic:64"], "dust", 6, 5, 4, boards=256, jobs=16)
    for names, rules, at_once, words in (
            (["largest", "cpu-beam:1000000"], "dust", {}, "cpu-beam:1000000 on 1 6x5 board at a time: about 4.3 GiB"),
            (["cpu-beam:50000"], "dust", {"boards": 16, "jobs": 16}, "on 16 6x5 boards at a time: about 3.4 GiB"),
            (["cpu-beam:10000000"], "samegame", {}, "cpu-beam:10000000 on 1 6x5 board at a time: about"),
            (["mcts-heuristic:20000"], "dust", {"boards": 300}, "searches of 256 6x5 boards at a time: about 5.0 GiB")):
        with pytest.raises(ValueError, match=words + ".* more than this machine's 1.0 GiB"):
            registry.require_playable(names, rules, 6, 5, 4, **at_once)
    registry.require_playable(["cpu-beam:50000", "mcts-heuristic:20000"], "dust", 6, 5, 4)  # one at a time fits
    with pytest.raises(ValueError, match="searches of 256 6x5 boards at a time"):  # run_agent's chunk, as it plays
        registry.run_agent("mcts-heuristic:20000", np.ones((300, 6, 5), np.int8), key=jax.random.key(0),
                           max_clicks=30)


def test_boards_or_clicks_past_memory_are_refused_in_one_line_naming_the_flag(tmp_path, capsys, monkeypatch):
    """``--random 10**9`` made XLA abort the process while drawing the boards; the clicks of
    every agent's games, kept for the report, are checked before any agent plays."""
    from jaxdust.core import machine

    monkeypatch.setattr(machine, "memory_bytes", lambda: 2**30)
    with pytest.raises(SystemExit) as stop:
        evaluate.main(["--random", "10000000", "--agents", "largest", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert re.search(r"--random 10000000: 10,000,000 random 8x6x5 boards: about [\d.]+ GiB of memory, more than "
                     r"this machine's 1\.0 GiB", err), err
    # Boards that fit, whose games' clicks (kept for every agent) do not (cli.kept_bytes).
    monkeypatch.setattr(machine, "memory_bytes", lambda: 2**30 + 2**29)
    report = evaluate.main(["--random", "1000000", "--limit", "8", "--agents", "largest", "--out", str(tmp_path / "few")])
    assert report["boards"].startswith("8 random 8x6x5 boards")
    with pytest.raises(SystemExit) as stop:
        evaluate.main(["--random", "1000000", "--agents", "largest,random", "--max-clicks", "192", "--out",
                       str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert re.search(r"--agents: 2 agents' clicks on 1,000,000 boards \(up to 192 a game\): about [\d.]+ GiB of "
                     r"memory, more than this machine's 1\.5 GiB; play fewer boards or agents", err), err


def test_the_jax_beam_past_its_hash_tables_is_refused_before_any_agent_plays():
    """Under the points rules the JAX beam keeps positions in hash tables of 4096 cells: a
    larger board is refused by require_playable (as the numba bitboards' 64 cells are), not
    by the search after the agents listed before it had played."""
    registry.require_playable(["largest", "beam:4"], "samegame", 64, 64, 3)
    registry.require_playable(["beam:4"], "dust", 65, 64, 3)  # the click rules' beam has no such tables
    for rules in ("samegame", "clickomania"):
        with pytest.raises(ValueError, match=f"'beam' plays boards of at most 4096 cells under the {rules} rules"):
            registry.require_playable(["largest", "beam:4"], rules, 65, 64, 3)


def test_the_click_cap_holds_for_every_agent_and_counts_in_the_mean(tmp_path, boards_dir, capsys):
    """``--max-clicks``: a search's longer line is not cleared, like a policy stopped at the
    cap, and a board not cleared counts at the cap in the mean (no agent gains by failing)."""
    board_file = tmp_path / "few.txt"
    board_file.write_text("\n".join((boards_dir / "fewest_clicks_v1_8x4x5.txt").read_text().splitlines()[:7]) + "\n")
    optimum = [int(line.split()[1]) for line in board_file.read_text().splitlines()[3:]]
    cap = min(optimum)  # the others need more
    report = evaluate.main(["--boards", str(board_file), "--agents", "largest,cpu-beam:64", "--max-clicks", str(cap),
                            "--jobs", "1", "--out", str(tmp_path / "out"), "--animate", "4"])
    # A game not cleared within the cap is shown as counted (at most the cap's clicks) and named.
    from PIL import Image
    for index in range(4):
        with Image.open(tmp_path / "out" / f"game-cpu-beam-64-{index}.gif") as gif:
            assert gif.n_frames <= cap + 1
    printed = capsys.readouterr()
    assert "not cleared within" in printed.out
    # The cap is below some optima: said, since a game stopped there reads as shorter.
    above = sum(value > cap for value in optimum)
    assert f"note: --max-clicks {cap} is below {above} boards' optimum (up to {max(optimum)})" in printed.err
    assert report["reference"] == "best" and report["reference_proven_optimal"] and report["max_clicks"] == cap
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["max_clicks"] == cap and summary["best_mean"] == pytest.approx(np.mean(optimum))
    assert summary["measured_on"]["cpu"] and summary["measured_on"]["jaxdust"] == jaxdust.__version__
    played = registry.run_agent("cpu-beam:64", jnp.stack([r.board for r in jaxdust.read_board_file(board_file)]),
                                key=jax.random.key(0), max_clicks=36)
    capped = np.minimum(played["clicks"], cap)
    beam = report["agents"]["cpu-beam:64"]
    assert beam["not_cleared"] == int((played["clicks"] > cap).sum()) > 0
    assert beam["mean"] == pytest.approx(capped.mean())
    assert report["agents"]["largest"]["not_cleared"] == 4 and report["agents"]["largest"]["mean"] >= beam["mean"]
    # Against an agent, the file's optima prove nothing about the reference.
    against = evaluate.main(["--boards", str(board_file), "--agents", "largest,cpu-beam:64", "--reference", "largest",
                             "--jobs", "1", "--out", str(tmp_path / "against")])
    assert against["reference"] == "largest" and not against["reference_proven_optimal"]
    assert against["max_clicks"] == 8 * 4  # the default cap: a click a cell
    # Named as --agents spells it, or otherwise: the same agent.
    spelled = evaluate.main(["--random", "3", "--size", "5x4x3", "--agents", "largest,cpu-beam:8", "--reference",
                             "cpu-beam:008", "--jobs", "1", "--out", str(tmp_path / "spelled")])
    assert spelled["reference"] == "cpu-beam:8"


def test_plots_count_unfinished_games_as_neither_equal_nor_shorter_and_bin_whole_numbers(monkeypatch):
    from jaxdust.evaluation import plots

    drawn = []
    write_png = plots._png
    monkeypatch.setattr(plots, "_png", lambda figure: drawn.append(figure) or write_png(figure))
    plots.joint_histogram(np.array([4, 5, 6]), np.array([4, 5, 6]), "a", "b")  # one board in each cell
    square, scale = drawn[-1].axes
    assert square.get_xlim() == square.get_ylim() == (3.5, 6.5)  # no empty row or column past the data
    assert set(scale.get_yticks()) <= {0.0, 1.0}  # whole counts of boards, from 0
    plots.length_histograms({"a": np.array([3, 4, 5])}, "t")
    assert all(tick == int(tick) for tick in drawn[-1].axes[0].get_yticks())

    agent, optimum = np.array([11, 11, 12, 10]), np.array([11, 12, 12, 12])
    cleared = np.array([False, True, True, True])  # the first stopped at a cap of 11
    assert plots.joint_title(agent, optimum, "a", "optimal", cleared) == \
        "a vs optimal: 25% equal, 50% shorter, 25% not cleared"
    assert plots.joint_title(agent, optimum, "a", "b", None, ~cleared) == "a vs b: 25% equal, 75% shorter"
    # Stopped below the reference's length, not cleared: neither shorter nor equal.
    assert plots.joint_title(np.array([10, 12]), np.array([12, 12]), "a", "b", np.array([False, True])) == \
        "a vs b: 50% equal, 0% shorter, 50% not cleared"
    for values in (np.arange(60), np.arange(5), np.array([3, 3, 3]), np.arange(-7, 3000, 13)):
        bins = plots._integer_bins(values)
        assert np.all(bins % 1 == 0.5) and len(set(np.diff(bins))) == 1 and len(bins) <= 41
        assert bins[0] < values.min() and bins[-1] > values.max()
    assert set(np.histogram(np.arange(60), plots._integer_bins(np.arange(60)))[0]) == {2}  # no bin holds more
    for png in (plots.length_histograms({f"agent {i}": np.arange(10, 20) for i in range(12)}, "t", {"agent 3": 2}),
                plots.value_histograms({"x": np.array([0, 1, 1, 4])}, "t", "cells left (lower is better)")):
        assert png[:4] == b"\x89PNG"
    # Lengths far apart (a weak agent at a high click cap) made a bin, and in the joint figure
    # a cell, per click: 26 s for 50 boards spread over 5,000 clicks, 74 GiB over a million.
    spread = np.array([10, 5_000, 1_000_000])
    plots.length_histograms({"a": spread}, "t")
    assert len(drawn[-1].axes[0].patches[0].get_path().vertices) <= 2 * 62 + 2
    plots.joint_histogram(spread, spread[::-1], "a", "b")
    assert drawn[-1].axes[0].collections[0].get_array().size <= 60 * 60
    for nothing in (lambda: plots.length_histograms({}, "t"), lambda: plots.value_histograms({"a": []}, "t", "m"),
                    lambda: plots.joint_histogram(np.array([]), np.array([]), "a", "b")):
        with pytest.raises(ValueError, match="nothing to draw: no values"):
            nothing()
    with pytest.raises(ValueError, match="not finite numbers"):
        plots.value_histograms({"a": np.array([1.0, np.nan])}, "t", "m")


def test_the_points_figure_gives_the_means_as_the_table_does(monkeypatch):
    # Cells left are few: the table's 0.47 and 0.50 were both "mean 0.5" in the legend.
    from jaxdust.evaluation import plots
    legends = []
    monkeypatch.setattr(plots, "_png", lambda figure: legends.append(
        [text.get_text() for text in figure.axes[0].get_legend().get_texts()]) or b"")
    values = {"a": np.array([0] * 53 + [1] * 47), "b": np.array([0, 1])}
    for measure in evaluate_cli.MEAN_DIGITS:
        plots.value_histograms(values, "t", measure, digits=evaluate_cli.MEAN_DIGITS[measure])
    assert legends == [["a (mean 0.5)", "b (mean 0.5)"], ["a (mean 0.47)", "b (mean 0.50)"]]


def test_an_agent_whose_lengths_equal_anothers_is_drawn_dashed_and_says_so(monkeypatch):
    """A solver's outline lay exactly under the optimum's: in the legend, not in the picture."""
    from jaxdust.evaluation import plots
    drawn = []
    monkeypatch.setattr(plots, "_png", lambda figure: drawn.append(figure.axes[0]) or b"")
    plots.length_histograms({"optimal": np.array([10, 11, 11]), "beam": np.array([11, 11, 12]),
                             "solver": np.array([11, 10, 11]), "dfs": np.array([11, 11, 10])}, "t", {"beam": 1})
    axis = drawn[0]
    assert [text.get_text() for text in axis.get_legend().get_texts()] == [
        "optimal (mean 10.67)", "beam (mean 11.33; 1 not cleared, at the cap)",
        "solver (mean 10.67; dashed: the same as optimal)", "dfs (mean 10.67; dashed: the same as optimal)"]
    styles = [patch.get_linestyle() for patch in axis.patches]
    assert [style[1] is None for style in styles] == [True, True, False, False]  # solid, solid, dashed, dashed
    assert styles[2] != styles[3]  # one dash on the other would hide it again


def test_a_board_file_without_a_header_is_read_at_the_size_env_names(tmp_path, capsys):
    """36 digits were refused as not 8x6, with a hint naming flags evaluate.py has not;
    --env names the size, and a header, where there is one, still says what its boards are."""
    path = tmp_path / "bare.txt"
    path.write_text("123451234512345123451234512345123451\n")
    report = evaluate.main(["--boards", str(path), "--env", "Dust-6x6x5-v0", "--agents", "largest",
                            "--out", str(tmp_path / "a")])
    assert report["agents"]["largest"]["boards"] == 1
    with pytest.raises(SystemExit):
        evaluate.main(["--boards", str(path), "--agents", "largest", "--out", str(tmp_path / "b")])
    assert "a '# width=W height=H' line above it" in capsys.readouterr().err
    path.write_text("# width=4 height=9\n123451234512345123451234512345123451\n")
    with pytest.raises(SystemExit):
        evaluate.main(["--boards", str(path), "--env", "Dust-6x6x5-v0", "--agents", "largest", "--out", str(tmp_path / "c")])
    assert "--env plays 6x6 boards; " in capsys.readouterr().err
    # a board that is not square: --env's width and height, in that order
    board = jaxdust.random_board(jax.random.key(3), jaxdust.GameConfig(8, 4, 5))
    path.write_text(jaxdust.board_to_text(board) + "\n")
    report = evaluate.main(["--boards", str(path), "--env", "Dust-8x4x5-v0", "--agents", "largest",
                            "--out", str(tmp_path / "d")])
    largest = registry.run_agent("largest", board[None], key=jax.random.key(0), max_clicks=32)["clicks"]
    assert report["agents"]["largest"]["boards"] == 1 and report["agents"]["largest"]["mean"] == largest[0]


def test_a_board_file_is_played_under_the_rules_its_header_declares(tmp_path, boards_dir, capsys):
    """A file whose header declares other rules holds another game's boards: played under
    those rules at the file's own size (Former at 6x5, which no id registers), with its
    proven optima as the reference; ``--env`` of those rules plays it only at ``--env``'s
    size (``--env`` of other rules: ``test_a_board_files_reference_follows_its_columns``)."""
    size = jaxdust.GameConfig(6, 5, 4, "former")
    boards = np.asarray(jax.vmap(lambda k: jaxdust.random_board(k, size))(jax.random.split(jax.random.key(3), 3)))
    optima = [jaxdust.solve(board, rules="former").length for board in boards]
    path = tmp_path / "former.txt"
    path.write_text("# width=6 height=5 colors=4 rules=former; board optimal_clicks\n" + "".join(
        f"{jaxdust.board_to_text(board)} {optimum}\n" for board, optimum in zip(boards, optima)))
    report = evaluate.main(["--boards", str(path), "--agents", "largest,solver", "--out", str(tmp_path / "a")])
    assert report["rules"] == "former" and report["reference"] == "best"
    solver = report["agents"]["solver"]
    assert solver["mean"] == pytest.approx(np.mean(optima)) and solver["share_equal_best"] == 1.0
    largest = registry.run_agent("largest", jnp.asarray(boards), key=jax.random.key(0), max_clicks=30,
                                 rules="former")["clicks"]
    assert report["agents"]["largest"]["mean"] == pytest.approx(np.mean(largest))
    assert report["agents"]["largest"]["mean"] != pytest.approx(np.mean(registry.run_agent(
        "largest", jnp.asarray(boards), key=jax.random.key(0), max_clicks=30)["clicks"]))  # not the dust game's
    with pytest.raises(SystemExit):
        evaluate.main(["--boards", str(path), "--env", "Former-7x9x4-v0", "--agents", "largest",
                       "--out", str(tmp_path / "b")])
    assert "--env plays 7x9 boards; " in capsys.readouterr().err
    points = tmp_path / "samegame.txt"  # a points game's file: played to its end, measured in points
    points.write_text(path.read_text().replace("rules=former", "rules=samegame"))
    report = evaluate.main(["--boards", str(points), "--agents", "largest", "--out", str(tmp_path / "p")])
    assert report["rules"] == "samegame" and report["measure"] == "points" and report["measured_on"]["cores"] >= 1
    assert report["agents"]["largest"]["mean"] == pytest.approx(np.mean(np.asarray(registry.run_agent(
        "largest", jnp.asarray(boards), key=jax.random.key(0), max_clicks=30, rules="samegame")["points"])))
    assert "the lengths in " in capsys.readouterr().err


def test_env_boards_of_another_size_are_refused_and_gifs_follow_the_rules(tmp_path, boards_dir, capsys):
    with pytest.raises(SystemExit):
        evaluate.main(["--env", "Former-7x9x4-v0", "--boards", str(boards_dir / "optimal_8x4x5.txt"), "--agents",
                       "largest", "--out", str(tmp_path / "a")])
    assert "--env plays 7x9 boards;" in capsys.readouterr().err
    evaluate.main(["--env", "Former-7x9x4-v0", "--random", "2", "--agents", "largest", "--animate", "2",
                   "--out", str(tmp_path / "b")])
    size = jaxdust.make("Former-7x9x4-v0").game
    boards = jax.vmap(lambda k: jaxdust.random_board(k, size))(jax.random.split(jax.random.key(0), 2))
    lines = registry.run_agent("largest", boards, key=jax.random.key(0), max_clicks=63, solutions=2,
                               rules="former")["solutions"]
    for index, line in enumerate(lines):  # each game as the former rules play it
        expected = jaxdust.game_gif(*jaxdust.positions(boards[index], line, "former"))
        assert (tmp_path / "b" / f"game-largest-{index}.gif").read_bytes() == expected


def test_evaluate_cli_writes_summary_and_per_board_csv(tmp_path, boards_dir):
    board_file = tmp_path / "few.txt"
    lines = (boards_dir / "eval_8x6x5.txt").read_text().splitlines()[:12]
    board_file.write_text("\n".join(lines) + "\n")
    report = evaluate.main(["--boards", str(board_file), "--out", str(tmp_path / "out"), "--chunk", "4"])
    largest = report["agents"]["largest"]
    expected = [int(line.split()[1]) for line in lines if not line.startswith("#")]
    assert largest["mean"] == pytest.approx(np.mean(expected))
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert saved["agents"]["largest"]["mean"] == largest["mean"]
    rows = list(csv.DictReader(open(tmp_path / "out" / "boards.csv")))
    assert [int(r["largest"]) for r in rows] == expected and {r["measure"] for r in rows} == {"clicks"}
    assert rows[0]["board"] == lines[2].split()[0]


def test_boards_csv_names_the_agents_that_did_not_clear_a_board(tmp_path):
    """A game stopped at the cap shows the cap in its agent's column, as a game cleared in
    that many clicks would: ``not_cleared`` tells them apart."""
    report = evaluate.main(["--random", "16", "--size", "6x5x4", "--agents", "largest,beam:8", "--max-clicks", "9",
                            "--out", str(tmp_path / "out"), "--chunk", "8"])
    rows = list(csv.DictReader(open(tmp_path / "out" / "boards.csv")))
    stuck = {name: [name in row["not_cleared"].split(";") for row in rows] for name in ("largest", "beam:8")}
    for name, flags in stuck.items():
        assert sum(flags) == report["agents"][name]["not_cleared"]
        assert all(int(row[name]) == 9 for row, flag in zip(rows, flags) if flag)
    assert 0 < sum(stuck["largest"]) < 16  # both kinds of board are in the test


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--boards", "no/such/file.txt"], "no such file: no/such/file.txt"),
        (["--boards", "50"], "--boards: no such file: 50; for 50 random boards: --random 50"),  # other commands' count
        (["--agents", "largest,telepathy"], "--agents: unknown agent 'telepathy'; choose from random, largest,"),
    ],
)
def test_evaluate_cli_errors_are_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(argv)
    [line] = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and line.startswith("evaluate.py: error: ") and message in line


def test_evaluate_cli_names_a_malformed_line(tmp_path, capsys):
    board_file = tmp_path / "bad.txt"
    board_file.write_text("# width=8 height=6\n" + "1" * 48 + " 1\n" + "1" * 40 + " 2\n")
    with pytest.raises(SystemExit):
        evaluate.main(["--boards", str(board_file)])
    assert "bad.txt:3: board text has 40 digits" in capsys.readouterr().err


def test_solver_agents_through_the_cli(tmp_path, boards_dir):
    report = evaluate.main(["--boards", str(boards_dir / "optimal_8x4x5.txt"), "--limit", "6", "--jobs", "1",
                            "--agents", "largest,dfs:5000,beam:16,solver:5", "--out", str(tmp_path)])
    agents = report["agents"]
    assert agents["solver:5"]["share_equal_best"] == 1.0 and agents["solver:5"]["proven_optimal"] == 1.0
    assert agents["solver:5"]["mean"] <= agents["beam:16"]["mean"] <= agents["largest"]["mean"]
    assert agents["solver:5"]["mean"] <= agents["dfs:5000"]["mean"]
    # A click cap below the optima: the proofs still hold, but no proven line was played.
    capped = evaluate.main(["--boards", str(boards_dir / "optimal_8x4x5.txt"), "--limit", "6", "--jobs", "1",
                            "--agents", "solver:5", "--max-clicks", "4", "--out", str(tmp_path / "capped")])
    solver = capped["agents"]["solver:5"]
    assert solver["not_cleared"] == 6 and solver["proven_optimal"] == 0.0


def test_a_depth_first_search_that_finds_no_line_leaves_its_board_not_cleared(boards_dir):
    """``dfs:N`` with too few positions for any line ended evaluate.py and the leaderboard
    with the search's TimeoutError."""
    boards = np.stack([r.board for r in jaxdust.read_board_file(boards_dir / "optimal_8x4x5.txt")[:3]])
    played = registry.run_agent("dfs:1", boards, key=jax.random.key(0), max_clicks=32, solutions=3)
    assert not played["cleared"].any() and list(played["clicks"]) == [32] * 3 and played["solutions"] == [[]] * 3
    found = registry.run_agent("dfs:5000", boards, key=jax.random.key(0), max_clicks=32)
    assert found["cleared"].all() and (found["clicks"] < 32).all()


@pytest.mark.parametrize("text, message", [("beam:wide", "width must be a number"), ("largest:3", "takes no parameter"),
                                           ("largest:", "takes no parameter"), ("nmcs:", "nothing after ':'"),
                                           ("dfs:4294967296", "below 2"), ("policy:", "needs a run directory")])
def test_agent_parameters_are_checked(text, message):
    with pytest.raises(ValueError, match=message):
        registry.parse_agent(text)


def test_one_run_spelt_two_ways_is_one_agent(tmp_path, monkeypatch):
    from jaxdust.core import configs
    from jaxdust.learn import avi

    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"learner": "avi", "config": configs.to_json(avi.AVIConfig())}))
    monkeypatch.chdir(tmp_path)
    for spelt in ("policy:runs/a,policy:runs/a/", "policy:runs/a,policy:./runs/a", "value:runs/a:8,value:runs//a:8"):
        with pytest.raises(ValueError, match="are the same agent"):
            registry.parse_agent_list(spelt)
    assert registry.parse_agent_list("value:runs/a:8,value:runs/a/:4,policy:runs/a") == [
        "value:runs/a:8", "value:runs/a/:4", "policy:runs/a"]
    for spelt, message in (("policy:runs/a:8", "policy: takes no number after the run"),
                           ("value::8", "needs a run directory: value:RUN_DIR"),
                           ("mcts::64", "needs a run directory: mcts:RUN_DIR")):
        with pytest.raises(ValueError, match=message):
            registry.parse_agent(spelt)


def test_file_names_of_long_agents_fit_a_file_system_and_stay_apart():
    """An agent's name holds its run's path, which can be longer than a file name may be."""
    deep = "policy:" + "/".join(["experiment-group"] * 20)
    names = evaluate_cli.file_names([deep + "/dqn", deep + "/avi", "beam:8"])
    assert names["beam:8"] == "beam-8"
    assert all(len(f"game-{name}-999.gif".encode()) <= 255 for name in names.values())
    assert len(set(names.values())) == 3


def test_a_one_board_evaluation_writes_strict_json_with_no_standard_error(tmp_path):
    """One board has no standard error: summary.json says null, not Python's NaN, which
    strict JSON readers refuse."""
    from tests.test_files import _strict

    report = evaluate.main(["--random", "1", "--size", "4x3x3", "--agents", "largest", "--out", str(tmp_path)])
    summary = _strict((tmp_path / "summary.json").read_text())
    assert summary["agents"]["largest"]["mean"] == report["agents"]["largest"]["mean"] > 0
    assert summary["agents"]["largest"]["se"] is None


def test_an_earlier_evaluations_figures_do_not_stay_beside_a_new_one(tmp_path):
    mine = ["game-of-life.gif", "points.png", "joint-venture.png"]  # the user's, named like figures
    for name in mine:
        (tmp_path / name).write_bytes(b"mine")
    first = ["--random", "2", "--size", "4x3x3", "--out", str(tmp_path)]
    report = evaluate.main([*first, "--agents", "random,largest", "--animate", "1"])
    assert report["figures"] == ["game-largest-0.gif", "game-random-0.gif", "joint-random.png", "lengths.png"]
    assert set(report["figures"]) <= set(os.listdir(tmp_path))
    report = evaluate.main([*first, "--agents", "beam:2,largest"])
    assert sorted(os.listdir(tmp_path)) == sorted([".lock", "summary.json", "boards.csv", *report["figures"], *mine])
    assert report["figures"] == ["joint-beam-2.png", "lengths.png"]
    summary = json.loads((tmp_path / "summary.json").read_text())  # a damaged list names no one's file
    (tmp_path / "summary.json").write_text(json.dumps({**summary, "figures": ["boards.csv", "../x.png", "ab"]}))
    (tmp_path / "a").write_bytes(b"mine")
    evaluate.main([*first, "--agents", "largest"])
    assert {"boards.csv", "a", "joint-beam-2.png", *mine} <= set(os.listdir(tmp_path))


def test_two_evaluations_into_one_folder_do_not_mix(tmp_path, capsys):
    """One evaluation's summary beside another's table, and figures the summary lists but
    the other removed: a second evaluation into a folder in use is refused."""
    from jaxdust.core import files

    holder = files.lock_directory(tmp_path)  # as an evaluation in another terminal holds it
    try:
        with pytest.raises(SystemExit) as exit_info:
            evaluate.main(["--random", "2", "--size", "4x3x3", "--agents", "largest", "--out", str(tmp_path)])
        assert exit_info.value.code == 2
        assert f"--out {tmp_path}: another evaluation is writing there" in capsys.readouterr().err
        assert os.listdir(tmp_path) == [".lock"]
    finally:
        holder.release()
    report = evaluate.main(["--random", "2", "--size", "4x3x3", "--agents", "largest", "--out", str(tmp_path)])
    assert report["agents"]["largest"]["boards"] == 2 and (tmp_path / "summary.json").exists()


def test_the_reference_row_shows_the_sample_deviation_and_random_boards_alone_get_no_seed_note(tmp_path, capsys):
    """The optimum's row used NumPy's population std while the agents' rows used the sample
    one; the note on --seed 2026 is for a run's evaluation boards only."""
    path = os.path.join(os.path.dirname(evaluate.__file__), "data", "boards", "optimal_6x6x5.txt")
    evaluate.main(["--boards", path, "--limit", "5", "--agents", "largest", "--out", str(tmp_path / "o")])
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("optimal (proven)"))
    best = np.array([r.values[0] for r in jaxdust.read_board_file(path)][:5], float)
    assert float(row.split()[-1]) == pytest.approx(stats.deviation(best), abs=0.006) != best.std()
    evaluate.main(["--random", "2", "--seed", "2026", "--size", "6x6x5", "--agents", "largest",
                   "--out", str(tmp_path / "a")])
    assert "--seed 2026" not in capsys.readouterr().err


def test_a_line_below_a_proven_optimum_says_the_file_is_wrong_or_of_other_rules(tmp_path, capsys):
    """Former's optimum of a board (6), in a file with no rules= header: played as the dust
    game's, the beam clears it in 4."""
    path = tmp_path / "former.txt"
    path.write_text("# width=4 height=3 colors=3\n# board optimal_clicks\n131222113332 6\n")
    evaluate.main(["--boards", str(path), "--agents", "beam:8", "--out", str(tmp_path / "out")])
    assert capsys.readouterr().out.startswith(f"1 board from {path}, dust rules; backend ")  # the rules played
    evaluate.main(["--boards", str(path), "--agents", "beam:8", "--out", str(tmp_path / "out")])
    assert (f"warning: beam:8 cleared board 0 in 4 clicks, below its proven optimum 6 in {path} (1 such boards): "
            "that file's optima are wrong, or another game's than the dust rules played (a rules= header names the "
            "file's)") in capsys.readouterr().err


def test_a_proof_above_the_files_length_says_the_file_is_wrong_and_size_plays_a_file_under_other_rules(
        tmp_path, capsys):
    """A solver proved 4 clicks where the file claimed an optimum of 2, and said nothing
    (only a line below the file's optimum was flagged). ``--size RULES:WxHxC`` plays a
    file at its own size under those rules, as ``--env`` does for a registered id's."""
    path = tmp_path / "dust.txt"
    path.write_text("# width=4 height=3 colors=3\n# board optimal_clicks\n131222113332 2\n")
    evaluate.main(["--boards", str(path), "--agents", "solver:10", "--out", str(tmp_path / "a")])
    assert (f"warning: solver:10 proved board 0 needs 4 clicks, above its proven optimum 2 in {path} (1 such "
            "boards): that file's optima are wrong") in capsys.readouterr().err
    report = evaluate.main(["--boards", str(path), "--size", "former:4x3x3", "--agents", "solver:10",
                            "--out", str(tmp_path / "b")])
    out, err = capsys.readouterr()
    assert out.startswith(f"1 board from {path}, former rules; ") and "warning" not in err
    assert "gives lengths under the dust rules" in err and report["agents"]["solver:10"]["mean"] == 6


def test_the_closing_line_names_only_figures_written_and_a_file_without_lengths_is_named(tmp_path, capsys):
    """One agent, its own reference: no joint histogram, yet "joint-*.png" was named; and
    --reference best on a file without lengths said "'best' with a board file"."""
    report = evaluate.main(["--random", "2", "--size", "4x3x3", "--agents", "largest", "--out", str(tmp_path / "a")])
    assert report["figures"] == ["lengths.png"]
    assert capsys.readouterr().out.strip().endswith(f"wrote summary.json, boards.csv, lengths.png to {tmp_path / 'a'}")
    evaluate.main(["--random", "2", "--size", "4x3x3", "--agents", "largest,random", "--out", str(tmp_path / "b")])
    assert capsys.readouterr().out.strip().endswith("lengths.png and joint-*.png to " + str(tmp_path / "b"))
    (tmp_path / "boards.txt").write_text("# width=4 height=3\n131222113332\n")
    with pytest.raises(SystemExit):
        evaluate.main(["--boards", str(tmp_path / "boards.txt"), "--agents", "largest", "--reference", "best",
                       "--out", str(tmp_path / "c")])
    assert capsys.readouterr().err.strip().endswith(
        f"--reference best: {tmp_path / 'boards.txt'} gives no reference lengths for these boards (a number after "
        "each board, under the rules played); name one of --agents")


def test_a_run_stopped_half_way_leaves_no_figure_or_table_for_the_next_to_pass_off(tmp_path, monkeypatch):
    """A run that fails after writing a GIF keeps the earlier summary (whose table is still
    beside it) and lists the GIF as pending, which the next run removes; a run stopped after
    its table has no summary beside it. A finished run leaves no pending list."""
    first = ["--random", "2", "--size", "4x3x3", "--out", str(tmp_path)]
    evaluate.main([*first, "--agents", "largest"])
    before = (tmp_path / "summary.json").read_text(), (tmp_path / "boards.csv").read_text()
    real_run_agent = registry.run_agent

    def failing_beam(name, *args, **kwargs):
        if name.startswith("beam"):
            raise ValueError("no room")
        return real_run_agent(name, *args, **kwargs)
    monkeypatch.setattr(registry, "run_agent", failing_beam)
    with pytest.raises(SystemExit):
        evaluate.main([*first, "--agents", "random,beam:2", "--animate", "1"])
    assert ((tmp_path / "summary.json").read_text(), (tmp_path / "boards.csv").read_text()) == before
    assert (tmp_path / "game-random-0.gif").exists()
    # A GIF the summary lists, drawn again by a run that then fails: the summary is not its any more.
    evaluate.main([*first, "--agents", "largest", "--animate", "1"])
    with pytest.raises(SystemExit):
        evaluate.main(["--random", "2", "--size", "5x3x3", "--out", str(tmp_path), "--agents", "largest,beam:2",
                       "--animate", "1"])
    assert not (tmp_path / "summary.json").exists() and (tmp_path / "game-largest-0.gif").exists()
    monkeypatch.setattr(registry, "run_agent", real_run_agent)

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(evaluate_cli.plots, "length_histograms", stopped)
    with pytest.raises(KeyboardInterrupt):
        evaluate.main([*first, "--agents", "random"])
    assert not (tmp_path / "summary.json").exists() and (tmp_path / "boards.csv").exists()
    monkeypatch.undo()
    report = evaluate.main([*first, "--agents", "largest,random"])
    assert sorted(os.listdir(tmp_path)) == sorted([".lock", "summary.json", "boards.csv", *report["figures"]])
    assert "game-random-0.gif" not in report["figures"]
    assert (report["jaxdust"], report["seed"]) == (jaxdust.__version__, 0)  # what made the figures


@pytest.mark.parametrize("size", ["5x4x3", "clickomania:5x4x3"])
def test_a_reader_of_the_table_that_goes_away_leaves_the_evaluation_written(tmp_path, size):
    """``evaluate.py ... | head -n 1`` with unbuffered output (PYTHONUNBUFFERED, common in
    containers): the table's first line ended the command before its files were written."""
    import subprocess

    out = tmp_path / "evaluation"
    with open(tmp_path / "stderr.txt", "w+") as errors:  # a pipe read only at the end can fill and block the child
        peek = subprocess.Popen([sys.executable, os.path.join(ROOT, "evaluate.py"), "--random", "3", "--size", size,
                                 "--agents", "largest", "--out", str(out)], stdout=subprocess.PIPE,
                                stderr=errors, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert "random 5x4x3 boards" in peek.stdout.readline()
        peek.stdout.close()
        assert peek.wait(timeout=300) == 1
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "Traceback" not in stderr, stderr[-2000:]
    assert isinstance(json.loads((out / "summary.json").read_text())["agents"]["largest"]["mean"], float)
    assert (out / "boards.csv").is_file()


@pytest.mark.parametrize("size", ["5x4x3", "clickomania:5x4x3"])
def test_the_table_is_shown_when_writing_the_evaluation_fails(tmp_path, monkeypatch, capsys, size):
    """The files are written before the table is shown (above); a full disk still shows it."""
    import errno

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(evaluate_cli, "write_board_table", full_disk)
    with pytest.raises(OSError, match="No space left"):
        evaluate.main(["--random", "3", "--size", size, "--agents", "largest", "--out", str(tmp_path / "out")])
    shown = capsys.readouterr().out
    # Cells left to two decimals, as clicks: one decimal showed 0.47 and 0.50 both as 0.5.
    assert re.search(r"^largest +\d+\.\d\d ", shown, re.MULTILINE) and "wrote summary.json" not in shown


def test_a_random_agent_plays_alike_wherever_it_is_listed(tmp_path):
    """Each agent's key was the seed plus its place in --agents (and the leaderboard's rows,
    kept per entry, could hold another key's): one key for all now."""
    played = {}
    for order in ("random,largest", "largest,random"):
        out = tmp_path / order.replace(",", "-")
        evaluate.main(["--random", "6", "--size", "4x3x3", "--agents", order, "--out", str(out), "--chunk", "4"])
        with open(out / "boards.csv") as handle:
            played[order] = [row["random"] for row in csv.DictReader(handle)]
    assert played["random,largest"] == played["largest,random"]


def test_a_run_agents_mistyped_number_is_named_as_the_number(tmp_path):
    """``value:RUN:abc`` was reported as "RUN:abc is not a train.py run directory"."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")  # only its presence is read here
    for text, message in [(f"value:{run}:abc", "value: width must be a number, got 'abc'"),
                          (f"mcts:{run}:-1", "mcts: simulations must be a positive integer, got '-1'"),
                          (f"mcts:{run}:2.5", "mcts: simulations must be a positive integer, got '2.5'"),
                          (f"value:{run}:", "value: nothing after the run's ':' (its width)"),
                          (f"value:{run}x:8", "is not a train.py run directory")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            registry.parse_agent(text)
    timed = tmp_path / "avi-10:30"  # a run whose name ends like a width
    timed.mkdir()
    from jaxdust.core import configs
    from jaxdust.learn import avi

    (timed / "config.json").write_text(json.dumps({"learner": "avi", "config": configs.to_json(avi.AVIConfig())}))
    assert registry.parse_agent(f"value:{timed}")[1] == (str(timed), 1)
    assert registry.parse_agent(f"value:{timed}:8")[1] == (str(timed), 8)
    for number in ("1e3", "+1000", " 1000"):  # as beam:'s width is read; these were refused after a run
        assert registry.parse_agent(f"value:{timed}:{number}")[1] == registry.parse_agent(f"value:{timed}:1000")[1]
    assert registry.parse_agent(f"value:{timed}@newest")[1] == (f"{timed}@newest", 1)
    assert registry.parse_agent(f"value:{timed}@newest:8")[1] == (f"{timed}@newest", 8)
    (tmp_path / "avi-10").mkdir()  # "avi-10:30@newest" is still that run, not avi-10 at width "30@newest"
    (tmp_path / "avi-10" / "config.json").write_text((timed / "config.json").read_text())
    assert registry.parse_agent(f"value:{timed}@newest")[1] == (f"{timed}@newest", 1)
    # A step after the @ read as a run of that name: "is not a train.py run directory".
    for text in (f"policy:{timed}@5", f"value:{timed}@best:8"):
        tail = text.split("@")[1].split(":")[0]
        with pytest.raises(ValueError, match=re.escape(f"as {timed}@newest, at its newest; @{tail} is neither")):
            registry.parse_agent(text)
    published_folder = os.path.join(os.path.dirname(jaxdust.__file__), "data", "networks", "avi-8x6x5")
    with pytest.raises(ValueError, match="is played at its selected checkpoint; @5 is neither") as refused:
        registry.parse_agent(f"policy:{published_folder}@5")  # a published network has no newest to offer
    assert "@newest" not in str(refused.value)
    (tmp_path / "avi-10:30@5").mkdir()  # a run of that very name plays
    (tmp_path / "avi-10:30@5" / "config.json").write_text((timed / "config.json").read_text())
    assert registry.parse_agent(f"value:{timed}@5")[1] == (f"{timed}@5", 1)
    # avi-10 and avi-10:30 both runs: value:avi-10:30 was read as the second without a word.
    with pytest.raises(ValueError, match=re.escape(f"is ambiguous: both {tmp_path / 'avi-10'} and {timed} are runs")):
        registry.parse_agent(f"value:{timed}")
    assert registry.parse_agent(f"value:{timed}:1")[1] == (str(timed), 1)
    first = f"{tmp_path / 'avi-10'}{os.sep}"
    assert registry.parse_agent(f"value:{first}:30")[1] == (first, 30)
    # A list is split at commas: a run whose path holds one is named as the cause.
    (tmp_path / "my run, #1").mkdir()
    (tmp_path / "my run, #1" / "config.json").write_text((timed / "config.json").read_text())
    for listed in (f"largest,policy:{tmp_path}/my run, #1", f"value:{tmp_path}/my run, #1:4,largest"):
        with pytest.raises(ValueError, match=re.escape(f"the path '{tmp_path}/my run, #1' holds one")):
            registry.parse_agent_list(listed)
    (tmp_path / "plain").mkdir()  # no run, and no comma in its path: no such hint
    with pytest.raises(RunError, match="plain is not a train.py run directory") as refused:
        registry.parse_agent_list(f"value:{tmp_path / 'plain'}:4,largest")
    assert "split at its commas" not in str(refused.value)


def test_ranking_metrics_by_hand():
    records = [{"child_values": [3, 2, 4]}, {"child_values": [5, 5, 6]}]
    scores = [np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.5, 0.1])]
    m = ranking.ranking_metrics(scores, records, clicks_left=False)
    # Position 1 picks child 0 (value 3, best 2) and position 2 child 2 (value 6, best 5):
    # neither optimal, regret 1 each. Of the pairs with different values, position 1 orders
    # (0, 2) and (1, 2) rightly and (1, 0) wrongly; position 2 orders (0, 2) and (1, 2) wrongly.
    assert m["top1"] == 0.0 and m["regret"] == 1.0
    assert m["pairwise"] == 2 / 5
    with pytest.raises(ValueError, match="no ranking records to score"):  # was a ZeroDivisionError
        ranking.ranking_metrics([], [])
    # zip scored the first record alone and divided by both: top-1 0.5 of a perfect scorer
    with pytest.raises(ValueError, match="1 score lists for 2 ranking records"):
        ranking.ranking_metrics([np.array([3.0, 2.0, 4.0])], records, clicks_left=False)
    with pytest.raises(ValueError, match="record 1 has 3 children and 2 scores"):
        ranking.ranking_metrics([scores[0], np.array([0.5, 0.5])], records, clicks_left=False)


def test_ranking_errors_and_biases_by_cells_left_by_hand():
    """A scorer one click pessimistic on children of 25+ cells and half a click optimistic on
    smaller ones: errors 1 and 0.5, biases +1 and -0.5, bucket by bucket; one pessimistic on
    the optimal children alone: its bias falls on the best, not the rest."""
    def cells(record):
        return (ranking.children(record).reshape(len(record["actions"]), -1) != 0).sum(axis=1)

    record = next(r for r in ranking.load() if cells(r).min() <= 24 < 25 <= cells(r).max())
    scores = [np.asarray(record["child_values"], float) + np.where(cells(record) >= 25, 1.0, -0.5)]
    m = ranking.ranking_metrics(scores, [record])
    for (low, high) in ranking.CELL_BUCKETS:
        bucket, present = f"{low}-{high}", np.any((cells(record) >= low) & (cells(record) <= high))
        expected = (None, None) if not present else (1.0, 1.0) if low >= 25 else (0.5, -0.5)
        assert (m["error_by_cells_left"][bucket], m["bias_by_cells_left"][bucket]) == expected, bucket
    # Now two clicks pessimistic on the optimal children and exact on the rest.
    exact = np.asarray(record["child_values"], float)
    best = exact == exact.min()
    assert 0 < best.sum() < len(exact)
    m = ranking.ranking_metrics([exact + 2.0 * best], [record])
    for (low, high) in ranking.CELL_BUCKETS:
        bucket, inside = f"{low}-{high}", (cells(record) >= low) & (cells(record) <= high)
        assert m["bias_of_best_by_cells_left"][bucket] == (2.0 if np.any(inside & best) else None), bucket
        assert m["bias_of_rest_by_cells_left"][bucket] == (0.0 if np.any(inside & ~best) else None), bucket
        if np.any(inside):
            assert m["bias_by_cells_left"][bucket] == pytest.approx(2.0 * np.mean(best[inside])), bucket


@pytest.mark.slow
def test_ranking_benchmark_ranks_a_runs_value_by_its_own_one_click_lookahead(tmp_path, capsys, monkeypatch):
    """``benchmarks/ranking.py --runs RUN --newest``: the run's value, its lookahead (each
    child scored ``1 + min`` of the value over its own children, 0 where cleared, here
    recomputed with the NumPy rules) and its policy, named with the checkpoint played."""
    monkeypatch.syspath_prepend(os.path.join(ROOT, "benchmarks"))
    monkeypatch.delitem(sys.modules, "ranking", raising=False)
    import ranking as ranking_benchmark
    from jaxdust.learn import cli, runs

    run = tmp_path / "run"
    assert cli.main(["avi", "--hidden", "16", "--num-envs", "16", "--beam-width", "2", "--buffer-lines", "16",
                     "--cell-width", "8", "--cell-rounds", "1", "--total-updates", "2", "--chunk-updates", "1",
                     "--eval-boards", "2", "--eval-every", "1", "--seed", "1", "--run-dir", str(run)])["updates"] == 2
    subset = tmp_path / "set.jsonl"
    records = ranking.load()[:3]
    subset.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = ranking_benchmark.main(["--set", str(subset), "--runs", str(run), "--newest", "--out", str(tmp_path / "r.json")])
    newest = runs.load_run(str(run), newest=True)
    label = f"{run}, checkpoint {newest.step}"  # the path as given: runs of one name in two folders stay apart
    assert {f"avi value ({label})", f"avi value, one-click lookahead ({label})", f"avi policy ({label})"} <= set(report["scorers"])

    def value(boards):
        return np.where([not b.any() for b in boards], 0.0, np.asarray(newest.scorer(jnp.asarray(np.stack(boards)), newest.params)))

    scores = []
    for record in records:
        kids = list(ranking.children(record))
        grandchildren = [[ranking.child_of(kid, a) for a in ranking.actions_of(kid)] for kid in kids]
        scores.append(np.array([0.0 if not kid.any() else 1.0 + value(g).min() for kid, g in zip(kids, grandchildren)]))
    expected = ranking.ranking_metrics(scores, records)
    measured = report["scorers"][f"avi value, one-click lookahead ({label})"]
    assert measured["top1"] == expected["top1"] and measured["regret"] == expected["regret"]
    for bucket, bias in expected["bias_by_cells_left"].items():
        assert measured["bias_by_cells_left"][bucket] == (None if bias is None else pytest.approx(bias, abs=1e-4))
    assert f"| avi value, one-click lookahead ({label}) |" in capsys.readouterr().out


def test_ranking_set_labels_are_consistent():
    records = ranking.load()
    assert len(records) >= 200
    for record in records[:20]:
        assert record["value"] == 1 + min(record["child_values"])
        assert ranking.actions_of(np.asarray(jaxdust.parse_board(record["board"], 8, 6))) == record["actions"]


def test_the_ranking_command_extends_a_set_only_under_its_own_node_limit(tmp_path, capsys):
    """Under another limit other children's proofs end: the set would be a mix of two."""
    out = tmp_path / "ranking.jsonl"
    record = {**ranking.load()[0], "node_limit": 20000}
    out.write_text(json.dumps(record) + "\n")
    with pytest.raises(SystemExit) as stop:
        ranking.main(["--boards", "2", "--out", str(out), "--node-limit", "30000"])
    assert stop.value.code == 2
    assert "was made under --node-limit 20000, and this call gives 30000" in capsys.readouterr().err
    assert out.read_text() == json.dumps(record) + "\n"
    assert ranking.main(["--boards", "1", "--out", str(out), "--node-limit", "30000"]) == 0  # board 0: done
    assert capsys.readouterr().out == f"{out}: 1 labelled position from 1 board\n"
    unnamed = {key: value for key, value in record.items() if key != "node_limit"}  # as before 0.2.46
    for records, words in (([unnamed], "holds records that name no --node-limit (made before jaxdust 0.2.46)"),
                           ([record, unnamed], "holds records that name no --node-limit"),
                           ([{**record, "node_limit": "20000"}], "is not a ranking file this program wrote"),
                           ([{**record, "node_limit": True}], "is not a ranking file this program wrote")):
        out.write_text("".join(json.dumps(r) + "\n" for r in records))
        with pytest.raises(SystemExit):
            ranking.main(["--boards", "2", "--out", str(out), "--node-limit", "20000"])
        assert words in capsys.readouterr().err
    out.write_text(json.dumps(unnamed) + "\n")  # nothing to add: read as it is
    assert ranking.main(["--boards", "1", "--out", str(out)]) == 0


@pytest.mark.parametrize("index", ["7", 0.5, -3, None])
def test_the_ranking_command_refuses_another_programs_json_lines_whole(tmp_path, capsys, index):
    """A board_index that is no count crashed the resume (a traceback), and the repair cut
    another program's torn last line before the file was refused."""
    out = tmp_path / "foreign.jsonl"
    record = {**ranking.load()[0], "node_limit": 20000}
    record = {key: value for key, value in record.items() if key != "board_index"} if index is None \
        else {**record, "board_index": index}
    foreign = (json.dumps(record) + "\n" + '{"length": 4, "bo').encode()
    out.write_bytes(foreign)
    with pytest.raises(SystemExit) as stop:
        ranking.main(["--boards", "1", "--out", str(out), "--node-limit", "20000"])
    assert stop.value.code == 2 and "is not a ranking file this program wrote" in capsys.readouterr().err
    assert out.read_bytes() == foreign


def test_the_ranking_command_counts_the_boards_it_drew_with_those_that_gave_no_position(tmp_path, capsys,
                                                                                         monkeypatch):
    """A board none of whose positions proves within the limit writes no line: it was
    drawn all the same (the count had said "from 0 boards" after two)."""
    record = ranking.load()[0]
    monkeypatch.setattr(ranking, "board_records", lambda index, node_limit: (
        [] if index else [{**record, "board_index": index, "node_limit": node_limit}]))
    out = tmp_path / "ranking.jsonl"
    assert ranking.main(["--boards", "2", "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"{out}: 1 labelled position from 2 boards (1 with any)\n"


def test_the_ranking_command_refuses_an_out_another_run_is_writing(tmp_path, capsys, monkeypatch):
    """Two runs on one file each started after its last board and wrote the same boards twice."""
    from jaxdust.core import files
    record = ranking.load()[0]
    monkeypatch.setattr(ranking, "board_records", lambda index, node_limit: [{**record, "board_index": index}])
    out = tmp_path / "ranking.jsonl"
    with files.open_to_append_alone(out):  # the other run
        with pytest.raises(SystemExit) as stop:
            ranking.main(["--boards", "2", "--out", str(out)])
        assert stop.value.code == 2 and "another ranking run is writing --out" in capsys.readouterr().err
        assert out.read_text() == ""
    assert ranking.main(["--boards", "2", "--out", str(out)]) == 0  # let go: this one writes
    assert [json.loads(line)["board_index"] for line in out.read_text().splitlines()] == [0, 1]


def test_the_ranking_command_to_dev_stdout_counts_what_it_wrote_beside_the_records(tmp_path):
    """Redirected to a log, /dev/stdout is written to and never read back: the summary had
    gone among the records and counted none of them ("0 labelled positions")."""
    import subprocess
    script = ("import sys; from jaxdust.evaluation import ranking; record = ranking.load()[0]; "
              "ranking.board_records = lambda index, node_limit: [{**record, 'board_index': index}] * 2; "
              "sys.exit(ranking.main(['--boards', '3', '--out', '/dev/stdout']))")
    log = tmp_path / "log.jsonl"
    log.write_text('{"board_index": 7}\n')  # the log's own earlier lines are no run to resume
    with open(log, "a") as stdout:
        done = subprocess.run([sys.executable, "-c", script], stdout=stdout, stderr=subprocess.PIPE, text=True,
                              cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    assert [json.loads(line)["board_index"] for line in lines] == [7, 0, 0, 1, 1, 2, 2]
    assert "/dev/stdout: 6 labelled positions from 3 boards\n" in done.stderr


@pytest.mark.slow
def test_the_ranking_command_says_what_it_wrote_and_resumes(tmp_path, capsys):
    """It worked for a minute and printed nothing; a rerun of finished boards adds none."""
    out = tmp_path / "ranking.jsonl"
    for _ in range(2):
        assert ranking.main(["--boards", "1", "--out", str(out), "--node-limit", "20000"]) == 0
        lines = out.read_text().splitlines()
        assert lines and {json.loads(line)["board_index"] for line in lines} == {0}
        assert {json.loads(line)["node_limit"] for line in lines} == {20000}
        assert capsys.readouterr().out == f"{out}: {len(lines)} labelled positions from 1 board\n"
    extra = tmp_path / "more.jsonl"  # a file holding more boards than asked for: counted as they are
    extra.write_text(out.read_text() + out.read_text().replace('"board_index": 0', '"board_index": 1'))
    assert ranking.main(["--boards", "1", "--out", str(extra), "--node-limit", "20000"]) == 0
    assert capsys.readouterr().out == f"{extra}: {2 * len(lines)} labelled positions from 2 boards\n"


# A child that 0.2.15's solver labelled 11, "proven", where 10 suffice (its table held a
# refutation made under the commuting-moves rule as a fact about the position).
ONCE_MISLABELLED = ("211422544542253245213242411352131422532545515531", 39, 10)


def test_ranking_set_labels_agree_with_plain_ida():
    """The labels of every position with at most 6 clicks left (66 positions, 502 children),
    and of the child once mislabelled, are plain IDA*'s (``prune=False``: none of the
    solver's pruning rules)."""
    records = ranking.load()
    board, action, value = ONCE_MISLABELLED
    checked = [(record, record["actions"], record["child_values"]) for record in records if record["value"] <= 6]
    mislabelled = next(record for record in records if record["board"] == board)
    checked.append((mislabelled, [action], [mislabelled["child_values"][mislabelled["actions"].index(action)]]))
    assert checked[-1][2] == [value] and len(checked) > 50
    for record, actions, values in checked:
        position = np.asarray(jaxdust.parse_board(record["board"], 8, 6), np.int64)
        for action, label in zip(actions, values):
            child = ranking.child_of(position, action)
            plain = jaxdust.solve(child, colors=5, prune=False, beam_width=0).length if child.any() else 0
            assert plain == label, (record["board"], action, label, plain)


def test_a_limit_beyond_the_boards_there_are_is_said(tmp_path, capsys):
    """``--limit 5`` on 3 boards plays the 3, and says so where a typo would otherwise hide;
    a limit the boards meet says nothing."""
    board_file = tmp_path / "three.txt"
    board_file.write_text("# width=4 height=3\n" + "".join(jaxdust.board_to_text(board).replace("\n", "") + "\n" for board in np.asarray(
        jaxdust.random_boards(jax.random.key(3), 3, jaxdust.GameConfig(4, 3, 3)))))
    for source, flags in ((f"{board_file}", ["--boards", str(board_file)]),
                          ("--random 3", ["--random", "3", "--size", "4x3x3"])):
        report = evaluate.main([*flags, "--limit", "5", "--agents", "largest", "--out", str(tmp_path / "out")])
        assert report["agents"]["largest"]["boards"] == 3
        assert f"--limit 5 is more than the 3 boards of {source}; all are played" in capsys.readouterr().err
        evaluate.main([*flags, "--limit", "3", "--agents", "largest", "--out", str(tmp_path / "out")])
        assert "--limit" not in capsys.readouterr().err
    # --animate beyond the boards drew them all without a word, where --limit said so.
    evaluate.main([*flags, "--animate", "4", "--agents", "largest", "--out", str(tmp_path / "out")])
    assert "--animate 4 is more than the 3 boards of this evaluation; all are animated" in capsys.readouterr().err
    assert len(list((tmp_path / "out").glob("game-largest-*.gif"))) == 3
    evaluate.main([*flags, "--animate", "3", "--agents", "largest", "--out", str(tmp_path / "out")])
    assert "--animate" not in capsys.readouterr().err


def test_run_agent_refuses_what_its_searches_took_without_a_word():
    """The numba searches played a bad ``max_clicks`` (clicks of -1 or 2.5 came back), an
    empty batch, a floating cell (a line ``replay`` refuses), and a traceback for ``jobs``
    2.5 or a key 0 (a key is asked of every agent, as the signature says, not only of those
    that draw); ``require_playable`` let an agent of other rules through."""
    boards = jaxdust.random_boards(jax.random.key(3), 2, jaxdust.GameConfig(5, 4, 3))
    floating = np.array([[[1, 0, 2], [1, 1, 2], [2, 2, 1], [1, 2, 2]]], np.int8)
    for text, kwargs, message in [
        ("cpu-beam:4", {"max_clicks": -1}, "max_clicks must be a positive integer below 2^31, got -1"),
        ("solver:1", {"max_clicks": 2.5}, "max_clicks must be a positive integer below 2^31, got 2.5"),
        ("beam:4", {"max_clicks": None}, "max_clicks must be a positive integer below 2^31, got None"),
        ("dfs:10", {"jobs": 2.5}, "jobs must be a positive integer below 2^31, got 2.5"),
        ("cpu-beam:4", {"jobs": 0}, "jobs must be a positive integer below 2^31, got 0"),
        ("cpu-beam:4", {"boards": boards[:0]}, "run_agent takes boards [N, W, H], got shape (0, 5, 4)"),
        ("cpu-beam:4", {"boards": floating}, "board 0: cell (0, 2) floats above an empty cell"),
    ]:
        given = {"boards": boards, "key": jax.random.key(0), "max_clicks": 20, **kwargs}
        with pytest.raises(ValueError, match=re.escape(message)):
            registry.run_agent(text, given.pop("boards"), **given)
    with pytest.raises(TypeError, match="run_agent: key must be one jax.random.key"):
        registry.run_agent("nmcs", boards, key=0, max_clicks=20, rules="samegame")
    for name, rules in (("nmcs", "dust"), ("solver", "samegame"), ("mcts-heuristic", "clickomania")):
        with pytest.raises(ValueError, match=f"agent '{name}' plays the .* rules, not '{rules}'"):
            registry.require_playable([name], rules, 6, 6)


def test_a_search_line_past_the_click_cap_proves_nothing():
    """The solver said proven where its clicks were cut at ``max_clicks``."""
    boards = jaxdust.random_boards(jax.random.key(1), 5, jaxdust.GameConfig(5, 4, 3))
    optimal = registry.run_agent("solver:5", boards, key=jax.random.key(0), max_clicks=30, solutions=5)
    assert optimal["proven"].all() and optimal["cleared"].all()
    cap = int(optimal["clicks"].min())
    assert (optimal["clicks"] > cap).any() and (optimal["clicks"] <= cap).any()  # both sides of the cap
    for text in ("solver:5", "cpu-beam:8", "beam:8", "dfs:100000"):
        played = registry.run_agent(text, boards, key=jax.random.key(0), max_clicks=cap, solutions=5)
        for board, line, clicks, cleared in zip(boards, played["solutions"], played["clicks"], played["cleared"]):
            assert clicks <= cap and cleared == (0 < len(line) <= cap)  # a line past the cap, or none
            if line:
                final, count = jaxdust.replay(board, line)
                assert count == len(line) and not np.asarray(final).any()
    cut = registry.run_agent("solver:5", boards, key=jax.random.key(0), max_clicks=cap)
    assert list(cut["proven"]) == list(optimal["clicks"] <= cap)
