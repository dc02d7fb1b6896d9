"""Schema evolution by a new payload kind, not a defaulted field: v2 appends ClientRequest to the payload union and
REQUEST_LOG to SourceKind. What the v1 reader (every build before v2) does with events and archive files v2 wrote,
as tested (docs/reference/events.md says the same), and that this build reads both."""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import avro.schema
import fastavro
import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from schemas import codec, loader
from schemas.archive import container
from schemas.archive.chain import record_hash
from schemas.archive.verified import _writer_records
from schemas.errors import CodecError
from schemas.events import SourceKind
from tests.schemas.samples import sample_event

REQUEST = ("ctrlaudit.ClientRequest", {
    "log": "kafka.request.logger", "form": "request-json", "level": "DEBUG", "principal": "User:alice",
    "api": "CreateTopics", "api_key": 19, "api_version": 7, "correlation_id": 3, "client_id": "tool",
    "host": "10.0.0.5", "listener": "PLAINTEXT", "security_protocol": "PLAINTEXT", "software_name": "apache-kafka-java",
    "software_version": "4.3.1", "connection": "10.0.0.1:9092-10.0.0.5:5000-0", "forwarded": False, "outcome": None,
    "operation": None, "resources": [], "rule": None, "ref_count": None, "error_codes": [], "body": '{"topics":["x"]}'})


V1, V2 = loader.by_version(1), loader.by_version(2)


def _compatible(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    result = ReaderWriterCompatibilityChecker().get_compatibility(
        avro.schema.parse(json.dumps(reader)), avro.schema.parse(json.dumps(writer)))
    return result.compatibility is SchemaCompatibilityType.compatible


@pytest.fixture
def old_build(monkeypatch):
    """This code as a build that released v1 only: every reader of the contract takes v1 as current."""
    monkeypatch.setattr(loader, "released", lambda: (V1,))
    return V1


def test_a_new_reader_reads_old_archives_an_old_reader_not_every_new_one():
    v1, v2 = V1.json, V2.json
    assert _compatible(reader=v2, writer=v1)
    assert not _compatible(reader=v1, writer=v2)  # the union branch (and the symbol) an old reader lacks


def _records(v2: Any) -> list[dict[str, Any]]:
    """A chain of three, written with `v2`: an old kind, a ClientRequest, an old kind from the new source kind."""
    first = codec.to_avro(sample_event("CaptureGap"))
    first["hash"] = record_hash(first, v2)
    second = {**codec.to_avro(sample_event("CaptureGap", offset=1)), "seq": 1, "prev_hash": first["hash"],
              "payload": REQUEST}
    second["hash"] = record_hash(second, v2)
    third = codec.to_avro(sample_event("CaptureGap", offset=2))
    third = {**third, "seq": 2, "prev_hash": second["hash"], "source": {**third["source"], "kind": "REQUEST_LOG"}}
    third["hash"] = record_hash(third, v2)
    return [first, second, third]


def test_single_object_encoded_events_of_the_new_writer(old_build):
    v2 = loader.register_writer(V2.json, version=2)
    old, new, old_from_new_source = (codec.encode_record(r, v2) for r in _records(v2.parsed))
    assert replace(codec.decode(old), hash="") == sample_event("CaptureGap")
    with pytest.raises(CodecError, match="writer schema v2 cannot be read as v1"):
        codec.decode(new)
    # a symbol the reader lacks is read as the enum's default, UNKNOWN
    assert codec.decode(old_from_new_source).source.kind is SourceKind.UNKNOWN


def test_this_build_reads_both_and_the_request_whole():
    v2 = V2
    assert loader.current() is v2
    old, new, new_source = (codec.encode_record(r, v2) for r in _records(v2.parsed))
    assert replace(codec.decode(old), hash="") == sample_event("CaptureGap")
    assert codec.to_avro(codec.decode(new))["payload"] == REQUEST
    assert codec.decode(new_source).source.kind is SourceKind.REQUEST_LOG
    assert replace(codec.decode(codec.encode(sample_event("CaptureGap")), reader=V1), hash="") \
        == sample_event("CaptureGap")


def test_an_archive_file_of_the_new_writer_is_read_up_to_its_first_new_event(tmp_path, old_build):
    v2 = fastavro.parse_schema(V2.json)
    path = tmp_path / "events.avro"
    records = _records(v2)
    with path.open("wb") as fo:
        fastavro.writer(fo, v2, records, codec="null")
    read = []
    with pytest.raises(CodecError) as e:
        for rec in container.iter_records(path):
            read.append(rec["seq"])
    # the events before it are read; the ClientRequest stops the read, named by file and record (said today as
    # "corrupt or truncated data", which a newer writer's event is not: what the release must document)
    assert read == [0]
    assert str(e.value).startswith(f"{path}: ") and "at record 1" in str(e.value)
    assert "SchemaResolutionError" in str(e.value)
    # the chain is over the events as written, not as resolved: an old reader's REQUEST_LOG -> UNKNOWN does not
    # break it, and the ClientRequest's own link holds too
    assert [record_hash(*w) for w in _writer_records(path)] == [r["hash"] for r in records]
