"""The archiver's side of capture's signed checkpoints (services/capture/signing.py): each message of the checkpoints
topic is checked and waits until the archive's finished files reach its size; then the root it signs must be the
archive's own Merkle root at that size, and only then is the note stored beside the files as
`checkpoint-<size>.note` (schemas/archive/signed.py), where `ctrlaudit verify --trusted-key` checks it against the
events.

A checkpoint that does not hold (not a note, another cluster's origin, no events, not signed by a key given with
--trusted-key, a root the archive's events do not give) is not stored: one ERROR line names the topic, partition,
offset and size, and the archiver goes on. Stopping would not make the checkpoint right, and it would stop the
archive of the events themselves, which the chain already protects, at the will of anyone able to write the topic.

Nothing is lost to a crash: a waiting checkpoint's offset is not committed (the archiver commits the checkpoints
partition up to the oldest one still waiting), so an archiver that starts again reads it again; storing is
idempotent (the same note again changes nothing) and each file is written whole or not at all.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from schemas import names
from schemas.archive.checkpoint import Checkpoint, CheckpointError, open_checkpoint
from schemas.archive.note import NoteError, Verifier, parse_note
from schemas.archive.signed import MAX_CHECKPOINT_BYTES, SigningError, origin_of, store_note
from schemas.errors import ContractError

log = logging.getLogger(__name__)


class CheckpointRefused(ContractError):
    """A checkpoint message that is not stored; the message says why."""


@dataclass(order=True)
class Waiting:
    """A checkpoint read from the topic, not yet stored."""

    size: int
    offset: int
    partition: int = field(compare=False)
    note: str = field(compare=False)
    checkpoint: Checkpoint = field(compare=False)
    where: str = field(compare=False)


def read_message(key: bytes | None, value: bytes | None, trusted: Sequence[Verifier] = ()) -> tuple[str, str,
                                                                                                   Checkpoint]:
    """(cluster id, note, checkpoint) of a checkpoints-topic message, or CheckpointRefused saying why not."""
    if not key:
        raise CheckpointRefused("no key (the cluster id)")
    try:
        cluster = names.cluster_id(key.decode("utf-8"), "key")
    except (UnicodeDecodeError, ContractError) as exc:
        raise CheckpointRefused(f"the key is not a cluster id ({exc})") from None
    if value is None or len(value) > MAX_CHECKPOINT_BYTES:
        raise CheckpointRefused("no value" if value is None else f"a value of {len(value)} bytes is no checkpoint")
    try:
        note = value.decode("utf-8")
        text, _ = parse_note(note)
        checkpoint = Checkpoint.parse(text)
    except (UnicodeDecodeError, NoteError) as exc:
        raise CheckpointRefused(f"not a signed checkpoint ({exc})") from None
    if checkpoint.origin != origin_of(cluster):
        raise CheckpointRefused(f"a checkpoint of {checkpoint.origin!r} filed under cluster {cluster}")
    if checkpoint.size == 0:
        raise CheckpointRefused("it signs no events")
    if trusted:
        problems = []
        for key_ in trusted:
            try:
                open_checkpoint(note, key_, origin=origin_of(cluster))
                break
            except (NoteError, CheckpointError) as exc:
                problems.append(str(exc))
        else:
            raise CheckpointRefused(f"not signed by a trusted key ({'; '.join(problems)})")
    return cluster, note, checkpoint


class CheckpointShelf:
    """Checkpoints per cluster waiting for the archive to reach them; `settle` stores those it has reached."""

    def __init__(self, trusted: Sequence[Verifier] = ()) -> None:
        self.trusted = list(trusted)
        self.waiting: dict[str, list[Waiting]] = {}
        self.stored = 0
        self.refused = 0

    def add(self, key: bytes | None, value: bytes | None, partition: int, offset: int, where: str) -> None:
        """One message of the checkpoints topic: it waits, or is refused with one ERROR line."""
        try:
            cluster, note, checkpoint = read_message(key, value, self.trusted)
        except CheckpointRefused as exc:
            self._refuse(where, None, str(exc))
            return
        self.waiting.setdefault(cluster, []).append(Waiting(checkpoint.size, offset, partition, note, checkpoint,
                                                            where))

    def _refuse(self, where: str, size: int | None, why: str) -> None:
        self.refused += 1
        log.error("checkpoint at %s%s not stored: %s", where, f" (size {size:,})" if size is not None else "", why)

    def hold(self) -> dict[int, int]:
        """partition -> the offset of its oldest waiting checkpoint: committed offsets must not pass it."""
        out: dict[int, int] = {}
        for items in self.waiting.values():
            for w in items:
                out[w.partition] = min(out.get(w.partition, w.offset), w.offset)
        return out

    def settle(self, cluster: str, directory: Path, archived: int, root: Callable[[int], bytes],
               fsync: bool = True) -> None:
        """Store the cluster's checkpoints of at most `archived` events (the events in its finished files), each
        once its root is `root(size)`, the archive's; the others keep waiting."""
        items = self.waiting.get(cluster, [])
        now = sorted(w for w in items if w.size <= archived)
        if not now:
            return
        self.waiting[cluster] = [w for w in items if w.size > archived]
        if not self.waiting[cluster]:
            del self.waiting[cluster]
        for w in now:
            mine = root(w.size)
            if mine != w.checkpoint.root_hash:
                self._refuse(w.where, w.size, f"its root {w.checkpoint.root_hash.hex()[:16]}... is not the archive's "
                             f"{mine.hex()[:16]}... for the first {w.size:,} events: the events topic and the archive "
                             f"disagree with what the checkpoint's signer saw")
                continue
            try:
                store_note(directory, w.note, fsync=fsync)
            except (SigningError, NoteError) as exc:
                self._refuse(w.where, w.size, str(exc))
                continue
            self.stored += 1
