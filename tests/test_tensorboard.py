"""train.py --tensorboard writes the same scalars as metrics.jsonl, step by step."""

import json
import os
import struct
import sys

import numpy as np
import pytest
from tensorboardX.proto import event_pb2

from jaxdust.learn import cli
from tests.conftest import TINY_DQN

pytestmark = pytest.mark.slow  # end-to-end: python -m pytest -m 'not slow' leaves it out

TRAIN_ARGS = [*TINY_DQN, "--total-steps", str(32 * 40)]


def scalars(directory) -> dict:
    """{(tag, step): value} from every TensorBoard event file in ``directory``."""
    found = {}
    for name in sorted(os.listdir(directory)):
        for event in events(directory / name):
            for value in event.summary.value:
                found[value.tag, event.step] = value.simple_value
    return found


def test_tensorboard_scalars_equal_the_metrics_log(tmp_path):
    run = tmp_path / "run"
    cli.main([*TRAIN_ARGS, "--run-dir", str(run), "--tensorboard"])
    written = scalars(run / "tensorboard")
    expected = {(name, record["chunk"]): value
                for record in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
                for name, value in record.items() if name != "chunk"}
    assert ("greedy_clicks", 4) in expected and ("seconds", 1) in expected
    assert set(written) == set(expected)
    for key, value in expected.items():
        assert written[key] == np.float32(value), key


def test_without_the_flag_no_event_files(tmp_path):
    cli.main([*TRAIN_ARGS, "--run-dir", str(tmp_path / "run"), "--total-steps", str(32 * 10)])
    assert not (tmp_path / "run" / "tensorboard").exists()


def test_without_tensorboardx_the_run_directory_stays_empty(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import fails as if not installed
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as stopped:
        cli.main([*TRAIN_ARGS, "--run-dir", str(run), "--tensorboard"])
    assert stopped.value.code == 2 and 'pip install -e ".[tensorboard]"' in capsys.readouterr().err
    assert not (run / "config.json").exists()  # so the same command without the flag starts


def test_a_resumed_session_tells_viewers_to_drop_the_steps_it_redoes(tmp_path):
    """Without a purge step, TensorBoard's Python loader keeps both values of a redone step."""
    run = tmp_path / "run"
    cli.main([*TRAIN_ARGS, "--run-dir", str(run), "--tensorboard"])
    cli.main([*TRAIN_ARGS, "--run-dir", str(run), "--tensorboard", "--resume", "--resume-step", "2"])
    first, second = (events(run / "tensorboard" / name) for name in sorted(os.listdir(run / "tensorboard")))
    starts = [event.step for event in second if event.session_log.status == event_pb2.SessionLog.START]
    assert starts == [3]  # the first step the resume redoes
    assert min(event.step for event in second if event.summary.value) == 3
    assert max(event.step for event in first if event.summary.value) == 4


def events(path) -> list:
    """The events of one TensorBoard event file (TFRecord framing)."""
    data, found, offset = path.read_bytes(), [], 0
    while offset < len(data):
        (length,) = struct.unpack("<Q", data[offset : offset + 8])
        found.append(event_pb2.Event.FromString(data[offset + 12 : offset + 12 + length]))
        offset += 12 + length + 4
    return found
