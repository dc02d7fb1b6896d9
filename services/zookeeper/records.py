"""ZooKeeper transactions as jute writes them (``zookeeper.jute``: TxnHeader, CreateTxn, DeleteTxn,
SetDataTxn, CheckVersionTxn, ErrorTxn, MultiTxn, Txn, CreateSessionTxn, CloseSessionTxn, TxnDigest).

A ``Txn`` is the header plus the operations it applied, in order: one for a plain write, every
sub-operation for a ``multi`` (how Kafka's controller writes: ``check /controller_epoch`` at the version
it owns, then the create/setData, so ZooKeeper itself fences a stale controller). A ``multi`` that
failed is kept too: its sub-operations are ``error`` entries, which is exactly the fencing evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

from .jute import JuteReader

# ZooDefs.OpCode -> Request.op2String (the names TxnLogToolkit prints)
OP_NAMES = {
    0: "notification", 1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData", 6: "getACL",
    7: "setACL", 8: "getChildren", 9: "sync", 11: "ping", 12: "getChildren2", 13: "check", 14: "multi",
    15: "create2", 16: "reconfig", 17: "checkWatches", 18: "removeWatches", 19: "createContainer",
    20: "deleteContainer", 21: "createTTL", 22: "multiRead", 100: "auth", 101: "setWatches", 102: "sasl",
    103: "getEphemerals", 104: "getAllChildrenNumber", 105: "setWatches2", 106: "addWatch", 107: "whoAmI",
    -10: "createSession", -11: "closeSession", -1: "error",
}
_CREATES = {1, 15, 19, 21}  # CreateTxn (create, create2), CreateContainerTxn, CreateTTLTxn


@dataclass(frozen=True)
class Op:
    """One change a transaction applied (or, for ``error``, failed to apply)."""

    kind: str  # OP_NAMES
    path: str | None = None
    data: bytes | None = None
    version: int | None = None  # setData: the znode's new version; check: the version required
    ephemeral: bool = False
    error: int | None = None  # error: KeeperException code (-101 no node, -103 bad version, ...)
    session_timeout: int | None = None  # createSession
    ttl: int | None = None  # createTTL
    # closeSession: the session's ephemeral znodes it removed (CloseSessionTxn); None when the server logged no
    # record (before ZooKeeper 3.6, e.g. Kafka 2.x's 3.5.x): the reader must know which ephemerals were the session's
    deleted: tuple[str, ...] | None = ()


@dataclass(frozen=True)
class Txn:
    """One logged transaction: TxnHeader, its operations, and where it sits in its file."""

    session: int  # TxnHeader.clientId
    cxid: int
    zxid: int  # high 32 bits: the ZooKeeper leader epoch; low 32: the counter within it
    time: int  # epoch millis, the leader's clock
    type: int  # ZooDefs.OpCode of the whole transaction (14 for a multi)
    ops: tuple[Op, ...]
    file: str = ""
    position: int = 0  # of the entry's checksum in the file
    digest: tuple[int, int] | None = None  # TxnDigest (version, tree digest) when logged

    @property
    def kind(self) -> str:
        return OP_NAMES.get(self.type, str(self.type))


def _acls(r: JuteReader) -> None:
    for _ in range(r.count()):  # ACL {int perms; Id {ustring scheme; ustring id}}: read past, not kept
        r.int()
        r.ustring()
        r.ustring()


def decode_op(op_type: int, r: JuteReader) -> Op:
    """The record of one operation of ``op_type`` (a whole transaction's, or a multi's sub-``Txn``)."""
    kind = OP_NAMES.get(op_type, str(op_type))
    if op_type in _CREATES:
        path, data = r.ustring(), r.buffer()
        _acls(r)
        ephemeral = r.bool() if op_type in (1, 15) else False
        r.int()  # parentCVersion
        ttl = r.long() if op_type == 21 else None
        return Op(kind, path, data, ephemeral=ephemeral, ttl=ttl)
    if op_type in (2, 20):  # DeleteTxn
        return Op(kind, r.ustring())
    if op_type in (5, 16):  # SetDataTxn (reconfig writes one to /zookeeper/config)
        path, data = r.ustring(), r.buffer()
        return Op(kind, path, data, version=r.int())
    if op_type == 13:  # CheckVersionTxn
        path = r.ustring()
        return Op(kind, path, version=r.int())
    if op_type == 7:  # SetACLTxn
        path = r.ustring()
        _acls(r)
        return Op(kind, path, version=r.int())
    if op_type == -1:  # ErrorTxn
        return Op(kind, error=r.int())
    if op_type == -10:  # CreateSessionTxn
        return Op(kind, session_timeout=r.int())
    if op_type == -11:  # CloseSessionTxn (paths2Delete) when logged; older servers log no record
        if r.remaining() not in (0, 12):  # 12: no record, only the TxnDigest
            return Op(kind, deleted=tuple(r.ustring() or "" for _ in range(r.count())))
        return Op(kind, deleted=None)
    raise ValueError(f"transaction type {op_type} ({kind}) is not one ZooKeeper logs")


def decode_txn(body: bytes | memoryview, *, file: str = "", position: int = 0) -> Txn:
    """TxnHeader {long clientId; int cxid; long zxid; long time; int type}, the type's record, then an
    optional TxnDigest {int version; long treeDigest} (logged since 3.6 when digests are enabled)."""
    r = JuteReader(body)
    session, cxid, zxid, time, op_type = r.long(), r.int(), r.long(), r.long(), r.int()
    if op_type == 14:  # MultiTxn {vector<Txn {int type; buffer data}>}
        ops = []
        for _ in range(r.count()):
            sub_type, sub = r.int(), r.buffer() or b""
            sr = JuteReader(sub)
            ops.append(decode_op(sub_type, sr))
        ops_t = tuple(ops)
    else:
        ops_t = (decode_op(op_type, r),)
    digest = (r.int(), r.long()) if r.remaining() >= 12 else None
    if r.remaining():
        raise ValueError(f"{r.remaining()} bytes after the {OP_NAMES.get(op_type, op_type)} record")
    return Txn(session, cxid, zxid, time, op_type, ops_t, file, position, digest)
