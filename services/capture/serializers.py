"""Avro single-object encoding for the capture topics, as Faust codecs.

Two value types travel between the capture processes:

* ``ctrlaudit.events``: ``ControllerEvent`` — the project's contract (schemas/), encoded by
  ``schemas.codec`` (C3 01 + CRC-64-AVRO fingerprint + body). Registered as the Faust codec
  ``ctrlaudit-event``.
* ``ctrlaudit.raw``: ``RawRecord`` (below) — what a source read, with its position. A KRaft source
  ships each record batch exactly as it lies in the file (header with base offset, partition leader
  epoch = controller epoch, max timestamp = append time, control flag, CRC), so the normalizer decodes
  it with the same tested decoder as the offline import, and the CRC still guards the bytes end to end.
  Registered as ``ctrlaudit-raw``.

Faust itself has no Avro codec; keep every Avro call in this module and
in schemas/.
"""
from __future__ import annotations

import io
from functools import cache
from typing import Any

import fastavro
from fastavro.types import Schema
from faust.serializers import codecs

from schemas import codec as event_codec
from schemas import loader
from schemas.errors import CodecError
from schemas.events import ControllerEvent
from schemas.loader import schema_from_json
from schemas.raw import RawRecord

MAGIC = b"\xc3\x01"

# Appended only (an enum's symbols are written by index): ZK_* came with version 2, capture --zookeeper.
RAW_KINDS_V1 = ("KRAFT_BATCH", "SNAPSHOT_BEGIN", "SNAPSHOT_BATCH", "SNAPSHOT_END", "GAP", "EVENT")
RAW_KINDS = RAW_KINDS_V1 + ("ZK_SNAPSHOT", "ZK_TXN")

RAW_SCHEMA_JSON: dict[str, Any] = {
    "type": "record", "name": "RawRecord", "namespace": "ctrlaudit.capture",
    "doc": "One unit a capture source read, with its position. data: the record batch bytes as in the file "
           "(KRAFT_BATCH, SNAPSHOT_BATCH), a single-object-encoded unchained ControllerEvent (EVENT), or a "
           "watched ZooKeeper snapshot or transaction as JSON (ZK_SNAPSHOT, ZK_TXN; offsets are zxids).",
    "fields": [
        {"name": "cluster_id", "type": "string"},
        {"name": "node_id", "type": "int"},
        {"name": "kind", "type": {"type": "enum", "name": "RawKind", "symbols": list(RAW_KINDS)}},
        {"name": "file", "type": ["null", "string"], "default": None},
        {"name": "position", "type": "long", "doc": "byte position of the batch in file"},
        {"name": "base_offset", "type": "long", "doc": "first metadata offset (GAP: from; SNAPSHOT_*: end offset)"},
        {"name": "last_offset", "type": "long", "doc": "last metadata offset (GAP: to)"},
        {"name": "epoch", "type": "int", "doc": "batch partitionLeaderEpoch: the KRaft epoch that appended it"},
        {"name": "append_time_ms", "type": "long"},
        {"name": "control_type", "type": ["null", "string"], "default": None},
        {"name": "read_time_ms", "type": "long"},
        {"name": "data", "type": "bytes"},
        {"name": "reason", "type": ["null", "string"], "default": None},
    ],
}
RAW_SCHEMA = schema_from_json(RAW_SCHEMA_JSON, 2)
_RAW_PARSED = fastavro.parse_schema(RAW_SCHEMA_JSON)  # with the write hint: not parsed again per call
# What a raw topic written by an earlier release holds: read through Avro's schema resolution.
_RAW_V1_JSON = {**RAW_SCHEMA_JSON, "fields": [
    dict(f, type={"type": "enum", "name": "RawKind", "symbols": list(RAW_KINDS_V1)}) if f["name"] == "kind" else f
    for f in RAW_SCHEMA_JSON["fields"]]}
_WRITERS = {RAW_SCHEMA.fingerprint: None,
            schema_from_json(_RAW_V1_JSON, 1).fingerprint: fastavro.parse_schema(_RAW_V1_JSON)}


_RAW_FIELDS = tuple(f["name"] for f in RAW_SCHEMA_JSON["fields"])


def encode_raw(r: RawRecord) -> bytes:
    out = io.BytesIO()
    out.write(MAGIC)
    out.write(RAW_SCHEMA.fingerprint)
    fastavro.schemaless_writer(out, _RAW_PARSED, {k: getattr(r, k) for k in _RAW_FIELDS})
    return out.getvalue()


def decode_raw(data: bytes) -> RawRecord:
    """Raises CodecError with a one-line reason for anything that is not a RawRecord."""
    if not isinstance(data, (bytes, bytearray)):
        raise CodecError(f"raw value is {type(data).__name__}, not bytes")
    if len(data) < 10 or data[:2] != MAGIC:
        raise CodecError(f"not Avro single-object encoding (starts with {bytes(data[:2]).hex(' ') or 'nothing'})")
    fp = bytes(data[2:10])
    if fp not in _WRITERS:
        raise CodecError(f"unknown writer schema fingerprint {fp.hex()} (RawRecord is {RAW_SCHEMA.fingerprint_hex})")
    writer = _WRITERS[fp]
    buf = io.BytesIO(data)
    buf.seek(10)
    try:
        d = fastavro.schemaless_reader(buf, writer or _RAW_PARSED, _RAW_PARSED if writer else None)
    except (EOFError, ValueError, IndexError, KeyError, UnicodeDecodeError, OverflowError, TypeError) as exc:
        raise CodecError(f"truncated or corrupt RawRecord body ({type(exc).__name__}: {exc})") from None
    if buf.tell() != len(data):
        raise CodecError(f"{len(data) - buf.tell()} unexpected bytes after the RawRecord body")
    # a record schema reads as a dict of its fields; fastavro types what it reads as any schema's value
    return RawRecord(**d)  # type: ignore[arg-type]


class EventCodec(codecs.Codec):
    """Faust codec: ControllerEvent <-> Avro single-object encoding (schemas.codec)."""

    def _dumps(self, obj: Any) -> bytes:
        if isinstance(obj, (bytes, bytearray)):
            return bytes(obj)  # already encoded (forwarding)
        if not isinstance(obj, ControllerEvent):
            raise CodecError(f"ctrlaudit-event codec cannot encode {type(obj).__name__}")
        return event_codec.encode(obj)

    def _loads(self, s: bytes) -> ControllerEvent:
        return decode_event(s)


class RawCodec(codecs.Codec):
    """Faust codec: RawRecord <-> Avro single-object encoding."""

    def _dumps(self, obj: Any) -> bytes:
        if isinstance(obj, (bytes, bytearray)):
            return bytes(obj)
        return encode_raw(obj)

    def _loads(self, s: bytes) -> RawRecord:
        return decode_raw(s)


class EventRecordCodec(EventCodec):
    """Faust codec: events-topic value -> its Avro record dict (what checks.live observes); encodes as
    EventCodec does."""

    def _loads(self, s: bytes) -> dict[str, Any]:  # type: ignore[override]  # a record, not an event
        return decode_event_record(s)


EVENT_CODEC = "ctrlaudit-event"
RAW_CODEC = "ctrlaudit-raw"
codecs.register(EVENT_CODEC, EventCodec())
codecs.register(RAW_CODEC, RawCodec())
codecs.register("ctrlaudit-event-record", EventRecordCodec())


# --- the hot path: parse once, encode each event once ---------------------------------------------
# schemas.loader parses its schemas without fastavro's write hint, so every fastavro call given
# `SchemaVersion.parsed` parses the whole schema again (~75% of an event's decode). The capture worker
# decodes every event, so it keeps its own hinted copies (same schemas, same records;
# tests/services/capture/test_logic.py compares with schemas.codec). Events are encoded by the chain
# (schemas.archive.chain.Chain).

@cache
def _hinted(fingerprint: bytes) -> Schema:
    return fastavro.parse_schema(loader.by_fingerprint()[fingerprint].json)


def decode_event_record(data: bytes) -> dict[str, Any]:
    """The Avro record of an events-topic value (as schemas.codec.decode_record reads it, resolved to
    this build's schema); CodecError with schemas.codec's reason for anything else."""
    fp = bytes(data[2:10]) if len(data) >= 10 and data[:2] == MAGIC else None
    cur = loader.current()
    if fp is not None and fp in loader.by_fingerprint():
        buf = io.BytesIO(data)
        buf.seek(10)
        try:
            rec = fastavro.schemaless_reader(buf, _hinted(fp), None if fp == cur.fingerprint else _hinted(cur.fingerprint),
                                             **event_codec.READ_OPTIONS)
            if buf.tell() == len(data):
                return rec  # type: ignore[return-value]  # a record: a dict (as in decode_raw)
        except Exception:
            pass
    return event_codec.decode_record(data)[0]  # the slow path names what is wrong


def decode_event(data: bytes) -> ControllerEvent:
    try:
        return event_codec.from_avro(decode_event_record(data))
    except (KeyError, ValueError, TypeError) as exc:
        raise CodecError(f"body does not form a ControllerEvent ({exc})") from exc
