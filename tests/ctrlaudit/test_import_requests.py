"""`ctrlaudit import requests`: the nodes' request and authorizer logs -> ClientRequest events appended to their
cluster's archive (the real-cluster proof is tests/services/requests/test_real_kafka.py); what it refuses, in one
line each."""
from __future__ import annotations

import json
from pathlib import Path

from schemas.archive.listing import iter_events
from schemas.events import CaptureGap, ClientRequest, SourceKind
from tests.ctrlaudit.conftest import run
from tests.services.requests.kafka_lines import completed, log4j, standard_authorizer

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
CREATE = {"topics": [{"name": "orders", "numPartitions": 3, "replicationFactor": 2, "assignments": [],
                      "configs": [{"name": "sasl.jaas.config", "value": "secret-in-clear"}]}],
          "timeoutMs": 30000, "validateOnly": False}


def node(root: Path, name: str, node_id: int | None, at: str = "2026-11-20 03:10:00,123") -> Path:
    d = root / name
    d.mkdir(parents=True)
    server = [log4j(f"Cluster ID = {CLUSTER}", "kafka.server.KafkaServer", "INFO", at)]
    if node_id is not None:
        server += [log4j("KafkaConfig values: ", "org.apache.kafka.common.config.AbstractConfig", "INFO", at),
                   "\tbroker.id = -1", f"\tnode.id = {node_id}", "\tnum.partitions = 1"]
    (d / "server.log").write_text("\n".join(server) + "\n")
    (d / "kafka-request.log").write_text(log4j(completed(19, "CREATE_TOPICS", 7, CREATE, {"topics": []}),
                                               "kafka.request.logger", date=at) + "\n")
    (d / "kafka-authorizer.log").write_text(log4j(standard_authorizer(
        "User:mallory", False, "DELETE", "10.0.9.9", "Topic:LITERAL:orders", "DeleteTopics", "DefaultDeny"),
        "kafka.authorizer.logger", "INFO", at) + "\n")
    return d


def test_each_line_becomes_an_event_of_its_node_once(tmp_path):
    n1, n2 = node(tmp_path / "logs", "n1", 1), node(tmp_path / "logs", "n2", 2)
    out = tmp_path / "archive"
    done = run("import", "requests", str(n1), str(n2), "--out", str(out), "--json", str(tmp_path / "r.json"))
    assert done.exit_code == 0, done.output
    summary = json.loads((tmp_path / "r.json").read_text())
    assert summary["cluster_id"] == CLUSTER and summary["events"] == 4 and summary["not_read"] == []
    assert summary["nodes"] == {str(n1): 1, str(n2): 2}
    events = list(iter_events(out / CLUSTER))
    assert [(e.source.kind, e.source.node_id, e.payload.principal, e.payload.outcome) for e in events
            if isinstance(e.payload, ClientRequest)] == [
        (SourceKind.REQUEST_LOG, 1, "User:mallory", "denied"), (SourceKind.REQUEST_LOG, 1, "User:alice", None),
        (SourceKind.REQUEST_LOG, 2, "User:mallory", "denied"), (SourceKind.REQUEST_LOG, 2, "User:alice", None)]
    assert not any(b"secret-in-clear" in f.read_bytes() for f in (out / CLUSTER).glob("*.avro"))
    again = run("import", "requests", str(n2), str(n1), "--out", str(out))
    assert again.exit_code == 0 and "already holds every request read" in again.output, again.output
    assert len(list(iter_events(out / CLUSTER))) == 4


def test_a_directory_whose_node_nothing_states_is_refused_unless_given(tmp_path):
    d = node(tmp_path, "n9", None)
    out = tmp_path / "archive"
    refused = run("import", "requests", str(d), "--out", str(out))
    assert refused.exit_code == 2 and f"{d}: no node id" in refused.output and "--node-id" in refused.output
    assert refused.output.strip().count("\n") == 0 and not out.exists()
    done = run("import", "requests", str(d), "--out", str(out), "--node-id", f"{d}=9")
    assert done.exit_code == 0, done.output
    assert {e.source.node_id for e in iter_events(out / CLUSTER)} == {9}
    bad = run("import", "requests", str(d), "--out", str(out), "--node-id", "9")
    assert bad.exit_code == 2 and "--node-id '9': not DIR=ID" in bad.output


def test_an_archive_that_does_not_verify_is_not_appended_to(tmp_path):
    d = node(tmp_path, "n1", 1)
    out = tmp_path / "archive"
    assert run("import", "requests", str(d), "--out", str(out)).exit_code == 0
    (f,) = (out / CLUSTER).glob("*.avro")
    data = bytearray(f.read_bytes())
    data[-40] ^= 1
    f.write_bytes(bytes(data))
    before = sorted(p.name for p in (out / CLUSTER).iterdir())
    refused = run("import", "requests", str(node(tmp_path, "n2", 2)), "--out", str(out))
    assert refused.exit_code == 2 and "not an intact archive to continue" in refused.output, refused.output
    assert sorted(p.name for p in (out / CLUSTER).iterdir()) == before


def test_requests_appended_after_a_history_change_none_of_its_answers(tmp_path):
    """The requests come after the history in the chain but carry their own, earlier or later, times: a point by
    time or offset, the clock's note, the checks' findings (pending obligations are measured to the controller's
    last event) are those of the history alone."""
    import shutil

    from replay import gaps, queries
    from replay.store import Store

    alone, kept = tmp_path / "alone", tmp_path / "kept"
    assert run("simulate", "--seed", "3", "--events", "2000", "--out", str(alone)).exit_code == 0
    shutil.copytree(alone, kept)
    during = node(tmp_path / "logs", "n1", 1, at="2025-01-01 00:00:30,000")  # inside the simulated history
    with open(during / "kafka-request.log", "a") as f:  # a line not read: a gap of attribution, not of state
        f.write(log4j('Completed request:{"isForwarded":false,"requestHeader":{', "kafka.request.logger",
                      date="2025-01-01 00:00:31,000") + "\n")
    later = node(tmp_path / "logs", "n2", 2, at="2025-01-02 00:00:00,000")  # a day after its last event
    done = run("import", "requests", str(during), str(later), "--out", str(kept), "--cluster-id", "sim-3")
    assert done.exit_code == 0, done.output
    answers = []
    for root in (alone, kept):
        store_path = tmp_path / f"{root.name}.duckdb"
        assert run("load", str(root / "sim-3"), "--store", str(store_path)).exit_code == 0
        with Store(store_path) as store:
            points = [store.point(time="2025-01-01T00:00:31Z"), store.point(offset=500)]
            status_note = store.point(time="2025-01-01T00:00:31Z").note
            stretches = gaps.stretches(store.con, "sim-3")
            state = queries.state_as_of(store, store.point()).partitions
        csv = tmp_path / f"{root.name}.csv"
        assert run("check", str(root / "sim-3"), "--csv", str(csv)).exit_code in (0, 1)
        answers.append(([(p.seq, p.source_offset, p.event_time_ms, p.gaps, p.uncertain) for p in points], status_note,
                        csv.read_text(), stretches, state))
    assert answers[0] == answers[1]
    (gap,) = [e.payload.reason for e in iter_events(kept / "sim-3") if isinstance(e.payload, CaptureGap)]
    assert gap.startswith("kafka-request.log: line 2 not read: a request log line not in the JSON form")
    assert answers[0][2].count("\n") > 1  # the history has findings (pending obligations) to compare


def test_lines_not_read_are_kept_as_gaps_of_attribution_and_who_says_them(tmp_path):
    n1 = node(tmp_path / "logs", "n1", 1)
    with open(n1 / "kafka-request.log", "a") as f:
        f.write(log4j('Completed request:{"isForwarded":false,"requestHeader":{', "kafka.request.logger") + "\n")
        f.write(log4j(completed(20, "DELETE_TOPICS", 6, {"topicNames": ["orders"], "timeoutMs": 30000},
                                {"responses": []}, correlation=9), "kafka.request.logger") + "\n")
    out = tmp_path / "archive"
    done = run("import", "requests", str(n1), "--out", str(out), "--json", str(tmp_path / "r.json"))
    assert done.exit_code == 0, done.output
    summary = json.loads((tmp_path / "r.json").read_text())
    assert summary["events"] == 4 and len(summary["not_read"]) == 1, summary
    (gap,) = [e for e in iter_events(out / CLUSTER) if isinstance(e.payload, CaptureGap)]
    assert (gap.source.kind, gap.source.node_id, gap.source.file, gap.source.line, gap.source.index) == (
        SourceKind.REQUEST_LOG, 1, "kafka-request.log", 2, -1)
    assert gap.source.offset == 1_795_144_200_123  # the time of the line read before it
    assert gap.payload.reason.startswith("kafka-request.log: line 2 not read: ")
    again = run("import", "requests", str(n1), "--out", str(out))
    assert again.exit_code == 0 and "already holds every request read" in again.output, again.output
    said = run("who", str(out / CLUSTER), "--json", str(tmp_path / "who.json"))
    assert said.exit_code == 0, said.output
    assert json.loads((tmp_path / "who.json").read_text())["not_read"] == [gap.payload.reason]
    assert f"not read: {gap.payload.reason}" in said.output


def test_who_reads_the_archive_import_wrote_to_and_refuses_a_file_or_a_choice_of_clusters(tmp_path):
    """`import requests --out ARCHIVE` then `who ARCHIVE`: the root of one cluster is read as that cluster; a file
    of it, or a root of two clusters, is refused in one line saying what to give instead."""
    out = tmp_path / "archive"
    assert run("import", "requests", str(node(tmp_path / "logs", "n1", 1)), "--out", str(out)).exit_code == 0
    by_root, by_cluster = run("who", str(out)), run("who", str(out / CLUSTER))
    assert by_root.exit_code == by_cluster.exit_code == 0, by_root.output
    assert by_root.output == by_cluster.output and "User:mallory" in by_root.output
    (file,) = (out / CLUSTER).glob("*.avro")
    refused = run("who", str(file))
    assert refused.exit_code == 2
    assert refused.output.strip().splitlines() == [
        f"ctrlaudit: error: {file}: a file; give its cluster's directory ({out / CLUSTER})"]
    assert run("simulate", "--seed", "1", "--events", "50", "--out", str(out)).exit_code == 0
    two = run("who", str(out))
    assert two.exit_code == 2 and two.output.strip().splitlines() == [
        f"ctrlaudit: error: {out}: holds 2 clusters ({CLUSTER}, sim-1): give one's directory"], two.output
