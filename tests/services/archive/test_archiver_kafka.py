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

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from schemas.codec import encode
from services.cluster.testing import heal
from services.cluster.testing import wait_until
from services.simulator import SimConfig, simulate

pytestmark = [pytest.mark.kafka]

ROOT = Path(__file__).resolve().parents[3]


def _archived(root: Path) -> list:
    from services.archive import clusters, iter_events
    return [e for cl in clusters(root) for e in iter_events(root / cl)] if root.exists() else []


def test_an_archiver_started_before_the_events_topic_exists_archives_it_within_seconds(kafka_cluster, tmp_path):
    from confluent_kafka import Producer

    c = heal(kafka_cluster)
    prefix = "arc" + uuid.uuid4().hex[:6]
    topic, archive = f"{prefix}.events", tmp_path / "archive"
    env = dict(os.environ, PYTHONPATH=str(ROOT), CTRLAUDIT_BOOTSTRAP_SERVERS=c.bootstrap_servers,
               CTRLAUDIT_EVENTS_TOPIC=topic, CTRLAUDIT_ARCHIVE_DIR=str(archive),
               CTRLAUDIT_ARCHIVE_GROUP=f"{prefix}-archiver", CTRLAUDIT_ARCHIVE_FLUSH_SECONDS="1")
    events = list(simulate(SimConfig(seed=3, events=200, cluster_id=f"{prefix}-cluster")))
    archiver = subprocess.Popen([sys.executable, "-m", "services.capture", "archiver"], env=env, cwd=ROOT,
                                stdout=open(tmp_path / "archiver.log", "wb"), stderr=subprocess.STDOUT)
    try:
        time.sleep(10)  # started, the topic does not exist yet
        assert archiver.poll() is None, (tmp_path / "archiver.log").read_text()
        assert f"waiting for the events topic {topic} to be created" in (tmp_path / "archiver.log").read_text()
        c.create_topic(topic, 1, 3)
        created = time.monotonic()
        p = Producer({"bootstrap.servers": c.bootstrap_servers, "enable.idempotence": True})
        for e in events:
            p.produce(topic, key=e.cluster_id.encode(), value=encode(e))
        assert p.flush(30) == 0
        try:
            got = wait_until(lambda: len(_archived(archive)) == len(events) and _archived(archive), 60,
                             "the archiver to archive the new topic's events")
        except AssertionError as exc:  # what the archiver saw (a CI run of 2026-11-26 12:10 timed out here)
            raise AssertionError(f"{exc}; {len(_archived(archive))} of {len(events)} archived; archiver log:\n"
                                 + (tmp_path / "archiver.log").read_text()[-4000:]) from None
        assert time.monotonic() - created < 60
        assert [(e.seq, e.event_id, e.payload) for e in got] == [(e.seq, e.event_id, e.payload) for e in events]
    finally:
        archiver.send_signal(signal.SIGTERM)
        try:
            archiver.wait(30)
        except subprocess.TimeoutExpired:
            archiver.kill()
