"""Native path for data batches: services/kraft/_native/kraftdecode.c (optional, built by setup.py).

``decode_data_batch`` gives exactly what records.decode_data_batch gives (same MetadataRecord
objects, same dicts, same offsets and timestamps), reading the record framing, the value frame and
the message bodies in C. The C code knows no message by name: it gets one table per message
version, derived here from messages.CATALOGUE (the field tables compiled from specs.json). Whenever
a batch holds anything the C code does not read (unknown apiKey, version or tag, a null value,
a bound or varint that is off, invalid UTF-8), it returns None and the batch goes the Python way,
which stays the reference and raises, or keeps UnknownRecords, with its usual messages.

``CTRLAUDIT_NATIVE=0`` in the environment turns the native path off (as for schemas.archive.fastflat).
"""

from __future__ import annotations

import os
from typing import cast

from . import records
from .batch import Batch, records_region
from .fields import FieldDefault
from .messages import CATALOGUE, Field
from .records import MetadataRecord, Record
from .wire import Buf, _uuid_cache, uuid_str

# The C table of a message (or struct): per field its key, kind, element kind, nullable, tag (-1: none),
# default, whether a missing one is a fresh [], and the struct's own table.
_FieldTable = tuple[str, int, int, int, int, FieldDefault, int, "_MessageTable | None"]
_MessageTable = tuple[_FieldTable, ...]

try:
    from . import _kraftdecode as _native  # type: ignore[attr-defined]  # C extension, no stubs
except ImportError:  # built without a compiler: the Python path only
    _native = None


def _kinds() -> dict[str, int]:
    n = _native
    return {"bool": n.K_BOOL, "int8": n.K_INT8, "int16": n.K_INT16, "uint16": n.K_UINT16,
            "int32": n.K_INT32, "uint32": n.K_UINT32, "int64": n.K_INT64, "float64": n.K_FLOAT64,
            "uuid": n.K_UUID, "string": n.K_STRING, "bytes": n.K_BYTES}


def _spec(fields: tuple[Field, ...], kinds: dict[str, int]) -> _MessageTable:
    """The C table of a message (or struct): one tuple per field, in declaration order (the
    order of the dict the Python decoder builds)."""
    out = []
    for f in fields:
        sub = _spec(f.children, kinds) if f.children is not None else None
        if f.is_array:
            kind, elem = _native.K_ARRAY, (_native.K_STRUCT if sub is not None else kinds[cast(str, f.elem)])
        else:
            kind, elem = (_native.K_STRUCT if sub is not None else kinds[f.type]), 0
        # a tagged field missing from the wire: its default, a fresh [] for non-null arrays
        fresh_list = f.is_array and f.default is not None
        out.append((f.key, kind, elem, int(f.nullable), -1 if f.tag is None else f.tag,
                    None if fresh_list else f.default, int(fresh_list), sub))
    return tuple(out)


def _setup() -> bool:
    if _native is None:
        return False
    # the C code fills a MetadataRecord's __slots__ through their member descriptors
    slots = (Record.__dict__["offset"], Record.__dict__["timestamp"], Record.__dict__["batch"],
             MetadataRecord.__dict__["mv"], MetadataRecord.__dict__["data"])
    _native.init(MetadataRecord, slots, _uuid_cache, uuid_str)
    kinds = _kinds()
    for mv in CATALOGUE.values():
        if mv.api_key is not None:
            _native.register(mv.api_key, mv.version, mv, _spec(mv.fields, kinds))
    return True


_READY = _setup()


def built() -> bool:
    """Whether the extension is built (whatever the environment says)."""
    return _READY


def available() -> bool:
    """Whether LogReader uses the native path by default."""
    if os.environ.get("CTRLAUDIT_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return _READY


def decode_data_batch(buf: Buf, b: Batch, *, on_error: str = "raise") -> list[Record]:
    """records.decode_data_batch, natively where the C code reads the whole batch."""
    rbuf, pos, end = records_region(buf, b)
    recs: list[Record] | None = _native.decode_records(rbuf, pos, end, b.count, b.base_offset, b.base_timestamp, b)
    if recs is None:  # something only the reference path reads, or reports: let it
        return records.decode_data_batch(buf, b, on_error=on_error)
    return recs
