"""The soak benchmark in its short form: every piece killed once at a random moment, then
resumed (or rerun), ends equal to its uninterrupted run."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # end-to-end: python -m pytest -m 'not slow' leaves it out

ROOT = Path(__file__).resolve().parent.parent


def test_every_piece_survives_a_kill(tmp_path):
    out = tmp_path / "soak.json"
    result = subprocess.run([sys.executable, "benchmarks/soak.py", "--rounds", "1", "--kills", "1", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["measured_on"]["cores"] >= 1 and report["measured_on"]["jaxdust"]
    pieces = report["pieces"]
    assert sorted(pieces) == ["datasets", "evaluate", "solve", "train"]
    for name, row in pieces.items():
        # kills == 1: the kill landed (a run that outran it shortens the next delay)
        assert row["runs"] == row["equal"] == row["kills"] == 1 and row["whole_leftovers"], (name, row)
