"""The proof: a real cluster's history, replayed, equals what Kafka's own tools showed.

A scenario drives the shared real cluster (tests/conftest.py) with Kafka's tools and a client:
topic creation (one with an explicit --replica-assignment), added partitions, a replication factor
raised 1 -> 3 by reassignment, replicas moved between brokers, a throttled reassignment that is
cancelled, kill -9 and restart of a broker (fencing, ISR shrink/expand, leader moves), a preferred
election, unclean elections (automatic on a topic with unclean.leader.election.enable=true, and by
LeaderElectionCommand --election-type UNCLEAN on one without), a killed active controller (new
controller epoch), and a topic deleted and re-created under the same name (new topic id).

At marks along the way it records `kafka-topics --describe` with the committed metadata offset
(HW - 1) while describe is stable. Then one node's metadata directory is copied, imported offline
(services.kraft.offline.import_events -> ArchiveWriter), loaded into a Store, and:
  (a) the replayed state as of each mark's offset == describe at that mark, partition by partition;
  (b) the image as of the newest snapshot == the metadata shell's view of that .checkpoint
      (topics and ids, every PartitionRegistration field we model, broker registrations);
  (c) the decisions show up as the right events (UNCLEAN + RECOVERING, ControllerChange with a
      higher epoch, a new topic id, REASSIGNMENT_START / COMPLETE / CANCEL).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from schemas.events import (
    ControllerChange, ElectionType, LeaderRecoveryState, PartitionChange, PartitionChangeKind as K, TopicChange,
    TopicChangeKind,
)
from devtools.cluster import observe
from devtools.cluster.testing import copy_live_directory, copy_node_metadata, heal
from services.kraft import metadata_files, snapshot_id

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

P = "h-"  # this module's topic prefix on the shared cluster
ALPHA, PINNED, GROW, SLOW, DIRTY, DIRTY2 = (P + n for n in ("alpha", "pinned", "grow", "slow", "dirty", "dirty2"))


# kafka-topics --describe's filters, compared with `ctrlaudit state` under the same names
DESCRIBE_FILTERS = ("--under-replicated-partitions", "--under-min-isr-partitions", "--at-min-isr-partitions",
                    "--unavailable-partitions", "--topics-with-overrides")


@dataclass
class History:
    version: str
    marks: list[observe.Mark] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    store: object = None
    copy: Path | None = None
    node: int = -1


def _all_in_sync(d: observe.Described) -> bool:
    return all(set(p.isr) == set(p.replicas) and p.leader >= 0 and not p.adding and not p.removing
               for p in d.partitions.values())


def _reassign(c, plan: Path, *extra: str, check: bool = True):
    return c.tool("reassign", "--bootstrap-server", observe.running_bootstrap(c),
                  "--reassignment-json-file", str(plan), *extra, check=check)


def _plan(path: Path, moves: dict[tuple[str, int], list[int]]) -> Path:
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()]}))
    return path


def _produce(c, topic: str, count: int, size: int) -> None:
    from confluent_kafka import Producer
    prod = Producer({"bootstrap.servers": observe.running_bootstrap(c), "acks": "1", "linger.ms": 20,
                     "batch.size": 1 << 20, "compression.type": "none"})
    value = b"x" * size
    for i in range(count):
        while True:
            try:
                prod.produce(topic, value, partition=0)
                break
            except BufferError:
                prod.poll(0.1)
        if i % 1000 == 0:
            prod.poll(0)
    assert prod.flush(60) == 0


def run_scenario(c, work: Path, h: History) -> None:
    bs = lambda: observe.running_bootstrap(c)  # noqa: E731
    mark = lambda name, **kw: h.marks.append(observe.stable_mark(c, name, settle=0.5, **kw)) or h.marks[-1]  # noqa
    ctl = c.wait_for_controller()
    others = [i for i in c.nodes if i != ctl]

    # --- creation: default placement, an explicit assignment, RF 1 topics to grow and to move
    c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", ALPHA, "--partitions", "3",
           "--replication-factor", "3", "--config", "min.insync.replicas=2")
    c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", PINNED,
           "--replica-assignment", "1:2,2:3")
    c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", GROW, "--replica-assignment", "1,2")
    c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", SLOW, "--replica-assignment", "1")
    m = mark("created", until=lambda d: all((t, 0) in d.partitions for t in (ALPHA, PINNED, GROW, SLOW)))
    h.facts["alpha_id_1"] = m.described.topic_ids[ALPHA]

    # --- add partitions
    c.tool("topics", "--bootstrap-server", bs(), "--alter", "--topic", ALPHA, "--partitions", "5")
    mark("partitions added", until=lambda d: (ALPHA, 4) in d.partitions)

    # --- raise the replication factor 1 -> 3 by reassignment; move replicas between brokers
    grow = _plan(work / "grow.json", {(GROW, 0): [1, 2, 3], (GROW, 1): [2, 3, 1]})
    _reassign(c, grow, "--execute")
    mark("rf raised", until=lambda d: d.partitions[(GROW, 0)].replicas == (1, 2, 3)
         and d.partitions[(GROW, 1)].replicas == (2, 3, 1) and _all_in_sync(d), timeout=90)
    move = _plan(work / "move.json", {(PINNED, 0): [3, 2], (PINNED, 1): [1, 3]})
    _reassign(c, move, "--execute")
    mark("replicas moved", until=lambda d: d.partitions[(PINNED, 0)].replicas == (3, 2)
         and d.partitions[(PINNED, 1)].replicas == (1, 3) and _all_in_sync(d), timeout=90)

    # --- a reassignment that cannot finish (data + a 1 kB/s throttle), then cancelled
    _produce(c, SLOW, 8000, 1000)
    slow = _plan(work / "slow.json", {(SLOW, 0): [2]})
    _reassign(c, slow, "--execute", "--throttle", "1000")
    mark("reassignment in progress", until=lambda d: d.partitions[(SLOW, 0)].adding == (2,))
    _reassign(c, slow, "--cancel")
    mark("reassignment cancelled", until=lambda d: d.partitions[(SLOW, 0)].replicas == (1,)
         and not d.partitions[(SLOW, 0)].adding)

    # --- kill -9 a broker: fenced, out of every ISR, leaders move; restart: back in every ISR
    victim = others[0]
    c.kill_node(victim)
    # (a partition whose only replica is the victim keeps it as its last ISR member in 3.9)
    mark("broker killed", until=lambda d: all(p.leader != victim and (victim not in p.isr or p.isr == (victim,))
                                              for p in d.partitions.values()), timeout=60)
    # kafka-topics' own describe filters while the broker is down, on this module's topics (a regex)
    h.facts["filters"] = {flag: c.tool("topics", "--bootstrap-server", bs(), "--describe", "--topic", P + ".*",
                                       flag).stdout for flag in DESCRIBE_FILTERS}
    h.facts["filters_mark"] = h.marks[-1]
    assert observe.describe(c).partitions == h.marks[-1].described.partitions, "state moved during the filters"
    c.start_node(victim)
    c.wait_ready([victim])
    mark("broker back", until=_all_in_sync, timeout=90)
    h.facts["victim"] = victim

    # --- preferred election puts leadership back on replicas[0]
    c.tool("leader-election", "--bootstrap-server", bs(), "--election-type", "PREFERRED",
           "--all-topic-partitions", check=False)
    mark("preferred election", until=lambda d: all(p.leader == p.replicas[0] for p in d.partitions.values()
                                                   if p.replicas and p.replicas[0] in p.isr))

    # --- unclean elections: y falls out of the ISR (paused), then the only ISR member x dies
    ctl = c.wait_for_controller()
    x, y = [i for i in c.nodes if i != ctl]
    c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", DIRTY, "--replica-assignment",
           f"{x}:{y}", "--config", "unclean.leader.election.enable=true")
    c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", DIRTY2, "--replica-assignment", f"{x}:{y}")
    mark("dirty topics", until=lambda d: all((t, 0) in d.partitions and d.partitions[(t, 0)].isr == (x, y)
                                             for t in (DIRTY, DIRTY2)))
    c.pause_node(y)
    time.sleep(5)  # until y is fenced, clients may still try to talk to it
    mark("follower out of isr", until=lambda d: all(d.partitions[(t, 0)].isr == (x,) for t in (DIRTY, DIRTY2)),
         timeout=90)
    c.resume_node(y)
    c.kill_node(x)
    # DIRTY allows unclean elections: the controller elects y by itself once x is fenced.
    mark("leader lost", until=lambda d: d.partitions[(DIRTY, 0)].leader == y
         and d.partitions[(DIRTY2, 0)].leader == -1, timeout=60)
    c.tool("leader-election", "--bootstrap-server", bs(), "--election-type", "UNCLEAN",
           "--topic", DIRTY2, "--partition", "0")
    mark("unclean election", until=lambda d: d.partitions[(DIRTY2, 0)].leader == y)
    c.start_node(x)
    c.wait_ready([x])
    mark("isr recovered", until=_all_in_sync, timeout=90)
    h.facts["unclean"] = (x, y)

    # --- kill the active controller: a new controller epoch
    before = observe.quorum_status(c)
    old = int(before["LeaderId"])
    h.facts["controller_before"] = (old, int(before["LeaderEpoch"]))
    c.kill_node(old)
    c.wait_for_controller(exclude=old, timeout=60)
    mark("controller killed", until=lambda d: all(p.leader != old and (old not in p.isr or p.isr == (old,))
                                                  for p in d.partitions.values()), timeout=60)
    c.start_node(old)
    c.wait_ready([old])
    m = mark("controller back", until=_all_in_sync, timeout=90)
    h.facts["controller_after"] = (m.controller, m.controller_epoch)

    # --- delete a topic and re-create it under the same name
    c.tool("topics", "--bootstrap-server", bs(), "--delete", "--topic", ALPHA)
    observe.wait_describe(c, lambda d: ALPHA not in d.topic_ids, timeout=60)
    c.tool("topics", "--bootstrap-server", bs(), "--create", "--topic", ALPHA, "--partitions", "2",
           "--replication-factor", "3")
    m = mark("topic re-created", until=lambda d: (ALPHA, 1) in d.partitions and (ALPHA, 2) not in d.partitions)
    h.facts["alpha_id_2"] = m.described.topic_ids[ALPHA]


def _wait_snapshot_after(c, node: int, offset: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snaps = [snapshot_id(f) for f in metadata_files(c.metadata_dir(node)) if snapshot_id(f)]
        if any(s.end_offset > offset + 1 for s in snaps):
            return
        time.sleep(0.5)
    raise AssertionError(f"no snapshot past offset {offset} on node {node} after {timeout}s")


@pytest.fixture(scope="module")
def history(kafka_cluster, tmp_path_factory):
    from replay.store import Store
    from schemas.archive.writer import ArchiveWriter
    from services.normalize.imports import ImportReport
    from services.kraft.offline import cluster_id_of, import_events

    c = heal(kafka_cluster)
    work = tmp_path_factory.mktemp(f"history-{c.label}")
    h = History(c.label)
    started = time.monotonic()
    run_scenario(c, work, h)
    h.facts["scenario_seconds"] = time.monotonic() - started
    h.node = c.wait_for_controller()
    _wait_snapshot_after(c, h.node, h.marks[-1].offset)
    h.copy = copy_node_metadata(c, h.node, work / "copy")
    report = ImportReport()
    cluster = cluster_id_of([h.copy])
    assert cluster == c.cluster_id_file.read_text().strip()
    h.events = list(import_events([h.copy], cluster, node_id=h.node, report=report))
    assert not report.gaps, report.gaps
    with ArchiveWriter(work / "archive", cluster) as w:
        for e in h.events:
            w.append(e)
    h.store = Store(work / "store.duckdb")
    h.store.load([work / "archive"])
    h.facts["import"] = report
    yield h
    h.store.close()


def _replayed(h: History, offset: int) -> dict:
    from replay.queries import state_as_of
    res = state_as_of(h.store, h.store.point(offset=offset))
    return {(r.topic, r.partition): r for r in res.partitions}


def test_state_as_of_every_mark_equals_describe(history):
    h = history
    assert len(h.marks) >= 15
    problems = []
    for m in h.marks:
        rows = _replayed(h, m.offset)
        described = m.described.partitions
        if set(rows) != set(described):
            problems.append(f"{m.name} @ {m.offset}: partitions differ: only replayed "
                            f"{sorted(set(rows) - set(described))}, only described {sorted(set(described) - set(rows))}")
            continue
        for key, d in described.items():
            s = rows[key].state
            got = (s.leader, s.replicas, s.isr, s.adding_replicas, s.removing_replicas)
            want = (d.leader, d.replicas, d.isr, d.adding, d.removing)
            if d.elr is not None:
                got += (s.elr, s.last_known_elr)
                want += (d.elr, d.last_known_elr)
            if got != want:
                problems.append(f"{m.name} @ {m.offset}: {key}: replayed {got} != described {want}")
            if rows[key].topic_id != m.described.topic_ids[key[0]]:
                problems.append(f"{m.name}: {key[0]} topic id {rows[key].topic_id} != {m.described.topic_ids[key[0]]}")
    assert not problems, "\n".join(problems)


def test_marks_cover_the_scenario(history):
    names = [m.name for m in history.marks]
    offsets = [m.offset for m in history.marks]
    assert offsets == sorted(offsets)
    slow = next(m for m in history.marks if m.name == "reassignment in progress").described.partitions[(SLOW, 0)]
    assert (slow.replicas, slow.adding, slow.removing) == ((2, 1), (2,), (1,))
    assert {"unclean election", "controller killed", "topic re-created"} <= set(names)


def test_final_image_equals_metadata_shell(history, kafka_cluster):
    from replay.queries import brokers_as_of, state_as_of
    h = history
    if not kafka_cluster.tools.has_shell:
        pytest.skip(f"Kafka {kafka_cluster.version}: no kafka-shell jar on Maven Central (CTRLAUDIT_KAFKA_4)")
    snap = [f for f in metadata_files(h.copy) if snapshot_id(f)][-1]
    end = snapshot_id(snap).end_offset
    assert end > h.marks[-1].offset + 1
    shell = observe.shell_image(kafka_cluster, snap)
    point = h.store.point(offset=end - 1)
    res = state_as_of(h.store, point)
    rows = {(r.topic, r.partition): r for r in res.partitions}
    assert set(rows) == set(shell.partitions)
    assert {r.topic: r.topic_id for r in res.partitions} == shell.topic_ids
    problems = []
    for key, sp in shell.partitions.items():
        s = rows[key].state
        got = (s.replicas, s.isr, s.removing_replicas, s.adding_replicas, s.elr, s.last_known_elr, s.leader,
               s.leader_recovery_state.value, s.leader_epoch, s.partition_epoch)
        want = (sp.replicas, sp.isr, sp.removing, sp.adding, sp.elr, sp.last_known_elr, sp.leader,
                sp.leader_recovery_state, sp.leader_epoch, sp.partition_epoch)
        if got != want:
            problems.append(f"{key}: replayed {got} != shell {want}")
    assert not problems, "\n".join(problems)
    brokers = brokers_as_of(h.store, point)
    assert {b: (s.epoch, s.fenced, s.in_controlled_shutdown) for b, s in brokers.items()} == \
           {b: (s.epoch, s.fenced, s.in_controlled_shutdown) for b, s in shell.brokers.items()}
    assert ALPHA in shell.topic_ids and (ALPHA, 1) in shell.partitions


def _changes(h: History, topic: str) -> list[PartitionChange]:
    return [e.payload for e in h.events if isinstance(e.payload, PartitionChange) and e.payload.topic == topic
            and not e.bootstrap]


def test_unclean_elections_are_events_with_recovering_state(history):
    x, y = history.facts["unclean"]
    for topic in (DIRTY, DIRTY2):
        unclean = [p for p in _changes(history, topic) if p.election is ElectionType.UNCLEAN]
        assert len(unclean) == 1, (topic, _changes(history, topic))
        p = unclean[0]
        assert p.after.leader == y and p.after.isr == (y,)
        assert p.after.leader_recovery_state is LeaderRecoveryState.RECOVERING
        assert K.RECOVERY_STATE in p.changes and K.LEADER in p.changes
        # and later the leader reports the partition recovered
        assert any(q.before is not None and q.after is not None
                   and q.before.leader_recovery_state is LeaderRecoveryState.RECOVERING
                   and q.after.leader_recovery_state is LeaderRecoveryState.RECOVERED for q in _changes(history, topic))
    # Whatever else is called unclean, Kafka called unclean too (RECOVERING). Kafka 4.x with ELR
    # elects a returning last-known leader after an unclean shutdown that way.
    for e in history.events:
        p = e.payload
        if isinstance(p, PartitionChange) and p.election is ElectionType.UNCLEAN:
            assert p.after.leader_recovery_state is LeaderRecoveryState.RECOVERING, (e.source.offset, p)


def test_controller_kill_is_a_controller_change_with_a_higher_epoch(history):
    old, old_epoch = history.facts["controller_before"]
    new, new_epoch = history.facts["controller_after"]
    assert new != old and new_epoch > old_epoch
    changes = [e.payload for e in history.events if isinstance(e.payload, ControllerChange)]
    epochs = [c.epoch for c in changes]
    assert epochs == sorted(epochs)
    took_over = [c for c in changes if c.previous_epoch == old_epoch and c.epoch > old_epoch]
    assert took_over and took_over[0].leader_id != old and took_over[0].previous_leader_id == old
    assert any(c.leader_id == new and c.epoch == new_epoch for c in changes)


def test_recreated_topic_has_a_new_topic_id(history):
    f = history.facts
    assert f["alpha_id_1"] != f["alpha_id_2"]
    topic_events = [(e.payload.kind, e.payload.topic_id) for e in history.events
                    if isinstance(e.payload, TopicChange) and e.payload.topic == ALPHA]
    assert topic_events == [(TopicChangeKind.CREATED, f["alpha_id_1"]), (TopicChangeKind.DELETED, f["alpha_id_1"]),
                            (TopicChangeKind.CREATED, f["alpha_id_2"])]
    deleted = [p for p in _changes(history, ALPHA) if K.DELETE in p.changes]
    assert sorted(p.partition for p in deleted) == [0, 1, 2, 3, 4]


def test_reassignment_steps_have_their_kinds(history):
    def kinds(topic, partition):
        return [k for p in _changes(history, topic) if p.partition == partition for k in p.changes
                if k in (K.REASSIGNMENT_START, K.REASSIGNMENT_COMPLETE, K.REASSIGNMENT_CANCEL)]
    assert kinds(GROW, 0) == [K.REASSIGNMENT_START, K.REASSIGNMENT_COMPLETE]
    assert kinds(GROW, 1) == [K.REASSIGNMENT_START, K.REASSIGNMENT_COMPLETE]
    assert kinds(PINNED, 0) == [K.REASSIGNMENT_START, K.REASSIGNMENT_COMPLETE]
    assert kinds(PINNED, 1) == [K.REASSIGNMENT_START, K.REASSIGNMENT_COMPLETE]
    assert kinds(SLOW, 0) == [K.REASSIGNMENT_START, K.REASSIGNMENT_CANCEL]
    done = [p for p in _changes(history, GROW) if K.REASSIGNMENT_COMPLETE in p.changes]
    assert sorted(p.after.replicas for p in done) == [(1, 2, 3), (2, 3, 1)]
    cancel = next(p for p in _changes(history, SLOW) if K.REASSIGNMENT_CANCEL in p.changes)
    assert cancel.after.replicas == (1,) and not cancel.after.adding_replicas
    moved = next(p for p in _changes(history, PINNED) if p.partition == 0 and K.REASSIGNMENT_COMPLETE in p.changes)
    assert moved.after.replicas == (3, 2)
    assert moved.election in (ElectionType.REASSIGNMENT, ElectionType.NONE)


def test_kill_9_shows_fencing_isr_shrink_and_leader_moves(history):
    from schemas.events import BrokerChange, BrokerChangeKind
    v = history.facts["victim"]
    marks = {m.name: m.offset for m in history.marks}
    lo, hi = marks["reassignment cancelled"], marks["broker killed"]
    window = [e for e in history.events if lo < e.source.offset <= hi and not e.bootstrap]
    assert any(isinstance(e.payload, BrokerChange) and e.payload.broker_id == v
               and e.payload.kind is BrokerChangeKind.FENCED for e in window)
    after_fence = [e.payload for e in window if isinstance(e.payload, PartitionChange)
                   and e.payload.before is not None and e.payload.after is not None
                   and v in e.payload.before.isr and v not in e.payload.after.isr]
    assert after_fence, "no ISR shrink after the kill"
    assert any(p.before.leader == v and p.after.leader != v for p in after_fence), "no leader moved off the victim"


@pytest.mark.parametrize("flag", DESCRIBE_FILTERS)
def test_describe_filters_equal_kafka_topics(history, flag, tmp_path):
    """`ctrlaudit state --topic 'h-.*' <filter>` as of the mark == kafka-topics --describe with the same
    regex and filter, run on the cluster at that mark (a broker down: under-replicated, at min ISR)."""
    import shutil

    from typer.testing import CliRunner

    from ctrlaudit.cli import app

    h, mark = history, history.facts["filters_mark"]
    store = tmp_path / "store.duckdb"  # the fixture's store is open read-write: ask a copy
    shutil.copy(h.store.path, store)
    done = CliRunner().invoke(app, ["state", "--store", str(store), "--offset", str(mark.offset),
                                    "--topic", P + ".*", flag])
    assert done.exit_code == 0, done.output
    ours, kafka = observe.parse_describe(done.stdout), observe.parse_describe(h.facts["filters"][flag])
    if flag == "--topics-with-overrides":  # header lines only: the topics, and their Configs
        heads = lambda text: sorted(l for l in text.splitlines() if l.startswith("Topic: "))  # noqa: E731
        assert heads(done.stdout) == heads(h.facts["filters"][flag]) and kafka.topic_ids
        assert not ours.partitions and not kafka.partitions
        return
    key = lambda p: (p.leader, p.replicas, p.isr, p.adding, p.removing)  # noqa: E731
    assert {k: key(p) for k, p in ours.partitions.items()} == {k: key(p) for k, p in kafka.partitions.items()}
    assert not ours.topic_ids, "partition filters print no topic lines, as kafka-topics"
    if flag in ("--under-replicated-partitions", "--at-min-isr-partitions"):
        assert kafka.partitions, f"{flag}: nothing to compare at the mark"


def test_broker_log_import_agrees_with_the_metadata_log(history, kafka_cluster, tmp_path):
    """On KRaft: every node's state-change.log, controller.log and server.log, imported. Each partition state the
    import emits equals the metadata log's at the same topic id, partition and partition epoch (it emits a state
    only when the lines state it whole, with what the controller's rules add: a leader change keeps the replicas no
    logged reassignment changed, an ISR at min.insync.replicas has no ELR; never a guess); how much of this
    module's history the lines state whole is printed."""
    from services.brokerlogs.offline import import_log_events
    from services.normalize.imports import ImportReport

    h = history
    logs = [copy_live_directory(n.logs_dir, tmp_path / "logs" / f"node{i}")
            for i, n in sorted(kafka_cluster.nodes.items())]
    report = ImportReport()
    ours = list(import_log_events(logs, h.events[0].cluster_id, report=report))

    def states(events):
        return {(e.payload.topic_id, e.payload.partition, e.payload.after.partition_epoch): (e.payload.topic,
                                                                                            e.payload.after)
                for e in events if isinstance(e.payload, PartitionChange) and e.payload.after is not None
                and not e.bootstrap}

    got, want = states(ours), states(h.events)
    common = set(got) & set(want)
    wrong = [f"{k}: logs {got[k][1]} != metadata log {want[k][1]}" for k in sorted(common) if got[k] != want[k]]
    assert not wrong, "\n".join(wrong[:20])
    mine = [k for k, (topic, _) in want.items() if topic.startswith(P)]
    covered = [k for k in mine if k in got]
    print(f"{h.version}: {len(ours)} events from {report.records} lines; of this module's {len(mine)} partition "
          f"states the logs state {len(covered)} whole ({len(covered) / len(mine):.0%}); {len(report.gaps)} gap(s)")
    assert len(common) >= 50 and len(covered) >= len(mine) // 4
    assert all(e.source.kind == "BROKER_LOG" and e.source.line for e in ours)


def test_broker_logs_at_every_mark_equal_describe_or_say_they_do_not_know(history, kafka_cluster, tmp_path):
    """The incident nobody captured, on KRaft: only the nodes' own logs (state-change.log, controller.log and
    server.log of every combined broker and controller), imported, loaded and asked by time at every mark. Each
    partition state describe printed is either the one `state` gives, line for line as kafka-topics prints it
    (Elr and LastKnownElr included), or one `state` flags as not known (the point falls in a stretch holding that
    partition): no silent mismatch. The share flagged is printed, as the ZooKeeper-mode test's."""
    import subprocess
    import sys

    from replay.store import Store
    from devtools.cluster import resolve_version
    from tests.services.broker_log_marks import compare_marks

    logs = [copy_live_directory(n.logs_dir, tmp_path / "logs" / f"node{i}")
            for i, n in sorted(kafka_cluster.nodes.items())]
    res = subprocess.run([sys.executable, "-m", "ctrlaudit", "import", "logs", *map(str, logs), "--out",
                          str(tmp_path / "a")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    store = Store(tmp_path / "s.duckdb")
    release = resolve_version(history.version)
    try:
        store.load([tmp_path / "a"])
        result = compare_marks(store, history.marks, release)
        assert result.marks >= 10
        print("\n" + result.summary(f"Kafka {release} KRaft"))
        assert not result.silent, "\n".join(result.silent)
        # measured 6.1 % (4.3.1) and 8.1 % (3.9.2) with the other modules' topics on the shared cluster (1.7-4.4 %
        # alone): partitions offline at a mark, an only replica that died after its last line, a shrink no line
        # states until the partition is stated whole again; the bound leaves room for the scenario's timing
        assert result.share <= 0.15, result.share
    finally:
        store.close()
