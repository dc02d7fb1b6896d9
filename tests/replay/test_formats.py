from __future__ import annotations

import json

import pytest

from rich.console import Console

from schemas.events import PartitionState as PS
from replay.changes import explain, timeline
from replay.formats import (
    describe, diff_text, explain_text, state_table, timeline_table, timeline_text, to_json, tool_release,
)
from replay.queries import PartitionRow, StateResult, diff, offline, state_as_of
from replay.store import Point

POINT = Point("c", 5, 105, 1_700_000_000_000, "e" * 32)


def result(rows, topic_configs=None, defaults=None):
    topics = {r.topic for r in rows}
    return StateResult(POINT, tuple(rows), topic_configs or {t: {} for t in topics},
                       {t: {} for t in topics}, defaults or {})


def row(topic, p, state, topic_id="yH3Ir3xNQxqgO8Fh6K2Lsw"):
    return PartitionRow(topic, topic_id, p, state, 0, 0)


def test_describe_matches_kafka_topics_line_by_line():
    out = describe(result(
        [row("orders", 1, PS((2, 3, 1), (2, 3, 1), 2, 0, 0)), row("orders", 0, PS((1, 2, 3), (1, 2), 1, 0, 1))],
        {"orders": {"min.insync.replicas": "2", "cleanup.policy": "compact"}}))
    assert out.split("\n") == [
        "Topic: orders\tTopicId: yH3Ir3xNQxqgO8Fh6K2Lsw\tPartitionCount: 2\tReplicationFactor: 3\t"
        "Configs: cleanup.policy=compact,min.insync.replicas=2",
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\tElr: \tLastKnownElr: ",
        "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3,1\tElr: \tLastKnownElr: ",
        "",
    ]


def test_describe_leader_none_elr_and_empty_configs():
    out = describe(result([row("t", 0, PS((1, 2, 3), (1,), -1, 4, 9, elr=(2, 3), last_known_elr=(1,)))]))
    assert out.split("\n")[:2] == [
        "Topic: t\tTopicId: yH3Ir3xNQxqgO8Fh6K2Lsw\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: ",
        "\tTopic: t\tPartition: 0\tLeader: none\tReplicas: 1,2,3\tIsr: 1\tElr: 2,3\tLastKnownElr: 1",
    ]


def test_describe_in_zookeeper_mode_says_n_a_for_elr_as_kafka_3_7_and_later():
    rows = [row("t", 0, PS((1, 2), (1, 2), 1, 0, 0))]
    zk = StateResult(POINT, tuple(rows), {"t": {}}, {"t": {}}, {}, zookeeper_mode=True)
    assert describe(zk).split("\n")[1] == "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\tElr: N/A\t" \
                                         "LastKnownElr: N/A"
    assert describe(result(rows)).split("\n")[1].endswith("\tIsr: 1,2\tElr: \tLastKnownElr: ")


def test_describe_as_a_release_before_3_7_prints_no_elr_fields():
    rows = [row("t", 0, PS((1, 2), (1, 2), 1, 0, 0, elr=(2,)))]
    zk = StateResult(POINT, tuple(rows), {"t": {}}, {"t": {}}, {}, zookeeper_mode=True)
    for mode in (result(rows), zk):
        assert describe(mode, tool=tool_release("3.6.2")).split("\n")[1] == \
            "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2"
        assert "\tElr: " in describe(mode, tool=tool_release("3.7")).split("\n")[1]
    for bad in ("3", "3.x", "3.9.2.1", "", "3..9", "-3.9"):
        with pytest.raises(ValueError):
            tool_release(bad)


def test_describe_reassignment_columns_and_replication_factor():
    # TopicCommand: RF = |replicas| - |adding| while a reassignment is in progress.
    moving = PS((1, 2, 4, 3), (1, 2, 3), 1, 1, 3, adding_replicas=(4,), removing_replicas=(3,))
    out = describe(result([row("t", 0, moving)]))
    assert out.split("\n")[:2] == [
        "Topic: t\tTopicId: yH3Ir3xNQxqgO8Fh6K2Lsw\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: ",
        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2,4,3\tIsr: 1,2,3\tAdding Replicas: 4\t"
        "Removing Replicas: 3\tElr: \tLastKnownElr: ",
    ]


def test_describe_zero_topic_id_is_omitted_and_cluster_defaults_show():
    out = describe(result([row("z", 0, PS((1,), (1,), 1, 0, 0), topic_id="AAAAAAAAAAAAAAAAAAAAAA")],
                          defaults={"min.insync.replicas": "2", "log.segment.bytes": "1073741824"}))
    assert out.split("\n")[0] == ("Topic: z\tPartitionCount: 1\tReplicationFactor: 1\t"
                                  "Configs: min.insync.replicas=2,segment.bytes=1073741824")


def test_describe_topics_in_name_order_and_empty():
    out = describe(result([row("b", 0, PS((1,), (1,), 1, 0, 0)), row("a", 0, PS((1,), (1,), 1, 0, 0))]))
    assert [line.split("\t")[0] for line in out.splitlines() if not line.startswith("\t")] == ["Topic: a", "Topic: b"]
    assert describe(result([])) == ""


def test_json_is_stable_and_carries_the_point(store):
    p = store.point(seq=11)
    text = to_json(state_as_of(store, p))
    body = json.loads(text)
    assert body["as_of"]["seq"] == 11 and body["as_of"]["source_offset"] == 1110
    assert body["partitions"][0]["state"]["leader_recovery_state"] == "RECOVERED"
    assert text == to_json(state_as_of(store, p))
    assert list(body) == sorted(body)
    for r in (diff(store, store.point(seq=8), p), timeline(store, p, "orders", 0), explain(store, seq=11),
              offline(store, p)):
        json.loads(to_json(r))


def test_text_renderers(store):
    d = diff_text(diff(store, store.point(seq=8), store.point(seq=19)))
    assert "controller: 3000 (epoch 7) -> 3001 (epoch 8)" in d
    assert "broker 3: epoch 12 unfenced -> epoch 12 fenced" in d
    assert "orders-0: leader: 1 -> 2, isr: [1, 2, 3] -> [1, 2]" in d
    t = timeline_text(timeline(store, store.point(), "orders", 0))
    assert "seq 11\toffset 1110\t2023-11-14T22:13:31.000Z\tcontroller 3000/7\tLEADER\telection CLEAN\tleader: 1 -> 2" in t
    e = explain_text(explain(store, seq=11))
    assert "previous ISR:      [1, 2]" in e and "(was in the previous ISR)" in e
    assert "min.insync.replicas=2 (topic)" in e


def test_rich_tables_render(store):
    console = Console(record=True, width=200)
    console.print(state_table(state_as_of(store, store.point(seq=11))))
    console.print(timeline_table(timeline(store, store.point(), "orders", 0)))
    text = console.export_text()
    assert "orders" in text and "as of seq 11" in text
