"""Making proofs from an archive (schemas.archive.proofs holds what they are and how they are checked).

No proof leaves an archive that was not read verified first: `read_log` reads one cluster's files through the one
verified read with the trusted keys (every file against its manifest, every link of the chain, every checkpoint's
root against the events and its signature), and finds the event asked for on the way. `inclusion` and
`consistency` then make the proof from the checkpoint notes and the tree, and check it as verify-proof will before
handing it on: a proof that would not verify is never written.

The tree's nodes come from the archive's `merkle/` store when its roots are the checkpoints' (a few reads per
proof); the store is derived data that nobody trusts, and a proof made from it holds or fails on its own. When it
is missing or does not match, the tree is rebuilt from the verified events into a temporary store for the run
(2 x 32 bytes per event on disk).
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.compute as pc

from schemas.archive.checkpoint import Checkpoint
from schemas.archive.event_at import event_at
from schemas.archive.merkle import (
    ProofError,
    event_leaf_hash,
    packed_event_leaves,
    verify_consistency,
    verify_inclusion,
)
from schemas.archive.merkle_store import FileHashStore
from schemas.archive.note import NoteError, parse_note
from schemas.archive.proofs import (
    ConsistencyProof,
    InclusionProof,
    ProofFailed,
    Proven,
    ProvenEvent,
    SignedCheckpoint,
    decoded_copy,
    open_log_checkpoint,
    parse_proof,
    to_json,
    verify_proof,
)
from schemas.archive.signatures import SignedStatus, Trust
from schemas.archive.signed import TREE_DIR, SigningError, list_checkpoints, read_checkpoint_text
from schemas.archive.verified import ArchiveFile, VerifiedRead
from schemas.errors import ContractError


class ProveError(ContractError):
    """A proof that cannot be asked of this archive: no such event or checkpoint, an event not yet signed (exit 2)."""


class DamagedStore(ContractError):
    """The archive's merkle/ store gave a path that does not lead to the signed root: read again with
    rebuild=True (the store's roots can be whole while a node below them is not)."""


@dataclass(frozen=True)
class Found:
    """The event asked for, as the verified read gave it."""

    seq: int
    event_id: str
    hash: str
    file: ArchiveFile


@dataclass
class VerifiedLog:
    """One cluster's archive, read verified: its directories, its size, its tree and the event asked for."""

    cluster_id: str
    directories: list[Path]
    size: int
    tree: FileHashStore
    signed: SignedStatus
    event: Found | None = None
    _temporary: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    @property
    def rebuilt(self) -> bool:
        """The tree was made from the verified events, not read from the archive's store."""
        return self._temporary is not None

    def damaged(self, message: str) -> ContractError:
        """A path or root from the tree that does not match a signed root: the store's fault, when there is one."""
        if self.rebuilt:
            return ProofFailed(f"the tree made from the verified events: {message}")
        return DamagedStore(f"{self.tree.directory}: {message}")

    def close(self) -> None:
        self.tree.close()
        if self._temporary is not None:
            self._temporary.cleanup()

    def __enter__(self) -> VerifiedLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def note_cluster(text: str) -> str | None:
    """The cluster a checkpoint note's origin names (unverified: only to choose what to read)."""
    try:
        body, _ = parse_note(text)
        origin = Checkpoint.parse(body).origin
    except NoteError:
        return None
    return origin.removeprefix("ctrlaudit/") if origin.startswith("ctrlaudit/") else None


def _usable_store(directory: Path) -> FileHashStore | None:
    """The directory's stored tree, when every checkpoint there signs the root it gives at that size."""
    try:
        store = FileHashStore(directory / TREE_DIR, readonly=True)
    except (ProofError, OSError):
        return None
    try:
        for size, path in list_checkpoints(directory):
            body, _ = parse_note(read_checkpoint_text(path))
            if size > store.size or store.root(size) != Checkpoint.parse(body).root_hash:
                store.close()
                return None
    except (ContractError, OSError):
        store.close()
        return None
    return store


def read_log(paths: Iterable[str | Path], trust: Trust, cluster: str | None = None, seq: int | None = None,
             event_id: str | None = None, rebuild: bool = False) -> VerifiedLog:
    """Read one cluster's archive verified with `trust`, finding the event `seq` or `event_id` on the way
    (ArchiveProblem when the archive does not verify; ProveError when the event is not there). `rebuild`: make the
    tree from the events even when the archive's merkle/ store looks usable."""
    first = VerifiedRead(paths)
    clusters = first.clusters()
    if cluster is None:
        if len(clusters) != 1:
            raise ProveError(f"the archive holds {len(clusters)} clusters ({', '.join(clusters[:5])}): give --cluster")
        cluster = clusters[0]
    elif cluster not in clusters:
        raise ProveError(f"cluster {cluster!r}: not in the archive (it holds {', '.join(clusters[:5])})")
    files = [f for f in first.files if f.manifest.cluster_id == cluster]
    by_path = {f.path: f for f in files}
    directories = sorted({f.path.parent for f in files})
    temporary = None
    store = None if rebuild else next((s for s in map(_usable_store, directories) if s is not None), None)
    if store is None:
        temporary = tempfile.TemporaryDirectory(prefix="ctrlaudit-tree-")
        store = FileHashStore(Path(temporary.name) / TREE_DIR)
    log = VerifiedLog(cluster, directories, 0, store, SignedStatus(cluster), None, temporary)
    try:
        read = VerifiedRead([f.path for f in files], trust=trust)
        for path, table in read:
            if temporary is not None:
                store.extend_packed(packed_event_leaves("".join(table.column("hash").to_pylist()).encode("ascii")))
            lo = table.column("seq")[0].as_py()
            row = None
            if seq is not None and lo <= seq < lo + table.num_rows:
                row = seq - lo
            elif event_id is not None:
                hits = pc.indices_nonzero(pc.equal(table.column("event_id"), event_id)).to_pylist()
                if hits and log.event is not None or len(hits) > 1:
                    raise ProveError(f"event {event_id}: two events have this id; give --seq")
                row = hits[0] if hits else None
            if row is not None:
                log.event = Found(lo + row, table.column("event_id")[row].as_py(), table.column("hash")[row].as_py(),
                                  by_path[path])
        log.size = read.chains[cluster].last_seq + 1
        log.signed = read.signed[cluster]
    except BaseException:
        log.close()
        raise
    if (seq is not None or event_id is not None) and log.event is None:
        log.close()
        what = f"seq {seq}" if seq is not None else f"event {event_id}"
        raise ProveError(f"{what}: not in the archive of cluster {cluster} ({log.size:,} events, seq 0.."
                         f"{log.size - 1})")
    return log


def _stored(log: VerifiedLog, size: int) -> list[str]:
    """The texts of the stored checkpoints of `size`, the copy with the most signatures first."""
    texts = [read_checkpoint_text(p) for d in log.directories for s, p in list_checkpoints(d) if s == size]
    return sorted(texts, key=lambda t: -t.count("\n— "))


def stored_sizes(log: VerifiedLog) -> list[int]:
    return sorted({s for d in log.directories for s, _ in list_checkpoints(d)})


def _signed(log: VerifiedLog, trust: Trust, size: int) -> tuple[str, SignedCheckpoint] | None:
    """The stored checkpoint of `size` that `trust` accepts (with its witnesses' co-signatures), if any."""
    for text in _stored(log, size):
        try:
            signed = open_log_checkpoint(text, trust)
        except ProofFailed:
            continue
        if signed.cluster_id == log.cluster_id and signed.checkpoint.size == size:
            return text, signed
    return None


@dataclass(frozen=True)
class Made:
    """A proof and what it proves, checked."""

    proof: InclusionProof | ConsistencyProof
    proven: Proven
    json: str


def _checked(proof: InclusionProof | ConsistencyProof, trust: Trust) -> Made:
    """The proof, once it verifies as verify-proof will check it: from its JSON, with the same keys."""
    text = to_json(proof)
    try:
        proven = verify_proof(parse_proof(text.encode()), trust)
    except ContractError as exc:
        raise ProofFailed(f"the proof made does not verify, so it is not written: {exc}") from None
    return Made(proof, proven, text)


def inclusion(log: VerifiedLog, trust: Trust, at: int | None = None) -> Made:
    """The inclusion proof of the event `read_log` found, against the stored checkpoint of `at` events (by default
    the newest covering it; with witness keys in `trust`, the newest they all co-signed)."""
    found = log.event
    assert found is not None, "read_log was asked for no event"
    sizes = stored_sizes(log)
    if at is not None:
        if at not in sizes:
            raise ProveError(f"--at {at}: no checkpoint of {at:,} events is stored (stored: "
                             f"{', '.join(map(str, sizes[-5:])) or 'none'})")
        if at <= found.seq:
            raise ProveError(f"--at {at}: the checkpoint of {at:,} events does not cover seq {found.seq}")
        chosen = _signed(log, trust, at)
        if chosen is None:
            raise ProofFailed(f"--at {at}: the checkpoint of {at:,} events is not co-signed by every witness key")
    else:
        chosen = next((c for c in map(lambda s: _signed(log, trust, s), reversed(sizes)) if c is not None
                       and c[1].checkpoint.size > found.seq), None)
        if chosen is None:
            newest = max(sizes, default=0)
            if newest <= found.seq:
                raise ProveError(f"seq {found.seq} is not signed yet: the newest checkpoint covers seq 0.."
                                 f"{newest - 1}; a proof can be made once a checkpoint covers it")
            raise ProofFailed(f"no checkpoint covering seq {found.seq} is co-signed by every witness key")
    text, signed = chosen
    event = event_at(found.file.path, found.file.manifest.first_seq, found.seq)
    if event.chain_hash != found.hash or event.record["hash"] != found.hash:
        raise ProofFailed(f"{found.file.name}: seq {found.seq} is not the event the verified read gave (the file "
                          f"changed since)")
    try:
        path = log.tree.inclusion_proof(found.seq, signed.checkpoint.size)
        verify_inclusion(event_leaf_hash(found.hash), found.seq, signed.checkpoint.size, path,
                         signed.checkpoint.root_hash)
    except ProofError as exc:
        raise log.damaged(str(exc)) from None
    proven = ProvenEvent(found.hash, event.record["prev_hash"], event.schema.fingerprint_hex, event.body,
                         decoded_copy(event.record, found.hash))
    return _checked(InclusionProof(proven, found.seq, tuple(path), text), trust)


def consistency(log: VerifiedLog, trust: Trust, old: int | tuple[str, str], new: int | tuple[str, str]) -> Made:
    """The consistency proof from checkpoint `old` to `new`: each a stored checkpoint's size, or (where, note text)
    of a checkpoint note from elsewhere (an auditor's or a witness's copy), whose root must be this archive's."""
    def pick(which: int | tuple[str, str], option: str) -> tuple[str, SignedCheckpoint]:
        if isinstance(which, int):
            chosen = _signed(log, trust, which)
            if chosen is None:
                if which not in stored_sizes(log):
                    raise ProveError(f"{option} {which}: no checkpoint of {which:,} events is stored (stored: "
                                     f"{', '.join(map(str, stored_sizes(log)[-5:])) or 'none'})")
                raise ProofFailed(f"{option} {which}: the checkpoint is not co-signed by every witness key")
            return chosen
        where, text = which
        signed = open_log_checkpoint(text, trust, where)
        cp = signed.checkpoint
        if signed.cluster_id != log.cluster_id:
            raise ProofFailed(f"{where}: a checkpoint of {cp.origin!r}, not of cluster {log.cluster_id}'s log")
        if cp.size > log.size:
            raise ProveError(f"{where}: signs {cp.size:,} events, the archive holds {log.size:,}")
        if log.tree.root(cp.size) != cp.root_hash:
            if not log.rebuilt:  # the store's node may be what is wrong: the events decide
                raise log.damaged(f"its root at {cp.size:,} events is not {where}'s")
            raise ProofFailed(f"{where}: signs a tree of {cp.size:,} events that is not this archive's (a split view: "
                              f"the log signed two histories, or the archive was rewritten)")
        return text, signed

    old_text, o = pick(old, "--from")
    new_text, n = pick(new, "--to")
    if o.checkpoint.size > n.checkpoint.size:
        raise ProveError(f"--from signs {o.checkpoint.size:,} events, more than --to's {n.checkpoint.size:,}")
    try:
        path = log.tree.consistency_proof(o.checkpoint.size, n.checkpoint.size) if o.checkpoint.size else []
        verify_consistency(o.checkpoint.size, n.checkpoint.size, o.checkpoint.root_hash, n.checkpoint.root_hash, path)
    except ProofError as exc:
        raise log.damaged(str(exc)) from None
    return _checked(ConsistencyProof(old_text, new_text, tuple(path)), trust)


def prove(paths: Iterable[str | Path], trust: Trust, cluster: str | None = None, *, seq: int | None = None,
          event_id: str | None = None, at: int | None = None, old: int | tuple[str, str] | None = None,
          new: int | tuple[str, str] | None = None) -> Made:
    """What `ctrlaudit prove` makes: the inclusion proof of seq/event_id, or the consistency proof from old to new;
    read again with the tree made from the events when the archive's merkle/ store turns out damaged."""
    for rebuild in (False, True):
        with read_log(paths, trust, cluster, seq, event_id, rebuild) as log:
            try:
                if old is not None and new is not None:
                    return consistency(log, trust, old, new)
                return inclusion(log, trust, at)
            except DamagedStore:
                if rebuild:
                    raise
    raise AssertionError("unreachable")


def read_note_file(path: str | Path) -> str:
    """A checkpoint note from a file named on the command line (capped, UTF-8; ProveError otherwise)."""
    try:
        return read_checkpoint_text(Path(path))
    except SigningError as exc:
        raise ProveError(f"{path}: {str(exc).removeprefix(Path(path).name + ': ')}") from None
