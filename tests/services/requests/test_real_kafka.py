"""On real clusters: a KRaft cluster of Kafka 4.x with StandardAuthorizer and a ZooKeeper-mode cluster of 3.9 with
AclAuthorizer, their request and authorizer loggers at DEBUG in Kafka's own layout, an admin's changes made
through a client (create a topic with a config, grow it, alter a config incrementally, elect its preferred
leaders, set a SCRAM credential): every line of both logs is read (no gap), each change is kept with its
principal, client and body, the SCRAM credential without its secret, and in KRaft both sides of each forwarded
request are there and pair up."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.requests.clocks import disagreements, pairs
from services.requests.files import read_logs
from services.requests.reader import Reading
from schemas.requests.record import AUTHORIZER_LOGGER, REQUEST_LOGGER
from tests.services.requests.real_cluster import audited_cluster, cli, import_history, kept

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def _cluster(version: str, root: Path):  # type: ignore[no-untyped-def]
    return audited_cluster(version, root, nodes=1)


def _changes(bootstrap: str) -> None:
    from confluent_kafka import ElectionType, KafkaException, TopicPartition

    from devtools.cluster.testing import wait_until
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions,
                                       NewTopic, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion)

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "who-asked"})
    # a ZooKeeper-mode broker answers before it knows its controller: the client would wait for its next
    # metadata refresh to send what only a controller takes
    wait_until(lambda: admin.list_topics(timeout=5).controller_id >= 0, 60, "a controller")

    def done(futures: object) -> None:
        for f in (futures.values() if isinstance(futures, dict) else [futures]):  # type: ignore[attr-defined]
            f.result(30)

    done(admin.create_topics([NewTopic("audited", 2, 1, config={"retention.ms": "600000"})]))
    done(admin.create_partitions([NewPartitions("audited", 3)]))
    done(admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.TOPIC, "audited", incremental_configs=[
        ConfigEntry("retention.ms", "1200000", incremental_operation=AlterConfigOpType.SET)])]))
    try:  # its leader is its preferred one already: Kafka answers ELECTION_NOT_NEEDED, logged like any answer
        done(admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("audited", 0)]))
    except KafkaException:
        pass
    done(admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"alice-secret-pw", b"salt-of-alice")]))


@pytest.mark.parametrize("version", ["4.x", "3.9"])
def test_an_admins_changes_on_a_real_cluster(tmp_path, version, monkeypatch):
    from devtools.cluster.testing import java_available, wait_until

    if not java_available():
        pytest.skip("needs java and mvn")
    if "CTRLAUDIT_KAFKA_CACHE" not in os.environ and Path("/work/main/.kafka-cache").is_dir():
        monkeypatch.setenv("CTRLAUDIT_KAFKA_CACHE", "/work/main/.kafka-cache")
    with _cluster(version, tmp_path / "cluster") as cluster:
        _changes(cluster.bootstrap_servers)
        logs = cluster.nodes[1].logs_dir

        def read() -> tuple[list, Reading]:
            reading = Reading()
            return list(read_logs([logs], reading)), reading
        # the request log's line is written when the response is sent: wait for the last change's, the client's
        # (in KRaft the controller's line of the forwarded request comes first)
        wait_until(lambda: any(r.log == REQUEST_LOGGER and r.api == "AlterUserScramCredentials" and not r.forwarded
                               for r in read()[0]), 30, "the last change logged")
    records, reading = read()  # stopped: no line is being written
    assert reading.gaps == {}, [str(g) for g in reading.gaps.values()]
    requests = [r for r in records if r.log == REQUEST_LOGGER and not r.forwarded]
    assert [r.api for r in requests] == ["CreateTopics", "CreatePartitions", "IncrementalAlterConfigs",
                                         "ElectLeaders", "AlterUserScramCredentials"]
    assert {(r.principal, r.client_id, r.host, r.listener) for r in requests} == {
        ("User:ANONYMOUS", "who-asked", "127.0.0.1", "PLAINTEXT")}
    assert len({(r.software_name, r.software_version) for r in requests}) == 1
    assert requests[0].software_name not in (None, "unknown")
    create, grow, alter, elect, scram = (r.body for r in requests)
    assert create is not None and create.topics == ("audited",) and create.counts == (("audited", 2),)
    assert [(c.name, c.value) for c in create.configs] == [("retention.ms", "600000")]
    assert grow is not None and grow.counts == (("audited", 3),)
    assert alter is not None and [(c.name, c.operation, c.value) for c in alter.configs] == [
        ("retention.ms", "SET", "1200000")]
    assert elect is not None and elect.election_type == "PREFERRED"
    assert scram is not None and [(s.action, s.user, s.iterations, s.salted_password_bytes) for s in scram.scram] == [
        ("upsert", "alice", 4096, 32)]
    assert "salt-of-alice" not in repr(records) and "c2FsdC1vZi1hbGljZQ" not in repr(records)
    decisions = [r for r in records if r.log == AUTHORIZER_LOGGER]
    assert decisions and {r.outcome for r in decisions} == {"allowed"}
    assert {r.form for r in decisions} == {"acl-authorizer" if version == "3.9" else "standard-authorizer"}
    assert {"CreateTopics", "CreatePartitions", "IncrementalAlterConfigs"} <= {r.api for r in decisions}
    if version == "4.x":  # KRaft: the broker forwarded each to the controller, whose line is there too
        forwarded = [r for r in records if r.log == REQUEST_LOGGER and r.forwarded]
        assert {"CreateTopics", "CreatePartitions", "IncrementalAlterConfigs"} <= {r.api for r in forwarded}
        assert {r.host for r in forwarded} == {None} and {r.software_name for r in forwarded} == {"unknown"}
        assert len(pairs(records)) >= 3 and disagreements(records) == []
    _attributed(cluster, records, version)
    _who(cluster, version, tmp_path)


def _who(cluster, version: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`ctrlaudit who` over the cluster's history imported as an archive and the node's logs, as a user runs it."""
    import json

    archive = import_history(cluster, version, tmp_path / "archive")
    logs = str(cluster.nodes[1].logs_dir)
    r = cli("who", str(archive), "--logs", logs, "--principal", "User:ANONYMOUS", "--json", "-")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    apis = sorted(g[0]["api"] for c in got["changes"] for g in c["requests"][:1])
    assert apis == sorted(["CreateTopics"] * 4 + ["CreatePartitions", "IncrementalAlterConfigs"]), apis
    assert {c["cause"] for c in got["changes"]} == {"request"} and got["not_read"] == [] and got["clocks"] == []
    text = cli("who", str(archive), "--logs", logs)
    assert text.returncode == 0, text.stderr
    assert "requested by User:ANONYMOUS from 127.0.0.1 (client id who-asked, " in text.stdout
    assert ", received by node 1: CreatePartitions on listener PLAINTEXT (" in text.stdout
    assert " 0 ambiguous, 0 unattributed; 0 denied" in text.stdout
    kept(cli, archive, [logs], got, principal="User:ANONYMOUS")
    none = cli("who", str(archive), "--logs", str(tmp_path / "archive"))  # no request log there: one line, exit 2
    assert none.returncode == 2 and none.stderr.count("\n") == 1 and "no kafka-authorizer.log or kafka-request.log" \
        in none.stderr, none
    quiet = tmp_path / "quiet"  # the loggers left at Kafka's defaults: the request log empty
    quiet.mkdir()
    (quiet / "kafka-request.log").write_text("")
    blind = cli("who", str(archive), "--logs", str(quiet))
    assert blind.returncode == 0 and " 0 requested," in blind.stdout and "unattributed: no CreateTopics request " \
        "naming topic audited" in blind.stdout, blind


def _attributed(cluster, records, version: str) -> None:  # type: ignore[no-untyped-def]
    """The cluster's own history (the KRaft node's metadata log; ZooKeeper's transaction log in ZooKeeper mode) beside
    the request logs: every change to the topic is the admin's request that made it, named by API; everything else
    the controller's own or the cluster's start; nothing unattributed."""
    from dataclasses import replace

    from services.kraft.offline import import_events
    from replay.attribution import REQUEST, UNATTRIBUTED, AMBIGUOUS, attribute
    from services.zookeeper.offline import import_zk_events

    history = (import_zk_events([cluster.zookeeper.data_dir], "c") if version == "3.9"
               else import_events([cluster.metadata_dir(1)]))
    events = [replace(e, seq=i) for i, e in enumerate(history)]
    by_seq = {e.seq: e for e in events}
    got = attribute(events, records)
    assert not [a.why for a in got if a.cause in (UNATTRIBUTED, AMBIGUOUS)]
    mine = [(a, by_seq[a.seq].payload) for a in got
            if "audited" in (getattr(by_seq[a.seq].payload, "topic", None), getattr(by_seq[a.seq].payload,
                                                                                  "resource_name", None))]
    asked = sorted((type(p).__name__, getattr(p, "partition", getattr(p, "value", None)), a.cause,
                    a.requests[0][0].api if a.requests else None) for a, p in mine)
    assert asked == sorted([
        ("TopicChange", None, REQUEST, "CreateTopics"),
        ("PartitionChange", 0, REQUEST, "CreateTopics"), ("PartitionChange", 1, REQUEST, "CreateTopics"),
        ("PartitionChange", 2, REQUEST, "CreatePartitions"),
        ("ConfigChange", "600000", REQUEST, "CreateTopics"),
        ("ConfigChange", "1200000", REQUEST, "IncrementalAlterConfigs")]), asked
    for a, _ in mine:  # the client's line first (its listener), then in KRaft the controller's of the forwarded one
        assert [x.forwarded for x in a.requests[0]] == ([False] if version == "3.9" else [False, True])
        assert a.requests[0][0].principal == "User:ANONYMOUS" and a.requests[0][0].client_id == "who-asked"
