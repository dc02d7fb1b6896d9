"""The forms of a CaptureGap's reason that say which partitions the gap is about, written by the sources that find
such gaps and read by the queries (replay.gaps) that mark those partitions' answers uncertain. Any other reason
is a gap of a whole stretch of its source (every partition)."""
from __future__ import annotations

import re

_PARTITION_REASON = re.compile(r"^(\S+)-(\d+): partition epochs ")
_STATE_ZNODE_REASON = re.compile(r"^/brokers/topics/([^/\s]+)/partitions/(\d+)/state: versions ")


def partition_reason(topic: str, partition: int, text: str) -> str:
    """The reason of a gap about one partition's epochs only (``t-p: partition epochs ...``), as the broker-log
    normalizer writes it when it finds a partition's epochs skipped."""
    return f"{topic}-{partition}: partition epochs {text}"


def skipped_versions_reason(path: str, first: int, last: int) -> str:
    """The reason of a live ZooKeeper watch's gap: versions first..last of the znode at `path` changed before
    they were read (about one partition when `path` is its state znode)."""
    return f"{path}: versions {first}..{last} changed before they were read"


def partitions_of(reason: str) -> tuple[tuple[str, int], ...]:
    """The partitions a gap is about, from its reason; () for a gap of a whole stretch of its source."""
    m = _PARTITION_REASON.match(reason) or _STATE_ZNODE_REASON.match(reason)
    return ((m.group(1), int(m.group(2))),) if m else ()
