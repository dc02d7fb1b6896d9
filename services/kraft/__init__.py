"""Decoder for the KRaft metadata log: ``__cluster_metadata-0`` segments and ``.checkpoint``
snapshots, record batch v2 (CRC-32C, every codec), metadata records of every apiKey/version of
Kafka 3.9 and 4.x, control records, and metadata transactions.

    from services.kraft import LogReader
    for rec in LogReader(path):
        print(rec.offset, rec.leader_epoch, rec.type, rec.data)
"""

from .batch import Batch, build_batch, read_batch
from .control import ControlRecord
from .errors import (CompressionError, CorruptBatchError, KRaftError, NotAKafkaLogError,
                     RecordDecodeError, TransactionError, TruncatedLogError,
                     UnsupportedFormatError)
from .files import (LogReader, PartialTail, SkippedRange, SnapshotId, metadata_files,
                    read_records, snapshot_id)
from .messages import CATALOGUE, UNKNOWN_TAGS
from .records import MetadataRecord, Record, UnknownRecord
from .transactions import AbortedTransaction, TransactionBuffer

__all__ = [
    "CATALOGUE", "UNKNOWN_TAGS", "AbortedTransaction", "Batch", "CompressionError",
    "ControlRecord", "CorruptBatchError", "KRaftError", "LogReader", "MetadataRecord",
    "NotAKafkaLogError", "PartialTail", "Record", "RecordDecodeError", "SkippedRange",
    "SnapshotId", "TransactionBuffer", "TransactionError", "TruncatedLogError", "UnknownRecord",
    "UnsupportedFormatError", "build_batch", "metadata_files", "read_batch", "read_records",
    "snapshot_id",
]
