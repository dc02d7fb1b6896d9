"""Metadata transactions (BeginTransaction / EndTransaction / AbortTransaction, MV >= 3.6-IV1),
buffered the way Kafka's MetadataBatchLoader does: records between Begin and End are held back
and released together at End; at Abort they are discarded (Kafka publishes an empty delta).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

from .errors import TransactionError
from .records import MetadataRecord, Record

BEGIN, END, ABORT = 23, 24, 25


@dataclass
class AbortedTransaction:
    begin: MetadataRecord
    records: list[Record]
    abort: MetadataRecord

    @property
    def name(self) -> str | None:
        return self.begin.data.get("name")

    @property
    def reason(self) -> str | None:
        return self.abort.data.get("reason")


@dataclass
class TransactionBuffer:
    """Feed records in log order; ``feed`` returns those that are now committed.

    Records outside a transaction pass straight through. The Begin and End markers are released
    with the records they enclose, so consumers can see the boundaries; an aborted transaction's
    records (markers included) end up in ``aborted``. Control records never open or close a
    transaction and pass through.
    """

    pending: list[Record] = field(default_factory=list)
    begin: MetadataRecord | None = None
    aborted: list[AbortedTransaction] = field(default_factory=list)

    @property
    def in_transaction(self) -> bool:
        return self.begin is not None

    def feed(self, rec: Record) -> list[Record]:
        key = rec.api_key if isinstance(rec, MetadataRecord) else None
        if key == BEGIN:
            if self.begin is not None:
                raise self._error(rec, "BeginTransactionRecord inside the transaction begun at "
                                       f"offset {self.begin.offset}")
            self.begin = cast(MetadataRecord, rec)  # key is set for metadata records only
            self.pending = [rec]
            return []
        if key == END or key == ABORT:
            if self.begin is None:
                what = "EndTransactionRecord" if key == END else "AbortTransactionRecord"
                raise self._error(rec, f"{what} without a BeginTransactionRecord")
            batch, begin = self.pending, self.begin
            self.pending, self.begin = [], None
            if key == END:
                batch.append(rec)
                return batch
            self.aborted.append(AbortedTransaction(begin, batch[1:], cast(MetadataRecord, rec)))
            return []
        if self.begin is not None:
            self.pending.append(rec)
            return []
        return [rec]

    def feed_all(self, records: Iterable[Record]) -> list[Record]:
        out: list[Record] = []
        for r in records:
            out += self.feed(r)
        return out

    @staticmethod
    def _error(rec: Record, msg: str) -> TransactionError:
        return TransactionError(msg, file=rec.file, position=rec.position,
                                batch_offset=rec.batch_offset, record_offset=rec.offset)
