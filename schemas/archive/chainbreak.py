"""Name the event that breaks a file's hash chain: missing, altered, reordered or inserted.

The verified read (schemas.archive.verified) finds *that* a file's chain breaks, and where; this walk, run only on a
file already found broken, says *what* happened there, the way a forger's edit would look:

* altered:   the event's hash is not sha256(prev_hash || its body)
* missing:   a seq is skipped (the events after it still chain to what is no longer there)
* inserted:  two events claim the same seq and prev_hash, and the chain goes on from the second one; or
             an event that does not chain to the one before it, where the one before it holds its seq
* reordered: a seq comes back after a higher one
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.archive.chain import record_hash
from schemas.archive.container import iter_records


@dataclass(frozen=True)
class Break:
    kind: str
    seq: int | None
    event_id: str | None
    message: str


def _where(rec: dict[str, Any]) -> str:
    s = rec["source"]
    return f"seq {rec['seq']} (event {rec['event_id']}, {s['kind']} offset {s['offset']} index {s['index']})"


def first_break(path: Path, first_seq: int, prev_hash: str, hashes: Any = None) -> Break | None:
    """The first break of the chain in one file that starts at `first_seq` after `prev_hash`; None if it
    holds. `hashes` gives each record's hash as written (for a file of another schema release: the hash is
    over the body in the writer's schema), by default recomputed from the record."""
    expected, head = first_seq, prev_hash
    prev: dict[str, Any] | None = None
    for rec in iter_records(path):
        actual = next(hashes) if hashes is not None else record_hash(rec)
        seq = rec["seq"]
        if actual != rec["hash"]:
            return Break("altered", seq, rec["event_id"], f"{_where(rec)} was altered: its hash does not match "
                                                          "its content")
        if seq > expected:
            after = f" (event {prev['event_id']})" if prev else ""
            return Break("missing", expected, None,
                         f"seq {expected} is missing: {_where(rec)} follows seq {expected - 1}{after}")
        if seq < expected:
            if prev is not None and prev["seq"] == seq:
                if rec["prev_hash"] == prev["prev_hash"]:
                    return Break("inserted", seq, prev["event_id"], f"{_where(prev)} was inserted: {_where(rec)} "
                                 "holds the same seq and is the one the chain continues from")
                return Break("inserted", seq, prev["event_id"], f"{_where(prev)} was inserted before {_where(rec)}")
            return Break("reordered", seq, rec["event_id"], f"{_where(rec)} comes after seq {expected - 1}: "
                                                            "events reordered")
        if rec["prev_hash"] != head:
            kind = "inserted" if prev is not None and prev["seq"] == expected - 1 else "altered"
            return Break(kind, seq, rec["event_id"], f"{_where(rec)} does not chain to the event before it "
                         f"(prev_hash {rec['prev_hash'][:12]}, chain head {head[:12]})")
        expected, head, prev = seq + 1, rec["hash"], rec
    return None
