"""All Avro handling of ControllerEvent: model <-> Avro record, and Avro single-object encoding.

Single-object encoding (the Avro spec): C3 01, the writer schema's CRC-64-AVRO fingerprint
(8 bytes, little-endian), then the binary body. The fingerprint lets any reader find the writer
schema among schemas/avro/ without a registry server; the body is then resolved to this build's
reader schema, so old data stays readable and newer data too (within Avro's resolution rules).
"""
from __future__ import annotations

import io
from typing import Any, cast

import fastavro
from fastavro.read import SchemaResolutionError

from schemas import loader
from schemas.errors import CodecError
from schemas.events import (
    CLIENT_REQUEST_FIELDS, BrokerChange, BrokerChangeKind, BrokerState, CaptureGap, ClientRequest, ConfigChange,
    ConfigResourceType, ControllerChange, ControllerEvent, ElectionType, FeatureLevelChange, LeaderRecoveryState, OffsetSample, PartitionChange,
    PartitionChangeKind, PartitionState, ReplicaOffset, SourceKind, SourcePosition, TopicChange, TopicChangeKind,
    UnknownRecord,
)

MAGIC = b"\xc3\x01"
HEADER_LEN = 10
NAMESPACE = "ctrlaudit."


# --- model -> Avro record ---------------------------------------------------------------------

def _state(s: PartitionState | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "replicas": list(s.replicas), "isr": list(s.isr),
        "adding_replicas": list(s.adding_replicas), "removing_replicas": list(s.removing_replicas),
        "elr": list(s.elr), "last_known_elr": list(s.last_known_elr),
        "leader": s.leader, "leader_epoch": s.leader_epoch, "partition_epoch": s.partition_epoch,
        "leader_recovery_state": s.leader_recovery_state.value,
    }


def _broker(b: BrokerState | None) -> dict[str, Any] | None:
    if b is None:
        return None
    return {
        "broker_id": b.broker_id, "epoch": b.epoch, "incarnation_id": b.incarnation_id, "rack": b.rack,
        "fenced": b.fenced, "in_controlled_shutdown": b.in_controlled_shutdown, "endpoints": list(b.endpoints),
    }


def _payload(p: Any) -> tuple[str, dict[str, Any]]:
    match p:
        case PartitionChange():
            body = {
                "topic": p.topic, "topic_id": p.topic_id, "partition": p.partition,
                "before": _state(p.before), "after": _state(p.after),
                "changes": [c.value for c in p.changes], "election": p.election.value, "reason": p.reason,
            }
        case ControllerChange():
            body = {
                "leader_id": p.leader_id, "epoch": p.epoch, "previous_leader_id": p.previous_leader_id,
                "previous_epoch": p.previous_epoch, "voters": list(p.voters), "granting_voters": list(p.granting_voters),
            }
        case BrokerChange():
            body = {"broker_id": p.broker_id, "kind": p.kind.value, "before": _broker(p.before), "after": _broker(p.after)}
        case TopicChange():
            body = {"kind": p.kind.value, "topic": p.topic, "topic_id": p.topic_id}
        case ConfigChange():
            body = {
                "resource_type": p.resource_type.value, "resource_name": p.resource_name, "name": p.name,
                "value": p.value, "previous_value": p.previous_value, "redacted": p.redacted,
            }
        case FeatureLevelChange():
            body = {"feature": p.feature, "level": p.level, "previous_level": p.previous_level}
        case OffsetSample():
            body = {
                "topic": p.topic, "partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch,
                "high_watermark": p.high_watermark, "hw_time_ms": p.hw_time_ms,
                "replicas": [
                    {"broker_id": r.broker_id, "log_end_offset": r.log_end_offset, "time_ms": r.time_ms}
                    for r in p.replicas
                ],
                "sample_order": p.sample_order,
            }
        case CaptureGap():
            body = {"from_offset": p.from_offset, "to_offset": p.to_offset, "reason": p.reason}
        case UnknownRecord():
            body = {"api_key": p.api_key, "version": p.version, "data": p.data, "reason": p.reason}
        case ClientRequest():
            body = {name: getattr(p, name) for name in CLIENT_REQUEST_FIELDS}
            body["resources"], body["error_codes"] = list(p.resources), list(p.error_codes)
        case _:
            raise TypeError(f"not a ControllerEvent payload: {type(p).__name__}")
    return NAMESPACE + type(p).__name__, body


def to_avro(e: ControllerEvent) -> dict[str, Any]:
    """The Avro record of an event; the payload in fastavro's (name, record) union notation."""
    s = e.source
    return {
        "event_id": e.event_id, "cluster_id": e.cluster_id, "seq": e.seq,
        "source": {
            "kind": s.kind.value, "node_id": s.node_id, "offset": s.offset, "index": s.index,
            "zxid": s.zxid, "file": s.file, "line": s.line,
        },
        "event_time_ms": e.event_time_ms, "capture_time_ms": e.capture_time_ms,
        "controller_id": e.controller_id, "controller_epoch": e.controller_epoch,
        "metadata_version": e.metadata_version, "bootstrap": e.bootstrap,
        "prev_hash": e.prev_hash, "hash": e.hash,
        "payload": _payload(e.payload),
    }


# --- Avro record -> model ---------------------------------------------------------------------

def _state_of(d: dict[str, Any] | None) -> PartitionState | None:
    if d is None:
        return None
    return PartitionState(
        replicas=tuple(d["replicas"]), isr=tuple(d["isr"]), leader=d["leader"],
        leader_epoch=d["leader_epoch"], partition_epoch=d["partition_epoch"],
        adding_replicas=tuple(d["adding_replicas"]), removing_replicas=tuple(d["removing_replicas"]),
        elr=tuple(d["elr"]), last_known_elr=tuple(d["last_known_elr"]),
        leader_recovery_state=LeaderRecoveryState(d["leader_recovery_state"]),
    )


def _broker_of(d: dict[str, Any] | None) -> BrokerState | None:
    if d is None:
        return None
    return BrokerState(
        broker_id=d["broker_id"], epoch=d["epoch"], fenced=d["fenced"],
        in_controlled_shutdown=d["in_controlled_shutdown"], incarnation_id=d["incarnation_id"],
        rack=d["rack"], endpoints=tuple(d["endpoints"]),
    )


def _payload_of(name: str, d: dict[str, Any]) -> Any:
    match name.removeprefix(NAMESPACE):
        case "PartitionChange":
            return PartitionChange(
                topic=d["topic"], topic_id=d["topic_id"], partition=d["partition"],
                before=_state_of(d["before"]), after=_state_of(d["after"]),
                changes=tuple(PartitionChangeKind(c) for c in d["changes"]),
                election=ElectionType(d["election"]), reason=d["reason"],
            )
        case "ControllerChange":
            return ControllerChange(
                leader_id=d["leader_id"], epoch=d["epoch"], previous_leader_id=d["previous_leader_id"],
                previous_epoch=d["previous_epoch"], voters=tuple(d["voters"]),
                granting_voters=tuple(d["granting_voters"]),
            )
        case "BrokerChange":
            return BrokerChange(
                broker_id=d["broker_id"], kind=BrokerChangeKind(d["kind"]),
                before=_broker_of(d["before"]), after=_broker_of(d["after"]),
            )
        case "TopicChange":
            return TopicChange(kind=TopicChangeKind(d["kind"]), topic=d["topic"], topic_id=d["topic_id"])
        case "ConfigChange":
            return ConfigChange(
                resource_type=ConfigResourceType(d["resource_type"]), resource_name=d["resource_name"],
                name=d["name"], value=d["value"], previous_value=d["previous_value"], redacted=d["redacted"],
            )
        case "FeatureLevelChange":
            return FeatureLevelChange(feature=d["feature"], level=d["level"], previous_level=d["previous_level"])
        case "OffsetSample":
            return OffsetSample(
                topic=d["topic"], partition=d["partition"], leader=d["leader"], leader_epoch=d["leader_epoch"],
                high_watermark=d["high_watermark"], hw_time_ms=d["hw_time_ms"],
                replicas=tuple(ReplicaOffset(r["broker_id"], r["log_end_offset"], r["time_ms"]) for r in d["replicas"]),
                sample_order=d["sample_order"],
            )
        case "CaptureGap":
            return CaptureGap(from_offset=d["from_offset"], to_offset=d["to_offset"], reason=d["reason"])
        case "UnknownRecord":
            return UnknownRecord(api_key=d["api_key"], version=d["version"], data=d["data"], reason=d["reason"])
        case "ClientRequest":
            return ClientRequest(**{**{name: d[name] for name in CLIENT_REQUEST_FIELDS},
                                    "resources": tuple(d["resources"]), "error_codes": tuple(d["error_codes"])})
    raise CodecError(f"unknown payload type {name!r}")


def from_avro(d: dict[str, Any]) -> ControllerEvent:
    """The event of an Avro record as fastavro reads it (with return_record_name=True)."""
    s = d["source"]
    name, body = d["payload"]
    return ControllerEvent(
        event_id=d["event_id"], cluster_id=d["cluster_id"], seq=d["seq"],
        source=SourcePosition(
            kind=SourceKind(s["kind"]), offset=s["offset"], index=s["index"], node_id=s["node_id"],
            zxid=s["zxid"], file=s["file"], line=s["line"],
        ),
        event_time_ms=d["event_time_ms"], capture_time_ms=d["capture_time_ms"],
        controller_id=d["controller_id"], controller_epoch=d["controller_epoch"],
        payload=_payload_of(name, body), metadata_version=d["metadata_version"],
        bootstrap=d["bootstrap"], prev_hash=d["prev_hash"], hash=d["hash"],
    )


# Reader options: unions of several records come back as (name, record); ["null", X] as X.
READ_OPTIONS: dict[str, Any] = {"return_record_name": True, "return_record_name_override": True}


# --- single-object encoding -------------------------------------------------------------------

def encode(event: ControllerEvent, schema: loader.SchemaVersion | None = None) -> bytes:
    """Single-object encoding of `event` (default schema: this build's current one)."""
    return encode_record(to_avro(event), schema or loader.current())


def encode_record(record: dict[str, Any], schema: loader.SchemaVersion) -> bytes:
    """Single-object encoding of an Avro record dict with `schema` as the writer schema."""
    out = io.BytesIO()
    out.write(MAGIC)
    out.write(schema.fingerprint)
    fastavro.schemaless_writer(out, schema.parsed, record)
    return out.getvalue()


def decode_record(
    data: bytes, where: str = "", reader: loader.SchemaVersion | None = None
) -> tuple[dict[str, Any], loader.SchemaVersion]:
    """The Avro record resolved to `reader` (default: this build's current schema) and the writer
    schema of `data`."""
    if len(data) < HEADER_LEN:
        raise CodecError(f"{len(data)} bytes is shorter than the 10-byte single-object header", where)
    if data[:2] != MAGIC:
        raise CodecError(
            f"not Avro single-object encoding: starts with {data[:2].hex(' ')}, expected c3 01", where
        )
    fp = bytes(data[2:HEADER_LEN])
    writer = loader.by_fingerprint().get(fp)
    if writer is None:
        known = ", ".join(f"v{s.version}={s.fingerprint_hex}" for s in loader.released())
        raise CodecError(f"unknown writer schema fingerprint {fp.hex()} (known: {known})", where)
    reader = reader or loader.current()
    buf = io.BytesIO(data)
    buf.seek(HEADER_LEN)
    try:
        record = fastavro.schemaless_reader(
            buf, writer.parsed, reader.parsed if reader.fingerprint != writer.fingerprint else None,
            **READ_OPTIONS,
        )
    except SchemaResolutionError as exc:
        raise CodecError(f"writer schema v{writer.version} cannot be read as v{reader.version}: {exc}", where) from exc
    except (EOFError, ValueError, IndexError, KeyError, UnicodeDecodeError, OverflowError) as exc:
        raise CodecError(f"truncated or corrupt body ({type(exc).__name__}: {exc})", where) from exc
    left = len(data) - buf.tell()
    if left:
        raise CodecError(f"{left} unexpected bytes after the event body", where)
    return cast(dict[str, Any], record), writer


def decode(data: bytes, where: str = "", reader: loader.SchemaVersion | None = None) -> ControllerEvent:
    record, _ = decode_record(data, where, reader)
    try:
        return from_avro(record)
    except (KeyError, ValueError, TypeError) as exc:
        raise CodecError(f"body does not form a ControllerEvent ({exc})", where) from exc
