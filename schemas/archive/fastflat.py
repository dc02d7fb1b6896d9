"""Native fast path: an archive file straight into the flat `events` table (schemas.archive.flat).

`decode_file(path)` gives exactly `flat.to_arrow(flat.flatten(r) for r in container.iter_records(path))`
(same schema, same rows) about two orders of magnitude faster, using the C decoder in
schemas/_native/flatdecode.c (built by `pip install`, optional). That decoder is written for the
v1 schema only, so it takes a file only when its writer schema has exactly v1's Parsing Canonical
Form (and this build's reader schema is still v1) and its codec is `null` or `deflate`; otherwise
it raises `Unsupported` and the caller takes the Python path, which stays the reference.

A corrupt or truncated file raises CodecError naming the file and the record index, like
schemas.archive.container.iter_records. `CTRLAUDIT_NATIVE=0` in the environment turns the fast path off.
"""
from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa

from schemas import loader
from schemas.archive import flat
from schemas.archive.container import MAX_BLOCK_BYTES
from schemas.errors import ChainBreak, CodecError

try:
    from schemas import _flatdecode as _native  # type: ignore[attr-defined]  # C extension, no stubs
except ImportError:  # built without a compiler / zlib: the Python path only
    _native = None


CODECS = {b"null": False, b"deflate": True}  # codec -> is deflate


class Unsupported(Exception):
    """The native decoder does not take this file (or is not built): decode it the Python way."""


@cache
def _layout_ok() -> bool:
    """The C decoder's columns are flat.py's, and this build's reader schema is the one it is written for."""
    if _native is None:
        return False
    kinds = {pa.int32(): _native.K_I32, pa.int64(): _native.K_I64, pa.bool_(): _native.K_BOOL,
             pa.string(): _native.K_STR, pa.list_(pa.int32()): _native.K_LI32,
             pa.list_(pa.int64()): _native.K_LI64, pa.list_(pa.string()): _native.K_LSTR}
    want = tuple((name, kinds.get(typ)) for name, typ, _ in flat.FLAT_COLUMNS)
    if tuple(_native.COLUMNS) != want:
        return False
    return loader.current_is_fast()


def available() -> bool:
    """Whether decode_file can be used at all (extension built, layout and schema as expected)."""
    if os.environ.get("CTRLAUDIT_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return _layout_ok()


@lru_cache(maxsize=64)
def _version(schema_json: bytes) -> int | None:
    """Which version the C decoder knows a writer schema (the header's avro.schema) is exactly, for decoding
    purposes (None: another; the Python path reads it)."""
    if b"logicalType" in schema_json:  # not in the canonical form, but fastavro would honour it
        return None
    try:
        parsed = fastavro.parse_schema(json.loads(schema_json), _write_hint=False)
        canonical = fastavro.schema.to_parsing_canonical_form(parsed)
    except Exception:  # noqa: BLE001 - anything odd: let the Python path judge the file
        return None
    return loader.fast_version(canonical)


def accepts(path: str | Path) -> bool:
    """Cheap check (header only): would decode_file take this file? False on unreadable headers."""
    if not available():
        return False
    want = 1 << 16
    try:
        while True:
            with open(path, "rb") as fo:
                head = fo.read(want)
            try:
                meta, _, _ = _native.read_header(head)
                break
            except ValueError:
                if len(head) < want:  # the whole file was read: not a container header
                    return False
                want *= 4  # a header larger than what was read
    except OSError:
        return False
    return meta.get("avro.codec", b"null") in CODECS and _version(meta.get("avro.schema", b"")) is not None


def chain_available() -> bool:
    """Whether decode_verified can check the chain natively (the extension was built with OpenSSL)."""
    return available() and bool(getattr(_native, "CHAIN", 0))


def decode_verified(path: str | Path, first_seq: int, prev_hash: str) -> tuple[pa.Table, str]:
    """decode_file, also checking each event's hash and its link to the one before it (the first
    one to `prev_hash` at `first_seq`), and the sha256 of the file's bytes, computed alongside.
    ChainBreak names the first event that breaks the chain; Unsupported when the native path cannot
    verify (the caller verifies the Python way)."""
    if not chain_available():
        raise Unsupported("native chain verification not available")
    return _decode(Path(path), 0, (first_seq, prev_hash.encode()))


def decode_file(path: str | Path, batch_rows: int = 0) -> pa.Table:
    """The flat `events` table of one container file (exactly flat.ARROW_SCHEMA).

    Raises Unsupported when the native decoder does not take the file (the caller falls back to
    the Python path), CodecError when the file is corrupt or truncated. batch_rows (tests): rows
    per Arrow record batch, about (default 2**21)."""
    if not available():
        raise Unsupported("native decoder not available")
    return _decode(Path(path), batch_rows, None)[0]


def _decode(path: Path, batch_rows: int, chain: tuple[int, bytes] | None) -> tuple[pa.Table, str]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CodecError(f"cannot open: {exc.strerror}", str(path)) from exc
    try:
        meta, sync, offset = _native.read_header(data)
    except ValueError as exc:
        raise CodecError(f"not an Avro object container file ({exc})", str(path)) from exc
    codec = meta.get("avro.codec", b"null")
    if codec not in CODECS:
        raise Unsupported(f"{path}: codec {codec!r}")
    version = _version(meta.get("avro.schema", b""))
    if version is None:
        raise Unsupported(f"{path}: writer schema is not one the native decoder knows")
    digest = ""
    if chain is None:
        batches, err = _native.decode(data, offset, sync, CODECS[codec], batch_rows, None, MAX_BLOCK_BYTES, version)
    else:  # the file's sha256 in a thread while decoding (both release the GIL)
        with ThreadPoolExecutor(max_workers=1) as pool:
            sha = pool.submit(hashlib.sha256, data)
            batches, err = _native.decode(data, offset, sync, CODECS[codec], batch_rows, chain, MAX_BLOCK_BYTES,
                                          version)
            digest = sha.result().hexdigest()
    del data
    if err is not None:
        kind, message, index = err
        if kind == 4:
            what, _, detail = message.partition(":")
            seq = int(detail.split()[1].rstrip(":")) if detail.startswith("seq ") else None
            raise ChainBreak(what, seq, f"event {index} of the file: {detail}", str(path))
        if kind == 1:
            raise CodecError(
                f"corrupt or truncated data at record {index} (the {index} records before it were read): "
                f"{message}", str(path))
        if kind == 2:
            raise MemoryError(f"{path}: {message}")
        raise Unsupported(f"{path}: {message}")
    return _table(batches), digest


def _table(batches: list[tuple[int, tuple[Any, ...]]]) -> pa.Table:
    if not batches:
        return flat.ARROW_SCHEMA.empty_table()
    types = [t for _, t, _ in flat.FLAT_COLUMNS]
    record_batches = [
        pa.RecordBatch.from_arrays([_array(spec, t) for spec, t in zip(cols, types)], schema=flat.ARROW_SCHEMA)
        for _, cols in batches
    ]
    return pa.Table.from_batches(record_batches, schema=flat.ARROW_SCHEMA)


def _array(spec: tuple[Any, ...], typ: pa.DataType) -> pa.Array:
    kind, n, nulls, valid, data, values, chars, child_len = spec
    buffers = [pa.py_buffer(valid) if valid is not None else None, pa.py_buffer(data)]
    if kind in (_native.K_I32, _native.K_I64, _native.K_BOOL):
        return pa.Array.from_buffers(typ, n, buffers, null_count=nulls)
    if kind == _native.K_STR:
        return pa.Array.from_buffers(typ, n, buffers + [pa.py_buffer(values)], null_count=nulls)
    if kind == _native.K_LSTR:
        child = pa.Array.from_buffers(pa.string(), child_len, [None, pa.py_buffer(values), pa.py_buffer(chars)],
                                      null_count=0)
    else:
        child = pa.Array.from_buffers(typ.value_type, child_len, [None, pa.py_buffer(values)], null_count=0)
    return pa.Array.from_buffers(typ, n, buffers, null_count=nulls, children=[child])
