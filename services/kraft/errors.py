"""Exceptions for bad input. Each names the file, the batch base offset and the byte position
where that is known, and renders as one line, so a CLI can print ``str(err)`` and stop."""

from __future__ import annotations

from typing import TypedDict, Unpack

from schemas.errors import ContractError


class KRaftError(ContractError):
    """Base class: something in a KRaft log or snapshot file could not be read (bad input: the
    project's ContractError, so every entry point says it in one line)."""

    def __init__(self, message: str, *, file: str | None = None, position: int | None = None,
                 batch_offset: int | None = None, record_offset: int | None = None) -> None:
        self.reason = message
        self.file = file
        self.position = position
        self.batch_offset = batch_offset
        self.record_offset = record_offset
        super().__init__(self._line())

    def _line(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.batch_offset is not None:
            where.append(f"batch at offset {self.batch_offset}")
        if self.record_offset is not None:
            where.append(f"record offset {self.record_offset}")
        if self.position is not None:
            where.append(f"byte position {self.position}")
        return (", ".join(where) + ": " if where else "") + self.reason


class _Where(TypedDict, total=False):
    """KRaftError's keyword arguments: where in the input the error is."""

    file: str | None
    position: int | None
    batch_offset: int | None
    record_offset: int | None


class NotAKafkaLogError(KRaftError):
    """The file does not start with a v2 record batch (wrong file, or not a Kafka log at all)."""


class CorruptBatchError(KRaftError):
    """A record batch failed its CRC-32C check or its framing is inconsistent."""


class TruncatedLogError(KRaftError):
    """The file ends inside a batch. On a live active segment this is only "wait for more";
    ``files.LogReader(..., live=True)`` reports it as ``partial_tail`` instead of raising."""

    def __init__(self, message: str, *, missing: int | None = None, **kw: Unpack[_Where]) -> None:
        self.missing = missing
        super().__init__(message, **kw)


class UnsupportedFormatError(KRaftError):
    """Valid Kafka data this decoder does not handle (e.g. magic 0/1 message sets)."""


class CompressionError(KRaftError):
    """A compressed batch could not be decompressed, or its codec's Python package is missing."""


class RecordDecodeError(KRaftError):
    """A record value did not match its schema (bad frame, truncated field, trailing bytes)."""


class TransactionError(KRaftError):
    """Begin/End/Abort transaction records out of order (as MetadataBatchLoader rejects them)."""
