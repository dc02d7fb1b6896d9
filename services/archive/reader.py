"""List and read an archive directory: finished files (those with a manifest) in chain order."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas.chain import record_hash
from schemas.container import iter_records, read_events
from schemas.events import ControllerEvent
from schemas.manifest import MANIFEST_SUFFIX, FileManifest, read_manifest


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
    for path, _ in list_files(directory):
        yield from read_events(path)


def iter_archive_records(directory: str | Path) -> Iterator[dict[str, Any]]:
    """The Avro records (fast path: no model objects)."""
    for path, _ in list_files(directory):
        yield from iter_records(path)


@dataclass
class VerifyReport:
    files: int = 0
    events: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(directory: str | Path, deep: bool = True) -> VerifyReport:
    """Check sha256 and counts of every file and the chain across files; `deep` rehashes each event."""
    report = VerifyReport()
    expected_seq, head = 0, ""
    for path, man in list_files(directory):
        report.files += 1
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != man.sha256:
            report.problems.append(f"{path.name}: sha256 {digest} != manifest {man.sha256}")
        if man.first_seq != expected_seq or man.prev_hash != head:
            report.problems.append(
                f"{path.name}: starts at seq {man.first_seq} after {man.prev_hash[:12]!r}, "
                f"expected seq {expected_seq} after {head[:12]!r}"
            )
        count = 0
        if deep:
            prev = man.prev_hash
            for rec in iter_records(path):
                if rec["prev_hash"] != prev or record_hash(rec) != rec["hash"]:
                    report.problems.append(f"{path.name}: chain broken at seq {rec['seq']}")
                    break
                if rec["seq"] != man.first_seq + count:
                    report.problems.append(f"{path.name}: seq {rec['seq']} at position {count}")
                    break
                prev = rec["hash"]
                count += 1
            else:
                if prev != man.chain_head_hash:
                    report.problems.append(f"{path.name}: last hash != manifest chain head")
            if count != man.count:
                report.problems.append(f"{path.name}: {count} events, manifest says {man.count}")
        report.events += man.count
        expected_seq, head = man.last_seq + 1, man.chain_head_hash
    return report
