"""ZooKeeper's own files (transaction logs, snapshots) as Kafka's ZooKeeper-mode controller wrote them."""

from .errors import CorruptTxnError, NotAZooKeeperFileError, TruncatedTxnError, ZooKeeperFileError
from .records import OP_NAMES, Op, Txn, decode_txn
from .txnlog import SkippedTxns, TxnLogReader, log_start_zxid, read_txn_log, snapshot_zxid, txn_logs

__all__ = ["OP_NAMES", "CorruptTxnError", "NotAZooKeeperFileError", "Op", "SkippedTxns", "TruncatedTxnError",
           "Txn", "TxnLogReader", "ZooKeeperFileError", "decode_txn", "log_start_zxid", "read_txn_log",
           "snapshot_zxid", "txn_logs"]
