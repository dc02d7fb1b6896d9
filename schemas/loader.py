"""Loads the released versions of the ControllerEvent schema and their fingerprints.

Versions live in `schemas/avro/controller_event.v<N>.avsc`. The newest is the reader schema of this
build; every older one stays here forever so that its data can still be read (its fingerprint is
pinned in tests). A reader finds the writer schema of any single-object-encoded event by its
CRC-64-AVRO fingerprint, without a registry server.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import fastavro

SCHEMA_DIR = Path(__file__).parent / "avro"
_NAME = re.compile(r"^controller_event\.v(\d+)\.avsc$")


@dataclass(frozen=True)
class SchemaVersion:
    version: int
    path: Path
    json: dict[str, Any]
    parsed: Any  # fastavro's parsed schema
    canonical: str  # Parsing Canonical Form
    fingerprint: bytes  # CRC-64-AVRO, 8 bytes little-endian, as single-object encoding writes it

    @property
    def fingerprint_hex(self) -> str:
        return self.fingerprint.hex()


def schema_from_json(schema_json: dict[str, Any], version: int = 0, path: Path | None = None) -> SchemaVersion:
    # The write hint marks the result as parsed: without it fastavro re-parses the whole schema on
    # every read and write (3/4 of an encode's cost). The canonical form needs the plain parse.
    parsed = fastavro.parse_schema(schema_json)
    canonical = fastavro.schema.to_parsing_canonical_form(fastavro.parse_schema(schema_json, _write_hint=False))
    fp = bytes.fromhex(fastavro.schema.fingerprint(canonical, "CRC-64-AVRO"))
    return SchemaVersion(version, path or Path("<memory>"), schema_json, parsed, canonical, fp)


@cache
def released() -> tuple[SchemaVersion, ...]:
    """Every released version, oldest first."""
    found = []
    for path in SCHEMA_DIR.iterdir():
        m = _NAME.match(path.name)
        if m:
            found.append(schema_from_json(json.loads(path.read_text()), int(m.group(1)), path))
    return tuple(sorted(found, key=lambda s: s.version))


# sha256 of the Parsing Canonical Form of each version the hand-written encoder (schemas/archive/fastencode.py, the
# newest only) and the C decoder (schemas/archive/fastflat.py, each: v2 only appends to v1's union and enum) are
# written for. A new release changes current() and turns both fast paths off until they learn it.
FAST_CANONICAL_SHA256 = {
    1: "393522a65eef32f1c35db1eb3b4e9374c488267fcf041fdb640d711766256ee4",
    2: "903ef867f4b141d3bafb887241cec01d35de7384cf6f01cc77f2ec4a51f3c46c",
}


def fast_version(canonical: str) -> int | None:
    """The version a Parsing Canonical Form is, among those the fast paths are written for (None: another)."""
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return next((v for v, pinned in FAST_CANONICAL_SHA256.items() if pinned == digest), None)


def current_is_fast() -> bool:
    """Is this build's reader schema the newest one the fast paths are written for?"""
    return fast_version(current().canonical) == max(FAST_CANONICAL_SHA256)


def current() -> SchemaVersion:
    """The reader schema of this build: the newest released version."""
    return released()[-1]


def by_version(version: int) -> SchemaVersion:
    for s in released():
        if s.version == version:
            return s
    raise KeyError(f"no ControllerEvent schema v{version} in {SCHEMA_DIR}")


_foreign: dict[bytes, SchemaVersion] = {}


def register_writer(schema_json: dict[str, Any], version: int = 0) -> SchemaVersion:
    """Make a writer schema that this build did not ship (a newer release's) known to readers,
    so its single-object-encoded events resolve to our reader schema. Container files need no
    registration: they carry their writer schema."""
    schema = schema_from_json(schema_json, version)
    _foreign.setdefault(schema.fingerprint, schema)
    return schema


def by_fingerprint() -> dict[bytes, SchemaVersion]:
    return {**_foreign, **{s.fingerprint: s for s in released()}}
