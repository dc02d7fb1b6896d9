"""Encode a ControllerEvent's Avro body once, in two halves around the `hash` field.

An Avro record's binary encoding is the concatenation of its fields' encodings, so the body of an
event is `head + string(hash) + payload`, where `head` holds every field before `hash` and
`payload` every field after it. The chain hash is sha256(prev_hash + head + string("") + payload)
(= `schemas.archive.chain.record_hash`), and the stored body is head + string(hash) + payload: one encoding
serves both.

Two encoders produce the halves:
- `FastV1Encoder`: schemas.archive.fastencode, schema v1 by hand (the capture worker's encoder too);
- `FastavroSplitEncoder`, generic: fastavro on two sub-record schemas cut from the current schema.
`make_encoder()` picks the fast one only when the current schema is exactly v1's (by fingerprint).
"""
from __future__ import annotations

import io
from typing import Any

import fastavro

from schemas import loader
from schemas.archive import fastencode
from schemas.codec import to_avro
from schemas.events import ControllerEvent


class FastV1Encoder:
    """Schema v1 by hand: schemas.archive.fastencode, the one hand-written v1 encoder (the capture worker's too)."""

    def split(self, e: ControllerEvent, seq: int, prev_hash: str) -> tuple[bytes, bytes]:
        return fastencode.parts(e, seq, prev_hash)


class FastavroSplitEncoder:
    """Generic: fastavro writes the fields before and after `hash` as two sub-records."""

    def __init__(self) -> None:
        schema = loader.current().json
        names = [f["name"] for f in schema["fields"]]
        cut = names.index("hash")
        ns = schema.get("namespace", "")

        def sub(name: str, fields: list[dict[str, Any]]) -> Any:
            return fastavro.parse_schema({"type": "record", "name": name, "namespace": ns, "fields": fields},
                                         _write_hint=False)
        # The tail schema must know the named types defined in the head (none today: the head's
        # named types are SourcePosition/SourceKind; the payload defines its own).
        self._head = sub("ControllerEventHead", schema["fields"][:cut])
        self._tail = sub("ControllerEventTail", schema["fields"][cut + 1:])
        self._head_names = names[:cut]
        self._tail_names = names[cut + 1:]

    def split(self, e: ControllerEvent, seq: int, prev_hash: str) -> tuple[bytes, bytes]:
        rec = to_avro(e)
        rec["seq"] = seq
        rec["prev_hash"] = prev_hash
        h, t = io.BytesIO(), io.BytesIO()
        fastavro.schemaless_writer(h, self._head, {k: rec[k] for k in self._head_names})
        fastavro.schemaless_writer(t, self._tail, {k: rec[k] for k in self._tail_names})
        return h.getvalue(), t.getvalue()


def is_v1_schema() -> bool:
    return fastencode.AVAILABLE


def make_encoder(fast: bool | None = None) -> FastV1Encoder | FastavroSplitEncoder:
    if fast is None:
        fast = is_v1_schema()
    return FastV1Encoder() if fast else FastavroSplitEncoder()
