"""C2SP tlog checkpoints (https://c2sp.org/tlog-checkpoint): a log's signed statement "my tree of N leaves has root
hash R", carried in a signed note (schemas.archive.note). The body is

    <origin>
    <tree size, decimal, no leading zeroes>
    <root hash, base64>
    [extension lines]

parsed strictly: any other spelling of the same checkpoint is refused, so that two parties comparing checkpoints
compare the same bytes.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from schemas.archive.merkle import HASH_SIZE
from schemas.archive.note import (
    Note,
    NoteError,
    Signer,
    Verifier,
    b64encode,
    b64decode_strict,
    open_note,
    sign_note,
)

_SIZE = re.compile(r"0|[1-9][0-9]*")
MAX_SIZE = 2**63 - 1  # what Go's and the transparency-dev tools read a size into


class CheckpointError(NoteError):
    """A checkpoint body that is malformed, or a checkpoint note without the signatures its reader requires."""


@dataclass(frozen=True)
class Checkpoint:
    """A log's tree head: its origin, tree size, root hash and extension lines (opaque, each non-empty)."""

    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.origin or "\n" in self.origin or any(ord(c) < 0x20 for c in self.origin):
            raise CheckpointError(f"checkpoint origin {self.origin!r}: must be a non-empty line")
        if not 0 <= self.size <= MAX_SIZE:
            raise CheckpointError(f"checkpoint tree size {self.size}: out of range")
        if len(self.root_hash) != HASH_SIZE:
            raise CheckpointError(f"checkpoint root hash: {len(self.root_hash)} bytes, expected {HASH_SIZE}")
        for i, ext in enumerate(self.extensions, 4):
            if not ext or any(ord(c) < 0x20 for c in ext):
                raise CheckpointError(f"checkpoint line {i}: an extension line must be non-empty, one line")

    @property
    def text(self) -> str:
        """The note text: the body, every line ending in a newline."""
        lines = [self.origin, str(self.size), b64encode(self.root_hash), *self.extensions]
        return "".join(line + "\n" for line in lines)

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """A checkpoint from a note's text."""
        if not text.endswith("\n"):
            raise CheckpointError("malformed checkpoint: the text does not end with a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3:
            raise CheckpointError(f"malformed checkpoint: {len(lines)} lines, expected origin, tree size and root hash")
        for i, line in enumerate(lines, 1):
            if not line:
                raise CheckpointError(f"malformed checkpoint: line {i} is empty")
        origin, size, root = lines[:3]
        if not _SIZE.fullmatch(size):
            raise CheckpointError(f"malformed checkpoint: tree size {size[:30]!r} is not a decimal number without "
                                  f"leading zeroes")
        if int(size) > MAX_SIZE:
            raise CheckpointError(f"malformed checkpoint: tree size {size} is out of range")
        try:
            root_hash = b64decode_strict(root, "malformed checkpoint: root hash")
        except NoteError as e:
            raise CheckpointError(str(e)) from None
        if len(root_hash) != HASH_SIZE:
            raise CheckpointError(f"malformed checkpoint: root hash of {len(root_hash)} bytes, expected {HASH_SIZE}")
        return cls(origin, int(size), root_hash, tuple(lines[3:]))


def sign_checkpoint(checkpoint: Checkpoint, signer: Signer) -> str:
    """The checkpoint as a note signed by the log's key (whose name should be the origin)."""
    return sign_note(checkpoint.text, signer)


def open_checkpoint(message: str | bytes, log: Verifier, witnesses: Iterable[Verifier] = (),
                    min_witnesses: int = 0, origin: str | None = None) -> tuple[Checkpoint, Note]:
    """A checkpoint note verified: signed by the log's key, co-signed by at least `min_witnesses` of the trusted
    witnesses, its origin `origin` (by default the log key's name); with the note (which says who signed)."""
    witnesses = [w for w in witnesses if (w.name, w.key_id) != (log.name, log.key_id)]
    note = open_note(message, [log, *witnesses])
    signers = {(s.name, s.key_id) for s in note.signatures}
    if (log.name, log.key_id) not in signers:
        raise CheckpointError(f"the checkpoint is not signed by the log's key {log.name}+{log.key_id:08x}")
    cosigned = sum((w.name, w.key_id) in signers for w in set(witnesses))
    if cosigned < min_witnesses:
        raise CheckpointError(f"the checkpoint is co-signed by {cosigned} trusted witnesses, {min_witnesses} required")
    checkpoint = Checkpoint.parse(note.text)
    want = log.name if origin is None else origin
    if checkpoint.origin != want:
        raise CheckpointError(f"the checkpoint's origin is {checkpoint.origin!r}, expected {want!r}")
    return checkpoint, note
