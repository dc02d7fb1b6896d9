"""The state model's one error: an event that does not fit the image it is applied to."""
from __future__ import annotations

from schemas.errors import ContractError


class ReplayError(ContractError):
    """An event that does not fit the image it is applied to.

    Carries where it failed (seq, event id, source offset, topic-partition, payload type) and a
    reason that names the conflicting values, e.g. "before.leader_epoch=4 but image has 5".
    """

    def __init__(
        self,
        reason: str,
        *,
        seq: int | None = None,
        event_id: str | None = None,
        source_offset: int | None = None,
        partition: str | None = None,
        record_type: str | None = None,
    ) -> None:
        self.reason = reason
        self.seq = seq
        self.event_id = event_id
        self.source_offset = source_offset
        self.partition = partition
        self.record_type = record_type
        where = [f"seq {seq}"]
        if event_id:
            where.append(f"event {event_id}")
        if source_offset is not None:
            where.append(f"source offset {source_offset}")
        if partition:
            where.append(partition)
        if record_type:
            where.append(record_type)
        super().__init__(f"replay failed at {', '.join(where)}: {reason}")
