"""Avro object container files: round trip and bad files."""
from __future__ import annotations

from pathlib import Path

import fastavro
import pytest

from schemas import CodecError

from schemas.archive import container
from tests.schemas.samples import PAYLOADS, chained_history


def test_round_trip(tmp_path: Path) -> None:
    events = chained_history()
    path = tmp_path / "a.avro"
    assert container.write_events(path, events) == len(events)
    assert list(container.read_events(path)) == events


def test_written_files_are_plain_avro(tmp_path: Path) -> None:
    path = tmp_path / "a.avro"
    container.write_events(path, chained_history(), codec="deflate")
    with open(path, "rb") as fo:
        assert [r["seq"] for r in fastavro.reader(fo)] == list(range(len(PAYLOADS)))


def test_not_avro(tmp_path: Path) -> None:
    path = tmp_path / "notes.avro"
    path.write_text("hello, this is not an archive\n")
    with pytest.raises(CodecError, match=r"notes.avro: not an Avro object container file"):
        list(container.read_events(path))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CodecError, match="cannot open"):
        list(container.read_events(tmp_path / "nope.avro"))


def test_other_record_type(tmp_path: Path) -> None:
    path = tmp_path / "other.avro"
    schema = {"type": "record", "name": "Other", "fields": [{"name": "x", "type": "int"}]}
    with open(path, "wb") as fo:
        fastavro.writer(fo, schema, [{"x": 1}])
    with pytest.raises(CodecError, match="Avro file of record 'Other', not ctrlaudit.ControllerEvent"):
        list(container.read_events(path))


def test_truncated_file_yields_whole_records_then_names_the_damage(tmp_path: Path) -> None:
    path = tmp_path / "t.avro"
    events = chained_history() * 200  # several blocks
    container.write_events(path, events, sync_interval=2000)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    got = []
    with pytest.raises(CodecError, match=r"t.avro: corrupt or truncated data at record (\d+)") as info:
        for event in container.read_events(path):
            got.append(event)
    assert 0 < len(got) < len(events)
    assert got == events[: len(got)]
    assert f"at record {len(got)} " in str(info.value)
