"""Damaged checkpoints: found, set aside on resume, skipped by load_run, and named truthfully."""

import json
import os
import shutil

import filelock
import jax
import numpy as np
import pytest

import jaxdust
from jaxdust.learn import checkpoint, cli, published, runs
from tests.conftest import TINY_DQN, run_record

pytestmark = [
    pytest.mark.slow,  # end-to-end: python -m pytest -m 'not slow' leaves it out
    # orbax reads a checkpoint's arrays concurrently; when one read fails on the damage it
    # drops the others unfinished, and Python reports each dropped coroutine or late callback
    # when it is collected, in whichever test that happens.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

# Four chunks, a checkpoint after each (three kept: 2, 3 and 4), evaluated every other one.
TRAIN_ARGS = [*TINY_DQN, "--total-steps", str(32 * 40)]


def train(run_dir, *extra):
    return cli.main([*TRAIN_ARGS, "--run-dir", str(run_dir), *extra])


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory):
    """The uninterrupted run that the recovered ones must end equal to."""
    directory = tmp_path_factory.mktemp("whole") / "run"
    train(directory)
    assert sorted(os.listdir(directory / "checkpoints")) == ["2", "3", "4"]
    return directory


@pytest.fixture
def run(whole_run, tmp_path):
    """A copy of the whole run, to damage."""
    return shutil.copytree(whole_run, tmp_path / "run")


def _largest_array_file(step_dir):
    arrays = [os.path.join(root, name) for root, _, names in os.walk(step_dir / "state")
              for name in names if os.sep + "d" + os.sep in os.path.join(root, name)]
    return max(arrays, key=os.path.getsize)


def _truncate(step_dir):
    path = _largest_array_file(step_dir)
    os.truncate(path, os.path.getsize(path) // 2)


def _delete_metadata(step_dir):
    os.remove(step_dir / "state" / "_METADATA")


def _overwrite(step_dir):
    """Garbage bytes inside an array file, its size kept: orbax itself restores this."""
    path = _largest_array_file(step_dir)
    with open(path, "r+b") as handle:
        handle.seek(os.path.getsize(path) // 2)
        handle.write(np.random.default_rng(0).bytes(64))


def _empty(step_dir):
    shutil.rmtree(step_dir)
    step_dir.mkdir()


DAMAGE = {"truncated array file": _truncate, "deleted metadata file": _delete_metadata,
          "garbage bytes": _overwrite, "empty step directory": _empty}


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


def assert_same_end(run_dir, whole_run):
    assert run_record(run_dir) == run_record(whole_run)
    ours, theirs = (runs.load_run(str(d), newest=True) for d in (run_dir, whole_run))
    assert ours.step == theirs.step == 4
    for a, b in zip(jax.tree.leaves(ours.params), jax.tree.leaves(theirs.params), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", DAMAGE)
def test_each_kind_of_damage_is_found_and_skipped(run, kind, capsys):
    DAMAGE[kind](run / "checkpoints" / "4")
    loaded = runs.load_run(str(run), newest=True)
    assert loaded.step == 3
    [warning] = warnings(capsys.readouterr().err)
    assert "checkpoint 4 in" in warning and "cannot be read (" in warning and "using checkpoint 3" in warning
    assert os.path.isdir(run / "checkpoints" / "4")  # a reader leaves the run as it is


def test_a_checkpoint_without_checksums_is_an_unfinished_save(run, whole_run, capsys):
    """As saved by a process killed between orbax's rename and the checksums: its bytes
    cannot be vouched for (orbax restores overwritten array data), so it is not used."""
    os.remove(run / "checkpoints" / "4" / "checksums.json")
    _overwrite(run / "checkpoints" / "4")
    assert runs.load_run(str(run), newest=True).step == 3
    [warning] = warnings(capsys.readouterr().err)
    assert "checkpoint 4 in" in warning and "its save did not finish" in warning and "using checkpoint 3" in warning
    train(run, "--resume")
    [warning] = warnings(capsys.readouterr().err)
    assert "resuming from checkpoint 3" in warning and "4.damaged" in warning
    assert_same_end(run, whole_run)


def test_resume_sets_a_damaged_newest_aside_and_ends_as_uninterrupted(run, whole_run, capsys):
    _truncate(run / "checkpoints" / "4")
    _overwrite(run / "checkpoints" / "3")  # the next one is damaged too: resume from 2
    train(run, "--resume")
    lines = warnings(capsys.readouterr().err)
    assert len(lines) == 2 and "checkpoint 4 in" in lines[0] and "checkpoint 3 in" in lines[1]
    assert all("resuming from checkpoint 2" in line for line in lines)
    assert {"4.damaged", "3.damaged"} <= set(os.listdir(run / "checkpoints"))
    assert_same_end(run, whole_run)


def test_resume_step_redoes_later_checkpoints_damaged_or_not(run, whole_run):
    _overwrite(run / "checkpoints" / "4")  # 3 stays intact
    train(run, "--resume", "--resume-step", "2")  # no "step already exists" when redoing 3 and 4
    assert sorted(os.listdir(run / "checkpoints")) == ["2", "3", "4"]
    assert_same_end(run, whole_run)


def test_a_resume_step_killed_before_its_log_is_cut_loses_no_log_line(run, whole_run, monkeypatch):
    """--resume-step forgets the later checkpoints before it cuts the log: killed between
    the two, the log still covers what is left, and the next resume ends as uninterrupted.
    Cutting the log first left a run whose newest checkpoint had no log lines, for good."""
    def killed(*args):
        raise KeyboardInterrupt  # a kill at this instant: nothing after it happens

    monkeypatch.setattr(runs.Run, "_truncate_metrics", killed)
    with pytest.raises(KeyboardInterrupt):
        train(run, "--resume", "--resume-step", "2")
    monkeypatch.undo()
    assert sorted(os.listdir(run / "checkpoints")) == ["2"]
    assert (run / "metrics.jsonl").read_text() == (whole_run / "metrics.jsonl").read_text()
    train(run, "--resume")
    assert_same_end(run, whole_run)


def test_a_resume_step_past_minutes_says_it_rolled_back(run, capsys):
    """--resume-step 3 under a --minutes the run had passed by checkpoint 3 rolls back to 3
    and trains nothing; it said only "nothing done", with checkpoint 4 gone."""
    assert not train(run, "--resume", "--resume-step", "3", "--minutes", "1e-6")
    out = capsys.readouterr().out
    assert "rolled back to checkpoint 3 (--resume-step), past --minutes 1e-06" in out and "nothing done" in out
    assert sorted(os.listdir(run / "checkpoints")) == ["2", "3"]
    assert not train(run, "--resume", "--minutes", "1e-6")  # a plain resume rolls nothing back
    assert "rolled back" not in capsys.readouterr().out


def test_a_damaged_resume_step_names_only_checkpoints_that_were_read(run, capsys):
    _truncate(run / "checkpoints" / "3")
    _empty(run / "checkpoints" / "4")
    with pytest.raises(SystemExit) as exit_info:
        train(run, "--resume", "--resume-step", "3")
    assert exit_info.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "checkpoint 3 in" in line and "checkpoints [2] are intact (restore one with --resume-step)" in line


def test_every_checkpoint_damaged_is_one_clear_error(run, capsys):
    for step in ("2", "3", "4"):
        _truncate(run / "checkpoints" / step)
    with pytest.raises(SystemExit) as exit_info:
        train(run, "--resume")
    assert exit_info.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "every checkpoint in" in line and "is unreadable: [2, 3, 4]" in line and "intact" not in line
    assert sorted(os.listdir(run / "checkpoints")) == ["2", "3", "4"]  # nothing set aside


def test_load_run_beside_a_training_process_waits_for_the_save_it_is_finishing(run, monkeypatch, capsys):
    """``evaluate.py`` while ``train.py`` trains the run: the newest checkpoint without its
    checksums yet is a save under way, not damage. Once written, it is the one read."""
    checksums = run / "checkpoints" / "4" / checkpoint.CHECKSUMS
    kept = checksums.read_bytes()
    os.remove(checksums)
    waits, moved_on = [], checkpoint.Checkpoints._moved_on

    def save_finishes(self, *args):
        waits.append(args)
        checksums.write_bytes(kept)
        return moved_on(self, *args)

    monkeypatch.setattr(checkpoint.Checkpoints, "_moved_on", save_finishes)
    monkeypatch.setattr(checkpoint, "SETTLE_SECONDS", 0.0)
    with filelock.FileLock(str(run / runs.LOCK_FILE)):  # as another process training there
        loaded = runs.load_run(str(run), newest=True)
    assert loaded.step == 4 and waits and warnings(capsys.readouterr().err) == []


def test_load_run_reads_the_newest_while_a_runs_first_best_is_saved(run, monkeypatch, capsys):
    """``evaluate.py`` while ``train.py`` makes its first save into ``best/``: the step's
    folder is there before orbax lists it, and the run was said to have saved nothing yet
    (advice to resume a run that was training). The newest checkpoint is read instead,
    quietly while the run trains, with a warning where it does not."""
    listed = checkpoint.Checkpoints.steps
    monkeypatch.setattr(checkpoint.Checkpoints, "steps",
                        lambda self: [] if os.path.basename(self.directory) == "best" else listed(self))
    with filelock.FileLock(str(run / runs.LOCK_FILE)):  # as another process training there
        assert runs.load_run(str(run)).step == 4
    assert warnings(capsys.readouterr().err) == []
    loaded = runs.load_run(str(run))
    assert loaded.step == 4 and loaded.checkpoint == os.path.join("checkpoints", "4")
    assert warnings(capsys.readouterr().err) == [f"warning: no finished checkpoint in {run / 'best'}; "
                                                 f"using checkpoint 4 in {run / 'checkpoints'}"]
    monkeypatch.setattr(checkpoint.Checkpoints, "steps", lambda self: [])
    with filelock.FileLock(str(run / runs.LOCK_FILE)), pytest.raises(runs.RunError, match="training now, has not"):
        runs.load_run(str(run))
    with pytest.raises(runs.RunError, match="has not saved one yet"):  # no warning of a checkpoint it then lacks
        runs.load_run(str(run))
    assert warnings(capsys.readouterr().err) == []


def test_load_run_falls_back_from_a_damaged_best(run, whole_run, capsys):
    best_step = json.loads((whole_run / "summary.json").read_text())["best_step"]
    _delete_metadata(run / "best" / str(best_step))
    loaded = runs.load_run(str(run))
    assert loaded.step == 4  # the newest in checkpoints/
    [warning] = warnings(capsys.readouterr().err)
    assert f"checkpoint {best_step} in {run / 'best'} cannot be read" in warning

    for step in ("2", "3", "4"):
        _empty(run / "checkpoints" / step)
    with pytest.raises(runs.RunError) as error:
        runs.load_run(str(run))
    message = str(error.value)
    assert "\n" not in message and "--resume-step" not in message
    assert "every checkpoint in" in message and "[2, 3, 4]" in message


@pytest.mark.parametrize("measure", ["greedy", "argmax"])
def test_resume_sets_a_damaged_best_aside_and_keeps_a_readable_one(run, whole_run, capsys, measure):
    """Resuming (here at the end) checks the selected checkpoints; a damaged one is set
    aside and the final evaluation's state becomes the best, so the run loads without a
    warning."""
    summary_keys = ("best_step", "best_greedy_clicks") if measure == "greedy" else (
        f"best_{measure}_step", f"best_{measure}_clicks")
    assert json.loads((whole_run / "summary.json").read_text())[summary_keys[0]] == 4  # the final state, evaluated again
    folder = run / runs.SELECTED_DIRS[measure]
    _truncate(folder / "4")
    train(run, "--resume")
    [warning] = warnings(capsys.readouterr().err)
    assert f"checkpoint 4 in {folder} cannot be read" in warning and "next evaluation becomes the best" in warning
    assert sorted(os.listdir(folder)) == ["4", "4.damaged"]
    assert runs.load_run(str(run), by=measure).step == 4 and warnings(capsys.readouterr().err) == []
    ours, theirs = (json.loads((d / "summary.json").read_text()) for d in (run, whole_run))
    assert [ours[key] for key in summary_keys] == [theirs[key] for key in summary_keys]


def test_resuming_a_finished_run_made_before_best_argmax_selects_its_final_checkpoint(run, whole_run, capsys):
    """A finished run of jaxdust 0.2.51 or before kept no ``best-argmax/`` and logged no
    ``argmax_se``: ``--resume`` evaluates its final checkpoint once more and keeps it there,
    and only the summary's lines of that selection change (it trained nothing)."""
    shutil.rmtree(run / runs.SELECTED_DIRS["argmax"])
    old = {k: v for k, v in json.loads((run / "summary.json").read_text()).items() if not k.startswith("best_argmax")}
    (run / "summary.json").write_text(json.dumps(old))
    log = [{k: v for k, v in json.loads(line).items() if k != "argmax_se"}
           for line in (run / "metrics.jsonl").read_text().splitlines()]
    (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in log))
    train(run, "--resume")
    assert warnings(capsys.readouterr().err) == []
    assert os.listdir(run / runs.SELECTED_DIRS["argmax"]) == ["4"] and runs.load_run(str(run), by="argmax").step == 4
    summary = json.loads((run / "summary.json").read_text())
    assert summary == {**old, **{k: v for k, v in json.loads((whole_run / "summary.json").read_text()).items()
                                 if k.startswith("best_argmax")}}
    assert [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()] == log


def test_resume_refuses_a_best_made_with_another_config_in_one_line(run, capsys):
    """Intact files (checksums written again) of another run's config in ``best/``."""
    best = run / "best" / "4"
    config_file = best / "config" / "metadata"  # orbax's JsonSave file
    saved = json.loads(config_file.read_text())
    saved["config"]["hidden"] = [7]
    with open(config_file, "w") as handle:
        json.dump(saved, handle)
    os.remove(best / checkpoint.CHECKSUMS)
    checkpoint._write_checksums(str(best))
    with pytest.raises(SystemExit) as exit_info:
        train(run, "--resume")
    assert exit_info.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert f"{best} was made with another config (differs in: config.hidden): move it away" in line
    assert sorted(os.listdir(run / "best")) == ["4"]  # left where it was


@pytest.mark.parametrize("agent, measure", [("policy", "argmax"), ("value", "greedy")])
def test_evaluate_plays_a_run_whose_best_is_damaged(run, whole_run, tmp_path, capsys, agent, measure):
    import evaluate

    best_step = json.loads((whole_run / "summary.json").read_text())[
        "best_step" if measure == "greedy" else f"best_{measure}_step"]
    _truncate(run / runs.SELECTED_DIRS[measure] / str(best_step))
    name = f"{agent}:{run}"
    report = evaluate.main(["--random", "4", "--agents", name, "--out", str(tmp_path / "eval")])
    assert report["agents"][name]["boards"] == 4
    assert report["agents"][name]["played"] == {"run": str(run), "checkpoint": os.path.join("checkpoints", "4"),
                                                "fingerprint": runs.fingerprint(str(run))}
    out, err = capsys.readouterr()
    assert f"checkpoints played: {name} {run / 'checkpoints' / '4'}" in out
    [warning] = warnings(err)
    assert f"checkpoint {best_step} in" in warning and "using checkpoint 4" in warning


def test_a_run_loads_and_plays_alike_under_jax_enable_x64(whole_run):
    """A template's Python-int step is int64 under x64, where the run saved int32: every
    run agent was refused, blamed on "another version of jaxdust"."""
    played = []
    for x64 in (False, True):
        with jax.enable_x64(x64):
            trained = runs.load_run(str(whole_run))
            boards = jax.vmap(lambda k: jaxdust.random_board(k, trained.config.game))(
                jax.random.split(jax.random.key(3), 4))
            played.append(np.asarray(jaxdust.play_boards(boards, trained.policy, jax.random.key(0), 30,
                                                         params=trained.params)[0]))
    assert np.array_equal(*played)
    wider = checkpoint._layout({"step": np.int64(0)})["step"]
    assert checkpoint._fits(checkpoint._layout({"step": np.int32(0)})["step"], wider)
    assert not checkpoint._fits(checkpoint._layout({"w": np.zeros(3, np.int32)})["w"],
                                checkpoint._layout({"w": np.zeros(3, np.int64)})["w"])  # arrays keep their dtype


def test_a_run_killed_before_its_first_checkpoint_starts_over_cleanly(run, whole_run):
    """Its log may hold lines of chunks never checkpointed: resuming redoes them once.
    (The folder checkpoints/ is made when the run starts, so it is there, empty.)"""
    shutil.rmtree(run / "checkpoints")
    (run / "checkpoints").mkdir()
    shutil.rmtree(run / "best")
    os.remove(run / "summary.json")
    log = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run / "metrics.jsonl").write_text(log[0])  # killed in the save of chunk 1 (--checkpoint-every 1)
    train(run, "--resume")
    assert_same_end(run, whole_run)


def test_a_run_killed_after_saving_its_last_best_resumes_to_the_same_end(run, whole_run):
    """Killed between saving the last step in ``best/`` and writing the summary: the resumed
    run evaluates that step again and keeps the best it has (it used to save the step
    again, which orbax refused)."""
    assert json.loads((whole_run / "summary.json").read_text())["best_step"] == 4
    os.remove(run / "summary.json")
    train(run, "--resume")
    assert_same_end(run, whole_run)
    assert sorted(os.listdir(run / "best")) == ["4"]


def test_checkpoints_follow_the_clock_unless_counted(whole_run, tmp_path):
    """By default a run saves by training seconds (and at its end); the cadence never
    changes what it learns."""
    counted = TRAIN_ARGS.index("--checkpoint-every")
    by_clock = TRAIN_ARGS[:counted] + TRAIN_ARGS[counted + 2:]
    for seconds, kept in (("3600", ["4"]), ("1e-9", ["2", "3", "4"])):
        cli.main([*by_clock, "--checkpoint-seconds", seconds, "--run-dir", str(tmp_path / seconds)])
        assert sorted(os.listdir(tmp_path / seconds / "checkpoints")) == kept
        assert_same_end(tmp_path / seconds, whole_run)


def test_a_resume_saves_as_often_as_the_run_did_unless_told(run, whole_run):
    """The run saves every chunk (--checkpoint-every 1); a resume given no cadence saved by
    the clock (30 s) and kept only its end. One given replaces the run's own."""
    counted = TRAIN_ARGS.index("--checkpoint-every")
    uncounted = TRAIN_ARGS[:counted] + TRAIN_ARGS[counted + 2:]

    def resume_from_2(*extra):
        cli.main([*uncounted, "--run-dir", str(run), "--resume", "--resume-step", "2", *extra])
        assert_same_end(run, whole_run)
        return sorted(os.listdir(run / "checkpoints")), json.loads((run / "config.json").read_text())["run"]

    # A finished run resumed under another cadence trains nothing and keeps its fingerprint
    # (the leaderboard measured its rows again), and its config.json as it was: a cadence
    # that saved nothing is not the run's.
    before, written = runs.fingerprint(run), (run / "config.json").read_bytes()
    cli.main([*uncounted, "--run-dir", str(run), "--resume", "--checkpoint-seconds", "60"])
    assert (run / "config.json").read_bytes() == written and runs.fingerprint(run) == before
    checkpoints, kept = resume_from_2("--checkpoint-every", "1")
    assert checkpoints == ["2", "3", "4"] and kept["checkpoint_every"] == 1 and "checkpoint_seconds" not in kept
    checkpoints, kept = resume_from_2()
    assert checkpoints == ["2", "3", "4"] and kept["checkpoint_every"] == 1 and "checkpoint_seconds" not in kept
    checkpoints, kept = resume_from_2("--checkpoint-seconds", "3600")
    assert checkpoints == ["2", "4"] and kept["checkpoint_seconds"] == 3600 and "checkpoint_every" not in kept
    assert resume_from_2()[0] == ["2", "4"]
    # A cadence edited by hand into no count (true read as 1 would save every chunk) saves by the clock.
    config = json.loads((run / "config.json").read_text())
    config["run"] = {**config["run"], "checkpoint_every": True, "checkpoint_seconds": "1e-9"}
    (run / "config.json").write_text(json.dumps(config))
    assert resume_from_2()[0] == ["2", "4"]


def test_a_run_directory_takes_one_training_process_at_a_time(run, capsys):
    held = filelock.FileLock(str(run / runs.LOCK_FILE))
    with held:  # as another process training there
        with pytest.raises(SystemExit) as exit_info:
            train(run, "--resume")
    assert exit_info.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert f"another process is training in {run}" in line


def test_a_new_run_refuses_what_a_run_left_without_its_config(run, capsys):
    """A new run there would append to the old log and overwrite its checkpoints."""
    os.remove(run / "config.json")
    log = (run / "metrics.jsonl").read_text()
    for extra in ([], ["--resume"]):
        with pytest.raises(SystemExit) as exit_info:
            train(run, *extra)
        assert exit_info.value.code == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert "holds checkpoints, best, best-argmax, metrics.jsonl, summary.json of a run but no config.json" in line
    assert (run / "metrics.jsonl").read_text() == log


@pytest.mark.parametrize("damaged", ["garbage\n", '{"loss": 1.0}\n',
                                     # Read back by a resume: crashed it after the log was rewritten.
                                     '{"chunk": 1, "loss": 1.0}\n', '{"chunk": 1, "seconds": 1.0, "greedy_clicks": null}\n'])
def test_a_damaged_log_is_refused_before_anything_is_moved(run, damaged, capsys):
    lines = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("".join([lines[0], damaged, *lines[1:]]))
    _truncate(run / "checkpoints" / "4")  # would be set aside by a resume
    with pytest.raises(SystemExit) as exit_info:
        train(run, "--resume")
    assert exit_info.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "metrics.jsonl is damaged" in line and "remove its damaged lines" in line
    assert sorted(os.listdir(run / "checkpoints")) == ["2", "3", "4"]


def test_a_resume_step_with_no_checkpoint_left_is_refused_not_started_over(run, capsys):
    """Starting over deleted best/ and the log, the step asked for silently dropped."""
    for step in ("2", "3", "4"):
        shutil.rmtree(run / "checkpoints" / step)
    os.remove(run / "summary.json")
    log, best = (run / "metrics.jsonl").read_text(), os.listdir(run / "best")
    with pytest.raises(SystemExit) as exit_info:
        train(run, "--resume", "--resume-step", "3")
    assert exit_info.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "no checkpoint 3 in" in line and "there are none" in line
    assert (run / "metrics.jsonl").read_text() == log and os.listdir(run / "best") == best


def test_a_resume_before_the_end_drops_the_summary_until_the_run_ends_again(run, whole_run):
    """The summary of steps a --resume-step undoes stayed while the run was stopped short."""
    assert not train(run, "--resume", "--resume-step", "2", "--minutes", "1e-6")  # back to 2, past its minutes
    assert not (run / "summary.json").exists()
    train(run, "--resume")
    assert_same_end(run, whole_run)


def test_a_resume_with_another_learner_says_so_before_comparing_run_flags(run, capsys):
    """It said the --seed differed; only the corrected command said the learner did."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["avi", "--run-dir", str(run), "--resume", "--seed", "5"])
    assert exit_info.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "holds a run of dqn, not avi" in line and "--seed" not in line


@pytest.mark.parametrize("run_dir_flag", ["--run-dir {}", "--run-dir={}", "--run-d {}"])
def test_a_resume_naming_no_learner_goes_to_the_runs_own(run, whole_run, run_dir_flag):
    """It went to avi, which refused the dqn run: "resume it with the dqn learner"."""
    train(run, "--resume", "--resume-step", "2", "--minutes", "1e-6")  # back to 2, past its minutes
    cli.main([*run_dir_flag.format(run).split(" "), "--resume"])
    assert_same_end(run, whole_run)


def test_flags_naming_no_learner_and_no_run_to_resume_go_to_the_default_learner(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--run-dir", str(tmp_path / "none"), "--resume"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("train.py avi: error: nothing to resume in")
    for argv, error in ((["--resume", "--run-dir"], "argument --run-dir: expected one argument"),
                        (["--r", "x"], "ambiguous option: --r could match")):  # not the peek's own usage
        with pytest.raises(SystemExit):
            cli.main(argv)
        assert capsys.readouterr().err.startswith(f"train.py avi: error: {error}")


def test_a_resumed_runs_progress_bar_shows_its_last_evaluation_from_the_start(run, monkeypatch):
    """It showed none until the run's next evaluation."""
    import contextlib

    shown = []

    class Bar:
        postfix = ""  # tqdm's drawn postfix, which an evaluation's progress keeps

        def set_postfix(self, refresh=True, **values):
            shown.append(values)

        def set_postfix_str(self, text):  # an evaluation's progress
            shown.append(text)

        def update(self):
            shown.append("step")

    monkeypatch.setattr(runs, "progress_bar", lambda **kwargs: contextlib.nullcontext(Bar()))
    logged = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    [at_2] = [r for r in logged if r["chunk"] == 2]
    train(run, "--resume", "--resume-step", "2")  # step 3 does not evaluate
    assert shown[0] == {"greedy": f"{at_2['greedy_clicks']:.2f}", "argmax": f"{at_2['argmax_clicks']:.2f}"}
    assert shown[1] == "step"


def test_a_resume_on_another_device_count_says_so_and_keeps_the_starting_one(run, capsys):
    """A run started on 2 devices and resumed on 1 finished without a word, and differed."""
    config = json.loads((run / "config.json").read_text())
    assert config["run"]["devices"] == jax.device_count()
    config["run"]["devices"] = jax.device_count() + 1
    (run / "config.json").write_text(json.dumps(config))
    train(run, "--resume", "--resume-step", "3")
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: {run} started on {jax.device_count() + 1} devices and resumes on "
                        f"{jax.device_count()} (all there are): it goes on, but will not end as a run "
                        "on one count does"]
    assert json.loads((run / "config.json").read_text())["run"]["devices"] == jax.device_count() + 1
    # A count edited by hand into no count is none kept (divmod failed on "2" in a traceback).
    config["run"]["devices"] = "2"
    (run / "config.json").write_text(json.dumps(config))
    train(run, "--resume", "--resume-step", "3")
    assert not [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]


@pytest.mark.parametrize("name", ["config.json", "metrics.jsonl"])
def test_a_run_file_that_is_a_folder_is_refused_in_one_line(tmp_path, name, capsys):
    (tmp_path / "run" / name).mkdir(parents=True)
    for extra in ([], ["--resume"]):
        with pytest.raises(SystemExit) as exit_info:
            train(tmp_path / "run", *extra)
        assert exit_info.value.code == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert f"{name} is not a file" in line and "use another --run-dir" in line


def test_the_default_run_directory_is_checked_as_a_given_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").write_text("")  # a file where the default's folder would go
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*TRAIN_ARGS])
    assert exit_info.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "--run-dir (default): cannot create runs/dqn-0" in line and "runs is a file" in line


def test_a_damaged_config_is_named_as_such(run):
    (run / "config.json").write_text('{"learner": "dq')
    with pytest.raises(runs.RunError, match=r"config.json is damaged \("):
        runs.load_run(str(run))


def test_load_run_leaves_a_run_without_checkpoints_as_it_is(run):
    shutil.rmtree(run / "checkpoints")
    shutil.rmtree(run / "best")
    with pytest.raises(runs.RunError, match="has not saved one yet"):
        runs.load_run(str(run))
    assert not (run / "checkpoints").exists()


def test_load_run_names_what_is_damaged_rather_than_a_run_not_saved_yet(run, tmp_path):
    """A reader is not told to train further or to use another --run-dir."""
    shutil.rmtree(run / "checkpoints")
    (run / "checkpoints").write_text("")
    with pytest.raises(runs.RunError, match="checkpoints is a file, not a folder of checkpoints"):
        runs.load_run(str(run), newest=True)
    copy = shutil.copytree(published.resolve("@imitation-8x6x5"), tmp_path / "copy")
    os.remove(copy / published.RECORD)
    with pytest.raises(runs.RunError, match="a published network's parameters without its published.json"):
        runs.load_run(str(copy))
    os.remove(run / "config.json")
    (run / "config.json").mkdir()
    with pytest.raises(runs.RunError, match="config.json is not a file") as error:
        runs.load_run(str(run))
    assert "--run-dir" not in str(error.value)


def test_evaluate_refuses_a_run_with_no_readable_checkpoint_before_any_agent_plays(run, tmp_path, monkeypatch,
                                                                                   capsys):
    import evaluate
    from jaxdust.evaluation import registry

    for folder in ("checkpoints", *runs.SELECTED_DIRS.values()):
        for step in os.listdir(run / folder):
            _truncate(run / folder / step)
    monkeypatch.setattr(registry, "run_agent", lambda *args, **kwargs: pytest.fail("an agent played"))
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["--random", "4", "--agents", f"largest,policy:{run}", "--out", str(tmp_path / "eval")])
    assert exit_info.value.code == 2
    assert "every checkpoint in" in capsys.readouterr().err


def test_resume_removes_the_folders_of_saves_a_killed_process_left(run, whole_run):
    left = run / "checkpoints" / f"5{checkpoint.TEMPORARY}-1764300000"
    (left / "state").mkdir(parents=True)
    (left / "state" / "part").write_bytes(b"x")
    for folder in runs.SELECTED_DIRS.values():
        (run / folder / f"5{checkpoint.TEMPORARY}").mkdir()
    train(run, "--resume")
    assert sorted(os.listdir(run / "checkpoints")) == ["2", "3", "4"]
    assert [os.listdir(run / folder) for folder in runs.SELECTED_DIRS.values()] == [["4"], ["4"]]
    assert_same_end(run, whole_run)


def _saved_every(run, every: int) -> None:
    """Make ``run`` one that saved every ``every`` chunks (as its config.json says)."""
    config = json.loads((run / "config.json").read_text())
    config["run"]["checkpoint_every"] = every
    (run / "config.json").write_text(json.dumps(config))


def test_a_run_killed_while_saving_its_first_checkpoint_starts_over(run, whole_run, capsys):
    """Its only checkpoint has no checksums: as if killed before it."""
    for step in ("3", "4"):
        shutil.rmtree(run / "checkpoints" / step)
    shutil.rmtree(run / "best")
    os.remove(run / "summary.json")
    os.remove(run / "checkpoints" / "2" / checkpoint.CHECKSUMS)
    log = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("".join(log[:2]))  # killed in its save at chunk 2: nothing logged after
    _saved_every(run, 2)  # chunk 2's its first save (the resume saves every chunk, as told)
    train(run, "--resume")
    [warning] = warnings(capsys.readouterr().err)
    assert "checkpoint 2 in" in warning and "its save did not finish" in warning and "starting over" in warning
    assert_same_end(run, whole_run)


def test_a_start_that_fails_after_taking_the_lock_lets_go_of_it(run, monkeypatch):
    """As in a notebook, where the failed Run stays referenced by the traceback."""
    learner, config = runs.read_run_config(str(run))
    real_checkpoints = runs.checkpoint.Checkpoints

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runs.checkpoint, "Checkpoints", full_disk)  # after the lock, as making a folder would
    with pytest.raises(OSError) as failed:
        runs.Run(str(run), learner, config, resume=True)
    monkeypatch.setattr(runs.checkpoint, "Checkpoints", real_checkpoints)
    again = runs.Run(str(run), learner, config, resume=True)  # not "another process is training"
    again.close()
    assert failed.value.errno == 28


def test_evaluate_plays_the_selected_or_the_newest_checkpoint(run, tmp_path):
    """``policy:RUN`` plays its selected checkpoint (``best/`` in a run without
    ``best-argmax/``), ``policy:RUN@newest`` the newest; both in one evaluation."""
    import evaluate
    from jaxdust.evaluation import registry

    for folder in runs.SELECTED_DIRS.values():  # as if a run of 0.2.51 had selected an earlier checkpoint
        shutil.rmtree(run / folder)
    shutil.copytree(run / "checkpoints" / "2", run / runs.BEST_DIR / "2")
    selected, newest = runs.load_run(str(run)), runs.load_run(str(run), newest=True)
    assert selected.step != newest.step  # else this test could not tell them apart
    assert registry.parse_agent(f"value:{run}@newest:2")[1] == (f"{run}@newest", 2)
    assert registry.run_of(f"value:{run}@newest:2") == str(run)
    for text, wanted in [(str(run), selected), (f"{run}@newest", newest)]:
        loaded, played = registry._loaded_run(text, "argmax")
        assert loaded.step == wanted.step and played["checkpoint"].endswith(os.sep + str(wanted.step))
        assert all(jax.tree.leaves(jax.tree.map(np.array_equal, loaded.params, wanted.params)))
    agents = f"policy:{run},policy:{run}@newest,value:{run}@newest:2"
    report = evaluate.main(["--random", "6", "--size", "8x6x5", "--agents", agents, "--out", str(tmp_path / "e")])
    assert set(report["agents"]) == set(agents.split(","))
    with pytest.raises(SystemExit):  # the suffix does not hide a missing run
        evaluate.main(["--random", "2", "--agents", f"policy:{tmp_path}/none@newest", "--out", str(tmp_path / "x")])


@pytest.mark.parametrize("loss", ["checkpoints deleted", "checkpoints a file", "checkpoints emptied", "checksums lost"])
def test_resume_refuses_to_start_over_a_run_whose_checkpoints_are_gone(run, loss, capsys):
    """It took them for a run killed before its first checkpoint, and emptied the log,
    best/, best-argmax/ and summary.json of a finished run to train it again. Checkpoints
    without their checksums (a partial copy) read as saves a kill cut short: a finished
    run's were set aside and its log and selections deleted before it was refused."""
    if loss == "checksums lost":
        for step in ("2", "3", "4"):
            os.remove(run / "checkpoints" / step / checkpoint.CHECKSUMS)
    else:
        shutil.rmtree(run / "checkpoints")
    if loss == "checkpoints a file":
        (run / "checkpoints").write_text("")
    elif loss == "checkpoints emptied":  # the folder is kept: summary.json says it finished
        (run / "checkpoints").mkdir()
    before = {name: (run / name).read_bytes() for name in ("metrics.jsonl", "summary.json")}
    with pytest.raises(SystemExit) as exit_info:
        train(run, "--resume")
    assert exit_info.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    where = "holds no finished checkpoint" if loss in ("checkpoints emptied", "checksums lost") else "is gone"
    assert f"its checkpoints/ folder {where}, yet it finished (summary.json): --resume would start it over" in line
    assert {name: (run / name).read_bytes() for name in before} == before
    assert [os.listdir(run / folder) for folder in runs.SELECTED_DIRS.values()] == [["4"], ["4"]]
    if loss == "checksums lost":
        assert sorted(os.listdir(run / "checkpoints")) == ["2", "3", "4"]
    os.remove(run / "summary.json")  # not finished, but its log (or its checkpoints) show saves
    said = {"checkpoints emptied": "its checkpoints/ folder holds no finished checkpoint, yet metrics.jsonl logs "
                                   "training after a checkpoint was saved",
            "checksums lost": "its checkpoints 2, 3, 4 have no checksums.json, yet a kill leaves one such checkpoint "
                              "at most"}.get(loss, "its checkpoints/ folder is gone, yet metrics.jsonl logs its training")
    for _ in range(2):  # the first refusal leaves the run as it was: so does the second
        with pytest.raises(SystemExit):
            train(run, "--resume")
        assert said in capsys.readouterr().err
    assert (run / "metrics.jsonl").read_bytes() == before["metrics.jsonl"]
    assert [os.listdir(run / folder) for folder in runs.SELECTED_DIRS.values()] == [["4"], ["4"]]
    if loss == "checksums lost":
        assert sorted(os.listdir(run / "checkpoints")) == ["2", "3", "4"]


def test_a_sole_checkpoint_without_checksums_is_refused_where_the_log_went_on_after_it(run, capsys):
    """A partial copy that kept one checkpoint, without its checksums: the log shows its save
    returned, so it is no save a kill cut short."""
    for step in ("3", "4"):
        shutil.rmtree(run / "checkpoints" / step)
    os.remove(run / "summary.json")
    os.remove(run / "checkpoints" / "2" / checkpoint.CHECKSUMS)
    with pytest.raises(SystemExit):
        train(run, "--resume")
    assert "logs training after a checkpoint was saved" in capsys.readouterr().err
    assert os.listdir(run / "checkpoints") == ["2"] and os.listdir(run / runs.BEST_DIR) == ["4"]
    log = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("".join(log[:2]))  # up to chunk 2, the save cut short: started over
    _saved_every(run, 2)
    train(run, "--resume")
    assert "its save did not finish" in capsys.readouterr().err


@pytest.mark.parametrize("flags, seconds, shown", [
    ({"checkpoint_every": 3}, [1, 2, 3], False),  # killed in the save of chunk 3, or before it
    ({"checkpoint_every": 3}, [1, 2, 3, 4], True),
    ({}, [5, 20, 34.9, 36], False),  # the first save is due 30 s after a clock that began before 5 s
    ({}, [5, 20, 35, 36], True),
    ({}, [5, 20, 35], False),  # the record of the chunk saved at 35 s is the last: killed in that save
    ({"checkpoint_seconds": 10}, [5, 15, 16], True),
    ({"checkpoint_seconds": 10}, [5, 14.9, 16], False),
])
def test_the_log_shows_a_save_by_the_cadence_the_run_saved_by(flags, seconds, shown):
    log = [{"chunk": chunk, "seconds": float(at)} for chunk, at in enumerate(seconds, start=1)]
    cadence = {"checkpoint_every": None, "checkpoint_seconds": None, **flags}
    assert runs._logged_past_a_save(log, cadence, ()) is shown
    assert runs._logged_past_a_save(log, cadence, (len(seconds) - 1,)) is True  # a record past an unfinished step
    assert runs._logged_past_a_save(log, cadence, (len(seconds),)) is shown  # the step a later save's, or the first
    if not flags:  # the default clock, which config.json keeps as no cadence at all
        assert runs._logged_past_a_save(log, {}, ()) is shown


def test_a_checkpoint_that_cannot_be_moved_aside_is_one_line_and_nothing_moves(run, monkeypatch, capsys):
    """A read-only checkpoints/ folder: the resume that sets a damaged checkpoint aside, or
    deletes those past --resume-step, said so in an OSError traceback."""
    _truncate(run / "checkpoints" / "4")
    os.remove(run / "summary.json")

    def read_only(source, target):
        raise OSError(30, "Read-only file system", source)

    monkeypatch.setattr(checkpoint.os, "rename", read_only)
    for extra, moved in (([], 4), (["--resume-step", "2"], 3)):
        with pytest.raises(SystemExit) as exit_info:
            train(run, "--resume", *extra)
        assert exit_info.value.code == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert f"cannot move checkpoint {moved} in" in line and "(Read-only file system): make the folder writable" in line
        assert sorted(os.listdir(run / "checkpoints")) == ["2", "3", "4"]


def test_a_config_saved_with_a_byte_order_mark_keeps_its_run_flags(run):
    """An editor's byte-order mark made the run flags read as none: a resume evaluated on
    the default --eval-boards and wrote them into config.json."""
    path = run / "config.json"
    flags = runs.read_run_flags(str(run))
    assert flags and runs.saved_learner_name(str(run)) == "dqn"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert runs.read_run_flags(str(run)) == flags and runs.saved_learner_name(str(run)) == "dqn"


def test_a_checkpoint_removed_by_a_process_killed_midway_leaves_no_part_of_it(tmp_path, monkeypatch):
    """A kill while a selected checkpoint's files were being deleted (a newer one just saved)
    left a step with files missing: the resume set it aside as damaged and dropped the
    selection's bar, so the run selected other checkpoints than an uninterrupted one."""
    directory = tmp_path / "best"
    saved = checkpoint.Checkpoints(str(directory), max_to_keep=1)
    state = {"w": np.arange(4096, dtype=np.float32), "b": np.ones(3, np.float32)}
    saved.save(1, state, {"run": 1})

    def killed_midway(path, *args, **kwargs):
        files = sorted(os.path.join(root, name) for root, _, names in os.walk(path) for name in names)
        os.remove(files[len(files) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(shutil, "rmtree", killed_midway)
    with pytest.raises(KeyboardInterrupt):
        saved.save(2, state, {"run": 1})
    monkeypatch.undo()
    checkpoint.remove_unfinished_saves(str(directory))  # what the run's next start does
    again = checkpoint.Checkpoints(str(directory), max_to_keep=1)
    assert again.steps() == [2] and sorted(os.listdir(directory)) == ["2"]
    again.verify(2, state, {"run": 1})


def test_config_and_summary_name_the_versions_that_trained_and_finished_the_run(run, whole_run, monkeypatch):
    def record(name):
        return json.loads((run / name).read_text())

    assert record("config.json")[runs.VERSIONS_KEY] == [jaxdust.__version__]
    assert record("summary.json")["jaxdust"] == jaxdust.__version__
    fingerprint = runs.fingerprint(run)
    train(run, "--resume")  # finished: nothing trained, nothing rewritten
    assert runs.fingerprint(run) == fingerprint
    monkeypatch.setattr(runs, "__version__", "9.9.9")
    train(run, "--resume", "--resume-step", "2")
    assert record("config.json")[runs.VERSIONS_KEY] == [jaxdust.__version__, "9.9.9"]
    assert record("summary.json")["jaxdust"] == "9.9.9"
    assert run_record(run)[0] == run_record(whole_run)[0]
    # The versions are no part of the run's digest: a resume by another version killed before
    # its first save left the run as it was, and its kept results stand.
    fingerprint = runs.fingerprint(run)
    config = record("config.json")
    (run / "config.json").write_text(json.dumps({**config, runs.VERSIONS_KEY: ["9.9.9", "9.9.10"]}))
    assert runs.fingerprint(run) == fingerprint
    (run / "config.json").write_text(json.dumps({**config, "learner": "avi"}))
    assert runs.fingerprint(run) != fingerprint
    (run / "config.json").write_text(json.dumps(config))
    # A run begun before 0.2.92 recorded no versions: a resume says so before its own.
    config = record("config.json")
    del config[runs.VERSIONS_KEY]
    (run / "config.json").write_text(json.dumps(config))
    monkeypatch.setattr(runs, "__version__", "9.9.10")
    train(run, "--resume", "--resume-step", "3")
    assert record("config.json")[runs.VERSIONS_KEY] == ["<0.2.92", "9.9.10"]
