"""Small input files read as hostile: a proof, a checkpoint, a manifest, a key file or a check report handed over
by someone else. Judged on what was opened, not on the name (which may change in between); opened without waiting
(a FIFO would block the open until a writer comes) and read only when it is a regular file (a FIFO or a device
would block the read or never end); never more than the cap plus one byte."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class NotReadable(Exception):
    """Why a small file was refused for its shape, in words that follow its name ("not a regular file"); an
    OSError (no such file, no permission) is the caller's to phrase."""


class TooLarge(NotReadable):
    """Larger than the cap: `size` is the file's size as far as it is known (at least the cap plus one)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size:,} bytes, larger than {limit:,}")
        self.size = size


def read_bounded(path: str | os.PathLike[str], limit: int, *, follow_links: bool = True) -> bytes:
    """The bytes of the regular file at `path`, at most `limit`; NotReadable (TooLarge) otherwise, OSError when it
    cannot be opened or read. With follow_links=False a symbolic link is refused, not followed (it could point
    anywhere: /dev/zero, a FIFO, a file outside the archive)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links and os.path.islink(path):
            raise NotReadable(f"a symbolic link (to {os.readlink(path)!r}), not a regular file; not followed") \
                from None
        raise
    with os.fdopen(fd, "rb") as fo:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotReadable("not a regular file")
        if st.st_size > limit:
            raise TooLarge(st.st_size, limit)
        data = fo.read(limit + 1)
    if len(data) > limit:  # grew since the fstat
        raise TooLarge(len(data), limit)
    return data


def read_bounded_text(path: Path, limit: int, *, follow_links: bool = True) -> str:
    """read_bounded, decoded as UTF-8; NotReadable("not UTF-8 text (at byte n)") when it is not."""
    data = read_bounded(path, limit, follow_links=follow_links)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotReadable(f"not UTF-8 text (at byte {exc.start})") from None
