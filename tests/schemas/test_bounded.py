"""The one reader of small hostile files: a FIFO, a device, a link not to follow and a file over the cap are
refused by their shape, at once and without reading on; a regular file is read whole."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from schemas.bounded import NotReadable, TooLarge, read_bounded, read_or_refuse


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 100)
    assert read_bounded(tmp_path / "f", 100) == b"x" * 100


def test_over_the_cap_is_refused_with_its_size(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 101)
    with pytest.raises(TooLarge) as info:
        read_bounded(tmp_path / "f", 100)
    assert info.value.size == 101 and "101 bytes, larger than 100" in str(info.value)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")  # no writer ever comes: a blocking open or read would hang the test
    with pytest.raises(NotReadable, match="not a regular file"):
        read_bounded(tmp_path / "fifo", 100)


def test_a_device_is_refused() -> None:
    with pytest.raises(NotReadable, match="not a regular file"):
        read_bounded("/dev/zero", 100)


def test_a_link_is_followed_only_when_asked(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    assert read_bounded(tmp_path / "link", 100) == b"data"
    with pytest.raises(NotReadable, match=r"a symbolic link \(to .*\), not a regular file; not followed"):
        read_bounded(tmp_path / "link", 100, follow_links=False)


def test_what_cannot_be_opened_is_the_callers_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "missing", 100)


class Refused(Exception):
    pass


@pytest.mark.parametrize("make, says", [
    (lambda d: (d / "f").write_bytes(b"x" * 101), "f: 101 bytes, larger than any proof (100)"),
    (lambda d: os.mkfifo(d / "f"), "f: not a regular file; not a proof"),
    (lambda d: None, "f: cannot be read (No such file or directory)"),
])
def test_each_refusal_is_one_line_of_the_callers_error(tmp_path: Path, make, says: str) -> None:
    make(tmp_path)
    with pytest.raises(Refused) as info:
        read_or_refuse(tmp_path / "f", 100, "a proof", Refused, name="f")
    assert str(info.value) == says
