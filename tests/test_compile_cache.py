"""The commands keep XLA's compiled programs on disk (``jaxdust.core.compile_cache``)."""

import json
import os
import subprocess
import sys

import pytest

from jaxdust.core import compile_cache
from jaxdust.evaluation import cli as evaluate_cli
from jaxdust.evaluation import leaderboard
from jaxdust.learn import cli as train_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_directory_follows_the_variable_then_the_user_cache(tmp_path):
    home = os.path.expanduser("~")
    assert compile_cache.default_directory({}) == os.path.join(home, ".cache", "jaxdust", "xla")
    assert compile_cache.default_directory({"XDG_CACHE_HOME": str(tmp_path)}) == str(tmp_path / "jaxdust" / "xla")
    chosen = {"XDG_CACHE_HOME": str(tmp_path), compile_cache.VARIABLE: str(tmp_path / "mine")}
    assert compile_cache.default_directory(chosen) == str(tmp_path / "mine")
    for off in ("off", "OFF", "0", "", " no "):
        assert compile_cache.default_directory({compile_cache.VARIABLE: off}) is None
    for on in ("on", "1", "TRUE", " yes "):  # made a folder named "1" where the command ran
        assert compile_cache.default_directory({"XDG_CACHE_HOME": str(tmp_path), compile_cache.VARIABLE: on}) == \
            str(tmp_path / "jaxdust" / "xla")
    assert compile_cache.default_directory({compile_cache.VARIABLE: f" {tmp_path}\n"}) == str(tmp_path)
    # A URL is JAX's to read (through etils), not a local folder "gs:/bucket/xla".
    assert compile_cache.default_directory({compile_cache.VARIABLE: "gs://bucket/xla"}) == "gs://bucket/xla"


def test_a_cache_folder_that_cannot_be_one_leaves_the_cache_off_with_one_warning(tmp_path, monkeypatch, capsys):
    """JAX warned at every compile instead (a file there, or a folder under a file)."""
    (tmp_path / "file").write_text("")
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    jax_config = compile_cache.jax.config
    kept = jax_config.jax_compilation_cache_dir  # another test in this process may have enabled one
    jax_config.update("jax_compilation_cache_dir", None)  # else enable() keeps JAX's and tests nothing
    try:
        for value in ("file", "file/sub"):
            monkeypatch.setenv(compile_cache.VARIABLE, str(tmp_path / value))
            assert compile_cache.enable() is None
            [line] = capsys.readouterr().err.splitlines()  # one plain line, no Python file and line
            assert line.startswith("warning: no XLA compilation cache (") and f"set {compile_cache.VARIABLE}" in line
    finally:
        jax_config.update("jax_compilation_cache_dir", kept)
    monkeypatch.chdir(tmp_path)  # a relative folder: from where the command starts, made absolute
    assert compile_cache.default_directory({compile_cache.VARIABLE: "rel"}) == str(tmp_path / "rel")


def _enable_in_a_new_process(environment: dict) -> dict:
    """``enable()`` twice in a fresh process (JAX reads its variables on import), with the
    variable off and then on, compiling one program after each."""
    script = (
        "import json, os, sys, jax\n"
        "from jaxdust.core import compile_cache\n"
        "jax.config.update('jax_persistent_cache_min_compile_time_secs', 0)\n"
        "os.environ[compile_cache.VARIABLE] = 'off'\n"
        "off = compile_cache.enable()\n"
        "jax.jit(lambda x: x + 1)(1).block_until_ready()\n"
        "os.environ.pop(compile_cache.VARIABLE)\n"
        "on = compile_cache.enable()\n"
        "jax.jit(lambda x: x * 3)(1).block_until_ready()\n"
        "print(json.dumps({'off': off, 'on': on, 'max': jax.config.jax_compilation_cache_max_size}))\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_enable_keeps_compiled_programs_in_the_user_cache_unless_jax_has_one(tmp_path):
    bare = {k: v for k, v in os.environ.items()
            if k not in ("JAX_COMPILATION_CACHE_DIR", compile_cache.VARIABLE)}
    found = _enable_in_a_new_process({**bare, "XDG_CACHE_HOME": str(tmp_path)})
    directory = tmp_path / "jaxdust" / "xla"
    assert found == {"off": None, "on": str(directory), "max": compile_cache.MAX_BYTES}
    assert any(directory.iterdir())  # the program compiled after enable() was kept

    own = tmp_path / "jax-own"  # JAX's own setting wins and keeps its unlimited size
    found = _enable_in_a_new_process({**bare, "XDG_CACHE_HOME": str(tmp_path / "unused"),
                                      "JAX_COMPILATION_CACHE_DIR": str(own)})
    assert found == {"off": str(own), "on": str(own), "max": -1}
    assert any(own.iterdir()) and not (tmp_path / "unused").exists()


@pytest.mark.parametrize("module", [train_cli, evaluate_cli, leaderboard], ids=["train", "evaluate", "leaderboard"])
def test_each_command_enables_the_cache_before_it_runs(module, monkeypatch):
    calls = []
    monkeypatch.setattr(compile_cache, "enable", lambda: calls.append("enable"))
    monkeypatch.setattr(module, "main", lambda: calls.append("main"))
    module.run()
    assert calls == ["enable", "main"]


def test_a_program_half_saved_by_a_killed_process_is_dropped_so_the_cache_grows_again(tmp_path):
    """JAX reads every entry's -atime before each save: one -cache without it (a kill
    between the two writes) made every later save fail, and the cache stopped growing."""
    (tmp_path / "whole-cache").write_bytes(b"program")
    (tmp_path / "whole-atime").write_bytes(b"\0" * 8)
    (tmp_path / "torn-cache").write_bytes(b"prog")
    (tmp_path / "notes.txt").write_text("mine")
    assert compile_cache.drop_unfinished_entries(str(tmp_path)) == ["torn-cache"]
    assert sorted(os.listdir(tmp_path)) == [".lockfile", "notes.txt", "whole-atime", "whole-cache"]
    environment = {**os.environ, compile_cache.VARIABLE: str(tmp_path / "xla"), "PYTHONPATH": ROOT}
    environment.pop("JAX_COMPILATION_CACHE_DIR", None)
    (tmp_path / "xla").mkdir()
    (tmp_path / "xla" / "jit_old-cache").write_bytes(b"prog")  # its -atime never written
    script = ("import jax\nfrom jaxdust.core import compile_cache\n"
              "jax.config.update('jax_persistent_cache_min_compile_time_secs', 0)\n"
              "compile_cache.enable()\njax.jit(lambda x: x * 7)(1).block_until_ready()\n")
    result = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", script], cwd=ROOT, env=environment,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    names = os.listdir(tmp_path / "xla")
    assert "jit_old-cache" not in names and any(name.endswith("-cache") for name in names)
    assert {name.removesuffix("-cache") for name in names if name.endswith("-cache")} == \
        {name.removesuffix("-atime") for name in names if name.endswith("-atime")}
    # Under a limit of the user's own (JAX's variable) the cache had stopped growing for good.
    (tmp_path / "xla" / "jit_old-cache").write_bytes(b"prog")
    result = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", script.replace("* 7", "* 9")],
                            cwd=ROOT, env={**environment, "JAX_COMPILATION_CACHE_MAX_SIZE": str(10**9)},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "jit_old-cache" not in os.listdir(tmp_path / "xla")
