"""Avro object container files (the archive format): write events, read them back.

Reading resolves each file's writer schema (stored in its header) to this build's reader schema,
so archives written by older or newer releases load alike. A corrupt or truncated file yields
every whole record before the damage, then one CodecError naming the file and the record index.
"""
from __future__ import annotations

import io
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

import fastavro
import fastavro.read
from fastavro.read import SchemaResolutionError

from schemas import loader
from schemas.codec import READ_OPTIONS, from_avro, to_avro
from schemas.errors import CodecError
from schemas.events import ControllerEvent

RECORD_NAME = "ctrlaudit.ControllerEvent"
# What one block may inflate to. The writer ends a block after the event that passes 256 KiB
# (schemas/archive/writer.py), and an event is at most a few MiB (the largest, an UnknownRecord of an
# older release, held a KRaft record, at most 8 MiB); so a block Kafka's history made never comes near
# 64 MiB, while a block that inflates past it is a bomb (deflate reaches 1032:1). One place for the
# limit: the native decoder (schemas/_native/flatdecode.c) is handed this value.
MAX_BLOCK_BYTES = 64 << 20
CODECS = ("null", "deflate")  # the codecs schemas/archive/writer.py writes: the only ones read
_CHUNK = 1 << 20


class BlockRefused(ValueError):
    """A block this read will not inflate: a codec the archive writer never writes, or past the limit."""


def _avro_bytes(src: Any) -> bytes:
    """An Avro `bytes` value: fastavro's compiled reader hands a block reader its file object, the
    pure-Python one its decoder."""
    if hasattr(src, "read_bytes"):
        return cast(bytes, src.read_bytes())
    n = shift = 0
    while True:
        b = src.read(1)
        if not b:
            raise EOFError("the file ends inside a block's size")
        n |= (b[0] & 0x7F) << shift
        if b[0] < 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError("a block's size is not a valid Avro long")
    size = (n >> 1) ^ -(n & 1)
    if size < 0:
        raise ValueError(f"negative block size {size}")
    data = src.read(size)
    if len(data) != size:
        raise EOFError(f"a block of {size} bytes, but the file ends after {len(data)}")
    return cast(bytes, data)


def inflate_block(data: bytes, at: int | None = None, limit: int = MAX_BLOCK_BYTES) -> bytes:
    """A deflate block's bytes (`at`: where they start in the file), or BlockRefused once they pass
    `limit` (read incrementally, so a bomb costs at most the limit)."""
    d = zlib.decompressobj(-15)
    out = bytearray()
    rest = data
    while True:
        chunk = d.decompress(rest, min(_CHUNK, limit + 1 - len(out)))
        out += chunk
        if len(out) > limit:
            where = "a deflate block" if at is None else f"the deflate block at byte {at}"
            raise BlockRefused(f"{where} inflates to more than {limit} bytes (the most an archive block may "
                             "hold: a decompression bomb, or not an archive of ctrlaudit's)")
        rest = d.unconsumed_tail
        if d.eof or (not chunk and not rest):
            return bytes(out)


def _bounded_deflate_block(src: Any) -> io.BytesIO:
    data = _avro_bytes(src)
    try:  # where the block's bytes start, as the native decoder names it
        at: int | None = getattr(src, "fo", src).tell() - len(data)
    except (AttributeError, OSError):
        at = None
    return io.BytesIO(inflate_block(data, at))


def _refused_codec(name: str) -> Callable[[Any], io.BytesIO]:
    def refuse(src: Any) -> io.BytesIO:
        raise BlockRefused(f"blocks compressed with {name!r}: an archive holds only {' or '.join(CODECS)} "
                           "blocks (its writer writes no other), so these are not read")
    return refuse


def _bound_fastavro() -> None:
    """Every container file read in this process (fastavro's module-wide block readers, its extension
    point for codecs) inflates deflate blocks within MAX_BLOCK_BYTES, and refuses the codecs the archive
    writer never writes (bzip2, xz, snappy, zstandard, lz4 inflate without a limit)."""
    for name in list(fastavro.read.BLOCK_READERS):
        if name not in CODECS:
            fastavro.read.BLOCK_READERS[name] = _refused_codec(name)
    fastavro.read.BLOCK_READERS["deflate"] = _bounded_deflate_block


_bound_fastavro()


def write_events(
    target: str | Path | BinaryIO,
    events: Iterable[ControllerEvent],
    codec: str = "null",
    metadata: dict[str, str] | None = None,
    sync_interval: int = 64 * 1024,
) -> int:
    """Write `events` as one container file; returns the number written."""
    count = 0

    def records() -> Iterator[dict[str, Any]]:
        nonlocal count
        for e in events:
            count += 1
            yield to_avro(e)

    if isinstance(target, (str, Path)):
        with open(target, "wb") as fo:
            fastavro.writer(fo, loader.current().parsed, records(), codec=codec, metadata=metadata,
                            sync_interval=sync_interval)
    else:
        fastavro.writer(target, loader.current().parsed, records(), codec=codec, metadata=metadata,
                        sync_interval=sync_interval)
    return count


class BoundedFile(io.FileIO):
    """A file that refuses to read past its end: fastavro allocates the size a block (or a string of
    the header) declares before reading it, so a damaged or hostile size of 2**60 would be a
    MemoryError; here it is an EOFError naming the size, the offset and what is left."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, "rb")
        self._size = os.fstat(self.fileno()).st_size

    def read(self, size: int | None = -1) -> bytes:
        if size is not None and size > 0:
            left = self._size - self.tell()
            if size > left:
                raise EOFError(f"{size} bytes declared at offset {self.tell()}, but only {left} are left in the file")
        return super().read(size)


def open_container(path: str | Path) -> BoundedFile:
    """A container file opened for fastavro (every reader of archive files opens them here)."""
    return BoundedFile(path)


def iter_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """Avro records of a container file, resolved to the current schema (fast path, no model)."""
    path = Path(path)
    try:
        fo = open_container(path)
    except OSError as exc:
        raise CodecError(f"cannot open: {exc.strerror}", str(path)) from exc
    with fo:
        try:
            reader = fastavro.reader(fo, **READ_OPTIONS)
            name = reader.writer_schema.get("name") if isinstance(reader.writer_schema, dict) else None
            if name not in (RECORD_NAME, "ControllerEvent"):
                raise CodecError(f"Avro file of record {name!r}, not {RECORD_NAME}", str(path))
            if not _is_current(cast(dict[str, Any], reader.writer_schema)):
                # Resolution is ~3x slower in fastavro: only pay for it when the writer differs.
                fo.seek(0)
                reader = fastavro.reader(fo, reader_schema=loader.current().parsed, **READ_OPTIONS)
        except BlockRefused as exc:
            raise CodecError(str(exc), str(path)) from exc
        except (ValueError, EOFError, SchemaResolutionError) as exc:
            raise CodecError(f"not an Avro object container file ({exc})", str(path)) from exc
        index = 0
        try:
            for record in reader:
                yield cast(dict[str, Any], record)
                index += 1
        except BlockRefused as exc:
            raise CodecError(f"{exc} (record {index}; the {index} records before it were read)", str(path)) from exc
        except (ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError, OverflowError,
                zlib.error, SchemaResolutionError) as exc:
            said = f"{type(exc).__name__}: {exc}" if str(exc) else "the data ends inside it"
            raise CodecError(
                f"corrupt or truncated data at record {index} (the {index} records before it were read): {said}",
                str(path),
            ) from exc


def _is_current(writer_schema: dict[str, Any]) -> bool:
    canonical = fastavro.schema.to_parsing_canonical_form(fastavro.parse_schema(writer_schema, _write_hint=False))
    return canonical == loader.current().canonical


def read_events(path: str | Path) -> Iterator[ControllerEvent]:
    for index, record in enumerate(iter_records(path)):
        try:
            yield from_avro(record)
        except (KeyError, ValueError, TypeError) as exc:
            raise CodecError(f"record {index} does not form a ControllerEvent ({exc})", str(path)) from exc


def writer_schema_of(path: str | Path) -> dict[str, Any]:
    """The writer schema stored in a container file's header."""
    with open_container(path) as fo:
        try:
            return cast(dict[str, Any], fastavro.reader(fo).writer_schema)
        except (ValueError, EOFError) as exc:
            raise CodecError(f"not an Avro object container file ({exc})", str(path)) from exc
