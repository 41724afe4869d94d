"""Write docs/cli.md, the command-line reference: the ``--help`` of every command the
package installs (pyproject.toml's ``[project.scripts]``), of their subcommands and of the
modules run with ``python -m``, from the commands' own parsers.

    python docs/gen_cli.py

tests/test_cli_page.py fails until the page is written again after a flag changes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pathlib
import sys
import tomllib
from unittest import mock

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the page is this checkout's, whatever jaxdust is installed
import jaxdust  # noqa: E402
from jaxdust.core import flags, machine  # noqa: E402
from jaxdust.core.files import atomic_write_bytes  # noqa: E402

PAGE = ROOT / "docs" / "cli.md"
COMMAND = "python docs/gen_cli.py"
from jaxdust.__main__ import COMMANDS  # noqa: E402

MODULES = tuple(module for command, module, _ in COMMANDS if command is None)  # commands no script installs
WIDTH = 100  # argparse wraps to the terminal's width: the page's is fixed
# What a help text says of the machine it runs on, as the page shows it.
CORES = "N"
PACKAGE_DIR = os.path.dirname(os.path.abspath(jaxdust.__file__))
SHOWN_PACKAGE_DIR = ".../jaxdust"

INTRO = f"""# Command line

The `--help` of every installed command and of the package's modules run with `python -m`
(not of the `benchmarks/` scripts), as it prints it, generated from their own parsers by
`{COMMAND}` (a test fails until it is run again after a flag changes). The
installed commands go by their installed names; in a checkout they are also
`python train.py` and the others of [Commands](getting-started.md#commands), with the same
flags. Where a default depends on the machine, `{CORES}` stands for its cores and
`{SHOWN_PACKAGE_DIR}` for the installed package's folder.
"""


def page() -> str:
    """docs/cli.md's text: the same on every machine and terminal."""
    sections = [INTRO]
    with _machine_independent():
        for name, module in _commands():
            # Parser names a command as it was started: here as the installed script or module.
            with mock.patch.object(sys, "argv", [name]):
                parser = importlib.import_module(module).build_parser()
            sections.append(_section(parser, "##"))
            sections += [_section(sub, "###") for sub in getattr(parser, "learner_parsers", {}).values()]
    return "\n".join(sections)


def _commands() -> list[tuple[str, str]]:
    """``(name, module)`` of each command, the module's ``build_parser`` making its parser."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    return ([(name, target.partition(":")[0]) for name, target in scripts.items()]
            + [(f"python -m {module}", module) for module in MODULES])


@contextlib.contextmanager
def _machine_independent():
    # Python 3.14's argparse colours help for a terminal.
    with mock.patch.dict(os.environ, COLUMNS=str(WIDTH), PYTHON_COLORS="0"), \
            mock.patch.object(machine, "cpu_cores", lambda: CORES):
        yield


def _section(parser: argparse.ArgumentParser, heading: str) -> str:
    # Before formatting: a path's length moves where the lines wrap. Defaults too, which
    # flags.Parser adds to a help that names none.
    for action in parser._actions:
        if action.help:
            action.help = action.help.replace(PACKAGE_DIR, SHOWN_PACKAGE_DIR)
        if isinstance(action.default, str):
            action.default = action.default.replace(PACKAGE_DIR, SHOWN_PACKAGE_DIR)
    return f"{heading} `{parser.prog}`\n\n```text\n{parser.format_help().rstrip()}\n```\n"


def main() -> None:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args()  # --help, or a stray argument refused
    atomic_write_bytes(PAGE, page().encode())
    print(f"wrote {PAGE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
