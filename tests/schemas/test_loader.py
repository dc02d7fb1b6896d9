"""Released schema versions and their pinned fingerprints."""
from __future__ import annotations

import json

import avro.schema

from schemas import loader

# Fingerprints of released versions. Never change one: data in archives and on topics names it.
PINNED = {1: "3474b147fb174267", 2: "172c9af23a6cc8d6"}


def test_released_fingerprints_are_pinned() -> None:
    assert {s.version: s.fingerprint_hex for s in loader.released()} == PINNED


def test_fingerprint_agrees_with_the_avro_reference_implementation() -> None:
    for s in loader.released():
        reference = avro.schema.parse(json.dumps(s.json))
        assert reference.fingerprint("CRC-64-AVRO") == s.fingerprint
        assert json.loads(reference.canonical_form) == json.loads(s.canonical)


def test_current_is_the_newest_release() -> None:
    assert loader.current().version == max(PINNED)


def test_every_field_is_documented_or_self_explaining() -> None:
    # The contract is read by people: the envelope fields each carry a doc string.
    fields = loader.current().json["fields"]
    undocumented = [f["name"] for f in fields if not f.get("doc") and f["name"] not in ("source", "payload")]
    assert undocumented == []
