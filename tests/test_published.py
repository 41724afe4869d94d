"""Published networks (jaxdust.learn.published): a run's parameters shipped with the
package and played as ``@NAME`` wherever a run directory is taken."""

import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from jaxdust.core import game
from jaxdust.evaluation import benchmark, registry
from jaxdust.learn import published
from jaxdust.learn.runs import RunError, fingerprint, load_run

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


def test_a_published_run_plays_as_the_run_does(whole_dqn_run, networks):
    directory = published.publish(str(whole_dqn_run), "tiny", command="python train.py dqn ...", trained="here")
    assert published.names() == ["tiny"] and directory == str(networks / "tiny")
    assert oct(os.stat(directory).st_mode & 0o777) == oct(0o755)  # package data is everyone's to read
    run, shipped = load_run(str(whole_dqn_run), by="argmax"), load_run("@tiny")
    assert shipped.learner == run.learner and shipped.config == run.config and shipped.step == run.step
    assert jax.tree.structure(shipped.params) == jax.tree.structure(run.params)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(shipped.params), jax.tree.leaves(run.params)))
    record = json.loads((networks / "tiny" / published.RECORD).read_text())
    assert record["checkpoint"] == run.checkpoint and record["run_fingerprint"] == fingerprint(str(whole_dqn_run))
    assert record["command"] == "python train.py dqn ..." and record["trained"] == "here"

    boards = game.random_boards(jax.random.key(3), 12, game.GameConfig())
    np.testing.assert_array_equal(_play("policy:@tiny", boards), _play(f"policy:{whole_dqn_run}", boards))
    np.testing.assert_array_equal(_play("value:@tiny:2", boards), _play(f"value:{whole_dqn_run}:2", boards))
    played = registry.run_agent("policy:@tiny", boards[:2], key=jax.random.key(0), max_clicks=48)["played"]
    assert played["run"] == "@tiny" and played["checkpoint"] == published.PARAMS
    assert played["fingerprint"] == fingerprint(directory) != fingerprint(str(whole_dqn_run))
    by_folder = registry.run_agent(f"value:{directory}@newest", boards[:2], key=jax.random.key(0), max_clicks=48)
    assert by_folder["played"]["run"] == directory  # named as given: a folder, not @NAME


def test_a_damaged_or_unknown_published_network_is_refused_in_one_line(whole_dqn_run, networks):
    published.publish(str(whole_dqn_run), "tiny", command="c", trained="t")
    with pytest.raises(RunError, match=r"@nothing is not a published network; published: @tiny"):
        load_run("@nothing")
    with pytest.raises(ValueError, match=r"@nothing is not a published network"):
        registry.parse_agent("value:@nothing:8")
    params = networks / "tiny" / published.PARAMS
    data = bytearray(params.read_bytes())
    data[len(data) // 2] ^= 1
    params.write_bytes(bytes(data))
    with pytest.raises(RunError, match=r"params.msgpack is damaged: its sha256 is not the published"):
        load_run("@tiny")
    config = json.loads((networks / "tiny" / "config.json").read_text())
    config["config"]["hidden"] = [16]  # WHOLE_DQN's network is 32 wide
    published.publish(str(whole_dqn_run), "other", command="c", trained="t")
    (networks / "other" / "config.json").write_text(json.dumps(config))
    with pytest.raises(RunError, match=r"parameters are not shaped as its config.json's network"):
        load_run("@other")
    with pytest.raises(ValueError, match="a plain folder name"):
        published.publish(str(whole_dqn_run), "@tiny", command="c", trained="t")


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
    assert {"command", "trained", "checkpoint", "sha256"} <= set(record)
    size = load_run(f"@{name}").config.game
    dust = (size.width, size.height, size.colors, size.rules) == (8, 6, 5, "dust")
    boards = benchmark.load_set("8x6x5").boards[:100] if dust else game.random_boards(jax.random.key(0), 100, size)
    argmax, greedy, largest = (_play(agent, boards, size.rules).mean()
                               for agent in (f"policy:@{name}", f"value:@{name}", "largest"))
    assert max(argmax, greedy) < largest - 3, (argmax, greedy, largest)
    assert not dust or argmax < 16, argmax


def test_the_package_ships_a_network_for_the_dust_game_and_for_former():
    assert {"avi-8x6x5", "imitation-8x6x5", "avi-former-7x9x4"} <= set(published.names())
