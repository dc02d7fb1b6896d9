"""KRaft control records (control batches, attribute bit 5).

Key = int16 version (0) + int16 type. The value is the message body alone: no frame, no
apiKey/version prefix; its first field is an int16 ``Version``. Kafka reads every type at
schema version 0 (the *_CURRENT_VERSION constants of ControlRecordUtils), so do we.
"""

from __future__ import annotations

import struct
from typing import Any

from .batch import Batch, iter_raw_records
from .errors import RecordDecodeError
from .fields import Message
from .messages import CATALOGUE, DecodeFailure, MessageVersion
from .records import Record, dumps
from .wire import Buf, VarintError

# type id -> (name DumpLogSegments prints, schema name)
CONTROL_TYPES: dict[int, tuple[str, str | None]] = {
    0: ("Abort", None),   # producer-transaction markers: never in the metadata log
    1: ("Commit", None),
    2: ("LeaderChange", "LeaderChangeMessage"),
    3: ("SnapshotHeader", "SnapshotHeaderRecord"),
    4: ("SnapshotFooter", "SnapshotFooterRecord"),
    5: ("KRaftVersion", "KRaftVersionRecord"),
    6: ("KRaftVoters", "VotersRecord"),
}
ENUM_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
              4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
_KEY = struct.Struct(">hh")


class ControlRecord(Record):
    """A decoded control record; ``data`` is None for a type this decoder does not know."""

    __slots__ = ("control_type", "key_version", "mv", "data", "value")

    def __init__(self, offset: int, timestamp: int, batch: Batch, control_type: int,
                 key_version: int, mv: MessageVersion | None, data: Message | None, value: bytes) -> None:
        Record.__init__(self, offset, timestamp, batch)
        self.control_type = control_type
        self.key_version = key_version
        self.mv = mv
        self.data = data
        self.value = value

    @property
    def type(self) -> str:
        """``LeaderChange``, ``SnapshotHeader``, ... (the label DumpLogSegments prints)."""
        return CONTROL_TYPES.get(self.control_type, ("Unknown", None))[0]

    @property
    def enum_name(self) -> str:
        return ENUM_NAMES.get(self.control_type, "UNKNOWN")

    def to_dict(self) -> dict[str, Any] | None:
        return None if self.mv is None or self.data is None else self.mv.render(self.data)

    def to_json(self) -> str | None:
        d = self.to_dict()
        return None if d is None else dumps(d)

    def __repr__(self) -> str:
        return f"ControlRecord(offset={self.offset}, {self.type}, {self.data})"


def decode_control(b: Batch, key: bytes | None, value: bytes | None, offset: int,
                   timestamp: int) -> ControlRecord:
    if key is None or len(key) < 4:
        raise RecordDecodeError("control record key is not 4 bytes", file=b.file,
                                position=b.position, batch_offset=b.base_offset,
                                record_offset=offset)
    key_version, ctype = _KEY.unpack_from(key)
    if key_version < 0:
        raise RecordDecodeError(f"negative control record key version {key_version}",
                                file=b.file, position=b.position, batch_offset=b.base_offset,
                                record_offset=offset)
    schema = CONTROL_TYPES.get(ctype, (None, None))[1]
    if schema is None or value is None:
        return ControlRecord(offset, timestamp, b, ctype, key_version, None, None, value or b"")
    mv = CATALOGUE[(schema, 0)]
    try:
        data, pos = mv.decode(value, 0, len(value))
        if pos != len(value):
            raise DecodeFailure(f"{len(value) - pos} byte(s) of garbage after {schema}")
    except (DecodeFailure, IndexError, struct.error, VarintError, UnicodeDecodeError) as e:
        raise RecordDecodeError(f"cannot decode {schema}: {e}", file=b.file, position=b.position,
                                batch_offset=b.base_offset, record_offset=offset) from None
    return ControlRecord(offset, timestamp, b, ctype, key_version, mv, data, value)


def decode_control_batch(buf: Buf, b: Batch) -> list[Record]:
    """The control records of a batch; their framing read and bounded as every batch's (iter_raw_records)."""
    return [decode_control(b, r.key, r.value, r.offset, r.timestamp) for r in iter_raw_records(buf, b)]
