"""Small input files read as hostile: a proof, a checkpoint, a manifest, a key file or a check report handed over
by someone else. Judged on what was opened, not on the name (which may change in between); opened without waiting
(a FIFO would block the open until a writer comes) and read only when it is a regular file (a FIFO or a device
would block the read or never end); never more than the cap plus one byte."""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable


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



def read_or_refuse(path: str | os.PathLike[str], limit: int, what: str, refuse: Callable[[str], Exception], *,
                   follow_links: bool = True, name: str | None = None) -> bytes:
    """read_bounded, whatever refuses the file raised as refuse(one line): the file's name (`name`, else the path),
    then why, saying it is not `what` ("a proof", "a check report") where its shape is wrong."""
    where = name if name is not None else str(path)
    try:
        return read_bounded(path, limit, follow_links=follow_links)
    except TooLarge as exc:
        raise refuse(f"{where}: {exc.size:,} bytes, larger than any {what.split(' ', 1)[-1]} ({limit:,})") from None
    except NotReadable as exc:
        raise refuse(f"{where}: {exc}; not {what}") from None
    except OSError as exc:
        raise refuse(f"{where}: cannot be read ({exc.strerror or exc})") from None
