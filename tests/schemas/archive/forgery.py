"""What an adversary with write access to an archive does, for the tests of signed archives: take the events, change
the history, chain it afresh with fresh manifests (the hash chain and manifests then verify) and keep the signed
checkpoints, which they cannot make."""
from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

from schemas.archive import iter_events
from schemas.archive.signed import list_checkpoints
from schemas.archive.writer import ArchiveWriter


def rechained(cluster_dir: Path, out: Path, change: Callable[[list], list], per_file: int) -> Path:
    """The archive of `cluster_dir` with its history changed by `change`, re-chained under `out`, the original
    checkpoints copied beside it; returns `out`."""
    cluster = cluster_dir.name
    events = [dataclasses.replace(e, seq=0, prev_hash="", hash="") for e in iter_events(cluster_dir)]
    with ArchiveWriter(out, cluster, max_events_per_file=per_file, fsync=False) as w:
        for i, e in enumerate(change(events)):
            w.append(dataclasses.replace(e, seq=i))
    for _, path in list_checkpoints(cluster_dir):
        shutil.copy(path, out / cluster / path.name)
    return out


def edited(at: int) -> Callable[[list], list]:
    """One event's capture time moved by a millisecond: the smallest edit there is."""
    def change(events: list) -> list:
        e = events[at]
        events[at] = dataclasses.replace(e, capture_time_ms=e.capture_time_ms + 1)
        return events
    return change
