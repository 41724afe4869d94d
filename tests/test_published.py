"""Published networks (jaxdust.learn.published): a run's parameters shipped with the
package and played as ``@NAME`` wherever a run directory is taken."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import jax
import numpy as np
import pytest

from jaxdust.core import files, game
from jaxdust.evaluation import benchmark, registry
from jaxdust.learn import published
from jaxdust.learn.runs import RunError, fingerprint, load_run, read_run_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def networks(tmp_path, monkeypatch):
    """An empty folder of published networks in place of the package's."""
    folder = tmp_path / "networks"
    monkeypatch.setattr(published, "NETWORKS_DIR", str(folder))
    return folder


def _play(agent: str, boards, rules: str = "dust") -> np.ndarray:
    cells = boards.shape[1] * boards.shape[2]
    return registry.run_agent(agent, boards, key=jax.random.key(0), max_clicks=cells, rules=rules)["clicks"]


@pytest.fixture
def run_of_two_selections(whole_dqn_run, tmp_path):
    """A copy of the tiny DQN run whose ``best-argmax/`` holds another checkpoint than
    ``best/`` (its chunk 4, where ``best/`` holds chunk 6)."""
    run = tmp_path / "run"
    shutil.copytree(whole_dqn_run, run)
    shutil.rmtree(run / "best-argmax")
    shutil.copytree(run / "checkpoints" / "4", run / "best-argmax" / "4")
    assert load_run(str(run), by="argmax").checkpoint == "best-argmax/4" and load_run(str(run)).checkpoint == "best/6"
    return run


def _same_params(a, b) -> bool:
    return jax.tree.structure(a) == jax.tree.structure(b) and all(
        np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def test_a_published_run_plays_as_the_run_does(run_of_two_selections, networks):
    run_dir = str(run_of_two_selections)
    directory = published.publish(run_dir, "tiny", command="python train.py dqn ...", trained="here")
    assert published.names() == ["tiny"] and directory == str(networks / "tiny")
    assert oct(os.stat(directory).st_mode & 0o777) == oct(0o777 & ~files.current_umask())  # as mkdir makes one
    previous = os.umask(0o077)  # it was 755 whatever the umask, its files 600: open, but unreadable
    try:
        private = published.publish(run_dir, "tiny-private", command="python train.py dqn ...", trained="here")
    finally:
        os.umask(previous)
    assert {oct(os.stat(os.path.join(private, name)).st_mode & 0o777) for name in ("", *os.listdir(private))} \
        <= {oct(0o700), oct(0o600)}
    for by in ("greedy", "argmax"):  # each selection's own parameters, as the run plays them
        run, shipped = load_run(run_dir, by=by), load_run("@tiny", by=by)
        assert shipped.learner == run.learner and shipped.config == run.config and shipped.step == run.step
        assert _same_params(shipped.params, run.params)
    assert not _same_params(load_run("@tiny").params, load_run("@tiny", by="argmax").params)
    assert load_run(os.fsencode(run_dir)).step == load_run(run_dir).step  # a path given as bytes too
    record = json.loads((networks / "tiny" / published.RECORD).read_text())
    assert record["checkpoints"] == {"greedy": "best/6", "argmax": "best-argmax/4"}
    assert record["run_fingerprint"] == fingerprint(run_dir)
    assert record["command"] == "python train.py dqn ..." and record["trained"] == "here"

    boards = game.random_boards(jax.random.key(3), 12, game.GameConfig())
    np.testing.assert_array_equal(_play("policy:@tiny", boards), _play(f"policy:{run_dir}", boards))
    np.testing.assert_array_equal(_play("value:@tiny:2", boards), _play(f"value:{run_dir}:2", boards))
    played = registry.run_agent("policy:@tiny", boards[:2], key=jax.random.key(0), max_clicks=48)["played"]
    assert played["run"] == "@tiny" and played["checkpoint"] == published.PARAMS["argmax"]
    assert played["fingerprint"] == fingerprint(directory) == fingerprint("@tiny") != fingerprint(run_dir)
    by_folder = registry.run_agent(f"value:{directory}", boards[:2], key=jax.random.key(0), max_clicks=48)
    assert by_folder["played"]["run"] == directory  # named as given: a folder, not @NAME
    assert by_folder["played"]["checkpoint"] == published.PARAMS["greedy"]


def test_a_run_whose_selections_agree_is_published_with_one_set_of_parameters(whole_dqn_run, networks):
    published.publish(str(whole_dqn_run), "tiny", command="c", trained="t")
    assert sorted(os.listdir(networks / "tiny")) == ["config.json", "params.msgpack", "published.json"]
    assert load_run("@tiny", by="argmax").checkpoint == published.PARAMS["greedy"]
    assert load_run(networks / "tiny").step == load_run("@tiny").step  # a path, as solve(checkpoint=) takes
    assert load_run(whole_dqn_run).checkpoint == load_run(str(whole_dqn_run)).checkpoint


def test_a_run_with_no_selected_checkpoint_is_not_published(whole_dqn_run, networks, tmp_path):
    """load_run plays the newest checkpoint where a run selected none (stopped before its
    first evaluation, or its selections damaged): that was published as its selection."""
    run = tmp_path / "run"
    shutil.copytree(whole_dqn_run, run)
    for folder in ("best", "best-argmax"):
        shutil.rmtree(run / folder)
        (run / folder).mkdir()
    newest = load_run(str(run), newest=True).checkpoint
    with pytest.raises(ValueError, match=f"holds no selected checkpoint by greedy or argmax play .* so the newest, "
                                         f"{newest}, would be published"):
        published.publish(str(run), "tiny", command="c", trained="t")
    assert not os.path.exists(networks / "tiny")


def test_republished_parameters_change_the_fingerprint(whole_dqn_run, run_of_two_selections, networks):
    """A kept result (the leaderboard's rows) stands only while its network does."""
    published.publish(str(whole_dqn_run), "tiny", command="c", trained="t")
    before = fingerprint("@tiny")
    with pytest.raises(ValueError, match="exists: pass replace"):
        published.publish(str(run_of_two_selections), "tiny", command="c", trained="t")
    assert fingerprint("@tiny") == before
    published.publish(str(run_of_two_selections), "tiny", command="c", trained="t", replace=True)
    assert fingerprint("@tiny") != before and published.names() == ["tiny"]
    assert sorted(os.listdir(networks)) == ["tiny"]  # nothing left of the replaced one


def test_a_published_network_has_no_newest_checkpoint_to_play():
    """@NAME@newest played the selected checkpoint without a word, as if it were the newest."""
    with pytest.raises(RunError, match="is a published network: it keeps the checkpoints its run selected, "
                                       "no newest one"):
        load_run("@avi-8x6x5", newest=True)
    with pytest.raises(ValueError, match="no newest one"):
        registry.parse_agent_list("policy:@avi-8x6x5@newest")
    assert registry.parse_agent_list("policy:@avi-8x6x5") == ["policy:@avi-8x6x5"]


def test_a_replace_that_fails_half_way_keeps_the_replaced_network(tmp_path, monkeypatch):
    """The old network is renamed aside before the new one is renamed in: a failure (a full
    disk, Ctrl-C) between the two renames puts it back rather than leaving it hidden."""
    directory = str(tmp_path / "networks" / "tiny")
    published.write(directory, {"params.msgpack": b"old"}, {"command": "c"})
    renames = []

    def failing_second_rename(source, target):
        renames.append(source)
        if len(renames) == 2:
            raise OSError(28, "No space left on device")
        return real_rename(source, target)

    real_rename = os.rename
    monkeypatch.setattr(published.os, "rename", failing_second_rename)
    with pytest.raises(OSError, match="No space"):
        published.write(directory, {"params.msgpack": b"new"}, {"command": "c"}, replace=True)
    monkeypatch.undo()
    assert (tmp_path / "networks" / "tiny" / "params.msgpack").read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path / "networks")) == ["tiny"]  # no staging or aside folder left


def test_published_names_play_where_a_run_directory_does(whole_dqn_run, networks, tmp_path, monkeypatch, capsys):
    published.publish(str(whole_dqn_run), "tiny", command="c", trained="t")
    assert read_run_config("@tiny") == read_run_config(str(whole_dqn_run))
    # A folder named @tiny is reached as ./@tiny, another agent than the published @tiny.
    monkeypatch.chdir(tmp_path)
    shutil.copytree(whole_dqn_run, tmp_path / "@tiny")
    assert registry.agent_identity("policy:./@tiny") != registry.agent_identity("policy:@tiny")
    assert registry.split_run("./@tiny")[0] == "./@tiny"
    for name in ("w:8", "a,b", "x@newest", "sp ace", ".hidden", "-x", ""):
        with pytest.raises(ValueError, match="a published network's name is letters"):
            published.publish(str(whole_dqn_run), name, command="c", trained="t")
    for source in ("@tiny", "@elsewhere"):  # a name is never a run's, wherever its network is kept
        with pytest.raises(ValueError, match=f"{source} names a published network: publish the run .* ./{source}"):
            published.publish(source, "again", command="c", trained="t")
    with pytest.raises(ValueError, match="tiny is a published network already"):
        published.publish(str(networks / "tiny"), "again", command="c", trained="t")
    # The record of what trained it was left empty.
    with pytest.raises(ValueError, match="command must say what trained the run, got ' '"):
        published.publish(str(whole_dqn_run), "other", command=" ", trained="t")
    with pytest.raises(ValueError, match="trained must say what it ran on, got ''"):
        published.publish(str(whole_dqn_run), "other", command="c", trained="")
    for flag, said in (("", "argument --networks-dir: empty path"),
                       (str(networks / "tiny" / published.RECORD), "is a file, not a directory")):
        with pytest.raises(SystemExit) as stopped:
            published.main([str(whole_dqn_run), "other", "--command", "c", "--trained", "t", "--networks-dir", flag])
        assert stopped.value.code == 2 and said in capsys.readouterr().err


def test_a_damaged_or_unknown_published_network_is_refused_in_one_line(whole_dqn_run, networks):
    published.publish(str(whole_dqn_run), "tiny", command="c", trained="t")
    with pytest.raises(RunError, match=r"@nothing is not a published network; published: @tiny"):
        load_run("@nothing")
    with pytest.raises(ValueError, match=r"@nothing is not a published network"):
        registry.parse_agent("value:@nothing:8")

    def damaged(name: str, change) -> str:
        folder = networks / name
        shutil.copytree(networks / "tiny", folder)
        change(folder)
        with pytest.raises(RunError) as refused:
            load_run(f"@{name}")
        return str(refused.value)

    def flip_a_byte(path):
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 1
        path.write_bytes(bytes(data))

    def edit_record(change):
        def edit(folder):
            record = json.loads((folder / published.RECORD).read_text())
            change(record)
            (folder / published.RECORD).write_text(json.dumps(record))
        return edit

    assert re.search(r"params.msgpack is damaged: its sha256 is not the published one",
                     damaged("bit", lambda folder: flip_a_byte(folder / published.PARAMS["greedy"])))
    # The config's own sha256 is checked: an edit would play the parameters under other rules.
    assert "config.json is damaged" in damaged("rules", lambda folder: (folder / "config.json").write_text(
        (folder / "config.json").read_text().replace('"dust"', '"former"')))
    # A file gone, or a selection the network does not publish: one line, not an OSError or KeyError.
    assert re.search(r"params.msgpack cannot be read \(No such file or directory\); reinstall jaxdust",
                     damaged("gone", lambda folder: (folder / published.PARAMS["greedy"]).unlink()))
    assert "config.json cannot be read" in damaged("noconfig", lambda folder: (folder / "config.json").unlink())
    assert published.selection(str(networks / "tiny"), "argmax") == "greedy"  # one checkpoint selected by both
    with pytest.raises(ValueError, match="publishes no params-argmax.msgpack"):
        published.read_params(str(networks / "tiny"), None, "argmax")
    assert re.search(r"published.json is damaged \(Expecting", damaged(
        "json", lambda folder: (folder / published.RECORD).write_text("{oops")))
    for name, change in (("nosha", lambda record: record.pop("sha256")),
                         ("odd", lambda record: record["checkpoints"].update(argmax="params")),
                         ("list", lambda record: record.clear())):
        assert "published.json is damaged: it names no checkpoint" in damaged(name, edit_record(change)), name

    # Parameters of another shape than the config's network, their sha256s in order.
    published.publish(str(whole_dqn_run), "other", command="c", trained="t")
    config = json.loads((networks / "other" / "config.json").read_text())
    config["config"]["hidden"] = [16]  # WHOLE_DQN's network is 32 wide
    data = (json.dumps(config, indent=2, sort_keys=True) + "\n").encode()
    (networks / "other" / "config.json").write_bytes(data)
    edit_record(lambda record: record["sha256"].update({"config.json": hashlib.sha256(data).hexdigest()}))(
        networks / "other")
    with pytest.raises(RunError, match=r"parameters are not shaped as its config.json's network"):
        load_run("@other")


def test_train_py_takes_no_published_name_as_its_run_directory(tmp_path):
    result = subprocess.run([sys.executable, os.path.join(ROOT, "train.py"), "dqn", "--run-dir", "@avi-8x6x5"],
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2 and "@avi-8x6x5 would name a published network" in result.stderr
    assert "give a folder whose name starts with @ as ./@avi-8x6x5" in result.stderr
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("resume", [True, False])
def test_a_published_network_is_no_run_to_train(whole_dqn_run, networks, resume):
    directory = published.publish(str(whole_dqn_run), "tiny", command="c", trained="t")
    before = sorted(os.listdir(directory))
    result = subprocess.run([sys.executable, "train.py", "dqn", "--run-dir", directory, *(["--resume"] * resume)],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().endswith("holds a published network (its parameters alone), not a run to train or "
                                          "resume: use another --run-dir")
    assert sorted(os.listdir(directory)) == before  # no lock, no checkpoint left in it


def test_publishing_a_folder_that_holds_no_run_fails_in_one_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "jaxdust.learn.published", str(tmp_path / "none"), "x",
                             "--command", "c", "--trained", "t", "--networks-dir", str(tmp_path / "networks")],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].endswith("is not a train.py run directory (no such directory)")
    assert not os.path.exists(tmp_path / "networks")


@pytest.mark.parametrize("name", published.names())
def test_each_shipped_network_is_trained_and_plays_its_game(name):
    """Each network the package ships loads (its sha256 checked) and plays its own game as
    a trained network does, alone and greedily: 3 clicks a board better than the largest
    cluster first at least (on set 8x6x5 v1, 14.5 and 14.3 clicks against 20.8; on Former
    7x9x4, 17 and 16.5 against 23.7); on the dust game's set, better than the original
    supervised network's argmax (about 17) too."""
    record = published.record(os.path.join(published.NETWORKS_DIR, name))
    assert {"command", "trained", "checkpoints", "sha256"} <= set(record)
    size = load_run(f"@{name}").config.game
    dust = (size.width, size.height, size.colors, size.rules) == (8, 6, 5, "dust")
    boards = benchmark.load_set("8x6x5").boards[:100] if dust else game.random_boards(jax.random.key(0), 100, size)
    argmax, greedy, largest = (_play(agent, boards, size.rules).mean()
                               for agent in (f"policy:@{name}", f"value:@{name}", "largest"))
    assert max(argmax, greedy) < largest - 3, (argmax, greedy, largest)
    assert not dust or argmax < 16, argmax


def test_the_package_ships_a_network_for_the_dust_game_and_for_former():
    assert {"avi-8x6x5", "imitation-8x6x5", "imitation-8x6x5-8-epochs", "avi-former-7x9x4"} <= set(published.names())
