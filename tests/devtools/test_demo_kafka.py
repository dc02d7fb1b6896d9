"""`make demo`'s live loop on the real cluster (4.x): capture, scenario, archive, forensics.

The demo is the first thing a newcomer runs, so the suite drives the same code
(devtools.demo_kafka.run_scenario and forensics) against the session's cluster, with its own topic
names, and checks what the demo claims: the archive verifies, the state at mark A is what
kafka-topics --describe printed then, and the partition whose leader was killed shows the move.
"""
from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from devtools.cluster.testing import heal
from tests.devtools.handover import handed_over, run_handed_over

pytestmark = [pytest.mark.kafka, pytest.mark.slow,
              pytest.mark.parametrize("kafka_cluster", ["4.x"], indirect=True)]


@pytest.fixture(scope="module")
def demo(kafka_cluster, tmp_path_factory):
    from devtools.demo_kafka import run_scenario
    from replay.store import Store

    c = heal(kafka_cluster)
    out = tmp_path_factory.mktemp("demo")
    uid = uuid.uuid4().hex[:6]
    said: list[str] = []
    cap = run_scenario(c, out, say=said.append, topic=f"demo-{uid}", prefix=f"demo{uid}")
    store = Store(out / "s.duckdb")
    report = store.load([cap.archive])
    yield cap, store, report, out, said
    store.close()


def test_archive_verifies_and_holds_every_captured_event(demo):
    from schemas.archive.verified import verify
    cap, _, report, _, _ = demo
    events = sum(c.events for c in verify([cap.archive]).chains.values())  # raises unless intact
    assert events == cap.events == report.events_added > 0


def test_a_killed_broker_is_one_warning_per_outage_in_captures_log(demo):
    """The scenario kills a broker with kill -9: the workers' and the sampler's clients retry it several times a
    second, and capture.log says so once per node and outage (services/capture/outages.py), not per retry."""
    _, _, _, out, _ = demo
    log = (out / "capture.log").read_text(errors="replace").splitlines()
    said = [line for line in log if "unreachable (" in line and "expected while that broker is down" in line]
    assert said, "\n".join(log[-40:])
    assert all("WARNING" in line for line in said)
    retries = [line for line in log if "Unable connect to node with id" in line or "Connection lost" in line]
    assert not retries, retries[:5]


def test_state_at_mark_a_equals_describe_then(demo):
    from replay.queries import state_as_of
    cap, store, _, _, _ = demo
    rows = {(r.topic, r.partition): r.state for r in state_as_of(store, store.point(offset=cap.mark_a), cap.topic).partitions}
    described = {k: d for k, d in cap.described_a.partitions.items() if k[0] == cap.topic}
    assert len(described) == 6
    assert {k: (s.leader, s.replicas, s.isr) for k, s in rows.items()} == \
        {k: (d.leader, d.replicas, d.isr) for k, d in described.items()}


def test_killed_leaders_partition_moved_and_the_controller_changed(demo):
    from replay.queries import state_as_of
    from schemas.events import ControllerChange, PartitionChange
    from schemas.archive import clusters, iter_events
    cap, store, _, _, _ = demo
    before = cap.described_a.partitions[(cap.topic, cap.moved)].leader
    timeline_leaders = []
    events = [e for cl in clusters(cap.archive) for e in iter_events(cap.archive / cl)]
    for e in events:
        p = e.payload
        if isinstance(p, PartitionChange) and (p.topic, p.partition) == (cap.topic, cap.moved) and p.after:
            timeline_leaders.append(p.after.leader)
    assert timeline_leaders[0] == before
    assert any(leader != before for leader in timeline_leaders), timeline_leaders
    assert sum(isinstance(e.payload, ControllerChange) for e in events) >= 1
    end = {r.partition: r.state for r in state_as_of(store, store.point(), cap.topic).partitions}
    assert len(end[0].replicas) == 2  # the reassignment dropped one replica of partition 0


def test_forensics_steps_all_succeed(demo, capsys, monkeypatch):
    from devtools.demo_kafka import forensics
    cap, _, _, out, _ = demo
    monkeypatch.chdir(out)
    forensics(cap, out)  # raises SystemExit when a step fails
    printed = capsys.readouterr().out
    assert ": OK:" in printed
    assert f"Topic: {cap.topic}\tPartition: {cap.moved}\tLeader:" in printed
    assert "election" in printed.lower()
    assert (out / "imported").is_dir()  # the offline import of the copied metadata log ran
    commands = handed_over(printed)  # ready to paste, paths as seen from where the demo ran
    assert commands[0] == "export CTRLAUDIT_STORE=demo.duckdb"
    # signed by capture and the archiver with the demo's key; one event proven, the proof checked on its own
    assert "checkpoint(s) verified, seq 0.." in printed and ": OK: event" in printed
    assert run_handed_over(commands, out) == ["timeline", "explain", "state", "check", "verify-proof"]


def test_offline_import_holds_the_archived_kraft_changes(demo):
    """The live archive and the offline decode of the same node's log agree on every KRaft change the
    live capture saw (the copy was taken after capture stopped, so it may hold a few more records)."""
    from services.kraft.offline import import_events
    from schemas.archive import clusters, iter_events
    cap, _, _, _, _ = demo
    live = [(e.source.offset, e.source.index, e.kind, e.payload)
            for cl in clusters(cap.archive) for e in iter_events(cap.archive / cl)
            if e.source.kind.value == "KRAFT_LOG"]
    offline = [(e.source.offset, e.source.index, e.kind, e.payload) for e in import_events([cap.metadata_copy])
               if e.source.kind.value == "KRAFT_LOG"]
    # Retention may have deleted early segments from either view (the shared cluster keeps small
    # segments): compare where both hold the log.
    first, last = max(live[0][0], offline[0][0]), live[-1][0]
    both = lambda xs: [x for x in xs if first <= x[0] <= last]  # noqa: E731
    assert len(both(live)) > 100
    assert both(offline) == both(live)


def test_reassignment_json_as_of_mark_a_puts_the_cluster_back(demo, kafka_cluster, tmp_path):
    """`state --offset MARK_A --reassignment-json` fed to Kafka's own kafka-reassign-partitions undoes the
    demo's reassignment: kafka-topics --describe then shows the replicas the store had as of mark A.
    Last in this module: it changes the demo topic."""
    import json
    import time

    from replay.formats import reassignment_json
    from replay.queries import state_as_of
    from devtools.cluster.observe import describe, running_bootstrap

    cap, store, _, out, _ = demo
    c = heal(kafka_cluster)
    # what `state --reassignment-json` prints (the fixture holds the store open, so not through the CLI)
    at_mark = state_as_of(store, store.point(offset=cap.mark_a), cap.topic)
    text = reassignment_json(at_mark)
    plan = tmp_path / "back.json"
    plan.write_text(text)
    want = {(r.topic, r.partition): list(r.state.replicas) for r in at_mark.partitions}
    assert {(p["topic"], p["partition"]): p["replicas"] for p in json.loads(text)["partitions"]} == want
    now = {k: list(p.replicas) for k, p in describe(c, cap.topic).partitions.items()}
    assert now != want  # the demo's reassignment dropped a replica of partition 0 after mark A
    c.tool("reassign", "--bootstrap-server", running_bootstrap(c), "--reassignment-json-file", str(plan), "--execute")
    deadline = time.monotonic() + 90
    while "is still in progress" in c.tool("reassign", "--bootstrap-server", running_bootstrap(c),
                                          "--reassignment-json-file", str(plan), "--verify", check=False).stdout:
        assert time.monotonic() < deadline, "the reassignment back to mark A did not complete"
        time.sleep(1)
    assert {k: list(p.replicas) for k, p in describe(c, cap.topic).partitions.items()} == want


def test_readme_walkthrough_answers_who_led_and_why(demo, tmp_path, monkeypatch):
    """The tutorial's walkthrough of a real incident (docs/tutorial.md), line by line through the CLI, on this incident's copied metadata log:
    the topic, partition, times and copy path of the run put in for orders, 7, 03:00/03:14/03:30 and
    copy/. `state` at 03:14 (mark B: the killed broker out of every ISR) names the leader kafka-topics
    --describe printed then; `explain` names the killed broker as the previous leader, fenced."""
    import re
    import shlex
    from pathlib import Path

    from typer.testing import CliRunner

    from ctrlaudit.cli import app
    from schemas.times import iso

    cap, store, _, _, _ = demo
    tutorial = (Path(__file__).resolve().parents[2] / "docs" / "tutorial.md").read_text()
    block = re.search(r"## On a real incident: who led orders-7.*?```sh\n(.*?)```", tutorial, re.S).group(1)
    at = lambda offset: iso(store.point(offset=offset).event_time_ms)  # noqa: E731
    put = {"copy/__cluster_metadata-0": str(cap.metadata_copy), "2026-11-20T03:00:00Z": at(cap.mark_a),
           "2026-11-20T03:14:00Z": at(cap.mark_b), "2026-11-20T03:30:00Z": at(cap.mark_end)}
    monkeypatch.chdir(tmp_path)
    transcript, said = [], {}
    for line in block.splitlines():
        command = line.split("  #")[0].strip()
        if not command.startswith("ctrlaudit "):
            continue
        for text, value in put.items():
            command = command.replace(text, value)
        args = shlex.split(command)[1:]
        args = [cap.topic if a == "orders" else a for a in args]
        args = [str(cap.moved) if i and args[i - 1] == "--partition" else a for i, a in enumerate(args)]
        done = CliRunner().invoke(app, args)
        assert done.exit_code in ((0, 1) if args[0] == "check" else (0,)), f"{command}\n{done.output}"
        said[args[0]] = done.stdout
        transcript.append(f"$ ctrlaudit {shlex.join(args)}\n{done.stdout}")
    assert set(said) == {"import", "load", "check", "report", "state", "explain", "timeline"}
    out = Path(__file__).resolve().parents[2] / "test-output"
    out.mkdir(exist_ok=True)
    (out / "walkthrough.txt").write_text("\n".join(transcript))

    before = cap.described_a.partitions[(cap.topic, cap.moved)].leader
    then = cap.described_b.partitions[(cap.topic, cap.moved)].leader
    assert before == cap.victim and then != cap.victim
    line = next(l for l in said["state"].splitlines() if l.startswith(f"\tTopic: {cap.topic}\tPartition: {cap.moved}\t"))
    assert f"\tLeader: {then}\t" in line, said["state"]
    assert re.search(rf"previous leader:\s+{cap.victim}\n", said["explain"]), said["explain"]
    assert re.search(rf"new leader:\s+{then}\b", said["explain"]), said["explain"]
    # why: the controller fenced the killed broker, in the batch that moved the leader
    assert f"previous leader's broker: broker {cap.victim} fenced in the same metadata batch" in said["explain"]
    assert (tmp_path / "incident.html").stat().st_size > 100_000


def test_the_second_principals_change_is_named_by_who(kafka_cluster, tmp_path, capsys):
    """`make demo`'s second principal, in KRaft: User:bob on the SASL_SSL listener (PLAIN) alters a topic's retention
    with kafka-configs (devtools.demo_kafka._second_principal) and the demo's `who` step names bob's request for that
    change. On a one-node secured cluster of its own, started like the demo's (secure, request_logs): the session's
    cluster has no SASL listener."""
    from devtools.cluster.config import SecureListeners
    from devtools.cluster.testing import running_cluster, wait_until
    from devtools.cluster.tls import make_tls
    from devtools.demo_kafka import SECOND, _second_principal, who_asked
    from services.requests.files import read_logs
    from services.requests.reader import Reading

    tls = make_tls(tmp_path / "tls")
    secure = SecureListeners(tls.broker_keystore, tls.truststore, tls.password, plain_users=dict([SECOND]))
    said: list[str] = []
    with running_cluster(tmp_path / "cluster", "4.x", nodes=1, heap="384m", secure=secure, request_logs=True) as c:
        c.create_topic("demo-who", 1, 1)
        asked_by = _second_principal(c, "demo-who", tmp_path, said.append)
        logs = (c.nodes[1].logs_dir,)
        wait_until(lambda: any(r.principal == asked_by and not r.forwarded and r.api and "AlterConfigs" in r.api
                               for r in read_logs(list(logs), Reading())), 30, "bob's request logged")
    assert asked_by == "User:bob" and said and "User:bob (SASL_SSL, PLAIN) sets demo-who's retention.ms" in said[0]
    done = subprocess.run([sys.executable, "-m", "ctrlaudit", "import", "kraft", str(c.metadata_dir(1)), "--out",
                           str(tmp_path / "archive")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    capsys.readouterr()
    printed = who_asked(tmp_path / "archive", logs, asked_by)
    asked = [line for line in printed.splitlines() if "ConfigChange demo-who retention.ms: requested by User:bob" in line]
    assert len(asked) == 1 and "AlterConfigs on listener SASL_SSL (" in asked[0], printed
    assert "1 changes: 1 requested," in printed and " 0 unattributed; 0 denied" in printed, printed
