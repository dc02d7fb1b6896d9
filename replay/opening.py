"""Opening the store file: DuckDB's errors as one line that names the file and says what to do.

A read-write connection takes an exclusive lock on the file (DuckDB: one writer process, or any
number of read-only ones). A second command that finds the store locked waits for it, up to
`wait` seconds (CTRLAUDIT_LOCK_WAIT, default 30), polling, and then fails naming the process that
holds it; a load is one transaction, so waiting never sees a half-loaded store.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

from replay.errors import StoreError

DEFAULT_WAIT = 30.0


def lock_wait() -> float:
    raw = os.environ.get("CTRLAUDIT_LOCK_WAIT", "")
    if not raw.strip():
        return DEFAULT_WAIT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):  # also NaN, which would make the deadline never come
        raise StoreError(f"CTRLAUDIT_LOCK_WAIT={raw!r}: expected seconds to wait for a locked store (a number >= 0)")
    return value


def explain(path: Path, exc: BaseException) -> str:
    """One line for a DuckDB error on the store file at `path`."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "Could not set lock" in text or "Conflicting lock" in text:
        holder = re.search(r"\(PID (\d+)\)", str(exc))
        who = f" by process {holder.group(1)}" if holder else ""
        return f"{path}: the store is in use{who} (a load or another command holds it); try again when it is done"
    if "not a valid DuckDB database file" in text or "Invalid database" in text or "file is not a" in text:
        return f"{path}: not a ctrlaudit store (not a DuckDB database file)"
    if "Is a directory" in text or path.is_dir():
        return f"{path}: is a directory, not a store file"
    if "Not a directory" in text and path.parent.exists() and not path.parent.is_dir():
        return f"{path}: {path.parent} is not a directory"
    if "No such file or directory" in text:
        if not path.parent.exists():
            return f"{path}: the directory {path.parent} does not exist"
        return f"{path}: cannot create the store file here ({text.split(': ', 1)[-1]})"
    if "Could not read enough bytes" in text or "truncated" in text.lower():
        return f"{path}: the store file is damaged or truncated ({text.split(': ', 1)[-1]}); load the archive into a new store"
    if "Permission denied" in text or "Read-only file system" in text or "read-only" in text.lower():
        return f"{path}: cannot write the store here ({text.split(': ', 1)[-1]})"
    if "No space left" in text:
        return f"{path}: the disk is full ({text.split(': ', 1)[-1]})"
    return f"{path}: {text}"


def check_directory_writable(path: Path) -> None:
    """StoreError when the directory of a store to be written is not writable. Why here: DuckDB writes its
    write-ahead log `<store>.wal` next to the store only at COMMIT, so a writable store file in a read-only
    directory would fail only after a whole load, and with "cannot rollback - no transaction is active"
    (the rollback of the failed commit) instead of the reason."""
    parent = path.parent
    if not parent.is_dir():
        return  # duckdb.connect's own error says so (explain: "the directory ... does not exist")
    try:
        with tempfile.TemporaryFile(dir=parent, prefix=f".{path.name}.probe-"):
            pass
    except OSError as exc:
        raise StoreError(f"{path}: cannot write the store here: the directory {parent} is not writable "
                         f"({exc.strerror or exc}; DuckDB writes {path.name}.wal next to the store)") from None


def connect(path: Path, read_only: bool, config: dict[str, Any], wait: float | None = None) -> duckdb.DuckDBPyConnection:
    """duckdb.connect with the store's errors as StoreError, waiting a bounded time for a lock."""
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, not a store file")
    if not read_only:
        check_directory_writable(path)
    deadline = time.monotonic() + (lock_wait() if wait is None else wait)
    delay = 0.05
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only, config=config)
        except duckdb.Error as exc:
            locked = "lock" in str(exc).lower()
            if not locked or time.monotonic() >= deadline:
                raise StoreError(explain(path, exc)) from None
        time.sleep(delay)
        delay = min(delay * 2, 1.0)
