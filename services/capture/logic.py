"""The capture pipeline's logic as plain functions and small classes (no Faust, no Kafka).

Restart design (why the normalizer needs no table of its own)
------------------------------------------------------------
The events topic is the record of truth. Every event message carries a ``ctrlaudit-progress`` header:
the last emitted position per source stream (KRaft log/snapshot, offset sampler) after this event, its
seq and its hash. A starting worker reads the *last message* of the events topic and gets the chain
head (seq, hash) and the positions at or below which everything was emitted. It then rebuilds the
normalizer image by replaying the raw topic from its start up to where its consumer resumes (the raw
topic keeps everything, like the events topic; it is a copy of the metadata log, small next to data
topics), emitting only events above those positions. Tables in Kafka and the events topic cannot be
written atomically without transactions, so any table-held "last position" could disagree with the
topic after a kill -9 (a lost or duplicated event); a position read back from the topic itself cannot.
Decoding is deterministic, so the replayed image equals the one the killed worker had.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field, replace

from schemas import codec as event_codec
from schemas.chain import Chain
from schemas.errors import CodecError
from schemas.events import (
    BrokerChange, BrokerChangeKind, ControllerChange, ControllerEvent, OffsetSample, PartitionChange,
    PartitionState, SourceKind,
)
from services.capture.codec import RawRecord, decode_raw
from services.kraft import KRaftError, read_batch
from services.kraft.control import decode_control_batch
from services.kraft.records import decode_data_batch
from services.normalize.kraft import KRaftNormalizer

PROGRESS_HEADER = "ctrlaudit-progress"
KRAFT, SAMPLER = "kraft", "sampler"


# --- positions and dedupe ---------------------------------------------------------------------

def stream_of(event: ControllerEvent) -> str:
    return SAMPLER if event.source.kind is SourceKind.OFFSET_SAMPLER else KRAFT


def position_key(event: ControllerEvent) -> tuple[int, int, int]:
    """Total order of one stream's positions: (offset, rank, index). A snapshot ending at S holds the
    state before offset S, so its events (rank 0) sort before the log record at offset S (rank 1); a
    capture gap starts at its first missing offset and sorts before anything at that offset."""
    s = event.source
    if s.kind is SourceKind.KRAFT_SNAPSHOT:
        return (s.offset, 0, s.index)
    if type(event.payload).__name__ == "CaptureGap":
        return (s.offset, 0, -1)
    return (s.offset, 1, s.index)


@dataclass
class Progress:
    """What the events topic already holds: the chain head and the last position per stream."""

    seq: int = -1
    hash: str = ""
    last: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    def is_new(self, event: ControllerEvent) -> bool:
        last = self.last.get(stream_of(event))
        return last is None or position_key(event) > last

    def advance(self, event: ControllerEvent) -> None:
        self.last[stream_of(event)] = position_key(event)
        self.seq, self.hash = event.seq, event.hash

    def header(self) -> bytes:
        return json.dumps({"seq": self.seq, "hash": self.hash, "last": {k: list(v) for k, v in self.last.items()}},
                          separators=(",", ":")).encode()

    @staticmethod
    def from_header(value: bytes | None) -> "Progress":
        if not value:
            return Progress()
        d = json.loads(value)
        return Progress(d["seq"], d["hash"], {k: tuple(v) for k, v in d["last"].items()})

    @staticmethod
    def from_headers(headers: Iterable[tuple[str, bytes]] | Mapping[str, bytes] | None) -> "Progress":
        items = headers.items() if isinstance(headers, Mapping) else (headers or ())
        for k, v in items:
            if k == PROGRESS_HEADER:
                return Progress.from_header(v)
        return Progress()


# --- raw records -> events ----------------------------------------------------------------------

class DeadLetter(Exception):
    """A raw message the pipeline cannot use; `reason` is one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_raw(value: bytes) -> RawRecord:
    """The RawRecord in a raw-topic message, or DeadLetter with the reason."""
    try:
        return decode_raw(value)
    except CodecError as exc:
        raise DeadLetter(str(exc)) from None


def batch_records(raw: RawRecord) -> list:
    """Decode the record batch a KRaft source shipped (CRC checked)."""
    try:
        b = read_batch(raw.data, 0, raw.file, verify_crc=True)
        if b.size != len(raw.data):
            raise DeadLetter(f"batch is {b.size} bytes but the message holds {len(raw.data)}")
        recs = decode_control_batch(raw.data, b) if b.is_control else decode_data_batch(raw.data, b)
    except KRaftError as exc:
        raise DeadLetter(f"bad record batch at {raw.file}:{raw.position}: {exc}") from None
    if b.base_offset != raw.base_offset:
        raise DeadLetter(f"batch base offset {b.base_offset} != position {raw.base_offset}")
    return recs


class CaptureState:
    """One cluster's normalizer, chain and progress. `process(raw)` returns the new chained events."""

    def __init__(self, cluster_id: str, node_id: int = -1, progress: Progress | None = None,
                 clock=None) -> None:
        self.cluster_id = cluster_id
        self.normalizer = KRaftNormalizer(cluster_id, node_id, clock=clock)
        self.progress = progress or Progress()
        self.chain = Chain(cluster_id, self.progress.seq + 1, self.progress.hash)
        self.clock = clock or (lambda: int(time.time() * 1000))

    def unchained(self, raw: RawRecord) -> list[ControllerEvent]:
        n = self.normalizer
        match raw.kind:
            case "KRAFT_BATCH" | "SNAPSHOT_BATCH":
                out: list[ControllerEvent] = []
                for rec in batch_records(raw):
                    out.extend(n.feed(rec))
                return out
            case "SNAPSHOT_BEGIN":
                n.begin_snapshot(raw.base_offset)
                return []
            case "SNAPSHOT_END":
                if n._snapshot is None:
                    raise DeadLetter(f"SNAPSHOT_END at {raw.base_offset} without SNAPSHOT_BEGIN")
                return n.end_snapshot(raw.append_time_ms)
            case "GAP":
                return [n.gap(raw.base_offset, raw.last_offset, raw.reason or "not read", raw.append_time_ms)]
            case "EVENT":
                try:
                    event = event_codec.decode(raw.data)
                except CodecError as exc:
                    raise DeadLetter(f"EVENT does not hold a ControllerEvent: {exc}") from None
                if event.cluster_id != self.cluster_id:
                    raise DeadLetter(f"EVENT of cluster {event.cluster_id!r} on {self.cluster_id!r}")
                return [replace(event, seq=0, prev_hash="", hash="")]
        raise DeadLetter(f"unknown raw kind {raw.kind!r}")

    def process(self, raw: RawRecord) -> list[tuple[ControllerEvent, bytes]]:
        """The chained events of `raw` that the events topic does not hold yet, each with the progress
        header to send with it."""
        if raw.cluster_id != self.cluster_id:
            raise DeadLetter(f"raw record of cluster {raw.cluster_id!r} given to {self.cluster_id!r}")
        out = []
        for e in self.unchained(raw):
            if self.progress.is_new(e):
                e = self.chain.append(e)
                self.progress.advance(e)
                out.append((e, self.progress.header()))
        return out


# --- watch: per-event invariants ----------------------------------------------------------------
# Names follow checks/catalog.py. State is kept in plain mappings (Faust tables in the worker):
#   partitions: "cluster|topic_id|partition" -> state dict, brokers: "cluster|id" -> "active"|"fenced",
#   controller: cluster -> last controller epoch.

def state_dict(s: PartitionState | None) -> dict | None:
    return None if s is None else event_codec._state(s)


def controller_epoch_monotonic(e: ControllerEvent, controller: Mapping[str, int]) -> list[str]:
    last = controller.get(e.cluster_id)
    if isinstance(e.payload, ControllerChange) and last is not None and e.payload.epoch <= last:
        return [f"controller epoch {e.payload.epoch} after {last}"]
    if last is not None and e.controller_epoch >= 0 and e.controller_epoch < last and not e.bootstrap:
        return [f"event written in controller epoch {e.controller_epoch} after epoch {last}"]
    return []


def leader_epoch_monotonic(p: PartitionChange) -> list[str]:
    b, a = p.before, p.after
    if b is None or a is None:
        return []
    if a.leader_epoch < b.leader_epoch:
        return [f"leader epoch {b.leader_epoch} -> {a.leader_epoch}"]
    if a.leader != b.leader and a.leader_epoch <= b.leader_epoch:
        return [f"leader {b.leader} -> {a.leader} without a new leader epoch ({a.leader_epoch})"]
    return []


def partition_epoch_monotonic(p: PartitionChange) -> list[str]:
    b, a = p.before, p.after
    if b is not None and a is not None and a.partition_epoch <= b.partition_epoch:
        return [f"partition epoch {b.partition_epoch} -> {a.partition_epoch}"]
    return []


def leader_in_isr(p: PartitionChange) -> list[str]:
    a = p.after
    if a is None:
        return []
    out = []
    if a.leader >= 0 and a.leader not in a.isr:
        out.append(f"leader {a.leader} not in ISR {list(a.isr)}")
    if not set(a.isr) <= set(a.replicas):
        out.append(f"ISR {list(a.isr)} not within replicas {list(a.replicas)}")
    return out


def isr_elr_sanity(p: PartitionChange) -> list[str]:
    a = p.after
    if a is None:
        return []
    out = []
    if not set(a.elr) <= set(a.replicas):
        out.append(f"ELR {list(a.elr)} not within replicas {list(a.replicas)}")
    if set(a.isr) & set(a.elr):
        out.append(f"ISR {list(a.isr)} and ELR {list(a.elr)} overlap")
    if set(a.adding_replicas) & set(a.removing_replicas):
        out.append(f"adding {list(a.adding_replicas)} and removing {list(a.removing_replicas)} overlap")
    if not (set(a.adding_replicas) | set(a.removing_replicas)) <= set(a.replicas):
        out.append("adding/removing replicas not within replicas")
    return out


def fenced_broker_not_in_isr(e: ControllerEvent, brokers: Mapping[str, str]) -> list[str]:
    """A change that makes a fenced or unregistered broker leader or adds it to the ISR (brokers that
    join at this change; KRaft's last-replica-standing state, leader -1 with one ISR member, is legal)."""
    p = e.payload
    if not isinstance(p, PartitionChange) or p.after is None or not brokers:
        return []
    a, b = p.after, p.before
    if a.leader == -1 and len(a.isr) <= 1:
        return []
    now = set(a.isr) | ({a.leader} if a.leader >= 0 else set())
    joined = now if (b is None or e.bootstrap) else now - (set(b.isr) | {b.leader})
    bad = []
    for broker in sorted(joined):
        state = brokers.get(f"{e.cluster_id}|{broker}", "unregistered")
        if state != "active":
            bad.append(f"{state} broker {broker} joins leader/ISR (leader {a.leader}, ISR {list(a.isr)})")
    return bad


def state_continuity(e: ControllerEvent, partitions: Mapping[str, dict | None]) -> list[str]:
    p = e.payload
    if not isinstance(p, PartitionChange) or e.bootstrap:
        return []
    key = f"{e.cluster_id}|{p.topic_id}|{p.partition}"
    if key not in partitions:
        return []  # first sight of this partition since the watcher started
    seen = partitions[key]
    if seen != state_dict(p.before):
        return [f"before {state_dict(p.before)} != previous after {seen}: an event is missing"]
    return []


def watch(e: ControllerEvent, partitions: MutableMapping, brokers: MutableMapping,
          controller: MutableMapping) -> list[dict]:
    """Every per-event check, then the state update. Returns alert dicts (invariant, detail, event)."""
    found: list[tuple[str, str]] = []
    found += [("controller_epoch_monotonic", m) for m in controller_epoch_monotonic(e, controller)]
    p = e.payload
    if isinstance(p, PartitionChange):
        for name, fn in (("leader_epoch_monotonic", leader_epoch_monotonic),
                         ("partition_epoch_monotonic", partition_epoch_monotonic),
                         ("leader_in_isr", leader_in_isr), ("isr_elr_sanity", isr_elr_sanity)):
            found += [(name, m) for m in fn(p)]
        found += [("fenced_broker_not_in_isr", m) for m in fenced_broker_not_in_isr(e, brokers)]
        found += [("state_continuity", m) for m in state_continuity(e, partitions)]
        partitions[f"{e.cluster_id}|{p.topic_id}|{p.partition}"] = state_dict(p.after)
    elif isinstance(p, BrokerChange):
        key = f"{e.cluster_id}|{p.broker_id}"
        if p.after is None or p.kind is BrokerChangeKind.UNREGISTERED:
            brokers[key] = "unregistered"
        else:
            brokers[key] = "fenced" if p.after.fenced else "active"
    if isinstance(p, ControllerChange):
        controller[e.cluster_id] = max(p.epoch, controller.get(e.cluster_id, -1))
    elif e.controller_epoch >= 0 and not e.bootstrap:
        controller[e.cluster_id] = max(e.controller_epoch, controller.get(e.cluster_id, -1))
    return [alert(e, name, detail) for name, detail in found]


def alert(e: ControllerEvent, invariant: str, detail: str) -> dict:
    return {"invariant": invariant, "detail": detail, "cluster_id": e.cluster_id, "event_id": e.event_id,
            "seq": e.seq, "offset": e.source.offset, "index": e.source.index, "kind": e.kind,
            "event_time_ms": e.event_time_ms}


# --- offset samples -----------------------------------------------------------------------------

def hw_within_isr(sample: OffsetSample, isr: Iterable[int]) -> bool:
    """HW <= min LEO over the ISR members that were sampled (HW read first, so a healthy partition holds)."""
    leos = [r.log_end_offset for r in sample.replicas if r.broker_id in set(isr) and r.log_end_offset >= 0]
    return not leos or sample.high_watermark <= min(leos)
