"""The docs' command-line page (docs/cli.md) is the ``--help`` of every installed command
and ``python -m`` module as the flags stand: docs/gen_cli.py writes it from the parsers."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_cli_page_is_the_commands_help():
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    gen_cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_cli)
    written = gen_cli.PAGE.read_text(encoding="utf-8")
    assert written == gen_cli.page(), f"docs/cli.md is out of date: run {gen_cli.COMMAND}"
