"""The capture pipeline's logic as plain functions and small classes (no Faust, no Kafka).

Restart design (what lives in the events topic, and what in a table)
--------------------------------------------------------------------
The events topic is the record of truth. Every event message carries a ``ctrlaudit-progress`` header:
the last emitted position per source stream (KRaft log/snapshot, offset sampler) after this event, its
seq and its hash. A starting worker reads the *last message* of the events topic and gets the chain
head (seq, hash) and the positions at or below which everything was emitted. Tables in Kafka and the
events topic cannot be written atomically without transactions, so a table-held "last position" or
chain head could disagree with the topic after a kill -9 (a lost or duplicated event); a position read
back from the topic itself cannot.

The normalizer image is different: it is a pure function of the raw-topic prefix it was built from, so
it can be kept in a changelog-backed table (services/capture/image_store.py: checkpoints taken after
the events they cover are delivered, sha256-checked, written slot-wise so a kill -9 leaves the previous
one whole). A starting worker takes the last checkpoint and replays the raw topic from its raw offset
(from offset 0 when there is none, or it is refused) up to where its consumer resumes, emitting only
events above the topic's positions. Decoding is deterministic, so the image equals the one the killed
worker had.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePath

from schemas import codec as event_codec
from schemas import loader
from schemas.errors import CodecError
from schemas.events import CaptureGap, ControllerEvent, OffsetSample, SourceKind
from schemas.archive.chain import Chain
from schemas.raw import RawRecord
from services.capture.serializers import decode_raw
from services.kraft import KRaftError, read_batch
from services.kraft.control import decode_control_batch
from services.kraft.records import Record, decode_data_batch
from services.kraft.normalizer import KRaftNormalizer
from services.zookeeper.normalizer import ZooKeeperNormalizer
from services.zookeeper import watch as zkwatch

PROGRESS_HEADER = "ctrlaudit-progress"
KRAFT, SAMPLER = "kraft", "sampler"


# --- positions and dedupe ---------------------------------------------------------------------

def stream_of(event: ControllerEvent) -> str:
    return SAMPLER if event.source.kind is SourceKind.OFFSET_SAMPLER else KRAFT


def _followed_key(raw: RawRecord, event: ControllerEvent) -> tuple[int, int, int]:
    """A followed log's order: its kept line `seq` (the raw record's base offset), then the stretches lost after it,
    in their order (the raw record's position: request_source.to_raw)."""
    if isinstance(event.payload, CaptureGap):
        return (raw.base_offset, 2, raw.position)
    return (raw.base_offset, 1, 0)


def request_stream(event: ControllerEvent) -> str:
    """The stream of a followed request log line's event (services/requests/follow.py): its node's log. Its position
    is the line's place among the log's kept lines (the raw record's base offset, Position.seq), not in the event:
    the event's time and place may repeat (a clock stepped back), a log's seq never does."""
    name = PurePath(event.source.file or "").name
    return f"requests:{event.source.node_id}:{name[:name.index('.log') + 4] if '.log' in name else name}"


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
        # json.dumps(..., separators=(",", ":")) of {"seq", "hash", "last": {stream: [o, r, i]}}, spelled out
        # (once per event on the hot path); stream names and the hex hash need no escaping
        items = self.last.items()
        if len(items) == 1:  # one stream (KRaft only, the usual case): one f-string, no join
            for k, (o, r, i) in items:
                return f'{{"seq":{self.seq},"hash":"{self.hash}","last":{{"{k}":[{o},{r},{i}]}}}}'.encode()
        last = ",".join([f'"{k}":[{o},{r},{i}]' for k, (o, r, i) in items])
        return f'{{"seq":{self.seq},"hash":"{self.hash}","last":{{{last}}}}}'.encode()

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


def batch_records(raw: RawRecord) -> list[Record]:
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


class EncodingChain:
    """The chain (schemas.archive.chain.Chain) that also gives each event's events-topic value: its stored body
    after the single-object header, from the one write of the body."""

    def __init__(self, cluster_id: str, next_seq: int = 0, head_hash: str = "") -> None:
        self.chain = Chain(cluster_id, next_seq, head_hash)
        self._header = event_codec.MAGIC + loader.current().fingerprint

    def append(self, event: ControllerEvent, owned: bool = False) -> tuple[ControllerEvent, bytes]:
        """The linked event and its value (owned: see Chain.append_with_body)."""
        linked, body = self.chain.append_with_body(event, owned)
        return linked, self._header + body


class CaptureState:
    """One cluster's normalizer, chain and progress. `process(raw)` returns the new chained events, each
    as (event, progress header, encoded value)."""

    def __init__(self, cluster_id: str, node_id: int = -1, progress: Progress | None = None,
                 clock: Callable[[], int] | None = None) -> None:
        self.cluster_id = cluster_id
        self.normalizer = KRaftNormalizer(cluster_id, node_id, clock=clock)
        self.zookeeper: ZooKeeperNormalizer | None = None  # a ZooKeeper-mode cluster's (capture --zookeeper)
        self.progress = progress or Progress()
        self.chain = EncodingChain(cluster_id, self.progress.seq + 1, self.progress.hash)
        self.clock = clock or (lambda: int(time.time() * 1000))

    def unchained(self, raw: RawRecord) -> list[ControllerEvent]:
        n = self.normalizer
        if raw.kind in zkwatch.RAW_KINDS or (raw.kind == "GAP" and raw.file == zkwatch.LIVE):
            return self._zookeeper(raw)
        match raw.kind:
            case "KRAFT_BATCH" | "SNAPSHOT_BATCH":
                return n.feed_all(batch_records(raw))
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
                if not raw.data and raw.reason:
                    # lines of a node's request or authorizer log not read, as an earlier build sent them (now
                    # their CaptureGap is in the record, request_source.to_raw): said on the dead-letter topic
                    raise DeadLetter(f"request log of node {raw.node_id}: {raw.reason}")
                if not raw.data and raw.file:
                    return []  # a request log's position with no line kept since (request_source.Mark)
                try:
                    event = event_codec.decode(raw.data)
                except CodecError as exc:
                    raise DeadLetter(f"EVENT does not hold a ControllerEvent: {exc}") from None
                if event.cluster_id != self.cluster_id:
                    raise DeadLetter(f"EVENT of cluster {event.cluster_id!r} on {self.cluster_id!r}")
                return [replace(event, seq=0, prev_hash="", hash="")]
        raise DeadLetter(f"unknown raw kind {raw.kind!r}")

    def _zookeeper(self, raw: RawRecord) -> list[ControllerEvent]:
        if self.zookeeper is None:
            self.zookeeper = ZooKeeperNormalizer(self.cluster_id, clock=self.clock)
        try:
            item = zkwatch.from_raw(raw.kind, raw.position, raw.base_offset, raw.last_offset, raw.append_time_ms,
                                    raw.data, raw.reason)
        except (ValueError, KeyError, TypeError) as exc:
            raise DeadLetter(f"{raw.kind} does not hold a watched ZooKeeper item: {exc}") from None
        return self.zookeeper.feed_watched(item)

    def process(self, raw: RawRecord) -> list[tuple[ControllerEvent, bytes, bytes]]:
        """The chained events of `raw` that the events topic does not hold yet, each with the progress
        header to send with it and its events-topic value (schemas.codec.encode of the event)."""
        if raw.cluster_id != self.cluster_id:
            raise DeadLetter(f"raw record of cluster {raw.cluster_id!r} given to {self.cluster_id!r}")
        out = []
        progress, last, append = self.progress, self.progress.last, self.chain.append
        events = self.unchained(raw)
        followed = raw.kind == "EVENT" and len(events) == 1 and events[0].source.kind is SourceKind.REQUEST_LOG
        for e in events:
            # Progress.is_new and .advance, the stream and position computed once
            stream, key = (request_stream(e), _followed_key(raw, e)) if followed else (stream_of(e), position_key(e))
            was = last.get(stream)
            if was is None or key > was:
                e, value = append(e, owned=True)  # unchained() made it for this call
                last[stream] = key
                progress.seq, progress.hash = e.seq, e.hash
                out.append((e, progress.header(), value))
        return out


# --- a killed worker's last sends ---------------------------------------------------------------

SETTLE_SECONDS = 180.0  # longer than a follower takes to leave the ISR (replica.lag.time.max.ms, 30 s by default)


class Unsettled(Exception):
    """The events topic still holds messages its leader appended but did not commit."""


def wait_settled(log_ends: Callable[[], tuple[int, int] | None], timeout_s: float = SETTLE_SECONDS,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> int:
    """Wait until the events topic's leader holds nothing uncommitted (high watermark = log end offset); gives how
    many messages were waited for. A worker killed while its last batch waited for acks=all (a follower slow or
    gone, not yet out of the ISR) left that batch in the leader's log: it is committed when the ISR catches up or
    shrinks, and a successor that read the topic's end before then would send its events again. So the
    successor reads the topic only once nothing is pending: the batch is then in the topic, or gone with a
    leader change. `log_ends` gives (high watermark, log end offset), None when not known now."""
    deadline = clock() + timeout_s
    waited, last = 0, None
    while True:
        ends = log_ends()
        if ends is not None:
            hw, leo = ends
            if hw >= leo:
                return waited
            waited = max(waited, leo - hw)
        last = ends
        if clock() >= deadline:
            raise Unsettled("the events topic's leader holds " + (
                f"{last[1] - last[0]} message(s) not committed (high watermark {last[0]}, log end {last[1]})"
                if last is not None else "an end it did not tell") + f" after {timeout_s:.0f} s: not read back "
                "until they are committed or dropped, so that nothing is sent twice")
        sleep(0.5)


# --- offset samples -----------------------------------------------------------------------------

def hw_within_isr(sample: OffsetSample, isr: Iterable[int]) -> bool:
    """HW <= min LEO over the ISR members that were sampled (HW read first, so a healthy partition holds)."""
    leos = [r.log_end_offset for r in sample.replicas if r.broker_id in set(isr) and r.log_end_offset >= 0]
    return not leos or sample.high_watermark <= min(leos)
