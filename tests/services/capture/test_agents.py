"""One agent.test_context() test per agent (no broker: sinks replaced), and the Faust codecs."""
from __future__ import annotations

import pytest

from schemas.events import (
    ControllerEvent, PartitionChange, PartitionState, SourceKind, SourcePosition, TopicChange, TopicChangeKind,
)
from services.capture import agents, logic
from services.capture.serializers import EventCodec, RawCodec, RawRecord, encode_raw
from services.kraft import build_batch




@pytest.fixture
def sinks(monkeypatch):
    got = {"events": [], "dead": [], "alerts": []}

    async def ev(out):
        got["events"].extend(out)

    async def dead(k, v, reason):
        got["dead"].append(reason)

    async def alert(a):
        got["alerts"].append(a)

    async def no_progress():
        return None, logic.Progress()

    async def no_raw(upto, start=0):
        return
        yield

    p = agents.Pipeline(progress_reader=no_progress, raw_reader=no_raw)
    p.sink_events, p.sink_dead, p.sink_alert = ev, dead, alert
    monkeypatch.setattr(agents, "pipeline", p)
    monkeypatch.setattr(agents, "watcher", agents.Watch(history_reader=no_raw))
    return got


def _topic_record(name: str, b: int) -> bytes:
    return bytes([1, 2, 0, len(name) + 1]) + name.encode() + bytes([b]) * 16 + b"\x00"


@pytest.mark.asyncio
async def test_normalize_agent(sinks):
    raw = RawRecord("c", 1, "KRAFT_BATCH", 0, 0, 0, 1, 1000, 1000, build_batch([(None, _topic_record("a", 1))]))
    async with agents.normalize.test_context() as agent:
        await agent.put(encode_raw(raw))
        await agent.put(b"garbage")
        await agent.put(encode_raw(raw))  # duplicate: nothing new
    events = [e for e, *_ in sinks["events"]]
    assert [e.payload.topic for e in events] == ["a"] and events[0].seq == 0
    assert len(sinks["dead"]) == 1 and "not Avro" in sinks["dead"][0]


@pytest.mark.asyncio
async def test_a_revoked_partition_makes_the_pipeline_and_the_checker_rebuild(sinks):
    from faust.types import TP
    raw = RawRecord("c", 1, "KRAFT_BATCH", 0, 0, 0, 1, 1000, 1000, build_batch([(None, _topic_record("a", 1))]))
    await agents.pipeline.handle(0, None, encode_raw(raw))
    assert agents.pipeline.ready
    await agents.app.on_partitions_revoked.send({TP("another-topic", 0)})
    assert agents.pipeline.ready and agents.pipeline.states  # not the raw topic's: kept
    await agents.app.on_partitions_revoked.send({TP(agents.settings.raw_topic, 0)})
    assert not agents.pipeline.ready and not agents.pipeline.states
    agents.watcher.next_offset = 7
    await agents.app.on_partitions_revoked.send({TP(agents.settings.events_topic, 0)})
    assert agents.watcher.next_offset is None  # the checker is rebuilt at the next event


@pytest.mark.asyncio
async def test_watch_agent(sinks):
    def pc(before, after, seq):
        return ControllerEvent("id", "c", seq, SourcePosition(SourceKind.KRAFT_LOG, seq), 0, 0, 1, 1,
                               PartitionChange("t", "tid", 0, before, after))
    a = PartitionState((1, 2), (1, 2), 1, 1, 1)
    b = PartitionState((1, 2), (1,), 1, 1, 2)
    bad = PartitionState((1, 2), (1,), 2, 1, 3)  # leader outside the ISR
    async with agents.watch.test_context() as agent:
        await agent.put(pc(None, a, 0))
        await agent.put(pc(a, b, 1))
        await agent.put(pc(b, bad, 2))
    names = sorted(x["invariant"] for x in sinks["alerts"])
    assert "leader_in_isr" in names and "leader_epoch_monotonic" in names
    assert all(x["status"] == "violated" and x["seq"] == 2 for x in sinks["alerts"])


def test_codecs_round_trip():
    e = ControllerEvent("id", "c", 0, SourcePosition(SourceKind.KRAFT_LOG, 3), 0, 0, 1, 1,
                        TopicChange(TopicChangeKind.CREATED, "t", "tid"))
    c = EventCodec()
    assert c.loads(c.dumps(e)) == e
    r = RawRecord("c", 1, "GAP", 0, 0, 9, -1, 0, 0, b"", reason="x")
    assert RawCodec().loads(RawCodec().dumps(r)) == r
    from faust.serializers import codecs
    assert codecs.get_codec("ctrlaudit-event").loads(c.dumps(e)) == e
