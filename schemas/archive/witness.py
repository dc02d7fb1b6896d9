"""A witness: a party other than the log's writer that co-signs a log's checkpoints, each only once it has checked
that it extends the last one it co-signed (C2SP tlog-witness's rule, without its HTTP API).

The log's key signs whatever its holder wants, including a second history of the same events shown to someone
else, or the first history cut back and rewritten. A witness keeps, per log, the last checkpoint it co-signed and
co-signs a newer one only with a consistency proof from it (RFC 9162 §2.1.4): so the checkpoints it co-signs form
one history, every one a prefix of the next. A reader that requires its co-signature (verify --witness-key,
verify-proof --witness-key) accepts no checkpoint off that history, whoever holds the log's key.

Refused (exit 1; nothing written): a checkpoint not signed by the log's key; two different checkpoints of the same
size (a split view); one that does not extend the last (the history was rewritten); one smaller than the last (an
old checkpoint replayed, or the log rolled back). The first checkpoint a witness sees of a log is taken on the log's
signature alone (nothing to check it against: trust on first use, as tlog-witness starts).

State: `<state dir>/<cluster id>.note`, the last checkpoint co-signed as the witness co-signed it (its own
signature is checked on every read: a state file edited or copied from another witness is refused), replaced
atomically (temporary file, fsync, rename, fsync of the directory) before any co-signed note leaves the witness:
a crash in between leaves a state that is ahead, never one behind what was published. One run at a time holds
the state (an exclusive lock on `<state dir>/.lock`).
"""
from __future__ import annotations

import fcntl
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from schemas import names
from schemas.archive.checkpoint import Checkpoint
from schemas.archive.merkle import ProofError, verify_consistency
from schemas.archive.merkle_store import FileHashStore
from schemas.archive.note import NoteError, Signer, Verifier, cosign_note, open_note
from schemas.archive.proofs import ProofFailed, open_log_checkpoint
from schemas.archive.signatures import Trust
from schemas.archive.signed import SigningError, origin_of, read_checkpoint_text
from schemas.errors import ContractError

LOCK_WAIT_S = 30.0


class WitnessError(ContractError):
    """The witness cannot run: its state unreadable or locked, no proof to check with (exit 2)."""


class Refused(ProofFailed):
    """A checkpoint the witness does not co-sign, and why (exit 1)."""


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """`text` into `path` as a new file renamed over it, fsynced, the directory too: a reader or a crash sees the
    old file or the new one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fo:
            fo.write(text)
            fo.flush()
            os.fsync(fo.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class WitnessState:
    """The last checkpoint co-signed, per log, in a directory only this witness writes."""

    def __init__(self, directory: Path, signer: Signer, wait_s: float = LOCK_WAIT_S) -> None:
        self.directory = directory
        self.signer = signer
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._lock = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise WitnessError(f"{directory}: cannot use it as the witness's state ({exc.strerror})") from None
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(self._lock)
                    raise WitnessError(f"{directory}: another witness run holds the state (waited {wait_s:.0f} s)") \
                        from None
                time.sleep(0.1)

    def path(self, cluster_id: str) -> Path:
        return self.directory / f"{names.cluster_id(cluster_id)}.note"

    def last(self, cluster_id: str) -> Checkpoint | None:
        """The last checkpoint co-signed of the cluster's log, None before the first."""
        path = self.path(cluster_id)
        if not path.exists():
            return None
        try:
            note = open_note(read_checkpoint_text(path), [self.signer.verifier])
            checkpoint = Checkpoint.parse(note.text)
        except (SigningError, NoteError) as exc:
            raise WitnessError(f"{path}: not a checkpoint co-signed by this witness's key ({exc}); the state was "
                               f"altered or is another witness's") from None
        if checkpoint.origin != origin_of(cluster_id):
            raise WitnessError(f"{path}: holds a checkpoint of {checkpoint.origin!r}, not of {origin_of(cluster_id)!r}")
        return checkpoint

    def record(self, cluster_id: str, note: str) -> None:
        write_atomic(self.path(cluster_id), note, 0o600)

    def close(self) -> None:
        os.close(self._lock)

    def __enter__(self) -> WitnessState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Witnessed:
    """A checkpoint co-signed: the note with the witness's signature added, and what it was checked against."""

    cluster_id: str
    checkpoint: Checkpoint
    note: str
    previous: Checkpoint | None  # the last one co-signed before (None: the first seen of this log)

    def said(self) -> str:
        what = f"the checkpoint of {self.checkpoint.size:,} events of cluster {self.cluster_id}"
        p = self.previous
        if p is None:
            return f"co-signed {what}: the first of its log this witness sees (nothing to check it against)"
        if p.size == self.checkpoint.size:
            return f"{what} is the one co-signed last: co-signature kept"
        return f"co-signed {what}: it extends the one of {p.size:,} events co-signed before (consistency proof checked)"


# How a witness gets the consistency proof from its last size to the checkpoint's: (size1, size2) -> hashes.
ProofSource = Callable[[int, int], Sequence[bytes]]


def witness(state: WitnessState, logs: Sequence[Verifier], note: str, where: str, prove: ProofSource,
            cluster_id: str | None = None, old_note: str | None = None) -> Witnessed:
    """Co-sign the checkpoint `note` if it extends the last one co-signed of its log (Refused otherwise), record it
    as the last, and give the co-signed note. `cluster_id`: the cluster it must be of (its archive directory's);
    `old_note`: the older checkpoint the proof source starts from, when the proof was made elsewhere (a proof
    file): it must be the one this witness co-signed last."""
    trust = Trust(tuple(logs))
    try:
        signed = open_log_checkpoint(note, trust, where)
    except ProofFailed as exc:
        raise Refused(str(exc)) from None
    cp = signed.checkpoint
    if cluster_id is not None and signed.cluster_id != cluster_id:
        raise Refused(f"{where}: a checkpoint of {cp.origin!r} in the archive of cluster {cluster_id}: copied from "
                      f"another cluster's archive; not co-signed")
    last = state.last(signed.cluster_id)
    if last is not None:
        seen = f"the checkpoint of {last.size:,} events this witness co-signed last"
        if cp.size < last.size:
            raise Refused(f"{where}: signs {cp.size:,} events, fewer than {seen}: an old checkpoint replayed, or the "
                          f"log rolled back; not co-signed")
        if cp.size == last.size and cp != last:
            raise Refused(f"{where}: a split view: it signs a different tree of {cp.size:,} events than {seen}; "
                          f"the log's key signed two histories; not co-signed")
        if cp.size > last.size:
            if old_note is not None:
                try:
                    old = open_log_checkpoint(old_note, trust, f"{where}: old_checkpoint").checkpoint
                except ProofFailed as exc:
                    raise Refused(str(exc)) from None
                if old.size == last.size and old != last:
                    raise Refused(f"{where}: a split view: its old checkpoint signs a different tree of {old.size:,} "
                                  f"events than {seen}; not co-signed")
                if old != last:
                    raise WitnessError(f"{where}: the proof starts at the checkpoint of {old.size:,} events, not at "
                                       f"{seen}: make one with `ctrlaudit prove ARCHIVE --from {last.size} --to "
                                       f"{cp.size}`")
            proof = prove(last.size, cp.size)
            try:
                verify_consistency(last.size, cp.size, last.root_hash, cp.root_hash, proof)
            except ProofError as exc:
                raise Refused(f"{where}: does not extend {seen} ({exc}): the history was rewritten (or the "
                              f"consistency proof given is wrong); not co-signed") from None
    cosigned = cosign_note(note, state.signer)
    if last is None or cp.size > last.size:
        state.record(signed.cluster_id, cosigned)
    return Witnessed(signed.cluster_id, cp, cosigned, last)


def store_proof(tree_dir: Path) -> ProofSource:
    """Consistency proofs from an archive's `merkle/` store (untrusted: a proof from it holds or fails alone)."""
    def prove(size1: int, size2: int) -> Sequence[bytes]:
        if size1 == 0:
            return []
        try:
            with FileHashStore(tree_dir, readonly=True) as store:
                return store.consistency_proof(size1, size2)
        except (ProofError, OSError) as exc:
            raise WitnessError(f"{tree_dir}: {exc}; give a consistency proof made by `ctrlaudit prove ARCHIVE "
                               f"--from {size1} --to {size2}` instead") from None
    return prove
