"""Parser for the text DumpLogSegments prints (``--cluster-metadata-decoder``), so tests can
compare our decoder with Kafka's own, line by line. Handles the Scala tool (3.9 .. 4.2) and the
Java one (4.3+): they differ only in how LeaderChange control records are printed."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_KV = re.compile(r"(\w+): (\S+)")
_RECORD_META = re.compile(r"^\| (offset: .*?headerKeys: \[[^\]]*\])(.*)$")


@dataclass
class DumpRecord:
    offset: int
    fields: dict[str, str]
    kind: str                  # "payload" | "control" | "error" | "none"
    label: str | None = None   # for control: LeaderChange, SnapshotHeader, ...; "controlType" in 3.9
    text: str | None = None    # the JSON text exactly as printed (or the error/control text)

    @property
    def json(self):
        return json.loads(self.text) if self.text and self.text[:1] == "{" else None


@dataclass
class DumpBatch:
    fields: dict[str, str]
    records: list[DumpRecord] = field(default_factory=list)

    def __getitem__(self, key: str) -> str:
        return self.fields[key]


@dataclass
class DumpFile:
    path: str
    header: str | None = None
    batches: list[DumpBatch] = field(default_factory=list)
    invalid_bytes: int | None = None
    other: list[str] = field(default_factory=list)

    @property
    def records(self) -> list[DumpRecord]:
        return [r for b in self.batches for r in b.records]


def parse(text: str) -> list[DumpFile]:
    files: list[DumpFile] = []
    cur: DumpFile | None = None
    for line in text.splitlines():
        if line.startswith("Dumping "):
            cur = DumpFile(line[len("Dumping "):].strip())
            files.append(cur)
            continue
        if cur is None:
            continue
        if line.startswith("baseOffset: "):
            cur.batches.append(DumpBatch(dict(_KV.findall(line))))
        elif line.startswith("| offset: "):
            cur.batches[-1].records.append(_record(line))
        elif line.startswith(("Log starting offset", "Snapshot end offset", "KRaft bootstrap")):
            cur.header = line
        elif m := re.match(r"Found (\d+) invalid bytes at the end of", line):
            cur.invalid_bytes = int(m.group(1))
        elif line.strip():
            cur.other.append(line)
    return files


def _record(line: str) -> DumpRecord:
    m = _RECORD_META.match(line)
    if not m:
        raise ValueError(f"unrecognised record line: {line[:120]}")
    meta, rest = m.group(1), m.group(2)
    fields = dict(_KV.findall(meta))
    off = int(fields["offset"])
    rest = rest.strip()
    if rest.startswith("payload: "):
        return DumpRecord(off, fields, "payload", None, rest[len("payload: "):])
    if rest.startswith("controlType: "):
        return DumpRecord(off, fields, "control", "controlType", rest[len("controlType: "):])
    if m2 := re.match(r"^(\w+):? (\{.*)$", rest):
        return DumpRecord(off, fields, "control", m2.group(1), m2.group(2))
    if rest.startswith("Error at") or "skipping" in rest:
        return DumpRecord(off, fields, "error", None, rest)
    return DumpRecord(off, fields, "none", None, rest or None)


def compare(batches, dump: DumpFile) -> list[str]:
    """Differences between our decoding of one file (``LogReader.batches()`` as a list) and what
    DumpLogSegments printed for it. An empty list means they agree field by field."""
    from services.kraft import ControlRecord, MetadataRecord, UnknownRecord

    diffs: list[str] = []
    if len(batches) != len(dump.batches):
        diffs.append(f"{dump.path}: {len(batches)} batches decoded, tool printed {len(dump.batches)}")
    for (b, recs), db in zip(batches, dump.batches):
        where = f"{dump.path} batch@{b.base_offset}"
        expect = {
            "baseOffset": b.base_offset, "lastOffset": b.last_offset, "count": b.count,
            "partitionLeaderEpoch": b.leader_epoch, "isControl": str(b.is_control).lower(),
            "isTransactional": str(b.is_transactional).lower(), "position": b.position,
            b.timestamp_type: b.max_timestamp, "size": b.size, "crc": b.crc,
            "compresscodec": b.compression_name,
        }
        for k, v in expect.items():
            if db.fields.get(k) != str(v):
                diffs.append(f"{where}: {k} ours={v} tool={db.fields.get(k)}")
        if len(recs) != len(db.records):
            diffs.append(f"{where}: {len(recs)} records decoded, tool printed {len(db.records)}")
        for r, dr in zip(recs, db.records):
            rw = f"{where} offset {r.offset}"
            if str(r.offset) != dr.fields.get("offset"):
                diffs.append(f"{rw}: tool offset {dr.fields.get('offset')}")
            if str(r.timestamp) != dr.fields.get(b.timestamp_type):
                diffs.append(f"{rw}: timestamp ours={r.timestamp} tool={dr.fields.get(b.timestamp_type)}")
            if dr.kind == "payload":
                if not isinstance(r, MetadataRecord):
                    diffs.append(f"{rw}: tool decoded {dr.text[:80]}, we have {r!r}")
                elif r.to_json() != dr.text:
                    diffs.append(f"{rw}: JSON differs\n  ours: {r.to_json()}\n  tool: {dr.text}")
            elif dr.kind == "control":
                if not isinstance(r, ControlRecord):
                    diffs.append(f"{rw}: tool printed control {dr.label}, we have {r!r}")
                elif dr.label == "controlType":  # 3.9 prints LEADER_CHANGE(2) without content
                    if dr.text != f"{r.enum_name}({r.control_type})":
                        diffs.append(f"{rw}: control type ours={r.enum_name} tool={dr.text}")
                elif dr.label != r.type or r.to_json() != dr.text:
                    diffs.append(f"{rw}: control differs\n  ours: {r.type} {r.to_json()}\n"
                                 f"  tool: {dr.label} {dr.text}")
            elif dr.kind == "error" and not isinstance(r, UnknownRecord):
                diffs.append(f"{rw}: tool could not decode ({dr.text}), we decoded {r!r}")
    return diffs
