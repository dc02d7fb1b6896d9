"""Offline import: a copied `__cluster_metadata-0` directory (or files from it) -> ControllerEvents.

Which files to read: if the segments start at offset 0 the log alone is the whole history.
Otherwise the oldest history was deleted by retention; the import bootstraps from the oldest
snapshot that reaches the first retained segment (its records become bootstrap events: state, not
transitions), records the deleted stretch as a CaptureGap, and replays the segments after it.
"""
from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from schemas import names
from schemas.events import ControllerEvent
from services.kraft import KRaftError, LogReader, Record, SnapshotId, metadata_files, snapshot_id
from services.kraft.files import bootstrap_snapshot, segment_base_offset, snapshot_problem
from services.kraft.normalizer import KRaftNormalizer
from services.normalize.imports import BadImport, ImportReport, Made, import_loop

log = logging.getLogger(__name__)


METADATA_DIR = "__cluster_metadata-0"
META = "meta.properties"
META_BYTES = 1 << 16  # a meta.properties is a few lines; a copied file is read no further


def meta_places(paths: Sequence[Path]) -> list[Path]:
    """Where the meta.properties of each given path may be: Kafka keeps it in the log directory, beside
    `__cluster_metadata-0`; so for a metadata directory its parent (and in it, where a copy may have put it),
    for a segment or snapshot file the directory holding it and that one's parent, for a log directory
    itself. Absolute, so that `.` (run from inside the copy) has a parent too."""
    places: list[Path] = []
    for p in paths:
        d = Path(os.path.abspath(p))
        d = d if d.is_dir() else d.parent
        places += [d / META, d.parent / META]
    return list(dict.fromkeys(places))


def cluster_id_of(paths: Sequence[Path]) -> str | None:
    """cluster.id from the first meta.properties of `meta_places` that states one (a copied file: a value that
    is not a Kafka cluster id is refused, naming the file); None when none does."""
    for candidate in meta_places(paths):
        if candidate.is_file():
            with open(candidate, "rb") as f:
                text = f.read(META_BYTES).decode(errors="replace")
            m = re.search(r"^cluster\.id=(.*)$", text, re.M)
            if m:
                return names.cluster_id(m.group(1).strip(), "cluster.id", str(candidate))
    return None


def metadata_dir(path: Path) -> Path:
    """The metadata directory a given directory stands for: itself, or, for a log directory that holds one,
    its `__cluster_metadata-0`."""
    inner = path / METADATA_DIR
    return inner if path.name != METADATA_DIR and inner.is_dir() else path


def plan(paths: Sequence[Path], passed_over: dict[str, str] | None = None) -> list[Path]:
    """The files to read, in order: [snapshot] + segments (see the module doc). `passed_over`: the snapshots
    not used because they are not whole (file -> why)."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(metadata_files(metadata_dir(p)))
        elif p.exists():
            files.append(p)
        else:
            raise BadImport(f"{p}: no such file or directory")
    segments = sorted((f for f in files if segment_base_offset(f) is not None),
                      key=lambda f: segment_base_offset(f) or 0)  # (every one has a base offset)
    snapshots = sorted((f for f in files if snapshot_id(f) is not None), key=_end_offset)
    others = [f for f in files if f not in segments and f not in snapshots]
    if others:
        raise BadImport(f"{others[0]}: not a metadata log segment (NNN.log) or snapshot (NNN-EEE.checkpoint)")
    if not segments and not snapshots:
        raise BadImport("no metadata log segments or snapshots in " + ", ".join(map(str, paths)))
    first = segment_base_offset(segments[0]) if segments else None
    if first == 0:
        return segments
    # The oldest whole snapshot that reaches the first retained segment (any, when there are no segments). A
    # snapshot cut short (no header or footer) is never an image: used as one it would delete what follows the
    # cut; nor is one that ends before the segments begin (what lies between would be a silent hole).
    cut = {s: why for s in snapshots if (why := snapshot_problem(s)) is not None}
    start = bootstrap_snapshot(first, [s for s in snapshots if s not in cut])
    if start is None:
        if cut:
            bad, why = next(iter(cut.items()))
            raise BadImport(f"{bad}: {why}; it is not a complete image, and no complete snapshot or log segment "
                            f"covers the history before offset {first if first is not None else _end_offset(bad)}")
        raise BadImport(f"the segments start at offset {first} and no snapshot covers the history before it")
    if passed_over is not None:
        passed_over.update((str(p), why) for p, why in cut.items())
    return [start] + segments


def _end_offset(snapshot: Path) -> int:
    sid = snapshot_id(snapshot)
    if sid is None:
        raise BadImport(f"{snapshot}: not a metadata snapshot (NNN-EEE.checkpoint)")
    return sid.end_offset


def import_events(paths: Sequence[str | Path], cluster_id: str | None = None, on_error: str = "raise",
                  node_id: int = -1, report: ImportReport | None = None,
                  progress: Callable[[int], None] | None = None, *,
                  normalizer: KRaftNormalizer | None = None) -> Iterator[ControllerEvent]:
    """Events of the metadata files at `paths`, in log order (unchained); `progress(bytes)` after
    each file. `normalizer`: the caller's (a migration's, which holds back what precedes the cutover)."""
    given = [Path(p) for p in paths]
    report = report if report is not None else ImportReport()
    cluster = cluster_id or cluster_id_of(given) or "unknown-cluster"
    norm = normalizer if normalizer is not None else KRaftNormalizer(cluster, node_id=node_id)
    files = _MetadataFiles(plan(given, report.passed_over), norm, on_error, report)
    yield from import_loop(files, norm.feed, report, progress, refuse=files.refuse)
    report.aborted_transactions = len(norm.txn.aborted)
    begin = norm.txn.begin
    if begin is not None:
        log.warning("the log ends inside a metadata transaction begun at offset %d: its records are not "
                    "committed and were not imported", begin.offset)


class _MetadataFiles:
    """The steps of reading metadata files in order (services.normalize.imports.import_loop): each file, its
    records, and the gaps and snapshot deletes the normalizer makes beside them."""

    def __init__(self, files: list[Path], norm: KRaftNormalizer, on_error: str, report: ImportReport) -> None:
        self.files, self.norm, self.on_error, self.report = files, norm, on_error, report
        self.snapshot: SnapshotId | None = None  # of the file being read

    def refuse(self, exc: Exception) -> str | None:
        if not isinstance(exc, KRaftError):
            return None
        return f"{exc}; a snapshot that cannot be read whole is not a complete image" if self.snapshot is not None \
            else str(exc)

    def __iter__(self) -> Iterator[Path | Made | Record]:
        norm, report = self.norm, self.report
        for f in self.files:
            yield f
            snap = self.snapshot = snapshot_id(f)
            # A copied active segment may end inside a batch that was being written: stop there and
            # say so (report.partial_tail) rather than failing the whole import.
            last_segment = f is self.files[-1] and snap is None
            # A snapshot is read whole or not used: skipping a bad batch, the image would delete what it held.
            reader = LogReader(f, on_error="raise" if snap is not None else self.on_error, live=last_segment)
            if snap is not None:
                norm.begin_snapshot(snap.end_offset)
                if not report.records and snap.end_offset > 0:
                    yield Made([norm.gap(0, snap.end_offset - 1, f"history before offset {snap.end_offset} was deleted "
                                         f"by retention; state bootstrapped from snapshot {f.name}")],
                               [f"[0, {snap.end_offset - 1}] before snapshot {f.name}"], counted=False)
            last_time = 0
            skipped = 0
            for batch, records in reader.batches():
                if len(reader.skipped) > skipped:
                    skipped = len(reader.skipped)
                    reason = str(reader.skipped[-1])
                    yield Made([norm.gap(norm.last_offset + 1, batch.base_offset - 1, reason, batch.max_timestamp)],
                               [reason], counted=False)
                last_time = batch.max_timestamp
                yield from records
            if len(reader.skipped) > skipped:  # damage at the very end of the file
                reason = str(reader.skipped[-1])
                yield Made([norm.gap(norm.last_offset + 1, -1, reason, last_time)], [reason], counted=False)
            if snap is not None:
                yield Made(norm.end_snapshot(last_time))
            if reader.partial_tail is not None:
                report.partial_tail = f"{f}: the last batch at byte {reader.partial_tail.position} is incomplete"
