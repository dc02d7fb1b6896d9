"""The ZooKeeper watch's rules on a stand-in ZooKeeper (a dict of znodes with zxids, versions and one-shot
watches, as ZooKeeper keeps them): zxid order, one zxid's writes as one transaction, deletions at the
parent's pzxid, skipped versions and lost sessions as gaps followed by a snapshot. The real ZooKeeper runs
in test_real_zookeeper.py (the whole scenario) and test_real_zookeeper_capture.py (the capture worker)."""
from __future__ import annotations

import json
from types import SimpleNamespace

from kazoo.exceptions import NoNodeError

from services.zookeeper.normalizer import ZooKeeperNormalizer
from services.zookeeper.records import Txn
from services.zookeeper.snapshot import Snapshot
from services.zookeeper.watch import Gap, ZooKeeperWatch

TOPIC = "/brokers/topics/orders"
STATE = TOPIC + "/partitions/0/state"


class FakeZooKeeper:
    """Znodes with ZooKeeper's stat fields and one-shot watches; `write` and `delete` are transactions."""

    def __init__(self) -> None:
        self.zxid = 0
        self.nodes: dict[str, SimpleNamespace] = {}
        self.data_watches: dict[str, list] = {}
        self.child_watches: dict[str, list] = {}
        self.client_id = (1, b"")
        self.handler = SimpleNamespace(dispatch_callback=lambda cb: cb.func(*cb.args))
        self.listeners: list = []
        self.created_after_no_node: dict[str, object] = {}  # path -> a write that races a read of it
        for path in ("/", "/brokers", "/brokers/ids", "/brokers/topics", "/config", "/config/topics"):
            self._put(path, b"")

    # --- the server ---
    def _put(self, path: str, data: bytes) -> None:
        node = self.nodes.get(path)
        if node is None:
            self.nodes[path] = SimpleNamespace(data=data, czxid=self.zxid, mzxid=self.zxid, mtime=self.zxid,
                                               version=0, pzxid=self.zxid, cversion=0, ephemeralOwner=0)
        else:
            node.data, node.mzxid, node.mtime, node.version = data, self.zxid, self.zxid, node.version + 1

    def _fire(self, table: dict, path: str) -> None:
        for cb in table.pop(path, []):
            cb(SimpleNamespace(path=path))

    def write(self, *changes: tuple[str, object]) -> int:
        """One transaction (a multi when several): create or set each path."""
        self.zxid += 1
        for path, data in changes:
            raw = data if isinstance(data, bytes) else json.dumps(data).encode()
            for p in _ancestors(path):  # the missing parents first, each a create (Kafka makes them so)
                created = p not in self.nodes
                if not created and p != path:
                    continue
                self._put(p, raw if p == path else b"")
                if created:
                    parent = p.rsplit("/", 1)[0] or "/"
                    self.nodes[parent].pzxid = self.zxid
                    self.nodes[parent].cversion += 1
                    self._fire(self.child_watches, parent)
                if created or p == path:
                    self._fire(self.data_watches, p)
        return self.zxid

    def delete(self, path: str) -> int:
        self.zxid += 1
        for p in sorted((p for p in self.nodes if p == path or p.startswith(path + "/")), key=len, reverse=True):
            del self.nodes[p]
            self._fire(self.data_watches, p)
            self._fire(self.child_watches, p)
        parent = path.rsplit("/", 1)[0] or "/"
        self.nodes[parent].pzxid = self.zxid
        self.nodes[parent].cversion += 1
        self._fire(self.child_watches, parent)
        return self.zxid

    # --- the kazoo client ---
    def start(self, timeout=None):
        pass

    def add_listener(self, fn):
        self.listeners.append(fn)

    def stop(self):
        pass

    def close(self):
        pass

    def get(self, path, watch=None):
        node = self.nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if watch:
            self.data_watches.setdefault(path, []).append(watch)
        return node.data, node

    def exists(self, path, watch=None):
        # as ZooKeeper's: a watch that fires when the znode is created, changed or deleted, never for its children
        if watch:
            self.data_watches.setdefault(path, []).append(watch)
        return self.nodes.get(path)

    def get_children(self, path, watch=None, include_data=False):
        node = self.nodes.get(path)
        if node is None:
            racing = self.created_after_no_node.pop(path, None)
            if racing is not None:  # another client creates it just after this read found none
                racing()
            raise NoNodeError(path)
        if watch:
            self.child_watches.setdefault(path, []).append(watch)
        kids = sorted({p[len(path) + 1:].split("/")[0] for p in self.nodes if p.startswith(path + "/")})
        return (kids, node) if include_data else kids


def _ancestors(path: str) -> list[str]:
    if path == "/":
        return []
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _assignment(replicas):
    return {"version": 3, "partitions": {"0": replicas}, "adding_replicas": {}, "removing_replicas": {},
            "topic_id": "T0pic1dT0pic1dT0pic1d"}


def _state(leader, isr, epoch=1, leader_epoch=0):
    return {"controller_epoch": epoch, "leader": leader, "version": 1, "leader_epoch": leader_epoch, "isr": isr}


def _started(zk: FakeZooKeeper) -> ZooKeeperWatch:
    w = ZooKeeperWatch("fake:2181", client=zk, clock=lambda: 0)
    w.start()
    return w


def test_first_poll_is_a_snapshot_then_changes_in_zxid_order():
    zk = FakeZooKeeper()
    zk.write(("/controller_epoch", b"1"), ("/controller", {"brokerid": 1}))
    zk.write((TOPIC, _assignment([1, 2])))
    zk.write((STATE, _state(1, [1, 2])))
    w = _started(zk)
    first = w.poll()
    assert len(first) == 1 and isinstance(first[0], Snapshot) and first[0].zxid == zk.zxid
    assert {n.path for n in first[0].nodes} >= {"/controller", "/controller_epoch", TOPIC, STATE}
    assert w.poll() == []
    a = zk.write((STATE, _state(1, [1])))
    b = zk.write(("/controller_epoch", b"2"), ("/controller", {"brokerid": 2}))  # the controller's multi
    got = w.poll()
    assert [type(i) for i in got] == [Txn, Txn] and [t.zxid for t in got] == [a, b]
    assert [o.path for o in got[1].ops] == ["/controller_epoch", "/controller"]  # epoch first, one txn
    events = [e for item in first + got for e in ZooKeeperNormalizer("c").feed_watched(item)]
    change = [e.payload for e in events if type(e.payload).__name__ == "ControllerChange"][-1]
    assert (change.leader_id, change.epoch) == (2, 2)


def test_a_version_skipped_between_reads_is_a_gap():
    zk = FakeZooKeeper()
    zk.write((TOPIC, _assignment([1, 2])))
    zk.write((STATE, _state(1, [1, 2])))
    w = _started(zk)
    w.poll()
    skipped = zk.write((STATE, _state(1, [1])))  # fires the watch; it is set again only by the next read
    seen = zk.write((STATE, _state(1, [1, 2], leader_epoch=0)))  # so this one is read, that one never
    got = w.poll()
    gaps = [i for i in got if isinstance(i, Gap)]
    assert len(gaps) == 1 and (gaps[0].from_zxid, gaps[0].to_zxid) == (skipped, seen - 1)
    assert "versions 1..1 changed before they were read" in gaps[0].reason
    assert any(isinstance(i, Txn) and i.zxid == seen for i in got)


def test_a_deleted_topic_is_deleted_deepest_first_at_its_parents_pzxid():
    zk = FakeZooKeeper()
    zk.write((TOPIC, _assignment([1, 2])))
    zk.write((STATE, _state(1, [1, 2])))
    w = _started(zk)
    first = w.poll()
    gone = zk.delete(TOPIC)
    got = w.poll()
    deletes = [(t.zxid, o.path) for t in got if isinstance(t, Txn) for o in t.ops if o.kind == "delete"]
    assert deletes == [(gone, STATE), (gone, TOPIC)]
    norm = ZooKeeperNormalizer("c")
    events = [e for item in first + got for e in norm.feed_watched(item)]
    assert [type(e.payload).__name__ for e in events[-2:]] == ["PartitionChange", "TopicChange"]
    assert events[-2].payload.after is None and norm.image.partitions == {}


def test_a_new_session_is_a_gap_and_a_snapshot_that_drops_what_went_meanwhile():
    zk = FakeZooKeeper()
    zk.write((TOPIC, _assignment([1, 2])))
    zk.write((STATE, _state(1, [1, 2])))
    w = _started(zk)
    norm = ZooKeeperNormalizer("c")
    for item in w.poll():
        norm.feed_watched(item)
    last = w.last_zxid
    zk.data_watches.clear()
    zk.child_watches.clear()  # the session expired: its watches with it ...
    zk.client_id = (2, b"")  # ... and the client reconnected with a new one
    zk.delete(TOPIC)
    zk.write(("/brokers/ids/3", {"version": 5, "endpoints": ["PLAINTEXT://h:3"]}))
    got = w.poll()
    assert isinstance(got[0], Gap) and got[0].from_zxid == last + 1 and got[0].to_zxid == zk.zxid
    assert "new ZooKeeper session" in got[0].reason and isinstance(got[1], Snapshot)
    events = [e for item in got for e in norm.feed_watched(item)]
    kinds = [(type(e.payload).__name__, getattr(e.payload, "kind", None)) for e in events]
    assert ("TopicChange", next(k for _, k in kinds if k is not None and k.name == "DELETED")) in kinds
    assert norm.image.partitions == {} and 3 in norm.image.brokers
    assert all(e.bootstrap for e in events[1:])


def test_the_capture_restarted_is_a_gap_back_to_the_raw_topics_last_zxid():
    zk = FakeZooKeeper()
    zk.write((TOPIC, _assignment([1, 2])))
    zk.write((STATE, _state(1, [1, 2])))
    w = _started(zk)
    w.resume_after(1)
    got = w.poll()
    assert isinstance(got[0], Gap) and (got[0].from_zxid, got[0].to_zxid) == (2, zk.zxid)
    assert "the capture restarted" in got[0].reason and isinstance(got[1], Snapshot)
    w2 = _started(zk)
    w2.resume_after(zk.zxid)  # nothing changed while it was down: a snapshot, no gap
    assert [type(i) for i in w2.poll()] == [Snapshot]


def _position(item) -> int:
    return item.at_zxid if isinstance(item, Gap) else item.zxid


def test_positions_only_rise_even_when_a_skip_reaches_back_before_what_was_handed_out():
    """A znode last seen before zxid z_b skips a version after z_b was handed out: the gap names the
    stretch since it was last seen, but sits where the watch learnt it, so that "as of zxid N" stays a
    prefix of the history (a CI run caught it placed at its first zxid, before events already out)."""
    other = "/brokers/topics/orders/partitions/1/state"
    zk = FakeZooKeeper()
    zk.write((TOPIC, {**_assignment([1, 2]), "partitions": {"0": [1, 2], "1": [2, 1]}}))
    zk.write((STATE, _state(1, [1, 2])))
    zk.write((other, _state(2, [2, 1])))
    w = _started(zk)
    items = w.poll()
    z_b = zk.write((other, _state(2, [2])))
    items += w.poll()
    first_skip = zk.write((STATE, _state(1, [1])))  # fires the watch; read only after the next write
    seen = zk.write((STATE, _state(2, [2], leader_epoch=1)))
    got = w.poll()
    items += got
    gap = next(i for i in got if isinstance(i, Gap))
    assert gap.from_zxid < z_b < gap.at_zxid == seen and gap.to_zxid == first_skip
    positions = [_position(i) for i in items]
    assert positions == sorted(positions)


def _partitions(items) -> dict:
    norm = ZooKeeperNormalizer("c")
    for item in items:
        norm.feed_watched(item)
    return {k: (s.leader, tuple(s.isr)) for k, s in norm.image.partitions.items()}


def test_a_znode_created_between_a_read_that_found_none_and_its_exists_watch_is_read():
    """The controller creates a new topic's partitions/ while the watch reacts to the same topic: the watch's
    read finds no partitions/, the exists() after it finds one (and sets only a data watch, which never fires
    for children). The watch reads again, so the partitions and their later changes are captured."""
    zk = FakeZooKeeper()
    w = _started(zk)
    items = w.poll()
    zk.write((TOPIC, _assignment([1, 2])))
    zk.created_after_no_node[TOPIC + "/partitions"] = lambda: zk.write((STATE, _state(1, [1, 2])))
    items += w.poll()
    assert list(_partitions(items).values()) == [(1, (1, 2))]
    zk.write((STATE, _state(1, [1])))
    items += w.poll()
    assert list(_partitions(items).values()) == [(1, (1,))]
    assert not [i for i in items if isinstance(i, Gap)]


def test_a_topic_deleted_and_created_again_between_reads_is_a_gap_a_delete_and_a_create():
    """Its parent's children read the same before and after: only the znode's czxid tells. Not a setData from
    the old topic to the new (the new topic kept the old one's id, its partitions' old states as before)."""
    zk = FakeZooKeeper()
    zk.write((TOPIC, _assignment([1, 2])))
    zk.write((STATE, _state(1, [1, 2])))
    w = _started(zk)
    items = w.poll()
    last_seen = zk.zxid
    gone = zk.delete(TOPIC)
    made = zk.write((TOPIC, {**_assignment([2, 3]), "topic_id": "NewT0picNewT0picNewT0"}))
    zk.write((STATE, _state(3, [3, 2])))
    got = w.poll()
    gap = next(i for i in got if isinstance(i, Gap))
    assert gap.from_zxid <= last_seen + 1 <= gone <= gap.to_zxid == made - 1 and gap.at_zxid == made
    assert len([i for i in got if isinstance(i, Gap)]) == 1
    norm = ZooKeeperNormalizer("c")
    events = [e for item in items + got for e in norm.feed_watched(item)]
    topics = [(e.payload.kind.name, e.payload.topic_id) for e in events if type(e.payload).__name__ == "TopicChange"]
    assert topics == [("CREATED", "T0pic1dT0pic1dT0pic1d"), ("DELETED", "T0pic1dT0pic1dT0pic1d"),
                      ("CREATED", "NewT0picNewT0picNewT0")]
    assert {k: (s.leader, s.replicas, s.isr) for k, s in norm.image.partitions.items()} == {
        ("NewT0picNewT0picNewT0", 0): (3, (2, 3), (3, 2))}


def test_a_broker_registered_again_between_reads_is_unregistered_then_registered():
    zk = FakeZooKeeper()
    zk.write(("/brokers/ids/1", {"version": 5, "endpoints": ["PLAINTEXT://h:1"]}))
    w = _started(zk)
    items = w.poll()
    zk.delete("/brokers/ids/1")
    again = zk.write(("/brokers/ids/1", {"version": 5, "endpoints": ["PLAINTEXT://h:1"]}))
    got = w.poll()
    assert [type(i) for i in got] == [Gap, Txn] and [o.kind for o in got[1].ops] == ["delete", "create"]
    norm = ZooKeeperNormalizer("c")
    events = [e.payload for item in items + got for e in norm.feed_watched(item)]
    changes = [(p.kind.name, p.after.epoch if p.after else None) for p in events if type(p).__name__ == "BrokerChange"]
    assert changes[-2:] == [("UNREGISTERED", None), ("REGISTERED", again)]


def test_a_new_controllers_znode_is_a_controller_change_not_a_gap():
    zk = FakeZooKeeper()
    zk.write(("/controller_epoch", b"1"), ("/controller", {"brokerid": 1}))
    w = _started(zk)
    items = w.poll()
    zk.delete("/controller")  # the controller's session ended ...
    zk.write(("/controller_epoch", b"2"), ("/controller", {"brokerid": 2}))  # ... and another took over
    got = w.poll()
    assert [type(i) for i in got] == [Txn]
    norm = ZooKeeperNormalizer("c")
    changes = [e.payload for item in items + got for e in norm.feed_watched(item)
               if type(e.payload).__name__ == "ControllerChange"]
    assert (changes[-1].leader_id, changes[-1].epoch) == (2, 2)


def test_children_that_came_and_went_between_reads_are_a_gap_one_deletion_alone_is_not():
    zk = FakeZooKeeper()
    for b in (1, 2, 3):
        zk.write((f"/brokers/ids/{b}", {"version": 5, "endpoints": [f"PLAINTEXT://h:{b}"]}))
    w = _started(zk)
    w.poll()
    one = zk.delete("/brokers/ids/3")  # the one change since the read: its zxid is the parent's pzxid
    got = w.poll()
    assert [type(i) for i in got] == [Txn] and got[0].zxid == one
    first = zk.delete("/brokers/ids/1")  # two: the first one's zxid is not known
    second = zk.delete("/brokers/ids/2")
    got = w.poll()
    assert [type(i) for i in got] == [Gap, Txn] and got[1].zxid == second
    assert got[0].from_zxid <= first <= got[0].to_zxid == second - 1
    made = zk.write((TOPIC, _assignment([1, 2])))  # a topic made and deleted unseen: no trace but the count
    zk.delete(TOPIC)
    got = w.poll()
    assert [type(i) for i in got] == [Gap] and got[0].from_zxid <= made <= got[0].to_zxid
    assert "2 children created or deleted" in got[0].reason


def test_dynamic_broker_configs_are_watched_the_default_too():
    zk = FakeZooKeeper()
    zk.write(("/config/brokers/1", {"version": 1, "config": {"unclean.leader.election.enable": "false"}}))
    w = _started(zk)
    items = w.poll()
    zk.write(("/config/brokers/<default>", {"version": 1, "config": {"unclean.leader.election.enable": "true"}}))
    items += w.poll()
    zk.write(("/config/brokers/1", {"version": 1, "config": {}}))
    items += w.poll()
    norm = ZooKeeperNormalizer("c")
    changes = [(p.resource_type.name, p.resource_name, p.name, p.value) for item in items
               for p in (e.payload for e in norm.feed_watched(item)) if type(p).__name__ == "ConfigChange"]
    assert changes == [("BROKER", "1", "unclean.leader.election.enable", "false"),
                       ("BROKER", "", "unclean.leader.election.enable", "true"),
                       ("BROKER", "1", "unclean.leader.election.enable", None)]
