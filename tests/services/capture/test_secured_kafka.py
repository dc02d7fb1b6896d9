"""The capture side on a secured cluster: every Kafka client goes through `--command-config`.

A one-node cluster of its own, per pinned version (4.x and 3.9) (the dev cluster's `secure` variant: a SASL_SSL listener with
SCRAM-SHA-512 and PLAIN, an SSL listener that requires a client certificate; certificates made here
with keytool, the SCRAM user added at format time). One node, because the listeners are what is
tested, and the session's shared 3-node cluster may be running beside it on this 2-core machine.

`ctrlaudit capture` (Faust/aiokafka worker, kafka-python quorum gate and sampler, confluent-kafka
sampler producer) and `ctrlaudit archive` (confluent-kafka) run over SASL_SSL with SCRAM-SHA-512,
then `ctrlaudit verify`; the same events are archived again over PLAIN and over mutual TLS, and loaded
from the topic; each client library connects with each kind of credentials; a wrong password is one
line on stderr and exit 2 in bounded time, for every command.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
PY = sys.executable
CLI = [PY, "-m", "ctrlaudit"]
SCRAM_PW, PLAIN_PW = "scram-Secret-1", "plain-Secret-2"
WRONG_PW = "not-the-Password-3"


def _props(path: Path, **kv: str) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in kv.items()))
    return path


def _jaas(module: str, user: str, pw: str) -> str:
    return f'org.apache.kafka.common.security.{module} required username="{user}" password="{pw}";'


@pytest.fixture(scope="module", params=["4.x", "3.9"])
def secured(tmp_path_factory, request):
    from devtools.cluster.config import SecureListeners
    from devtools.cluster.testing import java_available, running_cluster
    from devtools.cluster.tls import make_tls

    if not java_available():
        pytest.skip("needs java and mvn")
    work = tmp_path_factory.mktemp("secured")
    tls = make_tls(work / "tls")
    listeners = SecureListeners(tls.broker_keystore, tls.truststore, tls.password,
                                scram_users={"admin": SCRAM_PW}, plain_users={"alice": PLAIN_PW})
    trust = {"ssl.truststore.location": str(tls.truststore), "ssl.truststore.password": tls.password}
    files = {
        "scram": _props(work / "scram.properties", **{"security.protocol": "SASL_SSL",
                        "sasl.mechanism": "SCRAM-SHA-512",
                        "sasl.jaas.config": _jaas("scram.ScramLoginModule", "admin", SCRAM_PW)}, **trust),
        "plain": _props(work / "plain.properties", **{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                        "sasl.jaas.config": _jaas("plain.PlainLoginModule", "alice", PLAIN_PW),
                        # the CA as PEM this time (the other files use the PKCS12 truststore)
                        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls.ca_pem)}),
        "mtls": _props(work / "mtls.properties", **{"security.protocol": "SSL",
                       "ssl.keystore.location": str(tls.client_keystore), "ssl.keystore.type": "PKCS12",
                       "ssl.keystore.password": tls.password, "ssl.key.password": tls.password}, **trust),
        "wrong": _props(work / "wrong.properties", **{"security.protocol": "SASL_SSL",
                        "sasl.mechanism": "SCRAM-SHA-512",
                        "sasl.jaas.config": _jaas("scram.ScramLoginModule", "admin", WRONG_PW)}, **trust),
        "no-cert": _props(work / "no-cert.properties", **{"security.protocol": "SSL"}, **trust),
    }
    with running_cluster(work / "cluster", request.param, nodes=1, heap="384m", secure=listeners) as c:
        c.work, c.files = work, files
        c.bootstrap_for = {"scram": c.sasl_ssl_bootstrap, "plain": c.sasl_ssl_bootstrap, "mtls": c.ssl_bootstrap,
                           "wrong": c.sasl_ssl_bootstrap, "no-cert": c.ssl_bootstrap}
        yield c


def _env(c, prefix: str) -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), CTRLAUDIT_REPLICATION_FACTOR="1", CTRLAUDIT_APP_ID=f"{prefix}-app",
                CTRLAUDIT_RAW_TOPIC=f"{prefix}.raw", CTRLAUDIT_EVENTS_TOPIC=f"{prefix}.events",
                CTRLAUDIT_ALERTS_TOPIC=f"{prefix}.alerts", CTRLAUDIT_DEAD_LETTER_TOPIC=f"{prefix}.dlq",
                CTRLAUDIT_DATA_DIR=str(c.work / f"{prefix}-faust"), CTRLAUDIT_ARCHIVE_GROUP=f"{prefix}-archiver",
                CTRLAUDIT_CHECKPOINT_SECONDS="1")


def _events_on_topic(c, topic: str) -> list:
    """What the events topic holds, read over the PLAINTEXT listener (the test's view, not a client's)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    from schemas import codec
    cons = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "t", "enable.auto.commit": False})
    try:
        md = cons.list_topics(topic, timeout=10)
        if md.topics[topic].error is not None:
            return []
        try:
            end = cons.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        except KafkaException:  # a topic just created: no leader yet (NOT_LEADER_FOR_PARTITION); the caller polls again
            return []
        cons.assign([TopicPartition(topic, 0, 0)])
        out, deadline = [], time.monotonic() + 20
        while len(out) < end and time.monotonic() < deadline:
            out += [codec.decode(m.value()) for m in cons.consume(1000, timeout=1) if not m.error()]
        return out
    finally:
        cons.close()


def _run(args: list[str], env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _archived(root: Path) -> list:
    from schemas.archive import clusters, iter_events
    return [e for cl in clusters(root) for e in iter_events(root / cl)]


@pytest.fixture(scope="module")
def captured(secured):
    """`ctrlaudit capture` over SASL_SSL/SCRAM-SHA-512 (worker + watch worker + sampler) while a topic is
    created; stopped once the events topic holds the topic's creation and an offset sample of it."""
    from schemas.events import OffsetSample, TopicChange

    c = secured
    prefix = "sec" + uuid.uuid4().hex[:6]
    env = _env(c, prefix)
    log = open(c.work / "capture.log", "wb")
    proc = subprocess.Popen([*CLI, "capture", "--metadata-dir", str(c.metadata_dir(1)), "--bootstrap-server",
                             c.sasl_ssl_bootstrap, "--command-config", str(c.files["scram"]), "--sample-interval", "1",
                             "--max-restarts", "2"], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    topic = f"{prefix}-orders"
    try:
        c.create_topic(topic, 2, 1)
        deadline = time.monotonic() + 180
        while True:
            events = _events_on_topic(c, f"{prefix}.events")
            payloads = [e.payload for e in events]
            created = any(isinstance(p, TopicChange) and p.topic == topic for p in payloads)
            sampled = any(isinstance(p, OffsetSample) and p.topic == topic for p in payloads)
            if created and sampled:
                break
            assert proc.poll() is None, f"capture exited {proc.returncode}: {(c.work / 'capture.log').read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no capture in 180 s: {(c.work / 'capture.log').read_text()[-3000:]}"
            time.sleep(1)
    finally:
        proc.terminate()
        proc.wait(60)
        log.close()
    return prefix, env, topic, events


def test_capture_archive_verify_over_sasl_ssl_scram(secured, captured):
    c = secured
    prefix, env, topic, events = captured
    archive = c.work / "archive-scram"
    res = _run([*CLI, "archive", "--bootstrap-server", c.sasl_ssl_bootstrap, "--command-config",
                str(c.files["scram"]), "--topic", f"{prefix}.events", "--archive-dir", str(archive), "--idle-exit", "3",
                "--flush-seconds", "1"], env)
    assert res.returncode == 0, res.stderr[-2000:]
    archived = _archived(archive)
    assert len(archived) >= len(events) > 0
    assert [e.event_id for e in archived[:len(events)]] == [e.event_id for e in events]
    assert any(getattr(e.payload, "topic", None) == topic for e in archived)
    res = _run([*CLI, "verify", str(archive)], env)
    assert res.returncode == 0 and "OK" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("kind", ["plain", "mtls"])
def test_archive_and_load_over_plain_and_mutual_tls(secured, captured, kind):
    c = secured
    prefix, env, _, _ = captured
    archive = c.work / f"archive-{kind}"
    res = _run([*CLI, "archive", "--bootstrap-server", c.bootstrap_for[kind], "--command-config", str(c.files[kind]),
                "--topic", f"{prefix}.events", "--archive-dir", str(archive), "--idle-exit", "3",
                "--flush-seconds", "1"], dict(env, CTRLAUDIT_ARCHIVE_GROUP=f"{prefix}-{kind}"))
    assert res.returncode == 0, res.stderr[-2000:]
    on_topic = _events_on_topic(c, f"{prefix}.events")
    assert [e.event_id for e in _archived(archive)] == [e.event_id for e in on_topic]
    assert _run([*CLI, "verify", str(archive)], env).returncode == 0
    res = _run([*CLI, "load", "--bootstrap-server", c.bootstrap_for[kind], "--command-config", str(c.files[kind]),
                "--topic", f"{prefix}.events", "--store", str(c.work / f"{kind}.duckdb")], env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"read {len(on_topic):,} events" in res.stdout


@pytest.mark.parametrize("kind", ["scram", "plain", "mtls"])
def test_each_client_library_connects(secured, captured, kind):
    """The three libraries, each with the mapping security.py makes for it, list the capture's topics."""
    import asyncio

    from aiokafka import AIOKafkaConsumer
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    from services.capture import connect, security
    c = secured
    prefix = captured[0]
    sec = security.load(c.files[kind])
    bs = c.bootstrap_for[kind]
    conf, _ = connect.config(bs, sec)
    assert f"{prefix}.events" in AdminClient(conf).list_topics(timeout=20).topics
    admin = KafkaAdminClient(bootstrap_servers=bs, **security.kafka_python_kwargs(sec))
    try:
        assert f"{prefix}.events" in admin.list_topics()
    finally:
        admin.close()

    async def aio():
        cons = AIOKafkaConsumer(bootstrap_servers=bs, **security.aiokafka_kwargs(sec))
        await cons.start()
        try:
            return await cons.topics()
        finally:
            await cons.stop()
    assert f"{prefix}.events" in asyncio.run(aio())


@pytest.mark.parametrize("command", ["archive", "load", "capture", "sampler"])
def test_a_wrong_password_is_one_line(secured, command, tmp_path):
    c = secured
    env = _env(c, "wrong")
    common = ["--bootstrap-server", c.sasl_ssl_bootstrap, "--command-config", str(c.files["wrong"])]
    args = {"archive": [*CLI, "archive", *common, "--archive-dir", str(tmp_path / "a")],
            "load": [*CLI, "load", *common, "--store", str(tmp_path / "s.duckdb")],
            "capture": [*CLI, "capture", "--metadata-dir", str(c.metadata_dir(1)), *common, "--sample-interval", "1"],
            "sampler": [PY, "-m", "services.capture", "sampler", *common, "--rounds", "1"]}[command]
    started = time.monotonic()
    res = _run(args, env, timeout=60)
    took = time.monotonic() - started
    lines = res.stderr.splitlines()
    assert res.returncode == (1 if command == "sampler" else 2), res.stderr[-2000:]
    assert len(lines) == 1, res.stderr[-3000:]
    assert "SCRAM-SHA-512 as 'admin' refused" in lines[0] and "invalid credentials" in lines[0], lines[0]
    assert WRONG_PW not in res.stderr + res.stdout
    assert took < 30, took


def test_mutual_tls_without_a_client_certificate_is_one_line(secured, tmp_path):
    c = secured
    res = _run([*CLI, "archive", "--bootstrap-server", c.ssl_bootstrap, "--command-config", str(c.files["no-cert"]),
                "--archive-dir", str(tmp_path / "a")], _env(c, "nocert"), timeout=60)
    assert res.returncode == 2
    assert len(res.stderr.splitlines()) == 1 and "SSL refused" in res.stderr, res.stderr[-2000:]
