"""The docs' command-line page (docs/cli.md) is the ``--help`` of every installed command
and ``python -m`` module as the flags stand: docs/gen_cli.py writes it from the parsers."""

import importlib.util
import pathlib
import subprocess
import sys
import tomllib
from unittest import mock

import pytest

import jaxdust
from jaxdust import __main__ as overview

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _gen_cli():
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    gen_cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_cli)
    return gen_cli


def test_cli_page_is_the_commands_help():
    gen_cli = _gen_cli()
    written = gen_cli.PAGE.read_text(encoding="utf-8")
    assert written == gen_cli.page(), f"docs/cli.md is out of date: run {gen_cli.COMMAND}"


def test_python_m_jaxdust_lists_every_command():
    """``python -m jaxdust`` failed ("'jaxdust' is a package and cannot be directly
    executed"); it lists the installed commands, each with the module that runs it."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    listed = {command: module for command, module, _ in overview.COMMANDS if command}
    assert listed.keys() == scripts.keys()
    for command, module in listed.items():  # python -m jaxdust.solver runs jaxdust.solver.cli
        assert scripts[command].partition(":")[0] in (module, module + ".cli")
    for _, module, _ in overview.COMMANDS:
        spec = importlib.util.find_spec(module)
        runs = importlib.util.find_spec(module + ".__main__") if spec.submodule_search_locations else spec
        assert 'if __name__ == "__main__"' in pathlib.Path(runs.origin).read_text() or runs.name.endswith("__main__")
    shown = subprocess.run([sys.executable, "-m", "jaxdust"], capture_output=True, text=True, check=True).stdout
    assert all(f"python -m {module}" in shown for _, module, _ in overview.COMMANDS)
    assert all(command in shown for command in scripts)
    refused = subprocess.run([sys.executable, "-m", "jaxdust", "train"], capture_output=True, text=True)
    assert refused.returncode == 2 and "takes no arguments but --version, got train" in refused.stderr


def test_every_command_and_learner_says_the_version(capsys):
    """``jaxdust-train --version`` and the other commands' were refused as unknown flags;
    only ``python -m jaxdust`` said it."""
    for name, module in _gen_cli()._commands():
        with mock.patch.object(sys, "argv", [name]):
            parser = importlib.import_module(module).build_parser()
        for each in (parser, *getattr(parser, "learner_parsers", {}).values()):
            with pytest.raises(SystemExit) as ended:
                each.parse_args(["--version"])
            assert ended.value.code == 0 and capsys.readouterr().out == f"jaxdust {jaxdust.__version__}\n", each.prog


@pytest.mark.skipif(not pathlib.Path("/dev/full").exists(), reason="needs Linux's /dev/full, always full")
def test_python_m_jaxdust_ends_a_refused_write_in_one_line():
    """Its print was the one command's output not under ``flags.run_command``: a full disk
    (or, one time in three, ``| head -1``) ended it in a traceback."""
    with open("/dev/full", "w") as full:
        ended = subprocess.run([sys.executable, "-m", "jaxdust", "--version"], stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=120)
    assert (ended.returncode, ended.stderr) == (1, "\nstopped: No space left on device (make room; nothing to keep)\n")
