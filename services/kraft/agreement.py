"""Several nodes' copies of the metadata log, one history: every node (controller or broker) keeps a replica of
`__cluster_metadata-0`, and Kafka has had bugs where they diverged (the TLA+ specs' MetadataLogMatchingProperty,
and LogMatching / NoLogDivergence of the Raft specs). One node's copy cannot show a divergence; several can.

Raft's log matching: two logs that hold a batch of the same epoch at the same offset hold the same batch, and all
that comes before it. Batches are replicated as the leader wrote them (base offset, epoch, CRC and bytes alike), so
the copies are compared batch by batch on the offsets they share:
- the same offset, the same epoch, different bytes (or batch bounds): a divergence, named by node, offset and
  both batches; no import;
- different epochs at the same offset: the lower one is a deposed leader's uncommitted tail (a later leader
  wrote over it, so it was never committed: Raft's leader completeness), legal only while that node's log ends
  in such batches; its tail is not imported, and said. A lower-epoch batch that a later batch of that node
  follows in agreement again cannot be a tail: a divergence.

Agreed, the history is imported once, from the copy reaching furthest (its snapshot covers what the others'
retention kept or not). Snapshots are images, not replicated batches: they are not compared.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from services.kraft.batch import Batch, read_batch
from services.kraft.errors import KRaftError, TruncatedLogError
from services.kraft.files import metadata_files, segment_base_offset
from services.normalize.imports import BadImport

META = "meta.properties"
_CRC_END = 21  # baseOffset 8, batchLength 4, partitionLeaderEpoch 4, magic 1, crc 4: the CRC covers what follows


@dataclass(frozen=True)
class NodeCopy:
    node: int  # node.id of its meta.properties
    directory: Path  # the __cluster_metadata-0 directory


@dataclass(frozen=True)
class Copied:
    """One batch of a copy: its header and the bytes its CRC covers (attributes to the end)."""

    batch: Batch
    body: bytes

    @property
    def last(self) -> int:
        return self.batch.last_offset

    def describe(self) -> str:
        b = self.batch
        kind = "control " if b.is_control else ""
        return (f"{kind}batch {b.base_offset}..{b.last_offset} epoch {b.leader_epoch} crc {b.crc:08x} "
                f"({b.count} record(s), {Path(b.file or '?').name} byte {b.position})")


@dataclass
class Agreement:
    copies: list[NodeCopy]
    chosen: NodeCopy  # the copy imported
    shared: int = 0  # batches compared on offsets two copies share
    # node -> (first offset, its epoch, the later epoch there): an uncommitted tail a later leader wrote over
    stale_tails: dict[int, tuple[int, int, int]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [f"{len(self.copies)} copies of the metadata log (nodes "
               f"{', '.join(str(c.node) for c in self.copies)}) agree on the {self.shared:,} batch(es) they share; "
               f"imported once, from node {self.chosen.node}"]
        for node, (offset, mine, later) in sorted(self.stale_tails.items()):
            out.append(f"node {node}: an uncommitted tail from offset {offset} (epoch {mine}) that a later leader "
                       f"(epoch {later}) wrote over; not imported")
        return out


def node_id(directory: Path) -> int | None:
    """node.id of the meta.properties beside (or copied into) a metadata directory."""
    for place in (directory / META, directory.parent / META):
        if place.is_file():
            m = re.search(r"^node\.id=\s*(-?\d+)\s*$", place.read_text(errors="replace")[:65536], re.M)
            if m:
                return int(m.group(1))
    return None


def node_copies(directories: Sequence[Path]) -> list[NodeCopy] | None:
    """The copies of several nodes, when `directories` (metadata directories) are two or more whose
    meta.properties name distinct node ids; None otherwise (one node's files, however given)."""
    directories = list(dict.fromkeys(d.resolve() for d in directories))  # one directory given twice is one
    if len(directories) < 2 or not all(d.is_dir() for d in directories):
        return None
    ids = [node_id(d) for d in directories]
    if any(i is None for i in ids):
        return None
    if len(set(ids)) != len(ids):  # two directories of one node: which is its log?
        dup = next(i for i in ids if ids.count(i) > 1)
        raise BadImport(f"two copies of node {dup}'s metadata log: give each node's once")
    return [NodeCopy(i, d) for i, d in zip(ids, directories) if i is not None]


def _batches(copy: NodeCopy) -> list[Copied]:
    """The copy's batches in offset order (segments only; a copy that ends inside a batch ends before it)."""
    out: list[Copied] = []
    for f in metadata_files(copy.directory):
        if segment_base_offset(f) is None:
            continue
        buf = f.read_bytes()
        pos = 0
        while pos < len(buf):
            try:
                b = read_batch(buf, pos, str(f), verify_crc=True, limit=len(buf))
            except TruncatedLogError:
                break  # a copy that raced an append, or a kill -9's half batch: not yet replicated data
            except KRaftError as e:
                raise BadImport(f"node {copy.node}: {f}: byte {pos}: {e}") from None
            out.append(Copied(b, bytes(buf[pos + _CRC_END:b.end_position])))
            pos = b.end_position
    out.sort(key=lambda c: c.batch.base_offset)
    return out


def _same(a: Copied, b: Copied) -> bool:
    return (a.batch.base_offset == b.batch.base_offset and a.last == b.last
            and a.batch.leader_epoch == b.batch.leader_epoch and a.batch.crc == b.batch.crc and a.body == b.body)


def _at(batches: list[Copied], offset: int) -> int | None:
    """Index of the batch holding `offset` (batches in order, disjoint)."""
    lo, hi = 0, len(batches)
    while lo < hi:
        mid = (lo + hi) // 2
        if batches[mid].last < offset:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < len(batches) and batches[lo].batch.base_offset <= offset else None


def compare(copies: Sequence[NodeCopy]) -> Agreement:
    """Hold the copies to each other (see the module doc); a divergence is a BadImport naming it."""
    logs = {c.node: _batches(c) for c in copies}
    tails: dict[int, tuple[int, int, int]] = {}
    shared = 0
    for i, a in enumerate(copies):
        for b in copies[i + 1:]:
            la, lb = logs[a.node], logs[b.node]
            for k, x in enumerate(la):
                j = _at(lb, x.batch.base_offset)
                if j is None:
                    continue
                y = lb[j]
                if _same(x, y):
                    shared += 1
                    continue
                ex, ey = x.batch.leader_epoch, y.batch.leader_epoch
                if ex != ey:
                    low, high, rest = (a, b, la[k:]) if ex < ey else (b, a, lb[j:])
                    top = max(ex, ey)
                    if all(c.batch.leader_epoch < top for c in rest):
                        start = rest[0].batch.base_offset
                        if low.node not in tails or tails[low.node][0] > start:
                            tails[low.node] = (start, min(ex, ey), top)
                        break
                raise BadImport(
                    f"the metadata logs diverge at offset {max(x.batch.base_offset, y.batch.base_offset)}: "
                    f"node {a.node} has {x.describe()}, node {b.node} has {y.describe()}")
    # the copy reaching furthest without a stale tail (its snapshot covers what precedes its segments)
    def reach(c: NodeCopy) -> int:
        return logs[c.node][-1].last if logs[c.node] else -1
    candidates = [c for c in copies if c.node not in tails] or list(copies)
    chosen = max(candidates, key=lambda c: (reach(c), -c.node))
    return Agreement(list(copies), chosen, shared, tails)
