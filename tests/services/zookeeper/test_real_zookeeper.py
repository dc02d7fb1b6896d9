"""The transaction-log reader against ZooKeeper's own TxnLogToolkit, on the logs a real ZooKeeper-mode
Kafka 3.9.2 cluster wrote through a scenario: topic creation, broker kill -9 and restart, a reassignment,
a preferred election, a controller kill -9 (new /controller, epoch + 1), topic delete and re-create.
Every transaction of every log file, field by field; what the controller's writes must show; and
`ctrlaudit import zk` of the copied logs, replayed, equals `kafka-topics --describe` at every mark."""

from __future__ import annotations

import json
import shutil
import threading
import time

import pytest

from devtools.cluster import ZkKafkaCluster, find_free_base_port, observe, resolve_version
from devtools.cluster.jars import DEFAULT_PINS
from devtools.cluster.testing import copy_live_directory, java_available
from devtools.cluster.tools import KafkaTools, version_tuple
from devtools.cluster.txnlogtool import compare, parse
from services.zookeeper import TxnLogReader, txn_logs
from services.zookeeper.watch import ZooKeeperWatch
from tests.archive_files import stored
from tests.services.zookeeper.marks import mark_problems

pytestmark = [pytest.mark.kafka,
              pytest.mark.skipif(not java_available(), reason="needs java and mvn")]

T = "zkscn-"


def _until(pred, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if pred():
                return
        except Exception:  # noqa: BLE001 - a tool not answering yet
            pass
        time.sleep(0.5)
    raise AssertionError(f"not reached in {timeout}s: {pred}")


def _p0(c, topic):
    return observe.describe(c, topic).partitions[(topic, 0)]


def _dynamic_broker_configs(c) -> set[tuple[str, str, str]]:
    """unclean.leader.election.enable set dynamically with kafka-configs for the cluster's default and for one
    broker, to Kafka's default (false: the scenario is unchanged). Kafka writes them to
    /config/brokers/<default> and /config/brokers/<id>. What the events must show."""
    one = str(min(c.nodes))
    for entity in (["--entity-default"], ["--entity-name", one]):
        c.tool("configs", "--bootstrap-server", observe.running_bootstrap(c), "--entity-type", "brokers", *entity,
               "--alter", "--add-config", "unclean.leader.election.enable=false")
    return {("", "unclean.leader.election.enable", "false"), (one, "unclean.leader.election.enable", "false")}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    root = tmp_path_factory.mktemp("zkscn")
    c = ZkKafkaCluster(root / "cluster", "3.9", base_port=find_free_base_port(), snap_count=100)
    facts = {}
    marks = []
    mark = lambda name, **kw: marks.append(observe.zk_stable_mark(c, name, **kw))  # noqa: E731
    watched: list = []  # what a live watch (services.zookeeper.watch) saw through the whole scenario
    stop, errors = threading.Event(), []
    try:
        c.up()
        watcher = ZooKeeperWatch(c.zookeeper.connect)
        watcher.start()

        def watch() -> None:
            try:
                while not stop.is_set():
                    got = watcher.poll()
                    watched.extend(got)
                    if not got:
                        time.sleep(0.1)
            except BaseException as exc:  # noqa: BLE001 - surfaced by the test
                errors.append(exc)

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        mark("up")
        c.create_topic(T + "a", 2, 3)
        mark("a created", until=lambda d: len([k for k in d.partitions if k[0] == T + "a"]) == 2)
        c.create_topic(T + "b", 1, 2)
        mark("b created", until=lambda d: (T + "b", 0) in d.partitions)
        victim = next(i for i in c.nodes if i != c.active_controller())
        c.kill_node(victim)
        _until(lambda: victim not in _p0(c, T + "a").isr)
        mark("broker killed", until=lambda d: all(victim not in p.isr for p in d.partitions.values()))
        c.start_node(victim)
        c.wait_ready([victim])
        _until(lambda: all(set(p.isr) == set(p.replicas) for p in observe.describe(c).partitions.values()))
        mark("broker back", until=lambda d: all(set(p.isr) == set(p.replicas) for p in d.partitions.values()))
        cur = _p0(c, T + "b").replicas
        target = [next(i for i in c.nodes if i not in cur), cur[0]]
        plan = root / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": T + "b", "partition": 0, "replicas": target}]}))
        c.tool("reassign", "--bootstrap-server", observe.running_bootstrap(c), "--reassignment-json-file", str(plan),
               "--execute")
        _until(lambda: list(_p0(c, T + "b").replicas) == target and not _p0(c, T + "b").adding)
        mark("reassigned", until=lambda d: set(d.partitions[(T + "b", 0)].isr) == set(target))
        c.tool("leader-election", "--bootstrap-server", observe.running_bootstrap(c), "--election-type", "PREFERRED",
               "--all-topic-partitions", check=False)  # exit 1 when some partitions already had their leader
        _until(lambda: _p0(c, T + "b").leader == target[0])
        mark("preferred election")
        old = c.active_controller(via_tool=True)
        c.kill_node(old)
        _until(lambda: c.active_controller(via_tool=True) != old)
        mark("controller killed", until=lambda d: all(old not in p.isr for p in d.partitions.values()))
        facts.update(old_controller=old, new_controller=c.active_controller(via_tool=True), reassigned=target)
        c.start_node(old)
        c.wait_ready([old])
        mark("old controller back", until=lambda d: all(set(p.isr) == set(p.replicas) for p in d.partitions.values()))
        c.topics("--delete", "--topic", T + "a")
        _until(lambda: T + "a" not in c.topics("--list").stdout.split())
        mark("a deleted", until=lambda d: T + "a" not in d.topic_ids)
        c.create_topic(T + "a", 1, 3)
        mark("a re-created", until=lambda d: (T + "a", 0) in d.partitions)
        # before c: Kafka's last write for a config is a /config/changes notification, which no watch reads
        facts["broker_configs"] = _dynamic_broker_configs(c)
        c.create_topic(T + "c", 3, 1)
        mark("c created", until=lambda d: len([k for k in d.partitions if k[0] == T + "c"]) == 3)
        _unclean_election(c, mark)
        facts["last_zxid"] = c.zookeeper.last_zxid()
        facts["marks"] = marks
        _until(lambda: watcher.last_zxid >= facts["last_zxid"] or errors, 30)
        stop.set()
        thread.join(30)
        watcher.stop()
        facts["watched"], facts["watch_errors"] = watched, errors
        copy = root / "data"
        copy_live_directory(c.zookeeper.data_dir, copy)
        facts["broker_logs"] = [copy_live_directory(n.logs_dir, root / "broker-logs" / f"node{i}")
                                for i, n in sorted(c.nodes.items())]
        files = txn_logs(copy / "version-2")
        # ZooKeeper's own dump, from the pinned 3.9.2 jars (ZooKeeper 3.8.4) whatever release made the logs
        # (CTRLAUDIT_KAFKA_3): the format is the same, and 3.5.9's (Kafka 2.8) throws on a create without data
        toolkit = KafkaTools(DEFAULT_PINS["3.9"], workdir=root)
        dumps = {f: parse(toolkit.run("txnlog-toolkit", "-d", str(f)).stdout) for f in files}
        yield copy, files, dumps, facts
    finally:
        c.down()


def _unclean_election(c, mark) -> None:
    """Topic d on the two brokers that are not the controller, unclean.leader.election.enable=true for it: its
    follower killed (the ISR shrinks to the leader), then its leader (offline: leader none, the ISR keeps it), then
    the follower started: the controller elects it, uncleanly; then the old leader back (it rejoins the ISR)."""
    leader, follower = [i for i in sorted(c.nodes) if i != c.active_controller()][:2]
    d = T + "d"
    c.topics("--create", "--topic", d, "--replica-assignment", f"{leader}:{follower}", "--config",
             "unclean.leader.election.enable=true")
    _until(lambda: set(_p0(c, d).isr) == {leader, follower})
    mark("d created", until=lambda ds: set(ds.partitions[(d, 0)].isr) == {leader, follower})
    c.kill_node(follower)
    _until(lambda: _p0(c, d).isr == (leader,))
    mark("d follower killed", until=lambda ds: ds.partitions[(d, 0)].isr == (leader,))
    c.kill_node(leader)
    _until(lambda: _p0(c, d).leader == -1)
    mark("d offline", until=lambda ds: ds.partitions[(d, 0)].leader == -1)
    c.start_node(follower)
    c.wait_ready([follower])
    _until(lambda: _p0(c, d).leader == follower)
    mark("d unclean election", until=lambda ds: ds.partitions[(d, 0)].leader == follower)
    c.start_node(leader)
    c.wait_ready([leader])
    _until(lambda: all(set(p.isr) == set(p.replicas) for p in observe.describe(c).partitions.values()), 90)
    mark("d old leader back", until=lambda ds: all(set(p.isr) == set(p.replicas) for p in ds.partitions.values()))


def test_every_txn_of_every_log_matches_txnlogtoolkit(scenario):
    _, files, dumps, facts = scenario
    total = 0
    for f in files:
        reader = TxnLogReader(f)
        ours = list(reader)
        dump = dumps[f]
        assert reader.partial_tail is None and reader.skipped == []
        assert len(ours) == len(dump.txns) == dump.eof_count, f
        assert reader.dbid == dump.dbid
        assert {t.zxid: compare(t, d) for t, d in zip(ours, dump.txns) if compare(t, d)} == {}
        total += len(ours)
    assert len(files) > 1  # snapCount 100 rolled the log (ZooKeeper rolls at a random point past half of it)
    assert total > 100
    zxids = [t.zxid for f in files for t in TxnLogReader(f)]
    assert zxids == sorted(zxids) and len(set(zxids)) == len(zxids) and zxids[-1] >= facts["last_zxid"]


def test_the_controllers_writes_are_in_the_log(scenario):
    _, files, _, facts = scenario
    txns = [t for f in files for t in TxnLogReader(f)]
    ops = [(t, o) for t in txns for o in t.ops]
    controllers = [json.loads(o.data)["brokerid"] for _, o in ops if o.kind == "create" and o.path == "/controller"]
    assert facts["old_controller"] in controllers and controllers[-1] == facts["new_controller"]
    epochs = [int(o.data) for _, o in ops if o.kind == "setData" and o.path == "/controller_epoch"]
    assert epochs == sorted(epochs) and len(epochs) >= 2 and epochs[-1] == epochs[-2] + 1
    # the reassignment: /admin/reassign_partitions created and deleted, the assignment ends at the target
    assert any(o.kind == "create" and o.path == "/admin/reassign_partitions" for _, o in ops) or \
        any(o.path == f"/brokers/topics/{T}b" and json.loads(o.data).get("adding_replicas") for _, o in ops
            if o.kind == "setData")
    last_b = [json.loads(o.data) for _, o in ops if o.kind in ("create", "setData") and o.path == f"/brokers/topics/{T}b"]
    assert last_b[-1]["partitions"]["0"] == facts["reassigned"]
    # the deleted topic: /admin/delete_topics/<t> then the topic's znodes deleted, then created again
    seq = [(o.kind, o.path) for _, o in ops if o.path in (f"/admin/delete_topics/{T}a", f"/brokers/topics/{T}a")]
    assert ("create", f"/admin/delete_topics/{T}a") in seq and ("delete", f"/brokers/topics/{T}a") in seq
    assert seq[-1] == ("create", f"/brokers/topics/{T}a")
    # leader epochs of a partition state rise with its setData versions
    st = [(o.version, json.loads(o.data)["leader_epoch"]) for _, o in ops
          if o.kind == "setData" and o.path == f"/brokers/topics/{T}b/partitions/0/state"]
    assert st and [v for v, _ in st] == sorted(v for v, _ in st)
    assert [e for _, e in st] == sorted(e for _, e in st)


def test_dynamic_broker_configs_are_events_from_the_log_and_from_the_live_watch(scenario):
    """The cluster default's and a broker's dynamic unclean.leader.election.enable (the checks' "cluster:" and
    "broker:" scopes) as BROKER ConfigChanges, the default under KRaft's resource name ""."""
    from schemas.events import ConfigChange, ConfigResourceType
    from services.zookeeper.normalizer import ZooKeeperNormalizer

    _, files, _, facts = scenario
    from_log = ZooKeeperNormalizer("zk-log")
    from_watch = ZooKeeperNormalizer("zk-live")
    for events in ([e for f in files for t in TxnLogReader(f) for e in from_log.feed(t)],
                   [e for item in facts["watched"] for e in from_watch.feed_watched(item)]):
        got = {(e.payload.resource_name, e.payload.name, e.payload.value) for e in events
               if isinstance(e.payload, ConfigChange) and e.payload.resource_type is ConfigResourceType.BROKER}
        assert got == facts["broker_configs"]


def test_imported_state_at_every_mark_equals_describe(scenario, tmp_path):
    import subprocess
    import sys

    from replay.store import Store

    copy, _, _, facts = scenario
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "import", "zk", str(copy), "--out", str(tmp_path / "a")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "capture gap" not in res.stdout  # the logs hold the whole history, from zxid 1
    store = Store(tmp_path / "s.duckdb")
    try:
        store.load([tmp_path / "a"])
        marks = facts["marks"]
        assert len(marks) >= 12
        problems, _ = mark_problems(store, marks, lambda m: store.point(offset=m.offset), lambda m: f"{m.offset:#x}")
        assert not problems, "\n".join(problems)
    finally:
        store.close()


def test_import_from_a_snapshot_and_the_logs_after_it(scenario, tmp_path):
    """Older logs purged: the oldest snapshot the remaining logs continue bootstraps the state, the stretch
    before it is a named gap, and every mark after the snapshot still equals describe."""
    import subprocess
    import sys

    from replay.queries import state_as_of
    from replay.store import Store
    from services.zookeeper import log_start_zxid, snapshot_zxid
    from services.zookeeper.snapshot import read_snapshot

    copy, files, _, facts = scenario
    d = tmp_path / "data" / "version-2"
    shutil.copytree(copy / "version-2", d)
    snaps = sorted((p for p in d.iterdir() if snapshot_zxid(p)), key=snapshot_zxid)
    later = [f for f in files[1:] if any(snapshot_zxid(s) >= log_start_zxid(f) - 1 for s in snaps)]
    if not later:
        # ZooKeeper's snapshots are fuzzy and taken beside a log roll, not at it: in some runs every
        # snapshot's zxid is below the next log's first zxid - 1 (e.g. snapshot.54, log.56), so the
        # txns in between live only in the first log and no purge can drop it. Nothing to test then.
        pytest.skip(f"no log starts right after a snapshot in this run: {sorted(p.name for p in d.iterdir())}")
    def snapshot_before(log):
        return read_snapshot(next(s for s in snaps if snapshot_zxid(s) >= log_start_zxid(log) - 1))

    # the first such log whose snapshot holds topics (an early one may precede the scenario's first topic)
    keep = next((f for f in later if any(n.path.startswith("/brokers/topics/") for n in snapshot_before(f).nodes)),
                None)
    if keep is None:
        pytest.skip(f"no snapshot right before a log holds a topic in this run: {sorted(p.name for p in d.iterdir())}")
    for f in files:
        if log_start_zxid(f) < log_start_zxid(keep):
            (d / f.name).unlink()
    snap = snapshot_before(keep)
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "import", "zk", str(tmp_path / "data"),
                          "--out", str(tmp_path / "a")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert f"capture gap: history up to zxid {snap.zxid:#x} is in no log given" in res.stdout
    store = Store(tmp_path / "s.duckdb")
    try:
        store.load([tmp_path / "a"])
        after = [m for m in facts["marks"] if m.offset >= snap.zxid]
        assert after
        for m in after:
            rows = {(r.topic, r.partition): r for r in state_as_of(store, store.point(offset=m.offset)).partitions}
            got = {k: (r.state.leader, r.state.replicas, r.state.isr) for k, r in rows.items()}
            want = {k: (p.leader, p.replicas, p.isr) for k, p in m.described.partitions.items()}
            assert got == want, m.name
    finally:
        store.close()


def test_check_on_the_zookeeper_history_finds_no_violation(scenario, tmp_path):
    """The invariant catalog on the imported ZooKeeper-mode history: broker kill -9, reassignment,
    preferred election, controller failover, delete and re-create are all legal controller behaviour."""
    import subprocess
    import sys

    copy, _, _, _ = scenario
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "import", "zk", str(copy), "--out", str(tmp_path / "a")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "check", str(tmp_path / "a"), "--json",
                          str(tmp_path / "r.json")], capture_output=True, text=True)
    report = json.loads((tmp_path / "r.json").read_text())
    # a warning (a bounded-liveness check's obligation met late) fails it too: recoveries here stay within the
    # default deadlines
    failed = {i["name"]: i["examples"] for i in report["invariants"] if i["status"] in ("fail", "warning")}
    assert res.returncode == 0 and not failed, json.dumps(failed, indent=1)[:6000]


def test_live_watch_state_at_every_mark_equals_describe(scenario, tmp_path):
    """A live watch (kazoo) through the whole scenario, normalized by the same normalizer as
    the transaction log, replayed: the state as of every mark's zxid equals kafka-topics --describe then.
    Versions a watch could not see are gaps, named; the import of ZooKeeper's own log has none."""
    from replay.queries import state_as_of
    from schemas.events import CaptureGap, ControllerChange
    from services.zookeeper.normalizer import ZooKeeperNormalizer
    from services.zookeeper.snapshot import Snapshot

    _, _, _, facts = scenario
    assert not facts["watch_errors"], facts["watch_errors"]
    items = facts["watched"]
    assert isinstance(items[0], Snapshot) and sum(isinstance(i, Snapshot) for i in items) == 1
    norm = ZooKeeperNormalizer("zk-live")
    events = [e for item in items for e in norm.feed_watched(item)]
    gaps = [e.payload for e in events if isinstance(e.payload, CaptureGap)]
    controllers = [e.payload for e in events if isinstance(e.payload, ControllerChange) and not e.bootstrap]
    assert controllers and controllers[-1].leader_id == facts["new_controller"]
    with stored(events, tmp_path, "zk-live") as store:
        problems = []
        for m in facts["marks"][1:]:  # "up": before the first topic
            rows = {(r.topic, r.partition): r for r in state_as_of(store, store.point(offset=m.offset)).partitions}
            got = {k: (r.state.leader, r.state.replicas, r.state.isr, r.state.adding_replicas, r.topic_id)
                   for k, r in rows.items()}
            want = {k: (d.leader, d.replicas, d.isr, d.adding, m.described.topic_ids[k[0]])
                    for k, d in m.described.partitions.items()}
            if got != want:
                problems.append(f"{m.name} @ {m.offset:#x}: replayed {got} != described {want}")
        assert not problems, "\n".join(problems) + f"\ngaps: {gaps}"
    print(f"live watch: {len(items)} items, {len(events)} events, {len(gaps)} gap(s): {gaps}")


def test_broker_log_import_equals_the_transaction_log(scenario, tmp_path):
    """Every broker's state-change.log and controller.log of the whole scenario (Kafka's shipped
    log levels), imported with `ctrlaudit import logs`: each partition state it emits equals the one ZooKeeper's
    transaction log holds at the same topic id, partition and partition epoch, in the same order, and none of
    the transaction log's is missing; the controllers and broker epochs match; every event names its file and
    line; the only gap is the history before the first line; `check` finds nothing."""
    import subprocess
    import sys

    from schemas.events import BrokerChange, CaptureGap, ControllerChange, PartitionChange
    from services.brokerlogs.offline import import_log_events
    from services.normalize.imports import ImportReport
    from services.zookeeper.offline import import_zk_events

    copy, _, _, facts = scenario
    logs = facts["broker_logs"]
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "import", "logs", *map(str, logs), "--out",
                          str(tmp_path / "a")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    # before 3.1 (CTRLAUDIT_KAFKA_3) the controller's "Partition t-p state changed to (Leader:..,ISR:..,..) after
    # removing replica R" states no zkVersion: the epochs it wrote are stated whole by no line, so they are gaps
    epochless = version_tuple(resolve_version("3.9")) < (3, 1)
    assert res.stdout.splitlines()[2].startswith("capture gap: history before"), res.stdout
    assert epochless or res.stdout.count("capture gap:") == 1, res.stdout

    report = ImportReport()
    ours = list(import_log_events(logs, "c", report=report))
    zk = list(import_zk_events([copy], "c"))

    def history(events):
        out: dict = {}
        for e in events:
            if isinstance(e.payload, PartitionChange) and e.payload.after is not None:
                out.setdefault((e.payload.topic_id, e.payload.partition), []).append(e.payload.after)
        return out

    got, want = history(ours), history(zk)
    if epochless:
        names = {(e.payload.topic_id, e.payload.partition): e.payload.topic for e in zk
                 if isinstance(e.payload, PartitionChange)}
        named, after = _gap_epochs(ours)
        for key, states in want.items():
            mine = list(got.get(key, []))
            for s in states:  # ZooKeeper's states in order: each emitted as it is, or its epoch in a named gap
                if mine and mine[0] == s:
                    mine.pop(0)
                    continue
                t, p, e = names[key], key[1], s.partition_epoch
                assert (t, p, e) in named or any(k < e for k in after.get((t, p), ())), (key, s, mine[:1])
            assert not mine, (key, mine)  # nothing ZooKeeper does not hold, nothing out of order
        assert sum(map(len, got.values())) >= 8 and len(got) >= 5
    else:
        assert got == want
        assert sum(map(len, got.values())) >= 25 and len(got) >= 7
    assert [(c.payload.leader_id, c.payload.epoch) for c in ours if isinstance(c.payload, ControllerChange)] == \
        [(c.payload.leader_id, c.payload.epoch) for c in zk if isinstance(c.payload, ControllerChange)]
    # registrations and their epochs (czxids); the controller states its whole cache at once, in id order
    assert sorted((b.payload.broker_id, (b.payload.after or b.payload.before).epoch, b.payload.kind)
                  for b in ours if isinstance(b.payload, BrokerChange)) == \
        sorted((b.payload.broker_id, (b.payload.after or b.payload.before).epoch, b.payload.kind)
               for b in zk if isinstance(b.payload, BrokerChange) and not b.bootstrap)
    assert epochless or [e for e in ours if isinstance(e.payload, CaptureGap)] == ours[:1]
    assert all(e.source.kind == "BROKER_LOG" and e.source.line and e.source.file.endswith(
        ("state-change.log", "controller.log", "server.log")) for e in ours)

    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "check", str(tmp_path / "a"), "--json",
                          str(tmp_path / "r.json")], capture_output=True, text=True)
    report_json = json.loads((tmp_path / "r.json").read_text())
    # a warning (a bounded-liveness check's obligation met late) fails it too: recoveries here stay within the
    # default deadlines
    failed = {i["name"]: i["examples"] for i in report_json["invariants"] if i["status"] in ("fail", "warning")}
    assert res.returncode == 0 and not failed, json.dumps(failed, indent=1)[:6000]


def _gap_epochs(events) -> tuple[set[tuple[str, int, int]], dict[tuple[str, int], list[int]]]:
    """The partition epochs CaptureGaps name: (topic, partition, epoch) of "t-p: partition epochs 2..4 ..." and
    "epochs 1, 3 ...", and per partition the k of "t-p: partition epochs after k ..." (every epoch above k)."""
    import re

    from schemas.events import CaptureGap

    named: set[tuple[str, int, int]] = set()
    after: dict[tuple[str, int], list[int]] = {}
    for e in events:
        if not isinstance(e.payload, CaptureGap):
            continue
        reason = e.payload.reason
        if m := re.match(r"(\S+)-(\d+): partition epochs (\d+)\.\.(\d+) ", reason):
            named |= {(m[1], int(m[2]), n) for n in range(int(m[3]), int(m[4]) + 1)}
        elif m := re.match(r"(\S+)-(\d+): partition epochs after (\d+) ", reason):
            after.setdefault((m[1], int(m[2])), []).append(int(m[3]))
        elif m := re.match(r"(\S+)-(\d+): partition epochs ((?:\d+, )*\d+) ", reason):
            named |= {(m[1], int(m[2]), int(n)) for n in m[3].split(", ")}
    return named, after


def test_broker_logs_at_every_mark_equal_describe_or_say_they_do_not_know(scenario, tmp_path):
    """The incident nobody captured: only the brokers' own logs (state-change.log, controller.log, server.log of
    every broker), imported, loaded and asked by time at every mark. Each partition state describe printed is
    either the one `state` gives, line for line as kafka-topics prints it, or one `state` flags as not known
    (the point falls in a stretch holding that partition): no silent mismatch. The share flagged is printed."""
    import subprocess
    import sys

    from replay.store import Store
    from tests.services.broker_log_marks import compare_marks

    _, _, _, facts = scenario
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "import", "logs", *map(str, facts["broker_logs"]),
                          "--out", str(tmp_path / "a")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    store = Store(tmp_path / "s.duckdb")
    release = resolve_version("3.9")
    try:
        store.load([tmp_path / "a"])
        result = compare_marks(store, facts["marks"], release)
        assert result.marks >= 10
        print("\n" + result.summary(f"Kafka {release} ZooKeeper mode"))
        assert not result.silent, "\n".join(result.silent)
        # the goal: at most 5 % not known. 3.0's controller states no partition epoch when it removes a replica
        # from an ISR (its brokers do not state each epoch whole either, as 2.8's do): 61 % in the run that wrote
        # this, every one of them flagged
        assert result.share <= 0.05 or (3, 0) <= version_tuple(release) < (3, 1), result.share
    finally:
        store.close()
