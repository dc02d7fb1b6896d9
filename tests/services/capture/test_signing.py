"""The capture worker's signing without Kafka: what enters the tree (only what the producer reports delivered), when a
checkpoint is due, what a checkpoint message carries and which ones a restarting worker resumes from, and the tree
after a restore equal to the one built from every event."""
from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field

import pytest

from schemas import codec as event_codec
from schemas.archive.checkpoint import open_checkpoint
from schemas.archive.merkle import event_leaf_hashes, tree_hash
from schemas.archive.note import Signer, generate_key, sign_note
from schemas.archive.signed import origin_of
from services.capture import agents, logic
from services.capture.logic import CaptureState
from services.capture.produce import BatchSender, DeliveryFailed
from services.capture.serializers import RawRecord, encode_raw
from services.capture.signing import (
    TREE_HEADER, CaptureSigner, ClusterLog, OutOfStep, Publisher, StateRefused, TreeState, resume_state,
)
from services.kraft import build_batch
from tests.services.kraft.helpers import metadata_value

CL = "c1"
TID = "AAAAAAAAAAAAAAAAAAAAAQ"
KEY = Signer.parse(generate_key("capture.example/test")[0])
OTHER = Signer.parse(generate_key("capture.example/test")[0])  # the same name, another key


def _raws(partitions: int = 40, per_batch: int = 7) -> list[RawRecord]:
    """A topic of `partitions` partitions, then a leader change on each, in KRaft batches of `per_batch` records."""
    recs = [metadata_value("TopicRecord", 0, {"name": "t", "topicId": TID})]
    for p in range(partitions):
        recs.append(metadata_value("PartitionRecord", 1, {
            "partitionId": p, "topicId": TID, "replicas": [1, 2, 3], "isr": [1, 2, 3], "removingReplicas": [],
            "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
            "directories": ["AAAAAAAAAAAAAAAAAAAAAA"] * 3}))
    for p in range(partitions):
        recs.append(metadata_value("PartitionChangeRecord", 0, {"partitionId": p, "topicId": TID, "leader": 2}))
    raws = []
    for lo in range(0, len(recs), per_batch):
        chunk = recs[lo:lo + per_batch]
        b = build_batch([(None, v) for v in chunk], base_offset=lo, leader_epoch=1, timestamp=5000)
        raws.append(RawRecord(CL, 1, "KRAFT_BATCH", lo, lo, lo + len(chunk) - 1, 1, 5000, 5000, b))
    return raws


def _outs(raws: list[RawRecord] | None = None) -> list[list[tuple]]:
    """CaptureState.process's output per raw message: what the pipeline emits."""
    s = CaptureState(CL, 1, clock=lambda: 7000)
    return [o for o in (s.process(r) for r in (raws or _raws())) if o]


def _root(hashes: list[str]) -> bytes:
    return tree_hash(event_leaf_hashes(hashes))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- what enters the tree ----------------------------------------------------------------------

def test_a_checkpoint_covers_only_the_events_reported_delivered():
    outs = _outs()
    events = [e for out in outs for e, _, _ in out]
    signer = CaptureSigner([KEY], every_events=1, every_seconds=60, clock=Clock())
    for out in outs:
        signer.emitted(out)
    assert signer.due() == []  # everything emitted, nothing delivered: nothing to sign
    signer.delivered({CL: (9, 1009)})
    (clog,) = signer.due()
    note, state = clog.checkpoint(signer.signers)
    cp, _ = open_checkpoint(note, KEY.verifier, origin=origin_of(CL))
    assert (cp.size, state.size, state.events_offset, state.last_hash) == (10, 10, 1009, events[9].hash)
    assert cp.root_hash == _root([e.hash for e in events[:10]])
    # a report of events never emitted is no proof of anything: the cluster stops being signed
    signer.delivered({CL: (len(events) + 5, 99)})
    assert signer.logs == {} and CL in signer.stopped


def test_events_that_do_not_continue_the_tree_stop_its_signing():
    outs = _outs()
    signer = CaptureSigner([KEY])
    signer.emitted(outs[0])
    signer.emitted(outs[2])  # outs[1] never handed to the producer
    assert CL in signer.stopped and signer.due() == []
    # and a cluster first seen mid-chain has no tree of the events before: never signed from there
    fresh = CaptureSigner([KEY])
    fresh.emitted(outs[1])
    assert CL in fresh.stopped


@dataclass
class Meta:
    offset: int


@dataclass
class Batch:
    room: int
    items: list = field(default_factory=list)

    def append(self, *, timestamp, key, value, headers):
        if len(self.items) >= self.room:
            return None
        self.items.append(value)
        return object()


class Producer:
    """Batches of `room` events; the test acknowledges each (with its base offset) or fails it."""

    def __init__(self, room: int, auto_ack: bool = False) -> None:
        self.room, self.auto_ack, self.futures, self.batches, self.offset = room, auto_ack, [], [], 0

    def create_batch(self):
        return Batch(self.room)

    async def send_batch(self, batch, topic, *, partition):
        f = asyncio.get_running_loop().create_future()
        self.futures.append(f)
        self.batches.append(batch)
        if self.auto_ack:
            self.ack(len(self.futures) - 1)
        return f

    def ack(self, i: int) -> None:
        self.futures[i].set_result(Meta(self.offset))
        self.offset += len(self.batches[i].items)


@pytest.mark.asyncio
async def test_the_producer_reports_each_acknowledged_batch_and_nothing_else():
    outs = _outs(_raws(partitions=20))
    events = [e for out in outs for e, _, _ in out]
    prod = Producer(room=8)
    signer = CaptureSigner([KEY], every_events=1)
    sender = BatchSender(lambda: prod, "events", on_delivered=signer.delivered)

    async def pipeline():
        for out in outs:
            signer.emitted(out)
            await sender.send(out)  # waits while the batch before is not acknowledged
    task = asyncio.ensure_future(pipeline())
    while len(prod.futures) < 1:
        await asyncio.sleep(0)
    for _ in range(5):
        await asyncio.sleep(0)
    assert signer.logs[CL].size == 0 and len(prod.futures) == 1  # on its way, not acknowledged
    prod.ack(0)
    while len(prod.futures) < 2:
        await asyncio.sleep(0)
    clog = signer.logs[CL]
    assert (clog.size, clog.last_offset, clog.last_hash) == (8, 7, events[7].hash)
    prod.futures[1].set_exception(RuntimeError("broker gone"))
    with pytest.raises(DeliveryFailed, match="broker gone"):
        await task
    assert clog.size == 8  # a batch that failed never enters the tree
    assert clog.checkpoint([KEY])[1].size == 8


@pytest.mark.asyncio
@pytest.mark.parametrize("room", [1, 3, 8, 1000])
async def test_the_tree_of_acknowledged_batches_is_the_tree_of_every_event(room):
    outs = _outs()
    events = [e for out in outs for e, _, _ in out]
    prod = Producer(room)
    signer = CaptureSigner([KEY])
    sender = BatchSender(lambda: prod, "events", on_delivered=signer.delivered)

    async def acker():
        acked = 0
        while True:
            while acked < len(prod.futures):
                prod.ack(acked)
                acked += 1
            await asyncio.sleep(0)
    task = asyncio.ensure_future(acker())
    for out in outs:
        signer.emitted(out)
        await sender.send(out)
    await sender.flush()
    await asyncio.sleep(0)
    task.cancel()
    clog = signer.logs[CL]
    assert clog.size == len(events) and clog.pending == []
    assert clog.tree.root() == _root([e.hash for e in events])
    assert clog.last_offset == len(events) - 1  # event seq i is at offset i of this topic


# --- when a checkpoint is due --------------------------------------------------------------------

def test_a_checkpoint_is_due_every_n_events_or_t_seconds_and_only_with_new_events():
    clock = Clock()
    outs = _outs()
    signer = CaptureSigner([KEY], every_events=10, every_seconds=60, clock=clock)
    for out in outs:
        signer.emitted(out)
    signer.delivered({CL: (8, 8)})
    assert signer.due() == []  # 9 new events, 0 s
    signer.delivered({CL: (9, 9)})
    (clog,) = signer.due()  # 10 new events
    signer.published(clog, clog.checkpoint([KEY])[1])
    assert signer.due() == []
    signer.delivered({CL: (10, 10)})
    clock.now += 59.9
    assert signer.due() == []  # one new event, under a minute
    clock.now += 0.2
    assert signer.due() == [clog]
    signer.published(clog, clog.checkpoint([KEY])[1])
    clock.now += 3600
    assert signer.due() == []  # an hour without new events: nothing to sign


@pytest.mark.asyncio
async def test_a_checkpoint_that_was_not_acknowledged_is_published_again():
    clock = Clock()
    signer = CaptureSigner([KEY], every_events=5, clock=clock)
    for out in _outs():
        signer.emitted(out)
    signer.delivered({CL: (5, 5)})
    sent, fail = [], [True]

    async def send(key, note, headers):
        if fail.pop() if fail else False:
            raise RuntimeError("request timed out")
        sent.append((key, note, dict(headers)))
    pub = Publisher(signer, send)
    await pub.run()
    assert sent == [] and len(signer.due()) == 1  # still due
    await pub.run()
    ((key, note, headers),) = sent
    assert key == CL.encode() and signer.due() == []
    state = TreeState.parse(headers[TREE_HEADER])
    assert state.size == 6 and open_checkpoint(note, KEY.verifier, origin=origin_of(CL))[0].size == 6


# --- the checkpoint message and the restore ------------------------------------------------------

@dataclass
class Rec:
    offset: int
    key: bytes | None
    value: bytes
    headers: list


def _events_topic(outs) -> list[Rec]:
    return [Rec(i, CL.encode(), value, [(logic.PROGRESS_HEADER, header)])
            for i, (_, header, value) in enumerate(x for out in outs for x in out)]


def _checkpoint_rec(offset: int, signer: CaptureSigner, upto: int) -> Rec:
    """The checkpoint message a worker that delivered seqs 0..upto would publish."""
    clog = signer.logs[CL]
    clog.delivered(upto, upto)
    note, state = clog.checkpoint(signer.signers)
    return Rec(offset, CL.encode(), note, [(TREE_HEADER, state.header())])


def _signer_with(outs) -> CaptureSigner:
    s = CaptureSigner([KEY])
    for out in outs:
        s.emitted(out)
    return s


def test_a_checkpoint_message_is_resumed_from_only_when_whole_and_this_workers():
    outs = _outs()
    rec = _checkpoint_rec(0, _signer_with(outs), 30)
    state = resume_state(rec, CL, [KEY])
    assert state.size == 31 and state.events_offset == 30
    assert TreeState.parse(state.header()) == state

    def refused(r: Rec, match: str, signers=(KEY,), cluster=CL) -> None:
        with pytest.raises(StateRefused, match=match):
            resume_state(r, cluster, list(signers))
    header = dict(rec.headers)[TREE_HEADER]
    d = json.loads(header)
    refused(Rec(0, rec.key, rec.value[:-9], rec.headers), "signed by this worker's key")  # cut short
    refused(Rec(0, rec.key, rec.value, []), "no ctrlaudit-tree header")
    refused(Rec(0, rec.key, rec.value, [(TREE_HEADER, header[:-3])]), "not JSON")
    refused(Rec(0, rec.key, rec.value, [(TREE_HEADER, json.dumps(d | {"size": True}).encode())]), "size")
    refused(Rec(0, rec.key, rec.value, [(TREE_HEADER, json.dumps(d | {"events_offset": -1}).encode())]),
            "events_offset")
    nodes = d["nodes"][:-1] + ["00" * 32]
    refused(Rec(0, rec.key, rec.value, [(TREE_HEADER, json.dumps(d | {"nodes": nodes}).encode())]),
            "do not give the root")
    refused(Rec(0, rec.key, rec.value, [(TREE_HEADER, json.dumps(d | {"size": 32}).encode())]), "nodes for a tree")
    refused(rec, "signed by this worker's key", signers=(OTHER,))  # a checkpoint signed by another key
    refused(rec, "signed by this worker's key", cluster="c2")  # another cluster's log
    forged = sign_note(open_checkpoint(rec.value, KEY.verifier, origin=origin_of(CL))[0].text, OTHER).encode()
    refused(Rec(0, rec.key, forged, rec.headers), "signed by this worker's key")


async def _aiter(items):
    for x in items:
        yield x


async def _restore(signer: CaptureSigner, checkpoints: list[Rec], events: list[Rec]):
    return await signer.restore(CL, _aiter(reversed(checkpoints)), lambda o: _aiter([r for r in events
                                                                                    if r.offset >= o]))


@pytest.mark.asyncio
async def test_a_restore_resumes_from_the_newest_checkpoint_and_reads_the_events_after_it():
    outs = _outs()
    events = _events_topic(outs)
    hashes = [e.hash for out in outs for e, _, _ in out]
    old = _signer_with(outs)
    checkpoints = [_checkpoint_rec(0, old, 20), _checkpoint_rec(1, old, 50)]
    # garbage written after them by someone able to write the topic, and a checkpoint of another cluster
    checkpoints += [Rec(2, CL.encode(), b"junk", []), Rec(3, b"c2", b"x", [])]
    signer = CaptureSigner([KEY])
    clog = await _restore(signer, checkpoints, events)
    assert clog is not None and clog.signed_size == 51
    assert clog.size == len(hashes) and clog.tree.root() == _root(hashes)
    assert (clog.last_offset, clog.last_hash) == (len(hashes) - 1, hashes[-1])
    # and it goes on from there: the next events the pipeline emits continue it
    assert clog.next_seq == len(hashes)


@pytest.mark.asyncio
async def test_a_checkpoint_that_does_not_fit_the_events_topic_means_a_rebuild_from_its_start(caplog):
    outs = _outs()
    events = _events_topic(outs)
    hashes = [e.hash for out in outs for e, _, _ in out]
    old = _signer_with(outs)
    cp = _checkpoint_rec(0, old, 20)
    moved = [Rec(r.offset + 3, r.key, r.value, r.headers) for r in events]  # seq 20 is not at offset 20 any more
    clog = await _restore(CaptureSigner([KEY]), [cp], moved)
    assert clog is not None and clog.signed_size == 0 and clog.tree.root() == _root(hashes)
    assert "does not fit the events topic" in caplog.text
    # no checkpoint at all (the first signed start of a capture that ran unsigned): the same tree
    clog = await _restore(CaptureSigner([KEY]), [], events)
    assert clog.size == len(hashes) and clog.tree.root() == _root(hashes) and clog.signed_size == 0
    # a duplicate written by a producer's retry is passed over
    dup = events[:10] + [Rec(r.offset + 3, r.key, r.value, r.headers) for r in events[7:]]
    clog = await _restore(CaptureSigner([KEY]), [], dup)
    assert clog.tree.root() == _root(hashes)


@pytest.mark.asyncio
async def test_an_events_topic_that_lost_events_is_never_signed(caplog):
    events = _events_topic(_outs())
    signer = CaptureSigner([KEY])
    assert await _restore(signer, [], events[:10] + events[11:]) is None
    assert CL in signer.stopped and "seq 10 was expected" in caplog.text


def test_cluster_log_catch_up_refuses_a_gap():
    clog = ClusterLog(CL)
    clog.catch_up(0, 0, "ab" * 32)
    clog.catch_up(1, 0, "ab" * 32)  # a duplicate
    with pytest.raises(OutOfStep, match="seq 1 was expected"):
        clog.catch_up(2, 2, "cd" * 32)


# --- the pipeline --------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_the_pipeline_signs_what_it_delivers_every_n_events():
    raws = _raws()
    prod = Producer(room=5, auto_ack=True)
    signer = CaptureSigner([KEY], every_events=25, every_seconds=3600)
    sent = []

    async def send(key, note, headers):
        sent.append((note, dict(headers)))
    pub = Publisher(signer, send)
    sender = BatchSender(lambda: prod, "events", on_delivered=signer.delivered)
    async def progress():
        return None, logic.Progress()

    async def no_raw(upto, start=0):
        return
        yield

    p = agents.Pipeline(progress_reader=progress, raw_reader=no_raw, signer=signer, publisher=pub)
    p.sink_events = sender.send
    for i, r in enumerate(raws):
        await p.handle(i, None, encode_raw(r))
        await asyncio.sleep(0)  # the publisher's task
    await sender.flush()
    await asyncio.sleep(0)
    pub.kick()
    await asyncio.sleep(0.01)
    sizes = [TreeState.parse(h[TREE_HEADER]).size for _, h in sent]
    assert sizes == sorted(set(sizes)) and all(b - a >= 25 for a, b in zip(sizes, sizes[1:])) and len(sizes) >= 2
    hashes = [event_codec.decode(v).hash for b in prod.batches for v in b.items]  # what the events topic got
    for note, _ in sent:
        cp, _ = open_checkpoint(note, KEY.verifier, origin=origin_of(CL))
        assert cp.root_hash == _root(hashes[:cp.size])



@pytest.mark.asyncio
async def test_prepare_restores_the_tree_anew_even_after_the_timer_restored_it():
    """The signing timer restores the tree of a worker that has had no raw message yet; when the first one comes, the
    events topic may have grown meanwhile (another worker held the raw partition): prepare reads it again."""
    outs = _outs()
    events = _events_topic(outs)
    hashes = [e.hash for out in outs for e, _, _ in out]
    topic = events[:30]

    async def progress():
        return (CL, logic.Progress.from_headers(topic[-1].headers)) if topic else (None, logic.Progress())

    async def no_raw(upto, start=0):
        return
        yield

    signer = CaptureSigner([KEY])
    p = agents.Pipeline(progress_reader=progress, raw_reader=no_raw, signer=signer,
                        signing_readers=(lambda: _aiter([]), lambda o: _aiter([r for r in topic if r.offset >= o])))
    await p.restore_signing()  # the timer's
    assert signer.logs[CL].size == 30 and p.signing_ready
    topic = events
    await p.prepare(0)
    assert signer.logs[CL].size == len(hashes) and signer.logs[CL].tree.root() == _root(hashes)
    assert signer.logs[CL].next_seq == p._progress[1].seq + 1  # the next event emitted continues the tree


@pytest.mark.asyncio
async def test_a_progress_header_that_does_not_read_is_passed_over_for_the_value_and_garbage_stops_nothing_else():
    outs = _outs()
    events = _events_topic(outs)
    hashes = [e.hash for out in outs for e, _, _ in out]
    bad = json.dumps({"seq": 5, "hash": "é" * 64, "last": {}}).encode()
    # seq 5's header lies about its hash: the value (the event itself) is read instead, and the tree is the same
    lying = [Rec(r.offset, r.key, r.value, [(logic.PROGRESS_HEADER, bad)]) if r.offset == 5 else r for r in events]
    clog = await _restore(CaptureSigner([KEY]), [], lying)
    assert clog is not None and clog.tree.root() == _root(hashes)
    # a message that is no event at all in seq 5's place: a hole, so the cluster is not signed (one ERROR line)
    garbage = [Rec(r.offset, r.key, b"\x00junk", [(logic.PROGRESS_HEADER, bad)]) if r.offset == 5 else r
               for r in events]
    signer = CaptureSigner([KEY])
    assert await _restore(signer, [], garbage) is None and CL in signer.stopped
