"""Identity and tamper evidence: deterministic event ids and the per-cluster hash chain.

event_id depends only on the cluster and the source position, so capturing the same metadata
record twice (after a restart, from another node's copy) yields the same id and duplicates are
detectable. hash = sha256(prev_hash || Avro body of the event with hash = ""), the body written
with the event's writer schema, so any edit, deletion, insertion or reordering breaks the chain.
"""
from __future__ import annotations

import hashlib
import io
from pathlib import PurePath
from dataclasses import replace
from typing import Any

import fastavro

from schemas import loader
from schemas.events import ControllerEvent, SourceKind, SourcePosition


# Sources whose offset (+ index) names a record cluster-wide: the file it was read from (a segment
# of one node's replica, which rolls at its own offsets) must not change the id.
_OFFSET_NAMED = {SourceKind.KRAFT_LOG, SourceKind.KRAFT_SNAPSHOT, SourceKind.SIMULATOR, SourceKind.OFFSET_SAMPLER}


def event_id(cluster_id: str, source: SourcePosition) -> str:
    """Derived from the cluster and the source position only: the same change read again, from
    another node's copy or from a copy at another path, gets the same id."""
    file = None if source.kind in _OFFSET_NAMED or source.file is None else PurePath(source.file).name
    # "|".join(str(v) ...) of the seven values, as an f-string (the capture worker computes one per event)
    key = f"{cluster_id}|{source.kind.value}|{source.offset}|{source.index}|{source.zxid}|{file}|{source.line}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


_KIND_VALUES = {k: k.value for k in _OFFSET_NAMED}  # Enum.value is a descriptor call (~0.2 us)


def offset_event_id(cluster_id: str, kind: SourceKind, offset: int, index: int) -> str:
    """event_id(cluster_id, SourcePosition(kind, offset, index, node_id, None, file, None)) for an offset-
    named kind (no zxid or line; the file does not count): the KRaft normalizer's one id per event,
    without the position's attribute reads. KeyError for a kind whose id depends on the file."""
    key = f"{cluster_id}|{_KIND_VALUES[kind]}|{offset}|{index}|None|None|None"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def record_hash(record: dict[str, Any], parsed_schema: Any = None) -> str:
    """The hash of an Avro record dict (as the codec or fastavro's reader gives it)."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, parsed_schema or loader.current().parsed, {**record, "hash": ""})
    return hashlib.sha256(record["prev_hash"].encode() + body.getvalue()).hexdigest()


class Chain:
    """Assigns seq, prev_hash and hash to a cluster's events in order. Not thread-safe."""

    def __init__(self, cluster_id: str, next_seq: int = 0, head_hash: str = "") -> None:
        self.cluster_id = cluster_id
        self.next_seq = next_seq
        self.head_hash = head_hash

    def append(self, event: ControllerEvent) -> ControllerEvent:
        from schemas.codec import to_avro  # codec imports chain's event_id; keep the cycle lazy

        if event.cluster_id != self.cluster_id:
            raise ValueError(f"event of cluster {event.cluster_id!r} appended to chain of {self.cluster_id!r}")
        linked = replace(event, seq=self.next_seq, prev_hash=self.head_hash, hash="")
        digest = record_hash(to_avro(linked))
        linked = replace(linked, hash=digest)
        self.next_seq += 1
        self.head_hash = digest
        return linked
