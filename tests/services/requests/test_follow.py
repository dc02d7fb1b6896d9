"""Following a request log as Kafka writes it: whole lines only, a rotation followed, a truncated or vanished file
named as lost, and a follower resumed from any position handing over exactly the lines after it, with the ids an
import of the same files gives."""
from __future__ import annotations

import os
from pathlib import Path

from services.requests.event import request_events
from services.requests.files import read_logs
from services.requests.follow import Kept, LogFollower, Lost, Position
from services.requests.reader import Reading
from schemas.requests.record import REQUEST_LOGGER
from tests.services.requests.kafka_lines import completed, log4j

NAME = "kafka-request.log"


def grow(n: int, ms: int = 123) -> str:
    """A CreatePartitions request log line (kept) for topic t<n>, at millisecond `ms` of the test's second."""
    body = {"topics": [{"name": f"t{n}", "count": 6, "assignments": None}], "timeoutMs": 1, "validateOnly": False}
    return log4j(completed(37, "CREATE_PARTITIONS", 3, body, {"results": []}),
                 REQUEST_LOGGER, date=f"2026-11-20 03:10:00,{ms:03d}") + "\n"


def fetch() -> str:
    return log4j(completed(1, "FETCH", 16, {"replicaId": -1}, {"responses": []}), REQUEST_LOGGER) + "\n"


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def follower(d: Path, resume: Position | None = None) -> LogFollower:
    return LogFollower(d, NAME, 1, "c1", resume, clock=lambda: 1.0)


def topics(items: list) -> list[str]:
    return [i.line.body.topics[0] for i in items if isinstance(i, Kept)]


def test_whole_lines_only_and_the_position_after_each(tmp_path):
    live = tmp_path / NAME
    line1, line2 = grow(1), grow(2)
    live.write_text(line1 + fetch() + line2[:40])  # the last line still being written
    f = follower(tmp_path)
    got = f.poll()
    assert topics(got) == ["t1"]
    assert got[0].position.offset == len(line1.encode()) and got[0].position.line == 1
    assert f.poll() == []
    append(live, line2[40:])
    got = f.poll()
    assert topics(got) == ["t2"] and got[0].line.line == 3
    assert got[0].position.offset == live.stat().st_size and got[0].position.seq == 2


def test_a_rotation_is_followed_the_old_files_rest_first(tmp_path):
    live = tmp_path / NAME
    live.write_text(grow(1))
    f = follower(tmp_path)
    assert topics(f.poll()) == ["t1"]
    append(live, grow(2))
    os.rename(live, tmp_path / f"{NAME}.2026-11-20-03")  # log4j's hourly roll
    (rest,) = f.poll()  # the renamed file's rest, read through the file kept open, under its name now
    assert topics([rest]) == ["t2"] and rest.event.source.file == rest.position.file == f"{NAME}.2026-11-20-03"
    append(tmp_path / f"{NAME}.2026-11-20-03", grow(9)[:30])  # (a partial line: waits, the new file is not there)
    assert f.poll() == []
    live.write_text(grow(3))
    got = f.poll()
    assert [type(i).__name__ for i in got] == ["Lost", "Kept"]  # the old file's cut last line, then the new one's
    assert got[0].first_line == 3 and topics(got) == ["t3"]
    assert (got[1].position.file, got[1].position.line, got[1].position.ino) == (NAME, 1, live.stat().st_ino)


def test_same_millisecond_lines_get_the_import_ids(tmp_path):
    live = tmp_path / NAME
    live.write_text(grow(1, 5) + grow(2, 5) + fetch() + grow(3, 5) + grow(4, 6))
    f = follower(tmp_path)
    followed = [i.event.event_id for i in f.poll() if isinstance(i, Kept)]
    imported = [e.event_id for e in request_events("c1", list(read_logs([tmp_path], Reading())), {tmp_path: 1})]
    assert followed == imported and len(set(followed)) == 4


def test_resumed_from_any_item_hands_over_exactly_the_rest(tmp_path):
    live = tmp_path / NAME
    live.write_text(grow(1, 1) + grow(2, 1) + fetch() + "[2026-11-20 03:10:00,200] DEBUG garbled (kafka.request.logger)\n"
                    + grow(3, 2) + grow(4, 2))
    items = follower(tmp_path).poll()
    all_ids = [i.event.event_id for i in items if isinstance(i, Kept)]
    assert len(all_ids) == 4 and any(isinstance(i, Lost) for i in items)
    for k, item in enumerate(items):
        rest = follower(tmp_path, item.position).poll()
        assert [i.event.event_id for i in rest if isinstance(i, Kept)] == \
            [i.event.event_id for i in items[k + 1:] if isinstance(i, Kept)]
        assert [str(i) for i in rest if isinstance(i, Lost)] == [str(i) for i in items[k + 1:] if isinstance(i, Lost)]
        assert [i.position.seq for i in rest] == [i.position.seq for i in items[k + 1:]]


def test_resumed_in_a_rotated_file_reads_it_then_the_newer_ones(tmp_path):
    live = tmp_path / NAME
    live.write_text(grow(1) + grow(2))
    first = follower(tmp_path).poll()[0]  # killed after handing over t1
    os.rename(live, tmp_path / f"{NAME}.2026-11-20-03")
    live.write_text(grow(3))
    f = follower(tmp_path, Position.from_json(first.position.to_json()))
    got = f.poll() + f.poll()  # (a poll reads one file's chunk)
    assert topics(got) == ["t2", "t3"] and not [i for i in got if isinstance(i, Lost)]


def test_a_file_gone_before_a_resume_is_named_lost_then_the_live_one_read(tmp_path):
    live = tmp_path / NAME
    live.write_text(grow(1) + grow(2))
    first = follower(tmp_path).poll()[0]
    live.unlink()  # rotated away and deleted while the worker was down
    live.write_text(grow(3))
    got = follower(tmp_path, first.position).poll()
    assert isinstance(got[0], Lost) and "is gone or was rewritten" in got[0].reason and got[0].first_line == 2
    assert topics(got) == ["t3"]
    # resumed from the gap's own position: not named again
    again = follower(tmp_path, got[0].position).poll()
    assert topics(again) == ["t3"] and not [i for i in again if isinstance(i, Lost)]


def test_a_truncated_file_is_named_lost_and_read_again_from_its_start(tmp_path):
    live = tmp_path / NAME
    live.write_text(grow(1) + grow(2))
    f = follower(tmp_path)
    assert topics(f.poll()) == ["t1", "t2"]
    with open(live, "w") as fh:  # copytruncate, then a new line
        fh.write(grow(3))
    got = f.poll()
    assert isinstance(got[0], Lost) and "truncated" in got[0].reason
    assert topics(got) == ["t3"] and got[-1].position.line == 1


def test_a_nul_byte_is_a_lost_line_not_the_end(tmp_path):
    live = tmp_path / NAME
    live.write_bytes(grow(1).encode() + b"junk\x00junk\n" + grow(2).encode())
    got = follower(tmp_path).poll()
    assert topics(got) == ["t1", "t2"]
    (lost,) = [i for i in got if isinstance(i, Lost)]
    assert (lost.first_line, lost.reason) == (2, "not a text log: a NUL byte")


def test_a_bad_position_is_one_line():
    for bad in (b"{", b'{"log": 1}', b'{"log": "x", "seq": "1"}', b"[]"):
        try:
            Position.from_json(bad)
        except ValueError as exc:
            assert str(exc).startswith("not a request log position")
        else:
            raise AssertionError(bad)


def test_several_rolls_between_two_polls_are_read_in_order_dated(tmp_path):
    live = tmp_path / NAME
    live.write_text(grow(1))
    f = follower(tmp_path)
    assert topics(f.poll()) == ["t1"]
    append(live, grow(2))
    for n, t in ((1, 3), (2, 4), (3, 5)):  # three hourly rolls while the follower looked away
        os.rename(live, tmp_path / f"{NAME}.2026-11-20-0{n}")
        live.write_text(grow(t))
    got = f.poll()
    assert topics(got) == ["t2", "t3", "t4", "t5"] and not [i for i in got if isinstance(i, Lost)]
    # each line named by the file that holds it now: the first read through the handle kept open, renamed since
    names = [f"{NAME}.2026-11-20-01", f"{NAME}.2026-11-20-02", f"{NAME}.2026-11-20-03", NAME]
    assert [i.position.file for i in got] == [i.event.source.file for i in got] == [Path(i.line.file).name for i in got] \
        == names
    assert [(tmp_path / i.event.source.file).read_text().splitlines()[i.event.source.line - 1] for i in got] == [
        grow(t).rstrip("\n") for t in (2, 3, 4, 5)]
    append(live, grow(6))
    assert topics(f.poll()) == ["t6"]


def test_several_rolls_between_two_polls_are_read_in_order_numbered(tmp_path):
    live = tmp_path / NAME
    live.write_text(grow(1))
    f = follower(tmp_path)
    assert topics(f.poll()) == ["t1"]
    append(live, grow(2))
    for t in (3, 4, 5):  # log4j 1's size rolling: .1 the newest, every rolled file renamed at each roll
        for k in (3, 2, 1):
            if (tmp_path / f"{NAME}.{k}").exists():
                os.rename(tmp_path / f"{NAME}.{k}", tmp_path / f"{NAME}.{k + 1}")
        os.rename(live, tmp_path / f"{NAME}.1")
        live.write_text(grow(t))
    got = f.poll()
    assert topics(got) == ["t2", "t3", "t4", "t5"] and not [i for i in got if isinstance(i, Lost)]
    assert [i.position.file for i in got] == [i.event.source.file for i in got] == [
        f"{NAME}.3", f"{NAME}.2", f"{NAME}.1", NAME]  # the names now
    resumed = follower(tmp_path, got[1].position)  # a restart in the file holding t3, now .2
    assert topics(resumed.poll()) == ["t4", "t5"]
