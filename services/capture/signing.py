"""The capture worker signs what it publishes: per cluster, the RFC 9162 Merkle tree over the chain hashes of the
events on the events topic (leaf i is event seq i, as in the archive: schemas/archive/signed.py), and every
`sign_every_events` events or `sign_every_seconds` seconds (when there are new ones) a C2SP checkpoint of it signed
with the worker's key, published to the checkpoints topic keyed by cluster id. The archiver stores each one beside
the archive once its files reach the checkpoint's size and its own tree gives the same root
(services/capture/archiver.py), so `ctrlaudit verify --trusted-key` holds the archive to what capture published.

Only delivered events are signed. The events are emitted into the tree's pending list in chain order as the worker
hands them to the producer; the producer reports each record batch the brokers acknowledged (produce.py: the last
seq of each cluster in it and its offset) and only then do those events enter the tree. A checkpoint is made from
the tree alone, so it never names an event the topic might not hold.

What survives a kill -9: the checkpoints topic itself. Each checkpoint message carries, in its `ctrlaudit-tree`
header, the tree's right edge at that size (the O(log n) perfect-subtree roots, merkle.CompactTree) and the events
topic offset of its last event. A starting worker takes the newest such message of its cluster that its own key
signed and whose right edge gives the signed root, checks that the events topic still holds the named event at that
offset with that hash, and appends the events after it from the events topic (their hashes from the progress header
each message carries: logic.py). A Kafka message is written whole or not at all, and one that does not verify is
passed over (the one before it is taken), so a checkpoint cut short or forged is never resumed from; with none the
tree is rebuilt from the events topic's start (the first signed start of a capture that ran unsigned, a new key).
The events topic is the record of truth here too: the tree is only ever a function of what it holds.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from contextlib import aclosing
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from schemas import codec as event_codec
from schemas.archive.checkpoint import Checkpoint, open_checkpoint
from schemas.archive.merkle import HASH_SIZE, CompactTree, ProofError, packed_event_leaves
from schemas.archive.note import NoteError, Signer, sign_note
from schemas.archive.signed import MAX_CHECKPOINT_BYTES, origin_of
from schemas.errors import CodecError, ContractError
from schemas.events import ControllerEvent
from services.capture.logic import Progress

log = logging.getLogger(__name__)

TREE_HEADER = "ctrlaudit-tree"
MAX_TREE_HEADER = 8 * 1024  # 64 hashes in hex and three numbers: ~4.3 KB at most
CATCH_UP_BATCH = 65_536  # hashes appended to the tree at once when catching up from the events topic
_HEX = frozenset("0123456789abcdef")


class StateRefused(ContractError):
    """A checkpoints-topic message the worker cannot resume its tree from; the message says why."""


class OutOfStep(ContractError):
    """Events that do not continue the tree (never expected: the chain and the producer keep them in order)."""


class _Record(Protocol):
    """A consumed message (aiokafka's ConsumerRecord), the fields read here."""

    offset: int
    key: bytes | None
    value: bytes
    headers: Sequence[tuple[str, bytes]]


def _hex_hash(value: object, what: str) -> str:
    if not isinstance(value, str) or len(value) != 2 * HASH_SIZE or not set(value) <= _HEX:
        raise StateRefused(f"{what} is not {2 * HASH_SIZE} lowercase hex digits")
    return value


def _count(value: object, what: str, low: int) -> int:
    if type(value) is not int or value < low:  # type(): a JSON true is no number
        raise StateRefused(f"{what} is not a whole number >= {low}")
    return value


@dataclass(frozen=True)
class TreeState:
    """What a checkpoint message says about the tree it signs, for a worker to resume from: its size, its right
    edge (merkle.CompactTree.nodes), the events-topic offset of event seq size - 1 and that event's hash."""

    size: int
    nodes: tuple[bytes, ...]
    events_offset: int
    last_hash: str

    def header(self) -> bytes:
        return json.dumps({"size": self.size, "nodes": [n.hex() for n in self.nodes],
                           "events_offset": self.events_offset, "last_hash": self.last_hash},
                          separators=(",", ":")).encode()

    @classmethod
    def parse(cls, raw: bytes) -> TreeState:
        if len(raw) > MAX_TREE_HEADER:
            raise StateRefused(f"{TREE_HEADER} header of {len(raw)} bytes, at most {MAX_TREE_HEADER}")
        try:
            d = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise StateRefused(f"{TREE_HEADER} header is not JSON") from None
        if not isinstance(d, dict) or set(d) != {"size", "nodes", "events_offset", "last_hash"}:
            raise StateRefused(f"{TREE_HEADER} header is not {{size, nodes, events_offset, last_hash}}")
        size = _count(d["size"], "size", 1)
        offset = _count(d["events_offset"], "events_offset", 0)
        if not isinstance(d["nodes"], list):
            raise StateRefused("nodes is not a list")
        nodes = tuple(bytes.fromhex(_hex_hash(n, "a node")) for n in d["nodes"])
        if len(nodes) != size.bit_count():
            raise StateRefused(f"{len(nodes)} nodes for a tree of {size} events (expected {size.bit_count()})")
        return cls(size, nodes, offset, _hex_hash(d["last_hash"], "last_hash"))


def resume_state(record: _Record, cluster_id: str, signers: Sequence[Signer]) -> TreeState:
    """The tree state of a checkpoints-topic message of `cluster_id`, if it is whole and this worker's: its note
    signed by one of `signers` with the cluster's origin, and its right edge giving the root the note signs."""
    if len(record.value) > MAX_CHECKPOINT_BYTES:
        raise StateRefused(f"a value of {len(record.value)} bytes is no checkpoint")
    raw = next((v for k, v in record.headers or () if k == TREE_HEADER), None)
    if raw is None:
        raise StateRefused(f"no {TREE_HEADER} header")
    state = TreeState.parse(raw)
    problems = []
    for signer in signers:
        try:
            checkpoint, _ = open_checkpoint(record.value, signer.verifier, origin=origin_of(cluster_id))
            break
        except NoteError as exc:
            problems.append(str(exc))
    else:
        raise StateRefused(f"not a checkpoint of {origin_of(cluster_id)} signed by this worker's key "
                           f"({'; '.join(problems)})")
    if checkpoint.size != state.size:
        raise StateRefused(f"the note signs {checkpoint.size} events, the header says {state.size}")
    if CompactTree(state.size, state.nodes).root() != checkpoint.root_hash:
        raise StateRefused("the header's nodes do not give the root the note signs")
    return state


def event_of(record: _Record) -> tuple[str, int, str] | None:
    """(cluster id, seq, hash) of an events-topic message: from its key and progress header, or, for a message
    without them (or with one that does not read), from its value; None for a value that is no event (the archiver
    stops at it, and the tree cannot pass it either: OutOfStep at the next event)."""
    progress = None
    for k, v in record.headers or ():
        if k == "ctrlaudit-progress":
            try:
                progress = Progress.from_header(v)
            except (ValueError, KeyError, TypeError, AttributeError):
                progress = None
    if progress is not None and record.key and _is_hash(progress.hash) and type(progress.seq) is int:
        return record.key.decode("utf-8", "replace"), progress.seq, progress.hash
    try:
        e = event_codec.decode(record.value)
    except CodecError:
        return None
    return (e.cluster_id, e.seq, e.hash) if _is_hash(e.hash) else None


def _is_hash(value: object) -> bool:
    """A chain hash as the chain writes it: 64 lowercase hex digits (what the tree's leaves are made of)."""
    return isinstance(value, str) and len(value) == 2 * HASH_SIZE and set(value) <= _HEX


class ClusterLog:
    """One cluster's tree: `tree` holds the delivered events (seq 0..size-1), `pending` the hashes of the events
    emitted after them, in seq order, until their delivery is confirmed."""

    def __init__(self, cluster_id: str, state: TreeState | None = None, now: float = 0.0) -> None:
        self.cluster_id = cluster_id
        self.tree = CompactTree(state.size, state.nodes) if state else CompactTree()
        self.last_hash = state.last_hash if state else ""
        self.last_offset = state.events_offset if state else -1
        self.pending: list[str] = []
        self.signed_size = state.size if state else 0  # the newest checkpoint published (or resumed from)
        self.signed_at = now
        self._found: list[str] = []  # catch_up's hashes not yet in the tree

    @property
    def size(self) -> int:
        return self.tree.size

    @property
    def next_seq(self) -> int:
        return self.tree.size + len(self.pending)

    def emitted(self, first_seq: int, hashes: list[str]) -> None:
        if first_seq != self.next_seq:
            raise OutOfStep(f"events from seq {first_seq} handed to the producer, but the tree expects seq "
                            f"{self.next_seq}")
        self.pending += hashes

    def delivered(self, seq: int, offset: int) -> None:
        """The events up to `seq` are on the events topic, `seq` at `offset`."""
        k = seq + 1 - self.tree.size
        if k <= 0:
            return
        if k > len(self.pending):
            raise OutOfStep(f"seq {seq} delivered, but only seqs up to {self.next_seq - 1} were emitted")
        hashes = self.pending[:k]
        del self.pending[:k]
        # packed: one bytes object per level, not one per hash (the hashing is ~1.5 % of the normalize path)
        self.tree.extend_packed(packed_event_leaves("".join(hashes).encode()))
        self.last_hash, self.last_offset = hashes[-1], offset

    def catch_up(self, offset: int, seq: int, event_hash: str) -> None:
        """One event of this cluster read back from the events topic, in topic order, after the tree's last one.
        OutOfStep when it does not continue the tree."""
        size = self.tree.size + len(self._found)
        if seq < size:
            return  # a duplicate: a producer's retry wrote a batch twice
        if seq > size:
            raise OutOfStep(f"event seq {seq} at events-topic offset {offset}, but seq {size} was expected "
                            f"(the events topic lost events)")
        self._found.append(event_hash)
        self.last_hash, self.last_offset = event_hash, offset
        if len(self._found) >= CATCH_UP_BATCH:
            self.flush()

    def flush(self) -> None:
        if self._found:
            self.tree.extend_packed(packed_event_leaves("".join(self._found).encode()))
            self._found = []

    def due(self, now: float, every_events: int, every_seconds: float) -> bool:
        new = self.tree.size - self.signed_size
        return new > 0 and (new >= every_events or now - self.signed_at >= every_seconds)

    def checkpoint(self, signers: Sequence[Signer]) -> tuple[bytes, TreeState]:
        """The signed note of the tree as it is and the state to publish beside it."""
        cp = Checkpoint(origin_of(self.cluster_id), self.tree.size, self.tree.root())
        note = sign_note(cp.text, *signers).encode()
        return note, TreeState(self.tree.size, tuple(self.tree.nodes), self.last_offset, self.last_hash)


class CaptureSigner:
    """The worker's signing: per-cluster logs fed by the pipeline (`emitted`) and the producer (`delivered`),
    checkpoints when due, and the restore at start (`restore`)."""

    def __init__(self, signers: Sequence[Signer], every_events: int = 10_000, every_seconds: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not signers:
            raise ValueError("a CaptureSigner needs a signing key")
        self.signers = list(signers)
        self.every_events = every_events
        self.every_seconds = every_seconds
        self.clock = clock
        self.logs: dict[str, ClusterLog] = {}
        self.stopped: set[str] = set()  # clusters out of step: not signed until the next restore

    def _stop(self, cluster_id: str, reason: str) -> None:
        log.error("signing: cluster %s: %s; no more checkpoints of it until the worker restarts", cluster_id, reason)
        self.logs.pop(cluster_id, None)
        self.stopped.add(cluster_id)

    def emitted(self, out: Sequence[tuple[ControllerEvent, bytes, bytes]]) -> None:
        """Events of one cluster (CaptureState.process's output) about to be handed to the producer."""
        if not out:
            return
        first = out[0][0]
        cid = first.cluster_id
        clog = self.logs.get(cid)
        if clog is None:
            if cid in self.stopped:
                return
            if first.seq != 0:  # a cluster this worker has no tree for, mid-chain
                self._stop(cid, f"events from seq {first.seq} but no tree of the events before them")
                return
            clog = self.logs[cid] = ClusterLog(cid, now=self.clock())
        try:
            clog.emitted(first.seq, [e.hash for e, _, _ in out])
        except OutOfStep as exc:
            self._stop(cid, str(exc))

    def delivered(self, marks: dict[str, tuple[int, int]]) -> None:
        """A record batch was acknowledged: cluster id -> (its last seq in the batch, that event's offset)."""
        for cid, (seq, offset) in marks.items():
            clog = self.logs.get(cid)
            if clog is not None:
                try:
                    clog.delivered(seq, offset)
                except OutOfStep as exc:
                    self._stop(cid, str(exc))

    def due(self) -> list[ClusterLog]:
        now = self.clock()
        return [c for c in self.logs.values() if c.due(now, self.every_events, self.every_seconds)]

    def published(self, clog: ClusterLog, state: TreeState) -> None:
        clog.signed_size, clog.signed_at = max(clog.signed_size, state.size), self.clock()

    async def restore(self, cluster_id: str, newest_first: AsyncGenerator[_Record, None],
                      events_from: Callable[[int], AsyncGenerator[_Record, None]]) -> ClusterLog | None:
        """Rebuild `cluster_id`'s tree at start (the module doc): from the newest checkpoint message of it this
        worker can resume from (`newest_first`: the checkpoints topic read back from its end) and the events
        topic after it (`events_from(offset)`: to its end as it is now), else from the events topic's start.
        Forgets every other cluster's log: a pipeline rebuild re-emits only what the topic lacks."""
        self.logs, self.stopped = {}, set()
        state = None
        async with aclosing(newest_first):  # its consumer is stopped when the newest good one is found
            async for record in newest_first:
                if record.key != cluster_id.encode():
                    continue
                try:
                    state = resume_state(record, cluster_id, self.signers)
                    break
                except (StateRefused, ProofError) as exc:
                    log.warning("signing: checkpoints topic offset %d not resumed from: %s", record.offset, exc)
        clog: ClusterLog | None = None
        for attempt in (state, None) if state is not None else (None,):
            try:
                clog = await self._catch_up(cluster_id, attempt, events_from)
                break
            except (OutOfStep, ProofError) as exc:
                if attempt is None:
                    self._stop(cluster_id, f"the tree cannot be rebuilt from the events topic: {exc}")
                    return None
                log.warning("signing: cluster %s: the checkpoint of %d events does not fit the events topic (%s); "
                            "rebuilding the tree from the topic's start", cluster_id, attempt.size, exc)
        assert clog is not None
        self.logs[cluster_id] = clog
        log.info("signing: cluster %s: tree of %d events, from %s and %d events of the events topic; newest "
                 "checkpoint %d", cluster_id, clog.size, f"the checkpoint of {state.size}" if state and
                 clog.signed_size else "the events topic's start", clog.size - clog.signed_size, clog.signed_size)
        return clog

    async def _catch_up(self, cluster_id: str, state: TreeState | None,
                        events_from: Callable[[int], AsyncGenerator[_Record, None]]) -> ClusterLog:
        clog = ClusterLog(cluster_id, state, now=self.clock())
        first = state is not None  # the first message read must be the checkpoint's last event
        async with aclosing(events_from(state.events_offset if state is not None else 0)) as records:
            async for record in records:
                found = event_of(record)
                if first:
                    assert state is not None
                    first = False
                    if record.offset != state.events_offset or found != (cluster_id, state.size - 1, state.last_hash):
                        raise OutOfStep(f"offset {state.events_offset} of the events topic does not hold event seq "
                                        f"{state.size - 1} with the hash the checkpoint names")
                    continue
                if found is None or found[0] != cluster_id:
                    continue
                clog.catch_up(record.offset, found[1], found[2])
        if first:
            raise OutOfStep(f"the events topic ends before offset {state.events_offset if state else 0}")
        clog.flush()
        return clog


class Publisher:
    """Publishes the due checkpoints, one at a time, off the normalize agent's path: `kick()` starts a task when one
    is due and none runs. `send(key, note, headers)` returns once the checkpoint message is acknowledged; a send
    that fails is logged and the checkpoint tried again at the next kick."""

    def __init__(self, signer: CaptureSigner,
                 send: Callable[[bytes, bytes, list[tuple[str, bytes]]], Awaitable[object]]) -> None:
        self.signer = signer
        self.send = send
        self.published = 0
        self._task: asyncio.Future[None] | None = None

    def kick(self) -> None:
        if (self._task is None or self._task.done()) and self.signer.due():
            self._task = asyncio.ensure_future(self.run())

    async def run(self) -> None:
        for clog in self.signer.due():
            note, state = clog.checkpoint(self.signer.signers)
            try:
                await self.send(clog.cluster_id.encode(), note, [(TREE_HEADER, state.header())])
            except Exception as exc:  # Kafka unreachable, a timeout: the next kick tries again
                log.warning("signing: checkpoint of %d events of cluster %s not published (%s); tried again",
                            state.size, clog.cluster_id, exc)
                return
            self.signer.published(clog, state)
            self.published += 1
            log.info("signing: checkpoint of %d events of cluster %s published", state.size, clog.cluster_id)
