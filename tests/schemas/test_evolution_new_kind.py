"""Schema evolution by a new payload kind, not a defaulted field: what this build's reader (the reader of every
archive written so far) does with an archive whose writer schema has one more branch in the payload union and one
more SourceKind symbol, the shape the ClientRequest event of docs/how-to/requests.md will take. Pinned before
such a release, so the release documents the old reader's behaviour as tested, not as hoped."""
from __future__ import annotations

import copy
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

CLIENT_REQUEST = {"type": "record", "name": "ClientRequest", "fields": [
    {"name": "principal", "type": "string"}, {"name": "api", "type": "string"},
    {"name": "outcome", "type": ["null", "string"], "default": None}]}


def with_new_kind() -> dict[str, Any]:
    """v1, its SourceKind enum with REQUEST_LOG appended (appended: the hand-written encoder and the C decoder
    write and read symbols by index) and its payload union with ClientRequest appended."""
    v2 = copy.deepcopy(loader.by_version(1).json)
    source = next(f for f in v2["fields"] if f["name"] == "source")["type"]
    kind = next(f for f in source["fields"] if f["name"] == "kind")["type"]
    kind["symbols"].append("REQUEST_LOG")
    next(f for f in v2["fields"] if f["name"] == "payload")["type"].append(copy.deepcopy(CLIENT_REQUEST))
    return v2


def _compatible(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    result = ReaderWriterCompatibilityChecker().get_compatibility(
        avro.schema.parse(json.dumps(reader)), avro.schema.parse(json.dumps(writer)))
    return result.compatibility is SchemaCompatibilityType.compatible


def test_a_new_reader_reads_old_archives_an_old_reader_not_every_new_one():
    v1, v2 = loader.by_version(1).json, with_new_kind()
    assert _compatible(reader=v2, writer=v1)
    assert not _compatible(reader=v1, writer=v2)  # the union branch (and the symbol) an old reader lacks


def _records(v2: Any) -> list[dict[str, Any]]:
    """A chain of three, written with `v2`: an old kind, a ClientRequest, an old kind from the new source kind."""
    first = codec.to_avro(sample_event("CaptureGap"))
    first["hash"] = record_hash(first, v2)
    second = {**codec.to_avro(sample_event("CaptureGap", offset=1)), "seq": 1, "prev_hash": first["hash"],
              "payload": ("ctrlaudit.ClientRequest", {"principal": "User:alice", "api": "CreateTopics",
                                                      "outcome": "allowed"})}
    second["hash"] = record_hash(second, v2)
    third = codec.to_avro(sample_event("CaptureGap", offset=2))
    third = {**third, "seq": 2, "prev_hash": second["hash"], "source": {**third["source"], "kind": "REQUEST_LOG"}}
    third["hash"] = record_hash(third, v2)
    return [first, second, third]


def test_single_object_encoded_events_of_the_new_writer():
    v2 = loader.register_writer(with_new_kind(), version=2)
    old, new, old_from_new_source = (codec.encode_record(r, v2) for r in _records(v2.parsed))
    assert replace(codec.decode(old), hash="") == sample_event("CaptureGap")
    with pytest.raises(CodecError, match="writer schema v2 cannot be read as v1"):
        codec.decode(new)
    # a symbol the reader lacks is read as the enum's default, UNKNOWN
    assert codec.decode(old_from_new_source).source.kind is SourceKind.UNKNOWN


def test_an_archive_file_of_the_new_writer_is_read_up_to_its_first_new_event(tmp_path):
    v2 = fastavro.parse_schema(with_new_kind())
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
