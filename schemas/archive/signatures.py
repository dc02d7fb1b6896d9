"""Checking an archive against keys its reader trusts: the Merkle root of the events at every checkpoint's size must
be the one the checkpoint signs, every checkpoint must be signed by a trusted log key (and, when witness keys are
given, the newest witnessed one co-signed by them), and what comes after the newest checkpoint is reported as an
unsigned tail, never taken as signed.

The hash chain and manifests (schemas.archive.verified) catch accidents; anyone able to write the archive can
re-chain an edited history and rewrite the manifests. A root signed by a key the writer of the archive does not
hold is what such an edit cannot reproduce.

Used through VerifiedRead(trust=...): every table the read hands on in chain order is fed here, so load, check,
the Spark job's driver and verify all check signatures in the one read they already make.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from schemas.archive.checkpoint import Checkpoint, CheckpointError
from schemas.archive.merkle import HASH_SIZE, CompactTree, packed_event_leaves
from schemas.archive.note import Note, NoteError, Verifier, open_note, parse_note
from schemas.archive.signed import SigningError, list_checkpoints, origin_of, read_checkpoint_text
from schemas.errors import ContractError


def _hex_hashes(column: pa.ChunkedArray) -> bytes:
    """The hash column's hex digits back to back, as Arrow holds them (every hash 64 digits: the verified read made
    them so; anything else would misalign the leaves, so it is refused)."""
    parts = []
    for chunk in column.chunks:
        if len(chunk) == 0:
            continue
        _, offsets, data = chunk.buffers()[:3]
        first, last = struct.unpack_from("<i", offsets, 4 * chunk.offset)[0], \
            struct.unpack_from("<i", offsets, 4 * (chunk.offset + len(chunk)))[0]
        if last - first != 64 * len(chunk) or chunk.null_count:
            raise ValueError("an event hash that is not 64 hex digits")
        parts.append(memoryview(data)[first:last])
    return b"".join(parts)


class SignatureProblem(ContractError):
    """A checkpoint that does not hold (schemas.archive.verified turns it into an ArchiveProblem)."""

    def __init__(self, file: str, seq: int | None, message: str, cluster_id: str) -> None:
        self.file, self.seq, self.cluster_id = file, seq, cluster_id
        super().__init__(message)


@dataclass(frozen=True)
class Trust:
    """The keys a reader trusts: log keys (any one signature suffices; several after a rotation) and witness keys
    (each must have co-signed a checkpoint for the events it covers to count as witnessed)."""

    logs: tuple[Verifier, ...]
    witnesses: tuple[Verifier, ...] = ()
    # checkpoints the reader holds from elsewhere (the checkpoints topic, a witness, an earlier audit): the archive
    # must hold their trees too, so that an archive cut back to an older checkpoint (the newer ones deleted) fails
    held: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if not self.logs:
            raise SigningError("checking signatures needs at least one trusted log key (--trusted-key)")


@dataclass
class SignedStatus:
    """What the signatures established about one cluster's archive."""

    cluster_id: str
    events: int = 0  # leaves checked: the events read from seq 0 without a break
    checkpoints: int = 0  # checkpoint files verified
    signed_to: int = 0  # the size of the newest verified checkpoint: events 0..signed_to-1 are signed
    witnessed_to: int = 0  # the size of the newest checkpoint co-signed by every witness key given
    keys: list[str] = field(default_factory=list)  # the log keys that signed, name+id
    first_unsigned_time_ms: int | None = None
    first_unwitnessed_time_ms: int | None = None
    stopped_at: int | None = None  # a gap at this seq: nothing after it could be checked

    @property
    def unsigned(self) -> int:
        return self.events - self.signed_to

    @property
    def unwitnessed(self) -> int:
        return self.events - self.witnessed_to


@dataclass
class _Cluster:
    status: SignedStatus
    checkpoints: dict[int, tuple[str, Checkpoint, Note]]
    tree: CompactTree = field(default_factory=CompactTree)
    broken: bool = False


class SignatureCheck:
    """Fed a cluster's verified tables in chain order; `finish` gives the verdict or raises SignatureProblem."""

    def __init__(self, trust: Trust) -> None:
        self.trust = trust
        self._clusters: dict[str, _Cluster] = {}
        self._held: dict[str, list[tuple[int, Path]]] = {}  # origin -> the held checkpoints of that log
        for path in trust.held:
            try:
                text, _ = parse_note(read_checkpoint_text(path))
                held = Checkpoint.parse(text)
            except (SigningError, NoteError, CheckpointError) as exc:
                raise SignatureProblem(str(path), None, f"{str(exc).removeprefix(path.name + ': ')}", "") from None
            self._held.setdefault(held.origin, []).append((held.size, path))

    def begin(self, cluster_id: str, directories: Iterable[Path]) -> None:
        """Read and open every checkpoint file in the cluster's directories."""
        found: dict[int, tuple[str, Checkpoint, Note]] = {}
        status = SignedStatus(cluster_id)
        keys: set[str] = set()
        given = [(size, path) for d in sorted(set(directories)) for size, path in list_checkpoints(d)]
        given += self._held.pop(origin_of(cluster_id), [])
        for size, path in given:
            checkpoint, note = self._open(cluster_id, size, path)
            held = found.get(size)
            if held is not None and held[1] != checkpoint:
                raise SignatureProblem(path.name, size - 1, f"two checkpoints of {size:,} events sign different "
                                       f"trees ({held[0]} and {path}): a split view of the history", cluster_id)
            if held is None or len(note.signatures) > len(held[2].signatures):
                found[size] = (path.name, checkpoint, note)
            logs = {(v.name, v.key_id) for v in self.trust.logs}
            keys |= {f"{s.name}+{s.key_id:08x}" for s in note.signatures if (s.name, s.key_id) in logs}
        status.keys = sorted(keys)
        self._clusters[cluster_id] = _Cluster(status, dict(sorted(found.items())))

    def _open(self, cluster_id: str, size: int, path: Path) -> tuple[Checkpoint, Note]:
        def problem(message: str) -> SignatureProblem:
            return SignatureProblem(path.name, max(size - 1, 0), message, cluster_id)

        try:
            text = read_checkpoint_text(path)
            note = open_note(text, [*self.trust.logs, *self.trust.witnesses])
            checkpoint = Checkpoint.parse(note.text)
        except (SigningError, NoteError, CheckpointError) as exc:
            raise problem(f"{str(exc).removeprefix(path.name + ': ')}") from None
        logs = {(v.name, v.key_id) for v in self.trust.logs}
        if not any((s.name, s.key_id) in logs for s in note.signatures):
            by = ", ".join(f"{s.name}+{s.key_id:08x}" for s in note.signatures)
            raise problem(f"not signed by a trusted log key (only co-signed by {by})")
        if checkpoint.origin != origin_of(cluster_id):
            raise problem(f"a checkpoint of {checkpoint.origin!r}, not of this cluster's log "
                          f"{origin_of(cluster_id)!r}: copied from another archive")
        if checkpoint.size != size:
            raise problem(f"its name says {size:,} events but it signs {checkpoint.size:,}: renamed (an old "
                          f"checkpoint put in a newer one's place?)")
        return checkpoint, note

    def feed(self, cluster_id: str, table: pa.Table) -> None:
        """The next verified rows of a cluster (rows already seen are skipped; a jump stops the checking)."""
        st = self._clusters[cluster_id]
        if st.broken or table.num_rows == 0:
            return
        tree = st.tree
        seqs = table.column("seq")
        first = seqs[0].as_py()
        if first > tree.size:
            st.broken, st.status.stopped_at = True, tree.size
            return
        skip = tree.size - first
        if skip >= table.num_rows:
            return
        if skip:
            table = table.slice(skip)
        leaves = packed_event_leaves(_hex_hashes(table.column("hash")))
        times = table.column("event_time_ms")
        newest = max(st.checkpoints, default=0)
        start = tree.size
        end = start + len(leaves) // HASH_SIZE
        for size, (name, checkpoint, _) in st.checkpoints.items():
            if start < size <= end:
                tree.extend_packed(leaves[(tree.size - start) * HASH_SIZE:(size - start) * HASH_SIZE])
                if tree.root() != checkpoint.root_hash:
                    previous = max((s for s in st.checkpoints if s < size), default=0)
                    raise SignatureProblem(
                        name, size - 1, f"the archive's events do not hash to the root this checkpoint signs for "
                        f"{size:,} events: events between seq {previous} and {size - 1} were changed, removed "
                        f"or inserted after they were signed", cluster_id)
                st.status.checkpoints += 1
        tree.extend_packed(leaves[(tree.size - start) * HASH_SIZE:])
        witnessed = self._witnessed_to(st)
        if start <= newest < end:
            st.status.first_unsigned_time_ms = times[newest - start].as_py()
        if self.trust.witnesses and start <= witnessed < end:
            st.status.first_unwitnessed_time_ms = times[witnessed - start].as_py()

    def _witnessed_to(self, st: _Cluster) -> int:
        if not self.trust.witnesses:
            return 0
        wanted = {(w.name, w.key_id) for w in self.trust.witnesses}
        sizes = [size for size, (_, _, note) in st.checkpoints.items()
                 if wanted <= {(s.name, s.key_id) for s in note.signatures}]
        return max(sizes, default=0)

    def unmatched(self) -> None:
        """Held checkpoints of no log the read found: the archive given is not the one they sign."""
        for origin, held in self._held.items():
            raise SignatureProblem(str(held[0][1]), None, f"a held checkpoint of {origin!r}, but the archive holds "
                                   f"no events of that cluster", origin.removeprefix("ctrlaudit/"))

    def finish(self, cluster_id: str) -> SignedStatus:
        """The verdict: every checkpoint reached and matched, or SignatureProblem."""
        st = self._clusters[cluster_id]
        status = st.status
        status.events = st.tree.size
        for size, (name, _, _) in st.checkpoints.items():
            if size > st.tree.size:
                if st.broken:
                    raise SignatureProblem(
                        name, size - 1, f"signs {size:,} events but seq {st.tree.size} is missing from what was "
                        f"read: the signed events after it cannot be checked", cluster_id)
                raise SignatureProblem(
                    name, size - 1, f"signs {size:,} events but the archive holds {st.tree.size:,}: events "
                    f"seq {st.tree.size}..{size - 1} were removed after they were signed", cluster_id)
        if not st.checkpoints:
            raise SignatureProblem("", None, f"no checkpoint signed by a trusted key: none of its "
                                   f"{status.events:,} events is signed", cluster_id)
        status.signed_to = max(st.checkpoints)
        status.witnessed_to = self._witnessed_to(st)
        if self.trust.witnesses and status.witnessed_to == 0:
            names = ", ".join(f"{w.name}+{w.key_id:08x}" for w in self.trust.witnesses)
            raise SignatureProblem("", None, f"no checkpoint co-signed by the witness key(s) {names}", cluster_id)
        return status
