"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import codecs
import contextlib
import errno
import hashlib
import json
import math
import os
import re
import stat
import sys
import tempfile
from typing import Any, BinaryIO, Callable, Iterator


TEMPORARY_PREFIX = ".tmp-"


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it, then rename it over."""
    atomic_write(path, lambda file: file.write(data))


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], Any]) -> None:
    """``write(file)`` into a temporary file beside ``path``, fsync it, then rename it over
    (for data too large to hold twice in memory, e.g. ``numpy.savez`` of big arrays). As a
    plain ``open(path, "w")`` would, it writes through a symbolic link and keeps an
    existing file's mode. A path that is there but is not a regular file (a FIFO, which
    waits for its reader as a plain open does; a device), one under ``/proc``, or the name
    of an open descriptor (``/dev/stdout`` redirected to a log, which a rename would
    replace), is appended to instead. A regular file elsewhere under ``/dev``
    (``/dev/shm``, a memory disk) is replaced as any other. An OSError of the write names
    ``path``, not the temporary file or nothing (a full disk's write names no file)."""
    with errors_named(path):
        _atomic_write(path, write)


@contextlib.contextmanager
def errors_named(path: str | os.PathLike):
    """An OSError raised inside that names no file (a write's or a flush's, as a full disk
    raises it) or names a temporary file of ``atomic_write``'s names ``path``: the message
    a command ends with then says which file could not be written."""
    try:
        yield
    except OSError as error:  # one the system raised (errno set), not a message of the caller's own
        if error.errno is not None and (error.filename is None
                                        or os.path.basename(str(error.filename)).startswith(TEMPORARY_PREFIX)):
            error.filename = os.fspath(path)
            del error.filename2  # unset, not None: the message would end "-> None"
        raise


def _atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], Any]) -> None:
    try:
        kind = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        kind = None
    if kind is not None and stat.S_ISDIR(kind):  # else the rename's error would name the temporary file
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    special = kind is not None and not stat.S_ISREG(kind)
    if special or (kind is not None and (os.path.abspath(path).startswith("/proc/") or _names_a_descriptor(path))):
        with open(path, "ab") as file:  # "wb" would truncate a log that standard output is redirected to
            write(file)
        return
    path = os.path.realpath(os.fspath(path))
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=TEMPORARY_PREFIX, suffix=_temporary_suffix(path))
    try:
        with os.fdopen(handle, "wb") as file:  # closed whatever fails from here
            try:
                mode = stat.S_IMODE(os.stat(path).st_mode)
            except FileNotFoundError:
                mode = 0o666 & ~current_umask()  # mkstemp makes 0600; match a plain open()
            with contextlib.suppress(PermissionError):  # a filesystem without modes (FAT) refuses it, as open() would not
                os.chmod(temporary, mode)
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    _sync_directory(directory)  # the rename itself survives a power cut


def _names_a_descriptor(path: str | os.PathLike) -> bool:
    """Whether ``path`` names an open file descriptor (``/dev/stdout``, ``/dev/fd/N``,
    ``/proc/PID/fd/N``), itself or through symbolic links: the file it stands for stats as
    a regular file when standard output is redirected to one."""
    name = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links followed
        if re.fullmatch(r"/dev/std(in|out|err)|/dev/fd/\d+|/proc/[^/]+/fd/\d+", name):
            return True
        if not os.path.islink(name):
            return False
        name = os.path.normpath(os.path.join(os.path.dirname(name), os.readlink(name)))
    return False


def _sync_directory(directory: str) -> None:
    try:
        descriptor = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # a platform that cannot open folders (Windows)
        return
    try:
        os.fsync(descriptor)
    except OSError:  # some filesystems refuse fsync on a folder
        pass
    finally:
        os.close(descriptor)


def current_umask() -> int:
    """The process's umask, for files and folders made private by ``tempfile`` to get the
    modes a plain one would. Read from /proc where it can be: elsewhere reading it means
    setting it (to 0, at once set back), a moment in which another thread's new files
    would be open to all."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0)
    os.umask(mask)
    return mask


LOCK_FILE = ".lock"


def lock_directory(directory: str | os.PathLike, timeout: float = 0):
    """The ``filelock.FileLock`` on ``directory``'s ``LOCK_FILE``, taken (the directory is
    made if need be) within ``timeout`` seconds, or None when another process holds it. The
    OS lets go of it when the holder ends, however it ends; ``release()`` lets go before."""
    import filelock  # a dependency, imported where a command writes a folder

    os.makedirs(directory, exist_ok=True)
    lock = filelock.FileLock(os.path.join(directory, LOCK_FILE), timeout=timeout)
    try:
        lock.acquire()
    except filelock.Timeout:
        return None
    return lock


def held_by_another(directory: str | os.PathLike) -> bool:
    """Whether ``directory``'s lock (``lock_directory``) is held now, by another process or
    by this one (a lock is held per open file, not per process); False where there is no
    lock file or it cannot be opened. It takes the lock for an instant: a
    writer that may start then waits a moment for it (``lock_directory``'s ``timeout``)."""
    if not os.path.isfile(os.path.join(directory, LOCK_FILE)):
        return False
    try:
        lock = lock_directory(directory)
    except OSError:  # a read-only copy, say: nobody writes there
        return False
    if lock is None:
        return True
    lock.release()
    return False


def open_to_append_alone(path: str | os.PathLike):
    """``path`` opened to append text (made if missing), holding an exclusive ``flock`` on
    the file itself, or None when another process holds one: two writers of one JSON-lines
    file would each resume the same records, and one could cut the line the other is
    writing (``recover_json_lines``). The OS lets go when the handle is closed or the
    process ends, however it ends; no lock file is left behind. A pipe or a device
    (``is_stream``) is not locked: nothing reads it back to resume."""
    import fcntl

    handle = open(path, "a")
    if is_stream(path):
        return handle
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def _temporary_suffix(path: str) -> str:
    """The end of ``atomic_write``'s temporary names for ``path``: a digest of the whole name,
    then its last 48 bytes only, as a temporary name must fit the same 255 bytes as the file's
    own (a cut through a character decodes as surrogates, which encode back). The digest
    tells apart two long names that end alike: each file's leftovers are its own."""
    name = os.fsencode(os.path.basename(path))
    return f"-{hashlib.sha256(name).hexdigest()[:12]}-{os.fsdecode(name[-48:])}"


def remove_leftover_temporaries_of(path: str | os.PathLike) -> None:
    """Delete the temporary files that ``atomic_write`` of ``path`` left, killed while
    writing: those of this one file (the folder may hold other writers'). Call it only where
    this process is the file's one writer."""
    path = os.path.realpath(os.fspath(path))
    # mkstemp's names: the prefix, 8 random characters, the suffix (up to 0.2.85 the name's
    # last 64 bytes alone: a leftover of a write killed then is as large as a solver's table)
    suffixes = (_temporary_suffix(path), os.fsdecode(os.fsencode(os.path.basename(path))[-64:]))
    _remove_temporaries(os.path.dirname(path), lambda name: any(
        name.endswith(suffix) and len(name) == len(TEMPORARY_PREFIX) + 8 + len(suffix) for suffix in suffixes))


def remove_leftover_temporaries(directory: str | os.PathLike, of: str | None = None) -> None:
    """Delete the temporary files of atomic writes that a killed process left in ``directory``:
    every one, or with ``of`` (a regular expression that the written files' names, of at
    most 48 bytes, match whole) only theirs, where the folder is the user's and may hold
    files of their own named alike.

    Call it only where this process is the one writer of ``directory`` (a resumed run),
    since another writer's temporary file is in use.
    """
    if of is None:
        _remove_temporaries(os.fspath(directory), lambda name: True)
        return
    # mkstemp's names: the prefix, 8 random characters, then the digest and the name (the
    # name alone up to 0.2.85).
    written = re.compile(f"{re.escape(TEMPORARY_PREFIX)}[a-z0-9_]{{8}}(-[0-9a-f]{{12}}-)?(?:{of})", re.ASCII)
    _remove_temporaries(os.fspath(directory), lambda name: written.fullmatch(name) is not None)


def _remove_temporaries(directory: str, chosen: Callable[[str], bool]) -> None:
    """Unlink the ``atomic_write`` temporaries in ``directory`` whose names ``chosen`` keeps:
    files only (a folder or a link named alike is not one)."""
    with contextlib.suppress(FileNotFoundError), os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.startswith(TEMPORARY_PREFIX) and entry.is_file(follow_symlinks=False) and chosen(entry.name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)


def npz_claimed_bytes(source) -> int:
    """The bytes the arrays of an ``.npz`` archive (a path or a binary file) say they hold,
    read from their headers alone: ``np.load`` allocates that much before reading any data.
    ValueError where a header cannot be read; a damaged archive raises zipfile's and
    zlib's errors (``BadZipFile``, ``zlib.error``, ``RuntimeError``, ``NotImplementedError``)."""
    import zipfile

    import numpy as np

    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    total = 0
    with zipfile.ZipFile(source) as archive:
        for member in archive.infolist():
            with archive.open(member) as handle:
                version = np.lib.format.read_magic(handle)
                if version not in readers:
                    raise ValueError(f"{member.filename}: .npy format {version} is not read here")
                shape, _, dtype = readers[version](handle)
            total += math.prod(shape) * dtype.itemsize
    return total


# A record's list of the jaxdust versions that wrote to what it describes (a run's
# config.json, a data set's manifest.json), oldest first; VERSIONS_UNRECORDED stands for
# those of a record written before they were kept.
VERSIONS_KEY = "jaxdust_versions"
VERSIONS_UNRECORDED = "<0.2.92"


def with_version(versions: Any, version: str, earlier: bool) -> list[str]:
    """``versions`` (a record's ``VERSIONS_KEY``: a list of version strings) with
    ``version`` appended unless it is the last. ``earlier``: the record was written before
    (a resume), so a record without the key, from before 0.2.92, begins with
    ``VERSIONS_UNRECORDED``."""
    if isinstance(versions, list):
        kept = [name for name in versions if isinstance(name, str)]
    else:
        kept = [VERSIONS_UNRECORDED] if earlier else []
    return kept if kept[-1:] == [version] else [*kept, version]


def atomic_write_json(path: str | os.PathLike, value: Any) -> None:
    """``json_bytes(value)`` to ``path``."""
    atomic_write_bytes(path, json_bytes(value))


def json_bytes(value: Any) -> bytes:
    """``value`` as the project's JSON files hold it: strict JSON (``strict_json``), indented,
    keys sorted, a newline at the end."""
    return (json.dumps(strict_json(value), indent=2, sort_keys=True, allow_nan=False) + "\n").encode()


def strict_json(value: Any) -> Any:
    """``value`` with every NaN or infinite float (a standard error over one board) as None.
    Python's ``json`` writes them as ``NaN`` and ``Infinity``, which JSON does not have:
    strict readers (a browser's ``JSON.parse``, Rust's ``serde_json``) refuse the whole
    file. Readers of the project's files take None where a float may be undefined."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    return value


def short_file_name(name: str, limit: int = 120) -> str:
    """``name`` where it fits in ``limit`` bytes, else its start and a hash of the whole
    (still one name per ``name``): file systems refuse names over 255 bytes, and an agent's
    name holds its run's path, which can be longer."""
    data = name.encode()
    if len(data) <= limit:
        return name
    digest = hashlib.sha256(data).hexdigest()[:16]
    return data[: limit - len(digest) - 1].decode(errors="ignore") + "-" + digest


def read_text(path: str, what: str = "file") -> str:
    """A text file's contents (``-``: standard input).

    Raises:
      ValueError: naming the file when it cannot be read or is not UTF-8 text.
    """
    name = "standard input" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as handle:
                data = handle.read()
        text = data.decode("utf-8-sig")  # a byte-order mark (Notepad's, PowerShell's) is not text
    except UnicodeDecodeError as error:
        offset = error.start + (len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0)  # counted past the mark
        line = data.count(b"\n", 0, offset) + 1
        raise ValueError(f"{what} {name} is not UTF-8 text (line {line}: byte {offset} is "
                         f"{data[offset]:#04x}){_what_it_is(data)}") from None
    except OSError as error:
        raise ValueError(f"cannot read {what} {name}: {error.strerror}") from None
    if "\x00" in text and (looks := _what_it_is(data)):  # UTF-16 without a byte-order mark decodes, NULs and all
        raise ValueError(f"{what} {name} is not UTF-8 text{looks}")
    return text


def _what_it_is(data: bytes) -> str:
    """What a file that is not UTF-8 text looks like, for its error: the usual causes."""
    if data.startswith(b"\x1f\x8b"):
        return "; it is gzip-compressed: decompress it first (gunzip)"
    # UTF-16 puts a NUL beside each ASCII character, UTF-32 three; UTF-32's byte-order mark
    # begins as UTF-16's does.
    quarters = [data[start:200:4] for start in range(4)]
    if (data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE))
            or sum(quarter.count(0) > len(quarter) // 2 for quarter in quarters) >= 3):
        return "; it looks like UTF-32: save it as UTF-8"
    halves = data[:200:2], data[1:200:2]
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or any(half.count(0) > len(half) // 2
                                                                           for half in halves):
        return "; it looks like UTF-16 (Notepad's 'Unicode', PowerShell 5's >): save it as UTF-8"
    return ""


def read_lines(path: str, what: str = "file") -> list[str]:
    """A text file's lines (``read_text``), ended by ``\\n``, ``\\r\\n`` or ``\\r`` only:
    ``str.splitlines`` also ends a line at a form feed or a Unicode line separator inside a
    comment, which would number every later line wrong."""
    lines = re.split(r"\r\n|\r|\n", read_text(path, what))
    if lines[-1] == "":
        lines.pop()
    return lines


def is_stream(path: str | os.PathLike) -> bool:
    """Whether ``path`` is written to and never read back: a pipe, a socket, a character
    device (a terminal, ``/dev/null``) or the name of a descriptor (``/dev/stdout``), even
    one redirected to a regular file (a log holds what else was printed, not a run to resume)."""
    mode = os.stat(path).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode) or _names_a_descriptor(path)


def recover_json_lines(path: str | os.PathLike, repair: bool = True,
                       check: Callable[[list], None] | None = None) -> list:
    """The records (JSON objects, one per line) of a file written by appending, *repairing
    the file* (unless ``repair`` is False: e.g. a second process that only reads): a torn
    last line (a process killed mid-write: the start of an object, no newline at its end)
    is cut off it, so appending can continue cleanly, as is a tail of blank lines or zero
    bytes after the last record; a whole object without its newline
    (no prefix of an object parses but the object itself), or with zero bytes where its
    newline was, is kept and the newline added.
    A missing file reads as no records, and so does, to a writer's resume (``repair``), a
    pipe, a terminal or a device (``/dev/stdout``): it holds nothing to resume, and reading
    it would wait for ever.

    ``check(records)`` is called before any repair and raises to refuse a file: a writer
    asked to extend another program's JSON lines refuses it whole, where a repair would
    first have cut its last line.

    Raises:
      ValueError: when any other line is not a JSON object (the file was not written by
        appending records, e.g. a board file given as ``--out``); nothing is cut.
    """
    records: list = []
    records.extend(iter_json_lines(path, repair, read=None if check is None else lambda: check(records)))
    return records


_BLANK = b" \t\r\n\x00"


def iter_json_lines(path: str | os.PathLike, repair: bool = True,
                    read: Callable[[], None] | None = None) -> Iterator[dict]:
    """``recover_json_lines`` one record at a time, for files too large to hold as records
    (a data set's journal of 10^7 boards); the repair is made once the last record has been
    read, so a caller that stops early changes nothing. ``read()`` is called then, before
    the repair: where it raises, nothing is repaired."""
    if not os.path.exists(path) or (repair and is_stream(path)):
        if read is not None:
            read()
        return
    keep, last, cut = 0, b"", False
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            record = _loads(line)
            whole = line.rstrip(_BLANK)
            if record is None and whole != line and isinstance(last_record := _loads(whole), dict) \
                    and _blank_from_here(line[len(whole):], handle):
                # a whole record whose newline a power cut left among the zero bytes after it
                yield last_record
                keep, last, cut = keep + len(whole), whole, True
                break
            # torn, or a tail of blanks or zero bytes, as a power cut after an append can leave
            cut = (not line.endswith(b"\n") and line.startswith(b"{") and not isinstance(record, dict)
                   or record is None and _blank_from_here(line, handle))
            if cut:
                break
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number} is not a JSON record; is it a file this program "
                                 "wrote? (nothing was changed)")
            yield record
            keep += len(line)
            last = line
    if read is not None:
        read()
    if repair and cut:  # (not a size read now: a line another process appended since is no tail)
        with open(path, "r+b") as handle:
            handle.truncate(keep)
    if repair and last and not last.endswith(b"\n"):  # a whole last record: appending goes on a new line
        with open(path, "ab") as handle:
            handle.write(b"\n")


def _loads(line: bytes) -> Any:
    """A line's JSON value, or None where it does not parse."""
    try:
        return json.loads(line)
    except ValueError:
        return None


def _blank_from_here(line: bytes, handle: BinaryIO) -> bool:
    """Whether ``line`` and the rest of ``handle`` are blanks and zero bytes (read in pieces)."""
    if line.strip(_BLANK):
        return False
    return not any(piece.strip(_BLANK) for piece in iter(lambda: handle.read(1 << 20), b""))
