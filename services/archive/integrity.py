"""Verify an archive and name the first event that is missing, altered, reordered or inserted.

`services.archive.reader.verify` checks files (sha256, counts, chain ends); this walks every event of
every cluster in chain order and says what is wrong with the first one that breaks the chain:

* altered:   its hash is not sha256(prev_hash || its body)
* missing:   a seq is skipped (the events after it still chain to what is no longer there)
* reordered / inserted: a seq comes back after a higher one, or an event claims a seq and prev_hash
  that the chain already used
Files are then checked against their manifests (sha256, count, first/last seq, chain head).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from schemas.chain import record_hash
from schemas.container import iter_records
from schemas.errors import ContractError
from services.archive.reader import list_files


class BadArchive(ContractError):
    """Not an archive (no such directory, no finished files, unreadable file)."""


@dataclass
class Finding:
    cluster_id: str
    file: str
    kind: str  # missing | altered | reordered | inserted | manifest
    seq: int | None
    event_id: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.cluster_id}/{self.file}: {self.kind}: {self.message}"


@dataclass
class ArchiveReport:
    clusters: list[str] = field(default_factory=list)
    files: int = 0
    events: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


def _where(rec: dict) -> str:
    s = rec["source"]
    return f"seq {rec['seq']} (event {rec['event_id']}, {s['kind']} offset {s['offset']} index {s['index']})"


def cluster_dirs(path: str | Path) -> list[Path]:
    p = Path(path)
    if not p.is_dir():
        raise BadArchive(f"{p}: not a directory")
    if list_files(p):
        return [p]
    dirs = [d for d in sorted(p.iterdir()) if d.is_dir() and list_files(d)]
    if not dirs:
        raise BadArchive(f"{p}: no archive files (events-*.avro with manifests)")
    return dirs


def verify_cluster(directory: Path, report: ArchiveReport) -> None:
    cluster = directory.name
    report.clusters.append(cluster)
    expected, head = 0, ""
    prev_rec: dict | None = None
    first_problem = True

    def add(kind, file, rec, msg):
        report.findings.append(Finding(cluster, file, kind, rec["seq"] if rec else None,
                                       rec["event_id"] if rec else None, msg))

    for path, man in list_files(directory):
        report.files += 1
        count = 0
        try:
            records = list(iter_records(path))
        except Exception as exc:  # noqa: BLE001 - a damaged container file is a finding, not a crash
            add("altered", path.name, None, f"cannot read the file: {exc}")
            continue
        for rec in records:
            count += 1
            report.events += 1
            if not first_problem:
                continue
            if record_hash(rec) != rec["hash"]:
                add("altered", path.name, rec, f"{_where(rec)} was altered: its hash does not match its content")
            elif rec["seq"] > expected:
                add("missing", path.name, rec, f"seq {expected} is missing: {_where(rec)} follows seq {expected - 1}"
                    + (f" (event {prev_rec['event_id']})" if prev_rec else ""))
            elif rec["seq"] < expected:
                if prev_rec is not None and prev_rec["seq"] == rec["seq"]:
                    add("inserted", path.name, prev_rec, f"{_where(prev_rec)} was inserted: {_where(rec)} holds the "
                        "same seq and is the one the chain continues from" if rec["prev_hash"] == prev_rec["prev_hash"]
                        else f"{_where(prev_rec)} was inserted before {_where(rec)}")
                else:
                    add("reordered", path.name, rec, f"{_where(rec)} comes after seq {expected - 1}: events reordered")
            elif rec["prev_hash"] != head:
                add("inserted" if prev_rec is not None and prev_rec["seq"] == expected - 1 else "altered", path.name, rec,
                    f"{_where(rec)} does not chain to the event before it (prev_hash {rec['prev_hash'][:12]}, "
                    f"chain head {head[:12]})")
            if report.findings:
                first_problem = False
                continue
            expected, head, prev_rec = rec["seq"] + 1, rec["hash"], rec
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != man.sha256:
            add("manifest", path.name, None, f"sha256 {digest[:16]} != manifest {man.sha256[:16]} (file changed)")
        if count != man.count:
            add("manifest", path.name, None, f"{count} events, manifest says {man.count}")


def verify_archive(path: str | Path) -> ArchiveReport:
    report = ArchiveReport()
    for d in cluster_dirs(path):
        verify_cluster(d, report)
    return report
