"""ZooKeeper transactions (Kafka's ZooKeeper-mode controller state) -> ControllerEvents.

In ZooKeeper mode the controller's state *is* a set of znodes, and every change to it is a transaction:
- ``/brokers/topics/<t>``: the assignment ``{"partitions": {p: replicas}, "adding_replicas", "removing_replicas",
  "topic_id"}`` (KIP-455's OAR/RAR while a reassignment moves replicas);
- ``/brokers/topics/<t>/partitions/<p>/state``: LeaderAndIsr ``{controller_epoch, leader, leader_epoch, isr}``;
  its znode version is Kafka's zkVersion, the partition epoch;
- ``/controller`` (ephemeral, ``brokerid``) and ``/controller_epoch``; ``/brokers/ids/<id>`` (ephemeral
  registration, its creating zxid is the broker epoch); ``/config/topics/<t>``; ``/config/brokers/<id>`` and
  ``/config/brokers/<default>`` (dynamic broker configs, the cluster's default as KRaft's: resource name "").

A partition's state is the two joined: replicas and adding/removing from the topic znode, the rest from the
state znode. An ephemeral znode also disappears when its session closes (a kill -9'd broker's session
expires): ``closeSession`` lists what it removed (ZooKeeper 3.6+); an older server's lists nothing, so the znodes
the session created as ephemeral (and the snapshot's ephemeral owners) say it. Events come out unchained (the archive writer chains them),
positioned by zxid (``SourcePosition.offset`` = ``zxid``, ``index`` = the event's place in its transaction).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from schemas.events import (
    BrokerChange, BrokerChangeKind, BrokerState, ConfigChange, ConfigResourceType, ControllerChange,
    ControllerEvent, LeaderRecoveryState, PartitionChange, PartitionState, Payload, SourceKind, SourcePosition,
    TopicChange, TopicChangeKind, UnknownRecord,
)
from services.normalize.base import Normalizer
from services.normalize.classify import change_kinds, election_type
from services.normalize.redaction import redact, withheld
from services.zookeeper import Txn, znodes
from services.zookeeper.snapshot import Snapshot
from services.zookeeper.watch import Gap

TOPICS = "/brokers/topics/"
BROKERS = "/brokers/ids/"
TOPIC_CONFIGS = "/config/topics/"
BROKER_CONFIGS = "/config/brokers/"  # dynamic broker configs: <id>, and <default> for the cluster-wide default
DEFAULT = "<default>"  # ZooKeeper's name of the cluster-wide default; KRaft's (and the events') is ""


def _broker_config_name(path: str) -> str:
    name = path.rsplit("/", 1)[1]
    return "" if name == DEFAULT else name


def _config_object(data: bytes | None) -> dict[str, str] | None:
    """The "config" object of a config znode's {"version": 1, "config": {...}}, values as text ({} for no data);
    None when the data is not that: neither "every key removed" nor any key's value can be read from it."""
    try:
        return znodes.config(znodes.json_object(data))
    except znodes.ZnodeError:
        return None


class ZooKeeperNormalizer(Normalizer):
    """Feed transactions in zxid order; get ControllerEvents with the full state before and after."""

    def __init__(self, cluster_id: str, clock: Callable[[], int] | None = None) -> None:
        super().__init__(cluster_id, clock)
        # the znodes' own values below are ZooKeeper's, not the controller's image: /controller_epoch is written
        # apart from /controller, and /controller is deleted before the next controller creates it
        self.epoch = -1  # /controller_epoch as last written
        self.controller_node = -1  # /controller's broker id (-1: the znode is gone)
        self.last_zxid = 0
        # what only ZooKeeper has: per topic the assignment znode, per partition its LeaderAndIsr znode
        self.assignments: dict[str, dict[str, Any]] = {}  # name -> the /brokers/topics/<t> JSON (znodes.assignment)
        # (name, p) -> (the state JSON (znodes.leader_and_isr), zkVersion)
        self.leader_and_isr: dict[tuple[str, int], tuple[dict[str, Any], int]] = {}
        # ephemeral znode -> the session that owns it: a closeSession of a server before ZooKeeper 3.6 does not
        # list what it removed (Kafka 2.x), so a kill -9'd broker's registration goes by its owner
        self.ephemerals: dict[str, int] = {}
        self._txn: Txn | None = None
        self._index = 0
        self._bootstrap = False
        self._czxid: int | None = None  # a snapshot's znode: its creating zxid (the log's is the txn's)
        self._epoch_before = -1  # the controller epoch before the transaction being read

    # --- input ---------------------------------------------------------------------------------

    def feed(self, txn: Txn) -> list[ControllerEvent]:
        if txn.zxid <= self.last_zxid:
            return []  # already applied (overlapping files)
        self.last_zxid = txn.zxid
        self._txn, self._index = txn, 0
        self._epoch_before = self.epoch
        out: list[ControllerEvent] = []
        for op in txn.ops:
            if op.kind in ("create", "create2", "createContainer", "createTTL"):
                if op.ephemeral and op.path:
                    self.ephemerals[op.path] = txn.session
                out += self._write(op.path, op.data, 0, created=True)
            elif op.kind in ("setData", "reconfig"):
                out += self._write(op.path, op.data, op.version if op.version is not None else -1, created=False)
            elif op.kind in ("delete", "deleteContainer"):
                self.ephemerals.pop(op.path or "", None)
                out += self._delete(op.path)
            elif op.kind == "closeSession":
                owned = sorted(p for p, owner in self.ephemerals.items() if owner == txn.session)
                for path in op.deleted if op.deleted is not None else owned:
                    self.ephemerals.pop(path, None)
                    out += self._delete(path)
        return out

    def feed_watched(self, item: Snapshot | Txn | Gap) -> list[ControllerEvent]:
        """One item of a live watch (services.zookeeper.watch): a snapshot, a transaction or a gap."""
        if isinstance(item, Snapshot):
            return self.bootstrap(item)
        if isinstance(item, Gap):
            return [self.gap(item.from_zxid, item.to_zxid, item.reason, item.time_ms, at_zxid=item.at_zxid)]
        return self.feed(item)

    def bootstrap(self, snapshot: Snapshot) -> list[ControllerEvent]:
        """The controller state a snapshot holds, as bootstrap events at its zxid (state, not transitions);
        transactions up to that zxid are then already applied. A snapshot is the whole state: what the
        image holds and the snapshot does not (a topic deleted while a live capture was disconnected) goes."""
        self._bootstrap, out = True, []
        try:
            # /controller_epoch before /controller (the tree's child order is a hash map's)
            nodes = sorted(snapshot.nodes, key=lambda n: n.path != "/controller_epoch")
            self.ephemerals = {n.path: n.ephemeral_owner for n in nodes if n.ephemeral_owner}
            self._index = 0
            for node in nodes:
                self._txn = Txn(0, 0, snapshot.zxid, node.mtime, 1, (), PurePath(snapshot.file).name)
                self._czxid = node.czxid
                out += self._write(node.path, node.data, node.version, created=True)
            self._czxid = None
            self._txn = Txn(0, 0, snapshot.zxid, snapshot.last_mtime, 2, (), PurePath(snapshot.file).name)
            out += self._drop_absent({n.path for n in snapshot.nodes})
        finally:
            self._bootstrap, self._czxid = False, None
        self.last_zxid = max(self.last_zxid, snapshot.zxid)
        return out

    def _drop_absent(self, present: set[str]) -> list[ControllerEvent]:
        out = []
        for name, p in sorted(self.leader_and_isr):
            if f"{TOPICS}{name}/partitions/{p}/state" not in present and f"{TOPICS}{name}" in present:
                out += self._delete(f"{TOPICS}{name}/partitions/{p}/state")
        for name in sorted(n for tid in self.delta.topic_ids() if (n := self.delta.topic_name(tid)) is not None):
            if f"{TOPICS}{name}" not in present:
                out += self._delete(f"{TOPICS}{name}")
        for bid in self.delta.broker_ids():
            if f"{BROKERS}{bid}" not in present:
                out += self._delete(f"{BROKERS}{bid}")
        for name in self.delta.config_resources(ConfigResourceType.TOPIC):
            if f"{TOPIC_CONFIGS}{name}" not in present:
                out += self._config(ConfigResourceType.TOPIC, name, None)
        for name in self.delta.config_resources(ConfigResourceType.BROKER):
            if f"{BROKER_CONFIGS}{name or DEFAULT}" not in present:
                out += self._config(ConfigResourceType.BROKER, name, None)
        return out

    def gap(self, from_zxid: int, to_zxid: int, reason: str, event_time_ms: int = -1,
            at_zxid: int | None = None) -> ControllerEvent:
        """A stretch of transactions that was not read: recorded, never hidden. Positioned at its first zxid,
        or at `at_zxid` (a live watch's: where it learnt of the gap, after what it already handed out)."""
        self._txn, self._index = None, 0
        at = from_zxid if at_zxid is None else at_zxid
        return self.gap_event(SourcePosition(SourceKind.ZOOKEEPER, at, 0, -1, at, None, None), from_zxid, to_zxid,
                              reason, event_time_ms, self.epoch)

    # --- znodes ---------------------------------------------------------------------------------

    def _where(self) -> str:
        txn = self._txn
        return f"{txn.file or 'ZooKeeper'}, zxid {txn.zxid:#x}" if txn is not None else "ZooKeeper"

    def _write(self, path: str | None, data: bytes | None, version: int, created: bool) -> list[ControllerEvent]:
        try:
            return self._write_znode(path, data, version, created)
        except znodes.ZnodeError as exc:  # one line naming the file, the zxid and the znode
            raise exc.at(self._where(), path or "") from None

    def _delete(self, path: str | None) -> list[ControllerEvent]:
        try:
            return self._delete_znode(path)
        except znodes.ZnodeError as exc:
            raise exc.at(self._where(), path or "") from None

    def _write_znode(self, path: str | None, data: bytes | None, version: int,
                     created: bool) -> list[ControllerEvent]:
        if not path:
            return []
        if path == "/controller_epoch":
            written = znodes.epoch(data)
            self.epoch = self.epoch if written is None else written
            return []
        if path == "/controller":
            broker = znodes.int32(znodes.json_object(data), "brokerid", -1)
            # the epoch before this transaction: a live watch may hand the multi's /controller_epoch first
            prev = self.controller_node, (self.epoch if self._bootstrap else self._epoch_before)
            self.controller_node = broker
            # the same multi sets /controller_epoch after creating /controller: the epoch is the next one
            epoch = self._epoch_in_txn()
            if epoch is not None:
                self.epoch = epoch
            self.elected(self.epoch, broker)
            return [self._emit(ControllerChange(broker, self.epoch, prev[0], prev[1]))]
        if path.startswith(BROKERS) and path.count("/") == 3:
            return self._broker(znodes.number(path.rsplit("/", 1)[1], "broker id"), data, created)
        if path.startswith(TOPIC_CONFIGS) and path.count("/") == 3:
            return self._config(ConfigResourceType.TOPIC, path.rsplit("/", 1)[1], data)
        if path.startswith(BROKER_CONFIGS) and path.count("/") == 3:
            return self._config(ConfigResourceType.BROKER, _broker_config_name(path), data)
        if not path.startswith(TOPICS):
            return []
        parts = path[len(TOPICS):].split("/")
        if len(parts) == 1:
            return self._assignment(parts[0], znodes.assignment(znodes.json_object(data)), created)
        if len(parts) == 4 and parts[1] == "partitions" and parts[3] == "state":
            key = (parts[0], znodes.number(parts[2], "partition"))
            self.leader_and_isr[key] = (znodes.leader_and_isr(znodes.json_object(data)), version)
            return self._partition(*key)
        return []

    def _delete_znode(self, path: str | None) -> list[ControllerEvent]:
        if not path:
            return []
        if path == "/controller":
            self.controller_node = -1  # a new one follows with its own create (and ControllerChange)
            return []
        if path.startswith(BROKERS) and path.count("/") == 3:
            bid = znodes.number(path.rsplit("/", 1)[1], "broker id")
            before = self.delta.broker(bid)
            return [self._emit(BrokerChange(bid, BrokerChangeKind.UNREGISTERED, before, None))] if before else []
        if path.startswith(BROKER_CONFIGS) and path.count("/") == 3:
            return self._config(ConfigResourceType.BROKER, _broker_config_name(path), None)
        if not path.startswith(TOPICS):
            return []
        parts = path[len(TOPICS):].split("/")
        if len(parts) == 4 and parts[3] == "state":
            pid = znodes.number(parts[2], "partition")
            self.leader_and_isr.pop((parts[0], pid), None)
            return self._partition(parts[0], pid)
        if len(parts) == 1:
            name = parts[0]
            for key in [k for k in self.leader_and_isr if k[0] == name]:
                del self.leader_and_isr[key]  # normally deleted before, child znodes first
            self.assignments.pop(name, None)
            tid = self.topic_id(name) or ""
            out = self._partitions_of(name, tid)
            if tid:
                out.append(self._emit(TopicChange(TopicChangeKind.DELETED, name, tid)))
            return out
        return []

    def _writes_state(self, change: PartitionChange) -> bool:
        """Whether the transaction being read wrote this partition's state znode (a snapshot's node counts)."""
        txn = self._txn
        if txn is None or self._bootstrap:
            return True
        path = f"{TOPICS}{change.topic}/partitions/{change.partition}/state"
        return any(op.path == path and op.kind in ("create", "create2", "setData") for op in txn.ops)

    def _epoch_in_txn(self) -> int | None:
        for op in self._txn.ops if self._txn else ():
            if op.kind == "setData" and op.path == "/controller_epoch":
                try:
                    return znodes.epoch(op.data)
                except znodes.ZnodeError:
                    return None  # said when the setData itself is read
        return None

    def _broker(self, bid: int, data: bytes | None, created: bool) -> list[ControllerEvent]:
        d = znodes.json_object(data)
        before = self.delta.broker(bid)
        # Kafka's ZooKeeper-mode broker epoch is the czxid of its registration znode
        czxid = self._czxid if self._czxid is not None else self._reading().zxid
        epoch = czxid if created or before is None else before.epoch
        after = BrokerState(bid, epoch, fenced=False, rack=znodes.text(d, "rack"), endpoints=znodes.texts(d, "endpoints"))
        if after == before or (created and not d):
            return []  # the multi's create has no data yet; its setData carries the registration
        kind = BrokerChangeKind.REGISTERED if before is None else BrokerChangeKind.UPDATED
        return [self._emit(BrokerChange(bid, kind, before, after))]

    def _assignment(self, name: str, d: dict[str, Any], created: bool) -> list[ControllerEvent]:
        out: list[ControllerEvent] = []
        known = self.topic_id(name)
        tid = d.get("topic_id") or known or name
        if known is None:
            out.append(self._emit(TopicChange(TopicChangeKind.CREATED, name, tid)))
        self.assignments[name] = d
        return out + self._partitions_of(name, tid)

    def _partitions_of(self, name: str, tid: str) -> list[ControllerEvent]:
        keys = {p for (t, p) in self.leader_and_isr if t == name} | set(self.delta.partitions_of(tid))
        return [e for p in sorted(keys) for e in self._partition(name, p)]

    def _partition(self, name: str, pid: int) -> list[ControllerEvent]:
        """The joined state of (topic, partition) now, as an event if it differs from what the image holds."""
        known = self.topic_id(name)
        tid = name if known is None else known
        before = self.delta.partition(tid, pid)
        after = self._state(name, pid)
        if after == before:
            return []
        kinds = change_kinds(before, after)
        return [self._emit(PartitionChange(name, tid, pid, before, after, kinds,
                                           election_type(before, after, kinds)))]

    def _state(self, name: str, pid: int) -> PartitionState | None:
        lai = self.leader_and_isr.get((name, pid))
        assignment = self.assignments.get(name)
        if lai is None or assignment is None:
            return None
        d, version = lai
        p = str(pid)
        return PartitionState(
            replicas=tuple(assignment.get("partitions", {}).get(p, ())), isr=tuple(d.get("isr", ())),
            leader=d.get("leader", -1), leader_epoch=d.get("leader_epoch", -1), partition_epoch=version,
            adding_replicas=tuple(assignment.get("adding_replicas", {}).get(p, ())),
            removing_replicas=tuple(assignment.get("removing_replicas", {}).get(p, ())),
            # KIP-704 (3.2+): an unclean election writes "leader_recovery_state": 1 until the leader recovered;
            # the key is absent otherwise
            leader_recovery_state=(LeaderRecoveryState.RECOVERING if d.get("leader_recovery_state") == 1
                                   else LeaderRecoveryState.RECOVERED))

    def _config(self, kind: ConfigResourceType, name: str, data: bytes | None) -> list[ControllerEvent]:
        """A topic's or a broker's config znode ({"version": 1, "config": {...}}) written (None: gone): a
        ConfigChange per key that differs from the image's. Broker configs matter to the checks: a dynamic
        unclean.leader.election.enable of one broker or of the cluster's default (kafka-configs --entity-type
        brokers [--entity-default]) allows unclean elections where no topic config does."""
        config = _config_object(data)
        if config is None:  # neither "every key removed" nor any key's value can be read from it
            where = f"{TOPIC_CONFIGS if kind is ConfigResourceType.TOPIC else BROKER_CONFIGS}{name or '<default>'}"
            return [self._emit(UnknownRecord(-1, -1, b"", withheld(
                f"config znode {where} is not a JSON config object", data or b"")))]
        new = config
        out = []
        # the image holds what the archive holds: a sensitive value as "[redacted]" (never the secret)
        held = self.delta.configs_of(kind, name)
        for cname in sorted(set(new) | set(held)):
            previous = held.get(cname)
            shown, shown_prev, redacted = redact(cname, new.get(cname), previous)
            changed_secret = redacted and self.secrets.changed((kind.name, name, cname), new.get(cname))
            if previous == shown and not changed_secret:
                continue
            out.append(self._emit(ConfigChange(kind, name, cname, shown, shown_prev, redacted)))
        return out

    # --- events ---------------------------------------------------------------------------------

    def _reading(self) -> Txn:
        """The transaction being read (a snapshot's znode is read as one)."""
        txn = self._txn
        assert txn is not None, "a znode written outside a transaction"
        return txn

    def _emit(self, payload: Payload) -> ControllerEvent:
        txn = self._reading()
        self._index += 1
        return self._event(txn.zxid, txn, txn.time, payload, self._index - 1)

    def _event(self, zxid: int, txn: Txn, event_time_ms: int, payload: Payload, index: int = 0) -> ControllerEvent:
        source = SourcePosition(SourceKind.ZOOKEEPER, zxid, index, -1, zxid, self.file_name(txn.file), None)
        epoch = self.epoch
        if isinstance(payload, PartitionChange) and payload.after is not None and (
                epoch < 0 or self._writes_state(payload)):
            # The LeaderAndIsr znode says which controller epoch wrote it: a write stamped older than the
            # epoch already seen is a deposed controller's (the fencing the controller epoch exists for).
            # A change of the assignment znode alone is the sitting controller's, at the current epoch
            # (when that is not known yet, the state's epoch is the best evidence of it).
            epoch = self.leader_and_isr.get((payload.topic, payload.partition), ({}, 0))[0].get("controller_epoch", epoch)
        return self.envelope(source, event_time_ms, epoch, payload, bootstrap=self._bootstrap)
