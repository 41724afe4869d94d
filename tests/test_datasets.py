"""Data sets: labels agree with the rules and the solver, round trips, dedupe, resume."""

import dataclasses
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import types
import zipfile
from pathlib import Path

import numpy as np
import pytest

from jaxdust.core import files
from jaxdust.core.game import GameConfig
from jaxdust.learn import datasets, learners, runs
from jaxdust.learn.imitation import ImitationConfig
from jaxdust.learn.datasets import DatasetConfig, load_dataset, make_dataset
from jaxdust.solver.api import solve
from jaxdust.core import reference as ref
from tests.conftest import run_log

SMALL = DatasetConfig(GameConfig(6, 4, 4), boards=24, seed=7, node_limit=20_000, shard_size=5)


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("small"))
    make_dataset(directory, SMALL, jobs=1, progress=False)
    return directory, load_dataset(directory)


def test_samples_follow_the_rules_and_the_labels(small_set):
    _, data = small_set
    assert data.boards.dtype == np.int8 and data.boards.shape[1:] == (6, 4)
    stored = {datasets.canonical_key(board, mirror=True): row for row, board in enumerate(data.boards)}
    for index in np.unique(data.board_id):
        rows = np.flatnonzero(data.board_id == index)
        rows = rows[np.argsort(data.step[rows])]
        board = datasets.source_board(SMALL, int(index))
        for row in rows:
            if data.step[row] == 0:
                np.testing.assert_array_equal(data.boards[row], board)
            x, y = np.argwhere(data.clicked[row])[0]
            np.testing.assert_array_equal(data.clicked[row], ref.cluster_mask(data.boards[row], x, y))
            after, _ = ref.click(data.boards[row], x, y)
            later = rows[data.step[rows] == data.step[row] + 1]
            if later.size:
                np.testing.assert_array_equal(data.boards[later[0]], after)
                assert data.cost_to_go[later[0]] == data.cost_to_go[row] - 1
            elif data.cost_to_go[row] == 1:
                assert ref.is_done(after)
            else:  # the next position was kept once, under an earlier board
                earlier = stored[datasets.canonical_key(after, mirror=True)]
                assert data.board_id[earlier] < index


def test_proven_labels_are_the_optimum(small_set):
    _, data = small_set
    assert data.proven.mean() > 0.5
    rng = np.random.default_rng(0)
    for row in rng.choice(np.flatnonzero(data.proven), size=15, replace=False):
        assert solve(data.boards[row], colors=4).length == data.cost_to_go[row]
    for row in np.flatnonzero(~data.proven)[:5]:
        assert solve(data.boards[row], colors=4).length <= data.cost_to_go[row]


def test_labels_under_a_tight_node_limit_are_never_below_the_optimum_nor_called_proven_above_it(tmp_path):
    """SMALL proves every board, so the labels the searches' limits leave unproven (and the
    tails re-searched from them) were never tested."""
    config = DatasetConfig(GameConfig(6, 5, 5), boards=12, seed=7, node_limit=500, shard_size=5)
    make_dataset(str(tmp_path), config, jobs=1, progress=False)
    data = load_dataset(str(tmp_path))
    optimum = np.array([solve(board, colors=5).length for board in data.boards])
    assert (data.cost_to_go >= optimum).all()
    np.testing.assert_array_equal(data.cost_to_go[data.proven], optimum[data.proven])
    above = data.cost_to_go > optimum
    assert above.any() and (~data.proven).sum() > above.sum()  # both kinds of unproven label are here
    # Each later position is solved again: a tail proven once stays proven to the end, and
    # tails of lines the first search left unproven are proven by their own searches.
    records = [json.loads(line) for line in open(os.path.join(tmp_path, "journal.jsonl"))]
    assert all(proven[step:] == [True] * (len(proven) - step)
               for proven in (record["proven"] for record in records) for step in range(len(proven)) if proven[step])
    assert any(not record["proven"][0] and any(record["proven"]) for record in records)


def test_positions_are_unique_up_to_the_mirror(small_set):
    _, data = small_set
    keys = [datasets.canonical_key(board, mirror=True) for board in data.boards]
    assert len(set(keys)) == len(keys)
    # Late positions repeat across boards, so the filter did drop some.
    total = sum(len(json.loads(line)["clicks"])
                for line in open(os.path.join(small_set[0], "journal.jsonl")))
    assert len(keys) < total


def test_settings_must_match_an_existing_run(small_set, tmp_path):
    with pytest.raises(ValueError, match=r"made with other settings \(seed 7, not 8\)"):
        make_dataset(small_set[0], DatasetConfig(**{**SMALL.__dict__, "seed": 8}), progress=False)
    # A journal whose manifest is gone holds boards labelled under unknown settings: its
    # clicks replayed on another seed's boards would be labels that break the rules.
    shutil.copy(os.path.join(small_set[0], "journal.jsonl"), tmp_path)
    with pytest.raises(ValueError, match="journal.jsonl but no manifest.json"):
        make_dataset(str(tmp_path), DatasetConfig(**{**SMALL.__dict__, "seed": 8}), progress=False)
    # Another command's output folder: the set would be written in among its files.
    (tmp_path / "evaluated").mkdir()
    (tmp_path / "evaluated" / "summary.json").write_text("{}")
    with pytest.raises(ValueError, match=r"evaluated holds other files \(summary.json\) and no data set"):
        make_dataset(str(tmp_path / "evaluated"), SMALL, progress=False)
    assert os.listdir(tmp_path / "evaluated") == ["summary.json"]  # left as it was
    for name in "abcd":
        (tmp_path / "evaluated" / name).write_text("")
    with pytest.raises(ValueError, match=r"evaluated holds other files \(a, b, c, \.\.\.\) and no data set"):
        make_dataset(str(tmp_path / "evaluated"), SMALL, progress=False)
    (tmp_path / "a-file").write_text("")  # FileExistsError, from taking the lock
    with pytest.raises(ValueError, match="a-file is a file, not a folder"):
        make_dataset(str(tmp_path / "a-file"), SMALL, progress=False)
    (tmp_path / "locked").mkdir()  # a first start killed after taking its lock: the set may start there
    (tmp_path / "locked" / files.LOCK_FILE).write_text("")
    datasets._require_no_other_files(str(tmp_path / "locked"))
    # ... or killed while writing its first manifest: its own temporary file is no other file
    (tmp_path / "locked" / f"{files.TEMPORARY_PREFIX}abc123manifest.json").write_text("{")
    datasets._require_no_other_files(str(tmp_path / "locked"))


def test_the_data_set_command_goes_on_with_a_set_it_did_not_make(small_set, tmp_path, capsys):
    """A set made through the API with a search limit its labeller does not use (which the
    command cannot give) is the same set: the command it names goes on with it. Settings
    this version refuses are one line, not a traceback; a path like a flag stays a path."""
    directory = tmp_path / "api"
    shutil.copytree(small_set[0], directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["config"]["beam_width"] = 64  # unused by the exact labeller
    (directory / "manifest.json").write_text(json.dumps(manifest))
    command = datasets.dataset_command(str(directory), datasets.dataset_config(str(directory)))
    assert "--beam-width" not in command and "--labeller exact --node-limit 20000" in command
    assert datasets.main([*shlex.split(command)[3:], "--jobs", "1"]) == 0
    with pytest.raises(SystemExit):  # other settings that matter still do
        datasets.main([*shlex.split(command)[3:], "--seed", "8"])
    assert "(--seed 7, not 8): go on with it by " in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the beam's flags were named as "--node-limit 20000, not 300000"
        datasets.main([*shlex.split(command)[3:7], "--size", "6x4x4", "--seed", "7", "--labeller", "beam",
                       "--shard-size", "5"])
    assert "(--labeller exact, not beam): go on with it by " in capsys.readouterr().err
    manifest["config"]["game"]["rules"] = "samegame"
    (directory / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(SystemExit):
        datasets.main([*shlex.split(command)[3:], "--jobs", "1"])
    err = capsys.readouterr().err
    assert ("manifest.json holds settings this version refuses: game samegame:6x4x4: data sets are labelled for "
            "fewest clicks") in err
    assert "Traceback" not in err
    assert shlex.split(datasets.dataset_command("-odd dir", SMALL))[3] == "--out=-odd dir"


def test_the_journal_reaches_the_disk_before_each_shard_not_after_each_board(tmp_path, monkeypatch):
    """An fsync a board bounded how fast many processes could label; a shard's boards must
    still be on the disk in the journal before the shard (a resume skips a shard's boards)."""
    config = DatasetConfig(GameConfig(4, 3, 3), boards=40, labeller="beam", beam_width=2, shard_size=10)
    directory = tmp_path / "set"
    journal_synced, shards, events = [], [], []
    fsync, write_shard = os.fsync, files.atomic_write_bytes

    def journal_size():
        return os.path.getsize(directory / "journal.jsonl")

    def watched_fsync(fd):
        journal = directory / "journal.jsonl"
        if journal.exists() and os.fstat(fd).st_ino == os.stat(journal).st_ino:
            journal_synced.append(journal_size())
            events.append("journal synced")
        fsync(fd)

    def watched_write(path, data):
        if path.endswith(".npz"):
            shards.append(journal_size())
            events.append("shard")
        write_shard(path, data)

    monkeypatch.setattr(os, "fsync", watched_fsync)
    monkeypatch.setattr(files, "atomic_write_bytes", watched_write)
    monkeypatch.setattr(datasets, "SYNC_SECONDS", 1e9)
    make_dataset(str(directory), config, progress=False)
    assert len(shards) == 4 and journal_synced == [*shards, shards[-1]]  # before each shard, and at the end
    # A resume whose journal holds the boards of shards not written yet (a killed run's
    # lines, maybe still only in the system's memory) syncs it before it writes them.
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["shards"] = manifest["shards"][:2]
    (directory / "manifest.json").write_text(json.dumps(manifest))
    events.clear()
    make_dataset(str(directory), config, progress=False)
    assert events[:2] == ["journal synced", "shard"] and events.count("shard") == 2


def test_a_later_journal_line_of_a_board_replaces_an_earlier_one_that_does_not_replay(tmp_path):
    config = DatasetConfig(GameConfig(4, 3, 3), boards=6, labeller="beam", beam_width=2, shard_size=3)
    whole, doubled = tmp_path / "whole", tmp_path / "doubled"
    make_dataset(str(whole), config, progress=False)
    shutil.copytree(whole, doubled)
    for name in ("shard-00001.npz", "manifest.json"):  # the second shard still to write
        os.remove(doubled / name)
    manifest = json.loads((whole / "manifest.json").read_text())
    manifest["shards"] = manifest["shards"][:1]
    manifest["sha256"] = {name: manifest["sha256"][name] for name in manifest["shards"]}
    (doubled / "manifest.json").write_text(json.dumps(manifest))
    lines = (whole / "journal.jsonl").read_text().splitlines(keepends=True)
    broken = json.loads(lines[4])
    broken["clicks"], broken["proven"] = broken["clicks"][:-1], broken["proven"][:-1]  # stops short of clearing
    (doubled / "journal.jsonl").write_text("".join([*lines[:4], json.dumps(broken) + "\n", *lines[4:]]))
    make_dataset(str(doubled), config, progress=False)  # refused as "journal.jsonl:5 does not replay"
    assert (doubled / "shard-00001.npz").read_bytes() == (whole / "shard-00001.npz").read_bytes()


def test_a_resume_and_the_summary_hold_no_journal_and_no_samples(tmp_path):
    """At the 10^7 boards a set may have, the journal as records took ~20 GB on a resume and
    the closing line's samples ~13 GB: both now read a line or a shard at a time."""
    import tracemalloc
    config = DatasetConfig(GameConfig(6, 4, 3), boards=2000, labeller="beam", beam_width=2, shard_size=100)
    directory = str(tmp_path / "set")
    make_dataset(directory, config, progress=False)
    tracemalloc.start()
    try:
        make_dataset(directory, config, progress=False)  # finished: reads it all, labels nothing
        resumed = tracemalloc.get_traced_memory()[1] / config.boards
        tracemalloc.reset_peak()
        line = datasets.summary(directory, config)
        summed = tracemalloc.get_traced_memory()[1] / config.boards
    finally:
        tracemalloc.stop()
    assert resumed < 400 and summed < 400, (resumed, summed)  # were 1,300 and 1,400 bytes a board
    data = load_dataset(directory)
    lengths = [len(record["clicks"]) for record in files.recover_json_lines(Path(directory) / "journal.jsonl")]
    assert line == (f"{directory}: {len(data.boards)} samples from 2000 boards, {data.proven.mean():.1%} with proven "
                    f"cost-to-go, mean solution {np.mean(lengths):.2f} clicks")
    os.remove(Path(directory) / "journal.jsonl")  # lost: counted from each board's first sample
    _, first = np.unique(data.board_id, return_index=True)
    assert datasets.summary(directory, config).endswith(
        f"mean solution {np.mean(data.step[first] + data.cost_to_go[first].astype(int)):.2f} clicks"
        + ("" if len(first) == 2000 else f" (over the {len(first)} boards with samples)"))


def test_the_command_takes_the_seed_train_py_gives_its_largest_seeds_set(tmp_path):
    """``train.py --seed 4294967295`` seeds its run's set with 2^32: the command a hint names
    for that set must go on with it."""
    config = DatasetConfig(GameConfig(4, 3, 3), boards=2, seed=2**32, labeller="beam", beam_width=4, shard_size=1)
    directory = str(tmp_path / "set")
    make_dataset(directory, dataclasses.replace(config, boards=1), jobs=1, progress=False)
    manifest = json.loads((tmp_path / "set" / "manifest.json").read_text())
    manifest["config"]["boards"] = 2  # as if stopped after its first board
    (tmp_path / "set" / "manifest.json").write_text(json.dumps(manifest))
    assert datasets.main([*shlex.split(datasets.dataset_command(directory, config))[3:], "--jobs", "1"]) == 0
    assert len(np.unique(load_dataset(directory).board_id)) == 2
    with pytest.raises(SystemExit):
        datasets.main(["--out", directory, "--seed", "-1"])


def test_one_process_at_a_time_makes_a_data_set(small_set, tmp_path):
    """A second maker would delete the first one's temporary files (and journal its boards
    twice): it is refused while another holds the folder's lock, and goes on after."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from jaxdust.core import files; "
                               f"lock = files.lock_directory({small_set[0]!r}); print(lock is not None, flush=True); "
                               "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "True"
        with pytest.raises(ValueError, match=f"another process is making a data set in {small_set[0]}"):
            make_dataset(small_set[0], SMALL, progress=False)
    finally:
        holder.communicate("")
    assert make_dataset(small_set[0], SMALL, progress=False)["shards"]  # finished already: nothing to do


def test_a_damaged_shard_is_named_and_made_again_from_the_journal(tmp_path, small_set, capsys):
    directory = tmp_path / "set"
    shutil.copytree(small_set[0], directory)
    with open(directory / "shard-00002.npz", "r+b") as handle:
        handle.truncate(100)
    with pytest.raises(ValueError, match="shard-00002.npz cannot be read .*to make it again"):
        load_dataset(str(directory))
    (directory / "shard-00004.npz").unlink()
    make_dataset(str(directory), SMALL, progress=False)
    assert "shard-00002.npz cannot be read" in capsys.readouterr().err
    assert directory_bytes(directory) == directory_bytes(small_set[0])


def test_a_shard_with_bytes_overwritten_in_its_compressed_data_is_named(tmp_path, small_set):
    """Damage inside the deflated data fails in zlib, whose error is no OSError: it went
    through as a traceback, where the resume's warning makes the shard again."""
    import zipfile

    directory = tmp_path / "set"
    shutil.copytree(small_set[0], directory)
    path = directory / "shard-00001.npz"
    raw = bytearray(path.read_bytes())
    member = zipfile.ZipFile(path).getinfo("boards.npy")
    header = member.header_offset  # a local header: 30 bytes, then its name and its extra field
    start = header + 30 + int.from_bytes(raw[header + 26:header + 28], "little") + \
        int.from_bytes(raw[header + 28:header + 30], "little")
    raw[start:start + 16] = bytes(16)
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"shard-00001.npz cannot be read \(error: .*to make it again"):
        load_dataset(str(directory))


def test_a_shard_of_other_bytes_than_its_manifest_records_is_refused_and_made_again(tmp_path, small_set, capsys):
    """A readable shard of the right shape from another place (another set's, or an older
    make of this one) loaded as this set's data without a word; its sha256 is recorded."""
    directory = tmp_path / "set"
    shutil.copytree(small_set[0], directory)
    digests = json.loads((directory / "manifest.json").read_text())["sha256"]
    assert sorted(digests) == [f"shard-{i:05d}.npz" for i in range(5)]
    shutil.copy(directory / "shard-00001.npz", directory / "shard-00003.npz")  # loads fine, other boards
    with pytest.raises(ValueError, match=r"shard-00003.npz is not the one its manifest lists \(its sha256 differs"
                                         r".*\): run python -m jaxdust.learn.datasets .* to make it again"):
        load_dataset(str(directory))
    make_dataset(str(directory), SMALL, progress=False)
    assert "shard-00003.npz is not the one its manifest lists" in capsys.readouterr().err
    assert directory_bytes(directory) == directory_bytes(small_set[0])
    old = json.loads((directory / "manifest.json").read_text())
    del old["sha256"]  # as sets made before 0.2.46 are: read as they stand ...
    (directory / "manifest.json").write_text(json.dumps(old | {"shards": old["shards"][:4]}))
    assert len(load_dataset(str(directory)).boards) < len(small_set[1].boards)
    (directory / "shard-00004.npz").unlink()
    make_dataset(str(directory), SMALL, progress=False)  # ... and resumed, hashed as a new set is
    assert directory_bytes(directory) == directory_bytes(small_set[0])
    # With no hash to go on, a shard from another place of the set, or of another size, was
    # taken in (boards twice, out of order) or failed in numpy naming no file; the resume
    # then recorded the wrong shard's hash.
    other = tmp_path / "other"
    make_dataset(str(other), dataclasses.replace(SMALL, game=GameConfig(5, 4, 3)), progress=False)
    for source, words in ((directory / "shard-00001.npz", "its board ids are not boards 15 to 19 in order"),
                          (other / "shard-00003.npz", r"its boards are of shape \(5, 4\), not 6x4")):
        (directory / "manifest.json").write_text(json.dumps(old))
        shutil.copy(source, directory / "shard-00003.npz")
        with pytest.raises(ValueError, match=f"shard-00003.npz is not this set's shard 3: {words}"):
            load_dataset(str(directory))
        make_dataset(str(directory), SMALL, progress=False)
        assert directory_bytes(directory) == directory_bytes(small_set[0])
    shard = {field: np.asarray(values) for field, values in load_dataset(str(directory))._asdict().items()}
    assert datasets._shard_problem({name: values[:3] for name, values in shard.items()}, SMALL, 0) is None
    for bad in ({"step": np.int16(0)}, {"proven": shard["proven"][:2]}):  # a hand-made file
        assert datasets._shard_problem({name: values[:3] for name, values in shard.items()} | bad, SMALL, 0) == \
            "its arrays are not those of one sample a row"


def _npy_claiming(shape, dtype="<u8") -> bytes:
    """A .npy member whose header claims ``shape`` and holds 64 bytes."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (dtype, shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 64


@pytest.mark.parametrize("edit, words", [
    (lambda shard: shard | {"cost_to_go": -shard["cost_to_go"]}, r"its clicks left \(cost_to_go\) are not all 1 or more"),
    (lambda shard: shard | {"clicked": np.zeros_like(shard["clicked"])}, "its clicks are not each on cells"),
    (lambda shard: shard | {"boards": shard["boards"].astype(np.float32)}, "its arrays are not of the types a data set holds"),
    (lambda shard: shard | {"boards": np.where(shard["boards"] > 0, 9, 0).astype(np.int8)},
     r"its boards hold colours outside 0\.\.4"),
    (None, r"cannot be read \(ValueError: its arrays claim 17,592,186,044,416 bytes"),
])
def test_a_shard_edited_with_its_sha256_is_refused_not_trained_on(tmp_path, small_set, edit, words):
    """A shard's sha256 sits beside it in the manifest: one edited with it, labels that no
    search made (negative clicks left, no click) trained a model on them without a word, and
    a header claiming terabytes ended in numpy's MemoryError."""
    directory = tmp_path / "set"
    shutil.copytree(small_set[0], directory)
    path = directory / "shard-00000.npz"
    if edit is None:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("boards.npy", _npy_claiming((2**41,)))
        path.write_bytes(buffer.getvalue())
    else:
        with np.load(path) as arrays:
            shard = edit({field: arrays[field] for field in arrays.files})
        np.savez_compressed(path, **shard)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["sha256"]["shard-00000.npz"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (directory / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=f"shard-00000.npz (is not this set's shard 0: )?{words}.* to make it again"):
        load_dataset(str(directory))


def test_a_manifest_of_another_format_or_listing_foreign_shards_is_refused(tmp_path, small_set):
    """A manifest's format was never read (a set of a future format loaded as this one), and
    its shard names were joined to the directory as they stood: a hand-edited
    ``../other/shard-00000.npz`` without a recorded sha256 was read, and hashed, as this set's."""
    directory = tmp_path / "set"
    shutil.copytree(small_set[0], directory)
    saved = json.loads((directory / "manifest.json").read_text())
    (directory / "manifest.json").write_text(json.dumps(saved | {"format": 99}))
    for read in (load_dataset, lambda path: make_dataset(path, SMALL, progress=False)):
        with pytest.raises(ValueError, match=r"manifest.json is of data-set format 99; this jaxdust reads format 1$"):
            read(str(directory))
    foreign = f"../{Path(small_set[0]).name}/shard-00000.npz"
    shards = [foreign, *saved["shards"][1:]]
    digests = {name: digest for name, digest in saved["sha256"].items() if name != "shard-00000.npz"}
    (directory / "manifest.json").write_text(json.dumps(saved | {"shards": shards, "sha256": digests}))
    for read in (load_dataset, lambda path: make_dataset(path, SMALL, progress=False)):
        with pytest.raises(ValueError, match=r"lists shard '\.\./.*shard-00000.npz' at place 0, where "
                                             r"'shard-00000.npz' belongs; was it edited by hand\?$"):
            read(str(directory))
    assert json.loads((directory / "manifest.json").read_text())["shards"][0] == foreign  # refused: unchanged


def test_a_journal_record_that_does_not_replay_is_named_not_trusted(tmp_path, small_set):
    """A resumed set replays the journal's records of the shards it has still to write
    before they become samples: a line edited by hand (clicks that stop early, a click on
    an empty cell, fields of other types, no index) was taken as it stood, and its wrong
    cost-to-go labels written into the shards. Fields are checked on every record. Nothing
    is changed by the refusal, and a manifest saved with a byte-order mark still reads."""
    journal = [json.loads(line) for line in (Path(small_set[0]) / "journal.jsonl").read_text().splitlines()]
    line = next(number for number, record in enumerate(journal) if record["index"] == 20)  # in the last shard
    last = journal[line]
    edits = {"stop before the board is cleared": last | {"clicks": last["clicks"][:-1], "proven": last["proven"][:-1]},
             "go on after the board is cleared": last | {"clicks": last["clicks"] + [[0, 3]],
                                                         "proven": last["proven"] + [True]},
             "is off the 6x4 board": last | {"clicks": [[6, 0]] + last["clicks"][1:]},
             "its index '20' is not a board of the set": last | {"index": "20"},
             "its index None is not a board of the set": {k: v for k, v in last.items() if k != "index"},
             "are not (x, y) pairs and booleans": last | {"proven": [float("nan")] * len(last["proven"])}}
    for words, record in edits.items():
        directory = tmp_path / words.replace(" ", "-").replace("'", "")
        shutil.copytree(small_set[0], directory)
        manifest = json.loads((directory / "manifest.json").read_text())
        (directory / "manifest.json").write_text(json.dumps(manifest | {"shards": manifest["shards"][:4]}))
        (directory / "shard-00004.npz").unlink()
        (directory / "journal.jsonl").write_text("".join(json.dumps(r) + "\n"
                                                         for r in journal[:line] + [record] + journal[line + 1:]))
        before = directory_bytes(directory)
        with pytest.raises(ValueError, match=re.escape(f"journal.jsonl:{line + 1} does not replay: ")
                                             + f".*{re.escape(words)}.*was it edited by hand\\? delete that line"):
            make_dataset(str(directory), SMALL, progress=False)
        assert directory_bytes(directory) == before, words
    directory = tmp_path / "bom"
    shutil.copytree(small_set[0], directory)
    manifest = directory / "manifest.json"
    manifest.write_bytes(b"\xef\xbb\xbf" + manifest.read_bytes())
    assert len(load_dataset(str(directory)).boards) == len(small_set[1].boards)


def test_an_unfinished_set_is_refused_where_finished_ones_are_needed(tmp_path, small_set):
    directory = tmp_path / "part"
    shutil.copytree(small_set[0], directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["shards"] = manifest["shards"][:3]
    (directory / "manifest.json").write_text(json.dumps(manifest))
    assert datasets.shards_done(str(directory)) == (3, 5)
    assert len(load_dataset(str(directory)).boards) < len(small_set[1].boards)  # what is there, if asked
    with pytest.raises(ValueError, match=r"is not finished \(3 of 5 shards\)") as refused:
        load_dataset(str(directory), finished=True)
    assert str(refused.value).endswith(f"run {datasets.dataset_command(str(directory), SMALL)} to finish it")
    args = types.SimpleNamespace(data=str(directory))
    with pytest.raises(ValueError, match=r"is not finished \(3 of 5 shards\)"):
        learners.get("imitation").check(ImitationConfig(game=SMALL.game), args)
    maker = files.lock_directory(directory)  # as a process still making it holds it
    try:  # "run <the command> to finish it" would start a second writer
        with pytest.raises(ValueError, match=r"\(3 of 5 shards\) and another process is making it \(it holds "
                                             r"\.lock\): wait for it to end$"):
            learners.get("imitation").check(ImitationConfig(game=SMALL.game), args)
    finally:
        maker.release()
    with open(os.path.join(small_set[0], "manifest.json")) as whole:
        manifest["shards"] = json.load(whole)["shards"][:4]  # only the last shard missing
    (directory / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"is not finished \(4 of 5 shards\)"):
        load_dataset(str(directory), finished=True)
    (directory / "manifest.json").write_text("[]")
    with pytest.raises(ValueError, match="is not a data set's manifest"):
        load_dataset(str(directory))


def test_settings_a_labeller_does_not_use_and_sizes_past_memory_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        datasets.main(["--out", str(tmp_path / "x"), "--beam-width", "8"])
    assert "--beam-width is not used by the exact labeller" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        datasets.main(["--out", str(tmp_path / "x"), "--labeller", "beam", "--node-limit", "8"])
    assert "--node-limit is not used by the beam labeller" in capsys.readouterr().err
    with pytest.raises(ValueError, match="boards must be at most 10,000,000"):
        DatasetConfig(boards=10**9)
    with pytest.raises(ValueError, match="beam_width must be at most 65,536"):
        DatasetConfig(beam_width=10**12)


def test_killed_and_resumed_run_equals_an_uninterrupted_one(tmp_path, small_set):
    config = SMALL
    directory = tmp_path / "killed"
    command = [sys.executable, "-m", "jaxdust.learn.datasets", "--out", str(directory), "--boards", str(config.boards),
               "--size", "6x4x4", "--seed", str(config.seed), "--node-limit", str(config.node_limit),
               "--shard-size", str(config.shard_size), "--jobs", "1"]
    # The first run kills itself (SIGKILL, nothing cleaned up) as it starts board 9: polling
    # the journal from here raced the run, which can finish all 24 boards between two polls.
    killer = ("import os, signal, sys; from jaxdust.learn import datasets as d; label = d.label_board; "
              "d.label_board = lambda c, i: os.kill(os.getpid(), signal.SIGKILL) if i == 9 else label(c, i); "
              "sys.exit(d.main(sys.argv[1:]))")
    killed = subprocess.run([sys.executable, "-c", killer, *command[3:]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    assert killed.returncode == -signal.SIGKILL
    journal = directory / "journal.jsonl"
    assert journal.read_text().count("\n") == 9  # it really stopped part way
    assert sorted(os.listdir(directory)) == [".lock", "journal.jsonl", "manifest.json", "shard-00000.npz"]
    with open(journal, "a") as handle:
        handle.write('{"index": 99, "cli')  # as if killed in the middle of a line
    (directory / ".tmp-abc123shard-00001.npz").write_bytes(b"PK")  # as if killed while writing a shard
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert directory_bytes(directory) == directory_bytes(small_set[0])


def test_the_data_set_commands_mean_solution_holds_without_its_journal(tmp_path, small_set, capsys):
    """The closing line's mean came from the journal alone: a set whose journal was lost
    (its shards whole) printed nan, and one part-rebuilt the mean of a part."""
    config, directory = SMALL, tmp_path / "set"
    shutil.copytree(small_set[0], directory)
    command = ["--out", str(directory), "--boards", str(config.boards), "--size", "6x4x4", "--seed", str(config.seed),
               "--node-limit", str(config.node_limit), "--shard-size", str(config.shard_size), "--jobs", "1"]
    datasets.main(command)
    whole = capsys.readouterr().out
    journal = [json.loads(line) for line in (directory / "journal.jsonl").read_text().splitlines()]
    assert len(journal) == config.boards and f"mean solution {np.mean([len(r['clicks']) for r in journal]):.2f}" in whole
    (directory / "journal.jsonl").unlink()
    datasets.main(command)
    assert capsys.readouterr().out.splitlines()[-1] == whole.splitlines()[-1]


def test_a_dead_labelling_worker_stops_the_command_with_one_line_and_the_rerun_goes_on(tmp_path, small_set, capsys,
                                                                                        monkeypatch):
    from jaxdust.core.processes import WorkerDied

    def first_then_dies(function, items, jobs):
        items = list(items)
        yield function(items[0])
        raise WorkerDied("a worker process died (killed, or out of memory?)")

    config, directory = SMALL, tmp_path / "set"
    command = ["--out", str(directory), "--boards", str(config.boards), "--size", "6x4x4", "--seed", str(config.seed),
               "--node-limit", str(config.node_limit), "--shard-size", str(config.shard_size), "--jobs", "2"]
    monkeypatch.setattr(datasets, "ordered_map", first_then_dies)
    assert datasets.main(command) == 1
    [line] = capsys.readouterr().err.strip().splitlines()[-1:]
    assert line.endswith("a worker process died (killed, or out of memory?); the same command goes on from the "
                         "boards labelled so far") and line.startswith("python -m jaxdust.learn.datasets: error:")
    assert len((directory / "journal.jsonl").read_text().splitlines()) == 1
    monkeypatch.undo()
    assert datasets.main(command) == 0
    shards = [{name: data for name, data in directory_bytes(d).items() if name.startswith("shard")}
              for d in (directory, small_set[0])]
    assert len(shards[0]) == 5 and shards[0] == shards[1]


def directory_bytes(directory) -> dict:
    return {name: open(os.path.join(directory, name), "rb").read() for name in sorted(os.listdir(directory))}


def test_data_sets_are_byte_identical_whatever_the_number_of_processes(tmp_path, small_set):
    make_dataset(str(tmp_path), SMALL, jobs=2, progress=False)
    made = directory_bytes(tmp_path)
    assert sorted(made) == [".lock", "journal.jsonl", "manifest.json"] + [f"shard-{i:05d}.npz" for i in range(5)]
    assert made == directory_bytes(small_set[0])


def test_a_former_data_set_follows_the_former_rules_and_its_optima(tmp_path, capsys):
    """The same labellers under ``former`` (gravity only): every sample is the reference's
    former click of the one before, proven labels are former's optimum, and the rules
    matter (some click's position differs from the dust game's)."""
    from jaxdust.learn.cli import main as train_main

    config = DatasetConfig(GameConfig(6, 4, 3, "former"), boards=10, seed=3, node_limit=20_000, shard_size=5)
    make_dataset(str(tmp_path / "former"), config, jobs=1, progress=False)
    assert datasets.dataset_config(str(tmp_path / "former")) == config
    data = load_dataset(str(tmp_path / "former"))
    assert follows_the_former_rules(data, config)  # and some click there is not the dust game's
    assert data.proven.mean() > 0.5
    for row in np.flatnonzero(data.proven)[:12]:
        assert solve(data.boards[row], colors=3, rules="former").length == data.cost_to_go[row]
    beam = DatasetConfig(GameConfig(6, 4, 3, "former"), boards=6, seed=3, labeller="beam", beam_width=4, shard_size=6)
    make_dataset(str(tmp_path / "beam"), beam, jobs=1, progress=False)
    follows_the_former_rules(load_dataset(str(tmp_path / "beam")), beam)

    # A learner refuses a data set made under other rules, naming both, before it writes
    # the run directory: the corrected command then needs no --resume.
    with pytest.raises(SystemExit):
        train_main(["imitation", "--size", "6x4x3", "--data", str(tmp_path / "former"), "--run-dir", str(tmp_path / "r")])
    assert ("6x4x3 boards under the former rules, not 6x4x3 under dust: train on it with --size former:6x4x3"
            in capsys.readouterr().err)
    assert not (tmp_path / "r").exists()
    summary = train_main(["imitation", "--size", "former:6x4x3", "--data", str(tmp_path / "former"), "--run-dir",
                          str(tmp_path / "r"), "--epochs", "1", "--batch-size", "8", "--hidden", "8", "--eval-boards", "2",
                          "--cell-rounds", "1", "--cell-width", "8"])
    assert summary["learner"] == "imitation" and json.load(open(tmp_path / "r" / "config.json"))["config"]["game"] == {
        "width": 6, "height": 4, "colors": 3, "rules": "former"}

    # The data-set command, asked to go on with it under other settings, names them and the
    # command that does go on with it; that command finds it finished.
    with pytest.raises(SystemExit):
        datasets.main(["--out", str(tmp_path / "former"), "--boards", "10", "--size", "6x4x3", "--seed", "3",
                       "--node-limit", "20000", "--shard-size", "5", "--jobs", "1"])
    err = capsys.readouterr().err
    assert "(--size former:6x4x3, not 6x4x3): go on with it by python -m jaxdust.learn.datasets " in err
    command = err.split("go on with it by ", 1)[1].split(", or give another --out")[0]
    assert command == datasets.dataset_command(str(tmp_path / "former"), config)
    assert datasets.main(shlex.split(command)[3:]) == 0
    assert "10 boards" in capsys.readouterr().out


def follows_the_former_rules(data, config) -> bool:
    """Asserts that every sample of ``data`` is the family reference's former click of the
    one before it; returns whether some click differs from the dust game's."""
    from tests import family_reference as fr

    stored = {datasets.canonical_key(board, mirror=True): row for row, board in enumerate(data.boards)}
    differs = False
    for index in np.unique(data.board_id):
        rows = np.flatnonzero(data.board_id == index)
        rows = rows[np.argsort(data.step[rows])]
        for row in rows:
            if data.step[row] == 0:
                np.testing.assert_array_equal(data.boards[row], datasets.source_board(config, int(index)))
            x, y = np.argwhere(data.clicked[row])[0]
            cluster = np.zeros_like(data.clicked[row])
            cluster[tuple(np.transpose(fr.cluster_at(data.boards[row], x, y)))] = True
            np.testing.assert_array_equal(data.clicked[row], cluster)
            after, _ = fr.click(data.boards[row], x, y, "former")
            differs |= not np.array_equal(after, fr.click(data.boards[row], x, y, "dust")[0])
            later = rows[data.step[rows] == data.step[row] + 1]
            if later.size:
                np.testing.assert_array_equal(data.boards[later[0]], after)
                assert data.cost_to_go[later[0]] == data.cost_to_go[row] - 1
            elif data.cost_to_go[row] == 1:
                assert not after.any()
            else:  # the next position was kept once, under an earlier board
                assert data.board_id[stored[datasets.canonical_key(after, mirror=True)]] < index
    return differs


def test_mirror_images_are_one_sample_only_where_they_play_alike():
    """At an odd width the dust game's middle column belongs to the right half, so a board
    and its mirror image need not share an optimum: data sets keep both, and imitation
    does not add mirrored samples there (``game.mirror_symmetric``)."""
    from jaxdust.learn import imitation

    odd = DatasetConfig(GameConfig(5, 4, 3), boards=1)
    assert not odd.game.mirror_symmetric and GameConfig(6, 4, 3).mirror_symmetric
    assert GameConfig(5, 4, 3, "former").mirror_symmetric
    board = datasets.source_board(odd, 0)
    assert datasets.canonical_key(board, mirror=True) == datasets.canonical_key(board[::-1], mirror=True)
    assert datasets.canonical_key(board, mirror=False) != datasets.canonical_key(board[::-1], mirror=False)
    fake = datasets.Dataset(np.stack([board] * 4), np.ones((4, 5, 4), bool), np.arange(4, dtype=np.int16) + 1,
                            np.ones(4, bool), np.arange(4, dtype=np.int32), np.zeros(4, np.int16))
    for rules, mirrored in (("dust", False), ("former", True)):
        config = imitation.ImitationConfig(game=GameConfig(5, 4, 3, rules), hidden=(8,), validation_share=0.25)
        train, validation = imitation.split_dataset(fake, config)
        assert (len(train.boards), len(validation.boards)) == (6 if mirrored else 3, 1)


@pytest.mark.parametrize("game", [GameConfig(4, 3, 2), GameConfig(3, 3, 2), GameConfig(3, 2, 9, "former"),
                                  GameConfig(8, 6, 5)], ids=lambda game: game.size_spec)
def test_the_position_filter_keeps_what_a_set_of_canonical_keys_keeps_in_a_few_bytes_a_position(game):
    """The data-set maker's filter against the plain one it replaced (a Python set of
    ``canonical_key`` bytes, 115 bytes a position), in batches of every size from none up,
    on boards small enough to repeat, with their mirror images mixed in."""
    rng = np.random.default_rng(game.num_cells)
    seen, reference, kept = datasets.PositionFilter(game), set(), 0
    colours = rng.integers(0, game.colors + 1, size=(5_000, game.width, game.height)).astype(np.int8)
    colours[::3] = colours[1::3][:len(colours[::3])][:, ::-1]  # mirror images of boards nearby
    batches = np.split(colours, np.cumsum(rng.integers(0, 200, size=60)))
    for batch in batches:
        expected = []
        for board in batch:
            key = datasets.canonical_key(board, mirror=game.mirror_symmetric)
            expected.append(key not in reference)
            reference.add(key)
        fresh = seen.new(batch)
        assert fresh.dtype == bool and fresh.tolist() == expected
        kept += int(fresh.sum())
    assert len(seen) == len(reference) == kept and kept < len(colours)
    assert seen.nbytes == kept * -(-game.num_cells * int(game.colors).bit_length() // 8)  # packed, not a byte a cell
    assert len(seen.runs) <= np.log2(kept) + 1
    assert not seen.new(colours).any()
    shrinking = datasets.PositionFilter(game)  # batches of ever fewer new positions merge too
    for start in range(0, 45):
        shrinking.new(colours[start * 45 - start * (start - 1) // 2:][:45 - start])
    assert len(shrinking.runs) <= np.log2(len(shrinking)) + 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals are Linux's")
@pytest.mark.parametrize("thread", [False, True], ids=["main-thread", "other-thread"])
def test_workers_die_with_a_parent_killed_outright(thread, tmp_path):
    """kill -9 of a maker run with --jobs 2 left its idle workers (300 MB each) behind; so
    did a pool started off the main thread, whose workers were at work holding the GIL (as
    numba's searches do)."""
    work = f"list(ordered_map(workers.nap_holding_the_gil, [({str(tmp_path)!r}, 120)] * 4, 2))"
    if thread:
        work = f"t = threading.Thread(target=lambda: {work}); t.start(); t.join()"
    script = f"import threading; from jaxdust.core.processes import ordered_map; from tests import workers; {work}"
    parent = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 120
    while len(os.listdir(tmp_path)) < 2:  # both workers at work
        assert time.monotonic() < deadline and parent.poll() is None, "the workers never started"
        time.sleep(0.2)
    workers = [int(name) for name in os.listdir(tmp_path)]
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers):
        assert time.monotonic() < deadline, "workers outlived their parent"
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has died
    except OSError:
        return False


def test_imitation_labels_its_data_with_data_jobs_processes(tmp_path, monkeypatch):
    """``--data-jobs`` sets the processes that make a run's data (every core by default), and
    is not a run flag: a resume may give another number."""
    from jaxdust.learn.cli import main as train_main

    asked = []

    class Stop(Exception):
        pass

    def recorded(directory, config, jobs=1, **kwargs):
        asked.append(jobs)
        raise Stop

    monkeypatch.setattr(learners, "make_dataset", recorded)
    monkeypatch.setattr(learners.machine, "cpu_cores", lambda: 5)
    argv = ["imitation", "--size", "5x4x3", "--data-boards", "12", "--run-dir", str(tmp_path / "run")]
    for extra, jobs in (([], 5), (["--data-jobs", "1"], 1), (["--resume", "--data-jobs", "3"], 3)):
        with pytest.raises(Stop):
            train_main([*argv, *extra])
        assert asked.pop() == jobs


@pytest.mark.slow
def test_an_imitation_run_killed_within_an_epoch_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch):
    """Checkpoints come once a chunk: a run stopped after chunk 3 of an epoch of 4 goes on
    from there and logs and ends as the run that was never stopped. Its parameters are
    those of whole epochs keyed as before chunks (``fold_in(key(seed), epoch)``, epochs
    counted from 1), so runs saved by 0.2.49 resume on the same order of rows."""
    import jax

    from jaxdust.learn import checkpoint, imitation
    from jaxdust.learn.cli import main as train_main

    argv = ["imitation", "--size", "5x4x3", "--data-boards", "12", "--data-beam-width", "4", "--epochs", "2",
            "--epoch-chunks", "4", "--batch-size", "8", "--hidden", "8", "--eval-boards", "2", "--cell-rounds", "1",
            "--cell-width", "8", "--checkpoint-every", "1"]
    whole = train_main([*argv, "--run-dir", str(tmp_path / "whole")])

    class Killed(Exception):
        pass

    save = checkpoint.Checkpoints.save

    def save_then_die(self, step, *rest):
        save(self, step, *rest)
        if step == 3 and self.directory.endswith("checkpoints"):
            raise Killed

    monkeypatch.setattr(checkpoint.Checkpoints, "save", save_then_die)
    with pytest.raises(Killed):
        train_main([*argv, "--run-dir", str(tmp_path / "killed")])
    monkeypatch.undo()
    logged = [json.loads(line) for line in (tmp_path / "killed" / "metrics.jsonl").read_text().splitlines()]
    assert [line["chunk"] for line in logged] == [1, 2, 3]
    resumed = train_main(["imitation", "--run-dir", str(tmp_path / "killed"), "--resume"])

    assert len(run_log(tmp_path / "whole")) == 8 and run_log(tmp_path / "killed") == run_log(tmp_path / "whole")
    assert sum("valid_policy_loss" in line for line in run_log(tmp_path / "whole")) == 2  # once an epoch
    assert resumed["greedy_clicks"] == whole["greedy_clicks"] and resumed["argmax_clicks"] == whole["argmax_clicks"]

    config = dataclasses.replace(runs.load_run(str(tmp_path / "whole"), newest=True).config, epoch_chunks=1)
    init, run_chunk, _ = imitation.make_imitation(config, load_dataset(str(tmp_path / "whole" / "data")))
    state = init(jax.random.key(0))
    for epoch in (1, 2):
        state, _ = run_chunk(state, jax.random.fold_in(jax.random.key(0), epoch), 0)
    trained = runs.load_run(str(tmp_path / "killed"), newest=True).params
    for leaf, reference in zip(jax.tree.leaves(trained), jax.tree.leaves(state.params)):
        np.testing.assert_allclose(leaf, reference, rtol=1e-5, atol=1e-6)


def test_a_finished_imitation_run_resumed_without_its_given_data_set_has_nothing_to_do(tmp_path, capsys):
    """A run trained on --data DIR, deleted since: resumed at its end it has nothing to do
    (it was refused); resumed at a step it builds its trainer, which says the data is gone."""
    from jaxdust.learn.cli import main as train_main

    size = GameConfig(5, 4, 3)
    make_dataset(str(tmp_path / "data"), DatasetConfig(size, boards=12, seed=3, labeller="beam", beam_width=4,
                                                       shard_size=12), progress=False)
    run = tmp_path / "run"
    argv = ["imitation", "--size", "5x4x3", "--data", str(tmp_path / "data"), "--epochs", "1", "--epoch-chunks", "2",
            "--batch-size", "8", "--hidden", "8", "--eval-boards", "2", "--cell-rounds", "1", "--cell-width", "8",
            "--run-dir", str(run)]
    finished = train_main(argv)
    shutil.rmtree(tmp_path / "data")
    capsys.readouterr()
    assert train_main(["imitation", "--run-dir", str(run), "--resume"]) == finished
    assert "finished its 2 chunks already: nothing to train" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        train_main(["imitation", "--run-dir", str(run), "--resume", "--resume-step", "1"])
    assert f"the run's data set {tmp_path / 'data'} is gone: pass --data with a copy of it" in capsys.readouterr().err


def test_a_finished_imitation_run_resumed_without_its_data_set_has_nothing_to_do(tmp_path, capsys, monkeypatch):
    """A run that made its data set in RUN_DIR/data, which was deleted since, labelled all
    of it again on --resume before saying it had nothing to do."""
    from jaxdust.learn.cli import main as train_main

    run = tmp_path / "run"
    argv = ["imitation", "--size", "5x4x3", "--data-boards", "12", "--data-beam-width", "4", "--epochs", "2",
            "--batch-size", "8", "--hidden", "8", "--eval-boards", "2", "--cell-rounds", "1", "--cell-width", "8",
            "--run-dir", str(run)]
    train_main(argv)
    finished = (run / "summary.json").read_text()
    shutil.copytree(run / "data", tmp_path / "copy")
    shutil.rmtree(run / "data")

    def no_labelling(*args, **kwargs):
        raise AssertionError("the data set was made again")

    monkeypatch.setattr(learners, "make_dataset", no_labelling)
    capsys.readouterr()
    assert train_main([*argv, "--resume"]) == json.loads(finished)
    assert "finished its 20 chunks already: nothing to train" in capsys.readouterr().out
    assert not (run / "data").exists() and (run / "summary.json").read_text() == finished
    # Nor for a run made before best-argmax/ was kept: its final state is evaluated again.
    shutil.rmtree(run / runs.SELECTED_DIRS["argmax"])
    old = {k: v for k, v in json.loads(finished).items() if not k.startswith("best_argmax")}
    (run / "summary.json").write_text(json.dumps(old))
    assert train_main([*argv, "--resume"]) == json.loads(finished)
    assert os.listdir(run / runs.SELECTED_DIRS["argmax"]) == ["20"] and not (run / "data").exists()
    # A run resumed at a step (before its end, or here at it) builds its trainer, which needs
    # the data: made again, or a copy put in its place (given as --data, a copy cannot be
    # compared with the gone one's settings).
    with pytest.raises(AssertionError, match="made again"):
        train_main([*argv, "--resume", "--resume-step", "20"])
    with pytest.raises(SystemExit):
        train_main(["imitation", "--run-dir", str(run), "--resume", "--data", str(tmp_path / "copy")])
    assert f"or copy {tmp_path / 'copy'} there first" in capsys.readouterr().err
    shutil.copytree(tmp_path / "copy", run / "data")
    monkeypatch.undo()  # make_dataset finds the copy finished
    assert train_main([*argv, "--resume", "--resume-step", "20"])["learner"] == "imitation"
    # A resume that trains nothing, or is refused, rewrote config.json: a changed run to
    # fingerprint (its kept results played again), a refused --checkpoint-every kept.
    written = (run / "config.json").read_bytes()
    for extra in (["--data", str(run / "data")], [], ["--resume-step", "99", "--checkpoint-every", "3"],
                  ["--resume-step", "20", "--checkpoint-every", "3"]):  # its last step: nothing to train either
        try:
            train_main(["imitation", "--run-dir", str(run), "--resume", *extra])
        except SystemExit:
            assert "no checkpoint 99" in capsys.readouterr().err
        assert (run / "config.json").read_bytes() == written, extra


def test_the_manifest_is_rewritten_a_few_times_a_doubling_and_an_interrupted_set_resumes_whole(tmp_path, monkeypatch):
    """The manifest (every shard's name and sha256) was rewritten after each shard: the
    square of the shard count in all, hours at the 10^5 shards that --boards allows. It is
    written about MANIFEST_EVERY times each time the shards double; shards written since
    are made again from the journal, so an interrupted set still ends as an uninterrupted one."""
    config = DatasetConfig(GameConfig(3, 3, 2), boards=200, seed=3, labeller="beam", beam_width=1, shard_size=1)
    make_dataset(str(tmp_path / "whole"), config, jobs=1, progress=False)
    writes, shards = [], []
    write_json, write_bytes = files.atomic_write_json, files.atomic_write_bytes

    def counted_json(path, value, *args, **kwargs):
        if os.path.basename(path) == "manifest.json":
            writes.append(len(value["shards"]))
        return write_json(path, value, *args, **kwargs)

    def stopping_bytes(path, data, *args, **kwargs):
        if os.path.basename(path).startswith("shard-"):  # atomic_write_json writes through it too
            shards.append(path)
        if len(shards) == 150:
            raise KeyboardInterrupt
        return write_bytes(path, data, *args, **kwargs)

    monkeypatch.setattr(files, "atomic_write_json", counted_json)
    monkeypatch.setattr(files, "atomic_write_bytes", stopping_bytes)
    with pytest.raises(KeyboardInterrupt):
        make_dataset(str(tmp_path / "cut"), config, jobs=1, progress=False)
    listed = json.loads((tmp_path / "cut" / "manifest.json").read_text())["shards"]
    assert 128 <= len(listed) < 149 and writes[-1] == len(listed)  # the last 149 - len(listed) shards unlisted
    monkeypatch.setattr(files, "atomic_write_bytes", write_bytes)
    writes.clear()
    make_dataset(str(tmp_path / "cut"), config, jobs=1, progress=False)
    assert directory_bytes(tmp_path / "cut") == directory_bytes(tmp_path / "whole")
    writes.clear()
    make_dataset(str(tmp_path / "fresh"), config, jobs=1, progress=False)
    assert writes[0] == 0 and writes[-1] == 200 and len(writes) < 80  # 200 + 1 before


def test_the_manifest_names_the_versions_that_labelled_boards_of_the_set(tmp_path, monkeypatch):
    import jaxdust
    config = DatasetConfig(GameConfig(4, 3, 3), boards=2, labeller="beam", beam_width=2, shard_size=1)
    directory = tmp_path / "set"

    def versions():
        return json.loads((directory / "manifest.json").read_text())[files.VERSIONS_KEY]

    monkeypatch.setattr(datasets, "__version__", "0.0.1")
    make_dataset(str(directory), config, progress=False)
    assert versions() == ["0.0.1"]
    make_dataset(str(directory), config, progress=False)  # finished: a version that labels nothing is not named
    monkeypatch.setattr(datasets, "__version__", jaxdust.__version__)
    make_dataset(str(directory), config, progress=False)
    assert versions() == ["0.0.1"]
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["config"]["boards"] = 3  # as if stopped before its third board
    (directory / "manifest.json").write_text(json.dumps(manifest))
    make_dataset(str(directory), dataclasses.replace(config, boards=3), progress=False)
    assert versions() == ["0.0.1", jaxdust.__version__]
    assert len(np.unique(load_dataset(str(directory)).board_id)) == 3
    # A set begun before 0.2.92 recorded no versions: a resume that labels says so before its own.
    manifest = json.loads((directory / "manifest.json").read_text())
    del manifest[files.VERSIONS_KEY]
    manifest["config"]["boards"] = 4
    (directory / "manifest.json").write_text(json.dumps(manifest))
    make_dataset(str(directory), dataclasses.replace(config, boards=4), progress=False)
    assert versions() == ["<0.2.92", jaxdust.__version__]
