"""The KRaft source (the live tail of services/kraft/live.py, read through CaptureState as the capture worker reads it) on a live node of
the shared real cluster (tests/conftest.py: 4 kB metadata segments, so it crosses many rolls), while topics
are created and a broker is killed and restarted: the captured events equal an offline import of the same
log afterwards — same positions, no gap, no duplicate."""
from __future__ import annotations

import threading
import time

import pytest

from schemas.events import BrokerChange, BrokerChangeKind, CaptureGap, TopicChange
from services.capture.logic import CaptureState
from services.capture.sources import QuorumWatermark, source_loop_step
from services.kraft.live import KRaftTail
from devtools.cluster.testing import copy_node_metadata, heal
from services.kraft.offline import import_events

pytestmark = [pytest.mark.kafka]


def _key(e):
    return (e.source.kind, e.source.offset, e.source.index, e.bootstrap, e.controller_id, e.controller_epoch,
            e.payload)


def test_tailed_events_equal_the_offline_import(kafka_cluster, tmp_path):
    c = heal(kafka_cluster)
    node = c.wait_for_controller()
    cluster_id = c.cluster_id_file.read_text().strip()
    tail, state = KRaftTail(c.metadata_dir(node), cluster_id, node_id=node), CaptureState(cluster_id, node)
    # gated by the quorum's high watermark as the worker is: leadership can still move after
    # wait_for_controller, and a former leader's uncommitted tail is then truncated and rewritten
    gate = QuorumWatermark(c.bootstrap_servers)
    events: list = []
    files: set[str] = set()
    stop = threading.Event()
    errors: list[BaseException] = []

    def step() -> list:
        got = [e for r in source_loop_step(tail, gate) for e, *_ in state.process(r)]
        if tail.file is not None:
            files.add(tail.file.name)
        return got

    def run():
        try:
            while not stop.is_set():
                got = step()
                events.extend(got)
                if not got:
                    time.sleep(0.1)
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    try:
        c.create_topic("t-one", 3, 3)
        c.create_topic("t-two", 2, 2)
        victim = next(i for i in c.nodes if i != node)
        c.kill_node(victim)
        deadline = time.monotonic() + 30
        while not any(isinstance(e.payload, BrokerChange) and e.payload.broker_id == victim
                      and e.payload.kind is BrokerChangeKind.FENCED and not e.bootstrap for e in list(events)):
            assert time.monotonic() < deadline, "the tailer never saw the broker fenced"
            assert not errors, errors
            time.sleep(0.2)
        c.start_node(victim)
        c.wait_ready([victim])
        c.create_topic("t-three", 1, 3)
        time.sleep(3)
    finally:
        stop.set()
        th.join(30)
    assert not errors, errors
    copy = copy_node_metadata(c, node, tmp_path / "copy")
    offline = list(import_events([copy], cluster_id, node_id=node))
    last = max(e.source.offset for e in offline)
    deadline = time.monotonic() + 30  # the copy may end above the quorum's high watermark of a moment ago
    while not events or max(e.source.offset for e in events) < last:
        assert time.monotonic() < deadline, f"the tail never reached offset {last} under the high watermark"
        events += step()
        time.sleep(0.1)
    gate.close()
    tailed = [e for e in events if e.source.offset <= last]
    assert [_key(e) for e in tailed] == [_key(e) for e in offline]
    assert not any(isinstance(e.payload, CaptureGap) for e in events)
    assert len({(e.source.offset, e.source.index) for e in events}) == len(events)
    names = {e.payload.topic for e in tailed if isinstance(e.payload, TopicChange)}
    assert {"t-one", "t-two", "t-three"} <= names
    assert len(files) >= 2, "the tailer never crossed a segment roll"
