"""Batching must not change what the events topic holds: the same events, bytes and chain however the
records are cut into KRaft batches and the events into producer batches, and a restart whose progress
header points anywhere inside a raw message emits exactly the events after it."""
from __future__ import annotations

import asyncio

import pytest

from services.capture import agents, logic
from services.capture.serializers import RawRecord
from services.capture.logic import CaptureState, Progress
from services.capture.produce import BatchSender, DeliveryFailed
from services.kraft import build_batch
from tests.services.kraft.helpers import metadata_value

CL = "c1"
TID = "AAAAAAAAAAAAAAAAAAAAAQ"


def _records() -> list[bytes]:
    """A topic of 4 partitions, then a leader change on each: 9 records, 9 events."""
    out = [metadata_value("TopicRecord", 0, {"name": "t", "topicId": TID})]
    for p in range(4):
        out.append(metadata_value("PartitionRecord", 1, {
            "partitionId": p, "topicId": TID, "replicas": [1, 2, 3], "isr": [1, 2, 3], "removingReplicas": [],
            "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
            "directories": ["AAAAAAAAAAAAAAAAAAAAAA"] * 3}))
    for p in range(4):
        out.append(metadata_value("PartitionChangeRecord", 0, {"partitionId": p, "topicId": TID, "leader": 2}))
    return out


def _raws(cuts: list[int]) -> list[RawRecord]:
    """The records shipped as KRaft batches cut before each offset in `cuts` (same append time)."""
    recs, raws = _records(), []
    bounds = [0, *cuts, len(recs)]
    for lo, hi in zip(bounds, bounds[1:]):
        b = build_batch([(None, v) for v in recs[lo:hi]], base_offset=lo, leader_epoch=1, timestamp=5000)
        raws.append(RawRecord(CL, 1, "KRAFT_BATCH", lo, lo, hi - 1, 1, 5000, 5000, b))
    return raws


def _run(raws, progress=None):
    s = CaptureState(CL, 1, progress=progress, clock=lambda: 7000)
    return [x for r in raws for x in s.process(r)]


def test_any_cut_into_kraft_batches_gives_the_same_events_and_chain():
    whole = _run(_raws([]))
    assert len(whole) == 9 and [e.seq for e, *_ in whole] == list(range(9))
    for cut in range(1, 9):
        for cuts in ([cut], list(range(1, cut + 1))):
            assert _run(_raws(cuts)) == whole  # events, progress headers and encoded values


@pytest.mark.parametrize("cuts", [[], [3, 6]])
def test_restart_after_any_event_emits_exactly_the_rest(cuts):
    whole = _run(_raws(cuts))
    for k, (_, header, _) in enumerate(whole):
        # the events topic's last message is event k (possibly in the middle of a raw message)
        assert _run(_raws(cuts), Progress.from_header(header)) == whole[k + 1:]


class FakeBatch:
    def __init__(self, room: int) -> None:
        self.room, self.items = room, []

    def append(self, *, timestamp, key, value, headers):
        if len(self.items) >= self.room:
            return None
        self.items.append((key, value, headers))
        return object()


class FakeProducer:
    """send_batch returns the delivery future; auto_ack: acknowledged at once (else the test does it)."""

    def __init__(self, room: int, auto_ack: bool = False) -> None:
        self.room, self.auto_ack, self.sent, self.futures = room, auto_ack, [], []

    def create_batch(self):
        return FakeBatch(self.room)

    async def send_batch(self, batch, topic, *, partition):
        self.sent.append((topic, partition, batch.items))
        f = asyncio.get_running_loop().create_future()
        if self.auto_ack:
            f.set_result(None)
        self.futures.append(f)
        return f


async def _settle(s: BatchSender) -> None:
    while s._flusher is not None and not s._flusher.done():
        await asyncio.sleep(0)


@pytest.mark.asyncio
@pytest.mark.parametrize("room", [1, 2, 4, 9, 100])
async def test_sender_cuts_full_batches_and_keeps_the_order(room):
    out = _run(_raws([4]))
    prod = FakeProducer(room, auto_ack=True)
    s = BatchSender(lambda: prod, "events")
    await s.send(out[:5])
    await s.send(out[5:])
    await _settle(s)  # the flusher queues the open batch
    sent = [item for topic, part, items in prod.sent for item in items]
    assert all(topic == "events" and part == 0 for topic, part, _ in prod.sent)
    assert sent == [(CL.encode(), v, [(logic.PROGRESS_HEADER, h)]) for _, h, v in out]
    assert all(len(items) <= room for *_, items in prod.sent)
    await s.flush()
    assert s.pending == []


@pytest.mark.asyncio
@pytest.mark.parametrize("error", [DeliveryFailed("x"), TimeoutError("no metadata for the events topic")])
async def test_a_failed_delivery_raises_and_the_pipeline_rebuilds(error):
    prod = FakeProducer(100)
    s = BatchSender(lambda: prod, "events")
    out = _run(_raws([]))
    await s.send(out[:3])
    await s._flusher
    prod.futures[0].set_exception(RuntimeError("broker gone"))
    with pytest.raises(DeliveryFailed, match="broker gone"):
        await s.send(out[3:])

    reads = []

    async def progress():
        reads.append(1)
        return None, Progress()

    async def no_raw(upto, start=0):
        return
        yield

    async def failing(out):
        raise error  # not delivered, or the send cut short (aiokafka's timeouts are not DeliveryFailed)

    p = agents.Pipeline(progress_reader=progress, raw_reader=no_raw)
    p.sink_events = failing
    with pytest.raises(type(error)):
        await p.handle(0, None, agents.encode_raw(_raws([])[0]))
    assert p.states == {} and not p.ready  # the next message rebuilds from the events topic
    got = []

    async def ok(out):
        got.extend(out)
    p.sink_events = ok
    await p.handle(0, None, agents.encode_raw(_raws([])[0]))
    assert len(reads) == 2 and [e.seq for e, *_ in got] == list(range(9))


@pytest.mark.asyncio
async def test_events_emitted_while_a_batch_is_unacknowledged_join_the_next_batch_in_order():
    prod = FakeProducer(100)
    s = BatchSender(lambda: prod, "events")
    out = _run(_raws([2, 5]))
    await s.send(out[:2])
    await _settle(s)  # batch 1 handed over at once (nothing unacknowledged)
    await s.send(out[2:5])
    await s.send(out[5:])
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(prod.sent) == 1  # the rest waits in the open batch for batch 1's acknowledgement
    prod.futures[0].set_result(None)
    await _settle(s)
    prod.futures[1].set_result(None)
    await s.flush()
    assert [len(items) for *_, items in prod.sent] == [2, 7]
    assert [v for *_, items in prod.sent for _, v, _ in items] == [v for _, _, v in out]


@pytest.mark.asyncio
@pytest.mark.parametrize("room", [1, 3, 100])
async def test_nothing_is_sent_after_a_lost_batch(room):
    # batch 1 fails for good while later events wait: none of them may reach the topic after the hole,
    # whether they wait in a full batch (the agent blocked in send) or in the open one (the flusher)
    prod = FakeProducer(room)
    s = BatchSender(lambda: prod, "events")
    out = _run(_raws([]))
    await s.send(out[:1])
    await _settle(s)
    assert len(prod.sent) == 1
    rest = asyncio.ensure_future(s.send(out[1:]))
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(prod.sent) == 1
    prod.futures[0].set_exception(RuntimeError("request timed out"))
    raised = []
    try:
        await rest
        await _settle(s)
        await s.send(out[1:2])  # the flusher's failure surfaces on the next send
    except DeliveryFailed as exc:
        raised.append(exc)
    assert raised and "request timed out" in str(raised[0])
    assert len(prod.sent) == 1 and s._open is None and s.pending == []
    # the rebuilt pipeline's sends go through again
    prod.auto_ack = True
    await s.send(out[1:])
    await s.flush()
    assert [v for *_, items in prod.sent[1:] for _, v, _ in items] == [v for _, _, v in out[1:]]
