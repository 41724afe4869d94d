"""Argparse types that check a flag's value where it is parsed, so every command line
refuses bad input the same way: one line naming the flag and the problem, exit status 2.

    parser.add_argument("--boards", type=flags.positive_int)
    parser.add_argument("--time-limit", type=flags.positive_float)

argparse prefixes the message with the flag (``argument --boards: must be a positive
integer, got '0'``). ``fail(parser, message)`` is the same exit for problems found after
parsing (a file that cannot be read, flags that contradict each other). ``Parser`` keeps
argparse's own errors (an unknown flag, a missing argument) to one line as well.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import math
import os
import re
import select
import shlex
import sys
import tempfile
import types
from typing import Any, Callable, NoReturn


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (no usage block: ``--help`` has it),
    with ``--version`` beside ``--help``.
    Started as an installed command (``jaxdust-train``) or as a module (``python -m
    jaxdust.learn.cli``), it goes by that name, not ``prog``'s (the repository's ``train.py``),
    in its usage and in the examples of its description. The description is a module
    docstring: its double backquotes are left out of ``--help``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.add_help:
            from jaxdust import __version__  # the package's __init__ has run by the time a parser is made

            self.add_argument("--version", action="version", version=f"jaxdust {__version__}",
                              help="print jaxdust's version and exit")
        command = _started_as()
        repository_name = self.prog if self.prog.startswith("python") else f"python {self.prog}"
        # A subcommand's parser is named after its parent's: "jaxdust-train avi" stays.
        renamed = bool(command) and not self.prog.startswith(command)
        if renamed:
            self.prog = command
        if self.description:
            self.description = self.description.replace("``", "")
            if renamed:  # its examples as this command runs them
                self.description = "\n".join(_renamed(line, repository_name, command)
                                             for line in self.description.split("\n"))

    def format_help(self) -> str:
        """argparse's, with ``(default X)`` added to each option's help that names no default
        where the default is a plain value (a number, a word, a list of them, written as the
        flag takes it: ``1,16,256``); at format time, so options of groups get it too."""
        for action in self._actions:
            text = action.help or ""
            if (action.option_strings and text is not argparse.SUPPRESS and action.nargs != 0
                    and not re.search(r"\bdefaults?\b", text, re.IGNORECASE) and _plain(action.default)):
                shown = (",".join(map(str, action.default)) if isinstance(action.default, (list, tuple))
                         else str(action.default)).replace("%", "%%")
                action.help = f"{text} (default {shown})" if text else f"default {shown}"
        return super().format_help()

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        # argparse takes a file named -x.txt for a flag, and its error says nothing of the file.
        given = list(getattr(self, "_given", ()))
        given = given[:given.index("--")] if "--" in given else given  # after "--" nothing is a flag
        dashed = [text for text in given if isinstance(text, str) and text.startswith("-")
                  and text != "-" and "=" not in text and os.path.isfile(text)]
        if dashed:
            message += f"; {dashed[0]} is read as a flag: name the file ./{dashed[0]}"
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _plain(value) -> bool:
    """A default worth stating in ``--help``: not None (unset), not empty, not an object."""
    if isinstance(value, (tuple, list)):
        return bool(value) and all(_plain(item) and not isinstance(item, (tuple, list)) for item in value)
    return isinstance(value, (int, float, str)) and not isinstance(value, bool) and value != ""


def _started_as() -> str:
    """The command this process was started as where a user cannot have typed ``prog``: an
    installed ``jaxdust-*`` script, or ``python -m jaxdust.<module>``; "" otherwise."""
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    if script.startswith("jaxdust-"):
        return script
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    module = spec.name.removesuffix(".__main__") if spec is not None else ""
    return f"python -m {module}" if module.startswith("jaxdust.") else ""


def sibling_command(script: str, installed: str, module: str) -> str:
    """How to start another of the commands the way this process was started: ``installed``
    (``jaxdust-evaluate``) from an installed script, ``python -m module`` from ``python -m``,
    else the checkout's ``python script`` beside this one (its whole path from outside the
    checkout), quoted for a shell."""
    started = _started_as()
    if started.startswith("jaxdust-"):
        return installed
    if started:
        return f"python -m {module}"
    this = sys.argv[0] if sys.argv and sys.argv[0].endswith(".py") else ""
    beside = os.path.join(os.path.dirname(os.path.abspath(this)), script)
    if not this or not os.path.isfile(beside):  # not a checkout's script (pytest's, say)
        return f"python {script}"
    relative = os.path.relpath(beside)
    return f"python {shlex.quote(beside if relative.startswith(os.pardir) else relative)}"


def _renamed(line: str, old: str, new: str) -> str:
    """``line`` with the command ``old`` called ``new``, a leading ``old:`` (a docstring's
    first words) too; an example's comment stays in its column."""
    name = old.removeprefix("python ")
    if line.startswith(f"{name}:"):
        line = new + line[len(name):]
    if old not in line:
        return line
    renamed = line.replace(old, new)
    command, mark, comment = renamed.partition("  #")
    if mark and len(renamed) < len(line):
        command += " " * (len(line) - len(renamed))
    return command + mark + comment


def integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None


def finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return value


def share(text: str) -> float:
    """A number in [0, 1]."""
    value = finite_float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text!r}")
    return value


def positive_int(text: str) -> int:
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


INT32_LIMIT = 2**31  # counts of boards or clicks become int32 array sizes and indices


def count(text: str) -> int:
    """A positive integer that sizes or indexes arrays (boards, clicks): below 2^31."""
    value = positive_int(text)
    if value >= INT32_LIMIT:
        raise argparse.ArgumentTypeError(f"must be below 2^31 = {INT32_LIMIT:,}, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    value = integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


MAX_SEED = 2**32 - 1  # jax.random.key's 32-bit range, with room for the offsets commands add to a seed


def seed(text: str) -> int:
    """A seed: an integer in 0..2^32-1 (numpy refuses negative seeds, JAX 64-bit ones)."""
    value = integer(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be an integer in 0..{MAX_SEED}, got {text!r}")
    return value


def positive_ints(text: str) -> list[int]:
    """Comma-separated positive integers, e.g. ``1024,16384``."""
    try:
        return [positive_int(part) for part in text.split(",")]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be comma-separated positive integers, got {text!r}") from None


def line_ranges(text: str) -> list[tuple[int, int]]:
    """Comma-separated positive integers and inclusive ranges, e.g. ``83`` or ``7,181-202``,
    as ``[(first, last), ...]`` (a range is not expanded: ``1-10000000000`` costs nothing)."""
    ranges = []
    for part in text.split(","):
        first, dash, last = part.partition("-")
        try:
            low, high = positive_int(first), positive_int(last) if dash else positive_int(first)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"must be comma-separated line numbers or ranges such as 7,181-202, got {text!r}") from None
        if high < low:
            raise argparse.ArgumentTypeError(f"range {part} runs backwards")
        ranges.append((low, high))
    return ranges


def names(known, what: str = "names"):
    """A type for comma-separated names, each one of ``known`` (``--sets 6x6,8x4``): unknown,
    repeated or no names are refused, and the message lists the known ones."""
    known = list(known)

    def parse(text: str) -> list[str]:
        chosen = [part.strip() for part in text.split(",") if part.strip()]
        unknown = [name for name in chosen if name not in known]
        if unknown or not chosen:
            raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(unknown) or repr(text)}; "
                                             f"known: {', '.join(known)}")
        if repeated := sorted({name for name in chosen if chosen.count(name) > 1}):
            raise argparse.ArgumentTypeError(f"{what} named twice: {', '.join(repeated)}")
        return chosen

    return parse


def host_port(text: str) -> str:
    """``HOST:PORT`` with a port in 1..65535, an IPv6 host in brackets (``[::1]:1234``):
    jax.distributed takes the text as it is, and no port is an IndexError inside JAX, a
    port not in ASCII digits a segmentation fault in gRPC."""
    host, colon, port = text.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]") and len(host) > 2
    if (not colon or not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536
            or ((":" in host or host.startswith("[")) and not bracketed)):
        raise argparse.ArgumentTypeError(f"must be HOST:PORT with a port in 1..65535 (an IPv6 host in brackets, "
                                         f"[::1]:1234), got {text!r}")
    return text


def positive_float(text: str) -> float:
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def cpu(text: str) -> int:
    """A core this process may run on (``taskset -c``)."""
    value = non_negative_int(text)
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    if usable is not None and value not in usable:
        raise argparse.ArgumentTypeError(f"no core {value} here; usable: {', '.join(map(str, usable))}")
    return value


def name(text: str) -> str:
    """Any text but a blank one, which would read as the flag left out where its default is
    taken with ``or`` (``evaluate.py --reference``)."""
    _not_empty(text, "name")
    return text


def input_file(text: str) -> str:
    """An existing regular file, or ``-`` for standard input."""
    _not_empty(text)
    if text == "-":
        return text
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text} cannot be read (permission denied)")
    return text


def input_dir(text: str) -> str:
    _not_empty(text)
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a file, not a directory")
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"no such directory: {text}")
    return text


def output_file_or_stdout(text: str) -> str:
    """``-`` (standard output) or an ``output_file``."""
    return text if text == "-" else output_file(text)


def report_file(benchmark: str) -> Callable[[str], str]:
    """The ``--out`` type of benchmark ``benchmark``'s JSON report: an ``output_file``
    that, where a file is already there, must be an earlier report of the same benchmark
    (its ``"benchmark"``), which a rerun replaces; any other file (a script, another
    command's report that took hours) is refused rather than lost."""
    def checked(text: str) -> str:
        path = output_file(text)
        if not os.path.isfile(path):
            return path
        try:
            with open(path, encoding="utf-8") as handle:
                saved = json.load(handle)
        except (OSError, ValueError):
            saved = None
        if not (isinstance(saved, dict) and saved.get("benchmark") == benchmark):
            raise argparse.ArgumentTypeError(f"{text} holds something other than an earlier {benchmark} report, "
                                             "which would replace it: give another name (or remove the file)")
        return path

    return checked


def output_file(text: str) -> str:
    """A file to write (its folder is created when written); refused if it is a folder."""
    _not_empty(text)
    if text == "-":
        raise argparse.ArgumentTypeError("must be a file name (- for standard output is not supported here)")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    if text.endswith((os.sep, "/")) or os.path.basename(text) in (".", ".."):  # refused only at the write, after the work
        raise argparse.ArgumentTypeError(f"{text} names a folder, not a file")
    if os.path.exists(text) and not os.access(text, os.W_OK):  # found at the write, after the work
        raise argparse.ArgumentTypeError(f"{text} is not writable")
    if os.path.exists(text) and not os.path.isfile(text):  # a FIFO or a device, written into as it is
        return text
    return creatable(text, os.path.dirname(_unfolded(text)), file=True)


def output_dir(text: str) -> str:
    """A folder to write into (created when needed); refused if it is a file."""
    _not_empty(text)
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a file, not a directory")
    return creatable(text, _unfolded(text))


def _not_empty(text: str, what: str = "path") -> None:
    # "" would read as the current folder, or as the flag left out where its default is
    # taken with `or` (train.py's --run-dir).
    if not text.strip():
        raise argparse.ArgumentTypeError(f"empty {what}")
    if unexpanded_home(text):  # written, it would make a folder named "~" here
        raise argparse.ArgumentTypeError(f"{text}: {TILDE_HINT}")


TILDE_HINT = "'~' is no folder here: the shell expands it only at a word's start (--out ~/x, not --out=~/x)"


def unexpanded_home(text: str) -> bool:
    """Whether ``text`` starts with a ``~`` or ``~user/`` the shell left as it is (after
    ``--flag=``, or quoted), and no such folder exists here (a file ``~draft.json`` is one)."""
    first, separator, _ = text.partition(os.sep)
    return first.startswith("~") and (first == "~" or bool(separator)) and not os.path.lexists(first)


def _unfolded(text: str) -> str:
    """``text`` made absolute without folding ``..`` away: the system follows a symbolic
    link before its ``..``, where ``os.path.abspath`` drops both as text."""
    return os.path.join(os.getcwd(), text)


def creatable(text: str, folder: str, file: bool = False) -> str:
    """``text`` (a ``file`` to write, else a folder) if ``folder`` exists or can be made:
    its nearest existing ancestor is a folder that takes new entries, and no name on the
    way is longer than the filesystem allows."""
    parent = folder
    while not os.path.exists(folder):
        if os.path.islink(folder):  # its name is taken: making the folder would fail after the flags were taken
            raise argparse.ArgumentTypeError(f"cannot create {text}: {folder} is a broken symbolic link "
                                             f"(to {os.readlink(folder)})")
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"cannot create {text}: {folder} is a file")
    _names_fit(text, folder)
    makes_file = file and folder == parent  # else a folder is made first
    try:  # a folder can refuse new entries whatever its mode says (/proc, read-only mounts, root's view of /sys)
        where = os.path.realpath(folder)  # the folder as the system finds it: mkstemp folds "LINK/.." as text
        if makes_file:
            handle, probe = tempfile.mkstemp(dir=where)
            os.close(handle)
        else:
            probe = tempfile.mkdtemp(dir=where)
    except OSError as error:
        if folder == _unfolded(text):
            raise argparse.ArgumentTypeError(f"cannot write into {text} ({error.strerror})") from None
        raise argparse.ArgumentTypeError(f"cannot create {text}: {folder} takes no new "
                                         f"{'files' if makes_file else 'folders'} ({error.strerror})") from None
    with contextlib.suppress(OSError):  # made, so the folder takes entries; one left behind is the probe's only
        (os.unlink if makes_file else os.rmdir)(probe)
    return text


def _names_fit(text: str, existing: str) -> None:
    """ArgumentTypeError where a name in ``text`` is longer than the filesystem of its
    nearest ``existing`` folder takes (found only at the first write, after the work)."""
    try:
        longest = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # no such query here: assume the usual limit
        longest = 255
    try:
        longest_path = os.pathconf(existing, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        longest_path = 4096
    length = len(os.fsencode(_unfolded(text)))
    if 0 < longest_path <= length:  # the limit counts the string's closing zero byte
        shown = text if len(text) <= 60 else f"{text[:40]}...{text[-15:]}"
        raise argparse.ArgumentTypeError(f"cannot create {shown}: the path is {length} bytes long, more than the "
                                         f"{longest_path - 1} a path may have here")
    if longest <= 0:  # the filesystem does not say
        return
    # The names still to be made, as given: abspath would fold "long/.." away, which the
    # write does not.
    names = text.split(os.sep)
    for depth, name in enumerate(names):
        if len(os.fsencode(name)) > longest and not os.path.lexists(os.sep.join(names[: depth + 1])):
            shown = name if len(name) <= 20 else f"{name[:20]}..."
            raise argparse.ArgumentTypeError(f"cannot create {text}: the name {shown} is "
                                             f"{len(os.fsencode(name))} bytes long, more than the {longest} "
                                             f"a name may have here")


def fail(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """Exit 2 with ``prog: error: message``, as argparse does for a bad flag."""
    parser.exit(2, f"{parser.prog}: error: {message}\n")


_INTERRUPTED = False  # a Ctrl-C Python swallowed while run_command ran, noted by its hook
_INTERRUPTED_WHILE_IMPORTING = False  # one swallowed while a module was imported (note_swallowed_interrupts)


def _noting_interrupts(previous: Callable[[Any], None]) -> Callable[[Any], None]:
    """``previous`` (an unraisable hook) that also notes a swallowed Ctrl-C."""
    def noting_interrupts(unraisable) -> None:
        global _INTERRUPTED
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _INTERRUPTED = True
        previous(unraisable)

    return noting_interrupts


def interactive_session() -> bool:
    """IPython, a notebook's kernel or ``python -i``: a session that goes on after a command."""
    return "IPython" in sys.modules or "ipykernel" in sys.modules or hasattr(sys, "ps1") or bool(sys.flags.interactive)


def note_swallowed_interrupts() -> None:
    """From now on, note a Ctrl-C that Python swallows while a module is imported, for the
    next ``run_command`` to end on. ``import jaxdust`` calls it before JAX is imported,
    outside an interactive session: a Ctrl-C pressed while a command imported JAX landed in
    its garbage-collector callback about once in three tries, and the command then ran to its
    end, status 0. One swallowed later, outside an import, is left to ``run_command``'s own
    hook (a test's or a library script's is not held against a later command)."""
    global _importing_hook
    if interactive_session() or _importing_hook is not None:
        return
    previous = sys.unraisablehook

    def noting_imports(unraisable) -> None:
        global _INTERRUPTED_WHILE_IMPORTING
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and _importing():
            _INTERRUPTED_WHILE_IMPORTING = True
        previous(unraisable)

    sys.unraisablehook = _importing_hook = noting_imports


_importing_hook: Callable[[Any], None] | None = None


def _importing() -> bool:
    """Whether a module is being imported in this thread (importlib's frames on the stack)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt where a Ctrl-C was swallowed under ``run_command`` (raised in
    a garbage-collector callback, as JAX's, Python only prints it), once: long loops call it
    between their steps."""
    global _INTERRUPTED
    if _INTERRUPTED:
        _INTERRUPTED = False
        raise KeyboardInterrupt


# Why a disk refused a write mid-run, as errno -> what to do about it. The path a command
# writes is checked when its flags are read: these come later, from the system.
WRITE_REFUSALS = {
    errno.ENOSPC: "make room",
    errno.EDQUOT: "make room",
    errno.EFBIG: "a file-size limit: see ulimit -f",
    errno.EROFS: "a read-only disk; if it was writable when the command started, see the system log",
}


def run_command(main: Callable[[], Any], resumes: str) -> Any:
    """``main()``, ended by Ctrl-C with one line saying what running the command again
    keeps (``resumes``) and exit status 130, rather than a traceback from wherever it was
    (also where JAX wrapped it in another exception, or Python swallowed it: see
    ``raise_if_interrupted``); by a disk that refuses a write (``WRITE_REFUSALS``: full,
    over a size limit, made read-only) with one line too (status 1); and ended
    quietly (status 1) when the reader of its standard output goes away (``| head``), as
    other command-line tools end."""
    global _INTERRUPTED, _INTERRUPTED_WHILE_IMPORTING
    previous_hook = sys.unraisablehook
    sys.unraisablehook = ours = _noting_interrupts(previous_hook)
    try:
        if _INTERRUPTED_WHILE_IMPORTING:  # pressed while the command's modules were imported
            raise KeyboardInterrupt
        return main()
    except KeyboardInterrupt:
        _end_interrupted(resumes)
    except BrokenPipeError:  # before OSError, its base
        if not _stdout_reader_gone():
            raise  # another pipe: a real error
        # Python flushes stdout again at exit, into the same closed pipe: point it at nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None
    except OSError as error:
        if error.errno in WRITE_REFUSALS:
            where = f" writing {error.filename}" if error.filename else ""
            print(f"\nstopped: {error.strerror}{where} ({WRITE_REFUSALS[error.errno]}; {resumes})", file=sys.stderr)
            exit_at_once(1)
        if not _raised_from_interrupt(error):
            raise
        _end_interrupted(resumes)
    except Exception as error:
        if not _raised_from_interrupt(error):  # JAX raises a ValueError from a Ctrl-C met while tracing
            raise
        _end_interrupted(resumes)
    finally:  # in a session that goes on (IPython, a notebook, a test): as it was before
        if sys.unraisablehook is ours:
            sys.unraisablehook = previous_hook
        _INTERRUPTED = _INTERRUPTED_WHILE_IMPORTING = False


def _end_interrupted(resumes: str) -> None:
    print(f"\ninterrupted: {resumes}", file=sys.stderr)
    exit_at_once(130)


def _raised_from_interrupt(error: BaseException | None) -> bool:
    """Whether ``error`` was raised from a KeyboardInterrupt (``raise ... from``), at any
    depth; not one merely raised while handling one (a real error in clean-up code)."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__
    return False


def exit_at_once(status: int) -> NoReturn:
    """End the process with ``status`` after flushing its output, skipping the interpreter's
    shutdown: Ctrl-C can stop the main thread while XLA compiles on a thread of its own,
    and a shutdown then frees the client under that compile (a segmentation fault, status
    139). What the commands write survives a kill at any moment, and the ``finally``
    blocks between the interrupt and here have run. In an interactive session (IPython, a
    notebook's kernel, ``python -i``), which must go on, it raises SystemExit instead."""
    if interactive_session():
        raise SystemExit(status)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a stream closed or gone: nothing to keep
            stream.flush()
    # multiprocessing's semaphores are unlinked by finalizers at exit: without them its
    # resource tracker reports them as leaked after the one line.
    run_finalizers = getattr(sys.modules.get("multiprocessing.util"), "_run_finalizers", None)
    if run_finalizers is not None:
        with contextlib.suppress(Exception):
            run_finalizers(0)
    os._exit(status)


def _stdout_reader_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (poll says so on Linux
    and macOS; elsewhere, or for a stdout that is not a file, assumed)."""
    try:
        descriptor = sys.stdout.fileno()
        poller = select.poll()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return True
    poller.register(descriptor, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def note_short_limit(limit: int | None, count: int, source: str, flag: str = "--limit",
                     done: str = "played") -> None:
    """Say on stderr that ``flag`` asked for more boards than ``source`` gave: all
    ``count`` are ``done``, which a typo (``--limit 10000`` for 1000) would otherwise hide."""
    if limit is not None and count < limit:
        print(f"note: {flag} {limit} is more than the {count} board{'s' if count != 1 else ''} of {source}; "
              f"all are {done}", file=sys.stderr)
