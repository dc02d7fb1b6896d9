"""Bad ZooKeeper data files. Each error names the file, the byte position and (where known) the
zxid of the last good transaction, and renders as one line, so a CLI can print ``str(err)`` and stop."""

from __future__ import annotations

from schemas.errors import ContractError


class ZooKeeperFileError(ContractError):
    """Base class: something in a ZooKeeper transaction log or snapshot could not be read (bad input: the
    project's ContractError, so every entry point says it in one line)."""

    def __init__(self, message: str, *, file: str | None = None, position: int | None = None,
                 after_zxid: int | None = None):
        self.reason = message
        self.file = file
        self.position = position
        self.after_zxid = after_zxid
        where = [str(file)] if file is not None else []
        if position is not None:
            where.append(f"byte position {position}")
        if after_zxid is not None:
            where.append(f"after zxid {after_zxid:#x}")
        super().__init__((", ".join(where) + ": " if where else "") + message)


class NotAZooKeeperFileError(ZooKeeperFileError):
    """The file header's magic is not ZKLG (transaction log) / ZKSN (snapshot), or its version is not 2."""


class CorruptTxnError(ZooKeeperFileError):
    """A transaction failed its Adler32 checksum, lacks its end-of-record byte, or its record does not parse."""


class TruncatedTxnError(ZooKeeperFileError):
    """The file ends inside a transaction (a copy that raced an append, or a cut file)."""
