"""Builders for synthetic metadata logs (values, records, batches, files)."""

from __future__ import annotations

import random

from services.kraft.batch import build_batch
from services.kraft.messages import CATALOGUE, Field, MessageVersion
from services.kraft.wire import uuid_str, write_uvarint

TOPIC_ID = uuid_str(bytes(range(16)))


def metadata_value(name: str, version: int, data: dict) -> bytes:
    mv = CATALOGUE[(name, version)]
    return write_uvarint(1) + write_uvarint(mv.api_key) + write_uvarint(version) + mv.encode(data)


def control_value(name: str, data: dict) -> bytes:
    return CATALOGUE[(name, 0)].encode(data)


def control_key(ctype: int) -> bytes:
    return (0).to_bytes(2, "big") + ctype.to_bytes(2, "big")


def pcr(partition: int = 0, **tagged) -> bytes:
    return metadata_value("PartitionChangeRecord", 0,
                          {"partitionId": partition, "topicId": TOPIC_ID, **tagged})


def data_batch(values: list[bytes], **kw) -> bytes:
    return build_batch([(None, v) for v in values], **kw)


def random_value(f: Field, rnd: random.Random, depth: int = 0):
    """A random value of field ``f``'s type (for encode/decode round trips)."""
    if f.is_array:
        if f.nullable and rnd.random() < 0.2:
            return None
        n = rnd.randint(0, 4)
        if f.children is not None:
            return [random_data(f.children, rnd) for _ in range(n)]
        return [_scalar(f.elem, rnd) for _ in range(n)]
    if f.children is not None:
        return random_data(f.children, rnd)
    if f.nullable and f.type in ("string", "bytes") and rnd.random() < 0.3:
        return None
    return _scalar(f.type, rnd)


def _scalar(t: str, rnd: random.Random):
    bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
    if t in bits:
        b = bits[t]
        return rnd.randint(-(1 << (b - 1)), (1 << (b - 1)) - 1)
    if t == "uint16":
        return rnd.randint(0, 65535)
    if t == "bool":
        return rnd.random() < 0.5
    if t == "float64":
        return rnd.choice([0.0, 1.5, -2.25, 1e10])
    if t == "uuid":
        return uuid_str(rnd.randbytes(16))
    if t == "string":
        return rnd.choice(["", "orders", "π-topic", "x" * 200])
    if t == "bytes":
        return rnd.randbytes(rnd.randint(0, 20))
    raise AssertionError(t)


def random_data(fields, rnd: random.Random) -> dict:
    return {f.key: random_value(f, rnd) for f in fields}


def all_versions() -> list[MessageVersion]:
    return list(CATALOGUE.values())


def record_view(r) -> tuple:
    """Everything a decoded record holds, as a comparable tuple (class, position, payload)."""
    b = r.batch
    head = (type(r).__name__, r.offset, r.timestamp, b.file, b.position, b.base_offset,
            b.leader_epoch, r.type)
    if type(r).__name__ == "UnknownRecord":
        return head + (r.api_key, r.version, r.value, r.error)
    return head + (r.mv, r.data)
