"""Tamper evidence: the per-cluster hash chain.

hash = sha256(prev_hash || Avro body of the event with hash = ""), the body written
with the event's writer schema, so any edit, deletion, insertion or reordering breaks the chain.
"""
from __future__ import annotations

import hashlib
import io
from typing import Any

import fastavro

from schemas import loader
from schemas.archive import fastencode
from schemas.archive.encoder import make_encoder
from schemas.events import ControllerEvent


def record_hash(record: dict[str, Any], parsed_schema: Any = None) -> str:
    """The hash of an Avro record dict (as the codec or fastavro's reader gives it)."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, parsed_schema or loader.current().parsed, {**record, "hash": ""})
    return hashlib.sha256(record["prev_hash"].encode() + body.getvalue()).hexdigest()


# link an owned frozen event in place (Chain.append_with_body): the slots' own setters, what
# object.__setattr__ ends up calling, without its lookup
_set_seq, _set_prev_hash, _set_hash = (getattr(ControllerEvent, f).__set__ for f in ("seq", "prev_hash", "hash"))


class Chain:
    """A cluster's chain: assigns each event its seq, prev_hash and hash, in order, and gives its stored Avro
    body — the body hashed with hash = "" and written with the hash in place, one encoding serving both. The
    body encoder is pluggable (schemas.archive.encoder: schema v1 by hand, or fastavro for any schema; by
    default the fast one where the current schema is v1). Capture, the archive writer (so every import) and the
    simulator chain through it. Not thread-safe."""

    def __init__(self, cluster_id: str, next_seq: int = 0, head_hash: str = "", encoder: Any = None) -> None:
        self.cluster_id = cluster_id
        self.next_seq = next_seq
        self.head_hash = head_hash
        self._split = (encoder or make_encoder()).split

    def append(self, event: ControllerEvent) -> ControllerEvent:
        """The event linked to the chain (`append_with_body` without the body)."""
        return self.append_with_body(event)[0]

    def append_with_body(self, event: ControllerEvent, owned: bool = False) -> tuple[ControllerEvent, bytes]:
        """The linked event and its stored body. An unchained event (hash "") gets the next seq and the chain
        head as prev_hash; an already chained one must continue the chain exactly (seq, prev_hash and hash),
        else ValueError and the chain is as it was. owned=True: `event` was made for this call and nothing else
        holds it (capture's fresh, unchained events), so it is linked in place instead of copied — building a
        13-field frozen dataclass costs ~6 us, a tenth of an event's whole budget at 20k/s; nothing has hashed
        or shared it yet, which is what frozen protects."""
        seq, prev = self.next_seq, self.head_hash
        digest, body = self.append_body(event)
        if event.hash:
            linked = event
        elif owned:
            linked = event
            _set_seq(linked, seq)
            _set_prev_hash(linked, prev)
            _set_hash(linked, digest)
        else:
            e = event  # spelled out: dataclasses.replace costs ~10 us per call (it introspects the fields)
            linked = ControllerEvent(e.event_id, e.cluster_id, seq, e.source, e.event_time_ms, e.capture_time_ms,
                                     e.controller_id, e.controller_epoch, e.payload, e.metadata_version,
                                     e.bootstrap, prev, digest)
        return linked, body

    def append_body(self, event: ControllerEvent) -> tuple[str, bytes]:
        """Chain `event` and give its hash and stored body, without making the linked event (the archive writer
        keeps only the body: building a 13-field frozen dataclass per event is a tenth of the write path).
        The same checks as `append_with_body`: ValueError, and the chain as it was, for an event of another
        cluster or a chained event that does not continue the chain."""
        if event.cluster_id != self.cluster_id:
            raise ValueError(f"event of cluster {event.cluster_id!r} appended to chain of {self.cluster_id!r}")
        seq, prev = self.next_seq, self.head_hash
        head, tail = self._split(event, seq, prev)
        digest, body = fastencode.chain_body(head, tail, prev)
        if event.hash and (event.seq != seq or event.prev_hash != prev or event.hash != digest):
            raise ValueError(
                f"chained event {event.event_id} does not continue the chain: seq {event.seq} (expected {seq}), "
                f"prev_hash {event.prev_hash[:12]} (expected {prev[:12]}), hash {event.hash[:12]} "
                f"(computed {digest[:12]})")
        self.next_seq = seq + 1
        self.head_hash = digest
        return digest, body
