"""Where a command's time goes to JAX: tracing, lowering and XLA compiling, by test and by
program, over every Python process it starts (pytest's workers and the scripts they run).

    python benchmarks/compile_profile.py -- python -m pytest -n 2 -m slow
    python benchmarks/compile_profile.py --log results/compile.tsv -- python train.py avi --minutes 1

Every process started under it loads a ``sitecustomize`` (put first on ``PYTHONPATH``)
that, once ``jax`` is imported, listens to JAX's compile-time events and appends each as it
comes to one tab-separated log: process, event, seconds, program, script, current test
(``PYTEST_CURRENT_TEST``, which a test's subprocesses inherit, so their events count
under the test that started them). A process stopped part way keeps the events before it.
The command runs as given; its exit status is this script's.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile

from jaxdust.core import flags

# Installs a listener when ``jax._src.monitoring`` is first imported, so processes that never
# import jax pay nothing, and a process sets its JAX options before jax reads them.
SITECUSTOMIZE = '''
import importlib.abc, importlib.machinery, os, sys

_LOG = os.environ.get("JAXDUST_COMPILE_LOG")


def _listen(event, seconds, **details):
    if "/compile" in event or "/compilation_cache/" in event:
        script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "-"
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" (")[0]
        row = f"{os.getpid()}\\t{event}\\t{seconds:.4f}\\t{details.get('fun_name', '')}\\t{script}\\t{test}\\n"
        # One append per event: lines from processes side by side stay whole, and a process
        # that ends without Python's shutdown (a kill, Ctrl-C in the commands) keeps its own.
        log = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(log, row.encode())
        finally:
            os.close(log)


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "jax._src.monitoring":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            module.register_event_duration_secs_listener(_listen)

        spec.loader.exec_module = exec_module
        return spec


if _LOG:
    sys.meta_path.insert(0, _Hook())
'''

COMPILE = "/jax/core/compile/backend_compile_duration"
TRACE = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration")
SAVED = "/jax/compilation_cache/compile_time_saved_sec"


def summarise(log_path: str, top: int) -> str:
    """Markdown tables of the log: seconds by test and by program."""
    by_test = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    by_program = collections.defaultdict(lambda: [0.0, 0.0, 0])
    with open(log_path) as log:
        for number, line in enumerate(log, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 6:
                continue
            _, event, seconds, program, script, test = fields
            try:
                seconds = float(seconds)
            except ValueError:
                raise ValueError(f"{log_path}:{number} is no line of this profiler's log (seconds {seconds!r})") from None
            where = test or f"({script}, outside a test)"
            if event == COMPILE:
                by_test[where][0] += seconds
                by_test[where][3] += 1
                by_program[program][0] += seconds
                by_program[program][2] += 1
            elif event in TRACE:
                by_test[where][1] += seconds
                # Tracing names the function, lowering and compiling its jit: one row.
                by_program[program if program.startswith("jit(") else f"jit({program})"][1] += seconds
            elif event == SAVED:
                by_test[where][2] += seconds
    compiled = sum(row[0] for row in by_test.values())
    traced = sum(row[1] for row in by_test.values())
    saved = sum(row[2] for row in by_test.values())
    lines = [f"XLA compiling {compiled:.1f} s, tracing and lowering {traced:.1f} s, "
             f"saved by the compilation cache {saved:.1f} s (seconds summed over processes).", "",
             "| test (or script) | compiles | compile s | trace + lower s | cache saved s |", "|---|---:|---:|---:|---:|"]
    for where, (seconds, tracing, cached, count) in sorted(by_test.items(), key=lambda item: -item[1][0] - item[1][1])[:top]:
        lines.append(f"| {where} | {count} | {seconds:.1f} | {tracing:.1f} | {cached:.1f} |")
    lines += ["", "| program | compiles | compile s | trace + lower s |", "|---|---:|---:|---:|"]
    for program, (seconds, tracing, count) in sorted(by_program.items(), key=lambda item: -item[1][0] - item[1][1])[:top]:
        lines.append(f"| {program} | {count} | {seconds:.1f} | {tracing:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = flags.Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log", type=flags.output_file, default=None,
                        help="the event log to write (default: a temporary file, removed afterwards); "
                             "an existing log is summarised again with no command")
    parser.add_argument("--top", type=flags.positive_int, default=25, help="rows of each table")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        if not args.log or not os.path.isfile(args.log):
            parser.error("give a command after --, or --log with an existing log to summarise")
        try:
            print(summarise(args.log, args.top))
        except ValueError as error:
            flags.fail(parser, str(error))
        return 0
    if shutil.which(command[0]) is None:
        parser.error(f"command not found: {command[0]}")
    hook_dir = tempfile.mkdtemp(prefix="jaxdust-compile-profile-")
    try:
        with open(os.path.join(hook_dir, "sitecustomize.py"), "w") as handle:
            handle.write(SITECUSTOMIZE)
        log_path = os.path.abspath(args.log or os.path.join(hook_dir, "events.tsv"))
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        if os.path.exists(log_path):
            os.remove(log_path)  # the events of this command only
        environment = dict(os.environ, JAXDUST_COMPILE_LOG=log_path,
                           PYTHONPATH=os.pathsep.join(filter(None, [hook_dir, os.environ.get("PYTHONPATH")])))
        status = subprocess.call(command, env=environment)
        if os.path.exists(log_path):
            print(summarise(log_path, args.top))
            if args.log:
                print(f"\nevents: {log_path}")
        else:
            print("no JAX compile events were logged (no process imported jax, or all were killed)", file=sys.stderr)
        return status
    finally:
        shutil.rmtree(hook_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(flags.run_command(main, "the events logged so far are in --log, if given; run the command again for the whole profile"))
