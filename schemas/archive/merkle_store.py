"""Where a log keeps its tree so that any proof at any past size is a few dozen reads: every perfect subtree's root,
by level. Level L holds the roots of leaves [i * 2**L, (i + 1) * 2**L) for i = 0, 1, ..., floor(size / 2**L) - 1,
32 bytes each, in order — about 2 * size hashes in all, each written once, when its last leaf arrives, and never
rewritten.

The contents are those of Go's golang.org/x/mod/sumdb/tlog (StoredHashIndex/StoredHashes: "every node hash stored
in append order"); they are kept one array per level rather than interleaved in one file, as C2SP tlog-tiles
addresses them by (level, index), so that a node's place is index * 32 in its level's array, a batch of leaves
appends one contiguous run per level, and the levels can be hashed in bulk (schemas.archive.merkle).

`MemoryHashStore` keeps the levels in bytearrays; `FileHashStore` in one file per level in a directory, appended
with os.write and read with os.pread, so reads see every append and a 10M-leaf tree (640 MB) needs no memory.
"""
from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence
from pathlib import Path

from schemas.archive.merkle import (
    HASH_SIZE,
    CompactTree,
    ProofError,
    consistency_proof,
    inclusion_proof,
    node_hash,
    root_at,
)


class _LevelStore:
    """The levels' common part: appending through a CompactTree (which knows the pending left siblings, so an
    append never reads back) and the proofs."""

    def __init__(self, compact: CompactTree) -> None:
        self._compact = compact

    @property
    def size(self) -> int:
        """The number of leaves."""
        return self._compact.size

    def _write(self, level: int, data: bytes) -> None:
        raise NotImplementedError

    def _read(self, level: int, index: int) -> bytes:
        raise NotImplementedError

    def node(self, level: int, index: int) -> bytes:
        """The root of the perfect subtree of leaves [index << level, (index + 1) << level)."""
        if level < 0 or index < 0 or (index + 1) << level > self.size:
            raise ProofError(f"no complete node at level {level}, index {index} in a tree of size {self.size}")
        return self._read(level, index)

    def append(self, leaf: bytes) -> None:
        """Append one leaf hash."""
        for level, h in enumerate(self._compact.append(leaf)):
            self._write(level, h)

    def extend(self, leaves: Sequence[bytes]) -> None:
        """Append many leaf hashes, hashed by levels: one write per level."""
        for level, hashes in enumerate(self._compact.extend(leaves)):
            self._write(level, b"".join(hashes))

    def extend_packed(self, leaves: bytes) -> None:
        """Append leaf hashes packed 32 bytes each (merkle.packed_event_leaves): hashed natively where built."""
        for level, hashes in enumerate(self._compact.extend_packed(leaves)):
            self._write(level, hashes)

    def root(self, size: int | None = None) -> bytes:
        """The tree hash at `size` (by default the current size)."""
        if size is None:
            return self._compact.root()
        return root_at(self, size)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """The proof that leaf `index` is in the tree of `size` leaves (by default the current size)."""
        return inclusion_proof(self, index, self.size if size is None else size)

    def consistency_proof(self, size1: int, size2: int | None = None) -> list[bytes]:
        """The proof that the tree of `size1` leaves is a prefix of the tree of `size2` (by default the current)."""
        return consistency_proof(self, size1, self.size if size2 is None else size2)


class MemoryHashStore(_LevelStore):
    """The levels in memory."""

    def __init__(self, leaves: Sequence[bytes] = ()) -> None:
        super().__init__(CompactTree())
        self._levels: list[bytearray] = []
        if leaves:
            self.extend(leaves)

    def _write(self, level: int, data: bytes) -> None:
        if level == len(self._levels):
            self._levels.append(bytearray())
        self._levels[level] += data

    def _read(self, level: int, index: int) -> bytes:
        return bytes(self._levels[level][index * HASH_SIZE:(index + 1) * HASH_SIZE])


class FileHashStore(_LevelStore):
    """The levels as files `level-NN` in a directory.

    One process appends (an exclusive flock on level-00 says which). Opening for appending repairs what a crash
    mid-append leaves: a torn last hash is cut off and a level behind the one below is completed from it, so `size`
    (the whole leaves in level 0) is a tree whose every level is complete. Call `sync` before publishing a root that
    must survive a crash. Any number of readers (readonly=True) may open it meanwhile: they write nothing and take
    the largest size whose every level is already complete, so an append in progress is simply not seen yet (reopen
    to see later ones)."""

    def __init__(self, directory: str | os.PathLike[str], readonly: bool = False) -> None:
        self.directory = Path(directory)
        self.readonly = readonly
        self._fds: list[int] = []
        try:
            if readonly:
                size = self._open_readonly()
            else:
                self.directory.mkdir(parents=True, exist_ok=True)
                size = self._open_for_append()
                self._repair(size)
            super().__init__(self._right_edge(size))
        except BaseException:
            self.close()
            raise

    def _path(self, level: int) -> Path:
        return self.directory / f"level-{level:02d}"

    def _open_fd(self, level: int) -> int:
        while len(self._fds) <= level:
            self._fds.append(os.open(self._path(len(self._fds)), os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644))
        return self._fds[level]

    def _open_for_append(self) -> int:
        fd = self._open_fd(0)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ProofError(f"{self.directory}: the tree is open for appending by another process") from None
        size = os.fstat(fd).st_size // HASH_SIZE
        for level in range(1, size.bit_length()):
            self._open_fd(level)
        return size

    def _open_readonly(self) -> int:
        while self._path(len(self._fds)).exists():
            self._fds.append(os.open(self._path(len(self._fds)), os.O_RDONLY))
        if not self._fds:
            raise ProofError(f"{self.directory}: no tree here (no level-00)")
        size = self._count(0)
        for level in range(1, size.bit_length()):  # level L must hold size >> L nodes: size < (count + 1) << L
            have = self._count(level) if level < len(self._fds) else 0
            size = min(size, ((have + 1) << level) - 1)
        return size

    def _count(self, level: int) -> int:
        return os.fstat(self._fds[level]).st_size // HASH_SIZE

    def _repair(self, size: int) -> None:
        for level in range(size.bit_length()):
            want = size >> level
            fd = self._fds[level]
            if os.fstat(fd).st_size > want * HASH_SIZE:  # a torn hash, or nodes of leaves cut off below
                os.ftruncate(fd, want * HASH_SIZE)
            have = self._count(level)
            if have < want:  # the crash came between this level's write and the one below
                for i in range(have, want):
                    left, right = self._read(level - 1, 2 * i), self._read(level - 1, 2 * i + 1)
                    os.write(fd, node_hash(left, right))
        for level in range(max(1, size.bit_length()), 64):  # levels of a larger tree whose leaves were cut off
            path = self._path(level)
            if not path.exists():
                break
            path.unlink()

    def _right_edge(self, size: int) -> CompactTree:
        nodes = [self._read(level, (size >> level) - 1) for level in reversed(range(size.bit_length()))
                 if size >> level & 1]
        return CompactTree(size, nodes)

    def _write(self, level: int, data: bytes) -> None:
        if self.readonly:
            raise ProofError(f"{self.directory}: opened read-only")
        fd = self._open_fd(level)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]

    def _read(self, level: int, index: int) -> bytes:
        data = os.pread(self._fds[level], HASH_SIZE, index * HASH_SIZE)
        if len(data) != HASH_SIZE:
            raise ProofError(f"{self._path(level)}: no hash at index {index} (file cut short?)")
        return data

    def truncate(self, size: int) -> None:
        """Cut the tree back to its first `size` leaves (a writer resuming after a crash that lost leaves the tree
        already held)."""
        if not 0 <= size <= self.size:
            raise ProofError(f"{self.directory}: cannot cut a tree of size {self.size} to {size}")
        self._repair(size)
        keep = max(1, size.bit_length())  # the levels above were unlinked: appends must open them anew
        for fd in self._fds[keep:]:
            os.close(fd)
        del self._fds[keep:]
        self._compact = self._right_edge(size)

    def sync(self) -> None:
        """Make every append so far durable, the level files' names included."""
        for fd in self._fds:
            os.fsync(fd)
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []

    def __enter__(self) -> FileHashStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
