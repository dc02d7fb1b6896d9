"""Capture following a real node's request and authorizer logs: a 1-node Kafka 4.x KRaft cluster with both loggers at
DEBUG, rolled by log4j every 256 KB (the request log every few seconds: every Fetch of the capture's own consumers), the
normalize worker tailing its metadata log and following its logs (node id found in its server.log), an
admin's changes made while the worker is killed with kill -9 twice and restarted. The archive then holds each request
line the logs hold exactly once (the ids an import of the same logs gives), in the one chain with the controller's
events; it verifies, and `ctrlaudit who` attributes the changes from it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from devtools.cluster.config import LOG_PATTERN as PATTERN, REQUEST_LOGGERS as LOGGERS

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
PY = sys.executable


def rolling_loggers(size: str) -> str:
    """The two loggers at DEBUG into Kafka's own files, each rolled by log4j2 once it holds `size` (renamed to
    ``kafka-authorizer.log.<date and time>.<n>``, a new file opened), so that the logs roll while capture follows
    them."""
    out = []
    for key, logger, fname in LOGGERS:
        out += [f"appender.{key}.type = RollingFile", f"appender.{key}.name = {key}Appender",
                f"appender.{key}.fileName = ${{sys:kafka.logs.dir}}/{fname}",
                f"appender.{key}.filePattern = ${{sys:kafka.logs.dir}}/{fname}.%d{{yyyy-MM-dd-HH-mm-ss}}.%i",
                f"appender.{key}.layout.type = PatternLayout", f"appender.{key}.layout.pattern = {PATTERN}",
                f"appender.{key}.policies.type = Policies",
                f"appender.{key}.policies.size.type = SizeBasedTriggeringPolicy",
                f"appender.{key}.policies.size.size = {size}",
                f"logger.{key}.name = {logger}", f"logger.{key}.level = DEBUG", f"logger.{key}.additivity = false",
                f"logger.{key}.appenderRef.{key}.ref = {key}Appender"]
    return "\n".join(out) + "\n"


def _cluster(root: Path):  # type: ignore[no-untyped-def]
    from devtools.cluster.manager import KafkaCluster
    from devtools.cluster.testing import running_cluster

    class Audited(KafkaCluster):
        def _node_log_config_text(self) -> str:
            return super()._node_log_config_text() + rolling_loggers("256KB")

    return running_cluster(root, "4.x", cluster_class=Audited, nodes=1,
                           overrides={"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                      "super.users": "User:ANONYMOUS"})


def _admin(bootstrap: str):  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap, "client.id": "who-asked"})


def _done(futures) -> None:  # type: ignore[no-untyped-def]
    for f in (futures.values() if isinstance(futures, dict) else [futures]):
        f.result(30)


def _archive(root: Path) -> list:
    from schemas.archive import clusters, iter_events
    return [e for cl in clusters(root) for e in iter_events(root / cl)] if root.is_dir() else []


def _offline(logs: Path, cluster: str) -> list:
    from services.requests.event import request_events
    from services.requests.files import read_logs
    from services.requests.reader import Reading
    return list(request_events(cluster, list(read_logs([logs], Reading())), {logs: 1}))


def test_capture_follows_the_request_logs_through_kill_9(tmp_path, monkeypatch):
    from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic,
                                       ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion)

    from devtools.cluster.testing import java_available, stop_process, wait_until
    from schemas.events import ClientRequest

    if not java_available():
        pytest.skip("needs java and mvn")
    if "CTRLAUDIT_KAFKA_CACHE" not in os.environ and Path("/work/main/.kafka-cache").is_dir():
        monkeypatch.setenv("CTRLAUDIT_KAFKA_CACHE", "/work/main/.kafka-cache")
    work, prefix = tmp_path / "work", "req" + uuid.uuid4().hex[:6]
    work.mkdir()
    with _cluster(tmp_path / "cluster") as c:
        logs = c.nodes[1].logs_dir
        env = dict(os.environ, PYTHONPATH=str(ROOT), CTRLAUDIT_BOOTSTRAP_SERVERS=c.bootstrap_servers,
                   CTRLAUDIT_METADATA_DIR=str(c.metadata_dir(1)), CTRLAUDIT_REQUEST_LOG_DIRS=str(logs),
                   CTRLAUDIT_APP_ID=f"{prefix}-app", CTRLAUDIT_RAW_TOPIC=f"{prefix}.raw",
                   CTRLAUDIT_EVENTS_TOPIC=f"{prefix}.events", CTRLAUDIT_ALERTS_TOPIC=f"{prefix}.alerts",
                   CTRLAUDIT_DEAD_LETTER_TOPIC=f"{prefix}.dlq", CTRLAUDIT_CHECKPOINTS_TOPIC=f"{prefix}.checkpoints",
                   CTRLAUDIT_DATA_DIR=str(work / "faust"), CTRLAUDIT_ARCHIVE_DIR=str(work / "archive"),
                   CTRLAUDIT_ARCHIVE_GROUP=f"{prefix}-archiver", CTRLAUDIT_ARCHIVE_FLUSH_SECONDS="1",
                   CTRLAUDIT_REPLICATION_FACTOR="1", CTRLAUDIT_CHECKPOINT_SECONDS="1", CTRLAUDIT_ROLES="normalize")
        worker_log = work / "worker.log"

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen([PY, "-m", "services.capture", "worker", "-l", "info", "--without-web"], env=env,
                                    cwd=ROOT, stdout=open(worker_log, "ab"), stderr=subprocess.STDOUT)

        def kill9(p: subprocess.Popen[bytes]) -> None:
            p.send_signal(signal.SIGKILL)
            p.wait(10)

        def requests_archived() -> list:
            return [e for e in _archive(work / "archive") if isinstance(e.payload, ClientRequest)]

        worker = start()
        archiver = subprocess.Popen([PY, "-m", "services.capture", "archiver"], env=env, cwd=ROOT,
                                    stdout=open(work / "archiver.log", "wb"), stderr=subprocess.STDOUT)

        def started(n: int) -> None:  # the n-th worker's pipeline is ready and its request log source reading
            wait_until(lambda: worker_log.read_text(errors="replace").count("normalize: resumed after") >= n and
                       worker_log.read_text(errors="replace").count("request log source: ") >= 2 * n, 120,
                       f"worker {n} to start")
        try:
            admin = _admin(c.bootstrap_servers)
            _done(admin.create_topics([NewTopic("audited", 2, 1, config={"retention.ms": "600000"})]))
            _done(admin.create_partitions([NewPartitions("audited", 3)]))
            wait_until(lambda: any(e.payload.api == "CreatePartitions" for e in requests_archived()), 120,
                       "the first requests archived")
            kill9(worker)  # mid-way: lines logged while it is down are read by its successor
            _done(admin.incremental_alter_configs([ConfigResource(
                ConfigResource.Type.TOPIC, "audited", incremental_configs=[
                    ConfigEntry("retention.ms", "1200000", incremental_operation=AlterConfigOpType.SET)])]))
            worker = start()
            started(2)
            _done(admin.create_topics([NewTopic("audited-2", 1, 1)]))
            time.sleep(1)
            kill9(worker)  # again, while it follows (the node's own Envelope decisions keep coming, ~15 a second)
            worker = start()
            started(3)
            _done(admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"alice-secret-pw",
                b"salt-of-alice")]))
            _done(admin.create_partitions([NewPartitions("audited-2", 2)]))
            wait_until(lambda: any(e.payload.api == "CreatePartitions" and e.payload.client_id == "who-asked" and
                                   e.payload.body and "audited-2" in e.payload.body for e in requests_archived()),
                       180, "the last change's request line archived", step=1)
            kill9(worker)  # it follows no more: the archive ends where the worker stopped
            time.sleep(4)  # the archiver finishes its files
        finally:
            stop_process(archiver)
            if worker.poll() is None:
                worker.kill()
                worker.wait(10)
        archive = _archive(work / "archive")
        (cluster,) = {e.cluster_id for e in archive}  # one chain: the controller's events and the requests
        offline = _offline(logs, cluster)  # every line the logs hold now, read as an import reads them
        rolled = sorted(f.name for f in logs.glob("kafka-request.log.*"))
    requests = [e for e in archive if isinstance(e.payload, ClientRequest)]
    ids = [e.event_id for e in requests]
    assert len(ids) == len(set(ids)), "a request line archived twice"
    # each log's lines in the chain are the log's lines from its start, none left out, up to where the worker
    # was stopped (the node logs on: its own Envelopes)
    for name in ("kafka.request.logger", "kafka.authorizer.logger"):
        got = [e.event_id for e in requests if e.payload.log == name]
        logged = [e.event_id for e in offline if e.payload.log == name]
        assert got and got == logged[:len(got)], name
    assert {(e.payload.api, e.payload.log) for e in requests if e.payload.client_id in ("who-asked", None)} >= {
        ("CreateTopics", "kafka.request.logger"), ("AlterUserScramCredentials", "kafka.request.logger"),
        ("IncrementalAlterConfigs", "kafka.request.logger"), ("IncrementalAlterConfigs", "kafka.authorizer.logger")}
    assert [e.seq for e in archive] == list(range(len(archive)))
    assert not [e for e in archive if type(e.payload).__name__ == "CaptureGap"
                and e.source.kind.value == "REQUEST_LOG"]  # no line lost, none said lost
    assert len(rolled) >= 3, rolled  # the request log rolled while capture followed it (and while it was down)
    assert any(e.source.kind.value == "KRAFT_LOG" for e in archive)
    log = worker_log.read_text(errors="replace")
    assert log.count(" lines kept)") == 4  # both logs resumed after the raw topic's last record, twice
    assert "Traceback" not in log and "not read" not in log
    assert "salt-of-alice" not in repr(requests)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PY, "-m", "ctrlaudit", *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    root = work / "archive" / cluster
    verified = cli("verify", str(root))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    who = cli("who", str(root), "--principal", "User:ANONYMOUS", "--json", "-")
    assert who.returncode == 0, who.stderr
    got = json.loads(who.stdout)
    asked = sorted(g[0]["api"] for ch in got["changes"] for g in ch["requests"][:1])
    assert {"CreateTopics", "CreatePartitions", "IncrementalAlterConfigs"} <= set(asked), asked
    assert got["not_read"] == []
