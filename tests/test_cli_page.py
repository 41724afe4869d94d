"""The docs' command-line page (docs/cli.md) is the ``--help`` of every installed command
and ``python -m`` module as the flags stand: docs/gen_cli.py writes it from the parsers."""

import importlib.util
import pathlib
import subprocess
import sys
import tomllib

from jaxdust import __main__ as overview

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_cli_page_is_the_commands_help():
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    gen_cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_cli)
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
