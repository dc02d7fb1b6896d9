"""A real Kafka 3.9.2 cluster migrated from ZooKeeper to KRaft (KIP-866) during a scenario, followed
end to end as one history. Before the migration: topics created, a broker kill -9 and restart (leader change), a
reassignment; the migration's steps (KRaft controller, brokers rolled in migration mode: metadata copied, dual-write;
a topic created and a broker kill -9/restart while the brokers are still ZooKeeper-mode; brokers rolled into KRaft;
finalized); after it a topic created and a reassignment. `kafka-topics --describe` at a mark after each stretch, with
its wall-clock time. `ctrlaudit import kraft METADATA --zookeeper-data ZK_DATA` makes one archive (one cluster id, one
chain); the replayed state as of every mark's time equals describe; `ctrlaudit check` finds nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from schemas.events import PartitionChange
from devtools.cluster import ZkKafkaCluster, find_free_base_port, observe, resolve_version
from devtools.cluster.tools import version_tuple
from devtools.cluster.migration import CONTROLLER_ID, Migration
from devtools.cluster.testing import copy_node_metadata, java_available, wait_until
from tests.services.zookeeper.marks import mark_problems

pytestmark = [pytest.mark.kafka, pytest.mark.slow,
              pytest.mark.skipif(not java_available(), reason="needs java and mvn")]

T = "mig-"


def _full(d: observe.Described) -> bool:
    return all(p.leader >= 0 and set(p.isr) == set(p.replicas) for p in d.partitions.values())


def _has(*keys):
    return lambda d: all(k in d.partitions for k in keys) and _full(d)


def _reassign(c, root, topic: str, target: list[int]) -> None:
    plan = root / f"plan-{topic}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": target}]}))
    c.tool("reassign", "--bootstrap-server", observe.running_bootstrap(c), "--reassignment-json-file", str(plan),
           "--execute")
    wait_until(lambda: (lambda p: list(p.replicas) == target and not p.adding and set(p.isr) == set(target))(
        observe.describe(c, topic).partitions[(topic, 0)]), 90, f"{topic} reassigned to {target}")


def _kill_and_restart(c, mark, stretch: str) -> None:
    """kill -9 a broker that leads something (its partitions move), then start it again."""
    d = observe.describe(c)
    victim = next(p.leader for k, p in sorted(d.partitions.items()) if p.leader >= 0)
    c.kill_node(victim)
    wait_until(lambda: all(victim not in p.isr and p.leader != victim
                           for p in observe.describe(c).partitions.values()), 90, f"broker {victim} out of every ISR")
    mark(f"broker {victim} killed ({stretch})", until=lambda d: all(victim not in p.isr for p in d.partitions.values()))
    c.start_node(victim)
    c.wait_ready([victim], timeout=180)
    wait_until(lambda: _full(observe.describe(c)), 90, "full ISRs again")
    mark(f"broker {victim} back ({stretch})", until=_full)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    if version_tuple(resolve_version("3.9")) < (3, 6):  # CTRLAUDIT_KAFKA_3 set to an older release
        pytest.skip("ZooKeeper-to-KRaft migration is production-ready from Kafka 3.6 (KIP-866)")
    root = tmp_path_factory.mktemp("migscn")
    c = ZkKafkaCluster(root / "cluster", "3.9", base_port=find_free_base_port(), snap_count=100)
    marks: list[observe.Mark] = []
    facts: dict = {"marks": marks}

    def mark(name, **kw):
        marks.append(observe.timed_mark(c, name, **kw))

    try:
        c.up()
        mark("up")
        # ZooKeeper mode
        c.create_topic(T + "a", 2, 3, "--config", "retention.ms=86400000")  # the migration restates it too
        c.create_topic(T + "b", 1, 2)
        mark("a, b created (zk)", until=_has((T + "a", 0), (T + "a", 1), (T + "b", 0)))
        _kill_and_restart(c, mark, "zk")
        cur = observe.describe(c, T + "b").partitions[(T + "b", 0)].replicas
        target = [next(i for i in c.nodes if i not in cur), cur[0]]
        _reassign(c, root, T + "b", target)
        mark("b reassigned (zk)", until=_full)
        # the migration: the KRaft controller, then the brokers in migration mode (copy, dual-write)
        c.migrate_to_kraft("controller")
        mark("KRaft controller up (zk)", until=_full)
        c.migrate_to_kraft("brokers")
        mark("metadata migrated (dual-write)", until=_full)
        c.create_topic(T + "c", 1, 3)
        mark("c created (dual-write)", until=_has((T + "c", 0)))
        _kill_and_restart(c, mark, "dual-write")
        c.migrate_to_kraft("kraft-brokers")
        mark("brokers in KRaft mode (dual-write)", until=_full)
        c.migrate_to_kraft("finalize")
        mark("finalized (kraft)", until=_full)
        # KRaft
        c.create_topic(T + "d", 2, 2)
        mark("d created (kraft)", until=_has((T + "d", 0), (T + "d", 1)))
        cur = observe.describe(c, T + "c").partitions[(T + "c", 0)].replicas
        _reassign(c, root, T + "c", list(cur[:2]))
        mark("c reassigned (kraft)", until=_full)
        facts["claim"] = json.loads(next(
            line for line in c.tool("zookeeper-shell", "-server", c.zookeeper_connect, "get", "/controller").stdout
            .splitlines() if line.startswith("{")))
        facts["completed_line"] = Migration(c).migration_log_line()
    finally:
        c.down()
    facts["zk_data"] = shutil.copytree(c.zookeeper.data_dir, root / "copy" / "zk")
    facts["metadata"] = copy_node_metadata(c, CONTROLLER_ID, root / "copy" / "kraft")
    archive = root / "archive"
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "import", "kraft", str(facts["metadata"]),
                          "--zookeeper-data", str(facts["zk_data"]), "--out", str(archive)],
                         capture_output=True, text=True)
    facts["import"] = res
    facts["archive"] = archive
    yield facts


def _events(archive):
    from schemas.archive import clusters, iter_events
    found = clusters(archive)
    assert len(found) == 1, found  # one cluster id
    return list(iter_events(archive / found[0]))


def test_one_archive_one_chain_across_the_cutover(migrated):
    res = migrated["import"]
    assert res.returncode == 0, res.stderr
    assert "capture gap" not in res.stdout, res.stdout
    # the migration restated a and b (3 partitions) and a's config, equal to ZooKeeper's state at the claim
    assert "2 topic(s), 3 partition(s), 1 topic config(s) equal" in res.stdout, res.stdout
    assert f"cutover: controller {CONTROLLER_ID}, ZooKeeper epoch " in res.stdout, res.stdout
    events = _events(migrated["archive"])
    assert len({e.cluster_id for e in events}) == 1
    assert [e.seq for e in events] == list(range(len(events)))  # one chain, no hole
    kinds = [e.source.kind.value for e in events]
    cut = kinds.index("KRAFT_LOG")
    # ZooKeeper's part, then the metadata log's: one switch, never back
    assert set(kinds[:cut]) == {"ZOOKEEPER"} and set(kinds[cut:]) == {"KRAFT_LOG"}
    claim, cutover = events[cut - 1].payload, events[cut].payload
    # the last ZooKeeper event is the claim: /controller = the KRaft controller, /controller_epoch bumped
    assert type(claim).__name__ == "ControllerChange" and claim.leader_id == CONTROLLER_ID
    assert migrated["claim"]["brokerid"] == CONTROLLER_ID and migrated["claim"]["kraftControllerEpoch"] >= 0
    # the cutover: the same controller, its quorum's epoch (another counter), ZooKeeper's epoch as the previous one
    assert type(cutover).__name__ == "ControllerChange"
    assert (cutover.leader_id, cutover.previous_leader_id, cutover.previous_epoch) == \
        (CONTROLLER_ID, CONTROLLER_ID, claim.epoch)
    assert cutover.epoch == migrated["claim"]["kraftControllerEpoch"]
    # the migration restates a and b: no second creation; c (created during dual-write) is created once, by KRaft
    created = [(e.payload.topic, e.source.kind.value) for e in events
               if type(e.payload).__name__ == "TopicChange" and e.payload.kind.value == "CREATED"]
    assert sorted(created) == sorted([(T + "a", "ZOOKEEPER"), (T + "b", "ZOOKEEPER"), (T + "c", "KRAFT_LOG"),
                                      (T + "d", "KRAFT_LOG")]), created
    assert migrated["completed_line"] is not None
    # ZooKeeper went on being written after the claim (the controller's dual-writes of c, the broker moves): none of
    # it is in the history, which would otherwise hold those changes twice
    from services.zookeeper import TxnLogReader, txn_logs
    claim_zxid = events[cut - 1].source.zxid
    later = [o.path for f in txn_logs(migrated["zk_data"] / "version-2") for t in TxnLogReader(f)
             if t.zxid > claim_zxid for o in t.ops if o.path]
    assert f"/brokers/topics/{T}c" in later and any(p.endswith("/state") for p in later)
    print(f"claim at zxid {claim_zxid:#x} (ZooKeeper epoch {claim.epoch}), cutover at offset {events[cut].source.offset} "
          f"(KRaft epoch {cutover.epoch}); {len(later)} later ZooKeeper writes not read; {len(events)} events")


def test_state_at_every_mark_equals_describe(migrated):
    from replay.store import Store

    assert migrated["import"].returncode == 0, migrated["import"].stderr
    marks = migrated["marks"]
    assert len(marks) >= 10
    store = Store(migrated["archive"].parent / "s.duckdb")
    try:
        store.load([migrated["archive"]])
        problems, compared = mark_problems(store, marks, lambda m: store.point(time=m.time_ms), lambda m: str(m.time_ms))
        assert not problems, "\n".join(problems)
        print(f"{len(marks)} marks, {compared} partition states equal describe: {[m.name for m in marks]}")
    finally:
        store.close()


def test_check_on_the_migrated_history_is_clean(migrated, tmp_path):
    assert migrated["import"].returncode == 0, migrated["import"].stderr
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "check", str(migrated["archive"]), "--json",
                          str(tmp_path / "r.json")], capture_output=True, text=True)
    report = json.loads((tmp_path / "r.json").read_text())
    # a warning (a bounded-liveness check's obligation met late) fails it too: recoveries here stay within the
    # default deadlines
    failed = {i["name"]: i["examples"] for i in report["invariants"] if i["status"] in ("fail", "warning")}
    assert res.returncode == 0 and not failed, json.dumps(failed, indent=1)[:6000]


def test_a_migration_that_does_not_restate_zookeeper_is_one_error(migrated):
    """The ZooKeeper part's image changed before the migration transaction is compared: the import stops with the
    partition, the offset of the migration's record and both states."""
    from services.normalize.migration_offline import MigratedKRaftNormalizer, MigrationMismatch, claim_epoch
    from services.kraft.offline import import_events
    from services.zookeeper.offline import import_zk_events
    from services.zookeeper.normalizer import ZooKeeperNormalizer

    zk = ZooKeeperNormalizer("c")
    claims = []

    def at_claim(txn) -> bool:
        if claim_epoch(txn) is None:
            return False
        claims.append(txn.zxid)
        return True

    events = list(import_zk_events([migrated["zk_data"]], "c", normalizer=zk, until=at_claim))
    key = sorted(k for k in zk.image.partitions if zk.image.topic_names[k[0]] == T + "b")[0]
    state = zk.image.partitions[key]
    # ZooKeeper's image made to disagree: one more event applied to it, the partition's leader epoch + 7
    last = next(e for e in reversed(events) if isinstance(e.payload, PartitionChange)
                and (e.payload.topic_id, e.payload.partition) == key)
    zk.delta.put(replace(last, payload=replace(last.payload, before=state,
                                               after=replace(state, leader_epoch=state.leader_epoch + 7))))
    norm = MigratedKRaftNormalizer("c", zk, claims[0])
    with pytest.raises(MigrationMismatch) as err:
        list(import_events([migrated["metadata"]], "c", normalizer=norm))
    msg = str(err.value)
    assert "\n" not in msg and f"partition {T}b-0" in msg and "PartitionRecord at offset " in msg
    assert f"leader_epoch={state.leader_epoch}" in msg and f"leader_epoch={state.leader_epoch + 7}" in msg


def test_zookeeper_logs_without_the_claim_are_one_error_line(migrated, tmp_path):
    from services.zookeeper import txn_logs

    logs = txn_logs(migrated["zk_data"] / "version-2")
    assert len(logs) > 1
    early = tmp_path / "zk" / "version-2"
    early.mkdir(parents=True)
    shutil.copy(logs[0], early)  # the first log only: it ends long before the KRaft controller exists
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "import", "kraft", str(migrated["metadata"]),
                          "--zookeeper-data", str(tmp_path / "zk"), "--out", str(tmp_path / "a")],
                         capture_output=True, text=True)
    assert res.returncode != 0
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "no KRaft controller's claim of /controller" in res.stderr


def test_ctrlaudit_state_by_time_reads_as_describe_at_every_mark(migrated, tmp_path):
    """The same through the command line: `ctrlaudit state --time T` prints the kafka-topics --describe layout, and
    read back with the describe parser it is what the cluster described at T (leaders, replicas, ISRs, topic ids)."""
    store = str(tmp_path / "s.duckdb")
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "load", str(migrated["archive"]), "--store", store],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    problems = []
    for m in migrated["marks"]:
        res = subprocess.run([sys.executable, "-m", "ctrlaudit", "state", "--store", store, "--time", str(m.time_ms)],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        got = observe.parse_describe(res.stdout)
        view = lambda d: ({k: (p.leader, p.replicas, p.isr) for k, p in d.partitions.items()}, d.topic_ids)  # noqa: E731
        if view(got) != view(m.described):
            problems.append(f"{m.name}: state {view(got)} != describe {view(m.described)}")
    assert not problems, "\n".join(problems)
