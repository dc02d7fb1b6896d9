"""Normalizer image checkpoints kept in a changelog-backed table, so a restarted worker replays the raw
topic from its last checkpoint instead of from offset 0.

What a checkpoint is, and why it is safe
----------------------------------------
A checkpoint is every cluster's normalizer image after the raw-topic messages below `raw_offset`
(services/capture/checkpoint.py encodes one image). It is a pure function of that raw-topic prefix, so
unlike a table of "last emitted position" it can never disagree with the events topic: the chain head
and the dedupe positions still come from the events topic's last message (logic.py), and replaying the
raw topic from `raw_offset` gives the same image as replaying it from 0. Two rules keep it so:

* it is taken only after every event of the messages below `raw_offset` was delivered (the worker
  flushes the events producer first), or a restart would skip events the topic never got;
* it is written to the slot the head does not point at, chunks first and the head last, so a worker
  killed mid-write leaves the previous checkpoint whole; a checkpoint whose chunks do not match the
  head's sha256 is refused and the worker falls back to replaying from offset 0 (slower, never wrong).

The table is any MutableMapping[str, bytes]: a Faust Table (memory store, recovered from its compacted
changelog topic when the worker starts) in the worker, a dict in tests.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from services.capture import checkpoint
from services.kraft.normalizer import KRaftNormalizer

log = logging.getLogger(__name__)

HEAD = "head"
CHUNK_BYTES = 900_000  # under the brokers' default message.max.bytes (1 MiB) with room for the key


@dataclass(frozen=True)
class Restored:
    raw_offset: int
    normalizers: dict[str, KRaftNormalizer]  # cluster id -> image after the messages below raw_offset


class ImageStore:
    def __init__(self, table: MutableMapping[str, bytes], chunk_bytes: int = CHUNK_BYTES) -> None:
        self.table = table
        self.chunk_bytes = chunk_bytes
        self.saved = 0

    def head(self) -> dict[str, Any] | None:
        """The head as JSON: raw_offset, slot, clusters (cluster id -> chunks, sha256, bytes), checked to read as
        numbers and a mapping; None when there is none or it is unreadable."""
        raw = self.table.get(HEAD)
        if raw is None:
            return None
        try:
            head: dict[str, Any] = json.loads(raw)
            int(head["raw_offset"]), int(head["slot"]), dict(head["clusters"])
            return head
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("checkpoint head unreadable (%s): ignored", exc)
            return None

    def save(self, raw_offset: int, normalizers: Mapping[str, KRaftNormalizer]) -> bool:
        """Write a checkpoint of `normalizers` (the image after the raw messages below `raw_offset`).
        False, and nothing written, when one of them is inside a transaction or a snapshot."""
        if not all(checkpoint.quiet(n) for n in normalizers.values()):
            return False
        old = self.head()
        slot = 1 - old["slot"] if old else 0
        clusters = {}
        for cid, n in normalizers.items():
            blob = checkpoint.dump(n)
            chunks = checkpoint.split(blob, self.chunk_bytes)
            for i, c in enumerate(chunks):
                self.table[f"{slot}/{cid}/{i}"] = c
            clusters[cid] = {"chunks": len(chunks), "sha256": checkpoint.digest(blob), "bytes": len(blob)}
        # the head last: until it is written, the previous checkpoint (other slot) stays the valid one
        self.table[HEAD] = json.dumps({"raw_offset": raw_offset, "slot": slot, "clusters": clusters},
                                      sort_keys=True).encode()
        self.saved += 1
        return True

    def load(self, clock: Callable[[], int] | None = None) -> Restored | None:
        """The last whole checkpoint, or None (none yet, or torn/altered: then replay from offset 0)."""
        head = self.head()
        if head is None:
            return None
        out: dict[str, KRaftNormalizer] = {}
        try:
            for cid, c in head["clusters"].items():
                chunks = [self.table.get(f"{head['slot']}/{cid}/{i}") for i in range(int(c["chunks"]))]
                if any(x is None for x in chunks):
                    raise checkpoint.CheckpointError(f"chunk missing for cluster {cid}")
                n = checkpoint.load(checkpoint.join(chunks, c["sha256"]), clock=clock)
                if n.cluster_id != cid:
                    raise checkpoint.CheckpointError(f"image of cluster {n.cluster_id!r} filed under {cid!r}")
                out[cid] = n
        except (checkpoint.CheckpointError, KeyError, TypeError, ValueError) as exc:
            log.warning("checkpoint at raw offset %s refused (%s): replaying the raw topic from its start",
                        head.get("raw_offset"), exc)
            return None
        return Restored(int(head["raw_offset"]), out)
