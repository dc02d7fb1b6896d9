"""The archiver on the shared real KRaft cluster: started before the capture worker has created the events
topic (as `ctrlaudit capture` and the demos start them), it waits for the topic, subscribes once it exists and
archives its events.

Why it waits instead of subscribing at once: subscribed to a topic that did not exist yet, librdkafka joined
the group with nothing to assign and did not always rejoin when the topic appeared. Seen twice in CI, never
reproduced on demand: the ZooKeeper demo (2026-11-26: the first events waited for the 5-minute metadata
refresh) and the Kafka 3.9 pipeline test (2026-11-27: the archiver joined its group 1 s before the topic was
created and archived nothing in the next 4.5 minutes, while the watch worker read 183 events from it).
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemas.codec import encode
from devtools.cluster.testing import heal, stop_process
from devtools.cluster.testing import wait_until
from services.simulator import SimConfig, simulate

pytestmark = [pytest.mark.kafka]

ROOT = Path(__file__).resolve().parents[3]


def _archived(root: Path) -> list:
    from schemas.archive import clusters, iter_events
    return [e for cl in clusters(root) for e in iter_events(root / cl)] if root.exists() else []


def test_an_archiver_started_before_the_events_topic_exists_archives_it_within_seconds(kafka_cluster, tmp_path):
    c = heal(kafka_cluster)
    prefix = "arc" + uuid.uuid4().hex[:6]
    topic, archive = f"{prefix}.events", tmp_path / "archive"
    events = list(simulate(SimConfig(seed=3, events=200, cluster_id=f"{prefix}-cluster")))
    # a consumer stuck joining is replaced after the rejoin wait: 20 s here, inside the minute this test allows
    # (a CI run of 2026-11-29 waited the default 60 s once, then archived every event at once)
    archiver = _start_archiver(c, tmp_path, prefix, rejoin_seconds="20")
    try:
        time.sleep(10)  # started, the topic does not exist yet
        assert archiver.poll() is None, (tmp_path / "archiver.log").read_text()
        assert f"waiting for the events topic {topic} to be created" in (tmp_path / "archiver.log").read_text()
        c.create_topic(topic, 1, 3)
        created = time.monotonic()
        _produce(c, topic, events)
        try:
            got = wait_until(lambda: len(_archived(archive)) == len(events) and _archived(archive), 60,
                             "the archiver to archive the new topic's events")
        except AssertionError as exc:  # what the archiver saw (a CI run of 2026-11-26 12:10 timed out here)
            raise AssertionError(f"{exc}; {len(_archived(archive))} of {len(events)} archived; archiver log:\n"
                                 + (tmp_path / "archiver.log").read_text()[-4000:]) from None
        assert time.monotonic() - created < 60
        assert [(e.seq, e.event_id, e.payload) for e in got] == [(e.seq, e.event_id, e.payload) for e in events]
    finally:
        stop_process(archiver)


class _Member:
    """A consumer of the archiver's group that holds the topic's one partition (its client.id sorts before
    the archiver's, so Kafka's range assignment gives it the partition) and either commits what it reads
    (another archiver serving the group) or never does (a member that archives nothing)."""

    def __init__(self, bootstrap: str, group: str, topic: str, commits: bool) -> None:
        import threading

        from confluent_kafka import Consumer
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "a-member",
                           "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        self.c.subscribe([topic])
        self.commits, self.read, self.committed, self.assigned = commits, 0, 0, False
        self.member_id: str | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            msgs = [m for m in self.c.consume(100, timeout=0.2) if not m.error()]
            self.assigned = bool(self.c.assignment())
            self.member_id = self.c.memberid()  # asked here: the consumer is this thread's alone
            self.read += len(msgs)
            if self.commits and self.read > self.committed:  # retried until answered (a coordinator loading)
                try:
                    self.c.commit(asynchronous=False)
                    self.committed = self.read
                except Exception:  # a rebalance or a coordinator loading: tried again at the next poll
                    pass
        self.c.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


def _start_archiver(c, tmp_path: Path, prefix: str, rejoin_seconds: str | None = None):
    """`python -m services.capture archiver` on topic `prefix`.events, archiving under tmp_path/archive."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), CTRLAUDIT_BOOTSTRAP_SERVERS=c.bootstrap_servers,
               CTRLAUDIT_EVENTS_TOPIC=f"{prefix}.events", CTRLAUDIT_ARCHIVE_DIR=str(tmp_path / "archive"),
               CTRLAUDIT_ARCHIVE_GROUP=f"{prefix}-archiver", CTRLAUDIT_ARCHIVE_FLUSH_SECONDS="1")
    if rejoin_seconds is not None:
        env["CTRLAUDIT_ARCHIVE_REJOIN_SECONDS"] = rejoin_seconds
    return subprocess.Popen([sys.executable, "-m", "services.capture", "archiver"], env=env, cwd=ROOT,
                            stdout=open(tmp_path / "archiver.log", "wb"), stderr=subprocess.STDOUT)


def _produce(c, topic: str, events, producer=None):
    """The events on the topic, flushed; the producer, for more."""
    from confluent_kafka import Producer

    p = producer or Producer({"bootstrap.servers": c.bootstrap_servers, "enable.idempotence": True})
    for e in events:
        p.produce(topic, key=e.cluster_id.encode(), value=encode(e))
    assert p.flush(30) == 0
    return p


def _group_topic(kafka_cluster, tag: str, seed: int, n: int):
    """A new one-partition events topic, its archiver group's name, and `n` simulated events for it."""
    c = heal(kafka_cluster)
    prefix = tag + uuid.uuid4().hex[:6]
    c.create_topic(f"{prefix}.events", 1, 3)
    events = list(simulate(SimConfig(seed=seed, events=n, cluster_id=f"{prefix}-cluster")))
    return c, prefix, f"{prefix}.events", f"{prefix}-archiver", events


REJOIN = "rejoining the group with a new consumer"


@contextlib.contextmanager
def _beside(member: _Member, log: Path) -> Iterator[list[subprocess.Popen]]:
    """The body runs with the group's other member; a failed assertion gets the archiver's log; then the member
    leaves and every archiver the body started (appended to the list yielded) is stopped."""
    started: list[subprocess.Popen] = []
    try:
        yield started
    except AssertionError as exc:
        raise AssertionError(f"{exc}; archiver log:\n{log.read_text()[-4000:] if log.exists() else ''}") from None
    finally:
        member.close()
        for archiver in started:
            stop_process(archiver)


def test_an_archiver_left_without_partitions_while_nobody_archives_rejoins_and_archives(kafka_cluster, tmp_path):
    c, prefix, topic, group, events = _group_topic(kafka_cluster, "arj", 5, 200)
    _produce(c, topic, events)
    member = _Member(c.bootstrap_servers, group, topic, commits=False)
    log = tmp_path / "archiver.log"
    with _beside(member, log) as started:
        wait_until(lambda: member.assigned and member.read == len(events), 60, "the member to hold the partition")
        archiver = _start_archiver(c, tmp_path, prefix, rejoin_seconds="2")
        started.append(archiver)
        wait_until(lambda: REJOIN in log.read_text(), 60, "the archiver to rejoin")
        assert _archived(tmp_path / "archive") == []  # the member still holds the partition
        member.close()  # leaves the group: the archiver's consumer gets the partition
        got = wait_until(lambda: len(_archived(tmp_path / "archive")) == len(events) and _archived(tmp_path / "archive"),
                         90, "the archiver to archive the topic once the member left")
        assert [(e.seq, e.event_id, e.payload) for e in got] == [(e.seq, e.event_id, e.payload) for e in events]
    assert archiver.returncode == 0, log.read_text()[-4000:]


def test_a_standby_archiver_whose_group_is_served_never_rejoins(kafka_cluster, tmp_path):
    c, prefix, topic, group, events = _group_topic(kafka_cluster, "ars", 6, 240)
    member = _Member(c.bootstrap_servers, group, topic, commits=True)
    log = tmp_path / "archiver.log"
    with _beside(member, log) as started:
        p = _produce(c, topic, events[:20])
        # the member serves the group: it holds the partition and its commits are answered
        wait_until(lambda: member.assigned and member.committed == 20, 60, "the member to commit")
        archiver = _start_archiver(c, tmp_path, prefix, rejoin_seconds="3")
        started.append(archiver)
        # events arrive for 11 s (several rejoin waits) and the member commits them; then 9 s with none
        for i, e in enumerate(events[20:]):
            p.produce(topic, key=e.cluster_id.encode(), value=encode(e))
            if i % 20 == 19:
                p.flush(10)
                time.sleep(1)
        assert p.flush(30) == 0
        wait_until(lambda: member.committed == len(events), 60, "the member to commit every event")
        time.sleep(9)
        assert archiver.poll() is None
        assert REJOIN not in log.read_text()
        assert _archived(tmp_path / "archive") == []


def test_a_consumer_the_group_gave_nothing_is_replaced_after_the_short_wait(kafka_cluster, tmp_path, monkeypatch):
    """The first consumer joins the group but is given nothing of the events topic (a stand-in for librdkafka's
    join made before it knew the topic: here it subscribes to another topic): the group is stable, nobody holds
    the topic while events wait, so the archiver rejoins after the short wait (10 s), not the long one (an hour
    here). A consumer still joining, or a group that does not exist yet, is not judged."""
    import confluent_kafka
    import confluent_kafka.admin

    from services.capture.archiver import run
    from services.capture.settings import Settings
    from services.capture.stall import group_served

    c, prefix, topic, group, events = _group_topic(kafka_cluster, "aru", 7, 120)
    other = f"{prefix}.other"
    c.create_topic(other, 1, 3)
    _produce(c, topic, events)
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": c.bootstrap_servers})
    assert group_served(admin, group, topic, None) is None  # no such group yet: no consumer of it has joined
    with _member_of(c, group, topic) as member:  # a group member holding it says yes
        wait_until(lambda: member.assigned and member.member_id, 60, "the member to hold the partition")
        assert group_served(admin, group, topic, member.member_id) is True
    assert group_served(admin, group, topic, "gone") is None  # the member left: an empty group, nobody joined
    made: list[object] = []

    class GivenAnotherTopic(confluent_kafka.Consumer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

        def subscribe(self, topics, *args, **kwargs):
            super().subscribe([other] if self is made[0] else topics, *args, **kwargs)

    monkeypatch.setattr(confluent_kafka, "Consumer", GivenAnotherTopic)
    settings = Settings(bootstrap_servers=c.bootstrap_servers, events_topic=topic, archive_group=group,
                        archive_dir=str(tmp_path / "archive"), archive_flush_seconds=1, archive_rejoin_seconds=3600)
    run(settings, idle_exit=30, fsync=False)  # without the short wait: 30 s idle, nothing archived, then exit
    assert len(made) == 2, "the archiver did not rejoin"
    got = _archived(tmp_path / "archive")
    assert [(e.seq, e.event_id) for e in got] == [(e.seq, e.event_id) for e in events]


@contextlib.contextmanager
def _member_of(c, group: str, topic: str) -> Iterator[_Member]:
    member = _Member(c.bootstrap_servers, group, topic, commits=False)
    try:
        yield member
    finally:
        member.close()
