"""Reading ZooKeeper snapshots, ``dataDir/version-2/snapshot.<zxid, hex>`` (FileSnap, uncompressed).

Layout (FileSnap.serialize / SerializeUtils / DataTree.serialize): FileHeader {int magic "ZKSN"; int version
2; long dbid}; the sessions (int count, then per session long id, int timeout); the ACL cache (int count,
then per entry long id and vector<ACL>); the nodes, each ``ustring path`` and DataNode {buffer data; long
acl; StatPersisted {long czxid, mzxid, ctime, mtime; int version, cversion, aversion; long ephemeralOwner,
pzxid}}, until the path "/"; then the seal: ``long`` Adler32 of everything before it and the string "/".
What may follow (the zxid digest, the last processed zxid, each sealed again) is not needed here.

A snapshot is fuzzy: it was written while transactions went on, so it holds every transaction up to the
zxid in its name and maybe some after; replaying the log from that zxid + 1 over it gives the true tree
(as ZooKeeper itself does at start-up).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

from .errors import CorruptTxnError, NotAZooKeeperFileError
from .jute import JuteError, JuteReader
from .txnlog import FILE_VERSION, HEADER, LOG_MAGIC, SNAP_MAGIC, snapshot_zxid


@dataclass(frozen=True)
class Znode:
    path: str
    data: bytes | None
    version: int  # of the data: Kafka's zkVersion for a partition state
    czxid: int
    mzxid: int
    mtime: int
    ephemeral_owner: int


@dataclass(frozen=True)
class Snapshot:
    file: str
    zxid: int  # from the file name: every transaction up to it is in
    dbid: int
    nodes: tuple[Znode, ...]  # in file order (a parent before its children)

    @property
    def last_mtime(self) -> int:
        return max((n.mtime for n in self.nodes), default=0)


def read_snapshot(path: Path | str) -> Snapshot:
    path = Path(path)
    name = str(path)
    zxid = snapshot_zxid(path)
    if path.suffix in (".gz", ".snappy"):
        raise NotAZooKeeperFileError(f"compressed snapshots ({path.suffix}) are not read; "
                                     f"decompress it to snapshot.{zxid or 0:x} first", file=name)
    buf = path.read_bytes()
    if len(buf) < HEADER.size:
        raise NotAZooKeeperFileError(f"{len(buf)} bytes, shorter than the 16-byte file header", file=name, position=0)
    magic, version, dbid = HEADER.unpack_from(buf, 0)
    if magic != SNAP_MAGIC:
        what = "a ZooKeeper transaction log" if magic == LOG_MAGIC else f"magic {magic:#010x}"
        raise NotAZooKeeperFileError(f"not a ZooKeeper snapshot ({what}, expected ZKSN)", file=name, position=0)
    if version != FILE_VERSION:
        raise NotAZooKeeperFileError(f"snapshot format version {version}, expected 2", file=name, position=4)
    r = JuteReader(buf, HEADER.size)
    nodes = []
    try:
        for _ in range(r.count()):  # sessions
            r.long()
            r.int()
        for _ in range(r.int()):  # the ACL cache
            r.long()
            for _ in range(r.count()):
                r.int()
                r.ustring()
                r.ustring()
        while True:
            p = r.ustring()
            if p == "/":
                break
            data, _ = r.buffer(), r.long()
            czxid, mzxid, _ctime, mtime = r.long(), r.long(), r.long(), r.long()
            version, _cversion, _aversion = r.int(), r.int(), r.int()
            owner, _pzxid = r.long(), r.long()
            nodes.append(Znode(p or "/", data, version, czxid, mzxid, mtime, owner))
        sealed_at = r.pos
        stored = r.long()
    except JuteError as e:
        raise CorruptTxnError(f"snapshot does not parse: {e}", file=name, position=r.pos) from None
    actual = zlib.adler32(buf[:sealed_at])
    if stored != actual:
        raise CorruptTxnError(f"snapshot Adler32 checksum mismatch: stored {stored:#x}, computed {actual:#x}",
                              file=name, position=sealed_at)
    return Snapshot(name, zxid if zxid is not None else -1, dbid, tuple(nodes))
