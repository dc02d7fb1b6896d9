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

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PATTERN = "[%d] %p %m (%c)%n"
LOGGERS = (("request", REQUEST_LOGGER, "kafka-request.log"), ("authorizer", AUTHORIZER_LOGGER, "kafka-authorizer.log"))


def log4j2_loggers() -> str:
    """The two loggers at DEBUG into Kafka's own files (config/log4j2.yaml's RequestAppender, AuthorizerAppender)."""
    out = []
    for key, logger, fname in LOGGERS:
        out += [f"appender.{key}.type = File", f"appender.{key}.name = {key}Appender",
                f"appender.{key}.fileName = ${{sys:kafka.logs.dir}}/{fname}",
                f"appender.{key}.layout.type = PatternLayout", f"appender.{key}.layout.pattern = {PATTERN}",
                f"logger.{key}.name = {logger}", f"logger.{key}.level = DEBUG", f"logger.{key}.additivity = false",
                f"logger.{key}.appenderRef.{key}.ref = {key}Appender"]
    return "\n".join(out) + "\n"


def log4j1_loggers() -> str:
    """The same in log4j 1.x (config/log4j.properties' requestAppender, authorizerAppender)."""
    out = []
    for key, logger, fname in LOGGERS:
        out += [f"log4j.appender.{key}Appender=org.apache.log4j.FileAppender",
                f"log4j.appender.{key}Appender.File=${{kafka.logs.dir}}/{fname}",
                f"log4j.appender.{key}Appender.layout=org.apache.log4j.PatternLayout",
                f"log4j.appender.{key}Appender.layout.ConversionPattern={PATTERN}",
                f"log4j.logger.{logger}=DEBUG, {key}Appender", f"log4j.additivity.{logger}=false"]
    return "\n".join(out) + "\n"


def _cluster(version: str, root: Path):  # type: ignore[no-untyped-def]
    from devtools.cluster.manager import KafkaCluster
    from devtools.cluster.zkmode import ZkKafkaCluster
    from devtools.cluster.testing import running_cluster

    base = ZkKafkaCluster if version == "3.9" else KafkaCluster

    class Audited(base):  # type: ignore[misc, valid-type]
        def _node_log_config_text(self) -> str:
            extra = log4j1_loggers() if self.settings.pre_4 else log4j2_loggers()
            return super()._node_log_config_text() + extra

    authorizer = ("kafka.security.authorizer.AclAuthorizer" if version == "3.9"
                  else "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
    return running_cluster(root, version, cluster_class=Audited, nodes=1,
                           overrides={"authorizer.class.name": authorizer, "super.users": "User:ANONYMOUS"})


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
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ctrlaudit", *args], cwd=root, capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, PYTHONPATH=str(root)))

    source = ["zk", str(cluster.zookeeper.data_dir), "--cluster-id", _server_log_cluster(cluster)] if version == "3.9" \
        else ["kraft", str(cluster.metadata_dir(1))]
    made = cli("import", *source, "--out", str(tmp_path / "archive"))
    assert made.returncode == 0, made.stderr
    (archive,) = [d for d in (tmp_path / "archive").iterdir() if d.is_dir()]
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
    _kept(cli, archive, logs, got)
    none = cli("who", str(archive), "--logs", str(tmp_path / "archive"))  # no request log there: one line, exit 2
    assert none.returncode == 2 and none.stderr.count("\n") == 1 and "no kafka-authorizer.log or kafka-request.log" \
        in none.stderr, none
    quiet = tmp_path / "quiet"  # the loggers left at Kafka's defaults: the request log empty
    quiet.mkdir()
    (quiet / "kafka-request.log").write_text("")
    blind = cli("who", str(archive), "--logs", str(quiet))
    assert blind.returncode == 0 and " 0 requested," in blind.stdout and "unattributed: no CreateTopics request " \
        "naming topic audited" in blind.stdout, blind


def _kept(cli, archive: Path, logs: str, from_logs: dict) -> None:  # type: ignore[no-untyped-def]
    """`ctrlaudit import requests` keeps the requests in the cluster's archive, after its history: it still verifies
    and checks clean, `who` without --logs answers from it as from the logs, and importing again adds nothing."""
    import json

    assert cli("who", str(archive)).returncode == 2  # no requests kept yet, no --logs: one line, exit 2
    made = cli("import", "requests", logs, "--out", str(archive.parent), "--json", "-")
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout)
    assert summary["cluster_id"] == archive.name and summary["nodes"] == {logs: 1}, summary
    assert summary["events"] == summary["requests"] > 0 and summary["not_read"] == [] and summary["clocks"] == []
    assert summary["continued_after_seq"] is not None
    again = cli("import", "requests", logs, "--out", str(archive.parent))
    assert again.returncode == 0 and "already holds every request read" in again.stdout, again
    assert cli("verify", str(archive)).returncode == 0
    checked = cli("check", str(archive), "--json", "-")
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    kept = cli("who", str(archive), "--principal", "User:ANONYMOUS", "--json", "-")
    assert kept.returncode == 0, kept.stderr
    got = json.loads(kept.stdout)

    def answers(doc: dict) -> list:  # type: ignore[type-arg]
        return [(c["seq"], c["cause"], [[(r["api"], r["principal"], r["host"], r["client_id"], r["forwarded"],
                                          r["time"], Path(r["file"]).name, r["line"]) for r in g] for g in c["requests"]])
                for c in doc["changes"]]
    assert answers(got) == answers(from_logs) and got["denied"] == from_logs["denied"]
    _stored(cli, archive, got)


def _stored(cli, archive: Path, from_archive: dict) -> None:  # type: ignore[no-untyped-def]
    """A store loaded from the archive says who asked as `who` does: in its table for auditors (export --table
    attributions) and in `explain`, with the node that received the request."""
    import json

    store = str(archive.parent.parent / "who.duckdb")
    assert cli("load", str(archive), "--store", store).returncode == 0
    exported = archive.parent.parent / "who.json"
    done = cli("export", "--store", store, "--table", "attributions", "--format", "json", "--out", str(exported))
    assert done.returncode == 0, done.stderr
    rows = {r["seq"]: r for r in map(json.loads, exported.read_text().splitlines())}
    asked = {c["seq"]: c for c in from_archive["changes"] if c["cause"] == "request"}
    assert asked and set(asked) <= set(rows)
    for seq, c in asked.items():
        first = c["requests"][0][0] if c["requests"] else c["decisions"][-1]
        assert (rows[seq]["cause"], rows[seq]["principal"]) == ("request", first["principal"]), (rows[seq], c)
    assert {r["cause"] for r in rows.values()} <= {"request", "controller", "denied"}, rows
    seq = next(s for s, c in asked.items() if c["requests"] and c["requests"][0][0]["api"] == "CreatePartitions")
    explained = cli("explain", "--store", store, "--seq", str(seq))
    assert explained.returncode == 0, explained.stderr
    assert "who asked:         requested by User:ANONYMOUS from 127.0.0.1 (client id who-asked, " in explained.stdout
    assert "received by node 1: CreatePartitions on listener PLAINTEXT" in explained.stdout, explained.stdout


def _server_log_cluster(cluster) -> str:  # type: ignore[no-untyped-def]
    from services.requests.files import cluster_of

    found = cluster_of([cluster.nodes[1].logs_dir])
    assert found is not None
    return found


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
