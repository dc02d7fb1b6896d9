"""Archive files -> Arrow tables in the flat `events` layout (schemas.flat), in parallel.

Decoding Avro in Python (fastavro) is the load bottleneck, so the work is spread over processes:
each worker decodes every k-th block of a file (Avro container blocks are independent), flattens
the records with `schemas.flat.flatten` (the one definition of the layout) and returns an Arrow
table. `decode_batches` hands files over in batches of bounded size so the store can insert as it
goes (the load's transaction, not the decoder, makes a bad file load nothing).
"""
from __future__ import annotations

import gc
import os
import zlib
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
from fastavro.read import SchemaResolutionError

from schemas import fastflat, loader
from schemas.codec import READ_OPTIONS
from schemas.container import iter_records
from schemas.errors import CodecError
from schemas.flat import flatten, to_arrow

# Files smaller than this are decoded by one worker; larger ones are split by blocks.
SPLIT_BYTES = 8 * 1024 * 1024
# Archive bytes per batch of decode_batches. Arrow rows take ~2.2x the Avro bytes (measured on the
# bench histories: 287 MB of archive -> ~630 MB of Arrow per 1M events), and two batches are alive at
# a time (one being stored, the next being decoded), so this bounds decoded data to ~600 MB.
BATCH_BYTES = 128 * 1024 * 1024
_DECODE_ERRORS = (ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError, OverflowError,
                  zlib.error, SchemaResolutionError, TypeError)


def archive_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files to load: a directory stands for all `*.avro` under it, in name order."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(p.rglob("*.avro")))
        elif p.exists():
            files.append(p)
        else:
            raise CodecError("no such file or directory", str(p))
    return files


def check_header(path: Path) -> bool:
    """Refuses a file that is not a ControllerEvent container (CodecError naming it). Returns
    whether its writer schema is this build's (no resolution needed)."""
    for _ in iter_records(path):  # validates the header, the record name and the first record
        break
    with open(path, "rb") as fo:
        writer = fastavro.reader(fo).writer_schema
    canonical = fastavro.schema.to_parsing_canonical_form(fastavro.parse_schema(writer, _write_hint=False))
    return bool(canonical == loader.current().canonical)


def decode_part(path: Path, shard: int = 0, shards: int = 1, current: bool = True) -> pa.Table:
    """The flat rows of blocks shard, shard+shards, ... of one container file."""
    if shards == 1:
        return to_arrow(flatten(r) for r in iter_records(path))
    rows: list[tuple[Any, ...]] = []
    with open(path, "rb") as fo:
        reader_schema = None if current else loader.current().parsed
        try:
            for i, block in enumerate(fastavro.block_reader(fo, reader_schema, **READ_OPTIONS)):
                if i % shards == shard:
                    rows.extend(flatten(r) for r in block)
        except _DECODE_ERRORS as exc:
            raise CodecError(f"corrupt or truncated data in block {i}: {type(exc).__name__}: {exc}",
                             str(path)) from exc
    return to_arrow(rows)


def _task(args: tuple[str, int, int, bool]) -> pa.Table:
    path, shard, shards, current = args
    # The decoded records are garbage-free but numerous: the cyclic GC would rescan them again and
    # again (measured: 9k -> 25k records/s per core with it off). Nothing here makes cycles.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return decode_part(Path(path), shard, shards, current)
    finally:
        if gc_was_enabled:
            gc.enable()


def decode_files(files: list[Path], workers: int | None = None) -> Iterator[tuple[Path, pa.Table]]:
    """(file, its flat rows), in file order; a file split across workers comes back as one table."""
    workers = workers or os.cpu_count() or 1
    native = [fastflat.accepts(f) for f in files]  # fastflat
    if any(native):  # fastflat
        yield from _decode_native(files, native, workers)
        return
    tasks: list[tuple[str, int, int, bool]] = []
    owners: list[Path] = []
    for f in files:
        current = check_header(f)
        shards = max(1, min(workers, f.stat().st_size // SPLIT_BYTES)) if workers > 1 else 1
        for s in range(shards):
            tasks.append((str(f), s, shards, current))
            owners.append(f)
    if workers == 1 or len(tasks) == 1:
        results: Iterable[pa.Table] = map(_task, tasks)
    else:
        pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)))
        results = pool.map(_task, tasks)
    try:
        pending: list[pa.Table] = []
        for i, table in enumerate(results):
            pending.append(table)
            if i + 1 == len(tasks) or owners[i + 1] != owners[i]:
                yield owners[i], pa.concat_tables(pending)
                pending = []
    finally:
        if workers != 1 and len(tasks) > 1:
            pool.shutdown(cancel_futures=True)


def batches_of(files: list[Path], batch_bytes: int) -> list[list[Path]]:
    """Consecutive files grouped up to batch_bytes of archive each (at least one file per batch)."""
    out: list[list[Path]] = []
    size = 0
    for f in files:
        n = f.stat().st_size
        if out and size + n <= batch_bytes:
            out[-1].append(f)
            size += n
        else:
            out.append([f])
            size = n
    return out


def decode_batches(files: list[Path], workers: int | None = None,
                   batch_bytes: int = BATCH_BYTES) -> Iterator[list[tuple[Path, pa.Table]]]:
    """decode_files, one bounded batch of files at a time, in file order. When every file goes to
    the native decoder, the next batch is decoded in a thread while the caller stores this one
    (the C decoder and DuckDB both release the GIL); the Python path forks worker processes, which
    must not happen from a helper thread, so it decodes batch after batch."""
    groups = batches_of(files, batch_bytes)
    if not groups:
        return
    if not all(fastflat.accepts(f) for f in files):
        for group in groups:
            yield list(decode_files(group, workers))
        return
    with ThreadPoolExecutor(max_workers=1) as ahead:
        future = ahead.submit(lambda g: list(decode_files(g, workers)), groups[0])
        for i in range(len(groups)):
            batch = future.result()
            if i + 1 < len(groups):
                future = ahead.submit(lambda g: list(decode_files(g, workers)), groups[i + 1])
            yield batch
            del batch  # not held while the next one is decoded


# --- fastflat (native decoder) --------------------------------------------------------------------
# Files whose writer schema is exactly v1 (codec null/deflate) go to schemas.fastflat, in threads of
# this process (the C decoder releases the GIL, and its tables need no pickling); the others take
# the Python path above, which stays the reference.

def _native_table(path: Path) -> pa.Table:
    try:
        return fastflat.decode_file(path)
    except fastflat.Unsupported:  # beyond the native decoder's limits after all
        return decode_part(path, current=check_header(path))


def _decode_native(files: list[Path], native: list[bool], workers: int) -> Iterator[tuple[Path, pa.Table]]:
    with ThreadPoolExecutor(max_workers=max(1, min(workers, sum(native)))) as threads:
        futures = [threads.submit(_native_table, f) if n else None for f, n in zip(files, native)]
        try:
            for future in futures:  # all decoded before anything is returned; the first error raises
                if future is not None:
                    future.result()
        except BaseException:
            for future in futures:
                if future is not None:
                    future.cancel()
            raise
    rest = decode_files([f for f, n in zip(files, native) if not n], workers)
    for f, future in zip(files, futures):
        yield (f, future.result()) if future is not None else next(rest)
