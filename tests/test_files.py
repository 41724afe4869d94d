"""``jaxdust.core.files``: an atomic write behaves as a plain ``open(path, "w")`` would."""

import os

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
    import argparse
    import stat
    import threading

    from jaxdust.core import flags

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert flags.output_file(str(fifo)) == str(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    files.atomic_write_bytes(fifo, b"lines\n")
    reader.join(timeout=30)
    assert got == [b"lines\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    kept = tmp_path / "kept.txt"
    kept.write_text("mine")
    os.chmod(kept, 0o444)
    if not os.access(kept, os.W_OK):  # root may write anyway
        try:
            flags.output_file(str(kept))
        except argparse.ArgumentTypeError as error:
            assert str(error) == f"{kept} is not writable"
        else:
            raise AssertionError("a read-only --out was taken (the solver's append then failed after its work)")
