"""The capture worker's ControllerEvent writer: the schema's Avro binary encoding, spelled out by hand.

Why: fastavro's schemaless_writer needs the event as nested dicts (schemas.codec.to_avro, ~25 µs) and
then costs ~50 µs per write of this schema (a union of nine records, six int arrays per partition
state), which made the encode ~1/3 of the worker's CPU per event. This writer goes from the frozen
dataclasses to bytes directly and reuses the bytes of values that repeat in a burst (replica lists,
topic names, the cluster id). It writes exactly what fastavro writes for the current schema
(tests/schemas/archive/test_fastencode.py compares byte for byte, every payload type); it is used only
while this build's current schema has the Parsing Canonical Form it was written for (`AVAILABLE`,
loader.FAST_CANONICAL_SHA256), else the capture codec falls back to fastavro.

`parts(event, seq, prev_hash)` returns the body split around the `hash` field: the chain hash covers
head + b"\\x00" (hash = "") + tail, the events-topic value is head + string(hash) + tail.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from schemas import loader
from schemas.events import (
    BrokerChange, BrokerState, CaptureGap, ClientRequest, ConfigChange, ControllerChange, ControllerEvent,
    FeatureLevelChange, OffsetSample, PartitionChange, PartitionState, TopicChange, UnknownRecord,
)

AVAILABLE = loader.current_is_fast()  # the pin is loader.FAST_CANONICAL_SHA256, shared with the C decoder

# --- primitives ---------------------------------------------------------------------------------

_OFF = 1 << 13  # ints in [-8192, 8192) come from a table: ids, epochs, partitions, lengths


def _varlong(n: int) -> bytes:
    u = (n << 1) ^ (n >> 63)  # zigzag (Avro int and long alike, for values in range)
    out = bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


_SMALL = [_varlong(n) for n in range(-_OFF, _OFF)]
# Offsets and seqs pass 8192 early in any log: a zigzag value u below 2**28 is its low 14 bits as two
# continued bytes (_LOW14) + the varint of u >> 14 (_UNSIGNED: the varint of an unsigned u < 2**14).
_UNSIGNED = [_SMALL[((u >> 1) ^ -(u & 1)) + _OFF] for u in range(1 << 14)]  # un-zigzag, then the table
_LOW14 = [bytes(((u & 0x7F) | 0x80, (u >> 7) | 0x80)) for u in range(1 << 14)]


def long_(n: int) -> bytes:
    if -_OFF <= n < _OFF:
        return _SMALL[n + _OFF]
    u = (n << 1) ^ (n >> 63)
    if 0 <= u < 1 << 28:
        return _LOW14[u & 0x3FFF] + _UNSIGNED[u >> 14]
    return _varlong(n)


_strings: dict[str, bytes] = {}


def string(s: str) -> bytes:
    b = s.encode()
    return long_(len(b)) + b


def _cstring(s: str) -> bytes:
    """A string that repeats (cluster id, topic, topic id): encoded once."""
    b = _strings.get(s)
    if b is None:
        if len(_strings) > 200_000:
            _strings.clear()  # a bound, not an LRU: refilled from the next events
        b = _strings[s] = string(s)
    return b


_arrays: dict[tuple[int, ...], bytes] = {(): b"\x00"}


def int_array(t: tuple[int, ...]) -> bytes:
    b = _arrays.get(t)
    if b is None:
        # one block of len(t) items, then the 0 that ends the array
        b = long_(len(t)) + b"".join([long_(i) for i in t]) + b"\x00"
        if len(_arrays) > 100_000:
            _arrays.clear()
            _arrays[()] = b"\x00"
        _arrays[t] = b
    return b


def _opt_long(n: int | None) -> bytes:
    return b"\x00" if n is None else b"\x02" + long_(n)


def _opt_string(s: str | None) -> bytes:
    return b"\x00" if s is None else b"\x02" + string(s)


def _bool(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


# --- enums and union branches, read from the schema (not hand-copied) ------------------------------

def _named_types(schema: Any, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema, list):
        for s in schema:
            _named_types(s, out)
    elif isinstance(schema, dict):
        if "name" in schema and schema.get("type") in ("record", "enum"):
            out[schema["name"]] = schema
        for f in schema.get("fields", ()):
            _named_types(f["type"], out)
        if "items" in schema:
            _named_types(schema["items"], out)
    return out


_SCHEMA = json.loads(json.dumps(loader.current().json))
_TYPES = _named_types(_SCHEMA, {})


def _enum(name: str) -> dict[str, bytes]:
    return {sym: long_(i) for i, sym in enumerate(_TYPES[name]["symbols"])}


if AVAILABLE:  # another schema may not have these types: then this module is not used at all
    _SOURCE_KIND, _BROKER_CHANGE_KIND, _TOPIC_CHANGE_KIND, _RECOVERY, _CHANGE_KIND, _ELECTION, _RESOURCE = map(_enum, (
        "SourceKind", "BrokerChangeKind", "TopicChangeKind", "LeaderRecoveryState", "PartitionChangeKind",
        "ElectionType", "ConfigResourceType"))
    _BRANCH = {b["name"]: long_(i) for i, b in enumerate(
        next(f["type"] for f in _SCHEMA["fields"] if f["name"] == "payload"))}
    _PARTITION_CHANGE = _BRANCH["PartitionChange"]

# --- records ------------------------------------------------------------------------------------

_state_arrays: dict[tuple[tuple[int, ...], ...], bytes] = {}


def _state(s: PartitionState | None) -> bytes:
    """["null", PartitionState]."""
    if s is None:
        return b"\x00"
    lists = (s.replicas, s.isr, s.adding_replicas, s.removing_replicas, s.elr, s.last_known_elr)
    arrays = _state_arrays.get(lists)  # the six lists repeat across a burst (a few replica sets)
    if arrays is None:
        if len(_state_arrays) > 100_000:
            _state_arrays.clear()
        arrays = _state_arrays[lists] = b"\x02" + b"".join([int_array(t) for t in lists])
    return b"".join((arrays, long_(s.leader), long_(s.leader_epoch), long_(s.partition_epoch),
                     _RECOVERY[s.leader_recovery_state]))


# A partition's `before` is the very object that was the `after` of its previous event (the normalizer's
# image holds it in between), so each partition's last `after` is kept with its bytes. The hit test is
# identity with an object this module holds (an id cannot be reused while held; states are immutable),
# so an equal but different state is always encoded afresh. Two dicts, not a dict of (state, bytes)
# pairs: no tuple per event for the cyclic GC to track, and one entry per partition, not per state.
_last_after: dict[tuple[str, int], PartitionState] = {}
_last_after_bytes: dict[tuple[str, int], bytes] = {}


def _broker(b: BrokerState | None) -> bytes:
    if b is None:
        return b"\x00"
    eps = b"\x00" if not b.endpoints else (long_(len(b.endpoints)) + b"".join(map(string, b.endpoints)) + b"\x00")
    return b"".join((b"\x02", long_(b.broker_id), long_(b.epoch), _opt_string(b.incarnation_id),
                     _opt_string(b.rack), _bool(b.fenced), _bool(b.in_controlled_shutdown), eps))


_change_tails: dict[tuple[Any, ...], bytes] = {}


def _partition_change(p: PartitionChange) -> bytes:
    # changes, election and reason: a handful of combinations in any log, encoded once each
    kinds = (p.changes, p.election, p.reason)
    tail = _change_tails.get(kinds)
    if tail is None:
        changes = b"\x00" if not p.changes else (
            long_(len(p.changes)) + b"".join([_CHANGE_KIND[c] for c in p.changes]) + b"\x00")
        if len(_change_tails) > 10_000:
            _change_tails.clear()
        tail = _change_tails[kinds] = changes + _ELECTION[p.election] + _opt_string(p.reason)
    key = (p.topic_id, p.partition)
    before, after = p.before, p.after
    if before is not None and _last_after.get(key) is before:
        before_b = _last_after_bytes[key]
    else:
        before_b = _state(before)
    after_b = _state(after)
    if after is not None:
        if len(_last_after) > 500_000:  # a bound, not an LRU (a miss only costs an encode)
            _last_after.clear()
            _last_after_bytes.clear()
        _last_after[key] = after
        _last_after_bytes[key] = after_b
    return b"".join((_PARTITION_CHANGE, _cstring(p.topic), _cstring(p.topic_id), long_(p.partition),
                     before_b, after_b, tail))


def _payload(p: Any) -> bytes:
    t = type(p)
    if t is PartitionChange:
        return _partition_change(p)
    if t is TopicChange:
        return _BRANCH["TopicChange"] + _TOPIC_CHANGE_KIND[p.kind] + _cstring(p.topic) + _cstring(p.topic_id)
    if t is BrokerChange:
        return b"".join((_BRANCH["BrokerChange"], long_(p.broker_id), _BROKER_CHANGE_KIND[p.kind],
                         _broker(p.before), _broker(p.after)))
    if t is ControllerChange:
        return b"".join((_BRANCH["ControllerChange"], long_(p.leader_id), long_(p.epoch),
                         long_(p.previous_leader_id), long_(p.previous_epoch), int_array(tuple(p.voters)),
                         int_array(tuple(p.granting_voters))))
    if t is ConfigChange:
        return b"".join((_BRANCH["ConfigChange"], _RESOURCE[p.resource_type], string(p.resource_name),
                         string(p.name), _opt_string(p.value), _opt_string(p.previous_value), _bool(p.redacted)))
    if t is FeatureLevelChange:
        return _BRANCH["FeatureLevelChange"] + string(p.feature) + long_(p.level) + _opt_long(p.previous_level)
    if t is OffsetSample:
        reps = b"\x00" if not p.replicas else (long_(len(p.replicas)) + b"".join(
            long_(r.broker_id) + long_(r.log_end_offset) + long_(r.time_ms) for r in p.replicas) + b"\x00")
        return b"".join((_BRANCH["OffsetSample"], string(p.topic), long_(p.partition), long_(p.leader),
                         long_(p.leader_epoch), long_(p.high_watermark), long_(p.hw_time_ms), reps,
                         string(p.sample_order)))
    if t is CaptureGap:
        return _BRANCH["CaptureGap"] + long_(p.from_offset) + long_(p.to_offset) + string(p.reason)
    if t is UnknownRecord:
        data = bytes(p.data)
        return b"".join((_BRANCH["UnknownRecord"], long_(p.api_key), long_(p.version), long_(len(data)), data,
                         string(p.reason)))
    if t is ClientRequest:
        return _client_request(p)
    raise TypeError(f"not a ControllerEvent payload: {t.__name__}")


def _opt_bool(v: bool | None) -> bytes:
    return b"\x00" if v is None else b"\x02" + _bool(v)


def _strings_array(t: tuple[str, ...]) -> bytes:
    return b"\x00" if not t else long_(len(t)) + b"".join(map(string, t)) + b"\x00"


def _client_request(p: ClientRequest) -> bytes:
    return b"".join((
        _BRANCH["ClientRequest"], string(p.log), string(p.form), string(p.level), string(p.principal),
        _opt_string(p.api), _opt_long(p.api_key), _opt_long(p.api_version), _opt_long(p.correlation_id),
        _opt_string(p.client_id), _opt_string(p.host), _opt_string(p.listener), _opt_string(p.security_protocol),
        _opt_string(p.software_name), _opt_string(p.software_version), _opt_string(p.connection),
        _opt_bool(p.forwarded), _opt_string(p.outcome), _opt_string(p.operation), _strings_array(p.resources),
        _opt_string(p.rule), _opt_long(p.ref_count), int_array(tuple(p.error_codes)), _opt_string(p.body)))


def parts(e: ControllerEvent, seq: int, prev_hash: str) -> tuple[bytes, bytes]:
    """(the body's bytes before `hash`, the bytes after it) of `e` with this seq and prev_hash."""
    s = e.source
    # the fields after the source's index repeat for all events of a KRaft batch: encoded once
    key = (s.zxid, s.file, s.line, e.event_time_ms, e.capture_time_ms, e.controller_id, e.controller_epoch,
           e.metadata_version, e.bootstrap)
    middle = _middles.get(key)
    if middle is None:
        if len(_middles) > 10_000:
            _middles.clear()
        middle = _middles[key] = b"".join((
            _opt_long(s.zxid), b"\x00" if s.file is None else b"\x02" + string(s.file), _opt_long(s.line),
            long_(e.event_time_ms), long_(e.capture_time_ms), long_(e.controller_id), long_(e.controller_epoch),
            _opt_long(e.metadata_version), _bool(e.bootstrap)))
    eid, prev = e.event_id.encode(), prev_hash.encode()  # string(event_id), string(prev_hash) spelled out
    head = b"".join((
        long_(len(eid)), eid, _cstring(e.cluster_id), long_(seq), _SOURCE_KIND[s.kind], long_(s.node_id),
        long_(s.offset), long_(s.index), middle, long_(len(prev)), prev,
    ))
    return head, _payload(e.payload)


_middles: dict[tuple[Any, ...], bytes] = {}


# --- the chain rule, on the two halves ----------------------------------------------------------------

EMPTY_HASH_FIELD = b"\x00"  # Avro string "" (length 0)
HASH_FIELD_PREFIX = long_(64)  # a sha256 hex digest is always 64 ASCII bytes


def chain_body(head: bytes, tail: bytes, prev_hash: str) -> tuple[str, bytes]:
    """(hash, the Avro body with the hash in place) of an event split as `parts` splits it: the hash is
    schemas.archive.chain.record_hash's, sha256(prev_hash + the body with hash = ""), from the same bytes."""
    digest = hashlib.sha256(b"".join((prev_hash.encode(), head, EMPTY_HASH_FIELD, tail))).hexdigest()
    return digest, b"".join((head, HASH_FIELD_PREFIX, digest.encode(), tail))
