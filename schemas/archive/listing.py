"""List and read an archive directory: finished files (those with a manifest) in chain order."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from schemas.archive.container import read_events
from schemas.archive.manifest import MANIFEST_SUFFIX, FileManifest, read_manifest
from schemas.archive.verified import verify
from schemas.events import ControllerEvent


def list_files(directory: str | Path) -> list[tuple[Path, FileManifest]]:
    """(avro path, manifest) of every finished file in one cluster's directory, by first seq.

    Files without a manifest (unfinished, or a crashed writer's) are not listed.
    """
    directory = Path(directory)
    found = []
    for m in directory.glob("*.avro" + MANIFEST_SUFFIX):
        avro = m.with_name(m.name[: -len(MANIFEST_SUFFIX)])
        if avro.exists():
            found.append((avro, read_manifest(m)))
    found.sort(key=lambda pm: pm[1].first_seq)
    return found


def clusters(root: str | Path) -> list[str]:
    """Cluster ids with at least one finished file under an archive root."""
    root = Path(root)
    return sorted(d.name for d in root.iterdir() if d.is_dir() and list_files(d)) if root.exists() else []


def iter_events(directory: str | Path) -> Iterator[ControllerEvent]:
    """Every event of one cluster's directory as model objects, in chain order, once the directory verifies
    whole (schemas.archive.verified; ArchiveProblem otherwise): the archive's one read, for those who want
    the events themselves rather than its flat rows."""
    verify([directory])
    for path, _ in list_files(directory):
        yield from read_events(path)
