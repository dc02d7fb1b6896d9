"""Schema evolution: a next version that adds defaulted fields to the current one must be compatible both ways,
checked with Avro's own compatibility checker and by really decoding in both directions."""
from __future__ import annotations

import copy
import json
from typing import Any

import avro.schema
import pytest
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from schemas import codec, loader
from schemas.loader import schema_from_json
from tests.schemas.samples import PAYLOADS, sample_event


NEXT = loader.current().version + 1


def make_v2() -> dict[str, Any]:
    """The current version plus an envelope field and a PartitionState field, both with defaults."""
    v2 = copy.deepcopy(loader.current().json)
    v2["fields"].insert(-1, {"name": "capture_host", "type": ["null", "string"], "default": None})
    partition_change = next(t for t in v2["fields"][-1]["type"] if t["name"] == "PartitionChange")
    state = partition_change["fields"][3]["type"][1]
    assert state["name"] == "PartitionState"
    state["fields"].append({"name": "directories", "type": {"type": "array", "items": "string"}, "default": []})
    return v2


def compatible(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    result = ReaderWriterCompatibilityChecker().get_compatibility(
        avro.schema.parse(json.dumps(reader)), avro.schema.parse(json.dumps(writer))
    )
    return result.compatibility is SchemaCompatibilityType.compatible


def test_checker_accepts_v2_both_ways() -> None:
    v1, v2 = loader.current().json, make_v2()
    assert compatible(reader=v1, writer=v2)
    assert compatible(reader=v2, writer=v1)


def test_checker_catches_a_field_without_default() -> None:
    # The checker must be able to fail, or the test above proves nothing.
    bad = make_v2()
    bad["fields"].insert(-1, {"name": "required_thing", "type": "string"})
    assert not compatible(reader=bad, writer=loader.current().json)


@pytest.mark.parametrize("kind", list(PAYLOADS))
def test_old_reader_decodes_new_data(kind: str) -> None:
    v2 = loader.register_writer(make_v2(), version=NEXT)
    record = codec.to_avro(sample_event(kind))
    record["capture_host"] = "capture-1"
    for state in ("before", "after"):
        if kind == "PartitionChange" and record["payload"][1][state] is not None:
            record["payload"][1][state]["directories"] = ["a", "b", "c"]
    data = codec.encode_record(record, v2)
    assert data[2:10] == v2.fingerprint != loader.current().fingerprint
    assert codec.decode(data) == sample_event(kind)  # v1 reader: new fields dropped


@pytest.mark.parametrize("kind", list(PAYLOADS))
def test_new_reader_decodes_old_data(kind: str) -> None:
    v2 = schema_from_json(make_v2(), version=NEXT)
    record, writer = codec.decode_record(codec.encode(sample_event(kind)), reader=v2)
    assert writer.version == loader.current().version
    assert record["capture_host"] is None
    if kind == "PartitionChange":
        assert record["payload"][1]["after"]["directories"] == []
    assert codec.from_avro(record) == sample_event(kind)
