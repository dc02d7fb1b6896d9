"""A KRaft message's bytes from its decoded dict (flexible versions): the inverse of the compiled
decoders of messages.py. Used by the tests and by the synthetic logs of bench/, never on the hot path."""
from __future__ import annotations

import struct
from typing import Any, cast

from .fields import _FIXED, UNKNOWN_TAGS, Field, Message
from .wire import uuid_bytes, write_uvarint


def _enc_scalar(t: str, v: Any, nullable: bool, out: bytearray) -> None:
    if t in _FIXED:
        if t == "uuid":
            out += uuid_bytes(v)
        else:
            out += struct.pack(">" + _FIXED[t][0], v)
    elif t in ("string", "bytes"):
        if v is None:
            out += b"\x00"
        else:
            b = v.encode() if t == "string" else bytes(v)
            out += write_uvarint(len(b) + 1) + b
    else:
        raise NotImplementedError(t)


def _enc_field(f: Field, v: Any, out: bytearray) -> None:
    if f.is_array:
        if v is None:
            out += b"\x00"
            return
        out += write_uvarint(len(v) + 1)
        for x in v:
            if f.children is not None:
                out += encode(f.children, x)
            else:
                _enc_scalar(cast(str, f.elem), x, False, out)  # an array: elem is set
    elif f.children is not None:
        if f.nullable:
            if v is None:
                out += b"\xff"
                return
            out += b"\x01"
        out += encode(f.children, v)
    else:
        _enc_scalar(f.type, v, f.nullable, out)


def encode(fields: tuple[Field, ...], data: Message) -> bytes:
    """Flexible-versions encoding of ``data`` (the inverse of a compiled decoder)."""
    out = bytearray()
    tags: list[tuple[int, bytes]] = []
    for f in fields:
        v = data.get(f.key, f.default)
        if f.tag is None:
            _enc_field(f, v, out)
        elif v != f.default:
            tagged = bytearray()
            _enc_field(f, v, tagged)
            tags.append((f.tag, bytes(tagged)))
    tags += [(t, bytes(b)) for t, b in data.get(UNKNOWN_TAGS, ())]
    tags.sort(key=lambda tb: tb[0])
    out += write_uvarint(len(tags))
    for t, b in tags:
        out += write_uvarint(t) + write_uvarint(len(b)) + b
    return bytes(out)
