"""The archiver on records that are not events (a tombstone, bytes that are not Avro): it stops at the record
with one line naming its topic, partition and offset (exit 2 from `ctrlaudit archive`), after keeping every
event before it, and commits nothing past what it kept."""
from __future__ import annotations

import confluent_kafka
import pytest
from typer.testing import CliRunner

from ctrlaudit.cli import app
from ctrlaudit.commands import capture as capture_commands
from schemas.archive import clusters, iter_events
from schemas.codec import encode
from schemas.errors import CodecError
from services.capture import connect
from services.capture.archiver import Archive
from services.simulator import SimConfig, simulate

TOPIC = "ctrlaudit.events"


class _Message:
    def __init__(self, offset: int, value: bytes | None) -> None:
        self._offset, self._value = offset, value

    def error(self) -> None:
        return None

    def value(self) -> bytes | None:
        return self._value

    def topic(self) -> str:
        return TOPIC

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset


class _Consumer:
    """The events topic as a list of values, handed over in one consume(); records its commits."""

    values: list[bytes | None] = []
    commits = 0

    def __init__(self, conf: object) -> None:
        self.batches = [[_Message(i, v) for i, v in enumerate(self.values)]]

    def list_topics(self, topic: str, timeout: float) -> object:
        meta = type("T", (), {"error": None, "partitions": {0: None}})()
        return type("M", (), {"topics": {TOPIC: meta}})()

    def poll(self, timeout: float) -> None:
        return None

    def subscribe(self, topics: list[str]) -> None:
        pass

    def assignment(self) -> list[object]:
        return [object()]

    def consume(self, n: int, timeout: float) -> list[_Message]:
        return self.batches.pop(0) if self.batches else []

    def commit(self, asynchronous: bool = True) -> None:
        type(self).commits += 1

    def close(self) -> None:
        pass


@pytest.fixture
def topic(monkeypatch):
    """`ctrlaudit archive` reading _Consumer.values instead of a cluster."""
    monkeypatch.setattr(confluent_kafka, "Consumer", _Consumer)
    monkeypatch.setattr(connect, "require_reachable", lambda *a, **k: None)
    monkeypatch.setattr(capture_commands, "require_reachable", lambda *a, **k: None)  # its own name for it
    _Consumer.commits = 0
    return _Consumer


def archive(tmp_path):
    return CliRunner().invoke(app, ["archive", "--archive-dir", str(tmp_path / "a"), "--bootstrap-server", "k:9092",
                                    "--idle-exit", "0.1", "--flush-seconds", "3600"])


def test_a_tombstone_stops_the_archiver_with_one_line_naming_topic_partition_offset(topic, tmp_path):
    events = list(simulate(SimConfig(seed=1, events=5, cluster_id="c1")))
    topic.values = [encode(e) for e in events[:3]] + [None] + [encode(e) for e in events[3:]]
    done = archive(tmp_path)
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert lines[-1] == ("ctrlaudit: error: topic ctrlaudit.events partition 0 offset 3: a record without a value "
                         "(a tombstone), not an event")
    assert "Traceback" not in done.output
    assert topic.commits == 0  # nothing committed: a restarted archiver reads from the start again
    # the events before it are whole, fsynced files (the next run skips them by seq); nothing after it
    root = tmp_path / "a"
    assert [e.seq for cl in clusters(root) for e in iter_events(root / cl)] in ([], [e.seq for e in events[:3]])


def test_bytes_that_are_not_an_event_name_their_record_too(topic, tmp_path):
    topic.values = [b"not avro at all"]
    done = archive(tmp_path)
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert done.output.strip().splitlines()[-1].startswith(
        "ctrlaudit: error: topic ctrlaudit.events partition 0 offset 0: not Avro single-object encoding")


def test_archive_add_names_the_record_it_refuses(tmp_path):
    with pytest.raises(CodecError, match=r"^topic t partition 2 offset 7: a record without a value"):
        Archive(tmp_path).add(None, "topic t partition 2 offset 7")
