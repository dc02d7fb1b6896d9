"""Live capture from ZooKeeper: watches on a ZooKeeper-mode Kafka cluster's controller znodes (kazoo), turned
into the transactions and snapshots ZooKeeper's own files hold, so that the one ZooKeeper normalizer
(services.zookeeper.normalizer) makes the same ControllerEvents from both.

What it watches: ``/controller``, ``/controller_epoch``, ``/brokers/ids/*``, ``/brokers/topics/*`` (the
assignment with adding and removing replicas), every ``/brokers/topics/*/partitions/*/state`` (LeaderAndIsr,
its znode version = the partition epoch), ``/config/topics/*`` and ``/config/brokers/*``.

ZooKeeper watches fire once and carry no data: a watcher reads the znode again and may find a later version
than the one that fired. Four rules keep that honest:

* **Order.** Kafka's state is the znodes joined, so changes are applied in zxid order. ZooKeeper sends a
  session's notifications in order and before any reply that shows a later state; `poll` reads what was
  notified, then waits for kazoo's callback queue to run everything queued before (a barrier), reads again
  what that brought, and so on until nothing is pending; the changes it saw are then sorted by zxid, the
  ones of one zxid forming one transaction (the controller's multis: ``/controller`` with
  ``/controller_epoch``).
* **Skipped versions are gaps.** A znode read at version v+2 after v: version v+1 was never seen; the
  stretch of zxids in between is a ``gap``, never a silent hole. A deleted znode's zxid is its parent's
  pzxid (the last change of the parent's children).
* **A znode deleted and created again between two reads is a gap, its delete and its create** (a topic made
  again, a broker registered again): its parent's children read the same, its czxid tells. Never a setData
  from one incarnation to the next. (/controller excepted: the time without one is no state.) Children that
  came and went unseen, and deletions that were not the one change of their parent since it was read, are
  gaps too: the parent's cversion counts its children's creates and deletes.
* **A lost session is a gap, then a new snapshot.** Its watches are gone: when the client reconnects with a
  new session the whole tree is read again as a snapshot (the normalizer replaces its state with it), and
  the zxids between the last change applied and that snapshot are a gap. The same happens when a change
  turns up out of order (a zxid at or below one already applied).
"""
from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from schemas.errors import ContractError
from schemas.gap_reasons import skipped_versions_reason
from services.zookeeper.records import Op, Txn
from services.zookeeper.snapshot import Snapshot, Znode

log = logging.getLogger(__name__)

TOPICS, BROKERS, TOPIC_CONFIGS = "/brokers/topics", "/brokers/ids", "/config/topics"
BROKER_CONFIGS = "/config/brokers"  # <id> and <default>: a dynamic unclean.leader.election.enable lives there
SINGLE = ("/controller_epoch", "/controller")  # in this order: the epoch first (the normalizer reads it)
LIVE = "zookeeper-live"  # the `file` of what the watcher read (events name it as their source file)


class ZooKeeperUnusable(ContractError):
    """A ZooKeeper that does not answer, or holds no Kafka cluster where we were pointed."""


@dataclass(frozen=True)
class Gap:
    """zxids from_zxid..to_zxid of some znodes were not seen. Positioned where the watch learnt it
    (`at_zxid`: the read that found the skip, or the snapshot after a lost session), never before what was
    already handed out, so that positions only rise and "as of zxid N" stays a prefix of the history."""

    from_zxid: int
    to_zxid: int
    reason: str
    time_ms: int
    at_zxid: int


Item = Snapshot | Txn | Gap


class ZnodeStat(Protocol):
    """A znode's stat as the watch reads it (kazoo's ZnodeStat)."""

    @property
    def czxid(self) -> int: ...
    @property
    def mzxid(self) -> int: ...
    @property
    def mtime(self) -> int: ...
    @property
    def version(self) -> int: ...
    @property
    def ephemeralOwner(self) -> int: ...  # ZooKeeper's (and kazoo's) name
    @property
    def pzxid(self) -> int: ...
    @property
    def cversion(self) -> int: ...


Watcher = Callable[[object], None]  # a one-shot watch: called with kazoo's WatchedEvent


class CallbackHandler(Protocol):
    def dispatch_callback(self, callback: object) -> object: ...


class ZooKeeperClient(Protocol):
    """What the watch uses of kazoo's KazooClient."""

    @property
    def client_id(self) -> tuple[int, bytes] | None: ...
    @property
    def handler(self) -> CallbackHandler: ...
    def start(self, timeout: float = ...) -> None: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...
    def add_listener(self, listener: Callable[[object], None]) -> None: ...
    def get(self, path: str, watch: Watcher | None = ...) -> tuple[bytes | None, ZnodeStat]: ...
    def exists(self, path: str, watch: Watcher | None = ...) -> ZnodeStat | None: ...
    def get_children(self, path: str, watch: Watcher | None = ...,
                     include_data: Literal[True] = ...) -> tuple[list[str], ZnodeStat]: ...  # as the watch calls it


@dataclass
class _Seen:
    version: int
    mzxid: int
    czxid: int  # another one when read again: the znode was deleted and created again in between


class ZooKeeperWatch:
    """Poll for what changed; not thread-safe (kazoo's threads only add to `_pending`)."""

    def __init__(self, hosts: str, client: ZooKeeperClient | None = None, timeout: float = 15.0,
                 clock: Callable[[], int] | None = None) -> None:
        if client is None:
            from kazoo.client import KazooClient  # extra: capture

            client = KazooClient(hosts=hosts, timeout=timeout)
        self.client = client
        self.hosts = hosts
        self.timeout = timeout
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.last_zxid = 0  # the last zxid handed out (a snapshot's, a transaction's)
        self._pending: set[tuple[str, str]] = set()  # ("data" | "children", path) notified, not read yet
        self._lock = threading.Lock()
        self._seen: dict[str, _Seen] = {}
        self._children: dict[str, set[str]] = {}
        self._parents: dict[str, tuple[int, int]] = {}  # path -> (pzxid, cversion) when its children were read
        self._session: int | None = None
        self._resync: str | None = "first read"  # why the next poll reads the whole tree
        self._mtime: dict[int, int] = {}  # zxid -> its time (a znode's mtime), for the transactions

    def resume_after(self, zxid: int) -> None:
        """Continue a capture whose last raw record was at `zxid`: the first poll reads a snapshot, and what
        changed in between (zxid+1 up to it) is a gap."""
        self.last_zxid = zxid
        self._resync = "the capture restarted"

    def cluster_id(self) -> str | None:
        """Kafka's cluster id: the /cluster/id znode ({"version": "1", "id": ...}); None without one."""
        try:
            data, _ = self.client.get("/cluster/id")
            found = json.loads(data or b"{}").get("id")
        except Exception:  # noqa: BLE001 - no such znode, or not JSON: the caller names the cluster itself
            return None
        return found if isinstance(found, str) and found else None

    # --- connection ------------------------------------------------------------------------------

    def require_kafka(self) -> None:
        """Started and holding a Kafka cluster's znodes (/brokers/ids), else ZooKeeperUnusable, one line."""
        from kazoo.handlers.threading import KazooTimeoutError  # extra: capture

        quiet = logging.getLogger("kazoo")
        level, quiet.level = quiet.level, logging.CRITICAL  # its retry warnings: the one line below says it
        try:
            self.start()
        except KazooTimeoutError:
            raise ZooKeeperUnusable(f"cannot reach ZooKeeper at {self.hosts} within {self.timeout:g} s") from None
        finally:
            quiet.setLevel(level)
        if not self.client.exists(BROKERS):
            self.stop()
            raise ZooKeeperUnusable(f"no Kafka cluster in ZooKeeper at {self.hosts}: no {BROKERS} znode "
                                    "(the chroot, as in zookeeper.connect: HOST:PORT/chroot?)")

    def start(self) -> None:
        self.client.start(timeout=self.timeout)
        self.client.add_listener(self._on_state)

    def stop(self) -> None:
        self.client.stop()
        self.client.close()

    def _on_state(self, state: object) -> None:
        if str(state) == "LOST":  # the session expired: its watches are gone
            self._resync = "the ZooKeeper session expired (its watches with it)"

    # --- watches -----------------------------------------------------------------------------------

    def _data_watch(self, path: str) -> Watcher:
        def fired(event: object) -> None:
            with self._lock:
                self._pending.add(("data", path))
        return fired

    def _children_watch(self, path: str) -> Watcher:
        def fired(event: object) -> None:
            with self._lock:
                self._pending.add(("children", path))
        return fired

    def _barrier(self) -> None:
        """Wait until kazoo's callback queue has run what it held: the notifications ZooKeeper sent before
        the replies already read are then in `_pending`."""
        from kazoo.protocol.states import Callback  # extra: capture

        done = threading.Event()
        self.client.handler.dispatch_callback(Callback("watch", done.set, ()))
        done.wait(self.timeout)

    # --- reading -----------------------------------------------------------------------------------

    # A znode created between a read that found none and the exists() after it: exists() then returns its
    # stat and sets a data watch, which never fires for its children and missed the data it was created with,
    # so the read is tried again. Without that, a new topic whose partitions/ the controller created in that
    # instant (it reacts to the same topic as the watch) was never watched below it: its partitions silently
    # missing; the likely cause of the demo-zk test timing out in CI of 336b0dd.

    def _get(self, path: str) -> tuple[bytes | None, ZnodeStat] | None:
        """(data, stat) with a data watch set; None when the znode does not exist (an exists watch set)."""
        from kazoo.exceptions import NoNodeError  # extra: capture

        while True:
            try:
                return self.client.get(path, watch=self._data_watch(path))
            except NoNodeError:
                if self.client.exists(path, watch=self._data_watch(path)) is None:
                    return None

    def _kids(self, path: str) -> tuple[set[str], int]:
        """(children, the parent's pzxid) with a child watch set; (empty, 0) when the parent does not exist
        (an exists watch set: its creation fires it). Its (pzxid, cversion) kept for the next read."""
        from kazoo.exceptions import NoNodeError  # extra: capture

        while True:
            try:
                names, stat = self.client.get_children(path, watch=self._children_watch(path), include_data=True)
            except NoNodeError:
                if self.client.exists(path, watch=self._children_watch(path)) is None:
                    return set(), 0
                continue
            self._parents[path] = (stat.pzxid, stat.cversion)
            return set(names), stat.pzxid

    def _tree(self) -> tuple[list[tuple[str, bytes | None, ZnodeStat]], int]:
        """Every watched znode (path, data, stat), watches set, and the highest zxid the reads showed."""
        out: list[tuple[str, bytes | None, ZnodeStat]] = []
        top = 0

        def node(path: str) -> None:
            nonlocal top
            got = self._get(path)
            if got is not None:
                out.append((path, got[0], got[1]))
                top = max(top, got[1].mzxid, got[1].czxid)

        def parent(path: str) -> set[str]:
            nonlocal top
            names, pzxid = self._kids(path)
            self._children[path] = names
            top = max(top, pzxid)
            return names

        for path in SINGLE:
            node(path)
        for b in sorted(parent(BROKERS), key=_num):
            node(f"{BROKERS}/{b}")
        for t in sorted(parent(TOPICS)):
            node(f"{TOPICS}/{t}")
            for p in sorted(parent(f"{TOPICS}/{t}/partitions"), key=_num):
                if "state" in parent(f"{TOPICS}/{t}/partitions/{p}"):
                    node(f"{TOPICS}/{t}/partitions/{p}/state")
        for parent_path in (TOPIC_CONFIGS, BROKER_CONFIGS):
            for t in sorted(parent(parent_path)):
                node(f"{parent_path}/{t}")
        return out, top

    # --- polling -----------------------------------------------------------------------------------

    def poll(self) -> list[Item]:
        """What changed since the last poll, in zxid order: a Snapshot (first, and after a lost session or an
        out-of-order change), Gaps, Txns."""
        session = self.client.client_id[0] if self.client.client_id else None
        if self._session is not None and session != self._session and self._resync is None:
            self._resync = "a new ZooKeeper session (the old one's watches are gone)"
        if self._resync is not None:
            return self._snapshot(self._resync)
        ops: list[tuple[int, int, Op]] = []  # (zxid, order within the zxid, op)
        gaps: list[Gap] = []
        while True:
            with self._lock:
                todo, self._pending = self._pending, set()
            if not todo:
                break
            for kind, path in sorted(todo, key=lambda kp: (kp[0] != "children", kp[1])):
                (self._read_children if kind == "children" else self._read_data)(path, ops, gaps)
            self._barrier()
        late = [z for z, _, _ in ops if z <= self.last_zxid]
        if late:
            return self._snapshot(f"a change at zxid {min(late):#x} turned up after zxid {self.last_zxid:#x} was "
                                  "applied")
        by_zxid: dict[int, list[tuple[int, Op]]] = {}
        for zxid, order, op in ops:
            by_zxid.setdefault(zxid, []).append((order, op))
        # each gap just before the transaction whose read found it; a skip inside one zxid (two writes of a
        # znode in one multi) hides no state: not a gap. Gaps found at one zxid are one (a topic made again
        # shows in its parent's children and in its own czxid): the stretch both cover.
        at: dict[int, Gap] = {}
        for g in (g for g in gaps if g.to_zxid >= g.from_zxid):
            had = at.get(g.at_zxid)
            at[g.at_zxid] = g if had is None else Gap(min(had.from_zxid, g.from_zxid), max(had.to_zxid, g.to_zxid),
                                                      f"{had.reason}; {g.reason}", had.time_ms, g.at_zxid)
        positioned: list[tuple[int, int, Item]] = [(g.at_zxid, 0, g) for g in at.values()]
        for zxid in by_zxid:
            these = [op for _, op in sorted(by_zxid[zxid], key=lambda o: o[0])]
            positioned.append((zxid, 1, Txn(0, 0, zxid, self._mtime.pop(zxid, self.clock()),
                                            14 if len(these) > 1 else 5, tuple(these), LIVE)))
        out: list[Item] = [item for _, _, item in sorted(positioned, key=lambda p: (p[0], p[1]))]
        if positioned:  # a gap's position too: a change read later below it is out of order
            self.last_zxid = max(self.last_zxid, max(p for p, _, _ in positioned))
        self._mtime.clear()
        return out

    def _snapshot(self, why: str) -> list[Item]:
        with self._lock:
            self._pending = set()
        self._parents = {}  # the tree's reads count the children from now
        nodes, top = self._tree()
        self._session = self.client.client_id[0] if self.client.client_id else None
        self._seen = {p: _Seen(s.version, s.mzxid, s.czxid) for p, _, s in nodes}
        out: list[Item] = []
        first = self._resync == "first read"
        self._resync = None
        if not first and top > self.last_zxid:
            out.append(Gap(self.last_zxid + 1, top, f"{why}: changes up to zxid {top:#x} read as a snapshot",
                           self.clock(), top))
        top = max(top, self.last_zxid)
        out.append(Snapshot(LIVE, top, 0, tuple(Znode(p, d, s.version, s.czxid, s.mzxid, s.mtime, s.ephemeralOwner)
                                               for p, d, s in nodes)))
        self.last_zxid = top
        log.info("zookeeper watch: snapshot at zxid %#x (%s): %d znodes", top, why, len(nodes))
        return out

    def _read_data(self, path: str, ops: list[tuple[int, int, Op]], gaps: list[Gap]) -> None:
        got = self._get(path)
        seen = self._seen.get(path)
        if got is None:  # deleted (its parent's child watch gives the zxid) or not created yet
            return
        data, stat = got
        self._mtime.setdefault(stat.mzxid, stat.mtime)
        # /controller: its absence between two controllers is no state (a delete of it is never emitted,
        # here or from the transaction log), so a new controller's create reads as the change it is
        if seen is not None and stat.czxid != seen.czxid and path not in SINGLE:
            self._recreated(path, stat, ops, gaps)
            seen = None
        if seen is not None and stat.version <= seen.version and stat.mzxid == seen.mzxid:
            return  # nothing new (a watch re-set by a read of the parent)
        created = seen is None
        if created and stat.mzxid > stat.czxid:
            gaps.append(Gap(stat.czxid, stat.mzxid - 1, f"{path}: created at zxid {stat.czxid:#x} and changed before "
                            f"it was read (version {stat.version})", stat.mtime, stat.mzxid))
        elif seen is not None and stat.version > seen.version + 1:  # (not created)
            gaps.append(Gap(seen.mzxid + 1, stat.mzxid - 1, skipped_versions_reason(path, seen.version + 1,
                                                                                     stat.version - 1),
                            stat.mtime, stat.mzxid))
        self._seen[path] = _Seen(stat.version, stat.mzxid, stat.czxid)
        order = SINGLE.index(path) if path in SINGLE else 2
        kind = "create" if created and stat.mzxid == stat.czxid else "setData"
        ops.append((stat.mzxid, order, Op(kind, path, data, stat.version, stat.ephemeralOwner != 0)))

    def _recreated(self, path: str, stat: ZnodeStat, ops: list[tuple[int, int, Op]], gaps: list[Gap]) -> None:
        """`path` was deleted and created again (at stat.czxid) since it was read: a topic deleted and made
        again, a broker registered again, between two reads; its parent's children read the same. What was
        seen of it and below it (created before it was again) is deleted just before the new one is
        created; when it went is not known, so the stretch since it was last seen is a gap, never a setData
        from one incarnation to the next (a re-created topic kept its old topic id)."""
        old = self._forget(path, stat.czxid, ops, created_before=stat.czxid)
        gaps.append(Gap(max(s.mzxid for s in old) + 1, stat.czxid - 1, f"{path}: deleted and created again at zxid "
                        f"{stat.czxid:#x} before it was read: when it was deleted is not known", stat.mtime, stat.czxid))

    def _forget(self, path: str, zxid: int, ops: list[tuple[int, int, Op]],
                created_before: int | None = None) -> list[_Seen]:
        """Deletes at `zxid` what was seen of `path` and below it (only what was created before
        `created_before`, when given), deepest first (partition states before their topic), and forgets the
        children read below it (read again as new); what was seen, for the caller."""
        subs = sorted((p for p, s in self._seen.items() if (p == path or p.startswith(f"{path}/"))
                       and (created_before is None or s.czxid < created_before)), key=lambda p: -p.count("/"))
        ops.extend((zxid, 1, Op("delete", sub)) for sub in subs)
        seen = [self._seen.pop(sub) for sub in subs]
        for sub in [p for p in self._children if p == path or p.startswith(f"{path}/")]:
            del self._children[sub]
            self._parents.pop(sub, None)
        return seen

    def _read_children(self, path: str, ops: list[tuple[int, int, Op]], gaps: list[Gap]) -> None:
        before = self._children.get(path, set())
        last = self._parents.get(path)
        names, pzxid = self._kids(path)
        if not pzxid and path != TOPICS and path.startswith(TOPICS):
            return  # the parent went too: its own parent's child watch deletes the whole subtree, in order
        self._children[path] = names
        if last is not None and pzxid:
            # cversion counts the children's creates and deletes: a new child has its own czxid, but a
            # deletion only the parent's pzxid, which is its zxid only when it is the one change since the
            # last read; more changes than the names show came and went unseen (a topic made and deleted)
            changes = self._parents[path][1] - last[1]
            n_gone, n_new = len(before - names), len(names - before)
            if changes > n_gone + n_new or (n_gone and changes > 1):
                gaps.append(Gap(last[0] + 1, pzxid - 1, f"{path}: {changes} children created or deleted since "
                                f"zxid {last[0]:#x}, {n_gone} gone and {n_new} new as read: when is not known",
                                self.clock(), pzxid))
        for gone in sorted(before - names):  # at the zxid of the parent's last change
            self._forget(f"{path}/{gone}", pzxid, ops)
        for new in sorted(names - before, key=_num):
            child = f"{path}/{new}"
            if path == TOPICS:
                self._read_data(child, ops, gaps)
                self._read_children(f"{child}/partitions", ops, gaps)
            elif path.startswith(TOPICS) and path.endswith("/partitions"):
                self._read_children(child, ops, gaps)
            elif path.startswith(TOPICS) and new == "state":
                self._read_data(child, ops, gaps)
            elif path in (BROKERS, TOPIC_CONFIGS, BROKER_CONFIGS):
                self._read_data(child, ops, gaps)


def _num(name: str) -> tuple[int, str]:
    return (int(name), name) if name.isdigit() else (1 << 62, name)


# --- on the raw topic ---------------------------------------------------------------------------------
# A watched item travels to the normalize worker as a RawRecord (services/capture/serializers.py) of kind
# ZK_SNAPSHOT, ZK_TXN or GAP, positioned by zxid, its content as JSON (znode data in base64).

RAW_KINDS = ("ZK_SNAPSHOT", "ZK_TXN")


def to_raw(item: Item) -> tuple[str, int, int, int, int, bytes, str | None]:
    """(kind, position, first zxid, last zxid, time, data, reason) of a watched item; the position is the
    zxid it sits at in the history (a gap's: where the watch learnt it)."""
    b64: Callable[[bytes | None], str | None]
    b64 = lambda d: None if d is None else base64.b64encode(d).decode()  # noqa: E731
    if isinstance(item, Gap):
        return "GAP", item.at_zxid, item.from_zxid, item.to_zxid, item.time_ms, b"", item.reason
    if isinstance(item, Snapshot):
        body = {"zxid": item.zxid, "nodes": [[n.path, b64(n.data), n.version, n.czxid, n.mzxid, n.mtime,
                                               n.ephemeral_owner] for n in item.nodes]}
        return "ZK_SNAPSHOT", item.zxid, item.zxid, item.zxid, item.last_mtime, json.dumps(body).encode(), None
    body = {"zxid": item.zxid, "time": item.time, "type": item.type,
            "ops": [[o.kind, o.path, b64(o.data), o.version, o.ephemeral] for o in item.ops]}
    return "ZK_TXN", item.zxid, item.zxid, item.zxid, item.time, json.dumps(body).encode(), None


def from_raw(kind: str, position: int, first: int, last: int, time_ms: int, data: bytes, reason: str | None) -> Item:
    """The item `to_raw` made (ValueError when the data is not one)."""
    unb64: Callable[[str | None], bytes | None]
    unb64 = lambda s: None if s is None else base64.b64decode(s)  # noqa: E731
    if kind == "GAP":
        return Gap(first, last, reason or "not read", time_ms, position)
    body = json.loads(data)
    if kind == "ZK_SNAPSHOT":
        return Snapshot(LIVE, body["zxid"], 0, tuple(Znode(p, unb64(d), v, c, m, t, e)
                                                     for p, d, v, c, m, t, e in body["nodes"]))
    if kind == "ZK_TXN":
        return Txn(0, 0, body["zxid"], body["time"], body["type"],
                   tuple(Op(k, p, unb64(d), v, bool(e)) for k, p, d, v, e in body["ops"]), LIVE)
    raise ValueError(f"not a ZooKeeper raw kind: {kind!r}")
