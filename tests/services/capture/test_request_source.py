"""The request log source without Kafka: followed lines become EVENT raw records the normalizer appends to the one
chain once each (a re-read after a restart adds nothing, a log's clock stepping back loses nothing), lines not read
are a CaptureGap of source REQUEST_LOG in the chain, once each too, and a restarted source resumes each log from the
raw topic's newest record of it."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from schemas.events import ClientRequest, SourceKind
from services.capture.logic import CaptureState, DeadLetter, Progress
from services.capture.request_source import LOG_HEADER, headers, last_positions, log_key, run_requests, to_raw
from services.capture.serializers import decode_raw, encode_raw
from services.requests.follow import LogFollower
from tests.services.requests.test_follow import NAME, append, fetch, grow

CL = "c1"


def items(d: Path, resume=None) -> list:
    return LogFollower(d, NAME, 1, CL, resume, clock=lambda: 1.0).poll()


def raw(item):
    return decode_raw(encode_raw(to_raw(CL, 1, item, 5)))


def test_each_line_is_appended_once_across_a_re_read(tmp_path):
    live = tmp_path / NAME
    live.write_text(grow(1, 7) + grow(2, 7) + grow(3, 3))  # the clock stepped back: t3 is earlier than t1, t2
    first = items(tmp_path)
    state = CaptureState(CL, 1)
    out = [e for i in first for e, _, _ in state.process(raw(i))]
    assert [e.payload.body for e in out] == [i.event.payload.body for i in first]
    assert [e.seq for e in out] == [0, 1, 2] and all(isinstance(e.payload, ClientRequest) for e in out)
    assert out[0].source.kind is SourceKind.REQUEST_LOG
    # the same lines handed over again (a restart that resumed before them), then a new one
    append(live, grow(4))
    again = items(tmp_path)
    more = [e for i in again for e, _, _ in state.process(raw(i))]
    assert [e.event_id for e in more] == [again[-1].event.event_id] and more[0].seq == 3
    # a restarted normalizer whose progress is the events topic's last header drops them too
    fresh = CaptureState(CL, 1, Progress.from_header(Progress(3, more[0].hash, dict(state.progress.last)).header()))
    assert [e for i in again for e in fresh.process(raw(i))] == []


def test_two_logs_are_two_streams(tmp_path):
    (tmp_path / NAME).write_text(grow(1))
    auth = LogFollower(tmp_path, "kafka-authorizer.log", 1, CL, None, clock=lambda: 1.0)
    from tests.services.requests.kafka_lines import log4j, standard_authorizer
    from schemas.requests.record import AUTHORIZER_LOGGER
    (tmp_path / "kafka-authorizer.log").write_text(log4j(standard_authorizer(
        "User:a", True, "ALTER", "10.0.0.5", "Topic:LITERAL:t1", "CreatePartitions", "SuperUser"),
        AUTHORIZER_LOGGER) + "\n")
    state = CaptureState(CL, 1)
    n = [len(state.process(raw(i))) for i in items(tmp_path) + auth.poll()]
    assert n == [1, 1]  # both have seq 1 in their own log
    assert sorted(state.progress.last) == ["requests:1:kafka-authorizer.log", "requests:1:kafka-request.log"]


def test_lines_not_read_are_gaps_of_attribution_in_the_chain_once_each(tmp_path):
    from schemas.events import CaptureGap

    nul = b"[2026-11-20 03:10:00,200] DEBUG x\x00 (kafka.request.logger)\n"
    (tmp_path / NAME).write_bytes(nul + nul + grow(1).encode() + nul)
    got = items(tmp_path)
    assert [type(i).__name__ for i in got] == ["Lost", "Lost", "Kept", "Lost"]
    state = CaptureState(CL, 1)
    out = [e for i in got for e, _, _ in state.process(raw(i))]
    assert [type(e.payload).__name__ for e in out] == ["CaptureGap", "CaptureGap", "ClientRequest", "CaptureGap"]
    gaps = [e for e in out if isinstance(e.payload, CaptureGap)]
    assert all(e.source.kind is SourceKind.REQUEST_LOG for e in gaps) and len({e.event_id for e in out}) == 4
    assert [(e.payload.from_offset, e.payload.reason) for e in gaps] == [
        (1, f"{NAME}:1: not read: not a text log: a NUL byte"), (2, f"{NAME}:2: not read: not a text log: a NUL byte"),
        (4, f"{NAME}:4: not read: not a text log: a NUL byte")]
    # handed over again (a restart that resumed before them): nothing added, in the worker or in its successor
    assert [e for i in got for e in state.process(raw(i))] == []
    fresh = CaptureState(CL, 1, Progress.from_header(Progress(3, out[-1].hash, dict(state.progress.last)).header()))
    assert [e for i in got for e in fresh.process(raw(i))] == []


def test_a_lost_line_as_an_earlier_build_sent_it_goes_to_the_dead_letter_topic(tmp_path):
    from schemas.raw import RawRecord

    old = RawRecord(CL, 1, "EVENT", 10, 1, 1, -1, 5, 5, b"", NAME, None, f"{NAME}:1: not read: a NUL byte")
    with pytest.raises(DeadLetter) as dead:
        CaptureState(CL, 1).process(decode_raw(encode_raw(old)))
    assert dead.value.reason == f"request log of node 1: {NAME}:1: not read: a NUL byte"


@dataclass
class Msg:
    headers: list


async def _newest_first(msgs):
    for m in reversed(msgs):
        yield m


def test_the_newest_position_of_each_log_is_found(tmp_path):
    (tmp_path / NAME).write_text(grow(1) + grow(2))
    a, b = items(tmp_path)
    other = Msg([(LOG_HEADER, log_key(CL, 2, NAME)), ("ctrlaudit-request-position", a.position.to_json())])
    broken = Msg([(LOG_HEADER, log_key(CL, 1, NAME)), ("ctrlaudit-request-position", b"{")])
    msgs = [Msg(headers(CL, 1, a)), Msg(headers(CL, 1, b)), other, broken, Msg([])]
    found = asyncio.run(last_positions(_newest_first(msgs), [log_key(CL, 1, NAME)]))
    assert found == {log_key(CL, 1, NAME): b.position}


def test_run_resumes_after_the_raw_topics_last_record(tmp_path):
    (tmp_path / NAME).write_text(grow(1) + fetch() + grow(2))
    sent: list = []

    async def send(r, h):
        sent.append(Msg(h))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    async def run(rounds: int) -> None:
        n = {"polls": 0}

        def stopped() -> bool:
            n["polls"] += 1
            return n["polls"] > rounds
        await run_requests([(tmp_path, 1)], CL, -1, lambda: _newest_first(list(sent)), send, 0.001, stopped)

    asyncio.run(run(3))
    assert len(sent) == 2
    append(tmp_path / NAME, grow(3))
    asyncio.run(run(3))  # a restart: resumes after t2
    assert len(sent) == 3
    assert dict(sent[-1].headers)[LOG_HEADER] == log_key(CL, 1, NAME)


def test_a_first_start_reads_back_only_so_far_a_known_log_to_the_start(tmp_path, monkeypatch):
    (tmp_path / NAME).write_text(grow(1) + grow(2))
    a, _ = items(tmp_path)
    old = [Msg(headers(CL, 1, a))] + [Msg([]) for _ in range(50)]  # its record, then 50 metadata batches
    key = log_key(CL, 1, NAME)
    assert asyncio.run(last_positions(_newest_first(old), [key], limit=50)) == {}
    assert asyncio.run(last_positions(_newest_first(old), [key], limit=51)) == {key: a.position}
    import services.capture.request_source as source
    monkeypatch.setattr(source, "FIRST_START_SCAN", 50)
    sent: list = []

    async def send(r, h):
        sent.append(r)
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    def run(held: set[str]) -> list:
        sent.clear()
        calls = {"n": 0}

        def stopped() -> bool:
            calls["n"] += 1
            return calls["n"] > 3

        async def streams() -> set[str]:
            return held
        asyncio.run(run_requests([(tmp_path, 1)], CL, -1, lambda: _newest_first(old), send, 0.001, stopped, streams))
        return [r.base_offset for r in sent if r.kind == "EVENT"]
    assert run({"requests:1:kafka-request.log"}) == [2]  # the events topic holds its lines: found, resumed after t1
    assert run({"kraft"}) == [1, 2]  # none of its lines: read back 50 only, a first start


def test_a_log_read_on_with_nothing_kept_is_marked_and_resumed_from_there(tmp_path):
    live = tmp_path / NAME
    live.write_text(grow(1) + fetch() * 3)
    sent: list = []

    async def send(r, h):
        sent.append((r, Msg(h)))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    def run(mark_seconds: float) -> None:
        calls = {"n": 0}

        def stopped() -> bool:
            calls["n"] += 1
            return calls["n"] > 4
        asyncio.run(run_requests([(tmp_path, 1)], CL, -1, lambda: _newest_first([m for _, m in sent]), send, 0.001,
                                 stopped, mark_seconds=mark_seconds))
    run(3600)
    assert [r.data != b"" for r, _ in sent] == [True]  # the kept line; no mark within the hour
    run(0)  # a restart that marks at once: where the Fetch lines end, once
    (mark, msg), = sent[1:]
    assert mark.data == b"" and mark.reason is None and mark.position == live.stat().st_size
    assert CaptureState(CL, 1).process(decode_raw(encode_raw(mark))) == []  # the normalizer passes it over
    found = asyncio.run(last_positions(_newest_first([msg]), [log_key(CL, 1, NAME)]))
    assert found[log_key(CL, 1, NAME)].offset == live.stat().st_size
    live.unlink()  # the file rolled away and deleted while the worker was down: only what came after the mark
    live.write_text(grow(2))  # may be lost, and is said so
    run(3600)
    lost, kept = (r for r, _ in sent[2:])
    gap = CaptureState(CL, 1).unchained(lost)[0].payload
    assert gap.reason.startswith(f"{NAME}:5..: not read: the file read up to line 4 ") and gap.from_offset == 5
    assert (lost.base_offset, lost.position) == (1, 1)  # after the log's kept line 1, its first stretch lost since
    assert kept.reason is None and kept.base_offset == 2
