"""Tests write small archive files by hand; every reader verifies them against a manifest, so each
one gets the manifest the archive writer would give it."""
from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from schemas import loader
from dataclasses import replace

from schemas.archive.chain import record_hash
from schemas.codec import to_avro
from schemas.archive.container import iter_records, write_events
from schemas.events import ControllerEvent
from replay.store import Store
from schemas.archive import ArchiveWriter
from schemas.archive.manifest import MANIFEST_SUFFIX, FileManifest, SourceMark, read_manifest, write_manifest


def seal(path: str | Path) -> Path:
    """Write the manifest of an existing container file from its content."""
    path = Path(path)
    recs = list(iter_records(path))
    first, last = recs[0], recs[-1]

    def mark(r: dict[str, Any]) -> SourceMark:
        return SourceMark(r["source"]["kind"], r["source"]["offset"], r["source"]["index"])

    schema = loader.current()
    manifest = FileManifest(
        file=path.name, cluster_id=first["cluster_id"], count=len(recs), first_seq=first["seq"],
        last_seq=last["seq"], first_source=mark(first), last_source=mark(last),
        first_event_time_ms=first["event_time_ms"], last_event_time_ms=last["event_time_ms"],
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(), size_bytes=path.stat().st_size,
        prev_hash=first["prev_hash"], chain_head_hash=last["hash"], schema_version=schema.version,
        schema_fingerprint=schema.fingerprint_hex, codec="null")
    return write_manifest(path, manifest, fsync=False)


def reseal(path: str | Path) -> Path:
    """The manifest of a file rewritten after it was sealed, made to match its new bytes (sha256, size): what
    someone who alters both an archive file and its manifest does. Nothing of the file is decoded."""
    path = Path(path)
    m = read_manifest(path.with_name(path.name + MANIFEST_SUFFIX))
    data = path.read_bytes()
    return write_manifest(path, replace(m, sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data)),
                          fsync=False)


def write_archive_file(target: str | Path, events: Iterable[ControllerEvent], **kwargs: Any) -> int:
    """schemas.archive.container.write_events, then the file's manifest. Events whose hashes are
    placeholders (hand-written histories) are chained first, keeping their seqs and the first
    one's prev_hash, so that the file verifies."""
    events = list(events)
    if events and any(e.hash != record_hash(to_avro(e)) for e in events):
        events = rechain(events)
    n = write_events(target, events, **kwargs)
    seal(target)
    return n


# (cluster, seq) -> hash given by rechain, so that consecutive slices of one hand-written history,
# written as several files, chain to each other.
_HEADS: dict[tuple[str, int], str] = {}


def rechain(events: list[ControllerEvent]) -> list[ControllerEvent]:
    out = []
    first = events[0]
    prev = _HEADS.get((first.cluster_id, first.seq - 1), first.prev_hash if first.seq else "")
    for e in events:
        linked = replace(e, prev_hash=prev, hash="")
        linked = replace(linked, hash=record_hash(to_avro(linked)))
        out.append(linked)
        prev = linked.hash
        _HEADS[(e.cluster_id, e.seq)] = prev
    return out


@contextlib.contextmanager
def stored(events: Iterable[ControllerEvent], where: Path, cluster_id: str) -> Iterator[Store]:
    """The events chained into an archive (where/a) by the writer and loaded into a store (where/s.duckdb),
    closed after."""
    with ArchiveWriter(where / "a", cluster_id) as w:
        for e in events:
            w.append(e)
    store = Store(where / "s.duckdb")
    try:
        store.load([where / "a"])
        yield store
    finally:
        store.close()
