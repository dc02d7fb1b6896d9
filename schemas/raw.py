"""The raw topic's record: one unit a live source read, with its position, before it is normalized.

A batch of the KRaft metadata log (KRAFT_BATCH), a snapshot's bounds and batches (SNAPSHOT_BEGIN, SNAPSHOT_BATCH,
SNAPSHOT_END: base and last offset are its end offset), what the ZooKeeper watch read, or the offsets a source
could not read (GAP, with the reason). The live KRaft tail (services/kraft/live.py) makes them, the capture
publishes them on its raw topic as they are (services/capture/serializers.py: the Avro schema) and its
normalize agent reads them back. Here, in the ground package, because both a source and the capture hold it and
the source needs no capture extra."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RawRecord:
    cluster_id: str
    node_id: int
    kind: str
    position: int
    base_offset: int
    last_offset: int
    epoch: int
    append_time_ms: int
    read_time_ms: int
    data: bytes = b""
    file: str | None = None
    control_type: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class SkippedBytes:
    """Bytes [start, end) of a source's file that were not read, and why: the stretch an offline import records as a
    capture gap (services/kraft/files.py for a metadata log, services/zookeeper/txnlog.py for a transaction log)."""

    file: str
    start: int
    end: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: skipped bytes [{self.start}, {self.end}){self.around()}: {self.reason}"

    def around(self) -> str:
        """What the source knows of the stretch's neighbours, in parentheses; nothing here."""
        return ""
