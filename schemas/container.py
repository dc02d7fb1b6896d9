"""Avro object container files (the archive format): write events, read them back.

Reading resolves each file's writer schema (stored in its header) to this build's reader schema,
so archives written by older or newer releases load alike. A corrupt or truncated file yields
every whole record before the damage, then one CodecError naming the file and the record index.
"""
from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

import fastavro
from fastavro.read import SchemaResolutionError

from schemas import loader
from schemas.codec import READ_OPTIONS, from_avro, to_avro
from schemas.errors import CodecError
from schemas.events import ControllerEvent

RECORD_NAME = "ctrlaudit.ControllerEvent"


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


def iter_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """Avro records of a container file, resolved to the current schema (fast path, no model)."""
    path = Path(path)
    try:
        fo = open(path, "rb")
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
        except (ValueError, EOFError, SchemaResolutionError) as exc:
            raise CodecError(f"not an Avro object container file ({exc})", str(path)) from exc
        index = 0
        try:
            for record in reader:
                yield cast(dict[str, Any], record)
                index += 1
        except (ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError, OverflowError,
                zlib.error, SchemaResolutionError) as exc:
            raise CodecError(
                f"corrupt or truncated data at record {index} (the {index} records before it were read): "
                f"{type(exc).__name__}: {exc}", str(path),
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
    with open(path, "rb") as fo:
        try:
            return cast(dict[str, Any], fastavro.reader(fo).writer_schema)
        except (ValueError, EOFError) as exc:
            raise CodecError(f"not an Avro object container file ({exc})", str(path)) from exc
