"""`make demo-zk`: the demo's incident and forensics on ZooKeeper and 3 ZooKeeper-mode Kafka 3.9 brokers.

The same code as `make demo` (devtools.demo_kafka.run_scenario and forensics): capture watches ZooKeeper,
marks are zxids, and the offline import decodes a copy of ZooKeeper's transaction log. Checked: the archive
verifies, the state at marks A and B is what kafka-topics --describe printed then, the killed leader's
partition moved and the controller changed (a new controller epoch), every forensics step succeeds with
a clean invariant check, and the offline import of ZooKeeper's log ends in the state the live capture saw.
"""
from __future__ import annotations

import json

import pytest

from devtools.cluster.testing import java_available
from tests.devtools.handover import handed_over, run_handed_over

pytestmark = [pytest.mark.kafka, pytest.mark.slow,
              pytest.mark.skipif(not java_available(), reason="needs java")]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from devtools.demo_kafka import run_scenario
    from replay.store import Store
    from devtools.cluster.testing import running_cluster
    from devtools.cluster.zkmode import ZkKafkaCluster

    from devtools.cluster.config import SecureListeners
    from devtools.cluster.tls import make_tls
    from devtools.demo_kafka import SECOND

    out = tmp_path_factory.mktemp("demo-zk")
    said: list[str] = []
    tls = make_tls(out / "tls")  # as `make demo-zk` does: a SASL_SSL listener for the second principal
    secure = SecureListeners(tls.broker_keystore, tls.truststore, tls.password, plain_users=dict([SECOND]))
    with running_cluster(out / "cluster", "3.9", cluster_class=ZkKafkaCluster, secure=secure,
                         request_logs=True) as c:
        cap = run_scenario(c, out, say=said.append, topic="demo-zk", prefix="demozk")
    store = Store(out / "s.duckdb")
    report = store.load([cap.archive])
    yield cap, store, report, out, said
    store.close()


def _state(store, offset, topic):
    from replay.queries import state_as_of

    point = store.point(offset=offset) if offset is not None else store.point()
    return {(r.topic, r.partition): (r.state.leader, r.state.replicas, r.state.isr)
            for r in state_as_of(store, point, topic).partitions}


def test_archive_verifies_and_marks_are_zxids(demo):
    from schemas.archive.verified import verify

    cap, _, report, _, said = demo
    assert cap.zookeeper
    events = sum(c.events for c in verify([cap.archive]).chains.values())  # raises unless intact
    assert events == cap.events == report.events_added > 0
    assert any(line.startswith("mark A:") and " zxid " in line for line in said), said


def test_state_at_marks_a_and_b_equals_describe_then(demo):
    cap, store, _, _, _ = demo
    for offset, described in ((cap.mark_a, cap.described_a), (cap.mark_b, cap.described_b)):
        want = {k: (d.leader, d.replicas, d.isr) for k, d in described.partitions.items() if k[0] == cap.topic}
        assert len(want) == 6
        assert _state(store, offset, cap.topic) == want
    # at mark B the killed broker is in no ISR of the topic
    assert all(cap.victim not in isr for _, _, isr in _state(store, cap.mark_b, cap.topic).values())


def test_killed_leaders_partition_moved_and_the_controller_changed(demo):
    from schemas.events import ControllerChange, PartitionChange
    from schemas.archive import clusters, iter_events

    cap, store, _, _, _ = demo
    events = [e for cl in clusters(cap.archive) for e in iter_events(cap.archive / cl)]
    before = cap.described_a.partitions[(cap.topic, cap.moved)].leader
    leaders = [e.payload.after.leader for e in events if isinstance(e.payload, PartitionChange)
               and (e.payload.topic, e.payload.partition) == (cap.topic, cap.moved) and e.payload.after]
    assert leaders[0] == before and any(x != before for x in leaders), leaders
    failovers = [e.payload for e in events if isinstance(e.payload, ControllerChange) and not e.bootstrap]
    assert failovers and all(f.epoch > f.previous_epoch for f in failovers), failovers
    assert len(_state(store, None, cap.topic)[(cap.topic, 0)][1]) == 2  # the reassignment dropped a replica


def test_forensics_steps_all_succeed_and_the_check_is_clean(demo, capsys, monkeypatch):
    from devtools.demo_kafka import forensics

    cap, _, _, out, said = demo
    monkeypatch.chdir(out)
    forensics(cap, out)  # raises SystemExit when a step fails
    printed = capsys.readouterr().out
    assert ": OK:" in printed and f"Topic: {cap.topic}\tPartition: {cap.moved}\tLeader:" in printed
    report = json.loads((out / "check.json").read_text())
    violated = {r["name"]: r["examples"] for r in report["invariants"] if r["violations"]}
    assert violated == {}, violated
    assert (out / "imported").is_dir() and (out / "incident.html").is_file()
    commands = handed_over(printed)  # ready to paste, paths as seen from where the demo ran
    assert commands[0] == "export CTRLAUDIT_STORE=demo.duckdb"
    # signed by capture and the archiver with the demo's key; one event proven, the proof checked on its own
    assert "checkpoint(s) verified, seq 0.." in printed and ": OK: event" in printed
    assert run_handed_over(commands, out) == ["timeline", "explain", "state", "check", "verify-proof"]
    # the second principal's change over SASL_SSL, named by `who` from the brokers' request logs
    assert cap.asked_by == "User:bob" and any("User:bob (SASL_SSL, PLAIN) sets" in s for s in said), said
    who = printed[printed.index("--principal User:bob"):]
    asked = [line for line in who.splitlines() if f"ConfigChange {cap.topic} retention.ms: requested by User:bob" in line]
    assert len(asked) == 1 and "AlterConfigs on listener SASL_SSL (" in asked[0], who[:3000]
    assert " 0 unattributed; 0 denied" in who, who[:3000]
    # kept in the archive by the demo (import requests), so the store says it too, as an auditor reads it
    from replay import who_asked
    from replay.store import Store
    with Store(out / "demo.duckdb", read_only=True) as s:
        cols, rows = who_asked.table(s.con, s.cluster())
    bob = [dict(zip(cols, r)) for r in rows if r[cols.index("principal")] == "User:bob"]
    assert [(r["change"], r["resource"], r["cause"]) for r in bob] == [("retention.ms", cap.topic, "request")], rows


def test_offline_import_of_zookeepers_log_ends_where_the_capture_ended(demo, tmp_path):
    """The transaction log's copy was taken after capture stopped: its last state equals the live archive's."""
    from replay.store import Store
    from tests.ctrlaudit.conftest import run

    cap, store, _, _, _ = demo
    result = run("import", "zk", str(cap.metadata_copy), "--out", str(tmp_path / "a"))
    assert result.exit_code == 0, result.output
    imported = Store(tmp_path / "i.duckdb")
    try:
        imported.load([tmp_path / "a"])
        assert _state(imported, None, cap.topic) == _state(store, None, cap.topic)
    finally:
        imported.close()
