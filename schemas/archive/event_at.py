"""One event of an archive file, found by its seq without decoding the rest of the file: what an inclusion proof
carries (schemas.archive.proofs), the bytes its chain hash is over.

An archive file of a million events is 300 MB; decoding it to reach one event takes seconds, while its blocks say
how many records they hold and how many bytes they take, so the block holding the event is found by reading a few
bytes per block (about 1,200 blocks of 256 KiB for a million events) and only that block is inflated and decoded.

The body given is the one the chain hash is over: the record in its file's writer schema with hash = "", encoded
again (schemas.archive.chain.record_hash does the same). The caller checks it against the hash the verified read
gave for the seq: this read is not verified by itself.
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

import fastavro

from schemas import loader
from schemas.archive.container import MAX_BLOCK_BYTES, inflate_block, open_container
from schemas.codec import READ_OPTIONS
from schemas.errors import CodecError


@dataclass(frozen=True)
class ArchivedEvent:
    """One event as its file holds it: the record decoded in the writer's schema (its `hash` as stored), the body
    its chain hash is over, and that schema."""

    record: dict[str, Any]
    body: bytes
    schema: loader.SchemaVersion

    @property
    def chain_hash(self) -> str:
        """sha256(prev_hash || body), as the chain defines an event's hash."""
        return hashlib.sha256(self.record["prev_hash"].encode() + self.body).hexdigest()


def hashed_body(record: dict[str, Any], schema: loader.SchemaVersion) -> bytes:
    """The bytes an event's chain hash is over: its record encoded with hash = ""."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema.parsed, {**record, "hash": ""})
    return out.getvalue()


def _long(fo: BinaryIO, where: str) -> int:
    n = shift = 0
    while True:
        b = fo.read(1)
        if not b:
            raise CodecError("the file ends inside a block header", where)
        n |= (b[0] & 0x7F) << shift
        if b[0] < 0x80:
            return (n >> 1) ^ -(n & 1)
        shift += 7
        if shift > 63:
            raise CodecError("a block header is not a valid Avro long", where)


def event_at(path: Path, first_seq: int, seq: int) -> ArchivedEvent:
    """The event `seq` of the archive file `path`, whose first event is `first_seq` (its manifest says)."""
    where = str(path)
    want = seq - first_seq
    if want < 0:
        raise CodecError(f"seq {seq} is before the file's first, {first_seq}", where)
    try:
        with open_container(path) as fo:
            header = fastavro.reader(fo)  # reads the header only: it ends with the sync marker, the blocks follow
            codec = header.codec
            fo.seek(-16, io.SEEK_CUR)
            sync = fo.read(16)
            canonical = fastavro.schema.to_parsing_canonical_form(
                fastavro.parse_schema(header.writer_schema, _write_hint=False))
            fingerprint = bytes.fromhex(fastavro.schema.fingerprint(canonical, "CRC-64-AVRO"))
            schema = loader.by_fingerprint().get(fingerprint)
            if schema is None:
                raise CodecError(f"written with a schema this build does not ship (fingerprint {fingerprint.hex()})",
                                 where)
            if codec not in ("null", "deflate"):
                raise CodecError(f"blocks compressed with {codec!r}, not an archive's", where)
            skipped = 0
            while True:
                at = fo.tell()
                count, size = _long(fo, where), _long(fo, where)
                if count <= 0 or size < 0 or size > MAX_BLOCK_BYTES:
                    raise CodecError(f"a block at byte {at} declares {count} records in {size} bytes", where)
                if skipped + count > want:
                    data = fo.read(size)
                    break
                fo.seek(size, io.SEEK_CUR)
                if fo.read(16) != sync:
                    raise CodecError(f"the block at byte {at} does not end in the file's sync marker "
                                     f"(seq {seq} is past the file's end?)", where)
                skipped += count
            if codec == "deflate":
                data = inflate_block(data, at)
            buf = io.BytesIO(data)
            for _ in range(want - skipped + 1):
                record = fastavro.schemaless_reader(buf, schema.parsed, None, **READ_OPTIONS)
    except CodecError:
        raise
    except EOFError:
        raise CodecError(f"seq {seq} is past the file's end", where) from None
    except OSError as exc:
        raise CodecError(f"cannot read: {exc.strerror}", where) from None
    except (ValueError, IndexError, KeyError, UnicodeDecodeError, OverflowError) as exc:
        raise CodecError(f"cannot decode the block holding seq {seq} ({type(exc).__name__}: {exc})", where) from None
    record = cast(dict[str, Any], record)
    if record.get("seq") != seq:
        raise CodecError(f"the record found for seq {seq} holds seq {record.get('seq')}", where)
    return ArchivedEvent(record, hashed_body(record, schema), schema)
