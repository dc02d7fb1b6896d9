"""The signed log of one cluster's archive: the RFC 9162 Merkle tree over its events' chain hashes (leaf i is event
seq i) kept beside the files, and the C2SP checkpoints that sign it, one file per signed size.

Layout inside a cluster's directory, beside the events files and their manifests:

    checkpoint-<tree size, 12 digits>.note   a signed note of the tlog-checkpoint body (schemas.archive.checkpoint),
                                             origin "ctrlaudit/<cluster id>"; more signatures (another log key
                                             after a rotation, witnesses' co-signatures) may be added to it later
    merkle/level-NN                          the tree's stored hashes (schemas.archive.merkle_store): derived data,
                                             rebuilt from the events when missing or wrong, trusted by nobody

A checkpoint is written only after the files it covers are finished (renamed, manifest written, fsynced), as a
temporary file renamed into place: a crash leaves either no checkpoint or a whole one, never one naming events
that were lost with an unfinished file.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from schemas.archive.checkpoint import Checkpoint, CheckpointError
from schemas.archive.merkle import ProofError, event_leaf_hash, packed_event_leaves
from schemas.archive.merkle_store import FileHashStore
from schemas.archive.note import NoteError, Signer, Verifier, cosign_note, parse_note, sign_note
from schemas.bounded import read_or_refuse
from schemas.errors import ContractError

TREE_DIR = "merkle"
CHECKPOINT_RE = re.compile(r"checkpoint-([0-9]{12,19})\.note")
MAX_KEY_FILE_BYTES = 1 << 20  # a file of trusted keys: thousands of lines
MAX_CHECKPOINT_BYTES = 64 * 1024  # a checkpoint with 100 signatures is ~10 KB; anything larger is not read


class SigningError(ContractError):
    """A signing key or checkpoint that cannot be used (one line, exit 2)."""


def origin_of(cluster_id: str) -> str:
    """The checkpoint origin naming a cluster's log."""
    return f"ctrlaudit/{cluster_id}"


def checkpoint_name(size: int) -> str:
    return f"checkpoint-{size:012d}.note"


def list_checkpoints(directory: Path) -> list[tuple[int, Path]]:
    """(size its name says, path) of every checkpoint file in a cluster's directory, by size."""
    found = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for entry in entries:
        m = CHECKPOINT_RE.fullmatch(entry.name)
        if m:
            found.append((int(m.group(1)), Path(entry.path)))
    return sorted(found)


def read_checkpoint_text(path: Path) -> str:
    """A checkpoint file's text, refusing what no writer makes: not a regular file (a link is not followed), too
    large, not UTF-8."""
    data = read_or_refuse(path, MAX_CHECKPOINT_BYTES, "a checkpoint", SigningError, follow_links=False,
                          name=path.name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SigningError(f"{path.name}: not UTF-8 text; not a checkpoint") from None


# --- keys ----------------------------------------------------------------------------------------

def load_signer(path: str | os.PathLike[str]) -> Signer:
    """The signing key in a file written by `ctrlaudit keygen` (refused when others may read it, as ssh does)."""
    p = Path(path)
    try:
        st = p.stat()
        if not p.is_file():
            raise SigningError(f"{p}: the signing key is not a regular file")
        if st.st_mode & 0o077:
            raise SigningError(f"{p}: the signing key is readable by others (mode {st.st_mode & 0o777:04o}); "
                               f"chmod 600 it")
        text = p.read_text(encoding="utf-8", errors="strict").strip()
    except OSError as exc:
        raise SigningError(f"{p}: cannot read the signing key ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise SigningError(f"{p}: not a signing key (not UTF-8 text)") from None
    try:
        return Signer.parse(text)
    except NoteError as exc:
        raise SigningError(f"{p}: {exc}") from None


def load_verifiers(key: str) -> list[Verifier]:
    """Trusted public keys given as one key's text (`name+id+key`) or as a file of them, one per line (blank lines
    and lines starting with # are skipped): how a settings file names the keys an auditor trusts."""
    p = Path(key)
    if "\n" in key or len(key) > 4096 or not p.is_file():
        if "+" not in key:
            raise SigningError(f"{key[:80]}: neither a public key (name+id+key) nor a file holding one")
        lines = [key.strip()]
    else:
        data = read_or_refuse(p, MAX_KEY_FILE_BYTES, "a public key file", SigningError, name=key)
        try:
            lines = [line.strip() for line in data.decode("utf-8").splitlines()]
        except UnicodeDecodeError:
            raise SigningError(f"{key}: not a public key file (not UTF-8 text)") from None
        lines = [line for line in lines if line and not line.startswith("#")]
        if not lines:
            raise SigningError(f"{key}: the key file holds no key")
    keys = []
    for n, text in enumerate(lines, 1):
        where = key if len(lines) == 1 else f"{key}: line {n}"
        if text.startswith("PRIVATE+KEY+"):
            raise SigningError(f"{where}: a private signing key; give its public key (ctrlaudit keygen prints it)")
        try:
            keys.append(Verifier.parse(text))
        except NoteError as exc:
            raise SigningError(f"{where}: {exc}") from None
    return keys


# --- writing ------------------------------------------------------------------------------------

def write_checkpoint(directory: Path, checkpoint: Checkpoint, signers: Sequence[Signer], fsync: bool = True) -> Path:
    """Sign `checkpoint` and store it; a checkpoint of the same size already there gets the signatures added
    (another key after a rotation), after checking that it signs the same tree."""
    path = directory / checkpoint_name(checkpoint.size)
    if path.exists():
        old = read_checkpoint_text(path)
        text, _ = parse_note(old)
        if Checkpoint.parse(text) != checkpoint:
            raise SigningError(f"{path}: already signs a different tree of {checkpoint.size} events; the archive "
                               f"under it is not the one that was signed (verify it with the trusted key)")
        note = cosign_note(old, *signers)
        if note == old:
            return path
    else:
        note = sign_note(checkpoint.text, *signers)
    _replace_note(directory, path, note, fsync)
    return path


def store_note(directory: Path, note: str, fsync: bool = True) -> Path:
    """Store a checkpoint signed elsewhere (the capture worker's, read from its checkpoints topic) as it is. A
    checkpoint of the same size already there must sign the same tree; it keeps its signatures and gains the note's
    by other keys (one key's signature already there is never replaced: what is stored is never overwritten). The
    caller checks the checkpoint against the archive's tree first."""
    text, sigs = parse_note(note)
    checkpoint = Checkpoint.parse(text)
    path = directory / checkpoint_name(checkpoint.size)
    if path.exists():
        old = read_checkpoint_text(path)
        old_text, old_sigs = parse_note(old)
        if Checkpoint.parse(old_text) != checkpoint:
            raise SigningError(f"{path}: already signs a different tree of {checkpoint.size} events")
        held = {(s.name, s.key_id) for s in old_sigs}
        added = [s for s in sigs if (s.name, s.key_id) not in held]
        if not added:
            return path
        note = old + "".join(s.line for s in added)
        parse_note(note)  # still within the signatures a reader takes
    _replace_note(directory, path, note, fsync)
    return path


def _replace_note(directory: Path, path: Path, note: str, fsync: bool) -> None:
    """Write `note` to `path` through a temporary file renamed into place: a crash leaves the old one or the new one
    whole, never a half-written checkpoint."""
    fd, tmp = tempfile.mkstemp(prefix=".checkpoint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fo:
            fo.write(note)
            fo.flush()
            if fsync:
                os.fsync(fo.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if fsync:
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


@dataclass
class Signed:
    """What one signing produced."""

    path: Path
    checkpoint: Checkpoint


class LogSigner:
    """Keeps one cluster's Merkle tree in `<directory>/merkle` and signs checkpoints of it (without signers it only
    keeps the tree: what an archiver that stores checkpoints signed elsewhere checks them against).

    `archived(start)` gives the chain hashes of the archive's events from seq `start` on: how a tree that is behind
    (an archive written before signing began, a lost tree) catches up. The tree must hold the archive's events
    exactly: a tree whose last leaf is not the chain head is rebuilt from the events."""

    def __init__(self, directory: Path, cluster_id: str, signers: Sequence[Signer], next_seq: int, head_hash: str,
                 archived: Callable[[int], Iterable[str]], fsync: bool = True) -> None:
        self.directory = directory
        self.origin = origin_of(cluster_id)
        self.signers = list(signers)
        self.fsync = fsync
        self._pending: list[str] = []
        tree_dir = directory / TREE_DIR
        self.store = FileHashStore(tree_dir)
        try:
            if self.store.size > next_seq:
                self.store.truncate(next_seq)
            if next_seq and self.store.size == next_seq and self.store.node(0, next_seq - 1) != \
                    event_leaf_hash(head_hash):
                self.store.close()  # not this archive's tree: rebuilt from the events
                shutil.rmtree(tree_dir)
                self.store = FileHashStore(tree_dir)
            if self.store.size < next_seq:
                start, batch = self.store.size, []
                for h in archived(start):
                    batch.append(h)
                    if len(batch) >= 65536:
                        self._extend(batch)
                        batch = []
                self._extend(batch)
                if self.store.size != next_seq:
                    raise SigningError(f"{directory}: the archive gave {self.store.size} events' hashes, expected "
                                       f"{next_seq}")
        except ProofError as exc:
            self.store.close()
            raise SigningError(f"{tree_dir}: {exc}") from None
        except BaseException:
            self.store.close()
            raise

    @property
    def size(self) -> int:
        """Events in the tree, the pending ones included."""
        return self.store.size + len(self._pending)

    def add(self, event_hash: str) -> None:
        """One more event (its chain hash); hashed into the tree at the next `sign`."""
        self._pending.append(event_hash)

    def sign(self) -> Signed | None:
        """Sign the tree as it is now: call once the events added are durable in finished files (without signers,
        only the tree is brought up to them and synced; None)."""
        if self._pending:
            self._extend(self._pending)
            self._pending = []
        if self.fsync:
            self.store.sync()
        if not self.signers:
            return None
        checkpoint = Checkpoint(self.origin, self.store.size, self.store.root())
        try:
            return Signed(write_checkpoint(self.directory, checkpoint, self.signers, self.fsync), checkpoint)
        except (CheckpointError, NoteError) as exc:
            raise SigningError(f"{self.directory}: {exc}") from None

    def _extend(self, event_hashes: list[str]) -> None:
        try:
            self.store.extend_packed(packed_event_leaves("".join(event_hashes).encode("ascii")))
        except UnicodeEncodeError:
            raise ProofError("an event hash is not hex") from None

    def root(self, size: int) -> bytes:
        """The tree hash of the first `size` events; they must be in finished files (signed or synced by `sign`)."""
        if not 0 < size <= self.store.size:
            raise SigningError(f"{self.directory}: the tree holds {self.store.size} finished events, not {size}")
        return self.store.root(size)

    def close(self) -> None:
        self.store.close()
