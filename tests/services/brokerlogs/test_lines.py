"""Reading Kafka's log4j files: the shipped layout, rotated files in order, stack traces, the brokers' zone."""
from __future__ import annotations

import gzip
from zoneinfo import ZoneInfo

import pytest

from services.brokerlogs.lines import BadLogs, log_files, merged, read_log

UTC = ZoneInfo("UTC")


def _line(stamp: str, msg: str, logger: str = "state.change.logger") -> str:
    return f"[{stamp}] INFO {msg} ({logger})\n"


def test_rotated_files_oldest_first_and_the_live_one_last(tmp_path):
    d = tmp_path / "node1" / "logs"
    d.mkdir(parents=True)
    for name in ("state-change.log", "state-change.log.2026-11-24-10", "state-change.log.2026-11-24-09",
                 "controller.log", "controller.log.1", "controller.log.2", "server.log", "state-change.log.x.tmp",
                 "log-cleaner.log", "kafka-request.log"):
        (d / name).write_text("")
    with gzip.open(d / "state-change.log.2026-11-24-08.gz", "wt") as fh:
        fh.write("")
    groups = log_files([tmp_path / "node1"])
    assert [[f.name for f in g] for g in groups] == [
        ["controller.log.2", "controller.log.1", "controller.log"], ["server.log"],
        ["state-change.log.2026-11-24-08.gz", "state-change.log.2026-11-24-09", "state-change.log.2026-11-24-10",
         "state-change.log.x.tmp", "state-change.log"]]


def test_no_logs_and_missing_paths_are_one_clear_error(tmp_path):
    with pytest.raises(BadLogs, match="no such file"):
        log_files([tmp_path / "nope"])
    (tmp_path / "kafka-request.log").write_text("")
    with pytest.raises(BadLogs, match="no state-change.log, controller.log or server.log"):
        log_files([tmp_path])


def test_lines_continuations_zone_and_unparsed(tmp_path):
    f = tmp_path / "state-change.log"
    f.write_text(_line("2026-11-24 23:53:30,622", "[Broker id=1] first")
                 + "java.io.IOException: boom\n\tat x.y(Z.java:1)\n"
                 + "[2026-11-24 23:53:31,000] NOTALEVEL garbled\n"
                 + _line("2026-11-24 23:53:31,001", "[Broker id=1] (with parens) second"))
    unparsed: list[str] = []
    lines = list(read_log([f], UTC, unparsed))
    assert [(x.line, x.message) for x in lines] == [(1, "[Broker id=1] first"), (5, "[Broker id=1] (with parens) second")]
    assert lines[0].time_ms == 1795564410622 and lines[0].logger == "state.change.logger"
    assert unparsed == [f"{f}:4"]
    berlin = list(read_log([f], ZoneInfo("Europe/Berlin")))
    assert lines[0].time_ms - berlin[0].time_ms == 3600_000  # 23:53 in Berlin is 22:53 UTC


def test_merged_in_time_order_across_brokers(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(_line("2026-11-24 10:00:00,001", "a1") + _line("2026-11-24 10:00:00,005", "a2"))
    b.write_text(_line("2026-11-24 10:00:00,001", "b1") + _line("2026-11-24 10:00:00,003", "b2"))
    got = [x.message for x in merged([read_log([a], UTC), read_log([b], UTC)])]
    assert got == ["a1", "b1", "b2", "a2"]


def test_damage_after_the_checked_head_is_refused_where_it_is(tmp_path):
    from services.brokerlogs.lines import check_text

    line = b"[2026-11-20 03:10:00,000] INFO [Controller id=1] x (kafka.controller.KafkaController)\n"
    f = tmp_path / "controller.log"
    f.write_bytes(line * 2000 + b"\x00\x01")
    check_text([f])  # the head is a text log
    with pytest.raises(BadLogs, match=rf"controller.log: byte {len(line) * 2000} \(line 2001\): not a text log: a NUL"):
        list(read_log([f], UTC))
    f.write_bytes(b"\n\n\n")  # blank lines only: an empty log, not a refusal
    check_text([f])
    assert list(read_log([f], UTC)) == []


def test_rotated_files_given_out_of_order_are_read_in_the_order_of_their_lines(tmp_path):
    """A copy renamed the rotated files (numbers swapped, one with a date): their first lines order them."""
    d = tmp_path / "n1"
    d.mkdir()
    (d / "state-change.log.1").write_text(_line("2026-11-24 09:00:00,000", "[Broker id=1] old"))
    (d / "state-change.log.2").write_text(_line("2026-11-24 10:00:00,000", "[Broker id=1] middle"))
    (d / "state-change.log.2026-11-24-23").write_text(_line("2026-11-24 08:00:00,000", "[Broker id=1] oldest"))
    (d / "state-change.log").write_text(_line("2026-11-24 11:00:00,000", "[Broker id=1] live"))
    (d / "state-change.log.3").write_text("\n")  # nothing in it: its name's place
    (group,) = log_files([d])
    assert [f.name for f in group] == ["state-change.log.2026-11-24-23", "state-change.log.3", "state-change.log.1",
                                       "state-change.log.2", "state-change.log"]
    assert [line.message.split("] ")[1] for line in read_log(group, ZoneInfo("UTC"))] == \
        ["oldest", "old", "middle", "live"]


def test_a_message_on_several_lines_is_not_a_cut_line_and_a_cut_one_is_counted(tmp_path):
    """server.log's config dump opens in the layout and closes, lines later, with its logger: read as no state and
    counted nowhere; a line cut mid-way (no logger, the next line opens a new one) and one cut at the end of the
    file are counted, with their places."""
    f = tmp_path / "server.log"
    f.write_text("[2026-11-24 23:53:30,000] INFO KafkaConfig values: \n\tadvertised.listeners = PLAINTEXT://:9092\n"
                 "\tzookeeper.connect = localhost:2181\n (kafka.server.KafkaConfig)\n"
                 "[2026-11-24 23:53:31,000] INFO [Partition t-0 broker=1] ISR updated to 1,2  and vers\n"
                 + _line("2026-11-24 23:53:32,000", "[Broker id=1] whole")
                 + "[2026-11-24 23:53:33,000] INFO [Partition t-0 broker=1] ISR upd")
    unparsed: list[str] = []
    lines = list(read_log([f], UTC, unparsed))
    assert [x.line for x in lines] == [6]
    assert unparsed == [f"{f}:5", f"{f}:7"]
