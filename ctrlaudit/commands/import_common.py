"""What every `ctrlaudit import` shares: its line of what it read and wrote, the cluster id it writes under, its JSON
summary, and the one append of its events to an archive."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ctrlaudit.commands.options import given_cluster_id
from ctrlaudit.commands.output import Output
from schemas.archive.note import Signer
from schemas.archive.writer import ArchiveWriter, after
from services.normalize.imports import ImportReport

if TYPE_CHECKING:
    from schemas.archive.manifest import FileManifest
    from schemas.events import ControllerEvent

UNKNOWN_CLUSTER = "unknown-cluster"


def written_line(cluster: str, read: str, events: int, files: list[FileManifest], out: Path, last: FileManifest | None,
             writer: ArchiveWriter) -> str:
    """An import's line: what it read and what it wrote; over an archive that already holds all of it,
    that it is up to date."""
    signed = ""
    if writer.checkpoints:
        c = writer.checkpoints[-1].checkpoint
        signed = f"; signed: checkpoint of {c.size:,} events ({writer.checkpoints[-1].path.name})"
    new = writer.next_seq - last.last_seq - 1 if last is not None else -1
    if last is None:
        return f"cluster {cluster}: {read} -> {events:,} events in {len(files)} archive file(s) under {out}{signed}"
    if new == 0:
        return (f"cluster {cluster}: {out} already up to date: nothing new after seq {last.last_seq} ({read} read, "
                f"{events:,} events, all archived)")
    return (f"cluster {cluster}: {read} -> {events:,} events, {new:,} new after seq {last.last_seq}, appended in "
            f"{len(files)} archive file(s) under {out}{signed}")


def cluster_named(given: str | None, found: Callable[[], str | None], said: Output, why: str) -> str:
    """The archive's cluster id: --cluster-id, else the one the input states (`found()`), else unknown-cluster,
    said in one WARNING line (`why`: where it was looked for)."""
    cluster = given_cluster_id(given) or found()
    if cluster is None:
        said.say(f"WARNING cluster id unknown: {why}; the archive names it {UNKNOWN_CLUSTER} "
                 "(--cluster-id names the cluster)")
    return cluster or UNKNOWN_CLUSTER


def import_summary(cluster: str, out: Path, report: ImportReport, files: list[FileManifest],
             last: FileManifest | None) -> dict[str, object]:
    """An import as JSON: what was read, what was written, and what could not be (gaps)."""
    return {"cluster_id": cluster, "out": str(out), "records": report.records,
            "files_read": [str(f) for f in report.files], "events": report.events,
            "archive_files": [str(out / cluster / f.file) for f in files],  # a manifest's file: its name there
            "continued_after_seq": last.last_seq if last is not None else None,
            "gaps": [str(g) for g in report.gaps], "partial_tail": report.partial_tail or None,
            "aborted_transactions": report.aborted_transactions,
            "not_used_as_image": dict(getattr(report, "passed_over", {}))}


def append(out: Path, cluster: str, events: Iterable[ControllerEvent],
            last: FileManifest | None, signers: list[Signer]) -> tuple[list[FileManifest], ArchiveWriter]:
    """Write an import's events into the archive directory: after the intact archive already there
    (only what continues its chain), or into an empty one. Returns (files written, the writer)."""

    if last is not None:
        events = after(events, last, out / cluster)
    with ArchiveWriter.resume(out, cluster, signers=signers) as writer:
        for event in events:
            writer.append(event)
        files = writer.close()
    return files, writer
