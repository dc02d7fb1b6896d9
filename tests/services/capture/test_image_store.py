"""Image checkpoints in a table (services.capture.image_store) and the pipeline's use of them: a restarted
pipeline replays the raw topic from the checkpoint and emits exactly what an uninterrupted one emits; a torn
or altered checkpoint is refused and the replay starts from offset 0; none is taken before the events of
the messages it covers are delivered."""
from __future__ import annotations

import asyncio
import importlib.util
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from services.capture import agents, logic
from services.capture.image_store import HEAD, ImageStore

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def raws() -> list[bytes]:
    spec = importlib.util.spec_from_file_location("ctrlaudit_bench_capture", ROOT / "bench/capture.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.synthetic_raw(2000, 250)  # 3 brokers, 8 topics, then a mass election in 2 batches


def normalizers(values) -> dict:
    st = None
    for v in values:
        r = logic.parse_raw(v)
        st = st or logic.CaptureState(r.cluster_id, r.node_id)
        st.process(r)
    return {st.cluster_id: st.normalizer}


def test_save_then_load_gives_the_same_image(raws):
    table: dict[str, bytes] = {}
    store = ImageStore(table, chunk_bytes=300)  # several chunks
    ns = normalizers(raws[:6])
    assert store.save(6, ns)
    got = store.load()
    assert got is not None and got.raw_offset == 6
    (cid, n), = ns.items()
    assert got.normalizers[cid].image == n.image and got.normalizers[cid].last_offset == n.last_offset
    assert sum(1 for k in table if k.startswith("0/")) > 1


class CrashOnHead(dict):
    """A table whose writer dies (kill -9) just before the head is written."""
    armed = False

    def __setitem__(self, k, v):
        if self.armed and k == HEAD:
            raise SystemExit("killed")
        super().__setitem__(k, v)


def test_a_write_killed_before_the_head_leaves_the_previous_checkpoint_whole(raws):
    table = CrashOnHead()
    store = ImageStore(table, chunk_bytes=300)
    first = normalizers(raws[:4])
    store.save(4, first)
    table.armed = True
    with pytest.raises(SystemExit):
        store.save(9, normalizers(raws[:9]))  # other slot: the first checkpoint's chunks are untouched
    got = store.load()
    assert got is not None and got.raw_offset == 4
    assert next(iter(got.normalizers.values())).image == next(iter(first.values())).image


def test_an_altered_or_missing_chunk_is_refused(raws):
    table: dict[str, bytes] = {}
    store = ImageStore(table, chunk_bytes=300)
    store.save(6, normalizers(raws[:6]))
    key = next(k for k in table if k.startswith("0/"))
    good = table[key]
    table[key] = good[:-1] + bytes([good[-1] ^ 1])
    assert store.load() is None
    del table[key]
    assert store.load() is None
    table[key] = good
    assert store.load() is not None


def test_no_checkpoint_while_a_normalizer_is_inside_a_snapshot(raws):
    ns = normalizers(raws[:3])
    (n,) = ns.values()
    n.begin_snapshot(10**6)
    table: dict[str, bytes] = {}
    assert not ImageStore(table).save(3, ns) and table == {}


class Msg(NamedTuple):
    """What the raw reader gives: a consumer record's offset, key and value."""

    offset: int
    key: bytes | None
    value: bytes


def run(pipeline, values, first=0, offsets=None):
    """Hand `values` to the pipeline at raw offsets first, first + 1, ... or, given `offsets`, at those (in that
    order, as a consumer may hand them over: with holes and repeats), the value at each offset being values[offset]."""
    import asyncio
    got = []

    async def sink(out):
        got.extend(out)
    pipeline.sink_events = sink

    async def go():
        if offsets is None:
            for i, v in enumerate(values, start=first):
                await pipeline.handle(i, None, v)
        else:
            for i in offsets:
                await pipeline.handle(i, None, values[i])
    asyncio.run(go())
    return got


def make_pipeline(raws, table, progress, reads, flushes, seconds=1e-9):
    async def progress_reader():
        return None, progress

    async def raw_reader(upto, start=0):
        reads.append((start, upto))
        for i, v in enumerate(raws[start:upto], start=start):
            yield Msg(i, None, v)

    async def flush():
        flushes.append(1)
    return agents.Pipeline(progress_reader=progress_reader, raw_reader=raw_reader, images=ImageStore(table),
                           checkpoint_seconds=seconds, flush_events=flush)


@pytest.fixture
def whole(raws, monkeypatch) -> list:
    """What an uninterrupted pipeline emits for `raws` (the clock fixed: capture_time_ms is in every event's bytes)."""
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    return run(make_pipeline(raws, {}, logic.Progress(), [], []), raws)


def killed_after(raws, k: int, table: dict, flushes: list | None = None) -> tuple[list, logic.Progress]:
    """A worker that handled raws[:k], checkpointing into `table`, then was killed: what it emitted, and the
    progress its successor reads from the events topic."""
    first = run(make_pipeline(raws, table, logic.Progress(), [], [] if flushes is None else flushes), raws[:k])
    progress = logic.Progress()
    for e, _, _ in first:
        progress.advance(e)
    return first, progress


def same(got: list, want: list) -> bool:
    return [(e, v) for e, _, v in got] == [(e, v) for e, _, v in want]


def test_a_restarted_pipeline_replays_from_the_checkpoint_and_emits_what_an_uninterrupted_one_does(raws, whole):
    table: dict[str, bytes] = {}
    flushes: list = []
    k = 7
    first, progress = killed_after(raws, k, table, flushes)
    assert ImageStore(table).head()["raw_offset"] == k and len(flushes) >= 1
    # its successor resumes at raw offset k with the events topic's progress
    reads: list = []
    rest = run(make_pipeline(raws, table, progress, reads, []), raws[k:], first=k)
    assert reads == [(k, k)]  # nothing below the checkpoint was replayed
    assert same(first + rest, whole)


def test_messages_below_a_checkpoint_past_the_resume_offset_are_skipped(raws, whole):
    table: dict[str, bytes] = {}
    first, progress = killed_after(raws, 7, table)
    reads: list = []
    # the raw offsets were committed only up to 5 when the worker died: messages 5 and 6 come again
    p = make_pipeline(raws, table, progress, reads, [])
    rest = run(p, raws[5:], first=5)
    assert reads == [(5, 5)] and p.replayed_from == 7  # nothing replayed; the image is the checkpoint's
    assert same(first + rest, whole)


def test_raw_messages_the_consumer_did_not_hand_over_are_read_from_the_topic(raws, whole):
    # Faust skipped offsets on a restarted worker (handed over 291, then 302): had the pipeline gone on without
    # them, their records would be missing from the image and later events wrong or missing
    reads: list = []
    handed = [0, 1, 2, *range(5, len(raws))]  # 3 and 4 never handed over
    got = run(make_pipeline(raws, {}, logic.Progress(), reads, []), raws, offsets=handed)
    assert reads == [(0, 0), (3, 5)] and same(got, whole)


def test_raw_messages_handed_over_again_are_not_normalized_twice(raws, whole):
    n = len(raws)
    handed = [*range(0, n - 2), *range(2, n)]  # a rebalance sent the consumer back to offset 2
    reads: list = []
    got = run(make_pipeline(raws, {}, logic.Progress(), reads, []), raws, offsets=handed)
    assert reads == [(0, 0)] and same(got, whole)


def test_a_hole_after_a_restart_from_a_checkpoint_is_read_too(raws, whole):
    table: dict[str, bytes] = {}
    first, progress = killed_after(raws, 5, table)
    reads: list = []
    p = make_pipeline(raws, table, progress, reads, [])
    rest = run(p, raws, offsets=[3, 4, 7, *range(8, len(raws))])  # committed up to 3; 5 and 6 never handed over
    assert reads == [(3, 3), (5, 7)] and p.refilled == 2
    assert same(first + rest, whole)


def test_no_checkpoint_before_it_is_due(raws):
    table: dict[str, bytes] = {}
    flushes: list = []
    run(make_pipeline(raws, table, logic.Progress(), [], flushes, seconds=3600), raws[:5])
    assert table == {} and flushes == [1]  # only prepare's: what was sent before lands before the topics are read


def test_a_checkpoint_waits_for_the_events_it_covers_to_be_delivered(raws):
    order = []

    class Table(dict):
        def __setitem__(self, k, v):
            order.append("save")
            super().__setitem__(k, v)

    p = make_pipeline(raws, Table(), logic.Progress(), [], [])

    async def flush():
        order.append("flush")
    p.flush_events = flush
    run(p, raws[:2])
    assert order and order[0] == "flush" and "save" in order


def test_a_due_checkpoint_inside_a_transaction_is_tried_again_at_the_next_message(raws, monkeypatch):
    # not a full interval later: a long transaction would otherwise push every checkpoint back
    from services.capture import checkpoint
    table: dict[str, bytes] = {}
    flushes: list = []
    p = make_pipeline(raws, table, logic.Progress(), [], flushes, seconds=3600)
    answers = iter([False, False])  # the first two messages end inside a transaction
    monkeypatch.setattr(checkpoint, "quiet", lambda n: next(answers, True))
    monkeypatch.setattr(time, "monotonic", lambda: 10_000.0)
    p._checkpoint_at = 10_000.0 - 3600  # due from the first message on (prepare sets it at start)
    orig_prepare = p.prepare

    async def prepare(offset):
        await orig_prepare(offset)
        p._checkpoint_at = 10_000.0 - 3600
    p.prepare = prepare
    run(p, raws[:5])
    assert ImageStore(table).head()["raw_offset"] == 3  # saved after the third message, then not due again
    assert flushes == [1, 1] and p.images.saved == 1  # prepare's and the save's: none for the attempts that could not


def test_a_hole_the_raw_topic_no_longer_holds_is_said(raws, caplog):
    p = make_pipeline(raws, {}, logic.Progress(), [], [])
    reader = p.raw_reader

    async def retention_deleted(upto, start=0):  # an operator shortened the raw topic's retention
        async for m in reader(upto, start):
            if m.offset >= 4:
                yield m
    p.raw_reader = retention_deleted
    run(p, raws, offsets=[0, 1, 6])
    assert "raw offsets [2, 3] are no longer in the raw topic; the image lacks them" in caplog.text


def _shared_topic() -> tuple[list, object, object]:
    """An events topic that several pipelines send to, and its reader of the last message's progress."""
    topic: list = []

    async def sink(out):
        topic.extend(out)

    async def progress_reader():
        return None, (logic.Progress.from_header(topic[-1][1]) if topic else logic.Progress())
    return topic, sink, progress_reader


def _worker(raws, sink, progress_reader, reader=None):
    """A worker with no image checkpoints: each prepare replays the raw topic from its start."""
    p = make_pipeline(raws, {}, logic.Progress(), [], [])
    p.sink_events, p.progress_reader, p.images = sink, progress_reader, None
    if reader is not None:
        p.raw_reader = reader(p.raw_reader, p)
    return p


def _hand(*steps) -> None:
    """Run (pipeline, offsets, raws) steps, or callables, in order."""
    async def go():
        for step in steps:
            if callable(step):
                step()
                continue
            p, offsets, raws = step
            for i in offsets:
                await p.handle(i, None, raws[i])
    asyncio.run(go())


def test_a_stretch_another_worker_normalized_while_the_partition_was_away(raws, whole):
    # the raw partition revoked (a stalled worker left the group), another worker normalized a stretch, then it came
    # back: the chain head and the image are rebuilt from the topics, never continued from this worker's memory
    topic, sink, progress = _shared_topic()
    a, b = _worker(raws, sink, progress), _worker(raws, sink, progress)
    n = len(raws)
    k, m = n // 3, 2 * n // 3
    _hand((a, range(k), raws), a.forget, (b, range(k, m), raws), (a, range(m, n), raws))
    assert same(topic, whole)


def _forgetting_after(offset: int):
    """A raw reader that calls forget() once it has given `offset` (a revocation while the topic is read)."""
    def wrap(reader, p):
        async def read(upto, start=0):
            async for m in reader(upto, start):
                yield m
                if m.offset == offset and not getattr(p, "_forgot", False):
                    p._forgot = True
                    p.forget()
        return read
    return wrap


@pytest.mark.parametrize("handed, forgot_at", [
    ([0, 1, 2, 3], 1),  # during the replay of the prepare for offset 3
    ([0, 1, 2, 6], 4),  # during the refill of [3, 5] before offset 6
])
def test_a_revocation_while_the_raw_topic_is_read_leaves_nothing_half_built(raws, whole, handed, forgot_at):
    topic, sink, progress = _shared_topic()
    p = _worker(raws, sink, progress, _forgetting_after(forgot_at))
    if handed[-1] == 3:
        _hand((p, handed[:3], raws), p.forget)  # the first prepare is not cut short; the second one is
    else:
        _hand((p, handed[:3], raws))
    _hand((p, handed[-1:], raws))
    assert not p.ready  # nothing of the last message sent from a half-built image
    _hand((p, range(handed[-1] + 1, len(raws)), raws))  # the next message prepares again, from the topics
    assert same(topic, whole)
