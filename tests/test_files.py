"""``jaxdust.core.files``: an atomic write behaves as a plain ``open(path, "w")`` would."""

import json
import os
import tempfile

import pytest

from jaxdust.core import files


def test_an_atomic_write_keeps_an_existing_files_mode(tmp_path):
    path = tmp_path / "private.json"
    path.write_text("{}")
    os.chmod(path, 0o600)  # it had become the umask's 0644
    files.atomic_write_json(path, {"a": 1})
    assert path.stat().st_mode & 0o777 == 0o600 and path.read_text().startswith("{")


def test_a_new_file_gets_the_umasks_mode(tmp_path):
    previous = os.umask(0o027)
    try:
        assert files.current_umask() == 0o027
        files.atomic_write_bytes(tmp_path / "new", b"x")
    finally:
        os.umask(previous)
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o640


def test_an_atomic_write_goes_through_a_symbolic_link(tmp_path):
    """The link was replaced by a file, its target left with the old data."""
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    files.atomic_write_bytes(link, b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"


def test_an_atomic_write_takes_a_name_as_long_as_a_plain_open_does(tmp_path):
    """The temporary name held the whole name: past ~240 bytes it was too long."""
    for name in ("x" * 250, "\U0001F600" * 63):  # 250 bytes; 252 bytes in 63 characters
        files.atomic_write_bytes(tmp_path / name, b"data")
        assert (tmp_path / name).read_bytes() == b"data"
    assert sorted(os.listdir(tmp_path)) == sorted(["x" * 250, "\U0001F600" * 63])


def test_a_fifo_is_written_into_not_replaced(tmp_path):
    """A rename put a regular file in the FIFO's place (as root, ``--board-file /dev/null``
    would have replaced the system's), and its reader got nothing."""
    import stat
    import threading

    from jaxdust.core import flags

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert flags.output_file(str(fifo)) == str(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    try:
        files.atomic_write_bytes(fifo, b"lines\n")
        reader.join(timeout=30)
        assert got == [b"lines\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    finally:
        if reader.is_alive() and stat.S_ISFIFO(os.stat(fifo).st_mode):  # a reader still waiting: let it go
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def test_a_read_only_output_is_refused_with_the_flags(tmp_path, monkeypatch):
    """The solver's append failed after all its work; root may write anyway, so the
    file's refusal is what os.access says of it."""
    import argparse

    from jaxdust.core import flags

    kept = tmp_path / "kept.txt"
    kept.write_text("mine")
    real_access = os.access
    monkeypatch.setattr(flags.os, "access", lambda path, mode: path != str(kept) and real_access(path, mode))
    try:
        flags.output_file(str(kept))
    except argparse.ArgumentTypeError as error:
        assert str(error) == f"{kept} is not writable"
    else:
        raise AssertionError("a read-only --out was taken")
    monkeypatch.undo()
    assert flags.output_file(str(kept)) == str(kept)


def test_standard_output_redirected_to_a_log_is_appended_to_not_replaced(tmp_path):
    """/dev/stdout redirected to a file stats as a regular file: a rename replaced the log
    with the one write, and everything printed before and after it was lost."""
    import subprocess
    import sys

    log = tmp_path / "log.txt"
    log.write_text("earlier\n")
    script = ("from jaxdust.core import files; print('before'); files.atomic_write_bytes('/dev/stdout', b'JSON\\n');"
              " print('after')")
    with open(log, "ab") as handle:
        subprocess.run([sys.executable, "-u", "-c", script], stdout=handle, check=True, timeout=120,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert log.read_text().splitlines() == ["earlier", "before", "JSON", "after"]


@pytest.mark.skipif(not os.access("/dev/shm", os.W_OK), reason="needs a writable /dev/shm")
def test_a_regular_file_on_a_memory_disk_under_dev_is_replaced_not_appended_to(tmp_path):
    """Only names of descriptors (/dev/stdout, /dev/fd/N, through links too) are streams:
    a manifest rewritten in /dev/shm had the new JSON appended after the old."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(dir="/dev/shm")
    try:
        path = os.path.join(folder, "manifest.json")
        files.atomic_write_json(path, {"shards": 1})
        files.atomic_write_json(path, {"shards": 2})
        with open(path) as handle:
            assert json.load(handle) == {"shards": 2}
    finally:
        shutil.rmtree(folder)
    (tmp_path / "out").symlink_to("/dev/stdout")
    assert files._names_a_descriptor(tmp_path / "out") and files._names_a_descriptor("/dev/fd/1")
    assert not files._names_a_descriptor(tmp_path / "log") and not files._names_a_descriptor("/dev/shm/x")


def test_an_existing_folder_that_takes_no_files_is_named_as_the_one_written_into(tmp_path, monkeypatch):
    """A run being resumed on a read-only disk: the folder exists, so it is not "created"."""
    import argparse
    import errno

    from jaxdust.core import flags

    run = tmp_path / "run"
    run.mkdir()

    def read_only(dir=None):
        raise OSError(errno.EROFS, "Read-only file system")

    # Its mode allows writing, as root's view of /sys does: only trying finds it out.
    monkeypatch.setattr(flags.os, "access", lambda path, mode: True)
    monkeypatch.setattr(flags.tempfile, "mkdtemp", read_only)
    monkeypatch.setattr(flags.tempfile, "mkstemp", read_only)
    for check, folder, said in (
            (flags.output_dir, run, f"cannot write into {run} (Read-only file system)"),
            (flags.output_dir, run / "new", f"cannot create {run / 'new'}: {run} takes no new folders"),
            (flags.output_file, run / "x.json", f"cannot create {run / 'x.json'}: {run} takes no new files"),
            (flags.output_file, run / "new" / "x.json", f"cannot create {run / 'new' / 'x.json'}: {run} takes no new "
                                                        "folders")):
        try:
            check(str(folder))
        except argparse.ArgumentTypeError as error:
            assert str(error).startswith(said), str(error)
        else:
            raise AssertionError("a read-only folder was taken")


def test_an_output_path_is_checked_where_the_system_will_write_it(tmp_path, monkeypatch):
    """``LINK/..`` is the link's target's parent to the system, where the check folded it
    away as text (the write then failed in a traceback, after the flags were taken); a path
    over the system's length failed there too; a ``~`` the shell left (``--out=~/x``) made a
    folder named ``~``."""
    import argparse

    from jaxdust.core import flags

    (tmp_path / "link").symlink_to("/proc/self")  # /proc/self/.. is /proc, which takes no new folders
    monkeypatch.chdir(tmp_path)
    deep = "/".join(["d" * 200] * 21)  # each name fits, the whole does not
    for check, text, said in (
            (flags.output_dir, "link/../new", "cannot create link/../new: "),
            (flags.output_file, "link/../x.json", "cannot create link/../x.json: "),
            (flags.output_dir, deep, "bytes long, more than the 4095 a path may have here"),
            (flags.output_file, f"{deep}/x.json", "a path may have here"),
            (flags.output_dir, "~/out", "~/out: '~' is no folder here: the shell expands it only at a word's start"),
            (flags.output_file, "~nobody-here/x.json", "'~' is no folder here"),
            (flags.input_file, "~/boards.txt", "'~' is no folder here")):
        with pytest.raises(argparse.ArgumentTypeError, match=".") as refused:
            check(text)
        assert said in str(refused.value), str(refused.value)
    assert os.listdir(tmp_path) == ["link"]
    assert flags.output_file("~draft.json") == "~draft.json"  # a file's own name
    (tmp_path / "~").mkdir()  # a folder so named is taken as such
    assert flags.output_dir("~/out") == "~/out"


def test_a_json_lines_check_sees_the_records_before_any_repair(tmp_path):
    """``recover_json_lines(check=...)``: a refused file keeps its torn last line; a missing
    file is no records, as without a check (os.stat raised FileNotFoundError)."""
    from jaxdust.core import files

    seen = []
    assert files.recover_json_lines(tmp_path / "missing.jsonl", check=seen.append) == [] and seen == [[]]
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(b'{"a": 1}\n{"a": 2')

    def refuse(records):
        seen.append(records)
        raise ValueError("not mine")

    with pytest.raises(ValueError, match="not mine"):
        files.recover_json_lines(torn, check=refuse)
    assert seen[-1] == [{"a": 1}] and torn.read_bytes() == b'{"a": 1}\n{"a": 2'
    assert files.recover_json_lines(torn, check=seen.append) == [{"a": 1}] and torn.read_bytes() == b'{"a": 1}\n'


def test_a_broken_symbolic_link_on_the_way_is_refused_where_it_is_given(tmp_path):
    """Taken as a folder to make, then ``os.makedirs`` raised FileExistsError (a traceback)
    once the flags were taken: ``train.py --run-dir``, ``evaluate.py --out``."""
    import argparse

    from jaxdust.core import flags

    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "gone")
    for check, path in ((flags.output_dir, dangling), (flags.output_dir, dangling / "run"),
                        (flags.output_file, dangling / "x.json")):
        with pytest.raises(argparse.ArgumentTypeError, match=f"cannot create {path}: {dangling} is a broken "
                                                              f"symbolic link \\(to {tmp_path / 'gone'}\\)"):
            check(str(path))
    assert flags.output_file(str(dangling)) == str(dangling)  # written through: the link's target is made


def test_a_name_longer_than_the_filesystem_takes_is_refused_where_it_is_given(tmp_path, monkeypatch):
    """Refused before the work (the write would fail after it), also behind a ``..`` that
    abspath folds away, and not at all where the filesystem gives no limit."""
    import argparse

    from jaxdust.core import flags

    long = "w" * 300
    for given in (str(tmp_path / long / "out.json"), str(tmp_path / long / ".." / "out.json")):
        try:
            flags.output_file(given)
        except argparse.ArgumentTypeError as error:
            assert "300 bytes long" in str(error)
        else:
            raise AssertionError(f"{given} was taken")
    assert flags.output_file(str(tmp_path / ("w" * 200))) == str(tmp_path / ("w" * 200))
    # A name may have 12 bytes, not 13.
    monkeypatch.setattr(flags.os, "pathconf", lambda path, name: 12 if name == "PC_NAME_MAX" else 4096)
    assert flags.output_file(str(tmp_path / ("w" * 12))) == str(tmp_path / ("w" * 12))
    try:
        flags.output_file(str(tmp_path / ("w" * 13)))
    except argparse.ArgumentTypeError as error:
        assert "13 bytes long, more than the 12" in str(error)
    else:
        raise AssertionError("a name of 13 bytes was taken where 12 is the most")
    monkeypatch.setattr(flags.os, "pathconf", lambda path, name: -1)  # no limit known
    assert flags.output_file(str(tmp_path / long)) == str(tmp_path / long)


def _strict(text: str):
    """``text`` parsed as JSON proper: ``NaN`` and ``Infinity`` refused, as strict readers do."""
    import json

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_json_files_are_strict_json_with_undefined_figures_as_null(tmp_path):
    import numpy as np

    path = tmp_path / "report.json"
    value = {"se": float("nan"), "rows": [{"mean": np.float64("inf"), "n": 1}, (float("-inf"), 2.5)], "ok": 1.0}
    files.atomic_write_json(path, value)
    assert _strict(path.read_text()) == {"se": None, "rows": [{"mean": None, "n": 1}, [None, 2.5]], "ok": 1.0}
    assert value["se"] != value["se"]  # the caller's value is left as it was


def test_leftovers_of_one_long_name_are_not_those_of_another_that_ends_alike(tmp_path):
    """The temporary names kept only a name's last 64 bytes: cleaning up one solve's
    checkpoint deleted the temporary another solve in the same folder was writing."""
    tail = "x" * 64 + ".npz"
    mine, theirs = tmp_path / f"A-{tail}", tmp_path / f"B-{tail}"
    for path in (mine, theirs):
        handle, _ = tempfile.mkstemp(dir=tmp_path, prefix=files.TEMPORARY_PREFIX,
                                     suffix=files._temporary_suffix(str(path)))
        os.close(handle)
    files.remove_leftover_temporaries_of(mine)
    left = os.listdir(tmp_path)
    assert len(left) == 1 and left[0].endswith(files._temporary_suffix(str(theirs)))
    # A leftover named as 0.2.85 and before named them (the name's last 64 bytes) is removed too.
    old = tmp_path / f"{files.TEMPORARY_PREFIX}abcdefgh{os.fsdecode(os.fsencode(mine.name)[-64:])}"
    old.write_bytes(b"a table")
    files.remove_leftover_temporaries_of(mine)
    assert not old.exists() and os.listdir(tmp_path) == left
    assert all(len(os.fsencode(files._temporary_suffix(str(tmp_path / name)))) <= 64
               for name in ("x" * 250, "\U0001F600" * 63))


def test_a_filesystem_that_refuses_modes_still_takes_the_write_and_no_descriptor_is_left(tmp_path, monkeypatch):
    """A refused chmod (a FAT disk) failed the write, which a plain open() would not, and
    left the temporary file's descriptor open."""
    import errno

    def refused(*args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "chmod", refused)
    files.atomic_write_bytes(tmp_path / "out", b"data")
    assert (tmp_path / "out").read_bytes() == b"data"
    assert len(os.listdir("/proc/self/fd")) == before and os.listdir(tmp_path) == ["out"]


def test_a_folder_in_the_way_is_named_not_the_temporary_file(tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(IsADirectoryError) as error:
        files.atomic_write_bytes(tmp_path / "taken", b"data")
    assert error.value.filename == str(tmp_path / "taken") and os.listdir(tmp_path) == ["taken"]


def test_a_refused_write_names_the_file_not_the_temporary_one_or_none(tmp_path, monkeypatch):
    """A read-only disk's error named atomic_write's temporary file, and a full disk's (which
    a write raises) named no file: a command's last line then said which file nowhere."""
    target = tmp_path / "kept.json"
    target.write_bytes(b"old")

    def read_only(*args, dir, prefix, suffix):
        raise OSError(30, "Read-only file system", os.path.join(dir, prefix + "abc" + suffix))

    def full(file):
        raise OSError(28, "No space left on device")

    def renamed_refused(source, destination):
        raise OSError(13, "Permission denied", source, destination)

    for patch, write in ((("tempfile.mkstemp", read_only), lambda file: None), (None, full),
                         (("os.replace", renamed_refused), lambda file: file.write(b"new"))):
        with monkeypatch.context() as patched:
            if patch:
                patched.setattr(*patch)
            with pytest.raises(OSError) as error:
                files.atomic_write(target, write)
        assert (error.value.filename, error.value.filename2) == (str(target), None)
        assert str(error.value).endswith(f": {str(target)!r}")  # not "-> None"
        assert os.listdir(tmp_path) == ["kept.json"] and target.read_bytes() == b"old"
    with pytest.raises(FileNotFoundError) as error:  # a file of its own that the write reads is named as it was
        files.atomic_write(target, lambda file: open(tmp_path / "missing"))
    assert error.value.filename == str(tmp_path / "missing")

    def own_message(file):
        raise OSError("the source's checksum did not match")

    with pytest.raises(OSError) as error:  # no system error: its message is the caller's, kept whole
        files.atomic_write(target, own_message)
    assert str(error.value) == "the source's checksum did not match" and error.value.filename is None


def test_a_bad_byte_after_a_byte_order_mark_is_placed_from_the_files_start(tmp_path):
    path = tmp_path / "marked.txt"
    path.write_bytes(b"\xef\xbb\xbfab\ncd\xff\n")
    with pytest.raises(ValueError, match=r"line 2: byte 8 is 0xff"):
        files.read_text(str(path))
